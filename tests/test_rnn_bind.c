/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_rnn_bind.c: the recurrent op's binding of its step programs and reuse of its step
 * scopes across runs: a second run reuses the scopes and allocates nothing, new variables, an
 * edit of the op or of its step program bind the steps again while unrelated edits do not, and
 * runs of other lengths after the scopes were dropped. The op's behaviour is tested in
 * test_rnn_op.c. */
#include <math.h>
#include <string.h>

#include <corten/corten.h>

#include "alloc_count.h"
#include "harness.h"
#include "rnn_elman.h"

START_TEST(second_run_reuses_step_scopes) {
  ct_scope *root = ct_scope_new();
  elman_data(root, 6);
  ct_op *op = elman_op(false);
  ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_OK);
  const ct_scope_list *l = ct_var_get(ct_scope_find_var(root, "steps"), &ct_scope_list_type);
  ct_scope *before[6];
  for (size_t t = 0; t < 6; t++) before[t] = ct_scope_list_get(l, t);
  ct_memory_stats s1 = cpu_stats();
  put_random(root, "x_seq", CT_DIMS(6, B, D), 99); /* new data, same shape: no allocation */
  ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_OK);
  ct_memory_stats s2 = cpu_stats();
  ck_assert_uint_eq(s2.allocated, s1.allocated);
  ck_assert_uint_eq(s2.allocs, s1.allocs);
  ck_assert_uint_eq(s2.frees, s1.frees);
  ck_assert_uint_eq(ct_scope_list_size(l), 6);
  ck_assert_uint_eq(ct_scope_kid_count(root), 6);
  for (size_t t = 0; t < 6; t++) ck_assert_ptr_eq(ct_scope_list_get(l, t), before[t]);
  double ref[6 * B * H];
  elman_ref(root, 6, false, ref);
  const float *hs = var_f32(root, "h_seq");
  for (int i = 0; i < 6 * B * H; i++) ck_assert(fabs(hs[i] - ref[i]) < 1e-5);
  ct_op_free(op);
  ct_scope_free(root);
}
END_TEST

/* Checks h_seq in s against the hand-written loop. */
static void expect_elman(const ct_scope *s, int64_t T, bool reverse) {
  double ref[8 * B * H];
  elman_ref(s, T, reverse, ref);
  const float *hs = var_f32(s, "h_seq");
  for (int64_t i = 0; i < T * B * H; i++) ck_assert(fabs(hs[i] - ref[i]) < 1e-5);
}

/* The recurrent op in a one-op program, prepared over s. */
static ct_executor *elman_executor(ct_scope *s, ct_program **p, ct_op **op) {
  *p = ct_program_new();
  *op = elman_op(false);
  ck_assert_int_eq(ct_program_append(*p, *op), CT_OK);
  ct_executor *e = ct_executor_new(*p, s, ct_cpu());
  ck_assert_ptr_nonnull(e);
  return e;
}

START_TEST(second_run_allocates_nothing) {
  ck_assert(alloc_count_works());
  ct_scope *root = ct_scope_new();
  elman_data(root, 6);
  ct_program *p;
  ct_op *op;
  ct_executor *e = elman_executor(root, &p, &op);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  put_random(root, "x_seq", CT_DIMS(6, B, D), 42);
  ct_memory_stats s1 = cpu_stats();
  uint64_t a1 = alloc_count(); /* no ck_assert in between: Check allocates in them */
  ct_status r1 = ct_executor_run(e), r2 = ct_executor_run(e);
  uint64_t a2 = alloc_count();
  ck_assert_int_eq(r1, CT_OK);
  ck_assert_int_eq(r2, CT_OK);
  ct_memory_stats s2 = cpu_stats();
  ck_assert_uint_eq(a2, a1); /* no host allocation: the step programs stay bound */
  ck_assert_uint_eq(s2.allocs, s1.allocs);
  expect_elman(root, 6, false);
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(root);
}
END_TEST

START_TEST(new_variables_rebind_the_steps) {
  ct_scope *root = ct_scope_new(), *mid = ct_scope_new_kid(root);
  elman_data(root, 5);
  ct_program *p;
  ct_op *op;
  ct_executor *e = elman_executor(mid, &p, &op);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  /* A W in the op's scope now shadows the root's: the steps must read it. */
  put_random(mid, "W", CT_DIMS(D, H), 77);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  double ref[5 * B * H];
  put_random(root, "W", CT_DIMS(D, H), 77); /* the reference reads the root's */
  elman_ref(root, 5, false, ref);
  const float *hs = var_f32(mid, "h_seq");
  for (int i = 0; i < 5 * B * H; i++) ck_assert(fabs(hs[i] - ref[i]) < 1e-5);
  /* Erased from the op's scope, W is the root's again, renamed away from the root it is gone. */
  const char *w[] = {"W"};
  ck_assert_uint_eq(ct_scope_erase_vars(mid, w, 1), 1);
  put_random(root, "W", CT_DIMS(D, H), 78);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  elman_ref(root, 5, false, ref);
  hs = var_f32(mid, "h_seq");
  for (int i = 0; i < 5 * B * H; i++) ck_assert(fabs(hs[i] - ref[i]) < 1e-5);
  ck_assert_int_eq(ct_scope_rename(root, "W", "W_old"), CT_OK);
  ck_assert_int_eq(ct_executor_run(e), CT_ERR_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "'W'"));
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(root);
}
END_TEST

START_TEST(edited_op_rebinds_the_steps) {
  ct_scope *root = ct_scope_new();
  elman_data(root, 4);
  ct_program *p;
  ct_op *op;
  ct_executor *e = elman_executor(root, &p, &op);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "reverse", true), CT_OK);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  expect_elman(root, 4, true);
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(root);
}
END_TEST

/* The binding follows the op's own edit generation: edits of other ops and programs, made on
 * this thread, leave it bound (no host allocation in the run after them). */
START_TEST(unrelated_edits_keep_the_binding) {
  ck_assert(alloc_count_works());
  ct_scope *root = ct_scope_new();
  elman_data(root, 4);
  ct_program *p;
  ct_op *op;
  ct_executor *e = elman_executor(root, &p, &op);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ct_program *other = ct_program_new();
  append_op(other, "relu", "a", NULL, "b");
  ct_op *loose = ct_op_new("tanh");
  ck_assert_int_eq(ct_op_set_input(loose, "X", "a"), CT_OK);
  ct_program *nested = elman_program();
  ct_op *holder = elman_op_over(nested, false);
  append_op(nested, "tanh", "h", NULL, "unused");
  uint64_t a1 = alloc_count();
  ct_status r = ct_executor_run(e);
  uint64_t a2 = alloc_count();
  ck_assert_int_eq(r, CT_OK);
  ck_assert_uint_eq(a2, a1);
  expect_elman(root, 4, false);
  ct_op_free(holder);
  ct_op_free(loose);
  ct_program_free(other);
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(root);
}
END_TEST

/* An op appended to the step program after the op took it: the next run binds the steps again
 * and runs the new op in every step. */
START_TEST(step_program_edit_rebinds_the_steps) {
  ck_assert(alloc_count_works());
  ct_scope *root = ct_scope_new();
  elman_data(root, 4);
  ct_program *step = elman_program();
  ct_op *op = elman_op_over(step, false);
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  ct_executor *e = ct_executor_new(p, root, ct_cpu());
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  append_op(step, "scale", "h", NULL, "h_copy");
  uint64_t a1 = alloc_count();
  ct_status r = ct_executor_run(e);
  uint64_t a2 = alloc_count();
  ck_assert_int_eq(r, CT_OK);
  ck_assert_uint_gt(a2, a1); /* bound again */
  expect_elman(root, 4, false);
  const ct_scope_list *l = ct_var_get(ct_scope_find_var(root, "steps"), &ct_scope_list_type);
  for (size_t t = 0; t < 4; t++) {
    const ct_scope *s = ct_scope_list_get(l, t);
    const float *h = var_f32(s, "h"), *copy = var_f32(s, "h_copy");
    for (int i = 0; i < B * H; i++) ck_assert_float_eq(copy[i], h[i]);
  }
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(root);
}
END_TEST

START_TEST(rerun_other_lengths_and_drops) {
  ct_scope *root = ct_scope_new();
  ct_op *op = elman_op(false);
  int64_t lens[] = {5, 2, 7, 7, 1};
  for (size_t k = 0; k < 5; k++) {
    elman_data(root, lens[k]);
    if (k == 3) ct_scope_drop_kids(root); /* the step scopes go between runs */
    ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_OK);
    const ct_scope_list *l = ct_var_get(ct_scope_find_var(root, "steps"), &ct_scope_list_type);
    ck_assert_uint_eq(ct_scope_list_size(l), (size_t)lens[k]);
    ck_assert_uint_eq(ct_scope_kid_count(root), (size_t)lens[k]);
    double ref[7 * B * H];
    elman_ref(root, lens[k], false, ref);
    const float *hs = var_f32(root, "h_seq");
    for (int64_t i = 0; i < lens[k] * B * H; i++) ck_assert(fabs(hs[i] - ref[i]) < 1e-5);
  }
  ct_var_clear(ct_scope_find_var(root, "steps"));
  ck_assert_uint_eq(ct_scope_kid_count(root), 0);
  ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_OK); /* and after the list was cleared */
  ct_op_free(op);
  ct_scope_free(root);
}
END_TEST

static Suite *rnn_bind_suite(void) {
  Suite *s = suite_create("rnn_bind");
  CT_ADD_TEST(s, second_run_reuses_step_scopes);
  CT_ADD_TEST(s, second_run_allocates_nothing);
  CT_ADD_TEST(s, new_variables_rebind_the_steps);
  CT_ADD_TEST(s, edited_op_rebinds_the_steps);
  CT_ADD_TEST(s, unrelated_edits_keep_the_binding);
  CT_ADD_TEST(s, step_program_edit_rebinds_the_steps);
  CT_ADD_TEST(s, rerun_other_lengths_and_drops);
  return s;
}

CT_TEST_MAIN(rnn_bind_suite)
