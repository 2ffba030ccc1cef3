/* SPDX-License-Identifier: Apache-2.0 */
/* ops/expr/expr_assign.c: ct_expr_assign. Checks the tree against its tensors (dtypes, places,
 * broadcasting), sizes dst, compiles the tree into a stack program (ops/expr/expr_impl.h) and
 * hands it to the engine of dst's place; or, under the dot rule, hands one GEMM to it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/expr/expr_impl.h"
#include "common/alloc.h"

#include "tensor/tensor_impl.h"

#define MAX_DEPTH 1000

/* What the first pass learns: the leaves' dtype and place, sizes of the program. */
typedef struct scan {
  const ct_tensor *first; /* the first tensor leaf: its dtype and place are the tree's */
  int n_code, n_leaves;
} scan;

/* numpy broadcasting of a and b into *out; CT_ERR_SHAPE naming both otherwise. */
static ct_status broadcast(ct_ddim a, ct_ddim b, ct_ddim *out) {
  int r = a.rank > b.rank ? a.rank : b.rank;
  ct_ddim o = {.rank = r};
  for (int i = 0; i < r; i++) {
    int ia = i - (r - a.rank), ib = i - (r - b.rank);
    int64_t x = ia >= 0 ? a.d[ia] : 1, y = ib >= 0 ? b.d[ib] : 1;
    if (x != y && x != 1 && y != 1) {
      char sa[CT__DDIM_STR_CAP], sb[CT__DDIM_STR_CAP];
      return ct__error(CT_ERR_SHAPE,
                       "ct_expr_assign: operand dims %s and %s do not broadcast (dim %d: %lld "
                       "against %lld; each pair of trailing dims must be equal or one of them 1)",
                       ct__expr_dims_s(a, sa), ct__expr_dims_s(b, sb), i - r, (long long)x,
                       (long long)y);
    }
    o.d[i] = x == 1 ? y : x;
  }
  *out = o;
  return CT_OK;
}

ct_status ct__expr_check_leaf(const ct_tensor *first, const ct_tensor *t) {
  char b1[CT__DDIM_STR_CAP], b2[CT__PLACE_STR_CAP], b3[CT__PLACE_STR_CAP];
  if (t->block == NULL) {
    return ct__error(CT_ERR_UNINITIALIZED,
                     "ct_expr_assign: a tensor leaf of dims %s holds no memory: give it data "
                     "before assigning the expression", ct__expr_dims_s(t->dims, b1));
  }
  if (!ct__expr_dtype_float(t->dtype)) {
    return ct__error(CT_ERR_UNSUPPORTED,
                     "ct_expr_assign: a tensor leaf holds %s; expressions compute float16, "
                     "bfloat16, float32 and float64 (cast the leaf first)",
                     ct_dtype_name(t->dtype));
  }
  if ((size_t)t->numel * ct_dtype_size(t->dtype) > ct_tensor_capacity(t)) {
    return ct__error(CT_ERR_OUT_OF_RANGE,
                     "ct_expr_assign: a tensor leaf's dims %s exceed its memory: call "
                     "ct_tensor_mutable_data on it after resizing", ct__expr_dims_s(t->dims, b1));
  }
  if (first == NULL) return CT_OK;
  if (t->dtype != first->dtype) {
    return ct__error(CT_ERR_TYPE_MISMATCH,
                     "ct_expr_assign: tensor leaves hold %s and %s: all leaves must share one "
                     "dtype (cast one of them)",
                     ct_dtype_name(first->dtype), ct_dtype_name(t->dtype));
  }
  ct_place p0 = ct_tensor_place(first), p1 = ct_tensor_place(t);
  if (!ct_place_equal(p0, p1)) {
    return ct__error(CT_ERR_TYPE_MISMATCH,
                     "ct_expr_assign: tensor leaves sit on %s and %s: all leaves must share one "
                     "place (copy one of them)",
                     ct__expr_place_s(p0, b2), ct__expr_place_s(p1, b3));
  }
  return CT_OK;
}

/* Pass 1: checks every leaf and every node, computes the dims of e into *dims and counts the
 * program's instructions and leaves (bounds: fused nodes make fewer). */
static ct_status scan_tree(scan *s, const ct_expr *e, int level, ct_ddim *dims) {
  if (level > MAX_DEPTH) {
    return ct__error(CT_ERR_OUT_OF_RANGE,
                     "ct_expr_assign: the expression is deeper than %d nodes: assign parts of it "
                     "into tensors first", MAX_DEPTH);
  }
  ct_status st = CT_OK;
  ct_ddim da, db;
  switch (e->kind) {
    case CT__EXPR_TENSOR:
      st = ct__expr_check_leaf(s->first, e->t);
      if (s->first == NULL) s->first = e->t;
      *dims = e->t->dims;
      s->n_leaves++;
      break;
    case CT__EXPR_SCALAR: *dims = (ct_ddim){.rank = 0}; break;
    case CT__EXPR_UNARY: st = scan_tree(s, e->a, level + 1, dims); break;
    case CT__EXPR_BINARY:
      st = scan_tree(s, e->a, level + 1, &da);
      if (st == CT_OK) st = scan_tree(s, e->b, level + 1, &db);
      if (st == CT_OK) st = broadcast(da, db, dims);
      break;
    default:
      return ct__error(CT_ERR_UNSUPPORTED,
                       "ct_expr_assign: a dot runs only at the top of an assignment with "
                       "CT_SAVETO or CT_PLUSTO, alone or times a scalar (assign it into a tensor "
                       "first)");
  }
  if (st != CT_OK) return st;
  s->n_code++;
  return CT_OK;
}

/* Contiguous strides of dims d aligned to the trailing dims of out; 0 where d broadcasts. */
static void leaf_strides(ct_ddim d, ct_ddim out, int64_t *stride) {
  int64_t st = 1;
  for (int i = out.rank - 1; i >= 0; i--) {
    int j = i - (out.rank - d.rank);
    stride[i] = (j >= 0 && d.d[j] != 1) ? st : 0;
    if (j >= 0) st *= d.d[j];
  }
}

typedef struct emit {
  ct__expr_instr *code;
  ct__expr_leaf *leaves;
  int n_code, n_leaves;
  int sp, depth; /* values on the stack, now and at most */
  ct_ddim out;
} emit;

static void push(emit *m, ct__expr_instr in, int pushed, int popped) {
  m->code[m->n_code++] = in;
  m->sp += pushed;
  if (m->sp > m->depth) m->depth = m->sp;
  m->sp -= popped;
}

static void add_leaf(emit *m, const ct_tensor *t) {
  ct__expr_leaf *l = &m->leaves[m->n_leaves];
  l->data = ct__tensor_ptr(t);
  leaf_strides(t->dims, m->out, l->stride);
  l->full = ct__ddim_eq(&t->dims, &m->out);
  l->scalar = t->numel == 1;
  push(m, (ct__expr_instr){.code = CT__XC_LEAF, .arg = m->n_leaves++}, 1, 0);
}

/* Whether e yields a block rather than a scalar: it reads a tensor leaf of more than one
 * element. */
static bool is_block(const ct_expr *e) {
  for (; e != NULL; e = e->a) {
    if (e->kind == CT__EXPR_TENSOR) return e->t->numel != 1;
    if (e->kind == CT__EXPR_BINARY && is_block(e->b)) return true;
  }
  return false;
}

static bool arith(const ct_expr *e) {
  return e->kind == CT__EXPR_BINARY && e->op >= CT_EXPR_ADD && e->op <= CT_EXPR_DIV;
}

static void emit_tree(emit *m, const ct_expr *e);

/* A binary node; two arithmetic nodes over three blocks become one fused instruction. */
static void emit_binary(emit *m, const ct_expr *e) {
  const ct_expr *x, *y, *z, *inner = NULL;
  uint8_t code = 0;
  if (arith(e) && arith(e->a) && is_block(e->a->a) && is_block(e->a->b) && is_block(e->b)) {
    inner = e->a, x = inner->a, y = inner->b, z = e->b, code = CT__XC_FUSED_L;
  } else if (arith(e) && arith(e->b) && is_block(e->a) && is_block(e->b->a) &&
             is_block(e->b->b)) {
    inner = e->b, x = e->a, y = inner->a, z = inner->b, code = CT__XC_FUSED_R;
  }
  if (inner == NULL) {
    emit_tree(m, e->a);
    emit_tree(m, e->b);
    push(m, (ct__expr_instr){.code = CT__XC_BINARY, .op = (uint8_t)e->op}, 0, 1);
    return;
  }
  emit_tree(m, x);
  emit_tree(m, y);
  emit_tree(m, z);
  push(m, (ct__expr_instr){.code = code, .op = (uint8_t)inner->op, .arg = e->op}, 0, 2);
}

/* Pass 2: the program in postorder. */
static void emit_tree(emit *m, const ct_expr *e) {
  switch (e->kind) {
    case CT__EXPR_TENSOR: add_leaf(m, e->t); return;
    case CT__EXPR_SCALAR:
      push(m, (ct__expr_instr){.code = CT__XC_SCALAR, .v = e->v}, 1, 0);
      return;
    case CT__EXPR_UNARY:
      emit_tree(m, e->a);
      push(m, (ct__expr_instr){.code = CT__XC_UNARY, .op = (uint8_t)e->op}, 0, 0);
      return;
    default: emit_binary(m, e); return;
  }
}

const ct__expr_engine *ct__expr_engine_for(ct_place p) {
  for (int i = 0; ct__expr_engines[i] != NULL; i++) {
    if (ct__expr_engines[i]->kind == p.kind) return ct__expr_engines[i];
  }
  char b[CT__PLACE_STR_CAP];
  return ct__error_null(CT_ERR_UNSUPPORTED,
                        "ct_expr_assign: this build has no expression engine for tensors on %s "
                        "(copy them to the CPU, or run the ops one by one)",
                        ct__expr_place_s(p, b));
}

/* Whether leaf t's elements overlap the memory dst will be written through (the result's numel
 * elements of dt from dst's first, the dims dst has after a resize in place), other than as the
 * very same elements read at the very same positions: the same first byte, the same count, and
 * no broadcast (t holds as many elements as the result, so element i is read where it is
 * written). By address, so an external buffer wrapped twice counts as one memory. */
static bool overlaps_badly(const ct_tensor *t, const ct_tensor *dst, int64_t out_numel,
                           ct_dtype dt) {
  if (t == dst) return false;
  size_t t_bytes = (size_t)t->numel * ct_dtype_size(t->dtype);
  size_t d_bytes = (size_t)out_numel * ct_dtype_size(dt);
  /* A result larger than dst's memory goes to a new block (CT_SAVETO; the other modes refuse
   * it), which no leaf can view. */
  if (d_bytes > ct_tensor_capacity(dst)) return false;
  if (!ct__tensor_spans_overlap(t, t_bytes, dst, d_bytes)) return false;
  return !(ct__tensor_ptr(t) == ct__tensor_ptr(dst) && t_bytes == d_bytes &&
           t->numel == out_numel && t->dtype == dt);
}

/* Refuses a leaf that overlaps dst's memory other than element for element (overlaps_badly);
 * *is_leaf: dst is a leaf of e. */
static ct_status check_overlaps(const ct_tensor *dst, const ct_expr *e, ct_ddim out,
                                ct_dtype dt, bool *is_leaf) {
  if (e->kind == CT__EXPR_TENSOR && e->t == dst) *is_leaf = true;
  if (e->kind == CT__EXPR_TENSOR && overlaps_badly(e->t, dst, ct_ddim_numel(out), dt)) {
    char b[CT__DDIM_STR_CAP], o[CT__DDIM_STR_CAP];
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_expr_assign: a tensor leaf of dims %s views the memory that dst (dims %s "
                     "after the assignment) is written through, at another offset or broadcast, "
                     "so writing dst would change what it reads: copy the leaf first",
                     ct__expr_dims_s(e->t->dims, b), ct__expr_dims_s(out, o));
  }
  ct_status st = CT_OK;
  if (e->a != NULL) st = check_overlaps(dst, e->a, out, dt, is_leaf);
  if (st == CT_OK && e->b != NULL) st = check_overlaps(dst, e->b, out, dt, is_leaf);
  return st;
}

/* Gives dst the result's dims, dtype and place (CT_SAVETO), or checks that it has them. On
 * failure dst keeps its dims and dtype. *data: dst's elements. */
ct_status ct__expr_prepare_dst(ct_tensor *dst, ct_assign mode, ct_ddim out, ct_dtype dt,
                             ct_place pl, bool dst_is_leaf, void **data) {
  char b1[CT__DDIM_STR_CAP], b2[CT__DDIM_STR_CAP], p1[CT__PLACE_STR_CAP], p2[CT__PLACE_STR_CAP];
  bool same_dims = dst->block != NULL && ct__ddim_eq(&dst->dims, &out);
  if (mode != CT_SAVETO || dst_is_leaf) {
    if (dst->block == NULL) {
      return ct__error(CT_ERR_UNINITIALIZED,
                       "ct_expr_assign: dst holds no memory, and only CT_SAVETO gives it some");
    }
    if (!same_dims) {
      return ct__error(CT_ERR_SHAPE,
                       "ct_expr_assign: dst has dims %s but the expression has dims %s (%s)",
                       ct__expr_dims_s(dst->dims, b1), ct__expr_dims_s(out, b2),
                       dst_is_leaf ? "dst is also a leaf, so it cannot be resized"
                                   : "only CT_SAVETO resizes dst");
    }
    if (dst->dtype != dt) {
      return ct__error(CT_ERR_TYPE_MISMATCH,
                       "ct_expr_assign: dst holds %s but the leaves hold %s (cast one of them)",
                       ct_dtype_name(dst->dtype), ct_dtype_name(dt));
    }
    if (!ct_place_equal(ct_tensor_place(dst), pl)) {
      return ct__error(CT_ERR_TYPE_MISMATCH,
                       "ct_expr_assign: dst is on %s but the leaves are on %s (copy one of them)",
                       ct__expr_place_s(ct_tensor_place(dst), p1), ct__expr_place_s(pl, p2));
    }
    /* Written in place: its memory must cover its dims (a resize since the last mutable_data
     * does not grow it) and be writable. */
    ct_status st = ct__tensor_check_data(dst, "ct_expr_assign: dst");
    if (st != CT_OK) return st;
    if (ct__block_read_only(dst->block)) {
      return ct__error(CT_ERR_READ_ONLY, "ct_expr_assign: dst %s: assign into a tensor of its own",
                       ct__block_read_only_why(dst->block));
    }
    *data = ct__tensor_ptr(dst);
    return CT_OK;
  }
  ct_ddim old_dims = dst->dims;
  int64_t old_numel = dst->numel;
  ct_dtype old_dtype = dst->dtype;
  ct_status st = same_dims ? CT_OK : ct_tensor_resize(dst, out);
  if (st == CT_OK) {
    *data = ct_tensor_mutable_data(dst, dt, pl);
    if (*data == NULL) st = ct_last_status();
  }
  if (st != CT_OK) {
    dst->dims = old_dims;
    dst->numel = old_numel;
    dst->dtype = old_dtype;
  }
  return st;
}

/* The dot rule: e is dot(a, b) or a scalar times it; *alpha the scalar. NULL otherwise. */
static const ct_expr *top_dot(const ct_expr *e, double *alpha) {
  *alpha = 1;
  if (e->kind == CT__EXPR_DOT) return e;
  if (e->kind != CT__EXPR_BINARY || e->op != CT_EXPR_MUL) return NULL;
  if (e->a->kind == CT__EXPR_SCALAR && e->b->kind == CT__EXPR_DOT) {
    *alpha = e->a->v;
    return e->b;
  }
  if (e->b->kind == CT__EXPR_SCALAR && e->a->kind == CT__EXPR_DOT) {
    *alpha = e->b->v;
    return e->a;
  }
  return NULL;
}

/* What to do with the plan: run it on an engine, or (ct__expr_source_for) write its source. */
typedef struct runner {
  ct_status (*run)(struct runner *r, const ct__expr_plan *p);
  const ct__expr_engine *eng;
  const char *name;
  char *source;
} runner;

static ct_status run_engine(runner *r, const ct__expr_plan *p) { return r->eng->eval(p); }

static ct_status assign_elementwise(ct_tensor *dst, ct_assign mode, const ct_expr *e,
                                    runner *run) {
  scan s = {0};
  ct_ddim out;
  ct_status st = scan_tree(&s, e, 0, &out);
  if (st != CT_OK) return st;
  ct_dtype dt;
  ct_place pl;
  if (s.first != NULL) {
    dt = s.first->dtype;
    pl = ct_tensor_place(s.first);
  } else if (dst->block != NULL && ct__expr_dtype_float(dst->dtype)) {
    dt = dst->dtype;
    pl = ct_tensor_place(dst);
  } else {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_expr_assign: the expression has no tensor leaf and dst holds no "
                     "floating-point data, so no dtype is known: give dst memory first");
  }
  /* A compound mode is dst = dst <op> e, whose dims numpy's in-place rule keeps as dst's: e
   * broadcasts to them, and a shape that would change them is refused. */
  if (mode != CT_SAVETO && dst->block != NULL) {
    ct_ddim full;
    st = broadcast(dst->dims, out, &full);
    if (st != CT_OK || !ct__ddim_eq(&full, &dst->dims)) {
      char b1[CT__DDIM_STR_CAP], b2[CT__DDIM_STR_CAP];
      st = ct__error(CT_ERR_SHAPE,
                     "ct_expr_assign: dst has dims %s but the expression has dims %s, which do "
                     "not broadcast to them; a compound mode keeps dst's dims (numpy's in-place "
                     "rule): assign with CT_SAVETO into a tensor of the result's dims",
                     ct__expr_dims_s(dst->dims, b1), ct__expr_dims_s(out, b2));
    }
    if (st != CT_OK) return st;
    out = dst->dims;
  }
  bool dst_is_leaf = false;
  st = check_overlaps(dst, e, out, dt, &dst_is_leaf);
  if (st != CT_OK) return st;
  if (run->run == run_engine) {
    run->eng = ct__expr_engine_for(pl);
    if (run->eng == NULL) return ct_last_status();
  }
  /* The modes that keep dst only check it; CT_SAVETO may resize it, which waits until the plan
   * has its memory, so that running out of that leaves dst untouched. (The leaves' data does
   * not move: a dst that is also a leaf already has the result's dims.) */
  bool with_dst = mode != CT_SAVETO;
  void *data = NULL;
  if (with_dst) {
    st = ct__expr_prepare_dst(dst, mode, out, dt, pl, dst_is_leaf, &data);
    if (st != CT_OK) return st;
  }
  int n_code = s.n_code + (with_dst ? 2 : 0), n_leaves = s.n_leaves + (with_dst ? 1 : 0);
  size_t bytes = sizeof(ct__expr_instr) * (size_t)n_code + sizeof(ct__expr_leaf) * (size_t)n_leaves;
  ct__expr_instr *code = ct__malloc(bytes);
  void *scratch = NULL;
  emit m = {.code = code, .leaves = (ct__expr_leaf *)(code + n_code), .out = out};
  if (code != NULL) {
    static const ct_expr_op mode_op[] = {
        [CT_PLUSTO] = CT_EXPR_ADD, [CT_MINUSTO] = CT_EXPR_SUB, [CT_MULTO] = CT_EXPR_MUL,
        [CT_DIVTO] = CT_EXPR_DIV};
    /* A mode other than SAVETO is dst = dst <op> e: a node over a leaf for dst, made here. */
    ct_expr dst_leaf = {.kind = CT__EXPR_TENSOR, .t = dst};
    ct_expr top = {.kind = CT__EXPR_BINARY, .op = mode_op[mode], .a = &dst_leaf,
                   .b = (ct_expr *)e};
    emit_tree(&m, with_dst ? &top : e);
    if (m.depth > CT__EXPR_STACK_BUFS) {
      bytes = CT__EXPR_SCRATCH(m.depth);
      scratch = ct__malloc(bytes);
    }
  }
  if (code == NULL || (m.depth > CT__EXPR_STACK_BUFS && scratch == NULL)) {
    free(code);
    return ct__error(CT_ERR_OUT_OF_MEMORY,
                     "ct_expr_assign: no memory for the evaluation plan (%zu bytes)", bytes);
  }
  if (!with_dst) st = ct__expr_prepare_dst(dst, mode, out, dt, pl, dst_is_leaf, &data);
  if (st == CT_OK && ct_ddim_numel(out) > 0) {
    ct__expr_plan p = {.dtype = dt, .place = pl, .out = out, .numel = ct_ddim_numel(out),
                       .dst = data, .code = code, .n_code = m.n_code, .leaves = m.leaves,
                       .n_leaves = m.n_leaves, .depth = m.depth, .scratch = scratch};
    st = run->run(run, &p);
  }
  free(scratch);
  free(code);
  return st;
}

ct_status ct_expr_assign(ct_tensor *dst, ct_assign mode, const ct_expr *e) {
  if (dst == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_expr_assign: dst is NULL: pass the tensor "
                                              "that receives the result");
  }
  if (e == NULL) {
    char prev[256];
    snprintf(prev, sizeof prev, "%s", ct_last_error());
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_expr_assign: the expression is NULL (building it failed: %s)", prev);
  }
  if ((int)mode < CT_SAVETO || (int)mode > CT_DIVTO) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_expr_assign: mode %d is not a ct_assign (CT_SAVETO .. CT_DIVTO)",
                     (int)mode);
  }
  double alpha;
  const ct_expr *d = top_dot(e, &alpha);
  if (d != NULL && (mode == CT_SAVETO || mode == CT_PLUSTO)) {
    return ct__expr_assign_dot(dst, mode, d, alpha);
  }
  runner r = {.run = run_engine};
  return assign_elementwise(dst, mode, e, &r);
}

static ct_status run_source(runner *r, const ct__expr_plan *p) {
  r->source = ct__expr_cuda_source(p, r->name);
  return r->source != NULL ? CT_OK : ct_last_status();
}

static ct_status run_kinds(runner *r, const ct__expr_plan *p) {
  r->source = ct__malloc((size_t)ct__expr_cuda_params(p, NULL, NULL) + 1);
  if (r->source == NULL) return ct__error(CT_ERR_OUT_OF_MEMORY, "ct__expr_param_kinds_for");
  ct__expr_cuda_params(p, NULL, r->source);
  return CT_OK;
}

static char *plan_text(ct_tensor *dst, ct_assign mode, const ct_expr *e, runner *r) {
  if (dst == NULL || e == NULL || (int)mode < CT_SAVETO || (int)mode > CT_DIVTO) {
    return ct__error_null(CT_ERR_INVALID_ARGUMENT, "ct__expr_source_for: bad arguments");
  }
  return assign_elementwise(dst, mode, e, r) == CT_OK ? r->source : NULL;
}

char *ct__expr_source_for(ct_tensor *dst, ct_assign mode, const ct_expr *e, const char *name) {
  runner r = {.run = run_source, .name = name};
  return plan_text(dst, mode, e, &r);
}

char *ct__expr_param_kinds_for(ct_tensor *dst, ct_assign mode, const ct_expr *e) {
  runner r = {.run = run_kinds};
  return plan_text(dst, mode, e, &r);
}
