/* SPDX-License-Identifier: Apache-2.0 */
/* ops/expr/expr.c: building and freeing expression trees (corten/expr.h). Building computes and
 * checks nothing about tensors; ops/expr/expr_assign.c does that at assignment. */
#include <stdlib.h>

#include "ops/expr/expr_impl.h"

#include "common/alloc.h"

static ct_expr *node_new(ct__expr_kind kind) {
  ct_expr *e = ct__zalloc(sizeof *e);
  if (CT__UNLIKELY(e == NULL)) {
    return ct__error_null(CT_ERR_OUT_OF_MEMORY, "ct_expr: no memory for an expression node");
  }
  e->kind = kind;
  return e;
}

ct_expr *ct_expr_tensor(const ct_tensor *t) {
  if (t == NULL) {
    return ct__error_null(CT_ERR_INVALID_ARGUMENT,
                          "ct_expr_tensor: the tensor is NULL: pass the tensor the leaf reads");
  }
  ct_expr *e = node_new(CT__EXPR_TENSOR);
  if (e != NULL) e->t = t;
  return e;
}

ct_expr *ct_expr_scalar(double v) {
  ct_expr *e = node_new(CT__EXPR_SCALAR);
  if (e != NULL) e->v = v;
  return e;
}

/* Frees an operand a failing constructor was given, unless it is already another node's
 * operand (that node owns it and frees it). */
static void drop(ct_expr *x) {
  if (x != NULL && !x->has_parent) ct_expr_free(x);
}

/* A node over a and b (b NULL for a unary one) that owns them from here on, whatever happens. */
static ct_expr *inner_new(ct__expr_kind kind, ct_expr_op op, ct_expr *a, ct_expr *b, bool unary,
                          const char *what, bool own_kinds) {
  if (a == NULL || (!unary && b == NULL)) { /* an operand failed: its error stays */
    drop(a);
    drop(b);
    return NULL;
  }
  bool same = a == b;
  if (same || a->has_parent || (b != NULL && b->has_parent)) {
    /* A tree: each node has one parent. Sharing a node would free it twice. */
    drop(a);
    if (!same) drop(b);
    return ct__error_null(CT_ERR_INVALID_ARGUMENT,
                          "%s: an operand is already an operand (of this node or of another), "
                          "and a node can have only one parent: build it twice (e.g. two "
                          "ct_expr_tensor leaves of one tensor)",
                          what);
  }
  if (kind != CT__EXPR_DOT && !(unary ? ct__expr_op_unary(op) : ct__expr_op_binary(op)) &&
      !(own_kinds && op == CT__EXPR_RELU_GRAD)) {
    ct_expr_free(a);
    ct_expr_free(b);
    return ct__error_null(CT_ERR_INVALID_ARGUMENT,
                          "%s: op %d is not a %s kind (%s); the operands were freed", what,
                          (int)op, unary ? "unary" : "binary",
                          unary ? "CT_EXPR_NEG .. CT_EXPR_ERF" : "CT_EXPR_ADD .. CT_EXPR_POW");
  }
  ct_expr *e = node_new(kind);
  if (e == NULL) {
    ct_expr_free(a);
    ct_expr_free(b);
    return NULL;
  }
  e->op = op;
  e->a = a;
  e->b = b;
  a->has_parent = true;
  if (b != NULL) b->has_parent = true;
  return e;
}

ct_expr *ct_expr_unary(ct_expr_op op, ct_expr *a) {
  return inner_new(CT__EXPR_UNARY, op, a, NULL, true, "ct_expr_unary", false);
}

ct_expr *ct_expr_binary(ct_expr_op op, ct_expr *a, ct_expr *b) {
  return inner_new(CT__EXPR_BINARY, op, a, b, false, "ct_expr_binary", false);
}

ct_expr *ct__expr_binary_any(ct_expr_op op, ct_expr *a, ct_expr *b) {
  return inner_new(CT__EXPR_BINARY, op, a, b, false, "ct_expr_binary", true);
}

ct_expr *ct_expr_dot(ct_expr *a, bool transpose_a, ct_expr *b, bool transpose_b) {
  ct_expr *e = inner_new(CT__EXPR_DOT, (ct_expr_op)0, a, b, false, "ct_expr_dot", false);
  if (e != NULL) {
    e->ta = transpose_a;
    e->tb = transpose_b;
  }
  return e;
}

/* Without recursion, so a tree of any depth goes: while the node has a left operand, rotate it
 * up (the node becomes its left operand's right one); a node without one is freed and its right
 * operand comes next. */
void ct_expr_free(ct_expr *e) {
  while (e != NULL) {
    ct_expr *l = e->a;
    if (l == NULL) {
      ct_expr *next = e->b;
      ct__free_sized(e, sizeof *e);
      e = next;
    } else {
      e->a = l->b;
      l->b = e;
      e = l;
    }
  }
}
