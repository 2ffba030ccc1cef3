/* ops/cuda/reduce.cu: sum's additions, reduce_sum and mean, and softmax on the GPU, for
 * float32 and float64.
 *
 * Written to be plainly correct rather than fast. reduce_sum and mean: one block per output
 * element (a grid-stride loop past 4096 blocks); its threads each add a strided share of the
 * summed elements in double, then the block adds the shares in shared memory and rounds once.
 * softmax: one thread per row, doing the CPU kernel's three passes (max, exp and sum, divide). */
#include <math.h>

#include "ops/cuda/launch.h"

namespace {

const unsigned kThreads = 256; /* a power of two: the block sum halves it */

unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return (unsigned)(b > 4096 ? 4096 : b);
}

template <typename T>
__global__ void add_kernel(T *o, const T *a, const T *b, int64_t n) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    o[i] = a[i] + b[i];
  }
}

/* The offset of index i along walk w. */
__device__ __forceinline__ int64_t walk_offset(const ct__cu_walk &w, int64_t i) {
  int64_t off = 0;
  for (int k = w.rank - 1; k >= 0; k--) {
    int64_t q = i / w.d[k];
    off += (i - q * w.d[k]) * w.s[k];
    i = q;
  }
  return off;
}

template <typename T>
__global__ void reduce_kernel(T *o, const T *x, int64_t n_out, int64_t n_red, ct__cu_walk keep,
                              ct__cu_walk red, int mean) {
  __shared__ double part[kThreads];
  /* i is the same for the whole block, so every thread reaches each __syncthreads. */
  for (int64_t i = blockIdx.x; i < n_out; i += gridDim.x) {
    int64_t base = walk_offset(keep, i);
    double acc = 0;
    for (int64_t j = threadIdx.x; j < n_red; j += blockDim.x) {
      acc += (double)x[base + walk_offset(red, j)];
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
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += stride) {
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

}  // namespace

extern "C" cudaError_t ct__cu_add_n(ct_dtype dt, void *o, const void *a, const void *b,
                                    int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  if (dt == CT_FLOAT64) {
    add_kernel<double><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<double *>(o), static_cast<const double *>(a),
        static_cast<const double *>(b), n);
  } else {
    add_kernel<float><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<float *>(o), static_cast<const float *>(a), static_cast<const float *>(b),
        n);
  }
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_reduce(ct_dtype dt, void *o, const void *x, int64_t n_out,
                                     int64_t n_red, const ct__cu_walk *keep,
                                     const ct__cu_walk *red, int mean, cudaStream_t stream) {
  if (n_out <= 0) return cudaSuccess;
  unsigned blocks = (unsigned)(n_out > 4096 ? 4096 : n_out);
  if (dt == CT_FLOAT64) {
    reduce_kernel<double><<<blocks, kThreads, 0, stream>>>(
        static_cast<double *>(o), static_cast<const double *>(x), n_out, n_red, *keep, *red,
        mean);
  } else {
    reduce_kernel<float><<<blocks, kThreads, 0, stream>>>(
        static_cast<float *>(o), static_cast<const float *>(x), n_out, n_red, *keep, *red, mean);
  }
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_softmax(ct_dtype dt, void *o, const void *x, int64_t rows,
                                      int64_t n, int64_t inner, cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return cudaSuccess;
  if (dt == CT_FLOAT64) {
    softmax_kernel<double><<<blocks_for(rows), kThreads, 0, stream>>>(
        static_cast<double *>(o), static_cast<const double *>(x), rows, n, inner);
  } else {
    softmax_kernel<float><<<blocks_for(rows), kThreads, 0, stream>>>(
        static_cast<float *>(o), static_cast<const float *>(x), rows, n, inner);
  }
  return cudaGetLastError();
}
