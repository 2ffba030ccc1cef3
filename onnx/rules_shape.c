/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/rules_shape.c: the rules of ONNX's ops that move or retype elements: Reshape, Flatten,
 * Transpose, Concat, Cast and Gather. */
#include <string.h>

#include "onnx/onnx_conv.h"
#include "onnx/onnx_rules.h"

/* reshape(X) -> Out with attribute shape. */
static ct_status reshape_to(ox_cx *c, const char *x, const char *o, const int64_t *shape,
                            size_t n) {
  ct_op *op = ox_op(c, "reshape");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", o);
  if (s == CT_OK) s = ct_op_set_attr_ints(op, "shape", shape, n);
  return s == CT_OK ? ox_push(c, op) : s;
}

/* Reshape (5+): a constant shape becomes the attribute (ONNX's 0 and -1 mean what corten's do);
 * one computed at run time is wired to reshape's input Shape. allowzero 1 (14) keeps a 0 as an
 * extent of 0: reshape's attribute allowzero, set only when it matters. */
static ct_status reshape(ox_cx *c) {
  const char *x = ox_in(c, 0), *o = ox_out(c, 0);
  const int64_t *shape;
  size_t n;
  if (x == NULL || ox_in(c, 1) == NULL || o == NULL) return ox_unsupported(c, "an input or the output is missing");
  bool allowzero = ox_int(c, "allowzero", 0) != 0, constant = ox_const_ints(c, 1, &shape, &n);
  bool has_zero = false;
  for (size_t i = 0; constant && i < n; i++) has_zero = has_zero || shape[i] == 0;
  if (!constant || (allowzero && has_zero)) {
    ct_op *op = ox_op(c, "reshape");
    if (op == NULL) return ct_last_status();
    ct_status s = ct_op_set_input(op, "X", x);
    if (s == CT_OK && constant) s = ct_op_set_attr_ints(op, "shape", shape, n);
    if (s == CT_OK && !constant) s = ct_op_set_input(op, "Shape", ox_in(c, 1));
    if (s == CT_OK) s = ct_op_set_output(op, "Out", o);
    if (s == CT_OK && allowzero) s = ct_op_set_attr_bool(op, "allowzero", true);
    return s == CT_OK ? ox_push(c, op) : s;
  }
  return reshape_to(c, x, o, shape, n);
}

/* Flatten: [d0 .. d(axis-1) | the rest] as two dims (corten's flatten, any axis). */
static ct_status flatten(ox_cx *c) {
  const char *x = ox_in(c, 0), *o = ox_out(c, 0);
  if (x == NULL || o == NULL) return ox_unsupported(c, "the input or the output is missing");
  ct_op *op = ox_op(c, "flatten");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", o);
  if (s == CT_OK) s = ct_op_set_attr_int(op, "axis", ox_int(c, "axis", 1));
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status transpose(ox_cx *c) {
  const char *x = ox_in(c, 0), *o = ox_out(c, 0);
  const int64_t *perm;
  size_t n;
  if (x == NULL || o == NULL) return ox_unsupported(c, "the input or the output is missing");
  if (!ox_ints(c, "perm", &perm, &n)) {
    /* No perm: the dims reversed, transpose's empty axis (the rank read when it runs). */
    perm = NULL;
    n = 0;
  }
  ct_op *op = ox_op(c, "transpose");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", o);
  if (s == CT_OK) s = ct_op_set_attr_ints(op, "axis", perm, n);
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status concat(ox_cx *c) {
  const char *o = ox_out(c, 0);
  size_t n = ox_n_in(c);
  if (o == NULL || n == 0) return ox_unsupported(c, "no input or no output");
  if (ox_attr_get(c, "axis") == NULL) return ox_unsupported(c, "no axis");
  ct_op *op = ox_op(c, "concat");
  if (op == NULL) return ct_last_status();
  ct_status s = CT_OK;
  const char *names[64];
  if (n > 64) return ox_unsupported(c, "more than 64 inputs");
  for (size_t k = 0; k < n; k++) {
    names[k] = ox_in(c, k);
    if (names[k] == NULL) return ox_unsupported(c, "input %zu is missing", k);
  }
  s = ct_op_set_inputs(op, "X", names, n);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", o);
  if (s == CT_OK) s = ct_op_set_attr_int(op, "axis", ox_int(c, "axis", 0));
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status cast(ox_cx *c) {
  const char *x = ox_in(c, 0), *o = ox_out(c, 0);
  if (x == NULL || o == NULL) return ox_unsupported(c, "the input or the output is missing");
  ct_dtype dt = ox_attr_dtype(c, "to", 0);
  if (dt == CT_DTYPE_UNDEFINED) {
    return ox_unsupported(c, "to %s (corten has no tensor of it)", ox_type_name((int32_t)ox_int(c, "to", 0)));
  }
  ct_op *op = ox_op(c, "cast");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", o);
  if (s == CT_OK) s = ct_op_set_attr_int(op, "dtype", (int64_t)dt);
  return s == CT_OK ? ox_push(c, op) : s;
}

/* Gather: numpy's take along axis (negative indices count from the end). */
static ct_status gather(ox_cx *c) {
  const char *data = ox_in(c, 0), *idx = ox_in(c, 1), *o = ox_out(c, 0);
  if (data == NULL || idx == NULL || o == NULL) {
    return ox_unsupported(c, "an input or the output is missing");
  }
  ct_op *op = ox_op(c, "gather");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", data);
  if (s == CT_OK) s = ct_op_set_input(op, "Index", idx);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", o);
  if (s == CT_OK) s = ct_op_set_attr_int(op, "axis", ox_int(c, "axis", 0));
  return s == CT_OK ? ox_push(c, op) : s;
}

static const ox_rule rows[] = {
    {"Reshape", 5, reshape, "reshape"},
    {"Flatten", 1, flatten, "flatten"},
    {"Transpose", 1, transpose, "transpose"},
    {"Concat", 4, concat, "concat"},
    {"Cast", 6, cast, "cast"},
    {"Gather", 1, gather, "gather"},
};

const ox_rules ox_rules_shape = {rows, sizeof rows / sizeof rows[0]};
