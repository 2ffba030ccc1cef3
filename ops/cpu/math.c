/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/math.c: the CPU kernels of the math family's unary op types (ops/defs/math.c), and
 * the family's kernel table (the binary, where, clip, prelu, cast_like and gradient kernels are
 * ops/cpu/math_bin.c and math_grad.c).
 *
 * One list of formulas: each unary op is an expression of a (the element, in double) and p (the
 * op's float attributes), expanded by a macro into the kernels of float16, float32 and float64;
 * a float16 or float32 result is the double's, rounded once. abs, neg and sign also have integer
 * kernels computed in int64 and wrapped back (abs and neg of the smallest value give it back).
 * float32 erf is corten's own (ops/cpu/vmath.h). */
#include <math.h>

#include "ops/cpu/math_kernels.h"
#include "ops/cpu/vmath.h"

/* A unary kernel's work, split by ct__parallel_for: elements. */
typedef struct un_job {
  void *o;
  const void *x;
  double p[3];
  bool pos, neg; /* isinf's */
} un_job;

static ct_status run_unary(const ct_kernel_ctx *c, ct__range_fn fn, ct_dtype out_dt) {
  const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);
  un_job j = {.o = ct__k_out_data(c, CT__OUT, 0, out_dt), .x = ct__k_in_data(xt)};
  if (CT__UNLIKELY(j.o == NULL)) return ct_last_status();
  ct__math_params(c, j.p);
  if (c->op->def->n_attr == 2 && c->attr[0].type == CT_ATTR_BOOL) {
    j.pos = c->attr[CT__ISINF_POSITIVE].u.b;
    j.neg = c->attr[CT__ISINF_NEGATIVE].u.b;
  }
  ct__parallel_for(xt->numel, CT__GRAIN_MATH, fn, &j);
  return CT_OK;
}

/* The range and kernel of op NAME for dtype TAG: Out = S(EXPR) with a = L(x), into dtype ODT
 * stored as OT through OS. */
#define UN_KERNEL(NAME, TAG, OT, OS, ODT, EXPR)                            \
  static void NAME##_##TAG##_r(void *arg, int64_t lo, int64_t hi) {       \
    const un_job *j = arg;                                                \
    const T_##TAG *x = j->x;                                              \
    OT *o = j->o;                                                         \
    const double *p = j->p;                                               \
    (void)p;                                                              \
    for (int64_t i = lo; i < hi; i++) {                                   \
      C_##TAG a = L_##TAG(x[i]);                                          \
      o[i] = OS(EXPR);                                                    \
    }                                                                     \
  }                                                                       \
  static ct_status NAME##_##TAG(const ct_kernel_ctx *c) {                 \
    return run_unary(c, NAME##_##TAG##_r, (ODT));                         \
  }

/* Float formulas: float16, float32, float64 in, the same dtype out. */
#define UN_FLOAT(NAME, EXPR)                                      \
  UN_KERNEL(NAME, f16, T_f16, S_f16, CT_FLOAT16, EXPR)            \
  UN_KERNEL(NAME, f32, T_f32, S_f32, CT_FLOAT32, EXPR)            \
  UN_KERNEL(NAME, f64, T_f64, S_f64, CT_FLOAT64, EXPR)            \
  static const ct_kernel_fn NAME##_k[CT__N_DTYPES] = {            \
      [CT_FLOAT16] = NAME##_f16, [CT_FLOAT32] = NAME##_f32, [CT_FLOAT64] = NAME##_f64};

/* Float and integer formulas (FEXPR over double, IEXPR over int64). */
#define UN_NUMERIC(NAME, FEXPR, IEXPR)                                                        \
  UN_KERNEL(NAME, f16, T_f16, S_f16, CT_FLOAT16, FEXPR)                                       \
  UN_KERNEL(NAME, f32, T_f32, S_f32, CT_FLOAT32, FEXPR)                                       \
  UN_KERNEL(NAME, f64, T_f64, S_f64, CT_FLOAT64, FEXPR)                                       \
  UN_KERNEL(NAME, i8, T_i8, S_i8, CT_INT8, IEXPR)                                             \
  UN_KERNEL(NAME, u8, T_u8, S_u8, CT_UINT8, IEXPR)                                            \
  UN_KERNEL(NAME, i16, T_i16, S_i16, CT_INT16, IEXPR)                                         \
  UN_KERNEL(NAME, i32, T_i32, S_i32, CT_INT32, IEXPR)                                         \
  UN_KERNEL(NAME, i64, T_i64, S_i64, CT_INT64, IEXPR)                                         \
  static const ct_kernel_fn NAME##_k[CT__N_DTYPES] = {                                        \
      [CT_FLOAT16] = NAME##_f16, [CT_FLOAT32] = NAME##_f32, [CT_FLOAT64] = NAME##_f64,        \
      [CT_INT8] = NAME##_i8,     [CT_UINT8] = NAME##_u8,    [CT_INT16] = NAME##_i16,          \
      [CT_INT32] = NAME##_i32,   [CT_INT64] = NAME##_i64};

/* 0 - a in uint64, so that the smallest int64 wraps instead of overflowing. */
#define WRAP_NEG(a) ((int64_t)(0 - (uint64_t)(a)))

UN_FLOAT(sqrt_, sqrt(a))
UN_FLOAT(reciprocal, 1.0 / a)
UN_FLOAT(floor_, floor(a))
UN_FLOAT(ceil_, ceil(a))
UN_FLOAT(round_, nearbyint(a)) /* the default rounding mode: half to even */
/* erf: float32 through corten's own (ops/cpu/vmath.h, a loop the compiler vectorises, in the
 * per-CPU clones); float16 and float64 through the C library's. */
UN_KERNEL(erf_, f16, T_f16, S_f16, CT_FLOAT16, erf(a))
UN_KERNEL(erf_, f64, T_f64, S_f64, CT_FLOAT64, erf(a))
CT__VM_CLONES static void erf_f32_r(void *arg, int64_t lo, int64_t hi) {
  const un_job *j = arg;
  const float *x = j->x;
  float *o = j->o;
  for (int64_t i = lo; i < hi; i++) o[i] = ct__verff(x[i]);
}
static ct_status erf_f32(const ct_kernel_ctx *c) { return run_unary(c, erf_f32_r, CT_FLOAT32); }
static const ct_kernel_fn erf__k[CT__N_DTYPES] = {
    [CT_FLOAT16] = erf__f16, [CT_FLOAT32] = erf_f32, [CT_FLOAT64] = erf__f64};
UN_FLOAT(sin_, sin(a))
UN_FLOAT(cos_, cos(a))
UN_FLOAT(tan_, tan(a))
UN_FLOAT(asin_, asin(a))
UN_FLOAT(acos_, acos(a))
UN_FLOAT(atan_, atan(a))
UN_FLOAT(sinh_, sinh(a))
UN_FLOAT(cosh_, cosh(a))
UN_FLOAT(asinh_, asinh(a))
UN_FLOAT(acosh_, acosh(a))
UN_FLOAT(atanh_, atanh(a))
/* log(1 + e^a) without overflow: max(a, 0) + log1p(e^-|a|). */
UN_FLOAT(softplus, (a > 0 ? a : 0.0) + log1p(exp(-fabs(a))))
UN_FLOAT(softsign, a / (1.0 + fabs(a)))
UN_FLOAT(selu, a > 0 ? p[0] * a : p[0] * p[1] * expm1(a))
UN_FLOAT(elu, a > 0 ? a : p[0] * expm1(a))
UN_FLOAT(celu, (a > 0 ? a : 0.0) + fmin(0.0, p[0] * expm1(a / p[0])))
UN_FLOAT(leaky_relu, a >= 0 ? a : p[0] * a)
UN_FLOAT(hard_sigmoid, fmax(0.0, fmin(1.0, p[0] * a + p[1])))
UN_FLOAT(hard_swish, a * fmin(fmax(a + p[2], 0.0), p[0]) / p[1])
UN_FLOAT(thresholded_relu, a > p[0] ? a : 0.0)
UN_FLOAT(shrink, a < -p[0] ? a + p[1] : a > p[0] ? a - p[1] : 0.0)
UN_NUMERIC(abs_, fabs(a), a < 0 ? WRAP_NEG(a) : a)
UN_NUMERIC(neg, -a, WRAP_NEG(a))
UN_NUMERIC(sign, a > 0 ? 1.0 : a < 0 ? -1.0 : a, (a > 0) - (a < 0))

/* isinf, isnan: float in, bool out. */
#define UN_BOOL(NAME, EXPR)                                                 \
  UN_KERNEL(NAME, f16, uint8_t, (uint8_t), CT_BOOL, EXPR)                   \
  UN_KERNEL(NAME, f32, uint8_t, (uint8_t), CT_BOOL, EXPR)                   \
  UN_KERNEL(NAME, f64, uint8_t, (uint8_t), CT_BOOL, EXPR)                   \
  static const ct_kernel_fn NAME##_k[CT__N_DTYPES] = {                      \
      [CT_FLOAT16] = NAME##_f16, [CT_FLOAT32] = NAME##_f32, [CT_FLOAT64] = NAME##_f64};
#define IS_INF(a) (isinf(a) && ((a) > 0 ? j->pos : j->neg))
UN_BOOL(isinf_, IS_INF(a))
UN_BOOL(isnan_, a != a)

/* logical_not: bool in and out (any nonzero byte is true). */
UN_KERNEL(logical_not, u8, uint8_t, (uint8_t), CT_BOOL, a == 0)

#define SET(type, k) {type, k}
#define BIN_SET(name) {#name, ct__cpu_math_##name},
#define UGRAD_SET(name) {#name "_grad", ct__cpu_math_##name##_grad},

static const ct__kernel_set kernels[] = {
    SET("sqrt", sqrt__k),
    SET("reciprocal", reciprocal_k),
    SET("floor", floor__k),
    SET("ceil", ceil__k),
    SET("round", round__k),
    SET("erf", erf__k),
    SET("sin", sin__k),
    SET("cos", cos__k),
    SET("tan", tan__k),
    SET("asin", asin__k),
    SET("acos", acos__k),
    SET("atan", atan__k),
    SET("sinh", sinh__k),
    SET("cosh", cosh__k),
    SET("asinh", asinh__k),
    SET("acosh", acosh__k),
    SET("atanh", atanh__k),
    SET("softplus", softplus_k),
    SET("softsign", softsign_k),
    SET("selu", selu_k),
    SET("elu", elu_k),
    SET("celu", celu_k),
    SET("leaky_relu", leaky_relu_k),
    SET("hard_sigmoid", hard_sigmoid_k),
    SET("hard_swish", hard_swish_k),
    SET("thresholded_relu", thresholded_relu_k),
    SET("shrink", shrink_k),
    SET("abs", abs__k),
    SET("neg", neg_k),
    SET("sign", sign_k),
    SET("isinf", isinf__k),
    SET("isnan", isnan__k),
    {"logical_not", CT__KERNELS([CT_BOOL] = logical_not_u8)},
    CT__MATH_BIN_KERNELS(BIN_SET)
    CT__MATH_UNARY_GRADS(UGRAD_SET)
};

const ct__kernel_table ct__cpu_math = CT__TABLE(kernels);
