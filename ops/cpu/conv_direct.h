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

#endif /* CORTEN_OPS_CPU_CONV_DIRECT_H */
