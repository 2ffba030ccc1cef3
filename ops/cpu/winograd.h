/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/winograd.h: conv2d's float32 forward (and its Filter@GRAD, below) as Winograd's
 * minimal filtering F(2x2, 3x3) (docs/design/conv.md), for 3x3 filters at stride 1 without
 * dilation or groups.
 *
 * Each 2x2 tile of an output plane comes from a 4x4 patch of the input: with the filter
 * transformed once per call (U = G g G^T, 4x4 per filter and channel) and each patch transformed
 * (V = B^T d B), the tile is A^T [sum over channels of U .* V] A. The sum over channels, for each
 * of the 16 positions of the 4x4, is one GEMM [M, C] x [C, tiles]: 16 GEMMs of C multiply-adds
 * per output pair of 4 pixels, where im2col's GEMM spends 9 C per pixel, 2.25 times as many. The
 * result is the convolution's up to rounding (the transforms add and halve: within a few ulp of
 * the direct sum for data of one sign, more where terms cancel), and the same bits at every
 * thread count (an image's arithmetic does not depend on the split). */
#ifndef CORTEN_OPS_CPU_WINOGRAD_H
#define CORTEN_OPS_CPU_WINOGRAD_H

#include <stdbool.h>
#include <stdint.h>

#include "corten/status.h"
#include "ops/cpu/gemm.h"
#include "ops/defs.h"

/* Whether plan g is one this path takes: 3x3, stride 1, no dilation, one group, channels and
 * filters enough (at least 8 each) for the GEMMs to pay for the transforms and not so many (on
 * images so large) that im2col wins again (winograd.c says where); always false in a build
 * without the transforms' vector clones (winograd.c: not x86-64, or a compiler without
 * target_clones), where the path would be slower than im2col. */
bool ct__wino_fits(const ct__conv_geom *g);

/* Floats of U for plan g (16 M C), and of one worker's scratch (the transformed patches and
 * products of one block of tiles, and the rows they are made from). */
int64_t ct__wino_u_elems(const ct__conv_geom *g);
int64_t ct__wino_scratch_elems(const ct__conv_geom *g);

/* U from the filters w [M, C, 3, 3]. */
void ct__wino_filter(const ct__conv_geom *g, const float *w, float *u);

/* U as the blocks read it: u (16 M C floats) and, or alone, each U[xi] packed for the GEMMs
 * beforehand (kept between runs for constant filters): packed + xi packed_elems, in slivers of
 * width. A block whose GEMM packs another width reads u, which must then be given. */
typedef struct ct__wino_u {
  const float *u, *packed;
  int64_t packed_elems;
  int width;
} ct__wino_u;

/* Product xi's GEMM q of a series ending before `end`, of `positions` products in all (16 or
 * 36): where the kept packings together pass 1 MiB (they come from memory at every run:
 * resnet18's 256 x 256 layers hold 4 MB), q fetches the next position's packing while it runs
 * (ct__gemm.next): resnet18's F(4x4) 128 x 128 layers (2.4 MB) 0.85-0.88 -> 0.76-0.78 ms in the
 * model, the 256 x 256 ones 1.17-1.20 -> 1.15-1.16 (1.06 alone; an Intel Xeon, one thread). */
static inline void ct__wino_fetch_next(const ct__wino_u *u, int64_t xi, int64_t end,
                                       int64_t positions, ct__gemm *q) {
  if (u->packed != NULL && xi + 1 < end &&
      positions * u->packed_elems * (int64_t)sizeof(float) > CT__FETCH_AHEAD_BYTES) {
    q->next = u->packed + (xi + 1) * u->packed_elems;
    q->next_bytes = u->packed_elems * (int64_t)sizeof(float);
  }
}

/* The floats of one U[xi] packed (ct__wino_pack writes the 16 of them, from u, into dst) and
 * the width; *every_block: every block's GEMMs read that packing (else the last block of tiles
 * needs u too). */
int64_t ct__wino_packed_elems(const ct__conv_geom *g, int *width, bool *every_block);
void ct__wino_pack(const ct__conv_geom *g, const float *u, float *dst);

/* An image's output planes go in blocks of whole tile rows (about 256 tiles each), independent
 * of each other: ct__wino_blocks of them. Block b of output image o [M, OH, OW] from input image
 * x [C, H, W] and U, with scratch of ct__wino_scratch_elems floats; then conv2d_fusion's
 * epilogue e (NULL: none; ops/cpu/conv_fusion.h) on each plane's rows of the block, with image
 * n's residual. Fails only as its GEMMs do
 * (out of memory for their packing buffers: the error recorded, o partly written). */
int64_t ct__wino_blocks(const ct__conv_geom *g);
struct ct__conv_epi;
ct_status ct__wino_block(const ct__conv_geom *g, const float *x, const ct__wino_u *u, int64_t b,
                         float *o, float *scratch, const struct ct__conv_epi *e, int64_t n);
/* The same block split over `parts` pieces run on corten's threads (for images of fewer blocks
 * than threads): the same values; scratch holds `parts` workers' scratch. */
ct_status ct__wino_block_wide(const ct__conv_geom *g, const float *x, const ct__wino_u *u,
                              int64_t b, float *o, float *scratch, int64_t parts,
                              const struct ct__conv_epi *e, int64_t n);

/* Filter@GRAD through the same transforms: U's gradient is dU = sum over images and tiles of
 * (A dY A^T) .* V, and Filter@GRAD is G^T dU G. A run sums its blocks into an accumulator zeroed
 * first: ct__wino_grad_block adds block b's terms of image x [C, H, W] with its Output@GRAD dy
 * [M, OH, OW] (scratch: ct__wino_scratch_elems floats). The accumulator is lanes of
 * ct__wino_grad_lanes floats, from which ct__wino_grad_sum writes the run's dU [16][M][C]; or,
 * where that count is 0 (wide layers), dU itself, through the GEMM (which fails only for want
 * of memory for its packing: the error recorded, dU partly added to). ct__wino_filter_grad
 * writes dw [M, C, 3, 3] from dU. The sums' order follows the blocks given and the sizes. */
int64_t ct__wino_grad_lanes(const ct__conv_geom *g);
ct_status ct__wino_grad_block(const ct__conv_geom *g, const float *x, const float *dy, int64_t b,
                              float *acc, float *scratch);
void ct__wino_grad_sum(const ct__conv_geom *g, const float *lanes, float *du);
void ct__wino_filter_grad(const ct__conv_geom *g, const float *du, float *dw);

/* ---- F(4x4, 3x3) (ops/cpu/winograd4.c): 4x4 output tiles from 6x6 patches, 36 GEMMs, the
 * forward only; the same calls as above with U[xi] for xi < 36. ct__wino4_fits: the filter
 * shapes of ct__wino_fits on outputs of 14 x 14 or more (where 4x4 tiles pay: a block's tile
 * rows carry one dropped tile each) with at most 16384 filter-channel pairs, or 65536 where
 * ct__wino_fits says no (winograd4.c says why). Its blocks apply conv2d_fusion's epilogue e
 * (NULL: none) to each output plane's rows of the block once written, image n's residual. */
bool ct__wino4_fits(const ct__conv_geom *g);
int64_t ct__wino4_u_elems(const ct__conv_geom *g);
int64_t ct__wino4_scratch_elems(const ct__conv_geom *g);
void ct__wino4_filter(const ct__conv_geom *g, const float *w, float *u);
int64_t ct__wino4_packed_elems(const ct__conv_geom *g, int *width, bool *every_block);
void ct__wino4_pack(const ct__conv_geom *g, const float *u, float *dst);
int64_t ct__wino4_blocks(const ct__conv_geom *g);
ct_status ct__wino4_block(const ct__conv_geom *g, const float *x, const ct__wino_u *u, int64_t b,
                          float *o, float *scratch, const struct ct__conv_epi *e, int64_t n);
ct_status ct__wino4_block_wide(const ct__conv_geom *g, const float *x, const ct__wino_u *u,
                               int64_t b, float *o, float *scratch, int64_t parts,
                               const struct ct__conv_epi *e, int64_t n);

#endif /* CORTEN_OPS_CPU_WINOGRAD_H */
