/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/conv_avx512.h: the AVX-512 helpers of the convolution and pooling kernels
 * (ops/cpu/conv_avx512.c), where the build has them (CT__T16_X86, ops/cpu/t16.h): callers ask
 * ct__conv_avx512 whether to run them. */
#ifndef CORTEN_OPS_CPU_CONV_AVX512_H
#define CORTEN_OPS_CPU_CONV_AVX512_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/cpu/t16.h"
#include "ops/defs.h"

#ifdef CT__T16_X86
/* Whether to run these: the GEMM's kernel is the AVX-512 one (the widest this CPU runs, unless
 * ct__gemm_use_kernel chose another: then these give way to the code they replace too). */
bool ct__conv_avx512(void);

/* The small depthwise planes' channels-last blocks in float32 (conv_dw_tmpl.h's dwc_block): cb
 * (at most 32) planes of hw pixels at x (hw apart) into xt[p 32 + c], lanes past cb zero; and
 * back, ohw pixels of ot (32 apart) into cb planes at o (ohw apart). */
void ct__conv_dwc_in(const float *x, int64_t hw, int64_t cb, float *xt);
void ct__conv_dwc_out(const float *ot, int64_t ohw, int64_t cb, float *o);

/* Max pooling at stride 2 of the outputs [ca, cb) of a row whose windows lie inside the image's
 * columns: orow[ox] from x[iy w + 2 ox + kx], iy < rows, kx < kw (x: the window's first row,
 * shifted by the left padding). False, with nothing written, on a CPU without AVX-512. */
bool ct__pool_max_s2_f32(const float *x, int64_t w, int64_t rows, int64_t kw, int64_t ca,
                         int64_t cb, float *orow);

/* Depthwise plane o [OH, OW] of one channel x [H, W] by its 3x3 filter k (geometry g: stride 1
 * or 2, undilated), with dw_elem's bits (conv_dw_tmpl.h), then conv2d_fusion's epilogue e (NULL:
 * none) as plane m of image n, with the pass's bits: false, with nothing written, where it does
 * not apply (another shape, a weight that is not finite, rows of more than 1024 outputs, or a
 * CPU without AVX-512). */
struct ct__conv_epi;
bool ct__dw3_plane_f32(const ct__conv_geom *g, const float *x, const float *k, float *o,
                       const struct ct__conv_epi *e, int64_t n, int64_t m);
#endif

#endif /* CORTEN_OPS_CPU_CONV_AVX512_H */
