/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/norm.cu: batch_norm, layer_norm and their gradients on the GPU, float32: the device
 * code and launchers (launch_layers.h) that ops/cuda/norm.c calls.
 *
 * The forward kernels give a block to a row (layer_norm) or a channel (batch_norm in training)
 * and fold its sums across the block (ops/cuda/rows.cuh) in double: the CPU sums the same
 * values in element order, so the statistics may differ from the CPU's in the last bit of a
 * double, which the float outputs almost never show (the tests allow one float ulp). batch_norm
 * with given statistics is elementwise, the CPU's expression, the same bits. The gradients
 * repeat the CPU kernel's loops (ops/cpu/norm.c) in one thread per channel or row, summing in
 * double in the same order, with the same expressions (compiled with --fmad=false; sqrt and
 * division round correctly on both), so they match the CPU's bit for bit; the price is
 * parallelism. */
#include "ops/cuda/grid.cuh"
#include "ops/cuda/launch_layers.h"
#include "ops/cuda/rows.cuh"

namespace {

__device__ __forceinline__ double inv_std(double v, double eps) { return 1.0 / sqrt(v + eps); }

__device__ __forceinline__ int64_t at(const ct__cu_norm &a, int64_t o, int64_t ch, int64_t i) {
  return (o * a.c + ch) * a.inner + i;
}

/* Calls f(k) for the elements k of channel ch this thread takes (its block's share). */
template <typename F>
__device__ __forceinline__ void channel_elems(const ct__cu_norm &a, int64_t ch, F f) {
  if (a.inner >= (int64_t)blockDim.x) { /* rows of the channel, the block along each */
    for (int64_t o = 0; o < a.outer; o++) {
#pragma unroll 4
      for (int64_t i = threadIdx.x; i < a.inner; i += blockDim.x) f(at(a, o, ch, i));
    }
  } else {
    for (int64_t k = threadIdx.x; k < a.outer * a.inner; k += blockDim.x) {
      int64_t o = k / a.inner;
      f(at(a, o, ch, k - o * a.inner));
    }
  }
}

/* Whether channel_vecs may serve a: rows of whole float4s, X and Y 16-byte aligned, the group
 * count within 32 bits. */
__device__ __forceinline__ bool channel_vecs_fit(const ct__cu_norm &a) {
  return a.inner % 4 == 0 && (uintptr_t)a.x % 16 == 0 && (uintptr_t)a.y % 16 == 0 &&
         a.outer * (a.inner / 4) <= (int64_t)UINT32_MAX - 4096; /* k + blockDim cannot wrap */
}

/* Calls f(k) for each group of four elements k .. k + 3 of channel ch this thread takes (its
 * block's share; channel_vecs_fit), the channel's rows flattened: one 32-bit division a group,
 * two groups in flight a thread. */
template <typename F>
__device__ __forceinline__ void channel_vecs(const ct__cu_norm &a, int64_t ch, F f) {
  unsigned nv = (unsigned)(a.inner / 4), total = (unsigned)(a.outer * nv);
#pragma unroll 2
  for (unsigned k = threadIdx.x; k < total; k += blockDim.x) {
    unsigned o = k / nv;
    f(at(a, o, ch, (int64_t)(k - o * nv) * 4));
  }
}

/* A count of values, their sum, their mean and the sum of their squared deviations from it.
 * The mean batch_norm uses is sum / n, the CPU's formula (Welford's running mean would turn an
 * infinity into NaN where the CPU keeps it); the deviations come from the running mean. */
struct moments {
  double n, sum, mean, m2;
};

/* x added to m (Welford's update). */
__device__ __forceinline__ void moments_add(moments &m, double x) {
  m.n += 1;
  m.sum += x;
  double d = x - m.mean;
  m.mean += d / m.n;
  m.m2 += d * (x - m.mean);
}

/* The moments of a's values and b's together (Chan, Golub and LeVeque's pairwise form). */
__device__ __forceinline__ moments moments_merge(moments a, moments b) {
  double n = a.n + b.n;
  if (b.n == 0) return a;
  if (a.n == 0) return b;
  double d = b.mean - a.mean, f = b.n / n;
  return {n, a.sum + b.sum, a.mean + d * f, a.m2 + b.m2 + d * d * a.n * f};
}

/* m merged across the block as ct__cu_block_fold merges (lanes by xor shuffles, then the warps
 * in warp order): every thread gets the block's moments. */
__device__ __forceinline__ moments moments_fold(moments m, moments *shared) {
  for (int o = 16; o > 0; o >>= 1) {
    moments other = {__shfl_xor_sync(0xffffffffu, m.n, o), __shfl_xor_sync(0xffffffffu, m.sum, o),
                     __shfl_xor_sync(0xffffffffu, m.mean, o), __shfl_xor_sync(0xffffffffu, m.m2, o)};
    m = moments_merge(m, other);
  }
  unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) shared[warp] = m;
  __syncthreads();
  moments r = shared[0];
  for (unsigned w = 1; w < warps; w++) r = moments_merge(r, shared[w]);
  return r;
}

/* batch_norm in training: one block a channel; the batch's mean (sum / n) and biased variance in
 * one pass over X, each thread's share by Welford's update and the block's shares merged
 * pairwise, in double (stable as the CPU's two passes, in another order: within an ulp of its
 * results); then Y in a second pass. */
__global__ void __launch_bounds__(1024) batch_norm_train_kernel(ct__cu_norm a) {
  __shared__ moments shared[32];
  for (int64_t ch = blockIdx.x; ch < a.c; ch += gridDim.x) {
    moments m = {0, 0, 0, 0};
    const bool vec = channel_vecs_fit(a);
    if (vec) {
      channel_vecs(a, ch, [&](int64_t k) {
        float4 v = *reinterpret_cast<const float4 *>(a.x + k);
        moments_add(m, (double)v.x);
        moments_add(m, (double)v.y);
        moments_add(m, (double)v.z);
        moments_add(m, (double)v.w);
      });
    } else {
      channel_elems(a, ch, [&](int64_t k) { moments_add(m, (double)a.x[k]); });
    }
    m = moments_fold(m, shared);
    double mu = m.sum / m.n, var = m.m2 / m.n; /* an empty batch: 0 / 0, NaN, as the CPU */
    double inv = inv_std(var, a.eps), g = a.scale[ch], b = a.bias[ch];
    if (threadIdx.x == 0) {
      a.mean_out[ch] = (float)((double)a.mean[ch] * a.momentum + mu * (1 - a.momentum));
      a.var_out[ch] = (float)((double)a.var[ch] * a.momentum + var * (1 - a.momentum));
      a.saved_mean[ch] = (float)mu;
      a.saved_var[ch] = (float)inv;
    }
    if (vec) {
      channel_vecs(a, ch, [&](int64_t k) {
        float4 v = *reinterpret_cast<const float4 *>(a.x + k);
        *reinterpret_cast<float4 *>(a.y + k) = make_float4(
            (float)(((double)v.x - mu) * inv * g + b), (float)(((double)v.y - mu) * inv * g + b),
            (float)(((double)v.z - mu) * inv * g + b), (float)(((double)v.w - mu) * inv * g + b));
      });
    } else {
      channel_elems(a, ch, [&](int64_t k) { a.y[k] = (float)(((double)a.x[k] - mu) * inv * g + b); });
    }
  }
}

/* batch_norm with the given statistics over planes of at least a warp (NCHW): one block a plane
 * [o, ch, :], the channel's coefficients read once; the CPU's expression, the same bits. */
__global__ void batch_norm_planes_kernel(ct__cu_norm a) {
  for (int64_t p = blockIdx.x; p < a.outer * a.c; p += gridDim.x) {
    int64_t ch = p % a.c;
    double mu = a.mean[ch], inv = inv_std((double)a.var[ch], a.eps), g = a.scale[ch];
    double b = a.bias[ch];
    const float *xp = a.x + p * a.inner;
    float *yp = a.y + p * a.inner;
#pragma unroll 4
    for (int64_t i = threadIdx.x; i < a.inner; i += blockDim.x) {
      yp[i] = (float)(((double)xp[i] - mu) * inv * g + b);
    }
  }
  if (blockIdx.x == 0) {
    for (int64_t ch = threadIdx.x; ch < a.c; ch += blockDim.x) {
      a.mean_out[ch] = a.mean[ch];
      a.var_out[ch] = a.var[ch];
      a.saved_mean[ch] = a.mean[ch];
      a.saved_var[ch] = (float)inv_std((double)a.var[ch], a.eps);
    }
  }
}

/* batch_norm with the given statistics, elementwise over the whole tensor (NHWC, short planes):
 * the same expression; the per-channel outputs from the first threads. */
__global__ void batch_norm_infer_kernel(ct__cu_norm a) {
  int64_t n = a.outer * a.c * a.inner;
  for (int64_t k = ct__cu_first(); k < n; k += ct__cu_step()) {
    int64_t ch = (k / a.inner) % a.c;
    double mu = a.mean[ch], inv = inv_std((double)a.var[ch], a.eps);
    a.y[k] = (float)(((double)a.x[k] - mu) * inv * (double)a.scale[ch] + (double)a.bias[ch]);
  }
  for (int64_t ch = ct__cu_first(); ch < a.c; ch += ct__cu_step()) {
    a.mean_out[ch] = a.mean[ch];
    a.var_out[ch] = a.var[ch];
    a.saved_mean[ch] = a.mean[ch];
    a.saved_var[ch] = (float)inv_std((double)a.var[ch], a.eps);
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

/* layer_norm: one block a row, its mean and variance folded across the block in double (in
 * another order than the CPU's: within an ulp of it). */
__global__ void layer_norm_rows_kernel(ct__cu_norm a) {
  __shared__ double shared[32];
  double n = (double)a.inner;
  for (int64_t r = blockIdx.x; r < a.outer; r += gridDim.x) {
    const float *xr = a.x + r * a.inner;
    float *yr = a.y + r * a.inner;
    double sum = 0, sq = 0;
    for (int64_t j = threadIdx.x; j < a.inner; j += blockDim.x) sum += (double)xr[j];
    double mu = ct__cu_block_fold(sum, ct__cu_sum_op(), shared) / n;
    for (int64_t j = threadIdx.x; j < a.inner; j += blockDim.x) {
      double d = (double)xr[j] - mu;
      sq += d * d;
    }
    double v = ct__cu_block_fold(sq, ct__cu_sum_op(), shared) / n, inv = inv_std(v, a.eps);
    if (threadIdx.x == 0) {
      a.mean_out[r] = (float)mu;
      a.var_out[r] = (float)v;
    }
    for (int64_t j = threadIdx.x; j < a.inner; j += blockDim.x) {
      double xh = ((double)xr[j] - mu) * inv;
      yr[j] = (float)(xh * (a.scale ? (double)a.scale[j] : 1.0) +
                      (a.bias ? (double)a.bias[j] : 0.0));
    }
  }
}

/* layer_norm of rows read once into registers (ct__cu_rows_fit_f4: X, Y, Scale and Bias 16-byte
 * aligned, inner % 4 == 0): the same steps and arithmetic as layer_norm_rows_kernel, the row
 * read from memory once and written once. */
__global__ void layer_norm_rows_f4_kernel(ct__cu_norm a) {
  __shared__ double shared[32];
  const double n = (double)a.inner;
  const int64_t nv = a.inner / 4;
  for (int64_t r = blockIdx.x; r < a.outer; r += gridDim.x) {
    const float4 *xr = reinterpret_cast<const float4 *>(a.x + r * a.inner);
    float4 *yr = reinterpret_cast<float4 *>(a.y + r * a.inner);
    float4 v[ct__cu_row_vecs];
    double sum = 0, sq = 0;
#pragma unroll
    for (int j = 0; j < ct__cu_row_vecs; j++) {
      int64_t i = threadIdx.x + (int64_t)j * blockDim.x;
      if (i < nv) {
        v[j] = xr[i];
        sum += (double)v[j].x + (double)v[j].y + (double)v[j].z + (double)v[j].w;
      }
    }
    double mu = ct__cu_block_fold(sum, ct__cu_sum_op(), shared) / n;
#pragma unroll
    for (int j = 0; j < ct__cu_row_vecs; j++) {
      if (threadIdx.x + (int64_t)j * blockDim.x < nv) {
        double d0 = (double)v[j].x - mu, d1 = (double)v[j].y - mu;
        double d2 = (double)v[j].z - mu, d3 = (double)v[j].w - mu;
        sq += d0 * d0 + d1 * d1 + d2 * d2 + d3 * d3;
      }
    }
    double var = ct__cu_block_fold(sq, ct__cu_sum_op(), shared) / n, inv = inv_std(var, a.eps);
    if (threadIdx.x == 0) {
      a.mean_out[r] = (float)mu;
      a.var_out[r] = (float)var;
    }
#pragma unroll
    for (int j = 0; j < ct__cu_row_vecs; j++) {
      int64_t i = threadIdx.x + (int64_t)j * blockDim.x;
      if (i < nv) {
        float4 g = a.scale ? reinterpret_cast<const float4 *>(a.scale)[i] : make_float4(1, 1, 1, 1);
        float4 b = a.bias ? reinterpret_cast<const float4 *>(a.bias)[i] : make_float4(0, 0, 0, 0);
        yr[i] = make_float4((float)(((double)v[j].x - mu) * inv * (double)g.x + (double)b.x),
                            (float)(((double)v[j].y - mu) * inv * (double)g.y + (double)b.y),
                            (float)(((double)v[j].z - mu) * inv * (double)g.z + (double)b.z),
                            (float)(((double)v[j].w - mu) * inv * (double)g.w + (double)b.w));
      }
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
  if (a->global && a->inner >= 32 && a->outer > 0) {
    batch_norm_planes_kernel<<<ct__cu_grid(a->outer * a->c), ct__cu_threads, 0, stream>>>(*a);
  } else if (a->global) {
    int64_t n = a->outer * a->c * a->inner;
    batch_norm_infer_kernel<<<ct__cu_blocks(n > a->c ? n : a->c), ct__cu_threads, 0, stream>>>(
        *a);
  } else {
    batch_norm_train_kernel<<<ct__cu_grid(a->c), 1024, 0, stream>>>(*a);
  }
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_batch_norm_grad(const ct__cu_norm *a, cudaStream_t stream) {
  if (a->c <= 0) return cudaSuccess;
  batch_norm_grad_kernel<<<ct__cu_blocks(a->c), ct__cu_threads, 0, stream>>>(*a);
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_layer_norm(const ct__cu_norm *a, cudaStream_t stream) {
  if (a->outer <= 0) return cudaSuccess;
  const void *ptrs[4] = {a->x, a->y, a->scale, a->bias};
  if (ct__cu_rows_fit_f4(a->inner, ptrs, 4)) {
    layer_norm_rows_f4_kernel<<<ct__cu_grid(a->outer), ct__cu_row_threads(a->inner / 4), 0,
                                stream>>>(*a);
  } else {
    layer_norm_rows_kernel<<<ct__cu_grid(a->outer), ct__cu_row_threads(a->inner), 0, stream>>>(
        *a);
  }
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
