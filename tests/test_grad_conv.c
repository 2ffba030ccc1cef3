/* SPDX-License-Identifier: Apache-2.0 */
/* The gradients of conv2d (conv2d_grad) and pool2d (pool2d_grad) against central finite
 * differences in float64 (grad_util.h): strides, paddings, dilations, groups, depthwise, 1x1
 * filters; max and avg pooling, exclusive or not, ceil_mode, global; 2x2 windows tiling the
 * image (ties, NaNs, signed zeros) exactly. Then the float32 grad kernels against the float64
 * ones, one gradient alone, and a wrong Output@GRAD. */
#include <math.h>

#include <corten/corten.h>

#include "conv_util.h"
#include "grad_util.h"

static const conv_case *current;

static void build_case(ct_program *p) {
  ck_assert_int_eq(ct_program_append(p, conv_case_op(current, "x", "f", "out")), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

/* Checks d(loss)/dx (and d(loss)/df for conv2d) of the case. */
static void check_case(const conv_case *k) {
  static const char *const xf[] = {"x", "f"};
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", conv_x_dims(k), 0.1);
  if (k->pool == NULL) put_smooth(s, "f", conv_f_dims(k), 0.7);
  current = k;
  check_grads(s, build_case, "loss", xf, k->pool == NULL ? 2 : 1);
  ct_scope_free(s);
}


START_TEST(conv_grads_plain) {
  check_case(CONV(.n = 2, .c = 2, .h = 4, .w = 5, .m = 3, .kh = 3, .kw = 2));
  check_case(CONV(.n = 1, .c = 2, .h = 4, .w = 5, .m = 3, .kh = 3, .kw = 2)); /* one image */
  /* 288 output pixels per image: the per-image GEMMs (smaller images share one per group) */
  check_case(CONV(.n = 2, .c = 2, .h = 16, .w = 18, .m = 2, .kh = 3, .kw = 3, .pads = {1, 1},
                  .groups = 2));
}
END_TEST

START_TEST(conv_grads_strides_paddings_dilations) {
  check_case(CONV(.n = 1, .c = 2, .h = 6, .w = 5, .m = 2, .kh = 3, .kw = 3, .sh = 2, .sw = 2,
                  .pads = {1, 1}));
  check_case(CONV(.n = 1, .c = 2, .h = 6, .w = 7, .m = 2, .kh = 2, .kw = 3, .dh = 2, .dw = 2,
                  .pads = {0, 2, 1, 0}, .n_pads = 4, .sw = 2));
}
END_TEST

START_TEST(conv_grads_groups_depthwise_1x1) {
  check_case(CONV(.n = 2, .c = 4, .h = 4, .w = 4, .m = 4, .kh = 3, .kw = 3, .groups = 2,
                  .pads = {1, 1}));
  check_case(CONV(.n = 2, .c = 3, .h = 5, .w = 4, .m = 6, .kh = 3, .kw = 3, .groups = 3,
                  .pads = {1, 1}, .sh = 2));
  check_case(CONV(.n = 2, .c = 3, .h = 3, .w = 4, .m = 2, .kh = 1, .kw = 1));
}
END_TEST

START_TEST(pool_grads) {
  const char *types[2] = {"max", "avg"};
  for (int t = 0; t < 2; t++) {
    for (int ex = 0; ex < 2; ex++) {
      check_case(POOL(.pool = types[t], .exclusive = ex, .n = 2, .c = 2, .h = 4, .w = 4, .kh = 2,
                      .kw = 2, .sh = 2, .sw = 2));
      check_case(POOL(.pool = types[t], .exclusive = ex, .n = 1, .c = 2, .h = 5, .w = 5, .kh = 3,
                      .kw = 3, .sh = 2, .sw = 2, .pads = {1, 1}));
    }
  }
  check_case(POOL(.pool = "max", .n = 1, .c = 2, .h = 5, .w = 5, .kh = 2, .kw = 2, .sh = 2,
                  .sw = 2, .ceil_mode = true));
  check_case(POOL(.pool = "avg", .exclusive = true, .n = 2, .c = 2, .h = 3, .w = 4, .kh = 1,
                  .kw = 1, .global = true));
}
END_TEST

/* Overlapping max windows (stride 1): an element that is the max of two windows gets both
 * gradients; tied values give the gradient to the first of them only. */
START_TEST(pool_max_grad_overlaps_and_ties) {
  ct_scope *s = ct_scope_new();
  double x[6] = {1, 5, 2, 5, 0, 3};
  put(s, "x", CT_FLOAT64, CT_DIMS(1, 1, 1, 6), x);
  current = POOL(.pool = "max", .n = 1, .c = 1, .h = 1, .w = 6, .kh = 1, .kw = 3);
  static const char *const just_x[] = {"x"};
  run_backward(s, build_case, just_x, 1);
  const double *g = ct_tensor_data(tensor_dims(s, "x@GRAD", CT_DIMS(1, 1, 1, 6)), CT_FLOAT64);
  /* windows [1 5 2] [5 2 5] [2 5 0] [5 0 3]: weights 1, 1.25, 1.5, 1.75 */
  ck_assert(g[0] == 0 && g[1] == 1 + 1.25 && g[2] == 0 && g[3] == 1.5 + 1.75 && g[4] == 0 &&
            g[5] == 0);
  ct_scope_free(s);
}
END_TEST

/* Runs pool2d (type, 2x2 windows at stride 2) over float32 x [1,2,2,4] and pool2d_grad with
 * Out@GRAD d [1,2,1,2]; leaves Out in "out" and X@GRAD in "dx". */
static void run_pool_2x2(ct_scope *s, const char *type, const float *x, const float *d) {
  static const int64_t two[2] = {2, 2};
  put(s, "x", CT_FLOAT32, CT_DIMS(1, 2, 2, 4), x);
  put(s, "d", CT_FLOAT32, CT_DIMS(1, 2, 1, 2), d);
  ct_op *f = op_x("pool2d", "x", "out"), *g = new_op("pool2d_grad");
  ck_assert_int_eq(ct_op_set_input(g, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(g, "Out", "out"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(g, "Out@GRAD", "d"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(g, "X@GRAD", "dx"), CT_OK);
  for (ct_op *op = f; op != NULL; op = op == f ? g : NULL) {
    ck_assert_int_eq(ct_op_set_attr_string(op, "pooling_type", type), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_ints(op, "ksize", two, 2), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_ints(op, "strides", two, 2), CT_OK);
    run(op, s);
  }
  ct_op_free(f);
  ct_op_free(g);
}

/* 2x2 windows tiling the image (the kernels' own loop): max keeps the window's first largest
 * element (row by row) and the last NaN, payload and all; its gradient goes to the first element
 * equal to Out (the first NaN for a NaN); avg sums in that order. Every other element of X@GRAD
 * is +0, and a -0 gradient arrives as +0 (0 + -0), as the zeroed plane added into gives. */
START_TEST(pool_2x2_tiles_keep_order_ties_and_nans) {
  const float nan1 = f32_from_bits(0x7fc00001u), nan2 = f32_from_bits(0x7fc00002u);
  const float x[16] = {1, 3, nan1, 2, 3, 2, nan2, 1, -0.0f, 0.0f, 5, 5, 0.0f, -0.0f, 5, 5};
  const float d[4] = {0.5f, -0.0f, 1.25f, 2};
  ct_scope *s = ct_scope_new();
  run_pool_2x2(s, "max", x, d);
  const float *o = var_f32(s, "out"), *dx = var_f32(s, "dx");
  ck_assert(o[0] == 3 && f32_bits(o[1]) == 0x7fc00002u && f32_bits(o[2]) == 0x80000000u &&
            o[3] == 5);
  const float want[16] = {0, 0.5f, 0, 0, 0, 0, 0, 0, 1.25f, 0, 2, 0, 0, 0, 0, 0};
  for (int i = 0; i < 16; i++) ck_assert_msg(f32_bits(dx[i]) == f32_bits(want[i]), "dx[%d]", i);
  ct_scope_free(s);

  const float y[16] = {1, 2, 0.1f, 0.2f, 3, 4, 0.3f, 1e8f, 1, 1, 1, 1, 1, 1, 1, 1};
  s = ct_scope_new();
  run_pool_2x2(s, "avg", y, d);
  o = var_f32(s, "out");
  dx = var_f32(s, "dx");
  ck_assert(o[0] == 2.5f && o[1] == (0.1f + 0.2f + 0.3f + 1e8f) / 4 && o[2] == 1 && o[3] == 1);
  for (int i = 0; i < 16; i++) {
    float share = (i % 4 < 2 ? d[i / 8 * 2] : d[i / 8 * 2 + 1]) / 4;
    ck_assert_msg(f32_bits(dx[i]) == f32_bits(0.0f + share), "dx[%d]", i);
  }
  ck_assert(f32_bits(dx[2]) == 0); /* the -0 gradient's quarter */
  ct_scope_free(s);
}
END_TEST

/* The float32 grad kernels agree with the float64 ones. */
START_TEST(conv_grad_f32_matches_f64) {
  const conv_case *k = CONV(.n = 2, .c = 4, .h = 6, .w = 5, .m = 4, .kh = 3, .kw = 3,
                            .groups = 2, .sh = 2, .pads = {1, 1});
  ct_op *op = conv_grad_op(k); /* strides {2, 1}, paddings {1, 1}, groups 2 */
  const char *ins[3] = {"x", "f", "d"}, *outs[2] = {"dx", "df"};
  ct_ddim dims[3] = {conv_x_dims(k), conv_f_dims(k), conv_out_dims(k)};
  check_f32_matches_f64(op, ins, dims, 3, outs, 2);
  ct_op_free(op);

  const conv_case *p = POOL(.pool = "max", .n = 2, .c = 3, .h = 5, .w = 5, .kh = 3, .kw = 3,
                            .sh = 2, .sw = 2, .pads = {1, 1});
  op = conv_case_op(p, "x", NULL, "out");
  const char *pin[1] = {"x"}, *pout[1] = {"out"};
  ct_ddim pdims[1] = {conv_x_dims(p)};
  check_f32_matches_f64(op, pin, pdims, 1, pout, 1);
  ct_op_free(op);
}
END_TEST

/* float32 gradients of a stride-1 3x3 conv with 8 or more channels and filters go through
 * Winograd's path (ops/cpu/conv.c): Input@GRAD as the convolution of Output@GRAD by the filters
 * transposed and turned, Filter@GRAD as G^T dU G. On small integers both are exact, so equal to
 * the float64 kernel's (im2col). Paddings 1, 0, 2 and asymmetric; odd and even sizes; channel
 * and filter counts that leave the dots' blocks of 4 by 2 a remainder; a layer wide enough for
 * the GEMM. */
START_TEST(conv_grad_winograd_is_exact) {
  const conv_case *ks[] = {
      CONV(.n = 2, .c = 8, .h = 17, .w = 18, .m = 9, .kh = 3, .kw = 3, .pads = {1, 1}),
      CONV(.n = 1, .c = 9, .h = 16, .w = 17, .m = 8, .kh = 3, .kw = 3),
      CONV(.n = 1, .c = 8, .h = 15, .w = 16, .m = 8, .kh = 3, .kw = 3, .pads = {2, 2}),
      CONV(.n = 1, .c = 8, .h = 16, .w = 17, .m = 10, .kh = 3, .kw = 3, .pads = {0, 2, 1, 0},
           .n_pads = 4),
      /* wide enough (M C > 8192) for Filter@GRAD's sums to go through the GEMM; 10 blocks in
       * 8 chunks, so some chunk adds two */
      CONV(.n = 5, .c = 96, .h = 18, .w = 64, .m = 88, .kh = 3, .kw = 3, .pads = {1, 1}),
  };
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
    const conv_case *k = ks[i];
    ct_scope *s[2] = {ct_scope_new(), ct_scope_new()};
    const ct_dtype dts[2] = {CT_FLOAT64, CT_FLOAT32};
    ct_op *op = conv_grad_op(k);
    for (int t = 0; t < 2; t++) {
      put_fn(s[t], "x", dts[t], conv_x_dims(k), data_x);
      put_fn(s[t], "f", dts[t], conv_f_dims(k), data_y);
      put_fn(s[t], "d", dts[t], conv_out_dims(k), data_x);
      run(op, s[t]);
    }
    const char *outs[2] = {"dx", "df"};
    const ct_ddim dims[2] = {conv_x_dims(k), conv_f_dims(k)};
    for (int o = 0; o < 2; o++) {
      const double *want = result(s[0], outs[o], CT_FLOAT64, dims[o]);
      const float *got = result(s[1], outs[o], CT_FLOAT32, dims[o]);
      for (int64_t e = 0; e < ct_ddim_numel(dims[o]); e++) {
        ck_assert_msg((double)got[e] == want[e], "case %zu %s[%lld] = %.9g, want %.17g", i,
                      outs[o], (long long)e, (double)got[e], want[e]);
      }
    }
    ct_op_free(op);
    ct_scope_free(s[0]);
    ct_scope_free(s[1]);
  }
}
END_TEST

/* conv_util.h's data_unit, another stretch of it, and their magnitudes. */
static double data_unit_abs(int64_t i) { return fabs(data_unit(i)); }
static double data_unit2(int64_t i) { return data_unit(i + 12345); }
static double data_unit2_abs(int64_t i) { return fabs(data_unit2(i)); }

/* On data that is not exact, Winograd's float32 gradients of this layer stay within 1e-6 (8
 * float32 ulp) of the sum of their terms' magnitudes (Input@GRAD: |W| |dOut| over the window and filters; Filter@GRAD: |x| |dOut|
 * over the images and pixels), both computed by the float64 kernel (im2col). Filter@GRAD sums
 * 2 x 20 x 21 terms; the worst seen here is 9e-8. (Winograd's rounding follows the largest
 * magnitudes among a filter's 9 taps, not each tap's own: on a tiny padded image, where one
 * tap's terms are few, that tap's error can pass 1e-6 of its own sum, 1.3e-3 of it seen on a
 * 1 x 2 image, while staying within 4e-7 of the filter's largest.) */
START_TEST(conv_grad_winograd_error_is_within_its_bound) {
  const double bound = 1e-6;
  const conv_case *k = CONV(.n = 2, .c = 16, .h = 20, .w = 21, .m = 12, .kh = 3, .kw = 3,
                            .pads = {1, 1});
  ct_scope *s[3] = {ct_scope_new(), ct_scope_new(), ct_scope_new()};
  const ct_dtype dts[3] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT64};
  double (*fx[3])(int64_t) = {data_unit, data_unit, data_unit_abs};
  double (*fd[3])(int64_t) = {data_unit2, data_unit2, data_unit2_abs};
  ct_op *op = conv_grad_op(k);
  for (int t = 0; t < 3; t++) {
    put_fn(s[t], "x", dts[t], conv_x_dims(k), fx[t]);
    put_fn(s[t], "f", dts[t], conv_f_dims(k), fx[t]);
    put_fn(s[t], "d", dts[t], conv_out_dims(k), fd[t]);
    run(op, s[t]);
  }
  const char *outs[2] = {"dx", "df"};
  const ct_ddim dims[2] = {conv_x_dims(k), conv_f_dims(k)};
  for (int o = 0; o < 2; o++) {
    const float *got = result(s[0], outs[o], CT_FLOAT32, dims[o]);
    const double *want = result(s[1], outs[o], CT_FLOAT64, dims[o]);
    const double *mag = result(s[2], outs[o], CT_FLOAT64, dims[o]);
    double worst = 0;
    for (int64_t e = 0; e < ct_ddim_numel(dims[o]); e++) {
      double err = fabs(got[e] - want[e]) / mag[e];
      ck_assert_msg(err <= bound, "%s[%lld] = %.9g, want %.17g (sum of magnitudes %.9g)",
                    outs[o], (long long)e, (double)got[e], want[e], mag[e]);
      if (err > worst) worst = err;
    }
    ck_assert(worst > 0); /* not exact: the bound is what is tested */
  }
  ct_op_free(op);
  for (int t = 0; t < 3; t++) ct_scope_free(s[t]);
}
END_TEST

/* Only the filter is a parameter: conv2d_grad computes Filter@GRAD alone. */
START_TEST(conv_grad_filter_only) {
  static const char *const just_f[] = {"f"};
  ct_scope *s = ct_scope_new();
  current = CONV(.n = 1, .c = 2, .h = 4, .w = 4, .m = 2, .kh = 3, .kw = 3);
  put_smooth(s, "x", conv_x_dims(current), 0.1);
  put_smooth(s, "f", conv_f_dims(current), 0.7);
  check_grads(s, build_case, "loss", just_f, 1);
  ck_assert_ptr_null(ct_scope_find_var(s, "x@GRAD"));
  ct_scope_free(s);
}
END_TEST

START_TEST(conv_grad_refuses_wrong_dout) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(1, 1, 4, 4), 0.1);
  put_smooth(s, "f", CT_DIMS(1, 1, 3, 3), 0.2);
  put_smooth(s, "d", CT_DIMS(1, 1, 3, 3), 0.3);
  ct_op *op = new_op("conv2d_grad");
  ck_assert_int_eq(ct_op_set_input(op, "Input", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Filter", "f"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Output@GRAD", "d"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Input@GRAD", "dx"), CT_OK);
  run_fails(op, s, CT_ERR_SHAPE, "conv2d_grad", "Output@GRAD variable 'd'", "[1,1,2,2]", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("grad_conv");
  CT_ADD_TEST(s, conv_grads_plain);
  CT_ADD_TEST(s, conv_grads_strides_paddings_dilations);
  CT_ADD_TEST(s, conv_grads_groups_depthwise_1x1);
  CT_ADD_TEST(s, pool_grads);
  CT_ADD_TEST(s, pool_max_grad_overlaps_and_ties);
  CT_ADD_TEST(s, pool_2x2_tiles_keep_order_ties_and_nans);
  CT_ADD_TEST(s, conv_grad_f32_matches_f64);
  CT_ADD_TEST(s, conv_grad_winograd_is_exact);
  CT_ADD_TEST(s, conv_grad_winograd_error_is_within_its_bound);
  CT_ADD_TEST(s, conv_grad_filter_only);
  CT_ADD_TEST(s, conv_grad_refuses_wrong_dout);
  return s;
}

CT_TEST_MAIN(make_suite)
