/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/comm.c: the collectives' kernels for host tensors over MPI
 * (core/comm). One kernel serves every dtype: the engine checks which it can reduce. */
#include "ops/defs.h"

#include "comm/comm_impl.h"
#include "ops/cpu/cpu_kernels.h"

static ct_status collective(const ct_kernel_ctx *c) { return ct__comm_kernel(c, CT__ENGINE_MPI); }

static const ct__kernel_set kernels[] = {CT__COMM_KERNEL_SETS(collective)};

const ct__kernel_table ct__cpu_comm = CT__TABLE(kernels);
