/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/rules_nn.c: the rules of ONNX's layers: convolution, pooling, normalisation, dropout in
 * inference. corten's conv2d and pool2d take 2-D NCHW data with paddings (top, bottom, left,
 * right); ONNX lists pads as (begins..., ends...), so (top, left, bottom, right) becomes
 * (top, bottom, left, right). */
#include <string.h>

#include "onnx/onnx_rules.h"

/* Sets the attributes shared by conv2d and pool2d from the node: strides, paddings (or the
 * padding_algorithm of auto_pad), and dilations when the op has them. */
static ct_status geometry(ox_cx *c, ct_op *op, bool dilations) {
  const int64_t *v;
  size_t n;
  int64_t strides[2] = {1, 1}, pads[4] = {0, 0, 0, 0}, dil[2] = {1, 1};
  if (ox_ints(c, "strides", &v, &n)) {
    if (n != 2) return ox_unsupported(c, "strides of %zu values (corten pools and convolves 2-D)", n);
    memcpy(strides, v, sizeof strides);
  }
  if (ox_ints(c, "pads", &v, &n)) {
    if (n != 4) return ox_unsupported(c, "pads of %zu values (corten pools and convolves 2-D)", n);
    pads[0] = v[0], pads[1] = v[2], pads[2] = v[1], pads[3] = v[3];
  }
  if (ox_ints(c, "dilations", &v, &n)) {
    if (n != 2) return ox_unsupported(c, "dilations of %zu values", n);
    if (!dilations && (v[0] != 1 || v[1] != 1)) {
      return ox_unsupported(c, "dilations other than 1 in pooling");
    }
    memcpy(dil, v, sizeof dil);
  }
  const char *auto_pad = ox_string(c, "auto_pad", "NOTSET");
  const char *algo = "EXPLICIT";
  if (auto_pad == NULL) return ct_last_status();
  if (strcmp(auto_pad, "VALID") == 0) algo = "VALID";
  else if (strcmp(auto_pad, "SAME_UPPER") == 0) algo = "SAME";
  else if (strcmp(auto_pad, "NOTSET") != 0 && auto_pad[0] != '\0') {
    return ox_unsupported(c, "auto_pad '%s' (NOTSET, VALID and SAME_UPPER are supported)", auto_pad);
  }
  ct_status s = ct_op_set_attr_ints(op, "strides", strides, 2);
  if (s == CT_OK) s = ct_op_set_attr_ints(op, "paddings", pads, 4);
  if (s == CT_OK) s = ct_op_set_attr_string(op, "padding_algorithm", algo);
  if (s == CT_OK && dilations) s = ct_op_set_attr_ints(op, "dilations", dil, 2);
  return s;
}

/* Conv: onnx/rules_conv.c. */

static ct_status pool(ox_cx *c, const char *kind, bool global) {
  const char *x = ox_in(c, 0), *y = ox_out(c, 0);
  if (x == NULL || y == NULL) return ox_unsupported(c, "X or Y is missing");
  if (ox_out(c, 1) != NULL) return ox_unsupported(c, "output Indices (not supported)");
  /* Global pooling of data declared with other than 2 spatial dims: pool_nd's (1-D to 3-D);
   * 2-D or undeclared: pool2d (with its CUDA kernel; it checks the rank when it runs). */
  const int rank = global ? ox_in_rank(c, 0) : -1;
  if (global && rank >= 0 && rank != 4) {
    ct_op *nd = ox_op(c, "pool_nd");
    if (nd == NULL) return ct_last_status();
    ct_status s = ct_op_set_attr_string(nd, "pooling_type", kind);
    if (s == CT_OK) s = ct_op_set_attr_bool(nd, "global_pooling", true);
    if (s == CT_OK) s = ct_op_set_input(nd, "X", x);
    if (s == CT_OK) s = ct_op_set_output(nd, "Out", y);
    return s == CT_OK ? ox_push(c, nd) : s;
  }
  ct_op *op = ox_op(c, "pool2d");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_attr_string(op, "pooling_type", kind);
  if (s == CT_OK && global) s = ct_op_set_attr_bool(op, "global_pooling", true);
  if (s == CT_OK && !global) {
    const int64_t *ks;
    size_t nk;
    if (!ox_ints(c, "kernel_shape", &ks, &nk) || nk != 2) {
      return ox_unsupported(c, "kernel_shape of other than 2 values (corten pools 2-D)");
    }
    s = ct_op_set_attr_ints(op, "ksize", ks, 2);
    if (s == CT_OK) s = geometry(c, op, false);
    if (s == CT_OK) s = ct_op_set_attr_bool(op, "ceil_mode", ox_int(c, "ceil_mode", 0) != 0);
    if (s == CT_OK) {
      s = ct_op_set_attr_bool(op, "exclusive", ox_int(c, "count_include_pad", 0) == 0);
    }
  }
  if (s == CT_OK) s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", y);
  return s == CT_OK ? ox_push(c, op) : s;
}

/* MaxPool and AveragePool: onnx/rules_pool.c (pool2d where it is exact, else pool_nd). */
static ct_status global_avg_pool(ox_cx *c) { return pool(c, "avg", true); }
static ct_status global_max_pool(ox_cx *c) { return pool(c, "max", true); }

/* BatchNormalization: onnx/rules_conv.c. */

/* A reshape of x into a fresh variable of dims `shape` (n values), its name in *to. */
static ct_status reshape_to(ox_cx *c, const char *x, const int64_t *shape, size_t n,
                            const char **to) {
  *to = ox_tmp(c);
  ct_op *r = *to != NULL ? ox_op(c, "reshape") : NULL;
  if (r == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(r, "X", x);
  if (s == CT_OK) s = ct_op_set_output(r, "Out", *to);
  if (s == CT_OK) s = ct_op_set_attr_ints(r, "shape", shape, n);
  return s == CT_OK ? ox_push(c, r) : s;
}

/* LayerNormalization (17): layer_norm over the dims from `axis`, Scale and Bias (of those dims)
 * flattened to 1-D; Mean and InvStdDev (X's dims with 1 from `axis` on) by layer_norm_stats. */
static ct_status layer_norm(ox_cx *c) {
  const char *x = ox_in(c, 0), *sc = ox_in(c, 1), *b = ox_in(c, 2), *y = ox_out(c, 0);
  if (x == NULL || sc == NULL || y == NULL) return ox_unsupported(c, "X, Scale or Y is missing");
  if (ox_int(c, "stash_type", 1) != 1) return ox_unsupported(c, "stash_type other than float");
  static const int64_t flat[1] = {-1};
  const char *mean = ox_out(c, 1), *inv = ox_out(c, 2);
  int64_t axis = ox_int(c, "axis", -1);
  double eps = ox_float(c, "epsilon", 1e-5);
  ct_status s = reshape_to(c, sc, flat, 1, &sc);
  if (s == CT_OK && b != NULL) s = reshape_to(c, b, flat, 1, &b);
  if (s != CT_OK) return s;
  ct_op *op = ox_op(c, "layer_norm");
  const char *m = ox_tmp(c), *v = ox_tmp(c);
  if (op == NULL || m == NULL || v == NULL) return ct_last_status();
  s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_input(op, "Scale", sc);
  if (s == CT_OK && b != NULL) s = ct_op_set_input(op, "Bias", b);
  if (s == CT_OK) s = ct_op_set_output(op, "Y", y);
  if (s == CT_OK) s = ct_op_set_output(op, "Mean", m);
  if (s == CT_OK) s = ct_op_set_output(op, "Variance", v);
  if (s == CT_OK) s = ct_op_set_attr_int(op, "begin_norm_axis", axis);
  if (s == CT_OK) s = ct_op_set_attr_float(op, "epsilon", eps);
  if (s == CT_OK) s = ox_push(c, op);
  if (s != CT_OK || (mean == NULL && inv == NULL)) return s;
  ct_op *st = ox_op(c, "layer_norm_stats");
  if (st == NULL) return ct_last_status();
  if (mean == NULL && (mean = ox_tmp(c)) == NULL) return ct_last_status();
  if (inv == NULL && (inv = ox_tmp(c)) == NULL) return ct_last_status();
  s = ct_op_set_input(st, "X", x);
  if (s == CT_OK) s = ct_op_set_input(st, "Mean", m);
  if (s == CT_OK) s = ct_op_set_input(st, "Variance", v);
  if (s == CT_OK) s = ct_op_set_output(st, "MeanOut", mean);
  if (s == CT_OK) s = ct_op_set_output(st, "InvStdDev", inv);
  if (s == CT_OK) s = ct_op_set_attr_int(st, "begin_norm_axis", axis);
  if (s == CT_OK) s = ct_op_set_attr_float(st, "epsilon", eps);
  return s == CT_OK ? ox_push(c, st) : s;
}

/* Dropout: the identity (assign) when nothing asks for a mask or training; else
 * dropout_identity, which reads ratio and training_mode when it runs and refuses a training run
 * with a ratio above 0 (random bits that must match). A mask before opset 10 (of X's dtype) is
 * refused. */
static ct_status dropout(ox_cx *c) {
  const char *x = ox_in(c, 0), *y = ox_out(c, 0), *mask = ox_out(c, 1);
  const double *v;
  size_t n;
  if (x == NULL || y == NULL) return ox_unsupported(c, "X or Y is missing");
  if (mask != NULL && ox_opset(c) < 10) return ox_unsupported(c, "output mask before opset 10");
  bool training = false, known = true;
  if (ox_in(c, 2) != NULL) { /* training_mode */
    known = ox_const_any(c, 2, &v, &n);
    for (size_t i = 0; known && i < n; i++) training = training || v[i] != 0;
  }
  if (mask == NULL && known && !training) return ox_unary(c, "assign", x, y);
  double ratio = ox_opset(c) < 12 ? ox_float(c, "ratio", 0.5) : 0.5;
  if (ox_in(c, 1) != NULL && ox_const_any(c, 1, &v, &n) && n == 1) ratio = v[0];
  if (known && training && (ox_in(c, 1) == NULL || ox_is_const(c, 1)) && ratio != 0) {
    return ox_unsupported(c, "training mode with ratio %g (random bits that must match)", ratio);
  }
  ct_op *op = ox_op(c, "dropout_identity");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", x);
  if (s == CT_OK && ox_in(c, 1) != NULL) s = ct_op_set_input(op, "Ratio", ox_in(c, 1));
  if (s == CT_OK && ox_in(c, 2) != NULL) s = ct_op_set_input(op, "TrainingMode", ox_in(c, 2));
  if (s == CT_OK) s = ct_op_set_output(op, "Out", y);
  if (s == CT_OK && mask != NULL) s = ct_op_set_output(op, "Mask", mask);
  if (s == CT_OK) s = ct_op_set_attr_float(op, "dropout_prob", ratio);
  return s == CT_OK ? ox_push(c, op) : s;
}

static const ox_rule rows[] = {
    {"GlobalAveragePool", 1, global_avg_pool, "pool2d, pool_nd"},
    {"GlobalMaxPool", 1, global_max_pool, "pool2d, pool_nd"},
    {"LayerNormalization", 17, layer_norm, "reshape, layer_norm, layer_norm_stats"},
    {"Dropout", 7, dropout, "assign, dropout_identity"},
};

const ox_rules ox_rules_nn = {rows, sizeof rows / sizeof rows[0]};
