/* SPDX-License-Identifier: Apache-2.0 */
/* The executor's optimize option (ops/passes.c, docs/design/passes.md): conv2d + bias add +
 * residual add + relu/clip chains run as one conv2d_fusion whose results equal the unoptimized
 * executor's bit for bit, whose intermediates never get memory; and chains are left alone where
 * an intermediate is read by another op, kept, or the caller's own variable. */
#include <math.h>
#include <string.h>

#include "passes_util.h"

typedef struct spec {
  bool bias, residual, depthwise;
  bool bn;          /* batch_norm (is_test, epsilon 1e-3) after the bias: cn */
  bool bn_training; /* ... in training mode instead (not fused) */
  bool bn_read;     /* ... whose MeanOut another op reads (not fused) */
  bool bn_global;   /* ... with use_global_stats instead of is_test (fused) */
  bool bias_written; /* b written by an op before the conv (b = relu(b0)): its length is not
                      * known when the executor is made, so the bias is not fused */
  const char *act; /* NULL, "relu" or "clip" */
  bool exact_clip;  /* clip's bounds 0 and 0.5, which float32 holds (else 0.1 and 0.6) */
  ct_dtype dt;
  ct_ddim res_dims; /* rank 0: the output's [N, C, OH, OW] */
  bool nans; /* NaN at the first and the last element of the residual (the output's dims) or,
              * without one, of x (each reaches y's first and last element) */
  int64_t n, c, hw, ks; /* x [n, c, hw, hw], w [m, c or 1, ks, ks]; 0: 1, 4, 7, 3 */
  int64_t m;             /* the conv's filters (0: c) */
  bool same;             /* padding ks / 2 on each side (the output as large as x), else 0 */
  int64_t stride;        /* the conv's, both ways; 0: 1 */
} spec;

static int64_t sp_n(const spec *sp) { return sp->n > 0 ? sp->n : 1; }
static int64_t sp_c(const spec *sp) { return sp->c > 0 ? sp->c : 4; }
static int64_t sp_hw(const spec *sp) { return sp->hw > 0 ? sp->hw : 7; }
static int64_t sp_ks(const spec *sp) { return sp->ks > 0 ? sp->ks : 3; }
static int64_t sp_m(const spec *sp) { return sp->m > 0 ? sp->m : sp_c(sp); }
static int64_t sp_oh(const spec *sp) {
  const int64_t st = sp->stride > 0 ? sp->stride : 1;
  return ((sp->same ? sp_hw(sp) + sp_ks(sp) / 2 * 2 : sp_hw(sp)) - sp_ks(sp)) / st + 1;
}
static ct_ddim sp_out(const spec *sp) {
  return CT_DIMS(sp_n(sp), sp_m(sp), sp_oh(sp), sp_oh(sp));
}

/* y = act(conv(x, w) + reshape(b, [-1, 1, 1]) + r), by default x [1, 4, 7, 7], w 3x3 stride 1
 * pad 0 -> [1, 4, 5, 5] (depthwise: groups 4, w [4, 1, 3, 3]); the intermediates c, cb, cr. */
static ct_program *chain_program(const spec *sp) {
  ct_program *p = ct_program_new();
  if (sp->bias_written) ck_assert_int_eq(ct_program_append(p, op_x("relu", "b0", "b")), CT_OK);
  ct_op *conv = ct_op_new(sp->depthwise ? "depthwise_conv2d" : "conv2d");
  ct_op_set_input(conv, "Input", "x");
  ct_op_set_input(conv, "Filter", "w");
  ct_op_set_output(conv, "Output", "c");
  if (sp->depthwise) ct_op_set_attr_int(conv, "groups", sp_c(sp));
  if (sp->same) {
    const int64_t pads[2] = {sp_ks(sp) / 2, sp_ks(sp) / 2};
    ct_op_set_attr_ints(conv, "paddings", pads, 2);
  }
  if (sp->stride > 1) {
    const int64_t st[2] = {sp->stride, sp->stride};
    ct_op_set_attr_ints(conv, "strides", st, 2);
  }
  ck_assert_int_eq(ct_program_append(p, conv), CT_OK);
  const char *cur = "c";
  if (sp->bias) {
    ct_op *r = op_x("reshape", "b", "b3");
    static const int64_t col[3] = {-1, 1, 1};
    ct_op_set_attr_ints(r, "shape", col, 3);
    ck_assert_int_eq(ct_program_append(p, r), CT_OK);
    ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_add", "c", "b3", "cb")), CT_OK);
    cur = "cb";
  }
  if (sp->bn || sp->bn_training || sp->bn_read || sp->bn_global) {
    ct_op *bn = ct_op_new("batch_norm");
    static const char *const ins[5][2] = {
        {"X", NULL}, {"Scale", "bs"}, {"Bias", "bb"}, {"Mean", "bmu"}, {"Variance", "bvar"}};
    static const char *const outs[5][2] = {{"Y", "cn"},
                                           {"MeanOut", "bm"},
                                           {"VarianceOut", "bv"},
                                           {"SavedMean", "bsm"},
                                           {"SavedVariance", "bsv"}};
    for (int k = 0; k < 5; k++) {
      ck_assert_int_eq(ct_op_set_input(bn, ins[k][0], k == 0 ? cur : ins[k][1]), CT_OK);
      ck_assert_int_eq(ct_op_set_output(bn, outs[k][0], outs[k][1]), CT_OK);
    }
    ck_assert_int_eq(ct_op_set_attr_bool(bn, "is_test", !sp->bn_training && !sp->bn_global),
                     CT_OK);
    ck_assert_int_eq(ct_op_set_attr_bool(bn, "use_global_stats", sp->bn_global), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_float(bn, "epsilon", 1e-3), CT_OK);
    ck_assert_int_eq(ct_program_append(p, bn), CT_OK);
    if (sp->bn_read) ck_assert_int_eq(ct_program_append(p, op_x("exp", "bm", "e")), CT_OK);
    cur = "cn";
  }
  if (sp->residual) {
    ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_add", "r", cur, "cr")), CT_OK);
    cur = "cr";
  }
  if (sp->act != NULL) {
    ct_op *a = op_x(sp->act, cur, "y");
    if (strcmp(sp->act, "clip") == 0) {
      ct_op_set_attr_float(a, "min", sp->exact_clip ? 0 : 0.1);
      ct_op_set_attr_float(a, "max", sp->exact_clip ? 0.5 : 0.6);
    }
    ck_assert_int_eq(ct_program_append(p, a), CT_OK);
  } else {
    ck_assert_int_eq(ct_program_append(p, op_x("assign", cur, "y")), CT_OK);
  }
  return p;
}

static ct_scope *chain_scope(const spec *sp) {
  ct_scope *s = ct_scope_new();
  int64_t c = sp_m(sp), hw = sp_hw(sp), ks = sp_ks(sp);
  put_pattern(s, "x", CT_DIMS(sp_n(sp), sp_c(sp), hw, hw), 1, sp->dt);
  put_pattern(s, "w", CT_DIMS(c, sp->depthwise ? 1 : sp_c(sp), ks, ks), 2, sp->dt);
  put_pattern(s, "b", CT_DIMS(c), 3, sp->dt);
  put_pattern(s, "b0", CT_DIMS(c), 3, sp->dt);
  put_pattern(s, "r", sp->res_dims.rank > 0 ? sp->res_dims : sp_out(sp), 4, sp->dt);
  put_pattern(s, "bs", CT_DIMS(c), 5, sp->dt);
  put_pattern(s, "bb", CT_DIMS(c), 6, sp->dt);
  put_pattern(s, "bmu", CT_DIMS(c), 7, sp->dt);
  put_pattern(s, "bvar", CT_DIMS(c), 8, sp->dt); /* -1 .. 1: made 0.25 .. 2.25 below */
  void *var = ct_tensor_mutable_data(ct_var_tensor(ct_scope_var(s, "bvar")), sp->dt, ct_cpu());
  for (int64_t k = 0; k < c; k++) {
    if (sp->dt == CT_FLOAT32) ((float *)var)[k] = ((float *)var)[k] + 1.25f;
    else ((double *)var)[k] = ((double *)var)[k] + 1.25;
  }
  if (sp->nans) {
    ct_tensor *r = ct_var_tensor(ct_scope_var(s, sp->residual ? "r" : "x"));
    void *p = ct_tensor_mutable_data(r, sp->dt, ct_cpu());
    int64_t last = ct_tensor_numel(r) - 1;
    for (int k = 0; k < 2; k++) {
      if (sp->dt == CT_FLOAT32) ((float *)p)[k * last] = NAN;
      else ((double *)p)[k * last] = NAN;
    }
  }
  return s;
}

/* Runs program p over scope s with options o twice; y's bytes (dims out) into buf. */
static void run_dims(const ct_program *p, ct_scope *s, const ct_executor_options *o, void *buf,
                     size_t bytes, ct_ddim out) {
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), o);
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  for (int k = 0; k < 2; k++) ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  const ct_tensor *y = ct_var_get_tensor(ct_scope_find_var(s, "y"));
  ck_assert(ct_ddim_equal(ct_tensor_dims(y), out));
  memcpy(buf, ct_tensor_data(y, ct_tensor_dtype(y)), bytes);
  ct_executor_free(e);
}

/* The default chain's y: [1, 4, 5, 5], 100 values. */
static void run_into(const ct_program *p, ct_scope *s, const ct_executor_options *o, void *out,
                     size_t bytes) {
  run_dims(p, s, o, out, bytes, CT_DIMS(1, 4, 5, 5));
}

/* The chain optimized equals it unoptimized bit for bit, and its intermediates got no memory. */
static void check_fused(const spec *sp) {
  ct_program *p = chain_program(sp);
  ct_ddim out = sp_out(sp);
  size_t bytes = (size_t)ct_ddim_numel(out) * ct_dtype_size(sp->dt);
  char *plain = malloc(bytes), *fused = malloc(bytes);
  ck_assert(plain != NULL && fused != NULL);
  ct_scope *s = chain_scope(sp);
  run_dims(p, s, NULL, plain, bytes, out);
  ct_scope_free(s);
  s = chain_scope(sp);
  ct_executor_options o = {.optimize = true};
  run_dims(p, s, &o, fused, bytes, out);
  ck_assert_int_eq(memcmp(plain, fused, bytes), 0);
  if (sp->nans) { /* the NaNs reach y through the activation */
    int64_t last = ct_ddim_numel(out) - 1;
    for (int k = 0; k < 2; k++) {
      double v = sp->dt == CT_FLOAT32 ? ((float *)fused)[k * last] : ((double *)fused)[k * last];
      ck_assert_msg(isnan(v), "y[%lld] = %g, expected NaN", (long long)(k * last), v);
    }
  }
  free(plain);
  free(fused);
  /* Every link of the chain but its last output (which assign copies when act is NULL). */
  const char *links[4];
  size_t n = 0;
  links[n++] = "c";
  if (sp->bias) links[n++] = "cb";
  if (sp->bn || sp->bn_global) links[n++] = "cn";
  if (sp->residual) links[n++] = "cr";
  if (sp->act == NULL) n--;
  for (size_t k = 0; k < n; k++) ck_assert_msg(!has_memory(s, links[k]), "%s", links[k]);
  if (sp->bias) ck_assert(!has_memory(s, "b3")); /* the bias's reshape went with the chain */
  if (sp->bn || sp->bn_global) { /* never made */
    ck_assert(!has_memory(s, "bm") && !has_memory(s, "bsv"));
  }
  ct_scope_free(s);
  ct_program_free(p);
}

START_TEST(conv_bias_relu_fuses_to_the_same_bits) {
  check_fused(&(spec){.bias = true, .act = "relu", .dt = CT_FLOAT32});
}
END_TEST

START_TEST(conv_bias_residual_clip_fuses_to_the_same_bits) {
  check_fused(&(spec){.bias = true, .residual = true, .act = "clip", .dt = CT_FLOAT32});
  check_fused(&(spec){.bias = true, .residual = true, .act = "clip", .dt = CT_FLOAT64});
  check_fused(&(spec){.bias = true, .act = "clip", .exact_clip = true, .dt = CT_FLOAT32});
}
END_TEST

START_TEST(a_residual_that_broadcasts_fuses_to_the_same_bits) {
  check_fused(&(spec){.residual = true, .act = "relu", .dt = CT_FLOAT32,
                      .res_dims = CT_DIMS(4, 1, 1)});
  check_fused(&(spec){.residual = true, .act = "relu", .dt = CT_FLOAT32,
                      .res_dims = CT_DIMS(1, 5)});
}
END_TEST

/* Shapes whose convolution runs as per-image GEMMs that apply the epilogue to each tile as it
 * is finished: several tiles each way, k in two blocks (the epilogue after the last only),
 * edge tiles, 1x1 filters read in place, images on three threads, residuals that broadcast. */
START_TEST(the_epilogue_in_the_gemm_tiles_gives_the_same_bits) {
  /* 5x5 (never Winograd): k = 16 x 25 = 400, 16 filters, 10 x 10 = 100 outputs */
  check_fused(&(spec){.bias = true, .residual = true, .act = "clip", .dt = CT_FLOAT32, .c = 16,
                      .hw = 14, .ks = 5});
  check_fused(&(spec){.bias = true, .residual = true, .act = "relu", .dt = CT_FLOAT64, .c = 16,
                      .hw = 14, .ks = 5});
  /* 1x1: k = 300, 300 filters, 81 outputs */
  check_fused(&(spec){.bias = true, .act = "clip", .exact_clip = true, .dt = CT_FLOAT32,
                      .c = 300, .hw = 9, .ks = 1});
  check_fused(&(spec){.residual = true, .act = "relu", .dt = CT_FLOAT32, .c = 16, .hw = 14,
                      .ks = 5, .res_dims = CT_DIMS(16, 1, 1)});
  check_fused(&(spec){.bias = true, .residual = true, .dt = CT_FLOAT32, .c = 16, .hw = 14,
                      .ks = 5, .res_dims = CT_DIMS(1, 10)});
  /* clip between bounds the dtype holds (in the kernel's registers) with a residual; 7x7
   * outputs (a plan that transposes the product: its tiles element by element) */
  check_fused(&(spec){.bias = true, .residual = true, .act = "clip", .exact_clip = true,
                      .dt = CT_FLOAT32, .c = 40, .hw = 7, .ks = 1});
  check_fused(&(spec){.bias = true, .residual = true, .act = "clip", .exact_clip = true,
                      .dt = CT_FLOAT64, .c = 24, .hw = 12, .ks = 3});
  check_fused(&(spec){.residual = true, .act = "relu", .dt = CT_FLOAT32, .c = 24, .hw = 12,
                      .ks = 3, .res_dims = CT_DIMS(24, 1, 1)});
  ct_set_num_threads(3);
  check_fused(&(spec){.bias = true, .residual = true, .act = "relu", .dt = CT_FLOAT32, .n = 3,
                      .c = 16, .hw = 20, .ks = 5});
  check_fused(&(spec){.bias = true, .act = "clip", .dt = CT_FLOAT32, .n = 1, .c = 40, .hw = 30,
                      .ks = 1});
  ct_set_num_threads(1);
}
END_TEST

/* Shapes that take Winograd's paths (float32 3x3, 8 channels or more) and the direct loop for
 * small output widths: the epilogue on each output plane's rows of a block right after they are
 * written. F(2x2, 3x3) on 10 x 10 outputs, F(4x4, 3x3) on 28 x 28 and 16 x 16 (two and three
 * images: each its own residual), the direct loop on two 7 x 7 images, on one thread and on
 * three (blocks split across the threads, and one image's block split over all of them by
 * planes). */
START_TEST(the_epilogue_in_winograd_and_direct_gives_the_same_bits) {
  check_fused(&(spec){.bias = true, .residual = true, .act = "relu", .dt = CT_FLOAT32, .c = 24,
                      .hw = 12, .ks = 3});
  check_fused(&(spec){.bias = true, .residual = true, .act = "clip", .exact_clip = true,
                      .dt = CT_FLOAT32, .n = 2, .c = 16, .hw = 30, .ks = 3});
  check_fused(&(spec){.bias = true, .act = "relu", .dt = CT_FLOAT32, .c = 16, .hw = 30, .ks = 3});
  /* two 7 x 7 images of 40 filters: the direct loop (ops/cpu/conv_direct.c) */
  check_fused(&(spec){.bias = true, .residual = true, .act = "relu", .dt = CT_FLOAT32, .n = 2,
                      .c = 40, .hw = 9, .ks = 3});
  ct_set_num_threads(3);
  check_fused(&(spec){.bias = true, .residual = true, .act = "relu", .dt = CT_FLOAT32, .c = 16,
                      .hw = 30, .ks = 3});
  check_fused(&(spec){.bias = true, .residual = true, .act = "relu", .dt = CT_FLOAT32, .n = 3,
                      .c = 24, .hw = 18, .ks = 3});
  /* the direct loop's bands of rows (one image, two blocks of filters on three threads; 5x5,
   * which Winograd does not take) */
  check_fused(&(spec){.bias = true, .residual = true, .act = "relu", .dt = CT_FLOAT32, .c = 40,
                      .hw = 11, .ks = 5});
  /* rows wider than 14 at stride 2, in pieces of 14 and 5 (the epilogue at each piece's
   * columns), a clamp, one thread and three; and with 3 channels (27 terms: the rows vectorised
   * over pixels, conv_direct_wide.c), 40 filters, in pieces of 112 and 13 */
  for (int t = 1; t <= 3; t += 2) {
    ct_set_num_threads(t);
    check_fused(&(spec){.bias = true, .residual = true, .act = "clip", .exact_clip = true,
                        .dt = CT_FLOAT32, .c = 32, .hw = 40, .ks = 3, .stride = 2});
    check_fused(&(spec){.bias = true, .residual = true, .act = "clip", .exact_clip = true,
                        .dt = CT_FLOAT32, .c = 3, .m = 40, .hw = 252, .ks = 3, .stride = 2});
    check_fused(&(spec){.bias = true, .act = "relu", .nans = true, .dt = CT_FLOAT32, .c = 3,
                        .m = 32, .hw = 60, .ks = 3, .stride = 2, .same = true});
  }
  ct_set_num_threads(1);
}
END_TEST

START_TEST(depthwise_and_activation_alone_fuse) {
  check_fused(&(spec){.bias = true, .depthwise = true, .act = "clip", .dt = CT_FLOAT32});
  /* the epilogue plane by plane in the depthwise kernel: residual planes, exact clip, float64,
   * large planes (straight from the image, or banded) and small ones (channels a block at a
   * time) */
  check_fused(&(spec){.bias = true, .residual = true, .depthwise = true, .act = "relu",
                      .dt = CT_FLOAT32, .c = 8, .hw = 40});
  for (int t = 2; t <= 3; t++) { /* in bands of rows (conv_dw_bands): the residual's offsets */
    ct_set_num_threads(t);
    check_fused(&(spec){.bias = true, .residual = true, .depthwise = true, .act = "clip",
                        .exact_clip = true, .dt = CT_FLOAT32, .c = 8, .hw = 40});
  }
  ct_set_num_threads(1);
  check_fused(&(spec){.bias = true, .residual = true, .depthwise = true, .act = "clip",
                      .exact_clip = true, .dt = CT_FLOAT64, .c = 40, .hw = 9});
  check_fused(&(spec){.residual = true, .depthwise = true, .dt = CT_FLOAT32, .c = 6,
                      .res_dims = CT_DIMS(6, 1, 1)});
  /* float32 on AVX-512 in the plane kernel's registers: the clamp with each image's residual,
   * the bias alone */
  check_fused(&(spec){.bias = true, .residual = true, .depthwise = true, .act = "clip",
                      .exact_clip = true, .dt = CT_FLOAT32, .n = 2, .c = 8, .hw = 20});
  check_fused(&(spec){.bias = true, .depthwise = true, .dt = CT_FLOAT32, .c = 4, .hw = 30});
  /* float32 on AVX-512 in the small planes' lanes (7 x 7 outputs): blocks of 32 channels and a
   * partial one, a block of at most 16 over two images; the relu or clamp without the bias; a
   * residual (applied after the block, by the plane) */
  check_fused(&(spec){.bias = true, .depthwise = true, .act = "relu", .dt = CT_FLOAT32, .c = 40,
                      .hw = 9});
  check_fused(&(spec){.bias = true, .depthwise = true, .act = "clip", .exact_clip = true,
                      .dt = CT_FLOAT32, .n = 2, .c = 6, .hw = 9});
  check_fused(&(spec){.depthwise = true, .act = "clip", .exact_clip = true, .dt = CT_FLOAT32,
                      .c = 40, .hw = 9});
  check_fused(&(spec){.bias = true, .residual = true, .depthwise = true, .act = "relu",
                      .dt = CT_FLOAT32, .c = 40, .hw = 9});
  /* float32 on AVX-512 on small planes at stride 1 padded to their size (flat): each image's
   * residual with the clamp, one to four vectors a plane, the bias and relu alone */
  check_fused(&(spec){.bias = true, .residual = true, .depthwise = true, .act = "clip",
                      .exact_clip = true, .dt = CT_FLOAT32, .n = 2, .c = 6, .hw = 7,
                      .same = true});
  check_fused(&(spec){.bias = true, .residual = true, .depthwise = true, .act = "relu",
                      .dt = CT_FLOAT32, .c = 5, .hw = 4, .same = true});
  check_fused(&(spec){.bias = true, .depthwise = true, .act = "relu", .dt = CT_FLOAT32, .c = 5,
                      .hw = 6, .same = true});
  check_fused(&(spec){.residual = true, .depthwise = true, .dt = CT_FLOAT32, .c = 6, .hw = 7,
                      .same = true, .res_dims = CT_DIMS(6, 1, 1)});
  check_fused(&(spec){.act = "relu", .dt = CT_FLOAT32});
  check_fused(&(spec){.bias = true, .dt = CT_FLOAT32});
}
END_TEST

/* A NaN reaching relu or clip stays NaN (as the separate ops give, as ONNX runtimes and PyTorch
 * give) on every path that applies the epilogue: GEMM tiles in registers (float32 and float64)
 * and transposed ones element by element, Winograd and the direct loop's rows, the depthwise
 * planes (AVX-512 registers, banded, and small planes' channel lanes). */
START_TEST(a_nan_passes_through_the_fused_activation) {
  check_fused(&(spec){.residual = true, .act = "relu", .dt = CT_FLOAT32, .c = 16, .hw = 14,
                      .ks = 5, .nans = true});
  check_fused(&(spec){.bias = true, .residual = true, .act = "relu", .dt = CT_FLOAT64, .c = 16,
                      .hw = 14, .ks = 5, .nans = true});
  check_fused(&(spec){.bias = true, .residual = true, .act = "relu", .dt = CT_FLOAT32, .c = 40,
                      .hw = 7, .ks = 1, .nans = true});
  check_fused(&(spec){.bias = true, .residual = true, .act = "clip", .exact_clip = true,
                      .dt = CT_FLOAT32, .c = 40, .hw = 7, .ks = 1, .nans = true});
  check_fused(&(spec){.bias = true, .residual = true, .act = "relu", .dt = CT_FLOAT32, .c = 24,
                      .hw = 12, .ks = 3, .nans = true});
  check_fused(&(spec){.bias = true, .residual = true, .act = "relu", .dt = CT_FLOAT32, .n = 2,
                      .c = 40, .hw = 9, .ks = 3, .nans = true});
  check_fused(&(spec){.bias = true, .residual = true, .depthwise = true, .act = "relu",
                      .dt = CT_FLOAT32, .n = 2, .c = 8, .hw = 20, .nans = true});
  check_fused(&(spec){.bias = true, .residual = true, .depthwise = true, .act = "relu",
                      .dt = CT_FLOAT32, .c = 8, .hw = 40, .nans = true});
  check_fused(&(spec){.bias = true, .residual = true, .depthwise = true, .act = "relu",
                      .dt = CT_FLOAT64, .c = 40, .hw = 9, .nans = true});
  check_fused(&(spec){.bias = true, .residual = true, .depthwise = true, .act = "relu",
                      .dt = CT_FLOAT32, .n = 2, .c = 6, .hw = 7, .same = true, .nans = true});
  check_fused(&(spec){.bias = true, .depthwise = true, .act = "clip", .exact_clip = true,
                      .dt = CT_FLOAT32, .c = 6, .hw = 7, .same = true, .nans = true});
  /* the small planes' lanes (NaN inputs: the residual is the plane's) */
  check_fused(&(spec){.bias = true, .depthwise = true, .act = "relu", .dt = CT_FLOAT32, .c = 40,
                      .hw = 9, .nans = true});
  check_fused(&(spec){.bias = true, .depthwise = true, .act = "clip", .exact_clip = true,
                      .dt = CT_FLOAT32, .c = 40, .hw = 9, .nans = true});
}
END_TEST

/* batch_norm with the inputs' statistics (is_test, or use_global_stats) joins the chain after
 * the bias, its arithmetic batch_norm's (in double, rounded once): the bits of the five ops, on
 * the GEMM's paths (1x1, 5x5), Winograd's F(4x4) and F(2x2), the direct loop's narrow and wide
 * rows at stride 2, the depthwise kernel's and float64, with and without the bias, the residual
 * and each activation, and NaN through it. */
START_TEST(conv_batch_norm_chains_fuse_to_the_same_bits) {
  check_fused(&(spec){.bias = true, .bn = true, .residual = true, .act = "relu",
                      .dt = CT_FLOAT32, .c = 32, .hw = 15, .same = true, .stride = 2,
                      .nans = true});
  check_fused(&(spec){.bn = true, .act = "clip", .exact_clip = true, .dt = CT_FLOAT32,
                      .c = 32, .hw = 33, .same = true, .stride = 2});
  check_fused(&(spec){.bias = true, .bn = true, .residual = true, .dt = CT_FLOAT32, .c = 16,
                      .hw = 12, .same = true, .nans = true});
  check_fused(&(spec){.bias = true, .bn = true, .residual = true, .act = "relu",
                      .dt = CT_FLOAT32});
  check_fused(&(spec){.bn = true, .act = "relu", .dt = CT_FLOAT32, .c = 32, .hw = 9, .ks = 1});
  check_fused(&(spec){.bn = true, .residual = true, .act = "clip", .exact_clip = true,
                      .dt = CT_FLOAT32, .n = 2, .c = 16, .hw = 30, .ks = 3});
  check_fused(&(spec){.bias = true, .bn = true, .dt = CT_FLOAT64, .c = 16, .hw = 14, .ks = 5,
                      .residual = true, .res_dims = CT_DIMS(1, 10)});
  check_fused(&(spec){.bn = true, .depthwise = true, .act = "clip", .dt = CT_FLOAT32, .c = 40,
                      .hw = 9, .nans = true});
  check_fused(&(spec){.bias = true, .bn_global = true, .act = "relu", .dt = CT_FLOAT64});
  ct_set_num_threads(3);
  check_fused(&(spec){.bias = true, .bn = true, .residual = true, .act = "relu",
                      .dt = CT_FLOAT32, .n = 3, .c = 24, .hw = 18, .ks = 3});
  ct_set_num_threads(1);
}
END_TEST

/* A bias an op of the program writes first (b = relu(b0)): its length when the executor is
 * made need not be its length at the conv, so the chain is left alone, with the same bits. */
/* The default chain of sp run unoptimized and optimized over scopes of their own, y's bytes
 * compared; the optimized run's scope, for the caller to look into and free. */
static ct_scope *same_bits_both_ways(const spec *sp) {
  ct_program *p = chain_program(sp);
  float plain[100], opt[100];
  ct_scope *s = chain_scope(sp);
  run_into(p, s, NULL, plain, sizeof plain);
  ct_scope_free(s);
  s = chain_scope(sp);
  ct_executor_options o = {.optimize = true};
  run_into(p, s, &o, opt, sizeof opt);
  ck_assert_int_eq(memcmp(plain, opt, sizeof plain), 0);
  ct_program_free(p);
  return s;
}

START_TEST(a_bias_an_op_writes_is_not_fused) {
  ct_scope *s = same_bits_both_ways(
      &(spec){.bias = true, .act = "relu", .dt = CT_FLOAT32, .bias_written = true});
  /* c: the conv's own output (no conv2d_fusion); the add and relu after it fuse as an
   * expression, cb never allocated */
  ck_assert(has_memory(s, "c") && !has_memory(s, "cb"));
  ct_scope_free(s);
}
END_TEST

/* Left alone, with the plain executor's bits: batch_norm in training mode (its own batch's
 * statistics, and new running ones), and one whose MeanOut another op reads. */
START_TEST(batch_norms_the_pass_cannot_drop_are_left_alone) {
  for (int k = 0; k < 2; k++) {
    ct_scope *s = same_bits_both_ways(&(spec){.bias = true, .act = "relu", .dt = CT_FLOAT32,
                                              .bn_training = k == 0, .bn_read = k == 1});
    ck_assert(has_memory(s, "cn") && has_memory(s, "bm"));
    ck_assert(!has_memory(s, "c")); /* the conv and its bias still fuse */
    ct_scope_free(s);
  }
}
END_TEST

/* conv2d_fusion made by hand: a batch norm of two of its four vectors is refused naming the
 * rule; one of the wrong length names the vector and the channel count. */
START_TEST(a_partial_or_misshapen_batch_norm_is_refused) {
  spec sp = {.dt = CT_FLOAT32};
  ct_scope *s = chain_scope(&sp);
  ct_op *op = ct_op_new("conv2d_fusion");
  ct_op_set_input(op, "Input", "x");
  ct_op_set_input(op, "Filter", "w");
  ct_op_set_output(op, "Output", "y");
  ct_op_set_input(op, "BnScale", "bs");
  ct_op_set_input(op, "BnMean", "bmu");
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "2 of the batch norm's inputs", "wire all four",
            NULL);
  ct_op_set_input(op, "BnBias", "bb");
  ct_op_set_input(op, "BnVariance", "r");
  run_fails(op, s, CT_ERR_SHAPE, "BnVariance", "'r'", "[4]", NULL);
  ct_op_set_input(op, "BnVariance", "bvar");
  run(op, s);
  ck_assert(ct_ddim_equal(ct_tensor_dims(ct_var_get_tensor(ct_scope_find_var(s, "y"))),
                          CT_DIMS(1, 4, 5, 5)));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* The chain with an extra reader of the bias's view b3: the reshape stays and runs (b3 holds
 * the bias), the conv and its bias add still fuse, and y and the reader's result are right. */
START_TEST(a_bias_view_read_elsewhere_keeps_its_reshape) {
  spec sp = {.bias = true, .act = "relu", .dt = CT_FLOAT32};
  ct_program *p = chain_program(&sp);
  ck_assert_int_eq(ct_program_append(p, op_x("exp", "b3", "e")), CT_OK);
  double plain[100], fused[100], e_plain[2], e_fused[2];
  ct_scope *s = chain_scope(&sp);
  run_into(p, s, NULL, plain, 400);
  memcpy(e_plain, ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(s, "e")), CT_FLOAT32), 16);
  ct_scope_free(s);
  s = chain_scope(&sp);
  ct_executor_options o = {.optimize = true};
  run_into(p, s, &o, fused, 400);
  memcpy(e_fused, ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(s, "e")), CT_FLOAT32), 16);
  ck_assert_int_eq(memcmp(plain, fused, 400), 0);
  ck_assert_int_eq(memcmp(e_plain, e_fused, 16), 0);
  ck_assert(has_memory(s, "b3"));
  ck_assert(!has_memory(s, "c") && !has_memory(s, "cb"));
  /* the fused op reads the bias itself: an edit of the reshape it kept is caught */
  ct_scope_free(s);
  s = chain_scope(&sp);
  ct_executor *ex = ct_executor_new_with(p, s, ct_cpu(), &o);
  ck_assert_ptr_nonnull(ex);
  static const int64_t row[3] = {1, -1, 1};
  ck_assert_int_eq(ct_op_set_attr_ints((ct_op *)ct_program_op(p, 1), "shape", row, 3), CT_OK);
  ck_assert_int_eq(ct_executor_run(ex), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "op #1 'reshape' was edited");
  ct_executor_free(ex);
  ct_scope_free(s);
  ct_program_free(p);
}
END_TEST

/* The chain with an extra reader of cb appended: cb keeps its value and y is right. */
START_TEST(an_intermediate_read_elsewhere_is_not_fused) {
  spec sp = {.bias = true, .act = "relu", .dt = CT_FLOAT32};
  ct_program *p = chain_program(&sp);
  ck_assert_int_eq(ct_program_append(p, op_x("exp", "cb", "e")), CT_OK);
  double plain[100], fused[100];
  ct_scope *s = chain_scope(&sp);
  run_into(p, s, NULL, plain, 400);
  ct_scope_free(s);
  s = chain_scope(&sp);
  ct_executor_options o = {.optimize = true};
  run_into(p, s, &o, fused, 400);
  ck_assert_int_eq(memcmp(plain, fused, 400), 0);
  ck_assert(has_memory(s, "cb"));
  ck_assert(!has_memory(s, "c")); /* conv + bias still fused: c is read by the add alone */
  ck_assert(has_memory(s, "e"));
  ct_scope_free(s);
  ct_program_free(p);
}
END_TEST

/* A kept intermediate, and one the caller made before the executor, hold their values. */
START_TEST(kept_and_callers_intermediates_are_not_fused) {
  spec sp = {.bias = true, .act = "relu", .dt = CT_FLOAT32};
  ct_program *p = chain_program(&sp);
  double plain[100], fused[100];
  ct_scope *s = chain_scope(&sp);
  run_into(p, s, NULL, plain, 400);
  float cb_plain[100];
  memcpy(cb_plain, var_f32(s, "cb"), 400);
  ct_scope_free(s);
  static const char *const keep[] = {"cb"};
  ct_executor_options o = {.optimize = true, .keep = keep, .n_keep = 1};
  s = chain_scope(&sp);
  run_into(p, s, &o, fused, 400);
  ck_assert_int_eq(memcmp(plain, fused, 400), 0);
  ck_assert_int_eq(memcmp(cb_plain, var_f32(s, "cb"), 400), 0);
  ct_scope_free(s);
  s = chain_scope(&sp);
  ct_var_tensor(ct_scope_var(s, "c")); /* the caller's own variable */
  ct_executor_options o2 = {.optimize = true};
  run_into(p, s, &o2, fused, 400);
  ck_assert_int_eq(memcmp(plain, fused, 400), 0);
  ck_assert(has_memory(s, "c"));
  ct_scope_free(s);
  ct_program_free(p);
}
END_TEST

START_TEST(editing_a_fused_op_fails_the_run) {
  spec sp = {.bias = true, .act = "relu", .dt = CT_FLOAT32};
  ct_program *p = chain_program(&sp);
  ct_scope *s = chain_scope(&sp);
  ct_executor_options o = {.optimize = true};
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  static const int64_t two[2] = {2, 2};
  ck_assert_int_eq(ct_op_set_attr_ints((ct_op *)ct_program_op(p, 0), "strides", two, 2), CT_OK);
  ck_assert_int_eq(ct_executor_run(e), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "op #0 'conv2d' was edited");
  HAS(ct_last_error(), "make a new executor");
  ct_executor_free(e);
  /* The bias's reshape went with the chain (its view is read by the add alone), so an edit of
   * it is caught too. */
  ct_scope_free(s);
  s = chain_scope(&sp);
  e = ct_executor_new_with(p, s, ct_cpu(), &o);
  ck_assert_ptr_nonnull(e);
  static const int64_t row[3] = {1, -1, 1};
  ck_assert_int_eq(ct_op_set_attr_ints((ct_op *)ct_program_op(p, 1), "shape", row, 3), CT_OK);
  ck_assert_int_eq(ct_executor_run(e), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "op #1 'reshape' was edited");
  ct_executor_free(e);
  ct_scope_free(s);
  ct_program_free(p);
}
END_TEST

/* ---- assign_elision ------------------------------------------------------------------------ */

/* a = assign(x); [x = 0.5 x in place when halve]; y = exp(a), z = a + x: run twice with options
 * o, y and z into out (40 values); the scope into *keep_scope. */
static void assign_run(bool halve, const ct_executor_options *o, float *out,
                       ct_scope **keep_scope) {
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op_x("assign", "x", "a")), CT_OK);
  if (halve) {
    ct_op *h = op_x("scale", "x", "x");
    ck_assert_int_eq(ct_op_set_attr_float(h, "scale", 0.5), CT_OK);
    ck_assert_int_eq(ct_program_append(p, h), CT_OK);
  }
  ck_assert_int_eq(ct_program_append(p, op_x("exp", "a", "y")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_add", "a", "x", "z")), CT_OK);
  ct_scope *s = ct_scope_new();
  put_pattern(s, "x", CT_DIMS(4, 5), 7, CT_FLOAT32);
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), o);
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  for (int r = 0; r < 2; r++) {
    put_pattern(s, "x", CT_DIMS(4, 5), 7, CT_FLOAT32); /* each run from the same x */
    ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  }
  memcpy(out, var_f32(s, "y"), 80);
  memcpy(out + 20, var_f32(s, "z"), 80);
  ct_executor_free(e);
  ct_program_free(p);
  *keep_scope = s;
}

/* The assign goes: its output never gets memory, y and z are the same bits. */
START_TEST(an_intermediate_assign_is_elided_to_the_same_bits) {
  float plain[40], opt[40];
  ct_scope *s;
  assign_run(false, NULL, plain, &s);
  ck_assert(has_memory(s, "a"));
  ct_scope_free(s);
  ct_executor_options o = {.optimize = true};
  assign_run(false, &o, opt, &s);
  ck_assert_int_eq(memcmp(plain, opt, sizeof plain), 0);
  ck_assert(!has_memory(s, "a"));
  ct_scope_free(s);
}
END_TEST

/* Left alone: a kept output, and an input written after the assign (the readers must see the
 * copy, not the new x). */
START_TEST(an_assign_whose_copy_matters_stays) {
  float plain[40], opt[40];
  ct_scope *s;
  static const char *const keep[] = {"a"};
  ct_executor_options kept = {.optimize = true, .keep = keep, .n_keep = 1};
  assign_run(false, NULL, plain, &s);
  ct_scope_free(s);
  assign_run(false, &kept, opt, &s);
  ck_assert_int_eq(memcmp(plain, opt, sizeof plain), 0);
  ck_assert(has_memory(s, "a"));
  ct_scope_free(s);
  ct_executor_options o = {.optimize = true}; /* x halved in place after the copy */
  assign_run(true, NULL, plain, &s);
  ct_scope_free(s);
  assign_run(true, &o, opt, &s);
  ck_assert_int_eq(memcmp(plain, opt, sizeof plain), 0);
  ck_assert(has_memory(s, "a"));
  ct_scope_free(s);
}
END_TEST

/* The readers of an elided assign now read its input: an edit of one fails the run. */
START_TEST(editing_a_reader_of_an_elided_assign_fails_the_run) {
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op_x("assign", "x", "a")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("exp", "a", "y")), CT_OK);
  ct_scope *s = ct_scope_new();
  put_pattern(s, "x", CT_DIMS(3), 1, CT_FLOAT32);
  ct_executor_options o = {.optimize = true};
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ck_assert_int_eq(ct_op_set_input((ct_op *)ct_program_op(p, 1), "X", "x"), CT_OK);
  ck_assert_int_eq(ct_executor_run(e), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "op #1 'exp' was edited");
  ct_executor_free(e);
  ct_scope_free(s);
  ct_program_free(p);
}
END_TEST

/* A bias of 3 elements for a conv of one output channel broadcasts it: y is [1, 3, 5, 5], which
 * conv2d_fusion cannot make, so the chain is left alone, with the same bits. */
START_TEST(a_bias_that_enlarges_the_output_is_not_fused) {
  spec sp = {.bias = true, .act = "relu", .dt = CT_FLOAT32, .c = 1};
  ct_program *p = chain_program(&sp);
  float plain[75], opt[75];
  ct_scope *s = chain_scope(&sp);
  put_pattern(s, "b", CT_DIMS(3), 3, CT_FLOAT32);
  run_dims(p, s, NULL, plain, sizeof plain, CT_DIMS(1, 3, 5, 5));
  ct_scope_free(s);
  s = chain_scope(&sp);
  put_pattern(s, "b", CT_DIMS(3), 3, CT_FLOAT32);
  ct_executor_options o = {.optimize = true};
  run_dims(p, s, &o, opt, sizeof opt, CT_DIMS(1, 3, 5, 5));
  ck_assert_int_eq(memcmp(plain, opt, sizeof plain), 0);
  /* c: the conv's own output (no conv2d_fusion); the add and relu after it fuse as an
   * expression, cb never allocated */
  ck_assert(has_memory(s, "c") && !has_memory(s, "cb"));
  ct_scope_free(s);
  ct_program_free(p);
}
END_TEST

/* A bias of 3 elements for 4 channels fails either way: unoptimized, and optimized when the
 * bias fitted as the executor was made and was replaced before the run. The fused op cannot
 * run it, so the executor runs the ops it stands for, which fail as the plain executor's do:
 * the same status and message, naming the add. */
START_TEST(a_bias_of_the_wrong_size_fails_as_unoptimized) {
  spec sp = {.bias = true, .act = "relu", .dt = CT_FLOAT32};
  ct_program *p = chain_program(&sp);
  ct_scope *s = chain_scope(&sp);
  put_pattern(s, "b", CT_DIMS(3), 3, CT_FLOAT32);
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  ck_assert_int_eq(ct_executor_run(e), CT_ERR_SHAPE);
  char plain[512];
  snprintf(plain, sizeof plain, "%s", ct_last_error());
  ct_executor_free(e);
  ct_scope_free(s); /* a fresh scope: c, cb ... must be the executor's own to be fused */
  s = chain_scope(&sp);
  ct_executor_options o = {.optimize = true};
  e = ct_executor_new_with(p, s, ct_cpu(), &o);
  put_pattern(s, "b", CT_DIMS(3), 3, CT_FLOAT32);
  ck_assert_int_eq(ct_executor_run(e), CT_ERR_SHAPE);
  ck_assert_str_eq(ct_last_error(), plain);
  HAS(plain, "elementwise_add");
  ct_executor_free(e);
  ct_scope_free(s);
  ct_program_free(p);
}
END_TEST

/* A one-channel conv whose bias is replaced by one of 3 after the executor was made (fused: it
 * fitted then): the add now broadcasts the output to 3 channels, which conv2d_fusion does not
 * do, so the run falls back on the chain's own ops: CT_OK, the plain executor's bits, the
 * thread's last status still the one before the run, and the chain's intermediates' memory
 * gone after it. */
START_TEST(a_bias_that_enlarges_the_output_later_falls_back) {
  spec sp = {.bias = true, .act = "relu", .dt = CT_FLOAT32, .c = 1};
  ct_program *p = chain_program(&sp);
  float plain[75];
  ct_scope *s = chain_scope(&sp);
  put_pattern(s, "b", CT_DIMS(3), 3, CT_FLOAT32);
  run_dims(p, s, NULL, plain, sizeof plain, CT_DIMS(1, 3, 5, 5));
  ct_scope_free(s);
  s = chain_scope(&sp);
  ct_executor_options o = {.optimize = true};
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
  ck_assert_ptr_nonnull(e);
  put_pattern(s, "b", CT_DIMS(3), 3, CT_FLOAT32);
  for (int run = 0; run < 2; run++) { /* the second run falls back again */
    ct_clear_error();
    ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
    ck_assert_int_eq(ct_last_status(), CT_OK);
    const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, "y"));
    ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(1, 3, 5, 5)));
    ck_assert_int_eq(memcmp(ct_tensor_data(t, CT_FLOAT32), plain, sizeof plain), 0);
    ck_assert(!has_memory(s, "c") && !has_memory(s, "cb"));
  }
  ct_executor_free(e);
  ct_scope_free(s);
  ct_program_free(p);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("passes");
  CT_ADD_TEST(s, conv_bias_relu_fuses_to_the_same_bits);
  CT_ADD_TEST(s, a_bias_that_enlarges_the_output_is_not_fused);
  CT_ADD_TEST(s, conv_batch_norm_chains_fuse_to_the_same_bits);
  CT_ADD_TEST(s, a_bias_an_op_writes_is_not_fused);
  CT_ADD_TEST(s, batch_norms_the_pass_cannot_drop_are_left_alone);
  CT_ADD_TEST(s, a_partial_or_misshapen_batch_norm_is_refused);
  CT_ADD_TEST(s, a_nan_passes_through_the_fused_activation);
  CT_ADD_TEST(s, an_intermediate_assign_is_elided_to_the_same_bits);
  CT_ADD_TEST(s, an_assign_whose_copy_matters_stays);
  CT_ADD_TEST(s, editing_a_reader_of_an_elided_assign_fails_the_run);
  CT_ADD_TEST(s, conv_bias_residual_clip_fuses_to_the_same_bits);
  CT_ADD_TEST(s, the_epilogue_in_the_gemm_tiles_gives_the_same_bits);
  CT_ADD_TEST(s, the_epilogue_in_winograd_and_direct_gives_the_same_bits);
  CT_ADD_TEST(s, a_residual_that_broadcasts_fuses_to_the_same_bits);
  CT_ADD_TEST(s, depthwise_and_activation_alone_fuse);
  CT_ADD_TEST(s, an_intermediate_read_elsewhere_is_not_fused);
  CT_ADD_TEST(s, a_bias_view_read_elsewhere_keeps_its_reshape);
  CT_ADD_TEST(s, kept_and_callers_intermediates_are_not_fused);
  CT_ADD_TEST(s, editing_a_fused_op_fails_the_run);
  CT_ADD_TEST(s, a_bias_of_the_wrong_size_fails_as_unoptimized);
  CT_ADD_TEST(s, a_bias_that_enlarges_the_output_later_falls_back);
  return s;
}

CT_TEST_MAIN(make_suite)
