/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/resample_grid_tmpl.h: grid_sample, grid_sample_grad and roi_align for one float type,
 * included by ops/cpu/resample_grid.c with T (float or double), SUF (f32, f64), FLOOR, NEARBY
 * (round half to even) and CEIL of that type. Coordinates are computed in T, as onnxruntime
 * and ONNX's reference compute them; sums are taken in double. */

#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(name, SUF)

/* ONNX's reflection of x into [lo, hi]; *d the derivative (1 or -1). */
static T FN(gs_reflect)(T x, T lo, T hi, T *d) {
  T rng = hi - lo;
  *d = 1;
  if (!(rng > 0)) { /* one pixel with align_corners: every coordinate reflects onto it */
    *d = 0;
    return lo;
  }
  if (x < lo || x > hi) {
    bool below = x < lo;
    T dx = below ? lo - x : x - hi;
    T n = FLOOR(dx / rng), r = dx - n * rng;
    bool even = FLOOR(n / 2) * 2 == n;
    *d = even ? -1 : 1;
    return below == even ? lo + r : hi - r;
  }
  return x;
}

/* The taps of one grid point (gx, gy): m x m pixels (m 1, 2 or 4), row by row, as plane
 * offsets (-1: a zero of the padding) and weights cy[i] cx[j]; for Grid@GRAD the weights'
 * derivatives in x and y (dcx, dcy) and those of x and y in the grid's values (dxg, dyg). */
typedef struct FN(gs_pt) {
  int n, m;
  int64_t off[16];
  T w[16], cx[4], cy[4], dcx[4], dcy[4];
  T dxg, dyg;
  bool nan; /* a NaN grid value (or an infinite one to reflect): the sample is NaN */
} FN(gs_pt);

static int64_t FN(gs_pix)(const ct__gs_plan *p, int64_t r, int64_t col, const T b[4]) {
  if (p->padding == CT__GS_P_ZEROS) {
    return col >= 0 && col < p->w && r >= 0 && r < p->h ? r * p->w + col : -1;
  }
  if (p->padding == CT__GS_P_REFLECTION) {
    T d;
    col = (int64_t)FN(gs_reflect)((T)col, b[0], b[2], &d);
    r = (int64_t)FN(gs_reflect)((T)r, b[1], b[3], &d);
  }
  col = col < 0 ? 0 : col >= p->w ? p->w - 1 : col;
  r = r < 0 ? 0 : r >= p->h ? p->h - 1 : r;
  return r * p->w + col;
}

static void FN(gs_point)(const ct__gs_plan *p, T gx, T gy, FN(gs_pt) *q) {
  T W = (T)p->w, H = (T)p->h, b[4];
  T x = p->align ? (gx + 1) / 2 * (W - 1) : ((gx + 1) * W - 1) / 2;
  T y = p->align ? (gy + 1) / 2 * (H - 1) : ((gy + 1) * H - 1) / 2;
  q->dxg = p->align ? (W - 1) / 2 : W / 2;
  q->dyg = p->align ? (H - 1) / 2 : H / 2;
  b[0] = p->align ? 0 : (T)-0.5;
  b[1] = b[0];
  b[2] = p->align ? W - 1 : W - (T)0.5;
  b[3] = p->align ? H - 1 : H - (T)0.5;
  q->nan = x != x || y != y;
  if (q->nan) x = y = 0;
  if (p->mode == CT__GS_M_NEAREST) {
    x = NEARBY(x);
    y = NEARBY(y);
  }
  if (x < b[0] || x > b[2] || y < b[1] || y > b[3]) {
    if (p->padding == CT__GS_P_BORDER) {
      if (x < 0 || x > W - 1) q->dxg = 0;
      if (y < 0 || y > H - 1) q->dyg = 0;
      x = x < 0 ? 0 : x > W - 1 ? W - 1 : x;
      y = y < 0 ? 0 : y > H - 1 ? H - 1 : y;
    } else if (p->padding == CT__GS_P_REFLECTION) {
      T dx, dy;
      x = FN(gs_reflect)(x, b[0], b[2], &dx);
      y = FN(gs_reflect)(y, b[1], b[3], &dy);
      q->dxg *= dx;
      q->dyg *= dy;
    }
  }
  if (x != x || y != y) { /* an infinity reflected */
    q->nan = true;
    x = y = 0;
  }
  /* Far outside (zeros padding only) every tap is a zero: keep the indices in range. */
  x = x < -W - 4 ? -W - 4 : x > W + 4 ? W + 4 : x;
  y = y < -H - 4 ? -H - 4 : y > H + 4 ? H + 4 : y;
  if (p->mode == CT__GS_M_NEAREST) {
    q->n = q->m = 1;
    q->off[0] = FN(gs_pix)(p, (int64_t)y, (int64_t)x, b);
    q->w[0] = q->cx[0] = q->cy[0] = 1;
    q->dcx[0] = q->dcy[0] = 0; /* piecewise constant */
    return;
  }
  T fx = FLOOR(x), fy = FLOOR(y);
  int64_t x1 = (int64_t)fx, y1 = (int64_t)fy;
  if (p->mode == CT__GS_M_BILINEAR) {
    T dx1 = x - fx, dx2 = fx + 1 - x, dy1 = y - fy, dy2 = fy + 1 - y;
    q->m = 2;
    q->cx[0] = dx2, q->cx[1] = dx1, q->cy[0] = dy2, q->cy[1] = dy1;
    q->dcx[0] = q->dcy[0] = -1;
    q->dcx[1] = q->dcy[1] = 1;
  } else {
    T *cs[2] = {q->cx, q->cy}, *ds[2] = {q->dcx, q->dcy}, ts[2] = {x - fx, y - fy};
    for (int k = 0; k < 2; k++) { /* Keys' weights (a = -0.75) and their derivatives in t */
      T a = (T)-0.75, t = ts[k], u = t + 1, v = 1 - t, z = 2 - t;
      cs[k][0] = ((a * u - 5 * a) * u + 8 * a) * u - 4 * a;
      cs[k][1] = ((a + 2) * t - (a + 3)) * t * t + 1;
      cs[k][2] = ((a + 2) * v - (a + 3)) * v * v + 1;
      cs[k][3] = ((a * z - 5 * a) * z + 8 * a) * z - 4 * a;
      ds[k][0] = (3 * a * u - 10 * a) * u + 8 * a;
      ds[k][1] = (3 * (a + 2) * t - 2 * (a + 3)) * t;
      ds[k][2] = -(3 * (a + 2) * v - 2 * (a + 3)) * v;
      ds[k][3] = -((3 * a * z - 10 * a) * z + 8 * a);
    }
    q->m = 4;
    x1 -= 1;
    y1 -= 1;
  }
  q->n = q->m * q->m;
  for (int i = 0; i < q->m; i++) {
    for (int j = 0; j < q->m; j++) {
      q->off[q->m * i + j] = FN(gs_pix)(p, y1 + i, x1 + j, b);
      q->w[q->m * i + j] = q->cy[i] * q->cx[j];
    }
  }
}

ct_status FN(ct__gs_k)(const ct_kernel_ctx *c) {
  ct__gs_plan p;
  ct_status s = ct__gs_plan_make(c, &p);
  if (s != CT_OK) return s;
  T *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (o == NULL) return ct_last_status();
  const T *x = ct__k_in_data(ct_kernel_in(c, CT__GS_X, 0));
  const T *g = ct__k_in_data(ct_kernel_in(c, CT__GS_GRID, 0));
  int64_t plane = p.h * p.w, op = p.ho * p.wo;
  for (int64_t n = 0; n < p.n; n++) {
    for (int64_t i = 0; i < op; i++) {
      FN(gs_pt) q;
      const T *gp = g + 2 * (n * op + i);
      FN(gs_point)(&p, gp[0], gp[1], &q);
      for (int64_t ch = 0; ch < p.c; ch++) {
        const T *xp = x + (n * p.c + ch) * plane;
        double v = 0;
        for (int k = 0; k < q.n; k++) {
          if (q.off[k] >= 0) v += (double)q.w[k] * xp[q.off[k]];
        }
        o[(n * p.c + ch) * op + i] = q.nan ? (T)NAN : (T)v;
      }
    }
  }
  return CT_OK;
}

ct_status FN(ct__gs_grad_k)(const ct_kernel_ctx *c) {
  ct__gs_plan p;
  ct_status s = ct__gs_plan_make(c, &p);
  if (s != CT_OK) return s;
  T *dx = NULL, *dg = NULL;
  if (ct_kernel_out_count(c, CT__GSG_DX) > 0) {
    if ((dx = ct__k_out_data(c, CT__GSG_DX, 0, c->dtype)) == NULL) return ct_last_status();
  }
  if (ct_kernel_out_count(c, CT__GSG_DGRID) > 0) {
    if ((dg = ct__k_out_data(c, CT__GSG_DGRID, 0, c->dtype)) == NULL) return ct_last_status();
  }
  const T *x = ct__k_in_data(ct_kernel_in(c, CT__GS_X, 0));
  const T *g = ct__k_in_data(ct_kernel_in(c, CT__GS_GRID, 0));
  const T *dout = ct__k_in_data(ct_kernel_in(c, CT__GS_DOUT, 0));
  int64_t plane = p.h * p.w, op = p.ho * p.wo;
  if (dx != NULL) memset(dx, 0, sizeof(T) * (size_t)(p.n * p.c * plane));
  for (int64_t n = 0; n < p.n; n++) {
    for (int64_t i = 0; i < op; i++) {
      FN(gs_pt) q;
      const T *gp = g + 2 * (n * op + i);
      FN(gs_point)(&p, gp[0], gp[1], &q);
      double sx = 0, sy = 0;
      for (int64_t ch = 0; ch < p.c; ch++) {
        double d = (double)dout[(n * p.c + ch) * op + i];
        const T *xp = x + (n * p.c + ch) * plane;
        if (dx != NULL && !q.nan) {
          T *dp = dx + (n * p.c + ch) * plane;
          for (int k = 0; k < q.n; k++) {
            if (q.off[k] >= 0) dp[q.off[k]] += (T)(q.w[k] * d);
          }
        }
        if (dg != NULL && p.mode != CT__GS_M_NEAREST) {
          for (int r = 0; r < q.m; r++) {
            for (int k = 0; k < q.m; k++) {
              int64_t at = q.off[q.m * r + k];
              double v = at >= 0 ? d * (double)xp[at] : 0;
              sx += v * (double)q.cy[r] * (double)q.dcx[k];
              sy += v * (double)q.dcy[r] * (double)q.cx[k];
            }
          }
        }
      }
      if (dg != NULL && q.nan) sx = sy = NAN;
      if (dg != NULL) {
        dg[2 * (n * op + i)] = (T)(sx * q.dxg);
        dg[2 * (n * op + i) + 1] = (T)(sy * q.dyg);
      }
    }
  }
  return CT_OK;
}

/* One bilinear sample of roi_align at (y, x) as onnxruntime takes it: the four plane offsets and
 * weights (all 0 outside [-1, extent]). */
static void FN(ra_sample)(const ct__ra_plan *p, T y, T x, int64_t off[4], T w[4]) {
  if (!(y >= -1 && y <= (T)p->h && x >= -1 && x <= (T)p->w)) { /* NaN too */
    for (int k = 0; k < 4; k++) off[k] = 0, w[k] = 0;
    return;
  }
  if (y <= 0) y = 0;
  if (x <= 0) x = 0;
  int64_t yl = (int64_t)y, xl = (int64_t)x, yh, xh;
  if (yl >= p->h - 1) yh = yl = p->h - 1, y = (T)yl;
  else yh = yl + 1;
  if (xl >= p->w - 1) xh = xl = p->w - 1, x = (T)xl;
  else xh = xl + 1;
  T ly = y - (T)yl, lx = x - (T)xl, hy = 1 - ly, hx = 1 - lx;
  off[0] = yl * p->w + xl, off[1] = yl * p->w + xh;
  off[2] = yh * p->w + xl, off[3] = yh * p->w + xh;
  w[0] = hy * hx, w[1] = hy * lx, w[2] = ly * hx, w[3] = ly * lx;
}

ct_status FN(ct__ra_k)(const ct_kernel_ctx *c) {
  ct__ra_plan p;
  ct_status s = ct__ra_plan_make(c, &p);
  if (s == CT_OK) s = ct__ra_check_batch(c, &p);
  if (s != CT_OK) return s;
  T *out = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (out == NULL) return ct_last_status();
  const T *x = ct__k_in_data(ct_kernel_in(c, CT__RA_X, 0));
  const T *rois = ct__k_in_data(ct_kernel_in(c, CT__RA_ROIS, 0));
  const ct_tensor *bt = ct_kernel_in(c, CT__RA_BATCH, 0);
  const void *bi = ct__k_in_data(bt);
  T off = p.aligned ? (T)0.5 : 0, sc = (T)p.scale;
  for (int64_t r = 0; r < p.r; r++) {
    const T *b = rois + 4 * r;
    if (b[0] != b[0] || b[1] != b[1] || b[2] != b[2] || b[3] != b[3]) { /* a NaN roi */
      for (int64_t k = 0; k < p.c * p.ph * p.pw; k++) out[r * p.c * p.ph * p.pw + k] = (T)NAN;
      continue;
    }
    T x0 = b[0] * sc - off, y0 = b[1] * sc - off, x1 = b[2] * sc - off, y1 = b[3] * sc - off;
    T rw = x1 - x0, rh = y1 - y0;
    if (!p.aligned) {
      rw = rw > 1 ? rw : 1;
      rh = rh > 1 ? rh : 1;
    }
    T bh = rh / (T)p.ph, bw = rw / (T)p.pw;
    T gh_ = p.sampling > 0 ? (T)p.sampling : CEIL(rh / (T)p.ph);
    T gw_ = p.sampling > 0 ? (T)p.sampling : CEIL(rw / (T)p.pw);
    if (!(gh_ < 65536) || !(gw_ < 65536)) {
      return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                            "roi %lld of input ROIs variable '%s' takes %g x %g samples per "
                            "bin: give rois within the image or a sampling_ratio",
                            (long long)r, ct_kernel_in_name(c, CT__RA_ROIS, 0), (double)gh_,
                            (double)gw_);
    }
    int64_t gh = gh_ > 0 ? (int64_t)gh_ : 0, gw = gw_ > 0 ? (int64_t)gw_ : 0;
    T count = gh * gw > 0 ? (T)(gh * gw) : 1;
    int64_t n = ct__ix_index(bi, bt->dtype, r);
    for (int64_t ch = 0; ch < p.c; ch++) {
      const T *xp = x + (n * p.c + ch) * p.h * p.w;
      T *o = out + (r * p.c + ch) * p.ph * p.pw;
      for (int64_t i = 0; i < p.ph; i++) {
        for (int64_t j = 0; j < p.pw; j++) {
          double acc = 0;
          T mx = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; iy++) {
            T yy = y0 + (T)i * bh + ((T)iy + (T)0.5) * bh / (T)gh;
            for (int64_t ix = 0; ix < gw; ix++) {
              T xx = x0 + (T)j * bw + ((T)ix + (T)0.5) * bw / (T)gw, w[4];
              int64_t of[4];
              FN(ra_sample)(&p, yy, xx, of, w);
              if (p.max) {
                for (int k = 0; k < 4; k++) {
                  T v = w[k] * xp[of[k]];
                  if (first || v > mx) mx = v;
                  first = false;
                }
              } else {
                acc += (double)(w[0] * xp[of[0]] + w[1] * xp[of[1]] + w[2] * xp[of[2]] +
                                w[3] * xp[of[3]]);
              }
            }
          }
          o[i * p.pw + j] = p.max ? mx : (T)(acc / (double)count);
        }
      }
    }
  }
  return CT_OK;
}

#undef FN
#undef CAT
#undef CAT_
