/* SPDX-License-Identifier: Apache-2.0 */
/* conv_nd (ONNX's Conv over 1 to 3 spatial dims) and its gradient: 3-D runs with strides,
 * uneven pads, dilations, groups and B, and 1-D and 2-D ones, against a plain gather loop of
 * the definition (small integers, so the float64 sums are exact); auto_pad VALID, SAME_UPPER
 * and SAME_LOWER resolving the pads; float32 against float64; the refusals, each naming the
 * op and the fix; and the gradients of X, W and B against central finite differences
 * (grad_util.h). */
#include <math.h>
#include <string.h>

#include <corten/corten.h>

#include "grad_util.h"

/* A case: spatial dims nsp; images n, channels in (c) and out (m), groups; per dim the input,
 * kernel, stride, dilation, pad at the beginning, and the output extent. */
typedef struct geo {
  int nsp;
  int64_t n, c, m, groups;
  int64_t in[3], k[3], s[3], d[3], pb[3], out[3];
} geo;

static int64_t vol(const int64_t a[3], int nsp) {
  int64_t v = 1;
  for (int i = 0; i < nsp; i++) v *= a[i];
  return v;
}

/* Y by the definition: each output element gathers the inputs its taps land on. */
static void reference(const geo *g, const double *x, const double *w, const double *b,
                      double *y) {
  const int64_t ni = vol(g->in, g->nsp), no = vol(g->out, g->nsp), nk = vol(g->k, g->nsp);
  const int64_t cg = g->c / g->groups, mg = g->m / g->groups;
  for (int64_t n = 0; n < g->n; n++) {
    for (int64_t m = 0; m < g->m; m++) {
      for (int64_t o = 0; o < no; o++) {
        double sum = 0;
        for (int64_t ci = 0; ci < cg; ci++) {
          for (int64_t k = 0; k < nk; k++) {
            int64_t oo = o, kk = k, at = 0, mul = 1;
            bool inside = true;
            for (int dim = g->nsp - 1; dim >= 0; dim--) {
              const int64_t od = oo % g->out[dim], kd = kk % g->k[dim];
              oo /= g->out[dim];
              kk /= g->k[dim];
              const int64_t id = od * g->s[dim] - g->pb[dim] + kd * g->d[dim];
              inside &= id >= 0 && id < g->in[dim];
              at += id * mul;
              mul *= g->in[dim];
            }
            if (!inside) continue;
            sum += x[(n * g->c + m / mg * cg + ci) * ni + at] * w[(m * cg + ci) * nk + k];
          }
        }
        y[(n * g->m + m) * no + o] = sum + (b != NULL ? b[m] : 0);
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

static ct_op *cnd_op(bool bias) {
  ct_op *op = new_op("conv_nd");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "W", "w"), CT_OK);
  if (bias) ck_assert_int_eq(ct_op_set_input(op, "B", "b"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Y", "y"), CT_OK);
  return op;
}

static void set_ints(ct_op *op, const char *name, const int64_t *v, int n) {
  ck_assert_int_eq(ct_op_set_attr_ints(op, name, v, (size_t)n), CT_OK);
}

/* Runs op on a case of small integers and compares Y with the reference exactly. */
static void check_case(ct_op *op, const geo *g, bool bias) {
  ct_scope *s = ct_scope_new();
  const int64_t nx = g->n * g->c * vol(g->in, g->nsp);
  const int64_t nw = g->m * (g->c / g->groups) * vol(g->k, g->nsp);
  double *x = xmalloc(nx, sizeof *x), *w = xmalloc(nw, sizeof *w);
  double *b = bias ? xmalloc(g->m, sizeof *b) : NULL;
  for (int64_t i = 0; i < nx; i++) x[i] = small_int(i, 7, 3);
  for (int64_t i = 0; i < nw; i++) w[i] = small_int(i * 3 + 1, 5, 2);
  for (int64_t i = 0; bias && i < g->m; i++) b[i] = (double)i - 1.5;
  put(s, "x", CT_FLOAT64, dims_of(g->n, g->c, g->in, g->nsp), x);
  put(s, "w", CT_FLOAT64, dims_of(g->m, g->c / g->groups, g->k, g->nsp), w);
  if (bias) put(s, "b", CT_FLOAT64, CT_DIMS(g->m), b);
  run(op, s);
  const int64_t ny = g->n * g->m * vol(g->out, g->nsp);
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

/* Output extent under explicit pads: (I + pb + pe - d (K - 1) - 1) / s + 1. */
static int64_t out_of(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe) {
  return (in + pb + pe - d * (k - 1) - 1) / s + 1;
}

START_TEST(three_d_strides_uneven_pads_dilations_groups_bias) {
  static const int64_t st[] = {2, 1, 3}, pads[] = {1, 0, 2, 0, 1, 1}, dil[] = {1, 2, 1};
  geo g = {3, 2, 4, 6, 2, {5, 4, 7}, {3, 2, 2}, {2, 1, 3}, {1, 2, 1}, {1, 0, 2}, {0}};
  for (int i = 0; i < 3; i++) {
    g.out[i] = out_of(g.in[i], g.k[i], g.s[i], g.d[i], pads[i], pads[3 + i]);
  }
  ct_op *op = cnd_op(true);
  set_ints(op, "strides", st, 3);
  set_ints(op, "pads", pads, 6);
  set_ints(op, "dilations", dil, 3);
  ck_assert_int_eq(ct_op_set_attr_int(op, "groups", 2), CT_OK);
  check_case(op, &g, true);
}
END_TEST

START_TEST(one_d_and_two_d) {
  static const int64_t s1[] = {2}, p1[] = {1, 0};
  geo g1 = {1, 2, 3, 2, 1, {9}, {3}, {2}, {1}, {1}, {0}};
  g1.out[0] = out_of(9, 3, 2, 1, 1, 0);
  ct_op *op = cnd_op(true);
  set_ints(op, "strides", s1, 1);
  set_ints(op, "pads", p1, 2);
  check_case(op, &g1, true);
  /* depthwise in 2-D: groups = channels */
  geo g2 = {2, 1, 3, 3, 3, {4, 5}, {2, 3}, {1, 1}, {1, 1}, {0, 0}, {3, 3}};
  op = cnd_op(false);
  ck_assert_int_eq(ct_op_set_attr_int(op, "groups", 3), CT_OK);
  check_case(op, &g2, false);
}
END_TEST

/* I 5, K 2, s 2: SAME_* give O 3 and one pad, at the end (UPPER) or the beginning (LOWER);
 * VALID O 2; the kernel_shape given agrees with W. */
START_TEST(auto_pad_resolves_the_pads) {
  static const int64_t st[] = {2, 2, 2}, ks[] = {2, 2, 2};
  static const char *const modes[] = {"SAME_UPPER", "SAME_LOWER", "VALID"};
  for (int k = 0; k < 3; k++) {
    geo g = {3, 1, 2, 2, 1, {5, 5, 5}, {2, 2, 2}, {2, 2, 2}, {1, 1, 1}, {0}, {0}};
    for (int i = 0; i < 3; i++) {
      g.out[i] = k < 2 ? 3 : 2;
      g.pb[i] = k == 1 ? 1 : 0;
    }
    ct_op *op = cnd_op(false);
    set_ints(op, "strides", st, 3);
    set_ints(op, "kernel_shape", ks, 3);
    ck_assert_int_eq(ct_op_set_attr_string(op, "auto_pad", modes[k]), CT_OK);
    check_case(op, &g, false);
  }
}
END_TEST

START_TEST(float32_matches_float64) {
  static const int64_t st[] = {1, 2, 2}, pads[] = {1, 0, 1, 1, 1, 0};
  ct_op *op = cnd_op(true);
  set_ints(op, "strides", st, 3);
  set_ints(op, "pads", pads, 6);
  static const char *const ins[] = {"x", "w", "b"}, *const outs[] = {"y"};
  const ct_ddim dims[] = {CT_DIMS(3, 4, 5, 6, 4), CT_DIMS(5, 4, 3, 3, 2), CT_DIMS(5)};
  check_f32_matches_f64(op, ins, dims, 3, outs, 1);
  ct_op_free(op);
}
END_TEST

START_TEST(refuses_bad_inputs_and_attributes) {
  ct_scope *s = ct_scope_new();
  double v[512] = {0};
  put(s, "x", CT_FLOAT64, CT_DIMS(1, 2, 3, 3, 3), v);
  put(s, "w", CT_FLOAT64, CT_DIMS(4, 3, 2, 2, 2), v);
  put(s, "b", CT_FLOAT64, CT_DIMS(3), v);
  ct_op *op = cnd_op(false);
  run_fails(op, s, CT_ERR_SHAPE, "conv_nd", "input W variable 'w'", "[M, C/groups, K...]", NULL);
  put(s, "w", CT_FLOAT64, CT_DIMS(4, 2, 2, 2, 2), v);
  static const int64_t two[] = {1, 1}, k3[] = {3, 3, 3}, dil[] = {3, 3, 3};
  set_ints(op, "strides", two, 2);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "attribute 'strides' has 2 values", "give 3", NULL);
  set_ints(op, "strides", two, 0);
  set_ints(op, "kernel_shape", k3, 3);
  run_fails(op, s, CT_ERR_SHAPE, "attribute 'kernel_shape'", "must agree", NULL);
  set_ints(op, "kernel_shape", k3, 0);
  ck_assert_int_eq(ct_op_set_attr_string(op, "auto_pad", "SAME"), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "attribute 'auto_pad'", "SAME_LOWER", NULL);
  static const int64_t pads[] = {1, 0, 0, 0, 0, 0};
  ck_assert_int_eq(ct_op_set_attr_string(op, "auto_pad", "VALID"), CT_OK);
  set_ints(op, "pads", pads, 6);
  run_fails(op, s, CT_ERR_UNSUPPORTED, "attribute 'pads' is not all 0", "give only one", NULL);
  set_ints(op, "pads", pads, 0);
  ck_assert_int_eq(ct_op_set_attr_string(op, "auto_pad", "NOTSET"), CT_OK);
  set_ints(op, "dilations", dil, 3);
  run_fails(op, s, CT_ERR_SHAPE, "input X variable 'x'", "shorter than the dilated window (4)",
            NULL);
  ct_op_free(op);
  op = cnd_op(true);
  run_fails(op, s, CT_ERR_SHAPE, "input B variable 'b'", "[4]", NULL);
  ck_assert_int_eq(ct_op_set_attr_int(op, "groups", 0), CT_OK);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "attribute 'groups'", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- Gradients ------------------------------------------------------------------------------ */

static int g_nsp;
static void build_cnd(ct_program *p) {
  static const int64_t st3[] = {2, 1, 1}, pads3[] = {1, 0, 0, 0, 1, 1}, dil3[] = {1, 1, 2};
  static const int64_t st1[] = {2}, pads1[] = {1, 2};
  ct_op *op = cnd_op(true);
  if (g_nsp == 3) {
    set_ints(op, "strides", st3, 3);
    set_ints(op, "pads", pads3, 6);
    set_ints(op, "dilations", dil3, 3);
    ck_assert_int_eq(ct_op_set_attr_int(op, "groups", 2), CT_OK);
  } else if (g_nsp == 1) {
    set_ints(op, "strides", st1, 1);
    set_ints(op, "pads", pads1, 2);
  } else {
    ck_assert_int_eq(ct_op_set_attr_string(op, "auto_pad", "SAME_LOWER"), CT_OK);
  }
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  append_weighted_loss(p, "y", "loss");
}

static void check_cnd_grads(int nsp, ct_ddim x, ct_ddim w) {
  static const char *const params[] = {"x", "w", "b"};
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", x, 0.1);
  put_smooth(s, "w", w, 0.7);
  put_smooth(s, "b", CT_DIMS(w.d[0]), 1.3);
  g_nsp = nsp;
  check_grads(s, build_cnd, "loss", params, 3);
  ct_scope_free(s);
}

START_TEST(gradients_3d_with_groups) {
  check_cnd_grads(3, CT_DIMS(2, 4, 3, 2, 4), CT_DIMS(4, 2, 2, 2, 2));
}
END_TEST

START_TEST(gradients_1d_and_2d) {
  check_cnd_grads(1, CT_DIMS(2, 2, 6), CT_DIMS(3, 2, 3));
  check_cnd_grads(2, CT_DIMS(1, 2, 4, 3), CT_DIMS(2, 2, 2, 3));
}
END_TEST

/* Only W's gradient wanted: the grad op writes W@GRAD alone. */
START_TEST(gradient_of_w_alone) {
  static const char *const just_w[] = {"w"};
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(2, 4, 3, 2, 4), 0.1);
  put_smooth(s, "w", CT_DIMS(4, 2, 2, 2, 2), 0.7);
  put_smooth(s, "b", CT_DIMS(4), 1.3);
  g_nsp = 3;
  run_backward(s, build_cnd, just_w, 1);
  tensor_dims(s, "w@GRAD", CT_DIMS(4, 2, 2, 2, 2));
  ck_assert_ptr_null(ct_scope_find_var(s, "x@GRAD"));
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("ops_conv_nd");
  CT_ADD_TEST(s, three_d_strides_uneven_pads_dilations_groups_bias);
  CT_ADD_TEST(s, one_d_and_two_d);
  CT_ADD_TEST(s, auto_pad_resolves_the_pads);
  CT_ADD_TEST(s, float32_matches_float64);
  CT_ADD_TEST(s, refuses_bad_inputs_and_attributes);
  CT_ADD_TEST(s, gradients_3d_with_groups);
  CT_ADD_TEST(s, gradients_1d_and_2d);
  CT_ADD_TEST(s, gradient_of_w_alone);
  return s;
}

CT_TEST_MAIN(make_suite)
