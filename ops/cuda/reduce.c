/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/reduce.c: the CUDA kernels of sum, mean, reduce_sum and softmax, for float32 and
 * float64: their C side (checks, output allocation, launch, messages); the device code is
 * ops/cuda/reduce.cu.
 *
 * Sums accumulate in double, like the CPU's float32 runs; reduce_sum's summed dims come from the
 * CPU kernel's own check (ct__rs_dims), softmax's axis from the same normalisation, so both places
 * accept and refuse the same ops with the same messages. */
#include "ops/defs.h"

#include "ops/cuda/cuda_kernels.h"
#include "ops/cuda/launch.h"

/* sum: X0 + X1, then + X2 and so on, one launch each: the CPU's order, so float32 results are
 * bit-identical. sum's infer_shape has checked the dims and dtypes. */
static ct_status sum_cu(const ct_kernel_ctx *c) {
  void *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  size_t k = ct_kernel_in_count(c, CT__IN_X);
  int64_t n = ct_kernel_out(c, CT__OUT, 0)->numel;
  const void *x0 = ct__k_in_data(ct_kernel_in(c, CT__IN_X, 0));
  if (k == 1) return ct__cu_copy(c, o, x0, (size_t)n * ct_dtype_size(c->dtype));
  if (n == 0) return CT_OK;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  const void *x1 = ct__k_in_data(ct_kernel_in(c, CT__IN_X, 1));
  cudaError_t e = ct__cu_add_n(c->dtype, o, x0, x1, n, l.stream);
  for (size_t i = 2; i < k && e == cudaSuccess; i++) {
    e = ct__cu_add_n(c->dtype, o, o, ct__k_in_data(ct_kernel_in(c, CT__IN_X, i)), n, l.stream);
  }
  return ct__cu_leave(c, &l, e, "sum kernel launch");
}

/* Launches the block sums of ct__cu_reduce for n_out outputs (none when n_out is 0). */
static ct_status launch_reduce(const ct_kernel_ctx *c, void *o, const void *x, int64_t n_out,
                               int64_t n_red, const ct__cu_walk *keep, const ct__cu_walk *red,
                               int mean) {
  if (n_out == 0) return CT_OK;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_reduce(c->dtype, o, x, n_out, n_red, keep, red, mean, l.stream);
  return ct__cu_leave(c, &l, e, mean ? "mean kernel launch" : "reduce_sum kernel launch");
}

/* mean: all of X as one run of numel elements; an empty X gives 0 / 0 = NaN, as on the CPU. */
static ct_status mean_cu(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);
  const void *x = ct__k_in_data(xt);
  int64_t n = xt->numel;
  void *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  ct__cu_walk keep = {.rank = 0}, red = {.rank = 1};
  red.d[0] = n > 0 ? n : 1;
  red.s[0] = 1;
  return launch_reduce(c, o, x, 1, n, &keep, &red, 1);
}

/* reduce_sum: output i walks X's kept dims (in order: Out's layout, keep_dim only adds 1s), the
 * summed elements walk the summed dims; an empty summed dim gives 0. */
static ct_status reduce_sum_cu(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);
  bool red[CT_MAX_RANK];
  ct_status st = ct__rs_dims(c, xt->dims.rank, red);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  void *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  ct__cu_walk keep = {.rank = 0}, rw = {.rank = 0};
  int64_t xs[CT_MAX_RANK], stride = 1, n_red = 1;
  for (int k = xt->dims.rank - 1; k >= 0; k--) {
    xs[k] = stride;
    stride *= xt->dims.d[k];
  }
  for (int k = 0; k < xt->dims.rank; k++) {
    ct__cu_walk *w = red[k] ? &rw : &keep;
    w->d[w->rank] = xt->dims.d[k];
    w->s[w->rank] = xs[k];
    w->rank++;
    if (red[k]) n_red *= xt->dims.d[k];
  }
  return launch_reduce(c, o, ct__k_in_data(xt), ct_kernel_out(c, CT__OUT, 0)->numel, n_red,
                       &keep, &rw, 0);
}

/* softmax: X as [outer, n, inner] around the axis, as in ops/cpu/reduce.c. */
static ct_status softmax_cu(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);
  ct__cu_around a;
  void *o = ct__cu_out_around(c, CT__SOFTMAX_AXIS, &a);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  if (xt->numel == 0) return CT_OK;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_softmax(c->dtype, o, ct__k_in_data(xt), a.outer * a.inner, a.n,
                                 a.inner, l.stream);
  return ct__cu_leave(c, &l, e, "softmax kernel launch");
}

/* ---- The kernel table ------------------------------------------------------------------------ */

#define WIDE(fn) CT__KERNELS([CT_FLOAT32] = fn, [CT_FLOAT64] = fn)

static const ct__kernel_set kernels[] = {
    {"sum", WIDE(sum_cu)},
    {"mean", WIDE(mean_cu)},
    {"reduce_sum", WIDE(reduce_sum_cu)},
    {"softmax", WIDE(softmax_cu)},
};

const ct__kernel_table ct__cuda_reduce = CT__TABLE(kernels);
