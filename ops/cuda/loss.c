/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/loss.c: the CUDA kernels of softmax_with_cross_entropy and its gradient (ops/defs/
 * loss.c), float32: their C side (the label check, output allocation, launch, messages); the
 * device code is ops/cuda/loss.cu.
 *
 * Hard labels are copied to the host and checked there by the CPU's check (ct__sce_check_labels)
 * before any output is allocated or written, so a bad label is refused with the CPU's message
 * and leaves the outputs as they were. The copy waits for the stream: the one synchronisation
 * these kernels make, and only for hard labels. */
#include <stdlib.h>

#include "common/alloc.h"
#include "ops/defs.h"

#include "ops/cuda/cuda_kernels.h"
#include "ops/cuda/launch.h"

/* Checks the n hard labels of input `slot` (device memory) against k classes on the host. */
static ct_status check_labels(const ct_kernel_ctx *c, size_t slot, int64_t n, int64_t k) {
  if (n == 0) return CT_OK;
  int64_t *host = ct__malloc((size_t)n * sizeof *host);
  if (host == NULL) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY,
                          "cannot allocate %lld bytes of host memory to check input Label "
                          "variable '%s'",
                          (long long)((size_t)n * sizeof *host), ct_kernel_in_name(c, slot, 0));
  }
  ct__cu_launch l;
  ct_status st = ct__cu_enter(c, &l);
  if (st == CT_OK) {
    cudaError_t e = cudaMemcpyAsync(host, ct__k_in_data(ct_kernel_in(c, slot, 0)),
                                    (size_t)n * sizeof *host, cudaMemcpyDeviceToHost, l.stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(l.stream);
    st = ct__cu_leave(c, &l, e, "copying the labels to the host");
  }
  if (st == CT_OK) st = ct__sce_check_labels(c, slot, host, n, k);
  free(host);
  return st;
}

/* The steps both kernels start with: the [n, k] scores of input `scores`, the labels of input
 * `label` (hard int64 or soft float32, the other NULL), and hard labels checked on the host. */
static ct_status rows_and_labels(const ct_kernel_ctx *c, size_t scores, size_t label, int64_t *n,
                                 int64_t *k, const int64_t **hard, const float **soft) {
  const ct_tensor *st = ct_kernel_in(c, scores, 0);
  *n = st->dims.d[0];
  *k = st->dims.d[1];
  const void *y = ct__k_in_data(ct_kernel_in(c, label, 0));
  bool is_soft = c->attr[CT__SCE_SOFT_LABEL].u.b;
  *hard = is_soft ? NULL : y;
  *soft = is_soft ? y : NULL;
  return is_soft ? CT_OK : check_labels(c, label, *n, *k);
}

static ct_status sce_cu(const ct_kernel_ctx *c) {
  int64_t n, k;
  const int64_t *hard;
  const float *soft;
  ct_status st = rows_and_labels(c, CT__SCE_LOGITS, CT__SCE_LABEL, &n, &k, &hard, &soft);
  if (st != CT_OK) return st;
  float *sm = ct__k_out_data(c, CT__SCE_SOFTMAX, 0, c->dtype);
  if (CT__UNLIKELY(sm == NULL)) return ct_last_status();
  float *loss = ct__k_out_data(c, CT__SCE_LOSS, 0, c->dtype);
  if (CT__UNLIKELY(loss == NULL)) return ct_last_status();
  if (n == 0) return CT_OK;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_sce(sm, loss, ct__k_in_data(ct_kernel_in(c, CT__SCE_LOGITS, 0)), hard,
                             soft, c->attr[CT__SCE_IGNORE_INDEX].u.i, n, k, l.stream);
  return ct__cu_leave(c, &l, e, "softmax_with_cross_entropy kernel launch");
}

static ct_status sce_grad_cu(const ct_kernel_ctx *c) {
  int64_t n, k;
  const int64_t *hard;
  const float *soft;
  ct_status st = rows_and_labels(c, CT__SCEG_SOFTMAX, CT__SCEG_LABEL, &n, &k, &hard, &soft);
  if (st != CT_OK) return st;
  float *dx = ct__k_out_data(c, CT__SCEG_DLOGITS, 0, c->dtype);
  if (CT__UNLIKELY(dx == NULL)) return ct_last_status();
  if (n == 0 || k == 0) return CT_OK;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_sce_grad(dx, ct__k_in_data(ct_kernel_in(c, CT__SCEG_SOFTMAX, 0)), hard,
                                  soft, ct__k_in_data(ct_kernel_in(c, CT__SCEG_DLOSS, 0)),
                                  c->attr[CT__SCE_IGNORE_INDEX].u.i, n, k, l.stream);
  return ct__cu_leave(c, &l, e, "softmax_with_cross_entropy_grad kernel launch");
}

/* ---- The kernel table ------------------------------------------------------------------------ */

static const ct__kernel_set kernels[] = {
    {"softmax_with_cross_entropy", CT__KERNELS([CT_FLOAT32] = sce_cu)},
    {"softmax_with_cross_entropy_grad", CT__KERNELS([CT_FLOAT32] = sce_grad_cu)},
};

const ct__kernel_table ct__cuda_loss = CT__TABLE(kernels);
