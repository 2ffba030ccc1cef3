/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/shape.c: the CUDA kernels of transpose and concat and of their gradients, for every
 * dtype (elements moved by their size): their C side (checks, output allocation, launch,
 * messages); the device code is ops/cuda/shape.cu. reshape and reshape_grad only share memory,
 * so the CUDA place registers the any-place kernels for them (ops/backends.c).
 *
 * transpose gathers X along the CPU kernel's plan (ct__tr_make_plan), transpose_grad gathers
 * Out@GRAD along the inverse permutation; concat places each input's rows into Out's with one
 * launch per input, concat_grad copies the same rows back out. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "ops/defs.h"

#include "ops/cuda/cuda_kernels.h"
#include "ops/cuda/launch.h"

/* Output 0 = `from` with its dims permuted by perm: a gather along the CPU's plan (a plain copy
 * when the permutation moves nothing). */
static ct_status permute_cu(const ct_kernel_ctx *c, const ct_tensor *from, const int *perm) {
  void *o = ct__k_out_data(c, 0, 0, from->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  if (from->numel == 0) return CT_OK;
  const void *x = ct__k_in_data(from);
  size_t es = ct_dtype_size(from->dtype);
  ct__tr_plan p;
  ct__tr_make_plan(from->dims, perm, &p);
  if (p.rank == 1 && p.is[0] == 1) return ct__cu_copy(c, o, x, (size_t)from->numel * es);
  ct__cu_walk w = {.rank = p.rank};
  for (int k = 0; k < p.rank; k++) {
    w.d[k] = p.d[k];
    w.s[k] = p.is[k];
  }
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_gather(o, x, es, from->numel, &w, l.stream);
  return ct__cu_leave(c, &l, e, "transpose kernel launch");
}

static ct_status transpose_cu(const ct_kernel_ctx *c) {
  int perm[CT_MAX_RANK];
  ct_status st = ct__tr_perm(c, perm);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  return permute_cu(c, ct_kernel_in(c, CT__IN_X, 0), perm);
}

/* transpose_grad (X, Out@GRAD -> X@GRAD): Out@GRAD permuted back by the inverse of `axis`. */
static ct_status transpose_grad_cu(const ct_kernel_ctx *c) {
  int perm[CT_MAX_RANK], inv[CT_MAX_RANK];
  ct_status st = ct__tr_perm(c, perm);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  const ct_tensor *dout = ct_kernel_in(c, CT__G_UNARY_DOUT, 0);
  for (int k = 0; k < dout->dims.rank; k++) inv[perm[k]] = k;
  return permute_cu(c, dout, inv);
}

/* Moves each part's rows (the inputs X, or concat_grad's wanted X@GRAD entries, data in part[i],
 * NULL for one not moved) to or from the whole's (Out, or Out@GRAD), one launch per part. */
static ct_status concat_moves(const ct_kernel_ctx *c, const ct__cu_around *a, void *whole,
                              void *const *part, int split) {
  size_t es = ct_dtype_size(c->dtype), n = ct_kernel_in_count(c, CT__IN_X);
  int64_t bw = 0, at = 0;
  for (size_t i = 0; i < n; i++) bw += ct_kernel_in(c, CT__IN_X, i)->dims.d[a->axis] * a->inner;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = cudaSuccess;
  for (size_t i = 0; i < n && e == cudaSuccess; i++) {
    int64_t bp = ct_kernel_in(c, CT__IN_X, i)->dims.d[a->axis] * a->inner;
    if (part[i] != NULL) {
      e = ct__cu_move_rows(whole, part[i], es, a->outer, bp, bw, at, split, l.stream);
    }
    at += bp;
  }
  return ct__cu_leave(c, &l, e, split ? "concat_grad kernel launch" : "concat kernel launch");
}

/* concat: each input's rows (outer of them, dims before the axis) placed into Out's rows at the
 * input's offset along the axis. concat's infer_shape has checked the dims and dtypes. */
static ct_status concat_cu(const ct_kernel_ctx *c) {
  ct__cu_around a;
  void *o = ct__cu_out_around(c, CT__CONCAT_AXIS, &a);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  if (ct_kernel_out(c, CT__OUT, 0)->numel == 0) return CT_OK;
  size_t n = ct_kernel_in_count(c, CT__IN_X);
  void **part = ct__malloc(n * sizeof *part);
  if (part == NULL) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY, "cannot allocate the list of %zu inputs", n);
  }
  for (size_t i = 0; i < n; i++) part[i] = (void *)ct__k_in_data(ct_kernel_in(c, CT__IN_X, i));
  ct_status st = concat_moves(c, &a, o, part, 0);
  free(part);
  return st;
}

/* concat_grad (X, Out@GRAD -> X@GRAD): each X@GRAD_i is the slice of Out@GRAD that X_i filled;
 * an entry named CT__GRAD_EMPTY is not wanted and not written. */
static ct_status concat_grad_cu(const ct_kernel_ctx *c) {
  ct__cu_around a;
  ct_status st = ct__cu_around_axis(c, CT__CONCAT_AXIS, &a);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  size_t n = ct_kernel_out_count(c, CT__G_DX);
  void **part = ct__calloc(n > 0 ? n : 1, sizeof *part);
  if (part == NULL) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY, "cannot allocate the list of %zu outputs", n);
  }
  for (size_t i = 0; i < n && st == CT_OK; i++) {
    if (strcmp(ct_kernel_out_name(c, CT__G_DX, i), CT__GRAD_EMPTY) == 0) continue;
    part[i] = ct__k_out_data(c, CT__G_DX, i, c->dtype);
    if (CT__UNLIKELY(part[i] == NULL)) st = ct_last_status();
  }
  const ct_tensor *dout = ct_kernel_in(c, CT__G_UNARY_DOUT, 0);
  if (st == CT_OK && dout->numel > 0) {
    st = concat_moves(c, &a, (void *)ct__k_in_data(dout), part, 1);
  }
  free(part);
  return st;
}

/* ---- The kernel table ------------------------------------------------------------------------ */

static const ct__kernel_set kernels[] = {
    {"transpose", CT__KERNELS([0] = transpose_cu)},
    {"concat", CT__KERNELS([0] = concat_cu)},
    {"transpose_grad", CT__KERNELS([0] = transpose_grad_cu)},
    {"concat_grad", CT__KERNELS([0] = concat_grad_cu)},
};

const ct__kernel_table ct__cuda_shape = CT__TABLE(kernels);
