/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/winograd_impl.h: what the forward (ops/cpu/winograd.c) and Filter@GRAD
 * (ops/cpu/winograd_grad.c) of Winograd's path share: the vector clones, the tiling into blocks
 * and a block's scratch. */
#ifndef CORTEN_OPS_CPU_WINOGRAD_IMPL_H
#define CORTEN_OPS_CPU_WINOGRAD_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/cpu/winograd.h"

/* The transforms are compiled for AVX-512 and AVX2 as well as the build's baseline, the one
 * the CPU runs chosen when the library loads (target clones, an ifunc): their loops are short
 * runs of adds, and with the x86-64 baseline's 4 lanes alone they cost more than the GEMM
 * multiplies saved (4.3-4.5 ms against im2col's 3.8-4.0 on the benchmark). The arithmetic is the
 * same adds in each (no multiply to fuse), so are the bits. So the path runs where the clones
 * are built: x86-64 with a compiler that has target_clones, outside sanitizer builds (whose
 * runtime starts after ifunc resolvers run). Sanitizer builds run the path with baseline
 * transforms, so that the checked build checks the code that ships; elsewhere conv2d keeps
 * im2col (ct__wino_fits says no). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CT__WINO_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CT__WINO_SANITIZED 1
#endif
#endif
#if !defined(CT__WINO_SANITIZED) && defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define CT__WINO_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef CT__WINO_CLONES
#define CT__WINO_CLONES
#endif
/* Whether this build runs the path at all. */
#if defined(CT__WINO_SANITIZED) || (defined(__x86_64__) && defined(__has_attribute))
#if defined(CT__WINO_SANITIZED) || __has_attribute(target_clones)
#define CT__WINO_ON 1
#endif
#endif

/* The plans both forms take: 3x3 filters at stride 1, no dilation, one group, 8 channels and 8
 * filters or more, an output of 2 x 2 or more; none in a build without the path. */
static inline bool ct__wino_shape(const ct__conv_geom *g) {
#ifndef CT__WINO_ON
  (void)g;
  return false;
#else
  return g->kh == 3 && g->kw == 3 && g->sh == 1 && g->sw == 1 && g->dh == 1 && g->dw == 1 &&
         g->groups == 1 && g->c >= 8 && g->m >= 8 && g->oh >= 2 && g->ow >= 2;
#endif
}

enum {
  BLOCK_TILES = 256, /* tiles per block, about: V and M of a block fit in L2 */
  CHUNK = 64,        /* tiles the output step reduces at a time (its stack arrays) */
};

static int64_t tiles_w(const ct__conv_geom *g) { return (g->ow + 1) / 2; }
static int64_t tiles_h(const ct__conv_geom *g) { return (g->oh + 1) / 2; }

/* The columns between rows of a block's V and M: its tiles rounded up to 8 (the gradient's dots
 * go 8 tiles a step over zeros past the last tile), and one cache line more when that is a
 * multiple of 256 bytes: the GEMMs read V's rows in place, and rows a power of two apart share
 * a few L1 sets (a 256-tile block: 4 of the 64; padded, the forward went 2.55-2.89 -> 2.35-2.48
 * ms on the benchmark). */
static inline int64_t block_ld(int64_t tiles) {
  int64_t l = (tiles + 7) & ~(int64_t)7;
  return l % 64 == 0 ? l + 16 : l;
}

/* Tile rows per block: at most about BLOCK_TILES tiles, and the blocks as even as whole rows
 * allow (28 tile rows went 9, 9, 9, 1: two threads then ran 18 rows against 10). A tile's
 * values do not depend on the block it falls in. */
static inline int64_t block_rows(const ct__conv_geom *g) {
  int64_t r = BLOCK_TILES / tiles_w(g), th = tiles_h(g);
  if (r < 1) r = 1;
  if (r >= th) return th;
  int64_t blocks = (th + r - 1) / r;
  return (th + blocks - 1) / blocks;
}

/* Block b of an image in a worker's scratch: its tile rows [ty0, ty1) and tiles nt, the columns
 * between rows bt, V (16 C rows) then the M or dM rows (16 M) and the padded input rows; V
 * already transformed from the image x. */
typedef struct ct__wino_blk {
  int64_t ty0, ty1, nt, bt;
  float *v, *mx, *rows;
} ct__wino_blk;

/* Block b of image x in a worker's scratch, V transformed (step 1). */
ct__wino_blk ct__wino_block_in(const ct__conv_geom *g, const float *x, int64_t b, float *scratch);

#endif /* CORTEN_OPS_CPU_WINOGRAD_IMPL_H */
