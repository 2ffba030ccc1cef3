/* SPDX-License-Identifier: Apache-2.0 */
/* conv2d, depthwise_conv2d and pool2d forward on the CPU against naive loops (conv_util.h):
 * strides, paddings (2 and 4 values, SAME, VALID), dilations, groups, depthwise, 1x1 filters,
 * max and avg pooling (exclusive or not, ceil_mode, global); small-integer data, so float32 and
 * float64 are exact. Then the refusals, each naming the op and what to fix. */
#include <math.h>
#include <string.h>

#include <corten/corten.h>

#include "conv_util.h"

/* Runs the case in dtype dt on data_x / data_y values and compares every output element with
 * the naive loop, exactly. */
static void check_case(const conv_case *k, ct_dtype dt, const char *type) {
  ct_scope *s = ct_scope_new();
  ct_ddim xd = conv_x_dims(k), fd = conv_f_dims(k), od = conv_out_dims(k);
  put_fn(s, "x", dt, xd, data_x);
  if (k->pool == NULL) put_fn(s, "f", dt, fd, data_y);
  ct_op *op = conv_case_op(k, "x", "f", "out");
  if (type != NULL) { /* the same op under another type name (depthwise_conv2d) */
    ct_op *alt = new_op(type);
    ck_assert_int_eq(ct_op_set_input(alt, "Input", "x"), CT_OK);
    ck_assert_int_eq(ct_op_set_input(alt, "Filter", "f"), CT_OK);
    ck_assert_int_eq(ct_op_set_output(alt, "Output", "out"), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_int(alt, "groups", k->groups), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_ints(alt, "paddings", k->pads, k->n_pads), CT_OK);
    ct_op_free(op);
    op = alt;
  }
  run(op, s);
  const int64_t no = ct_ddim_numel(od);
  double *want = conv_case_want(k);
  const void *got = result(s, "out", dt, od);
  for (int64_t i = 0; i < no; i++) {
    double g = get_elem(got, dt, i), w = dt == CT_FLOAT32 ? (double)(float)want[i] : want[i];
    ck_assert_msg(g == w, "out[%lld] = %.17g, expected %.17g", (long long)i, g, w);
  }
  free(want);
  ct_op_free(op);
  ct_scope_free(s);
}

static void check_both(const conv_case *k) {
  check_case(k, CT_FLOAT32, NULL);
  check_case(k, CT_FLOAT64, NULL);
}


START_TEST(conv_plain) {
  check_both(CONV(.n = 2, .c = 3, .h = 5, .w = 6, .m = 4, .kh = 3, .kw = 3));
  check_both(CONV(.n = 1, .c = 1, .h = 4, .w = 4, .m = 1, .kh = 4, .kw = 4)); /* 1x1 output */
  check_both(CONV(.n = 1, .c = 2, .h = 5, .w = 4, .m = 3, .kh = 2, .kw = 3));
  /* 289 output pixels per image: the per-image GEMMs (smaller images share one per group) */
  check_both(CONV(.n = 2, .c = 2, .h = 17, .w = 17, .m = 3, .kh = 3, .kw = 3, .pads = {1, 1},
                  .groups = 1));
  check_both(CONV(.n = 2, .c = 4, .h = 17, .w = 16, .m = 4, .kh = 2, .kw = 3, .pads = {1, 1},
                  .groups = 2));
  /* 49 output pixels, many filters (the pixels pad the kernel's 32 columns to 64); 70 filters
   * leave a short sliver, k = 32 x 25 two blocks */
  check_both(CONV(.n = 1, .c = 32, .h = 7, .w = 7, .m = 64, .kh = 5, .kw = 5, .pads = {2, 2}));
  check_both(CONV(.n = 1, .c = 32, .h = 7, .w = 7, .m = 70, .kh = 5, .kw = 5, .pads = {2, 2}));
}
END_TEST

START_TEST(conv_strides_paddings_dilations) {
  check_both(CONV(.n = 2, .c = 2, .h = 7, .w = 6, .m = 3, .kh = 3, .kw = 3, .sh = 2, .sw = 3));
  check_both(CONV(.n = 1, .c = 2, .h = 5, .w = 5, .m = 2, .kh = 3, .kw = 3, .pads = {1, 2}));
  check_both(CONV(.n = 1, .c = 3, .h = 6, .w = 7, .m = 2, .kh = 3, .kw = 2, .pads = {0, 2, 1, 3},
                  .n_pads = 4, .sh = 2, .sw = 2));
  check_both(CONV(.n = 2, .c = 2, .h = 8, .w = 9, .m = 3, .kh = 3, .kw = 3, .dh = 2, .dw = 3,
                  .pads = {2, 1}));
  /* padding wider than the window reaches: whole output rows see only zeros */
  check_both(CONV(.n = 1, .c = 1, .h = 3, .w = 3, .m = 2, .kh = 2, .kw = 2, .pads = {3, 3},
                  .sh = 2, .sw = 1));
}
END_TEST

START_TEST(conv_one_by_one) {
  check_both(CONV(.n = 3, .c = 4, .h = 3, .w = 5, .m = 6, .kh = 1, .kw = 1));
  check_both(CONV(.n = 2, .c = 4, .h = 3, .w = 5, .m = 6, .kh = 1, .kw = 1, .groups = 2));
  check_both(CONV(.n = 1, .c = 2, .h = 5, .w = 5, .m = 3, .kh = 1, .kw = 1, .sh = 2, .sw = 2));
}
END_TEST

START_TEST(conv_groups_and_depthwise) {
  check_both(CONV(.n = 2, .c = 4, .h = 5, .w = 5, .m = 6, .kh = 3, .kw = 3, .groups = 2,
                  .pads = {1, 1}));
  /* depthwise: one input channel per group, one or two filters each */
  check_both(CONV(.n = 2, .c = 3, .h = 6, .w = 5, .m = 3, .kh = 3, .kw = 3, .groups = 3,
                  .pads = {1, 1}));
  check_both(CONV(.n = 1, .c = 3, .h = 7, .w = 8, .m = 6, .kh = 3, .kw = 2, .groups = 3,
                  .sh = 2, .sw = 3, .dh = 2, .pads = {1, 2, 0, 1}, .n_pads = 4));
  /* two 3x3 filters a group on 7 x 7 planes (float32 on AVX-512: flat, per plane) */
  check_both(CONV(.n = 2, .c = 3, .h = 7, .w = 7, .m = 6, .kh = 3, .kw = 3, .groups = 3,
                  .pads = {1, 1}));
  const conv_case *dw = CONV(.n = 2, .c = 4, .h = 5, .w = 5, .m = 4, .kh = 3, .kw = 3,
                             .groups = 4, .pads = {1, 1});
  check_case(dw, CT_FLOAT32, "depthwise_conv2d");
}
END_TEST

/* SAME pads so that OH = ceil(H / stride) (the extra row at the bottom), VALID pads nothing. */
START_TEST(conv_padding_algorithms) {
  ct_scope *s[2] = {ct_scope_new(), ct_scope_new()};
  const conv_case *same = CONV(.n = 1, .c = 2, .h = 6, .w = 5, .m = 2, .kh = 3, .kw = 3,
                               .sh = 2, .sw = 2, .pads = {0, 1, 1, 1}, .n_pads = 4);
  const conv_case *valid = CONV(.n = 1, .c = 2, .h = 6, .w = 5, .m = 2, .kh = 3, .kw = 3,
                                .sh = 2, .sw = 2, .pads = {7, 7});
  const conv_case *ks[2] = {same, valid};
  const char *alg[2] = {"SAME", "VALID"};
  for (int i = 0; i < 2; i++) {
    put_fn(s[i], "x", CT_FLOAT64, conv_x_dims(ks[i]), data_x);
    put_fn(s[i], "f", CT_FLOAT64, conv_f_dims(ks[i]), data_y);
    ct_op *op = conv_case_op(ks[i], "x", "f", "out");
    ck_assert_int_eq(ct_op_set_attr_string(op, "padding_algorithm", alg[i]), CT_OK);
    run(op, s[i]);
    ct_op_free(op);
    conv_case k = *ks[i];
    if (i == 1) k.pads[0] = k.pads[1] = 0; /* VALID ignores paddings */
    double *want = conv_case_want(&k);
    const double *got = result(s[i], "out", CT_FLOAT64, conv_out_dims(&k));
    for (int64_t j = 0; j < ct_ddim_numel(conv_out_dims(&k)); j++) {
      ck_assert_msg(got[j] == want[j], "%s out[%lld]", alg[i], (long long)j);
    }
    free(want);
    ct_scope_free(s[i]);
  }
  ck_assert(ct_ddim_equal(conv_out_dims(same), CT_DIMS(1, 2, 3, 3)));
}
END_TEST

/* float32 3x3 convolutions at stride 1 with 8 or more channels and filters take Winograd's
 * F(2x2, 3x3) (ops/cpu/winograd.c) when their images go one GEMM each (one image, or 256 output
 * pixels or more, or images of 12 x 12 or more) and have a side under 14 (larger ones:
 * F(4x4, 3x3), below): exact on these
 * small integers like the GEMM path. Odd and even output sizes (a half tile), asymmetric and no
 * padding, a row of more tiles than a block (and than the output step's chunk), several blocks
 * of tile rows, and more filter-channel pairs than the filter transform takes at a time. */
START_TEST(conv_winograd_shapes) {
  check_both(CONV(.n = 2, .c = 8, .h = 17, .w = 13, .m = 8, .kh = 3, .kw = 3, .pads = {1, 1}));
  check_both(CONV(.n = 1, .c = 9, .h = 8, .w = 7, .m = 10, .kh = 3, .kw = 3));
  check_both(CONV(.n = 1, .c = 8, .h = 7, .w = 9, .m = 12, .kh = 3, .kw = 3,
                  .pads = {0, 2, 1, 0}, .n_pads = 4));
  check_both(CONV(.n = 1, .c = 8, .h = 4, .w = 601, .m = 8, .kh = 3, .kw = 3, .pads = {1, 1}));
  check_both(CONV(.n = 3, .c = 8, .h = 100, .w = 12, .m = 9, .kh = 3, .kw = 3, .pads = {1, 1}));
  /* images of fewer than 256 outputs, 12 or more a side: Winograd's path, not one GEMM */
  check_both(CONV(.n = 2, .c = 8, .h = 12, .w = 13, .m = 8, .kh = 3, .kw = 3, .pads = {1, 1}));
  /* 323 filter-channel pairs: the filter transform's runs of 256 and a short one */
  check_both(CONV(.n = 1, .c = 17, .h = 6, .w = 7, .m = 19, .kh = 3, .kw = 3, .pads = {1, 1}));
}
END_TEST

/* float32 filters of 3 x 3 or more on outputs at most 14 wide (and of at most 256 pixels), with
 * 32 filters and 16 channels or more, that Winograd's paths do not take, go through the direct
 * loop (ops/cpu/conv_direct.c) on CPUs with AVX-512: exact on small integers like the GEMM path.
 * 3x3 at stride 1 on batched 7 x 7 images (the sums in two chunks of channels), stride 2 onto
 * 14-wide rows, a last block of 8 filters, asymmetric padding onto 4-wide rows, a 1-wide column,
 * 5x5 filters at stride 2, and (below) wider rows at stride 2 and bands of rows on threads. */
START_TEST(conv_direct_shapes) {
  check_both(CONV(.n = 2, .c = 40, .h = 7, .w = 7, .m = 64, .kh = 3, .kw = 3, .pads = {1, 1}));
  check_both(CONV(.n = 1, .c = 16, .h = 28, .w = 27, .m = 40, .kh = 3, .kw = 3, .sh = 2,
                  .sw = 2, .pads = {1, 1}));
  check_both(CONV(.n = 2, .c = 24, .h = 9, .w = 5, .m = 32, .kh = 3, .kw = 3,
                  .pads = {0, 2, 1, 0}, .n_pads = 4));
  check_both(CONV(.n = 2, .c = 16, .h = 4, .w = 1, .m = 32, .kh = 3, .kw = 3, .pads = {1, 1}));
  check_both(CONV(.n = 1, .c = 16, .h = 15, .w = 15, .m = 33, .kh = 5, .kw = 5, .sh = 2,
                  .sw = 2, .pads = {2, 2}));
  /* wider rows at stride 2 (128 terms an output or more), in pieces of 14: 21 wide in one
   * chunk of channels, 16 wide in two (the partial sums kept between them), and a 7x7 stem on
   * 3 channels onto 19-wide rows */
  check_both(CONV(.n = 1, .c = 16, .h = 40, .w = 41, .m = 40, .kh = 3, .kw = 3, .sh = 2,
                  .sw = 2, .pads = {1, 1}));
  check_both(CONV(.n = 2, .c = 40, .h = 34, .w = 31, .m = 32, .kh = 3, .kw = 3, .sh = 2,
                  .sw = 2, .pads = {1, 1}));
  check_both(CONV(.n = 1, .c = 3, .h = 36, .w = 37, .m = 32, .kh = 7, .kw = 7, .sh = 2,
                  .sw = 2, .pads = {3, 3}));
  /* MobileNetV2's stem: 3x3 on 3 channels (27 terms) at stride 2 onto 21-wide rows */
  check_both(CONV(.n = 1, .c = 3, .h = 40, .w = 41, .m = 32, .kh = 3, .kw = 3, .sh = 2,
                  .sw = 2, .pads = {1, 1}));
  /* few terms an output (at most 96) onto wide rows at stride 2: the rows vectorised over the
   * output pixels (ops/cpu/conv_direct_wide.c): a row of 112 (7 whole vectors); 126 (a piece of
   * 112, then one of 14) with 40 filters (groups of 3 channels, then 2); padding of 2 on the
   * left only and 33 filters (a group of 1); no padding; 5x5 (75 terms) and 4x4 (an even
   * width: the odd half read one column on) */
  check_both(CONV(.n = 1, .c = 3, .h = 5, .w = 224, .m = 32, .kh = 3, .kw = 3, .sh = 2,
                  .sw = 2, .pads = {1, 1}));
  check_both(CONV(.n = 2, .c = 3, .h = 9, .w = 251, .m = 40, .kh = 3, .kw = 3, .sh = 2,
                  .sw = 2, .pads = {1, 1}));
  check_both(CONV(.n = 1, .c = 8, .h = 20, .w = 37, .m = 33, .kh = 3, .kw = 3, .sh = 2,
                  .sw = 2, .pads = {0, 1, 2, 0}, .n_pads = 4));
  check_both(CONV(.n = 1, .c = 3, .h = 9, .w = 64, .m = 32, .kh = 3, .kw = 3, .sh = 2,
                  .sw = 2));
  check_both(CONV(.n = 1, .c = 3, .h = 30, .w = 60, .m = 32, .kh = 5, .kw = 5, .sh = 2,
                  .sw = 2, .pads = {2, 2}));
  check_both(CONV(.n = 1, .c = 3, .h = 21, .w = 50, .m = 32, .kh = 4, .kw = 4, .sh = 2,
                  .sw = 2, .pads = {1, 1}));
  /* filters of more than 1 MiB packed (the rows fetch the next chunk's into L2; the last
   * block's last chunk fetches none past the filters): 320 channels in 10 chunks, 3 blocks,
   * stride 2 onto 5 x 5 */
  check_both(CONV(.n = 1, .c = 320, .h = 9, .w = 9, .m = 72, .kh = 3, .kw = 3, .sh = 2,
                  .sw = 2, .pads = {1, 1}));
  /* at 3 threads, fewer (image, block of 32 filters) items than threads: bands of rows (the
   * stem's one image, one block: 3 bands; two blocks of 5 x 5 filters: 2 bands each, 4 items
   * on 3 threads; 1 x 1 outputs: one band) */
  ct_set_num_threads(3);
  check_both(CONV(.n = 1, .c = 3, .h = 40, .w = 41, .m = 32, .kh = 3, .kw = 3, .sh = 2,
                  .sw = 2, .pads = {1, 1}));
  check_both(CONV(.n = 1, .c = 16, .h = 9, .w = 9, .m = 64, .kh = 5, .kw = 5, .pads = {1, 1}));
  check_both(CONV(.n = 1, .c = 16, .h = 3, .w = 3, .m = 32, .kh = 3, .kw = 3));
  /* filters of more than 1 MiB in 2 blocks of 2 bands of 3 rows, each row a share of the
   * next chunk's filters to fetch */
  check_both(CONV(.n = 1, .c = 480, .h = 11, .w = 11, .m = 40, .kh = 3, .kw = 3, .sh = 2,
                  .sw = 2, .pads = {1, 1}));
  ct_set_num_threads(1);
}
END_TEST

/* Case k in float32 on data that is not exact against conv2d's definition in float64: each
 * output's error within `bound` times the sum of its terms' magnitudes (|x| |w| over the window
 * and channels); the largest such ratio seen. */
static double check_within_bound(const conv_case *k, double bound) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, conv_x_dims(k), data_unit);
  put_fn(s, "f", CT_FLOAT32, conv_f_dims(k), data_unit);
  ct_op *op = conv_case_op(k, "x", "f", "out");
  run(op, s);
  int64_t nx = ct_ddim_numel(conv_x_dims(k)), nf = ct_ddim_numel(conv_f_dims(k));
  int64_t no = ct_ddim_numel(conv_out_dims(k));
  double *x = xmalloc(nx, 8), *f = xmalloc(nf, 8), *ax = xmalloc(nx, 8), *af = xmalloc(nf, 8);
  double *want = xmalloc(no, 8), *mag = xmalloc(no, 8);
  for (int64_t i = 0; i < nx; i++) ax[i] = fabs(x[i] = data_unit(i));
  for (int64_t i = 0; i < nf; i++) af[i] = fabs(f[i] = data_unit(i));
  conv_naive(k, x, f, want);
  conv_naive(k, ax, af, mag);
  const float *got = result(s, "out", CT_FLOAT32, conv_out_dims(k));
  double worst = 0;
  for (int64_t i = 0; i < no; i++) {
    double e = fabs(got[i] - want[i]) / mag[i];
    ck_assert_msg(e <= bound, "out[%lld] = %.9g, want %.9g (sum of magnitudes %.9g)",
                  (long long)i, got[i], want[i], mag[i]);
    if (e > worst) worst = e;
  }
  double *all[] = {x, f, ax, af, want, mag};
  for (size_t i = 0; i < 6; i++) free(all[i]);
  ct_op_free(op);
  ct_scope_free(s);
  return worst;
}

/* On data that is not exact, F(2x2, 3x3)'s error stays within 1e-5 of the sum of the terms'
 * magnitudes. */
START_TEST(conv_winograd_error_is_within_its_bound) {
  double worst = check_within_bound(CONV(.n = 2, .c = 16, .h = 17, .w = 13, .m = 16, .kh = 3,
                                         .kw = 3, .pads = {1, 1}), 1e-5);
  ck_assert(worst > 0); /* not exact: the bound is what is tested */
}
END_TEST

/* F(4x4, 3x3) (ops/cpu/winograd4.c), for outputs of 14 x 14 and more, is not exact even on small
 * integers (its filter transform divides by 6 and 24), and less accurate (its transforms scale
 * terms by up to 25 and 64 before they cancel): within 1e-5 of the terms' magnitudes still (up
 * to 3.4e-6 seen here, where F(2x2, 3x3) gave 5e-8). Output widths of every remainder modulo 4
 * (the last tile's columns partly outside), 14 and 20 rows, asymmetric and no padding, several
 * images (one GEMM each, and batched 14 x 14 ones), several blocks of tile rows (64 + 64
 * channels: 7 rows of 9 tiles a block), rows of more tiles than one unit of the steps, and more
 * filter-channel pairs than the filter transform takes at a time. */
START_TEST(conv_winograd4_error_is_within_its_bound) {
  double worst = check_within_bound(CONV(.n = 2, .c = 8, .h = 20, .w = 21, .m = 16, .kh = 3,
                                         .kw = 3, .pads = {1, 1}), 1e-5);
  ck_assert(worst > 0);
  check_within_bound(CONV(.n = 1, .c = 16, .h = 23, .w = 22, .m = 8, .kh = 3, .kw = 3,
                          .pads = {0, 2, 1, 0}, .n_pads = 4), 1e-5);
  check_within_bound(CONV(.n = 1, .c = 8, .h = 22, .w = 22, .m = 8, .kh = 3, .kw = 3), 1e-5);
  check_within_bound(CONV(.n = 1, .c = 32, .h = 14, .w = 14, .m = 24, .kh = 3, .kw = 3,
                          .pads = {1, 1}), 1e-5);
  check_within_bound(CONV(.n = 3, .c = 32, .h = 14, .w = 14, .m = 24, .kh = 3, .kw = 3,
                          .pads = {1, 1}), 1e-5);
  check_within_bound(CONV(.n = 1, .c = 9, .h = 21, .w = 23, .m = 10, .kh = 3, .kw = 3,
                          .pads = {1, 1}), 1e-5);
  check_within_bound(CONV(.n = 1, .c = 64, .h = 60, .w = 30, .m = 64, .kh = 3, .kw = 3,
                          .pads = {1, 1}), 1e-5);
  check_within_bound(CONV(.n = 1, .c = 8, .h = 20, .w = 601, .m = 8, .kh = 3, .kw = 3,
                          .pads = {1, 1}), 1e-5);
  /* 323 filter-channel pairs: the filter transform's runs of 128 and a short one */
  check_within_bound(CONV(.n = 1, .c = 17, .h = 16, .w = 16, .m = 19, .kh = 3, .kw = 3,
                          .pads = {1, 1}), 1e-5);
}
END_TEST

START_TEST(conv_empty_batch) {
  check_both(CONV(.n = 0, .c = 2, .h = 4, .w = 4, .m = 3, .kh = 3, .kw = 3));
}
END_TEST


START_TEST(pool_max_and_avg) {
  const char *types[2] = {"max", "avg"};
  for (int t = 0; t < 2; t++) {
    for (int ex = 0; ex < 2; ex++) {
      check_both(POOL(.pool = types[t], .exclusive = ex, .n = 2, .c = 3, .h = 6, .w = 6, .kh = 2,
                      .kw = 2, .sh = 2, .sw = 2));
      check_both(POOL(.pool = types[t], .exclusive = ex, .n = 1, .c = 2, .h = 5, .w = 7, .kh = 3,
                      .kw = 3, .sh = 2, .sw = 2, .pads = {1, 1}));
      check_both(POOL(.pool = types[t], .exclusive = ex, .n = 1, .c = 2, .h = 5, .w = 6, .kh = 3,
                      .kw = 2, .sh = 1, .sw = 2, .pads = {1, 0, 0, 1}, .n_pads = 4));
      /* rows wide enough for whole vectors and a remainder, at strides 1, 2 (loads and a
       * permute) and 3 (the stride known at run time) */
      for (int st = 1; st <= 3; st++) {
        check_both(POOL(.pool = types[t], .exclusive = ex, .n = 1, .c = 3, .h = 7, .w = 75,
                        .kh = 3, .kw = 3, .sh = 2, .sw = st, .pads = {1, 1}));
      }
    }
  }
}
END_TEST

START_TEST(pool_ceil_mode_and_global) {
  check_both(POOL(.pool = "max", .n = 1, .c = 2, .h = 5, .w = 5, .kh = 2, .kw = 2, .sh = 2,
                  .sw = 2, .ceil_mode = true));
  check_both(POOL(.pool = "avg", .exclusive = true, .n = 1, .c = 2, .h = 5, .w = 7, .kh = 3,
                  .kw = 3, .sh = 2, .sw = 2, .ceil_mode = true));
  check_both(POOL(.pool = "avg", .exclusive = true, .n = 2, .c = 3, .h = 4, .w = 5, .kh = 1,
                  .kw = 1, .global = true, .pads = {1, 1}));
  check_both(POOL(.pool = "max", .n = 2, .c = 3, .h = 4, .w = 5, .kh = 2, .kw = 2,
                  .global = true));
}
END_TEST

/* Global pooling (whole planes, taken 8 at a time) on values whose sums round: each output is
 * the plane's elements summed (maxed) in memory order, bit for bit; 13 planes (8 + 5), a NaN in
 * one plane of the max, float32 and float64. */
START_TEST(pool_global_sums_each_plane_in_order) {
  for (int dt = 0; dt < 2; dt++) {
    for (int mx = 0; mx < 2; mx++) {
      ct_scope *s = ct_scope_new();
      double x[13 * 49];
      float x32[13 * 49];
      for (int i = 0; i < 13 * 49; i++) x[i] = sin(i * 0.37 + 0.1) * 3.3;
      if (mx) x[5 * 49 + 17] = NAN;
      for (int i = 0; i < 13 * 49; i++) x32[i] = (float)x[i];
      ct_dtype t = dt ? CT_FLOAT64 : CT_FLOAT32;
      put(s, "x", t, CT_DIMS(1, 13, 7, 7), dt ? (const void *)x : (const void *)x32);
      ct_op *op = conv_case_op(POOL(.pool = mx ? "max" : "avg", .n = 1, .c = 13, .h = 7, .w = 7,
                                    .kh = 1, .kw = 1, .global = true), "x", NULL, "out");
      run(op, s);
      const void *o = result(s, "out", t, CT_DIMS(1, 13, 1, 1));
      for (int p = 0; p < 13; p++) {
        float af = mx ? -INFINITY : 0;
        double ad = mx ? -INFINITY : 0;
        for (int i = 0; i < 49; i++) {
          float vf = (float)x[p * 49 + i];
          double vd = x[p * 49 + i];
          if (mx) {
            af = vf != vf ? vf : (vf > af ? vf : af);
            ad = vd != vd ? vd : (vd > ad ? vd : ad);
          } else {
            af += vf;
            ad += vd;
          }
        }
        double want = dt ? (mx ? ad : ad / 49) : (double)(mx ? af : af / 49.0f);
        double got = get_elem(o, t, p);
        ck_assert_msg(got == want || (isnan(got) && isnan(want)),
                      "%s %s plane %d: %.17g, expected %.17g", mx ? "max" : "avg",
                      ct_dtype_name(t), p, got, want);
      }
      ct_op_free(op);
      ct_scope_free(s);
    }
  }
}
END_TEST

/* Global pooling of 1-D [2, 3, 4] and 3-D [1, 2, 2, 2, 2] data: each channel's elements, Out of
 * X's rank with 1 per spatial dim; its gradient spreads Out@GRAD over them (a mean's / count). */
START_TEST(pool_global_of_1d_and_3d_data) {
  for (int rank = 3; rank <= 5; rank += 2) {
    for (int mx = 0; mx < 2; mx++) {
      ct_scope *s = ct_scope_new();
      const ct_ddim xd = rank == 3 ? CT_DIMS(2, 3, 4) : CT_DIMS(1, 2, 2, 2, 2);
      const int64_t planes = rank == 3 ? 6 : 2, per = rank == 3 ? 4 : 8;
      float x[24];
      for (int i = 0; i < 24; i++) x[i] = (float)((i * 7) % 11);
      put(s, "x", CT_FLOAT32, xd, x);
      ct_op *op = new_op("pool2d");
      ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
      ck_assert_int_eq(ct_op_set_output(op, "Out", "out"), CT_OK);
      ck_assert_int_eq(ct_op_set_attr_string(op, "pooling_type", mx ? "max" : "avg"), CT_OK);
      ck_assert_int_eq(ct_op_set_attr_bool(op, "global_pooling", true), CT_OK);
      run(op, s);
      ct_ddim od = xd;
      for (int k = 2; k < rank; k++) od.d[k] = 1;
      const float *o = result(s, "out", CT_FLOAT32, od);
      for (int64_t p = 0; p < planes; p++) {
        float want = 0;
        for (int64_t i = 0; i < per; i++) {
          const float v = x[p * per + i];
          want = mx ? (v > want ? v : want) : want + v;
        }
        if (!mx) want /= (float)per;
        ck_assert_msg(o[p] == want, "rank %d %s plane %lld: %g, expected %g", rank,
                      mx ? "max" : "avg", (long long)p, o[p], want);
      }
      if (!mx) { /* the gradient of the mean: Out@GRAD / count on every element */
        float dout[6];
        for (int p = 0; p < 6; p++) dout[p] = (float)(p + 1) * (float)per;
        put(s, "dout", CT_FLOAT32, od, dout);
        ct_op *g = new_op("pool2d_grad");
        ck_assert_int_eq(ct_op_set_input(g, "X", "x"), CT_OK);
        ck_assert_int_eq(ct_op_set_input(g, "Out", "out"), CT_OK);
        ck_assert_int_eq(ct_op_set_input(g, "Out@GRAD", "dout"), CT_OK);
        ck_assert_int_eq(ct_op_set_output(g, "X@GRAD", "dx"), CT_OK);
        ck_assert_int_eq(ct_op_set_attr_string(g, "pooling_type", "avg"), CT_OK);
        ck_assert_int_eq(ct_op_set_attr_bool(g, "global_pooling", true), CT_OK);
        run(g, s);
        const float *dx = result(s, "dx", CT_FLOAT32, xd);
        for (int64_t i = 0; i < planes * per; i++) ck_assert(dx[i] == (float)(i / per + 1));
        ct_op_free(g);
      }
      ct_op_free(op);
      ct_scope_free(s);
    }
  }
}
END_TEST

/* max ignores the padding even when every value is negative; NaN wins its window. */
START_TEST(pool_max_negative_and_nan) {
  ct_scope *s = ct_scope_new();
  double x[4] = {-5, -2, NAN, -1};
  put(s, "x", CT_FLOAT64, CT_DIMS(1, 1, 2, 2), x);
  ct_op *op = conv_case_op(POOL(.pool = "max", .n = 1, .c = 1, .h = 2, .w = 2, .kh = 2,
                                .kw = 2, .pads = {1, 1}, .sh = 2, .sw = 2), "x", NULL, "out");
  run(op, s);
  const double *o = result(s, "out", CT_FLOAT64, CT_DIMS(1, 1, 2, 2));
  ck_assert(o[0] == -5 && o[1] == -2 && isnan(o[2]) && o[3] == -1);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* Max pooling at stride 2 (the vector path for float32 on AVX-512) takes each window's elements
 * row by row, left to right, a larger one or a NaN replacing the running one: on rows of signed
 * zeros, equal values and NaNs of two payloads, every output's bits are that rule's (the first
 * of equal zeros stays, the last NaN wins). Rows of 41 (19 inner outputs: a whole vector and a
 * masked one), of 140 (more than two vectors), of 35 and 67 (16 and 32 inner outputs: whole
 * vectors whose last window ends one element past their 32), 3x3 and 2x3 windows. */
static float pool_rule(const float *x, int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t oy,
                       int64_t ox) {
  float acc = -INFINITY;
  for (int64_t iy = 2 * oy - 1; iy < 2 * oy - 1 + kh; iy++) {
    for (int64_t ix = 2 * ox - 1; ix < 2 * ox - 1 + kw; ix++) {
      if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
      float v = x[iy * w + ix];
      acc = v != v ? v : (v > acc ? v : acc);
    }
  }
  return acc;
}

/* Image x [1, 1, h, w] max-pooled by windows kh x kw at stride 2, padding 1: every output's
 * bits pool_rule's. */
static void check_pool_rule(const float *x, int64_t h, int64_t w, int64_t kh, int64_t kw) {
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT32, CT_DIMS(1, 1, h, w), x);
  const conv_case *pc = POOL(.pool = "max", .n = 1, .c = 1, .h = h, .w = w, .kh = kh, .kw = kw,
                             .pads = {1, 1}, .sh = 2, .sw = 2);
  ct_op *op = conv_case_op(pc, "x", NULL, "out");
  run(op, s);
  const int64_t oh = conv_oh(pc), ow = conv_ow(pc);
  const float *o = result(s, "out", CT_FLOAT32, CT_DIMS(1, 1, oh, ow));
  for (int64_t oy = 0; oy < oh; oy++) {
    for (int64_t ox = 0; ox < ow; ox++) {
      float want = pool_rule(x, h, w, kh, kw, oy, ox), got = o[oy * ow + ox];
      ck_assert_msg(memcmp(&want, &got, 4) == 0, "width %lld, kw %lld, out (%lld, %lld)",
                    (long long)w, (long long)kw, (long long)oy, (long long)ox);
    }
  }
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(pool_max_stride2_takes_the_window_in_order) {
  uint32_t nan_a = 0x7fc00001u, nan_b = 0xffc00002u;
  float na, nb;
  memcpy(&na, &nan_a, 4);
  memcpy(&nb, &nan_b, 4);
  /* windows of 6 or 9 elements: mostly signed zeros and smaller values (a 2 in one in seven),
   * then NaNs of two payloads, two in seven, then a NaN one element in 61 (rows of windows
   * without NaN, which the 3-wide kernel takes by their max alone, next to rows with one) */
  const float pick[2][7] = {{-0.0f, 0.0f, -1.0f, -0.0f, 0.0f, -3.0f, 2.0f},
                            {-0.0f, 0.0f, -1.0f, na, -0.0f, 0.0f, nb}};
  const int64_t widths[4] = {41, 140, 35, 67}, kws[2] = {3, 2};
  for (int k = 0; k < 24; k++) {
    const int64_t h = 5, w = widths[k / 3 % 4], kw = kws[k / 12];
    float *x = xmalloc(h * w, sizeof(float));
    for (int64_t i = 0; i < h * w; i++) {
      const int set = k % 3;
      x[i] = pick[set == 1][(i * 7919 + i / 5) % 7];
      if (set == 2 && i % 61 == 17) x[i] = i % 2 ? na : nb;
    }
    check_pool_rule(x, h, w, 3, kw);
    free(x);
  }
  /* one NaN in a 5 x 67 image at each column of its middle row in turn: among them the one
   * element a 3-wide vector's last window reads past its 32 */
  float *x = xmalloc(5 * 67, sizeof(float));
  for (int64_t c = 0; c < 67; c++) {
    for (int64_t i = 0; i < 5 * 67; i++) x[i] = pick[0][(i * 7919 + i / 5) % 7];
    x[2 * 67 + c] = na;
    check_pool_rule(x, 5, 67, 3, 3);
  }
  free(x);
}
END_TEST

/* ---- Refusals ------------------------------------------------------------------------------ */

static ct_scope *conv_scope(ct_ddim x, ct_ddim f) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, x, data_x);
  put_fn(s, "f", CT_FLOAT32, f, data_y);
  return s;
}

START_TEST(conv_refuses_bad_shapes) {
  const conv_case *k = CONV(.n = 1, .c = 4, .h = 5, .w = 5, .m = 4, .kh = 3, .kw = 3);
  ct_op *op = conv_case_op(k, "x", "f", "out");
  ct_scope *s = conv_scope(CT_DIMS(4, 5, 5), CT_DIMS(4, 4, 3, 3));
  run_fails(op, s, CT_ERR_SHAPE, "conv2d", "Input", "'x'", "rank 4", NULL);
  ct_scope_free(s);
  s = conv_scope(CT_DIMS(1, 4, 5, 5), CT_DIMS(4, 3, 3, 3));
  run_fails(op, s, CT_ERR_SHAPE, "Filter variable 'f'", "[M, C/groups, KH, KW]", NULL);
  ct_scope_free(s);
  s = conv_scope(CT_DIMS(1, 4, 2, 5), CT_DIMS(4, 4, 3, 3));
  run_fails(op, s, CT_ERR_SHAPE, "smaller than the 3x3 window", NULL);
  ct_scope_free(s);
  ck_assert_int_eq(ct_op_set_attr_int(op, "groups", 3), CT_OK);
  s = conv_scope(CT_DIMS(1, 4, 5, 5), CT_DIMS(4, 4, 3, 3));
  run_fails(op, s, CT_ERR_SHAPE, "groups 3", NULL);
  ck_assert_int_eq(ct_op_set_attr_int(op, "groups", 0), CT_OK);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "'groups' is 0", NULL);
  ct_scope_free(s);
  ct_op_free(op);
}
END_TEST

START_TEST(conv_refuses_bad_attributes) {
  const conv_case *k = CONV(.n = 1, .c = 2, .h = 5, .w = 5, .m = 2, .kh = 3, .kw = 3);
  ct_scope *s = conv_scope(CT_DIMS(1, 2, 5, 5), CT_DIMS(2, 2, 3, 3));
  ct_op *op = conv_case_op(k, "x", "f", "out");
  int64_t three[3] = {1, 1, 1}, zero[2] = {0, 1}, neg[2] = {-1, 0};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "strides", three, 3), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "'strides' has 3 values", NULL);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "strides", zero, 2), CT_OK);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "'strides' is [0, 1]", NULL);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "strides", three, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "paddings", neg, 2), CT_OK);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "'paddings'", NULL);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "paddings", three, 3), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "'paddings' has 3 values", NULL);
  ck_assert_int_eq(ct_op_set_attr_string(op, "padding_algorithm", "FULL"), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "\"FULL\"", "SAME", NULL);
  ck_assert_int_eq(ct_op_set_attr_string(op, "data_format", "NHWC"), CT_OK);
  run_fails(op, s, CT_ERR_UNSUPPORTED, "\"NHWC\"", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(conv_refuses_mixed_dtypes) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(1, 1, 3, 3), data_x);
  put_fn(s, "f", CT_FLOAT64, CT_DIMS(1, 1, 2, 2), data_y);
  ct_op *op = conv_case_op(CONV(.n = 1, .c = 1, .h = 3, .w = 3, .m = 1, .kh = 2, .kw = 2), "x",
                           "f", "out");
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "Filter", "'f'", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(pool_refuses_bad_attributes) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(1, 1, 4, 4), data_x);
  ct_op *op = conv_case_op(POOL(.pool = "max", .n = 1, .c = 1, .h = 4, .w = 4, .kh = 2,
                                .kw = 2), "x", NULL, "out");
  ck_assert_int_eq(ct_op_set_attr_string(op, "pooling_type", "min"), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "pool2d", "\"min\"", NULL);
  ck_assert_int_eq(ct_op_set_attr_string(op, "pooling_type", "avg"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "adaptive", true), CT_OK);
  run_fails(op, s, CT_ERR_UNSUPPORTED, "adaptive", NULL);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "adaptive", false), CT_OK);
  int64_t big[2] = {5, 5};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "ksize", big, 2), CT_OK);
  run_fails(op, s, CT_ERR_SHAPE, "X variable 'x'", "5x5 window", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("ops_conv");
  CT_ADD_TEST(s, conv_plain);
  CT_ADD_TEST(s, conv_strides_paddings_dilations);
  CT_ADD_TEST(s, conv_one_by_one);
  CT_ADD_TEST(s, conv_groups_and_depthwise);
  CT_ADD_TEST(s, conv_padding_algorithms);
  CT_ADD_TEST(s, conv_winograd_shapes);
  CT_ADD_TEST(s, conv_direct_shapes);
  CT_ADD_TEST(s, conv_winograd_error_is_within_its_bound);
  CT_ADD_TEST(s, conv_winograd4_error_is_within_its_bound);
  CT_ADD_TEST(s, conv_empty_batch);
  CT_ADD_TEST(s, pool_max_and_avg);
  CT_ADD_TEST(s, pool_ceil_mode_and_global);
  CT_ADD_TEST(s, pool_max_negative_and_nan);
  CT_ADD_TEST(s, pool_max_stride2_takes_the_window_in_order);
  CT_ADD_TEST(s, pool_global_sums_each_plane_in_order);
  CT_ADD_TEST(s, pool_global_of_1d_and_3d_data);
  CT_ADD_TEST(s, conv_refuses_bad_shapes);
  CT_ADD_TEST(s, conv_refuses_bad_attributes);
  CT_ADD_TEST(s, conv_refuses_mixed_dtypes);
  CT_ADD_TEST(s, pool_refuses_bad_attributes);
  return s;
}

CT_TEST_MAIN(make_suite)
