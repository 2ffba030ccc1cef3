/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_alloc_faults_ops.c: every allocation of the public calls of ops, programs, the
 * backward pass, executors and the recurrent op failed in turn (tests/fault_sweep.h). */
#include "fault_sweep.h"

static const float x8[16] = {0, 0, 1, 0, 0, 1, 1, 1, 3, 3, 4, 3, 3, 4, 4, 4};
static const int64_t label8[8] = {0, 0, 0, 0, 1, 1, 1, 1};
static const float zeros[16] = {0};

static ct_status st_of(const void *made) { return made != NULL ? CT_OK : ct_last_status(); }

static ct_tensor *put(ct_scope *s, const char *name, const void *v, ct_ddim dims, ct_dtype dt) {
  ct_tensor *t = ct_var_tensor(ct_scope_var(s, name));
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(ct_tensor_set_value(t, v, dims, dt, ct_cpu()), CT_OK);
  return t;
}

/* Appends an op wired by NULL-ended pairs "Slot", "var" (">Slot": an output). */
static ct_status add(ct_program *p, const char *type, const char *const *w) {
  ct_op *op = ct_op_new(type);
  if (op == NULL) return ct_last_status();
  for (int i = 0; w[i] != NULL; i += 2) {
    ct_status s = w[i][0] == '>' ? ct_op_set_output(op, w[i] + 1, w[i + 1])
                                 : ct_op_set_input(op, w[i], w[i + 1]);
    if (s != CT_OK) {
      ct_op_free(op);
      return s;
    }
  }
  return ct_program_append(p, op);
}
#define ADD(p, type, ...) add((p), (type), (const char *const[]){__VA_ARGS__, NULL})

/* The classifier of examples/tour_train.c: its scope (x, label, w, b, lr watched) and the
 * forward program. */
static void classifier_setup(fs_fixture *f) {
  f->s = ct_scope_new();
  f->p = ct_program_new();
  ck_assert_ptr_nonnull(f->s);
  ck_assert_ptr_nonnull(f->p);
  float lr = 0.5f;
  f->tensor[0] = put(f->s, "x", x8, CT_DIMS(8, 2), CT_FLOAT32);
  f->tensor[1] = put(f->s, "label", label8, CT_DIMS(8), CT_INT64);
  f->tensor[2] = put(f->s, "w", zeros, CT_DIMS(2, 2), CT_FLOAT32);
  f->tensor[3] = put(f->s, "b", zeros, CT_DIMS(2), CT_FLOAT32);
  f->tensor[4] = put(f->s, "lr", &lr, CT_DIMS(1), CT_FLOAT32);
  f->scope[0] = f->s;
  f->program = f->p;
  ck_assert_int_eq(ADD(f->p, "matmul", "X", "x", "Y", "w", ">Out", "xw"), CT_OK);
  ck_assert_int_eq(ADD(f->p, "elementwise_add", "X", "xw", "Y", "b", ">Out", "logits"), CT_OK);
  ck_assert_int_eq(ADD(f->p, "softmax_with_cross_entropy", "Logits", "logits", "Label", "label",
                       ">Softmax", "prob", ">Loss", "row_loss"),
                   CT_OK);
  ck_assert_int_eq(ADD(f->p, "mean", "X", "row_loss", ">Out", "loss"), CT_OK);
}

static const char *const params[] = {"w", "b"};

/* The training program: forward, backward, one sgd per parameter. */
static void train_setup(fs_fixture *f) {
  classifier_setup(f);
  ck_assert_int_eq(ct_program_append_backward(f->p, "loss", params, 2), CT_OK);
  ck_assert_int_eq(ADD(f->p, "sgd", "Param", "w", "Grad", "w@GRAD", "LearningRate", "lr",
                       ">ParamOut", "w"),
                   CT_OK);
  ck_assert_int_eq(ADD(f->p, "sgd", "Param", "b", "Grad", "b@GRAD", "LearningRate", "lr",
                       ">ParamOut", "b"),
                   CT_OK);
}

/* ---- Ops and programs ---------------------------------------------------------------------- */

static void no_setup(fs_fixture *f) { (void)f; }

static ct_status op_new_call(fs_fixture *f) { return st_of(f->op = ct_op_new("matmul")); }
static const fs_case op_new = {"ct_op_new", no_setup, op_new_call, NULL, 0};

static void op_setup(fs_fixture *f) {
  f->op = ct_op_new("recurrent");
  ck_assert_ptr_nonnull(f->op);
}

static ct_status op_wiring_call(fs_fixture *f) {
  const char *xs[] = {"a", "bb", "ccc"};
  ct_status s = ct_op_set_inputs(f->op, "Params", xs, 3);
  if (s == CT_OK) s = ct_op_set_input(f->op, "X", "x_seq");
  if (s == CT_OK) s = ct_op_set_output(f->op, "Out", "h_seq");
  return s;
}
/* Each setter keeps its slot's old wiring on failure; the op is not watched (no op state in
 * the snapshot) but must stay usable, which the re-run checks. */
static const fs_case op_wiring = {"ct_op_set_inputs, _input, _output", op_setup, op_wiring_call,
                                  NULL, 0};

static ct_status op_attrs_call(fs_fixture *f) {
  ct_status s = ct_op_set_attr_string(f->op, "states", "h");
  if (s == CT_OK) s = ct_op_set_attr_string(f->op, "ex_states", "h_prev");
  return s;
}
static const fs_case op_attrs = {"ct_op_set_attr_string", op_setup, op_attrs_call, NULL, 0};

static ct_status op_attr_program_call(fs_fixture *f) {
  ct_program *p = ct_program_new();
  if (p == NULL) return ct_last_status();
  ct_status s = ADD(p, "tanh", "X", "pre", ">Out", "h");
  if (s != CT_OK) {
    ct_program_free(p);
    return s;
  }
  return ct_op_set_attr_program(f->op, "step_program", p); /* takes p, also on failure */
}
static const fs_case op_attr_program = {"ct_program_new + append + ct_op_set_attr_program",
                                        op_setup, op_attr_program_call, NULL, 0};

static ct_status program_new_call(fs_fixture *f) { return st_of(f->p = ct_program_new()); }
static const fs_case program_new = {"ct_program_new", no_setup, program_new_call, NULL, 0};

static ct_status append_call(fs_fixture *f) {
  return ADD(f->p, "elementwise_mul", "X", "loss", "Y", "loss", ">Out", "loss2");
}
static const fs_case program_append = {"ct_op_new + wiring + ct_program_append",
                                       classifier_setup, append_call, NULL, 0};

static ct_status backward_call(fs_fixture *f) {
  return ct_program_append_backward(f->p, "loss", params, 2);
}
static const fs_case backward = {"ct_program_append_backward", classifier_setup, backward_call,
                                 NULL, 0};

static ct_status prune_call(fs_fixture *f) {
  static const char *const loss[] = {"loss"};
  return ct_program_prune(f->p, loss, 1);
}
static const fs_case prune = {"ct_program_prune (training step to its loss)", train_setup,
                              prune_call, NULL, 0};

/* ---- Executors ----------------------------------------------------------------------------- */

static void free_executor(fs_fixture *f) {
  ct_executor_free(f->e);
  f->e = NULL;
}
static ct_status executor_new_call(fs_fixture *f) {
  return st_of(f->e = ct_executor_new(f->p, f->s, ct_cpu()));
}
/* A failed executor_new may leave the outputs it created in the scope (program.h): the scope's
 * count is not watched, its tensors are. */
static void train_setup_unwatched_scope(fs_fixture *f) {
  train_setup(f);
  f->scope[0] = NULL;
}
static const fs_case executor_new = {"ct_executor_new", train_setup_unwatched_scope,
                                     executor_new_call, free_executor, 0};

static const ct_executor_options free_opts = {.free_intermediates = true};
static ct_status executor_new_with_call(fs_fixture *f) {
  return st_of(f->e = ct_executor_new_with(f->p, f->s, ct_cpu(), &free_opts));
}
static const fs_case executor_new_free = {"ct_executor_new_with (free_intermediates)",
                                          train_setup_unwatched_scope, executor_new_with_call,
                                          free_executor, 0};

/* The forward program's first run: x, label, w, b stay as they were whatever fails. */
static void forward_exec_setup(fs_fixture *f) {
  classifier_setup(f);
  f->e = ct_executor_new(f->p, f->s, ct_cpu());
  ck_assert_ptr_nonnull(f->e);
}
static ct_status run_call(fs_fixture *f) { return ct_executor_run(f->e); }
/* Outputs written before the failing op keep their memory: the stats are not comparable. */
static const fs_case run_forward = {"ct_executor_run (forward, first run)", forward_exec_setup,
                                    run_call, NULL, 1};

static void train_exec_setup(fs_fixture *f) {
  train_setup(f);
  f->e = ct_executor_new(f->p, f->s, ct_cpu());
  ck_assert_ptr_nonnull(f->e);
}
/* sgd updates w and b in place: a failure after it leaves them updated, so nothing is watched;
 * the status, the re-run and the leak checks still apply. */
static const fs_case run_train = {"ct_executor_run (training, first run)", train_exec_setup,
                                  run_call, NULL, 1};

static void train_exec_free_setup(fs_fixture *f) {
  train_setup(f);
  f->e = ct_executor_new_with(f->p, f->s, ct_cpu(), &free_opts);
  ck_assert_ptr_nonnull(f->e);
}
static const fs_case run_train_free = {"ct_executor_run (training, free_intermediates)",
                                       train_exec_free_setup, run_call, NULL, 1};

static void train_ran_setup(fs_fixture *f) {
  train_exec_free_setup(f);
  ck_assert_int_eq(ct_executor_run(f->e), CT_OK);
}
static const fs_case run_train_again = {"ct_executor_run (training, free_intermediates, second)",
                                        train_ran_setup, run_call, NULL, 1};

static ct_status op_run_call(fs_fixture *f) {
  return ct_op_run(ct_program_op(f->p, 0), f->s, ct_cpu());
}
static const fs_case op_run = {"ct_op_run (matmul, new output)", classifier_setup, op_run_call,
                               NULL, 1};

/* ---- The recurrent op ---------------------------------------------------------------------- */

enum { T = 4, B = 1, D = 2, H = 3 };

/* The Elman RNN of examples/rnn.c, then mean(h_seq) as a loss. */
static void rnn_setup(fs_fixture *f) {
  static const float w[D * H] = {0.5f, -0.3f, 0.8f, 0.1f, 0.4f, -0.6f};
  static const float u[H * H] = {0.2f, 0.0f, -0.1f, 0.3f, 0.5f, 0.1f, -0.4f, 0.2f, 0.3f};
  static const float bias[H] = {0.1f, -0.2f, 0.05f};
  static const float x[T * B * D] = {1.0f, 0.0f, 0.5f, -1.0f, -0.25f, 0.75f, 0.0f, 1.0f};
  f->s = ct_scope_new();
  f->p = ct_program_new();
  ck_assert_ptr_nonnull(f->s);
  ck_assert_ptr_nonnull(f->p);
  f->tensor[0] = put(f->s, "W", w, CT_DIMS(D, H), CT_FLOAT32);
  f->tensor[1] = put(f->s, "U", u, CT_DIMS(H, H), CT_FLOAT32);
  f->tensor[2] = put(f->s, "b", bias, CT_DIMS(H), CT_FLOAT32);
  f->tensor[3] = put(f->s, "h0", zeros, CT_DIMS(B, H), CT_FLOAT32);
  f->tensor[4] = put(f->s, "x_seq", x, CT_DIMS(T, B, D), CT_FLOAT32);
  f->program = f->p;
  ct_program *step = ct_program_new();
  ck_assert_ptr_nonnull(step);
  ck_assert_int_eq(ADD(step, "matmul", "X", "x", "Y", "W", ">Out", "xw"), CT_OK);
  ck_assert_int_eq(ADD(step, "matmul", "X", "h_prev", "Y", "U", ">Out", "hu"), CT_OK);
  ck_assert_int_eq(ADD(step, "elementwise_add", "X", "xw", "Y", "hu", ">Out", "s"), CT_OK);
  ck_assert_int_eq(ADD(step, "elementwise_add", "X", "s", "Y", "b", ">Out", "pre"), CT_OK);
  ck_assert_int_eq(ADD(step, "tanh", "X", "pre", ">Out", "h"), CT_OK);
  ct_op *rnn = ct_op_new("recurrent");
  ck_assert_ptr_nonnull(rnn);
  ck_assert_int_eq(ct_op_set_attr_program(rnn, "step_program", step), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(rnn, "states", "h"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(rnn, "ex_states", "h_prev"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(rnn, "step_inputs", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(rnn, "step_outputs", "h"), CT_OK);
  const char *ps[] = {"W", "U", "b"};
  ck_assert_int_eq(ct_op_set_input(rnn, "X", "x_seq"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(rnn, "InitStates", "h0"), CT_OK);
  ck_assert_int_eq(ct_op_set_inputs(rnn, "Params", ps, 3), CT_OK);
  ck_assert_int_eq(ct_op_set_output(rnn, "Out", "h_seq"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(rnn, "FinalStates", "h_last"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(rnn, "StepScopes", "steps"), CT_OK);
  ck_assert_int_eq(ct_program_append(f->p, rnn), CT_OK);
  ck_assert_int_eq(ADD(f->p, "mean", "X", "h_seq", ">Out", "loss"), CT_OK);
}

static ct_status rnn_run_call(fs_fixture *f) {
  return ct_op_run(ct_program_op(f->p, 0), f->s, ct_cpu());
}
/* The step scopes made before the failure stay (kids of the scope): not watched. */
static const fs_case rnn_run = {"ct_op_run (recurrent, first run)", rnn_setup, rnn_run_call, NULL,
                                1};

static const char *const rnn_params[] = {"W", "U", "b"};
static ct_status rnn_backward_call(fs_fixture *f) {
  return ct_program_append_backward(f->p, "loss", rnn_params, 3);
}
static const fs_case rnn_backward = {"ct_program_append_backward (recurrent)", rnn_setup,
                                     rnn_backward_call, NULL, 0};

static void rnn_train_setup(fs_fixture *f) {
  rnn_setup(f);
  ck_assert_int_eq(rnn_backward_call(f), CT_OK);
  f->e = ct_executor_new(f->p, f->s, ct_cpu());
  ck_assert_msg(f->e != NULL, "%s", ct_last_error());
}
static const fs_case rnn_train = {"ct_executor_run (recurrent forward and backward)",
                                  rnn_train_setup, run_call, NULL, 1};

SWEEP_TEST(op_new)
SWEEP_TEST(op_wiring)
SWEEP_TEST(op_attrs)
SWEEP_TEST(op_attr_program)
SWEEP_TEST(program_new)
SWEEP_TEST(program_append)
SWEEP_TEST(backward)
SWEEP_TEST(prune)
SWEEP_TEST(executor_new)
SWEEP_TEST(executor_new_free)
SWEEP_TEST(run_forward)
SWEEP_TEST(run_train)
SWEEP_TEST(run_train_free)
SWEEP_TEST(run_train_again)
SWEEP_TEST(op_run)
SWEEP_TEST(rnn_run)
SWEEP_TEST(rnn_backward)
SWEEP_TEST(rnn_train)

static Suite *make_suite(void) {
  Suite *s = suite_create("alloc_faults_ops");
  CT_ADD_TEST(s, sweep_op_new);
  CT_ADD_TEST(s, sweep_op_wiring);
  CT_ADD_TEST(s, sweep_op_attrs);
  CT_ADD_TEST(s, sweep_op_attr_program);
  CT_ADD_TEST(s, sweep_program_new);
  CT_ADD_TEST(s, sweep_program_append);
  CT_ADD_TEST(s, sweep_backward);
  CT_ADD_TEST(s, sweep_prune);
  CT_ADD_TEST(s, sweep_executor_new);
  CT_ADD_TEST(s, sweep_executor_new_free);
  CT_ADD_TEST(s, sweep_run_forward);
  CT_ADD_TEST(s, sweep_run_train);
  CT_ADD_TEST(s, sweep_run_train_free);
  CT_ADD_TEST(s, sweep_run_train_again);
  CT_ADD_TEST(s, sweep_op_run);
  CT_ADD_TEST(s, sweep_rnn_run);
  CT_ADD_TEST(s, sweep_rnn_backward);
  CT_ADD_TEST(s, sweep_rnn_train);
  return s;
}

CT_TEST_MAIN(make_suite)
