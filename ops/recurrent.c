/* SPDX-License-Identifier: Apache-2.0 */
/* ops/recurrent.c: the `recurrent` op, an RNN over step scopes.
 *
 * One run over sequences X[T, ...]: the step scopes (a ct_scope_list in the StepScopes variable)
 * are resized to T kids of the scope the op runs in, then for each step t (T-1 down to 0 with
 * `reverse`) the step program runs in step scope t, where
 *   - each step input (attribute step_inputs) is a view of row t of its sequence, dim 0 dropped;
 *   - each previous state (ex_states) is a shared view of the state (states) of the step before,
 *     or of the initial state (InitStates) at the first step;
 *   - every variable the step program writes is local to the step scope (made there before the
 *     run), while parameters are found through the ancestors.
 * After the steps, each step output (step_outputs) is stacked along dim 0 into its Out variable
 * and the last step's states are copied into FinalStates. The step scopes stay for inspection:
 * scope t holds step t's variables until the next run (which reuses them) or until dropped.
 *
 * The step program is bound to each step scope once: the op keeps, on its StepScopes list, an
 * executor per step scope with the step's variables (ops/recurrent_bind.c), and a later run
 * reuses them as long as the step scope and its ancestors have the same variables (scope
 * stamps) and no op or program was edited. The tape also keeps the run's plan (rnn_plan): the
 * sequences' rows, the states the step before wrote and where each step wrote its outputs, so
 * that stacking copies rows without visiting the step scopes again. A run of a shape seen
 * before allocates nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "ops/op_impl.h"
#include "ops/recurrent.h"
#include "scope/scope_list.h"

enum { IN_X = CT__RNN_X, IN_INIT = CT__RNN_INIT, IN_PARAMS = CT__RNN_PARAMS };
enum { OUT_OUT = CT__RNN_OUT, OUT_FINAL = CT__RNN_FINAL, OUT_SCOPES = CT__RNN_SCOPES };
enum {
  A_PROGRAM = CT__RNN_PROGRAM,
  A_STATES = CT__RNN_STATES,
  A_EX_STATES = CT__RNN_EX_STATES,
  A_STEP_INPUTS = CT__RNN_STEP_INPUTS,
  A_STEP_OUTPUTS = CT__RNN_STEP_OUTPUTS,
  A_REVERSE = CT__RNN_REVERSE
};

typedef ct__names name_list;

static ct_status names_parse(const ct_kernel_ctx *c, size_t attr, name_list *l) {
  const char *s = c->attr[attr].u.s ? c->attr[attr].u.s : "";
  ct_status st = ct__names_split(s, l);
  if (st == CT_ERR_OUT_OF_MEMORY) return ct_kernel_fail(c, st, "out of host memory");
  if (st != CT_OK) {
    return ct_kernel_fail(c, st,
                          "attribute '%s' (\"%s\") has an empty name: list names separated by "
                          "commas",
                          c->op->def->attr[attr].name, s);
  }
  return CT_OK;
}

/* What a run works from, kept on the tape (its extra) so that a run of a shape seen before
 * allocates nothing: per step input, its sequence's row; per state, the tensor the step run last
 * wrote (checked); per step output, whether every step wrote it alike, and where. */
typedef struct seq_row {
  const ct_tensor *seq;
  ct_ddim dims; /* the sequence's, dim 0 dropped */
  int64_t numel;
  size_t bytes;
} seq_row;

typedef struct out_rows {
  ct_ddim dims; /* as the step run first wrote it */
  ct_dtype dtype;
  ct_place place;
  bool alike; /* every step so far wrote it with memory, these dims and dtype, at this place */
} out_rows;

typedef struct rnn_plan {
  seq_row *rows;            /* one per step input */
  const ct_tensor **states; /* one per state */
  out_rows *outs;           /* one per step output */
  const void **src;         /* [t * n_outs + i]: step t's output i, src_cap entries */
  size_t src_cap;
} rnn_plan;

/* The run's state: parsed attributes and the list. */
typedef struct rnn {
  const ct_kernel_ctx *c;
  const name_list *states, *ex, *ins, *outs; /* the tape's */
  ct_scope_list *list;
  ct__rnn_tape *tape;
  rnn_plan *plan; /* the tape's */
  int64_t T;
  bool reverse;
} rnn;

static void plan_free(void *extra) {
  rnn_plan *pl = extra;
  free(pl->src);
  free(pl);
}

/* The plan for the names just parsed (one allocation; the rows to stack come with the first
 * run). NULL when out of host memory (recorded). */
static rnn_plan *plan_new(const rnn *r) {
  size_t head = sizeof(rnn_plan), rows = r->ins->n * sizeof(seq_row);
  size_t outs = r->outs->n * sizeof(out_rows), states = r->states->n * sizeof(ct_tensor *);
  rnn_plan *pl = ct__calloc(1, head + rows + outs + states);
  if (pl == NULL) {
    ct_kernel_fail(r->c, CT_ERR_OUT_OF_MEMORY, "out of host memory for its step bindings");
    return NULL;
  }
  /* Each part's size is a multiple of the alignment of the part after it. */
  pl->rows = (seq_row *)((char *)pl + head);
  pl->outs = (out_rows *)((char *)pl->rows + rows);
  pl->states = (const ct_tensor **)((char *)pl->outs + outs);
  return pl;
}

static const char *attr_name(const ct_kernel_ctx *c, size_t a) { return c->op->def->attr[a].name; }

/* Checks the wiring against the attributes (counts, sequence lengths). */
static ct_status check_wiring(rnn *r) {
  const ct_kernel_ctx *c = r->c;
  size_t nx = ct_kernel_in_count(c, IN_X), ninit = ct_kernel_in_count(c, IN_INIT);
  size_t nout = ct_kernel_out_count(c, OUT_OUT), nfinal = ct_kernel_out_count(c, OUT_FINAL);
  if (r->states->n != r->ex->n) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute 'states' names %zu states but 'ex_states' names %zu "
                          "previous states: give one previous-state name per state",
                          r->states->n, r->ex->n);
  }
  if (ninit < r->states->n) {
    return ct_kernel_fail(c, CT_ERR_NOT_FOUND,
                          "state '%s' (read as '%s' at each step) has no initial state: wire "
                          "InitStates with one variable per state (%zu wired, %zu states)",
                          r->states->v[ninit], r->ex->v[ninit], ninit, r->states->n);
  }
  if (ninit > r->states->n) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "input InitStates variable '%s' has no state: attribute 'states' "
                          "names %zu states but InitStates wires %zu variables",
                          ct_kernel_in_name(c, IN_INIT, r->states->n), r->states->n, ninit);
  }
  if (nfinal != 0 && nfinal != r->states->n) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "output FinalStates wires %zu variables for %zu states: wire one per "
                          "state, or none",
                          nfinal, r->states->n);
  }
  if (nx != r->ins->n) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "input X wires %zu sequences but attribute 'step_inputs' names %zu: "
                          "give one step input name per sequence",
                          nx, r->ins->n);
  }
  if (nout != r->outs->n) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "output Out wires %zu variables but attribute 'step_outputs' names "
                          "%zu: give one Out variable per step output",
                          nout, r->outs->n);
  }
  r->T = -1;
  for (size_t i = 0; i < nx; i++) {
    const ct_tensor *x = ct_kernel_in(c, IN_X, i);
    char sx[CT__DDIM_STR_CAP];
    if (x->dims.rank < 1 || x->dims.d[0] < 1) {
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "input X variable '%s' %s is not a sequence: give it dims [T, ...] "
                            "with T >= 1",
                            ct_kernel_in_name(c, IN_X, i), ct_ddim_str(x->dims, sx, sizeof sx));
    }
    if (r->T >= 0 && x->dims.d[0] != r->T) {
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "input X variable '%s' %s has %lld steps but '%s' has %lld: the "
                            "sequences must have the same length",
                            ct_kernel_in_name(c, IN_X, i), ct_ddim_str(x->dims, sx, sizeof sx),
                            (long long)x->dims.d[0], ct_kernel_in_name(c, IN_X, 0),
                            (long long)r->T);
    }
    r->T = x->dims.d[0];
  }
  if (r->T < 0) {
    return ct_kernel_fail(c, CT_ERR_NOT_FOUND, "input X wires no sequence: wire at least one");
  }
  return CT_OK;
}

/* Records a failure at step t about variable name, keeping the cause's message. */
static ct_status step_fail(rnn *r, int64_t t, const char *name) {
  char text[400];
  snprintf(text, sizeof text, "%s", ct_last_error());
  if (name == NULL) {
    return ct_kernel_fail(r->c, ct_last_status(), "step %lld: %s", (long long)t, text);
  }
  return ct_kernel_fail(r->c, ct_last_status(), "step %lld: variable '%s': %s", (long long)t, name,
                        text);
}

/* A state or output the step program must have written: v, the local variable of that name in
 * the step scope (NULL when the scope has none). */
static inline const ct_tensor *written(rnn *r, const ct_var *v, int64_t t, const char *name,
                                       const char *what) {
  const ct_tensor *x = v ? ct_var_get_tensor(v) : NULL;
  if (CT__UNLIKELY(x == NULL || x->block == NULL)) {
    ct_kernel_fail(r->c, CT_ERR_NOT_FOUND,
                   "step %lld: the step program wrote no %s '%s': make one of its ops write "
                   "'%s' in every step",
                   (long long)t, what, name, name);
    return NULL;
  }
  return x;
}

/* Makes every variable the step program writes local to s, so that it never writes an
 * ancestor's variable of the same name. */
static ct_status localize_outputs(rnn *r, ct_scope *s, int64_t t) {
  const ct_program *p = r->c->attr[A_PROGRAM].u.program;
  for (size_t i = 0; i < ct_program_size(p); i++) {
    const ct_op *op = ct_program_op(p, i);
    for (size_t slot = 0; slot < op->def->n_out; slot++) {
      for (size_t k = 0; k < op->out[slot].n; k++) {
        /* The step's inputs and previous states are views of the caller's sequences and of
         * the step before: a step op writing one would write through into them. */
        const char *name = op->out[slot].names[k];
        for (size_t j = 0; j < r->ins->n + r->ex->n; j++) {
          const char *bound = j < r->ins->n ? r->ins->v[j] : r->ex->v[j - r->ins->n];
          if (strcmp(name, bound) == 0) {
            return ct_kernel_fail(r->c, CT_ERR_INVALID_ARGUMENT,
                                  "step op #%zu '%s' writes '%s', which is a %s of the step (a "
                                  "view of the %s): write a new variable or the state instead",
                                  i, op->def->type, name,
                                  j < r->ins->n ? "step input" : "previous state",
                                  j < r->ins->n ? "sequence" : "step before");
          }
        }
        if (ct_scope_var(s, name) == NULL) return step_fail(r, t, NULL);
      }
    }
  }
  return CT_OK;
}

/* The step's variables, in the order of a binding's vars: step inputs, previous states, states,
 * step outputs. */
static size_t n_step_vars(const rnn *r) {
  return r->ins->n + r->ex->n + r->states->n + r->outs->n;
}

/* Binds step t to s the first time (or after the scope or an ancestor changed its names): makes
 * the step inputs and previous states local, localizes the step program's outputs, then binds
 * an executor of the step program with the step's variables. */
static ct__rnn_step *bind_step(rnn *r, ct_scope *s, int64_t t) {
  enum { STACK = 32 };
  size_t n = n_step_vars(r), k = 0;
  ct_var *stack[STACK], **vars = n <= STACK ? stack : ct__malloc(n * sizeof *vars);
  ct__rnn_step *b = NULL;
  if (vars == NULL) {
    ct_kernel_fail(r->c, CT_ERR_OUT_OF_MEMORY, "out of host memory");
    return NULL;
  }
  for (size_t i = 0; i < r->ins->n + r->ex->n; i++, k++) {
    const char *name = i < r->ins->n ? r->ins->v[i] : r->ex->v[i - r->ins->n];
    vars[k] = ct_scope_var(s, name);
    if (vars[k] == NULL) {
      step_fail(r, t, name);
      goto done;
    }
  }
  if (localize_outputs(r, s, t) != CT_OK) goto done;
  for (size_t j = 0; j < r->states->n; j++) vars[k++] = ct_scope_find_local_var(s, r->states->v[j]);
  for (size_t j = 0; j < r->outs->n; j++) vars[k++] = ct_scope_find_local_var(s, r->outs->v[j]);
  b = ct__rnn_tape_bind(r->tape, (size_t)t, s, r->c->attr[A_PROGRAM].u.program, vars);
  if (b == NULL) step_fail(r, t, NULL);
done:
  if (vars != stack) free(vars);
  return b;
}

/* The rows of the step inputs' sequences, for this run. The executor checked that each
 * sequence's memory covers its dims, check_wiring that it has T >= 1 rows. */
static void plan_rows(rnn *r) {
  for (size_t i = 0; i < r->ins->n; i++) {
    seq_row *w = &r->plan->rows[i];
    w->seq = ct_kernel_in(r->c, IN_X, i);
    w->dims = w->seq->dims;
    w->dims.rank--;
    memmove(w->dims.d, w->dims.d + 1, (size_t)w->dims.rank * sizeof w->dims.d[0]);
    w->numel = w->seq->numel / w->seq->dims.d[0];
    w->bytes = (size_t)w->numel * ct_dtype_size(w->seq->dtype);
  }
}

/* Sets step t's inputs and previous states in its binding b: a view of row t of each sequence,
 * and a shared view of each state of the step before (the plan's states, which check_states
 * found written; the initial states at the first step). */
static ct_status set_step(rnn *r, const ct__rnn_step *b, bool first, int64_t t) {
  const ct_kernel_ctx *c = r->c;
  for (size_t i = 0; i < r->ins->n; i++) {
    ct_tensor *x = ct_var_tensor(b->vars[i]);
    if (CT__UNLIKELY(x == NULL)) return step_fail(r, t, r->ins->v[i]);
    const seq_row *w = &r->plan->rows[i];
    ct__tensor_view(x, w->seq, w->dims, w->numel, w->seq->offset + (size_t)t * w->bytes);
  }
  for (size_t j = 0; j < r->states->n; j++) {
    ct_tensor *ex = ct_var_tensor(b->vars[r->ins->n + j]);
    if (CT__UNLIKELY(ex == NULL)) return step_fail(r, t, r->ex->v[j]);
    const ct_tensor *from = first ? ct_kernel_in(c, IN_INIT, j) : r->plan->states[j];
    if (CT__UNLIKELY(!ct__tensor_data_ok(from)) &&
        ct__tensor_check_data(from, "sharing a state") != CT_OK) {
      return ct_kernel_fail(c, ct_last_status(), "step %lld: sharing state '%s' as '%s'",
                            (long long)t, r->states->v[j], r->ex->v[j]);
    }
    ct__tensor_view(ex, from, from->dims, from->numel, from->offset);
  }
  return CT_OK;
}

/* Checks the states step t wrote (binding b) against the initial states, and keeps them in the
 * plan for the next step. */
static ct_status check_states(rnn *r, const ct__rnn_step *b, int64_t t) {
  const ct_kernel_ctx *c = r->c;
  size_t states_at = r->ins->n + r->ex->n;
  for (size_t j = 0; j < r->states->n; j++) {
    const ct_tensor *h = written(r, b->vars[states_at + j], t, r->states->v[j], "state");
    if (h == NULL) return ct_last_status();
    const ct_tensor *h0 = ct_kernel_in(c, IN_INIT, j);
    r->plan->states[j] = h;
    if (CT__UNLIKELY(!ct__ddim_eq(&h->dims, &h0->dims) || h->dtype != h0->dtype)) {
      char a[CT__DDIM_STR_CAP], b2[CT__DDIM_STR_CAP];
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "step %lld: state '%s' is %s %s but its initial state, input "
                            "InitStates variable '%s', is %s %s: a state keeps its dims and "
                            "dtype",
                            (long long)t, r->states->v[j], ct_ddim_str(h->dims, a, sizeof a),
                            ct_dtype_name(h->dtype), ct_kernel_in_name(c, IN_INIT, j),
                            ct_ddim_str(h0->dims, b2, sizeof b2), ct_dtype_name(h0->dtype));
    }
  }
  return CT_OK;
}

/* Notes where step t (the k-th to run) wrote its outputs, for stack_output: an output that some
 * step wrote without memory, or unlike the first step to run, is stacked the checking way,
 * which finds the first faulty step. */
static void note_outputs(rnn *r, const ct__rnn_step *b, int64_t t, int64_t k) {
  size_t outs_at = n_step_vars(r) - r->outs->n;
  for (size_t i = 0; i < r->outs->n; i++) {
    out_rows *o = &r->plan->outs[i];
    const ct_var *v = b->vars[outs_at + i];
    const ct_tensor *y = v ? ct_var_get_tensor(v) : NULL;
    if (CT__UNLIKELY(y == NULL || y->block == NULL)) {
      o->alike = false;
      continue;
    }
    if (k == 0) {
      o->dims = y->dims;
      o->dtype = y->dtype;
      o->place = y->block->place;
      o->alike = true;
    } else if (CT__UNLIKELY(!ct__ddim_eq(&y->dims, &o->dims) || y->dtype != o->dtype ||
                            !ct__place_eq(y->block->place, o->place))) {
      o->alike = false;
    }
    r->plan->src[(size_t)t * r->outs->n + i] = ct__tensor_ptr(y);
  }
}

/* Step output i as step t wrote it (every step is bound once the steps ran). */
static const ct_tensor *step_output(rnn *r, int64_t t, size_t i) {
  const ct__rnn_step *b = &r->tape->steps[t];
  return written(r, b->vars[n_step_vars(r) - r->outs->n + i], t, r->outs->v[i], "step output");
}

/* Stacks step output i of every step into Out variable i. */
static ct_status stack_output(rnn *r, size_t i) {
  const ct_kernel_ctx *c = r->c;
  const char *name = r->outs->v[i];
  const ct_tensor *first = step_output(r, 0, i);
  if (first == NULL) return ct_last_status();
  char a[CT__DDIM_STR_CAP], b[CT__DDIM_STR_CAP];
  if (first->dims.rank + 1 > CT_MAX_RANK) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "step output '%s' %s has rank %d: stacked it would pass CT_MAX_RANK",
                          name, ct_ddim_str(first->dims, a, sizeof a), first->dims.rank);
  }
  ct_ddim dims = first->dims;
  memmove(dims.d + 1, dims.d, (size_t)dims.rank * sizeof dims.d[0]);
  dims.d[0] = r->T;
  dims.rank++;
  ct_status st = ct__k_resize(c, OUT_OUT, i, dims);
  if (st != CT_OK) return st;
  char *out = ct__k_out_data(c, OUT_OUT, i, first->dtype);
  if (out == NULL) return ct_last_status();
  size_t row = ct__tensor_bytes(first, first->dtype);
  const out_rows *o = &r->plan->outs[i];
  if (o->alike) { /* every step's dims, dtype and place are first's: no need to look again */
    const void *const *src = r->plan->src + i;
    size_t n = r->outs->n;
    /* Between host places ct__memcpy's move, without a call per row. */
    bool host = c->place.kind != CT_DEVICE_CUDA && o->place.kind != CT_DEVICE_CUDA && row > 0;
    for (int64_t t = 0; t < r->T; t++) {
      if (host) {
        memmove(out + (size_t)t * row, src[(size_t)t * n], row);
      } else if ((st = ct__memcpy(out + (size_t)t * row, c->place, src[(size_t)t * n], o->place,
                                  row)) != CT_OK) {
        return st;
      }
    }
    return CT_OK;
  }
  for (int64_t t = 0; t < r->T; t++) {
    const ct_tensor *y = step_output(r, t, i);
    if (y == NULL) return ct_last_status();
    if (!ct_ddim_equal(y->dims, first->dims) || y->dtype != first->dtype) {
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "step %lld: step output '%s' is %s %s but at step 0 it was %s %s: "
                            "step outputs must keep their dims and dtype to be stacked",
                            (long long)t, name, ct_ddim_str(y->dims, a, sizeof a),
                            ct_dtype_name(y->dtype), ct_ddim_str(first->dims, b, sizeof b),
                            ct_dtype_name(first->dtype));
    }
    st = ct__memcpy(out + (size_t)t * row, c->place, ct__tensor_ptr(y), y->block->place, row);
    if (st != CT_OK) return st;
  }
  return CT_OK;
}

/* Refuses a StepScopes variable that lives in one of its own step scopes (or below one). The
 * scope holding it is the one its name resolves to from the op's scope, as the op was bound. */
static ct_status check_home(rnn *r) {
  const ct_kernel_ctx *c = r->c;
  const char *name = ct_kernel_out_name(c, OUT_SCOPES, 0);
  for (const ct_scope *s = ct_scope_find_scope(c->scope, name); s != NULL;
       s = ct_scope_parent(s)) {
    if (ct__scope_get_list(s) == r->list) {
      return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                            "output StepScopes variable '%s' lives in one of its own step "
                            "scopes: wire StepScopes to a variable of the scope the op runs in",
                            name);
    }
  }
  return CT_OK;
}

/* The list in the StepScopes variable, and the op's tape on it (names parsed when fresh). */
static ct_status find_tape(rnn *r) {
  const ct_kernel_ctx *c = r->c;
  ct_var *sv = ct_kernel_out_var(c, OUT_SCOPES, 0);
  r->list = ct_var_get_mutable(sv, &ct_scope_list_type);
  if (r->list == NULL) {
    char text[400];
    snprintf(text, sizeof text, "%s", ct_last_error());
    return ct_kernel_fail(c, ct_last_status(), "output StepScopes variable '%s': %s",
                          ct_kernel_out_name(c, OUT_SCOPES, 0), text);
  }
  bool fresh;
  r->tape = ct__rnn_tape_get(r->list, c, &fresh);
  if (r->tape == NULL) return ct_last_status();
  ct__names *n = r->tape->names;
  r->states = &n[0];
  r->ex = &n[1];
  r->ins = &n[2];
  r->outs = &n[3];
  r->plan = r->tape->extra;
  if (!fresh) return CT_OK;
  ct_status st = names_parse(c, A_STATES, &n[0]);
  if (st == CT_OK) st = names_parse(c, A_EX_STATES, &n[1]);
  if (st == CT_OK) st = names_parse(c, A_STEP_INPUTS, &n[2]);
  if (st == CT_OK) st = names_parse(c, A_STEP_OUTPUTS, &n[3]);
  if (st == CT_OK && (r->plan = plan_new(r)) == NULL) st = ct_last_status();
  if (st != CT_OK) {
    ct__rnn_tape_drop(r->tape);
    return st;
  }
  r->tape->extra = r->plan;
  r->tape->extra_free = plan_free;
  return CT_OK;
}

/* Room in the plan for T steps' outputs. CT_OK, or CT_ERR_OUT_OF_MEMORY recorded. */
static ct_status plan_reserve(rnn *r) {
  rnn_plan *pl = r->plan;
  size_t need = (size_t)r->T * r->outs->n;
  if (need <= pl->src_cap) return CT_OK;
  const void **grown = ct__realloc(pl->src, need * sizeof *grown);
  if (grown == NULL) {
    return ct_kernel_fail(r->c, CT_ERR_OUT_OF_MEMORY, "out of host memory for its step bindings");
  }
  pl->src = grown;
  pl->src_cap = need;
  return CT_OK;
}

static ct_status run_steps(rnn *r) {
  const ct_kernel_ctx *c = r->c;
  ct_status st = find_tape(r);
  if (st == CT_OK) st = check_wiring(r);
  if (st == CT_OK) st = check_home(r);
  if (st != CT_OK) return st;
  if (ct_scope_list_resize(r->list, c->scope, (size_t)r->T) != CT_OK) {
    char text[400];
    snprintf(text, sizeof text, "%s", ct_last_error());
    return ct_kernel_fail(c, ct_last_status(), "output StepScopes variable '%s': %s",
                          ct_kernel_out_name(c, OUT_SCOPES, 0), text);
  }
  st = ct__rnn_tape_begin(r->tape, c->scope, (size_t)r->T, n_step_vars(r));
  if (st != CT_OK) return ct_kernel_fail(c, st, "out of host memory for its step bindings");
  if ((st = plan_reserve(r)) != CT_OK) return st;
  plan_rows(r);
  const uint64_t *errors = ct__error_counter();
  const ct__rnn_step *prev = NULL;
  for (int64_t k = 0; k < r->T; k++) {
    int64_t t = r->reverse ? r->T - 1 - k : k;
    ct_scope *s = ct_scope_list_get(r->list, (size_t)t);
    const ct__rnn_step *b = ct__rnn_tape_bound(r->tape, (size_t)t, s);
    if (CT__UNLIKELY(b == NULL) && (b = bind_step(r, s, t)) == NULL) return ct_last_status();
    if ((st = set_step(r, b, k == 0, t)) != CT_OK) return st;
    if (CT__UNLIKELY((st = ct__executor_run_counted(b->exec, errors)) != CT_OK)) {
      return step_fail(r, t, NULL);
    }
    if ((st = check_states(r, b, t)) != CT_OK) return st;
    note_outputs(r, b, t, k);
    prev = b;
  }
  for (size_t i = 0; i < r->outs->n; i++) {
    if ((st = stack_output(r, i)) != CT_OK) return st;
  }
  size_t states_at = r->ins->n + r->ex->n;
  for (size_t j = 0; j < ct_kernel_out_count(c, OUT_FINAL); j++) {
    const ct_tensor *h = written(r, prev->vars[states_at + j], r->reverse ? 0 : r->T - 1,
                                 r->states->v[j], "state");
    if (h == NULL) return ct_last_status();
    if (ct_tensor_copy(ct_kernel_out(c, OUT_FINAL, j), h, c->place) != CT_OK) {
      char text[400];
      snprintf(text, sizeof text, "%s", ct_last_error());
      return ct_kernel_fail(c, ct_last_status(), "output FinalStates variable '%s': %s",
                            ct_kernel_out_name(c, OUT_FINAL, j), text);
    }
  }
  return CT_OK;
}

ct_status ct__recurrent_kernel(const ct_kernel_ctx *c) {
  rnn r = {.c = c, .reverse = c->attr[A_REVERSE].u.b};
  if (c->attr[A_PROGRAM].u.program == NULL) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute '%s' holds no program: set it with ct_op_set_attr_program",
                          attr_name(c, A_PROGRAM));
  }
  return run_steps(&r);
}

static const ct_slot_def rnn_in[] = {
    {"X", CT_SLOT_MANY},
    {"InitStates", CT_SLOT_MANY | CT_SLOT_OPTIONAL},
    {"Params", CT_SLOT_MANY | CT_SLOT_OPTIONAL},
};
static const ct_slot_def rnn_out[] = {
    {"Out", CT_SLOT_MANY | CT_SLOT_OPTIONAL},
    {"FinalStates", CT_SLOT_MANY | CT_SLOT_OPTIONAL},
    {"StepScopes", CT_SLOT_ANY_TYPE},
};
static const ct_attr_def rnn_attrs[] = {
    {"step_program", {.type = CT_ATTR_PROGRAM}, true},
    {"states", {.type = CT_ATTR_STRING, .u.s = ""}, false},
    {"ex_states", {.type = CT_ATTR_STRING, .u.s = ""}, false},
    {"step_inputs", {.type = CT_ATTR_STRING, .u.s = ""}, false},
    {"step_outputs", {.type = CT_ATTR_STRING, .u.s = ""}, false},
    {"reverse", {.type = CT_ATTR_BOOL, .u.b = false}, false},
};

static const ct_op_def defs[] = {
    {.type = "recurrent", .inputs = rnn_in, .n_inputs = 3, .outputs = rnn_out, .n_outputs = 3,
     .attrs = rnn_attrs, .n_attrs = 6, .grad = ct__grad_recurrent},
};

const ct__def_table ct__recurrent_defs = CT__TABLE(defs);

/* What the type computes (ct_op_type_doc, `corten ops`). */
static const ct__op_doc docs[] = {
    {"recurrent",
     "An RNN over step scopes (PaddlePaddle's recurrent): runs the program `step_program` once "
     "per time step t of the sequences X (many, [T, ...], one T >= 1; T-1 down to 0 with "
     "`reverse`), each step in its own step scope, a kid of the op's scope, where each name of "
     "`step_inputs` is a view of row t of its X, each name of `ex_states` a shared view of the "
     "matching `states` variable of the step before (InitStates at the first step), and every "
     "variable the step program writes is local, while the parameters are found through the "
     "ancestors. The name attributes are comma-separated lists: X wires one sequence per step "
     "input, InitStates one initial tensor per state (which also sets the state's dims and "
     "dtype: zeros of the state's dims are the usual start), Out (optional) one variable per "
     "`step_outputs` name, each stacked along dim 0 into [T, ...], and FinalStates one per "
     "state or none (copies of the last step's states). StepScopes names a variable of the "
     "op's scope (an empty one is fine) that keeps the ct_scope_list of the T step scopes: "
     "step t's variables stay there for inspection until the next run, which reuses them. "
     "Params lists the weights the step program reads; the backward pass (backpropagation "
     "through time, recurrent_grad) gives gradients only to those listed there."},
};

const ct__doc_table ct__recurrent_docs = CT__TABLE(docs);
