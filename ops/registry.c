/* SPDX-License-Identifier: Apache-2.0 */
/* ops/registry.c: the table of op types and their kernels.
 *
 * Types are looked up by name only when an op is made (ct_op_new), under a mutex; a kernel is
 * found at run time by indexing the type's table with the device kind and dtype, an atomic
 * load, so registration may happen while ops run. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>

#include "common/alloc.h"
#include "ops/defs.h"

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t builtins_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int builtins_ready;
static ct_status register_builtins(void);
static ct__opdef **defs;
static size_t n_defs, cap_defs;

static ct__opdef *find_locked(const char *type) {
  for (size_t i = 0; i < n_defs; i++) {
    if (strcmp(defs[i]->type, type) == 0) return defs[i];
  }
  return NULL;
}

const char *ct_attr_type_name(ct_attr_type t) {
  switch (t) {
    case CT_ATTR_INT: return "int";
    case CT_ATTR_FLOAT: return "float";
    case CT_ATTR_BOOL: return "bool";
    case CT_ATTR_STRING: return "string";
    case CT_ATTR_INTS: return "ints";
    case CT_ATTR_FLOATS: return "floats";
    case CT_ATTR_PROGRAM: return "program";
  }
  return "unknown";
}

static void free_def(ct__opdef *d) {
  if (d == NULL) return;
  for (size_t i = 0; i < d->n_in; i++) free((char *)d->in[i].name);
  for (size_t i = 0; i < d->n_out; i++) free((char *)d->out[i].name);
  for (size_t i = 0; i < d->n_attr; i++) {
    free((char *)d->attr[i].name);
    ct_attr_value *v = &d->attr[i].value;
    if (v->type == CT_ATTR_STRING) free((char *)v->u.s);
    if (v->type == CT_ATTR_INTS) free((int64_t *)v->u.ints.v);
    if (v->type == CT_ATTR_FLOATS) free((double *)v->u.floats.v);
  }
  free(d->in);
  free(d->out);
  free(d->attr);
  free(d->type);
  if (d->doc_owned) free((char *)atomic_load(&d->doc));
  free(d);
}

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *c = ct__malloc(n);
  if (c != NULL) memcpy(c, s, n);
  return c;
}

/* Copies n elements of size sz (NULL for n == 0 is fine); *ok cleared on failure. */
static void *dup_mem(const void *src, size_t n, size_t sz, bool *ok) {
  if (n == 0) return NULL;
  void *c = ct__calloc(n, sz);
  if (c == NULL) {
    *ok = false;
    return NULL;
  }
  memcpy(c, src, n * sz);
  return c;
}

static ct_status check_names(const char *type, const char *what, const char *const *names,
                             size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (names[i] == NULL || names[i][0] == '\0') {
      return ct__error(CT_ERR_INVALID_ARGUMENT,
                       "ct_op_register: op type '%s': %s %zu has no name: give every %s a name",
                       type, what, i, what);
    }
    for (size_t j = 0; j < i; j++) {
      if (strcmp(names[i], names[j]) == 0) {
        return ct__error(CT_ERR_INVALID_ARGUMENT,
                         "ct_op_register: op type '%s': %s '%s' is declared twice", type, what,
                         names[i]);
      }
    }
  }
  return CT_OK;
}

static ct_status check_def(const ct_op_def *def) {
  if (def == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_op_register: the op definition is NULL");
  }
  if (def->type == NULL || def->type[0] == '\0') {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_op_register: the op type has no name");
  }
  if ((def->n_inputs > 0 && def->inputs == NULL) || (def->n_outputs > 0 && def->outputs == NULL) ||
      (def->n_attrs > 0 && def->attrs == NULL)) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_op_register: op type '%s': a slot or attribute count is set but its "
                     "array is NULL",
                     def->type);
  }
  if (def->n_inputs > 64 || def->n_outputs > 64 || def->n_attrs > 64) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_op_register: op type '%s': at most 64 input slots, 64 output slots and "
                     "64 attributes",
                     def->type);
  }
  const char *names[64];
  for (size_t i = 0; i < def->n_inputs; i++) names[i] = def->inputs[i].name;
  ct_status s = check_names(def->type, "input slot", names, def->n_inputs);
  if (s != CT_OK) return s;
  for (size_t i = 0; i < def->n_outputs; i++) names[i] = def->outputs[i].name;
  if ((s = check_names(def->type, "output slot", names, def->n_outputs)) != CT_OK) return s;
  for (size_t i = 0; i < def->n_attrs; i++) {
    names[i] = def->attrs[i].name;
    ct_attr_type t = def->attrs[i].value.type;
    if (t < CT_ATTR_INT || t > CT_ATTR_PROGRAM) {
      return ct__error(CT_ERR_INVALID_ARGUMENT,
                       "ct_op_register: op type '%s': attribute %zu has type %d: use a "
                       "ct_attr_type",
                       def->type, i, (int)t);
    }
  }
  if ((s = check_names(def->type, "attribute", names, def->n_attrs)) != CT_OK) return s;
  if ((def->flags & ~(unsigned)CT_OP_PURE_INFER) != 0) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_op_register: op type '%s': flags 0x%x hold bits that are no CT_OP_* "
                     "flag: set only CT_OP_PURE_INFER, or 0",
                     def->type, def->flags);
  }
  if (def->dtype_attr != NULL) {
    size_t i = 0;
    while (i < def->n_attrs && (def->attrs[i].name == NULL ||
                                strcmp(def->attrs[i].name, def->dtype_attr) != 0)) {
      i++;
    }
    if (i == def->n_attrs || def->attrs[i].value.type != CT_ATTR_INT) {
      return ct__error(CT_ERR_INVALID_ARGUMENT,
                       "ct_op_register: op type '%s': dtype_attr '%s' names no int attribute",
                       def->type, def->dtype_attr);
    }
  }
  return CT_OK;
}

/* The registry's own copy of def; NULL when memory runs out. */
static ct__opdef *copy_def(const ct_op_def *def) {
  ct__opdef *d = ct__calloc(1, sizeof *d);
  if (d == NULL) return NULL;
  bool ok = true;
  d->n_in = def->n_inputs;
  d->n_out = def->n_outputs;
  d->n_attr = def->n_attrs;
  d->infer_shape = def->infer_shape;
  d->flags = def->flags;
  d->grad = def->grad;
  d->dtype_attr = -1;
  d->type = dup_str(def->type);
  d->in = dup_mem(def->inputs, d->n_in, sizeof *d->in, &ok);
  d->out = dup_mem(def->outputs, d->n_out, sizeof *d->out, &ok);
  d->attr = dup_mem(def->attrs, d->n_attr, sizeof *d->attr, &ok);
  if (!ok || d->type == NULL) {
    /* The copied arrays still point at the caller's names: drop them before freeing. */
    d->n_in = d->n_out = d->n_attr = 0;
    free_def(d);
    return NULL;
  }
  for (size_t i = 0; i < d->n_in; i++) {
    d->in[i].name = dup_str(def->inputs[i].name);
    ok = ok && d->in[i].name != NULL;
  }
  for (size_t i = 0; i < d->n_out; i++) {
    d->out[i].name = dup_str(def->outputs[i].name);
    ok = ok && d->out[i].name != NULL;
  }
  for (size_t i = 0; i < d->n_attr; i++) {
    const ct_attr_value *src = &def->attrs[i].value;
    ct_attr_value *v = &d->attr[i].value;
    d->attr[i].name = dup_str(def->attrs[i].name);
    ok = ok && d->attr[i].name != NULL;
    if (def->dtype_attr != NULL && strcmp(def->attrs[i].name, def->dtype_attr) == 0) {
      d->dtype_attr = (int)i;
    }
    if (v->type == CT_ATTR_STRING) {
      v->u.s = src->u.s ? dup_str(src->u.s) : dup_str("");
      ok = ok && v->u.s != NULL;
    } else if (v->type == CT_ATTR_INTS) {
      v->u.ints.v = src->u.ints.v ? dup_mem(src->u.ints.v, src->u.ints.n, sizeof(int64_t), &ok)
                                  : NULL;
      if (src->u.ints.v == NULL) v->u.ints.n = 0;
    } else if (v->type == CT_ATTR_FLOATS) {
      v->u.floats.v = src->u.floats.v
                          ? dup_mem(src->u.floats.v, src->u.floats.n, sizeof(double), &ok)
                          : NULL;
      if (src->u.floats.v == NULL) v->u.floats.n = 0;
    } else if (v->type == CT_ATTR_PROGRAM) {
      v->u.program = NULL; /* programs are never defaults: an op's own program, or none */
    }
  }
  if (!ok) {
    free_def(d);
    return NULL;
  }
  return d;
}


ct__opdef *ct__op_find(const char *type) {
  pthread_mutex_lock(&registry_lock);
  ct__opdef *d = find_locked(type);
  pthread_mutex_unlock(&registry_lock);
  return d;
}

ct_status ct_op_register(const ct_op_def *def) {
  ct_status s = ct__ops_ready();
  return s != CT_OK ? s : ct__op_register(def);
}

ct_status ct__op_register(const ct_op_def *def) {
  ct_status s = check_def(def);
  if (s != CT_OK) return s;
  ct__opdef *d = copy_def(def);
  if (d == NULL) {
    return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_op_register: out of host memory for op type '%s'",
                     def->type);
  }
  pthread_mutex_lock(&registry_lock);
  if (find_locked(def->type) != NULL) {
    pthread_mutex_unlock(&registry_lock);
    free_def(d);
    return ct__error(CT_ERR_ALREADY_EXISTS,
                     "ct_op_register: op type '%s' is already registered: pick another name",
                     def->type);
  }
  if (n_defs == cap_defs) {
    size_t cap = cap_defs ? cap_defs * 2 : 64;
    ct__opdef **grown = ct__realloc(defs, cap * sizeof *grown);
    if (grown == NULL) {
      pthread_mutex_unlock(&registry_lock);
      free_def(d);
      return ct__error(CT_ERR_OUT_OF_MEMORY,
                       "ct_op_register: out of host memory for op type '%s'", def->type);
    }
    defs = grown;
    cap_defs = cap;
  }
  defs[n_defs++] = d;
  pthread_mutex_unlock(&registry_lock);
  return CT_OK;
}

/* ---- The built-in ops ------------------------------------------------------------------------ */

/* A failure other than a lack of memory is a mistake in corten's own tables, so it aborts. */
CT__COLD static void builtin_failed(const char *what, const char *type) {
  fprintf(stderr, "corten: registering %s of built-in op '%s' failed: %s\n", what, type,
          ct_last_error());
  abort();
}

/* Out of memory: every definition registered so far goes again (only built-ins can be there:
 * ct_op_register waits for them), so the next call starts over from nothing. */
CT__COLD static ct_status builtins_oom(void) {
  pthread_mutex_lock(&registry_lock);
  for (size_t i = 0; i < n_defs; i++) free_def(defs[i]);
  n_defs = 0;
  pthread_mutex_unlock(&registry_lock);
  return ct__error(CT_ERR_OUT_OF_MEMORY,
                   "corten: out of host memory registering the built-in ops: free some memory "
                   "and call again");
}

static ct_status register_builtins(void) {
  const ct__builtins *b = &ct__builtin_ops;
  for (size_t t = 0; t < b->n_types; t++) {
    for (size_t i = 0; i < b->types[t]->n; i++) {
      const ct_op_def *def = &b->types[t]->v[i];
      if (ct__op_register(def) == CT_OK) continue;
      if (ct_last_status() == CT_ERR_OUT_OF_MEMORY) return builtins_oom();
      builtin_failed("the type", def->type);
    }
  }
  for (size_t t = 0; t < b->n_kernels; t++) {
    const ct__kernel_table *k = b->kernels[t].table;
    for (size_t i = 0; i < k->n; i++) {
      for (int d = 0; d < CT__N_DTYPES; d++) {
        ct_kernel_fn fn = k->v[i].by_dtype[d];
        if (fn == NULL ||
            ct__kernel_register(k->v[i].type, b->kernels[t].kind, (ct_dtype)d, fn) == CT_OK) {
          continue;
        }
        builtin_failed("a kernel", k->v[i].type); /* kernels allocate nothing */
      }
    }
  }
  if (ct__op_docs_install(b) != CT_OK) { /* a mistake in corten's tables, as above */
    fprintf(stderr, "corten: the built-in ops' documentation: %s\n", ct_last_error());
    abort();
  }
  return CT_OK;
}

ct_status ct__ops_ready(void) {
  if (CT__LIKELY(atomic_load_explicit(&builtins_ready, memory_order_acquire))) return CT_OK;
  pthread_mutex_lock(&builtins_lock);
  ct_status s = CT_OK;
  if (!atomic_load_explicit(&builtins_ready, memory_order_relaxed)) {
    s = register_builtins();
    if (s == CT_OK) atomic_store_explicit(&builtins_ready, 1, memory_order_release);
  }
  pthread_mutex_unlock(&builtins_lock);
  return s;
}

const ct__opdef *ct__op_lookup(const char *type) {
  return ct__ops_ready() == CT_OK ? ct__op_find(type) : NULL;
}

bool ct_op_registered(const char *type) { return type != NULL && ct__op_lookup(type) != NULL; }

ct_status ct_kernel_register(const char *type, ct_device_kind kind, ct_dtype dtype,
                             ct_kernel_fn fn) {
  ct_status s = ct__ops_ready();
  return s != CT_OK ? s : ct__kernel_register(type, kind, dtype, fn);
}

ct_status ct__kernel_register(const char *type, ct_device_kind kind, ct_dtype dtype,
                              ct_kernel_fn fn) {
  if (type == NULL || fn == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_kernel_register: the op type or kernel is NULL");
  }
  if (kind < CT_DEVICE_CPU || kind > CT_DEVICE_CUDA_HOST ||
      (dtype != CT_DTYPE_UNDEFINED && !ct__dtype_valid(dtype))) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_kernel_register: op type '%s': device kind %d / dtype %d: use a "
                     "ct_device_kind and a ct_dtype (CT_DTYPE_UNDEFINED for any dtype)",
                     type, (int)kind, (int)dtype);
  }
  ct__opdef *d = ct__op_find(type);
  if (d == NULL) {
    return ct__error(CT_ERR_NOT_FOUND,
                     "ct_kernel_register: op type '%s' is not registered: call ct_op_register "
                     "first",
                     type);
  }
  ct_kernel_fn expected = NULL;
  if (!atomic_compare_exchange_strong(&d->kernels[kind][dtype], &expected, fn)) {
    return ct__error(CT_ERR_ALREADY_EXISTS,
                     "ct_kernel_register: op type '%s' already has a kernel for %s on device "
                     "kind %d",
                     type, dtype == CT_DTYPE_UNDEFINED ? "any dtype" : ct_dtype_name(dtype),
                     (int)kind);
  }
  return CT_OK;
}

/* ---- Reading the registry ------------------------------------------------------------------ */

ct_status ct_op_type_get(const char *type, ct_op_def *out) {
  if (type == NULL || out == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_op_type_get: the type name or out is NULL");
  }
  ct_status s = ct__ops_ready();
  if (s != CT_OK) return s;
  const ct__opdef *d = ct__op_lookup(type);
  if (d == NULL) {
    return ct__error(CT_ERR_NOT_FOUND,
                     "ct_op_type_get: no op type '%s' is registered: ct_op_type_names lists them",
                     type);
  }
  *out = (ct_op_def){.type = d->type, .inputs = d->in, .n_inputs = d->n_in, .outputs = d->out,
                     .n_outputs = d->n_out, .attrs = d->attr, .n_attrs = d->n_attr,
                     .infer_shape = d->infer_shape,
                     .dtype_attr = d->dtype_attr >= 0 ? d->attr[d->dtype_attr].name : NULL,
                     .grad = d->grad, .flags = d->flags};
  return CT_OK;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

size_t ct_op_type_names(const char **out, size_t cap) {
  if (ct__ops_ready() != CT_OK) return 0;
  pthread_mutex_lock(&registry_lock);
  size_t n = n_defs;
  const char **all = n > 0 ? ct__malloc(n * sizeof *all) : NULL;
  for (size_t i = 0; all != NULL && i < n; i++) all[i] = defs[i]->type;
  pthread_mutex_unlock(&registry_lock);
  if (all == NULL) {
    /* Out of memory for the sorting copy: the names in registration order, unsorted. */
    pthread_mutex_lock(&registry_lock);
    for (size_t i = 0; out != NULL && i < n && i < cap; i++) out[i] = defs[i]->type;
    pthread_mutex_unlock(&registry_lock);
    return n;
  }
  qsort(all, n, sizeof *all, by_name);
  for (size_t i = 0; out != NULL && i < n && i < cap; i++) out[i] = all[i];
  free(all);
  return n;
}

ct_kernel_fn ct_kernel_get(const char *type, ct_device_kind kind, ct_dtype dtype) {
  if (type == NULL || kind < CT_DEVICE_CPU || kind > CT_DEVICE_CUDA_HOST ||
      (dtype != CT_DTYPE_UNDEFINED && !ct__dtype_valid(dtype))) {
    return NULL;
  }
  const ct__opdef *d = ct__op_lookup(type);
  return d == NULL ? NULL : atomic_load(&d->kernels[kind][dtype]);
}
