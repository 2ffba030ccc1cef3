/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/conv_avx512.c: the convolution and pooling kernels' AVX-512 helpers
 * (conv_avx512.h), compiled for AVX-512 alone by target attributes; callers ask
 * ct__conv_avx512 first. */
#include "ops/cpu/conv_avx512.h"

#include "ops/cpu/conv_fusion.h"
#include "ops/cpu/gemm.h"

#ifdef CT__T16_X86
#include <math.h>

bool ct__conv_avx512(void) { return ct__gemm_avx512(); }

/* The small depthwise planes' channels-last blocks in float32 (conv_dw_tmpl.h's dwc_block): cb
 * (at most 32) planes of hw pixels at x (hw apart) into xt[p 32 + c], lanes past cb zero; and
 * back, ohw pixels of ot (32 apart) into cb planes at o (ohw apart). 16 x 16 blocks transposed
 * in AVX-512 registers, masked at the planes' ends: element by element, these two copies were
 * most of the path's time (a 14 x 14 input of 32 channels is 6272 moves for 882 vector
 * multiply-adds). The same values moved, so the same bits. */
__attribute__((target("avx512f"))) void ct__conv_dwc_in(const float *x, int64_t hw, int64_t cb,
                                                        float *xt) {
  for (int64_t c0 = 0; c0 < 32; c0 += 16) {
    for (int64_t p0 = 0; p0 < hw; p0 += 16) {
      const int64_t np = hw - p0 < 16 ? hw - p0 : 16;
      const __mmask16 m = (__mmask16)((1u << np) - 1);
      __m512 r[16];
      for (int64_t i = 0; i < 16; i++) {
        r[i] = c0 + i < cb ? _mm512_maskz_loadu_ps(m, x + (c0 + i) * hw + p0)
                           : _mm512_setzero_ps();
      }
      ct__t16_f32(r);
      for (int64_t l = 0; l < np; l++) _mm512_storeu_ps(xt + (p0 + l) * 32 + c0, r[l]);
    }
  }
}

__attribute__((target("avx512f"))) void ct__conv_dwc_out(const float *ot, int64_t ohw, int64_t cb,
                                                         float *o) {
  for (int64_t c0 = 0; c0 < cb; c0 += 16) {
    for (int64_t p0 = 0; p0 < ohw; p0 += 16) {
      const int64_t np = ohw - p0 < 16 ? ohw - p0 : 16;
      const __mmask16 m = (__mmask16)((1u << np) - 1);
      __m512 r[16];
      for (int64_t l = 0; l < 16; l++) {
        r[l] = l < np ? _mm512_loadu_ps(ot + (p0 + l) * 32 + c0) : _mm512_setzero_ps();
      }
      ct__t16_f32(r);
      for (int64_t i = 0; i < 16 && c0 + i < cb; i++) {
        _mm512_mask_storeu_ps(o + (c0 + i) * ohw + p0, m, r[i]);
      }
    }
  }
}


/* Max pooling at stride 2 of the outputs [ca, cb) of a row (windows inside the image's columns):
 * orow[ox] = pool_take over x[iy w + 2 ox + kx] for iy < rows, kx < kw in that order (a larger
 * element or a NaN replaces the running one: the first of equal elements stays, the last NaN
 * wins). As vmaxps, which keeps its second operand unless the first is larger (NaN or equal
 * included), and a NaN's own running select: the same element chosen, so the same bits. 16
 * outputs a vector, two vectors at a time (four held more masks than the mask registers), each
 * tap's even elements picked from two loads by one permute, the last vectors masked (loads
 * included: nothing past a window's last element is read). Taking the taps one at a time across
 * the row, storing and reloading each output at every tap, was 3 times onnxruntime's time on
 * resnet18's 3x3/2 pool. */
enum { PMS2_V = 2 };
__attribute__((target("avx512f"), noinline)) static bool pool_max_s2_avx512(
    const float *x, int64_t w, int64_t rows, int64_t kw, int64_t ca, int64_t cb, float *orow) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28,
                                         30);
  for (int64_t o0 = ca; o0 < cb; o0 += 16 * PMS2_V) {
    __m512 acc[PMS2_V], nan[PMS2_V];
    __mmask16 lo[PMS2_V], hi[PMS2_V], out[PMS2_V], isnan[PMS2_V];
    for (int v = 0; v < PMS2_V; v++) {
      const int64_t left = cb - (o0 + 16 * v), m = left < 0 ? 0 : left > 16 ? 16 : left;
      const int64_t e = m > 0 ? 2 * m - 1 : 0; /* a tap's elements: [2 o, 2 o + e) */
      out[v] = (__mmask16)((1u << m) - 1);
      lo[v] = (__mmask16)(e >= 16 ? 0xffffu : (1u << e) - 1);
      hi[v] = (__mmask16)(e > 16 ? (1u << (e - 16)) - 1 : 0u);
      acc[v] = nan[v] = _mm512_set1_ps(-INFINITY);
      isnan[v] = 0;
    }
    for (int64_t iy = 0; iy < rows; iy++) {
      for (int64_t kx = 0; kx < kw; kx++) {
        const float *t = x + iy * w + 2 * o0 + kx;
        for (int v = 0; v < PMS2_V; v++) {
          if (out[v] == 0) break;
          const __m512 a = _mm512_maskz_loadu_ps(lo[v], t + 32 * v);
          const __m512 b = _mm512_maskz_loadu_ps(hi[v], t + 32 * v + 16);
          const __m512 val = _mm512_permutex2var_ps(a, even, b);
          const __mmask16 un = _mm512_cmp_ps_mask(val, val, _CMP_UNORD_Q);
          acc[v] = _mm512_max_ps(val, acc[v]);
          nan[v] = _mm512_mask_mov_ps(nan[v], un, val);
          isnan[v] |= un;
        }
      }
    }
    for (int v = 0; v < PMS2_V && out[v] != 0; v++) {
      _mm512_mask_storeu_ps(orow + o0 + 16 * v, out[v],
                            _mm512_mask_mov_ps(acc[v], isnan[v], nan[v]));
    }
  }
  return true;
}

bool ct__pool_max_s2_f32(const float *x, int64_t w, int64_t rows, int64_t kw, int64_t ca,
                         int64_t cb, float *orow) {
  return ct__conv_avx512() && pool_max_s2_avx512(x, w, rows, kw, ca, cb, orow);
}
/* ---- 3x3 depthwise planes at stride 1 or 2, straight from the image ----------------------- */

enum { DW3_MAX_CHUNKS = 64 }; /* outputs a row: at most 16 of these */

/* Plane o [OH, OW] of one channel x [H, W] by its 3x3 filter k: 16 outputs of a row a vector,
 * each tap's inputs loaded where they lie (stride 2: two loads and a permute picking the even
 * elements), the lanes on the padding columns masked to 0 (loads included: nothing outside the
 * row is read), the rows in the padding skipped. Each output adds w x input for its taps in
 * (ky, kx) order from 0, a multiply then an add (no fusing), as dw_elem does: a masked lane adds
 * w x 0 = +-0 to a sum that is never -0 (it starts at +0), which leaves it as it is for finite
 * w, so the bits are dw_elem's. */
__attribute__((target("avx512f"))) static void dw3_plane_avx512(const ct__conv_geom *g,
                                                               const float *x, const float *k,
                                                               float *o, const ct__conv_epi *ep,
                                                               int64_t n, int64_t m) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28,
                                         30);
  const int64_t s = g->sw, chunks = (g->ow + 15) / 16;
  /* conv2d_fusion's epilogue in registers before the store, in the pass's steps and operand
   * orders (as the GEMM's tiles apply it, gemm_ukr.c): + bias, + the residual, then relu as
   * max(v, 0) (NaN and -0 give +0, as v > 0 ? v : 0 does) or the clamp as min(hi, max(lo, v)) */
  const bool hb = ep != NULL && ep->bias != NULL;
  const float *res = ep != NULL && ep->res != NULL
                         ? (const float *)ep->res + n * ep->rs_n + m * ep->rs_m
                         : NULL;
  const int act = ep != NULL ? ep->act : CT__EPI_NONE;
  const __m512 vbias = _mm512_set1_ps(hb ? ((const float *)ep->bias)[ep->n_bias == 1 ? 0 : m] : 0);
  const __m512 vlo = _mm512_set1_ps(act == CT__EPI_CLAMP ? (float)ep->lo : 0);
  const __m512 vhi = _mm512_set1_ps(act == CT__EPI_CLAMP ? (float)ep->hi : 0);
  __m512 wv[9];
  for (int i = 0; i < 9; i++) wv[i] = _mm512_set1_ps(k[i]);
  /* each chunk's and tap column's first input column and the masks of its valid elements */
  int64_t b0[DW3_MAX_CHUNKS][3];
  __mmask16 lo[DW3_MAX_CHUNKS][3], hi[DW3_MAX_CHUNKS][3], out[DW3_MAX_CHUNKS];
  for (int64_t c = 0; c < chunks; c++) {
    const int64_t cols = g->ow - 16 * c < 16 ? g->ow - 16 * c : 16;
    const int64_t span = s == 1 ? cols : 2 * cols - 1;
    out[c] = (__mmask16)((1u << cols) - 1);
    for (int kx = 0; kx < 3; kx++) {
      const int64_t b = 16 * c * s + kx - g->pl;
      /* the valid elements [a, e) of the span (a, e <= span <= 31, so the shifts are defined
       * however wide the padding) */
      int64_t a = b < 0 ? -b : 0, e = g->w - b < span ? g->w - b : span;
      if (a > span) a = span;
      if (e < a) e = a;
      const uint64_t bits = ((1ull << e) - 1) & ~((1ull << a) - 1);
      b0[c][kx] = b;
      lo[c][kx] = (__mmask16)(bits & 0xffffu);
      hi[c][kx] = (__mmask16)(bits >> 16);
    }
  }
  for (int64_t oy = 0; oy < g->oh; oy++) {
    for (int64_t c = 0; c < chunks; c++) {
      __m512 acc = _mm512_setzero_ps();
      for (int64_t ky = 0; ky < 3; ky++) {
        const int64_t iy = oy * g->sh - g->pt + ky;
        if (iy < 0 || iy >= g->h) continue;
        const float *row = x + iy * g->w;
        for (int kx = 0; kx < 3; kx++) {
          const float *p = row + b0[c][kx];
          __m512 v = _mm512_maskz_loadu_ps(lo[c][kx], p);
          if (s == 2) v = _mm512_permutex2var_ps(v, even, _mm512_maskz_loadu_ps(hi[c][kx], p + 16));
          acc = _mm512_add_ps(acc, _mm512_mul_ps(wv[ky * 3 + kx], v));
        }
      }
      const int64_t at = oy * g->ow + 16 * c;
      if (hb) acc = _mm512_add_ps(acc, vbias);
      if (res != NULL) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(out[c], res + at));
      if (act == CT__EPI_RELU) {
        acc = _mm512_max_ps(acc, _mm512_setzero_ps());
      } else if (act == CT__EPI_CLAMP) {
        acc = _mm512_min_ps(vhi, _mm512_max_ps(vlo, acc));
      }
      _mm512_mask_storeu_ps(o + at, out[c], acc);
    }
  }
}

bool ct__dw3_plane_f32(const ct__conv_geom *g, const float *x, const float *k, float *o,
                       const ct__conv_epi *e, int64_t n, int64_t m) {
  if (g->kh != 3 || g->kw != 3 || g->dh != 1 || g->dw != 1 || g->sh != g->sw ||
      (g->sw != 1 && g->sw != 2) || g->ow > 16 * DW3_MAX_CHUNKS || !ct__conv_avx512()) {
    return false;
  }
  for (int i = 0; i < 9; i++) {
    if (!isfinite(k[i])) return false; /* w x 0 on a masked lane would be NaN */
  }
  dw3_plane_avx512(g, x, k, o, e, n, m);
  return true;
}
#endif
