/* SPDX-License-Identifier: Apache-2.0 */
/* ops/nn_layers.c: the builder's layers and losses (corten/nn.h). Each checks its arguments
 * before adding anything, then adds its parameters' initialisers to the startup program and its
 * ops to the main one; a failure after that takes all of it back (ct__nn_fail). */
#include <stdio.h>
#include <string.h>

#include "ops/nn_impl.h"

static const ct_nn_opts no_opts;

/* The checks every layer with an input and sizes makes. */
static ct_status check(const char *fn, ct_nn *nn, const char *x, const int64_t *sizes, int n,
                       const char *act) {
  if (nn == NULL) return ct__error(CT_ERR_INVALID_ARGUMENT, "%s: nn is NULL", fn);
  ct_status s = ct__nn_check_name(fn, "the input", x);
  for (int i = 0; s == CT_OK && i < n; i++) {
    if (sizes[i] < 1) {
      s = ct__error(CT_ERR_INVALID_ARGUMENT, "%s: size %d is %lld: give 1 or more", fn, i + 1,
                    (long long)sizes[i]);
    }
  }
  if (s == CT_OK && !ct__nn_act_known(act)) {
    s = ct__error(CT_ERR_INVALID_ARGUMENT,
                  "%s: activation '%s': give NULL, \"relu\", \"tanh\", \"sigmoid\" or \"gelu\"", fn,
                  act);
  }
  return s;
}

/* out = act(y + bias), the bias reshaped to [-1, 1, 1] for a convolution. */
static const char *bias_act(ct_nn *nn, const char *l, const char *y, int64_t n, bool conv,
                            const ct_nn_opts *o, double fan_in, nn_undo *u) {
  if (!o->no_bias) {
    const char *b = ct__nn_keep(nn, "%s.b", l), *sum = ct__nn_keep(nn, "%s.out", l);
    int64_t dims[1] = {n};
    ct_nn_init init = o->bias;
    if (init.kind == CT_NN_INIT_DEFAULT) init.kind = CT_NN_INIT_ZEROS;
    if (b == NULL || sum == NULL || ct__nn_param(nn, b, dims, 1, init, fan_in, n, true) != CT_OK) {
      return ct__nn_fail(nn, u);
    }
    const char *b_used = b;
    if (conv) {
      static const int64_t chw[3] = {-1, 1, 1};
      const char *b3 = ct__nn_keep(nn, "%s.b3", l);
      ct_op *op = b3 ? ct__nn_add(nn->main, "reshape", "X", b, NULL, "Out", b3, NULL) : NULL;
      if (op == NULL || ct_op_set_attr_ints(op, "shape", chw, 3) != CT_OK) {
        return ct__nn_fail(nn, u);
      }
      b_used = b3;
    }
    if (ct__nn_add(nn->main, "elementwise_add", "X", y, "Y", b_used, NULL, "Out", sum, NULL) ==
        NULL) {
      return ct__nn_fail(nn, u);
    }
    y = sum;
  }
  const char *out = ct__nn_act(nn, l, y, o->act);
  return out != NULL ? out : ct__nn_fail(nn, u);
}

const char *ct_nn_linear(ct_nn *nn, const char *x, int64_t in, int64_t out, const ct_nn_opts *o) {
  o = o != NULL ? o : &no_opts;
  int64_t sizes[2] = {in, out};
  if (check("ct_nn_linear", nn, x, sizes, 2, o->act) != CT_OK) return NULL;
  nn_undo u;
  ct__nn_begin(nn, &u);
  char l[48];
  ct__nn_layer_name(nn, "fc", l, sizeof l);
  const char *w = ct__nn_keep(nn, "%s.w", l), *mm = ct__nn_keep(nn, "%s.mm", l);
  if (w == NULL || mm == NULL ||
      ct__nn_param(nn, w, sizes, 2, o->weight, (double)in, (double)out, true) != CT_OK ||
      ct__nn_add(nn->main, "matmul", "X", x, "Y", w, NULL, "Out", mm, NULL) == NULL) {
    return ct__nn_fail(nn, &u);
  }
  return bias_act(nn, l, mm, out, false, o, (double)in, &u);
}

const char *ct_nn_conv2d(ct_nn *nn, const char *x, int64_t in, int64_t out, int k, int stride,
                         int padding, const ct_nn_opts *o) {
  o = o != NULL ? o : &no_opts;
  int64_t sizes[4] = {in, out, k, stride};
  if (check("ct_nn_conv2d", nn, x, sizes, 4, o->act) != CT_OK) return NULL;
  if (padding < 0) {
    return ct__error_null(CT_ERR_INVALID_ARGUMENT, "ct_nn_conv2d: padding %d: give 0 or more",
                          padding);
  }
  nn_undo u;
  ct__nn_begin(nn, &u);
  char l[48];
  ct__nn_layer_name(nn, "conv2d", l, sizeof l);
  const char *w = ct__nn_keep(nn, "%s.w", l), *y = ct__nn_keep(nn, "%s.conv", l);
  int64_t dims[4] = {out, in, k, k}, st[2] = {stride, stride}, pd[2] = {padding, padding};
  double fan_in = (double)(in * k * k), fan_out = (double)(out * k * k);
  ct_op *op = NULL;
  if (w == NULL || y == NULL ||
      ct__nn_param(nn, w, dims, 4, o->weight, fan_in, fan_out, true) != CT_OK ||
      (op = ct__nn_add(nn->main, "conv2d", "Input", x, "Filter", w, NULL, "Output", y, NULL)) ==
          NULL ||
      ct_op_set_attr_ints(op, "strides", st, 2) != CT_OK ||
      ct_op_set_attr_ints(op, "paddings", pd, 2) != CT_OK) {
    return ct__nn_fail(nn, &u);
  }
  return bias_act(nn, l, y, out, true, o, fan_in, &u);
}

const char *ct_nn_pool2d(ct_nn *nn, const char *x, bool max, int k, int stride) {
  int64_t sizes[2] = {k, stride};
  if (check("ct_nn_pool2d", nn, x, sizes, 2, NULL) != CT_OK) return NULL;
  nn_undo u;
  ct__nn_begin(nn, &u);
  char l[48];
  ct__nn_layer_name(nn, "pool", l, sizeof l);
  const char *y = ct__nn_keep(nn, "%s.out", l);
  int64_t ks[2] = {k, k}, st[2] = {stride, stride};
  ct_op *op = y ? ct__nn_add(nn->main, "pool2d", "X", x, NULL, "Out", y, NULL) : NULL;
  if (op == NULL || ct_op_set_attr_string(op, "pooling_type", max ? "max" : "avg") != CT_OK ||
      ct_op_set_attr_ints(op, "ksize", ks, 2) != CT_OK ||
      ct_op_set_attr_ints(op, "strides", st, 2) != CT_OK) {
    return ct__nn_fail(nn, &u);
  }
  return y;
}

/* A layer of one op X -> Out of type, named kind_k; attributes set by the caller after. */
static const char *simple(ct_nn *nn, const char *fn, const char *kind, const char *type,
                          const char *x, ct_op **op, nn_undo *u) {
  if (check(fn, nn, x, NULL, 0, NULL) != CT_OK) return NULL;
  ct__nn_begin(nn, u);
  char l[48];
  ct__nn_layer_name(nn, kind, l, sizeof l);
  const char *y = ct__nn_keep(nn, "%s.out", l);
  *op = y ? ct__nn_add(nn->main, type, "X", x, NULL, "Out", y, NULL) : NULL;
  return *op != NULL ? y : ct__nn_fail(nn, u);
}

const char *ct_nn_flatten(ct_nn *nn, const char *x) {
  nn_undo u;
  ct_op *op;
  return simple(nn, "ct_nn_flatten", "flatten", "flatten", x, &op, &u);
}

const char *ct_nn_activation(ct_nn *nn, const char *x, const char *act) {
  if (check("ct_nn_activation", nn, x, NULL, 0, act) != CT_OK) return NULL;
  if (act == NULL || act[0] == '\0') {
    return ct__error_null(CT_ERR_INVALID_ARGUMENT, "ct_nn_activation: no activation named");
  }
  nn_undo u;
  ct_op *op;
  return simple(nn, "ct_nn_activation", "act", act, x, &op, &u);
}

const char *ct_nn_dropout(ct_nn *nn, const char *x, double p, bool training) {
  if (!(p >= 0 && p < 1)) {
    return ct__error_null(CT_ERR_INVALID_ARGUMENT, "ct_nn_dropout: p is %g: give [0, 1)", p);
  }
  nn_undo u;
  ct_op *op = NULL;
  const char *y = simple(nn, "ct_nn_dropout", "dropout", "dropout", x, &op, &u);
  if (y == NULL) return NULL;
  const char *mask = ct__nn_keep(nn, "%.*s.mask", (int)(strlen(y) - strlen(".out")), y);
  int64_t seed = (int64_t)((nn->seed * 1000003u + ++nn->n_inits) & 0x7fffffffffffffff);
  if (mask == NULL || ct_op_set_output(op, "Mask", mask) != CT_OK ||
      ct_op_set_attr_float(op, "dropout_prob", p) != CT_OK ||
      ct_op_set_attr_bool(op, "is_test", !training) != CT_OK ||
      ct_op_set_attr_bool(op, "fix_seed", true) != CT_OK ||
      ct_op_set_attr_int(op, "seed", seed) != CT_OK ||
      ct_op_set_attr_string(op, "dropout_implementation", "upscale_in_train") != CT_OK) {
    return ct__nn_fail(nn, &u);
  }
  return y;
}

const char *ct_nn_batch_norm(ct_nn *nn, const char *x, int64_t channels, bool training) {
  if (check("ct_nn_batch_norm", nn, x, &channels, 1, NULL) != CT_OK) return NULL;
  nn_undo u;
  ct__nn_begin(nn, &u);
  char l[48];
  ct__nn_layer_name(nn, "batch_norm", l, sizeof l);
  const char *sc = ct__nn_keep(nn, "%s.scale", l), *b = ct__nn_keep(nn, "%s.bias", l);
  const char *m = ct__nn_keep(nn, "%s.mean", l), *v = ct__nn_keep(nn, "%s.var", l);
  const char *y = ct__nn_keep(nn, "%s.out", l), *sm = ct__nn_keep(nn, "%s.saved_mean", l);
  const char *sv = ct__nn_keep(nn, "%s.saved_var", l);
  const ct_nn_init one = {CT_NN_INIT_CONSTANT, 1, 0}, zero = {CT_NN_INIT_ZEROS, 0, 0};
  ct_op *op = NULL;
  if (sc == NULL || b == NULL || m == NULL || v == NULL || y == NULL || sm == NULL || sv == NULL ||
      ct__nn_param(nn, sc, &channels, 1, one, 1, 1, true) != CT_OK ||
      ct__nn_param(nn, b, &channels, 1, zero, 1, 1, true) != CT_OK ||
      ct__nn_param(nn, m, &channels, 1, zero, 1, 1, false) != CT_OK ||
      ct__nn_param(nn, v, &channels, 1, one, 1, 1, false) != CT_OK ||
      (op = ct__nn_add(nn->main, "batch_norm", "X", x, "Scale", sc, "Bias", b, "Mean", m,
                       "Variance", v, NULL, "Y", y, "MeanOut", m, "VarianceOut", v, "SavedMean",
                       sm, "SavedVariance", sv, NULL)) == NULL ||
      ct_op_set_attr_bool(op, "is_test", !training) != CT_OK) {
    return ct__nn_fail(nn, &u);
  }
  return y;
}

const char *ct_nn_layer_norm(ct_nn *nn, const char *x, int64_t n) {
  if (check("ct_nn_layer_norm", nn, x, &n, 1, NULL) != CT_OK) return NULL;
  nn_undo u;
  ct__nn_begin(nn, &u);
  char l[48];
  ct__nn_layer_name(nn, "layer_norm", l, sizeof l);
  const char *sc = ct__nn_keep(nn, "%s.scale", l), *b = ct__nn_keep(nn, "%s.bias", l);
  const char *y = ct__nn_keep(nn, "%s.out", l), *m = ct__nn_keep(nn, "%s.mean", l);
  const char *v = ct__nn_keep(nn, "%s.var", l);
  const ct_nn_init one = {CT_NN_INIT_CONSTANT, 1, 0}, zero = {CT_NN_INIT_ZEROS, 0, 0};
  ct_op *op = NULL;
  if (sc == NULL || b == NULL || y == NULL || m == NULL || v == NULL ||
      ct__nn_param(nn, sc, &n, 1, one, 1, 1, true) != CT_OK ||
      ct__nn_param(nn, b, &n, 1, zero, 1, 1, true) != CT_OK ||
      (op = ct__nn_add(nn->main, "layer_norm", "X", x, "Scale", sc, "Bias", b, NULL, "Y", y,
                       "Mean", m, "Variance", v, NULL)) == NULL ||
      ct_op_set_attr_int(op, "begin_norm_axis", -1) != CT_OK) {
    return ct__nn_fail(nn, &u);
  }
  return y;
}

const char *ct_nn_embedding(ct_nn *nn, const char *ids, int64_t count, int64_t dim) {
  int64_t sizes[2] = {count, dim};
  if (check("ct_nn_embedding", nn, ids, sizes, 2, NULL) != CT_OK) return NULL;
  nn_undo u;
  ct__nn_begin(nn, &u);
  char l[48];
  ct__nn_layer_name(nn, "embedding", l, sizeof l);
  const char *w = ct__nn_keep(nn, "%s.w", l), *y = ct__nn_keep(nn, "%s.out", l);
  const ct_nn_init normal = {CT_NN_INIT_NORMAL, 0, 1};
  if (w == NULL || y == NULL || ct__nn_param(nn, w, sizes, 2, normal, 1, 1, true) != CT_OK ||
      ct__nn_add(nn->main, "lookup_table_v2", "W", w, "Ids", ids, NULL, "Out", y, NULL) == NULL) {
    return ct__nn_fail(nn, &u);
  }
  return y;
}

/* ---- Losses -------------------------------------------------------------------------------- */

const char *ct_nn_cross_entropy(ct_nn *nn, const char *logits, const char *labels) {
  if (check("ct_nn_cross_entropy", nn, logits, NULL, 0, NULL) != CT_OK ||
      ct__nn_check_name("ct_nn_cross_entropy", "labels", labels) != CT_OK) {
    return NULL;
  }
  nn_undo u;
  ct__nn_begin(nn, &u);
  char l[48];
  ct__nn_layer_name(nn, "loss", l, sizeof l);
  const char *prob = ct__nn_keep(nn, "%s.prob", l), *rows = ct__nn_keep(nn, "%s.rows", l);
  const char *loss = ct__nn_keep(nn, "%s", l);
  if (prob == NULL || rows == NULL || loss == NULL ||
      ct__nn_add(nn->main, "softmax_with_cross_entropy", "Logits", logits, "Label", labels, NULL,
                 "Softmax", prob, "Loss", rows, NULL) == NULL ||
      ct__nn_add(nn->main, "mean", "X", rows, NULL, "Out", loss, NULL) == NULL) {
    return ct__nn_fail(nn, &u);
  }
  return loss;
}

const char *ct_nn_mse(ct_nn *nn, const char *prediction, const char *target) {
  if (check("ct_nn_mse", nn, prediction, NULL, 0, NULL) != CT_OK ||
      ct__nn_check_name("ct_nn_mse", "the target", target) != CT_OK) {
    return NULL;
  }
  nn_undo u;
  ct__nn_begin(nn, &u);
  char l[48];
  ct__nn_layer_name(nn, "loss", l, sizeof l);
  const char *d = ct__nn_keep(nn, "%s.diff", l), *d2 = ct__nn_keep(nn, "%s.sq", l);
  const char *loss = ct__nn_keep(nn, "%s", l);
  if (d == NULL || d2 == NULL || loss == NULL ||
      ct__nn_add(nn->main, "elementwise_sub", "X", prediction, "Y", target, NULL, "Out", d, NULL) ==
          NULL ||
      ct__nn_add(nn->main, "elementwise_mul", "X", d, "Y", d, NULL, "Out", d2, NULL) == NULL ||
      ct__nn_add(nn->main, "mean", "X", d2, NULL, "Out", loss, NULL) == NULL) {
    return ct__nn_fail(nn, &u);
  }
  return loss;
}
