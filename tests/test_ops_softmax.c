/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of softmax on the CPU against a naive double computation: along every axis (negative
 * ones too), large values that must not overflow, -inf, rank 0 and empty tensors, rows that sum
 * to one, in place, and the errors. Each test runs in its own process. The helpers are in
 * op_util.h. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "op_util.h"
#include "ops/cpu/vmath.h"

/* ---- softmax --------------------------------------------------------------------------------- */

/* Runs softmax over X (dims xd, dtype dt, values v(i)) along axis (INT64_MIN: the default) and
 * checks Out against a naive double computation, within tol relative. */
static void check_softmax(ct_dtype dt, ct_ddim xd, int64_t axis, double (*v)(int64_t),
                          double tol) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", dt, xd, v);
  ct_op *op = op_x("softmax", "x", "out");
  if (axis != INT64_MIN) ck_assert_int_eq(ct_op_set_attr_int(op, "axis", axis), CT_OK);
  run(op, s);
  const void *out = result(s, "out", dt, xd);
  int a = (int)(axis == INT64_MIN ? -1 : axis);
  if (a < 0) a += xd.rank > 0 ? xd.rank : 1;
  int64_t outer = 1, n = 1, inner = 1;
  for (int k = 0; k < xd.rank; k++) {
    if (k < a) outer *= xd.d[k];
    if (k == a) n = xd.d[k];
    if (k > a) inner *= xd.d[k];
  }
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t i = 0; i < inner; i++) {
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < n; j++) mx = fmax(mx, v((o * n + j) * inner + i));
      for (int64_t j = 0; j < n; j++) sum += exp(v((o * n + j) * inner + i) - mx);
      for (int64_t j = 0; j < n; j++) {
        int64_t at = (o * n + j) * inner + i;
        double want = exp(v(at) - mx) / sum, got = get_elem(out, dt, at);
        ck_assert_msg(fabs(got - want) <= tol * want, "element %lld: %.17g, expected %.17g",
                      (long long)at, got, want);
      }
    }
  }
  ct_op_free(op);
  ct_scope_free(s);
}

static double data_big(int64_t i) { return 1000.0 + (double)(i % 5); }

START_TEST(softmax_last_axis_by_default) {
  check_softmax(CT_FLOAT32, CT_DIMS(2, 3), INT64_MIN, data_unary, TOL32);
}
END_TEST
START_TEST(softmax_first_axis) { check_softmax(CT_FLOAT32, CT_DIMS(3, 2), 0, data_unary, TOL32); }
END_TEST
START_TEST(softmax_middle_axis) {
  check_softmax(CT_FLOAT64, CT_DIMS(2, 3, 4), 1, data_unary, TOL64);
}
END_TEST
START_TEST(softmax_negative_axis) {
  check_softmax(CT_FLOAT64, CT_DIMS(2, 3, 4), -2, data_unary, TOL64);
}
END_TEST
START_TEST(softmax_large_values_do_not_overflow) {
  check_softmax(CT_FLOAT32, CT_DIMS(4, 5), -1, data_big, TOL32);
}
END_TEST
START_TEST(softmax_axis_of_one) {
  check_softmax(CT_FLOAT32, CT_DIMS(3, 1), 1, data_unary, 0);
}
END_TEST
START_TEST(softmax_rank0_is_one) { check_softmax(CT_FLOAT64, CT_DIMS(), INT64_MIN, data_unary, 0); }
END_TEST
START_TEST(softmax_empty) { check_softmax(CT_FLOAT32, CT_DIMS(0, 3), 1, data_unary, 0); }
END_TEST
START_TEST(softmax_over_empty_axis) { check_softmax(CT_FLOAT32, CT_DIMS(2, 0), 1, data_unary, 0); }
END_TEST

START_TEST(softmax_rows_sum_to_one) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT64, CT_DIMS(5, 17), data_unary);
  ct_op *op = op_x("softmax", "x", "out");
  run(op, s);
  const double *o = result(s, "out", CT_FLOAT64, CT_DIMS(5, 17));
  for (int r = 0; r < 5; r++) {
    double sum = 0;
    for (int j = 0; j < 17; j++) sum += o[r * 17 + j];
    ck_assert(fabs(sum - 1) < 1e-14);
  }
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* A row summed in 8 lanes gives the same bits whether it is contiguous (axis 1 of [70, C]) or
 * strided (axis 0 of the transpose, [C, 70]): rows of 37 (not a multiple of 8), and short rows
 * (32 or fewer, taken 16 rows at a time: 70 = 4 x 16 + 6) of 10, 3, 1 and 32, and 33; rows with
 * blocks of 64 summed through float partials: 130 (two, then 2 left) and 200 (three, an 8). */
static double data_spread(int64_t i) { return (double)((i * 7919) % 1000) / 128 - 4; }

static void same_bits_along_any_axis(int C) {
  enum { R = 70 };
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(R, C), data_spread);
  float *xt = malloc(sizeof(float) * (size_t)(C * R));
  for (int i = 0; i < R; i++) {
    for (int j = 0; j < C; j++) xt[j * R + i] = (float)data_spread(i * C + j);
  }
  put(s, "xt", CT_FLOAT32, CT_DIMS(C, R), xt);
  ct_op *a = op_x("softmax", "x", "a"), *b = op_x("softmax", "xt", "b");
  ck_assert_int_eq(ct_op_set_attr_int(b, "axis", 0), CT_OK);
  run(a, s);
  run(b, s);
  const float *oa = result(s, "a", CT_FLOAT32, CT_DIMS(R, C));
  const float *ob = result(s, "b", CT_FLOAT32, CT_DIMS(C, R));
  for (int i = 0; i < R; i++) {
    for (int j = 0; j < C; j++) {
      ck_assert_msg(f32_bits(oa[i * C + j]) == f32_bits(ob[j * R + i]), "[%d, %d]", i, j);
    }
  }
  ct_op_free(a);
  ct_op_free(b);
  ct_scope_free(s);
  free(xt);
}

START_TEST(softmax_same_bits_along_any_axis) {
  static const int widths[] = {37, 10, 3, 1, 32, 33, 130, 200};
  for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) same_bits_along_any_axis(widths[w]);
}
END_TEST

/* float32: exp(x - max) (ops/cpu/vmath.h's softmax exp, with fused multiply-adds), the exps
 * summed in 8 double lanes: each whole block of 64 as 16 float partials (partial k of elements k,
 * k + 16, k + 32, k + 48 in that order), partials 0 .. 15 into lanes k % 8; then element i of the
 * first C - C % 8 into lane i % 8, the rest into lane 0; the lanes added pairwise. Each exp is
 * multiplied by 1 / sum rounded to float32: those bits exactly, contiguous and strided. Rows of
 * 37 (two 16s and 5 left), 61 (three 16s, an 8 and 5: the AVX-512 row's every step), 1000
 * (15 blocks, three 16s, an 8) and 1031. */
static void exact_row(int C, double (*data)(int64_t)) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(C), data);
  put_fn(s, "xt", CT_FLOAT32, CT_DIMS(C, 1), data);
  ct_op *a = op_x("softmax", "x", "a"), *b = op_x("softmax", "xt", "b");
  ck_assert_int_eq(ct_op_set_attr_int(b, "axis", 0), CT_OK);
  run(a, s);
  run(b, s);
  float *x = malloc(sizeof(float) * (size_t)C), m = -INFINITY;
  ck_assert_ptr_nonnull(x);
  for (int i = 0; i < C; i++) {
    x[i] = (float)data(i);
    m = x[i] > m ? x[i] : m;
  }
  double l[8] = {0};
  int i0 = 0;
  for (; i0 + 64 <= C; i0 += 64) {
    for (int k = 0; k < 16; k++) {
      float f = ct__vexpf_sm(x[i0 + k] - m) + ct__vexpf_sm(x[i0 + 16 + k] - m);
      f = f + ct__vexpf_sm(x[i0 + 32 + k] - m);
      l[k % 8] += (double)(f + ct__vexpf_sm(x[i0 + 48 + k] - m));
    }
  }
  for (int i = i0; i < C; i++) l[i < C - C % 8 ? i % 8 : 0] += (double)ct__vexpf_sm(x[i] - m);
  float inv = (float)(1.0 / (((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))));
  const float *oa = result(s, "a", CT_FLOAT32, CT_DIMS(C));
  const float *ob = result(s, "b", CT_FLOAT32, CT_DIMS(C, 1));
  for (int i = 0; i < C; i++) {
    float want = ct__vexpf_sm(x[i] - m) * inv;
    ck_assert_msg(f32_bits(oa[i]) == f32_bits(want), "C %d [%d]: %a, expected %a", C, i, oa[i],
                  want);
    ck_assert_msg(f32_bits(ob[i]) == f32_bits(want), "C %d [%d, 0]: %a, expected %a", C, i,
                  ob[i], want);
  }
  free(x);
  ct_op_free(a);
  ct_op_free(b);
  ct_scope_free(s);
}

START_TEST(softmax_float32_is_exp_times_the_rounded_reciprocal) {
  static const int widths[] = {37, 61, 1000, 1031};
  for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) exact_row(widths[w], data_spread);
}
END_TEST

/* The row's max taken in lanes and folded (ops/cpu/softmax_row.h) gives the same bits: a max
 * among the last n % 32 elements (6.5 at 1030 of 1031, the rest below 4), and a max of zero
 * held as -0 (element 1) and +0 (element 16), the rest negative: the lanes keep -0 in lane 1
 * and +0 in lane 16, and the fold ends with +0 where a max taken in element order keeps the
 * first, -0; exp(x - m) is the same for either. */
static double data_max_last(int64_t i) { return i == 1030 ? 6.5 : data_spread(i); }
static double data_zero_max(int64_t i) {
  return i == 1 ? -0.0 : i == 16 ? 0.0 : -(double)(1 + (i * 7919) % 1000) / 128;
}
START_TEST(softmax_row_max_in_its_tail_or_a_signed_zero) {
  exact_row(1031, data_max_last);
  exact_row(45, data_zero_max);
  exact_row(1031, data_zero_max);
}
END_TEST

/* A row holding NaN (first or later) or +inf is NaN throughout, along either axis (the max skips
 * NaN: the row's exps and their sum carry it). The other rows are untouched. */
START_TEST(softmax_row_holding_nan_or_inf_is_nan) {
  float x[4][3] = {{1, NAN, 2}, {NAN, 1, 2}, {1, INFINITY, 2}, {1, 1, 1}};
  float xt[3][4];
  for (int i = 0; i < 4; i++) {
    for (int j = 0; j < 3; j++) xt[j][i] = x[i][j];
  }
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT32, CT_DIMS(4, 3), x);
  put(s, "xt", CT_FLOAT32, CT_DIMS(3, 4), xt);
  ct_op *a = op_x("softmax", "x", "a"), *b = op_x("softmax", "xt", "b");
  ck_assert_int_eq(ct_op_set_attr_int(b, "axis", 0), CT_OK);
  run(a, s);
  run(b, s);
  const float *oa = result(s, "a", CT_FLOAT32, CT_DIMS(4, 3));
  const float *ob = result(s, "b", CT_FLOAT32, CT_DIMS(3, 4));
  for (int i = 0; i < 4; i++) {
    for (int j = 0; j < 3; j++) {
      if (i < 3) {
        ck_assert_msg(isnan(oa[i * 3 + j]) && isnan(ob[j * 4 + i]), "[%d, %d]", i, j);
      } else {
        ck_assert(oa[i * 3 + j] == ob[j * 4 + i] && fabsf(oa[i * 3 + j] - 1.0f / 3) < 1e-7f);
      }
    }
  }
  ct_op_free(a);
  ct_op_free(b);
  ct_scope_free(s);
}
END_TEST

START_TEST(softmax_of_minus_inf_is_zero) {
  ct_scope *s = ct_scope_new();
  float x[3] = {-INFINITY, 0, 0};
  put(s, "x", CT_FLOAT32, CT_DIMS(3), x);
  ct_op *op = op_x("softmax", "x", "out");
  run(op, s);
  const float *o = result(s, "out", CT_FLOAT32, CT_DIMS(3));
  ck_assert(o[0] == 0 && o[1] == 0.5f && o[2] == 0.5f);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(softmax_in_place) {
  ct_scope *s = ct_scope_new();
  double x[2] = {0, 0};
  put(s, "x", CT_FLOAT64, CT_DIMS(2), x);
  ct_op *op = op_x("softmax", "x", "x");
  run(op, s);
  const double *o = result(s, "x", CT_FLOAT64, CT_DIMS(2));
  ck_assert(o[0] == 0.5 && o[1] == 0.5);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(softmax_axis_out_of_range_is_an_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 3), data_unary);
  ct_op *op = op_x("softmax", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", 2), CT_OK);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "softmax", "'axis'", "'x'", "rank 2", NULL);
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", -3), CT_OK);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "softmax", "-3", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(softmax_on_int32_is_unsupported) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_INT32, CT_DIMS(3), data_x);
  ct_op *op = op_x("softmax", "x", "out");
  run_fails(op, s, CT_ERR_UNSUPPORTED, "softmax", "int32", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static Suite *ops_softmax_suite(void) {
  Suite *s = suite_create("ops_softmax");
  CT_ADD_TEST(s, softmax_last_axis_by_default);
  CT_ADD_TEST(s, softmax_first_axis);
  CT_ADD_TEST(s, softmax_middle_axis);
  CT_ADD_TEST(s, softmax_negative_axis);
  CT_ADD_TEST(s, softmax_large_values_do_not_overflow);
  CT_ADD_TEST(s, softmax_axis_of_one);
  CT_ADD_TEST(s, softmax_rank0_is_one);
  CT_ADD_TEST(s, softmax_empty);
  CT_ADD_TEST(s, softmax_over_empty_axis);
  CT_ADD_TEST(s, softmax_rows_sum_to_one);
  CT_ADD_TEST(s, softmax_same_bits_along_any_axis);
  CT_ADD_TEST(s, softmax_float32_is_exp_times_the_rounded_reciprocal);
  CT_ADD_TEST(s, softmax_row_max_in_its_tail_or_a_signed_zero);
  CT_ADD_TEST(s, softmax_row_holding_nan_or_inf_is_nan);
  CT_ADD_TEST(s, softmax_of_minus_inf_is_zero);
  CT_ADD_TEST(s, softmax_in_place);
  CT_ADD_TEST(s, softmax_axis_out_of_range_is_an_error);
  CT_ADD_TEST(s, softmax_on_int32_is_unsupported);
  return s;
}

CT_TEST_MAIN(ops_softmax_suite)
