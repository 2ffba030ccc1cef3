/* SPDX-License-Identifier: Apache-2.0 */
/* Every failure of an op leaves a last error that names the op (and its index in a program),
 * whatever its infer-shape or kernel did: a kernel that reports through ct_kernel_fail keeps its
 * message as it is; a message recorded without the op's name (ct_tensor_resize's) gets the op's
 * label in front; a failure returned without any message gets a sentence of its own instead of
 * the stale text of an earlier failure. Also: ct_executor_run(NULL) keeps the cause. */
#include <pthread.h>
#include <string.h>

#include <corten/corten.h>

#include "op_util.h"

/* Out = X, with three ways of failing, picked by the op type. */
static ct_status same_dims(const ct_kernel_ctx *c) {
  return ct_tensor_resize(ct_kernel_out(c, 0, 0), ct_tensor_dims(ct_kernel_in(c, 0, 0)));
}

/* Fails with CT_ERR_SHAPE and records nothing. */
static ct_status silent_kernel(const ct_kernel_ctx *c) {
  (void)c;
  return CT_ERR_SHAPE;
}

/* Resizes Out to a negative dim: ct_tensor_resize's own message, without the op. */
static ct_status resize_infer(const ct_kernel_ctx *c) {
  return ct_tensor_resize(ct_kernel_out(c, 0, 0), CT_DIMS(-1));
}

static ct_status copy_kernel(const ct_kernel_ctx *c) {
  (void)c;
  return CT_OK;
}

static ct_status loud_kernel(const ct_kernel_ctx *c) {
  return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE, "input X variable '%s' is too long",
                        ct_kernel_in_name(c, 0, 0));
}

static void register_once(void) {
  static const ct_slot_def in[] = {{"X", 0}}, out[] = {{"Out", 0}};
  struct {
    const char *type;
    ct_infer_shape_fn infer;
    ct_kernel_fn fn;
  } types[] = {{"test_silent", same_dims, silent_kernel},
               {"test_bad_infer", resize_infer, copy_kernel},
               {"test_loud", same_dims, loud_kernel}};
  for (size_t i = 0; i < 3; i++) {
    ct_op_def def = {.type = types[i].type, .inputs = in, .n_inputs = 1, .outputs = out,
                     .n_outputs = 1, .infer_shape = types[i].infer};
    ck_assert_int_eq(ct_op_register(&def), CT_OK);
    ck_assert_int_eq(ct_kernel_register(types[i].type, CT_DEVICE_CPU, CT_FLOAT32, types[i].fn),
                     CT_OK);
  }
}

static ct_scope *scope_with_x(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, register_once);
  ct_scope *s = ct_scope_new();
  float x[3] = {1, 2, 3};
  put(s, "x", CT_FLOAT32, CT_DIMS(3), x);
  return s;
}

/* An unrelated failure first, so that a stale message would show. */
static void leave_a_stale_error(void) {
  ck_assert_ptr_null(ct_op_new("no_such_op_type"));
}

START_TEST(a_silent_kernel_failure_gets_a_message_naming_the_op) {
  ct_scope *s = scope_with_x();
  ct_op *op = op_x("test_silent", "x", "y");
  leave_a_stale_error(); /* so not CT_ASSERT_FAILS, which clears the last error first */
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_SHAPE);
  const char *e = ct_last_error();
  HAS(e, "op 'test_silent': its kernel (cpu, float32) failed with 'shape error'");
  HAS(e, "output Out variable 'y'");
  HAS(e, "ct_kernel_fail");
  ck_assert_ptr_null(strstr(e, "no_such_op_type"));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(a_silent_failure_in_a_program_names_the_op_index) {
  ct_scope *s = scope_with_x();
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op_x("relu", "x", "r")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("test_silent", "r", "y")), CT_OK);
  ct_executor *ex = ct_executor_new(p, s, ct_cpu());
  ck_assert_ptr_nonnull(ex);
  leave_a_stale_error();
  ck_assert_int_eq(ct_executor_run(ex), CT_ERR_SHAPE);
  HAS(ct_last_error(), "op #1 'test_silent': its kernel");
  ct_executor_free(ex);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

START_TEST(an_infer_shape_failure_from_resize_names_the_op) {
  ct_scope *s = scope_with_x();
  ct_op *op = op_x("test_bad_infer", "x", "y");
  CT_ASSERT_FAILS(ct_op_run(op, s, ct_cpu()), CT_ERR_INVALID_ARGUMENT);
  const char *e = ct_last_error();
  ck_assert_msg(strncmp(e, "op 'test_bad_infer': ct_tensor_resize", 37) == 0, "%s", e);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(a_kernel_that_reports_keeps_its_message) {
  ct_scope *s = scope_with_x();
  ct_op *op = op_x("test_loud", "x", "y");
  CT_ASSERT_FAILS(ct_op_run(op, s, ct_cpu()), CT_ERR_OUT_OF_RANGE);
  ck_assert_str_eq(ct_last_error(), "op 'test_loud': input X variable 'x' is too long");
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(executor_run_of_null_keeps_the_cause) {
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op_x("relu", "missing", "y")), CT_OK);
  ct_scope *s = ct_scope_new();
  ct_executor *ex = ct_executor_new(p, s, ct_cpu());
  ck_assert_ptr_null(ex);
  ck_assert_int_eq(ct_executor_run(ex), CT_ERR_INVALID_ARGUMENT); /* the cause must survive */
  HAS(ct_last_error(), "the executor is NULL");
  HAS(ct_last_error(), "'missing'");
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("op_errors");
  CT_ADD_TEST(s, a_silent_kernel_failure_gets_a_message_naming_the_op);
  CT_ADD_TEST(s, a_silent_failure_in_a_program_names_the_op_index);
  CT_ADD_TEST(s, an_infer_shape_failure_from_resize_names_the_op);
  CT_ADD_TEST(s, a_kernel_that_reports_keeps_its_message);
  CT_ADD_TEST(s, executor_run_of_null_keeps_the_cause);
  return s;
}

CT_TEST_MAIN(make_suite)
