/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/nn.c: the CUDA kernels of gelu, lookup_table_v2, dropout, arg_max and the gradients
 * of the first three (ops/defs/nn.c, nn_grad.c), float32 (lookup_table_v2 any dtype): their C
 * side (checks, output allocation, launch, messages); the device code is ops/cuda/nn.cu.
 *
 * lookup_table_v2's ids are copied to the host and checked there by the CPU's check
 * (ct__lt_check_ids) before any output is written, as softmax_with_cross_entropy's labels are
 * (ops/cuda/loss.c): the one synchronisation these kernels make. */
#include <stdlib.h>

#include "common/alloc.h"
#include "ops/defs.h"

#include "ops/cuda/cuda_kernels.h"
#include "ops/cuda/launch.h"
#include "ops/cuda/launch_layers.h"

static const void *in_data(const ct_kernel_ctx *c, size_t slot) {
  return ct__k_in_data(ct_kernel_in(c, slot, 0));
}

static ct_status gelu_common(const ct_kernel_ctx *c, bool grad) {
  const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);
  float *o = ct__k_out_data(c, 0, 0, c->dtype);
  if (o == NULL) return ct_last_status();
  if (xt->numel == 0) return CT_OK;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_gelu(o, ct__k_in_data(xt), grad ? in_data(c, CT__G_UNARY_DOUT) : NULL,
                              c->attr[CT__GELU_APPROXIMATE].u.b, xt->numel, l.stream);
  return ct__cu_leave(c, &l, e, grad ? "gelu_grad kernel launch" : "gelu kernel launch");
}

static ct_status gelu_cu(const ct_kernel_ctx *c) { return gelu_common(c, false); }
static ct_status gelu_grad_cu(const ct_kernel_ctx *c) { return gelu_common(c, true); }

/* Copies the ids to the host and checks them against W's rows. */
static ct_status check_ids(const ct_kernel_ctx *c) {
  const ct_tensor *it = ct_kernel_in(c, CT__LT_IDS, 0);
  int64_t n = it->numel, rows = ct_kernel_in(c, CT__LT_W, 0)->dims.d[0];
  if (n == 0) return CT_OK;
  size_t bytes = (size_t)n * ct_dtype_size(it->dtype);
  void *host = ct__malloc(bytes);
  if (host == NULL) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY,
                          "cannot allocate %lld bytes of host memory to check input Ids "
                          "variable '%s'",
                          (long long)bytes, ct_kernel_in_name(c, CT__LT_IDS, 0));
  }
  ct__cu_launch l;
  ct_status st = ct__cu_enter(c, &l);
  if (st == CT_OK) {
    cudaError_t e = cudaMemcpyAsync(host, ct__k_in_data(it), bytes, cudaMemcpyDeviceToHost,
                                    l.stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(l.stream);
    st = ct__cu_leave(c, &l, e, "copying the ids to the host");
  }
  if (st == CT_OK) st = ct__lt_check_ids(c, CT__LT_IDS, host, it->dtype, n, rows);
  free(host);
  return st;
}

static ct_status lookup_cu(const ct_kernel_ctx *c) {
  ct_status st = check_ids(c);
  if (st != CT_OK) return st;
  const ct_tensor *w = ct_kernel_in(c, CT__LT_W, 0), *it = ct_kernel_in(c, CT__LT_IDS, 0);
  void *o = ct__k_out_data(c, CT__OUT, 0, w->dtype);
  if (o == NULL) return ct_last_status();
  if (it->numel == 0 || w->dims.d[1] == 0) return CT_OK;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_lookup(o, ct__k_in_data(w), ct_dtype_size(w->dtype), ct__k_in_data(it),
                                it->dtype == CT_INT32, it->numel, w->dims.d[1],
                                c->attr[CT__LT_PADDING_IDX].u.i, l.stream);
  return ct__cu_leave(c, &l, e, "lookup_table_v2 kernel launch");
}

static ct_status lookup_grad_cu(const ct_kernel_ctx *c) {
  ct_status st = check_ids(c);
  if (st != CT_OK) return st;
  const ct_tensor *w = ct_kernel_in(c, CT__LT_W, 0), *it = ct_kernel_in(c, CT__LT_IDS, 0);
  float *dw = ct__k_out_data(c, 0, 0, c->dtype);
  if (dw == NULL) return ct_last_status();
  if (w->numel == 0) return CT_OK;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_lookup_grad(dw, in_data(c, CT__LTG_DOUT), ct__k_in_data(it),
                                     it->dtype == CT_INT32, it->numel, w->dims.d[0], w->dims.d[1],
                                     c->attr[CT__LT_PADDING_IDX].u.i, l.stream);
  return ct__cu_leave(c, &l, e, "lookup_table_v2_grad kernel launch");
}

static ct_status dropout_cu(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);
  float *o = ct__k_out_data(c, CT__DO_OUT, 0, c->dtype);
  if (o == NULL) return ct_last_status();
  uint8_t *m = ct__k_out_data(c, CT__DO_MASK, 0, CT_UINT8);
  if (m == NULL) return ct_last_status();
  bool test = c->attr[CT__DO_IS_TEST].u.b;
  /* A Seed input stays on the device: the kernel reads it (no synchronisation). */
  const int32_t *seed_in = ct_kernel_in_count(c, CT__DO_SEED_IN) > 0 && !test
                               ? in_data(c, CT__DO_SEED_IN)
                               : NULL;
  uint64_t seed = test || seed_in != NULL ? 0 : ct__dropout_seed(c);
  if (xt->numel == 0) return CT_OK;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_dropout(o, m, ct__k_in_data(xt), xt->numel, seed, seed_in,
                                 c->attr[CT__DO_PROB].u.f, (float)ct__dropout_factor(c), test,
                                 l.stream);
  return ct__cu_leave(c, &l, e, "dropout kernel launch");
}

static ct_status dropout_grad_cu(const ct_kernel_ctx *c) {
  const ct_tensor *mt = ct_kernel_in(c, CT__DOG_MASK, 0);
  float *dx = ct__k_out_data(c, 0, 0, c->dtype);
  if (dx == NULL) return ct_last_status();
  if (mt->numel == 0) return CT_OK;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_dropout_grad(dx, in_data(c, CT__DOG_DOUT), ct__k_in_data(mt), mt->numel,
                                      (float)ct__dropout_factor(c), l.stream);
  return ct__cu_leave(c, &l, e, "dropout_grad kernel launch");
}

static ct_status arg_max_cu(const ct_kernel_ctx *c) {
  ct__norm_plan p;
  ct_status s = ct__am_plan(c, &p);
  if (s != CT_OK) return s;
  ct_dtype dt = (ct_dtype)c->attr[CT__AM_DTYPE].u.i;
  void *o = ct__k_out_data(c, CT__OUT, 0, dt);
  if (o == NULL) return ct_last_status();
  if (p.outer * p.inner == 0) return CT_OK;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_arg_max(o, dt == CT_INT64, in_data(c, CT__IN_X), p.outer, p.c, p.inner,
                                 l.stream);
  return ct__cu_leave(c, &l, e, "arg_max kernel launch");
}

static const ct__kernel_set kernels[] = {
    {"gelu", CT__KERNELS([CT_FLOAT32] = gelu_cu)},
    {"gelu_grad", CT__KERNELS([CT_FLOAT32] = gelu_grad_cu)},
    {"lookup_table_v2", CT__KERNELS([0] = lookup_cu)},
    {"lookup_table_v2_grad", CT__KERNELS([CT_FLOAT32] = lookup_grad_cu)},
    {"dropout", CT__KERNELS([CT_FLOAT32] = dropout_cu)},
    {"dropout_grad", CT__KERNELS([CT_FLOAT32] = dropout_grad_cu)},
    {"arg_max", CT__KERNELS([CT_FLOAT32] = arg_max_cu)},
};

const ct__kernel_table ct__cuda_nn = CT__TABLE(kernels);
