/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/reduce_ext.c: the CPU kernels of the reduce_ext family's reductions and their
 * gradients (ops/defs/reduce_ext.c, reduce_ext_grad.c), and the family's one kernel table (the
 * kernels of ops/cpu/reduce_ext_rows.c come through ops/cpu/reduce_ext_kernels.h).
 *
 * One loop serves every dtype: floats are read into double (float16 exactly), accumulated in
 * double in X's element order and rounded once into Out; integers are accumulated in int64 with
 * wrapping (as numpy does in the dtype) and stored back wrapping. The walk visits X in memory
 * order, keeping the offset of the Out element each X element belongs to. */
#include <math.h>
#include <stdlib.h>

#include "common/alloc.h"
#include "ops/cpu/reduce_ext_kernels.h"

/* Steps the walk over X (dims p->x) to the next element: idx its index, *off its Out offset. */
static inline void rx_step(const ct__rx_plan *p, int64_t idx[], int64_t *off) {
  for (int k = p->x.rank - 1; k >= 0; k--) {
    *off += p->ostride[k];
    if (++idx[k] < p->x.d[k]) return;
    *off -= p->ostride[k] * p->x.d[k];
    idx[k] = 0;
  }
}

static int64_t numel_of(ct_ddim d) {
  int64_t n = 1;
  for (int k = 0; k < d.rank; k++) n *= d.d[k];
  return n;
}

/* The float reductions into acc (n_out doubles); m holds each group's max for log_sum_exp. */
static void rx_float(const ct__rx_plan *p, ct__rx_kind kind, const void *x, ct_dtype dt,
                     int64_t nx, double *acc, double *m, int64_t n_out) {
  double init = kind == CT__RX_PROD ? 1 : kind == CT__RX_MAX ? -INFINITY
                : kind == CT__RX_MIN ? INFINITY : 0;
  for (int64_t o = 0; o < n_out; o++) acc[o] = init;
  int64_t idx[CT_MAX_RANK] = {0}, off = 0;
  if (kind == CT__RX_LOG_SUM_EXP) {
    for (int64_t o = 0; o < n_out; o++) m[o] = -INFINITY;
    for (int64_t i = 0; i < nx; i++, rx_step(p, idx, &off)) {
      double v = ct__rx_get(x, dt, i);
      if (v > m[off] || isnan(v)) m[off] = isnan(m[off]) ? m[off] : v;
    }
    off = 0;
    for (int k = 0; k < CT_MAX_RANK; k++) idx[k] = 0;
  }
  for (int64_t i = 0; i < nx; i++, rx_step(p, idx, &off)) {
    double v = ct__rx_get(x, dt, i), *a = &acc[off];
    switch (kind) {
      case CT__RX_MAX:
        if (v > *a || isnan(v)) *a = isnan(*a) ? *a : v;
        break;
      case CT__RX_MIN:
        if (v < *a || isnan(v)) *a = isnan(*a) ? *a : v;
        break;
      case CT__RX_PROD: *a *= v; break;
      case CT__RX_L1: *a += fabs(v); break;
      case CT__RX_L2:
      case CT__RX_SUM_SQUARE: *a += v * v; break;
      case CT__RX_LOG_SUM_EXP: *a += isinf(m[off]) ? 0 : exp(v - m[off]); break;
      default: *a += v; break;
    }
  }
  for (int64_t o = 0; o < n_out; o++) {
    switch (kind) {
      case CT__RX_MEAN: acc[o] /= (double)p->group; break;
      case CT__RX_L2: acc[o] = sqrt(acc[o]); break;
      case CT__RX_LOG_SUM: acc[o] = log(acc[o]); break;
      case CT__RX_LOG_SUM_EXP:
        /* A group of -inf (or none) gives -inf, one holding +inf gives +inf, NaN stays. */
        acc[o] = isinf(m[o]) || isnan(m[o]) ? m[o] : m[o] + log(acc[o]);
        break;
      default: break;
    }
  }
}

/* The integer reductions (sum, max, min, prod, l1, sum_square), wrapping in uint64. */
static void rx_int(const ct__rx_plan *p, ct__rx_kind kind, const void *x, ct_dtype dt, int64_t nx,
                   int64_t *acc, int64_t n_out) {
  int64_t init = kind == CT__RX_PROD ? 1 : kind == CT__RX_MAX ? INT64_MIN
                 : kind == CT__RX_MIN ? INT64_MAX : 0;
  for (int64_t o = 0; o < n_out; o++) acc[o] = init;
  int64_t idx[CT_MAX_RANK] = {0}, off = 0;
  for (int64_t i = 0; i < nx; i++, rx_step(p, idx, &off)) {
    int64_t v = ct__rx_geti(x, dt, i), *a = &acc[off];
    uint64_t u = (uint64_t)*a, w = (uint64_t)v;
    switch (kind) {
      case CT__RX_MAX: *a = v > *a ? v : *a; break;
      case CT__RX_MIN: *a = v < *a ? v : *a; break;
      case CT__RX_PROD: *a = (int64_t)(u * w); break;
      case CT__RX_L1: *a = (int64_t)(u + (v < 0 ? 0 - w : w)); break;
      case CT__RX_SUM_SQUARE: *a = (int64_t)(u + w * w); break;
      default: *a = (int64_t)(u + w); break;
    }
  }
}

ct_status ct__rx_kernel(const ct_kernel_ctx *c) {
  ct__rx_plan p;
  ct_status s = ct__rx_make_plan(c, &p);
  if (s != CT_OK) return s;
  ct__rx_kind kind = ct__rx_kind_of(c);
  const ct_tensor *xt = ct_kernel_in(c, CT__RX_X, 0);
  ct_dtype dt = xt->dtype;
  bool fl = ct__rx_is_float(dt);
  int64_t n_out = numel_of(p.out);
  if (!fl && p.group == 0 && n_out > 0 && (kind == CT__RX_MAX || kind == CT__RX_MIN)) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input X variable '%s' has no elements in the reduced dims: the %s of "
                          "no %s is undefined",
                          ct_kernel_in_name(c, CT__RX_X, 0),
                          kind == CT__RX_MAX ? "largest" : "smallest", ct_dtype_name(dt));
  }
  size_t cells = (size_t)(n_out > 0 ? n_out : 1) * (kind == CT__RX_LOG_SUM_EXP ? 2 : 1);
  void *acc = ct__malloc(cells * 8);
  if (acc == NULL) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY, "no host memory for %lld partial results",
                          (long long)n_out);
  }
  void *o = ct__k_out_data(c, CT__OUT, 0, dt);
  if (o == NULL) {
    free(acc);
    return ct_last_status();
  }
  const void *x = ct__k_in_data(xt);
  if (fl) {
    double *a = acc;
    rx_float(&p, kind, x, dt, xt->numel, a, a + n_out, n_out);
    for (int64_t i = 0; i < n_out; i++) ct__rx_set(o, dt, i, a[i]);
  } else {
    int64_t *a = acc;
    rx_int(&p, kind, x, dt, xt->numel, a, n_out);
    for (int64_t i = 0; i < n_out; i++) ct__rx_seti(o, dt, i, a[i]);
  }
  free(acc);
  return CT_OK;
}

/* ---- The gradients ---------------------------------------------------------------------------- */

/* prod's gradient needs each group's count of zeros and product of the other elements. */
static void prod_parts(const ct__rx_plan *p, const void *x, ct_dtype dt, int64_t nx,
                       double *nz_prod, double *zeros, int64_t n_out) {
  for (int64_t o = 0; o < n_out; o++) nz_prod[o] = 1, zeros[o] = 0;
  int64_t idx[CT_MAX_RANK] = {0}, off = 0;
  for (int64_t i = 0; i < nx; i++, rx_step(p, idx, &off)) {
    double v = ct__rx_get(x, dt, i);
    if (v == 0) {
      zeros[off] += 1;
    } else {
      nz_prod[off] *= v;
    }
  }
}

ct_status ct__rx_grad_kernel(const ct_kernel_ctx *c) {
  ct__rx_plan p;
  ct_status s = ct__rx_make_plan(c, &p);
  if (s != CT_OK) return s;
  ct__rx_kind kind = ct__rx_kind_of(c);
  const ct_tensor *xt = ct_kernel_in(c, CT__RXG_X, 0);
  ct_dtype dt = xt->dtype;
  int64_t n_out = numel_of(p.out);
  double *parts = NULL;
  if (kind == CT__RX_PROD) {
    parts = ct__malloc((size_t)(n_out > 0 ? n_out : 1) * 2 * sizeof *parts);
    if (parts == NULL) {
      return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY, "no host memory for %lld partial products",
                            (long long)n_out);
    }
  }
  void *dx = ct__k_out_data(c, 0, 0, dt);
  if (dx == NULL) {
    free(parts);
    return ct_last_status();
  }
  const void *x = ct__k_in_data(xt), *y = ct__k_in_data(ct_kernel_in(c, CT__RXG_OUT, 0)),
             *g = ct__k_in_data(ct_kernel_in(c, CT__RXG_DOUT, 0));
  if (parts != NULL) prod_parts(&p, x, dt, xt->numel, parts, parts + n_out, n_out);
  int64_t idx[CT_MAX_RANK] = {0}, off = 0;
  for (int64_t i = 0; i < xt->numel; i++, rx_step(&p, idx, &off)) {
    double v = ct__rx_get(x, dt, i), yo = ct__rx_get(y, dt, off), go = ct__rx_get(g, dt, off), d;
    switch (kind) {
      case CT__RX_MEAN: d = 1 / (double)p.group; break;
      case CT__RX_MAX:
      case CT__RX_MIN: d = v == yo ? 1 : 0; break;
      case CT__RX_PROD: {
        double z = parts[n_out + off];
        d = z == 0 ? parts[off] / v : z == 1 && v == 0 ? parts[off] : 0;
        break;
      }
      case CT__RX_L1: d = v > 0 ? 1 : v < 0 ? -1 : 0; break;
      case CT__RX_L2: d = yo == 0 ? 0 : v / yo; break;
      case CT__RX_LOG_SUM: d = 1 / exp(yo); break;
      case CT__RX_LOG_SUM_EXP: d = exp(v - yo); break;
      case CT__RX_SUM_SQUARE: d = 2 * v; break;
      default: d = 1; break;
    }
    ct__rx_set(dx, dt, i, go * d);
  }
  free(parts);
  return CT_OK;
}

/* ---- The family's kernel table ------------------------------------------------------------------ */

#define F_ALL(fn) [CT_FLOAT16] = fn, [CT_FLOAT32] = fn, [CT_FLOAT64] = fn
#define I_ALL(fn) [CT_INT32] = fn, [CT_INT64] = fn
#define I_SMALL(fn) [CT_INT8] = fn, [CT_UINT8] = fn, [CT_INT16] = fn
#define RX_F(name) {name, CT__KERNELS(F_ALL(ct__rx_kernel))}
#define RX_FI(name) {name, CT__KERNELS(F_ALL(ct__rx_kernel), I_ALL(ct__rx_kernel))}
#define RX_FII(name) \
  {name, CT__KERNELS(F_ALL(ct__rx_kernel), I_ALL(ct__rx_kernel), I_SMALL(ct__rx_kernel))}
#define RXG(name) {name, CT__KERNELS(F_ALL(ct__rx_grad_kernel))}
#define ALL_NUM(fn) F_ALL(fn), I_ALL(fn), I_SMALL(fn)

static const ct__kernel_set kernels[] = {
    RX_FI("reduce_sum_axes"),
    RX_F("reduce_mean"),
    RX_FII("reduce_max"),
    RX_FII("reduce_min"),
    RX_FI("reduce_prod"),
    RX_FI("reduce_l1"),
    RX_F("reduce_l2"),
    RX_F("reduce_log_sum"),
    RX_F("reduce_log_sum_exp"),
    RX_FI("reduce_sum_square"),
    RXG("reduce_sum_axes_grad"),
    RXG("reduce_mean_grad"),
    RXG("reduce_max_grad"),
    RXG("reduce_min_grad"),
    RXG("reduce_prod_grad"),
    RXG("reduce_l1_grad"),
    RXG("reduce_l2_grad"),
    RXG("reduce_log_sum_grad"),
    RXG("reduce_log_sum_exp_grad"),
    RXG("reduce_sum_square_grad"),
    {"arg_min", CT__KERNELS(ALL_NUM(ct__ax_kernel))},
    {"arg_max_v2", CT__KERNELS(ALL_NUM(ct__ax_kernel))},
    {"log_softmax", CT__KERNELS(F_ALL(ct__sx_kernel))},
    {"softmax_v2", CT__KERNELS(F_ALL(ct__sx_kernel))},
    {"hardmax", CT__KERNELS(F_ALL(ct__sx_kernel))},
    {"log_softmax_grad", CT__KERNELS(F_ALL(ct__sx_grad_kernel))},
    {"softmax_v2_grad", CT__KERNELS(F_ALL(ct__sx_grad_kernel))},
    {"nll_loss", CT__KERNELS(F_ALL(ct__nll_kernel))},
    {"nll_loss_grad", CT__KERNELS(F_ALL(ct__nll_grad_kernel))},
    {"layer_norm_stats", CT__KERNELS(F_ALL(ct__lns_kernel))},
};

const ct__kernel_table ct__cpu_reduce_ext = CT__TABLE(kernels);
