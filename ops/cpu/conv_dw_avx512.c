/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/conv_dw_avx512.c: the depthwise planes' AVX-512 kernels for the small planes
 * (conv_avx512.h): 3x3 at stride 1 on a plane taken as one flat run of outputs, and blocks of
 * channels channels-last; compiled for AVX-512 alone by target attributes, callers ask
 * ct__conv_avx512 first. */
#include "ops/cpu/conv_avx512.h"

#ifdef CT__T16_X86
#include <assert.h>
#include <math.h>

#include "ops/cpu/conv_fusion.h"

/* ---- 3x3 at stride 1 on small planes, flat ----------------------------------------------------
 * A plane whose rows are as wide as the input's (the left and right padding 2 in all) has its
 * tap (ky, kx) of output p at input p + (ky - pt) W + (kx - pl): one offset for the whole plane,
 * so its outputs go 16 a vector in one run across the rows (a 7 x 7 plane is four vectors, not
 * seven rows of 7 lanes in 16), each tap a masked load whose mask keeps the lanes whose input
 * lies in the image (the others load 0: nothing outside the plane is read). Every output adds
 * its nine products in (ky, kx) order from 0, a multiply then an add, as dw_elem does; a masked
 * lane adds w x 0 = +-0 to a sum that is never -0 (it starts at +0), which leaves it as it is
 * for a finite w: dw_elem's bits, the weights checked finite per plane. No transposes: the
 * channels-last blocks spent more on moving 7 x 7 planes in and out than on their sums. */

bool ct__dwf_plan_f32(const ct__conv_geom *g, ct__dwf_plan *pl) {
  if (g->kh != 3 || g->kw != 3 || g->sh != 1 || g->sw != 1 || g->dh != 1 || g->dw != 1 ||
      g->ow != g->w || g->oh * g->ow > 16 * CT__DWF_VECS || !ct__conv_avx512()) {
    return false;
  }
  const int64_t ohw = g->oh * g->ow;
  pl->nv = (ohw + 15) / 16;
  for (int t = 0; t < 9; t++) pl->off[t] = (t / 3 - g->pt) * g->w + (t % 3 - g->pl);
  for (int64_t j = 0; j < pl->nv; j++) {
    pl->out[j] = 0;
    for (int t = 0; t < 9; t++) pl->m[j][t] = 0;
    for (int64_t l = 0; l < 16 && 16 * j + l < ohw; l++) {
      const int64_t p = 16 * j + l, oy = p / g->ow, ox = p % g->ow;
      pl->out[j] |= (uint16_t)(1u << l);
      for (int t = 0; t < 9; t++) {
        const int64_t iy = oy - g->pt + t / 3, ix = ox - g->pl + t % 3;
        if (iy >= 0 && iy < g->h && ix >= 0 && ix < g->w) pl->m[j][t] |= (uint16_t)(1u << l);
      }
    }
  }
  return true;
}

/* The plane's sums in NV vectors, then conv2d_fusion's epilogue ep in registers in the pass's
 * steps and operand orders (as dw3_rows applies it: + bias, + the residual, then relu as
 * max(0, v) or the clamp as min(hi, max(lo, v))). */
static inline __attribute__((always_inline, target("avx512f"))) void dwf_sums(
    const ct__dwf_plan *pl, const float *x, const float *k, float *o, const ct__conv_epi *ep,
    int64_t n, int64_t m, const int NV) {
  __m512 acc[CT__DWF_VECS];
  for (int j = 0; j < NV; j++) acc[j] = _mm512_setzero_ps();
  for (int t = 0; t < 9; t++) {
    const __m512 wv = _mm512_set1_ps(k[t]);
    const float *xt = x + pl->off[t];
    for (int j = 0; j < NV; j++) {
      acc[j] = _mm512_add_ps(acc[j], _mm512_mul_ps(wv, _mm512_maskz_loadu_ps(pl->m[j][t],
                                                                             xt + 16 * j)));
    }
  }
  const bool hb = ep != NULL && ep->bias != NULL;
  const float *res = ep != NULL && ep->res != NULL
                         ? (const float *)ep->res + n * ep->rs_n + m * ep->rs_m
                         : NULL;
  const int act = ep != NULL ? ep->act : CT__EPI_NONE;
  const __m512 vb = _mm512_set1_ps(hb ? ((const float *)ep->bias)[ep->n_bias == 1 ? 0 : m] : 0);
  const __m512 vlo = _mm512_set1_ps(act == CT__EPI_CLAMP ? (float)ep->lo : 0);
  const __m512 vhi = _mm512_set1_ps(act == CT__EPI_CLAMP ? (float)ep->hi : 0);
  for (int j = 0; j < NV; j++) {
    _mm512_mask_storeu_ps(o + 16 * j, pl->out[j],
                          ct__conv_epi_f32(acc[j], hb, vb, res != NULL ? res + 16 * j : NULL,
                                           pl->out[j], act, vlo, vhi));
  }
}

__attribute__((target("avx512f"))) bool ct__dwf_plane_f32(const ct__dwf_plan *pl, const float *x,
                                                          const float *k, float *o,
                                                          const ct__conv_epi *e, int64_t n,
                                                          int64_t m) {
  const __m512 w = _mm512_maskz_loadu_ps(0x1ff, k); /* the nine weights */
  const __m512 d = _mm512_sub_ps(w, w); /* 0 for a finite w, NaN for an infinity or NaN */
  if (_mm512_mask_cmp_ps_mask(0x1ff, d, _mm512_setzero_ps(), _CMP_EQ_OQ) != 0x1ff) return false;
  switch (pl->nv) {
    case 1: dwf_sums(pl, x, k, o, e, n, m, 1); break;
    case 2: dwf_sums(pl, x, k, o, e, n, m, 2); break;
    case 3: dwf_sums(pl, x, k, o, e, n, m, 3); break;
    default: dwf_sums(pl, x, k, o, e, n, m, 4); break;
  }
  return true;
}

/* ---- Small depthwise planes channels-last (conv_dw_tmpl.h's dwc_block) -------------------- */

/* cb (at most 32) planes of hw pixels at x (hw apart) into xt[p 32 + c], lanes past cb zero; and
 * back, ohw pixels of ot (32 apart) into cb planes at o (ohw apart). 16 x 16 blocks transposed
 * in AVX-512 registers, masked at the planes' ends: element by element, these two copies were
 * most of the path's time (a 14 x 14 input of 32 channels is 6272 moves for 882 vector
 * multiply-adds). The same values moved, so the same bits. */
static_assert(CT__DWC_CB_F32 == 32, "dwc_in and dwc_out move blocks of 32 channels");
__attribute__((target("avx512f"))) static void dwc_in(const float *x, int64_t hw, int64_t cb,
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

__attribute__((target("avx512f"))) static void dwc_out(const float *ot, int64_t ohw, int64_t cb,
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

/* The block's outputs: each pixel's sums for V x 16 channels held in registers over its taps
 * (those inside the image, in (ky, kx) order from 0: a multiply then an add, as dw_elem does, so
 * the same bits), then conv2d_fusion's epilogue in the lanes (+ bias, then relu as max(0, v) or
 * the clamp as min(hi, max(lo, v)): the pass's steps and operand orders, as dw3_rows applies
 * them) when ep is given. Summed in memory (the generic loop's accumulator, stored and reloaded
 * at every tap) the 7 x 7 layers of mobilenet_v2 took 2.2-2.9 times onnxruntime's time. */
static inline __attribute__((always_inline, target("avx512f"))) void dwc_sums(
    const ct__conv_geom *g, const float *xt, const float *wt, float *ot, const __m512 *vb,
    int act, __m512 vlo, __m512 vhi, const int V) {
  for (int64_t oy = 0; oy < g->oh; oy++) {
    for (int64_t ox = 0; ox < g->ow; ox++) {
      __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
      for (int64_t ky = 0; ky < g->kh; ky++) {
        const int64_t iy = oy * g->sh - g->pt + ky * g->dh;
        if (iy < 0 || iy >= g->h) continue;
        for (int64_t kx = 0; kx < g->kw; kx++) {
          const int64_t ix = ox * g->sw - g->pl + kx * g->dw;
          if (ix < 0 || ix >= g->w) continue;
          const float *xp = xt + (iy * g->w + ix) * 32, *wp = wt + (ky * g->kw + kx) * 32;
          for (int v = 0; v < V; v++) {
            acc[v] = _mm512_add_ps(acc[v], _mm512_mul_ps(_mm512_load_ps(wp + 16 * v),
                                                         _mm512_load_ps(xp + 16 * v)));
          }
        }
      }
      for (int v = 0; v < V; v++) {
        __m512 r = acc[v];
        if (vb != NULL) r = _mm512_add_ps(r, vb[v]);
        _mm512_store_ps(ot + (oy * g->ow + ox) * 32 + 16 * v, ct__conv_act_f32(r, act, vlo, vhi));
      }
    }
  }
}

__attribute__((target("avx512f"), noinline)) static bool dwc_block_avx512(
    const ct__conv_geom *g, const float *x, const float *w, float *o, int64_t cb,
    const ct__conv_epi *ep, int64_t m0) {
  float xt[CT__DWC_PIXELS * 32] __attribute__((aligned(64)));
  float ot[CT__DWC_OUT * 32] __attribute__((aligned(64)));
  float wt[CT__DWC_TAPS * 32] __attribute__((aligned(64)));
  float bias[32] __attribute__((aligned(64))) = {0};
  const int64_t hw = g->h * g->w, ohw = g->oh * g->ow, k = g->kh * g->kw;
  for (int64_t i = 0; i < k * 32; i++) wt[i] = 0; /* lanes past the block: summed, not stored */
  for (int64_t c = 0; c < cb; c++) {
    for (int64_t t = 0; t < k; t++) wt[t * 32 + c] = w[c * k + t];
  }
  dwc_in(x, hw, cb, xt);
  /* the epilogue in the lanes unless it has a residual (its planes are channels-first) */
  const bool epi = ep != NULL && ep->res == NULL;
  const int act = epi ? ep->act : CT__EPI_NONE;
  __m512 vb[2];
  if (epi && ep->bias != NULL) {
    const float *b = ep->bias;
    for (int64_t c = 0; c < cb; c++) bias[c] = b[ep->n_bias == 1 ? 0 : m0 + c];
  }
  vb[0] = _mm512_load_ps(bias);
  vb[1] = _mm512_load_ps(bias + 16);
  const __m512 vlo = _mm512_set1_ps(act == CT__EPI_CLAMP ? (float)ep->lo : 0);
  const __m512 vhi = _mm512_set1_ps(act == CT__EPI_CLAMP ? (float)ep->hi : 0);
  const __m512 *pb = epi && ep->bias != NULL ? vb : NULL;
  if (cb <= 16) {
    dwc_sums(g, xt, wt, ot, pb, act, vlo, vhi, 1);
  } else {
    dwc_sums(g, xt, wt, ot, pb, act, vlo, vhi, 2);
  }
  dwc_out(ot, ohw, cb, o);
  return epi;
}

bool ct__conv_dwc_block_f32(const ct__conv_geom *g, const float *x, const float *w, float *o,
                            int64_t cb, const ct__conv_epi *e, int64_t m0) {
  return dwc_block_avx512(g, x, w, o, cb, e, m0);
}
#endif
