/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/rules_shape.c: the rules of ONNX's ops that move or retype elements: Reshape, Flatten,
 * Transpose, Concat, Cast, and Gather as an embedding look-up. */
#include <string.h>

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

/* Reshape (5+): a constant shape becomes the attribute (ONNX's 0 and -1 mean what corten's do). */
static ct_status reshape(ox_cx *c) {
  const char *x = ox_in(c, 0), *o = ox_out(c, 0);
  const int64_t *shape;
  size_t n;
  if (x == NULL || ox_in(c, 1) == NULL || o == NULL) return ox_unsupported(c, "an input or the output is missing");
  if (!ox_const_ints(c, 1, &shape, &n)) return ox_unsupported(c, "input 'shape' is computed at run time");
  if (ox_int(c, "allowzero", 0) != 0) {
    for (size_t i = 0; i < n; i++) {
      if (shape[i] == 0) return ox_unsupported(c, "allowzero 1 with a 0 in the shape");
    }
  }
  return reshape_to(c, x, o, shape, n);
}

/* Flatten: [d0 .. d(axis-1) | the rest] as two dims; axis 0 and 1 need no rank. */
static ct_status flatten(ox_cx *c) {
  const char *x = ox_in(c, 0), *o = ox_out(c, 0);
  int64_t axis = ox_int(c, "axis", 1);
  if (x == NULL || o == NULL) return ox_unsupported(c, "the input or the output is missing");
  static const int64_t a0[] = {1, -1}, a1[] = {0, -1};
  if (axis == 0) return reshape_to(c, x, o, a0, 2);
  if (axis == 1) return reshape_to(c, x, o, a1, 2);
  return ox_unsupported(c, "axis %lld (0 and 1 are supported)", (long long)axis);
}

static ct_status transpose(ox_cx *c) {
  const char *x = ox_in(c, 0), *o = ox_out(c, 0);
  const int64_t *perm;
  size_t n;
  if (x == NULL || o == NULL) return ox_unsupported(c, "the input or the output is missing");
  if (!ox_ints(c, "perm", &perm, &n)) return ox_unsupported(c, "no perm (the reversed dims)");
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

/* Gather along axis 0 of a constant 2-D table: an embedding look-up. */
static ct_status gather(ox_cx *c) {
  const char *data = ox_in(c, 0), *idx = ox_in(c, 1), *o = ox_out(c, 0);
  if (data == NULL || idx == NULL || o == NULL) return ox_unsupported(c, "an input or the output is missing");
  if (ox_int(c, "axis", 0) != 0) return ox_unsupported(c, "axis other than 0");
  if (!ox_is_const(c, 0)) return ox_unsupported(c, "data computed at run time");
  ct_op *op = ox_op(c, "lookup_table_v2");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "W", data);
  if (s == CT_OK) s = ct_op_set_input(op, "Ids", idx);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", o);
  return s == CT_OK ? ox_push(c, op) : s;
}

static const ox_rule rows[] = {
    {"Reshape", 5, reshape, "reshape"},
    {"Flatten", 1, flatten, "reshape"},
    {"Transpose", 1, transpose, "transpose"},
    {"Concat", 4, concat, "concat"},
    {"Cast", 6, cast, "cast"},
    {"Gather", 1, gather, "lookup_table_v2"},
};

const ox_rules ox_rules_shape = {rows, sizeof rows / sizeof rows[0]};
