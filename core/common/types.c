/* SPDX-License-Identifier: Apache-2.0 */
/* core/common/types.c: dtypes, places and dims. */
#include <stdio.h>
#include <string.h>

#include "common/common.h"

size_t ct_dtype_size(ct_dtype t) { return ct__dtype_size(t); }

const char *ct_dtype_name(ct_dtype t) {
  switch (t) {
    case CT_DTYPE_UNDEFINED: return "undefined";
    case CT_BOOL: return "bool";
    case CT_INT8: return "int8";
    case CT_UINT8: return "uint8";
    case CT_INT16: return "int16";
    case CT_INT32: return "int32";
    case CT_INT64: return "int64";
    case CT_FLOAT16: return "float16";
    case CT_BFLOAT16: return "bfloat16";
    case CT_FLOAT32: return "float32";
    case CT_FLOAT64: return "float64";
    case CT_UINT16: return "uint16";
    case CT_UINT32: return "uint32";
    case CT_UINT64: return "uint64";
  }
  return "invalid";
}

ct_place ct_cpu(void) { return (ct_place){CT_DEVICE_CPU, 0}; }
ct_place ct_cuda(int device) { return (ct_place){CT_DEVICE_CUDA, device}; }
ct_place ct_cuda_host(void) { return (ct_place){CT_DEVICE_CUDA_HOST, 0}; }

bool ct_place_equal(ct_place a, ct_place b) { return ct__place_eq(a, b); }

int ct__place_valid(ct_place p) {
  switch (p.kind) {
    case CT_DEVICE_CPU:
    case CT_DEVICE_CUDA_HOST: return 1;
    case CT_DEVICE_CUDA: return p.device >= 0;
  }
  return 0;
}

const char *ct_place_str(ct_place p, char *buf, size_t cap) {
  if (buf == NULL || cap == 0) return buf;
  switch (p.kind) {
    case CT_DEVICE_CPU: snprintf(buf, cap, "cpu"); break;
    case CT_DEVICE_CUDA_HOST: snprintf(buf, cap, "cuda_host"); break;
    case CT_DEVICE_CUDA:
      if (p.device >= 0) {
        snprintf(buf, cap, "cuda:%d", p.device);
      } else {
        snprintf(buf, cap, "invalid place (cuda device %d)", p.device);
      }
      break;
    default: snprintf(buf, cap, "invalid place (kind %d)", (int)p.kind); break;
  }
  return buf;
}

/* ct_cuda_device_count lives with the CUDA place: core/cuda/cuda_device.c (or cuda_stub.c). */

ct_ddim ct_ddim_make(const int64_t *d, int n) {
  ct_ddim r;
  memset(&r, 0, sizeof r);
  if (n < 0) {
    r.rank = -1;
    return r;
  }
  r.rank = n;
  for (int i = 0; i < n && i < CT_MAX_RANK; i++) r.d[i] = d ? d[i] : 0;
  return r;
}

/* The one rule for dims' extents (docs/design/tensor.md): dims are valid only when the product of
 * their nonzero extents fits in int64, so that the product of any subset of the extents, taken
 * in any order, fits too. A zero extent does not excuse the others: [0, 2^62, 2] is refused as
 * [2^62, 2, 0] is, and flatten_to_2d or slice of valid dims can never overflow. */
int64_t ct_ddim_numel(ct_ddim dims) {
  int64_t n = 1;
  bool empty = false;
  if (dims.rank < 0 || dims.rank > CT_MAX_RANK) return -1;
  for (int i = 0; i < dims.rank; i++) {
    if (dims.d[i] < 0) return -1;
    if (dims.d[i] == 0) {
      empty = true;
    } else if (__builtin_mul_overflow(n, dims.d[i], &n)) {
      return -1;
    }
  }
  return empty ? 0 : n;
}

bool ct_ddim_equal(ct_ddim a, ct_ddim b) {
  if (a.rank != b.rank) return false;
  if (a.rank < 0) return true;
  int n = a.rank < CT_MAX_RANK ? a.rank : CT_MAX_RANK;
  for (int i = 0; i < n; i++) {
    if (a.d[i] != b.d[i]) return false;
  }
  return true;
}

const char *ct_ddim_str(ct_ddim dims, char *buf, size_t cap) {
  size_t pos = 0;
  if (buf == NULL || cap == 0) return buf;
  if (dims.rank < 0) {
    snprintf(buf, cap, "unset");
    return buf;
  }
  if (dims.rank > CT_MAX_RANK) {
    snprintf(buf, cap, "rank %d (more than CT_MAX_RANK %d)", dims.rank, CT_MAX_RANK);
    return buf;
  }
  buf[0] = '\0';
  for (int i = 0; i <= dims.rank && pos < cap; i++) {
    int w;
    if (i == dims.rank) {
      w = snprintf(buf + pos, cap - pos, "]");
    } else {
      w = snprintf(buf + pos, cap - pos, "%s%lld", i == 0 ? "[" : ",", (long long)dims.d[i]);
    }
    if (w < 0) break;
    pos += (size_t)w;
  }
  if (dims.rank == 0) snprintf(buf, cap, "[]");
  return buf;
}

ct_status ct__check_dims_slow(ct_ddim dims, const char *what, int64_t *numel) {
  char s[CT__DDIM_STR_CAP];
  if (dims.rank < 0) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "%s: dims are unset (rank %d): pass dims built with CT_DIMS(...)", what,
                     dims.rank);
  }
  if (dims.rank > CT_MAX_RANK) {
    return ct__error(CT_ERR_OUT_OF_RANGE,
                     "%s: rank %d exceeds CT_MAX_RANK (%d): reshape to at most %d dims", what,
                     dims.rank, CT_MAX_RANK, CT_MAX_RANK);
  }
  for (int i = 0; i < dims.rank; i++) {
    if (dims.d[i] < 0) {
      return ct__error(CT_ERR_INVALID_ARGUMENT,
                       "%s: dims %s have a negative extent at dim %d: extents must be >= 0",
                       what, ct_ddim_str(dims, s, sizeof s), i);
    }
  }
  int64_t n = ct_ddim_numel(dims);
  size_t bytes;
  if (n < 0 || !ct__mul_size((size_t)n, 8, &bytes) || bytes > (size_t)INT64_MAX) {
    return ct__error(CT_ERR_OUT_OF_RANGE,
                     "%s: dims %s hold more elements than memory can address: use smaller dims",
                     what, ct_ddim_str(dims, s, sizeof s));
  }
  *numel = n;
  return CT_OK;
}
