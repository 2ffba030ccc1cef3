/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the math family (ops/defs/math.c) on the CPU: the unary formulas and their integer
 * kernels (wrapping abs and neg, round half to even), max/min with NaN and broadcasting, mod and
 * fmod signs, pow of mixed dtypes, comparisons, logic, shifts, where, clip (attributes and
 * inputs), prelu, isinf/isnan and cast_like, each on small hand-computed cases; the refusals
 * with their status and words; then the gradients against float64 central differences
 * (grad_util.h's check_grads). Each test runs in its own process. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "grad_util.h"
#include "op_util.h"

/* Puts n values v (exact in dt; NaN only for float32 and float64) as dims into name. */
static void put_vals(ct_scope *s, const char *name, ct_dtype dt, ct_ddim dims, const double *v) {
  int64_t n = ct_ddim_numel(dims);
  void *p = xmalloc(n, 8);
  for (int64_t i = 0; i < n; i++) {
    if (v[i] == v[i]) set_elem(p, dt, i, v[i]);
    else if (dt == CT_FLOAT32) ((float *)p)[i] = NAN; /* set_elem checks v == v */
    else ((double *)p)[i] = NAN;
  }
  put(s, name, dt, dims, p);
  free(p);
}

/* Checks that name has dims and dtype dt and holds want exactly (NaN matching NaN). */
static void expect(ct_scope *s, const char *name, ct_dtype dt, ct_ddim dims, const double *want) {
  const void *p = result(s, name, dt, dims);
  for (int64_t i = 0, n = ct_ddim_numel(dims); i < n; i++) {
    double got = get_elem(p, dt, i);
    ck_assert_msg(got == want[i] || (got != got && want[i] != want[i]),
                  "%s element %lld: %.17g, expected %.17g", name, (long long)i, got, want[i]);
  }
}

/* Runs unary `type` over x (dt, [n]) and checks Out (dtype odt) against want. */
static void unary_case(const char *type, ct_dtype dt, ct_dtype odt, int n, const double *x,
                       const double *want, ct_op *op) {
  ct_scope *s = ct_scope_new();
  put_vals(s, "x", dt, CT_DIMS(n), x);
  if (op == NULL) op = op_x(type, "x", "out");
  run(op, s);
  expect(s, "out", odt, CT_DIMS(n), want);
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(sqrt_floor_ceil_round) {
  unary_case("sqrt", CT_FLOAT32, CT_FLOAT32, 3, (double[]){4, 9, 0.25}, (double[]){2, 3, 0.5},
             NULL);
  unary_case("floor", CT_FLOAT64, CT_FLOAT64, 3, (double[]){1.5, -1.5, 2},
             (double[]){1, -2, 2}, NULL);
  unary_case("ceil", CT_FLOAT16, CT_FLOAT16, 3, (double[]){1.5, -1.5, 2}, (double[]){2, -1, 2},
             NULL);
  /* Half to even, as ONNX's Round. */
  unary_case("round", CT_FLOAT32, CT_FLOAT32, 5, (double[]){0.5, 1.5, 2.5, -2.5, 2.25},
             (double[]){0, 2, 2, -2, 2}, NULL);
}
END_TEST

START_TEST(abs_neg_sign_integers_wrap) {
  unary_case("abs", CT_INT8, CT_INT8, 3, (double[]){-128, -5, 7}, (double[]){-128, 5, 7}, NULL);
  unary_case("neg", CT_INT8, CT_INT8, 3, (double[]){-128, -5, 7}, (double[]){-128, 5, -7}, NULL);
  unary_case("neg", CT_INT64, CT_INT64, 2, (double[]){3, 0}, (double[]){-3, 0}, NULL);
  unary_case("sign", CT_INT32, CT_INT32, 3, (double[]){-9, 0, 4}, (double[]){-1, 0, 1}, NULL);
  unary_case("sign", CT_FLOAT64, CT_FLOAT64, 3, (double[]){-0.5, 0, NAN},
             (double[]){-1, 0, NAN}, NULL);
}
END_TEST

START_TEST(activations_with_attributes) {
  ct_op *op = op_x("leaky_relu", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_float(op, "alpha", 0.5), CT_OK);
  unary_case("leaky_relu", CT_FLOAT32, CT_FLOAT32, 3, (double[]){-2, 0, 3},
             (double[]){-1, 0, 3}, op);
  op = op_x("hard_sigmoid", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_float(op, "slope", 0.5), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "offset", 0.5), CT_OK);
  unary_case("hard_sigmoid", CT_FLOAT64, CT_FLOAT64, 3, (double[]){-4, 0.5, 4},
             (double[]){0, 0.75, 1}, op);
  op = op_x("thresholded_relu", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_float(op, "threshold", 2), CT_OK);
  unary_case("thresholded_relu", CT_FLOAT32, CT_FLOAT32, 3, (double[]){1, 2, 3},
             (double[]){0, 0, 3}, op);
  op = op_x("shrink", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_float(op, "lambda", 1), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "bias", 0.5), CT_OK);
  unary_case("shrink", CT_FLOAT64, CT_FLOAT64, 4, (double[]){-2, -1, 0.5, 3},
             (double[]){-1.5, 0, 0, 2.5}, op);
  /* hard_swish's defaults: x relu6(x + 3) / 6. */
  unary_case("hard_swish", CT_FLOAT64, CT_FLOAT64, 3, (double[]){-4, 3, 6}, (double[]){0, 3, 6},
             NULL);
  unary_case("softsign", CT_FLOAT64, CT_FLOAT64, 2, (double[]){1, -3}, (double[]){0.5, -0.75},
             NULL);
  op = op_x("elu", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_float(op, "alpha", 2), CT_OK);
  unary_case("elu", CT_FLOAT64, CT_FLOAT64, 2, (double[]){3, -INFINITY}, (double[]){3, -2}, op);
}
END_TEST

START_TEST(isinf_isnan_logical_not) {
  ct_op *op = op_x("isinf", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_bool(op, "detect_negative", false), CT_OK);
  unary_case("isinf", CT_FLOAT32, CT_BOOL, 4, (double[]){INFINITY, -INFINITY, 1, NAN},
             (double[]){1, 0, 0, 0}, op);
  unary_case("isnan", CT_FLOAT64, CT_BOOL, 3, (double[]){NAN, 1, INFINITY}, (double[]){1, 0, 0},
             NULL);
  unary_case("logical_not", CT_BOOL, CT_BOOL, 2, (double[]){1, 0}, (double[]){0, 1}, NULL);
}
END_TEST

START_TEST(float_formula_on_int_is_unsupported) {
  ct_scope *s = ct_scope_new();
  put_vals(s, "x", CT_INT32, CT_DIMS(1), (double[]){4});
  ct_op *op = op_x("sqrt", "x", "out");
  run_fails(op, s, CT_ERR_UNSUPPORTED, "sqrt", "int32", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* Runs binary `type` on x [xd] and y [yd] (dtypes dx, dy) and checks Out [od] of dtype odt. */
static void binary_case(const char *type, ct_dtype dx, ct_ddim xd, const double *x, ct_dtype dy,
                        ct_ddim yd, const double *y, ct_dtype odt, ct_ddim od,
                        const double *want) {
  ct_scope *s = ct_scope_new();
  put_vals(s, "x", dx, xd, x);
  put_vals(s, "y", dy, yd, y);
  ct_op *op = op_xy(type, "x", "y", "out");
  run(op, s);
  expect(s, "out", odt, od, want);
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(max_min_broadcast_and_nan) {
  binary_case("elementwise_max", CT_INT32, CT_DIMS(2, 2), (double[]){1, 5, -3, 2}, CT_INT32,
              CT_DIMS(2), (double[]){2, 3}, CT_INT32, CT_DIMS(2, 2), (double[]){2, 5, 2, 3});
  binary_case("elementwise_min", CT_INT8, CT_DIMS(2, 1), (double[]){1, -4}, CT_INT8, CT_DIMS(3),
              (double[]){0, 2, -5}, CT_INT8, CT_DIMS(2, 3), (double[]){0, 1, -5, -4, -4, -5});
  binary_case("elementwise_max", CT_FLOAT32, CT_DIMS(2), (double[]){NAN, 1}, CT_FLOAT32,
              CT_DIMS(2), (double[]){1, NAN}, CT_FLOAT32, CT_DIMS(2), (double[]){NAN, NAN});
  binary_case("elementwise_min", CT_FLOAT16, CT_DIMS(2), (double[]){0.5, 3}, CT_FLOAT16,
              CT_DIMS(), (double[]){1}, CT_FLOAT16, CT_DIMS(2), (double[]){0.5, 1});
}
END_TEST

START_TEST(mod_takes_divisor_sign_fmod_dividend) {
  const double x[] = {-7, 7, -7, 7}, y[] = {3, -3, -3, 3};
  binary_case("elementwise_mod", CT_INT32, CT_DIMS(4), x, CT_INT32, CT_DIMS(4), y, CT_INT32,
              CT_DIMS(4), (double[]){2, -2, -1, 1});
  binary_case("elementwise_fmod", CT_INT64, CT_DIMS(4), x, CT_INT64, CT_DIMS(4), y, CT_INT64,
              CT_DIMS(4), (double[]){-1, 1, -1, 1});
  binary_case("elementwise_mod", CT_FLOAT64, CT_DIMS(4), x, CT_FLOAT64, CT_DIMS(4), y,
              CT_FLOAT64, CT_DIMS(4), (double[]){2, -2, -1, 1});
  binary_case("elementwise_fmod", CT_FLOAT32, CT_DIMS(2), (double[]){-5.5, 5.5}, CT_FLOAT32,
              CT_DIMS(), (double[]){2}, CT_FLOAT32, CT_DIMS(2), (double[]){-1.5, 1.5});
  /* The smallest value mod -1 is 0, not a trap. */
  binary_case("elementwise_mod", CT_INT8, CT_DIMS(1), (double[]){-128}, CT_INT8, CT_DIMS(1),
              (double[]){-1}, CT_INT8, CT_DIMS(1), (double[]){0});
}
END_TEST

START_TEST(integer_mod_by_zero_is_refused) {
  ct_scope *s = ct_scope_new();
  put_vals(s, "x", CT_INT16, CT_DIMS(2), (double[]){1, 2});
  put_vals(s, "y", CT_INT16, CT_DIMS(2), (double[]){3, 0});
  ct_op *op = op_xy("elementwise_mod", "x", "y", "out");
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "elementwise_mod", "'y'", "element 1",
            "division by zero", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(pow_of_mixed_dtypes) {
  binary_case("elementwise_pow", CT_INT32, CT_DIMS(3), (double[]){2, 3, -2}, CT_INT32,
              CT_DIMS(3), (double[]){3, 2, 3}, CT_INT32, CT_DIMS(3), (double[]){8, 9, -8});
  binary_case("elementwise_pow", CT_FLOAT32, CT_DIMS(2), (double[]){2, 4}, CT_INT64, CT_DIMS(),
              (double[]){-1}, CT_FLOAT32, CT_DIMS(2), (double[]){0.5, 0.25});
  binary_case("elementwise_pow", CT_INT64, CT_DIMS(2), (double[]){4, 9}, CT_FLOAT32, CT_DIMS(),
              (double[]){0.5}, CT_INT64, CT_DIMS(2), (double[]){2, 3});
  /* A negative integer power truncates 1 / x^n: 1 and -1 stay, others give 0. */
  binary_case("elementwise_pow", CT_INT32, CT_DIMS(3), (double[]){1, -1, 2}, CT_INT32, CT_DIMS(),
              (double[]){-3}, CT_INT32, CT_DIMS(3), (double[]){1, -1, 0});
}
END_TEST

/* A power of 2 is the square correctly rounded (x * x in double, rounded once to the dtype;
 * decomposed_layer_norm relies on the same rule): 1 + 2^-52 squared is 1 + 2^-51 (the exact
 * square's 2^-104 rounds away), an infinity of either sign gives +inf, NaN stays NaN. */
START_TEST(pow_squares_are_correctly_rounded) {
  const double e = 0x1p-52, f = (double)0.1f;
  binary_case("elementwise_pow", CT_FLOAT64, CT_DIMS(5), (double[]){1 + e, -3, -INFINITY, NAN, 0.1},
              CT_FLOAT64, CT_DIMS(), (double[]){2}, CT_FLOAT64, CT_DIMS(5),
              (double[]){1 + 2 * e, 9, INFINITY, NAN, 0.1 * 0.1});
  binary_case("elementwise_pow", CT_FLOAT32, CT_DIMS(2), (double[]){f, -1.5}, CT_FLOAT32,
              CT_DIMS(1), (double[]){2}, CT_FLOAT32, CT_DIMS(2),
              (double[]){(double)(float)(f * f), 2.25});
}
END_TEST

START_TEST(pow_integer_zero_to_negative_is_refused) {
  ct_scope *s = ct_scope_new();
  put_vals(s, "x", CT_INT32, CT_DIMS(2), (double[]){2, 0});
  put_vals(s, "y", CT_INT32, CT_DIMS(), (double[]){-1});
  ct_op *op = op_xy("elementwise_pow", "x", "y", "out");
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "elementwise_pow", "'x'", "negative power",
            "element 1", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(comparisons_give_bool) {
  const double x[] = {1, 2, 3};
  const double two[] = {2};
  binary_case("less_than", CT_FLOAT32, CT_DIMS(3), x, CT_FLOAT32, CT_DIMS(1), two, CT_BOOL,
              CT_DIMS(3), (double[]){1, 0, 0});
  binary_case("less_equal", CT_INT64, CT_DIMS(3), x, CT_INT64, CT_DIMS(1), two, CT_BOOL,
              CT_DIMS(3), (double[]){1, 1, 0});
  binary_case("greater_than", CT_INT8, CT_DIMS(3), x, CT_INT8, CT_DIMS(1), two, CT_BOOL,
              CT_DIMS(3), (double[]){0, 0, 1});
  binary_case("greater_equal", CT_FLOAT16, CT_DIMS(3), x, CT_FLOAT16, CT_DIMS(1), two, CT_BOOL,
              CT_DIMS(3), (double[]){0, 1, 1});
  binary_case("equal", CT_INT32, CT_DIMS(3), x, CT_INT32, CT_DIMS(1), two, CT_BOOL, CT_DIMS(3),
              (double[]){0, 1, 0});
  binary_case("not_equal", CT_FLOAT64, CT_DIMS(2), (double[]){NAN, 2}, CT_FLOAT64, CT_DIMS(2),
              (double[]){NAN, 2}, CT_BOOL, CT_DIMS(2), (double[]){1, 0});
  binary_case("equal", CT_BOOL, CT_DIMS(2), (double[]){1, 0}, CT_BOOL, CT_DIMS(2),
              (double[]){1, 1}, CT_BOOL, CT_DIMS(2), (double[]){1, 0});
}
END_TEST

START_TEST(logic_and_shifts) {
  const double a[] = {0, 0, 1, 1}, b[] = {0, 1, 0, 1};
  binary_case("logical_and", CT_BOOL, CT_DIMS(4), a, CT_BOOL, CT_DIMS(4), b, CT_BOOL, CT_DIMS(4),
              (double[]){0, 0, 0, 1});
  binary_case("logical_or", CT_BOOL, CT_DIMS(4), a, CT_BOOL, CT_DIMS(4), b, CT_BOOL, CT_DIMS(4),
              (double[]){0, 1, 1, 1});
  binary_case("logical_xor", CT_BOOL, CT_DIMS(2, 2), a, CT_BOOL, CT_DIMS(2), (double[]){1, 0},
              CT_BOOL, CT_DIMS(2, 2), (double[]){1, 0, 0, 1});
  binary_case("bitwise_left_shift", CT_UINT8, CT_DIMS(3), (double[]){1, 255, 3}, CT_UINT8,
              CT_DIMS(3), (double[]){1, 1, 8}, CT_UINT8, CT_DIMS(3), (double[]){2, 254, 0});
  binary_case("bitwise_right_shift", CT_UINT8, CT_DIMS(2), (double[]){16, 255}, CT_UINT8,
              CT_DIMS(2), (double[]){2, 9}, CT_UINT8, CT_DIMS(2), (double[]){4, 0});
}
END_TEST

START_TEST(binary_refusals) {
  ct_scope *s = ct_scope_new();
  put_vals(s, "x", CT_INT32, CT_DIMS(2), (double[]){1, 2});
  put_vals(s, "y", CT_INT64, CT_DIMS(2), (double[]){1, 2});
  put_vals(s, "z", CT_INT32, CT_DIMS(3), (double[]){1, 2, 3});
  ct_op *op = op_xy("elementwise_max", "x", "y", "out");
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "elementwise_max", "'y'", "int64", "cast", NULL);
  ct_op_free(op);
  op = op_xy("less_than", "x", "z", "out");
  run_fails(op, s, CT_ERR_SHAPE, "less_than", "'x'", "'z'", "do not broadcast", NULL);
  ct_op_free(op);
  op = op_xy("logical_and", "x", "x", "out");
  run_fails(op, s, CT_ERR_UNSUPPORTED, "logical_and", "int32", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(where_broadcasts_three_inputs) {
  ct_scope *s = ct_scope_new();
  put_vals(s, "c", CT_BOOL, CT_DIMS(2, 1), (double[]){1, 0});
  put_vals(s, "x", CT_INT64, CT_DIMS(3), (double[]){1, 2, 3});
  put_vals(s, "y", CT_INT64, CT_DIMS(), (double[]){-1});
  ct_op *op = new_op("where");
  ck_assert_int_eq(ct_op_set_input(op, "Condition", "c"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Y", "y"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "out"), CT_OK);
  run(op, s);
  expect(s, "out", CT_INT64, CT_DIMS(2, 3), (double[]){1, 2, 3, -1, -1, -1});
  ck_assert_int_eq(ct_op_set_input(op, "Condition", "x"), CT_OK);
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "where", "Condition", "'x'", "bool", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(clip_attributes_and_inputs) {
  ct_scope *s = ct_scope_new();
  put_vals(s, "x", CT_INT8, CT_DIMS(4), (double[]){-100, -1, 0, 100});
  ct_op *op = op_x("clip", "x", "out");
  /* An integer X keeps what lies inside the real bounds: min -1.5 becomes -1, max 2.5 2. */
  ck_assert_int_eq(ct_op_set_attr_float(op, "min", -1.5), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "max", 2.5), CT_OK);
  run(op, s);
  expect(s, "out", CT_INT8, CT_DIMS(4), (double[]){-1, -1, 0, 2});
  ct_op_free(op);
  /* Inputs Min and Max override; min > max gives max; NaN stays. */
  put_vals(s, "f", CT_FLOAT32, CT_DIMS(3), (double[]){-3, 0.5, NAN});
  put_vals(s, "lo", CT_FLOAT32, CT_DIMS(1), (double[]){0});
  put_vals(s, "hi", CT_FLOAT32, CT_DIMS(), (double[]){1});
  op = op_x("clip", "f", "out");
  ck_assert_int_eq(ct_op_set_input(op, "Min", "lo"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Max", "hi"), CT_OK);
  run(op, s);
  expect(s, "out", CT_FLOAT32, CT_DIMS(3), (double[]){0, 0.5, NAN});
  ct_op_free(op);
  op = op_x("clip", "f", "out");
  ck_assert_int_eq(ct_op_set_attr_float(op, "min", 2), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "max", 1), CT_OK);
  run(op, s);
  expect(s, "out", CT_FLOAT32, CT_DIMS(3), (double[]){1, 1, NAN});
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(clip_refusals) {
  ct_scope *s = ct_scope_new();
  put_vals(s, "x", CT_FLOAT32, CT_DIMS(2), (double[]){1, 2});
  put_vals(s, "two", CT_FLOAT32, CT_DIMS(2), (double[]){0, 1});
  put_vals(s, "i", CT_INT32, CT_DIMS(1), (double[]){0});
  ct_op *op = op_x("clip", "x", "out");
  ck_assert_int_eq(ct_op_set_input(op, "Min", "two"), CT_OK);
  run_fails(op, s, CT_ERR_SHAPE, "clip", "Min", "'two'", "one element", NULL);
  ck_assert_int_eq(ct_op_set_input(op, "Min", "i"), CT_OK);
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "clip", "'i'", "int32", NULL);
  ct_op_free(op);
  op = op_x("clip", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_float(op, "max", NAN), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "clip", "NaN", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(prelu_broadcasts_alpha) {
  ct_scope *s = ct_scope_new();
  put_vals(s, "x", CT_FLOAT32, CT_DIMS(2, 2), (double[]){-2, 3, -4, 0});
  put_vals(s, "a", CT_FLOAT32, CT_DIMS(2, 1), (double[]){0.5, 0.25});
  ct_op *op = new_op("prelu");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Alpha", "a"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "out"), CT_OK);
  run(op, s);
  expect(s, "out", CT_FLOAT32, CT_DIMS(2, 2), (double[]){-1, 3, -1, 0});
  /* Alpha may not make Out larger than X. */
  put_vals(s, "big", CT_FLOAT32, CT_DIMS(3, 2, 2), (double[]){1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1});
  ck_assert_int_eq(ct_op_set_input(op, "Alpha", "big"), CT_OK);
  run_fails(op, s, CT_ERR_SHAPE, "prelu", "'big'", "broadcast to X", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(cast_like_takes_like_dtype) {
  ct_scope *s = ct_scope_new();
  put_vals(s, "x", CT_FLOAT64, CT_DIMS(3), (double[]){-1.75, 2.5, 300});
  put_vals(s, "like", CT_INT8, CT_DIMS(), (double[]){0});
  ct_op *op = new_op("cast_like");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Like", "like"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "out"), CT_OK);
  run(op, s);
  /* corten's cast rules: toward zero, saturated. */
  expect(s, "out", CT_INT8, CT_DIMS(3), (double[]){-1, 2, 127});
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- Gradients ----------------------------------------------------------------------------- */

static double shift_by;
static void shifted(ct_scope *s, const char *name, ct_ddim dims, double seed) {
  put_smooth(s, name, dims, seed);
  ct_tensor *t = ct_var_tensor(ct_scope_find_var(s, name));
  double *v = ct_tensor_mutable_data(t, CT_FLOAT64, ct_cpu());
  for (int64_t i = 0; i < ct_tensor_numel(t); i++) v[i] += shift_by;
}

static const char *g_type;
static void (*g_attrs)(ct_op *op);
static void build_unary(ct_program *p) {
  ct_op *op = op_x(g_type, "x", "out");
  if (g_attrs != NULL) g_attrs(op);
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

/* d loss / dx of unary type (attrs set by attrs) at put_smooth's values plus shift. */
static void unary_grad(const char *type, void (*attrs)(ct_op *op), double shift) {
  static const char *const just_x[] = {"x"};
  ct_scope *s = ct_scope_new();
  shift_by = shift;
  shifted(s, "x", CT_DIMS(2, 3), 0.1);
  g_type = type;
  g_attrs = attrs;
  check_grads(s, build_unary, "loss", just_x, 1);
  ct_scope_free(s);
}

static void alpha_half(ct_op *op) { ck_assert_int_eq(ct_op_set_attr_float(op, "alpha", 0.5), CT_OK); }
static void small_lambda(ct_op *op) {
  ck_assert_int_eq(ct_op_set_attr_float(op, "lambda", 0.2), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "bias", 0.1), CT_OK);
}

START_TEST(unary_gradients) {
  /* put_smooth's values lie in [-0.4, 1]: shifted where a function needs its domain. */
  unary_grad("sqrt", NULL, 1);
  unary_grad("reciprocal", NULL, 1);
  unary_grad("abs", NULL, 0);
  unary_grad("neg", NULL, 0);
  unary_grad("erf", NULL, 0);
  static const char *const plain[] = {"sin", "cos", "tan", "atan", "sinh", "cosh", "asinh",
                                      "softplus", "softsign", "selu", "elu", "leaky_relu",
                                      "hard_sigmoid", "hard_swish"};
  for (size_t k = 0; k < sizeof plain / sizeof plain[0]; k++) unary_grad(plain[k], NULL, 0);
  unary_grad("asin", NULL, -0.2);
  unary_grad("acos", NULL, -0.2);
  unary_grad("atanh", NULL, -0.2);
  unary_grad("acosh", NULL, 1.5);
  unary_grad("celu", alpha_half, 0);
  unary_grad("thresholded_relu", NULL, 0.5);
  unary_grad("shrink", small_lambda, 0);
}
END_TEST

static void build_binary(ct_program *p) {
  ck_assert_int_eq(ct_program_append(p, op_xy(g_type, "x", "y", "out")), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

START_TEST(binary_gradients_sum_back_over_broadcast) {
  static const char *const xy[] = {"x", "y"};
  static const char *const types[] = {"elementwise_max", "elementwise_min", "elementwise_pow"};
  for (size_t k = 0; k < 3; k++) {
    ct_scope *s = ct_scope_new();
    shift_by = 1; /* pow's base stays positive */
    shifted(s, "x", CT_DIMS(2, 3), 0.1);
    shifted(s, "y", CT_DIMS(3), 2.0);
    g_type = types[k];
    check_grads(s, build_binary, "loss", xy, 2);
    ct_scope_free(s);
  }
}
END_TEST

static void build_where(ct_program *p) {
  ct_op *op = new_op("where");
  ck_assert_int_eq(ct_op_set_input(op, "Condition", "c"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Y", "y"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "out"), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

static void build_clip(ct_program *p) {
  ct_op *op = op_x("clip", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_float(op, "min", 0), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Max", "hi"), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

static void build_prelu(ct_program *p) {
  ct_op *op = new_op("prelu");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Alpha", "y"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "out"), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

START_TEST(where_clip_prelu_gradients) {
  static const char *const xy[] = {"x", "y"}, *const just_x[] = {"x"};
  ct_scope *s = ct_scope_new();
  shift_by = 0;
  put_vals(s, "c", CT_BOOL, CT_DIMS(2, 1), (double[]){1, 0});
  shifted(s, "x", CT_DIMS(3), 0.1);
  shifted(s, "y", CT_DIMS(2, 3), 2.0);
  check_grads(s, build_where, "loss", xy, 2);
  put_vals(s, "hi", CT_FLOAT64, CT_DIMS(), (double[]){0.7});
  check_grads(s, build_clip, "loss", just_x, 1);
  ct_scope_free(s);
  s = ct_scope_new();
  shifted(s, "x", CT_DIMS(2, 3), 0.1);
  shifted(s, "y", CT_DIMS(3), 2.0);
  check_grads(s, build_prelu, "loss", xy, 2);
  ct_scope_free(s);
}
END_TEST

static Suite *ops_math_suite(void) {
  Suite *s = suite_create("ops_math");
  CT_ADD_TEST(s, sqrt_floor_ceil_round);
  CT_ADD_TEST(s, abs_neg_sign_integers_wrap);
  CT_ADD_TEST(s, activations_with_attributes);
  CT_ADD_TEST(s, isinf_isnan_logical_not);
  CT_ADD_TEST(s, float_formula_on_int_is_unsupported);
  CT_ADD_TEST(s, max_min_broadcast_and_nan);
  CT_ADD_TEST(s, mod_takes_divisor_sign_fmod_dividend);
  CT_ADD_TEST(s, integer_mod_by_zero_is_refused);
  CT_ADD_TEST(s, pow_of_mixed_dtypes);
  CT_ADD_TEST(s, pow_squares_are_correctly_rounded);
  CT_ADD_TEST(s, pow_integer_zero_to_negative_is_refused);
  CT_ADD_TEST(s, comparisons_give_bool);
  CT_ADD_TEST(s, logic_and_shifts);
  CT_ADD_TEST(s, binary_refusals);
  CT_ADD_TEST(s, where_broadcasts_three_inputs);
  CT_ADD_TEST(s, clip_attributes_and_inputs);
  CT_ADD_TEST(s, clip_refusals);
  CT_ADD_TEST(s, prelu_broadcasts_alpha);
  CT_ADD_TEST(s, cast_like_takes_like_dtype);
  CT_ADD_TEST(s, unary_gradients);
  CT_ADD_TEST(s, binary_gradients_sum_back_over_broadcast);
  CT_ADD_TEST(s, where_clip_prelu_gradients);
  return s;
}

CT_TEST_MAIN(ops_math_suite)
