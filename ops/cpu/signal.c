/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/signal.c: the CPU kernels of dft and stft (ops/defs/signal.h says what they compute)
 * and their table. Each transform gathers its samples into float64 pairs, then sums each bin
 * directly over them in order with a table of twiddles: len multiply-adds a bin, so len^2 a
 * transform (an FFT would take len log len; the direct sum is exact to a float64 rounding per
 * term whatever len, prime lengths included). Transforms are independent: they split across the
 * threads, which cannot change a bit. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "common/alloc.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/parallel.h"
#include "ops/defs/signal.h"

/* cos and sin of 2 pi j / len for j < len into tw (pairs), the quarter turns exact (a term of
 * 6e-17 where 0 belongs left noise in bins that are 0). */
static void twiddles(int64_t len, double *tw) {
  static const double qc[4] = {1, 0, -1, 0}, qs[4] = {0, 1, 0, -1};
  for (int64_t j = 0; j < len; j++) {
    const bool quarter = (4 * j) % len == 0;
    const double a = 6.28318530717958647692 * (double)j / (double)len; /* 2 pi j / len */
    tw[2 * j] = quarter ? qc[4 * j / len] : cos(a);
    tw[2 * j + 1] = quarter ? qs[4 * j / len] : sin(a);
  }
}

/* Bins [0, bins) of the transform of length len of the m samples x (pairs; cut or padded with
 * zeros to len) into y (pairs): sign -1 forward; +1 inverse, then divided by len. */
static void dft_bins(const double *tw, int64_t len, bool inverse, const double *x, int64_t m,
                     int64_t bins, double *y) {
  const int64_t n_max = m < len ? m : len;
  const double sg = inverse ? 1.0 : -1.0;
  for (int64_t k = 0; k < bins; k++) {
    double re = 0, im = 0;
    for (int64_t n = 0, j = 0; n < n_max; n++) {
      const double c = tw[2 * j], s = sg * tw[2 * j + 1], xr = x[2 * n], xi = x[2 * n + 1];
      re += xr * c - xi * s;
      im += xi * c + xr * s;
      j += k; /* (k n) mod len: k < len, so one subtraction keeps it below len */
      if (j >= len) j -= len;
    }
    y[2 * k] = inverse ? re / (double)len : re;
    y[2 * k + 1] = inverse ? im / (double)len : im;
  }
}

/* Value i of a float32 or float64 array. */
static double at(const void *p, bool f64, int64_t i) {
  return f64 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

static void put_value(void *p, bool f64, int64_t i, double v) {
  if (f64) ((double *)p)[i] = v;
  else ((float *)p)[i] = (float)v;
}

/* A run's transforms [0, count) split across the threads, each piece with its scratch of
 * `scratch` doubles (a failure to get it noted, reported after). */
typedef struct sig_job {
  const ct__dft_plan *dp;
  const ct__stft_plan *sp;
  const double *tw;
  const void *x, *w;
  void *y;
  bool f64;
  int64_t scratch;
  atomic_bool failed;
} sig_job;

/* dft's transform t (outer o, inner i): its samples gathered (irfft: the half spectrum made
 * conjugate-symmetric to len), its bins computed and stored. */
static void dft_one(const sig_job *j, int64_t t, double *xs, double *ys) {
  const ct__dft_plan *p = j->dp;
  const int64_t o = t / p->inner, i = t % p->inner, st = p->inner * p->comps;
  const int64_t xo = (o * p->n * p->inner + i) * p->comps;
  int64_t m = p->n;
  if (p->real_out) {
    const int64_t len = p->len;
    for (int64_t k = 0; k <= len / 2; k++) {
      const bool in = k < p->n;
      xs[2 * k] = in ? at(j->x, j->f64, xo + k * st) : 0;
      xs[2 * k + 1] = in && p->comps == 2 ? at(j->x, j->f64, xo + k * st + 1) : 0;
      if (k > 0 && len - k > len / 2) {
        xs[2 * (len - k)] = xs[2 * k];
        xs[2 * (len - k) + 1] = -xs[2 * k + 1];
      }
    }
    m = len;
  } else {
    for (int64_t n = 0; n < p->n; n++) {
      xs[2 * n] = at(j->x, j->f64, xo + n * st);
      xs[2 * n + 1] = p->comps == 2 ? at(j->x, j->f64, xo + n * st + 1) : 0;
    }
  }
  dft_bins(j->tw, p->len, p->inverse, xs, m, p->bins, ys);
  const int64_t yc = p->real_out ? 1 : 2, yo = (o * p->bins * p->inner + i) * yc;
  for (int64_t k = 0; k < p->bins; k++) {
    put_value(j->y, j->f64, yo + k * p->inner * yc, ys[2 * k]);
    if (yc == 2) put_value(j->y, j->f64, yo + k * p->inner * 2 + 1, ys[2 * k + 1]);
  }
}

/* stft's frame t (batch b, frame f): its win samples from f step (zeros past the end) times the
 * window, transformed at len. */
static void stft_one(const sig_job *j, int64_t t, double *xs, double *ys) {
  const ct__stft_plan *p = j->sp;
  const int64_t b = t / (p->frames > 0 ? p->frames : 1), f = t % (p->frames > 0 ? p->frames : 1);
  for (int64_t n = 0; n < p->win; n++) {
    const int64_t s = f * p->step + n;
    const double w = j->w != NULL ? at(j->w, j->f64, n) : 1.0;
    const int64_t xi = (b * p->length + s) * p->comps;
    xs[2 * n] = s < p->length ? at(j->x, j->f64, xi) * w : 0;
    xs[2 * n + 1] = s < p->length && p->comps == 2 ? at(j->x, j->f64, xi + 1) * w : 0;
  }
  dft_bins(j->tw, p->len, false, xs, p->win, p->bins, ys);
  const int64_t yo = t * p->bins * 2;
  for (int64_t k = 0; k < 2 * p->bins; k++) put_value(j->y, j->f64, yo + k, ys[k]);
}

static void sig_range(void *arg, int64_t b, int64_t e) {
  sig_job *j = arg;
  double *xs = ct__malloc((size_t)j->scratch * sizeof *xs);
  if (xs == NULL) {
    atomic_store(&j->failed, true);
    return;
  }
  const int64_t in_pairs = j->dp != NULL ? (j->dp->real_out ? j->dp->len : j->dp->n) : j->sp->win;
  double *ys = xs + 2 * in_pairs;
  for (int64_t t = b; t < e; t++) {
    if (j->dp != NULL) dft_one(j, t, xs, ys);
    else stft_one(j, t, xs, ys);
  }
  free(xs);
}

/* Runs count transforms of length len (in_pairs samples in, bins out) over the threads. */
static ct_status sig_run(const ct_kernel_ctx *c, sig_job *j, int64_t count, int64_t len,
                         int64_t in_pairs, int64_t bins) {
  if (count == 0 || bins == 0) return CT_OK;
  double *tw = ct__malloc((size_t)(2 * len) * sizeof *tw);
  if (tw == NULL) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY, "out of host memory for the %lld twiddles "
                          "of a transform of length %lld", (long long)len, (long long)len);
  }
  twiddles(len, tw);
  j->tw = tw;
  j->scratch = 2 * (in_pairs + bins);
  atomic_init(&j->failed, false);
  const int64_t work = len * bins;
  ct__parallel_for(count, work >= (1 << 16) ? 1 : (1 << 16) / work + 1, sig_range, j);
  free(tw);
  if (atomic_load(&j->failed)) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY, "out of host memory for a transform's %lld "
                          "samples", (long long)in_pairs);
  }
  return CT_OK;
}

static ct_status dft_k(const ct_kernel_ctx *c) {
  ct__dft_plan p;
  ct_status s = ct__dft_plan_make(c, &p);
  if (s != CT_OK) return s;
  void *y = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (y == NULL) return ct_last_status();
  sig_job j = {.dp = &p, .x = ct__k_in_data(ct_kernel_in(c, CT__DFT_X, 0)), .y = y,
               .f64 = c->dtype == CT_FLOAT64};
  return sig_run(c, &j, p.outer * p.inner, p.len, p.real_out ? p.len : p.n, p.bins);
}

static ct_status stft_k(const ct_kernel_ctx *c) {
  ct__stft_plan p;
  ct_status s = ct__stft_plan_make(c, &p);
  if (s != CT_OK) return s;
  void *y = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (y == NULL) return ct_last_status();
  const bool w = ct_kernel_in_count(c, CT__STFT_WINDOW) > 0;
  sig_job j = {.sp = &p, .x = ct__k_in_data(ct_kernel_in(c, CT__STFT_SIGNAL, 0)),
               .w = w ? ct__k_in_data(ct_kernel_in(c, CT__STFT_WINDOW, 0)) : NULL, .y = y,
               .f64 = c->dtype == CT_FLOAT64};
  return sig_run(c, &j, p.batch * p.frames, p.len, p.win, p.bins);
}

static const ct__kernel_set sets[] = {
    {"dft", CT__KERNELS([CT_FLOAT32] = dft_k, [CT_FLOAT64] = dft_k)},
    {"stft", CT__KERNELS([CT_FLOAT32] = stft_k, [CT_FLOAT64] = stft_k)},
};

const ct__kernel_table ct__cpu_signal = CT__TABLE(sets);
