/* SPDX-License-Identifier: Apache-2.0 */
/* ops/nn_rnn.c: the builder's recurrent layers (corten/nn.h), over the lstm and gru ops (ONNX's
 * LSTM and GRU, one direction): their weights W [1, G h, in], R [1, G h, h] and biases
 * B [1, 2 G h] made uniform in +-1/sqrt(h), as PyTorch starts its recurrent layers; the output
 * without the direction dim and the last hidden state as [N, h]. gru takes linear_before_reset,
 * PyTorch's form of the candidate. */
#include <math.h>
#include <string.h>

#include "ops/nn_impl.h"

static const char *recurrent(ct_nn *nn, const char *fn, const char *kind, int gates,
                             const char *x, int64_t in, int64_t hidden, bool batch_first) {
  if (nn == NULL) return ct__error_null(CT_ERR_INVALID_ARGUMENT, "%s: nn is NULL", fn);
  if (ct__nn_check_name(fn, "the input", x) != CT_OK) return NULL;
  if (in < 1 || hidden < 1) {
    return ct__error_null(CT_ERR_INVALID_ARGUMENT, "%s: sizes %lld and %lld: give 1 or more", fn,
                          (long long)in, (long long)hidden);
  }
  nn_undo u;
  ct__nn_begin(nn, &u);
  char l[48];
  ct__nn_layer_name(nn, kind, l, sizeof l);
  const char *w = ct__nn_keep(nn, "%s.w", l), *r = ct__nn_keep(nn, "%s.r", l);
  const char *b = ct__nn_keep(nn, "%s.b", l), *y4 = ct__nn_keep(nn, "%s.y4", l);
  const char *hl = ct__nn_keep(nn, "%s.last_h", l), *out = ct__nn_keep(nn, "%s.out", l);
  const char *h = ct__nn_keep(nn, "%s.h", l), *cl = ct__nn_keep(nn, "%s.last_c", l);
  int64_t gh = gates * hidden, wd[3] = {1, gh, in}, rd[3] = {1, gh, hidden}, bd[2] = {1, 2 * gh};
  double bound = 1 / sqrt((double)hidden);
  ct_nn_init init = {CT_NN_INIT_UNIFORM, -bound, bound};
  ct_op *op = NULL, *ro = NULL, *rh = NULL;
  static const int64_t drop_dir[3] = {0, 0, -1}; /* [T, N, 1, h] or [N, T, 1, h] to 3 dims */
  int64_t last[2] = {-1, hidden};                  /* LastH [1, N, h] to [N, h] */
  if (w == NULL || r == NULL || b == NULL || y4 == NULL || hl == NULL || out == NULL ||
      h == NULL || cl == NULL || ct__nn_param(nn, w, wd, 3, init, 1, 1, true) != CT_OK ||
      ct__nn_param(nn, r, rd, 3, init, 1, 1, true) != CT_OK ||
      ct__nn_param(nn, b, bd, 2, init, 1, 1, true) != CT_OK ||
      (op = ct__nn_add(nn->main, kind, "X", x, "W", w, "R", r, "B", b, NULL, "Out", y4, "LastH",
                       hl, NULL)) == NULL ||
      ct_op_set_attr_int(op, "hidden_size", hidden) != CT_OK ||
      ct_op_set_attr_bool(op, "time_major", !batch_first) != CT_OK ||
      (gates == 4 && ct_op_set_output(op, "LastC", cl) != CT_OK) ||
      (gates == 3 && ct_op_set_attr_bool(op, "linear_before_reset", true) != CT_OK) ||
      (ro = ct__nn_add(nn->main, "reshape", "X", y4, NULL, "Out", out, NULL)) == NULL ||
      ct_op_set_attr_ints(ro, "shape", drop_dir, 3) != CT_OK ||
      (rh = ct__nn_add(nn->main, "reshape", "X", hl, NULL, "Out", h, NULL)) == NULL ||
      ct_op_set_attr_ints(rh, "shape", last, 2) != CT_OK) {
    return ct__nn_fail(nn, &u);
  }
  return out;
}

const char *ct_nn_lstm(ct_nn *nn, const char *x, int64_t in, int64_t hidden, bool batch_first) {
  return recurrent(nn, "ct_nn_lstm", "lstm", 4, x, in, hidden, batch_first);
}

const char *ct_nn_gru(ct_nn *nn, const char *x, int64_t in, int64_t hidden, bool batch_first) {
  return recurrent(nn, "ct_nn_gru", "gru", 3, x, in, hidden, batch_first);
}
