/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/decomposed_norm.c: decomposed_layer_norm on the CPU (ops/defs/decomposed_norm.c).
 *
 * Each row of X's last dim on its own, its rows split across threads: the mean as reduce_mean
 * computes it (the row summed in double in element order, divided by its length in double,
 * rounded to the dtype), the centred values X - m in the dtype into Out, the powers as
 * elementwise_pow computes them (ct__pow_f in double, rounded) summed likewise into the variance,
 * then v + eps in the dtype, its square root as sqrt computes it (in double, rounded), and each
 * element divided, multiplied and added in the dtype: the nine ops' bits, one pass over the row
 * for the statistics and one to finish it (the row is in L1 for both). */
#include <math.h>
#include <stdint.h>

#include "ops/cpu/math_kernels.h"
#include "ops/cpu/parallel.h"
#include "ops/defs.h"

typedef struct dn_job {
  const void *x, *scale, *bias;
  void *o;
  double exponent;
  int64_t n;                /* the row's length */
  int64_t scale_n, bias_n; /* 1 or n */
  bool eps_first, scale_first, bias_first;
  const void *eps;
} dn_job;

/* Rows are taken DN_GROUP at a time: each row's sums stay in element order (the bits), but the
 * group's DN_GROUP sums are independent chains of additions, where one row's alone waits on
 * each addition's latency. */
#define DN_GROUP 8

#define DN_ROWS(T, SFX)                                                                  \
  /* Rows r0 .. r0 + k - 1 (k <= DN_GROUP): the statistics, Out holding the centred values;  \
   * each row's square root into sd. Inlined: called with k DN_GROUP and square (the         \
   * exponent is 2: ct__pow_f's a * a) as constants, it compiles to straight loops. */       \
  static inline __attribute__((always_inline)) void stats_##SFX(                         \
      const dn_job *j, int64_t r0, int64_t k, T *sd, bool square) {                      \
    const int64_t n = j->n;                                                              \
    const T eps = *(const T *)j->eps;                                                    \
    const T *x = (const T *)j->x + r0 * n;                                               \
    T *o = (T *)j->o + r0 * n;                                                           \
    double sum[DN_GROUP] = {0}, sq[DN_GROUP] = {0};                                      \
    T m[DN_GROUP];                                                                       \
    for (int64_t i = 0; i < n; i++) {                                                    \
      for (int64_t q = 0; q < k; q++) sum[q] += (double)x[q * n + i];                    \
    }                                                                                    \
    for (int64_t q = 0; q < k; q++) m[q] = (T)(sum[q] / (double)n);                      \
    for (int64_t i = 0; i < n; i++) {                                                    \
      for (int64_t q = 0; q < k; q++) {                                                  \
        T d = x[q * n + i] - m[q];                                                       \
        o[q * n + i] = d;                                                                \
        const double dd = (double)d;                                                     \
        sq[q] += (double)(T)(square ? dd * dd : ct__pow_f(dd, j->exponent));             \
      }                                                                                  \
    }                                                                                    \
    for (int64_t q = 0; q < k; q++) {                                                    \
      const T var = (T)(sq[q] / (double)n);                                              \
      const T ve = j->eps_first ? eps + var : var + eps;                                 \
      sd[q] = (T)sqrt((double)ve);                                                       \
    }                                                                                    \
  }                                                                                      \
  static void rows_##SFX(void *arg, int64_t first, int64_t last) {                       \
    const dn_job *j = arg;                                                               \
    const int64_t n = j->n;                                                              \
    const T *g = j->scale, *b = j->bias;                                                 \
    for (int64_t r0 = first; r0 < last; r0 += DN_GROUP) {                                \
      const int64_t k = last - r0 < DN_GROUP ? last - r0 : DN_GROUP;                     \
      T sds[DN_GROUP];                                                                   \
      if (k == DN_GROUP && j->exponent == 2.0) {                                         \
        stats_##SFX(j, r0, DN_GROUP, sds, true);                                         \
      } else {                                                                           \
        stats_##SFX(j, r0, k, sds, false);                                               \
      }                                                                                  \
      for (int64_t q = 0; q < k; q++) {                                                  \
        T *o = (T *)j->o + (r0 + q) * n;                                                 \
        const T sd = sds[q];                                                             \
        for (int64_t i = 0; i < n; i++) o[i] = o[i] / sd;                                \
        if (g != NULL) {                                                                 \
          const int64_t gi = j->scale_n == 1 ? 0 : 1;                                    \
          if (j->scale_first) {                                                          \
            for (int64_t i = 0; i < n; i++) o[i] = g[i * gi] * o[i];                     \
          } else {                                                                       \
            for (int64_t i = 0; i < n; i++) o[i] = o[i] * g[i * gi];                     \
          }                                                                              \
        }                                                                                \
        if (b != NULL) {                                                                 \
          const int64_t bi = j->bias_n == 1 ? 0 : 1;                                     \
          if (j->bias_first) {                                                           \
            for (int64_t i = 0; i < n; i++) o[i] = b[i * bi] + o[i];                     \
          } else {                                                                       \
            for (int64_t i = 0; i < n; i++) o[i] = o[i] + b[i * bi];                     \
          }                                                                              \
        }                                                                                \
      }                                                                                  \
    }                                                                                    \
  }                                                                                      \
  static ct_status dnorm_##SFX(const ct_kernel_ctx *c) {                                 \
    ct_status st = ct__dnorm_check(c);                                                   \
    if (CT__UNLIKELY(st != CT_OK)) return st;                                            \
    const ct_tensor *x = ct_kernel_in(c, CT__DN_X, 0);                                   \
    T *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);                                      \
    if (CT__UNLIKELY(o == NULL)) return ct_last_status();                                \
    dn_job j = {.x = ct__k_in_data(x), .o = o, .n = x->dims.d[x->dims.rank - 1],         \
                .eps = ct__k_in_data(ct_kernel_in(c, CT__DN_EPSILON, 0)),                \
                .exponent = *(const T *)ct__k_in_data(ct_kernel_in(c, CT__DN_EXPONENT, 0)), \
                .eps_first = c->attr[CT__DN_EPSILON_FIRST].u.b,                          \
                .scale_first = c->attr[CT__DN_SCALE_FIRST].u.b,                          \
                .bias_first = c->attr[CT__DN_BIAS_FIRST].u.b};                           \
    if (ct_kernel_in_count(c, CT__DN_SCALE) > 0) {                                       \
      j.scale = ct__k_in_data(ct_kernel_in(c, CT__DN_SCALE, 0));                         \
      j.scale_n = ct_kernel_in(c, CT__DN_SCALE, 0)->numel;                               \
    }                                                                                    \
    if (ct_kernel_in_count(c, CT__DN_BIAS) > 0) {                                        \
      j.bias = ct__k_in_data(ct_kernel_in(c, CT__DN_BIAS, 0));                           \
      j.bias_n = ct_kernel_in(c, CT__DN_BIAS, 0)->numel;                                 \
    }                                                                                    \
    ct__parallel_for(x->numel / j.n, CT__GRAIN_MATH / j.n + 1, rows_##SFX, &j);          \
    return CT_OK;                                                                        \
  }

DN_ROWS(float, f32)
DN_ROWS(double, f64)

static const ct__kernel_set kernels[] = {
    {"decomposed_layer_norm", CT__KERNELS([CT_FLOAT32] = dnorm_f32, [CT_FLOAT64] = dnorm_f64)},
};

const ct__kernel_table ct__cpu_decomposed_norm = CT__TABLE(kernels);
