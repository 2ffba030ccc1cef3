/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/conv_dw_tmpl.h: the depthwise planes of conv2d (one input channel per group), for one
 * element type; included by ops/cpu/conv_tmpl.h (T and SFX defined). No include guard. */

/* ---- Depthwise (one input channel per group): a direct loop per output plane --------------
 * Output channel mo reads input channel mo / (M / groups). fwd: out += w x (shifted x);
 * data grad: dx += w x (shifted dout); filter grad: dw = sum dout x (shifted x). */

/* Output element (oy, ox) of a depthwise plane: its taps in (ky, kx) order from 0, those
 * outside the padded input skipped. */
static inline T SFX(dw_elem)(const ct__conv_geom *g, const T *x, const T *w, int64_t oy,
                             int64_t ox) {
  T acc = 0;
  for (int64_t ky = 0; ky < g->kh; ky++) {
    int64_t iy = oy * g->sh - g->pt + ky * g->dh;
    if (iy < 0 || iy >= g->h) continue;
    for (int64_t kx = 0; kx < g->kw; kx++) {
      int64_t ix = ox * g->sw - g->pl + kx * g->dw;
      if (ix >= 0 && ix < g->w) acc += w[ky * g->kw + kx] * x[iy * g->w + ix];
    }
  }
  return acc;
}

/* ---- 3x3 at stride 1 or 2 through a padded copy, a band of output rows at a time --------------
 * The band's input rows (the padding as zeros) are copied into s x s phase planes Q[a][b]
 * (Q[a][b][i][j] = the padded input's (i s + a, j s + b)), each wq wide. Output (oy, ox) of the
 * band then reads tap (ky, kx) at Q[ky % s][kx % s][p + (ky / s) wq + kx / s], p = oy wq + ox:
 * one flat index for every tap, so the nine taps sum as nine contiguous streams over the
 * whole band, whatever the width (a 7 x 7 plane is one run of 47 sums, not seven of 7, and no
 * border element takes the per-tap path). The columns past ow of each row are computed and
 * dropped. Each element adds its nine products in (ky, kx) order from 0, as dw_elem does; a tap
 * on the padding adds w x 0, which is +-0 and leaves the sum as it is (the sum is never -0: it
 * starts at +0 and a sum that cancels is +0), unless w is not finite (w x 0 is NaN): planes with
 * padding and such a weight take dw_plane3, so the bits are dw_elem's either way. */

enum { SFX(DW3_BUF) = 16384 / (int)sizeof(T) }; /* the band's planes and sums, on the stack */

/* The band's rows of output (at least 1), or 0 when a row does not fit the buffer. */
static int64_t SFX(dw3_band_rows)(int64_t s, int64_t wq) {
  /* s*s planes of ((bh - 1) s + 3 + s - 1) / s rows (bh + 2 at s 1, bh + 1 at s 2), bh of sums */
  int64_t extra = s == 1 ? 2 : 1, per_row = (s * s + 1) * wq;
  int64_t bh = (SFX(DW3_BUF) - s * s * extra * wq) / per_row;
  return bh > 0 ? bh : 0;
}

static inline __attribute__((always_inline)) void SFX(dw3_band)(
    const ct__conv_geom *g, const T *x, const T *w, T *o, int64_t oy0, int64_t bh, int64_t wq,
    T *buf) {
  const int64_t s = g->sh, ow = g->ow, rq = s == 1 ? bh + 2 : bh + 1;
  T *t = buf + s * s * rq * wq;
  for (int64_t a = 0; a < s; a++) {
    for (int64_t b = 0; b < s; b++) {
      T *q = buf + (a * s + b) * rq * wq;
      int64_t lo, hi, off = b - g->pl; /* q[j] = the row's x[j s + off] for j in [lo, hi) */
      conv_valid_range(off, s, g->w, wq, &lo, &hi);
      for (int64_t i = 0; i < rq; i++, q += wq) {
        int64_t iy = oy0 * s + i * s + a - g->pt;
        if (iy < 0 || iy >= g->h) {
          for (int64_t j = 0; j < wq; j++) q[j] = 0;
          continue;
        }
        const T *src = x + iy * g->w + off;
        for (int64_t j = 0; j < lo; j++) q[j] = 0;
        if (s == 1) {
          for (int64_t j = lo; j < hi; j++) q[j] = src[j];
        } else {
          for (int64_t j = lo; j < hi; j++) q[j] = src[j * 2];
        }
        for (int64_t j = hi; j < wq; j++) q[j] = 0;
      }
    }
  }
  const T w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6], w7 = w[7],
          w8 = w[8];
  T *restrict tt = t;
  const int64_t n = (bh - 1) * wq + ow;
  if (s == 1) { /* one plane: tap (ky, kx) at row ky, column + kx */
    const T *restrict r0 = buf, *restrict r1 = buf + wq, *restrict r2 = buf + 2 * wq;
    for (int64_t i = 0; i < n; i++) {
      T acc = 0;
      acc += w0 * r0[i]; acc += w1 * r0[i + 1]; acc += w2 * r0[i + 2];
      acc += w3 * r1[i]; acc += w4 * r1[i + 1]; acc += w5 * r1[i + 2];
      acc += w6 * r2[i]; acc += w7 * r2[i + 1]; acc += w8 * r2[i + 2];
      tt[i] = acc;
    }
  } else { /* four phase planes: even rows/columns (e), odd (o) */
    const int64_t pl = rq * wq;
    const T *restrict ee = buf, *restrict eo = buf + pl, *restrict oe = buf + 2 * pl,
                      *restrict oo = buf + 3 * pl, *restrict ee2 = ee + wq,
                      *restrict eo2 = eo + wq;
    for (int64_t i = 0; i < n; i++) {
      T acc = 0;
      acc += w0 * ee[i]; acc += w1 * eo[i]; acc += w2 * ee[i + 1];
      acc += w3 * oe[i]; acc += w4 * oo[i]; acc += w5 * oe[i + 1];
      acc += w6 * ee2[i]; acc += w7 * eo2[i]; acc += w8 * ee2[i + 1];
      tt[i] = acc;
    }
  }
  for (int64_t r = 0; r < bh; r++) {
    T *restrict dst = o + (oy0 + r) * ow;
    const T *restrict row = t + r * wq;
    for (int64_t j = 0; j < ow; j++) dst[j] = row[j];
  }
}

/* Whether plane (geometry g, weights w) goes through dw3_band; its width wq and band rows bh. */
static inline bool SFX(dw3_fits)(const ct__conv_geom *g, const T *w, int64_t *wq, int64_t *bh) {
  const int64_t s = g->sh;
  if (g->kh != 3 || g->kw != 3 || g->dh != 1 || g->dw != 1 || g->sw != s || (s != 1 && s != 2)) {
    return false;
  }
  if (g->pt > 0 || g->pb > 0 || g->pl > 0 || g->pr > 0) {
    for (int k = 0; k < 9; k++) {
      if (!isfinite(w[k])) return false;
    }
  }
  *wq = ((g->ow - 1) * s + 3 + s - 1) / s; /* ow + 2 at s 1, ow + 1 at s 2 */
  *bh = SFX(dw3_band_rows)(s, *wq);
  return *bh > 0;
}

/* A 3x3 undilated depthwise plane: rows whose three input rows all exist sum the nine taps in
 * registers over the columns whose three inputs all exist (the same (ky, kx) order as
 * dw_elem, so the same bits); the border elements go through dw_elem. */
static inline __attribute__((always_inline)) void SFX(dw_plane3)(const ct__conv_geom *g,
                                                                  const T *x, const T *w,
                                                                  T *restrict o) {
  const int64_t sw = g->sw;
  /* Columns [a, b) read ix = ox sw - pl .. + 2, all inside [0, W). */
  int64_t a = (g->pl + sw - 1) / sw, b = g->w - 3 + g->pl >= 0 ? (g->w - 3 + g->pl) / sw + 1 : 0;
  if (b > g->ow) b = g->ow;
  if (a > b) a = b;
  const T w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6], w7 = w[7],
          w8 = w[8];
  for (int64_t oy = 0; oy < g->oh; oy++) {
    T *restrict row = o + oy * g->ow;
    int64_t iy = oy * g->sh - g->pt;
    if (iy < 0 || iy + 2 >= g->h) {
      for (int64_t ox = 0; ox < g->ow; ox++) row[ox] = SFX(dw_elem)(g, x, w, oy, ox);
      continue;
    }
    const T *r0 = x + iy * g->w - g->pl, *r1 = r0 + g->w, *r2 = r1 + g->w;
    for (int64_t ox = 0; ox < a; ox++) row[ox] = SFX(dw_elem)(g, x, w, oy, ox);
    if (sw == 1) {
      for (int64_t ox = a; ox < b; ox++) {
        T acc = 0;
        acc += w0 * r0[ox]; acc += w1 * r0[ox + 1]; acc += w2 * r0[ox + 2];
        acc += w3 * r1[ox]; acc += w4 * r1[ox + 1]; acc += w5 * r1[ox + 2];
        acc += w6 * r2[ox]; acc += w7 * r2[ox + 1]; acc += w8 * r2[ox + 2];
        row[ox] = acc;
      }
    } else {
      for (int64_t ox = a; ox < b; ox++) {
        const int64_t ix = ox * sw;
        T acc = 0;
        acc += w0 * r0[ix]; acc += w1 * r0[ix + 1]; acc += w2 * r0[ix + 2];
        acc += w3 * r1[ix]; acc += w4 * r1[ix + 1]; acc += w5 * r1[ix + 2];
        acc += w6 * r2[ix]; acc += w7 * r2[ix + 1]; acc += w8 * r2[ix + 2];
        row[ox] = acc;
      }
    }
    for (int64_t ox = b; ox < g->ow; ox++) row[ox] = SFX(dw_elem)(g, x, w, oy, ox);
  }
}

/* One output plane of a depthwise conv. Row by row: each output row is summed over the taps
 * while it sits in L1 (tap by tap over the whole plane would stream a plane larger than L1 once
 * per tap). Each element adds its taps in (ky, kx) order from 0 either way, so the bits are the
 * same; kernels wider than 16 take the tap-major order. True when it applied conv2d_fusion's
 * epilogue e (plane m of image n) too (the float32 AVX-512 path, in registers), else the caller
 * runs it on the plane. */
static inline __attribute__((always_inline)) bool SFX(dw_plane)(const ct__conv_geom *g,
                                                                 const T *x, const T *w, T *o,
                                                                 const ct__conv_epi *e, int64_t n,
                                                                 int64_t m) {
#ifdef CT__T16_X86 /* float32 3x3 with AVX-512: straight from the image, the same bits */
  if (sizeof(T) == 4 && ct__dw3_plane_f32(g, (const float *)x, (const float *)w, (float *)o, e, n,
                                          m, 0, g->oh)) {
    return e != NULL;
  }
#else
  (void)e, (void)n, (void)m;
#endif
  int64_t wq, bh;
  if (SFX(dw3_fits)(g, w, &wq, &bh)) {
    T buf[SFX(DW3_BUF)] __attribute__((aligned(64)));
    for (int64_t oy = 0; oy < g->oh; oy += bh) {
      SFX(dw3_band)(g, x, w, o, oy, g->oh - oy < bh ? g->oh - oy : bh, wq, buf);
    }
    return false;
  }
  if (g->kh == 3 && g->kw == 3 && g->dh == 1 && g->dw == 1) {
    SFX(dw_plane3)(g, x, w, o);
    return false;
  }
  int64_t off[16], lo[16], hi[16];
  bool rows = g->kw <= 16;
  for (int64_t kx = 0; rows && kx < g->kw; kx++) {
    off[kx] = kx * g->dw - g->pl;
    conv_valid_range(off[kx], g->sw, g->w, g->ow, &lo[kx], &hi[kx]);
  }
  if (rows) {
    for (int64_t oy = 0; oy < g->oh; oy++) {
      T *row = o + oy * g->ow;
      for (int64_t ox = 0; ox < g->ow; ox++) row[ox] = 0;
      for (int64_t ky = 0; ky < g->kh; ky++) {
        int64_t iy = oy * g->sh - g->pt + ky * g->dh;
        if (iy < 0 || iy >= g->h) continue;
        for (int64_t kx = 0; kx < g->kw; kx++) {
          T wv = w[ky * g->kw + kx];
          const T *src = x + iy * g->w + off[kx];
          if (g->sw == 1) { /* contiguous: vectorises */
            for (int64_t ox = lo[kx]; ox < hi[kx]; ox++) row[ox] += wv * src[ox];
          } else {
            for (int64_t ox = lo[kx]; ox < hi[kx]; ox++) row[ox] += wv * src[ox * g->sw];
          }
        }
      }
    }
    return false;
  }
  for (int64_t i = 0; i < g->oh * g->ow; i++) o[i] = 0;
  for (int64_t ky = 0; ky < g->kh; ky++) {
    for (int64_t kx = 0; kx < g->kw; kx++) {
      T wv = w[ky * g->kw + kx];
      int64_t ofs = kx * g->dw - g->pl, x0, x1;
      conv_valid_range(ofs, g->sw, g->w, g->ow, &x0, &x1);
      for (int64_t oy = 0; oy < g->oh; oy++) {
        int64_t iy = oy * g->sh - g->pt + ky * g->dh;
        if (iy < 0 || iy >= g->h) continue;
        const T *src = x + iy * g->w + ofs;
        T *row = o + oy * g->ow;
        if (g->sw == 1) {
          for (int64_t ox = x0; ox < x1; ox++) row[ox] += wv * src[ox];
        } else {
          for (int64_t ox = x0; ox < x1; ox++) row[ox] += wv * src[ox * g->sw];
        }
      }
    }
  }
  return false;
}

static void SFX(dw_plane_grad)(const ct__conv_geom *g, const T *x, const T *w, const T *d,
                               T *dx, T *dw) {
  for (int64_t ky = 0; ky < g->kh; ky++) {
    for (int64_t kx = 0; kx < g->kw; kx++) {
      T wv = w[ky * g->kw + kx], acc = 0;
      int64_t off = kx * g->dw - g->pl, x0, x1;
      conv_valid_range(off, g->sw, g->w, g->ow, &x0, &x1);
      for (int64_t oy = 0; oy < g->oh; oy++) {
        int64_t iy = oy * g->sh - g->pt + ky * g->dh;
        if (iy < 0 || iy >= g->h) continue;
        const T *row = d + oy * g->ow;
        const T *src = x + iy * g->w + off;
        if (dx != NULL) {
          T *dst = dx + iy * g->w + off;
          for (int64_t ox = x0; ox < x1; ox++) dst[ox * g->sw] += wv * row[ox];
        }
        if (dw != NULL) {
          for (int64_t ox = x0; ox < x1; ox++) acc += row[ox] * src[ox * g->sw];
        }
      }
      if (dw != NULL) dw[ky * g->kw + kx] += acc;
    }
  }
}


/* ---- Small planes channels-last -------------------------------------------------------------
 * Outputs of at most 64 pixels (7 x 7, from 7 x 7 or 14 x 14 at stride 2: rows too short for a
 * vector, and planes so small that the per-plane work dominates) from inputs of at most 256, one
 * output channel per group, go DWC_CB channels (128 bytes) at a time: the block's planes and
 * weights transposed to [pixel][channel], each output pixel summed over its taps for all the
 * block's channels in vector lanes, the sums transposed back. Each element adds the products of
 * its taps that lie inside the image in (ky, kx) order from 0, as dw_elem does, so the bits are
 * dw_elem's. In float32 with AVX-512 ct__conv_dwc_block_f32 (conv_dw_avx512.c) does it with the
 * sums in registers and the epilogue in the lanes; this loop is the other types' and CPUs'. Its
 * sums accumulate in place in ot: with a local array of 16 doubles as the accumulator, GCC 12's
 * AVX-512 code for this loop gave wrong sums (found by the tests and a random comparison against
 * the ordered loop; an accumulator in memory gives the right ones). Inlined into dw_planes
 * (cloned per vector width), whose frame then holds at most 256 x 128 + 64 x 128 + 25 x 128
 * bytes (44 KB) for it and the band's 16 KB. */
enum {
  SFX(DWC_CB) = 128 / (int)sizeof(T), /* channels a block */
  SFX(DWC_PIXELS) = 256,              /* input pixels at most */
  SFX(DWC_OUT) = 64,                  /* output pixels at most */
  SFX(DWC_TAPS) = 25
};
#ifdef CT__T16_X86
_Static_assert((int)SFX(DWC_PIXELS) == (int)CT__DWC_PIXELS &&
                   (int)SFX(DWC_OUT) == (int)CT__DWC_OUT &&
                   (int)SFX(DWC_TAPS) == (int)CT__DWC_TAPS &&
                   (sizeof(T) != 4 || (int)SFX(DWC_CB) == (int)CT__DWC_CB_F32),
               "the AVX-512 block takes dwc_fits's blocks");
#endif

static bool SFX(dwc_fits)(const ct__conv_geom *g) {
  return g->m == g->groups && g->h * g->w <= SFX(DWC_PIXELS) && g->oh * g->ow <= SFX(DWC_OUT) &&
         g->kh * g->kw <= SFX(DWC_TAPS);
}

/* cb (<= DWC_CB) consecutive channels: their input planes from x (hw apart), weights from w
 * (kh kw apart), output planes from o (oh ow apart). True when it applied conv2d_fusion's
 * epilogue e (output channels m0 ..) too, else the caller runs it on the planes. */
static inline __attribute__((always_inline)) bool SFX(dwc_block)(const ct__conv_geom *g,
                                                                 const T *x, const T *w, T *o,
                                                                 int64_t cb,
                                                                 const ct__conv_epi *e,
                                                                 int64_t m0) {
#ifdef CT__T16_X86
  if (sizeof(T) == 4 && ct__conv_avx512()) {
    return ct__conv_dwc_block_f32(g, (const float *)x, (const float *)w, (float *)o, cb, e, m0);
  }
#endif
  (void)e, (void)m0;
  enum { CB = SFX(DWC_CB) };
  T xt[SFX(DWC_PIXELS) * CB] __attribute__((aligned(64)));
  T ot[SFX(DWC_OUT) * CB] __attribute__((aligned(64)));
  T wt[SFX(DWC_TAPS) * CB] __attribute__((aligned(64)));
  const int64_t hw = g->h * g->w, ohw = g->oh * g->ow, k = g->kh * g->kw;
  /* lanes past the block are zeros: summed, never stored */
  for (int64_t i = 0; i < k * CB; i++) wt[i] = 0;
  for (int64_t c = 0; c < cb; c++) {
    for (int64_t t = 0; t < k; t++) wt[t * CB + c] = w[c * k + t];
  }
  for (int64_t i = 0; i < hw * CB; i++) xt[i] = 0;
  for (int64_t c = 0; c < cb; c++) {
    for (int64_t p = 0; p < hw; p++) xt[p * CB + c] = x[c * hw + p];
  }
  for (int64_t oy = 0; oy < g->oh; oy++) {
    for (int64_t ox = 0; ox < g->ow; ox++) {
      T *restrict acc = ot + (oy * g->ow + ox) * CB; /* summed in place */
      for (int c = 0; c < CB; c++) acc[c] = 0;
      for (int64_t ky = 0; ky < g->kh; ky++) {
        int64_t iy = oy * g->sh - g->pt + ky * g->dh;
        if (iy < 0 || iy >= g->h) continue;
        for (int64_t kx = 0; kx < g->kw; kx++) {
          int64_t ix = ox * g->sw - g->pl + kx * g->dw;
          if (ix < 0 || ix >= g->w) continue;
          const T *restrict xp = xt + (iy * g->w + ix) * CB;
          const T *restrict wp = wt + (ky * g->kw + kx) * CB;
          for (int c = 0; c < CB; c++) acc[c] += wp[c] * xp[c];
        }
      }
    }
  }
  for (int64_t c = 0; c < cb; c++) {
    T *restrict d = o + c * ohw;
    for (int64_t p = 0; p < ohw; p++) d[p] = ot[p * CB + c];
  }
  return false;
}
