/* SPDX-License-Identifier: Apache-2.0 */
/* Depthwise conv2d on the CPU, bit for bit: every path of ops/cpu/conv_dw_tmpl.h (the 3x3 band
 * at stride 1 and 2, one band or several; small planes channels-last, a block of channels or
 * several, at one thread and three; the per-plane loops for other shapes) against a naive loop
 * that adds each output's taps inside the image in (ky, kx) order from 0 in the dtype, the
 * order the kernels document. Data are not small integers, so a different order of the sums or
 * a product of a tap outside the image shows in the bits. */
#include <math.h>
#include <string.h>

#include <corten/corten.h>

#include "conv_util.h"

/* Deterministic values in [-1, 1) exact in float32 (so in both dtypes), far from integers. */
static double data_x_frac(int64_t i) {
  return (float)((double)((uint64_t)(i + 7) * 2246822519u % 8191) / 4095.7 - 1.0);
}
static double data_w_frac(int64_t i) {
  return (float)((double)((uint64_t)(i + 3) * 3266489917u % 4093) / 2046.3 - 1.0);
}

/* The expected output in dtype T: per element, the products of the taps inside the image
 * added in (ky, kx) order to a sum starting at 0. */
#define NAIVE(T)                                                                               \
  static void naive_##T(const conv_case *k, const T *x, const T *f, T *o) {                   \
    int64_t p[4], oh = conv_oh(k), ow = conv_ow(k);                                          \
    conv_pads(k, p);                                                                          \
    for (int64_t n = 0; n < k->n; n++) {                                                      \
      for (int64_t c = 0; c < k->c; c++) {                                                    \
        const T *xp = x + (n * k->c + c) * k->h * k->w, *fp = f + c * k->kh * k->kw;          \
        T *op = o + (n * k->c + c) * oh * ow;                                                 \
        for (int64_t oy = 0; oy < oh; oy++) {                                                 \
          for (int64_t ox = 0; ox < ow; ox++) {                                               \
            T acc = 0;                                                                        \
            for (int64_t ky = 0; ky < k->kh; ky++) {                                          \
              int64_t iy = oy * k->sh - p[0] + ky * k->dh;                                    \
              if (iy < 0 || iy >= k->h) continue;                                             \
              for (int64_t kx = 0; kx < k->kw; kx++) {                                        \
                int64_t ix = ox * k->sw - p[2] + kx * k->dw;                                  \
                if (ix < 0 || ix >= k->w) continue;                                           \
                T prod = fp[ky * k->kw + kx] * xp[iy * k->w + ix];                            \
                acc = acc + prod;                                                             \
              }                                                                               \
            }                                                                                 \
            op[oy * ow + ox] = acc;                                                           \
          }                                                                                   \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
  }
NAIVE(float)
NAIVE(double)

/* Runs depthwise case k (groups = channels = filters) in dt at `threads` threads, filter
 * element `special` (if >= 0) set to `value`; compares every output's bytes with the naive
 * loop's. */
static void check_dw(const conv_case *k, ct_dtype dt, int threads, int64_t special, double value) {
  ck_assert_int_eq(k->groups, k->c);
  ck_assert_int_eq(k->m, k->c);
  ct_set_num_threads(threads);
  ct_scope *s = ct_scope_new();
  ct_ddim xd = conv_x_dims(k), fd = conv_f_dims(k), od = conv_out_dims(k);
  int64_t nx = ct_ddim_numel(xd), nf = ct_ddim_numel(fd), no = ct_ddim_numel(od);
  size_t es = dt == CT_FLOAT32 ? 4 : 8;
  void *x = xmalloc(nx, es), *f = xmalloc(nf, es), *want = xmalloc(no, es);
  for (int64_t i = 0; i < nx; i++) set_elem(x, dt, i, data_x_frac(i));
  for (int64_t i = 0; i < nf; i++) set_elem(f, dt, i, data_w_frac(i));
  if (special >= 0 && dt == CT_FLOAT32) ((float *)f)[special] = (float)value; /* NaN included */
  if (special >= 0 && dt == CT_FLOAT64) ((double *)f)[special] = value;
  put(s, "x", dt, xd, x);
  put(s, "f", dt, fd, f);
  ct_op *op = conv_case_op(k, "x", "f", "out");
  run(op, s);
  if (dt == CT_FLOAT32) {
    naive_float(k, x, f, want);
  } else {
    naive_double(k, x, f, want);
  }
  const char *got = result(s, "out", dt, od);
  for (int64_t i = 0; i < no; i++) {
    ck_assert_msg(memcmp(got + i * es, (char *)want + i * es, es) == 0,
                  "%s out[%lld] = %.17g, expected %.17g (%lld x %lld plane, stride %lld)",
                  dt == CT_FLOAT32 ? "float32" : "float64", (long long)i, get_elem(got, dt, i),
                  get_elem(want, dt, i), (long long)k->h, (long long)k->w, (long long)k->sh);
  }
  free(x);
  free(f);
  free(want);
  ct_op_free(op);
  ct_scope_free(s);
  ct_set_num_threads(1);
}

static void check_dw_both(const conv_case *k) {
  check_dw(k, CT_FLOAT32, 1, -1, 0);
  check_dw(k, CT_FLOAT64, 1, -1, 0);
}

/* 3x3 at stride 1 on planes of more than 64 outputs: float32 on AVX-512 straight from the image
 * (ops/cpu/conv_avx512.c), else the padded band; 150 rows take several bands in both dtypes, 40
 * rows one band in float32 and two in float64. */
START_TEST(dw3_stride1_bands) {
  check_dw_both(CONV(.n = 1, .c = 3, .h = 40, .w = 70, .m = 3, .kh = 3, .kw = 3, .groups = 3,
                     .pads = {1, 1}));
  check_dw_both(CONV(.n = 2, .c = 2, .h = 150, .w = 90, .m = 2, .kh = 3, .kw = 3, .groups = 2,
                     .pads = {1, 1}));
  check_dw_both(CONV(.n = 1, .c = 2, .h = 20, .w = 21, .m = 2, .kh = 3, .kw = 3, .groups = 2,
                     .pads = {0, 0}));
  check_dw_both(CONV(.n = 1, .c = 2, .h = 19, .w = 23, .m = 2, .kh = 3, .kw = 3, .groups = 2,
                     .pads = {2, 0, 1, 2}, .n_pads = 4));
  /* padding wider than a vector of outputs (every lane of the first and last ones masked) and
   * rows of more than 1024 outputs (float32 on AVX-512 reads the image directly up to that) */
  check_dw_both(CONV(.n = 1, .c = 2, .h = 5, .w = 6, .m = 2, .kh = 3, .kw = 3, .groups = 2,
                     .pads = {20, 20}));
  check_dw_both(CONV(.n = 1, .c = 2, .h = 3, .w = 1030, .m = 2, .kh = 3, .kw = 3, .groups = 2,
                     .pads = {1, 1}));
}
END_TEST

/* 3x3 at stride 2: the four phase planes; odd and even sizes, several bands, one-sided pads. */
START_TEST(dw3_stride2_bands) {
  check_dw_both(CONV(.n = 1, .c = 3, .h = 41, .w = 70, .m = 3, .kh = 3, .kw = 3, .groups = 3,
                     .sh = 2, .sw = 2, .pads = {1, 1}));
  check_dw_both(CONV(.n = 1, .c = 2, .h = 120, .w = 90, .m = 2, .kh = 3, .kw = 3, .groups = 2,
                     .sh = 2, .sw = 2, .pads = {1, 1}));
  check_dw_both(CONV(.n = 2, .c = 2, .h = 28, .w = 27, .m = 2, .kh = 3, .kw = 3, .groups = 2,
                     .sh = 2, .sw = 2, .pads = {0, 1, 1, 0}, .n_pads = 4));
  check_dw_both(CONV(.n = 1, .c = 2, .h = 5, .w = 6, .m = 2, .kh = 3, .kw = 3, .groups = 2,
                     .sh = 2, .sw = 2, .pads = {40, 40}));
  /* an odd width whose last whole vector of outputs has its last tap in the right padding (the
   * element after the row is not read) */
  check_dw_both(CONV(.n = 1, .c = 2, .h = 9, .w = 63, .m = 2, .kh = 3, .kw = 3, .groups = 2,
                     .sh = 2, .sw = 2, .pads = {1, 1}));
}
END_TEST

/* A weight that is not finite: a tap on the padding is skipped (w x 0 would be NaN), so the
 * band gives way to the per-plane loop on planes with padding; the border outputs stay what
 * the naive loop gives (finite where the infinite tap lies outside the image). */
START_TEST(dw3_non_finite_weight_skips_the_padding) {
  const conv_case *k = CONV(.n = 1, .c = 2, .h = 12, .w = 12, .m = 2, .kh = 3, .kw = 3,
                            .groups = 2, .pads = {1, 1});
  check_dw(k, CT_FLOAT32, 1, 0, INFINITY);
  check_dw(k, CT_FLOAT64, 1, 0, INFINITY);
  check_dw(k, CT_FLOAT32, 1, 11, NAN);
  const conv_case *s2 = CONV(.n = 1, .c = 2, .h = 16, .w = 18, .m = 2, .kh = 3, .kw = 3,
                             .groups = 2, .sh = 2, .sw = 2, .pads = {1, 1});
  check_dw(s2, CT_FLOAT32, 1, 8, -INFINITY);
  /* small planes (channels-last) skip the padding by construction */
  const conv_case *small = CONV(.n = 1, .c = 3, .h = 7, .w = 7, .m = 3, .kh = 3, .kw = 3,
                                .groups = 3, .pads = {1, 1});
  check_dw(small, CT_FLOAT32, 1, 0, INFINITY);
}
END_TEST

/* Float32 3x3 on AVX-512 with fewer images than threads: each thread takes a band of rows of
 * every plane (conv_dw_bands); row counts that do not divide by the threads, stride 1 and 2,
 * two images at three threads, and a weight that is not finite (that plane goes whole with its
 * first band, the others by bands). Float64 and one thread take the planes whole. */
START_TEST(dw3_rows_split_across_threads) {
  const conv_case *s1 = CONV(.n = 1, .c = 5, .h = 37, .w = 33, .m = 5, .kh = 3, .kw = 3,
                             .groups = 5, .pads = {1, 1});
  const conv_case *s2 = CONV(.n = 1, .c = 4, .h = 75, .w = 40, .m = 4, .kh = 3, .kw = 3,
                             .groups = 4, .sh = 2, .sw = 2, .pads = {1, 1});
  const conv_case *two = CONV(.n = 2, .c = 3, .h = 50, .w = 17, .m = 3, .kh = 3, .kw = 3,
                              .groups = 3, .pads = {0, 1, 1, 0}, .n_pads = 4);
  for (int t = 2; t <= 3; t++) {
    check_dw(s1, CT_FLOAT32, t, -1, 0);
    check_dw(s2, CT_FLOAT32, t, -1, 0);
    check_dw(two, CT_FLOAT32, t, -1, 0);
    check_dw(s1, CT_FLOAT32, t, 9 + 4, INFINITY); /* plane 1's centre tap */
    check_dw(s1, CT_FLOAT64, t, -1, 0);
  }
}
END_TEST

/* Outputs of at most 64 pixels: channels-last blocks of 32 (float32) or 16 (float64) channels
 * (float32 3x3 at stride 1 with rows as wide as the input's goes flat instead: below); 70
 * channels over two images take partial blocks, at one thread and at three (a piece may start
 * inside an image). */
START_TEST(dw_small_planes_channels_last) {
  const conv_case *k = CONV(.n = 2, .c = 70, .h = 7, .w = 7, .m = 70, .kh = 3, .kw = 3,
                            .groups = 70, .pads = {1, 1});
  check_dw_both(k);
  check_dw(k, CT_FLOAT32, 3, -1, 0);
  check_dw(k, CT_FLOAT64, 3, -1, 0);
  check_dw_both(CONV(.n = 1, .c = 70, .h = 14, .w = 14, .m = 70, .kh = 3, .kw = 3, .groups = 70,
                     .sh = 2, .sw = 2, .pads = {1, 1}));
  check_dw_both(CONV(.n = 1, .c = 5, .h = 8, .w = 8, .m = 5, .kh = 5, .kw = 5, .groups = 5,
                     .pads = {2, 2}));
  check_dw_both(CONV(.n = 1, .c = 4, .h = 6, .w = 5, .m = 4, .kh = 3, .kw = 2, .groups = 4,
                     .dh = 2, .pads = {2, 0, 1, 1}, .n_pads = 4));
}
END_TEST

/* Float32 3x3 at stride 1 on planes of at most 64 outputs whose rows are as wide as the input's
 * (the left and right padding 2 in all): flat, one to four vectors of outputs, each tap's
 * lanes outside the image masked (rows above and below, columns that would wrap into the next
 * row); asymmetric and zero top and bottom padding, one side's columns only; at one thread
 * and at three (two filters a group: test_ops_conv). A weight that is not finite takes the
 * per-element path (dw3_non_finite_weight_skips_the_padding). */
START_TEST(dw_small_planes_flat) {
  static const int64_t sides[][5] = {
      /* h, w, then pads top, bottom, left (right: 2 - left) */
      {4, 4, 1, 1, 1}, {5, 6, 1, 1, 1}, {6, 6, 1, 1, 1}, {8, 8, 1, 1, 1}, {7, 7, 2, 0, 0},
      {9, 7, 0, 0, 2}, {3, 16, 1, 1, 1}, {6, 10, 0, 2, 1}};
  for (size_t i = 0; i < sizeof sides / sizeof sides[0]; i++) {
    const int64_t *q = sides[i];
    const conv_case *k = CONV(.n = 2, .c = 5, .h = q[0], .w = q[1], .m = 5, .kh = 3, .kw = 3,
                              .groups = 5, .pads = {q[2], q[3], q[4], 2 - q[4]}, .n_pads = 4);
    check_dw(k, CT_FLOAT32, 1, -1, 0);
    check_dw(k, CT_FLOAT32, 3, -1, 0);
  }
}
END_TEST

/* Shapes no fast path takes: 5x5 and dilated filters on larger planes, strides 3 and mixed. */
START_TEST(dw_other_shapes_per_plane) {
  check_dw_both(CONV(.n = 1, .c = 2, .h = 20, .w = 17, .m = 2, .kh = 5, .kw = 5, .groups = 2,
                     .pads = {2, 2}));
  check_dw_both(CONV(.n = 1, .c = 2, .h = 20, .w = 17, .m = 2, .kh = 3, .kw = 3, .groups = 2,
                     .dh = 2, .dw = 2, .pads = {2, 2}));
  check_dw_both(CONV(.n = 1, .c = 2, .h = 30, .w = 31, .m = 2, .kh = 3, .kw = 3, .groups = 2,
                     .sh = 3, .sw = 3, .pads = {1, 1}));
  check_dw_both(CONV(.n = 1, .c = 2, .h = 30, .w = 31, .m = 2, .kh = 3, .kw = 3, .groups = 2,
                     .sh = 1, .sw = 2, .pads = {1, 1}));
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("ops_conv_depthwise");
  CT_ADD_TEST(s, dw3_stride1_bands);
  CT_ADD_TEST(s, dw3_stride2_bands);
  CT_ADD_TEST(s, dw3_non_finite_weight_skips_the_padding);
  CT_ADD_TEST(s, dw3_rows_split_across_threads);
  CT_ADD_TEST(s, dw_small_planes_channels_last);
  CT_ADD_TEST(s, dw_small_planes_flat);
  CT_ADD_TEST(s, dw_other_shapes_per_plane);
  return s;
}

CT_TEST_MAIN(make_suite)
