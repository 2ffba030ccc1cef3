/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/shape.c: the CUDA kernels of transpose and concat, for every dtype (elements moved by
 * their size): their C side (checks, output allocation, launch, messages); the device code is
 * ops/cuda/shape.cu. reshape only shares memory, so the CUDA place registers the CPU's kernel
 * for it (ops/backends.c).
 *
 * transpose gathers X along the CPU kernel's plan (ct__tr_make_plan); concat places each input's
 * rows into Out's with one launch per input. */
#include "ops/defs.h"

#include "ops/cuda/cuda_kernels.h"
#include "ops/cuda/launch.h"

/* transpose: a gather along the CPU's plan (a plain copy when the permutation moves nothing). */
static ct_status transpose_cu(const ct_kernel_ctx *c) {
  int perm[CT_MAX_RANK];
  ct_status st = ct__tr_perm(c, perm);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);
  void *o = ct__k_out_data(c, CT__OUT, 0, xt->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  if (xt->numel == 0) return CT_OK;
  const void *x = ct__k_in_data(xt);
  size_t es = ct_dtype_size(xt->dtype);
  ct__tr_plan p;
  ct__tr_make_plan(xt->dims, perm, &p);
  if (p.rank == 1 && p.is[0] == 1) return ct__cu_copy(c, o, x, (size_t)xt->numel * es);
  ct__cu_walk w = {.rank = p.rank};
  for (int k = 0; k < p.rank; k++) {
    w.d[k] = p.d[k];
    w.s[k] = p.is[k];
  }
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_gather(o, x, es, xt->numel, &w, l.stream);
  return ct__cu_leave(c, &l, e, "transpose kernel launch");
}

/* concat: each input's rows (outer of them, dims before the axis) placed into Out's rows at the
 * input's offset along the axis. concat's infer_shape has checked the dims and dtypes. */
static ct_status concat_cu(const ct_kernel_ctx *c) {
  ct__cu_around a;
  void *o = ct__cu_out_around(c, CT__CONCAT_AXIS, &a);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  const ct_tensor *ot = ct_kernel_out(c, CT__OUT, 0);
  if (ot->numel == 0) return CT_OK;
  size_t es = ct_dtype_size(c->dtype), n = ct_kernel_in_count(c, CT__IN_X);
  int64_t bo = ot->dims.d[a.axis] * a.inner, at = 0;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = cudaSuccess;
  for (size_t i = 0; i < n && e == cudaSuccess; i++) {
    const ct_tensor *xi = ct_kernel_in(c, CT__IN_X, i);
    int64_t bx = xi->dims.d[a.axis] * a.inner;
    e = ct__cu_place_rows(o, ct__k_in_data(xi), es, a.outer, bx, bo, at, l.stream);
    at += bx;
  }
  return ct__cu_leave(c, &l, e, "concat kernel launch");
}

/* ---- The kernel table ------------------------------------------------------------------------ */

static const ct__kernel_set kernels[] = {
    {"transpose", CT__KERNELS([0] = transpose_cu)},
    {"concat", CT__KERNELS([0] = concat_cu)},
};

const ct__kernel_table ct__cuda_shape = CT__TABLE(kernels);
