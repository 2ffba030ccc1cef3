/* ops/cuda/shape.cu: transpose's gather and concat's row copies on the GPU, for every
 * dtype (elements moved by their size in bytes).
 *
 * One thread per output element (a grid-stride loop past 4096 blocks), with 64-bit index
 * arithmetic throughout. */
#include "ops/cuda/launch.h"

namespace {

const unsigned kThreads = 256;

unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return (unsigned)(b > 4096 ? 4096 : b);
}

template <typename T>
__global__ void gather_kernel(T *o, const T *x, int64_t n, ct__cu_walk w) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t rest = i, off = 0;
    for (int k = w.rank - 1; k >= 0; k--) {
      int64_t q = rest / w.d[k];
      off += (rest - q * w.d[k]) * w.s[k];
      rest = q;
    }
    o[i] = x[off];
  }
}

template <typename T>
__global__ void rows_kernel(T *o, const T *x, int64_t n, int64_t bx, int64_t bo, int64_t at) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += stride) {
    int64_t a = j / bx;
    o[a * bo + at + (j - a * bx)] = x[j];
  }
}

template <typename T>
void launch_gather(void *o, const void *x, int64_t n, const ct__cu_walk *w, cudaStream_t s) {
  gather_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<T *>(o),
                                                      static_cast<const T *>(x), n, *w);
}

template <typename T>
void launch_rows(void *o, const void *x, int64_t n, int64_t bx, int64_t bo, int64_t at,
                 cudaStream_t s) {
  rows_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<T *>(o),
                                                    static_cast<const T *>(x), n, bx, bo, at);
}

}  // namespace

extern "C" cudaError_t ct__cu_gather(void *o, const void *x, size_t es, int64_t n,
                                     const ct__cu_walk *w, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  switch (es) {
    case 1: launch_gather<uint8_t>(o, x, n, w, stream); break;
    case 2: launch_gather<uint16_t>(o, x, n, w, stream); break;
    case 4: launch_gather<uint32_t>(o, x, n, w, stream); break;
    default: launch_gather<uint64_t>(o, x, n, w, stream); break;
  }
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_place_rows(void *o, const void *x, size_t es, int64_t outer,
                                         int64_t bx, int64_t bo, int64_t at,
                                         cudaStream_t stream) {
  int64_t n = outer * bx;
  if (n <= 0) return cudaSuccess;
  switch (es) {
    case 1: launch_rows<uint8_t>(o, x, n, bx, bo, at, stream); break;
    case 2: launch_rows<uint16_t>(o, x, n, bx, bo, at, stream); break;
    case 4: launch_rows<uint32_t>(o, x, n, bx, bo, at, stream); break;
    default: launch_rows<uint64_t>(o, x, n, bx, bo, at, stream); break;
  }
  return cudaGetLastError();
}
