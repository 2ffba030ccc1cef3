/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/conv_direct.h: conv2d's float32 forward as a direct loop for small output widths
 * (ops/cpu/conv_direct.c; docs/design/conv.md), where im2col's GEMM pads each image's few
 * output pixels to whole tiles. */
#ifndef CORTEN_OPS_CPU_CONV_DIRECT_H
#define CORTEN_OPS_CPU_CONV_DIRECT_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/defs.h"

struct ct__conv_epi;

/* Narrow outputs (at most 14 wide, CD_MAX_PIXELS pixels): at least CD_MIN_C channels (fewer:
 * the GEMM's packing is cheap and its tiles full). Wider ones at stride 2: at least CD_MIN_TAPS
 * terms an output (C KH KW), each row in pieces of 14. */
enum { CD_MIN_C = 16, CD_MAX_PIXELS = 256, CD_MIN_TAPS = 27 };

/* Whether plan g takes the path: one group, filters of 3 x 3 or more (1 x 1 ones are a GEMM on
 * the image itself: 2.7 times as fast), no dilation, equal strides of 1 or 2, 32 filters or
 * more; outputs 1 to 14 wide of at most CD_MAX_PIXELS pixels with CD_MIN_C channels or more, or
 * wider outputs at stride 2 with CD_MIN_TAPS terms or more (resnet18's 7x7 stem: 2.43 -> 1.74
 * ms against im2col, its 64 -> 128 3x3 stride-2 convolution onto 28 x 28: 1.48 -> 0.82;
 * MobileNetV2's 3 -> 32 3x3 stem, 27 terms: 315 -> 276 us at batch 1, 2965 -> 2898 at batch 8
 * on one thread, 228 -> 172 and 2174 -> 1697 on two, once its one image and block of filters
 * were split into bands of rows over the threads; before that it ran at one thread's speed on
 * two, and was slower than im2col on one too: 0.33 -> 0.37 ms); and a CPU with AVX-512 (else
 * false, always, in a build without the AVX-512 helpers). */
bool ct__conv_direct_fits(const ct__conv_geom *g);

/* The filters w [M, C, KH, KW] packed for the path: ct__conv_direct_packed_elems floats. */
int64_t ct__conv_direct_packed_elems(const ct__conv_geom *g);
void ct__conv_direct_pack(const ct__conv_geom *g, const float *w, float *wp);

/* Output o [N, M, OH, OW] of x [N, C, H, W] by the packed filters wp, then conv2d_fusion's
 * epilogue e (NULL: none; ops/cpu/conv_fusion.h) on each output plane once written, with
 * ct__conv_direct_scratch_elems floats of scratch (each piece's partial sums, then the images
 * with their padding). Split over corten's threads by image and block of 32 output channels;
 * the same bits at every count. */
int64_t ct__conv_direct_scratch_elems(const ct__conv_geom *g);
void ct__conv_direct_run(const ct__conv_geom *g, const float *x, const float *wp, float *o,
                         const struct ct__conv_epi *e, float *scratch);

/* conv2d_pool's float32 forward where the convolution g takes this path: Output o [N, M,
 * pg->oh, pg->ow] = max pool pg (pool2d's plan over g's output dims; max) of g's output with
 * the epilogue e (in the loop's rows) or post (NULL: none; conv2d_fusion's pass on each row
 * once computed: a batch norm), the convolution's rows going through each piece's buffer a
 * band at a time, never to memory: the same bits as ct__conv_direct_run then pool2d. Scratch:
 * ct__conv_direct_pool_scratch_elems floats. */
int64_t ct__conv_direct_pool_scratch_elems(const ct__conv_geom *g, const ct__conv_geom *pg);
struct ct__fusion_epi;
void ct__conv_direct_pool_run(const ct__conv_geom *g, const ct__conv_geom *pg, const float *x,
                              const float *wp, float *o, const struct ct__conv_epi *e,
                              const struct ct__fusion_epi *post, float *scratch);
/* Rows [oy0, oy1) of output plane o of max pool plan pg from the input plane's rows from yb on
 * at band: pool2d's arithmetic (ops/cpu/pool_tmpl.h, compiled in ops/cpu/conv.c). */
void ct__pool_band_f32(const ct__conv_geom *pg, const float *band, int64_t yb, int64_t oy0,
                       int64_t oy1, float *o);
void ct__pool_band_f64(const ct__conv_geom *pg, const double *band, int64_t yb, int64_t oy0,
                       int64_t oy1, double *o);

/* Where the loop's output rows go: channel m's row oy at o + (m - mb) ops + (oy - ob) OW (the
 * whole output: ops OH OW, mb and ob 0; conv2d_pool's band of a block's rows from ob: its
 * planes). */
typedef struct ct__cd_dst {
  float *o;
  int64_t ops, mb, ob;
} ct__cd_dst;

/* The rows of wide outputs at stride 2 whose input rows and filters a block reads fit in L1
 * (ops/cpu/conv_direct_wide.c, taken where conv_direct.c's cd_wide says): vectorised over
 * output pixels. ct__cdw_rows: rows [y0, y1) of block b of 32 filters of image n (x: its input
 * planes, unpadded; the piece pads the rows it reads into buf, ct__cdw_buffer_elems floats),
 * all the sum's channels, into d's planes through the epilogue e (NULL: none), with
 * conv_direct.c's bits. */
/* Terms an output (C KH KW) at most. Single 3-channel convolutions at stride 2 onto 112 x 112,
 * one thread, against conv_direct.c's rows: 3x3 (27 terms) 231 -> 172 us, 8 channels of 3x3
 * (72) 478 -> 429, 5x5 (75) 411 -> 393, but 7x7 (147, resnet's stem) 1.34 -> 1.59 ms: there
 * the channel-vectorised rows' transposes are a small part of each row, and their 14 x 2 tile
 * loads less a multiply-add. */
enum { CT__CDW_MAX_TAPS = 96 };
int64_t ct__cdw_buffer_elems(const ct__conv_geom *g);
void ct__cdw_rows(const ct__conv_geom *g, const float *x, const float *w, int64_t b, int64_t y0,
                  int64_t y1, const ct__cd_dst *d, const struct ct__conv_epi *e, int64_t n,
                  float *buf);

#endif /* CORTEN_OPS_CPU_CONV_DIRECT_H */
