/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of matmul on the CPU against a naive loop computed here by numpy's rules: transposes,
 * batch dims that broadcast, rank-1 operands, K = 0 and other empty shapes, sizes past the BLAS
 * blocks, X times itself, and every shape and dtype error. Each test runs in its own process.
 * The helpers are in op_util.h. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "op_util.h"

/* ---- matmul ---------------------------------------------------------------------------------- */

/* The matmul of X (dims xd) and Y (dims yd) by numpy's rules, computed here with a naive loop:
 * rank-1 operands are a row and a column, batch dims broadcast. */
static void naive_matmul(const double *x, ct_ddim xd, bool tx, const double *y, ct_ddim yd,
                         bool ty, ct_ddim out, double *o) {
  bool xv = xd.rank == 1, yv = yd.rank == 1;
  if (xv) tx = false;
  if (yv) ty = false;
  int64_t xr = xv ? 1 : xd.d[xd.rank - 2], xc = xd.d[xd.rank - 1];
  int64_t yr = yv ? yd.d[0] : yd.d[yd.rank - 2], yc = yv ? 1 : yd.d[yd.rank - 1];
  int64_t m = tx ? xc : xr, k = tx ? xr : xc, n = ty ? yr : yc;
  ct_ddim xb = {.rank = xv ? 0 : xd.rank - 2}, yb = {.rank = yv ? 0 : yd.rank - 2};
  ct_ddim ob = {.rank = out.rank - (xv ? 0 : 1) - (yv ? 0 : 1)};
  for (int i = 0; i < xb.rank; i++) xb.d[i] = xd.d[i];
  for (int i = 0; i < yb.rank; i++) yb.d[i] = yd.d[i];
  for (int i = 0; i < ob.rank; i++) ob.d[i] = out.d[i];
  for (int64_t b = 0, nb = ct_ddim_numel(ob); b < nb; b++) {
    const double *xm = x + bcast_src(ob, xb, b) * xr * xc;
    const double *ym = y + bcast_src(ob, yb, b) * yr * yc;
    for (int64_t i = 0; i < m; i++) {
      for (int64_t j = 0; j < n; j++) {
        double acc = 0;
        for (int64_t p = 0; p < k; p++) {
          double a = tx ? xm[p * xc + i] : xm[i * xc + p];
          double c = ty ? ym[j * yc + p] : ym[p * yc + j];
          acc += a * c;
        }
        o[(b * m + i) * n + j] = acc;
      }
    }
  }
}

/* Runs matmul on X and Y of dtype dt holding small integers (every product and sum exact, so
 * BLAS must match the naive loop exactly) and checks Out's dims and values. */
static void check_matmul(ct_dtype dt, ct_ddim xd, bool tx, ct_ddim yd, bool ty, ct_ddim want) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", dt, xd, data_x);
  put_fn(s, "y", dt, yd, data_y);
  ct_op *op = op_xy("matmul", "x", "y", "out");
  if (tx) ck_assert_int_eq(ct_op_set_attr_bool(op, "transpose_x", true), CT_OK);
  if (ty) ck_assert_int_eq(ct_op_set_attr_bool(op, "transpose_y", true), CT_OK);
  run(op, s);
  const void *out = result(s, "out", dt, want);
  int64_t nx = ct_ddim_numel(xd), ny = ct_ddim_numel(yd), no = ct_ddim_numel(want);
  double *x = xmalloc(nx, 8), *y = xmalloc(ny, 8), *ref = xmalloc(no, 8);
  for (int64_t i = 0; i < nx; i++) x[i] = data_x(i);
  for (int64_t i = 0; i < ny; i++) y[i] = data_y(i);
  naive_matmul(x, xd, tx, y, yd, ty, want, ref);
  for (int64_t i = 0; i < no; i++) {
    ck_assert_msg(get_elem(out, dt, i) == ref[i], "element %lld: %g, expected %g", (long long)i,
                  get_elem(out, dt, i), ref[i]);
  }
  free(x);
  free(y);
  free(ref);
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(matmul_plain) {
  check_matmul(CT_FLOAT32, CT_DIMS(2, 3), false, CT_DIMS(3, 4), false, CT_DIMS(2, 4));
}
END_TEST
START_TEST(matmul_float64) {
  check_matmul(CT_FLOAT64, CT_DIMS(5, 7), false, CT_DIMS(7, 3), false, CT_DIMS(5, 3));
}
END_TEST
START_TEST(matmul_transpose_x) {
  check_matmul(CT_FLOAT32, CT_DIMS(3, 2), true, CT_DIMS(3, 4), false, CT_DIMS(2, 4));
}
END_TEST
START_TEST(matmul_transpose_y) {
  check_matmul(CT_FLOAT32, CT_DIMS(2, 3), false, CT_DIMS(4, 3), true, CT_DIMS(2, 4));
}
END_TEST
START_TEST(matmul_transpose_both) {
  check_matmul(CT_FLOAT64, CT_DIMS(3, 2), true, CT_DIMS(4, 3), true, CT_DIMS(2, 4));
}
END_TEST
START_TEST(matmul_batched_x_shared_y) {
  check_matmul(CT_FLOAT32, CT_DIMS(2, 3, 4), false, CT_DIMS(4, 5), false, CT_DIMS(2, 3, 5));
}
END_TEST
START_TEST(matmul_batched_x_shared_y_transposed) {
  check_matmul(CT_FLOAT32, CT_DIMS(2, 4, 3), true, CT_DIMS(5, 4), true, CT_DIMS(2, 3, 5));
}
END_TEST
START_TEST(matmul_batched_both) {
  check_matmul(CT_FLOAT32, CT_DIMS(3, 2, 4), false, CT_DIMS(3, 4, 2), false, CT_DIMS(3, 2, 2));
}
END_TEST
START_TEST(matmul_shared_x_batched_y) {
  check_matmul(CT_FLOAT64, CT_DIMS(2, 4), false, CT_DIMS(3, 4, 5), false, CT_DIMS(3, 2, 5));
}
END_TEST
START_TEST(matmul_batch_dims_broadcast) {
  check_matmul(CT_FLOAT32, CT_DIMS(2, 1, 2, 3), false, CT_DIMS(4, 3, 5), false,
               CT_DIMS(2, 4, 2, 5));
}
END_TEST
START_TEST(matmul_batch_dims_broadcast_with_ones_in_x) {
  check_matmul(CT_FLOAT32, CT_DIMS(1, 3, 2, 3), true, CT_DIMS(2, 1, 2, 4), false,
               CT_DIMS(2, 3, 3, 4));
}
END_TEST
START_TEST(matmul_vector_times_matrix) {
  check_matmul(CT_FLOAT32, CT_DIMS(3), false, CT_DIMS(3, 4), false, CT_DIMS(4));
}
END_TEST
START_TEST(matmul_matrix_times_vector) {
  check_matmul(CT_FLOAT32, CT_DIMS(2, 3), false, CT_DIMS(3), false, CT_DIMS(2));
}
END_TEST
START_TEST(matmul_transposed_matrix_times_vector) {
  check_matmul(CT_FLOAT64, CT_DIMS(3, 2), true, CT_DIMS(3), false, CT_DIMS(2));
}
END_TEST
START_TEST(matmul_vector_dot_vector_is_scalar) {
  check_matmul(CT_FLOAT32, CT_DIMS(5), false, CT_DIMS(5), false, CT_DIMS());
}
END_TEST
START_TEST(matmul_vector_ignores_transpose) {
  check_matmul(CT_FLOAT32, CT_DIMS(3), true, CT_DIMS(3), true, CT_DIMS());
}
END_TEST
START_TEST(matmul_batched_matrix_times_vector) {
  check_matmul(CT_FLOAT32, CT_DIMS(2, 2, 3), false, CT_DIMS(3), false, CT_DIMS(2, 2));
}
END_TEST
START_TEST(matmul_vector_times_batched_matrix) {
  check_matmul(CT_FLOAT32, CT_DIMS(3), false, CT_DIMS(2, 3, 4), false, CT_DIMS(2, 4));
}
END_TEST
START_TEST(matmul_k0_gives_zeros) {
  check_matmul(CT_FLOAT32, CT_DIMS(2, 0), false, CT_DIMS(0, 3), false, CT_DIMS(2, 3));
}
END_TEST
START_TEST(matmul_batched_k0_gives_zeros) {
  check_matmul(CT_FLOAT64, CT_DIMS(2, 2, 0), false, CT_DIMS(0, 3), false, CT_DIMS(2, 2, 3));
}
END_TEST
START_TEST(matmul_m0_gives_empty) {
  check_matmul(CT_FLOAT32, CT_DIMS(0, 3), false, CT_DIMS(3, 4), false, CT_DIMS(0, 4));
}
END_TEST
START_TEST(matmul_empty_batch_gives_empty) {
  check_matmul(CT_FLOAT32, CT_DIMS(0, 2, 3), false, CT_DIMS(3, 4), false, CT_DIMS(0, 2, 4));
}
END_TEST
START_TEST(matmul_larger_than_blas_blocks) {
  check_matmul(CT_FLOAT32, CT_DIMS(67, 129), false, CT_DIMS(129, 33), false,
               CT_DIMS(67, 33));
}
END_TEST

START_TEST(matmul_inner_dims_that_differ_are_shape_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 3), data_x);
  put_fn(s, "y", CT_FLOAT32, CT_DIMS(4, 5), data_y);
  ct_op *op = op_xy("matmul", "x", "y", "out");
  run_fails(op, s, CT_ERR_SHAPE, "matmul", "'x'", "[2,3]", "'y'", "[4,5]", NULL);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "transpose_y", true), CT_OK);
  run_fails(op, s, CT_ERR_SHAPE, "(transposed)", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(matmul_batch_dims_that_do_not_broadcast_are_shape_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 2, 3), data_x);
  put_fn(s, "y", CT_FLOAT32, CT_DIMS(3, 3, 4), data_y);
  ct_op *op = op_xy("matmul", "x", "y", "out");
  run_fails(op, s, CT_ERR_SHAPE, "batch", "'x'", "'y'", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(matmul_of_a_scalar_is_shape_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(), data_x);
  put_fn(s, "y", CT_FLOAT32, CT_DIMS(3), data_y);
  ct_op *op = op_xy("matmul", "x", "y", "out");
  run_fails(op, s, CT_ERR_SHAPE, "'x'", "rank", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(matmul_dtypes_that_differ_are_type_mismatch) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 3), data_x);
  put_fn(s, "y", CT_FLOAT64, CT_DIMS(3, 2), data_y);
  ct_op *op = op_xy("matmul", "x", "y", "out");
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "matmul", "'y'", "float64", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(matmul_on_int32_is_unsupported) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_INT32, CT_DIMS(2, 3), data_x);
  put_fn(s, "y", CT_INT32, CT_DIMS(3, 2), data_y);
  ct_op *op = op_xy("matmul", "x", "y", "out");
  run_fails(op, s, CT_ERR_UNSUPPORTED, "matmul", "int32", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(matmul_x_with_itself) {
  ct_scope *s = ct_scope_new();
  float x[4] = {1, 2, 3, 4};
  put(s, "x", CT_FLOAT32, CT_DIMS(2, 2), x);
  ct_op *op = op_xy("matmul", "x", "x", "x");
  run(op, s);
  const float *o = result(s, "x", CT_FLOAT32, CT_DIMS(2, 2));
  ck_assert(o[0] == 7 && o[1] == 10 && o[2] == 15 && o[3] == 22);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static Suite *ops_matmul_suite(void) {
  Suite *s = suite_create("ops_matmul");
  CT_ADD_TEST(s, matmul_plain);
  CT_ADD_TEST(s, matmul_float64);
  CT_ADD_TEST(s, matmul_transpose_x);
  CT_ADD_TEST(s, matmul_transpose_y);
  CT_ADD_TEST(s, matmul_transpose_both);
  CT_ADD_TEST(s, matmul_batched_x_shared_y);
  CT_ADD_TEST(s, matmul_batched_x_shared_y_transposed);
  CT_ADD_TEST(s, matmul_batched_both);
  CT_ADD_TEST(s, matmul_shared_x_batched_y);
  CT_ADD_TEST(s, matmul_batch_dims_broadcast);
  CT_ADD_TEST(s, matmul_batch_dims_broadcast_with_ones_in_x);
  CT_ADD_TEST(s, matmul_vector_times_matrix);
  CT_ADD_TEST(s, matmul_matrix_times_vector);
  CT_ADD_TEST(s, matmul_transposed_matrix_times_vector);
  CT_ADD_TEST(s, matmul_vector_dot_vector_is_scalar);
  CT_ADD_TEST(s, matmul_vector_ignores_transpose);
  CT_ADD_TEST(s, matmul_batched_matrix_times_vector);
  CT_ADD_TEST(s, matmul_vector_times_batched_matrix);
  CT_ADD_TEST(s, matmul_k0_gives_zeros);
  CT_ADD_TEST(s, matmul_batched_k0_gives_zeros);
  CT_ADD_TEST(s, matmul_m0_gives_empty);
  CT_ADD_TEST(s, matmul_empty_batch_gives_empty);
  CT_ADD_TEST(s, matmul_larger_than_blas_blocks);
  CT_ADD_TEST(s, matmul_inner_dims_that_differ_are_shape_error);
  CT_ADD_TEST(s, matmul_batch_dims_that_do_not_broadcast_are_shape_error);
  CT_ADD_TEST(s, matmul_of_a_scalar_is_shape_error);
  CT_ADD_TEST(s, matmul_dtypes_that_differ_are_type_mismatch);
  CT_ADD_TEST(s, matmul_on_int32_is_unsupported);
  CT_ADD_TEST(s, matmul_x_with_itself);
  return s;
}

CT_TEST_MAIN(ops_matmul_suite)
