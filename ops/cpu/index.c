/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/index.c: the CPU kernels of the index family (ops/defs/index.h) that move elements
 * without arithmetic, for every dtype (elements are copied as bytes), and the gradients that
 * add them back, for float32 and float64.
 *
 * expand, tile, strided_slice and pad, and their gradients, share one walk: for each dim of Out
 * a table gives the index of X along that dim each Out index reads (-1: none, pad's constant),
 * so the forward copies X[src] to Out[i] and the gradient adds Out@GRAD[i] into X@GRAD[src]. */
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "common/alloc.h"
#include "ops/cpu/index.h"
#include "ops/half.h"

void ct__ix_store(void *data, ct_dtype dt, int64_t i, double v) {
  switch (dt) {
    case CT_BOOL: ((bool *)data)[i] = v != 0; break;
    case CT_INT8: ((int8_t *)data)[i] = (int8_t)v; break;
    case CT_UINT8: ((uint8_t *)data)[i] = (uint8_t)v; break;
    case CT_INT16: ((int16_t *)data)[i] = (int16_t)v; break;
    case CT_INT32: ((int32_t *)data)[i] = (int32_t)v; break;
    case CT_INT64: ((int64_t *)data)[i] = (int64_t)v; break;
    case CT_FLOAT16: ((uint16_t *)data)[i] = ct__float_to_half((float)v); break;
    case CT_BFLOAT16: ((uint16_t *)data)[i] = ct__float_to_bf16((float)v); break;
    case CT_FLOAT32: ((float *)data)[i] = (float)v; break;
    case CT_UINT16: ((uint16_t *)data)[i] = (uint16_t)(int64_t)v; break;
    case CT_UINT32: ((uint32_t *)data)[i] = (uint32_t)(int64_t)v; break;
    case CT_UINT64:
      ((uint64_t *)data)[i] = v >= 9223372036854775808.0 ? (uint64_t)v : (uint64_t)(int64_t)v;
      break;
    default: ((double *)data)[i] = v; break;
  }
}

/* ---- The walk -------------------------------------------------------------------------------- */

typedef struct ix_map {
  int rank;
  int64_t d[CT_MAX_RANK];  /* Out's dims */
  int64_t xs[CT_MAX_RANK]; /* X's stride of each Out dim (0 for a dim X lacks) */
  int64_t *map[CT_MAX_RANK];
  int64_t *buf;
} ix_map;

enum { MAP_SLICE, MAP_EXPAND, MAP_TILE, MAP_PAD };

/* Builds the walk of op kind `kind` from X's dims to Out's. */
static ct_status map_make(const ct_kernel_ctx *c, int kind, ct_ddim x, ix_map *m) {
  ct__ix_slice_plan sp;
  ct__ix_pad_plan pp;
  ct_ddim out;
  ct_status s;
  switch (kind) {
    case MAP_SLICE: s = ct__ix_slice_plan_make(c, &sp); out = sp.out; break;
    case MAP_EXPAND: s = ct__ix_expand_dims(c, x, &out); break;
    case MAP_TILE: s = ct__ix_tile_dims(c, x, &out); break;
    default: s = ct__ix_pad_plan_make(c, x, &pp); out = pp.out; break;
  }
  if (s != CT_OK) return s;
  int64_t xs[CT_MAX_RANK], total = 0;
  ct__ix_strides(x, xs);
  m->rank = out.rank;
  for (int k = 0; k < out.rank; k++) total += (m->d[k] = out.d[k]);
  m->buf = ct__malloc((size_t)(total > 0 ? total : 1) * sizeof(int64_t));
  if (m->buf == NULL) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY, "out of host memory for %lld indices",
                          (long long)total);
  }
  int64_t *p = m->buf;
  int lead = out.rank - x.rank; /* expand: Out dims before X's first */
  for (int k = 0; k < out.rank; k++, p += out.d[k - 1]) {
    int kx = kind == MAP_EXPAND ? k - lead : k;
    m->map[k] = p;
    m->xs[k] = kx >= 0 ? xs[kx] : 0;
    for (int64_t i = 0; i < out.d[k]; i++) {
      switch (kind) {
        case MAP_SLICE: p[i] = sp.start[k] + i * sp.step[k]; break;
        case MAP_EXPAND: p[i] = kx < 0 || x.d[kx] == 1 ? 0 : i; break;
        case MAP_TILE: p[i] = i % x.d[k]; break;
        default: p[i] = ct__ix_pad_src(pp.mode, i - pp.before[k], x.d[k]); break;
      }
    }
  }
  return CT_OK;
}

/* Runs BODY for each row of Out (all dims but the last) with orow its first element, len_ its
 * length and base the X offset of its dims but the last (-1 when one of them reads none). */
#define MAP_WALK(m, BODY)                                                        \
  do {                                                                           \
    int64_t idx_[CT_MAX_RANK] = {0}, rows_ = 1, last_ = (m)->rank - 1;          \
    for (int k_ = 0; k_ < last_; k_++) rows_ *= (m)->d[k_];                     \
    int64_t len_ = last_ >= 0 ? (m)->d[last_] : 1;                               \
    if (len_ == 0) rows_ = 0;                                                    \
    for (int64_t r_ = 0; r_ < rows_; r_++) {                                     \
      int64_t base = 0, orow = r_ * len_;                                           \
      for (int k_ = 0; k_ < last_ && base >= 0; k_++) {                          \
        int64_t v_ = (m)->map[k_][idx_[k_]];                                     \
        base = v_ < 0 ? -1 : base + v_ * (m)->xs[k_];                            \
      }                                                                          \
      BODY;                                                                      \
      for (int k_ = last_ - 1; k_ >= 0; k_--) {                                  \
        if (++idx_[k_] < (m)->d[k_]) break;                                      \
        idx_[k_] = 0;                                                            \
      }                                                                          \
    }                                                                            \
  } while (0)

/* Out = X along the walk; fill (es bytes) where it reads none. */
static ct_status map_forward(const ct_kernel_ctx *c, int kind, const void *fill) {
  const ct_tensor *xt = ct_kernel_in(c, 0, 0);
  size_t es = ct_dtype_size(xt->dtype);
  ix_map m;
  ct_status s = map_make(c, kind, xt->dims, &m);
  if (s != CT_OK) return s;
  char *o = ct__k_out_data(c, CT__OUT, 0, xt->dtype);
  if (o == NULL) {
    free(m.buf);
    return ct_last_status();
  }
  const char *x = ct__k_in_data(xt);
  const int64_t *lm = m.rank > 0 ? m.map[m.rank - 1] : NULL;
  int64_t ls = m.rank > 0 ? m.xs[m.rank - 1] : 0;
  /* A last dim read in order (a slice of step 1, the rows of a pad's or tile's middle): whole
   * rows move as one copy; the same bytes as element by element. */
  bool run = lm != NULL && ls == 1 && m.d[m.rank - 1] > 0 && lm[0] >= 0;
  for (int64_t j = 1; run && j < m.d[m.rank - 1]; j++) run = lm[j] == lm[0] + j;
  if (run) {
    MAP_WALK(&m, {
      char *dst = o + (size_t)orow * es;
      if (base < 0) {
        for (int64_t j = 0; j < len_; j++) memcpy(dst + (size_t)j * es, fill, es);
      } else {
        memcpy(dst, x + (size_t)(base + lm[0]) * es, (size_t)len_ * es);
      }
    });
    free(m.buf);
    return CT_OK;
  }
  MAP_WALK(&m, {
    for (int64_t j = 0; j < len_; j++) {
      int64_t v = lm == NULL ? 0 : lm[j];
      if (base < 0 || v < 0) memcpy(o + (size_t)(orow + j) * es, fill, es);
      else memcpy(o + (size_t)(orow + j) * es, x + (size_t)(base + v * ls) * es, es);
    }
  });
  free(m.buf);
  return CT_OK;
}

/* Only pad reads none; the others pass zeros they never copy. */
static const unsigned char zeros8[8];
static ct_status expand_any(const ct_kernel_ctx *c) { return map_forward(c, MAP_EXPAND, zeros8); }
static ct_status tile_any(const ct_kernel_ctx *c) { return map_forward(c, MAP_TILE, zeros8); }
static ct_status slice_any(const ct_kernel_ctx *c) { return map_forward(c, MAP_SLICE, zeros8); }

/* Whether integer dtype dt holds v exactly (a whole number in its range); true for the others
 * (bool takes any value as v != 0; floats round as a cast does). */
static bool pad_value_fits(ct_dtype dt, double v) {
  double lo, hi; /* the range, hi exclusive */
  switch (dt) {
    case CT_INT8: lo = -128.0, hi = 128.0; break;
    case CT_UINT8: lo = 0, hi = 256.0; break;
    case CT_INT16: lo = -32768.0, hi = 32768.0; break;
    case CT_UINT16: lo = 0, hi = 65536.0; break;
    case CT_INT32: lo = -2147483648.0, hi = 2147483648.0; break;
    case CT_UINT32: lo = 0, hi = 4294967296.0; break;
    case CT_INT64: lo = -9223372036854775808.0, hi = 9223372036854775808.0; break;
    case CT_UINT64: lo = 0, hi = 18446744073709551616.0; break;
    default: return true;
  }
  return v >= lo && v < hi && floor(v) == v; /* NaN fails the comparisons */
}

/* pad: the constant is PadValue's one value when wired (of X's dtype), else pad_value. */
static ct_status pad_any(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, CT__IX_PAD_X, 0);
  unsigned char fill[8] = {0};
  if (ct_kernel_in_count(c, CT__IX_PAD_VALUE) > 0) {
    const ct_tensor *v = ct_kernel_in(c, CT__IX_PAD_VALUE, 0);
    ct_status s = ct__k_check_dtype(c, CT__IX_PAD_VALUE, 0, xt->dtype);
    if (s != CT_OK) return s;
    if (v->numel != 1) {
      return ct_kernel_fail(c, CT_ERR_SHAPE, "input PadValue variable '%s' holds %lld values: "
                            "give one", ct_kernel_in_name(c, CT__IX_PAD_VALUE, 0),
                            (long long)v->numel);
    }
    memcpy(fill, ct__k_in_data(v), ct_dtype_size(xt->dtype));
  } else {
    double v = c->attr[CT__IX_PAD_VALUE_ATTR].u.f;
    if (!pad_value_fits(xt->dtype, v)) {
      return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                            "attribute 'pad_value' %.17g is not a value of X's dtype %s: give a "
                            "whole number in its range, or wire the value as input PadValue",
                            v, ct_dtype_name(xt->dtype));
    }
    ct__ix_store(fill, xt->dtype, 0, v);
  }
  return map_forward(c, MAP_PAD, fill);
}

/* X@GRAD = 0, then Out@GRAD (input slot dout) added along the walk. */
#define MAP_GRAD(SUF, T)                                                                  \
  static ct_status map_grad_##SUF(const ct_kernel_ctx *c, int kind, size_t dout) {        \
    const ct_tensor *xt = ct_kernel_in(c, 0, 0);                                          \
    ix_map m;                                                                             \
    ct_status s = map_make(c, kind, xt->dims, &m);                                        \
    if (s != CT_OK) return s;                                                             \
    T *dx = ct__k_out_data(c, 0, 0, xt->dtype);                                           \
    if (dx == NULL) {                                                                     \
      free(m.buf);                                                                        \
      return ct_last_status();                                                            \
    }                                                                                     \
    const T *g = ct__k_in_data(ct_kernel_in(c, dout, 0));                                 \
    if (xt->numel > 0) memset(dx, 0, (size_t)xt->numel * sizeof(T));                     \
    const int64_t *lm = m.rank > 0 ? m.map[m.rank - 1] : NULL;                            \
    int64_t ls = m.rank > 0 ? m.xs[m.rank - 1] : 0;                                       \
    MAP_WALK(&m, {                                                                        \
      if (base >= 0) {                                                                    \
        for (int64_t j = 0; j < len_; j++) {                                              \
          int64_t v = lm == NULL ? 0 : lm[j];                                             \
          if (v >= 0) dx[base + v * ls] += g[orow + j];                                      \
        }                                                                                 \
      }                                                                                   \
    });                                                                                   \
    free(m.buf);                                                                          \
    return CT_OK;                                                                         \
  }                                                                                       \
  static ct_status expand_grad_##SUF(const ct_kernel_ctx *c) {                            \
    return map_grad_##SUF(c, MAP_EXPAND, 2);                                              \
  }                                                                                       \
  static ct_status tile_grad_##SUF(const ct_kernel_ctx *c) {                              \
    return map_grad_##SUF(c, MAP_TILE, 2);                                                \
  }                                                                                       \
  static ct_status slice_grad_##SUF(const ct_kernel_ctx *c) {                             \
    return map_grad_##SUF(c, MAP_SLICE, 5);                                               \
  }                                                                                       \
  static ct_status pad_grad_##SUF(const ct_kernel_ctx *c) { return map_grad_##SUF(c, MAP_PAD, 3); }

MAP_GRAD(f32, float)
MAP_GRAD(f64, double)

/* ---- gather ---------------------------------------------------------------------------------- */

static ct_status gather_any(const ct_kernel_ctx *c) {
  ct__ix_gather_plan p;
  ct_status s = ct__ix_gather_plan_make(c, &p);
  if (s == CT_OK) s = ct__ix_gather_check(c, &p);
  if (s != CT_OK) return s;
  const ct_tensor *xt = ct_kernel_in(c, CT__IX_GA_X, 0), *it = ct_kernel_in(c, CT__IX_GA_INDEX, 0);
  size_t row = (size_t)p.inner * ct_dtype_size(xt->dtype);
  char *o = ct__k_out_data(c, CT__OUT, 0, xt->dtype);
  if (o == NULL) return ct_last_status();
  const char *x = ct__k_in_data(xt);
  const void *ix = ct__k_in_data(it);
  if (row == 0) return CT_OK;
  for (int64_t a = 0; a < p.outer; a++) {
    for (int64_t j = 0; j < p.n_index; j++) {
      int64_t v = ct__ix_index(ix, it->dtype, j);
      if (v < 0) v += p.n;
      memcpy(o + (size_t)(a * p.n_index + j) * row, x + (size_t)(a * p.n + v) * row, row);
    }
  }
  return CT_OK;
}

#define GATHER_GRAD(SUF, T)                                                                   \
  static ct_status gather_grad_##SUF(const ct_kernel_ctx *c) {                                \
    ct__ix_gather_plan p;                                                                     \
    ct_status s = ct__ix_gather_plan_make(c, &p);                                             \
    if (s == CT_OK) s = ct__ix_gather_check(c, &p);                                           \
    if (s != CT_OK) return s;                                                                 \
    const ct_tensor *it = ct_kernel_in(c, CT__IX_GA_INDEX, 0);                                \
    T *dx = ct__k_out_data(c, 0, 0, c->dtype);                                                \
    if (dx == NULL) return ct_last_status();                                                  \
    const T *g = ct__k_in_data(ct_kernel_in(c, 2, 0));                                        \
    const void *ix = ct__k_in_data(it);                                                       \
    if (p.inner == 0) return CT_OK;                                                           \
    memset(dx, 0, (size_t)(p.outer * p.n * p.inner) * sizeof(T));                             \
    for (int64_t a = 0; a < p.outer; a++) {                                                   \
      for (int64_t j = 0; j < p.n_index; j++) {                                               \
        int64_t v = ct__ix_index(ix, it->dtype, j);                                           \
        if (v < 0) v += p.n;                                                                  \
        T *d = dx + (a * p.n + v) * p.inner;                                                  \
        const T *r = g + (a * p.n_index + j) * p.inner;                                       \
        for (int64_t i = 0; i < p.inner; i++) d[i] += r[i];                                   \
      }                                                                                       \
    }                                                                                         \
    return CT_OK;                                                                             \
  }

GATHER_GRAD(f32, float)
GATHER_GRAD(f64, double)

/* ---- split ----------------------------------------------------------------------------------- */

static ct_status split_any(const ct_kernel_ctx *c) {
  int64_t len[64];
  ct__ix_split_plan p;
  ct_status s = ct__ix_split_plan_make(c, len, 64, &p);
  if (s != CT_OK) return s;
  const ct_tensor *xt = ct_kernel_in(c, CT__IX_SPLIT_X, 0);
  size_t es = ct_dtype_size(xt->dtype);
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < p.axis; k++) outer *= xt->dims.d[k];
  for (int k = p.axis + 1; k < xt->dims.rank; k++) inner *= xt->dims.d[k];
  const char *x = ct__k_in_data(xt);
  int64_t d = xt->dims.d[p.axis], at = 0;
  for (size_t i = 0; i < p.n; i++) {
    char *o = ct__k_out_data(c, CT__OUT, i, xt->dtype);
    if (o == NULL) return ct_last_status();
    size_t blk = (size_t)(len[i] * inner) * es;
    for (int64_t a = 0; a < outer && blk > 0; a++) {
      memcpy(o + (size_t)a * blk, x + (size_t)((a * d + at) * inner) * es, blk);
    }
    at += len[i];
  }
  return CT_OK;
}

/* ---- constant_of_shape, range ---------------------------------------------------------------- */

static ct_status cos_any(const ct_kernel_ctx *c) {
  ct_tensor *ot = ct_kernel_out(c, CT__OUT, 0);
  void *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (o == NULL) return ct_last_status();
  double v = c->attr[CT__IX_COS_VALUE].u.f;
  ct_status s = ct__fill_check(c, v);
  if (s != CT_OK) return s;
  size_t es = ct_dtype_size(c->dtype);
  if (ot->numel > 0) ct__ix_store(o, c->dtype, 0, v);
  /* the first element over the rest in runs that double (an element at a time was a call of
   * memcpy each: 1 us for an LSTM's [1, 8, 32] zero state) */
  const size_t total = (size_t)ot->numel * es;
  for (size_t have = es; have < total; have *= 2) {
    memcpy((char *)o + have, o, have < total - have ? have : total - have);
  }
  return CT_OK;
}

#define RANGE(SUF, T, INT)                                                        \
  static ct_status range_##SUF(const ct_kernel_ctx *c) {                          \
    double v[3];                                                                  \
    int64_t iv[3], n;                                                             \
    ct_status s = ct__ix_range_count(c, &n);                                      \
    if (s == CT_OK) s = ct__ix_range_args(c, v, iv);                              \
    if (s != CT_OK) return s;                                                     \
    T *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);                               \
    if (o == NULL) return ct_last_status();                                       \
    for (int64_t i = 0; i < n; i++) {                                             \
      o[i] = INT ? (T)(iv[0] + i * iv[2]) : (T)(v[0] + (double)i * v[2]);         \
    }                                                                             \
    return CT_OK;                                                                 \
  }

RANGE(i16, int16_t, 1)
RANGE(i32, int32_t, 1)
RANGE(i64, int64_t, 1)
RANGE(f32, float, 0)
RANGE(f64, double, 0)

/* ---- The table ------------------------------------------------------------------------------- */

#define TYPED4(n, any)                                                                 \
  CT__KERNELS([0] = any, [CT_INT32] = ct__ix_k_##n##_i32, [CT_INT64] = ct__ix_k_##n##_i64, \
              [CT_FLOAT32] = ct__ix_k_##n##_f32, [CT_FLOAT64] = ct__ix_k_##n##_f64)

#define ANY(fn) CT__KERNELS([0] = fn)
static const ct__kernel_set sets[] = {
    {"shape", ANY(ct__ix_shape_kernel)},
    {"size", ANY(ct__ix_size_kernel)},
    {"expand", ANY(expand_any)},
    {"tile", ANY(tile_any)},
    {"strided_slice", ANY(slice_any)},
    {"pad", ANY(pad_any)},
    {"gather", ANY(gather_any)},
    {"split", ANY(split_any)},
    {"constant_of_shape", ANY(cos_any)},
    {"range", CT__KERNELS([CT_INT16] = range_i16, [CT_INT32] = range_i32, [CT_INT64] = range_i64,
                          [CT_FLOAT32] = range_f32, [CT_FLOAT64] = range_f64)},
    {"expand_grad", CT__KERNELS_F32_F64(expand_grad)},
    {"tile_grad", CT__KERNELS_F32_F64(tile_grad)},
    {"strided_slice_grad", CT__KERNELS_F32_F64(slice_grad)},
    {"pad_grad", CT__KERNELS_F32_F64(pad_grad)},
    {"gather_grad", CT__KERNELS_F32_F64(gather_grad)},
    {"tril_triu", ANY(ct__ix_k_tri)},
    {"cumsum", TYPED4(cumsum, NULL)},
    {"take_along_axis", ANY(ct__ix_k_tal)},
    {"put_along_axis", TYPED4(pal, ct__ix_k_pal_any)},
    {"gather_nd", ANY(ct__ix_k_gnd)},
    {"scatter_nd", TYPED4(snd, ct__ix_k_snd_any)},
    {"one_hot", ANY(ct__ix_k_oh)},
    {"depth_to_space", ANY(ct__ix_k_d2s)},
    {"space_to_depth", ANY(ct__ix_k_s2d)},
    {"eye_like", ANY(ct__ix_k_eye)},
    {"where_index", ANY(ct__ix_k_where)},
    {"compress", ANY(ct__ix_k_compress)},
    {"reverse_sequence", ANY(ct__ix_k_rs)},
    {"top_k_v2", TYPED4(topk, NULL)},
};

const ct__kernel_table ct__cpu_index = CT__TABLE(sets);
