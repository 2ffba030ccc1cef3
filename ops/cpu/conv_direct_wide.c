/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/conv_direct_wide.c: the direct loop's rows for wide outputs at stride 2 of few terms
 * whose input rows and filters fit in L1 (conv_direct.h's ct__cdw_*: MobileNetV2's stem),
 * vectorised over output pixels instead of output channels.
 *
 * conv_direct.c's rows put 32 output channels along the lanes: a 3 -> 32 stem of 27 terms then
 * spends as long on the two 16 x 16 transposes into NCHW (on the shuffle port, which is one of
 * the two multiply-add ports) and on a pass of the epilogue as on its sums. Here a tile is up to
 * CDW_V vectors of 16 consecutive outputs of a row for CDW_R channels: each term (c, ky, kx)
 * loads the V input vectors and broadcasts the R filter values, V R multiply-adds, and the tile
 * leaves the registers as rows of NCHW with the epilogue applied on the way. At stride 2 the
 * inputs of 16 consecutive outputs are every other column, so the padded input rows are kept
 * split: a row's even columns, then its odd ones; term kx of outputs [x, x + 16) reads columns
 * 2x + kx.., which are half kx / 2 + x.. of the even or odd part. A piece pads the input rows
 * of a few output rows at a time into its buffer (in L1), not the whole image first: the stem's
 * padded image (613 KB a MobileNetV2 image) was written out and read back from L2, and its pad
 * was 18 % of the layer.
 *
 * Each output is the same sum as conv_direct.c's: over (c, ky, kx) in that order, fused
 * multiply-adds from zero, then + bias, + residual, the activation: the same bits. */
#include "ops/cpu/conv_direct.h"

#include <string.h>

#include "ops/cpu/conv_avx512.h"
#include "ops/cpu/conv_fusion.h"
#include "ops/cpu/vmath512.h"

#ifdef CT__T16_X86
/* V R accumulators, R broadcast filter values and the input vector: 21 + 3 + 1 registers of 32
 * (7 x 4 = 28 would leave none for the input: its loads then go into each multiply-add, more
 * loads than the two ports take a cycle). A row of 112 outputs is one piece of 7 vectors; 32
 * channels are 10 groups of 3 and one of 2. */
enum { CDW_V = 7, CDW_R = 3, CDW_OC = 32, CDW_MAX_TAPS = CT__CDW_MAX_TAPS };

static int64_t cdw_wp(const ct__conv_geom *g) { return g->w + g->pl + g->pr; }
/* A split row in the buffer: the even columns from 0, the odd ones from cdw_half, each part
 * rounded up to a cache line (so that the loads of the terms kx of 0 and 1 are aligned where
 * the buffer is). */
static int64_t cdw_half(const ct__conv_geom *g) { return ((cdw_wp(g) + 1) / 2 + 15) / 16 * 16; }
static int64_t cdw_stride(const ct__conv_geom *g) { return 2 * cdw_half(g); }

/* Column j of a padded row of the input row r: r[j - pl] inside, zero in the padding. */
static inline float cdw_col(const ct__conv_geom *g, const float *r, int64_t j) {
  return j >= g->pl && j < g->pl + g->w ? r[j - g->pl] : 0.0f;
}

/* Output rows a step: their padded input rows (2 (T - 1) + KH a channel) within CDW_ROWS
 * bytes, at least one. MobileNetV2's stem: 3 output rows from 7 input rows of 3 channels. */
enum { CDW_ROWS = 24 << 10 };
static int64_t cdw_step(const ct__conv_geom *g) {
  const int64_t fit = CDW_ROWS / (g->c * cdw_stride(g) * (int64_t)sizeof(float));
  return fit > g->kh ? (fit - g->kh) / 2 + 1 : 1;
}
static int64_t cdw_rows_of(const ct__conv_geom *g, int64_t t) { return 2 * (t - 1) + g->kh; }

int64_t ct__cdw_buffer_elems(const ct__conv_geom *g) {
  return g->c * cdw_rows_of(g, cdw_step(g)) * cdw_stride(g);
}

/* Padded rows [y0, y1) of plane x, split (even columns, then odd), into xp (row y0 first). */
__attribute__((target("avx512f"))) static void cdw_pad(const ct__conv_geom *g, const float *x,
                                                      float *xp, int64_t y0, int64_t y1) {
  const int64_t wp = cdw_wp(g), we = (wp + 1) / 2, wo = wp / 2;
  const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  for (int64_t y = y0; y < y1; y++) {
    float *ev = xp + (y - y0) * cdw_stride(g), *od = ev + cdw_half(g);
    const int64_t iy = y - g->pt;
    if (iy < 0 || iy >= g->h) {
      memset(ev, 0, (size_t)we * sizeof(float));
      memset(od, 0, (size_t)wo * sizeof(float));
      continue;
    }
    const float *r = x + iy * g->w;
    int64_t i = 0;
    for (; i < we && 2 * i < g->pl; i++) { /* the left padding */
      ev[i] = cdw_col(g, r, 2 * i);
      if (i < wo) od[i] = cdw_col(g, r, 2 * i + 1);
    }
    /* then 16 pairs of columns a step, the row's end and the right padding through the masks
     * (a scalar loop over the last pairs took as long as the vectors over the rest) */
    for (; i < we; i += 16) {
      const int64_t s = 2 * i - g->pl, left = g->w - s;
      /* (a half past the row's end loads nothing: from r, never a pointer past the input) */
      const __m512 va = _mm512_maskz_loadu_ps(ct__v512_rest(left), left > 0 ? r + s : r);
      const __m512 vb = _mm512_maskz_loadu_ps(ct__v512_rest(left - 16), left > 16 ? r + s + 16 : r);
      _mm512_mask_storeu_ps(ev + i, ct__v512_rest(we - i), _mm512_permutex2var_ps(va, ie, vb));
      _mm512_mask_storeu_ps(od + i, ct__v512_rest(wo - i), _mm512_permutex2var_ps(va, io, vb));
    }
  }
}

/* 16 floats at p into a register by one load of their own: written in C, the compiler folds
 * the load into each of the R multiply-adds that read it (R loads a vector, more than the two
 * load ports then take a cycle with the broadcasts). */
__attribute__((target("avx512f"))) static inline __m512 cdw_load(const float *p) {
  __m512 v;
  __asm__("vmovups %1, %0" : "=v"(v) : "m"(*(const float(*)[16])p));
  return v;
}

/* Outputs [x0, x0 + 16 (V - 1)) and the `tail` lanes after them of row oy of block b's R
 * channels from j0 (wb: the block's packed filters, 32 values a term; xp: the row's inputs in
 * the step's buffer, term t's at xp + off[t]), into d's planes, through the epilogue e (NULL:
 * none) of image n. V and R constants: each instance its own registers (an array per channel:
 * GCC kept a two-dimensional one in memory). */
__attribute__((target("avx512f"))) static inline __attribute__((always_inline)) void cdw_tile(
    const ct__conv_geom *g, const float *xp, const int32_t *off, int64_t taps, const float *wb,
    int64_t b, int64_t j0, int64_t oy, int64_t x0, __mmask16 tail, const ct__cd_dst *d,
    const ct__conv_epi *e, int64_t n, const int V, const int R) {
  __m512 a0[CDW_V], a1[CDW_V], a2[CDW_V];
#pragma GCC unroll 8
  for (int v = 0; v < V; v++) a0[v] = a1[v] = a2[v] = _mm512_setzero_ps();
  const float *w = wb + j0;
  for (int64_t t = 0; t < taps; t++, w += CDW_OC) {
    const float *p = xp + off[t];
    const __m512 w0 = _mm512_set1_ps(w[0]);
    const __m512 w1 = R > 1 ? _mm512_set1_ps(w[1]) : w0;
    const __m512 w2 = R > 2 ? _mm512_set1_ps(w[2]) : w0;
#pragma GCC unroll 8
    for (int v = 0; v < V; v++) {
      const __m512 xv =
          v == V - 1 ? _mm512_maskz_loadu_ps(tail, p + 16 * v) : cdw_load(p + 16 * v);
      a0[v] = _mm512_fmadd_ps(xv, w0, a0[v]);
      if (R > 1) a1[v] = _mm512_fmadd_ps(xv, w1, a1[v]);
      if (R > 2) a2[v] = _mm512_fmadd_ps(xv, w2, a2[v]);
    }
  }
  /* out of the registers as rows, through cd_epi_row's steps (the arrays are not passed by
   * address: when they were, GCC stored all 21 to memory at each term) */
  const __m512 lo = _mm512_set1_ps(e != NULL ? (float)e->lo : 0.0f);
  const __m512 hi = _mm512_set1_ps(e != NULL ? (float)e->hi : 0.0f);
#pragma GCC unroll 4
  for (int r = 0; r < R; r++) {
    const int64_t m = b * CDW_OC + j0 + r;
    float *o = d->o + (m - d->mb) * d->ops + (oy - d->ob) * g->ow + x0;
    const float *bias = e != NULL ? e->bias : NULL;
    const float *res = e != NULL && e->res != NULL
                           ? (const float *)e->res + n * e->rs_n + m * e->rs_m + oy * g->ow + x0
                           : NULL;
    const __m512 vb = _mm512_set1_ps(bias != NULL ? bias[e->n_bias == 1 ? 0 : m] : 0);
#pragma GCC unroll 8
    for (int v = 0; v < V; v++) {
      const __mmask16 k = v == V - 1 ? tail : (__mmask16)0xffffu;
      __m512 s = r == 0 ? a0[v] : r == 1 ? a1[v] : a2[v];
      if (e != NULL) {
        s = ct__conv_epi_f32(s, bias != NULL, vb, res != NULL ? res + 16 * v : NULL, k, e->act,
                             lo, hi);
      }
      _mm512_mask_storeu_ps(o + 16 * v, k, s);
    }
  }
}

#define CDW_CASE(V)                                                                 \
  case V:                                                                           \
    if (r == 3) {                                                                   \
      cdw_tile(g, xr + x0, off, taps, wb, b, j0, oy, x0, tail, d, e, n, V, 3);      \
    } else if (r == 2) {                                                            \
      cdw_tile(g, xr + x0, off, taps, wb, b, j0, oy, x0, tail, d, e, n, V, 2);      \
    } else {                                                                        \
      cdw_tile(g, xr + x0, off, taps, wb, b, j0, oy, x0, tail, d, e, n, V, 1);      \
    }                                                                               \
    break;

/* Share i of n of the input lines that padded rows [p0, p1) read (the next step's), fetched
 * into L2 while this step's rows compute: the input was read from L3 at the pads otherwise (the
 * stem's image, 600 KB, does not stay in L2 between runs). */
static void cdw_fetch(const ct__conv_geom *g, const float *x, int64_t p0, int64_t p1, int64_t i,
                      int64_t n) {
  const int64_t a = p0 - g->pt < 0 ? 0 : p0 - g->pt, b = p1 - g->pt > g->h ? g->h : p1 - g->pt;
  for (int64_t c = 0, k = 0; c < g->c; c++) {
    for (int64_t iy = a; iy < b; iy++, k++) {
      if (k % n != i) continue;
      const char *r = (const char *)(x + (c * g->h + iy) * g->w);
      for (int64_t l = 0; l < g->w * (int64_t)sizeof(float); l += 64) {
        _mm_prefetch(r + l, _MM_HINT_T1);
      }
    }
  }
}

__attribute__((target("avx512f"))) void ct__cdw_rows(const ct__conv_geom *g, const float *x,
                                                    const float *w, int64_t b, int64_t y0,
                                                    int64_t y1, const ct__cd_dst *d,
                                                    const ct__conv_epi *e, int64_t n, float *buf) {
  const int64_t taps = g->c * g->kh * g->kw, step = cdw_step(g);
  const int64_t mb = g->m - b * CDW_OC < CDW_OC ? g->m - b * CDW_OC : CDW_OC;
  const float *wb = w + b * taps * CDW_OC;
  const int64_t wp = cdw_stride(g), half = cdw_half(g);
  int32_t off[CDW_MAX_TAPS];
  int64_t off_rows = 0; /* the rows a channel that off was made for */
  for (int64_t oy0 = y0; oy0 < y1; oy0 += step) {
    const int64_t oy1 = y1 - oy0 < step ? y1 : oy0 + step, rows = cdw_rows_of(g, oy1 - oy0);
    for (int64_t c = 0; c < g->c; c++) {
      cdw_pad(g, x + c * g->h * g->w, buf + c * rows * wp, 2 * oy0, 2 * oy0 + rows);
    }
    /* term (c, ky, kx)'s first input of output 0 of the step's first row, from buf: one loop
     * over the terms (nested loops over 3 channels, 3 rows and 3 columns ran the stem at two
     * thirds of the speed of the same multiply-adds in one loop) */
    for (int64_t c = 0, t = 0; rows != off_rows && c < g->c; c++) {
      for (int64_t ky = 0; ky < g->kh; ky++) {
        for (int64_t kx = 0; kx < g->kw; kx++, t++) {
          off[t] = (int32_t)((c * rows + ky) * wp + (kx & 1 ? half : 0) + (kx >> 1));
        }
      }
    }
    off_rows = rows;
    for (int64_t oy = oy0; oy < oy1; oy++) {
      const float *xr = buf + (oy - oy0) * 2 * wp;
      for (int64_t x0 = 0; x0 < g->ow; x0 += 16 * CDW_V) {
        const int64_t px = g->ow - x0 < 16 * CDW_V ? g->ow - x0 : 16 * CDW_V;
        const int vecs = (int)((px + 15) / 16);
        const __mmask16 tail = ct__v512_rest(px - 16 * (vecs - 1));
        for (int64_t j0 = 0; j0 < mb; j0 += CDW_R) {
          const int64_t r = mb - j0 < CDW_R ? mb - j0 : CDW_R, groups = (mb + CDW_R - 1) / CDW_R;
          if (x0 == 0) { /* the row's first piece: a share of the fetches a group */
            cdw_fetch(g, x, oy1 < y1 ? 2 * oy1 : 0, oy1 < y1 ? 2 * oy1 + rows : 0,
                      (oy - oy0) * groups + j0 / CDW_R, (oy1 - oy0) * groups);
          }
          switch (vecs) {
            CDW_CASE(1) CDW_CASE(2) CDW_CASE(3) CDW_CASE(4) CDW_CASE(5) CDW_CASE(6)
            CDW_CASE(7)
            default: break;
          }
        }
      }
    }
  }
}
#undef CDW_CASE

#else /* no AVX-512 helpers in this build: conv_direct.c never calls these */

int64_t ct__cdw_buffer_elems(const ct__conv_geom *g) {
  (void)g;
  return 1;
}
void ct__cdw_rows(const ct__conv_geom *g, const float *x, const float *w, int64_t b, int64_t y0,
                  int64_t y1, const ct__cd_dst *d, const struct ct__conv_epi *e, int64_t n,
                  float *buf) {
  (void)g, (void)x, (void)w, (void)b, (void)y0, (void)y1, (void)d, (void)e, (void)n, (void)buf;
}
#endif
