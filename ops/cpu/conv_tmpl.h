/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/conv_tmpl.h: the CPU conv2d kernels (and depthwise_conv2d's) for one element type,
 * included by ops/cpu/conv.c once per dtype with T (the type), SFX(name) (name_f32 ...) and GEMM
 * (corten's GEMM for T, ops/cpu/gemm.h) defined. No include guard: it is a template. */

/* ---- im2col / col2im -------------------------------------------------------------------------
 * col is [Cg KH KW, OH OW] for the Cg channels at x (each H x W): row (ci, ky, kx), column
 * (oy, ox) holds x[ci, oy sh - pt + ky dh, ox sw - pl + kx dw], 0 in the padding; its rows are
 * ld elements apart (OH OW for one image; N OH OW when all images share one col, image n's
 * columns from n OH OW). col2im adds a col back into x (the transpose of the same map). */

static void SFX(im2col)(const ct__conv_geom *g, int64_t cg, const T *x, T *col, int64_t ld) {
  for (int64_t ci = 0; ci < cg; ci++) {
    for (int64_t ky = 0; ky < g->kh; ky++) {
      for (int64_t kx = 0; kx < g->kw; kx++, col += ld) {
        int64_t off = kx * g->dw - g->pl, x0, x1;
        conv_valid_range(off, g->sw, g->w, g->ow, &x0, &x1);
        for (int64_t oy = 0; oy < g->oh; oy++) {
          T *row = col + oy * g->ow;
          int64_t iy = oy * g->sh - g->pt + ky * g->dh;
          if (iy < 0 || iy >= g->h) {
            for (int64_t ox = 0; ox < g->ow; ox++) row[ox] = 0;
            continue;
          }
          const T *src = x + (ci * g->h + iy) * g->w + off;
          for (int64_t ox = 0; ox < x0; ox++) row[ox] = 0;
          if (g->sw == 1) {
            memcpy(row + x0, src + x0, (size_t)(x1 - x0) * sizeof(T));
          } else {
            for (int64_t ox = x0; ox < x1; ox++) row[ox] = src[ox * g->sw];
          }
          for (int64_t ox = x1; ox < g->ow; ox++) row[ox] = 0;
        }
      }
    }
  }
}

/* The GEMM's packing of one image's col (ct__gemm_pack_fn), straight from the image: row p of
 * col is tap (ci, ky, kx), column j output pixel (oy, ox); the values im2col would write, in the
 * GEMM's sliver layout, without the col buffer (written once, read once by the packing). */
typedef struct SFX(col_src) {
  const ct__conv_geom *g;
  const T *x; /* the image's channels of the group */
} SFX(col_src);

static void SFX(pack_col)(const void *ctx, int64_t p0, int64_t kc, int64_t j0, int64_t nc, int nr,
                          void *dst_) {
  const SFX(col_src) *cs = ctx;
  const ct__conv_geom *g = cs->g;
  T *dst = dst_;
  for (int64_t p = 0; p < kc; p++) {
    int64_t row = p0 + p, kx = row % g->kw, ky = row / g->kw % g->kh, ci = row / (g->kw * g->kh);
    int64_t off = kx * g->dw - g->pl, x0, x1;
    conv_valid_range(off, g->sw, g->w, g->ow, &x0, &x1);
    /* Columns j0 ... in order: output pixel (oy, ox), lane q of the sliver at d. Each step fills
     * the stretch that stays in one output row and one sliver. */
    int64_t oy = j0 / g->ow, ox = j0 % g->ow, q = 0;
    T *d = dst + p * nr;
    for (int64_t left = nc; left > 0;) {
      int64_t run = g->ow - ox;
      if (run > nr - q) run = nr - q;
      if (run > left) run = left;
      int64_t iy = oy * g->sh - g->pt + ky * g->dh, e = ox + run;
      int64_t va = ox > x0 ? ox : x0, vb = e < x1 ? e : x1; /* the columns inside the image */
      if (iy < 0 || iy >= g->h || vb < va) va = vb = e;
      T *t = d + q; /* t[o - ox]: output column o */
      for (int64_t o = ox; o < va; o++) t[o - ox] = 0;
      if (va < vb) { /* a pointer into the image only then */
        const T *src = cs->x + (ci * g->h + iy) * g->w + off + va * g->sw;
        if (g->sw == 1) {
          memcpy(t + (va - ox), src, (size_t)(vb - va) * sizeof(T));
        } else if (g->sw == 2) {
          SFX(copy_even)(t + (va - ox), src, vb - va);
        } else {
          for (int64_t o = va; o < vb; o++, src += g->sw) t[o - ox] = *src;
        }
      }
      for (int64_t o = vb; o < e; o++) t[o - ox] = 0;
      q += run;
      ox += run;
      left -= run;
      if (ox == g->ow) {
        ox = 0;
        oy++;
      }
      if (q == nr) {
        q = 0;
        d += kc * nr;
      }
    }
    for (; q > 0 && q < nr; q++) d[q] = 0; /* the last sliver's padding */
  }
}

static void SFX(col2im)(const ct__conv_geom *g, int64_t cg, const T *col, int64_t ld, T *x) {
  for (int64_t ci = 0; ci < cg; ci++) {
    for (int64_t ky = 0; ky < g->kh; ky++) {
      for (int64_t kx = 0; kx < g->kw; kx++, col += ld) {
        int64_t off = kx * g->dw - g->pl, x0, x1;
        conv_valid_range(off, g->sw, g->w, g->ow, &x0, &x1);
        for (int64_t oy = 0; oy < g->oh; oy++) {
          int64_t iy = oy * g->sh - g->pt + ky * g->dh;
          if (iy < 0 || iy >= g->h) continue;
          const T *row = col + oy * g->ow;
          T *dst = x + (ci * g->h + iy) * g->w + off;
          if (g->sw == 1) { /* contiguous: vectorises */
            for (int64_t ox = x0; ox < x1; ox++) dst[ox] += row[ox];
          } else {
            for (int64_t ox = x0; ox < x1; ox++) dst[ox * g->sw] += row[ox];
          }
        }
      }
    }
  }
}

#include "ops/cpu/conv_dw_tmpl.h"

/* ---- Small images: every image of a group in one GEMM ---------------------------------------
 * col [Cg KH KW, N OH OW] and t [Mg, N OH OW] (Output's or Output@GRAD's rows of the group, image
 * after image); forward multiplies once and scatters t into NCHW, the gradient gathers dOut into
 * t and multiplies once for each of dW and dcol. */

static void SFX(conv_grad_batched)(const conv_job *j, const T *x, const T *w, const T *d, T *dx,
                                   T *dw, T *col, T *t, atomic_bool *failed) {
  const ct__conv_geom *g = &j->g;
  const int64_t hw = g->h * g->w, ohw = g->oh * g->ow, cg = g->c / g->groups;
  const int64_t mg = g->m / g->groups, k = cg * g->kh * g->kw, ld = g->n * ohw;
  for (int64_t gi = 0; gi < g->groups; gi++) {
    for (int64_t n = 0; n < g->n; n++) {
      for (int64_t mo = 0; mo < mg; mo++) {
        memcpy(t + mo * ld + n * ohw, d + (n * g->m + gi * mg + mo) * ohw,
               (size_t)ohw * sizeof(T));
      }
    }
    if (dw != NULL) {
      for (int64_t n = 0; n < g->n; n++) {
        SFX(im2col)(g, cg, x + (n * g->c + gi * cg) * hw, col + n * ohw, ld);
      }
      CONV_GEMM(failed, false, true, mg, k, ld, 1, t, ld, col, ld, 0, dw + gi * mg * k, k);
    }
    if (dx != NULL) {
      CONV_GEMM(failed, true, false, k, ld, mg, 1, w + gi * mg * k, k, t, ld, 0, col, ld);
      for (int64_t n = 0; n < g->n; n++) {
        SFX(col2im)(g, cg, col + n * ohw, ld, dx + (n * g->c + gi * cg) * hw);
      }
    }
  }
}

/* ---- conv2d ------------------------------------------------------------------------------- */

/* One run of conv2d or its gradient; col holds `pieces` scratch buffers of j->col_elems each,
 * ct__piece_stride apart. */
typedef struct SFX(conv_run) {
  const conv_job *j;
  const T *x, *w, *d;
  T *o, *dx, *dw, *col, *part, *scratch; /* scratch: what to free */
  int64_t pieces;
  atomic_bool *failed; /* a GEMM failed (conv_gemm_note) */
  const T *wp;         /* the forward's filters packed for its GEMMs (conv_packed), or NULL: */
  int64_t wp_elems;    /* group gi's at wp + gi wp_elems, in slivers of wp_w */
  int wp_w;
  const ct__conv_epi *epi; /* the forward's epilogue (conv2d_fusion), or NULL */
  int64_t bands;           /* a depthwise run in bands of rows (dw_bands): how many */
} SFX(conv_run);

/* The epilogue of the GEMM of image n, group gi (its C: the group's Mg planes), into *ge; NULL
 * when the run has none. */
static const ct__gemm_epi *SFX(conv_gemm_epi)(const SFX(conv_run) *r, int64_t n, int64_t gi,
                                              ct__gemm_epi *ge) {
  const ct__conv_epi *e = r->epi;
  if (e == NULL) return NULL;
  const int64_t m0 = gi * (r->j->g.m / r->j->g.groups);
  *ge = (ct__gemm_epi){
      .bias = e->bias != NULL ? (const T *)e->bias + (e->n_bias == 1 ? 0 : m0) : NULL,
      .bias_inc = e->n_bias == 1 ? 0 : 1,
      .res = e->res != NULL ? (const T *)e->res + n * e->rs_n + m0 * e->rs_m : NULL,
      .ldr = e->rs_m,
      .act = e->act,
      .lo = e->lo,
      .hi = e->hi};
  return ge;
}

/* The epilogue on output plane (n, m) (ohw values at o) just computed, while it is in cache:
 * conv2d_fusion's own pass over the plane (ops/cpu/conv_fusion.c). */
static inline void SFX(epi_plane)(const ct__conv_epi *e, T *o, int64_t ohw, int64_t n,
                                  int64_t m) {
  SFX(ct__conv_epi_rows)(e, o, n, m, 0, ohw);
}

/* The forward's GEMM of group gi (without its B: the image, col or its packer), with the
 * filters packed beforehand when there are (conv_packed). */
static ct__gemm SFX(conv_fwd_gemm)(const SFX(conv_run) *r, int64_t gi, int64_t n_cols) {
  const ct__conv_geom *g = &r->j->g;
  const int64_t mg = g->m / g->groups, k = (g->c / g->groups) * g->kh * g->kw;
  return (ct__gemm){.m = mg, .n = n_cols, .k = k, .alpha = 1, .a = r->w + gi * mg * k, .lda = k,
                    .a_packed = r->wp != NULL ? r->wp + gi * r->wp_elems : NULL,
                    .a_packed_w = r->wp_w};
}

/* The images of group gi of a batched run: im2col's columns of images [b, e) (stage 0), or
 * their rows of t scattered into Output (stage 1). Images are independent: the pieces split
 * them across the threads (each stage had run on one thread while the GEMM between ran on
 * all: resnet18's 7x7 layers at batch 8 scaled 1.6x on two). */
typedef struct SFX(batch_stage) {
  const SFX(conv_run) *r;
  T *col, *t;
  int64_t gi;
  int stage;
} SFX(batch_stage);

static void SFX(batch_images)(void *arg, int64_t b, int64_t e) {
  const SFX(batch_stage) *s = arg;
  const ct__conv_geom *g = &s->r->j->g;
  const int64_t hw = g->h * g->w, ohw = g->oh * g->ow, cg = g->c / g->groups;
  const int64_t mg = g->m / g->groups, ld = g->n * ohw, gi = s->gi;
  for (int64_t n = b; n < e; n++) {
    if (s->stage == 0) {
      SFX(im2col)(g, cg, s->r->x + (n * g->c + gi * cg) * hw, s->col + n * ohw, ld);
      continue;
    }
    for (int64_t mo = 0; mo < mg; mo++) {
      memcpy(s->r->o + (n * g->m + gi * mg + mo) * ohw, s->t + mo * ld + n * ohw,
             (size_t)ohw * sizeof(T));
    }
  }
}

static void SFX(conv_batched)(const SFX(conv_run) *r, T *col, T *t) {
  const ct__conv_geom *g = &r->j->g;
  const int64_t ohw = g->oh * g->ow, cg = g->c / g->groups;
  const int64_t mg = g->m / g->groups, ld = g->n * ohw;
  const int64_t grain = CT__GRAIN_MEM / ((cg * g->kh * g->kw + mg) * ohw + 1) + 1;
  for (int64_t gi = 0; gi < g->groups; gi++) {
    SFX(batch_stage) s = {r, col, t, gi, 0};
    ct__parallel_for(g->n, grain, SFX(batch_images), &s);
    ct__gemm p = SFX(conv_fwd_gemm)(r, gi, ld);
    p.b = col;
    p.ldb = ld;
    p.c = t;
    p.ldc = ld;
    conv_gemm_note(r->failed, GEMM(&p));
    s.stage = 1;
    ct__parallel_for(g->n, grain, SFX(batch_images), &s);
  }
}

/* Filter packed for the forward's GEMMs, group after group, kept between runs when it is a
 * constant of the executor (ct__gemm_kept; packed at the first run): into r->wp. Left NULL
 * otherwise, and each GEMM packs its filters itself. */
static void SFX(conv_packed)(const ct_kernel_ctx *c, SFX(conv_run) *r) {
  const conv_job *j = r->j;
  const ct__conv_geom *g = &j->g;
  ct__gemm p = SFX(conv_fwd_gemm)(r, 0, j->batched ? g->n * g->oh * g->ow : g->oh * g->ow);
  if (!j->batched && j->col_elems > 0) p.pack_b = SFX(pack_col); /* as conv_image's */
  r->wp = GEMM_KEPT(c, CT__CONV_FILTER, 0, CONV_PACK_TAG, &p, 0, g->groups,
                    g->m / g->groups * p.k, &r->wp_elems, &r->wp_w);
}

/* The col buffer of piece p (NULL for a direct 1x1 conv). */
static T *SFX(conv_col)(const SFX(conv_run) *r, int64_t p) {
  return r->col != NULL ? r->col + p * ct__piece_stride(r->j->col_elems, sizeof(T)) : NULL;
}

/* Output of image n, all groups: one GEMM per group, its col packed from the image. */
static void SFX(conv_image)(const SFX(conv_run) *r, int64_t n) {
  const ct__conv_geom *g = &r->j->g;
  const int64_t hw = g->h * g->w, ohw = g->oh * g->ow, cg = g->c / g->groups;
  const int64_t mg = g->m / g->groups;
  for (int64_t gi = 0; gi < g->groups; gi++) {
    const T *x = r->x + (n * g->c + gi * cg) * hw;
    T *o = r->o + (n * g->m + gi * mg) * ohw;
    ct__gemm p = SFX(conv_fwd_gemm)(r, gi, ohw);
    ct__gemm_epi ge;
    p.c = o;
    p.ldc = ohw;
    p.epi = SFX(conv_gemm_epi)(r, n, gi, &ge);
    SFX(col_src) cs = {g, x}; /* col packed straight from the image: no col buffer */
    if (r->j->col_elems == 0) { /* 1x1, stride 1, no padding: the image is col */
      p.b = x;
      p.ldb = ohw;
    } else {
      p.pack_b = SFX(pack_col);
      p.pack_ctx = &cs;
    }
    conv_gemm_note(r->failed, GEMM(&p));
  }
}

/* The gradient of image n, all groups: Filter@GRAD's transpose, group by group [Cg KH KW, Mg],
 * += col dOut_g^T into dwt (a chunk's partial), and dcol = W_g^T dOut_g folded back into
 * Input@GRAD with col2im (or, direct, added to it by the GEMM). The transposed product is the
 * GEMM's faster shape here (the long K = OH OW, the 32 filters along C's rows of 32 lanes):
 * [144,1024] x [1024,32] takes 109 us at one thread against 120 for [32,1024] x [1024,144]. */
static void SFX(conv_image_grad)(const SFX(conv_run) *r, int64_t n, T *col, T *dwt) {
  const ct__conv_geom *g = &r->j->g;
  const int64_t hw = g->h * g->w, ohw = g->oh * g->ow, cg = g->c / g->groups;
  const int64_t mg = g->m / g->groups, k = cg * g->kh * g->kw;
  for (int64_t gi = 0; gi < g->groups; gi++) {
    const T *dg = r->d + (n * g->m + gi * mg) * ohw;
    if (dwt != NULL) {
      const T *b = r->x + (n * g->c + gi * cg) * hw;
      if (col != NULL) {
        SFX(im2col)(g, cg, b, col, ohw);
        b = col;
      }
      CONV_GEMM(r->failed, false, true, k, mg, ohw, 1, b, ohw, dg, ohw, 1, dwt + gi * mg * k,
                mg);
    }
    if (r->dx != NULL) {
      T *dxg = r->dx + (n * g->c + gi * cg) * hw;
      CONV_GEMM(r->failed, true, false, k, ohw, mg, 1, r->w + gi * mg * k, k, dg, ohw,
                col != NULL ? 0 : 1, col != NULL ? col : dxg, ohw);
      if (col != NULL) SFX(col2im)(g, cg, col, ohw, dxg);
    }
  }
}

/* Chunks [b, e) of conv2d_grad's r->pieces fixed chunks of images: chunk p sums its images'
 * Filter@GRAD, transposed by group, into its partial r->part + p M K (added into Filter@GRAD in
 * chunk order afterwards, conv_grad_fold). */
static void SFX(conv_grad_chunks)(void *arg, int64_t b, int64_t e) {
  const SFX(conv_run) *r = arg;
  const ct__conv_geom *g = &r->j->g;
  const int64_t n = g->n, mk = g->m * (g->c / g->groups) * g->kh * g->kw;
  for (int64_t p = b; p < e; p++) {
    T *dwt = r->dw == NULL ? NULL : r->part + p * mk;
    if (dwt != NULL) memset(dwt, 0, (size_t)mk * sizeof(T));
    for (int64_t i = n * p / r->pieces; i < n * (p + 1) / r->pieces; i++) {
      SFX(conv_image_grad)(r, i, SFX(conv_col)(r, p), dwt);
    }
  }
}

/* Filter@GRAD from the chunks' transposed partials: chunk 0's element, then each later chunk's
 * added in order (the order the partials summed into Filter@GRAD itself used to take). */
static void SFX(conv_grad_fold)(const SFX(conv_run) *r) {
  const ct__conv_geom *g = &r->j->g;
  const int64_t mg = g->m / g->groups, k = (g->c / g->groups) * g->kh * g->kw, mk = g->m * k;
  for (int64_t gi = 0; gi < g->groups; gi++) {
    T *dw = r->dw + gi * mg * k;
    for (int64_t p = 0; p < r->pieces; p++) {
      const T *t = r->part + p * mk + gi * mg * k;
      for (int64_t mo = 0; mo < mg; mo++) {
        if (p == 0) {
          for (int64_t kk = 0; kk < k; kk++) dw[mo * k + kk] = t[kk * mg + mo];
        } else {
          for (int64_t kk = 0; kk < k; kk++) dw[mo * k + kk] += t[kk * mg + mo];
        }
      }
    }
  }
}

/* Image i, an item of r->pieces (its GEMMs' buffers are its thread's). */
static void SFX(conv_image_item)(void *arg, int64_t i, int p) {
  (void)p;
  SFX(conv_image)(arg, i);
}

/* Depthwise planes [b, e) of N x groups: image i / groups, group i % groups; small planes a
 * block of channels at a time (dwc_block), or in float32 at stride 1 with AVX-512 flat, a plane
 * at a time (ct__dwf_plane_f32). Cloned per vector width (no contraction into FMAs:
 * -ffp-contract=off), so the same sums in wider lanes; the row copies of dw3_band stay loops. */
CT__VM_CLONES CONV_NO_LIBC_COPIES static void SFX(dw_planes)(void *arg, int64_t b, int64_t e) {
  const SFX(conv_run) *r = arg;
  const ct__conv_geom *g = &r->j->g;
  const int64_t hw = g->h * g->w, ohw = g->oh * g->ow, mg = g->m / g->groups;
  const int64_t k = g->kh * g->kw;
#ifdef CT__T16_X86 /* float32 3x3 small planes at stride 1 with AVX-512: flat, per plane */
  ct__dwf_plan flat;
  const bool fl = sizeof(T) == 4 && ct__dwf_plan_f32(g, &flat);
#else
  const bool fl = false;
#endif
  const bool blocks = !fl && SFX(dwc_fits)(g);
  /* image n, group gi of plane i, stepped along (a division per plane was a tenth of a 7 x 7
   * plane's time) */
  for (int64_t i = b, n = b / g->groups, gi = b % g->groups; i < e;) {
    if (blocks) { /* channels gi .. of image n, at most to the image's last and to e */
      int64_t cb = g->groups - gi < e - i ? g->groups - gi : e - i;
      if (cb > SFX(DWC_CB)) cb = SFX(DWC_CB);
      T *o = r->o + (n * g->m + gi) * ohw;
      const bool applied = SFX(dwc_block)(g, r->x + (n * g->c + gi) * hw, r->w + gi * k, o, cb,
                                          r->epi, gi);
      for (int64_t q = 0; r->epi != NULL && !applied && q < cb; q++) {
        SFX(epi_plane)(r->epi, o + q * ohw, ohw, n, gi + q);
      }
      i += cb;
      gi += cb;
      if (gi == g->groups) gi = 0, n++;
      continue;
    }
    for (int64_t mo = 0; mo < mg; mo++) {
      T *o = r->o + (n * g->m + gi * mg + mo) * ohw;
      const int64_t m = gi * mg + mo;
      const T *x = r->x + (n * g->c + gi) * hw, *w = r->w + m * k;
#ifdef CT__T16_X86
      if (fl && ct__dwf_plane_f32(&flat, (const float *)x, (const float *)w, (float *)o, r->epi,
                                  n, m)) {
        continue;
      }
#endif
      if (!SFX(dw_plane)(g, x, w, o, r->epi, n, m) && r->epi != NULL) {
        SFX(epi_plane)(r->epi, o, ohw, n, m);
      }
    }
    i++;
    if (++gi == g->groups) gi = 0, n++;
  }
}

#ifdef CT__T16_X86
/* Items [b, e) of r->bands bands of rows x N x groups, band-major: a thread takes the same rows
 * of every plane, the pixels the GEMM of a 1x1 conv after it takes of every channel when it
 * splits them (conv_dw_bands says when), so it reads what its own core wrote. A plane the
 * AVX-512 rows do not take (a weight that is not finite) goes whole with its first band. */
static void SFX(dw_bands)(void *arg, int64_t b, int64_t e) {
  const SFX(conv_run) *r = arg;
  const ct__conv_geom *g = &r->j->g;
  const int64_t planes = g->n * g->groups, hw = g->h * g->w, ohw = g->oh * g->ow;
  for (int64_t i = b; i < e; i++) {
    const int64_t band = i / planes, p = i % planes, gi = p % g->groups; /* 3x3: 9 weights */
    const int64_t oy0 = g->oh * band / r->bands, oy1 = g->oh * (band + 1) / r->bands;
    if (!ct__dw3_plane_f32(g, (const float *)(r->x + p * hw), (const float *)(r->w + gi * 9),
                           (float *)(r->o + p * ohw + oy0 * g->ow), r->epi, p / g->groups, gi,
                           oy0, oy1) &&
        band == 0) {
      SFX(dw_planes)(arg, p, p + 1);
    }
  }
}
#endif

/* Depthwise gradient of groups [b, e): each group's images in order (dFilter sums over them). */
static void SFX(dw_groups_grad)(void *arg, int64_t b, int64_t e) {
  const SFX(conv_run) *r = arg;
  const ct__conv_geom *g = &r->j->g;
  const int64_t hw = g->h * g->w, ohw = g->oh * g->ow, mg = g->m / g->groups;
  const int64_t k = g->kh * g->kw;
  for (int64_t gi = b; gi < e; gi++) {
    for (int64_t n = 0; n < g->n; n++) {
      for (int64_t mo = 0; mo < mg; mo++) {
        int64_t m = gi * mg + mo;
        SFX(dw_plane_grad)(g, r->x + (n * g->c + gi) * hw, r->w + m * k,
                           r->d + (n * g->m + m) * ohw,
                           r->dx != NULL ? r->dx + (n * g->c + gi) * hw : NULL,
                           r->dw != NULL ? r->dw + m * k : NULL);
      }
    }
  }
}

/* The run's scratch: pieces col buffers (none for a direct or depthwise conv; ct__piece_stride
 * apart), then `part` elements of Filter@GRAD partials. */
static ct_status SFX(conv_alloc)(const ct_kernel_ctx *c, SFX(conv_run) *r, int64_t part) {
  r->col = r->part = r->scratch = NULL;
  int64_t cols = ct__pieces_elems(r->pieces, r->j->col_elems, sizeof(T));
  if (cols + part == 0) return CT_OK;
  T *p = conv_scratch(c, cols + part, sizeof(T));
  if (p == NULL) return ct_last_status();
  r->col = cols > 0 ? p : NULL;
  r->part = part > 0 ? p + cols : NULL;
  r->scratch = p;
  return CT_OK;
}

/* conv2d; with e, conv2d_fusion's epilogue where the path applies it (*applied). */
static ct_status SFX(conv2d_epi)(const ct_kernel_ctx *c, const ct__conv_epi *e, bool *applied) {
  *applied = false;
  conv_job j;
  ct_status st = conv_prepare(c, &j);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  const ct__conv_geom *g = &j.g;
  T *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  const int64_t ohw = g->oh * g->ow, mg = g->m / g->groups;
  if (j.empty) {
    memset(o, 0, (size_t)(g->n * g->m * ohw) * sizeof(T));
    return CT_OK;
  }
#ifdef CONV_FAST_RUN /* a faster algorithm this dtype has for some plans (float32: Winograd) */
  if (CONV_FAST_FITS(&j)) return CONV_FAST_RUN(c, &j, o, e, applied);
#endif
  atomic_bool failed = false;
  SFX(conv_run) r = {&j, ct__k_in_data(ct_kernel_in(c, CT__CONV_INPUT, 0)),
                     ct__k_in_data(ct_kernel_in(c, CT__CONV_FILTER, 0)), NULL, o, NULL, NULL,
                     NULL, NULL, NULL, conv_image_pieces(&j), &failed, NULL, 0, 0, NULL, 1};
  if (j.depthwise) {
    r.epi = e;
    *applied = e != NULL;
#ifdef CT__T16_X86
    if (sizeof(T) == 4 && (r.bands = conv_dw_bands(g)) > 1) {
      ct__parallel_for(r.bands * g->n * g->groups, 1, SFX(dw_bands), &r);
      return CT_OK;
    }
#endif
    ct__parallel_for(g->n * g->groups, conv_grain(mg * ohw * g->kh * g->kw), SFX(dw_planes), &r);
    return CT_OK;
  }
  SFX(conv_packed)(c, &r);
  if (j.batched) { /* the epilogue is the caller's pass */
    if ((st = SFX(conv_alloc)(c, &r, 0)) != CT_OK) return st;
    SFX(conv_batched)(&r, r.col, r.col + j.col_elems - j.t_elems);
    conv_scratch_free(r.scratch);
  } else { /* the GEMMs pack col from the image (no buffer) and apply the epilogue */
    r.epi = e;
    *applied = e != NULL;
    ct__parallel_items(g->n, (int)r.pieces, SFX(conv_image_item), &r);
  }
  return atomic_load(&failed) ? conv_gemm_fail(c) : CT_OK;
}

static ct_status SFX(conv2d)(const ct_kernel_ctx *c) {
  bool applied;
  return SFX(conv2d_epi)(c, NULL, &applied);
}

static ct_status SFX(conv2d_grad)(const ct_kernel_ctx *c) {
  conv_job j;
  ct_status st = conv_prepare(c, &j);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  const ct__conv_geom *g = &j.g;
  T *dx = NULL, *dw = NULL;
  if (ct_kernel_out_count(c, CT__CONV_DINPUT) > 0 &&
      (dx = ct__k_out_data(c, CT__CONV_DINPUT, 0, c->dtype)) == NULL) {
    return ct_last_status();
  }
  if (ct_kernel_out_count(c, CT__CONV_DFILTER) > 0 &&
      (dw = ct__k_out_data(c, CT__CONV_DFILTER, 0, c->dtype)) == NULL) {
    return ct_last_status();
  }
  const int64_t hw = g->h * g->w, ohw = g->oh * g->ow;
  const int64_t mk = g->m * (g->c / g->groups) * g->kh * g->kw;
  if (dx != NULL) memset(dx, 0, (size_t)(g->n * g->c * hw) * sizeof(T));
  if (dw != NULL) memset(dw, 0, (size_t)mk * sizeof(T));
  if (j.empty || (dx == NULL && dw == NULL)) return CT_OK;
  atomic_bool failed = false;
  SFX(conv_run) r = {&j, ct__k_in_data(ct_kernel_in(c, CT__CONV_INPUT, 0)),
                     ct__k_in_data(ct_kernel_in(c, CT__CONV_FILTER, 0)),
                     ct__k_in_data(ct_kernel_in(c, CT__CONV_DOUT, 0)), NULL, dx, dw, NULL, NULL,
                     NULL, j.batched || j.depthwise ? 1 : conv_grad_chunks(&j), &failed,
                     NULL, 0, 0, NULL, 1};
  if (j.depthwise) {
    ct__parallel_for(g->groups, conv_grain(g->n * ohw * mk / g->groups), SFX(dw_groups_grad), &r);
    return CT_OK;
  }
#ifdef CONV_FAST_DX_RUN /* Input@GRAD by a faster algorithm this dtype has (float32: Winograd) */
  if (dx != NULL && CONV_FAST_DX_FITS(&j)) {
    if ((st = CONV_FAST_DX_RUN(c, &j, r.w, r.d, dx)) != CT_OK) return st;
    r.dx = dx = NULL; /* the chunks below compute Filter@GRAD alone */
  }
#endif
#ifdef CONV_FAST_DW_RUN /* Filter@GRAD by it (float32: Winograd's F(2x2, 3x3) where it fits) */
  if (dw != NULL && CONV_FAST_DW_FITS(&j)) {
    if ((st = CONV_FAST_DW_RUN(c, &j, r.x, r.d, dw)) != CT_OK) return st;
    r.dw = dw = NULL; /* the chunks below compute Input@GRAD alone */
  }
#endif
  if (dx == NULL && dw == NULL) return CT_OK;
  bool parts = dw != NULL && !j.batched;
  if ((st = SFX(conv_alloc)(c, &r, parts ? r.pieces * mk : 0)) != CT_OK) return st;
  if (j.batched) {
    SFX(conv_grad_batched)(&j, r.x, r.w, r.d, dx, dw, r.col, r.col + j.col_elems - j.t_elems,
                           &failed);
  } else {
    ct__parallel_for(r.pieces, 1, SFX(conv_grad_chunks), &r);
  }
  if (parts && !atomic_load(&failed)) SFX(conv_grad_fold)(&r);
  conv_scratch_free(r.scratch);
  return atomic_load(&failed) ? conv_gemm_fail(c) : CT_OK;
}
