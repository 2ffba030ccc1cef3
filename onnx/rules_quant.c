/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/rules_quant.c: the rules of ONNX's QuantizeLinear and DequantizeLinear (opsets 10 and
 * 13; 13 adds per-axis scales and the `axis` attribute, default 1, which opset 10's per-tensor
 * scale never reads), MatMulInteger, QLinearMatMul (opset 10) and DynamicQuantizeLinear
 * (opset 11): one op each of corten's quant family (ops/defs/quant.h), which takes ONNX's
 * inputs in ONNX's order (the zero points optional) and checks their dtypes and dims when it
 * runs, so scales and zero points may be computed at run time (DynamicQuantizeLinear computes
 * both). */
#include "onnx/onnx_rules.h"

static ct_status linear(ox_cx *c, const char *type) {
  if (ox_in(c, 0) == NULL || ox_in(c, 1) == NULL) {
    return ox_unsupported(c, "input 0 or 1 (the values or the scale) is missing");
  }
  if (ox_out(c, 0) == NULL) return ox_unsupported(c, "output 0 is missing");
  ct_op *op = ox_op(c, type);
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", ox_in(c, 0));
  if (s == CT_OK) s = ct_op_set_input(op, "Scale", ox_in(c, 1));
  if (s == CT_OK && ox_in(c, 2) != NULL) s = ct_op_set_input(op, "ZeroPoint", ox_in(c, 2));
  if (s == CT_OK) s = ct_op_set_output(op, "Y", ox_out(c, 0));
  if (s == CT_OK) s = ct_op_set_attr_int(op, "axis", ox_int(c, "axis", 1));
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status quantize(ox_cx *c) { return linear(c, "quantize_linear"); }
static ct_status dequantize(ox_cx *c) { return linear(c, "dequantize_linear"); }

/* Slot `slot` of op wired to ONNX input k when the node gives it. */
/* MatMulInteger (A, B, a_zero_point, b_zero_point) and QLinearMatMul (a, a_scale,
 * a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point): ONNX's inputs in ONNX's
 * order onto the slots of the same order. */
static ct_status product(ox_cx *c, const char *type, const char *const *slots, size_t n,
                         const size_t *required, size_t n_required) {
  ct_op *op = ox_op_wired(c, type, slots, n, required, n_required, "Out");
  return op != NULL ? ox_push(c, op) : ct_last_status();
}

static ct_status matmul_integer(ox_cx *c) {
  static const char *const slots[] = {"X", "Y", "XZeroPoint", "YZeroPoint"};
  static const size_t required[] = {0, 1};
  return product(c, "matmul_integer", slots, 4, required, 2);
}

static ct_status qlinear_matmul(ox_cx *c) {
  static const char *const slots[] = {"X", "XScale", "XZeroPoint", "Y", "YScale", "YZeroPoint",
                                      "OutScale", "OutZeroPoint"};
  static const size_t required[] = {0, 1, 3, 4, 6};
  return product(c, "qlinear_matmul", slots, 8, required, 5);
}

/* DynamicQuantizeLinear: x -> y, y_scale, y_zero_point (an output the node leaves out gets a
 * name of the importer's). */
static ct_status dynamic_quantize(ox_cx *c) {
  if (ox_in(c, 0) == NULL) return ox_unsupported(c, "input 0 (x) is missing");
  ct_op *op = ox_op(c, "dynamic_quantize_linear");
  if (op == NULL) return ct_last_status();
  static const char *const outs[] = {"Y", "YScale", "YZeroPoint"};
  ct_status s = ct_op_set_input(op, "X", ox_in(c, 0));
  for (size_t k = 0; k < 3 && s == CT_OK; k++) {
    const char *name = ox_out(c, k) != NULL ? ox_out(c, k) : ox_tmp(c);
    s = name != NULL ? ct_op_set_output(op, outs[k], name) : ct_last_status();
  }
  return s == CT_OK ? ox_push(c, op) : s;
}

static const ox_rule rows[] = {
    {"QuantizeLinear", 10, quantize, "quantize_linear"},
    {"DequantizeLinear", 10, dequantize, "dequantize_linear"},
    {"MatMulInteger", 10, matmul_integer, "matmul_integer"},
    {"QLinearMatMul", 10, qlinear_matmul, "qlinear_matmul"},
    {"DynamicQuantizeLinear", 11, dynamic_quantize, "dynamic_quantize_linear"},
};

const ox_rules ox_rules_quant = {rows, sizeof rows / sizeof rows[0]};
