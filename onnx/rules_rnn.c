/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/rules_rnn.c: the rules of ONNX's recurrent layers RNN, GRU and LSTM: one op of corten's
 * simple_rnn, gru or lstm each (ops/defs/rnn_layers.c), which take ONNX's inputs in ONNX's
 * order, gates and layouts (X, W, R, B, sequence_lens, initial_h, initial_c, P -> Y, Y_h,
 * Y_c as X, W, R, B, SequenceLength, InitH, InitC, P -> Out, LastH, LastC; layout 1 is
 * time_major false). The activations become corten's attributes gate_activation,
 * candidate_activation, cell_activation (simple_rnn: activation) with one alpha and beta per
 * function, the same in both directions. */
#include <math.h>
#include <string.h>
#include <strings.h>

#include "onnx/onnx_rules.h"

/* ONNX's activations (matched whatever the case, as onnxruntime matches them), corten's
 * names for them, whether each takes alpha and beta, and their defaults when the node lists
 * none: those of ONNX's operators of the same name, where onnxruntime agrees (NAN: none agreed
 * on, so such a node must give the value). */
static const struct {
  const char *onnx, *corten;
  bool alpha, beta;
  double alpha0, beta0;
} acts[] = {
    {"Sigmoid", "sigmoid", false, false, 0, 0},
    {"Tanh", "tanh", false, false, 0, 0},
    {"Relu", "relu", false, false, 0, 0},
    {"LeakyRelu", "leaky_relu", true, false, 0.01, 0},
    {"ThresholdedRelu", "thresholded_relu", true, false, NAN, 0},
    {"ScaledTanh", "scaled_tanh", true, true, NAN, NAN},
    {"HardSigmoid", "hard_sigmoid", true, true, 0.2, 0.5},
    {"Elu", "elu", true, false, 1, 0},
    {"Softsign", "softsign", false, false, 0, 0},
    {"Softplus", "softplus", false, false, 0, 0},
    {"Affine", "affine", true, true, NAN, NAN},
};

/* Sets the op's activations (attribute names in slot[0..k)) from attribute `activations`, k
 * per direction (the defaults dflt[] when absent), and activation_alpha and activation_beta,
 * which ONNX lists only for the functions that take them, in order. corten's op applies the same
 * functions in both directions, so a bidirectional node naming two sets that differ is refused. */
static ct_status activations(ox_cx *c, ct_op *op, const char *const *slot, const char *const *dflt,
                             size_t k, int64_t dirs) {
  const ox_attr *a = ox_attr_get(c, "activations");
  const ox_attr *al = ox_attr_get(c, "activation_alpha"), *be = ox_attr_get(c, "activation_beta");
  size_t n = a != NULL ? a->n_strings : k, ia = 0, ib = 0;
  if (n != k && n != k * (size_t)dirs) {
    return ox_unsupported(c, "%zu activations (the layer takes %zu per direction)", n, k);
  }
  double alpha[6] = {0}, beta[6] = {0};
  int which[6];
  for (size_t j = 0; j < n; j++) {
    size_t len = a != NULL ? a->strings[j].n : strlen(dflt[j % k]);
    const char *name = a != NULL ? (const char *)a->strings[j].p : dflt[j % k];
    size_t f = 0;
    while (f < sizeof acts / sizeof acts[0] &&
           (strlen(acts[f].onnx) != len || strncasecmp(acts[f].onnx, name, len) != 0)) {
      f++;
    }
    if (f == sizeof acts / sizeof acts[0]) {
      return ox_unsupported(c, "activation '%.*s'", (int)(len < 64 ? len : 64), name);
    }
    which[j] = (int)f;
    alpha[j] = acts[f].alpha0;
    beta[j] = acts[f].beta0;
    if (acts[f].alpha && al != NULL && ia < al->n_floats) alpha[j] = al->floats[ia++];
    if (acts[f].beta && be != NULL && ib < be->n_floats) beta[j] = be->floats[ib++];
    if (isnan(alpha[j]) || isnan(beta[j])) {
      return ox_unsupported(c, "activation %s without its activation_alpha and activation_beta "
                               "(their defaults differ between runtimes)", acts[f].onnx);
    }
  }
  for (size_t j = k; j < n; j++) {
    if (which[j] != which[j - k] || alpha[j] != alpha[j - k] || beta[j] != beta[j - k]) {
      return ox_unsupported(c, "activations that differ between the directions");
    }
  }
  ct_status s = CT_OK;
  for (size_t j = 0; j < k && s == CT_OK; j++) {
    s = ct_op_set_attr_string(op, slot[j], acts[which[j]].corten);
  }
  if (s == CT_OK) s = ct_op_set_attr_floats(op, "activation_alpha", alpha, k);
  if (s == CT_OK) s = ct_op_set_attr_floats(op, "activation_beta", beta, k);
  return s;
}

/* A layer: its corten type, inputs (6, or 8 for lstm), ONNX's default activations and the
 * corten attributes they set, and its extra flag attribute (the same name in both). */
typedef struct layer {
  const char *type;
  size_t n_in, n_acts;
  const char *dflt[3], *slot[3];
  const char *extra;
} layer;

/* The node as one op of the layer's type: the inputs and outputs wired by position, then the
 * attributes. */
static ct_status rnn_layer(ox_cx *c, const layer *l) {
  static const char *const ins[] = {"X",     "W",     "R", "B", "SequenceLength",
                                    "InitH", "InitC", "P"};
  static const char *const outs[] = {"Out", "LastH", "LastC"};
  if (ox_in(c, 0) == NULL || ox_in(c, 1) == NULL || ox_in(c, 2) == NULL) {
    return ox_unsupported(c, "X, W or R is missing");
  }
  for (size_t k = l->n_in; k < ox_n_in(c); k++) {
    if (ox_in(c, k) != NULL) {
      return ox_unsupported(c, "input %zu (the layer takes %zu)", k, l->n_in);
    }
  }
  size_t n_out = l->n_in == 8 ? 3 : 2;
  for (size_t k = n_out; k < ox_n_out(c); k++) {
    if (ox_out(c, k) != NULL) return ox_unsupported(c, "output %zu", k);
  }
  const char *dir = ox_string(c, "direction", "forward");
  if (dir == NULL) return ct_last_status();
  if (strcmp(dir, "forward") != 0 && strcmp(dir, "reverse") != 0 &&
      strcmp(dir, "bidirectional") != 0) {
    return ox_unsupported(c, "direction '%s'", dir);
  }
  int64_t layout = ox_opset(c) >= 14 ? ox_int(c, "layout", 0) : 0;
  if (layout != 0 && layout != 1) return ox_unsupported(c, "layout %lld", (long long)layout);
  int64_t hidden = ox_int(c, "hidden_size", 0);
  if (hidden < 0) return ox_unsupported(c, "hidden_size %lld", (long long)hidden);
  double clip = 0;
  if (ox_attr_get(c, "clip") != NULL) {
    clip = ox_float(c, "clip", 0);
    if (!(clip > 0) || clip == INFINITY) return ox_unsupported(c, "clip %g (not above 0)", clip);
  }
  ct_op *op = ox_op(c, l->type);
  if (op == NULL) return ct_last_status();
  ct_status s = activations(c, op, l->slot, l->dflt, l->n_acts,
                            strcmp(dir, "bidirectional") == 0 ? 2 : 1);
  for (size_t k = 0; k < l->n_in && s == CT_OK; k++) {
    if (ox_in(c, k) != NULL) s = ct_op_set_input(op, ins[k], ox_in(c, k));
  }
  for (size_t k = 0; k < n_out && s == CT_OK; k++) {
    if (ox_out(c, k) != NULL) s = ct_op_set_output(op, outs[k], ox_out(c, k));
  }
  if (s == CT_OK) s = ct_op_set_attr_int(op, "hidden_size", hidden);
  if (s == CT_OK) s = ct_op_set_attr_string(op, "direction", dir);
  if (s == CT_OK) s = ct_op_set_attr_bool(op, "time_major", layout == 0);
  if (s == CT_OK) s = ct_op_set_attr_float(op, "clip", clip);
  if (s == CT_OK && l->extra != NULL) {
    s = ct_op_set_attr_bool(op, l->extra, ox_int(c, l->extra, 0) != 0);
  }
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status rnn(ox_cx *c) {
  static const layer l = {"simple_rnn", 6, 1, {"Tanh"}, {"activation"}, NULL};
  return rnn_layer(c, &l);
}
static ct_status gru(ox_cx *c) {
  static const layer l = {"gru", 6, 2, {"Sigmoid", "Tanh"}, {"gate_activation", "activation"},
                          "linear_before_reset"};
  return rnn_layer(c, &l);
}
static ct_status lstm(ox_cx *c) {
  static const layer l = {"lstm", 8, 3, {"Sigmoid", "Tanh", "Tanh"},
                          {"gate_activation", "candidate_activation", "cell_activation"},
                          "input_forget"};
  return rnn_layer(c, &l);
}

/* Opset 7 gave the layers their present form; 14 added layout (batch-major X and Y). */
static const ox_rule rows[] = {
    {"RNN", 7, rnn, "simple_rnn"},  {"RNN", 14, rnn, "simple_rnn"},
    {"GRU", 7, gru, "gru"},         {"GRU", 14, gru, "gru"},
    {"LSTM", 7, lstm, "lstm"},      {"LSTM", 14, lstm, "lstm"},
};

const ox_rules ox_rules_rnn = {rows, sizeof rows / sizeof rows[0]};
