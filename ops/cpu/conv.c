/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/conv.c: conv2d, depthwise_conv2d and pool2d with their gradients on the CPU, float32
 * and float64, following the geometry plan of ops/defs/conv.c.
 *
 * conv2d per image and group: one GEMM (corten's, ops/cpu/gemm.h) multiplies the group's filters
 * [Mg, Cg KH KW] by col [Cg KH KW, OH OW], im2col's unfolding of the input, which the forward
 * packs into the GEMM straight from the image (pack_col) and the gradient writes out. Small images
 * (under BATCH_PIXELS outputs) unfold all images side by side and take one GEMM per group. A 1x1
 * filter with stride 1, no padding and no dilation reads the input as col directly. float32 3x3
 * filters at stride 1 (8 channels and filters or more, not the widest layers) take Winograd's
 * F(2x2, 3x3) instead (ops/cpu/winograd.c), forward and both gradients, or in the forward on
 * larger images F(4x4, 3x3) (ops/cpu/winograd4.c), their blocks of tiles split across threads;
 * other float32 forwards onto rows of at most 14 outputs take a direct loop with the output
 * channels in vector lanes (ops/cpu/conv_direct.c) on CPUs with AVX-512. Depthwise
 * groups (one input channel each) run a direct loop per output plane instead: their GEMM would be
 * a matrix-vector product per plane. The gradient: Filter@GRAD's transpose accumulates col dOut^T
 * over fixed chunks of images (each in image order, the chunks' sums then added in order into
 * Filter@GRAD, so the sum order follows the sizes alone), Input@GRAD folds W^T dOut back with
 * col2im.
 * pool2d walks each output's window (ct__pool_window); its gradient sends max's to the first
 * element equal to Out, avg's evenly over the window. Threads (docs/design/threads.md): the
 * per-image path splits across images (one-thread GEMMs) when there are enough of them, else
 * each GEMM threads itself; depthwise over planes (or bands of rows: conv_dw_bands), pool over
 * planes; conv2d_grad over its chunks. A GEMM's result does not depend on its threads, so
 * neither does the conv's. The kernels are in ops/cpu/conv_tmpl.h and pool_tmpl.h, included
 * once per dtype. */
#include <math.h>
#include <stdatomic.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <corten/op.h>

#include "ops/cpu/conv_avx512.h"
#include "ops/cpu/conv_direct.h"
#include "ops/cpu/conv_fusion.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/vmath.h"
#include "ops/cpu/winograd.h"
#include "common/alloc.h"

/* The short row copies of the depthwise planes as loops, not libc calls (GCC turns a copy loop
 * into memcpy, whose call costs more than a row of 7 to 16 values). */
#if defined(__GNUC__) && !defined(__clang__)
#define CONV_NO_LIBC_COPIES __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define CONV_NO_LIBC_COPIES
#endif

/* A conv2d run: the plan, whether there is nothing to multiply, whether the groups are
 * depthwise, whether the images share one GEMM per group (batched), and how many elements the
 * scratch needs (0: none): col, then t_elems more for the batched path's t. */
typedef struct conv_job {
  ct__conv_geom g;
  bool empty, depthwise, batched;
  int64_t col_elems, t_elems;
} conv_job;

/* Images of fewer output pixels than this share one GEMM per group (while the scratch stays
 * under BATCH_SCRATCH elements): many tiny GEMMs cost more in calls than the copies save. */
enum { BATCH_PIXELS = 256, BATCH_SCRATCH = 1 << 22 };

static ct_status conv_prepare(const ct_kernel_ctx *c, conv_job *j) {
  ct__conv_geom *g = &j->g;
  ct_status s = ct__conv_plan(c, ct_kernel_in(c, CT__CONV_INPUT, 0)->dims,
                              ct_kernel_in(c, CT__CONV_FILTER, 0)->dims, g);
  if (s != CT_OK) return s;
  int64_t cg = g->c / g->groups, mg = g->m / g->groups, k = cg * g->kh * g->kw;
  int64_t ohw = g->oh * g->ow;
  j->empty = g->n == 0 || mg == 0 || ohw == 0 || k == 0;
  j->depthwise = cg == 1 && g->groups > 1;
  bool direct = g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 &&
                g->pb == 0 && g->pl == 0 && g->pr == 0;
  j->col_elems = j->empty || j->depthwise || direct ? 0 : k * ohw;
  j->batched = j->col_elems > 0 && g->n > 1 && ohw < BATCH_PIXELS &&
               (k + mg) * g->n * ohw <= BATCH_SCRATCH;
  j->t_elems = j->batched ? mg * g->n * ohw : 0;
  if (j->batched) j->col_elems = k * g->n * ohw + j->t_elems;
  return CT_OK;
}

/* The working space of n elements (im2col's columns, Winograd's transforms), or NULL with
 * CT_ERR_OUT_OF_MEMORY naming the op. It is the thread's kept work buffer (common/alloc.h), so
 * a layer run again neither allocates nor faults its pages in (a malloc of 8 MiB or more went
 * back to the system at each free and faulted in at each call); the C library's when that is
 * taken (a convolution nested in another's pieces). Released with conv_scratch_free. */
static void *conv_scratch(const ct_kernel_ctx *c, int64_t n, size_t es) {
  bool fits = (uint64_t)n <= SIZE_MAX / es;
  void *p = fits ? ct__work_take((size_t)n * es) : NULL;
  if (p == NULL) {
    ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY,
                   "out of host memory for the %lld-element scratch buffer (im2col's or "
                   "Winograd's) of input Input variable '%s'",
                   (long long)n, ct_kernel_in_name(c, CT__CONV_INPUT, 0));
  }
  return p;
}

static void conv_scratch_free(void *p) { ct__work_free(p); }

/* How many pieces conv2d's per-image GEMM path splits the images into: one per thread when there
 * are at least as many images as threads (each piece then runs its GEMMs on one thread, with its
 * own col buffer for the gradient and its thread's GEMM buffers), else 1 (the images one after
 * the other, the GEMM's threads inside each). Each image's result is the same either way: a
 * GEMM's threads split its output, not its sums. */
static int conv_image_pieces(const conv_job *j) {
  int t = ct_get_num_threads();
  return t > 1 && !j->batched && !j->depthwise && !j->empty && j->g.n >= t ? t : 1;
}

/* conv2d_grad's chunks of images, fixed by the sizes alone so that Filter@GRAD (a sum over the
 * images) adds the same terms in the same order at every thread count: each chunk sums its
 * images in order, the chunks' sums add in order. At most GRAD_CHUNKS, fewer when their scratch
 * (a col and a Filter@GRAD partial each) would pass GRAD_SCRATCH elements. */
enum { GRAD_CHUNKS = 8, GRAD_SCRATCH = 1 << 22 };
static int64_t conv_grad_chunks(const conv_job *j) {
  const ct__conv_geom *g = &j->g;
  int64_t per = j->col_elems + g->m * (g->c / g->groups) * g->kh * g->kw;
  int64_t f = GRAD_SCRATCH / (per > 0 ? per : 1);
  if (f > GRAD_CHUNKS) f = GRAD_CHUNKS;
  if (f > g->n) f = g->n;
  return f < 1 ? 1 : f;
}

/* A GEMM's status, kept: a failure (out of memory for its packing buffers, on whichever thread
 * ran it) sets *failed, which the kernel reports after its pieces (conv_gemm_fail). */
static void conv_gemm_note(atomic_bool *failed, ct_status st) {
  if (st != CT_OK) atomic_store_explicit(failed, true, memory_order_relaxed);
}

static ct_status conv_gemm_fail(const ct_kernel_ctx *c) {
  return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY,
                        "out of host memory for the GEMM packing buffers of input Input variable "
                        "'%s' (free memory, or run fewer images at once)",
                        ct_kernel_in_name(c, CT__CONV_INPUT, 0));
}

/* Planes (or groups) per piece for a loop whose item touches `elems` elements: at least
 * CT__GRAIN_MEM elements of work a piece. */
static int64_t conv_grain(int64_t elems) {
  return elems >= CT__GRAIN_MEM ? 1 : CT__GRAIN_MEM / (elems > 0 ? elems : 1);
}

#ifdef CT__T16_X86
/* How many bands of rows a float32 depthwise conv (geometry g) runs in: one per thread when
 * there are fewer images than threads and the planes are large enough for a band to fill
 * cache lines (the GEMM of a 1x1 conv after it then splits each image's pixels among the
 * threads, band by band), else 1 (planes in parallel). */
static int64_t conv_dw_bands(const ct__conv_geom *g) {
  const int64_t t = ct__parallel_nested() ? 1 : ct_get_num_threads();
  return t > 1 && g->n < t && g->m == g->groups && g->oh >= 8 * t && g->ow >= 16 &&
                 ct__dw3_fits_f32(g)
             ? t
             : 1;
}
#endif

/* The outputs ox in [*x0, *x1) whose input column ox s + off lies in [0, w). */
static void conv_valid_range(int64_t off, int64_t s, int64_t w, int64_t ow, int64_t *x0,
                             int64_t *x1) {
  int64_t lo = off >= 0 ? 0 : (-off + s - 1) / s;
  int64_t hi = w - off <= 0 ? 0 : (w - off + s - 1) / s;
  if (hi > ow) hi = ow;
  if (lo > ow) lo = ow;
  *x0 = lo;
  *x1 = hi > lo ? hi : lo;
}

/* Whether pool windows are 2x2 at stride 2 tiling the image exactly (no padding, H = 2 OH,
 * W = 2 OW): every element in one whole window, the common case the kernels take apart. */
static bool pool_tiles2(const ct__conv_geom *g) {
  return g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->pt == 0 && g->pl == 0 &&
         g->h == 2 * g->oh && g->w == 2 * g->ow;
}

/* Whether each pool window is the whole image from its first element (global pooling: one
 * output a plane, no padding before it, the window reaching past the last row and column). */
static bool pool_whole(const ct__conv_geom *g) {
  return g->oh == 1 && g->ow == 1 && g->pt == 0 && g->pl == 0 && g->kh >= g->h && g->kw >= g->w;
}

/* dst[i] = src[2 i] for i < n (an im2col row at stride 2): the even elements of each pair of
 * vectors picked by one shuffle where the target has SSE2 (every x86-64), the rest one by one.
 * A pair reaches one element past its last even one, so the vectors stop before the last
 * output: src[2 n - 1] may lie past the row's memory.
 * pack_col's stride-2 rows (resnet18's stem and its downsampling convolutions) were element by
 * element: 8% of a run. */
static inline void copy_even_f32(float *dst, const float *src, int64_t n) {
  int64_t i = 0;
#ifdef __SSE2__
  for (; i + 4 < n; i += 4) {
    __m128 a = _mm_loadu_ps(src + 2 * i), b = _mm_loadu_ps(src + 2 * i + 4);
    _mm_storeu_ps(dst + i, _mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)));
  }
#endif
  for (; i < n; i++) dst[i] = src[2 * i];
}

static inline void copy_even_f64(double *dst, const double *src, int64_t n) {
  int64_t i = 0;
#ifdef __SSE2__
  for (; i + 2 < n; i += 2) {
    __m128d a = _mm_loadu_pd(src + 2 * i), b = _mm_loadu_pd(src + 2 * i + 2);
    _mm_storeu_pd(dst + i, _mm_unpacklo_pd(a, b));
  }
#endif
  for (; i < n; i++) dst[i] = src[2 * i];
}

/* The tags of conv2d's packed filters (ct__k_derived), above the width and the element size:
 * for im2col's GEMMs, and Winograd's U of each form. */
#define CONV_PACK_TAG ((uint64_t)1 << 32)
#define WINO_PACK_TAG ((uint64_t)2 << 32)
#define WINO4_PACK_TAG ((uint64_t)3 << 32)
#define DIRECT_PACK_TAG ((uint64_t)4 << 32)

/* One GEMM of a conv kernel, its failure noted in *FAILED. */
#define CONV_GEMM(FAILED, ...) conv_gemm_note((FAILED), CT__GEMM(GEMM, __VA_ARGS__))

/* ---- float32 3x3 convolutions as Winograd's F(2x2, 3x3) or F(4x4, 3x3) (ops/cpu/winograd.h) - */

/* Whether conv2d's float32 forward takes a Winograd path: the filter shapes it handles, for
 * images that go one GEMM each, or batched ones (several images of fewer than BATCH_PIXELS
 * outputs, which im2col puts in one GEMM) of WINO_BATCHED_SIDE or more a side. Measured at one
 * thread, 8 images against the batched GEMM: 256 x 256 filters on 14 x 14 12.7 against 18.0 ms,
 * 128 x 128 on 12 x 12 3.2 against 4.1; 64 x 64 on 10 x 10 and 256 x 256 on 7 x 7 within noise
 * of it. The choice depends on the sizes alone, never on the thread count: the paths round
 * differently. */
enum { WINO_BATCHED_SIDE = 12 };
static bool conv_wino_fits(const conv_job *j) {
  const bool sized = !j->batched || (j->g.oh >= WINO_BATCHED_SIDE && j->g.ow >= WINO_BATCHED_SIDE);
  return sized && !j->depthwise && (ct__wino4_fits(&j->g) || ct__wino_fits(&j->g));
}

/* Whether conv2d's float32 forward takes a path of its own (Winograd's, else the direct loop
 * for small output widths) instead of im2col's GEMM. */
static bool conv_fast_fits(const conv_job *j) {
  return conv_wino_fits(j) || (!j->depthwise && ct__conv_direct_fits(&j->g));
}

/* Whether conv2d_grad's float32 Filter@GRAD takes F(2x2, 3x3)'s path (winograd.h): where that
 * form's forward would. */
static bool conv_wino_dw_fits(const conv_job *j) {
  return !j->batched && !j->depthwise && ct__wino_fits(&j->g);
}

/* Winograd's two forms (winograd.h): F(2x2, 3x3), and F(4x4, 3x3) for the larger images it
 * fits. The forward takes F(4x4, 3x3) where it fits (sizes alone); Input@GRAD and Filter@GRAD
 * take F(2x2, 3x3). */
typedef struct wino_algo {
  uint64_t tag; /* of U kept packed (ct__k_derived) */
  int64_t xi;   /* products: 16 or 36 */
  int64_t (*u_elems)(const ct__conv_geom *g);
  int64_t (*scratch_elems)(const ct__conv_geom *g);
  void (*filter)(const ct__conv_geom *g, const float *w, float *u);
  int64_t (*packed_elems)(const ct__conv_geom *g, int *width, bool *every_block);
  void (*pack)(const ct__conv_geom *g, const float *u, float *dst);
  int64_t (*blocks)(const ct__conv_geom *g);
  ct_status (*block)(const ct__conv_geom *g, const float *x, const ct__wino_u *u, int64_t b,
                     float *o, float *scratch, const ct__conv_epi *e, int64_t n);
  ct_status (*block_wide)(const ct__conv_geom *g, const float *x, const ct__wino_u *u, int64_t b,
                          float *o, float *scratch, int64_t parts, const ct__conv_epi *e,
                          int64_t n);
} wino_algo;

static const wino_algo wino_f2 = {WINO_PACK_TAG, 16, ct__wino_u_elems, ct__wino_scratch_elems,
                                  ct__wino_filter, ct__wino_packed_elems, ct__wino_pack,
                                  ct__wino_blocks, ct__wino_block, ct__wino_block_wide};
static const wino_algo wino_f4 = {WINO4_PACK_TAG, 36, ct__wino4_u_elems,
                                  ct__wino4_scratch_elems, ct__wino4_filter,
                                  ct__wino4_packed_elems, ct__wino4_pack, ct__wino4_blocks,
                                  ct__wino4_block, ct__wino4_block_wide};

/* The blocks of all images (a->blocks each), items of `pieces` pieces (each starting with its
 * share of consecutive blocks), each piece with its own scratch. A block's arithmetic is the
 * same whichever piece runs it. */
typedef struct wino_run {
  const wino_algo *a;
  const ct__conv_geom *g;
  const float *x;
  const ct__wino_u *u;
  float *o, *scratch;
  const ct__conv_epi *e;
  int64_t blocks, items, pieces, scratch_elems;
  atomic_bool *failed;
} wino_run;

/* Item it (block it % blocks of image it / blocks) with piece p's scratch. */
static void wino_item(void *arg, int64_t it, int p) {
  const wino_run *r = arg;
  const ct__conv_geom *g = r->g;
  const int64_t in = g->c * g->h * g->w, out = g->m * g->oh * g->ow, n = it / r->blocks;
  conv_gemm_note(r->failed, r->a->block(g, r->x + n * in, r->u, it % r->blocks, r->o + n * out,
                                        r->scratch + p * ct__piece_stride(r->scratch_elems,
                                                                           sizeof(float)),
                                        r->e, n));
}

/* U packed for the blocks' GEMMs, kept between runs when Filter is a constant of the executor
 * (ct__k_derived), made from the filters w at the first run (U computed into tmp first), with U
 * itself where the last block's GEMMs read it; false when nothing is kept. */
static bool wino_packed(const ct_kernel_ctx *c, const wino_algo *a, const ct__conv_geom *g,
                        const float *w, float *tmp, ct__wino_u *u) {
  if (!ct__k_is_constant(c, CT__CONV_FILTER, 0)) return false;
  int width;
  bool every;
  const int64_t pe = a->packed_elems(g, &width, &every), ue = a->u_elems(g);
  const size_t n = (size_t)(a->xi * pe + (every ? 0 : ue));
  bool fresh;
  float *d = ct__k_derived(c, CT__CONV_FILTER, 0, a->tag | (uint64_t)width << 8 | 4,
                           n * sizeof(float), &fresh);
  if (d == NULL) return false;
  if (fresh) {
    a->filter(g, w, tmp);
    a->pack(g, tmp, d);
    if (!every) memcpy(d + a->xi * pe, tmp, (size_t)ue * sizeof(float));
  }
  *u = (ct__wino_u){.u = every ? NULL : d + a->xi * pe, .packed = d, .packed_elems = pe,
                    .width = width};
  return true;
}

/* Output o of the convolution of plan g of x by the filters w [M, C, 3, 3] (Filter's own when
 * `filter`: then kept packed when it is a constant), then the epilogue e (NULL: none). */
static ct_status wino_conv(const ct_kernel_ctx *c, const wino_algo *a, const ct__conv_geom *g,
                           const float *x, const float *w, float *o, bool filter,
                           const ct__conv_epi *e) {
  wino_run r = {a, g, x, NULL, o, NULL, e, a->blocks(g), 0, 0, a->scratch_elems(g), NULL};
  const int64_t threads = ct__parallel_nested() ? 1 : ct_get_num_threads(); /* nested: inline */
  r.items = g->n * r.blocks;
  /* Fewer blocks than threads (one image of a few blocks): each block over all the threads. */
  const bool wide = r.items < threads;
  r.pieces = threads < r.items || wide ? threads : r.items;
  /* the pieces' buffers first, ct__piece_stride apart (the wide path's block_wide splits that
   * space its own way, scratch_elems a thread), then U */
  const int64_t u_elems = a->u_elems(g);
  const int64_t pe = ct__pieces_elems(r.pieces, r.scratch_elems, sizeof(float));
  float *buf = conv_scratch(c, pe + u_elems, sizeof(float));
  if (buf == NULL) return ct_last_status();
  ct__wino_u u = {.u = buf + pe};
  if (!filter || !wino_packed(c, a, g, w, buf + pe, &u)) a->filter(g, w, buf + pe);
  atomic_bool failed = false;
  r.u = &u;
  r.scratch = buf;
  r.failed = &failed;
  if (wide) {
    const int64_t in = g->c * g->h * g->w, out = g->m * g->oh * g->ow;
    for (int64_t it = 0; it < r.items; it++) {
      const int64_t n = it / r.blocks;
      conv_gemm_note(&failed, a->block_wide(g, x + n * in, &u, it % r.blocks, o + n * out,
                                            r.scratch, threads, e, n));
    }
  } else {
    ct__parallel_items(r.items, (int)r.pieces, wino_item, &r);
  }
  conv_scratch_free(buf);
  return atomic_load(&failed) ? conv_gemm_fail(c) : CT_OK;
}

/* conv2d's float32 forward through the direct loop (conv_direct.h), the filters packed for it
 * (kept between runs when Filter is a constant, else packed into the scratch); with a pool plan
 * pg (not NULL), conv2d_pool's: the max pool of that output into o. */
static ct_status conv_direct_pg(const ct_kernel_ctx *c, const ct__conv_geom *g,
                                const ct__conv_geom *pg, const float *x, const float *w,
                                float *o, const ct__conv_epi *e, const ct__fusion_epi *post) {
  const int64_t pe = ct__conv_direct_packed_elems(g);
  const int64_t se = pg != NULL ? ct__conv_direct_pool_scratch_elems(g, pg)
                                : ct__conv_direct_scratch_elems(g);
  bool fresh = false;
  const float *wp = ct__k_derived(c, CT__CONV_FILTER, 0, DIRECT_PACK_TAG | 4,
                                  (size_t)pe * sizeof(float), &fresh);
  if (wp != NULL && fresh) ct__conv_direct_pack(g, w, (float *)wp);
  float *buf = conv_scratch(c, se + (wp == NULL ? pe : 0), sizeof(float));
  if (buf == NULL) return ct_last_status();
  if (wp == NULL) {
    ct__conv_direct_pack(g, w, buf + se);
    wp = buf + se;
  }
  if (pg != NULL) {
    ct__conv_direct_pool_run(g, pg, x, wp, o, e, post, buf);
  } else {
    ct__conv_direct_run(g, x, wp, o, e, buf);
  }
  conv_scratch_free(buf);
  return CT_OK;
}

/* conv2d's float32 forward by one of the paths above, where conv_fast_fits. */
static ct_status conv_fast(const ct_kernel_ctx *c, const conv_job *j, float *o,
                           const ct__conv_epi *e, bool *applied) {
  *applied = e != NULL;
  const float *x = ct__k_in_data(ct_kernel_in(c, CT__CONV_INPUT, 0));
  const float *w = ct__k_in_data(ct_kernel_in(c, CT__CONV_FILTER, 0));
  if (conv_wino_fits(j)) {
    return wino_conv(c, ct__wino4_fits(&j->g) ? &wino_f4 : &wino_f2, &j->g, x, w, o, true, e);
  }
  return conv_direct_pg(c, &j->g, NULL, x, w, o, e, NULL);
}

/* Input@GRAD of a stride-1 3x3 conv is itself a 3x3 convolution: of Output@GRAD [N, M, OH, OW]
 * by the filters transposed and turned half a turn, W'[c][m][ky][kx] = W[m][c][2-ky][2-kx],
 * padded 2 - p on each side (so its output is H x W again). The plan of that convolution. */
static ct__conv_geom wino_dx_geom(const ct__conv_geom *g) {
  ct__conv_geom t = *g;
  t.c = g->m;
  t.m = g->c;
  t.h = g->oh;
  t.w = g->ow;
  t.oh = g->h;
  t.ow = g->w;
  t.pt = 2 - g->pt;
  t.pb = 2 - g->pb;
  t.pl = 2 - g->pl;
  t.pr = 2 - g->pr;
  return t;
}

/* Whether conv2d_grad's float32 Input@GRAD takes that convolution through Winograd's path: the
 * forward's conditions for the same images (sizes alone), paddings of at most 2, and the
 * transposed plan one the path takes. */
static bool conv_wino_dx_fits(const conv_job *j) {
  const ct__conv_geom *g = &j->g;
  if (j->batched || j->depthwise || g->pt > 2 || g->pb > 2 || g->pl > 2 || g->pr > 2) {
    return false;
  }
  ct__conv_geom t = wino_dx_geom(g);
  return ct__wino_fits(g) && ct__wino_fits(&t);
}

static ct_status conv_wino_dx(const ct_kernel_ctx *c, const conv_job *j, const float *w,
                              const float *d, float *dx) {
  const ct__conv_geom *g = &j->g;
  const int64_t mc = g->m * g->c;
  /* At most 65536 pairs (ct__wino_fits): from the C library, as the forward run below takes
   * the work buffer. */
  float *wt = ct__malloc((size_t)(9 * mc) * sizeof(float));
  if (wt == NULL) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY,
                          "out of host memory for the turned filters of input Filter variable "
                          "'%s'", ct_kernel_in_name(c, CT__CONV_FILTER, 0));
  }
  for (int64_t m = 0; m < g->m; m++) {
    for (int64_t ci = 0; ci < g->c; ci++) {
      const float *src = w + (m * g->c + ci) * 9;
      float *dst = wt + (ci * g->m + m) * 9;
      for (int k = 0; k < 9; k++) dst[k] = src[8 - k];
    }
  }
  ct__conv_geom t = wino_dx_geom(g);
  ct_status st = wino_conv(c, &wino_f2, &t, d, wt, dx, false, NULL);
  free(wt);
  return st;
}

/* conv2d_grad's float32 Filter@GRAD through Winograd's path (ct__wino_grad_block) when the
 * forward would take it: the blocks of all images in `chunks` fixed chunks (at most GRAD_CHUNKS,
 * fewer when their dU would pass GRAD_SCRATCH floats, one when a single dU does), each summing
 * its blocks in order into its own dU, the chunks' dU then added in chunk order, so the sums
 * follow the sizes alone (the same bits at every thread count); `pieces` threads run the
 * chunks, each with its scratch and lanes (none for a wide layer: its chunk's dU is its
 * accumulator). */
typedef struct wino_dw_run {
  const ct__conv_geom *g;
  const float *x, *d;
  float *du, *scratch;
  int64_t blocks, items, chunks, pieces, scratch_elems;
  atomic_bool *failed;
} wino_dw_run;

static void wino_dw_pieces(void *arg, int64_t b, int64_t e) {
  const wino_dw_run *r = arg;
  const ct__conv_geom *g = r->g;
  const int64_t in = g->c * g->h * g->w, out = g->m * g->oh * g->ow, u = ct__wino_u_elems(g);
  const int64_t nl = ct__wino_grad_lanes(g);
  for (int64_t p = b; p < e; p++) {
    float *lanes = r->scratch + p * (r->scratch_elems + nl), *s = lanes + nl;
    for (int64_t k = r->chunks * p / r->pieces; k < r->chunks * (p + 1) / r->pieces; k++) {
      float *acc = nl > 0 ? lanes : r->du + k * u;
      memset(acc, 0, (size_t)(nl > 0 ? nl : u) * sizeof(float));
      for (int64_t it = r->items * k / r->chunks; it < r->items * (k + 1) / r->chunks; it++) {
        int64_t n = it / r->blocks;
        conv_gemm_note(r->failed, ct__wino_grad_block(g, r->x + n * in, r->d + n * out,
                                                      it % r->blocks, acc, s));
      }
      if (nl > 0) ct__wino_grad_sum(g, lanes, r->du + k * u);
    }
  }
}

static ct_status conv_wino_dw(const ct_kernel_ctx *c, const conv_job *j, const float *x,
                              const float *d, float *dw) {
  const ct__conv_geom *g = &j->g;
  const int64_t u = ct__wino_u_elems(g), nl = ct__wino_grad_lanes(g);
  wino_dw_run r = {g, x, d, NULL, NULL, ct__wino_blocks(g), 0, 0, 0, ct__wino_scratch_elems(g),
                   NULL};
  r.items = g->n * r.blocks;
  r.chunks = GRAD_SCRATCH / u > 1 ? GRAD_SCRATCH / u : 1;
  if (r.chunks > GRAD_CHUNKS) r.chunks = GRAD_CHUNKS;
  if (r.chunks > r.items) r.chunks = r.items;
  const int64_t threads = ct__parallel_nested() ? 1 : ct_get_num_threads();
  r.pieces = threads < r.chunks ? threads : r.chunks;
  float *buf = conv_scratch(c, r.chunks * u + r.pieces * (r.scratch_elems + nl), sizeof(float));
  if (buf == NULL) return ct_last_status();
  atomic_bool failed = false;
  r.du = buf;
  r.scratch = buf + r.chunks * u;
  r.failed = &failed;
  ct__parallel_for(r.pieces, 1, wino_dw_pieces, &r);
  if (!atomic_load(&failed)) {
    for (int64_t k = 1; k < r.chunks; k++) {
      const float *t = r.du + k * u;
      for (int64_t i = 0; i < u; i++) r.du[i] += t[i];
    }
    ct__wino_filter_grad(g, r.du, dw);
  }
  conv_scratch_free(buf);
  return atomic_load(&failed) ? conv_gemm_fail(c) : CT_OK;
}

#define T float
#define SFX(name) name##_f32
#define GEMM ct__gemm_f32
#define GEMM_KEPT ct__gemm_kept_f32
#define CONV_FAST_FITS conv_fast_fits
#define CONV_FAST_RUN conv_fast
#ifdef CT__T16_X86
#define POOL_MAX_S2 ct__pool_max_s2_f32
#endif
#define CONV_FAST_DX_FITS conv_wino_dx_fits
#define CONV_FAST_DX_RUN conv_wino_dx
#define CONV_FAST_DW_FITS conv_wino_dw_fits
#define CONV_FAST_DW_RUN conv_wino_dw
#include "ops/cpu/conv_tmpl.h"
#include "ops/cpu/pool_tmpl.h"
#undef T
#undef SFX
#undef GEMM
#undef GEMM_KEPT
#undef CONV_FAST_FITS
#undef CONV_FAST_RUN
#undef POOL_MAX_S2
#undef CONV_FAST_DX_FITS
#undef CONV_FAST_DX_RUN
#undef CONV_FAST_DW_FITS
#undef CONV_FAST_DW_RUN

#define T double
#define SFX(name) name##_f64
#define GEMM ct__gemm_f64
#define GEMM_KEPT ct__gemm_kept_f64
#include "ops/cpu/conv_tmpl.h"
#include "ops/cpu/pool_tmpl.h"
#undef T
#undef SFX
#undef GEMM
#undef GEMM_KEPT

ct_status ct__conv_direct_pooled(const ct_kernel_ctx *c, const ct__conv_epi *e,
                                 const ct__fusion_epi *post, bool *taken) {
  conv_job j;
  ct__conv_geom pg;
  const ct_kernel_ctx pc = ct__cpool_pool_view(c);
  ct_status st = conv_prepare(c, &j);
  if (st == CT_OK) st = ct__pool_plan(&pc, ct__conv_out_dims(&j.g), &pg);
  /* conv2d's float32 forward would take the direct loop: not Winograd's path, nor im2col's */
  *taken = st == CT_OK && !j.empty && conv_fast_fits(&j) && !conv_wino_fits(&j);
  if (!*taken) return st;
  float *o = ct__k_out_data(c, CT__OUT, 0, CT_FLOAT32);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  return conv_direct_pg(c, &j.g, &pg, ct__k_in_data(ct_kernel_in(c, CT__CONV_INPUT, 0)),
                        ct__k_in_data(ct_kernel_in(c, CT__CONV_FILTER, 0)), o, e, post);
}
ct_status ct__cpu_conv2d_f32(const ct_kernel_ctx *c) { return conv2d_f32(c); }
ct_status ct__cpu_conv2d_f64(const ct_kernel_ctx *c) { return conv2d_f64(c); }
ct_status ct__cpu_conv2d_epi_f32(const ct_kernel_ctx *c, const ct__conv_epi *e, bool *applied) {
  return conv2d_epi_f32(c, e, applied);
}
ct_status ct__cpu_conv2d_epi_f64(const ct_kernel_ctx *c, const ct__conv_epi *e, bool *applied) {
  return conv2d_epi_f64(c, e, applied);
}

static const ct__kernel_set kernels[] = {
    {"conv2d", CT__KERNELS_F32_F64(conv2d)},
    {"conv2d_fusion", CT__KERNELS_F32_F64(ct__cpu_conv2d_fusion)},
    {"conv2d_pool", CT__KERNELS_F32_F64(ct__cpu_conv2d_pool)},
    {"depthwise_conv2d", CT__KERNELS_F32_F64(conv2d)},
    {"conv2d_grad", CT__KERNELS_F32_F64(conv2d_grad)},
    {"depthwise_conv2d_grad", CT__KERNELS_F32_F64(conv2d_grad)},
    {"pool2d", CT__KERNELS_F32_F64(ct__cpu_pool2d)},
    {"pool2d_grad", CT__KERNELS_F32_F64(pool2d_grad)},
};

const ct__kernel_table ct__cpu_conv = CT__TABLE(kernels);
