/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/rules_train.c: the optimizers of ONNX's training domain (ai.onnx.preview.training, opset
 * 1; onnx/onnx_rules.c lists this family under that domain): Adagrad, Momentum and Adam. Each becomes a chain of corten elementwise ops that follows
 * ONNX's formulas term by term, one chain per optimized tensor, so an update imported from ONNX
 * means what the standard says (corten's own adam and momentum follow PaddlePaddle's rules,
 * which differ: a Beta1Pow input instead of the count T, no regularization terms).
 *
 * The inputs are R (the learning rate, a scalar), T (the update count, an int64 scalar read when
 * the program runs), then the tensors X1..Xn, their gradients G1..Gn and the optimizer's state
 * (H for Adagrad, V for Momentum, V and H for Adam); the outputs are the new X, then the new
 * state, in the same order. T and every constant are cast like R when the program runs, so
 * float32 and float64 models both run. */
#include <stdint.h>
#include <string.h>

#include "onnx/onnx_rules.h"

/* One chain of ops being appended: the first failure stops it and is kept. */
typedef struct chain {
  ox_cx *c;
  ct_status s;
  const char *r; /* input R, whose dtype every value is cast to */
} chain;

static const char *const xy[] = {"X", "Y"}, *const x_like[] = {"X", "Like"};

/* Appends op `type` reading slots[i] = in[i], writing Out = out (a fresh name when NULL), with
 * scale's attributes a and b when type is "scale": that name, or NULL once the chain failed. */
static const char *emit(chain *k, const char *type, const char *const *slots,
                        const char *const *in, size_t n, const char *out, double a, double b) {
  if (k->s != CT_OK) return NULL;
  const char *o = out != NULL ? out : ox_tmp(k->c);
  ct_op *op = o != NULL ? ox_op(k->c, type) : NULL;
  if (op == NULL) {
    k->s = o == NULL ? CT_ERR_OUT_OF_MEMORY : ct_last_status();
    return NULL;
  }
  ct_status s = CT_OK;
  for (size_t i = 0; i < n && s == CT_OK; i++) s = ct_op_set_input(op, slots[i], in[i]);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", o);
  if (s == CT_OK && strcmp(type, "scale") == 0) {
    s = ct_op_set_attr_float(op, "scale", a);
    if (s == CT_OK) s = ct_op_set_attr_float(op, "bias", b);
  }
  if (s == CT_OK) s = ox_push(k->c, op);
  k->s = s;
  return s == CT_OK ? o : NULL;
}

/* x (type) y, elementwise with broadcasting, into out (fresh when NULL). */
static const char *bin(chain *k, const char *type, const char *x, const char *y, const char *out) {
  const char *in[2] = {x, y};
  return emit(k, type, xy, in, 2, out, 0, 0);
}

static const char *unary(chain *k, const char *type, const char *x) {
  return emit(k, type, xy, &x, 1, NULL, 0, 0);
}

/* a x + b (the scale op, which computes in x's dtype), into out (fresh when NULL). */
static const char *affine(chain *k, const char *x, double a, double b, const char *out) {
  return emit(k, "scale", xy, &x, 1, out, a, b);
}

/* x cast to R's dtype. */
static const char *like_r(chain *k, const char *x) {
  const char *in[2] = {x, k->r};
  return emit(k, "cast_like", x_like, in, 2, NULL, 0, 0);
}

/* The scalar v in R's dtype. */
static const char *konst(chain *k, double v) {
  if (k->s != CT_OK) return NULL;
  const char *f = ox_const_new_float(k->c, v, CT_FLOAT32);
  if (f == NULL) {
    k->s = CT_ERR_OUT_OF_MEMORY;
    return NULL;
  }
  return like_r(k, f);
}

/* The regularized gradient norm X + G (G itself when norm is 0). */
static const char *regularized(chain *k, const char *x, const char *g, double norm) {
  return norm == 0 ? g : bin(k, "elementwise_add", affine(k, x, norm, 0, NULL), g, NULL);
}

/* Checks the node's shape: R, T, then groups of n inputs each (n optimized tensors), and
 * outputs groups of n; *n out. */
static ct_status layout(ox_cx *c, size_t in_groups, size_t out_groups, size_t *n) {
  size_t n_in = ox_n_in(c), n_out = ox_n_out(c);
  if (n_in < 2 + in_groups || (n_in - 2) % in_groups != 0) {
    return ox_unsupported(c, "%zu inputs (R, T and %zu groups of equally many tensors expected)",
                          n_in, in_groups);
  }
  *n = (n_in - 2) / in_groups;
  if (n_out != *n * out_groups) {
    return ox_unsupported(c, "%zu outputs for %zu optimized tensors (%zu expected)", n_out, *n,
                          *n * out_groups);
  }
  for (size_t i = 0; i < n_in; i++) {
    if (ox_in(c, i) == NULL) return ox_unsupported(c, "input %zu is missing", i);
  }
  for (size_t i = 0; i < n_out; i++) {
    if (ox_out(c, i) == NULL) return ox_unsupported(c, "output %zu is missing", i);
  }
  return CT_OK;
}

/* Adagrad: r = R / (1 + T decay); g = norm X + G; H' = H + g^2; X' = X - r g / (sqrt(H') + eps). */
static ct_status adagrad(ox_cx *c) {
  size_t n;
  ct_status s = layout(c, 3, 2, &n);
  if (s != CT_OK) return s;
  double decay = ox_float(c, "decay_factor", 0), eps = ox_float(c, "epsilon", 0),
         norm = ox_float(c, "norm_coefficient", 0);
  chain k = {.c = c, .r = ox_in(c, 0)};
  const char *t = like_r(&k, ox_in(c, 1));
  const char *r = bin(&k, "elementwise_div", k.r, affine(&k, t, decay, 1, NULL), NULL);
  for (size_t i = 0; i < n; i++) {
    const char *x = ox_in(c, 2 + i), *g = regularized(&k, x, ox_in(c, 2 + n + i), norm);
    const char *h = bin(&k, "elementwise_add", ox_in(c, 2 + 2 * n + i),
                        bin(&k, "elementwise_mul", g, g, NULL), ox_out(c, n + i));
    const char *den = affine(&k, unary(&k, "sqrt", h), 1, eps, NULL);
    const char *step = bin(&k, "elementwise_mul", r, bin(&k, "elementwise_div", g, den, NULL), NULL);
    bin(&k, "elementwise_sub", x, step, ox_out(c, i));
  }
  return k.s;
}

/* Momentum: g = norm X + G; b = beta when T > 0, else 1; V' = alpha V + b g; standard:
 * X' = X - R V'; nesterov: X' = X - R (g + alpha V'). */
static ct_status momentum(ox_cx *c) {
  size_t n;
  ct_status s = layout(c, 3, 2, &n);
  if (s != CT_OK) return s;
  double alpha = ox_float(c, "alpha", 0), beta = ox_float(c, "beta", 0),
         norm = ox_float(c, "norm_coefficient", 0);
  const char *mode = ox_string(c, "mode", "standard");
  bool nesterov = mode != NULL && strcmp(mode, "nesterov") == 0;
  if (mode == NULL || (!nesterov && strcmp(mode, "standard") != 0)) {
    return ox_unsupported(c, "mode '%s' (standard or nesterov)", mode ? mode : "?");
  }
  chain k = {.c = c, .r = ox_in(c, 0)};
  const char *t = like_r(&k, ox_in(c, 1));
  const char *cond[3] = {bin(&k, "greater_than", t, konst(&k, 0), NULL), konst(&k, beta),
                         konst(&k, 1)};
  static const char *const where_slots[] = {"Condition", "X", "Y"};
  const char *b = emit(&k, "where", where_slots, cond, 3, NULL, 0, 0);
  for (size_t i = 0; i < n; i++) {
    const char *x = ox_in(c, 2 + i), *g = regularized(&k, x, ox_in(c, 2 + n + i), norm);
    const char *v = bin(&k, "elementwise_add", affine(&k, ox_in(c, 2 + 2 * n + i), alpha, 0, NULL),
                        bin(&k, "elementwise_mul", b, g, NULL), ox_out(c, n + i));
    const char *dir = nesterov ? bin(&k, "elementwise_add", g, affine(&k, v, alpha, 0, NULL), NULL)
                               : v;
    bin(&k, "elementwise_sub", x, bin(&k, "elementwise_mul", k.r, dir, NULL), ox_out(c, i));
  }
  return k.s;
}

/* Adam: g = norm X + G; V' = alpha V + (1 - alpha) g; H' = beta H + (1 - beta) g^2;
 * R' = R sqrt(1 - beta^T) / (1 - alpha^T) when T > 0, else R;
 * X' = (1 - norm_post) (X - R' V' / (sqrt(H') + eps)). */
static ct_status adam(ox_cx *c) {
  size_t n;
  ct_status s = layout(c, 4, 3, &n);
  if (s != CT_OK) return s;
  double alpha = ox_float(c, "alpha", 0.9), beta = ox_float(c, "beta", 0.999),
         eps = ox_float(c, "epsilon", 0), norm = ox_float(c, "norm_coefficient", 0),
         post = ox_float(c, "norm_coefficient_post", 0);
  chain k = {.c = c, .r = ox_in(c, 0)};
  const char *t = like_r(&k, ox_in(c, 1));
  const char *bt = bin(&k, "elementwise_pow", konst(&k, beta), t, NULL);
  const char *at = bin(&k, "elementwise_pow", konst(&k, alpha), t, NULL);
  const char *corr = bin(&k, "elementwise_div", unary(&k, "sqrt", affine(&k, bt, -1, 1, NULL)),
                         affine(&k, at, -1, 1, NULL), NULL);
  /* At T = 0 the correction is 0/0: where picks 1 there, never multiplying by the NaN. */
  const char *cond[3] = {bin(&k, "greater_than", t, konst(&k, 0), NULL), corr, konst(&k, 1)};
  static const char *const where_slots[] = {"Condition", "X", "Y"};
  const char *rate = bin(&k, "elementwise_mul", k.r,
                         emit(&k, "where", where_slots, cond, 3, NULL, 0, 0), NULL);
  for (size_t i = 0; i < n; i++) {
    const char *x = ox_in(c, 2 + i), *g = regularized(&k, x, ox_in(c, 2 + n + i), norm);
    const char *v = bin(&k, "elementwise_add", affine(&k, ox_in(c, 2 + 2 * n + i), alpha, 0, NULL),
                        affine(&k, g, 1 - alpha, 0, NULL), ox_out(c, n + i));
    const char *g2 = bin(&k, "elementwise_mul", g, g, NULL);
    const char *h = bin(&k, "elementwise_add", affine(&k, ox_in(c, 2 + 3 * n + i), beta, 0, NULL),
                        affine(&k, g2, 1 - beta, 0, NULL), ox_out(c, 2 * n + i));
    const char *den = affine(&k, unary(&k, "sqrt", h), 1, eps, NULL);
    const char *step = bin(&k, "elementwise_mul", rate, bin(&k, "elementwise_div", v, den, NULL),
                           NULL);
    if (post == 0) {
      bin(&k, "elementwise_sub", x, step, ox_out(c, i));
    } else {
      affine(&k, bin(&k, "elementwise_sub", x, step, NULL), 1 - post, 0, ox_out(c, i));
    }
  }
  return k.s;
}

#define OPS "scale, elementwise_add, elementwise_sub, elementwise_mul, elementwise_div, sqrt, cast_like"

static const ox_rule rows[] = {
    {"Adagrad", 1, adagrad, OPS},
    {"Momentum", 1, momentum, OPS ", greater_than, where"},
    {"Adam", 1, adam, OPS ", elementwise_pow, greater_than, where"},
};

const ox_rules ox_rules_train = {rows, sizeof rows / sizeof rows[0]};
