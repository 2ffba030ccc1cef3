/* SPDX-License-Identifier: Apache-2.0 */
/* ops/recurrent_grad_run.c: the recurrent_grad kernel, backpropagation through time over the
 * step scopes the forward run kept (docs/design/rnn.md, "The gradient"; the maker is in
 * ops/recurrent_grad.c).
 *
 * Everything a run builds is kept on the op's tape of the StepScopes list (ops/recurrent.h) and
 * bound once: the parsed attributes and seed names, each step's backward program, the program
 * that fills the last step's state gradients with zeros, and the program that sums each
 * parameter's gradients over the steps (in a scratch kid scope of the op's scope, kept in a
 * scope list of the tape's). A run of a shape seen before makes no host allocation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/backward.h>

#include "common/alloc.h"
#include "ops/recurrent_grad.h"
#include "scope/scope_list.h"

/* The run's state: parsed attributes, the step scopes and the names the step program uses. */
typedef struct bptt {
  const ct_kernel_ctx *c;
  ct__names states, ex, ins, outs, inits;
  const ct_scope_list *list;
  int64_t T;
  bool reverse;
  char **names; /* next[states], ex_grad[states], out_seed[outs], in_grad[ins], param_grad[...] */
  char **next, **ex_grad, **out_seed, **in_grad, **param_grad;
  size_t n_names;
  struct grad_keep *keep; /* per run: what the tape keeps */
  ct__rnn_tape *tp;
} bptt;

static void bptt_free(bptt *r) {
  ct__names *lists[] = {&r->states, &r->ex, &r->ins, &r->outs, &r->inits};
  for (size_t k = 0; k < 5; k++) ct__names_free(lists[k]);
  for (size_t i = 0; r->names != NULL && i < r->n_names; i++) free(r->names[i]);
  free(r->names);
}

/* A program bound to one scope by an executor, bound again when the scope, its stamp or (for
 * one that resolves names through the op's scope) the tape's chain moved. */
typedef struct bound_prog {
  ct_program *prog;
  ct_executor *exec;
  const ct_scope *scope;
  uint64_t stamp, chain;
} bound_prog;

static void bound_free(bound_prog *b) {
  ct_executor_free(b->exec);
  ct_program_free(b->prog);
  memset(b, 0, sizeof *b);
}

/* b's executor over s, bound now unless the binding still holds. NULL with the error recorded. */
static ct_executor *bound_exec(bound_prog *b, ct_scope *s, uint64_t chain, ct_place place) {
  if (b->exec != NULL && b->scope == s && b->stamp == ct__scope_stamp(s) && b->chain == chain) {
    return b->exec;
  }
  ct_executor_free(b->exec);
  b->scope = NULL;
  b->exec = ct_executor_new(b->prog, s, place);
  if (b->exec == NULL) return NULL;
  b->scope = s;
  b->stamp = ct__scope_stamp(s);
  b->chain = chain;
  return b->exec;
}

/* What the tape keeps between runs (its extra): the parsed run state, the zeros program, and the
 * parameter sums with their scratch scope and the names and tensors of its views. */
typedef struct grad_keep {
  bptt r;
  bound_prog zeros, sums;
  ct_var *scratch; /* a ct_scope_list holding the sums' scope, a kid of the op's scope */
  char **views;    /* n_params x T view names */
  ct_tensor **view_t;
  size_t n_views, T;
} grad_keep;

static void drop_views(grad_keep *k) {
  for (size_t i = 0; k->views != NULL && i < k->n_views; i++) free(k->views[i]);
  free(k->views);
  free(k->view_t);
  k->views = NULL;
  k->view_t = NULL;
  k->n_views = 0;
}

static void keep_free(void *arg) {
  grad_keep *k = arg;
  bptt_free(&k->r);
  bound_free(&k->zeros);
  bound_free(&k->sums);
  drop_views(k);
  ct_var_free(k->scratch);
  free(k);
}

/* Rewords the last error as part of this op's message: "<what>: <error>". */
static ct_status relabel(const bptt *r, const char *what) {
  char text[512];
  snprintf(text, sizeof text, "%s", ct_last_error());
  return ct_kernel_fail(r->c, ct_last_status(), "%s: %s", what, text);
}

static ct_status parse(bptt *r) {
  const ct_kernel_ctx *c = r->c;
  static const size_t attrs[] = {CT__RNN_STATES, CT__RNN_EX_STATES, CT__RNN_STEP_INPUTS,
                                 CT__RNN_STEP_OUTPUTS, A_INIT_STATES};
  ct__names *lists[] = {&r->states, &r->ex, &r->ins, &r->outs, &r->inits};
  for (size_t k = 0; k < 5; k++) {
    ct_status s = ct__names_split(c->attr[attrs[k]].u.s, lists[k]);
    if (s != CT_OK) {
      return ct_kernel_fail(c, s, "attribute '%s': %s", c->op->def->attr[attrs[k]].name,
                            s == CT_ERR_OUT_OF_MEMORY ? "out of host memory" : "an empty name");
    }
  }
  size_t np = ct_kernel_in_count(c, G_PARAMS), nfinal = ct_kernel_in_count(c, G_DFINAL);
  bool inits_ok = true;
  for (size_t k = 0; k < r->inits.n; k++) {
    inits_ok &= ct__names_find(&r->states, r->inits.v[k]) >= 0;
  }
  if (c->attr[CT__RNN_PROGRAM].u.program == NULL || r->states.n != r->ex.n || !inits_ok ||
      ct_kernel_in_count(c, G_X) != r->ins.n || ct_kernel_out_count(c, G_DX) != r->ins.n ||
      ct_kernel_in_count(c, G_INIT) != r->inits.n ||
      ct_kernel_out_count(c, G_DINIT) != r->inits.n || ct_kernel_out_count(c, G_DPARAMS) != np ||
      ct_kernel_in_count(c, G_DOUT) != r->outs.n || (nfinal != 0 && nfinal != r->states.n)) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "its attributes and wiring do not pair up: let "
                          "ct_program_append_backward make this op from a recurrent op");
  }
  r->n_names = 2 * r->states.n + r->outs.n + r->ins.n + np;
  r->names = ct__calloc(r->n_names + 1, sizeof *r->names);
  if (r->names == NULL) return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY, "out of host memory");
  r->next = r->names;
  r->ex_grad = r->next + r->states.n;
  r->out_seed = r->ex_grad + r->states.n;
  r->in_grad = r->out_seed + r->outs.n;
  r->param_grad = r->in_grad + r->ins.n;
  for (size_t i = 0; i < r->n_names; i++) {
    size_t j = i;
    const char *base, *suffix = CT_GRAD_SUFFIX;
    if (j < r->states.n) {
      base = r->states.v[j], suffix = SEED_NEXT;
    } else if ((j -= r->states.n) < r->ex.n) {
      base = r->ex.v[j];
    } else if ((j -= r->ex.n) < r->outs.n) {
      base = r->outs.v[j], suffix = SEED_OUT;
    } else if ((j -= r->outs.n) < r->ins.n) {
      base = r->ins.v[j];
    } else {
      base = ct_kernel_in_name(c, G_PARAMS, j - r->ins.n);
    }
    if ((r->names[i] = ct__rnn_suffixed(base, suffix)) == NULL) {
      return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY, "out of host memory");
    }
  }
  return CT_OK;
}

/* The forward run's step scopes, NULL when there are none (or a slot is empty). */
static ct_scope_list *step_list(const ct_kernel_ctx *c) {
  /* The list is the op's input, but its cache (the tape) is the op's to write. */
  ct_scope_list *l = (ct_scope_list *)ct_var_get(ct_kernel_in_var(c, G_SCOPES, 0),
                                                 &ct_scope_list_type);
  size_t T = ct_scope_list_size(l);
  bool whole = T > 0;
  for (size_t t = 0; t < T; t++) whole &= ct_scope_list_get(l, t) != NULL;
  return whole ? l : NULL;
}

static ct_status no_steps(const ct_kernel_ctx *c) {
  return ct_kernel_fail(c, CT_ERR_UNINITIALIZED,
                        "input StepScopes variable '%s' holds no step scopes of a forward run: "
                        "run the forward recurrent op before its gradient, and keep its step "
                        "scopes (they hold the values the gradient reads) until then",
                        ct_kernel_in_name(c, G_SCOPES, 0));
}

/* Checks the sequences against the step scopes of r->list. */
static ct_status check_steps(bptt *r) {
  const ct_kernel_ctx *c = r->c;
  const char *name = ct_kernel_in_name(c, G_SCOPES, 0);
  r->T = (int64_t)ct_scope_list_size(r->list);
  for (size_t k = 0; k < r->ins.n + r->outs.n; k++) {
    bool x = k < r->ins.n;
    size_t slot = x ? G_X : G_DOUT, i = x ? k : k - r->ins.n;
    const ct_tensor *t = ct_kernel_in(c, slot, i);
    if (t->dims.rank < 1 || t->dims.d[0] != r->T) {
      char sd[CT__DDIM_STR_CAP];
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "input %s variable '%s' %s does not have the %lld steps of the step "
                            "scopes in '%s': run the forward op on these sequences before its "
                            "gradient",
                            c->op->def->in[slot].name, ct_kernel_in_name(c, slot, i),
                            ct_ddim_str(t->dims, sd, sizeof sd), (long long)r->T, name);
    }
  }
  return CT_OK;
}

/* Variable `name` that step t wrote in step scope s, with memory. */
static const ct_tensor *step_value(const bptt *r, ct_scope *s, int64_t t, const char *name) {
  const ct_var *v = ct_scope_find_local_var(s, name);
  const ct_tensor *x = v ? ct_var_get_tensor(v) : NULL;
  if (x == NULL || !ct_tensor_has_memory(x)) {
    ct_kernel_fail(r->c, CT_ERR_NOT_FOUND,
                   "step %lld: the step scope holds no '%s': run the forward op again before "
                   "its gradient",
                   (long long)t, name);
    return NULL;
  }
  return x;
}

/* Makes dst (a tensor of the kernel's own) a shared view of src, as ct_tensor_share does, with
 * the unchecked view call once src's memory is known to cover it; what names the failure. */
static ct_status share(const bptt *r, ct_tensor *dst, const ct_tensor *src, const char *what) {
  if (CT__UNLIKELY(!ct__tensor_data_ok(src)) &&
      ct__tensor_check_data(src, "the tensor to share") != CT_OK) {
    return relabel(r, what);
  }
  ct__tensor_view(dst, src, src->dims, src->numel, src->offset);
  return CT_OK;
}

/* The local tensor called name in s, made when missing. */
static ct_tensor *local(const bptt *r, ct_scope *s, int64_t t, const char *name) {
  ct_var *v = ct_scope_var(s, name); /* NULL: out of memory, recorded (kept for relabel) */
  ct_tensor *x = v ? ct_var_tensor(v) : NULL;
  if (x == NULL) {
    char what[64];
    snprintf(what, sizeof what, "step %lld", (long long)t);
    relabel(r, what);
  }
  return x;
}

/* The states' gradients after the last step, zeros: one fill_any_like per state, bound in s. */
static ct_status zero_states(bptt *r, ct_scope *s) {
  bound_prog *b = &r->keep->zeros;
  ct_status st = CT_OK;
  if (b->prog == NULL) {
    b->prog = ct_program_new();
    st = b->prog != NULL ? CT_OK : ct_last_status();
    for (size_t j = 0; st == CT_OK && j < r->states.n; j++) {
      ct_op *z = ct_op_new("fill_any_like");
      st = z ? ct_op_set_input(z, "X", r->states.v[j]) : ct_last_status();
      if (st == CT_OK) st = ct_op_set_output(z, "Out", r->next[j]);
      if (st == CT_OK) st = ct_op_set_attr_float(z, "value", 0.0);
      if (st == CT_OK) st = ct_program_append(b->prog, z);
      else ct_op_free(z);
    }
    if (st != CT_OK) bound_free(b);
  }
  ct_executor *e = st == CT_OK ? bound_exec(b, s, 0, r->c->place) : NULL;
  if (e == NULL || ct_executor_run(e) != CT_OK) {
    return relabel(r, "zeros for the last state's gradient");
  }
  return CT_OK;
}

/* Binds step t's seeds in s: the step outputs' rows of Out@GRAD, and the states' gradients from
 * the step after (after_s; NULL at the last step: FinalStates@GRAD, or zeros). */
static ct_status seed_step(bptt *r, ct_scope *s, ct_scope *after_s, int64_t t) {
  const ct_kernel_ctx *c = r->c;
  bool zeros = false;
  for (size_t i = 0; i < r->outs.n; i++) {
    ct_tensor *x = local(r, s, t, r->out_seed[i]);
    const ct_tensor *seq = ct_kernel_in(c, G_DOUT, i);
    if (x == NULL) return ct_last_status();
    /* check_steps found seq [T, ...] and the executor its memory covering its dims: row t is in
     * it. */
    ct_ddim row = seq->dims;
    row.rank--;
    memmove(row.d, row.d + 1, (size_t)row.rank * sizeof row.d[0]);
    int64_t n = ct_ddim_numel(row);
    size_t at = seq->offset + (size_t)t * (size_t)n * ct_dtype_size(seq->dtype);
    ct__tensor_view(x, seq, row, n, at);
  }
  for (size_t j = 0; j < r->states.n; j++) {
    ct_tensor *x = local(r, s, t, r->next[j]);
    if (x == NULL) return ct_last_status();
    const ct_tensor *h = step_value(r, s, t, r->states.v[j]);
    if (h == NULL) return ct_last_status();
    const ct_tensor *from = after_s ? step_value(r, after_s, t, r->ex_grad[j])
                            : ct_kernel_in_count(c, G_DFINAL) ? ct_kernel_in(c, G_DFINAL, j)
                                                             : NULL;
    if (after_s != NULL && from == NULL) return ct_last_status();
    if (from != NULL && (!ct_ddim_equal(from->dims, h->dims) || from->dtype != h->dtype)) {
      char a[CT__DDIM_STR_CAP], b[CT__DDIM_STR_CAP];
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "step %lld: the gradient of state '%s' is %s %s but the state is "
                            "%s %s: wire the gradients of FinalStates",
                            (long long)t, r->states.v[j], ct_ddim_str(from->dims, a, sizeof a),
                            ct_dtype_name(from->dtype), ct_ddim_str(h->dims, b, sizeof b),
                            ct_dtype_name(h->dtype));
    }
    if (from != NULL) {
      ct_status st = share(r, x, from, "sharing a state's gradient");
      if (st != CT_OK) return st;
      continue;
    }
    zeros = true; /* no gradient comes after the last step: the loss does not read it */
  }
  return zeros ? zero_states(r, s) : CT_OK;
}

/* Makes every variable the backward step program writes local to s, so that no step writes an
 * ancestor's variable of the same name (the outer program's own "W@GRAD", say). */
static ct_status localize(bptt *r, ct_scope *s, int64_t t) {
  const ct_program *p = r->c->attr[CT__RNN_PROGRAM].u.program;
  for (size_t i = 0; i < ct_program_size(p); i++) {
    const ct_op *op = ct_program_op(p, i);
    for (size_t slot = 0; slot < op->def->n_out; slot++) {
      for (size_t k = 0; k < op->out[slot].n; k++) {
        if (local(r, s, t, op->out[slot].names[k]) == NULL) return ct_last_status();
      }
    }
  }
  return CT_OK;
}

/* Runs the backward step program in step scope s, bound once and kept on the list's tape
 * (ops/recurrent_bind.c); the first time, after localize and seed_step made its variables. */
static ct_status run_step(bptt *r, ct__rnn_tape *tp, ct_scope *s, ct_scope *after, int64_t t) {
  ct__rnn_step *b = ct__rnn_tape_bound(tp, (size_t)t, s);
  ct_status st = b != NULL ? CT_OK : localize(r, s, t);
  if (st == CT_OK) st = seed_step(r, s, after, t);
  if (st != CT_OK) return st;
  const ct_program *p = r->c->attr[CT__RNN_PROGRAM].u.program;
  if (b == NULL) b = ct__rnn_tape_bind(tp, (size_t)t, s, p, NULL);
  if (b == NULL || ct_executor_run(b->exec) != CT_OK) {
    char what[64];
    snprintf(what, sizeof what, "step %lld", (long long)t);
    return relabel(r, what);
  }
  return CT_OK;
}

/* X@GRAD i: the step input's gradients of every step, stacked along dim 0. */
static ct_status stack_dx(bptt *r, size_t i) {
  const ct_kernel_ctx *c = r->c;
  const ct_tensor *x = ct_kernel_in(c, G_X, i);
  ct_status st = ct__k_resize(c, G_DX, i, x->dims);
  char *out = st == CT_OK ? ct__k_out_data(c, G_DX, i, x->dtype) : NULL;
  if (out == NULL) return ct_last_status();
  for (int64_t t = 0; t < r->T; t++) {
    const ct_tensor *g = step_value(r, ct_scope_list_get(r->list, (size_t)t), t, r->in_grad[i]);
    if (g == NULL) return ct_last_status();
    size_t row = ct__tensor_bytes(g, g->dtype);
    if (g->dtype != x->dtype || (int64_t)row * r->T != (int64_t)ct__tensor_bytes(x, x->dtype)) {
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "step %lld: the gradient '%s' does not fit a row of input X "
                            "variable '%s'",
                            (long long)t, r->in_grad[i], ct_kernel_in_name(c, G_X, i));
    }
    st = ct__memcpy(out + (size_t)t * row, c->place, ct__tensor_ptr(g), g->block->place, row);
    if (st != CT_OK) return st;
  }
  return CT_OK;
}

/* Binds the sums: in the scratch kid scope of the op's scope, per parameter k and step t a view
 * "<Params@GRAD k>@step<t>", and one `sum` op per parameter adding its views (in step order)
 * into Params@GRAD k, found through the op's scope. */
static ct_status bind_sums(bptt *r, grad_keep *g, ct_scope *sk, size_t np, size_t T) {
  const ct_kernel_ctx *c = r->c;
  bound_free(&g->sums);
  drop_views(g);
  g->views = ct__calloc(np * T + 1, sizeof *g->views);
  g->view_t = ct__calloc(np * T + 1, sizeof *g->view_t);
  g->sums.prog = ct_program_new();
  if (g->views == NULL || g->view_t == NULL || g->sums.prog == NULL) return CT_ERR_OUT_OF_MEMORY;
  g->n_views = np * T;
  for (size_t i = 0; i < np * T; i++) {
    char suffix[32];
    snprintf(suffix, sizeof suffix, "@step%zu", i % T);
    g->views[i] = ct__rnn_suffixed(ct_kernel_out_name(c, G_DPARAMS, i / T), suffix);
    ct_var *v = g->views[i] ? ct_scope_var(sk, g->views[i]) : NULL;
    g->view_t[i] = v ? ct_var_tensor(v) : NULL;
    if (g->view_t[i] == NULL) return CT_ERR_OUT_OF_MEMORY;
  }
  for (size_t k = 0; k < np; k++) {
    ct_op *sum = ct_op_new("sum");
    ct_status st = sum ? ct_op_set_inputs(sum, "X", (const char *const *)g->views + k * T, T)
                       : ct_last_status();
    if (st == CT_OK) st = ct_op_set_output(sum, "Out", ct_kernel_out_name(c, G_DPARAMS, k));
    if (st == CT_OK) st = ct_program_append(g->sums.prog, sum);
    else ct_op_free(sum);
    if (st != CT_OK) return st;
  }
  g->T = T;
  return CT_OK;
}

/* Params@GRAD: each parameter's gradients of every step, summed by one `sum` op per parameter
 * (bind_sums), bound once; the views drop their memory after the sums. */
static ct_status sum_params(bptt *r) {
  const ct_kernel_ctx *c = r->c;
  grad_keep *g = r->keep;
  size_t np = ct_kernel_out_count(c, G_DPARAMS), T = (size_t)r->T;
  if (np == 0) return CT_OK;
  if (g->scratch == NULL && (g->scratch = ct_var_new()) == NULL) return relabel(r, "summing");
  ct_scope_list *l = ct_var_get_mutable(g->scratch, &ct_scope_list_type);
  if (l == NULL || (ct_scope_list_parent(l) != c->scope && ct_scope_list_size(l) > 0)) {
    ct_scope_list_clear(l);
  }
  if (l == NULL || ct_scope_list_resize(l, c->scope, 1) != CT_OK) return relabel(r, "summing");
  ct_scope *sk = ct_scope_list_get(l, 0);
  bool bound = g->sums.exec != NULL && g->sums.scope == sk && g->T == T &&
               g->sums.stamp == ct__scope_stamp(sk) && g->sums.chain == r->tp->chain_gen;
  if (!bound) {
    ct_status st = bind_sums(r, g, sk, np, T);
    if (st != CT_OK) {
      bound_free(&g->sums);
      drop_views(g);
      return st == CT_ERR_OUT_OF_MEMORY && ct_last_status() != st
                 ? ct_kernel_fail(c, st, "out of host memory")
                 : relabel(r, "summing");
    }
  }
  ct_status st = CT_OK;
  for (size_t i = 0; st == CT_OK && i < np * T; i++) {
    size_t t = i % T;
    const ct_tensor *x = step_value(r, ct_scope_list_get(r->list, t), (int64_t)t,
                                    r->param_grad[i / T]);
    if (x == NULL) st = ct_last_status();
    else st = share(r, g->view_t[i], x, "summing");
  }
  ct_executor *e = st == CT_OK ? bound_exec(&g->sums, sk, r->tp->chain_gen, c->place) : NULL;
  if (st == CT_OK && (e == NULL || ct_executor_run(e) != CT_OK)) {
    st = relabel(r, "output Params@GRAD");
  }
  for (size_t i = 0; i < np * T; i++) ct__tensor_drop_memory(g->view_t[i]);
  return st;
}

static ct_status run_bptt(bptt *r) {
  const ct_kernel_ctx *c = r->c;
  ct__rnn_tape *tp = r->tp;
  ct_status st = check_steps(r);
  if (st == CT_OK) st = ct__rnn_tape_begin(tp, c->scope, (size_t)r->T, 0);
  ct_scope *after = NULL;
  for (int64_t k = 0; st == CT_OK && k < r->T; k++) {
    int64_t t = r->reverse ? k : r->T - 1 - k;
    ct_scope *s = ct_scope_list_get(r->list, (size_t)t);
    st = run_step(r, tp, s, after, t);
    after = s;
  }
  for (size_t i = 0; st == CT_OK && i < r->ins.n; i++) st = stack_dx(r, i);
  for (size_t k = 0; st == CT_OK && k < r->inits.n; k++) {
    /* after is now the step scope of the forward run's first step. */
    size_t j = (size_t)ct__names_find(&r->states, r->inits.v[k]);
    const ct_tensor *g = step_value(r, after, r->reverse ? r->T - 1 : 0, r->ex_grad[j]);
    if (g == NULL) return ct_last_status();
    if (ct_tensor_copy(ct_kernel_out(c, G_DINIT, k), g, c->place) != CT_OK) {
      return relabel(r, "output InitStates@GRAD");
    }
  }
  return st == CT_OK ? sum_params(r) : st;
}

ct_status ct__recurrent_grad_kernel(const ct_kernel_ctx *c) {
  bptt r = {.c = c, .reverse = c->attr[CT__RNN_REVERSE].u.b};
  ct_scope_list *list = step_list(c);
  if (list == NULL) {
    /* Without a forward run: the attributes' errors first, as with one. */
    ct_status st = parse(&r);
    bptt_free(&r);
    return st != CT_OK ? st : no_steps(c);
  }
  bool fresh;
  ct__rnn_tape *tp = ct__rnn_tape_get(list, c, &fresh);
  if (tp == NULL) return ct_last_status();
  grad_keep *g = tp->extra;
  if (g == NULL) {
    /* A fresh tape: parse the attributes and make the names once, kept for the next runs. */
    g = ct__calloc(1, sizeof *g);
    if (g == NULL) return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY, "out of host memory");
    g->r = r;
    ct_status st = parse(&g->r);
    if (st != CT_OK) {
      keep_free(g);
      return st;
    }
    tp->extra = g;
    tp->extra_free = keep_free;
  }
  r = g->r;
  r.c = c;
  r.list = list;
  r.keep = g;
  r.tp = tp;
  return run_bptt(&r);
}
