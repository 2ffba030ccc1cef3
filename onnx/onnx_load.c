/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/onnx_load.c: ct_onnx_load and ct_onnx_load_buffer (corten/onnx.h).
 *
 * A load reads the model (onnx/onnx_pb.c), stages every initializer as a tensor of its own,
 * walks the nodes in the file's order (ONNX keeps them sorted: a node reads only what a graph
 * input, an initializer or an earlier node defines; a name nothing defines yet is a malformed
 * graph, which also rules out cycles), turns each node into corten ops through its rule
 * (onnx/onnx_rules.h) and collects the nodes no rule can import. Only when every node imported
 * does it touch the scope: one variable per staged tensor (sharing its memory) and one per graph
 * input, removed again if a later one fails, so a failed load leaves the scope as it was.
 *
 * A model file is mapped, not read: each weight is copied from the mapping into its tensor and
 * the mapping's pages under it are dropped at once (madvise), so the load's peak is the weights
 * once, plus a page or two. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <corten/onnx.h>
#include <corten/scope.h>
#include <corten/variable.h>

#include "common/alloc.h"
#include "onnx/onnx_conv.h"

struct ct_onnx_model {
  ct_program *prog;
  char **in_names, **out_names, **const_names;
  size_t n_in, n_out, n_const;
  ct_ddim *in_dims, *out_dims; /* rank -1: no shape in the file */
  ct_dtype *in_dtypes, *out_dtypes;
  long long opset;
};

/* What the load reads besides the bytes: the model's folder (external data) and the mapping. */
typedef struct source {
  const char *dir;  /* NULL for a buffer */
  const uint8_t *map;
  size_t map_size;
} source;

/* ---- External data --------------------------------------------------------------------------- */

static ct_status read_external(void *arg, const ox_tensor *t, void *dst, size_t bytes) {
  const source *src = arg;
  char loc[1024], path[4096];
  int nl = (int)(t->name.n > 200 ? 200 : t->name.n);
  if (t->location.n == 0 || t->location.n >= sizeof loc) {
    return ct__error(CT_ERR_FORMAT, "ct_onnx_load: tensor '%.*s' is external but names no "
                                    "location (or one over 1 KiB)", nl, (const char *)t->name.p);
  }
  memcpy(loc, t->location.p, t->location.n);
  loc[t->location.n] = '\0';
  bool escapes = loc[0] == '/' || memchr(loc, '\0', t->location.n) != NULL;
  for (const char *c = loc; !escapes && c != NULL; c = strchr(c, '/'), c = c ? c + 1 : NULL) {
    escapes = strncmp(c, "..", 2) == 0 && (c[2] == '/' || c[2] == '\0');
  }
  if (escapes) {
    return ct__error(CT_ERR_FORMAT,
                     "ct_onnx_load: tensor '%.*s' keeps its data in '%s', outside the model's "
                     "folder (an absolute path or one through '..'): external data must sit "
                     "beside the model", nl, (const char *)t->name.p, loc);
  }
  snprintf(path, sizeof path, "%s/%s", src->dir, loc);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return ct__error(CT_ERR_IO, "ct_onnx_load: tensor '%.*s': cannot open its data file '%s': %s",
                     nl, (const char *)t->name.p, path, strerror(errno));
  }
  ct_status s = CT_OK;
  if (t->ext_length >= 0 && (uint64_t)t->ext_length != bytes) {
    s = ct__error(CT_ERR_FORMAT, "ct_onnx_load: tensor '%.*s' has %lld bytes of external data, "
                                 "not the %zu its dims take", nl, (const char *)t->name.p,
                  (long long)t->ext_length, bytes);
  }
  off_t off = t->ext_offset > 0 ? (off_t)t->ext_offset : 0;
  for (size_t done = 0; s == CT_OK && done < bytes;) {
    ssize_t r = pread(fd, (char *)dst + done, bytes - done, off + (off_t)done);
    if (r <= 0) {
      s = ct__error(r == 0 ? CT_ERR_FORMAT : CT_ERR_IO,
                    "ct_onnx_load: tensor '%.*s': its data file '%s' ends after %zu of the %zu "
                    "bytes it should hold at offset %lld%s%s", nl, (const char *)t->name.p, path,
                    done, bytes, (long long)off, r < 0 ? ": " : "", r < 0 ? strerror(errno) : "");
    } else {
      done += (size_t)r;
    }
  }
  close(fd);
  return s;
}

/* Drops the mapping's pages wholly inside span s: its bytes were copied. */
static void drop_pages(void *arg, ox_span s) {
  const source *src = arg;
  if (src->map == NULL || s.n == 0) return;
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t a = ((uintptr_t)s.p + page - 1) & ~(page - 1), b = ((uintptr_t)s.p + s.n) & ~(page - 1);
  if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
}

/* ---- The model ------------------------------------------------------------------------------------ */

void ct_onnx_free(ct_onnx_model *m) {
  if (m == NULL) return;
  ct_program_free(m->prog);
  for (size_t i = 0; i < m->n_in; i++) free(m->in_names[i]);
  for (size_t i = 0; i < m->n_out; i++) free(m->out_names[i]);
  for (size_t i = 0; i < m->n_const; i++) free(m->const_names[i]);
  free(m->const_names);
  free(m->in_names);
  free(m->out_names);
  free(m->in_dims);
  free(m->in_dtypes);
  free(m->out_dims);
  free(m->out_dtypes);
  free(m);
}

ct_program *ct_onnx_program(ct_onnx_model *m) { return m ? m->prog : NULL; }
size_t ct_onnx_input_count(const ct_onnx_model *m) { return m ? m->n_in : 0; }
size_t ct_onnx_output_count(const ct_onnx_model *m) { return m ? m->n_out : 0; }
long long ct_onnx_opset(const ct_onnx_model *m) { return m ? m->opset : 0; }

const char *ct_onnx_input_name(const ct_onnx_model *m, size_t i) {
  return m && i < m->n_in ? m->in_names[i] : NULL;
}

const char *ct_onnx_output_name(const ct_onnx_model *m, size_t i) {
  return m && i < m->n_out ? m->out_names[i] : NULL;
}

size_t ct_onnx_constant_count(const ct_onnx_model *m) { return m ? m->n_const : 0; }
const char *ct_onnx_constant_name(const ct_onnx_model *m, size_t i) {
  return m && i < m->n_const ? m->const_names[i] : NULL;
}

/* ct_onnx_input_info and ct_onnx_output_info: entry i of a model's inputs or outputs (what:
 * "input" or "output", n of them). */
static ct_status value_info(const ct_onnx_model *m, const char *what, size_t i, ct_ddim *dims,
                            ct_dtype *dtype) {
  if (m == NULL || dims == NULL || dtype == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_onnx_%s_info: the model, dims or dtype is NULL",
                     what);
  }
  bool in = what[0] == 'i';
  size_t n = in ? m->n_in : m->n_out;
  if (i >= n) {
    return ct__error(CT_ERR_OUT_OF_RANGE, "ct_onnx_%s_info: %s %zu of a model with %zu", what,
                     what, i, n);
  }
  *dims = in ? m->in_dims[i] : m->out_dims[i];
  *dtype = in ? m->in_dtypes[i] : m->out_dtypes[i];
  if (dims->rank < 0) {
    return ct__error(CT_ERR_UNINITIALIZED, "ct_onnx_%s_info: the model gives %s '%s' no shape",
                     what, what, in ? m->in_names[i] : m->out_names[i]);
  }
  return CT_OK;
}

ct_status ct_onnx_input_info(const ct_onnx_model *m, size_t i, ct_ddim *dims, ct_dtype *dtype) {
  return value_info(m, "input", i, dims, dtype);
}

ct_status ct_onnx_output_info(const ct_onnx_model *m, size_t i, ct_ddim *dims, ct_dtype *dtype) {
  return value_info(m, "output", i, dims, dtype);
}

/* ---- Import ------------------------------------------------------------------------------------------ */

static ct_status oom(void) {
  return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_onnx_load: out of host memory");
}

/* Whether span d names the default domain ("" or "ai.onnx"). */
static bool default_domain(ox_span d) { return d.n == 0 || ox_eq(d, "ai.onnx"); }

/* The opset the model imports of domain d; 0 when it imports none. */
static int64_t opset_of(const ox_model *m, ox_span d) {
  for (size_t i = 0; i < m->n_opsets; i++) {
    const ox_span o = m->opsets[i].domain;
    if (default_domain(d) ? default_domain(o) : (o.n == d.n && memcmp(o.p, d.p, d.n) == 0)) {
      return m->opsets[i].version;
    }
  }
  return 0;
}

/* Whether a node of the graph is in the default domain. */
static bool uses_default_domain(const ox_model *m) {
  for (size_t i = 0; i < m->n_nodes; i++) {
    if (default_domain(m->nodes[i].domain)) return true;
  }
  return false;
}

/* A Constant node: its value staged under its output's name. */
static ct_status constant(ox_conv *cv, ox_cx *c) {
  const ox_attr *a = c->n->n_attr == 1 ? &c->n->attr[0] : NULL;
  const char *out = ox_out(c, 0);
  if (out == NULL) return ox_unsupported(c, "a Constant without an output");
  if (a == NULL) return ox_unsupported(c, "a Constant needs exactly one attribute");
  ct_tensor *t = NULL;
  ct_status s = CT_OK;
  if (ox_eq(a->name, "value")) {
    s = ox_tensor_make(&a->t, cv->what, NULL, NULL, NULL, &t);
    if (s == CT_ERR_UNSUPPORTED) {
      char text[300];
      snprintf(text, sizeof text, "%s", ct_last_error());
      return ox_unsupported(c, "its value: %s", text);
    }
  } else if (ox_eq(a->name, "value_float") || ox_eq(a->name, "value_int") ||
             ox_eq(a->name, "value_floats") || ox_eq(a->name, "value_ints")) {
    bool is_float = a->name.p[6] == 'f', many = a->name.n > 11;
    ct_ddim d = {.rank = many ? 1 : 0, .d = {(int64_t)(is_float ? a->n_floats : a->n_ints)}};
    t = ct_tensor_new();
    s = t == NULL ? ct_last_status()
        : is_float ? ct_tensor_set_value(t, many ? a->floats : &a->f, d, CT_FLOAT32, ct_cpu())
                   : ct_tensor_set_value(t, many ? a->ints : &a->i, d, CT_INT64, ct_cpu());
  } else {
    return ox_unsupported(c, "attribute '%.*s' (sparse and string constants are not supported)",
                          (int)a->name.n, (const char *)a->name.p);
  }
  if (s != CT_OK) {
    ct_tensor_free(t);
    return s;
  }
  size_t k = ox_stage(cv, out, t, true);
  if (k == SIZE_MAX || !ox_define(cv, out, k + 1)) return oom();
  return CT_OK;
}

/* Imports node i: checks its inputs are defined, runs its rule, defines its outputs. A node that
 * cannot be imported is noted and CT_OK returned (the walk goes on); other failures end it. */
static ct_status import_node(ox_conv *cv, size_t i) {
  const ox_node *n = &cv->m->nodes[i];
  ox_cx c = {.cv = cv, .n = n, .index = i};
  char label[256];
  for (size_t k = 0; k < n->n_in + n->n_out; k++) {
    const ox_span *sp = k < n->n_in ? &n->in[k] : &n->out[k - n->n_in];
    if (sp->n > 0 && memchr(sp->p, '\0', sp->n) != NULL) {
      return ct__error(CT_ERR_FORMAT, "%s: %s: %s %zu's name holds a NUL byte", cv->what,
                       ox_node_label(cv, i, label, sizeof label),
                       k < n->n_in ? "input" : "output", k < n->n_in ? k : k - n->n_in);
    }
  }
  for (size_t k = 0; k < n->n_in; k++) {
    const char *name = ox_in(&c, k);
    if (name == NULL && k < n->n_in && n->in[k].n > 0) return oom();
    if (name != NULL && !ox_defined(cv, name, NULL)) {
      return ct__error(CT_ERR_FORMAT,
                       "%s: %s reads '%s', which no graph input, initializer or earlier node "
                       "defines (nodes must come in dependency order, without cycles)",
                       cv->what, ox_node_label(cv, i, label, sizeof label), name);
    }
  }
  ct_status s;
  if (default_domain(n->domain) && ox_eq(n->op_type, "Constant")) {
    s = constant(cv, &c);
  } else {
    bool other = !default_domain(n->domain);
    int64_t opset = other ? opset_of(cv->m, n->domain) : cv->opset;
    const ox_rule *r = ox_rule_for((const char *)n->domain.p, n->domain.n,
                                   (const char *)n->op_type.p, n->op_type.n, opset);
    if (r != NULL) {
      s = r->fn(&c);
    } else if (other) {
      s = ox_unsupported(&c, "no corten mapping for this op type in domain '%.*s' (opset %lld; "
                             "corten imports the default domain, ai.onnx.preview.training 1, "
                             "ai.corten 1 and com.microsoft's quantized QLinear* ops and "
                             "QGemm)",
                         (int)n->domain.n, (const char *)n->domain.p, (long long)opset);
    } else {
      s = ox_unsupported(&c, "no corten mapping for this op type");
    }
  }
  for (size_t k = 0; k < c.n_pending; k++) ct_op_free(c.pending[k]);
  free(c.pending);
  if (s == CT_ERR_UNSUPPORTED && !c.reported) {
    char text[400];
    snprintf(text, sizeof text, "%s", ct_last_error());
    ox_note_unsupported(cv, i, text);
  } else if (s != CT_OK && s != CT_ERR_UNSUPPORTED) {
    /* The op API refused what the node asked of it (a name, an attribute): the file is at
     * fault, not corten's coverage; out of memory stays itself. */
    char text[512];
    snprintf(text, sizeof text, "%s", ct_last_error());
    return ct__error(s == CT_ERR_OUT_OF_MEMORY ? s : CT_ERR_FORMAT, "%s: %s: %s", cv->what,
                     ox_node_label(cv, i, label, sizeof label), text);
  }
  for (size_t k = 0; k < n->n_out; k++) {
    const char *name = ox_out(&c, k);
    if (name == NULL && n->out[k].n > 0) return oom();
    size_t st = 0;
    if (name != NULL && !ox_defined(cv, name, &st) && !ox_define(cv, name, 0)) return oom();
  }
  return CT_OK;
}

/* Makes the scope's variables: staged tensors shared, inputs empty; all or none. */
static ct_status commit(ox_conv *cv, ct_scope *scope, const char *const *inputs, size_t n_in) {
  size_t total = cv->n_staged + n_in, made = 0;
  const char **names = ct__malloc((total ? total : 1) * sizeof *names);
  if (names == NULL) return oom();
  for (size_t i = 0; i < cv->n_staged; i++) names[i] = cv->staged[i].name;
  for (size_t i = 0; i < n_in; i++) names[cv->n_staged + i] = inputs[i];
  ct_status s = CT_OK;
  for (size_t i = 0; i < total && s == CT_OK; i++) {
    if (ct_scope_find_local_var(scope, names[i]) != NULL) {
      s = ct__error(CT_ERR_ALREADY_EXISTS,
                    "%s: the scope already holds a variable '%s', a name the model gives an "
                    "initializer or an input: load into a fresh scope (or a kid of this one)",
                    cv->what, names[i]);
    }
  }
  for (size_t i = 0; i < total && s == CT_OK; i++) {
    ct_var *v = ct_scope_var(scope, names[i]);
    if (v == NULL) {
      s = ct_last_status();
      break;
    }
    made = i + 1;
    ct_tensor *t = ct_var_tensor(v);
    if (t == NULL) s = ct_last_status();
    else if (i < cv->n_staged) s = ct_tensor_share(t, cv->staged[i].t);
  }
  /* The graph's outputs too, empty until a run: the caller's variables, which the executor's
   * passes never fuse away (an output another node also reads stays an output). One the scope
   * already holds (or that names an input or initializer) is left as it is. */
  const char **outs = ct__calloc(cv->m->n_outputs + 1, sizeof *outs);
  size_t n_outs = 0;
  if (s == CT_OK && outs == NULL) s = oom();
  for (size_t i = 0; s == CT_OK && i < cv->m->n_outputs; i++) {
    const char *name = ox_cstr(cv->m, cv->m->outputs[i].name);
    if (name == NULL) {
      s = oom();
    } else if (ct_scope_find_local_var(scope, name) == NULL) {
      if (ct_scope_var(scope, name) == NULL) s = ct_last_status();
      else outs[n_outs++] = name;
    }
  }
  if (s != CT_OK) {
    ct_scope_erase_vars(scope, outs != NULL ? outs : names, outs != NULL ? n_outs : 0);
    ct_scope_erase_vars(scope, names, made);
  }
  free(outs);
  free(names);
  return s;
}

static char *dup_str(const char *s) { return ct__strndup(s, strlen(s)); }

/* The model object: the program and the inputs' and outputs' names and declared types. */
static ct_onnx_model *make_model(ox_conv *cv, const char *const *inputs, const ox_value **vals,
                                 size_t n_in) {
  ct_onnx_model *om = ct__calloc(1, sizeof *om);
  if (om == NULL) return NULL;
  om->opset = cv->opset;
  om->n_in = n_in;
  om->n_out = cv->m->n_outputs;
  om->in_names = ct__calloc(n_in + 1, sizeof *om->in_names);
  om->out_names = ct__calloc(om->n_out + 1, sizeof *om->out_names);
  om->in_dims = ct__calloc(n_in + 1, sizeof *om->in_dims);
  om->in_dtypes = ct__calloc(n_in + 1, sizeof *om->in_dtypes);
  om->out_dims = ct__calloc(om->n_out + 1, sizeof *om->out_dims);
  om->out_dtypes = ct__calloc(om->n_out + 1, sizeof *om->out_dtypes);
  om->const_names = ct__calloc(cv->n_staged + 1, sizeof *om->const_names);
  bool ok = om->in_names && om->out_names && om->in_dims && om->in_dtypes && om->out_dims &&
            om->out_dtypes && om->const_names;
  for (size_t i = 0; ok && i < cv->n_staged; i++) {
    ok = (om->const_names[i] = dup_str(cv->staged[i].name)) != NULL;
    om->n_const = i + 1;
  }
  for (size_t i = 0; ok && i < n_in; i++) {
    ok = (om->in_names[i] = dup_str(inputs[i])) != NULL;
    om->in_dims[i].rank = vals[i]->rank;
    for (int k = 0; k < vals[i]->rank; k++) om->in_dims[i].d[k] = vals[i]->dims[k];
    om->in_dtypes[i] = ox_dtype(vals[i]->elem_type);
  }
  for (size_t i = 0; ok && i < om->n_out; i++) {
    const ox_value *o = &cv->m->outputs[i];
    const char *name = ox_cstr(cv->m, o->name);
    ok = name != NULL && (om->out_names[i] = dup_str(name)) != NULL;
    om->out_dims[i].rank = o->rank;
    for (int k = 0; k < o->rank; k++) om->out_dims[i].d[k] = o->dims[k];
    om->out_dtypes[i] = ox_dtype(o->elem_type);
  }
  if (!ok) {
    om->prog = NULL;
    ct_onnx_free(om);
    return NULL;
  }
  return om;
}

/* Stages the initializers and defines the graph's inputs; the inputs that are not initializers
 * into inputs / vals (*n). */
static ct_status stage_inits(ox_conv *cv, const source *src, const char **inputs,
                             const ox_value **vals, size_t *n) {
  ox_model *m = cv->m;
  for (size_t i = 0; i < m->n_inits; i++) {
    const char *name = ox_cstr(m, m->inits[i].name);
    if (name == NULL) return oom();
    if (name[0] == '\0' || ox_defined(cv, name, NULL)) {
      return ct__error(CT_ERR_FORMAT, "%s: initializer %zu is named '%s', %s", cv->what, i, name,
                       name[0] ? "like an earlier one" : "which is empty");
    }
    ct_tensor *t = NULL;
    ct_status s = ox_tensor_make(&m->inits[i], cv->what, src->dir ? read_external : NULL,
                                 drop_pages, (void *)src, &t);
    if (s != CT_OK) return s;
    size_t k = ox_stage(cv, name, t, true);
    if (k == SIZE_MAX || !ox_define(cv, name, k + 1)) return oom();
  }
  *n = 0;
  for (size_t i = 0; i < m->n_inputs; i++) {
    const char *name = ox_cstr(m, m->inputs[i].name);
    if (name == NULL) return oom();
    if (name[0] == '\0') return ct__error(CT_ERR_FORMAT, "%s: graph input %zu has no name", cv->what, i);
    if (ox_defined(cv, name, NULL)) continue; /* an initializer (IR < 4 lists them as inputs) */
    if (m->inputs[i].not_tensor) {
      return ct__error(CT_ERR_UNSUPPORTED, "%s: graph input '%s' is a sequence, map, optional or "
                                           "sparse value; corten imports tensors only",
                       cv->what, name);
    }
    if (!ox_define(cv, name, 0)) return oom();
    inputs[*n] = name;
    vals[(*n)++] = &m->inputs[i];
  }
  return CT_OK;
}

static ct_onnx_model *import(const uint8_t *p, size_t size, const char *what, const source *src,
                             ct_scope *scope) {
  ox_model m;
  if (ox_parse(p, size, what, &m) != CT_OK) return NULL;
  ox_conv cv = {.m = &m, .what = what, .opset = opset_of(&m, (ox_span){0})};
  const char **inputs = ct__calloc(m.n_inputs + 1, sizeof *inputs);
  const ox_value **vals = ct__calloc(m.n_inputs + 1, sizeof *vals);
  ct_onnx_model *om = NULL;
  size_t n_in = 0;
  ct_status s = inputs && vals ? CT_OK : oom();
  /* A model of other domains alone (ai.onnx.preview.training's optimizers) imports no default
   * opset; one whose nodes use the default domain needs 1 to 17. */
  if (s == CT_OK && (cv.opset > 17 || (cv.opset < 1 && uses_default_domain(&m)))) {
    s = ct__error(CT_ERR_UNSUPPORTED, "%s: the model is written for opset %lld of the default "
                                      "domain; corten imports opsets up to 17 (convert it with "
                                      "onnx.version_converter)", what, (long long)cv.opset);
  }
  if (s == CT_OK && m.n_sparse > 0) {
    s = ct__error(CT_ERR_UNSUPPORTED, "%s: the graph has %zu sparse initializers, which corten "
                                      "does not import (store them dense)", what, m.n_sparse);
  }
  if (s == CT_OK && (cv.prog = ct_program_new()) == NULL) s = ct_last_status();
  if (s == CT_OK) s = stage_inits(&cv, src, inputs, vals, &n_in);
  for (size_t i = 0; s == CT_OK && i < m.n_nodes; i++) s = import_node(&cv, i);
  for (size_t i = 0; s == CT_OK && i < m.n_outputs; i++) {
    const char *name = ox_cstr(&m, m.outputs[i].name);
    if (name == NULL) s = oom();
    else if (!ox_defined(&cv, name, NULL)) {
      s = ct__error(CT_ERR_FORMAT, "%s: graph output '%s' is defined by no node, input or "
                                   "initializer", what, name);
    }
  }
  if (s == CT_OK && cv.n_unsup > 0) {
    s = ct__error(CT_ERR_UNSUPPORTED, "%s: %zu node%s cannot be imported: %s%s", what, cv.n_unsup,
                  cv.n_unsup == 1 ? "" : "s", cv.unsup ? cv.unsup : "(out of memory for the list)",
                  cv.unsup_len > 6000 ? "; ..." : "");
  }
  if (s == CT_OK) {
    om = make_model(&cv, inputs, vals, n_in);
    if (om == NULL) s = oom();
  }
  if (s == CT_OK && (s = commit(&cv, scope, inputs, n_in)) != CT_OK) {
    ct_onnx_free(om);
    om = NULL;
  }
  if (om != NULL) om->prog = cv.prog;
  else ct_program_free(cv.prog);
  for (size_t i = 0; i < cv.n_staged; i++) {
    ct_tensor_free(cv.staged[i].t);
    free(cv.staged[i].ints);
    free(cv.staged[i].floats);
  }
  free(cv.staged);
  free(cv.keys);
  free(cv.vals);
  free(cv.unsup);
  free(inputs);
  free(vals);
  ox_model_free(&m);
  return om;
}

ct_onnx_model *ct_onnx_load_buffer(const void *data, size_t size, ct_scope *scope) {
  if ((data == NULL && size > 0) || scope == NULL) {
    return ct__error_null(CT_ERR_INVALID_ARGUMENT,
                          "ct_onnx_load_buffer: the buffer (with %zu bytes) or the scope is NULL",
                          size);
  }
  char what[96];
  snprintf(what, sizeof what, "ct_onnx_load_buffer: model buffer (%zu bytes)", size);
  source src = {0};
  return import(data ? data : (const void *)"", size, what, &src, scope);
}

ct_status ox_map(const char *path, const char *what, ox_file *f) {
  memset(f, 0, sizeof *f);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    int e = errno;
    bool opened = fd >= 0;
    if (fd >= 0) close(fd);
    return ct__error(CT_ERR_IO, "%s: cannot read it: %s", what,
                     opened ? "not a regular file" : strerror(e));
  }
  f->size = (size_t)st.st_size;
  void *map = f->size ? mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
  close(fd);
  if (f->size && map == MAP_FAILED) {
    return ct__error(CT_ERR_IO, "%s: cannot map it: %s", what, strerror(errno));
  }
  f->data = f->size ? map : (const uint8_t *)"";
  const char *slash = strrchr(path, '/');
  if (slash == NULL) snprintf(f->dir, sizeof f->dir, ".");
  else snprintf(f->dir, sizeof f->dir, "%.*s", (int)(slash - path == 0 ? 1 : slash - path), path);
  return CT_OK;
}

void ox_unmap(ox_file *f) {
  if (f->size) munmap((void *)f->data, f->size);
  memset(f, 0, sizeof *f);
}

ct_onnx_model *ct_onnx_load(const char *path, ct_scope *scope) {
  if (path == NULL || scope == NULL) {
    return ct__error_null(CT_ERR_INVALID_ARGUMENT, "ct_onnx_load: the path or the scope is NULL");
  }
  char what[600];
  snprintf(what, sizeof what, "ct_onnx_load: '%.500s'", path);
  ox_file f;
  if (ox_map(path, what, &f) != CT_OK) return NULL;
  source src = {.dir = f.dir, .map = f.size ? f.data : NULL, .map_size = f.size};
  ct_onnx_model *m = import(f.data, f.size, what, &src, scope);
  ox_unmap(&f);
  return m;
}

ct_status ct_onnx_load_tensor(const char *path, ct_tensor *t) {
  if (path == NULL || t == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_onnx_load_tensor: the path or the tensor is NULL");
  }
  char what[600];
  snprintf(what, sizeof what, "ct_onnx_load_tensor: '%.500s'", path);
  ox_file f;
  ct_status s = ox_map(path, what, &f);
  if (s != CT_OK) return s;
  ox_tensor ot;
  ct_tensor *x = NULL;
  source src = {.dir = f.dir};
  s = ox_parse_tensor(f.data, f.size, what, &ot);
  if (s == CT_OK) s = ox_tensor_make(&ot, what, read_external, NULL, &src, &x);
  if (s == CT_OK) {
    s = ct_tensor_is_external(t) ? ct_tensor_copy(t, x, ct_cpu()) : ct_tensor_share(t, x);
  }
  ct_tensor_free(x);
  ox_unmap(&f);
  return s;
}
