/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/export_unroll.c: the recurrent op written as its steps, unrolled (ex_unroll).
 *
 * ONNX could hold the step program as a Loop body, but a Loop that stacks outputs and carries
 * states is a second graph with its own scoping rules, which few runtimes optimise; the steps
 * unrolled are plain nodes that every runtime runs and corten imports back as ordinary ops. The
 * price is a fixed sequence length: the one X holds when the program is saved.
 *
 * Step t (T-1 down to 0 with `reverse`), as the recurrent kernel runs it (ops/recurrent.c):
 *   - step input k is Gather(X[k], t) (a scalar index: dim 0 dropped), named "<name>@step<t>";
 *   - a previous state (ex_states[j]) is InitStates[j] at the first step, else the state
 *     (states[j]) the step before wrote;
 *   - every name a step op writes is local to the step: "<name>@step<t>"; other names (the
 *     parameters) are the outer variables, initializers as usual.
 * Then Out[k] stacks step output k in the order of t (Unsqueeze, Concat), and FinalStates[j] is
 * an Identity of the last step's state j. The step scopes are not written: a program that reads
 * StepScopes afterwards (recurrent_grad, a training program) is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/common.h"
#include <corten/program.h>

#include "onnx/onnx_save.h"

#define WHAT "ct_onnx_save"
enum { MAX_NAMES = 64 };

/* A comma-separated list of names (spaces around them dropped), copied into the export's kept
 * strings. */
typedef struct name_list {
  const char *v[MAX_NAMES];
  size_t n;
} name_list;

typedef struct unroll {
  ex_cx *x;
  const ex_op *op;
  size_t index;
  name_list states, ex_states, inputs, outputs;
  const ex_wiring *X, *init, *out, *final, *scopes;
  const ct_program *step;
  int64_t T;
  bool reverse;
} unroll;

static ct_status refuse(const unroll *u, const char *why) {
  return ct__error(CT_ERR_UNSUPPORTED,
                   WHAT ": op %zu ('recurrent') cannot be unrolled into ONNX: %s", u->index, why);
}

static ct_status split(unroll *u, const char *attr, const char *s, name_list *l) {
  l->n = 0;
  while (s != NULL && *s != '\0') {
    while (*s == ' ' || *s == ',') s++;
    if (*s == '\0') break;
    size_t len = strcspn(s, ",");
    while (len > 0 && s[len - 1] == ' ') len--;
    char buf[256];
    if (len >= sizeof buf || l->n == MAX_NAMES) {
      char why[96];
      snprintf(why, sizeof why, "attribute '%s' has over %d names or a name of 256 bytes", attr,
               MAX_NAMES);
      return refuse(u, why);
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    if ((l->v[l->n++] = ex_keep(u->x, buf)) == NULL) return ct_last_status();
    s += len;
    while (*s == ' ') s++;
  }
  return CT_OK;
}

static long find(const name_list *l, const char *name) {
  for (size_t i = 0; i < l->n; i++) {
    if (strcmp(l->v[i], name) == 0) return (long)i;
  }
  return -1;
}

static const ex_wiring *slot(const ex_op *op, bool output, const char *name) {
  size_t n = output ? op->def->n_out : op->def->n_in;
  for (size_t s = 0; s < n; s++) {
    const ct_slot_def *d = output ? &op->def->out[s] : &op->def->in[s];
    if (strcmp(d->name, name) == 0) return output ? &op->out[s] : &op->in[s];
  }
  return NULL;
}

static const ct_attr_value *attr(const ex_op *op, const char *name) {
  for (size_t a = 0; a < op->def->n_attr; a++) {
    if (strcmp(op->def->attr[a].name, name) == 0) return &op->attr[a];
  }
  return NULL;
}

/* Whether an op of the step program writes name. */
static bool step_writes(const unroll *u, const char *name) {
  for (size_t i = 0; i < ct_program_size(u->step); i++) {
    const ct_op *op = ct_program_op(u->step, i);
    ct_op_def d;
    if (ct_op_type_get(ct_op_type(op), &d) != CT_OK) continue;
    for (size_t s = 0; s < d.n_outputs; s++) {
      for (size_t k = 0; k < ct_op_output_count(op, d.outputs[s].name); k++) {
        if (strcmp(ct_op_output(op, d.outputs[s].name, k), name) == 0) return true;
      }
    }
  }
  ct_clear_error();
  return false;
}

/* "<name>@step<t>", kept. */
static const char *local(unroll *u, const char *name, int64_t t) {
  char buf[320];
  snprintf(buf, sizeof buf, "%s@step%lld", name, (long long)t);
  return ex_keep(u->x, buf);
}

/* The step before t in the order the steps run, or -1 at the first. */
static int64_t before(const unroll *u, int64_t t) {
  int64_t p = u->reverse ? t + 1 : t - 1;
  return p < 0 || p >= u->T ? -1 : p;
}

/* What a step program's name is at step t in the unrolled graph. NULL when out of memory. */
static const char *at_step(unroll *u, const char *name, int64_t t) {
  if (find(&u->inputs, name) >= 0) return local(u, name, t);
  long j = find(&u->ex_states, name);
  if (j >= 0) {
    int64_t p = before(u, t);
    return p < 0 ? u->init->names[j] : local(u, u->states.v[j], p);
  }
  return step_writes(u, name) ? local(u, name, t) : name;
}

/* The attributes and wiring, checked; T from X[0]'s dims. */
static ct_status prepare(unroll *u) {
  const ex_op *op = u->op;
  const ct_attr_value *prog = attr(op, "step_program"), *rev = attr(op, "reverse");
  static const char *const lists[4] = {"states", "ex_states", "step_inputs", "step_outputs"};
  name_list *into[4] = {&u->states, &u->ex_states, &u->inputs, &u->outputs};
  ct_status s = CT_OK;
  for (int k = 0; k < 4 && s == CT_OK; k++) {
    const ct_attr_value *v = attr(op, lists[k]);
    s = split(u, lists[k], v != NULL ? v->u.s : NULL, into[k]);
  }
  if (s != CT_OK) return s;
  u->X = slot(op, false, "X");
  u->init = slot(op, false, "InitStates");
  u->out = slot(op, true, "Out");
  u->final = slot(op, true, "FinalStates");
  u->scopes = slot(op, true, "StepScopes");
  if (prog == NULL || prog->u.program == NULL || rev == NULL || u->X == NULL || u->init == NULL ||
      u->out == NULL || u->final == NULL || u->scopes == NULL) {
    return refuse(u, "it is not the recurrent op of corten/op.h's slots and attributes");
  }
  u->step = prog->u.program;
  u->reverse = rev->u.b;
  if (u->X->n != u->inputs.n || u->init->n != u->states.n || u->ex_states.n != u->states.n ||
      (u->out->n != 0 && u->out->n != u->outputs.n) ||
      (u->final->n != 0 && u->final->n != u->states.n) || u->X->n == 0) {
    return refuse(u, "its X, InitStates, Out and FinalStates do not pair with step_inputs, "
                     "states and step_outputs one to one");
  }
  for (size_t j = 0; j < u->states.n; j++) {
    if (!step_writes(u, u->states.v[j]) || step_writes(u, u->ex_states.v[j])) {
      return refuse(u, "a state the step program does not write, or a previous state it writes");
    }
  }
  /* the step scopes are not exported: nothing after the op may read them */
  for (size_t i = u->index + 1; u->scopes->n == 1 && i < ct_program_size(u->x->prog); i++) {
    const ct_op *later = ct_program_op(u->x->prog, i);
    ct_op_def d;
    if (ct_op_type_get(ct_op_type(later), &d) != CT_OK) return ct_last_status();
    for (size_t sl = 0; sl < d.n_inputs; sl++) {
      for (size_t k = 0; k < ct_op_input_count(later, d.inputs[sl].name); k++) {
        if (strcmp(ct_op_input(later, d.inputs[sl].name, k), u->scopes->names[0]) == 0) {
          return refuse(u, "a later op reads its step scopes (recurrent_grad: a training "
                           "program); save the forward program");
        }
      }
    }
  }
  ct_var *v = ct_scope_find_var(u->x->scope, u->X->names[0]);
  const ct_tensor *t = v != NULL ? ct_var_get_tensor(v) : NULL;
  ct_clear_error();
  ct_ddim d = t != NULL ? ct_tensor_dims(t) : (ct_ddim){.rank = -1};
  if (d.rank < 1 || d.d[0] < 1) {
    return ct__error(CT_ERR_UNINITIALIZED,
                     WHAT ": op %zu ('recurrent') is unrolled at the sequence length of its X "
                          "'%s', which holds no sequence: set X (or run the program) first",
                     u->index, u->X->names[0]);
  }
  u->T = d.d[0];
  return CT_OK;
}

/* Step t: a Gather per step input, then the step program's ops on their step-t names. */
static ct_status write_step(unroll *u, int64_t t, ex_op *view) {
  ct_status s = CT_OK;
  for (size_t k = 0; k < u->inputs.n && s == CT_OK; k++) {
    const char *row = local(u, u->inputs.v[k], t), *idx = NULL;
    if (row == NULL) return ct_last_status();
    if ((s = ex_reads(u->x, u->X->names[k])) != CT_OK) break;
    if ((idx = ex_keep(u->x, ex_const_index(u->x, "t", t))) == NULL) return ct_last_status();
    const char *in[2] = {u->X->names[k], idx};
    ex_node nd;
    ex_node_begin(&nd, u->x, "Gather", NULL, in, 2, &row, 1);
    ex_attr_int(&nd, "axis", 0);
    ex_node_end(&nd);
    s = ex_writes(u->x, row);
  }
  for (size_t i = 0; i < ct_program_size(u->step) && s == CT_OK; i++) {
    if ((s = ex_op_view(view, ct_program_op(u->step, i))) == CT_OK) {
      size_t n = 0;
      for (size_t sl = 0; sl < view->def->n_in; sl++) n += view->in[sl].n;
      for (size_t sl = 0; sl < view->def->n_out; sl++) n += view->out[sl].n;
      for (size_t k = 0; k < n && s == CT_OK; k++) {
        const char *name = at_step(u, view->pool[k], t);
        if (name == NULL) s = ct_last_status();
        else view->pool[k] = name;
      }
      if (s == CT_OK) s = ex_emit(u->x, view, u->index);
    }
    ex_op_release(view);
  }
  return s;
}

/* Out[k]: the step outputs stacked in the order of t; FinalStates[j]: the last step's state. */
static ct_status write_results(unroll *u) {
  ct_status s = CT_OK;
  const char *axes = NULL;
  static const int64_t zero[1] = {0};
  for (size_t k = 0; k < u->out->n && s == CT_OK; k++) {
    const char **rows = ct__malloc((size_t)u->T * sizeof *rows);
    if (rows == NULL) return ct__error(CT_ERR_OUT_OF_MEMORY, WHAT ": out of host memory");
    for (int64_t t = 0; t < u->T && s == CT_OK; t++) {
      const char *y = at_step(u, u->outputs.v[k], t), *row = NULL;
      if (y == NULL || (s = ex_reads(u->x, y)) != CT_OK) {
        s = s != CT_OK ? s : ct_last_status();
        break;
      }
      if (axes == NULL && (axes = ex_keep(u->x, ex_const_ints(u->x, "axes", zero, 1))) == NULL) {
        s = ct_last_status();
        break;
      }
      if ((row = u->T == 1 ? u->out->names[k] : ex_keep(u->x, ex_tmp(u->x, y))) == NULL) {
        s = ct_last_status();
        break;
      }
      const char *in[2] = {y, axes};
      ex_node nd;
      ex_node_begin(&nd, u->x, "Unsqueeze", NULL, in, 2, &row, 1);
      ex_node_end(&nd);
      rows[t] = row;
    }
    if (s == CT_OK && u->T > 1) {
      ex_node nd;
      ex_node_begin(&nd, u->x, "Concat", NULL, rows, (size_t)u->T, &u->out->names[k], 1);
      ex_attr_int(&nd, "axis", 0);
      ex_node_end(&nd);
    }
    free(rows);
    if (s == CT_OK) s = ex_writes(u->x, u->out->names[k]);
  }
  int64_t last = u->reverse ? 0 : u->T - 1;
  for (size_t j = 0; j < u->final->n && s == CT_OK; j++) {
    const char *h = local(u, u->states.v[j], last);
    if (h == NULL) return ct_last_status();
    ex_node nd;
    ex_node_begin(&nd, u->x, "Identity", NULL, &h, 1, &u->final->names[j], 1);
    ex_node_end(&nd);
    s = ex_writes(u->x, u->final->names[j]);
  }
  return s;
}

ct_status ex_unroll(ex_cx *x, const ex_op *op, size_t index) {
  unroll u = {.x = x, .op = op, .index = index};
  ct_status s = prepare(&u);
  if (s != CT_OK) return s;
  ex_op *view = ct__malloc(sizeof *view);
  if (view == NULL) return ct__error(CT_ERR_OUT_OF_MEMORY, WHAT ": out of host memory");
  for (int64_t k = 0; k < u.T && s == CT_OK; k++) {
    s = write_step(&u, u.reverse ? u.T - 1 - k : k, view);
  }
  free(view);
  return s == CT_OK ? write_results(&u) : s;
}
