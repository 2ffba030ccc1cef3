/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/elementwise_grad.c: the CPU kernels of the elementwise gradients (ops/defs/
 * elementwise_grad.c), float32 and float64.
 *
 * A binary op's gradient with inputs of Out's dims is one flat loop. With broadcasting, the
 * gradients walk the forward op's broadcast plan (ct__plan_bcast): an input of Out's numel gets
 * its element's value, a broadcast one starts at zero and every element of Out@GRAD adds into
 * the element of the input it came from, in Out's order. The walk splits across threads over
 * the outermost plan dim along which the broadcast input is not broadcast (one walk for both
 * gradients when the other input has Out's numel, else one walk each), so each piece owns a
 * block of the gradient and every element's sum keeps Out's order: the same bytes whatever the
 * thread count. An input broadcast along every dim (one element) sums on the calling thread. */
#include <string.h>

#include "ops/cpu/parallel.h"
#include "ops/cpu/vmath.h" /* CT__VM_CLONES */
#include "ops/defs.h"

/* A gradient's flat work, split by ct__parallel_for: elements. */
typedef struct grad_job {
  void *dx, *dy;
  const void *x, *y, *g;
} grad_job;

/* Gradients under broadcasting: one walk of the broadcast plan writes X@GRAD (dx, unless NULL)
 * and Y@GRAD (dy, unless NULL), split by ct__parallel_for over plan dim `split`. A gradient
 * that is set (its input has Out's numel) gets each element written once; any other is one
 * whose outermost plan dim with a nonzero stride is `split` (or is one element, split -1): the
 * dims before it broadcast the input, so a range of it is one block of the gradient, which the
 * piece zeroes and then adds into in Out's order. sg: Out's strides over the plan. */
typedef struct bgrad_job {
  const ct__bcast_plan *p;
  int64_t sg[CT_MAX_RANK];
  int split;
  bool set_x, set_y;
  void *dx, *dy;
  const void *x, *y, *g;
} bgrad_job;

/* The outermost dim of plan p along which strides st are not 0; -1 when there is none. */
static int outer_kept(const ct__bcast_plan *p, const int64_t *st) {
  for (int k = 0; k < p->rank; k++) {
    if (st[k] != 0) return k;
  }
  return -1;
}

/* Zeroes the block of a gradient (stride st along the split) that indices first to last - 1 of
 * the split dim cover; es: its element size. */
static void bgrad_zero(char *d, const bgrad_job *j, const int64_t *st, int64_t first,
                       int64_t last, size_t es) {
  int k = j->split;
  if (k < 0) memset(d, 0, es);
  else memset(d + (size_t)(first * st[k]) * es, 0, (size_t)((last - first) * st[k]) * es);
}

/* The loop of one innermost run: dt[i ts] OP EXPR over g, x and y. */
#define BGRAD_LOOP(T, EXPR, OP, dt, ts, xs, sx, ys, sy, gs, len) \
  CT__SIMD for (int64_t i = 0; i < (len); i++) {                 \
    T g = (gs)[i], x = (xs)[i * (sx)], y = (ys)[i * (sy)];       \
    (void)x;                                                     \
    (void)y;                                                     \
    (dt)[i * (ts)] OP(EXPR);                                     \
  }

/* One innermost run of a gradient (ts: its stride, the input's): written (set), summed into one
 * element in Out's order (ts 0), or added element by element; contiguous strides are constants
 * so that the loops vectorise. A set element is 0 + its term, as if summed into a zeroed
 * gradient like the others (a -0 term gives +0, which the fused backward chains match). */
#define BGRAD_RUN(T, EXPR, set, dt, ts, xs, sx, ys, sy, gs, len)                  \
  do {                                                                            \
    if ((ts) == 0 && !(set)) {                                                    \
      T acc = (dt)[0];                                                            \
      for (int64_t i = 0; i < (len); i++) {                                       \
        T g = (gs)[i], x = (xs)[i * (sx)], y = (ys)[i * (sy)];                    \
        (void)x;                                                                  \
        (void)y;                                                                  \
        acc += (EXPR);                                                            \
      }                                                                           \
      (dt)[0] = acc;                                                              \
    } else if ((ts) == 1 && (sx) == 1 && (sy) == 1) {                             \
      if (set) BGRAD_LOOP(T, EXPR, = (T)0 +, dt, 1, xs, 1, ys, 1, gs, len)               \
      else BGRAD_LOOP(T, EXPR, +=, dt, 1, xs, 1, ys, 1, gs, len)                  \
    } else if ((ts) == 1 && (sx) == 1 && (sy) == 0) {                             \
      if (set) BGRAD_LOOP(T, EXPR, = (T)0 +, dt, 1, xs, 1, ys, 0, gs, len)               \
      else BGRAD_LOOP(T, EXPR, +=, dt, 1, xs, 1, ys, 0, gs, len)                  \
    } else if ((ts) == 1 && (sx) == 0 && (sy) == 1) {                             \
      if (set) BGRAD_LOOP(T, EXPR, = (T)0 +, dt, 1, xs, 0, ys, 1, gs, len)               \
      else BGRAD_LOOP(T, EXPR, +=, dt, 1, xs, 0, ys, 1, gs, len)                  \
    } else {                                                                      \
      if (set) BGRAD_LOOP(T, EXPR, = (T)0 +, dt, ts, xs, sx, ys, sy, gs, len)            \
      else BGRAD_LOOP(T, EXPR, +=, dt, ts, xs, sx, ys, sy, gs, len)               \
    }                                                                             \
  } while (0)

/* Runs summed into one element each (ts 0) take one dependent add after another, each waiting
 * for the last: BGRAD_BLOCK consecutive runs along the next dim out, whose elements differ, sum
 * at once, each into its own accumulator in its own order (the same bytes, the adds side by
 * side). ds: the gradient's stride across the runs; ox, oy, og: the inputs' and Out@GRAD's. */
enum { BGRAD_BLOCK = 8 };
#define BGRAD_SUMS(T, EXPR, dt, ds, xs, sx, ox, ys, sy, oy, gs, og, len)   \
  do {                                                                      \
    T acc_[BGRAD_BLOCK];                                                    \
    for (int b_ = 0; b_ < BGRAD_BLOCK; b_++) acc_[b_] = (dt)[b_ * (ds)];    \
    for (int64_t i = 0; i < (len); i++) {                                   \
      for (int b_ = 0; b_ < BGRAD_BLOCK; b_++) {                            \
        T g = (gs)[b_ * (og) + i], x = (xs)[b_ * (ox) + i * (sx)];          \
        T y = (ys)[b_ * (oy) + i * (sy)];                                   \
        (void)x;                                                            \
        (void)y;                                                            \
        acc_[b_] += (EXPR);                                                 \
      }                                                                     \
    }                                                                       \
    for (int b_ = 0; b_ < BGRAD_BLOCK; b_++) (dt)[b_ * (ds)] = acc_[b_];    \
  } while (0)

/* nb runs of one gradient from the walk's position (dt, its offset o, its strides si inside a
 * run and so across them; dxs_, dys_, dgs_: the inputs' and Out@GRAD's across them): BGRAD_SUMS
 * when they are a block summed into distinct elements, else BGRAD_RUN run by run. */
#define BGRAD_RUNS(T, EXPR, set, dt, o, si, so, nb)                                            \
  do {                                                                                         \
    int64_t ds_ = (so);                                                                        \
    if ((nb) == BGRAD_BLOCK && (si) == 0 && !(set) && ds_ != 0) {                              \
      BGRAD_SUMS(T, EXPR, dt + (o), ds_, x_ + ox_, sxi_, dxs_, y_ + oy_, syi_, dys_, g_ + og_,   \
                 dgs_, len_);                                                                  \
      break;                                                                                   \
    }                                                                                          \
    for (int b_ = 0; b_ < (nb); b_++) {                                                        \
      T *d1_ = dt + (o) + b_ * ds_;                                                            \
      const T *x1_ = x_ + ox_ + b_ * dxs_, *y1_ = y_ + oy_ + b_ * dys_;                        \
      const T *g1_ = g_ + og_ + b_ * dgs_;                                                     \
      BGRAD_RUN(T, EXPR, set, d1_, si, x1_, sxi_, y1_, syi_, g1_, len_);                       \
    }                                                                                          \
  } while (0)

/* Runs the job's walk over indices first to last - 1 of its split dim (all of the plan when the
 * split is -1): zeroes the piece's blocks of the gradients not set, then runs BGRAD_RUNS over
 * each innermost run of the plan (BGRAD_BLOCK at a time where a gradient sums them), GX and GY
 * the elements' gradients. */
#define BGRAD_WALK(T, jb, first, last, GX, GY)                                                \
  do {                                                                                        \
    ct__bcast_plan q_ = *(jb)->p;                                                             \
    int r_ = q_.rank, k_ = (jb)->split;                                                       \
    int64_t ox_ = 0, oy_ = 0, og_ = 0, idx_[CT_MAX_RANK] = {0};                              \
    T *dx_ = (jb)->dx, *dy_ = (jb)->dy;                                                       \
    const T *x_ = (jb)->x, *y_ = (jb)->y, *g_ = (jb)->g;                                      \
    if (dx_ != NULL && !(jb)->set_x) bgrad_zero((char *)dx_, jb, q_.sx, first, last, sizeof(T)); \
    if (dy_ != NULL && !(jb)->set_y) bgrad_zero((char *)dy_, jb, q_.sy, first, last, sizeof(T)); \
    if (k_ >= 0) {                                                                            \
      ox_ = (first)*q_.sx[k_];                                                                \
      oy_ = (first)*q_.sy[k_];                                                                \
      og_ = (first)*(jb)->sg[k_];                                                             \
      q_.d[k_] = (last) - (first);                                                            \
    }                                                                                         \
    int64_t sxi_ = q_.sx[r_ - 1], syi_ = q_.sy[r_ - 1], len_ = q_.d[r_ - 1];                  \
    int k2_ = r_ >= 2 ? r_ - 2 : 0; /* the dim a block runs along (none when r_ is 1) */     \
    int64_t dxs_ = q_.sx[k2_], dys_ = q_.sy[k2_], dgs_ = (jb)->sg[k2_];                        \
    bool sums_ = r_ >= 2 && ((dx_ != NULL && !(jb)->set_x && sxi_ == 0 && dxs_ != 0) ||       \
                             (dy_ != NULL && !(jb)->set_y && syi_ == 0 && dys_ != 0));        \
    for (;;) {                                                                                \
      int nb_ = sums_ && idx_[k2_] + BGRAD_BLOCK <= q_.d[k2_] ? BGRAD_BLOCK : 1;               \
      if (dx_ != NULL) BGRAD_RUNS(T, GX, (jb)->set_x, dx_, ox_, sxi_, dxs_, nb_);              \
      if (dy_ != NULL) BGRAD_RUNS(T, GY, (jb)->set_y, dy_, oy_, syi_, dys_, nb_);              \
      if (nb_ > 1) { /* on to the block's last run; the step below passes it */               \
        ox_ += (nb_ - 1) * dxs_;                                                              \
        oy_ += (nb_ - 1) * dys_;                                                              \
        og_ += (nb_ - 1) * dgs_;                                                              \
        idx_[k2_] += nb_ - 1;                                                                 \
      }                                                                                       \
      int k = r_ - 2;                                                                         \
      for (; k >= 0; k--) {                                                                   \
        ox_ += q_.sx[k];                                                                      \
        oy_ += q_.sy[k];                                                                      \
        og_ += (jb)->sg[k];                                                                   \
        if (++idx_[k] < q_.d[k]) break;                                                       \
        ox_ -= q_.sx[k] * q_.d[k];                                                            \
        oy_ -= q_.sy[k] * q_.d[k];                                                            \
        og_ -= (jb)->sg[k] * q_.d[k];                                                         \
        idx_[k] = 0;                                                                          \
      }                                                                                       \
      if (k < 0) break;                                                                       \
    }                                                                                         \
  } while (0)

/* Runs job j split over its split dim (Out of n elements). */
static void bgrad_run(bgrad_job *j, int64_t n, ct__range_fn fn) {
  if (j->split < 0) {
    fn(j, 0, 1);
    return;
  }
  int64_t items = j->p->d[j->split];
  ct__parallel_for(items, CT__GRAIN_MEM / (n / items) + 1, fn, j);
}

/* The gradients dx and dy (either NULL) of X (nx elements) and Y (ny) against Out (n): one walk
 * when one of them is set and the other splits (split over the other's dim), else one walk each. */
static void bgrad_plan(const ct__bcast_plan *p, void *dx, void *dy, const void *x, const void *y,
                       const void *g, int64_t nx, int64_t ny, int64_t n, ct__range_fn fn) {
  bgrad_job j = {.p = p, .set_x = nx == n, .set_y = ny == n, .x = x, .y = y, .g = g};
  int64_t m = 1;
  for (int k = p->rank - 1; k >= 0; k--) {
    j.sg[k] = m;
    m *= p->d[k];
  }
  int kx = outer_kept(p, p->sx), ky = outer_kept(p, p->sy);
  if (dx != NULL && dy != NULL && (j.set_x || j.set_y) && (j.set_x ? ky : kx) >= 0) {
    j.dx = dx;
    j.dy = dy;
    j.split = j.set_x ? ky : kx;
    bgrad_run(&j, n, fn);
    return;
  }
  if (dx != NULL) {
    j.dx = dx;
    j.split = kx;
    bgrad_run(&j, n, fn);
    j.dx = NULL;
  }
  if (dy != NULL) {
    j.dy = dy;
    j.split = ky;
    bgrad_run(&j, n, fn);
  }
}

/* GX and GY are the gradients of X and Y at one element, in terms of g (Out@GRAD), x and y.
 * The broadcast walk carries the vector clones (CT__VM_CLONES: the bias gradient's column adds
 * ran 4 floats an instruction on the SSE2 baseline); each element's sum keeps its order. */
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
  CT__VM_CLONES static void NAME##_brange(void *arg, int64_t first, int64_t last) {             \
    const bgrad_job *jb = arg;                                                                  \
    BGRAD_WALK(T, jb, first, last, GX, GY);                                                     \
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
      ct__parallel_for_job(n, CT__GRAIN_MEM, NAME##_range, &j);                                 \
      return CT_OK;                                                                             \
    }                                                                                           \
    if (n == 0) {                                                                               \
      if (dx != NULL) memset(dx, 0, (size_t)xt->numel * sizeof(T));                             \
      if (dy != NULL) memset(dy, 0, (size_t)yt->numel * sizeof(T));                             \
      return CT_OK;                                                                             \
    }                                                                                           \
    ct__bcast_plan p;                                                                           \
    ct__plan_bcast(xt->dims, yt->dims, gt->dims, &p);                                           \
    bgrad_plan(&p, dx, dy, xs, ys, gs, xt->numel, yt->numel, n, NAME##_brange);                \
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
    ct__parallel_for_job(at->numel, CT__GRAIN_MEM, NAME##_range, &j);       \
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
