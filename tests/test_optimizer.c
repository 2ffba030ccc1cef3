/* SPDX-License-Identifier: Apache-2.0 */
/* The optimizer ops sgd, momentum and adam: each update rule against hand-computed values over
 * a few steps, in float32 and float64, in place (ParamOut naming Param, through the framework's
 * aliasing path) and not; an in-place step keeps memory flat and writes through into an external
 * buffer; a whole training step (forward, backward, sgd) under free_intermediates; and the
 * errors, each naming the op, slot and variable. */
#include <corten/corten.h>

#include "grad_util.h"

/* Puts the values v into name as dtype dt (float32, rounded to nearest, or float64). */
static void put_vals(ct_scope *s, const char *name, ct_dtype dt, ct_ddim dims, const double *v) {
  int64_t n = ct_ddim_numel(dims);
  float *f = xmalloc(n, sizeof *f);
  for (int64_t i = 0; i < n; i++) f[i] = (float)v[i];
  put(s, name, dt, dims, dt == CT_FLOAT32 ? (const void *)f : (const void *)v);
  free(f);
}

static void put_scalar(ct_scope *s, const char *name, ct_dtype dt, double v) {
  put_vals(s, name, dt, CT_DIMS(1), &v);
}

/* Element i of name, read in its own dtype. */
static double val(ct_scope *s, const char *name, int64_t i) {
  const ct_tensor *t = tensor_of(s, name);
  ck_assert_ptr_nonnull(t);
  return get_elem(ct_tensor_data(t, ct_tensor_dtype(t)), ct_tensor_dtype(t), i);
}

/* name holds exactly want[0..n) (values every dtype here represents exactly). */
static void assert_exact(ct_scope *s, const char *name, const double *want, int n) {
  for (int i = 0; i < n; i++) {
    ck_assert_msg(val(s, name, i) == want[i], "%s[%d] = %.17g, expected %.17g", name, i,
                  val(s, name, i), want[i]);
  }
}

/* name holds want[0..n) within rel (relative). */
static void assert_near(ct_scope *s, const char *name, const double *want, int n, double rel) {
  for (int i = 0; i < n; i++) {
    double got = val(s, name, i);
    ck_assert_msg(fabs(got - want[i]) <= rel * fabs(want[i]), "%s[%d] = %.17g, expected %.17g",
                  name, i, got, want[i]);
  }
}

static void wire(ct_op *op, bool input, const char *slot, const char *name) {
  ct_status st = input ? ct_op_set_input(op, slot, name) : ct_op_set_output(op, slot, name);
  ck_assert_msg(st == CT_OK, "%s", ct_last_error());
}

static ct_op *sgd_op(const char *param_out) {
  ct_op *op = new_op("sgd");
  wire(op, true, "Param", "p");
  wire(op, true, "Grad", "g");
  wire(op, true, "LearningRate", "lr");
  wire(op, false, "ParamOut", param_out);
  return op;
}

static ct_op *momentum_op(double mu, bool nesterov) {
  ct_op *op = new_op("momentum");
  wire(op, true, "Param", "p");
  wire(op, true, "Grad", "g");
  wire(op, true, "Velocity", "v");
  wire(op, true, "LearningRate", "lr");
  wire(op, false, "ParamOut", "p");
  wire(op, false, "VelocityOut", "v");
  ck_assert_int_eq(ct_op_set_attr_float(op, "mu", mu), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "use_nesterov", nesterov), CT_OK);
  return op;
}

/* adam over p, g, lr, m1, m2, b1p, b2p; the outputs are the same names (in place), or the
 * names with suffix "_out". */
static ct_op *adam_op(bool in_place) {
  static const char *const ins[][2] = {{"Param", "p"},     {"Grad", "g"},
                                       {"LearningRate", "lr"}, {"Moment1", "m1"},
                                       {"Moment2", "m2"},  {"Beta1Pow", "b1p"},
                                       {"Beta2Pow", "b2p"}};
  static const char *const outs[][2] = {{"ParamOut", "p"},     {"Moment1Out", "m1"},
                                        {"Moment2Out", "m2"},  {"Beta1PowOut", "b1p"},
                                        {"Beta2PowOut", "b2p"}};
  ct_op *op = new_op("adam");
  for (int i = 0; i < 7; i++) wire(op, true, ins[i][0], ins[i][1]);
  for (int i = 0; i < 5; i++) {
    char name[32];
    snprintf(name, sizeof name, "%s%s", outs[i][1], in_place ? "" : "_out");
    wire(op, false, outs[i][0], name);
  }
  return op;
}

/* Runs op `steps` times over s through an executor (the op goes into a program). */
static ct_executor *executor_of(ct_op *op, ct_scope *s, ct_program **p) {
  *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(*p, op), CT_OK);
  ct_executor *e = ct_executor_new(*p, s, ct_cpu());
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  return e;
}

static void step(ct_executor *e) {
  ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
}

static const ct_dtype float_types[] = {CT_FLOAT32, CT_FLOAT64};

/* ---- sgd ----------------------------------------------------------------------------------- */

/* p -= 0.5 g, three times, in place; the learning rate in the other float dtype. */
START_TEST(sgd_steps_in_place) {
  static const double p0[3] = {1.0, -2.0, 0.5}, g[3] = {0.5, 0.25, -1.0};
  static const double want[3][3] = {
      {0.75, -2.125, 1.0}, {0.5, -2.25, 1.5}, {0.25, -2.375, 2.0}};
  for (int d = 0; d < 2; d++) {
    ct_dtype dt = float_types[d];
    ct_scope *s = ct_scope_new();
    put_vals(s, "p", dt, CT_DIMS(3), p0);
    put_vals(s, "g", dt, CT_DIMS(3), g);
    put_scalar(s, "lr", float_types[1 - d], 0.5);
    ct_program *prog;
    ct_executor *e = executor_of(sgd_op("p"), s, &prog);
    for (int k = 0; k < 3; k++) {
      step(e);
      assert_exact(s, "p", want[k], 3);
    }
    ct_executor_free(e);
    ct_program_free(prog);
    ct_scope_free(s);
  }
}
END_TEST

START_TEST(sgd_out_of_place_leaves_param) {
  static const double p0[3] = {1.0, -2.0, 0.5}, g[3] = {0.5, 0.25, -1.0};
  static const double want[3] = {0.75, -2.125, 1.0};
  for (int d = 0; d < 2; d++) {
    ct_scope *s = ct_scope_new();
    put_vals(s, "p", float_types[d], CT_DIMS(3), p0);
    put_vals(s, "g", float_types[d], CT_DIMS(3), g);
    put_scalar(s, "lr", float_types[d], 0.5);
    ct_op *op = sgd_op("p_new");
    run(op, s);
    ct_op_free(op);
    assert_exact(s, "p_new", want, 3);
    assert_exact(s, "p", p0, 3);
    ct_scope_free(s);
  }
}
END_TEST

/* ---- momentum ------------------------------------------------------------------------------ */

/* mu 0.5, lr 0.5, g = [1, -2] each step, from v = 0: v = 0.5 v + g, p -= 0.5 v. */
START_TEST(momentum_steps_in_place) {
  static const double g[2] = {1.0, -2.0}, zero[2] = {0, 0};
  static const double want_p[3][2] = {{-0.5, 1.0}, {-1.25, 2.5}, {-2.125, 4.25}};
  static const double want_v[3][2] = {{1.0, -2.0}, {1.5, -3.0}, {1.75, -3.5}};
  for (int d = 0; d < 2; d++) {
    ct_dtype dt = float_types[d];
    ct_scope *s = ct_scope_new();
    put_vals(s, "p", dt, CT_DIMS(2), zero);
    put_vals(s, "v", dt, CT_DIMS(2), zero);
    put_vals(s, "g", dt, CT_DIMS(2), g);
    put_scalar(s, "lr", dt, 0.5);
    ct_program *prog;
    ct_executor *e = executor_of(momentum_op(0.5, false), s, &prog);
    for (int k = 0; k < 3; k++) {
      step(e);
      assert_exact(s, "p", want_p[k], 2);
      assert_exact(s, "v", want_v[k], 2);
    }
    ct_executor_free(e);
    ct_program_free(prog);
    ct_scope_free(s);
  }
}
END_TEST

/* With use_nesterov: p -= lr (g + mu v), v as above. */
START_TEST(momentum_nesterov_steps) {
  static const double g[2] = {1.0, -2.0}, zero[2] = {0, 0};
  static const double want_p[3][2] = {{-0.75, 1.5}, {-1.625, 3.25}, {-2.5625, 5.125}};
  for (int d = 0; d < 2; d++) {
    ct_dtype dt = float_types[d];
    ct_scope *s = ct_scope_new();
    put_vals(s, "p", dt, CT_DIMS(2), zero);
    put_vals(s, "v", dt, CT_DIMS(2), zero);
    put_vals(s, "g", dt, CT_DIMS(2), g);
    put_scalar(s, "lr", dt, 0.5);
    ct_program *prog;
    ct_executor *e = executor_of(momentum_op(0.5, true), s, &prog);
    for (int k = 0; k < 3; k++) {
      step(e);
      assert_exact(s, "p", want_p[k], 2);
    }
    ct_executor_free(e);
    ct_program_free(prog);
    ct_scope_free(s);
  }
}
END_TEST

/* ---- adam ---------------------------------------------------------------------------------- */

static const double adam_p0[3] = {0.5, -1.0, 2.0};
static const double adam_g[3][3] = {{0.1, -0.2, 0.3}, {0.2, 0.1, -0.4}, {-0.3, 0.05, 0.1}};

/* Puts adam's inputs (lr 0.01, zero moments, the powers at beta1 = 0.9 and beta2 = 0.999). */
static void put_adam(ct_scope *s, ct_dtype dt) {
  static const double zero[3] = {0, 0, 0};
  put_vals(s, "p", dt, CT_DIMS(3), adam_p0);
  put_vals(s, "g", dt, CT_DIMS(3), adam_g[0]);
  put_vals(s, "m1", dt, CT_DIMS(3), zero);
  put_vals(s, "m2", dt, CT_DIMS(3), zero);
  put_scalar(s, "lr", dt, 0.01);
  put_scalar(s, "b1p", dt, 0.9);
  put_scalar(s, "b2p", dt, 0.999);
}

/* Three steps with a new gradient each, against the rule worked by hand in each dtype's
 * arithmetic (lr_t = lr sqrt(1 - b2p) / (1 - b1p), m1 = 0.9 m1 + 0.1 g, m2 = 0.999 m2 +
 * 0.001 g^2, p -= lr_t m1 / (sqrt(m2) + 1e-8 sqrt(1 - b2p))). */
START_TEST(adam_steps_in_place_f64) {
  static const double want[3][3] = {
      {0.4900000009999999, -0.9900000005, 1.9900000003333334},
      {0.4803481813521253, -0.9873366302718677, 1.9919351043699691},
      {0.481014171477095, -0.9867227416903717, 1.9921482225300173}};
  static const double m1[3] = {-0.0038999999999999937, -0.0022000000000000014,
                               -0.0017000000000000036};
  static const double m2[3] = {0.00013994001000000014, 5.241004000000006e-05,
                               0.0002596600900000003};
  static const double b1p = 0.6561000000000001, b2p = 0.996005996001;
  ct_scope *s = ct_scope_new();
  put_adam(s, CT_FLOAT64);
  ct_program *prog;
  ct_executor *e = executor_of(adam_op(true), s, &prog);
  for (int k = 0; k < 3; k++) {
    put_vals(s, "g", CT_FLOAT64, CT_DIMS(3), adam_g[k]);
    step(e);
    assert_near(s, "p", want[k], 3, TOL64);
  }
  assert_near(s, "m1", m1, 3, TOL64);
  assert_near(s, "m2", m2, 3, TOL64);
  assert_near(s, "b1p", &b1p, 1, TOL64);
  assert_near(s, "b2p", &b2p, 1, TOL64);
  ct_executor_free(e);
  ct_program_free(prog);
  ct_scope_free(s);
}
END_TEST

START_TEST(adam_steps_in_place_f32) {
  static const double want[3][3] = {
      {0.49000000953674316, -0.9900000095367432, 1.9900000095367432},
      {0.48034822940826416, -0.9873366355895996, 1.991935133934021},
      {0.481014221906662, -0.9867227673530579, 1.9921482801437378}};
  static const double b1p = 0.6560999155044556, b2p = 0.9960060715675354;
  ct_scope *s = ct_scope_new();
  put_adam(s, CT_FLOAT32);
  ct_program *prog;
  ct_executor *e = executor_of(adam_op(true), s, &prog);
  for (int k = 0; k < 3; k++) {
    put_vals(s, "g", CT_FLOAT32, CT_DIMS(3), adam_g[k]);
    step(e);
    assert_near(s, "p", want[k], 3, TOL32);
  }
  assert_near(s, "b1p", &b1p, 1, TOL32);
  assert_near(s, "b2p", &b2p, 1, TOL32);
  ct_executor_free(e);
  ct_program_free(prog);
  ct_scope_free(s);
}
END_TEST

/* The first step moves every element by lr against its gradient's sign, whatever its size. */
START_TEST(adam_first_step_moves_by_lr) {
  static const double g[3] = {0.5, -5.0, 100.0};
  ct_scope *s = ct_scope_new();
  put_adam(s, CT_FLOAT64);
  put_vals(s, "g", CT_FLOAT64, CT_DIMS(3), g);
  ct_op *op = adam_op(true);
  run(op, s);
  ct_op_free(op);
  for (int i = 0; i < 3; i++) {
    double moved = val(s, "p", i) - adam_p0[i], want = g[i] > 0 ? -0.01 : 0.01;
    ck_assert_msg(fabs(moved - want) <= 1e-7 * 0.01, "p[%d] moved by %.17g", i, moved);
  }
  ct_scope_free(s);
}
END_TEST

/* Out of place: the inputs stay, the outputs hold the first step. */
START_TEST(adam_out_of_place_leaves_inputs) {
  static const double zero[3] = {0, 0, 0};
  static const double want[3] = {0.4900000009999999, -0.9900000005, 1.9900000003333334};
  ct_scope *s = ct_scope_new();
  put_adam(s, CT_FLOAT64);
  ct_op *op = adam_op(false);
  run(op, s);
  ct_op_free(op);
  assert_near(s, "p_out", want, 3, TOL64);
  assert_exact(s, "p", adam_p0, 3);
  assert_exact(s, "m1", zero, 3);
  ck_assert(val(s, "b1p", 0) == 0.9 && val(s, "b1p_out", 0) == 0.9 * 0.9);
  ck_assert(val(s, "b2p", 0) == 0.999 && val(s, "b2p_out", 0) == 0.999 * 0.999);
  ct_scope_free(s);
}
END_TEST

/* ---- The in-place path --------------------------------------------------------------------- */

/* Each in-place step gives ParamOut a fresh block and lets the old one go: memory stays flat. */
START_TEST(in_place_steps_keep_memory_flat) {
  static const double p0[4] = {1, 2, 3, 4}, g[4] = {1, 1, 1, 1};
  ct_scope *s = ct_scope_new();
  put_vals(s, "p", CT_FLOAT64, CT_DIMS(4), p0);
  put_vals(s, "g", CT_FLOAT64, CT_DIMS(4), g);
  put_scalar(s, "lr", CT_FLOAT64, 0.25);
  ct_program *prog;
  ct_executor *e = executor_of(sgd_op("p"), s, &prog);
  step(e);
  size_t allocated = cpu_stats().allocated;
  for (int k = 0; k < 5; k++) {
    step(e);
    ck_assert_uint_eq(cpu_stats().allocated, allocated);
  }
  ck_assert(val(s, "p", 0) == 1.0 - 6 * 0.25);
  ct_executor_free(e);
  ct_program_free(prog);
  ct_scope_free(s);
}
END_TEST

/* A Param wrapping the caller's buffer is updated in that buffer. */
START_TEST(in_place_step_writes_an_external_param) {
  double buf[3] = {1.0, -2.0, 0.5};
  static const double g[3] = {0.5, 0.25, -1.0}, want[3] = {0.75, -2.125, 1.0};
  ct_scope *s = ct_scope_new();
  ct_tensor *p = ct_var_tensor(ct_scope_var(s, "p"));
  ck_assert_int_eq(ct_tensor_wrap(p, buf, CT_DIMS(3), CT_FLOAT64, ct_cpu(), NULL, NULL), CT_OK);
  put_vals(s, "g", CT_FLOAT64, CT_DIMS(3), g);
  put_scalar(s, "lr", CT_FLOAT64, 0.5);
  ct_op *op = sgd_op("p");
  run(op, s);
  ct_op_free(op);
  for (int i = 0; i < 3; i++) ck_assert(buf[i] == want[i]);
  ck_assert(ct_tensor_is_external(tensor_of(s, "p")));
  ct_scope_free(s);
}
END_TEST

/* out = x * w, total = test_weighted_sum(out), w@GRAD by the backward pass, sgd(w) in place,
 * all under free_intermediates: two steps move w by 2 lr c_i x_i (c_i the loss's weights). */
START_TEST(training_step_with_free_intermediates) {
  static const double x[4] = {1.0, 2.0, -1.0, 0.5}, w0[4] = {0.5, 0.5, 0.5, 0.5};
  static const char *const params[] = {"w"};
  ct_scope *s = ct_scope_new();
  put_vals(s, "x", CT_FLOAT64, CT_DIMS(4), x);
  put_vals(s, "w", CT_FLOAT64, CT_DIMS(4), w0);
  put_scalar(s, "lr", CT_FLOAT64, 0.25);
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_mul", "x", "w", "out")), CT_OK);
  append_weighted_loss(p, "out", "total");
  ck_assert_msg(ct_program_append_backward(p, "total", params, 1) == CT_OK, "%s",
                ct_last_error());
  ct_op *opt = new_op("sgd");
  wire(opt, true, "Param", "w");
  wire(opt, true, "Grad", "w@GRAD");
  wire(opt, true, "LearningRate", "lr");
  wire(opt, false, "ParamOut", "w");
  ck_assert_int_eq(ct_program_append(p, opt), CT_OK);
  ct_executor_options o = {.free_intermediates = true};
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  step(e);
  step(e);
  for (int i = 0; i < 4; i++) {
    double want = w0[i] - 2 * 0.25 * grad_weight(i) * x[i];
    ck_assert_msg(val(s, "w", i) == want, "w[%d] = %.17g, expected %.17g", i, val(s, "w", i),
                  want);
  }
  ck_assert(!ct_tensor_has_memory(tensor_of(s, "w@GRAD"))); /* released after sgd read it */
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

/* ---- Errors -------------------------------------------------------------------------------- */

START_TEST(grad_of_other_dims_is_refused) {
  static const double v[4] = {1, 2, 3, 4};
  ct_scope *s = ct_scope_new();
  put_vals(s, "p", CT_FLOAT64, CT_DIMS(4), v);
  put_vals(s, "g", CT_FLOAT64, CT_DIMS(2, 2), v);
  put_scalar(s, "lr", CT_FLOAT64, 0.5);
  ct_op *op = sgd_op("p");
  run_fails(op, s, CT_ERR_SHAPE, "sgd", "Grad", "'g'", "[2,2]", "Param", NULL);
  assert_exact(s, "p", v, 4);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(grad_of_other_dtype_is_refused) {
  static const double v[2] = {1, 2};
  ct_scope *s = ct_scope_new();
  put_vals(s, "p", CT_FLOAT64, CT_DIMS(2), v);
  put_vals(s, "g", CT_FLOAT32, CT_DIMS(2), v);
  put_scalar(s, "lr", CT_FLOAT64, 0.5);
  ct_op *op = sgd_op("p");
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "sgd", "Grad", "'g'", "float32", "float64", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(learning_rate_must_be_one_float) {
  static const double v[2] = {1, 2};
  static const int64_t one = 1;
  ct_scope *s = ct_scope_new();
  put_vals(s, "p", CT_FLOAT64, CT_DIMS(2), v);
  put_vals(s, "g", CT_FLOAT64, CT_DIMS(2), v);
  put_vals(s, "lr", CT_FLOAT64, CT_DIMS(2), v);
  ct_op *op = sgd_op("p");
  run_fails(op, s, CT_ERR_SHAPE, "sgd", "LearningRate", "'lr'", "one element", NULL);
  put(s, "lr", CT_INT64, CT_DIMS(1), &one);
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "sgd", "LearningRate", "'lr'", "int64", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(momentum_needs_mu) {
  static const double v[2] = {1, 2};
  ct_scope *s = ct_scope_new();
  put_vals(s, "p", CT_FLOAT64, CT_DIMS(2), v);
  put_vals(s, "g", CT_FLOAT64, CT_DIMS(2), v);
  put_vals(s, "v", CT_FLOAT64, CT_DIMS(2), v);
  put_scalar(s, "lr", CT_FLOAT64, 0.5);
  ct_op *op = new_op("momentum");
  wire(op, true, "Param", "p");
  wire(op, true, "Grad", "g");
  wire(op, true, "Velocity", "v");
  wire(op, true, "LearningRate", "lr");
  wire(op, false, "ParamOut", "p");
  wire(op, false, "VelocityOut", "v");
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "momentum", "'mu'", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(momentum_velocity_of_other_dims_is_refused) {
  static const double v[3] = {1, 2, 3};
  ct_scope *s = ct_scope_new();
  put_vals(s, "p", CT_FLOAT64, CT_DIMS(2), v);
  put_vals(s, "g", CT_FLOAT64, CT_DIMS(2), v);
  put_vals(s, "v", CT_FLOAT64, CT_DIMS(3), v);
  put_scalar(s, "lr", CT_FLOAT64, 0.5);
  ct_op *op = momentum_op(0.9, false);
  run_fails(op, s, CT_ERR_SHAPE, "momentum", "Velocity", "'v'", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(adam_beta_outside_0_1_is_refused) {
  ct_scope *s = ct_scope_new();
  put_adam(s, CT_FLOAT64);
  ct_op *op = adam_op(true);
  ck_assert_int_eq(ct_op_set_attr_float(op, "beta1", 1.0), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "adam", "'beta1'", "[0, 1)", NULL);
  assert_exact(s, "p", adam_p0, 3);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(adam_beta_pow_must_be_one_element) {
  static const double two[2] = {0.999, 0.999};
  ct_scope *s = ct_scope_new();
  put_adam(s, CT_FLOAT64);
  put_vals(s, "b2p", CT_FLOAT64, CT_DIMS(2), two);
  ct_op *op = adam_op(true);
  run_fails(op, s, CT_ERR_SHAPE, "adam", "Beta2Pow", "'b2p'", NULL);
  assert_exact(s, "p", adam_p0, 3);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* Beta1Pow of 1 (the power of step 0, a natural mistake) would divide by zero and turn every
 * parameter into inf: refused, naming the variable and what to start it at. */
START_TEST(adam_beta_pow_of_one_is_refused) {
  ct_scope *s = ct_scope_new();
  put_adam(s, CT_FLOAT64);
  put_scalar(s, "b1p", CT_FLOAT64, 1.0);
  ct_op *op = adam_op(true);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "adam", "Beta1Pow", "'b1p'", "[0, 1)", "beta1",
            NULL);
  assert_exact(s, "p", adam_p0, 3);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("optimizer");
  CT_ADD_TEST(s, sgd_steps_in_place);
  CT_ADD_TEST(s, sgd_out_of_place_leaves_param);
  CT_ADD_TEST(s, momentum_steps_in_place);
  CT_ADD_TEST(s, momentum_nesterov_steps);
  CT_ADD_TEST(s, adam_steps_in_place_f64);
  CT_ADD_TEST(s, adam_steps_in_place_f32);
  CT_ADD_TEST(s, adam_first_step_moves_by_lr);
  CT_ADD_TEST(s, adam_out_of_place_leaves_inputs);
  CT_ADD_TEST(s, in_place_steps_keep_memory_flat);
  CT_ADD_TEST(s, in_place_step_writes_an_external_param);
  CT_ADD_TEST(s, training_step_with_free_intermediates);
  CT_ADD_TEST(s, grad_of_other_dims_is_refused);
  CT_ADD_TEST(s, grad_of_other_dtype_is_refused);
  CT_ADD_TEST(s, learning_rate_must_be_one_float);
  CT_ADD_TEST(s, momentum_needs_mu);
  CT_ADD_TEST(s, momentum_velocity_of_other_dims_is_refused);
  CT_ADD_TEST(s, adam_beta_outside_0_1_is_refused);
  CT_ADD_TEST(s, adam_beta_pow_must_be_one_element);
  CT_ADD_TEST(s, adam_beta_pow_of_one_is_refused);
  return s;
}

CT_TEST_MAIN(make_suite)
