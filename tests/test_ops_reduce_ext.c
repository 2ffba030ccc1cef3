/* SPDX-License-Identifier: Apache-2.0 */
/* The reduce_ext family (ops/defs/reduce_ext*.c): the reductions with attribute dim and input
 * Axes, arg_min and arg_max_v2, log_softmax, softmax_v2 and hardmax, nll_loss and
 * layer_norm_stats on small hand-computed cases; their refusals; and their gradients against
 * central finite differences in float64 (grad_util.h). */
#include <corten/corten.h>

#include "grad_util.h"

static const double x22[] = {1, 2, 3, 4};

static void check_f64(ct_scope *s, const char *name, ct_ddim dims, const double *want, int n) {
  const double *got = result(s, name, CT_FLOAT64, dims);
  for (int i = 0; i < n; i++) {
    ck_assert_msg(fabs(got[i] - want[i]) <= 1e-12 * (1 + fabs(want[i])), "%s[%d] = %.17g, want %.17g",
                  name, i, got[i], want[i]);
  }
}

/* Out of reduction `type` over dim 1 of [[1, 2], [3, 4]]. */
static void reduce_rows(const char *type, double a, double b) {
  static const int64_t d1[] = {1};
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT64, CT_DIMS(2, 2), x22);
  ct_op *op = op_x(type, "x", "out");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", d1, 1), CT_OK);
  run(op, s);
  double want[] = {a, b};
  check_f64(s, "out", CT_DIMS(2), want, 2);
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(reductions_over_one_dim) {
  reduce_rows("reduce_sum_axes", 3, 7);
  reduce_rows("reduce_mean", 1.5, 3.5);
  reduce_rows("reduce_max", 2, 4);
  reduce_rows("reduce_min", 1, 3);
  reduce_rows("reduce_prod", 2, 12);
  reduce_rows("reduce_l1", 3, 7);
  reduce_rows("reduce_l2", sqrt(5), 5);
  reduce_rows("reduce_log_sum", log(3), log(7));
  reduce_rows("reduce_log_sum_exp", log(exp(1) + exp(2)), log(exp(3) + exp(4)));
  reduce_rows("reduce_sum_square", 5, 25);
}
END_TEST

/* Axes at run time: [0] sums the columns, kept as [1, 2]; empty with empty_dim_noop copies X;
 * empty without it reduces everything. */
START_TEST(reduction_axes_input) {
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT64, CT_DIMS(2, 2), x22);
  static const int64_t a0[] = {0};
  put(s, "axes", CT_INT64, CT_DIMS(1), a0);
  ct_op *op = op_x("reduce_mean", "x", "out");
  ck_assert_int_eq(ct_op_set_input(op, "Axes", "axes"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "keep_dim", true), CT_OK);
  run(op, s);
  check_f64(s, "out", CT_DIMS(1, 2), (const double[]){2, 3}, 2);
  put(s, "axes", CT_INT64, CT_DIMS(0), a0);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "empty_dim_noop", true), CT_OK);
  run(op, s);
  check_f64(s, "out", CT_DIMS(2, 2), x22, 4);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "empty_dim_noop", false), CT_OK);
  run(op, s);
  check_f64(s, "out", CT_DIMS(1, 1), (const double[]){2.5}, 1);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* int32 sums wrap as the dtype does; max of int8 is exact. */
START_TEST(integer_reductions) {
  ct_scope *s = ct_scope_new();
  static const int32_t big[] = {2147483647, 1};
  put(s, "x", CT_INT32, CT_DIMS(2), big);
  ct_op *op = op_x("reduce_sum_axes", "x", "out");
  run(op, s);
  ck_assert_int_eq(*(const int32_t *)result(s, "out", CT_INT32, CT_DIMS()), INT32_MIN);
  ct_op_free(op);
  static const int8_t small[] = {-5, 7, -128};
  put(s, "y", CT_INT8, CT_DIMS(3), small);
  op = op_x("reduce_min", "y", "out");
  run(op, s);
  ck_assert_int_eq(*(const int8_t *)result(s, "out", CT_INT8, CT_DIMS()), -128);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(reduction_refusals) {
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT64, CT_DIMS(2, 2), x22);
  ct_op *op = op_x("reduce_max", "x", "out");
  static const int64_t twice[] = {1, -1}, far[] = {2};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", twice, 2), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "reduce_max", "dim 1", "twice", NULL);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", far, 1), CT_OK);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "reduce_max", "[-2, 2)", NULL);
  static const float fa[] = {0};
  put(s, "axes", CT_FLOAT32, CT_DIMS(1), fa);
  ck_assert_int_eq(ct_op_set_input(op, "Axes", "axes"), CT_OK);
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "Axes", "'axes'", "float32", NULL);
  ct_op_free(op);
  static const int32_t none[1] = {0};
  put(s, "e", CT_INT32, CT_DIMS(2, 0), none);
  op = op_x("reduce_max", "e", "out");
  static const int64_t d1[] = {1};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", d1, 1), CT_OK);
  run_fails(op, s, CT_ERR_SHAPE, "reduce_max", "'e'", "no elements", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- arg_min, arg_max_v2 ------------------------------------------------------------------------ */

START_TEST(arg_extremes) {
  ct_scope *s = ct_scope_new();
  static const float v[] = {3, 1, 3, 1, 2, 0};
  put(s, "x", CT_FLOAT32, CT_DIMS(2, 3), v);
  ct_op *op = op_x("arg_max_v2", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", -1), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "select_last_index", true), CT_OK);
  run(op, s);
  const int64_t *o = result(s, "out", CT_INT64, CT_DIMS(2, 1));
  ck_assert_int_eq(o[0], 2);
  ck_assert_int_eq(o[1], 1);
  ct_op_free(op);
  op = op_x("arg_min", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_bool(op, "keepdims", false), CT_OK);
  run(op, s); /* axis 0: column minima */
  o = result(s, "out", CT_INT64, CT_DIMS(3));
  ck_assert_int_eq(o[0], 1);
  ck_assert_int_eq(o[1], 0);
  ck_assert_int_eq(o[2], 1);
  ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", CT_FLOAT32), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "arg_min", "dtype", "int64 or int32", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- log_softmax, softmax_v2, hardmax ------------------------------------------------------------ */

START_TEST(softmax_rows) {
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT64, CT_DIMS(2, 2), x22);
  ct_op *op = op_x("log_softmax", "x", "out");
  run(op, s);
  double l = log(1 + exp(1));
  check_f64(s, "out", CT_DIMS(2, 2), (const double[]){-l, 1 - l, -l, 1 - l}, 4);
  ct_op_free(op);
  /* coerce_2d from axis 0: the four elements are one row. */
  op = op_x("softmax_v2", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", 0), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "coerce_2d", true), CT_OK);
  run(op, s);
  double z = exp(1) + exp(2) + exp(3) + exp(4);
  check_f64(s, "out", CT_DIMS(2, 2),
            (const double[]){exp(1) / z, exp(2) / z, exp(3) / z, exp(4) / z}, 4);
  ct_op_free(op);
  op = op_x("hardmax", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", 0), CT_OK);
  run(op, s);
  check_f64(s, "out", CT_DIMS(2, 2), (const double[]){0, 0, 1, 1}, 4);
  static const int32_t iv[] = {1, 2};
  put(s, "i", CT_INT32, CT_DIMS(2), iv);
  ct_op_free(op);
  op = op_x("log_softmax", "i", "out");
  run_fails(op, s, CT_ERR_UNSUPPORTED, "log_softmax", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- nll_loss, layer_norm_stats ------------------------------------------------------------------ */

static ct_op *nll_op(const char *reduction, bool weight) {
  ct_op *op = new_op("nll_loss");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Label", "label"), CT_OK);
  if (weight) ck_assert_int_eq(ct_op_set_input(op, "Weight", "w"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "out"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "reduction", reduction), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "ignore_index", -1), CT_OK);
  return op;
}

/* X [[1, 2], [3, 4]] (N 2, C 2), labels [1, 0], weights [0.5, 2]: losses -4 and -1.5. */
START_TEST(nll_loss_reductions) {
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT64, CT_DIMS(2, 2), x22);
  static const int64_t lab[] = {1, 0};
  static const double w[] = {0.5, 2};
  put(s, "label", CT_INT64, CT_DIMS(2), lab);
  put(s, "w", CT_FLOAT64, CT_DIMS(2), w);
  ct_op *op = nll_op("none", true);
  run(op, s);
  check_f64(s, "out", CT_DIMS(2), (const double[]){-4, -1.5}, 2);
  ct_op_free(op);
  op = nll_op("sum", true);
  run(op, s);
  check_f64(s, "out", CT_DIMS(), (const double[]){-5.5}, 1);
  ct_op_free(op);
  op = nll_op("mean", true);
  run(op, s);
  check_f64(s, "out", CT_DIMS(), (const double[]){-5.5 / 2.5}, 1);
  /* Label -1 is ignore_index: only the first loss counts, divided by its weight alone. */
  static const int64_t ign[] = {1, -1};
  put(s, "label", CT_INT64, CT_DIMS(2), ign);
  run(op, s);
  check_f64(s, "out", CT_DIMS(), (const double[]){-2}, 1);
  static const int64_t bad[] = {2, 0};
  put(s, "label", CT_INT64, CT_DIMS(2), bad);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "nll_loss", "'label'", "holds 2", "[0, 2)", NULL);
  put(s, "label", CT_INT64, CT_DIMS(2), lab);
  ck_assert_int_eq(ct_op_set_attr_string(op, "reduction", "avg"), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "reduction", "\"avg\"", NULL);
  ct_op_free(op);
  op = nll_op("none", false);
  static const int64_t lab3[] = {1, 0, 1};
  put(s, "label", CT_INT64, CT_DIMS(3), lab3);
  run_fails(op, s, CT_ERR_SHAPE, "nll_loss", "'label'", "[N, d...]", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(layer_norm_stats_keeps_dims) {
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT64, CT_DIMS(2, 2), x22);
  static const double m[] = {1.5, 3.5}, v[] = {0.25, 3};
  put(s, "m", CT_FLOAT64, CT_DIMS(2), m);
  put(s, "v", CT_FLOAT64, CT_DIMS(2), v);
  ct_op *op = new_op("layer_norm_stats");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Mean", "m"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Variance", "v"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "MeanOut", "mo"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "InvStdDev", "inv"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "begin_norm_axis", -1), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "epsilon", 0.0), CT_OK);
  run(op, s);
  check_f64(s, "mo", CT_DIMS(2, 1), m, 2);
  check_f64(s, "inv", CT_DIMS(2, 1), (const double[]){2, 1 / sqrt(3)}, 2);
  put(s, "v", CT_FLOAT64, CT_DIMS(1), v);
  run_fails(op, s, CT_ERR_SHAPE, "Variance", "'v'", "[2]", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- Gradients ------------------------------------------------------------------------------------- */

static void dim1(ct_op *op) {
  static const int64_t d1[] = {1};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", d1, 1), CT_OK);
}

static void keep_all(ct_op *op) { ck_assert_int_eq(ct_op_set_attr_bool(op, "keep_dim", true), CT_OK); }

START_TEST(reduction_grads) {
  static const char *const types[] = {
      "reduce_sum_axes", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
      "reduce_l1",       "reduce_l2",   "reduce_log_sum", "reduce_log_sum_exp",
      "reduce_sum_square"};
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
    check_x_grad(types[k], dim1, CT_DIMS(2, 3, 2));
    check_x_grad(types[k], keep_all, CT_DIMS(3, 2));
  }
}
END_TEST

static void axis1(ct_op *op) { ck_assert_int_eq(ct_op_set_attr_int(op, "axis", 1), CT_OK); }
static void coerce1(ct_op *op) {
  axis1(op);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "coerce_2d", true), CT_OK);
}

START_TEST(softmax_row_grads) {
  check_x_grad("log_softmax", axis1, CT_DIMS(2, 3, 2));
  check_x_grad("log_softmax", coerce1, CT_DIMS(2, 3, 2));
  check_x_grad("softmax_v2", axis1, CT_DIMS(2, 3, 2));
  check_x_grad("softmax_v2", coerce1, CT_DIMS(2, 3, 2));
}
END_TEST

static const char *nll_reduction;

static void build_nll(ct_program *p) {
  ct_op *op = nll_op(nll_reduction, true);
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

START_TEST(nll_loss_grads) {
  static const char *const just_x[] = {"x"};
  static const char *const reds[] = {"none", "sum", "mean"};
  static const int64_t lab[] = {1, 0, -1, 2, 2, 0}; /* [2, 3]: N 2, d 3; one ignored */
  for (int r = 0; r < 3; r++) {
    ct_scope *s = ct_scope_new();
    put_smooth(s, "x", CT_DIMS(2, 3, 3), 0.1);
    put_smooth(s, "w", CT_DIMS(3), 0.7);
    put(s, "label", CT_INT64, CT_DIMS(2, 3), lab);
    nll_reduction = reds[r];
    check_grads(s, build_nll, "loss", just_x, 1);
    ct_scope_free(s);
  }
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("ops_reduce_ext");
  CT_ADD_TEST(s, reductions_over_one_dim);
  CT_ADD_TEST(s, reduction_axes_input);
  CT_ADD_TEST(s, integer_reductions);
  CT_ADD_TEST(s, reduction_refusals);
  CT_ADD_TEST(s, arg_extremes);
  CT_ADD_TEST(s, softmax_rows);
  CT_ADD_TEST(s, nll_loss_reductions);
  CT_ADD_TEST(s, layer_norm_stats_keeps_dims);
  CT_ADD_TEST(s, reduction_grads);
  CT_ADD_TEST(s, softmax_row_grads);
  CT_ADD_TEST(s, nll_loss_grads);
  return s;
}

CT_TEST_MAIN(make_suite)
