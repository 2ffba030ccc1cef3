/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/conv.c: the CUDA kernels of conv2d, depthwise_conv2d, pool2d and their gradients
 * (ops/defs/conv.c), float32: their C side (the plan every backend follows, output allocation,
 * launch, messages); the device code is ops/cuda/conv.cu. Convolutions go through cuDNN where it
 * is present and takes the geometry (ops/cuda/cudnn.c); else, and for pooling, direct kernels:
 * one thread per output (forward), per input or filter element (conv2d_grad), per plane
 * (pool2d_grad), so no atomics and results that do not depend on the launch. */
#include <string.h>

#include "ops/defs.h"

#include "ops/cuda/cuda_kernels.h"
#include "ops/cuda/cudnn.h"
#include "ops/cuda/launch.h"

static ct__cu_conv device_geom(const ct__conv_geom *g) {
  return (ct__cu_conv){.n = g->n, .c = g->c, .h = g->h, .w = g->w, .m = g->m,
                       .groups = g->groups, .kh = g->kh, .kw = g->kw, .oh = g->oh, .ow = g->ow,
                       .sh = g->sh, .sw = g->sw, .dh = g->dh, .dw = g->dw, .pt = g->pt,
                       .pl = g->pl, .max = g->max, .exclusive = g->exclusive};
}

static ct_status conv2d_cu(const ct_kernel_ctx *c) {
  ct__conv_geom g;
  ct_status st = ct__conv_plan(c, ct_kernel_in(c, CT__CONV_INPUT, 0)->dims,
                               ct_kernel_in(c, CT__CONV_FILTER, 0)->dims, &g);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  float *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  if (g.n * g.m * g.oh * g.ow == 0) return CT_OK;
  ct__cu_conv dg = device_geom(&g);
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  const void *x = ct__k_in_data(ct_kernel_in(c, CT__CONV_INPUT, 0));
  const void *f = ct__k_in_data(ct_kernel_in(c, CT__CONV_FILTER, 0));
  int dnn = ct__cudnn_conv(c, &g, CT__CUDNN_FORWARD, l.stream, o, x, f);
  cudaError_t e = dnn != 0 ? cudaSuccess : ct__cu_conv2d(&dg, o, x, f, l.stream);
  if (dnn < 0) {
    ct_status failed = ct_last_status();
    ct__cu_leave(c, &l, cudaSuccess, "conv2d through cuDNN");
    return failed;
  }
  return ct__cu_leave(c, &l, e, "conv2d kernel launch");
}

static ct_status conv2d_grad_cu(const ct_kernel_ctx *c) {
  ct__conv_geom g;
  ct_status st = ct__conv_plan(c, ct_kernel_in(c, CT__CONV_INPUT, 0)->dims,
                               ct_kernel_in(c, CT__CONV_FILTER, 0)->dims, &g);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  float *dx = NULL, *df = NULL;
  if (ct_kernel_out_count(c, CT__CONV_DINPUT) > 0 &&
      (dx = ct__k_out_data(c, CT__CONV_DINPUT, 0, c->dtype)) == NULL) {
    return ct_last_status();
  }
  if (ct_kernel_out_count(c, CT__CONV_DFILTER) > 0 &&
      (df = ct__k_out_data(c, CT__CONV_DFILTER, 0, c->dtype)) == NULL) {
    return ct_last_status();
  }
  if (dx == NULL && df == NULL) return CT_OK;
  ct__cu_conv dg = device_geom(&g);
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  const void *x = ct__k_in_data(ct_kernel_in(c, CT__CONV_INPUT, 0));
  const void *f = ct__k_in_data(ct_kernel_in(c, CT__CONV_FILTER, 0));
  const void *d = ct__k_in_data(ct_kernel_in(c, CT__CONV_DOUT, 0));
  /* Each gradient through cuDNN where it takes it; the rest by the direct kernel. */
  int dnn_x = dx != NULL ? ct__cudnn_conv(c, &g, CT__CUDNN_BACKWARD_DATA, l.stream, dx, f, d) : 1;
  int dnn_f = dnn_x >= 0 && df != NULL
                  ? ct__cudnn_conv(c, &g, CT__CUDNN_BACKWARD_FILTER, l.stream, df, x, d)
                  : 1;
  if (dnn_x < 0 || dnn_f < 0) {
    ct_status failed = ct_last_status();
    ct__cu_leave(c, &l, cudaSuccess, "conv2d_grad through cuDNN");
    return failed;
  }
  cudaError_t e = cudaSuccess;
  if (dnn_x == 0 || dnn_f == 0) {
    e = ct__cu_conv2d_grad(&dg, dnn_x == 0 ? dx : NULL, dnn_f == 0 ? df : NULL, x, f, d,
                           l.stream);
  }
  return ct__cu_leave(c, &l, e, "conv2d_grad kernel launch");
}

static ct_status pool2d_cu(const ct_kernel_ctx *c) {
  ct__conv_geom g;
  ct_status st = ct__pool_plan(c, ct_kernel_in(c, CT__IN_X, 0)->dims, &g);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  float *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  if (g.n * g.c * g.oh * g.ow == 0) return CT_OK;
  ct__cu_conv dg = device_geom(&g);
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_pool2d(&dg, o, ct__k_in_data(ct_kernel_in(c, CT__IN_X, 0)), l.stream);
  return ct__cu_leave(c, &l, e, "pool2d kernel launch");
}

static ct_status pool2d_grad_cu(const ct_kernel_ctx *c) {
  ct__conv_geom g;
  ct_status st = ct__pool_plan(c, ct_kernel_in(c, CT__POOL_X, 0)->dims, &g);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  float *dx = ct__k_out_data(c, 0, 0, c->dtype);
  if (CT__UNLIKELY(dx == NULL)) return ct_last_status();
  if (g.n * g.c * g.h * g.w == 0) return CT_OK;
  ct__cu_conv dg = device_geom(&g);
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_pool2d_grad(&dg, dx, ct__k_in_data(ct_kernel_in(c, CT__POOL_X, 0)),
                                     ct__k_in_data(ct_kernel_in(c, CT__POOL_OUT, 0)),
                                     ct__k_in_data(ct_kernel_in(c, CT__POOL_DOUT, 0)), l.stream);
  return ct__cu_leave(c, &l, e, "pool2d_grad kernel launch");
}

static const ct__kernel_set kernels[] = {
    {"conv2d", CT__KERNELS([CT_FLOAT32] = conv2d_cu)},
    {"depthwise_conv2d", CT__KERNELS([CT_FLOAT32] = conv2d_cu)},
    {"conv2d_grad", CT__KERNELS([CT_FLOAT32] = conv2d_grad_cu)},
    {"depthwise_conv2d_grad", CT__KERNELS([CT_FLOAT32] = conv2d_grad_cu)},
    {"pool2d", CT__KERNELS([CT_FLOAT32] = pool2d_cu)},
    {"pool2d_grad", CT__KERNELS([CT_FLOAT32] = pool2d_grad_cu)},
};

const ct__kernel_table ct__cuda_conv = CT__TABLE(kernels);
