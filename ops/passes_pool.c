/* SPDX-License-Identifier: Apache-2.0 */
/* ops/passes_pool.c: the executor's conv_pool pass (docs/design/passes.md), after the conv
 * chains (ops/passes.c) and the blocks (ops/passes_block.c).
 *
 * A convolution C (conv2d_fusion, or a conv2d or depthwise_conv2d the chains left alone: its
 * slots and attributes are conv2d_fusion's first ones) then a pool2d P become one conv2d_pool
 * (ops/cpu/conv_pool.c), whose bits are theirs, when
 * - P pools by max over windows (pooling_type "max", not global, not adaptive) in NCHW, and
 *   reads C's output Y as its X;
 * - Y is an intermediate that links them (written by C alone, read by P alone: ct__pass_link);
 * - the preps between them write intermediates alone, none of what C reads, and nest no program
 *   (ct__pass_between_holds);
 * - the result shares no memory with an input (checked again at every run).
 * The op takes P's place with C's slots and attributes and P's attributes renamed pool_...; C
 * and P stay in the caller's program, and run in its place when it fails (the fallback). */
#include <string.h>

#include "ops/defs.h"
#include "ops/op_impl.h"

/* The pair's memory assumption into r: the pool's result apart from C's inputs. */
static void pair_memory(const ct__prep *preps, size_t i, size_t j, ct__rewrite *r) {
  r->out = ct__pass_out0(&preps[j]);
  r->n_ins = 0;
  for (uint32_t k = 0; k < preps[i].n_in_vars && k < CT__REWRITE_INS; k++) {
    r->ins[r->n_ins++] = preps[i].vars[k];
  }
}

/* C's prep at i and its pool P at *j, when the two form a pair (their memory assumption into
 * *r, pair_memory). */
static bool find_pair(const ct__prep *preps, size_t n, size_t i,
                      bool (*candidate)(void *, const ct_var *), void *arg, size_t *j,
                      ct__rewrite *r) {
  const ct__prep *pc = &preps[i];
  if ((!ct__pass_is(pc, "conv2d_fusion") && !ct__pass_is(pc, "conv2d") &&
       !ct__pass_is(pc, "depthwise_conv2d")) ||
      pc->op->def->n_out != 1) {
    return false;
  }
  const ct_var *y = ct__pass_out0(pc);
  *j = ct__pass_reader(preps, n, i, y);
  if (*j >= n || !ct__pass_is(&preps[*j], "pool2d") || preps[*j].vars[0] != y ||
      !ct__pass_link(preps, n, i, *j, y, candidate, arg)) {
    return false;
  }
  const ct_op *p = preps[*j].op;
  const char *fmt = ct__pass_attr(p, "data_format")->u.s;
  if (strcmp(ct__pass_attr(p, "pooling_type")->u.s, "max") != 0 ||
      ct__pass_attr(p, "global_pooling")->u.b || ct__pass_attr(p, "adaptive")->u.b ||
      (strcmp(fmt, "NCHW") != 0 && strcmp(fmt, "AnyLayout") != 0)) {
    return false;
  }
  const size_t at[2] = {i, *j}, read_at[CT__REWRITE_INS] = {i, i, i, i, i, i, i, i};
  pair_memory(preps, i, *j, r);
  return pc->n_in_vars <= CT__REWRITE_INS &&
         ct__pass_between_holds(preps, at, 2, r->ins, read_at, r->n_ins, candidate, arg);
}

/* conv2d_pool for the pair (C at i, P at j); NULL with the error recorded. */
static ct_op *pair_op(const ct__prep *preps, size_t i, size_t j) {
  const ct_op *conv = preps[i].op, *pool = preps[j].op;
  ct_op *op = ct_op_new("conv2d_pool");
  if (op == NULL) return NULL;
  ct_status s = CT_OK;
  uint32_t at = 0;
  for (size_t k = 0; k < conv->def->n_in && s == CT_OK; k++) {
    for (size_t q = 0; q < conv->in[k].n && s == CT_OK; q++, at++) {
      s = ct_op_set_input(op, conv->def->in[k].name, ct_var_name(preps[i].vars[at]));
    }
  }
  if (s == CT_OK) s = ct_op_set_output(op, "Output", ct_var_name(ct__pass_out0(&preps[j])));
  if (s == CT_OK) s = ct__pass_copy_attrs(conv, op, "");
  if (s == CT_OK) s = ct__pass_copy_attrs(pool, op, "pool_");
  if (s != CT_OK) {
    ct_op_free(op);
    return NULL;
  }
  op->index = pool->index; /* messages name the pool's place in the program */
  return op;
}

ct_status ct__optimize_pools(ct__prep *preps, size_t *n, ct_scope *scope, ct_place place,
                             bool (*candidate)(void *, const ct_var *), void *arg,
                             ct__rewrites *rw) {
  /* after a pair is fused, index i holds the prep that followed its convolution: looked at
   * next, not skipped (another convolution whose pool comes later) */
  for (size_t i = 0; i < *n;) {
    size_t j;
    ct__rewrite memory = {0};
    if (!find_pair(preps, *n, i, candidate, arg, &j, &memory)) {
      i++;
      continue;
    }
    if (ct__pass_apart(&memory) != NULL) { /* its result shares an input's memory now */
      i++;
      continue;
    }
    const size_t at[2] = {i, j};
    ct_status s = ct__pass_apply(preps, n, scope, place, pair_op(preps, i, j), at, 2, j,
                                 &memory, rw);
    if (s != CT_OK) return s;
  }
  return CT_OK;
}
