/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/conv_tmpl.h: the CPU conv2d and pool2d kernels for one element type, included by
 * ops/cpu/conv.c once per dtype with T (the type), SFX(name) (name_f32 ...) and GEMM (the CBLAS
 * gemm) defined. No include guard: it is a template. */

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

/* ---- Depthwise (one input channel per group): a direct loop per output plane --------------
 * Output channel mo reads input channel mo / (M / groups). fwd: out += w x (shifted x);
 * data grad: dx += w x (shifted dout); filter grad: dw = sum dout x (shifted x). */

static void SFX(dw_plane)(const ct__conv_geom *g, const T *x, const T *w, T *o) {
  for (int64_t i = 0; i < g->oh * g->ow; i++) o[i] = 0;
  for (int64_t ky = 0; ky < g->kh; ky++) {
    for (int64_t kx = 0; kx < g->kw; kx++) {
      T wv = w[ky * g->kw + kx];
      int64_t off = kx * g->dw - g->pl, x0, x1;
      conv_valid_range(off, g->sw, g->w, g->ow, &x0, &x1);
      for (int64_t oy = 0; oy < g->oh; oy++) {
        int64_t iy = oy * g->sh - g->pt + ky * g->dh;
        if (iy < 0 || iy >= g->h) continue;
        const T *src = x + iy * g->w + off;
        T *row = o + oy * g->ow;
        if (g->sw == 1) { /* contiguous: vectorises */
          for (int64_t ox = x0; ox < x1; ox++) row[ox] += wv * src[ox];
        } else {
          for (int64_t ox = x0; ox < x1; ox++) row[ox] += wv * src[ox * g->sw];
        }
      }
    }
  }
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

/* ---- Small images: every image of a group in one GEMM ---------------------------------------
 * col [Cg KH KW, N OH OW] and t [Mg, N OH OW] (Output's or Output@GRAD's rows of the group, image
 * after image); forward multiplies once and scatters t into NCHW, the gradient gathers dOut into
 * t and multiplies once for each of dW and dcol. */

static void SFX(conv_batched)(const conv_job *j, const T *x, const T *w, T *o, T *col, T *t) {
  const ct__conv_geom *g = &j->g;
  const int64_t hw = g->h * g->w, ohw = g->oh * g->ow, cg = g->c / g->groups;
  const int64_t mg = g->m / g->groups, k = cg * g->kh * g->kw, ld = g->n * ohw;
  for (int64_t gi = 0; gi < g->groups; gi++) {
    for (int64_t n = 0; n < g->n; n++) {
      SFX(im2col)(g, cg, x + (n * g->c + gi * cg) * hw, col + n * ohw, ld);
    }
    GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mg, (int)ld, (int)k, 1, w + gi * mg * k,
         (int)k, col, (int)ld, 0, t, (int)ld);
    for (int64_t n = 0; n < g->n; n++) {
      for (int64_t mo = 0; mo < mg; mo++) {
        memcpy(o + (n * g->m + gi * mg + mo) * ohw, t + mo * ld + n * ohw,
               (size_t)ohw * sizeof(T));
      }
    }
  }
}

static void SFX(conv_grad_batched)(const conv_job *j, const T *x, const T *w, const T *d, T *dx,
                                   T *dw, T *col, T *t) {
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
      GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)mg, (int)k, (int)ld, 1, t, (int)ld, col,
           (int)ld, 0, dw + gi * mg * k, (int)k);
    }
    if (dx != NULL) {
      GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)k, (int)ld, (int)mg, 1, w + gi * mg * k,
           (int)k, t, (int)ld, 0, col, (int)ld);
      for (int64_t n = 0; n < g->n; n++) {
        SFX(col2im)(g, cg, col + n * ohw, ld, dx + (n * g->c + gi * cg) * hw);
      }
    }
  }
}

/* ---- conv2d ------------------------------------------------------------------------------- */

static ct_status SFX(conv2d)(const ct_kernel_ctx *c) {
  conv_job j;
  ct_status st = conv_prepare(c, &j);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  const ct__conv_geom *g = &j.g;
  T *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  const T *x = ct__k_in_data(ct_kernel_in(c, CT__CONV_INPUT, 0));
  const T *w = ct__k_in_data(ct_kernel_in(c, CT__CONV_FILTER, 0));
  const int64_t hw = g->h * g->w, ohw = g->oh * g->ow, cg = g->c / g->groups;
  const int64_t mg = g->m / g->groups, k = cg * g->kh * g->kw;
  if (j.empty) {
    memset(o, 0, (size_t)(g->n * g->m * ohw) * sizeof(T));
    return CT_OK;
  }
  T *col = NULL;
  if (j.col_elems > 0 && (col = conv_scratch(c, j.col_elems, sizeof(T))) == NULL) {
    return ct_last_status();
  }
  if (j.batched) {
    SFX(conv_batched)(&j, x, w, o, col, col + j.col_elems - j.t_elems);
    free(col);
    return CT_OK;
  }
  for (int64_t n = 0; n < g->n; n++) {
    for (int64_t gi = 0; gi < g->groups; gi++) {
      const T *xg = x + (n * g->c + gi * cg) * hw, *wg = w + gi * mg * k;
      T *og = o + (n * g->m + gi * mg) * ohw;
      if (j.depthwise) {
        for (int64_t mo = 0; mo < mg; mo++) SFX(dw_plane)(g, xg, wg + mo * k, og + mo * ohw);
        continue;
      }
      const T *b = xg;
      if (col != NULL) {
        SFX(im2col)(g, cg, xg, col, ohw);
        b = col;
      }
      GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mg, (int)ohw, (int)k, 1, wg, (int)k,
           b, (int)ohw, 0, og, (int)ohw);
    }
  }
  free(col);
  return CT_OK;
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
  const T *x = ct__k_in_data(ct_kernel_in(c, CT__CONV_INPUT, 0));
  const T *w = ct__k_in_data(ct_kernel_in(c, CT__CONV_FILTER, 0));
  const T *d = ct__k_in_data(ct_kernel_in(c, CT__CONV_DOUT, 0));
  const int64_t hw = g->h * g->w, ohw = g->oh * g->ow, cg = g->c / g->groups;
  const int64_t mg = g->m / g->groups, k = cg * g->kh * g->kw;
  if (dx != NULL) memset(dx, 0, (size_t)(g->n * g->c * hw) * sizeof(T));
  if (dw != NULL) memset(dw, 0, (size_t)(g->m * k) * sizeof(T));
  if (j.empty || (dx == NULL && dw == NULL)) return CT_OK;
  T *col = NULL;
  if (j.col_elems > 0 && (col = conv_scratch(c, j.col_elems, sizeof(T))) == NULL) {
    return ct_last_status();
  }
  if (j.batched) {
    SFX(conv_grad_batched)(&j, x, w, d, dx, dw, col, col + j.col_elems - j.t_elems);
    free(col);
    return CT_OK;
  }
  for (int64_t n = 0; n < g->n; n++) {
    for (int64_t gi = 0; gi < g->groups; gi++) {
      const T *xg = x + (n * g->c + gi * cg) * hw, *wg = w + gi * mg * k;
      const T *dg = d + (n * g->m + gi * mg) * ohw;
      T *dxg = dx != NULL ? dx + (n * g->c + gi * cg) * hw : NULL;
      T *dwg = dw != NULL ? dw + gi * mg * k : NULL;
      if (j.depthwise) {
        for (int64_t mo = 0; mo < mg; mo++) {
          SFX(dw_plane_grad)(g, xg, wg + mo * k, dg + mo * ohw, dxg,
                             dwg != NULL ? dwg + mo * k : NULL);
        }
        continue;
      }
      if (dwg != NULL) { /* dW_g += dOut_g col^T, images in order */
        const T *b = xg;
        if (col != NULL) {
          SFX(im2col)(g, cg, xg, col, ohw);
          b = col;
        }
        GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)mg, (int)k, (int)ohw, 1, dg,
             (int)ohw, b, (int)ohw, 1, dwg, (int)k);
      }
      if (dxg != NULL) { /* dcol = W_g^T dOut_g, folded back into dX */
        GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)k, (int)ohw, (int)mg, 1, wg, (int)k,
             dg, (int)ohw, col != NULL ? 0 : 1, col != NULL ? col : dxg, (int)ohw);
        if (col != NULL) SFX(col2im)(g, cg, col, ohw, dxg);
      }
    }
  }
  free(col);
  return CT_OK;
}

/* ---- pool2d -------------------------------------------------------------------------------- */

static ct_status SFX(pool2d)(const ct_kernel_ctx *c) {
  ct__conv_geom g;
  ct_status st = ct__pool_plan(c, ct_kernel_in(c, CT__IN_X, 0)->dims, &g);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  T *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  const T *x = ct__k_in_data(ct_kernel_in(c, CT__IN_X, 0));
  for (int64_t p = 0; p < g.n * g.c; p++) {
    const T *xp = x + p * g.h * g.w;
    for (int64_t oy = 0; oy < g.oh; oy++) {
      for (int64_t ox = 0; ox < g.ow; ox++, o++) {
        int64_t y0, y1, x0, x1, cnt = ct__pool_window(&g, oy, ox, &y0, &y1, &x0, &x1);
        T acc = g.max ? -(T)INFINITY : 0;
        for (int64_t iy = y0; iy < y1; iy++) {
          for (int64_t ix = x0; ix < x1; ix++) {
            T v = xp[iy * g.w + ix];
            if (!g.max) {
              acc += v;
            } else if (v > acc || v != v) {
              acc = v;
            }
          }
        }
        *o = g.max ? (y1 > y0 && x1 > x0 ? acc : 0) : (cnt > 0 ? acc / (T)cnt : 0);
      }
    }
  }
  return CT_OK;
}

static ct_status SFX(pool2d_grad)(const ct_kernel_ctx *c) {
  ct__conv_geom g;
  ct_status st = ct__pool_plan(c, ct_kernel_in(c, CT__POOL_X, 0)->dims, &g);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  T *dx = ct__k_out_data(c, 0, 0, c->dtype);
  if (CT__UNLIKELY(dx == NULL)) return ct_last_status();
  const T *x = ct__k_in_data(ct_kernel_in(c, CT__POOL_X, 0));
  const T *o = ct__k_in_data(ct_kernel_in(c, CT__POOL_OUT, 0));
  const T *d = ct__k_in_data(ct_kernel_in(c, CT__POOL_DOUT, 0));
  memset(dx, 0, (size_t)(g.n * g.c * g.h * g.w) * sizeof(T));
  for (int64_t p = 0; p < g.n * g.c; p++) {
    const T *xp = x + p * g.h * g.w;
    T *dxp = dx + p * g.h * g.w;
    for (int64_t oy = 0; oy < g.oh; oy++) {
      for (int64_t ox = 0; ox < g.ow; ox++, o++, d++) {
        int64_t y0, y1, x0, x1, cnt = ct__pool_window(&g, oy, ox, &y0, &y1, &x0, &x1);
        if (!g.max) {
          T share = cnt > 0 ? *d / (T)cnt : 0;
          for (int64_t iy = y0; iy < y1; iy++) {
            for (int64_t ix = x0; ix < x1; ix++) dxp[iy * g.w + ix] += share;
          }
          continue;
        }
        bool done = false; /* the first element equal to Out takes the gradient */
        for (int64_t iy = y0; iy < y1 && !done; iy++) {
          for (int64_t ix = x0; ix < x1 && !done; ix++) {
            T v = xp[iy * g.w + ix];
            if (v == *o || (v != v && *o != *o)) {
              dxp[iy * g.w + ix] += *d;
              done = true;
            }
          }
        }
      }
    }
  }
  return CT_OK;
}
