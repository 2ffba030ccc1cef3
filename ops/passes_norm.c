/* SPDX-License-Identifier: Apache-2.0 */
/* ops/passes_norm.c: the optimize option's decomposed_layer_norm pass (docs/design/passes.md).
 *
 *   m = reduce_mean(X), d = X - m, p = d ^ E, v = reduce_mean(p), ve = v + eps, sd = sqrt(ve),
 *   n = d / sd, [g = n * Scale], [y = g + Bias]
 *
 * (both means over the last dim, dims kept: what exporters write for a layer norm before
 * opset 17) becomes one decomposed_layer_norm op (ops/defs/decomposed_norm.c) computing the same
 * bits. Every intermediate is the executor's, written by its op alone and read by the chain's
 * ops alone (d by the power and the division, each other by the next op); the ops between the
 * chain's first and last write only intermediates, none the chain reads after the op that reads
 * it, and nest no program. Run-time dims the op does not take make it fail, and the executor
 * then runs the chain's own ops. */
#include <string.h>

#include "ops/op_impl.h"

enum { N_MEAN, N_SUB, N_POW, N_MEAN2, N_ADD, N_SQRT, N_DIV, N_MUL, N_BIAS, N_N };

typedef struct dnorm {
  size_t at[N_N]; /* the members' indices; SIZE_MAX for an absent multiply or bias add */
  const ct_var *x, *e, *eps, *scale, *bias;
  bool eps_first, scale_first, bias_first;
} dnorm;

/* Whether prep p is a reduce_mean over the last dim of its one input, the dim kept. */
static bool last_dim_mean(const ct__prep *p) {
  if (!ct__pass_is(p, "reduce_mean") || p->n_in_vars != 1 || p->n_out_vars != 1) return false;
  const ct_attr_value *dim = ct__pass_attr(p->op, "dim");
  return dim->u.ints.n == 1 && dim->u.ints.v[0] == -1 &&
         ct__pass_attr(p->op, "keep_dim")->u.b && !ct__pass_attr(p->op, "empty_dim_noop")->u.b;
}

/* Whether v, an intermediate, is written by prep w alone and read once each by preps a and b
 * alone (and by no nested program). */
static bool read_by_two(const ct__prep *preps, size_t n, size_t w, size_t a, size_t b,
                        const ct_var *v, bool (*candidate)(void *, const ct_var *), void *arg) {
  if (!candidate(arg, v)) return false;
  int reads_a = 0, reads_b = 0;
  for (size_t j = 0; j < n; j++) {
    const ct__prep *q = &preps[j];
    for (uint32_t k = 0; k < q->n_in_vars + q->n_out_vars; k++) {
      if (q->vars[k] != v) continue;
      if (k >= q->n_in_vars) {
        if (j != w) return false;
      } else if (j == a) {
        reads_a++;
      } else if (j == b) {
        reads_b++;
      } else {
        return false;
      }
    }
    if (ct__nested_reads(q->op, ct_var_name(v)) || ct__nested_writes(q->op, ct_var_name(v))) {
      return false;
    }
  }
  return reads_a == 1 && reads_b == 1;
}

/* The next member: the prep reading cur after `from`, of type `type`, linked by cur; its index
 * into *at, its output into *cur (false when there is none). */
static bool next(const ct__prep *preps, size_t n, size_t from, const ct_var **cur,
                 const char *type, bool (*candidate)(void *, const ct_var *), void *arg,
                 size_t *at) {
  size_t j = ct__pass_reader(preps, n, from, *cur);
  if (j >= n || !ct__pass_is(&preps[j], type) || preps[j].n_out_vars != 1 ||
      !ct__pass_link(preps, n, from, j, *cur, candidate, arg)) {
    return false;
  }
  *at = j;
  *cur = ct__pass_out0(&preps[j]);
  return true;
}

/* Whether v can be the Scale or Bias: written by no op, holding one value or one per element
 * of a last dim now (so the fused op does not refuse it at every run). */
static bool per_row(const ct__prep *preps, size_t n, const ct_var *v) {
  if (!ct__pass_fixed(preps, n, v)) return false;
  ct_ddim d = ct_tensor_dims(ct_var_get_tensor(v));
  for (int k = 0; k + 1 < d.rank; k++) {
    if (d.d[k] != 1) return false;
  }
  return true;
}

/* The chain whose first mean is prep i, into *c (false when there is none). */
static bool find_dnorm(const ct__prep *preps, size_t n, size_t i,
                       bool (*candidate)(void *, const ct_var *), void *arg, dnorm *c) {
  *c = (dnorm){.at = {i, SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX,
                      SIZE_MAX}};
  if (!last_dim_mean(&preps[i])) return false;
  c->x = preps[i].vars[0];
  const ct_var *cur = ct__pass_out0(&preps[i]);
  if (!next(preps, n, i, &cur, "elementwise_sub", candidate, arg, &c->at[N_SUB]) ||
      preps[c->at[N_SUB]].vars[0] != c->x || preps[c->at[N_SUB]].vars[1] == c->x) {
    return false;
  }
  const ct_var *d = cur;
  size_t jp = ct__pass_reader(preps, n, c->at[N_SUB], d);
  if (jp >= n || !ct__pass_is(&preps[jp], "elementwise_pow") || preps[jp].n_in_vars != 2 ||
      preps[jp].vars[0] != d || preps[jp].vars[1] == d) {
    return false;
  }
  c->at[N_POW] = jp;
  c->e = preps[jp].vars[1];
  cur = ct__pass_out0(&preps[jp]);
  if (!next(preps, n, jp, &cur, "reduce_mean", candidate, arg, &c->at[N_MEAN2]) ||
      !last_dim_mean(&preps[c->at[N_MEAN2]]) ||
      !next(preps, n, c->at[N_MEAN2], &cur, "elementwise_add", candidate, arg, &c->at[N_ADD])) {
    return false;
  }
  const ct__prep *add = &preps[c->at[N_ADD]];
  c->eps = ct__pass_other(add, preps[c->at[N_MEAN2]].vars[1]);
  c->eps_first = add->vars[1] == preps[c->at[N_MEAN2]].vars[1];
  if (c->eps == NULL ||
      !next(preps, n, c->at[N_ADD], &cur, "sqrt", candidate, arg, &c->at[N_SQRT]) ||
      !next(preps, n, c->at[N_SQRT], &cur, "elementwise_div", candidate, arg, &c->at[N_DIV])) {
    return false;
  }
  const ct__prep *div = &preps[c->at[N_DIV]];
  if (div->n_in_vars != 2 || div->vars[0] != d ||
      div->vars[1] != ct__pass_out0(&preps[c->at[N_SQRT]]) ||
      !read_by_two(preps, n, c->at[N_SUB], jp, c->at[N_DIV], d, candidate, arg)) {
    return false;
  }
  size_t last = c->at[N_DIV];
  const ct_var *before = cur;
  if (next(preps, n, last, &cur, "elementwise_mul", candidate, arg, &c->at[N_MUL]) &&
      (c->scale = ct__pass_other(&preps[c->at[N_MUL]], before)) != NULL &&
      per_row(preps, n, c->scale)) {
    c->scale_first = preps[c->at[N_MUL]].vars[1] == before;
    last = c->at[N_MUL];
    before = cur;
    if (next(preps, n, last, &cur, "elementwise_add", candidate, arg, &c->at[N_BIAS]) &&
        (c->bias = ct__pass_other(&preps[c->at[N_BIAS]], before)) != NULL &&
        per_row(preps, n, c->bias)) {
      c->bias_first = preps[c->at[N_BIAS]].vars[1] == before;
      last = c->at[N_BIAS];
    } else {
      c->at[N_BIAS] = SIZE_MAX;
      c->bias = NULL;
    }
  } else {
    c->at[N_MUL] = SIZE_MAX;
    c->scale = NULL;
  }
  const ct_var *res = ct__pass_out0(&preps[last]);
  if (res == c->x || res == c->e || res == c->eps || res == c->scale || res == c->bias) {
    return false;
  }
  const ct_var *ins[5] = {c->x, c->e, c->eps, c->scale, c->bias};
  const size_t read_at[5] = {c->at[N_MEAN], c->at[N_POW], c->at[N_ADD], c->at[N_MUL],
                             c->at[N_BIAS]};
  return ct__pass_between_holds(preps, c->at, N_N, ins, read_at, 5, candidate, arg);
}

/* The chain's last member: the bias add, else the multiply, else the division. */
static size_t last_of(const dnorm *c) {
  return c->at[N_BIAS] != SIZE_MAX ? c->at[N_BIAS]
         : c->at[N_MUL] != SIZE_MAX ? c->at[N_MUL] : c->at[N_DIV];
}

/* The decomposed_layer_norm op for chain c; NULL with the error recorded. */
static ct_op *dnorm_op(const ct__prep *preps, const dnorm *c) {
  ct_op *op = ct_op_new("decomposed_layer_norm");
  if (op == NULL) return NULL;
  ct_status s = ct_op_set_input(op, "X", ct_var_name(c->x));
  if (s == CT_OK) s = ct_op_set_input(op, "Exponent", ct_var_name(c->e));
  if (s == CT_OK) s = ct_op_set_input(op, "Epsilon", ct_var_name(c->eps));
  if (s == CT_OK && c->scale != NULL) s = ct_op_set_input(op, "Scale", ct_var_name(c->scale));
  if (s == CT_OK && c->bias != NULL) s = ct_op_set_input(op, "Bias", ct_var_name(c->bias));
  if (s == CT_OK) {
    s = ct_op_set_output(op, "Out", ct_var_name(ct__pass_out0(&preps[last_of(c)])));
  }
  if (s == CT_OK) s = ct_op_set_attr_bool(op, "epsilon_first", c->eps_first);
  if (s == CT_OK) s = ct_op_set_attr_bool(op, "scale_first", c->scale_first);
  if (s == CT_OK) s = ct_op_set_attr_bool(op, "bias_first", c->bias_first);
  if (s != CT_OK) {
    ct_op_free(op);
    return NULL;
  }
  op->index = preps[last_of(c)].op->index; /* messages name the last op's place */
  return op;
}

/* Chain c's memory assumption into r: its result apart from its inputs. */
static void dnorm_memory(const ct__prep *preps, const dnorm *c, ct__rewrite *r) {
  r->out = ct__pass_out0(&preps[last_of(c)]);
  r->n_ins = 0;
  const ct_var *ins[5] = {c->x, c->e, c->eps, c->scale, c->bias};
  for (int k = 0; k < 5; k++) {
    if (ins[k] != NULL) r->ins[r->n_ins++] = ins[k];
  }
}

_Static_assert(N_N <= CT__REWRITE_MAX && 5 <= CT__REWRITE_INS, "a chain fits a rewrite");

static ct_status apply(ct__prep *preps, size_t *n, ct_scope *scope, ct_place place,
                       const dnorm *c, ct__rewrites *rw) {
  ct__rewrite memory = {0};
  dnorm_memory(preps, c, &memory);
  return ct__pass_apply(preps, n, scope, place, dnorm_op(preps, c), c->at, N_N, last_of(c),
                        &memory, rw);
}

ct_status ct__optimize_norms(ct__prep *preps, size_t *n, ct_scope *scope, ct_place place,
                             bool (*candidate)(void *, const ct_var *), void *arg,
                             ct__rewrites *rw) {
  for (size_t i = 0; i < *n; i++) {
    dnorm c;
    if (!find_dnorm(preps, *n, i, candidate, arg, &c)) continue;
    ct__rewrite probe = {0};
    dnorm_memory(preps, &c, &probe);
    if (ct__pass_apart(&probe) != NULL) continue; /* its result shares an input's memory now */
    ct_status s = apply(preps, n, scope, place, &c, rw);
    if (s != CT_OK) return s;
  }
  return CT_OK;
}
