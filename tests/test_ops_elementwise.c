/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the elementwise binary ops on the CPU (elementwise_add, elementwise_sub,
 * elementwise_mul, elementwise_div): each against the numpy broadcast computed here element by
 * element, over shapes that include broadcasting edge cases, rank 0 and empty tensors; integer
 * arithmetic that wraps and divides toward zero; in place; and every error their kernels and
 * infer-shape function report. Each test runs in its own process. The helpers are in
 * op_util.h; the registry, the wiring errors and the executor are tested in test_op.c. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "op_util.h"

/* ---- Elementwise binary ops ------------------------------------------------------------------ */

typedef enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV } binop;

static const char *const binop_type[] = {"elementwise_add", "elementwise_sub", "elementwise_mul",
                                         "elementwise_div"};

/* Runs elementwise op o on X of dims xd and Y of dims yd (dtype dt, float32 or float64) and
 * checks Out against the broadcast computed here element by element, in the same type. */
static void check_binary(binop o, ct_dtype dt, ct_ddim xd, ct_ddim yd, ct_ddim want) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", dt, xd, data_x);
  put_fn(s, "y", dt, yd, data_y);
  ct_op *op = op_xy(binop_type[o], "x", "y", "out");
  run(op, s);
  const void *x = ct_tensor_data(tensor_of(s, "x"), dt), *y = ct_tensor_data(tensor_of(s, "y"), dt);
  const void *out = result(s, "out", dt, want);
  for (int64_t i = 0, n = ct_ddim_numel(want); i < n; i++) {
    int64_t ix = bcast_src(want, xd, i), iy = bcast_src(want, yd, i);
    if (dt == CT_FLOAT32) {
      float a = ((const float *)x)[ix], b = ((const float *)y)[iy];
      float r = o == OP_ADD ? a + b : o == OP_SUB ? a - b : o == OP_MUL ? a * b : a / b;
      ck_assert_msg(((const float *)out)[i] == r, "element %lld: %g, expected %g", (long long)i,
                    (double)((const float *)out)[i], (double)r);
    } else {
      double a = ((const double *)x)[ix], b = ((const double *)y)[iy];
      double r = o == OP_ADD ? a + b : o == OP_SUB ? a - b : o == OP_MUL ? a * b : a / b;
      ck_assert_msg(((const double *)out)[i] == r, "element %lld: %g, expected %g", (long long)i,
                    ((const double *)out)[i], r);
    }
  }
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(add_same_dims) {
  check_binary(OP_ADD, CT_FLOAT32, CT_DIMS(2, 3), CT_DIMS(2, 3), CT_DIMS(2, 3));
}
END_TEST

START_TEST(add_row_vector_broadcasts) {
  check_binary(OP_ADD, CT_FLOAT32, CT_DIMS(2, 3), CT_DIMS(3), CT_DIMS(2, 3));
}
END_TEST

START_TEST(add_column_and_row_broadcast_to_matrix) {
  check_binary(OP_ADD, CT_FLOAT32, CT_DIMS(2, 1), CT_DIMS(1, 3), CT_DIMS(2, 3));
}
END_TEST

START_TEST(add_rank3_with_rank2_broadcasts_both_ways) {
  check_binary(OP_ADD, CT_FLOAT32, CT_DIMS(4, 1, 5), CT_DIMS(3, 1), CT_DIMS(4, 3, 5));
}
END_TEST

START_TEST(add_scalar_to_matrix) {
  check_binary(OP_ADD, CT_FLOAT32, CT_DIMS(), CT_DIMS(2, 3), CT_DIMS(2, 3));
}
END_TEST

START_TEST(add_matrix_to_scalar) {
  check_binary(OP_ADD, CT_FLOAT32, CT_DIMS(2, 3), CT_DIMS(), CT_DIMS(2, 3));
}
END_TEST

START_TEST(add_scalars_gives_scalar) {
  check_binary(OP_ADD, CT_FLOAT64, CT_DIMS(), CT_DIMS(), CT_DIMS());
}
END_TEST

START_TEST(add_empty_with_row_gives_empty) {
  check_binary(OP_ADD, CT_FLOAT32, CT_DIMS(0, 3), CT_DIMS(3), CT_DIMS(0, 3));
}
END_TEST

START_TEST(add_broadcasts_size1_against_0) {
  check_binary(OP_ADD, CT_FLOAT32, CT_DIMS(2, 1), CT_DIMS(0), CT_DIMS(2, 0));
}
END_TEST

START_TEST(add_leading_ones_broadcast) {
  check_binary(OP_ADD, CT_FLOAT64, CT_DIMS(1, 1, 3), CT_DIMS(2, 1, 2, 1), CT_DIMS(2, 1, 2, 3));
}
END_TEST

START_TEST(add_noncontiguous_broadcast_rank4) {
  check_binary(OP_ADD, CT_FLOAT32, CT_DIMS(2, 1, 3, 1), CT_DIMS(1, 4, 1, 5), CT_DIMS(2, 4, 3, 5));
}
END_TEST

START_TEST(sub_broadcasts_float64) {
  check_binary(OP_SUB, CT_FLOAT64, CT_DIMS(4, 1, 5), CT_DIMS(3, 1), CT_DIMS(4, 3, 5));
}
END_TEST

START_TEST(sub_is_x_minus_y_when_x_broadcasts) {
  check_binary(OP_SUB, CT_FLOAT32, CT_DIMS(3), CT_DIMS(2, 3), CT_DIMS(2, 3));
}
END_TEST

START_TEST(mul_broadcasts) {
  check_binary(OP_MUL, CT_FLOAT32, CT_DIMS(2, 1), CT_DIMS(1, 3), CT_DIMS(2, 3));
}
END_TEST

START_TEST(div_broadcasts) {
  check_binary(OP_DIV, CT_FLOAT64, CT_DIMS(2, 3), CT_DIMS(3), CT_DIMS(2, 3));
}
END_TEST

START_TEST(div_float_by_zero_is_ieee) {
  ct_scope *s = ct_scope_new();
  float x[3] = {1, -1, 0}, y[3] = {0, 0, 0};
  put(s, "x", CT_FLOAT32, CT_DIMS(3), x);
  put(s, "y", CT_FLOAT32, CT_DIMS(3), y);
  ct_op *op = op_xy("elementwise_div", "x", "y", "out");
  run(op, s);
  const float *o = result(s, "out", CT_FLOAT32, CT_DIMS(3));
  ck_assert(isinf(o[0]) && o[0] > 0);
  ck_assert(isinf(o[1]) && o[1] < 0);
  ck_assert(isnan(o[2]));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(binary_dims_that_do_not_broadcast_are_shape_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 3), data_x);
  put_fn(s, "y", CT_FLOAT32, CT_DIMS(2), data_y);
  ct_op *op = op_xy("elementwise_mul", "x", "y", "out");
  run_fails(op, s, CT_ERR_SHAPE, "elementwise_mul", "'x'", "[2,3]", "'y'", "[2]", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(binary_dtypes_that_differ_are_type_mismatch) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(3), data_x);
  put_fn(s, "y", CT_FLOAT64, CT_DIMS(3), data_y);
  ct_op *op = op_xy("elementwise_add", "x", "y", "out");
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "elementwise_add", "'y'", "float64", "float32", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(binary_on_bool_is_unsupported) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_BOOL, CT_DIMS(3), data_zero_one);
  put_fn(s, "y", CT_BOOL, CT_DIMS(3), data_zero_one);
  ct_op *op = op_xy("elementwise_add", "x", "y", "out");
  run_fails(op, s, CT_ERR_UNSUPPORTED, "elementwise_add", "bool", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(add_in_place_writes_x) {
  ct_scope *s = ct_scope_new();
  float x[3] = {1, 2, 3}, y[3] = {10, 20, 30};
  put(s, "x", CT_FLOAT32, CT_DIMS(3), x);
  put(s, "y", CT_FLOAT32, CT_DIMS(3), y);
  ct_op *op = op_xy("elementwise_add", "x", "y", "x");
  run(op, s);
  const float *o = result(s, "x", CT_FLOAT32, CT_DIMS(3));
  ck_assert(o[0] == 11 && o[1] == 22 && o[2] == 33);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(add_in_place_may_grow_x_by_broadcasting) {
  ct_scope *s = ct_scope_new();
  float x[3] = {1, 2, 3}, y[2] = {10, 20};
  put(s, "x", CT_FLOAT32, CT_DIMS(3), x);
  put(s, "y", CT_FLOAT32, CT_DIMS(2, 1), y);
  ct_op *op = op_xy("elementwise_add", "x", "y", "x");
  run(op, s);
  const float *o = result(s, "x", CT_FLOAT32, CT_DIMS(2, 3));
  const float want[6] = {11, 12, 13, 21, 22, 23};
  for (int i = 0; i < 6; i++) ck_assert(o[i] == want[i]);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* Integer arithmetic wraps (two's complement), as the header of elementwise.c says. */
START_TEST(int32_add_sub_mul_wrap) {
  ct_scope *s = ct_scope_new();
  int32_t x[3] = {INT32_MAX, INT32_MIN, 65536}, y[3] = {1, 1, 65536};
  put(s, "x", CT_INT32, CT_DIMS(3), x);
  put(s, "y", CT_INT32, CT_DIMS(3), y);
  ct_op *add = op_xy("elementwise_add", "x", "y", "add");
  ct_op *sub = op_xy("elementwise_sub", "x", "y", "sub");
  ct_op *mul = op_xy("elementwise_mul", "x", "y", "mul");
  run(add, s);
  run(sub, s);
  run(mul, s);
  const int32_t *a = result(s, "add", CT_INT32, CT_DIMS(3));
  const int32_t *b = result(s, "sub", CT_INT32, CT_DIMS(3));
  const int32_t *m = result(s, "mul", CT_INT32, CT_DIMS(3));
  ck_assert_int_eq(a[0], INT32_MIN);
  ck_assert_int_eq(a[2], 131072);
  ck_assert_int_eq(b[1], INT32_MAX);
  ck_assert_int_eq(m[2], 0); /* 2^32 wraps to 0 */
  ck_assert_int_eq(m[0], INT32_MAX);
  ct_op_free(add);
  ct_op_free(sub);
  ct_op_free(mul);
  ct_scope_free(s);
}
END_TEST

START_TEST(int64_add_wraps_and_broadcasts) {
  ct_scope *s = ct_scope_new();
  int64_t x[2] = {INT64_MAX, -5}, y[1] = {1};
  put(s, "x", CT_INT64, CT_DIMS(2), x);
  put(s, "y", CT_INT64, CT_DIMS(), y);
  ct_op *op = op_xy("elementwise_add", "x", "y", "out");
  run(op, s);
  const int64_t *o = result(s, "out", CT_INT64, CT_DIMS(2));
  ck_assert(o[0] == INT64_MIN);
  ck_assert(o[1] == -4);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(int_div_truncates_toward_zero) {
  ct_scope *s = ct_scope_new();
  int32_t x[5] = {7, -7, 7, -7, INT32_MIN}, y[5] = {2, 2, -2, -2, -1};
  put(s, "x", CT_INT32, CT_DIMS(5), x);
  put(s, "y", CT_INT32, CT_DIMS(5), y);
  ct_op *op = op_xy("elementwise_div", "x", "y", "out");
  run(op, s);
  const int32_t *o = result(s, "out", CT_INT32, CT_DIMS(5));
  ck_assert_int_eq(o[0], 3);
  ck_assert_int_eq(o[1], -3);
  ck_assert_int_eq(o[2], -3);
  ck_assert_int_eq(o[3], 3);
  ck_assert_int_eq(o[4], INT32_MIN); /* MIN / -1 wraps */
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(int64_div_min_by_minus_one_wraps) {
  ct_scope *s = ct_scope_new();
  int64_t x[2] = {INT64_MIN, 9}, y[2] = {-1, 4};
  put(s, "x", CT_INT64, CT_DIMS(2), x);
  put(s, "y", CT_INT64, CT_DIMS(2), y);
  ct_op *op = op_xy("elementwise_div", "x", "y", "out");
  run(op, s);
  const int64_t *o = result(s, "out", CT_INT64, CT_DIMS(2));
  ck_assert(o[0] == INT64_MIN);
  ck_assert(o[1] == 2);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(int32_div_by_zero_is_an_error_and_writes_nothing) {
  ct_scope *s = ct_scope_new();
  int32_t x[3] = {1, 2, 3}, y[3] = {1, 0, 1};
  put(s, "x", CT_INT32, CT_DIMS(3), x);
  put(s, "y", CT_INT32, CT_DIMS(3), y);
  ct_op *op = op_xy("elementwise_div", "x", "y", "out");
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "elementwise_div", "'y'", "element 1", "zero", NULL);
  ck_assert(!ct_tensor_has_memory(tensor_of(s, "out")));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(int64_div_by_broadcast_zero_is_an_error) {
  ct_scope *s = ct_scope_new();
  int64_t x[3] = {1, 2, 3}, y[1] = {0};
  put(s, "x", CT_INT64, CT_DIMS(3), x);
  put(s, "y", CT_INT64, CT_DIMS(), y);
  ct_op *op = op_xy("elementwise_div", "x", "y", "out");
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "'y'", "element 0", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static Suite *ops_elementwise_suite(void) {
  Suite *s = suite_create("ops_elementwise");
  CT_ADD_TEST(s, add_same_dims);
  CT_ADD_TEST(s, add_row_vector_broadcasts);
  CT_ADD_TEST(s, add_column_and_row_broadcast_to_matrix);
  CT_ADD_TEST(s, add_rank3_with_rank2_broadcasts_both_ways);
  CT_ADD_TEST(s, add_scalar_to_matrix);
  CT_ADD_TEST(s, add_matrix_to_scalar);
  CT_ADD_TEST(s, add_scalars_gives_scalar);
  CT_ADD_TEST(s, add_empty_with_row_gives_empty);
  CT_ADD_TEST(s, add_broadcasts_size1_against_0);
  CT_ADD_TEST(s, add_leading_ones_broadcast);
  CT_ADD_TEST(s, add_noncontiguous_broadcast_rank4);
  CT_ADD_TEST(s, sub_broadcasts_float64);
  CT_ADD_TEST(s, sub_is_x_minus_y_when_x_broadcasts);
  CT_ADD_TEST(s, mul_broadcasts);
  CT_ADD_TEST(s, div_broadcasts);
  CT_ADD_TEST(s, div_float_by_zero_is_ieee);
  CT_ADD_TEST(s, binary_dims_that_do_not_broadcast_are_shape_error);
  CT_ADD_TEST(s, binary_dtypes_that_differ_are_type_mismatch);
  CT_ADD_TEST(s, binary_on_bool_is_unsupported);
  CT_ADD_TEST(s, add_in_place_writes_x);
  CT_ADD_TEST(s, add_in_place_may_grow_x_by_broadcasting);
  CT_ADD_TEST(s, int32_add_sub_mul_wrap);
  CT_ADD_TEST(s, int64_add_wraps_and_broadcasts);
  CT_ADD_TEST(s, int_div_truncates_toward_zero);
  CT_ADD_TEST(s, int64_div_min_by_minus_one_wraps);
  CT_ADD_TEST(s, int32_div_by_zero_is_an_error_and_writes_nothing);
  CT_ADD_TEST(s, int64_div_by_broadcast_zero_is_an_error);
  return s;
}

CT_TEST_MAIN(ops_elementwise_suite)
