/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/cudnn.h: convolutions through cuDNN where it is present (ops/cuda/cudnn.c), for
 * ops/cuda/conv.c, which runs its direct kernels wherever cuDNN declines. */
#ifndef CORTEN_OPS_CUDA_CUDNN_H
#define CORTEN_OPS_CUDA_CUDNN_H

#include <stdbool.h>

#include <cuda_runtime_api.h>

#include "ops/defs.h"

typedef enum ct__cudnn_kind {
  CT__CUDNN_FORWARD = 0,       /* out = Y from a = X, b = W */
  CT__CUDNN_BACKWARD_DATA = 1, /* out = dX from a = W, b = dY */
  CT__CUDNN_BACKWARD_FILTER = 2 /* out = dW from a = X, b = dY */
} ct__cudnn_kind;

/* Whether cuDNN was found (loaded on the first call). */
bool ct__cudnn_available(void);

/* Runs kind of conv2d's geometry g (NCHW, float32) on stream, overwriting out. 1: done; 0:
 * declined, nothing written (no cuDNN, a geometry it does not take, no deterministic algorithm):
 * run the direct kernel; -1: failed, recorded naming the op through c. */
int ct__cudnn_conv(const ct_kernel_ctx *c, const ct__conv_geom *g, ct__cudnn_kind kind,
                   cudaStream_t stream, void *out, const void *a, const void *b);

#endif /* CORTEN_OPS_CUDA_CUDNN_H */
