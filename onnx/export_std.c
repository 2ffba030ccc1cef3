/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/export_std.c: corten op types written as standard ONNX (opset 17). A row maps a corten
 * type onto one ONNX op: the slots that become its inputs and outputs in order, and the
 * attributes copied over (under ONNX's name). An op goes this way only when the import rule of
 * that ONNX op (onnx/rules_*.c) makes the same op back: every listed slot holds exactly one name
 * (a slot flagged `many` any number, at least one), every other slot is unwired, and every
 * attribute not copied holds its type's default. Anything else goes to ai.corten
 * (onnx/export_corten.c), so the choice never changes what a loaded program computes.
 * A row with `shape_in` writes the ints attribute named there as a constant int64 input
 * (Reshape's shape), which the import reads back into the same attribute. */
#include <stdio.h>
#include <string.h>

#include "onnx/onnx_save.h"

enum { COPY_INT = 1, COPY_INTS, COPY_DTYPE };

typedef struct copy {
  const char *corten, *onnx;
  int kind;
} copy;

/* An ONNX input: the corten slot wired to it, or, when that slot is unwired (or NULL), the ints
 * attribute `attr` written as a constant int64 input (left out when the attribute is empty and
 * the input optional; an optional slot without `attr` is left out when unwired). */
typedef struct arg {
  const char *slot, *attr;
  bool optional;
} arg;

typedef struct row {
  const char *type, *onnx;
  arg in[5];
  const char *out[1];
  bool many;            /* the first input slot takes any number of names */
  copy attrs[3];
} row;

#define UN(t, o) {t, o, {{"X", NULL, false}}, {"Out"}, false, {{0}}}
#define BIN(t, o) {t, o, {{"X", NULL, false}, {"Y", NULL, false}}, {"Out"}, false, {{0}}}
#define INT(c, o) {c, o, COPY_INT}
#define S(slot) {slot, NULL, false}
#define A(slot, attr) {slot, attr, false}
#define NONE {{0}}

static const row rows[] = {
    UN("relu", "Relu"), UN("sigmoid", "Sigmoid"), UN("tanh", "Tanh"), UN("exp", "Exp"),
    UN("log", "Log"), UN("assign", "Identity"), UN("sqrt", "Sqrt"), UN("abs", "Abs"),
    UN("neg", "Neg"), UN("reciprocal", "Reciprocal"), UN("floor", "Floor"), UN("ceil", "Ceil"),
    UN("erf", "Erf"), UN("sin", "Sin"), UN("cos", "Cos"),
    BIN("elementwise_add", "Add"), BIN("elementwise_sub", "Sub"), BIN("elementwise_mul", "Mul"),
    BIN("elementwise_div", "Div"), BIN("matmul", "MatMul"), BIN("elementwise_pow", "Pow"),
    {"softmax", "Softmax", {S("X")}, {"Out"}, false, {INT("axis", "axis")}},
    {"flatten", "Flatten", {S("X")}, {"Out"}, false, {INT("axis", "axis")}},
    {"transpose", "Transpose", {S("X")}, {"Out"}, false, {{"axis", "perm", COPY_INTS}}},
    {"concat", "Concat", {S("X")}, {"Out"}, true, {INT("axis", "axis")}},
    {"gather", "Gather", {S("X"), S("Index")}, {"Out"}, false, {INT("axis", "axis")}},
    {"shape", "Shape", {S("Input")}, {"Out"}, false, {INT("start", "start"), INT("end", "end")}},
    {"cast", "Cast", {S("X")}, {"Out"}, false, {{"dtype", "to", COPY_DTYPE}}},
    {"quantize_linear", "QuantizeLinear", {S("X"), S("Scale"), {"ZeroPoint", NULL, true}}, {"Y"},
     false, {INT("axis", "axis")}},
    {"dequantize_linear", "DequantizeLinear", {S("X"), S("Scale"), {"ZeroPoint", NULL, true}},
     {"Y"}, false, {INT("axis", "axis")}},
    {"reshape", "Reshape", {S("X"), A("Shape", "shape")}, {"Out"}, false, NONE},
    {"unsqueeze", "Unsqueeze", {S("X"), A("AxesTensor", "axes")}, {"Out"}, false, NONE},
    {"squeeze", "Squeeze", {S("X"), A("AxesTensor", "axes")}, {"Out"}, false, NONE},
    {"expand", "Expand", {S("X"), A("Shape", "shape")}, {"Out"}, false, NONE},
    {"tile", "Tile", {S("X"), A("RepeatTimes", "repeat_times")}, {"Out"}, false, NONE},
    {"strided_slice", "Slice",
     {{"Input", NULL, false}, {"StartsTensor", "starts", false}, {"EndsTensor", "ends", false},
      {"AxesTensor", "axes", true}, {"StridesTensor", "strides", true}},
     {"Out"}, false, {{0}}},
};

#define N_ROWS (sizeof rows / sizeof rows[0])

static int slot_index(const ct_slot_def *slots, size_t n, const char *name) {
  for (size_t k = 0; k < n; k++) {
    if (strcmp(slots[k].name, name) == 0) return (int)k;
  }
  return -1;
}

static int attr_index(const ex_def *d, const char *name) {
  for (size_t a = 0; a < d->n_attr; a++) {
    if (strcmp(d->attr[a].name, name) == 0) return (int)a;
  }
  return -1;
}

static bool same_value(const ct_attr_value *a, const ct_attr_value *b) {
  if (a->type != b->type) return false;
  switch (a->type) {
    case CT_ATTR_INT: return a->u.i == b->u.i;
    case CT_ATTR_BOOL: return a->u.b == b->u.b;
    case CT_ATTR_FLOAT: return memcmp(&a->u.f, &b->u.f, sizeof a->u.f) == 0;
    case CT_ATTR_STRING:
      return (a->u.s == NULL) == (b->u.s == NULL) && (a->u.s == NULL || !strcmp(a->u.s, b->u.s));
    case CT_ATTR_INTS:
      return a->u.ints.n == b->u.ints.n &&
             (a->u.ints.n == 0 || !memcmp(a->u.ints.v, b->u.ints.v, a->u.ints.n * 8));
    case CT_ATTR_FLOATS:
      return a->u.floats.n == b->u.floats.n &&
             (a->u.floats.n == 0 || !memcmp(a->u.floats.v, b->u.floats.v, a->u.floats.n * 8));
    default: return false;
  }
}

bool ex_attrs_default(const ex_op *op, const bool *used) {
  for (size_t a = 0; a < op->def->n_attr; a++) {
    if (!used[a] && !same_value(&op->attr[a], &op->def->attr[a].value)) return false;
  }
  return true;
}

/* How input k of row r is written: 1 the slot's names, 2 a constant of the attribute, 0 left
 * out; -1 when op does not fit. */
static int arg_kind(const row *r, size_t k, const ex_op *op, bool *used_slot, bool *used_attr) {
  const ex_def *d = op->def;
  const arg *g = &r->in[k];
  int si = slot_index(d->in, d->n_in, g->slot);
  if (si < 0) return -1;
  size_t n = op->in[si].n;
  if (n > 0) {
    if (!(n == 1 || (r->many && k == 0 && n <= 64))) return -1;
    used_slot[si] = true;
    return 1;
  }
  if (g->attr == NULL) return g->optional ? 0 : -1; /* an optional input left out */
  int ai = attr_index(d, g->attr);
  if (ai < 0 || op->attr[ai].type != CT_ATTR_INTS) return -1;
  if (op->attr[ai].u.ints.n > 0) {
    used_attr[ai] = true;
    return 2;
  }
  return g->optional ? 0 : -1; /* left out: the default (checked with the others) */
}

/* Whether op fits row r exactly (see the top). */
static bool fits(const row *r, const ex_op *op) {
  const ex_def *d = op->def;
  bool used_slot[64] = {false}, used_attr[64] = {false};
  for (size_t k = 0; k < 5 && r->in[k].slot != NULL; k++) {
    if (arg_kind(r, k, op, used_slot, used_attr) < 0) return false;
  }
  for (size_t s = 0; s < d->n_in; s++) {
    if (!used_slot[s] && op->in[s].n != 0) return false;
  }
  for (size_t s = 0; s < d->n_out; s++) {
    bool out = strcmp(d->out[s].name, r->out[0]) == 0;
    if (out ? op->out[s].n != 1 : op->out[s].n != 0) return false;
  }
  for (size_t k = 0; k < 3 && r->attrs[k].corten != NULL; k++) {
    int ai = attr_index(d, r->attrs[k].corten);
    if (ai < 0) return false;
    ct_attr_type want = r->attrs[k].kind == COPY_INTS ? CT_ATTR_INTS : CT_ATTR_INT;
    if (op->attr[ai].type != want) return false;
    if (r->attrs[k].kind == COPY_DTYPE && ex_onnx_dtype((ct_dtype)op->attr[ai].u.i) == 0) {
      return false;
    }
    used_attr[ai] = true;
  }
  return ex_attrs_default(op, used_attr);
}

ct_status ex_standard(ex_cx *x, const ex_op *op, bool *done) {
  *done = false;
  const row *r = NULL;
  for (size_t i = 0; i < N_ROWS && r == NULL; i++) {
    if (strcmp(rows[i].type, op->def->type) == 0) r = &rows[i];
  }
  if (r == NULL || !fits(r, op)) return ex_nn(x, op, done);
  const ex_def *d = op->def;
  const char *in[70];
  char consts[5][64];
  size_t n_in = 0, kept = 0;
  int so = slot_index(d->out, d->n_out, r->out[0]);
  const char *out = op->out[so].names[0];
  bool used_slot[64] = {false}, used_attr[64] = {false};
  for (size_t k = 0; k < 5 && r->in[k].slot != NULL; k++) {
    int kind = arg_kind(r, k, op, used_slot, used_attr);
    if (kind == 1) {
      const ex_wiring *w = &op->in[slot_index(d->in, d->n_in, r->in[k].slot)];
      for (size_t i = 0; i < w->n; i++) in[n_in++] = w->names[i];
      kept = n_in;
    } else if (kind == 2) {
      const ct_attr_value *v = &op->attr[attr_index(d, r->in[k].attr)];
      snprintf(consts[k], sizeof consts[k], "%s", ex_const_ints(x, out, v->u.ints.v, v->u.ints.n));
      in[n_in++] = consts[k];
      kept = n_in;
    } else {
      in[n_in++] = "";
    }
  }
  ex_node nd;
  ex_node_begin(&nd, x, r->onnx, NULL, in, kept, &out, 1);
  for (size_t k = 0; k < 3 && r->attrs[k].corten != NULL; k++) {
    const ct_attr_value *v = &op->attr[attr_index(d, r->attrs[k].corten)];
    if (r->attrs[k].kind == COPY_INT) ex_attr_int(&nd, r->attrs[k].onnx, v->u.i);
    else if (r->attrs[k].kind == COPY_DTYPE) {
      ex_attr_int(&nd, r->attrs[k].onnx, ex_onnx_dtype((ct_dtype)v->u.i));
    }
    else if (v->u.ints.n > 0) ex_attr_ints(&nd, r->attrs[k].onnx, v->u.ints.v, v->u.ints.n);
    /* an empty list left out: ONNX's default (transpose's empty axis and Transpose's absent
     * perm both reverse the dims) */
  }
  ex_node_end(&nd);
  *done = true;
  return CT_OK;
}
