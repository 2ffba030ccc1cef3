/* SPDX-License-Identifier: Apache-2.0 */
/* The gradients of the shape family (reshape, transpose, concat), against central finite
 * differences in float64 (grad_util.h), with rank 0, size-1 dims and empty tensors; the float32
 * kernels against the float64 ones; wrong Out@GRAD and X@GRAD wirings. */
#include <corten/corten.h>

#include "grad_util.h"

/* ---- reshape and transpose ------------------------------------------------------------------ */

/* The ints attribute (`shape` or `axis`) of the op checked. */
static const char *ints_name;
static const int64_t *ints_v;
static size_t ints_n;

static void set_ints(ct_op *op) {
  ck_assert_int_eq(ct_op_set_attr_ints(op, ints_name, ints_v, ints_n), CT_OK);
}

static void check_ints(const char *type, ct_ddim xd, const int64_t *v, size_t n) {
  ints_name = strcmp(type, "reshape") == 0 ? "shape" : "axis";
  ints_v = v;
  ints_n = n;
  check_x_grad(type, set_ints, xd);
}

/* `shape` with 0 (copy X's dim) and -1 (inferred): the gradient takes X's dims at run time. */
START_TEST(reshape_grads) {
  static const int64_t s1[] = {3, -1, 2}, s2[] = {0, -1}, s3[] = {1}, s4[] = {1, 1, 1};
  check_ints("reshape", CT_DIMS(2, 6), s1, 3);
  check_ints("reshape", CT_DIMS(2, 3, 2), s2, 2);
  check_ints("reshape", CT_DIMS(), s3, 1);     /* rank 0 to [1] */
  check_ints("reshape", CT_DIMS(1), NULL, 0);  /* [1] to rank 0 */
  check_ints("reshape", CT_DIMS(1, 1), s4, 3); /* size-1 dims */
}
END_TEST

/* The gradient shares Out@GRAD's memory (reshape copies nothing either way); empty X too. */
START_TEST(reshape_grad_shares_memory_and_takes_empty) {
  static const int64_t s1[] = {4, -1}, s2[] = {3, 0, -1};
  ints_name = "shape", ints_v = s1, ints_n = 2;
  ct_scope *s = run_x_backward("reshape", set_ints, CT_DIMS(2, 6));
  ck_assert(ct_tensor_shares_memory(tensor_dims(s, "x@GRAD", CT_DIMS(2, 6)),
                                    tensor_dims(s, "out@GRAD", CT_DIMS(4, 3))));
  ct_scope_free(s);
  ints_v = s2, ints_n = 3;
  ct_scope_free(run_x_backward("reshape", set_ints, CT_DIMS(0, 3)));
}
END_TEST

START_TEST(transpose_grads) {
  static const int64_t a1[] = {2, 0, 1}, a2[] = {-1, 0, 1}, a3[] = {1, 0}, a4[] = {0};
  check_ints("transpose", CT_DIMS(2, 3, 4), a1, 3);
  check_ints("transpose", CT_DIMS(4, 2, 3), a2, 3);
  check_ints("transpose", CT_DIMS(3, 5), a3, 2);
  check_ints("transpose", CT_DIMS(4), a4, 1);
  check_ints("transpose", CT_DIMS(), NULL, 0);
}
END_TEST

START_TEST(transpose_grads_size1_dims_and_empty) {
  static const int64_t a1[] = {2, 1, 0}, a2[] = {1, 2, 0};
  check_ints("transpose", CT_DIMS(1, 3, 1), a1, 3);
  ints_name = "axis", ints_v = a2, ints_n = 3;
  ct_scope_free(run_x_backward("transpose", set_ints, CT_DIMS(2, 0, 3)));
}
END_TEST

/* ---- concat ---------------------------------------------------------------------------------- */

static int64_t cc_axis;
static const char *const abc[] = {"a", "b", "c"};

static void build_concat(ct_program *p) {
  ct_op *op = op_many("concat", abc, 3, "out");
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", cc_axis), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

/* A scope holding a, b and c of those dims, for a concat along axis. */
static ct_scope *concat_scope(ct_ddim a, ct_ddim b, ct_ddim c, int64_t axis) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "a", a, 0.1);
  put_smooth(s, "b", b, 0.5);
  put_smooth(s, "c", c, 0.9);
  cc_axis = axis;
  return s;
}

/* Checks the gradients of the first n_params of a, b, c. */
static void check_concat(ct_ddim a, ct_ddim b, ct_ddim c, int64_t axis, size_t n_params) {
  ct_scope *s = concat_scope(a, b, c, axis);
  check_grads(s, build_concat, "loss", abc, n_params);
  ct_scope_free(s);
}

START_TEST(concat_grads) {
  check_concat(CT_DIMS(2, 1, 3), CT_DIMS(2, 2, 3), CT_DIMS(2, 3, 3), 1, 3);
  check_concat(CT_DIMS(2, 1), CT_DIMS(2, 3), CT_DIMS(2, 2), -1, 3);
  check_concat(CT_DIMS(1, 2), CT_DIMS(3, 2), CT_DIMS(1, 2), 0, 3);
  check_concat(CT_DIMS(1), CT_DIMS(1), CT_DIMS(1), 0, 3); /* size-1 */
}
END_TEST

/* Only a depends on a parameter: concat_grad writes a@GRAD alone (b and c are wired to
 * '@EMPTY@', a variable of the executor's own, not the scope's). */
START_TEST(concat_grad_of_some_inputs) {
  check_concat(CT_DIMS(2, 2), CT_DIMS(2, 3), CT_DIMS(2, 1), 1, 1);
  ct_scope *s = concat_scope(CT_DIMS(2, 2), CT_DIMS(2, 3), CT_DIMS(2, 1), 1);
  run_backward(s, build_concat, abc, 1);
  ck_assert_ptr_null(ct_scope_find_var(s, "b@GRAD"));
  ck_assert_ptr_null(ct_scope_find_var(s, "c@GRAD"));
  /* The entries no gradient is wanted for leave no variable in the user's scope. */
  ck_assert_ptr_null(ct_scope_find_var(s, "@EMPTY@"));
  ct_scope_free(s);
}
END_TEST

/* An empty input takes an empty gradient; the others get their slices. */
START_TEST(concat_grads_with_an_empty_input) {
  check_concat(CT_DIMS(2, 0), CT_DIMS(2, 3), CT_DIMS(2, 1), 1, 3);
  ct_scope *s = concat_scope(CT_DIMS(0, 2), CT_DIMS(0, 3), CT_DIMS(0, 1), 1);
  run_backward(s, build_concat, abc, 3);
  tensor_dims(s, "a@GRAD", CT_DIMS(0, 2));
  tensor_dims(s, "c@GRAD", CT_DIMS(0, 1));
  ct_scope_free(s);
}
END_TEST

/* ---- float32 against float64, and wrong wirings ---------------------------------------------- */

/* The shape gradients move elements: float32 and float64 give the same values. */
START_TEST(shape_grads_f32_match_f64) {
  static const char *const tr_ins[] = {"x", "g"}, *const tr_outs[] = {"dx"};
  static const int64_t axis[] = {2, 0, 1};
  const ct_ddim tr_dims[] = {CT_DIMS(2, 3, 4), CT_DIMS(4, 2, 3)};
  ct_op *op = new_op("transpose_grad");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Out@GRAD", "g"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "X@GRAD", "dx"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "axis", axis, 3), CT_OK);
  check_f32_matches_f64(op, tr_ins, tr_dims, 2, tr_outs, 1);
  ct_op_free(op);
  static const char *const cc_ins[] = {"a", "b", "g"}, *const cc_outs[] = {"da", "db"};
  const ct_ddim cc_dims[] = {CT_DIMS(2, 1), CT_DIMS(2, 3), CT_DIMS(2, 4)};
  op = new_op("concat_grad");
  ck_assert_int_eq(ct_op_set_inputs(op, "X", cc_ins, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Out@GRAD", "g"), CT_OK);
  ck_assert_int_eq(ct_op_set_outputs(op, "X@GRAD", cc_outs, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", 1), CT_OK);
  check_f32_matches_f64(op, cc_ins, cc_dims, 3, cc_outs, 2);
  ct_op_free(op);
}
END_TEST

/* transpose_grad refuses an Out@GRAD that is not X transposed, naming the op and variable. */
START_TEST(transpose_grad_refuses_wrong_dout) {
  static const int64_t axis[] = {1, 0};
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(2, 3), 0.1);
  put_smooth(s, "g", CT_DIMS(2, 3), 0.2);
  ct_op *op = new_op("transpose_grad");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Out@GRAD", "g"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "X@GRAD", "dx"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "axis", axis, 2), CT_OK);
  run_fails(op, s, CT_ERR_SHAPE, "transpose_grad", "Out@GRAD", "'g'", "[2,3]", "[3,2]", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* concat_grad with X@GRAD unwired (the slot is optional) computes nothing and reads nothing past
 * its outputs (it used to walk the inputs' count of outputs). */
START_TEST(concat_grad_without_x_grad_does_nothing) {
  static const char *const xs[] = {"a", "b"};
  ct_scope *s = ct_scope_new();
  put_smooth(s, "a", CT_DIMS(2), 0.1);
  put_smooth(s, "b", CT_DIMS(3), 0.2);
  put_smooth(s, "g", CT_DIMS(5), 0.3);
  ct_op *op = new_op("concat_grad");
  ck_assert_int_eq(ct_op_set_inputs(op, "X", xs, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Out@GRAD", "g"), CT_OK);
  ck_assert_msg(ct_op_run(op, s, ct_cpu()) == CT_OK, "%s", ct_last_error());
  ck_assert_uint_eq(ct_scope_var_count(s), 3);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* concat_grad wants one X@GRAD per X. */
START_TEST(concat_grad_refuses_a_short_x_grad_list) {
  static const char *const xs[] = {"a", "b"};
  ct_scope *s = ct_scope_new();
  put_smooth(s, "a", CT_DIMS(2), 0.1);
  put_smooth(s, "b", CT_DIMS(3), 0.2);
  put_smooth(s, "g", CT_DIMS(5), 0.3);
  ct_op *op = new_op("concat_grad");
  ck_assert_int_eq(ct_op_set_inputs(op, "X", xs, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Out@GRAD", "g"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "X@GRAD", "da"), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "concat_grad", "X@GRAD", "1 variables", "@EMPTY@",
            NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("grad_shape");
  CT_ADD_TEST(s, reshape_grads);
  CT_ADD_TEST(s, reshape_grad_shares_memory_and_takes_empty);
  CT_ADD_TEST(s, transpose_grads);
  CT_ADD_TEST(s, transpose_grads_size1_dims_and_empty);
  CT_ADD_TEST(s, concat_grads);
  CT_ADD_TEST(s, concat_grad_of_some_inputs);
  CT_ADD_TEST(s, concat_grads_with_an_empty_input);
  CT_ADD_TEST(s, shape_grads_f32_match_f64);
  CT_ADD_TEST(s, transpose_grad_refuses_wrong_dout);
  CT_ADD_TEST(s, concat_grad_refuses_a_short_x_grad_list);
  CT_ADD_TEST(s, concat_grad_without_x_grad_does_nothing);
  return s;
}

CT_TEST_MAIN(make_suite)
