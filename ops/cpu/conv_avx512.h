/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/conv_avx512.h: the AVX-512 helpers of the convolution and pooling kernels
 * (ops/cpu/conv_avx512.c; the small depthwise planes' in ops/cpu/conv_dw_avx512.c), where the
 * build has them (CT__T16_X86, ops/cpu/t16.h): callers ask ct__conv_avx512 whether to run
 * them. */
#ifndef CORTEN_OPS_CPU_CONV_AVX512_H
#define CORTEN_OPS_CPU_CONV_AVX512_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/cpu/gemm.h"
#include "ops/cpu/t16.h"
#include "ops/defs.h"

#ifdef CT__T16_X86
/* Whether to run these: the GEMM's kernel is the AVX-512 one (the widest this CPU runs, unless
 * ct__gemm_use_kernel chose another: then these give way to the code they replace too). */
bool ct__conv_avx512(void);

/* conv2d_fusion's activation act (a CT__EPI_ value) on 16 float32 outputs in registers, in the
 * pass's operand orders: relu as max(0, v) (NaN and -0 pass through, as v < 0 ? 0 : v does),
 * the clamp as min(hi, max(lo, v)); the depthwise kernels apply it before their stores. */
static inline __attribute__((always_inline, target("avx512f"))) __m512 ct__conv_act_f32(
    __m512 v, int act, __m512 lo, __m512 hi) {
  if (act == CT__EPI_RELU) return _mm512_max_ps(_mm512_setzero_ps(), v);
  if (act == CT__EPI_CLAMP) return _mm512_min_ps(hi, _mm512_max_ps(lo, v));
  return v;
}

/* conv2d_fusion's epilogue on 16 float32 outputs v in registers, the pass's steps: + the bias vb
 * (when hb), + the residual's lanes k at res (NULL: none), then the activation act. */
static inline __attribute__((always_inline, target("avx512f"))) __m512 ct__conv_epi_f32(
    __m512 v, bool hb, __m512 vb, const float *res, __mmask16 k, int act, __m512 lo, __m512 hi) {
  if (hb) v = _mm512_add_ps(v, vb);
  if (res != NULL) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, res));
  return ct__conv_act_f32(v, act, lo, hi);
}

/* A small depthwise plane at stride 1 taken flat (conv_dw_avx512.c): 3x3, undilated, rows as
 * wide as the input's, at most CT__DWF_VECS x 16 outputs. ct__dwf_plan_f32 says whether
 * geometry g is one (on this CPU) and sets its plan: the tap offsets and the masks of each
 * output vector's lanes whose taps lie in the image. ct__dwf_plane_f32 computes plane o of one
 * channel x by its filter k with dw_elem's bits, then conv2d_fusion's epilogue e (NULL: none) as
 * plane m of image n in the pass's bits: false, with nothing written, for a weight that is not
 * finite. */
enum { CT__DWF_VECS = 4 };
typedef struct ct__dwf_plan {
  int64_t nv, off[9];
  uint16_t m[CT__DWF_VECS][9], out[CT__DWF_VECS];
} ct__dwf_plan;
struct ct__conv_epi;
bool ct__dwf_plan_f32(const ct__conv_geom *g, ct__dwf_plan *pl);
bool ct__dwf_plane_f32(const ct__dwf_plan *pl, const float *x, const float *k, float *o,
                       const struct ct__conv_epi *e, int64_t n, int64_t m);

/* The small depthwise planes' channels-last block in float32 (conv_dw_tmpl.h's dwc_block, whose
 * limits it takes: one output channel per group, at most CT__DWC_PIXELS input and CT__DWC_OUT
 * output pixels, CT__DWC_TAPS taps): cb (<= 32) consecutive channels, their input planes from x
 * (hw apart), weights from w (kh kw apart), output planes into o (oh ow apart), with dw_elem's
 * bits, then conv2d_fusion's epilogue e (NULL: none) for output channels m0 .. m0 + cb - 1 in
 * the pass's bits when e has no residual: true when it applied e. */
enum { CT__DWC_CB_F32 = 32, CT__DWC_PIXELS = 256, CT__DWC_OUT = 64, CT__DWC_TAPS = 25 };
bool ct__conv_dwc_block_f32(const ct__conv_geom *g, const float *x, const float *w, float *o,
                            int64_t cb, const struct ct__conv_epi *e, int64_t m0);

/* Max pooling at stride 2 of the outputs [ca, cb) of a row whose windows lie inside the image's
 * columns: orow[ox] from x[iy w + 2 ox + kx], iy < rows, kx < kw (x: output 0's first element
 * in the window's first row; pool_row passes ca 0, x and orow at its run's first output). False,
 * with nothing written, on a CPU without AVX-512. */
bool ct__pool_max_s2_f32(const float *x, int64_t w, int64_t rows, int64_t kw, int64_t ca,
                         int64_t cb, float *orow);

/* Whether ct__dw3_plane_f32 takes planes of geometry g (3x3, stride 1 or 2, undilated, rows of
 * at most 1024 outputs, a CPU with AVX-512) when their weights are finite. */
bool ct__dw3_fits_f32(const ct__conv_geom *g);

/* Rows [oy0, oy1) of a depthwise output plane [OH, OW] of one channel x [H, W] by its 3x3
 * filter k (geometry g), written from o on (o: the plane's row oy0), with dw_elem's bits
 * (conv_dw_tmpl.h), then conv2d_fusion's epilogue e (NULL: none) as plane m of image n, with the
 * pass's bits: false, with nothing written, where it does not apply (ct__dw3_fits_f32 false, or
 * a weight that is not finite). */
bool ct__dw3_plane_f32(const ct__conv_geom *g, const float *x, const float *k, float *o,
                       const struct ct__conv_epi *e, int64_t n, int64_t m, int64_t oy0,
                       int64_t oy1);
#endif

#endif /* CORTEN_OPS_CPU_CONV_AVX512_H */
