/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/reduce_ext_rows.c: the CPU kernels of the reduce_ext family that walk rows along one
 * axis: arg_min and arg_max_v2; log_softmax, softmax_v2, hardmax and the gradients of the first
 * two; nll_loss and its gradient; layer_norm_stats (ops/defs/reduce_ext.c, reduce_ext_loss.c,
 * reduce_ext_norm.c).
 *
 * Floats are read into double (float16 exactly) and each result rounded once; a row's sums run
 * in element order, so results do not depend on anything but the row. */
#include <math.h>

#include "ops/cpu/reduce_ext_kernels.h"

/* ---- arg_min, arg_max_v2 ------------------------------------------------------------------------ */

/* Whether v replaces the best so far b: strictly more extreme, or a NaN over a number (numpy
 * takes the first NaN); with `last` an equal value (or NaN after NaN) also replaces it. */
static inline bool ax_better(double v, double b, bool max, bool last) {
  if (isnan(b)) return last && isnan(v);
  if (isnan(v)) return true;
  return max ? (v > b || (last && v == b)) : (v < b || (last && v == b));
}

static inline bool ax_better_i(int64_t v, int64_t b, bool max, bool last) {
  return max ? (v > b || (last && v == b)) : (v < b || (last && v == b));
}

ct_status ct__ax_kernel(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);
  int r = xt->dims.rank, axis = 0;
  int64_t a = c->attr[CT__AX_AXIS].u.i;
  if (r > 0) axis = (int)(a < 0 ? a + r : a); /* checked by infer-shape */
  int64_t outer = 1, n = 1, inner = 1;
  for (int k = 0; k < r; k++) *(k < axis ? &outer : k == axis ? &n : &inner) *= xt->dims.d[k];
  ct_dtype it = (ct_dtype)c->attr[CT__AX_DTYPE].u.i, dt = xt->dtype;
  void *o = ct__k_out_data(c, CT__OUT, 0, it);
  if (o == NULL) return ct_last_status();
  const void *x = ct__k_in_data(xt);
  bool max = c->op->def->type[4] == 'm' && c->op->def->type[5] == 'a'; /* "arg_max_v2" */
  bool last = c->attr[CT__AX_SELECT_LAST].u.b, fl = ct__rx_is_float(dt);
  for (int64_t p = 0; p < outer; p++) {
    for (int64_t q = 0; q < inner; q++) {
      int64_t base = p * n * inner + q, best = 0;
      for (int64_t k = 1; k < n; k++) {
        int64_t i = base + k * inner, b = base + best * inner;
        bool better = fl ? ax_better(ct__rx_get(x, dt, i), ct__rx_get(x, dt, b), max, last)
                         : ax_better_i(ct__rx_geti(x, dt, i), ct__rx_geti(x, dt, b), max, last);
        if (better) best = k;
      }
      ct__rx_seti(o, it, p * inner + q, best);
    }
  }
  return CT_OK;
}

/* ---- log_softmax, softmax_v2, hardmax ------------------------------------------------------------ */

ct_status ct__sx_kernel(const ct_kernel_ctx *c) {
  ct__norm_plan p;
  ct_status s = ct__sx_plan(c, &p);
  if (s != CT_OK) return s;
  const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);
  ct_dtype dt = xt->dtype;
  void *o = ct__k_out_data(c, CT__OUT, 0, dt);
  if (o == NULL) return ct_last_status();
  const void *x = ct__k_in_data(xt);
  char kind = c->op->def->type[0]; /* 'l'og_softmax, 's'oftmax_v2, 'h'ardmax */
  int64_t n = p.c, in = p.inner;
  for (int64_t a = 0; a < p.outer; a++) {
    for (int64_t b = 0; b < in; b++) {
      int64_t base = a * n * in + b, arg = 0;
      double m = -INFINITY, sum = 0;
      for (int64_t k = 0; k < n; k++) {
        double v = ct__rx_get(x, dt, base + k * in);
        if (v > m || (isnan(v) && !isnan(m))) m = v, arg = k;
      }
      if (kind == 'h') {
        for (int64_t k = 0; k < n; k++) ct__rx_set(o, dt, base + k * in, k == arg ? 1 : 0);
        continue;
      }
      for (int64_t k = 0; k < n; k++) sum += exp(ct__rx_get(x, dt, base + k * in) - m);
      double lse = log(sum);
      for (int64_t k = 0; k < n; k++) {
        double d = ct__rx_get(x, dt, base + k * in) - m;
        ct__rx_set(o, dt, base + k * in, kind == 'l' ? d - lse : exp(d) / sum);
      }
    }
  }
  return CT_OK;
}

ct_status ct__sx_grad_kernel(const ct_kernel_ctx *c) {
  ct__norm_plan p;
  ct_status s = ct__sx_plan(c, &p);
  if (s != CT_OK) return s;
  const ct_tensor *yt = ct_kernel_in(c, CT__SXG_OUT, 0);
  ct_dtype dt = yt->dtype;
  void *dx = ct__k_out_data(c, 0, 0, dt);
  if (dx == NULL) return ct_last_status();
  const void *y = ct__k_in_data(yt), *g = ct__k_in_data(ct_kernel_in(c, CT__SXG_DOUT, 0));
  bool log_sm = c->op->def->type[0] == 'l';
  int64_t n = p.c, in = p.inner;
  for (int64_t a = 0; a < p.outer; a++) {
    for (int64_t b = 0; b < in; b++) {
      int64_t base = a * n * in + b;
      double sum = 0;
      for (int64_t k = 0; k < n; k++) {
        int64_t i = base + k * in;
        sum += log_sm ? ct__rx_get(g, dt, i) : ct__rx_get(g, dt, i) * ct__rx_get(y, dt, i);
      }
      for (int64_t k = 0; k < n; k++) {
        int64_t i = base + k * in;
        double yv = ct__rx_get(y, dt, i), gv = ct__rx_get(g, dt, i);
        ct__rx_set(dx, dt, i, log_sm ? gv - exp(yv) * sum : yv * (gv - sum));
      }
    }
  }
  return CT_OK;
}

/* ---- nll_loss ------------------------------------------------------------------------------------- */

/* The weight of label l (1 without Weight). */
static inline double nll_w(const void *w, ct_dtype dt, int64_t l) {
  return w != NULL ? ct__rx_get(w, dt, l) : 1.0;
}

/* The sum of the weights of the positions not ignored (what "mean" divides by). */
static double nll_total(const ct_kernel_ctx *c, const void *w) {
  const ct_tensor *lt = ct_kernel_in(c, CT__NLL_LABEL, 0);
  const void *l = ct__k_in_data(lt);
  int64_t ign = c->attr[CT__NLL_IGNORE_INDEX].u.i;
  double t = 0;
  for (int64_t i = 0; i < lt->numel; i++) {
    int64_t v = ct__nll_label(l, lt->dtype, i);
    if (v != ign) t += nll_w(w, c->dtype, v);
  }
  return t;
}

ct_status ct__nll_kernel(const ct_kernel_ctx *c) {
  ct__nll_plan p;
  ct_status s = ct__nll_make_plan(c, &p);
  if (s == CT_OK) s = ct__nll_check_labels(c, &p);
  if (s != CT_OK) return s;
  ct_dtype dt = c->dtype;
  void *o = ct__k_out_data(c, CT__OUT, 0, dt);
  if (o == NULL) return ct_last_status();
  const ct_tensor *lt = ct_kernel_in(c, CT__NLL_LABEL, 0);
  const void *x = ct__k_in_data(ct_kernel_in(c, CT__NLL_X, 0)), *l = ct__k_in_data(lt);
  const void *w = ct_kernel_in_count(c, CT__NLL_WEIGHT) > 0
                      ? ct__k_in_data(ct_kernel_in(c, CT__NLL_WEIGHT, 0))
                      : NULL;
  int64_t ign = c->attr[CT__NLL_IGNORE_INDEX].u.i;
  double total = 0;
  for (int64_t i = 0; i < p.n; i++) {
    for (int64_t d = 0; d < p.d; d++) {
      int64_t pos = i * p.d + d, v = ct__nll_label(l, lt->dtype, pos);
      double loss = v == ign ? 0 : -nll_w(w, dt, v) * ct__rx_get(x, dt, (i * p.c + v) * p.d + d);
      if (p.reduction == CT__NLL_NONE) {
        ct__rx_set(o, dt, pos, loss);
      } else {
        total += loss;
      }
    }
  }
  if (p.reduction == CT__NLL_SUM) ct__rx_set(o, dt, 0, total);
  if (p.reduction == CT__NLL_MEAN) ct__rx_set(o, dt, 0, total / nll_total(c, w));
  return CT_OK;
}

ct_status ct__nll_grad_kernel(const ct_kernel_ctx *c) {
  ct__nll_plan p;
  ct_status s = ct__nll_make_plan(c, &p);
  if (s == CT_OK) s = ct__nll_check_labels(c, &p);
  if (s != CT_OK) return s;
  ct_dtype dt = c->dtype;
  const ct_tensor *xt = ct_kernel_in(c, CT__NLL_X, 0), *lt = ct_kernel_in(c, CT__NLL_LABEL, 0);
  void *dx = ct__k_out_data(c, 0, 0, dt);
  if (dx == NULL) return ct_last_status();
  const void *l = ct__k_in_data(lt), *g = ct__k_in_data(ct_kernel_in(c, CT__NLL_DOUT, 0));
  const void *w = ct_kernel_in_count(c, CT__NLL_WEIGHT) > 0
                      ? ct__k_in_data(ct_kernel_in(c, CT__NLL_WEIGHT, 0))
                      : NULL;
  int64_t ign = c->attr[CT__NLL_IGNORE_INDEX].u.i;
  for (int64_t i = 0; i < xt->numel; i++) ct__rx_set(dx, dt, i, 0);
  double scale = p.reduction == CT__NLL_MEAN ? 1 / nll_total(c, w) : 1;
  for (int64_t i = 0; i < p.n; i++) {
    for (int64_t d = 0; d < p.d; d++) {
      int64_t pos = i * p.d + d, v = ct__nll_label(l, lt->dtype, pos);
      if (v == ign) continue;
      double gv = ct__rx_get(g, dt, p.reduction == CT__NLL_NONE ? pos : 0);
      ct__rx_set(dx, dt, (i * p.c + v) * p.d + d, -nll_w(w, dt, v) * gv * scale);
    }
  }
  return CT_OK;
}

/* ---- layer_norm_stats ------------------------------------------------------------------------------ */

ct_status ct__lns_kernel(const ct_kernel_ctx *c) {
  const ct_tensor *mt = ct_kernel_in(c, CT__LNS_MEAN, 0);
  ct_dtype dt = c->dtype;
  void *mo = ct__k_out_data(c, 0, 0, dt), *inv = mo != NULL ? ct__k_out_data(c, 1, 0, dt) : NULL;
  if (inv == NULL) return ct_last_status();
  const void *m = ct__k_in_data(mt), *v = ct__k_in_data(ct_kernel_in(c, CT__LNS_VAR, 0));
  double eps = c->attr[CT__LN_EPSILON].u.f;
  for (int64_t i = 0; i < mt->numel; i++) {
    ct__rx_set(mo, dt, i, ct__rx_get(m, dt, i));
    ct__rx_set(inv, dt, i, ct__inv_std(ct__rx_get(v, dt, i), eps));
  }
  return CT_OK;
}
