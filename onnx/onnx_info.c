/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/onnx_info.c: ct_onnx_describe and ct_onnx_op_types (corten/onnx.h): what a model file
 * holds, read without importing it, and what corten cannot import of it (an import into a
 * scratch scope decides, so the answer is the importer's own). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/onnx.h>
#include <corten/scope.h>

#include "common/alloc.h"
#include "onnx/onnx_conv.h"

/* The model at path, parsed (f and m to release with ox_unmap and ox_model_free). */
static ct_status open_model(const char *path, const char *fn, ox_file *f, ox_model *m) {
  char what[600];
  if (path == NULL) return ct__error(CT_ERR_INVALID_ARGUMENT, "%s: the path is NULL", fn);
  snprintf(what, sizeof what, "%s: '%.500s'", fn, path);
  ct_status s = ox_map(path, what, f);
  if (s != CT_OK) return s;
  s = ox_parse(f->data, f->size, what, m);
  if (s != CT_OK) ox_unmap(f);
  return s;
}

/* The distinct op types of m in first-use order (indices into m->nodes) and their counts. */
static size_t distinct_ops(const ox_model *m, size_t *first, size_t *count) {
  size_t n = 0;
  for (size_t i = 0; i < m->n_nodes; i++) {
    size_t k = 0;
    while (k < n && !(m->nodes[first[k]].op_type.n == m->nodes[i].op_type.n &&
                      memcmp(m->nodes[first[k]].op_type.p, m->nodes[i].op_type.p,
                             m->nodes[i].op_type.n) == 0)) {
      k++;
    }
    if (k == n) {
      first[n] = i;
      count[n++] = 0;
    }
    count[k]++;
  }
  return n;
}

ct_status ct_onnx_op_types(const char *path, char *buf, size_t cap) {
  if (buf == NULL || cap == 0) return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_onnx_op_types: no buffer");
  buf[0] = '\0';
  ox_file f;
  ox_model m;
  ct_status s = open_model(path, "ct_onnx_op_types", &f, &m);
  if (s != CT_OK) return s;
  size_t *first = ct__calloc(m.n_nodes + 1, sizeof *first), *count = ct__calloc(m.n_nodes + 1, sizeof *count);
  if (first == NULL || count == NULL) {
    s = ct__error(CT_ERR_OUT_OF_MEMORY, "ct_onnx_op_types: out of host memory");
  } else {
    size_t n = distinct_ops(&m, first, count), pos = 0;
    for (size_t k = 0; k < n && pos + 1 < cap; k++) {
      const ox_span *t = &m.nodes[first[k]].op_type;
      int w = snprintf(buf + pos, cap - pos, "%s%.*s", k ? "," : "", (int)t->n, (const char *)t->p);
      if (w > 0) pos += (size_t)w;
    }
  }
  free(first);
  free(count);
  ox_model_free(&m);
  ox_unmap(&f);
  return s;
}

static void print_dims(FILE *out, int rank, const int64_t *dims) {
  if (rank < 0) {
    fputs("(no shape)", out);
    return;
  }
  fputc('[', out);
  for (int k = 0; k < rank; k++) {
    if (dims[k] < 0) fprintf(out, "%sN", k ? "," : "");
    else fprintf(out, "%s%lld", k ? "," : "", (long long)dims[k]);
  }
  fputc(']', out);
}

static void print_values(FILE *out, const char *title, const ox_value *v, size_t n,
                         const ox_model *m, bool skip_inits) {
  fprintf(out, "%s:\n", title);
  for (size_t i = 0; i < n; i++) {
    bool init = false;
    for (size_t j = 0; skip_inits && j < m->n_inits && !init; j++) {
      init = m->inits[j].name.n == v[i].name.n &&
             memcmp(m->inits[j].name.p, v[i].name.p, v[i].name.n) == 0;
    }
    if (init) continue;
    fprintf(out, "  %.*s\t%s\t", (int)v[i].name.n, (const char *)v[i].name.p,
            ox_type_name(v[i].elem_type));
    print_dims(out, v[i].rank, v[i].dims);
    fputc('\n', out);
  }
}

ct_status ct_onnx_describe(const char *path, FILE *out) {
  if (out == NULL) return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_onnx_describe: out is NULL");
  ox_file f;
  ox_model m;
  ct_status s = open_model(path, "ct_onnx_describe", &f, &m);
  if (s != CT_OK) return s;
  long long opset = 0;
  for (size_t i = 0; i < m.n_opsets; i++) {
    if (m.opsets[i].domain.n == 0 || ox_eq(m.opsets[i].domain, "ai.onnx")) opset = m.opsets[i].version;
  }
  fprintf(out, "model: %s\nir_version: %lld\nopset: %lld\n", path, (long long)m.ir_version, opset);
  print_values(out, "inputs", m.inputs, m.n_inputs, &m, true);
  print_values(out, "outputs", m.outputs, m.n_outputs, &m, false);
  size_t *first = ct__calloc(m.n_nodes + 1, sizeof *first), *count = ct__calloc(m.n_nodes + 1, sizeof *count);
  if (first != NULL && count != NULL) {
    size_t n = distinct_ops(&m, first, count);
    fprintf(out, "nodes: %zu, op types: %zu\n", m.n_nodes, n);
    for (size_t k = 0; k < n; k++) {
      const ox_span *t = &m.nodes[first[k]].op_type;
      fprintf(out, "  %.*s\t%zu\n", (int)t->n, (const char *)t->p, count[k]);
    }
  }
  free(first);
  free(count);
  size_t bytes = 0;
  for (size_t i = 0; i < m.n_inits; i++) {
    const ox_tensor *t = &m.inits[i];
    int64_t numel = ox_numel(t);
    ct_dtype dt = ox_dtype(t->data_type);
    if (numel > 0 && dt != CT_DTYPE_UNDEFINED) bytes += (size_t)numel * ct_dtype_size(dt);
  }
  fprintf(out, "initializers: %zu, %zu bytes\n", m.n_inits, bytes);
  ox_model_free(&m);
  ox_unmap(&f);
  /* What the importer says: a load into a scratch scope. */
  ct_scope *scratch = ct_scope_new();
  ct_onnx_model *om = scratch ? ct_onnx_load(path, scratch) : NULL;
  if (om != NULL) fprintf(out, "corten: imports every node (%zu ops)\n", ct_program_size(ct_onnx_program(om)));
  else fprintf(out, "corten: cannot import it: %s\n", ct_last_error());
  ct_onnx_free(om);
  ct_scope_free(scratch);
  return CT_OK;
}
