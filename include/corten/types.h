/* SPDX-License-Identifier: Apache-2.0 */
/* corten/types.h: element types, places and dims, the vocabulary every other module speaks.
 *
 * These are plain values. Nothing here allocates or fails: the functions only compute, and
 * checking a dtype, place or dims against what a call needs is that call's work.
 *
 * Thread-safety: every function here may be called from any thread at any time. */
#ifndef CORTEN_TYPES_H
#define CORTEN_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <corten/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Data types ---------------------------------------------------------------------------------
 * float16 and bfloat16 are storage types: tensors hold them, copy them and hand them over
 * through DLPack; arithmetic on them belongs to the kernels that support them. */
typedef enum ct_dtype {
  CT_DTYPE_UNDEFINED = 0,
  CT_BOOL,
  CT_INT8,
  CT_UINT8,
  CT_INT16,
  CT_INT32,
  CT_INT64,
  CT_FLOAT16,
  CT_BFLOAT16,
  CT_FLOAT32,
  CT_FLOAT64,
  /* The wider unsigned integers, appended after CT_FLOAT64 so no earlier value changed. */
  CT_UINT16,
  CT_UINT32,
  CT_UINT64,
} ct_dtype;

/* Bytes per element: 1 for bool, int8, uint8; 2 for int16, uint16, float16, bfloat16; 4 for
 * int32, uint32, float32; 8 for int64, uint64, float64. 0 for CT_DTYPE_UNDEFINED and for values
 * outside the enum. */
CT_API size_t ct_dtype_size(ct_dtype t);

/* "bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
 * "float64", "uint16", "uint32", "uint64"; "undefined" for CT_DTYPE_UNDEFINED; "invalid" outside
 * the enum. Never NULL. */
CT_API const char *ct_dtype_name(ct_dtype t);

/* ---- Places -------------------------------------------------------------------------------------
 * Where memory lives. The kind values are DLPack's device codes (kDLCPU, kDLCUDA,
 * kDLCUDAHost), so a ct_place converts to a DLDevice field by field. */
typedef enum ct_device_kind {
  CT_DEVICE_CPU = 1,
  CT_DEVICE_CUDA = 2,
  CT_DEVICE_CUDA_HOST = 3, /* page-locked host memory */
} ct_device_kind;

/* A place: a device kind and, for CUDA, the device. Make one with ct_cpu, ct_cuda or
 * ct_cuda_host. */
typedef struct ct_place {
  ct_device_kind kind;
  int device; /* CUDA ordinal; 0 for the host places */
} ct_place;

/* The host (ct_cpu), CUDA device `device` (ct_cuda) and page-locked host memory (ct_cuda_host).
 * ct_cuda checks nothing: the calls that use a place say when the device does not exist. */
CT_API ct_place ct_cpu(void);
CT_API ct_place ct_cuda(int device);
CT_API ct_place ct_cuda_host(void);

/* Same kind and same device. The host places compare equal whatever their device field. */
CT_API bool ct_place_equal(ct_place a, ct_place b);

/* Writes "cpu", "cuda:1", "cuda_host", or for an invalid place "invalid place (kind 7)" or
 * "invalid place (cuda device -1)" into buf (always NUL-terminated when cap > 0) and returns
 * buf. For error messages and logs. NULL buf or cap 0: writes nothing and returns buf. */
CT_API const char *ct_place_str(ct_place p, char *buf, size_t cap);

/* CUDA devices visible to this process: 0 when corten is built without CUDA or no GPU exists. */
CT_API int ct_cuda_device_count(void);

/* ---- Dims ---------------------------------------------------------------------------------------
 * A shape of up to CT_MAX_RANK dims. rank -1 means "unset" (a new tensor); rank 0 is a scalar
 * with one element. Values are plain data: copy them freely. */
#define CT_MAX_RANK 9

/* The rank and the first rank extents in d (extents past the rank are not looked at). */
typedef struct ct_ddim {
  int rank;
  int64_t d[CT_MAX_RANK];
} ct_ddim;

/* Builds dims from its arguments: CT_DIMS(2, 3, 4) is [2,3,4], CT_DIMS() is a scalar (rank 0).
 * More than CT_MAX_RANK arguments give a ddim whose rank says how many were asked for and which
 * every function taking dims refuses with CT_ERR_OUT_OF_RANGE. A C11 expression (compound
 * literals), usable anywhere a ct_ddim value is. */
#define CT_DIMS(...)                                                                            \
  ct__ddim_make((int)(sizeof((int64_t[]){0, __VA_ARGS__}) / sizeof(int64_t)) - 1,               \
                (const int64_t[]){0, __VA_ARGS__} + 1)

/* Helper of CT_DIMS; use CT_DIMS or ct_ddim_make instead. Inlined and without a loop, so that
 * CT_DIMS of constants is a constant ddim, built where it is passed: an out-of-line helper
 * stored it piecewise and the caller read it back in wider moves, a store-forwarding stall on
 * each (CT_DIMS cost more than the ct_tensor_resize it was passed to). */
static inline CT__ALWAYS_INLINE ct_ddim ct__ddim_make(int rank, const int64_t *d) {
  ct_ddim r = {rank,
               {rank > 0 ? d[0] : 0, rank > 1 ? d[1] : 0, rank > 2 ? d[2] : 0,
                rank > 3 ? d[3] : 0, rank > 4 ? d[4] : 0, rank > 5 ? d[5] : 0,
                rank > 6 ? d[6] : 0, rank > 7 ? d[7] : 0, rank > 8 ? d[8] : 0}};
  return r;
}

/* Dims from an array of n extents (n up to CT_MAX_RANK; a larger n gives a ddim of rank n that
 * every function refuses with CT_ERR_OUT_OF_RANGE, a negative n an unset ddim of rank -1).
 * NULL d gives extents of 0. */
CT_API ct_ddim ct_ddim_make(const int64_t *d, int n);

/* Product of the extents; 1 for rank 0. -1 when the rank is below 0 or above CT_MAX_RANK, an
 * extent is negative, or the product of the nonzero extents overflows int64 (so a zero extent
 * does not excuse the others, and the order of the extents never matters). */
CT_API int64_t ct_ddim_numel(ct_ddim dims);

/* Same rank and the same extents in the first rank positions (extents beyond the rank are not
 * looked at). Two unset ddims are equal. */
CT_API bool ct_ddim_equal(ct_ddim a, ct_ddim b);

/* Writes "[2,3,4]", "[]" (scalar), "unset", or for a rank above CT_MAX_RANK "rank 10 (more than
 * CT_MAX_RANK 9)" into buf (NUL-terminated when cap > 0, cut short when it does not fit) and
 * returns buf. NULL buf or cap 0: writes nothing and returns buf. */
CT_API const char *ct_ddim_str(ct_ddim dims, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_TYPES_H */
