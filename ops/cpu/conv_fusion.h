/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/conv_fusion.h: conv2d's CPU kernels as functions (ops/cpu/conv.c), for conv2d_fusion's
 * kernels (ops/cpu/conv_fusion.c), which run them and then the epilogue. */
#ifndef CORTEN_OPS_CPU_CONV_FUSION_H
#define CORTEN_OPS_CPU_CONV_FUSION_H

#include <stdbool.h>
#include <stdint.h>

#include <corten/op.h>

/* conv2d_fusion's epilogue as conv2d's kernel can apply it itself, while each output is in
 * registers or cache (ops/cpu/gemm.h's ct__gemm_epi for the GEMM paths, plane by plane for the
 * depthwise ones): Output (n, m) plane v becomes act(v + bias[m or 0] + res plane), the residual
 * of plane (n, m) being OH x OW contiguous values at res + n rs_n + m rs_m (strides 0 where it
 * broadcasts); act a CT__EPI_ value (clamp only between bounds the dtype holds exactly). */
typedef struct ct__conv_epi {
  const void *bias, *res;
  int64_t n_bias, rs_n, rs_m;
  int act;
  double lo, hi;
} ct__conv_epi;

ct_status ct__cpu_conv2d_f32(const ct_kernel_ctx *c);
ct_status ct__cpu_conv2d_f64(const ct_kernel_ctx *c);
/* conv2d with the epilogue e (NULL: none) where its path applies it: *applied says whether it
 * did (false for Winograd and batched small images: the caller then runs its own pass). */
ct_status ct__cpu_conv2d_epi_f32(const ct_kernel_ctx *c, const ct__conv_epi *e, bool *applied);
ct_status ct__cpu_conv2d_epi_f64(const ct_kernel_ctx *c, const ct__conv_epi *e, bool *applied);
/* The epilogue e on values [i0, i1) of output plane (n, m) at plane (whose residual it is), in
 * place: + bias, + residual, then the activation: conv2d_fusion's pass over one run
 * (ops/cpu/conv_fusion.c), which the kernels call on the planes or rows they have just written
 * (depthwise planes, Winograd's blocks, the direct loop's blocks). */
void ct__conv_epi_rows_f32(const ct__conv_epi *e, float *plane, int64_t n, int64_t m, int64_t i0,
                           int64_t i1);
void ct__conv_epi_rows_f64(const ct__conv_epi *e, double *plane, int64_t n, int64_t m, int64_t i0,
                           int64_t i1);
ct_status ct__cpu_conv2d_fusion_f32(const ct_kernel_ctx *c);
ct_status ct__cpu_conv2d_fusion_f64(const ct_kernel_ctx *c);
/* conv2d_fusion's epilogue as its kernel's pass applies it (ops/cpu/conv_fusion.c), read from
 * kernel c's operands and attributes for a dtype of es bytes by ct__fusion_epi_make;
 * ct__fusion_values_ applies its bias, batch norm (in double) and activation to n values of
 * output channel m at v, in place (not the residual: ep->res must be NULL), the pass's
 * arithmetic on each value. */
typedef struct ct__fusion_epi {
  void *o;
  const void *bias, *res;
  const void *bn[4]; /* BnScale, BnBias, BnMean, BnVariance; bn[0] NULL: no batch norm */
  double eps;
  int64_t m, ow, plane, n_bias; /* channels, a row, a plane, Bias's elements (1 or m) */
  int64_t rs[4];                /* ResidualData's strides along N, M, OH, OW (0: broadcast) */
  bool res_plane;               /* ResidualData holds a whole plane per (n, m), contiguous */
  int act;                      /* a CT__EPI_ value, or clip in double (after them) */
  double lo, hi;
} ct__fusion_epi;
void ct__fusion_epi_make(const ct_kernel_ctx *c, size_t es, ct__fusion_epi *ep);
void ct__fusion_values_f32(const ct__fusion_epi *ep, float *v, int64_t n, int64_t m);
void ct__fusion_values_f64(const ct__fusion_epi *ep, double *v, int64_t n, int64_t m);
/* pool2d's kernels as functions, and conv2d_pool's (ops/cpu/conv_pool.c). */
ct_status ct__cpu_pool2d_f32(const ct_kernel_ctx *c);
ct_status ct__cpu_pool2d_f64(const ct_kernel_ctx *c);
ct_status ct__cpu_conv2d_pool_f32(const ct_kernel_ctx *c);
ct_status ct__cpu_conv2d_pool_f64(const ct_kernel_ctx *c);
/* conv2d_pool c's float32 forward through the direct loop (ops/cpu/conv_direct.h), where
 * conv2d's kernel for c's Input and Filter would take that path (*taken; else nothing is done
 * but a failing plan's status): the max pool of the convolution with the epilogue e or post
 * (NULL: none) into c's Output, the filters packed as conv2d's direct path keeps them. */
ct_status ct__conv_direct_pooled(const ct_kernel_ctx *c, const ct__conv_epi *e,
                                 const ct__fusion_epi *post, bool *taken);

#endif /* CORTEN_OPS_CPU_CONV_FUSION_H */
