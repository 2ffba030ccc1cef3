/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/rules_quant.c: the rules of ONNX's QuantizeLinear and DequantizeLinear (opsets 10 and
 * 13; 13 adds per-axis scales and the `axis` attribute, default 1, which opset 10's per-tensor
 * scale never reads): one op each of corten's quant family (ops/defs/quant.h), which takes
 * ONNX's inputs in ONNX's order (the zero point optional) and checks their dtypes and dims when
 * it runs, so scales and zero points may be computed at run time (DynamicQuantizeLinear's
 * function computes both). */
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

static const ox_rule rows[] = {
    {"QuantizeLinear", 10, quantize, "quantize_linear"},
    {"DequantizeLinear", 10, dequantize, "dequantize_linear"},
};

const ox_rules ox_rules_quant = {rows, sizeof rows / sizeof rows[0]};
