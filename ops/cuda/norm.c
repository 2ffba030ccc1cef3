/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/norm.c: the CUDA kernels of batch_norm, layer_norm and their gradients (ops/defs/
 * norm.c, norm_grad.c), float32: their C side (plans, output allocation, launch, messages); the
 * device code is ops/cuda/norm.cu (the CPU kernels' results bit for bit, but for the forward
 * statistics folded across a block: within an ulp). */
#include "ops/defs.h"

#include "ops/cuda/cuda_kernels.h"
#include "ops/cuda/launch.h"
#include "ops/cuda/launch_layers.h"

/* Float data of input slot, NULL when the slot is unwired. */
static const float *opt_in(const ct_kernel_ctx *c, size_t slot) {
  return ct_kernel_in_count(c, slot) ? ct__k_in_data(ct_kernel_in(c, slot, 0)) : NULL;
}

/* Allocates the wired outputs X@GRAD, Scale@GRAD, Bias@GRAD of a grad op into a. */
static ct_status grad_outs(const ct_kernel_ctx *c, ct__cu_norm *a) {
  float **o[3] = {&a->dx, &a->dscale, &a->dbias};
  for (size_t k = CT__NG_DX; k <= CT__NG_DBIAS; k++) {
    *o[k] = NULL;
    if (ct_kernel_out_count(c, k) == 0) continue;
    if ((*o[k] = ct__k_out_data(c, k, 0, c->dtype)) == NULL) return ct_last_status();
  }
  return CT_OK;
}

/* Enters the op's device, launches fn over a, leaves. */
static ct_status launch(const ct_kernel_ctx *c, const ct__cu_norm *a,
                        cudaError_t (*fn)(const ct__cu_norm *, cudaStream_t), const char *what) {
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  return ct__cu_leave(c, &l, fn(a, l.stream), what);
}

static ct_status batch_norm_cu(const ct_kernel_ctx *c) {
  ct__norm_plan p;
  ct_status s = ct__bn_plan(c, &p);
  if (s != CT_OK) return s;
  ct__cu_norm a = {.outer = p.outer, .c = p.c, .inner = p.inner,
                   .momentum = c->attr[CT__BN_MOMENTUM].u.f,
                   .eps = c->attr[CT__BN_EPSILON].u.f,
                   .global = c->attr[CT__BN_IS_TEST].u.b || c->attr[CT__BN_GLOBAL_STATS].u.b};
  float **out[5] = {&a.y, &a.mean_out, &a.var_out, &a.saved_mean, &a.saved_var};
  for (size_t k = 0; k < 5; k++) {
    if ((*out[k] = ct__k_out_data(c, k, 0, c->dtype)) == NULL) return ct_last_status();
  }
  a.x = opt_in(c, CT__BN_X);
  a.scale = opt_in(c, CT__BN_SCALE);
  a.bias = opt_in(c, CT__BN_BIAS);
  a.mean = opt_in(c, CT__BN_MEAN);
  a.var = opt_in(c, CT__BN_VARIANCE);
  return p.c == 0 ? CT_OK : launch(c, &a, ct__cu_batch_norm, "batch_norm kernel launch");
}

static ct_status batch_norm_grad_cu(const ct_kernel_ctx *c) {
  ct__norm_plan p;
  ct_status s = ct__bn_plan(c, &p);
  ct__cu_norm a = {.outer = p.outer, .c = p.c, .inner = p.inner,
                   .global = c->attr[CT__BN_IS_TEST].u.b || c->attr[CT__BN_GLOBAL_STATS].u.b};
  if (s == CT_OK) s = grad_outs(c, &a);
  if (s != CT_OK) return s;
  a.x = opt_in(c, CT__BNG_X);
  a.scale = opt_in(c, CT__BNG_SCALE);
  a.saved_mean = (float *)opt_in(c, CT__BNG_SAVED_MEAN);
  a.saved_var = (float *)opt_in(c, CT__BNG_SAVED_VAR);
  a.dy = opt_in(c, CT__BNG_DY);
  return p.c == 0 ? CT_OK
                  : launch(c, &a, ct__cu_batch_norm_grad, "batch_norm_grad kernel launch");
}

static ct_status layer_norm_cu(const ct_kernel_ctx *c) {
  ct__norm_plan p;
  ct_status s = ct__ln_plan(c, &p);
  if (s != CT_OK) return s;
  ct__cu_norm a = {.outer = p.outer, .c = 1, .inner = p.inner,
                   .eps = c->attr[CT__LN_EPSILON].u.f};
  float **out[3] = {&a.y, &a.mean_out, &a.var_out};
  for (size_t k = 0; k < 3; k++) {
    if ((*out[k] = ct__k_out_data(c, k, 0, c->dtype)) == NULL) return ct_last_status();
  }
  a.x = opt_in(c, CT__LN_X);
  a.scale = opt_in(c, CT__LN_SCALE);
  a.bias = opt_in(c, CT__LN_BIAS);
  return p.outer == 0 ? CT_OK : launch(c, &a, ct__cu_layer_norm, "layer_norm kernel launch");
}

static ct_status layer_norm_grad_cu(const ct_kernel_ctx *c) {
  ct__norm_plan p;
  ct_status s = ct__ln_plan(c, &p);
  ct__cu_norm a = {.outer = p.outer, .c = 1, .inner = p.inner,
                   .eps = c->attr[CT__LN_EPSILON].u.f};
  if (s == CT_OK) s = grad_outs(c, &a);
  if (s != CT_OK) return s;
  a.x = opt_in(c, CT__LNG_X);
  a.scale = opt_in(c, CT__LNG_SCALE);
  a.mean = opt_in(c, CT__LNG_MEAN);
  a.var = opt_in(c, CT__LNG_VARIANCE);
  a.dy = opt_in(c, CT__LNG_DY);
  return p.inner == 0 ? CT_OK
                      : launch(c, &a, ct__cu_layer_norm_grad, "layer_norm_grad kernel launch");
}

static const ct__kernel_set kernels[] = {
    {"batch_norm", CT__KERNELS([CT_FLOAT32] = batch_norm_cu)},
    {"batch_norm_grad", CT__KERNELS([CT_FLOAT32] = batch_norm_grad_cu)},
    {"layer_norm", CT__KERNELS([CT_FLOAT32] = layer_norm_cu)},
    {"layer_norm_grad", CT__KERNELS([CT_FLOAT32] = layer_norm_grad_cu)},
};

const ct__kernel_table ct__cuda_norm = CT__TABLE(kernels);
