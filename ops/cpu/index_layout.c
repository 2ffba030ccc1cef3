/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/index_layout.c: the CPU kernels of one_hot, depth_to_space, space_to_depth, eye_like,
 * where_index, compress, reverse_sequence (every dtype, elements moved as bytes) and top_k_v2
 * (int32, int64, float32, float64), listed in ops/cpu/index.c's table. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "ops/cpu/index.h"

ct_status ct__ix_k_oh(const ct_kernel_ctx *c) {
  int axis;
  int64_t depth;
  ct_ddim out;
  ct_status s = ct__ix_oh_plan(c, &axis, &depth, &out);
  if (s != CT_OK) return s;
  const ct_tensor *xt = ct_kernel_in(c, 0, 0), *vt = ct_kernel_in(c, 2, 0);
  size_t es = ct_dtype_size(vt->dtype);
  char *o = ct__k_out_data(c, 0, 0, vt->dtype);
  if (o == NULL) return ct_last_status();
  const char *val = ct__k_in_data(vt);
  const void *x = ct__k_in_data(xt);
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < axis; k++) outer *= out.d[k];
  for (int k = axis + 1; k < out.rank; k++) inner *= out.d[k];
  for (int64_t a = 0; a < outer; a++) {
    for (int64_t d = 0; d < depth; d++) {
      for (int64_t b = 0; b < inner; b++) {
        double v = ct__ix_load(x, xt->dtype, a * inner + b);
        int64_t i = v >= -(double)depth && v < (double)depth ? (int64_t)v : INT64_MIN;
        if (i < 0 && i != INT64_MIN) i += depth;
        memcpy(o + (size_t)((a * depth + d) * inner + b) * es, val + (i == d ? es : 0), es);
      }
    }
  }
  return CT_OK;
}

/* depth_to_space (to_space) and space_to_depth, one element at a time over Out. */
static ct_status block_move(const ct_kernel_ctx *c, bool to_space) {
  ct_ddim od;
  ct_status s = ct__ix_block_dims(c, to_space, &od);
  if (s != CT_OK) return s;
  const ct_tensor *xt = ct_kernel_in(c, 0, 0);
  size_t es = ct_dtype_size(xt->dtype);
  char *o = ct__k_out_data(c, 0, 0, xt->dtype);
  if (o == NULL) return ct_last_status();
  const char *x = ct__k_in_data(xt);
  int64_t b = c->attr[0].u.i, C = xt->dims.d[1], H = xt->dims.d[2], W = xt->dims.d[3];
  bool crd = to_space && strcmp(c->attr[1].u.s, "CRD") == 0;
  int64_t at = 0;
  for (int64_t n = 0; n < od.d[0]; n++) {
    for (int64_t oc = 0; oc < od.d[1]; oc++) {
      for (int64_t oh = 0; oh < od.d[2]; oh++) {
        for (int64_t ow = 0; ow < od.d[3]; ow++, at++) {
          int64_t xc, xh, xw;
          if (to_space) {
            int64_t i = oh % b, j = ow % b;
            xc = crd ? oc * b * b + i * b + j : (i * b + j) * od.d[1] + oc;
            xh = oh / b;
            xw = ow / b;
          } else {
            int64_t blk = oc / C;
            xc = oc % C;
            xh = oh * b + blk / b;
            xw = ow * b + blk % b;
          }
          memcpy(o + (size_t)at * es, x + (size_t)(((n * C + xc) * H + xh) * W + xw) * es, es);
        }
      }
    }
  }
  return CT_OK;
}
ct_status ct__ix_k_d2s(const ct_kernel_ctx *c) { return block_move(c, true); }
ct_status ct__ix_k_s2d(const ct_kernel_ctx *c) { return block_move(c, false); }

ct_status ct__ix_k_eye(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, 0, 0);
  ct_dtype dt = xt->dtype;
  ct_status s = c->attr[1].u.i == -1 ? CT_OK : ct__k_attr_dtype(c, 1, &dt);
  if (s != CT_OK) return s;
  void *o = ct__k_out_data(c, 0, 0, dt);
  if (o == NULL) return ct_last_status();
  int64_t rows = xt->dims.d[0], cols = xt->dims.d[1], k = c->attr[0].u.i;
  memset(o, 0, (size_t)xt->numel * ct_dtype_size(dt));
  for (int64_t i = 0; i < rows; i++) {
    if (i + k >= 0 && i + k < cols) ct__ix_store(o, dt, i * cols + i + k, 1);
  }
  return CT_OK;
}

/* where_index: Out [n, rank] of the nonzero elements' indices, in row-major order. */
ct_status ct__ix_k_where(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, 0, 0);
  const void *x = ct__k_in_data(xt);
  int64_t n = 0, r = xt->dims.rank;
  for (int64_t i = 0; i < xt->numel; i++) n += ct__ix_load(x, xt->dtype, i) != 0;
  ct_status s = ct__k_resize(c, 0, 0, CT_DIMS(n, r));
  if (s != CT_OK) return s;
  int64_t *o = ct__k_out_data(c, 0, 0, CT_INT64);
  if (o == NULL) return ct_last_status();
  int64_t idx[CT_MAX_RANK] = {0};
  for (int64_t i = 0, j = 0; i < xt->numel; i++) {
    if (ct__ix_load(x, xt->dtype, i) != 0) {
      for (int64_t k = 0; k < r; k++) o[j * r + k] = idx[k];
      j++;
    }
    for (int64_t k = r - 1; k >= 0; k--) {
      if (++idx[k] < xt->dims.d[k]) break;
      idx[k] = 0;
    }
  }
  return CT_OK;
}

/* compress: the slices along axis whose Condition (1-D, at most the axis's extent) is nonzero. */
ct_status ct__ix_k_compress(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, 0, 0), *ct = ct_kernel_in(c, 1, 0);
  int axis;
  ct_status s = ct__k_axis(c, "axis", c->attr[0].u.i, xt->dims.rank, &axis);
  if (s != CT_OK) return s;
  if (xt->dims.rank == 0 || ct->dims.rank != 1 || ct->numel > xt->dims.d[axis]) {
    return ct_kernel_fail(c, CT_ERR_SHAPE, "input Condition variable '%s' must be a list no "
                          "longer than input X variable '%s' along axis %d",
                          ct_kernel_in_name(c, 1, 0), ct_kernel_in_name(c, 0, 0), axis);
  }
  const void *cond = ct__k_in_data(ct);
  int64_t kept = 0, n = xt->dims.d[axis], outer = 1, inner = 1;
  for (int64_t i = 0; i < ct->numel; i++) kept += ct__ix_load(cond, ct->dtype, i) != 0;
  for (int k = 0; k < axis; k++) outer *= xt->dims.d[k];
  for (int k = axis + 1; k < xt->dims.rank; k++) inner *= xt->dims.d[k];
  ct_ddim od = xt->dims;
  od.d[axis] = kept;
  s = ct__k_resize(c, 0, 0, od);
  if (s != CT_OK) return s;
  char *o = ct__k_out_data(c, 0, 0, xt->dtype);
  if (o == NULL) return ct_last_status();
  const char *x = ct__k_in_data(xt);
  size_t blk = (size_t)inner * ct_dtype_size(xt->dtype);
  for (int64_t a = 0, j = 0; a < outer; a++) {
    for (int64_t i = 0; i < ct->numel; i++) {
      if (ct__ix_load(cond, ct->dtype, i) == 0) continue;
      memcpy(o + (size_t)j++ * blk, x + (size_t)(a * n + i) * blk, blk);
    }
  }
  return CT_OK;
}

ct_status ct__ix_k_rs(const ct_kernel_ctx *c) {
  ct_status s = ct__ix_rs_check(c);
  if (s != CT_OK) return s;
  const ct_tensor *xt = ct_kernel_in(c, 0, 0), *lt = ct_kernel_in(c, 1, 0);
  size_t es = ct_dtype_size(xt->dtype);
  char *o = ct__k_out_data(c, 0, 0, xt->dtype);
  if (o == NULL) return ct_last_status();
  const char *x = ct__k_in_data(xt);
  int bax = (int)c->attr[0].u.i;
  int64_t inner = 1, d0 = xt->dims.d[0], d1 = xt->dims.d[1];
  for (int k = 2; k < xt->dims.rank; k++) inner *= xt->dims.d[k];
  size_t blk = (size_t)inner * es;
  for (int64_t i = 0; i < d0; i++) {
    for (int64_t j = 0; j < d1; j++) {
      int64_t b = bax == 0 ? i : j, t = bax == 0 ? j : i;
      int64_t len = ct__ix_index(ct__k_in_data(lt), lt->dtype, b);
      int64_t st = t < len ? len - 1 - t : t;
      int64_t si = bax == 0 ? i : st, sj = bax == 0 ? st : j;
      memcpy(o + (size_t)(i * d1 + j) * blk, x + (size_t)(si * d1 + sj) * blk, blk);
    }
  }
  return CT_OK;
}

/* ---- top_k_v2 -------------------------------------------------------------------------------- */

#define TOPK(SUF, T)                                                                     \
  typedef struct { T v; int64_t i; } pair_##SUF;                                         \
  static int big_##SUF(const void *a, const void *b) {                                   \
    const pair_##SUF *p = a, *q = b;                                                     \
    if (p->v != q->v) return p->v > q->v ? -1 : 1;                                      \
    return p->i < q->i ? -1 : 1;                                                         \
  }                                                                                      \
  static int small_##SUF(const void *a, const void *b) {                                 \
    const pair_##SUF *p = a, *q = b;                                                     \
    if (p->v != q->v) return p->v < q->v ? -1 : 1;                                      \
    return p->i < q->i ? -1 : 1;                                                         \
  }                                                                                      \
  ct_status ct__ix_k_topk_##SUF(const ct_kernel_ctx *c) {                                \
    int axis;                                                                            \
    int64_t k;                                                                           \
    ct_ddim od;                                                                          \
    ct_status s = ct__ix_topk_plan(c, &axis, &k, &od);                                   \
    if (s != CT_OK) return s;                                                            \
    const ct_tensor *xt = ct_kernel_in(c, 0, 0);                                         \
    const T *x = ct__k_in_data(xt);                                                      \
    for (int64_t i = 0; i < xt->numel; i++) {                                            \
      if (x[i] != x[i]) {                                                                \
        return ct_kernel_fail(c, CT_ERR_UNSUPPORTED, "input X variable '%s' holds NaN "  \
                              "at %lld: top_k_v2 does not order NaN",                    \
                              ct_kernel_in_name(c, 0, 0), (long long)i);                 \
      }                                                                                  \
    }                                                                                    \
    int64_t n = xt->dims.d[axis], outer = 1, inner = 1;                                  \
    for (int q = 0; q < axis; q++) outer *= xt->dims.d[q];                               \
    for (int q = axis + 1; q < xt->dims.rank; q++) inner *= xt->dims.d[q];               \
    pair_##SUF *row = ct__malloc((size_t)(n ? n : 1) * sizeof *row);                         \
    if (row == NULL) return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY, "out of host memory"); \
    T *o = ct__k_out_data(c, 0, 0, xt->dtype);                                           \
    int64_t *oi = o ? ct__k_out_data(c, 1, 0, CT_INT64) : NULL;                          \
    if (oi == NULL) {                                                                    \
      free(row);                                                                         \
      return ct_last_status();                                                           \
    }                                                                                    \
    bool largest = c->attr[2].u.b;                                                       \
    for (int64_t a = 0; a < outer; a++) {                                                \
      for (int64_t b = 0; b < inner; b++) {                                              \
        for (int64_t i = 0; i < n; i++) row[i] = (pair_##SUF){x[(a * n + i) * inner + b], i}; \
        qsort(row, (size_t)n, sizeof *row, largest ? big_##SUF : small_##SUF);          \
        for (int64_t i = 0; i < k; i++) {                                                \
          o[(a * k + i) * inner + b] = row[i].v;                                         \
          oi[(a * k + i) * inner + b] = row[i].i;                                        \
        }                                                                                \
      }                                                                                  \
    }                                                                                    \
    free(row);                                                                           \
    return CT_OK;                                                                        \
  }

TOPK(i32, int32_t)
TOPK(i64, int64_t)
TOPK(f32, float)
TOPK(f64, double)
