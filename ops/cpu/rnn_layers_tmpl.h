/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/rnn_layers_tmpl.h: the forward steps of simple_rnn, gru and lstm for one dtype,
 * included by ops/cpu/rnn_layers.c once per dtype with
 *   T      the element type (float, double)
 *   SUF    the suffix of the functions made (f32, f64)
 *   GEMM   corten's GEMM of that dtype (ct__gemm_f32, ct__gemm_f64)
 *   EXP, TANH  the C library's functions of that dtype
 * The gates are computed in T, as the GEMM gives them. The backward steps are in
 * rnn_layers_grad_tmpl.h, which reads what the forward steps keep (rl_keep). */

#define RL_CAT2(a, b) a##_##b
#define RL_CAT(a, b) RL_CAT2(a, b)
#define RL(name) RL_CAT(name, SUF)

/* C (m x n, ldc) = A op(B) (+ C when acc): op(B) B^T when tb. Empty products write zeros
 * (or nothing with acc). CT_OK or the GEMM's out-of-memory failure. */
static ct_status RL(gemm)(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T *a,
                          int64_t lda, const T *b, int64_t ldb, bool acc, T *c, int64_t ldc) {
  if (m == 0 || n == 0) return CT_OK;
  if (k == 0) {
    if (!acc) {
      for (int64_t r = 0; r < m; r++) {
        for (int64_t j = 0; j < n; j++) c[r * ldc + j] = 0;
      }
    }
    return CT_OK;
  }
  return CT__GEMM(GEMM, ta, tb, m, n, k, 1, a, lda, b, ldb, acc ? 1 : 0, c, ldc);
}

static inline T RL(clip)(T v, T clip) {
  if (clip > 0) v = v < -clip ? -clip : v > clip ? clip : v;
  return v;
}
static inline T RL(sigm)(T v) { return (T)1 / ((T)1 + EXP(-v)); }

/* Activation a of the plan (0 f, 1 g, 2 h) at v, and its derivative there. */
static inline T RL(act)(const ct__rl_plan *p, int a, T v) {
  T al = (T)p->alpha[a], be = (T)p->beta[a];
  switch (p->act[a]) {
    case CT__ACT_SIGMOID: return RL(sigm)(v);
    case CT__ACT_TANH: return TANH(v);
    case CT__ACT_RELU: return v < 0 ? 0 : v;
    case CT__ACT_LEAKY_RELU: return v >= 0 ? v : al * v;
    case CT__ACT_THRESHOLDED_RELU: return v > al ? v : 0;
    case CT__ACT_SCALED_TANH: return al * TANH(be * v);
    case CT__ACT_HARD_SIGMOID: {
      T y = al * v + be;
      return y < 0 ? 0 : y > 1 ? 1 : y;
    }
    case CT__ACT_ELU: return v >= 0 ? v : al * (EXP(v) - 1);
    case CT__ACT_SOFTSIGN: return v / (1 + (v < 0 ? -v : v));
    case CT__ACT_SOFTPLUS: return v > 30 ? v : LOG1P(EXP(v));
    case CT__ACT_AFFINE: return al * v + be;
    default: return v;
  }
}
static inline T RL(dact)(const ct__rl_plan *p, int a, T v) {
  T al = (T)p->alpha[a], be = (T)p->beta[a];
  switch (p->act[a]) {
    case CT__ACT_SIGMOID: {
      T y = RL(sigm)(v);
      return y * (1 - y);
    }
    case CT__ACT_TANH: {
      T y = TANH(v);
      return 1 - y * y;
    }
    case CT__ACT_RELU: return v > 0 ? 1 : 0;
    case CT__ACT_LEAKY_RELU: return v >= 0 ? 1 : al;
    case CT__ACT_THRESHOLDED_RELU: return v > al ? 1 : 0;
    case CT__ACT_SCALED_TANH: {
      T y = TANH(be * v);
      return al * be * (1 - y * y);
    }
    case CT__ACT_HARD_SIGMOID: {
      T y = al * v + be;
      return y > 0 && y < 1 ? al : 0;
    }
    case CT__ACT_ELU: return v >= 0 ? 1 : al * EXP(v);
    case CT__ACT_SOFTSIGN: {
      T d = 1 + (v < 0 ? -v : v);
      return 1 / (d * d);
    }
    case CT__ACT_SOFTPLUS: return RL(sigm)(v);
    case CT__ACT_AFFINE: return al;
    default: return 1;
  }
}

/* What one layer's run reads and writes, for one direction at a time. */
typedef struct RL(run) {
  const ct__rl_plan *p;
  const ct_kernel_ctx *c;
  const T *x, *w, *r, *b, *h0, *c0, *pp; /* inputs (NULL: unwired) */
  const void *seq;                       /* SequenceLength (NULL: every entry runs t steps) */
  ct_dtype seq_dt;
  T *out, *last_h, *last_c;              /* outputs (NULL: unwired) */
  /* Scratch: xw [t n, G h] (X W^T, rows in X's order), hr [n, G h] (a step's H' R^T), the
   * biases wb, rb [G h] and peepholes [3 h] (zeros when unwired), and the states hs, cs
   * [steps + 1][n][h] (2 steps kept when not keeping), zs [steps][n][G h] the gates' inputs,
   * us [steps][n][h] gru's H' Rh^T + Rbh (linear_before_reset) or r H' (otherwise), and rt
   * [h, G h] the direction's R transposed, so that each step's product reads its rows in place
   * (a GEMM packs a transposed B at every call: most of a small layer's time). */
  T *xw, *hr, *wb, *rb, *peep, *hs, *cs, *zs, *us, *rt;
  bool keep; /* every step's states and gates kept for the backward steps */
  /* Kept between runs when W and R are constants of the executor (RL(consts)): W packed as
   * the B of each direction's X W^T (wp + d wp_elems, slivers of wp_w), and R^T (rtk + d G h h);
   * NULL otherwise. */
  const T *wp, *rtk;
  int64_t wp_elems;
  int wp_w;
} RL(run);

/* Direction d's X W^T into xw (its B, W, transposed). */
static ct__gemm RL(xw_gemm)(const RL(run) *j, int64_t d) {
  const ct__rl_plan *p = j->p;
  const int64_t gh = p->gates * p->h;
  return (ct__gemm){.tb = true, .m = p->t * p->n, .n = gh, .k = p->i, .alpha = 1, .a = j->x,
                    .lda = p->i, .b = j->w + d * gh * p->i, .ldb = p->i, .c = j->xw, .ldc = gh};
}

/* R of direction d transposed: rt [h, G h] from r [G h, h]. */
static void RL(transpose_r)(const ct__rl_plan *p, const T *r, T *rt) {
  const int64_t gh = p->gates * p->h;
  for (int64_t g = 0; g < gh; g++) {
    for (int64_t k = 0; k < p->h; k++) rt[k * gh + g] = r[g * p->h + k];
  }
}

/* W packed for the X W^T products and R^T, kept between runs where they are constants of the
 * executor (ct__k_derived), made at the first run: into j->wp and j->rtk. */
static void RL(consts)(RL(run) *j) {
  const ct__rl_plan *p = j->p;
  const int64_t gh = p->gates * p->h;
  bool fresh;
  if (p->t * p->n > 0 && p->i > 0 && gh > 0) {
    ct__gemm g = RL(xw_gemm)(j, 0);
    j->wp = GEMM_KEPT(j->c, CT__RL_W, 0, RL_W_TAG, &g, 1, p->dirs, gh * p->i, &j->wp_elems,
                      &j->wp_w);
  }
  if (gh * p->h > 0) {
    T *rt = ct__k_derived(j->c, CT__RL_R, 0, RL_R_TAG | sizeof(T),
                          (size_t)(p->dirs * gh * p->h) * sizeof(T), &fresh);
    for (int64_t k = 0; rt != NULL && fresh && k < p->dirs; k++) {
      RL(transpose_r)(p, j->r + k * gh * p->h, rt + k * gh * p->h);
    }
    j->rtk = rt;
  }
}

/* The length of batch entry b. */
static inline int64_t RL(len)(const RL(run) *j, int64_t b) {
  return j->seq != NULL ? ct__rl_seq_at(j->seq, j->seq_dt, b) : j->p->t;
}

/* The row of X (and of xw) holding step t of entry b; the offset of Out's (t, d, b) and of a
 * state's (d, b). */
static inline int64_t RL(xrow)(const ct__rl_plan *p, int64_t t, int64_t b) {
  return p->time_major ? t * p->n + b : b * p->t + t;
}
static inline int64_t RL(yoff)(const ct__rl_plan *p, int64_t t, int64_t d, int64_t b) {
  return (p->time_major ? (t * p->dirs + d) * p->n + b : (b * p->t + t) * p->dirs + d) * p->h;
}
static inline int64_t RL(soff)(const ct__rl_plan *p, int64_t d, int64_t b) {
  return (p->time_major ? d * p->n + b : b * p->dirs + d) * p->h;
}

/* The time step of entry b that step s of direction d processes (s below its length). */
static inline int64_t RL(step_t)(const RL(run) *j, int64_t d, int64_t s, int64_t b) {
  bool back = d == 1 || j->p->reverse;
  return back ? RL(len)(j, b) - 1 - s : s;
}

/* Loads direction d's biases, peepholes and initial states into the scratch. */
static void RL(load)(RL(run) *j, int64_t d) {
  const ct__rl_plan *p = j->p;
  int64_t gh = p->gates * p->h;
  for (int64_t k = 0; k < gh; k++) {
    j->wb[k] = j->b != NULL ? j->b[d * 2 * gh + k] : 0;
    j->rb[k] = j->b != NULL ? j->b[d * 2 * gh + gh + k] : 0;
  }
  for (int64_t k = 0; k < 3 * p->h; k++) j->peep[k] = j->pp != NULL ? j->pp[d * 3 * p->h + k] : 0;
  for (int64_t b = 0; b < p->n; b++) {
    for (int64_t k = 0; k < p->h; k++) {
      j->hs[b * p->h + k] = j->h0 != NULL ? j->h0[RL(soff)(p, d, b) + k] : 0;
      if (j->cs != NULL) j->cs[b * p->h + k] = j->c0 != NULL ? j->c0[RL(soff)(p, d, b) + k] : 0;
    }
  }
}

/* RL(gate_inputs)'s sums over hz gates with H' R^T and gh in all, in the widest vectors the CPU
 * has (the same adds in the same order, element by element). */
CT__VM_CLONES static void RL(gate_sums)(int64_t hz, int64_t gh, const T *restrict xr,
                                        const T *restrict hrr, const T *restrict wb,
                                        const T *restrict rb, T *restrict z) {
  for (int64_t k = 0; k < hz; k++) z[k] = xr[k] + hrr[k] + wb[k] + rb[k];
  for (int64_t k = hz; k < gh; k++) z[k] = xr[k] + wb[k];
}
/* Step s's gates of an entry, pre-activation, from the step's input row xr, hr and the
 * biases: z = x W^T + H' R^T + Wb + Rb (gru's h gate: x Wh^T + Wbh only; it is finished by
 * the step). */
static void RL(gate_inputs)(const RL(run) *j, const T *xr, const T *hrr, T *z) {
  const ct__rl_plan *p = j->p;
  int64_t gh = p->gates * p->h, hz = p->kind == CT__RL_GRU ? 2 * p->h : gh;
  RL(gate_sums)(hz, gh, xr, hrr, j->wb, j->rb, z);
}

/* The lstm cells of one entry in the usual form (sigmoid gates, tanh candidate and cell
 * activation, no clip, no peepholes, no coupled forget gate: every ONNX export of torch.nn.LSTM),
 * over the h units at once: corten's vectorised sigmoid and tanh (ops/cpu/vmath.h) in one loop the
 * compiler vectorises, where the general path calls the C library per gate per unit. */
CT__VM_CLONES static void RL(lstm_cells)(int64_t h, const T *restrict z, const T *restrict cp,
                                         T *restrict cn, T *restrict hn) {
  CT__SIMD for (int64_t k = 0; k < h; k++) {
    T ig = CT__VSIGMOID(z[k]), og = CT__VSIGMOID(z[h + k]), fg = CT__VSIGMOID(z[2 * h + k]);
    T cell = fg * cp[k] + ig * CT__VTANH(z[3 * h + k]);
    cn[k] = cell;
    hn[k] = og * CT__VTANH(cell);
  }
}

/* The gru cells of one entry in the usual form (sigmoid gates, tanh candidate, no clip), as
 * RL(lstm_cells): z's h gate gets its recurrent part (r * us with linear_before_reset, else
 * hr's h columns + Rbh, in add and rbh) and keeps it for the backward steps. */
CT__VM_CLONES static void RL(gru_cells)(int64_t h, T *restrict z, const T *restrict add,
                                        const T *restrict rbh, bool lbr, const T *restrict hp,
                                        T *restrict hn) {
  CT__SIMD for (int64_t k = 0; k < h; k++) {
    T zt = CT__VSIGMOID(z[k]), rg = CT__VSIGMOID(z[h + k]);
    T c = z[2 * h + k] + (lbr ? rg * add[k] : add[k] + rbh[k]);
    z[2 * h + k] = c;
    hn[k] = ((T)1 - zt) * CT__VTANH(c) + zt * hp[k];
  }
}

/* simple_rnn's cells with tanh and no clip. */
CT__VM_CLONES static void RL(rnn_cells)(int64_t h, const T *restrict z, T *restrict hn) {
  CT__SIMD for (int64_t k = 0; k < h; k++) hn[k] = CT__VTANH(z[k]);
}

/* The usual cells through rnn_layers.c's AVX-512 ones in float32 when fast16 (the same bits),
 * else the loops above. */
static void RL(lstm_cells_any)(bool fast16, int64_t h, const T *z, const T *cp, T *cn, T *hn) {
#ifdef CT__T16_X86
  if (sizeof(T) == 4 && fast16) {
    lstm_cells16(h, (const float *)z, (const float *)cp, (float *)cn, (float *)hn);
    return;
  }
#endif
  (void)fast16;
  RL(lstm_cells)(h, z, cp, cn, hn);
}
static void RL(gru_cells_any)(bool fast16, int64_t h, T *z, const T *add, const T *rbh, bool lbr,
                              const T *hp, T *hn) {
#ifdef CT__T16_X86
  if (sizeof(T) == 4 && fast16) {
    gru_cells16(h, (float *)z, (const float *)add, (const float *)rbh, lbr, (const float *)hp,
                (float *)hn);
    return;
  }
#endif
  (void)fast16;
  RL(gru_cells)(h, z, add, rbh, lbr, hp, hn);
}
static void RL(rnn_cells_any)(bool fast16, int64_t h, const T *z, T *hn) {
#ifdef CT__T16_X86
  if (sizeof(T) == 4 && fast16) {
    rnn_cells16(h, (const float *)z, (float *)hn);
    return;
  }
#endif
  (void)fast16;
  RL(rnn_cells)(h, z, hn);
}

/* Whether direction runs of p take the vectorised cells: the usual activations, no clip, and
 * for lstm no peepholes and no coupled forget gate (every ONNX export of torch.nn's layers). */
static bool RL(usual_cells)(const RL(run) *j, bool fused_forget) {
  const ct__rl_plan *p = j->p;
  if (p->clip > 0) return false;
  if (p->kind == CT__RL_RNN) return p->act[0] == CT__ACT_TANH;
  if (p->kind == CT__RL_GRU) return p->act[0] == CT__ACT_SIGMOID && p->act[1] == CT__ACT_TANH;
  return !fused_forget && j->pp == NULL && p->act[0] == CT__ACT_SIGMOID &&
         p->act[1] == CT__ACT_TANH && p->act[2] == CT__ACT_TANH;
}

/* Direction d's steps for batch entries [b0, b1): each step's H' R^T over their rows, their
 * gates, states and Out rows. Entries never read one another's rows, and each element of a
 * GEMM is the same sum whatever rows the call covers (ops/cpu/gemm.h), so any split of the
 * entries gives the same bits. */
static ct_status RL(entries)(const RL(run) *j, int64_t d, int64_t b0, int64_t b1) {
  const ct__rl_plan *p = j->p;
  int64_t n = p->n, h = p->h, gh = p->gates * h, nh = n * h, rows = b1 - b0;
  T clip = (T)p->clip;
  bool fused_forget = p->kind == CT__RL_LSTM && j->c->attr[CT__RL_INPUT_FORGET].u.b;
  bool usual = RL(usual_cells)(j, fused_forget);
  const bool fast16 = usual && ct__gemm_avx512(); /* the kernels' AVX-512 switch */
  const T *rt = j->rtk != NULL ? j->rtk + d * gh * h : j->rt;
  ct_status s;
  for (int64_t st = 0; st < p->t; st++) {
    int64_t at = j->keep ? st : st & 1, nx = j->keep ? st + 1 : (st + 1) & 1;
    const T *hp = j->hs + at * nh, *cp = j->cs != NULL ? j->cs + at * nh : NULL;
    T *hn = j->hs + nx * nh, *cn = j->cs != NULL ? j->cs + nx * nh : NULL;
    T *zs = j->zs + (j->keep ? st * n * gh : 0), *us = j->us + (j->keep ? st * nh : 0);
    /* hr = H' R^T over the gates that take H' (gru without linear_before_reset: z and r). */
    int64_t cols = p->kind == CT__RL_GRU && !p->lbr ? 2 * h : gh;
    s = RL(gemm)(false, false, rows, cols, h, hp + b0 * h, h, rt, gh, false, j->hr + b0 * gh,
                 gh);
    if (s != CT_OK) return s;
    for (int64_t b = b0; b < b1; b++) {
      if (st >= RL(len)(j, b)) continue;
      const T *xr = j->xw + RL(xrow)(p, RL(step_t)(j, d, st, b), b) * gh;
      RL(gate_inputs)(j, xr, j->hr + b * gh, zs + b * gh);
    }
    if (p->kind == CT__RL_GRU) {
      /* us = r H' (then hr's h columns = us Rh^T), or H' Rh^T + Rbh with linear_before_reset. */
      for (int64_t b = b0; b < b1; b++) {
        const T *z = zs + b * gh;
        if (st >= RL(len)(j, b)) { /* a finished entry: its gates were not computed */
          for (int64_t k = 0; k < h; k++) us[b * h + k] = 0;
          continue;
        }
        for (int64_t k = 0; k < h; k++) {
          us[b * h + k] = p->lbr ? j->hr[b * gh + 2 * h + k] + j->rb[2 * h + k]
                                 : (usual ? CT__VSIGMOID(z[h + k])
                                          : RL(act)(p, 0, RL(clip)(z[h + k], clip))) *
                                       hp[b * h + k];
        }
      }
      if (!p->lbr) {
        s = RL(gemm)(false, false, rows, h, h, us + b0 * h, h, rt + 2 * h, gh, false,
                     j->hr + b0 * gh + 2 * h, gh);
        if (s != CT_OK) return s;
      }
    }
    for (int64_t b = b0; b < b1; b++) {
      const T *hpb = hp + b * h;
      T *hnb = hn + b * h;
      if (st >= RL(len)(j, b)) {
        for (int64_t k = 0; k < h; k++) hnb[k] = hpb[k];
        if (cn != NULL) {
          for (int64_t k = 0; k < h; k++) cn[b * h + k] = cp[b * h + k];
        }
        continue;
      }
      T *z = zs + b * gh;
      if (p->kind == CT__RL_RNN && usual) {
        RL(rnn_cells_any)(fast16, h, z, hnb);
      } else if (p->kind == CT__RL_RNN) {
        for (int64_t k = 0; k < h; k++) hnb[k] = RL(act)(p, 0, RL(clip)(z[k], clip));
      } else if (p->kind == CT__RL_GRU && usual) {
        const T *add = p->lbr ? us + b * h : j->hr + b * gh + 2 * h;
        RL(gru_cells_any)(fast16, h, z, add, j->rb + 2 * h, p->lbr, hpb, hnb);
      } else if (p->kind == CT__RL_GRU) {
        for (int64_t k = 0; k < h; k++) {
          T zt = RL(act)(p, 0, RL(clip)(z[k], clip)), rg = RL(act)(p, 0, RL(clip)(z[h + k], clip));
          z[2 * h + k] += p->lbr ? rg * us[b * h + k]
                                 : j->hr[b * gh + 2 * h + k] + j->rb[2 * h + k];
          T ht = RL(act)(p, 1, RL(clip)(z[2 * h + k], clip));
          hnb[k] = ((T)1 - zt) * ht + zt * hpb[k];
        }
      } else if (usual) { /* lstm */
        RL(lstm_cells_any)(fast16, h, z, cp + b * h, cn + b * h, hnb);
      } else {
        const T *cpb = cp + b * h;
        T *cnb = cn + b * h;
        for (int64_t k = 0; k < h; k++) {
          z[k] += j->peep[k] * cpb[k];                 /* i */
          z[2 * h + k] += j->peep[2 * h + k] * cpb[k]; /* f */
          T ig = RL(act)(p, 0, RL(clip)(z[k], clip));
          T fg = fused_forget ? (T)1 - ig : RL(act)(p, 0, RL(clip)(z[2 * h + k], clip));
          T gg = RL(act)(p, 1, RL(clip)(z[3 * h + k], clip));
          T cell = fg * cpb[k] + ig * gg;
          z[h + k] += j->peep[h + k] * cell;           /* o */
          T og = RL(act)(p, 0, RL(clip)(z[h + k], clip));
          cnb[k] = cell;
          hnb[k] = og * RL(act)(p, 2, cell);
        }
      }
      if (j->out != NULL) {
        T *y = j->out + RL(yoff)(p, RL(step_t)(j, d, st, b), d, b);
        for (int64_t k = 0; k < h; k++) y[k] = hnb[k];
      }
    }
  }
  return CT_OK;
}

/* The entries of a direction split across the threads: each piece runs every step for its
 * entries (no barrier between steps); the first piece's failure (a GEMM out of memory) in
 * failed, its message in why. */
typedef struct RL(ejob) {
  const RL(run) *j;
  int64_t d;
  atomic_int failed;
  char why[256];
} RL(ejob);

static void RL(entry_range)(void *arg, int64_t b0, int64_t b1) {
  RL(ejob) *e = arg;
  ct_status s = RL(entries)(e->j, e->d, b0, b1);
  int none = (int)CT_OK;
  if (s != CT_OK && atomic_compare_exchange_strong(&e->failed, &none, (int)s)) {
    snprintf(e->why, sizeof e->why, "%s", ct_last_error());
  }
}

/* The fewest entries worth a piece: all of them (one piece, whose GEMMs split themselves
 * across the threads) when there are fewer entries than threads and each step's H' R^T is
 * worth splitting (2^19 multiply-adds: two of the GEMM's items), so that a few entries with a
 * large state keep every thread; else about 2^16 multiply-adds of steps a piece (an entry's
 * H' R^T per step, gh h, and its gates, counted as 16 a gate element). */
static int64_t RL(entry_grain)(const ct__rl_plan *p) {
  int64_t gh = p->gates * p->h, per = p->t * gh * (p->h + 16);
  int64_t threads = ct__parallel_nested() ? 1 : ct_get_num_threads();
  if (p->n < threads && p->n * gh * p->h >= ((int64_t)1 << 19)) return p->n;
  return per >= ((int64_t)1 << 16) ? 1 : (((int64_t)1 << 16) + per - 1) / (per > 0 ? per : 1);
}

/* Runs direction d's steps: the states after each step, Out's rows, LastH and LastC. */
static ct_status RL(forward_dir)(RL(run) *j, int64_t d) {
  const ct__rl_plan *p = j->p;
  int64_t n = p->n, h = p->h, gh = p->gates * h, nh = n * h;
  const T *w = j->w + d * gh * p->i, *r = j->r + d * gh * h;
  ct_status s;
  if (j->wp != NULL) { /* W packed once (a constant) */
    ct__gemm g = RL(xw_gemm)(j, d);
    g.b_packed = j->wp + d * j->wp_elems;
    g.b_packed_w = j->wp_w;
    s = GEMM(&g);
  } else {
    s = RL(gemm)(false, true, p->t * n, gh, p->i, j->x, p->i, w, p->i, false, j->xw, gh);
  }
  if (s != CT_OK) return s;
  RL(load)(j, d);
  /* rt = R^T: the same products summed in the same order (the GEMM's sums do not depend on
   * B's layout), so the same bits; kept from an earlier run when R is a constant */
  if (j->rtk == NULL) RL(transpose_r)(p, r, j->rt);
  RL(ejob) e = {.j = j, .d = d};
  atomic_init(&e.failed, (int)CT_OK);
  ct__parallel_for(n, RL(entry_grain)(p), RL(entry_range), &e);
  s = (ct_status)atomic_load(&e.failed);
  if (s != CT_OK) return ct__error(s, "%s", e.why); /* on this thread, whichever ran it */
  /* Out is zero past each entry's length; LastH, LastC the final states. */
  int64_t fin = j->keep ? p->t : p->t & 1;
  for (int64_t b = 0; b < n; b++) {
    for (int64_t t = RL(len)(j, b); j->out != NULL && t < p->t; t++) {
      T *y = j->out + RL(yoff)(p, t, d, b);
      for (int64_t k = 0; k < h; k++) y[k] = 0;
    }
    /* An entry of length 0 has no last state: zeros, as onnxruntime gives. */
    bool none = RL(len)(j, b) == 0;
    for (int64_t k = 0; k < h; k++) {
      if (j->last_h != NULL) {
        j->last_h[RL(soff)(p, d, b) + k] = none ? 0 : j->hs[fin * nh + b * h + k];
      }
      if (j->last_c != NULL) {
        j->last_c[RL(soff)(p, d, b) + k] = none ? 0 : j->cs[fin * nh + b * h + k];
      }
    }
  }
  return CT_OK;
}

/* The scratch a run needs, in elements: xw, hr, wb, rb, peep, then hs, cs, zs, us for `steps`
 * kept steps (1 when not keeping: states ping-pong between 2). */
static int64_t RL(scratch_elems)(const ct__rl_plan *p, bool keep) {
  int64_t gh = p->gates * p->h, nh = p->n * p->h, steps = keep ? p->t : 1;
  int64_t states = keep ? p->t + 1 : 2;
  return p->t * p->n * gh + p->n * gh + 2 * gh + 3 * p->h + states * nh * 2 + steps * p->n * gh +
         steps * nh + gh * p->h;
}

/* Opens a run over the scratch buf: the inputs' data, the outputs (fwd: the forward type's,
 * allocated; otherwise none) and the scratch's parts. */
static ct_status RL(open)(RL(run) *j, const ct_kernel_ctx *c, const ct__rl_plan *p, T *buf,
                          bool keep, bool fwd) {
  memset(j, 0, sizeof *j);
  j->p = p;
  j->c = c;
  j->keep = keep;
  const T **in[8] = {&j->x, &j->w, &j->r, &j->b, NULL, &j->h0, &j->c0, &j->pp};
  for (size_t k = 0; k < p->n_in; k++) {
    if (in[k] != NULL && ct_kernel_in_count(c, k) > 0) {
      *in[k] = ct__k_in_data(ct_kernel_in(c, k, 0));
    }
  }
  if (ct_kernel_in_count(c, CT__RL_SEQ) > 0) {
    j->seq = ct__k_in_data(ct_kernel_in(c, CT__RL_SEQ, 0));
    j->seq_dt = ct_kernel_in(c, CT__RL_SEQ, 0)->dtype;
  }
  T **out[3] = {&j->out, &j->last_h, &j->last_c};
  size_t n_out = p->kind == CT__RL_LSTM ? 3 : 2;
  for (size_t k = 0; fwd && k < n_out; k++) {
    if (ct_kernel_out_count(c, k) == 0) continue;
    *out[k] = ct__k_out_data(c, k, 0, c->dtype);
    if (*out[k] == NULL) return ct_last_status();
  }
  int64_t gh = p->gates * p->h, nh = p->n * p->h, steps = keep ? p->t : 1;
  int64_t states = keep ? p->t + 1 : 2;
  j->xw = buf;
  j->hr = j->xw + p->t * p->n * gh;
  j->wb = j->hr + p->n * gh;
  j->rb = j->wb + gh;
  j->peep = j->rb + gh;
  j->hs = j->peep + 3 * p->h;
  j->cs = j->hs + states * nh;
  j->zs = j->cs + states * nh;
  j->us = j->zs + steps * p->n * gh;
  j->rt = j->us + steps * nh;
  if (p->kind != CT__RL_LSTM) j->cs = NULL;
  return CT_OK;
}
