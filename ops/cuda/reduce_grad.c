/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/reduce_grad.c: the CUDA kernels of the reduce family's gradients (ops/defs/
 * reduce_grad.c): their C side (checks, output allocation, launch, messages); the device code is
 * ops/cuda/reduce_grad.cu and, for reduce_sum_grad's gather, ops/cuda/shape.cu.
 *
 *   mean_grad        X, Out@GRAD -> X@GRAD = Out@GRAD / numel(X)            float32
 *   reduce_sum_grad  X, Out@GRAD -> Out@GRAD broadcast back over X           float32, float64
 *   softmax_grad     Out, Out@GRAD -> Out (Out@GRAD - sum(Out@GRAD Out))     float32
 * The checks are the shared infer-shape's and the CPU kernels' own (ct__rs_dims, the axis); the
 * results are the CPU's bit for bit (reduce_grad.cu says why). */
#include "ops/defs.h"

#include "ops/cuda/cuda_kernels.h"
#include "ops/cuda/launch.h"

enum { IN_A = 0, IN_DOUT = 1 }; /* X or Out, then Out@GRAD */

static ct_status mean_grad_cu(const ct_kernel_ctx *c) {
  int64_t n = ct_kernel_in(c, IN_A, 0)->numel;
  float *dx = ct__k_out_data(c, CT__G_DX, 0, c->dtype);
  if (CT__UNLIKELY(dx == NULL)) return ct_last_status();
  if (n == 0) return CT_OK;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_mean_grad(dx, ct__k_in_data(ct_kernel_in(c, IN_DOUT, 0)), n, l.stream);
  return ct__cu_leave(c, &l, e, "mean_grad kernel launch");
}

/* reduce_sum_grad: X@GRAD gathers Out@GRAD along the broadcast plan of Out@GRAD's dims as if
 * keep_dim were set (the summed dims 1) to X's, as on the CPU. */
static ct_status reduce_sum_grad_cu(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, IN_A, 0), *gt = ct_kernel_in(c, IN_DOUT, 0);
  bool red[CT_MAX_RANK];
  ct_status st = ct__rs_dims(c, xt->dims.rank, red);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  void *dx = ct__k_out_data(c, CT__G_DX, 0, c->dtype);
  if (CT__UNLIKELY(dx == NULL)) return ct_last_status();
  if (xt->numel == 0) return CT_OK;
  ct_ddim kept = xt->dims;
  for (int k = 0; k < kept.rank; k++) {
    if (red[k]) kept.d[k] = 1;
  }
  ct__bcast_plan b;
  ct__plan_bcast(kept, kept, xt->dims, &b);
  ct__cu_walk w = {.rank = b.rank};
  for (int k = 0; k < b.rank; k++) {
    w.d[k] = b.d[k];
    w.s[k] = b.sx[k];
  }
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_gather(dx, ct__k_in_data(gt), ct_dtype_size(c->dtype), xt->numel, &w,
                                l.stream);
  return ct__cu_leave(c, &l, e, "reduce_sum_grad kernel launch");
}

/* softmax_grad: Out (input 0, in X's place for ct__cu_out_around) as [outer, n, inner]. */
static ct_status softmax_grad_cu(const ct_kernel_ctx *c) {
  const ct_tensor *ot = ct_kernel_in(c, IN_A, 0);
  ct__cu_around a;
  float *dx = ct__cu_out_around(c, CT__SOFTMAX_AXIS, &a);
  if (CT__UNLIKELY(dx == NULL)) return ct_last_status();
  if (ot->numel == 0) return CT_OK;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_softmax_grad(dx, ct__k_in_data(ot),
                                      ct__k_in_data(ct_kernel_in(c, IN_DOUT, 0)),
                                      a.outer * a.inner, a.n, a.inner, l.stream);
  return ct__cu_leave(c, &l, e, "softmax_grad kernel launch");
}

/* ---- The kernel table ------------------------------------------------------------------------ */

static const ct__kernel_set kernels[] = {
    {"mean_grad", CT__KERNELS([CT_FLOAT32] = mean_grad_cu)},
    {"reduce_sum_grad",
     CT__KERNELS([CT_FLOAT32] = reduce_sum_grad_cu, [CT_FLOAT64] = reduce_sum_grad_cu)},
    {"softmax_grad", CT__KERNELS([CT_FLOAT32] = softmax_grad_cu)},
};

const ct__kernel_table ct__cuda_reduce_grad = CT__TABLE(kernels);
