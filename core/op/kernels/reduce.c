/* core/op/kernels/reduce.c: sum (of any number of tensors), mean, reduce_sum and softmax on the
 * CPU.
 *
 * sum adds its X tensors element by element (equal dims and dtype; integers wrap). mean is the
 * mean of all elements as a rank-0 tensor; the mean of an empty tensor is NaN (0 / 0, as numpy
 * gives). reduce_sum sums over the dims listed in `dim` (all of them when the list is empty);
 * the sum over an empty dim is 0. softmax normalises along `axis`, subtracting the row's max
 * before exp so that no finite input overflows; a row holding +inf or only -inf gives NaN, as in
 * numpy. float32 sums run in double where a whole run of elements folds into one value. */
#include <math.h>
#include <string.h>

#include "op/kernels/kernels.h"

enum { IN_X };
enum { OUT_OUT };

/* Checks that input X i has the dtype of X 0 (the kernel's dtype), for every i. */
static ct_status check_all_dtypes(const ct_kernel_ctx *c) {
  for (size_t i = 1, n = ct_kernel_in_count(c, IN_X); i < n; i++) {
    ct_status s = ct__k_check_dtype(c, IN_X, i, c->dtype);
    if (CT__UNLIKELY(s != CT_OK)) return s;
  }
  return CT_OK;
}

/* ---- sum: Out = X[0] + X[1] + ... ------------------------------------------------------------ */

static ct_status sum_infer(const ct_kernel_ctx *c) {
  const ct_tensor *x0 = ct_kernel_in(c, IN_X, 0);
  for (size_t i = 1, n = ct_kernel_in_count(c, IN_X); i < n; i++) {
    const ct_tensor *xi = ct_kernel_in(c, IN_X, i);
    if (!ct_ddim_equal(xi->dims, x0->dims)) {
      char a[CT__DDIM_STR_CAP], b[CT__DDIM_STR_CAP];
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "input X variable '%s' %s and input X variable '%s' %s differ: sum "
                            "needs equal dims (no broadcasting)",
                            ct_kernel_in_name(c, IN_X, 0), ct_ddim_str(x0->dims, a, sizeof a),
                            ct_kernel_in_name(c, IN_X, i), ct_ddim_str(xi->dims, b, sizeof b));
    }
  }
  ct_status s = check_all_dtypes(c);
  return s == CT_OK ? ct__k_resize(c, OUT_OUT, 0, x0->dims) : s;
}

/* T the element type, U the type the additions run in (unsigned for integers, so they wrap). */
#define SUM_KERNEL(NAME, T, U)                                        \
  static ct_status NAME(const ct_kernel_ctx *c) {                     \
    T *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);                   \
    if (CT__UNLIKELY(o == NULL)) return ct_last_status();             \
    size_t k = ct_kernel_in_count(c, IN_X);                           \
    int64_t n = ct_kernel_out(c, OUT_OUT, 0)->numel;                  \
    const T *x0 = ct__k_in_data(ct_kernel_in(c, IN_X, 0));            \
    if (k == 1) {                                                     \
      memmove(o, x0, (size_t)n * sizeof(T));                          \
      return CT_OK;                                                   \
    }                                                                 \
    const T *x1 = ct__k_in_data(ct_kernel_in(c, IN_X, 1));            \
    for (int64_t j = 0; j < n; j++) o[j] = (T)((U)x0[j] + (U)x1[j]);  \
    for (size_t i = 2; i < k; i++) {                                  \
      const T *xi = ct__k_in_data(ct_kernel_in(c, IN_X, i));          \
      for (int64_t j = 0; j < n; j++) o[j] = (T)((U)o[j] + (U)xi[j]); \
    }                                                                 \
    return CT_OK;                                                     \
  }

SUM_KERNEL(sum_f32, float, float)
SUM_KERNEL(sum_f64, double, double)
SUM_KERNEL(sum_i32, int32_t, uint32_t)
SUM_KERNEL(sum_i64, int64_t, uint64_t)

/* ---- mean: Out (rank 0) = the mean of all elements of X -------------------------------------- */

static ct_status mean_infer(const ct_kernel_ctx *c) {
  return ct__k_resize(c, OUT_OUT, 0, CT_DIMS());
}

#define MEAN_KERNEL(NAME, T)                              \
  static ct_status NAME(const ct_kernel_ctx *c) {         \
    const ct_tensor *xt = ct_kernel_in(c, IN_X, 0);       \
    const T *x = ct__k_in_data(xt);                       \
    int64_t n = xt->numel;                                \
    double acc = 0;                                       \
    for (int64_t i = 0; i < n; i++) acc += (double)x[i];  \
    T *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);       \
    if (CT__UNLIKELY(o == NULL)) return ct_last_status(); \
    o[0] = (T)(n > 0 ? acc / (double)n : NAN);            \
    return CT_OK;                                         \
  }

MEAN_KERNEL(mean_f32, float)
MEAN_KERNEL(mean_f64, double)

/* ---- reduce_sum(dim, keep_dim) --------------------------------------------------------------- */

enum { RS_DIM, RS_KEEP };

/* The dims of X that reduce_sum sums over, as flags; CT_ERR_OUT_OF_RANGE for a dim outside
 * [-rank, rank), CT_ERR_INVALID_ARGUMENT for a dim listed twice. A rank-0 X takes 0 and -1. */
ct_status ct__rs_dims(const ct_kernel_ctx *c, int rank, bool red[CT_MAX_RANK]) {
  const ct_attr_value *dim = &c->attr[RS_DIM];
  for (int k = 0; k < CT_MAX_RANK; k++) red[k] = dim->u.ints.n == 0;
  for (size_t i = 0; i < dim->u.ints.n; i++) {
    int a;
    ct_status s = ct__k_axis(c, "dim", dim->u.ints.v[i], rank, &a);
    if (s != CT_OK) return s;
    if (red[a]) {
      return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                            "attribute 'dim' lists dim %d of input X variable '%s' twice (as "
                            "%lld): list each dim once",
                            a, ct_kernel_in_name(c, IN_X, 0), (long long)dim->u.ints.v[i]);
    }
    red[a] = true;
  }
  return CT_OK;
}

static ct_status rs_infer(const ct_kernel_ctx *c) {
  ct_ddim x = ct_kernel_in(c, IN_X, 0)->dims, out = {.rank = 0};
  bool red[CT_MAX_RANK];
  ct_status s = ct__rs_dims(c, x.rank, red);
  if (s != CT_OK) return s;
  bool keep = c->attr[RS_KEEP].u.b;
  for (int k = 0; k < x.rank; k++) {
    if (!red[k]) {
      out.d[out.rank++] = x.d[k];
    } else if (keep) {
      out.d[out.rank++] = 1;
    }
  }
  return ct__k_resize(c, OUT_OUT, 0, out);
}

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
    const ct_tensor *xt = ct_kernel_in(c, IN_X, 0);                                    \
    bool red[CT_MAX_RANK];                                                             \
    ct_status s = ct__rs_dims(c, xt->dims.rank, red);                                  \
    if (CT__UNLIKELY(s != CT_OK)) return s;                                            \
    T *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);                                    \
    if (CT__UNLIKELY(o == NULL)) return ct_last_status();                              \
    int64_t n_out = ct_kernel_out(c, OUT_OUT, 0)->numel;                               \
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

static const ct_attr_def rs_attrs[] = {
    {"dim", {.type = CT_ATTR_INTS, .u.ints = {NULL, 0}}, false},
    {"keep_dim", {.type = CT_ATTR_BOOL, .u.b = false}, false},
};

/* ---- softmax(axis) --------------------------------------------------------------------------- */

enum { SM_AXIS };

static ct_status sm_infer(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, IN_X, 0);
  int axis;
  ct_status s = ct__k_axis(c, "axis", c->attr[SM_AXIS].u.i, xt->dims.rank, &axis);
  return s == CT_OK ? ct__k_resize(c, OUT_OUT, 0, xt->dims) : s;
}

/* X seen as [outer, n, inner] around the axis; each of the outer x inner rows of n elements,
 * stride inner apart, is normalised on its own. The rows are taken SM_COLS at a time, so each
 * pass walks contiguous memory (inner elements apart row after row) instead of striding down
 * one column; every row still sees its elements in the same order, so the result is the same
 * bit for bit. A: the type exp values are summed in. */
#define SM_COLS 64
#define SM_KERNEL(NAME, T, A, EXP)                                                       \
  static ct_status NAME(const ct_kernel_ctx *c) {                                        \
    const ct_tensor *xt = ct_kernel_in(c, IN_X, 0);                                      \
    int axis;                                                                            \
    ct_status s = ct__k_axis(c, "axis", c->attr[SM_AXIS].u.i, xt->dims.rank, &axis);     \
    if (CT__UNLIKELY(s != CT_OK)) return s;                                              \
    T *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);                                      \
    if (CT__UNLIKELY(o == NULL)) return ct_last_status();                                \
    if (xt->numel == 0) return CT_OK;                                                    \
    const T *x = ct__k_in_data(xt);                                                      \
    int64_t outer = 1, n = 1, inner = 1;                                                 \
    for (int k = 0; k < xt->dims.rank; k++) {                                            \
      if (k < axis) outer *= xt->dims.d[k];                                              \
      if (k == axis) n = xt->dims.d[k];                                                  \
      if (k > axis) inner *= xt->dims.d[k];                                              \
    }                                                                                    \
    for (int64_t a = 0; a < outer; a++) {                                                \
      for (int64_t b0 = 0; b0 < inner; b0 += SM_COLS) {                                  \
        int64_t w = inner - b0 < SM_COLS ? inner - b0 : SM_COLS;                         \
        const T *xs = x + a * n * inner + b0;                                            \
        T *os = o + a * n * inner + b0;                                                  \
        T mx[SM_COLS];                                                                   \
        A sum[SM_COLS];                                                                  \
        for (int64_t j = 0; j < w; j++) {                                                \
          mx[j] = xs[j];                                                                 \
          sum[j] = 0;                                                                    \
        }                                                                                \
        for (int64_t i = 1; i < n; i++) {                                                \
          const T *xr = xs + i * inner;                                                  \
          for (int64_t j = 0; j < w; j++) {                                              \
            if (xr[j] > mx[j] || xr[j] != xr[j]) mx[j] = xr[j];                          \
          }                                                                              \
        }                                                                                \
        for (int64_t i = 0; i < n; i++) {                                                \
          const T *xr = xs + i * inner;                                                  \
          T *orow = os + i * inner;                                                      \
          for (int64_t j = 0; j < w; j++) {                                              \
            T e = EXP(xr[j] - mx[j]);                                                    \
            orow[j] = e;                                                                 \
            sum[j] += (A)e;                                                              \
          }                                                                              \
        }                                                                                \
        for (int64_t i = 0; i < n; i++) {                                                \
          T *orow = os + i * inner;                                                      \
          for (int64_t j = 0; j < w; j++) orow[j] = (T)((A)orow[j] / sum[j]);            \
        }                                                                                \
      }                                                                                  \
    }                                                                                    \
    return CT_OK;                                                                        \
  }

SM_KERNEL(sm_f32, float, double, expf)
SM_KERNEL(sm_f64, double, double, exp)

static const ct_attr_def sm_attrs[] = {{"axis", {.type = CT_ATTR_INT, .u.i = -1}, false}};

/* ---- Registration ---------------------------------------------------------------------------- */

void ct__register_reduce_ops(void) {
  ct_op_def sum = {.type = "sum", .inputs = ct__slot_xs, .n_inputs = 1, .outputs = ct__slot_out,
                   .n_outputs = 1, .infer_shape = sum_infer};
  ct__register_cpu(&sum, CT__KERNELS([CT_FLOAT32] = sum_f32, [CT_FLOAT64] = sum_f64,
                                     [CT_INT32] = sum_i32, [CT_INT64] = sum_i64));
  ct_op_def rs = {.type = "reduce_sum", .inputs = ct__slot_x, .n_inputs = 1,
                  .outputs = ct__slot_out, .n_outputs = 1, .attrs = rs_attrs, .n_attrs = 2,
                  .infer_shape = rs_infer};
  ct__register_cpu(&rs, CT__KERNELS([CT_FLOAT32] = rs_f32, [CT_FLOAT64] = rs_f64,
                                    [CT_INT32] = rs_i32, [CT_INT64] = rs_i64));
  ct_op_def mean = {.type = "mean", .inputs = ct__slot_x, .n_inputs = 1, .outputs = ct__slot_out,
                    .n_outputs = 1, .infer_shape = mean_infer};
  ct__register_cpu(&mean, CT__KERNELS([CT_FLOAT32] = mean_f32, [CT_FLOAT64] = mean_f64));
  ct_op_def sm = {.type = "softmax", .inputs = ct__slot_x, .n_inputs = 1, .outputs = ct__slot_out,
                  .n_outputs = 1, .attrs = sm_attrs, .n_attrs = 1, .infer_shape = sm_infer};
  ct__register_cpu(&sm, CT__KERNELS([CT_FLOAT32] = sm_f32, [CT_FLOAT64] = sm_f64));
}
