/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/conv_block.h: what inverted_residual's CPU kernel (ops/cpu/conv_block.c) shares with
 * its path for blocks without an expansion (ops/cpu/conv_block_dw.c). */
#ifndef CORTEN_OPS_CPU_CONV_BLOCK_H
#define CORTEN_OPS_CPU_CONV_BLOCK_H

#include <stdatomic.h>

#include "ops/cpu/gemm.h"
#include "ops/defs.h"
#include "ops/kernel.h"

/* The bands' buffers, T1 and T2 together, in bytes: well inside L2, with room for the GEMMs'
 * packing buffers. */
#define BAND_BYTES ((int64_t)384 << 10)
/* Images of fewer output pixels run in one piece unless each part gets MIN_PART_ROWS rows
 * (ct__ir_split). */
#define SMALL_PIXELS 256
#define MIN_PART_ROWS 7
/* The kept packings' tag (ct__k_derived; ops/cpu/conv.c's are 1 to 4 << 32). */
#define IR_PACK_TAG ((uint64_t)5 << 32)

typedef struct ir_run {
  ct__ir_geom g;
  const void *x, *w1, *b1, *w2, *b2, *w3, *b3, *res;
  void *o;
  ct__gemm_epi e1, e3; /* the expansion's (bias per column, through the residual slot) and the
                        * projection's epilogues, their image-dependent pointers set per band */
  bool has_e1, has_e3;
  int act2;
  double lo2, hi2;
  int64_t ep, br, parts, pieces, items;
  int64_t piece_elems; /* from one piece's buffer to the next's (ct__piece_stride) */
  /* A small image alone on several threads (one piece, not nested; ct__ir_split): each band's
   * expansion and depthwise split by channels (ed_job) instead of a parallel GEMM then a
   * parallel depthwise: one fork and join fewer and each thread's T1 columns still in its
   * cache for its depthwise (measured before 14 x 14 images went in parts on two threads:
   * MobileNetV2's 14 x 14 and 7 x 7 blocks at batch 1 ran 1.5-1.7 times faster on two threads
   * than on one, the others 1.9). */
  bool split_e;
  /* The expansion's plan puts the pixels along its kernel's columns and the kernel stores such
   * tiles transposed (ct__ir_round_px): a band's pixels rounded up to slivers of 32
   * (expand_gemm). Along its rows (MobileNetV2's blocks), rounding a 14 x 14 image's part of 8
   * expanded rows to 128 pixels computed 16 for nothing: its blocks at batch 1 on two threads
   * 1048 -> 1006 us together. */
  bool round_px;
  const void *w1p, *w3p; /* Filter and ProjectFilter packed once (constants), or NULL */
  int w1w, w3w;
  void *buf;
  atomic_bool failed;
} ir_run;

static inline void note(ir_run *r, ct_status s) {
  if (s != CT_OK) atomic_store_explicit(&r->failed, true, memory_order_relaxed);
}

/* The depthwise's epilogue on sum v of channel c, as conv2d_fusion rounds it: + DepthwiseBias,
 * then relu (v < 0 ? 0 : v) or the clamp in the dtype (its bounds the dtype's values). */
#define IR_DW_EPI(T, SFX)                                                       \
  static inline T ir_dw_epi_##SFX(const ir_run *r, T v, int64_t c) {          \
    const T *b2 = r->b2;                                                        \
    if (b2 != NULL) v = v + b2[c];                                              \
    if (r->act2 == CT__EPI_RELU) {                                              \
      v = v < 0 ? (T)0 : v;                                                     \
    } else if (r->act2 == CT__EPI_CLAMP) {                                      \
      v = v < (T)r->lo2 ? (T)r->lo2 : v;                                        \
      v = v > (T)r->hi2 ? (T)r->hi2 : v;                                        \
    }                                                                           \
    return v;                                                                   \
  }
IR_DW_EPI(float, f32)
IR_DW_EPI(double, f64)
#undef IR_DW_EPI

/* r's parts, items, pieces and split_e for `threads` threads (1 when nested), its band rows
 * r->br shrunk to at least one band a part; r->g and r->br set. expand: r has a Filter. */
void ct__ir_split(ir_run *r, int64_t threads, bool expand);

/* Whether the plan of a band's expansion (r->g, r->br, r->ep set) puts the pixels along the
 * GEMM kernel's columns and the kernel stores those tiles transposed (whole tiles cost what
 * they compute; edge tiles go element by element), for r->round_px. */
bool ct__ir_round_px(const ir_run *r, size_t es);

/* A block without an expansion (no Filter): its band rows (the depthwise's planes of a band,
 * E x rows x OW values, within BAND_BYTES), its ProjectFilter packed once when a constant, and
 * its items (r->br, r->parts and the pieces set as for the others). */
int64_t ct__ir_dw_band_rows(const ct__ir_geom *g, size_t es);
void ct__ir_dw_kept(const ct_kernel_ctx *c, ir_run *r, size_t es);
void ct__ir_dw_item_f32(void *arg, int64_t i, int p);
void ct__ir_dw_item_f64(void *arg, int64_t i, int p);

#endif /* CORTEN_OPS_CPU_CONV_BLOCK_H */
