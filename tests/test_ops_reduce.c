/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the reductions on the CPU against loops computed here: sum of any number of
 * tensors, mean of all elements (NaN when empty), and reduce_sum over any set of dims with and
 * without keep_dim; integer wrapping, float32 sums folded in double, rank 0 and empty dims, and
 * every error. Each test runs in its own process. The helpers are in op_util.h; softmax is in
 * test_ops_softmax.c. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "op_util.h"

/* ---- sum ------------------------------------------------------------------------------------- */

START_TEST(sum_of_three_float32) {
  ct_scope *s = ct_scope_new();
  float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, c[4] = {0.5f, -1, 100, 0};
  put(s, "a", CT_FLOAT32, CT_DIMS(2, 2), a);
  put(s, "b", CT_FLOAT32, CT_DIMS(2, 2), b);
  put(s, "c", CT_FLOAT32, CT_DIMS(2, 2), c);
  const char *const xs[3] = {"a", "b", "c"};
  ct_op *op = op_many("sum", xs, 3, "out");
  run(op, s);
  const float *o = result(s, "out", CT_FLOAT32, CT_DIMS(2, 2));
  for (int i = 0; i < 4; i++) ck_assert(o[i] == a[i] + b[i] + c[i]);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(sum_of_one_copies) {
  ct_scope *s = ct_scope_new();
  double a[3] = {1.5, -2, 3};
  put(s, "a", CT_FLOAT64, CT_DIMS(3), a);
  const char *const xs[1] = {"a"};
  ct_op *op = op_many("sum", xs, 1, "out");
  run(op, s);
  const double *o = result(s, "out", CT_FLOAT64, CT_DIMS(3));
  for (int i = 0; i < 3; i++) ck_assert(o[i] == a[i]);
  ck_assert(!ct_tensor_shares_memory(tensor_of(s, "a"), tensor_of(s, "out")));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(sum_of_many_float64_against_loop) {
  enum { K = 7 };
  ct_scope *s = ct_scope_new();
  const char *names[K] = {"x0", "x1", "x2", "x3", "x4", "x5", "x6"};
  double ref[12] = {0};
  for (int k = 0; k < K; k++) {
    double v[12];
    for (int i = 0; i < 12; i++) {
      v[i] = (double)((i * 3 + k * 5) % 11) * 0.25 - 1;
      ref[i] += v[i];
    }
    put(s, names[k], CT_FLOAT64, CT_DIMS(3, 4), v);
  }
  ct_op *op = op_many("sum", names, K, "out");
  run(op, s);
  const double *o = result(s, "out", CT_FLOAT64, CT_DIMS(3, 4));
  for (int i = 0; i < 12; i++) ck_assert(o[i] == ref[i]);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(sum_int32_wraps) {
  ct_scope *s = ct_scope_new();
  int32_t a[2] = {INT32_MAX, -5}, b[2] = {1, 7}, c[2] = {1, INT32_MIN};
  put(s, "a", CT_INT32, CT_DIMS(2), a);
  put(s, "b", CT_INT32, CT_DIMS(2), b);
  put(s, "c", CT_INT32, CT_DIMS(2), c);
  const char *const xs[3] = {"a", "b", "c"};
  ct_op *op = op_many("sum", xs, 3, "out");
  run(op, s);
  const int32_t *o = result(s, "out", CT_INT32, CT_DIMS(2));
  ck_assert_int_eq(o[0], INT32_MIN + 1);
  ck_assert_int_eq(o[1], INT32_MIN + 2);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(sum_int64) {
  ct_scope *s = ct_scope_new();
  int64_t a[2] = {INT64_MAX, 3}, b[2] = {1, 4};
  put(s, "a", CT_INT64, CT_DIMS(2), a);
  put(s, "b", CT_INT64, CT_DIMS(2), b);
  const char *const xs[2] = {"a", "b"};
  ct_op *op = op_many("sum", xs, 2, "out");
  run(op, s);
  const int64_t *o = result(s, "out", CT_INT64, CT_DIMS(2));
  ck_assert(o[0] == INT64_MIN && o[1] == 7);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(sum_rank0_and_empty) {
  ct_scope *s = ct_scope_new();
  float a[1] = {2}, b[1] = {3};
  put(s, "a", CT_FLOAT32, CT_DIMS(), a);
  put(s, "b", CT_FLOAT32, CT_DIMS(), b);
  put(s, "e", CT_FLOAT32, CT_DIMS(0, 2), NULL);
  put(s, "f", CT_FLOAT32, CT_DIMS(0, 2), NULL);
  const char *const xs[2] = {"a", "b"}, *const es[2] = {"e", "f"};
  ct_op *op = op_many("sum", xs, 2, "out"), *oe = op_many("sum", es, 2, "eo");
  run(op, s);
  run(oe, s);
  ck_assert(*(const float *)result(s, "out", CT_FLOAT32, CT_DIMS()) == 5);
  ck_assert_ptr_nonnull(result(s, "eo", CT_FLOAT32, CT_DIMS(0, 2)));
  ct_op_free(op);
  ct_op_free(oe);
  ct_scope_free(s);
}
END_TEST

START_TEST(sum_into_one_of_its_inputs) {
  ct_scope *s = ct_scope_new();
  float a[2] = {1, 2}, b[2] = {10, 20};
  put(s, "a", CT_FLOAT32, CT_DIMS(2), a);
  put(s, "b", CT_FLOAT32, CT_DIMS(2), b);
  const char *const xs[3] = {"a", "b", "a"};
  ct_op *op = op_many("sum", xs, 3, "b");
  run(op, s);
  const float *o = result(s, "b", CT_FLOAT32, CT_DIMS(2));
  ck_assert(o[0] == 12 && o[1] == 24);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(sum_dims_that_differ_are_shape_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "a", CT_FLOAT32, CT_DIMS(2, 3), data_x);
  put_fn(s, "b", CT_FLOAT32, CT_DIMS(3), data_x);
  const char *const xs[2] = {"a", "b"};
  ct_op *op = op_many("sum", xs, 2, "out");
  run_fails(op, s, CT_ERR_SHAPE, "sum", "'a'", "[2,3]", "'b'", "[3]", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(sum_dtypes_that_differ_are_type_mismatch) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "a", CT_FLOAT32, CT_DIMS(3), data_x);
  put_fn(s, "b", CT_FLOAT32, CT_DIMS(3), data_x);
  put_fn(s, "c", CT_INT32, CT_DIMS(3), data_x);
  const char *const xs[3] = {"a", "b", "c"};
  ct_op *op = op_many("sum", xs, 3, "out");
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "sum", "'c'", "int32", "float32", NULL);
  ck_assert(!ct_tensor_has_memory(tensor_of(s, "out")));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(sum_on_bool_is_unsupported) {
  ct_scope *s = ct_scope_new();
  uint8_t a[2] = {1, 0};
  put(s, "a", CT_BOOL, CT_DIMS(2), a);
  const char *const xs[2] = {"a", "a"};
  ct_op *op = op_many("sum", xs, 2, "out");
  run_fails(op, s, CT_ERR_UNSUPPORTED, "sum", "bool", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- mean ------------------------------------------------------------------------------------ */

START_TEST(mean_float32_is_rank0) {
  ct_scope *s = ct_scope_new();
  float x[6] = {1, 2, 3, 4, 5, 9};
  put(s, "x", CT_FLOAT32, CT_DIMS(2, 3), x);
  ct_op *op = op_x("mean", "x", "out");
  run(op, s);
  ck_assert(*(const float *)result(s, "out", CT_FLOAT32, CT_DIMS()) == 4.0f);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(mean_float64_against_loop) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT64, CT_DIMS(3, 5, 7), data_unary);
  ct_op *op = op_x("mean", "x", "out");
  run(op, s);
  double sum = 0;
  for (int64_t i = 0; i < 105; i++) sum += data_unary(i);
  ck_assert(*(const double *)result(s, "out", CT_FLOAT64, CT_DIMS()) == sum / 105);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(mean_of_a_scalar_is_itself) {
  ct_scope *s = ct_scope_new();
  double x[1] = {-2.25};
  put(s, "x", CT_FLOAT64, CT_DIMS(), x);
  ct_op *op = op_x("mean", "x", "out");
  run(op, s);
  ck_assert(*(const double *)result(s, "out", CT_FLOAT64, CT_DIMS()) == -2.25);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(mean_of_empty_is_nan) {
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT32, CT_DIMS(0, 4), NULL);
  ct_op *op = op_x("mean", "x", "out");
  run(op, s);
  ck_assert(isnan(*(const float *)result(s, "out", CT_FLOAT32, CT_DIMS())));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(mean_float32_sums_in_double) {
  /* 2^24 ones and a 1 more: a float accumulator would stop at 2^24. */
  ct_scope *s = ct_scope_new();
  const int64_t n = (1 << 24) + 2;
  float *x = xmalloc(n, sizeof(float));
  for (int64_t i = 0; i < n; i++) x[i] = 1.0f;
  x[0] = 3.0f; /* the sum is n + 2 */
  put(s, "x", CT_FLOAT32, CT_DIMS(n), x);
  free(x);
  ct_op *op = op_x("mean", "x", "out");
  run(op, s);
  ck_assert(*(const float *)result(s, "out", CT_FLOAT32, CT_DIMS()) ==
            (float)((double)(n + 2) / (double)n));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(mean_on_int32_is_unsupported) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_INT32, CT_DIMS(3), data_x);
  ct_op *op = op_x("mean", "x", "out");
  run_fails(op, s, CT_ERR_UNSUPPORTED, "mean", "int32", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- reduce_sum ------------------------------------------------------------------------------ */

/* Runs reduce_sum over X (dims xd, dtype dt, values data_x) with the dims given (dim NULL: the
 * attribute left at its default) and checks Out against a naive loop. */
static void check_reduce_sum(ct_dtype dt, ct_ddim xd, const int64_t *dim, size_t nd, int keep,
                             ct_ddim want) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", dt, xd, data_x);
  ct_op *op = op_x("reduce_sum", "x", "out");
  if (dim != NULL) ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", dim, nd), CT_OK);
  if (keep >= 0) ck_assert_int_eq(ct_op_set_attr_bool(op, "keep_dim", keep), CT_OK);
  run(op, s);
  const void *out = result(s, "out", dt, want);
  bool red[CT_MAX_RANK];
  for (int k = 0; k < CT_MAX_RANK; k++) red[k] = dim == NULL || nd == 0;
  for (size_t i = 0; i < nd; i++) {
    red[dim[i] < 0 ? dim[i] + (xd.rank ? xd.rank : 1) : dim[i]] = true;
  }
  int64_t no = ct_ddim_numel(want);
  double *ref = xmalloc(no, sizeof(double));
  for (int64_t i = 0, n = ct_ddim_numel(xd); i < n; i++) {
    int64_t rest = i, o = 0, stride = 1;
    for (int k = xd.rank - 1; k >= 0; k--) {
      int64_t ik = rest % xd.d[k];
      rest /= xd.d[k];
      if (red[k]) continue;
      o += ik * stride;
      stride *= xd.d[k];
    }
    ref[o] += data_x(i);
  }
  for (int64_t i = 0; i < no; i++) {
    ck_assert_msg(get_elem(out, dt, i) == ref[i], "element %lld: %g, expected %g", (long long)i,
                  get_elem(out, dt, i), ref[i]);
  }
  free(ref);
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(reduce_sum_all_by_default) {
  check_reduce_sum(CT_FLOAT32, CT_DIMS(2, 3, 4), NULL, 0, -1, CT_DIMS());
}
END_TEST
START_TEST(reduce_sum_all_keep_dim) {
  check_reduce_sum(CT_FLOAT64, CT_DIMS(2, 3, 4), NULL, 0, 1, CT_DIMS(1, 1, 1));
}
END_TEST
START_TEST(reduce_sum_last_dim) {
  const int64_t d[1] = {2};
  check_reduce_sum(CT_FLOAT32, CT_DIMS(2, 3, 4), d, 1, -1, CT_DIMS(2, 3));
}
END_TEST
START_TEST(reduce_sum_first_dim) {
  const int64_t d[1] = {0};
  check_reduce_sum(CT_FLOAT32, CT_DIMS(2, 3, 4), d, 1, -1, CT_DIMS(3, 4));
}
END_TEST
START_TEST(reduce_sum_middle_dim_keep_dim) {
  const int64_t d[1] = {1};
  check_reduce_sum(CT_FLOAT64, CT_DIMS(2, 3, 4), d, 1, 1, CT_DIMS(2, 1, 4));
}
END_TEST
START_TEST(reduce_sum_outer_dims) {
  const int64_t d[2] = {0, 2};
  check_reduce_sum(CT_FLOAT32, CT_DIMS(2, 3, 4), d, 2, 0, CT_DIMS(3));
}
END_TEST
START_TEST(reduce_sum_alternating_dims_rank5) {
  const int64_t d[3] = {3, 1, 0};
  check_reduce_sum(CT_FLOAT64, CT_DIMS(3, 2, 4, 2, 3), d, 3, 1, CT_DIMS(1, 1, 4, 1, 3));
}
END_TEST
START_TEST(reduce_sum_negative_dims) {
  const int64_t d[2] = {-1, -3};
  check_reduce_sum(CT_FLOAT32, CT_DIMS(2, 3, 4), d, 2, -1, CT_DIMS(3));
}
END_TEST
START_TEST(reduce_sum_explicit_all_dims) {
  const int64_t d[3] = {2, 0, 1};
  check_reduce_sum(CT_FLOAT32, CT_DIMS(2, 3, 4), d, 3, -1, CT_DIMS());
}
END_TEST
START_TEST(reduce_sum_over_size1_dims) {
  const int64_t d[1] = {1};
  check_reduce_sum(CT_FLOAT32, CT_DIMS(3, 1, 1, 2), d, 1, -1, CT_DIMS(3, 1, 2));
}
END_TEST
START_TEST(reduce_sum_int32) {
  const int64_t d[1] = {1};
  check_reduce_sum(CT_INT32, CT_DIMS(4, 5), d, 1, -1, CT_DIMS(4));
}
END_TEST
START_TEST(reduce_sum_int64) {
  const int64_t d[1] = {0};
  check_reduce_sum(CT_INT64, CT_DIMS(4, 5), d, 1, 1, CT_DIMS(1, 5));
}
END_TEST
START_TEST(reduce_sum_rank0) { check_reduce_sum(CT_FLOAT32, CT_DIMS(), NULL, 0, -1, CT_DIMS()); }
END_TEST
START_TEST(reduce_sum_rank0_dim_0) {
  const int64_t d[1] = {-1};
  check_reduce_sum(CT_FLOAT64, CT_DIMS(), d, 1, 1, CT_DIMS());
}
END_TEST
START_TEST(reduce_sum_over_empty_dim_gives_zeros) {
  const int64_t d[1] = {0};
  check_reduce_sum(CT_FLOAT32, CT_DIMS(0, 3), d, 1, -1, CT_DIMS(3));
}
END_TEST
START_TEST(reduce_sum_keeping_empty_dim_gives_empty) {
  const int64_t d[1] = {1};
  check_reduce_sum(CT_FLOAT32, CT_DIMS(0, 3), d, 1, -1, CT_DIMS(0));
}
END_TEST
START_TEST(reduce_sum_all_of_empty_is_zero) {
  check_reduce_sum(CT_INT64, CT_DIMS(2, 0), NULL, 0, -1, CT_DIMS());
}
END_TEST

START_TEST(reduce_sum_int32_wraps) {
  ct_scope *s = ct_scope_new();
  int32_t x[3] = {INT32_MAX, 1, 1};
  put(s, "x", CT_INT32, CT_DIMS(3), x);
  ct_op *op = op_x("reduce_sum", "x", "out");
  run(op, s);
  ck_assert_int_eq(*(const int32_t *)result(s, "out", CT_INT32, CT_DIMS()), INT32_MIN + 1);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(reduce_sum_float32_folds_in_double) {
  ct_scope *s = ct_scope_new();
  const int64_t n = (1 << 24) + 2;
  float *x = xmalloc(n, sizeof(float));
  for (int64_t i = 0; i < n; i++) x[i] = 1.0f;
  put(s, "x", CT_FLOAT32, CT_DIMS(n), x);
  free(x);
  ct_op *op = op_x("reduce_sum", "x", "out");
  run(op, s);
  ck_assert(*(const float *)result(s, "out", CT_FLOAT32, CT_DIMS()) == (float)n);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* reduce_sum over the last dim folds rows four at a time (ops/cpu/reduce.c, RS_ROWS); each row's
 * sum has the bits of that row summed on its own (a rank-1 reduce_sum, one run), in values whose
 * float64 sum depends on the order of the additions. 9 rows: two groups of four and one left. */
static double data_orders(int64_t i) { /* float32 values from 1e-3 to 5e11 of either sign */
  static const double scale[5] = {1, 1e3, 1e6, 1e9, 1e12};
  return (double)(float)((double)((i * 7919) % 1000 - 500) * 1e-3 * scale[i % 5]);
}

START_TEST(reduce_sum_rows_have_each_rows_own_bits) {
  enum { R = 9, C = 1003 };
  ct_dtype dts[2] = {CT_FLOAT64, CT_FLOAT32};
  for (int k = 0; k < 2; k++) {
    ct_scope *s = ct_scope_new();
    put_fn(s, "x", dts[k], CT_DIMS(R, C), data_orders);
    ct_op *op = op_x("reduce_sum", "x", "out");
    ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", (const int64_t[]){1}, 1), CT_OK);
    run(op, s);
    ct_op *one = op_x("reduce_sum", "row", "sum");
    for (int64_t r = 0; r < R; r++) {
      double row[C];
      for (int64_t j = 0; j < C; j++) row[j] = data_orders(r * C + j);
      if (dts[k] == CT_FLOAT64) {
        put(s, "row", CT_FLOAT64, CT_DIMS(C), row);
      } else {
        float rf[C];
        for (int64_t j = 0; j < C; j++) rf[j] = (float)row[j];
        put(s, "row", CT_FLOAT32, CT_DIMS(C), rf);
      }
      run(one, s);
      double want = get_elem(result(s, "sum", dts[k], CT_DIMS()), dts[k], 0);
      double got = get_elem(result(s, "out", dts[k], CT_DIMS(R)), dts[k], r);
      ck_assert_msg(got == want, "row %lld: %a, expected %a", (long long)r, got, want);
    }
    ct_op_free(one);
    ct_op_free(op);
    ct_scope_free(s);
  }
}
END_TEST

START_TEST(reduce_sum_dim_out_of_range_is_an_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 3), data_x);
  ct_op *op = op_x("reduce_sum", "x", "out");
  const int64_t d[2] = {0, 2};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", d, 2), CT_OK);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "reduce_sum", "'dim'", "2", "'x'", "rank 2", NULL);
  const int64_t e[1] = {-3};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", e, 1), CT_OK);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "reduce_sum", "-3", NULL);
  ck_assert(!ct_tensor_has_memory(tensor_of(s, "out")));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(reduce_sum_dim_listed_twice_is_an_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 3, 4), data_x);
  ct_op *op = op_x("reduce_sum", "x", "out");
  const int64_t d[2] = {1, -2};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", d, 2), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "reduce_sum", "'dim'", "twice", "'x'", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(reduce_sum_rank2_dim_on_rank0_is_an_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(), data_x);
  ct_op *op = op_x("reduce_sum", "x", "out");
  const int64_t d[1] = {1};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", d, 1), CT_OK);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "reduce_sum", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(reduce_sum_on_float16_is_unsupported) {
  ct_scope *s = ct_scope_new();
  uint16_t x[2] = {0x3C00, 0x3C00};
  put(s, "x", CT_FLOAT16, CT_DIMS(2), x);
  ct_op *op = op_x("reduce_sum", "x", "out");
  run_fails(op, s, CT_ERR_UNSUPPORTED, "reduce_sum", "float16", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static Suite *ops_reduce_suite(void) {
  Suite *s = suite_create("ops_reduce");
  CT_ADD_TEST(s, sum_of_three_float32);
  CT_ADD_TEST(s, sum_of_one_copies);
  CT_ADD_TEST(s, sum_of_many_float64_against_loop);
  CT_ADD_TEST(s, sum_int32_wraps);
  CT_ADD_TEST(s, sum_int64);
  CT_ADD_TEST(s, sum_rank0_and_empty);
  CT_ADD_TEST(s, sum_into_one_of_its_inputs);
  CT_ADD_TEST(s, sum_dims_that_differ_are_shape_error);
  CT_ADD_TEST(s, sum_dtypes_that_differ_are_type_mismatch);
  CT_ADD_TEST(s, sum_on_bool_is_unsupported);
  CT_ADD_TEST(s, mean_float32_is_rank0);
  CT_ADD_TEST(s, mean_float64_against_loop);
  CT_ADD_TEST(s, mean_of_a_scalar_is_itself);
  CT_ADD_TEST(s, mean_of_empty_is_nan);
  CT_ADD_TEST(s, mean_float32_sums_in_double);
  CT_ADD_TEST(s, mean_on_int32_is_unsupported);
  CT_ADD_TEST(s, reduce_sum_all_by_default);
  CT_ADD_TEST(s, reduce_sum_all_keep_dim);
  CT_ADD_TEST(s, reduce_sum_last_dim);
  CT_ADD_TEST(s, reduce_sum_first_dim);
  CT_ADD_TEST(s, reduce_sum_middle_dim_keep_dim);
  CT_ADD_TEST(s, reduce_sum_outer_dims);
  CT_ADD_TEST(s, reduce_sum_alternating_dims_rank5);
  CT_ADD_TEST(s, reduce_sum_negative_dims);
  CT_ADD_TEST(s, reduce_sum_explicit_all_dims);
  CT_ADD_TEST(s, reduce_sum_over_size1_dims);
  CT_ADD_TEST(s, reduce_sum_int32);
  CT_ADD_TEST(s, reduce_sum_int64);
  CT_ADD_TEST(s, reduce_sum_rank0);
  CT_ADD_TEST(s, reduce_sum_rank0_dim_0);
  CT_ADD_TEST(s, reduce_sum_over_empty_dim_gives_zeros);
  CT_ADD_TEST(s, reduce_sum_keeping_empty_dim_gives_empty);
  CT_ADD_TEST(s, reduce_sum_all_of_empty_is_zero);
  CT_ADD_TEST(s, reduce_sum_int32_wraps);
  CT_ADD_TEST(s, reduce_sum_float32_folds_in_double);
  CT_ADD_TEST(s, reduce_sum_rows_have_each_rows_own_bits);
  CT_ADD_TEST(s, reduce_sum_dim_out_of_range_is_an_error);
  CT_ADD_TEST(s, reduce_sum_dim_listed_twice_is_an_error);
  CT_ADD_TEST(s, reduce_sum_rank2_dim_on_rank0_is_an_error);
  CT_ADD_TEST(s, reduce_sum_on_float16_is_unsupported);
  return s;
}

CT_TEST_MAIN(ops_reduce_suite)
