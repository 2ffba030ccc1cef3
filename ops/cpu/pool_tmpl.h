/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/pool_tmpl.h: the CPU pool2d kernels and their gradient for one element type, included
 * by ops/cpu/conv.c once per dtype with T (the type) and SFX(name) (name_f32 ...) defined. No
 * include guard: it is a template. */

/* ---- pool2d --------------------------------------------------------------------------------
 * Split across threads over the N x C planes (each plane's outputs and gradient its own). */

typedef struct SFX(pool_run) {
  ct__conv_geom g;
  const T *x, *o, *d;
  T *out;
} SFX(pool_run);

/* max pooling's step: v when it is larger or a NaN (a NaN wins its window), else acc; written
 * as selects, not a branch, so the data does not steer the loop. */
static inline T SFX(pool_take)(T acc, T v) {
  T m = v > acc ? v : acc;
  return v != v ? v : m;
}

/* Output (oy, ox) of a plane whose rows from yb on lie at xp (row iy at xp + (iy - yb) w: the
 * whole plane, yb 0, or a band of its rows), its window walked row by row. */
static inline T SFX(pool_one)(const ct__conv_geom *g, const T *xp, int64_t yb, int64_t oy,
                              int64_t ox) {
  int64_t y0, y1, x0, x1, cnt = ct__pool_window(g, oy, ox, &y0, &y1, &x0, &x1);
  T acc = g->max ? -(T)INFINITY : 0;
  for (int64_t iy = y0; iy < y1; iy++) {
    const T *row = xp + (iy - yb) * g->w;
    if (g->max) {
      for (int64_t ix = x0; ix < x1; ix++) acc = SFX(pool_take)(acc, row[ix]);
    } else {
      for (int64_t ix = x0; ix < x1; ix++) acc += row[ix];
    }
  }
  return g->max ? (y1 > y0 && x1 > x0 ? acc : 0) : (cnt > 0 ? acc / (T)cnt : 0);
}

/* One tap over the run [ca, cb) of a row of outputs, input elements SW apart from row (output
 * ca's element). */
#define POOL_TAP(SW)                                                                     \
  do {                                                                                   \
    if (g->max) {                                                                        \
      for (int64_t ox = ca; ox < cb; ox++) {                                             \
        orow[ox] = SFX(pool_take)(orow[ox], row[(ox - ca) * (SW)]);                      \
      }                                                                                  \
    } else {                                                                             \
      for (int64_t ox = ca; ox < cb; ox++) orow[ox] += row[(ox - ca) * (SW)];            \
    }                                                                                    \
  } while (0)

/* Row oy of a plane (its rows from yb on at xp, as pool_one reads them): the outputs whose
 * window lies within the image's columns, [ca, cb), take each window element (row by row, left
 * to right: each output's own order) across the whole run at once, one tap at a time; the
 * outputs at the edges go one by one. Row pointers start at output ca's first element (ca sw
 * - pl >= 0), never before the row: a pointer before an array's start is undefined even
 * unread, and xp's first row may be its buffer's (conv2d_pool's band). */
static inline __attribute__((always_inline)) void SFX(pool_row)(const ct__conv_geom *g,
                                                                 const T *xp, int64_t yb,
                                                                 int64_t oy, T *orow,
                                                                 int64_t ca, int64_t cb) {
  for (int64_t ox = 0; ox < g->ow; ox++) {
    if (ox == ca && ca < cb) ox = cb;
    if (ox < g->ow) orow[ox] = SFX(pool_one)(g, xp, yb, oy, ox);
  }
  if (ca >= cb) return;
  int64_t y0, y1, x0, x1, cnt = ct__pool_window(g, oy, ca, &y0, &y1, &x0, &x1);
#ifdef POOL_MAX_S2 /* this dtype's max pooling at stride 2 in registers, where the CPU has it */
  if (g->max && g->sw == 2 && y1 > y0 &&
      POOL_MAX_S2(xp + ((y0 - yb) * g->w + 2 * ca - g->pl), g->w, y1 - y0, g->kw, 0, cb - ca,
                  orow + ca)) {
    return;
  }
#endif
  for (int64_t ox = ca; ox < cb; ox++) orow[ox] = g->max ? -(T)INFINITY : 0;
  for (int64_t iy = y0; iy < y1; iy++) {
    for (int64_t kx = 0; kx < g->kw; kx++) {
      const T *row = xp + ((iy - yb) * g->w + ca * g->sw + kx - g->pl);
      /* strides 1 and 2 as constants: contiguous loads, or two loads and a permute, where a
       * stride known only at run time had each element loaded alone */
      if (g->sw == 1) {
        POOL_TAP(1);
      } else if (g->sw == 2) {
        POOL_TAP(2);
      } else {
        POOL_TAP(g->sw);
      }
    }
  }
  for (int64_t ox = ca; ox < cb; ox++) {
    orow[ox] = g->max ? (y1 > y0 ? orow[ox] : 0) : (cnt > 0 ? orow[ox] / (T)cnt : 0);
  }
}

/* The outputs of a row whose window lies within the image's columns: [*ca, *cb) (ox sw - pl >= 0
 * and ox sw - pl + kw <= w); empty when none does. */
static void SFX(pool_inner_cols)(const ct__conv_geom *g, int64_t *ca, int64_t *cb) {
  int64_t last = g->w + g->pl - g->kw;
  *ca = (g->pl + g->sw - 1) / g->sw;
  if (*ca > g->ow) *ca = g->ow;
  *cb = last < 0 ? 0 : last / g->sw + 1;
  if (*cb > g->ow) *cb = g->ow;
  if (*cb < *ca) *cb = *ca;
}

/* A plane of 2x2 windows at stride 2 tiling it (pool_tiles2): each output takes row 2 oy's
 * elements 2 ox, 2 ox + 1, then row 2 oy + 1's, as pool_one does (max's first take from -inf
 * gives the element itself, bit for bit), a row's outputs in one packed loop. */
static void SFX(pool_plane2)(const ct__conv_geom *g, const T *xp, T *o) {
  const int64_t ow = g->ow, w = g->w;
  for (int64_t oy = 0; oy < g->oh; oy++, o += ow) {
    const T *r0 = xp + 2 * oy * w, *r1 = r0 + w;
    if (g->max) {
      CT__SIMD for (int64_t ox = 0; ox < ow; ox++) {
        T acc = SFX(pool_take)(r0[2 * ox], r0[2 * ox + 1]);
        acc = SFX(pool_take)(acc, r1[2 * ox]);
        o[ox] = SFX(pool_take)(acc, r1[2 * ox + 1]);
      }
    } else {
      CT__SIMD for (int64_t ox = 0; ox < ow; ox++) {
        o[ox] = ((T)0 + r0[2 * ox] + r0[2 * ox + 1] + r1[2 * ox] + r1[2 * ox + 1]) / (T)4;
      }
    }
  }
}

/* The gradient of a pool_plane2 plane: every element lies in exactly one window, so each is
 * written once, 0 + its share (max: the window's first element equal to Out takes Out@GRAD, the
 * others 0; avg: each a quarter), the bytes of the zeroed plane added into. */
static void SFX(pool_plane2_grad)(const ct__conv_geom *g, const T *xp, const T *o, const T *d,
                                  T *dx) {
  const int64_t ow = g->ow, w = g->w;
  for (int64_t oy = 0; oy < g->oh; oy++, o += ow, d += ow) {
    const T *r0 = xp + 2 * oy * w, *r1 = r0 + w;
    T *q0 = dx + 2 * oy * w, *q1 = q0 + w;
    if (g->max) {
      CT__SIMD for (int64_t ox = 0; ox < ow; ox++) {
        T ov = o[ox], dv = (T)0 + d[ox], a = r0[2 * ox], b = r0[2 * ox + 1];
        T c = r1[2 * ox], e = r1[2 * ox + 1];
        int on = ov != ov; /* bitwise, not short-circuit: no branch in the loop */
        int ea = (a == ov) | (on & (a != a)), eb = ((b == ov) | (on & (b != b))) & !ea;
        int ec = ((c == ov) | (on & (c != c))) & !(ea | eb);
        int ee = ((e == ov) | (on & (e != e))) & !(ea | eb | ec);
        q0[2 * ox] = ea ? dv : 0;
        q0[2 * ox + 1] = eb ? dv : 0;
        q1[2 * ox] = ec ? dv : 0;
        q1[2 * ox + 1] = ee ? dv : 0;
      }
    } else {
      CT__SIMD for (int64_t ox = 0; ox < ow; ox++) {
        T share = (T)0 + d[ox] / (T)4;
        q0[2 * ox] = share;
        q0[2 * ox + 1] = share;
        q1[2 * ox] = share;
        q1[2 * ox + 1] = share;
      }
    }
  }
}

/* Planes [b, e) each pooled whole into one output (global pooling: pool_whole): each summed or
 * maxed over its elements in memory order, the order pool_row takes, 8 planes side by side so
 * that their chains overlap (one chain a plane was 200 us for mobilenet_v2's [1, 1280, 7, 7]). */
static void SFX(pool_whole_planes)(const ct__conv_geom *g, const T *x, T *out, int64_t b,
                                   int64_t e) {
  int64_t y0, y1, x0, x1, cnt = ct__pool_window(g, 0, 0, &y0, &y1, &x0, &x1);
  const int64_t hw = g->h * g->w;
  const bool any = y1 > y0 && x1 > x0;
  for (int64_t p = b; p < e; p += 8) {
    const int64_t np = e - p < 8 ? e - p : 8;
    T acc[8];
    for (int64_t k = 0; k < 8; k++) acc[k] = g->max ? -(T)INFINITY : 0;
    const T *xp = x + p * hw;
    if (np == 8 && g->max) {
      for (int64_t i = 0; i < hw; i++) {
        for (int k = 0; k < 8; k++) acc[k] = SFX(pool_take)(acc[k], xp[k * hw + i]);
      }
    } else if (np == 8) {
      for (int64_t i = 0; i < hw; i++) {
        for (int k = 0; k < 8; k++) acc[k] += xp[k * hw + i];
      }
    } else {
      for (int64_t k = 0; k < np; k++) {
        for (int64_t i = 0; i < hw; i++) {
          acc[k] = g->max ? SFX(pool_take)(acc[k], xp[k * hw + i]) : acc[k] + xp[k * hw + i];
        }
      }
    }
    for (int64_t k = 0; k < np; k++) {
      out[p + k] = g->max ? (any ? acc[k] : 0) : (cnt > 0 ? acc[k] / (T)cnt : 0);
    }
  }
}

/* Cloned per vector width: the same selects and sums in wider lanes. */
CT__VM_CLONES static void SFX(pool_planes)(void *arg, int64_t b, int64_t e) {
  const SFX(pool_run) *r = arg;
  const ct__conv_geom *g = &r->g;
  if (pool_whole(g)) {
    SFX(pool_whole_planes)(g, r->x, r->out, b, e);
    return;
  }
  if (pool_tiles2(g)) {
    for (int64_t p = b; p < e; p++) {
      SFX(pool_plane2)(g, r->x + p * g->h * g->w, r->out + p * g->oh * g->ow);
    }
    return;
  }
  int64_t ca, cb;
  SFX(pool_inner_cols)(g, &ca, &cb);
  for (int64_t p = b; p < e; p++) {
    const T *xp = r->x + p * g->h * g->w;
    T *o = r->out + p * g->oh * g->ow;
    for (int64_t oy = 0; oy < g->oh; oy++) SFX(pool_row)(g, xp, 0, oy, o + oy * g->ow, ca, cb);
  }
}

/* Rows [oy0, oy1) of an output plane o (OH x OW) of pool plan g, from the input plane's rows
 * [yb, ...) at band (rows g->w apart: every row the windows of those outputs read): pool_row's
 * arithmetic, so pool2d's bits (conv2d_pool's kernel, ops/cpu/conv_pool.c). */
void SFX(ct__pool_band)(const ct__conv_geom *g, const T *band, int64_t yb, int64_t oy0,
                        int64_t oy1, T *o) {
  int64_t ca, cb;
  SFX(pool_inner_cols)(g, &ca, &cb);
  for (int64_t oy = oy0; oy < oy1; oy++) SFX(pool_row)(g, band, yb, oy, o + oy * g->ow, ca, cb);
}

static void SFX(pool_planes_grad)(void *arg, int64_t b, int64_t e) {
  const SFX(pool_run) *r = arg;
  const ct__conv_geom *g = &r->g;
  const T *o = r->o + b * g->oh * g->ow, *d = r->d + b * g->oh * g->ow;
  if (pool_tiles2(g)) {
    for (int64_t p = b; p < e; p++) {
      int64_t at = (p - b) * g->oh * g->ow;
      SFX(pool_plane2_grad)(g, r->x + p * g->h * g->w, o + at, d + at, r->out + p * g->h * g->w);
    }
    return;
  }
  for (int64_t p = b; p < e; p++) {
    const T *xp = r->x + p * g->h * g->w;
    T *dxp = r->out + p * g->h * g->w;
    for (int64_t i = 0; i < g->h * g->w; i++) dxp[i] = 0;
    for (int64_t oy = 0; oy < g->oh; oy++) {
      for (int64_t ox = 0; ox < g->ow; ox++, o++, d++) {
        int64_t y0, y1, x0, x1, cnt = ct__pool_window(g, oy, ox, &y0, &y1, &x0, &x1);
        if (!g->max) {
          T share = cnt > 0 ? *d / (T)cnt : 0;
          for (int64_t iy = y0; iy < y1; iy++) {
            for (int64_t ix = x0; ix < x1; ix++) dxp[iy * g->w + ix] += share;
          }
          continue;
        }
        bool done = false; /* the first element equal to Out takes the gradient */
        for (int64_t iy = y0; iy < y1 && !done; iy++) {
          for (int64_t ix = x0; ix < x1 && !done; ix++) {
            T v = xp[iy * g->w + ix];
            if (v == *o || (v != v && *o != *o)) {
              dxp[iy * g->w + ix] += *d;
              done = true;
            }
          }
        }
      }
    }
  }
}

ct_status SFX(ct__cpu_pool2d)(const ct_kernel_ctx *c) {
  SFX(pool_run) r;
  ct_status st = ct__pool_plan(c, ct_kernel_in(c, CT__IN_X, 0)->dims, &r.g);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  r.out = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (CT__UNLIKELY(r.out == NULL)) return ct_last_status();
  r.x = ct__k_in_data(ct_kernel_in(c, CT__IN_X, 0));
  ct__parallel_for(r.g.n * r.g.c, conv_grain(r.g.h * r.g.w + r.g.oh * r.g.ow), SFX(pool_planes),
                   &r);
  return CT_OK;
}

static ct_status SFX(pool2d_grad)(const ct_kernel_ctx *c) {
  SFX(pool_run) r;
  ct_status st = ct__pool_plan(c, ct_kernel_in(c, CT__POOL_X, 0)->dims, &r.g);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  r.out = ct__k_out_data(c, 0, 0, c->dtype);
  if (CT__UNLIKELY(r.out == NULL)) return ct_last_status();
  r.x = ct__k_in_data(ct_kernel_in(c, CT__POOL_X, 0));
  r.o = ct__k_in_data(ct_kernel_in(c, CT__POOL_OUT, 0));
  r.d = ct__k_in_data(ct_kernel_in(c, CT__POOL_DOUT, 0));
  ct__parallel_for(r.g.n * r.g.c, conv_grain(r.g.h * r.g.w + r.g.oh * r.g.ow),
                   SFX(pool_planes_grad), &r);
  return CT_OK;
}

#undef POOL_TAP
