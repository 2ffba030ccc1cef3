/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/math_kernels.h: what the CPU files of the math family share (ops/cpu/math.c holds
 * the family's one kernel table; math_bin.c and math_grad.c export their kernels by dtype for
 * it), and the per-dtype element access their macros expand over.
 *
 * Each dtype has a tag (i8, u8, i16, u16, i32, u32, i64, u64, f16, f32, f64): T_<tag> its storage
 * type, C_<tag> the type arithmetic runs in (int64 for the integers but uint64, which runs in
 * uint64, double for the floats, so float16 and float32 round once, on the way back), L_<tag> a
 * stored value as C_<tag> and S_<tag> back (integers wrap, as C's conversions on every compiler corten supports). */
#ifndef CORTEN_OPS_CPU_MATH_KERNELS_H
#define CORTEN_OPS_CPU_MATH_KERNELS_H

#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/parallel.h"
#include "ops/defs/math.h"
#include "ops/half.h"

#define T_i8 int8_t
#define T_u8 uint8_t
#define T_i16 int16_t
#define T_i32 int32_t
#define T_i64 int64_t
#define T_u16 uint16_t
#define T_u32 uint32_t
#define T_u64 uint64_t
#define T_f16 uint16_t
#define T_f32 float
#define T_f64 double
#define C_i8 int64_t
/* elementwise_pow's float arithmetic (also decomposed_layer_norm's, ops/cpu/decomposed_norm.c):
 * a ^ y in double, a square as a * a (exact for a float16 or float32 a, the correctly rounded
 * square for a float64 one; pow is a library call of about 20 ns), else pow. */
static inline double ct__pow_f(double a, double y) { return y == 2.0 ? a * a : pow(a, y); }

#define C_u8 int64_t
#define C_i16 int64_t
#define C_i32 int64_t
#define C_i64 int64_t
#define C_u16 int64_t
#define C_u32 int64_t
#define C_u64 uint64_t
#define C_f16 double
#define C_f32 double
#define C_f64 double
#define L_i8(v) ((int64_t)(v))
#define L_u8(v) ((int64_t)(v))
#define L_i16(v) ((int64_t)(v))
#define L_i32(v) ((int64_t)(v))
#define L_i64(v) ((int64_t)(v))
#define L_u16(v) ((int64_t)(v))
#define L_u32(v) ((int64_t)(v))
#define L_u64(v) ((uint64_t)(v))
#define L_f16(v) ((double)ct__half_to_float(v))
#define L_f32(v) ((double)(v))
#define L_f64(v) (v)
#define S_i8(v) ((int8_t)(v))
#define S_u8(v) ((uint8_t)(v))
#define S_i16(v) ((int16_t)(v))
#define S_i32(v) ((int32_t)(v))
#define S_i64(v) ((int64_t)(v))
#define S_u16(v) ((uint16_t)(v))
#define S_u32(v) ((uint32_t)(v))
#define S_u64(v) ((uint64_t)(v))
#define S_f16(v) ct__f64_to_half(v)
#define S_f32(v) ((float)(v))
#define S_f64(v) ((double)(v))
#define DT_i8 CT_INT8
#define DT_u8 CT_UINT8
#define DT_i16 CT_INT16
#define DT_i32 CT_INT32
#define DT_i64 CT_INT64
#define DT_u16 CT_UINT16
#define DT_u32 CT_UINT32
#define DT_u64 CT_UINT64
#define DT_f16 CT_FLOAT16
#define DT_f32 CT_FLOAT32
#define DT_f64 CT_FLOAT64

/* Element i of a tensor of dtype t (a numeric one or bool) as a double. */
static inline double ct__math_ld(const void *p, ct_dtype t, int64_t i) {
  switch (t) {
    case CT_BOOL: return ((const uint8_t *)p)[i] != 0;
    case CT_INT8: return ((const int8_t *)p)[i];
    case CT_UINT8: return ((const uint8_t *)p)[i];
    case CT_INT16: return ((const int16_t *)p)[i];
    case CT_INT32: return ((const int32_t *)p)[i];
    case CT_INT64: return (double)((const int64_t *)p)[i];
    case CT_UINT16: return ((const uint16_t *)p)[i];
    case CT_UINT32: return ((const uint32_t *)p)[i];
    case CT_UINT64: return (double)((const uint64_t *)p)[i];
    case CT_FLOAT16: return ct__half_to_float(((const uint16_t *)p)[i]);
    case CT_BFLOAT16: return ct__bf16_to_float(((const uint16_t *)p)[i]);
    case CT_FLOAT32: return ((const float *)p)[i];
    case CT_FLOAT64: return ((const double *)p)[i];
    default: return 0;
  }
}

/* Element i of an integer (or bool) tensor of dtype t, exactly; a uint64 above INT64_MAX
 * saturates to INT64_MAX (the kernels that need its value read it themselves). */
static inline int64_t ct__math_ldi(const void *p, ct_dtype t, int64_t i) {
  switch (t) {
    case CT_BOOL: return ((const uint8_t *)p)[i] != 0;
    case CT_INT8: return ((const int8_t *)p)[i];
    case CT_UINT8: return ((const uint8_t *)p)[i];
    case CT_INT16: return ((const int16_t *)p)[i];
    case CT_INT32: return ((const int32_t *)p)[i];
    case CT_INT64: return ((const int64_t *)p)[i];
    case CT_UINT16: return ((const uint16_t *)p)[i];
    case CT_UINT32: return ((const uint32_t *)p)[i];
    case CT_UINT64: {
      uint64_t u = ((const uint64_t *)p)[i];
      return u > INT64_MAX ? INT64_MAX : (int64_t)u;
    }
    default: return 0;
  }
}

static inline bool ct__math_is_int(ct_dtype t) {
  return (t >= CT_BOOL && t <= CT_INT64) || t == CT_UINT16 || t == CT_UINT32 || t == CT_UINT64;
}

/* The kernels of ops/cpu/math_bin.c and ops/cpu/math_grad.c, by dtype (CT__N_DTYPES each). */
#define CT__MATH_BIN_KERNELS(X)                                                                \
  X(elementwise_max) X(elementwise_min) X(elementwise_pow) X(elementwise_mod)                  \
  X(elementwise_fmod) X(bitwise_left_shift) X(bitwise_right_shift) X(equal) X(not_equal)       \
  X(less_than) X(less_equal) X(greater_than) X(greater_equal) X(logical_and) X(logical_or)     \
  X(logical_xor) X(where) X(clip) X(prelu) X(cast_like) X(elementwise_max_grad)                \
  X(elementwise_min_grad) X(elementwise_pow_grad) X(where_grad) X(clip_grad) X(prelu_grad)
#define CT__MATH_DECL(name) extern const ct_kernel_fn ct__cpu_math_##name[CT__N_DTYPES];
CT__MATH_BIN_KERNELS(CT__MATH_DECL)
#undef CT__MATH_DECL

/* The unary grad kernels (ops/cpu/math_grad.c): float32 and float64. */
#define CT__MATH_UNARY_GRADS(X)                                                                \
  X(sqrt) X(reciprocal) X(abs) X(neg) X(erf) X(sin) X(cos) X(tan) X(asin) X(acos) X(atan)      \
  X(sinh) X(cosh) X(asinh) X(acosh) X(atanh) X(softplus) X(softsign) X(selu) X(elu) X(celu)    \
  X(leaky_relu) X(hard_sigmoid) X(hard_swish) X(thresholded_relu) X(shrink)
#define CT__MATH_DECL(name) extern const ct_kernel_fn ct__cpu_math_##name##_grad[CT__N_DTYPES];
CT__MATH_UNARY_GRADS(CT__MATH_DECL)
#undef CT__MATH_DECL

/* Float attributes 0..2 of the op (0 past its attributes or for other types), for the formulas
 * with parameters. */
static inline void ct__math_params(const ct_kernel_ctx *c, double p[3]) {
  size_t n = c->op->def->n_attr;
  for (size_t k = 0; k < 3; k++) {
    p[k] = k < n && c->attr[k].type == CT_ATTR_FLOAT ? c->attr[k].u.f : 0.0;
  }
}

#endif /* CORTEN_OPS_CPU_MATH_KERNELS_H */
