/* SPDX-License-Identifier: Apache-2.0 */
/* The conv_pool pass (ops/passes_pool.c, docs/design/passes.md): a convolution and the max pool
 * that reads it run as one conv2d_pool whose results equal the unoptimized executor's bit for
 * bit at 1, 2 and 3 threads, the convolution's output never getting memory: on the direct
 * loop's banded path (resnet's stem: a 7x7 stride-2 convolution, bias and relu, then a 3x3
 * stride-2 pool) and on the fallback (float64, other algorithms, no AVX-512); left alone where
 * its conditions fail; and the op by hand refuses what it does not compute. */
#include <math.h>
#include <string.h>

#include "ops/cpu/gemm_ukr.h" /* ct__gemm_use_kernel (internal: the static library) */
#include "passes_util.h"

typedef struct cp {
  int64_t n, c, m, h, w, k, s, p; /* x [n, c, h, w], w [m, c, k, k], stride s, padding p */
  int64_t pk, ps, pp;             /* the pool's window, stride and padding */
  bool ceil;                      /* the pool's ceil_mode */
  const char *act;                /* "relu", "clip" (lo .. hi) or NULL (no bias, no act) */
  bool bn;                        /* a batch_norm (inference) before the activation */
  bool res;                       /* a residual r added before the activation: the fallback */
  bool bias1;                     /* a bias of one element for every channel */
  int64_t groups;                 /* 0 or 1: conv2d; else depthwise_conv2d's groups */
  double lo, hi;
  ct_dtype dt;
  bool nans;     /* NaN at x's first element */
  bool avg;      /* average pooling: not fused */
  bool read_c;   /* another op reads the convolution's output: not fused */
  bool keep_c;   /* the caller keeps it: not fused */
} cp;

static ct_program *cp_program(const cp *t) {
  ct_program *p = ct_program_new();
  ct_op *conv = ct_op_new(t->groups > 1 ? "depthwise_conv2d" : "conv2d");
  if (t->groups > 1) ct_op_set_attr_int(conv, "groups", t->groups);
  ct_op_set_input(conv, "Input", "x");
  ct_op_set_input(conv, "Filter", "w");
  ct_op_set_output(conv, "Output", t->act != NULL ? "c" : "a");
  const int64_t pads[2] = {t->p, t->p}, st[2] = {t->s, t->s};
  ct_op_set_attr_ints(conv, "paddings", pads, 2);
  ct_op_set_attr_ints(conv, "strides", st, 2);
  ck_assert_int_eq(ct_program_append(p, conv), CT_OK);
  if (t->act != NULL) {
    ct_op *r = op_x("reshape", "b", "b_col");
    static const int64_t col[3] = {-1, 1, 1};
    ct_op_set_attr_ints(r, "shape", col, 3);
    ck_assert_int_eq(ct_program_append(p, r), CT_OK);
    ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_add", "c", "b_col", "cb")), CT_OK);
    if (t->bn) append_bn(p, "cb", "cn");
    if (t->res) ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_add", "cb", "r", "cn")),
                                 CT_OK);
    ct_op *a = op_x(t->act, t->bn || t->res ? "cn" : "cb", "a");
    if (strcmp(t->act, "clip") == 0) {
      ct_op_set_attr_float(a, "min", t->lo);
      ct_op_set_attr_float(a, "max", t->hi);
    }
    ck_assert_int_eq(ct_program_append(p, a), CT_OK);
  }
  ct_op *pool = op_x("pool2d", "a", "y");
  const int64_t ks[2] = {t->pk, t->pk}, ps[2] = {t->ps, t->ps}, pp[2] = {t->pp, t->pp};
  ct_op_set_attr_string(pool, "pooling_type", t->avg ? "avg" : "max");
  ct_op_set_attr_ints(pool, "ksize", ks, 2);
  ct_op_set_attr_ints(pool, "strides", ps, 2);
  ct_op_set_attr_ints(pool, "paddings", pp, 2);
  ct_op_set_attr_bool(pool, "ceil_mode", t->ceil);
  ck_assert_int_eq(ct_program_append(p, pool), CT_OK);
  if (t->read_c) ck_assert_int_eq(ct_program_append(p, op_x("relu", "a", "side")), CT_OK);
  return p;
}

static ct_scope *cp_scope(const void *arg) {
  const cp *t = arg;
  ct_scope *s = ct_scope_new();
  put_pattern(s, "x", CT_DIMS(t->n, t->c, t->h, t->w), 1, t->dt);
  const int64_t cg = t->groups > 1 ? t->c / t->groups : t->c;
  put_pattern(s, "w", CT_DIMS(t->m, cg, t->k, t->k), 2, t->dt);
  put_pattern(s, "b", CT_DIMS(t->bias1 ? 1 : t->m), 3, t->dt);
  const int64_t oh = (t->h + 2 * t->p - t->k) / t->s + 1, ow = (t->w + 2 * t->p - t->k) / t->s + 1;
  put_pattern(s, "r", CT_DIMS(t->n, t->m, oh, ow), 4, t->dt);
  put_bn(s, t->m, t->dt);
  if (t->nans) put_elem(s, "x", t->dt, 0, NAN);
  return s;
}

/* y's bytes after two runs over a fresh scope with options o (NULL: none) at `threads`; into
 * *fused whether the convolution's output never got memory. */
static void *cp_run(const cp *t, const ct_executor_options *o, int threads, size_t *bytes,
                    bool *fused) {
  ct_set_num_threads(threads);
  ct_program *p = cp_program(t);
  ct_scope *s = cp_scope(t);
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), o);
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  for (int k = 0; k < 2; k++) ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  const ct_tensor *y = ct_var_get_tensor(ct_scope_find_var(s, "y"));
  *bytes = (size_t)ct_tensor_numel(y) * ct_dtype_size(t->dt);
  void *out = xmalloc((int64_t)*bytes, 1);
  memcpy(out, ct_tensor_data(y, t->dt), *bytes);
  *fused = !has_memory(s, "a") && !has_memory(s, "c") && !has_memory(s, "cb") &&
           !has_memory(s, "cn");
  ct_executor_free(e);
  ct_scope_free(s);
  ct_program_free(p);
  ct_set_num_threads(1);
  return out;
}

/* Optimized, the pair equals the unoptimized run bit for bit at 1, 2 and 3 threads, with the
 * filter and bias as the executor's constants (the kernels keep the filter packed) and without;
 * whether it was fused is `want_fused`. */
static void check_pair(const cp *t, bool want_fused) {
  size_t bytes, fbytes;
  bool fused;
  void *plain = cp_run(t, NULL, 1, &bytes, &fused);
  ck_assert(!fused);
  for (int k = 0; k < 6; k++) {
    const int threads = 1 + k / 2;
    const char *keep[1] = {"a"}, *consts[2] = {"w", "b"};
    ct_executor_options o = {.optimize = true, .keep = t->keep_c ? keep : NULL,
                             .n_keep = t->keep_c ? 1 : 0, .constants = k % 2 ? consts : NULL,
                             .n_constants = k % 2 ? 2 : 0};
    void *opt = cp_run(t, &o, threads, &fbytes, &fused);
    ck_assert_uint_eq(fbytes, bytes);
    ck_assert_msg(memcmp(plain, opt, bytes) == 0, "differs from the unoptimized run at %d "
                  "threads", threads);
    ck_assert_msg(fused == want_fused, "fused %d, expected %d", fused, want_fused);
    if (t->nans) { /* x's first element is in y's first window */
      double v = t->dt == CT_FLOAT32 ? ((float *)opt)[0] : ((double *)opt)[0];
      ck_assert_msg(isnan(v), "y[0] = %g, expected NaN", v);
    }
    free(opt);
  }
  free(plain);
}

/* resnet's stem, smaller: 7x7 at stride 2 onto 20 x 20 (wider than a piece of 14), 40 filters
 * (a block of 32 and one of 8), bias and relu, then 3x3 max pool at stride 2 padded by 1. */
static const cp stem = {.n = 2, .c = 3, .m = 40, .h = 40, .w = 40, .k = 7, .s = 2, .p = 3,
                        .pk = 3, .ps = 2, .pp = 1, .act = "relu", .dt = CT_FLOAT32};
/* A 3x3 convolution at stride 2 on 8 channels of a wider image (72 terms: the rows vectorised
 * over pixels, conv_direct_wide.c), in several steps of rows, relu, then the stem's pool. */
static const cp wide = {.n = 1, .c = 8, .m = 32, .h = 150, .w = 150, .k = 3, .s = 2, .p = 1,
                        .pk = 3, .ps = 2, .pp = 1, .act = "relu", .dt = CT_FLOAT32};

START_TEST(a_stem_and_its_pool_fuse_to_the_same_bits) {
  check_pair(&stem, true);
  cp t = stem;
  t.nans = true;
  check_pair(&t, true);
}
END_TEST

/* Pools of every shape pool2d takes: 2x2 at stride 2 (windows tiling the plane), 3x3 at stride
 * 1, ceil_mode's last window half outside, a window larger than the stride's overlap; and a
 * 3x3 convolution at stride 2 on a wider image (wide: several steps of rows, the kept rows
 * moved to the buffer's front). */
START_TEST(every_pool_window_gives_the_same_bits) {
  static const int64_t shapes[][4] = {{2, 2, 0, 0}, {3, 1, 1, 0}, {3, 2, 0, 1}, {5, 3, 2, 0}};
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
    cp t = stem;
    t.pk = shapes[k][0];
    t.ps = shapes[k][1];
    t.pp = shapes[k][2];
    t.ceil = shapes[k][3] != 0;
    check_pair(&t, true);
  }
  check_pair(&wide, true);
  /* 64 channels: the loop's sums in two chunks, the first kept in the partial sums a step's
   * rows; and a narrow output (14 wide), its rows one piece */
  cp chunks = {.n = 1, .c = 64, .m = 40, .h = 60, .w = 60, .k = 3, .s = 2, .p = 1, .pk = 3,
               .ps = 2, .pp = 1, .act = "relu", .dt = CT_FLOAT32};
  check_pair(&chunks, true);
  cp narrow = {.n = 2, .c = 16, .m = 32, .h = 27, .w = 27, .k = 3, .s = 2, .p = 1, .pk = 2,
               .ps = 2, .pp = 0, .act = "relu", .dt = CT_FLOAT32};
  check_pair(&narrow, true);
}
END_TEST

/* No bias and no activation (a plain conv2d then the pool), clip between float32 values, clip
 * between bounds float32 does not hold (in double, on each row once computed), and a batch
 * norm (resnet18_bn's stem: in double, on each row) with relu, also in float64. */
START_TEST(every_epilogue_gives_the_same_bits) {
  cp t = stem;
  t.act = NULL;
  check_pair(&t, true);
  t.act = "relu";
  t.bn = true;
  check_pair(&t, true);
  cp w = wide;
  w.bn = true;
  check_pair(&w, true);
  w.dt = CT_FLOAT64;
  check_pair(&w, true);
  t.bn = false;
  t.act = "clip";
  t.lo = 0;
  t.hi = 0.5;
  check_pair(&t, true);
  t.lo = 0.1;
  t.hi = 0.7;
  check_pair(&t, true);
  t = stem;
  t.bias1 = true;
  check_pair(&t, true);
}
END_TEST

/* The fallback (conv2d_fusion's kernel, then pool2d's): float64, a convolution im2col or
 * Winograd computes (stride 1), and the direct loop off with the AVX-512 kernels. */
START_TEST(the_fallback_gives_the_same_bits) {
  cp t = stem;
  t.dt = CT_FLOAT64;
  check_pair(&t, true);
  cp s1 = {.n = 2, .c = 4, .m = 8, .h = 12, .w = 12, .k = 3, .s = 1, .p = 1, .pk = 2, .ps = 2,
           .pp = 0, .act = "relu", .dt = CT_FLOAT32};
  check_pair(&s1, true);
  if (ct__gemm_use_kernel("avx2")) check_pair(&stem, true); /* (no AVX2 CPU: nothing) */
  ck_assert(ct__gemm_use_kernel(NULL));
  t = stem; /* a residual: conv2d_fusion applies it to whole planes */
  t.res = true;
  check_pair(&t, true);
  cp dw = {.n = 2, .c = 8, .m = 16, .h = 20, .w = 20, .k = 3, .s = 1, .p = 1, .pk = 3, .ps = 2,
           .pp = 1, .act = "relu", .groups = 8, .dt = CT_FLOAT32}; /* a depthwise origin */
  check_pair(&dw, true);
}
END_TEST

START_TEST(pairs_it_cannot_prove_are_left_alone) {
  cp t = stem;
  t.avg = true;
  check_pair(&t, false);
  t = stem;
  t.read_c = true;
  check_pair(&t, false);
  t = stem;
  t.keep_c = true;
  check_pair(&t, false);
}
END_TEST

/* The op made by hand: average pooling is refused, naming the fix. */
START_TEST(the_op_by_hand_refuses_average_pooling) {
  ct_scope *s = cp_scope(&stem);
  ct_op *op = ct_op_new("conv2d_pool");
  ct_op_set_input(op, "Input", "x");
  ct_op_set_input(op, "Filter", "w");
  ct_op_set_output(op, "Output", "y");
  ct_op_set_attr_string(op, "pool_pooling_type", "avg");
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(ct_last_error(), "pool_pooling_type") != NULL, "%s", ct_last_error());
  ck_assert(!has_memory(s, "y"));
  /* a window larger than the convolution's padded output: pool2d's refusal, as pool_ */
  ct_op_set_attr_string(op, "pool_pooling_type", "max");
  const int64_t big[2] = {99, 99};
  ct_op_set_attr_ints(op, "pool_ksize", big, 2);
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_SHAPE);
  ck_assert_msg(strstr(ct_last_error(), "attributes pool_") != NULL, "%s", ct_last_error());
  ck_assert(!has_memory(s, "y"));
  /* max pooling by hand: the stem's pair */
  ct_op_set_attr_string(op, "pool_pooling_type", "max");
  const int64_t ks[2] = {3, 3}, two[2] = {2, 2}, three[2] = {3, 3};
  ct_op_set_attr_ints(op, "pool_ksize", ks, 2);
  ct_op_set_attr_ints(op, "pool_strides", two, 2);
  ct_op_set_attr_ints(op, "strides", two, 2);
  ct_op_set_attr_ints(op, "paddings", three, 2);
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(ct_var_get_tensor(ct_scope_find_var(s, "y"))),
                          CT_DIMS(2, 40, 9, 9)));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("passes_pool");
  CT_ADD_TEST(s, a_stem_and_its_pool_fuse_to_the_same_bits);
  CT_ADD_TEST(s, every_pool_window_gives_the_same_bits);
  CT_ADD_TEST(s, every_epilogue_gives_the_same_bits);
  CT_ADD_TEST(s, the_fallback_gives_the_same_bits);
  CT_ADD_TEST(s, pairs_it_cannot_prove_are_left_alone);
  CT_ADD_TEST(s, the_op_by_hand_refuses_average_pooling);
  return s;
}

CT_TEST_MAIN(make_suite)
