/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/rules_conv.c: the rules of ONNX's convolutions and batch normalisation: Conv (1-D and
 * 2-D, onto conv2d; 3-D onto conv_nd), ConvInteger and QLinearConv (2-D, onto conv_integer and
 * qlinear_conv), ConvTranspose (1-D to 3-D, onto conv_transpose) and BatchNormalization
 * (inference and, from opset 14, training mode, onto batch_norm).
 *
 * conv2d takes 2-D NCHW data with paddings (top, bottom, left, right); ONNX lists pads as
 * (begins..., ends...), so (top, left, bottom, right) becomes (top, bottom, left, right). A
 * 1-D Conv is a 2-D one over a unit height (X and W unsqueezed at dim 2, the output squeezed
 * back), which is exact. auto_pad SAME_UPPER and SAME_LOWER are conv2d's SAME and SAME_LOWER,
 * whose pads conv2d computes from X's dims each run (never from the declared ones, which the
 * fed input need not have). conv_transpose takes
 * ONNX's attributes as they are and resolves output_shape and auto_pad when it runs. */
#include <string.h>

#include "onnx/onnx_rules.h"

/* The number of spatial dims of a Conv whose W is input wk: kernel_shape's count, else W's or
 * X's rank where the import knows it (ox_in_rank: a constant's, a graph input's declared one)
 * less 2; -1 when none says. */
static int conv_rank(ox_cx *c, size_t wk) {
  const int64_t *ks;
  size_t nk;
  if (ox_ints(c, "kernel_shape", &ks, &nk)) return (int)nk;
  const int w = ox_in_rank(c, wk), x = ox_in_rank(c, 0);
  return w >= 0 ? w - 2 : x >= 0 ? x - 2 : -1;
}

/* Sets conv2d's strides, paddings, padding_algorithm and dilations from the node, whose nsp (1
 * or 2) spatial dims become conv2d's (1-D: the width, under a unit height). */
static ct_status conv_geometry(ox_cx *c, ct_op *op, int nsp) {
  const int64_t *v;
  size_t n;
  int64_t st[2] = {1, 1}, pads[4] = {0, 0, 0, 0}, dil[2] = {1, 1}, ob[2] = {0, 0},
          oe[2] = {0, 0};
  int off = 2 - nsp; /* 1-D: the node's dim 0 is conv2d's width */
  if (ox_ints(c, "strides", &v, &n)) {
    if (n != (size_t)nsp) return ox_unsupported(c, "strides of %zu values for %d-D", n, nsp);
    memcpy(st + off, v, (size_t)nsp * sizeof *v);
  }
  if (ox_ints(c, "dilations", &v, &n)) {
    if (n != (size_t)nsp) return ox_unsupported(c, "dilations of %zu values for %d-D", n, nsp);
    memcpy(dil + off, v, (size_t)nsp * sizeof *v);
  }
  if (ox_ints(c, "pads", &v, &n)) {
    if (n != 2 * (size_t)nsp) return ox_unsupported(c, "pads of %zu values for %d-D", n, nsp);
    memcpy(ob + off, v, (size_t)nsp * sizeof *v);
    memcpy(oe + off, v + nsp, (size_t)nsp * sizeof *v);
  }
  const char *auto_pad = ox_string(c, "auto_pad", "NOTSET");
  const char *algo = "EXPLICIT";
  if (auto_pad == NULL) return ct_last_status();
  if (strcmp(auto_pad, "VALID") == 0) {
    algo = "VALID";
  } else if (strcmp(auto_pad, "SAME_UPPER") == 0) {
    algo = "SAME";
  } else if (strcmp(auto_pad, "SAME_LOWER") == 0) {
    algo = "SAME_LOWER"; /* computed from X's dims when the op runs */
  } else if (strcmp(auto_pad, "NOTSET") != 0 && auto_pad[0] != '\0') {
    return ox_unsupported(c, "auto_pad '%s' (NOTSET, VALID, SAME_UPPER and SAME_LOWER are "
                             "supported)", auto_pad);
  }
  pads[0] = ob[0], pads[1] = oe[0], pads[2] = ob[1], pads[3] = oe[1];
  ct_status s = ct_op_set_attr_ints(op, "strides", st, 2);
  if (s == CT_OK) s = ct_op_set_attr_ints(op, "paddings", pads, 4);
  if (s == CT_OK) s = ct_op_set_attr_string(op, "padding_algorithm", algo);
  if (s == CT_OK) s = ct_op_set_attr_ints(op, "dilations", dil, 2);
  return s;
}

/* An op of `type` (unsqueeze or squeeze) on axis 2 from x into a fresh variable (*to) or into
 * `out` when not NULL. */
static ct_status axis2(ox_cx *c, const char *type, const char *x, const char *out,
                       const char **to) {
  static const int64_t two[1] = {2};
  *to = out != NULL ? out : ox_tmp(c);
  ct_op *op = *to != NULL ? ox_op(c, type) : NULL;
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", *to);
  if (s == CT_OK) s = ct_op_set_attr_ints(op, "axes", two, 1);
  return s == CT_OK ? ox_push(c, op) : s;
}

/* A 3-D Conv: conv_nd, ONNX's attributes as they are (its plan reads them as ONNX does). */
static ct_status conv_nd(ox_cx *c, const char *x, const char *w, const char *b, const char *y) {
  ct_op *op = ox_op(c, "conv_nd");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_input(op, "W", w);
  if (s == CT_OK && b != NULL) s = ct_op_set_input(op, "B", b);
  if (s == CT_OK) s = ct_op_set_output(op, "Y", y);
  static const char *const lists[] = {"strides", "pads", "dilations", "kernel_shape"};
  for (size_t k = 0; k < 4 && s == CT_OK; k++) {
    const int64_t *v;
    size_t n;
    if (ox_ints(c, lists[k], &v, &n)) s = ct_op_set_attr_ints(op, lists[k], v, n);
  }
  if (s == CT_OK) s = ct_op_set_attr_int(op, "groups", ox_int(c, "group", 1));
  if (s == CT_OK) s = ct_op_set_attr_string(op, "auto_pad", ox_string(c, "auto_pad", "NOTSET"));
  return s == CT_OK ? ox_push(c, op) : s;
}

/* Conv (1+, 11+): conv2d (1-D: between unsqueeze and squeeze), then the bias B [M] added as
 * [M, 1, 1]. */
static ct_status conv(ox_cx *c) {
  const char *x = ox_in(c, 0), *w = ox_in(c, 1), *b = ox_in(c, 2), *y = ox_out(c, 0);
  if (x == NULL || w == NULL || y == NULL) return ox_unsupported(c, "X, W or Y is missing");
  int nsp = conv_rank(c, 1);
  if (nsp < 0) nsp = 2; /* nothing says: conv2d checks the rank when it runs */
  if (nsp == 3) return conv_nd(c, x, w, b, y);
  if (nsp != 1 && nsp != 2) {
    return ox_unsupported(c, "a %d-D convolution (corten convolves 1-D to 3-D)", nsp);
  }
  ct_status s = CT_OK;
  if (nsp == 1) {
    s = axis2(c, "unsqueeze", x, NULL, &x);
    if (s == CT_OK) s = axis2(c, "unsqueeze", w, NULL, &w);
    if (s != CT_OK) return s;
  }
  const char *conv_out = b != NULL || nsp == 1 ? ox_tmp(c) : y;
  ct_op *op = conv_out != NULL ? ox_op(c, "conv2d") : NULL;
  if (op == NULL) return ct_last_status();
  s = conv_geometry(c, op, nsp);
  if (s == CT_OK) s = ct_op_set_attr_int(op, "groups", ox_int(c, "group", 1));
  if (s == CT_OK) s = ct_op_set_input(op, "Input", x);
  if (s == CT_OK) s = ct_op_set_input(op, "Filter", w);
  if (s == CT_OK) s = ct_op_set_output(op, "Output", conv_out);
  if (s == CT_OK) s = ox_push(c, op);
  if (s != CT_OK) return s;
  if (b != NULL) {
    const char *b3 = ox_tmp(c), *sum = nsp == 1 ? ox_tmp(c) : y;
    ct_op *r = b3 != NULL && sum != NULL ? ox_op(c, "reshape") : NULL;
    if (r == NULL) return ct_last_status();
    static const int64_t col[] = {-1, 1, 1};
    s = ct_op_set_input(r, "X", b);
    if (s == CT_OK) s = ct_op_set_output(r, "Out", b3);
    if (s == CT_OK) s = ct_op_set_attr_ints(r, "shape", col, 3);
    if (s == CT_OK) s = ox_push(c, r);
    ct_op *add = s == CT_OK ? ox_op(c, "elementwise_add") : NULL;
    if (add == NULL) return ct_last_status();
    s = ct_op_set_input(add, "X", conv_out);
    if (s == CT_OK) s = ct_op_set_input(add, "Y", b3);
    if (s == CT_OK) s = ct_op_set_output(add, "Out", sum);
    if (s == CT_OK) s = ox_push(c, add);
    conv_out = sum;
  }
  if (s != CT_OK || nsp == 2) return s;
  const char *to;
  return axis2(c, "squeeze", conv_out, y, &to);
}

/* ConvTranspose (1, 11): conv_transpose with the node's attributes (group as groups). */
static ct_status conv_transpose(ox_cx *c) {
  static const char *const lists[] = {"strides",      "pads",         "dilations",
                                      "output_padding", "output_shape", "kernel_shape"};
  const char *x = ox_in(c, 0), *w = ox_in(c, 1), *b = ox_in(c, 2), *y = ox_out(c, 0);
  if (x == NULL || w == NULL || y == NULL) return ox_unsupported(c, "X, W or Y is missing");
  const int64_t *v, *ks;
  size_t n, nk;
  if (ox_ints(c, "output_shape", &v, &n) && ox_ints(c, "kernel_shape", &ks, &nk) && n != nk) {
    return ox_unsupported(c, "output_shape of %zu values for a %zu-D kernel (give the spatial "
                             "extents alone)", n, nk);
  }
  const char *auto_pad = ox_string(c, "auto_pad", "NOTSET");
  if (auto_pad == NULL) return ct_last_status();
  ct_op *op = ox_op(c, "conv_transpose");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_input(op, "W", w);
  if (s == CT_OK && b != NULL) s = ct_op_set_input(op, "B", b);
  if (s == CT_OK) s = ct_op_set_output(op, "Y", y);
  for (size_t i = 0; i < sizeof lists / sizeof lists[0] && s == CT_OK; i++) {
    if (ox_ints(c, lists[i], &v, &n)) s = ct_op_set_attr_ints(op, lists[i], v, n);
  }
  if (s == CT_OK) s = ct_op_set_attr_int(op, "groups", ox_int(c, "group", 1));
  if (s == CT_OK) s = ct_op_set_attr_string(op, "auto_pad", auto_pad);
  return s == CT_OK ? ox_push(c, op) : s;
}

/* BatchNormalization: batch_norm. Inference (training_mode 0, or before opset 14 a node with Y
 * alone; before opset 7 is_test 1) normalises by the inputs mean and var (is_test). Training
 * mode (14+) by the batch's statistics, its outputs running_mean and running_var new values:
 * input_mean momentum + batch_mean (1 - momentum), the variance likewise with the biased batch
 * variance, which is batch_norm's MeanOut and VarianceOut exactly. Before 14 training outputs
 * (saved mean and variance) are refused. */
static ct_status batch_norm(ox_cx *c) {
  const char *x = ox_in(c, 0), *sc = ox_in(c, 1), *b = ox_in(c, 2), *mean = ox_in(c, 3),
             *var = ox_in(c, 4), *y = ox_out(c, 0);
  if (x == NULL || sc == NULL || b == NULL || mean == NULL || var == NULL || y == NULL) {
    return ox_unsupported(c, "an input or Y is missing");
  }
  bool training = ox_opset(c) >= 14 && ox_int(c, "training_mode", 0) != 0;
  const char *mo = training ? ox_out(c, 1) : NULL, *vo = training ? ox_out(c, 2) : NULL;
  if (!training && (ox_out(c, 1) != NULL || ox_out(c, 2) != NULL)) {
    return ox_unsupported(c, "outputs beyond Y without training_mode (before opset 14: the "
                             "training outputs, saved mean and variance included)");
  }
  if (ox_opset(c) < 9 && ox_int(c, "spatial", 1) != 1) return ox_unsupported(c, "spatial 0");
  if (ox_opset(c) < 7 && ox_int(c, "is_test", 0) == 0) {
    return ox_unsupported(c, "is_test 0 before opset 7 (training mode)");
  }
  if (mo == NULL) mo = ox_tmp(c);
  if (vo == NULL) vo = ox_tmp(c);
  ct_op *op = ox_op(c, "batch_norm");
  const char *sm = ox_tmp(c), *sv = ox_tmp(c);
  if (op == NULL || mo == NULL || vo == NULL || sm == NULL || sv == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_input(op, "Scale", sc);
  if (s == CT_OK) s = ct_op_set_input(op, "Bias", b);
  if (s == CT_OK) s = ct_op_set_input(op, "Mean", mean);
  if (s == CT_OK) s = ct_op_set_input(op, "Variance", var);
  if (s == CT_OK) s = ct_op_set_output(op, "Y", y);
  if (s == CT_OK) s = ct_op_set_output(op, "MeanOut", mo);
  if (s == CT_OK) s = ct_op_set_output(op, "VarianceOut", vo);
  if (s == CT_OK) s = ct_op_set_output(op, "SavedMean", sm);
  if (s == CT_OK) s = ct_op_set_output(op, "SavedVariance", sv);
  if (s == CT_OK) s = ct_op_set_attr_bool(op, "is_test", !training);
  if (s == CT_OK) s = ct_op_set_attr_float(op, "epsilon", ox_float(c, "epsilon", 1e-5));
  if (s == CT_OK) s = ct_op_set_attr_float(op, "momentum", ox_float(c, "momentum", 0.9));
  return s == CT_OK ? ox_push(c, op) : s;
}

/* ConvInteger (x, w, x_zero_point, w_zero_point) and QLinearConv (x, x_scale, x_zero_point, w,
 * w_scale, w_zero_point, y_scale, y_zero_point, B) in 2-D: conv_integer and qlinear_conv, each
 * ONNX input k onto slots[k] (required[0..n_required) the ones the node must give; W is input
 * wk), with Conv's geometry. */
static ct_status integer_conv(ox_cx *c, const char *type, const char *const *slots, size_t n,
                              const size_t *required, size_t n_required, size_t wk) {
  int nsp = conv_rank(c, wk);
  if (nsp >= 0 && nsp != 2) {
    return ox_unsupported(c, "a %d-D integer convolution (corten's are 2-D)", nsp);
  }
  ct_op *op = ox_op_wired(c, type, slots, n, required, n_required, "Output");
  if (op == NULL) return ct_last_status();
  ct_status s = conv_geometry(c, op, 2);
  if (s == CT_OK) s = ct_op_set_attr_int(op, "groups", ox_int(c, "group", 1));
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status conv_integer(ox_cx *c) {
  static const char *const slots[] = {"Input", "Filter", "InputZeroPoint", "FilterZeroPoint"};
  static const size_t required[] = {0, 1};
  return integer_conv(c, "conv_integer", slots, 4, required, 2, 1);
}

static ct_status qlinear_conv(ox_cx *c) {
  static const char *const slots[] = {"Input",       "InputScale", "InputZeroPoint",
                                      "Filter",      "FilterScale", "FilterZeroPoint",
                                      "OutScale",    "OutZeroPoint", "Bias"};
  static const size_t required[] = {0, 1, 3, 4, 6};
  return integer_conv(c, "qlinear_conv", slots, 9, required, 5, 3);
}

static const ox_rule rows[] = {
    {"ConvInteger", 10, conv_integer, "conv_integer"},
    {"QLinearConv", 10, qlinear_conv, "qlinear_conv"},
    {"Conv", 1, conv, "conv2d, unsqueeze, squeeze, reshape, elementwise_add, conv_nd"},
    {"ConvTranspose", 1, conv_transpose, "conv_transpose"},
    {"BatchNormalization", 6, batch_norm, "batch_norm"},
    {"BatchNormalization", 14, batch_norm, "batch_norm"},
};

const ox_rules ox_rules_conv = {rows, sizeof rows / sizeof rows[0]};
