/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/random.c: the CUDA kernels of fill_constant, fill_any_like, uniform_random and
 * gaussian_random: their C side (checks, output allocation, launch, messages); the device code is
 * ops/cuda/random.cu, and the two fills repeat their element with the place's own fill
 * (ct__cuda_fill).
 *
 *   fill_constant, fill_any_like  every dtype (fill_any_like: X's dims and dtype)
 *   uniform_random, gaussian_random  float16, bfloat16, float32, float64
 * The checks, seed and bounds are the CPU kernels' own (ops/defs.h), and the values are
 * bit-identical to theirs for a seed. */
#include <string.h>

#include "ops/defs.h"
#include "ops/half.h"

#include "ops/cuda/cuda_kernels.h"
#include "ops/cuda/launch.h"

/* fill_constant and fill_any_like: the element v is made on the host exactly as the CPU kernel
 * makes it, then repeated on the device. */
static ct_status fill_value(const ct_kernel_ctx *c, double v) {
  ct_status st = ct__fill_check(c, v);
  if (st != CT_OK) return st;
  ct_tensor *t = ct_kernel_out(c, CT__OUT, 0);
  void *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (o == NULL) return ct_last_status();
  unsigned char elem[8];
  size_t sz = ct_dtype_size(c->dtype);
  switch (c->dtype) {
    case CT_FLOAT32: { float f = (float)v; memcpy(elem, &f, 4); break; }
    case CT_FLOAT64: memcpy(elem, &v, 8); break;
    case CT_FLOAT16: { uint16_t h = ct__f64_to_half(v); memcpy(elem, &h, 2); break; }
    case CT_BFLOAT16: { uint16_t h = ct__f64_to_bf16(v); memcpy(elem, &h, 2); break; }
    default: {
      int64_t iv = (int64_t)v; /* exact: ct__fill_check */
      if (sz == 1) { uint8_t u = (uint8_t)iv; memcpy(elem, &u, 1); }
      else if (sz == 2) { int16_t u = (int16_t)iv; memcpy(elem, &u, 2); }
      else if (sz == 4) { int32_t u = (int32_t)iv; memcpy(elem, &u, 4); }
      else memcpy(elem, &iv, 8);
    }
  }
  if (t->numel == 0) return CT_OK;
  /* ct__cuda_fill enters the device and checks its launch itself: only its message changes. */
  if (ct__cuda_fill(o, (size_t)t->numel, sz, elem, c->place.device) != CT_OK) {
    return ct__k_relabel(c);
  }
  return CT_OK;
}

static ct_status fill_cu(const ct_kernel_ctx *c) {
  return fill_value(c, c->attr[CT__FILL_VALUE].u.f);
}

static ct_status fill_like_cu(const ct_kernel_ctx *c) {
  return fill_value(c, c->attr[CT__FILL_LIKE_VALUE].u.f);
}

/* uniform_random (attributes A and B: values in [min, max) of the dtype) and gaussian_random
 * (mean + std x a standard normal value). */
static ct_status random_cu(const ct_kernel_ctx *c, bool gaussian) {
  ct_status st = ct__random_check_range(c, gaussian);
  if (st != CT_OK) return st;
  ct_tensor *t = ct_kernel_out(c, CT__OUT, 0);
  void *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (o == NULL) return ct_last_status();
  double a = c->attr[CT__RND_A].u.f, b = c->attr[CT__RND_B].u.f, vmin = 0, vmax = 0;
  if (!gaussian) ct__uniform_bounds(c->dtype, a, b, &vmin, &vmax);
  uint64_t seed = ct__random_seed(c);
  if (t->numel == 0) return CT_OK;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  if (gaussian) {
    cudaError_t e = ct__cu_gaussian(o, c->dtype, t->numel, seed, a, b, l.stream);
    return ct__cu_leave(c, &l, e, "gaussian_random kernel launch");
  }
  cudaError_t e = ct__cu_uniform(o, c->dtype, t->numel, seed, a, b - a, vmin, vmax, l.stream);
  return ct__cu_leave(c, &l, e, "uniform_random kernel launch");
}

static ct_status uniform_cu(const ct_kernel_ctx *c) { return random_cu(c, false); }
static ct_status gaussian_cu(const ct_kernel_ctx *c) { return random_cu(c, true); }

/* ---- The kernel table ------------------------------------------------------------------------ */

#define REALS(fn) \
  CT__KERNELS([CT_FLOAT32] = fn, [CT_FLOAT16] = fn, [CT_BFLOAT16] = fn, [CT_FLOAT64] = fn)

static const ct__kernel_set kernels[] = {
    {"fill_constant", CT__KERNELS([0] = fill_cu)},
    {"uniform_random", REALS(uniform_cu)},
    {"gaussian_random", REALS(gaussian_cu)},
    {"fill_any_like", CT__KERNELS([0] = fill_like_cu)},
};

const ct__kernel_table ct__cuda_random = CT__TABLE(kernels);
