/* SPDX-License-Identifier: Apache-2.0 */
/* ops/passes.c: the executor's optimize option (docs/design/passes.md). A pass rewrites the
 * executor's bound ops, never the caller's program: an op it makes belongs to the executor, and
 * the ops it replaces stay in the program, unrun by this executor.
 *
 * conv_epilogue: conv2d (or depthwise_conv2d) followed by the bias add the ONNX importer writes
 * (reshape of B to [-1, 1, 1], elementwise_add), an inference batch_norm, a residual
 * elementwise_add and relu or clip, any of the four, becomes one conv2d_fusion computing the
 * same bits (ops/cpu/conv_fusion.c): the intermediates are never allocated and the output is
 * read and written once more instead of three or four times. A link of the chain is taken only
 * when its value is an intermediate (created by the executor, not kept), written by its op
 * alone and read by the next op of the chain alone (no other op, no nested program), and the
 * chain's ops follow one another (the reshape between the conv and its bias add excepted: it
 * writes only the bias's view). The fused op reads the bias itself, so the reshape goes with
 * the chain when its view is an intermediate the add alone reads, and stays otherwise.
 *
 * matmul_epilogue: matmul followed by the add of a bias (a rank-1 variable now: one value, or one
 * per column of the product) and then, optionally, relu or clip becomes one matmul_fusion
 * computing the same bits (ops/cpu/matmul.c): the sum and the activation run in the GEMM's
 * tiles as they are stored. The links are taken as conv_epilogue's are, and only when Y is of
 * rank 2 or more now (so the product has a column dim the bias can be added along).
 *
 * Dims read when the executor is made (a bias's length, a Y's rank) are read only from
 * variables no op of the program writes (ct__pass_fixed): an op before may resize any other.
 *
 * assign_elision: an assign (ONNX's Identity) whose output is an intermediate goes, its readers
 * reading its input instead: the copy, and the block a copy needs each run when a reshape views
 * it, are saved, and the readers read the same values. Taken only when the output is written by
 * the assign alone, read by an op after it (an output no op reads is a result) and by no op
 * before it nor by a nested program, and the input is written by no op after it (so it holds,
 * when each reader runs, what the assign would have copied), and no op up to the last reader
 * writes a variable other than the executor's intermediates (a caller's variable may share the
 * input's memory: its write would change what the readers see; found by the program fuzzer).
 *
 * Memory shared behind the names: a fused chain's result must not share memory with an input of
 * the fused op (the executor would then give the result a block of its own, where the last op
 * of the chain wrote it in place, changing the input's other name). Checked when the executor
 * is made (the chain is not taken) and again at every run (the run fails, asking for a new
 * executor, should the caller have shared memory since). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "memory/memory_impl.h"
#include "ops/op_impl.h"
#include "tensor/tensor_impl.h"

/* Op op's attribute called name (a name its type defines). */
const ct_attr_value *ct__pass_attr(const ct_op *op, const char *name) {
  for (size_t a = 0; a < op->def->n_attr; a++) {
    if (strcmp(op->def->attr[a].name, name) == 0) return &op->attr[a];
  }
  return NULL;
}

ct_status ct__pass_copy_attrs(const ct_op *op, ct_op *fused, const char *prefix) {
  ct_status s = CT_OK;
  for (size_t a = 0; a < op->def->n_attr && s == CT_OK; a++) {
    char name[64];
    snprintf(name, sizeof name, "%s%s", prefix, op->def->attr[a].name);
    s = ct__op_set_attr_value(fused, name, &op->attr[a]);
  }
  return s;
}

/* How many times prep `to` reads v when prep `from` alone writes it and no other prep reads it
 * (nor a nested program); -1 otherwise (to == n: no prep may read it). */
static long sole_reads(const ct__prep *preps, size_t n, size_t from, size_t to, const ct_var *v) {
  long reads = 0;
  for (size_t j = 0; j < n; j++) {
    const ct__prep *q = &preps[j];
    for (uint32_t k = 0; k < q->n_in_vars + q->n_out_vars; k++) {
      if (q->vars[k] != v) continue;
      if (k >= q->n_in_vars ? j != from : j != to) return -1;
      reads += k < q->n_in_vars;
    }
    if (ct__nested_reads(q->op, ct_var_name(v))) return -1;
  }
  return reads;
}

/* Whether v links prep `from` (its only writer) to prep `to` (its only reader, once) and is an
 * intermediate. */
bool ct__pass_link(const ct__prep *preps, size_t n, size_t from, size_t to, const ct_var *v,
                   bool (*candidate)(void *, const ct_var *), void *arg) {
  return candidate(arg, v) && sole_reads(preps, n, from, to, v) == 1;
}

bool ct__pass_fixed(const ct__prep *preps, size_t n, const ct_var *v) {
  if (v == NULL || ct_var_get_tensor(v) == NULL) return false;
  for (size_t j = 0; j < n; j++) {
    const ct__prep *q = &preps[j];
    for (uint32_t k = q->n_in_vars; k < q->n_in_vars + q->n_out_vars; k++) {
      if (q->vars[k] == v) return false;
    }
    if (ct__nested_writes(q->op, ct_var_name(v))) return false;
  }
  return true;
}

/* Whether reshape prep p makes a [-1, 1, 1] view of its X from the attribute alone. */
static bool column_reshape(const ct__prep *p) {
  if (!ct__pass_is(p, "reshape") || p->n_in_vars != 1) return false;
  const ct_attr_value *a = ct__pass_attr(p->op, "shape");
  return a != NULL && a->type == CT_ATTR_INTS && a->u.ints.n == 3 && a->u.ints.v[0] == -1 &&
         a->u.ints.v[1] == 1 && a->u.ints.v[2] == 1;
}

typedef struct chain {
  bool matmul; /* a matmul_epilogue chain (else conv_epilogue's) */
  size_t conv, last, n_members; /* conv: the head (the conv or the matmul) */
  size_t members[6]; /* the preps it replaces: the conv, the bias's reshape, the adds, the
                      * batch_norm, the act */
  const ct_op *watched; /* the bias's reshape when another op reads its view: it stays, but an
                         * edit of it changes the bias */
  const ct_var *bias, *res;
  const ct_var *bn[4]; /* the batch_norm's Scale, Bias, Mean and Variance; bn[0] NULL: none */
  double eps;
  const char *act;
  double lo, hi;
} chain;

/* The activation at prep j, relu or clip with constant bounds reading cur, joins chain ch when
 * cur links them. */
static void take_activation(const ct__prep *preps, size_t n, size_t j, const ct_var *cur,
                            bool (*candidate)(void *, const ct_var *), void *arg, chain *ch) {
  if (j < n && preps[j].n_in_vars == 1 && preps[j].vars[0] == cur &&
      (ct__pass_is(&preps[j], "relu") || ct__pass_is(&preps[j], "clip")) &&
      ct__pass_link(preps, n, ch->last, j, cur, candidate, arg)) {
    ch->act = ct__pass_is(&preps[j], "relu") ? "relu" : "clip";
    if (ct__pass_is(&preps[j], "clip")) {
      ch->lo = ct__pass_attr(preps[j].op, "min")->u.f;
      ch->hi = ct__pass_attr(preps[j].op, "max")->u.f;
    }
    ch->last = j;
    ch->members[ch->n_members++] = j;
  }
}

/* The rank of variable v's tensor now (-1: it holds none). */
static int rank_now(const ct_var *v) {
  const ct_tensor *t = ct_var_get_tensor(v);
  return t != NULL ? ct_tensor_dims(t).rank : -1;
}

/* The number of elements of variable v's tensor now (-1: it holds none). */
static int64_t numel_now(const ct_var *v) {
  const ct_tensor *t = ct_var_get_tensor(v);
  return t != NULL ? t->numel : -1;
}

/* Whether bias b holds 1 element, or one per output channel of conv prep cv (its Filter's first
 * dim), at every run: b and the Filter are written by no prep of the n. */
static bool conv_bias_fits(const ct__prep *preps, size_t n, const ct__prep *cv,
                           const ct_var *b) {
  if (!ct__pass_fixed(preps, n, b)) return false;
  int64_t k = numel_now(b);
  return k == 1 || (ct__pass_fixed(preps, n, cv->vars[1]) && rank_now(cv->vars[1]) == 4 &&
                    k == ct_tensor_dims(ct_var_get_tensor(cv->vars[1])).d[0]);
}

/* Whether v, written by prep w alone, is an intermediate that no op reads (nor a nested
 * program): a value nobody sees, which the fused op need not make. */
static bool unread(const ct__prep *preps, size_t n, size_t w, const ct_var *v,
                   bool (*candidate)(void *, const ct_var *), void *arg) {
  if (!candidate(arg, v) || sole_reads(preps, n, w, n, v) != 0) return false;
  for (size_t j = 0; j < n; j++) {
    if (ct__nested_writes(preps[j].op, ct_var_name(v))) return false;
  }
  return true;
}

/* Whether batch_norm prep j joins a conv chain whose value so far is cur, written by prep
 * last: it normalises cur by its Mean and Variance inputs (is_test or use_global_stats), over
 * NCHW's channels, cur links them, and its four other outputs (the statistics it copies) are
 * intermediates no op reads, each its own. */
static bool bn_joins(const ct__prep *preps, size_t n, size_t last, size_t j, const ct_var *cur,
                     bool (*candidate)(void *, const ct_var *), void *arg) {
  const ct__prep *p = &preps[j];
  if (!ct__pass_is(p, "batch_norm") || p->n_in_vars != 5 || p->n_out_vars != 5 ||
      p->vars[0] != cur ||
      !(ct__pass_attr(p->op, "is_test")->u.b || ct__pass_attr(p->op, "use_global_stats")->u.b) ||
      strcmp(ct__pass_attr(p->op, "data_layout")->u.s, "NCHW") != 0 ||
      !ct__pass_link(preps, n, last, j, cur, candidate, arg)) {
    return false;
  }
  for (uint32_t k = 6; k < 10; k++) {
    for (uint32_t q = 0; q < k; q++) {
      if (p->vars[q] == p->vars[k]) return false;
    }
    if (!unread(preps, n, j, p->vars[k], candidate, arg)) return false;
  }
  return true;
}

/* The longest chain from conv prep i (false when it has no link). */
static bool find_chain(const ct__prep *preps, size_t n, size_t i,
                       bool (*candidate)(void *, const ct_var *), void *arg, chain *ch) {
  *ch = (chain){.conv = i, .last = i, .n_members = 1, .members = {i}, .act = "identity",
                .lo = -INFINITY, .hi = INFINITY};
  const ct_var *cur = ct__pass_out0(&preps[i]);
  size_t j = i + 1;
  /* The bias: reshape(B, [-1, 1, 1]) -> b3, then cur + b3, when B holds 1 element or one per
   * output channel at every run: more than one for a single channel would enlarge the output,
   * which conv2d_fusion refuses. */
  if (j + 1 < n && column_reshape(&preps[j]) && ct__pass_is(&preps[j + 1], "elementwise_add") &&
      ct__pass_other(&preps[j + 1], cur) == ct__pass_out0(&preps[j]) &&
      conv_bias_fits(preps, n, &preps[i], preps[j].vars[0]) &&
      ct__pass_link(preps, n, ch->last, j + 1, cur, candidate, arg)) {
    ch->bias = preps[j].vars[0];
    if (ct__pass_link(preps, n, j, j + 1, ct__pass_out0(&preps[j]), candidate, arg)) {
      ch->members[ch->n_members++] = j; /* its view read by the add alone: it goes too */
    } else {
      ch->watched = preps[j].op;
    }
    cur = ct__pass_out0(&preps[j + 1]);
    ch->last = j + 1;
    ch->members[ch->n_members++] = j + 1;
    j += 2;
  }
  /* The batch norm: batch_norm(cur) with the inputs' Mean and Variance (inference). */
  if (j < n && bn_joins(preps, n, ch->last, j, cur, candidate, arg)) {
    for (int k = 0; k < 4; k++) ch->bn[k] = preps[j].vars[1 + k];
    ch->eps = ct__pass_attr(preps[j].op, "epsilon")->u.f;
    cur = ct__pass_out0(&preps[j]);
    ch->last = j;
    ch->members[ch->n_members++] = j++;
  }
  /* The residual: cur + r. */
  const ct_var *r =
      j < n && ct__pass_is(&preps[j], "elementwise_add") ? ct__pass_other(&preps[j], cur) : NULL;
  if (r != NULL && ct__pass_link(preps, n, ch->last, j, cur, candidate, arg)) {
    ch->res = r;
    cur = ct__pass_out0(&preps[j]);
    ch->last = j;
    ch->members[ch->n_members++] = j++;
  }
  take_activation(preps, n, j, cur, candidate, arg, ch);
  return ch->n_members > 1;
}

/* The product's column count now for matmul prep mm, whose Y has rank 2 or more. */
static int64_t mm_columns_now(const ct__prep *mm) {
  ct_ddim yd = ct_tensor_dims(ct_var_get_tensor(mm->vars[1]));
  const ct_attr_value *ty = ct__pass_attr(mm->op, "transpose_y");
  return yd.d[yd.rank - (ty != NULL && ty->u.b ? 2 : 1)];
}

/* The chain from matmul prep i: its bias add, then the activation if any (false when the bias
 * add does not follow, or when the add could enlarge the product: Y and the bias must be written
 * by no prep, so that their dims now are those of every run, Y of rank 2 or more and the bias
 * of rank 1 with 1 value or one per column. A bias of K values added to a product of one column
 * broadcasts it K times, which matmul_fusion refuses; so does one added to the rank-0 product of
 * a Y resized to rank 1 by an op before; both found by the program fuzzer). */
static bool find_mm_chain(const ct__prep *preps, size_t n, size_t i,
                          bool (*candidate)(void *, const ct_var *), void *arg, chain *ch) {
  *ch = (chain){.matmul = true, .conv = i, .last = i, .n_members = 1, .members = {i},
                .act = "identity", .lo = -INFINITY, .hi = INFINITY};
  const ct__prep *mm = &preps[i];
  const ct_var *cur = ct__pass_out0(mm), *b = NULL;
  size_t j = i + 1;
  if (mm->n_in_vars != 2 || !ct__pass_fixed(preps, n, mm->vars[1]) ||
      rank_now(mm->vars[1]) < 2 || j >= n || !ct__pass_is(&preps[j], "elementwise_add") ||
      (b = ct__pass_other(&preps[j], cur)) == NULL || !ct__pass_fixed(preps, n, b) ||
      rank_now(b) != 1 || (numel_now(b) != 1 && numel_now(b) != mm_columns_now(mm)) ||
      !ct__pass_link(preps, n, i, j, cur, candidate, arg)) {
    return false;
  }
  ch->bias = b;
  cur = ct__pass_out0(&preps[j]);
  ch->last = j;
  ch->members[ch->n_members++] = j++;
  take_activation(preps, n, j, cur, candidate, arg, ch);
  return true;
}

/* conv2d_fusion or matmul_fusion for chain ch, wired and attributed as its ops were; NULL with
 * the error recorded. */
static ct_op *fused_op(const ct__prep *preps, const chain *ch) {
  const ct_op *conv = preps[ch->conv].op;
  ct_op *op = ct_op_new(ch->matmul ? "matmul_fusion" : "conv2d_fusion");
  if (op == NULL) return NULL;
  const char *in0 = ch->matmul ? "X" : "Input", *in1 = ch->matmul ? "Y" : "Filter";
  ct_status s = ct_op_set_input(op, in0, ct_var_name(preps[ch->conv].vars[0]));
  if (s == CT_OK) s = ct_op_set_input(op, in1, ct_var_name(preps[ch->conv].vars[1]));
  if (s == CT_OK && ch->bias) s = ct_op_set_input(op, "Bias", ct_var_name(ch->bias));
  if (s == CT_OK && ch->res) s = ct_op_set_input(op, "ResidualData", ct_var_name(ch->res));
  static const char *const bn_slots[4] = {"BnScale", "BnBias", "BnMean", "BnVariance"};
  for (int k = 0; k < 4 && ch->bn[0] != NULL && s == CT_OK; k++) {
    s = ct_op_set_input(op, bn_slots[k], ct_var_name(ch->bn[k]));
  }
  if (s == CT_OK && ch->bn[0] != NULL) s = ct_op_set_attr_float(op, "epsilon", ch->eps);
  if (s == CT_OK) {
    s = ct_op_set_output(op, ch->matmul ? "Out" : "Output",
                         ct_var_name(ct__pass_out0(&preps[ch->last])));
  }
  /* The head's attributes come first in the fused type, in the same order and types. */
  if (s == CT_OK) s = ct__pass_copy_attrs(conv, op, "");
  if (s == CT_OK) s = ct_op_set_attr_string(op, "activation", ch->act);
  if (s == CT_OK) s = ct_op_set_attr_float(op, "clip_min", ch->lo);
  if (s == CT_OK) s = ct_op_set_attr_float(op, "clip_max", ch->hi);
  if (s != CT_OK) {
    ct_op_free(op);
    return NULL;
  }
  op->index = conv->index; /* messages name the conv's place in the program */
  return op;
}

/* A chain fills a rewrite at most: its members and the watched reshape, its inputs. */
_Static_assert(sizeof(((chain *)0)->members) / sizeof(size_t) + 1 <= CT__REWRITE_MAX,
               "a chain's ops fit a rewrite's origins");
_Static_assert(2 + 1 + 1 + 4 <= CT__REWRITE_INS, "a chain's inputs fit a rewrite's");

/* Chain ch's memory assumption into r: its result apart from the fused op's inputs. */
static void chain_memory(const ct__prep *preps, const chain *ch, ct__rewrite *r) {
  r->out = ct__pass_out0(&preps[ch->last]);
  r->n_ins = 0;
  for (uint32_t k = 0; k < preps[ch->conv].n_in_vars && k < 2; k++) {
    r->ins[r->n_ins++] = preps[ch->conv].vars[k];
  }
  if (ch->bias != NULL) r->ins[r->n_ins++] = ch->bias;
  if (ch->res != NULL) r->ins[r->n_ins++] = ch->res;
  for (int k = 0; k < 4 && ch->bn[0] != NULL; k++) r->ins[r->n_ins++] = ch->bn[k];
}

/* Replaces chain ch's preps by one bound to its fused op, at the chain's last op's place. */
static ct_status apply(ct__prep *preps, size_t *n, ct_scope *scope, ct_place place,
                       const chain *ch, ct__rewrites *rw) {
  if (ct__pass_rewrite_room(rw) != CT_OK) return ct_last_status();
  ct_op *op = fused_op(preps, ch);
  ct__prep fused;
  if (op == NULL || ct__prep_init(&fused, op, scope, place, NULL, NULL) != CT_OK) {
    ct_op_free(op);
    return ct_last_status();
  }
  ct__rewrite *r = &rw->v[rw->n++];
  *r = (ct__rewrite){.op = op, .n_origin = ch->n_members};
  chain_memory(preps, ch, r);
  for (size_t k = 0; k < ch->n_members; k++) {
    r->origin[k] = preps[ch->members[k]].op;
    r->gen[k] = preps[ch->members[k]].op->gen;
  }
  if (ch->watched != NULL) {
    r->origin[r->n_origin] = ch->watched;
    r->gen[r->n_origin++] = ch->watched->gen;
  }
  return ct__pass_splice(preps, n, ch->members, ch->n_members, ch->last, &fused, r);
}

/* Whether assign prep i can go (see the top of the file). */
static bool elidable(const ct__prep *preps, size_t n, size_t i,
                     bool (*candidate)(void *, const ct_var *), void *arg) {
  const ct__prep *a = &preps[i];
  if (a->n_in_vars != 1 || a->n_out_vars != 1 || a->any_type[0] || a->any_type[1]) return false;
  const ct_var *x = a->vars[0], *out = a->vars[1];
  if (x == out || !candidate(arg, out)) return false;
  size_t readers = 0, last = 0;
  for (size_t j = 0; j < n; j++) {
    const ct__prep *q = &preps[j];
    for (uint32_t k = 0; k < q->n_in_vars + q->n_out_vars; k++) {
      bool writes = k >= q->n_in_vars;
      if (q->vars[k] == out && (writes ? j != i : j < i)) return false;
      if (q->vars[k] == x && writes && j > i) return false;
      if (q->vars[k] == out && !writes) {
        readers++;
        last = j;
      }
    }
    if (ct__nested_reads(q->op, ct_var_name(out)) || ct__nested_writes(q->op, ct_var_name(out))) {
      return false;
    }
    if (j > i && ct__nested_writes(q->op, ct_var_name(x))) return false;
  }
  /* Until the last reader, only the executor's intermediates are written: a caller's variable
   * may share x's memory (ct_tensor_share, one buffer wrapped twice), where an intermediate
   * shares memory only through an op's view, which a write gives a block of its own. */
  for (size_t j = i + 1; j <= last && readers > 0; j++) {
    for (uint32_t k = preps[j].n_in_vars; k < preps[j].n_in_vars + preps[j].n_out_vars; k++) {
      if (!candidate(arg, preps[j].vars[k])) return false;
    }
  }
  return readers > 0; /* read by no op: the program's result, which the caller reads */
}

/* Drops assign prep i, its readers reading its input; each reader's op is watched (with the
 * assign's) for edits, as a fused chain's members are. */
static ct_status elide(ct__prep *preps, size_t *n, size_t i, ct__rewrites *rw) {
  ct_var *x = preps[i].vars[0];
  const ct_var *out = preps[i].vars[1];
  for (size_t j = i + 1; j < *n; j++) {
    ct__prep *q = &preps[j];
    bool reads = false;
    for (uint32_t k = 0; k < q->n_in_vars; k++) reads |= q->vars[k] == out;
    if (!reads) continue;
    if (ct__pass_rewrite_room(rw) != CT_OK) return ct_last_status();
    rw->v[rw->n++] = (ct__rewrite){.origin = {preps[i].op, q->op},
                                   .gen = {preps[i].op->gen, q->op->gen}, .n_origin = 2};
    for (uint32_t k = 0; k < q->n_in_vars; k++) {
      if (q->vars[k] == out) q->vars[k] = x;
    }
    q->key_gen = 0; /* its infer-shape key was made over the old variable */
  }
  ct__prep_destroy(&preps[i]);
  memmove(&preps[i], &preps[i + 1], (*n - i - 1) * sizeof *preps);
  (*n)--;
  return CT_OK;
}

ct_status ct__optimize(ct__prep *preps, size_t *n, ct_scope *scope, ct_place place,
                       bool (*candidate)(void *, const ct_var *), void *arg, ct__rewrites *rw) {
  if (place.kind != CT_DEVICE_CPU) return CT_OK; /* the fused types have CPU kernels only */
  for (size_t i = 0; i < *n;) {
    if (ct__pass_is(&preps[i], "assign") && elidable(preps, *n, i, candidate, arg)) {
      ct_status s = elide(preps, n, i, rw);
      if (s != CT_OK) return s;
      continue;
    }
    i++;
  }
  ct_status st = ct__optimize_attention(preps, n, scope, place, candidate, arg, rw);
  if (st == CT_OK) st = ct__optimize_norms(preps, n, scope, place, candidate, arg, rw);
  if (st != CT_OK) return st;
  for (size_t i = 0; i < *n; i++) {
    chain ch;
    if (ct__pass_is(&preps[i], "matmul")) {
      if (!find_mm_chain(preps, *n, i, candidate, arg, &ch)) continue;
    } else if (!ct__pass_is(&preps[i], "conv2d") && !ct__pass_is(&preps[i], "depthwise_conv2d")) {
      continue;
    } else if (!find_chain(preps, *n, i, candidate, arg, &ch)) {
      continue;
    }
    ct__rewrite probe = {0};
    chain_memory(preps, &ch, &probe);
    if (ct__pass_apart(&probe) != NULL) continue; /* its result shares an input's memory now */
    ct_status s = apply(preps, n, scope, place, &ch, rw);
    if (s != CT_OK) return s;
  }
  ct_status s = ct__optimize_blocks(preps, n, scope, place, candidate, arg, rw);
  return s == CT_OK ? ct__optimize_pools(preps, n, scope, place, candidate, arg, rw) : s;
}
