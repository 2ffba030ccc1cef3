/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/optimizer.cu: sgd, momentum and adam on the GPU for float32 parameters: the device
 * code and launchers (launch.h) that ops/cuda/optimizer.c calls.
 *
 * One thread per element. The one-element inputs (LearningRate, Beta1Pow, Beta2Pow) stay on the
 * device: each thread reads them, float32 or float64, and rounds them to float as the CPU does,
 * then applies the CPU kernel's arithmetic in its order (ops/cpu/optimizer.c), so with
 * --fmad=false and IEEE sqrtf and division the results are the CPU's bit for bit. */
#include <math.h>

#include "ops/cuda/grid.cuh"
#include "ops/cuda/launch.h"

namespace {

/* A one-element float32 or float64 tensor's value, as the CPU's scalar_in reads it. */
__device__ __forceinline__ double scalar(const void *p, int is64) {
  return is64 ? *static_cast<const double *>(p) : (double)*static_cast<const float *>(p);
}

__global__ void sgd_kernel(float *po, const float *p, const float *g, const void *lr_p, int lr64,
                           int64_t n) {
  float lr = (float)scalar(lr_p, lr64);
  for (int64_t i = ct__cu_first(); i < n; i += ct__cu_step()) po[i] = p[i] - lr * g[i];
}

__global__ void momentum_kernel(float *po, float *vo, const float *p, const float *g,
                                const float *v, const void *lr_p, int lr64, float mu,
                                int nesterov, int64_t n) {
  float lr = (float)scalar(lr_p, lr64);
  for (int64_t i = ct__cu_first(); i < n; i += ct__cu_step()) {
    float vn = v[i] * mu + g[i];
    vo[i] = vn;
    po[i] = nesterov ? p[i] - (g[i] + vn * mu) * lr : p[i] - lr * vn;
  }
}

__global__ void adam_kernel(ct__cu_adam a, int64_t n) {
  float lr = (float)scalar(a.lr, a.lr64);
  float b1p = (float)scalar(a.b1p, a.b1p64), b2p = (float)scalar(a.b2p, a.b2p64);
  float b1 = a.beta1, b2 = a.beta2;
  float lr_t = lr * sqrtf(1 - b2p) / (1 - b1p), eps_t = a.eps * sqrtf(1 - b2p);
  for (int64_t i = ct__cu_first(); i < n; i += ct__cu_step()) {
    float gi = a.g[i];
    float m1 = b1 * a.m1[i] + (1 - b1) * gi;
    float m2 = b2 * a.m2[i] + (1 - b2) * gi * gi;
    a.m1o[i] = m1;
    a.m2o[i] = m2;
    a.po[i] = a.p[i] - lr_t * (m1 / (sqrtf(m2) + eps_t));
  }
}

__global__ void scale_scalar_kernel(void *o, const void *x, int is64, double factor) {
  if (is64) {
    *static_cast<double *>(o) = *static_cast<const double *>(x) * factor;
  } else {
    *static_cast<float *>(o) = *static_cast<const float *>(x) * (float)factor;
  }
}

}  // namespace

extern "C" cudaError_t ct__cu_sgd(float *po, const float *p, const float *g, const void *lr,
                                  int lr64, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  sgd_kernel<<<ct__cu_blocks(n), ct__cu_threads, 0, stream>>>(po, p, g, lr, lr64, n);
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_momentum(float *po, float *vo, const float *p, const float *g,
                                       const float *v, const void *lr, int lr64, float mu,
                                       int nesterov, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  momentum_kernel<<<ct__cu_blocks(n), ct__cu_threads, 0, stream>>>(po, vo, p, g, v, lr, lr64,
                                                                   mu, nesterov, n);
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_adam_step(const ct__cu_adam *a, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  adam_kernel<<<ct__cu_blocks(n), ct__cu_threads, 0, stream>>>(*a, n);
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_scale_scalar(void *o, const void *x, int is64, double factor,
                                           cudaStream_t stream) {
  scale_scalar_kernel<<<1, 1, 0, stream>>>(o, x, is64, factor);
  return cudaGetLastError();
}
