/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/rules_corten.c: the domain ai.corten (opset 1), which ct_onnx_save writes for corten ops
 * without a standard ONNX equivalent (onnx/export_corten.c gives the encoding). One row, "*",
 * matches every op type of the domain (onnx/onnx_rules.c): the node's op type names a registered
 * corten op type, whose slots take the node's inputs and outputs by the counts in "__in" and
 * "__out", and whose attributes are read by their own types. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "onnx/onnx_conv.h"
#include "onnx/onnx_rules.h"

/* The ints attribute `name` as counts of n slots adding up to total; false when it does not fit. */
static bool counts(const ox_cx *c, const char *name, size_t n, size_t total, const int64_t **v) {
  size_t got = 0;
  if (!ox_ints(c, name, v, &got)) return n == 0 && total == 0;
  if (got != n) return false;
  size_t sum = 0;
  for (size_t k = 0; k < n; k++) {
    if ((*v)[k] < 0 || (uint64_t)(*v)[k] > total) return false;
    sum += (size_t)(*v)[k];
  }
  return sum == total;
}

/* The float64 values of a TENSOR attribute (raw_data): their count, or SIZE_MAX when it is not
 * one. */
static size_t doubles(const ox_attr *a, const uint8_t **v) {
  if (a->type != OX_ATTR_TENSOR || a->t.data_type != OX_DOUBLE || !a->t.has_raw ||
      a->t.raw.n % 8 != 0) {
    return SIZE_MAX;
  }
  *v = a->t.raw.p; /* not aligned: read with memcpy */
  return a->t.raw.n / 8;
}

/* Sets attribute a of the node on op, read as the type's attribute type t. */
static ct_status set_attr(ox_cx *c, ct_op *op, const ox_attr *a, const char *name,
                          ct_attr_type t) {
  const uint8_t *dv = NULL;
  double one = 0;
  size_t nd;
  ct_status s = CT_ERR_UNSUPPORTED;
  switch (t) {
    case CT_ATTR_INT:
      if (a->type == OX_ATTR_INT) s = ct_op_set_attr_int(op, name, a->i);
      break;
    case CT_ATTR_BOOL:
      if (a->type == OX_ATTR_INT) s = ct_op_set_attr_bool(op, name, a->i != 0);
      break;
    case CT_ATTR_STRING:
      if (a->type == OX_ATTR_STRING) s = ct_op_set_attr_string(op, name, ox_string(c, name, ""));
      break;
    case CT_ATTR_INTS:
      if (a->type == OX_ATTR_INTS) s = ct_op_set_attr_ints(op, name, a->ints, a->n_ints);
      break;
    case CT_ATTR_FLOAT:
      if (a->type == OX_ATTR_FLOAT) s = ct_op_set_attr_float(op, name, a->f);
      else if (doubles(a, &dv) == 1 && a->t.rank == 0) {
        memcpy(&one, dv, sizeof one);
        s = ct_op_set_attr_float(op, name, one);
      }
      break;
    case CT_ATTR_FLOATS:
      if (a->type == OX_ATTR_FLOATS) {
        double *f = ct__malloc((a->n_floats ? a->n_floats : 1) * sizeof *f);
        if (f == NULL) return CT_ERR_OUT_OF_MEMORY;
        for (size_t k = 0; k < a->n_floats; k++) f[k] = a->floats[k];
        s = ct_op_set_attr_floats(op, name, f, a->n_floats);
        free(f);
      } else if ((nd = doubles(a, &dv)) != SIZE_MAX && a->t.rank == 1) {
        double *f = ct__malloc((nd ? nd : 1) * sizeof *f); /* raw_data need not be aligned */
        if (f == NULL) return CT_ERR_OUT_OF_MEMORY;
        memcpy(f, dv, nd * sizeof *f);
        s = ct_op_set_attr_floats(op, name, f, nd);
        free(f);
      }
      break;
    default: break;
  }
  if (s == CT_ERR_UNSUPPORTED) {
    return ox_unsupported(c, "attribute '%s' is of ONNX type %d, which does not hold corten's %s",
                          name, a->type, ct_attr_type_name(t));
  }
  return s;
}

/* Wires n names from the node (inputs when in, else outputs) starting at *pos to slot. */
static ct_status wire(ox_cx *c, ct_op *op, const char *slot, bool in, size_t *pos, size_t n) {
  if (n == 0) return CT_OK;
  const char **v = ct__malloc(n * sizeof *v);
  if (v == NULL) return CT_ERR_OUT_OF_MEMORY;
  ct_status s = CT_OK;
  for (size_t k = 0; k < n && s == CT_OK; k++) {
    v[k] = in ? ox_in(c, *pos + k) : ox_out(c, *pos + k);
    if (v[k] == NULL) s = ox_unsupported(c, "slot '%s' names an empty variable", slot);
  }
  if (s == CT_OK) s = in ? ct_op_set_inputs(op, slot, v, n) : ct_op_set_outputs(op, slot, v, n);
  *pos += n;
  free(v);
  return s;
}

static ct_status corten_op(ox_cx *c) {
  char type[128];
  const ox_span t = c->n->op_type;
  if (t.n == 0 || t.n >= sizeof type) return ox_unsupported(c, "an op type name of %zu bytes", t.n);
  memcpy(type, t.p, t.n);
  type[t.n] = '\0';
  ct_op_def d;
  if (ct_op_type_get(type, &d) != CT_OK) {
    return ox_unsupported(c, "no corten op type '%s' is registered in this build", type);
  }
  const int64_t *ic = NULL, *oc = NULL;
  if (!counts(c, "__in", d.n_inputs, ox_n_in(c), &ic) ||
      !counts(c, "__out", d.n_outputs, ox_n_out(c), &oc)) {
    return ox_unsupported(c, "attributes '__in' / '__out' do not give one count per slot of "
                             "'%s' adding up to the node's inputs and outputs", type);
  }
  ct_op *op = ox_op(c, type);
  if (op == NULL) return ct_last_status();
  ct_status s = CT_OK;
  size_t pos = 0;
  for (size_t k = 0; k < d.n_inputs && s == CT_OK; k++) {
    s = wire(c, op, d.inputs[k].name, true, &pos, (size_t)ic[k]);
  }
  pos = 0;
  for (size_t k = 0; k < d.n_outputs && s == CT_OK; k++) {
    s = wire(c, op, d.outputs[k].name, false, &pos, (size_t)oc[k]);
  }
  for (size_t i = 0; i < c->n->n_attr && s == CT_OK; i++) {
    const ox_attr *a = &c->n->attr[i];
    if (ox_eq(a->name, "__in") || ox_eq(a->name, "__out")) continue;
    size_t k = 0;
    while (k < d.n_attrs && !ox_eq(a->name, d.attrs[k].name)) k++;
    if (k == d.n_attrs) {
      return ox_unsupported(c, "attribute '%.*s' is not one of corten op type '%s'",
                            (int)a->name.n, (const char *)a->name.p, type);
    }
    s = set_attr(c, op, a, d.attrs[k].name, d.attrs[k].value.type);
  }
  return s == CT_OK ? ox_push(c, op) : s;
}

static const ox_rule rows[] = {
    {"*", 1, corten_op, NULL},
};

const ox_rules ox_rules_corten = {rows, sizeof rows / sizeof rows[0]};
