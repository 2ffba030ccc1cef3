/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/rules_pool.c: the rules of ONNX's windowed and channel layers: MaxPool and AveragePool
 * (1 to 3 spatial dims), MaxUnpool, LRN, InstanceNormalization and MeanVarianceNormalization.
 *
 * MaxPool and AveragePool become pool2d (ops/defs/conv.c: it has a CUDA kernel) where pool2d
 * computes exactly ONNX's values: 2 spatial dims, no Indices output, dilations 1, padding
 * NOTSET, VALID or SAME_UPPER (ceil_mode only with NOTSET), pads smaller than the window, and
 * under ceil_mode no window that could start in the end padding (stride <= kernel - pad end)
 * nor count_include_pad (pool2d divides such windows by the whole kernel). Everything else
 * becomes pool_nd, whose pads are ONNX's (begins..., ends...). MeanVarianceNormalization
 * follows ONNX's function body op for op (reduce_mean, elementwise ops, sqrt, scale), so its
 * gradient comes with them. */
#include <string.h>

#include "onnx/onnx_rules.h"

/* The window attributes of a pooling node with k spatial dims: ints attribute name absent or of
 * `per` k values. */
static ct_status list_of(ox_cx *c, const char *name, size_t k, size_t per, const int64_t **v,
                         size_t *n) {
  *v = NULL;
  *n = 0;
  if (!ox_ints(c, name, v, n)) return CT_OK;
  if (*n != k * per) {
    return ox_unsupported(c, "%s of %zu values for a %zu-D window (give %zu)", name, *n, k,
                          k * per);
  }
  return CT_OK;
}

/* Whether pool2d computes this node's values exactly (see the file's comment). */
static bool pool2d_exact(size_t nk, const int64_t *ks, const int64_t *st, const int64_t *pads,
                         const int64_t *dil, const char *auto_pad, bool ceil, bool avg_incl,
                         bool indices) {
  if (nk != 2 || indices || strcmp(auto_pad, "SAME_LOWER") == 0) return false;
  bool notset = strcmp(auto_pad, "NOTSET") == 0 || auto_pad[0] == '\0';
  if (ceil && (!notset || avg_incl)) return false;
  for (size_t i = 0; i < 2; i++) {
    if (dil != NULL && dil[i] != 1) return false;
    int64_t s = st != NULL ? st[i] : 1, pb = pads != NULL ? pads[i] : 0;
    int64_t pe = pads != NULL ? pads[2 + i] : 0;
    if (notset && (pb >= ks[i] || pe >= ks[i])) return false;
    if (ceil && s > ks[i] - pe) return false;
  }
  return true;
}

/* pool2d from the node (its rule of before, onnx/rules_nn.c's geometry: pads as (top, bottom,
 * left, right), SAME_UPPER as SAME). */
static ct_status as_pool2d(ox_cx *c, ct_op *op, const int64_t *ks, const int64_t *st,
                           const int64_t *pads, const char *auto_pad, bool ceil, bool excl) {
  static const int64_t ones[2] = {1, 1};
  int64_t p4[4] = {0, 0, 0, 0};
  if (pads != NULL) p4[0] = pads[0], p4[1] = pads[2], p4[2] = pads[1], p4[3] = pads[3];
  const char *algo = strcmp(auto_pad, "VALID") == 0        ? "VALID"
                     : strcmp(auto_pad, "SAME_UPPER") == 0 ? "SAME"
                                                           : "EXPLICIT";
  (void)c;
  ct_status s = ct_op_set_attr_ints(op, "ksize", ks, 2);
  if (s == CT_OK) s = ct_op_set_attr_ints(op, "strides", st != NULL ? st : ones, 2);
  if (s == CT_OK) s = ct_op_set_attr_ints(op, "paddings", p4, 4);
  if (s == CT_OK) s = ct_op_set_attr_string(op, "padding_algorithm", algo);
  if (s == CT_OK) s = ct_op_set_attr_bool(op, "ceil_mode", ceil);
  if (s == CT_OK) s = ct_op_set_attr_bool(op, "exclusive", excl);
  return s;
}

static ct_status pool(ox_cx *c, bool max) {
  const char *x = ox_in(c, 0), *y = ox_out(c, 0), *ind = max ? ox_out(c, 1) : NULL;
  if (x == NULL || y == NULL) return ox_unsupported(c, "X or Y is missing");
  const int64_t *ks, *st, *pads, *dil;
  size_t nk, n;
  if (!ox_ints(c, "kernel_shape", &ks, &nk) || nk < 1 || nk > 3) {
    return ox_unsupported(c, "kernel_shape of %zu values (corten pools 1 to 3 spatial dims)",
                          ox_ints(c, "kernel_shape", &ks, &nk) ? nk : (size_t)0);
  }
  ct_status s = list_of(c, "strides", nk, 1, &st, &n);
  if (s == CT_OK) s = list_of(c, "pads", nk, 2, &pads, &n);
  if (s == CT_OK) s = list_of(c, "dilations", nk, 1, &dil, &n);
  const char *auto_pad = ox_string(c, "auto_pad", "NOTSET");
  if (s != CT_OK) return s;
  if (auto_pad == NULL) return ct_last_status();
  const char *algo = auto_pad[0] == '\0' || strcmp(auto_pad, "NOTSET") == 0 ? "EXPLICIT" : auto_pad;
  if (strcmp(algo, "EXPLICIT") != 0 && strcmp(algo, "VALID") != 0 &&
      strcmp(algo, "SAME_UPPER") != 0 && strcmp(algo, "SAME_LOWER") != 0) {
    return ox_unsupported(c, "auto_pad '%s'", auto_pad);
  }
  bool ceil = ox_int(c, "ceil_mode", 0) != 0;
  bool incl = !max && ox_int(c, "count_include_pad", 0) != 0;
  int64_t order = max ? ox_int(c, "storage_order", 0) : 0;
  if (order != 0 && order != 1) return ox_unsupported(c, "storage_order %lld", (long long)order);
  bool p2 = pool2d_exact(nk, ks, st, pads, dil, auto_pad, ceil, incl, ind != NULL);
  ct_op *op = ox_op(c, p2 ? "pool2d" : "pool_nd");
  if (op == NULL) return ct_last_status();
  s = ct_op_set_attr_string(op, "pooling_type", max ? "max" : "avg");
  if (s == CT_OK && p2) s = as_pool2d(c, op, ks, st, pads, auto_pad, ceil, !incl);
  if (s == CT_OK && !p2) {
    s = ct_op_set_attr_ints(op, "ksize", ks, nk);
    if (s == CT_OK && st != NULL) s = ct_op_set_attr_ints(op, "strides", st, nk);
    if (s == CT_OK && pads != NULL && strcmp(algo, "EXPLICIT") == 0) {
      s = ct_op_set_attr_ints(op, "paddings", pads, 2 * nk);
    }
    if (s == CT_OK && dil != NULL) s = ct_op_set_attr_ints(op, "dilations", dil, nk);
    if (s == CT_OK) s = ct_op_set_attr_string(op, "padding_algorithm", algo);
    if (s == CT_OK) s = ct_op_set_attr_bool(op, "ceil_mode", ceil);
    if (s == CT_OK) s = ct_op_set_attr_bool(op, "exclusive", !incl);
    if (s == CT_OK) s = ct_op_set_attr_int(op, "storage_order", order);
    if (s == CT_OK && ind != NULL) s = ct_op_set_output(op, "Indices", ind);
  }
  if (s == CT_OK) s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", y);
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status max_pool(ox_cx *c) { return pool(c, true); }
static ct_status avg_pool(ox_cx *c) { return pool(c, false); }

/* MaxUnpool (9, 11): max_unpool; output_shape as the attribute when constant, else wired. */
static ct_status max_unpool(ox_cx *c) {
  const char *x = ox_in(c, 0), *ind = ox_in(c, 1), *shape = ox_in(c, 2), *y = ox_out(c, 0);
  if (x == NULL || ind == NULL || y == NULL) return ox_unsupported(c, "X, I or Y is missing");
  const int64_t *ks, *st, *pads, *v;
  size_t nk, n;
  if (!ox_ints(c, "kernel_shape", &ks, &nk) || nk < 1 || nk > 3) {
    return ox_unsupported(c, "kernel_shape of other than 1 to 3 values");
  }
  ct_status s = list_of(c, "strides", nk, 1, &st, &n);
  if (s == CT_OK) s = list_of(c, "pads", nk, 2, &pads, &n);
  if (s != CT_OK) return s;
  for (size_t i = 0; shape != NULL && pads != NULL && i < 2 * nk; i++) {
    if (pads[i] != 0) { /* ONNX's reference first kept the pads, later dropped them */
      return ox_unsupported(c, "output_shape together with nonzero pads (ambiguous across ONNX "
                               "versions)");
    }
  }
  ct_op *op = ox_op(c, "max_unpool");
  if (op == NULL) return ct_last_status();
  s = ct_op_set_attr_ints(op, "ksize", ks, nk);
  if (s == CT_OK && st != NULL) s = ct_op_set_attr_ints(op, "strides", st, nk);
  if (s == CT_OK && pads != NULL) s = ct_op_set_attr_ints(op, "paddings", pads, 2 * nk);
  if (s == CT_OK && shape != NULL) {
    if (ox_const_ints(c, 2, &v, &n)) s = ct_op_set_attr_ints(op, "output_shape", v, n);
    else s = ct_op_set_input(op, "OutputShape", shape);
  }
  if (s == CT_OK) s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_input(op, "Indices", ind);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", y);
  return s == CT_OK ? ox_push(c, op) : s;
}

/* LRN (1, 13): lrn; size is required. */
static ct_status lrn(ox_cx *c) {
  const char *x = ox_in(c, 0), *y = ox_out(c, 0);
  if (x == NULL || y == NULL) return ox_unsupported(c, "X or Y is missing");
  if (ox_attr_get(c, "size") == NULL) return ox_unsupported(c, "no attribute size (required)");
  ct_op *op = ox_op(c, "lrn");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_attr_int(op, "size", ox_int(c, "size", 1));
  if (s == CT_OK) s = ct_op_set_attr_float(op, "alpha", ox_float(c, "alpha", 1e-4));
  if (s == CT_OK) s = ct_op_set_attr_float(op, "beta", ox_float(c, "beta", 0.75));
  if (s == CT_OK) s = ct_op_set_attr_float(op, "bias", ox_float(c, "bias", 1.0));
  if (s == CT_OK) s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", y);
  return s == CT_OK ? ox_push(c, op) : s;
}

/* InstanceNormalization (1, 6): instance_norm. */
static ct_status instance_norm(ox_cx *c) {
  const char *x = ox_in(c, 0), *sc = ox_in(c, 1), *b = ox_in(c, 2), *y = ox_out(c, 0);
  if (x == NULL || sc == NULL || b == NULL || y == NULL) {
    return ox_unsupported(c, "input, scale, B or output is missing");
  }
  ct_op *op = ox_op(c, "instance_norm");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_attr_float(op, "epsilon", ox_float(c, "epsilon", 1e-5));
  if (s == CT_OK) s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_input(op, "Scale", sc);
  if (s == CT_OK) s = ct_op_set_input(op, "Bias", b);
  if (s == CT_OK) s = ct_op_set_output(op, "Y", y);
  return s == CT_OK ? ox_push(c, op) : s;
}

/* An op of `type` reading a (X) and b (Y, when not NULL) into out, attributes none. */
static ct_status op2(ox_cx *c, const char *type, const char *a, const char *b, const char *out) {
  ct_op *op = ox_op(c, type);
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", a);
  if (s == CT_OK && b != NULL) s = ct_op_set_input(op, "Y", b);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", out);
  return s == CT_OK ? ox_push(c, op) : s;
}

/* reduce_mean of a over axes (n of them), dims kept, into out. */
static ct_status mean_of(ox_cx *c, const char *a, const int64_t *axes, size_t n, const char *out) {
  ct_op *op = ox_op(c, "reduce_mean");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", a);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", out);
  if (s == CT_OK) s = ct_op_set_attr_ints(op, "dim", axes, n);
  if (s == CT_OK) s = ct_op_set_attr_bool(op, "keep_dim", true);
  return s == CT_OK ? ox_push(c, op) : s;
}

/* MeanVarianceNormalization (9, 13), ONNX's function body: mean m = ReduceMean(X) over axes
 * (default 0, 2, 3), variance E[X^2] - m^2, Y = (X - m) / (sqrt(variance) + 1e-9). */
static ct_status mvn(ox_cx *c) {
  const char *x = ox_in(c, 0), *y = ox_out(c, 0);
  if (x == NULL || y == NULL) return ox_unsupported(c, "X or Y is missing");
  static const int64_t dflt[3] = {0, 2, 3};
  const int64_t *axes = dflt;
  size_t n = 3;
  if (ox_ints(c, "axes", &axes, &n) && n == 0) {
    return ox_unsupported(c, "an empty axes list");
  }
  const char *m = ox_tmp(c), *x2 = ox_tmp(c), *m2 = ox_tmp(c), *mm = ox_tmp(c), *var = ox_tmp(c),
             *sd = ox_tmp(c), *sde = ox_tmp(c), *d = ox_tmp(c);
  if (m == NULL || x2 == NULL || m2 == NULL || mm == NULL || var == NULL || sd == NULL ||
      sde == NULL || d == NULL) {
    return ct_last_status();
  }
  ct_status s = mean_of(c, x, axes, n, m);
  if (s == CT_OK) s = op2(c, "elementwise_mul", x, x, x2);
  if (s == CT_OK) s = mean_of(c, x2, axes, n, m2);
  if (s == CT_OK) s = op2(c, "elementwise_mul", m, m, mm);
  if (s == CT_OK) s = op2(c, "elementwise_sub", m2, mm, var);
  if (s == CT_OK) s = op2(c, "sqrt", var, NULL, sd);
  ct_op *eps = s == CT_OK ? ox_op(c, "scale") : NULL;
  if (eps == NULL) return s != CT_OK ? s : ct_last_status();
  s = ct_op_set_attr_float(eps, "bias", 1e-9);
  if (s == CT_OK) s = ct_op_set_input(eps, "X", sd);
  if (s == CT_OK) s = ct_op_set_output(eps, "Out", sde);
  if (s == CT_OK) s = ox_push(c, eps);
  if (s == CT_OK) s = op2(c, "elementwise_sub", x, m, d);
  return s == CT_OK ? op2(c, "elementwise_div", d, sde, y) : s;
}

static const ox_rule rows[] = {
    {"MaxPool", 1, max_pool, "pool2d, pool_nd"},
    {"AveragePool", 1, avg_pool, "pool2d, pool_nd"},
    {"MaxUnpool", 9, max_unpool, "max_unpool"},
    {"LRN", 1, lrn, "lrn"},
    {"InstanceNormalization", 1, instance_norm, "instance_norm"},
    {"MeanVarianceNormalization", 9, mvn,
     "reduce_mean, elementwise_mul, elementwise_sub, sqrt, scale, elementwise_div"},
};

const ox_rules ox_rules_pool = {rows, sizeof rows / sizeof rows[0]};
