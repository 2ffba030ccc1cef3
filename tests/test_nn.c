/* SPDX-License-Identifier: Apache-2.0 */
/* The builder suite (corten/nn.h): an MLP built by layers and adam gives the hand-wired
 * program's bits; names are predictable; initialisers fill what they say; a convolutional net
 * with batch norm trains; bad arguments add nothing. */
#include <math.h>
#include <string.h>

#include <corten/corten.h>

#include "op_util.h"

enum { N = 8, IN = 6, HID = 5, OUT = 3, STEPS = 4 };

static void append(ct_program *p, ct_op *op) { ck_assert_int_eq(ct_program_append(p, op), CT_OK); }

/* x [N, IN] and labels [N, 1] in s. */
static void data(ct_scope *s) {
  float x[N * IN];
  int64_t label[N];
  for (int i = 0; i < N * IN; i++) x[i] = (float)sin(0.7 * i);
  for (int i = 0; i < N; i++) label[i] = i % OUT;
  put(s, "x", CT_FLOAT32, CT_DIMS(N, IN), x);
  put(s, "label", CT_INT64, CT_DIMS(N, 1), label);
}

static void run_n(ct_program *p, ct_scope *s, int times) {
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  for (int i = 0; i < times; i++) ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  ct_executor_free(e);
}

/* The op writing Out of dims with init attributes, as the builder makes initialisers. */
static void init_op(ct_program *p, const char *type, const char *out, const int64_t *dims,
                    size_t rank, const char *a, double av, const char *b, double bv,
                    int64_t seed) {
  ct_op *op = new_op(type);
  ck_assert_int_eq(ct_op_set_output(op, "Out", out), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", dims, rank), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, a, av), CT_OK);
  if (b != NULL) ck_assert_int_eq(ct_op_set_attr_float(op, b, bv), CT_OK);
  if (seed != 0) ck_assert_int_eq(ct_op_set_attr_int(op, "seed", seed), CT_OK);
  append(p, op);
}

static void adam_op(ct_program *p, const char *w) {
  char g[64], m1[64], m2[64], b1[64], b2[64];
  snprintf(g, sizeof g, "%s@GRAD", w);
  snprintf(m1, sizeof m1, "%s.moment1", w);
  snprintf(m2, sizeof m2, "%s.moment2", w);
  snprintf(b1, sizeof b1, "%s.beta1_pow", w);
  snprintf(b2, sizeof b2, "%s.beta2_pow", w);
  ct_op *op = new_op("adam");
  const char *in[][2] = {{"Param", w}, {"Grad", g}, {"LearningRate", "adam_0.lr"},
                         {"Moment1", m1}, {"Moment2", m2}, {"Beta1Pow", b1}, {"Beta2Pow", b2}};
  const char *out[][2] = {{"ParamOut", w}, {"Moment1Out", m1}, {"Moment2Out", m2},
                          {"Beta1PowOut", b1}, {"Beta2PowOut", b2}};
  for (int i = 0; i < 7; i++) ck_assert_int_eq(ct_op_set_input(op, in[i][0], in[i][1]), CT_OK);
  for (int i = 0; i < 5; i++) ck_assert_int_eq(ct_op_set_output(op, out[i][0], out[i][1]), CT_OK);
  append(p, op);
}

/* The same MLP and adam wired by hand: every op, name, seed and bound the builder would use. */
static void hand_wired(ct_program *init, ct_program *step, uint64_t seed) {
  static const int64_t w0[2] = {IN, HID}, b0[1] = {HID}, w1[2] = {HID, OUT}, b1[1] = {OUT},
                       one[1] = {1};
  init_op(init, "uniform_random", "fc_0.w", w0, 2, "min", -1 / sqrt(IN), "max", 1 / sqrt(IN),
          (int64_t)(seed * 1000003u + 1));
  init_op(init, "fill_constant", "fc_0.b", b0, 1, "value", 0, NULL, 0, 0);
  init_op(init, "uniform_random", "fc_1.w", w1, 2, "min", -1 / sqrt(HID), "max", 1 / sqrt(HID),
          (int64_t)(seed * 1000003u + 2));
  init_op(init, "fill_constant", "fc_1.b", b1, 1, "value", 0, NULL, 0, 0);
  init_op(init, "fill_constant", "adam_0.lr", one, 1, "value", 0.01, NULL, 0, 0);
  static const char *const params[] = {"fc_0.w", "fc_0.b", "fc_1.w", "fc_1.b"};
  for (int i = 0; i < 4; i++) {
    char m1[64], m2[64], p1[64], p2[64];
    snprintf(m1, sizeof m1, "%s.moment1", params[i]);
    snprintf(m2, sizeof m2, "%s.moment2", params[i]);
    snprintf(p1, sizeof p1, "%s.beta1_pow", params[i]);
    snprintf(p2, sizeof p2, "%s.beta2_pow", params[i]);
    append(init, op_x("fill_any_like", params[i], m1));
    append(init, op_x("fill_any_like", params[i], m2));
    init_op(init, "fill_constant", p1, one, 1, "value", 0.9, NULL, 0, 0);
    init_op(init, "fill_constant", p2, one, 1, "value", 0.999, NULL, 0, 0);
  }
  append(step, op_xy("matmul", "x", "fc_0.w", "fc_0.mm"));
  append(step, op_xy("elementwise_add", "fc_0.mm", "fc_0.b", "fc_0.out"));
  append(step, op_x("relu", "fc_0.out", "fc_0.act"));
  append(step, op_xy("matmul", "fc_0.act", "fc_1.w", "fc_1.mm"));
  append(step, op_xy("elementwise_add", "fc_1.mm", "fc_1.b", "fc_1.out"));
  ct_op *ce = new_op("softmax_with_cross_entropy");
  ck_assert_int_eq(ct_op_set_input(ce, "Logits", "fc_1.out"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(ce, "Label", "label"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(ce, "Softmax", "loss_0.prob"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(ce, "Loss", "loss_0.rows"), CT_OK);
  append(step, ce);
  append(step, op_x("mean", "loss_0.rows", "loss_0"));
  ck_assert_int_eq(ct_program_append_backward(step, "loss_0", params, 4), CT_OK);
  for (int i = 0; i < 4; i++) adam_op(step, params[i]);
}

START_TEST(an_mlp_built_by_layers_gives_the_hand_wired_bits) {
  ct_scope *a = ct_scope_new(), *b = ct_scope_new();
  data(a);
  data(b);
  ct_nn *nn = ct_nn_new(a, 11);
  const char *h = ct_nn_linear(nn, "x", IN, HID, &(ct_nn_opts){.act = "relu"});
  const char *y = ct_nn_linear(nn, h, HID, OUT, NULL);
  const char *loss = ct_nn_cross_entropy(nn, y, "label");
  ck_assert_int_eq(ct_nn_adam(nn, loss, 0.01), CT_OK);
  ck_assert_str_eq(h, "fc_0.act");
  ck_assert_str_eq(y, "fc_1.out");
  ck_assert_str_eq(loss, "loss_0");
  ck_assert_int_eq(ct_nn_run_startup(nn, ct_cpu()), CT_OK);
  run_n(ct_nn_main(nn), a, STEPS);
  ct_program *init = ct_program_new(), *step = ct_program_new();
  hand_wired(init, step, 11);
  ck_assert_uint_eq(ct_program_size(step), ct_program_size(ct_nn_main(nn)));
  run_n(init, b, 1);
  run_n(step, b, STEPS);
  static const char *const check[] = {"fc_0.w", "fc_0.b", "fc_1.w", "fc_1.b", "loss_0",
                                      "fc_1.w.moment2", "fc_0.b.beta1_pow"};
  for (int i = 0; i < 7; i++) {
    const ct_tensor *ta = tensor_of(a, check[i]), *tb = tensor_of(b, check[i]);
    ck_assert_int_eq(ct_tensor_numel(ta), ct_tensor_numel(tb));
    ck_assert_msg(memcmp(ct_tensor_data(ta, CT_FLOAT32), ct_tensor_data(tb, CT_FLOAT32),
                         (size_t)ct_tensor_numel(ta) * 4) == 0,
                  "%s differs", check[i]);
  }
  ct_program_free(init);
  ct_program_free(step);
  ct_nn_free(nn);
  ct_scope_free(a);
  ct_scope_free(b);
}
END_TEST

START_TEST(layers_name_their_parameters_predictably) {
  ct_scope *s = ct_scope_new();
  ct_nn *nn = ct_nn_new(s, 1);
  const char *c = ct_nn_conv2d(nn, "img", 1, 4, 3, 1, 1, &(ct_nn_opts){.act = "relu"});
  const char *bn = ct_nn_batch_norm(nn, c, 4, true);
  const char *p = ct_nn_pool2d(nn, bn, true, 2, 2);
  const char *f = ct_nn_flatten(nn, p);
  const char *d = ct_nn_dropout(nn, f, 0.25, true);
  const char *y = ct_nn_linear(nn, d, 16, 2, &(ct_nn_opts){.no_bias = true});
  ck_assert_str_eq(c, "conv2d_0.act");
  ck_assert_str_eq(bn, "batch_norm_0.out");
  ck_assert_str_eq(p, "pool_0.out");
  ck_assert_str_eq(f, "flatten_0.out");
  ck_assert_str_eq(d, "dropout_0.out");
  ck_assert_str_eq(y, "fc_0.mm");
  static const char *const want[] = {"conv2d_0.w", "conv2d_0.b", "batch_norm_0.scale",
                                     "batch_norm_0.bias", "fc_0.w"};
  ck_assert_uint_eq(ct_nn_param_count(nn), 5);
  for (size_t i = 0; i < 5; i++) ck_assert_str_eq(ct_nn_param(nn, i), want[i]);
  ck_assert_ptr_null(ct_nn_param(nn, 5));
  ct_nn_free(nn);
  ct_scope_free(s);
}
END_TEST

START_TEST(initialisers_fill_what_they_say) {
  ct_scope *s = ct_scope_new();
  ct_nn *nn = ct_nn_new(s, 3);
  ct_nn_opts xav = {.weight = {CT_NN_INIT_XAVIER_UNIFORM, 0, 0},
                    .bias = {CT_NN_INIT_CONSTANT, 0.5, 0}};
  ck_assert_ptr_nonnull(ct_nn_linear(nn, "x", 200, 100, &xav));
  ct_nn_opts normal = {.weight = {CT_NN_INIT_NORMAL, 2.0, 0.0}};
  ck_assert_ptr_nonnull(ct_nn_linear(nn, "x", 4, 4, &normal));
  ck_assert_ptr_nonnull(ct_nn_embedding(nn, "ids", 1000, 8));
  ck_assert_int_eq(ct_nn_run_startup(nn, ct_cpu()), CT_OK);
  const float *w = var_f32(s, "fc_0.w"), *b = var_f32(s, "fc_0.b"), *n = var_f32(s, "fc_1.w");
  double bound = sqrt(6.0 / 300), max = 0;
  for (int i = 0; i < 200 * 100; i++) max = fmax(max, fabs(w[i]));
  ck_assert(max <= bound && max > 0.99 * bound); /* uniform in +-bound, reaching near it */
  for (int i = 0; i < 100; i++) ck_assert_float_eq(b[i], 0.5f);
  for (int i = 0; i < 16; i++) ck_assert_float_eq(n[i], 2.0f); /* std 0: the mean */
  const float *e = var_f32(s, "embedding_0.w");
  double sum = 0, sq = 0;
  for (int i = 0; i < 8000; i++) sum += e[i], sq += e[i] * e[i];
  ck_assert(fabs(sum / 8000) < 0.05 && fabs(sq / 8000 - 1) < 0.05); /* normal, std 1 */
  ct_nn_free(nn);
  ct_scope_free(s);
}
END_TEST

START_TEST(a_conv_net_with_batch_norm_trains) {
  ct_scope *s = ct_scope_new();
  float img[N * 1 * 4 * 4];
  int64_t label[N];
  for (int i = 0; i < N * 16; i++) img[i] = (float)((i * 37 % 11) / 11.0);
  for (int i = 0; i < N; i++) label[i] = i % 2;
  put(s, "img", CT_FLOAT32, CT_DIMS(N, 1, 4, 4), img);
  put(s, "label", CT_INT64, CT_DIMS(N, 1), label);
  ct_nn *nn = ct_nn_new(s, 5);
  const char *c = ct_nn_conv2d(nn, "img", 1, 4, 3, 1, 1, &(ct_nn_opts){.act = "relu"});
  const char *p = ct_nn_pool2d(nn, ct_nn_batch_norm(nn, c, 4, true), false, 2, 2);
  const char *y = ct_nn_linear(nn, ct_nn_flatten(nn, p), 16, 2, NULL);
  const char *loss = ct_nn_cross_entropy(nn, y, "label");
  ck_assert_int_eq(ct_nn_momentum(nn, loss, 0.1, 0.9), CT_OK);
  ck_assert_int_eq(ct_nn_run_startup(nn, ct_cpu()), CT_OK);
  ct_executor *e = ct_executor_new(ct_nn_main(nn), s, ct_cpu());
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  float first = var_f32(s, loss)[0];
  for (int i = 0; i < 50; i++) ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ck_assert_float_lt(var_f32(s, loss)[0], first / 4); /* 16 samples learnt */
  ck_assert_float_ne(var_f32(s, "batch_norm_0.mean")[0], 0.0f); /* running stats moved */
  ct_executor_free(e);
  ct_nn_free(nn);
  ct_scope_free(s);
}
END_TEST

/* A sequence classifier (the sign of each sequence's sum of feature 0) by an lstm or gru layer,
 * batch first, and a linear head on its last hidden state: the shapes, and the loss falls. */
static void recurrent_learns(bool gru) {
  enum { NB = 8, T = 5, FI = 3, H = 8 };
  ct_scope *s = ct_scope_new();
  float x[NB * T * FI];
  int64_t label[NB];
  for (int i = 0; i < NB * T * FI; i++) x[i] = (float)sin(1.3 * i + 0.4);
  for (int n = 0; n < NB; n++) {
    float sum = 0;
    for (int t = 0; t < T; t++) sum += x[(n * T + t) * FI];
    label[n] = sum > 0;
  }
  put(s, "x", CT_FLOAT32, CT_DIMS(NB, T, FI), x);
  put(s, "label", CT_INT64, CT_DIMS(NB, 1), label);
  ct_nn *nn = ct_nn_new(s, 9);
  const char *out = gru ? ct_nn_gru(nn, "x", FI, H, true) : ct_nn_lstm(nn, "x", FI, H, true);
  ck_assert_str_eq(out, gru ? "gru_0.out" : "lstm_0.out");
  const char *last = gru ? "gru_0.h" : "lstm_0.h";
  const char *loss = ct_nn_cross_entropy(nn, ct_nn_linear(nn, last, H, 2, NULL), "label");
  ck_assert_uint_eq(ct_nn_param_count(nn), 5); /* w, r, b of the layer; the head's w, b */
  ck_assert_int_eq(ct_nn_adam(nn, loss, 0.05), CT_OK);
  ck_assert_int_eq(ct_nn_run_startup(nn, ct_cpu()), CT_OK);
  ct_executor *e = ct_executor_new(ct_nn_main(nn), s, ct_cpu());
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(tensor_of(s, out)), CT_DIMS(NB, T, H)));
  ck_assert(ct_ddim_equal(ct_tensor_dims(tensor_of(s, last)), CT_DIMS(NB, H)));
  float first = var_f32(s, loss)[0];
  for (int i = 0; i < 100; i++) ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ck_assert_float_lt(var_f32(s, loss)[0], first / 4);
  ct_executor_free(e);
  ct_nn_free(nn);
  ct_scope_free(s);
}

START_TEST(an_lstm_layer_learns_a_sequence_task) { recurrent_learns(false); }
END_TEST

START_TEST(a_gru_layer_learns_a_sequence_task) { recurrent_learns(true); }
END_TEST

START_TEST(bad_arguments_add_nothing) {
  ct_scope *s = ct_scope_new();
  ct_nn *nn = ct_nn_new(s, 1);
  ck_assert_ptr_nonnull(ct_nn_linear(nn, "x", 2, 2, NULL));
  size_t main_n = ct_program_size(ct_nn_main(nn)), init_n = ct_program_size(ct_nn_startup(nn));
  ck_assert_ptr_null(ct_nn_linear(nn, "x", 0, 2, NULL));
  HAS(ct_last_error(), "ct_nn_linear: size 1 is 0");
  ck_assert_ptr_null(ct_nn_linear(nn, NULL, 2, 2, NULL));
  ck_assert_ptr_null(ct_nn_linear(nn, "x", 2, 2, &(ct_nn_opts){.act = "swish"}));
  HAS(ct_last_error(), "activation 'swish'");
  ck_assert_ptr_null(ct_nn_dropout(nn, "x", 1.0, true));
  ck_assert_ptr_null(ct_nn_conv2d(nn, "x", 1, 1, 3, 1, -1, NULL));
  ct_nn_opts bad = {.weight = {CT_NN_INIT_UNIFORM, 1.0, -1.0}};
  ck_assert_ptr_null(ct_nn_linear(nn, "x", 2, 2, &bad)); /* fails after starting: undone */
  HAS(ct_last_error(), "is not valid");
  ck_assert_int_eq(ct_nn_sgd(nn, "fc_0.out", 0.0), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_nn_sgd(nn, NULL, 0.1), CT_ERR_INVALID_ARGUMENT);
  ck_assert_uint_eq(ct_program_size(ct_nn_main(nn)), main_n);
  ck_assert_uint_eq(ct_program_size(ct_nn_startup(nn)), init_n);
  ck_assert_uint_eq(ct_nn_param_count(nn), 2);
  ck_assert_str_eq(ct_nn_linear(nn, "x", 2, 2, NULL), "fc_1.out"); /* the failed ones took none */
  ck_assert_ptr_null(ct_nn_new(NULL, 0));
  ct_nn_free(NULL);
  ct_nn_free(nn);
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("nn");
  CT_ADD_TEST(s, an_mlp_built_by_layers_gives_the_hand_wired_bits);
  CT_ADD_TEST(s, layers_name_their_parameters_predictably);
  CT_ADD_TEST(s, initialisers_fill_what_they_say);
  CT_ADD_TEST(s, a_conv_net_with_batch_norm_trains);
  CT_ADD_TEST(s, an_lstm_layer_learns_a_sequence_task);
  CT_ADD_TEST(s, a_gru_layer_learns_a_sequence_task);
  CT_ADD_TEST(s, bad_arguments_add_nothing);
  return s;
}

CT_TEST_MAIN(make_suite)
