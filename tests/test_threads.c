/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the CPU kernels' threads: ct_set_num_threads / ct_get_num_threads, and that every
 * kernel family split across threads gives the same bytes at 1, 2, 3 and 7 threads (sizes large
 * enough to split; values whose sums round differently in another order), that the split ones
 * give the serial results (elementwise exactly as C computes them; transpose as a naive gather),
 * and that kernels run from several threads at once, or in a forked child, stay right. The
 * helpers are in threads_util.h and op_util.h; the training kernels are in test_threads_train.c. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <corten/corten.h>

#include "conv_util.h"
#include "threads_util.h"

static int cores(void) {
  cpu_set_t set;
  ck_assert_int_eq(sched_getaffinity(0, sizeof set, &set), 0);
  return CPU_COUNT(&set);
}

/* ---- The setting ----------------------------------------------------------------------------- */

START_TEST(default_is_one_thread_per_core) {
  ck_assert_int_eq(ct_get_num_threads(), cores());
}
END_TEST

START_TEST(set_then_get) {
  ct_set_num_threads(3);
  ck_assert_int_eq(ct_get_num_threads(), 3);
  ct_set_num_threads(1);
  ck_assert_int_eq(ct_get_num_threads(), 1);
  ct_set_num_threads(0);
  ck_assert_int_eq(ct_get_num_threads(), cores());
}
END_TEST

START_TEST(negative_counts_as_default_and_large_is_capped) {
  ct_set_num_threads(-4);
  ck_assert_int_eq(ct_get_num_threads(), cores());
  ct_set_num_threads(100000);
  ck_assert_int_eq(ct_get_num_threads(), 256);
  ct_set_num_threads(0);
}
END_TEST

/* ---- Elementwise ----------------------------------------------------------------------------- */

START_TEST(add_is_exact_at_every_count) {
  const int64_t n = 300001;
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(n), data_mixed);
  put_fn(s, "y", CT_FLOAT32, CT_DIMS(n), data_unary);
  ct_op *op = op_xy("elementwise_add", "x", "y", "out");
  check_same_at_counts(s, op, "out");
  const float *o = result(s, "out", CT_FLOAT32, CT_DIMS(n));
  const float *x = ct_tensor_data(tensor_of(s, "x"), CT_FLOAT32);
  const float *y = ct_tensor_data(tensor_of(s, "y"), CT_FLOAT32);
  for (int64_t i = 0; i < n; i++) ck_assert(o[i] == x[i] + y[i]);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(broadcast_mul_is_exact_at_every_count) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT64, CT_DIMS(700, 301), data_mixed);
  put_fn(s, "y", CT_FLOAT64, CT_DIMS(301), data_unary);
  ct_op *op = op_xy("elementwise_mul", "x", "y", "out");
  check_same_at_counts(s, op, "out");
  const double *o = result(s, "out", CT_FLOAT64, CT_DIMS(700, 301));
  for (int64_t i = 0; i < 700 * 301; i++) ck_assert(o[i] == data_mixed(i) * data_unary(i % 301));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(unary_scale_cast_and_sum_at_every_count) {
  const int64_t n = 200003;
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(n), data_mixed);
  const char *types[] = {"exp", "sigmoid", "relu", "scale"};
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
    ct_op *op = op_x(types[k], "x", "out");
    check_same_at_counts(s, op, "out");
    ct_op_free(op);
  }
  ct_op *cast = op_x("cast", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_int(cast, "dtype", CT_FLOAT64), CT_OK);
  check_same_at_counts(s, cast, "out");
  const double *o = result(s, "out", CT_FLOAT64, CT_DIMS(n));
  for (int64_t i = 0; i < n; i++) ck_assert(o[i] == data_mixed(i));
  ct_op_free(cast);
  const char *xs[] = {"x", "x", "x"};
  ct_op *sum = op_many("sum", xs, 3, "out");
  check_same_at_counts(s, sum, "out");
  ct_op_free(sum);
  ct_scope_free(s);
}
END_TEST

/* ---- Reductions ------------------------------------------------------------------------------ */

START_TEST(reduce_sum_of_all_at_every_count) { check_reduce_sum(CT_DIMS(777, 1001), NULL, 0); }
END_TEST

START_TEST(reduce_sum_of_rows_and_columns_at_every_count) {
  check_reduce_sum(CT_DIMS(3000, 101), (const int64_t[]){1}, 1);
  check_reduce_sum(CT_DIMS(3000, 101), (const int64_t[]){0}, 1);
  check_reduce_sum(CT_DIMS(30, 70, 90), (const int64_t[]){0, 2}, 2);
  check_reduce_sum(CT_DIMS(2, 300000), (const int64_t[]){1}, 1);
}
END_TEST

START_TEST(mean_at_every_count) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT64, CT_DIMS(5, 100003), data_mixed64);
  ct_op *op = op_x("mean", "x", "out");
  check_same_at_counts(s, op, "out");
  double want = 0;
  for (int64_t i = 0; i < 5 * 100003; i++) want += data_mixed64(i);
  want /= 5 * 100003;
  double got = *(const double *)result(s, "out", CT_FLOAT64, CT_DIMS());
  ck_assert_msg(fabs(got - want) <= 1e-12 * fabs(want), "%.17g, expected %.17g", got, want);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(softmax_and_grad_along_each_axis_at_every_count) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(300, 1000), data_mixed);
  for (int64_t axis = 0; axis < 2; axis++) {
    ct_op *op = op_x("softmax", "x", "out");
    ck_assert_int_eq(ct_op_set_attr_int(op, "axis", axis), CT_OK);
    check_same_at_counts(s, op, "out");
    ct_op_free(op);
    op = new_op("softmax_grad"); /* Out: x, Out@GRAD: x (any values do) */
    ck_assert_int_eq(ct_op_set_input(op, "Out", "x"), CT_OK);
    ck_assert_int_eq(ct_op_set_input(op, "Out@GRAD", "x"), CT_OK);
    ck_assert_int_eq(ct_op_set_output(op, "X@GRAD", "dx"), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_int(op, "axis", axis), CT_OK);
    check_same_at_counts(s, op, "dx");
    ct_op_free(op);
  }
  ct_scope_free(s);
}
END_TEST

/* ---- matmul ----------------------------------------------------------------------------------- */

/* matmul X [m,k] (transposed: [k,m]) by Y [k,n] and its gradient, in dt: the same bytes at every
 * count. */
static void check_matmul_at_counts(ct_dtype dt, int64_t m, int64_t n, int64_t k, bool tx) {
  ct_scope *s = ct_scope_new();
  double (*f)(int64_t) = dt == CT_FLOAT32 ? data_mixed : data_mixed64;
  put_fn(s, "x", dt, tx ? CT_DIMS(k, m) : CT_DIMS(m, k), f);
  put_fn(s, "y", dt, CT_DIMS(k, n), f);
  put_fn(s, "d", dt, CT_DIMS(m, n), f);
  ct_op *op = op_xy("matmul", "x", "y", "out");
  ck_assert_int_eq(ct_op_set_attr_bool(op, "transpose_x", tx), CT_OK);
  check_same_at_counts(s, op, "out");
  ct_op_free(op);
  op = new_op("matmul_grad");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Y", "y"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Out@GRAD", "d"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "X@GRAD", "dx"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Y@GRAD", "dy"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "transpose_x", tx), CT_OK);
  const char *outs[] = {"dx", "dy"};
  check_outs_same_at_counts(s, op, outs, 2);
  ct_op_free(op);
  ct_scope_free(s);
}

/* Shapes whose products OpenBLAS 0.3.21 summed differently at 1 and 2 threads (corten's GEMM
 * splits C, never a sum), a narrow one (computed as C^T), a square one. */
START_TEST(matmul_and_grad_at_every_count) {
  check_matmul_at_counts(CT_FLOAT32, 1000, 37, 333, false);
  check_matmul_at_counts(CT_FLOAT32, 129, 130, 2050, true);
  check_matmul_at_counts(CT_FLOAT64, 300, 300, 300, false);
}
END_TEST

/* ---- conv2d, depthwise conv2d and pool2d ------------------------------------------------------ */

/* conv2d and conv2d_grad of case k in dt give the same bytes at every count. */
static void check_conv_at_counts(const conv_case *k, ct_dtype dt) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", dt, conv_x_dims(k), dt == CT_FLOAT32 ? data_mixed : data_mixed64);
  put_fn(s, "f", dt, conv_f_dims(k), dt == CT_FLOAT32 ? data_mixed : data_mixed64);
  put_fn(s, "d", dt, conv_out_dims(k), dt == CT_FLOAT32 ? data_mixed : data_mixed64);
  ct_op *op = conv_case_op(k, "x", "f", "out");
  check_same_at_counts(s, op, "out");
  ct_op_free(op);
  op = conv_grad_op(k);
  check_same_at_counts(s, op, "dx");
  check_same_at_counts(s, op, "df");
  ct_op_free(op);
  ct_scope_free(s);
}

/* Images of 400 output pixels (one GEMM each, split across images), two groups. */
START_TEST(conv2d_and_grad_at_every_count) {
  const conv_case *k = CONV(.n = 9, .c = 4, .h = 20, .w = 20, .m = 6, .kh = 3, .kw = 3,
                            .groups = 2, .pads = {1, 1});
  check_conv_at_counts(k, CT_FLOAT32);
  check_conv_at_counts(k, CT_FLOAT64);
  const conv_case *one = CONV(.n = 8, .c = 3, .h = 20, .w = 20, .m = 5, .kh = 1, .kw = 1);
  check_conv_at_counts(one, CT_FLOAT32); /* 1x1: no col */
  /* Winograd's paths (float32, 3x3, 8 channels), split 1 to 6 ways: F(2x2, 3x3) on 3 images
   * of 2 blocks, F(4x4, 3x3) (outputs of 14 x 14 and more) on 3 images of one block and on 2 of
   * 3 blocks (64 + 64 channels: 7 tile rows a block). */
  const conv_case *wino = CONV(.n = 3, .c = 8, .h = 60, .w = 12, .m = 8, .kh = 3, .kw = 3,
                               .pads = {1, 1});
  check_conv_at_counts(wino, CT_FLOAT32);
  const conv_case *wino4 = CONV(.n = 3, .c = 8, .h = 44, .w = 24, .m = 8, .kh = 3, .kw = 3,
                                .pads = {1, 1});
  check_conv_at_counts(wino4, CT_FLOAT32);
  const conv_case *wino4b = CONV(.n = 2, .c = 64, .h = 60, .w = 30, .m = 64, .kh = 3, .kw = 3,
                                 .pads = {1, 1});
  check_conv_at_counts(wino4b, CT_FLOAT32);
  /* images of fewer than 256 outputs (which im2col would batch) through both forms */
  const conv_case *wino_b2 = CONV(.n = 4, .c = 8, .h = 12, .w = 13, .m = 8, .kh = 3, .kw = 3,
                                  .pads = {1, 1});
  check_conv_at_counts(wino_b2, CT_FLOAT32);
  const conv_case *wino_b4 = CONV(.n = 4, .c = 16, .h = 14, .w = 14, .m = 8, .kh = 3, .kw = 3,
                                  .pads = {1, 1});
  check_conv_at_counts(wino_b4, CT_FLOAT32);
  /* Small images batched into one GEMM per group (225 output pixels), their unfolding and
   * scattering split across the threads by image (enough work an image for a piece each);
   * two groups. */
  const conv_case *small = CONV(.n = 5, .c = 64, .h = 15, .w = 15, .m = 16, .kh = 3, .kw = 3,
                                .groups = 2, .pads = {1, 1});
  check_conv_at_counts(small, CT_FLOAT32);
  check_conv_at_counts(small, CT_FLOAT64);
  /* The direct loop for small output widths: 3 images of 3 blocks of filters (the last of 6),
   * and one image's 3 blocks over more threads than blocks. */
  const conv_case *direct = CONV(.n = 3, .c = 40, .h = 7, .w = 7, .m = 70, .kh = 3, .kw = 3,
                                 .pads = {1, 1});
  check_conv_at_counts(direct, CT_FLOAT32);
  const conv_case *direct1 = CONV(.n = 1, .c = 40, .h = 14, .w = 14, .m = 70, .kh = 3, .kw = 3,
                                  .sh = 2, .sw = 2, .pads = {1, 1});
  check_conv_at_counts(direct1, CT_FLOAT32);
  const conv_case *stem = CONV(.n = 2, .c = 3, .h = 36, .w = 37, .m = 40, .kh = 7, .kw = 7,
                               .sh = 2, .sw = 2, .pads = {3, 3});
  check_conv_at_counts(stem, CT_FLOAT32); /* rows of 19 in pieces of 14 */
  /* One image of one block, and of two (F(2x2, 3x3)), and of one (F(4x4, 3x3)): fewer blocks
   * than threads, each block split over them (channels, products, planes). */
  const conv_case *wino1 = CONV(.n = 1, .c = 16, .h = 14, .w = 12, .m = 24, .kh = 3, .kw = 3,
                                .pads = {1, 1});
  check_conv_at_counts(wino1, CT_FLOAT32);
  const conv_case *wino2 = CONV(.n = 1, .c = 9, .h = 100, .w = 12, .m = 11, .kh = 3, .kw = 3,
                                .pads = {1, 1});
  check_conv_at_counts(wino2, CT_FLOAT32);
  const conv_case *wino4_1 = CONV(.n = 1, .c = 9, .h = 44, .w = 24, .m = 11, .kh = 3, .kw = 3,
                                  .pads = {1, 1});
  check_conv_at_counts(wino4_1, CT_FLOAT32);
  /* A layer wide enough (M C > 8192) for Filter@GRAD's sums to go through the GEMM: 9 images
   * in 8 chunks. */
  const conv_case *wide = CONV(.n = 9, .c = 96, .h = 12, .w = 22, .m = 90, .kh = 3, .kw = 3,
                               .pads = {1, 1});
  check_conv_at_counts(wide, CT_FLOAT32);
}
END_TEST

/* The split forward path gives conv2d's definition. */
START_TEST(split_conv2d_is_the_definition) {
  const conv_case *k = CONV(.n = 7, .c = 2, .h = 17, .w = 18, .m = 3, .kh = 3, .kw = 2,
                            .sh = 1, .sw = 2, .pads = {1, 0});
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT64, conv_x_dims(k), data_mixed64);
  put_fn(s, "f", CT_FLOAT64, conv_f_dims(k), data_mixed64);
  ct_op *op = conv_case_op(k, "x", "f", "out");
  ct_set_num_threads(3);
  run(op, s);
  ct_set_num_threads(0);
  int64_t nx = ct_ddim_numel(conv_x_dims(k)), nf = ct_ddim_numel(conv_f_dims(k));
  int64_t no = ct_ddim_numel(conv_out_dims(k));
  double *x = xmalloc(nx, sizeof(double)), *f = xmalloc(nf, sizeof(double));
  double *want = xmalloc(no, sizeof(double));
  for (int64_t i = 0; i < nx; i++) x[i] = data_mixed64(i);
  for (int64_t i = 0; i < nf; i++) f[i] = data_mixed64(i);
  conv_naive(k, x, f, want);
  const double *got = result(s, "out", CT_FLOAT64, conv_out_dims(k));
  for (int64_t i = 0; i < no; i++) {
    ck_assert_msg(fabs(got[i] - want[i]) <= 1e-9 * (1 + fabs(want[i])), "out[%lld] %.17g, want %.17g",
                  (long long)i, got[i], want[i]);
  }
  free(x);
  free(f);
  free(want);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(depthwise_conv2d_and_grad_at_every_count) {
  const conv_case *k = CONV(.n = 4, .c = 48, .h = 16, .w = 16, .m = 96, .kh = 3, .kw = 3,
                            .groups = 48, .pads = {1, 1});
  check_conv_at_counts(k, CT_FLOAT32);
}
END_TEST

START_TEST(pool2d_and_grad_at_every_count) {
  const char *types[2] = {"max", "avg"};
  for (int t = 0; t < 2; t++) {
    const conv_case *k = POOL(.pool = types[t], .n = 4, .c = 32, .h = 30, .w = 30, .kh = 3,
                              .kw = 3, .sh = 2, .sw = 2, .pads = {1, 1});
    ct_scope *s = ct_scope_new();
    put_fn(s, "x", CT_FLOAT32, conv_x_dims(k), data_mixed);
    ct_op *op = conv_case_op(k, "x", NULL, "out");
    check_same_at_counts(s, op, "out");
    ct_op_free(op);
    op = new_op("pool2d_grad");
    ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
    ck_assert_int_eq(ct_op_set_input(op, "Out", "out"), CT_OK);
    ck_assert_int_eq(ct_op_set_input(op, "Out@GRAD", "out"), CT_OK);
    ck_assert_int_eq(ct_op_set_output(op, "X@GRAD", "dx"), CT_OK);
    int64_t ks[2] = {3, 3}, st[2] = {2, 2};
    ck_assert_int_eq(ct_op_set_attr_string(op, "pooling_type", types[t]), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_ints(op, "ksize", ks, 2), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_ints(op, "strides", st, 2), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_ints(op, "paddings", k->pads, 2), CT_OK);
    check_same_at_counts(s, op, "dx");
    ct_op_free(op);
    ct_scope_free(s);
  }
}
END_TEST

/* ---- Transpose and random -------------------------------------------------------------------- */

START_TEST(transpose_is_a_gather_at_every_count) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(513, 1031), data_iota);
  ct_op *op = op_x("transpose", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "axis", (const int64_t[]){1, 0}, 2), CT_OK);
  check_same_at_counts(s, op, "out");
  const float *o = result(s, "out", CT_FLOAT32, CT_DIMS(1031, 513));
  for (int64_t i = 0; i < 1031; i++) {
    for (int64_t j = 0; j < 513; j++) ck_assert(o[i * 513 + j] == (float)(j * 1031 + i));
  }
  ct_op_free(op);
  put_fn(s, "y", CT_FLOAT64, CT_DIMS(20, 70, 90), data_iota);
  op = op_x("transpose", "y", "out");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "axis", (const int64_t[]){2, 0, 1}, 3), CT_OK);
  check_same_at_counts(s, op, "out");
  const double *d = result(s, "out", CT_FLOAT64, CT_DIMS(90, 20, 70));
  for (int64_t i = 0; i < 90 * 20 * 70; i++) {
    int64_t c = i / 1400, a = i / 70 % 20, b = i % 70;
    ck_assert(d[i] == (double)((a * 70 + b) * 90 + c));
  }
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(random_at_every_count) {
  ct_scope *s = ct_scope_new();
  const char *types[] = {"uniform_random", "gaussian_random"};
  for (size_t k = 0; k < 2; k++) {
    ct_op *op = op_out(types[k], "out");
    ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", (const int64_t[]){300001}, 1), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_int(op, "seed", 7), CT_OK);
    check_same_at_counts(s, op, "out");
    ct_op_free(op);
  }
  ct_scope_free(s);
}
END_TEST

/* ---- Several callers ------------------------------------------------------------------------- */

static void *add_in_own_scope(void *arg) {
  (void)arg;
  const int64_t n = 100000;
  ct_scope *s = ct_scope_new();
  float *x = malloc((size_t)n * sizeof *x);
  for (int64_t i = 0; i < n; i++) x[i] = (float)data_mixed(i);
  if (ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, "x")), x, CT_DIMS(n), CT_FLOAT32,
                          ct_cpu()) != CT_OK) {
    return "set_value";
  }
  ct_op *op = ct_op_new("elementwise_add");
  ct_op_set_input(op, "X", "x");
  ct_op_set_input(op, "Y", "x");
  ct_op_set_output(op, "Out", "out");
  const char *bad = NULL;
  for (int r = 0; r < 20 && bad == NULL; r++) {
    if (ct_op_run(op, s, ct_cpu()) != CT_OK) bad = "run";
    const float *o = ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(s, "out")), CT_FLOAT32);
    for (int64_t i = 0; bad == NULL && i < n; i++) {
      if (o[i] != x[i] + x[i]) bad = "a wrong sum";
    }
  }
  ct_op_free(op);
  ct_scope_free(s);
  free(x);
  return (void *)bad;
}

START_TEST(kernels_from_several_threads_at_once) {
  ct_set_num_threads(3);
  pthread_t th[4];
  for (int i = 0; i < 4; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, add_in_own_scope, NULL), 0);
  for (int i = 0; i < 4; i++) {
    void *bad;
    ck_assert_int_eq(pthread_join(th[i], &bad), 0);
    ck_assert_msg(bad == NULL, "thread %d: %s", i, (const char *)bad);
  }
  ct_set_num_threads(0);
}
END_TEST

/* ThreadSanitizer does not support starting threads in the child of a multi-threaded fork. */
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif

START_TEST(a_forked_child_runs_split_kernels) {
  ct_set_num_threads(2);
  ck_assert_ptr_null(add_in_own_scope(NULL)); /* starts the parent's workers */
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    if (UNDER_TSAN) _exit(0); /* the check runs in the other builds */
    _exit(add_in_own_scope(NULL) == NULL ? 0 : 1);
  }
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ct_set_num_threads(0);
}
END_TEST

static Suite *threads_suite(void) {
  Suite *s = suite_create("threads");
  CT_ADD_TEST(s, default_is_one_thread_per_core);
  CT_ADD_TEST(s, set_then_get);
  CT_ADD_TEST(s, negative_counts_as_default_and_large_is_capped);
  CT_ADD_TEST(s, add_is_exact_at_every_count);
  CT_ADD_TEST(s, broadcast_mul_is_exact_at_every_count);
  CT_ADD_TEST(s, unary_scale_cast_and_sum_at_every_count);
  CT_ADD_TEST(s, reduce_sum_of_all_at_every_count);
  CT_ADD_TEST(s, reduce_sum_of_rows_and_columns_at_every_count);
  CT_ADD_TEST(s, mean_at_every_count);
  CT_ADD_TEST(s, softmax_and_grad_along_each_axis_at_every_count);
  CT_ADD_TEST(s, matmul_and_grad_at_every_count);
  CT_ADD_TEST(s, conv2d_and_grad_at_every_count);
  CT_ADD_TEST(s, split_conv2d_is_the_definition);
  CT_ADD_TEST(s, depthwise_conv2d_and_grad_at_every_count);
  CT_ADD_TEST(s, pool2d_and_grad_at_every_count);
  CT_ADD_TEST(s, transpose_is_a_gather_at_every_count);
  CT_ADD_TEST(s, random_at_every_count);
  CT_ADD_TEST(s, kernels_from_several_threads_at_once);
  CT_ADD_TEST(s, a_forked_child_runs_split_kernels);
  return s;
}

CT_TEST_MAIN(threads_suite)
