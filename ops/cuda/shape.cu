/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/shape.cu: transpose's gather and the row copies of concat and concat_grad on the
 * GPU, for every dtype (elements moved by their size in bytes): the device code and launchers
 * (launch.h) that ops/cuda/shape.c calls.
 *
 * One thread per output element (a grid-stride loop, grid.cuh), with 64-bit index arithmetic
 * throughout. */
#include "ops/cuda/grid.cuh"
#include "ops/cuda/launch.h"

namespace {

template <typename T>
__global__ void gather_kernel(T *o, const T *x, int64_t n, ct__cu_walk w) {
  for (int64_t i = ct__cu_first(); i < n; i += ct__cu_step()) {
    o[i] = x[ct__cu_walk_offset(w, i)];
  }
}

/* Part element j (of n) is whole element a bw + at + (j - a bp) of its row a. */
template <typename T>
__global__ void rows_kernel(T *whole, T *part, int64_t n, int64_t bp, int64_t bw, int64_t at,
                            int split) {
  for (int64_t j = ct__cu_first(); j < n; j += ct__cu_step()) {
    int64_t a = j / bp, w = a * bw + at + (j - a * bp);
    if (split) {
      part[j] = whole[w];
    } else {
      whole[w] = part[j];
    }
  }
}

}  // namespace

extern "C" cudaError_t ct__cu_gather(void *o, const void *x, size_t es, int64_t n,
                                     const ct__cu_walk *w, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  ct__cu_by_size(es, [&](auto t) {
    typedef decltype(t) T;
    gather_kernel<T><<<ct__cu_blocks(n), ct__cu_threads, 0, stream>>>(
        static_cast<T *>(o), static_cast<const T *>(x), n, *w);
  });
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_move_rows(void *whole, void *part, size_t es, int64_t outer,
                                        int64_t bp, int64_t bw, int64_t at, int split,
                                        cudaStream_t stream) {
  int64_t n = outer * bp;
  if (n <= 0) return cudaSuccess;
  ct__cu_by_size(es, [&](auto t) {
    typedef decltype(t) T;
    rows_kernel<T><<<ct__cu_blocks(n), ct__cu_threads, 0, stream>>>(
        static_cast<T *>(whole), static_cast<T *>(part), n, bp, bw, at, split);
  });
  return cudaGetLastError();
}
