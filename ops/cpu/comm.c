/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/comm.c: the collectives' kernels for host tensors over MPI (core/comm), and the
 * arithmetic the MPI engine reduces with where MPI has none (float16, bfloat16) or where it
 * finishes a small collective itself. One kernel serves every dtype: the engine checks which it
 * can reduce. */
#include <string.h>

#include "ops/defs.h"

#include "comm/comm_impl.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/half.h"

/* Integer sums wrap (as MPI_SUM does in practice), computed unsigned so C has no overflow. */
#define CT__COMBINE_INT(T, U)                                                      \
  do {                                                                             \
    T *a_ = acc;                                                                   \
    const T *x_ = x;                                                               \
    for (int64_t i = 0; i < n; i++) {                                              \
      a_[i] = max ? (x_[i] > a_[i] ? x_[i] : a_[i]) : (T)(U)((U)a_[i] + (U)x_[i]); \
    }                                                                              \
  } while (0)

#define CT__COMBINE_FLOAT(T)                                                     \
  do {                                                                           \
    T *a_ = acc;                                                                 \
    const T *x_ = x;                                                             \
    for (int64_t i = 0; i < n; i++) a_[i] = max ? (x_[i] > a_[i] ? x_[i] : a_[i]) \
                                               : a_[i] + x_[i];                  \
  } while (0)

/* float16 and bfloat16: in float32, rounded to nearest even once per addition, as the
 * elementwise kernels do. The larger of two (a NaN never wins, as MPI_MAX on floats). */
#define CT__COMBINE_HALF(to_f, from_f)                                                   \
  do {                                                                                   \
    uint16_t *a_ = acc;                                                                  \
    const uint16_t *x_ = x;                                                              \
    for (int64_t i = 0; i < n; i++) {                                                    \
      float p = to_f(a_[i]), q = to_f(x_[i]);                                            \
      a_[i] = max ? (q > p ? x_[i] : a_[i]) : from_f(p + q);                             \
    }                                                                                    \
  } while (0)

static void combine(void *acc, const void *x, int64_t n, ct_dtype t, bool max) {
  switch (t) {
  case CT_INT8: CT__COMBINE_INT(int8_t, uint8_t); break;
  case CT_UINT8: CT__COMBINE_INT(uint8_t, uint8_t); break;
  case CT_INT16: CT__COMBINE_INT(int16_t, uint16_t); break;
  case CT_INT32: CT__COMBINE_INT(int32_t, uint32_t); break;
  case CT_INT64: CT__COMBINE_INT(int64_t, uint64_t); break;
  case CT_UINT16: CT__COMBINE_INT(uint16_t, uint16_t); break;
  case CT_UINT32: CT__COMBINE_INT(uint32_t, uint32_t); break;
  case CT_UINT64: CT__COMBINE_INT(uint64_t, uint64_t); break;
  case CT_FLOAT32: CT__COMBINE_FLOAT(float); break;
  case CT_FLOAT64: CT__COMBINE_FLOAT(double); break;
  case CT_FLOAT16: CT__COMBINE_HALF(ct__half_to_float, ct__float_to_half); break;
  case CT_BFLOAT16: CT__COMBINE_HALF(ct__bf16_to_float, ct__float_to_bf16); break;
  default: break; /* the engine reduces no other dtype (ct__mpi_check) */
  }
}

static ct_status collective(const ct_kernel_ctx *c) {
  return ct__comm_kernel(c, CT__ENGINE_MPI, combine);
}

static const ct__kernel_set kernels[] = {CT__COMM_KERNEL_SETS(collective)};

const ct__kernel_table ct__cpu_comm = CT__TABLE(kernels);
