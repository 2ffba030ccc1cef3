/* SPDX-License-Identifier: Apache-2.0 */
/* core/tensor/tensor.c: tensor headers, lazy memory and views. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "tensor/tensor_impl.h"

static const ct_ddim unset_dims = {.rank = -1, .d = {0}};

void ct__tensor_init(ct_tensor *t) {
  ct__tensor_set_dims(t, unset_dims, -1);
  t->dtype = CT_DTYPE_UNDEFINED;
  t->offset = 0;
  t->block = NULL;
}

void ct__tensor_drop_memory(ct_tensor *t) {
  ct__block_release(t->block);
  t->block = NULL;
  t->offset = 0;
}

const char *ct__tensor_label(const ct_tensor *t, char *buf, size_t cap) {
  char d[CT__DDIM_STR_CAP];
  snprintf(buf, cap, "tensor %s %s", ct_ddim_str(t->dims, d, sizeof d), ct_dtype_name(t->dtype));
  return buf;
}

ct_tensor *ct_tensor_new(void) {
  ct_tensor *t = ct__alloc(sizeof *t);
  if (t == NULL) {
    return ct__error_null(CT_ERR_OUT_OF_MEMORY, "ct_tensor_new: out of host memory for a tensor");
  }
  ct__tensor_init(t);
  return t;
}

void ct_tensor_free(ct_tensor *t) {
  if (t == NULL) return;
  ct__block_release(t->block);
  ct__free_sized(t, sizeof *t);
}

ct_status ct_tensor_resize(ct_tensor *t, ct_ddim dims) {
  if (t == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_tensor_resize: the tensor is NULL");
  }
  int64_t numel;
  ct_status s = ct__check_dims(dims, "ct_tensor_resize", &numel);
  if (s != CT_OK) return s;
  ct__tensor_set_dims(t, dims, numel);
  return CT_OK;
}

/* Records that the allocator could not give t (as dtype) need bytes at place; returns NULL. */
CT__COLD static void *alloc_failed(const ct_tensor *t, ct_dtype dtype, ct_place place,
                                   size_t need) {
  char what[CT__LABEL_CAP + 32], label[CT__LABEL_CAP];
  ct_tensor probe = *t;
  probe.dtype = dtype;
  snprintf(what, sizeof what, "ct_tensor_mutable_data: %s",
           ct__tensor_label(&probe, label, sizeof label));
  ct__block_oom(what, place, need);
  return NULL;
}

CT__COLD static void *mutable_data_slow(ct_tensor *t, ct_dtype dtype, ct_place place) {
  char label[CT__LABEL_CAP], p[CT__PLACE_STR_CAP], q[CT__PLACE_STR_CAP];
  if (t == NULL) {
    return ct__error_null(CT_ERR_INVALID_ARGUMENT, "ct_tensor_mutable_data: the tensor is NULL");
  }
  if (!ct__dtype_valid(dtype)) {
    return ct__error_null(CT_ERR_INVALID_ARGUMENT,
                          "ct_tensor_mutable_data: %s: dtype %d is not a data type: pass one of "
                          "CT_BOOL .. CT_UINT64",
                          ct__tensor_label(t, label, sizeof label), (int)dtype);
  }
  if (t->dims.rank < 0) {
    return ct__error_null(CT_ERR_SHAPE,
                          "ct_tensor_mutable_data: tensor dims are unset: call ct_tensor_resize "
                          "first");
  }
  if (ct__place_check(place, "ct_tensor_mutable_data") != CT_OK) return NULL;
  size_t need = ct__tensor_bytes(t, dtype);
  ct__block *b = t->block;
  bool aligned = b == NULL || ((uintptr_t)b->ptr + t->offset) % ct__dtype_size(dtype) == 0;
  if (b != NULL && ct_place_equal(b->place, place) && need <= ct__tensor_capacity(t) && aligned) {
    if (ct__block_read_only(b)) {
      return ct__error_null(CT_ERR_READ_ONLY,
                            "ct_tensor_mutable_data: %s %s: read it with ct_tensor_data, or "
                            "ct_tensor_copy it into a tensor of its own",
                            ct__tensor_label(t, label, sizeof label), ct__block_read_only_why(b));
    }
    t->dtype = dtype;
    return ct__tensor_ptr(t);
  }
  if (b != NULL && b->external && !aligned) {
    return ct__error_null(CT_ERR_EXTERNAL_BUFFER,
                          "ct_tensor_mutable_data: %s views an external buffer at byte %zu, not "
                          "aligned for %s: the tensor cannot move memory it does not own; write "
                          "it as its own dtype, or copy into a normal tensor",
                          ct__tensor_label(t, label, sizeof label), t->offset,
                          ct_dtype_name(dtype));
  }
  if (b != NULL && b->external) {
    return ct__error_null(CT_ERR_EXTERNAL_BUFFER,
                          "ct_tensor_mutable_data: %s wraps an external buffer of %zu bytes at %s "
                          "and needs %zu bytes at %s: the tensor cannot grow or move memory it "
                          "does not own; wrap a larger buffer, or copy into a normal tensor",
                          ct__tensor_label(t, label, sizeof label), ct__tensor_capacity(t),
                          ct_place_str(b->place, p, sizeof p), need,
                          ct_place_str(place, q, sizeof q));
  }
  /* The sole holder lets go of the old block before taking a new one, so the peak never holds
   * both. A block other views share would not be freed by letting go early, so this view keeps
   * it until the new one exists: a failed allocation then leaves the view as it was. */
  ct__block *old = b;
  if (old != NULL && ct__block_unique(old)) {
    ct__tensor_drop_memory(t);
    old = NULL;
  }
  b = ct__block_alloc_for(place, need, t);
  if (b == NULL) return alloc_failed(t, dtype, place, need);
  ct__block_release(old);
  t->block = b;
  t->offset = 0;
  t->dtype = dtype;
  return b->ptr;
}

void *ct_tensor_mutable_data(ct_tensor *t, ct_dtype dtype, ct_place place) {
  if (CT__LIKELY(t != NULL && ct__tensor_writable_in_place(t, dtype, place))) {
    t->dtype = dtype;
    return ct__tensor_ptr(t);
  }
  /* The first allocation of a sized tensor on the host: the common way memory appears, kept
   * off the cold path (which handles errors, devices and reallocation). */
  if (CT__LIKELY(t != NULL && t->block == NULL && t->dims.rank >= 0 && ct__dtype_valid(dtype) &&
                 place.kind == CT_DEVICE_CPU)) {
    size_t need = ct__tensor_bytes(t, dtype);
    ct__block *b = ct__block_alloc_for(place, need, t);
    if (CT__UNLIKELY(b == NULL)) return alloc_failed(t, dtype, place, need);
    t->block = b;
    t->offset = 0;
    t->dtype = dtype;
    return b->ptr;
  }
  return mutable_data_slow(t, dtype, place);
}

ct_status ct__tensor_check_data(const ct_tensor *t, const char *what) {
  char label[CT__LABEL_CAP];
  if (t->block == NULL) {
    return ct__error(CT_ERR_UNINITIALIZED,
                     "%s: %s holds no memory: call ct_tensor_mutable_data first", what,
                     ct__tensor_label(t, label, sizeof label));
  }
  size_t need = ct__tensor_bytes(t, t->dtype);
  if (need > ct__tensor_capacity(t)) {
    return ct__error(CT_ERR_OUT_OF_RANGE,
                     "%s: %s needs %zu bytes but holds %zu: its dims grew after the last "
                     "ct_tensor_mutable_data, call it again",
                     what, ct__tensor_label(t, label, sizeof label), need, ct__tensor_capacity(t));
  }
  return CT_OK;
}

CT__COLD static const void *data_slow(const ct_tensor *t, ct_dtype dtype) {
  char label[CT__LABEL_CAP];
  if (t == NULL) return ct__error_null(CT_ERR_INVALID_ARGUMENT, "ct_tensor_data: the tensor is NULL");
  if (t->block == NULL) {
    return ct__error_null(CT_ERR_UNINITIALIZED,
                          "ct_tensor_data: %s holds no memory: call ct_tensor_mutable_data first",
                          ct__tensor_label(t, label, sizeof label));
  }
  if (t->dtype != dtype) {
    return ct__error_null(CT_ERR_TYPE_MISMATCH,
                          "ct_tensor_data: %s holds %s, asked for %s: read it as %s",
                          ct__tensor_label(t, label, sizeof label), ct_dtype_name(t->dtype),
                          ct_dtype_name(dtype), ct_dtype_name(t->dtype));
  }
  if (ct__tensor_check_data(t, "ct_tensor_data") != CT_OK) return NULL;
  return ct__tensor_ptr(t);
}

const void *ct_tensor_data(const ct_tensor *t, ct_dtype dtype) {
  if (CT__LIKELY(t != NULL && t->block != NULL && t->dtype == dtype &&
                 ct__tensor_bytes(t, dtype) <= ct__tensor_capacity(t))) {
    return ct__tensor_ptr(t);
  }
  return data_slow(t, dtype);
}

ct_ddim ct_tensor_dims(const ct_tensor *t) { return t ? t->dims : unset_dims; }
ct_dtype ct_tensor_dtype(const ct_tensor *t) { return t ? t->dtype : CT_DTYPE_UNDEFINED; }
ct_place ct_tensor_place(const ct_tensor *t) {
  return (t && t->block) ? t->block->place : ct_cpu();
}
int64_t ct_tensor_numel(const ct_tensor *t) { return t ? t->numel : -1; }
bool ct_tensor_has_memory(const ct_tensor *t) { return t != NULL && t->block != NULL; }
bool ct_tensor_is_external(const ct_tensor *t) {
  return t != NULL && t->block != NULL && t->block->external;
}
bool ct_tensor_is_read_only(const ct_tensor *t) {
  return t != NULL && t->block != NULL && ct__block_read_only(t->block);
}
size_t ct_tensor_capacity(const ct_tensor *t) { return t ? ct__tensor_capacity(t) : 0; }
bool ct_tensor_shares_memory(const ct_tensor *a, const ct_tensor *b) {
  return a != NULL && b != NULL && a->block != NULL && a->block == b->block;
}

/* ---- Views ---------------------------------------------------------------------------------- */

/* Checks the arguments every view shares: non-NULL tensors and a source whose memory covers its
 * dims. */
static ct_status check_view(ct_tensor *dst, const ct_tensor *src, const char *what) {
  if (dst == NULL || src == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "%s: the %s tensor is NULL", what,
                     dst == NULL ? "destination" : "source");
  }
  return ct__tensor_check_data(src, what);
}

/* See tensor_impl.h. */
static void make_view(ct_tensor *dst, const ct_tensor *src, ct_ddim dims, size_t offset) {
  ct__tensor_view(dst, src, dims, ct_ddim_numel(dims), offset);
}

ct_status ct_tensor_share(ct_tensor *dst, const ct_tensor *src) {
  ct_status s = check_view(dst, src, "ct_tensor_share");
  if (s != CT_OK) return s;
  make_view(dst, src, src->dims, src->offset);
  return CT_OK;
}

/* Product of dims.d[from..to). Valid dims have a product of nonzero extents that fits in int64
 * (ct_ddim_numel), so the product of any run of them cannot overflow. */
static int64_t extent_product(const ct_ddim *dims, int from, int to) {
  int64_t n = 1;
  for (int i = from; i < to; i++) n *= dims->d[i];
  return n;
}

ct_status ct_tensor_slice(ct_tensor *dst, const ct_tensor *src, int64_t begin, int64_t end) {
  char label[CT__LABEL_CAP];
  ct_status s = check_view(dst, src, "ct_tensor_slice");
  if (s != CT_OK) return s;
  if (src->dims.rank < 1) {
    return ct__error(CT_ERR_OUT_OF_RANGE,
                     "ct_tensor_slice: %s is a scalar and has no rows to slice: resize it to at "
                     "least one dim",
                     ct__tensor_label(src, label, sizeof label));
  }
  int64_t rows = src->dims.d[0];
  if (begin < 0 || end < begin || end > rows) {
    return ct__error(CT_ERR_OUT_OF_RANGE,
                     "ct_tensor_slice: rows [%lld, %lld) are outside %s: need 0 <= begin <= end "
                     "<= %lld",
                     (long long)begin, (long long)end, ct__tensor_label(src, label, sizeof label),
                     (long long)rows);
  }
  /* A row's bytes are only needed to move the offset. begin > 0 means rows > 0, so a row's bytes
   * are at most the bytes src's memory covers; with begin == 0 (rows may be 0 and a row's
   * extents large) they are never computed. */
  size_t offset = src->offset;
  if (begin > 0) {
    size_t row_bytes =
        (size_t)extent_product(&src->dims, 1, src->dims.rank) * ct_dtype_size(src->dtype);
    offset += (size_t)begin * row_bytes;
  }
  ct_ddim dims = src->dims;
  dims.d[0] = end - begin;
  make_view(dst, src, dims, offset);
  return CT_OK;
}

ct_status ct_tensor_flatten_to_2d(ct_tensor *dst, const ct_tensor *src, int num_col_dims) {
  char label[CT__LABEL_CAP];
  ct_status s = check_view(dst, src, "ct_tensor_flatten_to_2d");
  if (s != CT_OK) return s;
  if (num_col_dims < 0 || num_col_dims > src->dims.rank) {
    return ct__error(CT_ERR_OUT_OF_RANGE,
                     "ct_tensor_flatten_to_2d: num_col_dims %d is outside [0, %d] for %s",
                     num_col_dims, src->dims.rank, ct__tensor_label(src, label, sizeof label));
  }
  ct_ddim dims = CT_DIMS(extent_product(&src->dims, 0, num_col_dims),
                         extent_product(&src->dims, num_col_dims, src->dims.rank));
  make_view(dst, src, dims, src->offset);
  return CT_OK;
}

ct_status ct_tensor_wrap(ct_tensor *t, void *data, ct_ddim dims, ct_dtype dtype, ct_place place,
                         void (*release)(void *ctx), void *ctx) {
  if (t == NULL) return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_tensor_wrap: the tensor is NULL");
  int64_t numel;
  ct_status s = ct__check_dims(dims, "ct_tensor_wrap", &numel);
  if (s != CT_OK) return s;
  if (!ct__dtype_valid(dtype)) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_tensor_wrap: dtype %d is not a data type: pass one of CT_BOOL .. "
                     "CT_UINT64",
                     (int)dtype);
  }
  s = ct__place_check(place, "ct_tensor_wrap");
  if (s != CT_OK) return s;
  size_t nbytes = (size_t)numel * ct_dtype_size(dtype);
  if (data == NULL && nbytes > 0) {
    char d[CT__DDIM_STR_CAP];
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_tensor_wrap: data is NULL for %s %s (%zu bytes): pass the buffer",
                     ct_ddim_str(dims, d, sizeof d), ct_dtype_name(dtype), nbytes);
  }
  ct__block *b = ct__block_wrap(data, nbytes, place, release, ctx);
  if (b == NULL) return ct_last_status();
  ct__tensor_adopt(t, b, dims, numel, dtype);
  return CT_OK;
}

void ct__tensor_adopt(ct_tensor *t, ct__block *b, ct_ddim dims, int64_t numel, ct_dtype dtype) {
  ct__block_release(t->block);
  t->block = b;
  t->offset = 0;
  ct__tensor_set_dims(t, dims, numel);
  t->dtype = dtype;
}

void ct_tensor_move(ct_tensor *dst, ct_tensor *src) {
  if (dst == NULL || src == NULL || dst == src) return;
  ct__block_release(dst->block);
  *dst = *src;
  ct__tensor_init(src);
}
