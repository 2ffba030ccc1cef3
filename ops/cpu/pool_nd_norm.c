/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/pool_nd_norm.c: lrn, instance_norm and their gradients on the CPU, float32 and
 * float64, every sum and power in double (ops/defs/pool_nd_norm.c, pool_nd_grad.c give the
 * formulas). X is walked as [N, C, inner]. */
#include <math.h>

#include "ops/cpu/cpu_kernels.h"
#include "ops/defs/pool_nd.h"

/* lrn's window of channel c among ch: [*lo, *hi). */
static void lrn_window(int64_t size, int64_t ch, int64_t c, int64_t *lo, int64_t *hi) {
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  *lo = c - before < 0 ? 0 : c - before;
  *hi = c + after + 1 > ch ? ch : c + after + 1;
}

/* bias + alpha / size * (the sum of x^2 over channel c's window), x at stride `inner`. */
#define LRN_SCALE(T)                                                                       \
  static double lrn_scale_##T(const T *x, int64_t inner, int64_t ch, int64_t c, int64_t size, \
                              double alpha, double bias) {                                \
    int64_t lo, hi;                                                                       \
    lrn_window(size, ch, c, &lo, &hi);                                                    \
    double sq = 0;                                                                        \
    for (int64_t k = lo; k < hi; k++) sq += (double)x[k * inner] * (double)x[k * inner];  \
    return bias + alpha / (double)size * sq;                                              \
  }

#define NORM_KERNELS(SFX, T)                                                               \
  LRN_SCALE(T)                                                                            \
  static ct_status lrn_##SFX(const ct_kernel_ctx *c) {                                    \
    int64_t n, ch, inner;                                                                 \
    ct_status s = ct__nchw_view(c, CT__IN_X, &n, &ch, &inner);                            \
    T *o = s == CT_OK ? ct__k_out_data(c, CT__OUT, 0, c->dtype) : NULL;                   \
    if (o == NULL) return s != CT_OK ? s : ct_last_status();                              \
    const T *x = ct__k_in_data(ct_kernel_in(c, CT__IN_X, 0));                             \
    int64_t size = c->attr[CT__LRN_SIZE].u.i;                                             \
    double alpha = c->attr[CT__LRN_ALPHA].u.f, beta = c->attr[CT__LRN_BETA].u.f;          \
    double bias = c->attr[CT__LRN_BIAS].u.f;                                              \
    for (int64_t b = 0; b < n; b++) {                                                     \
      for (int64_t i = 0; i < inner; i++) {                                               \
        const T *xs = x + b * ch * inner + i;                                             \
        for (int64_t k = 0; k < ch; k++) {                                                \
          double sc = lrn_scale_##T(xs, inner, ch, k, size, alpha, bias);                 \
          o[(b * ch + k) * inner + i] = (T)((double)xs[k * inner] / pow(sc, beta));       \
        }                                                                                 \
      }                                                                                   \
    }                                                                                     \
    return CT_OK;                                                                         \
  }                                                                                       \
  static ct_status lrn_grad_##SFX(const ct_kernel_ctx *c) {                               \
    int64_t n, ch, inner;                                                                 \
    ct_status s = ct__nchw_view(c, 0, &n, &ch, &inner);                                   \
    T *dx = s == CT_OK ? ct__k_out_data(c, 0, 0, c->dtype) : NULL;                        \
    if (dx == NULL) return s != CT_OK ? s : ct_last_status();                             \
    const T *x = ct__k_in_data(ct_kernel_in(c, 0, 0));                                    \
    const T *dy = ct__k_in_data(ct_kernel_in(c, 1, 0));                                   \
    int64_t size = c->attr[CT__LRN_SIZE].u.i;                                             \
    double alpha = c->attr[CT__LRN_ALPHA].u.f, beta = c->attr[CT__LRN_BETA].u.f;          \
    double bias = c->attr[CT__LRN_BIAS].u.f, coef = 2 * beta * alpha / (double)size;      \
    int64_t before = (size - 1) / 2, after = size - 1 - before;                           \
    for (int64_t b = 0; b < n; b++) {                                                     \
      for (int64_t i = 0; i < inner; i++) {                                               \
        const T *xs = x + b * ch * inner + i, *ds = dy + b * ch * inner + i;              \
        for (int64_t j = 0; j < ch; j++) {                                                \
          double sj = lrn_scale_##T(xs, inner, ch, j, size, alpha, bias), acc = 0;        \
          int64_t c0 = j - after < 0 ? 0 : j - after;                                     \
          int64_t c1 = j + before + 1 > ch ? ch : j + before + 1;                         \
          for (int64_t k = c0; k < c1; k++) { /* the channels whose window holds j */     \
            double sk = lrn_scale_##T(xs, inner, ch, k, size, alpha, bias);               \
            acc += (double)ds[k * inner] * (double)xs[k * inner] * pow(sk, -beta - 1);    \
          }                                                                               \
          dx[(b * ch + j) * inner + i] =                                                  \
              (T)((double)ds[j * inner] * pow(sj, -beta) - coef * (double)xs[j * inner] * acc); \
        }                                                                                 \
      }                                                                                   \
    }                                                                                     \
    return CT_OK;                                                                         \
  }                                                                                       \
  /* The mean and 1 / sqrt(var + eps) of the m elements at p. */                          \
  static void stats_##SFX(const T *p, int64_t m, double eps, double *mean, double *inv) {  \
    double sum = 0, sq = 0;                                                               \
    for (int64_t i = 0; i < m; i++) sum += (double)p[i];                                  \
    *mean = m > 0 ? sum / (double)m : 0;                                                  \
    for (int64_t i = 0; i < m; i++) sq += ((double)p[i] - *mean) * ((double)p[i] - *mean); \
    *inv = 1 / sqrt((m > 0 ? sq / (double)m : 0) + eps);                                 \
  }                                                                                       \
  static ct_status instance_norm_##SFX(const ct_kernel_ctx *c) {                          \
    int64_t n, ch, m;                                                                     \
    ct_status s = ct__nchw_view(c, CT__INN_X, &n, &ch, &m);                               \
    T *y = s == CT_OK ? ct__k_out_data(c, CT__OUT, 0, c->dtype) : NULL;                   \
    if (y == NULL) return s != CT_OK ? s : ct_last_status();                             \
    const T *x = ct__k_in_data(ct_kernel_in(c, CT__INN_X, 0));                            \
    const T *sc = ct__k_in_data(ct_kernel_in(c, CT__INN_SCALE, 0));                       \
    const T *bi = ct__k_in_data(ct_kernel_in(c, CT__INN_BIAS, 0));                        \
    double eps = c->attr[CT__INN_EPSILON].u.f;                                            \
    for (int64_t g = 0; g < n * ch; g++) {                                                \
      const T *p = x + g * m;                                                             \
      double mean, inv, a = (double)sc[g % ch], bb = (double)bi[g % ch];                  \
      stats_##SFX(p, m, eps, &mean, &inv);                                                \
      for (int64_t i = 0; i < m; i++) y[g * m + i] = (T)(a * ((double)p[i] - mean) * inv + bb); \
    }                                                                                     \
    return CT_OK;                                                                         \
  }                                                                                       \
  static ct_status instance_norm_grad_##SFX(const ct_kernel_ctx *c) {                     \
    int64_t n, ch, m;                                                                     \
    ct_status s = ct__nchw_view(c, CT__INNG_X, &n, &ch, &m);                              \
    if (s != CT_OK) return s;                                                             \
    T *out[3] = {NULL, NULL, NULL};                                                       \
    for (size_t k = 0; k < 3; k++) {                                                      \
      if (ct_kernel_out_count(c, k) == 0) continue;                                       \
      if ((out[k] = ct__k_out_data(c, k, 0, c->dtype)) == NULL) return ct_last_status();  \
    }                                                                                     \
    const T *x = ct__k_in_data(ct_kernel_in(c, CT__INNG_X, 0));                           \
    const T *sc = ct__k_in_data(ct_kernel_in(c, CT__INNG_SCALE, 0));                      \
    const T *dy = ct__k_in_data(ct_kernel_in(c, CT__INNG_DY, 0));                         \
    double eps = c->attr[CT__INN_EPSILON].u.f;                                            \
    for (int64_t k = 0; k < ch; k++) {                                                    \
      double dscale = 0, dbias = 0;                                                       \
      for (int64_t b = 0; b < n; b++) {                                                   \
        int64_t g = b * ch + k;                                                           \
        const T *p = x + g * m, *d = dy + g * m;                                          \
        double mean, inv, sd = 0, sdx = 0, a = (double)sc[k];                             \
        stats_##SFX(p, m, eps, &mean, &inv);                                              \
        for (int64_t i = 0; i < m; i++) {                                                 \
          double xh = ((double)p[i] - mean) * inv;                                        \
          sd += (double)d[i];                                                             \
          sdx += (double)d[i] * xh;                                                       \
        }                                                                                 \
        dscale += sdx;                                                                    \
        dbias += sd;                                                                      \
        if (out[0] == NULL || m == 0) continue;                                           \
        double md = sd / (double)m, mdx = sdx / (double)m;                                \
        for (int64_t i = 0; i < m; i++) {                                                 \
          double xh = ((double)p[i] - mean) * inv;                                        \
          out[0][g * m + i] = (T)(a * inv * ((double)d[i] - md - xh * mdx));              \
        }                                                                                 \
      }                                                                                   \
      if (out[1] != NULL) out[1][k] = (T)dscale;                                          \
      if (out[2] != NULL) out[2][k] = (T)dbias;                                           \
    }                                                                                     \
    return CT_OK;                                                                         \
  }

NORM_KERNELS(f32, float)
NORM_KERNELS(f64, double)

static const ct__kernel_set kernels[] = {
    {"lrn", CT__KERNELS_F32_F64(lrn)},
    {"lrn_grad", CT__KERNELS_F32_F64(lrn_grad)},
    {"instance_norm", CT__KERNELS_F32_F64(instance_norm)},
    {"instance_norm_grad", CT__KERNELS_F32_F64(instance_norm_grad)},
};

const ct__kernel_table ct__cpu_pool_nd_norm = CT__TABLE(kernels);
