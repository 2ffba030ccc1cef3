/* SPDX-License-Identifier: Apache-2.0 */
/* ops/recurrent_grad.c: the gradient of the recurrent op, backpropagation through time over the
 * step scopes the forward run kept (docs/design/rnn.md, "The gradient").
 *
 * The maker (ct__grad_recurrent) differentiates the step program once, with the seeded pass of
 * ops/backward_impl.h: state h's gradient arrives as the seed "h@GRAD@next" (from the step after,
 * or FinalStates@GRAD after the last step) and step output y's as "y@GRAD@out" (its row of
 * Out@GRAD); the grad ops leave "p@GRAD" for every previous state, every step input whose
 * sequence needs a gradient and every parameter that does. It appends one recurrent_grad op that
 * holds this backward step program.
 *
 * recurrent_grad walks the step scopes from the forward run's last step to its first (the reverse
 * of the forward order, which `reverse` sets). In step scope t, where step t's forward values
 * still are, it binds the seeds as views (row t of Out@GRAD; the previous states' gradients of
 * the step after), runs the backward step program, and moves on. Then it stacks the step inputs'
 * gradients into X@GRAD, copies the first step's previous states' gradients into
 * InitStates@GRAD, and sums each parameter's gradients over the steps into Params@GRAD. Like
 * recurrent, the kernel only makes views, copies and runs programs, so it serves every place. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "ops/backward_impl.h"
#include "ops/recurrent.h"
#include "scope/scope_list.h"

/* recurrent_grad's slots and its one attribute beyond recurrent's. */
enum { G_X, G_INIT, G_PARAMS, G_DOUT, G_DFINAL, G_SCOPES };
enum { G_DX, G_DINIT, G_DPARAMS };
enum { A_INIT_STATES = CT__RNN_REVERSE + 1 };

#define SEED_NEXT "@GRAD@next"
#define SEED_OUT "@GRAD@out"

/* "<a><suffix>" in new memory; NULL when out of memory (nothing recorded). */
static char *suffixed(const char *a, const char *suffix) {
  size_t n = strlen(a) + strlen(suffix) + 1;
  char *s = ct__malloc(n);
  if (s != NULL) snprintf(s, n, "%s%s", a, suffix);
  return s;
}

/* The names v[i] for which pick[i] is set (all when pick is NULL), joined by ", ". */
static char *joined(char *const *v, const char **pick, size_t n) {
  size_t len = 1;
  for (size_t i = 0; i < n; i++) len += (pick == NULL || pick[i]) ? strlen(v[i]) + 2 : 0;
  char *s = ct__malloc(len);
  if (s == NULL) return NULL;
  s[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    if (pick != NULL && pick[i] == NULL) continue;
    if (s[0] != '\0') strcat(s, ", ");
    strcat(s, v[i]);
  }
  return s;
}

/* ---- The grad-op maker ----------------------------------------------------------------------- */

/* What the maker holds while it works; freed by maker_free. */
typedef struct maker {
  ct_grad_ctx *g;
  const ct_op *op;
  char label[CT__OP_LABEL_CAP];
  ct__names states, ex, ins, outs;
  size_t nx, ninit, nparams, nout, nfinal;
  const char **dx, **dinit, **dparam; /* the outer pass's contributions, NULL: none wanted */
  const char **dy;                    /* the gradients of Out, then of FinalStates */
  char **made;                        /* seed names and joined attributes, freed at the end */
  size_t n_made;
} maker;

static void maker_free(maker *m) {
  ct__names_free(&m->states);
  ct__names_free(&m->ex);
  ct__names_free(&m->ins);
  ct__names_free(&m->outs);
  for (size_t i = 0; i < m->n_made; i++) free(m->made[i]);
  free(m->made);
  free(m->dx);
}

static ct_status maker_fail(maker *m, ct_status s, const char *what) {
  if (s == CT_ERR_OUT_OF_MEMORY) {
    return ct__error(s, "ct_program_append_backward: %s: out of host memory", m->label);
  }
  return ct__error(s, "ct_program_append_backward: %s: %s", m->label, what);
}

/* Keeps name (made by the maker) to be freed at the end; NULL stays NULL. */
static char *keep(maker *m, char *name) {
  if (name != NULL) m->made[m->n_made++] = name;
  return name;
}

/* Parses the forward op's name lists and checks them against its wiring. */
static ct_status maker_parse(maker *m) {
  const ct_attr_value *a = m->op->attr;
  ct_status s = ct__names_split(a[CT__RNN_STATES].u.s, &m->states);
  if (s == CT_OK) s = ct__names_split(a[CT__RNN_EX_STATES].u.s, &m->ex);
  if (s == CT_OK) s = ct__names_split(a[CT__RNN_STEP_INPUTS].u.s, &m->ins);
  if (s == CT_OK) s = ct__names_split(a[CT__RNN_STEP_OUTPUTS].u.s, &m->outs);
  if (s != CT_OK) {
    return maker_fail(m, s, "an attribute lists an empty name: run the op to see which");
  }
  m->nx = ct_grad_input_count(m->g, "X");
  m->ninit = ct_grad_input_count(m->g, "InitStates");
  m->nparams = ct_grad_input_count(m->g, "Params");
  m->nout = ct_grad_output_count(m->g, "Out");
  m->nfinal = ct_grad_output_count(m->g, "FinalStates");
  if (a[CT__RNN_PROGRAM].u.program == NULL || m->states.n != m->ex.n ||
      m->ninit != m->states.n || m->nx != m->ins.n || m->nout != m->outs.n ||
      (m->nfinal != 0 && m->nfinal != m->states.n)) {
    return maker_fail(m, CT_ERR_INVALID_ARGUMENT,
                      "its step program, names and wiring do not pair up: run it forward once "
                      "to see what is wrong");
  }
  size_t n = m->nx + m->ninit + m->nparams + m->nout + m->nfinal;
  m->dx = ct__calloc(n + 1, sizeof *m->dx);
  m->made = ct__calloc(2 * (m->states.n + m->outs.n) + 4, sizeof *m->made);
  if (m->dx == NULL || m->made == NULL) return maker_fail(m, CT_ERR_OUT_OF_MEMORY, NULL);
  m->dinit = m->dx + m->nx;
  m->dparam = m->dinit + m->ninit;
  m->dy = m->dparam + m->nparams;
  return CT_OK;
}

/* Differentiates the step program into bwd: seeds for the states and step outputs, and as
 * parameters the previous states, the wanted step inputs and the wanted Params. */
static ct_status maker_step_backward(maker *m, ct_program *bwd) {
  size_t ns = m->states.n + m->outs.n, np = 0;
  ct__grad_seed *seeds = ct__malloc((ns + 1) * sizeof *seeds);
  const char **params = ct__malloc((m->ex.n + m->ins.n + m->nparams + 1) * sizeof *params);
  ct_status s = seeds && params ? CT_OK : CT_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; s == CT_OK && i < ns; i++) {
    bool state = i < m->states.n;
    const char *var = state ? m->states.v[i] : m->outs.v[i - m->states.n];
    seeds[i] = (ct__grad_seed){var, keep(m, suffixed(var, state ? SEED_NEXT : SEED_OUT))};
    if (seeds[i].grad == NULL) s = CT_ERR_OUT_OF_MEMORY;
  }
  for (size_t i = 0; s == CT_OK && i < m->ex.n + m->ins.n + m->nparams; i++) {
    size_t j = i - m->ex.n, k = j - m->ins.n;
    const char *p = i < m->ex.n ? m->ex.v[i]
                    : j < m->ins.n ? (m->dx[j] ? m->ins.v[j] : NULL)
                    : m->dparam[k] ? ct_grad_input(m->g, "Params", k)
                                   : NULL;
    bool twice = false;
    for (size_t q = 0; p != NULL && q < np; q++) twice = twice || strcmp(params[q], p) == 0;
    if (p != NULL && !twice) params[np++] = p;
  }
  if (s == CT_OK) s = ct__program_backward_seeded(m->op->attr[CT__RNN_PROGRAM].u.program, bwd,
                                                  seeds, ns, params, np);
  free(seeds);
  free(params);
  if (s == CT_ERR_OUT_OF_MEMORY) return maker_fail(m, s, NULL);
  if (s != CT_OK) {
    /* The inner pass's message, named as part of this op's step program. */
    char text[512];
    const char *e = ct_last_error(), *prefix = "ct_program_append_backward: ";
    if (strncmp(e, prefix, strlen(prefix)) == 0) e += strlen(prefix);
    snprintf(text, sizeof text, "in its step program, %s", e);
    return maker_fail(m, s, text);
  }
  return CT_OK;
}

/* Wires the recurrent_grad op. */
static ct_status maker_wire(maker *m, ct_op *gop) {
  ct_grad_ctx *g = m->g;
  const char **names = ct__calloc(m->nx + m->ninit + m->nparams + 1, sizeof *names);
  if (names == NULL) return maker_fail(m, CT_ERR_OUT_OF_MEMORY, NULL);
  static const char *const slots[] = {"X", "InitStates", "Params"};
  const char **wanted[] = {m->dx, m->dinit, m->dparam};
  size_t counts[] = {m->nx, m->ninit, m->nparams};
  ct_status s = ct_grad_copy_attrs(g, gop);
  for (size_t k = 0; s == CT_OK && k < 3; k++) {
    size_t n = 0;
    for (size_t i = 0; i < counts[k]; i++) {
      if (wanted[k][i] != NULL) names[n++] = ct_grad_input(g, slots[k], i);
    }
    s = ct_op_set_inputs(gop, slots[k], (const char *const *)names, n);
    n = 0;
    for (size_t i = 0; i < counts[k]; i++) {
      if (wanted[k][i] != NULL) names[n++] = wanted[k][i];
    }
    char out[24];
    snprintf(out, sizeof out, "%s@GRAD", slots[k]);
    if (s == CT_OK) s = ct_op_set_outputs(gop, out, (const char *const *)names, n);
  }
  const char *const *dy = (const char *const *)m->dy;
  if (s == CT_OK) s = ct_op_set_inputs(gop, "Out@GRAD", dy, m->nout);
  if (s == CT_OK) s = ct_op_set_inputs(gop, "FinalStates@GRAD", dy + m->nout, m->nfinal);
  if (s == CT_OK) s = ct_op_set_input(gop, "StepScopes", ct_grad_output(g, "StepScopes", 0));
  free(names);
  char *ins = s == CT_OK ? keep(m, joined(m->ins.v, m->dx, m->ins.n)) : NULL;
  char *inits = s == CT_OK ? keep(m, joined(m->states.v, m->dinit, m->states.n)) : NULL;
  if (s == CT_OK && (ins == NULL || inits == NULL)) s = maker_fail(m, CT_ERR_OUT_OF_MEMORY, NULL);
  if (s == CT_OK) s = ct_op_set_attr_string(gop, "step_inputs", ins);
  if (s == CT_OK) s = ct_op_set_attr_string(gop, "init_states", inits);
  return s;
}

ct_status ct__grad_recurrent(ct_grad_ctx *g) {
  maker m = {.g = g, .op = ct_grad_forward(g)};
  ct__op_label(m.op, m.label, sizeof m.label);
  ct_status s = maker_parse(&m);
  /* The contributions are asked for once each: every one handed out must be written. */
  for (size_t i = 0; s == CT_OK && i < m.nx + m.ninit + m.nparams; i++) {
    const char *slot = i < m.nx ? "X" : i < m.nx + m.ninit ? "InitStates" : "Params";
    size_t k = i < m.nx ? i : i < m.nx + m.ninit ? i - m.nx : i - m.nx - m.ninit;
    m.dx[i] = ct_grad_input_grad(g, slot, k);
  }
  /* The outputs' gradients (zeros for one the loss does not read), before the op that reads
   * them is made. */
  for (size_t i = 0; s == CT_OK && i < m.nout + m.nfinal; i++) {
    bool out = i < m.nout;
    m.dy[i] = ct_grad_output_grad(g, out ? "Out" : "FinalStates", out ? i : i - m.nout);
    if (m.dy[i] == NULL) s = ct_last_status();
  }
  ct_program *bwd = s == CT_OK ? ct_program_new() : NULL;
  if (s == CT_OK && bwd == NULL) s = ct_last_status();
  if (s == CT_OK) s = maker_step_backward(&m, bwd);
  ct_op *gop = NULL;
  if (s == CT_OK && (gop = ct_grad_op_new(g, "recurrent_grad")) == NULL) s = ct_last_status();
  if (s == CT_OK) {
    s = ct_op_set_attr_program(gop, "step_program", bwd); /* takes bwd, also on failure */
    bwd = NULL;
  }
  if (s == CT_OK) s = maker_wire(&m, gop);
  ct_program_free(bwd);
  maker_free(&m);
  return s;
}

/* ---- The recurrent_grad kernel ------------------------------------------------------------- */

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
} bptt;

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
    if ((r->names[i] = suffixed(base, suffix)) == NULL) {
      return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY, "out of host memory");
    }
  }
  return CT_OK;
}

/* Finds the forward run's step scopes and checks the sequences against them. */
static ct_status find_steps(bptt *r) {
  const ct_kernel_ctx *c = r->c;
  const char *name = ct_kernel_in_name(c, G_SCOPES, 0);
  r->list = ct_var_get(ct_kernel_in_var(c, G_SCOPES, 0), &ct_scope_list_type);
  size_t T = ct_scope_list_size(r->list);
  bool whole = T > 0;
  for (size_t t = 0; t < T; t++) whole &= ct_scope_list_get(r->list, t) != NULL;
  if (!whole) {
    return ct_kernel_fail(c, CT_ERR_UNINITIALIZED,
                          "input StepScopes variable '%s' holds no step scopes of a forward run: "
                          "run the forward recurrent op before its gradient, and keep its step "
                          "scopes (they hold the values the gradient reads) until then",
                          name);
  }
  r->T = (int64_t)T;
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

/* Binds step t's seeds in s: the step outputs' rows of Out@GRAD, and the states' gradients from
 * the step after (after_s; NULL at the last step: FinalStates@GRAD, or zeros). */
static ct_status seed_step(bptt *r, ct_scope *s, ct_scope *after_s, int64_t t) {
  const ct_kernel_ctx *c = r->c;
  for (size_t i = 0; i < r->outs.n; i++) {
    ct_tensor *x = local(r, s, t, r->out_seed[i]);
    const ct_tensor *seq = ct_kernel_in(c, G_DOUT, i);
    if (x == NULL) return ct_last_status();
    if (ct_tensor_slice(x, seq, t, t + 1) != CT_OK) return relabel(r, "slicing Out@GRAD");
    ct_ddim row = seq->dims;
    row.rank--;
    memmove(row.d, row.d + 1, (size_t)row.rank * sizeof row.d[0]);
    ct__tensor_set_dims(x, row, ct_ddim_numel(row));
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
      if (ct_tensor_share(x, from) != CT_OK) return relabel(r, "sharing a state's gradient");
      continue;
    }
    /* No gradient comes after the last step: the loss does not read the final states. */
    ct_op *zeros = ct_op_new("fill_any_like");
    ct_status st = zeros ? ct_op_set_input(zeros, "X", r->states.v[j]) : ct_last_status();
    if (st == CT_OK) st = ct_op_set_output(zeros, "Out", r->next[j]);
    if (st == CT_OK) st = ct_op_set_attr_float(zeros, "value", 0.0);
    if (st == CT_OK) st = ct_op_run(zeros, s, c->place);
    ct_op_free(zeros);
    if (st != CT_OK) return relabel(r, "zeros for the last state's gradient");
  }
  return CT_OK;
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

/* Params@GRAD k: the parameter's gradients of every step, summed by one `sum` op (in step
 * order) run in a scratch kid scope that views them under names of its own. */
static ct_status sum_dparam(bptt *r, size_t k) {
  const ct_kernel_ctx *c = r->c;
  const char *out = ct_kernel_out_name(c, G_DPARAMS, k);
  size_t T = (size_t)r->T;
  char **names = ct__calloc(T, sizeof *names);
  ct_scope *tmp = ct_scope_new_kid(c->scope);
  ct_op *sum = ct_op_new("sum");
  ct_status st = names && tmp && sum ? CT_OK : CT_ERR_OUT_OF_MEMORY;
  for (size_t t = 0; st == CT_OK && t < T; t++) {
    char suffix[32];
    snprintf(suffix, sizeof suffix, "@step%zu", t);
    const ct_tensor *g = step_value(r, ct_scope_list_get(r->list, t), (int64_t)t, r->param_grad[k]);
    if (g == NULL) st = ct_last_status();
    else if ((names[t] = suffixed(out, suffix)) == NULL) st = CT_ERR_OUT_OF_MEMORY;
    ct_var *var = st == CT_OK ? ct_scope_var(tmp, names[t]) : NULL;
    ct_tensor *v = var ? ct_var_tensor(var) : NULL;
    if (st == CT_OK && (v == NULL || ct_tensor_share(v, g) != CT_OK)) st = relabel(r, "summing");
  }
  if (st == CT_OK) st = ct_op_set_inputs(sum, "X", (const char *const *)names, T);
  if (st == CT_OK) st = ct_op_set_output(sum, "Out", out);
  if (st == CT_OK && ct_op_run(sum, tmp, c->place) != CT_OK) {
    char what[200];
    snprintf(what, sizeof what, "output Params@GRAD variable '%s'", out);
    st = relabel(r, what);
  }
  if (st == CT_ERR_OUT_OF_MEMORY && (names == NULL || tmp == NULL || sum == NULL)) {
    st = ct_kernel_fail(c, st, "out of host memory");
  }
  ct_op_free(sum);
  ct_scope_free(tmp);
  for (size_t t = 0; names != NULL && t < T; t++) free(names[t]);
  free(names);
  return st;
}

static ct_status run_bptt(bptt *r) {
  const ct_kernel_ctx *c = r->c;
  ct_status st = find_steps(r);
  ct__rnn_tape *tp = NULL;
  if (st == CT_OK) {
    bool fresh;
    tp = ct__rnn_tape_get((ct_scope_list *)r->list, c, &fresh); /* the list is the op's input */
    st = tp == NULL ? ct_last_status() : ct__rnn_tape_begin(tp, c->scope, (size_t)r->T, 0);
  }
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
  for (size_t k = 0; st == CT_OK && k < ct_kernel_out_count(c, G_DPARAMS); k++) {
    st = sum_dparam(r, k);
  }
  return st;
}

ct_status ct__recurrent_grad_kernel(const ct_kernel_ctx *c) {
  bptt r = {.c = c, .reverse = c->attr[CT__RNN_REVERSE].u.b};
  ct_status st = parse(&r);
  if (st == CT_OK) st = run_bptt(&r);
  ct__names *lists[] = {&r.states, &r.ex, &r.ins, &r.outs, &r.inits};
  for (size_t k = 0; k < 5; k++) ct__names_free(lists[k]);
  for (size_t i = 0; r.names != NULL && i < r.n_names; i++) free(r.names[i]);
  free(r.names);
  return st;
}

static const ct_slot_def grad_in[] = {
    {"X", CT_SLOT_MANY | CT_SLOT_OPTIONAL},
    {"InitStates", CT_SLOT_MANY | CT_SLOT_OPTIONAL},
    {"Params", CT_SLOT_MANY | CT_SLOT_OPTIONAL},
    {"Out@GRAD", CT_SLOT_MANY | CT_SLOT_OPTIONAL},
    {"FinalStates@GRAD", CT_SLOT_MANY | CT_SLOT_OPTIONAL},
    {"StepScopes", CT_SLOT_ANY_TYPE},
};
static const ct_slot_def grad_out[] = {
    {"X@GRAD", CT_SLOT_MANY | CT_SLOT_OPTIONAL},
    {"InitStates@GRAD", CT_SLOT_MANY | CT_SLOT_OPTIONAL},
    {"Params@GRAD", CT_SLOT_MANY | CT_SLOT_OPTIONAL},
};
static const ct_attr_def grad_attrs[] = {
    {"step_program", {.type = CT_ATTR_PROGRAM}, true},
    {"states", {.type = CT_ATTR_STRING, .u.s = ""}, false},
    {"ex_states", {.type = CT_ATTR_STRING, .u.s = ""}, false},
    {"step_inputs", {.type = CT_ATTR_STRING, .u.s = ""}, false},
    {"step_outputs", {.type = CT_ATTR_STRING, .u.s = ""}, false},
    {"reverse", {.type = CT_ATTR_BOOL, .u.b = false}, false},
    {"init_states", {.type = CT_ATTR_STRING, .u.s = ""}, false},
};

static const ct_op_def defs[] = {
    {.type = "recurrent_grad", .inputs = grad_in, .n_inputs = 6, .outputs = grad_out,
     .n_outputs = 3, .attrs = grad_attrs, .n_attrs = 7},
};

const ct__def_table ct__recurrent_grad_defs = CT__TABLE(defs);
