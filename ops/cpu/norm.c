/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/norm.c: the CPU kernels of batch_norm, layer_norm and their gradients (ops/defs/
 * norm.c, norm_grad.c), float32 and float64.
 *
 * Every statistic and every sum is taken in double in element order (a channel: its elements
 * batch by batch; a row: left to right; Scale@GRAD and Bias@GRAD of layer_norm: row by row), and
 * each output element is computed in double and rounded once, so float32 results are as close
 * as float32 allows, and a backend that follows the same order matches them bit for bit. */
#include <stdlib.h>

#include "common/alloc.h"
#include "ops/defs.h"

/* The wired outputs X@GRAD, Scale@GRAD, Bias@GRAD of a norm grad op (NULL where unwired). */
static ct_status grad_outs(const ct_kernel_ctx *c, void *o[3]) {
  for (size_t k = CT__NG_DX; k <= CT__NG_DBIAS; k++) {
    o[k] = NULL;
    if (ct_kernel_out_count(c, k) == 0) continue;
    if ((o[k] = ct__k_out_data(c, k, 0, c->dtype)) == NULL) return ct_last_status();
  }
  return CT_OK;
}

/* The data of input slot, or NULL when it is unwired. */
static const void *opt_in(const ct_kernel_ctx *c, size_t slot) {
  return ct_kernel_in_count(c, slot) ? ct__k_in_data(ct_kernel_in(c, slot, 0)) : NULL;
}

/* Runs BODY with `at` set to each element of channel ch of the plan's [outer, c, inner] view, in
 * memory order. */
#define FOR_CHANNEL(p, ch, at, BODY)                         \
  for (int64_t o_ = 0; o_ < (p).outer; o_++) {               \
    for (int64_t i_ = 0; i_ < (p).inner; i_++) {             \
      int64_t at = (o_ * (p).c + (ch)) * (p).inner + i_;     \
      BODY                                                   \
    }                                                        \
  }

#define BN_KERNEL(NAME, T)                                                                     \
  static ct_status NAME(const ct_kernel_ctx *c) {                                              \
    ct__norm_plan p;                                                                           \
    ct_status s = ct__bn_plan(c, &p);                                                          \
    if (s != CT_OK) return s;                                                                  \
    T *out[5];                                                                                 \
    for (size_t k = 0; k < 5; k++) {                                                           \
      if ((out[k] = ct__k_out_data(c, k, 0, c->dtype)) == NULL) return ct_last_status();       \
    }                                                                                          \
    const T *x = ct__k_in_data(ct_kernel_in(c, CT__BN_X, 0));                                  \
    const T *sc = ct__k_in_data(ct_kernel_in(c, CT__BN_SCALE, 0));                             \
    const T *bi = ct__k_in_data(ct_kernel_in(c, CT__BN_BIAS, 0));                              \
    const T *rm = ct__k_in_data(ct_kernel_in(c, CT__BN_MEAN, 0));                              \
    const T *rv = ct__k_in_data(ct_kernel_in(c, CT__BN_VARIANCE, 0));                          \
    double mom = c->attr[CT__BN_MOMENTUM].u.f, eps = c->attr[CT__BN_EPSILON].u.f;              \
    bool global = c->attr[CT__BN_IS_TEST].u.b || c->attr[CT__BN_GLOBAL_STATS].u.b;            \
    double m = (double)(p.outer * p.inner);                                                    \
    for (int64_t ch = 0; ch < p.c; ch++) {                                                     \
      double mu = rm[ch], var = rv[ch];                                                        \
      if (!global) {                                                                           \
        double sum = 0, sq = 0;                                                                \
        FOR_CHANNEL(p, ch, at, sum += (double)x[at];)                                          \
        mu = sum / m;                                                                          \
        FOR_CHANNEL(p, ch, at, sq += ((double)x[at] - mu) * ((double)x[at] - mu);)             \
        var = sq / m;                                                                          \
        out[CT__BN_MEAN_OUT][ch] = (T)((double)rm[ch] * mom + mu * (1 - mom));                 \
        out[CT__BN_VAR_OUT][ch] = (T)((double)rv[ch] * mom + var * (1 - mom));                 \
      } else {                                                                                 \
        out[CT__BN_MEAN_OUT][ch] = rm[ch];                                                     \
        out[CT__BN_VAR_OUT][ch] = rv[ch];                                                      \
      }                                                                                        \
      double inv = ct__inv_std(var, eps), g = sc[ch], b = bi[ch];                              \
      out[CT__BN_SAVED_MEAN][ch] = (T)mu;                                                      \
      out[CT__BN_SAVED_VAR][ch] = (T)inv;                                                      \
      FOR_CHANNEL(p, ch, at, out[CT__BN_Y][at] = (T)(((double)x[at] - mu) * inv * g + b);)     \
    }                                                                                          \
    return CT_OK;                                                                              \
  }

BN_KERNEL(batch_norm_f32, float)
BN_KERNEL(batch_norm_f64, double)

#define BN_GRAD_KERNEL(NAME, T)                                                          \
  static ct_status NAME(const ct_kernel_ctx *c) {                                        \
    ct__norm_plan p;                                                                     \
    ct_status s = ct__bn_plan(c, &p);                                                    \
    void *o3[3];                                                                         \
    if (s == CT_OK) s = grad_outs(c, o3);                                                \
    if (s != CT_OK) return s;                                                            \
    T *dx = o3[0], *dsc = o3[1], *dbi = o3[2];                                           \
    const T *x = ct__k_in_data(ct_kernel_in(c, CT__BNG_X, 0));                           \
    const T *sc = ct__k_in_data(ct_kernel_in(c, CT__BNG_SCALE, 0));                      \
    const T *sm = ct__k_in_data(ct_kernel_in(c, CT__BNG_SAVED_MEAN, 0));                 \
    const T *sv = ct__k_in_data(ct_kernel_in(c, CT__BNG_SAVED_VAR, 0));                  \
    const T *dy = ct__k_in_data(ct_kernel_in(c, CT__BNG_DY, 0));                         \
    bool global = c->attr[CT__BN_IS_TEST].u.b || c->attr[CT__BN_GLOBAL_STATS].u.b;       \
    double m = (double)(p.outer * p.inner);                                              \
    for (int64_t ch = 0; ch < p.c; ch++) {                                               \
      double mu = sm[ch], inv = sv[ch], sdy = 0, sdyx = 0;                               \
      FOR_CHANNEL(p, ch, at, {                                                           \
        sdy += (double)dy[at];                                                           \
        sdyx += (double)dy[at] * (((double)x[at] - mu) * inv);                           \
      })                                                                                 \
      if (dsc != NULL) dsc[ch] = (T)sdyx;                                                \
      if (dbi != NULL) dbi[ch] = (T)sdy;                                                 \
      if (dx == NULL) continue;                                                          \
      double k = (double)sc[ch] * inv, mdy = global ? 0 : sdy / m;                       \
      double mdyx = global ? 0 : sdyx / m;                                               \
      FOR_CHANNEL(p, ch, at, {                                                           \
        double xh = ((double)x[at] - mu) * inv;                                          \
        dx[at] = (T)(k * ((double)dy[at] - mdy - xh * mdyx));                            \
      })                                                                                 \
    }                                                                                    \
    return CT_OK;                                                                        \
  }

BN_GRAD_KERNEL(batch_norm_grad_f32, float)
BN_GRAD_KERNEL(batch_norm_grad_f64, double)

#define LN_KERNEL(NAME, T)                                                              \
  static ct_status NAME(const ct_kernel_ctx *c) {                                       \
    ct__norm_plan p;                                                                    \
    ct_status s = ct__ln_plan(c, &p);                                                   \
    if (s != CT_OK) return s;                                                           \
    T *y = ct__k_out_data(c, CT__LN_Y, 0, c->dtype);                                    \
    if (y == NULL) return ct_last_status();                                             \
    T *mean = ct__k_out_data(c, CT__LN_MEAN, 0, c->dtype);                              \
    if (mean == NULL) return ct_last_status();                                          \
    T *var = ct__k_out_data(c, CT__LN_VARIANCE, 0, c->dtype);                           \
    if (var == NULL) return ct_last_status();                                           \
    const T *x = ct__k_in_data(ct_kernel_in(c, CT__LN_X, 0));                           \
    const T *sc = opt_in(c, CT__LN_SCALE), *bi = opt_in(c, CT__LN_BIAS);                \
    double eps = c->attr[CT__LN_EPSILON].u.f, n = (double)p.inner;                      \
    for (int64_t r = 0; r < p.outer; r++) {                                             \
      const T *xr = x + r * p.inner;                                                    \
      T *yr = y + r * p.inner;                                                          \
      double sum = 0, sq = 0;                                                           \
      for (int64_t j = 0; j < p.inner; j++) sum += (double)xr[j];                       \
      double mu = sum / n;                                                              \
      for (int64_t j = 0; j < p.inner; j++) {                                           \
        double d = (double)xr[j] - mu;                                                  \
        sq += d * d;                                                                    \
      }                                                                                 \
      double v = sq / n, inv = ct__inv_std(v, eps);                                     \
      mean[r] = (T)mu;                                                                  \
      var[r] = (T)v;                                                                    \
      for (int64_t j = 0; j < p.inner; j++) {                                           \
        double xh = ((double)xr[j] - mu) * inv;                                         \
        yr[j] = (T)(xh * (sc ? (double)sc[j] : 1.0) + (bi ? (double)bi[j] : 0.0));      \
      }                                                                                 \
    }                                                                                   \
    return CT_OK;                                                                       \
  }

LN_KERNEL(layer_norm_f32, float)
LN_KERNEL(layer_norm_f64, double)

/* Scale@GRAD and Bias@GRAD sum over the rows into double accumulators (2 x inner of them),
 * allocated before any output, so a failure leaves the outputs as they were. */
#define LN_GRAD_KERNEL(NAME, T)                                                              \
  static ct_status NAME(const ct_kernel_ctx *c) {                                            \
    ct__norm_plan p;                                                                         \
    ct_status s = ct__ln_plan(c, &p);                                                        \
    if (s != CT_OK) return s;                                                                \
    double *acc = ct__calloc((size_t)(2 * p.inner + 1), sizeof *acc);                        \
    if (acc == NULL) {                                                                       \
      return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY,                                         \
                            "cannot allocate %lld bytes of host memory for the row sums",    \
                            (long long)(2 * p.inner + 1) * 8);                               \
    }                                                                                        \
    void *o3[3];                                                                             \
    if ((s = grad_outs(c, o3)) != CT_OK) {                                                   \
      free(acc);                                                                             \
      return s;                                                                              \
    }                                                                                        \
    T *dx = o3[0], *dsc = o3[1], *dbi = o3[2];                                               \
    const T *x = ct__k_in_data(ct_kernel_in(c, CT__LNG_X, 0));                               \
    const T *sc = opt_in(c, CT__LNG_SCALE);                                                  \
    const T *mean = ct__k_in_data(ct_kernel_in(c, CT__LNG_MEAN, 0));                         \
    const T *var = ct__k_in_data(ct_kernel_in(c, CT__LNG_VARIANCE, 0));                      \
    const T *dy = ct__k_in_data(ct_kernel_in(c, CT__LNG_DY, 0));                             \
    double eps = c->attr[CT__LN_EPSILON].u.f, n = (double)p.inner;                           \
    for (int64_t r = 0; r < p.outer; r++) {                                                  \
      const T *xr = x + r * p.inner, *gr = dy + r * p.inner;                                 \
      double mu = mean[r], inv = ct__inv_std(var[r], eps), sg = 0, sgx = 0;                  \
      for (int64_t j = 0; j < p.inner; j++) {                                                \
        double xh = ((double)xr[j] - mu) * inv;                                              \
        double g = (double)gr[j] * (sc ? (double)sc[j] : 1.0);                               \
        sg += g;                                                                             \
        sgx += g * xh;                                                                       \
        acc[j] += (double)gr[j] * xh;                                                        \
        acc[p.inner + j] += (double)gr[j];                                                   \
      }                                                                                      \
      if (dx == NULL) continue;                                                              \
      T *dr = dx + r * p.inner;                                                              \
      for (int64_t j = 0; j < p.inner; j++) {                                                \
        double xh = ((double)xr[j] - mu) * inv;                                              \
        double g = (double)gr[j] * (sc ? (double)sc[j] : 1.0);                               \
        dr[j] = (T)(inv * (g - sg / n - xh * (sgx / n)));                                    \
      }                                                                                      \
    }                                                                                        \
    for (int64_t j = 0; j < p.inner; j++) {                                                  \
      if (dsc != NULL) dsc[j] = (T)acc[j];                                                   \
      if (dbi != NULL) dbi[j] = (T)acc[p.inner + j];                                         \
    }                                                                                        \
    free(acc);                                                                               \
    return CT_OK;                                                                            \
  }

LN_GRAD_KERNEL(layer_norm_grad_f32, float)
LN_GRAD_KERNEL(layer_norm_grad_f64, double)

static const ct__kernel_set kernels[] = {
    {"batch_norm", CT__KERNELS_F32_F64(batch_norm)},
    {"batch_norm_grad", CT__KERNELS_F32_F64(batch_norm_grad)},
    {"layer_norm", CT__KERNELS_F32_F64(layer_norm)},
    {"layer_norm_grad", CT__KERNELS_F32_F64(layer_norm_grad)},
};

const ct__kernel_table ct__cpu_norm = CT__TABLE(kernels);
