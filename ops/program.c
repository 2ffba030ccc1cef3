/* SPDX-License-Identifier: Apache-2.0 */
/* ops/program.c: programs (lists of ops) and the executor.
 *
 * The executor binds every op once (ct__prep_init), so a run is a loop over prepared ops with no
 * name look-up. With free_intermediates it also computes, per op, the intermediates whose last
 * read that op is, and drops their memory right after it. With fuse_elementwise, trees of
 * elementwise ops run as one expression (ops/fuse.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "ops/op_impl.h"
#include "memory/memory_impl.h"
#include "ops/profile_impl.h"
#include "scope/scope_watch.h"

struct ct_program {
  ct_op **ops;
  size_t n, cap;
  bool owned;     /* held by an op's program attribute */
  ct_op *holder;  /* that op */
  uint64_t gen;   /* edit generation (ops/op_impl.h) */
  uint64_t ops_gen; /* counts the changes of its list of ops (append, prune) */
};

struct ct_executor {
  ct__prep *preps;
  size_t n;
  const ct_program *prog; /* and its ops_gen when the executor was made: a program whose list */
  uint64_t ops_gen;       /* of ops changed since fails the run */
  ct__scope_watch watch; /* its scope, freed or not (scope/scope_watch.h) */
  ct__rewrites rewrites; /* the optimize option's fused ops (ops/passes.c) */
};

ct_program *ct_program_new(void) {
  ct_program *p = ct__calloc(1, sizeof *p);
  if (p == NULL) {
    return ct__error_null(CT_ERR_OUT_OF_MEMORY, "ct_program_new: out of host memory");
  }
  p->gen = ct__gen_next();
  return p;
}

static _Atomic uint64_t gen_counter;

uint64_t ct__gen_next(void) {
  return atomic_fetch_add_explicit(&gen_counter, 1, memory_order_relaxed) + 1;
}

void ct__program_edited(ct_program *p) {
  uint64_t g = ct__gen_next();
  for (; p != NULL; p = p->holder != NULL ? p->holder->program : NULL) {
    p->gen = g;
    if (p->holder != NULL) p->holder->gen = g;
  }
}

void ct__op_edited(ct_op *op) {
  if (op->program != NULL) {
    ct__program_edited(op->program);
    op->gen = op->program->gen;
  } else {
    op->gen = ct__gen_next();
  }
}

void ct__program_destroy(ct_program *p) {
  if (p == NULL) return;
  for (size_t i = 0; i < p->n; i++) ct_op_free(p->ops[i]);
  free(p->ops);
  free(p);
}

void ct_program_free(ct_program *p) {
  if (p != NULL && p->owned) {
    ct__error(CT_ERR_INVALID_ARGUMENT,
              "ct_program_free: the program belongs to an op's attribute: free that op instead");
    return;
  }
  ct__program_destroy(p);
}

bool ct__program_owned(const ct_program *p) { return p->owned; }

void ct__program_set_holder(ct_program *p, ct_op *holder) {
  p->owned = holder != NULL;
  p->holder = holder;
}

bool ct__program_contains(const ct_program *p, const ct_op *op) {
  for (size_t i = 0; i < p->n; i++) {
    const ct_op *o = p->ops[i];
    if (o == op) return true;
    for (size_t a = 0; a < o->def->n_attr; a++) {
      const ct_attr_value *v = &o->attr[a];
      if (v->type == CT_ATTR_PROGRAM && v->u.program != NULL &&
          ct__program_contains(v->u.program, op)) {
        return true;
      }
    }
  }
  return false;
}

/* The name of op's program attribute that is p or holds, through nested programs, an op that
 * holds p; NULL when none does. Appending op to p would then make op hold its own program. */
static const char *attr_holding_program(const ct_op *op, const ct_program *p) {
  for (size_t a = 0; a < op->def->n_attr; a++) {
    const ct_attr_value *v = &op->attr[a];
    if (v->type != CT_ATTR_PROGRAM || v->u.program == NULL) continue;
    const ct_program *held = v->u.program;
    bool holds = held == p;
    for (size_t i = 0; !holds && i < held->n; i++) {
      holds = attr_holding_program(held->ops[i], p) != NULL;
    }
    if (holds) return op->def->attr[a].name;
  }
  return NULL;
}

ct_status ct_program_append(ct_program *p, ct_op *op) {
  if (p == NULL || op == NULL) {
    ct_op_free(op);
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_program_append: the program or the op is NULL");
  }
  if (op->index >= 0) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_program_append: op '%s' already belongs to a program (as op #%ld): make "
                     "a new op",
                     op->def->type, op->index);
  }
  const char *attr = attr_holding_program(op, p);
  if (attr != NULL) {
    /* The ownership rule of ct_op_set_attr_program, on the other route to the same cycle. */
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_program_append: op '%s' holds the program it is appended to in its "
                     "attribute '%s' (directly or through a nested program): an op cannot hold "
                     "its own program (the op was not appended and still belongs to the caller)",
                     op->def->type, attr);
  }
  if (p->n == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 16;
    ct_op **grown = ct__realloc(p->ops, cap * sizeof *grown);
    if (grown == NULL) {
      ct_op_free(op);
      return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_program_append: out of host memory");
    }
    p->ops = grown;
    p->cap = cap;
  }
  op->index = (long)p->n;
  op->program = p;
  p->ops[p->n++] = op;
  p->ops_gen++;
  ct__program_edited(p);
  return CT_OK;
}

size_t ct_program_size(const ct_program *p) { return p ? p->n : 0; }

const ct_op *ct_program_op(const ct_program *p, size_t i) {
  return p != NULL && i < p->n ? p->ops[i] : NULL;
}

void ct__program_retain(ct_program *p, const bool *keep) {
  size_t n = 0;
  for (size_t i = 0; i < p->n; i++) {
    ct_op *op = p->ops[i];
    if (!keep[i]) {
      op->index = -1; /* no longer the program's: ct_op_free frees it whole */
      op->program = NULL;
      ct_op_free(op);
      continue;
    }
    op->index = (long)n;
    p->ops[n++] = op;
  }
  p->n = n;
  p->ops_gen++;
  ct__program_edited(p);
}

ct_status ct__program_reserve(ct_program *p, size_t extra) {
  if (extra <= p->cap - p->n) return CT_OK;
  size_t cap = p->cap ? p->cap : 16;
  while (cap - p->n < extra) cap *= 2;
  ct_op **grown = ct__realloc(p->ops, cap * sizeof *grown);
  if (grown == NULL) return ct__error(CT_ERR_OUT_OF_MEMORY, "out of host memory for a program");
  p->ops = grown;
  p->cap = cap;
  return CT_OK;
}

/* ---- Liveness -------------------------------------------------------------------------------- */

/* The variables ct_executor_new created: the candidates for freeing. */
typedef struct created_set {
  ct_var **vars;
  size_t n, cap;
  bool oom;
} created_set;

static void note_created(void *arg, ct_var *v) {
  created_set *c = arg;
  if (c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 32;
    ct_var **grown = ct__realloc(c->vars, cap * sizeof *grown);
    if (grown == NULL) {
      c->oom = true;
      return;
    }
    c->vars = grown;
    c->cap = cap;
  }
  c->vars[c->n++] = v;
}

static bool kept(const ct_var *v, const ct_executor_options *o) {
  const char *name = ct_var_name(v);
  for (size_t i = 0; i < o->n_keep; i++) {
    if (o->keep[i] != NULL && strcmp(o->keep[i], name) == 0) return true;
  }
  return false;
}


static bool nested_names(const ct_op *op, const char *name, bool outputs);

/* Whether an op of p names `name` as an input (outputs: as an output), directly or in a program
 * nested in it. */
static bool program_names(const ct_program *p, const char *name, bool outputs) {
  for (size_t i = 0; i < p->n; i++) {
    const ct_op *o = p->ops[i];
    const ct__wiring *w = outputs ? o->out : o->in;
    for (size_t s = 0; s < (outputs ? o->def->n_out : o->def->n_in); s++) {
      for (size_t k = 0; k < w[s].n; k++) {
        if (strcmp(w[s].names[k], name) == 0) return true;
      }
    }
    if (nested_names(o, name, outputs)) return true;
  }
  return false;
}

/* Whether one of op's program attributes names `name` as an input (outputs: an output): a nested
 * program (a recurrent op's step) may reach the variable through the scope's ancestors. */
static bool nested_names(const ct_op *op, const char *name, bool outputs) {
  for (size_t a = 0; a < op->def->n_attr; a++) {
    const ct_attr_value *v = &op->attr[a];
    if (v->type == CT_ATTR_PROGRAM && v->u.program != NULL &&
        program_names(v->u.program, name, outputs)) {
      return true;
    }
  }
  return false;
}

bool ct__nested_reads(const ct_op *op, const char *name) { return nested_names(op, name, false); }
bool ct__nested_writes(const ct_op *op, const char *name) { return nested_names(op, name, true); }

/* For each created, unkept variable: the last op reading it (through a slot, any-type slots
 * included, or through a nested program); it is freed after that op unless that op or a later
 * one writes it (then what it holds at the end is a result). */
static ct_status plan_frees(ct_executor *e, const created_set *c, const ct_executor_options *o) {
  for (size_t j = 0; j < c->n; j++) {
    ct_var *v = c->vars[j];
    if (kept(v, o)) continue;
    long last_read = -1, last_write = -1;
    for (size_t i = 0; i < e->n; i++) {
      const ct__prep *p = &e->preps[i];
      for (uint32_t k = 0; k < p->n_in_vars + p->n_out_vars; k++) {
        if (p->vars[k] != v) continue;
        if (k < p->n_in_vars) {
          last_read = (long)i;
        } else {
          last_write = (long)i;
        }
      }
      if (last_read < (long)i && ct__nested_reads(p->op, ct_var_name(v))) last_read = (long)i;
    }
    /* Never read, or written again at or after its last read (an in-place op's output is a
     * new value): a result, kept. */
    if (last_read < 0 || last_write >= last_read) continue;
    ct__prep *p = &e->preps[last_read];
    ct_var **grown = ct__realloc(p->release, (p->n_release + 1) * sizeof *grown);
    if (grown == NULL) {
      return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_executor_new: out of host memory");
    }
    p->release = grown;
    p->release[p->n_release++] = v;
  }
  return CT_OK;
}

/* fuse_elementwise's intermediates: created by the executor and not kept. */
typedef struct fuse_arg {
  const created_set *created;
  const ct_executor_options *options;
} fuse_arg;

static bool fuse_candidate(void *arg, const ct_var *v) {
  const fuse_arg *a = arg;
  for (size_t j = 0; j < a->created->n; j++) {
    if (a->created->vars[j] == v) return !kept(v, a->options);
  }
  return false;
}

/* ---- The executor ---------------------------------------------------------------------------- */

ct_executor *ct_executor_new(const ct_program *p, ct_scope *scope, ct_place place) {
  return ct_executor_new_with(p, scope, place, NULL);
}

ct_executor *ct_executor_new_with(const ct_program *p, ct_scope *scope, ct_place place,
                                  const ct_executor_options *options) {
  static const ct_executor_options defaults = {0};
  if (p == NULL || scope == NULL) {
    return ct__error_null(CT_ERR_INVALID_ARGUMENT, "ct_executor_new: the program or scope is NULL");
  }
  if (options == NULL) options = &defaults;
  if (options->n_keep > 0 && options->keep == NULL) {
    return ct__error_null(CT_ERR_INVALID_ARGUMENT,
                          "ct_executor_new: options name %zu variables to keep but keep is NULL",
                          options->n_keep);
  }
  if (ct__place_check(place, "ct_executor_new") != CT_OK) return NULL;
  ct_executor *e = ct__calloc(1, sizeof *e);
  created_set created = {0};
  if (e == NULL || (p->n > 0 && (e->preps = ct__calloc(p->n, sizeof *e->preps)) == NULL)) {
    free(e);
    return ct__error_null(CT_ERR_OUT_OF_MEMORY, "ct_executor_new: out of host memory");
  }
  for (size_t i = 0; i < p->n; i++) {
    if (ct__prep_init(&e->preps[i], p->ops[i], scope, place, note_created, &created) != CT_OK) {
      goto fail;
    }
    e->n = i + 1;
    if (created.oom) {
      ct__error(CT_ERR_OUT_OF_MEMORY, "ct_executor_new: out of host memory");
      goto fail;
    }
  }
  fuse_arg fa = {&created, options};
  if (options->optimize &&
      ct__optimize(e->preps, &e->n, scope, place, fuse_candidate, &fa, &e->rewrites) != CT_OK) {
    goto fail;
  }
  if (options->n_constants > 0 &&
      ct__consts_bind(e->preps, e->n, scope, options->constants, options->n_constants) != CT_OK) {
    goto fail;
  }
  if (options->free_intermediates && plan_frees(e, &created, options) != CT_OK) goto fail;
  /* optimize's last pass is fuse_elementwise over what the others left. */
  if ((options->fuse_elementwise || options->optimize) && place.kind == CT_DEVICE_CPU) {
    if (ct__fuse_plan(e->preps, e->n, fuse_candidate, &fa) != CT_OK) goto fail;
  }
  free(created.vars);
  e->prog = p;
  e->ops_gen = p->ops_gen;
  ct__scope_watch_add(scope, &e->watch);
  return e;
fail:
  free(created.vars);
  ct_executor_free(e);
  return NULL;
}

ct_status ct_executor_run(ct_executor *e) {
  if (e == NULL) {
    /* Most often ct_executor_new failed just before: keep its reason in the message. */
    char cause[400];
    snprintf(cause, sizeof cause, "%s", ct_last_error());
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_executor_run: the executor is NULL (check what ct_executor_new returned; "
                     "the last error before this call was: %s)",
                     cause);
  }
  if (CT__UNLIKELY(ct__scope_watch_gone(&e->watch))) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_executor_run: the scope this executor was made over has been freed "
                     "(itself or with an ancestor), and the executor points into it: free the "
                     "executor and make a new one over a live scope");
  }
  return ct__executor_run_counted(e, ct__error_counter());
}

/* Runs op i of e (its group, for a fused root; nothing for a deferred member that is not due),
 * then drops the memory of the variables whose last reader it is. */
/* The failure of a run that finds prep p's op re-wired since it was bound. */
CT__COLD static ct_status rewired(const ct__prep *p) {
  char label[CT__OP_LABEL_CAP];
  return ct__error(CT_ERR_INVALID_ARGUMENT,
                   "ct_executor_run: %s was re-wired (ct_op_set_input/ct_op_set_output) after "
                   "this executor was made, which binds the wiring it saw: make a new executor",
                   ct__op_label(p->op, label, sizeof label));
}

static inline ct_status run_op(ct_executor *e, size_t i, const uint64_t *errors) {
  ct__prep *p = &e->preps[i];
  if (CT__UNLIKELY(p->op->wire_gen != p->wire_gen)) return rewired(p);
  /* The next op's variables and tensors (those of its last run: a variable holds its tensor
   * in place), asked for now: an op on a few elements waits on memory more than it computes,
   * and the walk from a prep to its tensors is a chain of loads. */
  if (i + 1 < e->n) {
    const ct__prep *q = &e->preps[i + 1];
    for (uint32_t k = 0; k < q->n_in_vars + q->n_out_vars; k++) {
      __builtin_prefetch(q->vars[k]);
      __builtin_prefetch(q->tensors[k]);
    }
  }
  if (CT__UNLIKELY(p->n_guards != 0)) {
    ct_status g = ct__fused_guard(e->preps, i);
    if (g != CT_OK) return g;
  }
  if (p->deferred && !ct__fused_member_now(e->preps, i)) return CT_OK;
  ct_status s = CT__UNLIKELY(p->fused != NULL)      ? ct__fused_run(e->preps, p->fused)
                 : CT__UNLIKELY(p->fallback != NULL) ? ct__prep_run_guarded(p, errors)
                                                     : ct__prep_run_counted(p, errors);
  if (CT__UNLIKELY(s != CT_OK)) return s;
  for (size_t j = 0; j < p->n_release; j++) {
    ct_tensor *t = (ct_tensor *)ct_var_get_tensor(p->release[j]);
    if (t != NULL) ct__tensor_drop_memory(t);
  }
  return CT_OK;
}

/* A run while a profile records this thread: each op an event, the run one around them. */
CT__COLD static ct_status run_profiled(ct_executor *e, const uint64_t *errors) {
  ct__prof_mark run;
  ct_place place = e->n > 0 ? e->preps[0].ctx.place : ct_cpu();
  ct__prof_mark_now(&run, place);
  ct_status s = CT_OK;
  size_t ran = 0;
  bool observed = atomic_load_explicit(&ct__observed, memory_order_relaxed);
  for (size_t i = 0; i < e->n && s == CT_OK; i++, ran++) {
    if (observed) ct__memory_set_namer(ct__prep_namer, &e->preps[i]); /* as run_observed */
    if (e->preps[i].deferred) { /* a fused member: its time is its root's */
      s = run_op(e, i, errors);
      continue;
    }
    ct__prof_mark m;
    ct__prof_mark_now(&m, place);
    s = run_op(e, i, errors);
    ct__prof_op_end(&m, &e->preps[i], s);
  }
  if (observed) ct__memory_set_namer(NULL, NULL);
  char label[32];
  snprintf(label, sizeof label, "%zu ops", ran);
  ct__prof_end(&run, "executor_run", label, s);
  return s;
}

/* A run with an allocation observer set: each op names its variables' allocations. */
static CT__COLD ct_status run_observed(ct_executor *e, const uint64_t *errors) {
  ct_status s = CT_OK;
  for (size_t i = 0; i < e->n && s == CT_OK; i++) {
    ct__memory_set_namer(ct__prep_namer, &e->preps[i]);
    s = run_op(e, i, errors);
  }
  ct__memory_set_namer(NULL, NULL);
  return s;
}

ct_status ct__executor_run_counted(ct_executor *e, const uint64_t *errors) {
  if (CT__UNLIKELY(e->prog->ops_gen != e->ops_gen)) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_executor_run: ops were appended to or pruned from the program after "
                     "this executor was made, which runs the ops it saw: make a new executor");
  }
  if (CT__UNLIKELY(e->rewrites.n != 0)) {
    ct_status s = ct__rewrites_check(&e->rewrites);
    if (s != CT_OK) return s;
  }
  if (CT__UNLIKELY(ct__prof_on()) && ct__prof_records()) return run_profiled(e, errors);
  if (CT__UNLIKELY(atomic_load_explicit(&ct__observed, memory_order_relaxed))) {
    return run_observed(e, errors);
  }
  for (size_t i = 0; i < e->n; i++) {
    ct_status s = run_op(e, i, errors);
    if (CT__UNLIKELY(s != CT_OK)) return s;
  }
  return CT_OK;
}

void ct_executor_free(ct_executor *e) {
  if (e == NULL) return;
  ct__scope_watch_remove(&e->watch);
  for (size_t i = 0; i < e->n; i++) ct__prep_destroy(&e->preps[i]);
  free(e->preps);
  ct__rewrites_free(&e->rewrites);
  free(e);
}
