/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/reduce.cu: sum's additions, reduce_sum and mean, and softmax on the GPU, for
 * float32 and float64: the device code and launchers (launch.h) that ops/cuda/reduce.c calls.
 *
 * reduce_sum and mean: one block per output element (a grid-stride loop over blocks, grid.cuh);
 * its threads each add a strided share of the summed elements in double, then the block adds the
 * shares in shared memory and rounds once. softmax does the CPU kernel's three passes (max, exp
 * and sum, divide): over the last axis a block a row (rows.cuh; float32 rows of up to 8192 held
 * in registers), over another axis a thread a column. */
#include <math.h>

#include "ops/cuda/grid.cuh"
#include "ops/cuda/launch.h"
#include "ops/cuda/rows.cuh"

namespace {

template <typename T>
__global__ void add_kernel(T *o, const T *a, const T *b, int64_t n) {
  for (int64_t i = ct__cu_first(); i < n; i += ct__cu_step()) {
    o[i] = a[i] + b[i];
  }
}

template <typename T>
__global__ void reduce_kernel(T *o, const T *x, int64_t n_out, int64_t n_red, ct__cu_walk keep,
                              ct__cu_walk red, int mean) {
  __shared__ double part[ct__cu_threads];
  /* i is the same for the whole block, so every thread reaches each __syncthreads. */
  for (int64_t i = blockIdx.x; i < n_out; i += gridDim.x) {
    int64_t base = ct__cu_walk_offset(keep, i);
    double acc = 0;
    for (int64_t j = threadIdx.x; j < n_red; j += blockDim.x) {
      acc += (double)x[base + ct__cu_walk_offset(red, j)];
    }
    part[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned h = blockDim.x / 2; h > 0; h /= 2) {
      if (threadIdx.x < h) part[threadIdx.x] += part[threadIdx.x + h];
      __syncthreads();
    }
    if (threadIdx.x == 0) o[i] = (T)(mean ? part[0] / (double)n_red : part[0]);
    __syncthreads(); /* part is reused for the next output */
  }
}

__device__ __forceinline__ float exp_of(float v) { return expf(v); }
__device__ __forceinline__ double exp_of(double v) { return exp(v); }

template <typename T>
__global__ void softmax_kernel(T *o, const T *x, int64_t rows, int64_t n, int64_t inner) {
  for (int64_t r = ct__cu_first(); r < rows; r += ct__cu_step()) {
    int64_t a = r / inner, b = r - a * inner;
    const T *xr = x + a * n * inner + b;
    T *orow = o + a * n * inner + b;
    T mx = xr[0];
    for (int64_t i = 1; i < n; i++) {
      T v = xr[i * inner];
      if (v > mx || v != v) mx = v; /* a NaN sticks, as on the CPU */
    }
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
      T e = exp_of(xr[i * inner] - mx);
      orow[i * inner] = e;
      sum += (double)e;
    }
    for (int64_t i = 0; i < n; i++) orow[i * inner] = (T)((double)orow[i * inner] / sum);
  }
}

/* softmax over the last axis (inner 1): one block a row, the same three steps with the row's
 * maximum and sum folded across the block (the sum in double, in another order than the
 * CPU's: within an ulp of it). The last step computes each exponential again rather than
 * reading it back (the same value): x is read three times, mostly from the cache, and Out
 * written once. */
template <typename T>
__global__ void softmax_rows_kernel(T *o, const T *x, int64_t rows, int64_t n) {
  __shared__ double dshared[32];
  __shared__ T tshared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + r * n;
    T *orow = o + r * n;
    T mx = xr[0];
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) mx = ct__cu_max_op()(mx, xr[i]);
    mx = ct__cu_block_fold(mx, ct__cu_max_op(), tshared);
    double sum = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += (double)exp_of(xr[i] - mx);
    sum = ct__cu_block_fold(sum, ct__cu_sum_op(), dshared);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      orow[i] = (T)((double)exp_of(xr[i] - mx) / sum);
    }
  }
}

/* softmax of float32 rows read once into registers (ct__cu_rows_fit_f4): one block a row, each
 * thread at most ct__cu_row_vecs float4; the same three steps and the same arithmetic as
 * softmax_rows_kernel, the row read from memory once and written once. */
__global__ void softmax_rows_f4_kernel(float *o, const float *x, int64_t rows, int64_t n) {
  __shared__ double dshared[32];
  __shared__ float fshared[32];
  const int64_t nv = n / 4;
  const ct__cu_max_op mx_op;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float4 *xr = reinterpret_cast<const float4 *>(x + r * n);
    float4 *orow = reinterpret_cast<float4 *>(o + r * n);
    float4 v[ct__cu_row_vecs];
    float mx = x[r * n];
#pragma unroll
    for (int j = 0; j < ct__cu_row_vecs; j++) {
      int64_t i = threadIdx.x + (int64_t)j * blockDim.x;
      if (i < nv) {
        v[j] = xr[i];
        mx = mx_op(mx_op(mx_op(mx_op(mx, v[j].x), v[j].y), v[j].z), v[j].w);
      }
    }
    mx = ct__cu_block_fold(mx, mx_op, fshared);
    double sum = 0;
#pragma unroll
    for (int j = 0; j < ct__cu_row_vecs; j++) {
      if (threadIdx.x + (int64_t)j * blockDim.x < nv) {
        v[j].x = expf(v[j].x - mx);
        v[j].y = expf(v[j].y - mx);
        v[j].z = expf(v[j].z - mx);
        v[j].w = expf(v[j].w - mx);
        sum += (double)v[j].x + (double)v[j].y + (double)v[j].z + (double)v[j].w;
      }
    }
    sum = ct__cu_block_fold(sum, ct__cu_sum_op(), dshared);
#pragma unroll
    for (int j = 0; j < ct__cu_row_vecs; j++) {
      int64_t i = threadIdx.x + (int64_t)j * blockDim.x;
      if (i < nv) {
        orow[i] = make_float4((float)((double)v[j].x / sum), (float)((double)v[j].y / sum),
                              (float)((double)v[j].z / sum), (float)((double)v[j].w / sum));
      }
    }
  }
}

/* Calls f with a value of the element type of dt: double for float64, else float. */
template <typename F>
void by_real(ct_dtype dt, F f) {
  if (dt == CT_FLOAT64) {
    f(double());
  } else {
    f(float());
  }
}

}  // namespace

extern "C" cudaError_t ct__cu_add_n(ct_dtype dt, void *o, const void *a, const void *b,
                                    int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  by_real(dt, [&](auto t) {
    typedef decltype(t) T;
    add_kernel<T><<<ct__cu_blocks(n), ct__cu_threads, 0, stream>>>(
        static_cast<T *>(o), static_cast<const T *>(a), static_cast<const T *>(b), n);
  });
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_reduce(ct_dtype dt, void *o, const void *x, int64_t n_out,
                                     int64_t n_red, const ct__cu_walk *keep,
                                     const ct__cu_walk *red, int mean, cudaStream_t stream) {
  if (n_out <= 0) return cudaSuccess;
  by_real(dt, [&](auto t) {
    typedef decltype(t) T;
    reduce_kernel<T><<<ct__cu_grid(n_out), ct__cu_threads, 0, stream>>>(
        static_cast<T *>(o), static_cast<const T *>(x), n_out, n_red, *keep, *red, mean);
  });
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_softmax(ct_dtype dt, void *o, const void *x, int64_t rows,
                                      int64_t n, int64_t inner, cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return cudaSuccess;
  const void *ptrs[2] = {o, x};
  if (dt == CT_FLOAT32 && inner == 1 && ct__cu_rows_fit_f4(n, ptrs, 2)) {
    softmax_rows_f4_kernel<<<ct__cu_grid(rows), ct__cu_row_threads(n / 4), 0, stream>>>(
        static_cast<float *>(o), static_cast<const float *>(x), rows, n);
    return cudaGetLastError();
  }
  by_real(dt, [&](auto t) {
    typedef decltype(t) T;
    if (inner == 1) {
      softmax_rows_kernel<T><<<ct__cu_grid(rows), ct__cu_row_threads(n), 0, stream>>>(
          static_cast<T *>(o), static_cast<const T *>(x), rows, n);
    } else { /* a thread a column: neighbouring threads read neighbouring columns */
      softmax_kernel<T><<<ct__cu_blocks(rows), ct__cu_threads, 0, stream>>>(
          static_cast<T *>(o), static_cast<const T *>(x), rows, n, inner);
    }
  });
  return cudaGetLastError();
}
