/* core/op/kernels/matmul.c: matmul on the CPU through CBLAS (OpenBLAS).
 *
 * numpy's matmul rules: the last two dims of X and Y multiply (after transpose_x / transpose_y),
 * the dims before them are batch dims and broadcast; a rank-1 X is a row [1,K] and a rank-1 Y a
 * column [K,1], and that dim is dropped from the result. When Y has no batch dims and X is not
 * transposed, the batch folds into one GEMM of (batch x M) rows. */
#include <cblas.h>
#include <limits.h>

#include "op/kernels/kernels.h"

enum { IN_X, IN_Y };
enum { OUT_OUT };
enum { ATTR_TX, ATTR_TY };

typedef ct__mm_shape mm_shape; /* kernels.h: shared with the CUDA kernel */

ct_status ct__mm_plan(const ct_kernel_ctx *c, ct__mm_shape *s) {
  ct_ddim x = ct_kernel_in(c, IN_X, 0)->dims, y = ct_kernel_in(c, IN_Y, 0)->dims;
  bool tx = c->attr[ATTR_TX].u.b, ty = c->attr[ATTR_TY].u.b;
  char sx[CT__DDIM_STR_CAP], sy[CT__DDIM_STR_CAP];
  if (x.rank == 0 || y.rank == 0) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input X variable '%s' %s and input Y variable '%s' %s: matmul needs "
                          "rank 1 or more on both sides",
                          ct_kernel_in_name(c, IN_X, 0), ct_ddim_str(x, sx, sizeof sx),
                          ct_kernel_in_name(c, IN_Y, 0), ct_ddim_str(y, sy, sizeof sy));
  }
  bool x_vec = x.rank == 1, y_vec = y.rank == 1;
  int64_t xr = x_vec ? 1 : x.d[x.rank - 2], xc = x.d[x.rank - 1];
  int64_t yr = y.d[y_vec ? 0 : y.rank - 2], yc = y_vec ? 1 : y.d[y.rank - 1];
  if (x_vec) tx = false;
  if (y_vec) ty = false;
  s->m = tx ? xc : xr;
  s->k = tx ? xr : xc;
  int64_t ky = ty ? yc : yr;
  s->n = ty ? yr : yc;
  if (s->k != ky) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input X variable '%s' %s%s and input Y variable '%s' %s%s: inner "
                          "dims %lld and %lld differ",
                          ct_kernel_in_name(c, IN_X, 0), ct_ddim_str(x, sx, sizeof sx),
                          c->attr[ATTR_TX].u.b ? " (transposed)" : "",
                          ct_kernel_in_name(c, IN_Y, 0), ct_ddim_str(y, sy, sizeof sy),
                          c->attr[ATTR_TY].u.b ? " (transposed)" : "", (long long)s->k,
                          (long long)ky);
  }
  if (s->m > INT_MAX || s->n > INT_MAX || s->k > INT_MAX) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "input X variable '%s' %s and input Y variable '%s' %s: a matrix dim "
                          "exceeds BLAS's int range (%d)",
                          ct_kernel_in_name(c, IN_X, 0), ct_ddim_str(x, sx, sizeof sx),
                          ct_kernel_in_name(c, IN_Y, 0), ct_ddim_str(y, sy, sizeof sy), INT_MAX);
  }
  int bxr = x_vec ? 0 : x.rank - 2, byr = y_vec ? 0 : y.rank - 2;
  int br = bxr > byr ? bxr : byr;
  s->batch_rank = br;
  s->n_batch = 1;
  int64_t stx = 1, sty = 1;
  for (int k = br - 1; k >= 0; k--) {
    int ix = bxr - br + k, iy = byr - br + k;
    int64_t dx = ix >= 0 ? x.d[ix] : 1, dy = iy >= 0 ? y.d[iy] : 1;
    if (dx != dy && dx != 1 && dy != 1) {
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "input X variable '%s' %s and input Y variable '%s' %s: batch dims "
                            "do not broadcast (%lld vs %lld)",
                            ct_kernel_in_name(c, IN_X, 0), ct_ddim_str(x, sx, sizeof sx),
                            ct_kernel_in_name(c, IN_Y, 0), ct_ddim_str(y, sy, sizeof sy),
                            (long long)dx, (long long)dy);
    }
    s->batch[k] = dx == 1 ? dy : dx; /* 1 against 0 broadcasts to 0 */
    s->bx[k] = dx == 1 ? 0 : stx;
    s->by[k] = dy == 1 ? 0 : sty;
    stx *= dx;
    sty *= dy;
    s->n_batch *= s->batch[k];
  }
  ct_ddim out = {.rank = 0};
  for (int k = 0; k < br; k++) out.d[out.rank++] = s->batch[k];
  if (!x_vec) out.d[out.rank++] = s->m;
  if (!y_vec) out.d[out.rank++] = s->n;
  s->out = out;
  return CT_OK;
}

/* Checks the dtypes too, before Out is touched, so a failing op leaves Out as it was. */
static ct_status mm_infer(const ct_kernel_ctx *c) {
  mm_shape s;
  ct_status st = ct__k_check_dtype(c, IN_Y, 0, ct_kernel_in(c, IN_X, 0)->dtype);
  if (st != CT_OK) return st;
  st = ct__mm_plan(c, &s);
  return st == CT_OK ? ct__k_resize(c, OUT_OUT, 0, s.out) : st;
}

/* Calls GEMM once per batch entry, or once for all when the batch folds into the rows. */
#define MM_KERNEL(NAME, T, GEMM)                                                              \
  static ct_status NAME(const ct_kernel_ctx *c) {                                             \
    mm_shape s;                                                                               \
    ct_status st = ct__mm_plan(c, &s);                                                        \
    if (CT__UNLIKELY(st != CT_OK)) return st;                                                 \
    T *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);                                           \
    if (CT__UNLIKELY(o == NULL)) return ct_last_status();                                     \
    const T *x = ct__k_in_data(ct_kernel_in(c, IN_X, 0));                                     \
    const T *y = ct__k_in_data(ct_kernel_in(c, IN_Y, 0));                                     \
    const ct_ddim xd = ct_kernel_in(c, IN_X, 0)->dims, yd = ct_kernel_in(c, IN_Y, 0)->dims;   \
    bool tx = c->attr[ATTR_TX].u.b && xd.rank > 1, ty = c->attr[ATTR_TY].u.b && yd.rank > 1;  \
    int64_t m = s.m, n = s.n, k = s.k;                                                        \
    if (m == 0 || n == 0 || s.n_batch == 0) return CT_OK;                                     \
    if (k == 0) {                                                                             \
      for (int64_t i = 0; i < s.n_batch * m * n; i++) o[i] = 0;                               \
      return CT_OK;                                                                           \
    }                                                                                         \
    int64_t lda = xd.rank > 1 ? xd.d[xd.rank - 1] : k;                                        \
    int64_t ldb = yd.rank > 1 ? yd.d[yd.rank - 1] : 1;                                        \
    int64_t x_mat = xd.rank > 1 ? xd.d[xd.rank - 2] * xd.d[xd.rank - 1] : k;                  \
    int64_t y_mat = yd.rank > 1 ? yd.d[yd.rank - 2] * yd.d[yd.rank - 1] : k;                  \
    bool y_shared = true;                                                                     \
    for (int b = 0; b < s.batch_rank; b++) y_shared = y_shared && s.by[b] == 0;               \
    bool x_full = true;                                                                       \
    for (int b = 0; b < s.batch_rank; b++) x_full = x_full && s.bx[b] != 0;                   \
    if (y_shared && x_full && !tx && s.n_batch <= INT_MAX / m) {                              \
      GEMM(CblasRowMajor, CblasNoTrans, ty ? CblasTrans : CblasNoTrans, (int)(s.n_batch * m), \
           (int)n, (int)k, 1, x, (int)lda, y, (int)ldb, 0, o, (int)n);                        \
      return CT_OK;                                                                           \
    }                                                                                         \
    int64_t idx[CT_MAX_RANK] = {0};                                                           \
    for (int64_t b = 0; b < s.n_batch; b++) {                                                 \
      int64_t ox = 0, oy = 0;                                                                 \
      for (int r = 0; r < s.batch_rank; r++) {                                                \
        ox += idx[r] * s.bx[r];                                                               \
        oy += idx[r] * s.by[r];                                                               \
      }                                                                                       \
      GEMM(CblasRowMajor, tx ? CblasTrans : CblasNoTrans, ty ? CblasTrans : CblasNoTrans,     \
           (int)m, (int)n, (int)k, 1, x + ox * x_mat, (int)lda, y + oy * y_mat, (int)ldb, 0,  \
           o + b * m * n, (int)n);                                                            \
      for (int r = s.batch_rank - 1; r >= 0 && ++idx[r] == s.batch[r]; r--) idx[r] = 0;       \
    }                                                                                         \
    return CT_OK;                                                                             \
  }

MM_KERNEL(matmul_f32, float, cblas_sgemm)
MM_KERNEL(matmul_f64, double, cblas_dgemm)

static const ct_attr_def mm_attrs[] = {
    {"transpose_x", {.type = CT_ATTR_BOOL, .u.b = false}, false},
    {"transpose_y", {.type = CT_ATTR_BOOL, .u.b = false}, false},
};

void ct__register_matmul_ops(void) {
  ct_op_def def = {.type = "matmul", .inputs = ct__slot_xy, .n_inputs = 2,
                   .outputs = ct__slot_out, .n_outputs = 1, .attrs = mm_attrs, .n_attrs = 2,
                   .infer_shape = mm_infer};
  ct__register_cpu(&def, CT__KERNELS([CT_FLOAT32] = matmul_f32, [CT_FLOAT64] = matmul_f64));
}
