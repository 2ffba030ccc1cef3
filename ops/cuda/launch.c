/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/launch.c: the bracket every CUDA kernel of the built-in ops launches in (enter the
 * op's device, leave it and report), and the steps several of them share: the device-to-device
 * copy, and the split of X around an axis. The convention is described in ops/cuda/launch.h. */
#include "ops/defs.h"

#include "ops/cuda/launch.h"

ct_status ct__cu_enter(const ct_kernel_ctx *c, ct__cu_launch *l) {
  if (ct__cuda_setup(c->place.device) != CT_OK) return ct__k_relabel(c);
  if (ct__cuda_guard_enter(&l->guard, c->place.device) != CT_OK) return ct__k_relabel(c);
  l->stream = ct__cuda_stream(c->place.device);
  return CT_OK;
}

CT__COLD static ct_status launch_fail(const ct_kernel_ctx *c, cudaError_t e, const char *what) {
  (void)cudaGetLastError(); /* a launch error is sticky in that note: report it once */
  return ct_kernel_fail(c, CT_ERR_DEVICE, "%s failed on cuda:%d: %s (%s)", what, c->place.device,
                        cudaGetErrorString(e), cudaGetErrorName(e));
}

ct_status ct__cu_leave(const ct_kernel_ctx *c, ct__cu_launch *l, cudaError_t e, const char *what) {
  ct__cuda_guard_exit(&l->guard);
  return e == cudaSuccess ? CT_OK : launch_fail(c, e, what);
}

ct_status ct__cu_copy(const ct_kernel_ctx *c, void *o, const void *x, size_t n) {
  if (n == 0 || o == x) return CT_OK;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = cudaMemcpyAsync(o, x, n, cudaMemcpyDeviceToDevice, l.stream);
  return ct__cu_leave(c, &l, e, "cudaMemcpyAsync (device to device)");
}

ct_status ct__cu_around_axis(const ct_kernel_ctx *c, size_t attr, ct__cu_around *a) {
  const ct_ddim d = ct_kernel_in(c, CT__IN_X, 0)->dims;
  ct_status st = ct__k_axis(c, "axis", c->attr[attr].u.i, d.rank, &a->axis);
  if (st != CT_OK) return st;
  a->outer = a->n = a->inner = 1;
  for (int k = 0; k < d.rank; k++) {
    if (k < a->axis) a->outer *= d.d[k];
    if (k == a->axis) a->n = d.d[k];
    if (k > a->axis) a->inner *= d.d[k];
  }
  return CT_OK;
}

void *ct__cu_out_around(const ct_kernel_ctx *c, size_t attr, ct__cu_around *a) {
  if (ct__cu_around_axis(c, attr, a) != CT_OK) return NULL;
  return ct__k_out_data(c, CT__OUT, 0, c->dtype);
}
