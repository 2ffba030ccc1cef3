/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/rules_ew.c: the rules of ONNX's elementwise math, comparisons and logic onto the math
 * family's op types (ops/defs/math.c): the unary functions and activations, Pow, Max, Min,
 * Mean, Mod, Clip, the comparisons, And, Or, Xor, Not, Where, PRelu, IsInf, IsNaN, BitShift and
 * CastLike. */
#include <math.h>
#include <string.h>

#include "onnx/onnx_rules.h"

static ct_status in(ct_status s, ct_op *op, const char *slot, const char *name) {
  return s == CT_OK && name != NULL ? ct_op_set_input(op, slot, name) : s;
}

/* An op of `type` reading X (and Y when y is not NULL), writing Out, appended. */
static ct_status xy_op(ox_cx *c, const char *type, const char *x, const char *y, const char *o) {
  ct_op *op = ox_op(c, type);
  if (op == NULL) return ct_last_status();
  ct_status s = in(CT_OK, op, "X", x);
  s = in(s, op, "Y", y);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", o);
  return s == CT_OK ? ox_push(c, op) : s;
}

/* ---- Unary ---------------------------------------------------------------------------------------- */

/* X -> Out of `type`, its float attributes names[k] set to vals[k]. */
static ct_status unary_attrs(ox_cx *c, const char *type, const char *const *names,
                             const double *vals, size_t n) {
  const char *x = ox_in(c, 0), *o = ox_out(c, 0);
  if (x == NULL || o == NULL) return ox_unsupported(c, "the input or the output is missing");
  ct_op *op = ox_op(c, type);
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", o);
  for (size_t k = 0; s == CT_OK && k < n; k++) s = ct_op_set_attr_float(op, names[k], vals[k]);
  return s == CT_OK ? ox_push(c, op) : s;
}

#define UNARY(fn, type) \
  static ct_status fn(ox_cx *c) { return unary_attrs(c, type, NULL, NULL, 0); }
UNARY(sqrt_, "sqrt")
UNARY(abs_, "abs")
UNARY(neg, "neg")
UNARY(reciprocal, "reciprocal")
UNARY(floor_, "floor")
UNARY(ceil_, "ceil")
UNARY(round_, "round")
UNARY(sign, "sign")
UNARY(erf_, "erf")
UNARY(sin_, "sin")
UNARY(cos_, "cos")
UNARY(tan_, "tan")
UNARY(asin_, "asin")
UNARY(acos_, "acos")
UNARY(atan_, "atan")
UNARY(sinh_, "sinh")
UNARY(cosh_, "cosh")
UNARY(asinh_, "asinh")
UNARY(acosh_, "acosh")
UNARY(atanh_, "atanh")
UNARY(softplus, "softplus")
UNARY(softsign, "softsign")
UNARY(isnan_, "isnan")
UNARY(not_, "logical_not")
UNARY(hard_swish, "hard_swish") /* ONNX's x max(0, min(1, x / 6 + 1 / 2)): the defaults */

/* Activations whose ONNX attributes become corten's float attributes. */
static ct_status selu(ox_cx *c) {
  static const char *const names[] = {"alpha", "scale"};
  double v[2] = {ox_float(c, "alpha", 1.67326319217681884765625),
                 ox_float(c, "gamma", 1.05070102214813232421875)};
  return unary_attrs(c, "selu", names, v, 2);
}

#define ALPHA_RULE(fn, type, dflt)                                \
  static ct_status fn(ox_cx *c) {                                 \
    static const char *const names[] = {"alpha"};                 \
    double v[1] = {ox_float(c, "alpha", (dflt))};                 \
    return unary_attrs(c, type, names, v, 1);                     \
  }
ALPHA_RULE(elu, "elu", 1.0)
ALPHA_RULE(celu, "celu", 1.0)
ALPHA_RULE(leaky_relu, "leaky_relu", 0.01)

static ct_status hard_sigmoid(ox_cx *c) {
  static const char *const names[] = {"slope", "offset"};
  double v[2] = {ox_float(c, "alpha", 0.2), ox_float(c, "beta", 0.5)};
  return unary_attrs(c, "hard_sigmoid", names, v, 2);
}

static ct_status thresholded_relu(ox_cx *c) {
  static const char *const names[] = {"threshold"};
  double v[1] = {ox_float(c, "alpha", 1.0)};
  return unary_attrs(c, "thresholded_relu", names, v, 1);
}

static ct_status shrink(ox_cx *c) {
  static const char *const names[] = {"lambda", "bias"};
  double v[2] = {ox_float(c, "lambd", 0.5), ox_float(c, "bias", 0.0)};
  return unary_attrs(c, "shrink", names, v, 2);
}

static ct_status isinf_(ox_cx *c) {
  const char *x = ox_in(c, 0), *o = ox_out(c, 0);
  if (x == NULL || o == NULL) return ox_unsupported(c, "the input or the output is missing");
  ct_op *op = ox_op(c, "isinf");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", o);
  if (s == CT_OK) s = ct_op_set_attr_bool(op, "detect_positive", ox_int(c, "detect_positive", 1) != 0);
  if (s == CT_OK) s = ct_op_set_attr_bool(op, "detect_negative", ox_int(c, "detect_negative", 1) != 0);
  return s == CT_OK ? ox_push(c, op) : s;
}

/* ---- Binary ------------------------------------------------------------------------------------- */

/* A node of two inputs and one output, numpy broadcasting (opset 7 on, or no broadcast asked). */
static ct_status binary_of(ox_cx *c, const char *type) {
  const char *a = ox_in(c, 0), *b = NULL, *o = ox_out(c, 0);
  if (a == NULL || ox_in(c, 1) == NULL || o == NULL) {
    return ox_unsupported(c, "an input or the output is missing");
  }
  ct_status s = ox_legacy_b(c, &b); /* before opset 7: B aligned at `axis` */
  return s == CT_OK ? xy_op(c, type, a, b, o) : s;
}

#define BINARY(fn, type) \
  static ct_status fn(ox_cx *c) { return binary_of(c, type); }
BINARY(pow_, "elementwise_pow")
BINARY(less, "less_than")
BINARY(less_equal, "less_equal")
BINARY(greater, "greater_than")
BINARY(greater_equal, "greater_equal")
BINARY(equal, "equal")
BINARY(and_, "logical_and")
BINARY(or_, "logical_or")
BINARY(xor_, "logical_xor")

static ct_status mod(ox_cx *c) {
  return binary_of(c, ox_int(c, "fmod", 0) != 0 ? "elementwise_fmod" : "elementwise_mod");
}

static ct_status bitshift(ox_cx *c) {
  const char *dir = ox_string(c, "direction", "");
  if (strcmp(dir, "LEFT") == 0) return binary_of(c, "bitwise_left_shift");
  if (strcmp(dir, "RIGHT") == 0) return binary_of(c, "bitwise_right_shift");
  return ox_unsupported(c, "attribute 'direction' is \"%s\": ONNX allows \"LEFT\" or \"RIGHT\"", dir);
}

/* Max, Min, Sum-like chains: type over the inputs left to right (one input: a copy). The
 * result goes to `o`. */
static ct_status chain(ox_cx *c, const char *type, const char *o) {
  size_t n = ox_n_in(c);
  const char *acc = ox_in(c, 0);
  if (n == 0 || o == NULL || acc == NULL) return ox_unsupported(c, "no input or no output");
  if (n == 1) return ox_unary(c, "assign", acc, o);
  for (size_t k = 1; k < n; k++) {
    const char *x = ox_in(c, k), *to = k + 1 == n ? o : ox_tmp(c);
    if (x == NULL) return ox_unsupported(c, "input %zu is missing", k);
    if (to == NULL) return ct_last_status();
    ct_status s = xy_op(c, type, acc, x, to);
    if (s != CT_OK) return s;
    acc = to;
  }
  return CT_OK;
}

static ct_status max_(ox_cx *c) { return chain(c, "elementwise_max", ox_out(c, 0)); }
static ct_status min_(ox_cx *c) { return chain(c, "elementwise_min", ox_out(c, 0)); }

/* Mean (float types only): the sum, then scaled by 1 / n. */
static ct_status mean(ox_cx *c) {
  size_t n = ox_n_in(c);
  const char *o = ox_out(c, 0);
  if (n <= 1) return chain(c, "elementwise_add", o);
  const char *sum = ox_tmp(c);
  if (sum == NULL) return ct_last_status();
  ct_status s = chain(c, "elementwise_add", sum);
  if (s != CT_OK) return s;
  ct_op *op = ox_op(c, "scale");
  if (op == NULL) return ct_last_status();
  s = ct_op_set_input(op, "X", sum);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", o);
  if (s == CT_OK) s = ct_op_set_attr_float(op, "scale", 1.0 / (double)n);
  return s == CT_OK ? ox_push(c, op) : s;
}

/* ---- Where, PRelu, Clip, CastLike ------------------------------------------------------------------ */

/* An op of `type` with the node's inputs wired to slots[k] (all present) and Out. */
static ct_status wired(ox_cx *c, const char *type, const char *const *slots, size_t n) {
  const char *o = ox_out(c, 0);
  if (o == NULL) return ox_unsupported(c, "the output is missing");
  ct_op *op = ox_op(c, type);
  if (op == NULL) return ct_last_status();
  ct_status s = CT_OK;
  for (size_t k = 0; s == CT_OK && k < n; k++) {
    const char *x = ox_in(c, k);
    if (x == NULL) return ox_unsupported(c, "input %zu is missing", k);
    s = ct_op_set_input(op, slots[k], x);
  }
  if (s == CT_OK) s = ct_op_set_output(op, "Out", o);
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status where(ox_cx *c) {
  static const char *const slots[] = {"Condition", "X", "Y"};
  return wired(c, "where", slots, 3);
}

static ct_status prelu(ox_cx *c) {
  static const char *const slots[] = {"X", "Alpha"};
  return wired(c, "prelu", slots, 2);
}

/* PRelu before opset 7: a slope of one value, or one per channel (dim 1 of X, a vector of
 * them aligned there, as onnxruntime and the exporters of the time read it). */
static ct_status prelu_6(ox_cx *c) {
  const char *x = ox_in(c, 0), *slope = ox_in(c, 1), *o = ox_out(c, 0);
  if (x == NULL || slope == NULL || o == NULL) {
    return ox_unsupported(c, "an input or the output is missing");
  }
  const int rx = ox_in_rank(c, 0), rs = ox_in_rank(c, 1);
  const double *v;
  size_t n = 0;
  const bool one = ox_const_floats(c, 1, &v, &n) && n == 1;
  if (!one && rs < 0) {
    return ox_unsupported(c, "a slope before opset 7 whose rank the model does not give (one "
                          "value or one per channel: give it as a constant or a graph input)");
  }
  if (!one && rs == 1) {
    if (rx < 0) {
      return ox_unsupported(c, "a slope per channel before opset 7 on an X whose rank the model "
                            "does not give (give the graph input's shape)");
    }
    ct_status s = ox_align_b(c, rx >= 2 ? 1 : 0, rx, 1, &slope);
    if (s != CT_OK) return s;
  }
  ct_op *op = ox_op(c, "prelu");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_input(op, "Alpha", slope);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", o);
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status cast_like(ox_cx *c) {
  static const char *const slots[] = {"X", "Like"};
  return wired(c, "cast_like", slots, 2);
}

/* Clip before opset 11: the bounds are attributes. */
static ct_status clip_6(ox_cx *c) {
  static const char *const names[] = {"min", "max"};
  double v[2] = {ox_float(c, "min", -INFINITY), ox_float(c, "max", INFINITY)};
  return unary_attrs(c, "clip", names, v, 2);
}

/* Clip from opset 11: optional inputs min (1) and max (2); a constant float one, or an integer
 * one that a double holds exactly, becomes the attribute, any other is wired as Min or Max and
 * read at run time. */
static ct_status clip_11(ox_cx *c) {
  const char *x = ox_in(c, 0), *o = ox_out(c, 0);
  if (x == NULL || o == NULL) return ox_unsupported(c, "the input or the output is missing");
  ct_op *op = ox_op(c, "clip");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", o);
  static const char *const slots[] = {"Min", "Max"}, *const attrs[] = {"min", "max"};
  for (size_t k = 1; s == CT_OK && k <= 2; k++) {
    const char *b = ox_in(c, k);
    if (b == NULL) continue;
    const double *f;
    const int64_t *iv;
    size_t n;
    if (ox_const_floats(c, k, &f, &n) && n == 1) {
      s = ct_op_set_attr_float(op, attrs[k - 1], f[0]);
    } else if (ox_const_ints(c, k, &iv, &n) && n == 1 && iv[0] >= -(INT64_C(1) << 53) &&
               iv[0] <= (INT64_C(1) << 53)) {
      s = ct_op_set_attr_float(op, attrs[k - 1], (double)iv[0]);
    } else {
      s = ct_op_set_input(op, slots[k - 1], b);
    }
  }
  return s == CT_OK ? ox_push(c, op) : s;
}

static const ox_rule rows[] = {
    {"Sqrt", 6, sqrt_, "sqrt"},
    {"Abs", 6, abs_, "abs"},
    /* rules_math.c maps Neg (6) to scale -1, which saturates integers; from 13 on, neg wraps. */
    {"Neg", 6, neg, "neg"},
    {"Reciprocal", 6, reciprocal, "reciprocal"},
    {"Floor", 6, floor_, "floor"},
    {"Ceil", 6, ceil_, "ceil"},
    {"Round", 11, round_, "round"},
    {"Sign", 9, sign, "sign"},
    {"Erf", 9, erf_, "erf"},
    {"Sin", 7, sin_, "sin"},
    {"Cos", 7, cos_, "cos"},
    {"Tan", 7, tan_, "tan"},
    {"Asin", 7, asin_, "asin"},
    {"Acos", 7, acos_, "acos"},
    {"Atan", 7, atan_, "atan"},
    {"Sinh", 9, sinh_, "sinh"},
    {"Cosh", 9, cosh_, "cosh"},
    {"Asinh", 9, asinh_, "asinh"},
    {"Acosh", 9, acosh_, "acosh"},
    {"Atanh", 9, atanh_, "atanh"},
    {"Softplus", 1, softplus, "softplus"},
    {"Softsign", 1, softsign, "softsign"},
    {"Selu", 6, selu, "selu"},
    {"Elu", 6, elu, "elu"},
    {"Celu", 12, celu, "celu"},
    {"LeakyRelu", 6, leaky_relu, "leaky_relu"},
    {"HardSigmoid", 6, hard_sigmoid, "hard_sigmoid"},
    {"HardSwish", 14, hard_swish, "hard_swish"},
    {"ThresholdedRelu", 10, thresholded_relu, "thresholded_relu"},
    {"Shrink", 9, shrink, "shrink"},
    {"IsInf", 10, isinf_, "isinf"},
    {"IsNaN", 9, isnan_, "isnan"},
    {"Not", 1, not_, "logical_not"},
    {"And", 1, and_, "logical_and"},
    {"Or", 1, or_, "logical_or"},
    {"Xor", 1, xor_, "logical_xor"},
    {"Less", 1, less, "less_than"},
    {"LessOrEqual", 12, less_equal, "less_equal"},
    {"Greater", 1, greater, "greater_than"},
    {"GreaterOrEqual", 12, greater_equal, "greater_equal"},
    {"Equal", 1, equal, "equal"},
    {"Pow", 1, pow_, "elementwise_pow"},
    {"Max", 1, max_, "elementwise_max"},
    {"Min", 1, min_, "elementwise_min"},
    {"Mean", 1, mean, "elementwise_add, scale"},
    {"Mod", 10, mod, "elementwise_mod, elementwise_fmod"},
    {"BitShift", 11, bitshift, "bitwise_left_shift, bitwise_right_shift"},
    {"Where", 9, where, "where"},
    {"PRelu", 1, prelu_6, "prelu, unsqueeze"},
    {"PRelu", 7, prelu, "prelu"},
    {"Clip", 6, clip_6, "clip"},
    {"Clip", 11, clip_11, "clip"},
    {"CastLike", 15, cast_like, "cast_like"},
};

const ox_rules ox_rules_ew = {rows, sizeof rows / sizeof rows[0]};
