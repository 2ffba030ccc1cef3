/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/math_grad.c: the CPU kernels of the math family's gradients (ops/defs/math_grad.c
 * says what each computes), float32 and float64, computed in double.
 *
 * A unary grad is dOut f'(X), f' one expression per op in the list below. The binary ones walk
 * Out@GRAD in order and add each element into the X@GRAD and Y@GRAD elements it came from
 * (zeroed first), which sums the gradient back over the broadcast dims; they run on one thread,
 * so the sums do not depend on the thread count. */
#include <math.h>
#include <string.h>

#include "ops/cpu/math_kernels.h"

/* ---- Unary: X, Out@GRAD -> X@GRAD ------------------------------------------------------------ */

typedef struct ug_job {
  void *dx;
  const void *x, *g;
  double p[3];
} ug_job;

static ct_status run_ugrad(const ct_kernel_ctx *c, ct__range_fn fn) {
  const ct_tensor *xt = ct_kernel_in(c, CT__G_UNARY_IN, 0);
  ug_job j = {.x = ct__k_in_data(xt), .g = ct__k_in_data(ct_kernel_in(c, CT__G_UNARY_DOUT, 0))};
  ct__math_params(c, j.p);
  j.dx = ct__k_out_data(c, CT__G_DX, 0, c->dtype);
  if (CT__UNLIKELY(j.dx == NULL)) return ct_last_status();
  ct__parallel_for(xt->numel, CT__GRAIN_MATH, fn, &j);
  return CT_OK;
}

#define UG_KERNEL(NAME, TAG, DEXPR)                                         \
  static void NAME##_g##TAG##_r(void *arg, int64_t lo, int64_t hi) {       \
    const ug_job *j = arg;                                                 \
    const T_##TAG *x = j->x, *g = j->g;                                    \
    T_##TAG *dx = j->dx;                                                   \
    const double *p = j->p;                                                \
    (void)p;                                                               \
    for (int64_t i = lo; i < hi; i++) {                                    \
      double a = x[i];                                                     \
      (void)a;                                                             \
      dx[i] = S_##TAG((double)g[i] * (DEXPR));                             \
    }                                                                      \
  }                                                                        \
  static ct_status NAME##_g##TAG(const ct_kernel_ctx *c) {                 \
    return run_ugrad(c, NAME##_g##TAG##_r);                                \
  }
#define UGRAD(NAME, DEXPR)                                                            \
  UG_KERNEL(NAME, f32, DEXPR)                                                         \
  UG_KERNEL(NAME, f64, DEXPR)                                                         \
  const ct_kernel_fn ct__cpu_math_##NAME##_grad[CT__N_DTYPES] = {                     \
      [CT_FLOAT32] = NAME##_gf32, [CT_FLOAT64] = NAME##_gf64};

#define SQ(a) ((a) * (a))
UGRAD(sqrt, 0.5 / sqrt(a))
UGRAD(reciprocal, -1.0 / SQ(a))
UGRAD(abs, a > 0 ? 1.0 : a < 0 ? -1.0 : 0.0)
UGRAD(neg, -1.0)
UGRAD(erf, 1.1283791670955125739 * exp(-SQ(a))) /* 2 / sqrt(pi) */
UGRAD(sin, cos(a))
UGRAD(cos, -sin(a))
UGRAD(tan, 1.0 + SQ(tan(a)))
UGRAD(asin, 1.0 / sqrt(1.0 - SQ(a)))
UGRAD(acos, -1.0 / sqrt(1.0 - SQ(a)))
UGRAD(atan, 1.0 / (1.0 + SQ(a)))
UGRAD(sinh, cosh(a))
UGRAD(cosh, sinh(a))
UGRAD(asinh, 1.0 / sqrt(SQ(a) + 1.0))
UGRAD(acosh, 1.0 / sqrt(SQ(a) - 1.0))
UGRAD(atanh, 1.0 / (1.0 - SQ(a)))
UGRAD(softplus, 1.0 / (1.0 + exp(-a)))
UGRAD(softsign, 1.0 / SQ(1.0 + fabs(a)))
UGRAD(selu, a > 0 ? p[0] : p[0] * p[1] * exp(a))
UGRAD(elu, a > 0 ? 1.0 : p[0] * exp(a))
UGRAD(celu, a > 0 ? 1.0 : exp(a / p[0]))
UGRAD(leaky_relu, a >= 0 ? 1.0 : p[0])
UGRAD(hard_sigmoid, p[0] * a + p[1] > 0 && p[0] * a + p[1] < 1 ? p[0] : 0.0)
UGRAD(hard_swish, a + p[2] <= 0 ? 0.0 : a + p[2] >= p[0] ? p[0] / p[1] : (2 * a + p[2]) / p[1])
UGRAD(thresholded_relu, a > p[0] ? 1.0 : 0.0)
UGRAD(shrink, a < -p[0] || a > p[0] ? 1.0 : 0.0)

/* ---- Binary: X, Y, Out@GRAD -> X@GRAD, Y@GRAD -------------------------------------------------- */

/* Zeroes the wired outputs dx, dy (dtype t) and walks Out@GRAD (input dout) over the broadcast
 * of inputs sx and sy: BODY sees g (the element), ix and iy. */
#define GRAD_WALK(T, c, sx, sy, dout, ...)                                                    \
  do {                                                                                         \
    const ct_tensor *xt_ = ct_kernel_in(c, sx, 0), *yt_ = ct_kernel_in(c, sy, 0);              \
    const ct_tensor *gt_ = ct_kernel_in(c, dout, 0);                                           \
    if (dx != NULL) memset(dx, 0, (size_t)xt_->numel * sizeof(T));                             \
    if (dy != NULL) memset(dy, 0, (size_t)yt_->numel * sizeof(T));                             \
    ct_ddim in_[2] = {xt_->dims, yt_->dims};                                                   \
    ct__mwalk w_;                                                                              \
    ct__mwalk_init(&w_, gt_->dims, in_, 2, 0);                                                 \
    const T *gv_ = ct__k_in_data(gt_);                                                         \
    for (int64_t i_ = 0; i_ < gt_->numel; i_++, ct__mwalk_next(&w_)) {                         \
      double g = gv_[i_];                                                                      \
      int64_t ix = w_.off[0], iy = w_.off[1];                                                  \
      __VA_ARGS__;                                                                             \
    }                                                                                          \
  } while (0)

#define BGRAD(NAME, T, DX, DY)                                                           \
  static ct_status NAME(const ct_kernel_ctx *c) {                                        \
    void *dxv, *dyv;                                                                     \
    ct_status s = ct__grad_outs(c, &dxv, &dyv);                                          \
    if (s != CT_OK) return s;                                                            \
    T *dx = dxv, *dy = dyv;                                                              \
    const T *x = ct__k_in_data(ct_kernel_in(c, CT__G_X, 0));                             \
    const T *y = ct__k_in_data(ct_kernel_in(c, CT__G_Y, 0));                             \
    GRAD_WALK(T, c, CT__G_X, CT__G_Y, CT__G_DOUT, {                                      \
      double a = x[ix], b = y[iy];                                                       \
      if (dx != NULL) dx[ix] += (T)(DX);                                                 \
      if (dy != NULL) dy[iy] += (T)(DY);                                                 \
    });                                                                                  \
    return CT_OK;                                                                        \
  }
/* max and min: to X where it wins or ties, to Y elsewhere. */
BGRAD(max_g32, float, a >= b ? g : 0.0, a >= b ? 0.0 : g)
BGRAD(max_g64, double, a >= b ? g : 0.0, a >= b ? 0.0 : g)
BGRAD(min_g32, float, a <= b ? g : 0.0, a <= b ? 0.0 : g)
BGRAD(min_g64, double, a <= b ? g : 0.0, a <= b ? 0.0 : g)
BGRAD(pow_g32, float, g * b * pow(a, b - 1), g * pow(a, b) * log(a))
BGRAD(pow_g64, double, g * b * pow(a, b - 1), g * pow(a, b) * log(a))
const ct_kernel_fn ct__cpu_math_elementwise_max_grad[CT__N_DTYPES] = {
    [CT_FLOAT32] = max_g32, [CT_FLOAT64] = max_g64};
const ct_kernel_fn ct__cpu_math_elementwise_min_grad[CT__N_DTYPES] = {
    [CT_FLOAT32] = min_g32, [CT_FLOAT64] = min_g64};
const ct_kernel_fn ct__cpu_math_elementwise_pow_grad[CT__N_DTYPES] = {
    [CT_FLOAT32] = pow_g32, [CT_FLOAT64] = pow_g64};

/* ---- prelu_grad: X, Alpha, Out@GRAD -> X@GRAD, Alpha@GRAD ------------------------------------- */

BGRAD(prelu_g32, float, a >= 0 ? g : b * g, a < 0 ? a * g : 0.0)
BGRAD(prelu_g64, double, a >= 0 ? g : b * g, a < 0 ? a * g : 0.0)
const ct_kernel_fn ct__cpu_math_prelu_grad[CT__N_DTYPES] = {[CT_FLOAT32] = prelu_g32,
                                                             [CT_FLOAT64] = prelu_g64};

/* ---- where_grad: chosen by Condition's dtype (bool); X's dtype picks the loop ----------------- */

#define WHERE_GRAD(NAME, T)                                                                 \
  static ct_status NAME(const ct_kernel_ctx *c, T *dx, T *dy) {                             \
    const uint8_t *cond = ct__k_in_data(ct_kernel_in(c, CT__WHERE_COND, 0));                \
    const ct_tensor *ct_ = ct_kernel_in(c, CT__WHERE_COND, 0);                              \
    ct__mwalk wc;                                                                           \
    ct_ddim cd[1] = {ct_->dims};                                                            \
    ct__mwalk_init(&wc, ct_kernel_in(c, CT__WHERE_DOUT, 0)->dims, cd, 1, 0);                \
    GRAD_WALK(T, c, CT__WHERE_X, CT__WHERE_Y, CT__WHERE_DOUT, {                             \
      bool take_x = cond[wc.off[0]] != 0;                                                   \
      ct__mwalk_next(&wc);                                                                  \
      if (dx != NULL && take_x) dx[ix] += (T)g;                                             \
      if (dy != NULL && !take_x) dy[iy] += (T)g;                                            \
    });                                                                                     \
    return CT_OK;                                                                           \
  }
WHERE_GRAD(where_g32, float)
WHERE_GRAD(where_g64, double)

static ct_status where_grad_any(const ct_kernel_ctx *c) {
  ct_dtype t = ct_kernel_in(c, CT__WHERE_X, 0)->dtype;
  if (t != CT_FLOAT32 && t != CT_FLOAT64) {
    return ct_kernel_fail(c, CT_ERR_UNSUPPORTED,
                          "input X variable '%s' is %s: where_grad has float32 and float64 "
                          "kernels",
                          ct_kernel_in_name(c, CT__WHERE_X, 0), ct_dtype_name(t));
  }
  void *dx = NULL, *dy = NULL;
  if (ct_kernel_out_count(c, CT__G_DX) > 0 && (dx = ct__k_out_data(c, CT__G_DX, 0, t)) == NULL) {
    return ct_last_status();
  }
  if (ct_kernel_out_count(c, CT__G_DY) > 0 && (dy = ct__k_out_data(c, CT__G_DY, 0, t)) == NULL) {
    return ct_last_status();
  }
  return t == CT_FLOAT32 ? where_g32(c, dx, dy) : where_g64(c, dx, dy);
}
const ct_kernel_fn ct__cpu_math_where_grad[CT__N_DTYPES] = {[CT_BOOL] = where_grad_any};

/* ---- clip_grad: X, Min, Max, Out@GRAD -> X@GRAD (dOut inside the bounds) --------------------- */

static double bound(const ct_kernel_ctx *c, size_t slot, size_t attr) {
  if (ct_kernel_in_count(c, slot) == 0) return c->attr[attr].u.f;
  const ct_tensor *t = ct_kernel_in(c, slot, 0);
  return ct__math_ld(ct__k_in_data(t), t->dtype, 0);
}

#define CLIP_GRAD(NAME, T)                                                               \
  static ct_status NAME(const ct_kernel_ctx *c) {                                        \
    const ct_tensor *xt = ct_kernel_in(c, CT__CLIP_X, 0);                                \
    const T *x = ct__k_in_data(xt), *g = ct__k_in_data(ct_kernel_in(c, CT__CLIPG_DOUT, 0)); \
    double lo = bound(c, CT__CLIP_MIN, CT__CLIP_ATTR_MIN);                               \
    double hi = bound(c, CT__CLIP_MAX, CT__CLIP_ATTR_MAX);                               \
    T *dx = ct__k_out_data(c, CT__G_DX, 0, c->dtype);                                    \
    if (dx == NULL) return ct_last_status();                                             \
    for (int64_t i = 0; i < xt->numel; i++) dx[i] = x[i] >= lo && x[i] <= hi ? g[i] : 0; \
    return CT_OK;                                                                        \
  }
CLIP_GRAD(clip_g32, float)
CLIP_GRAD(clip_g64, double)
const ct_kernel_fn ct__cpu_math_clip_grad[CT__N_DTYPES] = {[CT_FLOAT32] = clip_g32,
                                                            [CT_FLOAT64] = clip_g64};
