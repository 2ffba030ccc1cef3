/* SPDX-License-Identifier: Apache-2.0 */
/* The recurrent-op suite: an Elman RNN for T = 1 .. 50 and reversed against a hand-written loop,
 * an LSTM cell with two states, step inputs and previous states as views, reuse of the step
 * scopes on a second run (stats), and misuse. The step-scope lists it runs in are tested in
 * test_rnn.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <corten/corten.h>

#include "alloc_count.h"
#include "harness.h"
#include "rnn_util.h"

enum { B = 2, D = 3, H = 4 };

/* A float32 tensor variable in s with pseudo-random values in [-1, 1) from seed. */
static float *put(ct_scope *s, const char *name, ct_ddim dims, unsigned seed) {
  ct_tensor *t = ct_var_tensor(ct_scope_var(s, name));
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(ct_tensor_resize(t, dims), CT_OK);
  float *d = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu());
  ck_assert_ptr_nonnull(d);
  unsigned x = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < ct_tensor_numel(t); i++) {
    x = x * 1103515245u + 12345u;
    d[i] = (float)((x >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
  return d;
}

/* ---- The recurrent op ------------------------------------------------------------------------ */

static void append(ct_program *p, const char *type, const char *x, const char *y,
                   const char *out) {
  ct_op *op = ct_op_new(type);
  ck_assert_ptr_nonnull(op);
  ck_assert_int_eq(ct_op_set_input(op, "X", x), CT_OK);
  if (y != NULL) ck_assert_int_eq(ct_op_set_input(op, "Y", y), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", out), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
}

/* h = tanh(x W + h_prev U + b) */
static ct_program *elman_program(void) {
  ct_program *p = ct_program_new();
  ck_assert_ptr_nonnull(p);
  append(p, "matmul", "x", "W", "xw");
  append(p, "matmul", "h_prev", "U", "hu");
  append(p, "elementwise_add", "xw", "hu", "s");
  append(p, "elementwise_add", "s", "b", "pre");
  append(p, "tanh", "pre", NULL, "h");
  return p;
}

/* The Elman recurrent op over step program step (the op takes it). */
static ct_op *elman_op_over(ct_program *step, bool reverse) {
  ct_op *op = recurrent_op(step, "h", "h_prev", reverse);
  const char *params[] = {"W", "U", "b"};
  ck_assert_int_eq(ct_op_set_inputs(op, "Params", params, 3), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "InitStates", "h0"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "FinalStates", "h_last"), CT_OK);
  return op;
}

static ct_op *elman_op(bool reverse) { return elman_op_over(elman_program(), reverse); }

/* Weights W [D,H], U [H,H], b [H], h0 [B,H], x_seq [T,B,D] in s. */
static void elman_data(ct_scope *s, int64_t T) {
  put(s, "W", CT_DIMS(D, H), 1);
  put(s, "U", CT_DIMS(H, H), 2);
  put(s, "b", CT_DIMS(H), 3);
  put(s, "h0", CT_DIMS(B, H), 4);
  put(s, "x_seq", CT_DIMS(T, B, D), 5 + (unsigned)T);
}

/* The hand-written loop: ref[t] = h_t, [T, B, H]. */
static void elman_ref(const ct_scope *s, int64_t T, bool reverse, double *ref) {
  const float *W = var_f32(s, "W"), *U = var_f32(s, "U"), *b = var_f32(s, "b"),
              *h0 = var_f32(s, "h0");
  const float *x = var_f32(s, "x_seq");
  double h[B * H];
  for (int i = 0; i < B * H; i++) h[i] = h0[i];
  for (int64_t k = 0; k < T; k++) {
    int64_t t = reverse ? T - 1 - k : k;
    double next[B * H];
    for (int r = 0; r < B; r++) {
      for (int j = 0; j < H; j++) {
        double acc = b[j];
        for (int q = 0; q < D; q++) acc += (double)x[(t * B + r) * D + q] * W[q * H + j];
        for (int q = 0; q < H; q++) acc += h[r * H + q] * U[q * H + j];
        next[r * H + j] = tanh(acc);
      }
    }
    memcpy(h, next, sizeof h);
    memcpy(ref + t * B * H, h, sizeof h);
  }
}

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

START_TEST(second_run_reuses_step_scopes) {
  ct_scope *root = ct_scope_new();
  elman_data(root, 6);
  ct_op *op = elman_op(false);
  ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_OK);
  const ct_scope_list *l = ct_var_get(ct_scope_find_var(root, "steps"), &ct_scope_list_type);
  ct_scope *before[6];
  for (size_t t = 0; t < 6; t++) before[t] = ct_scope_list_get(l, t);
  ct_memory_stats s1 = cpu_stats();
  put(root, "x_seq", CT_DIMS(6, B, D), 99); /* new data, same shape: no allocation */
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
  put(root, "x_seq", CT_DIMS(6, B, D), 42);
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
  put(mid, "W", CT_DIMS(D, H), 77);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  double ref[5 * B * H];
  put(root, "W", CT_DIMS(D, H), 77); /* the reference reads the root's */
  elman_ref(root, 5, false, ref);
  const float *hs = var_f32(mid, "h_seq");
  for (int i = 0; i < 5 * B * H; i++) ck_assert(fabs(hs[i] - ref[i]) < 1e-5);
  /* Erased from the op's scope, W is the root's again, renamed away from the root it is gone. */
  const char *w[] = {"W"};
  ck_assert_uint_eq(ct_scope_erase_vars(mid, w, 1), 1);
  put(root, "W", CT_DIMS(D, H), 78);
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
  append(other, "relu", "a", NULL, "b");
  ct_op *loose = ct_op_new("tanh");
  ck_assert_int_eq(ct_op_set_input(loose, "X", "a"), CT_OK);
  ct_program *nested = elman_program();
  ct_op *holder = elman_op_over(nested, false);
  append(nested, "tanh", "h", NULL, "unused");
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
  append(step, "scale", "h", NULL, "h_copy");
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
  append(p, "matmul", "x", w, xw);
  append(p, "matmul", "h_prev", u, hu);
  append(p, "elementwise_add", xw, hu, s);
  append(p, "elementwise_add", s, b, pre);
  append(p, act, pre, NULL, g);
}

START_TEST(lstm_matches_reference) {
  enum { T = 7 };
  ct_scope *root = ct_scope_new();
  const char *gates[] = {"i", "f", "o", "g"};
  const float *Wp[4], *Up[4], *bp[4];
  for (unsigned k = 0; k < 4; k++) {
    char n[8];
    snprintf(n, sizeof n, "W%s", gates[k]);
    Wp[k] = put(root, n, CT_DIMS(D, H), 10 + k);
    snprintf(n, sizeof n, "U%s", gates[k]);
    Up[k] = put(root, n, CT_DIMS(H, H), 20 + k);
    snprintf(n, sizeof n, "b%s", gates[k]);
    bp[k] = put(root, n, CT_DIMS(H), 30 + k);
  }
  const float *h0 = put(root, "h0", CT_DIMS(B, H), 40);
  const float *c0 = put(root, "c0", CT_DIMS(B, H), 41);
  const float *xs = put(root, "x_seq", CT_DIMS(T, B, D), 42);

  ct_program *p = ct_program_new();
  gate(p, "i", "sigmoid");
  gate(p, "f", "sigmoid");
  gate(p, "o", "sigmoid");
  gate(p, "g", "tanh");
  append(p, "elementwise_mul", "f", "c_prev", "fc");
  append(p, "elementwise_mul", "i", "g", "ig");
  append(p, "elementwise_add", "fc", "ig", "c");
  append(p, "tanh", "c", NULL, "tc");
  append(p, "elementwise_mul", "o", "tc", "h");
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
  put(root, "y_seq", CT_DIMS(4, B, D), 7);
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
  put(root, "h0", CT_DIMS(1, H), 4);
  ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_ERR_SHAPE);
  HAS(ct_last_error(), "recurrent");
  HAS(ct_last_error(), "state 'h'");
  HAS(ct_last_error(), "'h0'");
  /* A scalar sequence. */
  put(root, "h0", CT_DIMS(B, H), 4);
  put(root, "x_seq", CT_DIMS(), 4);
  ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_ERR_SHAPE);
  HAS(ct_last_error(), "'x_seq'");
  /* A step error names the step and the inner op. */
  put(root, "x_seq", CT_DIMS(3, B, D + 1), 4);
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
  append(p, "matmul", "x", "W", "h_other");
  ct_op *op = recurrent_op(p, "h", "h_prev", false);
  ck_assert_int_eq(ct_op_set_input(op, "InitStates", "h0"), CT_OK);
  ck_assert_int_eq(ct_op_run(op, root, ct_cpu()), CT_ERR_NOT_FOUND);
  HAS(ct_last_error(), "recurrent");
  HAS(ct_last_error(), "wrote no state 'h'");
  /* h in the parent is no excuse: the state must be written in the step scope. */
  put(root, "h", CT_DIMS(B, H), 1);
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
    append(p, "relu", "h", NULL, which == 0 ? "h_prev" : "x"); /* writes a view */
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
  CT_ADD_TEST(s, second_run_reuses_step_scopes);
  CT_ADD_TEST(s, second_run_allocates_nothing);
  CT_ADD_TEST(s, new_variables_rebind_the_steps);
  CT_ADD_TEST(s, edited_op_rebinds_the_steps);
  CT_ADD_TEST(s, unrelated_edits_keep_the_binding);
  CT_ADD_TEST(s, step_program_edit_rebinds_the_steps);
  CT_ADD_TEST(s, rerun_other_lengths_and_drops);
  CT_ADD_TEST(s, stateful_final_state_is_initial_state);
  CT_ADD_TEST(s, runs_inside_an_executor);
  CT_ADD_TEST(s, lstm_matches_reference);
  CT_ADD_TEST(s, missing_initial_state);
  CT_ADD_TEST(s, mismatched_shapes);
  CT_ADD_TEST(s, step_program_writes_no_state);
  CT_ADD_TEST(s, step_program_may_not_write_its_views);
  CT_ADD_TEST(s, step_scopes_variable_misuse);
  return s;
}

CT_TEST_MAIN(rnn_suite)
