/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/elementwise_grad.c: the CUDA kernels of the elementwise gradients (ops/defs/
 * elementwise_grad.c), float32: their C side (output allocation, the broadcast walks, launch,
 * messages); the device code is ops/cuda/elementwise_grad.cu. cast_grad sits with cast in
 * ops/cuda/elementwise.c, as on the CPU.
 *
 *   elementwise_{add,sub,mul,div}_grad  X, Y, Out@GRAD -> X@GRAD, Y@GRAD (each optional)
 *   relu_grad, sigmoid_grad, tanh_grad, exp_grad (from Out), log_grad (from X)
 * The checks are the shared infer-shape's; the results are bit-identical to the CPU kernels'
 * (ops/cuda/elementwise_grad.cu says why). */
#include "ops/defs.h"

#include "ops/cuda/cuda_kernels.h"
#include "ops/cuda/launch.h"

/* ---- elementwise_{add,sub,mul,div}_grad ------------------------------------------------------ */

/* The walk of one input's gradient (launch.h) from the forward op's broadcast plan p over Out
 * dims: `self` is that input's strides in p, `other` the other input's. The dims along which
 * self is 0 are the broadcast ones; the others are the input's own, in its memory order, since
 * the plan drops extent-1 dims and merges only where both inputs stay contiguous. */
static void grad_walk(const ct__bcast_plan *p, const int64_t *self, const int64_t *other,
                      ct__cu_grad_walk *w) {
  int64_t os[CT_MAX_RANK], step = 1;
  for (int k = p->rank - 1; k >= 0; k--) {
    os[k] = step;
    step *= p->d[k];
  }
  w->keep_out.rank = w->keep_other.rank = w->red_out.rank = w->red_other.rank = 0;
  w->n_red = 1;
  for (int k = 0; k < p->rank; k++) {
    ct__cu_walk *wo = self[k] != 0 ? &w->keep_out : &w->red_out;
    ct__cu_walk *wp = self[k] != 0 ? &w->keep_other : &w->red_other;
    wo->d[wo->rank] = wp->d[wp->rank] = p->d[k];
    wo->s[wo->rank++] = os[k];
    wp->s[wp->rank++] = other[k];
    if (self[k] == 0) w->n_red *= p->d[k];
  }
}

/* Fills n float32 elements at d with zeros, on the stream of a bracket already entered. */
static cudaError_t zeros(float *d, int64_t n, cudaStream_t stream) {
  return d == NULL || n == 0 ? cudaSuccess : cudaMemsetAsync(d, 0, (size_t)n * 4, stream);
}

static ct_status binary_grad_cu(const ct_kernel_ctx *c, int op) {
  const ct_tensor *xt = ct_kernel_in(c, CT__G_X, 0), *yt = ct_kernel_in(c, CT__G_Y, 0);
  const ct_tensor *gt = ct_kernel_in(c, CT__G_DOUT, 0);
  void *dxv, *dyv;
  if (ct__grad_outs(c, &dxv, &dyv) != CT_OK) return ct_last_status();
  float *dx = dxv, *dy = dyv;
  const float *x = ct__k_in_data(xt), *y = ct__k_in_data(yt), *g = ct__k_in_data(gt);
  int64_t n = gt->numel;
  bool flat = xt->numel == n && yt->numel == n;
  if ((flat && n == 0) || (dx == NULL && dy == NULL)) return CT_OK;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e;
  if (flat) {
    e = ct__cu_binary_grad(op, dx, dy, g, x, y, n, l.stream);
  } else if (n == 0) {
    /* An empty Out broadcast from a non-empty input: that input's gradient is zeros. */
    e = zeros(dx, xt->numel, l.stream);
    if (e == cudaSuccess) e = zeros(dy, yt->numel, l.stream);
  } else {
    ct__bcast_plan p;
    ct__plan_bcast(xt->dims, yt->dims, gt->dims, &p);
    ct__cu_grad_walk w;
    e = cudaSuccess;
    if (dx != NULL) {
      grad_walk(&p, p.sx, p.sy, &w);
      e = ct__cu_binary_grad_bcast(op, 0, dx, g, x, y, xt->numel, &w, l.stream);
    }
    if (dy != NULL && e == cudaSuccess) {
      grad_walk(&p, p.sy, p.sx, &w);
      e = ct__cu_binary_grad_bcast(op, 1, dy, g, x, y, yt->numel, &w, l.stream);
    }
  }
  return ct__cu_leave(c, &l, e, "elementwise gradient kernel launch");
}

static ct_status add_grad_cu(const ct_kernel_ctx *c) { return binary_grad_cu(c, CT__CU_ADD); }
static ct_status sub_grad_cu(const ct_kernel_ctx *c) { return binary_grad_cu(c, CT__CU_SUB); }
static ct_status mul_grad_cu(const ct_kernel_ctx *c) { return binary_grad_cu(c, CT__CU_MUL); }
static ct_status div_grad_cu(const ct_kernel_ctx *c) { return binary_grad_cu(c, CT__CU_DIV); }

/* ---- Activation gradients -------------------------------------------------------------------- */

static ct_status unary_grad_cu(const ct_kernel_ctx *c, int op) {
  const ct_tensor *at = ct_kernel_in(c, CT__G_UNARY_IN, 0);
  float *dx = ct__k_out_data(c, CT__G_DX, 0, c->dtype);
  if (CT__UNLIKELY(dx == NULL)) return ct_last_status();
  if (at->numel == 0) return CT_OK;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_unary_grad(op, dx, ct__k_in_data(at),
                                    ct__k_in_data(ct_kernel_in(c, CT__G_UNARY_DOUT, 0)),
                                    at->numel, l.stream);
  return ct__cu_leave(c, &l, e, "activation gradient kernel launch");
}

static ct_status relu_grad_cu(const ct_kernel_ctx *c) { return unary_grad_cu(c, CT__CU_RELU); }
static ct_status sigmoid_grad_cu(const ct_kernel_ctx *c) {
  return unary_grad_cu(c, CT__CU_SIGMOID);
}
static ct_status tanh_grad_cu(const ct_kernel_ctx *c) { return unary_grad_cu(c, CT__CU_TANH); }
static ct_status exp_grad_cu(const ct_kernel_ctx *c) { return unary_grad_cu(c, CT__CU_EXP); }
static ct_status log_grad_cu(const ct_kernel_ctx *c) { return unary_grad_cu(c, CT__CU_LOG); }

/* ---- The kernel table ------------------------------------------------------------------------ */

#define F32(fn) CT__KERNELS([CT_FLOAT32] = fn)

static const ct__kernel_set kernels[] = {
    {"elementwise_add_grad", F32(add_grad_cu)}, {"elementwise_sub_grad", F32(sub_grad_cu)},
    {"elementwise_mul_grad", F32(mul_grad_cu)}, {"elementwise_div_grad", F32(div_grad_cu)},
    {"relu_grad", F32(relu_grad_cu)},           {"sigmoid_grad", F32(sigmoid_grad_cu)},
    {"tanh_grad", F32(tanh_grad_cu)},           {"exp_grad", F32(exp_grad_cu)},
    {"log_grad", F32(log_grad_cu)},
};

const ct__kernel_table ct__cuda_elementwise_grad = CT__TABLE(kernels);
