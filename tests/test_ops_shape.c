/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the shape ops on the CPU, for every dtype: reshape (a view of X, with -1 inferred
 * and 0 copying X's dim), transpose (every permutation pattern, by element size) and concat
 * (along any axis, empty inputs, the same variable twice), against results computed here, with
 * every error their infer-shape functions report. Each test runs in its own process. The
 * helpers are in op_util.h. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "op_util.h"

/* ---- reshape --------------------------------------------------------------------------------- */

/* Runs reshape of X (dims xd, float32 iota) to shape; checks Out's dims, that it shares X's
 * memory and holds X's values in order. */
static void check_reshape(ct_ddim xd, const int64_t *shape, size_t n, ct_ddim want) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, xd, data_iota);
  ct_op *op = op_x("reshape", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", shape, n), CT_OK);
  run(op, s);
  const float *o = result(s, "out", CT_FLOAT32, want);
  ck_assert(ct_tensor_shares_memory(tensor_of(s, "x"), tensor_of(s, "out")));
  ck_assert_ptr_eq(o, ct_tensor_data(tensor_of(s, "x"), CT_FLOAT32));
  for (int64_t i = 0, m = ct_ddim_numel(want); i < m; i++) ck_assert(o[i] == (float)i);
  ck_assert(ct_ddim_equal(ct_tensor_dims(tensor_of(s, "x")), xd)); /* X keeps its dims */
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(reshape_to_explicit_dims) {
  const int64_t shape[2] = {3, 2};
  check_reshape(CT_DIMS(2, 3), shape, 2, CT_DIMS(3, 2));
}
END_TEST
START_TEST(reshape_infers_minus_one) {
  const int64_t shape[3] = {2, -1, 2};
  check_reshape(CT_DIMS(3, 4), shape, 3, CT_DIMS(2, 3, 2));
}
END_TEST
START_TEST(reshape_zero_copies_input_dim) {
  const int64_t shape[3] = {0, 0, -1};
  check_reshape(CT_DIMS(2, 3, 4, 5), shape, 3, CT_DIMS(2, 3, 20));
}
END_TEST
START_TEST(reshape_flattens) {
  const int64_t shape[1] = {-1};
  check_reshape(CT_DIMS(2, 3, 4), shape, 1, CT_DIMS(24));
}
END_TEST
START_TEST(reshape_scalar_to_1) {
  const int64_t shape[1] = {1};
  check_reshape(CT_DIMS(), shape, 1, CT_DIMS(1));
}
END_TEST
START_TEST(reshape_to_scalar) { check_reshape(CT_DIMS(1, 1), NULL, 0, CT_DIMS()); }
END_TEST
START_TEST(reshape_scalar_with_minus_one) {
  const int64_t shape[2] = {-1, 1};
  check_reshape(CT_DIMS(), shape, 2, CT_DIMS(1, 1));
}
END_TEST
START_TEST(reshape_empty_with_minus_one) {
  const int64_t shape[2] = {3, -1}; /* 0 elements over 3: -1 is 0 */
  check_reshape(CT_DIMS(0, 3), shape, 2, CT_DIMS(3, 0));
}
END_TEST
START_TEST(reshape_empty_copying_the_zero_dim) {
  const int64_t shape[3] = {0, 2, 2}; /* 0 copies X's dim 0, itself 0 */
  check_reshape(CT_DIMS(0, 4), shape, 3, CT_DIMS(0, 2, 2));
}
END_TEST
START_TEST(reshape_zero_is_never_a_literal_extent) {
  const int64_t shape[2] = {3, 0}; /* [3, X's dim 1] = [3,3]: 9 elements, not 0 */
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT32, CT_DIMS(0, 3), NULL);
  ct_op *op = op_x("reshape", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", shape, 2), CT_OK);
  run_fails(op, s, CT_ERR_SHAPE, "reshape", "[0,3]", "[3,0]", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(reshape_in_place) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT64, CT_DIMS(2, 3), data_iota);
  const void *before = ct_tensor_data(tensor_of(s, "x"), CT_FLOAT64);
  ct_op *op = op_x("reshape", "x", "x");
  const int64_t shape[2] = {-1, 2};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", shape, 2), CT_OK);
  run(op, s);
  const double *o = result(s, "x", CT_FLOAT64, CT_DIMS(3, 2));
  ck_assert_ptr_eq(o, before);
  for (int i = 0; i < 6; i++) ck_assert(o[i] == i);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(reshape_any_dtype) {
  for (int a = 0; a < 10; a++) {
    ct_scope *s = ct_scope_new();
    put_fn(s, "x", all_dtypes[a], CT_DIMS(4), all_dtypes[a] == CT_BOOL ? data_zero_one : data_iota);
    ct_op *op = op_x("reshape", "x", "out");
    const int64_t shape[2] = {2, 2};
    ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", shape, 2), CT_OK);
    run(op, s);
    ck_assert_ptr_nonnull(result(s, "out", all_dtypes[a], CT_DIMS(2, 2)));
    ck_assert(ct_tensor_shares_memory(tensor_of(s, "x"), tensor_of(s, "out")));
    ct_op_free(op);
    ct_scope_free(s);
  }
}
END_TEST

/* Later writes to X show through Out: they are one buffer. */
START_TEST(reshape_output_is_a_view) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(4), data_iota);
  ct_op *op = op_x("reshape", "x", "out");
  const int64_t shape[2] = {2, 2};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", shape, 2), CT_OK);
  run(op, s);
  float *x = ct_tensor_mutable_data(ct_var_tensor(ct_scope_find_var(s, "x")), CT_FLOAT32, ct_cpu());
  x[3] = 42;
  ck_assert(((const float *)result(s, "out", CT_FLOAT32, CT_DIMS(2, 2)))[3] == 42);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* Runs reshape of a [2,3] X to shape and expects status want. */
static void reshape_fails(const int64_t *shape, size_t n, ct_status want, const char *needle) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 3), data_iota);
  ct_op *op = op_x("reshape", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", shape, n), CT_OK);
  run_fails(op, s, want, "reshape", needle, NULL);
  ck_assert(!ct_tensor_has_memory(tensor_of(s, "out")));
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(reshape_count_mismatch_is_shape_error) {
  const int64_t shape[2] = {4, 2};
  reshape_fails(shape, 2, CT_ERR_SHAPE, "'x'");
}
END_TEST
START_TEST(reshape_minus_one_that_does_not_divide_is_shape_error) {
  const int64_t shape[2] = {4, -1};
  reshape_fails(shape, 2, CT_ERR_SHAPE, "[4,-1]");
}
END_TEST
START_TEST(reshape_minus_one_beside_zero_extent_is_shape_error) {
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT32, CT_DIMS(0, 3), NULL);
  ct_op *op = op_x("reshape", "x", "out");
  const int64_t shape[2] = {0, -1}; /* [0, ?]: any extent would do */
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", shape, 2), CT_OK);
  run_fails(op, s, CT_ERR_SHAPE, "reshape", "[0,-1]", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST
START_TEST(reshape_two_minus_ones_is_an_error) {
  const int64_t shape[3] = {-1, 3, -1};
  reshape_fails(shape, 3, CT_ERR_INVALID_ARGUMENT, "more than one -1");
}
END_TEST
START_TEST(reshape_below_minus_one_is_an_error) {
  const int64_t shape[2] = {-2, -3};
  reshape_fails(shape, 2, CT_ERR_INVALID_ARGUMENT, "-2");
}
END_TEST
START_TEST(reshape_zero_past_input_rank_is_an_error) {
  const int64_t shape[3] = {6, 1, 0};
  reshape_fails(shape, 3, CT_ERR_INVALID_ARGUMENT, "position 2");
}
END_TEST
START_TEST(reshape_too_many_dims_is_an_error) {
  const int64_t shape[10] = {1, 1, 1, 1, 1, 1, 1, 1, 2, 3};
  reshape_fails(shape, 10, CT_ERR_OUT_OF_RANGE, "shape");
}
END_TEST
START_TEST(reshape_overflowing_dims_are_shape_error) {
  const int64_t shape[3] = {INT64_MAX, 4, 2};
  reshape_fails(shape, 3, CT_ERR_SHAPE, "'x'");
}
END_TEST

START_TEST(reshape_without_shape_is_an_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 3), data_iota);
  ct_op *op = op_x("reshape", "x", "out");
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "reshape", "'shape'", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- transpose ------------------------------------------------------------------------------- */

/* Runs transpose of X (dims xd, dtype dt, values data_iota) by perm and checks Out against a
 * naive loop: Out[i0, i1, ...] = X at the index whose dim perm[k] is i_k. */
static void check_transpose(ct_dtype dt, ct_ddim xd, const int64_t *perm, ct_ddim want) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", dt, xd, dt == CT_BOOL ? data_zero_one : data_iota);
  ct_op *op = op_x("transpose", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "axis", perm, (size_t)xd.rank), CT_OK);
  run(op, s);
  const void *out = result(s, "out", dt, want);
  const void *x = ct_tensor_data(tensor_of(s, "x"), dt);
  int64_t xs[CT_MAX_RANK], st = 1;
  for (int k = xd.rank - 1; k >= 0; k--) {
    xs[k] = st;
    st *= xd.d[k];
  }
  for (int64_t i = 0, n = ct_ddim_numel(want); i < n; i++) {
    int64_t rest = i, src = 0;
    for (int k = want.rank - 1; k >= 0; k--) {
      int p = (int)(perm[k] < 0 ? perm[k] + xd.rank : perm[k]);
      src += (rest % want.d[k]) * xs[p];
      rest /= want.d[k];
    }
    ck_assert_msg(get_elem(out, dt, i) == get_elem(x, dt, src), "element %lld: %g, expected %g",
                  (long long)i, get_elem(out, dt, i), get_elem(x, dt, src));
  }
  if (ct_ddim_numel(want) > 0) {
    ck_assert(!ct_tensor_shares_memory(tensor_of(s, "x"), tensor_of(s, "out")));
  }
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(transpose_matrix) {
  const int64_t p[2] = {1, 0};
  check_transpose(CT_FLOAT32, CT_DIMS(2, 3), p, CT_DIMS(3, 2));
}
END_TEST
START_TEST(transpose_rank3_rotation) {
  const int64_t p[3] = {2, 0, 1};
  check_transpose(CT_FLOAT64, CT_DIMS(2, 3, 4), p, CT_DIMS(4, 2, 3));
}
END_TEST
START_TEST(transpose_rank4_keeps_inner_runs) {
  const int64_t p[4] = {0, 2, 3, 1};
  check_transpose(CT_FLOAT32, CT_DIMS(2, 3, 4, 5), p, CT_DIMS(2, 4, 5, 3));
}
END_TEST
/* Rows of 16 along X's memory under three outer dims, [5, 40, 30, 16] -> [5, 30, 40, 16]: each
 * piece of rows starts its walk of the outer dims mid-way and carries across two of them. */
START_TEST(transpose_short_rows_across_threads) {
  const int64_t p[4] = {0, 2, 1, 3};
  ct_set_num_threads(3);
  check_transpose(CT_FLOAT32, CT_DIMS(5, 40, 30, 16), p, CT_DIMS(5, 30, 40, 16));
  check_transpose(CT_INT64, CT_DIMS(7, 3, 5, 2), p, CT_DIMS(7, 5, 3, 2));
  ct_set_num_threads(0);
}
END_TEST
START_TEST(transpose_negative_axes) {
  const int64_t p[3] = {-1, -3, -2};
  check_transpose(CT_INT32, CT_DIMS(2, 3, 4), p, CT_DIMS(4, 2, 3));
}
END_TEST
START_TEST(transpose_identity_copies) {
  const int64_t p[3] = {0, 1, 2};
  check_transpose(CT_FLOAT32, CT_DIMS(2, 3, 4), p, CT_DIMS(2, 3, 4));
}
END_TEST
START_TEST(transpose_moves_only_size1_dims) {
  const int64_t p[3] = {1, 0, 2};
  check_transpose(CT_FLOAT32, CT_DIMS(1, 3, 4), p, CT_DIMS(3, 1, 4));
}
END_TEST
START_TEST(transpose_rank0) { check_transpose(CT_FLOAT64, CT_DIMS(), NULL, CT_DIMS()); }
END_TEST
START_TEST(transpose_empty) {
  const int64_t p[2] = {1, 0};
  check_transpose(CT_FLOAT32, CT_DIMS(0, 3), p, CT_DIMS(3, 0));
}
END_TEST
START_TEST(transpose_1_byte_elements) {
  const int64_t p[2] = {1, 0};
  check_transpose(CT_INT8, CT_DIMS(5, 7), p, CT_DIMS(7, 5));
}
END_TEST
START_TEST(transpose_bool) {
  const int64_t p[2] = {1, 0};
  check_transpose(CT_BOOL, CT_DIMS(3, 2), p, CT_DIMS(2, 3));
}
END_TEST
START_TEST(transpose_2_byte_elements) {
  const int64_t p[3] = {2, 1, 0};
  check_transpose(CT_FLOAT16, CT_DIMS(3, 4, 5), p, CT_DIMS(5, 4, 3));
}
END_TEST
START_TEST(transpose_8_byte_elements) {
  const int64_t p[3] = {1, 2, 0};
  check_transpose(CT_INT64, CT_DIMS(3, 4, 5), p, CT_DIMS(4, 5, 3));
}
END_TEST

START_TEST(transpose_in_place) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 3), data_iota);
  ct_op *op = op_x("transpose", "x", "x");
  const int64_t p[2] = {1, 0};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "axis", p, 2), CT_OK);
  run(op, s);
  const float *o = result(s, "x", CT_FLOAT32, CT_DIMS(3, 2));
  const float want[6] = {0, 3, 1, 4, 2, 5};
  for (int i = 0; i < 6; i++) ck_assert(o[i] == want[i]);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static void transpose_fails(const int64_t *perm, size_t n, ct_status want, const char *needle) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 3, 4), data_iota);
  ct_op *op = op_x("transpose", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "axis", perm, n), CT_OK);
  run_fails(op, s, want, "transpose", needle, NULL);
  ck_assert(!ct_tensor_has_memory(tensor_of(s, "out")));
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(transpose_axis_of_wrong_length_is_shape_error) {
  const int64_t p[2] = {1, 0};
  transpose_fails(p, 2, CT_ERR_SHAPE, "rank 3");
}
END_TEST
START_TEST(transpose_axis_listed_twice_is_an_error) {
  const int64_t p[3] = {0, 2, -1};
  transpose_fails(p, 3, CT_ERR_INVALID_ARGUMENT, "twice");
}
END_TEST
START_TEST(transpose_axis_out_of_range_is_an_error) {
  const int64_t p[3] = {0, 1, 3};
  transpose_fails(p, 3, CT_ERR_OUT_OF_RANGE, "'axis'");
}
END_TEST

/* An empty axis reverses the dims (numpy's transpose without axes): [2, 3, 4] -> [4, 3, 2],
 * Out[i, j, k] = X[k, j, i]. */
START_TEST(transpose_empty_axis_reverses_the_dims) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 3, 4), data_iota);
  ct_op *op = op_x("transpose", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "axis", NULL, 0), CT_OK);
  run(op, s);
  const float *out = result(s, "out", CT_FLOAT32, CT_DIMS(4, 3, 2));
  const float *x = ct_tensor_data(tensor_of(s, "x"), CT_FLOAT32);
  for (int i = 0; i < 4; i++) {
    for (int j = 0; j < 3; j++) {
      for (int k = 0; k < 2; k++) ck_assert(out[(i * 3 + j) * 2 + k] == x[(k * 3 + j) * 4 + i]);
    }
  }
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(transpose_without_axis_is_an_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 3), data_iota);
  ct_op *op = op_x("transpose", "x", "out");
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "transpose", "'axis'", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- concat ---------------------------------------------------------------------------------- */

/* Runs concat of n inputs (dims xds[i], dtype dt, input i holding 10 i + j % 10 at element j) along
 * axis (INT64_MIN: the default) and checks Out against a naive loop. */
static void check_concat(ct_dtype dt, const ct_ddim *xds, size_t n, int64_t axis, ct_ddim want) {
  static const char *const names[4] = {"a", "b", "c", "d"};
  ct_scope *s = ct_scope_new();
  for (size_t i = 0; i < n; i++) {
    int64_t m = ct_ddim_numel(xds[i]);
    void *p = xmalloc(m, 8);
    for (int64_t j = 0; j < m; j++) set_elem(p, dt, j, (double)(10 * (int64_t)i + j % 10));
    put(s, names[i], dt, xds[i], p);
    free(p);
  }
  ct_op *op = op_many("concat", names, n, "out");
  if (axis != INT64_MIN) ck_assert_int_eq(ct_op_set_attr_int(op, "axis", axis), CT_OK);
  run(op, s);
  const void *out = result(s, "out", dt, want);
  int a = (int)(axis == INT64_MIN ? 0 : axis < 0 ? axis + want.rank : axis);
  for (int64_t i = 0, m = ct_ddim_numel(want); i < m; i++) {
    /* The index of element i in Out, then the input whose range along the axis holds it. */
    int64_t idx[CT_MAX_RANK] = {0}, rest = i;
    for (int k = want.rank - 1; k >= 0; k--) {
      idx[k] = rest % want.d[k];
      rest /= want.d[k];
    }
    size_t src = 0;
    while (idx[a] >= xds[src].d[a]) idx[a] -= xds[src++].d[a];
    int64_t j = 0;
    for (int k = 0; k < want.rank; k++) j = j * xds[src].d[k] + idx[k];
    double expect = (double)(10 * (int64_t)src + j % 10);
    ck_assert_msg(get_elem(out, dt, i) == expect, "element %lld: %g, expected %g", (long long)i,
                  get_elem(out, dt, i), expect);
  }
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(concat_rows) {
  const ct_ddim d[2] = {CT_DIMS(2, 3), CT_DIMS(1, 3)};
  check_concat(CT_FLOAT32, d, 2, INT64_MIN, CT_DIMS(3, 3));
}
END_TEST
START_TEST(concat_columns) {
  const ct_ddim d[2] = {CT_DIMS(2, 1), CT_DIMS(2, 3)};
  check_concat(CT_FLOAT64, d, 2, 1, CT_DIMS(2, 4));
}
END_TEST
START_TEST(concat_negative_axis) {
  const ct_ddim d[3] = {CT_DIMS(2, 2), CT_DIMS(2, 1), CT_DIMS(2, 3)};
  check_concat(CT_FLOAT32, d, 3, -1, CT_DIMS(2, 6));
}
END_TEST
START_TEST(concat_middle_axis_of_rank3) {
  const ct_ddim d[3] = {CT_DIMS(2, 1, 3), CT_DIMS(2, 2, 3), CT_DIMS(2, 3, 3)};
  check_concat(CT_INT64, d, 3, 1, CT_DIMS(2, 6, 3));
}
END_TEST
START_TEST(concat_one_input_copies) {
  const ct_ddim d[1] = {CT_DIMS(2, 3)};
  check_concat(CT_INT32, d, 1, 1, CT_DIMS(2, 3));
}
END_TEST
START_TEST(concat_with_an_empty_input) {
  const ct_ddim d[3] = {CT_DIMS(0, 3), CT_DIMS(2, 3), CT_DIMS(0, 3)};
  check_concat(CT_FLOAT32, d, 3, 0, CT_DIMS(2, 3));
}
END_TEST
START_TEST(concat_of_empties_is_empty) {
  const ct_ddim d[2] = {CT_DIMS(2, 0), CT_DIMS(2, 0)};
  check_concat(CT_FLOAT32, d, 2, 1, CT_DIMS(2, 0));
}
END_TEST
START_TEST(concat_empty_across_the_axis) {
  const ct_ddim d[2] = {CT_DIMS(0, 2), CT_DIMS(0, 3)};
  check_concat(CT_FLOAT32, d, 2, 1, CT_DIMS(0, 5));
}
END_TEST
START_TEST(concat_int8) {
  const ct_ddim d[2] = {CT_DIMS(3), CT_DIMS(4)};
  check_concat(CT_INT8, d, 2, 0, CT_DIMS(7));
}
END_TEST
START_TEST(concat_float16_rank4) {
  const ct_ddim d[2] = {CT_DIMS(2, 2, 1, 3), CT_DIMS(2, 2, 2, 3)};
  check_concat(CT_FLOAT16, d, 2, 2, CT_DIMS(2, 2, 3, 3));
}
END_TEST

START_TEST(concat_same_variable_twice) {
  ct_scope *s = ct_scope_new();
  float x[2] = {1, 2};
  put(s, "x", CT_FLOAT32, CT_DIMS(2), x);
  const char *const xs[2] = {"x", "x"};
  ct_op *op = op_many("concat", xs, 2, "x");
  run(op, s);
  const float *o = result(s, "x", CT_FLOAT32, CT_DIMS(4));
  ck_assert(o[0] == 1 && o[1] == 2 && o[2] == 1 && o[3] == 2);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* Runs concat of a [2,3] a and b of dims bd and dtype bt; expects status want. */
static void concat_fails(ct_ddim ad, ct_ddim bd, ct_dtype bt, int64_t axis, ct_status want,
                         const char *needle) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "a", CT_FLOAT32, ad, data_iota);
  put_fn(s, "b", bt, bd, data_iota);
  const char *const xs[2] = {"a", "b"};
  ct_op *op = op_many("concat", xs, 2, "out");
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", axis), CT_OK);
  run_fails(op, s, want, "concat", needle, NULL);
  ck_assert(!ct_tensor_has_memory(tensor_of(s, "out")));
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(concat_other_dims_that_differ_are_shape_error) {
  concat_fails(CT_DIMS(2, 3), CT_DIMS(2, 4), CT_FLOAT32, 0, CT_ERR_SHAPE, "'b' [2,4]");
}
END_TEST
START_TEST(concat_ranks_that_differ_are_shape_error) {
  concat_fails(CT_DIMS(2, 3), CT_DIMS(2, 3, 1), CT_FLOAT32, 0, CT_ERR_SHAPE, "'a' [2,3]");
}
END_TEST
START_TEST(concat_of_scalars_is_shape_error) {
  concat_fails(CT_DIMS(), CT_DIMS(), CT_FLOAT32, 0, CT_ERR_SHAPE, "scalar");
}
END_TEST
START_TEST(concat_dtypes_that_differ_are_type_mismatch) {
  concat_fails(CT_DIMS(2, 3), CT_DIMS(2, 3), CT_INT32, 0, CT_ERR_TYPE_MISMATCH, "'b'");
}
END_TEST
START_TEST(concat_axis_out_of_range_is_an_error) {
  concat_fails(CT_DIMS(2, 3), CT_DIMS(2, 3), CT_FLOAT32, 2, CT_ERR_OUT_OF_RANGE, "'axis'");
}
END_TEST
START_TEST(concat_negative_axis_out_of_range_is_an_error) {
  concat_fails(CT_DIMS(2, 3), CT_DIMS(2, 3), CT_FLOAT32, -3, CT_ERR_OUT_OF_RANGE, "-3");
}
END_TEST

static Suite *ops_shape_suite(void) {
  Suite *s = suite_create("ops_shape");
  CT_ADD_TEST(s, reshape_to_explicit_dims);
  CT_ADD_TEST(s, reshape_infers_minus_one);
  CT_ADD_TEST(s, reshape_zero_copies_input_dim);
  CT_ADD_TEST(s, reshape_flattens);
  CT_ADD_TEST(s, reshape_scalar_to_1);
  CT_ADD_TEST(s, reshape_to_scalar);
  CT_ADD_TEST(s, reshape_scalar_with_minus_one);
  CT_ADD_TEST(s, reshape_empty_with_minus_one);
  CT_ADD_TEST(s, reshape_empty_copying_the_zero_dim);
  CT_ADD_TEST(s, reshape_zero_is_never_a_literal_extent);
  CT_ADD_TEST(s, reshape_in_place);
  CT_ADD_TEST(s, reshape_any_dtype);
  CT_ADD_TEST(s, reshape_output_is_a_view);
  CT_ADD_TEST(s, reshape_count_mismatch_is_shape_error);
  CT_ADD_TEST(s, reshape_minus_one_that_does_not_divide_is_shape_error);
  CT_ADD_TEST(s, reshape_minus_one_beside_zero_extent_is_shape_error);
  CT_ADD_TEST(s, reshape_two_minus_ones_is_an_error);
  CT_ADD_TEST(s, reshape_below_minus_one_is_an_error);
  CT_ADD_TEST(s, reshape_zero_past_input_rank_is_an_error);
  CT_ADD_TEST(s, reshape_too_many_dims_is_an_error);
  CT_ADD_TEST(s, reshape_overflowing_dims_are_shape_error);
  CT_ADD_TEST(s, reshape_without_shape_is_an_error);
  CT_ADD_TEST(s, transpose_matrix);
  CT_ADD_TEST(s, transpose_empty_axis_reverses_the_dims);
  CT_ADD_TEST(s, transpose_rank3_rotation);
  CT_ADD_TEST(s, transpose_rank4_keeps_inner_runs);
  CT_ADD_TEST(s, transpose_short_rows_across_threads);
  CT_ADD_TEST(s, transpose_negative_axes);
  CT_ADD_TEST(s, transpose_identity_copies);
  CT_ADD_TEST(s, transpose_moves_only_size1_dims);
  CT_ADD_TEST(s, transpose_rank0);
  CT_ADD_TEST(s, transpose_empty);
  CT_ADD_TEST(s, transpose_1_byte_elements);
  CT_ADD_TEST(s, transpose_bool);
  CT_ADD_TEST(s, transpose_2_byte_elements);
  CT_ADD_TEST(s, transpose_8_byte_elements);
  CT_ADD_TEST(s, transpose_in_place);
  CT_ADD_TEST(s, transpose_axis_of_wrong_length_is_shape_error);
  CT_ADD_TEST(s, transpose_axis_listed_twice_is_an_error);
  CT_ADD_TEST(s, transpose_axis_out_of_range_is_an_error);
  CT_ADD_TEST(s, transpose_without_axis_is_an_error);
  CT_ADD_TEST(s, concat_rows);
  CT_ADD_TEST(s, concat_columns);
  CT_ADD_TEST(s, concat_negative_axis);
  CT_ADD_TEST(s, concat_middle_axis_of_rank3);
  CT_ADD_TEST(s, concat_one_input_copies);
  CT_ADD_TEST(s, concat_with_an_empty_input);
  CT_ADD_TEST(s, concat_of_empties_is_empty);
  CT_ADD_TEST(s, concat_empty_across_the_axis);
  CT_ADD_TEST(s, concat_int8);
  CT_ADD_TEST(s, concat_float16_rank4);
  CT_ADD_TEST(s, concat_same_variable_twice);
  CT_ADD_TEST(s, concat_other_dims_that_differ_are_shape_error);
  CT_ADD_TEST(s, concat_ranks_that_differ_are_shape_error);
  CT_ADD_TEST(s, concat_of_scalars_is_shape_error);
  CT_ADD_TEST(s, concat_dtypes_that_differ_are_type_mismatch);
  CT_ADD_TEST(s, concat_axis_out_of_range_is_an_error);
  CT_ADD_TEST(s, concat_negative_axis_out_of_range_is_an_error);
  return s;
}

CT_TEST_MAIN(ops_shape_suite)
