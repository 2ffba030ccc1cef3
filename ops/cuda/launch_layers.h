/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/launch_layers.h: the launchers of the layers' device code (ops/cuda/norm.cu,
 * ops/cuda/nn.cu), called by ops/cuda/norm.c and ops/cuda/nn.c. They follow launch.h's
 * convention: queue on the given stream, return cudaGetLastError (cudaSuccess without launching
 * when there is nothing to do), allocate nothing, record no corten error. float32 throughout;
 * the arithmetic is the CPU kernels' (ops/cpu/norm.c, ops/cpu/nn.c) in their order. */
#ifndef CORTEN_OPS_CUDA_LAUNCH_LAYERS_H
#define CORTEN_OPS_CUDA_LAUNCH_LAYERS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The tensors and plan of a norm kernel (ops/defs.h's ct__norm_plan: outer, c, inner). Unused
 * pointers are NULL; so are unwired optional inputs (layer_norm's Scale and Bias) and outputs
 * (the grad ops' X@GRAD, Scale@GRAD, Bias@GRAD). */
typedef struct ct__cu_norm {
  const float *x, *scale, *bias, *mean, *var, *dy;
  float *y, *mean_out, *var_out, *saved_mean, *saved_var;
  float *dx, *dscale, *dbias;
  int64_t outer, c, inner;
  double momentum, eps;
  int global; /* batch_norm: is_test or use_global_stats */
} ct__cu_norm;

/* batch_norm (mean and var from Mean and Variance: elementwise; or from the batch: a block
 * per channel) and its gradient (one thread per channel, the CPU's loops, with mean, var =
 * SavedMean, SavedVariance). */
cudaError_t ct__cu_batch_norm(const ct__cu_norm *a, cudaStream_t stream);
cudaError_t ct__cu_batch_norm_grad(const ct__cu_norm *a, cudaStream_t stream);

/* layer_norm (a block per row of inner elements) and its gradient (one thread per row; Scale@GRAD
 * and Bias@GRAD one thread per row element, summing over the rows). */
cudaError_t ct__cu_layer_norm(const ct__cu_norm *a, cudaStream_t stream);
cudaError_t ct__cu_layer_norm_grad(const ct__cu_norm *a, cudaStream_t stream);

/* gelu (g NULL: o = gelu(x)) or gelu_grad (o = g gelu'(x)) over n elements, exact or tanh. */
cudaError_t ct__cu_gelu(float *o, const float *x, const float *g, int tanh_form, int64_t n,
                        cudaStream_t stream);

/* lookup_table_v2: o row i = w row ids[i] (rows of d elements of es bytes), zeros where
 * ids[i] == pad; ids int32 with i32, else int64, checked on the host. */
cudaError_t ct__cu_lookup(void *o, const void *w, size_t es, const void *ids, int i32,
                          int64_t n_ids, int64_t d, int64_t pad, cudaStream_t stream);

/* lookup_table_v2_grad: dw [rows, d] zeroed, then row g[i] added into row ids[i] for i in order
 * (ids == pad skipped): one thread per column, so each sum runs in the CPU's order. */
cudaError_t ct__cu_lookup_grad(float *dw, const float *g, const void *ids, int i32,
                               int64_t n_ids, int64_t rows, int64_t d, int64_t pad,
                               cudaStream_t stream);

/* dropout over n elements: test 0 draws the mask (philox.h's ct__dropout_keep with seed, or
 * with the int32 at device address seed_in when not NULL, and p) and writes o = x f where
 * kept, else 0; test 1 writes mask 1 and o = x f. */
cudaError_t ct__cu_dropout(float *o, uint8_t *mask, const float *x, int64_t n, uint64_t seed,
                           const int32_t *seed_in, double p, float f, int test,
                           cudaStream_t stream);

/* dropout_grad: dx = g f where mask, else 0. */
cudaError_t ct__cu_dropout_grad(float *dx, const float *g, const uint8_t *mask, int64_t n, float f,
                                cudaStream_t stream);

/* arg_max of x seen as [outer, n, inner] along n into int64 (is64 1) or int32 o [outer, inner]:
 * the first largest, a NaN counting as largest. */
cudaError_t ct__cu_arg_max(void *o, int is64, const float *x, int64_t outer, int64_t n,
                           int64_t inner, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_OPS_CUDA_LAUNCH_LAYERS_H */
