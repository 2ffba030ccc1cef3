/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_rnn_op.c: the recurrent op's behaviour: an Elman RNN for T = 1 .. 50 and reversed
 * against a hand-written loop, step inputs and previous states as views, a state carried from
 * run to run, the op inside an executor, an LSTM cell with two states, step outputs that cannot
 * be stacked, and misuse. Its binding
 * and the reuse of its step scopes across runs are tested in test_rnn_bind.c, the step-scope
 * lists it runs in in test_rnn.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <corten/corten.h>

#include "harness.h"
#include "rnn_elman.h"
#include "rnn_util.h"

/* ---- The recurrent op ------------------------------------------------------------------------ */

static void check_elman(int64_t T, bool reverse) {
  ct_scope *root = ct_scope_new();
  elman_data(root, T);
  ct_op *op = elman_op(reverse);
  ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_OK);
  double ref[50 * B * H];
  elman_ref(root, T, reverse, ref);
  const ct_tensor *out = ct_var_get_tensor(ct_scope_find_var(root, "h_seq"));
  ck_assert(ct_ddim_equal(ct_tensor_dims(out), CT_DIMS(T, B, H)));
  const float *hs = var_f32(root, "h_seq"), *last = var_f32(root, "h_last");
  for (int64_t i = 0; i < T * B * H; i++) {
    ck_assert_msg(fabs(hs[i] - ref[i]) < 1e-5, "T=%lld element %lld: %g vs %g", (long long)T,
                  (long long)i, hs[i], ref[i]);
  }
  const double *ref_last = ref + (reverse ? 0 : (T - 1) * B * H);
  for (int i = 0; i < B * H; i++) ck_assert(fabs(last[i] - ref_last[i]) < 1e-5);
  /* The list holds T scopes; scope t holds h_t. */
  const ct_scope_list *l = ct_var_get(ct_scope_find_var(root, "steps"), &ct_scope_list_type);
  ck_assert_ptr_nonnull(l);
  ck_assert_uint_eq(ct_scope_list_size(l), (size_t)T);
  ck_assert_uint_eq(ct_scope_kid_count(root), (size_t)T);
  for (int64_t t = 0; t < T; t++) {
    const ct_var *hv = ct_scope_find_local_var(ct_scope_list_get(l, (size_t)t), "h");
    const float *h = ct_tensor_data(ct_var_get_tensor(hv), CT_FLOAT32);
    ck_assert_ptr_nonnull(h);
    for (int i = 0; i < B * H; i++) ck_assert(fabs(h[i] - ref[t * B * H + i]) < 1e-5);
  }
  ct_op_free(op);
  ct_scope_free(root);
}

START_TEST(elman_matches_loop_for_every_length) {
  for (int64_t T = 1; T <= 50; T++) check_elman(T, false);
}
END_TEST

START_TEST(elman_reverse_matches_loop) {
  for (int64_t T = 1; T <= 50; T += 7) check_elman(T, true);
}
END_TEST

START_TEST(step_inputs_and_states_are_views) {
  ct_scope *root = ct_scope_new();
  elman_data(root, 4);
  ct_op *op = elman_op(false);
  ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_OK);
  const ct_scope_list *l = ct_var_get(ct_scope_find_var(root, "steps"), &ct_scope_list_type);
  const float *xs = var_f32(root, "x_seq"), *h0 = var_f32(root, "h0");
  for (size_t t = 0; t < 4; t++) {
    ct_scope *s = ct_scope_list_get(l, t);
    const ct_tensor *x = ct_var_get_tensor(ct_scope_find_local_var(s, "x"));
    ck_assert(ct_ddim_equal(ct_tensor_dims(x), CT_DIMS(B, D)));
    ck_assert_ptr_eq(ct_tensor_data(x, CT_FLOAT32), xs + t * B * D); /* row t, no copy */
    const float *prev = t == 0 ? h0 : var_f32(ct_scope_list_get(l, t - 1), "h");
    ck_assert_ptr_eq(var_f32(s, "h_prev"), prev); /* the state before, shared */
    ck_assert_ptr_nonnull(ct_scope_find_local_var(s, "xw")); /* intermediates stay local */
    ck_assert_ptr_null(ct_scope_find_local_var(root, "xw"));
  }
  ct_op_free(op);
  ct_scope_free(root);
}
END_TEST

START_TEST(stateful_final_state_is_initial_state) {
  /* FinalStates wired to the initial state variable: each run continues the last. */
  ct_scope *root = ct_scope_new();
  elman_data(root, 3);
  ct_op *op = recurrent_op(elman_program(), "h", "h_prev", false);
  ck_assert_int_eq(ct_op_set_input(op, "InitStates", "h0"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "FinalStates", "h0"), CT_OK);
  double ref[3 * B * H];
  for (int run = 0; run < 3; run++) {
    elman_ref(root, 3, false, ref);
    ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_OK);
    const float *h0 = var_f32(root, "h0");
    for (int i = 0; i < B * H; i++) ck_assert(fabs(h0[i] - ref[2 * B * H + i]) < 1e-5);
  }
  ct_op_free(op);
  ct_scope_free(root);
}
END_TEST

START_TEST(runs_inside_an_executor) {
  ct_scope *root = ct_scope_new();
  elman_data(root, 4);
  ct_program *outer = ct_program_new();
  ck_assert_int_eq(ct_program_append(outer, elman_op(false)), CT_OK);
  ct_executor *e = ct_executor_new(outer, root, ct_cpu());
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  double ref[4 * B * H];
  elman_ref(root, 4, false, ref);
  const float *hs = var_f32(root, "h_seq");
  for (int i = 0; i < 4 * B * H; i++) ck_assert(fabs(hs[i] - ref[i]) < 1e-5);
  ct_executor_free(e);
  ct_program_free(outer);
  ct_scope_free(root);
}
END_TEST

/* An LSTM cell: gates from x W* + h_prev U* + b*, c = f c_prev + i g, h = o tanh(c). */
static void gate(ct_program *p, const char *g, const char *act) {
  char w[8], u[8], b[8], xw[16], hu[16], s[16], pre[16];
  snprintf(w, sizeof w, "W%s", g);
  snprintf(u, sizeof u, "U%s", g);
  snprintf(b, sizeof b, "b%s", g);
  snprintf(xw, sizeof xw, "xw_%s", g);
  snprintf(hu, sizeof hu, "hu_%s", g);
  snprintf(s, sizeof s, "s_%s", g);
  snprintf(pre, sizeof pre, "pre_%s", g);
  append_op(p, "matmul", "x", w, xw);
  append_op(p, "matmul", "h_prev", u, hu);
  append_op(p, "elementwise_add", xw, hu, s);
  append_op(p, "elementwise_add", s, b, pre);
  append_op(p, act, pre, NULL, g);
}

START_TEST(lstm_matches_reference) {
  enum { T = 7 };
  ct_scope *root = ct_scope_new();
  const char *gates[] = {"i", "f", "o", "g"};
  const float *Wp[4], *Up[4], *bp[4];
  for (unsigned k = 0; k < 4; k++) {
    char n[8];
    snprintf(n, sizeof n, "W%s", gates[k]);
    Wp[k] = put_random(root, n, CT_DIMS(D, H), 10 + k);
    snprintf(n, sizeof n, "U%s", gates[k]);
    Up[k] = put_random(root, n, CT_DIMS(H, H), 20 + k);
    snprintf(n, sizeof n, "b%s", gates[k]);
    bp[k] = put_random(root, n, CT_DIMS(H), 30 + k);
  }
  const float *h0 = put_random(root, "h0", CT_DIMS(B, H), 40);
  const float *c0 = put_random(root, "c0", CT_DIMS(B, H), 41);
  const float *xs = put_random(root, "x_seq", CT_DIMS(T, B, D), 42);

  ct_program *p = ct_program_new();
  gate(p, "i", "sigmoid");
  gate(p, "f", "sigmoid");
  gate(p, "o", "sigmoid");
  gate(p, "g", "tanh");
  append_op(p, "elementwise_mul", "f", "c_prev", "fc");
  append_op(p, "elementwise_mul", "i", "g", "ig");
  append_op(p, "elementwise_add", "fc", "ig", "c");
  append_op(p, "tanh", "c", NULL, "tc");
  append_op(p, "elementwise_mul", "o", "tc", "h");
  ct_op *op = recurrent_op(p, "h, c", "h_prev, c_prev", false);
  const char *init[] = {"h0", "c0"}, *final[] = {"h_last", "c_last"};
  ck_assert_int_eq(ct_op_set_inputs(op, "InitStates", init, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_outputs(op, "FinalStates", final, 2), CT_OK);
  ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_OK);

  double h[B * H], c[B * H];
  for (int i = 0; i < B * H; i++) {
    h[i] = h0[i];
    c[i] = c0[i];
  }
  const float *hs = var_f32(root, "h_seq");
  for (int t = 0; t < T; t++) {
    double nh[B * H], nc[B * H];
    for (int r = 0; r < B; r++) {
      for (int j = 0; j < H; j++) {
        double a[4];
        for (int k = 0; k < 4; k++) {
          double acc = bp[k][j];
          for (int q = 0; q < D; q++) acc += (double)xs[(t * B + r) * D + q] * Wp[k][q * H + j];
          for (int q = 0; q < H; q++) acc += h[r * H + q] * Up[k][q * H + j];
          a[k] = k == 3 ? tanh(acc) : 1.0 / (1.0 + exp(-acc));
        }
        nc[r * H + j] = a[1] * c[r * H + j] + a[0] * a[3];
        nh[r * H + j] = a[2] * tanh(nc[r * H + j]);
      }
    }
    memcpy(h, nh, sizeof h);
    memcpy(c, nc, sizeof c);
    for (int i = 0; i < B * H; i++) ck_assert(fabs(hs[t * B * H + i] - h[i]) < 1e-5);
  }
  const float *hl = var_f32(root, "h_last"), *cl = var_f32(root, "c_last");
  for (int i = 0; i < B * H; i++) {
    ck_assert(fabs(hl[i] - h[i]) < 1e-5);
    ck_assert(fabs(cl[i] - c[i]) < 1e-5);
  }
  ct_op_free(op);
  ct_scope_free(root);
}
END_TEST

/* ---- Misuse ------------------------------------------------------------------------------------ */

START_TEST(missing_initial_state) {
  ct_scope *root = ct_scope_new();
  elman_data(root, 3);
  ct_op *op = recurrent_op(elman_program(), "h", "h_prev", false);
  ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_ERR_NOT_FOUND);
  HAS(ct_last_error(), "recurrent");
  HAS(ct_last_error(), "state 'h'");
  HAS(ct_last_error(), "InitStates");
  ck_assert_int_eq(ct_op_set_input(op, "InitStates", "nowhere"), CT_OK);
  ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_ERR_NOT_FOUND);
  HAS(ct_last_error(), "recurrent");
  HAS(ct_last_error(), "'nowhere'");
  ct_op_free(op);
  ct_scope_free(root);
}
END_TEST

START_TEST(mismatched_shapes) {
  ct_scope *root = ct_scope_new();
  elman_data(root, 3);
  ct_op *op = elman_op(false);
  /* Two sequences of different lengths. */
  put_random(root, "y_seq", CT_DIMS(4, B, D), 7);
  const char *xs[] = {"x_seq", "y_seq"};
  ck_assert_int_eq(ct_op_set_inputs(op, "X", xs, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "step_inputs", "x, y"), CT_OK);
  ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_ERR_SHAPE);
  HAS(ct_last_error(), "recurrent");
  HAS(ct_last_error(), "'y_seq'");
  /* Names and wiring that do not pair up. */
  ck_assert_int_eq(ct_op_set_attr_string(op, "step_inputs", "x"), CT_OK);
  ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "step_inputs");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x_seq"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "ex_states", "h_prev, c_prev"), CT_OK);
  ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "ex_states");
  ck_assert_int_eq(ct_op_set_attr_string(op, "ex_states", "h_prev,"), CT_OK);
  ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "empty name");
  ck_assert_int_eq(ct_op_set_attr_string(op, "ex_states", "h_prev"), CT_OK);
  /* A state whose dims change: h0 [1,H] broadcasts into h [B,H]. */
  put_random(root, "h0", CT_DIMS(1, H), 4);
  ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_ERR_SHAPE);
  HAS(ct_last_error(), "recurrent");
  HAS(ct_last_error(), "state 'h'");
  HAS(ct_last_error(), "'h0'");
  /* A scalar sequence. */
  put_random(root, "h0", CT_DIMS(B, H), 4);
  put_random(root, "x_seq", CT_DIMS(), 4);
  ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_ERR_SHAPE);
  HAS(ct_last_error(), "'x_seq'");
  /* A step error names the step and the inner op. */
  put_random(root, "x_seq", CT_DIMS(3, B, D + 1), 4);
  ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_ERR_SHAPE);
  HAS(ct_last_error(), "recurrent");
  HAS(ct_last_error(), "step 0");
  HAS(ct_last_error(), "matmul");
  ct_op_free(op);
  ct_scope_free(root);
}
END_TEST

START_TEST(step_program_writes_no_state) {
  ct_scope *root = ct_scope_new();
  elman_data(root, 3);
  ct_program *p = ct_program_new();
  append_op(p, "matmul", "x", "W", "h_other");
  ct_op *op = recurrent_op(p, "h", "h_prev", false);
  ck_assert_int_eq(ct_op_set_input(op, "InitStates", "h0"), CT_OK);
  ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_ERR_NOT_FOUND);
  HAS(ct_last_error(), "recurrent");
  HAS(ct_last_error(), "wrote no state 'h'");
  /* h in the parent is no excuse: the state must be written in the step scope. */
  put_random(root, "h", CT_DIMS(B, H), 1);
  ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_ERR_NOT_FOUND);
  HAS(ct_last_error(), "wrote no state 'h'");
  ct_op_free(op);
  ct_scope_free(root);
}
END_TEST

START_TEST(step_program_may_not_write_its_views) {
  ct_scope *root = ct_scope_new();
  elman_data(root, 2);
  float h0_before = var_f32(root, "h0")[0], x_before = var_f32(root, "x_seq")[0];
  for (int which = 0; which < 2; which++) {
    ct_program *p = elman_program();
    append_op(p, "relu", "h", NULL, which == 0 ? "h_prev" : "x"); /* writes a view */
    ct_op *op = recurrent_op(p, "h", "h_prev", false);
    const char *params[] = {"W", "U", "b"};
    ck_assert_int_eq(ct_op_set_inputs(op, "Params", params, 3), CT_OK);
    ck_assert_int_eq(ct_op_set_input(op, "InitStates", "h0"), CT_OK);
    ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_ERR_INVALID_ARGUMENT);
    HAS(ct_last_error(), "recurrent");
    HAS(ct_last_error(), which == 0 ? "writes 'h_prev'" : "writes 'x'");
    ct_op_free(op);
  }
  /* The caller's initial state and sequence are untouched. */
  ck_assert_float_eq(var_f32(root, "h0")[0], h0_before);
  ck_assert_float_eq(var_f32(root, "x_seq")[0], x_before);
  ct_scope_free(root);
}
END_TEST

/* An Elman op whose step program also writes y = relu(z), stacked into y_seq after h_seq. */
static ct_op *elman_with_y(bool reverse, const char *outs) {
  ct_program *p = elman_program();
  append_op(p, "relu", "z", NULL, "y");
  ct_op *op = elman_op_over(p, reverse);
  const char *seqs[] = {"h_seq", "y_seq"};
  ck_assert_int_eq(ct_op_set_attr_string(op, "step_outputs", outs), CT_OK);
  ck_assert_int_eq(ct_op_set_outputs(op, "Out", seqs, 2), CT_OK);
  return op;
}

START_TEST(step_output_whose_dims_change_is_refused) {
  for (int reverse = 0; reverse < 2; reverse++) {
    ct_scope *root = ct_scope_new();
    elman_data(root, 3);
    const float *z = put_random(root, "z", CT_DIMS(B, H), 9);
    ct_op *op = elman_with_y(reverse, "h, y");
    ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_OK);
    const ct_tensor *ys = ct_var_get_tensor(ct_scope_find_var(root, "y_seq"));
    ck_assert(ct_ddim_equal(ct_tensor_dims(ys), CT_DIMS(3, B, H)));
    const float *y = var_f32(root, "y_seq");
    for (int i = 0; i < 3 * B * H; i++) ck_assert_float_eq(y[i], fmaxf(z[i % (B * H)], 0.0f));
    /* Step 1 reads a z of its own, one column wider: its y cannot be stacked with step 0's. */
    ct_scope *step1 = ct_scope_list_get(
        ct_var_get(ct_scope_find_var(root, "steps"), &ct_scope_list_type), 1);
    put_random(step1, "z", CT_DIMS(B, H + 1), 9);
    ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_ERR_SHAPE);
    HAS(ct_last_error(), "recurrent");
    HAS(ct_last_error(), "step 1: step output 'y' is [2,5] float32 but at step 0 it was [2,4]");
    ct_op_free(op);
    ct_scope_free(root);
  }
}
END_TEST

START_TEST(step_program_writes_no_step_output) {
  for (int reverse = 0; reverse < 2; reverse++) {
    ct_scope *root = ct_scope_new();
    elman_data(root, 3);
    put_random(root, "z", CT_DIMS(B, H), 9);
    ct_op *op = elman_with_y(reverse, "h, w");
    ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_ERR_NOT_FOUND);
    HAS(ct_last_error(), "recurrent");
    HAS(ct_last_error(), "step 0: the step program wrote no step output 'w'");
    ct_op_free(op);
    ct_scope_free(root);
  }
}
END_TEST

START_TEST(step_scopes_variable_misuse) {
  ct_scope *root = ct_scope_new();
  elman_data(root, 3);
  ct_op *op = elman_op(false);
  ct_tensor_resize(ct_var_tensor(ct_scope_var(root, "steps")), CT_DIMS(1));
  ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_ERR_TYPE_MISMATCH);
  HAS(ct_last_error(), "recurrent");
  HAS(ct_last_error(), "'steps'");
  ct_var_clear(ct_scope_var(root, "steps"));
  /* A nested op whose StepScopes name resolves to the outer list is refused. */
  ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_OK);
  ct_scope *step0 = ct_scope_list_get(
      ct_var_get(ct_scope_find_var(root, "steps"), &ct_scope_list_type), 0);
  ck_assert_int_eq(ct_op_run(op, step0, ct_cpu()), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "recurrent");
  ct_op_free(op);
  ct_scope_free(root);
}
END_TEST

static Suite *rnn_suite(void) {
  Suite *s = suite_create("rnn_op");
  CT_ADD_TEST(s, elman_matches_loop_for_every_length);
  CT_ADD_TEST(s, elman_reverse_matches_loop);
  CT_ADD_TEST(s, step_inputs_and_states_are_views);
  CT_ADD_TEST(s, stateful_final_state_is_initial_state);
  CT_ADD_TEST(s, runs_inside_an_executor);
  CT_ADD_TEST(s, lstm_matches_reference);
  CT_ADD_TEST(s, missing_initial_state);
  CT_ADD_TEST(s, mismatched_shapes);
  CT_ADD_TEST(s, step_program_writes_no_state);
  CT_ADD_TEST(s, step_program_may_not_write_its_views);
  CT_ADD_TEST(s, step_output_whose_dims_change_is_refused);
  CT_ADD_TEST(s, step_program_writes_no_step_output);
  CT_ADD_TEST(s, step_scopes_variable_misuse);
  return s;
}

CT_TEST_MAIN(rnn_suite)
