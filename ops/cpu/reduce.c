/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/reduce.c: the CPU kernels of sum (of any number of tensors), mean, reduce_sum and
 * softmax.
 *
 * sum adds its X tensors element by element (equal dims and dtype; integers wrap). mean is the
 * mean of all elements as a rank-0 tensor; the mean of an empty tensor is NaN (0 / 0, as numpy
 * gives). reduce_sum sums over the dims listed in `dim` (all of them when the list is empty);
 * the sum over an empty dim is 0. softmax normalises along `axis`, subtracting the row's max
 * before exp so that no finite input overflows; a row holding NaN, +inf or only -inf gives NaN,
 * as in numpy. float32 sums run in double where a whole run of elements folds into one value. */
#include <math.h>
#include <string.h>

#include "ops/cpu/parallel.h"
#include "ops/cpu/softmax_row.h"
#include "ops/defs.h"

/* ---- sum: Out = X[0] + X[1] + ... ------------------------------------------------------------ */

/* sum's work, split by ct__parallel_for: elements of Out. */
typedef struct sum_job {
  const ct_kernel_ctx *c;
  void *o;
} sum_job;

/* T the element type, U the type the additions run in (unsigned for integers, so they wrap). */
#define SUM_KERNEL(NAME, T, U)                                                  \
  static void NAME##_range(void *arg, int64_t b, int64_t e) {                   \
    const sum_job *j = arg;                                                     \
    T *o = j->o;                                                                \
    const T *x0 = ct__k_in_data(ct_kernel_in(j->c, CT__IN_X, 0));               \
    const T *x1 = ct__k_in_data(ct_kernel_in(j->c, CT__IN_X, 1));               \
    CT__SIMD for (int64_t i = b; i < e; i++) o[i] = (T)((U)x0[i] + (U)x1[i]);   \
    for (size_t k = 2; k < ct_kernel_in_count(j->c, CT__IN_X); k++) {           \
      const T *xk = ct__k_in_data(ct_kernel_in(j->c, CT__IN_X, k));             \
      CT__SIMD for (int64_t i = b; i < e; i++) o[i] = (T)((U)o[i] + (U)xk[i]);  \
    }                                                                           \
  }                                                                             \
  static ct_status NAME(const ct_kernel_ctx *c) {                               \
    sum_job j = {c, ct__k_out_data(c, CT__OUT, 0, c->dtype)};                   \
    if (CT__UNLIKELY(j.o == NULL)) return ct_last_status();                     \
    int64_t n = ct_kernel_out(c, CT__OUT, 0)->numel;                            \
    if (ct_kernel_in_count(c, CT__IN_X) == 1) {                                 \
      memmove(j.o, ct__k_in_data(ct_kernel_in(c, CT__IN_X, 0)), (size_t)n * sizeof(T)); \
      return CT_OK;                                                             \
    }                                                                           \
    ct__parallel_for(n, CT__GRAIN_MEM, NAME##_range, &j);                       \
    return CT_OK;                                                               \
  }

SUM_KERNEL(sum_f32, float, float)
SUM_KERNEL(sum_f64, double, double)
SUM_KERNEL(sum_i32, int32_t, uint32_t)
SUM_KERNEL(sum_i64, int64_t, uint64_t)

/* ---- Folding a run of elements into one sum -------------------------------------------------- */

/* A float run sums in double in 8 lanes (lane k takes elements k, k + 8, ...; the lanes are then
 * added in a fixed tree), so that the loop vectorises and the order is the same on every machine.
 * An integer run sums in U, where any order gives the same wrapped sum. */
static inline double lanes_tree(const double *l) {
  return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}
#define FOLD_LANES(NAME, T)                                                     \
  static double NAME(const T *x, int64_t n) {                                   \
    double l[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                     \
    int64_t i = 0;                                                              \
    for (; i + 8 <= n; i += 8) {                                                \
      for (int k = 0; k < 8; k++) l[k] += (double)x[i + k];                     \
    }                                                                           \
    for (int k = 0; i < n; i++, k++) l[k] += (double)x[i];                      \
    return lanes_tree(l);                                                       \
  }
FOLD_LANES(fold_f32, float)
FOLD_LANES(fold_f64, double)

/* Four runs of n elements, run r at x + r * s, each folded exactly as FOLD_LANES folds it (the
 * same lanes, order and tree: the same sums), side by side: one run's 8 lanes are 8 chains of
 * dependent additions, which leave the adder idle between steps; four runs' 32 chains keep it
 * busy. Always inlined, so it compiles inside each of its caller's vector clones. */
#define FOLD4_LANES(NAME, T)                                                                    \
  static inline __attribute__((always_inline)) void NAME(const T *x, int64_t s, int64_t n,      \
                                                         double out[4]) {                       \
    double a[8] = {0}, b[8] = {0}, c[8] = {0}, d[8] = {0};                                      \
    const T *x0 = x, *x1 = x + s, *x2 = x + 2 * s, *x3 = x + 3 * s;                             \
    int64_t i = 0;                                                                              \
    for (; i + 8 <= n; i += 8) {                                                                \
      /* one pragma per run: without them GCC packs lane k of the four runs together */         \
      CT__SIMD for (int k = 0; k < 8; k++) a[k] += (double)x0[i + k];                           \
      CT__SIMD for (int k = 0; k < 8; k++) b[k] += (double)x1[i + k];                           \
      CT__SIMD for (int k = 0; k < 8; k++) c[k] += (double)x2[i + k];                           \
      CT__SIMD for (int k = 0; k < 8; k++) d[k] += (double)x3[i + k];                           \
    }                                                                                           \
    for (int k = 0; i + k < n; k++) {                                                           \
      a[k] += (double)x0[i + k];                                                                \
      b[k] += (double)x1[i + k];                                                                \
      c[k] += (double)x2[i + k];                                                                \
      d[k] += (double)x3[i + k];                                                                \
    }                                                                                           \
    out[0] = lanes_tree(a);                                                                     \
    out[1] = lanes_tree(b);                                                                     \
    out[2] = lanes_tree(c);                                                                     \
    out[3] = lanes_tree(d);                                                                     \
  }
FOLD4_LANES(fold4_f32, float)
FOLD4_LANES(fold4_f64, double)
#define FOLD_INT(NAME, T, U)                                                    \
  static U NAME(const T *x, int64_t n) {                                        \
    U acc = 0;                                                                  \
    for (int64_t i = 0; i < n; i++) acc += (U)x[i];                             \
    return acc;                                                                 \
  }
FOLD_INT(fold_i32, int32_t, uint32_t)
FOLD_INT(fold_i64, int64_t, uint64_t)

/* The start of fixed piece k of a run of n split into `pieces` (CT__FIXED_PIECES). */
static int64_t piece_at(int64_t n, int64_t k, int64_t pieces) {
  return n / pieces * k + (k < n % pieces ? k : n % pieces);
}

/* A long run folds piece by piece (pieces fixed by n alone), the pieces on the pool, their sums
 * then added in order: the same sum at every thread count. */
typedef struct fold_job {
  const void *x;
  int64_t n, pieces;
  double part[64];
  uint64_t ipart[64];
} fold_job;

#define FOLD_LONG(NAME, T, A, FOLD, PART)                                       \
  static void NAME##_piece(void *arg, int64_t b, int64_t e) {                   \
    fold_job *j = arg;                                                          \
    for (int64_t k = b; k < e; k++) {                                           \
      int64_t s = piece_at(j->n, k, j->pieces), t = piece_at(j->n, k + 1, j->pieces); \
      j->PART[k] = FOLD((const T *)j->x + s, t - s);                            \
    }                                                                           \
  }                                                                             \
  static A NAME(const T *x, int64_t n) {                                        \
    int64_t pieces = CT__FIXED_PIECES(n);                                       \
    if (pieces == 1) return (A)FOLD(x, n);                                      \
    fold_job j = {.x = x, .n = n, .pieces = pieces};                            \
    ct__parallel_for(pieces, 1, NAME##_piece, &j);                              \
    A acc = 0;                                                                  \
    for (int64_t k = 0; k < pieces; k++) acc = (A)(acc + (A)j.PART[k]);         \
    return acc;                                                                 \
  }
FOLD_LONG(fold_long_f32, float, double, fold_f32, part)
FOLD_LONG(fold_long_f64, double, double, fold_f64, part)
FOLD_LONG(fold_long_i32, int32_t, uint32_t, fold_i32, ipart)
FOLD_LONG(fold_long_i64, int64_t, uint64_t, fold_i64, ipart)

/* ---- mean: Out (rank 0) = the mean of all elements of X -------------------------------------- */

#define MEAN_KERNEL(NAME, T, FOLD)                        \
  static ct_status NAME(const ct_kernel_ctx *c) {         \
    const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);   \
    int64_t n = xt->numel;                                \
    double acc = FOLD(ct__k_in_data(xt), n);              \
    T *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);       \
    if (CT__UNLIKELY(o == NULL)) return ct_last_status(); \
    o[0] = (T)(n > 0 ? acc / (double)n : NAN);            \
    return CT_OK;                                         \
  }

MEAN_KERNEL(mean_f32, float, fold_long_f32)
MEAN_KERNEL(mean_f64, double, fold_long_f64)

/* ---- reduce_sum(dim, keep_dim) --------------------------------------------------------------- */

/* The walk over X: its dims with extent-1 dims dropped and neighbours of the same kind (summed
 * or kept) merged, so the kinds alternate; os is each dim's stride in Out, 0 for a summed dim. */
typedef struct rs_plan {
  int rank; /* at least 1 */
  int64_t d[CT_MAX_RANK], os[CT_MAX_RANK];
} rs_plan;

static void rs_make_plan(ct_ddim x, const bool red[CT_MAX_RANK], rs_plan *p) {
  int64_t os[CT_MAX_RANK], st = 1;
  for (int k = x.rank - 1; k >= 0; k--) {
    os[k] = red[k] ? 0 : st;
    if (!red[k]) st *= x.d[k];
  }
  int n = 0;
  for (int k = 0; k < x.rank; k++) {
    if (x.d[k] == 1) continue;
    if (n > 0 && (p->os[n - 1] == 0) == (os[k] == 0)) {
      p->d[n - 1] *= x.d[k];
      p->os[n - 1] = os[k];
      continue;
    }
    p->d[n] = x.d[k];
    p->os[n] = os[k];
    n++;
  }
  if (n == 0) {
    p->d[0] = 1;
    p->os[0] = 0;
    n = 1;
  }
  p->rank = n;
}

/* reduce_sum's work: the plan, X and Out; split by ct__parallel_for over the plan's outermost
 * dim when Out keeps it (each piece owns its slices of Out; a float [kept, summed] runs RS_ROWS),
 * over the second dim when the first is summed ([summed, kept, ...]: each piece owns those
 * indices of the kept dim, and walks the summed one in order), or inside the fold when the plan
 * is one summed run. Every element of Out adds the same terms in the same order whatever the
 * split. */
typedef struct rs_job {
  const rs_plan *p;
  const void *x;
  void *o;
} rs_job;

/* A plan [kept, summed] whose runs fold in one piece (CT__FIXED_PIECES: 64K elements or fewer):
 * rows first to last - 1 of X, each summed into its element of Out, four at a time (FOLD4: the
 * sums FOLD gives). The four are a quarter of the range apart: four neighbouring rows, streamed
 * from memory together, ran slower than one row at a time on the machine of
 * docs/performance.md (rows 16 KiB apart, on the same DRAM banks presumably), four far apart
 * faster. */
#define RS_ROWS(NAME, T, U, FOLD4, FOLD)                                                 \
  CT__VM_CLONES static void NAME(void *arg, int64_t first, int64_t last) {               \
    const rs_job *j = arg;                                                               \
    int64_t n = j->p->d[1], q = (last - first) / 4;                                      \
    const T *x = j->x;                                                                   \
    T *o = j->o;                                                                         \
    for (int64_t r = first; r < first + q; r++) {                                        \
      double acc[4];                                                                     \
      FOLD4(x + r * n, q * n, n, acc);                                                   \
      for (int t = 0; t < 4; t++) o[r + t * q] = (T)((U)o[r + t * q] + (U)acc[t]);       \
    }                                                                                    \
    for (int64_t r = first + 4 * q; r < last; r++) {                                     \
      o[r] = (T)((U)o[r] + (U)FOLD(x + r * n, n));                                       \
    }                                                                                    \
  }
RS_ROWS(rs_f32_rows, float, float, fold4_f32, fold_f32)
RS_ROWS(rs_f64_rows, double, double, fold4_f64, fold_f64)

/* Walks slices first to last - 1 of the plan's outermost dim in memory order, adding each element
 * of X into its place in Out: an innermost summed run folds into one sum (FOLD, in A), an
 * innermost kept run adds into Out element by element. U: the type the additions run in
 * (unsigned for integers, so they wrap). Out starts at zero. */
#define RS_KERNEL(NAME, T, U, A, FOLD, ROWS)                                             \
  static void NAME##_walk(void *arg, int64_t first, int64_t last) {                      \
    const rs_job *j = arg;                                                               \
    rs_plan p = *j->p;                                                                   \
    int r = p.rank;                                                                      \
    int64_t idx[CT_MAX_RANK] = {0}, off = first * p.os[0];                               \
    int64_t slice = 1;                                                                   \
    for (int k = 1; k < r; k++) slice *= p.d[k];                                         \
    const T *x = (const T *)j->x + first * slice;                                        \
    T *o = j->o;                                                                         \
    p.d[0] = last - first;                                                               \
    int64_t inner = p.d[r - 1];                                                          \
    bool fold = p.os[r - 1] == 0;                                                        \
    for (;;) {                                                                           \
      if (fold) {                                                                        \
        A acc = FOLD(x, inner);                                                          \
        o[off] = (T)((U)o[off] + (U)acc);                                                \
      } else {                                                                           \
        T *orow = o + off;                                                               \
        CT__SIMD for (int64_t i = 0; i < inner; i++) orow[i] = (T)((U)orow[i] + (U)x[i]); \
      }                                                                                  \
      x += inner;                                                                        \
      int k = r - 2;                                                                     \
      for (; k >= 0; k--) {                                                              \
        off += p.os[k];                                                                  \
        if (++idx[k] < p.d[k]) break;                                                    \
        off -= p.os[k] * p.d[k];                                                         \
        idx[k] = 0;                                                                      \
      }                                                                                  \
      if (k < 0) break;                                                                  \
    }                                                                                    \
  }                                                                                      \
  /* [summed, kept, ...]: indices first to last - 1 of the plan's second dim, for each index  \
   * of the first in turn (Out's elements see X's in memory order, as in one walk). */   \
  static void NAME##_mid(void *arg, int64_t first, int64_t last) {                       \
    const rs_job *j = arg;                                                               \
    rs_plan q = {.rank = j->p->rank - 1};                                                \
    int64_t slice = 1;                                                                   \
    for (int k = 0; k < q.rank; k++) {                                                   \
      q.d[k] = j->p->d[k + 1];                                                           \
      q.os[k] = j->p->os[k + 1];                                                         \
      slice *= q.d[k];                                                                   \
    }                                                                                    \
    rs_job sub = {&q, j->x, j->o};                                                       \
    for (int64_t a = 0; a < j->p->d[0]; a++) {                                           \
      sub.x = (const T *)j->x + a * slice;                                               \
      NAME##_walk(&sub, first, last);                                                    \
    }                                                                                    \
  }                                                                                      \
  static ct_status NAME(const ct_kernel_ctx *c) {                                        \
    const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);                                  \
    bool red[CT_MAX_RANK];                                                               \
    ct_status s = ct__rs_dims(c, xt->dims.rank, red);                                    \
    if (CT__UNLIKELY(s != CT_OK)) return s;                                              \
    T *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);                                      \
    if (CT__UNLIKELY(o == NULL)) return ct_last_status();                                \
    int64_t n_out = ct_kernel_out(c, CT__OUT, 0)->numel;                                 \
    for (int64_t i = 0; i < n_out; i++) o[i] = 0;                                        \
    if (xt->numel == 0) return CT_OK;                                                    \
    rs_plan p;                                                                           \
    rs_make_plan(xt->dims, red, &p);                                                     \
    rs_job j = {&p, ct__k_in_data(xt), o};                                               \
    ct__range_fn rows = ROWS;                                                            \
    if (p.os[0] != 0) {                                                                  \
      bool by_rows = rows != NULL && p.rank == 2 && CT__FIXED_PIECES(p.d[1]) == 1;       \
      ct__parallel_for(p.d[0], CT__GRAIN_MEM / (xt->numel / p.d[0]) + 1,                 \
                       by_rows ? rows : NAME##_walk, &j);                                \
    } else if (p.rank > 1) {                                                             \
      ct__parallel_for(p.d[1], CT__GRAIN_MEM / (xt->numel / p.d[1]) + 1, NAME##_mid, &j); \
    } else {                                                                             \
      NAME##_walk(&j, 0, p.d[0]);                                                        \
    }                                                                                    \
    return CT_OK;                                                                        \
  }

RS_KERNEL(rs_f32, float, float, double, fold_long_f32, rs_f32_rows)
RS_KERNEL(rs_f64, double, double, double, fold_long_f64, rs_f64_rows)
RS_KERNEL(rs_i32, int32_t, uint32_t, uint32_t, fold_long_i32, NULL)
RS_KERNEL(rs_i64, int64_t, uint64_t, uint64_t, fold_long_i64, NULL)

/* ---- softmax(axis) --------------------------------------------------------------------------- */

/* X seen as [outer, n, inner] around the axis; each of the outer x inner rows of n elements,
 * stride inner apart, is normalised on its own. A contiguous row (inner 1) is
 * ops/cpu/softmax_row.h's. Strided rows are taken SM_COLS at a time, so each pass walks
 * contiguous memory (inner elements apart row after row) instead of striding down one column,
 * each column summing its exps in the lanes of the contiguous row (the same bits along any
 * axis). The blocks of rows are split by ct__parallel_for. */
#define SM_COLS 64
/* Contiguous rows of at most CT__SM_SHORT elements go CT__SM_GROUP at a time
 * (ops/cpu/softmax_row.h's ct__sm_short). */
typedef struct sm_job {
  const void *x;
  void *o;
  int64_t n, inner, blocks; /* blocks: of SM_COLS rows per outer index */
  int64_t rows;             /* outer x blocks, the items */
} sm_job;

#define SM_KERNEL(NAME, T, SUF)                                                               \
  CT__VM_CLONES static void NAME##_block(const T *xs, T *os, int64_t n, int64_t inner,        \
                                         int64_t w) {                                         \
    T mx[SM_COLS];                                                                            \
    double sum[CT__SM_LANES][SM_COLS] = {{0}};                                                \
    for (int64_t j = 0; j < w; j++) mx[j] = xs[j];                                            \
    for (int64_t i = 1; i < n; i++) {                                                         \
      const T *xr = xs + i * inner;                                                           \
      CT__SIMD for (int64_t j = 0; j < w; j++) mx[j] = xr[j] > mx[j] ? xr[j] : mx[j];         \
    }                                                                                         \
    int64_t full = n - n % CT__SM_LANES;                                                      \
    /* float32: the blocks of 64 rows through 16 float partials, as ct__sm_add_f32 */          \
    int64_t blocked = sizeof(T) == 4 ? n / CT__SM_BLOCK * CT__SM_BLOCK : 0;                    \
    T part[16][SM_COLS];                                                                      \
    for (int64_t i = 0; i < blocked; i++) {                                                   \
      const T *xr = xs + i * inner;                                                           \
      T *orow = os + i * inner, *pf = part[i % 16];                                           \
      const bool first = i % CT__SM_BLOCK < 16;                                               \
      CT__SIMD for (int64_t j = 0; j < w; j++) {                                              \
        T e = CT__VEXP_SM((T)(xr[j] - mx[j]));                                                \
        orow[j] = e;                                                                          \
        pf[j] = first ? e : pf[j] + e;                                                        \
      }                                                                                       \
      if (i % CT__SM_BLOCK == CT__SM_BLOCK - 1) {                                             \
        for (int k = 0; k < 16; k++) {                                                        \
          double *l = sum[k % CT__SM_LANES];                                                  \
          CT__SIMD for (int64_t j = 0; j < w; j++) l[j] += (double)part[k][j];                \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
    for (int64_t i = blocked; i < n; i++) {                                                   \
      const T *xr = xs + i * inner;                                                           \
      T *orow = os + i * inner;                                                               \
      double *l = sum[i < full ? i % CT__SM_LANES : 0];                                       \
      CT__SIMD for (int64_t j = 0; j < w; j++) {                                              \
        T e = CT__VEXP_SM((T)(xr[j] - mx[j]));                                                \
        orow[j] = e;                                                                          \
        l[j] += (double)e;                                                                    \
      }                                                                                       \
    }                                                                                         \
    double tot[SM_COLS];                                                                      \
    for (int64_t j = 0; j < w; j++) {                                                         \
      double l[CT__SM_LANES];                                                                 \
      for (int k = 0; k < CT__SM_LANES; k++) l[k] = sum[k][j];                                \
      tot[j] = ct__sm_fold(l);                                                                \
    }                                                                                         \
    T inv[SM_COLS];                                                                           \
    for (int64_t j = 0; j < w; j++) inv[j] = (T)(1.0 / tot[j]);                               \
    for (int64_t i = 0; i < n; i++) {                                                         \
      T *orow = os + i * inner;                                                               \
      CT__SIMD for (int64_t j = 0; j < w; j++) orow[j] = orow[j] * inv[j];                    \
    }                                                                                         \
  }                                                                                           \
  CT__VM_CLONES static void NAME##_range(void *arg, int64_t first, int64_t last) {            \
    const sm_job *j = arg;                                                                    \
    int64_t n = j->n, inner = j->inner;                                                       \
    if (inner == 1) { /* one block per row: q is the row */                                  \
      ct__sm_rows_##SUF(j->x, j->o, n, n, first, last, j->rows);                              \
      return;                                                                                 \
    }                                                                                         \
    for (int64_t q = first; q < last; q++) {                                                  \
      int64_t a = q / j->blocks, b0 = q % j->blocks * SM_COLS;                                \
      const T *xs = (const T *)j->x + a * n * inner + b0;                                     \
      T *os = (T *)j->o + a * n * inner + b0;                                                 \
      NAME##_block(xs, os, n, inner, inner - b0 < SM_COLS ? inner - b0 : SM_COLS);            \
    }                                                                                         \
  }                                                                                           \
  static ct_status NAME(const ct_kernel_ctx *c) {                                             \
    const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);                                       \
    int axis;                                                                                 \
    ct_status s = ct__k_axis(c, "axis", c->attr[CT__SOFTMAX_AXIS].u.i, xt->dims.rank, &axis); \
    if (CT__UNLIKELY(s != CT_OK)) return s;                                                   \
    T *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);                                           \
    if (CT__UNLIKELY(o == NULL)) return ct_last_status();                                     \
    if (xt->numel == 0) return CT_OK;                                                         \
    sm_job j = {ct__k_in_data(xt), o, 1, 1, 1, 1};                                            \
    int64_t outer = 1;                                                                        \
    for (int k = 0; k < xt->dims.rank; k++) {                                                 \
      if (k < axis) outer *= xt->dims.d[k];                                                   \
      if (k == axis) j.n = xt->dims.d[k];                                                     \
      if (k > axis) j.inner *= xt->dims.d[k];                                                 \
    }                                                                                         \
    j.blocks = (j.inner + SM_COLS - 1) / SM_COLS;                                             \
    j.rows = outer * j.blocks;                                                                \
    int64_t per = j.n * (j.inner < SM_COLS ? j.inner : SM_COLS);                              \
    ct__parallel_for(j.rows, CT__GRAIN_MATH / per + 1, NAME##_range, &j);                     \
    return CT_OK;                                                                             \
  }

SM_KERNEL(sm_f32, float, f32)
SM_KERNEL(sm_f64, double, f64)

/* ---- The kernel table ------------------------------------------------------------------------ */

static const ct__kernel_set kernels[] = {
    {"sum", CT__KERNELS([CT_FLOAT32] = sum_f32, [CT_FLOAT64] = sum_f64, [CT_INT32] = sum_i32,
                        [CT_INT64] = sum_i64)},
    {"reduce_sum", CT__KERNELS([CT_FLOAT32] = rs_f32, [CT_FLOAT64] = rs_f64, [CT_INT32] = rs_i32,
                               [CT_INT64] = rs_i64)},
    {"mean", CT__KERNELS([CT_FLOAT32] = mean_f32, [CT_FLOAT64] = mean_f64)},
    {"softmax", CT__KERNELS([CT_FLOAT32] = sm_f32, [CT_FLOAT64] = sm_f64)},
};

const ct__kernel_table ct__cpu_reduce = CT__TABLE(kernels);
