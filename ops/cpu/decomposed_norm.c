/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/decomposed_norm.c: decomposed_layer_norm on the CPU (ops/defs/decomposed_norm.c).
 *
 * Each row of X's last dim on its own, its rows split across threads: the mean as reduce_mean
 * computes it (the row summed in double in element order, divided by its length in double,
 * rounded to the dtype), the centred values X - m in the dtype into Out, the powers as
 * elementwise_pow computes them (ct__pow_f in double, rounded) summed likewise into the variance,
 * then v + eps in the dtype, its square root as sqrt computes it (in double, rounded), and each
 * element divided, multiplied and added in the dtype: the nine ops' bits, one pass over the row
 * for the statistics and one to finish it (the row is in L1 for both). In float32 with AVX-512
 * and exponent 2, rows go 16 at a time through sums16_avx512: the same sums, each row's in
 * element order, the 16 rows' in the lanes of two vectors of doubles. */
#include <math.h>
#include <stdint.h>

#include "ops/cpu/gemm.h" /* ct__gemm_avx512 */
#include "ops/cpu/math_kernels.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/t16.h"
#include "ops/cpu/vmath.h" /* CT__VM_CLONES */
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

/* A row's square root from the sum sq of its powers: their mean as reduce_mean gives it (the
 * double sum over the row's length, rounded to the dtype), + Epsilon in the add's operand order,
 * then sqrt in double, rounded. The one arithmetic of both statistics paths below. */
#define DN_SD(T, SFX)                                                   \
  static inline T dn_sd_##SFX(const dn_job *j, double sq) {             \
    const T eps = *(const T *)j->eps, var = (T)(sq / (double)j->n);     \
    const T ve = j->eps_first ? eps + var : var + eps;                  \
    return (T)sqrt((double)ve);                                         \
  }
DN_SD(float, f32)
DN_SD(double, f64)

#ifdef CT__T16_X86
/* Adds the 16 rows of n floats from x (n apart) into sum[0 .. 15] in double, each row in element
 * order: 16 x 16 tiles transposed in registers, so that one column of the tile (element i of
 * every row) is one vector, its halves added to the rows' two vectors of sums in turn; the last
 * n % 16 elements one by one. `square`: the squares instead, as ct__pow_f's x * x in double
 * rounded to float32 (elementwise_pow's, then the mean's sum). */
__attribute__((target("avx512f"))) static void sums16_avx512(const float *x, int64_t n,
                                                            bool square, double sum[16]) {
  __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 r[16];
    for (int q = 0; q < 16; q++) r[q] = _mm512_loadu_ps(x + q * n + i);
    ct__t16_f32(r);
    for (int c = 0; c < 16; c++) {
      __m512d a = _mm512_cvtps_pd(_mm512_castps512_ps256(r[c]));
      __m512d b = _mm512_cvtps_pd(
          _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(r[c]), 1)));
      if (square) {
        a = _mm512_cvtps_pd(_mm512_cvtpd_ps(_mm512_mul_pd(a, a)));
        b = _mm512_cvtps_pd(_mm512_cvtpd_ps(_mm512_mul_pd(b, b)));
      }
      lo = _mm512_add_pd(lo, a);
      hi = _mm512_add_pd(hi, b);
    }
  }
  _mm512_storeu_pd(sum, lo);
  _mm512_storeu_pd(sum + 8, hi);
  for (; i < n; i++) {
    for (int q = 0; q < 16; q++) {
      const double v = (double)x[q * n + i];
      sum[q] += square ? (double)(float)(v * v) : v;
    }
  }
}

/* stats_f32 (below) for 16 rows from r0 at exponent 2: the same arithmetic. */
__attribute__((target("avx512f"))) static void stats16_f32(const dn_job *j, int64_t r0,
                                                           float *sd) {
  const int64_t n = j->n;
  const float *x = (const float *)j->x + r0 * n;
  float *o = (float *)j->o + r0 * n;
  double sum[16], sq[16];
  sums16_avx512(x, n, false, sum);
  for (int64_t q = 0; q < 16; q++) {
    const float m = (float)(sum[q] / (double)n);
    for (int64_t i = 0; i < n; i++) o[q * n + i] = x[q * n + i] - m;
  }
  sums16_avx512(o, n, true, sq);
  for (int64_t q = 0; q < 16; q++) sd[q] = dn_sd_f32(j, sq[q]);
}
#define DN_FAST16(T) (sizeof(T) == 4 && ct__gemm_avx512())
#define DN_STATS16(T, j, r0, sd) stats16_f32(j, r0, (float *)(sd))
#else
#define DN_FAST16(T) false
#define DN_STATS16(T, j, r0, sd) ((void)0)
#endif

#define DN_ROWS(T, SFX)                                                                  \
  /* Rows r0 .. r0 + k - 1 (k <= DN_GROUP): the statistics, Out holding the centred values;  \
   * each row's square root into sd. Inlined: called with k DN_GROUP and square (the         \
   * exponent is 2: ct__pow_f's a * a) as constants, it compiles to straight loops. */       \
  static inline __attribute__((always_inline)) void stats_##SFX(                         \
      const dn_job *j, int64_t r0, int64_t k, T *sd, bool square) {                      \
    const int64_t n = j->n;                                                              \
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
    for (int64_t q = 0; q < k; q++) sd[q] = dn_sd_##SFX(j, sq[q]);                       \
  }                                                                                      \
  CT__VM_CLONES static void rows_##SFX(void *arg, int64_t first, int64_t last) {          \
    const dn_job *j = arg;                                                               \
    const int64_t n = j->n;                                                              \
    const T *g = j->scale, *b = j->bias;                                                 \
    const bool fast16 = DN_FAST16(T) && j->exponent == 2.0;                              \
    for (int64_t r0 = first, k; r0 < last; r0 += k) {                                    \
      k = last - r0 < DN_GROUP ? last - r0 : DN_GROUP;                                   \
      T sds[16];                                                                         \
      if (fast16 && last - r0 >= 16) {                                                   \
        k = 16;                                                                          \
        DN_STATS16(T, j, r0, sds);                                                       \
      } else if (k == DN_GROUP && j->exponent == 2.0) {                                  \
        stats_##SFX(j, r0, DN_GROUP, sds, true);                                         \
      } else {                                                                           \
        stats_##SFX(j, r0, k, sds, false);                                               \
      }                                                                                  \
      for (int64_t q = 0; q < k; q++) {                                                  \
        T *o = (T *)j->o + (r0 + q) * n;                                                 \
        const T sd = sds[q];                                                             \
        for (int64_t i = 0; i < n; i++) o[i] = o[i] / sd;                                \
        if (g != NULL && j->scale_n == 1) {                                              \
          const T g0 = g[0];                                                             \
          if (j->scale_first) {                                                          \
            for (int64_t i = 0; i < n; i++) o[i] = g0 * o[i];                            \
          } else {                                                                       \
            for (int64_t i = 0; i < n; i++) o[i] = o[i] * g0;                            \
          }                                                                              \
        } else if (g != NULL) {                                                          \
          if (j->scale_first) {                                                          \
            for (int64_t i = 0; i < n; i++) o[i] = g[i] * o[i];                          \
          } else {                                                                       \
            for (int64_t i = 0; i < n; i++) o[i] = o[i] * g[i];                          \
          }                                                                              \
        }                                                                                \
        if (b != NULL && j->bias_n == 1) {                                               \
          const T b0 = b[0];                                                             \
          if (j->bias_first) {                                                           \
            for (int64_t i = 0; i < n; i++) o[i] = b0 + o[i];                            \
          } else {                                                                       \
            for (int64_t i = 0; i < n; i++) o[i] = o[i] + b0;                            \
          }                                                                              \
        } else if (b != NULL) {                                                          \
          if (j->bias_first) {                                                           \
            for (int64_t i = 0; i < n; i++) o[i] = b[i] + o[i];                          \
          } else {                                                                       \
            for (int64_t i = 0; i < n; i++) o[i] = o[i] + b[i];                          \
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
