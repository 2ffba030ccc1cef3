/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/math.c: the elementwise math, comparison and logic op types (issue 33, ONNX import):
 * their slots, attributes and shapes. The CPU kernels are ops/cpu/math.c (unary) and
 * ops/cpu/math_bin.c (the others); the gradients ops/defs/math_grad.c.
 *
 *   unary, X -> Out of X's dims and dtype (float16, float32, float64; abs, neg and sign also
 *   int8, int16, int32, int64, and uint8 (neg wrapping)):
 *     sqrt, reciprocal, floor, ceil, round (half to even), erf, sin, cos, tan, asin, acos,
 *     atan, sinh, cosh, asinh, acosh, atanh, softsign (x / (1 + |x|)), softplus (log(1 + e^x)),
 *     abs, neg (integers wrap: -(-128) is -128 in int8), sign (-1, 0 or 1; NaN stays NaN),
 *     selu (scale (x > 0 ? x : alpha (e^x - 1))), elu (x > 0 ? x : alpha (e^x - 1)),
 *     celu (max(0, x) + min(0, alpha (e^(x / alpha) - 1))), leaky_relu (x >= 0 ? x : alpha x),
 *     hard_sigmoid (max(0, min(1, slope x + offset))),
 *     hard_swish (x min(max(x + offset, 0), threshold) / scale),
 *     thresholded_relu (x > threshold ? x : 0),
 *     shrink (x < -lambda ? x + bias : x > lambda ? x - bias : 0)
 *   isinf, isnan: X (float) -> Out bool of X's dims; isinf counts +inf when detect_positive and
 *     -inf when detect_negative
 *   logical_not: X (bool) -> Out (bool)
 *   binary with numpy broadcasting, X, Y of one dtype -> Out:
 *     elementwise_max, elementwise_min (a NaN wins), elementwise_mod (the remainder takes the
 *     divisor's sign, as Python's %), elementwise_fmod (the dividend's, as C's fmod); integer
 *     division by zero is refused;
 *     bitwise_left_shift, bitwise_right_shift (uint8 to uint64; a shift of the width or more
 *     gives 0);
 *     elementwise_pow: X's dtype, Y of any numeric dtype (computed in double, integer powers
 *     exactly with wrapping);
 *     equal, not_equal, less_than, less_equal, greater_than, greater_equal -> Out bool;
 *     logical_and, logical_or, logical_xor: bool X, Y -> Out bool
 *   where: Condition (bool), X, Y (one dtype), all broadcast -> Out: Condition ? X : Y
 *   clip: X, Min, Max (optional inputs of one element of X's dtype, read on the host at run
 *     time; when unwired, attributes min and max, default -inf and +inf) -> Out:
 *     min(max(X, min), max) (so min > max gives max; NaN stays NaN)
 *   prelu: X, Alpha (X's dtype, broadcast to X's dims) -> Out: X >= 0 ? X : Alpha X
 *   cast_like: X, Like -> Out: X converted to Like's dtype (Like's values are not read) */
#include "ops/defs/math.h"

#include <math.h>

void ct__mwalk_init(ct__mwalk *w, ct_ddim out, const ct_ddim *in, int n_in, int64_t start) {
  w->rank = out.rank;
  w->n_in = n_in;
  for (int j = 0; j < n_in; j++) {
    int64_t st = 1;
    for (int k = out.rank - 1; k >= 0; k--) {
      int ik = in[j].rank - out.rank + k;
      int64_t dk = ik >= 0 ? in[j].d[ik] : 1;
      w->s[j][k] = dk == 1 ? 0 : st;
      st *= dk;
    }
    w->off[j] = 0;
  }
  int64_t rem = start;
  for (int k = out.rank - 1; k >= 0; k--) {
    w->d[k] = out.d[k];
    w->idx[k] = out.d[k] > 0 ? rem % out.d[k] : 0;
    rem = out.d[k] > 0 ? rem / out.d[k] : 0;
    for (int j = 0; j < n_in; j++) w->off[j] += w->idx[k] * w->s[j][k];
  }
}

ct_status ct__math_broadcast(const ct_kernel_ctx *c, const size_t *slots, int n, ct_ddim *out) {
  int r = 0;
  for (int j = 0; j < n; j++) {
    int rj = ct_kernel_in(c, slots[j], 0)->dims.rank;
    if (rj > r) r = rj;
  }
  out->rank = r;
  for (int k = 0; k < r; k++) {
    int64_t dk = 1;
    size_t from = slots[0];
    for (int j = 0; j < n; j++) {
      ct_ddim dj = ct_kernel_in(c, slots[j], 0)->dims;
      int ij = dj.rank - r + k;
      int64_t v = ij >= 0 ? dj.d[ij] : 1;
      if (v == dk || v == 1) continue;
      if (dk != 1) {
        char sa[CT__DDIM_STR_CAP], sb[CT__DDIM_STR_CAP];
        return ct_kernel_fail(c, CT_ERR_SHAPE,
                              "input %s variable '%s' %s and input %s variable '%s' %s do not "
                              "broadcast (dim %d: %lld vs %lld): make each trailing dim equal "
                              "or 1",
                              c->op->def->in[from].name, ct_kernel_in_name(c, from, 0),
                              ct_ddim_str(ct_kernel_in(c, from, 0)->dims, sa, sizeof sa),
                              c->op->def->in[slots[j]].name, ct_kernel_in_name(c, slots[j], 0),
                              ct_ddim_str(dj, sb, sizeof sb), k, (long long)dk, (long long)v);
      }
      dk = v;
      from = slots[j];
    }
    out->d[k] = dk;
  }
  return CT_OK;
}

/* X and Y of one dtype (pow: Y of any numeric dtype), broadcast; Out takes the broadcast. */
static ct_status bin_dims(const ct_kernel_ctx *c, bool same_dtype) {
  static const size_t xy[2] = {CT__IN_X, CT__IN_Y};
  const ct_tensor *x = ct_kernel_in(c, CT__IN_X, 0), *y = ct_kernel_in(c, CT__IN_Y, 0);
  ct_status s = CT_OK;
  if (same_dtype) {
    s = ct__k_check_dtype(c, CT__IN_Y, 0, x->dtype);
  } else if (!ct__math_numeric(y->dtype)) {
    s = ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH,
                       "input Y variable '%s' is %s: the exponent is an integer or float "
                       "tensor",
                       ct_kernel_in_name(c, CT__IN_Y, 0), ct_dtype_name(y->dtype));
  }
  ct_ddim out;
  if (s == CT_OK) s = ct__math_broadcast(c, xy, 2, &out);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, out) : s;
}

static ct_status bin_infer(const ct_kernel_ctx *c) { return bin_dims(c, true); }
static ct_status pow_infer(const ct_kernel_ctx *c) { return bin_dims(c, false); }

ct_status ct__where_dims(const ct_kernel_ctx *c, ct_ddim *out) {
  static const size_t all[3] = {CT__WHERE_COND, CT__WHERE_X, CT__WHERE_Y};
  const ct_tensor *cond = ct_kernel_in(c, CT__WHERE_COND, 0);
  if (cond->dtype != CT_BOOL) {
    return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH,
                          "input Condition variable '%s' is %s: the condition is bool; cast it",
                          ct_kernel_in_name(c, CT__WHERE_COND, 0), ct_dtype_name(cond->dtype));
  }
  const ct_tensor *x = ct_kernel_in(c, CT__WHERE_X, 0), *y = ct_kernel_in(c, CT__WHERE_Y, 0);
  if (y->dtype != x->dtype) {
    return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH,
                          "input Y variable '%s' is %s but input X variable '%s' is %s: cast "
                          "one of them",
                          ct_kernel_in_name(c, CT__WHERE_Y, 0), ct_dtype_name(y->dtype),
                          ct_kernel_in_name(c, CT__WHERE_X, 0), ct_dtype_name(x->dtype));
  }
  return ct__math_broadcast(c, all, 3, out);
}

static ct_status where_infer(const ct_kernel_ctx *c) {
  ct_ddim out;
  ct_status s = ct__where_dims(c, &out);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, out) : s;
}

ct_status ct__clip_check(const ct_kernel_ctx *c) {
  const ct_tensor *x = ct_kernel_in(c, CT__CLIP_X, 0);
  for (size_t slot = CT__CLIP_MIN; slot <= CT__CLIP_MAX; slot++) {
    if (ct_kernel_in_count(c, slot) == 0) continue;
    ct_status s = ct__k_check_dtype(c, slot, 0, x->dtype);
    if (s != CT_OK) return s;
    const ct_tensor *b = ct_kernel_in(c, slot, 0);
    if (b->numel != 1) {
      char a[CT__DDIM_STR_CAP];
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "input %s variable '%s' is %s: a bound is one element",
                            c->op->def->in[slot].name, ct_kernel_in_name(c, slot, 0),
                            ct_ddim_str(b->dims, a, sizeof a));
    }
  }
  double lo = c->attr[CT__CLIP_ATTR_MIN].u.f, hi = c->attr[CT__CLIP_ATTR_MAX].u.f;
  if (lo != lo || hi != hi) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute min or max is NaN: give numbers (or -inf, inf for none)");
  }
  return CT_OK;
}

static ct_status clip_infer(const ct_kernel_ctx *c) {
  ct_status s = ct__clip_check(c);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, ct_kernel_in(c, CT__CLIP_X, 0)->dims) : s;
}

ct_status ct__prelu_check(const ct_kernel_ctx *c) {
  const ct_tensor *x = ct_kernel_in(c, CT__PRELU_X, 0), *a = ct_kernel_in(c, CT__PRELU_ALPHA, 0);
  ct_status s = ct__k_check_dtype(c, CT__PRELU_ALPHA, 0, x->dtype);
  if (s != CT_OK) return s;
  ct_ddim out;
  s = ct__k_broadcast(c, x->dims, a->dims, &out);
  if (s == CT_OK && !ct_ddim_equal(out, x->dims)) {
    char sa[CT__DDIM_STR_CAP], sb[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input Alpha variable '%s' is %s, which X variable '%s' %s does not "
                          "contain: Alpha must broadcast to X's dims",
                          ct_kernel_in_name(c, CT__PRELU_ALPHA, 0),
                          ct_ddim_str(a->dims, sa, sizeof sa), ct_kernel_in_name(c, 0, 0),
                          ct_ddim_str(x->dims, sb, sizeof sb));
  }
  return s;
}

static ct_status prelu_infer(const ct_kernel_ctx *c) {
  ct_status s = ct__prelu_check(c);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, ct_kernel_in(c, CT__PRELU_X, 0)->dims) : s;
}

/* ---- Attributes -------------------------------------------------------------------------------- */

#define F(name, v) {name, {.type = CT_ATTR_FLOAT, .u.f = (v)}, false}
static const ct_attr_def selu_attrs[] = {F("scale", 1.0507009873554804934193349852946),
                                         F("alpha", 1.6732632423543772848170429916717)};
static const ct_attr_def alpha1_attrs[] = {F("alpha", 1.0)};
static const ct_attr_def leaky_attrs[] = {F("alpha", 0.02)};
static const ct_attr_def hsig_attrs[] = {F("slope", 0.2), F("offset", 0.5)};
static const ct_attr_def hswish_attrs[] = {F("threshold", 6.0), F("scale", 6.0),
                                           F("offset", 3.0)};
static const ct_attr_def trelu_attrs[] = {F("threshold", 1.0)};
static const ct_attr_def shrink_attrs[] = {F("lambda", 0.5), F("bias", 0.0)};
static const ct_attr_def clip_attrs[] = {F("min", -INFINITY), F("max", INFINITY)};
#undef F
static const ct_attr_def isinf_attrs[] = {
    {"detect_positive", {.type = CT_ATTR_BOOL, .u.b = true}, false},
    {"detect_negative", {.type = CT_ATTR_BOOL, .u.b = true}, false},
};

static const ct_slot_def where_in[] = {{"Condition", 0}, {"X", 0}, {"Y", 0}};
static const ct_slot_def clip_in[] = {{"X", 0}, {"Min", CT_SLOT_OPTIONAL},
                                      {"Max", CT_SLOT_OPTIONAL}};
static const ct_slot_def prelu_in[] = {{"X", 0}, {"Alpha", 0}};
static const ct_slot_def cast_like_in[] = {{"X", 0}, {"Like", 0}};
/* The grad types' slots. */
static const ct_slot_def ug_in[] = {{"X", 0}, {"Out@GRAD", 0}};
static const ct_slot_def ug_out[] = {{"X@GRAD", 0}};
static const ct_slot_def bg_in[] = {{"X", 0}, {"Y", 0}, {"Out@GRAD", 0}};
static const ct_slot_def bg_out[] = {{"X@GRAD", CT_SLOT_OPTIONAL}, {"Y@GRAD", CT_SLOT_OPTIONAL}};
static const ct_slot_def where_g_in[] = {{"Condition", 0}, {"X", 0}, {"Y", 0}, {"Out@GRAD", 0}};
static const ct_slot_def clip_g_in[] = {{"X", 0}, {"Min", CT_SLOT_OPTIONAL},
                                        {"Max", CT_SLOT_OPTIONAL}, {"Out@GRAD", 0}};
static const ct_slot_def prelu_g_in[] = {{"X", 0}, {"Alpha", 0}, {"Out@GRAD", 0}};
static const ct_slot_def prelu_g_out[] = {{"X@GRAD", CT_SLOT_OPTIONAL},
                                          {"Alpha@GRAD", CT_SLOT_OPTIONAL}};

/* X -> Out of X's dims, attributes a (n of them), gradient maker g. */
#define UNARY(name, a, n, g)                                                               \
  {.type = (name), .inputs = ct__slot_x, .n_inputs = 1, .outputs = ct__slot_out,           \
   .n_outputs = 1, .attrs = (a), .n_attrs = (n), .flags = CT_OP_PURE_INFER,                \
   .infer_shape = ct__same_dims_infer, .grad = (g)}
/* <forward>_grad: X, Out@GRAD -> X@GRAD, the forward's attributes. */
#define UNARY_GRAD(name, a, n)                                                              \
  {.type = (name), .inputs = ug_in, .n_inputs = 2, .outputs = ug_out, .n_outputs = 1,       \
   .attrs = (a), .n_attrs = (n), .flags = CT_OP_PURE_INFER,                                 \
   .infer_shape = ct__unary_grad_infer}
#define BINARY_GRAD(name)                                                                   \
  {.type = (name), .inputs = bg_in, .n_inputs = 3, .outputs = bg_out, .n_outputs = 2,       \
   .flags = CT_OP_PURE_INFER, .infer_shape = ct__math_binary_grad_infer}
#define BINARY(name, infer, g)                                                             \
  {.type = (name), .inputs = ct__slot_xy, .n_inputs = 2, .outputs = ct__slot_out,          \
   .n_outputs = 1, .flags = CT_OP_PURE_INFER, .infer_shape = (infer), .grad = (g)}

static const ct_op_def defs[] = {
    UNARY("sqrt", NULL, 0, ct__grad_unary),
    UNARY("reciprocal", NULL, 0, ct__grad_unary),
    UNARY("floor", NULL, 0, ct__grad_none),
    UNARY("ceil", NULL, 0, ct__grad_none),
    UNARY("round", NULL, 0, ct__grad_none),
    UNARY("sign", NULL, 0, ct__grad_none),
    UNARY("abs", NULL, 0, ct__grad_unary),
    UNARY("neg", NULL, 0, ct__grad_unary),
    UNARY("erf", NULL, 0, ct__grad_unary),
    UNARY("sin", NULL, 0, ct__grad_unary),
    UNARY("cos", NULL, 0, ct__grad_unary),
    UNARY("tan", NULL, 0, ct__grad_unary),
    UNARY("asin", NULL, 0, ct__grad_unary),
    UNARY("acos", NULL, 0, ct__grad_unary),
    UNARY("atan", NULL, 0, ct__grad_unary),
    UNARY("sinh", NULL, 0, ct__grad_unary),
    UNARY("cosh", NULL, 0, ct__grad_unary),
    UNARY("asinh", NULL, 0, ct__grad_unary),
    UNARY("acosh", NULL, 0, ct__grad_unary),
    UNARY("atanh", NULL, 0, ct__grad_unary),
    UNARY("softplus", NULL, 0, ct__grad_unary),
    UNARY("softsign", NULL, 0, ct__grad_unary),
    UNARY("selu", selu_attrs, 2, ct__grad_unary),
    UNARY("elu", alpha1_attrs, 1, ct__grad_unary),
    UNARY("celu", alpha1_attrs, 1, ct__grad_unary),
    UNARY("leaky_relu", leaky_attrs, 1, ct__grad_unary),
    UNARY("hard_sigmoid", hsig_attrs, 2, ct__grad_unary),
    UNARY("hard_swish", hswish_attrs, 3, ct__grad_unary),
    UNARY("thresholded_relu", trelu_attrs, 1, ct__grad_unary),
    UNARY("shrink", shrink_attrs, 2, ct__grad_unary),
    UNARY("isinf", isinf_attrs, 2, NULL),
    UNARY("isnan", NULL, 0, NULL),
    UNARY("logical_not", NULL, 0, NULL),
    BINARY("elementwise_max", bin_infer, ct__grad_binary),
    BINARY("elementwise_min", bin_infer, ct__grad_binary),
    BINARY("elementwise_pow", pow_infer, ct__grad_binary),
    BINARY("elementwise_mod", bin_infer, NULL),
    BINARY("elementwise_fmod", bin_infer, NULL),
    BINARY("bitwise_left_shift", bin_infer, NULL),
    BINARY("bitwise_right_shift", bin_infer, NULL),
    BINARY("equal", bin_infer, NULL),
    BINARY("not_equal", bin_infer, NULL),
    BINARY("less_than", bin_infer, NULL),
    BINARY("less_equal", bin_infer, NULL),
    BINARY("greater_than", bin_infer, NULL),
    BINARY("greater_equal", bin_infer, NULL),
    BINARY("logical_and", bin_infer, NULL),
    BINARY("logical_or", bin_infer, NULL),
    BINARY("logical_xor", bin_infer, NULL),
    {.type = "where", .inputs = where_in, .n_inputs = 3, .outputs = ct__slot_out,
     .n_outputs = 1, .flags = CT_OP_PURE_INFER, .infer_shape = where_infer,
     .grad = ct__grad_where},
    {.type = "clip", .inputs = clip_in, .n_inputs = 3, .outputs = ct__slot_out, .n_outputs = 1,
     .attrs = clip_attrs, .n_attrs = 2, .flags = CT_OP_PURE_INFER, .infer_shape = clip_infer,
     .grad = ct__grad_clip},
    {.type = "prelu", .inputs = prelu_in, .n_inputs = 2, .outputs = ct__slot_out,
     .n_outputs = 1, .flags = CT_OP_PURE_INFER, .infer_shape = prelu_infer,
     .grad = ct__grad_prelu},
    {.type = "cast_like", .inputs = cast_like_in, .n_inputs = 2, .outputs = ct__slot_out,
     .n_outputs = 1, .flags = CT_OP_PURE_INFER, .infer_shape = ct__same_dims_infer,
     .grad = NULL},
    /* The gradients (ops/defs/math_grad.c). */
    UNARY_GRAD("sqrt_grad", NULL, 0),
    UNARY_GRAD("reciprocal_grad", NULL, 0),
    UNARY_GRAD("abs_grad", NULL, 0),
    UNARY_GRAD("neg_grad", NULL, 0),
    UNARY_GRAD("erf_grad", NULL, 0),
    UNARY_GRAD("sin_grad", NULL, 0),
    UNARY_GRAD("cos_grad", NULL, 0),
    UNARY_GRAD("tan_grad", NULL, 0),
    UNARY_GRAD("asin_grad", NULL, 0),
    UNARY_GRAD("acos_grad", NULL, 0),
    UNARY_GRAD("atan_grad", NULL, 0),
    UNARY_GRAD("sinh_grad", NULL, 0),
    UNARY_GRAD("cosh_grad", NULL, 0),
    UNARY_GRAD("asinh_grad", NULL, 0),
    UNARY_GRAD("acosh_grad", NULL, 0),
    UNARY_GRAD("atanh_grad", NULL, 0),
    UNARY_GRAD("softplus_grad", NULL, 0),
    UNARY_GRAD("softsign_grad", NULL, 0),
    UNARY_GRAD("selu_grad", selu_attrs, 2),
    UNARY_GRAD("elu_grad", alpha1_attrs, 1),
    UNARY_GRAD("celu_grad", alpha1_attrs, 1),
    UNARY_GRAD("leaky_relu_grad", leaky_attrs, 1),
    UNARY_GRAD("hard_sigmoid_grad", hsig_attrs, 2),
    UNARY_GRAD("hard_swish_grad", hswish_attrs, 3),
    UNARY_GRAD("thresholded_relu_grad", trelu_attrs, 1),
    UNARY_GRAD("shrink_grad", shrink_attrs, 2),
    BINARY_GRAD("elementwise_max_grad"),
    BINARY_GRAD("elementwise_min_grad"),
    BINARY_GRAD("elementwise_pow_grad"),
    {.type = "where_grad", .inputs = where_g_in, .n_inputs = 4, .outputs = bg_out,
     .n_outputs = 2, .flags = CT_OP_PURE_INFER, .infer_shape = ct__where_grad_infer},
    {.type = "clip_grad", .inputs = clip_g_in, .n_inputs = 4, .outputs = ug_out,
     .n_outputs = 1, .attrs = clip_attrs, .n_attrs = 2, .flags = CT_OP_PURE_INFER,
     .infer_shape = ct__clip_grad_infer},
    {.type = "prelu_grad", .inputs = prelu_g_in, .n_inputs = 3, .outputs = prelu_g_out,
     .n_outputs = 2, .flags = CT_OP_PURE_INFER, .infer_shape = ct__prelu_grad_infer},
};

const ct__def_table ct__math_defs = CT__TABLE(defs);

/* What the types compute (ct_op_type_doc, `corten ops`). */
#define DOC_F " elementwise; Out has X's dims and dtype (computed in float64, rounded once)."
#define DOC_BC                                                                                \
  " X and Y broadcast NumPy-style (dims aligned at the end, each pair equal or one of them 1); " \
  "Out has the broadcast dims"
#define DOC_CMP                                                                               \
  " elementwise: X and Y have one dtype and are compared exactly." DOC_BC ", bool. A NaN is "   \
  "unequal to everything (not_equal true, the other comparisons false)."
#define DOC_LOGIC " for bool X and Y (any nonzero byte is true)." DOC_BC ", bool."

static const ct__op_doc docs[] = {
    {"sqrt", "`Out = sqrt(X)`" DOC_F " A negative X gives NaN."},
    {"reciprocal", "`Out = 1 / X`" DOC_F " A zero gives an infinity of its sign."},
    {"floor", "`Out = floor(X)`, rounding toward -inf, elementwise; Out has X's dims and dtype."},
    {"ceil", "`Out = ceil(X)`, rounding toward +inf, elementwise; Out has X's dims and dtype."},
    {"round", "`Out = round(X)` to the nearest integer, halves to even (2.5 gives 2, -0.5 -0), "
              "elementwise; Out has X's dims and dtype."},
    {"sign", "`Out = sign(X)`: 1 where X > 0, -1 where X < 0, X itself elsewhere (0, -0, NaN); "
             "Out has X's dims and dtype, integers included."},
    {"abs", "`Out = |X|` elementwise; Out has X's dims and dtype. Integers are computed in int64 "
            "and wrap back, so the smallest value of a signed dtype stays itself."},
    {"neg", "`Out = -X` elementwise; Out has X's dims and dtype. Integers wrap: the smallest "
            "value of a signed dtype stays itself (-(-128) is -128 in int8)."},
    {"erf", "`Out = erf(X)`, the Gauss error function, elementwise; Out has X's dims and dtype "
            "(float32 in float from polynomials, within 0.83 ulp of erf: the expression engine's "
            "and fuse_elementwise's ERF; float16 and float64 in float64, rounded once)."},
    {"sin", "`Out = sin(X)` (radians)" DOC_F},
    {"cos", "`Out = cos(X)` (radians)" DOC_F},
    {"tan", "`Out = tan(X)` (radians)" DOC_F},
    {"asin", "`Out = asin(X)` in radians" DOC_F " X outside [-1, 1] gives NaN."},
    {"acos", "`Out = acos(X)` in radians" DOC_F " X outside [-1, 1] gives NaN."},
    {"atan", "`Out = atan(X)` in radians" DOC_F},
    {"sinh", "`Out = sinh(X)`" DOC_F},
    {"cosh", "`Out = cosh(X)`" DOC_F},
    {"asinh", "`Out = asinh(X)`" DOC_F},
    {"acosh", "`Out = acosh(X)`" DOC_F " X below 1 gives NaN."},
    {"atanh", "`Out = atanh(X)`" DOC_F " X of -1 or 1 gives -inf or inf, beyond them NaN."},
    {"softplus", "`Out = ln(1 + e^X)`, computed as `max(X, 0) + log1p(e^-|X|)` so that it never "
                 "overflows," DOC_F},
    {"softsign", "`Out = X / (1 + |X|)`" DOC_F},
    {"selu", "`Out = scale * (X > 0 ? X : alpha * (e^X - 1))`, by default with the self-"
             "normalising constants (scale 1.0507..., alpha 1.6732...)," DOC_F},
    {"elu", "`Out = X > 0 ? X : alpha * (e^X - 1)` (alpha 1 by default)" DOC_F},
    {"celu", "`Out = max(0, X) + min(0, alpha * (e^(X / alpha) - 1))` (alpha 1 by default)" DOC_F},
    {"leaky_relu", "`Out = X >= 0 ? X : alpha * X` (alpha 0.02 by default, PaddlePaddle's; the "
                   "ONNX importer passes LeakyRelu's own, 0.01 unless given)" DOC_F},
    {"hard_sigmoid", "`Out = max(0, min(1, slope * X + offset))` (slope 0.2 and offset 0.5 by "
                     "default)" DOC_F},
    {"hard_swish", "`Out = X * min(max(X + offset, 0), threshold) / scale` (offset 3, threshold "
                   "6 and scale 6 by default)" DOC_F},
    {"thresholded_relu", "`Out = X > threshold ? X : 0` (threshold 1 by default)" DOC_F},
    {"shrink", "`Out = X < -lambda ? X + bias : X > lambda ? X - bias : 0` (lambda 0.5 and bias "
               "0 by default)" DOC_F},
    {"isinf", "`Out = isinf(X)` for float X: true where X is +inf (counted when detect_positive) "
              "or -inf (when detect_negative), both counted by default; Out is bool of X's "
              "dims."},
    {"isnan", "`Out = isnan(X)` for float X: true where X is NaN; Out is bool of X's dims."},
    {"logical_not", "`Out = !X` for bool X (any nonzero byte is true); Out is bool of X's dims."},
    {"elementwise_max", "`Out = max(X, Y)` elementwise; a NaN in either input gives NaN (NumPy's "
                        "maximum). X and Y have one dtype." DOC_BC " and X's dtype."},
    {"elementwise_min", "`Out = min(X, Y)` elementwise; a NaN in either input gives NaN (NumPy's "
                        "minimum). X and Y have one dtype." DOC_BC " and X's dtype."},
    {"elementwise_pow", "`Out = X ^ Y` elementwise; Y may have any integer or float dtype." DOC_BC
                        " and X's dtype. Float X: C's pow in float64, rounded once (a power of 2 "
                        "as `X * X` in float64: the correctly rounded square). Integer X "
                        "and Y: exact, wrapping on overflow, a negative power truncating `1 / "
                        "X^-Y` (1, -1 or 0), 0 to a negative power refused "
                        "(CT_ERR_INVALID_ARGUMENT); integer X and float Y: pow in float64, "
                        "truncated toward zero and saturated into X's dtype (NaN gives 0)."},
    {"elementwise_mod", "`Out = X mod Y` elementwise, the remainder taking Y's sign as Python's % "
                        "(`-7 mod 3 = 2`, `7 mod -3 = -2`; a float remainder of 0 keeps X's "
                        "sign, as PaddlePaddle's does); ONNX Mod with fmod 0. X and Y have "
                        "one dtype." DOC_BC " and X's dtype. An integer Y holding 0 anywhere is "
                        "refused (CT_ERR_INVALID_ARGUMENT) before Out is written; a float Y of 0 "
                        "gives NaN."},
    {"elementwise_fmod", "`Out = fmod(X, Y)` elementwise, the remainder taking X's sign as C's "
                         "fmod and % (`-7 fmod 3 = -1`); ONNX Mod with fmod 1. X and Y have one "
                         "dtype." DOC_BC " and X's dtype. An integer Y holding 0 anywhere is "
                         "refused (CT_ERR_INVALID_ARGUMENT) before Out is written; a float Y of 0 "
                         "gives NaN."},
    {"bitwise_left_shift", "`Out = X << Y` for unsigned integer X and Y of one dtype: bits "
                           "shifted past the width are dropped, and a shift by the width or more "
                           "gives 0 (ONNX BitShift LEFT)." DOC_BC " and X's dtype."},
    {"bitwise_right_shift", "`Out = X >> Y` for unsigned integer X and Y of one dtype: a shift "
                            "by the width or more gives 0 (ONNX BitShift RIGHT)." DOC_BC
                            " and X's dtype."},
    {"equal", "`Out = X == Y`" DOC_CMP},
    {"not_equal", "`Out = X != Y`" DOC_CMP},
    {"less_than", "`Out = X < Y`" DOC_CMP},
    {"less_equal", "`Out = X <= Y`" DOC_CMP},
    {"greater_than", "`Out = X > Y`" DOC_CMP},
    {"greater_equal", "`Out = X >= Y`" DOC_CMP},
    {"logical_and", "`Out = X && Y`" DOC_LOGIC},
    {"logical_or", "`Out = X || Y`" DOC_LOGIC},
    {"logical_xor", "`Out = X != Y` as truth values" DOC_LOGIC},
    {"where", "`Out = Condition ? X : Y` elementwise: Condition bool (any nonzero byte is true), "
              "X and Y of one dtype (any); the three broadcast NumPy-style (dims aligned at the "
              "end, each triple equal or 1), and Out has the broadcast dims and X's dtype."},
    {"prelu", "`Out = X >= 0 ? X : Alpha * X` elementwise, Alpha of X's dtype broadcast to X's "
              "dims (aligned at the end: a per-channel slope of NCHW X is [C, 1, 1]; dims that "
              "would grow X are refused); Out has X's dims and dtype."},
    {"cast_like", "`Out = X` converted to Like's dtype with cast's rules (floats to integers "
                  "truncate toward zero and saturate, NaN gives 0; integers saturate; to bool is "
                  "`X != 0`); Out has X's dims. Only Like's dtype is read, not its values (ONNX "
                  "CastLike)."},
    {"clip", "`Out = min(max(X, min), max)` elementwise, so min > max gives max and a NaN X stays "
             "NaN. The bounds are inputs Min and Max when wired (one element of X's dtype each, "
             "read on the host when the op runs), else attributes min and max (default -inf and "
             "+inf: no bound; NaN refused); for an integer X an attribute bound is rounded inward "
             "(min up, max down). Out has X's dims and dtype."},
};

#undef DOC_F
#undef DOC_BC
#undef DOC_CMP
#undef DOC_LOGIC

const ct__doc_table ct__math_docs = CT__TABLE(docs);
