/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/optimizer.c: the CPU kernels of sgd, momentum and adam (ops/defs/optimizer.c),
 * float32 and float64.
 *
 * Each update runs in Param's dtype, as PaddlePaddle's kernels do: the learning rate and the
 * attributes are converted to it first. Beta1PowOut and Beta2PowOut are computed in their own
 * dtype. An in-place update (ParamOut naming Param) reaches the kernel with a fresh ParamOut
 * block (ops/prep.c), so one loop serves both. The element loops split across threads
 * (ct__parallel_for): each element's update is the same whatever the split. adam's loop runs
 * packed (its sqrt is the instruction: the kernels build with -fno-math-errno), 16 or 8 float32
 * lanes (8 or 4 float64) where the CPU has AVX-512 or AVX2 (CT__VM_CLONES); sqrt and division
 * round the same packed or scalar. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ops/cpu/parallel.h"
#include "ops/cpu/vmath.h"
#include "ops/defs.h"

/* The value of a one-element float32 or float64 tensor (checked by infer-shape). */
static double scalar_in(const ct_kernel_ctx *c, size_t slot) {
  const ct_tensor *t = ct_kernel_in(c, slot, 0);
  return t->dtype == CT_FLOAT32 ? (double)*(const float *)ct__k_in_data(t)
                                : *(const double *)ct__k_in_data(t);
}

/* Writes output `slot` = input `in` x factor, in the input's dtype. */
static ct_status scale_scalar(const ct_kernel_ctx *c, size_t slot, size_t in, double factor) {
  ct_dtype dt = ct_kernel_in(c, in, 0)->dtype;
  void *o = ct__k_out_data(c, slot, 0, dt);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  if (dt == CT_FLOAT32) {
    *(float *)o = (float)scalar_in(c, in) * (float)factor;
  } else {
    *(double *)o = scalar_in(c, in) * factor;
  }
  return CT_OK;
}

/* An update's work, split by ct__parallel_for over Param's elements (each element's update
 * reads and writes that element only). Scalars are kept in double, each exactly the T value the
 * kernel computed (a float converts to double and back unchanged). */
typedef struct opt_job {
  void *po, *vo, *m2o;
  const void *p, *g, *v, *m2;
  double lr, mu, b1, b2, eps;
  bool nesterov;
} opt_job;

#define SGD_KERNEL(NAME, T)                                                    \
  static void NAME##_range(void *arg, int64_t b, int64_t e) {                  \
    const opt_job *j = arg;                                                    \
    const T *p = j->p, *g = j->g;                                              \
    T *po = j->po, lr = (T)j->lr;                                              \
    CT__SIMD for (int64_t i = b; i < e; i++) po[i] = p[i] - lr * g[i];         \
  }                                                                            \
  static ct_status NAME(const ct_kernel_ctx *c) {                              \
    const ct_tensor *pt = ct_kernel_in(c, CT__OPT_PARAM, 0);                   \
    opt_job j = {.po = ct__k_out_data(c, CT__OPT_PARAM_OUT, 0, c->dtype)};     \
    if (CT__UNLIKELY(j.po == NULL)) return ct_last_status();                   \
    j.p = ct__k_in_data(pt);                                                   \
    j.g = ct__k_in_data(ct_kernel_in(c, CT__OPT_GRAD, 0));                     \
    j.lr = (T)scalar_in(c, CT__SGD_LR);                                        \
    ct__parallel_for(pt->numel, CT__GRAIN_MEM, NAME##_range, &j);              \
    return CT_OK;                                                              \
  }

SGD_KERNEL(sgd_f32, float)
SGD_KERNEL(sgd_f64, double)

#define MOMENTUM_KERNEL(NAME, T)                                                \
  static void NAME##_range(void *arg, int64_t b, int64_t e) {                   \
    const opt_job *j = arg;                                                     \
    const T *p = j->p, *g = j->g, *v = j->v;                                    \
    T *po = j->po, *vo = j->vo, lr = (T)j->lr, mu = (T)j->mu;                   \
    if (j->nesterov) {                                                          \
      CT__SIMD for (int64_t i = b; i < e; i++) {                                \
        T vn = v[i] * mu + g[i];                                                \
        vo[i] = vn;                                                             \
        po[i] = p[i] - (g[i] + vn * mu) * lr;                                   \
      }                                                                         \
    } else {                                                                    \
      CT__SIMD for (int64_t i = b; i < e; i++) {                                \
        T vn = v[i] * mu + g[i];                                                \
        vo[i] = vn;                                                             \
        po[i] = p[i] - lr * vn;                                                 \
      }                                                                         \
    }                                                                           \
  }                                                                             \
  static ct_status NAME(const ct_kernel_ctx *c) {                               \
    const ct_tensor *pt = ct_kernel_in(c, CT__OPT_PARAM, 0);                    \
    opt_job j = {.po = ct__k_out_data(c, CT__OPT_PARAM_OUT, 0, c->dtype)};      \
    if (CT__UNLIKELY(j.po == NULL)) return ct_last_status();                    \
    j.vo = ct__k_out_data(c, CT__MOM_VELOCITY_OUT, 0, c->dtype);                \
    if (CT__UNLIKELY(j.vo == NULL)) return ct_last_status();                    \
    j.p = ct__k_in_data(pt);                                                    \
    j.g = ct__k_in_data(ct_kernel_in(c, CT__OPT_GRAD, 0));                      \
    j.v = ct__k_in_data(ct_kernel_in(c, CT__MOM_VELOCITY, 0));                  \
    j.lr = (T)scalar_in(c, CT__MOM_LR);                                         \
    j.mu = (T)c->attr[CT__MOM_MU].u.f;                                          \
    j.nesterov = c->attr[CT__MOM_USE_NESTEROV].u.b;                             \
    ct__parallel_for(pt->numel, CT__GRAIN_MEM, NAME##_range, &j);               \
    return CT_OK;                                                               \
  }

MOMENTUM_KERNEL(momentum_f32, float)
MOMENTUM_KERNEL(momentum_f64, double)

/* Adam's moments: v and vo hold Moment1, m2 and m2o Moment2; lr and eps are lr_t and eps_t. */
#define ADAM_KERNEL(NAME, T, SQRT)                                                       \
  CT__VM_CLONES static void NAME##_range(void *arg, int64_t b, int64_t e) {              \
    const opt_job *j = arg;                                                              \
    const T *p = j->p, *g = j->g, *m1 = j->v, *m2 = j->m2;                               \
    T *po = j->po, *m1o = j->vo, *m2o = j->m2o;                                          \
    T b1 = (T)j->b1, b2 = (T)j->b2, lr_t = (T)j->lr, eps_t = (T)j->eps;                  \
    CT__SIMD for (int64_t i = b; i < e; i++) {                                           \
      T gi = g[i];                                                                       \
      T a = b1 * m1[i] + (1 - b1) * gi;                                                  \
      T bb = b2 * m2[i] + (1 - b2) * gi * gi;                                            \
      m1o[i] = a;                                                                        \
      m2o[i] = bb;                                                                       \
      po[i] = p[i] - lr_t * (a / (SQRT(bb) + eps_t));                                    \
    }                                                                                    \
  }                                                                                      \
  static ct_status NAME(const ct_kernel_ctx *c) {                                        \
    const ct_tensor *pt = ct_kernel_in(c, CT__OPT_PARAM, 0);                             \
    double beta1 = c->attr[CT__ADAM_BETA1].u.f, beta2 = c->attr[CT__ADAM_BETA2].u.f;     \
    T eps = (T)c->attr[CT__ADAM_EPSILON].u.f;                                            \
    T lr = (T)scalar_in(c, CT__ADAM_LR);                                                 \
    T b1p = (T)scalar_in(c, CT__ADAM_B1POW), b2p = (T)scalar_in(c, CT__ADAM_B2POW);      \
    opt_job j = {.po = ct__k_out_data(c, CT__OPT_PARAM_OUT, 0, c->dtype)};               \
    if (CT__UNLIKELY(j.po == NULL)) return ct_last_status();                             \
    j.vo = ct__k_out_data(c, CT__ADAM_M1_OUT, 0, c->dtype);                              \
    if (CT__UNLIKELY(j.vo == NULL)) return ct_last_status();                             \
    j.m2o = ct__k_out_data(c, CT__ADAM_M2_OUT, 0, c->dtype);                             \
    if (CT__UNLIKELY(j.m2o == NULL)) return ct_last_status();                            \
    ct_status s = scale_scalar(c, CT__ADAM_B1POW_OUT, CT__ADAM_B1POW, beta1);            \
    if (s == CT_OK) s = scale_scalar(c, CT__ADAM_B2POW_OUT, CT__ADAM_B2POW, beta2);      \
    if (CT__UNLIKELY(s != CT_OK)) return s;                                              \
    j.p = ct__k_in_data(pt);                                                             \
    j.g = ct__k_in_data(ct_kernel_in(c, CT__OPT_GRAD, 0));                               \
    j.v = ct__k_in_data(ct_kernel_in(c, CT__ADAM_M1, 0));                                \
    j.m2 = ct__k_in_data(ct_kernel_in(c, CT__ADAM_M2, 0));                               \
    j.b1 = (T)beta1;                                                                     \
    j.b2 = (T)beta2;                                                                     \
    j.lr = lr * SQRT(1 - b2p) / (1 - b1p);                                               \
    j.eps = eps * SQRT(1 - b2p);                                                         \
    ct__parallel_for(pt->numel, CT__GRAIN_MEM, NAME##_range, &j);                        \
    return CT_OK;                                                                        \
  }

ADAM_KERNEL(adam_f32, float, sqrtf)
ADAM_KERNEL(adam_f64, double, sqrt)


/* lr_schedule (ops/defs/optimizer.c): the learning rate of step t in double, stored float32. */
static ct_status lr_schedule(const ct_kernel_ctx *c) {
  int64_t t = *(const int64_t *)ct__k_in_data(ct_kernel_in(c, CT__SCHED_STEP, 0));
  if (t < 0 || t == INT64_MAX) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT, "input Step variable '%s' holds %lld: it "
                          "counts the steps taken, from 0 (below 2^63 - 1)",
                          ct_kernel_in_name(c, CT__SCHED_STEP, 0), (long long)t);
  }
  const char *kind = c->attr[CT__SCHED_KIND].u.s;
  double base = c->attr[CT__SCHED_BASE].u.f, lr = base;
  int64_t warm = c->attr[CT__SCHED_WARMUP].u.i;
  if (t < warm) {
    lr = base * (double)(t + 1) / (double)warm;
  } else if (strcmp(kind, "step") == 0) {
    lr = base * pow(c->attr[CT__SCHED_GAMMA].u.f,
                    (double)((t - warm) / c->attr[CT__SCHED_STEP_SIZE].u.i));
  } else if (strcmp(kind, "cosine") == 0) {
    int64_t total = c->attr[CT__SCHED_TOTAL].u.i, u = t - warm < total ? t - warm : total;
    double lo = c->attr[CT__SCHED_MIN_LR].u.f;
    lr = lo + (base - lo) * (1 + cos(3.14159265358979323846 * (double)u / (double)total)) / 2;
  }
  float *o = ct__k_out_data(c, CT__SCHED_LR_OUT, 0, CT_FLOAT32);
  int64_t *next = o != NULL ? ct__k_out_data(c, CT__SCHED_STEP_OUT, 0, CT_INT64) : NULL;
  if (CT__UNLIKELY(next == NULL)) return ct_last_status();
  *o = (float)lr;
  *next = t + 1;
  return CT_OK;
}

static const ct__kernel_set kernels[] = {
    {"sgd", CT__KERNELS_F32_F64(sgd)},
    {"momentum", CT__KERNELS_F32_F64(momentum)},
    {"adam", CT__KERNELS_F32_F64(adam)},
    {"lr_schedule", CT__KERNELS([CT_DTYPE_UNDEFINED] = lr_schedule)}, /* infer checks Step */
};

const ct__kernel_table ct__cpu_optimizer = CT__TABLE(kernels);
