/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/conv_block.c: inverted_residual on the CPU (ops/defs/conv_block.c; passes.md).
 *
 * Each image's output rows go in bands. For a band, the expansion's rows it needs (its input
 * rows and the depthwise window's one above and below) are computed channels-last into the
 * piece's buffer T1 ([rows][W][EP], EP = E rounded up to 16) by one GEMM, X^T W1^T, with Bias
 * added per column and the activation in the GEMM's epilogue; rows the previous band of the
 * same item (an image or a part of one) already computed are kept, not computed again. The
 * depthwise 3x3 then runs over T1 into T2 ([rows][OW][EP]), channels along the vector lanes
 * (stride 2 is a step of two pixels, no shuffles); the projection is one more GEMM, W3 T2^T,
 * straight into Output's NCHW planes with ProjectBias, the residual and the activation in its
 * epilogue (a small image alone on several threads: each thread expands and convolves its own
 * channels, ed_job). T1 and T2 stay in L2, so the E-channel values never go out to memory
 * (MobileNetV2's 16 -> 96 expansion of a 112 x 112 image wrote 4.8 MB and read it back twice).
 *
 * The bits are those of the three conv2d_fusion ops: every element of a GEMM is the same sum in
 * the same order whatever the operands' layout and the plan (gemm.md), and the epilogue rounds
 * each step as conv2d_fusion's does; the depthwise sums dw_elem's (conv_dw_tmpl.h): from +0, each
 * tap inside the image in (ky, kx) order, a multiply then an add, then the bias, then the
 * activation, in every lane. tests/test_passes_block.c compares them bit for bit. A block
 * without an expansion (no Filter) runs in ops/cpu/conv_block_dw.c. */
#include <stdatomic.h>
#include <string.h>

#include "common/alloc.h"
#include "ops/cpu/conv_avx512.h"
#include "ops/cpu/conv_block.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/parallel.h"
#include "ops/defs.h"
#include "ops/kernel.h"

#ifdef CT__T16_X86
/* px output pixels from column ox of a row (px, k0, k1, S and nky constants where it is inlined),
 * 16 channels at mk, the taps of columns kx in [k0, k1) alone (the others outside the image: the
 * border pixels), at stride S: rows[q] is valid tap row q at column -1, w its nine weights
 * (three a row) in registers. Each input column of a row is loaded once and taken by every
 * pixel whose window holds it (three at stride 1), so a pixel's taps still come in (ky, kx)
 * order: dw_elem's sums, px chains of adds in flight; then + bias and the activation,
 * stored at o (the row's first pixel). The load address steps by ep through an empty asm:
 * unrolled, the compiler kept one precomputed offset per tap and pixel, more than there are
 * registers, and read them back from the stack. */
__attribute__((always_inline, target("avx512f"))) static inline void dw_block_avx512(
    const int px, const int k0, const int k1, const int S, const int nky,
    const float *const rows[3], const __m512 w[9], int64_t ox, int64_t ep, __mmask16 mk,
    bool hb, __m512 bias, int act, __m512 vlo, __m512 vhi, float *o) {
  __m512 acc[8];
  _Pragma("GCC unroll 8") for (int p = 0; p < px; p++) acc[p] = _mm512_setzero_ps();
  _Pragma("GCC unroll 3") for (int q = 0; q < nky; q++) {
    const float *xp = rows[q] + (ox * S + k0) * ep;
    _Pragma("GCC unroll 24") for (int j = k0; j < (px - 1) * S + k1; j++) {
      const __m512 x = _mm512_maskz_loadu_ps(mk, xp);
      xp += ep;
      __asm__("" : "+r"(xp));
      _Pragma("GCC unroll 3") for (int kx = k0; kx < k1; kx++) {
        const int d = j - kx;
        if (d >= 0 && d % S == 0 && d / S < px) {
          acc[d / S] = _mm512_add_ps(acc[d / S], _mm512_mul_ps(w[q * 3 + kx], x));
        }
      }
    }
  }
  _Pragma("GCC unroll 8") for (int p = 0; p < px; p++) {
    __m512 v = hb ? _mm512_add_ps(acc[p], bias) : acc[p];
    _mm512_mask_storeu_ps(o + (ox + p) * ep, mk, ct__conv_act_f32(v, act, vlo, vhi));
  }
}

/* One output row's 16 channels at mk from nky valid tap rows at stride S (both constants: the
 * nine weights stay in registers), into o (the row's first pixel). The pixels whose three
 * columns of taps all lie in the image ([1, xb)) go 8 at a time (8 chains of adds in flight:
 * one pixel at a time waited on each add's latency), the last few as one block of their count;
 * column 0 takes taps 1 and 2 alone (tap 1 alone in a row of one), the columns from xb on taps 0
 * and 1 (OW is (W - 1) / S + 1, so tap 1's column ox S is always inside the row). */
__attribute__((always_inline, target("avx512f"))) static inline void dw_row_avx512(
    const int nky, const int S, const float *row0, int64_t w_in, int64_t ky0, const float *wt,
    int64_t xb, int64_t ow, int64_t ep, __mmask16 mk, bool hb, __m512 bias, int act,
    __m512 vlo, __m512 vhi, float *o) {
  __m512 w[9];
  const float *rows[3];
  _Pragma("GCC unroll 3") for (int q = 0; q < nky; q++) {
    rows[q] = row0 + q * w_in * ep;
    _Pragma("GCC unroll 3") for (int kx = 0; kx < 3; kx++) {
      w[q * 3 + kx] = _mm512_maskz_loadu_ps(mk, wt + ((ky0 + q) * 3 + kx) * ep);
    }
  }
#define DW_BLOCK(PX, K0, K1, OX) \
  dw_block_avx512(PX, K0, K1, S, nky, rows, w, OX, ep, mk, hb, bias, act, vlo, vhi, o)
  if (w_in >= 2) {
    DW_BLOCK(1, 1, 3, 0);
  } else {
    DW_BLOCK(1, 1, 2, 0);
  }
  int64_t ox = 1;
  for (; ox + 8 <= xb; ox += 8) DW_BLOCK(8, 0, 3, ox);
  switch (xb - ox) {
    case 1: DW_BLOCK(1, 0, 3, ox); break;
    case 2: DW_BLOCK(2, 0, 3, ox); break;
    case 3: DW_BLOCK(3, 0, 3, ox); break;
    case 4: DW_BLOCK(4, 0, 3, ox); break;
    case 5: DW_BLOCK(5, 0, 3, ox); break;
    case 6: DW_BLOCK(6, 0, 3, ox); break;
    case 7: DW_BLOCK(7, 0, 3, ox); break;
    default: break;
  }
  for (ox = xb; ox < ow; ox++) DW_BLOCK(1, 0, 2, ox);
#undef DW_BLOCK
}

/* dw_row_avx512 for each count of tap rows and stride, each a function of its own (inlined into
 * one, they took more registers than there are). */
#define DW_ROW_FN(N, S)                                                                       \
  __attribute__((noinline, target("avx512f"))) static void dw_row##N##_s##S##_avx512(         \
      const float *row0, int64_t w_in, int64_t ky0, const float *wt, int64_t xb, int64_t ow,   \
      int64_t ep, __mmask16 mk, bool hb, __m512 bias, int act, __m512 vlo, __m512 vhi,        \
      float *o) {                                                                             \
    dw_row_avx512(N, S, row0, w_in, ky0, wt, xb, ow, ep, mk, hb, bias, act, vlo, vhi, o);    \
  }
DW_ROW_FN(1, 1)
DW_ROW_FN(2, 1)
DW_ROW_FN(3, 1)
DW_ROW_FN(1, 2)
DW_ROW_FN(2, 2)
DW_ROW_FN(3, 2)
#undef DW_ROW_FN

typedef void (*dw_row_fn)(const float *row0, int64_t w_in, int64_t ky0, const float *wt,
                          int64_t xb, int64_t ow, int64_t ep, __mmask16 mk, bool hb,
                          __m512 bias, int act, __m512 vlo, __m512 vhi, float *o);

/* The depthwise rows [oy0, oy1) of the band in float32, channels [c0, c1) (c0 a multiple of 16)
 * along the lanes, 16 at a time (the last masked): dw_elem's sums in every lane, then + bias and
 * the activation in the pass's operand order (ct__conv_act_f32), a row at a time
 * (dw_row_avx512). Before, every tap was a load (each input value loaded three times at stride
 * 1), the weights and the loads' addresses came from the stack, the first and last pixels of a
 * row went through a pixel-by-pixel loop with bounds checks and the last few interior ones as
 * an 8-pixel block overlapping the one before. */
__attribute__((target("avx512f"))) static void dw_rows_avx512(const ir_run *r, const float *t1,
                                                             int64_t lo, float *t2, int64_t oy0,
                                                             int64_t oy1, const float *wt,
                                                             int64_t c0, int64_t c1) {
  /* by stride and count of tap rows inside the image (1 to 3: each output row has its own) */
  static const dw_row_fn rows_fn[2][4] = {
      {NULL, dw_row1_s1_avx512, dw_row2_s1_avx512, dw_row3_s1_avx512},
      {NULL, dw_row1_s2_avx512, dw_row2_s2_avx512, dw_row3_s2_avx512}};
  const ct__ir_geom *g = &r->g;
  const int64_t ep = r->ep, s = g->s, xb = g->w >= 2 ? (g->w - 2) / s + 1 : 1;
  const float *b2 = r->b2;
  const bool hb = b2 != NULL;
  const int act = r->act2;
  const __m512 vlo = _mm512_set1_ps((float)r->lo2), vhi = _mm512_set1_ps((float)r->hi2);
  for (int64_t oy = oy0; oy < oy1; oy++) {
    float *orow = t2 + (oy - oy0) * g->ow * ep;
    /* The tap rows inside the image: ky0 .. ky0 + nky - 1, from input row iy0 on. */
    const int64_t iy0 = oy * s - 1 < 0 ? 0 : oy * s - 1;
    const int64_t iy1 = oy * s + 2 > g->h ? g->h : oy * s + 2;
    const int nky = (int)(iy1 - iy0);
    const int64_t ky0 = iy0 - (oy * s - 1);
    const dw_row_fn fn = rows_fn[s - 1][nky];
    for (int64_t e0 = c0; e0 < c1; e0 += 16) {
      __mmask16 mk = c1 - e0 >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (c1 - e0)) - 1);
      __m512 bias = b2 == NULL ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mk, b2 + e0);
      fn(t1 + ((iy0 - lo) * g->w - 1) * ep + e0, g->w, ky0, wt + e0, xb, g->ow, ep, mk, hb, bias,
         act, vlo, vhi, orow + e0);
    }
  }
}
#endif

/* The expansion's GEMM for p pixels of an image (X^T W1^T into T1, channels-last) when `left`
 * pixels of the image lie from the first on. `round` (r->round_px: its plan puts the pixels
 * along the kernel's columns and the kernel stores such tiles transposed): rounded up to whole
 * slivers of 32 where the image has them (their values are the next rows', computed again by
 * the next band), so that the GEMM's tiles are whole (an edge tile is stored element by
 * element); along its rows, any count costs what it computes. Operands a and c are the
 * caller's. */
static ct__gemm expand_gemm(const ir_run *r, int64_t p, int64_t left, bool round) {
  int64_t m = round ? (p + 31) / 32 * 32 : p;
  return (ct__gemm){.ta = true, .tb = true, .m = m < left ? m : left, .n = r->g.e, .k = r->g.c,
                    .alpha = 1, .beta = 0, .lda = r->g.h * r->g.w, .b = r->w1, .ldb = r->g.c,
                    .ldc = r->ep, .b_packed = r->w1p, .b_packed_w = r->w1w,
                    .epi = r->has_e1 ? &r->e1 : NULL};
}

/* The projection's GEMM for p output pixels (W3 T2^T into Output's planes); operands b and c
 * and the epilogue are the caller's. */
static ct__gemm project_gemm(const ir_run *r, int64_t p) {
  return (ct__gemm){.ta = false, .tb = true, .m = r->g.m, .n = p, .k = r->g.e, .alpha = 1,
                    .beta = 0, .a = r->w3, .lda = r->g.e, .ldb = r->ep, .a_in_place = true,
                    .ldc = r->g.oh * r->g.ow, .a_packed = r->w3p, .a_packed_w = r->w3w};
}

/* A band's depthwise rows, split by channels across the threads when the block runs in one
 * piece and its expansion is too small for ed_job (its GEMMs split themselves; inside a piece
 * of many, inline). */
typedef struct dw_job {
  const ir_run *r;
  const void *t1;
  void *t2;
  const void *wt;
  int64_t lo, oy0, oy1;
} dw_job;

/* A band's expansion and depthwise, split by the expanded channels across the threads when the
 * block runs in one piece (see ir_run.split_e): each thread computes its own columns of T1
 * (the GEMM's columns are independent sums) and then the depthwise of those channels, which
 * reads no other; the projection, a sum over all of them, runs after, splitting itself. */
typedef struct ed_job {
  const ir_run *r;
  const void *x;
  void *wt, *t1, *t2;
  int64_t lo, from, hi, oy0, oy1;
} ed_job;

/* The expanded channels a thread takes at least: a multiple of the width of the expansion's
 * slivers of columns on every kernel (32 on AVX-512 float32, 16 or 8 on the others), so that
 * a thread's columns of a packed Filter are whole slivers of the packing. */
#define ED_UNIT 32

/* The fewest chunks of 16 channels worth a thread for a band of `rows` output rows: about 1024
 * output pixels' worth (a 7 x 7 image of 960 channels splits in two, 32 us on one thread). */
static int64_t dw_grain(const ir_run *r, int64_t rows) {
  int64_t px = rows * r->g.ow;
  return px >= 1024 ? 1 : (1024 + px - 1) / px;
}

#define IR_KERNEL(T, SFX, GEMM, KEPT)                                                         \
  /* The depthwise rows as dw_rows_avx512 computes them, in plain C (float64, other CPUs), for  \
   * channels [c0, c1). */                                                                    \
  static void dw_rows_##SFX(const ir_run *r, const T *t1, int64_t lo, T *t2, int64_t oy0,     \
                            int64_t oy1, const T *wt, int64_t c0, int64_t c1) {               \
    const ct__ir_geom *g = &r->g;                                                             \
    const int64_t ep = r->ep, s = g->s;                                                       \
    for (int64_t oy = oy0; oy < oy1; oy++) {                                                  \
      for (int64_t ox = 0; ox < g->ow; ox++) {                                                \
        T *o = t2 + ((oy - oy0) * g->ow + ox) * ep;                                           \
        for (int64_t c = c0; c < c1; c++) o[c] = 0;                                           \
        for (int64_t ky = 0; ky < 3; ky++) {                                                  \
          int64_t iy = oy * s - 1 + ky;                                                       \
          if (iy < 0 || iy >= g->h) continue;                                                 \
          for (int64_t kx = 0; kx < 3; kx++) {                                                \
            int64_t ix = ox * s - 1 + kx;                                                     \
            if (ix < 0 || ix >= g->w) continue;                                               \
            const T *xi = t1 + ((iy - lo) * g->w + ix) * ep, *wk = wt + (ky * 3 + kx) * ep;   \
            CT__SIMD for (int64_t c = c0; c < c1; c++) o[c] = o[c] + wk[c] * xi[c];           \
          }                                                                                   \
        }                                                                                     \
        for (int64_t c = c0; c < c1; c++) o[c] = ir_dw_epi_##SFX(r, o[c], c);               \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
                                                                                              \
  /* The depthwise rows of job j, channel chunks of 16 [b, e). */                             \
  static void dw_chunks_##SFX(void *arg, int64_t b, int64_t e) {                              \
    const dw_job *j = arg;                                                                    \
    int64_t c1 = e * 16 < j->r->g.e ? e * 16 : j->r->g.e;                                     \
    DW_ROWS_##SFX(j->r, (const T *)j->t1, j->lo, (T *)j->t2, j->oy0, j->oy1, (const T *)j->wt, \
                  b * 16, c1);                                                                \
  }                                                                                           \
                                                                                              \
  /* The depthwise weights of channels [e0, e1) tap by tap: wt[t ep + c] = w2[c 9 + t]. */    \
  static void dw_weights_##SFX(const ir_run *r, T *wt, int64_t e0, int64_t e1) {              \
    const T *w2 = r->w2;                                                                      \
    for (int64_t t = 0; t < 9; t++) {                                                         \
      for (int64_t c = e0; c < e1; c++) wt[t * r->ep + c] = w2[c * 9 + t];                    \
    }                                                                                         \
  }                                                                                           \
                                                                                              \
  /* The expansion of job j's rows [from, hi) and the depthwise of its band, channels        \
   * [b ED_UNIT, e ED_UNIT): the expansion's GEMM over those columns of T1 (its Filter's rows  \
   * from b ED_UNIT, the bias from there), inline. The kept packing of the Filter is sliced   \
   * too when channel b ED_UNIT starts one of its slivers in one block of k: packed in either  \
   * role (the whole plan may swap its operands: slivers of the kernel's rows, 12 on AVX-512,  \
   * or of its columns) a sliver from channel c lies c k into the block, so the slice from    \
   * b ED_UNIT is this call's packing; the call takes it only in the role its own plan gives   \
   * it (the GEMM checks the width), else packs its columns itself. */                         \
  static void ed_units_##SFX(void *arg, int64_t b, int64_t e) {                               \
    const ed_job *j = arg;                                                                    \
    const ir_run *r = j->r;                                                                   \
    const ct__ir_geom *g = &r->g;                                                             \
    const int64_t e0 = b * ED_UNIT, e1 = e * ED_UNIT < g->e ? e * ED_UNIT : g->e;            \
    T *t1 = j->t1;                                                                            \
    if (j->from < j->hi) {                                                                    \
      ct__gemm p = expand_gemm(r, (j->hi - j->from) * g->w, (g->h - j->from) * g->w,          \
                               r->round_px);                                                  \
      ct__gemm_epi e1p = r->e1;                                                               \
      if (e1p.res != NULL) e1p.res = (const T *)e1p.res + e0;                                 \
      p.n = e1 - e0;                                                                          \
      p.a = (const T *)j->x + j->from * g->w;                                                 \
      p.b = (const T *)r->w1 + e0 * g->c;                                                     \
      p.b_packed = r->w1p != NULL && g->c <= CT__GEMM_KC && ED_UNIT % r->w1w == 0            \
                       ? (const T *)r->w1p + e0 * g->c : NULL;                                \
      p.c = t1 + (j->from - j->lo) * g->w * r->ep + e0;                                       \
      p.epi = r->has_e1 ? &e1p : NULL;                                                        \
      note((ir_run *)r, GEMM(&p));                                                            \
    }                                                                                         \
    if (j->from == j->lo) dw_weights_##SFX(r, j->wt, e0, e1); /* the piece's first band */    \
    DW_ROWS_##SFX(r, t1, j->lo, (T *)j->t2, j->oy0, j->oy1, (const T *)j->wt, e0, e1);        \
  }                                                                                           \
                                                                                              \
  /* Output rows [r0, r1) of image n, band after band, with the piece's buffer buf. */        \
  static void rows_##SFX(ir_run *r, int64_t n, int64_t r0, int64_t r1, T *buf) {              \
    const ct__ir_geom *g = &r->g;                                                             \
    const int64_t ep = r->ep, s = g->s, hw = g->h * g->w, ohw = g->oh * g->ow;                \
    T *wt = buf, *t2 = wt + 9 * ep, *t1 = t2 + r->br * g->ow * ep;                            \
    /* the depthwise weights tap by tap: here, or by each thread for its channels (split_e:   \
     * one thread transposing them all was a serial stretch of each small block) */           \
    if (!r->split_e) dw_weights_##SFX(r, wt, 0, g->e);                                        \
    const T *x = (const T *)r->x + n * g->c * hw;                                             \
    int64_t have_lo = 0, have_hi = 0; /* T1 holds input rows [have_lo, have_hi) */           \
    for (int64_t oy0 = r0; oy0 < r1; oy0 += r->br) {                                          \
      int64_t oy1 = oy0 + r->br < r1 ? oy0 + r->br : r1;                                      \
      int64_t lo = oy0 * s - 1 > 0 ? oy0 * s - 1 : 0;                                         \
      int64_t hi = (oy1 - 1) * s + 2 < g->h ? (oy1 - 1) * s + 2 : g->h;                       \
      int64_t from = lo;                                                                      \
      if (have_lo <= lo && lo < have_hi) { /* the previous band's last rows, kept */          \
        memmove(t1, t1 + (lo - have_lo) * g->w * ep,                                          \
                (size_t)((have_hi - lo) * g->w * ep) * sizeof(T));                            \
        from = have_hi;                                                                       \
      }                                                                                       \
      if (r->split_e) {                                                                       \
        ed_job j = {.r = r, .x = x, .wt = wt, .t1 = t1, .t2 = t2, .lo = lo, .from = from,      \
                    .hi = hi, .oy0 = oy0, .oy1 = oy1};                                         \
        ct__parallel_for((g->e + ED_UNIT - 1) / ED_UNIT, 1, ed_units_##SFX, &j);               \
      } else {                                                                                \
        if (from < hi) {                                                                      \
          ct__gemm p = expand_gemm(r, (hi - from) * g->w, hw - from * g->w,                   \
                                   r->round_px);                                              \
          p.a = x + from * g->w;                                                              \
          p.c = t1 + (from - lo) * g->w * ep;                                                 \
          note(r, GEMM(&p));                                                                  \
        }                                                                                     \
        dw_job j = {.r = r, .t1 = t1, .t2 = t2, .wt = wt, .lo = lo, .oy0 = oy0, .oy1 = oy1};   \
        ct__parallel_for((g->e + 15) / 16, dw_grain(r, oy1 - oy0), dw_chunks_##SFX, &j);       \
      }                                                                                       \
      have_lo = lo;                                                                           \
      have_hi = hi;                                                                           \
      ct__gemm_epi e3 = r->e3;                                                                \
      if (e3.res != NULL) e3.res = (const T *)r->res + n * g->m * ohw + oy0 * g->ow;          \
      ct__gemm q = project_gemm(r, (oy1 - oy0) * g->ow);                                      \
      q.b = t2;                                                                               \
      q.c = (T *)r->o + n * g->m * ohw + oy0 * g->ow;                                         \
      q.epi = r->has_e3 ? &e3 : NULL;                                                         \
      note(r, GEMM(&q));                                                                      \
    }                                                                                         \
  }                                                                                           \
                                                                                              \
  /* Item i, rows part i % parts of image i / parts, with piece p's buffer. */                 \
  static void item_##SFX(void *arg, int64_t i, int p) {                                       \
    ir_run *r = arg;                                                                          \
    int64_t q = i % r->parts, oh = r->g.oh;                                                   \
    rows_##SFX(r, i / r->parts, oh * q / r->parts, oh * (q + 1) / r->parts,                   \
               (T *)r->buf + p * r->piece_elems);                                             \
  }                                                                                           \
                                                                                              \
  /* Filter and ProjectFilter packed once for the GEMMs of a whole band, when constants. */   \
  static void kept_##SFX(const ct_kernel_ctx *c, ir_run *r) {                                 \
    int64_t elems;                                                                            \
    ct__gemm p = expand_gemm(r, r->br * r->g.s * r->g.w, r->g.h * r->g.w, r->round_px);       \
    p.a = r->x;                                                                               \
    r->w1p = KEPT(c, CT__IR_FILTER, 0, IR_PACK_TAG, &p, 1, 1, 0, &elems, &r->w1w);            \
    ct__gemm q = project_gemm(r, r->br * r->g.ow);                                            \
    r->w3p = KEPT(c, CT__IR_PFILTER, 0, IR_PACK_TAG, &q, 0, 1, 0, &elems, &r->w3w);           \
  }

#ifdef CT__T16_X86
#define DW_ROWS_f32(...) \
  (ct__conv_avx512() ? dw_rows_avx512(__VA_ARGS__) : dw_rows_f32(__VA_ARGS__))
#else
#define DW_ROWS_f32 dw_rows_f32
#endif
#define DW_ROWS_f64 dw_rows_f64

IR_KERNEL(float, f32, ct__gemm_f32, ct__gemm_kept_f32)
IR_KERNEL(double, f64, ct__gemm_f64, ct__gemm_kept_f64)

/* The band's rows: the most whose T1 and T2 fit BAND_BYTES (at least 1), then rounded up so
 * that a band's output pixels are whole slivers of 32 of the projection's GEMM (at most OH). */
static int64_t band_rows(const ct__ir_geom *g, int64_t ep, size_t es) {
  int64_t budget = BAND_BYTES / (int64_t)es / ep - (3 - g->s) * g->w - 32;
  int64_t br = budget / (g->s * g->w + g->ow);
  int64_t unit = 32;
  for (int64_t a = g->ow, b = 32; b != 0;) { /* 32 / gcd(OW, 32) rows a whole number of slivers */
    int64_t t = a % b;
    a = b;
    b = t;
    unit = 32 / a;
  }
  if (br < 1) br = 1;
  int64_t up = (br + unit - 1) / unit * unit;
  up = up > g->oh ? g->oh : up;
  /* Rounded up while both buffers stay within four budgets (L2): a 1000-pixel-wide image of 960
   * channels would otherwise take bands of 4 rows, 38 MB, where 1 fits. */
  int64_t bytes = ((((up - 1) * g->s + 3) * g->w + 32) + up * g->ow) * ep * (int64_t)es;
  br = bytes <= 4 * BAND_BYTES ? up : br;
  return br > g->oh ? g->oh : br;
}

static const void *in_or_null(const ct_kernel_ctx *c, size_t slot) {
  return ct_kernel_in_count(c, slot) > 0 ? ct__k_in_data(ct_kernel_in(c, slot, 0)) : NULL;
}

bool ct__ir_round_px(const ir_run *r, size_t es) {
  const ct__gemm q = expand_gemm(r, r->br * r->g.s * r->g.w, r->g.h * r->g.w, false);
  return es == sizeof(float) ? ct__gemm_stores_swapped_f32(&q) : ct__gemm_stores_swapped_f64(&q);
}

/* Items: whole images when there are as many as threads, else parts of each image's rows
 * (their bands' first rows of T1 computed twice, where two parts meet), on one piece a thread.
 * A piece alone (one image and one part, or nested) runs on the calling thread, its GEMMs on
 * all the threads. */
void ct__ir_split(ir_run *r, int64_t threads, bool expand) {
  const ct__ir_geom *g = &r->g;
  r->parts = g->n >= threads ? 1 : (threads + g->n - 1) / g->n;
  /* Small images in one piece, the GEMMs inside splitting their products across the threads,
   * unless each part gets MIN_PART_ROWS rows. Two parts of a 7 x 7 image expanded 9 rows for 7
   * and one part's share was the larger (MobileNetV2's 7 x 7 blocks at batch 1 on two threads
   * 1.4 times onnxruntime's, 1.16 so). A 14 x 14 image in one piece on two threads splits its
   * expansion by channels and its projection by pixels, so each thread reads half of T2 from
   * the other's cache (the depthwise of half the channels took 28 us, of all of them on one
   * thread 23); in two parts of 7 rows (8 expanded each) MobileNetV2's 14 x 14 blocks at batch
   * 1 on two threads took 124-152 us against 132-163. */
  if (g->oh * g->ow < SMALL_PIXELS && g->oh < MIN_PART_ROWS * r->parts) r->parts = 1;
  if (r->parts > g->oh) r->parts = g->oh;
  /* At least a band a part: a 7 x 7 image in one band left the second thread idle (MobileNetV2
   * at batch 1 on two threads ran at half speed) */
  if (r->br * r->parts > g->oh) r->br = (g->oh + r->parts - 1) / r->parts;
  r->items = g->n * r->parts;
  r->pieces = r->items < threads ? r->items : threads;
  /* Worth it when every thread gets a unit (else the split GEMM and 16-channel depthwise keep
   * more threads busy) and the expansion is a GEMM worth splitting. */
  r->split_e = expand && r->pieces == 1 && threads > 1 &&
               (g->e + ED_UNIT - 1) / ED_UNIT >= threads &&
               g->h * g->w * g->e * g->c >= ((int64_t)1 << 20);
}

static ct_status inverted_residual(const ct_kernel_ctx *c, size_t es) {
  ir_run r = {0};
  ct_status s = ct__inverted_residual_plan(c, &r.g);
  if (s != CT_OK) return s;
  const ct__ir_geom *g = &r.g;
  r.o = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (r.o == NULL) return ct_last_status();
  if (g->n == 0 || g->m == 0) return CT_OK;
  r.x = in_or_null(c, CT__IR_INPUT);
  r.w1 = in_or_null(c, CT__IR_FILTER);
  r.b1 = in_or_null(c, CT__IR_BIAS);
  r.w2 = in_or_null(c, CT__IR_DWFILTER);
  r.b2 = in_or_null(c, CT__IR_DWBIAS);
  r.w3 = in_or_null(c, CT__IR_PFILTER);
  r.b3 = in_or_null(c, CT__IR_PBIAS);
  r.res = in_or_null(c, CT__IR_RESIDUAL);
  const ct_attr_value *a = c->attr;
  r.e1 = (ct__gemm_epi){.res = r.b1, .ldr = 0, .act = ct__epi_act(a[CT__IR_ACT].u.s),
                        .lo = a[CT__IR_CLIP_MIN].u.f, .hi = a[CT__IR_CLIP_MAX].u.f};
  r.has_e1 = r.b1 != NULL || r.e1.act != CT__EPI_NONE;
  r.act2 = ct__epi_act(a[CT__IR_DW_ACT].u.s);
  r.lo2 = a[CT__IR_DW_CLIP_MIN].u.f;
  r.hi2 = a[CT__IR_DW_CLIP_MAX].u.f;
  r.e3 = (ct__gemm_epi){.bias = r.b3, .bias_inc = 1, .res = r.res, .ldr = g->oh * g->ow,
                        .act = ct__epi_act(a[CT__IR_P_ACT].u.s), .lo = a[CT__IR_P_CLIP_MIN].u.f,
                        .hi = a[CT__IR_P_CLIP_MAX].u.f};
  r.has_e3 = r.b3 != NULL || r.res != NULL || r.e3.act != CT__EPI_NONE;
  r.ep = g->e > 0 ? (g->e + 15) / 16 * 16 : 16;
  const bool expand = r.w1 != NULL; /* else the depthwise reads Input (conv_block_dw.c) */
  r.br = expand ? band_rows(g, r.ep, es) : ct__ir_dw_band_rows(g, es);
  ct__ir_split(&r, ct__parallel_nested() ? 1 : ct_get_num_threads(), expand);
  r.round_px = expand && ct__ir_round_px(&r, es);
  r.piece_elems = expand ? 9 * r.ep + r.br * g->ow * r.ep +
                               (((r.br - 1) * g->s + 3) * g->w + 32) * r.ep
                         : g->e * r.br * g->ow;
  const int64_t used = r.piece_elems;
  r.piece_elems = ct__piece_stride(used, es); /* where piece p's buffer lies */
  size_t bytes = (size_t)ct__pieces_elems(r.pieces, used, es) * es;
  r.buf = ct__work_take(bytes);
  if (r.buf == NULL) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY,
                          "out of host memory for the %zu-byte band buffers of Input '%s' (free "
                          "memory, or run without the executor's optimize option)",
                          bytes, ct_kernel_in_name(c, CT__IR_INPUT, 0));
  }
  atomic_init(&r.failed, false);
  ct__item_fn item = es == sizeof(float) ? item_f32 : item_f64;
  if (!expand) {
    ct__ir_dw_kept(c, &r, es);
    item = es == sizeof(float) ? ct__ir_dw_item_f32 : ct__ir_dw_item_f64;
  } else if (es == sizeof(float)) {
    kept_f32(c, &r);
  } else {
    kept_f64(c, &r);
  }
  /* Each piece starts with its share of the items; one done early takes the others' last */
  ct__parallel_items(r.items, (int)r.pieces, item, &r);
  ct__work_free(r.buf);
  if (atomic_load(&r.failed)) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY,
                          "out of host memory for the GEMM packing buffers of Input '%s' (free "
                          "memory, or run fewer images at once)",
                          ct_kernel_in_name(c, CT__IR_INPUT, 0));
  }
  return CT_OK;
}

static ct_status ir_f32(const ct_kernel_ctx *c) { return inverted_residual(c, sizeof(float)); }
static ct_status ir_f64(const ct_kernel_ctx *c) { return inverted_residual(c, sizeof(double)); }

static const ct__kernel_set kernels[] = {
    {"inverted_residual", CT__KERNELS([CT_FLOAT32] = ir_f32, [CT_FLOAT64] = ir_f64)},
};

const ct__kernel_table ct__cpu_conv_block = CT__TABLE(kernels);
