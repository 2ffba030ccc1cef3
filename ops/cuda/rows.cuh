/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/rows.cuh: reductions across the threads of a block, for the kernels that give one
 * block to one row or channel (softmax, layer_norm, batch_norm), .cu files only.
 *
 * A block of such a kernel has a multiple of 32 threads, at most 1024 (every warp full, so
 * the shuffles name all 32 lanes); each thread folds its strided share of the row, the warp
 * folds its 32 values with xor shuffles, and every thread then folds the warps' results from
 * shared memory in warp order, so all threads of the block get the same value. */
#ifndef CORTEN_OPS_CUDA_ROWS_CUH
#define CORTEN_OPS_CUDA_ROWS_CUH

#include <stdint.h>

/* Threads for a row of n elements: n rounded up to a warp, at most 256. */
inline unsigned ct__cu_row_threads(int64_t n) {
  int64_t t = (n + 31) / 32 * 32;
  return (unsigned)(t > 256 ? 256 : t < 32 ? 32 : t);
}

struct ct__cu_sum_op {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};

/* The larger of two values, NaN winning (a NaN anywhere in a row makes its maximum NaN, as
 * the CPU's scan does). */
struct ct__cu_max_op {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const { return (b > a || b != b) ? b : a; }
};

/* v folded across the block with op; shared: 32 slots the block may reuse after the call
 * (the call begins with a barrier, so consecutive calls may pass the same slots). */
template <typename T, typename Op>
__device__ __forceinline__ T ct__cu_block_fold(T v, Op op, T *shared) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads(); /* the slots' previous readers are done */
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T r = shared[0];
  for (unsigned w = 1; w < warps; w++) r = op(r, shared[w]);
  return r;
}

/* The row-in-registers kernels read a row of n floats (n % 4 == 0, n <= 4 * ct__cu_row_vecs *
 * 256, 16-byte aligned) once into registers, as float4s: with ct__cu_row_threads(n / 4) threads,
 * at most this many a thread. */
constexpr int ct__cu_row_vecs = 8;

/* Whether a float row kernel may go 16 bytes at a time: n a multiple of 4 and every pointer
 * (NULL ones aside) 16-byte aligned, and the row short enough for the registers. */
inline bool ct__cu_rows_fit_f4(int64_t n, const void *const *p, int np) {
  if (n <= 0 || n % 4 != 0 || n > 4 * ct__cu_row_vecs * 256) return false;
  for (int i = 0; i < np; i++) {
    if (p[i] != nullptr && (uintptr_t)p[i] % 16 != 0) return false;
  }
  return true;
}

#endif /* CORTEN_OPS_CUDA_ROWS_CUH */
