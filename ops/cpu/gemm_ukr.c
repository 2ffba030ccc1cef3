/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/gemm_ukr.c: the GEMM's micro-kernels (ops/cpu/gemm_ukr.h says what each computes).
 *
 * On x86-64 the AVX-512 and AVX2 kernels are compiled for their instruction sets alone (target
 * attributes), whatever the library's -march, and chosen at run time from what the CPU reports.
 * Each keeps its MR x NR accumulators in vector registers: MR rows of two vectors each, with two
 * vector loads of B, MR broadcasts of A and 2 MR fused multiply-adds per step of k (AVX-512:
 * 12 x 32 floats in 24 of its 32 registers; AVX2: 6 x 16 in 12 of 16). The portable kernel is
 * plain C. */
#include "ops/cpu/gemm_ukr.h"

#include "ops/cpu/gemm.h"

#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define CT__UKR_X86 1
#include <immintrin.h>
#endif

/* ---- Portable C: 4 x 8, the compiler's vectors where it finds them -------------------------- */

#define UKR_C(NAME, T, MR, NR, H)                                                               \
  static void NAME(int64_t kc, const T *a, const T *b, int64_t bs, T *c, int64_t ldc, T alpha,  \
                   T beta) {                                                                    \
    T acc[H][NR] = {{0}};                                                                       \
    for (int64_t p = 0; p < kc; p++, a += MR, b += bs) {                                        \
      for (int i = 0; i < H; i++) {                                                             \
        for (int j = 0; j < NR; j++) acc[i][j] = acc[i][j] + a[i] * b[j];                       \
      }                                                                                         \
    }                                                                                           \
    for (int i = 0; i < H; i++) {                                                               \
      for (int j = 0; j < NR; j++) {                                                            \
        T o = alpha * acc[i][j];                                                                \
        c[i * ldc + j] = beta != 0 ? o + beta * c[i * ldc + j] : o;                             \
      }                                                                                         \
    }                                                                                           \
  }
#define UKR_C_ALL(NAME, T) \
  UKR_C(NAME##_1, T, 4, 8, 1) UKR_C(NAME##_2, T, 4, 8, 2) UKR_C(NAME##_3, T, 4, 8, 3) \
  UKR_C(NAME##_4, T, 4, 8, 4)
UKR_C_ALL(ukr_c_f32, float)
UKR_C_ALL(ukr_c_f64, double)
#define UKR_C_TABLE(NAME) {NULL, NAME##_1, NAME##_2, NAME##_3, NAME##_4}

#if CT__UKR_X86
/* One kernel of H rows (H <= MR) of two vectors V of W lanes. The loops over rows are unrolled
 * whole, so the accumulators live in registers. */
#define UKR_X86(NAME, TGT, T, V, W, MR, H, SET1, ZERO, LOADU, STOREU, FMA, MUL, ADD)            \
  __attribute__((target(TGT))) static void NAME(int64_t kc, const T *a, const T *b, int64_t bs, \
                                                T *c, int64_t ldc, T alpha, T beta) {           \
    V acc0[H], acc1[H];                                                                         \
    _Pragma("GCC unroll 16") for (int i = 0; i < H; i++) {                                      \
      acc0[i] = acc1[i] = ZERO();                                                               \
      _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);                                   \
      _mm_prefetch((const char *)(c + i * ldc + 2 * W - 1), _MM_HINT_T0);                       \
    }                                                                                           \
    for (int64_t p = 0; p < kc; p++, a += MR, b += bs) {                                        \
      V b0 = LOADU(b), b1 = LOADU(b + W);                                                       \
      _Pragma("GCC unroll 16") for (int i = 0; i < H; i++) {                                    \
        V x = SET1(a[i]);                                                                       \
        acc0[i] = FMA(x, b0, acc0[i]);                                                          \
        acc1[i] = FMA(x, b1, acc1[i]);                                                          \
      }                                                                                         \
    }                                                                                           \
    V va = SET1(alpha), vb = SET1(beta);                                                        \
    _Pragma("GCC unroll 16") for (int i = 0; i < H; i++) {                                      \
      T *r = c + i * ldc;                                                                       \
      V o0 = MUL(va, acc0[i]), o1 = MUL(va, acc1[i]);                                           \
      if (beta != 0) {                                                                          \
        o0 = ADD(o0, MUL(vb, LOADU(r)));                                                        \
        o1 = ADD(o1, MUL(vb, LOADU(r + W)));                                                    \
      }                                                                                         \
      STOREU(r, o0);                                                                            \
      STOREU(r + W, o1);                                                                        \
    }                                                                                           \
  }

#define AVX512(NAME, T, V, W, H, S)                                                        \
  UKR_X86(NAME, "avx512f", T, V, W, 12, H, _mm512_set1_##S, _mm512_setzero_##S,          \
          _mm512_loadu_##S, _mm512_storeu_##S, _mm512_fmadd_##S, _mm512_mul_##S, _mm512_add_##S)
#define AVX2(NAME, T, V, W, H, S)                                                          \
  UKR_X86(NAME, "avx2,fma", T, V, W, 6, H, _mm256_set1_##S, _mm256_setzero_##S,          \
          _mm256_loadu_##S, _mm256_storeu_##S, _mm256_fmadd_##S, _mm256_mul_##S, _mm256_add_##S)
#define ROWS6(KIND, NAME, T, V, W, S)                                                       \
  KIND(NAME##_1, T, V, W, 1, S) KIND(NAME##_2, T, V, W, 2, S) KIND(NAME##_3, T, V, W, 3, S) \
  KIND(NAME##_4, T, V, W, 4, S) KIND(NAME##_5, T, V, W, 5, S) KIND(NAME##_6, T, V, W, 6, S)
#define ROWS12(KIND, NAME, T, V, W, S)                                                          \
  ROWS6(KIND, NAME, T, V, W, S) KIND(NAME##_7, T, V, W, 7, S) KIND(NAME##_8, T, V, W, 8, S)    \
  KIND(NAME##_9, T, V, W, 9, S) KIND(NAME##_10, T, V, W, 10, S) KIND(NAME##_11, T, V, W, 11, S) \
  KIND(NAME##_12, T, V, W, 12, S)
ROWS12(AVX512, ukr_avx512_f32, float, __m512, 16, ps)
ROWS12(AVX512, ukr_avx512_f64, double, __m512d, 8, pd)
ROWS6(AVX2, ukr_avx2_f32, float, __m256, 8, ps)
ROWS6(AVX2, ukr_avx2_f64, double, __m256d, 4, pd)
#define TABLE6(NAME) NULL, NAME##_1, NAME##_2, NAME##_3, NAME##_4, NAME##_5, NAME##_6
#define TABLE12(NAME) \
  TABLE6(NAME), NAME##_7, NAME##_8, NAME##_9, NAME##_10, NAME##_11, NAME##_12
#endif

enum { K_PORTABLE, K_AVX2, K_AVX512, K_COUNT };

static const ct__ukr_f32 f32_kernels[K_COUNT] = {
    [K_PORTABLE] = {"portable", 4, 8, UKR_C_TABLE(ukr_c_f32)},
#if CT__UKR_X86
    [K_AVX2] = {"avx2", 6, 16, {TABLE6(ukr_avx2_f32)}},
    [K_AVX512] = {"avx512", 12, 32, {TABLE12(ukr_avx512_f32)}},
#endif
};
static const ct__ukr_f64 f64_kernels[K_COUNT] = {
    [K_PORTABLE] = {"portable", 4, 8, UKR_C_TABLE(ukr_c_f64)},
#if CT__UKR_X86
    [K_AVX2] = {"avx2", 6, 8, {TABLE6(ukr_avx2_f64)}},
    [K_AVX512] = {"avx512", 12, 16, {TABLE12(ukr_avx512_f64)}},
#endif
};

static bool runs(int k) {
#if CT__UKR_X86
  if (k == K_AVX512) return __builtin_cpu_supports("avx512f");
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

const char *ct__gemm_kernel_name(int elem_size) {
  return elem_size == 8 ? ct__ukr_f64_get()->name : ct__ukr_f32_get()->name;
}
