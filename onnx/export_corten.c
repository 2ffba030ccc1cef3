/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/export_corten.c: any corten op as a node of the domain ai.corten (opset 1), which
 * onnx/rules_corten.c imports back into the same op:
 *   - op_type is the corten type name;
 *   - the inputs are the names of every input slot in the type's slot order, the outputs
 *     likewise; the INTS attributes "__in" and "__out" give how many names each slot holds
 *     (0 for an unwired optional slot), so slots of many variables and left-out slots survive;
 *   - every attribute of the type, under its own name: int as INT, bool as INT (0 or 1), string
 *     as STRING, ints as INTS; a float (a double in corten) as FLOAT when float32 holds it
 *     exactly, else as a scalar float64 TENSOR; floats likewise (FLOATS, or a float64 TENSOR of
 *     dims [n]). The importer reads each by the type's own attribute type, so nothing is lost.
 * A program attribute (the body of a control-flow op) is refused: corten does not write nested
 * graphs. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/common.h"
#include "onnx/onnx_save.h"

/* Whether float32 holds every one of the n doubles exactly (NaN never: its payload may not). */
static bool exact_f32(const double *v, size_t n) {
  for (size_t k = 0; k < n; k++) {
    float f = (float)v[k];
    if (v[k] != v[k] || (double)f != v[k]) return false;
  }
  return true;
}

static ct_status attr(ex_node *nd, const char *name, const ct_attr_value *v) {
  switch (v->type) {
    case CT_ATTR_INT: ex_attr_int(nd, name, v->u.i); break;
    case CT_ATTR_BOOL: ex_attr_int(nd, name, v->u.b ? 1 : 0); break;
    case CT_ATTR_STRING: ex_attr_str(nd, name, v->u.s ? v->u.s : ""); break;
    case CT_ATTR_INTS: ex_attr_ints(nd, name, v->u.ints.v, v->u.ints.n); break;
    case CT_ATTR_FLOAT:
      if (exact_f32(&v->u.f, 1)) ex_attr_float(nd, name, (float)v->u.f);
      else ex_attr_doubles(nd, name, &v->u.f, 1, true);
      break;
    case CT_ATTR_FLOATS: {
      size_t n = v->u.floats.n;
      if (!exact_f32(v->u.floats.v, n)) {
        ex_attr_doubles(nd, name, v->u.floats.v, n, false);
        break;
      }
      float *f = ct__malloc((n ? n : 1) * sizeof *f);
      if (f == NULL) return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_onnx_save: out of host memory");
      for (size_t k = 0; k < n; k++) f[k] = (float)v->u.floats.v[k];
      ex_attr_floats(nd, name, f, n);
      free(f);
      break;
    }
    default: return CT_ERR_UNSUPPORTED;
  }
  return CT_OK;
}

/* The names wired to every slot of one side, in slot order, and the count of each slot. */
static ct_status flatten(const ex_wiring *w, size_t n_slots, const char ***names, size_t *n,
                         int64_t **counts) {
  size_t total = 0;
  for (size_t s = 0; s < n_slots; s++) total += w[s].n;
  *names = ct__malloc((total ? total : 1) * sizeof **names);
  *counts = ct__malloc((n_slots ? n_slots : 1) * sizeof **counts);
  if (*names == NULL || *counts == NULL) {
    free(*names);
    free(*counts);
    return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_onnx_save: out of host memory");
  }
  *n = 0;
  for (size_t s = 0; s < n_slots; s++) {
    (*counts)[s] = (int64_t)w[s].n;
    for (size_t k = 0; k < w[s].n; k++) (*names)[(*n)++] = w[s].names[k];
  }
  return CT_OK;
}

ct_status ex_corten(ex_cx *x, const ex_op *op, size_t index) {
  const ex_def *d = op->def;
  for (size_t a = 0; a < d->n_attr; a++) {
    if (d->attr[a].value.type == CT_ATTR_PROGRAM) {
      return ct__error(CT_ERR_UNSUPPORTED,
                       "ct_onnx_save: op %zu ('%s') has the program attribute '%s'; corten does "
                       "not export nested programs (control flow) to ONNX",
                       index, d->type, d->attr[a].name);
    }
  }
  const char **in = NULL, **out = NULL;
  int64_t *in_counts = NULL, *out_counts = NULL;
  size_t n_in = 0, n_out = 0;
  ct_status s = flatten(op->in, d->n_in, &in, &n_in, &in_counts);
  if (s != CT_OK) return s;
  s = flatten(op->out, d->n_out, &out, &n_out, &out_counts);
  if (s != CT_OK) {
    free(in);
    free(in_counts);
    return s;
  }
  ex_node nd;
  ex_node_begin(&nd, x, d->type, "ai.corten", in, n_in, out, n_out);
  ex_attr_ints(&nd, "__in", in_counts, d->n_in);
  ex_attr_ints(&nd, "__out", out_counts, d->n_out);
  for (size_t a = 0; a < d->n_attr && s == CT_OK; a++) s = attr(&nd, d->attr[a].name, &op->attr[a]);
  if (s == CT_OK) ex_node_end(&nd);
  else pbw_free(&nd.body);
  free(in);
  free(out);
  free(in_counts);
  free(out_counts);
  return s;
}
