/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/elementwise_grad.cu: the gradients of elementwise_{add,sub,mul,div} (with numpy
 * broadcasting) and of the float32 activations on the GPU: the device code and launchers
 * (launch.h) that ops/cuda/elementwise_grad.c calls.
 *
 * Without broadcasting, one thread per element writes both gradients. With broadcasting, one
 * thread per element of the input whose gradient it computes: it starts from 0 and adds one
 * term per element of Out@GRAD that input element was broadcast to, in Out's order. That is the
 * order in which the CPU kernel (ops/cpu/elementwise_grad.c) adds them into the same element, and
 * each term is the CPU's expression, operation for operation (--fmad=false): the results are
 * bit-identical to the CPU's, and fixed whatever the grid. The price is parallelism: an input
 * of few elements broadcast over a large Out (a bias) is summed by few threads, one long sum
 * each. */
#include <type_traits>

#include "ops/cuda/grid.cuh"
#include "ops/cuda/launch.h"

namespace {

/* The gradients of X and of Y at one element, from g (Out@GRAD), x and y: the CPU's own
 * expressions. */
template <int OP>
__device__ __forceinline__ float grad_x(float g, float x, float y) {
  (void)x;
  if (OP == CT__CU_MUL) return g * y;
  if (OP == CT__CU_DIV) return g / y;
  return g;
}

template <int OP>
__device__ __forceinline__ float grad_y(float g, float x, float y) {
  if (OP == CT__CU_SUB) return -g;
  if (OP == CT__CU_MUL) return g * x;
  if (OP == CT__CU_DIV) return -g * x / (y * y);
  return g;
}

template <int OP>
__global__ void flat_grad(float *dx, float *dy, const float *g, const float *x, const float *y,
                          int64_t n) {
  for (int64_t i = ct__cu_first(); i < n; i += ct__cu_step()) {
    float gi = g[i], xi = x[i], yi = y[i];
    if (dx != NULL) dx[i] = grad_x<OP>(gi, xi, yi);
    if (dy != NULL) dy[i] = grad_y<OP>(gi, xi, yi);
  }
}

/* d = the gradient of X (DY false: X is the thread's own input, Y the other) or of Y. */
template <int OP, bool DY>
__global__ void bcast_grad(float *d, const float *g, const float *x, const float *y,
                           int64_t n_in, ct__cu_grad_walk w) {
  const float *other = DY ? x : y;
  const int rank = w.red_out.rank;
  for (int64_t i = ct__cu_first(); i < n_in; i += ct__cu_step()) {
    int64_t go = ct__cu_walk_offset(w.keep_out, i), po = ct__cu_walk_offset(w.keep_other, i);
    int64_t idx[CT_MAX_RANK] = {0};
    float self = DY ? y[i] : x[i], acc = 0.0f;
    for (int64_t r = 0; r < w.n_red; r++) {
      float o = other[po];
      acc += DY ? grad_y<OP>(g[go], o, self) : grad_x<OP>(g[go], self, o);
      /* The next element along the broadcast dims, the last one fastest (Out's order). */
      for (int k = rank - 1; k >= 0; k--) {
        go += w.red_out.s[k];
        po += w.red_other.s[k];
        if (++idx[k] < w.red_out.d[k]) break;
        go -= w.red_out.s[k] * w.red_out.d[k];
        po -= w.red_other.s[k] * w.red_out.d[k];
        idx[k] = 0;
      }
    }
    d[i] = acc;
  }
}

/* X@GRAD of an activation from a (Out, or X for log) and g: the CPU's own expressions. */
template <int OP>
__global__ void unary_grad(float *dx, const float *a, const float *g, int64_t n) {
  for (int64_t i = ct__cu_first(); i < n; i += ct__cu_step()) {
    float ai = a[i], gi = g[i];
    if (OP == CT__CU_RELU) {
      dx[i] = ai > 0 ? gi : 0.0f;
    } else if (OP == CT__CU_SIGMOID) {
      dx[i] = gi * ai * (1.0f - ai);
    } else if (OP == CT__CU_TANH) {
      dx[i] = gi * (1.0f - ai * ai);
    } else if (OP == CT__CU_EXP) {
      dx[i] = gi * ai;
    } else {
      dx[i] = gi / ai;
    }
  }
}

template <int OP>
void launch_unary_grad(float *dx, const float *a, const float *g, int64_t n,
                       cudaStream_t stream) {
  unary_grad<OP><<<ct__cu_blocks(n), ct__cu_threads, 0, stream>>>(dx, a, g, n);
}

/* Calls f with std::integral_constant<int, op> for a binary op (CT__CU_ADD ...). */
template <typename F>
void by_binary(int op, F f) {
  switch (op) {
    case CT__CU_ADD: f(std::integral_constant<int, CT__CU_ADD>()); break;
    case CT__CU_SUB: f(std::integral_constant<int, CT__CU_SUB>()); break;
    case CT__CU_MUL: f(std::integral_constant<int, CT__CU_MUL>()); break;
    default: f(std::integral_constant<int, CT__CU_DIV>()); break;
  }
}

}  // namespace

extern "C" cudaError_t ct__cu_binary_grad(int op, float *dx, float *dy, const float *g,
                                          const float *x, const float *y, int64_t n,
                                          cudaStream_t stream) {
  if (n <= 0 || (dx == NULL && dy == NULL)) return cudaSuccess;
  by_binary(op, [&](auto k) {
    constexpr int OP = decltype(k)::value;
    flat_grad<OP><<<ct__cu_blocks(n), ct__cu_threads, 0, stream>>>(dx, dy, g, x, y, n);
  });
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_binary_grad_bcast(int op, int dy, float *d, const float *g,
                                                const float *x, const float *y, int64_t n_in,
                                                const ct__cu_grad_walk *w,
                                                cudaStream_t stream) {
  if (n_in <= 0) return cudaSuccess;
  unsigned b = ct__cu_blocks(n_in);
  by_binary(op, [&](auto k) {
    constexpr int OP = decltype(k)::value;
    if (dy) {
      bcast_grad<OP, true><<<b, ct__cu_threads, 0, stream>>>(d, g, x, y, n_in, *w);
    } else {
      bcast_grad<OP, false><<<b, ct__cu_threads, 0, stream>>>(d, g, x, y, n_in, *w);
    }
  });
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_unary_grad(int op, float *dx, const float *a, const float *g,
                                         int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  switch (op) {
    case CT__CU_RELU: launch_unary_grad<CT__CU_RELU>(dx, a, g, n, stream); break;
    case CT__CU_SIGMOID: launch_unary_grad<CT__CU_SIGMOID>(dx, a, g, n, stream); break;
    case CT__CU_TANH: launch_unary_grad<CT__CU_TANH>(dx, a, g, n, stream); break;
    case CT__CU_EXP: launch_unary_grad<CT__CU_EXP>(dx, a, g, n, stream); break;
    default: launch_unary_grad<CT__CU_LOG>(dx, a, g, n, stream); break;
  }
  return cudaGetLastError();
}
