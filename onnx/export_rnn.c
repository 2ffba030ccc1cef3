/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/export_rnn.c: corten's recurrent layers as ONNX's (the inverse of onnx/rules_rnn.c):
 * simple_rnn -> RNN, gru -> GRU, lstm -> LSTM, inputs and outputs by position (X, W, R, B,
 * sequence_lens, initial_h, initial_c, P; Y, Y_h, Y_c), hidden_size, direction, layout (1 when
 * time_major is false), clip (left out at 0), input_forget / linear_before_reset, and the
 * activations with activation_alpha and activation_beta for the functions that take them. Only
 * where the import makes the same op back: every alpha and beta float32-exact, and 0 for the
 * functions that take none (what the import sets); otherwise the op goes to ai.corten. */
#include <math.h>
#include <string.h>

#include "onnx/onnx_save.h"

static const struct {
  const char *corten, *onnx;
  bool alpha, beta;
} acts[] = {
    {"sigmoid", "Sigmoid", false, false},       {"tanh", "Tanh", false, false},
    {"relu", "Relu", false, false},             {"leaky_relu", "LeakyRelu", true, false},
    {"thresholded_relu", "ThresholdedRelu", true, false},
    {"scaled_tanh", "ScaledTanh", true, true},  {"hard_sigmoid", "HardSigmoid", true, true},
    {"elu", "Elu", true, false},                {"softsign", "Softsign", false, false},
    {"softplus", "Softplus", false, false},     {"affine", "Affine", true, true},
};
#define N_ACTS (sizeof acts / sizeof acts[0])

static const ct_attr_value *attr(const ex_op *op, const char *name, bool *used) {
  for (size_t a = 0; a < op->def->n_attr; a++) {
    if (strcmp(op->def->attr[a].name, name) == 0) {
      used[a] = true;
      return &op->attr[a];
    }
  }
  return NULL;
}

static bool f32(double v) { return (double)(float)v == v; }

ct_status ex_rnn(ex_cx *x, const ex_op *op, bool *done) {
  static const char *const act_attrs[3][3] = {{"activation"},
                                              {"gate_activation", "activation"},
                                              {"gate_activation", "candidate_activation",
                                               "cell_activation"}};
  static const char *const onnx_type[3] = {"RNN", "GRU", "LSTM"};
  static const char *const extra[3] = {NULL, "linear_before_reset", "input_forget"};
  const char *type = op->def->type;
  int kind = strcmp(type, "simple_rnn") == 0 ? 0 : strcmp(type, "gru") == 0 ? 1
             : strcmp(type, "lstm") == 0     ? 2 : -1;
  *done = false;
  if (kind < 0 || op->def->n_attr > 64) return CT_OK;
  bool used[64] = {false};
  size_t k = (size_t)kind + 1;
  const ct_attr_value *hs = attr(op, "hidden_size", used), *dir = attr(op, "direction", used);
  const ct_attr_value *tm = attr(op, "time_major", used), *clip = attr(op, "clip", used);
  const ct_attr_value *al = attr(op, "activation_alpha", used);
  const ct_attr_value *be = attr(op, "activation_beta", used);
  const ct_attr_value *ex = extra[kind] ? attr(op, extra[kind], used) : NULL;
  if (hs == NULL || dir == NULL || tm == NULL || clip == NULL || al == NULL || be == NULL ||
      al->u.floats.n != k || be->u.floats.n != k || (extra[kind] && ex == NULL)) {
    return CT_OK;
  }
  if (clip->u.f < 0 || !f32(clip->u.f) || clip->u.f == (double)INFINITY) return CT_OK;
  const char *names[3];
  float alpha[3], beta[3];
  size_t na = 0, nb = 0;
  for (size_t j = 0; j < k; j++) {
    const ct_attr_value *v = attr(op, act_attrs[kind][j], used);
    size_t f = 0;
    while (v != NULL && f < N_ACTS && strcmp(acts[f].corten, v->u.s) != 0) f++;
    if (v == NULL || f == N_ACTS) return CT_OK;
    double a = al->u.floats.v[j], b = be->u.floats.v[j];
    if ((!acts[f].alpha && a != 0) || (!acts[f].beta && b != 0) || !f32(a) || !f32(b)) {
      return CT_OK;
    }
    if (acts[f].alpha) alpha[na++] = (float)a;
    if (acts[f].beta) beta[nb++] = (float)b;
    names[j] = acts[f].onnx;
  }
  if (!ex_attrs_default(op, used)) return CT_OK;
  const char *in[8], *out[3];
  size_t n_in = 0, n_out = 0;
  for (size_t s = 0; s < op->def->n_in && s < 8; s++) {
    if (op->in[s].n > 1) return CT_OK;
    in[s] = op->in[s].n ? op->in[s].names[0] : "";
    if (op->in[s].n) n_in = s + 1;
  }
  for (size_t s = 0; s < op->def->n_out && s < 3; s++) {
    if (op->out[s].n > 1) return CT_OK;
    out[s] = op->out[s].n ? op->out[s].names[0] : "";
    if (op->out[s].n) n_out = s + 1;
  }
  ex_node nd;
  ex_node_begin(&nd, x, onnx_type[kind], NULL, in, n_in, out, n_out);
  ex_attr_int(&nd, "hidden_size", hs->u.i);
  ex_attr_str(&nd, "direction", dir->u.s);
  if (!tm->u.b) ex_attr_int(&nd, "layout", 1);
  if (clip->u.f > 0) ex_attr_float(&nd, "clip", (float)clip->u.f);
  if (ex != NULL && ex->u.b) ex_attr_int(&nd, extra[kind], 1);
  pbw a = {0};
  pbw_str(&a, 1, "activations");
  /* the same functions in each direction (onnxruntime wants them listed per direction) */
  size_t dirs = strcmp(dir->u.s, "bidirectional") == 0 ? 2 : 1;
  for (size_t d = 0; d < dirs; d++) {
    for (size_t j = 0; j < k; j++) pbw_str(&a, 9, names[j]);
  }
  pbw_int(&a, 20, 8); /* STRINGS */
  pbw_msg(&nd.body, 5, &a);
  float a2[6], b2[6];
  for (size_t d = 0; d < dirs; d++) {
    memcpy(a2 + d * na, alpha, na * sizeof *alpha);
    memcpy(b2 + d * nb, beta, nb * sizeof *beta);
  }
  if (na > 0) ex_attr_floats(&nd, "activation_alpha", a2, na * dirs);
  if (nb > 0) ex_attr_floats(&nd, "activation_beta", b2, nb * dirs);
  ex_node_end(&nd);
  *done = true;
  return CT_OK;
}
