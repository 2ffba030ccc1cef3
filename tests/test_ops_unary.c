/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the unary ops on the CPU: the activations (relu, sigmoid, tanh, exp, log) against
 * the C library's functions in the same type, rank 0 and empty tensors included, saturation,
 * log of zero and of negatives, in place, and the dtypes they refuse; then scale, with its bias
 * before or after the scale, in float and in saturating integer arithmetic. Each test runs in
 * its own process. The helpers are in op_util.h. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "op_util.h"

/* ---- Unary ops ----------------------------------------------------------------------------- */

static double data_positive(int64_t i) { return (double)(i % 9) * 0.5 + 0.25; }

/* Runs a unary op on dims of dtype dt and checks Out against ref element by element, within
 * tol relative (0: exactly). */
static void check_unary(const char *type, ct_dtype dt, ct_ddim dims, double (*data)(int64_t),
                        double (*ref)(double, ct_dtype), double tol) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", dt, dims, data);
  ct_op *op = op_x(type, "x", "out");
  run(op, s);
  const void *out = result(s, "out", dt, dims);
  for (int64_t i = 0, n = ct_ddim_numel(dims); i < n; i++) {
    double got = get_elem(out, dt, i), want = ref(data(i), dt);
    ck_assert_msg(fabs(got - want) <= tol * fabs(want), "%s element %lld: %.17g, expected %.17g",
                  type, (long long)i, got, want);
  }
  ct_op_free(op);
  ct_scope_free(s);
}

static double ref_relu(double a, ct_dtype dt) { (void)dt; return a < 0 ? 0 : a; }
static double ref_sigmoid(double a, ct_dtype dt) {
  return dt == CT_FLOAT32 ? (double)(1.0f / (1.0f + expf((float)-a))) : 1.0 / (1.0 + exp(-a));
}
static double ref_tanh(double a, ct_dtype dt) {
  return dt == CT_FLOAT32 ? (double)tanhf((float)a) : tanh(a);
}
static double ref_exp(double a, ct_dtype dt) {
  return dt == CT_FLOAT32 ? (double)expf((float)a) : exp(a);
}
static double ref_log(double a, ct_dtype dt) {
  return dt == CT_FLOAT32 ? (double)logf((float)a) : log(a);
}

START_TEST(relu_float32) {
  check_unary("relu", CT_FLOAT32, CT_DIMS(3, 5), data_unary, ref_relu, 0);
}
END_TEST
START_TEST(relu_float64_rank0) {
  check_unary("relu", CT_FLOAT64, CT_DIMS(), data_unary, ref_relu, 0);
}
END_TEST
START_TEST(relu_int32) { check_unary("relu", CT_INT32, CT_DIMS(11), data_x, ref_relu, 0); }
END_TEST
START_TEST(relu_int64) { check_unary("relu", CT_INT64, CT_DIMS(2, 7), data_x, ref_relu, 0); }
END_TEST
/* NaN and -0 pass through relu (onnxruntime's and PyTorch's results: Relu is max(x, 0) with x's
 * NaN kept); negatives, -inf included, give +0. 37 elements put the specials both in the
 * vector body and in the scalar tail; in place as well. */
static void check_relu_specials(ct_dtype dt, bool in_place) {
  enum { N = 37 };
  const double special[] = {NAN, -0.0, -INFINITY, INFINITY, -1e-30, 0.0};
  double v[N];
  for (int i = 0; i < N; i++) v[i] = (double)(i % 7) - 3.5;
  for (int k = 0; k < 6; k++) {
    v[k] = special[k];
    v[N - 6 + k] = special[k];
  }
  ct_scope *s = ct_scope_new();
  void *buf = xmalloc(N, 8);
  for (int i = 0; i < N; i++) { /* set_elem checks its round trip, which a NaN fails */
    if (dt == CT_FLOAT32) ((float *)buf)[i] = (float)v[i];
    else ((double *)buf)[i] = v[i];
  }
  put(s, "x", dt, CT_DIMS(N), buf);
  free(buf);
  ct_op *op = op_x("relu", "x", in_place ? "x" : "out");
  run(op, s);
  const void *out = result(s, in_place ? "x" : "out", dt, CT_DIMS(N));
  for (int i = 0; i < N; i++) {
    double got = get_elem(out, dt, i);
    if (isnan(v[i])) {
      ck_assert_msg(isnan(got), "relu element %d: %g, expected NaN", i, got);
    } else {
      double want = v[i] < 0 ? 0.0 : v[i];
      ck_assert_msg(got == want && signbit(got) == signbit(want),
                    "relu element %d of %g: %g, expected %g", i, v[i], got, want);
    }
  }
  ct_op_free(op);
  ct_scope_free(s);
}
START_TEST(relu_keeps_nan_and_negative_zero) {
  check_relu_specials(CT_FLOAT32, false);
  check_relu_specials(CT_FLOAT64, false);
  check_relu_specials(CT_FLOAT32, true);
  check_relu_specials(CT_FLOAT64, true);
}
END_TEST
START_TEST(relu_empty) { check_unary("relu", CT_FLOAT32, CT_DIMS(3, 0), data_unary, ref_relu, 0); }
END_TEST
START_TEST(sigmoid_float32) {
  check_unary("sigmoid", CT_FLOAT32, CT_DIMS(2, 9), data_unary, ref_sigmoid, TOL32);
}
END_TEST
START_TEST(sigmoid_float64) {
  check_unary("sigmoid", CT_FLOAT64, CT_DIMS(9), data_unary, ref_sigmoid, TOL64);
}
END_TEST
START_TEST(tanh_float32) {
  check_unary("tanh", CT_FLOAT32, CT_DIMS(9), data_unary, ref_tanh, TOL32);
}
END_TEST
START_TEST(tanh_float64) {
  check_unary("tanh", CT_FLOAT64, CT_DIMS(9), data_unary, ref_tanh, TOL64);
}
END_TEST
START_TEST(exp_float32) { check_unary("exp", CT_FLOAT32, CT_DIMS(9), data_unary, ref_exp, TOL32); }
END_TEST
START_TEST(exp_float64) {
  check_unary("exp", CT_FLOAT64, CT_DIMS(3, 3), data_unary, ref_exp, TOL64);
}
END_TEST
START_TEST(log_float32) {
  check_unary("log", CT_FLOAT32, CT_DIMS(9), data_positive, ref_log, TOL32);
}
END_TEST
START_TEST(log_float64) {
  check_unary("log", CT_FLOAT64, CT_DIMS(9), data_positive, ref_log, TOL64);
}
END_TEST
START_TEST(exp_rank0) { check_unary("exp", CT_FLOAT32, CT_DIMS(), data_unary, ref_exp, TOL32); }
END_TEST
START_TEST(sigmoid_empty) {
  check_unary("sigmoid", CT_FLOAT64, CT_DIMS(0), data_unary, ref_sigmoid, 0);
}
END_TEST

START_TEST(sigmoid_saturates_without_nan) {
  ct_scope *s = ct_scope_new();
  float x[4] = {-200, 200, -INFINITY, INFINITY};
  put(s, "x", CT_FLOAT32, CT_DIMS(4), x);
  ct_op *op = op_x("sigmoid", "x", "out");
  run(op, s);
  const float *o = result(s, "out", CT_FLOAT32, CT_DIMS(4));
  ck_assert(o[0] == 0.0f && o[1] == 1.0f && o[2] == 0.0f && o[3] == 1.0f);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(log_of_zero_and_negative) {
  ct_scope *s = ct_scope_new();
  double x[2] = {0, -1};
  put(s, "x", CT_FLOAT64, CT_DIMS(2), x);
  ct_op *op = op_x("log", "x", "out");
  run(op, s);
  const double *o = result(s, "out", CT_FLOAT64, CT_DIMS(2));
  ck_assert(isinf(o[0]) && o[0] < 0);
  ck_assert(isnan(o[1]));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(float_only_unary_on_int32_is_unsupported) {
  static const char *const types[] = {"sigmoid", "tanh", "exp", "log"};
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_INT32, CT_DIMS(3), data_x);
  for (size_t i = 0; i < 4; i++) {
    ct_op *op = op_x(types[i], "x", "out");
    run_fails(op, s, CT_ERR_UNSUPPORTED, types[i], "int32", NULL);
    ct_op_free(op);
  }
  ct_scope_free(s);
}
END_TEST

START_TEST(unary_in_place) {
  ct_scope *s = ct_scope_new();
  float x[3] = {-1, 0, 2};
  put(s, "x", CT_FLOAT32, CT_DIMS(3), x);
  ct_op *op = op_x("relu", "x", "x");
  run(op, s);
  const float *o = result(s, "x", CT_FLOAT32, CT_DIMS(3));
  ck_assert(o[0] == 0 && o[1] == 0 && o[2] == 2);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- scale ---------------------------------------------------------------------------------- */

/* scale on float32 [4] with the attributes given (NAN: left at its default). */
static const float *run_scale(ct_scope *s, ct_op **op, double scale, double bias, int after) {
  float x[4] = {0, 1, -2, 3.5f};
  put(s, "x", CT_FLOAT32, CT_DIMS(4), x);
  *op = op_x("scale", "x", "out");
  if (!isnan(scale)) ck_assert_int_eq(ct_op_set_attr_float(*op, "scale", scale), CT_OK);
  if (!isnan(bias)) ck_assert_int_eq(ct_op_set_attr_float(*op, "bias", bias), CT_OK);
  if (after >= 0) ck_assert_int_eq(ct_op_set_attr_bool(*op, "bias_after_scale", after), CT_OK);
  run(*op, s);
  return result(s, "out", CT_FLOAT32, CT_DIMS(4));
}

START_TEST(scale_defaults_copy) {
  ct_scope *s = ct_scope_new();
  ct_op *op;
  const float *o = run_scale(s, &op, NAN, NAN, -1);
  ck_assert(o[0] == 0 && o[1] == 1 && o[2] == -2 && o[3] == 3.5f);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(scale_adds_bias_after_scale_by_default) {
  ct_scope *s = ct_scope_new();
  ct_op *op;
  const float *o = run_scale(s, &op, 2, 1, -1);
  ck_assert(o[0] == 1 && o[1] == 3 && o[2] == -3 && o[3] == 8);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(scale_adds_bias_before_scale) {
  ct_scope *s = ct_scope_new();
  ct_op *op;
  const float *o = run_scale(s, &op, 2, 1, 0);
  ck_assert(o[0] == 2 && o[1] == 4 && o[2] == -2 && o[3] == 9);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(scale_float64_bias_before) {
  ct_scope *s = ct_scope_new();
  double x[2] = {1, 2};
  put(s, "x", CT_FLOAT64, CT_DIMS(2), x);
  ct_op *op = op_x("scale", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_float(op, "scale", -0.5), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "bias", 3), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "bias_after_scale", false), CT_OK);
  run(op, s);
  const double *o = result(s, "out", CT_FLOAT64, CT_DIMS(2));
  ck_assert(o[0] == -2 && o[1] == -2.5);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(scale_int32_truncates_and_saturates) {
  ct_scope *s = ct_scope_new();
  int32_t x[4] = {3, -3, INT32_MAX, INT32_MIN};
  put(s, "x", CT_INT32, CT_DIMS(4), x);
  ct_op *op = op_x("scale", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_float(op, "scale", 2.5), CT_OK);
  run(op, s);
  const int32_t *o = result(s, "out", CT_INT32, CT_DIMS(4));
  ck_assert_int_eq(o[0], 7);
  ck_assert_int_eq(o[1], -7);
  ck_assert_int_eq(o[2], INT32_MAX);
  ck_assert_int_eq(o[3], INT32_MIN);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(scale_int64_nan_gives_zero) {
  ct_scope *s = ct_scope_new();
  int64_t x[2] = {5, INT64_MAX};
  put(s, "x", CT_INT64, CT_DIMS(2), x);
  ct_op *op = op_x("scale", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_float(op, "scale", NAN), CT_OK);
  run(op, s);
  const int64_t *o = result(s, "out", CT_INT64, CT_DIMS(2));
  ck_assert(o[0] == 0 && o[1] == 0);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(scale_int64_saturates_at_max) {
  ct_scope *s = ct_scope_new();
  int64_t x[2] = {INT64_MAX, -4};
  put(s, "x", CT_INT64, CT_DIMS(2), x);
  ct_op *op = op_x("scale", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_float(op, "bias", 1), CT_OK);
  run(op, s);
  const int64_t *o = result(s, "out", CT_INT64, CT_DIMS(2));
  ck_assert(o[0] == INT64_MAX);
  ck_assert(o[1] == -3);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(scale_rank0_and_empty) {
  ct_scope *s = ct_scope_new();
  double x[1] = {4};
  put(s, "x", CT_FLOAT64, CT_DIMS(), x);
  put(s, "e", CT_INT32, CT_DIMS(3, 0), NULL);
  ct_op *a = op_x("scale", "x", "xo"), *b = op_x("scale", "e", "eo");
  ck_assert_int_eq(ct_op_set_attr_float(a, "scale", 0.5), CT_OK);
  run(a, s);
  run(b, s);
  ck_assert(*(const double *)result(s, "xo", CT_FLOAT64, CT_DIMS()) == 2);
  ck_assert_ptr_nonnull(result(s, "eo", CT_INT32, CT_DIMS(3, 0)));
  ct_op_free(a);
  ct_op_free(b);
  ct_scope_free(s);
}
END_TEST

static Suite *ops_unary_suite(void) {
  Suite *s = suite_create("ops_unary");
  CT_ADD_TEST(s, relu_float32);
  CT_ADD_TEST(s, relu_float64_rank0);
  CT_ADD_TEST(s, relu_int32);
  CT_ADD_TEST(s, relu_int64);
  CT_ADD_TEST(s, relu_empty);
  CT_ADD_TEST(s, relu_keeps_nan_and_negative_zero);
  CT_ADD_TEST(s, sigmoid_float32);
  CT_ADD_TEST(s, sigmoid_float64);
  CT_ADD_TEST(s, tanh_float32);
  CT_ADD_TEST(s, tanh_float64);
  CT_ADD_TEST(s, exp_float32);
  CT_ADD_TEST(s, exp_float64);
  CT_ADD_TEST(s, log_float32);
  CT_ADD_TEST(s, log_float64);
  CT_ADD_TEST(s, exp_rank0);
  CT_ADD_TEST(s, sigmoid_empty);
  CT_ADD_TEST(s, sigmoid_saturates_without_nan);
  CT_ADD_TEST(s, log_of_zero_and_negative);
  CT_ADD_TEST(s, float_only_unary_on_int32_is_unsupported);
  CT_ADD_TEST(s, unary_in_place);
  CT_ADD_TEST(s, scale_defaults_copy);
  CT_ADD_TEST(s, scale_adds_bias_after_scale_by_default);
  CT_ADD_TEST(s, scale_adds_bias_before_scale);
  CT_ADD_TEST(s, scale_float64_bias_before);
  CT_ADD_TEST(s, scale_int32_truncates_and_saturates);
  CT_ADD_TEST(s, scale_int64_nan_gives_zero);
  CT_ADD_TEST(s, scale_int64_saturates_at_max);
  CT_ADD_TEST(s, scale_rank0_and_empty);
  return s;
}

CT_TEST_MAIN(ops_unary_suite)
