/* core/op/kernels/random.c: fill_constant, uniform_random and gaussian_random on the CPU.
 * Random values come from Philox4x32-10 (philox.h), element by element from the counter, so the
 * result depends only on the seed and the element's index: the same on the GPU, and the same
 * however the work is split. Seed 0 means "a new seed each run", as in PaddlePaddle.
 * uniform_random's values lie in [min, max) in the output dtype: the rare value that rounding to
 * the dtype puts on max (or below a min the dtype cannot hold) is moved to the nearest value
 * inside (uniform_bounds); a CUDA kernel must do the same to stay bit-identical. */
#include <math.h>
#include <stdatomic.h>
#include <time.h>

#include "op/kernels/half.h"
#include "op/kernels/kernels.h"
#include "op/kernels/philox.h"

enum { OUT_OUT };

static ct_status shape_infer(const ct_kernel_ctx *c) {
  const ct_attr_value *shape = &c->attr[0];
  if (shape->u.ints.n > CT_MAX_RANK) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "attribute 'shape' has %zu dims, more than CT_MAX_RANK (%d)",
                          shape->u.ints.n, CT_MAX_RANK);
  }
  return ct__k_resize(c, OUT_OUT, 0, ct_ddim_make(shape->u.ints.v, (int)shape->u.ints.n));
}

/* ---- fill_constant(shape, value, dtype) ---------------------------------------------------- */
enum { FILL_SHAPE, FILL_VALUE, FILL_DTYPE };

/* Integers and bool: the value must be exactly representable (checked before Out is touched). */
ct_status ct__fill_check(const ct_kernel_ctx *c, double v) {
  int64_t lo = 0, hi = 1;
  switch (c->dtype) {
    case CT_FLOAT16: case CT_BFLOAT16: case CT_FLOAT32: case CT_FLOAT64: return CT_OK;
    case CT_INT8: lo = INT8_MIN; hi = INT8_MAX; break;
    case CT_UINT8: lo = 0; hi = UINT8_MAX; break;
    case CT_INT16: lo = INT16_MIN; hi = INT16_MAX; break;
    case CT_INT32: lo = INT32_MIN; hi = INT32_MAX; break;
    case CT_INT64: lo = INT64_MIN; hi = INT64_MAX; break;
    default: break;
  }
  if (!(v >= (double)lo && v <= (double)hi) ||
      (c->dtype == CT_INT64 && v >= 9223372036854775808.0) || v != (double)(int64_t)v) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "attribute 'value' %g is not a %s value: give an integer in "
                          "[%lld, %lld]",
                          v, ct_dtype_name(c->dtype), (long long)lo, (long long)hi);
  }
  return CT_OK;
}

static ct_status fill_constant(const ct_kernel_ctx *c) {
  ct_tensor *t = ct_kernel_out(c, OUT_OUT, 0);
  double v = c->attr[FILL_VALUE].u.f;
  ct_status s = ct__fill_check(c, v);
  if (s != CT_OK) return s;
  void *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);
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

static const int64_t scalar_shape[1] = {1};

static const ct_attr_def fill_attrs[] = {
    {"shape", {.type = CT_ATTR_INTS, .u.ints = {scalar_shape, 1}}, true},
    {"value", {.type = CT_ATTR_FLOAT, .u.f = 0.0}, false},
    {"dtype", {.type = CT_ATTR_INT, .u.i = CT_FLOAT32}, false},
};

/* ---- uniform_random(shape, min, max, seed, dtype), gaussian_random(shape, mean, std, ...) ---- */
enum { RND_SHAPE, RND_A, RND_B, RND_SEED, RND_DTYPE };

static _Atomic uint64_t seed_counter;

/* The seed of this run: the attribute, or a fresh one for seed 0. */
uint64_t ct__random_seed(const ct_kernel_ctx *c) {
  uint64_t s = (uint64_t)c->attr[RND_SEED].u.i;
  if (s != 0) return s;
  uint64_t n = atomic_fetch_add(&seed_counter, 1) + 1;
  uint64_t t = (uint64_t)time(NULL);
  return (t * 0x9E3779B97F4A7C15u) ^ (n * 0xBF58476D1CE4E5B9u) ^ (uint64_t)(uintptr_t)c;
}

ct_status ct__random_check_range(const ct_kernel_ctx *c, bool gaussian) {
  double a = c->attr[RND_A].u.f, b = c->attr[RND_B].u.f;
  /* Infinite bounds, or a span that overflows a double, would make values NaN. */
  if (!isfinite(a) || !isfinite(b) || !isfinite(b - a)) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attributes %s %g and %s %g: both must be finite (and, for uniform "
                          "bounds, max - min too)",
                          gaussian ? "mean" : "min", a, gaussian ? "std" : "max", b);
  }
  if (!gaussian && !(a <= b)) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attributes min %g and max %g: min must not exceed max", a, b);
  }
  if (gaussian && !(b >= 0)) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute std is %g: a standard deviation must be 0 or more", b);
  }
  return CT_OK;
}

/* A value of dtype t (float16, bfloat16, float32 or float64), as a double. */
static double to_dtype(ct_dtype t, double v) {
  switch (t) {
    case CT_FLOAT16: return ct__half_to_float(ct__f64_to_half(v));
    case CT_BFLOAT16: return ct__bf16_to_float(ct__f64_to_bf16(v));
    case CT_FLOAT32: return (float)v;
    default: return v;
  }
}

/* The next value of dtype t above (up) or below v, a finite value of t. */
static double step(ct_dtype t, double v, bool up) {
  if (t == CT_FLOAT64) return nextafter(v, up ? INFINITY : -INFINITY);
  if (t == CT_FLOAT32) return nextafterf((float)v, up ? INFINITY : -INFINITY);
  uint16_t h = t == CT_FLOAT16 ? ct__f64_to_half(v) : ct__f64_to_bf16(v);
  if ((h & 0x7fffu) == 0) {
    h = up ? 0x0001u : 0x8001u;
  } else if (((h & 0x8000u) != 0) == up) {
    h--; /* toward zero */
  } else {
    h++;
  }
  return t == CT_FLOAT16 ? ct__half_to_float(h) : ct__bf16_to_float(h);
}

/* The values of dtype t nearest the inside of [lo, hi): the largest below hi and the smallest at
 * or above lo. A uniform value that rounds onto max (lo + span x u is below max, but rounding
 * to the dtype can reach it), or below a min the dtype cannot hold, is moved to them, so every
 * value lies in [min, max). When no value of t lies inside (min == max), both are min
 * rounded to t. Infinite bounds clamp nothing. */
void ct__uniform_bounds(ct_dtype t, double lo, double hi, double *vmin, double *vmax) {
  if (!isfinite(lo) || !isfinite(hi)) {
    *vmin = -INFINITY;
    *vmax = INFINITY;
    return;
  }
  double a = to_dtype(t, lo), b = to_dtype(t, hi);
  while (a < lo) a = step(t, a, true);
  while (b >= hi) b = step(t, b, false);
  if (b < a) a = b = to_dtype(t, lo);
  *vmin = a;
  *vmax = b;
}

static inline double clamp_d(double v, double lo, double hi) {
  return v > hi ? hi : v < lo ? lo : v;
}

static ct_status uniform_random(const ct_kernel_ctx *c) {
  ct_status s = ct__random_check_range(c, false);
  if (s != CT_OK) return s;
  ct_tensor *t = ct_kernel_out(c, OUT_OUT, 0);
  void *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);
  if (o == NULL) return ct_last_status();
  double lo = c->attr[RND_A].u.f, hi = c->attr[RND_B].u.f, span = hi - lo, vmin, vmax;
  ct__uniform_bounds(c->dtype, lo, hi, &vmin, &vmax);
  uint64_t seed = ct__random_seed(c);
  int64_t n = t->numel;
  if (c->dtype == CT_FLOAT64) {
    for (int64_t i = 0; i < n; i += 2) {
      ct__philox_block b = ct__philox((uint64_t)i / 2, seed);
      ((double *)o)[i] = clamp_d(lo + span * ct__u53(b.w[0], b.w[1]), vmin, vmax);
      if (i + 1 < n) {
        ((double *)o)[i + 1] = clamp_d(lo + span * ct__u53(b.w[2], b.w[3]), vmin, vmax);
      }
    }
    return CT_OK;
  }
  float fmin = (float)vmin, fmax = (float)vmax; /* exact: values of the dtype */
  for (int64_t i = 0; i < n; i += 4) {
    ct__philox_block b = ct__philox((uint64_t)i / 4, seed);
    for (int j = 0; j < 4 && i + j < n; j++) {
      float v = (float)(lo + span * ct__u24(b.w[j]));
      if (c->dtype == CT_FLOAT32) {
        ((float *)o)[i + j] = v > fmax ? fmax : v < fmin ? fmin : v;
      } else if (c->dtype == CT_FLOAT16) {
        float r = ct__half_to_float(ct__float_to_half(v));
        ((uint16_t *)o)[i + j] = ct__float_to_half(r > fmax ? fmax : r < fmin ? fmin : r);
      } else {
        float r = ct__bf16_to_float(ct__float_to_bf16(v));
        ((uint16_t *)o)[i + j] = ct__float_to_bf16(r > fmax ? fmax : r < fmin ? fmin : r);
      }
    }
  }
  return CT_OK;
}

static ct_status gaussian_random(const ct_kernel_ctx *c) {
  ct_status s = ct__random_check_range(c, true);
  if (s != CT_OK) return s;
  ct_tensor *t = ct_kernel_out(c, OUT_OUT, 0);
  void *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);
  if (o == NULL) return ct_last_status();
  double mean = c->attr[RND_A].u.f, std = c->attr[RND_B].u.f;
  uint64_t seed = ct__random_seed(c);
  int64_t n = t->numel;
  if (c->dtype == CT_FLOAT64) {
    for (int64_t i = 0; i < n; i += 2) {
      ct__philox_block b = ct__philox((uint64_t)i / 2, seed);
      double z0, z1;
      ct__box_muller(ct__u53_open0(b.w[0], b.w[1]), ct__u53(b.w[2], b.w[3]), &z0, &z1);
      ((double *)o)[i] = mean + std * z0;
      if (i + 1 < n) ((double *)o)[i + 1] = mean + std * z1;
    }
    return CT_OK;
  }
  for (int64_t i = 0; i < n; i += 4) {
    ct__philox_block b = ct__philox((uint64_t)i / 4, seed);
    double z[4];
    ct__box_muller(ct__u24_open0(b.w[0]), ct__u24(b.w[1]), &z[0], &z[1]);
    ct__box_muller(ct__u24_open0(b.w[2]), ct__u24(b.w[3]), &z[2], &z[3]);
    for (int j = 0; j < 4 && i + j < n; j++) {
      float v = (float)(mean + std * z[j]);
      if (c->dtype == CT_FLOAT32) {
        ((float *)o)[i + j] = v;
      } else if (c->dtype == CT_FLOAT16) {
        ((uint16_t *)o)[i + j] = ct__float_to_half(v);
      } else {
        ((uint16_t *)o)[i + j] = ct__float_to_bf16(v);
      }
    }
  }
  return CT_OK;
}

static const ct_attr_def uniform_attrs[] = {
    {"shape", {.type = CT_ATTR_INTS, .u.ints = {scalar_shape, 1}}, true},
    {"min", {.type = CT_ATTR_FLOAT, .u.f = -1.0}, false},
    {"max", {.type = CT_ATTR_FLOAT, .u.f = 1.0}, false},
    {"seed", {.type = CT_ATTR_INT, .u.i = 0}, false},
    {"dtype", {.type = CT_ATTR_INT, .u.i = CT_FLOAT32}, false},
};

static const ct_attr_def gaussian_attrs[] = {
    {"shape", {.type = CT_ATTR_INTS, .u.ints = {scalar_shape, 1}}, true},
    {"mean", {.type = CT_ATTR_FLOAT, .u.f = 0.0}, false},
    {"std", {.type = CT_ATTR_FLOAT, .u.f = 1.0}, false},
    {"seed", {.type = CT_ATTR_INT, .u.i = 0}, false},
    {"dtype", {.type = CT_ATTR_INT, .u.i = CT_FLOAT32}, false},
};

/* The float dtypes random values come in. */
#define FLOAT_KERNELS(fn) \
  CT__KERNELS([CT_FLOAT32] = fn, [CT_FLOAT64] = fn, [CT_FLOAT16] = fn, [CT_BFLOAT16] = fn)

void ct__register_random_ops(void) {
  ct_op_def fill = {.type = "fill_constant", .outputs = ct__slot_out, .n_outputs = 1,
                    .attrs = fill_attrs, .n_attrs = 3, .infer_shape = shape_infer,
                    .dtype_attr = "dtype"};
  ct__register_cpu(&fill, CT__KERNELS([0] = fill_constant));
  ct_op_def uni = {.type = "uniform_random", .outputs = ct__slot_out, .n_outputs = 1,
                   .attrs = uniform_attrs, .n_attrs = 5, .infer_shape = shape_infer,
                   .dtype_attr = "dtype"};
  ct__register_cpu(&uni, FLOAT_KERNELS(uniform_random));
  ct_op_def gauss = {.type = "gaussian_random", .outputs = ct__slot_out, .n_outputs = 1,
                     .attrs = gaussian_attrs, .n_attrs = 5, .infer_shape = shape_infer,
                     .dtype_attr = "dtype"};
  ct__register_cpu(&gauss, FLOAT_KERNELS(gaussian_random));
}
