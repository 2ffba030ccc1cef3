/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/quant_int.c: the CPU kernels of matmul_integer, qlinear_matmul, conv_integer,
 * qlinear_conv and dynamic_quantize_linear (ops/defs/quant_int.c says what they compute) and
 * their table.
 *
 * The products and convolutions (im2col's columns) run on the float64 GEMM (ops/cpu/gemm.h):
 * X - XZeroPoint and Y - YZeroPoint are whole numbers of at most 255 in magnitude, so every
 * product and every partial sum of fewer than 2^37 terms is a whole number a double holds
 * exactly: the sums are exact, whatever their order, the split across threads and the kernel
 * the CPU runs, and then taken to int32 as the reference's int32 arithmetic would (wrapping
 * past its range). */
#include <math.h>

#include "common/alloc.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/parallel.h"
#include "ops/defs/quant.h"

/* Element i of an int8 or uint8 tensor. */
static int32_t byte_at(const void *d, ct_dtype t, int64_t i) {
  return t == CT_INT8 ? ((const int8_t *)d)[i] : ((const uint8_t *)d)[i];
}

/* Input (slot) element i as a whole number (0 when the slot is unwired). */
static int32_t zero_at(const ct_kernel_ctx *c, size_t slot, int64_t i) {
  if (ct_kernel_in_count(c, slot) == 0) return 0;
  const ct_tensor *t = ct_kernel_in(c, slot, 0);
  return byte_at(ct__k_in_data(t), t->dtype, i);
}

/* v (a whole number held exactly) as the reference's int32 arithmetic gives it: wrapped. */
static int32_t wrap32(double v) { return (int32_t)(uint32_t)(uint64_t)(int64_t)v; }

/* C = (X - XZeroPoint) (Y - YZeroPoint) of plan p into c_out (n_batch m n doubles, whole
 * numbers), with xd and yd (X's and Y's element counts) as the operands' doubles. */
static ct_status products(const ct_kernel_ctx *c, const ct__qmm_plan *p, double *xd, double *yd,
                          double *c_out) {
  const ct_tensor *x = ct_kernel_in(c, p->x, 0), *y = ct_kernel_in(c, p->y, 0);
  const void *xv = ct__k_in_data(x), *yv = ct__k_in_data(y);
  const int32_t xz = zero_at(c, p->xz, 0);
  for (int64_t i = 0; i < x->numel; i++) xd[i] = byte_at(xv, x->dtype, i) - xz;
  /* Y's column of element i: its last index (a rank-1 Y is one column) */
  const int64_t cols = y->dims.rank > 1 ? y->dims.d[y->dims.rank - 1] : 1;
  const ct_tensor *zt = ct_kernel_in_count(c, p->yz) > 0 ? ct_kernel_in(c, p->yz, 0) : NULL;
  const void *zv = zt != NULL ? ct__k_in_data(zt) : NULL;
  for (int64_t i = 0; i < y->numel; i++) {
    const int64_t j = p->yz_n > 1 ? i % cols : 0;
    yd[i] = byte_at(yv, y->dtype, i) - (zv != NULL ? byte_at(zv, zt->dtype, j) : 0);
  }
  const ct__mm_shape *s = &p->s;
  const ct_ddim xdm = x->dims, ydm = y->dims;
  const int64_t m = s->m, n = s->n, k = s->k;
  const int64_t lda = xdm.rank > 1 ? xdm.d[xdm.rank - 1] : k;
  const int64_t ldb = ydm.rank > 1 ? ydm.d[ydm.rank - 1] : 1;
  const int64_t x_mat = xdm.rank > 1 ? xdm.d[xdm.rank - 2] * lda : k;
  const int64_t y_mat = ydm.rank > 1 ? ydm.d[ydm.rank - 2] * ldb : k;
  int64_t idx[CT_MAX_RANK] = {0};
  for (int64_t b = 0; b < s->n_batch; b++) {
    int64_t ox = 0, oy = 0;
    for (int r = 0; r < s->batch_rank; r++) {
      ox += idx[r] * s->bx[r];
      oy += idx[r] * s->by[r];
    }
    ct_status st = CT__GEMM(ct__gemm_f64, false, false, m, n, k, 1, xd + ox * x_mat, lda,
                            yd + oy * y_mat, ldb, 0, c_out + b * m * n, n);
    if (st != CT_OK) return ct__gemm_fail(c);
    for (int r = s->batch_rank - 1; r >= 0 && ++idx[r] == s->batch[r]; r--) idx[r] = 0;
  }
  return CT_OK;
}

/* The run of a product: its plan, its work buffer (the operands' doubles, then C's), C. */
static ct_status product_run(const ct_kernel_ctx *c, bool qlinear, ct__qmm_plan *p, void **out,
                             double **cd, void **work) {
  *cd = NULL;
  *work = NULL;
  ct_status s = ct__qmm_plan_make(c, qlinear, p);
  if (s != CT_OK) return s;
  *out = ct__k_out_data(c, 0, 0, p->out);
  if (*out == NULL) return ct_last_status();
  const int64_t nx = ct_kernel_in(c, p->x, 0)->numel, ny = ct_kernel_in(c, p->y, 0)->numel;
  const int64_t nc = p->s.n_batch * p->s.m * p->s.n;
  if (nc == 0) return CT_OK;
  int64_t total;
  const bool fits = !__builtin_add_overflow(nx + ny, nc, &total) &&
                    (uint64_t)total <= SIZE_MAX / sizeof(double);
  *work = fits ? ct__work_take((size_t)total * sizeof(double)) : NULL;
  if (*work == NULL) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY,
                          "out of host memory for the float64 copies of X '%s' (%lld elements) "
                          "and Y '%s' (%lld) and their product (free memory, or split the "
                          "product)",
                          ct_kernel_in_name(c, p->x, 0), (long long)nx,
                          ct_kernel_in_name(c, p->y, 0), (long long)ny);
  }
  double *xd = *work, *yd = xd + nx;
  *cd = yd + ny;
  s = products(c, p, xd, yd, *cd);
  if (s != CT_OK) ct__work_free(*work);
  return s;
}

static ct_status matmul_integer_k(const ct_kernel_ctx *c) {
  ct__qmm_plan p;
  void *out, *work;
  double *cd;
  ct_status s = product_run(c, false, &p, &out, &cd, &work);
  if (s != CT_OK || work == NULL) return s;
  int32_t *o = out;
  for (int64_t i = 0, n = p.s.n_batch * p.s.m * p.s.n; i < n; i++) o[i] = wrap32(cd[i]);
  ct__work_free(work);
  return CT_OK;
}

/* v saturated to [lo, hi]; NaN gives lo (as quantize_linear's does). */
static int32_t saturate(double v, int32_t lo, int32_t hi) {
  if (!(v >= lo)) return lo;
  return v > hi ? hi : (int32_t)v;
}

/* The sums c[0, all) into out (int8 or uint8, dtype t) as ONNX's reference requantizes them:
 * the sum taken to int32, times the float32 ratio xs s[k] / os in float64 (k = (i / inner) %
 * count: s one scale per channel, else s[0]), plus the zero point oz, rounded half to even and
 * saturated. */
static void requantize(const double *c, int64_t all, int64_t inner, int64_t count, float xs,
                       const float *s, bool per_channel, float os, double oz, ct_dtype t,
                       void *out) {
  const int32_t lo = t == CT_INT8 ? -128 : 0, hi = t == CT_INT8 ? 127 : 255;
  for (int64_t i = 0; i < all; i++) {
    const float ratio = xs * s[per_channel ? (i / inner) % count : 0] / os;
    const int32_t v = saturate(rint((double)wrap32(c[i]) * (double)ratio + oz), lo, hi);
    if (t == CT_INT8) ((int8_t *)out)[i] = (int8_t)v;
    else ((uint8_t *)out)[i] = (uint8_t)v;
  }
}

static ct_status qlinear_matmul_k(const ct_kernel_ctx *c) {
  ct__qmm_plan p;
  void *out, *work;
  double *cd;
  ct_status s = product_run(c, true, &p, &out, &cd, &work);
  if (s != CT_OK || work == NULL) return s;
  const float xs = *(const float *)ct__k_in_data(ct_kernel_in(c, CT__QLM_XSCALE, 0));
  const float *ys = ct__k_in_data(ct_kernel_in(c, CT__QLM_YSCALE, 0));
  const float os = *(const float *)ct__k_in_data(ct_kernel_in(c, CT__QLM_OSCALE, 0));
  const double oz = zero_at(c, CT__QLM_OZERO, 0);
  requantize(cd, p.s.n_batch * p.s.m * p.s.n, 1, p.s.n, xs, ys, p.ys_n > 1, os, oz, p.out, out);
  ct__work_free(work);
  return CT_OK;
}

/* ---- conv_integer, qlinear_conv ------------------------------------------------------------ */

/* im2col of one image's group (its first channel at x, cg channels) into col, k = cg kh kw rows
 * of OH OW: each tap's input value, 0 on the padding. */
static void im2col_d(const ct__conv_geom *g, int64_t cg, const double *x, double *col) {
  const int64_t ohw = g->oh * g->ow;
  for (int64_t ch = 0; ch < cg; ch++) {
    for (int64_t ky = 0; ky < g->kh; ky++) {
      for (int64_t kx = 0; kx < g->kw; kx++) {
        double *row = col + ((ch * g->kh + ky) * g->kw + kx) * ohw;
        for (int64_t oy = 0; oy < g->oh; oy++) {
          const int64_t iy = oy * g->sh - g->pt + ky * g->dh;
          for (int64_t ox = 0; ox < g->ow; ox++) {
            const int64_t ix = ox * g->sw - g->pl + kx * g->dw;
            const bool in = iy >= 0 && iy < g->h && ix >= 0 && ix < g->w;
            row[oy * g->ow + ox] = in ? x[(ch * g->h + iy) * g->w + ix] : 0;
          }
        }
      }
    }
  }
}

/* The sums of plan p, Bias added (qlinear_conv's, when wired: conv_integer has no such slot), as
 * whole numbers into od (N M OH OW doubles); work holds the operands' doubles and im2col's
 * columns. */
static ct_status conv_sums(const ct_kernel_ctx *c, const ct__qconv_plan *p, bool qlinear,
                           double *work, double *od) {
  const ct__conv_geom *g = &p->g;
  const ct_tensor *x = ct_kernel_in(c, CT__QC_INPUT, 0), *f = ct_kernel_in(c, CT__QC_FILTER, 0);
  const void *xv = ct__k_in_data(x), *fv = ct__k_in_data(f);
  double *xd = work, *fd = xd + x->numel, *col = fd + f->numel;
  const int32_t xz = zero_at(c, CT__QC_IZERO, 0);
  for (int64_t i = 0; i < x->numel; i++) xd[i] = byte_at(xv, x->dtype, i) - xz;
  const int64_t per = f->numel / (g->m > 0 ? g->m : 1); /* a filter's elements */
  for (int64_t m = 0; m < g->m; m++) {
    const int32_t fz = zero_at(c, CT__QC_FZERO, p->fz_n > 1 ? m : 0);
    for (int64_t i = m * per; i < (m + 1) * per; i++) fd[i] = byte_at(fv, f->dtype, i) - fz;
  }
  const int64_t cg = g->c / g->groups, mg = g->m / g->groups, ohw = g->oh * g->ow;
  const bool plain = g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 &&
                     g->pb == 0 && g->pl == 0 && g->pr == 0; /* the image is its own col */
  for (int64_t n = 0; n < g->n; n++) {
    for (int64_t gi = 0; gi < g->groups; gi++) {
      const double *xg = xd + (n * g->c + gi * cg) * g->h * g->w;
      if (!plain) im2col_d(g, cg, xg, col);
      ct_status st = CT__GEMM(ct__gemm_f64, false, false, mg, ohw, per, 1, fd + gi * mg * per,
                              per, plain ? xg : col, ohw, 0, od + (n * g->m + gi * mg) * ohw,
                              ohw);
      if (st != CT_OK) return ct__gemm_fail(c);
    }
  }
  if (qlinear && ct_kernel_in_count(c, CT__QC_BIAS) > 0) {
    const int32_t *b = ct__k_in_data(ct_kernel_in(c, CT__QC_BIAS, 0));
    for (int64_t i = 0, all = g->n * g->m * ohw; i < all; i++) od[i] += b[(i / ohw) % g->m];
  }
  return CT_OK;
}

/* The run of a convolution: its plan, Output, and its sums in *od (in *work, to free). */
static ct_status conv_run(const ct_kernel_ctx *c, bool qlinear, ct__qconv_plan *p, void **out,
                          double **od, void **work) {
  *od = NULL;
  *work = NULL;
  ct_status s = ct__qconv_plan_make(c, qlinear, p);
  if (s != CT_OK) return s;
  *out = ct__k_out_data(c, 0, 0, p->out);
  if (*out == NULL) return ct_last_status();
  const ct__conv_geom *g = &p->g;
  const int64_t no = g->n * g->m * g->oh * g->ow;
  if (no == 0) return CT_OK;
  const int64_t nx = ct_kernel_in(c, CT__QC_INPUT, 0)->numel;
  const int64_t nf = ct_kernel_in(c, CT__QC_FILTER, 0)->numel;
  int64_t ncol, total;
  const bool fits = !__builtin_mul_overflow(g->c / g->groups * g->kh * g->kw, g->oh * g->ow,
                                            &ncol) &&
                    !__builtin_add_overflow(nx + nf + no, ncol, &total) &&
                    (uint64_t)total <= SIZE_MAX / sizeof(double);
  *work = fits ? ct__work_take((size_t)total * sizeof(double)) : NULL;
  if (*work == NULL) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY,
                          "out of host memory for the float64 copies of Input '%s' (%lld "
                          "elements) and Filter '%s', their columns and sums (free memory, or "
                          "run fewer images at once)",
                          ct_kernel_in_name(c, CT__QC_INPUT, 0), (long long)nx,
                          ct_kernel_in_name(c, CT__QC_FILTER, 0));
  }
  *od = (double *)*work + nx + nf + ncol;
  s = conv_sums(c, p, qlinear, *work, *od);
  if (s != CT_OK) ct__work_free(*work);
  return s;
}

static ct_status conv_integer_k(const ct_kernel_ctx *c) {
  ct__qconv_plan p;
  void *out, *work;
  double *od;
  ct_status s = conv_run(c, false, &p, &out, &od, &work);
  if (s != CT_OK || work == NULL) return s;
  int32_t *o = out;
  for (int64_t i = 0, n = p.g.n * p.g.m * p.g.oh * p.g.ow; i < n; i++) o[i] = wrap32(od[i]);
  ct__work_free(work);
  return CT_OK;
}

static ct_status qlinear_conv_k(const ct_kernel_ctx *c) {
  ct__qconv_plan p;
  void *out, *work;
  double *od;
  ct_status s = conv_run(c, true, &p, &out, &od, &work);
  if (s != CT_OK || work == NULL) return s;
  const float xs = *(const float *)ct__k_in_data(ct_kernel_in(c, CT__QC_ISCALE, 0));
  const float *fs = ct__k_in_data(ct_kernel_in(c, CT__QC_FSCALE, 0));
  const float os = *(const float *)ct__k_in_data(ct_kernel_in(c, CT__QC_OSCALE, 0));
  const double oz = zero_at(c, CT__QC_OZERO, 0);
  const int64_t ohw = p.g.oh * p.g.ow, all = p.g.n * p.g.m * ohw;
  requantize(od, all, ohw, p.g.m, xs, fs, p.fs_n > 1, os, oz, p.out, out);
  ct__work_free(work);
  return CT_OK;
}

/* ---- dynamic_quantize_linear ----------------------------------------------------------------- */

typedef struct dql_job {
  const float *x;
  uint8_t *y;
  float scale, zero;
} dql_job;

static void dql_range(void *arg, int64_t b, int64_t e) {
  const dql_job *j = arg;
  for (int64_t i = b; i < e; i++) {
    const float q = rintf(j->x[i] / j->scale) + j->zero; /* whole numbers: exact */
    j->y[i] = (uint8_t)saturate(q, 0, 255);
  }
}

static ct_status dynamic_quantize_linear_k(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, 0, 0);
  const float *x = ct__k_in_data(xt);
  uint8_t *y = ct__k_out_data(c, CT__DQL_Y, 0, CT_UINT8);
  float *scale = ct__k_out_data(c, CT__DQL_SCALE, 0, CT_FLOAT32);
  uint8_t *zero = ct__k_out_data(c, CT__DQL_ZERO, 0, CT_UINT8);
  if (y == NULL || scale == NULL || zero == NULL) return ct_last_status();
  /* min(0, min X) and max(0, max X), NaN carried (numpy's min and max) */
  float lo = 0, hi = 0;
  bool nan = false;
  for (int64_t i = 0; i < xt->numel; i++) {
    const float v = x[i];
    nan |= v != v;
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  if (nan) lo = hi = NAN;
  const float s = hi == lo ? 1.0f : (hi - lo) / 255.0f; /* onnxruntime's 1 for a range of 0 */
  const float initial = 0.0f - lo / s;
  /* Python's min(255, v) then max(0, v): a NaN v gives 255 */
  float z = initial < 255.0f ? initial : 255.0f;
  z = rintf(z > 0.0f ? z : 0.0f);
  *scale = s;
  *zero = (uint8_t)z;
  dql_job j = {x, y, s, z};
  ct__parallel_for(xt->numel, CT__GRAIN_MEM, dql_range, &j);
  return CT_OK;
}

static const ct__kernel_set sets[] = {
    {"matmul_integer", CT__KERNELS([CT_INT8] = matmul_integer_k, [CT_UINT8] = matmul_integer_k)},
    {"qlinear_matmul", CT__KERNELS([CT_INT8] = qlinear_matmul_k, [CT_UINT8] = qlinear_matmul_k)},
    {"conv_integer", CT__KERNELS([CT_INT8] = conv_integer_k, [CT_UINT8] = conv_integer_k)},
    {"qlinear_conv", CT__KERNELS([CT_INT8] = qlinear_conv_k, [CT_UINT8] = qlinear_conv_k)},
    {"dynamic_quantize_linear", CT__KERNELS([CT_FLOAT32] = dynamic_quantize_linear_k)},
};

const ct__kernel_table ct__cpu_quant_int = CT__TABLE(sets);
