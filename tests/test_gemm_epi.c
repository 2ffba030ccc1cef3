/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_gemm_epi.c: the GEMM's epilogue (ops/cpu/gemm.h, ct__gemm_epi) through its internal
 * entry points. A product with an epilogue must give, bit for bit, the product without one
 * followed by the epilogue's steps element by element in the dtype: + bias[i bias_inc],
 * + res[i ldr + j], then relu (`v > 0 ? v : 0`) or clamp (`v < lo ? lo : v`, `v > hi ? hi : v`).
 * Every kernel this CPU runs, both dtypes, whole and edge tiles, transposed (swapped) plans,
 * one-row products (4 slivers a call), k in two blocks (the epilogue after the last only), beta,
 * two threads, and values that tell the steps apart: NaN rows, -0 (alpha -1 on a zero row),
 * sums far outside the clamp. */
#include <math.h>
#include <stdint.h>

#include "harness.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/gemm_ukr.h"

/* One case: C m x n (ldc n + 2), op(A) m x k, B k x n; the epilogue's parts. */
typedef struct ecase {
  int64_t m, n, k;
  double alpha, beta;
  bool bias, bias_one, res; /* bias_one: one value for every row (bias_inc 0) */
  int act;
} ecase;

static double val(int which, int64_t i) { return sin((double)(i * 7 + which * 13 + 1)) * 0.75; }

#define EPI_CHECK(T, SFX, GEMM)                                                                   \
  static void check_##SFX(const ecase *ec) {                                                      \
    const int64_t m = ec->m, n = ec->n, k = ec->k, ldc = n + 2, ldr = n + 3;                       \
    T *a = malloc(sizeof(T) * (size_t)(m * k + 1)), *b = malloc(sizeof(T) * (size_t)(k * n + 1)); \
    T *c0 = malloc(sizeof(T) * (size_t)(m * ldc)), *plain = malloc(sizeof(T) * (size_t)(m * ldc)); \
    T *got = malloc(sizeof(T) * (size_t)(m * ldc)), *bias = malloc(sizeof(T) * (size_t)m);        \
    T *res = malloc(sizeof(T) * (size_t)(m * ldr));                                               \
    ck_assert(a && b && c0 && plain && got && bias && res);                                       \
    for (int64_t i = 0; i < m * k; i++) a[i] = (T)(val(0, i) * 4);                                \
    for (int64_t i = 0; i < k * n; i++) b[i] = (T)val(1, i);                                      \
    for (int64_t i = 0; i < m * ldc; i++) c0[i] = (T)val(2, i);                                   \
    for (int64_t i = 0; i < m; i++) bias[i] = (T)(val(3, i) * 2);                                 \
    for (int64_t i = 0; i < m * ldr; i++) res[i] = (T)val(4, i);                                  \
    if (m > 2 && k > 0) a[2 * k] = NAN;                       /* row 2 of C is NaN */             \
    for (int64_t p = 0; m > 3 && p < k; p++) a[3 * k + p] = 0; /* row 3: 0, -0 at alpha -1 */     \
    if (m > 3) {                                                                                  \
      bias[3] = 0;                                                                                \
      for (int64_t j = 0; j < n; j++) res[3 * ldr + j] = 0;                                       \
    }                                                                                             \
    ct__gemm g = {.m = m, .n = n, .k = k, .alpha = ec->alpha, .beta = ec->beta, .a = a,           \
                  .lda = k, .b = b, .ldb = n, .ldc = ldc};                                        \
    memcpy(plain, c0, sizeof(T) * (size_t)(m * ldc));                                             \
    g.c = plain;                                                                                  \
    ck_assert_int_eq(GEMM(&g), CT_OK);                                                            \
    const T lo = (T)-0.5, hi = (T)0.75;                                                           \
    for (int64_t i = 0; i < m; i++) {                                                             \
      for (int64_t j = 0; j < n; j++) {                                                           \
        T v = plain[i * ldc + j];                                                                 \
        if (ec->bias) v = v + bias[ec->bias_one ? 0 : i];                                         \
        if (ec->res) v = v + res[i * ldr + j];                                                    \
        if (ec->act == CT__EPI_RELU) v = v < 0 ? (T)0 : v;                                        \
        if (ec->act == CT__EPI_CLAMP) {                                                           \
          v = v < lo ? lo : v;                                                                    \
          v = v > hi ? hi : v;                                                                    \
        }                                                                                         \
        plain[i * ldc + j] = v;                                                                   \
      }                                                                                           \
    }                                                                                             \
    ct__gemm_epi e = {.bias = ec->bias ? bias : NULL, .bias_inc = ec->bias_one ? 0 : 1,           \
                      .res = ec->res ? res : NULL, .ldr = ldr, .act = ec->act, .lo = lo,          \
                      .hi = hi};                                                                  \
    memcpy(got, c0, sizeof(T) * (size_t)(m * ldc));                                               \
    g.c = got;                                                                                    \
    g.epi = &e;                                                                                   \
    ck_assert_int_eq(GEMM(&g), CT_OK);                                                            \
    for (int64_t i = 0; i < m; i++) {                                                             \
      for (int64_t j = 0; j < ldc; j++) {                                                         \
        T w = plain[i * ldc + j], v = got[i * ldc + j];                                           \
        ck_assert_msg(memcmp(&w, &v, sizeof(T)) == 0,                                             \
                      "%s %s [%lld,%lld,%lld] a %g b %g bias %d res %d act %d: C[%lld][%lld] " \
                      "%.17g, expected %.17g",                                                    \
                      #T, ct__gemm_kernel_name((int)sizeof(T)), (long long)m, (long long)n,       \
                      (long long)k, ec->alpha, ec->beta, ec->bias, ec->res, ec->act,              \
                      (long long)i, (long long)j, (double)v, (double)w);                          \
      }                                                                                           \
    }                                                                                             \
    free(a), free(b), free(c0), free(plain), free(got), free(bias), free(res);                   \
  }
EPI_CHECK(float, f32, ct__gemm_f32)
EPI_CHECK(double, f64, ct__gemm_f64)

/* The epilogues of `masks` (bias, residual, bias_one, beta 0.5, alpha -1 as bits 1, 2, 3, 4, 8;
 * 0: every mask) with each activation over m x n x k, both dtypes, with the kernel in use. */
static void check_epilogues(int64_t m, int64_t n, int64_t k, const int *masks) {
  for (int q = 0; masks != NULL ? masks[q] != 0 : q < 15; q++) {
    int mask = masks != NULL ? masks[q] : q + 1;
    for (int act = CT__EPI_NONE; act <= CT__EPI_CLAMP; act++) {
      ecase ec = {.m = m, .n = n, .k = k, .alpha = mask & 8 ? -1 : 1, .beta = mask & 4 ? 0.5 : 0,
                  .bias = mask & 1, .bias_one = (mask & 3) == 3, .res = mask & 2, .act = act};
      check_f32(&ec);
      check_f64(&ec);
    }
  }
}

static void check_all_epilogues(int64_t m, int64_t n, int64_t k) { check_epilogues(m, n, k, NULL); }

/* The shapes: whole tiles; edge tiles with k in two blocks; a transposed plan (C's short side
 * along the kernel's rows); one row across 4 slivers a call; no k (C = beta C, then the
 * epilogue). */
static void check_shapes(void) {
  check_all_epilogues(24, 64, 16);
  check_all_epilogues(13, 70, 300);
  check_all_epilogues(300, 9, 20);
  check_all_epilogues(1, 150, 40);
  check_all_epilogues(5, 7, 0);
}

static void check_kernel(const char *name) {
  if (!ct__gemm_use_kernel(name)) {
    printf("gemm_epi: this CPU does not run the %s kernel; its cases skipped\n", name);
    return;
  }
  ct_set_num_threads(1);
  check_shapes();
  ct__gemm_use_kernel(NULL);
}

START_TEST(the_avx512_kernel_applies_the_epilogue_as_the_ops_would) { check_kernel("avx512"); }
END_TEST

START_TEST(the_avx2_kernel_applies_the_epilogue_as_the_ops_would) { check_kernel("avx2"); }
END_TEST

START_TEST(the_portable_kernel_applies_the_epilogue_as_the_ops_would) {
  check_kernel("portable");
}
END_TEST

/* Blocks of C on two threads (each tile's epilogue at C's own rows and columns). */
START_TEST(the_epilogue_on_two_threads_gives_the_same_bits) {
  static const int some[] = {3, 6, 13, 0};
  ct_set_num_threads(2);
  check_epilogues(200, 300, 64, some);
  check_epilogues(300, 40, 270, some);
  ct_set_num_threads(0);
}
END_TEST

START_TEST(a_batch_with_an_epilogue_is_refused) {
  float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, c[4] = {7, 7, 7, 7};
  ct__gemm_epi e = {.act = CT__EPI_RELU};
  ct__gemm g = {.m = 2, .n = 2, .k = 2, .alpha = 1, .a = a, .lda = 2, .b = b, .ldb = 2, .c = c,
                .ldc = 2, .epi = &e};
  ck_assert_int_eq(ct__gemm_batched_f32(&g, 1, 0, 0, 0), CT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "epilogue"));
  for (int i = 0; i < 4; i++) ck_assert(c[i] == 7);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("gemm_epi");
  CT_ADD_TEST(s, the_avx512_kernel_applies_the_epilogue_as_the_ops_would);
  CT_ADD_TEST(s, the_avx2_kernel_applies_the_epilogue_as_the_ops_would);
  CT_ADD_TEST(s, the_portable_kernel_applies_the_epilogue_as_the_ops_would);
  CT_ADD_TEST(s, the_epilogue_on_two_threads_gives_the_same_bits);
  CT_ADD_TEST(s, a_batch_with_an_epilogue_is_refused);
  return s;
}

CT_TEST_MAIN(make_suite)
