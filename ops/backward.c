/* SPDX-License-Identifier: Apache-2.0 */
/* ops/backward.c: ct_program_append_backward, the backward pass over a program.
 *
 * Over the names of the program (docs/design/backward.md):
 *   1. dep: the variables that depend on a parameter (forward from the parameters);
 *      reach: the variables the loss depends on (backward from the loss). An op is
 *      differentiated when it reads a dep variable and writes a reach variable.
 *   2. In reverse program order each such op's grad-op maker appends its grad ops. The gradient
 *      of an input is handed out as a fresh contribution "x@GRAD@k"; the gradient of an output
 *      is made final the first time a maker asks for it: the one contribution renamed to
 *      "x@GRAD", or a `sum` of them, or zeros (fill_any_like) when there is none. Every
 *      reader of x comes after x's one writer in the program, so all contributions to x exist
 *      by the time the maker of x's writer runs.
 *   3. Each parameter's gradient is made final last; a parameter the loss does not reach
 *      gets zeros of its dims.
 * The new ops are collected aside and appended only when the whole pass succeeds, into room
 * reserved beforehand, so a failure leaves the program as it was.
 *
 * ct__program_backward_seeded (ops/backward_impl.h) runs the same pass with given gradients of
 * some variables (seeds) in place of a loss, and appends the grad ops to another program: the
 * recurrent op's maker differentiates its step program that way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/backward.h>

#include "common/alloc.h"
#include "ops/backward_impl.h"
#include "ops/op_impl.h"

/* What the pass knows of one variable name. */
typedef struct gvar {
  const char *name;    /* the program's own copy */
  long writer;         /* index of the op writing it, -1 for none */
  long first_read;     /* index of the first op reading it, -1 for none */
  bool written_twice;  /* by two ops, or by an op that also reads it */
  bool dep, reach, read_by_others; /* the last: read by an op besides its first reader */
  char *grad;          /* final gradient name once made final, else NULL */
  char **contrib;      /* the contributions handed out, in order */
  size_t n_contrib, cap_contrib;
  size_t n_given;      /* the first n_given contributions are seeds, written by no made op */
} gvar;

struct ct_grad_ctx {
  const ct_op *op;
  struct pass *pass;
};

typedef struct pass {
  const ct_program *p;
  gvar *vars;
  size_t n_vars, cap_vars;
  size_t *table; /* open addressing over vars: index + 1, 0 for empty */
  size_t table_cap;
  ct_op **made; /* the new ops, in order */
  size_t n_made, cap_made;
  bool in_maker;      /* a maker is running; its ops start at made[maker_first] */
  size_t maker_first;
  ct_status failed;   /* the first failure of a maker's request (note_failure), else CT_OK */
} pass;

CT__COLD static ct_status oom(void) {
  return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_program_append_backward: out of host memory");
}

static size_t hash(const char *s) {
  size_t h = 1469598103934665603u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

static gvar *find(const pass *ps, const char *name) {
  if (ps->table_cap == 0) return NULL;
  for (size_t i = hash(name) & (ps->table_cap - 1);; i = (i + 1) & (ps->table_cap - 1)) {
    size_t k = ps->table[i];
    if (k == 0) return NULL;
    if (strcmp(ps->vars[k - 1].name, name) == 0) return &ps->vars[k - 1];
  }
}

/* The record of name, added when new; NULL when out of memory (recorded). */
static gvar *intern(pass *ps, const char *name) {
  gvar *v = find(ps, name);
  if (v != NULL) return v;
  if (2 * (ps->n_vars + 1) > ps->table_cap) {
    size_t cap = ps->table_cap ? 2 * ps->table_cap : 64;
    size_t *t = ct__calloc(cap, sizeof *t);
    if (t == NULL) return oom(), NULL;
    for (size_t k = 0; k < ps->n_vars; k++) {
      size_t i = hash(ps->vars[k].name) & (cap - 1);
      while (t[i] != 0) i = (i + 1) & (cap - 1);
      t[i] = k + 1;
    }
    free(ps->table);
    ps->table = t;
    ps->table_cap = cap;
  }
  if (ps->n_vars == ps->cap_vars) {
    size_t cap = ps->cap_vars ? 2 * ps->cap_vars : 64;
    gvar *g = ct__realloc(ps->vars, cap * sizeof *g);
    if (g == NULL) return oom(), NULL;
    ps->vars = g;
    ps->cap_vars = cap;
  }
  gvar *nv = &ps->vars[ps->n_vars];
  *nv = (gvar){.name = name, .writer = -1, .first_read = -1};
  size_t i = hash(name) & (ps->table_cap - 1);
  while (ps->table[i] != 0) i = (i + 1) & (ps->table_cap - 1);
  ps->table[i] = ++ps->n_vars;
  return nv;
}

static void pass_free(pass *ps, bool free_made) {
  for (size_t k = 0; k < ps->n_vars; k++) {
    free(ps->vars[k].grad);
    for (size_t c = 0; c < ps->vars[k].n_contrib; c++) free(ps->vars[k].contrib[c]);
    free(ps->vars[k].contrib);
  }
  if (free_made) {
    for (size_t i = 0; i < ps->n_made; i++) ct_op_free(ps->made[i]);
  }
  free(ps->made);
  free(ps->vars);
  free(ps->table);
}

/* Runs BODY with `name` set to each variable name wired to op and `output` telling whether it
 * is an output, inputs first. `continue` in BODY moves to the next name. */
#define FOR_WIRED(op, output, name, BODY)                                        \
  for (int output = 0; output < 2; output++) {                                  \
    const ct__wiring *w_ = output ? (op)->out : (op)->in;                       \
    size_t ns_ = output ? (op)->def->n_out : (op)->def->n_in;                   \
    for (size_t s_ = 0; s_ < ns_; s_++) {                                       \
      for (size_t i_ = 0; i_ < w_[s_].n; i_++) {                                \
        const char *name = w_[s_].names[i_];                                    \
        BODY                                                                    \
      }                                                                         \
    }                                                                           \
  }

/* Records every name of the program and who writes it. */
static ct_status scan(pass *ps) {
  size_t n = ct_program_size(ps->p);
  for (size_t k = 0; k < n; k++) {
    const ct_op *op = ct_program_op(ps->p, k);
    FOR_WIRED(op, output, name, {
      gvar *v = intern(ps, name);
      if (v == NULL) return CT_ERR_OUT_OF_MEMORY;
      if (output) {
        if (v->writer >= 0) v->written_twice = true;
        v->writer = (long)k;
      } else {
        v->read_by_others |= v->first_read >= 0 && v->first_read != (long)k;
        if (v->first_read < 0) v->first_read = (long)k;
      }
    })
    /* An op that writes a variable it reads works in place. */
    FOR_WIRED(op, output, name, {
      if (output) continue;
      for (size_t s = 0; s < op->def->n_out; s++) {
        for (size_t i = 0; i < op->out[s].n; i++) {
          if (strcmp(op->out[s].names[i], name) == 0) find(ps, name)->written_twice = true;
        }
      }
    })
  }
  /* A variable read before its writer runs holds two values over the program. */
  for (size_t k = 0; k < ps->n_vars; k++) {
    gvar *v = &ps->vars[k];
    if (v->writer >= 0 && v->first_read >= 0 && v->first_read < v->writer) v->written_twice = true;
  }
  return CT_OK;
}

/* dep forward from the parameters, reach backward from the loss. */
static void mark(pass *ps) {
  size_t n = ct_program_size(ps->p);
  for (size_t k = 0; k < n; k++) {
    const ct_op *op = ct_program_op(ps->p, k);
    bool any = false;
    FOR_WIRED(op, output, name, {
      if (!output && find(ps, name)->dep) any = true;
    })
    if (!any) continue;
    FOR_WIRED(op, output, name, {
      if (output) find(ps, name)->dep = true;
    })
  }
  for (size_t k = n; k-- > 0;) {
    const ct_op *op = ct_program_op(ps->p, k);
    bool any = false;
    FOR_WIRED(op, output, name, {
      if (output && find(ps, name)->reach) any = true;
    })
    if (!any) continue;
    FOR_WIRED(op, output, name, {
      if (!output) find(ps, name)->reach = true;
    })
  }
}

/* Whether op is differentiated: it reads a dep variable and writes a reach one. */
static bool on_path(const pass *ps, const ct_op *op) {
  bool in = false, out = false;
  FOR_WIRED(op, output, name, {
    const gvar *v = find(ps, name);
    if (output) out = out || v->reach;
    else in = in || v->dep;
  })
  return in && out;
}

static char *join(const char *a, const char *b, size_t k, bool with_k) {
  size_t cap = strlen(a) + strlen(b) + 24;
  char *s = ct__malloc(cap);
  if (s == NULL) return NULL;
  if (with_k) snprintf(s, cap, "%s%s@%zu", a, b, k);
  else snprintf(s, cap, "%s%s", a, b);
  return s;
}

static ct_status keep_made(pass *ps, ct_op *op) {
  if (ps->n_made == ps->cap_made) {
    size_t cap = ps->cap_made ? 2 * ps->cap_made : 16;
    ct_op **m = ct__realloc(ps->made, cap * sizeof *m);
    if (m == NULL) {
      ct_op_free(op);
      return oom();
    }
    ps->made = m;
    ps->cap_made = cap;
  }
  ps->made[ps->n_made++] = op;
  return CT_OK;
}

/* A new op of type, kept by the pass; NULL with the error recorded. */
static ct_op *make(pass *ps, const char *type) {
  ct_op *op = ct_op_new(type);
  if (op == NULL) return NULL;
  return keep_made(ps, op) == CT_OK ? op : NULL;
}

/* Appends fill_any_like(X = like) -> out with value v; one_element: like is the loss, which must
 * hold one element when the program runs (fill_any_like's infer-shape checks). */
static ct_status fill_like(pass *ps, const char *like, const char *out, double v,
                           bool one_element) {
  ct_op *op = make(ps, "fill_any_like");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", like);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", out);
  if (s == CT_OK) s = ct_op_set_attr_float(op, "value", v);
  if (s == CT_OK && one_element) s = ct_op_set_attr_bool(op, "one_element", true);
  return s;
}

/* Renames output `from` of the made ops to `to` (the one contribution of a gradient). */
static ct_status rename_output(pass *ps, const char *from, const char *to) {
  for (size_t m = ps->n_made; m-- > 0;) {
    ct_op *op = ps->made[m];
    for (size_t s = 0; s < op->def->n_out; s++) {
      for (size_t i = 0; i < op->out[s].n; i++) {
        if (strcmp(op->out[s].names[i], from) != 0) continue;
        char *copy = join(to, "", 0, false);
        if (copy == NULL) return oom();
        free(op->out[s].names[i]);
        op->out[s].names[i] = copy;
        return CT_OK;
      }
    }
  }
  return CT_OK; /* a maker took the name and wired no op to it: nothing reads it either */
}

/* Moves the ops made since made[from] in front of the running maker's own ops: a maker may
 * make its grad op before it asks for the output gradient that op reads, and the sum or zeros
 * that finish then makes must run first. */
static void hoist(pass *ps, size_t from) {
  if (!ps->in_maker) return;
  for (size_t k = from; k < ps->n_made; k++) {
    ct_op *op = ps->made[k];
    memmove(ps->made + ps->maker_first + 1, ps->made + ps->maker_first,
            (k - ps->maker_first) * sizeof *ps->made);
    ps->made[ps->maker_first++] = op;
  }
}

/* Makes v's gradient final (see the top of the file); its name in v->grad. */
static ct_status finish(pass *ps, gvar *v) {
  if (v->grad != NULL) return CT_OK;
  size_t first_new = ps->n_made;
  /* A seed alone is read where it is: no op writes it, so there is nothing to rename. */
  bool seed_only = v->n_contrib == 1 && v->n_given == 1;
  char *g = seed_only ? join(v->contrib[0], "", 0, false) : join(v->name, CT_GRAD_SUFFIX, 0, false);
  if (g == NULL) return oom();
  ct_status s = CT_OK;
  if (seed_only) {
    /* nothing to make */
  } else if (v->n_contrib == 0) {
    s = fill_like(ps, v->name, g, 0.0, false);
  } else if (v->n_contrib == 1) {
    s = rename_output(ps, v->contrib[0], g);
  } else {
    ct_op *op = make(ps, "sum");
    s = op == NULL ? ct_last_status()
                   : ct_op_set_inputs(op, "X", (const char *const *)v->contrib, v->n_contrib);
    if (s == CT_OK) s = ct_op_set_output(op, "Out", g);
  }
  if (s != CT_OK) {
    free(g);
    return s;
  }
  hoist(ps, first_new);
  v->grad = g;
  return CT_OK;
}

/* ---- The maker's view -------------------------------------------------------------------- */

const ct_op *ct_grad_forward(const ct_grad_ctx *g) { return g ? g->op : NULL; }
size_t ct_grad_input_count(const ct_grad_ctx *g, const char *slot) {
  return ct_op_input_count(ct_grad_forward(g), slot);
}
size_t ct_grad_output_count(const ct_grad_ctx *g, const char *slot) {
  return ct_op_output_count(ct_grad_forward(g), slot);
}
const char *ct_grad_input(const ct_grad_ctx *g, const char *slot, size_t i) {
  return ct_op_input(ct_grad_forward(g), slot, i);
}
const char *ct_grad_output(const ct_grad_ctx *g, const char *slot, size_t i) {
  return ct_op_output(ct_grad_forward(g), slot, i);
}

/* A failure inside a maker's request is kept by the pass as well: a maker that took the NULL
 * for "no gradient wanted" and returned CT_OK still fails the pass (no gradient is dropped). */
static const char *note_failure(ct_grad_ctx *g, const char *name) {
  if (name == NULL && g->pass->failed == CT_OK) g->pass->failed = ct_last_status();
  return name;
}

const char *ct_grad_output_grad(ct_grad_ctx *g, const char *slot, size_t i) {
  const char *name = ct_grad_output(g, slot, i);
  if (name == NULL) return NULL;
  gvar *v = find(g->pass, name);
  return note_failure(g, finish(g->pass, v) == CT_OK ? v->grad : NULL);
}

/* Adds a contribution to v's gradient: the name given (a seed) or a fresh "x@GRAD@k". */
static const char *add_contrib(gvar *v, const char *given) {
  if (v->n_contrib == v->cap_contrib) {
    size_t cap = v->cap_contrib ? 2 * v->cap_contrib : 2;
    char **c = ct__realloc(v->contrib, cap * sizeof *c);
    if (c == NULL) return oom(), NULL;
    v->contrib = c;
    v->cap_contrib = cap;
  }
  char *c = given ? join(given, "", 0, false) : join(v->name, CT_GRAD_SUFFIX, v->n_contrib, true);
  if (c == NULL) return oom(), NULL;
  v->contrib[v->n_contrib++] = c;
  return c;
}

const char *ct_grad_input_grad(ct_grad_ctx *g, const char *slot, size_t i) {
  const char *name = ct_grad_input(g, slot, i);
  if (name == NULL) return NULL;
  gvar *v = find(g->pass, name);
  if (!v->dep) return NULL;
  return note_failure(g, add_contrib(v, NULL));
}

ct_op *ct_grad_op_new(ct_grad_ctx *g, const char *type) {
  if (g == NULL) {
    return ct__error_null(CT_ERR_INVALID_ARGUMENT, "ct_grad_op_new: the grad context is NULL");
  }
  return make(g->pass, type);
}

/* ---- The pass ------------------------------------------------------------------------------ */

/* Checks the arguments; a NULL loss is allowed when seeded (the seeded pass has none). */
static ct_status check_args(const ct_program *p, const char *loss, bool seeded,
                            const char *const *params, size_t n) {
  bool no_loss = loss == NULL ? !seeded : loss[0] == '\0';
  if (p == NULL || no_loss || (params == NULL && n > 0)) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_program_append_backward: the program, the loss name or the parameter "
                     "list is NULL or empty");
  }
  for (size_t i = 0; i < n; i++) {
    if (params[i] == NULL || params[i][0] == '\0') {
      return ct__error(CT_ERR_INVALID_ARGUMENT,
                       "ct_program_append_backward: parameter %zu has no name", i);
    }
    for (size_t j = 0; j < i; j++) {
      if (strcmp(params[i], params[j]) == 0) {
        return ct__error(CT_ERR_INVALID_ARGUMENT,
                         "ct_program_append_backward: parameter '%s' is listed twice: list each "
                         "once",
                         params[i]);
      }
    }
  }
  return CT_OK;
}

/* Refuses an op on the path that cannot be differentiated, before anything is made. */
static ct_status check_path(const pass *ps) {
  char label[CT__OP_LABEL_CAP];
  for (size_t k = 0; k < ct_program_size(ps->p); k++) {
    const ct_op *op = ct_program_op(ps->p, k);
    if (!on_path(ps, op)) continue;
    if (op->def->grad == NULL) {
      return ct__error(CT_ERR_UNSUPPORTED,
                       "ct_program_append_backward: %s lies between a parameter and the loss but "
                       "its type has no gradient: register one (ct_op_def.grad) or move it off "
                       "the path",
                       ct__op_label(op, label, sizeof label));
    }
    /* Every variable the op reads or writes must be one value: its gradient op reads them at
     * the end of the program, after any later writer (on the path or not) has run. */
    FOR_WIRED(op, output, name, {
      const gvar *v = find(ps, name);
      if (!v->written_twice || /* an op's own state, updated in place, passes */
          (v->writer == (long)k && v->first_read == (long)k && !v->read_by_others)) {
        continue;
      }
      if (output) {
        return ct__error(CT_ERR_UNSUPPORTED,
                         "ct_program_append_backward: %s writes variable '%s', which another op "
                         "writes too or which it also reads: give each value its own name",
                         ct__op_label(op, label, sizeof label), name);
      }
      char wlabel[CT__OP_LABEL_CAP];
      return ct__error(CT_ERR_UNSUPPORTED,
                       "ct_program_append_backward: %s reads variable '%s', which %s writes "
                       "again (or writes in place), so its gradient would read the later value: "
                       "give each value its own name",
                       ct__op_label(op, label, sizeof label), name,
                       ct__op_label(ct_program_op(ps->p, (size_t)v->writer), wlabel,
                                    sizeof wlabel));
    })
  }
  return CT_OK;
}

/* Makes param's gradient final under the name "param@GRAD", which the seeded pass promises:
 * a seed alone keeps its own name, so an assign gives it that one. */
static ct_status finish_param(pass *ps, const char *param) {
  gvar *v = find(ps, param);
  ct_status s = finish(ps, v);
  size_t len = strlen(param);
  if (s != CT_OK ||
      (strncmp(v->grad, param, len) == 0 && strcmp(v->grad + len, CT_GRAD_SUFFIX) == 0)) {
    return s;
  }
  char *g = join(param, CT_GRAD_SUFFIX, 0, false);
  ct_op *op = g ? make(ps, "assign") : NULL;
  s = op == NULL ? (g ? ct_last_status() : oom()) : ct_op_set_input(op, "X", v->grad);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", g);
  free(g);
  return s;
}

/* Refuses a program that already has a variable named like a gradient the pass would make
 * ("x@GRAD", "x@GRAD@k" for a variable x it differentiates or a parameter): a second backward
 * pass over one program, or a user's own "w@GRAD", would write a name twice. */
static ct_status check_names_free(const pass *ps) {
  size_t suffix = strlen(CT_GRAD_SUFFIX);
  for (size_t k = 0; k < ps->n_vars; k++) {
    const char *name = ps->vars[k].name, *at = strstr(name, CT_GRAD_SUFFIX);
    if (at == NULL || (at[suffix] != '\0' && at[suffix] != '@')) continue;
    for (size_t j = 0; j < ps->n_vars; j++) {
      const gvar *v = &ps->vars[j];
      if (!v->dep || strlen(v->name) != (size_t)(at - name) ||
          strncmp(v->name, name, (size_t)(at - name)) != 0 || v->n_given > 0) {
        continue;
      }
      return ct__error(CT_ERR_ALREADY_EXISTS,
                       "ct_program_append_backward: the program already uses variable '%s', a "
                       "name the backward pass would write (the gradient of '%s'): one backward "
                       "pass per program, and no variable of your own named like a gradient",
                       name, v->name);
    }
  }
  return CT_OK;
}

/* The pass from a loss (seeds NULL) or from seeds (loss NULL). */
static ct_status run_pass(pass *ps, const char *loss, const ct__grad_seed *seeds,
                          size_t n_seeds, const char *const *params, size_t n) {
  ct_status s = scan(ps);
  if (s != CT_OK) return s;
  gvar *lv = loss ? find(ps, loss) : NULL;
  if (loss != NULL && (lv == NULL || lv->writer < 0)) {
    return ct__error(CT_ERR_NOT_FOUND,
                     "ct_program_append_backward: no op of the program writes the loss '%s': name "
                     "an output of one of its ops",
                     loss);
  }
  for (size_t i = 0; i < n; i++) {
    gvar *v = intern(ps, params[i]);
    if (v == NULL) return CT_ERR_OUT_OF_MEMORY;
    v->dep = true;
  }
  for (size_t i = 0; i < n_seeds; i++) {
    if (intern(ps, seeds[i].var) == NULL) return CT_ERR_OUT_OF_MEMORY;
  }
  /* Interning may have moved the records: find them again. Seeds come before any maker, so
   * they are the first contributions of their variables. */
  for (size_t i = 0; i < n_seeds; i++) {
    gvar *v = find(ps, seeds[i].var);
    v->reach = true;
    if (add_contrib(v, seeds[i].grad) == NULL) return CT_ERR_OUT_OF_MEMORY;
    v->n_given++;
  }
  if (loss != NULL) (lv = find(ps, loss))->reach = true;
  mark(ps);
  if ((s = check_path(ps)) != CT_OK) return s;
  if ((s = check_names_free(ps)) != CT_OK) return s;
  if (lv != NULL && lv->dep) {
    char *g = join(loss, CT_GRAD_SUFFIX, 0, false);
    if (g == NULL) return oom();
    lv->grad = g;
    if ((s = fill_like(ps, loss, g, 1.0, true)) != CT_OK) return s;
  }
  for (size_t k = ct_program_size(ps->p); k-- > 0;) {
    const ct_op *op = ct_program_op(ps->p, k);
    if (!on_path(ps, op)) continue;
    ct_grad_ctx g = {.op = op, .pass = ps};
    ps->in_maker = true;
    ps->maker_first = ps->n_made;
    s = op->def->grad(&g);
    ps->in_maker = false;
    if (s == CT_OK && ps->failed != CT_OK) {
      s = ps->failed; /* the maker went on past a failed request: its message stands */
    }
    if (s != CT_OK) return s;
  }
  for (size_t i = 0; i < n; i++) {
    if ((s = finish_param(ps, params[i])) != CT_OK) return s;
  }
  return CT_OK;
}

/* Runs the pass over src and appends the ops it made to dst, all or nothing. */
static ct_status append_pass(const ct_program *src, ct_program *dst, const char *loss,
                             const ct__grad_seed *seeds, size_t n_seeds,
                             const char *const *params, size_t n) {
  pass ps = {.p = src};
  ct_status s = run_pass(&ps, loss, seeds, n_seeds, params, n);
  if (s == CT_OK) s = ct__program_reserve(dst, ps.n_made);
  if (s != CT_OK) {
    pass_free(&ps, true);
    return s;
  }
  for (size_t i = 0; i < ps.n_made; i++) {
    s = ct_program_append(dst, ps.made[i]); /* room reserved, fresh ops: cannot fail */
    if (s != CT_OK) abort();
  }
  pass_free(&ps, false);
  return CT_OK;
}

ct_status ct_program_append_backward(ct_program *p, const char *loss,
                                     const char *const *params, size_t n) {
  ct_status s = check_args(p, loss, false, params, n);
  return s == CT_OK ? append_pass(p, p, loss, NULL, 0, params, n) : s;
}

ct_status ct__program_backward_seeded(const ct_program *src, ct_program *dst,
                                      const ct__grad_seed *seeds, size_t n_seeds,
                                      const char *const *params, size_t n) {
  ct_status s = check_args(src, NULL, true, params, n);
  if (s == CT_OK && (dst == NULL || (seeds == NULL && n_seeds > 0))) {
    s = ct__error(CT_ERR_INVALID_ARGUMENT, "ct__program_backward_seeded: no program or seeds");
  }
  for (size_t i = 0; s == CT_OK && i < n_seeds; i++) {
    if (seeds[i].var == NULL || seeds[i].grad == NULL) {
      s = ct__error(CT_ERR_INVALID_ARGUMENT, "ct__program_backward_seeded: seed %zu has no name",
                    i);
    }
  }
  return s == CT_OK ? append_pass(src, dst, NULL, seeds, n_seeds, params, n) : s;
}
