/* SPDX-License-Identifier: Apache-2.0 */
/* ONNX's training domain (ai.onnx.preview.training, onnx/rules_train.c): Adagrad, Momentum and
 * Adam nodes written byte by byte load and give ONNX's formulas, computed here in double from
 * the same float32 inputs, at T = 0 (no bias correction, no momentum scaling) and T > 0 (T read
 * when the program runs); a node of a domain corten does not import, and a default-domain node
 * in a model that imports no default opset, are refused naming what. */
#include <math.h>

#include "onnx_util.h"
#include "op_util.h"

enum { FLOAT = 1, INT64 = 7 };
#define TRAINING "ai.onnx.preview.training"

static void attr_float(pb *node, const char *name, float v) {
  pb a = {0};
  pb_str(&a, 1, name);
  pb_int(&a, 20, 1); /* FLOAT */
  pb_float(&a, 2, v);
  pb_msg(node, 5, &a);
}

static void attr_string(pb *node, const char *name, const char *v) {
  pb a = {0};
  pb_str(&a, 1, name);
  pb_int(&a, 20, 3); /* STRING */
  pb_str(&a, 4, v);
  pb_msg(node, 5, &a);
}

/* A model of one node (taken) in `domain` with graph inputs in[] (R a float scalar, T an int64
 * scalar, the rest float [2]) and outputs out[] (float [2]), importing only `domain` (opset 1). */
static pb one_node_model(pb *node, const char *domain, const char *const *in,
                         const char *const *out) {
  static const int64_t d2[1] = {2};
  pb g = {0}, v, m = {0}, op = {0};
  pb_str(node, 7, domain);
  pb_msg(&g, 1, node);
  pb_str(&g, 2, "train");
  for (size_t i = 0; in[i] != NULL; i++) {
    v = ox_value_pb(in[i], i == 1 ? INT64 : FLOAT, d2, i < 2 ? 0 : 1);
    pb_msg(&g, 11, &v);
  }
  for (size_t i = 0; out[i] != NULL; i++) {
    v = ox_value_pb(out[i], FLOAT, d2, 1);
    pb_msg(&g, 12, &v);
  }
  pb_int(&m, 1, 8);
  pb_str(&op, 1, domain);
  pb_int(&op, 2, 1);
  pb_msg(&m, 8, &op);
  pb_msg(&m, 7, &g);
  return m;
}

static void set_f32(ct_scope *s, const char *name, const float *v, ct_ddim d) {
  ct_tensor *t = ct_var_tensor(ct_scope_find_var(s, name));
  ck_assert_int_eq(ct_tensor_set_value(t, v, d, CT_FLOAT32, ct_cpu()), CT_OK);
}

/* Loads m into a new scope, sets R = r, T = t and the [2] inputs named in[2..] to vals[k], runs;
 * the scope (the caller frees it and *om). */
static ct_scope *load_and_run(pb *m, ct_onnx_model **om, const char *const *in, float r,
                              int64_t t, const float (*vals)[2]) {
  ct_scope *s = ct_scope_new();
  *om = ct_onnx_load_buffer(m->p, m->n, s);
  ck_assert_msg(*om != NULL, "%s", ct_last_error());
  set_f32(s, in[0], &r, CT_DIMS());
  ct_tensor *tt = ct_var_tensor(ct_scope_find_var(s, in[1]));
  ck_assert_int_eq(ct_tensor_set_value(tt, &t, CT_DIMS(), CT_INT64, ct_cpu()), CT_OK);
  for (size_t k = 2; in[k] != NULL; k++) set_f32(s, in[k], vals[k - 2], CT_DIMS(2));
  ct_executor *e = ct_executor_new(ct_onnx_program(*om), s, ct_cpu());
  ck_assert_msg(e != NULL && ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  ct_executor_free(e);
  return s;
}

/* Variable name's 2 float32 values against want, within float32 rounding of the chain. */
static void expect2(ct_scope *s, const char *name, const double *want) {
  const float *got = var_f32(s, name);
  for (int i = 0; i < 2; i++) {
    ck_assert_msg(fabs(got[i] - want[i]) <= 2e-6 * fabs(want[i]) + 1e-7, "%s[%d] = %.9g, want %.9g",
                  name, i, got[i], want[i]);
  }
}

START_TEST(adam_follows_onnx_with_and_without_bias_correction) {
  static const char *const in[] = {"R", "T", "X", "G", "V", "H", NULL};
  static const char *const out[] = {"X_new", "V_new", "H_new", NULL};
  static const float vals[4][2] = {{1, 2}, {-1, -3}, {4, 1}, {1, 10}};
  const double a = 0.95f, b = 0.85f, eps = 1e-2f, norm = 1e-3f, post = 0.25f, r = 0.1f;
  for (int64_t t = 0; t <= 3; t += 3) {
    pb n = ox_node_pb("Adam", in, out);
    attr_float(&n, "alpha", 0.95f);
    attr_float(&n, "beta", 0.85f);
    attr_float(&n, "epsilon", 1e-2f);
    attr_float(&n, "norm_coefficient", 1e-3f);
    attr_float(&n, "norm_coefficient_post", 0.25f);
    pb m = one_node_model(&n, TRAINING, in, out);
    ct_onnx_model *om;
    ct_scope *s = load_and_run(&m, &om, in, 0.1f, t, vals);
    double xw[2], vw[2], hw[2];
    for (int i = 0; i < 2; i++) {
      double x = vals[0][i], g = norm * x + vals[1][i];
      vw[i] = a * vals[2][i] + (1 - a) * g;
      hw[i] = b * vals[3][i] + (1 - b) * g * g;
      double rate = t > 0 ? r * sqrt(1 - pow(b, (double)t)) / (1 - pow(a, (double)t)) : r;
      xw[i] = (1 - post) * (x - rate * vw[i] / (sqrt(hw[i]) + eps));
    }
    expect2(s, "X_new", xw);
    expect2(s, "V_new", vw);
    expect2(s, "H_new", hw);
    ct_onnx_free(om);
    ct_scope_free(s);
    free(m.p);
  }
}
END_TEST

START_TEST(momentum_standard_and_nesterov_follow_onnx) {
  static const char *const in[] = {"R", "T", "X", "G", "V", NULL};
  static const char *const out[] = {"X_new", "V_new", NULL};
  static const float vals[3][2] = {{1.2f, 2.8f}, {-0.94f, -2.5f}, {1.7f, 3.6f}};
  const double a = 0.95f, b = 0.1f, norm = 1e-3f, r = 0.1f;
  for (int nesterov = 0; nesterov < 2; nesterov++) {
    for (int64_t t = 0; t <= 1; t++) {
      pb n = ox_node_pb("Momentum", in, out);
      attr_float(&n, "alpha", 0.95f);
      attr_float(&n, "beta", 0.1f);
      attr_float(&n, "norm_coefficient", 1e-3f);
      attr_string(&n, "mode", nesterov ? "nesterov" : "standard");
      pb m = one_node_model(&n, TRAINING, in, out);
      ct_onnx_model *om;
      ct_scope *s = load_and_run(&m, &om, in, 0.1f, t, vals);
      double xw[2], vw[2];
      for (int i = 0; i < 2; i++) {
        double x = vals[0][i], g = norm * x + vals[1][i];
        vw[i] = a * vals[2][i] + (t > 0 ? b : 1.0) * g;
        xw[i] = x - r * (nesterov ? g + a * vw[i] : vw[i]);
      }
      expect2(s, "X_new", xw);
      expect2(s, "V_new", vw);
      ct_onnx_free(om);
      ct_scope_free(s);
      free(m.p);
    }
  }
}
END_TEST

START_TEST(adagrad_decays_the_rate_by_the_count) {
  static const char *const in[] = {"R", "T", "X", "G", "H", NULL};
  static const char *const out[] = {"X_new", "H_new", NULL};
  static const float vals[3][2] = {{1, 2}, {-1, -3}, {2, 0.5f}};
  const double decay = 0.1f, eps = 1e-5f, norm = 1e-3f;
  pb n = ox_node_pb("Adagrad", in, out);
  attr_float(&n, "decay_factor", 0.1f);
  attr_float(&n, "epsilon", 1e-5f);
  attr_float(&n, "norm_coefficient", 1e-3f);
  pb m = one_node_model(&n, TRAINING, in, out);
  ct_onnx_model *om;
  ct_scope *s = load_and_run(&m, &om, in, 0.1f, 5, vals);
  double xw[2], hw[2], r = 0.1f / (1 + 5 * decay);
  for (int i = 0; i < 2; i++) {
    double x = vals[0][i], g = norm * x + vals[1][i];
    hw[i] = vals[2][i] + g * g;
    xw[i] = x - r * g / (sqrt(hw[i]) + eps);
  }
  expect2(s, "X_new", xw);
  expect2(s, "H_new", hw);
  ct_onnx_free(om);
  ct_scope_free(s);
  free(m.p);
}
END_TEST

START_TEST(other_domains_and_a_missing_default_opset_are_unsupported) {
  static const char *const in[] = {"R", "T", "X", "G", "H", NULL};
  static const char *const out[] = {"X_new", "H_new", NULL};
  pb n = ox_node_pb("Adagrad", in, out);
  pb m = one_node_model(&n, "com.example.optim", in, out);
  ct_scope *s = ct_scope_new();
  ck_assert_ptr_null(ct_onnx_load_buffer(m.p, m.n, s));
  ck_assert_int_eq(ct_last_status(), CT_ERR_UNSUPPORTED);
  HAS(ct_last_error(), "domain 'com.example.optim'");
  HAS(ct_last_error(), "Adagrad");
  ck_assert_ptr_null(ct_scope_find_var(s, "R")); /* the scope is as it was */
  free(m.p);
  /* A default-domain node (Relu) in a model importing only the training domain. */
  static const char *const rout[] = {"Y", NULL};
  pb g = {0}, v, mm = {0}, op = {0};
  static const int64_t d2[1] = {2};
  n = ox_node_pb("Relu", (const char *[]){"X", NULL}, rout);
  pb_msg(&g, 1, &n);
  pb_str(&g, 2, "relu");
  v = ox_value_pb("X", FLOAT, d2, 1);
  pb_msg(&g, 11, &v);
  v = ox_value_pb("Y", FLOAT, d2, 1);
  pb_msg(&g, 12, &v);
  pb_int(&mm, 1, 8);
  pb_str(&op, 1, TRAINING);
  pb_int(&op, 2, 1);
  pb_msg(&mm, 8, &op);
  pb_msg(&mm, 7, &g);
  ck_assert_ptr_null(ct_onnx_load_buffer(mm.p, mm.n, s));
  ck_assert_int_eq(ct_last_status(), CT_ERR_UNSUPPORTED);
  HAS(ct_last_error(), "opset 0 of the default domain");
  free(mm.p);
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("onnx_train");
  CT_ADD_TEST(s, adam_follows_onnx_with_and_without_bias_correction);
  CT_ADD_TEST(s, momentum_standard_and_nesterov_follow_onnx);
  CT_ADD_TEST(s, adagrad_decays_the_rate_by_the_count);
  CT_ADD_TEST(s, other_domains_and_a_missing_default_opset_are_unsupported);
  return s;
}

CT_TEST_MAIN(make_suite)
