/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/reduce_grad.c: the CPU kernels of the reduce family's gradients (ops/defs/
 * reduce_grad.c), float32 and float64.
 *
 * mean_grad spreads Out@GRAD / numel over X. reduce_sum_grad copies each element of Out@GRAD to
 * the elements of X it summed, gathering along the broadcast plan of Out@GRAD's dims (the summed
 * dims kept as 1) to X's. softmax_grad takes, along the axis, the sum of Out@GRAD x Out in
 * double and in element order, so each row's result does not depend on the thread count. */
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/parallel.h"
#include "ops/defs.h"

enum { IN_A = 0, IN_DOUT = 1 }; /* X or Out, then Out@GRAD */

/* ---- mean_grad: X@GRAD = Out@GRAD / numel(X) ------------------------------------------------- */

/* mean_grad's fill, split by ct__parallel_for: the value (in double, exact for either dtype) and
 * X@GRAD. */
typedef struct fill_job {
  double v;
  void *dx;
} fill_job;

#define MEAN_GRAD_KERNEL(NAME, T)                                              \
  static void NAME##_fill(void *arg, int64_t b, int64_t e) {                   \
    const fill_job *j = arg;                                                   \
    T v = (T)j->v, *dx = j->dx;                                                \
    CT__SIMD for (int64_t i = b; i < e; i++) dx[i] = v;                        \
  }                                                                            \
  static ct_status NAME(const ct_kernel_ctx *c) {                              \
    int64_t n = ct_kernel_in(c, IN_A, 0)->numel;                               \
    T *dx = ct__k_out_data(c, CT__G_DX, 0, c->dtype);                          \
    if (CT__UNLIKELY(dx == NULL)) return ct_last_status();                     \
    if (n == 0) return CT_OK;                                                  \
    const T *g = ct__k_in_data(ct_kernel_in(c, IN_DOUT, 0));                   \
    fill_job j = {(T)((double)g[0] / (double)n), dx};                          \
    ct__parallel_for(n, CT__GRAIN_MEM, NAME##_fill, &j);                       \
    return CT_OK;                                                              \
  }

MEAN_GRAD_KERNEL(mean_grad_f32, float)
MEAN_GRAD_KERNEL(mean_grad_f64, double)

/* ---- reduce_sum_grad(dim, keep_dim): Out@GRAD broadcast back over X ------------------------ */

/* One function for float32 and float64 (the dtypes registered): elements move by their size. */
static ct_status rs_grad_any(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, IN_A, 0), *gt = ct_kernel_in(c, IN_DOUT, 0);
  bool red[CT_MAX_RANK];
  ct_status s = ct__rs_dims(c, xt->dims.rank, red);
  if (CT__UNLIKELY(s != CT_OK)) return s;
  void *dx = ct__k_out_data(c, CT__G_DX, 0, c->dtype);
  if (CT__UNLIKELY(dx == NULL)) return ct_last_status();
  if (xt->numel == 0) return CT_OK;
  ct_ddim kept = xt->dims; /* Out@GRAD's dims as if keep_dim were set */
  for (int k = 0; k < kept.rank; k++) {
    if (red[k]) kept.d[k] = 1;
  }
  ct__bcast_plan b;
  ct__plan_bcast(kept, kept, xt->dims, &b);
  ct__tr_plan p = {.rank = b.rank};
  for (int k = 0; k < b.rank; k++) {
    p.d[k] = b.d[k];
    p.is[k] = b.sx[k];
  }
  ct__cpu_gather(dx, ct__k_in_data(gt), ct_dtype_size(c->dtype), &p);
  return CT_OK;
}

/* ---- softmax_grad(axis): X@GRAD = Out (Out@GRAD - sum(Out@GRAD Out) along axis) ------------ */

/* Out seen as [outer, n, inner] around the axis, as in the forward kernel: the rows (n elements
 * inner apart) are taken SM_COLS at a time so that each pass walks contiguous memory; the blocks
 * of rows are split by ct__parallel_for (each row computed whole by one thread). */
#define SM_COLS 64
typedef struct smg_job {
  const void *o, *g;
  void *dx;
  int64_t n, inner, blocks; /* blocks: of SM_COLS rows per outer index */
} smg_job;

#define SM_GRAD_KERNEL(NAME, T)                                                                 \
  static void NAME##_range(void *arg, int64_t first, int64_t last) {                            \
    const smg_job *jb = arg;                                                                    \
    int64_t n = jb->n, inner = jb->inner;                                                       \
    for (int64_t q = first; q < last; q++) {                                                    \
      int64_t a = q / jb->blocks, b0 = q % jb->blocks * SM_COLS;                                \
      int64_t w = inner - b0 < SM_COLS ? inner - b0 : SM_COLS, base = a * n * inner + b0;       \
      const T *o = (const T *)jb->o + base, *g = (const T *)jb->g + base;                       \
      T *dx = (T *)jb->dx + base;                                                               \
      double dot[SM_COLS] = {0};                                                                \
      for (int64_t i = 0; i < n; i++) {                                                         \
        const T *orow = o + i * inner, *grow = g + i * inner;                                   \
        for (int64_t j = 0; j < w; j++) dot[j] += (double)grow[j] * (double)orow[j];            \
      }                                                                                         \
      for (int64_t i = 0; i < n; i++) {                                                         \
        const T *orow = o + i * inner, *grow = g + i * inner;                                   \
        T *drow = dx + i * inner;                                                               \
        CT__SIMD for (int64_t j = 0; j < w; j++) {                                              \
          drow[j] = (T)((double)orow[j] * ((double)grow[j] - dot[j]));                          \
        }                                                                                       \
      }                                                                                         \
    }                                                                                           \
  }                                                                                             \
  static ct_status NAME(const ct_kernel_ctx *c) {                                               \
    const ct_tensor *ot = ct_kernel_in(c, IN_A, 0);                                             \
    int axis;                                                                                   \
    ct_status s = ct__k_axis(c, "axis", c->attr[CT__SOFTMAX_AXIS].u.i, ot->dims.rank, &axis);   \
    if (CT__UNLIKELY(s != CT_OK)) return s;                                                     \
    T *dx = ct__k_out_data(c, CT__G_DX, 0, c->dtype);                                           \
    if (CT__UNLIKELY(dx == NULL)) return ct_last_status();                                      \
    if (ot->numel == 0) return CT_OK;                                                           \
    smg_job j = {ct__k_in_data(ot), ct__k_in_data(ct_kernel_in(c, IN_DOUT, 0)), dx, 1, 1, 1};   \
    int64_t outer = 1;                                                                          \
    for (int k = 0; k < ot->dims.rank; k++) {                                                   \
      if (k < axis) outer *= ot->dims.d[k];                                                     \
      if (k == axis) j.n = ot->dims.d[k];                                                       \
      if (k > axis) j.inner *= ot->dims.d[k];                                                   \
    }                                                                                           \
    j.blocks = (j.inner + SM_COLS - 1) / SM_COLS;                                               \
    int64_t per = j.n * (j.inner < SM_COLS ? j.inner : SM_COLS);                                \
    ct__parallel_for(outer * j.blocks, CT__GRAIN_MEM / per + 1, NAME##_range, &j);              \
    return CT_OK;                                                                               \
  }

SM_GRAD_KERNEL(sm_grad_f32, float)
SM_GRAD_KERNEL(sm_grad_f64, double)


static const ct__kernel_set kernels[] = {
    {"mean_grad", CT__KERNELS_F32_F64(mean_grad)},
    {"reduce_sum_grad", CT__KERNELS([CT_FLOAT32] = rs_grad_any, [CT_FLOAT64] = rs_grad_any)},
    {"softmax_grad", CT__KERNELS_F32_F64(sm_grad)},
};

const ct__kernel_table ct__cpu_reduce_grad = CT__TABLE(kernels);
