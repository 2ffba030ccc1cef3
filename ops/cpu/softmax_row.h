/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/softmax_row.h: softmax of one contiguous row, shared by the softmax kernel
 * (ops/cpu/reduce.c) and softmax_with_cross_entropy's (ops/cpu/loss.c), so that both give the
 * same bits.
 *
 * The row's maximum is taken in 32 lanes (independent compares), its last n % 32 elements one
 * to a lane and the lanes folded in halves: the same value in any order but for a zero's sign,
 * which no result depends on (exp(x - m) and m + log(sum) are the same for m = +0 and -0). A
 * row of 1024 floats had spent a fifth of its softmax on its last 31 elements and its 32
 * lanes taken one after another into one running max, each compare waiting on the one before.
 * Then exp of x - max (ops/cpu/vmath.h's softmax exp, CT__VEXP_SM: fused multiply-adds in
 * float32) a chunk at a time, each chunk's exps added to the sum while they are in L1: the sum in
 * double in CT__SM_LANES lanes (float32 takes each block of 64 through 16 float partial sums
 * first, ct__sm_add; then element i into lane i % 8, the last n % 8 into lane 0; the lanes then
 * added pairwise, ct__sm_fold), whatever the vector width, and each exp multiplied by 1 / sum
 * rounded to T (one multiply per element in the dtype, no division; within one ulp of the product
 * in double). While a row's exps are computed, the next row is prefetched, so that its max pass
 * reads from cache instead of waiting on memory.
 * The max skips NaN; a row holding NaN is NaN all the same (its exp is NaN, and so is the sum
 * every element is scaled by), as is a row holding +inf or only -inf (inf - inf).
 * A strided row (reduce.c's blocks) sums in the same lanes, so any axis gives the same bits. */
#ifndef CORTEN_OPS_CPU_SOFTMAX_ROW_H
#define CORTEN_OPS_CPU_SOFTMAX_ROW_H

#include <stdint.h>

#include "ops/cpu/gemm.h" /* ct__gemm_avx512: the kernels' AVX-512 switch */
#include "ops/cpu/parallel.h"
#include "ops/cpu/vmath.h"
#include "ops/cpu/vmath512.h"

#define CT__SM_LANES 8
/* Elements of exp computed before they are summed (a multiple of CT__SM_LANES). */
#define CT__SM_CHUNK 512

/* The sum of the 8 lanes l[0 .. 7], in a fixed order. */
static inline double ct__sm_fold(const double *l) {
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

/* The exps o[c .. e - 1] (c a multiple of CT__SM_BLOCK, e of CT__SM_LANES) added into the 8
 * double lanes l. float32: each block of 64 as 16 float partial sums, partial k of elements
 * ((k + (k + 16)) + (k + 32)) + (k + 48) of the block, then partials 0 .. 7 into lanes 0 .. 7
 * and 8 .. 15 into lanes 0 .. 7 again; what is left after the last whole block element i into
 * lane i % 8. float64: every element into lane i % 8. A float partial of four exps (each at
 * most 1) carries three roundings of at most 2^-24 relative; the lanes then sum in double. */
#define CT__SM_BLOCK 64
static inline __attribute__((always_inline)) void ct__sm_add_f32(const float *o, int64_t c,
                                                                 int64_t e, double *l) {
  int64_t i = c;
  for (; i + CT__SM_BLOCK <= e; i += CT__SM_BLOCK) {
    float f[16];
    for (int k = 0; k < 16; k++) {
      f[k] = ((o[i + k] + o[i + 16 + k]) + o[i + 32 + k]) + o[i + 48 + k];
    }
    for (int k = 0; k < 16; k++) l[k % CT__SM_LANES] += (double)f[k];
  }
  for (; i < e; i += CT__SM_LANES) {
    for (int k = 0; k < CT__SM_LANES; k++) l[k] += (double)o[i + k];
  }
}
static inline __attribute__((always_inline)) void ct__sm_add_f64(const double *o, int64_t c,
                                                                 int64_t e, double *l) {
  for (int64_t i = c; i < e; i += CT__SM_LANES) {
    for (int k = 0; k < CT__SM_LANES; k++) l[k] += o[i + k];
  }
}

/* Always inlined: the row must compile inside each of its caller's clones (CT__VM_CLONES). */
#define CT__SM_ROW(SUF, T)                                                                    \
  static inline __attribute__((always_inline)) T ct__sm_max_##SUF(const T *x, int64_t n) {    \
    T l[32];                                                                                  \
    for (int k = 0; k < 32; k++) l[k] = x[0];                                                 \
    int64_t i = 0;                                                                            \
    for (; i + 32 <= n; i += 32) {                                                            \
      CT__SIMD for (int k = 0; k < 32; k++) {                                                 \
        T v = x[i + k];                                                                       \
        l[k] = v > l[k] ? v : l[k];                                                           \
      }                                                                                       \
    }                                                                                         \
    for (int k = 0; i + k < n; k++) l[k] = x[i + k] > l[k] ? x[i + k] : l[k];                 \
    for (int w = 16; w > 0; w /= 2) {                                                         \
      CT__SIMD for (int k = 0; k < w; k++) l[k] = l[k + w] > l[k] ? l[k + w] : l[k];          \
    }                                                                                         \
    return l[0];                                                                              \
  }                                                                                           \
  /* Elements c to e - 1 (c a multiple of CT__SM_BLOCK, e of CT__SM_LANES): o = exp(x - m),  \
   * added into the lanes l (ct__sm_add); the same part of the next row prefetched. */         \
  static inline __attribute__((always_inline)) void ct__sm_chunk_##SUF(                       \
      const T *x, T *o, T m, int64_t c, int64_t e, double *l, const T *next) {                \
    CT__SIMD for (int64_t i = c; i < e; i++) o[i] = CT__VEXP_SM((T)(x[i] - m));               \
    ct__sm_add_##SUF(o, c, e, l);                                                             \
    if (next != NULL) {                                                                       \
      for (int64_t i = c; i < e; i += 64 / (int64_t)sizeof(T)) __builtin_prefetch(next + i);  \
    }                                                                                         \
  }                                                                                           \
  /* o = softmax(x) over n > 0 elements (o may be x); next: the row to prefetch, or NULL.     \
   * Returns the sum of the exps, the max in *mx. */                                          \
  static inline __attribute__((always_inline)) double ct__sm_row_##SUF(                       \
      const T *x, T *o, int64_t n, const T *next, T *mx) {                                    \
    T m = ct__sm_max_##SUF(x, n);                                                             \
    double l[CT__SM_LANES] = {0};                                                             \
    int64_t full = n - n % CT__SM_LANES, c = 0;                                               \
    /* whole chunks (a constant trip count: no peeling per chunk), then the rest */           \
    for (; c + CT__SM_CHUNK <= full; c += CT__SM_CHUNK) {                                     \
      ct__sm_chunk_##SUF(x, o, m, c, c + CT__SM_CHUNK, l, next);                              \
    }                                                                                         \
    ct__sm_chunk_##SUF(x, o, m, c, full, l, next);                                            \
    for (int64_t i = full; i < n; i++) {                                                      \
      o[i] = CT__VEXP_SM((T)(x[i] - m));                                                      \
      l[0] += (double)o[i];                                                                   \
    }                                                                                         \
    double sum = ct__sm_fold(l);                                                              \
    T inv = (T)(1.0 / sum);                                                                   \
    CT__SIMD for (int64_t j = 0; j < n; j++) o[j] = o[j] * inv;                               \
    *mx = m;                                                                                  \
    return sum;                                                                               \
  }

/* Contiguous rows of at most CT__SM_SHORT elements, CT__SM_GROUP at a time (the softmax
 * kernel's and attention's, ops/cpu/reduce.c and attention.c): each row's max, the group's exps
 * in one loop over its elements (each less its row's max, from mr), then each row's sum in
 * ct__sm_row's lanes and its scaling: ct__sm_row's arithmetic (the same bits: the max is the
 * same in any order, a NaN first element kept as there), without a 32-lane max and a chunk loop
 * for a row of 10 (an attention's scores). o may be x. */
#define CT__SM_SHORT 32
#define CT__SM_GROUP 16
#define CT__SM_SHORT_ROWS(SUF, T)                                                              \
  static inline __attribute__((always_inline)) void ct__sm_short_##SUF(                        \
      const T *x, T *o, int64_t n, int64_t first, int64_t last) {                              \
    T mr[CT__SM_GROUP * CT__SM_SHORT];                                                         \
    for (int64_t r0 = first; r0 < last; r0 += CT__SM_GROUP) {                                  \
      const int64_t rows = last - r0 < CT__SM_GROUP ? last - r0 : CT__SM_GROUP;               \
      const int64_t len = rows * n;                                                            \
      const T *xs = x + r0 * n;                                                                \
      T *os = o + r0 * n;                                                                      \
      for (int64_t r = 0; r < rows; r++) {                                                     \
        const T *xr = xs + r * n;                                                              \
        T m = xr[0];                                                                           \
        for (int64_t i = 1; i < n; i++) m = xr[i] > m ? xr[i] : m;                             \
        for (int64_t i = 0; i < n; i++) mr[r * n + i] = m;                                     \
      }                                                                                        \
      CT__SIMD for (int64_t i = 0; i < len; i++) {                                             \
        os[i] = CT__VEXP_SM((T)(xs[i] - mr[i]));                                               \
      }                                                                                        \
      const int64_t full = n - n % CT__SM_LANES;                                               \
      for (int64_t r = 0; r < rows; r++) {                                                     \
        T *orow = os + r * n;                                                                  \
        double l[CT__SM_LANES] = {0};                                                          \
        for (int64_t i = 0; i < full; i++) l[i % CT__SM_LANES] += (double)orow[i];             \
        for (int64_t i = full; i < n; i++) l[0] += (double)orow[i];                            \
        T inv = (T)(1.0 / ct__sm_fold(l));                                                     \
        for (int64_t i = 0; i < n; i++) orow[i] = orow[i] * inv;                               \
      }                                                                                        \
    }                                                                                          \
  }

/* Rows [first, last) of `total` rows of n elements ld apart (ld >= n), x into o: the short path
 * for rows of up to CT__SM_SHORT, else ct__sm_row with the next row prefetched. The one choice
 * both the softmax kernel and attention make, so that they give the same bits (each row's
 * values depend on that row alone, whatever the stride and the grouping). */
#define CT__SM_ROWS(SUF, T)                                                                    \
  static inline __attribute__((always_inline)) void ct__sm_rows_##SUF(                         \
      const T *x, T *o, int64_t n, int64_t ld, int64_t first, int64_t last, int64_t total) {   \
    if (n <= CT__SM_SHORT) {                                                                   \
      if (ld == n) {                                                                           \
        ct__sm_short_##SUF(x, o, n, first, last);                                              \
      } else {                                                                                 \
        for (int64_t r = first; r < last; r++) {                                               \
          ct__sm_short_##SUF(x + r * ld, o + r * ld, n, 0, 1);                                 \
        }                                                                                      \
      }                                                                                        \
      return;                                                                                  \
    }                                                                                          \
    const bool fast16 = CT__SM_FAST16(T);                                                      \
    for (int64_t r = first; r < last; r++) {                                                   \
      T mx;                                                                                    \
      const T *next = r + 1 < total ? x + (r + 1) * ld : NULL;                                 \
      if (fast16) {                                                                            \
        CT__SM_ROW16(x + r * ld, o + r * ld, n, next, &mx);                                    \
      } else {                                                                                 \
        ct__sm_row_##SUF(x + r * ld, o + r * ld, n, next, &mx);                                \
      }                                                                                        \
    }                                                                                          \
  }

CT__SM_ROW(f32, float)
CT__SM_ROW(f64, double)

#ifdef CT__T16_X86
/* ct__sm_row_f32 on AVX-512: the same max, then each block of 64 elements' exps (vmath512.h's,
 * the same bits) stored, their four vectors added into one of 16 float partials and that added
 * to the 8 double lanes, the lower 8 then the upper 8, as ct__sm_add_f32 does; then each 16 as
 * two groups of 8, the last n % 16 as ct__sm_row; the same scaling. One pass for the exps and
 * their sum where ct__sm_row makes two over each chunk (the softmax of [256, 1024] 0.59 -> 0.55
 * ns an element; with the fused exp and the float partials 0.33). Not inlined: the callers'
 * clones call it after checking ct__gemm_avx512(). */
/* 16 floats added to the 8 double lanes acc: the lower 8 into lanes 0 .. 7, then the upper 8. */
__attribute__((target("avx512f"), always_inline, unused)) static inline __m512d ct__sm_lanes16(
    __m512d acc, __m512 v) {
  acc = _mm512_add_pd(acc, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
  return _mm512_add_pd(acc, _mm512_cvtps_pd(_mm256_castpd_ps(
                                _mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
}
__attribute__((target("avx512f"), noinline, unused)) static double ct__sm_row16_f32(
    const float *x, float *o, int64_t n, const float *next, float *mx) {
  const float m = ct__sm_max_f32(x, n);
  const __m512 mv = _mm512_set1_ps(m);
  __m512d acc = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + CT__SM_BLOCK <= n; i += CT__SM_BLOCK) {
    __m512 e[4];
    for (int v = 0; v < 4; v++) {
      e[v] = ct__v512_expf_sm(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16 * v), mv));
      _mm512_storeu_ps(o + i + 16 * v, e[v]);
      if (next != NULL) __builtin_prefetch(next + i + 16 * v);
    }
    acc = ct__sm_lanes16(acc,
                         _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(e[0], e[1]), e[2]), e[3]));
  }
  for (; i + 16 <= n; i += 16) {
    __m512 e = ct__v512_expf_sm(_mm512_sub_ps(_mm512_loadu_ps(x + i), mv));
    _mm512_storeu_ps(o + i, e);
    acc = ct__sm_lanes16(acc, e);
    if (next != NULL) __builtin_prefetch(next + i);
  }
  double l[CT__SM_LANES];
  _mm512_storeu_pd(l, acc);
  for (; i + CT__SM_LANES <= n; i += CT__SM_LANES) {
    for (int k = 0; k < CT__SM_LANES; k++) {
      o[i + k] = ct__vexpf_sm(x[i + k] - m);
      l[k] += (double)o[i + k];
    }
  }
  for (; i < n; i++) {
    o[i] = ct__vexpf_sm(x[i] - m);
    l[0] += (double)o[i];
  }
  const double sum = ct__sm_fold(l);
  const float inv = (float)(1.0 / sum);
  const __m512 iv = _mm512_set1_ps(inv);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) _mm512_storeu_ps(o + j, _mm512_mul_ps(_mm512_loadu_ps(o + j), iv));
  for (; j < n; j++) o[j] = o[j] * inv;
  *mx = m;
  return sum;
}
#define CT__SM_FAST16(T) (sizeof(T) == 4 && ct__gemm_avx512())
#define CT__SM_ROW16(x, o, n, next, mx) \
  ct__sm_row16_f32((const float *)(x), (float *)(o), n, (const float *)(next), (float *)(mx))
#else
#define CT__SM_FAST16(T) false
#define CT__SM_ROW16(x, o, n, next, mx) ((void)0)
#endif

CT__SM_SHORT_ROWS(f32, float)
CT__SM_SHORT_ROWS(f64, double)
CT__SM_ROWS(f32, float)
CT__SM_ROWS(f64, double)

#endif /* CORTEN_OPS_CPU_SOFTMAX_ROW_H */
