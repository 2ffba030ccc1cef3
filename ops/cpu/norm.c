/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/norm.c: the CPU kernels of batch_norm, layer_norm and their gradients (ops/defs/
 * norm.c, norm_grad.c), float32 and float64.
 *
 * Every statistic and every sum is taken in double in element order (a channel: its elements
 * batch by batch; a row: left to right; Scale@GRAD and Bias@GRAD of layer_norm: row by row), and
 * each output element is computed in double and rounded once, so float32 results are as close
 * as float32 allows, and a backend that follows the same order matches them bit for bit.
 *
 * The kernels split on corten's pool (ops/cpu/layer_job.h) over channels (batch_norm and its
 * gradient: a piece takes a channel's statistics and its elements whole), rows (layer_norm,
 * layer_norm_grad's X@GRAD) and columns (layer_norm_grad's Scale@GRAD and Bias@GRAD, each column
 * summed over the rows in row order), so no sum depends on the thread count. */
#include "ops/cpu/layer_job.h"
#include "ops/cpu/vmath.h"

/* Runs BODY with `at` set to each element of channel ch of the plan's [outer, c, inner] view, in
 * memory order. */
#define FOR_CHANNEL(p, ch, at, BODY)                     \
  for (int64_t o_ = 0; o_ < (p).outer; o_++) {           \
    for (int64_t i_ = 0; i_ < (p).inner; i_++) {         \
      int64_t at = (o_ * (p).c + (ch)) * (p).inner + i_; \
      BODY                                               \
    }                                                    \
  }

/* The fewest channels (elements per channel n) or rows worth a piece. */
static int64_t grain_of(int64_t n) { return CT__GRAIN_MEM / (n > 0 ? n : 1); }

#define BN_KERNEL(NAME, T)                                                                \
  static void NAME##_range(void *arg, int64_t b, int64_t e) {                             \
    const ct__layer_job *j = arg;                                                         \
    const ct_kernel_ctx *c = j->c;                                                        \
    T *y = j->out[CT__BN_Y], *mo = j->out[CT__BN_MEAN_OUT], *vo = j->out[CT__BN_VAR_OUT]; \
    T *smo = j->out[CT__BN_SAVED_MEAN], *svo = j->out[CT__BN_SAVED_VAR];                  \
    const T *x = j->in[CT__BN_X], *sc = j->in[CT__BN_SCALE], *bi = j->in[CT__BN_BIAS];    \
    const T *rm = j->in[CT__BN_MEAN], *rv = j->in[CT__BN_VARIANCE];                       \
    double mom = c->attr[CT__BN_MOMENTUM].u.f, eps = c->attr[CT__BN_EPSILON].u.f;         \
    bool global = c->attr[CT__BN_IS_TEST].u.b || c->attr[CT__BN_GLOBAL_STATS].u.b;        \
    double m = (double)(j->p.outer * j->p.inner);                                         \
    for (int64_t ch = b; ch < e; ch++) {                                                  \
      double mu = rm[ch], var = rv[ch];                                                   \
      if (!global) {                                                                      \
        double sum = 0, sq = 0;                                                           \
        FOR_CHANNEL(j->p, ch, at, sum += (double)x[at];)                                  \
        mu = sum / m;                                                                     \
        FOR_CHANNEL(j->p, ch, at, sq += ((double)x[at] - mu) * ((double)x[at] - mu);)     \
        var = sq / m;                                                                     \
        mo[ch] = (T)((double)rm[ch] * mom + mu * (1 - mom));                              \
        vo[ch] = (T)((double)rv[ch] * mom + var * (1 - mom));                             \
      } else {                                                                            \
        mo[ch] = rm[ch];                                                                  \
        vo[ch] = rv[ch];                                                                  \
      }                                                                                   \
      double inv = ct__inv_std(var, eps), g = sc[ch], bb = bi[ch];                        \
      smo[ch] = (T)mu;                                                                    \
      svo[ch] = (T)inv;                                                                   \
      FOR_CHANNEL(j->p, ch, at, y[at] = (T)(((double)x[at] - mu) * inv * g + bb);)        \
    }                                                                                     \
  }                                                                                       \
  static ct_status NAME(const ct_kernel_ctx *c) {                                         \
    return ct__layer_plan_run(c, ct__bn_plan, 'c', 5, 5, NULL, NAME##_range);             \
  }

BN_KERNEL(batch_norm_f32, float)
BN_KERNEL(batch_norm_f64, double)

#define BN_GRAD_KERNEL(NAME, T)                                                            \
  static void NAME##_range(void *arg, int64_t b, int64_t e) {                              \
    const ct__layer_job *j = arg;                                                          \
    T *dx = j->out[CT__NG_DX], *dsc = j->out[CT__NG_DSCALE], *dbi = j->out[CT__NG_DBIAS];  \
    const T *x = j->in[CT__BNG_X], *sc = j->in[CT__BNG_SCALE];                             \
    const T *sm = j->in[CT__BNG_SAVED_MEAN], *sv = j->in[CT__BNG_SAVED_VAR];               \
    const T *dy = j->in[CT__BNG_DY];                                                       \
    bool global = j->c->attr[CT__BN_IS_TEST].u.b || j->c->attr[CT__BN_GLOBAL_STATS].u.b;   \
    double m = (double)(j->p.outer * j->p.inner);                                          \
    for (int64_t ch = b; ch < e; ch++) {                                                   \
      double mu = sm[ch], inv = sv[ch], sdy = 0, sdyx = 0;                                 \
      FOR_CHANNEL(j->p, ch, at, {                                                          \
        sdy += (double)dy[at];                                                             \
        sdyx += (double)dy[at] * (((double)x[at] - mu) * inv);                             \
      })                                                                                   \
      if (dsc != NULL) dsc[ch] = (T)sdyx;                                                  \
      if (dbi != NULL) dbi[ch] = (T)sdy;                                                   \
      if (dx == NULL) continue;                                                            \
      double k = (double)sc[ch] * inv, mdy = global ? 0 : sdy / m;                         \
      double mdyx = global ? 0 : sdyx / m;                                                 \
      FOR_CHANNEL(j->p, ch, at, {                                                          \
        double xh = ((double)x[at] - mu) * inv;                                            \
        dx[at] = (T)(k * ((double)dy[at] - mdy - xh * mdyx));                              \
      })                                                                                   \
    }                                                                                      \
  }                                                                                        \
  static ct_status NAME(const ct_kernel_ctx *c) {                                          \
    return ct__layer_plan_run(c, ct__bn_plan, 'c', CT__BNG_DY + 1, 3, NULL, NAME##_range); \
  }

BN_GRAD_KERNEL(batch_norm_grad_f32, float)
BN_GRAD_KERNEL(batch_norm_grad_f64, double)

/* A row's sum of (x - mu)^p (p 1 with mu 0: the sum; p 2: the squares), in double over 8 lanes
 * (element k to lane k % 8) folded in a fixed order, then the tail: the compiler vectorises the
 * lanes, where one accumulator was a chain of dependent adds. The same for every thread count. */
#define LN_ROW_SUM(SUF, T)                                                                  \
  static inline double ln_sum_##SUF(const T *x, int64_t n, double mu, int p) {               \
    double l[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                 \
    int64_t k = 0;                                                                          \
    for (; k + 8 <= n; k += 8) {                                                            \
      for (int i = 0; i < 8; i++) {                                                         \
        double d = (double)x[k + i] - mu;                                                   \
        l[i] += p == 2 ? d * d : d;                                                         \
      }                                                                                     \
    }                                                                                       \
    double s = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));            \
    for (; k < n; k++) {                                                                    \
      double d = (double)x[k] - mu;                                                         \
      s += p == 2 ? d * d : d;                                                              \
    }                                                                                       \
    return s;                                                                               \
  }
LN_ROW_SUM(f32, float)
LN_ROW_SUM(f64, double)

/* Cloned per vector width: the same double operations lane for lane (the row sums' 8 lanes
 * are explicit), in wider vectors than the baseline's two doubles. */
#define LN_KERNEL(NAME, T)                                                                \
  CT__VM_CLONES static void NAME##_range(void *arg, int64_t b, int64_t e) {               \
    const ct__layer_job *j = arg;                                                         \
    T *y = j->out[CT__LN_Y], *mean = j->out[CT__LN_MEAN], *var = j->out[CT__LN_VARIANCE]; \
    const T *x = j->in[CT__LN_X], *sc = j->in[CT__LN_SCALE], *bi = j->in[CT__LN_BIAS];    \
    double eps = j->c->attr[CT__LN_EPSILON].u.f, n = (double)j->p.inner;                  \
    int64_t inner = j->p.inner;                                                           \
    for (int64_t r = b; r < e; r++) {                                                     \
      const T *xr = x + r * inner;                                                        \
      T *yr = y + r * inner;                                                              \
      double mu = LN_SUM(T)(xr, inner, 0.0, 1) / n;                                       \
      double v = LN_SUM(T)(xr, inner, mu, 2) / n, inv = ct__inv_std(v, eps);              \
      mean[r] = (T)mu;                                                                    \
      var[r] = (T)v;                                                                      \
      for (int64_t k = 0; k < inner; k++) {                                               \
        double xh = ((double)xr[k] - mu) * inv;                                           \
        yr[k] = (T)(xh * (sc ? (double)sc[k] : 1.0) + (bi ? (double)bi[k] : 0.0));        \
      }                                                                                   \
    }                                                                                     \
  }                                                                                       \
  static ct_status NAME(const ct_kernel_ctx *c) {                                         \
    return ct__layer_plan_run(c, ct__ln_plan, 'r', 3, 3, NULL, NAME##_range);             \
  }

#define LN_SUM(T) _Generic((T)0, float: ln_sum_f32, double: ln_sum_f64)
LN_KERNEL(layer_norm_f32, float)
LN_KERNEL(layer_norm_f64, double)

#define LN_COLS 128 /* the columns a Scale@GRAD / Bias@GRAD block sums at once (on the stack) */

/* X@GRAD by rows; then Scale@GRAD and Bias@GRAD by columns, in blocks of LN_COLS columns whose
 * double sums run over the rows in order. */
#define LN_GRAD_KERNEL(NAME, T)                                                         \
  static void NAME##_rows(void *arg, int64_t b, int64_t e) {                            \
    const ct__layer_job *j = arg;                                                       \
    T *dx = j->out[CT__NG_DX];                                                          \
    const T *x = j->in[CT__LNG_X], *sc = j->in[CT__LNG_SCALE], *dy = j->in[CT__LNG_DY]; \
    const T *mean = j->in[CT__LNG_MEAN], *var = j->in[CT__LNG_VARIANCE];                \
    double eps = j->c->attr[CT__LN_EPSILON].u.f, n = (double)j->p.inner;                \
    int64_t inner = j->p.inner;                                                         \
    for (int64_t r = b; r < e; r++) {                                                   \
      const T *xr = x + r * inner, *gr = dy + r * inner;                                \
      double mu = mean[r], inv = ct__inv_std(var[r], eps), sg = 0, sgx = 0;             \
      for (int64_t k = 0; k < inner; k++) {                                             \
        double xh = ((double)xr[k] - mu) * inv;                                         \
        double g = (double)gr[k] * (sc ? (double)sc[k] : 1.0);                          \
        sg += g;                                                                        \
        sgx += g * xh;                                                                  \
      }                                                                                 \
      T *dr = dx + r * inner;                                                           \
      for (int64_t k = 0; k < inner; k++) {                                             \
        double xh = ((double)xr[k] - mu) * inv;                                         \
        double g = (double)gr[k] * (sc ? (double)sc[k] : 1.0);                          \
        dr[k] = (T)(inv * (g - sg / n - xh * (sgx / n)));                               \
      }                                                                                 \
    }                                                                                   \
  }                                                                                     \
  static void NAME##_cols(void *arg, int64_t b, int64_t e) {                            \
    const ct__layer_job *j = arg;                                                       \
    T *dsc = j->out[CT__NG_DSCALE], *dbi = j->out[CT__NG_DBIAS];                        \
    const T *x = j->in[CT__LNG_X], *dy = j->in[CT__LNG_DY];                             \
    const T *mean = j->in[CT__LNG_MEAN], *var = j->in[CT__LNG_VARIANCE];                \
    double eps = j->c->attr[CT__LN_EPSILON].u.f, acc[2][LN_COLS];                       \
    int64_t inner = j->p.inner;                                                         \
    for (int64_t c0 = b; c0 < e; c0 += LN_COLS) {                                       \
      int64_t w = e - c0 < LN_COLS ? e - c0 : LN_COLS;                                  \
      for (int64_t k = 0; k < w; k++) acc[0][k] = acc[1][k] = 0;                        \
      for (int64_t r = 0; r < j->p.outer; r++) {                                        \
        const T *xr = x + r * inner + c0, *gr = dy + r * inner + c0;                    \
        double mu = mean[r], inv = ct__inv_std(var[r], eps);                            \
        for (int64_t k = 0; k < w; k++) {                                               \
          acc[0][k] += (double)gr[k] * (((double)xr[k] - mu) * inv);                    \
          acc[1][k] += (double)gr[k];                                                   \
        }                                                                               \
      }                                                                                 \
      for (int64_t k = 0; k < w; k++) {                                                 \
        if (dsc != NULL) dsc[c0 + k] = (T)acc[0][k];                                    \
        if (dbi != NULL) dbi[c0 + k] = (T)acc[1][k];                                    \
      }                                                                                 \
    }                                                                                   \
  }                                                                                     \
  static ct_status NAME(const ct_kernel_ctx *c) {                                       \
    ct__layer_job j;                                                                    \
    ct_status s = ct__ln_plan(c, &j.p);                                                 \
    if (s == CT_OK) s = ct__layer_open(c, &j, CT__LNG_DY + 1, 3, NULL);                 \
    if (s != CT_OK) return s;                                                           \
    if (j.out[CT__NG_DX] != NULL) {                                                     \
      ct__parallel_for(j.p.outer, grain_of(j.p.inner), NAME##_rows, &j);                \
    }                                                                                   \
    if (j.out[CT__NG_DSCALE] != NULL || j.out[CT__NG_DBIAS] != NULL) {                  \
      ct__parallel_for(j.p.inner, grain_of(j.p.outer), NAME##_cols, &j);                \
    }                                                                                   \
    return CT_OK;                                                                       \
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
