/* SPDX-License-Identifier: Apache-2.0 */
/* The inverted_residual pass (ops/passes_block.c, docs/design/passes.md): MobileNetV2's block
 * (1x1 conv + bias + clip, 3x3 depthwise + bias + clip, 1x1 conv + bias + the block's input)
 * runs as one op whose results equal the unoptimized executor's bit for bit at 1, 2 and 3
 * threads, whose intermediates never get memory; left alone where its conditions fail; and the
 * op made by hand refuses bad operands naming them. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/cpu/conv_block.h" /* ct__ir_split (internal: the static library) */
#include "ops/cpu/gemm_ukr.h"   /* ct__gemm_use_kernel */
#include "passes_util.h"

typedef struct blk {
  int64_t n, c, e, m, h, w, s; /* x [n, c, h, w]; e expanded channels, m out, stride s */
  bool residual;               /* y = x + ...: m == c and s == 1 */
  const char *act;             /* every stage's: "clip" (0 .. 6), "relu" or NULL (none) */
  ct_dtype dt;
  bool nans;      /* NaN at x's first element */
  bool inf_w2;    /* an infinite depthwise weight (the corner tap of channel 0) */
  bool read_a1;   /* another op reads the expansion's output: not fused */
  bool other_res; /* the residual is a variable other than x: not fused */
  bool bn_expand;   /* a batch_norm (inference) between the expansion's bias and its
                     * activation: conv2d_fusion with a batch norm, which the block does not run */
  bool alias_write; /* between the depthwise and the projection, xs = exp(r), where xs is the
                     * caller's variable sharing x's memory (so x changes there): not fused */
  bool constants;   /* the filters and biases are the optimized executor's constants (its
                     * kernels then pack the filters once and keep them) */
  bool no_expand;   /* no expansion: the depthwise reads x (e == c), MobileNetV2's first block */
} blk;

static ct_op *conv(const char *type, const char *x, const char *w, const char *out, int64_t pad,
                   int64_t stride, int64_t groups) {
  ct_op *op = ct_op_new(type);
  ct_op_set_input(op, "Input", x);
  ct_op_set_input(op, "Filter", w);
  ct_op_set_output(op, "Output", out);
  const int64_t pads[2] = {pad, pad}, st[2] = {stride, stride};
  ct_op_set_attr_ints(op, "paddings", pads, 2);
  ct_op_set_attr_ints(op, "strides", st, 2);
  ct_op_set_attr_int(op, "groups", groups);
  return op;
}

/* out = act(in + reshape(b, [-1, 1, 1])), through the intermediate `mid` (and with `bn`, a
 * batch_norm of the sum before the activation). */
static void bias_act_bn(ct_program *p, const char *in, const char *b, const char *mid,
                        const char *out, const char *act, bool bn) {
  char view[32];
  snprintf(view, sizeof view, "%s_col", b);
  ct_op *r = op_x("reshape", b, view);
  static const int64_t col[3] = {-1, 1, 1};
  ct_op_set_attr_ints(r, "shape", col, 3);
  ck_assert_int_eq(ct_program_append(p, r), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_add", in, view, act ? mid : out)),
                   CT_OK);
  if (act == NULL) return;
  char normed[32];
  snprintf(normed, sizeof normed, "%s_bn", mid);
  if (bn) append_bn(p, mid, normed);
  ct_op *a = op_x(act, bn ? normed : mid, out);
  if (strcmp(act, "clip") == 0) {
    ct_op_set_attr_float(a, "min", 0);
    ct_op_set_attr_float(a, "max", 6);
  }
  ck_assert_int_eq(ct_program_append(p, a), CT_OK);
}

static void bias_act(ct_program *p, const char *in, const char *b, const char *mid,
                     const char *out, const char *act) {
  bias_act_bn(p, in, b, mid, out, act, false);
}

static ct_program *block_program(const blk *b) {
  ct_program *p = ct_program_new();
  if (!b->no_expand) {
    ck_assert_int_eq(ct_program_append(p, conv("conv2d", "x", "w1", "c1", 0, 1, 1)), CT_OK);
    bias_act_bn(p, "c1", "b1", "c1b", "a1", b->act, b->bn_expand);
  }
  ck_assert_int_eq(ct_program_append(p, conv("depthwise_conv2d", b->no_expand ? "x" : "a1", "w2",
                                             "c2", 1, b->s, b->e)),
                   CT_OK);
  bias_act(p, "c2", "b2", "c2b", "a2", b->act);
  if (b->alias_write) ck_assert_int_eq(ct_program_append(p, op_x("exp", "r", "xs")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, conv("conv2d", "a2", "w3", "c3", 0, 1, 1)), CT_OK);
  bias_act(p, "c3", "b3", "unused", b->residual ? "c3b" : "y", NULL);
  if (b->residual) {
    const char *r = b->other_res ? "r" : "x";
    ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_add", r, "c3b", "y")), CT_OK);
  }
  if (b->read_a1) ck_assert_int_eq(ct_program_append(p, op_x("relu", "a1", "side")), CT_OK);
  return p;
}

static int64_t oh_of(const blk *b) { return (b->h - 1) / b->s + 1; }
static int64_t ow_of(const blk *b) { return (b->w - 1) / b->s + 1; }

static ct_scope *block_scope(const blk *b) {
  ct_scope *s = ct_scope_new();
  put_pattern(s, "x", CT_DIMS(b->n, b->c, b->h, b->w), 1, b->dt);
  put_pattern(s, "w1", CT_DIMS(b->e, b->c, 1, 1), 2, b->dt);
  put_pattern(s, "b1", CT_DIMS(b->e), 3, b->dt);
  put_pattern(s, "w2", CT_DIMS(b->e, 1, 3, 3), 4, b->dt);
  put_pattern(s, "b2", CT_DIMS(b->e), 5, b->dt);
  put_pattern(s, "w3", CT_DIMS(b->m, b->e, 1, 1), 6, b->dt);
  put_pattern(s, "b3", CT_DIMS(b->m), 7, b->dt);
  put_pattern(s, "r", CT_DIMS(b->n, b->m, oh_of(b), ow_of(b)), 8, b->dt);
  put_bn(s, b->e, b->dt);
  if (b->alias_write) {
    ck_assert_int_eq(ct_tensor_share(ct_var_tensor(ct_scope_var(s, "xs")),
                                     ct_var_get_tensor(ct_scope_find_var(s, "x"))),
                     CT_OK);
  }
  for (int k = 0; k < 2; k++) {
    if (!(k == 0 ? b->nans : b->inf_w2)) continue;
    ct_tensor *t = ct_var_tensor(ct_scope_var(s, k == 0 ? "x" : "w2"));
    void *d = ct_tensor_mutable_data(t, b->dt, ct_cpu());
    double v = k == 0 ? NAN : INFINITY;
    if (b->dt == CT_FLOAT32) ((float *)d)[0] = (float)v;
    else ((double *)d)[0] = v;
  }
  return s;
}

/* y's bytes after two runs of the block program over a fresh scope with options o (NULL: the
 * defaults); *fused whether the expanded and depthwise values never got memory. */
static void *run_block(const blk *b, const ct_executor_options *o, size_t *bytes, bool *fused) {
  ct_program *p = block_program(b);
  ct_scope *s = block_scope(b);
  ct_executor *ex = ct_executor_new_with(p, s, ct_cpu(), o);
  ck_assert_msg(ex != NULL, "%s", ct_last_error());
  for (int k = 0; k < 2; k++) ck_assert_msg(ct_executor_run(ex) == CT_OK, "%s", ct_last_error());
  const ct_tensor *y = ct_var_get_tensor(ct_scope_find_var(s, "y"));
  ck_assert(ct_ddim_equal(ct_tensor_dims(y), CT_DIMS(b->n, b->m, oh_of(b), ow_of(b))));
  *bytes = (size_t)ct_tensor_numel(y) * ct_dtype_size(b->dt);
  void *out = xmalloc((int64_t)*bytes, 1);
  memcpy(out, ct_tensor_data(y, b->dt), *bytes);
  *fused = !has_memory(s, "a1") && !has_memory(s, "a2");
  ct_executor_free(ex);
  ct_scope_free(s);
  ct_program_free(p);
  return out;
}

/* The block optimized equals it unoptimized bit for bit at 1, 2 and 3 threads; whether it was
 * fused (its intermediates without memory) is `want_fused`. */
static void check_block(const blk *b, bool want_fused) {
  size_t bytes, fbytes;
  bool fused;
  void *plain = run_block(b, NULL, &bytes, &fused);
  for (int threads = 1; threads <= 3; threads++) {
    ct_set_num_threads(threads);
    static const char *const weights[] = {"w1", "b1", "w2", "b2", "w3", "b3"};
    const size_t skip = b->no_expand ? 2 : 0; /* no w1 and b1 in the program */
    ct_executor_options o = {.optimize = true,
                             .constants = b->constants ? weights + skip : NULL,
                             .n_constants = b->constants ? 6 - skip : 0};
    void *opt = run_block(b, &o, &fbytes, &fused);
    ck_assert_uint_eq(fbytes, bytes);
    ck_assert_msg(memcmp(plain, opt, bytes) == 0, "differs from the unoptimized run at %d "
                  "threads", threads);
    ck_assert_msg(fused == want_fused, "fused %d, expected %d", fused, want_fused);
    if (b->nans) { /* x's first element reaches y's first through every stage */
      double v = b->dt == CT_FLOAT32 ? ((float *)opt)[0] : ((double *)opt)[0];
      ck_assert_msg(isnan(v), "y[0] = %g, expected NaN", v);
    }
    free(opt);
  }
  ct_set_num_threads(1);
  free(plain);
}

START_TEST(a_stride_1_block_with_its_residual_fuses_to_the_same_bits) {
  /* E 20: a vector and a masked one; 9 x 9 images, two of them */
  check_block(&(blk){.n = 2, .c = 8, .e = 20, .m = 8, .h = 9, .w = 9, .s = 1, .residual = true,
                     .act = "clip", .dt = CT_FLOAT32},
              true);
}
END_TEST

START_TEST(a_stride_2_block_fuses_to_the_same_bits) {
  /* odd and even sides (the last column's right tap outside, or not), relu, no activation */
  check_block(&(blk){.n = 1, .c = 5, .e = 36, .m = 7, .h = 11, .w = 8, .s = 2, .act = "relu",
                     .dt = CT_FLOAT32},
              true);
  check_block(&(blk){.n = 3, .c = 16, .e = 96, .m = 24, .h = 12, .w = 13, .s = 2,
                     .dt = CT_FLOAT32},
              true);
}
END_TEST

/* Narrow depthwise rows: widths 1 to 5 and 11 (one tap a row, no interior pixel, or interior
 * runs of 1 to 3 and 9: a block of 8 and a tail of 1), heights 1, 2 and 5 (one, two or three
 * tap rows), stride 1 and 2, with 16 expanded channels and 20 (a masked chunk). The other tails
 * (4 to 7) come from the wider images of the tests around it (widths 9, 13, 14, 16, 56). */
START_TEST(narrow_images_take_every_border_and_tail) {
  static const int64_t widths[] = {1, 2, 3, 4, 5, 11}, heights[] = {1, 2, 5};
  for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
    for (size_t j = 0; j < sizeof heights / sizeof heights[0]; j++) {
      for (int64_t st = 1; st <= 2; st++) {
        check_block(&(blk){.n = 1, .c = 3, .e = i % 2 == 0 ? 16 : 20, .m = 4, .h = heights[j],
                           .w = widths[i], .s = st, .act = "clip", .dt = CT_FLOAT32},
                    true);
      }
    }
  }
}
END_TEST

/* Images whose rows go in many bands (E 144 on 56 x 56: bands of 4 rows; the expansion's rows
 * kept from band to band) and in parts across the threads (images of 256 pixels or more, or of
 * 7 rows a part; the smaller ones run in one piece, the GEMMs and the depthwise's channels
 * threaded); a width of one pixel; float64. */
START_TEST(bands_parts_and_float64_give_the_same_bits) {
  check_block(&(blk){.n = 1, .c = 24, .e = 144, .m = 24, .h = 56, .w = 56, .s = 1,
                     .residual = true, .act = "clip", .dt = CT_FLOAT32},
              true);
  check_block(&(blk){.n = 2, .c = 16, .e = 96, .m = 24, .h = 40, .w = 41, .s = 2, .act = "clip",
                     .dt = CT_FLOAT32},
              true);
  /* one band for the image, shrunk to one a thread (16 x 16: parts of rows, the smallest) */
  check_block(&(blk){.n = 1, .c = 8, .e = 16, .m = 8, .h = 16, .w = 16, .s = 1,
                     .residual = true, .act = "relu", .dt = CT_FLOAT32},
              true);
  check_block(&(blk){.n = 1, .c = 3, .e = 17, .m = 2, .h = 6, .w = 1, .s = 1, .act = "clip",
                     .dt = CT_FLOAT32},
              true);
  /* 700 pixels wide: bands of one row, each keeping two rows of the expansion */
  check_block(&(blk){.n = 1, .c = 4, .e = 20, .m = 4, .h = 5, .w = 700, .s = 1,
                     .residual = true, .act = "clip", .dt = CT_FLOAT32},
              true);
  check_block(&(blk){.n = 2, .c = 8, .e = 20, .m = 8, .h = 9, .w = 10, .s = 1, .residual = true,
                     .act = "clip", .dt = CT_FLOAT64},
              true);
  check_block(&(blk){.n = 1, .c = 4, .e = 12, .m = 6, .h = 7, .w = 7, .s = 2, .act = "relu",
                     .dt = CT_FLOAT64},
              true);
  /* one piece whose depthwise splits its channels across the threads: 43 chunks of 16 (the
   * last of 8 channels, masked) on a 7 x 7 image, 13 (the last of 8) on a 14 x 14 one in
   * float64 (in one piece on three threads) */
  check_block(&(blk){.n = 1, .c = 16, .e = 680, .m = 16, .h = 7, .w = 7, .s = 1,
                     .residual = true, .act = "clip", .dt = CT_FLOAT32},
              true);
  check_block(&(blk){.n = 1, .c = 8, .e = 200, .m = 12, .h = 14, .w = 14, .s = 1, .act = "relu",
                     .dt = CT_FLOAT64},
              true);
}
END_TEST

/* Blocks without an expansion (MobileNetV2's first: depthwise + bias + clip, then the
 * projection): the depthwise's planes a band at a time, then the projection's GEMM over them.
 * Stride 1 and 2, odd sides, the residual, bands and parts of rows (64 x 64 of 32 channels:
 * bands of 48 rows, parts across threads), small images in one piece, an image one pixel wide
 * and one row high, float64 (the plain loop), an infinite weight and a NaN input (channel 0
 * through the plain loop, the others the AVX-512 rows), the filters as constants. */
START_TEST(blocks_without_an_expansion_give_the_same_bits) {
  const blk cases[] = {
      {.n = 1, .c = 32, .e = 32, .m = 16, .h = 20, .w = 20, .s = 1, .act = "clip"},
      {.n = 2, .c = 20, .e = 20, .m = 7, .h = 11, .w = 13, .s = 2, .act = "relu"},
      {.n = 1, .c = 8, .e = 8, .m = 8, .h = 9, .w = 9, .s = 1, .residual = true, .act = "clip"},
      {.n = 1, .c = 32, .e = 32, .m = 16, .h = 64, .w = 64, .s = 1, .act = "clip"},
      {.n = 3, .c = 16, .e = 16, .m = 24, .h = 30, .w = 17, .s = 2, .act = "clip"},
      {.n = 1, .c = 5, .e = 5, .m = 3, .h = 1, .w = 1, .s = 1, .act = "clip"},
      {.n = 1, .c = 5, .e = 5, .m = 3, .h = 3, .w = 40, .s = 2},
      {.n = 1, .c = 12, .e = 12, .m = 6, .h = 7, .w = 9, .s = 1, .act = "relu",
       .dt = CT_FLOAT64},
      {.n = 2, .c = 8, .e = 8, .m = 8, .h = 18, .w = 18, .s = 1, .residual = true,
       .act = "clip", .dt = CT_FLOAT64},
      {.n = 1, .c = 16, .e = 16, .m = 8, .h = 20, .w = 24, .s = 1, .act = "clip", .nans = true,
       .inf_w2 = true},
      /* 196 pixels: in two parts of 7 rows on two threads, one piece on three */
      {.n = 1, .c = 24, .e = 24, .m = 16, .h = 14, .w = 14, .s = 1, .act = "clip"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    for (int k = 0; k < 2; k++) {
      blk b = cases[i];
      b.no_expand = true;
      b.constants = k == 1;
      if (b.dt == CT_DTYPE_UNDEFINED) b.dt = CT_FLOAT32;
      check_block(&b, true);
    }
  }
}
END_TEST

/* A small image alone on two or three threads (a 14 x 14 one on three: on two it goes in two
 * parts of rows) splits each band's expansion and depthwise by the expanded channels, 32 at a
 * time: a thread's columns of the expansion's GEMM (its rows of the Filter, of their packing
 * when the Filter is a constant and k one block of the GEMM's, and of the bias) and then their
 * depthwise. Channels not a multiple of 32 (the last thread's share ends in a masked chunk), k
 * past one block (each thread packs its own rows), stride 2 and float64. */
START_TEST(small_images_split_their_expanded_channels_across_threads) {
  for (int k = 0; k < 2; k++) {
    /* bands of one row or a few (E large): rows kept from the band before, rows expanded
     * ahead, the last band with nothing to expand; an image one row high */
    check_block(&(blk){.n = 1, .c = 16, .e = 960, .m = 16, .h = 14, .w = 14, .s = 1,
                       .residual = true, .act = "clip", .dt = CT_FLOAT32, .constants = k == 1},
                true);
    check_block(&(blk){.n = 1, .c = 16, .e = 968, .m = 8, .h = 28, .w = 27, .s = 2,
                       .act = "relu", .dt = CT_FLOAT32, .constants = k == 1},
                true);
    check_block(&(blk){.n = 1, .c = 16, .e = 584, .m = 16, .h = 14, .w = 14, .s = 1,
                       .residual = true, .act = "clip", .dt = CT_FLOAT64, .constants = k == 1},
                true);
    check_block(&(blk){.n = 1, .c = 32, .e = 100, .m = 8, .h = 1, .w = 700, .s = 1,
                       .act = "clip", .dt = CT_FLOAT32, .constants = k == 1},
                true);
    check_block(&(blk){.n = 1, .c = 64, .e = 400, .m = 64, .h = 14, .w = 14, .s = 1,
                       .residual = true, .act = "clip", .dt = CT_FLOAT32, .constants = k == 1},
                true);
    check_block(&(blk){.n = 1, .c = 260, .e = 104, .m = 24, .h = 8, .w = 7, .s = 2,
                       .act = "relu", .dt = CT_FLOAT32, .constants = k == 1},
                true);
    check_block(&(blk){.n = 1, .c = 32, .e = 200, .m = 8, .h = 14, .w = 14, .s = 1,
                       .act = "clip", .dt = CT_FLOAT64, .constants = k == 1},
                true);
    /* E 100 and k 200: the whole expansion's plan swaps its operands (the Filter packed in
     * slivers of the kernel's rows, 12 on AVX-512, which channel 64 falls inside of), and so
     * does the second thread's 36 columns: its packing is not a slice of the whole's */
    check_block(&(blk){.n = 1, .c = 200, .e = 100, .m = 16, .h = 14, .w = 14, .s = 1,
                       .act = "relu", .dt = CT_FLOAT32, .constants = k == 1},
                true);
  }
}
END_TEST

/* How a block's images go to the threads (ct__ir_split): parts of rows for images of 256
 * pixels or more, and for smaller ones where each part gets 7 rows (14 x 14 on two threads);
 * otherwise one piece, its expansion split by channels when every thread gets 32 of them. */
typedef struct split_case {
  int64_t n, h, e, c, br, threads;
  int64_t parts, br_after, items, pieces;
  bool split_e;
} split_case;

START_TEST(small_images_split_rows_only_where_each_part_gets_seven) {
  static const split_case cases[] = {
      {1, 14, 384, 64, 14, 2, 2, 7, 2, 2, false}, /* MobileNetV2's 14 x 14 blocks */
      {1, 14, 384, 64, 14, 3, 1, 14, 1, 1, true}, /* parts of 4 and 5 rows: one piece */
      {1, 13, 384, 64, 13, 2, 1, 13, 1, 1, true}, /* parts of 6 and 7 rows */
      {1, 7, 960, 160, 7, 2, 1, 7, 1, 1, true},   /* the 7 x 7 ones */
      {1, 7, 32, 160, 7, 2, 1, 7, 1, 1, false},   /* one unit of 32 channels for two threads */
      {1, 28, 192, 32, 28, 3, 3, 10, 3, 3, false}, /* 784 pixels: parts */
      {1, 16, 64, 16, 4, 8, 8, 2, 8, 8, false},   /* 256 pixels: parts whatever their rows */
      {2, 14, 384, 64, 14, 4, 2, 7, 4, 4, false}, /* two images in two parts each */
      {2, 14, 384, 64, 14, 2, 1, 14, 2, 2, false}, /* an image a thread */
      {1, 14, 384, 64, 14, 1, 1, 14, 1, 1, false}, /* one thread */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const split_case *k = &cases[i];
    ir_run r = {.g = {.n = k->n, .c = k->c, .h = k->h, .w = k->h, .e = k->e, .m = k->c, .s = 1,
                      .oh = k->h, .ow = k->h},
                .br = k->br};
    ct__ir_split(&r, k->threads, true);
    ck_assert_msg(r.parts == k->parts && r.br == k->br_after && r.items == k->items &&
                      r.pieces == k->pieces && r.split_e == k->split_e,
                  "case %zu: parts %lld br %lld items %lld pieces %lld split_e %d", i,
                  (long long)r.parts, (long long)r.br, (long long)r.items,
                  (long long)r.pieces, (int)r.split_e);
  }
}
END_TEST

/* A band's expansion rounds its pixels up to slivers of 32 only where its GEMM's plan puts them
 * along the kernel's columns and the kernel stores those tiles transposed (AVX-512 float32): not
 * for MobileNetV2's 14 x 14 block (E 384 along the columns), but for E 4 from 8 channels, whose
 * plan swaps its operands (4 columns would fill half of the narrowest kernel's 8 at most); not
 * for the other kernels, whose swapped tiles go element by element, nor in float64. */
START_TEST(expansions_round_pixels_only_along_columns) {
  static const char *const kernels[] = {"avx512", "avx2", "portable"};
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
    if (!ct__gemm_use_kernel(kernels[i])) continue; /* not on this CPU */
    ir_run r = {.g = {.n = 1, .c = 64, .h = 14, .w = 14, .e = 384, .m = 64, .s = 1, .oh = 14,
                      .ow = 14},
                .br = 7, .ep = 384};
    ck_assert_msg(!ct__ir_round_px(&r, sizeof(float)), "%s", kernels[i]);
    ck_assert_msg(!ct__ir_round_px(&r, sizeof(double)), "%s", kernels[i]);
    r.g.c = 8;
    r.g.e = 4;
    r.ep = 16;
    ck_assert_msg(ct__ir_round_px(&r, sizeof(float)) == (i == 0), "%s", kernels[i]);
    ck_assert_msg(!ct__ir_round_px(&r, sizeof(double)), "%s", kernels[i]);
  }
  ck_assert(ct__gemm_use_kernel(NULL));
}
END_TEST

/* The channel split with each GEMM kernel this CPU runs (slivers of 32, 16 or 8 columns; a
 * plan that swaps packs the Filter in slivers of 12, 6 or 4 rows), float32 and float64, the
 * filters constants or not, k at one block and past it. */
START_TEST(the_channel_split_holds_with_every_gemm_kernel) {
  static const char *const kernels[] = {"avx512", "avx2", "portable"};
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
    if (!ct__gemm_use_kernel(kernels[i])) continue; /* not on this CPU */
    for (int k = 0; k < 4; k++) {
      ct_dtype dt = k & 2 ? CT_FLOAT64 : CT_FLOAT32;
      check_block(&(blk){.n = 1, .c = 200, .e = 100, .m = 16, .h = 14, .w = 14, .s = 1,
                         .act = "relu", .dt = dt, .constants = k & 1},
                  true);
      check_block(&(blk){.n = 1, .c = 64, .e = 400, .m = 64, .h = 14, .w = 14, .s = 1,
                         .residual = true, .act = "clip", .dt = dt, .constants = k & 1},
                  true);
      check_block(&(blk){.n = 1, .c = 257, .e = 200, .m = 8, .h = 7, .w = 7, .s = 1,
                         .act = "relu", .dt = dt, .constants = k & 1},
                  true);
    }
  }
  ck_assert(ct__gemm_use_kernel(NULL));
}
END_TEST

/* A NaN input reaches the output through every stage; an infinite depthwise weight on the
 * border tap (which the padding's zero would turn into NaN if it were added) gives the
 * unfused bits. */
START_TEST(nan_inputs_and_infinite_weights_give_the_same_bits) {
  check_block(&(blk){.n = 1, .c = 8, .e = 20, .m = 8, .h = 9, .w = 9, .s = 1, .residual = true,
                     .act = "clip", .dt = CT_FLOAT32, .nans = true},
              true);
  check_block(&(blk){.n = 1, .c = 8, .e = 20, .m = 8, .h = 9, .w = 9, .s = 1, .residual = true,
                     .act = "relu", .dt = CT_FLOAT32, .inf_w2 = true},
              true);
  check_block(&(blk){.n = 1, .c = 8, .e = 20, .m = 8, .h = 9, .w = 9, .s = 2, .act = "relu",
                     .dt = CT_FLOAT64, .inf_w2 = true},
              true);
}
END_TEST

START_TEST(blocks_it_cannot_prove_are_left_alone) {
  /* without an expansion: the residual not the depthwise's input; the caller's alias of x
   * written between the depthwise and the projection; one channel (conv2d's GEMM, whose
   * multiply-adds fuse, not a depthwise conv) */
  check_block(&(blk){.n = 1, .c = 8, .e = 8, .m = 8, .h = 9, .w = 9, .s = 1, .residual = true,
                     .act = "clip", .dt = CT_FLOAT32, .other_res = true, .no_expand = true},
              false);
  check_block(&(blk){.n = 1, .c = 8, .e = 8, .m = 8, .h = 9, .w = 9, .s = 1, .act = "clip",
                     .dt = CT_FLOAT32, .alias_write = true, .no_expand = true},
              false);
  check_block(&(blk){.n = 1, .c = 1, .e = 1, .m = 4, .h = 9, .w = 9, .s = 1, .act = "clip",
                     .dt = CT_FLOAT32, .no_expand = true},
              false);
  /* another op reads the expansion's output */
  check_block(&(blk){.n = 1, .c = 8, .e = 20, .m = 8, .h = 9, .w = 9, .s = 1, .residual = true,
                     .act = "clip", .dt = CT_FLOAT32, .read_a1 = true},
              false);
  /* the residual is not the block's input */
  check_block(&(blk){.n = 1, .c = 8, .e = 20, .m = 8, .h = 9, .w = 9, .s = 1, .residual = true,
                     .act = "clip", .dt = CT_FLOAT32, .other_res = true},
              false);
  /* the expansion normalised by a batch_norm, which conv_epilogue fuses into its
   * conv2d_fusion and the block's kernel would not run */
  check_block(&(blk){.n = 1, .c = 8, .e = 20, .m = 8, .h = 9, .w = 9, .s = 1, .residual = true,
                     .act = "clip", .dt = CT_FLOAT32, .bn_expand = true},
              false);
  /* an op between the convs writes x's memory under another name: the expansion must read x
   * before it, the residual after, as the unfused ops do */
  check_block(&(blk){.n = 1, .c = 8, .e = 20, .m = 8, .h = 9, .w = 9, .s = 1, .residual = true,
                     .act = "clip", .dt = CT_FLOAT32, .alias_write = true},
              false);
}
END_TEST

/* A clip whose bounds float32 does not hold exactly (0.1): the expansion stays conv_epilogue's
 * op, and the depthwise and the projection after it become a block without an expansion, with
 * the unoptimized program's bits. */
START_TEST(inexact_clip_bounds_are_left_alone) {
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, conv("conv2d", "x", "w1", "c1", 0, 1, 1)), CT_OK);
  ct_op *clip = op_x("clip", "c1", "a1");
  ct_op_set_attr_float(clip, "min", 0.1);
  ct_op_set_attr_float(clip, "max", 6);
  ck_assert_int_eq(ct_program_append(p, clip), CT_OK);
  ck_assert_int_eq(ct_program_append(p, conv("depthwise_conv2d", "a1", "w2", "c2", 1, 1, 20)),
                   CT_OK);
  bias_act(p, "c2", "b2", "c2b", "a2", "relu");
  ck_assert_int_eq(ct_program_append(p, conv("conv2d", "a2", "w3", "c3", 0, 1, 1)), CT_OK);
  bias_act(p, "c3", "b3", "unused", "y", NULL);
  blk b = {.n = 1, .c = 8, .e = 20, .m = 8, .h = 9, .w = 9, .s = 1, .dt = CT_FLOAT32};
  float want[8 * 81], got[8 * 81];
  for (int optimize = 0; optimize < 2; optimize++) {
    ct_scope *s = block_scope(&b);
    ct_executor_options o = {.optimize = optimize};
    ct_executor *ex = ct_executor_new_with(p, s, ct_cpu(), &o);
    ck_assert_int_eq(ct_executor_run(ex), CT_OK);
    memcpy(optimize ? got : want, result(s, "y", CT_FLOAT32, CT_DIMS(1, 8, 9, 9)), sizeof got);
    if (optimize) ck_assert(has_memory(s, "a1") && !has_memory(s, "a2"));
    ct_executor_free(ex);
    ct_scope_free(s);
  }
  ck_assert_int_eq(memcmp(want, got, sizeof got), 0);
  ct_program_free(p);
}
END_TEST

/* ---- The op made by hand ------------------------------------------------------------------ */

/* inverted_residual without Filter (E = Input's channels). */
static ct_op *ir_op_no_expansion(void) {
  ct_op *op = ct_op_new("inverted_residual");
  ct_op_set_input(op, "Input", "x");
  ct_op_set_input(op, "DepthwiseFilter", "w2");
  ct_op_set_input(op, "ProjectFilter", "w3");
  ct_op_set_output(op, "Output", "y");
  return op;
}

static ct_op *ir_op(void) {
  ct_op *op = ir_op_no_expansion();
  ct_op_set_input(op, "Filter", "w1");
  return op;
}

static ct_scope *ir_scope(void) {
  blk b = {.n = 1, .c = 4, .e = 8, .m = 3, .h = 5, .w = 5, .s = 1, .dt = CT_FLOAT32};
  return block_scope(&b);
}

/* Without biases or activations: y = W3 dw(W1 x), each value checked against the sums written
 * out here in the order dw_elem and the GEMM define (exact, in float32 steps: ints). */
START_TEST(the_op_by_hand_computes_the_block) {
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT32, CT_DIMS(1, 2, 3, 3), (float[]){1, 2, 3, 4, 5, 6, 7, 8, 9,
                                                        -1, 0, 1, 2, -2, 0, 1, 1, 3});
  put(s, "w1", CT_FLOAT32, CT_DIMS(2, 2, 1, 1), (float[]){1, 2, -1, 1});
  put(s, "w2", CT_FLOAT32, CT_DIMS(2, 1, 3, 3), (float[]){0, 1, 0, 1, 1, 1, 0, 1, 0,
                                                         1, 0, 0, 0, 2, 0, 0, 0, 1});
  put(s, "w3", CT_FLOAT32, CT_DIMS(1, 2, 1, 1), (float[]){1, -1});
  ct_op *op = ir_op();
  run(op, s);
  /* e0 = x0 + 2 x1, e1 = x1 - x0 */
  const double x0[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, x1[9] = {-1, 0, 1, 2, -2, 0, 1, 1, 3};
  double e0[9], e1[9], want[9];
  for (int i = 0; i < 9; i++) {
    e0[i] = x0[i] + 2 * x1[i];
    e1[i] = x1[i] - x0[i];
  }
  for (int y = 0; y < 3; y++) {
    for (int x = 0; x < 3; x++) {
      double d0 = 0, d1 = 0; /* the plus-shaped filter and the diagonal one, padding 1 */
      for (int ky = 0; ky < 3; ky++) {
        for (int kx = 0; kx < 3; kx++) {
          int iy = y - 1 + ky, ix = x - 1 + kx;
          if (iy < 0 || iy > 2 || ix < 0 || ix > 2) continue;
          bool plus = (ky == 1) != (kx == 1) || (ky == 1 && kx == 1);
          d0 += plus ? e0[iy * 3 + ix] : 0;
          d1 += ky == kx ? (ky == 1 ? 2 : 1) * e1[iy * 3 + ix] : 0;
        }
      }
      want[y * 3 + x] = d0 - d1;
    }
  }
  const float *got = result(s, "y", CT_FLOAT32, CT_DIMS(1, 1, 3, 3));
  for (int i = 0; i < 9; i++) {
    ck_assert_msg(got[i] == (float)want[i], "y[%d] %g, want %g", i, got[i], want[i]);
  }
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* No expanded channels (E 0): the projection sums nothing, so y is ProjectBias per channel. */
START_TEST(the_op_by_hand_with_no_expanded_channels_gives_the_bias) {
  ct_scope *s = ct_scope_new();
  put_pattern(s, "x", CT_DIMS(2, 3, 4, 5), 1, CT_FLOAT32);
  put_pattern(s, "w1", CT_DIMS(0, 3, 1, 1), 1, CT_FLOAT32);
  put_pattern(s, "w2", CT_DIMS(0, 1, 3, 3), 1, CT_FLOAT32);
  put_pattern(s, "w3", CT_DIMS(2, 0, 1, 1), 1, CT_FLOAT32);
  put(s, "b3", CT_FLOAT32, CT_DIMS(2), (float[]){1.5f, -2});
  ct_op *op = ir_op();
  ct_op_set_input(op, "ProjectBias", "b3");
  const int64_t st[2] = {2, 2};
  ct_op_set_attr_ints(op, "strides", st, 2);
  run(op, s);
  const float *y = result(s, "y", CT_FLOAT32, CT_DIMS(2, 2, 2, 3));
  for (int i = 0; i < 24; i++) ck_assert_float_eq(y[i], (i / 6) % 2 == 0 ? 1.5f : -2.0f);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(the_op_by_hand_refuses_bad_operands) {
  ct_scope *s = ir_scope();
  ct_op *op = ir_op();
  put_pattern(s, "w2", CT_DIMS(8, 1, 5, 5), 1, CT_FLOAT32); /* not 3x3 */
  run_fails(op, s, CT_ERR_SHAPE, "DepthwiseFilter", "'w2'", "[8,1,3,3]", NULL);
  put_pattern(s, "w2", CT_DIMS(8, 1, 3, 3), 1, CT_FLOAT32);
  put_pattern(s, "w3", CT_DIMS(3, 7, 1, 1), 1, CT_FLOAT32); /* E 7, Filter's 8 */
  run_fails(op, s, CT_ERR_SHAPE, "ProjectFilter", "'w3'", "[3,8,1,1]", NULL);
  put_pattern(s, "w3", CT_DIMS(3, 8, 1, 1), 1, CT_FLOAT32);
  const int64_t st[2] = {3, 3};
  ct_op_set_attr_ints(op, "strides", st, 2);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "strides", "[2, 2]", NULL);
  ct_op_free(op);
  op = ir_op();
  ct_op_set_attr_string(op, "dw_activation", "clip");
  ct_op_set_attr_float(op, "dw_clip_max", 0.1);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "dw_clip_max", "exactly", NULL);
  ct_op_free(op);
  op = ir_op();
  ct_op_set_attr_string(op, "project_activation", "gelu");
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "gelu", NULL);
  ct_op_free(op);
  op = ir_op();
  ct_op_set_input(op, "ResidualData", "r");
  put_pattern(s, "r", CT_DIMS(1, 3, 4, 5), 1, CT_FLOAT32); /* not the output's [1, 3, 5, 5] */
  run_fails(op, s, CT_ERR_SHAPE, "ResidualData", "[1,3,5,5]", NULL);
  ct_op_free(op);
  /* without Filter: E is Input's 4 channels, so DepthwiseFilter's 8 do not fit; and Bias or an
   * activation, which belong to the expansion, are refused */
  op = ir_op_no_expansion();
  run_fails(op, s, CT_ERR_SHAPE, "DepthwiseFilter", "'w2'", "[4,1,3,3]", NULL);
  ct_op_set_input(op, "Bias", "b1");
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "Bias 'b1'", "give Filter", NULL);
  ct_op_free(op);
  op = ir_op_no_expansion();
  ct_op_set_attr_string(op, "activation", "relu");
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "'activation' \"relu\"", "give Filter", NULL);
  ct_op_set_attr_string(op, "activation", "identity");
  put_pattern(s, "x", CT_DIMS(1, 0, 5, 5), 1, CT_FLOAT32); /* no channels */
  put_pattern(s, "w2", CT_DIMS(0, 1, 3, 3), 1, CT_FLOAT32);
  put_pattern(s, "w3", CT_DIMS(3, 0, 1, 1), 1, CT_FLOAT32);
  run_fails(op, s, CT_ERR_SHAPE, "Input 'x' has no channels", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("passes_block");
  CT_ADD_TEST(s, a_stride_1_block_with_its_residual_fuses_to_the_same_bits);
  CT_ADD_TEST(s, a_stride_2_block_fuses_to_the_same_bits);
  CT_ADD_TEST(s, narrow_images_take_every_border_and_tail);
  CT_ADD_TEST(s, bands_parts_and_float64_give_the_same_bits);
  CT_ADD_TEST(s, small_images_split_their_expanded_channels_across_threads);
  CT_ADD_TEST(s, the_channel_split_holds_with_every_gemm_kernel);
  CT_ADD_TEST(s, small_images_split_rows_only_where_each_part_gets_seven);
  CT_ADD_TEST(s, expansions_round_pixels_only_along_columns);
  CT_ADD_TEST(s, blocks_without_an_expansion_give_the_same_bits);
  CT_ADD_TEST(s, nan_inputs_and_infinite_weights_give_the_same_bits);
  CT_ADD_TEST(s, blocks_it_cannot_prove_are_left_alone);
  CT_ADD_TEST(s, inexact_clip_bounds_are_left_alone);
  CT_ADD_TEST(s, the_op_by_hand_computes_the_block);
  CT_ADD_TEST(s, the_op_by_hand_with_no_expanded_channels_gives_the_bias);
  CT_ADD_TEST(s, the_op_by_hand_refuses_bad_operands);
  return s;
}

CT_TEST_MAIN(make_suite)
