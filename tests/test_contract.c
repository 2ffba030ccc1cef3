/* Contract regressions found by an adversarial pass over the public API (issue 21). Each test
 * is named after the promise it checks and failed before its fix:
 *   - an op cannot hold its own program, on every route that changes ownership (op.h, ops.md);
 *   - an external output keeps its buffer, reshape included (ops.md);
 *   - a dims value is valid whatever the order of its extents (tensor.md);
 *   - a failing op leaves each output's dims, data and memory as they were (ops.md);
 *   - a variable reused after an erase starts empty, and scope teardown never recurses
 *     (scope.md). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <corten/corten.h>

#include "harness.h"

#define HAS(text, part) ck_assert_msg(strstr((text), (part)) != NULL, "'%s' lacks '%s'", (text), (part))

/* ---- An op cannot hold its own program ------------------------------------------------------- */

/* An op holding p is refused when appended to p: the cycle would make ct_op_free recurse. */
START_TEST(append_refuses_op_holding_the_program) {
  ct_program *p = ct_program_new();
  ct_op *a = ct_op_new("recurrent");
  ck_assert_ptr_nonnull(a);
  ck_assert_int_eq(ct_op_set_attr_program(a, "step_program", p), CT_OK);
  ck_assert_int_eq(ct_program_append(p, a), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "recurrent");
  HAS(ct_last_error(), "its own program");
  /* Nothing changed: p is still empty and a still belongs to the caller. */
  ck_assert_uint_eq(ct_program_size(p), 0);
  ct_op_free(a);
}
END_TEST

/* The same rule through a nested program: a holds p, p holds b, b holds q; appending a to q
 * would close the cycle a -> p -> b -> q -> a. */
START_TEST(append_refuses_op_holding_the_program_nested) {
  ct_program *p = ct_program_new();
  ct_program *q = ct_program_new();
  ct_op *a = ct_op_new("recurrent");
  ct_op *b = ct_op_new("recurrent");
  ck_assert_int_eq(ct_op_set_attr_program(b, "step_program", q), CT_OK);
  ck_assert_int_eq(ct_program_append(p, b), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_program(a, "step_program", p), CT_OK);
  ck_assert_int_eq(ct_program_append(q, a), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "its own program");
  ck_assert_uint_eq(ct_program_size(q), 0);
  ck_assert_uint_eq(ct_program_size(p), 1);
  /* An unrelated program still takes a. */
  ct_program *other = ct_program_new();
  ck_assert_int_eq(ct_program_append(other, a), CT_OK);
  ct_program_free(other);
}
END_TEST

/* The set_attr route still refuses a program that contains the op, nested too. */
START_TEST(set_attr_program_refuses_program_containing_the_op_nested) {
  ct_program *outer = ct_program_new();
  ct_program *inner = ct_program_new();
  ct_op *a = ct_op_new("recurrent");
  ct_op *b = ct_op_new("recurrent");
  ck_assert_int_eq(ct_program_append(inner, a), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_program(b, "step_program", inner), CT_OK);
  ck_assert_int_eq(ct_program_append(outer, b), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_program(a, "step_program", outer), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "its own program");
  ct_program_free(outer);
}
END_TEST

/* ---- A dims value is valid whatever the order of its extents --------------------------------- */

#define BIG ((int64_t)1 << 62)

/* ct_ddim_numel gives the same answer for every order of the same extents. */
START_TEST(ddim_numel_does_not_depend_on_extent_order) {
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(0, BIG, 4)), -1);
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(BIG, 4, 0)), -1);
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(BIG, 0, 4)), -1);
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(0, BIG, 1)), 0);
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(BIG, 1, 0)), 0);
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(0, 3, 0)), 0);
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(2, 3)), 6);
}
END_TEST

/* resize and wrap refuse dims whose nonzero extents overflow, in every order, and leave the
 * tensor as it was. */
START_TEST(resize_and_wrap_refuse_overflowing_extents_in_any_order) {
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(3)), CT_OK);
  ct_ddim bad[] = {CT_DIMS(0, BIG, 2), CT_DIMS(BIG, 2, 0), CT_DIMS(2, 0, BIG)};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_int_eq(ct_tensor_resize(t, bad[i]), CT_ERR_OUT_OF_RANGE);
    HAS(ct_last_error(), "ct_tensor_resize");
    ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(3)));
    ck_assert_int_eq(ct_tensor_wrap(t, NULL, bad[i], CT_FLOAT32, ct_cpu(), NULL, NULL),
                     CT_ERR_OUT_OF_RANGE);
    ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(3)));
  }
  ct_tensor_free(t);
}
END_TEST

/* Valid dims with a zero extent and a large one give views whose extents never overflow. */
START_TEST(views_of_empty_dims_with_large_extents_do_not_overflow) {
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(0, BIG, 1)), CT_OK);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()));
  ct_tensor *v = ct_tensor_new();
  for (int k = 0; k <= 3; k++) {
    ck_assert_int_eq(ct_tensor_flatten_to_2d(v, t, k), CT_OK);
    ct_ddim d = ct_tensor_dims(v);
    ck_assert(d.d[0] >= 0 && d.d[1] >= 0);
    ck_assert_int_eq(ct_tensor_numel(v), 0);
  }
  ck_assert_int_eq(ct_tensor_slice(v, t, 0, 0), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(v), CT_DIMS(0, BIG, 1)));
  ct_tensor_free(v);
  ct_tensor_free(t);
}
END_TEST

static int deleted;
static void count_delete(DLManagedTensor *m) {
  (void)m;
  deleted++;
}

/* DLPack import takes the same rule: an overflowing shape is refused whatever its order, and the
 * DLManagedTensor stays the caller's. */
START_TEST(dlpack_import_refuses_overflowing_extents_in_any_order) {
  int64_t shapes[2][3] = {{0, BIG, 2}, {BIG, 2, 0}};
  float cell = 0;
  ct_tensor *t = ct_tensor_new();
  for (int i = 0; i < 2; i++) {
    DLManagedTensor m;
    memset(&m, 0, sizeof m);
    m.dl_tensor.data = &cell;
    m.dl_tensor.device.device_type = kDLCPU;
    m.dl_tensor.ndim = 3;
    m.dl_tensor.dtype.code = kDLFloat;
    m.dl_tensor.dtype.bits = 32;
    m.dl_tensor.dtype.lanes = 1;
    m.dl_tensor.shape = shapes[i];
    m.deleter = count_delete;
    ck_assert_int_ne(ct_tensor_from_dlpack(t, &m), CT_OK);
    ck_assert_int_eq(deleted, 0);
    ck_assert_int_eq(ct_tensor_dims(t).rank, -1);
  }
  ct_tensor_free(t);
}
END_TEST

static Suite *contract_suite(void) {
  Suite *s = suite_create("contract");
  CT_ADD_TEST(s, append_refuses_op_holding_the_program);
  CT_ADD_TEST(s, append_refuses_op_holding_the_program_nested);
  CT_ADD_TEST(s, set_attr_program_refuses_program_containing_the_op_nested);
  CT_ADD_TEST(s, ddim_numel_does_not_depend_on_extent_order);
  CT_ADD_TEST(s, resize_and_wrap_refuse_overflowing_extents_in_any_order);
  CT_ADD_TEST(s, views_of_empty_dims_with_large_extents_do_not_overflow);
  CT_ADD_TEST(s, dlpack_import_refuses_overflowing_extents_in_any_order);
  return s;
}

CT_TEST_MAIN(contract_suite)
