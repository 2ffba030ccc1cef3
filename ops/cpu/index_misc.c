/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/index_misc.c: the CPU kernels of the index family's other op types (ops/defs/
 * index_misc.c). Those that only move elements serve every dtype (copied as bytes); cumsum,
 * top_k_v2 and the add/mul/max/min reductions of put_along_axis and scatter_nd compute in the
 * dtype for int32, int64, float32 and float64. ops/cpu/index.c lists them in its table. */
#include <stdlib.h>
#include <string.h>

#include "ops/cpu/index.h"

/* ---- tril_triu ------------------------------------------------------------------------------- */

ct_status ct__ix_k_tri(const ct_kernel_ctx *c) {
  int64_t k;
  ct_status s = ct__ix_tri_diag(c, &k);
  if (s != CT_OK) return s;
  const ct_tensor *xt = ct_kernel_in(c, 0, 0);
  size_t es = ct_dtype_size(xt->dtype);
  char *o = ct__k_out_data(c, 0, 0, xt->dtype);
  if (o == NULL) return ct_last_status();
  const char *x = ct__k_in_data(xt);
  int r = xt->dims.rank;
  int64_t rows = xt->dims.d[r - 2], cols = xt->dims.d[r - 1], mats = 1;
  for (int i = 0; i < r - 2; i++) mats *= xt->dims.d[i];
  bool lower = c->attr[1].u.b;
  for (int64_t m = 0; m < mats; m++) {
    for (int64_t i = 0; i < rows; i++) {
      for (int64_t j = 0; j < cols; j++) {
        size_t at = (size_t)((m * rows + i) * cols + j) * es;
        bool keep = lower ? j - i <= k : j - i >= k;
        if (keep) memcpy(o + at, x + at, es);
        else memset(o + at, 0, es);
      }
    }
  }
  return CT_OK;
}

/* ---- cumsum ---------------------------------------------------------------------------------- */

/* a op b in T: integers wrap (CT__WRAP, as the elementwise kernels), floats as they are. */
#define WRAP_OP(T, a, op, b)                                                                \
  _Generic((T)0, int32_t: CT__WRAP(uint32_t, int32_t, a, op, b),                          \
           int64_t: CT__WRAP(uint64_t, int64_t, a, op, b), default: (a)op(b))
#define WRAP_ADD(T, a, b) WRAP_OP(T, a, +, b)
#define WRAP_MUL(T, a, b) WRAP_OP(T, a, *, b)

#define CUMSUM(SUF, T)                                                                    \
  ct_status ct__ix_k_cumsum_##SUF(const ct_kernel_ctx *c) {                              \
    int axis;                                                                             \
    ct_status s = ct__ix_cumsum_axis(c, &axis);                                           \
    if (s != CT_OK) return s;                                                             \
    const ct_tensor *xt = ct_kernel_in(c, 0, 0);                                          \
    T *o = ct__k_out_data(c, 0, 0, xt->dtype);                                            \
    if (o == NULL) return ct_last_status();                                               \
    const T *x = ct__k_in_data(xt);                                                       \
    int64_t outer = 1, n = xt->dims.rank ? xt->dims.d[axis] : 1, inner = 1;               \
    for (int k = 0; k < axis; k++) outer *= xt->dims.d[k];                                \
    for (int k = axis + 1; k < xt->dims.rank; k++) inner *= xt->dims.d[k];                \
    bool ex = c->attr[1].u.b, rev = c->attr[2].u.b;                                       \
    for (int64_t a = 0; a < outer; a++) {                                                 \
      for (int64_t b = 0; b < inner; b++) {                                               \
        T acc = 0;                                                                        \
        for (int64_t t = 0; t < n; t++) {                                                 \
          int64_t i = rev ? n - 1 - t : t, at = (a * n + i) * inner + b;                  \
          T v = x[at];                                                                    \
          if (ex) {                                                                       \
            o[at] = acc;                                                                  \
            acc = WRAP_ADD(T, acc, v);                                                    \
          } else {                                                                        \
            acc = WRAP_ADD(T, acc, v);                                                    \
            o[at] = acc;                                                                  \
          }                                                                               \
        }                                                                                 \
      }                                                                                   \
    }                                                                                     \
    return CT_OK;                                                                         \
  }

CUMSUM(i32, int32_t)
CUMSUM(i64, int64_t)
CUMSUM(f32, float)
CUMSUM(f64, double)

/* ---- take_along_axis, put_along_axis --------------------------------------------------------- */

/* The walk over Index's elements: for element e (row-major over Index's dims), the offset in
 * Input of the same position with the axis coordinate replaced by the index. */
typedef struct along {
  int axis;
  int64_t n, xs[CT_MAX_RANK];
  ct_ddim ix;
} along;

static ct_status along_make(const ct_kernel_ctx *c, along *w) {
  ct_status s = ct__ix_along_check(c, &w->axis);
  if (s != CT_OK) return s;
  const ct_tensor *xt = ct_kernel_in(c, 0, 0), *it = ct_kernel_in(c, 1, 0);
  ct__ix_strides(xt->dims, w->xs);
  w->n = xt->dims.d[w->axis];
  w->ix = it->dims;
  const void *p = ct__k_in_data(it);
  for (int64_t e = 0; e < it->numel; e++) {
    int64_t v = ct__ix_index(p, it->dtype, e);
    if (v < -w->n || v >= w->n) {
      return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE, "input Index variable '%s' holds %lld at "
                            "%lld: give indices in [%lld, %lld) along the axis",
                            ct_kernel_in_name(c, 1, 0), (long long)v, (long long)e,
                            (long long)-w->n, (long long)w->n);
    }
  }
  return CT_OK;
}

/* Offset in Input of Index element e (whose multi-index is idx), advancing idx after. */
static int64_t along_at(const along *w, int64_t *idx, int64_t v) {
  if (v < 0) v += w->n;
  int64_t off = 0;
  for (int k = 0; k < w->ix.rank; k++) off += (k == w->axis ? v : idx[k]) * w->xs[k];
  for (int k = w->ix.rank - 1; k >= 0; k--) {
    if (++idx[k] < w->ix.d[k]) break;
    idx[k] = 0;
  }
  return off;
}

ct_status ct__ix_k_tal(const ct_kernel_ctx *c) {
  along w;
  ct_status s = along_make(c, &w);
  if (s != CT_OK) return s;
  const ct_tensor *xt = ct_kernel_in(c, 0, 0), *it = ct_kernel_in(c, 1, 0);
  size_t es = ct_dtype_size(xt->dtype);
  char *o = ct__k_out_data(c, 0, 0, xt->dtype);
  if (o == NULL) return ct_last_status();
  const char *x = ct__k_in_data(xt);
  const void *ip = ct__k_in_data(it);
  int64_t idx[CT_MAX_RANK] = {0};
  for (int64_t e = 0; e < it->numel; e++) {
    int64_t off = along_at(&w, idx, ct__ix_index(ip, it->dtype, e));
    memcpy(o + (size_t)e * es, x + (size_t)off * es, es);
  }
  return CT_OK;
}

enum { RED_ASSIGN, RED_ADD, RED_MUL, RED_MAX, RED_MIN };

/* The reduction named by string attribute a ("assign"/"none", "add", "mul", "max", "min"). */
static ct_status reduction(const ct_kernel_ctx *c, size_t a, bool typed, int *r) {
  static const char *const names[] = {"assign", "add", "mul", "max", "min"};
  const char *v = c->attr[a].u.s;
  *r = strcmp(v, "none") == 0 ? RED_ASSIGN : -1;
  for (int i = 0; i < 5 && *r < 0; i++) {
    if (strcmp(v, names[i]) == 0) *r = i;
  }
  if (*r < 0) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT, "attribute '%s' is \"%s\": use \"%s\", "
                          "\"add\", \"mul\", \"max\" or \"min\"", c->op->def->attr[a].name, v,
                          a == 0 ? "none" : "assign");
  }
  if (*r != RED_ASSIGN && !typed) {
    return ct_kernel_fail(c, CT_ERR_UNSUPPORTED, "reduction \"%s\" of %s: use int32, int64, "
                          "float32 or float64", v, ct_dtype_name(c->dtype));
  }
  return CT_OK;
}

/* Applies update u to element *d of type T by reduction r (integers wrap). */
#define APPLY(T, r, d, u)                       \
  switch (r) {                                  \
    case RED_ADD: *(d) = WRAP_ADD(T, *(d), (u)); break; \
    case RED_MUL: *(d) = WRAP_MUL(T, *(d), (u)); break; \
    case RED_MAX: if ((u) > *(d)) *(d) = (u); break; \
    case RED_MIN: if ((u) < *(d)) *(d) = (u); break; \
    default: *(d) = (u); break;                 \
  }

#define SCATTERS(SUF, T)                                                                  \
  static ct_status pal_##SUF(const ct_kernel_ctx *c, bool typed) {                        \
    int r;                                                                                \
    along w;                                                                              \
    ct_status s = reduction(c, 1, typed, &r);                                             \
    if (s == CT_OK) s = along_make(c, &w);                                                \
    if (s != CT_OK) return s;                                                             \
    const ct_tensor *xt = ct_kernel_in(c, 0, 0), *it = ct_kernel_in(c, 1, 0);             \
    T *o = ct__k_out_data(c, 0, 0, xt->dtype);                                            \
    if (o == NULL) return ct_last_status();                                               \
    if (xt->numel > 0) memcpy(o, ct__k_in_data(xt), (size_t)xt->numel * sizeof(T));       \
    const T *u = ct__k_in_data(ct_kernel_in(c, 2, 0));                                    \
    const void *ip = ct__k_in_data(it);                                                   \
    int64_t idx[CT_MAX_RANK] = {0};                                                       \
    for (int64_t e = 0; e < it->numel; e++) {                                             \
      int64_t off = along_at(&w, idx, ct__ix_index(ip, it->dtype, e));                    \
      APPLY(T, r, &o[off], u[e]);                                                            \
    }                                                                                     \
    return CT_OK;                                                                         \
  }                                                                                       \
  static ct_status snd_##SUF(const ct_kernel_ctx *c, bool typed) {                        \
    int r;                                                                                \
    ct__ix_nd p;                                                                          \
    ct_status s = reduction(c, 0, typed, &r);                                             \
    if (s == CT_OK) s = ct__ix_nd_plan(c, 0, &p);                                         \
    if (s != CT_OK) return s;                                                             \
    const ct_tensor *xt = ct_kernel_in(c, 0, 0), *it = ct_kernel_in(c, 1, 0);             \
    int64_t xs[CT_MAX_RANK], n = p.per_batch;                                \
    ct__ix_strides(xt->dims, xs);                                                         \
    const void *ip = ct__k_in_data(it);                                                   \
    for (int64_t t = 0; t < n; t++) {                                          \
      for (int k = 0; k < p.m; k++) {                                                     \
        int64_t v = ct__ix_index(ip, it->dtype, t * p.m + k);                             \
        if (v < -xt->dims.d[k] || v >= xt->dims.d[k]) {                                   \
          return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE, "input Index variable '%s' holds " \
                                "%lld for dim %d of extent %lld", ct_kernel_in_name(c, 1, 0), \
                                (long long)v, k, (long long)xt->dims.d[k]);               \
        }                                                                                 \
      }                                                                                   \
    }                                                                                     \
    T *o = ct__k_out_data(c, 0, 0, xt->dtype);                                            \
    if (o == NULL) return ct_last_status();                                               \
    if (xt->numel > 0) memcpy(o, ct__k_in_data(xt), (size_t)xt->numel * sizeof(T));       \
    const T *u = ct__k_in_data(ct_kernel_in(c, 2, 0));                                    \
    for (int64_t t = 0; t < n; t++) {                                                     \
      int64_t off = 0;                                                                    \
      for (int k = 0; k < p.m; k++) {                                                     \
        int64_t v = ct__ix_index(ip, it->dtype, t * p.m + k);                             \
        off += (v < 0 ? v + xt->dims.d[k] : v) * xs[k];                                   \
      }                                                                                   \
      for (int64_t i = 0; i < p.inner; i++) APPLY(T, r, &o[off + i], u[t * p.inner + i]);    \
    }                                                                                     \
    return CT_OK;                                                                         \
  }                                                                                       \
  ct_status ct__ix_k_pal_##SUF(const ct_kernel_ctx *c) { return pal_##SUF(c, true); }     \
  ct_status ct__ix_k_snd_##SUF(const ct_kernel_ctx *c) { return snd_##SUF(c, true); }

SCATTERS(i32, int32_t)
SCATTERS(i64, int64_t)
SCATTERS(f32, float)
SCATTERS(f64, double)
/* Any other dtype: assignment only, elements moved by their size as unsigned integers. */
SCATTERS(u8, uint8_t)
SCATTERS(u16, uint16_t)
ct_status ct__ix_k_pal_any(const ct_kernel_ctx *c) {
  switch (ct_dtype_size(ct_kernel_in(c, 0, 0)->dtype)) {
    case 1: return pal_u8(c, false);
    case 2: return pal_u16(c, false);
    case 4: return pal_i32(c, false);
    default: return pal_i64(c, false);
  }
}
ct_status ct__ix_k_snd_any(const ct_kernel_ctx *c) {
  switch (ct_dtype_size(ct_kernel_in(c, 0, 0)->dtype)) {
    case 1: return snd_u8(c, false);
    case 2: return snd_u16(c, false);
    case 4: return snd_i32(c, false);
    default: return snd_i64(c, false);
  }
}

/* ---- gather_nd ------------------------------------------------------------------------------- */

ct_status ct__ix_k_gnd(const ct_kernel_ctx *c) {
  ct__ix_nd p;
  ct_status s = ct__ix_nd_plan(c, c->attr[0].u.i, &p);
  if (s != CT_OK) return s;
  const ct_tensor *xt = ct_kernel_in(c, 0, 0), *it = ct_kernel_in(c, 1, 0);
  size_t es = ct_dtype_size(xt->dtype);
  int64_t xs[CT_MAX_RANK], batch_stride = 1;
  ct__ix_strides(xt->dims, xs);
  for (int k = p.lead; k < xt->dims.rank; k++) batch_stride *= xt->dims.d[k];
  const void *ip = ct__k_in_data(it);
  int64_t tuples = p.batch * p.per_batch;
  for (int64_t t = 0; t < tuples; t++) {
    for (int k = 0; k < p.m; k++) {
      int64_t v = ct__ix_index(ip, it->dtype, t * p.m + k), d = xt->dims.d[p.lead + k];
      if (v < -d || v >= d) {
        return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE, "input Index variable '%s' holds %lld for "
                              "dim %d of extent %lld", ct_kernel_in_name(c, 1, 0), (long long)v,
                              p.lead + k, (long long)d);
      }
    }
  }
  char *o = ct__k_out_data(c, 0, 0, xt->dtype);
  if (o == NULL) return ct_last_status();
  const char *x = ct__k_in_data(xt);
  size_t blk = (size_t)p.inner * es;
  for (int64_t t = 0; t < tuples; t++) {
    int64_t off = (t / p.per_batch) * batch_stride;
    for (int k = 0; k < p.m; k++) {
      int64_t v = ct__ix_index(ip, it->dtype, t * p.m + k), d = xt->dims.d[p.lead + k];
      off += (v < 0 ? v + d : v) * xs[p.lead + k];
    }
    memcpy(o + (size_t)t * blk, x + (size_t)off * es, blk);
  }
  return CT_OK;
}
