/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/conv_direct.c: conv2d's float32 forward as a direct loop for small output widths
 * (conv_direct.h), on CPUs with AVX-512.
 *
 * im2col's GEMM pads its columns (output pixels) to whole tiles of 32: a 7 x 7 output is 49
 * columns computed as 64, and its packer copies runs of 7 to 32 values per tap with bookkeeping
 * for each. Here the output channels go along the vector lanes instead: a row of OW pixels (a
 * piece of at most 14 of a wider row) for 32 output channels is 2 OW accumulators (28 of the 32
 * registers at most); each step of the sum over
 * (channel, ky, kx) loads the 32 filter values once and broadcasts each of the row's OW input
 * values, two multiply-adds each. The input is copied once per image with its padding, so the
 * loop has no border cases; the filters are packed [block of 32 output channels][C][KH][KW][32]
 * (kept between runs for constant filters). Each output is one sum over (c, ky, kx) in that
 * order, fused multiply-adds in one lane: the same bits whatever the split over threads. The
 * rows leave the registers through two 16 x 16 transposes (ops/cpu/t16.h) into NCHW. Wide
 * rows of few terms at stride 2 (cd_wide) go through conv_direct_wide.c instead, which puts
 * the output pixels along the lanes and pads its own input rows. */
#include "ops/cpu/conv_direct.h"

#include <string.h>

#include "ops/cpu/conv_avx512.h"
#include "ops/cpu/conv_fusion.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/t16.h"
#include "ops/cpu/vmath512.h"

#ifdef CT__T16_X86
enum { CD_OC = 32, CD_MAX_OW = 14, CD_CHUNK = 9216 };

bool ct__conv_direct_fits(const ct__conv_geom *g) {
  if (!(g->groups == 1 && g->kh >= 3 && g->kw >= 3 && g->dh == 1 && g->dw == 1 &&
        g->sh == g->sw && (g->sw == 1 || g->sw == 2) && g->ow >= 1 && g->oh >= 1 &&
        g->m >= CD_OC)) {
    return false;
  }
  const bool narrow = g->ow <= CD_MAX_OW && g->oh * g->ow <= CD_MAX_PIXELS && g->c >= CD_MIN_C;
  const bool wide = g->ow > CD_MAX_OW && g->sw == 2 && g->c * g->kh * g->kw >= CD_MIN_TAPS;
  return (narrow || wide) && ct__conv_avx512();
}

static int64_t cd_blocks(const ct__conv_geom *g) { return (g->m + CD_OC - 1) / CD_OC; }
static int64_t cd_hp(const ct__conv_geom *g) { return g->h + g->pt + g->pb; }
static int64_t cd_wp(const ct__conv_geom *g) { return g->w + g->pl + g->pr; }

int64_t ct__conv_direct_packed_elems(const ct__conv_geom *g) {
  return cd_blocks(g) * CD_OC * g->c * g->kh * g->kw;
}

void ct__conv_direct_pack(const ct__conv_geom *g, const float *w, float *wp) {
  const int64_t taps = g->c * g->kh * g->kw;
  for (int64_t b = 0; b < cd_blocks(g); b++) {
    for (int64_t t = 0; t < taps; t++) {
      float *d = wp + (b * taps + t) * CD_OC;
      for (int64_t j = 0; j < CD_OC; j++) {
        const int64_t m = b * CD_OC + j;
        d[j] = m < g->m ? w[m * taps + t] : 0.0f;
      }
    }
  }
}

static int64_t cd_image_elems(const ct__conv_geom *g) { return g->c * cd_hp(g) * cd_wp(g); }

/* Plane x [H, W] with its padding into xp [HP, WP]. */
static void cd_pad(const ct__conv_geom *g, const float *x, float *xp, int64_t y0, int64_t y1) {
  const int64_t wp = cd_wp(g);
  for (int64_t y = y0; y < y1; y++) {
    float *r = xp + y * wp;
    const int64_t iy = y - g->pt;
    if (iy < 0 || iy >= g->h) {
      memset(r, 0, (size_t)wp * sizeof(float));
      continue;
    }
    memset(r, 0, (size_t)g->pl * sizeof(float));
    memcpy(r + g->pl, x + iy * g->w, (size_t)g->w * sizeof(float));
    memset(r + g->pl + g->w, 0, (size_t)g->pr * sizeof(float));
  }
}

/* *p in every lane, broadcast by the load itself: a broadcast from a register runs on the
 * shuffle port, which on AVX-512 cores is one of the two multiply-add ports (7 broadcasts and 14
 * multiply-adds a step then took 10.5 cycles, not 7), and the compiler makes one when it keeps a
 * loaded value in a register for the next tap, which it does for a load written in C. Of the
 * asm, the compiler may still keep one broadcast for several taps (the same input value at
 * stride 1), which pays where registers are left (7-wide rows: 512 x 512 filters on 7 x 7, 1.80
 * -> 1.61 ms); for rows of more than 8 (2 OW accumulators of the 32 registers) the volatile form
 * loads each one anew (128 x 256 on 28 x 28 at stride 2: 1.17 -> 0.88 ms, where the kept ones
 * were spilled). */
__attribute__((target("avx512f"))) static inline __m512 cd_bcast(const float *p) {
  __m512 v;
  __asm__("vbroadcastss %1, %0" : "=v"(v) : "m"(*p));
  return v;
}
__attribute__((target("avx512f"))) static inline __m512 cd_bcast_each(const float *p) {
  __m512 v;
  __asm__ volatile("vbroadcastss %1, %0" : "=v"(v) : "m"(*p));
  return v;
}

/* Channels a chunk of the sum: the block's filters for them (KH KW 32 floats each) within
 * CD_CHUNK floats (36 KB), so that the rows of the block read them from L1, not L2. */
static int64_t cd_chunk(const ct__conv_geom *g) {
  const int64_t c = CD_CHUNK / (g->kh * g->kw * CD_OC);
  return c > 0 ? c : 1;
}

/* Whether the rows go through conv_direct_wide.c (vectorised over output pixels, the padded
 * rows split): wide rows at stride 2, few terms an output (CT__CDW_MAX_TAPS), the sum in one
 * chunk of channels, and a row's input rows with the block's filters within CD_WIDE_L1 bytes,
 * so that its groups of channels read them from L1. MobileNetV2's 3 -> 32 stem (8 + 3.4 KB)
 * does; resnet's 7x7 stem (147 terms) does not. */
enum { CD_WIDE_L1 = 40 << 10 };
static bool cd_wide(const ct__conv_geom *g) {
  const int64_t bytes = (g->c * g->kh * cd_wp(g) + g->c * g->kh * g->kw * CD_OC) * 4;
  return g->ow > CD_MAX_OW && g->sw == 2 && g->c <= cd_chunk(g) && bytes <= CD_WIDE_L1 &&
         g->c * g->kh * g->kw <= CT__CDW_MAX_TAPS;
}

/* Output row oy of channel block b, the channels [c0, c1) of its sums: 2 OW registers, from
 * the row's partial sums in acc (zero when c0 is 0), back into acc unless c1 is C, when they go
 * through two 16 x 16 transposes into the planes of d (m < M). Each channel of the sum also
 * fetches into L2 the next pf_c lines of [pf, pf_end) while there are. OW, S and K3 (a 3 x 3
 * filter, its tap loops unrolled) constants: each instance its own registers. */
__attribute__((target("avx512f"))) static inline __attribute__((always_inline)) void cd_row(
    const ct__conv_geom *g, const float *xp, const float *w, int64_t b, int64_t oy, int64_t x0,
    int64_t c0, int64_t c1, float *acc, const ct__cd_dst *d, const float *pf,
    const float *pf_end, int64_t pf_c, const int OW, const int S, const int K3) {
  const int64_t hp = cd_hp(g), wp = cd_wp(g);
  const int64_t kh = K3 ? 3 : g->kh, kw = K3 ? 3 : g->kw;
  __m512 a0[CD_MAX_OW], a1[CD_MAX_OW];
  for (int x = 0; x < OW; x++) {
    a0[x] = c0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(acc + 32 * x);
    a1[x] = c0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(acc + 32 * x + 16);
  }
  const float *wk = w + (b * g->c + c0) * kh * kw * CD_OC;
  for (int64_t c = c0; c < c1; c++) {
    /* pf_c lines of the next chunk's filters a channel (outside the taps' loops: a check in
     * them cost the stride-2 layers a sixth of their time, 0.62 -> 0.72 ms) */
    for (int64_t q = 0; q < pf_c && pf < pf_end; q++, pf += 16) {
      _mm_prefetch((const char *)pf, _MM_HINT_T1);
    }
    const float *xc = xp + (c * hp + oy * S) * wp + x0 * S;
    for (int64_t ky = 0; ky < kh; ky++) {
      const float *xr = xc + ky * wp;
      for (int64_t kx = 0; kx < kw; kx++, wk += CD_OC) {
        const __m512 w0 = _mm512_loadu_ps(wk), w1 = _mm512_loadu_ps(wk + 16);
        for (int x = 0; x < OW; x++) {
          const __m512 v = OW > 8 ? cd_bcast_each(xr + x * S + kx) : cd_bcast(xr + x * S + kx);
          a0[x] = _mm512_fmadd_ps(v, w0, a0[x]);
          a1[x] = _mm512_fmadd_ps(v, w1, a1[x]);
        }
      }
    }
  }
  if (c1 < g->c) {
    for (int x = 0; x < OW; x++) {
      _mm512_storeu_ps(acc + 32 * x, a0[x]);
      _mm512_storeu_ps(acc + 32 * x + 16, a1[x]);
    }
    return;
  }
  const __mmask16 cols = (__mmask16)((1u << OW) - 1);
  for (int half = 0; half < 2; half++) {
    __m512 r[16];
    for (int x = 0; x < 16; x++) {
      r[x] = x < OW ? (half ? a1[x] : a0[x]) : _mm512_setzero_ps();
    }
    ct__t16_f32(r);
    const int64_t m0 = b * CD_OC + half * 16;
    for (int64_t l = 0; l < 16 && m0 + l < g->m; l++) {
      _mm512_mask_storeu_ps(d->o + (m0 + l - d->mb) * d->ops + (oy - d->ob) * g->ow + x0, cols,
                            r[l]);
    }
  }
}

#define CD_CASE(OW)                                                                   \
  case OW:                                                                            \
    if (k3 && g->sw == 1) {                                                           \
      cd_row(g, xp, w, b, oy, x0, c0, c1, a_, d, pf, pf_end, pf_c, OW, 1, 1);         \
    } else if (k3) {                                                                  \
      cd_row(g, xp, w, b, oy, x0, c0, c1, a_, d, pf, pf_end, pf_c, OW, 2, 1);         \
    } else if (g->sw == 1) {                                                          \
      cd_row(g, xp, w, b, oy, x0, c0, c1, a_, d, pf, pf_end, pf_c, OW, 1, 0);         \
    } else {                                                                          \
      cd_row(g, xp, w, b, oy, x0, c0, c1, a_, d, pf, pf_end, pf_c, OW, 2, 0);         \
    }                                                                                 \
    break;

/* conv2d_fusion's epilogue e on output row oy of image n's planes [m0, m1) of d, in place,
 * right after the row's last piece is stored (in L1): + bias, + the residual (its row oy),
 * then the activation, the pass's steps and operand orders as dw3_rows applies them in
 * registers, so the pass's bits. (A pass over a band's rows after the band, what ran before,
 * read MobileNetV2's stem output back from L3 at one thread: 1.6 MB. In cd_row's registers,
 * before its stores, the loop ran slower: 368 -> 428 us.) */
__attribute__((target("avx512f"), noinline)) static void cd_epi_row(const ct__conv_geom *g,
                                                                   const ct__conv_epi *e,
                                                                   int64_t n, const ct__cd_dst *d,
                                                                   int64_t oy, int64_t m0,
                                                                   int64_t m1) {
  const __m512 lo = _mm512_set1_ps((float)e->lo), hi = _mm512_set1_ps((float)e->hi);
  const float *bias = e->bias;
  for (int64_t m = m0; m < m1; m++) {
    float *row = d->o + (m - d->mb) * d->ops + (oy - d->ob) * g->ow;
    const float *res =
        e->res != NULL ? (const float *)e->res + n * e->rs_n + m * e->rs_m + oy * g->ow : NULL;
    const __m512 vb = _mm512_set1_ps(bias != NULL ? bias[e->n_bias == 1 ? 0 : m] : 0);
    for (int64_t x = 0; x < g->ow; x += 16) {
      const __mmask16 k = ct__v512_rest(g->ow - x);
      _mm512_mask_storeu_ps(row + x, k,
                            ct__conv_epi_f32(_mm512_maskz_loadu_ps(k, row + x), bias != NULL, vb,
                                             res != NULL ? res + x : NULL, k, e->act, lo, hi));
    }
  }
}

/* Block b of image n, output rows [y0, y1): their sums chunk by chunk of channels (acc: the
 * rows' OW 32 floats when there is more than one chunk), each row in pieces of at most
 * CD_MAX_OW outputs, into d's planes, then through the epilogue e (NULL: none) with the last
 * chunk. Where the filters are larger than CT__FETCH_AHEAD_BYTES, each row's first piece
 * fetches its share of the next chunk's filters (the next block's first chunk after the last
 * one) into L2, a few lines a channel of its sum. On an Intel Xeon (Sapphire Rapids class)
 * resnet18's layer4 convolutions read 1.82-1.86 ms in the model without it (1.25 alone, the
 * filters in L3), 1.67 with a burst of the whole chunk at the chunk's first row, 1.26-1.29
 * spread over the rows (onnxruntime's 1.49-1.55). */
__attribute__((target("avx512f"))) static void cd_rows(const ct__conv_geom *g, const float *xp,
                                                      const float *w, int64_t b, int64_t y0,
                                                      int64_t y1, float *acc, const ct__cd_dst *d,
                                                      const ct__conv_epi *e, int64_t n) {
  const int64_t cc = cd_chunk(g), taps = g->kh * g->kw, packed = ct__conv_direct_packed_elems(g);
  const bool k3 = g->kh == 3 && g->kw == 3;
  const bool fetch = packed * (int64_t)sizeof(float) > CT__FETCH_AHEAD_BYTES;
  for (int64_t c0 = 0; c0 < g->c; c0 += cc) {
    const int64_t c1 = g->c - c0 < cc ? g->c : c0 + cc;
    const int64_t next = (b * g->c + c1) * taps * CD_OC; /* offsets into w */
    /* a row's share of the chunk's lines (two a tap and channel), and of those a channel's */
    const int64_t lines = ((c1 - c0) * taps * 2 + (y1 - y0) - 1) / (y1 - y0), share = lines * 16;
    const int64_t pf_c = (lines + (c1 - c0) - 1) / (c1 - c0);
    for (int64_t oy = y0; oy < y1; oy++) {
      const int64_t f0 = next + (oy - y0) * share, f1 = f0 + share;
      const float *pf = w + (f0 < packed ? f0 : packed);
      const float *pf_end = fetch ? w + (f1 < packed ? f1 : packed) : pf;
      /* the row's first piece fetches its share; the others none (pf_end = pf) */
      for (int64_t x0 = 0; x0 < g->ow; x0 += CD_MAX_OW, pf_end = pf) {
        float *a_ = acc + ((oy - y0) * g->ow + x0) * CD_OC;
        switch (g->ow - x0 < CD_MAX_OW ? g->ow - x0 : CD_MAX_OW) {
          CD_CASE(1) CD_CASE(2) CD_CASE(3) CD_CASE(4) CD_CASE(5) CD_CASE(6) CD_CASE(7)
          CD_CASE(8) CD_CASE(9) CD_CASE(10) CD_CASE(11) CD_CASE(12) CD_CASE(13) CD_CASE(14)
          default: break;
        }
      }
      if (e != NULL && c1 == g->c) {
        cd_epi_row(g, e, n, d, oy, b * CD_OC, g->m < (b + 1) * CD_OC ? g->m : (b + 1) * CD_OC);
      }
    }
  }
}
#undef CD_CASE

/* The run's images: padded into scratch first, then (image, block of 32 output channels, band
 * of output rows) items on `pieces` pieces of corten's pool (each its partial sums' buffer),
 * each row through the epilogue once written. An output's sum is the same whichever
 * band it is in: the bands are there for threads that images and blocks leave idle (one image
 * of MobileNetV2's 32-filter stem is one block: at two threads it ran at one thread's speed,
 * where im2col's GEMM splits its columns). */
typedef struct cd_run {
  const ct__conv_geom *g;
  const float *x, *w;
  float *xp, *acc, *o;
  const ct__conv_epi *e;
  int64_t items, pieces, bands;
} cd_run;

/* A piece's own scratch: its partial sums, or (cd_wide) its padded input rows. */
static int64_t cd_acc_elems(const ct__conv_geom *g) {
  if (cd_wide(g)) return ct__cdw_buffer_elems(g);
  return g->c > cd_chunk(g) ? g->oh * g->ow * CD_OC : 0;
}

/* The padded images' floats in the scratch (none for cd_wide: each piece pads its rows). */
static int64_t cd_images_elems(const ct__conv_geom *g) {
  return cd_wide(g) ? 0 : g->n * cd_image_elems(g);
}

/* Rows [y0, y1) of block b of image n into d, through the epilogue e: cd_rows from the padded
 * image xp (acc: the piece's partial sums), or for cd_wide, conv_direct_wide.c's from image n's
 * input x (acc: the piece's buffer). */
static void cd_block_rows(const ct__conv_geom *g, const float *x, const float *xp,
                          const float *w, int64_t b, int64_t y0, int64_t y1, float *acc,
                          const ct__cd_dst *d, const ct__conv_epi *e, int64_t n) {
  if (cd_wide(g)) {
    ct__cdw_rows(g, x + n * g->c * g->h * g->w, w, b, y0, y1, d, e, n, acc);
  } else {
    cd_rows(g, xp + n * cd_image_elems(g), w, b, y0, y1, acc, d, e, n);
  }
}

/* Items [b, e) of bands x planes (image n's channel c is plane n C + c), band-major, padded: a
 * band's padded rows from the first its output rows read (the rows read by one band's last
 * outputs and the next band's first are the next band's), so with bands a thread pads the rows
 * it reads, in its own cache, where a thread a plane padded what both read. */
static void cd_pads(void *arg, int64_t b, int64_t e) {
  const cd_run *r = arg;
  const ct__conv_geom *g = r->g;
  const int64_t planes = g->n * g->c, hp = cd_hp(g);
  for (int64_t it = b; it < e; it++) {
    const int64_t band = it / planes, p = it % planes;
    const int64_t y0 = band == 0 ? 0 : g->oh * band / r->bands * g->sh;
    const int64_t y1 = band == r->bands - 1 ? hp : g->oh * (band + 1) / r->bands * g->sh;
    cd_pad(g, r->x + p * g->h * g->w, r->xp + p * hp * cd_wp(g), y0, y1);
  }
}

/* Item it with piece p's partial sums: band it % bands of block (it / bands) % blocks of image
 * it / bands / blocks. */
static void cd_item(void *arg, int64_t it, int p) {
  const cd_run *r = arg;
  const ct__conv_geom *g = r->g;
  const int64_t blocks = cd_blocks(g), ohw = g->oh * g->ow;
  const int64_t band = it % r->bands, n = it / r->bands / blocks, k = it / r->bands % blocks;
  const int64_t y0 = g->oh * band / r->bands, y1 = g->oh * (band + 1) / r->bands;
  const ct__cd_dst d = {r->o + n * g->m * ohw, ohw, 0, 0};
  cd_block_rows(g, r->x, r->xp, r->w, k, y0, y1,
                r->acc + p * ct__piece_stride(cd_acc_elems(g), sizeof(float)), &d, r->e, n);
}

static int64_t cd_threads(void) { return ct__parallel_nested() ? 1 : ct_get_num_threads(); }

/* Bands of rows an (image, block): as many as the threads that images and blocks leave idle. */
static int64_t cd_bands(const ct__conv_geom *g) {
  const int64_t items = g->n * cd_blocks(g), threads = cd_threads();
  const int64_t bands = items >= threads ? 1 : (threads + items - 1) / items;
  return bands < g->oh ? bands : g->oh;
}

static int64_t cd_pieces(const ct__conv_geom *g) {
  const int64_t threads = cd_threads(), items = g->n * cd_blocks(g) * cd_bands(g);
  return threads < items ? threads : items;
}

/* The scratch: the pieces' partial sums first (ct__piece_stride apart), then the images. */
static int64_t cd_accs_elems(const ct__conv_geom *g) {
  return ct__pieces_elems(cd_pieces(g), cd_acc_elems(g), sizeof(float));
}

int64_t ct__conv_direct_scratch_elems(const ct__conv_geom *g) {
  return cd_accs_elems(g) + cd_images_elems(g);
}

void ct__conv_direct_run(const ct__conv_geom *g, const float *x, const float *wp, float *o,
                         const ct__conv_epi *e, float *scratch) {
  cd_run r = {g, x, wp, scratch + cd_accs_elems(g), scratch, o, e,
              g->n * cd_blocks(g) * cd_bands(g), cd_pieces(g), cd_bands(g)};
  /* plane by plane (and band by band): image by image, a batch of one was padded on one thread
   * while the others waited (resnet18's stride-2 64 -> 128 layer ran only 1.15x faster on two
   * threads than on one) */
  if (!cd_wide(g)) {
    ct__parallel_for(r.bands * g->n * g->c,
                     CT__GRAIN_MEM / (cd_hp(g) * cd_wp(g) / r.bands) + 1, cd_pads, &r);
  }
  ct__parallel_items(r.items, (int)r.pieces, cd_item, &r);
}

/* ---- conv2d_pool: a band of a block's rows, then their max pool ---------------------------
 * An item is (image, block of 32 channels, band of pool output rows); it runs its pool rows a
 * few at a time: the convolution's rows their windows read go through cd_block_rows into the
 * piece's buffer (32 planes of cp_rows rows), the rows the previous few also read moved to its
 * front rather than computed again, then each plane's pool rows from there (ct__pool_band_f32,
 * pool2d's arithmetic). The convolution's output never leaves that buffer. */
typedef struct cp_run {
  const ct__conv_geom *g, *pg; /* the convolution's plan, the pool's (over its output) */
  const float *x, *xp, *w; /* the input, its padded images (none for cd_wide), the filters */
  float *buf, *o;
  const ct__conv_epi *e;
  const ct__fusion_epi *post;
  int64_t bands, rows, step; /* bands of pool rows an (image, block); buffer rows; pool rows */
} cp_run;

/* The rows of the convolution that pool rows [q0, q1) read: [*lo, *hi) (empty: *lo == *hi). */
static void cp_span(const ct__conv_geom *pg, int64_t q0, int64_t q1, int64_t *lo, int64_t *hi) {
  int64_t a = q0 * pg->sh - pg->pt, b = (q1 - 1) * pg->sh - pg->pt + pg->kh;
  *lo = a < 0 ? 0 : a > pg->h ? pg->h : a;
  *hi = b > pg->h ? pg->h : b < *lo ? *lo : b;
}

/* Pool rows a step and buffer rows: the step's rows within CP_BUFFER bytes of the block's 32
 * planes (at least one pool row). */
enum { CP_BUFFER = 256 << 10 };
static int64_t cp_step(const ct__conv_geom *g, const ct__conv_geom *pg) {
  const int64_t fit = CP_BUFFER / (CD_OC * g->ow * (int64_t)sizeof(float));
  const int64_t q = pg->sh > 0 && fit > pg->kh ? (fit - pg->kh) / pg->sh + 1 : 1;
  return q < pg->oh ? q : pg->oh > 0 ? pg->oh : 1;
}
static int64_t cp_rows(const ct__conv_geom *pg, int64_t step) {
  return (step - 1) * pg->sh + pg->kh;
}

/* Each piece's buffer (32 planes of the step's rows) and partial sums (those rows' OW 32; for
 * cd_wide, its padded input rows). */
static int64_t cp_piece_elems(const ct__conv_geom *g, const ct__conv_geom *pg) {
  const int64_t plane = CD_OC * cp_rows(pg, cp_step(g, pg)) * g->ow;
  return plane + (cd_wide(g) ? ct__cdw_buffer_elems(g) : plane);
}

static void cp_item(void *arg, int64_t it, int p) {
  const cp_run *r = arg;
  const ct__conv_geom *g = r->g, *pg = r->pg;
  const int64_t blocks = cd_blocks(g), band = it % r->bands;
  const int64_t n = it / r->bands / blocks, k = it / r->bands % blocks;
  const int64_t q0 = pg->oh * band / r->bands, q1 = pg->oh * (band + 1) / r->bands;
  const int64_t m0 = k * CD_OC, m1 = g->m < m0 + CD_OC ? g->m : m0 + CD_OC;
  const int64_t plane = r->rows * g->ow;
  float *buf = r->buf + p * ct__piece_stride(cp_piece_elems(g, pg), sizeof(float));
  float *acc = buf + CD_OC * plane;
  int64_t have_lo = 0, have_hi = 0; /* the buffer holds rows [have_lo, have_hi) */
  for (int64_t a = q0; a < q1; a += r->step) {
    const int64_t b = q1 - a < r->step ? q1 : a + r->step;
    int64_t lo, hi;
    cp_span(pg, a, b, &lo, &hi);
    int64_t from = lo;
    if (have_lo <= lo && lo < have_hi) { /* the previous step's last rows, kept */
      for (int64_t m = 0; m < m1 - m0; m++) {
        memmove(buf + m * plane, buf + m * plane + (lo - have_lo) * g->ow,
                (size_t)((have_hi - lo) * g->ow) * sizeof(float));
      }
      from = have_hi;
    }
    const ct__cd_dst d = {buf, plane, m0, lo};
    if (from < hi) cd_block_rows(g, r->x, r->xp, r->w, k, from, hi, acc, &d, r->e, n);
    for (int64_t m = m0; r->post != NULL && from < hi && m < m1; m++) {
      ct__fusion_values_f32(r->post, buf + (m - m0) * plane + (from - lo) * g->ow,
                            (hi - from) * g->ow, m);
    }
    have_lo = lo;
    have_hi = hi;
    for (int64_t m = m0; m < m1; m++) {
      ct__pool_band_f32(pg, buf + (m - m0) * plane, lo, a, b,
                        r->o + (n * g->m + m) * pg->oh * pg->ow);
    }
  }
}

static int64_t cp_bands(const ct__conv_geom *g, const ct__conv_geom *pg) {
  const int64_t items = g->n * cd_blocks(g), threads = cd_threads();
  const int64_t bands = items >= threads ? 1 : (threads + items - 1) / items;
  return bands < pg->oh ? bands : pg->oh > 0 ? pg->oh : 1;
}

static int64_t cp_pieces(const ct__conv_geom *g, const ct__conv_geom *pg) {
  const int64_t threads = cd_threads(), items = g->n * cd_blocks(g) * cp_bands(g, pg);
  return threads < items ? threads : items;
}

int64_t ct__conv_direct_pool_scratch_elems(const ct__conv_geom *g, const ct__conv_geom *pg) {
  return ct__pieces_elems(cp_pieces(g, pg), cp_piece_elems(g, pg), sizeof(float)) +
         cd_images_elems(g);
}

void ct__conv_direct_pool_run(const ct__conv_geom *g, const ct__conv_geom *pg, const float *x,
                              const float *wp, float *o, const ct__conv_epi *e,
                              const ct__fusion_epi *post, float *scratch) {
  const int64_t pieces = cp_pieces(g, pg);
  const int64_t accs = ct__pieces_elems(pieces, cp_piece_elems(g, pg), sizeof(float));
  if (!cd_wide(g)) {
    cd_run pad = {g, x, wp, scratch + accs, NULL, NULL, e, 0, 0, 1};
    ct__parallel_for(g->n * g->c, CT__GRAIN_MEM / (cd_hp(g) * cd_wp(g)) + 1, cd_pads, &pad);
  }
  const int64_t step = cp_step(g, pg);
  cp_run r = {g, pg, x, scratch + accs, wp, scratch, o, e, post, cp_bands(g, pg),
              cp_rows(pg, step), step};
  ct__parallel_items(g->n * cd_blocks(g) * r.bands, (int)pieces, cp_item, &r);
}

#else /* no AVX-512 helpers in this build: the path is never taken */

bool ct__conv_direct_fits(const ct__conv_geom *g) {
  (void)g;
  return false;
}
int64_t ct__conv_direct_packed_elems(const ct__conv_geom *g) { return g->m * g->c * 9; }
void ct__conv_direct_pack(const ct__conv_geom *g, const float *w, float *wp) {
  (void)g, (void)w, (void)wp;
}
int64_t ct__conv_direct_scratch_elems(const ct__conv_geom *g) { return g->n; }
void ct__conv_direct_run(const ct__conv_geom *g, const float *x, const float *wp, float *o,
                         const ct__conv_epi *e, float *scratch) {
  (void)g, (void)x, (void)wp, (void)o, (void)e, (void)scratch;
}
int64_t ct__conv_direct_pool_scratch_elems(const ct__conv_geom *g, const ct__conv_geom *pg) {
  (void)pg;
  return g->n;
}
void ct__conv_direct_pool_run(const ct__conv_geom *g, const ct__conv_geom *pg, const float *x,
                              const float *wp, float *o, const ct__conv_epi *e,
                              const ct__fusion_epi *post, float *scratch) {
  (void)g, (void)pg, (void)x, (void)wp, (void)o, (void)e, (void)post, (void)scratch;
}
#endif
