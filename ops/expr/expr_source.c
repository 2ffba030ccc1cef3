/* SPDX-License-Identifier: Apache-2.0 */
/* ops/expr/expr_source.c: the CUDA C++ source of one expression plan's kernel, for a device
 * engine to compile at run time (NVRTC) and for the CPU suite to compile with nvcc.
 *
 * The source depends only on the plan's structure: its instructions, the dtype, and for each
 * leaf whether it is read in place, as a scalar or broadcast (and along which output dims), and
 * the output's rank. Everything else is a kernel parameter, in this order, so that one compiled
 * kernel serves every assignment of the same structure:
 *   dst, n (elements), each leaf's pointer, each scalar instruction's value (in the computing
 *   type), the output's extents d0 .. d<rank-1> (only when a leaf broadcasts), and for each
 *   broadcast leaf its stride along each output dim it does not broadcast over.
 * The kernel is a grid-stride loop; each thread evaluates the whole program for its elements as
 * straight-line code over registers, with each node written as the CPU engine computes it (and
 * the device code is to be compiled with --fmad=false, as corten's .cu files are). float16 and
 * bfloat16 go through ops/half.h's conversions, which are __host__ __device__ under nvcc; NVRTC
 * gets that header, and the <stdint.h> and <string.h> it includes, by name. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/expr/expr_impl.h"
#include "common/alloc.h"

typedef struct text {
  char *s;
  size_t n, cap;
  bool oom;
  const char *ct; /* the computing type: "float" or "double" */
} text;

static void put(text *t, const char *fmt, ...) CT__PRINTF(2, 3);
static void put(text *t, const char *fmt, ...) {
  if (t->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->s + t->n, t->cap - t->n, fmt, ap);
    va_end(ap);
    if (k < 0) {
      t->oom = true;
      return;
    }
    if ((size_t)k < t->cap - t->n) {
      t->n += (size_t)k;
      return;
    }
    size_t cap = (t->cap + (size_t)k + 1) * 2;
    char *s = ct__realloc(t->s, cap);
    if (s == NULL) {
      t->oom = true;
      return;
    }
    t->s = s;
    t->cap = cap;
  }
}

/* const <computing type> r = <node op over a (and b)>; as the CPU engine computes it in C. */
static void put_op(text *t, bool f32, int op, const char *r, const char *a, const char *b) {
  const char *sf = f32 ? "f" : "", *one = f32 ? "1.0f" : "1.0", *zero = f32 ? "0.0f" : "0.0";
  put(t, "    const %s %s = ", t->ct, r);
  switch (op) {
    case CT_EXPR_ADD: put(t, "%s + %s", a, b); break;
    case CT_EXPR_SUB: put(t, "%s - %s", a, b); break;
    case CT_EXPR_MUL: put(t, "%s * %s", a, b); break;
    case CT_EXPR_DIV: put(t, "%s / %s", a, b); break;
    case CT_EXPR_MAX: put(t, "(%s > %s || %s != %s) ? %s : %s", a, b, a, a, a, b); break;
    case CT_EXPR_MIN: put(t, "(%s < %s || %s != %s) ? %s : %s", a, b, a, a, a, b); break;
    case CT_EXPR_POW: put(t, "pow%s(%s, %s)", sf, a, b); break;
    case CT_EXPR_NEG: put(t, "-%s", a); break;
    case CT_EXPR_EXP: put(t, "exp%s(%s)", sf, a); break;
    case CT_EXPR_LOG: put(t, "log%s(%s)", sf, a); break;
    case CT_EXPR_TANH: put(t, "tanh%s(%s)", sf, a); break;
    case CT_EXPR_SIGMOID: put(t, "%s / (%s + exp%s(-%s))", one, one, sf, a); break;
    case CT_EXPR_RELU: put(t, "%s < 0 ? %s : %s", a, zero, a); break;
    case CT_EXPR_SQRT: put(t, "sqrt%s(%s)", sf, a); break;
    case CT_EXPR_ABS: put(t, "fabs%s(%s)", sf, a); break;
    case CT_EXPR_ERF: put(t, "erf%s(%s)", sf, a); break;
    default: put(t, "%s", a); break;
  }
  put(t, ";\n");
}

/* Names of values: v<k> for instruction k, w<k> for the inner value of a fused one. */
typedef struct vname {
  char s[16];
} vname;

static vname vn(char c, int k) {
  vname n;
  snprintf(n.s, sizeof n.s, "%c%d", c, k);
  return n;
}

static bool broadcasts(const ct__expr_leaf *l) { return !l->full && !l->scalar; }

char *ct__expr_cuda_source(const ct__expr_plan *p, const char *name) {
  bool half = p->dtype == CT_FLOAT16 || p->dtype == CT_BFLOAT16;
  bool f32 = p->dtype != CT_FLOAT64;
  const char *storage = half ? "uint16_t" : f32 ? "float" : "double";
  const char *load = p->dtype == CT_FLOAT16    ? "ct__half_to_float"
                     : p->dtype == CT_BFLOAT16 ? "ct__bf16_to_float"
                                               : "";
  const char *store = p->dtype == CT_FLOAT16    ? "ct__float_to_half"
                      : p->dtype == CT_BFLOAT16 ? "ct__float_to_bf16"
                                                : "";
  int rank = p->out.rank;
  bool any_bcast = false;
  for (int k = 0; k < p->n_leaves; k++) any_bcast |= broadcasts(&p->leaves[k]);
  int *stack = ct__malloc(sizeof(int) * (size_t)(p->depth > 0 ? p->depth : 1));
  text t = {.ct = f32 ? "float" : "double", .cap = 4096};
  t.s = ct__malloc(t.cap);
  if (stack == NULL || t.s == NULL) t.oom = true;

  /* Signature. */
  put(&t, "/* corten expression kernel %s: %s, %d instructions, %d leaves, rank %d */\n", name,
      ct_dtype_name(p->dtype), p->n_code, p->n_leaves, rank);
  if (half) put(&t, "#include \"ops/half.h\"\n");
  /* No __restrict__ on dst: it may be a leaf as well (dst = dst * a, or CT_PLUSTO's dst), and a
   * restrict-qualified pointer that aliases another is undefined behaviour. */
  put(&t, "extern \"C\" __global__ void %s(%s *dst, long long n", name, storage);
  for (int k = 0; k < p->n_leaves; k++) put(&t, ",\n    const %s *l%d", storage, k);
  for (int k = 0; k < p->n_code; k++) {
    if (p->code[k].code == CT__XC_SCALAR) put(&t, ", %s c%d", t.ct, k);
  }
  if (any_bcast) {
    for (int d = 0; d < rank; d++) put(&t, ", long long d%d", d);
  }
  for (int k = 0; k < p->n_leaves; k++) {
    if (!broadcasts(&p->leaves[k])) continue;
    for (int d = 0; d < rank; d++) {
      if (p->leaves[k].stride[d] != 0) put(&t, ", long long s%d_%d", k, d);
    }
  }
  put(&t, ") {\n  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
          "       i += (long long)gridDim.x * blockDim.x) {\n");
  if (any_bcast) { /* the output position, dim by dim */
    put(&t, "    long long r = i;\n");
    for (int d = rank - 1; d >= 0; d--) {
      bool used = false;
      for (int k = 0; k < p->n_leaves; k++) {
        used |= broadcasts(&p->leaves[k]) && p->leaves[k].stride[d] != 0;
      }
      if (used) put(&t, "    const long long i%d = r %% d%d;\n", d, d);
      if (d > 0) put(&t, "    r /= d%d;\n", d);
    }
  }

  /* Body: the stack program as straight-line code; v<k> is instruction k's value. */
  int sp = 0;
  for (int k = 0; k < p->n_code && !t.oom; k++) {
    const ct__expr_instr *in = &p->code[k];
    switch (in->code) {
      case CT__XC_LEAF: {
        const ct__expr_leaf *l = &p->leaves[in->arg];
        put(&t, "    const %s v%d = %s(l%d[", t.ct, k, load, in->arg);
        if (l->full) {
          put(&t, "i");
        } else if (l->scalar) {
          put(&t, "0");
        } else {
          const char *plus = "";
          for (int d = 0; d < rank; d++) {
            if (l->stride[d] == 0) continue;
            put(&t, "%si%d * s%d_%d", plus, d, in->arg, d);
            plus = " + ";
          }
          if (*plus == '\0') put(&t, "0");
        }
        put(&t, "]);\n");
        stack[sp++] = k;
        break;
      }
      case CT__XC_SCALAR:
        put(&t, "    const %s v%d = c%d;\n", t.ct, k, k);
        stack[sp++] = k;
        break;
      case CT__XC_UNARY:
        put_op(&t, f32, in->op, vn('v', k).s, vn('v', stack[sp - 1]).s, NULL);
        stack[sp - 1] = k;
        break;
      case CT__XC_BINARY:
        put_op(&t, f32, in->op, vn('v', k).s, vn('v', stack[sp - 2]).s, vn('v', stack[sp - 1]).s);
        stack[--sp - 1] = k;
        break;
      default: { /* FUSED_L: w = x op y, v = w arg z; FUSED_R: w = y op z, v = x arg w */
        vname x = vn('v', stack[sp - 3]), y = vn('v', stack[sp - 2]), z = vn('v', stack[sp - 1]);
        vname w = vn('w', k), v = vn('v', k);
        if (in->code == CT__XC_FUSED_L) {
          put_op(&t, f32, in->op, w.s, x.s, y.s);
          put_op(&t, f32, in->arg, v.s, w.s, z.s);
        } else {
          put_op(&t, f32, in->op, w.s, y.s, z.s);
          put_op(&t, f32, in->arg, v.s, x.s, w.s);
        }
        sp -= 2;
        stack[sp - 1] = k;
        break;
      }
    }
  }
  put(&t, "    dst[i] = %s(v%d);\n  }\n}\n", store, p->n_code - 1);
  free(stack);
  if (t.oom) {
    free(t.s);
    return ct__error_null(CT_ERR_OUT_OF_MEMORY,
                          "ct_expr_assign: no memory for the source of an expression kernel");
  }
  return t.s;
}

int ct__expr_cuda_params(const ct__expr_plan *p, ct__expr_param *out, char *kinds) {
  bool f32 = p->dtype != CT_FLOAT64, any_bcast = false;
  int n = 0;
#define PARAM(field, value)                                      \
  do {                                                           \
    if (out != NULL) out[n].field = (value);                     \
    if (kinds != NULL) kinds[n] = #field[0];                      \
    n++;                                                         \
  } while (0)
  PARAM(p, p->dst);
  PARAM(i, (long long)p->numel);
  for (int k = 0; k < p->n_leaves; k++) {
    PARAM(p, (void *)(uintptr_t)p->leaves[k].data);
    any_bcast |= broadcasts(&p->leaves[k]);
  }
  for (int k = 0; k < p->n_code; k++) {
    if (p->code[k].code != CT__XC_SCALAR) continue;
    if (f32) {
      PARAM(f, (float)p->code[k].v);
    } else {
      PARAM(d, p->code[k].v);
    }
  }
  for (int d = 0; any_bcast && d < p->out.rank; d++) PARAM(i, (long long)p->out.d[d]);
  for (int k = 0; k < p->n_leaves; k++) {
    for (int d = 0; broadcasts(&p->leaves[k]) && d < p->out.rank; d++) {
      if (p->leaves[k].stride[d] != 0) PARAM(i, (long long)p->leaves[k].stride[d]);
    }
  }
#undef PARAM
  if (kinds != NULL) kinds[n] = '\0';
  return n;
}
