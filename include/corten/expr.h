/* SPDX-License-Identifier: Apache-2.0 */
/* corten/expr.h: lazy expressions over tensors, evaluated at assignment in one pass over the
 * destination (after mshadow's expression templates).
 *
 * Building an expression computes nothing: ct_expr_tensor, ct_expr_scalar, ct_expr_unary,
 * ct_expr_binary and ct_expr_dot make a tree that only records what to compute. The tensors of
 * the leaves are read when the tree is assigned, so one tree may be assigned again after the
 * tensors changed. ct_expr_assign walks the tree once over the destination, a block of elements
 * at a time, without allocating any temporary tensor:
 *
 *   ct_expr *e = ct_expr_binary(CT_EXPR_ADD,
 *                               ct_expr_binary(CT_EXPR_MUL, ct_expr_tensor(a), ct_expr_tensor(b)),
 *                               ct_expr_tensor(c));
 *   ct_status s = ct_expr_assign(dst, CT_SAVETO, e);        dst = a * b + c
 *   ct_expr_free(e);
 *
 * Ownership: a constructor takes its operand expressions, also when it fails (it frees them and
 * returns NULL). A NULL operand makes it return NULL without recording a new error, so nested
 * calls never leak and ct_last_error() keeps the first failure; check only the outermost result.
 * An expression is a tree: a node has one parent. Passing one node as both operands, or a node
 * that is already another node's operand, is refused (CT_ERR_INVALID_ARGUMENT); such a node
 * stays with the parent it has, and the other operand is freed. Build a leaf twice to use a
 * tensor twice (x * x is ct_expr_binary(CT_EXPR_MUL, ct_expr_tensor(x), ct_expr_tensor(x))).
 *
 * Results: every tensor leaf holds float16, bfloat16, float32 or float64, all the same dtype on
 * the same place; float16 and bfloat16 compute in float32 and round once, on the store. Each
 * node rounds as the op of the same name does (elementwise_add, exp, sigmoid, ...; no fused
 * multiply-add), so a tree's result is bit-identical to running its ops one by one.
 *
 * Thread-safety: a tree is not changed by ct_expr_assign, so one tree may be assigned from
 * several threads at once (into different destinations). Building and freeing one tree is not
 * thread-safe. */
#ifndef CORTEN_EXPR_H
#define CORTEN_EXPR_H

#include <corten/status.h>
#include <corten/tensor.h>
#include <corten/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_expr ct_expr;

/* Node kinds. Binary: ADD (a + b), SUB (a - b), MUL (a * b), DIV (a / b), MAX and MIN (NaN when
 * either side is NaN), POW (pow(a, b)). Unary: NEG (-a), EXP, LOG, TANH, SIGMOID (1 / (1 +
 * exp(-a))), RELU (a > 0 ? a : 0), SQRT, ABS, ERF (the erf op's: within 0.83 ulp for float32,
 * the C library's for float64). */
typedef enum ct_expr_op {
  CT_EXPR_ADD = 1, CT_EXPR_SUB, CT_EXPR_MUL, CT_EXPR_DIV, CT_EXPR_MAX, CT_EXPR_MIN, CT_EXPR_POW,
  CT_EXPR_NEG, CT_EXPR_EXP, CT_EXPR_LOG, CT_EXPR_TANH, CT_EXPR_SIGMOID, CT_EXPR_RELU,
  CT_EXPR_SQRT, CT_EXPR_ABS, CT_EXPR_ERF
} ct_expr_op;

/* How the value is stored into dst: dst = e, dst += e, dst -= e, dst *= e, dst /= e (each
 * rounded as dst + e and so on would be). */
typedef enum ct_assign { CT_SAVETO = 0, CT_PLUSTO, CT_MINUSTO, CT_MULTO, CT_DIVTO } ct_assign;

/* A leaf reading tensor t, which the caller keeps alive and unchanged in dims while the tree is
 * assigned; t's data is read at assignment.
 * Errors (NULL returned): CT_ERR_INVALID_ARGUMENT (t is NULL), CT_ERR_OUT_OF_MEMORY. */
CT_NODISCARD CT_API ct_expr *ct_expr_tensor(const ct_tensor *t);

/* A scalar leaf: v converted to the computing type (float32 for float16, bfloat16 and float32
 * leaves) and broadcast to any dims. Errors (NULL returned): CT_ERR_OUT_OF_MEMORY. */
CT_NODISCARD CT_API ct_expr *ct_expr_scalar(double v);

/* op applied to a (takes a). NULL returned, a freed:
 *   a NULL                   no new error (the one that made a NULL stays)
 *   CT_ERR_INVALID_ARGUMENT  op is not a unary kind (NEG .. ABS)
 *   CT_ERR_OUT_OF_MEMORY */
CT_NODISCARD CT_API ct_expr *ct_expr_unary(ct_expr_op op, ct_expr *a);

/* op applied to a and b with numpy broadcasting (trailing dims aligned, each pair equal or one
 * of them 1; checked at assignment). Takes a and b. NULL returned, both freed:
 *   a or b NULL              no new error
 *   CT_ERR_INVALID_ARGUMENT  op is not a binary kind (ADD .. POW)
 *   CT_ERR_OUT_OF_MEMORY */
CT_NODISCARD CT_API ct_expr *ct_expr_binary(ct_expr_op op, ct_expr *a, ct_expr *b);

/* The matrix product op(a) x op(b), op transposing when asked. It can be assigned only as the
 * dot rule of ct_expr_assign says. Takes a and b; NULL returned, both freed:
 *   a or b NULL              no new error
 *   CT_ERR_OUT_OF_MEMORY */
CT_NODISCARD CT_API ct_expr *ct_expr_dot(ct_expr *a, bool transpose_a, ct_expr *b,
                                         bool transpose_b);

/* Frees the whole tree (not the tensors of its leaves). NULL: no-op. */
CT_API void ct_expr_free(ct_expr *e);

/* Evaluates e into dst in one pass over dst, with no temporary tensor.
 * - CT_SAVETO: a dst without memory or of other dims gets the broadcast dims of the leaves, and
 *   dst takes the leaves' dtype and place. The other modes (dst = dst <op> e) need dst already
 *   holding memory of the result's dtype and place, and keep dst's dims as numpy's in-place
 *   operators do: e broadcasts to them (`d /= 2` with a scalar), and an e whose dims would
 *   change them is CT_ERR_SHAPE.
 * - dst may itself be a leaf: each element of dst reads only its own position. (It then must
 *   already have the result's dims.) Any other leaf whose memory overlaps what dst is written
 *   through (dst's dims after the assignment, compared by address) is refused, unless it is
 *   the very same elements read at the same positions (same first byte and count, not
 *   broadcast).
 * - The dot rule: a dot of two 2-D tensor leaves, alone or multiplied by a scalar leaf, at the
 *   top of e with CT_SAVETO or CT_PLUSTO runs as one GEMM call: alpha the scalar (1 without
 *   one), beta 0 (SAVETO) or 1 (PLUSTO), the transposes folded into the call; float32 and
 *   float64. dst may not be one of the dot's leaves.
 * Errors (dst left exactly as it was):
 *   CT_ERR_INVALID_ARGUMENT  dst or e is NULL (the message repeats the error that made e NULL),
 *                            mode is not a ct_assign, a leaf overlaps dst's memory other
 *                            than element for element (above), or the expression has no
 *                            tensor leaf and dst no dtype
 *   CT_ERR_UNINITIALIZED     a tensor leaf (named by its dims) holds no memory, or dst holds none
 *                            with a mode other than CT_SAVETO
 *   CT_ERR_TYPE_MISMATCH     two tensor leaves (or a leaf and dst, for the modes that keep dst)
 *                            hold different dtypes or sit on different places; names both
 *   CT_ERR_SHAPE             dims that do not broadcast, an expression whose dims would change
 *                            dst's with a mode other than CT_SAVETO, a dot of leaves that are not 2-D or whose inner dims
 *                            differ; names the dims
 *   CT_ERR_UNSUPPORTED       leaves of an integer or bool dtype, a dot anywhere but under the dot
 *                            rule (or of float16 or bfloat16), or a place without an expression
 *                            engine in this build (CUDA tensors for now)
 *   CT_ERR_OUT_OF_RANGE      a tree deeper than 1000 nodes, or a leaf (or a dst written in
 *                            place: every mode but CT_SAVETO) whose dims exceed its capacity
 *   CT_ERR_READ_ONLY         dst views memory lent read-only (a DLPack import flagged so)
 *   CT_ERR_OUT_OF_MEMORY     no memory for dst (CT_SAVETO) or for the evaluation plan */
CT_API ct_status ct_expr_assign(ct_tensor *dst, ct_assign mode, const ct_expr *e);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_EXPR_H */
