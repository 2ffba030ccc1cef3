/* SPDX-License-Identifier: Apache-2.0 */
/* ops/passes_block.c: the executor's inverted_residual pass (docs/design/passes.md), after
 * conv_epilogue (ops/passes.c) has made the conv2d_fusion ops it reads.
 *
 * Three conv2d_fusion ops A -> B -> C become one inverted_residual (ops/cpu/conv_block.c), whose
 * bits are theirs, when
 * - A is a 1x1 convolution (stride 1, no padding, undilated, one group) by a Filter [E, C, 1, 1]
 *   held now, B a 3x3 depthwise one by [E, 1, 3, 3] (E groups, padding 1 on every side, stride 1
 *   or 2 alike, undilated) and C a 1x1 one by [M, E, 1, 1], in NCHW;
 * - A's and B's outputs are intermediates that link them (each written by its op alone and read
 *   by the next alone: ct__pass_link), and the ops between A and C write intermediates alone
 *   (none of what A or B read, under its name or another sharing its memory) and nest no
 *   program;
 * - their biases are rank 1 of E, E and M values now (filters and biases written by no op, so
 *   these are their dims at every run), A and B have no residual, and C's residual,
 *   if any, is A's Input itself with M = C and stride 1 (so of the output's dims: MobileNetV2's
 *   x + F(x));
 * - the filters are float32 or float64 alike, and each clip bound is a value of their dtype;
 * - the result shares no memory with an input (checked again at every run, ct__rewrites_check).
 * Without A (a depthwise B first, reading the block's Input: MobileNetV2's first block), B and C
 * become an inverted_residual without Filter, Bias and activation (E = C, from B's Filter) on
 * the same conditions, the residual being B's Input.
 * The op takes C's place; A and B, and C, stay in the caller's program (these are the executor's
 * own ops already). */
#include <math.h>
#include <string.h>

#include "ops/defs.h"
#include "ops/op_impl.h"
#include "tensor/tensor_impl.h"

/* The variable wired to slot k of prep p (each slot of a conv2d_fusion holds at most one), or
 * NULL. */
static const ct_var *slot_var(const ct__prep *p, size_t k) {
  const ct_op *op = p->op;
  if (op->in[k].n != 1) return NULL;
  size_t at = 0;
  for (size_t j = 0; j < k; j++) at += op->in[j].n;
  return p->vars[at];
}

static bool dims_now(const ct_var *v, ct_ddim want, ct_dtype *dtype) {
  const ct_tensor *t = v != NULL ? ct_var_get_tensor(v) : NULL;
  if (t == NULL || !ct_ddim_equal(ct_tensor_dims(t), want)) return false;
  if (*dtype == CT_DTYPE_UNDEFINED) *dtype = ct_tensor_dtype(t);
  return ct_tensor_dtype(t) == *dtype;
}

static bool ints_are(const ct_attr_value *a, int64_t v) {
  for (size_t i = 0; i < a->u.ints.n; i++) {
    if (a->u.ints.v[i] != v) return false;
  }
  return a->u.ints.n > 0;
}

/* Whether conv2d_fusion op's geometry is padding `pad`, stride `stride` both ways, undilated,
 * `groups` groups, NCHW with explicit paddings, and it has no batch norm (which the block's
 * epilogues do not run). */
static bool geometry(const ct_op *op, int64_t pad, int64_t stride, int64_t groups) {
  for (size_t k = CT__FUSION_BN_SCALE; k <= CT__FUSION_BN_VARIANCE; k++) {
    if (op->in[k].n != 0) return false; /* any of them: a partial one must fail as it would */
  }
  const ct_attr_value *st = ct__pass_attr(op, "strides"), *pd = ct__pass_attr(op, "paddings");
  const char *fmt = ct__pass_attr(op, "data_format")->u.s;
  return st->u.ints.n == 2 && ints_are(st, stride) && ints_are(pd, pad) &&
         ints_are(ct__pass_attr(op, "dilations"), 1) &&
         ct__pass_attr(op, "groups")->u.i == groups &&
         strcmp(ct__pass_attr(op, "padding_algorithm")->u.s, "EXPLICIT") == 0 &&
         (strcmp(fmt, "NCHW") == 0 || strcmp(fmt, "AnyLayout") == 0);
}

/* Whether op's clip bounds are values of dtype (any bounds when it does not clip). */
static bool bounds_exact(const ct_op *op, ct_dtype dtype) {
  if (strcmp(ct__pass_attr(op, "activation")->u.s, "clip") != 0) return true;
  double lo = ct__pass_attr(op, "clip_min")->u.f, hi = ct__pass_attr(op, "clip_max")->u.f;
  if (isnan(lo) || isnan(hi)) return false;
  return dtype == CT_FLOAT64 || ((double)(float)lo == lo && (double)(float)hi == hi);
}

typedef struct block {
  size_t a, b, c;
  const ct_var *in[CT__REWRITE_INS]; /* by inverted_residual's slots; NULL where not given */
  int64_t stride;
} block;

/* Whether no prep strictly between a and c writes what A or B read: none of them has a nested
 * program, and each writes the executor's intermediates alone. A caller's variable (one it made,
 * or kept) may share the memory of what A reads (one buffer wrapped twice, ct_tensor_share)
 * under another name; an intermediate shares memory only through an op's view, which a write
 * gives a block of its own. So a write between, which A would have read before and the block
 * after, is ruled out by kind, not by name. */
static bool inputs_hold(const ct__prep *preps, const block *k,
                        bool (*candidate)(void *, const ct_var *), void *arg) {
  for (size_t j = (k->a != SIZE_MAX ? k->a : k->b) + 1; j < k->c; j++) {
    const ct__prep *q = &preps[j];
    for (size_t t = 0; t < q->op->def->n_attr; t++) {
      if (q->op->attr[t].type == CT_ATTR_PROGRAM) return false;
    }
    for (uint32_t o = q->n_in_vars; o < q->n_in_vars + q->n_out_vars; o++) {
      if (!candidate(arg, q->vars[o])) return false;
      for (size_t s = CT__IR_INPUT; s <= CT__IR_DWBIAS; s++) {
        if (q->vars[o] == k->in[s]) return false;
      }
    }
  }
  return true;
}

/* The block whose first op is prep i (A, or B when the block has no expansion), into *k (false
 * when there is none). */
static bool find_block(const ct__prep *preps, size_t n, size_t i,
                       bool (*candidate)(void *, const ct_var *), void *arg, block *k) {
  const ct__prep *pa = &preps[i];
  if (strcmp(pa->op->def->type, "conv2d_fusion") != 0 || slot_var(pa, 3) != NULL) return false;
  const ct_var *x = slot_var(pa, 0);
  const ct_tensor *fa = ct_var_get_tensor(slot_var(pa, 1));
  if (fa == NULL || ct_tensor_dims(fa).rank != 4) return false;
  const bool expand = geometry(pa->op, 0, 1, 1);
  /* without an expansion, B's Filter [E, 1, 3, 3] gives E = C (the depthwise checks Input's
   * channels against it at every run) */
  const int64_t e = ct_tensor_dims(fa).d[0], c = expand ? ct_tensor_dims(fa).d[1] : e;
  /* one channel is no depthwise conv: conv2d runs groups 1 through its GEMM, whose sums fuse
   * each multiply-add (the block's depthwise does not) */
  if (e < 2) return false;
  ct_dtype dt = CT_DTYPE_UNDEFINED;
  size_t jb = i;
  if (expand) {
    if (!dims_now(slot_var(pa, 1), CT_DIMS(e, c, 1, 1), &dt)) return false;
    /* B: the next op reading A's output. */
    const ct_var *ya = pa->vars[pa->n_in_vars];
    for (jb = i + 1; jb < n && (preps[jb].n_in_vars == 0 || preps[jb].vars[0] != ya);) jb++;
    if (jb >= n || strcmp(preps[jb].op->def->type, "conv2d_fusion") != 0 ||
        !ct__pass_link(preps, n, i, jb, ya, candidate, arg)) {
      return false;
    }
  }
  const ct__prep *pb = &preps[jb];
  const ct_attr_value *bs = ct__pass_attr(pb->op, "strides");
  int64_t s = bs->u.ints.n == 2 ? bs->u.ints.v[0] : 0;
  if ((s != 1 && s != 2) || !geometry(pb->op, 1, s, e) || slot_var(pb, 3) != NULL ||
      !dims_now(slot_var(pb, 1), CT_DIMS(e, 1, 3, 3), &dt) ||
      (dt != CT_FLOAT32 && dt != CT_FLOAT64)) {
    return false;
  }
  /* C: the next op reading B's output. */
  const ct_var *yb = pb->vars[pb->n_in_vars];
  size_t jc = jb + 1;
  while (jc < n && (preps[jc].n_in_vars == 0 || preps[jc].vars[0] != yb)) jc++;
  if (jc >= n || strcmp(preps[jc].op->def->type, "conv2d_fusion") != 0 ||
      !ct__pass_link(preps, n, jb, jc, yb, candidate, arg) || !geometry(preps[jc].op, 0, 1, 1)) {
    return false;
  }
  const ct__prep *pc = &preps[jc];
  const ct_tensor *fc = ct_var_get_tensor(slot_var(pc, 1));
  if (fc == NULL || ct_tensor_dims(fc).rank != 4) return false;
  const int64_t m = ct_tensor_dims(fc).d[0];
  if (!dims_now(slot_var(pc, 1), CT_DIMS(m, e, 1, 1), &dt)) return false;
  *k = (block){.a = expand ? i : SIZE_MAX, .b = jb, .c = jc, .stride = s,
               .in = {x, expand ? slot_var(pa, 1) : NULL, expand ? slot_var(pa, 2) : NULL,
                      slot_var(pb, 1), slot_var(pb, 2), slot_var(pc, 1), slot_var(pc, 2),
                      slot_var(pc, 3)}};
  const int64_t bias_n[3] = {e, e, m};
  for (int q = 0; q < 3; q++) {
    const ct_var *bias = k->in[CT__IR_BIAS + 2 * q];
    if (bias != NULL && !dims_now(bias, CT_DIMS(bias_n[q]), &dt)) return false;
  }
  /* The weights' and biases' dims, read now, hold at every run: no op writes them. */
  for (size_t q = CT__IR_FILTER; q < CT__IR_RESIDUAL; q++) {
    if (k->in[q] != NULL && !ct__pass_fixed(preps, n, k->in[q])) return false;
  }
  const ct_var *res = k->in[CT__IR_RESIDUAL];
  if (res != NULL && (res != x || m != c || s != 1)) return false;
  return bounds_exact(pa->op, dt) && bounds_exact(pb->op, dt) && bounds_exact(pc->op, dt) &&
         inputs_hold(preps, k, candidate, arg);
}

/* Copies op's activation and its bounds into fused's attributes of the same meaning. */
static ct_status copy_act(const ct_op *op, ct_op *fused, const char *act, const char *lo,
                          const char *hi) {
  ct_status s = ct_op_set_attr_string(fused, act, ct__pass_attr(op, "activation")->u.s);
  if (s == CT_OK) s = ct_op_set_attr_float(fused, lo, ct__pass_attr(op, "clip_min")->u.f);
  if (s == CT_OK) s = ct_op_set_attr_float(fused, hi, ct__pass_attr(op, "clip_max")->u.f);
  return s;
}

/* inverted_residual for block k; NULL with the error recorded. */
static ct_op *block_op(const ct__prep *preps, const block *k) {
  static const char *const slots[CT__REWRITE_INS] = {
      "Input",           "Filter",        "Bias",        "DepthwiseFilter",
      "DepthwiseBias",   "ProjectFilter", "ProjectBias", "ResidualData"};
  ct_op *op = ct_op_new("inverted_residual");
  if (op == NULL) return NULL;
  ct_status s = CT_OK;
  for (size_t q = 0; q < CT__REWRITE_INS && s == CT_OK; q++) {
    if (k->in[q] != NULL) s = ct_op_set_input(op, slots[q], ct_var_name(k->in[q]));
  }
  const ct__prep *pc = &preps[k->c];
  if (s == CT_OK) s = ct_op_set_output(op, "Output", ct_var_name(pc->vars[pc->n_in_vars]));
  const int64_t st[2] = {k->stride, k->stride};
  if (s == CT_OK) s = ct_op_set_attr_ints(op, "strides", st, 2);
  if (s == CT_OK && k->a != SIZE_MAX) {
    s = copy_act(preps[k->a].op, op, "activation", "clip_min", "clip_max");
  }
  if (s == CT_OK) s = copy_act(preps[k->b].op, op, "dw_activation", "dw_clip_min", "dw_clip_max");
  if (s == CT_OK) {
    s = copy_act(pc->op, op, "project_activation", "project_clip_min", "project_clip_max");
  }
  if (s != CT_OK) {
    ct_op_free(op);
    return NULL;
  }
  op->index = pc->op->index; /* messages name the projection's place in the program */
  return op;
}

/* Block k's memory assumption into r: its result apart from every input. */
static void block_memory(const ct__prep *preps, const block *k, ct__rewrite *r) {
  const ct__prep *pc = &preps[k->c];
  r->out = pc->vars[pc->n_in_vars];
  r->n_ins = 0;
  for (size_t q = 0; q < CT__REWRITE_INS; q++) {
    if (k->in[q] != NULL) r->ins[r->n_ins++] = k->in[q];
  }
}

/* Replaces block k's three preps by one bound to its op, at C's place. */
static ct_status apply_block(ct__prep *preps, size_t *n, ct_scope *scope, ct_place place,
                             const block *k, ct__rewrites *rw) {
  if (ct__pass_rewrite_room(rw) != CT_OK) return ct_last_status();
  ct_op *op = block_op(preps, k);
  ct__prep fused;
  if (op == NULL || ct__prep_init(&fused, op, scope, place, NULL, NULL) != CT_OK) {
    ct_op_free(op);
    return ct_last_status();
  }
  ct__rewrite *r = &rw->v[rw->n++];
  *r = (ct__rewrite){.op = op};
  block_memory(preps, k, r);
  size_t members[3], n_members = 0;
  const size_t at[3] = {k->a, k->b, k->c};
  for (int q = 0; q < 3; q++) {
    if (at[q] == SIZE_MAX) continue; /* no expansion */
    members[n_members++] = at[q];
    r->origin[r->n_origin] = preps[at[q]].op;
    r->gen[r->n_origin++] = preps[at[q]].op->gen;
  }
  return ct__pass_splice(preps, n, members, n_members, k->c, &fused, r);
}

ct_status ct__optimize_blocks(ct__prep *preps, size_t *n, ct_scope *scope, ct_place place,
                              bool (*candidate)(void *, const ct_var *), void *arg,
                              ct__rewrites *rw) {
  for (size_t i = 0; i < *n; i++) {
    block k;
    if (!find_block(preps, *n, i, candidate, arg, &k)) continue;
    ct__rewrite probe = {0};
    block_memory(preps, &k, &probe);
    if (ct__pass_apart(&probe) != NULL) continue; /* its result shares an input's memory now */
    ct_status s = apply_block(preps, n, scope, place, &k, rw);
    if (s != CT_OK) return s;
  }
  return CT_OK;
}
