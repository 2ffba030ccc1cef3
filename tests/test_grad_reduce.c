/* SPDX-License-Identifier: Apache-2.0 */
/* The gradients of the reduce family (sum, mean, reduce_sum, softmax), against central finite
 * differences in float64 (grad_util.h), with rank 0, size-1 dims and empty tensors; the float32
 * kernels against the float64 ones; a wrong Out@GRAD. */
#include <corten/corten.h>

#include "grad_util.h"

static const char *const just_x[] = {"x"};

/* A grad op of type reading `first` (X or Out) from a and Out@GRAD from g, writing dx. */
static ct_op *grad_op(const char *type, const char *first) {
  ct_op *op = new_op(type);
  ck_assert_int_eq(ct_op_set_input(op, first, "a"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Out@GRAD", "g"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "X@GRAD", "dx"), CT_OK);
  return op;
}

/* ---- sum ------------------------------------------------------------------------------------- */

static void build_sum3(ct_program *p) {
  static const char *const xs[] = {"x", "y", "z"};
  ck_assert_int_eq(ct_program_append(p, op_many("sum", xs, 3, "out")), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

/* Each input of sum gets Out@GRAD; z is data, so it gets none. */
START_TEST(sum_grads_each_input) {
  static const char *const xy[] = {"x", "y"};
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(2, 3), 0.1);
  put_smooth(s, "y", CT_DIMS(2, 3), 0.5);
  put_smooth(s, "z", CT_DIMS(2, 3), 0.9);
  check_grads(s, build_sum3, "loss", xy, 2);
  for (int i = 0; i < 6; i++) ck_assert(var_f64(s, "y@GRAD")[i] == grad_weight(i));
  ck_assert_ptr_null(ct_scope_find_var(s, "z@GRAD"));
  ct_scope_free(s);
}
END_TEST

static void build_sum_twice(ct_program *p) {
  static const char *const xs[] = {"x", "x"};
  ck_assert_int_eq(ct_program_append(p, op_many("sum", xs, 2, "out")), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

/* An input listed twice gets both contributions. */
START_TEST(sum_grad_of_an_input_listed_twice) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(4), 0.1);
  check_grads(s, build_sum_twice, "loss", just_x, 1);
  for (int i = 0; i < 4; i++) ck_assert(var_f64(s, "x@GRAD")[i] == 2 * grad_weight(i));
  ct_scope_free(s);
}
END_TEST

/* ---- mean ------------------------------------------------------------------------------------ */

START_TEST(mean_grads) {
  const ct_ddim dims[] = {CT_DIMS(3, 4), CT_DIMS(), CT_DIMS(1, 1), CT_DIMS(5)};
  for (size_t i = 0; i < 4; i++) check_x_grad("mean", NULL, dims[i]);
}
END_TEST

START_TEST(mean_grad_of_empty_is_empty) {
  ct_scope_free(run_x_backward("mean", NULL, CT_DIMS(0, 3)));
}
END_TEST

/* ---- reduce_sum ------------------------------------------------------------------------------ */

static const int64_t *rs_dim;
static size_t rs_n;
static bool rs_keep;

static void set_rs_attrs(ct_op *op) {
  ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", rs_dim, rs_n), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "keep_dim", rs_keep), CT_OK);
}

static void check_rs(ct_ddim xd, const int64_t *dim, size_t n, bool keep) {
  rs_dim = dim;
  rs_n = n;
  rs_keep = keep;
  check_x_grad("reduce_sum", set_rs_attrs, xd);
}

START_TEST(reduce_sum_grads) {
  static const int64_t d1[] = {1}, d02[] = {0, 2}, dlast[] = {-1};
  check_rs(CT_DIMS(2, 3, 4), d1, 1, false);
  check_rs(CT_DIMS(2, 3, 4), d1, 1, true);
  check_rs(CT_DIMS(2, 3, 4), d02, 2, false);
  check_rs(CT_DIMS(2, 3, 4), d02, 2, true);
  check_rs(CT_DIMS(2, 3), NULL, 0, false); /* every dim */
  check_rs(CT_DIMS(5), dlast, 1, true);
}
END_TEST

START_TEST(reduce_sum_grads_rank0_and_size1_dims) {
  static const int64_t d0[] = {0}, d2[] = {2};
  check_rs(CT_DIMS(), NULL, 0, false);
  check_rs(CT_DIMS(), d0, 1, true);
  check_rs(CT_DIMS(1, 3, 1), d0, 1, false); /* only extent-1 dims summed */
  check_rs(CT_DIMS(1, 3, 1), d2, 1, true);
}
END_TEST

/* Summing over an empty dim gives zeros, whose gradient is an empty tensor; summing an empty
 * tensor over a full dim gives an empty Out and an empty gradient. */
START_TEST(reduce_sum_grads_empty) {
  static const int64_t d0[] = {0}, d1[] = {1};
  rs_dim = d1, rs_n = 1, rs_keep = false;
  ct_scope_free(run_x_backward("reduce_sum", set_rs_attrs, CT_DIMS(2, 0)));
  rs_dim = d0, rs_n = 1, rs_keep = true;
  ct_scope_free(run_x_backward("reduce_sum", set_rs_attrs, CT_DIMS(0, 3)));
}
END_TEST

/* ---- softmax --------------------------------------------------------------------------------- */

static int64_t sm_axis;

static void set_sm_axis(ct_op *op) {
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", sm_axis), CT_OK);
}

static void check_softmax(ct_ddim xd, int64_t axis) {
  sm_axis = axis;
  check_x_grad("softmax", set_sm_axis, xd);
}

START_TEST(softmax_grads) {
  check_softmax(CT_DIMS(2, 5), -1);
  check_softmax(CT_DIMS(3, 2), 0);
  check_softmax(CT_DIMS(2, 3, 4), 1);
}
END_TEST

/* Along an axis of one element (or rank 0) softmax is constant 1: the gradient is exactly 0. */
START_TEST(softmax_grads_rank0_and_size1_axis) {
  const ct_ddim dims[] = {CT_DIMS(), CT_DIMS(3, 1)};
  const int64_t axes[] = {0, 1};
  for (size_t i = 0; i < 2; i++) {
    check_softmax(dims[i], axes[i]);
    ct_scope *s = run_x_backward("softmax", set_sm_axis, dims[i]);
    for (int64_t j = 0; j < ct_ddim_numel(dims[i]); j++) {
      ck_assert(var_f64(s, "x@GRAD")[j] == 0.0);
    }
    ct_scope_free(s);
  }
}
END_TEST

/* More columns after the axis than the kernel takes at once (64): each of the 2 x 70 rows along
 * axis 1 gets Out (Out@GRAD - sum(Out@GRAD Out)), computed here directly (to rounding). */
START_TEST(softmax_grad_over_many_columns) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "a", CT_DIMS(2, 3, 70), 0.1);
  put_smooth(s, "g", CT_DIMS(2, 3, 70), 0.6);
  ct_op *op = grad_op("softmax_grad", "Out");
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", 1), CT_OK);
  run(op, s);
  const double *o = var_f64(s, "a"), *g = var_f64(s, "g"), *dx = var_f64(s, "dx");
  for (int a = 0; a < 2; a++) {
    for (int j = 0; j < 70; j++) {
      double dot = 0;
      for (int i = 0; i < 3; i++) dot += g[(a * 3 + i) * 70 + j] * o[(a * 3 + i) * 70 + j];
      for (int i = 0; i < 3; i++) {
        int at = (a * 3 + i) * 70 + j;
        double want = o[at] * (g[at] - dot);
        ck_assert_msg(fabs(dx[at] - want) <= 1e-15, "dx[%d] = %.17g, want %.17g", at, dx[at], want);
      }
    }
  }
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(softmax_grad_of_empty_is_empty) {
  sm_axis = -1;
  ct_scope_free(run_x_backward("softmax", set_sm_axis, CT_DIMS(0, 4)));
}
END_TEST

/* ---- float32 against float64, and a wrong Out@GRAD ------------------------------------------ */

START_TEST(reduce_grads_f32_match_f64) {
  static const char *const ins[] = {"a", "g"}, *const outs[] = {"dx"};
  static const int64_t d1[] = {1};
  const ct_ddim sm_dims[] = {CT_DIMS(2, 3, 4), CT_DIMS(2, 3, 4)};
  ct_op *op = grad_op("softmax_grad", "Out");
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", 1), CT_OK);
  check_f32_matches_f64(op, ins, sm_dims, 2, outs, 1);
  ct_op_free(op);
  const ct_ddim rs_dims[] = {CT_DIMS(2, 3, 4), CT_DIMS(2, 1, 4)};
  op = grad_op("reduce_sum_grad", "X");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", d1, 1), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "keep_dim", true), CT_OK);
  check_f32_matches_f64(op, ins, rs_dims, 2, outs, 1);
  ct_op_free(op);
  const ct_ddim mean_dims[] = {CT_DIMS(3, 2), CT_DIMS()};
  op = grad_op("mean_grad", "X");
  check_f32_matches_f64(op, ins, mean_dims, 2, outs, 1);
  ct_op_free(op);
}
END_TEST

/* reduce_sum_grad refuses an Out@GRAD without keep_dim's dims, naming the op and variable. */
START_TEST(reduce_sum_grad_refuses_wrong_dout) {
  static const int64_t d1[] = {1};
  ct_scope *s = ct_scope_new();
  put_smooth(s, "a", CT_DIMS(2, 3), 0.1);
  put_smooth(s, "g", CT_DIMS(2), 0.2);
  ct_op *op = grad_op("reduce_sum_grad", "X");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", d1, 1), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "keep_dim", true), CT_OK);
  run_fails(op, s, CT_ERR_SHAPE, "reduce_sum_grad", "Out@GRAD", "'g'", "[2]", "[2,1]", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("grad_reduce");
  CT_ADD_TEST(s, sum_grads_each_input);
  CT_ADD_TEST(s, sum_grad_of_an_input_listed_twice);
  CT_ADD_TEST(s, mean_grads);
  CT_ADD_TEST(s, mean_grad_of_empty_is_empty);
  CT_ADD_TEST(s, reduce_sum_grads);
  CT_ADD_TEST(s, reduce_sum_grads_rank0_and_size1_dims);
  CT_ADD_TEST(s, reduce_sum_grads_empty);
  CT_ADD_TEST(s, softmax_grads);
  CT_ADD_TEST(s, softmax_grads_rank0_and_size1_axis);
  CT_ADD_TEST(s, softmax_grad_over_many_columns);
  CT_ADD_TEST(s, softmax_grad_of_empty_is_empty);
  CT_ADD_TEST(s, reduce_grads_f32_match_f64);
  CT_ADD_TEST(s, reduce_sum_grad_refuses_wrong_dout);
  return s;
}

CT_TEST_MAIN(make_suite)
