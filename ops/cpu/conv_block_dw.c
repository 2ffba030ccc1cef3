/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/conv_block_dw.c: inverted_residual without an expansion (no Filter: MobileNetV2's
 * first block, a 3x3 depthwise convolution then the projection) on the CPU.
 *
 * Each image's output rows go in bands, as the other blocks' do. For a band, the depthwise of
 * every channel goes into the piece's buffer as planes ([E][rows][OW], conv2d's layout), then
 * the projection is one GEMM, W3 times those planes read in place, into Output's rows with
 * ProjectBias, the residual and the activation in its epilogue. The buffer stays in L2, so the
 * depthwise output never goes out to memory whole: as two conv2d_fusion ops, MobileNetV2's 32
 * channels of 112 x 112 (1.6 MB) were written by one and read back by the other.
 *
 * The bits are the two ops': a depthwise row is ct__dw3_plane_f32's (dw_elem's sums, then the
 * pass's epilogue in registers), or where that does not apply (float64, a CPU without AVX-512,
 * a weight that is not finite) the same sums and steps in plain C, as dw_rows in conv_block.c
 * computes them channels-last; the projection's sums are the 1x1 conv's, whatever the layout
 * of its operands (gemm.md). tests/test_passes_block.c compares them bit for bit. */
#include <string.h>

#include "ops/cpu/conv_avx512.h"
#include "ops/cpu/conv_block.h"
#include "ops/cpu/conv_fusion.h"
#include "ops/cpu/parallel.h"

int64_t ct__ir_dw_band_rows(const ct__ir_geom *g, size_t es) {
  int64_t row = g->e * g->ow * (int64_t)es;
  int64_t br = BAND_BYTES / row;
  if (br < 1) br = 1;
  /* rounded up to whole slivers of 32 of the projection's pixels while within two budgets */
  int64_t unit = 32;
  for (int64_t a = g->ow, b = 32; b != 0;) {
    int64_t t = a % b;
    a = b;
    b = t;
    unit = 32 / a;
  }
  int64_t up = (br + unit - 1) / unit * unit;
  if (up * row <= 2 * BAND_BYTES) br = up;
  return br > g->oh ? g->oh : br;
}

/* The projection's GEMM for output rows [oy0, oy1) of an image: W3 [M, E] times the band's
 * planes [E, rows OW]; operands b and c and the epilogue are the caller's. */
static ct__gemm dw_project_gemm(const ir_run *r, int64_t oy0, int64_t oy1) {
  const int64_t px = (oy1 - oy0) * r->g.ow;
  return (ct__gemm){.m = r->g.m, .n = px, .k = r->g.e, .alpha = 1, .beta = 0, .a = r->w3,
                    .lda = r->g.e, .ldb = px, .b_in_place = true, .ldc = r->g.oh * r->g.ow,
                    .a_packed = r->w3p, .a_packed_w = r->w3w};
}

void ct__ir_dw_kept(const ct_kernel_ctx *c, ir_run *r, size_t es) {
  int64_t elems;
  ct__gemm q = dw_project_gemm(r, 0, r->br);
  if (es == sizeof(float)) {
    r->w3p = ct__gemm_kept_f32(c, CT__IR_PFILTER, 0, IR_PACK_TAG, &q, 0, 1, 0, &elems, &r->w3w);
  } else {
    r->w3p = ct__gemm_kept_f64(c, CT__IR_PFILTER, 0, IR_PACK_TAG, &q, 0, 1, 0, &elems, &r->w3w);
  }
}

#ifdef CT__T16_X86
/* ct__dw3_plane_f32 on rows [oy0, oy1) of channel c of image n (false where it does not
 * apply). */
static bool dwp_fast(const ir_run *r, const float *x, int64_t n, int64_t c, float *o,
                     int64_t oy0, int64_t oy1) {
  const ct__ir_geom *g = &r->g;
  const ct__conv_geom cg = {.n = g->n, .c = g->e, .h = g->h, .w = g->w, .m = g->e,
                            .groups = g->e, .kh = 3, .kw = 3, .oh = g->oh, .ow = g->ow,
                            .sh = g->s, .sw = g->s, .dh = 1, .dw = 1, .pt = 1, .pb = 1, .pl = 1,
                            .pr = 1};
  const ct__conv_epi ep = {.bias = r->b2, .n_bias = g->e, .act = r->act2, .lo = r->lo2,
                           .hi = r->hi2};
  return ct__dw3_plane_f32(&cg, x, (const float *)r->w2 + c * 9, o, &ep, n, c, oy0, oy1);
}
#else
static bool dwp_fast(const ir_run *r, const float *x, int64_t n, int64_t c, float *o,
                     int64_t oy0, int64_t oy1) {
  (void)r, (void)x, (void)n, (void)c, (void)o, (void)oy0, (void)oy1;
  return false;
}
#endif

/* The depthwise of a band: channels [b, e) of image n's rows [oy0, oy1) into planes of
 * (oy1 - oy0) OW values from buf. */
typedef struct dwp_job {
  const ir_run *r;
  void *buf;
  int64_t n, oy0, oy1;
} dwp_job;

#define DWP_KERNEL(T, SFX, GEMM)                                                              \
  /* Rows [oy0, oy1) of channel c's depthwise plane from x (the channel's input plane) into  \
   * o (row oy0's first value): each output's taps inside the image in (ky, kx) order from 0, \
   * a multiply then an add, then + bias and the activation, as conv2d_fusion rounds them.    \
   * Where ct__dw3_plane_f32 takes the rows it does, with the same bits. */                   \
  static void dwp_rows_##SFX(const ir_run *r, const T *x, int64_t n, int64_t c, T *o,         \
                             int64_t oy0, int64_t oy1) {                                      \
    const ct__ir_geom *g = &r->g;                                                             \
    const T *w = (const T *)r->w2 + c * 9;                                                    \
    if (sizeof(T) == 4 && dwp_fast(r, (const float *)x, n, c, (float *)o, oy0, oy1)) return;   \
    for (int64_t oy = oy0; oy < oy1; oy++) {                                                  \
      T *row = o + (oy - oy0) * g->ow;                                                        \
      for (int64_t ox = 0; ox < g->ow; ox++) {                                                \
        T acc = 0;                                                                            \
        for (int64_t ky = 0; ky < 3; ky++) {                                                  \
          const int64_t iy = oy * g->s - 1 + ky;                                              \
          if (iy < 0 || iy >= g->h) continue;                                                 \
          for (int64_t kx = 0; kx < 3; kx++) {                                                \
            const int64_t ix = ox * g->s - 1 + kx;                                            \
            if (ix >= 0 && ix < g->w) acc = acc + w[ky * 3 + kx] * x[iy * g->w + ix];         \
          }                                                                                   \
        }                                                                                     \
        row[ox] = ir_dw_epi_##SFX(r, acc, c);                                                 \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
                                                                                              \
  static void dwp_channels_##SFX(void *arg, int64_t b, int64_t e) {                           \
    const dwp_job *j = arg;                                                                   \
    const ct__ir_geom *g = &j->r->g;                                                          \
    const int64_t hw = g->h * g->w, px = (j->oy1 - j->oy0) * g->ow;                           \
    for (int64_t c = b; c < e; c++) {                                                         \
      dwp_rows_##SFX(j->r, (const T *)j->r->x + (j->n * g->c + c) * hw, j->n, c,              \
                     (T *)j->buf + c * px, j->oy0, j->oy1);                                   \
    }                                                                                         \
  }                                                                                           \
                                                                                              \
  /* Output rows [r0, r1) of image n, band after band, with the piece's buffer buf: the       \
   * band's depthwise split by channels across the threads when the piece runs alone (inside \
   * a piece of many, inline), then its projection, which splits itself likewise. */          \
  static void dwp_image_rows_##SFX(ir_run *r, int64_t n, int64_t r0, int64_t r1, T *buf) {    \
    const ct__ir_geom *g = &r->g;                                                             \
    const int64_t ohw = g->oh * g->ow, bands = (r1 - r0 + r->br - 1) / r->br;                \
    for (int64_t b = 0; b < bands; b++) { /* as even as the rows go: no short last band */   \
      const int64_t oy0 = r0 + (r1 - r0) * b / bands, oy1 = r0 + (r1 - r0) * (b + 1) / bands;  \
      const int64_t px = (oy1 - oy0) * g->ow;                                                 \
      dwp_job j = {.r = r, .buf = buf, .n = n, .oy0 = oy0, .oy1 = oy1};                       \
      ct__parallel_for(g->e, px >= 1024 ? 1 : (1024 + px - 1) / px, dwp_channels_##SFX, &j);  \
      ct__gemm_epi e3 = r->e3;                                                                \
      if (e3.res != NULL) e3.res = (const T *)r->res + n * g->m * ohw + oy0 * g->ow;          \
      ct__gemm q = dw_project_gemm(r, oy0, oy1);                                              \
      q.b = buf;                                                                              \
      q.c = (T *)r->o + n * g->m * ohw + oy0 * g->ow;                                         \
      q.epi = r->has_e3 ? &e3 : NULL;                                                         \
      note(r, GEMM(&q));                                                                      \
    }                                                                                         \
  }                                                                                           \
                                                                                              \
  /* Item i (rows part i % parts of image i / parts) with piece p's buffer, as conv_block.c's  \
   * items run. */                                                                            \
  void ct__ir_dw_item_##SFX(void *arg, int64_t i, int p) {                                    \
    ir_run *r = arg;                                                                          \
    int64_t q = i % r->parts, oh = r->g.oh;                                                   \
    dwp_image_rows_##SFX(r, i / r->parts, oh * q / r->parts, oh * (q + 1) / r->parts,         \
                         (T *)r->buf + p * r->piece_elems);                                   \
  }

DWP_KERNEL(float, f32, ct__gemm_f32)
DWP_KERNEL(double, f64, ct__gemm_f64)
