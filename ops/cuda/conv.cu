/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/conv.cu: conv2d, pool2d and their gradients on the GPU, float32 NCHW: the device code
 * and launchers (launch.h) that ops/cuda/conv.c calls.
 *
 * Direct kernels, each thread owning the elements it writes (no atomics, so a result does not
 * depend on the launch): conv2d one thread per output; conv2d_grad one thread per input element
 * (the taps that read it, found by inverting oy sh - pt + ky dh = iy) and one per filter element
 * (over images and outputs in order); pool2d one thread per output and pool2d_grad one per plane,
 * both in the CPU kernel's order (ops/cpu/conv_tmpl.h), so pooling matches the CPU bit for bit. */
#include <math.h>

#include "ops/cuda/grid.cuh"
#include "ops/cuda/launch.h"

namespace {

__global__ void conv2d_kernel(ct__cu_conv g, float *o, const float *x, const float *f) {
  const int64_t cg = g.c / g.groups, mg = g.m / g.groups, total = g.n * g.m * g.oh * g.ow;
  for (int64_t i = ct__cu_first(); i < total; i += ct__cu_step()) {
    int64_t ox = i % g.ow, oy = (i / g.ow) % g.oh, mo = (i / (g.ow * g.oh)) % g.m;
    int64_t n = i / (g.ow * g.oh * g.m), c0 = (mo / mg) * cg;
    float acc = 0;
    for (int64_t ci = 0; ci < cg; ci++) {
      const float *xp = x + (n * g.c + c0 + ci) * g.h * g.w;
      const float *fp = f + (mo * cg + ci) * g.kh * g.kw;
      for (int64_t ky = 0; ky < g.kh; ky++) {
        int64_t iy = oy * g.sh - g.pt + ky * g.dh;
        if (iy < 0 || iy >= g.h) continue;
        for (int64_t kx = 0; kx < g.kw; kx++) {
          int64_t ix = ox * g.sw - g.pl + kx * g.dw;
          if (ix >= 0 && ix < g.w) acc += fp[ky * g.kw + kx] * xp[iy * g.w + ix];
        }
      }
    }
    o[i] = acc;
  }
}

/* The output index q (row or column) that tap k reads input index i from, or -1. */
__device__ __forceinline__ int64_t tap_out(int64_t i, int64_t k, int64_t s, int64_t pad,
                                           int64_t dil, int64_t out) {
  int64_t t = i + pad - k * dil;
  if (t < 0 || t % s != 0) return -1;
  t /= s;
  return t < out ? t : -1;
}

__global__ void conv2d_dx_kernel(ct__cu_conv g, float *dx, const float *f, const float *d) {
  const int64_t cg = g.c / g.groups, mg = g.m / g.groups, total = g.n * g.c * g.h * g.w;
  for (int64_t i = ct__cu_first(); i < total; i += ct__cu_step()) {
    int64_t ix = i % g.w, iy = (i / g.w) % g.h, c = (i / (g.w * g.h)) % g.c;
    int64_t n = i / (g.w * g.h * g.c), grp = c / cg, ci = c % cg;
    float acc = 0;
    for (int64_t j = 0; j < mg; j++) {
      int64_t mo = grp * mg + j;
      const float *dp = d + (n * g.m + mo) * g.oh * g.ow;
      const float *fp = f + (mo * cg + ci) * g.kh * g.kw;
      for (int64_t ky = 0; ky < g.kh; ky++) {
        int64_t oy = tap_out(iy, ky, g.sh, g.pt, g.dh, g.oh);
        if (oy < 0) continue;
        for (int64_t kx = 0; kx < g.kw; kx++) {
          int64_t ox = tap_out(ix, kx, g.sw, g.pl, g.dw, g.ow);
          if (ox >= 0) acc += fp[ky * g.kw + kx] * dp[oy * g.ow + ox];
        }
      }
    }
    dx[i] = acc;
  }
}

__global__ void conv2d_df_kernel(ct__cu_conv g, float *df, const float *x, const float *d) {
  const int64_t cg = g.c / g.groups, mg = g.m / g.groups, total = g.m * cg * g.kh * g.kw;
  for (int64_t i = ct__cu_first(); i < total; i += ct__cu_step()) {
    int64_t kx = i % g.kw, ky = (i / g.kw) % g.kh, ci = (i / (g.kw * g.kh)) % cg;
    int64_t mo = i / (g.kw * g.kh * cg), c = (mo / mg) * cg + ci;
    float acc = 0;
    for (int64_t n = 0; n < g.n; n++) {
      const float *xp = x + (n * g.c + c) * g.h * g.w;
      const float *dp = d + (n * g.m + mo) * g.oh * g.ow;
      for (int64_t oy = 0; oy < g.oh; oy++) {
        int64_t iy = oy * g.sh - g.pt + ky * g.dh;
        if (iy < 0 || iy >= g.h) continue;
        for (int64_t ox = 0; ox < g.ow; ox++) {
          int64_t ix = ox * g.sw - g.pl + kx * g.dw;
          if (ix >= 0 && ix < g.w) acc += dp[oy * g.ow + ox] * xp[iy * g.w + ix];
        }
      }
    }
    df[i] = acc;
  }
}

/* The window of output (oy, ox) clipped to the image, and avg's divisor (ct__pool_window). */
__device__ __forceinline__ int64_t window(const ct__cu_conv &g, int64_t oy, int64_t ox,
                                          int64_t *y0, int64_t *y1, int64_t *x0, int64_t *x1) {
  int64_t ys = oy * g.sh - g.pt, xs = ox * g.sw - g.pl, ye = ys + g.kh, xe = xs + g.kw;
  *y0 = ys < 0 ? 0 : ys;
  *x0 = xs < 0 ? 0 : xs;
  *y1 = ye > g.h ? g.h : ye;
  *x1 = xe > g.w ? g.w : xe;
  return g.exclusive ? (*y1 - *y0) * (*x1 - *x0) : g.kh * g.kw;
}

__global__ void pool2d_kernel(ct__cu_conv g, float *o, const float *x) {
  const int64_t total = g.n * g.c * g.oh * g.ow;
  for (int64_t i = ct__cu_first(); i < total; i += ct__cu_step()) {
    int64_t ox = i % g.ow, oy = (i / g.ow) % g.oh, p = i / (g.ow * g.oh);
    const float *xp = x + p * g.h * g.w;
    int64_t y0, y1, x0, x1, cnt = window(g, oy, ox, &y0, &y1, &x0, &x1);
    float acc = g.max ? -INFINITY : 0.0f;
    for (int64_t iy = y0; iy < y1; iy++) {
      for (int64_t ix = x0; ix < x1; ix++) {
        float v = xp[iy * g.w + ix];
        if (!g.max) {
          acc += v;
        } else if (v > acc || v != v) {
          acc = v;
        }
      }
    }
    o[i] = g.max ? (y1 > y0 && x1 > x0 ? acc : 0.0f) : (cnt > 0 ? acc / (float)cnt : 0.0f);
  }
}

__global__ void pool2d_grad_kernel(ct__cu_conv g, float *dx, const float *x, const float *o,
                                   const float *d) {
  const int64_t planes = g.n * g.c, hw = g.h * g.w, ohw = g.oh * g.ow;
  for (int64_t p = ct__cu_first(); p < planes; p += ct__cu_step()) {
    const float *xp = x + p * hw, *op = o + p * ohw, *dp = d + p * ohw;
    float *dxp = dx + p * hw;
    for (int64_t i = 0; i < hw; i++) dxp[i] = 0;
    for (int64_t oy = 0; oy < g.oh; oy++) {
      for (int64_t ox = 0; ox < g.ow; ox++) {
        int64_t y0, y1, x0, x1, cnt = window(g, oy, ox, &y0, &y1, &x0, &x1);
        float dv = dp[oy * g.ow + ox], ov = op[oy * g.ow + ox];
        if (!g.max) {
          float share = cnt > 0 ? dv / (float)cnt : 0.0f;
          for (int64_t iy = y0; iy < y1; iy++) {
            for (int64_t ix = x0; ix < x1; ix++) dxp[iy * g.w + ix] += share;
          }
          continue;
        }
        bool done = false;
        for (int64_t iy = y0; iy < y1 && !done; iy++) {
          for (int64_t ix = x0; ix < x1 && !done; ix++) {
            float v = xp[iy * g.w + ix];
            if (v == ov || (v != v && ov != ov)) {
              dxp[iy * g.w + ix] += dv;
              done = true;
            }
          }
        }
      }
    }
  }
}

}  // namespace

extern "C" cudaError_t ct__cu_conv2d(const ct__cu_conv *g, float *o, const float *x,
                                     const float *f, cudaStream_t stream) {
  int64_t total = g->n * g->m * g->oh * g->ow;
  if (total <= 0) return cudaSuccess;
  conv2d_kernel<<<ct__cu_blocks(total), ct__cu_threads, 0, stream>>>(*g, o, x, f);
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_conv2d_grad(const ct__cu_conv *g, float *dx, float *df,
                                          const float *x, const float *f, const float *d,
                                          cudaStream_t stream) {
  int64_t nx = g->n * g->c * g->h * g->w, nf = g->m * (g->c / g->groups) * g->kh * g->kw;
  if (dx != nullptr && nx > 0) {
    conv2d_dx_kernel<<<ct__cu_blocks(nx), ct__cu_threads, 0, stream>>>(*g, dx, f, d);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  if (df != nullptr && nf > 0) {
    conv2d_df_kernel<<<ct__cu_blocks(nf), ct__cu_threads, 0, stream>>>(*g, df, x, d);
    return cudaGetLastError();
  }
  return cudaSuccess;
}

extern "C" cudaError_t ct__cu_pool2d(const ct__cu_conv *g, float *o, const float *x,
                                     cudaStream_t stream) {
  int64_t total = g->n * g->c * g->oh * g->ow;
  if (total <= 0) return cudaSuccess;
  pool2d_kernel<<<ct__cu_blocks(total), ct__cu_threads, 0, stream>>>(*g, o, x);
  return cudaGetLastError();
}

extern "C" cudaError_t ct__cu_pool2d_grad(const ct__cu_conv *g, float *dx, const float *x,
                                          const float *o, const float *d, cudaStream_t stream) {
  int64_t planes = g->n * g->c;
  if (planes <= 0 || g->h * g->w <= 0) return cudaSuccess;
  pool2d_grad_kernel<<<ct__cu_blocks(planes), ct__cu_threads, 0, stream>>>(*g, dx, x, o, d);
  return cudaGetLastError();
}
