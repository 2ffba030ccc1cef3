/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/conv_transpose_tmpl.h: conv_transpose, conv_nd (its adjoint: the same unfolding with
 * X and Y exchanged) and their gradients for one dtype, included by
 * ops/cpu/conv_transpose.c with T (the element type), SFX(name) (name_f32 ...) and GEMM
 * (ct__gemm_f32 ...) defined. */

/* Adds the columns col [mg K, I] into the mg output planes at y (each of O elements): tap k of
 * channel m at input element i lands on output o = i s - pb + k d, when inside the output. */
static void SFX(cvt_col2im)(const ct__cvt_plan *p, int64_t mg, const T *col, T *y) {
  const int64_t ni = ct__cvt_vol(p->in), no = ct__cvt_vol(p->out);
  for (int64_t m = 0; m < mg; m++) {
    T *ym = y + m * no;
    for (int64_t k0 = 0; k0 < p->k[0]; k0++) {
      for (int64_t k1 = 0; k1 < p->k[1]; k1++) {
        for (int64_t k2 = 0; k2 < p->k[2]; k2++) {
          const T *row = col + (((m * p->k[0] + k0) * p->k[1] + k1) * p->k[2] + k2) * ni;
          int64_t a0, b0, a1, b1, a2, b2;
          int64_t f0 = k0 * p->d[0] - p->pb[0], f1 = k1 * p->d[1] - p->pb[1];
          int64_t f2 = k2 * p->d[2] - p->pb[2];
          cvt_range(f0, p->s[0], p->in[0], p->out[0], &a0, &b0);
          cvt_range(f1, p->s[1], p->in[1], p->out[1], &a1, &b1);
          cvt_range(f2, p->s[2], p->in[2], p->out[2], &a2, &b2);
          for (int64_t i0 = a0; i0 < b0; i0++) {
            for (int64_t i1 = a1; i1 < b1; i1++) {
              const T *src = row + (i0 * p->in[1] + i1) * p->in[2];
              int64_t at = ((i0 * p->s[0] + f0) * p->out[1] + i1 * p->s[1] + f1) * p->out[2] + f2;
              for (int64_t i2 = a2; i2 < b2; i2++) ym[at + i2 * p->s[2]] += src[i2];
            }
          }
        }
      }
    }
  }
}

/* The reverse: col [mg K, I] gathers from the mg planes at dy what col2im would add there
 * (0 where a tap falls outside the output). */
static void SFX(cvt_im2col)(const ct__cvt_plan *p, int64_t mg, const T *dy, T *col) {
  const int64_t ni = ct__cvt_vol(p->in), no = ct__cvt_vol(p->out);
  memset(col, 0, (size_t)(mg * ct__cvt_vol(p->k) * ni) * sizeof(T));
  for (int64_t m = 0; m < mg; m++) {
    const T *ym = dy + m * no;
    for (int64_t k0 = 0; k0 < p->k[0]; k0++) {
      for (int64_t k1 = 0; k1 < p->k[1]; k1++) {
        for (int64_t k2 = 0; k2 < p->k[2]; k2++) {
          T *row = col + (((m * p->k[0] + k0) * p->k[1] + k1) * p->k[2] + k2) * ni;
          int64_t a0, b0, a1, b1, a2, b2;
          int64_t f0 = k0 * p->d[0] - p->pb[0], f1 = k1 * p->d[1] - p->pb[1];
          int64_t f2 = k2 * p->d[2] - p->pb[2];
          cvt_range(f0, p->s[0], p->in[0], p->out[0], &a0, &b0);
          cvt_range(f1, p->s[1], p->in[1], p->out[1], &a1, &b1);
          cvt_range(f2, p->s[2], p->in[2], p->out[2], &a2, &b2);
          for (int64_t i0 = a0; i0 < b0; i0++) {
            for (int64_t i1 = a1; i1 < b1; i1++) {
              T *dst = row + (i0 * p->in[1] + i1) * p->in[2];
              int64_t at = ((i0 * p->s[0] + f0) * p->out[1] + i1 * p->s[1] + f1) * p->out[2] + f2;
              for (int64_t i2 = a2; i2 < b2; i2++) dst[i2] = ym[at + i2 * p->s[2]];
            }
          }
        }
      }
    }
  }
}

/* One forward run: images split in `pieces` runs, piece q with its col buffer col + q stride. */
typedef struct SFX(cvt_run) {
  const ct__cvt_plan *p;
  const T *x, *w, *b;
  T *y, *col;
  int64_t pieces, col_elems;
  atomic_bool *failed;
} SFX(cvt_run);

/* Image n: Y's planes start as B (or 0); per group the GEMM col = W_g^T X_g ([mg K, cg] by
 * [cg, I]), folded into the group's planes. */
static void SFX(cvt_image)(const SFX(cvt_run) *r, int64_t n, T *col) {
  const ct__cvt_plan *p = r->p;
  const int64_t ni = ct__cvt_vol(p->in), no = ct__cvt_vol(p->out);
  const int64_t cg = p->c / p->groups, mg = p->m / p->groups, mk = mg * ct__cvt_vol(p->k);
  T *y = r->y + n * p->m * no;
  for (int64_t ch = 0; ch < p->m; ch++) {
    T v = r->b != NULL ? r->b[ch] : (T)0;
    for (int64_t o = 0; o < no; o++) y[ch * no + o] = v;
  }
  if (cg == 0 || mk == 0 || ni == 0 || no == 0) return;
  for (int64_t gi = 0; gi < p->groups; gi++) {
    cvt_note(r->failed, CT__GEMM(GEMM, true, false, mk, ni, cg, 1, r->w + gi * cg * mk, mk,
                                 r->x + (n * p->c + gi * cg) * ni, ni, 0, col, ni));
    SFX(cvt_col2im)(p, mg, col, y + gi * mg * no);
  }
}

static void SFX(cvt_images)(void *arg, int64_t b, int64_t e) {
  const SFX(cvt_run) *r = arg;
  for (int64_t q = b; q < e; q++) {
    for (int64_t n = r->p->n * q / r->pieces; n < r->p->n * (q + 1) / r->pieces; n++) {
      SFX(cvt_image)(r, n, r->col + q * r->col_elems);
    }
  }
}

static ct_status SFX(conv_transpose)(const ct_kernel_ctx *c) {
  ct__cvt_plan p;
  ct_status st = ct__cvt_plan_make(c, ct_kernel_in(c, CT__CVT_X, 0)->dims,
                                   ct_kernel_in(c, CT__CVT_W, 0)->dims, &p);
  if (st != CT_OK) return st;
  T *y = ct__k_out_data(c, CT__CVT_Y, 0, c->dtype);
  if (y == NULL) return ct_last_status();
  atomic_bool failed = false;
  SFX(cvt_run) r = {&p, ct__k_in_data(ct_kernel_in(c, CT__CVT_X, 0)),
                    ct__k_in_data(ct_kernel_in(c, CT__CVT_W, 0)),
                    ct_kernel_in_count(c, CT__CVT_B) > 0
                        ? ct__k_in_data(ct_kernel_in(c, CT__CVT_B, 0))
                        : NULL,
                    y, NULL, cvt_pieces(&p), 0, &failed};
  if (p.n == 0) return CT_OK;
  int64_t total;
  r.col_elems = cvt_col_elems(&p);
  if (r.col_elems < 0 || __builtin_mul_overflow(r.pieces, r.col_elems, &total)) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY,
                          "its working space (W's channels x kernel x X's spatial extent) is "
                          "past any memory: give X smaller spatial dims");
  }
  T *buf = NULL;
  if (r.col_elems > 0 && (buf = cvt_scratch(c, total, sizeof(T))) == NULL) {
    return ct_last_status();
  }
  r.col = buf;
  ct__parallel_for(r.pieces, 1, SFX(cvt_images), &r);
  cvt_scratch_free(buf);
  return atomic_load(&failed) ? ct__gemm_fail(c) : CT_OK;
}

/* A grad kernel's outputs X@GRAD, W@GRAD and B@GRAD (NULL where unwired); false with the error
 * recorded when one cannot be had. */
static bool SFX(grad_outs)(const ct_kernel_ctx *c, T *out[3]) {
  for (size_t k = 0; k < 3; k++) {
    out[k] = NULL;
    if (ct_kernel_out_count(c, k) > 0 && (out[k] = ct__k_out_data(c, k, 0, c->dtype)) == NULL) {
      return false;
    }
  }
  return true;
}

/* B@GRAD: Y@GRAD [n, m, no] summed over images and positions, in double. */
static void SFX(bias_grad)(const T *dy, int64_t n, int64_t m, int64_t no, T *db) {
  for (int64_t ch = 0; ch < m; ch++) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) {
      const T *v = dy + (i * m + ch) * no;
      for (int64_t o = 0; o < no; o++) s += (double)v[o];
    }
    db[ch] = (T)s;
  }
}

/* The unfolding passes that conv_transpose's gradient and conv_nd's forward and gradient share,
 * image after image and group by group, in the plan's terms: the small side S (p.c channels of
 * vol(in)), the big side B (p.m channels of vol(out)), W [p.c, p.m / groups, K...]. With col the
 * unfolding of B_g (im2col, mg channels): W@GRAD dw += S_g col^T (images in order, so its bits
 * follow the sizes alone); into_small_g = W_g col; into_big_g += the folding back (col2im) of
 * W_g^T S_g. Each GEMM threads itself. dw and into_big are zeroed first; into_small is written
 * whole (zeros when there is nothing to multiply). NULL outputs are skipped (s, b then unread
 * where nothing needs them). */
static ct_status SFX(cvt_unfolds)(const ct_kernel_ctx *c, const ct__cvt_plan *p, const T *s,
                                  const T *b, const T *w, T *dw, T *into_small, T *into_big) {
  const int64_t ni = ct__cvt_vol(p->in), no = ct__cvt_vol(p->out);
  const int64_t cg = p->c / p->groups, mg = p->m / p->groups, mk = mg * ct__cvt_vol(p->k);
  if (dw != NULL) memset(dw, 0, (size_t)(p->c * mk) * sizeof(T));
  if (into_big != NULL) memset(into_big, 0, (size_t)(p->n * p->m * no) * sizeof(T));
  if (p->n == 0 || cg == 0 || mk == 0 || ni == 0 || no == 0) {
    if (into_small != NULL) memset(into_small, 0, (size_t)(p->n * p->c * ni) * sizeof(T));
    return CT_OK;
  }
  if (dw == NULL && into_small == NULL && into_big == NULL) return CT_OK;
  T *col = cvt_scratch(c, mk * ni, sizeof(T));
  if (col == NULL) return ct_last_status();
  atomic_bool failed = false;
  for (int64_t n = 0; n < p->n; n++) {
    for (int64_t gi = 0; gi < p->groups; gi++) {
      const int64_t so = (n * p->c + gi * cg) * ni, bo = (n * p->m + gi * mg) * no;
      const T *wg = w + gi * cg * mk;
      if (dw != NULL || into_small != NULL) SFX(cvt_im2col)(p, mg, b + bo, col);
      if (dw != NULL) {
        cvt_note(&failed, CT__GEMM(GEMM, false, true, cg, mk, ni, 1, s + so, ni, col, ni, 1,
                                   dw + gi * cg * mk, mk));
      }
      if (into_small != NULL) {
        cvt_note(&failed, CT__GEMM(GEMM, false, false, cg, ni, mk, 1, wg, mk, col, ni, 0,
                                   into_small + so, ni));
      }
      if (into_big != NULL) {
        cvt_note(&failed, CT__GEMM(GEMM, true, false, mk, ni, cg, 1, wg, mk, s + so, ni, 0, col,
                                   ni));
        SFX(cvt_col2im)(p, mg, col, into_big + bo);
      }
    }
  }
  cvt_scratch_free(col);
  return atomic_load(&failed) ? ct__gemm_fail(c) : CT_OK;
}

/* The kernel's gradient outputs and inputs X, W, Y@GRAD for plan p (conv_nd's or
 * conv_transpose's); false with the error recorded. */
static bool SFX(grad_io)(const ct_kernel_ctx *c, T *out[3], const T *in[3]) {
  if (!SFX(grad_outs)(c, out)) return false;
  for (size_t k = 0; k < 3; k++) in[k] = ct__k_in_data(ct_kernel_in(c, k, 0));
  return true;
}

/* The gradient: S = X, B = Y@GRAD; X@GRAD is the small side's (a convolution of Y@GRAD). */
static ct_status SFX(conv_transpose_grad)(const ct_kernel_ctx *c) {
  ct__cvt_plan p;
  ct_status st = ct__cvt_plan_make(c, ct_kernel_in(c, CT__CVTG_X, 0)->dims,
                                   ct_kernel_in(c, CT__CVTG_W, 0)->dims, &p);
  T *out[3];
  const T *in[3];
  if (st != CT_OK || !SFX(grad_io)(c, out, in)) return st != CT_OK ? st : ct_last_status();
  const T *dy = in[CT__CVTG_DY];
  if (out[CT__CVTG_DB] != NULL) {
    SFX(bias_grad)(dy, p.n, p.m, ct__cvt_vol(p.out), out[CT__CVTG_DB]);
  }
  return SFX(cvt_unfolds)(c, &p, in[CT__CVTG_X], dy, in[CT__CVTG_W], out[CT__CVTG_DW],
                          out[CT__CVTG_DX], NULL);
}

/* conv_nd (its plan p the mirror: in = Y's O, out = X's I, c = M, m = C): B = X, Y the small
 * side (W_g times X's unfolding), then + B. */
static ct_status SFX(conv_nd)(const ct_kernel_ctx *c) {
  ct__cvt_plan p;
  ct_status st = ct__cnd_plan_make(c, ct_kernel_in(c, CT__CVT_X, 0)->dims,
                                   ct_kernel_in(c, CT__CVT_W, 0)->dims, &p);
  if (st != CT_OK) return st;
  T *y = ct__k_out_data(c, CT__CVT_Y, 0, c->dtype);
  if (y == NULL) return ct_last_status();
  const T *b = ct_kernel_in_count(c, CT__CVT_B) > 0 ? ct__k_in_data(ct_kernel_in(c, CT__CVT_B, 0))
                                                     : NULL;
  st = SFX(cvt_unfolds)(c, &p, NULL, ct__k_in_data(ct_kernel_in(c, CT__CVT_X, 0)),
                        ct__k_in_data(ct_kernel_in(c, CT__CVT_W, 0)), NULL, y, NULL);
  const int64_t no = ct__cvt_vol(p.in); /* Y's extent */
  for (int64_t n = 0; st == CT_OK && b != NULL && n < p.n; n++) {
    for (int64_t ch = 0; ch < p.c; ch++) {
      T *v = y + (n * p.c + ch) * no;
      for (int64_t o = 0; o < no; o++) v[o] = v[o] + b[ch];
    }
  }
  return st;
}

/* conv_nd's gradient (ops/defs/conv_nd.c): S = Y@GRAD, B = X; X@GRAD is the big side's (a
 * transposed convolution of Y@GRAD), B@GRAD Y@GRAD summed. */
static ct_status SFX(conv_nd_grad)(const ct_kernel_ctx *c) {
  ct__cvt_plan p;
  ct_status st = ct__cnd_plan_make(c, ct_kernel_in(c, CT__CVTG_X, 0)->dims,
                                   ct_kernel_in(c, CT__CVTG_W, 0)->dims, &p);
  T *out[3];
  const T *in[3];
  if (st != CT_OK || !SFX(grad_io)(c, out, in)) return st != CT_OK ? st : ct_last_status();
  const T *dy = in[CT__CVTG_DY];
  if (out[CT__CVTG_DB] != NULL) {
    SFX(bias_grad)(dy, p.n, p.c, ct__cvt_vol(p.in), out[CT__CVTG_DB]);
  }
  return SFX(cvt_unfolds)(c, &p, dy, in[CT__CVTG_X], in[CT__CVTG_W], out[CT__CVTG_DW], NULL,
                          out[CT__CVTG_DX]);
}
