/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/cuda_kernels.h: the CUDA backend's kernel tables, one per op family
 * (ops/cuda/<family>.c), registered by ops/backends.c in CUDA builds. Plain C: it names no CUDA
 * type, so the registration table includes it freely. */
#ifndef CORTEN_OPS_CUDA_KERNELS_H
#define CORTEN_OPS_CUDA_KERNELS_H

#include "ops/kernel.h"
#include "ops/expr/expr_impl.h"

extern const ct__kernel_table ct__cuda_elementwise, ct__cuda_matmul, ct__cuda_random,
    ct__cuda_reduce, ct__cuda_shape;
extern const ct__kernel_table ct__cuda_elementwise_grad;
/* The gradients of matmul and the reduce family (the shape family's are in ct__cuda_shape, as on
 * the CPU), the loss and the optimizers. */
extern const ct__kernel_table ct__cuda_matmul_grad, ct__cuda_reduce_grad, ct__cuda_loss,
    ct__cuda_optimizer;
extern const ct__kernel_table ct__cuda_conv; /* conv2d, pool2d and their gradients */
extern const ct__kernel_table ct__cuda_nn, ct__cuda_norm; /* the layers: ops/cuda/nn.c, norm.c */
/* The collectives over NCCL (ops/cuda/comm.c). */
extern const ct__kernel_table ct__cuda_comm;

/* The expression engine of corten/expr.h (ops/cuda/expr.c: kernels compiled with NVRTC). */
extern const ct__expr_engine ct__cuda_expr;

/* Loads cuBLAS (once) and says whether that worked: CT_OK, or CT_ERR_DEVICE recorded with the
 * reason. The CUDA matmul loads it on first use; the tests call this without a GPU. */
ct_status ct__cuda_cublas_available(void);

#endif /* CORTEN_OPS_CUDA_KERNELS_H */
