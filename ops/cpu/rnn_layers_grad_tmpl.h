/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/rnn_layers_grad_tmpl.h: the backward steps of simple_rnn, gru and lstm for one dtype
 * (backpropagation through time), included by ops/cpu/rnn_layers.c after rnn_layers_tmpl.h with
 * the same T, SUF, GEMM, EXP and TANH.
 *
 * For each direction the forward steps run again keeping every state and every gate's input
 * (RL(forward_dir) with keep), then the steps are walked backwards carrying dH and dC. Per step
 * dz holds the gradient of the gates' inputs as R sees them (dzr: gru's h gate with
 * linear_before_reset takes r dz there) and as W sees them (written into the rows of dzx, in X's
 * row order); after the walk one GEMM each gives X@GRAD and W@GRAD. A clipped gate input (its
 * magnitude past clip) passes no gradient. */

/* The gradient outputs and the output gradients read (NULL: unwired). */
typedef struct RL(grad) {
  const T *gy, *glh, *glc;              /* Out@GRAD, LastH@GRAD, LastC@GRAD */
  T *dx, *dw, *dr, *db, *dh0, *dc0, *dp; /* X@GRAD ... P@GRAD */
  T *dh, *dc, *dhn, *dq, *dd;           /* [n, h] each: the carried dH, dC; scratch */
} RL(grad);

/* 1 where a gate input z passed its activation unclipped, else 0. */
static inline T RL(pass)(T z, T clip) { return clip > 0 && (z < -clip || z > clip) ? 0 : 1; }

/* Step st's gate gradients of entry b (active): dzr's row, dzx's row, and the direct part of
 * dH' (dd's row; gru without linear_before_reset adds dq r once dq is known). */
static void RL(step_back)(const RL(run) *j, RL(grad) *g, int64_t d, int64_t st, int64_t b,
                          T *dzr, T *dzx) {
  const ct__rl_plan *p = j->p;
  int64_t n = p->n, h = p->h, gh = p->gates * h, nh = n * h;
  T clip = (T)p->clip;
  const T *z = j->zs + (st * n + b) * gh, *hp = j->hs + st * nh + b * h;
  T *dh = g->dh + b * h, *dd = g->dd + b * h;
  if (p->kind == CT__RL_RNN) {
    for (int64_t k = 0; k < h; k++) {
      dzr[k] = dzx[k] = dh[k] * RL(dact)(p, 0, RL(clip)(z[k], clip)) * RL(pass)(z[k], clip);
      dd[k] = 0;
    }
  } else if (p->kind == CT__RL_GRU) {
    const T *u = j->us + st * nh + b * h;
    for (int64_t k = 0; k < h; k++) {
      T cz = RL(clip)(z[k], clip), cr = RL(clip)(z[h + k], clip), ch = RL(clip)(z[2 * h + k], clip);
      T zt = RL(act)(p, 0, cz), rg = RL(act)(p, 0, cr), ht = RL(act)(p, 1, ch);
      T dzz = dh[k] * (hp[k] - ht) * RL(dact)(p, 0, cz) * RL(pass)(z[k], clip);
      T dzh = dh[k] * ((T)1 - zt) * RL(dact)(p, 1, ch) * RL(pass)(z[2 * h + k], clip);
      dzr[k] = dzx[k] = dzz;
      dzx[2 * h + k] = dzh;
      dd[k] = dh[k] * zt;
      if (p->lbr) {
        T dzrg = dzh * u[k] * RL(dact)(p, 0, cr) * RL(pass)(z[h + k], clip);
        dzr[h + k] = dzx[h + k] = dzrg;
        dzr[2 * h + k] = dzh * rg;
      } else {
        dzr[2 * h + k] = dzh; /* dz_r waits for dq (RL(gru_reset_back)) */
      }
    }
  } else {
    bool fused = j->c->attr[CT__RL_INPUT_FORGET].u.b;
    const T *cp = j->cs + st * nh + b * h, *cn = j->cs + (st + 1) * nh + b * h, *pe = j->peep;
    T *dc = g->dc + b * h;
    for (int64_t k = 0; k < h; k++) {
      T ci = RL(clip)(z[k], clip), co = RL(clip)(z[h + k], clip);
      T cf = RL(clip)(z[2 * h + k], clip), cc = RL(clip)(z[3 * h + k], clip);
      T ig = RL(act)(p, 0, ci), og = RL(act)(p, 0, co);
      T fg = fused ? (T)1 - ig : RL(act)(p, 0, cf);
      T gg = RL(act)(p, 1, cc), tc = RL(act)(p, 2, cn[k]);
      T dzo = dh[k] * tc * RL(dact)(p, 0, co) * RL(pass)(z[h + k], clip);
      T dct = dc[k] + dh[k] * og * RL(dact)(p, 2, cn[k]) + dzo * pe[h + k];
      T di = dct * gg, df = dct * cp[k];
      T dzf = fused ? 0 : df * RL(dact)(p, 0, cf) * RL(pass)(z[2 * h + k], clip);
      if (fused) di -= df;
      T dzi = di * RL(dact)(p, 0, ci) * RL(pass)(z[k], clip);
      T dzc = dct * ig * RL(dact)(p, 1, cc) * RL(pass)(z[3 * h + k], clip);
      dzr[k] = dzx[k] = dzi;
      dzr[h + k] = dzx[h + k] = dzo;
      dzr[2 * h + k] = dzx[2 * h + k] = dzf;
      dzr[3 * h + k] = dzx[3 * h + k] = dzc;
      dc[k] = dct * fg + dzi * pe[k] + dzf * pe[2 * h + k];
      dd[k] = 0;
      if (g->dp != NULL) {
        T *dp = g->dp + d * 3 * h;
        dp[k] += dzi * cp[k];
        dp[h + k] += dzo * cn[k];
        dp[2 * h + k] += dzf * cp[k];
      }
    }
  }
}

/* gru without linear_before_reset, once dq = dz_h Rh is known: dz_r = dq H' r (1 - r), and
 * dH' gains dq r. */
static void RL(gru_reset_back)(const RL(run) *j, RL(grad) *g, int64_t st, int64_t b, T *dzr,
                               T *dzx) {
  const ct__rl_plan *p = j->p;
  int64_t h = p->h, gh = 3 * h, nh = p->n * h;
  T clip = (T)p->clip;
  const T *z = j->zs + (st * p->n + b) * gh, *hp = j->hs + st * nh + b * h;
  const T *dq = g->dq + b * h;
  for (int64_t k = 0; k < h; k++) {
    T cr = RL(clip)(z[h + k], clip), rg = RL(act)(p, 0, cr);
    dzr[h + k] = dzx[h + k] = dq[k] * hp[k] * RL(dact)(p, 0, cr) * RL(pass)(z[h + k], clip);
    g->dd[b * h + k] += dq[k] * rg;
  }
}

/* Direction d's backward walk (after RL(forward_dir) kept its steps); xw becomes dzx. */
static ct_status RL(backward_dir)(RL(run) *j, RL(grad) *g, int64_t d) {
  const ct__rl_plan *p = j->p;
  int64_t n = p->n, h = p->h, gh = p->gates * h, nh = n * h, rows = p->t * n;
  const T *w = j->w + d * gh * p->i, *r = j->r + d * gh * h;
  bool gru0 = p->kind == CT__RL_GRU && !p->lbr;
  T *dzx = j->xw, *dzr = j->hr;
  ct_status s = CT_OK;
  for (int64_t k = 0; k < rows * gh; k++) dzx[k] = 0;
  for (int64_t b = 0; b < n; b++) {
    bool none = RL(len)(j, b) == 0; /* LastH, LastC are zeros then, whatever InitH */
    for (int64_t k = 0; k < h; k++) {
      g->dh[b * h + k] = g->glh != NULL && !none ? g->glh[RL(soff)(p, d, b) + k] : 0;
      g->dc[b * h + k] = g->glc != NULL && !none ? g->glc[RL(soff)(p, d, b) + k] : 0;
    }
  }
  for (int64_t st = p->t - 1; st >= 0; st--) {
    const T *hp = j->hs + st * nh;
    for (int64_t b = 0; b < n; b++) {
      T *zr = dzr + b * gh;
      if (st >= RL(len)(j, b)) {
        for (int64_t k = 0; k < gh; k++) zr[k] = 0;
        for (int64_t k = 0; k < h; k++) g->dd[b * h + k] = g->dh[b * h + k];
        continue;
      }
      int64_t t = RL(step_t)(j, d, st, b);
      if (g->gy != NULL) {
        const T *gy = g->gy + RL(yoff)(p, t, d, b);
        for (int64_t k = 0; k < h; k++) g->dh[b * h + k] += gy[k];
      }
      RL(step_back)(j, g, d, st, b, zr, dzx + RL(xrow)(p, t, b) * gh);
    }
    if (gru0) {
      /* dq = dz_h Rh; dR_h += dz_h^T (r H'), the us the forward kept. */
      s = RL(gemm)(false, false, n, h, h, dzr + 2 * h, gh, r + 2 * h * h, h, false, g->dq, h);
      if (s == CT_OK && g->dr != NULL) {
        s = RL(gemm)(true, false, h, h, n, dzr + 2 * h, gh, j->us + st * nh, h, true,
                     g->dr + (d * gh + 2 * h) * h, h);
      }
      if (s != CT_OK) return s;
      for (int64_t b = 0; b < n; b++) {
        if (st >= RL(len)(j, b)) continue;
        int64_t t = RL(step_t)(j, d, st, b);
        RL(gru_reset_back)(j, g, st, b, dzr + b * gh, dzx + RL(xrow)(p, t, b) * gh);
      }
    }
    /* dH' = dzr R (+ the direct part); dR += dzr^T H'; R's biases take dzr's column sums. */
    int64_t kr = gru0 ? 2 * h : gh;
    s = RL(gemm)(false, false, n, h, kr, dzr, gh, r, h, false, g->dhn, h);
    if (s == CT_OK && g->dr != NULL) {
      s = RL(gemm)(true, false, kr, h, n, dzr, gh, hp, h, true, g->dr + d * gh * h, h);
    }
    if (s != CT_OK) return s;
    for (int64_t k = 0; k < nh; k++) g->dh[k] = g->dhn[k] + g->dd[k];
    if (g->db != NULL) {
      T *drb = g->db + d * 2 * gh + gh;
      for (int64_t b = 0; b < n; b++) {
        for (int64_t k = 0; k < gh; k++) drb[k] += dzr[b * gh + k];
      }
    }
  }
  for (int64_t b = 0; b < n; b++) {
    for (int64_t k = 0; k < h; k++) {
      if (g->dh0 != NULL) g->dh0[RL(soff)(p, d, b) + k] = g->dh[b * h + k];
      if (g->dc0 != NULL) g->dc0[RL(soff)(p, d, b) + k] = g->dc[b * h + k];
    }
  }
  if (g->db != NULL) {
    T *dwb = g->db + d * 2 * gh;
    for (int64_t q = 0; q < rows; q++) {
      for (int64_t k = 0; k < gh; k++) dwb[k] += dzx[q * gh + k];
    }
  }
  if (g->dw != NULL) {
    s = RL(gemm)(true, false, gh, p->i, rows, dzx, gh, j->x, p->i, false, g->dw + d * gh * p->i,
                 p->i);
  }
  if (s == CT_OK && g->dx != NULL) {
    s = RL(gemm)(false, false, rows, p->i, gh, dzx, gh, w, p->i, d > 0, g->dx, p->i);
  }
  return s;
}
