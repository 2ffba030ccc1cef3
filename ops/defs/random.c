/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/random.c: the op types fill_constant, uniform_random and gaussian_random, and the
 * checks and values every backend's kernels share: fill_constant's value must fit the dtype,
 * uniform's bounds and gaussian's std must be sane, seed 0 means "a new seed each run" (as in
 * PaddlePaddle), and uniform values are clamped into [min, max) in the output dtype
 * (ct__uniform_bounds), so the CPU and GPU results stay bit-identical. */
#include <math.h>
#include <stdatomic.h>
#include <time.h>

#include "ops/defs.h"
#include "ops/half.h"

/* Counts the runs that asked for a fresh seed. */
static _Atomic uint64_t seed_counter;

static ct_status shape_infer(const ct_kernel_ctx *c) {
  const ct_attr_value *shape = &c->attr[CT__FILL_SHAPE]; /* the same index in all three types */
  if (shape->u.ints.n > CT_MAX_RANK) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "attribute 'shape' has %zu dims, more than CT_MAX_RANK (%d)",
                          shape->u.ints.n, CT_MAX_RANK);
  }
  return ct__k_resize(c, CT__OUT, 0, ct_ddim_make(shape->u.ints.v, (int)shape->u.ints.n));
}

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
    case CT_UINT16: lo = 0; hi = UINT16_MAX; break;
    case CT_UINT32: lo = 0; hi = UINT32_MAX; break;
    case CT_UINT64: lo = 0; hi = INT64_MAX; break; /* a fill of 2^63 or more is refused */
    default: break;
  }
  bool wide = c->dtype == CT_INT64 || c->dtype == CT_UINT64;
  if (!(v >= (double)lo && v <= (double)hi) || (wide && v >= 9223372036854775808.0) ||
      v != (double)(int64_t)v) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "attribute 'value' %g is not a %s value: give an integer in "
                          "[%lld, %lld]",
                          v, ct_dtype_name(c->dtype), (long long)lo, (long long)hi);
  }
  return CT_OK;
}

static const int64_t scalar_shape[1] = {1};

static const ct_attr_def fill_attrs[] = {
    {"shape", {.type = CT_ATTR_INTS, .u.ints = {scalar_shape, 1}}, true},
    {"value", {.type = CT_ATTR_FLOAT, .u.f = 0.0}, false},
    {"dtype", {.type = CT_ATTR_INT, .u.i = CT_FLOAT32}, false},
};

/* The seed of this run: the attribute, or a fresh one for seed 0. */
uint64_t ct__random_seed(const ct_kernel_ctx *c) {
  uint64_t s = (uint64_t)c->attr[CT__RND_SEED].u.i;
  return s != 0 ? s : ct__fresh_seed(c);
}

uint64_t ct__fresh_seed(const ct_kernel_ctx *c) {
  uint64_t n = atomic_fetch_add(&seed_counter, 1) + 1;
  uint64_t t = (uint64_t)time(NULL);
  return (t * 0x9E3779B97F4A7C15u) ^ (n * 0xBF58476D1CE4E5B9u) ^ (uint64_t)(uintptr_t)c;
}

ct_status ct__random_check_range(const ct_kernel_ctx *c, bool gaussian) {
  double a = c->attr[CT__RND_A].u.f, b = c->attr[CT__RND_B].u.f;
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

/* fill_any_like: Out takes X's dims and dtype (the gradient pass's ones and zeros). With
 * one_element (the pass's seed of a loss), X must hold one element. */
static ct_status like_infer(const ct_kernel_ctx *c) {
  const ct_tensor *x = ct_kernel_in(c, CT__IN_X, 0);
  if (c->attr[CT__FILL_LIKE_ONE_ELEMENT].u.b && x->numel != 1) {
    char d[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "the loss, input X variable '%s', is %s with %lld elements, but a "
                          "backward pass starts from a loss of one element: reduce it first "
                          "(mean or reduce_sum)",
                          ct_kernel_in_name(c, CT__IN_X, 0), ct_ddim_str(x->dims, d, sizeof d),
                          (long long)x->numel);
  }
  return ct__k_resize(c, CT__OUT, 0, x->dims);
}

static const ct_attr_def fill_like_attrs[] = {
    {"value", {.type = CT_ATTR_FLOAT, .u.f = 0.0}, false},
    {"one_element", {.type = CT_ATTR_BOOL, .u.b = false}, false},
};

static const ct_op_def defs[] = {
    {.type = "fill_constant", .outputs = ct__slot_out, .n_outputs = 1, .attrs = fill_attrs,
     .n_attrs = 3, .flags = CT_OP_PURE_INFER, .infer_shape = shape_infer, .dtype_attr = "dtype"},
    {.type = "fill_any_like", .inputs = ct__slot_x, .n_inputs = 1, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = fill_like_attrs, .n_attrs = 2,
     .flags = CT_OP_PURE_INFER, .infer_shape = like_infer,
     .grad = ct__grad_none},
    {.type = "uniform_random", .outputs = ct__slot_out, .n_outputs = 1, .attrs = uniform_attrs,
     .n_attrs = 5, .flags = CT_OP_PURE_INFER, .infer_shape = shape_infer, .dtype_attr = "dtype"},
    {.type = "gaussian_random", .outputs = ct__slot_out, .n_outputs = 1, .attrs = gaussian_attrs,
     .n_attrs = 5, .flags = CT_OP_PURE_INFER, .infer_shape = shape_infer, .dtype_attr = "dtype"},
};

const ct__def_table ct__random_defs = CT__TABLE(defs);

/* What the types compute (ct_op_type_doc, `corten ops`). */
#define DOC_SEED                                                                              \
  " Values come from Philox4x32-10 (ops/philox.h): element i's depends only on the seed and "  \
  "i, so a seed gives the same tensor on the CPU and on CUDA at any thread count. Attribute "  \
  "seed 0 (the default) draws a fresh seed at each run, as PaddlePaddle does: set a nonzero "  \
  "seed for reproducible draws (give each op its own seed, or two ops draw the same values)."
#define DOC_SHAPE                                                                             \
  "Out has dims `shape` (required) and dtype `dtype` (a ct_dtype value, float32 by default); " \
  "no inputs."

static const ct__op_doc docs[] = {
    {"fill_constant", "Fills Out with `value` (default 0). " DOC_SHAPE " For an integer or bool "
                      "dtype, value must be an integer the dtype holds exactly, else the op is "
                      "refused (CT_ERR_OUT_OF_RANGE); float dtypes round it to the nearest."},
    {"fill_any_like", "Fills Out, of X's dims and dtype, with `value` (default 0); X's values are "
                      "not read. For an integer or bool X, value must be an integer the dtype "
                      "holds exactly. With one_element (how the backward pass seeds a loss's "
                      "gradient with 1), X must hold one element. No gradient."},
    {"uniform_random", "Uniform random values in [min, max) (defaults -1 and 1): float32, "
                       "float16 and bfloat16 from 24 random bits per element, float64 from 53, "
                       "`min + (max - min) u`, a value that rounding to the dtype puts on max "
                       "moved just below it. " DOC_SHAPE DOC_SEED},
    {"gaussian_random", "Normal random values with mean `mean` (default 0) and standard "
                        "deviation `std` (default 1, at least 0), by the Box-Muller transform "
                        "with corten's own logarithm and sine series. " DOC_SHAPE DOC_SEED},
};

const ct__doc_table ct__random_docs = CT__TABLE(docs);
