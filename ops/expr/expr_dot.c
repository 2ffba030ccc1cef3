/* SPDX-License-Identifier: Apache-2.0 */
/* ops/expr/expr_dot.c: the dot rule of ct_expr_assign. dst = alpha op(a) op(b) (CT_SAVETO) or
 * dst += alpha op(a) op(b) (CT_PLUSTO) as one GEMM call of dst's engine: alpha the scalar,
 * beta 0 or 1, the transposes passed to the call rather than materialised. */
#include "ops/expr/expr_impl.h"

#include "tensor/tensor_impl.h"

static ct_status operand(const ct_expr *x, const char *which, const ct_tensor *first) {
  if (x->kind != CT__EXPR_TENSOR) {
    return ct__error(CT_ERR_UNSUPPORTED,
                     "ct_expr_assign: the %s operand of a dot is not a tensor leaf; a dot runs "
                     "over two 2-D tensor leaves (assign the operand into a tensor first)",
                     which);
  }
  ct_status st = ct__expr_check_leaf(first, x->t);
  if (st != CT_OK) return st;
  if (x->t->dims.rank != 2) {
    char b[CT__DDIM_STR_CAP];
    return ct__error(CT_ERR_SHAPE,
                     "ct_expr_assign: the %s operand of a dot has dims %s; a dot takes 2-D "
                     "tensors (reshape it, or use the matmul op for batches)",
                     which, ct__expr_dims_s(x->t->dims, b));
  }
  return CT_OK;
}

ct_status ct__expr_assign_dot(ct_tensor *dst, ct_assign mode, const ct_expr *d, double alpha) {
  ct_status st = operand(d->a, "first", NULL);
  if (st == CT_OK) st = operand(d->b, "second", d->a->t);
  if (st != CT_OK) return st;
  const ct_tensor *a = d->a->t, *b = d->b->t;
  if (a->dtype != CT_FLOAT32 && a->dtype != CT_FLOAT64) {
    return ct__error(CT_ERR_UNSUPPORTED,
                     "ct_expr_assign: a dot of %s tensors: the dot rule runs float32 and float64 "
                     "(cast the operands)", ct_dtype_name(a->dtype));
  }
  int64_t m = d->ta ? a->dims.d[1] : a->dims.d[0], k = d->ta ? a->dims.d[0] : a->dims.d[1];
  int64_t kb = d->tb ? b->dims.d[1] : b->dims.d[0], n = d->tb ? b->dims.d[0] : b->dims.d[1];
  if (k != kb) {
    char s1[CT__DDIM_STR_CAP], s2[CT__DDIM_STR_CAP];
    return ct__error(CT_ERR_SHAPE,
                     "ct_expr_assign: dot of %s%s and %s%s: the inner dims differ (%lld against "
                     "%lld)", ct__expr_dims_s(a->dims, s1), d->ta ? " transposed" : "",
                     ct__expr_dims_s(b->dims, s2), d->tb ? " transposed" : "", (long long)k,
                     (long long)kb);
  }
  /* dst's span as the result's m x n elements, by address, when they fit its memory (a larger
   * result goes to a new block). */
  size_t es = ct_dtype_size(a->dtype), d_bytes = (size_t)(m * n) * es;
  bool in_place = d_bytes <= ct_tensor_capacity(dst);
  if (dst == a || dst == b || ct_tensor_shares_memory(dst, a) ||
      ct_tensor_shares_memory(dst, b) ||
      (in_place && (ct__tensor_spans_overlap(dst, d_bytes, a, (size_t)a->numel * es) ||
                    ct__tensor_spans_overlap(dst, d_bytes, b, (size_t)b->numel * es)))) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_expr_assign: dst views the memory of an operand of the dot, which GEMM "
                     "cannot write over while reading: assign into another tensor");
  }
  ct_place pl = ct_tensor_place(a);
  const ct__expr_engine *eng = ct__expr_engine_for(pl);
  if (eng == NULL) return ct_last_status();
  if (eng->gemm == NULL) {
    char p[CT__PLACE_STR_CAP];
    return ct__error(CT_ERR_UNSUPPORTED, "ct_expr_assign: no GEMM for the dot rule on %s",
                     ct__expr_place_s(pl, p));
  }
  void *data;
  ct_ddim out = {.rank = 2, .d = {m, n}};
  st = ct__expr_prepare_dst(dst, mode, out, a->dtype, pl, false, &data);
  if (st != CT_OK) return st;
  ct__expr_gemm g = {.dtype = a->dtype, .ta = d->ta, .tb = d->tb, .m = m, .n = n, .k = k,
                     .alpha = alpha, .beta = mode == CT_PLUSTO ? 1 : 0,
                     .a = ct__tensor_ptr(a), .b = ct__tensor_ptr(b),
                     .lda = a->dims.d[1], .ldb = b->dims.d[1], .c = data};
  return eng->gemm(&g);
}
