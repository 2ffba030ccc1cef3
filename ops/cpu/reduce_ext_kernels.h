/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/reduce_ext_kernels.h: the CPU kernels of the reduce_ext family, which
 * ops/cpu/reduce_ext.c lists in the family's one kernel table. Each serves every dtype it is
 * registered for, reading c->dtype. */
#ifndef CORTEN_OPS_CPU_REDUCE_EXT_KERNELS_H
#define CORTEN_OPS_CPU_REDUCE_EXT_KERNELS_H

#include "ops/cpu/cpu_kernels.h"
#include "ops/defs/reduce_ext.h"

/* ops/cpu/reduce_ext.c: the reductions and their gradients. */
ct_status ct__rx_kernel(const ct_kernel_ctx *c);
ct_status ct__rx_grad_kernel(const ct_kernel_ctx *c);
/* ops/cpu/reduce_ext_rows.c: arg_min and arg_max_v2; log_softmax, softmax_v2 and hardmax and
 * the gradients of the first two; nll_loss and its gradient; layer_norm_stats. */
ct_status ct__ax_kernel(const ct_kernel_ctx *c);
ct_status ct__sx_kernel(const ct_kernel_ctx *c);
ct_status ct__sx_grad_kernel(const ct_kernel_ctx *c);
ct_status ct__nll_kernel(const ct_kernel_ctx *c);
ct_status ct__nll_grad_kernel(const ct_kernel_ctx *c);
ct_status ct__lns_kernel(const ct_kernel_ctx *c);

#endif /* CORTEN_OPS_CPU_REDUCE_EXT_KERNELS_H */
