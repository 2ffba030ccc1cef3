/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/gemm.h: corten's own GEMM for the CPU kernels (docs/design/gemm.md).
 *
 * C = alpha op(A) op(B) + beta C, row-major, op(A) m x k and op(B) k x n; beta 0 ignores C's old
 * values (NaN included), as BLAS does; alpha 0 (after rounding to the dtype) or k 0 reads neither
 * A nor B. Blocked as Goto's GEMM: C split into blocks shared out over the threads, each packing
 * its panels of B and blocks of A, a micro-kernel of vector registers over each tile of C,
 * chosen at run time for the CPU (AVX-512, AVX2 with FMA, or portable C).
 *
 * Every element of C is the same sum in the same order however the work is split: each is
 * summed over k in blocks of a length fixed by the dtype alone, each block in order in one
 * register lane. So the result does not depend on the thread count, on the tile an element
 * falls in, or on whether the call runs inside another kernel's piece. The threads are corten's
 * own (ops/cpu/parallel.h): a call from inside a piece runs on its thread alone.
 *
 * The packing space is the calling thread's scratch buffer (common/alloc.h), kept between calls,
 * so a call of a size already seen allocates nothing; it counts in the host's reserved bytes and
 * ct_memory_empty_cache gives it back. The one error is running out of host memory for
 * it: CT_ERR_OUT_OF_MEMORY, C unchanged, with a message naming the GEMM's sizes. */
#ifndef CORTEN_OPS_CPU_GEMM_H
#define CORTEN_OPS_CPU_GEMM_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "corten/op.h"
#include "corten/status.h"

/* The length of the blocks of k each element is summed over (both dtypes). */
#define CT__GEMM_KC 256

/* Packs rows [p0, p0 + kc) x columns [j0, j0 + nc) of a B that is never stored (conv2d's im2col)
 * as the GEMM packs B: slivers of nr columns one after another, each kc rows of nr values,
 * columns past nc zero. */
typedef void (*ct__gemm_pack_fn)(const void *ctx, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
                                 int nr, void *dst);

/* An epilogue on C's final values (after alpha op(A) op(B) + beta C, and after the last block of
 * k): C[i][j] = act(C[i][j] + bias[i bias_inc] + res[i ldr + j]), each step rounded in the dtype
 * as the separate elementwise ops round it, so the bits are those of the GEMM followed by
 * elementwise_add, elementwise_add and relu or clip. Indices are C's (whatever the plan). bias
 * NULL: no bias (bias_inc 0: one value for every row); res NULL: no residual. act: relu is
 * `v < 0 ? 0 : v`; clamp `v < lo ? lo : v`, then `v > hi ? hi : v`, in the dtype (lo and hi must
 * be values the dtype holds exactly). The tiles the micro-kernel stores itself get it in
 * registers before their store; the others (edge tiles, transposed ones a kernel cannot store)
 * after theirs, row by row. */
enum { CT__EPI_NONE, CT__EPI_RELU, CT__EPI_CLAMP };
/* The act of a fused op's activation attribute: "relu", "clip" (the clamp), else none (the ops'
 * infer-shape refuses any other name). */
static inline int ct__epi_act(const char *act) {
  return strcmp(act, "relu") == 0 ? CT__EPI_RELU : strcmp(act, "clip") == 0 ? CT__EPI_CLAMP
                                                                             : CT__EPI_NONE;
}
typedef struct ct__gemm_epi {
  const void *bias;
  int64_t bias_inc;
  const void *res;
  int64_t ldr;
  int act;
  double lo, hi;
} ct__gemm_epi;

typedef struct ct__gemm {
  bool ta, tb;         /* op(A) = A^T, op(B) = B^T */
  int64_t m, n, k;     /* op(A) is m x k, op(B) k x n, C m x n */
  double alpha, beta;  /* rounded to the dtype */
  const void *a, *b;   /* row-major, leading dims lda, ldb (of A and B as stored) */
  int64_t lda, ldb;
  void *c;
  int64_t ldc;
  ct__gemm_pack_fn pack_b; /* NULL; or B's packer, with pack_ctx (b, ldb and tb unused) */
  const void *pack_ctx;
  /* The kernel reads B's whole slivers where they are instead of packing them first, whatever
   * m: for a B of few rows (k) the caller has just written, so in cache (Winograd's transformed
   * patches). The same sums, so the same bits; ignored for a transposed or packer-given B and
   * when the plan swaps the product. */
  bool b_in_place;
  /* The kernel reads the product's A (op(A), or op(B)^T when the plan swaps) where its rows
   * lie, instead of packing it into slivers, when those rows run along memory (not a
   * transposed A; an A packed beforehand at the plan's width is read from its packing) and
   * the kernel set has such kernels (AVX-512 float32): for an A the caller has just written,
   * so in cache, whose packing would be a transpose (the attention's probabilities, a block's
   * channels-last depthwise output). The same sums, so the same bits. */
  bool a_in_place;
  /* op(A) or op(B) packed beforehand by ct__gemm_pack (a constant operand, a layer's weights,
   * packed once for many calls): NULL, or the packing and the width ct__gemm_pack returned. The
   * call reads it where its plan packs that operand in slivers of that width (the plan is the
   * same for the same m, n, k and pack_b); otherwise it packs from a and b as usual, which stay
   * required. The packed values are the operand's, so the sums and the bits are the same. */
  const void *a_packed, *b_packed;
  int a_packed_w, b_packed_w;
  const ct__gemm_epi *epi; /* NULL, or the epilogue above (not for ct__gemm_batched) */
  /* NULL, or next_bytes the caller reads right after this call (the next of a series of
   * products' packed constant operand, which comes from memory at every run: Winograd's U of
   * the next position): fetched into L2 a few lines at each of the kernel's tiles while the
   * call runs, each item of C's first columns its rows' share (ct__gemm_batched: each product
   * all of it). No effect on any value. */
  const void *next;
  int64_t next_bytes;
} ct__gemm;

/* A layer's packed weights larger than this do not stay in L2 from one run to the next (they
 * come from L3 or memory: resnet18's layer4 holds 9.4 MB a convolution); the kernels that
 * stream such weights fetch the next part ahead (conv_direct.c, ct__wino_fetch_next). Below it
 * they stay in L2 between runs and the hardware's own prefetch is enough. */
#define CT__FETCH_AHEAD_BYTES ((int64_t)1 << 20)

ct_status ct__gemm_f32(const ct__gemm *g);
ct_status ct__gemm_f64(const ct__gemm *g);

/* Operand `which` (0: op(A), m x k; 1: op(B), k x n) of product g packed as g's plan packs it:
 * ct__gemm_packed_elems gives its size in elements (rows rounded up to the sliver width, times
 * k) and the width (*width, for a_packed_w or b_packed_w); ct__gemm_pack writes it into dst
 * (64-byte aligned, that many elements). Only g's sizes, pack_b and that operand are read. */
int64_t ct__gemm_packed_elems(const ct__gemm *g, int which, size_t elem_size, int *width);
void ct__gemm_pack_f32(const ct__gemm *g, int which, float *dst);
void ct__gemm_pack_f64(const ct__gemm *g, int which, double *dst);

/* Operand `which` of count products like g (product e's operand stride elements after product
 * e - 1's) packed as ct__gemm_pack packs it and kept between runs as the derived data of the
 * kernel's constant input (slot, i) (ops/kernel.h's ct__k_derived; tagged with kind, the width
 * and the element size; packed at the first run or when the plan's width changed): product
 * e's packing at the result + e *elems, in slivers of *width, for a_packed / b_packed. NULL
 * when the input is not a constant (or no memory): the products then pack as usual. Call it
 * from the kernel's own thread, before its pieces. */
const float *ct__gemm_kept_f32(const ct_kernel_ctx *c, size_t slot, size_t i, uint64_t kind,
                               const ct__gemm *g, int which, int64_t count, int64_t stride,
                               int64_t *elems, int *width);
const double *ct__gemm_kept_f64(const ct_kernel_ctx *c, size_t slot, size_t i, uint64_t kind,
                                const ct__gemm *g, int which, int64_t count, int64_t stride,
                                int64_t *elems, int *width);

/* Whether g's plan on this CPU's kernels swaps the product and its kernel stores the swapped
 * tiles transposed itself (whole tiles then cost what they compute; edge tiles are written
 * element by element either way). */
bool ct__gemm_stores_swapped_f32(const ct__gemm *g);
bool ct__gemm_stores_swapped_f64(const ct__gemm *g);

/* The items g's plan splits C into on this CPU's kernels at the current thread count, and the
 * pieces (threads) they go to, *pieces (tests). */
int64_t ct__gemm_plan_items_f32(const ct__gemm *g, int64_t *pieces);
int64_t ct__gemm_plan_items_f64(const ct__gemm *g, int64_t *pieces);

/* count products of g's sizes, product e over A + e sa, B + e sb and C + e sc (elements): the
 * same as count calls with those operands, bit for bit, but products too small for a thread of
 * their own share one plan and one packing buffer (an attention's [10, 16] x [16, 10] per head:
 * the plan and the buffer were most of each call). g->epi must be NULL (CT_ERR_INVALID_ARGUMENT
 * otherwise: one epilogue's rows cannot be every product's). */
ct_status ct__gemm_batched_f32(const ct__gemm *g, int64_t count, int64_t sa, int64_t sb,
                               int64_t sc);
ct_status ct__gemm_batched_f64(const ct__gemm *g, int64_t count, int64_t sa, int64_t sb,
                               int64_t sc);

/* FN (ct__gemm_f32 or _f64) on the product as CBLAS's row-major call spells it. */
#define CT__GEMM(FN, TA, TB, M, N, K, ALPHA, A, LDA, B, LDB, BETA, C, LDC)                  \
  FN(&(ct__gemm){.ta = (TA), .tb = (TB), .m = (M), .n = (N), .k = (K), .alpha = (ALPHA), \
                 .beta = (BETA), .a = (A), .b = (B), .lda = (LDA), .ldb = (LDB), .c = (C),   \
                 .ldc = (LDC)})

/* Reports a GEMM's failure as kernel c's ("op 'matmul': out of host memory for ..."); returns
 * its status. */
ct_status ct__gemm_fail(const ct_kernel_ctx *c);

/* The micro-kernel in use for a dtype's size (4 or 8): "avx512", "avx2" or "portable". */
const char *ct__gemm_kernel_name(int elem_size);
/* Whether that kernel is the AVX-512 one: the switch the other kernels' AVX-512 code follows
 * (ops/cpu/conv_avx512.h), so that ct__gemm_use_kernel turns all of it off at once. */
bool ct__gemm_avx512(void);

#endif /* CORTEN_OPS_CPU_GEMM_H */
