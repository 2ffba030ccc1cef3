/* SPDX-License-Identifier: Apache-2.0 */
/* conv2d, depthwise_conv2d and pool2d in float32 with the GEMM's AVX-512 kernel turned off
 * (ct__gemm_use_kernel, internal: this suite links the static library). The convolution and
 * pooling kernels' AVX-512 code follows that switch (ops/cpu/conv_avx512.h), so on a CPU that
 * has AVX-512 these shapes take the code that CPUs without it run: im2col's GEMM instead of the
 * direct loop, the depthwise band instead of the planes read straight from the image, the tap
 * loop instead of stride-2 max pooling in registers. Each against its naive loop on small
 * integers, exactly, as test_ops_conv checks the AVX-512 paths. */
#include <corten/corten.h>

#include "conv_util.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/gemm_ukr.h"

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

static Suite *make_suite(void) {
  Suite *s = suite_create("conv_fallbacks");
  CT_ADD_TEST(s, conv_and_pool_without_the_avx512_paths);
  return s;
}

CT_TEST_MAIN(make_suite)
