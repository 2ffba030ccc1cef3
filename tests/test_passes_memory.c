/* SPDX-License-Identifier: Apache-2.0 */
/* The executor's optimize option where variables share memory behind their names
 * (ct_tensor_share): an assign is not elided when a caller's variable is written before its
 * last reader (it may share the input's memory, and here does), a chain whose result shares an
 * input's memory is not fused (each gives the plain executor's bits, the shared variable
 * included), and a fused chain whose result the caller shares with an input afterwards fails
 * the run with a message naming the variable, rather than giving another result. Two wraps of
 * one caller buffer are safe fused: the fused op's own overlap rule copies into the buffer. */
#include <math.h>
#include <string.h>

#include "passes_util.h"

static void put_ramp_f32(ct_scope *s, const char *name, ct_ddim d, float step) {
  float v[64];
  for (int64_t i = 0; i < ct_ddim_numel(d); i++) v[i] = step * (float)(i % 13) - 1.5f;
  put(s, name, CT_FLOAT32, d, v);
}

static void share(ct_scope *s, const char *name, const char *src) {
  ck_assert_int_eq(ct_tensor_share(ct_var_tensor(ct_scope_var(s, name)), tensor_of(s, src)),
                   CT_OK);
}

/* a = assign(x); w = relu(z), w sharing x's memory (so the relu overwrites x); y = exp(a). */
static ct_program *assign_program(void) {
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op_x("assign", "x", "a")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("relu", "z", "w")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("exp", "a", "y")), CT_OK);
  return p;
}

static ct_scope *assign_scope(bool shared) {
  ct_scope *s = ct_scope_new();
  put_ramp_f32(s, "x", CT_DIMS(4, 5), 0.25f);
  put_ramp_f32(s, "z", CT_DIMS(4, 5), -0.5f);
  if (shared) share(s, "w", "x");
  return s;
}

/* y = exp of x as it was before the relu wrote over it, with the option as without. */
START_TEST(an_assign_whose_input_another_write_changes_stays) {
  ct_program *p = assign_program();
  float want[20], got[20];
  for (int opt = 0; opt < 2; opt++) {
    ct_scope *s = assign_scope(true);
    ct_executor_options o = {.optimize = opt == 1};
    ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
    ck_assert_int_eq(ct_executor_run(e), CT_OK);
    memcpy(opt ? got : want, result(s, "y", CT_FLOAT32, CT_DIMS(4, 5)), sizeof want);
    if (opt) ck_assert(has_memory(s, "a")); /* the copy was kept */
    ct_executor_free(e);
    ct_scope_free(s);
  }
  ck_assert_int_eq(memcmp(want, got, sizeof want), 0);
  ck_assert(want[0] == expf(-1.5f)); /* x's first value, not the relu's 0 */
  ct_program_free(p);
}
END_TEST

/* out = relu(matmul(x, y) + b), x [1, 8], y [8, 6]: the product and the result are 6 values,
 * as many as b. */
static ct_program *chain_program(void) {
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op_xy("matmul", "x", "y", "m")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_add", "m", "b", "q")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("relu", "q", "out")), CT_OK);
  return p;
}

static ct_scope *chain_scope(void) {
  ct_scope *s = ct_scope_new();
  put_ramp_f32(s, "x", CT_DIMS(1, 8), 0.25f);
  put_ramp_f32(s, "y", CT_DIMS(8, 6), 0.5f);
  put_ramp_f32(s, "b", CT_DIMS(6), 1.0f);
  return s;
}

/* Fused while out's memory was its own; shared with b afterwards, the next run fails and names
 * out (run as fused, the result would get a block of its own and b keep its values). */
START_TEST(memory_shared_after_the_executor_was_made_fails_the_run) {
  ct_program *p = chain_program();
  ct_scope *s = chain_scope();
  ct_executor_options o = {.optimize = true};
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ck_assert(!has_memory(s, "m")); /* fused */
  share(s, "out", "b");
  ck_assert_int_eq(ct_executor_run(e), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "variable 'out' now shares memory");
  HAS(ct_last_error(), "make a new executor");
  ct_executor_free(e);
  ct_scope_free(s);
  ct_program_free(p);
}
END_TEST

/* The chain with out sharing b's memory from the start: the relu writes b through out. Not
 * fused; out and b as without the option. */
START_TEST(a_chain_whose_result_shares_an_input_is_not_fused) {
  ct_program *p = chain_program();
  float want[2][6], got[2][6];
  for (int opt = 0; opt < 2; opt++) {
    ct_scope *s = chain_scope();
    share(s, "out", "b");
    ck_assert_int_eq(ct_tensor_resize(ct_var_tensor(ct_scope_var(s, "out")), CT_DIMS(1, 6)),
                     CT_OK);
    ct_executor_options o = {.optimize = opt == 1};
    ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
    ck_assert_int_eq(ct_executor_run(e), CT_OK);
    float(*dst)[6] = opt ? got : want;
    memcpy(dst[0], result(s, "out", CT_FLOAT32, CT_DIMS(1, 6)), sizeof dst[0]);
    memcpy(dst[1], result(s, "b", CT_FLOAT32, CT_DIMS(6)), sizeof dst[1]);
    if (opt) ck_assert(has_memory(s, "m")); /* the chain ran op by op */
    ct_executor_free(e);
    ct_scope_free(s);
  }
  ck_assert_int_eq(memcmp(want, got, sizeof want), 0);
  ck_assert_int_eq(memcmp(want[0], want[1], sizeof want[0]), 0); /* b is out's memory */
  ct_program_free(p);
}
END_TEST

/* b = relu(matmul(x, y) + b): the result is an input by name. Not fused (fused, b would get a
 * block of its own where the relu writes it in place); b as without the option, run twice. */
START_TEST(a_chain_whose_result_is_its_bias_is_not_fused) {
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op_xy("matmul", "x", "y", "m")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_add", "m", "b", "q")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("relu", "q", "b")), CT_OK);
  float want[6], got[6];
  for (int opt = 0; opt < 2; opt++) {
    ct_scope *s = chain_scope();
    ct_executor_options o = {.optimize = opt == 1};
    ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
    for (int r = 0; r < 2; r++) ck_assert_int_eq(ct_executor_run(e), CT_OK);
    ck_assert_int_eq(ct_tensor_numel(tensor_of(s, "b")), 6);
    memcpy(opt ? got : want, ct_tensor_data(tensor_of(s, "b"), CT_FLOAT32), sizeof want);
    if (opt) ck_assert(has_memory(s, "m"));
    ct_executor_free(e);
    ct_scope_free(s);
  }
  ck_assert_int_eq(memcmp(want, got, sizeof want), 0);
  ct_program_free(p);
}
END_TEST

/* x [2, 8], out [2, 6] wrapping a caller's 12 floats and b the first 6 of them (two blocks
 * over one memory): the relu writes b through out's first row, after the add read it. Fused,
 * the op's output overlaps its Bias, so it is computed in a block of its own and copied into
 * the buffer (ct_op_run's rule for external outputs): relu(x y + b) with b as it was before the
 * run, in both rows (exact: the values are quarters and halves), with the option as without. */
START_TEST(a_chain_whose_result_wraps_its_bias_buffer_gives_the_plain_result) {
  ct_program *p = chain_program();
  const float b0[6] = {0.5f, -1.0f, 2.0f, -3.5f, 0.25f, 1.0f};
  for (int opt = 0; opt < 2; opt++) {
    float buf[12] = {0};
    memcpy(buf, b0, sizeof b0);
    ct_scope *s = chain_scope();
    put_ramp_f32(s, "x", CT_DIMS(2, 8), 0.25f);
    ck_assert_int_eq(ct_tensor_wrap(ct_var_tensor(ct_scope_var(s, "b")), buf, CT_DIMS(6),
                                    CT_FLOAT32, ct_cpu(), NULL, NULL),
                     CT_OK);
    ck_assert_int_eq(ct_tensor_wrap(ct_var_tensor(ct_scope_var(s, "out")), buf, CT_DIMS(2, 6),
                                    CT_FLOAT32, ct_cpu(), NULL, NULL),
                     CT_OK);
    const float *x = ct_tensor_data(tensor_of(s, "x"), CT_FLOAT32);
    const float *y = ct_tensor_data(tensor_of(s, "y"), CT_FLOAT32);
    float want[12];
    for (int i = 0; i < 2; i++) {
      for (int j = 0; j < 6; j++) {
        float q = b0[j];
        for (int k = 0; k < 8; k++) q += x[i * 8 + k] * y[k * 6 + j];
        want[i * 6 + j] = q < 0 ? 0 : q;
      }
    }
    ct_executor_options o = {.optimize = opt == 1};
    ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
    ck_assert_int_eq(ct_executor_run(e), CT_OK);
    ck_assert_int_eq(memcmp(buf, want, sizeof want), 0);
    if (opt) ck_assert(!has_memory(s, "m")); /* fused */
    ct_executor_free(e);
    ct_scope_free(s);
  }
  ct_program_free(p);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("passes_memory");
  CT_ADD_TEST(s, an_assign_whose_input_another_write_changes_stays);
  CT_ADD_TEST(s, memory_shared_after_the_executor_was_made_fails_the_run);
  CT_ADD_TEST(s, a_chain_whose_result_shares_an_input_is_not_fused);
  CT_ADD_TEST(s, a_chain_whose_result_is_its_bias_is_not_fused);
  CT_ADD_TEST(s, a_chain_whose_result_wraps_its_bias_buffer_gives_the_plain_result);
  return s;
}

CT_TEST_MAIN(make_suite)
