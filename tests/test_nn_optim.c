/* SPDX-License-Identifier: Apache-2.0 */
/* The builder's optimizer options (ct_nn_minimize) and the lr_schedule op: each schedule's rate
 * step by step against its formula in double, the refusals, a schedule and weight decay in a
 * built program (the rate and step counter after k steps; the decayed gradient and update bit
 * for bit against the same step without decay). */
#include <math.h>
#include <string.h>

#include <corten/corten.h>

#include "op_util.h"

enum { N = 8, IN = 6, OUT = 3 };

/* lr_schedule over Step t, its attributes set by the caller; the rate it writes. */
static float rate_at(ct_op *op, int64_t t) {
  ct_scope *s = ct_scope_new();
  put(s, "t", CT_INT64, CT_DIMS(1), &t);
  run(op, s);
  float lr = *(const float *)result(s, "lr", CT_FLOAT32, CT_DIMS(1));
  ck_assert_int_eq(*(const int64_t *)result(s, "t_next", CT_INT64, CT_DIMS(1)), t + 1);
  ct_scope_free(s);
  return lr;
}

static ct_op *sched_op(const char *kind, double base, int64_t warmup) {
  ct_op *op = new_op("lr_schedule");
  ck_assert_int_eq(ct_op_set_input(op, "Step", "t"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "LearningRate", "lr"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "StepOut", "t_next"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "base_lr", base), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "kind", kind), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "warmup_steps", warmup), CT_OK);
  return op;
}

START_TEST(step_schedule_with_warm_up) {
  ct_op *op = sched_op("step", 0.8, 2);
  ck_assert_int_eq(ct_op_set_attr_int(op, "step_size", 3), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "gamma", 0.5), CT_OK);
  /* warm-up 0.4, 0.8; then 0.8 for three steps, 0.4 for three, 0.2 */
  static const float want[] = {0.4f, 0.8f, 0.8f, 0.8f, 0.8f, 0.4f, 0.4f, 0.4f, 0.2f};
  for (int64_t t = 0; t < 9; t++) ck_assert_float_eq(rate_at(op, t), want[t]);
  ct_op_free(op);
}
END_TEST

START_TEST(cosine_schedule_reaches_its_floor) {
  ct_op *op = sched_op("cosine", 0.1, 0);
  ck_assert_int_eq(ct_op_set_attr_int(op, "total_steps", 10), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "min_lr", 0.01), CT_OK);
  for (int64_t t = 0; t < 14; t++) {
    double u = t < 10 ? (double)t : 10.0;
    float want = (float)(0.01 + (0.1 - 0.01) * (1 + cos(3.14159265358979323846 * u / 10.0)) / 2);
    ck_assert_float_eq(rate_at(op, t), want);
  }
  ck_assert_float_eq(rate_at(op, 0), 0.1f);
  ck_assert_float_eq(rate_at(op, 10), 0.01f);
  ct_op_free(op);
  op = sched_op("constant", 0.25, 4);
  ck_assert_float_eq(rate_at(op, 0), 0.0625f);
  ck_assert_float_eq(rate_at(op, 3), 0.25f);
  ck_assert_float_eq(rate_at(op, 100), 0.25f);
  ct_op_free(op);
}
END_TEST

START_TEST(schedule_refusals_name_the_fix) {
  ct_scope *s = ct_scope_new();
  int64_t neg = -1;
  put(s, "t", CT_INT64, CT_DIMS(1), &neg);
  ct_op *op = sched_op("step", 0.1, 0);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "Step variable 't' holds -1", "from 0", NULL);
  ct_op_free(op);
  int64_t zero = 0;
  put(s, "t", CT_INT64, CT_DIMS(1), &zero);
  op = sched_op("linear", 0.1, 0);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "\"linear\"", "\"cosine\"", NULL);
  ct_op_free(op);
  op = sched_op("step", 0.1, 0);
  ck_assert_int_eq(ct_op_set_attr_int(op, "step_size", 0), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "step_size 0", NULL);
  ct_op_free(op);
  op = sched_op("cosine", 0.1, 0);
  ck_assert_int_eq(ct_op_set_attr_float(op, "min_lr", 0.5), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "min_lr 0.5", NULL);
  ct_op_free(op);
  op = sched_op("constant", 0, 0);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "base_lr is 0", NULL);
  ct_op_free(op);
  int32_t small = 0;
  put(s, "t", CT_INT32, CT_DIMS(1), &small);
  op = sched_op("constant", 0.1, 0);
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "Step variable 't' is int32", "int64", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static void data(ct_scope *s) {
  float x[N * IN], y[N * OUT];
  for (int i = 0; i < N * IN; i++) x[i] = (float)sin(0.7 * i);
  for (int i = 0; i < N * OUT; i++) y[i] = (float)cos(0.3 * i);
  put(s, "x", CT_FLOAT32, CT_DIMS(N, IN), x);
  put(s, "y", CT_FLOAT32, CT_DIMS(N, OUT), y);
}

/* A one-layer regression in s with optimizer opt, after its startup program; the builder. */
static ct_nn *regression(ct_scope *s, const ct_nn_optimizer *opt) {
  data(s);
  ct_nn *nn = ct_nn_new(s, 5);
  const char *p = ct_nn_linear(nn, "x", IN, OUT, NULL);
  const char *loss = ct_nn_mse(nn, p, "y");
  ck_assert_msg(ct_nn_minimize(nn, loss, opt) == CT_OK, "%s", ct_last_error());
  ck_assert_int_eq(ct_nn_run_startup(nn, ct_cpu()), CT_OK);
  return nn;
}

static void run_n(ct_nn *nn, ct_scope *s, int times) {
  ct_executor *e = ct_executor_new(ct_nn_main(nn), s, ct_cpu());
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  for (int i = 0; i < times; i++) ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  ct_executor_free(e);
}

START_TEST(a_built_schedule_writes_the_rate_each_step) {
  ct_scope *s = ct_scope_new();
  ct_nn *nn = regression(s, &(ct_nn_optimizer){.kind = CT_NN_MOMENTUM, .lr = 0.2, .mu = 0.9,
                                                .schedule = "step", .step_size = 2,
                                                .gamma = 0.5, .warmup_steps = 1});
  ck_assert_int_eq(*(const int64_t *)result(s, "momentum_0.step", CT_INT64, CT_DIMS(1)), 0);
  run_n(nn, s, 4); /* steps 0..3: 0.2 (warm-up), 0.2, 0.2, 0.1 */
  ck_assert_int_eq(*(const int64_t *)result(s, "momentum_0.step", CT_INT64, CT_DIMS(1)), 4);
  ck_assert_float_eq(*(const float *)result(s, "momentum_0.lr", CT_FLOAT32, CT_DIMS(1)), 0.1f);
  ct_nn_free(nn);
  ct_scope_free(s);
}
END_TEST

/* One sgd step with weight decay wd: the gradient becomes g + wd w (g: the same step's
 * gradient without decay, same seed and data), and the update reads it. */
START_TEST(weight_decay_adds_to_the_gradient_before_the_update) {
  const float lr = 0.5f, wd = 0.25f;
  ct_scope *a = ct_scope_new(), *b = ct_scope_new();
  ct_nn *plain = regression(a, &(ct_nn_optimizer){.kind = CT_NN_SGD, .lr = lr});
  ct_nn *decayed = regression(b, &(ct_nn_optimizer){.kind = CT_NN_SGD, .lr = lr,
                                                    .weight_decay = wd});
  float w0[IN * OUT];
  memcpy(w0, result(b, "fc_0.w", CT_FLOAT32, CT_DIMS(IN, OUT)), sizeof w0);
  ck_assert_int_eq(memcmp(w0, result(a, "fc_0.w", CT_FLOAT32, CT_DIMS(IN, OUT)), sizeof w0), 0);
  run_n(plain, a, 1);
  run_n(decayed, b, 1);
  const float *g = result(a, "fc_0.w@GRAD", CT_FLOAT32, CT_DIMS(IN, OUT));
  const float *gd = result(b, "fc_0.w@GRAD", CT_FLOAT32, CT_DIMS(IN, OUT));
  const float *w1 = result(b, "fc_0.w", CT_FLOAT32, CT_DIMS(IN, OUT));
  for (int i = 0; i < IN * OUT; i++) {
    float decay = w0[i] * wd;
    float want_g = g[i] + decay;
    ck_assert_float_eq(gd[i], want_g);
    float step = lr * want_g;
    ck_assert_float_eq(w1[i], w0[i] - step);
  }
  ct_nn_free(plain);
  ct_nn_free(decayed);
  ct_scope_free(a);
  ct_scope_free(b);
}
END_TEST

START_TEST(bad_options_add_nothing) {
  ct_scope *s = ct_scope_new();
  data(s);
  ct_nn *nn = ct_nn_new(s, 1);
  const char *loss = ct_nn_mse(nn, ct_nn_linear(nn, "x", IN, OUT, NULL), "y");
  size_t ops = ct_program_size(ct_nn_main(nn));
  ck_assert_int_eq(ct_nn_minimize(nn, loss, &(ct_nn_optimizer){.kind = CT_NN_ADAM, .lr = 0.1,
                                                               .schedule = "linear"}),
                   CT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "schedule \"linear\""));
  ck_assert_int_eq(ct_nn_minimize(nn, loss, &(ct_nn_optimizer){.kind = CT_NN_ADAM, .lr = 0.1,
                                                               .weight_decay = -1}),
                   CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_nn_minimize(nn, loss, &(ct_nn_optimizer){.kind = CT_NN_SGD, .lr = 0.1,
                                                               .schedule = "cosine"}),
                   CT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "total_steps >= 1"));
  ck_assert_int_eq(ct_nn_minimize(nn, loss, &(ct_nn_optimizer){.kind = 7, .lr = 0.1}),
                   CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_nn_minimize(nn, loss, NULL), CT_ERR_INVALID_ARGUMENT);
  ck_assert_uint_eq(ct_program_size(ct_nn_main(nn)), ops);
  ct_nn_free(nn);
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("nn_optim");
  CT_ADD_TEST(s, step_schedule_with_warm_up);
  CT_ADD_TEST(s, cosine_schedule_reaches_its_floor);
  CT_ADD_TEST(s, schedule_refusals_name_the_fix);
  CT_ADD_TEST(s, a_built_schedule_writes_the_rate_each_step);
  CT_ADD_TEST(s, weight_decay_adds_to_the_gradient_before_the_update);
  CT_ADD_TEST(s, bad_options_add_nothing);
  return s;
}

CT_TEST_MAIN(make_suite)
