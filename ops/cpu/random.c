/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/random.c: the CPU kernels of fill_constant, uniform_random and gaussian_random.
 * Random values come from Philox4x32-10 (philox.h), element by element from the counter, so the
 * result depends only on the seed and the element's index: the same on the GPU, and the same
 * however the work is split. Seed 0 means "a new seed each run", as in PaddlePaddle.
 * uniform_random's values lie in [min, max) in the output dtype: the rare value that rounding to
 * the dtype puts on max (or below a min the dtype cannot hold) is moved to the nearest value
 * inside (ct__uniform_bounds); every backend does the same, so results stay bit-identical. */
#include <math.h>

#include "ops/cpu/parallel.h"
#include "ops/defs.h"
#include "ops/half.h"
#include "ops/philox.h"

/* ---- fill_constant(shape, value, dtype), fill_any_like(value) ------------------------------ */

/* Fills Out (of the kernel's dtype) with v, checked to fit that dtype first. */
static ct_status fill_value(const ct_kernel_ctx *c, double v) {
  ct_tensor *t = ct_kernel_out(c, CT__OUT, 0);
  ct_status s = ct__fill_check(c, v);
  if (s != CT_OK) return s;
  void *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (o == NULL) return ct_last_status();
  int64_t n = t->numel;
  switch (c->dtype) {
    case CT_FLOAT32: for (int64_t i = 0; i < n; i++) ((float *)o)[i] = (float)v; break;
    case CT_FLOAT64: for (int64_t i = 0; i < n; i++) ((double *)o)[i] = v; break;
    case CT_FLOAT16: {
      uint16_t h = ct__f64_to_half(v);
      for (int64_t i = 0; i < n; i++) ((uint16_t *)o)[i] = h;
      break;
    }
    case CT_BFLOAT16: {
      uint16_t h = ct__f64_to_bf16(v);
      for (int64_t i = 0; i < n; i++) ((uint16_t *)o)[i] = h;
      break;
    }
    default: {
      int64_t iv = (int64_t)v; /* exact: fill_check */
      size_t sz = ct_dtype_size(c->dtype);
      for (int64_t i = 0; i < n; i++) {
        switch (sz) {
          case 1: ((uint8_t *)o)[i] = (uint8_t)iv; break;
          case 2: ((int16_t *)o)[i] = (int16_t)iv; break;
          case 4: ((int32_t *)o)[i] = (int32_t)iv; break;
          default: ((int64_t *)o)[i] = iv; break;
        }
      }
    }
  }
  return CT_OK;
}

static ct_status fill_constant(const ct_kernel_ctx *c) {
  return fill_value(c, c->attr[CT__FILL_VALUE].u.f);
}

static ct_status fill_any_like(const ct_kernel_ctx *c) {
  return fill_value(c, c->attr[CT__FILL_LIKE_VALUE].u.f);
}

/* ---- uniform_random(shape, min, max, seed, dtype), gaussian_random(shape, mean, std, ...) ---- */

static inline double clamp_d(double v, double lo, double hi) {
  return v > hi ? hi : v < lo ? lo : v;
}

/* A random kernel's work, split by ct__parallel_for: Philox blocks (4 values of float32 and the
 * half types, 2 of float64), block i from counter i, so the values do not depend on the split. */
typedef struct rnd_job {
  void *o;
  ct_dtype dtype;
  int64_t n;
  uint64_t seed;
  double a, b, vmin, vmax; /* uniform: lo, span and the bounds; gaussian: mean, std */
} rnd_job;

static void uniform_range(void *arg, int64_t first, int64_t last) {
  const rnd_job *j = arg;
  double lo = j->a, span = j->b, vmin = j->vmin, vmax = j->vmax;
  int64_t n = j->n;
  void *o = j->o;
  if (j->dtype == CT_FLOAT64) {
    for (int64_t i = first * 2; i < n && i < last * 2; i += 2) {
      ct__philox_block b = ct__philox((uint64_t)i / 2, j->seed);
      ((double *)o)[i] = clamp_d(lo + span * ct__u53(b.w[0], b.w[1]), vmin, vmax);
      if (i + 1 < n) {
        ((double *)o)[i + 1] = clamp_d(lo + span * ct__u53(b.w[2], b.w[3]), vmin, vmax);
      }
    }
    return;
  }
  float fmin = (float)vmin, fmax = (float)vmax; /* exact: values of the dtype */
  for (int64_t i = first * 4; i < n && i < last * 4; i += 4) {
    ct__philox_block b = ct__philox((uint64_t)i / 4, j->seed);
    for (int k = 0; k < 4 && i + k < n; k++) {
      float v = (float)(lo + span * ct__u24(b.w[k]));
      if (j->dtype == CT_FLOAT32) {
        ((float *)o)[i + k] = v > fmax ? fmax : v < fmin ? fmin : v;
      } else if (j->dtype == CT_FLOAT16) {
        float r = ct__half_to_float(ct__float_to_half(v));
        ((uint16_t *)o)[i + k] = ct__float_to_half(r > fmax ? fmax : r < fmin ? fmin : r);
      } else {
        float r = ct__bf16_to_float(ct__float_to_bf16(v));
        ((uint16_t *)o)[i + k] = ct__float_to_bf16(r > fmax ? fmax : r < fmin ? fmin : r);
      }
    }
  }
}

static void gaussian_range(void *arg, int64_t first, int64_t last) {
  const rnd_job *j = arg;
  double mean = j->a, std = j->b;
  int64_t n = j->n;
  void *o = j->o;
  if (j->dtype == CT_FLOAT64) {
    for (int64_t i = first * 2; i < n && i < last * 2; i += 2) {
      ct__philox_block b = ct__philox((uint64_t)i / 2, j->seed);
      double z0, z1;
      ct__box_muller(ct__u53_open0(b.w[0], b.w[1]), ct__u53(b.w[2], b.w[3]), &z0, &z1);
      ((double *)o)[i] = mean + std * z0;
      if (i + 1 < n) ((double *)o)[i + 1] = mean + std * z1;
    }
    return;
  }
  for (int64_t i = first * 4; i < n && i < last * 4; i += 4) {
    ct__philox_block b = ct__philox((uint64_t)i / 4, j->seed);
    double z[4];
    ct__box_muller(ct__u24_open0(b.w[0]), ct__u24(b.w[1]), &z[0], &z[1]);
    ct__box_muller(ct__u24_open0(b.w[2]), ct__u24(b.w[3]), &z[2], &z[3]);
    for (int k = 0; k < 4 && i + k < n; k++) {
      float v = (float)(mean + std * z[k]);
      if (j->dtype == CT_FLOAT32) {
        ((float *)o)[i + k] = v;
      } else if (j->dtype == CT_FLOAT16) {
        ((uint16_t *)o)[i + k] = ct__float_to_half(v);
      } else {
        ((uint16_t *)o)[i + k] = ct__float_to_bf16(v);
      }
    }
  }
}

/* Runs fn over Out's Philox blocks. */
static void run_blocks(rnd_job *j, ct__range_fn fn) {
  int64_t per = j->dtype == CT_FLOAT64 ? 2 : 4;
  ct__parallel_for((j->n + per - 1) / per, CT__GRAIN_MATH / per, fn, j);
}

static ct_status uniform_random(const ct_kernel_ctx *c) {
  ct_status s = ct__random_check_range(c, false);
  if (s != CT_OK) return s;
  rnd_job j = {ct__k_out_data(c, CT__OUT, 0, c->dtype), c->dtype,
               ct_kernel_out(c, CT__OUT, 0)->numel, ct__random_seed(c), 0, 0, 0, 0};
  if (j.o == NULL) return ct_last_status();
  double lo = c->attr[CT__RND_A].u.f, hi = c->attr[CT__RND_B].u.f;
  ct__uniform_bounds(c->dtype, lo, hi, &j.vmin, &j.vmax);
  j.a = lo;
  j.b = hi - lo;
  run_blocks(&j, uniform_range);
  return CT_OK;
}

static ct_status gaussian_random(const ct_kernel_ctx *c) {
  ct_status s = ct__random_check_range(c, true);
  if (s != CT_OK) return s;
  rnd_job j = {ct__k_out_data(c, CT__OUT, 0, c->dtype), c->dtype,
               ct_kernel_out(c, CT__OUT, 0)->numel, ct__random_seed(c), 0, 0, 0, 0};
  if (j.o == NULL) return ct_last_status();
  j.a = c->attr[CT__RND_A].u.f;
  j.b = c->attr[CT__RND_B].u.f;
  run_blocks(&j, gaussian_range);
  return CT_OK;
}

/* The float dtypes random values come in. */
#define FLOAT_KERNELS(fn) \
  CT__KERNELS([CT_FLOAT32] = fn, [CT_FLOAT64] = fn, [CT_FLOAT16] = fn, [CT_BFLOAT16] = fn)

static const ct__kernel_set kernels[] = {
    {"fill_constant", CT__KERNELS([0] = fill_constant)},
    {"fill_any_like", CT__KERNELS([0] = fill_any_like)},
    {"uniform_random", FLOAT_KERNELS(uniform_random)},
    {"gaussian_random", FLOAT_KERNELS(gaussian_random)},
};

const ct__kernel_table ct__cpu_random = CT__TABLE(kernels);
