/* SPDX-License-Identifier: Apache-2.0 */
/* conv2d, depthwise_conv2d and pool2d in float32 with the GEMM's AVX-512 kernel turned off
 * (ct__gemm_use_kernel, internal: this suite links the static library). The convolution and
 * pooling kernels' AVX-512 code follows that switch (ops/cpu/conv_avx512.h), so on a CPU that
 * has AVX-512 these shapes take the code that CPUs without it run: im2col's GEMM instead of the
 * direct loop, the depthwise band instead of the planes read straight from the image, the tap
 * loop instead of stride-2 max pooling in registers. Each against its naive loop on small
 * integers, exactly, as test_ops_conv checks the AVX-512 paths. softmax's float32 rows too:
 * ct__sm_row instead of the AVX-512 row, which must give its bits (and sums). */
#include <corten/corten.h>

#include "conv_util.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/gemm_ukr.h"
#include "ops/cpu/softmax_row.h"

/* Case k in float32 against the naive loop, exactly. */
static void check_exact(const conv_case *k) {
  ct_scope *s = ct_scope_new();
  ct_ddim xd = conv_x_dims(k), od = conv_out_dims(k);
  put_fn(s, "x", CT_FLOAT32, xd, data_x);
  if (k->pool == NULL) put_fn(s, "f", CT_FLOAT32, conv_f_dims(k), data_y);
  ct_op *op = conv_case_op(k, "x", "f", "out");
  run(op, s);
  const int64_t no = ct_ddim_numel(od);
  double *want = conv_case_want(k);
  const float *got = result(s, "out", CT_FLOAT32, od);
  for (int64_t i = 0; i < no; i++) {
    ck_assert_msg(got[i] == (float)want[i], "out[%lld] = %.9g, expected %.9g", (long long)i,
                  got[i], want[i]);
  }
  free(want);
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(conv_and_pool_without_the_avx512_paths) {
  /* "avx2" where the CPU runs it, else the portable kernels (neither is AVX-512) */
  ck_assert(ct__gemm_use_kernel("avx2") || ct__gemm_use_kernel("portable"));
  ck_assert(!ct__gemm_avx512());
  /* the direct loop's shapes: 7 x 7 batched, stride 2 onto 14- and 21-wide rows, a 7x7 stem */
  check_exact(CONV(.n = 2, .c = 40, .h = 7, .w = 7, .m = 64, .kh = 3, .kw = 3, .pads = {1, 1}));
  check_exact(CONV(.n = 1, .c = 16, .h = 28, .w = 27, .m = 40, .kh = 3, .kw = 3, .sh = 2,
                   .sw = 2, .pads = {1, 1}));
  check_exact(CONV(.n = 1, .c = 16, .h = 40, .w = 41, .m = 40, .kh = 3, .kw = 3, .sh = 2,
                   .sw = 2, .pads = {1, 1}));
  check_exact(CONV(.n = 1, .c = 3, .h = 36, .w = 37, .m = 32, .kh = 7, .kw = 7, .sh = 2,
                   .sw = 2, .pads = {3, 3}));
  /* depthwise 3x3 planes of more than 64 outputs at strides 1 and 2 (the band) */
  check_exact(CONV(.n = 1, .c = 3, .h = 40, .w = 70, .m = 3, .kh = 3, .kw = 3, .groups = 3,
                   .pads = {1, 1}));
  check_exact(CONV(.n = 1, .c = 3, .h = 41, .w = 70, .m = 3, .kh = 3, .kw = 3, .groups = 3,
                   .sh = 2, .sw = 2, .pads = {1, 1}));
  /* max pooling 3x3 at stride 2 over rows of 75 */
  check_exact(POOL(.pool = "max", .n = 1, .c = 2, .h = 9, .w = 75, .kh = 3, .kw = 3, .sh = 2,
                   .sw = 2, .pads = {1, 1}));
  ck_assert(ct__gemm_use_kernel(NULL));
}
END_TEST

/* Spread values in [-4, 3.8] (exact in float32), a -inf now and then (a masked score). */
static double data_sm(int64_t i) {
  return i % 97 == 5 ? -INFINITY : (double)((i * 7919) % 1000) / 128 - 4;
}

/* softmax over rows of 37, 61, 130, 1000 and 1031 (the blocks of 64 through float partials,
 * the groups of 16 and 8, the last few) gives the same bits with the AVX-512 row and without. */
START_TEST(softmax_rows_without_the_avx512_row) {
  static const int widths[] = {37, 61, 130, 1000, 1031};
  for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
    const int64_t c = widths[w];
    float *got[2];
    for (int pass = 0; pass < 2; pass++) {
      /* the widest kernel first (AVX-512 where the CPU has it), then one without */
      if (pass == 1) ck_assert(ct__gemm_use_kernel("avx2") || ct__gemm_use_kernel("portable"));
      ct_scope *s = ct_scope_new();
      put_fn(s, "x", CT_FLOAT32, CT_DIMS(3, c), data_sm);
      ct_op *op = ct_op_new("softmax");
      ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
      ck_assert_int_eq(ct_op_set_output(op, "Out", "out"), CT_OK);
      run(op, s);
      got[pass] = malloc(sizeof(float) * (size_t)(3 * c));
      ck_assert_ptr_nonnull(got[pass]);
      memcpy(got[pass], result(s, "out", CT_FLOAT32, CT_DIMS(3, c)), sizeof(float) * 3 * c);
      ct_op_free(op);
      ct_scope_free(s);
    }
    ck_assert(!ct__gemm_avx512());
    ck_assert(ct__gemm_use_kernel(NULL));
    for (int64_t i = 0; i < 3 * c; i++) {
      ck_assert_msg(memcmp(&got[0][i], &got[1][i], sizeof(float)) == 0,
                    "row of %lld, [%lld]: %a with the widest kernel, %a without AVX-512",
                    (long long)c, (long long)i, (double)got[0][i], (double)got[1][i]);
    }
    free(got[0]);
    free(got[1]);
  }
}
END_TEST

/* The two float32 row functions themselves (ops/cpu/softmax_row.h, compiled here as the library
 * compiles them: no FMA contraction): ct__sm_row_f32, every CPU's, and ct__sm_row16_f32, the
 * AVX-512 row, return the same double sum bit for bit (any change of the order of the float
 * partials or the lanes shows there, where the rows' outputs, scaled by 1 / sum rounded to
 * float, rarely move) and write the same exps, for lengths around every step of both. */
START_TEST(softmax_row_functions_sum_alike) {
#ifdef CT__T16_X86
  if (!__builtin_cpu_supports("avx512f")) return; /* no AVX-512 row to compare with */
  static const int64_t lens[] = {1, 7, 8, 9, 15, 16, 17, 37, 61, 63, 64, 65, 127, 128, 130,
                                 200, 511, 512, 513, 575, 576, 1000, 1031};
  enum { MAX = 1031 };
  float x[MAX], o1[MAX], o2[MAX];
  for (int64_t i = 0; i < MAX; i++) x[i] = (float)data_sm(i);
  for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
    const int64_t n = lens[l];
    float m1, m2;
    double s1 = ct__sm_row_f32(x, o1, n, NULL, &m1), s2 = ct__sm_row16_f32(x, o2, n, NULL, &m2);
    ck_assert_msg(memcmp(&s1, &s2, sizeof s1) == 0, "n %lld: sum %a, AVX-512 row's %a",
                  (long long)n, s1, s2);
    ck_assert(memcmp(&m1, &m2, sizeof m1) == 0);
    ck_assert_msg(memcmp(o1, o2, sizeof(float) * (size_t)n) == 0, "n %lld: outputs differ",
                  (long long)n);
  }
#endif
}
END_TEST

/* conv2d_grad's Filter@GRAD through Winograd's F(2x2, 3x3) sums each element's products in 8
 * lanes (ops/cpu/winograd_grad.c): on AVX-512 two elements' lanes a 512-bit vector (dots512),
 * elsewhere 8-lane vectors; the same products added in the same order, so the same bytes with
 * the AVX-512 paths on and off, on values whose sums depend on the order (a fused multiply-add
 * in dots512 fails it). Images of 289 outputs and more (smaller ones' gradients take the
 * batched GEMM): 13 filters by 10 channels leave a row and two columns past dots512's blocks of
 * 4 x 4; 32 by 16 are whole blocks. Input@GRAD (a convolution through Winograd's forward) too. */
static double data_order(int64_t i) {
  return (float)((double)((uint64_t)(i + 1) * 2654435761u % 10007) / 97.0 - 50.0);
}
START_TEST(conv_grad_filter_the_same_without_the_avx512_dots) {
  const conv_case *ks[2] = {
      CONV(.n = 2, .c = 10, .h = 17, .w = 18, .m = 13, .kh = 3, .kw = 3, .pads = {1, 1}),
      CONV(.n = 1, .c = 16, .h = 20, .w = 20, .m = 32, .kh = 3, .kw = 3, .pads = {1, 1})};
  for (int c = 0; c < 2; c++) {
    const conv_case *k = ks[c];
    float *got[2][2];
    const int64_t nf = ct_ddim_numel(conv_f_dims(k)), nx = ct_ddim_numel(conv_x_dims(k));
    for (int pass = 0; pass < 2; pass++) {
      if (pass == 1) ck_assert(ct__gemm_use_kernel("avx2") || ct__gemm_use_kernel("portable"));
      ct_scope *s = ct_scope_new();
      put_fn(s, "x", CT_FLOAT32, conv_x_dims(k), data_order);
      put_fn(s, "f", CT_FLOAT32, conv_f_dims(k), data_order);
      put_fn(s, "d", CT_FLOAT32, conv_out_dims(k), data_order);
      ct_op *op = conv_grad_op(k);
      run(op, s);
      got[pass][0] = xmalloc(nf, sizeof(float));
      got[pass][1] = xmalloc(nx, sizeof(float));
      memcpy(got[pass][0], result(s, "df", CT_FLOAT32, conv_f_dims(k)), sizeof(float) * nf);
      memcpy(got[pass][1], result(s, "dx", CT_FLOAT32, conv_x_dims(k)), sizeof(float) * nx);
      ct_op_free(op);
      ct_scope_free(s);
    }
    ck_assert(ct__gemm_use_kernel(NULL));
    ck_assert_msg(memcmp(got[0][0], got[1][0], sizeof(float) * nf) == 0, "case %d: Filter@GRAD",
                  c);
    ck_assert_msg(memcmp(got[0][1], got[1][1], sizeof(float) * nx) == 0, "case %d: Input@GRAD",
                  c);
    for (int pass = 0; pass < 2; pass++) {
      free(got[pass][0]);
      free(got[pass][1]);
    }
  }
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("conv_fallbacks");
  CT_ADD_TEST(s, conv_and_pool_without_the_avx512_paths);
  CT_ADD_TEST(s, softmax_rows_without_the_avx512_row);
  CT_ADD_TEST(s, softmax_row_functions_sum_alike);
  CT_ADD_TEST(s, conv_grad_filter_the_same_without_the_avx512_dots);
  return s;
}

CT_TEST_MAIN(make_suite)
