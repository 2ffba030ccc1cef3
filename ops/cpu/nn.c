/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/nn.c: the CPU kernels of gelu, lookup_table_v2, dropout, arg_max and the gradients
 * of the first three (ops/defs/nn.c, nn_grad.c): float32 and float64 (lookup_table_v2 moves
 * rows of any dtype; arg_max also reads int32 and int64).
 *
 * gelu and its gradient are computed in double (ops/gelu.h) and rounded once.
 * lookup_table_v2_grad adds the rows in Ids' order in the dtype's arithmetic. dropout's mask comes
 * from Philox (ops/philox.h), so it depends only on the seed and the element's index.
 *
 * Each kernel splits on corten's pool (ops/cpu/layer_job.h) over elements (gelu, dropout_grad),
 * Philox blocks of 4 elements (dropout), ids (lookup_table_v2), rows of W (its gradient: each
 * piece scans all the ids in order and adds those of its rows) or output positions (arg_max). */
#include <math.h>
#include <string.h>

#include "ops/cpu/layer_job.h"
#include "ops/gelu.h"
#include "ops/philox.h"

/* ---- gelu ------------------------------------------------------------------------------------ */

#define GELU_KERNELS(SUF, T)                                                           \
  static void gelu_range_##SUF(void *arg, int64_t b, int64_t e) {                      \
    const ct__layer_job *j = arg;                                                      \
    T *o = j->out[CT__OUT];                                                            \
    const T *x = j->in[CT__IN_X];                                                      \
    bool a = j->c->attr[CT__GELU_APPROXIMATE].u.b;                                     \
    for (int64_t i = b; i < e; i++) o[i] = (T)ct__gelu((double)x[i], a);               \
  }                                                                                    \
  static void gelu_grad_range_##SUF(void *arg, int64_t b, int64_t e) {                 \
    const ct__layer_job *j = arg;                                                      \
    T *dx = j->out[CT__G_DX];                                                          \
    const T *x = j->in[CT__G_UNARY_IN], *g = j->in[CT__G_UNARY_DOUT];                  \
    bool a = j->c->attr[CT__GELU_APPROXIMATE].u.b;                                     \
    for (int64_t i = b; i < e; i++) {                                                  \
      dx[i] = (T)((double)g[i] * ct__gelu_slope((double)x[i], a));                     \
    }                                                                                  \
  }                                                                                    \
  static ct_status gelu_##SUF(const ct_kernel_ctx *c) {                                \
    ct__layer_job j;                                                                   \
    return ct__layer_run(c, &j, 1, 1, NULL, ct_kernel_in(c, CT__IN_X, 0)->numel,       \
                         CT__GRAIN_MATH, gelu_range_##SUF);                            \
  }                                                                                    \
  static ct_status gelu_grad_##SUF(const ct_kernel_ctx *c) {                           \
    ct__layer_job j;                                                                   \
    return ct__layer_run(c, &j, 2, 1, NULL, ct_kernel_in(c, CT__G_UNARY_IN, 0)->numel, \
                         CT__GRAIN_MATH, gelu_grad_range_##SUF);                       \
  }

GELU_KERNELS(f32, float)
GELU_KERNELS(f64, double)

/* ---- lookup_table_v2 ------------------------------------------------------------------------- */

/* Checks the ids (before any output is written); CT_OK when they are all rows of W. */
static ct_status check_ids(const ct_kernel_ctx *c) {
  const ct_tensor *it = ct_kernel_in(c, CT__LT_IDS, 0);
  return ct__lt_check_ids(c, CT__LT_IDS, ct__k_in_data(it), it->dtype, it->numel,
                          ct_kernel_in(c, CT__LT_W, 0)->dims.d[0]);
}

/* Rows of any dtype, copied bytewise; zeros for padding_idx. */
static void lookup_range(void *arg, int64_t b, int64_t e) {
  const ct__layer_job *j = arg;
  const ct_tensor *w = ct_kernel_in(j->c, CT__LT_W, 0);
  ct_dtype dt = ct_kernel_in(j->c, CT__LT_IDS, 0)->dtype;
  int64_t pad = j->c->attr[CT__LT_PADDING_IDX].u.i;
  size_t row = (size_t)w->dims.d[1] * ct_dtype_size(w->dtype);
  char *o = j->out[CT__OUT];
  const char *wd = j->in[CT__LT_W];
  for (int64_t i = b; i < e; i++) {
    int64_t id = ct__lt_id(j->in[CT__LT_IDS], dt, i);
    if (id == pad) {
      memset(o + (size_t)i * row, 0, row);
    } else {
      memcpy(o + (size_t)i * row, wd + (size_t)id * row, row);
    }
  }
}

static ct_status lookup(const ct_kernel_ctx *c) {
  ct_status s = check_ids(c);
  if (s != CT_OK) return s;
  const ct_tensor *w = ct_kernel_in(c, CT__LT_W, 0);
  ct__layer_job j;
  const ct_dtype dt[1] = {w->dtype};
  int64_t d = w->dims.d[1] > 0 ? w->dims.d[1] : 1;
  return ct__layer_run(c, &j, 2, 1, dt, ct_kernel_in(c, CT__LT_IDS, 0)->numel,
                       CT__GRAIN_MEM / d, lookup_range);
}

/* Items: rows of W. A piece zeroes its rows, then adds, in Ids' order, the rows of Out@GRAD whose
 * id falls among them: each row of W sums its terms in Ids' order whatever the split. */
#define LOOKUP_GRAD_KERNEL(NAME, T)                                              \
  static void NAME##_range(void *arg, int64_t b, int64_t e) {                    \
    const ct__layer_job *j = arg;                                                \
    const ct_tensor *it = ct_kernel_in(j->c, CT__LT_IDS, 0);                     \
    int64_t d = ct_kernel_in(j->c, CT__LT_W, 0)->dims.d[1];                      \
    int64_t pad = j->c->attr[CT__LT_PADDING_IDX].u.i;                            \
    T *dw = j->out[0];                                                           \
    const T *g = j->in[CT__LTG_DOUT];                                            \
    for (int64_t i = b * d; i < e * d; i++) dw[i] = 0;                           \
    for (int64_t i = 0; i < it->numel; i++) {                                    \
      int64_t id = ct__lt_id(j->in[CT__LT_IDS], it->dtype, i);                   \
      if (id == pad || id < b || id >= e) continue;                              \
      T *dr = dw + id * d;                                                       \
      const T *gr = g + i * d;                                                   \
      for (int64_t k = 0; k < d; k++) dr[k] += gr[k];                            \
    }                                                                            \
  }                                                                              \
  static ct_status NAME(const ct_kernel_ctx *c) {                                \
    ct_status s = check_ids(c);                                                  \
    if (s != CT_OK) return s;                                                    \
    const ct_tensor *w = ct_kernel_in(c, CT__LT_W, 0);                           \
    ct__layer_job j;                                                             \
    int64_t per = w->dims.d[1] + ct_kernel_in(c, CT__LT_IDS, 0)->numel / 64 + 1; \
    return ct__layer_run(c, &j, 3, 1, NULL, w->dims.d[0], CT__GRAIN_MEM / per,   \
                         NAME##_range);                                          \
  }

LOOKUP_GRAD_KERNEL(lookup_grad_f32, float)
LOOKUP_GRAD_KERNEL(lookup_grad_f64, double)

/* ---- dropout --------------------------------------------------------------------------------- */

static const ct_dtype do_out_dt[2][2] = {{CT_FLOAT32, CT_UINT8}, {CT_FLOAT64, CT_UINT8}};

/* dropout's items: Philox blocks (elements 4 b .. 4 b + 3); dropout_grad's: elements. */
#define DROPOUT_KERNELS(SUF, T, K)                                                   \
  static void dropout_range_##SUF(void *arg, int64_t b, int64_t e) {                 \
    const ct__layer_job *j = arg;                                                    \
    T *o = j->out[CT__DO_OUT], f = (T)j->f;                                          \
    uint8_t *m = j->out[CT__DO_MASK];                                                \
    const T *x = j->in[CT__DO_X];                                                    \
    int64_t end = e * 4 < j->n ? e * 4 : j->n;                                       \
    if (j->c->attr[CT__DO_IS_TEST].u.b) {                                            \
      for (int64_t i = b * 4; i < end; i++) {                                        \
        m[i] = 1;                                                                    \
        o[i] = x[i] * f;                                                             \
      }                                                                              \
      return;                                                                        \
    }                                                                                \
    double p = j->c->attr[CT__DO_PROB].u.f;                                          \
    for (int64_t blk = b; blk < e; blk++) {                                          \
      ct__philox_block r = ct__philox((uint64_t)blk, j->seed);                       \
      for (int64_t i = blk * 4; i < end && i < blk * 4 + 4; i++) {                   \
        m[i] = ct__dropout_keep_word(r.w[i - blk * 4], p);                           \
        o[i] = m[i] ? x[i] * f : (T)0;                                               \
      }                                                                              \
    }                                                                                \
  }                                                                                  \
  static ct_status dropout_##SUF(const ct_kernel_ctx *c) {                           \
    ct__layer_job j = {.f = ct__dropout_factor(c)};                                  \
    if (!c->attr[CT__DO_IS_TEST].u.b) j.seed = ct__dropout_seed(c);                  \
    int64_t n = ct_kernel_in(c, CT__DO_X, 0)->numel;                                 \
    ct_status s = ct__layer_open(c, &j, 2, 2, do_out_dt[K]);                         \
    if (s != CT_OK) return s;                                                        \
    j.n = n;                                                                         \
    ct__parallel_for((n + 3) / 4, CT__GRAIN_MEM / 16, dropout_range_##SUF, &j);      \
    return CT_OK;                                                                    \
  }                                                                                  \
  static void dropout_grad_range_##SUF(void *arg, int64_t b, int64_t e) {            \
    const ct__layer_job *j = arg;                                                    \
    T *dx = j->out[0], f = (T)j->f;                                                  \
    const T *g = j->in[CT__DOG_DOUT];                                                \
    const uint8_t *m = j->in[CT__DOG_MASK];                                          \
    CT__SIMD for (int64_t i = b; i < e; i++) dx[i] = m[i] ? g[i] * f : (T)0;         \
  }                                                                                  \
  static ct_status dropout_grad_##SUF(const ct_kernel_ctx *c) {                      \
    ct__layer_job j = {.f = ct__dropout_factor(c)};                                  \
    return ct__layer_run(c, &j, 2, 1, NULL, ct_kernel_in(c, CT__DOG_MASK, 0)->numel, \
                         CT__GRAIN_MEM, dropout_grad_range_##SUF);                   \
  }

DROPOUT_KERNELS(f32, float, 0)
DROPOUT_KERNELS(f64, double, 1)

/* ---- arg_max --------------------------------------------------------------------------------- */

/* Items: Out's positions (a, b) of [outer, inner], each the first largest along the axis. */
#define ARG_MAX_KERNEL(NAME, T)                                             \
  static void NAME##_range(void *arg, int64_t b, int64_t e) {               \
    const ct__layer_job *j = arg;                                           \
    const T *x = j->in[CT__IN_X];                                           \
    bool is64 = j->c->attr[CT__AM_DTYPE].u.i == CT_INT64;                   \
    int64_t n = j->p.c, inner = j->p.inner;                                 \
    for (int64_t q = b; q < e; q++) {                                       \
      const T *xr = x + (q / inner) * n * inner + q % inner;                \
      T best = xr[0];                                                       \
      int64_t at = 0;                                                       \
      for (int64_t k = 1; k < n; k++) {                                     \
        T v = xr[k * inner];                                                \
        if (v > best || (v != v && best == best)) {                         \
          best = v;                                                         \
          at = k;                                                           \
        }                                                                   \
      }                                                                     \
      if (is64) {                                                           \
        ((int64_t *)j->out[CT__OUT])[q] = at;                               \
      } else {                                                              \
        ((int32_t *)j->out[CT__OUT])[q] = (int32_t)at;                      \
      }                                                                     \
    }                                                                       \
  }                                                                         \
  static ct_status NAME(const ct_kernel_ctx *c) {                           \
    const ct_dtype dt[1] = {(ct_dtype)c->attr[CT__AM_DTYPE].u.i};           \
    return ct__layer_plan_run(c, ct__am_plan, 'p', 1, 1, dt, NAME##_range); \
  }

ARG_MAX_KERNEL(arg_max_f32, float)
ARG_MAX_KERNEL(arg_max_f64, double)
ARG_MAX_KERNEL(arg_max_i32, int32_t)
ARG_MAX_KERNEL(arg_max_i64, int64_t)

static const ct__kernel_set kernels[] = {
    {"gelu", CT__KERNELS_F32_F64(gelu)},
    {"gelu_grad", CT__KERNELS_F32_F64(gelu_grad)},
    {"lookup_table_v2", CT__KERNELS([0] = lookup)},
    {"lookup_table_v2_grad", CT__KERNELS_F32_F64(lookup_grad)},
    {"dropout", CT__KERNELS_F32_F64(dropout)},
    {"dropout_grad", CT__KERNELS_F32_F64(dropout_grad)},
    {"arg_max", CT__KERNELS([CT_FLOAT32] = arg_max_f32, [CT_FLOAT64] = arg_max_f64,
                            [CT_INT32] = arg_max_i32, [CT_INT64] = arg_max_i64)},
};

const ct__kernel_table ct__cpu_nn = CT__TABLE(kernels);
