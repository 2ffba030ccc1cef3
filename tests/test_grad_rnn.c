/* SPDX-License-Identifier: Apache-2.0 */
/* The gradient of the recurrent op (backpropagation through time over the step scopes), against
 * central finite differences in float64 (grad_util.h): an Elman RNN forwards and reversed, an
 * LSTM with two states, losses that read FinalStates or only some steps, a weight read by several
 * step ops and outside the RNN, data inputs without gradients; a second run, free_intermediates
 * and every allocation failing; and the refusals: backward before forward, a step op without a
 * gradient.
 *
 * The cells mix the input and the state into each gate with matmul by [H, H] weights, as the
 * Elman and LSTM programs of tests/rnn_elman.h and tests/test_rnn_op.c do. */
#include <corten/corten.h>

#include "alloc_count.h"
#include "grad_util.h"
#include "rnn_util.h"

enum { T = 5, B = 2, H = 3 };

#define MIX "matmul"

/* What the builders make; check_grads calls them without arguments, so the tests set these. */
static bool reverse;
static enum { LOSS_OUT, LOSS_FINAL_C, LOSS_OUT_AND_FINAL, LOSS_SOME_STEPS } loss_kind;
static bool shared_weight, weight_in_loss, no_grad_op;

static void add(ct_program *p, ct_op *op) { ck_assert_int_eq(ct_program_append(p, op), CT_OK); }

/* act(x MIX W<g> + h_prev MIX U<g> + b<g>) -> g */
static void gate(ct_program *p, const char *g, const char *act) {
  char w[8], u[8], b[8], xw[16], hu[16], s[16], pre[16];
  snprintf(w, sizeof w, "W%s", g);
  snprintf(u, sizeof u, "U%s", g);
  snprintf(b, sizeof b, "b%s", g);
  snprintf(xw, sizeof xw, "xw_%s", g);
  snprintf(hu, sizeof hu, "hu_%s", g);
  snprintf(s, sizeof s, "s_%s", g);
  snprintf(pre, sizeof pre, "pre_%s", g);
  add(p, op_xy(MIX, "x", shared_weight ? u : w, xw)); /* shared: U<g> read twice */
  add(p, op_xy(MIX, "h_prev", u, hu));
  add(p, op_xy("elementwise_add", xw, hu, s));
  if (no_grad_op) {
    add(p, op_x("test_rnn_no_grad", s, "s_copy"));
    add(p, op_xy("elementwise_add", "s_copy", b, pre));
  } else {
    add(p, op_xy("elementwise_add", s, b, pre));
  }
  add(p, op_x(act, pre, g));
}

/* The loss of loss_kind over h_seq [T, B, H] (and c_last, h_last). */
static void append_loss(ct_program *p) {
  switch (loss_kind) {
    case LOSS_OUT: append_weighted_loss(p, "h_seq", "loss"); break;
    case LOSS_FINAL_C: append_weighted_loss(p, "c_last", "loss"); break;
    case LOSS_OUT_AND_FINAL:
      append_weighted_loss(p, "h_seq", "l_out");
      append_weighted_loss(p, "h_last", "l_final");
      add(p, op_xy("elementwise_add", "l_out", "l_final", "loss"));
      break;
    case LOSS_SOME_STEPS: /* the mask [T, 1, 1] keeps steps 0, 1 and 3 */
      add(p, op_xy("elementwise_mul", "h_seq", "mask", "h_kept"));
      append_weighted_loss(p, "h_kept", "loss");
      break;
  }
  if (weight_in_loss) { /* Uh also read outside the RNN: two contributions to Uh@GRAD */
    append_weighted_loss(p, "Uh", "l_w");
    add(p, op_xy("elementwise_add", "loss", "l_w", "loss_all"));
  }
}

/* The Elman cell h = tanh(x MIX Wh + h_prev MIX Uh + bh), then the loss. */
static void build_elman(ct_program *p) {
  ct_program *step = ct_program_new();
  gate(step, "h", "tanh");
  ct_op *op = recurrent_op(step, "h", "h_prev", reverse);
  const char *params[] = {"Wh", "Uh", "bh"};
  ck_assert_int_eq(ct_op_set_inputs(op, "Params", params, 3), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "InitStates", "h0"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "FinalStates", "h_last"), CT_OK);
  add(p, op);
  append_loss(p);
}

/* The LSTM cell of tests/test_rnn_op.c: c = f c_prev + i g, h = o tanh(c), then the loss. */
static void build_lstm(ct_program *p) {
  ct_program *step = ct_program_new();
  gate(step, "i", "sigmoid");
  gate(step, "f", "sigmoid");
  gate(step, "o", "sigmoid");
  gate(step, "g", "tanh");
  add(step, op_xy("elementwise_mul", "f", "c_prev", "fc"));
  add(step, op_xy("elementwise_mul", "i", "g", "ig"));
  add(step, op_xy("elementwise_add", "fc", "ig", "c"));
  add(step, op_x("tanh", "c", "tc"));
  add(step, op_xy("elementwise_mul", "o", "tc", "h"));
  ct_op *op = recurrent_op(step, "h, c", "h_prev, c_prev", reverse);
  const char *params[] = {"Wi", "Wf", "Wo", "Wg", "Ui", "Uf", "Uo", "Ug", "bi", "bf", "bo", "bg"};
  const char *init[] = {"h0", "c0"}, *final[] = {"h_last", "c_last"};
  ck_assert_int_eq(ct_op_set_inputs(op, "Params", params, 12), CT_OK);
  ck_assert_int_eq(ct_op_set_inputs(op, "InitStates", init, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_outputs(op, "FinalStates", final, 2), CT_OK);
  add(p, op);
  append_loss(p);
}

/* The weights of gates gs (W and U [H, H], b [H]), the initial states h0 and c0 [B, H], the
 * sequence x_seq [T, B, H] and the mask, each its own values. */
static ct_scope *put_weights(const char *gs) {
  ct_scope *s = ct_scope_new();
  double seed = 0.1;
  for (const char *g = gs; *g; g++) {
    char n[8];
    for (const char *kind = "WUb"; *kind; kind++) {
      snprintf(n, sizeof n, "%c%c", *kind, *g);
      put_smooth(s, n, *kind == 'b' ? CT_DIMS(H) : CT_DIMS(H, H), seed += 0.9);
    }
  }
  put_smooth(s, "h0", CT_DIMS(B, H), 0.4);
  put_smooth(s, "c0", CT_DIMS(B, H), 1.7);
  put_smooth(s, "x_seq", CT_DIMS(T, B, H), 2.3);
  const double mask[T] = {1, 1, 0, 1, 0};
  put(s, "mask", CT_FLOAT64, CT_DIMS(T, 1, 1), mask);
  return s;
}

static void reset(void) {
  reverse = shared_weight = weight_in_loss = no_grad_op = false;
  loss_kind = LOSS_OUT;
}

static const char *const elman_all[] = {"Wh", "Uh", "bh", "h0", "x_seq"};

START_TEST(elman_grads) {
  reset();
  ct_scope *s = put_weights("h");
  check_grads(s, build_elman, "loss", elman_all, 5);
  ct_scope_free(s);
}
END_TEST

START_TEST(elman_reverse_grads) {
  reset();
  reverse = true;
  ct_scope *s = put_weights("h");
  check_grads(s, build_elman, "loss", elman_all, 5);
  ct_scope_free(s);
}
END_TEST

static const char *const lstm_all[] = {"Wi", "Wf", "Wo", "Wg", "Ui", "Uf", "Uo", "Ug", "bi",
                                       "bf", "bo", "bg", "h0", "c0", "x_seq"};

START_TEST(lstm_grads) {
  reset();
  ct_scope *s = put_weights("ifog");
  check_grads(s, build_lstm, "loss", lstm_all, 15);
  ct_scope_free(s);
}
END_TEST

/* The loss reads only FinalStates' c: Out's gradient is zeros, the state's comes from the end. */
START_TEST(lstm_loss_reads_final_state) {
  reset();
  loss_kind = LOSS_FINAL_C;
  ct_scope *s = put_weights("ifog");
  check_grads(s, build_lstm, "loss", lstm_all, 15);
  ct_scope_free(s);
}
END_TEST

/* The loss reads h_seq and h_last: the last step's h gets both gradients. */
START_TEST(final_state_gradient_adds_to_last_step) {
  reset();
  loss_kind = LOSS_OUT_AND_FINAL;
  ct_scope *s = put_weights("h");
  check_grads(s, build_elman, "loss", elman_all, 5);
  ct_scope_free(s);
}
END_TEST

/* Steps 2 and 4 are masked out: their rows of Out@GRAD are zeros, the state gradient still flows
 * through step 2, and nothing after step 3 reaches the loss, so x_seq's row 4 gets exactly 0. */
START_TEST(loss_reads_some_steps) {
  reset();
  loss_kind = LOSS_SOME_STEPS;
  ct_scope *s = put_weights("h");
  check_grads(s, build_elman, "loss", elman_all, 5);
  const double *dx = var_f64(s, "x_seq@GRAD");
  for (int i = 0; i < B * H; i++) ck_assert(dx[4 * B * H + i] == 0.0);
  for (int i = 0; i < B * H; i++) ck_assert(dx[2 * B * H + i] != 0.0);
  ct_scope_free(s);
}
END_TEST

/* Uh is read by two ops of the step (x MIX Uh and h_prev MIX Uh), at every step. */
START_TEST(weight_read_by_several_step_ops) {
  reset();
  shared_weight = true;
  ct_scope *s = put_weights("h");
  check_grads(s, build_elman, "loss", elman_all, 5);
  ct_scope_free(s);
}
END_TEST

/* Uh is read inside the step program and by the loss: the outer pass sums the RNN's
 * contribution with the loss's. */
START_TEST(weight_read_inside_and_outside) {
  reset();
  weight_in_loss = true;
  ct_scope *s = put_weights("h");
  check_grads(s, build_elman, "loss_all", elman_all, 5);
  ct_scope_free(s);
}
END_TEST

/* Only the weights are parameters: the sequence and the initial state get no gradient. */
START_TEST(data_inputs_get_no_gradient) {
  reset();
  ct_scope *s = put_weights("h");
  static const char *const weights[] = {"Wh", "Uh", "bh"};
  check_grads(s, build_elman, "loss", weights, 3);
  ck_assert_ptr_null(ct_scope_find_var(s, "x_seq@GRAD"));
  ck_assert_ptr_null(ct_scope_find_var(s, "h0@GRAD"));
  ct_scope_free(s);
}
END_TEST

/* A second run of the training program reuses the step scopes and gives the same gradients. */
START_TEST(second_run_gives_the_same_gradients) {
  reset();
  ct_scope *s = put_weights("h");
  ct_program *p = ct_program_new();
  build_elman(p);
  ck_assert_int_eq(ct_program_append_backward(p, "loss", elman_all, 5), CT_OK);
  run_program(p, s);
  double first[T * B * H];
  memcpy(first, var_f64(s, "x_seq@GRAD"), sizeof first);
  double first_w[H];
  memcpy(first_w, var_f64(s, "Uh@GRAD"), sizeof first_w);
  run_program(p, s);
  ck_assert_int_eq(memcmp(first, var_f64(s, "x_seq@GRAD"), sizeof first), 0);
  ck_assert_int_eq(memcmp(first_w, var_f64(s, "Uh@GRAD"), sizeof first_w), 0);
  /* The step scopes, and the scratch scope where the parameters' sums run, kept for the next. */
  ck_assert_uint_eq(ct_scope_kid_count(s), T + 1);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

/* After the first runs, a run of the training program (forward, recurrent_grad and the rest)
 * makes no host allocation: every step program, the zeros and the sums stay bound. */
START_TEST(training_run_allocates_nothing) {
  ck_assert(alloc_count_works());
  reset();
  ct_scope *s = put_weights("h");
  ct_program *p = ct_program_new();
  build_elman(p);
  ck_assert_int_eq(ct_program_append_backward(p, "loss", elman_all, 5), CT_OK);
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  double first[H];
  memcpy(first, var_f64(s, "Uh@GRAD"), sizeof first);
  ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  uint64_t a1 = alloc_count(); /* no ck_assert in between: Check allocates in them */
  ct_status r = ct_executor_run(e);
  uint64_t a2 = alloc_count();
  ck_assert_msg(r == CT_OK, "%s", ct_last_error());
  ck_assert_uint_eq(a2, a1);
  ck_assert_int_eq(memcmp(first, var_f64(s, "Uh@GRAD"), sizeof first), 0);
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

/* free_intermediates releases what the backward pass has read, and the gradients stay. */
START_TEST(free_intermediates_gives_the_same_gradients) {
  reset();
  ct_scope *s = put_weights("ifog");
  ct_program *p = ct_program_new();
  build_lstm(p);
  ck_assert_int_eq(ct_program_append_backward(p, "loss", lstm_all, 15), CT_OK);
  run_program(p, s);
  double want[T * B * H];
  memcpy(want, var_f64(s, "x_seq@GRAD"), sizeof want);
  ct_scope *s2 = put_weights("ifog");
  ct_executor_options o = {.free_intermediates = true};
  ct_executor *e = ct_executor_new_with(p, s2, ct_cpu(), &o);
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  ck_assert_int_eq(memcmp(want, var_f64(s2, "x_seq@GRAD"), sizeof want), 0);
  ck_assert(!ct_tensor_has_memory(ct_var_get_tensor(ct_scope_find_var(s2, "h_seq@GRAD"))));
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
  ct_scope_free(s2);
}
END_TEST

/* A CPU allocator whose k-th call fails, counting the blocks it has out. */
static long fault_calls, fault_at, fault_live;

static void *failing_alloc(void *ctx, size_t size, size_t align) {
  (void)ctx;
  if (++fault_calls == fault_at) return NULL;
  size_t rounded = (size + align - 1) / align * align;
  void *p = aligned_alloc(align, rounded == 0 ? align : rounded);
  fault_live += p != NULL;
  return p;
}

static void failing_free(void *ctx, void *p, size_t size) {
  (void)ctx, (void)size;
  fault_live--;
  free(p);
}

/* Forward and backward with the k-th tensor allocation failing, for every k: each run fails with
 * CT_ERR_OUT_OF_MEMORY, and the same executor then runs to the exact gradients. */
START_TEST(backward_survives_every_allocation_failure) {
  reset();
  ct_program *p = ct_program_new();
  build_elman(p);
  ck_assert_int_eq(ct_program_append_backward(p, "loss", elman_all, 5), CT_OK);
  ct_scope *ref = put_weights("h");
  run_program(p, ref);
  const ct_allocator failing = {failing_alloc, failing_free, NULL};
  long k;
  for (k = 1;; k++) {
    ct_scope *s = put_weights("h");
    ct_executor *e = ct_executor_new(p, s, ct_cpu());
    ck_assert_ptr_nonnull(e);
    fault_calls = 0, fault_at = k;
    ck_assert_int_eq(ct_set_allocator(ct_cpu(), &failing), CT_OK);
    ct_status st = ct_executor_run(e);
    bool done = fault_calls < k;
    ck_assert_int_eq(ct_set_allocator(ct_cpu(), NULL), CT_OK);
    if (!done) {
      ck_assert_msg(st == CT_ERR_OUT_OF_MEMORY, "k=%ld: %s", k, ct_last_error());
      ck_assert_msg(ct_executor_run(e) == CT_OK, "k=%ld re-run: %s", k, ct_last_error());
    }
    for (size_t i = 0; i < 5; i++) {
      char g[32];
      snprintf(g, sizeof g, "%s@GRAD", elman_all[i]);
      const ct_tensor *a = ct_var_get_tensor(ct_scope_find_var(s, g));
      const ct_tensor *b = ct_var_get_tensor(ct_scope_find_var(ref, g));
      size_t bytes = (size_t)ct_tensor_numel(b) * sizeof(double);
      ck_assert_int_eq(memcmp(ct_tensor_data(a, CT_FLOAT64), ct_tensor_data(b, CT_FLOAT64), bytes),
                       0);
    }
    ct_executor_free(e);
    ct_scope_free(s);
    ck_assert_msg(fault_live == 0, "k=%ld: %ld blocks leaked", k, fault_live);
    if (done) break;
  }
  printf("faults: recurrent backward, %ld fault points\n", k - 1);
  ck_assert_int_ge(k, 5 * 10); /* T steps, each with several step gradients */
  ct_scope_free(ref);
  ct_program_free(p);
}
END_TEST

/* The first op of type in p. */
static const ct_op *find_op(const ct_program *p, const char *type) {
  for (size_t i = 0; i < ct_program_size(p); i++) {
    if (strcmp(ct_op_type(ct_program_op(p, i)), type) == 0) return ct_program_op(p, i);
  }
  ck_abort_msg("no op '%s'", type);
  return NULL;
}

/* recurrent_grad run when the step scopes are gone (dropped, or the list cleared) is an error
 * naming the op and the StepScopes variable, and says to run the forward op first. */
START_TEST(backward_before_forward_is_an_error) {
  reset();
  ct_scope *s = put_weights("h");
  ct_program *p = ct_program_new();
  build_elman(p);
  ck_assert_int_eq(ct_program_append_backward(p, "loss", elman_all, 5), CT_OK);
  run_program(p, s);
  const ct_op *g = find_op(p, "recurrent_grad");
  for (int how = 0; how < 2; how++) {
    if (how == 0) ct_scope_drop_kids(s);
    else ct_var_clear(ct_scope_find_var(s, "steps"));
    ck_assert_int_eq(ct_op_run(g, s, ct_cpu()), CT_ERR_UNINITIALIZED);
    HAS(ct_last_error(), "'recurrent_grad'");
    HAS(ct_last_error(), "StepScopes variable 'steps'");
    HAS(ct_last_error(), "run the forward recurrent op before its gradient");
  }
  run_program(p, s); /* and a whole run works again */
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

static ct_status copy_f64(const ct_kernel_ctx *c) {
  return ct_tensor_copy(ct_kernel_out(c, 0, 0), ct_kernel_in(c, 0, 0), c->place);
}

static void register_no_grad(void) {
  static const ct_slot_def in[] = {{"X", 0}}, out[] = {{"Out", 0}};
  const ct_op_def def = {.type = "test_rnn_no_grad", .inputs = in, .n_inputs = 1,
                         .outputs = out, .n_outputs = 1};
  ck_assert_int_eq(ct_op_register(&def), CT_OK);
  ck_assert_int_eq(ct_kernel_register("test_rnn_no_grad", CT_DEVICE_CPU, CT_FLOAT64, copy_f64),
                   CT_OK);
}

/* A step op without a gradient refuses the pass, naming the recurrent op and the step op, and
 * leaves the program as it was. */
START_TEST(step_op_without_gradient_is_refused) {
  reset();
  if (!ct_op_registered("test_rnn_no_grad")) register_no_grad();
  no_grad_op = true;
  ct_program *p = ct_program_new();
  build_elman(p);
  size_t n = ct_program_size(p);
  ck_assert_int_eq(ct_program_append_backward(p, "loss", elman_all, 5), CT_ERR_UNSUPPORTED);
  HAS(ct_last_error(), "op #0 'recurrent'");
  HAS(ct_last_error(), "step program");
  HAS(ct_last_error(), "op #3 'test_rnn_no_grad'");
  ck_assert_uint_eq(ct_program_size(p), n);
  ct_scope *s = put_weights("h");
  run_program(p, s); /* the forward program still runs */
  ck_assert_ptr_null(ct_scope_find_var(s, "Wh@GRAD"));
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("grad_rnn");
  CT_ADD_TEST(s, elman_grads);
  CT_ADD_TEST(s, elman_reverse_grads);
  CT_ADD_TEST(s, lstm_grads);
  CT_ADD_TEST(s, lstm_loss_reads_final_state);
  CT_ADD_TEST(s, final_state_gradient_adds_to_last_step);
  CT_ADD_TEST(s, loss_reads_some_steps);
  CT_ADD_TEST(s, weight_read_by_several_step_ops);
  CT_ADD_TEST(s, weight_read_inside_and_outside);
  CT_ADD_TEST(s, data_inputs_get_no_gradient);
  CT_ADD_TEST(s, second_run_gives_the_same_gradients);
  CT_ADD_TEST(s, training_run_allocates_nothing);
  CT_ADD_TEST(s, free_intermediates_gives_the_same_gradients);
  CT_ADD_TEST(s, backward_survives_every_allocation_failure);
  CT_ADD_TEST(s, backward_before_forward_is_an_error);
  CT_ADD_TEST(s, step_op_without_gradient_is_refused);
  return s;
}

CT_TEST_MAIN(make_suite)
