/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/attention.c: the attention op on the CPU (ops/defs/attention.c).
 *
 * The work is split into items, each a block of query rows of one batch entry of the scores:
 * its scores (the block's rows of op(Q) times op(K), corten's GEMM), the scale and the mask in
 * the dtype as elementwise_mul / _div / _add compute them, each row's softmax
 * (ops/cpu/softmax_row.h: the softmax kernel's arithmetic), then the block's rows of Out (the
 * probabilities times op(V), the GEMM again). Only the block's scores are stored (in the
 * thread's working space), never the batch's. When an entry's rows take several blocks, a
 * thread packs op(K) and op(V) for the GEMM once for the consecutive blocks of an entry it runs
 * (ct__gemm_pack; a thread's items are one contiguous range), not once a block. The GEMM sums
 * each element in the same order whatever rows it is given and whether an operand comes packed
 * (ops/cpu/gemm.h), so the bits are those of the two matmuls, the elementwise ops and softmax
 * run one by one. */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/alloc.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/softmax_row.h"
#include "ops/defs.h"

/* The scores of a block of rows: at most about this many elements (256 KiB of float32), and at
 * least MIN_ROWS rows when the sequence has them. attention_long (1024 tokens of 64) in blocks
 * of 64 rows, not 256 (1 MiB): 1.97 -> 1.92 ms at batch 1 on one thread, 1.01 -> 0.985 on
 * two, 16.06 -> 15.79 at batch 8 (nine and seven alternating rounds, a Sapphire Rapids VM): the
 * block's probabilities, which the second product reads in place 12 rows at a time, stay
 * nearer (the rows of 120 that leave no short sliver were no faster on one thread and unbalanced
 * two). Whole entries go together up to GROUP_ELEMS of scores. */
#define BLOCK_ELEMS ((int64_t)1 << 16)
#define GROUP_ELEMS ((int64_t)1 << 18)
#define MIN_ROWS 64
/* The fewest multiply-adds worth a piece of the work (about 50 us). */
#define MIN_PIECE_MACS ((int64_t)1 << 20)

typedef struct attn_job {
  const ct__attn_shape *s;
  const void *q, *k, *v, *scale, *mask;
  void *o;
  bool tq, tk, tv, mask_first;
  int64_t rows, blocks; /* rows per block, blocks per batch entry */
  /* Batch entries per item (then rows is Sq, blocks 1): more than one only when each operand's
   * entries lie a fixed stride apart (sq, sk, sv elements; 0: one for all), so that an item's
   * products are one batched GEMM (ct__gemm_batched: small products share a plan). */
  int64_t group, sq_stride, sk_stride, sv_stride;
  int64_t ldq, ldk, ldv, q_mat, k_mat, v_mat;
  /* Whether the blocks' GEMMs take op(K) and op(V) packed once an entry (a thread's packing:
   * kp then vp elements, in slivers of kw and vw). */
  bool pack;
  int64_t kp, vp;
  int kw, vw;
  /* The scale folded into the first GEMM's alpha (row blocks only; see fold_scale): the
   * scale pass is then skipped. */
  bool folded;
  double alpha; /* 1 when not folded */
  atomic_int failed; /* a ct_status of a piece that failed (0: none) */
} attn_job;

/* Batch entry b's offsets: of Q's, K's and V's matrices (in elements) and of the Mask's first
 * element. */
static void entry_offsets(const attn_job *j, int64_t b, int64_t *oq, int64_t *ok, int64_t *ov,
                          int64_t *om) {
  const ct__attn_shape *s = j->s;
  int64_t q = 0, k = 0, v = 0, m = 0;
  for (int r = s->qk.batch_rank - 1; r >= 0; r--) {
    int64_t i = b % s->qk.batch[r];
    b /= s->qk.batch[r];
    q += i * s->qk.bx[r];
    k += i * s->qk.by[r];
    v += i * s->bv[r];
    m += i * s->mask_st[r];
  }
  *oq = q * j->q_mat;
  *ok = k * j->k_mat;
  *ov = v * j->v_mat;
  *om = m;
}

/* The job's operands, strides and blocks. */
static void run_job(const ct_kernel_ctx *c, attn_job *j) {
  const ct__attn_shape *s = j->s;
  const ct_tensor *q = ct_kernel_in(c, CT__ATT_Q, 0), *k = ct_kernel_in(c, CT__ATT_K, 0);
  const ct_tensor *v = ct_kernel_in(c, CT__ATT_V, 0);
  j->q = ct__k_in_data(q);
  j->k = ct__k_in_data(k);
  j->v = ct__k_in_data(v);
  j->scale = ct_kernel_in_count(c, CT__ATT_SCALE) > 0
                 ? ct__k_in_data(ct_kernel_in(c, CT__ATT_SCALE, 0)) : NULL;
  j->mask = ct_kernel_in_count(c, CT__ATT_MASK) > 0
                ? ct__k_in_data(ct_kernel_in(c, CT__ATT_MASK, 0)) : NULL;
  j->tq = c->attr[CT__ATT_TRANSPOSE_Q].u.b;
  j->tk = c->attr[CT__ATT_TRANSPOSE_K].u.b;
  j->tv = c->attr[CT__ATT_TRANSPOSE_V].u.b;
  j->mask_first = c->attr[CT__ATT_MASK_FIRST].u.b;
  j->ldq = q->dims.d[q->dims.rank - 1];
  j->ldk = k->dims.d[k->dims.rank - 1];
  j->ldv = v->dims.d[v->dims.rank - 1];
  j->q_mat = q->dims.d[q->dims.rank - 2] * j->ldq;
  j->k_mat = k->dims.d[k->dims.rank - 2] * j->ldk;
  j->v_mat = v->dims.d[v->dims.rank - 2] * j->ldv;
  int64_t threads = ct_get_num_threads(), sq = s->qk.m;
  const ct__mm_shape *p = &s->qk;
  bool uq = ct__mm_batch_strides_all(p, p->bx, false) || ct__mm_batch_strides_all(p, p->bx, true);
  bool uk = ct__mm_batch_strides_all(p, p->by, false) || ct__mm_batch_strides_all(p, p->by, true);
  bool uv = ct__mm_batch_strides_all(p, s->bv, false) || ct__mm_batch_strides_all(p, s->bv, true);
  j->group = 1;
  if (uq && uk && uv && sq * p->n <= GROUP_ELEMS && p->n_batch > 1) {
    /* Whole entries, as many as fit GROUP_ELEMS of scores, at most a thread's share. */
    int64_t g = GROUP_ELEMS / (sq * p->n), share = (p->n_batch + threads - 1) / threads;
    j->group = g < share ? g : share;
    if (j->group < 1) j->group = 1;
    j->sq_stride = p->batch_rank > 0 && p->bx[p->batch_rank - 1] != 0 ? j->q_mat : 0;
    j->sk_stride = p->batch_rank > 0 && p->by[p->batch_rank - 1] != 0 ? j->k_mat : 0;
    j->sv_stride = p->batch_rank > 0 && s->bv[p->batch_rank - 1] != 0 ? j->v_mat : 0;
    j->rows = sq;
    j->blocks = 1;
    return;
  }
  /* Rows per block: the scores of BLOCK_ELEMS, at least MIN_ROWS; fewer when the batch has
   * fewer entries than threads, so that every thread gets blocks. */
  int64_t rows = BLOCK_ELEMS / s->qk.n;
  if (rows < MIN_ROWS) rows = MIN_ROWS;
  if (s->qk.n_batch < threads) {
    int64_t per = (sq * s->qk.n_batch + threads - 1) / threads;
    if (per < rows) rows = per;
  }
  if (rows > sq) rows = sq;
  if (rows < 1) rows = 1;
  j->rows = rows;
  j->blocks = (sq + rows - 1) / rows;
}

/* Whether the block path's first GEMM can apply the scale as its alpha with the bits of the
 * matmul then elementwise_mul / _div: with k in one of the GEMM's blocks (CT__GEMM_KC), C is
 * alpha times the rounded sum, rounded once, which is the product then a multiply by alpha (in
 * either order: a NaN sum stays that NaN when alpha is not NaN). Division by sc is that when
 * sc is a power of two whose reciprocal is normal: x / sc and x (1 / sc) are the same real
 * number, so the same rounding, subnormal results included. Not for a zero scale (the GEMM
 * reads neither operand at alpha 0, where inf times 0 is NaN). Sets j->alpha and j->folded. */
static void fold_scale(attn_job *j, size_t es) {
  j->alpha = 1;
  j->folded = false;
  if (j->scale == NULL || j->s->qk.k > CT__GEMM_KC) return;
  double sc = es == sizeof(float) ? (double)*(const float *)j->scale
                                  : *(const double *)j->scale;
  if (!isfinite(sc) || sc == 0) return;
  if (j->s->mode == CT__ATT_DIV) {
    int e;
    double inv = 1.0 / sc;
    bool normal = es == sizeof(float) ? isnormal((float)sc) && isnormal((float)inv)
                                      : isnormal(sc) && isnormal(inv);
    if (fabs(frexp(sc, &e)) != 0.5 || !normal) return;
    j->alpha = inv;
    j->folded = true;
  } else if (j->s->mode == CT__ATT_MUL || j->s->mode == CT__ATT_RMUL) {
    j->alpha = sc;
    j->folded = true;
  }
}

/* A block's two products, operands b left to the caller (the packings depend on the sizes and
 * on B's transposition only). */
static ct__gemm k_gemm(const attn_job *j) {
  return (ct__gemm){.ta = j->tq, .tb = j->tk, .m = j->rows, .n = j->s->qk.n, .k = j->s->qk.k,
                    .alpha = 1, .ldb = j->ldk};
}
static ct__gemm v_gemm(const attn_job *j) {
  return (ct__gemm){.tb = j->tv, .m = j->rows, .n = j->s->dv, .k = j->s->qk.n, .alpha = 1,
                    .ldb = j->ldv};
}

/* The sizes of a thread's packed op(K) and op(V) into j. */
static void pack_sizes(attn_job *j, size_t es) {
  ct__gemm gk = k_gemm(j), gv = v_gemm(j);
  const int64_t line = 64 / (int64_t)es; /* op(V)'s packing on a cache line, as the GEMM wants */
  j->kp = (ct__gemm_packed_elems(&gk, 1, es, &j->kw) + line - 1) / line * line;
  j->vp = (ct__gemm_packed_elems(&gv, 1, es, &j->vw) + line - 1) / line * line;
  j->pack = true;
}

/* The fewest items worth a piece. */
static int64_t job_grain(const attn_job *j) {
  const ct__attn_shape *s = j->s;
  int64_t macs = j->group * j->rows * s->qk.n * (s->qk.k + s->dv);
  return macs >= MIN_PIECE_MACS ? 1 : MIN_PIECE_MACS / (macs > 0 ? macs : 1);
}

/* The row stride of a block's scores: n, or a cache line more when n values span a multiple of
 * 4 KiB (a row of 1024 floats). The second GEMM reads its A, the probabilities, where they lie
 * (a_in_place), 12 rows at a time, and rows 4 KiB apart fall in one set of L1 (8 ways): read
 * in place at such a stride the attention over 1024 tokens was no faster than with its rows
 * packed (a transpose, 7 % of its time); with the line more, 2.7 % faster. */
static int64_t score_ld(int64_t n, size_t es) {
  return (n * (int64_t)es) % 4096 == 0 ? n + 64 / (int64_t)es : n;
}

/* The softmax of `rows` rows of n scores ld apart in place: the softmax kernel's choice and
 * rows (ops/cpu/softmax_row.h), in the same clones, so the same exp. */
#define SM_ROWS(T, SFX)                                                                 \
  CT__VM_CLONES static void sm_rows_##SFX(T *x, int64_t rows, int64_t n, int64_t ld) { \
    ct__sm_rows_##SFX(x, x, n, ld, 0, rows, rows);                                      \
  }
SM_ROWS(float, f32)
SM_ROWS(double, f64)

#define ATTN_KERNEL(T, SFX)                                                                    \
  /* Scale and mask on rows [i0, i0 + rows) of batch entry at mask offset om (x's rows ld     \
   * apart), as elementwise_mul / _div and _add round them. */                                 \
  static void scale_mask_##SFX(const attn_job *j, T *x, int64_t ld, int64_t i0, int64_t rows,  \
                               int64_t om) {                                                   \
    const ct__attn_shape *s = j->s;                                                            \
    const int64_t n = s->qk.n, r = s->qk.out.rank;                                             \
    const T sc = j->scale != NULL ? *(const T *)j->scale : (T)0;                               \
    for (int64_t i = 0; i < rows; i++) {                                                       \
      T *row = x + i * ld;                                                                     \
      switch (j->folded ? CT__ATT_NONE : s->mode) {                                            \
        case CT__ATT_MUL: for (int64_t c = 0; c < n; c++) row[c] = row[c] * sc; break;         \
        case CT__ATT_RMUL: for (int64_t c = 0; c < n; c++) row[c] = sc * row[c]; break;        \
        case CT__ATT_DIV: for (int64_t c = 0; c < n; c++) row[c] = row[c] / sc; break;         \
        default: break;                                                                        \
      }                                                                                        \
      if (j->mask == NULL) continue;                                                           \
      const T *m = (const T *)j->mask + om + (i0 + i) * s->mask_st[r - 2];                     \
      const int64_t mc = s->mask_st[r - 1];                                                    \
      if (j->mask_first) {                                                                     \
        for (int64_t c = 0; c < n; c++) row[c] = m[c * mc] + row[c];                           \
      } else {                                                                                 \
        for (int64_t c = 0; c < n; c++) row[c] = row[c] + m[c * mc];                           \
      }                                                                                        \
    }                                                                                          \
  }                                                                                            \
  /* Entries [e0, e0 + g) whole, each product one batched GEMM; x holds g entries' scores. */   \
  static ct_status group_##SFX(attn_job *j, T *x, int64_t e0, int64_t g) {                     \
    const ct__attn_shape *s = j->s;                                                            \
    const int64_t sq = s->qk.m, sk = s->qk.n, dv = s->dv;                                      \
    int64_t oq, ok, ov, om;                                                                    \
    entry_offsets(j, e0, &oq, &ok, &ov, &om);                                                  \
    ct_status st = ct__gemm_batched_##SFX(                                                     \
        &(ct__gemm){.ta = j->tq, .tb = j->tk, .m = sq, .n = sk, .k = s->qk.k, .alpha = 1,      \
                    .a = (const T *)j->q + oq, .lda = j->ldq, .b = (const T *)j->k + ok,       \
                    .ldb = j->ldk, .c = x, .ldc = sk},                                         \
        g, j->sq_stride, j->sk_stride, sq * sk);                                               \
    for (int64_t e = 0; e < g && st == CT_OK; e++) {                                           \
      entry_offsets(j, e0 + e, &oq, &ok, &ov, &om);                                            \
      scale_mask_##SFX(j, x + e * sq * sk, sk, 0, sq, om);                                     \
    }                                                                                          \
    if (st == CT_OK) {                                                                         \
      sm_rows_##SFX(x, g * sq, sk, sk);                                                        \
      entry_offsets(j, e0, &oq, &ok, &ov, &om);                                                \
      st = ct__gemm_batched_##SFX(                                                             \
          &(ct__gemm){.tb = j->tv, .m = sq, .n = dv, .k = sk, .alpha = 1, .a = x, .lda = sk,   \
                      .b = (const T *)j->v + ov, .ldb = j->ldv,                                \
                      .c = (T *)j->o + e0 * sq * dv, .ldc = dv},                               \
          g, sq * sk, j->sv_stride, sq * dv);                                                  \
    }                                                                                          \
    if (st != CT_OK) atomic_store(&j->failed, st);                                             \
    return st;                                                                                 \
  }                                                                                            \
  static void range_##SFX(void *arg, int64_t first, int64_t last) {                            \
    attn_job *j = arg;                                                                         \
    const ct__attn_shape *s = j->s;                                                            \
    const int64_t sq = s->qk.m, sk = s->qk.n, d = s->qk.k, dv = s->dv;                         \
    /* the scores: a group's entries together, or a block's rows at score_ld's stride */       \
    const int64_t ldx = j->group > 1 ? sk : score_ld(sk, sizeof(T));                           \
    T *x = ct__work_take((size_t)(j->group * j->rows * ldx) * sizeof(T));                      \
    if (x == NULL) {                                                                           \
      atomic_store(&j->failed, CT_ERR_OUT_OF_MEMORY);                                          \
      return;                                                                                  \
    }                                                                                          \
    for (int64_t it = first; it < last && j->group > 1; it++) {                                \
      const int64_t e0 = it * j->group, g = s->qk.n_batch - e0 < j->group                      \
                                                 ? s->qk.n_batch - e0 : j->group;              \
      if (group_##SFX(j, x, e0, g) != CT_OK) break;                                            \
    }                                                                                          \
    /* op(K) and op(V) of entry packed_b, for this range's consecutive blocks of an entry (NULL \
     * when not packed: out of memory only costs the packing in every block) */                \
    T *kp = j->group == 1 && j->pack                                                           \
                ? ct__aligned_alloc(64, (size_t)(j->kp + j->vp) * sizeof(T)) : NULL;           \
    int64_t packed_b = -1;                                                                     \
    for (int64_t it = first; it < last && j->group == 1; it++) {                               \
      const int64_t b = it / j->blocks, i0 = it % j->blocks * j->rows;                         \
      const int64_t rows = sq - i0 < j->rows ? sq - i0 : j->rows;                              \
      int64_t oq, ok, ov, om;                                                                  \
      entry_offsets(j, b, &oq, &ok, &ov, &om);                                                 \
      const T *q = (const T *)j->q + oq + (j->tq ? i0 : i0 * j->ldq);                          \
      if (kp != NULL && b != packed_b) {                                                       \
        ct__gemm gk = k_gemm(j), gv = v_gemm(j);                                               \
        gk.b = (const T *)j->k + ok;                                                           \
        gv.b = (const T *)j->v + ov;                                                           \
        ct__gemm_pack_##SFX(&gk, 1, kp);                                                       \
        ct__gemm_pack_##SFX(&gv, 1, kp + j->kp);                                               \
        packed_b = b;                                                                          \
      }                                                                                        \
      ct_status st = ct__gemm_##SFX(&(ct__gemm){                                               \
          .ta = j->tq, .tb = j->tk, .m = rows, .n = sk, .k = d, .a = q,                        \
          .lda = j->ldq, .b = (const T *)j->k + ok, .ldb = j->ldk, .c = x, .ldc = ldx,         \
          .b_packed = kp, .b_packed_w = j->kw, .alpha = j->alpha});                            \
      if (st == CT_OK) {                                                                       \
        scale_mask_##SFX(j, x, ldx, i0, rows, om);                                             \
        sm_rows_##SFX(x, rows, sk, ldx);                                                       \
        st = ct__gemm_##SFX(&(ct__gemm){                                                       \
            .tb = j->tv, .m = rows, .n = dv, .k = sk, .alpha = 1, .a = x, .lda = ldx,          \
            .a_in_place = true, .b = (const T *)j->v + ov, .ldb = j->ldv,                      \
            .c = (T *)j->o + (b * sq + i0) * dv, .ldc = dv,                                    \
            .b_packed = kp == NULL ? NULL : kp + j->kp, .b_packed_w = j->vw});                 \
      }                                                                                        \
      if (st != CT_OK) {                                                                       \
        atomic_store(&j->failed, st);                                                          \
        break;                                                                                 \
      }                                                                                        \
    }                                                                                          \
    free(kp);                                                                                  \
    ct__work_free(x);                                                                          \
  }                                                                                            \
  static ct_status attention_##SFX(const ct_kernel_ctx *c) {                                   \
    ct__attn_shape s;                                                                          \
    ct_status st = ct__attn_plan(c, &s);                                                       \
    if (CT__UNLIKELY(st != CT_OK)) return st;                                                  \
    T *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);                                            \
    if (CT__UNLIKELY(o == NULL)) return ct_last_status();                                      \
    attn_job j = {.s = &s, .o = o};                                                            \
    run_job(c, &j);                                                                            \
    j.failed = 0;                                                                              \
    if (j.group == 1) fold_scale(&j, sizeof(T)); /* the batched products keep alpha 1 */       \
    if (j.group == 1 && j.blocks > 1) pack_sizes(&j, sizeof(T));                              \
    int64_t items = j.group > 1 ? (s.qk.n_batch + j.group - 1) / j.group                      \
                                : s.qk.n_batch * j.blocks;                                     \
    ct__parallel_for(items, job_grain(&j), range_##SFX, &j);                                   \
    /* A piece fails only for host memory (its block of scores, or a GEMM's packing space),   \
     * recorded on the thread that ran it: the message is made here. */                        \
    st = atomic_load(&j.failed);                                                               \
    if (CT__UNLIKELY(st != CT_OK)) {                                                           \
      return ct_kernel_fail(c, st,                                                             \
                            "out of host memory for %lld x %lld scores and their products "   \
                            "(free memory, or run the unfused ops: no optimize option)",       \
                            (long long)(j.group * j.rows), (long long)s.qk.n);                 \
    }                                                                                          \
    return CT_OK;                                                                              \
  }

ATTN_KERNEL(float, f32)
ATTN_KERNEL(double, f64)

static const ct__kernel_set kernels[] = {
    {"attention", CT__KERNELS([CT_FLOAT32] = attention_f32, [CT_FLOAT64] = attention_f64)},
};

const ct__kernel_table ct__cpu_attention = CT__TABLE(kernels);
