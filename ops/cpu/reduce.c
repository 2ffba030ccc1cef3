/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/reduce.c: the CPU kernels of sum (of any number of tensors), mean, reduce_sum and
 * softmax.
 *
 * sum adds its X tensors element by element (equal dims and dtype; integers wrap). mean is the
 * mean of all elements as a rank-0 tensor; the mean of an empty tensor is NaN (0 / 0, as numpy
 * gives). reduce_sum sums over the dims listed in `dim` (all of them when the list is empty);
 * the sum over an empty dim is 0. softmax normalises along `axis`, subtracting the row's max
 * before exp so that no finite input overflows; a row holding +inf or only -inf gives NaN, as in
 * numpy. float32 sums run in double where a whole run of elements folds into one value. */
#include <math.h>
#include <string.h>

#include "ops/defs.h"

/* ---- sum: Out = X[0] + X[1] + ... ------------------------------------------------------------ */

/* T the element type, U the type the additions run in (unsigned for integers, so they wrap). */
#define SUM_KERNEL(NAME, T, U)                                        \
  static ct_status NAME(const ct_kernel_ctx *c) {                     \
    T *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);                   \
    if (CT__UNLIKELY(o == NULL)) return ct_last_status();             \
    size_t k = ct_kernel_in_count(c, CT__IN_X);                       \
    int64_t n = ct_kernel_out(c, CT__OUT, 0)->numel;                  \
    const T *x0 = ct__k_in_data(ct_kernel_in(c, CT__IN_X, 0));        \
    if (k == 1) {                                                     \
      memmove(o, x0, (size_t)n * sizeof(T));                          \
      return CT_OK;                                                   \
    }                                                                 \
    const T *x1 = ct__k_in_data(ct_kernel_in(c, CT__IN_X, 1));        \
    for (int64_t j = 0; j < n; j++) o[j] = (T)((U)x0[j] + (U)x1[j]);  \
    for (size_t i = 2; i < k; i++) {                                  \
      const T *xi = ct__k_in_data(ct_kernel_in(c, CT__IN_X, i));      \
      for (int64_t j = 0; j < n; j++) o[j] = (T)((U)o[j] + (U)xi[j]); \
    }                                                                 \
    return CT_OK;                                                     \
  }

SUM_KERNEL(sum_f32, float, float)
SUM_KERNEL(sum_f64, double, double)
SUM_KERNEL(sum_i32, int32_t, uint32_t)
SUM_KERNEL(sum_i64, int64_t, uint64_t)

/* ---- mean: Out (rank 0) = the mean of all elements of X -------------------------------------- */

#define MEAN_KERNEL(NAME, T)                              \
  static ct_status NAME(const ct_kernel_ctx *c) {         \
    const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);   \
    const T *x = ct__k_in_data(xt);                       \
    int64_t n = xt->numel;                                \
    double acc = 0;                                       \
    for (int64_t i = 0; i < n; i++) acc += (double)x[i];  \
    T *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);       \
    if (CT__UNLIKELY(o == NULL)) return ct_last_status(); \
    o[0] = (T)(n > 0 ? acc / (double)n : NAN);            \
    return CT_OK;                                         \
  }

MEAN_KERNEL(mean_f32, float)
MEAN_KERNEL(mean_f64, double)

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

/* Zero-fills Out, then walks X in memory order adding each element into its place in Out: an
 * innermost summed run folds into one accumulator of type A, an innermost kept run adds into Out
 * element by element. U: the type the additions run in (unsigned for integers, so they wrap). */
#define RS_KERNEL(NAME, T, U, A)                                                       \
  static ct_status NAME(const ct_kernel_ctx *c) {                                      \
    const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);                                \
    bool red[CT_MAX_RANK];                                                             \
    ct_status s = ct__rs_dims(c, xt->dims.rank, red);                                  \
    if (CT__UNLIKELY(s != CT_OK)) return s;                                            \
    T *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);                                    \
    if (CT__UNLIKELY(o == NULL)) return ct_last_status();                              \
    int64_t n_out = ct_kernel_out(c, CT__OUT, 0)->numel;                               \
    for (int64_t i = 0; i < n_out; i++) o[i] = 0;                                      \
    if (xt->numel == 0) return CT_OK;                                                  \
    const T *x = ct__k_in_data(xt);                                                    \
    rs_plan p;                                                                         \
    rs_make_plan(xt->dims, red, &p);                                                   \
    int r = p.rank;                                                                    \
    int64_t inner = p.d[r - 1], idx[CT_MAX_RANK] = {0}, off = 0;                       \
    bool fold = p.os[r - 1] == 0;                                                      \
    for (;;) {                                                                         \
      if (fold) {                                                                      \
        A acc = 0;                                                                     \
        for (int64_t i = 0; i < inner; i++) acc = (A)(acc + (A)(U)x[i]);               \
        o[off] = (T)((U)o[off] + (U)acc);                                              \
      } else {                                                                         \
        for (int64_t i = 0; i < inner; i++) o[off + i] = (T)((U)o[off + i] + (U)x[i]); \
      }                                                                                \
      x += inner;                                                                      \
      int k = r - 2;                                                                   \
      for (; k >= 0; k--) {                                                            \
        off += p.os[k];                                                                \
        if (++idx[k] < p.d[k]) break;                                                  \
        off -= p.os[k] * p.d[k];                                                       \
        idx[k] = 0;                                                                    \
      }                                                                                \
      if (k < 0) break;                                                                \
    }                                                                                  \
    return CT_OK;                                                                      \
  }

RS_KERNEL(rs_f32, float, float, double)
RS_KERNEL(rs_f64, double, double, double)
RS_KERNEL(rs_i32, int32_t, uint32_t, uint32_t)
RS_KERNEL(rs_i64, int64_t, uint64_t, uint64_t)

/* ---- softmax(axis) --------------------------------------------------------------------------- */

/* X seen as [outer, n, inner] around the axis; each of the outer x inner rows of n elements,
 * stride inner apart, is normalised on its own. The rows are taken SM_COLS at a time, so each
 * pass walks contiguous memory (inner elements apart row after row) instead of striding down
 * one column; every row still sees its elements in the same order, so the result is the same
 * bit for bit. A: the type exp values are summed in. */
#define SM_COLS 64
#define SM_KERNEL(NAME, T, A, EXP)                                                            \
  static ct_status NAME(const ct_kernel_ctx *c) {                                             \
    const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);                                       \
    int axis;                                                                                 \
    ct_status s = ct__k_axis(c, "axis", c->attr[CT__SOFTMAX_AXIS].u.i, xt->dims.rank, &axis); \
    if (CT__UNLIKELY(s != CT_OK)) return s;                                                   \
    T *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);                                           \
    if (CT__UNLIKELY(o == NULL)) return ct_last_status();                                     \
    if (xt->numel == 0) return CT_OK;                                                         \
    const T *x = ct__k_in_data(xt);                                                           \
    int64_t outer = 1, n = 1, inner = 1;                                                      \
    for (int k = 0; k < xt->dims.rank; k++) {                                                 \
      if (k < axis) outer *= xt->dims.d[k];                                                   \
      if (k == axis) n = xt->dims.d[k];                                                       \
      if (k > axis) inner *= xt->dims.d[k];                                                   \
    }                                                                                         \
    for (int64_t a = 0; a < outer; a++) {                                                     \
      for (int64_t b0 = 0; b0 < inner; b0 += SM_COLS) {                                       \
        int64_t w = inner - b0 < SM_COLS ? inner - b0 : SM_COLS;                              \
        const T *xs = x + a * n * inner + b0;                                                 \
        T *os = o + a * n * inner + b0;                                                       \
        T mx[SM_COLS];                                                                        \
        A sum[SM_COLS];                                                                       \
        for (int64_t j = 0; j < w; j++) {                                                     \
          mx[j] = xs[j];                                                                      \
          sum[j] = 0;                                                                         \
        }                                                                                     \
        for (int64_t i = 1; i < n; i++) {                                                     \
          const T *xr = xs + i * inner;                                                       \
          for (int64_t j = 0; j < w; j++) {                                                   \
            if (xr[j] > mx[j] || xr[j] != xr[j]) mx[j] = xr[j];                               \
          }                                                                                   \
        }                                                                                     \
        for (int64_t i = 0; i < n; i++) {                                                     \
          const T *xr = xs + i * inner;                                                       \
          T *orow = os + i * inner;                                                           \
          for (int64_t j = 0; j < w; j++) {                                                   \
            T e = EXP(xr[j] - mx[j]);                                                         \
            orow[j] = e;                                                                      \
            sum[j] += (A)e;                                                                   \
          }                                                                                   \
        }                                                                                     \
        for (int64_t i = 0; i < n; i++) {                                                     \
          T *orow = os + i * inner;                                                           \
          for (int64_t j = 0; j < w; j++) orow[j] = (T)((A)orow[j] / sum[j]);                 \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
    return CT_OK;                                                                             \
  }

SM_KERNEL(sm_f32, float, double, expf)
SM_KERNEL(sm_f64, double, double, exp)

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
