/* SPDX-License-Identifier: Apache-2.0 */
/* core/tensor/tensor_copy.c: deep copies into tensors (copy, set_value), by the external-buffer
 * rules: an external destination is written in place or refused; a normal one ends with a
 * block of its own. */
#include <stdint.h>
#include <stdio.h>

#include "tensor/tensor_impl.h"

/* Where the bytes come from. `block` is the source's block when the source is (or lies inside)
 * a tensor block, so that it is kept alive while dst lets go of its own. */
typedef struct source {
  const void *ptr;
  ct_place place;
  const ct__block *block;
} source;

/* Writes nbytes from src into dst at dst_place, giving dst the dims and dtype. */
static ct_status assign(ct_tensor *dst, ct_ddim dims, int64_t numel, ct_dtype dtype, source src,
                        ct_place dst_place, const char *what) {
  size_t nbytes = (size_t)numel * ct_dtype_size(dtype);
  char label[CT__LABEL_CAP], p[CT__PLACE_STR_CAP], q[CT__PLACE_STR_CAP];
  ct__block *b = dst->block;
  if (b != NULL && ct__block_read_only(b)) {
    return ct__error(CT_ERR_READ_ONLY,
                     "%s: the destination %s %s: copy into a tensor of its own instead", what,
                     ct__tensor_label(dst, label, sizeof label), ct__block_read_only_why(b));
  }
  if (b != NULL && b->external) {
    size_t es = ct_dtype_size(dtype);
    if (nbytes > 0 && es > 1 && ((uintptr_t)b->ptr + dst->offset) % es != 0) {
      return ct__error(CT_ERR_EXTERNAL_BUFFER,
                       "%s: the destination %s views an external buffer at byte %zu, not aligned "
                       "for %s: copy as its own dtype, or into a normal tensor",
                       what, ct__tensor_label(dst, label, sizeof label), dst->offset,
                       ct_dtype_name(dtype));
    }
    if (!ct_place_equal(b->place, dst_place) || nbytes > ct__tensor_capacity(dst)) {
      return ct__error(CT_ERR_EXTERNAL_BUFFER,
                       "%s: the destination %s wraps an external buffer of %zu bytes at %s; the "
                       "copy needs %zu bytes at %s: wrap a buffer that fits, or copy into a "
                       "normal tensor",
                       what, ct__tensor_label(dst, label, sizeof label), ct__tensor_capacity(dst),
                       ct_place_str(b->place, p, sizeof p), nbytes,
                       ct_place_str(dst_place, q, sizeof q));
    }
  } else if (b == NULL || !ct__block_unique(b) || !ct_place_equal(b->place, dst_place) ||
             nbytes > ct__tensor_capacity(dst)) {
    /* A new block of dst's own. The old one goes first (no double peak) when dst is its sole
     * holder and it is not the source's; otherwise it stays until the copy is done, so a
     * failure leaves dst as it was. */
    int keep_old = b != NULL && (b == src.block || !ct__block_unique(b));
    if (!keep_old) ct__tensor_drop_memory(dst);
    ct__block *nb = ct__block_alloc_for(dst_place, nbytes, dst);
    if (nb == NULL) {
      ct_tensor probe = *dst;
      probe.dims = dims;
      probe.dtype = dtype;
      char whatlabel[CT__LABEL_CAP + 48];
      snprintf(whatlabel, sizeof whatlabel, "%s: %s", what,
               ct__tensor_label(&probe, label, sizeof label));
      return ct__block_oom(whatlabel, dst_place, nbytes);
    }
    ct_status s = ct__memcpy(nb->ptr, dst_place, src.ptr, src.place, nbytes);
    if (s != CT_OK) {
      ct__block_release(nb);
      return s;
    }
    if (keep_old) ct__block_release(b);
    dst->block = nb;
    dst->offset = 0;
    ct__tensor_set_dims(dst, dims, numel);
    dst->dtype = dtype;
    return CT_OK;
  }
  ct_status s = ct__memcpy(ct__tensor_ptr(dst), dst_place, src.ptr, src.place, nbytes);
  if (s != CT_OK) return s;
  ct__tensor_set_dims(dst, dims, numel);
  dst->dtype = dtype;
  return CT_OK;
}

ct_status ct_tensor_copy(ct_tensor *dst, const ct_tensor *src, ct_place dst_place) {
  if (dst == NULL || src == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_tensor_copy: the %s tensor is NULL",
                     dst == NULL ? "destination" : "source");
  }
  ct_status s = ct__place_check(dst_place, "ct_tensor_copy");
  if (s != CT_OK) return s;
  s = ct__tensor_check_data(src, "ct_tensor_copy: source");
  if (s != CT_OK) return s;
  source from = {ct__tensor_ptr(src), src->block->place, src->block};
  return assign(dst, src->dims, src->numel, src->dtype, from, dst_place, "ct_tensor_copy");
}

ct_status ct_tensor_set_value(ct_tensor *t, const void *src, ct_ddim dims, ct_dtype dtype,
                              ct_place src_place) {
  if (t == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_tensor_set_value: the tensor is NULL");
  }
  int64_t numel;
  ct_status s = ct__check_dims(dims, "ct_tensor_set_value", &numel);
  if (s != CT_OK) return s;
  if (!ct__dtype_valid(dtype)) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_tensor_set_value: dtype %d is not a data type: pass one of CT_BOOL .. "
                     "CT_UINT64",
                     (int)dtype);
  }
  s = ct__place_check(src_place, "ct_tensor_set_value: source");
  if (s != CT_OK) return s;
  size_t nbytes = (size_t)numel * ct_dtype_size(dtype);
  if (src == NULL && nbytes > 0) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_tensor_set_value: src is NULL for %zu bytes: pass the data to copy",
                     nbytes);
  }
  source from = {src, src_place, NULL};
  if (t->block != NULL) {
    const char *lo = t->block->ptr, *hi = lo + t->block->nbytes, *p = src;
    if (p >= lo && p < hi) from.block = t->block; /* copying from t's own memory */
  }
  ct_place dst_place = t->block ? t->block->place : src_place;
  return assign(t, dims, numel, dtype, from, dst_place, "ct_tensor_set_value");
}
