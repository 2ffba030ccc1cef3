/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/gemm_ukr.h: the GEMM's micro-kernels (ops/cpu/gemm_ukr.c), one set per dtype, and the
 * choice among them for this CPU.
 *
 * A micro-kernel computes an h x NR tile of C (h from 1 to MR, one function each): a holds kc
 * columns of MR values of op(A) (a[p MR + i], a packed sliver), b kc rows of NR values of op(B),
 * each row bs apart (NR: a packed sliver; B's own row stride: B read in place); neither need be
 * aligned (the kernels load and store unaligned). It sums acc[i][j] = sum over p of
 * a[p MR + i] b[p bs + j] in order, one fused multiply-add a step in lane j (plain multiply and
 * add in the portable kernel), then writes C[i][j] = alpha acc (+ beta C[i][j] when beta is not
 * 0) to the tile at c, rows ldc apart. So an element's bits depend on its row of A, its column of
 * B and kc alone: not on h, on where its tile lies, or on whether B was packed. */
#ifndef CORTEN_OPS_CPU_GEMM_UKR_H
#define CORTEN_OPS_CPU_GEMM_UKR_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/cpu/gemm.h"

/* The largest MR and NR of any kernel (a tile buffer's size). */
enum { CT__UKR_MAX_MR = 12, CT__UKR_MAX_NR = 32 };

/* The GEMM's epilogue (ops/cpu/gemm.h, ct__gemm_epi) at one tile: its row i adds bias[i
 * bias_inc] (bias not NULL), its element (i, j) res[i ldr + j] (res not NULL), then act with the
 * bounds in the dtype. A kernel given one applies it to its final values before it stores them
 * (it is passed with the last block of k only). */
typedef struct ct__ukr_epi_f32 {
  const float *bias, *res;
  int64_t bias_inc, ldr;
  int act;
  float lo, hi;
} ct__ukr_epi_f32;
typedef struct ct__ukr_epi_f64 {
  const double *bias, *res;
  int64_t bias_inc, ldr;
  int act;
  double lo, hi;
} ct__ukr_epi_f64;

/* With each set, its packing across a matrix: n rows of kc values (src, rows ld apart) become
 * kc groups of `width` values, value p of row q at dst[p width + q], rows n to width zero (a
 * sliver of A stored row by row, or of B stored column by column: a transpose). */
typedef struct ct__ukr_f32 {
  const char *name;
  int mr, nr;
  /* The tile kernels (run, run_t, run_ai, run_ait) fetch into L2 at step p of k the line
   * (p pq >> 16) from pf: the caller's lines spread over the steps, not a burst between
   * calls (pq 0: none; the portable kernels fetch none). */
  void (*run[CT__UKR_MAX_MR + 1])(int64_t kc, const float *a, const float *b, int64_t bs,
                                  float *c, int64_t ldc, float alpha, float beta,
                                  const ct__ukr_epi_f32 *e,
                                  const char *pf, int64_t pq); /* by h; e NULL: none */
  void (*pack_across)(const float *src, int64_t ld, int64_t n, int64_t kc, int width,
                      float *dst);
  /* One row across 4 slivers (row4 below); NULL: none */
  void (*row4)(int64_t kc, const float *a, const float *b, int64_t bs, int64_t ss, float *c,
               float alpha, float beta, const ct__ukr_epi_f32 *e);
  /* run's tiles stored transposed (run_t below), by h; NULLs: none */
  void (*run_t[CT__UKR_MAX_MR + 1])(int64_t kc, const float *a, const float *b, int64_t bs,
                                    float *c, int64_t ldc, float alpha, float beta,
                                    const ct__ukr_epi_f32 *e, const char *pf, int64_t pq);
  /* A whole small product from A and B as stored (small below); NULL: none */
  void (*small)(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, bool ta,
                const float *b, int64_t ldb, bool tb, float *c, int64_t ldc);
  /* run and run_t with A's h rows read where they lie (row i at a + i lda, its values along
   * memory) instead of from a packed sliver: the same sums in the same order; NULLs: none */
  void (*run_ai[CT__UKR_MAX_MR + 1])(int64_t kc, const float *a, int64_t lda, const float *b,
                                     int64_t bs, float *c, int64_t ldc, float alpha, float beta,
                                     const ct__ukr_epi_f32 *e, const char *pf, int64_t pq);
  void (*run_ait[CT__UKR_MAX_MR + 1])(int64_t kc, const float *a, int64_t lda, const float *b,
                                      int64_t bs, float *c, int64_t ldc, float alpha,
                                      float beta, const ct__ukr_epi_f32 *e,
                                      const char *pf, int64_t pq);
} ct__ukr_f32;

typedef struct ct__ukr_f64 {
  const char *name;
  int mr, nr;
  void (*run[CT__UKR_MAX_MR + 1])(int64_t kc, const double *a, const double *b, int64_t bs,
                                  double *c, int64_t ldc, double alpha, double beta,
                                  const ct__ukr_epi_f64 *e, const char *pf, int64_t pq);
  void (*pack_across)(const double *src, int64_t ld, int64_t n, int64_t kc, int width,
                      double *dst);
  void (*row4)(int64_t kc, const double *a, const double *b, int64_t bs, int64_t ss, double *c,
               double alpha, double beta, const ct__ukr_epi_f64 *e);
  void (*run_t[CT__UKR_MAX_MR + 1])(int64_t kc, const double *a, const double *b, int64_t bs,
                                    double *c, int64_t ldc, double alpha, double beta,
                                    const ct__ukr_epi_f64 *e, const char *pf, int64_t pq);
  void (*small)(int64_t m, int64_t n, int64_t k, const double *a, int64_t lda, bool ta,
                const double *b, int64_t ldb, bool tb, double *c, int64_t ldc); /* none yet */
  void (*run_ai[CT__UKR_MAX_MR + 1])(int64_t kc, const double *a, int64_t lda, const double *b,
                                     int64_t bs, double *c, int64_t ldc, double alpha,
                                     double beta, const ct__ukr_epi_f64 *e,
                                     const char *pf, int64_t pq); /* none yet */
  void (*run_ait[CT__UKR_MAX_MR + 1])(int64_t kc, const double *a, int64_t lda,
                                      const double *b, int64_t bs, double *c, int64_t ldc,
                                      double alpha, double beta,
                                      const ct__ukr_epi_f64 *e,
                                      const char *pf, int64_t pq); /* none yet */
} ct__ukr_f64;

/* small computes C = op(A) op(B) (m x n, rows ldc apart) for n <= CT__UKR_SMALL_N and k <= the
 * GEMM's KC straight from A and B as stored, with no packing: each element the fused
 * multiply-adds of run's sums, k in order from a zero, so the bits of run with alpha 1 and beta 0
 * over one block of k (what the GEMM computes for such a product). For the batches of tiny
 * products attention makes ([10, 16] x [16, 10] per head), where packing cost more than the sums. */
enum { CT__UKR_SMALL_N = 16 };

/* run_t computes run's sums for a tile of a swapped product (C^T computed: the tile's element
 * (i, j) is C's (j, i), C's rows ldc apart) and stores each of C's NR rows as h consecutive
 * values: alpha, beta and the epilogue (at C's rows, e's origin the tile's first element of C)
 * applied element by element as run applies them, so the bits are put_tile's. */

/* row4 computes one row of C across 4 slivers of B at once (sliver s at b + s ss), the 1-row
 * kernel's sums lane for lane: eight independent chains instead of two. */

/* The kernel in use: the widest this CPU runs, or the one ct__gemm_use_kernel chose. */
const ct__ukr_f32 *ct__ukr_f32_get(void);
const ct__ukr_f64 *ct__ukr_f64_get(void);

/* Tests: makes every later GEMM use the kernels named "avx512", "avx2" or "portable" (NULL: the
 * widest again). False, and no change, when this CPU cannot run them. */
bool ct__gemm_use_kernel(const char *name);

#endif /* CORTEN_OPS_CPU_GEMM_UKR_H */
