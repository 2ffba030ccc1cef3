/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/nn.c: the CPU kernels of gelu, lookup_table_v2, dropout, arg_max and the gradients
 * of the first three (ops/defs/nn.c, nn_grad.c): float32 and float64 (lookup_table_v2 moves
 * rows of any dtype; arg_max also reads int32 and int64).
 *
 * gelu and its gradient are computed in double (ops/gelu.h) and rounded once.
 * lookup_table_v2_grad adds the rows in Ids' order in the dtype's arithmetic. dropout's mask comes
 * from Philox (ops/philox.h), so it depends only on the seed and the element's index. */
#include <math.h>
#include <string.h>

#include "ops/defs.h"
#include "ops/gelu.h"
#include "ops/philox.h"

/* ---- gelu ------------------------------------------------------------------------------------ */

#define GELU_KERNELS(SUF, T)                                                      \
  static ct_status gelu_##SUF(const ct_kernel_ctx *c) {                           \
    const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);                           \
    T *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);                               \
    if (o == NULL) return ct_last_status();                                       \
    const T *x = ct__k_in_data(xt);                                               \
    bool a = c->attr[CT__GELU_APPROXIMATE].u.b;                                   \
    for (int64_t i = 0; i < xt->numel; i++) o[i] = (T)ct__gelu((double)x[i], a);  \
    return CT_OK;                                                                 \
  }                                                                               \
  static ct_status gelu_grad_##SUF(const ct_kernel_ctx *c) {                      \
    const ct_tensor *xt = ct_kernel_in(c, CT__G_UNARY_IN, 0);                     \
    T *dx = ct__k_out_data(c, CT__G_DX, 0, c->dtype);                             \
    if (dx == NULL) return ct_last_status();                                      \
    const T *x = ct__k_in_data(xt);                                               \
    const T *g = ct__k_in_data(ct_kernel_in(c, CT__G_UNARY_DOUT, 0));             \
    bool a = c->attr[CT__GELU_APPROXIMATE].u.b;                                   \
    for (int64_t i = 0; i < xt->numel; i++) {                                     \
      dx[i] = (T)((double)g[i] * ct__gelu_slope((double)x[i], a));                \
    }                                                                             \
    return CT_OK;                                                                 \
  }

GELU_KERNELS(f32, float)
GELU_KERNELS(f64, double)

/* ---- lookup_table_v2 ------------------------------------------------------------------------- */

/* Any dtype: rows copied bytewise, zeros for padding_idx. */
static ct_status lookup(const ct_kernel_ctx *c) {
  const ct_tensor *w = ct_kernel_in(c, CT__LT_W, 0), *it = ct_kernel_in(c, CT__LT_IDS, 0);
  const int64_t *ids = ct__k_in_data(it);
  int64_t rows = w->dims.d[0], pad = c->attr[CT__LT_PADDING_IDX].u.i;
  ct_status s = ct__lt_check_ids(c, CT__LT_IDS, ids, it->numel, rows);
  if (s != CT_OK) return s;
  char *o = ct__k_out_data(c, CT__OUT, 0, w->dtype);
  if (o == NULL) return ct_last_status();
  size_t row = (size_t)w->dims.d[1] * ct_dtype_size(w->dtype);
  const char *wd = ct__k_in_data(w);
  for (int64_t i = 0; i < it->numel; i++) {
    if (ids[i] == pad) {
      memset(o + (size_t)i * row, 0, row);
    } else {
      memcpy(o + (size_t)i * row, wd + (size_t)ids[i] * row, row);
    }
  }
  return CT_OK;
}

#define LOOKUP_GRAD_KERNEL(NAME, T)                                                   \
  static ct_status NAME(const ct_kernel_ctx *c) {                                     \
    const ct_tensor *w = ct_kernel_in(c, CT__LT_W, 0);                                \
    const ct_tensor *it = ct_kernel_in(c, CT__LT_IDS, 0);                             \
    const int64_t *ids = ct__k_in_data(it);                                           \
    int64_t rows = w->dims.d[0], d = w->dims.d[1];                                    \
    int64_t pad = c->attr[CT__LT_PADDING_IDX].u.i;                                    \
    ct_status s = ct__lt_check_ids(c, CT__LT_IDS, ids, it->numel, rows);              \
    if (s != CT_OK) return s;                                                         \
    T *dw = ct__k_out_data(c, 0, 0, c->dtype);                                        \
    if (dw == NULL) return ct_last_status();                                          \
    const T *g = ct__k_in_data(ct_kernel_in(c, CT__LTG_DOUT, 0));                     \
    for (int64_t i = 0; i < rows * d; i++) dw[i] = 0;                                 \
    for (int64_t i = 0; i < it->numel; i++) {                                         \
      if (ids[i] == pad) continue;                                                    \
      T *dr = dw + ids[i] * d;                                                        \
      const T *gr = g + i * d;                                                        \
      for (int64_t j = 0; j < d; j++) dr[j] += gr[j];                                 \
    }                                                                                 \
    return CT_OK;                                                                     \
  }

LOOKUP_GRAD_KERNEL(lookup_grad_f32, float)
LOOKUP_GRAD_KERNEL(lookup_grad_f64, double)

/* ---- dropout --------------------------------------------------------------------------------- */

#define DROPOUT_KERNELS(SUF, T)                                                        \
  static ct_status dropout_##SUF(const ct_kernel_ctx *c) {                             \
    const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);                                \
    T *o = ct__k_out_data(c, CT__DO_OUT, 0, c->dtype);                                 \
    if (o == NULL) return ct_last_status();                                            \
    uint8_t *m = ct__k_out_data(c, CT__DO_MASK, 0, CT_UINT8);                          \
    if (m == NULL) return ct_last_status();                                            \
    const T *x = ct__k_in_data(xt);                                                    \
    T f = (T)ct__dropout_factor(c);                                                        \
    int64_t n = xt->numel;                                                             \
    if (c->attr[CT__DO_IS_TEST].u.b) {                                                 \
      for (int64_t i = 0; i < n; i++) {                                                \
        m[i] = 1;                                                                      \
        o[i] = x[i] * f;                                                               \
      }                                                                                \
      return CT_OK;                                                                    \
    }                                                                                  \
    uint64_t seed = ct__dropout_seed(c);                                               \
    double p = c->attr[CT__DO_PROB].u.f;                                               \
    for (int64_t b = 0; b * 4 < n; b++) {                                              \
      ct__philox_block r = ct__philox((uint64_t)b, seed);                              \
      for (int64_t i = b * 4; i < n && i < b * 4 + 4; i++) {                           \
        m[i] = ct__dropout_keep_word(r.w[i - b * 4], p);                               \
        o[i] = m[i] ? x[i] * f : (T)0;                                                 \
      }                                                                                \
    }                                                                                  \
    return CT_OK;                                                                      \
  }                                                                                    \
  static ct_status dropout_grad_##SUF(const ct_kernel_ctx *c) {                        \
    const ct_tensor *mt = ct_kernel_in(c, CT__DOG_MASK, 0);                            \
    T *dx = ct__k_out_data(c, 0, 0, c->dtype);                                         \
    if (dx == NULL) return ct_last_status();                                           \
    const T *g = ct__k_in_data(ct_kernel_in(c, CT__DOG_DOUT, 0));                      \
    const uint8_t *m = ct__k_in_data(mt);                                              \
    T f = (T)ct__dropout_factor(c);                                                        \
    for (int64_t i = 0; i < mt->numel; i++) dx[i] = m[i] ? g[i] * f : (T)0;            \
    return CT_OK;                                                                      \
  }

DROPOUT_KERNELS(f32, float)
DROPOUT_KERNELS(f64, double)

/* ---- arg_max --------------------------------------------------------------------------------- */

#define ARG_MAX_KERNEL(NAME, T)                                                      \
  static ct_status NAME(const ct_kernel_ctx *c) {                                    \
    ct__norm_plan p;                                                                 \
    ct_status s = ct__am_plan(c, &p);                                                \
    if (s != CT_OK) return s;                                                        \
    ct_dtype dt = (ct_dtype)c->attr[CT__AM_DTYPE].u.i;                               \
    void *o = ct__k_out_data(c, CT__OUT, 0, dt);                                     \
    if (o == NULL) return ct_last_status();                                          \
    const T *x = ct__k_in_data(ct_kernel_in(c, CT__IN_X, 0));                        \
    for (int64_t a = 0; a < p.outer; a++) {                                          \
      for (int64_t b = 0; b < p.inner; b++) {                                        \
        const T *xr = x + a * p.c * p.inner + b;                                     \
        T best = xr[0];                                                              \
        int64_t at = 0;                                                              \
        for (int64_t k = 1; k < p.c; k++) {                                          \
          T v = xr[k * p.inner];                                                     \
          if (v > best || (v != v && best == best)) {                                \
            best = v;                                                                \
            at = k;                                                                  \
          }                                                                          \
        }                                                                            \
        if (dt == CT_INT64) {                                                        \
          ((int64_t *)o)[a * p.inner + b] = at;                                      \
        } else {                                                                     \
          ((int32_t *)o)[a * p.inner + b] = (int32_t)at;                             \
        }                                                                            \
      }                                                                              \
    }                                                                                \
    return CT_OK;                                                                    \
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
