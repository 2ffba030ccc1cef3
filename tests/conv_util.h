/* SPDX-License-Identifier: Apache-2.0 */
/* The helpers of the conv2d and pool2d suites (test_ops_conv.c, test_grad_conv.c and the GPU
 * ones): a case's geometry, the ops built from it, and naive loops that give the expected
 * values straight from the definitions. */
#ifndef CORTEN_TESTS_CONV_UTIL_H
#define CORTEN_TESTS_CONV_UTIL_H

#include <math.h>

#include <corten/corten.h>

#include "harness.h"
#include "op_util.h"

/* A conv2d or pool2d case: X (or Input) [n, c, h, w]; conv: m filters kh x kw in groups; pool:
 * windows kh x kw. pads: 2 (height, width) or 4 (top, bottom, left, right) values. */
typedef struct conv_case {
  int64_t n, c, h, w, m, kh, kw;
  int64_t sh, sw, dh, dw, groups;
  int64_t pads[4];
  size_t n_pads;
  const char *pool; /* "max" or "avg" for pool2d; NULL for conv2d */
  bool exclusive, ceil_mode, global;
} conv_case;

/* Fills the fields a case left 0 with their defaults (strides, dilations, groups 1; 2 pads)
 * and returns it: CONV(.n = 1, ...) and POOL(...) write cases this way. */
static inline const conv_case *conv_fill(conv_case *k) {
  k->sh += k->sh == 0;
  k->sw += k->sw == 0;
  k->dh += k->dh == 0;
  k->dw += k->dw == 0;
  k->groups += k->groups == 0;
  if (k->n_pads == 0) k->n_pads = 2;
  return k;
}
#define CONV(...) conv_fill(&(conv_case){__VA_ARGS__})
#define POOL(...) conv_fill(&(conv_case){__VA_ARGS__})

/* Top, bottom, left, right. */
static inline void conv_pads(const conv_case *k, int64_t p[4]) {
  bool two = k->n_pads == 2;
  p[0] = k->pads[0];
  p[1] = two ? k->pads[0] : k->pads[1];
  p[2] = two ? k->pads[1] : k->pads[2];
  p[3] = two ? k->pads[1] : k->pads[3];
}

static inline ct_ddim conv_x_dims(const conv_case *k) { return CT_DIMS(k->n, k->c, k->h, k->w); }
static inline ct_ddim conv_f_dims(const conv_case *k) {
  return CT_DIMS(k->m, k->c / k->groups, k->kh, k->kw);
}

static inline int64_t conv_oh(const conv_case *k) {
  int64_t p[4];
  conv_pads(k, p);
  if (k->global) return 1;
  int64_t ek = k->pool ? k->kh : k->dh * (k->kh - 1) + 1;
  int64_t span = k->h + p[0] + p[1] - ek;
  return (span + (k->ceil_mode ? k->sh - 1 : 0)) / k->sh + 1;
}

static inline int64_t conv_ow(const conv_case *k) {
  int64_t p[4];
  conv_pads(k, p);
  if (k->global) return 1;
  int64_t ek = k->pool ? k->kw : k->dw * (k->kw - 1) + 1;
  int64_t span = k->w + p[2] + p[3] - ek;
  return (span + (k->ceil_mode ? k->sw - 1 : 0)) / k->sw + 1;
}

static inline ct_ddim conv_out_dims(const conv_case *k) {
  return CT_DIMS(k->n, k->pool ? k->c : k->m, conv_oh(k), conv_ow(k));
}

/* The op of a case: conv2d Input = in, Filter = f, Output = out; or pool2d X = in, Out = out. */
static inline ct_op *conv_case_op(const conv_case *k, const char *in, const char *f,
                                  const char *out) {
  int64_t st[2] = {k->sh, k->sw}, dl[2] = {k->dh, k->dw};
  ct_op *op;
  if (k->pool != NULL) {
    op = op_x("pool2d", in, out);
    int64_t ks[2] = {k->kh, k->kw};
    ck_assert_int_eq(ct_op_set_attr_string(op, "pooling_type", k->pool), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_ints(op, "ksize", ks, 2), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_bool(op, "exclusive", k->exclusive), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_bool(op, "ceil_mode", k->ceil_mode), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_bool(op, "global_pooling", k->global), CT_OK);
  } else {
    op = new_op("conv2d");
    ck_assert_int_eq(ct_op_set_input(op, "Input", in), CT_OK);
    ck_assert_int_eq(ct_op_set_input(op, "Filter", f), CT_OK);
    ck_assert_int_eq(ct_op_set_output(op, "Output", out), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_ints(op, "dilations", dl, 2), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_int(op, "groups", k->groups), CT_OK);
  }
  ck_assert_int_eq(ct_op_set_attr_ints(op, "strides", st, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "paddings", k->pads, k->n_pads), CT_OK);
  return op;
}

/* Deterministic float32 values in [-1, 1), not exact in sums: for the Winograd paths' error
 * bounds. */
static inline double data_unit(int64_t i) {
  return (float)((double)((uint64_t)(i + 1) * 2654435761u % 10007) / 5003.5 - 1.0);
}

/* conv2d_grad of a case: Input x, Filter f, Output@GRAD d; Input@GRAD dx, Filter@GRAD df. */
static inline ct_op *conv_grad_op(const conv_case *k) {
  ct_op *op = new_op("conv2d_grad");
  ck_assert_int_eq(ct_op_set_input(op, "Input", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Filter", "f"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Output@GRAD", "d"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Input@GRAD", "dx"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Filter@GRAD", "df"), CT_OK);
  int64_t st[2] = {k->sh, k->sw};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "strides", st, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "paddings", k->pads, k->n_pads), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "groups", k->groups), CT_OK);
  return op;
}

/* conv2d by its definition, in double: out [n, m, oh, ow]. */
static inline void conv_naive(const conv_case *k, const double *x, const double *f, double *o) {
  int64_t p[4], oh = conv_oh(k), ow = conv_ow(k), cg = k->c / k->groups, mg = k->m / k->groups;
  conv_pads(k, p);
  for (int64_t n = 0; n < k->n; n++)
    for (int64_t m = 0; m < k->m; m++)
      for (int64_t oy = 0; oy < oh; oy++)
        for (int64_t ox = 0; ox < ow; ox++) {
          double acc = 0;
          for (int64_t ci = 0; ci < cg; ci++)
            for (int64_t ky = 0; ky < k->kh; ky++)
              for (int64_t kx = 0; kx < k->kw; kx++) {
                int64_t iy = oy * k->sh - p[0] + ky * k->dh, ix = ox * k->sw - p[2] + kx * k->dw;
                if (iy < 0 || iy >= k->h || ix < 0 || ix >= k->w) continue;
                int64_t c = (m / mg) * cg + ci;
                acc += x[((n * k->c + c) * k->h + iy) * k->w + ix] *
                       f[((m * cg + ci) * k->kh + ky) * k->kw + kx];
              }
          o[((n * k->m + m) * oh + oy) * ow + ox] = acc;
        }
}

/* pool2d by its definition, in double: out [n, c, oh, ow]. */
static inline void pool_naive(const conv_case *k, const double *x, double *o) {
  int64_t p[4], oh = conv_oh(k), ow = conv_ow(k);
  int64_t kh = k->global ? k->h : k->kh, kw = k->global ? k->w : k->kw;
  conv_pads(k, p);
  if (k->global) p[0] = p[2] = 0;
  for (int64_t nc = 0; nc < k->n * k->c; nc++)
    for (int64_t oy = 0; oy < oh; oy++)
      for (int64_t ox = 0; ox < ow; ox++) {
        double acc = k->pool[0] == 'm' ? -INFINITY : 0;
        int64_t cnt = 0;
        for (int64_t ky = 0; ky < kh; ky++)
          for (int64_t kx = 0; kx < kw; kx++) {
            int64_t iy = oy * k->sh - p[0] + ky, ix = ox * k->sw - p[2] + kx;
            if (iy < 0 || iy >= k->h || ix < 0 || ix >= k->w) continue;
            double v = x[(nc * k->h + iy) * k->w + ix];
            acc = k->pool[0] == 'm' ? fmax(acc, v) : acc + v;
            cnt++;
          }
        if (k->pool[0] == 'a') acc /= (double)(k->exclusive ? cnt : kh * kw);
        o[(nc * oh + oy) * ow + ox] = acc;
      }
}

/* Case k's output by its definition (conv_naive or pool_naive) on data_x and data_y values,
 * in double; the caller frees it. */
static inline double *conv_case_want(const conv_case *k) {
  int64_t nx = ct_ddim_numel(conv_x_dims(k)), nf = ct_ddim_numel(conv_f_dims(k));
  double *x = xmalloc(nx, sizeof *x), *f = xmalloc(nf, sizeof *f);
  double *want = xmalloc(ct_ddim_numel(conv_out_dims(k)), sizeof *want);
  for (int64_t i = 0; i < nx; i++) x[i] = data_x(i);
  for (int64_t i = 0; i < nf; i++) f[i] = data_y(i);
  if (k->pool != NULL) {
    pool_naive(k, x, want);
  } else {
    conv_naive(k, x, f, want);
  }
  free(x);
  free(f);
  return want;
}

#endif /* CORTEN_TESTS_CONV_UTIL_H */
