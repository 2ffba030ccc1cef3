/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/matmul_grad.c: the CUDA kernel of matmul_grad, float32, through the cuBLAS that
 * ops/cuda/matmul.c loads (ct__cu_sgemm), following the forward op's plan (ct__mm_plan) and the
 * CPU kernel's GEMMs (ops/cpu/matmul_grad.c) one for one.
 *
 * Per batch entry, with A = op(X) [M,K], B = op(Y) [K,N] and G = Out@GRAD [M,N]:
 *   X@GRAD = G B^T [M,K], or B G^T [K,M] when X was transposed;
 *   Y@GRAD = A^T G [K,N], or G^T A [N,K] when Y was transposed.
 * An operand whose matrix serves several batch entries starts at zero and accumulates them in
 * batch order (beta 1). When Y has no batch dims and X is neither broadcast nor transposed, the
 * batch folds into the rows: one GEMM for each gradient. cuBLAS sums in its own order, so the
 * results agree with the CPU's within float32 rounding, not bit for bit. */
#include <limits.h>

#include "ops/defs.h"

#include "ops/cuda/cuda_kernels.h"
#include "ops/cuda/launch.h"

/* Zeros the n_a bytes at a and the n_b bytes at b (either NULL or 0: skipped). */
static ct_status zeros(const ct_kernel_ctx *c, void *a, size_t n_a, void *b, size_t n_b) {
  if ((a == NULL || n_a == 0) && (b == NULL || n_b == 0)) return CT_OK;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = cudaSuccess;
  if (a != NULL && n_a > 0) e = cudaMemsetAsync(a, 0, n_a, l.stream);
  if (e == cudaSuccess && b != NULL && n_b > 0) e = cudaMemsetAsync(b, 0, n_b, l.stream);
  return ct__cu_leave(c, &l, e, "cudaMemsetAsync");
}

/* The operands of one matmul_grad, for the GEMM steps below. */
typedef struct mm_grad {
  const ct_kernel_ctx *c;
  ct__mm_shape s;
  bool tx, ty;
  int64_t ldx, ldy, x_mat, y_mat;
  const float *x, *y, *g;
  float *dx, *dy;
} mm_grad;

/* The batch folded into the rows: X@GRAD [B M, K] and Y@GRAD summed inside one GEMM each. */
static ct_status folded(const mm_grad *p) {
  const ct_kernel_ctx *c = p->c;
  int64_t rows = p->s.n_batch * p->s.m, n = p->s.n, k = p->s.k;
  ct_status st = CT_OK;
  if (p->dx != NULL) {
    st = ct__cu_sgemm(c, false, !p->ty, rows, k, n, p->g, n, p->y, p->ldy, 0, p->dx, p->ldx);
  }
  if (st == CT_OK && p->dy != NULL && !p->ty) {
    st = ct__cu_sgemm(c, true, false, k, n, rows, p->x, p->ldx, p->g, n, 0, p->dy, p->ldy);
  } else if (st == CT_OK && p->dy != NULL) {
    st = ct__cu_sgemm(c, true, false, n, k, rows, p->g, n, p->x, p->ldx, 0, p->dy, p->ldy);
  }
  return st;
}

/* One GEMM per gradient and batch entry, beta 1 into an operand's matrix that several entries
 * share (x_sum, y_sum: zeroed before). */
static ct_status per_batch(const mm_grad *p, bool x_sum, bool y_sum) {
  const ct_kernel_ctx *c = p->c;
  const ct__mm_shape *s = &p->s;
  int64_t m = s->m, n = s->n, k = s->k, idx[CT_MAX_RANK] = {0};
  float bx = x_sum ? 1.0f : 0.0f, by = y_sum ? 1.0f : 0.0f;
  ct_status st = CT_OK;
  for (int64_t b = 0; b < s->n_batch && st == CT_OK; b++) {
    int64_t ox = 0, oy = 0;
    for (int r = 0; r < s->batch_rank; r++) {
      ox += idx[r] * s->bx[r];
      oy += idx[r] * s->by[r];
    }
    const float *xb = p->x + ox * p->x_mat, *yb = p->y + oy * p->y_mat, *gb = p->g + b * m * n;
    float *dxb = p->dx == NULL ? NULL : p->dx + ox * p->x_mat;
    float *dyb = p->dy == NULL ? NULL : p->dy + oy * p->y_mat;
    if (dxb != NULL && !p->tx) {
      st = ct__cu_sgemm(c, false, !p->ty, m, k, n, gb, n, yb, p->ldy, bx, dxb, p->ldx);
    } else if (dxb != NULL) {
      st = ct__cu_sgemm(c, p->ty, true, k, m, n, yb, p->ldy, gb, n, bx, dxb, p->ldx);
    }
    if (st == CT_OK && dyb != NULL && !p->ty) {
      st = ct__cu_sgemm(c, !p->tx, false, k, n, m, xb, p->ldx, gb, n, by, dyb, p->ldy);
    } else if (st == CT_OK && dyb != NULL) {
      st = ct__cu_sgemm(c, true, p->tx, n, k, m, gb, n, xb, p->ldx, by, dyb, p->ldy);
    }
    for (int r = s->batch_rank - 1; r >= 0 && ++idx[r] == s->batch[r]; r--) idx[r] = 0;
  }
  return st;
}

static ct_status matmul_grad_cu(const ct_kernel_ctx *c) {
  mm_grad p = {.c = c};
  ct_status st = ct__mm_plan(c, &p.s);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  const ct_tensor *xt = ct_kernel_in(c, CT__G_X, 0), *yt = ct_kernel_in(c, CT__G_Y, 0);
  void *dx, *dy;
  st = ct__grad_outs(c, &dx, &dy);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  p.dx = dx;
  p.dy = dy;
  p.x = ct__k_in_data(xt);
  p.y = ct__k_in_data(yt);
  p.g = ct__k_in_data(ct_kernel_in(c, CT__G_DOUT, 0));
  const ct_ddim xd = xt->dims, yd = yt->dims;
  const ct__mm_shape *s = &p.s;
  p.tx = c->attr[CT__MM_TRANSPOSE_X].u.b && xd.rank > 1;
  p.ty = c->attr[CT__MM_TRANSPOSE_Y].u.b && yd.rank > 1;
  size_t nx = (size_t)xt->numel * sizeof(float), ny = (size_t)yt->numel * sizeof(float);
  if (s->m == 0 || s->n == 0 || s->k == 0 || s->n_batch == 0) { /* nothing reaches X or Y */
    return zeros(c, dx, nx, dy, ny);
  }
  p.ldx = xd.rank > 1 ? xd.d[xd.rank - 1] : s->k;
  p.ldy = yd.rank > 1 ? yd.d[yd.rank - 1] : 1;
  p.x_mat = xd.rank > 1 ? xd.d[xd.rank - 2] * xd.d[xd.rank - 1] : s->k;
  p.y_mat = yd.rank > 1 ? yd.d[yd.rank - 2] * yd.d[yd.rank - 1] : s->k;
  bool fold = ct__mm_batch_strides_all(s, s->by, true) && !ct__mm_batch_repeats(s, s->bx) &&
              !p.tx && s->n_batch <= INT_MAX / s->m;
  bool x_sum = !fold && ct__mm_batch_repeats(s, s->bx);
  bool y_sum = !fold && ct__mm_batch_repeats(s, s->by);
  st = zeros(c, x_sum ? dx : NULL, nx, y_sum ? dy : NULL, ny);
  if (st != CT_OK) return st;
  ct__cu_launch l;
  st = ct__cu_blas_begin(c, &l);
  if (st != CT_OK) return st;
  st = fold ? folded(&p) : per_batch(&p, x_sum, y_sum);
  ct__cu_blas_end(&l);
  return st;
}

/* ---- The kernel table ------------------------------------------------------------------------ */

static const ct__kernel_set kernels[] = {
    {"matmul_grad", CT__KERNELS([CT_FLOAT32] = matmul_grad_cu)},
};

const ct__kernel_table ct__cuda_matmul_grad = CT__TABLE(kernels);
