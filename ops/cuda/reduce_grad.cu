/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/reduce_grad.cu: mean_grad and softmax_grad on the GPU, float32: the device code and
 * launchers (launch.h) that ops/cuda/reduce_grad.c calls (reduce_sum_grad is a gather,
 * shape.cu's).
 *
 * mean_grad: one thread per element, each dividing Out@GRAD's one element (read on the device)
 * in double as the CPU does. softmax_grad: one thread per row, doing the CPU kernel's two passes
 * (the dot of Out@GRAD and Out in double and in element order, then Out (Out@GRAD - dot)), so
 * the results are the CPU's bit for bit. */
#include "ops/cuda/grid.cuh"
#include "ops/cuda/launch.h"

namespace {

__global__ void mean_grad_kernel(float *dx, const float *g, int64_t n) {
  float v = (float)((double)g[0] / (double)n);
  for (int64_t i = ct__cu_first(); i < n; i += ct__cu_step()) dx[i] = v;
}

__global__ void softmax_grad_kernel(float *dx, const float *o, const float *g, int64_t rows,
                                    int64_t n, int64_t inner) {
  for (int64_t r = ct__cu_first(); r < rows; r += ct__cu_step()) {
    int64_t a = r / inner, base = a * n * inner + (r - a * inner);
    double dot = 0;
    for (int64_t i = 0; i < n; i++) {
      dot += (double)g[base + i * inner] * (double)o[base + i * inner];
    }
    for (int64_t i = 0; i < n; i++) {
      int64_t at = base + i * inner;
      dx[at] = (float)((double)o[at] * ((double)g[at] - dot));
    }
  }
}

}  // namespace

extern "C" cudaError_t ct__cu_mean_grad(float *dx, const float *g, int64_t n,
                                        cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  mean_grad_kernel<<<ct__cu_blocks(n), ct__cu_threads, 0, stream>>>(dx, g, n);
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_softmax_grad(float *dx, const float *o, const float *g,
                                           int64_t rows, int64_t n, int64_t inner,
                                           cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return cudaSuccess;
  softmax_grad_kernel<<<ct__cu_blocks(rows), ct__cu_threads, 0, stream>>>(dx, o, g, rows, n,
                                                                          inner);
  return cudaGetLastError();
}
