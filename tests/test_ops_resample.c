/* SPDX-License-Identifier: Apache-2.0 */
/* resize, grid_sample and roi_align (ONNX's Resize/Upsample, GridSample, RoiAlign): values
 * worked out by hand, resize in every mode and coordinate transformation against a plain loop
 * of ONNX's reference algorithm (neighbours picked by distance from an edge-padded line, one
 * dim nested in the next), the run-time inputs (Scales, Sizes, Roi; empty ones as absent),
 * the refusals, and the gradients (resize_grad, grid_sample_grad) against central finite
 * differences in float64 (grad_util.h). */
#include <math.h>

#include <corten/corten.h>

#include "grad_util.h"

static void near_all(const double *got, const double *want, int64_t n, double tol,
                     const char *what) {
  for (int64_t i = 0; i < n; i++) {
    ck_assert_msg(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])),
                  "%s[%lld] = %.17g, want %.17g", what, (long long)i, got[i], want[i]);
  }
}

/* resize reading x (and the named optional inputs when not NULL) into out. */
static ct_op *resize_op(const char *mode, const char *ctm, const char *scales, const char *sizes,
                        const char *roi) {
  ct_op *op = op_x("resize", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_string(op, "mode", mode), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "coordinate_transformation_mode", ctm), CT_OK);
  if (scales) ck_assert_int_eq(ct_op_set_input(op, "Scales", scales), CT_OK);
  if (sizes) ck_assert_int_eq(ct_op_set_input(op, "Sizes", sizes), CT_OK);
  if (roi) ck_assert_int_eq(ct_op_set_input(op, "Roi", roi), CT_OK);
  return op;
}

/* ---- A plain loop of ONNX's reference Resize ------------------------------------------------- */

typedef struct ref_cfg {
  const char *mode, *ctm, *nearest;
  double a, extrap;
  bool exclude;
  int rank;
  int64_t in[4], out[4], stride[4];
  double scale[4], length[4], roi0[4], roi1[4];
} ref_cfg;

static int ref_coeffs(const ref_cfg *g, double r, double c[4]) {
  if (strcmp(g->mode, "nearest") == 0) {
    bool right = r == 1 || (strcmp(g->nearest, "round_prefer_floor") == 0 ? r > 0.5
                            : strcmp(g->nearest, "round_prefer_ceil") == 0 ? r >= 0.5
                            : strcmp(g->nearest, "ceil") == 0);
    c[0] = right ? 0 : 1;
    c[1] = right ? 1 : 0;
    return 2;
  }
  if (strcmp(g->mode, "linear") == 0) {
    c[0] = 1 - r;
    c[1] = r;
    return 2;
  }
  double a = g->a, d[4] = {1 + r, r, 1 - r, 2 - r};
  for (int j = 0; j < 4; j++) {
    double t = d[j];
    c[j] = t <= 1 ? ((a + 2) * t - (a + 3)) * t * t + 1 : ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  }
  return 4;
}

static double ref_at(const ref_cfg *g, const double *x, int k, int64_t off, const int64_t *oi) {
  if (k == g->rank) return x[off];
  double o = (double)oi[k], in = (double)g->in[k], s = g->scale[k], len = g->length[k], xo;
  if (strcmp(g->ctm, "half_pixel") == 0) xo = (o + 0.5) / s - 0.5;
  else if (strcmp(g->ctm, "pytorch_half_pixel") == 0) xo = len == 1 ? -0.5 : (o + 0.5) / s - 0.5;
  else if (strcmp(g->ctm, "align_corners") == 0) xo = len == 1 ? 0 : o * (in - 1) / (len - 1);
  else if (strcmp(g->ctm, "asymmetric") == 0) xo = o / s;
  else if (strcmp(g->ctm, "tf_half_pixel_for_nn") == 0) xo = (o + 0.5) / s;
  else {
    double r0 = g->roi0[k], r1 = g->roi1[k];
    xo = len == 1 ? (r1 - r0) * (in - 1) / 2 : o * (r1 - r0) * (in - 1) / (len - 1);
    xo += r0 * (in - 1);
    if (xo < 0 || xo > in - 1) return g->extrap;
  }
  double c[4], r = xo == floor(xo) ? 1 : xo - floor(xo);
  int n = ref_coeffs(g, r, c), pad = (n + 1) / 2;
  int64_t idx[4];
  bool used[64] = {false};
  for (int j = 0; j < n; j++) { /* the n nearest of the padded line, ties to the lower */
    int64_t best = 0;
    bool have = false;
    for (int64_t i = -pad; i < g->in[k] + pad; i++) {
      if (used[i + pad]) continue;
      if (!have || fabs(xo - (double)i) < fabs(xo - (double)best)) best = i, have = true;
    }
    used[best + pad] = true;
  }
  for (int64_t i = -pad, j = 0; i < g->in[k] + pad; i++) {
    if (used[i + pad]) idx[j++] = i;
  }
  if (g->exclude) {
    double sum = 0;
    for (int j = 0; j < n; j++) {
      if (idx[j] < 0 || idx[j] >= g->in[k]) c[j] = 0;
      sum += c[j];
    }
    for (int j = 0; j < n; j++) c[j] /= sum;
  }
  double v = 0;
  for (int j = 0; j < n; j++) {
    int64_t i = idx[j] < 0 ? 0 : idx[j] >= g->in[k] ? g->in[k] - 1 : idx[j];
    v += c[j] * ref_at(g, x, k + 1, off + i * g->stride[k], oi);
  }
  return v;
}

/* Runs resize over x of dims in (f64 data x) with scales (or sizes when scales is NULL) and
 * compares Out with the plain loop. */
static void check_against_loop(ref_cfg *g, const double *x, const float *scales,
                               const int64_t *sizes, const char *nearest, bool exclude) {
  ct_scope *s = ct_scope_new();
  int r = g->rank;
  put(s, "x", CT_FLOAT64, ct_ddim_make(g->in, r), x);
  if (scales) put(s, "scales", CT_FLOAT32, CT_DIMS(r), scales);
  else put(s, "sizes", CT_INT64, CT_DIMS(r), sizes);
  ct_op *op = resize_op(g->mode, g->ctm, scales ? "scales" : NULL, scales ? NULL : "sizes", NULL);
  ck_assert_int_eq(ct_op_set_attr_string(op, "nearest_mode", nearest), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "exclude_outside", exclude), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "cubic_coeff_a", g->a), CT_OK);
  run(op, s);
  g->nearest = nearest;
  g->exclude = exclude;
  int64_t st = 1, n = 1;
  for (int k = r - 1; k >= 0; k--) {
    g->stride[k] = st;
    st *= g->in[k];
    g->out[k] = scales ? (int64_t)(g->in[k] * (double)scales[k]) : sizes[k];
    g->scale[k] = scales ? (double)scales[k] : (double)sizes[k] / (double)g->in[k];
    g->length[k] = scales ? g->in[k] * (double)scales[k] : (double)sizes[k];
    n *= g->out[k];
  }
  const double *got = result(s, "out", CT_FLOAT64, ct_ddim_make(g->out, r));
  int64_t oi[4] = {0};
  for (int64_t e = 0; e < n; e++) {
    double want = ref_at(g, x, 0, 0, oi);
    ck_assert_msg(fabs(got[e] - want) <= 1e-12 * (1 + fabs(want)),
                  "%s %s %s: Out[%lld] = %.17g, the loop %.17g", g->mode, g->ctm, nearest,
                  (long long)e, got[e], want);
    for (int k = r - 1; k >= 0 && ++oi[k] == g->out[k]; k--) oi[k] = 0;
  }
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(resize_every_mode_against_the_loop) {
  static const char *const modes[] = {"nearest", "linear", "cubic"};
  static const char *const ctms[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                     "asymmetric", "tf_half_pixel_for_nn"};
  static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  double x[2 * 3 * 5];
  for (int i = 0; i < 30; i++) x[i] = sin(0.7 * i) * 3 + i * 0.1;
  static const float sc[][3] = {{1, 2, 0.6f}, {1, 0.5f, 1.7f}, {2, 1.25f, 0.25f}};
  static const int64_t sz[][3] = {{2, 7, 3}, {1, 1, 8}, {3, 2, 2}};
  for (int m = 0; m < 3; m++) {
    for (int t = 0; t < 5; t++) {
      for (int v = 0; v < 3; v++) {
        ref_cfg g = {.mode = modes[m], .ctm = ctms[t], .a = v == 2 ? -0.5 : -0.75, .rank = 3,
                     .in = {2, 3, 5}};
        const char *nm = m == 0 ? nms[(t + v) % 4] : "round_prefer_floor";
        check_against_loop(&g, x, sc[v], NULL, nm, false);
        check_against_loop(&g, x, NULL, sz[v], nm, m == 2 && v != 1);
      }
    }
  }
}
END_TEST

/* ---- Values by hand -------------------------------------------------------------------------- */

START_TEST(resize_nearest_upsample_repeats) {
  ct_scope *s = ct_scope_new();
  float x[4] = {1, 2, 3, 4}, sc[4] = {1, 1, 2, 2};
  put(s, "x", CT_FLOAT32, CT_DIMS(1, 1, 2, 2), x);
  put(s, "scales", CT_FLOAT32, CT_DIMS(4), sc);
  ct_op *op = resize_op("nearest", "asymmetric", "scales", NULL, NULL);
  ck_assert_int_eq(ct_op_set_attr_string(op, "nearest_mode", "floor"), CT_OK);
  run(op, s);
  const float *o = result(s, "out", CT_FLOAT32, CT_DIMS(1, 1, 4, 4));
  static const float want[16] = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
  for (int i = 0; i < 16; i++) ck_assert_float_eq(o[i], want[i]);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* Linear, 1-D: half_pixel [0, 4] to 4 is 0, 1, 3, 4 (the ends clamp); align_corners [0, 3]
 * to 4 is 0, 1, 2, 3; the sizes from the attribute, int32 Sizes from an input. */
START_TEST(resize_linear_by_hand) {
  ct_scope *s = ct_scope_new();
  double x[2] = {0, 4}, y[2] = {0, 3};
  int32_t four = 4;
  put(s, "x", CT_FLOAT64, CT_DIMS(2), x);
  put(s, "sizes", CT_INT32, CT_DIMS(1), &four);
  ct_op *op = resize_op("linear", "half_pixel", NULL, "sizes", NULL);
  run(op, s);
  double w1[4] = {0, 1, 3, 4};
  near_all(result(s, "out", CT_FLOAT64, CT_DIMS(4)), w1, 4, 1e-15, "half_pixel");
  ct_op_free(op);
  put(s, "x", CT_FLOAT64, CT_DIMS(2), y);
  op = resize_op("linear", "align_corners", NULL, NULL, NULL);
  int64_t n = 4;
  ck_assert_int_eq(ct_op_set_attr_ints(op, "sizes", &n, 1), CT_OK);
  run(op, s);
  double w2[4] = {0, 1, 2, 3};
  near_all(result(s, "out", CT_FLOAT64, CT_DIMS(4)), w2, 4, 1e-15, "align_corners");
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* tf_crop_and_resize: roi [0.5, 1.25] of [0, 10, 20, 30, 40] at 3 points: coordinates 2, 3.5
 * and 5, the last outside, so 20, 35 and the extrapolation value. */
START_TEST(resize_tf_crop_and_resize_extrapolates) {
  ct_scope *s = ct_scope_new();
  float x[5] = {0, 10, 20, 30, 40}, roi[2] = {0.5f, 1.25f};
  int64_t three = 3;
  put(s, "x", CT_FLOAT32, CT_DIMS(5), x);
  put(s, "roi", CT_FLOAT32, CT_DIMS(2), roi);
  put(s, "sizes", CT_INT64, CT_DIMS(1), &three);
  ct_op *op = resize_op("linear", "tf_crop_and_resize", NULL, "sizes", "roi");
  ck_assert_int_eq(ct_op_set_attr_float(op, "extrapolation_value", 7), CT_OK);
  run(op, s);
  const float *o = result(s, "out", CT_FLOAT32, CT_DIMS(3));
  ck_assert_float_eq(o[0], 20);
  ck_assert_float_eq(o[1], 35);
  ck_assert_float_eq(o[2], 7);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* An empty Scales tensor counts as absent (ONNX's way of giving sizes), and the same op runs
 * again at another input size. */
START_TEST(resize_empty_scales_and_new_sizes) {
  ct_scope *s = ct_scope_new();
  float none = 0, x[3] = {1, 2, 3};
  int64_t sz = 6;
  put(s, "x", CT_FLOAT32, CT_DIMS(3), x);
  put(s, "scales", CT_FLOAT32, CT_DIMS(0), &none);
  put(s, "sizes", CT_INT64, CT_DIMS(1), &sz);
  ct_op *op = resize_op("nearest", "asymmetric", "scales", "sizes", NULL);
  ck_assert_int_eq(ct_op_set_attr_string(op, "nearest_mode", "floor"), CT_OK);
  run(op, s);
  const float *o = result(s, "out", CT_FLOAT32, CT_DIMS(6));
  static const float want[6] = {1, 1, 2, 2, 3, 3};
  for (int i = 0; i < 6; i++) ck_assert_float_eq(o[i], want[i]);
  put(s, "x", CT_FLOAT32, CT_DIMS(2), x);
  run(op, s);
  o = result(s, "out", CT_FLOAT32, CT_DIMS(6));
  static const float want2[6] = {1, 1, 1, 2, 2, 2};
  for (int i = 0; i < 6; i++) ck_assert_float_eq(o[i], want2[i]);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(resize_refusals) {
  ct_scope *s = ct_scope_new();
  float x[4] = {1, 2, 3, 4}, sc2[2] = {2, 2}, half[2] = {1, 0.5f};
  int64_t sz2[2] = {2, 2};
  put(s, "x", CT_FLOAT32, CT_DIMS(2, 2), x);
  put(s, "sc", CT_FLOAT32, CT_DIMS(2), sc2);
  put(s, "half", CT_FLOAT32, CT_DIMS(2), half);
  put(s, "sz", CT_INT64, CT_DIMS(2), sz2);
  put(s, "sz1", CT_INT64, CT_DIMS(1), sz2);
  ct_op *op = resize_op("linear", "half_pixel", "sc", "sz", NULL);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "op 'resize'", "both scales and sizes", NULL);
  ct_op_free(op);
  op = resize_op("linear", "half_pixel", NULL, NULL, NULL);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "neither scales nor sizes", NULL);
  ct_op_free(op);
  op = resize_op("linear", "half_pixel", NULL, "sz1", NULL);
  run_fails(op, s, CT_ERR_SHAPE, "sizes holds 1 values", "rank 2", "one per dim", NULL);
  ct_op_free(op);
  op = resize_op("bilinear", "half_pixel", "sc", NULL, NULL);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "attribute 'mode'", "\"bilinear\"", NULL);
  ct_op_free(op);
  op = resize_op("linear", "corners", "sc", NULL, NULL);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "coordinate_transformation_mode", NULL);
  ct_op_free(op);
  op = resize_op("nearest", "asymmetric", "half", NULL, NULL);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "upsample_only", true), CT_OK);
  run_fails(op, s, CT_ERR_UNSUPPORTED, "op 'resize'", "below 1", NULL);
  ct_op_free(op);
  op = resize_op("linear", "tf_crop_and_resize", "sc", NULL, NULL);
  run_fails(op, s, CT_ERR_UNSUPPORTED, "tf_crop_and_resize with scales", "give sizes", NULL);
  ct_op_free(op);
  op = resize_op("linear", "tf_crop_and_resize", NULL, "sz", NULL);
  run_fails(op, s, CT_ERR_SHAPE, "input Roi", NULL);
  ct_op_free(op);
  float neg[2] = {1, -1};
  put(s, "neg", CT_FLOAT32, CT_DIMS(2), neg);
  op = resize_op("linear", "half_pixel", "neg", NULL, NULL);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "scales entry 1", "positive", NULL);
  ct_op_free(op);
  op = resize_op("linear", "half_pixel", "sz", NULL, NULL);
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "input Scales variable 'sz'", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- grid_sample ----------------------------------------------------------------------------- */

static ct_op *gs_op(const char *mode, const char *pad, bool align) {
  ct_op *op = op_x("grid_sample", "x", "out");
  ck_assert_int_eq(ct_op_set_input(op, "Grid", "grid"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "mode", mode), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "padding_mode", pad), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "align_corners", align), CT_OK);
  return op;
}

/* X [[1, 2], [3, 4]]: with align_corners the corners, the centre and a mid-edge; without, the
 * corner point (-1, -1) (x = y = -0.5: a quarter of X[0][0] with zeros, X[0][0] else) and
 * (-2, 1), outside (x -1.5, y 1.5): zeros 0, border 3 (clamped to the corner (0, 1)),
 * reflection 3.5 (x mirrored to 0.5, the row past the edge mirrored onto row 1). */
START_TEST(grid_sample_bilinear_by_hand) {
  ct_scope *s = ct_scope_new();
  double x[4] = {1, 2, 3, 4}, g[8] = {-1, -1, 1, 1, 0, 0, 0, -1};
  put(s, "x", CT_FLOAT64, CT_DIMS(1, 1, 2, 2), x);
  put(s, "grid", CT_FLOAT64, CT_DIMS(1, 1, 4, 2), g);
  ct_op *op = gs_op("bilinear", "zeros", true);
  run(op, s);
  double w1[4] = {1, 4, 2.5, 1.5};
  near_all(result(s, "out", CT_FLOAT64, CT_DIMS(1, 1, 1, 4)), w1, 4, 1e-15, "align_corners");
  ct_op_free(op);
  double g2[4] = {-1, -1, -2, 1};
  put(s, "grid", CT_FLOAT64, CT_DIMS(1, 2, 1, 2), g2);
  static const char *const pads[] = {"zeros", "border", "reflection"};
  static const double want[3][2] = {{0.25, 0}, {1, 3}, {1, 3.5}};
  for (int k = 0; k < 3; k++) {
    op = gs_op("bilinear", pads[k], false);
    run(op, s);
    near_all(result(s, "out", CT_FLOAT64, CT_DIMS(1, 1, 2, 1)), want[k], 2, 1e-15, pads[k]);
    ct_op_free(op);
  }
  ct_scope_free(s);
}
END_TEST

/* nearest rounds half to even. bicubic on the ramp x + 10 y at (2.75, 1.75), all 16 taps
 * inside: Keys' weights at fraction 0.75 with a = -0.75 are -0.03515625, 0.26171875,
 * 0.87890625, -0.10546875 (by hand), so 2.703125 along x and 1.703125 along y: 19.734375. */
START_TEST(grid_sample_nearest_and_bicubic) {
  ct_scope *s = ct_scope_new();
  float x[4] = {1, 2, 3, 4}, g[4] = {0.1f, -1, 0, 0};
  put(s, "x", CT_FLOAT32, CT_DIMS(1, 1, 2, 2), x);
  put(s, "grid", CT_FLOAT32, CT_DIMS(1, 1, 2, 2), g);
  ct_op *op = gs_op("nearest", "zeros", true);
  run(op, s);
  const float *o = result(s, "out", CT_FLOAT32, CT_DIMS(1, 1, 1, 2));
  ck_assert_float_eq(o[0], 2); /* x 0.55 -> 1, y 0 */
  ck_assert_float_eq(o[1], 1); /* x 0.5 and y 0.5 round to 0 */
  ct_op_free(op);
  double ramp[36], gg[2] = {0.1, -0.3};
  for (int i = 0; i < 36; i++) ramp[i] = i % 6 + 10 * (i / 6);
  put(s, "x", CT_FLOAT64, CT_DIMS(1, 1, 6, 6), ramp);
  put(s, "grid", CT_FLOAT64, CT_DIMS(1, 1, 1, 2), gg);
  op = gs_op("bicubic", "zeros", true);
  run(op, s);
  double want = 2.703125 + 10 * 1.703125;
  near_all(result(s, "out", CT_FLOAT64, CT_DIMS(1, 1, 1, 1)), &want, 1, 1e-14, "bicubic");
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* A NaN grid value samples NaN; an infinite one is far outside: 0 with zeros padding, the
 * edge with border; an infinity to reflect has no place (NaN). */
START_TEST(grid_sample_non_finite) {
  ct_scope *s = ct_scope_new();
  double x[4] = {1, 2, 3, 4}, g[6] = {NAN, 0, INFINITY, 0.5, -INFINITY, -INFINITY};
  put(s, "x", CT_FLOAT64, CT_DIMS(1, 1, 2, 2), x);
  put(s, "grid", CT_FLOAT64, CT_DIMS(1, 1, 3, 2), g);
  static const char *const pads[] = {"zeros", "border", "reflection"};
  for (int k = 0; k < 3; k++) {
    for (int m = 0; m < 3; m++) {
      ct_op *op = gs_op(m == 0 ? "bilinear" : m == 1 ? "nearest" : "bicubic", pads[k], false);
      run(op, s);
      const double *o = result(s, "out", CT_FLOAT64, CT_DIMS(1, 1, 1, 3));
      ck_assert(isnan(o[0]));
      if (k == 0) ck_assert(o[1] == 0 && o[2] == 0);
      if (k == 1) ck_assert(o[1] == 4 && o[2] == 1);
      if (k == 2) ck_assert(isnan(o[1]) && isnan(o[2]));
      ct_op_free(op);
    }
  }
  ct_scope_free(s);
}
END_TEST

START_TEST(grid_sample_refusals) {
  ct_scope *s = ct_scope_new();
  double x[4] = {1, 2, 3, 4}, g[3] = {0, 0, 0};
  float gf[2] = {0, 0};
  put(s, "x", CT_FLOAT64, CT_DIMS(1, 1, 2, 2), x);
  put(s, "grid", CT_FLOAT64, CT_DIMS(1, 1, 1, 3), g);
  ct_op *op = gs_op("bilinear", "zeros", false);
  run_fails(op, s, CT_ERR_SHAPE, "op 'grid_sample'", "Grid [N, Ho, Wo, 2]", NULL);
  put(s, "grid", CT_FLOAT32, CT_DIMS(1, 1, 1, 2), gf);
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "input Grid variable 'grid'", NULL);
  ct_op_free(op);
  put(s, "grid", CT_FLOAT64, CT_DIMS(1, 1, 1, 2), g);
  op = gs_op("bilinear", "wrap", false);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "attribute 'padding_mode'", "\"wrap\"", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- roi_align ------------------------------------------------------------------------------- */

static ct_op *ra_op(const char *mode, bool aligned) {
  ct_op *op = op_x("roi_align", "x", "out");
  ck_assert_int_eq(ct_op_set_input(op, "ROIs", "rois"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "BatchIndices", "bi"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "mode", mode), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "aligned", aligned), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "sampling_ratio", 2), CT_OK);
  return op;
}

/* X = x + 10 y on 4 x 4, roi (0, 0, 2, 2), one bin of 2 x 2 samples: aligned (half_pixel) the
 * samples sit at 0 and 1 (mean 5.5), not aligned at 0.5 and 1.5 (mean 11); max takes the
 * largest weighted corner, 0.25 x 22. A NaN roi pools NaN; a batch index past X is refused. */
START_TEST(roi_align_by_hand) {
  ct_scope *s = ct_scope_new();
  double x[16], rois[4] = {0, 0, 2, 2};
  int64_t bi = 0;
  for (int i = 0; i < 16; i++) x[i] = i % 4 + 10 * (i / 4);
  put(s, "x", CT_FLOAT64, CT_DIMS(1, 1, 4, 4), x);
  put(s, "rois", CT_FLOAT64, CT_DIMS(1, 4), rois);
  put(s, "bi", CT_INT64, CT_DIMS(1), &bi);
  static const double want[3] = {5.5, 11, 5.5};
  for (int k = 0; k < 3; k++) {
    ct_op *op = ra_op(k == 2 ? "max" : "avg", k == 0);
    run(op, s);
    near_all(result(s, "out", CT_FLOAT64, CT_DIMS(1, 1, 1, 1)), &want[k], 1, 1e-15, "roi_align");
    ct_op_free(op);
  }
  double nan_roi[4] = {0, NAN, 2, 2};
  put(s, "rois", CT_FLOAT64, CT_DIMS(1, 4), nan_roi);
  ct_op *nop = ra_op("avg", true);
  run(nop, s);
  ck_assert(isnan(*(const double *)result(s, "out", CT_FLOAT64, CT_DIMS(1, 1, 1, 1))));
  ct_op_free(nop);
  bi = 1;
  put(s, "bi", CT_INT64, CT_DIMS(1), &bi);
  ct_op *op = ra_op("avg", true);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "op 'roi_align'", "BatchIndices", "[0, 1)", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- Gradients ------------------------------------------------------------------------------- */

static const char *g_mode, *g_ctm, *g_pad;
static bool g_align;

static void build_resize(ct_program *p) {
  ct_op *op = resize_op(g_mode, g_ctm, NULL, NULL, NULL);
  static const int64_t sz[3] = {2, 5, 3};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "sizes", sz, 3), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

START_TEST(resize_gradients) {
  static const char *const modes[] = {"nearest", "linear", "cubic"};
  static const char *const ctms[] = {"half_pixel", "align_corners", "asymmetric"};
  static const char *const just_x[] = {"x"};
  for (int m = 0; m < 3; m++) {
    for (int t = 0; t < 3; t++) {
      ct_scope *s = ct_scope_new();
      put_smooth(s, "x", CT_DIMS(2, 3, 4), 0.3);
      g_mode = modes[m];
      g_ctm = ctms[t];
      check_grads(s, build_resize, "loss", just_x, 1);
      ct_scope_free(s);
    }
  }
}
END_TEST

static void build_gs(ct_program *p) {
  ct_op *op = gs_op(g_mode, g_pad, g_align);
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

/* Grid points off the pixel lines (the weights' kinks), some outside [-1, 1]. */
START_TEST(grid_sample_gradients) {
  static const char *const modes[] = {"bilinear", "nearest", "bicubic"};
  static const char *const pads[] = {"zeros", "border", "reflection"};
  static const char *const both[] = {"x", "grid"};
  double g[2 * 3 * 2 * 2];
  for (int i = 0; i < 24; i++) g[i] = 1.7 * sin(1.1 * i + 0.4) + 0.013;
  for (int m = 0; m < 3; m++) {
    for (int k = 0; k < 3; k++) {
      for (int a = 0; a < 2; a++) {
        ct_scope *s = ct_scope_new();
        put_smooth(s, "x", CT_DIMS(2, 2, 3, 4), 0.5);
        put(s, "grid", CT_FLOAT64, CT_DIMS(2, 3, 2, 2), g);
        g_mode = modes[m];
        g_pad = pads[k];
        g_align = a == 1;
        check_grads(s, build_gs, "loss", both, 2);
        ct_scope_free(s);
      }
    }
  }
}
END_TEST

/* Found in review: roi_align refuses a spatial_scale that is not finite (its samples would all
 * be dropped: zeros with CT_OK), and resize of an empty X to an empty Out of a huge extent
 * returns at once (no tap tables for 2^40 output indices). */
START_TEST(hostile_scales_and_empty_outputs) {
  ct_scope *s = ct_scope_new();
  float x[16];
  for (int i = 0; i < 16; i++) x[i] = (float)(i + 1);
  static const float rois[4] = {0, 0, 3, 3};
  static const int64_t b[1] = {0};
  put(s, "x", CT_FLOAT32, CT_DIMS(1, 1, 4, 4), x);
  put(s, "r", CT_FLOAT32, CT_DIMS(1, 4), rois);
  put(s, "b", CT_INT64, CT_DIMS(1), b);
  ct_op *op = ct_op_new("roi_align");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "ROIs", "r"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "BatchIndices", "b"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "out"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "sampling_ratio", 2), CT_OK);
  static const double bad[2] = {NAN, INFINITY};
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(ct_op_set_attr_float(op, "spatial_scale", bad[i]), CT_OK);
    run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "roi_align", "'spatial_scale'", "finite", NULL);
  }
  ct_op_free(op);
  put(s, "e", CT_FLOAT32, CT_DIMS(0, 1), NULL);
  static const int64_t sz[2] = {0, (int64_t)1 << 40};
  put(s, "sizes", CT_INT64, CT_DIMS(2), sz);
  op = op_x("resize", "e", "ey");
  ck_assert_int_eq(ct_op_set_input(op, "Sizes", "sizes"), CT_OK);
  run(op, s);
  ck_assert(ct_ddim_equal(ct_tensor_dims(ct_var_get_tensor(ct_scope_find_var(s, "ey"))),
                          CT_DIMS(0, (int64_t)1 << 40)));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("ops_resample");
  CT_ADD_TEST(s, resize_every_mode_against_the_loop);
  CT_ADD_TEST(s, resize_nearest_upsample_repeats);
  CT_ADD_TEST(s, resize_linear_by_hand);
  CT_ADD_TEST(s, resize_tf_crop_and_resize_extrapolates);
  CT_ADD_TEST(s, resize_empty_scales_and_new_sizes);
  CT_ADD_TEST(s, resize_refusals);
  CT_ADD_TEST(s, grid_sample_bilinear_by_hand);
  CT_ADD_TEST(s, grid_sample_nearest_and_bicubic);
  CT_ADD_TEST(s, grid_sample_non_finite);
  CT_ADD_TEST(s, grid_sample_refusals);
  CT_ADD_TEST(s, roi_align_by_hand);
  CT_ADD_TEST(s, resize_gradients);
  CT_ADD_TEST(s, grid_sample_gradients);
  CT_ADD_TEST(s, hostile_scales_and_empty_outputs);
  return s;
}

CT_TEST_MAIN(make_suite)
