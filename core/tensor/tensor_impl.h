/* SPDX-License-Identifier: Apache-2.0 */
/* core/tensor/tensor_impl.h: the tensor header, shared by the tensor files. */
#ifndef CORTEN_CORE_TENSOR_IMPL_H
#define CORTEN_CORE_TENSOR_IMPL_H

#include <corten/tensor.h>

#include "memory/memory_impl.h"

/* The fields every op run reads (memory, its offset, the element count and type) come first,
 * then the dims: a tensor of rank up to 3 has all of them in its first 64 bytes, which a
 * variable's inline storage keeps together (variable_impl.h). */
struct ct_tensor {
  ct__block *block; /* NULL while the tensor holds no memory */
  size_t offset;    /* bytes from block->ptr to this view's first element */
  int64_t numel;    /* of dims; -1 while unset */
  ct_dtype dtype;   /* CT_DTYPE_UNDEFINED until data is given a type */
  ct_ddim dims;     /* rank -1 while unset */
};

/* Makes t a new tensor: unset dims, no dtype, no memory. */
void ct__tensor_init(ct_tensor *t);

/* Makes t a view of all of block b (taking the caller's reference) with these dims and dtype,
 * letting go of what t held: how wrap and DLPack import install a buffer. */
void ct__tensor_adopt(ct_tensor *t, ct__block *b, ct_ddim dims, int64_t numel, ct_dtype dtype);

/* Makes dst a view of src's block with these dims (numel elements) at offset bytes, unchecked:
 * the caller knows src holds memory covering them. Safe when dst == src. A dst that already
 * views the block (a recurrent step's input, viewed again at every run) keeps its reference: no
 * atomic operation on the block's count, and no call (inline: the recurrent op sets its step
 * inputs and previous states this way at every step). */
static inline void ct__tensor_view(ct_tensor *dst, const ct_tensor *src, ct_ddim dims,
                                   int64_t numel, size_t offset) {
  ct__block *b = src->block;
  ct_dtype dtype = src->dtype;
  if (dst->block != b) {
    ct__block_retain(b);
    ct__block_release(dst->block);
    dst->block = b;
  }
  dst->dtype = dtype;
  dst->dims = dims;
  dst->numel = numel;
  dst->offset = offset;
}

/* Lets go of t's memory, keeping its dims and dtype (an executor freeing an intermediate). */
void ct__tensor_drop_memory(ct_tensor *t);

/* "tensor [2,3] float32" (or "tensor unset undefined") into buf, for messages. */
const char *ct__tensor_label(const ct_tensor *t, char *buf, size_t cap);

/* Sets t's dims and their element count. */
static inline void ct__tensor_set_dims(ct_tensor *t, ct_ddim dims, int64_t numel) {
  t->dims = dims;
  t->numel = numel;
}

/* numel x dtype size for a tensor whose dims are set (checked dims keep numel x 8 in range). */
static inline size_t ct__tensor_bytes(const ct_tensor *t, ct_dtype dtype) {
  return (size_t)t->numel * ct__dtype_size(dtype);
}

/* Bytes from t's offset to the end of its block. */
static inline size_t ct__tensor_capacity(const ct_tensor *t) {
  return t->block ? t->block->nbytes - t->offset : 0;
}

/* Whether t's memory covers its dims and dtype (the rule of ct_tensor_data), inline. */
static inline bool ct__tensor_data_ok(const ct_tensor *t) {
  return t->block != NULL && ct__tensor_bytes(t, t->dtype) <= ct__tensor_capacity(t);
}

/* Checks that t's memory covers its dims and dtype (the rule of ct_tensor_data): CT_OK, or the
 * error recorded, naming what. */
ct_status ct__tensor_check_data(const ct_tensor *t, const char *what);

static inline void *ct__tensor_ptr(const ct_tensor *t) {
  return (char *)t->block->ptr + t->offset;
}

/* Whether t can be written as dtype at place without allocating: it has writable memory at
 * place that covers its dims as dtype, and its first element is aligned for dtype (a view at a
 * float32 offset retyped to float64 is not: writing doubles there is undefined). The fast path of ct_tensor_mutable_data, and of the
 * kernels' outputs (ops/kernel.h), which set t->dtype and take ct__tensor_ptr when it holds. */
static inline bool ct__tensor_writable_in_place(const ct_tensor *t, ct_dtype dtype, ct_place place) {
  const ct__block *b = t->block;
  return b != NULL && !ct__block_read_only(b) && t->dims.rank >= 0 && ct__dtype_valid(dtype) &&
         b->place.kind == place.kind && b->place.device == place.device &&
         ct__tensor_bytes(t, dtype) <= b->nbytes - t->offset &&
         ((uintptr_t)b->ptr + t->offset) % ct__dtype_size(dtype) == 0;
}

/* Whether a_bytes from a's first element and b_bytes from b's overlap in memory: by address on
 * one place, so two blocks over the same external buffer count as the same memory. Empty
 * ranges and tensors without memory overlap nothing. */
static inline bool ct__tensor_spans_overlap(const ct_tensor *a, size_t a_bytes,
                                            const ct_tensor *b, size_t b_bytes) {
  if (a->block == NULL || b->block == NULL || a_bytes == 0 || b_bytes == 0) return false;
  if (a->block->place.kind != b->block->place.kind ||
      a->block->place.device != b->block->place.device) {
    return false;
  }
  uintptr_t a0 = (uintptr_t)ct__tensor_ptr(a), b0 = (uintptr_t)ct__tensor_ptr(b);
  return a0 < b0 + b_bytes && b0 < a0 + a_bytes;
}

#define CT__LABEL_CAP (CT__DDIM_STR_CAP + 48)

#endif /* CORTEN_CORE_TENSOR_IMPL_H */
