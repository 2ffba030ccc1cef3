/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/misc_ops.c: the CPU kernels of the misc family (ops/defs/misc_ops.h) and its table:
 * non_max_suppression (float32, float64: box arithmetic in the dtype, as ONNX's reference
 * does), unique (every dtype; integers compared exactly, floats with NaN after every number and
 * equal to itself), window and mel_weight_matrix (float32, float64), dropout_identity (every
 * dtype). einsum and det are in misc_ops_linalg.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/misc_ops.h"
#include "ops/defs/index.h"

static ct_status no_memory(const ct_kernel_ctx *c) {
  return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY, "out of host memory");
}

double *ct__misc_doubles(const ct_kernel_ctx *c, size_t slot, size_t i) {
  const ct_tensor *t = ct_kernel_in(c, slot, i);
  double *v = ct__malloc((size_t)(t->numel > 0 ? t->numel : 1) * sizeof *v);
  if (v == NULL) {
    no_memory(c);
    return NULL;
  }
  const void *p = ct__k_in_data(t);
  for (int64_t k = 0; k < t->numel; k++) {
    v[k] = t->dtype == CT_FLOAT32 ? ((const float *)p)[k] : ((const double *)p)[k];
  }
  return v;
}

ct_status ct__misc_store(const ct_kernel_ctx *c, size_t slot, size_t i, ct_dtype dt,
                         const double *v, int64_t n) {
  void *o = ct__k_out_data(c, slot, i, dt);
  if (o == NULL) return ct_last_status();
  for (int64_t k = 0; k < n; k++) {
    if (dt == CT_FLOAT32) ((float *)o)[k] = (float)v[k];
    else ((double *)o)[k] = v[k];
  }
  return CT_OK;
}

/* ---- non_max_suppression --------------------------------------------------------------------- */

/* Whether boxes a and b overlap by more than thr (intersection over union), in T. */
#define SUPPRESS(SUF, T)                                                                    \
  static bool suppress_##SUF(const T *a, const T *b, bool center, double thr) {            \
    T ax0, ax1, ay0, ay1, bx0, bx1, by0, by1;                                               \
    if (center) {                                                                           \
      ax0 = a[0] - a[2] / 2, ax1 = a[0] + a[2] / 2, ay0 = a[1] - a[3] / 2;                  \
      ay1 = a[1] + a[3] / 2, bx0 = b[0] - b[2] / 2, bx1 = b[0] + b[2] / 2;                  \
      by0 = b[1] - b[3] / 2, by1 = b[1] + b[3] / 2;                                         \
    } else {                                                                                \
      ax0 = a[1] < a[3] ? a[1] : a[3], ax1 = a[1] < a[3] ? a[3] : a[1];                     \
      ay0 = a[0] < a[2] ? a[0] : a[2], ay1 = a[0] < a[2] ? a[2] : a[0];                     \
      bx0 = b[1] < b[3] ? b[1] : b[3], bx1 = b[1] < b[3] ? b[3] : b[1];                     \
      by0 = b[0] < b[2] ? b[0] : b[2], by1 = b[0] < b[2] ? b[2] : b[0];                     \
    }                                                                                       \
    T ix0 = ax0 > bx0 ? ax0 : bx0, ix1 = ax1 < bx1 ? ax1 : bx1;                             \
    T iy0 = ay0 > by0 ? ay0 : by0, iy1 = ay1 < by1 ? ay1 : by1;                             \
    if (!(ix1 > ix0) || !(iy1 > iy0)) return false;                                         \
    T inter = (ix1 - ix0) * (iy1 - iy0);                                                    \
    T area_a = (ax1 - ax0) * (ay1 - ay0), area_b = (bx1 - bx0) * (by1 - by0);               \
    T uni = area_a + area_b - inter;                                                        \
    if (!(inter > 0) || !(area_a > 0) || !(area_b > 0) || !(uni > 0)) return false;         \
    T iou = inter / uni;                                                                    \
    return (double)iou > thr;                                                               \
  }
SUPPRESS(f32, float)
SUPPRESS(f64, double)

typedef struct cand {
  double score;
  int64_t box;
} cand;

/* Higher scores first, then lower box indices. */
static int cand_cmp(const void *pa, const void *pb) {
  const cand *a = pa, *b = pb;
  if (a->score != b->score) return a->score > b->score ? -1 : 1;
  return a->box < b->box ? -1 : a->box > b->box;
}

/* Optional one-element input slot: its value into *v when wired and not empty. */
static ct_status nms_opt(const ct_kernel_ctx *c, size_t slot, double *v, bool *given) {
  if (ct_kernel_in_count(c, slot) == 0 || ct_kernel_in(c, slot, 0)->numel == 0) return CT_OK;
  *given = true;
  return ct__misc_num_in(c, slot, v);
}

static ct_status nms_check(const ct_kernel_ctx *c, ct_ddim b, ct_ddim s) {
  if (b.rank == 3 && b.d[2] == 4 && s.rank == 3 && s.d[0] == b.d[0] && s.d[2] == b.d[1]) {
    return ct__k_check_dtype(c, CT__NMS_SCORES, 0, c->dtype);
  }
  char sb[CT__DDIM_STR_CAP], ss[CT__DDIM_STR_CAP];
  return ct_kernel_fail(c, CT_ERR_SHAPE, "inputs Boxes variable '%s' %s and Scores variable '%s' "
                        "%s: give Boxes [batches, boxes, 4] and Scores [batches, classes, boxes]",
                        ct_kernel_in_name(c, CT__NMS_BOXES, 0), ct_ddim_str(b, sb, sizeof sb),
                        ct_kernel_in_name(c, CT__NMS_SCORES, 0), ct_ddim_str(s, ss, sizeof ss));
}

static ct_status nms(const ct_kernel_ctx *c) {
  const ct_tensor *bt = ct_kernel_in(c, CT__NMS_BOXES, 0), *st = ct_kernel_in(c, CT__NMS_SCORES, 0);
  ct_status s = nms_check(c, bt->dims, st->dims);
  int64_t center = c->attr[CT__NMS_CENTER_POINT_BOX].u.i;
  if (s == CT_OK && center != 0 && center != 1) {
    s = ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT, "attribute 'center_point_box' is %lld: use 0 "
                       "(corners) or 1 (center and size)", (long long)center);
  }
  double max_out = (double)c->attr[CT__NMS_MAX_ATTR].u.i, iou = c->attr[CT__NMS_IOU_ATTR].u.f;
  double thr = c->attr[CT__NMS_SCORE_ATTR].u.f;
  bool has_max = true, has_iou = true, has_thr = c->op->attr_set[CT__NMS_SCORE_ATTR];
  if (s == CT_OK) s = nms_opt(c, CT__NMS_MAX, &max_out, &has_max);
  if (s == CT_OK) s = nms_opt(c, CT__NMS_IOU, &iou, &has_iou);
  if (s == CT_OK) s = nms_opt(c, CT__NMS_SCORE, &thr, &has_thr);
  if (s != CT_OK) return s;
  int64_t nb = bt->dims.d[0], n = bt->dims.d[1], nc = st->dims.d[1];
  int64_t per = max_out <= 0 ? 0 : max_out >= (double)n ? n : (int64_t)max_out;
  const void *boxes = ct__k_in_data(bt), *scores = ct__k_in_data(st);
  for (int64_t i = 0; i < st->numel; i++) {
    if (isnan(ct__ix_load(scores, st->dtype, i))) {
      return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT, "input Scores variable '%s' holds NaN at "
                            "element %lld: give numbers", ct_kernel_in_name(c, CT__NMS_SCORES, 0),
                            (long long)i);
    }
  }
  cand *cs = ct__malloc((size_t)(n > 0 ? n : 1) * sizeof *cs);
  int64_t *sel = ct__malloc((size_t)(nb * nc * per * 3 + 1) * sizeof *sel), k = 0;
  int64_t *kept = ct__malloc((size_t)(per + 1) * sizeof *kept);
  if (cs == NULL || sel == NULL || kept == NULL) {
    free(cs), free(sel), free(kept);
    return no_memory(c);
  }
  bool f32 = c->dtype == CT_FLOAT32;
  for (int64_t b = 0; b < nb && per > 0; b++) {
    for (int64_t cl = 0; cl < nc; cl++) {
      int64_t m = 0, nk = 0;
      for (int64_t i = 0; i < n; i++) {
        double v = ct__ix_load(scores, st->dtype, (b * nc + cl) * n + i);
        if (!has_thr || v > thr) cs[m++] = (cand){v, i};
      }
      qsort(cs, (size_t)m, sizeof *cs, cand_cmp);
      for (int64_t i = 0; i < m && nk < per; i++) {
        bool keep = true;
        for (int64_t j = 0; j < nk && keep; j++) {
          int64_t p = (b * n + cs[i].box) * 4, q = (b * n + kept[j]) * 4;
          keep = f32 ? !suppress_f32((const float *)boxes + p, (const float *)boxes + q, center,
                                     iou)
                     : !suppress_f64((const double *)boxes + p, (const double *)boxes + q,
                                     center, iou);
        }
        if (!keep) continue;
        kept[nk++] = cs[i].box;
        sel[3 * k] = b, sel[3 * k + 1] = cl, sel[3 * k + 2] = cs[i].box;
        k++;
      }
    }
  }
  free(cs), free(kept);
  s = ct__k_resize(c, 0, 0, CT_DIMS(k, 3));
  int64_t *o = s == CT_OK ? ct__k_out_data(c, 0, 0, CT_INT64) : NULL;
  if (o != NULL) memcpy(o, sel, (size_t)(3 * k) * sizeof *o);
  free(sel);
  return s != CT_OK ? s : o == NULL ? ct_last_status() : CT_OK;
}

/* ---- unique ---------------------------------------------------------------------------------- */

typedef struct uq {
  const void *x;
  ct_dtype dt;
  int64_t outer, n, inner;
} uq;

static int elem_cmp(const uq *u, int64_t i, int64_t j) {
  if (u->dt == CT_FLOAT16 || u->dt == CT_BFLOAT16 || u->dt == CT_FLOAT32 ||
      u->dt == CT_FLOAT64) {
    double a = ct__ix_load(u->x, u->dt, i), b = ct__ix_load(u->x, u->dt, j);
    bool na = isnan(a), nb = isnan(b);
    if (na || nb) return na == nb ? 0 : na ? 1 : -1;
    return a < b ? -1 : a > b;
  }
  if (u->dt == CT_UINT64) { /* past 2^53 (and past INT64_MAX) a double would merge or wrap */
    uint64_t a = ((const uint64_t *)u->x)[i], b = ((const uint64_t *)u->x)[j];
    return a < b ? -1 : a > b;
  }
  int64_t a, b;
  switch (u->dt) {
    case CT_INT64: a = ((const int64_t *)u->x)[i], b = ((const int64_t *)u->x)[j]; break;
    default: a = (int64_t)ct__ix_load(u->x, u->dt, i), b = (int64_t)ct__ix_load(u->x, u->dt, j);
  }
  return a < b ? -1 : a > b;
}

/* Slices s and t compared element by element, numpy's order (outer dims, then inner). */
static int slice_cmp(const uq *u, int64_t s, int64_t t) {
  for (int64_t o = 0; o < u->outer; o++) {
    for (int64_t i = 0; i < u->inner; i++) {
      int r = elem_cmp(u, (o * u->n + s) * u->inner + i, (o * u->n + t) * u->inner + i);
      if (r != 0) return r;
    }
  }
  return 0;
}

/* A stable merge sort of the n slice indices in v (tmp: n more). */
static void sort_slices(const uq *u, int64_t *v, int64_t *tmp, int64_t n) {
  for (int64_t w = 1; w < n; w *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int64_t a = lo, b = mid, k = lo;
      while (a < mid && b < hi) tmp[k++] = slice_cmp(u, v[b], v[a]) < 0 ? v[b++] : v[a++];
      while (a < mid) tmp[k++] = v[a++];
      while (b < hi) tmp[k++] = v[b++];
    }
    memcpy(v, tmp, (size_t)n * sizeof *v);
  }
}

/* Writes output slot's [count] int64 values v (when the slot is wired). */
static ct_status put_ints(const ct_kernel_ctx *c, size_t slot, const int64_t *v, int64_t count) {
  if (ct_kernel_out_count(c, slot) == 0) return CT_OK;
  ct_status s = ct__k_resize(c, slot, 0, CT_DIMS(count));
  int64_t *o = s == CT_OK ? ct__k_out_data(c, slot, 0, CT_INT64) : NULL;
  if (o == NULL) return s != CT_OK ? s : ct_last_status();
  if (count > 0) memcpy(o, v, (size_t)count * sizeof *o);
  return CT_OK;
}

static ct_status unique_any(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, 0, 0);
  uq u = {ct__k_in_data(xt), xt->dtype, 1, xt->numel, 1};
  int axis = 0;
  ct_ddim od = CT_DIMS(xt->numel);
  if (!c->attr[CT__UQ_FLATTEN].u.b) {
    ct_status s = ct__k_axis(c, "axis", c->attr[CT__UQ_AXIS].u.i, xt->dims.rank, &axis);
    if (s == CT_OK && xt->dims.rank == 0) {
      s = ct_kernel_fail(c, CT_ERR_SHAPE, "input X variable '%s' is a scalar: it has no axis "
                         "(set attribute flatten)", ct_kernel_in_name(c, 0, 0));
    }
    if (s != CT_OK) return s;
    od = xt->dims;
    u.n = xt->dims.d[axis];
    for (int k = 0; k < axis; k++) u.outer *= xt->dims.d[k];
    for (int k = axis + 1; k < xt->dims.rank; k++) u.inner *= xt->dims.d[k];
  }
  int64_t n = u.n, *buf = ct__malloc((size_t)(6 * n + 1) * sizeof *buf);
  if (buf == NULL) return no_memory(c);
  int64_t *order = buf, *tmp = buf + n, *group = buf + 2 * n, *first = buf + 3 * n;
  int64_t *count = buf + 4 * n, *pos = buf + 5 * n, g = 0;
  for (int64_t i = 0; i < n; i++) order[i] = i;
  sort_slices(&u, order, tmp, n);
  for (int64_t i = 0; i < n; i++) {
    if (i == 0 || slice_cmp(&u, order[i - 1], order[i]) != 0) first[g] = order[i], count[g++] = 0;
    group[order[i]] = g - 1;
    count[g - 1]++;
  }
  /* pos: where each group goes (sorted: its rank; else by first occurrence). */
  for (int64_t q = 0, next = 0; q < (c->attr[CT__UQ_SORTED].u.b ? g : n); q++) {
    if (c->attr[CT__UQ_SORTED].u.b) pos[q] = q;
    else if (first[group[q]] == q) pos[group[q]] = next++;
  }
  int64_t *idx = tmp, *cnt = order; /* reused: the sort is done */
  for (int64_t q = 0; q < g; q++) idx[pos[q]] = first[q], cnt[pos[q]] = count[q];
  od.d[c->attr[CT__UQ_FLATTEN].u.b ? 0 : axis] = g;
  ct_status s = ct__k_resize(c, CT__UQ_OUT, 0, od);
  size_t es = ct_dtype_size(xt->dtype);
  char *o = s == CT_OK ? ct__k_out_data(c, CT__UQ_OUT, 0, xt->dtype) : NULL;
  if (s == CT_OK && o == NULL) s = ct_last_status();
  for (int64_t q = 0; s == CT_OK && q < g; q++) {
    for (int64_t a = 0; a < u.outer; a++) {
      memcpy(o + (size_t)((a * g + q) * u.inner) * es,
             (const char *)u.x + (size_t)((a * n + idx[q]) * u.inner) * es, (size_t)u.inner * es);
    }
  }
  if (s == CT_OK) s = put_ints(c, CT__UQ_INDICES, idx, g);
  if (s == CT_OK) s = put_ints(c, CT__UQ_COUNTS, cnt, g);
  for (int64_t i = 0; i < n; i++) first[i] = pos[group[i]];
  if (s == CT_OK) s = put_ints(c, CT__UQ_INVERSE, first, n);
  free(buf);
  return s;
}

/* ---- window, mel_weight_matrix, dropout_identity --------------------------------------------- */

static ct_status window_k(const ct_kernel_ctx *c) {
  int64_t n;
  ct_status s = ct__win_size(c, &n);
  double *v = s == CT_OK ? ct__malloc((size_t)(n > 0 ? n : 1) * sizeof *v) : NULL;
  if (s != CT_OK || v == NULL) return s != CT_OK ? s : no_memory(c);
  for (int64_t i = 0; i < n; i++) v[i] = ct__win_value(c, i, n);
  s = ct__misc_store(c, 0, 0, c->dtype, v, n);
  free(v);
  return s;
}

static ct_status mel_k(const ct_kernel_ctx *c) {
  ct__mel_plan p;
  ct_status s = ct__mel_plan_make(c, &p);
  if (s != CT_OK) return s;
  int64_t *e = ct__malloc((size_t)(p.bins + 2) * sizeof *e);
  double *v = ct__calloc((size_t)(p.spec * p.bins + 1), sizeof *v);
  if (e == NULL || v == NULL) {
    free(e), free(v);
    return no_memory(c);
  }
  s = ct__mel_edges(c, &p, e);
  for (int64_t i = 0; s == CT_OK && i < p.bins; i++) {
    int64_t lo = e[i], mid = e[i + 1], hi = e[i + 2];
    if (mid == lo) v[mid * p.bins + i] = 1;
    for (int64_t j = lo; mid != lo && j <= mid; j++) {
      v[j * p.bins + i] = (double)(j - lo) / (double)(mid - lo);
    }
    for (int64_t j = mid; j < hi; j++) v[j * p.bins + i] = (double)(hi - j) / (double)(hi - mid);
  }
  if (s == CT_OK) s = ct__misc_store(c, 0, 0, c->dtype, v, p.spec * p.bins);
  free(e), free(v);
  return s;
}

static ct_status dropout_identity_any(const ct_kernel_ctx *c) {
  ct_status s = ct__di_check(c);
  if (s != CT_OK) return s;
  const ct_tensor *xt = ct_kernel_in(c, CT__DI_X, 0);
  void *o = ct__k_out_data(c, CT__DI_OUT, 0, xt->dtype);
  if (o == NULL) return ct_last_status();
  memmove(o, ct__k_in_data(xt), ct__tensor_bytes(xt, xt->dtype));
  if (ct_kernel_out_count(c, CT__DI_MASK)) {
    bool *m = ct__k_out_data(c, CT__DI_MASK, 0, CT_BOOL);
    if (m == NULL) return ct_last_status();
    for (int64_t i = 0; i < xt->numel; i++) m[i] = true;
  }
  return CT_OK;
}

/* ---- The table ------------------------------------------------------------------------------- */

#define FLOATS(fn) CT__KERNELS([CT_FLOAT32] = fn, [CT_FLOAT64] = fn)
static const ct__kernel_set sets[] = {
    {"non_max_suppression", FLOATS(nms)},
    {"unique", CT__KERNELS([0] = unique_any)},
    {"einsum", FLOATS(ct__misc_k_einsum)},
    {"einsum_grad", FLOATS(ct__misc_k_einsum_grad)},
    {"det", FLOATS(ct__misc_k_det)},
    {"det_grad", FLOATS(ct__misc_k_det_grad)},
    {"window", FLOATS(window_k)},
    {"mel_weight_matrix", FLOATS(mel_k)},
    {"dropout_identity", CT__KERNELS([0] = dropout_identity_any)},
};

const ct__kernel_table ct__cpu_misc = CT__TABLE(sets);
