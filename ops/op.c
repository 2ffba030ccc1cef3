/* SPDX-License-Identifier: Apache-2.0 */
/* ops/op.c: op instances: wiring slots to variable names and setting attributes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "ops/op_impl.h"

static void free_value(ct_attr_value *v) {
  switch (v->type) {
    case CT_ATTR_STRING: free((char *)v->u.s); break;
    case CT_ATTR_INTS: free((int64_t *)v->u.ints.v); break;
    case CT_ATTR_FLOATS: free((double *)v->u.floats.v); break;
    case CT_ATTR_PROGRAM: ct__program_destroy((ct_program *)v->u.program); break;
    default: break;
  }
}

/* w->names may be NULL with n > 0: a wiring whose name array could not be allocated. */
static void free_wiring(ct__wiring *w) {
  for (size_t i = 0; w->names != NULL && i < w->n; i++) free(w->names[i]);
  free(w->names);
  w->names = NULL;
  w->n = 0;
}

/* Copies a default or set value into op-owned storage; false when memory runs out. */
static bool copy_value(ct_attr_value *dst, const ct_attr_value *src) {
  *dst = *src;
  if (src->type == CT_ATTR_STRING) {
    size_t n = strlen(src->u.s) + 1;
    char *c = ct__malloc(n);
    if (c == NULL) return false;
    memcpy(c, src->u.s, n);
    dst->u.s = c;
  } else if (src->type == CT_ATTR_INTS || src->type == CT_ATTR_FLOATS) {
    size_t n = src->type == CT_ATTR_INTS ? src->u.ints.n : src->u.floats.n;
    const void *v = src->type == CT_ATTR_INTS ? (const void *)src->u.ints.v
                                              : (const void *)src->u.floats.v;
    void *c = NULL;
    if (n > 0) {
      c = ct__malloc(n * 8);
      if (c == NULL) return false;
      memcpy(c, v, n * 8);
    }
    if (src->type == CT_ATTR_INTS) {
      dst->u.ints.v = c;
    } else {
      dst->u.floats.v = c;
    }
  }
  return true;
}

ct_op *ct_op_new(const char *type) {
  if (type == NULL || type[0] == '\0') {
    return ct__error_null(CT_ERR_INVALID_ARGUMENT, "ct_op_new: the op type is NULL or empty");
  }
  if (ct__ops_ready() != CT_OK) return NULL;
  const ct__opdef *d = ct__op_lookup(type);
  if (d == NULL) {
    return ct__error_null(CT_ERR_NOT_FOUND,
                          "ct_op_new: op type '%s' is not registered: check the spelling, or "
                          "register it with ct_op_register",
                          type);
  }
  ct_op *op = ct__calloc(1, sizeof *op);
  if (op == NULL) goto oom;
  op->def = d;
  op->index = -1;
  op->gen = ct__gen_next();
  op->in = ct__calloc(d->n_in + 1, sizeof *op->in);
  op->out = ct__calloc(d->n_out + 1, sizeof *op->out);
  op->attr = ct__calloc(d->n_attr + 1, sizeof *op->attr);
  op->attr_set = ct__calloc(d->n_attr + 1, sizeof *op->attr_set);
  if (op->in == NULL || op->out == NULL || op->attr == NULL || op->attr_set == NULL) goto oom;
  for (size_t i = 0; i < d->n_attr; i++) {
    if (!copy_value(&op->attr[i], &d->attr[i].value)) {
      op->attr[i].type = CT_ATTR_INT; /* nothing owned */
      goto oom;
    }
  }
  return op;
oom:
  ct_op_free(op);
  return ct__error_null(CT_ERR_OUT_OF_MEMORY, "ct_op_new: out of host memory for an op '%s'",
                        type);
}

void ct_op_free(ct_op *op) {
  if (op == NULL) return;
  const ct__opdef *d = op->def;
  if (op->in != NULL) {
    for (size_t i = 0; i < d->n_in; i++) free_wiring(&op->in[i]);
  }
  if (op->out != NULL) {
    for (size_t i = 0; i < d->n_out; i++) free_wiring(&op->out[i]);
  }
  if (op->attr != NULL) {
    for (size_t i = 0; i < d->n_attr; i++) free_value(&op->attr[i]);
  }
  free(op->in);
  free(op->out);
  free(op->attr);
  free(op->attr_set);
  free(op);
}

const char *ct_op_type(const ct_op *op) { return op ? op->def->type : ""; }

/* Appends s to buf[*n] within cap (kept terminated). */
static void label_put(char *buf, size_t cap, size_t *n, const char *s) {
  for (; *s != '\0' && *n + 1 < cap; s++) buf[(*n)++] = *s;
  buf[*n] = '\0';
}

/* Without snprintf: collectives label their op on every run (ops/defs/comm.c), where snprintf's
 * cost showed in a one-element allreduce. */
const char *ct__op_label(const ct_op *op, char *buf, size_t cap) {
  size_t n = 0;
  if (cap == 0) return buf;
  label_put(buf, cap, &n, "op ");
  if (op->index >= 0) {
    char digits[24];
    int k = (int)sizeof digits - 1;
    digits[k] = '\0';
    long v = op->index;
    do {
      digits[--k] = (char)('0' + v % 10);
      v /= 10;
    } while (v > 0 && k > 0);
    label_put(buf, cap, &n, "#");
    label_put(buf, cap, &n, digits + k);
    label_put(buf, cap, &n, " ");
  }
  label_put(buf, cap, &n, "'");
  label_put(buf, cap, &n, op->def->type);
  label_put(buf, cap, &n, "'");
  return buf;
}

/* "X, Y" into buf: the names of n slots or attributes, for messages. */
static const char *list_names(const void *items, size_t n, size_t stride, char *buf, size_t cap) {
  size_t pos = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n && pos + 1 < cap; i++) {
    const char *name = *(const char *const *)(const void *)((const char *)items + i * stride);
    int w = snprintf(buf + pos, cap - pos, "%s%s", i ? ", " : "", name);
    if (w < 0) break;
    pos += (size_t)w;
  }
  if (n == 0) snprintf(buf, cap, "none");
  return buf;
}

static ct_status set_wiring(ct_op *op, bool output, const char *slot, const char *const *vars,
                            size_t n, const char *fn) {
  if (op == NULL || slot == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "%s: the op or the slot name is NULL", fn);
  }
  const ct__opdef *d = op->def;
  const ct_slot_def *slots = output ? d->out : d->in;
  size_t n_slots = output ? d->n_out : d->n_in;
  const char *kind = output ? "output" : "input";
  size_t s = 0;
  while (s < n_slots && strcmp(slots[s].name, slot) != 0) s++;
  if (s == n_slots) {
    char names[256];
    return ct__error(CT_ERR_NOT_FOUND, "%s: op '%s' has no %s slot '%s' (its %s slots: %s)", fn,
                     d->type, kind, slot, kind,
                     list_names(slots, n_slots, sizeof *slots, names, sizeof names));
  }
  if (n > 1 && !(slots[s].flags & CT_SLOT_MANY)) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "%s: op '%s' %s slot '%s' takes one variable, got %zu", fn, d->type, kind,
                     slot, n);
  }
  if (n > 0 && vars == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "%s: op '%s' %s slot '%s': the names are NULL", fn,
                     d->type, kind, slot);
  }
  for (size_t i = 0; i < n; i++) {
    if (vars[i] == NULL || vars[i][0] == '\0') {
      return ct__error(CT_ERR_INVALID_ARGUMENT,
                       "%s: op '%s' %s slot '%s': variable name %zu is NULL or empty", fn,
                       d->type, kind, slot, i);
    }
  }
  ct__wiring w = {.names = n ? ct__calloc(n, sizeof(char *)) : NULL, .n = n};
  bool ok = n == 0 || w.names != NULL;
  for (size_t i = 0; ok && i < n; i++) {
    size_t len = strlen(vars[i]) + 1;
    w.names[i] = ct__malloc(len);
    if (w.names[i] == NULL) {
      ok = false;
    } else {
      memcpy(w.names[i], vars[i], len);
    }
  }
  if (!ok) {
    free_wiring(&w);
    return ct__error(CT_ERR_OUT_OF_MEMORY, "%s: out of host memory wiring op '%s' %s slot '%s'",
                     fn, d->type, kind, slot);
  }
  ct__wiring *dst = output ? &op->out[s] : &op->in[s];
  free_wiring(dst);
  *dst = w;
  op->wire_gen++;
  ct__op_edited(op);
  return CT_OK;
}

ct_status ct_op_set_inputs(ct_op *op, const char *slot, const char *const *vars, size_t n) {
  return set_wiring(op, false, slot, vars, n, "ct_op_set_inputs");
}

ct_status ct_op_set_outputs(ct_op *op, const char *slot, const char *const *vars, size_t n) {
  return set_wiring(op, true, slot, vars, n, "ct_op_set_outputs");
}

ct_status ct_op_set_input(ct_op *op, const char *slot, const char *var) {
  return set_wiring(op, false, slot, &var, 1, "ct_op_set_input");
}

ct_status ct_op_set_output(ct_op *op, const char *slot, const char *var) {
  return set_wiring(op, true, slot, &var, 1, "ct_op_set_output");
}

/* Stores v (already an owned copy, or a scalar) as attribute name; frees v's storage on error. */
static ct_status set_attr(ct_op *op, const char *name, ct_attr_value v, const char *fn) {
  if (op == NULL || name == NULL) {
    free_value(&v);
    return ct__error(CT_ERR_INVALID_ARGUMENT, "%s: the op or the attribute name is NULL", fn);
  }
  const ct__opdef *d = op->def;
  size_t a = 0;
  while (a < d->n_attr && strcmp(d->attr[a].name, name) != 0) a++;
  if (a == d->n_attr) {
    char names[256];
    free_value(&v);
    return ct__error(CT_ERR_NOT_FOUND, "%s: op '%s' has no attribute '%s' (its attributes: %s)",
                     fn, d->type, name,
                     list_names(d->attr, d->n_attr, sizeof *d->attr, names, sizeof names));
  }
  ct_attr_type want = d->attr[a].value.type;
  if (want == CT_ATTR_FLOAT && v.type == CT_ATTR_INT) {
    v.u.f = (double)v.u.i;
    v.type = CT_ATTR_FLOAT;
  }
  if (v.type != want) {
    ct_attr_type got = v.type;
    free_value(&v);
    return ct__error(CT_ERR_TYPE_MISMATCH,
                     "%s: op '%s' attribute '%s' is of type %s, not %s: use "
                     "ct_op_set_attr_%s",
                     fn, d->type, name, ct_attr_type_name(want), ct_attr_type_name(got),
                     ct_attr_type_name(want));
  }
  free_value(&op->attr[a]);
  op->attr[a] = v;
  op->attr_set[a] = true;
  ct__op_edited(op);
  return CT_OK;
}

ct_status ct__op_set_attr_value(ct_op *op, const char *name, const ct_attr_value *v) {
  if (v->type == CT_ATTR_PROGRAM) return CT_OK; /* a program stays with its op */
  ct_attr_value c;
  if (!copy_value(&c, v)) {
    return ct__error(CT_ERR_OUT_OF_MEMORY, "op '%s' attribute '%s': out of host memory",
                     op->def->type, name);
  }
  return set_attr(op, name, c, "ct__op_set_attr_value");
}

ct_status ct_op_set_attr_int(ct_op *op, const char *name, int64_t v) {
  return set_attr(op, name, (ct_attr_value){.type = CT_ATTR_INT, .u.i = v}, "ct_op_set_attr_int");
}

ct_status ct_op_set_attr_float(ct_op *op, const char *name, double v) {
  return set_attr(op, name, (ct_attr_value){.type = CT_ATTR_FLOAT, .u.f = v},
                  "ct_op_set_attr_float");
}

ct_status ct_op_set_attr_bool(ct_op *op, const char *name, bool v) {
  return set_attr(op, name, (ct_attr_value){.type = CT_ATTR_BOOL, .u.b = v},
                  "ct_op_set_attr_bool");
}

ct_status ct_op_set_attr_string(ct_op *op, const char *name, const char *v) {
  if (v == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_op_set_attr_string: the value of '%s' is NULL",
                     name ? name : "(null)");
  }
  ct_attr_value c;
  if (!copy_value(&c, &(ct_attr_value){.type = CT_ATTR_STRING, .u.s = v})) {
    return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_op_set_attr_string: out of host memory");
  }
  return set_attr(op, name, c, "ct_op_set_attr_string");
}

static ct_status set_list(ct_op *op, const char *name, ct_attr_type type, const void *v, size_t n,
                          const char *fn) {
  if (n > 0 && v == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "%s: the values of '%s' are NULL", fn,
                     name ? name : "(null)");
  }
  if (n > SIZE_MAX / 8) {
    return ct__error(CT_ERR_OUT_OF_RANGE, "%s: %zu values for '%s' are too many", fn, n,
                     name ? name : "(null)");
  }
  ct_attr_value src = {.type = type};
  if (type == CT_ATTR_INTS) {
    src.u.ints.v = v;
    src.u.ints.n = n;
  } else {
    src.u.floats.v = v;
    src.u.floats.n = n;
  }
  ct_attr_value c;
  if (!copy_value(&c, &src)) {
    return ct__error(CT_ERR_OUT_OF_MEMORY, "%s: out of host memory for %zu values", fn, n);
  }
  return set_attr(op, name, c, fn);
}

ct_status ct_op_set_attr_ints(ct_op *op, const char *name, const int64_t *v, size_t n) {
  return set_list(op, name, CT_ATTR_INTS, v, n, "ct_op_set_attr_ints");
}

ct_status ct_op_set_attr_floats(ct_op *op, const char *name, const double *v, size_t n) {
  return set_list(op, name, CT_ATTR_FLOATS, v, n, "ct_op_set_attr_floats");
}

ct_status ct_op_set_attr_program(ct_op *op, const char *name, ct_program *p) {
  const char *n = name ? name : "(null)";
  if (p == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_op_set_attr_program: the program of '%s' is NULL",
                     n);
  }
  if (ct__program_owned(p)) {
    /* Setting the program an attribute already holds again changes nothing. */
    if (op != NULL && name != NULL) {
      for (size_t a = 0; a < op->def->n_attr; a++) {
        if (op->attr[a].type == CT_ATTR_PROGRAM && op->attr[a].u.program == p &&
            strcmp(op->def->attr[a].name, name) == 0) {
          return CT_OK;
        }
      }
    }
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_op_set_attr_program: the program for '%s' already belongs to an op's "
                     "attribute: build a new program (it was left where it is)",
                     n);
  }
  if (op != NULL && ct__program_contains(p, op)) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_op_set_attr_program: the program for '%s' of op '%s' contains that op "
                     "itself: an op cannot hold its own program (the program was not taken)",
                     n, op->def->type);
  }
  ct__program_set_holder(p, op);
  return set_attr(op, name, (ct_attr_value){.type = CT_ATTR_PROGRAM, .u.program = p},
                  "ct_op_set_attr_program");
}

/* ---- Reading the wiring back ------------------------------------------------------------- */

/* The wiring of slot `slot` among the op's inputs or outputs, NULL when there is none. */
static const ct__wiring *wiring_of(const ct_op *op, bool output, const char *slot) {
  if (op == NULL || slot == NULL) return NULL;
  const ct_slot_def *defs = output ? op->def->out : op->def->in;
  size_t n = output ? op->def->n_out : op->def->n_in;
  for (size_t s = 0; s < n; s++) {
    if (strcmp(defs[s].name, slot) == 0) return output ? &op->out[s] : &op->in[s];
  }
  return NULL;
}

size_t ct_op_input_count(const ct_op *op, const char *slot) {
  const ct__wiring *w = wiring_of(op, false, slot);
  return w ? w->n : 0;
}

size_t ct_op_output_count(const ct_op *op, const char *slot) {
  const ct__wiring *w = wiring_of(op, true, slot);
  return w ? w->n : 0;
}

const char *ct_op_input(const ct_op *op, const char *slot, size_t i) {
  const ct__wiring *w = wiring_of(op, false, slot);
  return w != NULL && i < w->n ? w->names[i] : NULL;
}

const char *ct_op_output(const ct_op *op, const char *slot, size_t i) {
  const ct__wiring *w = wiring_of(op, true, slot);
  return w != NULL && i < w->n ? w->names[i] : NULL;
}

ct_status ct_op_get_attr(const ct_op *op, const char *name, ct_attr_value *out) {
  if (op == NULL || name == NULL || out == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_op_get_attr: the op, name or out is NULL");
  }
  const ct__opdef *d = op->def;
  for (size_t a = 0; a < d->n_attr; a++) {
    if (strcmp(d->attr[a].name, name) == 0) {
      *out = op->attr[a];
      return CT_OK;
    }
  }
  return ct__error(CT_ERR_NOT_FOUND, "ct_op_get_attr: op '%s' has no attribute '%s'", d->type,
                   name);
}
