/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/elementwise_grad.c: the CPU kernels of the elementwise gradients (ops/defs/
 * elementwise_grad.c), float32 and float64.
 *
 * A binary op's gradient with inputs of Out's dims is one flat loop. With broadcasting, each
 * input's gradient starts at zero and every element of Out@GRAD adds into the element of the
 * input it came from, walking the forward op's own broadcast plan (ct__plan_bcast), in Out's
 * order: the sums are the same whatever the thread count. */
#include <string.h>

#include "ops/cpu/parallel.h"
#include "ops/defs.h"

/* GX and GY are the gradients of X and Y at one element, in terms of g (Out@GRAD), x and y. */
/* A gradient's flat work, split by ct__parallel_for: elements. */
typedef struct grad_job {
  void *dx, *dy;
  const void *x, *y, *g;
} grad_job;

/* GX and GY are the gradients of X and Y at one element, in terms of g (Out@GRAD), x and y. */
#define BINARY_GRAD_KERNEL(NAME, T, GX, GY)                                                     \
  static void NAME##_range(void *arg, int64_t b, int64_t e) {                                   \
    const grad_job *j = arg;                                                                    \
    const T *xs = j->x, *ys = j->y, *gs = j->g;                                                 \
    T *dx = j->dx, *dy = j->dy;                                                                 \
    for (int64_t i = b; i < e; i++) {                                                           \
      T g = gs[i], x = xs[i], y = ys[i];                                                        \
      (void)x;                                                                                  \
      (void)y;                                                                                  \
      if (dx != NULL) dx[i] = (GX);                                                             \
      if (dy != NULL) dy[i] = (GY);                                                             \
    }                                                                                           \
  }                                                                                             \
  static ct_status NAME(const ct_kernel_ctx *c) {                                               \
    const ct_tensor *xt = ct_kernel_in(c, CT__G_X, 0), *yt = ct_kernel_in(c, CT__G_Y, 0);       \
    const ct_tensor *gt = ct_kernel_in(c, CT__G_DOUT, 0);                                       \
    void *dx_, *dy_;                                                                            \
    ct_status st = ct__grad_outs(c, &dx_, &dy_);                                                \
    if (CT__UNLIKELY(st != CT_OK)) return st;                                                   \
    T *dx = dx_, *dy = dy_;                                                                     \
    const T *xs = ct__k_in_data(xt), *ys = ct__k_in_data(yt), *gs = ct__k_in_data(gt);          \
    int64_t n = gt->numel;                                                                      \
    if (xt->numel == n && yt->numel == n) {                                                     \
      grad_job j = {dx, dy, xs, ys, gs};                                                        \
      ct__parallel_for(n, CT__GRAIN_MEM, NAME##_range, &j);                                     \
      return CT_OK;                                                                             \
    }                                                                                           \
    if (dx != NULL) memset(dx, 0, (size_t)xt->numel * sizeof(T));                               \
    if (dy != NULL) memset(dy, 0, (size_t)yt->numel * sizeof(T));                               \
    if (n == 0) return CT_OK;                                                                   \
    ct__bcast_plan p;                                                                           \
    ct__plan_bcast(xt->dims, yt->dims, gt->dims, &p);                                           \
    int64_t idx[CT_MAX_RANK] = {0}, ox = 0, oy = 0;                                             \
    for (int64_t i = 0; i < n; i++) {                                                           \
      T g = gs[i], x = xs[ox], y = ys[oy];                                                      \
      (void)x;                                                                                  \
      (void)y;                                                                                  \
      if (dx != NULL) dx[ox] += (GX);                                                           \
      if (dy != NULL) dy[oy] += (GY);                                                           \
      for (int k = p.rank - 1; k >= 0; k--) {                                                   \
        ox += p.sx[k];                                                                          \
        oy += p.sy[k];                                                                          \
        if (++idx[k] < p.d[k]) break;                                                           \
        ox -= p.sx[k] * p.d[k];                                                                 \
        oy -= p.sy[k] * p.d[k];                                                                 \
        idx[k] = 0;                                                                             \
      }                                                                                         \
    }                                                                                           \
    return CT_OK;                                                                               \
  }

BINARY_GRAD_KERNEL(add_grad_f32, float, g, g)
BINARY_GRAD_KERNEL(add_grad_f64, double, g, g)
BINARY_GRAD_KERNEL(sub_grad_f32, float, g, -g)
BINARY_GRAD_KERNEL(sub_grad_f64, double, g, -g)
BINARY_GRAD_KERNEL(mul_grad_f32, float, g * y, g * x)
BINARY_GRAD_KERNEL(mul_grad_f64, double, g * y, g * x)
BINARY_GRAD_KERNEL(div_grad_f32, float, g / y, -g * x / (y * y))
BINARY_GRAD_KERNEL(div_grad_f64, double, g / y, -g * x / (y * y))

/* X@GRAD from one input a (Out, or X for log) and g (Out@GRAD), element by element. */
#define UNARY_GRAD_KERNEL(NAME, T, EXPR)                                    \
  static void NAME##_range(void *arg, int64_t b, int64_t e) {               \
    const grad_job *j = arg;                                                \
    const T *as = j->x, *gs = j->g;                                         \
    T *dx = j->dx;                                                          \
    CT__SIMD for (int64_t i = b; i < e; i++) {                              \
      T a = as[i], g = gs[i];                                               \
      dx[i] = (EXPR);                                                       \
    }                                                                       \
  }                                                                         \
  static ct_status NAME(const ct_kernel_ctx *c) {                           \
    const ct_tensor *at = ct_kernel_in(c, CT__G_UNARY_IN, 0);               \
    grad_job j = {ct__k_out_data(c, CT__G_DX, 0, c->dtype), NULL, ct__k_in_data(at), NULL, \
                  ct__k_in_data(ct_kernel_in(c, CT__G_UNARY_DOUT, 0))};     \
    if (CT__UNLIKELY(j.dx == NULL)) return ct_last_status();                \
    ct__parallel_for(at->numel, CT__GRAIN_MEM, NAME##_range, &j);           \
    return CT_OK;                                                           \
  }

UNARY_GRAD_KERNEL(relu_grad_f32, float, a > 0 ? g : 0.0f)
UNARY_GRAD_KERNEL(relu_grad_f64, double, a > 0 ? g : 0.0)
UNARY_GRAD_KERNEL(sigmoid_grad_f32, float, g * a * (1.0f - a))
UNARY_GRAD_KERNEL(sigmoid_grad_f64, double, g * a * (1.0 - a))
UNARY_GRAD_KERNEL(tanh_grad_f32, float, g * (1.0f - a * a))
UNARY_GRAD_KERNEL(tanh_grad_f64, double, g * (1.0 - a * a))
UNARY_GRAD_KERNEL(exp_grad_f32, float, g * a)
UNARY_GRAD_KERNEL(exp_grad_f64, double, g * a)
UNARY_GRAD_KERNEL(log_grad_f32, float, g / a)
UNARY_GRAD_KERNEL(log_grad_f64, double, g / a)


static const ct__kernel_set kernels[] = {
    {"elementwise_add_grad", CT__KERNELS_F32_F64(add_grad)},
    {"elementwise_sub_grad", CT__KERNELS_F32_F64(sub_grad)},
    {"elementwise_mul_grad", CT__KERNELS_F32_F64(mul_grad)},
    {"elementwise_div_grad", CT__KERNELS_F32_F64(div_grad)},
    {"relu_grad", CT__KERNELS_F32_F64(relu_grad)},
    {"sigmoid_grad", CT__KERNELS_F32_F64(sigmoid_grad)},
    {"tanh_grad", CT__KERNELS_F32_F64(tanh_grad)},
    {"exp_grad", CT__KERNELS_F32_F64(exp_grad)},
    {"log_grad", CT__KERNELS_F32_F64(log_grad)},
};

const ct__kernel_table ct__cpu_elementwise_grad = CT__TABLE(kernels);
