/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/rnn_layers.c: the recurrent layers simple_rnn, gru and lstm (ONNX's RNN, GRU and LSTM
 * as corten op types), each running every time step of every direction inside one op, and their
 * grad types (slots and shapes in rnn_layers_grad.c).
 *
 *   inputs   X [t, n, i] (time_major; else [n, t, i]); W [dirs, G h, i]; R [dirs, G h, h];
 *            B [dirs, 2 G h] (optional: W's biases then R's); SequenceLength [n] int32 or
 *            int64 (optional: entry b runs its first len[b] steps, in [0, t]); InitH
 *            [dirs, n, h] (optional, zeros; [n, dirs, h] when not time_major); lstm also InitC
 *            (like InitH) and P [dirs, 3 h] (optional peepholes i, o, f)
 *   outputs  Out [t, dirs, n, h] ([n, t, dirs, h]); LastH like InitH; lstm's LastC like InitC;
 *            each optional. Out is zero past an entry's length; LastH holds the state after
 *            its last step (zeros for a length of 0, as onnxruntime gives).
 *   attrs    hidden_size (0: R's; else must equal it), direction ("forward", "reverse",
 *            "bidirectional": dirs 2, forward first), time_major (true), clip (0: none; else
 *            each gate's input is clamped to [-clip, clip] before its activation); gru's
 *            linear_before_reset, lstm's input_forget (couples the forget gate to 1 - input);
 *            the activations (PaddlePaddle's names): simple_rnn's activation ("tanh"), gru's
 *            gate_activation ("sigmoid") and activation ("tanh"), lstm's gate_activation,
 *            candidate_activation and cell_activation ("sigmoid", "tanh", "tanh"), each one of
 *            sigmoid, tanh, relu, leaky_relu, thresholded_relu, scaled_tanh, hard_sigmoid, elu,
 *            softsign, softplus, affine (ONNX's, ops/defs/rnn_layers.h); activation_alpha and
 *            activation_beta (floats: none for the defaults, else one per activation)
 *
 * The gates (G of them) in W, R and B in ONNX's order, written with the default activations
 * (sigma, the logistic function, is gate_activation; the first tanh candidate_activation or
 * simple_rnn's activation; lstm's tanh(C) cell_activation):
 *   simple_rnn  G 1:     H = tanh(x W^T + H' R^T + Wb + Rb)
 *   gru         G 3 zrh: z, r = sigma(x Wz^T + H' Rz^T + Wbz + Rbz), ... for r;
 *                        c = tanh(x Wh^T + (r H') Rh^T + Rbh + Wbh), or with
 *                        linear_before_reset tanh(x Wh^T + r (H' Rh^T + Rbh) + Wbh);
 *                        H = (1 - z) c + z H'
 *   lstm        G 4 iofc: i = sigma(x Wi^T + H' Ri^T + Pi C' + Wbi + Rbi), f likewise with Pf
 *                        (1 - i with input_forget), g = tanh(x Wc^T + H' Rc^T + Wbc + Rbc),
 *                        C = f C' + i g, o = sigma(x Wo^T + H' Ro^T + Po C + Wbo + Rbo),
 *                        H = o tanh(C) */
#include <string.h>

#include "ops/defs/rnn_layers.h"

static const ct_slot_def rl_in[] = {
    {"X", 0},
    {"W", 0},
    {"R", 0},
    {"B", CT_SLOT_OPTIONAL},
    {"SequenceLength", CT_SLOT_OPTIONAL},
    {"InitH", CT_SLOT_OPTIONAL},
    {"InitC", CT_SLOT_OPTIONAL},
    {"P", CT_SLOT_OPTIONAL},
};
static const ct_slot_def rl_out[] = {
    {"Out", CT_SLOT_OPTIONAL}, {"LastH", CT_SLOT_OPTIONAL}, {"LastC", CT_SLOT_OPTIONAL}};

#define RL_COMMON_ATTRS                                                 \
  {"hidden_size", {.type = CT_ATTR_INT, .u.i = 0}, false},              \
      {"direction", {.type = CT_ATTR_STRING, .u.s = "forward"}, false}, \
      {"time_major", {.type = CT_ATTR_BOOL, .u.b = true}, false},       \
      {"clip", {.type = CT_ATTR_FLOAT, .u.f = 0}, false}
#define RL_ACT(name, dflt) {name, {.type = CT_ATTR_STRING, .u.s = dflt}, false}
#define RL_ALPHA_BETA                                                            \
  {"activation_alpha", {.type = CT_ATTR_FLOATS, .u.floats = {NULL, 0}}, false}, \
      {"activation_beta", {.type = CT_ATTR_FLOATS, .u.floats = {NULL, 0}}, false}
static const ct_attr_def rnn_attrs[] = {RL_COMMON_ATTRS, RL_ACT("activation", "tanh"),
                                        RL_ALPHA_BETA};
static const ct_attr_def gru_attrs[] = {
    RL_COMMON_ATTRS, {"linear_before_reset", {.type = CT_ATTR_BOOL, .u.b = false}, false},
    RL_ACT("gate_activation", "sigmoid"), RL_ACT("activation", "tanh"), RL_ALPHA_BETA};
static const ct_attr_def lstm_attrs[] = {
    RL_COMMON_ATTRS, {"input_forget", {.type = CT_ATTR_BOOL, .u.b = false}, false},
    RL_ACT("gate_activation", "sigmoid"), RL_ACT("candidate_activation", "tanh"),
    RL_ACT("cell_activation", "tanh"), RL_ALPHA_BETA};

const char *const ct__rl_act_names[CT__ACT_COUNT] = {
    "sigmoid",      "tanh", "relu",     "leaky_relu", "thresholded_relu", "scaled_tanh",
    "hard_sigmoid", "elu",  "softsign", "softplus",   "affine"};
const double ct__rl_act_alpha[CT__ACT_COUNT] = {
    [CT__ACT_LEAKY_RELU] = 0.01, [CT__ACT_THRESHOLDED_RELU] = 1, [CT__ACT_SCALED_TANH] = 1,
    [CT__ACT_HARD_SIGMOID] = 0.2, [CT__ACT_ELU] = 1, [CT__ACT_AFFINE] = 1};
const double ct__rl_act_beta[CT__ACT_COUNT] = {[CT__ACT_SCALED_TANH] = 1,
                                               [CT__ACT_HARD_SIGMOID] = 0.5};

/* ---- The plan -------------------------------------------------------------------------------- */

ct_ddim ct__rl_state_dims(const ct__rl_plan *p) {
  return p->time_major ? CT_DIMS(p->dirs, p->n, p->h) : CT_DIMS(p->n, p->dirs, p->h);
}

ct_ddim ct__rl_out_dims(const ct__rl_plan *p) {
  return p->time_major ? CT_DIMS(p->t, p->dirs, p->n, p->h) : CT_DIMS(p->n, p->t, p->dirs, p->h);
}

/* Input slot `slot`, when wired, has the kernel's dtype and dims want (what: what it holds). */
static ct_status check_in(const ct_kernel_ctx *c, size_t slot, ct_ddim want, const char *what) {
  if (ct_kernel_in_count(c, slot) == 0) return CT_OK;
  ct_status s = ct__k_check_dtype(c, slot, 0, c->dtype);
  if (s != CT_OK) return s;
  const ct_tensor *t = ct_kernel_in(c, slot, 0);
  if (ct_ddim_equal(t->dims, want)) return CT_OK;
  char a[CT__DDIM_STR_CAP], b[CT__DDIM_STR_CAP];
  return ct_kernel_fail(c, CT_ERR_SHAPE, "input %s variable '%s' is %s but %s must be %s",
                        c->op->def->in[slot].name, ct_kernel_in_name(c, slot, 0),
                        ct_ddim_str(t->dims, a, sizeof a), what, ct_ddim_str(want, b, sizeof b));
}

/* The direction attribute: 1 or 2 directions, and whether the one runs backwards. */
static ct_status plan_direction(const ct_kernel_ctx *c, ct__rl_plan *p) {
  const char *d = c->attr[CT__RL_DIRECTION].u.s;
  p->dirs = 1;
  p->reverse = false;
  if (strcmp(d, "reverse") == 0) {
    p->reverse = true;
  } else if (strcmp(d, "bidirectional") == 0) {
    p->dirs = 2;
  } else if (strcmp(d, "forward") != 0) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute direction is \"%s\": use \"forward\", \"reverse\" or "
                          "\"bidirectional\"",
                          d);
  }
  double clip = c->attr[CT__RL_CLIP].u.f;
  if (!(clip >= 0) || clip == INFINITY) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute clip is %g: give a finite bound above 0, or 0 for none",
                          clip);
  }
  p->clip = clip;
  return CT_OK;
}

/* The activations of the type's functions (n of them, from attribute a0 on), then
 * activation_alpha and activation_beta: empty (each function's default) or one per function. */
static ct_status plan_activations(const ct_kernel_ctx *c, ct__rl_plan *p, size_t a0, int n) {
  for (int k = 0; k < 3; k++) {
    p->act[k] = k == 0 && p->kind != CT__RL_RNN ? CT__ACT_SIGMOID : CT__ACT_TANH;
    p->alpha[k] = p->beta[k] = 0;
  }
  for (int k = 0; k < n; k++) {
    const char *name = c->attr[a0 + (size_t)k].u.s;
    int a = 0;
    while (a < CT__ACT_COUNT && strcmp(ct__rl_act_names[a], name) != 0) a++;
    if (a == CT__ACT_COUNT) {
      return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                            "attribute %s is \"%s\": use sigmoid, tanh, relu, leaky_relu, "
                            "thresholded_relu, scaled_tanh, hard_sigmoid, elu, softsign, "
                            "softplus or affine",
                            c->op->def->attr[a0 + (size_t)k].name, name);
    }
    p->act[k] = (ct__rl_act)a;
    p->alpha[k] = ct__rl_act_alpha[a];
    p->beta[k] = ct__rl_act_beta[a];
  }
  for (int ab = 0; ab < 2; ab++) {
    const ct_attr_value *v = &c->attr[a0 + (size_t)n + (size_t)ab];
    if (v->u.floats.n == 0) continue;
    if (v->u.floats.n != (size_t)n) {
      return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                            "attribute %s has %zu values: give one per activation (%d), or none "
                            "for their defaults",
                            ab ? "activation_beta" : "activation_alpha", v->u.floats.n, n);
    }
    for (int k = 0; k < n; k++) (ab ? p->beta : p->alpha)[k] = v->u.floats.v[k];
  }
  return CT_OK;
}

/* X [t, n, i] or [n, t, i]; W [dirs, G h, i]; R [dirs, G h, h]: the plan's sizes. */
static ct_status plan_sizes(const ct_kernel_ctx *c, ct__rl_plan *p) {
  const ct_tensor *x = ct_kernel_in(c, CT__RL_X, 0), *r = ct_kernel_in(c, CT__RL_R, 0);
  char a[CT__DDIM_STR_CAP];
  if (x->dims.rank != 3) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input X variable '%s' is %s: a sequence is [steps, batch, features] "
                          "(time_major) or [batch, steps, features]",
                          ct_kernel_in_name(c, CT__RL_X, 0), ct_ddim_str(x->dims, a, sizeof a));
  }
  if (r->dims.rank != 3) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input R variable '%s' is %s: the recurrence weights are "
                          "[directions, %d * hidden_size, hidden_size]",
                          ct_kernel_in_name(c, CT__RL_R, 0), ct_ddim_str(r->dims, a, sizeof a),
                          p->gates);
  }
  p->time_major = c->attr[CT__RL_TIME_MAJOR].u.b;
  p->t = x->dims.d[p->time_major ? 0 : 1];
  p->n = x->dims.d[p->time_major ? 1 : 0];
  p->i = x->dims.d[2];
  p->h = r->dims.d[2];
  int64_t hs = c->attr[CT__RL_HIDDEN_SIZE].u.i;
  if (hs != 0 && hs != p->h) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "attribute hidden_size is %lld but input R variable '%s' is %s "
                          "(hidden size %lld): set 0 to take R's, or reshape R",
                          (long long)hs, ct_kernel_in_name(c, CT__RL_R, 0),
                          ct_ddim_str(r->dims, a, sizeof a), (long long)p->h);
  }
  int64_t gh = p->gates * p->h;
  ct_status s = check_in(c, CT__RL_R, CT_DIMS(p->dirs, gh, p->h), "the recurrence weights");
  if (s == CT_OK) s = check_in(c, CT__RL_W, CT_DIMS(p->dirs, gh, p->i), "the input weights");
  if (s == CT_OK) s = check_in(c, CT__RL_B, CT_DIMS(p->dirs, 2 * gh), "the biases (W's, R's)");
  return s;
}

ct_status ct__rl_plan_make(const ct_kernel_ctx *c, ct__rl_kind k, bool grad, ct__rl_plan *p) {
  memset(p, 0, sizeof *p);
  p->kind = k;
  p->gates = k == CT__RL_RNN ? 1 : k == CT__RL_GRU ? 3 : 4;
  p->n_in = k == CT__RL_LSTM ? 8 : 6;
  p->grad = grad;
  p->lbr = k == CT__RL_GRU && c->attr[CT__RL_LINEAR_BEFORE_RESET].u.b;
  if (c->dtype != CT_FLOAT32 && c->dtype != CT_FLOAT64) {
    return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH,
                          "input X variable '%s' is %s: recurrent layers compute in float32 or "
                          "float64; cast X and the weights",
                          ct_kernel_in_name(c, CT__RL_X, 0), ct_dtype_name(c->dtype));
  }
  ct_status s = plan_direction(c, p);
  if (s == CT_OK) {
    s = plan_activations(c, p, k == CT__RL_RNN ? 4 : 5, k == CT__RL_RNN ? 1 : (int)p->gates - 1);
  }
  if (s == CT_OK) s = plan_sizes(c, p);
  if (s != CT_OK) return s;
  if (ct_kernel_in_count(c, CT__RL_SEQ) > 0) {
    const ct_tensor *q = ct_kernel_in(c, CT__RL_SEQ, 0);
    char a[CT__DDIM_STR_CAP];
    if (q->dtype != CT_INT32 && q->dtype != CT_INT64) {
      return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH,
                            "input SequenceLength variable '%s' is %s: lengths are int32 or "
                            "int64",
                            ct_kernel_in_name(c, CT__RL_SEQ, 0), ct_dtype_name(q->dtype));
    }
    if (!ct_ddim_equal(q->dims, CT_DIMS(p->n))) {
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "input SequenceLength variable '%s' is %s: one length per entry of "
                            "the batch of %lld",
                            ct_kernel_in_name(c, CT__RL_SEQ, 0),
                            ct_ddim_str(q->dims, a, sizeof a), (long long)p->n);
    }
  }
  /* The kernels' working space is below 8 (t + 1)(n + 1)(G h + 3) elements of 8 bytes: refuse
   * sizes whose count would not fit (an X without features holds no memory whatever t and n). */
  int64_t work = 8 * 8, gh = p->gates * p->h;
  bool fits = p->t < INT64_MAX / 2 && p->n < INT64_MAX / 2 && gh < INT64_MAX / 2 &&
              !__builtin_mul_overflow(work, p->t + 1, &work) &&
              !__builtin_mul_overflow(work, p->n + 1, &work) &&
              !__builtin_mul_overflow(work, gh + 3, &work);
  if (!fits) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "input X variable '%s' of %lld steps and a batch of %lld, hidden size "
                          "%lld: the steps' working space would exceed the address space",
                          ct_kernel_in_name(c, CT__RL_X, 0), (long long)p->t, (long long)p->n,
                          (long long)p->h);
  }
  ct_ddim st = ct__rl_state_dims(p);
  s = check_in(c, CT__RL_INIT_H, st, "the initial hidden state");
  if (s == CT_OK && k == CT__RL_LSTM) s = check_in(c, CT__RL_INIT_C, st, "the initial cell state");
  if (s == CT_OK && k == CT__RL_LSTM) {
    s = check_in(c, CT__RL_P, CT_DIMS(p->dirs, 3 * p->h), "the peepholes (i, o, f)");
  }
  return s;
}

ct_status ct__rl_check_seq(const ct_kernel_ctx *c, const ct__rl_plan *p) {
  if (ct_kernel_in_count(c, CT__RL_SEQ) == 0) return CT_OK;
  const ct_tensor *q = ct_kernel_in(c, CT__RL_SEQ, 0);
  const void *v = ct__k_in_data(q);
  for (int64_t b = 0; b < p->n; b++) {
    int64_t len = ct__rl_seq_at(v, q->dtype, b);
    if (len >= 0 && len <= p->t) continue;
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "input SequenceLength variable '%s' entry %lld is %lld: a length lies "
                          "in [0, %lld], the steps of X",
                          ct_kernel_in_name(c, CT__RL_SEQ, 0), (long long)b, (long long)len,
                          (long long)p->t);
  }
  return CT_OK;
}

/* ---- Infer-shape ----------------------------------------------------------------------------- */

static ct_status rl_infer(const ct_kernel_ctx *c, ct__rl_kind k) {
  ct__rl_plan p;
  ct_status s = ct__rl_plan_make(c, k, false, &p);
  if (s == CT_OK && ct_kernel_out_count(c, CT__RL_OUT) > 0) {
    s = ct__k_resize(c, CT__RL_OUT, 0, ct__rl_out_dims(&p));
  }
  if (s == CT_OK && ct_kernel_out_count(c, CT__RL_LAST_H) > 0) {
    s = ct__k_resize(c, CT__RL_LAST_H, 0, ct__rl_state_dims(&p));
  }
  if (s == CT_OK && k == CT__RL_LSTM && ct_kernel_out_count(c, CT__RL_LAST_C) > 0) {
    s = ct__k_resize(c, CT__RL_LAST_C, 0, ct__rl_state_dims(&p));
  }
  return s;
}

static ct_status rnn_infer(const ct_kernel_ctx *c) { return rl_infer(c, CT__RL_RNN); }
static ct_status gru_infer(const ct_kernel_ctx *c) { return rl_infer(c, CT__RL_GRU); }
static ct_status lstm_infer(const ct_kernel_ctx *c) { return rl_infer(c, CT__RL_LSTM); }

/* The forward and grad types. Infer-shape reads dims, dtypes and attributes only (the lengths'
 * values are the kernel's to check), so it is pure. */
static const ct_op_def defs[] = {
    {.type = "simple_rnn", .inputs = rl_in, .n_inputs = 6, .outputs = rl_out, .n_outputs = 2,
     .attrs = rnn_attrs, .n_attrs = 7, .infer_shape = rnn_infer, .grad = ct__grad_rnn_layer,
     .flags = CT_OP_PURE_INFER},
    {.type = "gru", .inputs = rl_in, .n_inputs = 6, .outputs = rl_out, .n_outputs = 2,
     .attrs = gru_attrs, .n_attrs = 9, .infer_shape = gru_infer, .grad = ct__grad_rnn_layer,
     .flags = CT_OP_PURE_INFER},
    {.type = "lstm", .inputs = rl_in, .n_inputs = 8, .outputs = rl_out, .n_outputs = 3,
     .attrs = lstm_attrs, .n_attrs = 10, .infer_shape = lstm_infer, .grad = ct__grad_rnn_layer,
     .flags = CT_OP_PURE_INFER},
    {.type = "simple_rnn_grad", .inputs = ct__rl_grad_in[0], .n_inputs = 8,
     .outputs = ct__rl_grad_out, .n_outputs = 5, .attrs = rnn_attrs, .n_attrs = 7,
     .infer_shape = ct__rl_grad_infer_rnn, .flags = CT_OP_PURE_INFER},
    {.type = "gru_grad", .inputs = ct__rl_grad_in[1], .n_inputs = 8, .outputs = ct__rl_grad_out,
     .n_outputs = 5, .attrs = gru_attrs, .n_attrs = 9, .infer_shape = ct__rl_grad_infer_gru,
     .flags = CT_OP_PURE_INFER},
    {.type = "lstm_grad", .inputs = ct__rl_grad_in[2], .n_inputs = 11, .outputs = ct__rl_grad_out,
     .n_outputs = 7, .attrs = lstm_attrs, .n_attrs = 10, .infer_shape = ct__rl_grad_infer_lstm,
     .flags = CT_OP_PURE_INFER},
};

const ct__def_table ct__rnn_layers_defs = CT__TABLE(defs);

/* What the types compute (ct_op_type_doc, `corten ops`). */
#define DOC_RL                                                                                 \
  " X is [T, n, i] (time_major, the default; else [n, T, i]); W [dirs, G h, i] and R [dirs, G " \
  "h, h] hold the gates' weights in ONNX's gate order, B [dirs, 2 G h] (optional) W's biases "   \
  "then R's; direction \"forward\" (the default), \"reverse\" or \"bidirectional\" (dirs 2, "   \
  "forward first). The optional SequenceLength [n] (int32 or int64, each in [0, T]) stops "     \
  "entry b after its first len[b] steps (Out zero past them); InitH [dirs, n, h] ([n, dirs, h] " \
  "when not time_major) starts the state, zeros when unwired; Out is [T, dirs, n, h] ([n, T, "   \
  "dirs, h]) and LastH, of InitH's dims, the state after each entry's last step; "               \
  "hidden_size 0 takes R's h, clip (0: none) clamps each gate's input to [-clip, clip]."
#define DOC_ACTS                                                                              \
  " Each activation may be sigmoid, tanh, relu, leaky_relu, thresholded_relu, scaled_tanh, "   \
  "hard_sigmoid, elu, softsign, softplus or affine (ONNX's), with activation_alpha and "       \
  "activation_beta holding one value per activation, or none for their defaults."

static const ct__op_doc docs[] = {
    {"simple_rnn", "ONNX's RNN, every step of every direction in one op: `H = activation(x W^T + "
                   "H' R^T + Wb + Rb)`, H' the previous state, with one gate (G 1) and "
                   "`activation` tanh by default." DOC_RL DOC_ACTS},
    {"gru",
     "ONNX's GRU, every step of every direction in one op, gates z, r, h in that order (G 3; h is "
     "the candidate c below): `z = sigma(x Wz^T + H' Rz^T + Wbz + Rbz)`, r likewise, `c = tanh(x "
     "Wh^T + (r H') Rh^T + Rbh + Wbh)` (with linear_before_reset `tanh(x Wh^T + r (H' Rh^T + Rbh) "
     "+ Wbh)`), `H = (1 - z) c + z H'`; sigma is gate_activation (default sigmoid) and tanh "
     "`activation` (default tanh)." DOC_RL DOC_ACTS},
    {"lstm",
     "ONNX's LSTM, every step of every direction in one op, gates i, o, f, c in that order (G 4; c "
     "is the candidate g below): `i = sigma(x Wi^T + H' Ri^T + Pi C' + Wbi + Rbi)`, f likewise "
     "with Pf (`1 - i` with input_forget), `g = tanh(x Wc^T + H' Rc^T + Wbc + Rbc)`, `C = f C' + i "
     "g`, `o = sigma(x Wo^T + H' Ro^T + Po C + Wbo + Rbo)`, `H = o tanh(C)`; sigma is "
     "gate_activation (sigmoid), the first tanh candidate_activation and the last cell_activation "
     "(both tanh). InitC and LastC are the cell state, like InitH and LastH, and P [dirs, 3 h] "
     "(optional) the peepholes in the order i, o, f." DOC_RL DOC_ACTS},
};

const ct__doc_table ct__rnn_layers_docs = CT__TABLE(docs);
