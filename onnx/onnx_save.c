/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/onnx_save.c: ct_onnx_save. The program's ops in order become nodes (onnx/export_std.c or
 * onnx/export_corten.c); a variable an op reads before any op of the program has written it,
 * and that is not one of `inputs`, is an initializer holding the scope's tensor (raw_data, little
 * endian); `inputs` are graph inputs of their tensors' dtypes and dims (a negative or unset extent
 * symbolic), `outputs` graph outputs. The model imports opset 17 of the default domain, and
 * ai.corten 1 when a node needs it. Everything is checked and built in memory first; the file is
 * then written to a temporary file beside the target and renamed over it (the same atomic write
 * as ct_params_save), so a failure leaves no file behind. */
#include <stdlib.h>
#include <string.h>

#include <corten/onnx.h>

#include "common/alloc.h"
#include "common/common.h"
#include "interop/params_format.h"
#include "onnx/onnx_save.h"

#define WHAT "ct_onnx_save"

/* A set of names (the program's own: valid while it lives), linear: programs are small next to
 * the cost of writing their weights. */
typedef struct names {
  const char **v;
  size_t n, cap;
} names;

static bool has(const names *s, const char *name) {
  for (size_t i = 0; i < s->n; i++) {
    if (strcmp(s->v[i], name) == 0) return true;
  }
  return false;
}

static bool add(names *s, const char *name) {
  if (has(s, name)) return true;
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 32;
    const char **g = ct__realloc(s->v, cap * sizeof *g);
    if (g == NULL) return false;
    s->v = g;
    s->cap = cap;
  }
  s->v[s->n++] = name;
  return true;
}

static ct_status oom(void) { return ct__error(CT_ERR_OUT_OF_MEMORY, WHAT ": out of host memory"); }

/* The tensor of variable name in scope, checked for export: CT_ERR_NOT_FOUND when nothing
 * defines it, CT_ERR_TYPE_MISMATCH when it holds no tensor, CT_ERR_UNINITIALIZED without memory,
 * CT_ERR_UNSUPPORTED for a dtype ONNX lacks. */
static ct_status var_tensor(const ct_scope *scope, const char *name, const char *role,
                            const ct_tensor **out) {
  ct_var *v = ct_scope_find_var(scope, name);
  if (v == NULL) {
    return ct__error(CT_ERR_NOT_FOUND,
                     WHAT ": the program reads '%s' (%s), which no earlier op writes and the "
                     "scope does not hold: put a tensor in it, or name it in inputs",
                     name, role);
  }
  const ct_tensor *t = ct_var_get_tensor(v);
  if (t == NULL) {
    return ct__error(CT_ERR_TYPE_MISMATCH,
                     WHAT ": variable '%s' (%s) holds no tensor; ONNX stores tensors only", name,
                     role);
  }
  *out = t;
  return CT_OK;
}

static ct_status check_dtype(const char *name, ct_dtype dt) {
  if (ex_onnx_dtype(dt) != 0) return CT_OK;
  return ct__error(CT_ERR_UNSUPPORTED,
                   WHAT ": variable '%s' holds a tensor of dtype %s, which ONNX has no type for: "
                   "cast it first", name, ct_dtype_name(dt));
}

/* The TensorProto of name's tensor into *m (copied to the host when it lives elsewhere). */
static ct_status tensor_proto(const ct_scope *scope, const char *name, pbw *m) {
  const ct_tensor *t = NULL;
  ct_status s = var_tensor(scope, name, "a weight: an initializer", &t);
  if (s != CT_OK) return s;
  ct_dtype dt = ct_tensor_dtype(t);
  if (!ct_tensor_has_memory(t)) {
    return ct__error(CT_ERR_UNINITIALIZED,
                     WHAT ": variable '%s' (a weight: an initializer) holds a tensor without "
                     "memory: set its value before saving", name);
  }
  if ((s = check_dtype(name, dt)) != CT_OK) return s;
  ct_tensor *host = NULL;
  if (ct_tensor_place(t).kind == CT_DEVICE_CUDA) {
    host = ct_tensor_new();
    if (host == NULL) return ct_last_status();
    if ((s = ct_tensor_copy(host, t, ct_cpu())) != CT_OK) {
      ct_tensor_free(host);
      return s;
    }
    t = host;
  }
  ct_ddim d = ct_tensor_dims(t);
  const void *data = ct_tensor_data(t, dt);
  size_t bytes = (size_t)ct_tensor_numel(t) * ct_dtype_size(dt);
  if (data == NULL && bytes > 0) s = ct_last_status();
  else ex_tensor(m, name, ex_onnx_dtype(dt), d.d, d.rank < 0 ? 0 : d.rank, data, bytes);
  ct_tensor_free(host);
  return s;
}

/* One initializer: name's tensor. */
static ct_status initializer(pbw *g, const ct_scope *scope, const char *name) {
  pbw m = {0};
  ct_status s = tensor_proto(scope, name, &m);
  if (s == CT_OK) pbw_msg(g, 5, &m);
  else pbw_free(&m);
  return s;
}

/* An output no op writes and no op reads, held by the scope (an imported Constant that is the
 * graph's output): a Constant node holding its tensor, as the import made it. */
static ct_status constant_output(ex_cx *x, const char *name) {
  pbw m = {0};
  ct_status s = tensor_proto(x->scope, name, &m);
  if (s != CT_OK) {
    pbw_free(&m);
    return s;
  }
  ex_node nd;
  ex_node_begin(&nd, x, "Constant", NULL, NULL, 0, &name, 1);
  ex_attr_tensor(&nd, "value", &m);
  ex_node_end(&nd);
  return ex_writes(x, name);
}

/* The symbolic name options give axis k of graph input or output `name`, or NULL. */
static const char *dim_name(const ct_onnx_save_options *o, const char *name, int k) {
  for (size_t i = 0; o != NULL && i < o->n_dim_names; i++) {
    if (o->dim_names[i].axis == k && strcmp(o->dim_names[i].var, name) == 0) {
      return o->dim_names[i].name;
    }
  }
  return NULL;
}

/* A ValueInfoProto (graph field 11 or 12) of name, with the dtype and dims of its tensor in
 * scope when it holds one; dims -1 (or unset) symbolic, and those options name. */
static ct_status value_info(pbw *g, int field, const ct_scope *scope, const char *name,
                            const ct_onnx_save_options *o) {
  pbw vi = {0}, tt = {0}, type = {0}, shape = {0};
  ct_var *v = ct_scope_find_var(scope, name);
  const ct_tensor *t = v ? ct_var_get_tensor(v) : NULL;
  ct_dtype dt = t ? ct_tensor_dtype(t) : CT_DTYPE_UNDEFINED;
  ct_clear_error();
  ct_ddim d = t ? ct_tensor_dims(t) : (ct_ddim){.rank = -1};
  if (dt != CT_DTYPE_UNDEFINED) {
    ct_status s = check_dtype(name, dt);
    if (s != CT_OK) return s;
  }
  for (size_t i = 0; o != NULL && d.rank >= 0 && i < o->n_dim_names; i++) {
    int rank = d.rank;
    if (strcmp(o->dim_names[i].var, name) == 0 && o->dim_names[i].axis >= rank) {
      return ct__error(CT_ERR_OUT_OF_RANGE,
                       WHAT ": options name axis %d of '%s', which has %d dims: name an axis "
                            "below that",
                       o->dim_names[i].axis, name, rank);
    }
  }
  pbw_int(&tt, 1, dt != CT_DTYPE_UNDEFINED ? ex_onnx_dtype(dt) : 1);
  if (d.rank >= 0) {
    for (int k = 0; k < d.rank; k++) {
      pbw dim = {0};
      const char *sym_name = dim_name(o, name, k);
      if (sym_name != NULL) pbw_str(&dim, 2, sym_name);
      else if (d.d[k] >= 0) pbw_int(&dim, 1, d.d[k]);
      else {
        char sym[32];
        snprintf(sym, sizeof sym, "%s_d%d", field == 11 ? "in" : "out", k);
        pbw_str(&dim, 2, sym);
      }
      pbw_msg(&shape, 1, &dim);
    }
    pbw_msg(&tt, 2, &shape);
  }
  pbw_msg(&type, 1, &tt);
  pbw_str(&vi, 1, name);
  pbw_msg(&vi, 2, &type);
  pbw_msg(g, field, &vi);
  return CT_OK;
}

struct ex_sets {
  names written, inits; /* defined by an op or an input; written as initializers */
  char **kept;          /* ex_keep's strings */
  size_t n_kept, cap_kept;
};

const char *ex_keep(ex_cx *x, const char *s) {
  ex_sets *st = x->sets;
  if (st->n_kept == st->cap_kept) {
    size_t cap = st->cap_kept ? 2 * st->cap_kept : 32;
    char **g = ct__realloc(st->kept, cap * sizeof *g);
    if (g == NULL) return oom(), NULL;
    st->kept = g;
    st->cap_kept = cap;
  }
  size_t n = strlen(s) + 1;
  char *c = ct__malloc(n);
  if (c == NULL) return oom(), NULL;
  memcpy(c, s, n);
  st->kept[st->n_kept++] = c;
  return c;
}

ct_status ex_reads(ex_cx *x, const char *name) {
  ex_sets *st = x->sets;
  if (has(&st->written, name) || has(&st->inits, name)) return CT_OK;
  return add(&st->inits, name) ? initializer(&x->inits, x->scope, name) : oom();
}

ct_status ex_writes(ex_cx *x, const char *name) {
  return add(&x->sets->written, name) ? CT_OK : oom();
}

ct_status ex_emit(ex_cx *x, const ex_op *op, size_t index) {
  ct_status s = CT_OK;
  for (size_t sl = 0; sl < op->def->n_in && s == CT_OK; sl++) {
    for (size_t k = 0; k < op->in[sl].n && s == CT_OK; k++) s = ex_reads(x, op->in[sl].names[k]);
  }
  bool done = false;
  if (s == CT_OK) s = ex_standard(x, op, &done);
  if (s == CT_OK && !done) s = ex_corten(x, op, index);
  for (size_t sl = 0; sl < op->def->n_out && s == CT_OK; sl++) {
    for (size_t k = 0; k < op->out[sl].n && s == CT_OK; k++) s = ex_writes(x, op->out[sl].names[k]);
  }
  return s;
}

/* The graph's nodes, initializers, inputs and outputs into g. */
static ct_status graph(pbw *g, ex_cx *x, const ct_program *p, const ct_scope *scope,
                       const char *const *inputs, size_t n_inputs, const char *const *outputs,
                       size_t n_outputs, const ct_onnx_save_options *o) {
  ex_sets sets = {0};
  x->sets = &sets;
  ct_status s = CT_OK;
  for (size_t i = 0; i < n_inputs && s == CT_OK; i++) s = ex_writes(x, inputs[i]);
  ex_op *op = ct__malloc(sizeof *op);
  if (op == NULL) s = oom();
  for (size_t i = 0; i < ct_program_size(p) && s == CT_OK; i++) {
    if ((s = ex_op_view(op, ct_program_op(p, i))) == CT_OK) {
      s = strcmp(op->def->type, "recurrent") == 0 ? ex_unroll(x, op, i) : ex_emit(x, op, i);
    }
    ex_op_release(op);
  }
  free(op);
  for (size_t i = 0; i < n_outputs && s == CT_OK; i++) {
    if (has(&sets.written, outputs[i]) || has(&sets.inits, outputs[i])) continue;
    ct_var *v = ct_scope_find_var(scope, outputs[i]);
    ct_clear_error();
    if (v != NULL && ct_var_get_tensor(v) != NULL) {
      s = constant_output(x, outputs[i]);
    } else {
      s = ct__error(CT_ERR_NOT_FOUND, WHAT ": output '%s' is written by no op of the program, "
                                          "is not an input and the scope holds no tensor of "
                                          "that name", outputs[i]);
    }
  }
  if (s == CT_OK) {
    pbw_raw(g, x->nodes.p, x->nodes.n);
    pbw_str(g, 2, "corten");
    pbw_raw(g, x->inits.p, x->inits.n);
    for (size_t i = 0; i < n_inputs && s == CT_OK; i++) s = value_info(g, 11, scope, inputs[i], o);
    for (size_t i = 0; i < n_outputs && s == CT_OK; i++) {
      s = value_info(g, 12, scope, outputs[i], o);
    }
  }
  free(sets.written.v);
  free(sets.inits.v);
  for (size_t i = 0; i < sets.n_kept; i++) free(sets.kept[i]);
  free(sets.kept);
  x->sets = NULL;
  if (s == CT_OK && (g->oom || x->nodes.oom || x->inits.oom)) s = oom();
  return s;
}

ct_status ex_op_view(ex_op *v, const ct_op *op) {
  ct_op_def d;
  memset(v, 0, sizeof *v);
  v->def = &v->d;
  ct_status s = ct_op_type_get(ct_op_type(op), &d);
  if (s != CT_OK) return s;
  v->d = (ex_def){d.type, d.inputs, d.outputs, d.attrs, d.n_inputs, d.n_outputs, d.n_attrs};
  if (d.n_inputs > 64 || d.n_outputs > 64 || d.n_attrs > 64) {
    return ct__error(CT_ERR_UNSUPPORTED, WHAT ": op type '%s' has over 64 slots or attributes",
                     d.type);
  }
  size_t total = 0;
  for (size_t k = 0; k < d.n_inputs; k++) total += ct_op_input_count(op, d.inputs[k].name);
  for (size_t k = 0; k < d.n_outputs; k++) total += ct_op_output_count(op, d.outputs[k].name);
  v->pool = ct__malloc((total ? total : 1) * sizeof *v->pool);
  if (v->pool == NULL) return oom();
  size_t at = 0;
  for (size_t k = 0; k < d.n_inputs + d.n_outputs; k++) {
    bool in = k < d.n_inputs;
    const char *slot = in ? d.inputs[k].name : d.outputs[k - d.n_inputs].name;
    ex_wiring *w = in ? &v->in[k] : &v->out[k - d.n_inputs];
    w->names = v->pool + at;
    w->n = in ? ct_op_input_count(op, slot) : ct_op_output_count(op, slot);
    for (size_t i = 0; i < w->n; i++) {
      v->pool[at++] = in ? ct_op_input(op, slot, i) : ct_op_output(op, slot, i);
    }
  }
  for (size_t a = 0; a < d.n_attrs && s == CT_OK; a++) {
    s = ct_op_get_attr(op, d.attrs[a].name, &v->attr[a]);
  }
  return s;
}

void ex_op_release(ex_op *v) {
  free(v->pool);
  v->pool = NULL;
}

static ct_status write_file(const char *path, const pbw *m) {
  ct__params_out *o = ct__malloc(sizeof *o);
  if (o == NULL) return oom();
  ct_status s = ct__params_out_open(o, path, WHAT);
  if (s == CT_OK) {
    s = ct__params_out_write(o, m->p, m->n, WHAT);
    if (s == CT_OK) s = ct__params_out_commit(o, WHAT);
    else ct__params_out_abort(o);
  }
  free(o);
  return s;
}

static ct_status check_names(const char *const *v, size_t n, const char *what) {
  if (n > 0 && v == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, WHAT ": %s is NULL with a count of %zu", what, n);
  }
  for (size_t i = 0; i < n; i++) {
    if (v[i] == NULL || v[i][0] == '\0') {
      return ct__error(CT_ERR_INVALID_ARGUMENT, WHAT ": %s[%zu] is NULL or empty", what, i);
    }
  }
  return CT_OK;
}

/* Every dim name of o names a graph input or output, a non-negative axis and a symbol. */
static ct_status check_dim_names(const ct_onnx_save_options *o, const char *const *inputs,
                                 size_t n_inputs, const char *const *outputs, size_t n_outputs) {
  if (o == NULL) return CT_OK;
  if (o->n_dim_names > 0 && o->dim_names == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     WHAT ": options dim_names is NULL with a count of %zu", o->n_dim_names);
  }
  for (size_t i = 0; i < o->n_dim_names; i++) {
    const ct_onnx_dim_name *dn = &o->dim_names[i];
    if (dn->var == NULL || dn->name == NULL || dn->name[0] == '\0' || dn->axis < 0) {
      return ct__error(CT_ERR_INVALID_ARGUMENT,
                       WHAT ": options dim_names[%zu] needs a variable, an axis >= 0 and a "
                            "non-empty name",
                       i);
    }
    bool found = false;
    for (size_t k = 0; k < n_inputs && !found; k++) found = strcmp(inputs[k], dn->var) == 0;
    for (size_t k = 0; k < n_outputs && !found; k++) found = strcmp(outputs[k], dn->var) == 0;
    if (!found) {
      return ct__error(CT_ERR_INVALID_ARGUMENT,
                       WHAT ": options dim_names[%zu] names '%s', which is neither an input nor "
                            "an output of the graph: only those have declared dims",
                       i, dn->var);
    }
  }
  return CT_OK;
}

ct_status ct_onnx_save(const char *path, const ct_program *p, const ct_scope *scope,
                       const char *const *inputs, size_t n_inputs, const char *const *outputs,
                       size_t n_outputs) {
  return ct_onnx_save_with(path, p, scope, inputs, n_inputs, outputs, n_outputs, NULL);
}

ct_status ct_onnx_save_with(const char *path, const ct_program *p, const ct_scope *scope,
                            const char *const *inputs, size_t n_inputs,
                            const char *const *outputs, size_t n_outputs,
                            const ct_onnx_save_options *o) {
  if (path == NULL || p == NULL || scope == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, WHAT ": the %s is NULL",
                     path == NULL ? "path" : p == NULL ? "program" : "scope");
  }
  ct_status s = check_names(inputs, n_inputs, "inputs");
  if (s == CT_OK) s = check_names(outputs, n_outputs, "outputs");
  if (s == CT_OK) s = check_dim_names(o, inputs, n_inputs, outputs, n_outputs);
  if (s != CT_OK) return s;
  ex_cx x = {.scope = scope, .prog = p};
  pbw g = {0}, model = {0}, opset = {0}, opset2 = {0};
  s = graph(&g, &x, p, scope, inputs, n_inputs, outputs, n_outputs, o);
  if (s == CT_OK) {
    /* ModelProto: ir_version 1, producer_name 2, producer_version 3, graph 7, opset_import 8. */
    pbw_int(&model, 1, 8);
    pbw_str(&model, 2, "corten");
    pbw_str(&model, 3, "1");
    pbw_msg(&model, 7, &g);
    pbw_str(&opset, 1, "");
    pbw_int(&opset, 2, 17);
    pbw_msg(&model, 8, &opset);
    if (x.uses_corten) {
      pbw_str(&opset2, 1, "ai.corten");
      pbw_int(&opset2, 2, 1);
      pbw_msg(&model, 8, &opset2);
    }
    s = model.oom ? oom() : write_file(path, &model);
  }
  pbw_free(&g);
  pbw_free(&model);
  pbw_free(&x.nodes);
  pbw_free(&x.inits);
  return s;
}
