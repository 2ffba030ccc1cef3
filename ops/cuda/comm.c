/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/comm.c: the collectives' kernels for CUDA tensors over NCCL, on the communicator's
 * stream (core/cuda/nccl.c). One kernel serves every dtype: the engine checks which it can
 * reduce. */
#include "ops/defs.h"

#include "comm/comm_impl.h"
#include "ops/cuda/cuda_kernels.h"

static ct_status collective(const ct_kernel_ctx *c) { 
  return ct__comm_kernel(c, CT__ENGINE_NCCL, NULL);
}

static const ct__kernel_set kernels[] = {CT__COMM_KERNEL_SETS(collective)};

const ct__kernel_table ct__cuda_comm = CT__TABLE(kernels);
