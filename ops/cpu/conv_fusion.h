/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/conv_fusion.h: conv2d's CPU kernels as functions (ops/cpu/conv.c), for conv2d_fusion's
 * kernels (ops/cpu/conv_fusion.c), which run them and then the epilogue. */
#ifndef CORTEN_OPS_CPU_CONV_FUSION_H
#define CORTEN_OPS_CPU_CONV_FUSION_H

#include <corten/op.h>

ct_status ct__cpu_conv2d_f32(const ct_kernel_ctx *c);
ct_status ct__cpu_conv2d_f64(const ct_kernel_ctx *c);
ct_status ct__cpu_conv2d_fusion_f32(const ct_kernel_ctx *c);
ct_status ct__cpu_conv2d_fusion_f64(const ct_kernel_ctx *c);

#endif /* CORTEN_OPS_CPU_CONV_FUSION_H */
