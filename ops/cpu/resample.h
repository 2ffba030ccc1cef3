/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/resample.h: the CPU kernels of ops/cpu/resample_grid.c (grid_sample, its gradient and
 * roi_align), which the table of ops/cpu/resample.c lists. */
#ifndef CORTEN_OPS_CPU_RESAMPLE_H
#define CORTEN_OPS_CPU_RESAMPLE_H

#include "ops/cpu/cpu_kernels.h"
#include "ops/defs/resample.h"

ct_status ct__gs_k_f32(const ct_kernel_ctx *c);
ct_status ct__gs_k_f64(const ct_kernel_ctx *c);
ct_status ct__gs_grad_k_f32(const ct_kernel_ctx *c);
ct_status ct__gs_grad_k_f64(const ct_kernel_ctx *c);
ct_status ct__ra_k_f32(const ct_kernel_ctx *c);
ct_status ct__ra_k_f64(const ct_kernel_ctx *c);

#endif /* CORTEN_OPS_CPU_RESAMPLE_H */
