/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/expr.c: the CPU expression engine (ops/expr/expr_impl.h).
 *
 * A plan runs over the flat output in blocks of CT__EXPR_BLOCK elements. Within a block each
 * instruction is one loop over the block: a leaf is read in place when it has the output's dims
 * and the computing type (else gathered and converted into a block buffer), a scalar stays a
 * scalar, and a node runs a loop specialised for its kind and for which operands are scalars, so
 * the compiler vectorises it. Buffers live on the stack (a few KiB) and stay in L1; the last
 * node writes straight into dst when dst holds the computing type. Nothing calls through a
 * pointer per element.
 *
 * Each node computes exactly as the kernel of its op in ops/cpu/elementwise.c (the same
 * expression in the same type; this file, like the library, is compiled without FMA
 * contraction), so results are bit-identical to the op-by-op program. float16 and bfloat16
 * compute in float32 and round once when stored. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tgmath.h>

#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/stream.h"
#include "ops/cpu/vmath.h"
#include "ops/cpu/vmath512.h"
#include "ops/expr/expr_impl.h"
#include "ops/half.h"

#define BLOCK CT__EXPR_BLOCK

/* ---- Node loops, per computing type C (float or double; exp, log, tanh, sigmoid and erf are
 * the kernels' own, ops/cpu/vmath.h, picked by type; tgmath picks the rest) ----------------- */

#define UNARY_CASES(C, LOOP)                               \
  case CT_EXPR_NEG: LOOP(-a); break;                       \
  case CT_EXPR_EXP: LOOP(CT__VEXP(a)); break;              \
  case CT_EXPR_LOG: LOOP(CT__VLOG(a)); break;              \
  case CT_EXPR_TANH: LOOP(CT__VTANH(a)); break;            \
  case CT_EXPR_SIGMOID: LOOP(CT__VSIGMOID(a)); break;      \
  case CT_EXPR_RELU: LOOP(a < 0 ? (C)0 : a); break;        \
  case CT_EXPR_SQRT: LOOP(sqrt(a)); break;                 \
  case CT_EXPR_ABS: LOOP(fabs(a)); break;                  \
  case CT_EXPR_ERF: LOOP(CT__VERF(a)); break;              \
  default: break;

/* MAX and MIN give NaN when either side is NaN (as numpy's maximum and minimum). */
#define BINARY_CASES(LOOP)                               \
  case CT_EXPR_ADD: LOOP(a + b); break;                  \
  case CT_EXPR_SUB: LOOP(a - b); break;                  \
  case CT_EXPR_MUL: LOOP(a * b); break;                  \
  case CT_EXPR_DIV: LOOP(a / b); break;                  \
  case CT_EXPR_MAX: LOOP(a > b || a != a ? a : b); break; \
  case CT_EXPR_MIN: LOOP(a < b || a != a ? a : b); break; \
  case CT_EXPR_POW: LOOP(pow(a, b)); break;              \
  case CT__EXPR_RELU_GRAD: LOOP(a > 0 ? b : 0); break;   \
  default: break;

#ifdef CT__T16_X86
/* A float32 node of exp, tanh or sigmoid on AVX-512 (behind the kernels' switch): vmath512.h's
 * functions, the ops' bits (vmath.md), 16 elements a step, the last few masked. */
#define UNARY16(C, op)                                                                     \
  (sizeof(C) == 4 && ((op) == CT_EXPR_EXP || (op) == CT_EXPR_TANH || (op) == CT_EXPR_SIGMOID) && \
   ct__gemm_avx512())
__attribute__((target("avx512f"))) static void unary16(const float *x, float *o, int n, int op) {
  if (op == CT_EXPR_EXP) {
    CT__V512_MAP(ct__v512_expf, x, o, n);
  } else if (op == CT_EXPR_TANH) {
    CT__V512_MAP(ct__v512_tanhf, x, o, n);
  } else {
    CT__V512_MAP(ct__v512_sigmoidf, x, o, n);
  }
}
#else
#define UNARY16(C, op) false
#define unary16(x, o, n, op) ((void)0)
#endif

/* A value on the evaluation stack: a block of n elements at p, or one scalar s. */
#define VALUE_TYPE(C, SUF) \
  typedef struct val_##SUF {   \
    const C *p;                \
    C s;                       \
    bool sc;                   \
  } val_##SUF;

#define NODE_LOOPS(C, SUF)                                                                  \
  VALUE_TYPE(C, SUF)                                                                        \
  static C unary1_##SUF(int op, C a) {                                                      \
    C r = a;                                                                                \
    switch (op) { UNARY_CASES(C, ONE) }                                                     \
    return r;                                                                               \
  }                                                                                         \
  static C binary1_##SUF(int op, C a, C b) {                                                \
    C r = a;                                                                                \
    switch (op) { BINARY_CASES(ONE) }                                                       \
    return r;                                                                               \
  }                                                                                         \
  CT__VM_CLONES static void unary_##SUF(int op, C *o, const C *x, int n) {                  \
    if (UNARY16(C, op)) {                                                                   \
      unary16((const float *)x, (float *)o, n, op);                                         \
      return;                                                                               \
    }                                                                                       \
    switch (op) { UNARY_CASES(C, U_LOOP) }                                                  \
  }                                                                                         \
  BINARY_FN(binary_##SUF, C, SUF, BINARY_CASES, VV_LOOP, VS_LOOP, SV_LOOP)                  \
  BINARY_FN(binary_relu_##SUF, C, SUF, BINARY_CASES, VV_RELU, VS_RELU, SV_RELU)

/* A binary node's loops over two blocks, a block and a scalar, a scalar and a block: CASES(LOOP)
 * the switch over the node kinds it handles. */
#define BINARY_FN(NAME, C, SUF, CASES, VV, VS, SV)                                          \
  static void NAME(int op, C *o, val_##SUF x, val_##SUF y, int n) {                         \
    if (!x.sc && !y.sc) {                                                                   \
      const C *xp = x.p, *yp = y.p;                                                         \
      switch (op) { CASES(VV) }                                                             \
    } else if (y.sc) {                                                                      \
      const C *xp = x.p, b = y.s;                                                           \
      switch (op) { CASES(VS) }                                                             \
    } else {                                                                                \
      const C *yp = y.p, a = x.s;                                                           \
      switch (op) { CASES(SV) }                                                             \
    }                                                                                       \
  }

#define ONE(EXPR) r = (EXPR)
#define U_LOOP(EXPR)                   \
  for (int i = 0; i < n; i++) {        \
    __typeof__(o[0]) a = x[i];         \
    o[i] = (EXPR);                     \
  }
/* POST is what is stored of the node's value r: r itself, or a RELU node's r < 0 ? 0 : r when a
 * RELU follows the node (one loop for both, each rounding as its node). */
#define VV_POST(EXPR, POST)                                 \
  for (int i = 0; i < n; i++) {                             \
    __typeof__(o[0]) a = xp[i], b = yp[i], r = (EXPR);      \
    o[i] = (POST);                                          \
  }
#define VS_POST(EXPR, POST)                          \
  for (int i = 0; i < n; i++) {                      \
    __typeof__(o[0]) a = xp[i], r = (EXPR);          \
    o[i] = (POST);                                   \
  }
#define SV_POST(EXPR, POST)                          \
  for (int i = 0; i < n; i++) {                      \
    __typeof__(o[0]) b = yp[i], r = (EXPR);          \
    o[i] = (POST);                                   \
  }
#define VV_LOOP(EXPR) VV_POST(EXPR, r)
#define VS_LOOP(EXPR) VS_POST(EXPR, r)
#define SV_LOOP(EXPR) SV_POST(EXPR, r)
#define VV_RELU(EXPR) VV_POST(EXPR, r < 0 ? 0 : r)
#define VS_RELU(EXPR) VS_POST(EXPR, r < 0 ? 0 : r)
#define SV_RELU(EXPR) SV_POST(EXPR, r < 0 ? 0 : r)

/* The fused pairs of arithmetic nodes: op x 4 + arg (ADD .. DIV each), left and right. Each
 * operation is its own statement, so it rounds as its own node would. */
#define PAIR(LOOP, A, OA, B, OB) \
  case (CT_EXPR_##A - 1) * 4 + CT_EXPR_##B - 1: LOOP(OA, OB); break;
#define PAIRS(LOOP, A, OA) \
  PAIR(LOOP, A, OA, ADD, +)    \
  PAIR(LOOP, A, OA, SUB, -)    \
  PAIR(LOOP, A, OA, MUL, *)    \
  PAIR(LOOP, A, OA, DIV, /)
#define ALL_PAIRS(LOOP) \
  PAIRS(LOOP, ADD, +) PAIRS(LOOP, SUB, -) PAIRS(LOOP, MUL, *) PAIRS(LOOP, DIV, /)
#define LEFT_LOOP(OP, ARG)                 \
  for (int i = 0; i < n; i++) {            \
    __typeof__(o[0]) t = x[i] OP y[i];     \
    o[i] = t ARG z[i];                     \
  }
#define RIGHT_LOOP(OP, ARG)                \
  for (int i = 0; i < n; i++) {            \
    __typeof__(o[0]) t = y[i] OP z[i];     \
    o[i] = x[i] ARG t;                     \
  }

#define FUSED_LOOPS(C, SUF)                                                                   \
  static void fused_##SUF(bool left, int op, int arg, C *o, const C *x, const C *y,          \
                          const C *z, int n) {                                               \
    if (left) {                                                                              \
      switch ((op - 1) * 4 + arg - 1) { ALL_PAIRS(LEFT_LOOP) default: break; }              \
    } else {                                                                                 \
      switch ((op - 1) * 4 + arg - 1) { ALL_PAIRS(RIGHT_LOOP) default: break; }             \
    }                                                                                        \
  }

/* A block x through two arithmetic nodes with scalars, (x op a) arg b, in one loop (scale's
 * x * s + b, say): each operation its own statement, rounded as its node would be. */
#define SCALAR_LOOP(OP, ARG)               \
  for (int i = 0; i < n; i++) {            \
    __typeof__(o[0]) t = x[i] OP a;        \
    o[i] = t ARG b;                        \
  }
#define SCALAR_PAIR_LOOPS(C, SUF)                                                             \
  static void scalar_pair_##SUF(int op, int arg, C *o, const C *x, C a, C b, int n) {       \
    switch ((op - 1) * 4 + arg - 1) { ALL_PAIRS(SCALAR_LOOP) default: break; }              \
  }

NODE_LOOPS(float, f)
NODE_LOOPS(double, d)
FUSED_LOOPS(float, f)
FUSED_LOOPS(double, d)
SCALAR_PAIR_LOOPS(float, f)
SCALAR_PAIR_LOOPS(double, d)

/* ---- Streaming stores of the last node (ops/cpu/stream.h) ---------------------------------
 * When dst is at least the last-level cache's size, an arithmetic last node (ADD .. DIV, alone
 * or as a fused or scalar pair) stores into dst with streaming stores: the same operations on
 * SSE vectors (GCC's vector arithmetic is the packed instruction, which rounds as the scalar
 * one; no FMA), plain stores before dst's first 16-byte boundary and after its last whole
 * vector. Any other last node stores plainly: copying a block out streaming, and streaming the
 * last node of the 5-op relu chain, both measured slower (docs/design/expr.md). */
#if CT__STREAM
#define LD_ CT__VLOAD
#define ST_ CT__VSTREAM
#define SET1_ CT__VSET1
/* SCALAR for one element i, VECTOR for the lanes from i, over [0, n) of o. */
#define NT_LOOP(SCALAR, VECTOR) CT__STREAM_LOOP(o, 0, n, SCALAR, VECTOR)
#define NT_ARITH(LOOP)                \
  case CT_EXPR_ADD: LOOP(+); break;   \
  case CT_EXPR_SUB: LOOP(-); break;   \
  case CT_EXPR_MUL: LOOP(*); break;   \
  case CT_EXPR_DIV: LOOP(/); break;   \
  default: break;
#define NT_VV(OP) NT_LOOP(o[i] = xp[i] OP yp[i], ST_(o + i, LD_(xp + i) OP LD_(yp + i)))
#define NT_VS(OP) NT_LOOP(o[i] = xp[i] OP b, ST_(o + i, LD_(xp + i) OP SET1_(b)))
#define NT_SV(OP) NT_LOOP(o[i] = a OP yp[i], ST_(o + i, SET1_(a) OP LD_(yp + i)))
#define NT_LEFT(OP, ARG)                                                          \
  NT_LOOP(o[i] = (__typeof__(o[0]))(x[i] OP y[i]) ARG z[i],                       \
          ST_(o + i, (LD_(x + i) OP LD_(y + i)) ARG LD_(z + i)))
#define NT_RIGHT(OP, ARG)                                                         \
  NT_LOOP(o[i] = x[i] ARG(__typeof__(o[0]))(y[i] OP z[i]),                        \
          ST_(o + i, LD_(x + i) ARG(LD_(y + i) OP LD_(z + i))))
#define NT_SCALAR(OP, ARG)                                                        \
  NT_LOOP(o[i] = (__typeof__(o[0]))(x[i] OP a) ARG b, ST_(o + i, (LD_(x + i) OP av) ARG bv))

/* An arithmetic node's streaming loops: BINARY_FN's, on the arithmetic kinds (the scalar's
 * vector is loop-invariant, made once by the compiler). */
#define NT_LOOPS(C, SUF)                                                                     \
  BINARY_FN(binary_nt_##SUF, C, SUF, NT_ARITH, NT_VV, NT_VS, NT_SV)                         \
  static void fused_nt_##SUF(bool left, int op, int arg, C *o, const C *x, const C *y,     \
                             const C *z, int n) {                                           \
    if (left) {                                                                             \
      switch ((op - 1) * 4 + arg - 1) { ALL_PAIRS(NT_LEFT) default: break; }               \
    } else {                                                                                \
      switch ((op - 1) * 4 + arg - 1) { ALL_PAIRS(NT_RIGHT) default: break; }              \
    }                                                                                       \
  }                                                                                         \
  static void scalar_pair_nt_##SUF(int op, int arg, C *o, const C *x, C a, C b, int n) {   \
    __typeof__(SET1_(a)) av = SET1_(a), bv = SET1_(b);                                      \
    switch ((op - 1) * 4 + arg - 1) { ALL_PAIRS(NT_SCALAR) default: break; }               \
  }
NT_LOOPS(float, f)
NT_LOOPS(double, d)
#define NT_OR(NT, PLAIN, nt) ((nt) ? NT : PLAIN)
#else
#define NT_OR(NT, PLAIN, nt) ((void)(nt), PLAIN)
#endif

static bool arith_op(int op) { return op >= CT_EXPR_ADD && op <= CT_EXPR_DIV; }

/* Whether the plan's last node is one that streams (above): a fused pair, or an arithmetic
 * binary node (alone or ending a scalar pair). */
static bool last_streams(const ct__expr_plan *p) {
  const ct__expr_instr *last = &p->code[p->n_code - 1];
  return last->code == CT__XC_FUSED_L || last->code == CT__XC_FUSED_R ||
         (last->code == CT__XC_BINARY && arith_op(last->op));
}

/* Whether instructions k+1 and k+2 push a scalar and apply an arithmetic node to the top two, so
 * that with binary node k (a block and a scalar) they run as one scalar_pair loop. */
static bool scalar_pair_next(const ct__expr_plan *p, int k) {
  return k + 2 < p->n_code && arith_op(p->code[k].op) &&
         p->code[k + 1].code == CT__XC_SCALAR && p->code[k + 2].code == CT__XC_BINARY &&
         arith_op(p->code[k + 2].op);
}

/* A broadcast leaf whose elements for [i0, i0 + n) are one contiguous run of its own (a row
 * broadcast over the output's leading dims, a block within one row): that run, else NULL. */
static const void *leaf_run(const ct__expr_leaf *l, const ct_ddim *out, int64_t i0, int n,
                            size_t es) {
  int r = out->rank;
  if (r == 0 || l->stride[r - 1] != 1 || i0 % out->d[r - 1] + n > out->d[r - 1]) return NULL;
  int64_t rem = i0, off = 0;
  for (int d = r - 1; d >= 0; d--) {
    off += rem % out->d[d] * l->stride[d];
    rem /= out->d[d];
  }
  return (const char *)l->data + (size_t)off * es;
}

/* ---- Storage: reading leaves into the computing type, storing the result ------------------ */

#define LOAD_F32(p, i) (((const float *)(p))[i])
#define LOAD_F64(p, i) (((const double *)(p))[i])
#define LOAD_F16(p, i) ct__half_to_float(((const uint16_t *)(p))[i])
#define LOAD_BF16(p, i) ct__bf16_to_float(((const uint16_t *)(p))[i])
#define STORE_F32(p, i, v) (((float *)(p))[i] = (v))
#define STORE_F64(p, i, v) (((double *)(p))[i] = (v))
#define STORE_F16(p, i, v) (((uint16_t *)(p))[i] = ct__float_to_half(v))
#define STORE_BF16(p, i, v) (((uint16_t *)(p))[i] = ct__float_to_bf16(v))

/* Asks for the next block of every leaf read in place, and of dst, while this block computes:
 * the block's node loops run one after another, each over only some of the streams, so without
 * this the memory system would see few streams at a time. */
static void prefetch_next(const ct__expr_plan *p, int64_t i0, int64_t end, size_t es,
                          bool dst_too) {
  size_t bytes = (size_t)(end - i0 < BLOCK ? end - i0 : BLOCK) * es;
  for (int k = 0; k < p->n_leaves; k++) {
    const ct__expr_leaf *l = &p->leaves[k];
    if (!l->full || l->scalar) continue;
    const char *q = (const char *)l->data + (size_t)i0 * es;
    for (size_t b = 0; b < bytes; b += 64) __builtin_prefetch(q + b, 0, 3);
  }
  if (!dst_too) return; /* streamed: its lines are written whole, never read */
  char *d = (char *)p->dst + (size_t)i0 * es;
  for (size_t b = 0; b < bytes; b += 64) __builtin_prefetch(d + b, 1, 3);
}

/* The fewest blocks worth a thread: a program with a libm node (exp, log, tanh, sigmoid, erf,
 * pow) costs as the math kernels per element, any other as the memory-bound ones. Each element is
 * computed alone, so where the pieces fall changes no bit. */
static int64_t grain_blocks(const ct__expr_plan *p) {
  for (int k = 0; k < p->n_code; k++) {
    int op = p->code[k].op, code = p->code[k].code;
    if ((code == CT__XC_UNARY &&
         (op == CT_EXPR_EXP || op == CT_EXPR_LOG || op == CT_EXPR_TANH ||
          op == CT_EXPR_SIGMOID || op == CT_EXPR_ERF)) ||
        (code == CT__XC_BINARY && op == CT_EXPR_POW)) {
      return CT__GRAIN_MATH / BLOCK;
    }
  }
  return CT__GRAIN_MEM / BLOCK;
}

/* One engine per storage dtype: S the storage (name), C the computing type, DIRECT whether a
 * leaf of the output's dims is read in place and the last node writes dst in place. */
#define ENGINE(NAME, STORAGE, C, SUF, LOAD, STORE, DIRECT)                                   \
  /* Elements [i0, i0 + n) of leaf l, broadcast to the output, into o. */                    \
  static void gather_##NAME(C *o, const ct__expr_leaf *l, const ct_ddim *out, int64_t i0,    \
                            int n) {                                                         \
    if (l->full) { /* a float16 or bfloat16 leaf of the output's dims: convert in order */    \
      for (int j = 0; j < n; j++) o[j] = LOAD(l->data, i0 + j);                              \
      return;                                                                                \
    }                                                                                        \
    int r = out->rank;                                                                       \
    int64_t idx[CT_MAX_RANK], off = 0, rem = i0;                                             \
    for (int d = r - 1; d >= 0; d--) {                                                       \
      idx[d] = rem % out->d[d];                                                              \
      rem /= out->d[d];                                                                      \
      off += idx[d] * l->stride[d];                                                          \
    }                                                                                        \
    int64_t last = out->d[r - 1], s = l->stride[r - 1];                                      \
    for (int done = 0; done < n;) {                                                          \
      int run = (int)(last - idx[r - 1] < n - done ? last - idx[r - 1] : n - done);          \
      if (s == 0) {                                                                          \
        C v = LOAD(l->data, off);                                                            \
        for (int j = 0; j < run; j++) o[done + j] = v;                                       \
      } else {                                                                               \
        for (int j = 0; j < run; j++) o[done + j] = LOAD(l->data, off + j);                  \
      }                                                                                      \
      done += run;                                                                           \
      idx[r - 1] += run;                                                                     \
      off += run * s;                                                                        \
      for (int d = r - 1; d > 0 && idx[d] == out->d[d]; d--) {                               \
        off += l->stride[d - 1] - l->stride[d] * out->d[d];                                  \
        idx[d] = 0;                                                                          \
        idx[d - 1]++;                                                                        \
      }                                                                                      \
    }                                                                                        \
  }                                                                                          \
  static void block_##NAME(const ct__expr_plan *p, C (*buf)[BLOCK], val_##SUF *st,           \
                           int64_t i0, int n, bool nt) {                                     \
    int sp = 0;                                                                              \
    const void *run;                                                                         \
    for (int k = 0; k < p->n_code; k++) {                                                    \
      const ct__expr_instr *in = &p->code[k];                                                \
      bool to_dst = DIRECT && k == p->n_code - 1;                                            \
      if (in->code == CT__XC_LEAF) {                                                         \
        const ct__expr_leaf *l = &p->leaves[in->arg];                                        \
        if (l->scalar) {                                                                     \
          st[sp] = (val_##SUF){.s = LOAD(l->data, 0), .sc = true};                           \
        } else if (DIRECT && l->full) {                                                      \
          st[sp] = (val_##SUF){.p = (const C *)l->data + i0};                                \
        } else if (DIRECT && (run = leaf_run(l, &p->out, i0, n, sizeof(C))) != NULL) {       \
          st[sp] = (val_##SUF){.p = run};                                                    \
        } else {                                                                             \
          gather_##NAME(buf[sp], l, &p->out, i0, n);                                         \
          st[sp] = (val_##SUF){.p = buf[sp]};                                                \
        }                                                                                    \
        sp++;                                                                                \
      } else if (in->code == CT__XC_SCALAR) {                                                \
        st[sp++] = (val_##SUF){.s = (C)in->v, .sc = true};                                   \
      } else if (in->code == CT__XC_UNARY) {                                                 \
        val_##SUF *x = &st[sp - 1];                                                          \
        if (x->sc) {                                                                         \
          x->s = unary1_##SUF(in->op, x->s);                                                 \
        } else {                                                                             \
          C *o = to_dst ? (C *)p->dst + i0 : buf[sp - 1];                                    \
          unary_##SUF(in->op, o, x->p, n);                                                   \
          x->p = o;                                                                          \
        }                                                                                    \
      } else if (in->code != CT__XC_BINARY) { /* FUSED_L, FUSED_R: three blocks */          \
        C *o = to_dst ? (C *)p->dst + i0 : buf[sp - 3];                                      \
        NT_OR(fused_nt_##SUF, fused_##SUF, to_dst && nt)(in->code == CT__XC_FUSED_L, in->op, \
                                                         in->arg, o, st[sp - 3].p,           \
                                                         st[sp - 2].p, st[sp - 1].p, n);     \
        st[sp - 3].p = o;                                                                    \
        sp -= 2;                                                                             \
      } else {                                                                               \
        val_##SUF *x = &st[sp - 2], *y = &st[sp - 1];                                        \
        if (x->sc && y->sc) {                                                                \
          x->s = binary1_##SUF(in->op, x->s, y->s);                                          \
        } else if (y->sc && scalar_pair_next(p, k)) { /* (x op a) arg b: one loop */         \
          const ct__expr_instr *in2 = &p->code[k + 2];                                       \
          bool to_dst2 = DIRECT && k + 2 == p->n_code - 1;                                   \
          C *o = to_dst2 ? (C *)p->dst + i0 : buf[sp - 2];                                   \
          NT_OR(scalar_pair_nt_##SUF, scalar_pair_##SUF, to_dst2 && nt)(                     \
              in->op, in2->op, o, x->p, y->s, (C)p->code[k + 1].v, n);                       \
          *x = (val_##SUF){.p = o};                                                          \
          k += 2;                                                                            \
        } else { /* a RELU right after runs in the same loop */                              \
          bool relu = k + 1 < p->n_code && p->code[k + 1].code == CT__XC_UNARY &&           \
                      p->code[k + 1].op == CT_EXPR_RELU;                                    \
          bool last = DIRECT && k + relu == p->n_code - 1;                                   \
          bool ntd = last && nt && !relu && arith_op(in->op); /* streams into dst */         \
          C *o = last ? (C *)p->dst + i0 : buf[sp - 2];                                      \
          if (relu) binary_relu_##SUF(in->op, o, *x, *y, n);                                 \
          else NT_OR(binary_nt_##SUF, binary_##SUF, ntd)(in->op, o, *x, *y, n);              \
          *x = (val_##SUF){.p = o};                                                          \
          k += relu;                                                                         \
        }                                                                                    \
        sp--;                                                                                \
      }                                                                                      \
    }                                                                                        \
    /* The result into dst, unless the last node already wrote it there. */                 \
    if (st[0].sc) {                                                                          \
      for (int i = 0; i < n; i++) STORE(p->dst, i0 + i, st[0].s);                            \
    } else if (!DIRECT || st[0].p != (const C *)p->dst + i0) {                               \
      for (int i = 0; i < n; i++) STORE(p->dst, i0 + i, st[0].p[i]);                         \
    }                                                                                        \
  }                                                                                          \
  /* Blocks [b, e) of the output (block b covers elements from b x BLOCK on), on this thread's \
   * own buffers (a deep program's come in scratch, for one thread only). */                \
  static void range_##NAME(void *arg, int64_t b, int64_t e) {                               \
    const ct__expr_plan *p = arg;                                                            \
    C stack_buf[CT__EXPR_STACK_BUFS][BLOCK];                                                 \
    val_##SUF stack_val[CT__EXPR_STACK_BUFS];                                                \
    C(*buf)[BLOCK] = p->depth > CT__EXPR_STACK_BUFS ? (C(*)[BLOCK])p->scratch : stack_buf;   \
    /* A deep program's values sit after its buffers, in the same scratch. */               \
    val_##SUF *st = p->depth > CT__EXPR_STACK_BUFS ? (val_##SUF *)(buf + p->depth) : stack_val; \
    int64_t end = e * BLOCK < p->numel ? e * BLOCK : p->numel;                               \
    /* An output of the last-level cache's size or more is stored streaming, when the last    \
     * node is one that streams (ops/cpu/stream.h). */                                       \
    bool nt = DIRECT && ct__stream_wanted((size_t)p->numel * sizeof(C)) && last_streams(p);  \
    for (int64_t i0 = b * BLOCK; i0 < end; i0 += BLOCK) {                                    \
      int n = end - i0 < BLOCK ? (int)(end - i0) : BLOCK;                                    \
      if (i0 + BLOCK < end) prefetch_next(p, i0 + BLOCK, end, sizeof(*(STORAGE *)0), !nt);   \
      block_##NAME(p, buf, st, i0, n, nt);                                                   \
    }                                                                                        \
    if (nt) ct__stream_fence();                                                              \
  }                                                                                          \
  static void run_##NAME(const ct__expr_plan *p) {                                           \
    int64_t blocks = (p->numel + BLOCK - 1) / BLOCK;                                         \
    if (p->depth > CT__EXPR_STACK_BUFS) {                                                    \
      range_##NAME((void *)p, 0, blocks);                                                    \
    } else {                                                                                 \
      ct__parallel_for(blocks, grain_blocks(p), range_##NAME, (void *)p);                    \
    }                                                                                        \
  }

ENGINE(f32, float, float, f, LOAD_F32, STORE_F32, true)
ENGINE(f64, double, double, d, LOAD_F64, STORE_F64, true)
ENGINE(f16, uint16_t, float, f, LOAD_F16, STORE_F16, false)
ENGINE(bf16, uint16_t, float, f, LOAD_BF16, STORE_BF16, false)

static ct_status eval(const ct__expr_plan *p) {
  switch (p->dtype) {
    case CT_FLOAT32: run_f32(p); break;
    case CT_FLOAT64: run_f64(p); break;
    case CT_FLOAT16: run_f16(p); break;
    case CT_BFLOAT16: run_bf16(p); break;
    default:
      return ct__error(CT_ERR_UNSUPPORTED, "ct_expr_assign: no CPU expression engine for %s",
                       ct_dtype_name(p->dtype));
  }
  return CT_OK;
}

/* ---- The dot rule: one GEMM --------------------------------------------------------------- */

static ct_status gemm(const ct__expr_gemm *g) {
  ct__gemm p = {.ta = g->ta, .tb = g->tb, .m = g->m, .n = g->n, .k = g->k, .alpha = g->alpha,
                .beta = g->beta, .a = g->a, .b = g->b, .lda = g->lda, .ldb = g->ldb, .c = g->c,
                .ldc = g->n};
  ct_status st = g->dtype == CT_FLOAT32 ? ct__gemm_f32(&p) : ct__gemm_f64(&p);
  if (st != CT_OK) {
    char why[256];
    snprintf(why, sizeof why, "%s", ct_last_error());
    return ct__error(st, "ct_expr_assign: %s", why);
  }
  return CT_OK;
}

const ct__expr_engine ct__cpu_expr = {.kind = CT_DEVICE_CPU, .eval = eval, .gemm = gemm};
