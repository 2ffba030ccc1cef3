/* SPDX-License-Identifier: Apache-2.0 */
/* tests/rnn_util.h: the recurrent op the RNN suites build (test_rnn_op.c, test_grad_rnn.c). */
#ifndef CORTEN_TESTS_RNN_UTIL_H
#define CORTEN_TESTS_RNN_UTIL_H

#include <stdbool.h>

#include <corten/corten.h>

#include "harness.h"

/* A recurrent op over step program step (the op takes it): states and ex_states as given, the
 * step reads "x" of X = x_seq and writes "h" into Out = h_seq, step scopes in "steps". Params,
 * InitStates and FinalStates are the caller's to wire. */
static inline ct_op *recurrent_op(ct_program *step, const char *states, const char *ex,
                                  bool reverse) {
  ct_op *op = ct_op_new("recurrent");
  ck_assert_msg(op != NULL, "%s", ct_last_error());
  ck_assert_int_eq(ct_op_set_attr_program(op, "step_program", step), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "states", states), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "ex_states", ex), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "step_inputs", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "step_outputs", "h"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "reverse", reverse), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "X", "x_seq"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "h_seq"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "StepScopes", "steps"), CT_OK);
  return op;
}

#endif /* CORTEN_TESTS_RNN_UTIL_H */
