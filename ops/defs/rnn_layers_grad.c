/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/rnn_layers_grad.c: the gradients of simple_rnn, gru and lstm (ops/defs/rnn_layers.c)
 * by backpropagation through time: the grad types' slots and shapes and the grad-op maker.
 *
 *   simple_rnn_grad, gru_grad  X, W, R, B, SequenceLength, InitH, Out@GRAD, LastH@GRAD
 *   lstm_grad                  the same with InitC and P after InitH, and LastC@GRAD
 *        -> X@GRAD, W@GRAD, R@GRAD, B@GRAD, InitH@GRAD (lstm: InitC@GRAD, P@GRAD), each
 *           optional (only those wired are computed), each with its input's dims.
 * The forward attributes. The kernel runs the forward steps again, keeping the gates, then walks
 * the steps backwards. An unwired output gradient counts as zeros. SequenceLength gets no
 * gradient (its values are lengths); an unwired B, InitH, InitC or P none either. */
#include <stdio.h>
#include <string.h>

#include <corten/backward.h>

#include "ops/defs/rnn_layers.h"

#define RL_FWD_IN                                                                         \
  {"X", 0}, {"W", 0}, {"R", 0}, {"B", CT_SLOT_OPTIONAL}, {"SequenceLength", CT_SLOT_OPTIONAL}, \
      {"InitH", CT_SLOT_OPTIONAL}
const ct_slot_def ct__rl_grad_in[3][11] = {
    {RL_FWD_IN, {"Out@GRAD", CT_SLOT_OPTIONAL}, {"LastH@GRAD", CT_SLOT_OPTIONAL}},
    {RL_FWD_IN, {"Out@GRAD", CT_SLOT_OPTIONAL}, {"LastH@GRAD", CT_SLOT_OPTIONAL}},
    {RL_FWD_IN,
     {"InitC", CT_SLOT_OPTIONAL},
     {"P", CT_SLOT_OPTIONAL},
     {"Out@GRAD", CT_SLOT_OPTIONAL},
     {"LastH@GRAD", CT_SLOT_OPTIONAL},
     {"LastC@GRAD", CT_SLOT_OPTIONAL}},
};
const ct_slot_def ct__rl_grad_out[7] = {
    {"X@GRAD", CT_SLOT_OPTIONAL},     {"W@GRAD", CT_SLOT_OPTIONAL},
    {"R@GRAD", CT_SLOT_OPTIONAL},     {"B@GRAD", CT_SLOT_OPTIONAL},
    {"InitH@GRAD", CT_SLOT_OPTIONAL}, {"InitC@GRAD", CT_SLOT_OPTIONAL},
    {"P@GRAD", CT_SLOT_OPTIONAL},
};

/* The forward input slot whose gradient output `o` is. */
static size_t input_of(size_t o) { return o < CT__RLG_DINIT_H ? o : o + 1; }

/* Plans as the forward type; each wired output gradient has its forward output's dims; each
 * wanted input gradient takes its input's dims (refused for an unwired input: it has none). */
static ct_status grad_infer(const ct_kernel_ctx *c, ct__rl_kind k) {
  ct__rl_plan p;
  ct_status s = ct__rl_plan_make(c, k, true, &p);
  if (s != CT_OK) return s;
  const char *what[3] = {"Out", "LastH", "LastC"};
  ct_ddim want[3] = {ct__rl_out_dims(&p), ct__rl_state_dims(&p), ct__rl_state_dims(&p)};
  for (size_t o = 0; o < (k == CT__RL_LSTM ? 3u : 2u); o++) {
    size_t slot = p.n_in + o;
    if (ct_kernel_in_count(c, slot) == 0) continue;
    s = ct__k_check_dtype(c, slot, 0, c->dtype);
    if (s == CT_OK) s = ct__grad_check_dout(c, slot, want[o], what[o]);
    if (s != CT_OK) return s;
  }
  size_t n_out = k == CT__RL_LSTM ? 7 : 5;
  for (size_t o = 0; o < n_out; o++) {
    if (ct_kernel_out_count(c, o) == 0) continue;
    size_t in = input_of(o);
    if (ct_kernel_in_count(c, in) == 0) {
      return ct_kernel_fail(c, CT_ERR_NOT_FOUND,
                            "output %s variable '%s' is wired but input %s is not: an unwired "
                            "input has no gradient",
                            ct__rl_grad_out[o].name, ct_kernel_out_name(c, o, 0),
                            c->op->def->in[in].name);
    }
    s = ct__k_resize(c, o, 0, ct_kernel_in(c, in, 0)->dims);
    if (s != CT_OK) return s;
  }
  return CT_OK;
}

ct_status ct__rl_grad_infer_rnn(const ct_kernel_ctx *c) { return grad_infer(c, CT__RL_RNN); }
ct_status ct__rl_grad_infer_gru(const ct_kernel_ctx *c) { return grad_infer(c, CT__RL_GRU); }
ct_status ct__rl_grad_infer_lstm(const ct_kernel_ctx *c) { return grad_infer(c, CT__RL_LSTM); }

/* ---- The grad-op maker ----------------------------------------------------------------------- */

/* "<type>_grad" reading every wired forward input and the gradient of every wired output,
 * writing the gradients of the inputs that need one. Nothing when none does. */
ct_status ct__grad_rnn_layer(ct_grad_ctx *g) {
  static const char *const in_names[] = {"X",     "W",     "R", "B", "SequenceLength",
                                         "InitH", "InitC", "P"};
  static const char *const out_names[] = {"Out", "LastH", "LastC"};
  const char *type = ct_op_type(ct_grad_forward(g));
  bool lstm = strcmp(type, "lstm") == 0;
  size_t n_in = lstm ? 8 : 6, n_fwd_out = lstm ? 3 : 2;
  const char *dgrad[8] = {NULL};
  bool any = false;
  for (size_t k = 0; k < n_in; k++) {
    if (k == CT__RL_SEQ || ct_grad_input_count(g, in_names[k]) == 0) continue;
    dgrad[k] = ct_grad_input_grad(g, in_names[k], 0);
    any = any || dgrad[k] != NULL;
  }
  if (!any) return CT_OK;
  char grad_type[32];
  snprintf(grad_type, sizeof grad_type, "%s_grad", type);
  ct_op *op = ct_grad_op_new(g, grad_type);
  if (op == NULL) return ct_last_status();
  ct_status s = CT_OK;
  for (size_t k = 0; k < n_in && s == CT_OK; k++) {
    if (ct_grad_input_count(g, in_names[k]) == 0) continue;
    s = ct__grad_wire_in(op, in_names[k], ct_grad_input(g, in_names[k], 0));
  }
  for (size_t o = 0; o < n_fwd_out && s == CT_OK; o++) {
    if (ct_grad_output_count(g, out_names[o]) == 0) continue;
    char slot[24];
    snprintf(slot, sizeof slot, "%s@GRAD", out_names[o]);
    s = ct__grad_wire_in(op, slot, ct_grad_output_grad(g, out_names[o], 0));
  }
  for (size_t k = 0; k < n_in && s == CT_OK; k++) {
    if (dgrad[k] == NULL) continue;
    char slot[32];
    snprintf(slot, sizeof slot, "%s@GRAD", in_names[k]);
    s = ct_op_set_output(op, slot, dgrad[k]);
  }
  return s == CT_OK ? ct_grad_copy_attrs(g, op) : s;
}
