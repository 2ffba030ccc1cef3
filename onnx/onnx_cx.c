/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/onnx_cx.c: the import's state (onnx/onnx_conv.h) and the context the rules work through
 * (onnx/onnx_rules.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/variable.h>

#include "common/alloc.h"
#include "onnx/onnx_conv.h"

/* ---- Names defined so far ----------------------------------------------------------------------- */

static size_t hash(const char *s) {
  size_t h = 1469598103934665603u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

static bool grow(ox_conv *cv) {
  size_t cap = cv->cap ? 2 * cv->cap : 256;
  const char **keys = ct__calloc(cap, sizeof *keys);
  size_t *vals = ct__calloc(cap, sizeof *vals);
  if (keys == NULL || vals == NULL) {
    free(keys);
    free(vals);
    return false;
  }
  for (size_t i = 0; i < cv->cap; i++) {
    if (cv->keys[i] == NULL) continue;
    size_t j = hash(cv->keys[i]) & (cap - 1);
    while (keys[j] != NULL) j = (j + 1) & (cap - 1);
    keys[j] = cv->keys[i];
    vals[j] = cv->vals[i];
  }
  free(cv->keys);
  free(cv->vals);
  cv->keys = keys;
  cv->vals = vals;
  cv->cap = cap;
  return true;
}

bool ox_define(ox_conv *cv, const char *name, size_t staged) {
  if (2 * (cv->used + 1) > cv->cap && !grow(cv)) return false;
  size_t j = hash(name) & (cv->cap - 1);
  while (cv->keys[j] != NULL && strcmp(cv->keys[j], name) != 0) j = (j + 1) & (cv->cap - 1);
  if (cv->keys[j] == NULL) cv->used++;
  cv->keys[j] = name;
  cv->vals[j] = staged;
  return true;
}

bool ox_defined(const ox_conv *cv, const char *name, size_t *staged) {
  if (cv->cap == 0) return false;
  size_t j = hash(name) & (cv->cap - 1);
  while (cv->keys[j] != NULL) {
    if (strcmp(cv->keys[j], name) == 0) {
      if (staged != NULL) *staged = cv->vals[j];
      return true;
    }
    j = (j + 1) & (cv->cap - 1);
  }
  return false;
}

size_t ox_stage(ox_conv *cv, const char *name, ct_tensor *t, bool constant) {
  size_t k = cv->n_staged;
  if ((k & (k - 1)) == 0) {
    ox_staged *g = ct__realloc(cv->staged, (k ? 2 * k : 1) * sizeof *g);
    if (g == NULL) {
      ct_tensor_free(t);
      return SIZE_MAX;
    }
    cv->staged = g;
  }
  cv->staged[k] = (ox_staged){.name = name, .t = t, .constant = constant};
  cv->n_staged = k + 1;
  return k;
}

const char *ox_node_label(ox_conv *cv, size_t i, char *buf, size_t cap) {
  const ox_node *n = &cv->m->nodes[i];
  if (n->name.n > 0) {
    snprintf(buf, cap, "node %zu '%.*s' (%.*s, opset %lld)", i, (int)(n->name.n > 120 ? 120 : n->name.n),
             (const char *)n->name.p, (int)(n->op_type.n > 60 ? 60 : n->op_type.n),
             (const char *)n->op_type.p, (long long)cv->opset);
  } else {
    snprintf(buf, cap, "node %zu (%.*s, opset %lld)", i, (int)(n->op_type.n > 60 ? 60 : n->op_type.n),
             (const char *)n->op_type.p, (long long)cv->opset);
  }
  return buf;
}

void ox_note_unsupported(ox_conv *cv, size_t i, const char *text) {
  char label[256];
  ox_node_label(cv, i, label, sizeof label);
  size_t need = strlen(label) + strlen(text) + 8;
  cv->n_unsup++;
  if (cv->unsup_len > 6000) return; /* enough to act on; the count says how many in all */
  if (cv->unsup_len + need > cv->unsup_cap) {
    size_t cap = (cv->unsup_len + need) * 2;
    char *g = ct__realloc(cv->unsup, cap);
    if (g == NULL) return;
    cv->unsup = g;
    cv->unsup_cap = cap;
  }
  cv->unsup_len += (size_t)snprintf(cv->unsup + cv->unsup_len, cv->unsup_cap - cv->unsup_len,
                                    "%s%s: %s", cv->unsup_len ? "; " : "", label, text);
}

/* ---- The rules' context ----------------------------------------------------------------------------- */

int64_t ox_opset(const ox_cx *c) { return c->cv->opset; }
size_t ox_n_in(const ox_cx *c) { return c->n->n_in; }
size_t ox_n_out(const ox_cx *c) { return c->n->n_out; }

const char *ox_in(ox_cx *c, size_t k) {
  if (k >= c->n->n_in || c->n->in[k].n == 0) return NULL;
  return ox_cstr(c->cv->m, c->n->in[k]);
}

const char *ox_out(ox_cx *c, size_t k) {
  if (k >= c->n->n_out || c->n->out[k].n == 0) return NULL;
  return ox_cstr(c->cv->m, c->n->out[k]);
}

const ox_attr *ox_attr_get(const ox_cx *c, const char *name) {
  for (size_t i = 0; i < c->n->n_attr; i++) {
    if (ox_eq(c->n->attr[i].name, name)) return &c->n->attr[i];
  }
  return NULL;
}

int64_t ox_int(const ox_cx *c, const char *name, int64_t dflt) {
  const ox_attr *a = ox_attr_get(c, name);
  return a != NULL ? a->i : dflt;
}

double ox_float(const ox_cx *c, const char *name, double dflt) {
  const ox_attr *a = ox_attr_get(c, name);
  return a != NULL ? (double)a->f : dflt;
}

const char *ox_string(ox_cx *c, const char *name, const char *dflt) {
  const ox_attr *a = ox_attr_get(c, name);
  return a != NULL ? ox_cstr(c->cv->m, a->s) : dflt;
}

bool ox_ints(const ox_cx *c, const char *name, const int64_t **v, size_t *n) {
  const ox_attr *a = ox_attr_get(c, name);
  if (a == NULL) return false;
  *v = a->ints;
  *n = a->n_ints;
  return true;
}

ct_dtype ox_attr_dtype(const ox_cx *c, const char *name, int32_t dflt) {
  return ox_dtype((int32_t)ox_int(c, name, dflt));
}

/* The staged constant behind input k, or NULL. */
static ox_staged *const_of(const ox_cx *c, size_t k) {
  size_t st;
  if (k >= c->n->n_in || c->n->in[k].n == 0) return NULL;
  const char *name = ox_cstr(c->cv->m, c->n->in[k]);
  if (name == NULL || !ox_defined(c->cv, name, &st) || st == 0) return NULL;
  ox_staged *s = &c->cv->staged[st - 1];
  return s->constant ? s : NULL;
}

bool ox_is_const(const ox_cx *c, size_t k) { return const_of(c, k) != NULL; }

ct_status ox_need(ox_cx *c, const size_t *required, size_t n, const char *const *names) {
  for (size_t k = 0; k < n; k++) {
    if (ox_in(c, required[k]) != NULL) continue;
    if (names == NULL) return ox_unsupported(c, "input %zu is missing", required[k]);
    return ox_unsupported(c, "input %zu (%s) is missing", required[k], names[required[k]]);
  }
  return ox_out(c, 0) == NULL ? ox_unsupported(c, "output 0 is missing") : CT_OK;
}

ct_op *ox_op_wired(ox_cx *c, const char *type, const char *const *slots, size_t n_in,
                   const size_t *required, size_t n_required, const char *out) {
  if (ox_need(c, required, n_required, slots) != CT_OK) return NULL;
  ct_op *op = ox_op(c, type);
  if (op == NULL) return NULL;
  for (size_t k = 0; k < n_in; k++) {
    if (ox_in(c, k) != NULL && ct_op_set_input(op, slots[k], ox_in(c, k)) != CT_OK) return NULL;
  }
  return ct_op_set_output(op, out, ox_out(c, 0)) == CT_OK ? op : NULL;
}

/* Input k as unsqueezed at axes [from, from + n) into a fresh variable, *to. */
static ct_status unsqueeze_tail(ox_cx *c, size_t k, int64_t from, int64_t n, const char **to) {
  int64_t axes[CT_MAX_RANK];
  for (int64_t i = 0; i < n; i++) axes[i] = from + i;
  *to = ox_tmp(c);
  ct_op *op = *to != NULL ? ox_op(c, "unsqueeze") : NULL;
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", ox_in(c, k));
  if (s == CT_OK) s = ct_op_set_output(op, "Out", *to);
  if (s == CT_OK) s = ct_op_set_attr_ints(op, "axes", axes, (size_t)n);
  return s == CT_OK ? ox_push(c, op) : s;
}

ct_status ox_legacy_b(ox_cx *c, const char **b) {
  *b = ox_in(c, 1);
  if (ox_opset(c) >= 7 || ox_int(c, "broadcast", 0) == 0 || ox_attr_get(c, "axis") == NULL) {
    return CT_OK;
  }
  const int ra = ox_in_rank(c, 0), rb = ox_in_rank(c, 1);
  if (ra < 0 || rb < 0) {
    return ox_unsupported(c, "broadcast along attribute 'axis' (before opset 7) of an operand "
                          "whose rank the model does not give (give the graph input's shape)");
  }
  return ox_align_b(c, ox_int(c, "axis", 0), ra, rb, b);
}

ct_status ox_align_b(ox_cx *c, int64_t axis, int ra, int rb, const char **b) {
  *b = ox_in(c, 1);
  const int64_t at = axis < 0 ? axis + ra : axis, trailing = ra - at - rb;
  if (at < 0 || trailing < 0) {
    return ox_unsupported(c, "attribute 'axis' %lld places input 1 (rank %d) past input 0's "
                          "rank %d", (long long)axis, rb, ra);
  }
  return trailing == 0 ? CT_OK : unsqueeze_tail(c, 1, rb, trailing, b);
}

int ox_in_rank(const ox_cx *c, size_t k) {
  const ox_staged *s = const_of(c, k);
  if (s != NULL) return ct_tensor_dims(s->t).rank;
  if (k >= c->n->n_in || c->n->in[k].n == 0) return -1;
  ox_model *m = c->cv->m;
  for (size_t i = 0; i < m->n_inputs; i++) {
    if (!m->inputs[i].not_tensor && ox_eq(m->inputs[i].name, ox_cstr(m, c->n->in[k]))) {
      return m->inputs[i].rank;
    }
  }
  return -1;
}

/* d as an int64 (only integer constants are read as ints; a float's is a placeholder): NaN as 0,
 * out of range as the nearest end, never an undefined conversion. */
static int64_t int_of(double d) {
  if (!(d == d)) return 0;
  if (d >= 9223372036854775807.0) return INT64_MAX;
  if (d <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)d;
}

/* Decodes s's values into int64 and double arrays (once). */
static bool decode(ox_staged *s) {
  if (s->ints != NULL) return true;
  int64_t n = ct_tensor_numel(s->t);
  ct_dtype dt = ct_tensor_dtype(s->t);
  const void *p = ct_tensor_data(s->t, dt);
  if (n < 0 || (p == NULL && n > 0)) return false;
  s->ints = ct__malloc((size_t)(n ? n : 1) * sizeof *s->ints);
  s->floats = ct__malloc((size_t)(n ? n : 1) * sizeof *s->floats);
  if (s->ints == NULL || s->floats == NULL) {
    free(s->ints);
    free(s->floats);
    s->ints = NULL;
    s->floats = NULL;
    return false;
  }
  for (int64_t i = 0; i < n; i++) {
    double d;
    int64_t v;
    switch (dt) {
      case CT_INT64: v = ((const int64_t *)p)[i]; d = (double)v; break;
      case CT_INT32: v = ((const int32_t *)p)[i]; d = (double)v; break;
      case CT_FLOAT32: d = ((const float *)p)[i]; v = int_of(d); break;
      case CT_FLOAT64: d = ((const double *)p)[i]; v = int_of(d); break;
      case CT_INT16: v = ((const int16_t *)p)[i]; d = (double)v; break;
      case CT_INT8: v = ((const int8_t *)p)[i]; d = (double)v; break;
      case CT_UINT8: case CT_BOOL: v = ((const uint8_t *)p)[i]; d = (double)v; break;
      case CT_UINT16: v = ((const uint16_t *)p)[i]; d = (double)v; break;
      case CT_UINT32: v = ((const uint32_t *)p)[i]; d = (double)v; break;
      case CT_UINT64: {
        uint64_t u = ((const uint64_t *)p)[i];
        v = u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
        d = (double)u;
        s->inexact |= u > ((uint64_t)1 << 53);
        break;
      }
      default: v = 0; d = 0; s->inexact = true; break; /* float16, bfloat16 */
    }
    if (dt == CT_INT64) s->inexact |= v > ((int64_t)1 << 53) || v < -((int64_t)1 << 53);
    s->ints[i] = v;
    s->floats[i] = d;
  }
  s->n = (size_t)n;
  return true;
}

bool ox_const_ints(ox_cx *c, size_t k, const int64_t **v, size_t *n) {
  ox_staged *s = const_of(c, k);
  ct_dtype dt = s ? ct_tensor_dtype(s->t) : CT_DTYPE_UNDEFINED;
  if ((dt != CT_INT64 && dt != CT_INT32) || !decode(s)) return false;
  *v = s->ints;
  *n = s->n;
  return true;
}

bool ox_const_any(ox_cx *c, size_t k, const double **v, size_t *n) {
  ox_staged *s = const_of(c, k);
  if (s == NULL || !decode(s) || s->inexact) return false;
  *v = s->floats;
  *n = s->n;
  return true;
}

bool ox_const_floats(ox_cx *c, size_t k, const double **v, size_t *n) {
  ox_staged *s = const_of(c, k);
  ct_dtype dt = s ? ct_tensor_dtype(s->t) : CT_DTYPE_UNDEFINED;
  if ((dt != CT_FLOAT32 && dt != CT_FLOAT64) || !decode(s)) return false;
  *v = s->floats;
  *n = s->n;
  return true;
}

ct_op *ox_op(ox_cx *c, const char *type) {
  if (c->n_pending == c->cap_pending) {
    size_t cap = c->cap_pending ? 2 * c->cap_pending : 4;
    ct_op **g = ct__realloc(c->pending, cap * sizeof *g);
    if (g == NULL) {
      ct__error(CT_ERR_OUT_OF_MEMORY, "ct_onnx_load: out of host memory");
      return NULL;
    }
    c->pending = g;
    c->cap_pending = cap;
  }
  ct_op *op = ct_op_new(type);
  if (op != NULL) c->pending[c->n_pending++] = op;
  return op;
}

ct_status ox_push(ox_cx *c, ct_op *op) {
  for (size_t i = 0; i < c->n_pending; i++) {
    if (c->pending[i] != op) continue;
    ct_status s = ct_program_append(c->cv->prog, op);
    if (s != CT_OK) return s; /* still pending: freed with the node */
    c->pending[i] = c->pending[--c->n_pending];
    return CT_OK;
  }
  return ct__error(CT_ERR_INVALID_ARGUMENT, "ox_push: an op the rule did not make");
}

ct_status ox_unary(ox_cx *c, const char *type, const char *x, const char *out) {
  ct_op *op = ox_op(c, type);
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", out);
  return s == CT_OK ? ox_push(c, op) : s;
}

const char *ox_tmp(ox_cx *c) {
  char buf[64];
  snprintf(buf, sizeof buf, "@onnx%u", c->cv->tmp_counter++);
  const char *first = c->n->n_out > 0 ? ox_out(c, 0) : "";
  size_t a = strlen(first ? first : ""), b = strlen(buf);
  ox_span s = {NULL, 0};
  char *joined = ct__malloc(a + b + 1);
  if (joined == NULL) return NULL;
  memcpy(joined, first ? first : "", a);
  memcpy(joined + a, buf, b + 1);
  s.p = (const uint8_t *)joined;
  s.n = a + b;
  const char *name = ox_cstr(c->cv->m, s);
  free(joined);
  return name;
}

/* Stages a new constant tensor of dims and dtype from the bytes at v. */
static const char *const_new(ox_cx *c, const void *v, ct_ddim dims, ct_dtype dt) {
  const char *name = ox_tmp(c);
  ct_tensor *t = ct_tensor_new();
  if (name == NULL || t == NULL || ct_tensor_set_value(t, v, dims, dt, ct_cpu()) != CT_OK) {
    ct_tensor_free(t);
    return NULL;
  }
  size_t k = ox_stage(c->cv, name, t, true);
  if (k == SIZE_MAX || !ox_define(c->cv, name, k + 1)) return NULL;
  return name;
}

const char *ox_const_new_ints(ox_cx *c, const int64_t *v, size_t n) {
  ct_ddim d = {.rank = 1, .d = {(int64_t)n}};
  return const_new(c, v, d, CT_INT64);
}

const char *ox_const_new_float(ox_cx *c, double v, ct_dtype dt) {
  ct_ddim d = {.rank = 0};
  float f = (float)v;
  return dt == CT_FLOAT64 ? const_new(c, &v, d, dt) : const_new(c, &f, d, CT_FLOAT32);
}

ct_status ox_unsupported(ox_cx *c, const char *fmt, ...) {
  char text[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  ox_note_unsupported(c->cv, c->index, text);
  c->reported = true;
  return CT_ERR_UNSUPPORTED;
}
