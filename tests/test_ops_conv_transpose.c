/* SPDX-License-Identifier: Apache-2.0 */
/* conv_transpose (ONNX's ConvTranspose) and its gradient: ONNX's worked example by hand; 1-D,
 * 2-D and 3-D runs with strides, pads, dilations, output_padding, groups and B against a plain
 * scatter loop of the definition (small integers, so the float64 sums are exact); output_shape
 * and auto_pad resolving the pads; float32 against float64 on the per-image threaded path; the
 * refusals, each naming the op and the fix; and the gradients of X, W and B against central
 * finite differences (grad_util.h). */
#include <math.h>
#include <string.h>

#include <corten/corten.h>

#include "grad_util.h"

/* The geometry of a case: spatial dims nsp, and per dim input, kernel, stride, dilation, pad
 * begin, and the output extent; groups, channels in (c) and out (m). */
typedef struct geo {
  int nsp;
  int64_t n, c, m, groups;
  int64_t in[3], k[3], s[3], d[3], pb[3], out[3];
} geo;

static int64_t vol3(const int64_t a[3], int nsp) {
  int64_t v = 1;
  for (int i = 0; i < nsp; i++) v *= a[i];
  return v;
}

/* Y by the definition: every input element times every tap, added where it lands. */
static void reference(const geo *g, const double *x, const double *w, const double *b,
                      double *y) {
  int64_t ni = vol3(g->in, g->nsp), no = vol3(g->out, g->nsp), nk = vol3(g->k, g->nsp);
  int64_t cg = g->c / g->groups, mg = g->m / g->groups;
  for (int64_t n = 0; n < g->n; n++) {
    for (int64_t m = 0; m < g->m; m++) {
      for (int64_t o = 0; o < no; o++) y[(n * g->m + m) * no + o] = b != NULL ? b[m] : 0;
    }
    for (int64_t ci = 0; ci < g->c; ci++) {
      int64_t gi = ci / cg;
      for (int64_t i = 0; i < ni; i++) {
        for (int64_t mo = 0; mo < mg; mo++) {
          for (int64_t k = 0; k < nk; k++) {
            int64_t ii = i, kk = k, at = 0;
            bool inside = true;
            int64_t mul = 1;
            for (int dim = g->nsp - 1; dim >= 0; dim--) {
              int64_t id = ii % g->in[dim], kd = kk % g->k[dim];
              ii /= g->in[dim];
              kk /= g->k[dim];
              int64_t od = id * g->s[dim] - g->pb[dim] + kd * g->d[dim];
              inside &= od >= 0 && od < g->out[dim];
              at += od * mul;
              mul *= g->out[dim];
            }
            if (!inside) continue;
            y[(n * g->m + gi * mg + mo) * no + at] +=
                x[(n * g->c + ci) * ni + i] * w[(ci * mg + mo) * nk + k];
          }
        }
      }
    }
  }
}

static ct_ddim dims_of(int64_t a, int64_t b, const int64_t *sp, int nsp) {
  ct_ddim d = CT_DIMS(a, b);
  d.rank = 2 + nsp;
  for (int i = 0; i < nsp; i++) d.d[2 + i] = sp[i];
  return d;
}

static ct_op *cvt_op(bool bias) {
  ct_op *op = new_op("conv_transpose");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "W", "w"), CT_OK);
  if (bias) ck_assert_int_eq(ct_op_set_input(op, "B", "b"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Y", "y"), CT_OK);
  return op;
}

static void set_ints(ct_op *op, const char *name, const int64_t *v, int n) {
  ck_assert_int_eq(ct_op_set_attr_ints(op, name, v, (size_t)n), CT_OK);
}

/* Puts x, w (and b) of geometry g holding small integers into s. */
static void put_case(ct_scope *s, const geo *g, bool bias, double **x, double **w, double **b) {
  int64_t nx = g->n * g->c * vol3(g->in, g->nsp);
  int64_t nw = g->c * (g->m / g->groups) * vol3(g->k, g->nsp);
  *x = xmalloc(nx, sizeof **x);
  *w = xmalloc(nw, sizeof **w);
  *b = bias ? xmalloc(g->m, sizeof **b) : NULL;
  for (int64_t i = 0; i < nx; i++) (*x)[i] = small_int(i, 7, 3);
  for (int64_t i = 0; i < nw; i++) (*w)[i] = small_int(i * 3 + 1, 5, 2);
  put(s, "x", CT_FLOAT64, dims_of(g->n, g->c, g->in, g->nsp), *x);
  put(s, "w", CT_FLOAT64, dims_of(g->c, g->m / g->groups, g->k, g->nsp), *w);
  if (bias) {
    for (int64_t i = 0; i < g->m; i++) (*b)[i] = (double)i - 1.5;
    put(s, "b", CT_FLOAT64, CT_DIMS(g->m), *b);
  }
}

/* Runs op on the case and compares Y with the reference, element by element, exactly. */
static void check_case(ct_op *op, const geo *g, bool bias) {
  ct_scope *s = ct_scope_new();
  double *x, *w, *b;
  put_case(s, g, bias, &x, &w, &b);
  run(op, s);
  int64_t ny = g->n * g->m * vol3(g->out, g->nsp);
  double *want = xmalloc(ny, sizeof *want);
  reference(g, x, w, b, want);
  const double *y = result(s, "y", CT_FLOAT64, dims_of(g->n, g->m, g->out, g->nsp));
  for (int64_t i = 0; i < ny; i++) {
    ck_assert_msg(y[i] == want[i], "y[%lld] = %g, expected %g", (long long)i, y[i], want[i]);
  }
  free(x);
  free(w);
  free(b);
  free(want);
  ct_scope_free(s);
  ct_op_free(op);
}

/* ONNX's example: X = 0..8 as 3x3, W ones [1, 2, 3, 3], no attributes: each output element
 * sums the inputs whose 3x3 footprint covers it. */
START_TEST(onnx_example_by_hand) {
  static const double want[25] = {0, 1,  3,  3,  2,  3, 8,  15, 12, 7,  9,  21, 36,
                                  27, 15, 9, 20, 33, 24, 13, 6,  13, 21, 15, 8};
  double x[9], w[18];
  for (int i = 0; i < 9; i++) x[i] = i;
  for (int i = 0; i < 18; i++) w[i] = 1;
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT64, CT_DIMS(1, 1, 3, 3), x);
  put(s, "w", CT_FLOAT64, CT_DIMS(1, 2, 3, 3), w);
  ct_op *op = cvt_op(false);
  run(op, s);
  const double *y = result(s, "y", CT_FLOAT64, CT_DIMS(1, 2, 5, 5));
  for (int i = 0; i < 50; i++) ck_assert_double_eq(y[i], want[i % 25]);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(two_d_strides_pads_dilations_groups_bias) {
  static const int64_t st[] = {3, 2}, pads[] = {1, 2, 0, 1}, dil[] = {2, 1}, op_[] = {1, 0};
  geo g = {2, 2, 4, 6, 2, {3, 4}, {2, 3}, {3, 2}, {2, 1}, {1, 2}, {0}};
  for (int i = 0; i < 2; i++) {
    g.out[i] = g.s[i] * (g.in[i] - 1) + op_[i] + g.d[i] * (g.k[i] - 1) + 1 - pads[i] - pads[2 + i];
  }
  ct_op *op = cvt_op(true);
  set_ints(op, "strides", st, 2);
  set_ints(op, "pads", pads, 4);
  set_ints(op, "dilations", dil, 2);
  set_ints(op, "output_padding", op_, 2);
  ck_assert_int_eq(ct_op_set_attr_int(op, "groups", 2), CT_OK);
  check_case(op, &g, true);
}
END_TEST

START_TEST(one_d_and_three_d) {
  static const int64_t s1[] = {2}, p1[] = {1, 0};
  geo g1 = {1, 2, 3, 2, 1, {5}, {3}, {2}, {1}, {1}, {0}};
  g1.out[0] = 2 * 4 + 3 - 1;
  ct_op *op = cvt_op(true);
  set_ints(op, "strides", s1, 1);
  set_ints(op, "pads", p1, 2);
  check_case(op, &g1, true);
  static const int64_t s3[] = {1, 2, 1}, d3[] = {1, 1, 2};
  geo g3 = {3, 1, 2, 3, 1, {3, 2, 4}, {2, 3, 2}, {1, 2, 1}, {1, 1, 2}, {0, 0, 0}, {0}};
  for (int i = 0; i < 3; i++) g3.out[i] = g3.s[i] * (g3.in[i] - 1) + g3.d[i] * (g3.k[i] - 1) + 1;
  op = cvt_op(false);
  set_ints(op, "strides", s3, 3);
  set_ints(op, "dilations", d3, 3);
  check_case(op, &g3, false);
}
END_TEST

/* output_shape: total = full - O split as ONNX says (the odd one at the beginning but for
 * SAME_UPPER), extra zeros at the end when O is larger; SAME_* without it: O = I s. */
START_TEST(output_shape_and_auto_pad) {
  /* X 3x3, kernel 3x3, strides (3, 2): full 9 x 7. */
  static const int64_t st[] = {3, 2}, os_small[] = {6, 6}, os_big[] = {10, 8}, ks[] = {3, 3};
  geo g = {2, 1, 1, 2, 1, {3, 3}, {3, 3}, {3, 2}, {1, 1}, {0, 0}, {0}};
  /* NOTSET, O 6 x 6: totals 3 and 1, begins 2 and 1. */
  g.pb[0] = 2, g.pb[1] = 1, g.out[0] = 6, g.out[1] = 6;
  ct_op *op = cvt_op(false);
  set_ints(op, "strides", st, 2);
  set_ints(op, "output_shape", os_small, 2);
  set_ints(op, "kernel_shape", ks, 2);
  check_case(op, &g, false);
  /* SAME_UPPER, O 6 x 6: begins 1 and 0. */
  g.pb[0] = 1, g.pb[1] = 0;
  op = cvt_op(false);
  set_ints(op, "strides", st, 2);
  set_ints(op, "output_shape", os_small, 2);
  ck_assert_int_eq(ct_op_set_attr_string(op, "auto_pad", "SAME_UPPER"), CT_OK);
  check_case(op, &g, false);
  /* NOTSET, O 10 x 8: the full output, then zeros. */
  g.pb[0] = g.pb[1] = 0, g.out[0] = 10, g.out[1] = 8;
  op = cvt_op(false);
  set_ints(op, "strides", st, 2);
  set_ints(op, "output_shape", os_big, 2);
  check_case(op, &g, false);
  /* SAME_LOWER without output_shape: O = (9, 6), totals 0 and 1, begins 0 and 1. */
  g.pb[0] = 0, g.pb[1] = 1, g.out[0] = 9, g.out[1] = 6;
  op = cvt_op(false);
  set_ints(op, "strides", st, 2);
  ck_assert_int_eq(ct_op_set_attr_string(op, "auto_pad", "SAME_LOWER"), CT_OK);
  check_case(op, &g, false);
}
END_TEST

/* Enough images for the per-image pieces (one per thread): float32 agrees with float64. */
START_TEST(float32_matches_float64_across_threads) {
  static const int64_t st[] = {2, 2}, pads[] = {1, 0, 0, 1};
  ct_set_num_threads(4);
  ct_op *op = cvt_op(true);
  set_ints(op, "strides", st, 2);
  set_ints(op, "pads", pads, 4);
  static const char *const ins[] = {"x", "w", "b"}, *const outs[] = {"y"};
  const ct_ddim dims[] = {CT_DIMS(9, 4, 5, 6), CT_DIMS(4, 3, 3, 3), CT_DIMS(3)};
  check_f32_matches_f64(op, ins, dims, 3, outs, 1);
  ct_op_free(op);
  ct_set_num_threads(0);
}
END_TEST

START_TEST(refuses_bad_inputs_and_attributes) {
  ct_scope *s = ct_scope_new();
  double v[64] = {0};
  put(s, "x", CT_FLOAT64, CT_DIMS(1, 2, 3, 3), v);
  put(s, "w", CT_FLOAT64, CT_DIMS(2, 1, 2), v);
  put(s, "b", CT_FLOAT64, CT_DIMS(3), v);
  ct_op *op = cvt_op(false);
  run_fails(op, s, CT_ERR_SHAPE, "conv_transpose", "input W variable 'w'", "[C, M/groups, K...]",
            NULL);
  put(s, "w", CT_FLOAT64, CT_DIMS(2, 1, 2, 2), v);
  static const int64_t three[] = {1, 1, 1}, big[] = {9, 9}, k3[] = {3, 3}, pads[] = {2, 2, 0, 0};
  set_ints(op, "strides", three, 3);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "attribute 'strides' has 3 values", "give 2", NULL);
  set_ints(op, "strides", three, 0);
  set_ints(op, "kernel_shape", k3, 2);
  run_fails(op, s, CT_ERR_SHAPE, "attribute 'kernel_shape'", "must agree", NULL);
  set_ints(op, "kernel_shape", k3, 0);
  ck_assert_int_eq(ct_op_set_attr_string(op, "auto_pad", "SAME"), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "attribute 'auto_pad'", "SAME_LOWER", NULL);
  ck_assert_int_eq(ct_op_set_attr_string(op, "auto_pad", "SAME_LOWER"), CT_OK);
  set_ints(op, "output_shape", big, 2);
  run_fails(op, s, CT_ERR_UNSUPPORTED, "larger than the full", "give pads", NULL);
  ck_assert_int_eq(ct_op_set_attr_string(op, "auto_pad", "NOTSET"), CT_OK);
  set_ints(op, "pads", pads, 4);
  run_fails(op, s, CT_ERR_UNSUPPORTED, "'pads'", "'output_shape'", "give only one", NULL);
  set_ints(op, "output_shape", big, 0);
  static const int64_t huge[] = {5, 5, 0, 0};
  set_ints(op, "pads", huge, 4);
  run_fails(op, s, CT_ERR_SHAPE, "input X variable 'x'", "use smaller pads", NULL);
  ct_op_free(op);
  op = cvt_op(true);
  run_fails(op, s, CT_ERR_SHAPE, "input B variable 'b'", "[1]", NULL);
  ck_assert_int_eq(ct_op_set_attr_int(op, "groups", 0), CT_OK);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "attribute 'groups'", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- Gradients ------------------------------------------------------------------------------ */

static int g_nsp;
static void build_cvt(ct_program *p) {
  static const int64_t st2[] = {2, 1}, pads2[] = {1, 0, 0, 1}, dil2[] = {1, 2}, op2[] = {1, 0};
  static const int64_t st1[] = {3}, op1[] = {2}, st3[] = {1, 2, 1}, pads3[] = {0, 1, 0, 0, 0, 1};
  ct_op *op = cvt_op(true);
  if (g_nsp == 2) {
    set_ints(op, "strides", st2, 2);
    set_ints(op, "pads", pads2, 4);
    set_ints(op, "dilations", dil2, 2);
    set_ints(op, "output_padding", op2, 2);
    ck_assert_int_eq(ct_op_set_attr_int(op, "groups", 2), CT_OK);
  } else if (g_nsp == 1) {
    set_ints(op, "strides", st1, 1);
    set_ints(op, "output_padding", op1, 1);
  } else {
    set_ints(op, "strides", st3, 3);
    set_ints(op, "pads", pads3, 6);
  }
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  append_weighted_loss(p, "y", "loss");
}

static void check_cvt_grads(int nsp, ct_ddim x, ct_ddim w, int64_t m) {
  static const char *const params[] = {"x", "w", "b"};
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", x, 0.1);
  put_smooth(s, "w", w, 0.7);
  put_smooth(s, "b", CT_DIMS(m), 1.3);
  g_nsp = nsp;
  check_grads(s, build_cvt, "loss", params, 3);
  ct_scope_free(s);
}

/* Empty tensors may carry huge extents: W [0, 2^59, 1] with groups 16 would give 2^63 output
 * channels (refused, naming W), and X [0, 1, 2^19, 2^20, 2^20] has no image to convolve: an
 * empty Y, no working space sized from its extents. */
static void put_empty(ct_scope *s, const char *name, ct_ddim d) {
  ct_tensor *t = ct_var_tensor(ct_scope_var(s, name));
  ck_assert_int_eq(ct_tensor_resize(t, d), CT_OK);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()));
}

START_TEST(huge_extents_of_empty_tensors) {
  ct_scope *s = ct_scope_new();
  put_empty(s, "x", CT_DIMS(1, 0, 4));
  put_empty(s, "w", CT_DIMS(0, (int64_t)1 << 59, 1));
  ct_op *op = cvt_op(false);
  ck_assert_int_eq(ct_op_set_attr_int(op, "groups", 16), CT_OK);
  run_fails(op, s, CT_ERR_SHAPE, "conv_transpose", "input W variable 'w'", "2^48", NULL);
  ct_op_free(op);
  put_empty(s, "x", CT_DIMS(0, 1, 1 << 19, 1 << 20, 1 << 20));
  float w[16] = {0};
  put(s, "w", CT_FLOAT32, CT_DIMS(1, 1, 16, 1, 1), w);
  op = cvt_op(false);
  static const int64_t pads[6] = {8, 0, 0, 7, 0, 0};
  set_ints(op, "pads", pads, 6);
  run(op, s);
  const ct_tensor *y = ct_var_get_tensor(ct_scope_find_var(s, "y"));
  ck_assert(ct_ddim_equal(ct_tensor_dims(y), CT_DIMS(0, 1, 1 << 19, 1 << 20, 1 << 20)));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(gradients_2d_with_groups) {
  check_cvt_grads(2, CT_DIMS(2, 4, 3, 2), CT_DIMS(4, 2, 2, 3), 4);
}
END_TEST

START_TEST(gradients_1d_and_3d) {
  check_cvt_grads(1, CT_DIMS(2, 2, 3), CT_DIMS(2, 3, 2), 3);
  check_cvt_grads(3, CT_DIMS(1, 2, 2, 3, 2), CT_DIMS(2, 2, 2, 2, 2), 2);
}
END_TEST

/* Only W's gradient wanted: the grad op writes W@GRAD alone. */
START_TEST(gradient_of_w_alone) {
  static const char *const just_w[] = {"w"};
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(2, 4, 3, 2), 0.1);
  put_smooth(s, "w", CT_DIMS(4, 2, 2, 3), 0.7);
  put_smooth(s, "b", CT_DIMS(4), 1.3);
  g_nsp = 2;
  run_backward(s, build_cvt, just_w, 1);
  tensor_dims(s, "w@GRAD", CT_DIMS(4, 2, 2, 3));
  ck_assert_ptr_null(ct_scope_find_var(s, "x@GRAD"));
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("ops_conv_transpose");
  CT_ADD_TEST(s, onnx_example_by_hand);
  CT_ADD_TEST(s, two_d_strides_pads_dilations_groups_bias);
  CT_ADD_TEST(s, one_d_and_three_d);
  CT_ADD_TEST(s, output_shape_and_auto_pad);
  CT_ADD_TEST(s, float32_matches_float64_across_threads);
  CT_ADD_TEST(s, refuses_bad_inputs_and_attributes);
  CT_ADD_TEST(s, huge_extents_of_empty_tensors);
  CT_ADD_TEST(s, gradients_2d_with_groups);
  CT_ADD_TEST(s, gradients_1d_and_3d);
  CT_ADD_TEST(s, gradient_of_w_alone);
  return s;
}

CT_TEST_MAIN(make_suite)
