/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/matmul.c: matmul and matmul_fusion on the CPU through corten's GEMM (ops/cpu/gemm.h),
 * following the plan of ops/defs/matmul.c (ct__mm_plan). When Y has no batch dims and X is not
 * transposed, the batch folds into one GEMM of (batch x M) rows; matmul_fusion's epilogue (+ Bias
 * per column or one for all, then relu or clip) then runs in that GEMM's tiles as they are
 * stored, else in one pass over Out after the products. Either way each step rounds as the
 * separate elementwise_add, relu and clip do (docs/design/passes.md). */
#include <stdint.h>
#include <string.h>

#include "ops/cpu/gemm.h"
#include "ops/cpu/parallel.h"
#include "ops/defs.h"

typedef ct__mm_shape mm_shape; /* ops/defs.h: every backend plans alike */

/* The tag of matmul's kept Y (ct__gemm_kept: Y packed as the GEMM's B when it is a constant). */
#define MM_PACK_TAG ((uint64_t)3 << 32)

/* matmul_fusion's epilogue: Bias's data (NULL: none) and its count (1, or Out's last dim n), the
 * activation (CT__EPI_*) and clip's bounds as given (double). */
typedef struct mm_epi {
  const void *bias;
  int64_t bias_n;
  int act;
  double lo, hi;
} mm_epi;

/* The epilogue pass over Out, rows [b, e) of n values: v + bias, then relu as `v < 0 ? 0 : v`
 * or clip in double against the double bounds (the clip op's arithmetic), in the dtype. */
typedef struct epi_job {
  void *o;
  int64_t n;
  const mm_epi *e;
} epi_job;

#define EPI_ROWS(T, SFX)                                                        \
  static void epi_rows_##SFX(void *arg, int64_t b, int64_t e) {                \
    const epi_job *j = arg;                                                    \
    const mm_epi *ep = j->e;                                                   \
    const T *bias = ep->bias;                                                  \
    for (int64_t r = b; r < e; r++) {                                          \
      T *v = (T *)j->o + r * j->n;                                             \
      if (bias != NULL && ep->bias_n == 1) {                                   \
        for (int64_t q = 0; q < j->n; q++) v[q] = v[q] + bias[0];              \
      } else if (bias != NULL) {                                               \
        for (int64_t q = 0; q < j->n; q++) v[q] = v[q] + bias[q];              \
      }                                                                        \
      if (ep->act == CT__EPI_RELU) {                                           \
        for (int64_t q = 0; q < j->n; q++) v[q] = v[q] < 0 ? (T)0 : v[q];      \
      } else if (ep->act == CT__EPI_CLAMP) {                                   \
        for (int64_t q = 0; q < j->n; q++) {                                   \
          double d = (double)v[q];                                             \
          d = d < ep->lo ? ep->lo : d;                                         \
          d = d > ep->hi ? ep->hi : d;                                         \
          v[q] = (T)d;                                                         \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }
EPI_ROWS(float, f32)
EPI_ROWS(double, f64)

/* matmul with epilogue e (NULL: plain matmul): the products (NAME##_products), then the
 * epilogue over Out where the products' tiles did not run it. */
#define MM_KERNEL(NAME, T, SFX)                                                               \
  static ct_status NAME##_run(const ct_kernel_ctx *c, const mm_epi *e) {                     \
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
    bool epi_after = e != NULL;                                                               \
    if (k == 0) {                                                                             \
      for (int64_t i = 0; i < s.n_batch * m * n; i++) o[i] = 0;                               \
    } else {                                                                                  \
      st = NAME##_products(c, &s, o, x, y, xd, yd, tx, ty, e, &epi_after);                    \
      if (st != CT_OK) return st;                                                             \
    }                                                                                         \
    if (epi_after) {                                                                          \
      epi_job j = {.o = o, .n = n, .e = e};                                                   \
      ct__parallel_for(s.n_batch * m, CT__GRAIN_MEM / n + 1, epi_rows_##SFX, &j);             \
    }                                                                                         \
    return CT_OK;                                                                             \
  }
/* Whether the folded product reads its A's rows where they lie (ct__gemm.a_in_place: X's; a
 * transposed Y's where the GEMM's plan swaps the product) rather than packing them: for at
 * most 64 columns (two of the AVX-512 kernel's slivers, over which a packing would be used
 * twice at most), an A of at most 512 KiB (one that the op before has just written, in L2),
 * rows not a multiple of 4 KiB apart (12 rows in one set of L1). The attention's [1024, 64] x
 * [64, 64] projections 54-55 -> 47-49 us alone (one thread, the packing 15 % of the call by
 * perf). At batch 8 (2 MiB of A, from L3) two threads read it slower in place (267-338 ->
 * 327-351 us a projection in the model). Where many slivers share each packed block, packing
 * stays faster ([4096, 512] x [512, 512] 5.8 -> 7.2 ms on two threads in place; [300, 768] x
 * [768, 768] 1.93 -> 2.01 on one). The same sums either way. */
static bool mm_a_in_place(int64_t n, int64_t m, int64_t lda, size_t es) {
  return n <= 64 && m <= ((int64_t)512 << 10) / (lda * (int64_t)es) &&
         (lda * (int64_t)es) % 4096 != 0;
}

/* Calls GEMM once for all when the batch folds into the rows (then with Y packed once when it
 * is a constant, and the epilogue e in its tiles where its clip bounds are values of T: then
 * *epi_after false), the batched GEMM when every entry has its own X and Y (no broadcast), else
 * once per batch entry. */
#define MM_PRODUCTS(NAME, T, GEMM, BATCHED, SFX)                                              \
  static ct_status NAME##_products(const ct_kernel_ctx *c, const mm_shape *sp, T *o,         \
                                   const T *x, const T *y, ct_ddim xd, ct_ddim yd, bool tx,   \
                                   bool ty, const mm_epi *e, bool *epi_after) {               \
    const mm_shape s = *sp;                                                                   \
    int64_t m = s.m, n = s.n, k = s.k;                                                        \
    ct_status st;                                                                             \
    int64_t lda = xd.rank > 1 ? xd.d[xd.rank - 1] : k;                                        \
    int64_t ldb = yd.rank > 1 ? yd.d[yd.rank - 1] : 1;                                        \
    int64_t x_mat = xd.rank > 1 ? xd.d[xd.rank - 2] * xd.d[xd.rank - 1] : k;                  \
    int64_t y_mat = yd.rank > 1 ? yd.d[yd.rank - 2] * yd.d[yd.rank - 1] : k;                  \
    bool y_shared = ct__mm_batch_strides_all(&s, s.by, true);                                 \
    bool x_full = !ct__mm_batch_repeats(&s, s.bx); /* a batch of one too */                   \
    if (y_shared && x_full && !tx && s.n_batch <= INT64_MAX / m) {                            \
      ct__gemm g = {.tb = ty, .m = s.n_batch * m, .n = n, .k = k, .alpha = 1, .a = x,        \
                    .lda = lda, .b = y, .ldb = ldb, .c = o, .ldc = n,                         \
                    .a_in_place = mm_a_in_place(n, s.n_batch * m, lda, sizeof(T))};          \
      ct__gemm_epi ge;                                                                        \
      if (e != NULL && (e->act != CT__EPI_CLAMP ||                                            \
                        ((double)(T)e->lo == e->lo && (double)(T)e->hi == e->hi))) {          \
        /* a bias per column is a residual row every row shares (ldr 0) */                   \
        bool one = e->bias_n == 1;                                                            \
        ge = (ct__gemm_epi){.bias = one ? e->bias : NULL, .bias_inc = 0,                      \
                            .res = one ? NULL : e->bias, .ldr = 0, .act = e->act,             \
                            .lo = e->lo, .hi = e->hi};                                        \
        g.epi = &ge;                                                                          \
        *epi_after = false;                                                                   \
      }                                                                                       \
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

MM_PRODUCTS(matmul_f32, float, ct__gemm_f32, ct__gemm_batched_f32, f32)
MM_PRODUCTS(matmul_f64, double, ct__gemm_f64, ct__gemm_batched_f64, f64)
MM_KERNEL(matmul_f32, float, f32)
MM_KERNEL(matmul_f64, double, f64)

static ct_status matmul_f32(const ct_kernel_ctx *c) { return matmul_f32_run(c, NULL); }
static ct_status matmul_f64(const ct_kernel_ctx *c) { return matmul_f64_run(c, NULL); }

/* matmul_fusion's epilogue from its inputs and attributes (checked by its infer_shape). */
static mm_epi fusion_epi(const ct_kernel_ctx *c) {
  mm_epi e = {.lo = c->attr[CT__MMF_CLIP_MIN].u.f,
              .hi = c->attr[CT__MMF_CLIP_MAX].u.f};
  if (ct_kernel_in_count(c, CT__MMF_BIAS) > 0) {
    const ct_tensor *b = ct_kernel_in(c, CT__MMF_BIAS, 0);
    e.bias = ct__k_in_data(b);
    e.bias_n = b->numel;
  }
  e.act = ct__epi_act(c->attr[CT__MMF_ACTIVATION].u.s);
  return e;
}

static ct_status matmul_fusion_f32(const ct_kernel_ctx *c) {
  mm_epi e = fusion_epi(c);
  return matmul_f32_run(c, &e);
}
static ct_status matmul_fusion_f64(const ct_kernel_ctx *c) {
  mm_epi e = fusion_epi(c);
  return matmul_f64_run(c, &e);
}

static const ct__kernel_set kernels[] = {
    {"matmul", CT__KERNELS([CT_FLOAT32] = matmul_f32, [CT_FLOAT64] = matmul_f64)},
    {"matmul_fusion",
     CT__KERNELS([CT_FLOAT32] = matmul_fusion_f32, [CT_FLOAT64] = matmul_fusion_f64)},
};

const ct__kernel_table ct__cpu_matmul = CT__TABLE(kernels);
