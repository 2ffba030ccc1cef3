/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/matmul.c: matmul on the CPU through corten's GEMM (ops/cpu/gemm.h), following the
 * plan of ops/defs/matmul.c (ct__mm_plan). When Y has no batch dims and X is not transposed, the
 * batch folds into one GEMM of (batch x M) rows. */
#include <stdint.h>

#include "ops/cpu/gemm.h"
#include "ops/defs.h"

typedef ct__mm_shape mm_shape; /* ops/defs.h: every backend plans alike */

/* The tag of matmul's kept Y (ct__gemm_kept: Y packed as the GEMM's B when it is a constant). */
#define MM_PACK_TAG ((uint64_t)3 << 32)

/* Calls GEMM once for all when the batch folds into the rows (then with Y packed once when it
 * is a constant), the batched GEMM when every entry has its own X and Y (no broadcast), else
 * once per batch entry. */
#define MM_KERNEL(NAME, T, GEMM, BATCHED, SFX)                                                \
  static ct_status NAME(const ct_kernel_ctx *c) {                                             \
    mm_shape s;                                                                               \
    ct_status st = ct__mm_plan(c, &s);                                                        \
    if (CT__UNLIKELY(st != CT_OK)) return st;                                                 \
    T *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);                                           \
    if (CT__UNLIKELY(o == NULL)) return ct_last_status();                                     \
    const T *x = ct__k_in_data(ct_kernel_in(c, CT__IN_X, 0));                                 \
    const T *y = ct__k_in_data(ct_kernel_in(c, CT__IN_Y, 0));                                 \
    const ct_ddim xd = ct_kernel_in(c, CT__IN_X, 0)->dims;                                    \
    const ct_ddim yd = ct_kernel_in(c, CT__IN_Y, 0)->dims;                                    \
    bool tx = c->attr[CT__MM_TRANSPOSE_X].u.b && xd.rank > 1;                                 \
    bool ty = c->attr[CT__MM_TRANSPOSE_Y].u.b && yd.rank > 1;                                 \
    int64_t m = s.m, n = s.n, k = s.k;                                                        \
    if (m == 0 || n == 0 || s.n_batch == 0) return CT_OK;                                     \
    if (k == 0) {                                                                             \
      for (int64_t i = 0; i < s.n_batch * m * n; i++) o[i] = 0;                               \
      return CT_OK;                                                                           \
    }                                                                                         \
    int64_t lda = xd.rank > 1 ? xd.d[xd.rank - 1] : k;                                        \
    int64_t ldb = yd.rank > 1 ? yd.d[yd.rank - 1] : 1;                                        \
    int64_t x_mat = xd.rank > 1 ? xd.d[xd.rank - 2] * xd.d[xd.rank - 1] : k;                  \
    int64_t y_mat = yd.rank > 1 ? yd.d[yd.rank - 2] * yd.d[yd.rank - 1] : k;                  \
    bool y_shared = ct__mm_batch_strides_all(&s, s.by, true);                                 \
    bool x_full = ct__mm_batch_strides_all(&s, s.bx, false);                                  \
    if (y_shared && x_full && !tx && s.n_batch <= INT64_MAX / m) {                            \
      ct__gemm g = {.tb = ty, .m = s.n_batch * m, .n = n, .k = k, .alpha = 1, .a = x,        \
                    .lda = lda, .b = y, .ldb = ldb, .c = o, .ldc = n};                        \
      int64_t elems_;                                                                         \
      g.b_packed = ct__gemm_kept_##SFX(c, CT__IN_Y, 0, MM_PACK_TAG, &g, 1, 1, 0, &elems_,      \
                                       &g.b_packed_w);                                        \
      st = GEMM(&g);                                                                          \
      return st == CT_OK ? CT_OK : ct__gemm_fail(c);                                          \
    }                                                                                         \
    if (x_full && ct__mm_batch_strides_all(&s, s.by, false)) { /* no broadcast: one stride */ \
      st = BATCHED(&(ct__gemm){.ta = tx, .tb = ty, .m = m, .n = n, .k = k, .alpha = 1,       \
                               .a = x, .lda = lda, .b = y, .ldb = ldb, .c = o, .ldc = n},     \
                   s.n_batch, x_mat, y_mat, m * n);                                           \
      return st == CT_OK ? CT_OK : ct__gemm_fail(c);                                          \
    }                                                                                         \
    int64_t idx[CT_MAX_RANK] = {0};                                                           \
    for (int64_t b = 0; b < s.n_batch; b++) {                                                 \
      int64_t ox = 0, oy = 0;                                                                 \
      for (int r = 0; r < s.batch_rank; r++) {                                                \
        ox += idx[r] * s.bx[r];                                                               \
        oy += idx[r] * s.by[r];                                                               \
      }                                                                                       \
      st = CT__GEMM(GEMM, tx, ty, m, n, k, 1, x + ox * x_mat, lda, y + oy * y_mat, ldb, 0,    \
                    o + b * m * n, n);                                                        \
      if (st != CT_OK) return ct__gemm_fail(c);                                               \
      for (int r = s.batch_rank - 1; r >= 0 && ++idx[r] == s.batch[r]; r--) idx[r] = 0;       \
    }                                                                                         \
    return CT_OK;                                                                             \
  }

MM_KERNEL(matmul_f32, float, ct__gemm_f32, ct__gemm_batched_f32, f32)
MM_KERNEL(matmul_f64, double, ct__gemm_f64, ct__gemm_batched_f64, f64)

static const ct__kernel_set kernels[] = {
    {"matmul", CT__KERNELS([CT_FLOAT32] = matmul_f32, [CT_FLOAT64] = matmul_f64)},
};

const ct__kernel_table ct__cpu_matmul = CT__TABLE(kernels);
