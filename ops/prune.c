/* SPDX-License-Identifier: Apache-2.0 */
/* ops/prune.c: ct_program_prune, a program cut down to the ops some variables depend on.
 *
 * One walk from the last op to the first with the set of names a staying op after the current
 * one reads (the targets to begin with): an op stays when it writes a name of the set, and its
 * inputs, with every input of the programs nested in it, join the set. The set only grows: an
 * earlier writer of a name that a later staying op overwrites stays too, which costs a little
 * work and can never change a value (an op may write only part of an output, or read it). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "ops/op_impl.h"

/* Names (borrowed from the ops) in an open-addressing table, at most half full. */
typedef struct name_set {
  const char **slot;
  size_t cap, n;
} name_set;

static uint64_t name_hash(const char *s) {
  uint64_t h = 1469598103934665603u; /* FNV-1a */
  for (; *s != '\0'; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

static bool set_has(const name_set *set, const char *name) {
  if (set->cap == 0) return false;
  for (size_t i = name_hash(name) & (set->cap - 1);; i = (i + 1) & (set->cap - 1)) {
    if (set->slot[i] == NULL) return false;
    if (strcmp(set->slot[i], name) == 0) return true;
  }
}

static bool set_add(name_set *set, const char *name) {
  if (set_has(set, name)) return true;
  if (2 * (set->n + 1) > set->cap) {
    size_t cap = set->cap ? 2 * set->cap : 64;
    const char **slot = ct__calloc(cap, sizeof *slot);
    if (slot == NULL) return false;
    for (size_t k = 0; k < set->cap; k++) {
      if (set->slot[k] == NULL) continue;
      size_t i = name_hash(set->slot[k]) & (cap - 1);
      while (slot[i] != NULL) i = (i + 1) & (cap - 1);
      slot[i] = set->slot[k];
    }
    free(set->slot);
    set->slot = slot;
    set->cap = cap;
  }
  size_t i = name_hash(name) & (set->cap - 1);
  while (set->slot[i] != NULL) i = (i + 1) & (set->cap - 1);
  set->slot[i] = name;
  set->n++;
  return true;
}

static bool writes_one_of(const ct_op *op, const name_set *set) {
  for (size_t s = 0; s < op->def->n_out; s++) {
    for (size_t k = 0; k < op->out[s].n; k++) {
      if (set_has(set, op->out[s].names[k])) return true;
    }
  }
  return false;
}

/* Adds every input of op, and of the ops of the programs nested in it (which may read the
 * outer scope's variables by name), to set. */
static bool add_reads(const ct_op *op, name_set *set) {
  for (size_t s = 0; s < op->def->n_in; s++) {
    for (size_t k = 0; k < op->in[s].n; k++) {
      if (!set_add(set, op->in[s].names[k])) return false;
    }
  }
  for (size_t a = 0; a < op->def->n_attr; a++) {
    const ct_attr_value *v = &op->attr[a];
    if (v->type != CT_ATTR_PROGRAM || v->u.program == NULL) continue;
    for (size_t i = 0; i < ct_program_size(v->u.program); i++) {
      if (!add_reads(ct_program_op(v->u.program, i), set)) return false;
    }
  }
  return true;
}

static ct_status check_targets(const ct_program *p, const char *const *targets, size_t n) {
  if (p == NULL || n == 0 || targets == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_program_prune: %s: pass the program and at least one target variable",
                     p == NULL ? "the program is NULL" : "no targets");
  }
  if (ct__program_owned(p)) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_program_prune: the program belongs to an op's attribute (a step "
                     "program): prune the program that holds that op");
  }
  for (size_t t = 0; t < n; t++) {
    if (targets[t] == NULL || targets[t][0] == '\0') {
      return ct__error(CT_ERR_INVALID_ARGUMENT,
                       "ct_program_prune: target #%zu is NULL or empty: name a variable", t);
    }
    name_set one = {0};
    if (!set_add(&one, targets[t])) {
      return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_program_prune: out of host memory");
    }
    bool written = false;
    for (size_t i = 0; !written && i < ct_program_size(p); i++) {
      written = writes_one_of(ct_program_op(p, i), &one);
    }
    free(one.slot);
    if (!written) {
      return ct__error(CT_ERR_NOT_FOUND,
                       "ct_program_prune: no op of the program writes target '%s': name a "
                       "variable an op outputs (a misspelt name?)",
                       targets[t]);
    }
  }
  return CT_OK;
}

ct_status ct_program_prune(ct_program *p, const char *const *targets, size_t n) {
  ct_status s = check_targets(p, targets, n);
  if (s != CT_OK) return s;
  size_t size = ct_program_size(p);
  bool *keep = ct__calloc(size ? size : 1, sizeof *keep);
  name_set needed = {0};
  bool ok = keep != NULL;
  for (size_t t = 0; ok && t < n; t++) ok = set_add(&needed, targets[t]);
  for (size_t i = size; ok && i-- > 0;) {
    const ct_op *op = ct_program_op(p, i);
    keep[i] = writes_one_of(op, &needed);
    if (keep[i]) ok = add_reads(op, &needed);
  }
  free(needed.slot);
  if (!ok) {
    free(keep);
    return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_program_prune: out of host memory");
  }
  ct__program_retain(p, keep);
  free(keep);
  return CT_OK;
}
