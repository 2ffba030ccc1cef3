/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/norm.cu: batch_norm, layer_norm and their gradients on the GPU, float32: the device
 * code and launchers (launch_layers.h) that ops/cuda/norm.c calls.
 *
 * Each thread repeats the CPU kernel's loops (ops/cpu/norm.c) for one channel or one row, sums
 * in double in the same order, with the same expressions (compiled with --fmad=false; sqrt and
 * division round correctly on both), so the results match the CPU's bit for bit. The price is
 * parallelism: a channel's elements are summed by one thread. */
#include "ops/cuda/grid.cuh"
#include "ops/cuda/launch_layers.h"

namespace {

__device__ __forceinline__ double inv_std(double v, double eps) { return 1.0 / sqrt(v + eps); }

__device__ __forceinline__ int64_t at(const ct__cu_norm &a, int64_t o, int64_t ch, int64_t i) {
  return (o * a.c + ch) * a.inner + i;
}

__global__ void batch_norm_kernel(ct__cu_norm a) {
  double m = (double)(a.outer * a.inner);
  for (int64_t ch = ct__cu_first(); ch < a.c; ch += ct__cu_step()) {
    double mu = a.mean[ch], var = a.var[ch];
    if (!a.global) {
      double sum = 0, sq = 0;
      for (int64_t o = 0; o < a.outer; o++) {
        for (int64_t i = 0; i < a.inner; i++) sum += (double)a.x[at(a, o, ch, i)];
      }
      mu = sum / m;
      for (int64_t o = 0; o < a.outer; o++) {
        for (int64_t i = 0; i < a.inner; i++) {
          double d = (double)a.x[at(a, o, ch, i)] - mu;
          sq += d * d;
        }
      }
      var = sq / m;
      a.mean_out[ch] = (float)((double)a.mean[ch] * a.momentum + mu * (1 - a.momentum));
      a.var_out[ch] = (float)((double)a.var[ch] * a.momentum + var * (1 - a.momentum));
    } else {
      a.mean_out[ch] = a.mean[ch];
      a.var_out[ch] = a.var[ch];
    }
    double inv = inv_std(var, a.eps), g = a.scale[ch], b = a.bias[ch];
    a.saved_mean[ch] = (float)mu;
    a.saved_var[ch] = (float)inv;
    for (int64_t o = 0; o < a.outer; o++) {
      for (int64_t i = 0; i < a.inner; i++) {
        int64_t k = at(a, o, ch, i);
        a.y[k] = (float)(((double)a.x[k] - mu) * inv * g + b);
      }
    }
  }
}

__global__ void batch_norm_grad_kernel(ct__cu_norm a) {
  double m = (double)(a.outer * a.inner);
  for (int64_t ch = ct__cu_first(); ch < a.c; ch += ct__cu_step()) {
    double mu = a.saved_mean[ch], inv = a.saved_var[ch], sdy = 0, sdyx = 0;
    for (int64_t o = 0; o < a.outer; o++) {
      for (int64_t i = 0; i < a.inner; i++) {
        int64_t k = at(a, o, ch, i);
        sdy += (double)a.dy[k];
        sdyx += (double)a.dy[k] * (((double)a.x[k] - mu) * inv);
      }
    }
    if (a.dscale != nullptr) a.dscale[ch] = (float)sdyx;
    if (a.dbias != nullptr) a.dbias[ch] = (float)sdy;
    if (a.dx == nullptr) continue;
    double kk = (double)a.scale[ch] * inv, mdy = a.global ? 0 : sdy / m;
    double mdyx = a.global ? 0 : sdyx / m;
    for (int64_t o = 0; o < a.outer; o++) {
      for (int64_t i = 0; i < a.inner; i++) {
        int64_t k = at(a, o, ch, i);
        double xh = ((double)a.x[k] - mu) * inv;
        a.dx[k] = (float)(kk * ((double)a.dy[k] - mdy - xh * mdyx));
      }
    }
  }
}

__global__ void layer_norm_kernel(ct__cu_norm a) {
  double n = (double)a.inner;
  for (int64_t r = ct__cu_first(); r < a.outer; r += ct__cu_step()) {
    const float *xr = a.x + r * a.inner;
    float *yr = a.y + r * a.inner;
    double sum = 0, sq = 0;
    for (int64_t j = 0; j < a.inner; j++) sum += (double)xr[j];
    double mu = sum / n;
    for (int64_t j = 0; j < a.inner; j++) {
      double d = (double)xr[j] - mu;
      sq += d * d;
    }
    double v = sq / n, inv = inv_std(v, a.eps);
    a.mean_out[r] = (float)mu;
    a.var_out[r] = (float)v;
    for (int64_t j = 0; j < a.inner; j++) {
      double xh = ((double)xr[j] - mu) * inv;
      yr[j] = (float)(xh * (a.scale ? (double)a.scale[j] : 1.0) +
                      (a.bias ? (double)a.bias[j] : 0.0));
    }
  }
}

__global__ void layer_norm_dx_kernel(ct__cu_norm a) {
  double n = (double)a.inner;
  for (int64_t r = ct__cu_first(); r < a.outer; r += ct__cu_step()) {
    const float *xr = a.x + r * a.inner, *gr = a.dy + r * a.inner;
    double mu = a.mean[r], inv = inv_std(a.var[r], a.eps), sg = 0, sgx = 0;
    for (int64_t j = 0; j < a.inner; j++) {
      double xh = ((double)xr[j] - mu) * inv;
      double g = (double)gr[j] * (a.scale ? (double)a.scale[j] : 1.0);
      sg += g;
      sgx += g * xh;
    }
    float *dr = a.dx + r * a.inner;
    for (int64_t j = 0; j < a.inner; j++) {
      double xh = ((double)xr[j] - mu) * inv;
      double g = (double)gr[j] * (a.scale ? (double)a.scale[j] : 1.0);
      dr[j] = (float)(inv * (g - sg / n - xh * (sgx / n)));
    }
  }
}

__global__ void layer_norm_dparams_kernel(ct__cu_norm a) {
  for (int64_t j = ct__cu_first(); j < a.inner; j += ct__cu_step()) {
    double ds = 0, db = 0;
    for (int64_t r = 0; r < a.outer; r++) {
      int64_t k = r * a.inner + j;
      double xh = ((double)a.x[k] - (double)a.mean[r]) * inv_std(a.var[r], a.eps);
      ds += (double)a.dy[k] * xh;
      db += (double)a.dy[k];
    }
    if (a.dscale != nullptr) a.dscale[j] = (float)ds;
    if (a.dbias != nullptr) a.dbias[j] = (float)db;
  }
}

}  // namespace

extern "C" cudaError_t ct__cu_batch_norm(const ct__cu_norm *a, cudaStream_t stream) {
  if (a->c <= 0) return cudaSuccess;
  batch_norm_kernel<<<ct__cu_blocks(a->c), ct__cu_threads, 0, stream>>>(*a);
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_batch_norm_grad(const ct__cu_norm *a, cudaStream_t stream) {
  if (a->c <= 0) return cudaSuccess;
  batch_norm_grad_kernel<<<ct__cu_blocks(a->c), ct__cu_threads, 0, stream>>>(*a);
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_layer_norm(const ct__cu_norm *a, cudaStream_t stream) {
  if (a->outer <= 0) return cudaSuccess;
  layer_norm_kernel<<<ct__cu_blocks(a->outer), ct__cu_threads, 0, stream>>>(*a);
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_layer_norm_grad(const ct__cu_norm *a, cudaStream_t stream) {
  if (a->dx != nullptr && a->outer > 0) {
    layer_norm_dx_kernel<<<ct__cu_blocks(a->outer), ct__cu_threads, 0, stream>>>(*a);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  if ((a->dscale != nullptr || a->dbias != nullptr) && a->inner > 0) {
    layer_norm_dparams_kernel<<<ct__cu_blocks(a->inner), ct__cu_threads, 0, stream>>>(*a);
    return cudaGetLastError();
  }
  return cudaSuccess;
}
