/* core/tensor/tensor_impl.h: the tensor header, shared by the tensor files. */
#ifndef CORTEN_CORE_TENSOR_IMPL_H
#define CORTEN_CORE_TENSOR_IMPL_H

#include <corten/tensor.h>

#include "memory/memory_impl.h"

struct ct_tensor {
  ct_ddim dims;     /* rank -1 while unset */
  ct_dtype dtype;   /* CT_DTYPE_UNDEFINED until data is given a type */
  size_t offset;    /* bytes from block->ptr to this view's first element */
  ct__block *block; /* NULL while the tensor holds no memory */
};

/* Makes t a new tensor: unset dims, no dtype, no memory. */
void ct__tensor_init(ct_tensor *t);

/* Lets go of t's memory and makes it a new tensor. */
void ct__tensor_reset(ct_tensor *t);

/* "tensor [2,3] float32" (or "tensor unset undefined") into buf, for messages. */
const char *ct__tensor_label(const ct_tensor *t, char *buf, size_t cap);

/* numel x dtype size of dims, or records CT_ERR_OUT_OF_RANGE naming `what` and returns 0 in
 * *ok. dims must be set and valid. */
int ct__tensor_nbytes(ct_ddim dims, ct_dtype dtype, size_t *out, const char *what);

/* Checks that t's memory covers its dims and dtype (the rule of ct_tensor_data). */
ct_status ct__tensor_check_data(const ct_tensor *t, const char *what);

/* Bytes from t's offset to the end of its block. */
static inline size_t ct__tensor_capacity(const ct_tensor *t) {
  return t->block ? t->block->nbytes - t->offset : 0;
}

static inline void *ct__tensor_ptr(const ct_tensor *t) {
  return (char *)t->block->ptr + t->offset;
}

#define CT__LABEL_CAP (CT__DDIM_STR_CAP + 48)

#endif /* CORTEN_CORE_TENSOR_IMPL_H */
