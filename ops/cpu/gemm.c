/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/gemm.c: corten's GEMM (ops/cpu/gemm.h; docs/design/gemm.md): the plan of a call, its
 * packing buffers, and the driver for float32 and float64 (ops/cpu/gemm_tmpl.h). */
#include "ops/cpu/gemm.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/alloc.h"
#include "common/common.h"
#include "corten/op.h"
#include "ops/cpu/gemm_ukr.h"
#include "ops/cpu/parallel.h"
#include "ops/kernel.h"

/* The blocks of k: fixed per dtype (the sums' order depends on them and on nothing else). */
enum { KC_F32 = CT__GEMM_KC, KC_F64 = CT__GEMM_KC };
/* A's block (mc x KC, kept in L2) and B's panel (KC x nc, in the last-level cache), in bytes. */
#define A_BLOCK_BYTES ((int64_t)256 << 10)
#define B_PANEL_BYTES ((int64_t)4 << 20)
/* The fewest multiply-adds worth a thread of their own (about 5 us here), and what packing one
 * element costs in multiply-adds (a load and a store against a sixteenth of a cycle). */
#define MIN_ITEM_MACS ((double)(1 << 18))
#define PACK_COST 16.0
/* What writing one element of C element by element costs (an edge tile, a swapped call), in
 * multiply-adds: a scalar load, multiply, add and store against 32 lanes of fused multiply-adds
 * a cycle. */
#define PUT_COST 32.0

/* B read in place (not packed) when C's rows are at most two slivers of A and k at most this:
 * each value of B is then read once per sliver, the second time from L1, and B's k rows are
 * few enough streams for the prefetchers. MobileNetV2's 32 -> 16 1x1 projection of 112 x 112
 * images (C [16, 12544], k 32), minimum of alternating runs at one thread: 182 -> 133 us an
 * image, 1639 -> 1446 for 8; k 16 onto 24 rows 264 -> 223 us for 8 images of 56 x 56. With k 64
 * to 144 it was no faster, or slower (1.2-1.3 times at k 64 and 144 onto 16 and 24 rows): each
 * of B's rows is a stream, and the packing reads them one after the other. */
#define DIRECT_K 32

/* How a call runs. swap: as C^T = op(B)^T op(A)^T, so that the shorter of C's dims lies along
 * the kernel's rows (h of 1 to MR rows cost what they compute; nr columns cost nr). direct:
 * op(B)'s rows are rows of memory and one sliver of A's rows covers all of C's, so each value of
 * B is read once (or the caller asked, b_in_place, or two slivers cover C and k is at most
 * DIRECT_K): whole slivers are read in place, not packed. C splits in tm x tn blocks (items,
 * shared out over `pieces` threads, ct__parallel_items); each piece has its own packing buffers
 * of item_elems elements: A's block (a_elems) then B's panel. */
typedef struct gemm_plan {
  int mr, nr;
  bool swap, direct;
  bool even; /* A is packed in the call, its blocks' rows spread evenly over their slivers */
  /* How gemm_block reads the operands, where not packing them in the call: A from its packing
   * beforehand (a_packed at width mr) or its rows where they lie (a_in_place, on kernels that
   * do); B from its packing beforehand (b_packed at width nr). */
  bool a_kept, a_rows, b_kept;
  int64_t items, tm, tn, mc, nc, a_elems, item_elems;
  int64_t pieces; /* the threads the items go to, each with buffers of item_elems */
} gemm_plan;

static int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The start of part r of `parts` of [0, len) in whole units (slivers of mr rows or nr
 * columns); len at r == parts. */
static int64_t part(int64_t len, int64_t parts, int64_t r, int unit) {
  int64_t e = div_up(len, unit) * r / parts * unit;
  return e < len ? e : len;
}

/* The rows of each sliver (the last may have fewer) when r rows of A go to the kernel in
 * div_up(r, mr) slivers: mr, or with even slivers (A packed in the call: gemm_plan.even) the
 * rows spread evenly over them, 49 as 10, 10, 10, 10, 9 (a one-row sliver's kernel waits on its
 * two chains of multiply-adds), but not into slivers under 8 rows where mr is 8 or more (13 as
 * 7 and 6: the packing copies those value by value). The driver packs by it and the plan prices
 * by it. */
static int sliver_rows(int64_t r, int mr, bool even) {
  int64_t nsl = div_up(r, mr), e = nsl > 0 ? div_up(r, nsl) : mr;
  return even && (e >= 8 || mr < 8) ? (int)e : mr;
}

/* The rows that r rows of A cost the kernel: its slivers' padded rows (25 rows in even slivers,
 * 9, 8 and 8, cost 27, not 36). */
static int64_t rows_cost(int64_t r, int mr, bool even) {
  return div_up(r, mr) * sliver_rows(r, mr, even);
}

/* What part r of tm parts of C's rows costs the kernel (rows_cost). */
static int64_t part_rows_cost(const ct__gemm *g, const gemm_plan *pl, int64_t tm, int64_t r) {
  return rows_cost(part(g->m, tm, r + 1, pl->mr) - part(g->m, tm, r, pl->mr), pl->mr, pl->even);
}

/* The time of the slowest item of a tm x tn split, in multiply-adds: its block of C, and the
 * packing of its rows of A and its columns of B, where the call packs them (pack_a, pack_b;
 * not an operand packed beforehand or read in place). The rows go in whole slivers of mr to
 * the parts, and the largest part sets the time (49 rows in two parts: 24 and 25; the part of
 * 25 in even slivers costs 27, so that two threads split a 7 x 7 image's 49 pixels rather than
 * 5 slivers of 32 columns as 3 and 2: charged the packing of the layer's weights, packed
 * beforehand, the 3 and 2 looked cheaper, and took 58 and 39 us of MobileNetV2's 576 -> 160
 * projection). */
static double split_cost(const ct__gemm *g, const gemm_plan *pl, int64_t tm, int64_t tn,
                         bool pack_a, bool pack_b) {
  int64_t most = 0;
  for (int64_t r = 0; r < tm; r++) {
    int64_t c = part_rows_cost(g, pl, tm, r);
    most = c > most ? c : most;
  }
  double rows = (double)most;
  double cols = (double)div_up(div_up(g->n, pl->nr), tn) * pl->nr;
  return rows * cols * (double)g->k +
         PACK_COST * ((pack_a ? rows : 0) + (pack_b ? cols : 0)) * (double)g->k;
}

/* The multiply-adds of all the items of a tm x tn split together: their slivers' rounding. */
static double total_cost(const ct__gemm *g, const gemm_plan *pl, int64_t tm, int64_t tn) {
  double rows = 0, cols = 0;
  for (int64_t r = 0; r < tm; r++) rows += (double)part_rows_cost(g, pl, tm, r);
  for (int64_t q = 0; q < tn; q++) {
    cols += (double)(div_up(part(g->n, tn, q + 1, pl->nr) - part(g->n, tn, q, pl->nr), pl->nr) *
                     pl->nr);
  }
  return rows * cols * (double)g->k;
}

/* Items per piece that ct__parallel_items shares out: ITEMS_PER_PIECE (or 2), none under
 * MIN_ITEM_MACS / 4, and the slivers' rounding adding at most a tenth. */
#define ITEMS_PER_PIECE 4

/* The split of plan pl (pl->tm x pl->tn, one item per piece) refined into more items, when an
 * item packs neither operand (A and B packed beforehand or read in place: a layer's weights
 * against a block's band buffer) or only A's one sliver (a matrix-vector product, whose time is
 * B's reading): each thread starts with its own piece's items and one done early takes the
 * other's last ones. MobileNetV2 at batch 1 on two threads, this machine: the second thread's
 * pieces ran 5-15% longer than the first's (a virtual core shared with other machines; for
 * minutes at a time half as fast), the 1280 x 1000 layer's two halves of the weights 129 and
 * 95 us. Where an item packs its rows of A (or columns of B) more items pack them more often:
 * the 320 -> 1280 1x1 layer on 7 x 7 ran 8% slower in eight items than in two. */
static void refine_split(const ct__gemm *g, gemm_plan *pl) {
  const int64_t m_sl = div_up(g->m, pl->mr), n_sl = div_up(g->n, pl->nr);
  const double macs = (double)g->m * (double)g->n * (double)g->k;
  const double base = total_cost(g, pl, pl->tm, pl->tn);
  for (int64_t f = ITEMS_PER_PIECE; f >= 2; f /= 2) {
    if (macs / (double)(pl->pieces * f) < MIN_ITEM_MACS / 4) continue;
    /* along the dimension split already (rows when both are) */
    const bool rows = pl->tm > 1;
    const int64_t tm = rows ? pl->tm * f : pl->tm, tn = rows ? pl->tn : pl->tn * f;
    if (tm <= m_sl && tn <= n_sl && total_cost(g, pl, tm, tn) <= 1.1 * base) {
      pl->tm = tm;
      pl->tn = tn;
      return;
    }
  }
}

/* What storing one element of a transposed tile costs (run_t: its share of two 16 x 16
 * transposes in registers and a masked store), in multiply-adds. */
#define TSTORE_COST 12.0

/* The cost of C's m x n with n along the kernel's columns, in multiply-adds: every column slot
 * of a tile computed, the columns of edge tiles (all, swapped, when the kernel cannot store its
 * tiles transposed) written one by one, and the whole tiles a kernel stores transposed. */
static double layout_cost(int64_t m, int64_t n, int64_t k, int nr, bool swap, int64_t kc_max,
                          bool tstore) {
  int64_t edge = swap && !tstore ? n : n % nr, blocks = div_up(k, kc_max);
  double cost = (double)m * (double)(div_up(n, nr) * nr) * (double)k +
                PUT_COST * (double)m * (double)edge * (double)blocks;
  if (swap && tstore) cost += TSTORE_COST * (double)m * (double)(n - edge) * (double)blocks;
  return cost;
}

/* Whether g runs swapped (C^T = op(B)^T op(A)^T): when the kernel's tiles waste less that way
 * (tstore: the kernel stores a swapped product's whole tiles transposed itself). */
static bool plan_swaps(const ct__gemm *g, int nr, int64_t kc_max, bool tstore) {
  return g->pack_b == NULL && layout_cost(g->n, g->m, g->k, nr, true, kc_max, tstore) <
                                  layout_cost(g->m, g->n, g->k, nr, false, kc_max, tstore);
}

/* The plan of a call, and the product it computes: g, or *swapped (C^T's). ai, ait: the kernel
 * set reads A in place (ct__gemm.a_in_place), and stores such a product transposed. */
static const ct__gemm *plan(const ct__gemm *g, int mr, int nr, bool tstore, bool ai, bool ait,
                            int64_t kc_max, size_t es, gemm_plan *pl, ct__gemm *swapped) {
  pl->mr = mr;
  pl->nr = nr;
  pl->swap = plan_swaps(g, nr, kc_max, tstore);
  if (pl->swap) {
    *swapped = (ct__gemm){.ta = !g->tb, .tb = !g->ta, .m = g->n, .n = g->m, .k = g->k,
                          .alpha = g->alpha, .beta = g->beta, .a = g->b, .b = g->a,
                          .lda = g->ldb, .ldb = g->lda, .c = g->c, .ldc = g->ldc,
                          .a_packed = g->b_packed, .b_packed = g->a_packed,
                          .a_packed_w = g->b_packed_w, .b_packed_w = g->a_packed_w,
                          .a_in_place = g->a_in_place, .epi = g->epi, .next = g->next,
                          .next_bytes = g->next_bytes};
    g = swapped;
  }
  pl->a_kept = g->a_packed != NULL && g->a_packed_w == mr;
  pl->even = !pl->a_kept;
  pl->direct = g->pack_b == NULL && !g->tb &&
               (g->m <= mr || g->b_in_place || (g->m <= 2 * mr && g->k <= DIRECT_K));
  double macs = (double)g->m * (double)g->n * (double)g->k;
  int64_t most = ct__parallel_nested() ? 1 : ct_get_num_threads(); /* nested: runs inline */
  if (macs / MIN_ITEM_MACS < (double)most) most = (int64_t)(macs / MIN_ITEM_MACS);
  int64_t m_sl = div_up(g->m, mr), n_sl = div_up(g->n, nr);
  /* What each item packs: not A read from its packing or its rows, not B read from its packing
   * or, direct, its whole slivers where they lie (gemm_block reads these flags) */
  pl->a_rows = !pl->a_kept && g->a_in_place && !g->ta && ai && (!pl->swap || ait);
  pl->b_kept = g->b_packed != NULL && g->b_packed_w == nr;
  const bool pack_a = !pl->a_kept && !pl->a_rows;
  const bool pack_b = !pl->b_kept && !(pl->direct && g->n >= nr);
  pl->tm = pl->tn = 1;
  /* (one thread: no split to price; a recurrent step's small product pays for each division) */
  double best = most > 1 ? split_cost(g, pl, 1, 1, pack_a, pack_b) : 0;
  for (int64_t tm = 1; most > 1 && tm <= most && tm <= m_sl; tm++) {
    for (int64_t tn = tm == 1 ? 2 : 1; tm * tn <= most && tn <= n_sl; tn++) {
      double cost = split_cost(g, pl, tm, tn, pack_a, pack_b);
      if (cost < best) {
        best = cost;
        pl->tm = tm;
        pl->tn = tn;
      }
    }
  }
  pl->pieces = pl->tm * pl->tn;
  if (pl->pieces > 1 && (!pack_a || g->m <= mr) && !pack_b) refine_split(g, pl);
  pl->items = pl->tm * pl->tn;
  int64_t kc = g->k < kc_max ? g->k : kc_max;
  int64_t rows = div_up(m_sl, pl->tm) * mr, cols = div_up(n_sl, pl->tn) * nr;
  int64_t mc = A_BLOCK_BYTES / (kc_max * (int64_t)es) / mr * mr;
  int64_t nc = B_PANEL_BYTES / (kc_max * (int64_t)es) / nr * nr;
  pl->mc = mc < rows ? mc : rows;
  pl->nc = nc < cols ? nc : cols;
  /* A packed beforehand (a layer's weights) in one block covering every row: narrower panels
   * of B cost no repacking of A, and a panel of L2's size stays in L2 between its packing and
   * its use (a panel of the last level's size went out to it and back, and evicted the next
   * op's input: MobileNetV2's 1x1 projections of 56x56 images to 24 channels, 0.39 -> 0.21 and
   * 0.61 -> 0.29 ms). */
  int64_t nc2 = A_BLOCK_BYTES / (kc_max * (int64_t)es) / nr * nr;
  if (g->a_packed != NULL && pl->mc == rows && nc2 >= nr && nc2 < pl->nc) pl->nc = nc2;
  int64_t line = 64 / (int64_t)es; /* B's panel and each item's buffers start on a line */
  pl->a_elems = div_up(pl->mc * kc, line) * line;
  pl->item_elems = pl->a_elems + div_up(kc * pl->nc, line) * line;
  return g;
}

/* Operand `which` of g in the product its plan computes: its role there (0 A, 1 B), into *role,
 * and the width of its slivers. */
static int packed_role(const ct__gemm *g, int which, size_t es, int *role) {
  int mr, nr;
  bool tstore;
  if (es == sizeof(float)) {
    mr = ct__ukr_f32_get()->mr;
    nr = ct__ukr_f32_get()->nr;
    tstore = ct__ukr_f32_get()->run_t[1] != NULL;
  } else {
    mr = ct__ukr_f64_get()->mr;
    nr = ct__ukr_f64_get()->nr;
    tstore = ct__ukr_f64_get()->run_t[1] != NULL;
  }
  *role = which ^ (int)plan_swaps(g, nr, CT__GEMM_KC, tstore);
  return *role == 0 ? mr : nr;
}

int64_t ct__gemm_packed_elems(const ct__gemm *g, int which, size_t es, int *width) {
  int role;
  *width = packed_role(g, which, es, &role);
  return div_up(which == 0 ? g->m : g->n, *width) * *width * g->k;
}

/* ---- The packing buffer: the calling thread's scratch buffer ------------------------------- */

/* The calling thread's scratch buffer (common/alloc.h) of at least `bytes` (64-byte aligned),
 * taken until ct__scratch_give_back; NULL with the error set. Kept between calls, counted in the
 * host's reserved bytes, and given back by ct_memory_empty_cache. */
static void *scratch(size_t bytes, const ct__gemm *g) {
  void *p = ct__scratch_take(bytes);
  if (p == NULL) {
    ct__error(CT_ERR_OUT_OF_MEMORY,
              "out of host memory for the %zu-byte packing buffer of a %lld x %lld x %lld GEMM "
              "(free memory, or split the product into smaller ones)",
              bytes, (long long)g->m, (long long)g->k, (long long)g->n);
  }
  return p;
}

ct_status ct__gemm_fail(const ct_kernel_ctx *c) {
  char why[256];
  snprintf(why, sizeof why, "%s", ct_last_error());
  return ct_kernel_fail(c, ct_last_status(), "%s", why);
}

/* ---- The drivers -------------------------------------------------------------------------- */

/* The plan of call g on kernel set u (the template's T and KC). */
#define PLAN(g, u, pl, swapped)                                                                \
  plan(g, (u)->mr, (u)->nr, (u)->run_t[1] != NULL, (u)->run_ai[1] != NULL,                   \
       (u)->run_ait[1] != NULL, KC, sizeof(T), pl, swapped)

#define T float
#define SFX(name) name##_f32
#define UKR ct__ukr_f32
#define UEPI ct__ukr_epi_f32
#define UKR_GET ct__ukr_f32_get
#define KC KC_F32
#include "ops/cpu/gemm_tmpl.h"
#undef T
#undef SFX
#undef UKR
#undef UEPI
#undef UKR_GET
#undef KC

#define T double
#define SFX(name) name##_f64
#define UKR ct__ukr_f64
#define UEPI ct__ukr_epi_f64
#define UKR_GET ct__ukr_f64_get
#define KC KC_F64
#include "ops/cpu/gemm_tmpl.h"
#undef T
#undef SFX
#undef UKR
#undef UEPI
#undef UKR_GET
#undef KC
