/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/matmul_grad.c: matmul_grad on the CPU through corten's GEMM (ops/cpu/gemm.h), float32
 * and float64, following the forward op's plan (ct__mm_plan).
 *
 * Per batch entry, with A = op(X) [M,K], B = op(Y) [K,N] and G = Out@GRAD [M,N]:
 *   X@GRAD = G B^T [M,K], or B G^T [K,M] when X was transposed;
 *   Y@GRAD = A^T G [K,N], or G^T A [N,K] when Y was transposed.
 * An operand whose matrix serves several batch entries (broadcast batch dims, or a rank-1 or
 * unbatched operand against a batch) starts at zero and accumulates them in batch order (beta 1),
 * so the sum order is fixed whatever the thread count. When Y has no batch dims and X is neither
 * broadcast nor transposed, the batch folds into the rows as in the forward kernel: one GEMM for
 * each gradient, Y@GRAD summing over the batch inside it. */
#include <stdint.h>
#include <string.h>

#include "ops/cpu/gemm.h"
#include "ops/defs.h"

/* One GEMM of the kernel; a failure (out of memory) returns from it. */
#define MM_GEMM(GEMM, ...)                                              \
  do {                                                                  \
    if (CT__GEMM(GEMM, __VA_ARGS__) != CT_OK) return ct__gemm_fail(c);  \
  } while (0)

#define MM_GRAD_KERNEL(NAME, T, GEMM)                                                           \
  static ct_status NAME(const ct_kernel_ctx *c) {                                               \
    ct__mm_shape s;                                                                             \
    ct_status st = ct__mm_plan(c, &s);                                                          \
    if (CT__UNLIKELY(st != CT_OK)) return st;                                                   \
    const ct_tensor *xt = ct_kernel_in(c, CT__G_X, 0), *yt = ct_kernel_in(c, CT__G_Y, 0);       \
    void *dx_, *dy_;                                                                            \
    st = ct__grad_outs(c, &dx_, &dy_);                                                          \
    if (CT__UNLIKELY(st != CT_OK)) return st;                                                   \
    T *dx = dx_, *dy = dy_;                                                                     \
    const T *x = ct__k_in_data(xt), *y = ct__k_in_data(yt);                                     \
    const T *g = ct__k_in_data(ct_kernel_in(c, CT__G_DOUT, 0));                                 \
    const ct_ddim xd = xt->dims, yd = yt->dims;                                                 \
    bool tx = c->attr[CT__MM_TRANSPOSE_X].u.b && xd.rank > 1;                                   \
    bool ty = c->attr[CT__MM_TRANSPOSE_Y].u.b && yd.rank > 1;                                   \
    int64_t m = s.m, n = s.n, k = s.k;                                                          \
    if (m == 0 || n == 0 || k == 0 || s.n_batch == 0) { /* nothing reaches X or Y */            \
      if (dx != NULL) memset(dx, 0, (size_t)xt->numel * sizeof(T));                             \
      if (dy != NULL) memset(dy, 0, (size_t)yt->numel * sizeof(T));                             \
      return CT_OK;                                                                             \
    }                                                                                           \
    int64_t ldx = xd.rank > 1 ? xd.d[xd.rank - 1] : k;                                          \
    int64_t ldy = yd.rank > 1 ? yd.d[yd.rank - 1] : 1;                                          \
    bool fold = ct__mm_batch_strides_all(&s, s.by, true) &&                                     \
                !ct__mm_batch_repeats(&s, s.bx) && !tx &&                                       \
                s.n_batch <= INT64_MAX / m;                                                     \
    if (fold) {                                                                                 \
      int64_t rows = s.n_batch * m;                                                             \
      if (dx != NULL) MM_GEMM(GEMM, false, !ty, rows, k, n, 1, g, n, y, ldy, 0, dx, ldx);       \
      if (dy != NULL && !ty) {                                                                  \
        MM_GEMM(GEMM, true, false, k, n, rows, 1, x, ldx, g, n, 0, dy, ldy);                    \
      } else if (dy != NULL) {                                                                  \
        MM_GEMM(GEMM, true, false, n, k, rows, 1, g, n, x, ldx, 0, dy, ldy);                    \
      }                                                                                         \
      return CT_OK;                                                                             \
    }                                                                                           \
    bool x_sum = ct__mm_batch_repeats(&s, s.bx), y_sum = ct__mm_batch_repeats(&s, s.by);        \
    if (dx != NULL && x_sum) memset(dx, 0, (size_t)xt->numel * sizeof(T));                      \
    if (dy != NULL && y_sum) memset(dy, 0, (size_t)yt->numel * sizeof(T));                      \
    int64_t x_mat = xd.rank > 1 ? xd.d[xd.rank - 2] * xd.d[xd.rank - 1] : k;                    \
    int64_t y_mat = yd.rank > 1 ? yd.d[yd.rank - 2] * yd.d[yd.rank - 1] : k;                    \
    int64_t idx[CT_MAX_RANK] = {0};                                                             \
    for (int64_t b = 0; b < s.n_batch; b++) {                                                   \
      int64_t ox = 0, oy = 0;                                                                   \
      for (int r = 0; r < s.batch_rank; r++) {                                                  \
        ox += idx[r] * s.bx[r];                                                                 \
        oy += idx[r] * s.by[r];                                                                 \
      }                                                                                         \
      const T *xb = x + ox * x_mat, *yb = y + oy * y_mat, *gb = g + b * m * n;                  \
      if (dx != NULL && !tx) {                                                                  \
        MM_GEMM(GEMM, false, !ty, m, k, n, 1, gb, n, yb, ldy, x_sum ? 1 : 0, dx + ox * x_mat,   \
                ldx);                                                                           \
      } else if (dx != NULL) {                                                                  \
        MM_GEMM(GEMM, ty, true, k, m, n, 1, yb, ldy, gb, n, x_sum ? 1 : 0, dx + ox * x_mat,     \
                ldx);                                                                           \
      }                                                                                         \
      if (dy != NULL && !ty) {                                                                  \
        MM_GEMM(GEMM, !tx, false, k, n, m, 1, xb, ldx, gb, n, y_sum ? 1 : 0, dy + oy * y_mat,   \
                ldy);                                                                           \
      } else if (dy != NULL) {                                                                  \
        MM_GEMM(GEMM, true, tx, n, k, m, 1, gb, n, xb, ldx, y_sum ? 1 : 0, dy + oy * y_mat,     \
                ldy);                                                                           \
      }                                                                                         \
      for (int r = s.batch_rank - 1; r >= 0 && ++idx[r] == s.batch[r]; r--) idx[r] = 0;         \
    }                                                                                           \
    return CT_OK;                                                                               \
  }

MM_GRAD_KERNEL(matmul_grad_f32, float, ct__gemm_f32)
MM_GRAD_KERNEL(matmul_grad_f64, double, ct__gemm_f64)

static const ct__kernel_set kernels[] = {
    {"matmul_grad", CT__KERNELS([CT_FLOAT32] = matmul_grad_f32, [CT_FLOAT64] = matmul_grad_f64)},
};

const ct__kernel_table ct__cpu_matmul_grad = CT__TABLE(kernels);
