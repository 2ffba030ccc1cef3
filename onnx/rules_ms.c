/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/rules_ms.c: the rules of onnxruntime's com.microsoft ops that its quantization tool
 * writes in the QOperator format (and the model zoos' int8 models hold) beside ONNX's own
 * QLinearConv and QLinearMatMul: QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu,
 * QLinearGlobalAveragePool and QGemm. Each is what
 * onnxruntime's documentation defines it as, the float op between a dequantization of its
 * inputs and a quantization of its result, written as those corten ops (dequantize_linear,
 * the float op, quantize_linear). onnxruntime's kernels compute the same in integer or float
 * steps of another order, so a value on a rounding edge may come out one quantization step
 * apart. */
#include <string.h>

#include "onnx/onnx_rules.h"

/* dequantize_linear(x, scale, zero point (NULL: none), axis) into a fresh variable *to. */
static ct_status dq(ox_cx *c, const char *x, const char *scale, const char *zero, int64_t axis,
                    const char **to) {
  *to = ox_tmp(c);
  ct_op *op = *to != NULL ? ox_op(c, "dequantize_linear") : NULL;
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_input(op, "Scale", scale);
  if (s == CT_OK && zero != NULL) s = ct_op_set_input(op, "ZeroPoint", zero);
  if (s == CT_OK) s = ct_op_set_output(op, "Y", *to);
  if (s == CT_OK) s = ct_op_set_attr_int(op, "axis", axis);
  return s == CT_OK ? ox_push(c, op) : s;
}

/* quantize_linear(x, scale, zero point (NULL: none, uint8)) into out. */
static ct_status q(ox_cx *c, const char *x, const char *scale, const char *zero,
                   const char *out) {
  ct_op *op = ox_op(c, "quantize_linear");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_input(op, "Scale", scale);
  if (s == CT_OK && zero != NULL) s = ct_op_set_input(op, "ZeroPoint", zero);
  if (s == CT_OK) s = ct_op_set_output(op, "Y", out);
  return s == CT_OK ? ox_push(c, op) : s;
}

/* type(x, y) (slots X, Y, Out) into out, or a fresh variable when out is NULL (*to). */
static ct_status xy(ox_cx *c, const char *type, const char *x, const char *y, const char *out,
                    const char **to) {
  *to = out != NULL ? out : ox_tmp(c);
  ct_op *op = *to != NULL ? ox_op(c, type) : NULL;
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_input(op, "Y", y);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", *to);
  return s == CT_OK ? ox_push(c, op) : s;
}

/* QLinearAdd and QLinearMul (A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale,
 * C_zero_point): C = quantize(dequantize(A) op dequantize(B)), numpy broadcasting. */
static ct_status qlinear_binary(ox_cx *c, const char *type) {
  static const size_t required[] = {0, 1, 3, 4, 6, 7};
  /* without C_zero_point C is A's type, unknown here */
  ct_status s = ox_need(c, required, 6, NULL);
  const char *a, *b, *r;
  if (s == CT_OK) s = dq(c, ox_in(c, 0), ox_in(c, 1), ox_in(c, 2), 1, &a);
  if (s == CT_OK) s = dq(c, ox_in(c, 3), ox_in(c, 4), ox_in(c, 5), 1, &b);
  if (s == CT_OK) s = xy(c, type, a, b, NULL, &r);
  return s == CT_OK ? q(c, r, ox_in(c, 6), ox_in(c, 7), ox_out(c, 0)) : s;
}
static ct_status qlinear_add(ox_cx *c) { return qlinear_binary(c, "elementwise_add"); }
static ct_status qlinear_mul(ox_cx *c) { return qlinear_binary(c, "elementwise_mul"); }

/* QLinearSigmoid and QLinearLeakyRelu (X, X_scale, X_zero_point, Y_scale, Y_zero_point; alpha,
 * default 0.01, for the latter): Y = quantize(f(dequantize(X))). */
static ct_status qlinear_unary(ox_cx *c, const char *type, bool alpha) {
  static const size_t required[] = {0, 1, 3, 4};
  ct_status s = ox_need(c, required, 4, NULL);
  const char *x, *f = ox_tmp(c);
  if (s == CT_OK) s = dq(c, ox_in(c, 0), ox_in(c, 1), ox_in(c, 2), 1, &x);
  ct_op *op = s == CT_OK && f != NULL ? ox_op(c, type) : NULL;
  if (op == NULL) return s != CT_OK ? s : ct_last_status();
  s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", f);
  if (s == CT_OK && alpha) s = ct_op_set_attr_float(op, "alpha", ox_float(c, "alpha", 0.01));
  if (s == CT_OK) s = ox_push(c, op);
  return s == CT_OK ? q(c, f, ox_in(c, 3), ox_in(c, 4), ox_out(c, 0)) : s;
}
static ct_status qlinear_sigmoid(ox_cx *c) { return qlinear_unary(c, "sigmoid", false); }
static ct_status qlinear_leaky_relu(ox_cx *c) { return qlinear_unary(c, "leaky_relu", true); }

/* QLinearGlobalAveragePool (X, x_scale, x_zero_point, y_scale, y_zero_point), NCHW: the mean of
 * each image's channel plane, dequantized, then quantized. */
static ct_status qlinear_global_average_pool(ox_cx *c) {
  static const size_t required[] = {0, 1, 3, 4};
  ct_status s = ox_need(c, required, 4, NULL); /* Y's type is its zero point's */
  if (s != CT_OK) return s;
  if (ox_int(c, "channels_last", 0) != 0) {
    return ox_unsupported(c, "channels_last 1 (NHWC data; corten's pooling here is NCHW)");
  }
  const char *x, *mean = ox_tmp(c);
  s = dq(c, ox_in(c, 0), ox_in(c, 1), ox_in(c, 2), 1, &x);
  ct_op *op = s == CT_OK && mean != NULL ? ox_op(c, "pool2d") : NULL;
  if (op == NULL) return ct_last_status();
  s = ct_op_set_attr_string(op, "pooling_type", "avg");
  if (s == CT_OK) s = ct_op_set_attr_bool(op, "global_pooling", true);
  if (s == CT_OK) s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", mean);
  if (s == CT_OK) s = ox_push(c, op);
  return s == CT_OK ? q(c, mean, ox_in(c, 3), ox_in(c, 4), ox_out(c, 0)) : s;
}

/* QGemm (A, a_scale, a_zero_point, B, b_scale, b_zero_point, C, y_scale, y_zero_point; alpha,
 * transA, transB): Y = alpha (dequantize(A) dequantize(B) + dequantize(C)) (C int32 at the
 * scale a_scale b_scale along its last dim, zero point 0), quantized by y_scale and
 * y_zero_point when both are given (float without y_scale; y_scale alone is refused). B's scale
 * and zero point may be one per output column (B's dim 0 with transB, 1 without). */
static ct_status qgemm(ox_cx *c) {
  static const size_t required[] = {0, 1, 3, 4};
  ct_status s = ox_need(c, required, 4, NULL);
  if (s != CT_OK) return s;
  const bool ta = ox_int(c, "transA", 0) != 0, tb = ox_int(c, "transB", 0) != 0;
  const double alpha = ox_float(c, "alpha", 1.0);
  const char *a, *b, *prod = ox_tmp(c), *y = ox_out(c, 0), *ys = ox_in(c, 7);
  if (ys != NULL && ox_in(c, 8) == NULL) {
    return ox_unsupported(c, "y_scale without y_zero_point (a float output divided by y_scale "
                          "in onnxruntime): give y_zero_point");
  }
  s = dq(c, ox_in(c, 0), ox_in(c, 1), ox_in(c, 2), 1, &a);
  if (s == CT_OK) s = dq(c, ox_in(c, 3), ox_in(c, 4), ox_in(c, 5), tb ? 0 : 1, &b);
  ct_op *mm = s == CT_OK && prod != NULL ? ox_op(c, "matmul") : NULL;
  if (mm == NULL) return ct_last_status();
  s = ct_op_set_input(mm, "X", a);
  if (s == CT_OK) s = ct_op_set_input(mm, "Y", b);
  if (s == CT_OK) s = ct_op_set_output(mm, "Out", prod);
  if (s == CT_OK) s = ct_op_set_attr_bool(mm, "transpose_x", ta);
  if (s == CT_OK) s = ct_op_set_attr_bool(mm, "transpose_y", tb);
  if (s == CT_OK) s = ox_push(c, mm);
  const bool last_here = ys == NULL && alpha == 1.0; /* the sum is Y itself */
  if (s == CT_OK && ox_in(c, 6) != NULL) { /* the bias at the scale a_scale b_scale */
    const char *cs, *bias;
    s = xy(c, "elementwise_mul", ox_in(c, 1), ox_in(c, 4), NULL, &cs);
    if (s == CT_OK) s = dq(c, ox_in(c, 6), cs, NULL, -1, &bias);
    if (s == CT_OK) s = xy(c, "elementwise_add", prod, bias, last_here ? y : NULL, &prod);
  } else if (s == CT_OK && last_here) {
    s = ox_unary(c, "assign", prod, y);
  }
  if (s == CT_OK && alpha != 1.0) { /* alpha on the product and the bias alike */
    const char *scaled = ys != NULL ? ox_tmp(c) : y;
    ct_op *sc = scaled != NULL ? ox_op(c, "scale") : NULL;
    if (sc == NULL) return ct_last_status();
    s = ct_op_set_input(sc, "X", prod);
    if (s == CT_OK) s = ct_op_set_output(sc, "Out", scaled);
    if (s == CT_OK) s = ct_op_set_attr_float(sc, "scale", alpha);
    if (s == CT_OK) s = ox_push(c, sc);
    prod = scaled;
  }
  if (s != CT_OK || ys == NULL) return s;
  return q(c, prod, ys, ox_in(c, 8), y);
}

static const ox_rule rows[] = {
    {"QLinearAdd", 1, qlinear_add, "dequantize_linear, elementwise_add, quantize_linear"},
    {"QLinearMul", 1, qlinear_mul, "dequantize_linear, elementwise_mul, quantize_linear"},
    {"QLinearSigmoid", 1, qlinear_sigmoid, "dequantize_linear, sigmoid, quantize_linear"},
    {"QLinearLeakyRelu", 1, qlinear_leaky_relu, "dequantize_linear, leaky_relu, quantize_linear"},
    {"QLinearGlobalAveragePool", 1, qlinear_global_average_pool,
     "dequantize_linear, pool2d, quantize_linear"},
    {"QGemm", 1, qgemm,
     "dequantize_linear, matmul, scale, elementwise_mul, elementwise_add, quantize_linear"},
};

const ox_rules ox_rules_ms = {rows, sizeof rows / sizeof rows[0]};
