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

/* One tap's values into a vector's running max and its last NaN (pool_take's two selects). */
__attribute__((always_inline, target("avx512f"))) static inline void pms2_take(
    __m512 val, __m512 *acc, __m512 *nan, __mmask16 *isnan) {
  const __mmask16 un = _mm512_cmp_ps_mask(val, val, _CMP_UNORD_Q);
  *acc = _mm512_max_ps(val, *acc);
  *nan = _mm512_mask_mov_ps(*nan, un, val);
  *isnan |= un;
}
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
          pms2_take(_mm512_permutex2var_ps(a, even, b), &acc[v], &nan[v], &isnan[v]);
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

/* The same for windows 3 wide (resnet's 3x3/2 pool), each input row's elements loaded once
 * for its three taps: the two vectors of 32 elements a row and one more element, the taps'
 * values picked by three permutes (the even elements, the odd ones, the even ones one further,
 * the last lane of which is that one element). The taps go in the same order through the same
 * max, and through pms2_take's NaN selects unless the row's elements hold no NaN (then those
 * selects would leave their state as it is), so the bits are pool_max_s2_avx512's; nothing
 * past a window's last element is read. Loading each tap's two vectors anew (six loads a row)
 * made resnet18's pool 1.8-2.1 times onnxruntime's time. */
__attribute__((target("avx512f"), noinline)) static bool pool_max_s2_k3_avx512(
    const float *x, int64_t w, int64_t rows, int64_t ca, int64_t cb, float *orow) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28,
                                         30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  /* even elements one further; lane 15's (element 32, index 32 wrapping to 0) is replaced */
  const __m512i next = _mm512_add_epi32(even, _mm512_set1_epi32(2));
  for (int64_t o0 = ca; o0 < cb; o0 += 16 * PMS2_V) {
    __m512 acc[PMS2_V], nan[PMS2_V];
    __mmask16 lo[PMS2_V], hi[PMS2_V], out[PMS2_V], isnan[PMS2_V];
    bool last[PMS2_V];
    for (int v = 0; v < PMS2_V; v++) {
      const int64_t left = cb - (o0 + 16 * v), m = left < 0 ? 0 : left > 16 ? 16 : left;
      const int64_t e = m > 0 ? 2 * m + 1 : 0; /* the row's elements: [2 o, 2 o + e) */
      out[v] = (__mmask16)((1u << m) - 1);
      lo[v] = (__mmask16)(e >= 16 ? 0xffffu : (1u << e) - 1);
      hi[v] = (__mmask16)(e >= 32 ? 0xffffu : e > 16 ? (1u << (e - 16)) - 1 : 0u);
      last[v] = e > 32; /* element 32, lane 15's third tap */
      acc[v] = nan[v] = _mm512_set1_ps(-INFINITY);
      isnan[v] = 0;
    }
    for (int64_t iy = 0; iy < rows; iy++) {
      const float *t = x + iy * w + 2 * o0;
      for (int v = 0; v < PMS2_V; v++) {
        if (out[v] == 0) break;
        const __m512 a = _mm512_maskz_loadu_ps(lo[v], t + 32 * v);
        const __m512 b = _mm512_maskz_loadu_ps(hi[v], t + 32 * v + 16);
        __m512 tap[3] = {_mm512_permutex2var_ps(a, even, b), _mm512_permutex2var_ps(a, odd, b),
                         _mm512_permutex2var_ps(a, next, b)};
        if (last[v]) {
          tap[2] = _mm512_mask_broadcastss_ps(tap[2], (__mmask16)0x8000,
                                              _mm_load_ss(t + 32 * v + 32));
        }
        /* no NaN among the row's elements (three compares: the two vectors and the third tap,
         * which holds the one element past them; masked-off lanes load 0): pms2_take's selects
         * would leave the last NaN as it is, so the max alone */
        const __mmask16 un = _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q) |
                             _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q) |
                             _mm512_cmp_ps_mask(tap[2], tap[2], _CMP_UNORD_Q);
        if (un == 0) {
          for (int kx = 0; kx < 3; kx++) acc[v] = _mm512_max_ps(tap[kx], acc[v]);
          continue;
        }
        for (int kx = 0; kx < 3; kx++) pms2_take(tap[kx], &acc[v], &nan[v], &isnan[v]);
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
  if (!ct__conv_avx512()) return false;
  if (kw == 3) return pool_max_s2_k3_avx512(x, w, rows, ca, cb, orow);
  return pool_max_s2_avx512(x, w, rows, kw, ca, cb, orow);
}
/* ---- 3x3 depthwise planes at stride 1 or 2, straight from the image ----------------------- */

enum { DW3_MAX_CHUNKS = 64, DW3_ROWS = 8 }; /* outputs a row: at most 16 of these */

/* The input row the rows in the padding read: zeros (w x 0 adds +-0 to a sum that is never -0,
 * which leaves it as it is, as skipping the row does), wide enough for the widest input row
 * taken (16 outputs a chunk, stride 2), with a vector on either side for the padding columns'
 * offsets. */
enum { DW3_ZERO_W = 2 * 16 * DW3_MAX_CHUNKS + 16 };
static const float dw3_zero[16 + DW3_ZERO_W + 32];

/* One plane's constants: each chunk's and tap column's first input column and the masks of its
 * valid elements, the weights, the epilogue's operands. */
typedef struct dw3_plan {
  const ct__conv_geom *g;
  const float *x, *res;
  float *o;
  int64_t chunks, row0; /* o and res point at output row row0 */
  int act;
  bool hb;
  __m512 wv[9], vbias, vlo, vhi;
  int64_t b0[DW3_MAX_CHUNKS]; /* a chunk's first input column (its first tap's) */
  /* the valid elements of its loads: stride 1, of the tap columns' 16 from b0 + kx; stride 2,
   * of elements [b0, b0 + 16), [b0 + 16, b0 + 32) and b0 + 32 */
  __mmask16 m[DW3_MAX_CHUNKS][3], out[DW3_MAX_CHUNKS];
} dw3_plan;

/* Output rows [oy0, oy0 + R) at stride S, chunk by chunk, R sums at a time. Each input row's
 * three tap vectors are loaded once and feed every output row it is a tap row of (up to 3):
 * the loads, which a sliding window puts across cache lines, were the kernel's cost when each
 * output row loaded its own (3 times those of the aligned loads' time), and one sum at a time
 * waited on its adds' latency. Each sum still adds its taps in (ky, kx) order: input rows go up,
 * so an output row meets its ky in order. */
static inline __attribute__((always_inline, target("avx512f"))) void dw3_rows(
    const dw3_plan *t, int64_t oy0, const int R, const int S) {
  const ct__conv_geom *g = t->g;
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28,
                                         30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512i next = _mm512_setr_epi32(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
  const float *rows[(DW3_ROWS - 1) * 2 + 3]; /* input row oy0 S - pt + j */
  for (int j = 0; j < (R - 1) * S + 3; j++) {
    const int64_t iy = oy0 * S - g->pt + j;
    rows[j] = iy >= 0 && iy < g->h ? t->x + iy * g->w : dw3_zero + 16;
  }
  for (int64_t c = 0; c < t->chunks; c++) {
    const __mmask16 m0 = t->m[c][0], m1 = t->m[c][1], m2 = t->m[c][2];
    const int64_t b = t->b0[c];
    __m512 acc[DW3_ROWS];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) acc[r] = _mm512_setzero_ps();
#pragma GCC unroll 17
    for (int j = 0; j < (R - 1) * S + 3; j++) {
      const float *p = rows[j] + b;
      __m512 v[3];
      if (S == 1) { /* the tap columns kx start at b + kx */
        v[0] = _mm512_maskz_loadu_ps(m0, p);
        v[1] = _mm512_maskz_loadu_ps(m1, p + 1);
        v[2] = _mm512_maskz_loadu_ps(m2, p + 2);
      } else { /* elements b + 2 i + kx: the even, the odd, the even shifted by one */
        const __m512 l0 = _mm512_maskz_loadu_ps(m0, p), l1 = _mm512_maskz_loadu_ps(m1, p + 16);
        v[0] = _mm512_permutex2var_ps(l0, even, l1);
        v[1] = _mm512_permutex2var_ps(l0, odd, l1);
        v[2] = _mm512_permutex2var_ps(v[0], next, _mm512_maskz_loadu_ps(m2, p + 32));
      }
#pragma GCC unroll 3
      for (int ky = 0; ky < 3; ky++) {
        const int r = (j - ky) / S;
        if (j < ky || (j - ky) % S != 0 || r >= R) continue;
        for (int kx = 0; kx < 3; kx++) {
          acc[r] = _mm512_add_ps(acc[r], _mm512_mul_ps(t->wv[ky * 3 + kx], v[kx]));
        }
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
      const int64_t at = (oy0 + r - t->row0) * g->ow + 16 * c;
      const float *res = t->res != NULL ? t->res + at : NULL;
      _mm512_mask_storeu_ps(t->o + at, t->out[c],
                            ct__conv_epi_f32(acc[r], t->hb, t->vbias, res, t->out[c], t->act,
                                             t->vlo, t->vhi));
    }
  }
}

/* All rows at stride S: blocks of 8, then 4, 2 and 1. */
static inline __attribute__((always_inline, target("avx512f"))) void dw3_plane_s(
    const dw3_plan *t, const int S, int64_t oy, const int64_t end) {
  for (; oy + 8 <= end; oy += 8) dw3_rows(t, oy, 8, S);
  if (oy + 4 <= end) {
    dw3_rows(t, oy, 4, S);
    oy += 4;
  }
  if (oy + 2 <= end) {
    dw3_rows(t, oy, 2, S);
    oy += 2;
  }
  if (oy < end) dw3_rows(t, oy, 1, S);
}

/* The elements of input row columns [b, b + n) that lie in the row, as bits (n <= 33, so the
 * shifts are defined however wide the padding). */
static uint64_t dw3_valid(const ct__conv_geom *g, int64_t b, int64_t n) {
  int64_t a = b < 0 ? -b : 0, e = g->w - b < n ? g->w - b : n;
  if (a > n) a = n;
  if (e < a) e = a;
  return ((1ull << e) - 1) & ~((1ull << a) - 1);
}

/* Plane o [OH, OW] of one channel x [H, W] by its 3x3 filter k: 16 outputs of a row a vector,
 * each tap's inputs loaded where they lie (stride 2: the even, the odd and the next even
 * elements picked by permutes from three loads), the lanes on the padding columns masked to 0
 * (loads included: nothing outside the row is read), the rows in the padding read as zeros.
 * Each output adds w x input for its taps in (ky, kx) order from 0, a multiply then an add (no
 * fusing), as dw_elem does: a masked lane adds w x 0 = +-0 to a sum that is never -0 (it starts
 * at +0), which leaves it as it is for finite w, so the bits are dw_elem's. */
__attribute__((target("avx512f"), noinline)) static void dw3_plane_avx512(
    const ct__conv_geom *g, const float *x, const float *k, float *o, const ct__conv_epi *ep,
    int64_t n, int64_t m, int64_t oy0, int64_t oy1) {
  dw3_plan t;
  const int64_t s = g->sw;
  t.g = g;
  t.x = x;
  t.o = o;
  t.row0 = oy0;
  t.chunks = (g->ow + 15) / 16;
  /* conv2d_fusion's epilogue in registers before the store, in the pass's steps and operand
   * orders (as the GEMM's tiles apply it, gemm_ukr.c): + bias, + the residual, then relu as
   * max(0, v) (NaN and -0 pass through, as v < 0 ? 0 : v does) or the clamp as
   * min(hi, max(lo, v)) */
  t.hb = ep != NULL && ep->bias != NULL;
  t.res = ep != NULL && ep->res != NULL
              ? (const float *)ep->res + n * ep->rs_n + m * ep->rs_m + oy0 * g->ow
              : NULL;
  t.act = ep != NULL ? ep->act : CT__EPI_NONE;
  t.vbias = _mm512_set1_ps(t.hb ? ((const float *)ep->bias)[ep->n_bias == 1 ? 0 : m] : 0);
  t.vlo = _mm512_set1_ps(t.act == CT__EPI_CLAMP ? (float)ep->lo : 0);
  t.vhi = _mm512_set1_ps(t.act == CT__EPI_CLAMP ? (float)ep->hi : 0);
  for (int i = 0; i < 9; i++) t.wv[i] = _mm512_set1_ps(k[i]);
  for (int64_t c = 0; c < t.chunks; c++) {
    const int64_t cols = g->ow - 16 * c < 16 ? g->ow - 16 * c : 16;
    t.out[c] = (__mmask16)((1u << cols) - 1);
    t.b0[c] = 16 * c * s - g->pl;
    if (s == 1) {
      for (int q = 0; q < 3; q++) t.m[c][q] = (__mmask16)dw3_valid(g, t.b0[c] + q, cols);
    } else {
      const uint64_t bits = dw3_valid(g, t.b0[c], 2 * cols + 1);
      for (int q = 0; q < 3; q++) t.m[c][q] = (__mmask16)((bits >> (16 * q)) & 0xffffu);
    }
  }
  if (s == 1) {
    dw3_plane_s(&t, 1, oy0, oy1);
  } else {
    dw3_plane_s(&t, 2, oy0, oy1);
  }
}

bool ct__dw3_fits_f32(const ct__conv_geom *g) {
  return g->kh == 3 && g->kw == 3 && g->dh == 1 && g->dw == 1 && g->sh == g->sw &&
         (g->sw == 1 || g->sw == 2) && g->ow <= 16 * DW3_MAX_CHUNKS && g->w <= DW3_ZERO_W &&
         ct__conv_avx512();
}

bool ct__dw3_plane_f32(const ct__conv_geom *g, const float *x, const float *k, float *o,
                       const ct__conv_epi *e, int64_t n, int64_t m, int64_t oy0, int64_t oy1) {
  if (!ct__dw3_fits_f32(g)) return false;
  for (int i = 0; i < 9; i++) {
    if (!isfinite(k[i])) return false; /* w x 0 on a masked lane would be NaN */
  }
  dw3_plane_avx512(g, x, k, o, e, n, m, oy0, oy1);
  return true;
}
#endif
