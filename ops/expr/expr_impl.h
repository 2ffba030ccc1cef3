/* SPDX-License-Identifier: Apache-2.0 */
/* ops/expr/expr_impl.h: the expression tree (corten/expr.h), the evaluation plan that
 * ct_expr_assign compiles it into, and what a backend's expression engine provides.
 *
 * The plan is the tree in postorder as a small stack program: a leaf or scalar pushes a value, a
 * unary node replaces the top, a binary node pops two and pushes one. An assignment mode other
 * than CT_SAVETO is compiled as dst = dst <op> e, with dst as the first leaf. A backend runs the
 * program over blocks of the flat output. */
#ifndef CORTEN_OPS_EXPR_IMPL_H
#define CORTEN_OPS_EXPR_IMPL_H

#include <corten/expr.h>

#include "common/common.h"

typedef enum ct__expr_kind {
  CT__EXPR_TENSOR = 1,
  CT__EXPR_SCALAR,
  CT__EXPR_UNARY,
  CT__EXPR_BINARY,
  CT__EXPR_DOT,
} ct__expr_kind;

struct ct_expr {
  ct__expr_kind kind;
  ct_expr_op op;        /* UNARY, BINARY */
  bool ta, tb;          /* DOT: transpose a, b */
  const ct_tensor *t;   /* TENSOR */
  double v;             /* SCALAR */
  ct_expr *a, *b;       /* operands (a only for UNARY) */
  bool has_parent;      /* an operand of another node already, which owns and frees it */
};

/* A tensor leaf as the engine reads it: its data and, for each dim of the output, the stride in
 * elements (0 where the leaf broadcasts). full: the leaf has the output's dims (read in place);
 * scalar: one element, read once. */
typedef struct ct__expr_leaf {
  const void *data;
  int64_t stride[CT_MAX_RANK];
  bool full, scalar;
} ct__expr_leaf;

typedef enum ct__expr_code {
  CT__XC_LEAF = 1, /* push leaves[arg] */
  CT__XC_SCALAR,   /* push v */
  CT__XC_UNARY,    /* top = op(top) */
  CT__XC_BINARY,   /* pop b, pop a, push op(a, b) */
  /* Two arithmetic nodes (ADD .. DIV) over three blocks, in one loop: pop z, y, x and push
   * (x op y) arg z (FUSED_L) or x arg (y op z) (FUSED_R), each operation rounded as its own
   * node would be. Emitted only where x, y and z are all blocks, never scalars. */
  CT__XC_FUSED_L,
  CT__XC_FUSED_R,
} ct__expr_code;

typedef struct ct__expr_instr {
  uint8_t code; /* ct__expr_code */
  uint8_t op;   /* ct_expr_op */
  int32_t arg;  /* LEAF: index into leaves; FUSED_L, FUSED_R: the outer op */
  double v;     /* SCALAR */
} ct__expr_instr;

typedef struct ct__expr_plan {
  ct_dtype dtype;       /* of every leaf and of dst */
  ct_place place;       /* of every leaf and of dst */
  ct_ddim out;          /* the output dims (dst's) */
  int64_t numel;
  void *dst;
  const ct__expr_instr *code;
  int n_code;
  const ct__expr_leaf *leaves;
  int n_leaves;
  int depth;            /* the most values on the stack at once (or more) */
  void *scratch;        /* CT__EXPR_SCRATCH(depth) bytes when depth > CT__EXPR_STACK_BUFS */
} ct__expr_plan;

/* Elements per block of evaluation, and how many block buffers an engine keeps on its stack
 * (a deeper program brings its own, in scratch). */
#define CT__EXPR_BLOCK 512
#define CT__EXPR_STACK_BUFS 4
/* Scratch for a deeper program: a block buffer of doubles and a stack value per level. */
#define CT__EXPR_SCRATCH(depth) ((sizeof(double) * CT__EXPR_BLOCK + 32) * (size_t)(depth))

/* One GEMM: C = alpha op(A) op(B) + beta C, row-major, all of dtype. */
typedef struct ct__expr_gemm {
  ct_dtype dtype;
  bool ta, tb;
  int64_t m, n, k;
  double alpha, beta;
  const void *a, *b;
  int64_t lda, ldb;
  void *c;
} ct__expr_gemm;

/* A backend's expression engine, listed in ops/backends.c. eval runs a plan (dst already sized
 * and allocated); gemm runs the dot rule (NULL: no GEMM on this place). Both record their
 * failures. */
typedef struct ct__expr_engine {
  ct_device_kind kind;
  ct_status (*eval)(const ct__expr_plan *p);
  ct_status (*gemm)(const ct__expr_gemm *g); /* optional */
} ct__expr_engine;

/* ops/backends.c: the engines of this build, NULL-terminated. */
extern const ct__expr_engine *const ct__expr_engines[];

/* A binary kind of the library's own, built only by ct__expr_binary_any (the executor's fusion
 * of relu_grad; no public constructor, and only the CPU engine runs it): a > 0 ? b : 0, with a
 * relu's output and b its output's gradient, as relu_grad's kernel. */
#define CT__EXPR_RELU_GRAD ((ct_expr_op)(CT_EXPR_ERF + 1))

/* ct_expr_binary that also takes the library's own kinds above. */
ct_expr *ct__expr_binary_any(ct_expr_op op, ct_expr *a, ct_expr *b);

/* Whether op is a binary kind (ADD .. POW) or a unary one (NEG .. ABS). */
static inline bool ct__expr_op_binary(int op) { return op >= CT_EXPR_ADD && op <= CT_EXPR_POW; }
static inline bool ct__expr_op_unary(int op) { return op >= CT_EXPR_NEG && op <= CT_EXPR_ERF; }

static inline const char *ct__expr_dims_s(ct_ddim d, char *buf) {
  return ct_ddim_str(d, buf, CT__DDIM_STR_CAP);
}
static inline const char *ct__expr_place_s(ct_place p, char *buf) {
  return ct_place_str(p, buf, CT__PLACE_STR_CAP);
}
static inline bool ct__expr_dtype_float(ct_dtype t) {
  return t == CT_FLOAT16 || t == CT_BFLOAT16 || t == CT_FLOAT32 || t == CT_FLOAT64;
}

/* ops/expr/expr_assign.c, for the dot rule too. Checks tensor leaf t: memory, a floating-point
 * dtype, dims within its capacity, and (unless first is NULL) first's dtype and place. */
ct_status ct__expr_check_leaf(const ct_tensor *first, const ct_tensor *t);

/* Gives dst dims out, dtype dt and place pl (CT_SAVETO, unless dst is a leaf), or checks that it
 * has them (the other modes); on failure dst keeps its dims and dtype. *data: dst's elements. */
ct_status ct__expr_prepare_dst(ct_tensor *dst, ct_assign mode, ct_ddim out, ct_dtype dt,
                               ct_place pl, bool dst_is_leaf, void **data);

/* The engine of place p; CT_ERR_UNSUPPORTED (NULL) when this build has none. */
const ct__expr_engine *ct__expr_engine_for(ct_place p);

/* ops/expr/expr_source.c: the CUDA source of plan p's kernel, named name (an extern "C"
 * __global__ function), in a malloc'ed string; NULL with CT_ERR_OUT_OF_MEMORY recorded. */
char *ct__expr_cuda_source(const ct__expr_plan *p, const char *name);

/* One parameter of a plan's kernel, as cudaLaunchKernel takes it (a pointer to each). */
typedef union ct__expr_param {
  void *p;
  long long i;
  float f;
  double d;
} ct__expr_param;

/* The parameters of plan p's kernel in the order of its source's signature into out (NULL:
 * count only) and, unless kinds is NULL, which member each uses into kinds ('p', 'i', 'f' or
 * 'd', then a NUL); returns how many. */
int ct__expr_cuda_params(const ct__expr_plan *p, ct__expr_param *out, char *kinds);

/* The source ct_expr_assign(dst, mode, e) would compile for a device, built from the same plan
 * (dst gets sized as by the assignment, nothing is evaluated); NULL with the error recorded.
 * For the CPU suite, which compiles it with nvcc when nvcc exists. */
char *ct__expr_source_for(ct_tensor *dst, ct_assign mode, const ct_expr *e, const char *name);

/* The same plan's parameter kinds (ct__expr_cuda_params), in a malloc'ed string; NULL with the
 * error recorded. For the CPU suite, which checks them against the compiled kernel's. */
char *ct__expr_param_kinds_for(ct_tensor *dst, ct_assign mode, const ct_expr *e);

/* ops/expr/expr_dot.c: the dot rule, dst (mode CT_SAVETO or CT_PLUSTO) = alpha x dot d. */
ct_status ct__expr_assign_dot(ct_tensor *dst, ct_assign mode, const ct_expr *d, double alpha);

#endif /* CORTEN_OPS_EXPR_IMPL_H */
