/* SPDX-License-Identifier: Apache-2.0 */
/* ops/passes_rewrite.c: what the optimize option's passes share once a rewrite is chosen
 * (docs/design/passes.md): the ops between a chain's members, the splice of a fused op into the
 * executor's preps with its fallback (the chain's own preps, run when the fused op fails a run),
 * the memory assumptions checked at every run, and the rewrites' edit generations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "memory/memory_impl.h"
#include "ops/op_impl.h"
#include "tensor/tensor_impl.h"

/* Whether variables a and b hold memory of one block now. */
static bool same_block(const ct_var *a, const ct_var *b) {
  /* Asked without recording an error for a variable that holds nothing yet (every run checks). */
  if (!ct_var_is(a, &ct_tensor_type) || !ct_var_is(b, &ct_tensor_type)) return false;
  const ct_tensor *x = ct_var_get_tensor(a), *y = ct_var_get_tensor(b);
  return x != NULL && y != NULL && x->block != NULL && x->block == y->block;
}

bool ct__pass_between_holds(const ct__prep *preps, const size_t *members, size_t n_members,
                            const ct_var *const *ins, const size_t *read_at, size_t n_ins,
                            bool (*candidate)(void *, const ct_var *), void *arg) {
  size_t first = SIZE_MAX, last = 0;
  for (size_t m = 0; m < n_members; m++) {
    if (members[m] == SIZE_MAX) continue;
    first = members[m] < first ? members[m] : first;
    last = members[m] > last ? members[m] : last;
  }
  for (size_t j = first + 1; j < last; j++) {
    bool member = false;
    for (size_t m = 0; m < n_members; m++) member |= members[m] == j;
    if (member) continue;
    const ct__prep *q = &preps[j];
    for (size_t t = 0; t < q->op->def->n_attr; t++) {
      if (q->op->attr[t].type == CT_ATTR_PROGRAM) return false;
    }
    for (uint32_t o = q->n_in_vars; o < q->n_in_vars + q->n_out_vars; o++) {
      if (!candidate(arg, q->vars[o])) return false;
      for (size_t i = 0; i < n_ins; i++) {
        if (ins[i] != NULL && q->vars[o] == ins[i] && j > read_at[i]) return false;
      }
    }
  }
  return true;
}

static ct_status oom(void) {
  return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_executor_new: out of host memory (optimize)");
}

/* Room for one more rewrite in rw. */
ct_status ct__pass_rewrite_room(ct__rewrites *rw) {
  if (rw->n < rw->cap) return CT_OK;
  size_t cap = rw->cap ? 2 * rw->cap : 8;
  ct__rewrite *grown = ct__realloc(rw->v, cap * sizeof *grown);
  if (grown == NULL) return oom();
  rw->v = grown;
  rw->cap = cap;
  return CT_OK;
}

ct_status ct__pass_splice(ct__prep *preps, size_t *n, const size_t *members, size_t n_members,
                          size_t last, ct__prep *fused, ct__rewrite *r) {
  ct__fallback *fb = ct__calloc(1, sizeof *fb);
  size_t n_outs = 0;
  for (size_t m = 0; m < n_members; m++) n_outs += preps[members[m]].n_out_vars;
  if (fb != NULL) {
    fb->preps = ct__calloc(n_members, sizeof *fb->preps);
    fb->drop = ct__calloc(n_outs, sizeof *fb->drop);
  }
  if (fb == NULL || fb->preps == NULL || fb->drop == NULL) {
    if (fb != NULL) {
      free(fb->preps);
      free(fb->drop);
    }
    free(fb);
    ct__prep_destroy(fused);
    return oom();
  }
  const ct_var *result = ct__pass_out0(&preps[last]);
  size_t w = 0;
  for (size_t k = 0; k < *n; k++) {
    bool member = false;
    for (size_t m = 0; m < n_members; m++) member |= members[m] == k;
    if (member) {
      const ct__prep *q = &preps[k];
      for (uint32_t o = q->n_in_vars; o < q->n_in_vars + q->n_out_vars; o++) {
        if (q->vars[o] != result) fb->drop[fb->n_drop++] = q->vars[o];
      }
      fb->preps[fb->n++] = preps[k]; /* in program order */
    }
    if (k == last) {
      preps[w] = *fused;
      preps[w++].fallback = fb;
    } else if (!member) {
      preps[w++] = preps[k];
    }
  }
  *n = w;
  r->fallback = fb;
  return CT_OK;
}

ct_status ct__pass_apply(ct__prep *preps, size_t *n, ct_scope *scope, ct_place place, ct_op *op,
                         const size_t *at, size_t n_at, size_t last, const ct__rewrite *memory,
                         ct__rewrites *rw) {
  ct__prep fused;
  if (op == NULL || ct__pass_rewrite_room(rw) != CT_OK ||
      ct__prep_init(&fused, op, scope, place, NULL, NULL) != CT_OK) {
    ct_op_free(op);
    return ct_last_status();
  }
  ct__rewrite *r = &rw->v[rw->n++];
  *r = *memory;
  r->op = op;
  r->fallback = NULL;
  r->n_origin = 0;
  size_t members[CT__REWRITE_MAX], k = 0;
  for (size_t m = 0; m < n_at; m++) {
    if (at[m] == SIZE_MAX) continue;
    members[k++] = at[m];
    r->origin[r->n_origin] = preps[at[m]].op;
    r->gen[r->n_origin++] = preps[at[m]].op->gen;
  }
  return ct__pass_splice(preps, n, members, k, last, &fused, r);
}

ct_status ct__prep_run_guarded(ct__prep *p, const uint64_t *errors) {
  ct_status before = ct_last_status();
  bool quiet = ct__errors_quiet;
  ct__errors_quiet = true;
  ct_status s = ct__prep_run_counted(p, errors);
  ct__errors_quiet = quiet;
  if (CT__LIKELY(s == CT_OK)) {
    ct__error_status_put(before); /* a failure the op recovered from stays unseen */
    return CT_OK;
  }
  const ct__fallback *fb = p->fallback;
  uint64_t seen = *errors;
  for (size_t k = 0; k < fb->n; k++) {
    ct__prep *q = &fb->preps[k];
    s = q->fallback != NULL ? ct__prep_run_guarded(q, errors) : ct__prep_run_counted(q, errors);
    if (s != CT_OK) break;
  }
  for (size_t k = 0; k < fb->n_drop; k++) {
    /* Asked without recording an error: a member after a failing one never made its output. */
    if (!ct_var_is(fb->drop[k], &ct_tensor_type)) continue;
    ct_tensor *t = (ct_tensor *)ct_var_get_tensor(fb->drop[k]);
    if (t != NULL) ct__tensor_drop_memory(t);
  }
  /* The quiet attempt's status goes; an error the ops recorded and recovered from stays, as it
   * would without the option. */
  if (s == CT_OK && *errors == seen) ct__error_status_put(before);
  return s;
}

static void fallback_free(ct__fallback *fb) {
  if (fb == NULL) return;
  for (size_t k = 0; k < fb->n; k++) ct__prep_destroy(&fb->preps[k]);
  free(fb->preps);
  free(fb->drop);
  free(fb);
}

/* The rewrite's memory assumptions (ct__rewrite): NULL when they hold, else the variable that
 * breaks them. A result that is one of the inputs by name breaks them too (the fused op would
 * write it into a block of its own, where the chain's last op wrote it in place). */
const ct_var *ct__pass_apart(const ct__rewrite *r) {
  for (size_t k = 0; r->out != NULL && k < r->n_ins; k++) {
    if (r->ins[k] == r->out || same_block(r->out, r->ins[k])) return r->out;
  }
  return NULL;
}

ct_status ct__rewrites_check(const ct__rewrites *rw) {
  for (size_t i = 0; i < rw->n; i++) {
    const ct__rewrite *r = &rw->v[i];
    const ct_var *v = ct__pass_apart(r);
    if (CT__UNLIKELY(v != NULL)) {
      return ct__error(CT_ERR_INVALID_ARGUMENT,
                       "ct_executor_run: variable '%s' now shares memory with another variable "
                       "or a caller's buffer, and this executor merged ops around it (the "
                       "optimize option) assuming it did not: make a new executor",
                       ct_var_name(v));
    }
    for (size_t k = 0; k < r->n_origin; k++) {
      if (r->origin[k]->gen == r->gen[k]) continue;
      char label[CT__OP_LABEL_CAP];
      return ct__error(CT_ERR_INVALID_ARGUMENT,
                       "ct_executor_run: %s was edited after this executor fused it with its "
                       "neighbours (the optimize option): make a new executor",
                       ct__op_label(r->origin[k], label, sizeof label));
    }
  }
  return CT_OK;
}

void ct__rewrites_free(ct__rewrites *rw) {
  for (size_t i = 0; i < rw->n; i++) {
    fallback_free(rw->v[i].fallback);
    ct_op_free(rw->v[i].op);
  }
  free(rw->v);
  *rw = (ct__rewrites){0};
}
