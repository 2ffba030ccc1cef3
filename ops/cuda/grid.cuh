/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/grid.cuh: how the operator kernels of ops/cuda size their grids and walk their
 * elements, for the .cu files only (nvcc, C++17).
 *
 * Every kernel is a grid-stride loop: a launch of ct__cu_threads threads per block and at most
 * ct__cu_max_blocks blocks covers any number of elements, each thread taking every
 * (blocks x threads)-th one from its first. 4096 blocks of 256 threads fill any current GPU;
 * the loop covers the rest. Indices are 64-bit throughout, so a tensor may exceed 2^31
 * elements. */
#ifndef CORTEN_OPS_CUDA_GRID_CUH
#define CORTEN_OPS_CUDA_GRID_CUH

#include <stddef.h>
#include <stdint.h>

#include "ops/cuda/launch.h"

/* Threads per block: a power of two, since reduce.cu's block sum halves it. */
constexpr unsigned ct__cu_threads = 256;
constexpr int64_t ct__cu_max_blocks = 4096;

/* A grid of `blocks` blocks (at least 1 wanted), capped at ct__cu_max_blocks. */
inline unsigned ct__cu_grid(int64_t blocks) {
  return (unsigned)(blocks > ct__cu_max_blocks ? ct__cu_max_blocks : blocks);
}

/* The grid for n items (n > 0), one thread each. */
inline unsigned ct__cu_blocks(int64_t n) {
  return ct__cu_grid((n + ct__cu_threads - 1) / ct__cu_threads);
}

/* This thread's first item in a grid-stride loop, and the loop's step. */
__device__ __forceinline__ int64_t ct__cu_first() {
  return (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t ct__cu_step() { return (int64_t)gridDim.x * blockDim.x; }

/* The offset of index i along walk w (launch.h): i split into w's dims, row-major. */
__device__ __forceinline__ int64_t ct__cu_walk_offset(const ct__cu_walk &w, int64_t i) {
  int64_t off = 0;
  for (int k = w.rank - 1; k >= 0; k--) {
    int64_t q = i / w.d[k];
    off += (i - q * w.d[k]) * w.s[k];
    i = q;
  }
  return off;
}

/* Calls f with a value of the unsigned type of es bytes (1, 2, 4, else 8): kernels that only
 * move elements are instantiated once per element size, not once per dtype. */
template <typename F>
void ct__cu_by_size(size_t es, F f) {
  switch (es) {
    case 1: f(uint8_t()); break;
    case 2: f(uint16_t()); break;
    case 4: f(uint32_t()); break;
    default: f(uint64_t()); break;
  }
}

#endif /* CORTEN_OPS_CUDA_GRID_CUH */
