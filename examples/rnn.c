/* SPDX-License-Identifier: Apache-2.0 */
/* rnn: an Elman RNN h_t = tanh(x_t W + h_{t-1} U + b) over a short sequence with the recurrent
 * op. Each time step runs in its own step scope, kept in the variable "steps" of the scope the
 * op runs in; the demo prints every step scope's variables, checks h against a hand-written
 * loop, runs again to show that the step scopes and their memory are reused (the stats do not
 * move), and drops the step scopes. Exits non-zero if anything does not behave as printed. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <corten/corten.h>

enum { T = 4, B = 1, D = 2, H = 3 };

static int failures = 0;

static void expect(int ok, const char *what) {
  if (!ok) {
    printf("  !! expected %s; last error: %s\n", what, ct_last_error());
    failures++;
  }
}

static ct_memory_stats show_stats(const char *when) {
  ct_memory_stats st = {0};
  ct_memory_stats_get(ct_cpu(), &st);
  printf("%-34s allocated %6zu B  peak %6zu B  allocs %llu  frees %llu\n", when, st.allocated,
         st.peak, (unsigned long long)st.allocs, (unsigned long long)st.frees);
  return st;
}

static void set(ct_scope *s, const char *name, const float *v, ct_ddim dims) {
  expect(ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, name)), v, dims, CT_FLOAT32,
                             ct_cpu()) == CT_OK,
         name);
}

static void append(ct_program *p, const char *type, const char *x, const char *y,
                   const char *out) {
  ct_op *op = ct_op_new(type);
  ct_op_set_input(op, "X", x);
  if (y != NULL) ct_op_set_input(op, "Y", y);
  ct_op_set_output(op, "Out", out);
  expect(ct_program_append(p, op) == CT_OK, "an op appended");
}

/* Prints one variable of a step scope: its dims and, for tensors, its values. */
static void show_var(ct_scope *s, const char *name) {
  const ct_var *v = ct_scope_find_local_var(s, name);
  const ct_tensor *t = ct_var_get_tensor(v);
  char dims[64];
  if (t == NULL || !ct_tensor_has_memory(t)) {
    printf("    %-7s (empty)\n", name);
    return;
  }
  const float *d = ct_tensor_data(t, CT_FLOAT32);
  printf("    %-7s %-6s", name, ct_ddim_str(ct_tensor_dims(t), dims, sizeof dims));
  for (int64_t i = 0; d != NULL && i < ct_tensor_numel(t); i++) printf(" %8.5f", d[i]);
  printf("\n");
}

int main(void) {
  ct_scope *scope = ct_scope_new();
  const float W[D * H] = {0.5f, -0.3f, 0.8f, 0.1f, 0.4f, -0.6f};
  const float U[H * H] = {0.2f, 0.0f, -0.1f, 0.3f, 0.5f, 0.1f, -0.4f, 0.2f, 0.3f};
  const float bias[H] = {0.1f, -0.2f, 0.05f};
  const float h0[B * H] = {0.0f, 0.0f, 0.0f};
  float x[T * B * D] = {1.0f, 0.0f, 0.5f, -1.0f, -0.25f, 0.75f, 0.0f, 1.0f};
  set(scope, "W", W, CT_DIMS(D, H));
  set(scope, "U", U, CT_DIMS(H, H));
  set(scope, "b", bias, CT_DIMS(H));
  set(scope, "h0", h0, CT_DIMS(B, H));
  set(scope, "x_seq", x, CT_DIMS(T, B, D));

  /* The step program, run in step scope t: x is row t of x_seq, h_prev is h of step t-1. */
  ct_program *step = ct_program_new();
  append(step, "matmul", "x", "W", "xw");
  append(step, "matmul", "h_prev", "U", "hu");
  append(step, "elementwise_add", "xw", "hu", "s");
  append(step, "elementwise_add", "s", "b", "pre");
  append(step, "tanh", "pre", NULL, "h");

  ct_op *rnn = ct_op_new("recurrent");
  ct_op_set_attr_program(rnn, "step_program", step);
  ct_op_set_attr_string(rnn, "states", "h");
  ct_op_set_attr_string(rnn, "ex_states", "h_prev");
  ct_op_set_attr_string(rnn, "step_inputs", "x");
  ct_op_set_attr_string(rnn, "step_outputs", "h");
  ct_op_set_input(rnn, "X", "x_seq");
  ct_op_set_input(rnn, "InitStates", "h0");
  const char *params[] = {"W", "U", "b"};
  ct_op_set_inputs(rnn, "Params", params, 3);
  ct_op_set_output(rnn, "Out", "h_seq");
  ct_op_set_output(rnn, "FinalStates", "h_last");
  ct_op_set_output(rnn, "StepScopes", "steps");

  show_stats("before the run");
  expect(ct_op_run(rnn, scope, ct_cpu()) == CT_OK, "the first run to succeed");
  ct_memory_stats first = show_stats("after the first run");

  const ct_scope_list *steps = ct_var_get(ct_scope_find_var(scope, "steps"), &ct_scope_list_type);
  printf("\n%zu step scopes, kids of the scope (it has %zu kids)\n", ct_scope_list_size(steps),
         ct_scope_kid_count(scope));
  expect(ct_scope_list_size(steps) == T, "T step scopes");
  double h[B * H] = {0};
  for (size_t t = 0; t < ct_scope_list_size(steps); t++) {
    ct_scope *s = ct_scope_list_get(steps, t);
    const char *names[16];
    size_t n = ct_scope_local_var_names(s, names, 16);
    printf("  step scope %zu (%zu variables)\n", t, n);
    for (size_t i = 0; i < n && i < 16; i++) show_var(s, names[i]);
    /* The hand-written loop, one step. */
    double next[B * H];
    for (int j = 0; j < H; j++) {
      double acc = bias[j];
      for (int q = 0; q < D; q++) acc += (double)x[t * D + q] * W[q * H + j];
      for (int q = 0; q < H; q++) acc += h[q] * U[q * H + j];
      next[j] = tanh(acc);
    }
    memcpy(h, next, sizeof h);
    const float *got = ct_tensor_data(ct_var_get_tensor(ct_scope_find_local_var(s, "h")),
                                      CT_FLOAT32);
    for (int j = 0; got != NULL && j < H; j++) expect(fabs(got[j] - h[j]) < 1e-5, "h_t = loop");
    expect(got != NULL, "h in every step scope");
  }
  printf("\n");

  /* A second run over new data of the same shape reuses the step scopes and their memory. */
  /* (Written in place: ct_tensor_set_value would give x_seq a new block, since the step scopes
   * still view the old one.) */
  float *xd = ct_tensor_mutable_data(ct_var_tensor(ct_scope_find_var(scope, "x_seq")),
                                     CT_FLOAT32, ct_cpu());
  expect(xd != NULL, "x_seq writable");
  if (xd != NULL) xd[0] = -0.5f;
  ct_scope *s0 = ct_scope_list_get(steps, 0);
  expect(ct_op_run(rnn, scope, ct_cpu()) == CT_OK, "the second run to succeed");
  ct_memory_stats second = show_stats("after the second run (same T)");
  expect(second.allocated == first.allocated && second.allocs == first.allocs,
         "no new allocation on the second run");
  expect(ct_scope_list_get(steps, 0) == s0 && ct_scope_kid_count(scope) == T,
         "the same step scopes");

  ct_scope_drop_kids(scope);
  printf("dropped the step scopes: the list now holds %zu\n", ct_scope_list_size(steps));
  expect(ct_scope_list_size(steps) == 0, "an empty list after drop_kids");
  show_stats("after dropping the step scopes");

  ct_op_free(rnn);
  ct_scope_free(scope);
  show_stats("after freeing the scope");
  printf("\n%s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
