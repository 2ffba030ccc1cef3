/* SPDX-License-Identifier: Apache-2.0 */
/* pool_nd (1 to 3 spatial dims, dilations, ceil_mode, count_include_pad, SAME_UPPER/LOWER,
 * Indices with both storage orders, integer max), pool2d's integer max kernels, max_unpool,
 * lrn and instance_norm: values against plain loops written here or by hand, the refusals
 * (message naming the op and the fix), and the gradients of pool_nd, lrn and instance_norm
 * against central finite differences in float64 (grad_util.h). */
#include <math.h>
#include <string.h>

#include <corten/corten.h>

#include "grad_util.h"

/* ---- A plain pooling loop -------------------------------------------------------------------- */

typedef struct geom {
  int k;                             /* spatial dims */
  int64_t d[3], ks[3], st[3], dil[3], pb[3], pe[3];
  bool ceil, max, incl;
} geom;

static int64_t out_extent(const geom *g, int j) {
  int64_t ek = g->dil[j] * (g->ks[j] - 1) + 1, span = g->d[j] + g->pb[j] + g->pe[j] - ek;
  int64_t o = g->ceil ? (span + g->st[j] - 1) / g->st[j] + 1 : span / g->st[j] + 1;
  if (g->ceil && (o - 1) * g->st[j] >= g->d[j] + g->pb[j]) o--;
  return o;
}

/* Pools plane x (dims g->d) into want, output by output, tap by tap. */
static void pool_ref(const geom *g, const double *x, double *want) {
  int64_t o[3] = {0}, out[3] = {1, 1, 1}, d[3] = {1, 1, 1};
  for (int j = 0; j < g->k; j++) out[j] = out_extent(g, j), d[j] = g->d[j];
  int64_t q = 0;
  for (o[0] = 0; o[0] < out[0]; o[0]++) {
    for (o[1] = 0; o[1] < out[1]; o[1]++) {
      for (o[2] = 0; o[2] < out[2]; o[2]++) {
        double best = -INFINITY, sum = 0;
        int64_t inside = 0, padded = 0, t[3];
        for (t[0] = 0; t[0] < (g->k > 0 ? g->ks[0] : 1); t[0]++) {
          for (t[1] = 0; t[1] < (g->k > 1 ? g->ks[1] : 1); t[1]++) {
            for (t[2] = 0; t[2] < (g->k > 2 ? g->ks[2] : 1); t[2]++) {
              int64_t pos[3] = {0, 0, 0}, at = 0;
              bool in = true, in_pad = true;
              for (int j = 0; j < g->k; j++) {
                pos[j] = o[j] * g->st[j] - g->pb[j] + t[j] * g->dil[j];
                in = in && pos[j] >= 0 && pos[j] < d[j];
                in_pad = in_pad && pos[j] < d[j] + g->pe[j];
                at = at * d[j] + pos[j];
              }
              padded += in_pad;
              if (!in) continue;
              inside++;
              sum += x[at];
              if (x[at] > best) best = x[at];
            }
          }
        }
        want[q++] = g->max ? best : sum / (double)(g->incl ? padded : inside);
      }
    }
  }
}

/* pool_nd on one plane x of g's dims, float64, checked against pool_ref. */
static void check_pool(const geom *g, const char *algo) {
  ct_scope *s = ct_scope_new();
  ct_ddim xd = {.rank = g->k + 2, .d = {1, 1}}, od = xd;
  int64_t n = 1, m = 1;
  for (int j = 0; j < g->k; j++) {
    xd.d[2 + j] = g->d[j];
    od.d[2 + j] = out_extent(g, j);
    n *= g->d[j];
    m *= od.d[2 + j];
  }
  double *x = xmalloc(n, sizeof *x), *want = xmalloc(m, sizeof *want);
  for (int64_t i = 0; i < n; i++) x[i] = sin(0.7 * (double)i) + 0.01 * (double)i;
  put(s, "x", CT_FLOAT64, xd, x);
  ct_op *op = op_x("pool_nd", "x", "out");
  int64_t pads[6];
  for (int j = 0; j < g->k; j++) pads[j] = g->pb[j], pads[g->k + j] = g->pe[j];
  ck_assert_int_eq(ct_op_set_attr_string(op, "pooling_type", g->max ? "max" : "avg"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "ksize", g->ks, (size_t)g->k), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "strides", g->st, (size_t)g->k), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "dilations", g->dil, (size_t)g->k), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "paddings", pads, 2 * (size_t)g->k), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "ceil_mode", g->ceil), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "exclusive", !g->incl), CT_OK);
  if (algo != NULL) ck_assert_int_eq(ct_op_set_attr_string(op, "padding_algorithm", algo), CT_OK);
  run(op, s);
  pool_ref(g, x, want);
  const double *got = result(s, "out", CT_FLOAT64, od);
  for (int64_t i = 0; i < m; i++) {
    ck_assert_msg(fabs(got[i] - want[i]) <= 1e-15 * (1 + fabs(want[i])),
                  "out[%lld] = %.17g, want %.17g", (long long)i, got[i], want[i]);
  }
  free(x);
  free(want);
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(pool_nd_matches_a_plain_loop) {
  const geom cases[] = {
      {.k = 1, .d = {9}, .ks = {3}, .st = {2}, .dil = {1}, .pb = {1}, .pe = {2}, .max = true},
      {.k = 1, .d = {9}, .ks = {3}, .st = {2}, .dil = {1}, .pb = {1}, .pe = {2}},
      {.k = 1, .d = {10}, .ks = {2}, .st = {3}, .dil = {2}, .pb = {1}, .pe = {1}, .ceil = true,
       .max = true},
      {.k = 2, .d = {5, 6}, .ks = {2, 3}, .st = {1, 2}, .dil = {2, 1}, .pb = {1, 0},
       .pe = {0, 1}, .max = true},
      {.k = 2, .d = {5, 6}, .ks = {2, 3}, .st = {2, 2}, .dil = {1, 2}, .pb = {1, 1},
       .pe = {1, 1}, .incl = true, .ceil = true},
      {.k = 2, .d = {7, 4}, .ks = {3, 2}, .st = {2, 1}, .dil = {1, 1}, .pb = {0, 0},
       .pe = {0, 0}, .ceil = true},
      {.k = 3, .d = {3, 4, 5}, .ks = {2, 2, 3}, .st = {1, 2, 2}, .dil = {1, 1, 2},
       .pb = {0, 1, 1}, .pe = {1, 0, 1}, .max = true},
      {.k = 3, .d = {3, 4, 5}, .ks = {2, 2, 3}, .st = {1, 2, 2}, .dil = {1, 1, 1},
       .pb = {1, 1, 1}, .pe = {1, 1, 1}, .incl = true},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_pool(&cases[i], NULL);
}
END_TEST

/* A 1-D pool_nd of x (n values) with ksize k, stride st and padding_algorithm algo. */
static const double *pool1d(ct_scope *s, const char *type, const double *x, int64_t n,
                            int64_t k, int64_t st, const char *algo, int64_t out_n) {
  put(s, "x", CT_FLOAT64, CT_DIMS(1, 1, n), x);
  ct_op *op = op_x("pool_nd", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_string(op, "pooling_type", type), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "ksize", &k, 1), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "strides", &st, 1), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "padding_algorithm", algo), CT_OK);
  run(op, s);
  ct_op_free(op);
  return result(s, "out", CT_FLOAT64, CT_DIMS(1, 1, out_n));
}

static void expect(const double *got, const double *want, int n, const char *what) {
  for (int i = 0; i < n; i++) {
    ck_assert_msg(got[i] == want[i], "%s[%d] = %.17g, want %.17g", what, i, got[i], want[i]);
  }
}

/* SAME pads (D/s rounded up outputs): the odd pad at the end (UPPER) or the start (LOWER). */
START_TEST(same_upper_and_lower) {
  ct_scope *s = ct_scope_new();
  const double x[5] = {1, 2, 3, 4, 5};
  expect(pool1d(s, "max", x, 5, 2, 1, "SAME_LOWER", 5), (double[]){1, 2, 3, 4, 5}, 5, "lower");
  expect(pool1d(s, "avg", x, 5, 2, 1, "SAME_LOWER", 5), (double[]){1, 1.5, 2.5, 3.5, 4.5}, 5,
         "lower avg");
  expect(pool1d(s, "max", x, 5, 2, 1, "SAME_UPPER", 5), (double[]){2, 3, 4, 5, 5}, 5, "upper");
  expect(pool1d(s, "avg", x, 5, 2, 1, "SAME_UPPER", 5), (double[]){1.5, 2.5, 3.5, 4.5, 5}, 5,
         "upper avg");
  expect(pool1d(s, "max", x, 5, 3, 2, "VALID", 2), (double[]){3, 5}, 2, "valid");
  ct_scope_free(s);
}
END_TEST

/* ceil_mode keeps a partial last window, but not one that would start in the end padding; a
 * count_include_pad divisor stops at the padded extent. */
START_TEST(ceil_mode_windows) {
  ct_scope *s = ct_scope_new();
  const double x6[6] = {0, 1, 2, 3, 4, 5}, x4[4] = {1, 2, 3, 4};
  put(s, "x", CT_FLOAT64, CT_DIMS(1, 1, 6), x6);
  ct_op *op = op_x("pool_nd", "x", "out");
  const int64_t k2[1] = {2}, s3[1] = {3}, p01[2] = {0, 1}, k3[1] = {3}, s2[1] = {2},
                p11[2] = {1, 1};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "ksize", k2, 1), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "strides", s3, 1), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "paddings", p01, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "ceil_mode", true), CT_OK);
  run(op, s); /* a third window would start at 6, in the end padding: dropped */
  expect(result(s, "out", CT_FLOAT64, CT_DIMS(1, 1, 2)), (double[]){1, 4}, 2, "max");
  put(s, "x", CT_FLOAT64, CT_DIMS(1, 1, 4), x4);
  ck_assert_int_eq(ct_op_set_attr_string(op, "pooling_type", "avg"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "ksize", k3, 1), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "strides", s2, 1), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "paddings", p11, 2), CT_OK);
  run(op, s); /* windows at -1, 1, 3 */
  expect(result(s, "out", CT_FLOAT64, CT_DIMS(1, 1, 3)), (double[]){1.5, 3, 4}, 3, "exclusive");
  ck_assert_int_eq(ct_op_set_attr_bool(op, "exclusive", false), CT_OK);
  run(op, s); /* the last window's tap at 5 lies past the padded extent [-1, 5) */
  expect(result(s, "out", CT_FLOAT64, CT_DIMS(1, 1, 3)), (double[]){1, 3, 2}, 3, "include pad");
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* Indices: flat positions in X, batch and channel included, row- or column-major. */
START_TEST(max_indices_both_storage_orders) {
  ct_scope *s = ct_scope_new();
  const float x[12] = {1, 8, 2, 7, 3, 6, 11, 18, 12, 17, 13, 16};
  put(s, "x", CT_FLOAT32, CT_DIMS(1, 2, 2, 3), x);
  ct_op *op = op_x("pool_nd", "x", "out");
  const int64_t k[2] = {2, 2};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "ksize", k, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Indices", "idx"), CT_OK);
  run(op, s);
  const float *o = result(s, "out", CT_FLOAT32, CT_DIMS(1, 2, 1, 2));
  const float want[4] = {8, 8, 18, 18};
  for (int i = 0; i < 4; i++) ck_assert_float_eq(o[i], want[i]);
  const int64_t *ix = result(s, "idx", CT_INT64, CT_DIMS(1, 2, 1, 2));
  const int64_t row[4] = {1, 1, 7, 7}, col[4] = {2, 2, 8, 8};
  for (int i = 0; i < 4; i++) ck_assert_int_eq(ix[i], row[i]);
  ck_assert_int_eq(ct_op_set_attr_int(op, "storage_order", 1), CT_OK);
  run(op, s);
  ix = result(s, "idx", CT_INT64, CT_DIMS(1, 2, 1, 2));
  for (int i = 0; i < 4; i++) ck_assert_int_eq(ix[i], col[i]);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* A NaN is the largest: the first NaN of a window wins, with its index. */
START_TEST(max_nan_wins) {
  ct_scope *s = ct_scope_new();
  const double x[4] = {1, NAN, 3, NAN};
  put(s, "x", CT_FLOAT64, CT_DIMS(1, 1, 4), x);
  ct_op *op = op_x("pool_nd", "x", "out");
  const int64_t k[1] = {3};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "ksize", k, 1), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Indices", "idx"), CT_OK);
  run(op, s);
  const double *o = result(s, "out", CT_FLOAT64, CT_DIMS(1, 1, 2));
  ck_assert(isnan(o[0]) && isnan(o[1]));
  const int64_t *ix = result(s, "idx", CT_INT64, CT_DIMS(1, 1, 2));
  ck_assert_int_eq(ix[0], 1);
  ck_assert_int_eq(ix[1], 1);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* Integer max pooling: pool_nd and pool2d's integer kernels; avg of integers is refused. */
START_TEST(integer_max_pooling) {
  ct_scope *s = ct_scope_new();
  const uint8_t x[4] = {200, 3, 255, 7};
  put(s, "x", CT_UINT8, CT_DIMS(1, 1, 4), x);
  ct_op *op = op_x("pool_nd", "x", "out");
  const int64_t k[2] = {2, 2};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "ksize", k, 1), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "strides", k, 1), CT_OK);
  run(op, s);
  const uint8_t *o = result(s, "out", CT_UINT8, CT_DIMS(1, 1, 2));
  ck_assert_int_eq(o[0], 200);
  ck_assert_int_eq(o[1], 255);
  ck_assert_int_eq(ct_op_set_attr_string(op, "pooling_type", "avg"), CT_OK);
  run_fails(op, s, CT_ERR_UNSUPPORTED, "pool_nd", "avg pooling of uint8", "cast it to float32",
            NULL);
  ct_op_free(op);
  const int8_t y[8] = {-5, -9, -1, -7, 4, -2, -8, -3};
  put(s, "y", CT_INT8, CT_DIMS(1, 2, 2, 2), y);
  op = op_x("pool2d", "y", "out2");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "ksize", k, 2), CT_OK);
  run(op, s);
  const int8_t *o2 = result(s, "out2", CT_INT8, CT_DIMS(1, 2, 1, 1));
  ck_assert_int_eq(o2[0], -1);
  ck_assert_int_eq(o2[1], 4);
  ck_assert_int_eq(ct_op_set_attr_string(op, "pooling_type", "avg"), CT_OK);
  run_fails(op, s, CT_ERR_UNSUPPORTED, "pool2d", "avg pooling of int8", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(global_pooling_takes_every_spatial_dim) {
  ct_scope *s = ct_scope_new();
  double x[24];
  for (int i = 0; i < 24; i++) x[i] = (double)((i * 7) % 24);
  put(s, "x", CT_FLOAT64, CT_DIMS(1, 2, 2, 3, 2), x);
  ct_op *op = op_x("pool_nd", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_bool(op, "global_pooling", true), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "pooling_type", "avg"), CT_OK);
  run(op, s);
  double want[2] = {0, 0};
  for (int i = 0; i < 24; i++) want[i / 12] += x[i] / 12;
  const double *o = result(s, "out", CT_FLOAT64, CT_DIMS(1, 2, 1, 1, 1));
  for (int i = 0; i < 2; i++) ck_assert_double_eq_tol(o[i], want[i], 1e-12);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(pool_nd_refusals) {
  ct_scope *s = ct_scope_new();
  double x[16] = {0};
  put(s, "x", CT_FLOAT64, CT_DIMS(1, 1, 4, 4), x);
  ct_op *op = op_x("pool_nd", "x", "out");
  const int64_t k3[3] = {2, 2, 2}, k2[2] = {2, 2}, k1[2] = {1, 1}, p1[4] = {1, 1, 1, 1};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "ksize", k3, 3), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "pool_nd", "'ksize' has 3 values", "give 2", NULL);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "ksize", k1, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "paddings", p1, 4), CT_OK);
  run_fails(op, s, CT_ERR_UNSUPPORTED, "pool_nd", "covers padding only", "smaller paddings",
            NULL);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "ksize", k2, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "paddings", p1, 0), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "padding_algorithm", "SAME"), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "pool_nd", "\"SAME\"", "SAME_UPPER", NULL);
  ck_assert_int_eq(ct_op_set_attr_string(op, "padding_algorithm", "EXPLICIT"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "pooling_type", "avg"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Indices", "idx"), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "pool_nd", "Indices", "only max pooling", NULL);
  ct_op_free(op);
  put(s, "x", CT_FLOAT64, CT_DIMS(4, 4), x);
  op = op_x("pool_nd", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "ksize", k2, 2), CT_OK);
  run_fails(op, s, CT_ERR_SHAPE, "pool_nd", "'x'", "1 to 3 spatial dims", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- max_unpool ------------------------------------------------------------------------------ */

START_TEST(max_unpool_scatters_and_pads) {
  ct_scope *s = ct_scope_new();
  const float x[4] = {5, 6, 7, 8};
  const int64_t ix[4] = {5, 7, 13, 15}, k[2] = {2, 2}, shape[4] = {1, 1, 5, 5};
  put(s, "x", CT_FLOAT32, CT_DIMS(1, 1, 2, 2), x);
  put(s, "i", CT_INT64, CT_DIMS(1, 1, 2, 2), ix);
  ct_op *op = new_op("max_unpool");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Indices", "i"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "out"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "ksize", k, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "strides", k, 2), CT_OK);
  run(op, s);
  const float *o = result(s, "out", CT_FLOAT32, CT_DIMS(1, 1, 4, 4));
  for (int i = 0; i < 16; i++) {
    float want = i == 5 ? 5 : i == 7 ? 6 : i == 13 ? 7 : i == 15 ? 8 : 0;
    ck_assert_float_eq(o[i], want);
  }
  put(s, "shape", CT_INT64, CT_DIMS(4), shape);
  ck_assert_int_eq(ct_op_set_input(op, "OutputShape", "shape"), CT_OK);
  run(op, s); /* the 4x4 result at the start of a 5x5 plane */
  o = result(s, "out", CT_FLOAT32, CT_DIMS(1, 1, 5, 5));
  for (int i = 0; i < 25; i++) {
    float want = i == 6 ? 5 : i == 8 ? 6 : i == 16 ? 7 : i == 18 ? 8 : 0;
    ck_assert_float_eq(o[i], want);
  }
  const int64_t bad[4] = {5, 7, 13, 16};
  put(s, "i", CT_INT64, CT_DIMS(1, 1, 2, 2), bad);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "max_unpool", "element 3 is 16", NULL);
  const int64_t small[4] = {1, 1, 3, 5};
  put(s, "i", CT_INT64, CT_DIMS(1, 1, 2, 2), ix);
  put(s, "shape", CT_INT64, CT_DIMS(4), small);
  run_fails(op, s, CT_ERR_SHAPE, "max_unpool", "below the unpooled extent", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- lrn and instance_norm ------------------------------------------------------------------- */

START_TEST(lrn_matches_the_formula) {
  for (int64_t size = 1; size <= 4; size++) {
    ct_scope *s = ct_scope_new();
    enum { N = 2, C = 5, I = 3 };
    double x[N * C * I];
    for (int i = 0; i < N * C * I; i++) x[i] = sin(0.9 * i) * 2;
    put(s, "x", CT_FLOAT64, CT_DIMS(N, C, I), x);
    ct_op *op = op_x("lrn", "x", "out");
    ck_assert_int_eq(ct_op_set_attr_int(op, "size", size), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_float(op, "alpha", 0.3), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_float(op, "beta", 0.6), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_float(op, "bias", 2.0), CT_OK);
    run(op, s);
    const double *o = result(s, "out", CT_FLOAT64, CT_DIMS(N, C, I));
    for (int n = 0; n < N; n++) {
      for (int c = 0; c < C; c++) {
        for (int i = 0; i < I; i++) {
          double sq = 0;
          for (int64_t k = c - (size - 1) / 2; k <= c + size / 2; k++) {
            if (k >= 0 && k < C) sq += x[(n * C + k) * I + i] * x[(n * C + k) * I + i];
          }
          double want = x[(n * C + c) * I + i] / pow(2.0 + 0.3 / (double)size * sq, 0.6);
          double got = o[(n * C + c) * I + i];
          ck_assert_msg(fabs(got - want) <= 1e-14 * (1 + fabs(want)), "size %lld: %.17g vs %.17g",
                        (long long)size, got, want);
        }
      }
    }
    ck_assert_int_eq(ct_op_set_attr_int(op, "size", 0), CT_OK);
    run_fails(op, s, CT_ERR_OUT_OF_RANGE, "lrn", "'size' is 0", NULL);
    ct_op_free(op);
    ct_scope_free(s);
  }
}
END_TEST

static ct_op *inn_op(void) {
  ct_op *op = new_op("instance_norm");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Scale", "sc"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Bias", "b"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Y", "y"), CT_OK);
  return op;
}

START_TEST(instance_norm_matches_the_formula) {
  ct_scope *s = ct_scope_new();
  enum { N = 2, C = 3, M = 4 };
  double x[N * C * M], sc[C] = {1.5, -0.5, 2}, b[C] = {0.1, 0.2, -0.3};
  for (int i = 0; i < N * C * M; i++) x[i] = cos(1.1 * i) * 3 + i % 3;
  put(s, "x", CT_FLOAT64, CT_DIMS(N, C, 2, 2), x);
  put(s, "sc", CT_FLOAT64, CT_DIMS(C), sc);
  put(s, "b", CT_FLOAT64, CT_DIMS(C), b);
  ct_op *op = inn_op();
  ck_assert_int_eq(ct_op_set_attr_float(op, "epsilon", 0.01), CT_OK);
  run(op, s);
  const double *y = result(s, "y", CT_FLOAT64, CT_DIMS(N, C, 2, 2));
  for (int g = 0; g < N * C; g++) {
    double mean = 0, var = 0;
    for (int i = 0; i < M; i++) mean += x[g * M + i] / M;
    for (int i = 0; i < M; i++) var += (x[g * M + i] - mean) * (x[g * M + i] - mean) / M;
    for (int i = 0; i < M; i++) {
      double want = sc[g % C] * (x[g * M + i] - mean) / sqrt(var + 0.01) + b[g % C];
      ck_assert_double_eq_tol(y[g * M + i], want, 1e-13);
    }
  }
  put(s, "sc", CT_FLOAT64, CT_DIMS(2), sc);
  run_fails(op, s, CT_ERR_SHAPE, "instance_norm", "input Scale variable 'sc'", "[C]", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- Gradients ------------------------------------------------------------------------------- */

static const geom *g_geom;
static const char *g_algo;

static void pool_attrs(ct_op *op) {
  const geom *g = g_geom;
  int64_t pads[6];
  for (int j = 0; j < g->k; j++) pads[j] = g->pb[j], pads[g->k + j] = g->pe[j];
  ck_assert_int_eq(ct_op_set_attr_string(op, "pooling_type", g->max ? "max" : "avg"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "ksize", g->ks, (size_t)g->k), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "strides", g->st, (size_t)g->k), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "dilations", g->dil, (size_t)g->k), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "paddings", pads, 2 * (size_t)g->k), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "ceil_mode", g->ceil), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "exclusive", !g->incl), CT_OK);
  if (g_algo != NULL) {
    ck_assert_int_eq(ct_op_set_attr_string(op, "padding_algorithm", g_algo), CT_OK);
  }
}

START_TEST(pool_nd_gradients) {
  const geom cases[] = {
      {.k = 1, .d = {7}, .ks = {3}, .st = {2}, .dil = {1}, .pb = {1}, .pe = {1}, .max = true},
      {.k = 1, .d = {7}, .ks = {3}, .st = {2}, .dil = {1}, .pb = {1}, .pe = {0}, .ceil = true,
       .incl = true},
      {.k = 2, .d = {4, 5}, .ks = {2, 2}, .st = {1, 2}, .dil = {2, 1}, .pb = {1, 0},
       .pe = {0, 1}, .max = true},
      {.k = 2, .d = {4, 5}, .ks = {3, 2}, .st = {1, 1}, .dil = {1, 1}, .pb = {1, 1},
       .pe = {1, 0}},
      {.k = 3, .d = {2, 3, 4}, .ks = {2, 2, 2}, .st = {1, 1, 2}, .dil = {1, 1, 1},
       .pb = {0, 0, 1}, .pe = {0, 1, 0}, .max = true},
      {.k = 3, .d = {2, 3, 4}, .ks = {1, 2, 3}, .st = {1, 2, 1}, .dil = {1, 1, 1}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    g_geom = &cases[i];
    g_algo = NULL;
    ct_ddim xd = {.rank = cases[i].k + 2, .d = {2, 2}};
    for (int j = 0; j < cases[i].k; j++) xd.d[2 + j] = cases[i].d[j];
    check_x_grad("pool_nd", pool_attrs, xd);
  }
  const geom same = {.k = 2, .ks = {2, 3}, .st = {2, 1}, .dil = {1, 1}};
  g_geom = &same;
  g_algo = "SAME_LOWER";
  check_x_grad("pool_nd", pool_attrs, CT_DIMS(1, 2, 5, 4));
}
END_TEST

static void lrn_attrs(ct_op *op) {
  ck_assert_int_eq(ct_op_set_attr_int(op, "size", 3), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "alpha", 0.5), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "beta", 0.75), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "bias", 1.5), CT_OK);
}

static void lrn_attrs_even(ct_op *op) {
  lrn_attrs(op);
  ck_assert_int_eq(ct_op_set_attr_int(op, "size", 4), CT_OK);
}

START_TEST(lrn_gradients) {
  check_x_grad("lrn", lrn_attrs, CT_DIMS(2, 5, 3));
  check_x_grad("lrn", lrn_attrs_even, CT_DIMS(1, 6, 2, 2));
}
END_TEST

static void build_inn(ct_program *p) {
  ct_op *op = inn_op();
  ck_assert_int_eq(ct_op_set_attr_float(op, "epsilon", 0.1), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  append_weighted_loss(p, "y", "loss");
}

START_TEST(instance_norm_gradients) {
  static const char *const params[] = {"x", "sc", "b"};
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(2, 3, 5), 0.2);
  put_smooth(s, "sc", CT_DIMS(3), 1.0);
  put_smooth(s, "b", CT_DIMS(3), 2.0);
  check_grads(s, build_inn, "loss", params, 3);
  ct_scope_free(s);
}
END_TEST

/* Hostile sizes (found in review): a window of more than 2^40 taps is refused (an average's
 * divisor would overflow); an empty X with a spatial dim of 2^40 pools to an empty Out at once;
 * max_unpool refuses an unpooled extent past 2^56; lrn_grad checks size as lrn does. */
START_TEST(hostile_sizes_are_refused_or_quick) {
  ct_scope *s = ct_scope_new();
  static const float one = 8;
  put(s, "x", CT_FLOAT32, CT_DIMS(1, 1, 1, 1, 1), &one);
  ct_op *op = op_x("pool_nd", "x", "y");
  static const int64_t k = 2147483647, ks[3] = {k, k, k};
  static const int64_t pads[6] = {k / 2 + 1, k / 2 + 1, k / 2 + 1, k / 2, k / 2, k / 2};
  ck_assert_int_eq(ct_op_set_attr_string(op, "pooling_type", "avg"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "ksize", ks, 3), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "paddings", pads, 6), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "exclusive", false), CT_OK);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "pool_nd", "2^40 taps", "ksize", NULL);
  ct_op_free(op);
  put(s, "e", CT_FLOAT32, CT_DIMS(0, 1, (int64_t)1 << 40), NULL);
  op = op_x("pool_nd", "e", "ey");
  static const int64_t k1[1] = {1}, big[1] = {2147483647};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "ksize", k1, 1), CT_OK);
  run(op, s);
  ck_assert_int_eq(ct_tensor_numel(ct_var_get_tensor(ct_scope_find_var(s, "ey"))), 0);
  ct_op_free(op);
  put(s, "ei", CT_INT64, CT_DIMS(0, 1, (int64_t)1 << 40), NULL);
  op = op_x("max_unpool", "e", "u");
  ck_assert_int_eq(ct_op_set_input(op, "Indices", "ei"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "ksize", k1, 1), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "strides", big, 1), CT_OK);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "max_unpool", "input X variable 'e'", "2^56", NULL);
  ct_op_free(op);
  static const double x3[3] = {1, 2, 3};
  put(s, "x3", CT_FLOAT64, CT_DIMS(1, 3, 1), x3);
  put(s, "g3", CT_FLOAT64, CT_DIMS(1, 3, 1), x3);
  op = ct_op_new("lrn_grad");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x3"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Out@GRAD", "g3"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "X@GRAD", "dx"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "size", 0), CT_OK);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "lrn_grad", "attribute 'size' is 0", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("ops_pool_nd");
  CT_ADD_TEST(s, pool_nd_matches_a_plain_loop);
  CT_ADD_TEST(s, same_upper_and_lower);
  CT_ADD_TEST(s, ceil_mode_windows);
  CT_ADD_TEST(s, max_indices_both_storage_orders);
  CT_ADD_TEST(s, max_nan_wins);
  CT_ADD_TEST(s, integer_max_pooling);
  CT_ADD_TEST(s, global_pooling_takes_every_spatial_dim);
  CT_ADD_TEST(s, pool_nd_refusals);
  CT_ADD_TEST(s, max_unpool_scatters_and_pads);
  CT_ADD_TEST(s, lrn_matches_the_formula);
  CT_ADD_TEST(s, instance_norm_matches_the_formula);
  CT_ADD_TEST(s, pool_nd_gradients);
  CT_ADD_TEST(s, lrn_gradients);
  CT_ADD_TEST(s, instance_norm_gradients);
  CT_ADD_TEST(s, hostile_sizes_are_refused_or_quick);
  return s;
}

CT_TEST_MAIN(make_suite)
