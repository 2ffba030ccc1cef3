/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/elementwise_grad.c: the CPU kernels of the elementwise gradients (ops/defs/
 * elementwise_grad.c), float32 and float64.
 *
 * A binary op's gradient with inputs of Out's dims is one flat loop. With broadcasting, each
 * input's gradient is its own walk of the forward op's broadcast plan (ct__plan_bcast): an input
 * of Out's numel gets its element's value, a broadcast one starts at zero and every element of
 * Out@GRAD adds into the element of the input it came from, in Out's order. The walk splits
 * across threads over the outermost plan dim along which the input is not broadcast, so each
 * piece owns a block of the gradient and every element's sum keeps Out's order: the same bytes
 * whatever the thread count. An input broadcast along every dim (one element) sums on the
 * calling thread. */
#include <string.h>

#include "ops/cpu/parallel.h"
#include "ops/defs.h"

/* A gradient's flat work, split by ct__parallel_for: elements. */
typedef struct grad_job {
  void *dx, *dy;
  const void *x, *y, *g;
} grad_job;

/* One input's gradient under broadcasting (dx: X's, else Y's; d: the gradient), split by
 * ct__parallel_for over plan dim `split`, the outermost where the input's stride is not 0 (the
 * dims before it broadcast the input, so a range of it is one block of the gradient); sg: Out's
 * strides over the plan. set: the input has Out's numel, each element is written once. */
typedef struct bgrad_job {
  const ct__bcast_plan *p;
  int64_t sg[CT_MAX_RANK];
  int split;
  bool dx, set;
  void *d;
  const void *x, *y, *g;
} bgrad_job;

/* The job of gradient d (of X when dx, else of Y) of a binary op with Out of n elements. */
static bgrad_job bgrad_job_of(const ct__bcast_plan *p, bool dx, void *d, const void *x,
                              const void *y, const void *g, int64_t n_in) {
  bgrad_job j = {.p = p, .split = -1, .dx = dx, .d = d, .x = x, .y = y, .g = g};
  const int64_t *st = dx ? p->sx : p->sy;
  int64_t n = 1;
  for (int k = p->rank - 1; k >= 0; k--) {
    j.sg[k] = n;
    n *= p->d[k];
  }
  for (int k = p->rank - 1; k >= 0; k--) {
    if (st[k] != 0) j.split = k;
  }
  j.set = n_in == n;
  return j;
}

/* Runs the job's walk over indices first to last - 1 of its split dim (all of the plan when the
 * split is -1): zeroes the piece's block (unless set), then runs BGRAD_RUN over each innermost
 * run of the plan, EXPR the element's gradient. */
#define BGRAD_WALK(T, jb, first, last, EXPR)                                                     \
  do {                                                                                        \
    ct__bcast_plan q_ = *(jb)->p;                                                             \
    int r_ = q_.rank, k_ = (jb)->split;                                                       \
    const int64_t *st_ = (jb)->dx ? q_.sx : q_.sy;                                            \
    int64_t ot_ = 0, ox_ = 0, oy_ = 0, og_ = 0, idx_[CT_MAX_RANK] = {0};                     \
    if (k_ >= 0) {                                                                            \
      ot_ = (first)*st_[k_];                                                                  \
      ox_ = (first)*q_.sx[k_];                                                                \
      oy_ = (first)*q_.sy[k_];                                                                \
      og_ = (first)*(jb)->sg[k_];                                                             \
      q_.d[k_] = (last) - (first);                                                            \
    }                                                                                         \
    T *d_ = (jb)->d;                                                                          \
    const T *x_ = (jb)->x, *y_ = (jb)->y, *g_ = (jb)->g;                                      \
    if (!(jb)->set) {                                                                         \
      int64_t z_ = k_ >= 0 ? q_.d[k_] * st_[k_] : 1;                                          \
      memset(d_ + ot_, 0, (size_t)z_ * sizeof(T));                                            \
    }                                                                                         \
    for (;;) {                                                                                \
      BGRAD_RUN(T, EXPR, (jb)->set, d_ + ot_, st_[r_ - 1], x_ + ox_, q_.sx[r_ - 1], y_ + oy_, \
                q_.sy[r_ - 1], g_ + og_, q_.d[r_ - 1]);                                       \
      int k = r_ - 2;                                                                         \
      for (; k >= 0; k--) {                                                                   \
        ot_ += st_[k];                                                                        \
        ox_ += q_.sx[k];                                                                      \
        oy_ += q_.sy[k];                                                                      \
        og_ += (jb)->sg[k];                                                                   \
        if (++idx_[k] < q_.d[k]) break;                                                       \
        ot_ -= st_[k] * q_.d[k];                                                              \
        ox_ -= q_.sx[k] * q_.d[k];                                                            \
        oy_ -= q_.sy[k] * q_.d[k];                                                            \
        og_ -= (jb)->sg[k] * q_.d[k];                                                         \
        idx_[k] = 0;                                                                          \
      }                                                                                       \
      if (k < 0) break;                                                                       \
    }                                                                                         \
  } while (0)

/* One innermost run of a broadcast gradient, the element's gradient EXPR over g, x and y: written
 * (set), summed into one element in Out's order (ts 0), or added element by element. */
#define BGRAD_RUN(T, EXPR, set, dt, ts, xs, sx, ys, sy, gs, len) \
  do {                                                           \
    if (set) {                                                   \
      for (int64_t i = 0; i < (len); i++) {                      \
        T g = (gs)[i], x = (xs)[i * (sx)], y = (ys)[i * (sy)];   \
        (void)x;                                                 \
        (void)y;                                                 \
        (dt)[i * (ts)] = (EXPR);                                 \
      }                                                          \
    } else if ((ts) == 0) {                                      \
      T acc = (dt)[0];                                           \
      for (int64_t i = 0; i < (len); i++) {                      \
        T g = (gs)[i], x = (xs)[i * (sx)], y = (ys)[i * (sy)];   \
        (void)x;                                                 \
        (void)y;                                                 \
        acc += (EXPR);                                           \
      }                                                          \
      (dt)[0] = acc;                                             \
    } else {                                                     \
      for (int64_t i = 0; i < (len); i++) {                      \
        T g = (gs)[i], x = (xs)[i * (sx)], y = (ys)[i * (sy)];   \
        (void)x;                                                 \
        (void)y;                                                 \
        (dt)[i * (ts)] += (EXPR);                                \
      }                                                          \
    }                                                            \
  } while (0)

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
  static void NAME##_brange(void *arg, int64_t first, int64_t last) {                           \
    const bgrad_job *jb = arg;                                                                  \
    if (jb->dx) BGRAD_WALK(T, jb, first, last, GX);                                             \
    else BGRAD_WALK(T, jb, first, last, GY);                                                    \
  }                                                                                             \
  static void NAME##_bcast(bgrad_job jb, int64_t n) {                                           \
    if (jb.split < 0) {                                                                         \
      NAME##_brange(&jb, 0, 1);                                                                 \
      return;                                                                                   \
    }                                                                                           \
    int64_t items = jb.p->d[jb.split];                                                          \
    ct__parallel_for(items, CT__GRAIN_MEM / (n / items) + 1, NAME##_brange, &jb);               \
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
    if (n == 0) {                                                                               \
      if (dx != NULL) memset(dx, 0, (size_t)xt->numel * sizeof(T));                             \
      if (dy != NULL) memset(dy, 0, (size_t)yt->numel * sizeof(T));                             \
      return CT_OK;                                                                             \
    }                                                                                           \
    ct__bcast_plan p;                                                                           \
    ct__plan_bcast(xt->dims, yt->dims, gt->dims, &p);                                           \
    if (dx != NULL) NAME##_bcast(bgrad_job_of(&p, true, dx, xs, ys, gs, xt->numel), n);         \
    if (dy != NULL) NAME##_bcast(bgrad_job_of(&p, false, dy, xs, ys, gs, yt->numel), n);        \
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
