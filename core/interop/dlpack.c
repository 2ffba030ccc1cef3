/* SPDX-License-Identifier: Apache-2.0 */
/* core/interop/dlpack.c: DLPack both ways, zero-copy, and the dtype mapping that parameter
 * files share.
 *
 * Export: one allocation holds the DLManagedTensor, a reference to the tensor's block and the
 * shape and strides arrays; its deleter lets go of the reference and frees the allocation.
 * Import: the producer's memory becomes an external block whose release calls the producer's
 * deleter, so the deleter runs once, when the block's last reference goes. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <corten/dlpack.h>

#include "common/alloc.h"
#include "interop/interop_impl.h"
#include "tensor/tensor_impl.h"

/* ---- dtypes ---------------------------------------------------------------------------------- */

ct_dtype ct__dtype_from_dl(uint8_t code, uint8_t bits) {
  switch (code) {
    case CT__DL_INT:
      switch (bits) {
        case 8: return CT_INT8;
        case 16: return CT_INT16;
        case 32: return CT_INT32;
        case 64: return CT_INT64;
      }
      break;
    case CT__DL_UINT:
      if (bits == 1) return CT_BOOL; /* TVM's bool */
      switch (bits) {
        case 8: return CT_UINT8;
        case 16: return CT_UINT16;
        case 32: return CT_UINT32;
        case 64: return CT_UINT64;
      }
      break;
    case CT__DL_FLOAT:
      switch (bits) {
        case 16: return CT_FLOAT16;
        case 32: return CT_FLOAT32;
        case 64: return CT_FLOAT64;
      }
      break;
    case CT__DL_BFLOAT:
      if (bits == 16) return CT_BFLOAT16;
      break;
    case CT__DL_BOOL:
      if (bits == 8) return CT_BOOL;
      break;
  }
  return CT_DTYPE_UNDEFINED;
}

void ct__dtype_to_dl_file(ct_dtype t, uint8_t *code, uint8_t *bits) {
  switch (t) {
    case CT_BOOL: *code = CT__DL_BOOL; *bits = 8; return; /* DLPack 1.x's and TVM's bool */
    case CT_INT8: *code = CT__DL_INT; *bits = 8; return;
    case CT_UINT8: *code = CT__DL_UINT; *bits = 8; return;
    case CT_INT16: *code = CT__DL_INT; *bits = 16; return;
    case CT_INT32: *code = CT__DL_INT; *bits = 32; return;
    case CT_INT64: *code = CT__DL_INT; *bits = 64; return;
    case CT_FLOAT16: *code = CT__DL_FLOAT; *bits = 16; return;
    case CT_BFLOAT16: *code = CT__DL_BFLOAT; *bits = 16; return;
    case CT_FLOAT32: *code = CT__DL_FLOAT; *bits = 32; return;
    case CT_FLOAT64: *code = CT__DL_FLOAT; *bits = 64; return;
    case CT_UINT16: *code = CT__DL_UINT; *bits = 16; return;
    case CT_UINT32: *code = CT__DL_UINT; *bits = 32; return;
    case CT_UINT64: *code = CT__DL_UINT; *bits = 64; return;
    case CT_DTYPE_UNDEFINED: break;
  }
  *code = 0;
  *bits = 0;
}

const char *ct__dl_code_name(uint8_t code) {
  switch (code) {
    case CT__DL_INT: return "int";
    case CT__DL_UINT: return "uint";
    case CT__DL_FLOAT: return "float";
    case CT__DL_OPAQUE: return "opaque handle";
    case CT__DL_BFLOAT: return "bfloat";
    case CT__DL_COMPLEX: return "complex";
    case CT__DL_BOOL: return "bool";
  }
  return "unknown";
}

/* The DLPack dtype a corten tensor is exported with. */
static DLDataType dl_type_of(ct_dtype t) {
  DLDataType d;
  ct__dtype_to_dl_file(t, &d.code, &d.bits);
  d.lanes = 1;
  return d;
}

/* ---- Export ---------------------------------------------------------------------------------- */

/* One allocation per export: the managed tensor of either form first (the handed-out pointer is
 * the allocation), then the reference that keeps the memory alive and the shape and strides. */
typedef struct export_ctx {
  union {
    DLManagedTensor v0;
    DLManagedTensorVersioned v1;
  } managed;
  ct__block *block;
  int64_t shape[CT_MAX_RANK];
  int64_t strides[CT_MAX_RANK];
} export_ctx;

static void export_free(export_ctx *c) {
  ct__block_release(c->block);
  ct__free_sized(c, sizeof *c);
}

static void export_deleter(DLManagedTensor *self) {
  if (self != NULL) export_free(self->manager_ctx);
}

static void export_deleter_versioned(DLManagedTensorVersioned *self) {
  if (self != NULL) export_free(self->manager_ctx);
}

/* Checks t and makes the record, its DLTensor (*x, inside the form `versioned` picks) filled in
 * and a reference to t's block taken; NULL with the error recorded. */
static export_ctx *export_new(const ct_tensor *t, const void *out, bool versioned, DLTensor **x) {
  const char *what = versioned ? "ct_tensor_to_dlpack_versioned" : "ct_tensor_to_dlpack";
  char label[CT__LABEL_CAP];
  if (t == NULL || out == NULL) {
    return ct__error_null(CT_ERR_INVALID_ARGUMENT, "%s: the %s is NULL", what,
                          t == NULL ? "tensor" : "out pointer");
  }
  if (ct__tensor_check_data(t, what) != CT_OK) return NULL;
  if (!versioned && ct__block_read_only(t->block)) {
    return ct__error_null(CT_ERR_READ_ONLY,
                          "%s: %s is read-only, which an unversioned DLManagedTensor cannot say: "
                          "export it with ct_tensor_to_dlpack_versioned (DLPack 1.x), or copy it",
                          what, ct__tensor_label(t, label, sizeof label));
  }
  export_ctx *c = ct__zalloc(sizeof *c);
  if (c == NULL) {
    return ct__error_null(CT_ERR_OUT_OF_MEMORY,
                          "%s: out of host memory for a %zu-byte DLPack managed tensor", what,
                          sizeof *c);
  }
  int rank = t->dims.rank;
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; i--) {
    c->shape[i] = t->dims.d[i];
    c->strides[i] = stride;
    /* Checked dims keep the product of nonzero extents in range; with a zero extent elsewhere
     * the product may overflow, and then no element is addressed: any stride will do. */
    if (__builtin_mul_overflow(stride, t->dims.d[i], &stride)) stride = 0;
  }
  ct_place p = t->block->place;
  *x = versioned ? &c->managed.v1.dl_tensor : &c->managed.v0.dl_tensor;
  (*x)->data = ct__tensor_ptr(t);
  (*x)->device.device_type = (DLDeviceType)p.kind; /* corten's kinds are DLPack's codes */
  (*x)->device.device_id = p.kind == CT_DEVICE_CUDA ? p.device : 0;
  (*x)->ndim = rank;
  (*x)->dtype = dl_type_of(t->dtype);
  (*x)->shape = c->shape;
  (*x)->strides = c->strides;
  (*x)->byte_offset = 0;
  c->block = t->block;
  ct__block_retain(c->block);
  return c;
}

ct_status ct_tensor_to_dlpack(const ct_tensor *t, DLManagedTensor **out) {
  if (out != NULL) *out = NULL;
  DLTensor *x;
  export_ctx *c = export_new(t, out, false, &x);
  if (c == NULL) return ct_last_status();
  c->managed.v0.manager_ctx = c;
  c->managed.v0.deleter = export_deleter;
  *out = &c->managed.v0;
  return CT_OK;
}

ct_status ct_tensor_to_dlpack_versioned(const ct_tensor *t, DLManagedTensorVersioned **out) {
  if (out != NULL) *out = NULL;
  DLTensor *x;
  export_ctx *c = export_new(t, out, true, &x);
  if (c == NULL) return ct_last_status();
  DLManagedTensorVersioned *m = &c->managed.v1;
  m->version.major = CT_DLPACK_MAJOR;
  m->version.minor = CT_DLPACK_MINOR;
  m->manager_ctx = c;
  m->deleter = export_deleter_versioned;
  m->flags = ct__block_read_only(t->block) ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
  *out = m;
  return CT_OK;
}

/* ---- Import ---------------------------------------------------------------------------------- */

static void import_release(void *ctx) {
  DLManagedTensor *m = ctx;
  if (m->deleter != NULL) m->deleter(m);
}

/* "[2,3] float32 (code 2, 32 bits, 1 lane) on device (1, 0)" for messages; shape printed only
 * when it can be read. */
static const char *describe(const DLTensor *x, char *buf, size_t cap) {
  size_t pos = 0;
  int n;
  if (x->ndim >= 0 && x->ndim <= CT_MAX_RANK && (x->shape != NULL || x->ndim == 0)) {
    n = snprintf(buf, cap, "[");
    pos = n > 0 ? (size_t)n : 0;
    for (int i = 0; i < x->ndim && pos < cap; i++) {
      n = snprintf(buf + pos, cap - pos, "%s%" PRId64, i ? "," : "", x->shape[i]);
      pos += n > 0 ? (size_t)n : 0;
    }
    if (pos < cap) {
      n = snprintf(buf + pos, cap - pos, "] ");
      pos += n > 0 ? (size_t)n : 0;
    }
  } else if (cap > 0) {
    n = snprintf(buf, cap, "ndim %d ", x->ndim);
    pos = n > 0 ? (size_t)n : 0;
  }
  if (pos < cap) {
    snprintf(buf + pos, cap - pos, "%s%u x%u lanes on device (%d, %d)",
             ct__dl_code_name(x->dtype.code), (unsigned)x->dtype.bits, (unsigned)x->dtype.lanes,
             (int)x->device.device_type, x->device.device_id);
  }
  return buf;
}

#define WHAT "ct_tensor_from_dlpack"

/* Checks the DLTensor's shape: rank, extents, element count. */
static ct_status import_dims(const DLTensor *x, const char *desc, ct_ddim *dims, int64_t *numel) {
  if (x->ndim < 0) {
    return ct__error(CT_ERR_FORMAT, WHAT ": DLTensor %s has a negative ndim", desc);
  }
  if (x->ndim > CT_MAX_RANK) {
    return ct__error(CT_ERR_OUT_OF_RANGE,
                     WHAT ": DLTensor %s has ndim %d, above CT_MAX_RANK (%d): reshape it first",
                     desc, x->ndim, CT_MAX_RANK);
  }
  if (x->ndim > 0 && x->shape == NULL) {
    return ct__error(CT_ERR_FORMAT, WHAT ": DLTensor %s has ndim %d and a NULL shape", desc,
                     x->ndim);
  }
  memset(dims, 0, sizeof *dims);
  dims->rank = x->ndim;
  for (int i = 0; i < x->ndim; i++) {
    if (x->shape[i] < 0) {
      return ct__error(CT_ERR_FORMAT, WHAT ": DLTensor %s has a negative extent at dim %d", desc,
                       i);
    }
    dims->d[i] = x->shape[i];
  }
  int64_t n = ct_ddim_numel(*dims);
  if (n < 0 || n > INT64_MAX / 8) {
    return ct__error(CT_ERR_OUT_OF_RANGE,
                     WHAT ": DLTensor %s holds more elements than memory can address", desc);
  }
  *numel = n;
  return CT_OK;
}

/* Checks the dtype: one lane of a (code, bits) corten has. */
static ct_status import_dtype(const DLTensor *x, const char *desc, ct_dtype *out) {
  DLDataType d = x->dtype;
  if (d.code > CT__DL_BOOL || d.bits == 0) {
    return ct__error(CT_ERR_FORMAT,
                     WHAT ": DLTensor %s has dtype code %u with %u bits, which DLPack does not "
                     "define",
                     desc, (unsigned)d.code, (unsigned)d.bits);
  }
  if (d.lanes != 1) {
    return ct__error(CT_ERR_UNSUPPORTED,
                     WHAT ": DLTensor %s is a vector type of %u lanes: corten holds one value per "
                     "element, export it with lanes 1 and one more dim",
                     desc, (unsigned)d.lanes);
  }
  *out = ct__dtype_from_dl(d.code, d.bits);
  if (*out == CT_DTYPE_UNDEFINED) {
    return ct__error(CT_ERR_UNSUPPORTED,
                     WHAT ": DLTensor %s: %s%u has no corten dtype (corten holds int8/16/32/64, "
                     "uint8/16/32/64, bool, float16/32/64 and bfloat16): convert it first",
                     desc, ct__dl_code_name(d.code), (unsigned)d.bits);
  }
  return CT_OK;
}

/* Maps the device to a place; the place check then says whether this build has it. */
static ct_status import_place(const DLTensor *x, const char *desc, ct_place *out) {
  switch (x->device.device_type) {
    case kDLCPU: *out = ct_cpu(); return CT_OK;
    case kDLCUDAHost: *out = ct_cuda_host(); return CT_OK;
    case kDLCUDA:
      if (x->device.device_id < 0) {
        return ct__error(CT_ERR_FORMAT, WHAT ": DLTensor %s has a negative CUDA device id", desc);
      }
      *out = ct_cuda(x->device.device_id);
      return CT_OK;
    default: break;
  }
  return ct__error(CT_ERR_UNSUPPORTED,
                   WHAT ": DLTensor %s is on device type %d, which corten does not hold (it holds "
                   "kDLCPU, kDLCUDA and kDLCUDAHost): copy it to one of those first",
                   desc, (int)x->device.device_type);
}

/* Strides must describe the compact row-major layout; extents of 1 may have any stride, and a
 * tensor without elements any strides at all. */
static ct_status import_strides(const DLTensor *x, const char *desc, int64_t numel) {
  if (x->strides == NULL || numel == 0) return CT_OK;
  int64_t expect = 1;
  for (int i = x->ndim - 1; i >= 0; i--) {
    if (x->shape[i] != 1 && x->strides[i] != expect) {
      return ct__error(CT_ERR_UNSUPPORTED,
                       WHAT ": DLTensor %s has stride %" PRId64 " at dim %d where compact "
                       "row-major needs %" PRId64 ": corten views only compact memory, make it "
                       "contiguous first",
                       desc, x->strides[i], i, expect);
    }
    expect *= x->shape[i];
  }
  return CT_OK;
}

/* What both forms share: checks the DLTensor x and makes t view it, its block released by
 * release(ctx); t unchanged and nothing owned on failure. */
static ct_status import_tensor(ct_tensor *t, const DLTensor *x, void (*release)(void *),
                               void *ctx, bool read_only) {
  char desc[CT__DDIM_STR_CAP + 64];
  describe(x, desc, sizeof desc);
  ct_ddim dims;
  int64_t numel = 0;
  ct_dtype dtype = CT_DTYPE_UNDEFINED;
  ct_place place = ct_cpu();
  ct_status s = import_dims(x, desc, &dims, &numel);
  if (s == CT_OK) s = import_dtype(x, desc, &dtype);
  if (s == CT_OK) s = import_place(x, desc, &place);
  if (s == CT_OK) s = import_strides(x, desc, numel);
  if (s != CT_OK) return s;
  size_t size = ct_dtype_size(dtype);
  size_t nbytes = (size_t)numel * size; /* numel <= INT64_MAX / 8 */
  if (x->data == NULL && nbytes > 0) {
    return ct__error(CT_ERR_FORMAT, WHAT ": DLTensor %s has NULL data for %zu bytes", desc,
                     nbytes);
  }
  void *ptr = NULL;
  if (x->data != NULL) {
    uintptr_t base = (uintptr_t)x->data;
    if (x->byte_offset > UINTPTR_MAX - base || nbytes > UINTPTR_MAX - base - x->byte_offset) {
      return ct__error(CT_ERR_FORMAT,
                       WHAT ": DLTensor %s: data %p + byte_offset %" PRIu64 " + %zu bytes "
                       "wraps around the address space",
                       desc, x->data, (uint64_t)x->byte_offset, nbytes);
    }
    ptr = (char *)x->data + x->byte_offset;
    if (nbytes > 0 && (uintptr_t)ptr % size != 0) {
      return ct__error(CT_ERR_UNSUPPORTED,
                       WHAT ": DLTensor %s: its first element at %p is not aligned to its "
                       "%zu-byte elements: copy it to aligned memory first",
                       desc, ptr, size);
    }
  }
  s = ct__place_check(place, WHAT);
  if (s != CT_OK) return s;
  ct__block *b = ct__block_wrap(ptr, nbytes, place, release, ctx);
  if (b == NULL) {
    return ct__error(CT_ERR_OUT_OF_MEMORY,
                     WHAT ": out of host memory for the block header of DLTensor %s; the "
                     "DLManagedTensor is still the caller's",
                     desc);
  }
  b->read_only = read_only;
  ct__tensor_adopt(t, b, dims, numel, dtype);
  return CT_OK;
}

ct_status ct_tensor_from_dlpack(ct_tensor *t, DLManagedTensor *m) {
  if (t == NULL || m == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, WHAT ": the %s is NULL",
                     t == NULL ? "tensor" : "DLManagedTensor");
  }
  return import_tensor(t, &m->dl_tensor, import_release, m, false);
}

static void import_release_versioned(void *ctx) {
  DLManagedTensorVersioned *m = ctx;
  if (m->deleter != NULL) m->deleter(m);
}

ct_status ct_tensor_from_dlpack_versioned(ct_tensor *t, DLManagedTensorVersioned *m) {
  if (t == NULL || m == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_tensor_from_dlpack_versioned: the %s is NULL",
                     t == NULL ? "tensor" : "DLManagedTensorVersioned");
  }
  if (m->version.major != CT_DLPACK_MAJOR) {
    return ct__error(CT_ERR_UNSUPPORTED,
                     "ct_tensor_from_dlpack_versioned: DLManagedTensorVersioned of DLPack "
                     "%u.%u: corten reads major version %d only; ask the producer for "
                     "max_version (%d, %d), and call its deleter",
                     (unsigned)m->version.major, (unsigned)m->version.minor, CT_DLPACK_MAJOR,
                     CT_DLPACK_MAJOR, CT_DLPACK_MINOR);
  }
  return import_tensor(t, &m->dl_tensor, import_release_versioned, m,
                       (m->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0);
}
