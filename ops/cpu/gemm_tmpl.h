/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/gemm_tmpl.h: the GEMM's driver for one dtype, included by ops/cpu/gemm.c with T (the
 * type), SFX(name) (name_f32 ...), UKR (the micro-kernel struct), UKR_GET and KC (the length of
 * the blocks of k, fixed per dtype: every element of C is summed over the same blocks). The plan,
 * the parts and the packing buffers are gemm.c's, shared by both dtypes. */

/* Zeros places [from, width) of each of kc groups of `width` (a sliver's padding), group by
 * group: each group's places are contiguous (stores a vector at a time), where going place by
 * place stored one value every `width` elements, kc times: half the time of a small product's
 * driver ([10, 16] x [16, 10] pads 22 of 32 columns). */
static void SFX(zero_rows)(T *dst, int64_t kc, int64_t from, int width) {
  for (int64_t p = 0; p < kc; p++) {
    T *g = dst + p * width;
    for (int64_t q = from; q < width; q++) g[q] = 0;
  }
}

/* Packs rows [i0, i0 + mc) x columns [p0, p0 + kc) of op(A) into slivers of mh rows (mh <= mr;
 * the last one may be shorter), each kc columns of mr values: the kernel for h rows reads a
 * sliver's first h values of each column alone, so the places past h need not be written. They
 * are zeroed where that costs nothing extra: by the transposing pack in slivers of 8 rows or
 * more, and in A's transposed layout when mh is mr. A sliver of fewer than 8 rows is copied row
 * by row (the transposing pack would write kc (mr - h) zeros besides: a recurrent step's
 * [1, 32] row, 32 values, 384 stores). */
static void SFX(pack_a)(const ct__gemm *g, const UKR *u, int64_t i0, int64_t mc, int mh,
                        int64_t p0, int64_t kc, T *dst) {
  const int mr = u->mr;
  const T *a = g->a;
  if (g->ta) {
    /* A is k x m: a column of a sliver is mr consecutive values of a row of A. A block of 16
     * rows of A at a time (in L1) goes to every sliver in turn: sliver by sliver, each read
     * pieces of mr values from kc rows (a fifth of a swapped 1x1 convolution's time,
     * MobileNetV2's 576 -> 96 on 14 x 14); row by row, the slivers' places for a row lie
     * mr kc values apart, a multiple of 4 KiB, all in one set of L1. */
    const int64_t whole = mc / mh * mh;
    for (int64_t p1 = 0; p1 < kc; p1 += 16) {
      const int64_t pe = kc - p1 < 16 ? kc : p1 + 16;
      T *d = dst;
      int64_t s = 0;
      for (; s < whole; s += mh, d += mr * kc) {
        for (int64_t p = p1; p < pe; p++) {
          const T *src = a + (p0 + p) * g->lda + i0 + s;
          if (mh == 12) {
            memcpy(d + p * 12, src, 12 * sizeof(T));
          } else {
            memcpy(d + p * mr, src, (size_t)mh * sizeof(T));
          }
        }
      }
      for (int64_t p = p1; p < pe && whole < mc; p++) {
        memcpy(d + p * mr, a + (p0 + p) * g->lda + i0 + whole, (size_t)(mc - whole) * sizeof(T));
      }
    }
    if (whole < mc && mh == mr) SFX(zero_rows)(dst + whole / mh * mr * kc, kc, mc - whole, mr);
    return;
  }
  for (int64_t s = 0; s < mc; s += mh, dst += mr * kc) {
    int64_t h = mc - s < mh ? mc - s : mh;
    if (h < 8) {
      const T *src = a + (i0 + s) * g->lda + p0;
      for (int64_t q = 0; q < h; q++) {
        for (int64_t p = 0; p < kc; p++) dst[p * mr + q] = src[q * g->lda + p];
      }
      continue;
    }
    u->pack_across(a + (i0 + s) * g->lda + p0, g->lda, h, kc, mr, dst);
  }
}

/* Packs rows [p0, p0 + kc) x columns [j0, j0 + nc) of op(B) into slivers of nr columns, each kc
 * rows of nr values (columns past nc zero). B's rows are read whole, one after the other. */
static void SFX(pack_b)(const ct__gemm *g, const UKR *u, int64_t p0, int64_t kc, int64_t j0,
                        int64_t nc, T *dst) {
  const int nr = u->nr;
  const T *b = g->b;
  if (!g->tb) { /* B is k x n */
    int64_t whole = nc / nr * nr;
    for (int64_t p = 0; p < kc; p++) {
      const T *src = b + (p0 + p) * g->ldb + j0;
      T *d = dst + p * nr;
      for (int64_t s = 0; s < whole; s += nr, d += nr * kc) {
        for (int64_t q = 0; q < nr; q++) d[q] = src[s + q];
      }
      for (int64_t q = 0; q < nc - whole; q++) d[q] = src[whole + q];
    }
    if (whole < nc) SFX(zero_rows)(dst + whole * kc, kc, nc - whole, nr);
    return;
  }
  for (int64_t s = 0; s < nc; s += nr, dst += nr * kc) { /* B is n x k */
    int64_t w = nc - s < nr ? nc - s : nr;
    u->pack_across(b + (j0 + s) * g->ldb + p0, g->ldb, w, kc, nr, dst);
  }
}

/* The epilogue ep (NULL: none) at C's element (r, q), into *ue; returns ue (NULL for none). */
static const UEPI *SFX(epi_at)(const ct__gemm_epi *ep, int64_t r, int64_t q, UEPI *ue) {
  if (ep == NULL) return NULL;
  ue->bias = ep->bias != NULL ? (const T *)ep->bias + r * ep->bias_inc : NULL;
  ue->bias_inc = ep->bias_inc;
  ue->res = ep->res != NULL ? (const T *)ep->res + r * ep->ldr + q : NULL;
  ue->ldr = ep->ldr;
  ue->act = ep->act;
  ue->lo = (T)ep->lo;
  ue->hi = (T)ep->hi;
  return ue;
}

/* The epilogue of the tile at (i, j) of the product the plan computes (C's (j, i) when it
 * swaps), when this block of k is the last; else NULL. */
static inline const UEPI *SFX(tile_epi)(const ct__gemm *g, const gemm_plan *pl, bool last,
                                        int64_t i, int64_t j, UEPI *ue) {
  if (CT__LIKELY(g->epi == NULL) || !last) return NULL;
  return SFX(epi_at)(g->epi, pl->swap ? j : i, pl->swap ? i : j, ue);
}

/* The epilogue ep on w values of row i of its tile, at v: each step a loop of its own (the same
 * roundings as the element by element form; a test of res inside one loop became a masked load
 * from NULL + j, which the CPU serves through a slow assist). */
static void SFX(epi_row)(T *v, int64_t w, const UEPI *ep, int64_t i) {
  if (ep->bias != NULL) {
    const T b = ep->bias[i * ep->bias_inc];
    for (int64_t j = 0; j < w; j++) v[j] = v[j] + b;
  }
  if (ep->res != NULL) {
    const T *r = ep->res + i * ep->ldr;
    for (int64_t j = 0; j < w; j++) v[j] = v[j] + r[j];
  }
  const T lo = ep->lo, hi = ep->hi;
  if (ep->act == CT__EPI_RELU) {
    for (int64_t j = 0; j < w; j++) v[j] = v[j] < 0 ? (T)0 : v[j];
  } else if (ep->act == CT__EPI_CLAMP) {
    for (int64_t j = 0; j < w; j++) {
      T x = v[j] < lo ? lo : v[j];
      v[j] = x > hi ? hi : x;
    }
  }
}

/* Writes an h x w edge tile, or any tile of a swapped call (C^T computed: element (i, j) of
 * the tile is C's (j, i)), from the kernel's sums in `tile` (rows nr apart): the arithmetic the
 * kernel does on a whole tile, element by element, and the epilogue ep (NULL: none; at the
 * tile's first element of C). */
static void SFX(put_tile)(const gemm_plan *pl, const T *tile, int64_t h, int64_t w, T alpha,
                          T beta, T *c, int64_t ldc, const UEPI *ep) {
  if (!pl->swap) { /* rows of C: the same arithmetic in loops the compiler vectorises */
    for (int64_t i = 0; i < h; i++) {
      const T *t = tile + i * pl->nr;
      T *e = c + i * ldc;
      if (beta != 0) {
        for (int64_t j = 0; j < w; j++) e[j] = alpha * t[j] + beta * e[j];
      } else {
        for (int64_t j = 0; j < w; j++) e[j] = alpha * t[j];
      }
      if (ep != NULL) SFX(epi_row)(e, w, ep, i);
    }
    return;
  }
  /* C's row j holds the tile's column j: h values along memory, written (and given the
   * epilogue) row by row */
  for (int64_t j = 0; j < w; j++) {
    T *e = c + j * ldc;
    if (beta != 0) {
      for (int64_t i = 0; i < h; i++) e[i] = alpha * tile[i * pl->nr + j] + beta * e[i];
    } else {
      for (int64_t i = 0; i < h; i++) e[i] = alpha * tile[i * pl->nr + j];
    }
    if (ep != NULL) SFX(epi_row)(e, h, ep, j);
  }
}

/* Rows [r0, r1) x columns [c0, c1) of the (possibly swapped) product on this thread, with its
 * packing buffers pa (mc x KC) and pb (KC x nc, nc a multiple of nr, 64-byte aligned). For each
 * panel of nc columns and each block of KC of k: B's panel packed (or, when one sliver of A's
 * rows covers them all, read in place where whole), then for each block of mc rows A's block
 * packed and the kernel run over its tiles, a sliver of B (in L1) against each sliver of A (in
 * L2). */
static void SFX(gemm_block)(const ct__gemm *g, const gemm_plan *pl, const UKR *u, int64_t r0,
                            int64_t r1, int64_t c0, int64_t c1, T *pa, T *pb) {
  const int mr = pl->mr, nr = pl->nr;
  const T alpha = (T)g->alpha;
  T *c = g->c;
  int64_t ldc = g->ldc, ci = pl->swap ? 1 : ldc, cj = pl->swap ? ldc : 1; /* C's strides */
  const T *b = g->b;
  /* Operands packed beforehand (ct__gemm_pack): block pc of k starts pc x (rows rounded up to
   * slivers) elements in, and a sliver starting at row (column) i, i x kc into its block. */
  const T *ap = pl->a_kept ? g->a_packed : NULL;
  const bool ai = pl->a_rows; /* A's rows read where they lie, by the kernels that do */
  const T *bp = pl->b_kept ? g->b_packed : NULL;
  const int64_t a_rows = (g->m + mr - 1) / mr * mr, b_cols = (g->n + nr - 1) / nr * nr;
  T tile[CT__UKR_MAX_MR * CT__UKR_MAX_NR] __attribute__((aligned(64)));
  /* g->next's lines this item fetches (its rows' share; the items of the first columns), a
   * few at each kernel call */
  const char *nx = c0 == 0 && g->m > 0 ? (const char *)g->next : NULL;
  const int64_t nx_lines = nx != NULL ? g->next_bytes / 64 : 0;
  int64_t nx_at = nx_lines * r0 / g->m, nx_end = nx_lines * r1 / g->m;
  const int64_t nx_calls = (r1 - r0 + mr - 1) / mr * ((c1 - c0 + nr - 1) / nr) *
                           ((g->k + KC - 1) / KC);
  const int64_t nx_step = nx_calls > 0 ? (nx_end - nx_at) / nx_calls + 1 : 0;
  for (int64_t jc = c0; jc < c1; jc += pl->nc) {
    int64_t ncb = c1 - jc < pl->nc ? c1 - jc : pl->nc;
    int64_t whole = pl->direct && bp == NULL ? ncb / nr * nr : 0; /* columns read in place */
    for (int64_t pc = 0; pc < g->k; pc += KC) {
      int64_t kc = g->k - pc < KC ? g->k - pc : KC;
      const T beta = pc == 0 ? (T)g->beta : 1; /* later blocks add to C */
      const bool last = pc + kc == g->k;       /* the epilogue's block */
      UEPI ue;
      const T *bpanel = bp != NULL ? bp + pc * b_cols + jc * kc : pb;
      if (bp != NULL) {
        /* packed once, before the call */
      } else if (g->pack_b != NULL) {
        g->pack_b(g->pack_ctx, pc, kc, jc, ncb, nr, pb);
      } else if (whole < ncb) { /* the columns not read in place (none: nothing to pack) */
        SFX(pack_b)(g, u, pc, kc, jc + whole, ncb - whole, pb + whole * kc);
      }
      for (int64_t ic = r0; ic < r1; ic += pl->mc) {
        int64_t mcb = r1 - ic < pl->mc ? r1 - ic : pl->mc;
        const T *ablock = ap != NULL ? ap + pc * a_rows + ic * kc : pa;
        /* A packed here (or read in place) goes in slivers of mh rows, the block's rows
         * evenly over as few slivers as mr allows (sliver_rows; the 1x1 convolutions of 7 x 7
         * images, swapped, have 49 pixels along A's rows). Same sums: the kernel's rows do
         * not enter them. Kept packings (ap: pl->even false) have mr-row slivers. */
        const int64_t nsl = (mcb + mr - 1) / mr;
        const int mh = sliver_rows(mcb, mr, pl->even);
        if (ap == NULL && !ai) SFX(pack_a)(g, u, ic, mcb, mh, pc, kc, pa);
        for (int64_t jr = 0; jr < ncb; jr += nr) {
          /* A block of one row (a matrix-vector product): 4 whole slivers at a time, all read
           * in place or all packed, C's row along memory (not swapped). */
          if (mcb == 1 && u->row4 != NULL && !pl->swap && !ai && jr + 4 * nr <= ncb &&
              (jr + 4 * nr <= whole || jr >= whole)) {
            const bool in_place = jr < whole;
            u->row4(kc, ablock, in_place ? b + pc * g->ldb + jc + jr : bpanel + jr * kc,
                    in_place ? g->ldb : nr, in_place ? nr : nr * kc, c + ic * ci + (jc + jr),
                    alpha, beta, SFX(tile_epi)(g, pl, last, ic, jc + jr, &ue));
            jr += 3 * nr; /* and nr more by the loop */
            continue;
          }
          int64_t w = ncb - jr < nr ? ncb - jr : nr;
          const T *bsl = jr < whole ? b + pc * g->ldb + jc + jr : bpanel + jr * kc; /* sliver */
          int64_t bstep = jr < whole ? g->ldb : nr;
          /* B packed beforehand (a layer's weights) comes from the last-level cache or memory:
           * a long sliver's successor is fetched into L2 while the sliver's tiles run, each
           * tile its share of the lines, spread by the kernel over its steps of k: most of
           * MobileNetV2's 1x1 layers on 7 x 7 and 14 x 14 images, 10-17% faster in the model
           * than with none; as a burst of about 100 lines before each call the fetches waited
           * on the fill buffers. On short k, whose B stays in cache, none. */
          const char *pf = bp != NULL && kc >= 128 && bsl + 2 * nr * kc <= bp + b_cols * g->k
                               ? (const char *)(bsl + nr * kc)
                               : NULL;
          const int64_t pf_lines = (int64_t)(nr * kc * sizeof(T) / 64);
          const int64_t pf_step = pf_lines / nsl + 1;
          int64_t pf_at = 0;
          for (int64_t ir = 0, sl = 0; ir < mcb; ir += mh, sl++) {
            int64_t h = mcb - ir < mh ? mcb - ir : mh;
            const char *tpf = NULL;
            int64_t tpq = 0;
            if (pf != NULL && pf_at < pf_lines) {
              const int64_t lines = pf_lines - pf_at < pf_step ? pf_lines - pf_at : pf_step;
              /* the kernel takes at most a line a step; a share of more (a block of A of one
               * or two slivers: 2 kc lines, or kc + 1) has the rest fetched here first */
              const int64_t spread = lines < kc ? lines : kc;
              for (int64_t q = spread; q < lines; q++) {
                __builtin_prefetch(pf + (pf_at + q) * 64, 0, 2);
              }
              tpf = pf + pf_at * 64;
              tpq = (spread << 16) / kc;
              pf_at += lines;
            }
            for (int64_t q = 0; q < nx_step && nx_at < nx_end; q++, nx_at++) {
              __builtin_prefetch(nx + nx_at * 64, 0, 2);
            }
            T *ct = c + (ic + ir) * ci + (jc + jr) * cj;
            const UEPI *te = SFX(tile_epi)(g, pl, last, ic + ir, jc + jr, &ue);
            const T *asl = ablock + sl * mr * kc;
            const T *arow = ai ? (const T *)g->a + (ic + ir) * g->lda + pc : NULL;
            if (w == nr && !pl->swap) {
              if (ai) {
                u->run_ai[h](kc, arow, g->lda, bsl, bstep, ct, ldc, alpha, beta, te, tpf, tpq);
              } else {
                u->run[h](kc, asl, bsl, bstep, ct, ldc, alpha, beta, te, tpf, tpq);
              }
            } else if (w == nr && u->run_t[h] != NULL) { /* swapped, stored transposed */
              if (ai) {
                u->run_ait[h](kc, arow, g->lda, bsl, bstep, ct, ldc, alpha, beta, te, tpf, tpq);
              } else {
                u->run_t[h](kc, asl, bsl, bstep, ct, ldc, alpha, beta, te, tpf, tpq);
              }
            } else {
              if (ai) {
                u->run_ai[h](kc, arow, g->lda, bsl, bstep, tile, nr, 1, 0, NULL, tpf, tpq);
              } else {
                u->run[h](kc, asl, bsl, bstep, tile, nr, 1, 0, NULL, tpf, tpq);
              }
              SFX(put_tile)(pl, tile, h, w, alpha, beta, ct, ldc, te);
            }
          }
        }
      }
    }
  }
}

void SFX(ct__gemm_pack)(const ct__gemm *g, int which, T *dst) {
  const UKR *u = UKR_GET();
  gemm_plan pl;
  ct__gemm swapped;
  const ct__gemm *w = PLAN(g, u, &pl, &swapped);
  int role = which ^ (int)pl.swap; /* the operand's place in the product w */
  const int width = role == 0 ? u->mr : u->nr;
  const int64_t rows = ((role == 0 ? w->m : w->n) + width - 1) / width * width;
  for (int64_t pc = 0; pc < w->k; pc += KC) {
    int64_t kc = w->k - pc < KC ? w->k - pc : KC;
    if (role == 0) {
      SFX(pack_a)(w, u, 0, w->m, u->mr, pc, kc, dst + pc * rows);
    } else {
      SFX(pack_b)(w, u, pc, kc, 0, w->n, dst + pc * rows);
    }
  }
}

const T *SFX(ct__gemm_kept)(const ct_kernel_ctx *c, size_t slot, size_t i, uint64_t kind,
                            const ct__gemm *g, int which, int64_t count, int64_t stride,
                            int64_t *elems, int *width) {
  *elems = 0;
  *width = 0;
  if (!ct__k_is_constant(c, slot, i)) return NULL;
  *elems = ct__gemm_packed_elems(g, which, sizeof(T), width);
  bool fresh;
  T *d = ct__k_derived(c, slot, i, kind | (uint64_t)*width << 8 | sizeof(T),
                       (size_t)(*elems * count) * sizeof(T), &fresh);
  for (int64_t e = 0; d != NULL && fresh && e < count; e++) {
    ct__gemm ge = *g;
    if (which == 0) {
      ge.a = (const T *)g->a + e * stride;
    } else {
      ge.b = (const T *)g->b + e * stride;
    }
    SFX(ct__gemm_pack)(&ge, which, d + e * *elems);
  }
  return d;
}

typedef struct SFX(batch_job) {
  const UKR *u;
  gemm_plan pl;
  ct__gemm swapped;
  const ct__gemm *w; /* the product ct__gemm_batched's plan computes: g or swapped */
  int64_t count, sa, sb, sc, pieces;
  T *buf; /* pieces buffers of pl.item_elems, ct__piece_stride apart */
} SFX(batch_job);

/* Runs [b, e) of a batch's products, run p its share of them with buffer p. */
static void SFX(batch_runs)(void *ctx, int64_t b, int64_t e) {
  const SFX(batch_job) *j = ctx;
  const gemm_plan *pl = &j->pl;
  for (int64_t p = b; p < e; p++) {
    T *pa = j->buf + p * ct__piece_stride(pl->item_elems, sizeof(T));
    for (int64_t i = j->count * p / j->pieces; i < j->count * (p + 1) / j->pieces; i++) {
      ct__gemm we = *j->w;
      we.a = (const T *)we.a + i * (pl->swap ? j->sb : j->sa);
      we.b = (const T *)we.b + i * (pl->swap ? j->sa : j->sb);
      we.c = (T *)we.c + i * j->sc;
      SFX(gemm_block)(&we, pl, j->u, 0, we.m, 0, we.n, pa, pa + pl->a_elems);
    }
  }
}

/* Products [b, e) of a batch through the kernel set's small product u. */
typedef struct SFX(small_job) {
  const ct__gemm *g;
  const UKR *u;
  int64_t sa, sb, sc;
} SFX(small_job);

static void SFX(small_runs)(void *ctx, int64_t b, int64_t e) {
  const SFX(small_job) *j = ctx;
  const ct__gemm *g = j->g;
  for (int64_t t = b; t < e; t++) {
    j->u->small(g->m, g->n, g->k, (const T *)g->a + t * j->sa, g->lda, g->ta,
                (const T *)g->b + t * j->sb, g->ldb, g->tb, (T *)g->c + t * j->sc, g->ldc);
  }
}

ct_status SFX(ct__gemm_batched)(const ct__gemm *g, int64_t count, int64_t sa, int64_t sb,
                                 int64_t sc) {
  const double macs = (double)g->m * (double)g->n * (double)g->k;
  if (g->epi != NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct__gemm_batched: an epilogue's rows cannot be every product's (internal: "
                     "run the products one by one)");
  }
  if (count <= 0 || g->m <= 0 || g->n <= 0) return CT_OK;
  if (macs >= MIN_ITEM_MACS || g->k <= 0 || (T)g->alpha == 0 || g->pack_b != NULL ||
      g->a_packed != NULL || g->b_packed != NULL) { /* a call each */
    for (int64_t e = 0; e < count; e++) {
      ct__gemm ge = *g;
      ge.a = (const T *)g->a + e * sa;
      ge.b = (const T *)g->b + e * sb;
      ge.c = (T *)g->c + e * sc;
      ct_status st = SFX(ct__gemm)(&ge);
      if (st != CT_OK) return st;
    }
    return CT_OK;
  }
  const UKR *u = UKR_GET();
  if (u->small != NULL && g->n <= CT__UKR_SMALL_N && g->k <= KC && g->m <= 64 &&
      (T)g->alpha == 1 && (T)g->beta == 0) { /* whole tiny products, no packing: the same bits */
    SFX(small_job) sj = {g, u, sa, sb, sc};
    const int64_t grain = (int64_t)(MIN_ITEM_MACS / macs) + 1;
    ct__parallel_for(count, ct__parallel_nested() ? count : grain, SFX(small_runs), &sj);
    return CT_OK;
  }
  /* Each product under a thread's share of work: one plan (one item), and the products split
   * into runs, one per thread with its own buffer, when there are enough of them. */
  SFX(batch_job) j = {.u = u, .count = count, .sa = sa, .sb = sb, .sc = sc};
  j.w = PLAN(g, j.u, &j.pl, &j.swapped);
  const int64_t threads = ct__parallel_nested() ? 1 : ct_get_num_threads();
  const double all = macs * (double)count;
  j.pieces = all >= 2 * MIN_ITEM_MACS && threads > 1 ? (threads < count ? threads : count) : 1;
  const int64_t elems = ct__pieces_elems(j.pieces, j.pl.item_elems, sizeof(T));
  j.buf = scratch((size_t)elems * sizeof(T), g);
  if (j.buf == NULL) return ct_last_status();
  ct__parallel_for(j.pieces, 1, SFX(batch_runs), &j);
  ct__scratch_give_back();
  return CT_OK;
}

typedef struct SFX(gemm_job) {
  const ct__gemm *g;
  const UKR *u;
  const gemm_plan *pl;
  T *buf; /* per piece: pl->item_elems, ct__piece_stride apart */
} SFX(gemm_job);

bool SFX(ct__gemm_stores_swapped)(const ct__gemm *g) {
  gemm_plan pl;
  ct__gemm swapped;
  const UKR *u = UKR_GET();
  PLAN(g, u, &pl, &swapped);
  return pl.swap && u->run_t[1] != NULL;
}

int64_t SFX(ct__gemm_plan_items)(const ct__gemm *g, int64_t *pieces) {
  gemm_plan pl;
  ct__gemm swapped;
  PLAN(g, UKR_GET(), &pl, &swapped);
  *pieces = pl.pieces;
  return pl.items;
}

/* Item t of the plan's tm x tn blocks of C, with piece p's buffers. */
static void SFX(gemm_item)(void *ctx, int64_t t, int p) {
  const SFX(gemm_job) *j = ctx;
  const gemm_plan *pl = j->pl;
  T *pa = j->buf + p * ct__piece_stride(pl->item_elems, sizeof(T)), *pb = pa + pl->a_elems;
  int64_t r = t / pl->tn, q = t % pl->tn;
  SFX(gemm_block)(j->g, pl, j->u, part(j->g->m, pl->tm, r, pl->mr),
                  part(j->g->m, pl->tm, r + 1, pl->mr), part(j->g->n, pl->tn, q, pl->nr),
                  part(j->g->n, pl->tn, q + 1, pl->nr), pa, pb);
}

ct_status SFX(ct__gemm)(const ct__gemm *g) {
  if (g->m <= 0 || g->n <= 0) return CT_OK;
  T *c = g->c;
  if (g->k <= 0 || (T)g->alpha == 0) { /* alpha x (a sum not read) + beta x C */
    T beta = (T)g->beta;
    UEPI ue;
    const UEPI *ep = SFX(epi_at)(g->epi, 0, 0, &ue);
    for (int64_t i = 0; i < g->m; i++) {
      T *r = c + i * g->ldc;
      for (int64_t j = 0; j < g->n; j++) r[j] = beta != 0 ? beta * r[j] : 0;
      if (ep != NULL) SFX(epi_row)(r, g->n, ep, i);
    }
    return CT_OK;
  }
  const UKR *u = UKR_GET();
  gemm_plan pl;
  ct__gemm swapped;
  const ct__gemm *w = PLAN(g, u, &pl, &swapped);
  const int64_t elems = ct__pieces_elems(pl.pieces, pl.item_elems, sizeof(T));
  T *buf = scratch((size_t)elems * sizeof(T), g);
  if (buf == NULL) return ct_last_status();
  SFX(gemm_job) j = {w, u, &pl, buf};
  ct__parallel_items(pl.items, (int)pl.pieces, SFX(gemm_item), &j);
  ct__scratch_give_back();
  return CT_OK;
}
