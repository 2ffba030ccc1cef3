/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/softmax_row.h: softmax of one contiguous row, shared by the softmax kernel
 * (ops/cpu/reduce.c) and softmax_with_cross_entropy's (ops/cpu/loss.c), so that both give the
 * same bits.
 *
 * The row's maximum is taken in 8 lanes (NaN wins; the max is the same in any order), exp of
 * x - max (ops/cpu/vmath.h) in one vectorised pass, their sum in double in CT__SM_LANES lanes
 * (element i of the first n - n % 8 into lane i % 8, the rest into lane 0; the lanes then added
 * pairwise, ct__sm_fold), whatever the vector width, and each exp multiplied by 1 / sum in
 * double (no division per element).
 * A strided row (reduce.c's blocks) sums in the same lanes, so any axis gives the same bits. */
#ifndef CORTEN_OPS_CPU_SOFTMAX_ROW_H
#define CORTEN_OPS_CPU_SOFTMAX_ROW_H

#include <stdint.h>

#include "ops/cpu/parallel.h"
#include "ops/cpu/vmath.h"

#define CT__SM_LANES 8

/* The sum of the 8 lanes l[0 .. 7], in a fixed order. */
static inline double ct__sm_fold(const double *l) {
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

#define CT__SM_ROW(SUF, T)                                                                    \
  static inline T ct__sm_max_##SUF(const T *x, int64_t n) {                                   \
    T l[8];                                                                                   \
    for (int k = 0; k < 8; k++) l[k] = x[0];                                                  \
    int64_t i = 1;                                                                            \
    for (; i + 8 <= n; i += 8) {                                                              \
      CT__SIMD for (int k = 0; k < 8; k++) {                                                  \
        T v = x[i + k];                                                                       \
        l[k] = ((v > l[k]) | (v != v)) ? v : l[k]; /* no ||: a branch keeps it scalar */      \
      }                                                                                       \
    }                                                                                         \
    for (; i < n; i++) l[0] = x[i] > l[0] || x[i] != x[i] ? x[i] : l[0];                      \
    T m = l[0];                                                                               \
    for (int k = 1; k < 8; k++) m = l[k] > m || l[k] != l[k] ? l[k] : m;                      \
    return m;                                                                                 \
  }                                                                                           \
  /* o = softmax(x) over n > 0 elements (o may be x); returns the sum of the exps, the max in \
   * *mx. */                                                                                  \
  static inline double ct__sm_row_##SUF(const T *x, T *o, int64_t n, T *mx) {                 \
    T m = ct__sm_max_##SUF(x, n);                                                             \
    CT__SIMD for (int64_t i = 0; i < n; i++) o[i] = CT__VEXP((T)(x[i] - m));                  \
    double l[CT__SM_LANES] = {0};                                                             \
    int64_t i = 0;                                                                            \
    for (; i + CT__SM_LANES <= n; i += CT__SM_LANES) {                                        \
      for (int k = 0; k < CT__SM_LANES; k++) l[k] += (double)o[i + k];                        \
    }                                                                                         \
    for (; i < n; i++) l[0] += (double)o[i];                                                  \
    double sum = ct__sm_fold(l);                                                              \
    double inv = 1.0 / sum;                                                                   \
    CT__SIMD for (int64_t j = 0; j < n; j++) o[j] = (T)((double)o[j] * inv);                  \
    *mx = m;                                                                                  \
    return sum;                                                                               \
  }

CT__SM_ROW(f32, float)
CT__SM_ROW(f64, double)

#endif /* CORTEN_OPS_CPU_SOFTMAX_ROW_H */
