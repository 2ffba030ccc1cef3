/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/nn.cu: gelu, lookup_table_v2, dropout, arg_max and the gradients of the first three
 * on the GPU, float32 (lookup_table_v2 moves rows of any element size): the device code and
 * launchers (launch_layers.h) that ops/cuda/nn.c calls.
 *
 * The CPU kernels' expressions (ops/cpu/nn.c), element by element: gelu in double
 * (ops/gelu.h, the CPU's own code), rounded once (CUDA's erf, tanh and exp may differ from the C
 * library's in the last bit of the double, so rarely the float result does); dropout's mask from
 * philox.h's ct__dropout_keep, the CPU's own code, so it is the same mask for a seed;
 * lookup_table_v2_grad one thread per column adding the rows in the ids' order, the CPU's float
 * additions in the CPU's order. */
#include "ops/cuda/grid.cuh"
#include "ops/cuda/launch_layers.h"
#include "ops/gelu.h"
#include "ops/philox.h"

namespace {

__global__ void gelu_kernel(float *o, const float *x, const float *g, int tanh_form, int64_t n) {
  for (int64_t i = ct__cu_first(); i < n; i += ct__cu_step()) {
    o[i] = g == nullptr ? (float)ct__gelu((double)x[i], tanh_form)
                        : (float)((double)g[i] * ct__gelu_slope((double)x[i], tanh_form));
  }
}

/* Id i of ids (int32 with i32, else int64). */
__device__ inline int64_t id_at(const void *ids, int i32, int64_t i) {
  return i32 ? static_cast<const int32_t *>(ids)[i] : static_cast<const int64_t *>(ids)[i];
}

template <typename U>
__global__ void lookup_kernel(U *o, const U *w, const void *ids, int i32, int64_t n, int64_t d,
                              int64_t pad) {
  for (int64_t k = ct__cu_first(); k < n * d; k += ct__cu_step()) {
    int64_t i = k / d, j = k - i * d, id = id_at(ids, i32, i);
    o[k] = id == pad ? U(0) : w[id * d + j];
  }
}

__global__ void lookup_grad_kernel(float *dw, const float *g, const void *ids, int i32,
                                   int64_t n_ids, int64_t rows, int64_t d, int64_t pad) {
  for (int64_t j = ct__cu_first(); j < d; j += ct__cu_step()) {
    for (int64_t r = 0; r < rows; r++) dw[r * d + j] = 0;
    for (int64_t i = 0; i < n_ids; i++) {
      int64_t id = id_at(ids, i32, i);
      if (id != pad) dw[id * d + j] += g[i * d + j];
    }
  }
}

__global__ void dropout_kernel(float *o, uint8_t *mask, const float *x, int64_t n,
                               uint64_t seed, const int32_t *seed_in, double p, float f,
                               int test) {
  if (seed_in != nullptr) seed = (uint64_t)(int64_t)*seed_in; /* ct__dropout_seed_of */
  for (int64_t i = ct__cu_first(); i < n; i += ct__cu_step()) {
    bool keep = test || ct__dropout_keep((uint64_t)i, seed, p);
    mask[i] = keep;
    o[i] = keep ? x[i] * f : 0.0f;
  }
}

__global__ void dropout_grad_kernel(float *dx, const float *g, const uint8_t *mask, int64_t n,
                                    float f) {
  for (int64_t i = ct__cu_first(); i < n; i += ct__cu_step()) dx[i] = mask[i] ? g[i] * f : 0.0f;
}

__global__ void arg_max_kernel(void *o, int is64, const float *x, int64_t outer, int64_t n,
                               int64_t inner) {
  for (int64_t k = ct__cu_first(); k < outer * inner; k += ct__cu_step()) {
    int64_t a = k / inner, b = k - a * inner;
    const float *xr = x + a * n * inner + b;
    float best = xr[0];
    int64_t idx = 0;
    for (int64_t j = 1; j < n; j++) {
      float v = xr[j * inner];
      if (v > best || (v != v && best == best)) {
        best = v;
        idx = j;
      }
    }
    if (is64) {
      static_cast<int64_t *>(o)[k] = idx;
    } else {
      static_cast<int32_t *>(o)[k] = (int32_t)idx;
    }
  }
}

}  // namespace

extern "C" cudaError_t ct__cu_gelu(float *o, const float *x, const float *g, int tanh_form,
                                   int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  gelu_kernel<<<ct__cu_blocks(n), ct__cu_threads, 0, stream>>>(o, x, g, tanh_form, n);
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_lookup(void *o, const void *w, size_t es, const void *ids,
                                     int i32, int64_t n_ids, int64_t d, int64_t pad,
                                     cudaStream_t stream) {
  if (n_ids <= 0 || d <= 0) return cudaSuccess;
  ct__cu_by_size(es, [&](auto u) {
    using U = decltype(u);
    lookup_kernel<U><<<ct__cu_blocks(n_ids * d), ct__cu_threads, 0, stream>>>(
        static_cast<U *>(o), static_cast<const U *>(w), ids, i32, n_ids, d, pad);
  });
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_lookup_grad(float *dw, const float *g, const void *ids, int i32,
                                          int64_t n_ids, int64_t rows, int64_t d, int64_t pad,
                                          cudaStream_t stream) {
  if (d <= 0 || rows <= 0) return cudaSuccess;
  lookup_grad_kernel<<<ct__cu_blocks(d), ct__cu_threads, 0, stream>>>(dw, g, ids, i32, n_ids,
                                                                      rows, d, pad);
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_dropout(float *o, uint8_t *mask, const float *x, int64_t n,
                                      uint64_t seed, const int32_t *seed_in, double p, float f,
                                      int test, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  dropout_kernel<<<ct__cu_blocks(n), ct__cu_threads, 0, stream>>>(o, mask, x, n, seed, seed_in,
                                                                  p, f, test);
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_dropout_grad(float *dx, const float *g, const uint8_t *mask,
                                           int64_t n, float f, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  dropout_grad_kernel<<<ct__cu_blocks(n), ct__cu_threads, 0, stream>>>(dx, g, mask, n, f);
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_arg_max(void *o, int is64, const float *x, int64_t outer,
                                      int64_t n, int64_t inner, cudaStream_t stream) {
  if (outer * inner <= 0) return cudaSuccess;
  arg_max_kernel<<<ct__cu_blocks(outer * inner), ct__cu_threads, 0, stream>>>(o, is64, x, outer,
                                                                              n, inner);
  return cudaGetLastError();
}
