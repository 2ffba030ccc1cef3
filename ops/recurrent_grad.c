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
 * recurrent_grad (its kernel is in ops/recurrent_grad_run.c) walks the step scopes from the
 * forward run's last step to its first (the reverse of the forward order, which `reverse` sets).
 * In step scope t, where step t's forward values still are, it binds the seeds as views (row t
 * of Out@GRAD; the previous states' gradients of the step after), runs the backward step
 * program, and moves on. Then it stacks the step inputs' gradients into X@GRAD, copies the first
 * step's previous states' gradients into InitStates@GRAD, and sums each parameter's gradients
 * over the steps into Params@GRAD. Like recurrent, the kernel only makes views, copies and runs
 * programs, so it serves every place. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "ops/backward_impl.h"
#include "ops/recurrent_grad.h"
#include "scope/scope_list.h"

char *ct__rnn_suffixed(const char *a, const char *suffix) {
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
    char *seed = ct__rnn_suffixed(var, state ? SEED_NEXT : SEED_OUT);
    seeds[i] = (ct__grad_seed){var, keep(m, seed)};
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
