/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/loss.cu: softmax_with_cross_entropy and its gradient on the GPU, float32: the device
 * code and launchers (launch.h) that ops/cuda/loss.c calls.
 *
 * One thread per row, doing the CPU kernel's steps in its order (ops/cpu/loss.c): the row's
 * maximum (a NaN sticks), exp of the shifted logits with the sum in double, the division, and
 * the loss from log-sum-exp in double. The gradient is the CPU's arithmetic element for element,
 * so it matches bit for bit given the same Softmax; the forward differs from the CPU's by expf's
 * and log's last bits. */
#include <math.h>

#include "ops/cuda/grid.cuh"
#include "ops/cuda/launch.h"

namespace {

__global__ void sce_kernel(float *sm, float *loss, const float *x, const int64_t *hard,
                           const float *soft, int64_t ignore, int64_t rows, int64_t k) {
  for (int64_t i = ct__cu_first(); i < rows; i += ct__cu_step()) {
    const float *xr = x + i * k;
    float *sr = sm + i * k;
    float mx = k > 0 ? xr[0] : 0.0f;
    for (int64_t j = 1; j < k; j++) {
      if (xr[j] > mx || xr[j] != xr[j]) mx = xr[j];
    }
    double sum = 0;
    for (int64_t j = 0; j < k; j++) {
      float e = expf(xr[j] - mx);
      sr[j] = e;
      sum += (double)e;
    }
    for (int64_t j = 0; j < k; j++) sr[j] = (float)((double)sr[j] / sum);
    double lse = (double)mx + log(sum), l = 0;
    if (hard == nullptr) {
      const float *yr = soft + i * k;
      for (int64_t j = 0; j < k; j++) l += (double)yr[j] * (lse - (double)xr[j]);
    } else if (hard[i] != ignore) {
      l = lse - (double)xr[hard[i]];
    }
    loss[i] = (float)l;
  }
}

__global__ void sce_grad_kernel(float *dx, const float *sm, const int64_t *hard,
                                const float *soft, const float *dl, int64_t ignore,
                                int64_t rows, int64_t k) {
  for (int64_t i = ct__cu_first(); i < rows; i += ct__cu_step()) {
    const float *sr = sm + i * k;
    float *dr = dx + i * k, g = dl[i];
    if (hard == nullptr) {
      const float *yr = soft + i * k;
      float total = 0;
      for (int64_t j = 0; j < k; j++) total += yr[j];
      for (int64_t j = 0; j < k; j++) dr[j] = (sr[j] * total - yr[j]) * g;
    } else if (hard[i] == ignore) {
      for (int64_t j = 0; j < k; j++) dr[j] = 0;
    } else {
      for (int64_t j = 0; j < k; j++) dr[j] = sr[j] * g;
      dr[hard[i]] = (sr[hard[i]] - 1) * g;
    }
  }
}

}  // namespace

extern "C" cudaError_t ct__cu_sce(float *sm, float *loss, const float *x, const int64_t *hard,
                                  const float *soft, int64_t ignore, int64_t rows, int64_t k,
                                  cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  sce_kernel<<<ct__cu_blocks(rows), ct__cu_threads, 0, stream>>>(sm, loss, x, hard, soft,
                                                                 ignore, rows, k);
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_sce_grad(float *dx, const float *sm, const int64_t *hard,
                                       const float *soft, const float *dl, int64_t ignore,
                                       int64_t rows, int64_t k, cudaStream_t stream) {
  if (rows <= 0 || k <= 0) return cudaSuccess;
  sce_grad_kernel<<<ct__cu_blocks(rows), ct__cu_threads, 0, stream>>>(dx, sm, hard, soft, dl,
                                                                      ignore, rows, k);
  return cudaGetLastError();
}
