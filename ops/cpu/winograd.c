/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/winograd.c: conv2d's float32 forward as Winograd's F(2x2, 3x3) (winograd.h; its
 * Filter@GRAD is winograd_grad.c's).
 *
 * The tiles of an output plane (2x2 each, TW of them across, TH down; the last row or column of
 * tiles half outside when OH or OW is odd) go in blocks of whole tile rows, about BLOCK_TILES
 * tiles a block, so the transformed patches V [16][C][tiles] and the products M [16][M][tiles]
 * of a block stay in cache between the three steps:
 *   1. each channel's input rows of the block copied once with their padding, split by column
 *      parity, then for each tile row one pass over its tiles, 8 or 4 at a time in vectors:
 *      B^T d B, the 16 values of a tile from its patch's 4 rows;
 *   2. 16 GEMMs (ops/cpu/gemm.h), M[xi] = U[xi] V[xi];
 *   3. each tile's 4x4 of M reduced to its 2x2 of output (A^T M A), again over runs of tiles.
 * With B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1]
 * and A^T = [1 1 1 0; 0 1 -1 -1] (Lavin and Gray's F(2, 3), nested in both dimensions). */
#include "ops/cpu/winograd.h"

#include <stdatomic.h>
#include <string.h>

#include "common/common.h"
#include "ops/cpu/conv_fusion.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/winograd_impl.h"

/* Where the path stops paying, measured at one thread against im2col on the machine of
 * docs/performance.md (1 MiB of L2 a core), forward and backward alike. Wide layers lose: each
 * block packs all of U[xi] again (M C floats, for only a block of tiles' products), and a
 * block's V and M (16 (C + M) rows of bt floats) no longer stay in cache between the steps.
 * Forward, against im2col: 256 x 256 filters on 16 x 16 images (bt 80) 1.73 times as fast, on
 * 28 x 28 (bt 200) 0.92; 512 x 512 on 16 x 16 0.78; 128 x 128 on 56 x 56 (bt 272) 1.62. So the
 * path takes at most WIDE_PAIRS filter-channel pairs and (C + M) bt of at most WIDE_BLOCK (V and
 * M of a block within 5 MiB). */
enum { WIDE_PAIRS = 65536, WIDE_BLOCK = 81920 };

bool ct__wino_fits(const ct__conv_geom *g) {
  if (!ct__wino_shape(g)) return false;
  const int64_t bt = block_ld(block_rows(g) * tiles_w(g));
  return g->m * g->c <= WIDE_PAIRS && (g->c + g->m) * bt <= WIDE_BLOCK;
}

int64_t ct__wino_u_elems(const ct__conv_geom *g) { return 16 * g->m * g->c; }

int64_t ct__wino_scratch_elems(const ct__conv_geom *g) {
  int64_t tw = tiles_w(g), bt = block_ld(block_rows(g) * tw), wp = 2 * tw + 2;
  /* A multiple of 16 floats, so that each piece's scratch after the first starts on a cache
   * line as the first does (a row of V read 8 floats a step from 16 bytes into a line crosses a
   * line every other step: the second thread's dots took 1.45 times as long as the first's). */
  return (16 * (g->c + g->m) * bt + (2 * block_rows(g) + 2) * wp + 15) & ~(int64_t)15;
}

/* The 1-D transform of a filter's 3 taps into 4: G g. */
static void filter_1d(float a, float b, float c, float r[4]) {
  r[0] = a;
  r[1] = (a + b + c) * 0.5f;
  r[2] = (a - b + c) * 0.5f;
  r[3] = c;
}

/* U[xi] for xi < 16, f = m C + c (U[xi] is M x C, row-major), a run of FILTER_RUN filters at a
 * time: their 16 values go to a local block first and then to the 16 planes a row at a time, so
 * each plane is written along memory (writing the 16 values of one filter at once, 16 streams
 * mc floats apart, took a quarter of a 512-channel forward: 35 -> 27 ms). */
enum { FILTER_RUN = 256 };
void ct__wino_filter(const ct__conv_geom *g, const float *w, float *u) {
  const int64_t mc = g->m * g->c;
  float block[16][FILTER_RUN];
  for (int64_t f0 = 0; f0 < mc; f0 += FILTER_RUN) {
    const int64_t nf = mc - f0 < FILTER_RUN ? mc - f0 : FILTER_RUN;
    for (int64_t q = 0; q < nf; q++) {
      const float *k = w + (f0 + q) * 9;
      float cols[3][4];
      for (int j = 0; j < 3; j++) filter_1d(k[j], k[3 + j], k[6 + j], cols[j]);
      for (int i = 0; i < 4; i++) {
        float r[4];
        filter_1d(cols[0][i], cols[1][i], cols[2][i], r);
        for (int j = 0; j < 4; j++) block[i * 4 + j][q] = r[j];
      }
    }
    for (int xi = 0; xi < 16; xi++) {
      memcpy(u + xi * mc + f0, block[xi], (size_t)nf * sizeof(float));
    }
  }
}

/* Vectors of 8 and 4 floats (GNU vector extensions: each target clone lowers them to its own
 * registers), read and written unaligned through WV(V, p) (may_alias: over float data). */
typedef float wv8 __attribute__((vector_size(8 * sizeof(float)), aligned(4), may_alias));
typedef float wv4 __attribute__((vector_size(4 * sizeof(float)), aligned(4), may_alias));
#define WV(V, p) (*(V *)(void *)(p))

/* transform_in's tiles q .. q + lanes of V - 1 of a tile row: the patch columns of rows 0..3
 * (even[q], odd[q], even[q + 1], odd[q + 1] of e0/o0 ... e3/o3), B^T d row by row (d0 - d2,
 * d1 + d2, d2 - d1, d1 - d3), then (.) B into the 16 rows vo: the scalar loop's operations. */
#define WINO_IN_TILES(V, q)                                                                   \
  do {                                                                                        \
    const V a0 = WV(V, e0 + (q)), a1 = WV(V, o0 + (q)), a2 = WV(V, e0 + (q) + 1),             \
            a3 = WV(V, o0 + (q) + 1);                                                         \
    const V b0 = WV(V, e1 + (q)), b1 = WV(V, o1 + (q)), b2 = WV(V, e1 + (q) + 1),             \
            b3 = WV(V, o1 + (q) + 1);                                                         \
    const V g0 = WV(V, e2 + (q)), g1 = WV(V, o2 + (q)), g2 = WV(V, e2 + (q) + 1),             \
            g3 = WV(V, o2 + (q) + 1);                                                         \
    const V f0 = WV(V, e3 + (q)), f1 = WV(V, o3 + (q)), f2 = WV(V, e3 + (q) + 1),             \
            f3 = WV(V, o3 + (q) + 1);                                                         \
    const V t_[4][4] = {{a0 - g0, a1 - g1, a2 - g2, a3 - g3},                                 \
                        {b0 + g0, b1 + g1, b2 + g2, b3 + g3},                                 \
                        {g0 - b0, g1 - b1, g2 - b2, g3 - b3},                                 \
                        {b0 - f0, b1 - f1, b2 - f2, b3 - f3}};                                \
    for (int i_ = 0; i_ < 4; i_++) {                                                          \
      WV(V, vo[4 * i_] + (q)) = t_[i_][0] - t_[i_][2];                                        \
      WV(V, vo[4 * i_ + 1] + (q)) = t_[i_][1] + t_[i_][2];                                    \
      WV(V, vo[4 * i_ + 2] + (q)) = t_[i_][2] - t_[i_][1];                                    \
      WV(V, vo[4 * i_ + 3] + (q)) = t_[i_][1] - t_[i_][3];                                    \
    }                                                                                         \
  } while (0)

/* Input row y of plane xc as the patches read it, split by the parity of its padded columns:
 * padded column c is input column c - pl, zero outside the image (and for a row outside it);
 * even[q] = column 2 q, odd[q] = column 2 q + 1, q < half (tiles_w + 1). A tile's patch columns
 * 2 tx .. 2 tx + 3 are then even[tx], odd[tx], even[tx + 1], odd[tx + 1]: every read of step 1
 * goes along memory (at stride 2 its loads were a third of the transform). */
static inline void split_row(const ct__conv_geom *g, const float *xc, int64_t y, int64_t half,
                             float *even, float *odd) {
  for (int par = 0; par < 2; par++) {
    float *d = par ? odd : even;
    /* padded column 2 q + par is input column 2 q + par - pl, inside for q in [lo, hi) */
    int64_t lo = 0, hi = 0;
    if (y >= 0 && y < g->h) {
      lo = (g->pl - par + 1) / 2;
      if (g->pl - par < 0) lo = 0;
      hi = (g->pl + g->w - par + 1) / 2;
      if (hi > half) hi = half;
      if (lo > hi) lo = hi;
    }
    for (int64_t q = 0; q < lo; q++) d[q] = 0;
    const float *src = xc + y * g->w + (2 * lo + par - g->pl);
    for (int64_t q = lo; q < hi; q++) d[q] = src[2 * (q - lo)];
    for (int64_t q = hi; q < half; q++) d[q] = 0;
  }
}

/* Step 1: V of tile rows [ty0, ty1) (columns (ty - ty0) TW + tx of each V[xi], ld bt), channels
 * [c0, c1): for each channel and tile row, the 4 input rows padded and split by column parity
 * (split_row), then one pass over the row's tiles computing all 16 values of each. */
CT__WINO_CLONES
static void transform_in(const ct__conv_geom *g, const float *x, int64_t c0, int64_t c1,
                         int64_t ty0, int64_t ty1, int64_t bt, float *v, float *rows) {
  const int64_t tw = tiles_w(g), half = tw + 1, wp = 2 * half, hw = g->h * g->w;
  for (int64_t c = c0; c < c1; c++) {
    /* The block's input rows of this channel, once each (tile rows share 2 rows): row k's even
     * columns at rows + k wp, its odd ones half after. */
    for (int64_t k = 0; k < 2 * (ty1 - ty0) + 2; k++) {
      split_row(g, x + c * hw, 2 * ty0 - g->pt + k, half, rows + k * wp, rows + k * wp + half);
    }
    for (int64_t ty = ty0; ty < ty1; ty++) {
      const float *r[4];
      for (int i = 0; i < 4; i++) r[i] = rows + (2 * (ty - ty0) + i) * wp;
      float *vo[16];
      for (int xi = 0; xi < 16; xi++) vo[xi] = v + (xi * g->c + c) * bt + (ty - ty0) * tw;
      const float *e0 = r[0], *o0 = r[0] + half, *e1 = r[1], *o1 = r[1] + half;
      const float *e2 = r[2], *o2 = r[2] + half, *e3 = r[3], *o3 = r[3] + half;
      int64_t q = 0;
      /* 8 and then 4 tiles at a time (the compiler kept the 16 output rows' pointers on the
       * stack and went element by element); a last short run as one more vector that overlaps
       * the tiles before it (which it computes again, to the same bits: the same operations in
       * every lane), so that a row of 7 tiles (a 14 x 14 output) is two vectors of 4, not one
       * and 3 tiles one by one (those were a third of the forward of 256 x 256 filters on
       * 14 x 14); rows of fewer than 4 tiles go one by one below. */
      if (tw >= 8) {
        for (; q + 8 <= tw; q += 8) WINO_IN_TILES(wv8, q);
        if (q < tw) {
          WINO_IN_TILES(wv8, tw - 8);
          q = tw;
        }
      } else if (tw >= 4) {
        WINO_IN_TILES(wv4, 0);
        WINO_IN_TILES(wv4, tw - 4);
        q = tw;
      }
      for (; q < tw; q++) {
        /* patch columns 0..3 of each row: even[q], odd[q], even[q + 1], odd[q + 1] */
        const float d0[4] = {e0[q], o0[q], e0[q + 1], o0[q + 1]};
        const float d1[4] = {e1[q], o1[q], e1[q + 1], o1[q + 1]};
        const float d2[4] = {e2[q], o2[q], e2[q + 1], o2[q + 1]};
        const float d3[4] = {e3[q], o3[q], e3[q + 1], o3[q + 1]};
        float t[4][4]; /* B^T d: the rows combined, for patch columns 0..3 */
        for (int k = 0; k < 4; k++) {
          t[0][k] = d0[k] - d2[k];
          t[1][k] = d1[k] + d2[k];
          t[2][k] = d2[k] - d1[k];
          t[3][k] = d1[k] - d3[k];
        }
        for (int i = 0; i < 4; i++) { /* (.) B: the columns combined */
          vo[4 * i][q] = t[i][0] - t[i][2];
          vo[4 * i + 1][q] = t[i][1] + t[i][2];
          vo[4 * i + 2][q] = t[i][2] - t[i][1];
          vo[4 * i + 3][q] = t[i][1] - t[i][3];
        }
      }
    }
  }
}

/* Writes the 2x2 outputs y[0..3][q] of tiles t0 + q, q < n (block tile numbering: (ty - ty0) TW
 * + tx) into plane o: row 2 ty gets y0 y1, row 2 ty + 1 (when inside) y2 y3, the right column
 * of the last tile only when OW is even. */
static void put_tiles(const ct__conv_geom *g, float *o, int64_t ty0, int64_t t0, int64_t n,
                      float y[4][CHUNK]) {
  const int64_t tw = tiles_w(g);
  for (int64_t q = 0; q < n;) {
    const int64_t t = t0 + q, ty = ty0 + t / tw, tx = t % tw;
    const int64_t seg = tw - tx < n - q ? tw - tx : n - q; /* the run of tiles in row ty */
    const int64_t pairs = g->ow / 2 - tx; /* of those, the tiles with both columns inside */
    const int64_t full = pairs < seg ? pairs : seg;
    float *r0 = o + 2 * ty * g->ow + 2 * tx;
    const float *a = y[0] + q, *b = y[1] + q;
    CT__SIMD
    for (int64_t k = 0; k < full; k++) {
      r0[2 * k] = a[k];
      r0[2 * k + 1] = b[k];
    }
    if (full < seg) r0[2 * full] = a[full]; /* OW odd: the last tile's left column */
    if (2 * ty + 1 < g->oh) {
      float *r1 = r0 + g->ow;
      const float *c = y[2] + q, *d = y[3] + q;
      CT__SIMD
      for (int64_t k = 0; k < full; k++) {
        r1[2 * k] = c[k];
        r1[2 * k + 1] = d[k];
      }
      if (full < seg) r1[2 * full] = c[full];
    }
    q += seg;
  }
}

/* Step 3: the output rows of tile rows [ty0, ty1) from M (ld bt) in planes [m0, m1), over runs
 * of CHUNK tiles of the block whatever rows they span. */
CT__WINO_CLONES
static void transform_out(const ct__conv_geom *g, const float *mx, int64_t m0, int64_t m1,
                          int64_t ty0, int64_t ty1, int64_t bt, float *o, const ct__conv_epi *e,
                          int64_t n_img) {
  const int64_t nt = (ty1 - ty0) * tiles_w(g), ohw = g->oh * g->ow;
  const int64_t oy0 = 2 * ty0, oy1 = 2 * ty1 < g->oh ? 2 * ty1 : g->oh;
  for (int64_t m = m0; m < m1; m++) {
    const float *p[16];
    for (int xi = 0; xi < 16; xi++) p[xi] = mx + (xi * g->m + m) * bt;
    for (int64_t t0 = 0; t0 < nt; t0 += CHUNK) {
      const int64_t n = nt - t0 < CHUNK ? nt - t0 : CHUNK;
      float s0[4][CHUNK], s1[4][CHUNK], y[4][CHUNK];
      for (int j = 0; j < 4; j++) { /* A^T M: the rows' sums, column j */
        const float *a = p[j] + t0, *b = p[4 + j] + t0, *c = p[8 + j] + t0, *d = p[12 + j] + t0;
        CT__SIMD
        for (int64_t q = 0; q < n; q++) {
          s0[j][q] = a[q] + b[q] + c[q];
          s1[j][q] = b[q] - c[q] - d[q];
        }
      }
      CT__SIMD
      for (int64_t q = 0; q < n; q++) { /* (.) A */
        y[0][q] = s0[0][q] + s0[1][q] + s0[2][q];
        y[1][q] = s0[1][q] - s0[2][q] - s0[3][q];
        y[2][q] = s1[0][q] + s1[1][q] + s1[2][q];
        y[3][q] = s1[1][q] - s1[2][q] - s1[3][q];
      }
      put_tiles(g, o + m * ohw, ty0, t0, n, y);
    }
    if (e != NULL) ct__conv_epi_rows_f32(e, o + m * ohw, n_img, m, oy0 * g->ow, oy1 * g->ow);
  }
}

int64_t ct__wino_blocks(const ct__conv_geom *g) {
  int64_t br = block_rows(g);
  return (tiles_h(g) + br - 1) / br;
}

static ct__wino_blk block_at(const ct__conv_geom *g, int64_t b, float *scratch) {
  const int64_t tw = tiles_w(g), th = tiles_h(g), br = block_rows(g);
  ct__wino_blk k = {.ty0 = b * br, .bt = block_ld(br * tw), .v = scratch};
  k.ty1 = k.ty0 + br < th ? k.ty0 + br : th;
  k.nt = (k.ty1 - k.ty0) * tw;
  k.mx = k.v + 16 * g->c * k.bt;
  k.rows = k.mx + 16 * g->m * k.bt;
  return k;
}

ct__wino_blk ct__wino_block_in(const ct__conv_geom *g, const float *x, int64_t b,
                               float *scratch) {
  ct__wino_blk k = block_at(g, b, scratch);
  transform_in(g, x, 0, g->c, k.ty0, k.ty1, k.bt, k.v, k.rows);
  return k;
}

/* Product xi of a block of nt tiles, but for its B and C: U[xi] [M, C] (or its packing) times
 * V[xi] [C, nt]. V[xi] was just written: its slivers are read where they are (b_in_place), not
 * packed again (10-13% of the forward and of Input@GRAD). */
static ct__gemm u_gemm(const ct__conv_geom *g, const ct__wino_u *u, int64_t xi, int64_t nt) {
  return (ct__gemm){.m = g->m, .n = nt, .k = g->c, .alpha = 1,
                    .a = u->u != NULL ? u->u + xi * g->m * g->c : NULL, .lda = g->c,
                    .b_in_place = true,
                    .a_packed = u->packed != NULL ? u->packed + xi * u->packed_elems : NULL,
                    .a_packed_w = u->width};
}

/* The tiles of block b. */
static int64_t block_tiles(const ct__conv_geom *g, int64_t b) {
  const int64_t br = block_rows(g), th = tiles_h(g);
  return ((b + 1) * br < th ? br : th - b * br) * tiles_w(g);
}

int64_t ct__wino_packed_elems(const ct__conv_geom *g, int *width, bool *every_block) {
  const ct__wino_u none = {0};
  ct__gemm first = u_gemm(g, &none, 0, block_tiles(g, 0));
  ct__gemm last = u_gemm(g, &none, 0, block_tiles(g, ct__wino_blocks(g) - 1));
  int w_last;
  int64_t elems = ct__gemm_packed_elems(&first, 0, sizeof(float), width);
  ct__gemm_packed_elems(&last, 0, sizeof(float), &w_last);
  *every_block = w_last == *width;
  return elems;
}

void ct__wino_pack(const ct__conv_geom *g, const float *u, float *dst) {
  int w;
  bool every;
  const int64_t elems = ct__wino_packed_elems(g, &w, &every);
  const ct__wino_u from = {.u = u};
  for (int64_t xi = 0; xi < 16; xi++) {
    ct__gemm p = u_gemm(g, &from, xi, block_tiles(g, 0));
    ct__gemm_pack_f32(&p, 0, dst + xi * elems);
  }
}

ct_status ct__wino_block(const ct__conv_geom *g, const float *x, const ct__wino_u *u, int64_t b,
                         float *o, float *scratch, const ct__conv_epi *e, int64_t n) {
  const ct__wino_blk k = ct__wino_block_in(g, x, b, scratch);
  const int64_t nt = k.nt, bt = k.bt;
  float *v = k.v, *mx = k.mx;
  for (int64_t xi = 0; xi < 16; xi++) {
    ct__gemm p = u_gemm(g, u, xi, nt);
    p.b = v + xi * g->c * bt;
    p.ldb = bt;
    p.c = mx + xi * g->m * bt;
    p.ldc = bt;
    ct__wino_fetch_next(u, xi, 16, 16, &p);
    ct_status st = ct__gemm_f32(&p);
    if (st != CT_OK) return st;
  }
  transform_out(g, mx, 0, g->m, k.ty0, k.ty1, bt, o, e, n);
  return CT_OK;
}

/* ---- One block over several threads ---------------------------------------------------------
 * Each step splits where its work is independent: step 1 by channels (each piece its own padded
 * rows, in its own scratch), the 16 products by xi, step 3 by output planes. Every value is
 * computed as ct__wino_block computes it. */
typedef struct wide_job {
  const ct__conv_geom *g;
  const float *x;
  const ct__wino_u *u;
  float *o, *scratch;
  const ct__conv_epi *e;
  ct__wino_blk k;
  int64_t scratch_elems, parts, n;
  atomic_bool failed;
} wide_job;

static void wide_in(void *arg, int64_t b, int64_t e) {
  wide_job *j = arg;
  const int64_t c = j->g->c, rows = j->k.rows - j->k.v; /* the rows' place in a scratch */
  for (int64_t p = b; p < e; p++) {
    transform_in(j->g, j->x, c * p / j->parts, c * (p + 1) / j->parts, j->k.ty0, j->k.ty1,
                 j->k.bt, j->k.v, j->scratch + p * j->scratch_elems + rows);
  }
}

static void wide_products(void *arg, int64_t b, int64_t e) {
  wide_job *j = arg;
  const ct__conv_geom *g = j->g;
  for (int64_t p = b; p < e; p++) {
    const int64_t end = 16 * (p + 1) / j->parts;
    for (int64_t xi = 16 * p / j->parts; xi < end; xi++) {
      ct__gemm q = u_gemm(g, j->u, xi, j->k.nt);
      q.b = j->k.v + xi * g->c * j->k.bt;
      q.ldb = j->k.bt;
      q.c = j->k.mx + xi * g->m * j->k.bt;
      q.ldc = j->k.bt;
      ct__wino_fetch_next(j->u, xi, end, 16, &q);
      if (ct__gemm_f32(&q) != CT_OK) atomic_store(&j->failed, true);
    }
  }
}

static void wide_out(void *arg, int64_t b, int64_t e) {
  wide_job *j = arg;
  const int64_t m = j->g->m;
  for (int64_t p = b; p < e; p++) {
    transform_out(j->g, j->k.mx, m * p / j->parts, m * (p + 1) / j->parts, j->k.ty0, j->k.ty1,
                  j->k.bt, j->o, j->e, j->n);
  }
}

ct_status ct__wino_block_wide(const ct__conv_geom *g, const float *x, const ct__wino_u *u,
                              int64_t b, float *o, float *scratch, int64_t parts,
                              const ct__conv_epi *e, int64_t n) {
  wide_job j = {.g = g, .x = x, .u = u, .o = o, .scratch = scratch, .e = e,
                .k = block_at(g, b, scratch), .scratch_elems = ct__wino_scratch_elems(g),
                .parts = parts, .n = n};
  atomic_init(&j.failed, false);
  ct__parallel_for(parts, 1, wide_in, &j);
  ct__parallel_for(parts, 1, wide_products, &j);
  if (atomic_load(&j.failed)) {
    return ct__error(CT_ERR_OUT_OF_MEMORY, "out of host memory for a GEMM's packing buffers");
  }
  ct__parallel_for(parts, 1, wide_out, &j);
  return CT_OK;
}
