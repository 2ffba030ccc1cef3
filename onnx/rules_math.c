/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/rules_math.c: the rules of ONNX's arithmetic: the elementwise ops, activations, matrix
 * products. (Softmax, LogSoftmax and ReduceSum are onnx/rules_reduce.c's.) */
#include <math.h>
#include <string.h>

#include "onnx/onnx_rules.h"

/* Sets op's input slot to name (skipped when name is NULL) and returns the status chained. */
static ct_status in(ct_status s, ct_op *op, const char *slot, const char *name) {
  return s == CT_OK && name != NULL ? ct_op_set_input(op, slot, name) : s;
}

static ct_status out(ct_status s, ct_op *op, const char *slot, const char *name) {
  return s == CT_OK && name != NULL ? ct_op_set_output(op, slot, name) : s;
}

/* Out = type(A, B): X and Y slots. */
static ct_status binary(ox_cx *c, const char *type, const char *a, const char *b, const char *o) {
  ct_op *op = ox_op(c, type);
  if (op == NULL) return ct_last_status();
  ct_status s = in(CT_OK, op, "X", a);
  s = in(s, op, "Y", b);
  s = out(s, op, "Out", o);
  return s == CT_OK ? ox_push(c, op) : s;
}

/* A node of two inputs and one output, all present. */
static ct_status two_in(ox_cx *c, const char **a, const char **b, const char **o) {
  /* Before opset 7, broadcasting was asked for (broadcast 1) and could align B at `axis`; B of
   * the same dims, or aligned at the end (no axis), is numpy's rule. */
  *a = ox_in(c, 0);
  *o = ox_out(c, 0);
  if (*a == NULL || ox_in(c, 1) == NULL || *o == NULL) {
    return ox_unsupported(c, "an input or the output is missing");
  }
  return ox_legacy_b(c, b);
}

#define BINARY_RULE(fn, type)                                 \
  static ct_status fn(ox_cx *c) {                             \
    const char *a = NULL, *b = NULL, *o = NULL;                                  \
    ct_status s = two_in(c, &a, &b, &o);                      \
    return s == CT_OK ? binary(c, type, a, b, o) : s;         \
  }
BINARY_RULE(add, "elementwise_add")
BINARY_RULE(sub, "elementwise_sub")
BINARY_RULE(mul, "elementwise_mul")
BINARY_RULE(divide, "elementwise_div")

static ct_status unary_of(ox_cx *c, const char *type) {
  const char *x = ox_in(c, 0), *o = ox_out(c, 0);
  if (x == NULL || o == NULL) return ox_unsupported(c, "the input or the output is missing");
  return ox_unary(c, type, x, o);
}

#define UNARY_RULE(fn, type) \
  static ct_status fn(ox_cx *c) { return unary_of(c, type); }
UNARY_RULE(relu, "relu")
UNARY_RULE(sigmoid, "sigmoid")
UNARY_RULE(tanh_, "tanh")
UNARY_RULE(exp_, "exp")
UNARY_RULE(log_, "log")
UNARY_RULE(identity, "assign")

/* Out = X * scale + bias, in X's dtype. */
static ct_status scale_to(ox_cx *c, const char *x, const char *o, double scale, double bias) {
  ct_op *op = ox_op(c, "scale");
  if (op == NULL) return ct_last_status();
  ct_status s = in(CT_OK, op, "X", x);
  s = out(s, op, "Out", o);
  if (s == CT_OK) s = ct_op_set_attr_float(op, "scale", scale);
  if (s == CT_OK) s = ct_op_set_attr_float(op, "bias", bias);
  return s == CT_OK ? ox_push(c, op) : s;
}

/* Sum (8+): numpy broadcasting over any number of inputs, added left to right. */
static ct_status sum(ox_cx *c) {
  size_t n = ox_n_in(c);
  const char *o = ox_out(c, 0), *acc = ox_in(c, 0);
  if (n == 0 || o == NULL || acc == NULL) return ox_unsupported(c, "no input or no output");
  if (n == 1) return ox_unary(c, "assign", acc, o);
  for (size_t k = 1; k < n; k++) {
    const char *x = ox_in(c, k), *to = k + 1 == n ? o : ox_tmp(c);
    if (x == NULL || to == NULL) return ox_unsupported(c, "input %zu is missing", k);
    ct_status s = binary(c, "elementwise_add", acc, x, to);
    if (s != CT_OK) return s;
    acc = to;
  }
  return CT_OK;
}

static ct_status matmul(ox_cx *c) {
  const char *a = NULL, *b = NULL, *o = NULL;
  ct_status s = two_in(c, &a, &b, &o);
  return s == CT_OK ? binary(c, "matmul", a, b, o) : s;
}

/* Gemm (7+): Y = alpha op(A) op(B) + beta C, C broadcast to Y. */
static ct_status gemm(ox_cx *c) {
  const char *a = ox_in(c, 0), *b = ox_in(c, 1), *cc = ox_in(c, 2), *y = ox_out(c, 0);
  if (a == NULL || b == NULL || y == NULL) return ox_unsupported(c, "A, B or Y is missing");
  double alpha = ox_float(c, "alpha", 1.0), beta = ox_float(c, "beta", 1.0);
  const char *prod = cc != NULL || alpha != 1.0 ? ox_tmp(c) : y;
  ct_op *op = ox_op(c, "matmul");
  if (op == NULL || prod == NULL) return ct_last_status();
  ct_status s = in(CT_OK, op, "X", a);
  s = in(s, op, "Y", b);
  s = out(s, op, "Out", prod);
  if (s == CT_OK) s = ct_op_set_attr_bool(op, "transpose_x", ox_int(c, "transA", 0) != 0);
  if (s == CT_OK) s = ct_op_set_attr_bool(op, "transpose_y", ox_int(c, "transB", 0) != 0);
  if (s == CT_OK) s = ox_push(c, op);
  if (s != CT_OK) return s;
  if (alpha != 1.0) {
    const char *scaled = cc != NULL ? ox_tmp(c) : y;
    if (scaled == NULL || (s = scale_to(c, prod, scaled, alpha, 0.0)) != CT_OK) return ct_last_status();
    prod = scaled;
  }
  if (cc == NULL) return CT_OK;
  if (beta != 1.0) {
    const char *scaled = ox_tmp(c);
    if (scaled == NULL || (s = scale_to(c, cc, scaled, beta, 0.0)) != CT_OK) return ct_last_status();
    cc = scaled;
  }
  return binary(c, "elementwise_add", prod, cc, y);
}

static const ox_rule rows[] = {
    {"Add", 1, add, "elementwise_add"},
    {"Sub", 1, sub, "elementwise_sub"},
    {"Mul", 1, mul, "elementwise_mul"},
    {"Div", 1, divide, "elementwise_div"},
    {"Relu", 6, relu, "relu"},
    {"Sigmoid", 6, sigmoid, "sigmoid"},
    {"Tanh", 6, tanh_, "tanh"},
    {"Exp", 6, exp_, "exp"},
    {"Log", 6, log_, "log"},
    {"Identity", 1, identity, "assign"},
    {"Sum", 1, sum, "elementwise_add"},
    {"MatMul", 1, matmul, "matmul"},
    {"Gemm", 1, gemm, "matmul, scale, elementwise_add"},
};

const ox_rules ox_rules_math = {rows, sizeof rows / sizeof rows[0]};
