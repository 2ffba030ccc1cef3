/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/random.cu: uniform_random and gaussian_random on the GPU, bit-identical to the CPU
 * kernels in ops/cpu/random.c: the device code and launchers (launch.h) that ops/cuda/random.c
 * calls.
 *
 * One thread per Philox block (a grid-stride loop, grid.cuh): four float32 / float16 / bfloat16
 * elements or two float64 ones, from the same counter and key as on the CPU (philox.h), mapped to
 * values by the same expressions in the same order. What keeps the results identical: philox.h
 * and half.h are the CPU's own code compiled for the device; + - x / and sqrt round to nearest
 * even on both; double to float conversions round to nearest; and this file is compiled with
 * --fmad=false, so no multiply-add is fused into one rounding (the CPU build does not fuse
 * either). */
#include "ops/cuda/grid.cuh"
#include "ops/cuda/launch.h"
#include "ops/half.h"
#include "ops/philox.h"

namespace {

/* Stores float v (already a value of the bounds' type for the clamp) as DT. */
template <int DT>
__device__ __forceinline__ void store_uniform(void *o, int64_t i, float v, float fmin,
                                              float fmax) {
  if (DT == CT_FLOAT32) {
    static_cast<float *>(o)[i] = v > fmax ? fmax : v < fmin ? fmin : v;
  } else if (DT == CT_FLOAT16) {
    float r = ct__half_to_float(ct__float_to_half(v));
    static_cast<uint16_t *>(o)[i] = ct__float_to_half(r > fmax ? fmax : r < fmin ? fmin : r);
  } else {
    float r = ct__bf16_to_float(ct__float_to_bf16(v));
    static_cast<uint16_t *>(o)[i] = ct__float_to_bf16(r > fmax ? fmax : r < fmin ? fmin : r);
  }
}

template <int DT>
__global__ void uniform4(void *o, int64_t n, uint64_t seed, double lo, double span, float fmin,
                         float fmax) {
  int64_t n_blocks = (n + 3) / 4;
  for (int64_t b = ct__cu_first(); b < n_blocks; b += ct__cu_step()) {
    ct__philox_block w = ct__philox((uint64_t)b, seed);
    for (int j = 0; j < 4 && b * 4 + j < n; j++) {
      float v = (float)(lo + span * ct__u24(w.w[j]));
      store_uniform<DT>(o, b * 4 + j, v, fmin, fmax);
    }
  }
}

__device__ __forceinline__ double clamp_d(double v, double lo, double hi) {
  return v > hi ? hi : v < lo ? lo : v;
}

__global__ void uniform2(double *o, int64_t n, uint64_t seed, double lo, double span,
                         double vmin, double vmax) {
  int64_t n_blocks = (n + 1) / 2;
  for (int64_t b = ct__cu_first(); b < n_blocks; b += ct__cu_step()) {
    ct__philox_block w = ct__philox((uint64_t)b, seed);
    o[2 * b] = clamp_d(lo + span * ct__u53(w.w[0], w.w[1]), vmin, vmax);
    if (2 * b + 1 < n) o[2 * b + 1] = clamp_d(lo + span * ct__u53(w.w[2], w.w[3]), vmin, vmax);
  }
}

template <int DT>
__global__ void gaussian4(void *o, int64_t n, uint64_t seed, double mean, double std) {
  int64_t n_blocks = (n + 3) / 4;
  for (int64_t b = ct__cu_first(); b < n_blocks; b += ct__cu_step()) {
    ct__philox_block w = ct__philox((uint64_t)b, seed);
    double z[4];
    ct__box_muller(ct__u24_open0(w.w[0]), ct__u24(w.w[1]), &z[0], &z[1]);
    ct__box_muller(ct__u24_open0(w.w[2]), ct__u24(w.w[3]), &z[2], &z[3]);
    for (int j = 0; j < 4 && b * 4 + j < n; j++) {
      float v = (float)(mean + std * z[j]);
      int64_t i = b * 4 + j;
      if (DT == CT_FLOAT32) {
        static_cast<float *>(o)[i] = v;
      } else if (DT == CT_FLOAT16) {
        static_cast<uint16_t *>(o)[i] = ct__float_to_half(v);
      } else {
        static_cast<uint16_t *>(o)[i] = ct__float_to_bf16(v);
      }
    }
  }
}

__global__ void gaussian2(double *o, int64_t n, uint64_t seed, double mean, double std) {
  int64_t n_blocks = (n + 1) / 2;
  for (int64_t b = ct__cu_first(); b < n_blocks; b += ct__cu_step()) {
    ct__philox_block w = ct__philox((uint64_t)b, seed);
    double z0, z1;
    ct__box_muller(ct__u53_open0(w.w[0], w.w[1]), ct__u53(w.w[2], w.w[3]), &z0, &z1);
    o[2 * b] = mean + std * z0;
    if (2 * b + 1 < n) o[2 * b + 1] = mean + std * z1;
  }
}

/* The grid for n elements of dt: one thread per Philox block, of two float64 elements or four
 * of the other types. */
unsigned philox_grid(ct_dtype dt, int64_t n) {
  return ct__cu_blocks(dt == CT_FLOAT64 ? (n + 1) / 2 : (n + 3) / 4);
}

}  // namespace

extern "C" cudaError_t ct__cu_uniform(void *o, ct_dtype dt, int64_t n, uint64_t seed, double lo,
                                      double span, double vmin, double vmax,
                                      cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  float fmin = (float)vmin, fmax = (float)vmax; /* exact: values of the dtype */
  unsigned b = philox_grid(dt, n);
  switch (dt) {
    case CT_FLOAT64:
      uniform2<<<b, ct__cu_threads, 0, stream>>>(static_cast<double *>(o), n, seed, lo, span,
                                                  vmin, vmax);
      break;
    case CT_FLOAT16:
      uniform4<CT_FLOAT16><<<b, ct__cu_threads, 0, stream>>>(o, n, seed, lo, span, fmin, fmax);
      break;
    case CT_BFLOAT16:
      uniform4<CT_BFLOAT16><<<b, ct__cu_threads, 0, stream>>>(o, n, seed, lo, span, fmin, fmax);
      break;
    default:
      uniform4<CT_FLOAT32><<<b, ct__cu_threads, 0, stream>>>(o, n, seed, lo, span, fmin, fmax);
      break;
  }
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_gaussian(void *o, ct_dtype dt, int64_t n, uint64_t seed,
                                       double mean, double std, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  unsigned b = philox_grid(dt, n);
  switch (dt) {
    case CT_FLOAT64:
      gaussian2<<<b, ct__cu_threads, 0, stream>>>(static_cast<double *>(o), n, seed, mean, std);
      break;
    case CT_FLOAT16:
      gaussian4<CT_FLOAT16><<<b, ct__cu_threads, 0, stream>>>(o, n, seed, mean, std);
      break;
    case CT_BFLOAT16:
      gaussian4<CT_BFLOAT16><<<b, ct__cu_threads, 0, stream>>>(o, n, seed, mean, std);
      break;
    default:
      gaussian4<CT_FLOAT32><<<b, ct__cu_threads, 0, stream>>>(o, n, seed, mean, std);
      break;
  }
  return cudaGetLastError();
}
