/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/winograd_grad.c: conv2d's float32 Filter@GRAD through Winograd's F(2x2, 3x3)
 * (winograd.h): Output@GRAD's tiles transformed (A dY A^T), their products with the blocks' V
 * summed into dU, and dU turned back into the filters' gradient (G^T dU G). */
#include <string.h>

#include "ops/cpu/gemm.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/t16.h"
#include "ops/cpu/winograd.h"
#include "ops/cpu/winograd_impl.h"

/* Filter@GRAD's step 1 for Output@GRAD: dM of tile rows [ty0, ty1) (columns as V's, ld bt) from
 * the planes dy [M, OH, OW], A dY A^T per tile, a tile's part outside the planes zero (the
 * forward drops it, so no gradient flows from it). With A's rows [1 0; 1 1; 1 -1; 0 -1] a pair
 * (p, q) becomes (p, p + q, p - q, -q), down the tile's two rows and then along each of the four.
 * A pair of rows with an outside part is copied first, zero-filled, into the two rows at pad. */
CT__WINO_CLONES
static void transform_dout(const ct__conv_geom *g, const float *dy, int64_t ty0, int64_t ty1,
                           int64_t bt, float *dm, float *pad) {
  const int64_t tw = tiles_w(g), ohw = g->oh * g->ow, w2 = 2 * tw;
  for (int64_t m = 0; m < g->m; m++) {
    for (int64_t ty = ty0; ty < ty1; ty++) {
      const float *r0 = dy + m * ohw + 2 * ty * g->ow, *r1 = r0 + g->ow;
      const bool low = 2 * ty + 1 < g->oh;
      if (!low || g->ow != w2) {
        float *e0 = pad, *e1 = pad + w2;
        memcpy(e0, r0, (size_t)g->ow * sizeof(float));
        memset(e0 + g->ow, 0, (size_t)(w2 - g->ow) * sizeof(float));
        if (low) {
          memcpy(e1, r1, (size_t)g->ow * sizeof(float));
          memset(e1 + g->ow, 0, (size_t)(w2 - g->ow) * sizeof(float));
        } else {
          memset(e1, 0, (size_t)w2 * sizeof(float));
        }
        r0 = e0;
        r1 = e1;
      }
      float *out[16];
      for (int xi = 0; xi < 16; xi++) out[xi] = dm + (xi * g->m + m) * bt + (ty - ty0) * tw;
      CT__SIMD
      for (int64_t q = 0; q < tw; q++) {
        const float a = r0[2 * q], b = r0[2 * q + 1], c = r1[2 * q], d = r1[2 * q + 1];
        const float p[4] = {a, a + c, a - c, -c}, s[4] = {b, b + d, b - d, -d};
        for (int i = 0; i < 4; i++) {
          out[4 * i][q] = p[i];
          out[4 * i + 1][q] = p[i] + s[i];
          out[4 * i + 2][q] = p[i] - s[i];
          out[4 * i + 3][q] = -s[i];
        }
      }
    }
  }
}

/* The 1-D transpose of filter_1d: 4 values of dU into the gradient of the 3 taps, G^T u. */
static void filter_grad_1d(float a, float b, float c, float d, float r[3]) {
  const float h = (b + c) * 0.5f;
  r[0] = a + h;
  r[1] = (b - c) * 0.5f;
  r[2] = h + d;
}

void ct__wino_filter_grad(const ct__conv_geom *g, const float *du, float *dw) {
  const int64_t mc = g->m * g->c;
  for (int64_t f = 0; f < mc; f++) {
    float rows[4][3]; /* G^T applied along each row i of the 4x4: rows[i][kx] */
    for (int i = 0; i < 4; i++) {
      const float *u = du + i * 4 * mc + f;
      filter_grad_1d(u[0], u[mc], u[2 * mc], u[3 * mc], rows[i]);
    }
    for (int kx = 0; kx < 3; kx++) {
      float r[3];
      filter_grad_1d(rows[0][kx], rows[1][kx], rows[2][kx], rows[3][kx], r);
      for (int ky = 0; ky < 3; ky++) dw[f * 9 + ky * 3 + kx] = r[ky];
    }
  }
}

/* Filter@GRAD's products: the dot of each row of dM[xi] with each row of V[xi], over all the
 * tiles of a chunk's blocks. Both run along the tiles, which the transforms write contiguously,
 * so the dots read them in place (the GEMM would transpose both into its packed layout first:
 * measured, that took as long as its multiplies). Each dot keeps 8 lanes, lane l summing the
 * tiles t = l mod 8 of each block in order, block after block, in `lanes` [16][M][C][8]: the
 * blocks' tiles are padded with zeros to a multiple of 8, so there is no remainder, and the lanes
 * are added once, at the end of a chunk, in a fixed tree (ct__wino_grad_sum). Blocks of 4 rows
 * of dM by 2 of V keep their 8 accumulators and the 6 vectors they read in 14 of AVX2's 16
 * vector registers. The products and sums are separate roundings (no fused multiply-add), so the
 * bits are the same whichever clone runs. */
#ifdef __GNUC__
/* Macros, not functions: a function passing these vectors would take the baseline's ABI. */
typedef float wino_v8 __attribute__((vector_size(32)));
#define V8_LOAD(v, p) memcpy(&(v), (p), sizeof(wino_v8))
#define V8_STORE(p, v) memcpy((p), &(v), sizeof(wino_v8))
#endif

/* lanes (rows of M then C, 8 floats each) += the products of rows of a (M of them) and b (C), ld
 * apart, n (a multiple of 8) values each, but for rows [0, m4) x columns [0, c4) (dots512's,
 * m4 a multiple of 4, c4 even). */
CT__WINO_CLONES
static void dots(int64_t mm, int64_t cc, int64_t n, const float *a, const float *b, int64_t ld,
                 float *lanes, int64_t m4, int64_t c4) {
  int64_t i = 0;
#ifdef __GNUC__
  for (; i + 4 <= mm; i += 4) {
    const float *a0 = a + i * ld, *a1 = a0 + ld, *a2 = a1 + ld, *a3 = a2 + ld;
    for (int64_t j = i < m4 ? c4 : 0; j + 2 <= cc; j += 2) {
      const float *b0 = b + j * ld, *b1 = b0 + ld;
      wino_v8 s[4][2], x[4], y0, y1;
      for (int r = 0; r < 4; r++) {
        V8_LOAD(s[r][0], lanes + ((i + r) * cc + j) * 8);
        V8_LOAD(s[r][1], lanes + ((i + r) * cc + j + 1) * 8);
      }
      for (int64_t t = 0; t < n; t += 8) {
        V8_LOAD(x[0], a0 + t);
        V8_LOAD(x[1], a1 + t);
        V8_LOAD(x[2], a2 + t);
        V8_LOAD(x[3], a3 + t);
        V8_LOAD(y0, b0 + t);
        V8_LOAD(y1, b1 + t);
        for (int r = 0; r < 4; r++) {
          s[r][0] += x[r] * y0;
          s[r][1] += x[r] * y1;
        }
      }
      for (int r = 0; r < 4; r++) {
        V8_STORE(lanes + ((i + r) * cc + j) * 8, s[r][0]);
        V8_STORE(lanes + ((i + r) * cc + j + 1) * 8, s[r][1]);
      }
    }
  }
#endif
  /* What the blocks leave (every pair where there are no vector types): the same lanes' sums. */
  for (int64_t r = 0; r < mm; r++) {
    for (int64_t j = r < i ? cc - cc % 2 : r < m4 ? c4 : 0; j < cc; j++) {
      float *l = lanes + (r * cc + j) * 8;
      const float *ar = a + r * ld, *bj = b + j * ld;
      for (int64_t t = 0; t < n; t += 8) {
        for (int q = 0; q < 8; q++) l[q] += ar[t + q] * bj[t + q];
      }
    }
  }
}

#ifdef CT__T16_X86
/* dots on AVX-512 (where ct__gemm_avx512 says the CPU runs it): blocks of 4 rows of a by 4 of
 * b, each 512-bit accumulator two neighbouring elements' 8 lanes (their lanes lie side by side
 * in `lanes`), a row of a's 8 values loaded into both halves and two rows of b's side by side.
 * Every lane is the same product added in the same order as in dots (no fused multiply-add),
 * so the same bits, with half the vector operations (the clones' dots run on 8-lane vectors):
 * conv2d_grad on the [32,16,32,32] benchmark 5.86 -> 5.24 ms at one thread, 3.04 -> 2.77 at
 * two (an Intel Xeon). It takes rows [0, M - M % 4) x columns [0, C - C % 4); dots the rest. */
__attribute__((target("avx512f"))) static void dots512(int64_t mm, int64_t cc, int64_t n,
                                                       const float *a, const float *b,
                                                       int64_t ld, float *lanes) {
  for (int64_t i = 0; i + 4 <= mm; i += 4) {
    for (int64_t j = 0; j + 4 <= cc; j += 4) {
      __m512 s[4][2];
      for (int r = 0; r < 4; r++) {
        s[r][0] = _mm512_loadu_ps(lanes + ((i + r) * cc + j) * 8);
        s[r][1] = _mm512_loadu_ps(lanes + ((i + r) * cc + j + 2) * 8);
      }
      const float *b0 = b + j * ld;
      for (int64_t t = 0; t < n; t += 8) {
        const __m512 y0 = _mm512_castpd_ps(_mm512_insertf64x4(
            _mm512_castpd256_pd512(_mm256_castps_pd(_mm256_loadu_ps(b0 + t))),
            _mm256_castps_pd(_mm256_loadu_ps(b0 + ld + t)), 1));
        const __m512 y1 = _mm512_castpd_ps(_mm512_insertf64x4(
            _mm512_castpd256_pd512(_mm256_castps_pd(_mm256_loadu_ps(b0 + 2 * ld + t))),
            _mm256_castps_pd(_mm256_loadu_ps(b0 + 3 * ld + t)), 1));
        for (int r = 0; r < 4; r++) {
          const __m512 x = _mm512_castpd_ps(
              _mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(a + (i + r) * ld + t))));
          s[r][0] = _mm512_add_ps(s[r][0], _mm512_mul_ps(x, y0));
          s[r][1] = _mm512_add_ps(s[r][1], _mm512_mul_ps(x, y1));
        }
      }
      for (int r = 0; r < 4; r++) {
        _mm512_storeu_ps(lanes + ((i + r) * cc + j) * 8, s[r][0]);
        _mm512_storeu_ps(lanes + ((i + r) * cc + j + 2) * 8, s[r][1]);
      }
    }
  }
}
#endif

/* The dots' lanes are 8 floats per element of dU, per thread: beyond LANES_MAX floats (4 MiB;
 * M C above 8192) the layer is wide enough for the GEMM, whose packing each element then pays
 * back over M or C products, and dU is summed through it, 16 GEMMs [M, tiles] x [tiles, C] a
 * block added into the chunk's dU. */
enum { LANES_MAX = 1 << 20 };
static bool by_dots(const ct__conv_geom *g) { return 8 * ct__wino_u_elems(g) <= LANES_MAX; }

int64_t ct__wino_grad_lanes(const ct__conv_geom *g) {
  return by_dots(g) ? 8 * ct__wino_u_elems(g) : 0;
}

void ct__wino_grad_sum(const ct__conv_geom *g, const float *lanes, float *du) {
  for (int64_t i = 0; i < ct__wino_u_elems(g); i++) {
    const float *l = lanes + 8 * i;
    du[i] = ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]));
  }
}

ct_status ct__wino_grad_block(const ct__conv_geom *g, const float *x, const float *dy, int64_t b,
                              float *acc, float *scratch) {
  const ct__wino_blk k = ct__wino_block_in(g, x, b, scratch);
  const int64_t mc = g->m * g->c, nt = k.nt, bt = k.bt;
  float *v = k.v, *dm = k.mx;
  transform_dout(g, dy, k.ty0, k.ty1, bt, dm, k.rows);
  if (!by_dots(g)) {
    for (int64_t xi = 0; xi < 16; xi++) {
      ct_status st = CT__GEMM(ct__gemm_f32, false, true, g->m, g->c, nt, 1, dm + xi * g->m * bt,
                              bt, v + xi * g->c * bt, bt, 1, acc + xi * mc, g->c);
      if (st != CT_OK) return st;
    }
    return CT_OK;
  }
  const int64_t n8 = (nt + 7) & ~(int64_t)7;
  if (n8 > nt) { /* the zeros the dots' last step reads */
    for (int64_t r = 0; r < 16 * (g->c + g->m); r++) {
      memset(v + r * bt + nt, 0, (size_t)(n8 - nt) * sizeof(float));
    }
  }
  int64_t m4 = 0, c4 = 0; /* what dots512 takes: rows [0, m4) x columns [0, c4) */
#ifdef CT__T16_X86
  const bool wide = ct__gemm_avx512();
  if (wide) {
    m4 = g->m - g->m % 4;
    c4 = g->c - g->c % 4;
  }
#endif
  for (int64_t xi = 0; xi < 16; xi++) {
    const float *a = dm + xi * g->m * bt, *bv = v + xi * g->c * bt;
    float *l = acc + 8 * xi * mc;
#ifdef CT__T16_X86
    if (wide) dots512(g->m, g->c, n8, a, bv, bt, l);
#endif
    dots(g->m, g->c, n8, a, bv, bt, l, m4, c4);
  }
  return CT_OK;
}
