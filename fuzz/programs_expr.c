/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz/programs_expr.c: check (c) of the program fuzzer (fuzz_programs.c): a tree of ct_expr
 * nodes whose leaves may alias dst, assigned with every ct_assign mode; the assignment is
 * refused and changes nothing, or dst holds what the ops and C give one node at a time over
 * copies of the leaves. */
#include <corten/expr.h>

#include "programs.h"

/* ---- (c) Expressions ------------------------------------------------------------------------ */

enum { E_LEAF, E_SCALAR, E_UN, E_BIN };
#define MAXN 16

typedef struct enode {
  int kind, op, leaf, a, b;
  double v;
} enode;

/* The tensors leaves may read. */
enum {
  P_DST, P_SHARE, P_OLD_SHARE, P_SLICE, P_OLD_SLICE, P_FLAT, P_IND1, P_IND2, P_WRAP, NP
};
static const char *const pool_names[NP] = {
    "dst", "share(dst)", "share(dst) before the resize", "slice of dst",
    "slice of dst before the resize", "flatten_to_2d(dst)", "independent 1", "independent 2",
    "another wrap"};

typedef struct case_c {
  enode n[MAXN];
  int n_nodes;
  ct_tensor *pool[NP];
  bool independent[NP]; /* memory no other pool tensor can touch */
  ct_tensor *copy[NP];  /* deep copies taken before the assignment; NULL: unreadable */
  ct_dtype dt;
} case_c;

static int gen_node(fz_bytes *in, case_c *c, int depth) {
  if (c->n_nodes >= MAXN) return -1;
  int k = c->n_nodes++;
  enode *e = &c->n[k];
  uint8_t b = fz_u8(in);
  int room = MAXN - c->n_nodes;
  if (depth >= 4 || room < 2 || b % 8 < 3) {
    static const double scalars[] = {0.5, -1.5, 2.0, 0.375, 0.0, 3.0, -0.25, 1e-3};
    if ((b >> 3) % 8 == 0) {
      e->kind = E_SCALAR;
      e->v = scalars[(b >> 6) % 4 + ((fz_u8(in) & 1) ? 4 : 0)];
    } else {
      e->kind = E_LEAF;
      e->leaf = fz_u8(in) % NP;
    }
    return k;
  }
  if (b % 8 < 5) {
    e->kind = E_UN;
    e->op = CT_EXPR_NEG + (b >> 3) % 8; /* NEG .. ABS, and ERF where ABS has both top bits */
    if (e->op == CT_EXPR_ABS && b >= 0xc0) e->op = CT_EXPR_ERF;
    e->a = gen_node(in, c, depth + 1);
    if (e->a < 0) e->kind = E_SCALAR, e->v = 1.0;
    return k;
  }
  e->kind = E_BIN;
  e->op = CT_EXPR_ADD + (b >> 3) % 7; /* ADD .. POW */
  e->a = gen_node(in, c, depth + 1);
  e->b = gen_node(in, c, depth + 1);
  if (e->a < 0 || e->b < 0) e->kind = E_SCALAR, e->v = 0.5;
  return k;
}

static const char *const expr_names[] = {"?",   "add", "sub",  "mul",     "div",  "max",
                                         "min", "pow", "neg",  "exp",     "log",  "tanh",
                                         "sigmoid", "relu", "sqrt", "abs", "erf"};
_Static_assert(sizeof expr_names / sizeof expr_names[0] == CT_EXPR_ERF + 1,
               "a name for every node kind");

static void say_node(const case_c *c, int k) {
  const enode *e = &c->n[k];
  switch (e->kind) {
    case E_LEAF: say("[%s]", pool_names[e->leaf]); break;
    case E_SCALAR: say("%g", e->v); break;
    case E_UN:
      say("%s(", expr_names[e->op]);
      say_node(c, e->a);
      say(")");
      break;
    default:
      say("%s(", expr_names[e->op]);
      say_node(c, e->a);
      say(", ");
      say_node(c, e->b);
      say(")");
  }
}

static ct_expr *build_expr(const case_c *c, int k) {
  const enode *e = &c->n[k];
  switch (e->kind) {
    case E_LEAF: return ct_expr_tensor(c->pool[e->leaf]);
    case E_SCALAR: return ct_expr_scalar(e->v);
    case E_UN: return ct_expr_unary((ct_expr_op)e->op, build_expr(c, e->a));
    default:
      return ct_expr_binary((ct_expr_op)e->op, build_expr(c, e->a), build_expr(c, e->b));
  }
}

/* Runs op `type` over copies of x (and y) in a scope of its own; NULL when it fails. */
static ct_tensor *ref_op(const char *type, const ct_tensor *x, const ct_tensor *y) {
  ct_scope *s = ct_scope_new();
  FZ_CHECK(s != NULL);
  ct_tensor *r = NULL;
  ct_op *op = ct_op_new(type);
  FZ_CHECK(op != NULL);
  FZ_CHECK(ct_tensor_copy(var_tensor(s, 0), x, ct_cpu()) == CT_OK);
  FZ_CHECK(ct_op_set_input(op, "X", var_name(0)) == CT_OK);
  if (y != NULL) {
    FZ_CHECK(ct_tensor_copy(var_tensor(s, 1), y, ct_cpu()) == CT_OK);
    FZ_CHECK(ct_op_set_input(op, "Y", var_name(1)) == CT_OK);
  }
  FZ_CHECK(ct_op_set_output(op, "Out", var_name(2)) == CT_OK);
  if (ct_op_run(op, s, ct_cpu()) == CT_OK) {
    r = ct_tensor_new();
    FZ_CHECK(r != NULL && ct_tensor_copy(r, find_tensor(s, var_name(2)), ct_cpu()) == CT_OK);
  }
  ct_clear_error();
  ct_op_free(op);
  ct_scope_free(s);
  return r;
}

static ct_tensor *scalar_tensor(ct_dtype dt, double v) {
  ct_tensor *t = ct_tensor_new();
  FZ_CHECK(t != NULL);
  double d = v;
  float f = (float)v;
  FZ_CHECK(ct_tensor_set_value(t, dt == CT_FLOAT32 ? (const void *)&f : (const void *)&d,
                               CT_DIMS(), dt, ct_cpu()) == CT_OK);
  return t;
}

static float c_max_f(float a, float b) { return a > b || a != a ? a : b; }
static double c_max_d(double a, double b) { return a > b || a != a ? a : b; }
static float c_min_f(float a, float b) { return a < b || a != a ? a : b; }
static double c_min_d(double a, double b) { return a < b || a != a ? a : b; }

/* out[i] = kind(a[i], b[i]) over the broadcast strides sa, sb. */
NO_COVERAGE static void map_elems(int kind, ct_dtype dt, ct_ddim out, const int64_t *sa,
                                  const int64_t *sb, const void *pa, const void *pb, void *o) {
  int r = out.rank;
  int64_t n = ct_ddim_numel(out);
  for (int64_t i = 0; i < n; i++) {
    int64_t rem = i, ia = 0, ib = 0;
    for (int k = r - 1; k >= 0; k--) {
      int64_t idx = rem % out.d[k];
      rem /= out.d[k];
      ia += idx * sa[k];
      ib += idx * sb[k];
    }
    if (dt == CT_FLOAT32) {
      float x = ((const float *)pa)[ia], y = ((const float *)pb)[ib], z;
      switch (kind) {
        case CT_EXPR_MAX: z = c_max_f(x, y); break;
        case CT_EXPR_MIN: z = c_min_f(x, y); break;
        case CT_EXPR_POW: z = powf(x, y); break;
        case CT_EXPR_SQRT: z = sqrtf(x); break;
        case CT_EXPR_NEG: z = -x; break;
        default: z = fabsf(x); break;
      }
      ((float *)o)[i] = z;
    } else {
      double x = ((const double *)pa)[ia], y = ((const double *)pb)[ib], z;
      switch (kind) {
        case CT_EXPR_MAX: z = c_max_d(x, y); break;
        case CT_EXPR_MIN: z = c_min_d(x, y); break;
        case CT_EXPR_POW: z = pow(x, y); break;
        case CT_EXPR_SQRT: z = sqrt(x); break;
        case CT_EXPR_NEG: z = -x; break;
        default: z = fabs(x); break;
      }
      ((double *)o)[i] = z;
    }
  }
}

/* Node kinds no op has (max, min, pow, neg, sqrt, abs), in C in the dtype, with broadcasting:
 * neg is the sign flip -x of the header (x * -1 would keep a NaN's sign). */
static ct_tensor *ref_c(int kind, const ct_tensor *a, const ct_tensor *b) {
  ct_dtype dt = ct_tensor_dtype(a);
  ct_ddim da = ct_tensor_dims(a), db = b ? ct_tensor_dims(b) : da, out;
  if ((b != NULL && ct_tensor_dtype(b) != dt) || !bcast(da, db, &out)) return NULL;
  int r = out.rank;
  int64_t sa[CT_MAX_RANK], sb[CT_MAX_RANK], ta = 1, tb = 1;
  for (int k = r - 1; k >= 0; k--) {
    int64_t xa = k - (r - da.rank) >= 0 ? da.d[k - (r - da.rank)] : 1;
    int64_t xb = k - (r - db.rank) >= 0 ? db.d[k - (r - db.rank)] : 1;
    sa[k] = xa == 1 ? 0 : ta;
    sb[k] = xb == 1 ? 0 : tb;
    ta *= xa;
    tb *= xb;
  }
  ct_tensor *t = ct_tensor_new();
  FZ_CHECK(t != NULL && ct_tensor_resize(t, out) == CT_OK);
  void *o = ct_tensor_mutable_data(t, dt, ct_cpu());
  const void *pa = ct_tensor_data(a, dt), *pb = b ? ct_tensor_data(b, dt) : pa;
  FZ_CHECK(o != NULL && pa != NULL && pb != NULL);
  map_elems(kind, dt, out, sa, sb, pa, pb, o);
  return t;
}


/* The dtype of the tree's first tensor leaf; `fallback` when it has none. */
static ct_dtype tree_dtype(const case_c *c, int k, ct_dtype fallback) {
  const enode *e = &c->n[k];
  if (e->kind == E_LEAF) return ct_tensor_dtype(c->pool[e->leaf]);
  if (e->kind == E_SCALAR) return fallback;
  ct_dtype d = tree_dtype(c, e->a, CT_DTYPE_UNDEFINED);
  if (d == CT_DTYPE_UNDEFINED && e->kind == E_BIN) d = tree_dtype(c, e->b, CT_DTYPE_UNDEFINED);
  return d == CT_DTYPE_UNDEFINED ? fallback : d;
}

/* Node k evaluated op by op over the copies; NULL when an op refuses (shapes, dtypes) or a
 * leaf was unreadable. */
static ct_tensor *ref_eval(const case_c *c, int k) {
  const enode *e = &c->n[k];
  static const char *const bin_ops[] = {NULL, "elementwise_add", "elementwise_sub",
                                        "elementwise_mul", "elementwise_div"};
  static const char *const un_ops[] = {[CT_EXPR_EXP] = "exp", [CT_EXPR_LOG] = "log",
                                       [CT_EXPR_TANH] = "tanh", [CT_EXPR_SIGMOID] = "sigmoid",
                                       [CT_EXPR_RELU] = "relu", [CT_EXPR_ERF] = "erf"};
  if (e->kind == E_LEAF) {
    if (c->copy[e->leaf] == NULL) return NULL;
    ct_tensor *t = ct_tensor_new();
    FZ_CHECK(t != NULL && ct_tensor_copy(t, c->copy[e->leaf], ct_cpu()) == CT_OK);
    return t;
  }
  if (e->kind == E_SCALAR) return scalar_tensor(c->dt, e->v);
  ct_tensor *a = ref_eval(c, e->a), *b = NULL, *r = NULL;
  if (a == NULL) return NULL;
  if (e->kind == E_BIN) {
    b = ref_eval(c, e->b);
    if (b == NULL) {
      ct_tensor_free(a);
      return NULL;
    }
  }
  if (e->kind == E_BIN && e->op <= CT_EXPR_DIV) {
    r = ref_op(bin_ops[e->op], a, b);
  } else if (e->kind == E_BIN || e->op == CT_EXPR_SQRT || e->op == CT_EXPR_ABS ||
             e->op == CT_EXPR_NEG) {
    r = ref_c(e->op, a, b);
  } else {
    r = ref_op(un_ops[e->op], a, NULL);
  }
  ct_tensor_free(a);
  ct_tensor_free(b);
  return r;
}

/* Copies every leaf, computes the reference, assigns the tree into dst (pool[P_DST]) with mode
 * at `threads` threads, and checks the outcome. */
static void assign_case(case_c *c, int root, int mode, int threads) {
  for (int k = 0; k < NP; k++) {
    if (c->pool[k] == NULL) continue;
    c->copy[k] = ct_tensor_new();
    FZ_CHECK(c->copy[k] != NULL);
    if (ct_tensor_copy(c->copy[k], c->pool[k], ct_cpu()) != CT_OK) {
      ct_tensor_free(c->copy[k]); /* its dims exceed its memory: the ops refuse it */
      c->copy[k] = NULL;
    }
  }
  ct_clear_error();
  /* The reference: the tree op by op, then the mode applied to a copy of dst. */
  ct_dtype tdt = tree_dtype(c, root, ct_tensor_dtype(c->pool[P_DST]));
  c->dt = tdt;
  ct_tensor *val = ref_eval(c, root), *want = val;
  if (val != NULL && mode != CT_SAVETO) {
    static const char *const mode_ops[] = {NULL, "elementwise_add", "elementwise_sub",
                                           "elementwise_mul", "elementwise_div"};
    /* A mode that would change dst's dims is refused (numpy's in-place rule): decided from the
     * dims, before a broadcast that may be large. */
    ct_ddim both;
    bool keeps = c->copy[P_DST] != NULL &&
                 bcast(ct_tensor_dims(c->copy[P_DST]), ct_tensor_dims(val), &both) &&
                 ct_ddim_equal(both, ct_tensor_dims(c->copy[P_DST]));
    want = keeps ? ref_op(mode_ops[mode], c->copy[P_DST], val) : NULL;
    ct_tensor_free(val);
  }
  snap before[NP];
  for (int k = 0; k < NP; k++) before[k] = take(c->pool[k]);
  ct_expr *e = build_expr(c, root);
  FZ_CHECK(e != NULL);
  ct_set_num_threads(threads);
  ct_status st = ct_expr_assign(c->pool[P_DST], (ct_assign)mode, e);
  ct_set_num_threads(1);
  ct_expr_free(e);
  char why[256];
  if (st != CT_OK) {
    say("  refused: %s\n", ct_status_str(st));
    snap after = take(c->pool[P_DST]);
    if (!same_view(&before[P_DST], &after, why, sizeof why) || after.ptr != before[P_DST].ptr) {
      broken("refused (%s) but dst %s", ct_status_str(st),
             after.ptr != before[P_DST].ptr ? "moved to other memory" : why);
    }
    drop(&after);
    for (int k = 1; k < NP; k++) {
      after = take(c->pool[k]);
      if (!same_view(&before[k], &after, why, sizeof why)) {
        broken("refused (%s) but the leaf %s %s", ct_status_str(st), pool_names[k], why);
      }
      drop(&after);
    }
  } else {
    if (want == NULL) broken("assigned (CT_OK) an expression the ops refuse");
    snap got = take(c->pool[P_DST]), exp = take(want);
    if (got.external != before[P_DST].external) broken("dst lost or gained an external buffer");
    exp.external = got.external; /* the reference is a tensor of its own */
    if (!same_view(&exp, &got, why, sizeof why)) broken("dst %s", why);
    drop(&got);
    drop(&exp);
    for (int k = 0; k < NP; k++) {
      if (!c->independent[k]) continue;
      snap after = take(c->pool[k]);
      if (!same_view(&before[k], &after, why, sizeof why)) {
        broken("the independent leaf %s %s", pool_names[k], why);
      }
      drop(&after);
    }
  }
  for (int k = 0; k < NP; k++) {
    drop(&before[k]);
    ct_tensor_free(c->copy[k]);
    c->copy[k] = NULL;
  }
  ct_tensor_free(want);
}

/* The dims node k broadcasts to (false when its leaves do not broadcast); *most: the largest
 * element count of a node under it that does. */
static bool tree_dims(const case_c *c, int k, ct_ddim *out, int64_t *most) {
  const enode *e = &c->n[k];
  ct_ddim a, b;
  bool ok;
  switch (e->kind) {
    case E_LEAF: *out = ct_tensor_dims(c->pool[e->leaf]); ok = out->rank >= 0; break;
    case E_SCALAR: *out = CT_DIMS(); ok = true; break;
    case E_UN: ok = tree_dims(c, e->a, out, most); break;
    default: {
      bool oa = tree_dims(c, e->a, &a, most), ob = tree_dims(c, e->b, &b, most);
      ok = oa && ob && bcast(a, b, out);
    }
  }
  if (ok && ct_ddim_numel(*out) > *most) *most = ct_ddim_numel(*out);
  return ok;
}

void check_c(fz_bytes *in) {
  case_c c;
  memset(&c, 0, sizeof c);
  uint8_t h = fz_u8(in), rs = fz_u8(in), vb = fz_u8(in);
  c.dt = h & 1 ? CT_FLOAT64 : CT_FLOAT32;
  ct_dtype other = c.dt == CT_FLOAT32 ? CT_FLOAT64 : CT_FLOAT32;
  int mode = (h >> 1) % 5;
  bool wrap_dst = (h >> 4) % 3 == 0, special = (h >> 6) == 0;
  family f = pick_family(in, false);
  size_t es = ct_dtype_size(c.dt);
  uint32_t seed = (uint32_t)fz_take(in, 2);
  int64_t rows = f.r, cols = f.c, pad = cols; /* the buffer has a row to spare */
  /* dst: a tensor of its own, or a wrap of a buffer another leaf may wrap too. */
  void *buf = NULL, *buf2 = NULL;
  int released = 0, released2 = 0;
  ct_tensor *dst = c.pool[P_DST] = ct_tensor_new();
  FZ_CHECK(dst != NULL);
  if (wrap_dst) {
    buf = xalloc((size_t)(rows * cols + pad) * es);
    fill(buf, c.dt, rows * cols + pad, seed, special);
    FZ_CHECK(ct_tensor_wrap(dst, buf, CT_DIMS(rows, cols), c.dt, ct_cpu(), on_release,
                            &released) == CT_OK);
  } else {
    set_stream(dst, CT_DIMS(rows, cols), c.dt, seed, special);
  }
  ct_tensor *t;
  FZ_CHECK((t = c.pool[P_OLD_SHARE] = ct_tensor_new()) != NULL);
  FZ_CHECK(ct_tensor_share(t, dst) == CT_OK);
  FZ_CHECK((t = c.pool[P_OLD_SLICE] = ct_tensor_new()) != NULL);
  int64_t b0, e0, b1, e1;
  pick_rows(vb, rows, &b0, &e0);
  FZ_CHECK(ct_tensor_slice(t, dst, b0, e0) == CT_OK);
  /* The resize in place: none, fewer rows, flat, one row, or more than the memory holds. */
  ct_ddim now = CT_DIMS(rows, cols);
  switch (rs % 8) {
    case 4: now = CT_DIMS(rows > 1 ? rows - 1 : 1, cols); break;
    case 5: now = CT_DIMS(rows * cols); break;
    case 6: now = CT_DIMS(cols); break;
    case 7: now = (rs >> 3) & 1 ? CT_DIMS(rows + 1, cols) : CT_DIMS(rows, cols + 1); break;
    default: break;
  }
  FZ_CHECK(ct_tensor_resize(dst, now) == CT_OK);
  /* Views made after it (refused, and then absent, when the dims exceed the memory). */
  FZ_CHECK((t = c.pool[P_SHARE] = ct_tensor_new()) != NULL);
  if (ct_tensor_share(t, dst) != CT_OK) ct_tensor_free(t), c.pool[P_SHARE] = NULL;
  FZ_CHECK((t = c.pool[P_SLICE] = ct_tensor_new()) != NULL);
  pick_rows((uint8_t)(vb * 37u + rs), now.d[0], &b1, &e1);
  if (ct_tensor_slice(t, dst, b1, e1) != CT_OK) ct_tensor_free(t), c.pool[P_SLICE] = NULL;
  FZ_CHECK((t = c.pool[P_FLAT] = ct_tensor_new()) != NULL);
  if (ct_tensor_flatten_to_2d(t, dst, (rs >> 5) % (now.rank + 1)) != CT_OK) {
    ct_tensor_free(t), c.pool[P_FLAT] = NULL;
  }
  ct_clear_error();
  /* Independent leaves, of dims that broadcast with dst's now (mostly). */
  family fn = {now.rank == 2 ? now.d[0] : 1, now.d[now.rank - 1]};
  for (int k = P_IND1; k <= P_IND2; k++) {
    uint8_t b = fz_u8(in);
    FZ_CHECK((t = c.pool[k] = ct_tensor_new()) != NULL);
    set_stream(t, family_dims(fn, b), (b >> 3) % 16 == 0 ? other : c.dt,
               seed * 31u + (uint32_t)k, special);
    c.independent[k] = true;
  }
  /* Another wrap: of dst's buffer at an offset (the same memory, another block), or of a
   * buffer of its own. */
  uint8_t w = fz_u8(in);
  FZ_CHECK((t = c.pool[P_WRAP] = ct_tensor_new()) != NULL);
  ct_ddim wd = family_dims(fn, w >> 2);
  int64_t wn = ct_ddim_numel(wd), off = w % 4 == 0 ? 0 : w % 4 == 1 ? 1 : cols;
  if (buf != NULL && off + wn <= rows * cols + pad) {
    FZ_CHECK(ct_tensor_wrap(t, (char *)buf + off * (int64_t)es, wd, c.dt, ct_cpu(), NULL, NULL) ==
             CT_OK);
  } else {
    buf2 = xalloc((size_t)wn * es);
    fill(buf2, c.dt, wn, seed ^ 0x77u, special);
    FZ_CHECK(ct_tensor_wrap(t, buf2, wd, c.dt, ct_cpu(), on_release, &released2) == CT_OK);
    c.independent[P_WRAP] = true;
    off = -1;
  }
  int root = gen_node(in, &c, 0);
  FZ_CHECK(root >= 0);
  int threads = fz_u8(in) & 1 ? 3 : 1; /* the engine splits large libm trees over threads */
  for (int k = 0; k < MAXN; k++) { /* a leaf without its tensor reads an independent one */
    if (k < c.n_nodes && c.n[k].kind == E_LEAF && c.pool[c.n[k].leaf] == NULL) c.n[k].leaf = P_IND1;
  }
  static const char *const modes[] = {"CT_SAVETO", "CT_PLUSTO", "CT_MINUSTO", "CT_MULTO",
                                      "CT_DIVTO"};
  say("(c) expression: %s dst %s %s, resized in place to %s; views: old slice rows [%lld, "
      "%lld), slice rows [%lld, %lld); leaves %s %s, another wrap %s %s (at %lld); "
      "special values %s; %d thread(s)\n  dst %s= ",
      dt_s(c.dt), DS(CT_DIMS(rows, cols)), wrap_dst ? "wrapping a buffer" : "of its own",
      DS(now), (long long)b0, (long long)e0, (long long)b1, (long long)e1,
      DS(ct_tensor_dims(c.pool[P_IND1])), DS(ct_tensor_dims(c.pool[P_IND2])),
      off >= 0 ? "of dst's buffer" : "of its own buffer", DS(wd), (long long)off,
      special ? "on" : "off", threads, modes[mode]);
  say_node(&c, root);
  say("\n");
  /* A tree with a node past MAX_ELEMS (a flattened dst [r*c, 1] against a row [c]) would cost
   * megabytes per node: skipped. */
  ct_ddim td;
  int64_t most = 0;
  (void)tree_dims(&c, root, &td, &most);
  if (most <= MAX_ELEMS) {
    assign_case(&c, root, mode, threads);
  } else {
    say("  skipped: a node of %lld elements\n", (long long)most);
  }
  for (int k = 0; k < NP; k++) ct_tensor_free(c.pool[k]);
  if ((buf != NULL && released != 1) || (buf2 != NULL && released2 != 1)) {
    broken("a buffer's release ran %d times", buf != NULL && released != 1 ? released : released2);
  }
  free(buf);
  free(buf2);
}
