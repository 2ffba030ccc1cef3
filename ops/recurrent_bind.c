/* SPDX-License-Identifier: Apache-2.0 */
/* ops/recurrent_bind.c: the bindings the recurrent op and its gradient keep on their StepScopes
 * list between runs (ops/recurrent.h), so that a run of a shape seen before binds nothing and
 * allocates nothing on the host.
 *
 * The list holds one cache with a tape per op that runs over it (the forward op and its
 * gradient, so two); a third op takes the tape used least recently. Whether a binding still
 * holds is decided by stamps, never by following a pointer the binding kept: the op's edit
 * generation, the place, the parent scope and the stamps of its ancestors for the whole tape, and
 * the step scope's own stamp for each step. The comma-separated name lists a tape keeps parsed
 * (ct__names_split) are here too. */
#include <stdlib.h>
#include <string.h>

#include "ops/recurrent.h"
#include "common/alloc.h"

void ct__names_free(ct__names *l) {
  free(l->buf);
  free(l->v);
  memset(l, 0, sizeof *l);
}

ct_status ct__names_split(const char *s, ct__names *l) {
  if (s == NULL) s = "";
  memset(l, 0, sizeof *l);
  size_t len = strlen(s), commas = 0;
  for (size_t i = 0; i < len; i++) commas += s[i] == ',';
  l->buf = ct__malloc(len + 1);
  l->v = ct__malloc((commas + 1) * sizeof *l->v);
  if (l->buf == NULL || l->v == NULL) {
    ct__names_free(l);
    return CT_ERR_OUT_OF_MEMORY;
  }
  memcpy(l->buf, s, len + 1);
  char *p = l->buf;
  for (;;) {
    char *end = strchr(p, ',');
    if (end != NULL) *end = '\0';
    while (*p == ' ') p++;
    size_t k = strlen(p);
    while (k > 0 && p[k - 1] == ' ') p[--k] = '\0';
    if (k == 0 && (end != NULL || l->n > 0)) {
      ct__names_free(l);
      return CT_ERR_INVALID_ARGUMENT;
    }
    if (k > 0) l->v[l->n++] = p;
    if (end == NULL) break;
    p = end + 1;
  }
  return CT_OK;
}

long ct__names_find(const ct__names *l, const char *name) {
  for (size_t i = 0; i < l->n; i++) {
    if (strcmp(l->v[i], name) == 0) return (long)i;
  }
  return -1;
}

enum { N_TAPES = 2 };

typedef struct rnn_cache {
  ct__rnn_tape tapes[N_TAPES];
  size_t last; /* the tape used last */
} rnn_cache;

static void unbind_steps(ct__rnn_tape *tp) {
  for (size_t t = 0; t < tp->n_steps; t++) {
    ct_executor_free(tp->steps[t].exec);
    tp->steps[t].exec = NULL;
    tp->steps[t].scope = NULL;
  }
}

void ct__rnn_tape_drop(ct__rnn_tape *tp) {
  unbind_steps(tp);
  if (tp->extra != NULL) tp->extra_free(tp->extra);
  tp->extra = NULL;
  for (size_t k = 0; k < CT__RNN_N_NAMES; k++) ct__names_free(&tp->names[k]);
  tp->op = NULL;
  tp->parent = NULL;
  tp->depth = 0;
}

static void tape_free(ct__rnn_tape *tp) {
  ct__rnn_tape_drop(tp);
  for (size_t t = 0; t < tp->n_steps; t++) free(tp->steps[t].vars);
  free(tp->steps);
  free(tp->chain);
  memset(tp, 0, sizeof *tp);
}

static void cache_free(void *obj) {
  rnn_cache *rc = obj;
  for (size_t i = 0; i < N_TAPES; i++) tape_free(&rc->tapes[i]);
  free(rc);
}

static bool same_place(ct_place a, ct_place b) { return a.kind == b.kind && a.device == b.device; }

ct__rnn_tape *ct__rnn_tape_get(ct_scope_list *list, const ct_kernel_ctx *c, bool *fresh) {
  rnn_cache *rc = ct__scope_list_cache(list);
  if (rc == NULL) {
    rc = ct__calloc(1, sizeof *rc);
    if (rc == NULL) {
      ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY, "out of host memory for its step bindings");
      return NULL;
    }
    ct__scope_list_set_cache(list, rc, cache_free);
  }
  size_t i = 0;
  while (i < N_TAPES && rc->tapes[i].op != c->op) i++;
  if (i == N_TAPES) i = (rc->last + 1) % N_TAPES;
  rc->last = i;
  ct__rnn_tape *tp = &rc->tapes[i];
  *fresh = tp->op != c->op || tp->gen != c->op->gen || !same_place(tp->place, c->place);
  if (*fresh) {
    ct__rnn_tape_drop(tp);
    tp->op = c->op;
    tp->gen = c->op->gen;
    tp->place = c->place;
  }
  return tp;
}

/* Whether the stamps of parent and its ancestors are the ones the tape recorded. */
static bool chain_holds(const ct__rnn_tape *tp, const ct_scope *parent) {
  if (tp->parent != parent) return false;
  size_t k = 0;
  for (const ct_scope *s = parent; s != NULL; s = ct_scope_parent(s), k++) {
    if (k == tp->depth || tp->chain[k] != ct__scope_stamp(s)) return false;
  }
  return k == tp->depth;
}

static ct_status oom(void) {
  return ct__error(CT_ERR_OUT_OF_MEMORY, "out of host memory for the step bindings");
}

ct_status ct__rnn_tape_begin(ct__rnn_tape *tp, const ct_scope *parent, size_t T, size_t n_vars) {
  if (!chain_holds(tp, parent)) {
    unbind_steps(tp);
    size_t depth = 0;
    for (const ct_scope *s = parent; s != NULL; s = ct_scope_parent(s)) depth++;
    if (depth > tp->chain_cap) {
      uint64_t *grown = ct__realloc(tp->chain, depth * sizeof *grown);
      if (grown == NULL) return oom();
      tp->chain = grown;
      tp->chain_cap = depth;
    }
    size_t k = 0;
    for (const ct_scope *s = parent; s != NULL; s = ct_scope_parent(s)) {
      tp->chain[k++] = ct__scope_stamp(s);
    }
    tp->depth = depth;
    tp->parent = parent;
    tp->chain_gen++;
  }
  if (n_vars != tp->n_vars) {
    unbind_steps(tp);
    for (size_t t = 0; t < tp->n_steps; t++) {
      free(tp->steps[t].vars);
      tp->steps[t].vars = NULL;
    }
    tp->n_vars = n_vars;
  }
  if (T > tp->n_steps) {
    ct__rnn_step *grown = ct__realloc(tp->steps, T * sizeof *grown);
    if (grown == NULL) return oom();
    memset(grown + tp->n_steps, 0, (T - tp->n_steps) * sizeof *grown);
    tp->steps = grown;
    tp->n_steps = T;
  }
  return CT_OK;
}

ct__rnn_step *ct__rnn_tape_bind(ct__rnn_tape *tp, size_t t, ct_scope *s, const ct_program *p,
                                ct_var *const *vars) {
  ct__rnn_step *st = &tp->steps[t];
  ct_executor_free(st->exec);
  st->exec = NULL;
  st->scope = NULL;
  if (st->vars == NULL && tp->n_vars > 0) {
    st->vars = ct__malloc(tp->n_vars * sizeof *st->vars);
    if (st->vars == NULL) return (void)oom(), NULL;
  }
  st->exec = ct_executor_new(p, s, tp->place);
  if (st->exec == NULL) return NULL;
  if (tp->n_vars > 0) memcpy(st->vars, vars, tp->n_vars * sizeof *vars);
  st->scope = s;
  st->stamp = ct__scope_stamp(s);
  return st;
}
