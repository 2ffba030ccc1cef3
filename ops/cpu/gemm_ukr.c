/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/gemm_ukr.c: the GEMM's micro-kernels (ops/cpu/gemm_ukr.h says what each computes).
 *
 * On x86-64 the AVX-512 and AVX2 kernels are compiled for their instruction sets alone (target
 * attributes), whatever the library's -march, and chosen at run time from what the CPU reports.
 * Each keeps its MR x NR accumulators in vector registers: MR rows of two vectors each, with two
 * vector loads of B, MR broadcasts of A and 2 MR fused multiply-adds per step of k (AVX-512:
 * 12 x 32 floats in 24 of its 32 registers; AVX2: 6 x 16 in 12 of 16). The portable kernel is
 * plain C. The AVX-512 float32 kernels and their transposed stores have twins that read A's rows
 * where they lie (a_in_place, gemm.h): the same macro with another step through A. */
#include "ops/cpu/gemm_ukr.h"

#include "ops/cpu/gemm.h"
#include "ops/cpu/t16.h"

#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define CT__UKR_X86 1
#include <immintrin.h>
#endif

/* The epilogue e on one value v of a tile's element (i, j), in the dtype T (the portable
 * kernel's element by element form). */
#define EPI_ONE(T, e, v, i, j)                                             \
  do {                                                                     \
    if ((e)->bias != NULL) (v) = (v) + (e)->bias[(i) * (e)->bias_inc];     \
    if ((e)->res != NULL) (v) = (v) + (e)->res[(i) * (e)->ldr + (j)];      \
    if ((e)->act == CT__EPI_RELU) {                                        \
      (v) = (v) < 0 ? (T)0 : (v);                                          \
    } else if ((e)->act == CT__EPI_CLAMP) {                                \
      (v) = (v) < (e)->lo ? (e)->lo : (v);                                 \
      (v) = (v) > (e)->hi ? (e)->hi : (v);                                 \
    }                                                                      \
  } while (0)

/* ---- Portable C: 4 x 8, the compiler's vectors where it finds them -------------------------- */

#define UKR_C(NAME, T, E, MR, NR, H)                                                               \
  static void NAME(int64_t kc, const T *a, const T *b, int64_t bs, T *c, int64_t ldc, T alpha,     \
                   T beta, const E *e, const char *pf, int64_t pq) {                               \
    (void)pf, (void)pq; /* no prefetching here */                                                  \
    T acc[H][NR] = {{0}};                                                                          \
    for (int64_t p = 0; p < kc; p++, a += MR, b += bs) {                                           \
      for (int i = 0; i < H; i++) {                                                                \
        for (int j = 0; j < NR; j++) acc[i][j] = acc[i][j] + a[i] * b[j];                          \
      }                                                                                            \
    }                                                                                              \
    for (int i = 0; i < H; i++) {                                                                  \
      for (int j = 0; j < NR; j++) {                                                               \
        T o = alpha * acc[i][j];                                                                   \
        if (beta != 0) o = o + beta * c[i * ldc + j];                                              \
        if (e != NULL) EPI_ONE(T, e, o, i, j);                                                     \
        c[i * ldc + j] = o;                                                                        \
      }                                                                                            \
    }                                                                                              \
  }
#define UKR_C_ALL(NAME, T, E)                                                                      \
  UKR_C(NAME##_1, T, E, 4, 8, 1) UKR_C(NAME##_2, T, E, 4, 8, 2) UKR_C(NAME##_3, T, E, 4, 8, 3)     \
  UKR_C(NAME##_4, T, E, 4, 8, 4)
UKR_C_ALL(ukr_c_f32, float, ct__ukr_epi_f32)
UKR_C_ALL(ukr_c_f64, double, ct__ukr_epi_f64)
#define UKR_C_TABLE(NAME) {NULL, NAME##_1, NAME##_2, NAME##_3, NAME##_4}

#if CT__UKR_X86
/* The sums of an H-row tile of two vectors V of W lanes, into acc0[i], acc1[i] (zeroed before):
 * per step of k two loads of B's row, H broadcasts of A's column, 2 H fused multiply-adds. A's
 * row i at a + i AROW, its next column ASTEP on: a packed sliver (AROW 1, ASTEP MR) or A's rows
 * where they lie (AROW lda, ASTEP 1). With PF, step p also fetches into L2 line (p pq >> 16)
 * from pf (ct__ukr_f32's run). */
#define UKR_SUMS_PF(V, W, ASTEP, AROW, H, SET1, LOADU, FMA, PF)                                 \
  for (int64_t p = 0; p < kc; p++, a += ASTEP, b += bs) {                                       \
    if (PF) _mm_prefetch(pf + ((p * pq) >> 16) * 64, _MM_HINT_T1);                              \
    V b0 = LOADU(b), b1 = LOADU(b + W);                                                         \
    _Pragma("GCC unroll 16") for (int i = 0; i < H; i++) {                                      \
      V x = SET1(a[i * AROW]);                                                                  \
      acc0[i] = FMA(x, b0, acc0[i]);                                                            \
      acc1[i] = FMA(x, b1, acc1[i]);                                                            \
    }                                                                                           \
  }
/* The loop without fetches where there are none to make (pq 0): a fetch at every step, even of
 * a line in L1, made MobileNetV2's blocks (short k, many calls) 2-3 % slower. */
#define UKR_SUMS(V, W, ASTEP, AROW, H, SET1, LOADU, FMA)                                        \
  if (pq == 0) {                                                                                \
    UKR_SUMS_PF(V, W, ASTEP, AROW, H, SET1, LOADU, FMA, 0);                                     \
  } else {                                                                                      \
    UKR_SUMS_PF(V, W, ASTEP, AROW, H, SET1, LOADU, FMA, 1);                                     \
  }

/* One kernel of H rows (H <= MR) of two vectors V of W lanes, A a packed sliver (AP_PACKED:
 * ASTEP MR, AROW 1) or read in place (AP_LDA: an lda parameter after a; ASTEP 1, AROW lda).
 * The loops over rows are unrolled whole, so the accumulators live in registers. */
#define AP_PACKED
#define AP_LDA , int64_t lda
#define UKR_X86_A(NAME, TGT, T, E, V, W, H, AP, ASTEP, AROW, SET1, ZERO, LOADU, STOREU, FMA, MUL, \
                  ADD, MAX, MIN)                                                                \
  __attribute__((target(TGT))) static void NAME(int64_t kc, const T *a AP, const T *b,          \
                                                int64_t bs, T *c, int64_t ldc, T alpha, T beta, \
                                                const E *e, const char *pf, int64_t pq) {       \
    V acc0[H], acc1[H];                                                                         \
    /* C's rows fetched from a copy of c the compiler cannot see through: from c itself, it     \
     * kept the 12 rows' addresses for the stores after the loop, in vector registers the loop  \
     * then lacked (B's row spilled to the stack at every step) */                              \
    const T *cq = c;                                                                            \
    __asm__("" : "+r"(cq));                                                                     \
    _Pragma("GCC unroll 16") for (int i = 0; i < H; i++) {                                      \
      acc0[i] = acc1[i] = ZERO();                                                               \
      _mm_prefetch((const char *)(cq + i * ldc), _MM_HINT_T0);                                  \
      _mm_prefetch((const char *)(cq + i * ldc + 2 * W - 1), _MM_HINT_T0);                      \
    }                                                                                           \
    UKR_SUMS(V, W, ASTEP, AROW, H, SET1, LOADU, FMA);                                           \
    V va = SET1(alpha), vb = SET1(beta);                                                        \
    _Pragma("GCC unroll 16") for (int i = 0; i < H; i++) {                                      \
      T *r = c + i * ldc;                                                                       \
      V o0 = MUL(va, acc0[i]), o1 = MUL(va, acc1[i]);                                           \
      if (beta != 0) {                                                                          \
        o0 = ADD(o0, MUL(vb, LOADU(r)));                                                        \
        o1 = ADD(o1, MUL(vb, LOADU(r + W)));                                                    \
      }                                                                                         \
      acc0[i] = o0;                                                                             \
      acc1[i] = o1;                                                                             \
    }                                                                                           \
    if (e != NULL) { /* the epilogue in registers: v + bias, + res, then the activation */     \
      _Pragma("GCC unroll 16") for (int i = 0; i < H; i++) {                                    \
        if (e->bias != NULL) {                                                                  \
          V bv = SET1(e->bias[i * e->bias_inc]);                                                \
          acc0[i] = ADD(acc0[i], bv);                                                           \
          acc1[i] = ADD(acc1[i], bv);                                                           \
        }                                                                                       \
        if (e->res != NULL) {                                                                   \
          acc0[i] = ADD(acc0[i], LOADU(e->res + i * e->ldr));                                   \
          acc1[i] = ADD(acc1[i], LOADU(e->res + i * e->ldr + W));                               \
        }                                                                                       \
      }                                                                                         \
      if (e->act == CT__EPI_RELU) { /* max(0, v): v < 0 ? 0 : v, NaN and -0 included */         \
        _Pragma("GCC unroll 16") for (int i = 0; i < H; i++) {                                  \
          acc0[i] = MAX(ZERO(), acc0[i]);                                                       \
          acc1[i] = MAX(ZERO(), acc1[i]);                                                       \
        }                                                                                       \
      } else if (e->act == CT__EPI_CLAMP) { /* max(lo, v): v < lo ? lo : v; min(hi, v) */      \
        V lo = SET1(e->lo), hi = SET1(e->hi);                                                   \
        _Pragma("GCC unroll 16") for (int i = 0; i < H; i++) {                                  \
          acc0[i] = MIN(hi, MAX(lo, acc0[i]));                                                  \
          acc1[i] = MIN(hi, MAX(lo, acc1[i]));                                                  \
        }                                                                                       \
      }                                                                                         \
    }                                                                                           \
    _Pragma("GCC unroll 16") for (int i = 0; i < H; i++) {                                      \
      STOREU(c + i * ldc, acc0[i]);                                                             \
      STOREU(c + i * ldc + W, acc1[i]);                                                         \
    }                                                                                           \
  }

/* One row of C across 4 slivers of B (4 NR columns; sliver s at b + s ss, rows bs apart; C's
 * row contiguous at c): each lane the 1-row kernel's sum, in order over p from 0, then alpha
 * (and beta C). A product of one row (a matrix-vector product, a recurrent step at batch 1) had
 * two chains of dependent multiply-adds a call, and waited on them: here eight. */
#define ROW4_X86(NAME, TGT, T, E, V, W, MR, SET1, ZERO, LOADU, STOREU, FMA, MUL, ADD, MAX, MIN) \
  __attribute__((target(TGT))) static void NAME(int64_t kc, const T *a, const T *b, int64_t bs, \
                                                int64_t ss, T *c, T alpha, T beta,              \
                                                const E *e) {                                   \
    V acc[8];                                                                                   \
    _Pragma("GCC unroll 8") for (int s = 0; s < 8; s++) acc[s] = ZERO();                        \
    for (int64_t p = 0; p < kc; p++, a += MR, b += bs) {                                        \
      V x = SET1(a[0]);                                                                         \
      _Pragma("GCC unroll 4") for (int s = 0; s < 4; s++) {                                     \
        acc[2 * s] = FMA(x, LOADU(b + s * ss), acc[2 * s]);                                     \
        acc[2 * s + 1] = FMA(x, LOADU(b + s * ss + W), acc[2 * s + 1]);                         \
      }                                                                                         \
    }                                                                                           \
    V va = SET1(alpha), vb = SET1(beta);                                                        \
    _Pragma("GCC unroll 8") for (int s = 0; s < 8; s++) {                                       \
      V o = MUL(va, acc[s]);                                                                    \
      if (beta != 0) o = ADD(o, MUL(vb, LOADU(c + s * W)));                                     \
      if (e != NULL) {                                                                          \
        if (e->bias != NULL) o = ADD(o, SET1(e->bias[0]));                                      \
        if (e->res != NULL) o = ADD(o, LOADU(e->res + s * W));                                  \
        if (e->act == CT__EPI_RELU) {                                                           \
          o = MAX(ZERO(), o);                                                                   \
        } else if (e->act == CT__EPI_CLAMP) {                                                   \
          o = MIN(SET1(e->hi), MAX(SET1(e->lo), o));                                            \
        }                                                                                       \
      }                                                                                         \
      STOREU(c + s * W, o);                                                                     \
    }                                                                                           \
  }

#define UKR_X86(NAME, TGT, T, E, V, W, MR, H, ...) \
  UKR_X86_A(NAME, TGT, T, E, V, W, H, AP_PACKED, MR, 1, __VA_ARGS__)
/* AVX-512 float32 with A's rows read in place. */
#define AVX512_AI(NAME, T, V, W, H, S)                                                            \
  UKR_X86_A(NAME, "avx512f", T, EPI_##S, V, W, H, AP_LDA, 1, lda, _mm512_set1_##S,              \
            _mm512_setzero_##S, _mm512_loadu_##S, _mm512_storeu_##S, _mm512_fmadd_##S,           \
            _mm512_mul_##S, _mm512_add_##S, _mm512_max_##S, _mm512_min_##S)
#define AVX512(NAME, T, V, W, H, S)                                                          \
  UKR_X86(NAME, "avx512f", T, EPI_##S, V, W, 12, H, _mm512_set1_##S, _mm512_setzero_##S,     \
          _mm512_loadu_##S, _mm512_storeu_##S, _mm512_fmadd_##S, _mm512_mul_##S, _mm512_add_##S, \
          _mm512_max_##S, _mm512_min_##S)
#define AVX2(NAME, T, V, W, H, S)                                                            \
  UKR_X86(NAME, "avx2,fma", T, EPI_##S, V, W, 6, H, _mm256_set1_##S, _mm256_setzero_##S,     \
          _mm256_loadu_##S, _mm256_storeu_##S, _mm256_fmadd_##S, _mm256_mul_##S, _mm256_add_##S, \
          _mm256_max_##S, _mm256_min_##S)
#define EPI_ps ct__ukr_epi_f32
#define EPI_pd ct__ukr_epi_f64
#define ROWS6(KIND, NAME, T, V, W, S)                                                       \
  KIND(NAME##_1, T, V, W, 1, S) KIND(NAME##_2, T, V, W, 2, S) KIND(NAME##_3, T, V, W, 3, S) \
  KIND(NAME##_4, T, V, W, 4, S) KIND(NAME##_5, T, V, W, 5, S) KIND(NAME##_6, T, V, W, 6, S)
#define ROWS12(KIND, NAME, T, V, W, S)                                                          \
  ROWS6(KIND, NAME, T, V, W, S) KIND(NAME##_7, T, V, W, 7, S) KIND(NAME##_8, T, V, W, 8, S)    \
  KIND(NAME##_9, T, V, W, 9, S) KIND(NAME##_10, T, V, W, 10, S) KIND(NAME##_11, T, V, W, 11, S) \
  KIND(NAME##_12, T, V, W, 12, S)
ROWS12(AVX512, ukr_avx512_f32, float, __m512, 16, ps)
ROWS12(AVX512_AI, ukr_avx512_f32_ai, float, __m512, 16, ps)
ROWS12(AVX512, ukr_avx512_f64, double, __m512d, 8, pd)
ROWS6(AVX2, ukr_avx2_f32, float, __m256, 8, ps)
ROWS6(AVX2, ukr_avx2_f64, double, __m256d, 4, pd)
#define ROW4_512(NAME, T, V, W, S)                                                             \
  ROW4_X86(NAME, "avx512f", T, EPI_##S, V, W, 12, _mm512_set1_##S, _mm512_setzero_##S,         \
           _mm512_loadu_##S, _mm512_storeu_##S, _mm512_fmadd_##S, _mm512_mul_##S,              \
           _mm512_add_##S, _mm512_max_##S, _mm512_min_##S)
#define ROW4_256(NAME, T, V, W, S)                                                             \
  ROW4_X86(NAME, "avx2,fma", T, EPI_##S, V, W, 6, _mm256_set1_##S, _mm256_setzero_##S,         \
           _mm256_loadu_##S, _mm256_storeu_##S, _mm256_fmadd_##S, _mm256_mul_##S,              \
           _mm256_add_##S, _mm256_max_##S, _mm256_min_##S)
ROW4_512(row4_avx512_f32, float, __m512, 16, ps)
ROW4_512(row4_avx512_f64, double, __m512d, 8, pd)
ROW4_256(row4_avx2_f32, float, __m256, 8, ps)
ROW4_256(row4_avx2_f64, double, __m256d, 4, pd)

/* ---- AVX-512 float32 tiles stored transposed --------------------------------------------
 * The kernel's 12 x 32 sums (rows past h zero) as two 16 x 16 blocks, each transposed in
 * registers (pairs, quads, then 128-bit lanes exchanged twice), then C's row l (the tile's
 * column l) written as h lanes with a masked store: a swapped product's tiles went through
 * put_tile element by element, a strided store each. */
/* C's rows j0 .. j0 + 15 of a transposed tile from the h x 16 block acc (alpha applied): each
 * row's h values, beta C added, the epilogue applied, stored under mask m. */
__attribute__((target("avx512f"))) static inline void t16_store_f32(
    __m512 r[16], int64_t j0, float *c, int64_t ldc, float beta, __mmask16 m,
    const ct__ukr_epi_f32 *e) {
  ct__t16_f32(r);
  const __m512 vb = _mm512_set1_ps(beta);
  for (int l = 0; l < 16; l++) {
    float *row = c + (j0 + l) * ldc;
    __m512 o = r[l];
    if (beta != 0) o = _mm512_add_ps(o, _mm512_mul_ps(vb, _mm512_maskz_loadu_ps(m, row)));
    if (e != NULL) {
      if (e->bias != NULL) o = _mm512_add_ps(o, _mm512_set1_ps(e->bias[(j0 + l) * e->bias_inc]));
      if (e->res != NULL) {
        o = _mm512_add_ps(o, _mm512_maskz_loadu_ps(m, e->res + (j0 + l) * e->ldr));
      }
      if (e->act == CT__EPI_RELU) {
        o = _mm512_max_ps(_mm512_setzero_ps(), o);
      } else if (e->act == CT__EPI_CLAMP) {
        o = _mm512_min_ps(_mm512_set1_ps(e->hi), _mm512_max_ps(_mm512_set1_ps(e->lo), o));
      }
    }
    _mm512_mask_storeu_ps(row, m, o);
  }
}

#define UKR_T512_A(NAME, H, AP, ASTEP, AROW)                                                   \
  __attribute__((target("avx512f"))) static void NAME(int64_t kc, const float *a AP,           \
                                                      const float *b, int64_t bs, float *c,    \
                                                      int64_t ldc, float alpha, float beta,    \
                                                      const ct__ukr_epi_f32 *e, const char *pf,\
                                                      int64_t pq) {                            \
    __m512 acc0[H], acc1[H];                                                                   \
    _Pragma("GCC unroll 16") for (int i = 0; i < H; i++) acc0[i] = acc1[i] =                   \
        _mm512_setzero_ps();                                                                   \
    UKR_SUMS(__m512, 16, ASTEP, AROW, H, _mm512_set1_ps, _mm512_loadu_ps, _mm512_fmadd_ps);    \
    const __m512 va = _mm512_set1_ps(alpha);                                                   \
    const __mmask16 m = (__mmask16)((1u << H) - 1);                                            \
    __m512 r[16];                                                                              \
    _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) r[i] =                               \
        i < H ? _mm512_mul_ps(va, acc0[i < H ? i : 0]) : _mm512_setzero_ps();                  \
    t16_store_f32(r, 0, c, ldc, beta, m, e);                                                   \
    _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) r[i] =                               \
        i < H ? _mm512_mul_ps(va, acc1[i < H ? i : 0]) : _mm512_setzero_ps();                  \
    t16_store_f32(r, 16, c, ldc, beta, m, e);                                                  \
  }
#define UKR_T512(NAME, H) UKR_T512_A(NAME, H, AP_PACKED, 12, 1)
#define UKR_T512_AI(NAME, H) UKR_T512_A(NAME, H, AP_LDA, 1, lda)
#define T512_ALL(KIND, NAME)                                                                  \
  KIND(NAME##_1, 1) KIND(NAME##_2, 2) KIND(NAME##_3, 3) KIND(NAME##_4, 4) KIND(NAME##_5, 5)  \
  KIND(NAME##_6, 6) KIND(NAME##_7, 7) KIND(NAME##_8, 8) KIND(NAME##_9, 9) KIND(NAME##_10, 10) \
  KIND(NAME##_11, 11) KIND(NAME##_12, 12)
T512_ALL(UKR_T512, ukr_avx512_f32_t)
T512_ALL(UKR_T512_AI, ukr_avx512_f32_ait)

/* The small product (gemm_ukr.h): rows four at a time, each row's n values in one masked vector
 * of accumulators; B's rows (columns, when stored transposed) read once into an aligned buffer
 * of 16-wide rows. */
__attribute__((target("avx512f"))) static void small_avx512_f32(int64_t m, int64_t n, int64_t k,
                                                               const float *a, int64_t lda,
                                                               bool ta, const float *b,
                                                               int64_t ldb, bool tb, float *c,
                                                               int64_t ldc) {
  float bt[CT__GEMM_KC * 16] __attribute__((aligned(64)));
  const __mmask16 mk = (__mmask16)((1u << n) - 1);
  for (int64_t p = 0; p < k; p++) {
    __m512 row;
    if (!tb) {
      row = _mm512_maskz_loadu_ps(mk, b + p * ldb);
    } else {
      float t[16] = {0};
      for (int64_t j = 0; j < n; j++) t[j] = b[j * ldb + p];
      row = _mm512_loadu_ps(t);
    }
    _mm512_store_ps(bt + p * 16, row);
  }
  const int64_t as = ta ? 1 : lda, ap = ta ? lda : 1; /* A(i, p) = a[i as + p ap] */
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) {
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    const float *a0 = a + i * as;
    for (int64_t p = 0; p < k; p++) {
      const __m512 bv = _mm512_load_ps(bt + p * 16);
      const float *ax = a0 + p * ap;
      s0 = _mm512_fmadd_ps(_mm512_set1_ps(ax[0]), bv, s0);
      s1 = _mm512_fmadd_ps(_mm512_set1_ps(ax[as]), bv, s1);
      s2 = _mm512_fmadd_ps(_mm512_set1_ps(ax[2 * as]), bv, s2);
      s3 = _mm512_fmadd_ps(_mm512_set1_ps(ax[3 * as]), bv, s3);
    }
    _mm512_mask_storeu_ps(c + i * ldc, mk, s0);
    _mm512_mask_storeu_ps(c + (i + 1) * ldc, mk, s1);
    _mm512_mask_storeu_ps(c + (i + 2) * ldc, mk, s2);
    _mm512_mask_storeu_ps(c + (i + 3) * ldc, mk, s3);
  }
  for (; i < m; i++) {
    __m512 s0 = _mm512_setzero_ps();
    for (int64_t p = 0; p < k; p++) {
      s0 = _mm512_fmadd_ps(_mm512_set1_ps(a[i * as + p * ap]), _mm512_load_ps(bt + p * 16), s0);
    }
    _mm512_mask_storeu_ps(c + i * ldc, mk, s0);
  }
}

#define TABLE6(NAME) NULL, NAME##_1, NAME##_2, NAME##_3, NAME##_4, NAME##_5, NAME##_6
#define TABLE12(NAME) \
  TABLE6(NAME), NAME##_7, NAME##_8, NAME##_9, NAME##_10, NAME##_11, NAME##_12
#endif

/* ---- Packing across: a transpose ------------------------------------------------------------
 * Portable: the rows read a line's worth at a time, one row after another (reading all of them
 * side by side would keep a line of each in L1 at once, and rows a multiple of 4 KiB apart fall
 * in one set of L1 and evict one another: 512 x 512 floats, 5x slower). AVX2 (every x86 kernel
 * here): blocks of 8 x 8 floats or 4 x 4 doubles transposed in registers, each group of the
 * output stored as one vector. */

#define ACROSS_C(NAME, T)                                                                     \
  static void NAME(const T *src, int64_t ld, int64_t n, int64_t kc, int width, T *dst) {      \
    enum { CHUNK = 64 / sizeof(T) };                                                          \
    for (int64_t p0 = 0; p0 < kc; p0 += CHUNK) {                                              \
      int64_t len = kc - p0 < CHUNK ? kc - p0 : CHUNK;                                        \
      T *d = dst + p0 * width;                                                                \
      for (int64_t q = 0; q < n; q++) {                                                       \
        for (int64_t p = 0; p < len; p++) d[p * width + q] = src[q * ld + p0 + p];            \
      }                                                                                       \
      for (int64_t q = n; q < width; q++) {                                                   \
        for (int64_t p = 0; p < len; p++) d[p * width + q] = 0;                               \
      }                                                                                       \
    }                                                                                         \
  }
ACROSS_C(across_c_f32, float)
ACROSS_C(across_c_f64, double)

#if CT__UKR_X86
/* Rows [q0, q0 + W) of a block of W x W (W: the lanes of a vector), values [p0, p0 + W) of each,
 * transposed into groups p0 ... p0 + W - 1 at columns q0 ...; TRANSPOSE(r) turns r[i] (row i)
 * into r[j] (value j of every row). HALF(src, ld, q0, kv, width, dst) then takes W / 2 more rows
 * the same way when that many are left (a float sliver of 12 rows: 8 + 4) and returns how many
 * it took. The rest (rows past those, values past a multiple of W, padding rows) element by
 * element. */
#define ACROSS_X86(NAME, T, V, W, LOADU, STOREU, TRANSPOSE, HALF)                                \
  __attribute__((target("avx2"))) static void NAME(const T *src, int64_t ld, int64_t n,         \
                                                   int64_t kc, int width, T *dst) {             \
    int64_t nv = n / W * W, kv = kc / W * W;                                                    \
    for (int64_t q0 = 0; q0 < nv; q0 += W) {                                                    \
      for (int64_t p0 = 0; p0 < kv; p0 += W) {                                                  \
        V r[W];                                                                                 \
        _Pragma("GCC unroll 8") for (int i = 0; i < W; i++) {                                   \
          r[i] = LOADU(src + (q0 + i) * ld + p0);                                               \
        }                                                                                       \
        TRANSPOSE(r);                                                                           \
        _Pragma("GCC unroll 8") for (int i = 0; i < W; i++) {                                   \
          STOREU(dst + (p0 + i) * width + q0, r[i]);                                            \
        }                                                                                       \
      }                                                                                         \
    }                                                                                           \
    if (n - nv >= W / 2) nv += HALF(src, ld, nv, kv, width, dst);                               \
    for (int64_t p = kv; p < kc; p++) {                                                         \
      for (int64_t q = 0; q < nv; q++) dst[p * width + q] = src[q * ld + p];                    \
    }                                                                                           \
    for (int64_t q = nv; q < width; q++) { /* place by place: group by group, the zeros would \
                                              be a memset call each (the compiler's choice) */ \
      for (int64_t p = 0; p < kc; p++) dst[p * width + q] = q < n ? src[q * ld + p] : 0;        \
    }                                                                                           \
  }

/* 4 rows of 8 floats into 8 groups of 4: pairs interleaved, then quads; each 128-bit half is a
 * group (the low halves groups 0-3, the high ones 4-7). */
__attribute__((target("avx2"))) static int64_t across4_f32(const float *src, int64_t ld,
                                                           int64_t q0, int64_t kv, int width,
                                                           float *dst) {
  for (int64_t p0 = 0; p0 < kv; p0 += 8) {
    const float *s = src + q0 * ld + p0;
    __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + ld);
    __m256 r2 = _mm256_loadu_ps(s + 2 * ld), r3 = _mm256_loadu_ps(s + 3 * ld);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 g[4] = {_mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xee),
                   _mm256_shuffle_ps(t1, t3, 0x44), _mm256_shuffle_ps(t1, t3, 0xee)};
    for (int i = 0; i < 4; i++) {
      _mm_storeu_ps(dst + (p0 + i) * width + q0, _mm256_castps256_ps128(g[i]));
      _mm_storeu_ps(dst + (p0 + 4 + i) * width + q0, _mm256_extractf128_ps(g[i], 1));
    }
  }
  return 4;
}

/* Doubles: W / 2 = 2 rows are left to the element loop. */
#define ACROSS_NONE(src, ld, q0, kv, width, dst) 0

/* 8 x 8 floats: pairs interleaved, then quads, then the 128-bit halves. */
#define T8X8(r)                                                                                \
  do {                                                                                         \
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);           \
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);           \
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);           \
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);           \
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);         \
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);         \
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);         \
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);         \
    r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);                                               \
    r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);                                               \
    r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);                                               \
    r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);                                               \
    r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);                                               \
    r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);                                               \
    r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);                                               \
    r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);                                               \
  } while (0)

/* 4 x 4 doubles: pairs interleaved, then the 128-bit halves. */
#define T4X4(r)                                                                                \
  do {                                                                                         \
    __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);          \
    __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);          \
    r[0] = _mm256_permute2f128_pd(t0, t2, 0x20);                                               \
    r[1] = _mm256_permute2f128_pd(t1, t3, 0x20);                                               \
    r[2] = _mm256_permute2f128_pd(t0, t2, 0x31);                                               \
    r[3] = _mm256_permute2f128_pd(t1, t3, 0x31);                                               \
  } while (0)

ACROSS_X86(across_avx2_f32, float, __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, T8X8,
           across4_f32)
ACROSS_X86(across_avx2_f64, double, __m256d, 4, _mm256_loadu_pd, _mm256_storeu_pd, T4X4,
           ACROSS_NONE)
#endif

enum { K_PORTABLE, K_AVX2, K_AVX512, K_COUNT };

static const ct__ukr_f32 f32_kernels[K_COUNT] = {
    [K_PORTABLE] = {"portable", 4, 8, UKR_C_TABLE(ukr_c_f32), across_c_f32, NULL, {NULL}, NULL,
                    {NULL}, {NULL}},
#if CT__UKR_X86
    [K_AVX2] = {"avx2", 6, 16, {TABLE6(ukr_avx2_f32)}, across_avx2_f32, row4_avx2_f32, {NULL},
                NULL, {NULL}, {NULL}},
    [K_AVX512] = {"avx512", 12, 32, {TABLE12(ukr_avx512_f32)}, across_avx2_f32, row4_avx512_f32,
                  {TABLE12(ukr_avx512_f32_t)}, small_avx512_f32, {TABLE12(ukr_avx512_f32_ai)},
                  {TABLE12(ukr_avx512_f32_ait)}},
#endif
};
static const ct__ukr_f64 f64_kernels[K_COUNT] = {
    [K_PORTABLE] = {"portable", 4, 8, UKR_C_TABLE(ukr_c_f64), across_c_f64, NULL, {NULL}, NULL,
                    {NULL}, {NULL}},
#if CT__UKR_X86
    [K_AVX2] = {"avx2", 6, 8, {TABLE6(ukr_avx2_f64)}, across_avx2_f64, row4_avx2_f64, {NULL},
                NULL, {NULL}, {NULL}},
    [K_AVX512] = {"avx512", 12, 16, {TABLE12(ukr_avx512_f64)}, across_avx2_f64, row4_avx512_f64,
                  {NULL}, NULL, {NULL}, {NULL}},
#endif
};

static bool runs(int k) {
#if CT__UKR_X86
  if (k == K_AVX512) { /* its packing across is the AVX2 one */
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2");
  }
  if (k == K_AVX2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  return k == K_PORTABLE;
}

static atomic_int chosen = -1; /* -1: the widest this CPU runs, not looked up yet */

static int widest(void) {
  int k = K_COUNT - 1;
  while (!runs(k)) k--;
  return k;
}

static int current(void) {
  int k = atomic_load_explicit(&chosen, memory_order_relaxed);
  if (k < 0) {
    k = widest();
    int none = -1;
    atomic_compare_exchange_strong(&chosen, &none, k);
  }
  return k;
}

const ct__ukr_f32 *ct__ukr_f32_get(void) { return &f32_kernels[current()]; }
const ct__ukr_f64 *ct__ukr_f64_get(void) { return &f64_kernels[current()]; }

bool ct__gemm_use_kernel(const char *name) {
  if (name == NULL) {
    atomic_store(&chosen, widest());
    return true;
  }
  for (int k = 0; k < K_COUNT; k++) {
    if (f32_kernels[k].name != NULL && strcmp(f32_kernels[k].name, name) == 0 && runs(k)) {
      atomic_store(&chosen, k);
      return true;
    }
  }
  return false;
}

bool ct__gemm_avx512(void) { return current() == K_AVX512; }

const char *ct__gemm_kernel_name(int elem_size) {
  return elem_size == 8 ? ct__ukr_f64_get()->name : ct__ukr_f32_get()->name;
}
