/* SPDX-License-Identifier: Apache-2.0 */
/* Expressions on cuda:0 (ops/cuda/expr.c: kernels compiled with NVRTC) against the CPU engine
 * over the same inputs: every node kind in every dtype, every mode (dst a leaf too), the
 * broadcast patterns, a tensor larger than one grid, and the compiled-kernel table and disk cache
 * on a device (one compile per structure, the disk read by a fresh table, a corrupt entry
 * recompiled). Results are bit-identical where CUDA rounds as C does (the arithmetic, MAX, MIN,
 * RELU, ABS, SQRT; --fmad=false), within a few units in the last place for EXP, LOG, TANH,
 * SIGMOID and POW (CUDA's libdevice against the C library). Without a device the suite reports
 * itself skipped (77). Static library: it reads the kernel table's counts. */
#define _GNU_SOURCE /* mkdtemp, nftw (file_util.h), setenv */
#include "expr_util.h"
#include "file_util.h"

#ifdef CORTEN_TEST_CUDA
#include "ops/expr/nvrtc.h"

static ct_tensor *to_device(const ct_tensor *h) {
  ct_tensor *d = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_copy(d, h, ct_cuda(0)), CT_OK);
  return d;
}

static ct_tensor *to_host(const ct_tensor *d) {
  ct_tensor *h = ct_tensor_new();
  ck_assert_msg(ct_tensor_copy(h, d, ct_cpu()) == CT_OK, "%s", ct_last_error());
  return h;
}

/* got against want: bit for bit when tol is 0, else |got - want| <= tol max(|want|, 8). */
static void assert_close(const ct_tensor *got, const ct_tensor *want, double tol, const char *what) {
  if (tol == 0) {
    assert_same_bits(got, want);
    return;
  }
  ct_dtype dt = ct_tensor_dtype(want);
  ck_assert_int_eq(ct_tensor_numel(got), ct_tensor_numel(want));
  const void *g = ct_tensor_data(got, dt), *w = ct_tensor_data(want, dt);
  for (int64_t i = 0; i < ct_tensor_numel(want); i++) {
    double x = get_elem(g, dt, i), y = get_elem(w, dt, i);
    if (isnan(x) && isnan(y)) continue;
    ck_assert_msg(fabs(x - y) <= tol * fmax(fabs(y), 8), "%s, element %lld: %.17g, expected %.17g",
                  what, (long long)i, x, y);
  }
}

typedef ct_expr *(*builder)(ct_tensor *const *t, int op);

/* dst (mode) = build(in, op) on the CPU and on cuda:0 over copies of in; dst starts as dst0 (or
 * empty when dst0 is NULL); when dst_leaf, dst is also in[0] (so in[0] is dst0). */
static void compare(builder build, int op, ct_tensor *const *in, int n, const ct_tensor *dst0,
                    ct_assign mode, bool dst_leaf, double tol, const char *what) {
  ct_tensor *dev[8], *hd = ct_tensor_new(), *dd;
  ck_assert_int_le(n, 8);
  if (dst0 != NULL) ck_assert_int_eq(ct_tensor_copy(hd, dst0, ct_cpu()), CT_OK);
  dd = dst0 != NULL ? to_device(dst0) : ct_tensor_new();
  ct_tensor *hin[8];
  for (int i = 0; i < n; i++) {
    hin[i] = dst_leaf && i == 0 ? hd : in[i];
    dev[i] = dst_leaf && i == 0 ? dd : to_device(in[i]);
  }
  ct_expr *eh = build(hin, op), *ed = build(dev, op);
  ck_assert_msg(eh != NULL && ed != NULL, "%s", ct_last_error());
  ck_assert_msg(ct_expr_assign(hd, mode, eh) == CT_OK, "%s on the CPU: %s", what, ct_last_error());
  ck_assert_msg(ct_expr_assign(dd, mode, ed) == CT_OK, "%s on cuda:0: %s", what, ct_last_error());
  ck_assert_int_eq(ct_tensor_place(dd).kind, CT_DEVICE_CUDA);
  ct_tensor *got = to_host(dd);
  assert_close(got, hd, tol, what);
  ct_expr_free(eh);
  ct_expr_free(ed);
  for (int i = dst_leaf ? 1 : 0; i < n; i++) ct_tensor_free(dev[i]);
  ct_tensor_free(got);
  ct_tensor_free(hd);
  ct_tensor_free(dd);
}

static bool exact(int op) {
  return op != CT_EXPR_EXP && op != CT_EXPR_LOG && op != CT_EXPR_TANH && op != CT_EXPR_SIGMOID &&
         op != CT_EXPR_POW && op != CT_EXPR_ERF;
}

static double tol_of(int op, ct_dtype dt) {
  if (exact(op)) return 0;
  return dt == CT_FLOAT64 ? 1e-14 : dt == CT_FLOAT32 ? 4e-6 : dt == CT_FLOAT16 ? 2e-3 : 1.6e-2;
}

/* op over t[0] (and t[1]), inside both fused shapes and with a scalar: ((x + t2) * t0) - 0.5 x t3
 * for an odd op, t2 - (x / t0) ... for an even one. */
static ct_expr *kind_tree(ct_tensor *const *t, int op) {
  ct_expr *x = op <= CT_EXPR_POW ? ct_expr_binary(op, LEAF(t[0]), LEAF(t[1]))
                                : ct_expr_unary(op, LEAF(t[0]));
  ct_expr *e = op % 2 ? BIN(MUL, BIN(ADD, x, LEAF(t[2])), LEAF(t[0]))
                      : BIN(SUB, LEAF(t[2]), BIN(DIV, x, LEAF(t[0])));
  return BIN(SUB, e, BIN(MUL, ct_expr_scalar(0.5), LEAF(t[3])));
}

START_TEST(every_kind_in_every_dtype_matches_the_cpu) {
  static const ct_dtype dts[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16};
  for (int op = CT_EXPR_ADD; op <= CT_EXPR_ERF; op++) {
    for (int i = 0; i < 4; i++) {
      ct_dtype dt = dts[i];
      bool pos = op == CT_EXPR_LOG || op == CT_EXPR_SQRT || op == CT_EXPR_POW;
      ct_tensor *in[4] = {tensor_fn(dt, CT_DIMS(3, 4, 5), pos ? data_pos : data_k, 1),
                          tensor_fn(dt, CT_DIMS(4, 1), pos ? data_pos : data_k, 2),
                          tensor_k(dt, CT_DIMS(3, 4, 5), 3), tensor_k(dt, CT_DIMS(1), 4)};
      char what[64];
      snprintf(what, sizeof what, "op %d, %s", op, ct_dtype_name(dt));
      compare(kind_tree, op, in, 4, NULL, CT_SAVETO, false, tol_of(op, dt), what);
      for (int k = 0; k < 4; k++) ct_tensor_free(in[k]);
    }
  }
}
END_TEST

static ct_expr *mode_tree(ct_tensor *const *t, int op) {
  (void)op;
  return BIN(ADD, BIN(MUL, LEAF(t[0]), LEAF(t[1])), LEAF(t[2]));
}

START_TEST(every_mode_matches_the_cpu_with_dst_a_leaf_or_not) {
  for (int mode = CT_SAVETO; mode <= CT_DIVTO; mode++) {
    for (int leaf = 0; leaf < 2; leaf++) {
      ct_tensor *dst0 = tensor_k(CT_FLOAT32, CT_DIMS(6, 7), 9);
      ct_tensor *in[3] = {dst0, tensor_k(CT_FLOAT32, CT_DIMS(7), 2),
                          tensor_k(CT_FLOAT32, CT_DIMS(6, 7), 3)};
      if (!leaf) in[0] = tensor_k(CT_FLOAT32, CT_DIMS(6, 7), 1);
      char what[64];
      snprintf(what, sizeof what, "mode %d, dst %sa leaf", mode, leaf ? "" : "not ");
      compare(mode_tree, 0, in, 3, dst0, (ct_assign)mode, leaf, 0, what);
      for (int k = leaf; k < 3; k++) ct_tensor_free(in[k]);
      ct_tensor_free(dst0);
    }
  }
}
END_TEST

static ct_expr *pair_tree(ct_tensor *const *t, int op) {
  return ct_expr_binary(op, LEAF(t[0]), LEAF(t[1]));
}

START_TEST(broadcast_patterns_match_the_cpu) {
  const ct_ddim a_dims[] = {CT_DIMS(2, 3, 4, 5), CT_DIMS(2, 3, 4, 5), CT_DIMS(2, 3, 4, 5),
                                   CT_DIMS(2, 3, 4, 5), CT_DIMS(2, 3, 4, 5), CT_DIMS(3, 1),
                                   CT_DIMS(1, 4, 1), CT_DIMS(5)};
  const ct_ddim b_dims[] = {CT_DIMS(5),       CT_DIMS(4, 1), CT_DIMS(3, 1, 5),
                                   CT_DIMS(2, 1, 1, 1), CT_DIMS(1),  CT_DIMS(1, 5),
                                   CT_DIMS(3, 1, 6), {.rank = 0}};
  for (size_t i = 0; i < sizeof a_dims / sizeof a_dims[0]; i++) {
    for (int op = CT_EXPR_ADD; op <= CT_EXPR_MIN; op++) {
      ct_tensor *in[2] = {tensor_k(CT_FLOAT64, a_dims[i], 1), tensor_k(CT_FLOAT64, b_dims[i], 2)};
      char what[64];
      snprintf(what, sizeof what, "case %zu, op %d", i, op);
      compare(pair_tree, op, in, 2, NULL, CT_SAVETO, false, 0, what);
      /* The other way round: the broadcast operand first. */
      ct_tensor *swapped[2] = {in[1], in[0]};
      compare(pair_tree, op, swapped, 2, NULL, CT_SAVETO, false, 0, what);
      ct_tensor_free(in[0]);
      ct_tensor_free(in[1]);
    }
  }
}
END_TEST

START_TEST(a_tensor_larger_than_one_grid_is_covered) {
  /* 4096 blocks of 256 threads take 2^20 elements a pass; this needs three and a bit. */
  int64_t n = ((int64_t)3 << 20) + 77;
  ct_tensor *in[3] = {tensor_k(CT_FLOAT32, CT_DIMS(n), 1), tensor_k(CT_FLOAT32, CT_DIMS(n), 2),
                      tensor_k(CT_FLOAT32, CT_DIMS(n), 3)};
  compare(mode_tree, 0, in, 3, NULL, CT_SAVETO, false, 0, "3 Mi elements");
  for (int k = 0; k < 3; k++) ct_tensor_free(in[k]);
}
END_TEST

/* d = a * b + c on cuda:0 over [rows, 8] float32 tensors, checked against the CPU. */
static void run_once(int64_t rows) {
  ct_tensor *in[3] = {tensor_k(CT_FLOAT32, CT_DIMS(rows, 8), 1),
                      tensor_k(CT_FLOAT32, CT_DIMS(rows, 8), 2),
                      tensor_k(CT_FLOAT32, CT_DIMS(rows, 8), 3)};
  compare(mode_tree, 0, in, 3, NULL, CT_SAVETO, false, 0, "cache");
  for (int k = 0; k < 3; k++) ct_tensor_free(in[k]);
}

static ct__kernel_stats stats(void) {
  ct__kernel_stats s;
  ct__kernels_stats(&s);
  return s;
}

START_TEST(a_structure_is_compiled_once_then_read_from_memory_and_disk) {
  make_work_dir("cuda-expr");
  ck_assert_int_eq(setenv("CORTEN_KERNEL_CACHE", in_dir("kernels"), 1), 0);
  ct__kernels_reset(0);
  run_once(3);
  run_once(300); /* other extents, the same structure: the same kernel */
  ct__kernel_stats s = stats();
  ck_assert_uint_eq(s.compiles, 1);
  ck_assert_uint_eq(s.memory_hits, 1);
  ck_assert_int_eq(s.live, 1);
  ct__kernels_reset(0); /* as a new process would start */
  run_once(5);
  s = stats();
  ck_assert_uint_eq(s.compiles, 0);
  ck_assert_uint_eq(s.disk_hits, 1);
  /* A corrupt entry: recompiled, and the result still right. */
  DIR *d = opendir(in_dir("kernels"));
  ck_assert_ptr_nonnull(d);
  for (struct dirent *de; (de = readdir(d)) != NULL;) {
    if (strstr(de->d_name, ".ctk") == NULL) continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", in_dir("kernels"), de->d_name);
    ck_assert_int_eq(truncate(path, 100), 0);
  }
  closedir(d);
  ct__kernels_reset(0);
  run_once(7);
  s = stats();
  ck_assert_uint_eq(s.compiles, 1);
  ck_assert_uint_eq(s.disk_hits, 0);
  remove_work_dir();
}
END_TEST

START_TEST(a_missing_nvrtc_is_unsupported_on_a_device) {
  ck_assert_int_eq(setenv("CORTEN_NVRTC", "libnvrtc-not-here.so.0", 1), 0);
  ct_tensor *h = tensor_k(CT_FLOAT32, CT_DIMS(4), 1), *a = to_device(h), *d = ct_tensor_new();
  ct_expr *e = UN(EXP, LEAF(a));
  CT_ASSERT_FAILS(ct_expr_assign(d, CT_SAVETO, e), CT_ERR_UNSUPPORTED);
  assert_message_has("libnvrtc-not-here.so.0", "CORTEN_NVRTC", NULL);
  ct_expr_free(e);
  ct_tensor_free(d);
  ct_tensor_free(a);
  ct_tensor_free(h);
}
END_TEST

static Suite *cuda_expr_suite(void) {
  Suite *s = suite_create("cuda_expr");
  CT_ADD_TEST(s, every_kind_in_every_dtype_matches_the_cpu);
  CT_ADD_TEST(s, every_mode_matches_the_cpu_with_dst_a_leaf_or_not);
  CT_ADD_TEST(s, broadcast_patterns_match_the_cpu);
  CT_ADD_TEST(s, a_tensor_larger_than_one_grid_is_covered);
  CT_ADD_TEST(s, a_structure_is_compiled_once_then_read_from_memory_and_disk);
  CT_ADD_TEST(s, a_missing_nvrtc_is_unsupported_on_a_device);
  return s;
}
#endif /* CORTEN_TEST_CUDA */

CT_GPU_TEST_MAIN(NULL, cuda_expr_suite)
