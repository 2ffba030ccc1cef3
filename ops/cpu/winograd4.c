/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/winograd4.c: conv2d's float32 forward as Winograd's F(4x4, 3x3) (winograd.h), for
 * larger images than F(2x2, 3x3) (winograd.c) pays best on.
 *
 * Each 4x4 tile of output comes from a 6x6 patch of the (padded) input: 36 GEMMs of C
 * multiply-adds per 16 outputs, where F(2x2, 3x3) spends 16 per 4 and im2col 9 per 1 (4 and
 * 2.25 times as many), and 36 transformed values per 16 outputs to write and read back where
 * F(2x2, 3x3) has 16 per 4. With (Lavin and Gray's points 0, +-1, +-2)
 *   B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]
 *   G   = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]
 *   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
 * a tile is A^T [sum over channels of (G g G^T) .* (B^T d B)] A.
 *
 * The tiles of a block (whole tile rows) are numbered along the rows with one column more than
 * the row has tiles (pitch TW + 1): the extra tile of each row is computed and dropped, so that
 * every step runs over the block's tiles in whole vectors whatever the row's length (a 28 x 28
 * image has rows of 7 tiles). Its input rows are first copied with their padding and split by
 * column modulo 4 (phase j holds padded columns 4 q + j), so that patch column j of tile q is
 * phase j mod 4 at q + j / 4: every load of the input step goes along memory. */
#include <stdatomic.h>
#include <string.h>

#include "common/common.h"
#include "ops/cpu/conv_fusion.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/winograd.h"
#include "ops/cpu/winograd_impl.h"

/* Measured at one thread on the 2-core Sapphire Rapids of docs/performance.md (2 MiB of L2 a
 * core), against F(2x2, 3x3) or im2col, whichever conv2d took before:
 * - A block's V and M (36 (C + M) rows of bt floats) within 36 W4_BUDGET floats (1.2 MB, so
 *   that they stay in L2 between the three steps), but every block reads all of U (36 M C
 *   floats) again: for M C above 4 W4_BUDGET the budget grows to M C / 4, at most twice
 *   (256 x 256 filters on 28 x 28: 4.7 ms with 8192, 2.6 with 16384, 2.7 in one block; im2col
 *   7.3). 64 x 64 on 56 x 56: 0.87 (4096), 0.89 (8192), 1.00 ms (16384); F(2x2, 3x3) 1.50.
 * - U is 36 / 16 of F(2x2, 3x3)'s, and in a model (where other layers' weights evict it between
 *   runs) it comes from memory at every run: resnet18's 256 x 256 on 14 x 14 took 2.1-2.2 ms
 *   there against F(2x2, 3x3)'s 2.0 (1.34 against 1.58 alone). So above W4_OWN_PAIRS
 *   filter-channel pairs this form takes only what F(2x2, 3x3) does not (256 x 256 on 28 x 28:
 *   im2col's 7.3 ms against 2.6), and nothing above W4_PAIRS (512 x 512 on 7 x 7).
 * - Outputs of W4_MIN_SIDE or more a side: a block computes whole units of 32 columns, and a
 *   tile row carries one dropped tile, so small images waste most of a unit: 256 x 256 on
 *   14 x 14 1.34 ms against 1.58 (F(2x2, 3x3)), 64 x 64 on 16 x 16 0.117 against 0.138, but
 *   128 x 128 on 12 x 12 0.47 against 0.38 and 256 x 256 on 7 x 7 1.26 against 0.49. */
enum { W4_BUDGET = 8192, W4_MAX_BT = 512, W4_LANES = 16, W4_UNIT = 32 };
enum { W4_OWN_PAIRS = 16384, W4_PAIRS = 65536, W4_MIN_SIDE = 14 };

static int64_t w4_tw(const ct__conv_geom *g) { return (g->ow + 3) / 4; }
static int64_t w4_th(const ct__conv_geom *g) { return (g->oh + 3) / 4; }
static int64_t w4_pitch(const ct__conv_geom *g) { return w4_tw(g) + 1; }

/* The columns the steps compute for nt tiles: whole units of two vectors (the GEMM's tiles are
 * 32 columns wide on AVX-512; an edge tile is stored element by element). */
static int64_t w4_cols(int64_t nt) { return (nt + W4_UNIT - 1) & ~(int64_t)(W4_UNIT - 1); }

/* Columns between rows of V and M: that, and not a multiple of 256 bytes (rows that far apart
 * share L1 sets; winograd_impl.h's block_ld). */
static int64_t w4_ld(int64_t nt) {
  const int64_t l = w4_cols(nt);
  return l % 64 == 0 ? l + W4_LANES : l;
}

/* Tile rows per block: the budget's (above), at least one, the blocks as even as whole rows
 * allow. */
static int64_t w4_rows(const ct__conv_geom *g) {
  const int64_t p = w4_pitch(g), th = w4_th(g);
  int64_t bud = g->m * g->c / 4 > W4_BUDGET ? g->m * g->c / 4 : W4_BUDGET;
  if (bud > 2 * W4_BUDGET) bud = 2 * W4_BUDGET;
  int64_t r = bud / (g->c + g->m) / p;
  if (r * p > W4_MAX_BT) r = W4_MAX_BT / p;
  if (r < 1) r = 1;
  if (r >= th) return th;
  const int64_t blocks = (th + r - 1) / r;
  return (th + blocks - 1) / blocks;
}

bool ct__wino4_fits(const ct__conv_geom *g) {
  if (!ct__wino_shape(g)) return false;
  const int64_t pairs = g->m * g->c;
  return g->oh >= W4_MIN_SIDE && g->ow >= W4_MIN_SIDE &&
         (pairs <= W4_OWN_PAIRS || (pairs <= W4_PAIRS && !ct__wino_fits(g)));
}

int64_t ct__wino4_u_elems(const ct__conv_geom *g) { return 36 * g->m * g->c; }

/* The input rows' phases: 24 arrays (6 patch rows x 4 phases) of a block's columns and a vector
 * more (the dropped tile reads one past its row). */
static int64_t w4_phase_elems(const ct__conv_geom *g) {
  return w4_ld(w4_rows(g) * w4_pitch(g)) + W4_LANES;
}

/* Floats between V[xi] and V[xi + 1] (rows of bt floats each): a line more than a multiple of
 * 4 KiB, so that the 36 streams each step reads or writes fall in different L1 sets (C bt of
 * 64 x 80 floats is 5 x 4 KiB: all 36 in one set, and step 1 ran at a third of its speed). */
static int64_t w4_plane(int64_t rows, int64_t bt) { return ((rows * bt + 1023) & ~1023) + 16; }

int64_t ct__wino4_scratch_elems(const ct__conv_geom *g) {
  const int64_t bt = w4_ld(w4_rows(g) * w4_pitch(g));
  return (36 * (w4_plane(g->c, bt) + w4_plane(g->m, bt)) + 24 * w4_phase_elems(g) + 16 * bt +
          15) & ~(int64_t)15;
}

/* The 1-D transform of a filter's 3 taps into 6 (G g), in double. */
static void w4_filter_1d(double a, double b, double c, double r[6]) {
  r[0] = a / 4;
  r[1] = -(a + b + c) / 6;
  r[2] = -(a - b + c) / 6;
  r[3] = (a + 2 * b + 4 * c) / 24;
  r[4] = (a - 2 * b + 4 * c) / 24;
  r[5] = c;
}

/* U[xi] [M, C] for xi < 36, each value G g G^T computed in double and rounded to float once; a
 * run of W4_FILTER_RUN filters at a time through a local block, so that each U[xi] is written
 * along memory (winograd.c's filter transform says why). */
enum { W4_FILTER_RUN = 128 };
void ct__wino4_filter(const ct__conv_geom *g, const float *w, float *u) {
  const int64_t mc = g->m * g->c;
  float block[36][W4_FILTER_RUN];
  for (int64_t f0 = 0; f0 < mc; f0 += W4_FILTER_RUN) {
    const int64_t nf = mc - f0 < W4_FILTER_RUN ? mc - f0 : W4_FILTER_RUN;
    for (int64_t q = 0; q < nf; q++) {
      const float *k = w + (f0 + q) * 9;
      double cols[3][6];
      for (int j = 0; j < 3; j++) w4_filter_1d(k[j], k[3 + j], k[6 + j], cols[j]);
      for (int i = 0; i < 6; i++) {
        double r[6];
        w4_filter_1d(cols[0][i], cols[1][i], cols[2][i], r);
        for (int j = 0; j < 6; j++) block[i * 6 + j][q] = (float)r[j];
      }
    }
    for (int xi = 0; xi < 36; xi++) {
      memcpy(u + xi * mc + f0, block[xi], (size_t)nf * sizeof(float));
    }
  }
}

/* Vectors of 16 floats (each target clone lowers them to its registers), unaligned. */
typedef float w4v __attribute__((vector_size(W4_LANES * sizeof(float)), aligned(4), may_alias));
#define W4V(p) (*(w4v *)(void *)(p))

/* B^T d for one column of 6 values (the same for rows). */
#define W4_IN_1D(d, t)                                  \
  do {                                                  \
    const w4v s13_ = (d)[3] - (d)[1], s24_ = (d)[4] - (d)[2]; \
    (t)[0] = 4 * (d)[0] - 5 * (d)[2] + (d)[4];          \
    (t)[1] = ((d)[3] + (d)[4]) - 4 * ((d)[1] + (d)[2]); \
    (t)[2] = ((d)[4] - (d)[3]) + 4 * ((d)[1] - (d)[2]); \
    (t)[3] = s24_ + 2 * s13_;                           \
    (t)[4] = s24_ - 2 * s13_;                           \
    (t)[5] = 4 * (d)[1] - 5 * (d)[3] + (d)[5];          \
  } while (0)

/* Input row y of plane xc split by the phase of its padded columns: ph[j][q] = padded column
 * 4 q + j (input column 4 q + j - pl), zero outside the image, q < n. The groups of 4 wholly
 * inside the row go in one pass (vectorised as loads and permutes; through a padded copy of the
 * row they stalled on its stores' forwarding), the others element by element. */
static inline __attribute__((always_inline)) void w4_split_row(const ct__conv_geom *g,
                                                                const float *xc, int64_t y,
                                                                int64_t n, float *const ph[4]) {
  float *d0 = ph[0], *d1 = ph[1], *d2 = ph[2], *d3 = ph[3];
  if (y < 0 || y >= g->h) {
    for (int j = 0; j < 4; j++) memset(ph[j], 0, (size_t)n * sizeof(float));
    return;
  }
  const float *row = xc + y * g->w - g->pl; /* row[c]: padded column c, for pl <= c < pl + w */
  /* groups q with pl <= 4 q and 4 q + 3 < pl + w */
  int64_t q0 = (g->pl + 3) / 4, q1 = g->pl + g->w >= 4 ? (g->pl + g->w - 4) / 4 + 1 : 0;
  if (q1 > n) q1 = n;
  if (q0 > q1) q0 = q1;
  for (int64_t q = 0; q < n; q++) {
    if (q == q0) q = q1; /* the inside groups, below */
    if (q >= n) break;
    for (int j = 0; j < 4; j++) {
      const int64_t c = 4 * q + j;
      ph[j][q] = c >= g->pl && c < g->pl + g->w ? row[c] : 0.0f;
    }
  }
  for (int64_t q = q0; q < q1; q++) {
    d0[q] = row[4 * q];
    d1[q] = row[4 * q + 1];
    d2[q] = row[4 * q + 2];
    d3[q] = row[4 * q + 3];
  }
}

/* Step 1: V of the block's tile rows [ty0, ty1) (column r pitch + tx, ld bt, V[xi] vs floats
 * apart), channels [c0, c1), with the phase rows ph (24 arrays of pe floats). */
CT__WINO_CLONES
static void w4_in(const ct__conv_geom *g, const float *x, int64_t c0, int64_t c1, int64_t ty0,
                  int64_t ty1, int64_t bt, int64_t vs, float *v, float *ph, int64_t pe) {
  const int64_t p = w4_pitch(g), nt = (ty1 - ty0) * p, hw = g->h * g->w, vend = w4_cols(nt);
  for (int64_t c = c0; c < c1; c++) {
    for (int i = 0; i < 6; i++) {
      for (int64_t r = 0; r < ty1 - ty0; r++) {
        float *const dst[4] = {ph + (i * 4) * pe + r * p, ph + (i * 4 + 1) * pe + r * p,
                               ph + (i * 4 + 2) * pe + r * p, ph + (i * 4 + 3) * pe + r * p};
        w4_split_row(g, x + c * hw, 4 * (ty0 + r) + i - g->pt, p, dst);
      }
      for (int j = 0; j < 4; j++) {
        memset(ph + (i * 4 + j) * pe + nt, 0, (size_t)(pe - nt) * sizeof(float));
      }
    }
    float *vc = v + c * bt;
    for (int64_t u = 0; u < vend; u += W4_LANES) {
      w4v t[6][6]; /* t[i][j]: B^T d, row i, patch column j */
      for (int j = 0; j < 6; j++) {
        w4v d[6];
        for (int i = 0; i < 6; i++) d[i] = W4V(ph + (i * 4 + (j & 3)) * pe + u + (j >> 2));
        w4v col[6];
        W4_IN_1D(d, col);
        for (int i = 0; i < 6; i++) t[i][j] = col[i];
      }
      for (int i = 0; i < 6; i++) {
        w4v o[6];
        W4_IN_1D(t[i], o);
        for (int j = 0; j < 6; j++) W4V(vc + (i * 6 + j) * vs + u) = o[j];
      }
    }
  }
}

/* A^T m for one column of 6 values: 4 values. */
#define W4_OUT_1D(m, s)                                            \
  do {                                                             \
    const w4v a12_ = (m)[1] + (m)[2], d12_ = (m)[1] - (m)[2];      \
    const w4v a34_ = (m)[3] + (m)[4], d34_ = (m)[3] - (m)[4];      \
    (s)[0] = (m)[0] + a12_ + a34_;                                 \
    (s)[1] = d12_ + 2 * d34_;                                      \
    (s)[2] = a12_ + 4 * a34_;                                      \
    (s)[3] = d12_ + 8 * d34_ + (m)[5];                             \
  } while (0)

/* The 16 outputs y[a 4 + b][u] of the block's tiles (ld bt) of plane m from M (ld bt). */
CT__WINO_CLONES
static void w4_out_plane(const float *mx, int64_t ms, int64_t vend, float *y, int64_t bt) {
  for (int64_t u = 0; u < vend; u += W4_LANES) {
    w4v s[4][6]; /* A^T M: row a, column j */
    for (int j = 0; j < 6; j++) {
      w4v m[6], r[4];
      for (int i = 0; i < 6; i++) m[i] = W4V(mx + (i * 6 + j) * ms + u);
      W4_OUT_1D(m, r);
      for (int a = 0; a < 4; a++) s[a][j] = r[a];
    }
    for (int a = 0; a < 4; a++) {
      w4v r[4];
      W4_OUT_1D(s[a], r);
      for (int b = 0; b < 4; b++) W4V(y + (a * 4 + b) * bt + u) = r[b];
    }
  }
}

/* Step 3: output planes [m0, m1) of image n's block (tile rows [ty0, ty1)) from M (M[xi] ms
 * floats apart) into o [M, OH, OW] through y (16 rows of bt floats), each plane's rows then
 * through the epilogue e (NULL: none) while in cache. */
CT__WINO_CLONES
static void w4_out(const ct__conv_geom *g, const float *mx, int64_t m0, int64_t m1, int64_t ty0,
                   int64_t ty1, int64_t bt, int64_t ms, float *y, float *o, const ct__conv_epi *e,
                   int64_t n) {
  const int64_t p = w4_pitch(g), tw = w4_tw(g), nt = (ty1 - ty0) * p, ohw = g->oh * g->ow;
  const int64_t vend = w4_cols(nt);
  const int64_t oy0 = 4 * ty0, oy1 = 4 * ty1 < g->oh ? 4 * ty1 : g->oh;
  const int64_t full = g->ow / 4; /* tiles with all 4 columns inside */
  for (int64_t m = m0; m < m1; m++) {
    w4_out_plane(mx + m * bt, ms, vend, y, bt);
    float *op = o + m * ohw;
    for (int64_t oy = oy0; oy < oy1; oy++) {
      const int64_t r = (oy - oy0) / 4, a = (oy - oy0) % 4;
      float *row = op + oy * g->ow;
      const float *y0 = y + (a * 4) * bt + r * p, *y1 = y0 + bt, *y2 = y1 + bt, *y3 = y2 + bt;
      CT__SIMD
      for (int64_t tx = 0; tx < full; tx++) {
        row[4 * tx] = y0[tx];
        row[4 * tx + 1] = y1[tx];
        row[4 * tx + 2] = y2[tx];
        row[4 * tx + 3] = y3[tx];
      }
      for (int64_t ox = 4 * full; ox < g->ow; ox++) { /* the last tile, partly outside */
        row[ox] = y[(a * 4 + ox % 4) * bt + r * p + tw - 1];
      }
    }
    if (e != NULL) ct__conv_epi_rows_f32(e, op, n, m, oy0 * g->ow, oy1 * g->ow);
  }
}

int64_t ct__wino4_blocks(const ct__conv_geom *g) {
  const int64_t r = w4_rows(g);
  return (w4_th(g) + r - 1) / r;
}

/* Block b in a worker's scratch: its tile rows, columns, and where V, M, the phases and y go. */
typedef struct w4_blk {
  int64_t ty0, ty1, nt, bt, pe, vs, ms;
  float *v, *mx, *ph, *y;
} w4_blk;

static w4_blk w4_block_at(const ct__conv_geom *g, int64_t b, float *scratch) {
  const int64_t r = w4_rows(g), th = w4_th(g);
  w4_blk k = {.ty0 = b * r, .bt = w4_ld(r * w4_pitch(g)), .pe = w4_phase_elems(g), .v = scratch};
  k.ty1 = k.ty0 + r < th ? k.ty0 + r : th;
  k.nt = (k.ty1 - k.ty0) * w4_pitch(g);
  k.vs = w4_plane(g->c, k.bt);
  k.ms = w4_plane(g->m, k.bt);
  k.mx = k.v + 36 * k.vs;
  k.ph = k.mx + 36 * k.ms;
  k.y = k.ph + 24 * k.pe;
  return k;
}

/* Product xi of a block of nt tiles but for its B and C: U[xi] [M, C] (or its packing) times
 * V[xi] [C, nt], read where it is. */
static ct__gemm w4_gemm(const ct__conv_geom *g, const ct__wino_u *u, int64_t xi, int64_t nt) {
  return (ct__gemm){.m = g->m, .n = nt, .k = g->c, .alpha = 1,
                    .a = u->u != NULL ? u->u + xi * g->m * g->c : NULL, .lda = g->c,
                    .b_in_place = true,
                    .a_packed = u->packed != NULL ? u->packed + xi * u->packed_elems : NULL,
                    .a_packed_w = u->width};
}

static int64_t w4_block_tiles(const ct__conv_geom *g, int64_t b) {
  const int64_t r = w4_rows(g), th = w4_th(g);
  return w4_cols(((b + 1) * r < th ? r : th - b * r) * w4_pitch(g));
}

int64_t ct__wino4_packed_elems(const ct__conv_geom *g, int *width, bool *every_block) {
  const ct__wino_u none = {0};
  ct__gemm first = w4_gemm(g, &none, 0, w4_block_tiles(g, 0));
  ct__gemm last = w4_gemm(g, &none, 0, w4_block_tiles(g, ct__wino4_blocks(g) - 1));
  int w_last;
  const int64_t elems = ct__gemm_packed_elems(&first, 0, sizeof(float), width);
  ct__gemm_packed_elems(&last, 0, sizeof(float), &w_last);
  *every_block = w_last == *width;
  return elems;
}

void ct__wino4_pack(const ct__conv_geom *g, const float *u, float *dst) {
  int w;
  bool every;
  const int64_t elems = ct__wino4_packed_elems(g, &w, &every);
  const ct__wino_u from = {.u = u};
  for (int64_t xi = 0; xi < 36; xi++) {
    ct__gemm p = w4_gemm(g, &from, xi, w4_block_tiles(g, 0));
    ct__gemm_pack_f32(&p, 0, dst + xi * elems);
  }
}

/* Products [xi0, xi1) of block k: M[xi] = U[xi] V[xi], over all the columns the steps compute. */
static ct_status w4_products(const ct__conv_geom *g, const ct__wino_u *u, const w4_blk *k,
                             int64_t xi0, int64_t xi1) {
  for (int64_t xi = xi0; xi < xi1; xi++) {
    ct__gemm q = w4_gemm(g, u, xi, w4_cols(k->nt));
    q.b = k->v + xi * k->vs;
    q.ldb = k->bt;
    q.c = k->mx + xi * k->ms;
    q.ldc = k->bt;
    ct__wino_fetch_next(u, xi, xi1, 36, &q);
    ct_status st = ct__gemm_f32(&q);
    if (st != CT_OK) return st;
  }
  return CT_OK;
}

ct_status ct__wino4_block(const ct__conv_geom *g, const float *x, const ct__wino_u *u, int64_t b,
                          float *o, float *scratch, const ct__conv_epi *e, int64_t n) {
  const w4_blk k = w4_block_at(g, b, scratch);
  w4_in(g, x, 0, g->c, k.ty0, k.ty1, k.bt, k.vs, k.v, k.ph, k.pe);
  ct_status st = w4_products(g, u, &k, 0, 36);
  if (st != CT_OK) return st;
  w4_out(g, k.mx, 0, g->m, k.ty0, k.ty1, k.bt, k.ms, k.y, o, e, n);
  return CT_OK;
}

/* ---- One block over several threads: step 1 by channels (each piece its phases in its own
 * scratch), the products by xi, step 3 by output planes (each piece its own y). */
typedef struct w4_wide {
  const ct__conv_geom *g;
  const float *x;
  const ct__wino_u *u;
  float *o, *scratch;
  const ct__conv_epi *e;
  w4_blk k;
  int64_t scratch_elems, parts, n;
  atomic_bool failed;
} w4_wide;

static void w4_wide_in(void *arg, int64_t b, int64_t e) {
  w4_wide *j = arg;
  for (int64_t p = b; p < e; p++) {
    const w4_blk s = w4_block_at(j->g, 0, j->scratch + p * j->scratch_elems);
    w4_in(j->g, j->x, j->g->c * p / j->parts, j->g->c * (p + 1) / j->parts, j->k.ty0, j->k.ty1,
          j->k.bt, j->k.vs, j->k.v, s.ph, s.pe);
  }
}

static void w4_wide_products(void *arg, int64_t b, int64_t e) {
  w4_wide *j = arg;
  for (int64_t p = b; p < e; p++) {
    if (w4_products(j->g, j->u, &j->k, 36 * p / j->parts, 36 * (p + 1) / j->parts) != CT_OK) {
      atomic_store(&j->failed, true);
    }
  }
}

static void w4_wide_out(void *arg, int64_t b, int64_t e) {
  w4_wide *j = arg;
  const int64_t m = j->g->m;
  for (int64_t p = b; p < e; p++) {
    const w4_blk s = w4_block_at(j->g, 0, j->scratch + p * j->scratch_elems);
    w4_out(j->g, j->k.mx, m * p / j->parts, m * (p + 1) / j->parts, j->k.ty0, j->k.ty1, j->k.bt,
           j->k.ms, s.y, j->o, j->e, j->n);
  }
}

ct_status ct__wino4_block_wide(const ct__conv_geom *g, const float *x, const ct__wino_u *u,
                               int64_t b, float *o, float *scratch, int64_t parts,
                               const ct__conv_epi *e, int64_t n) {
  w4_wide j = {.g = g, .x = x, .u = u, .o = o, .scratch = scratch, .e = e,
               .k = w4_block_at(g, b, scratch), .scratch_elems = ct__wino4_scratch_elems(g),
               .parts = parts, .n = n};
  atomic_init(&j.failed, false);
  ct__parallel_for(parts, 1, w4_wide_in, &j);
  ct__parallel_for(parts, 1, w4_wide_products, &j);
  if (atomic_load(&j.failed)) {
    return ct__error(CT_ERR_OUT_OF_MEMORY, "out of host memory for a GEMM's packing buffers");
  }
  ct__parallel_for(parts, 1, w4_wide_out, &j);
  return CT_OK;
}
