/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/export_nn.c: the standard mappings that need more than copying attributes, each written
 * so that the import rule makes the very same op back (else the op goes to ai.corten):
 *   conv2d  -> Conv: pads (top, bottom, left, right) as ONNX's (top, left, bottom, right), a
 *              2-value paddings (height, width) as its 4-value form, which the import makes;
 *              padding_algorithm EXPLICIT / VALID / SAME / SAME_LOWER as auto_pad NOTSET / VALID
 *              / SAME_UPPER / SAME_LOWER (the last three with zero paddings);
 *   pool2d  -> MaxPool / AveragePool (only where onnx/rules_pool.c imports pool2d back, its
 *              pool2d_exact conditions) or GlobalMaxPool / GlobalAveragePool;
 *   matmul with transpose_x or transpose_y -> Gemm (both operands 2-D in the scope);
 *   clip    -> Clip with min and max as scalar constants of X's dtype (float32 or float64, X's
 *              tensor in the scope saying which), or the Min / Max variables;
 *   conv_integer, qlinear_conv -> ConvInteger, QLinearConv (as conv2d, ONNX's inputs in order);
 *   conv_nd -> Conv (its attributes ONNX's own);
 *   matmul_integer, qlinear_matmul, dynamic_quantize_linear, dft, stft -> MatMulInteger,
 *              QLinearMatMul, DynamicQuantizeLinear, DFT, STFT (slots in ONNX's order, int
 *              attributes copied). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <corten/program.h>

#include "onnx/onnx_save.h"

static int attr_at(const ex_op *op, const char *name) {
  for (size_t a = 0; a < op->def->n_attr; a++) {
    if (strcmp(op->def->attr[a].name, name) == 0) return (int)a;
  }
  return -1;
}

/* Attribute name's value; marks it used. */
static const ct_attr_value *use(const ex_op *op, const char *name, bool *used) {
  int a = attr_at(op, name);
  if (a < 0) return NULL;
  used[a] = true;
  return &op->attr[a];
}

/* Slot name's single wired name (NULL when unwired or many); *n its count. */
static const char *one_in(const ex_op *op, const char *slot, size_t *n) {
  for (size_t s = 0; s < op->def->n_in; s++) {
    if (strcmp(op->def->in[s].name, slot) != 0) continue;
    *n = op->in[s].n;
    return op->in[s].n == 1 ? op->in[s].names[0] : NULL;
  }
  *n = 0;
  return NULL;
}

static const char *one_out(const ex_op *op) {
  return op->def->n_out == 1 && op->out[0].n == 1 ? op->out[0].names[0] : NULL;
}

static bool ints_of(const ct_attr_value *v, size_t n) {
  return v != NULL && v->type == CT_ATTR_INTS && v->u.ints.n == n;
}

/* The paddings attribute as (top, bottom, left, right): 4 values as they are, 2 (height, width)
 * as both sides alike, which is what conv2d and pool2d read them as; false for other counts. The
 * import writes the 4-value form, which computes the same. */
static bool pads4(const ct_attr_value *v, int64_t out[4]) {
  if (v == NULL || v->type != CT_ATTR_INTS || (v->u.ints.n != 2 && v->u.ints.n != 4)) return false;
  for (int k = 0; k < 4; k++) out[k] = v->u.ints.n == 4 ? v->u.ints.v[k] : v->u.ints.v[k / 2];
  return true;
}

static bool all_zero(const ct_attr_value *v) {
  for (size_t k = 0; k < v->u.ints.n; k++) {
    if (v->u.ints.v[k] != 0) return false;
  }
  return true;
}

/* The tensor of variable name in the scope, or NULL. */
static const ct_tensor *tensor(const ex_cx *x, const char *name) {
  ct_var *v = x->scope ? ct_scope_find_var(x->scope, name) : NULL;
  const ct_tensor *t = v ? ct_var_get_tensor(v) : NULL;
  ct_clear_error();
  return t;
}

/* The names of op's slots `slots` (n of them, the ONNX node's inputs in order) into names (an
 * unwired slot "", left out) and how many to write (up to the last wired one), into *kept;
 * false when a slot holds more than one name, a required one (the first `required`) none, or a
 * slot not listed is wired. */
static bool listed_ins(const ex_op *op, const char *const *slots, size_t n, size_t required,
                       const char **names, size_t *kept) {
  size_t listed = 0;
  *kept = 0;
  for (size_t k = 0; k < n; k++) {
    size_t count;
    const char *name = one_in(op, slots[k], &count);
    if (count > 1 || (count == 0 && k < required)) return false;
    names[k] = name != NULL ? name : "";
    if (name != NULL) *kept = k + 1;
    listed += count;
  }
  size_t wired = 0;
  for (size_t s = 0; s < op->def->n_in; s++) wired += op->in[s].n;
  return wired == listed;
}

/* conv2d as Conv, conv_integer as ConvInteger and qlinear_conv as QLinearConv (ONNX's inputs
 * in their order: `slots`, the first `required` of them required): conv2d's attributes as
 * Conv's. */
static ct_status conv_like(ex_cx *x, const ex_op *op, const char *type,
                           const char *const *slots, size_t n, size_t required, bool *done) {
  bool used[64] = {false};
  const char *in[9], *out = one_out(op);
  size_t kept;
  if (n > 9 || !listed_ins(op, slots, n, required, in, &kept)) return CT_OK;
  const ct_attr_value *st = use(op, "strides", used), *pd = use(op, "paddings", used);
  const ct_attr_value *dl = use(op, "dilations", used), *gr = use(op, "groups", used);
  const ct_attr_value *al = use(op, "padding_algorithm", used);
  int64_t p[4];
  if (out == NULL || !ints_of(st, 2) || !pads4(pd, p) ||
      !ints_of(dl, 2) || gr == NULL || al == NULL || !ex_attrs_default(op, used)) {
    return CT_OK;
  }
  const char *algo = al->u.s, *auto_pad = NULL;
  if (strcmp(algo, "VALID") == 0) auto_pad = "VALID";
  else if (strcmp(algo, "SAME") == 0) auto_pad = "SAME_UPPER";
  else if (strcmp(algo, "SAME_LOWER") == 0) auto_pad = "SAME_LOWER";
  else if (strcmp(algo, "EXPLICIT") != 0) return CT_OK;
  if (auto_pad != NULL && !all_zero(pd)) return CT_OK;
  const int64_t pads[4] = {p[0], p[2], p[1], p[3]};
  ex_node nd;
  ex_node_begin(&nd, x, type, NULL, in, kept, &out, 1);
  ex_attr_ints(&nd, "strides", st->u.ints.v, 2);
  ex_attr_ints(&nd, "dilations", dl->u.ints.v, 2);
  ex_attr_int(&nd, "group", gr->u.i);
  if (auto_pad != NULL) ex_attr_str(&nd, "auto_pad", auto_pad);
  else ex_attr_ints(&nd, "pads", pads, 4);
  ex_node_end(&nd);
  *done = true;
  return CT_OK;
}

/* conv_nd -> Conv: its attributes are ONNX's own (lists copied when given, groups as group,
 * auto_pad when not NOTSET). */
static ct_status conv_nd(ex_cx *x, const ex_op *op, bool *done) {
  static const char *const slots[] = {"X", "W", "B"}, *const lists[] = {"strides", "pads",
                                                                        "dilations",
                                                                        "kernel_shape"};
  bool used[64] = {false};
  const char *in[3], *out = one_out(op);
  size_t kept;
  const ct_attr_value *l[4], *gr = use(op, "groups", used), *ap = use(op, "auto_pad", used);
  for (int k = 0; k < 4; k++) l[k] = use(op, lists[k], used);
  if (out == NULL || !listed_ins(op, slots, 3, 2, in, &kept) || gr == NULL || ap == NULL ||
      !ex_attrs_default(op, used)) {
    return CT_OK;
  }
  for (int k = 0; k < 4; k++) {
    if (l[k] == NULL || l[k]->type != CT_ATTR_INTS) return CT_OK;
  }
  ex_node nd;
  ex_node_begin(&nd, x, "Conv", NULL, in, kept, &out, 1);
  for (int k = 0; k < 4; k++) {
    if (l[k]->u.ints.n > 0) ex_attr_ints(&nd, lists[k], l[k]->u.ints.v, l[k]->u.ints.n);
  }
  ex_attr_int(&nd, "group", gr->u.i);
  if (ap->u.s[0] != '\0' && strcmp(ap->u.s, "NOTSET") != 0) ex_attr_str(&nd, "auto_pad", ap->u.s);
  ex_node_end(&nd);
  *done = true;
  return CT_OK;
}

/* An op whose ONNX form is its slots in ONNX's order and int attributes of the same names:
 * matmul_integer, qlinear_matmul, dynamic_quantize_linear, dft, stft. */
typedef struct plain_row {
  const char *type, *onnx;
  const char *in[9];
  size_t n_in, required;
  const char *out[3];
  size_t n_out;
  const char *ints[3]; /* int attributes copied under their own names */
} plain_row;

static const plain_row plain_rows[] = {
    {"matmul_integer", "MatMulInteger", {"X", "Y", "XZeroPoint", "YZeroPoint"}, 4, 2, {"Out"}, 1,
     {NULL}},
    {"qlinear_matmul", "QLinearMatMul",
     {"X", "XScale", "XZeroPoint", "Y", "YScale", "YZeroPoint", "OutScale", "OutZeroPoint"}, 8,
     8, {"Out"}, 1, {NULL}},
    {"dynamic_quantize_linear", "DynamicQuantizeLinear", {"X"}, 1, 1,
     {"Y", "YScale", "YZeroPoint"}, 3, {NULL}},
    {"dft", "DFT", {"X", "DftLength"}, 2, 1, {"Y"}, 1, {"axis", "inverse", "onesided"}},
    {"stft", "STFT", {"Signal", "FrameStep", "Window", "FrameLength"}, 4, 2, {"Y"}, 1,
     {"onesided"}},
};

static ct_status plain(ex_cx *x, const ex_op *op, const plain_row *r, bool *done) {
  const char *in[9], *out[3];
  size_t kept;
  bool used[64] = {false};
  const ct_attr_value *iv[3] = {NULL, NULL, NULL};
  for (int k = 0; k < 3 && r->ints[k] != NULL; k++) {
    if ((iv[k] = use(op, r->ints[k], used)) == NULL || iv[k]->type != CT_ATTR_INT) return CT_OK;
  }
  if (!listed_ins(op, r->in, r->n_in, r->required, in, &kept) || !ex_attrs_default(op, used) ||
      op->def->n_out != r->n_out) {
    return CT_OK;
  }
  for (size_t k = 0; k < r->n_out; k++) {
    if (strcmp(op->def->out[k].name, r->out[k]) != 0 || op->out[k].n != 1) return CT_OK;
    out[k] = op->out[k].names[0];
  }
  ex_node nd;
  ex_node_begin(&nd, x, r->onnx, NULL, in, kept, out, r->n_out);
  for (int k = 0; k < 3 && r->ints[k] != NULL; k++) ex_attr_int(&nd, r->ints[k], iv[k]->u.i);
  ex_node_end(&nd);
  *done = true;
  return CT_OK;
}

static ct_status pool2d(ex_cx *x, const ex_op *op, bool *done) {
  bool used[64] = {false};
  size_t n;
  const char *in = one_in(op, "X", &n), *out = one_out(op);
  const ct_attr_value *ty = use(op, "pooling_type", used), *gl = use(op, "global_pooling", used);
  if (in == NULL || out == NULL || ty == NULL || gl == NULL) return CT_OK;
  bool max = strcmp(ty->u.s, "max") == 0;
  if (!max && strcmp(ty->u.s, "avg") != 0) return CT_OK;
  if (gl->u.b) {
    if (!ex_attrs_default(op, used)) return CT_OK;
    /* pool2d pools 1-D, 2-D and 3-D planes globally (X of rank 3 to 5), as ONNX's ops do */
    const ct_tensor *t = tensor(x, in);
    int rank = t != NULL ? ct_tensor_dims(t).rank : -1;
    if (rank >= 0 && (rank < 3 || rank > 5)) return CT_OK;
    ex_node nd;
    ex_node_begin(&nd, x, max ? "GlobalMaxPool" : "GlobalAveragePool", NULL, &in, 1, &out, 1);
    ex_node_end(&nd);
    *done = true;
    return CT_OK;
  }
  const ct_attr_value *ks = use(op, "ksize", used), *st = use(op, "strides", used);
  const ct_attr_value *pd = use(op, "paddings", used), *al = use(op, "padding_algorithm", used);
  const ct_attr_value *ex = use(op, "exclusive", used), *ce = use(op, "ceil_mode", used);
  int64_t p[4];
  if (!ints_of(ks, 2) || !ints_of(st, 2) || !pads4(pd, p) || al == NULL || ex == NULL ||
      ce == NULL || !ex_attrs_default(op, used) || (max && !ex->u.b)) {
    return CT_OK;
  }
  const char *auto_pad = NULL;
  if (strcmp(al->u.s, "VALID") == 0) auto_pad = "VALID";
  else if (strcmp(al->u.s, "SAME") == 0) auto_pad = "SAME_UPPER";
  else if (strcmp(al->u.s, "EXPLICIT") != 0) return CT_OK;
  if (auto_pad != NULL && !all_zero(pd)) return CT_OK;
  /* onnx/rules_pool.c's pool2d_exact, so the import makes pool2d (not pool_nd) again */
  const int64_t *k = ks->u.ints.v, *s = st->u.ints.v;
  bool ceil = ce->u.b, incl = !max && !ex->u.b;
  if (ceil && (auto_pad != NULL || incl)) return CT_OK;
  for (int i = 0; i < 2; i++) {
    int64_t pb = p[2 * i], pe = p[2 * i + 1];
    if (auto_pad == NULL && (pb >= k[i] || pe >= k[i])) return CT_OK;
    if (ceil && s[i] > k[i] - pe) return CT_OK;
  }
  const int64_t pads[4] = {p[0], p[2], p[1], p[3]};
  ex_node nd;
  ex_node_begin(&nd, x, max ? "MaxPool" : "AveragePool", NULL, &in, 1, &out, 1);
  ex_attr_ints(&nd, "kernel_shape", k, 2);
  ex_attr_ints(&nd, "strides", s, 2);
  if (auto_pad != NULL) ex_attr_str(&nd, "auto_pad", auto_pad);
  else ex_attr_ints(&nd, "pads", pads, 4);
  if (ceil) ex_attr_int(&nd, "ceil_mode", 1);
  if (incl) ex_attr_int(&nd, "count_include_pad", 1);
  ex_node_end(&nd);
  *done = true;
  return CT_OK;
}

static ct_status gemm(ex_cx *x, const ex_op *op, bool *done) {
  bool used[64] = {false};
  size_t nx, ny;
  const char *in[2] = {one_in(op, "X", &nx), one_in(op, "Y", &ny)}, *out = one_out(op);
  const ct_attr_value *tx = use(op, "transpose_x", used), *ty = use(op, "transpose_y", used);
  if (in[0] == NULL || in[1] == NULL || out == NULL || tx == NULL || ty == NULL ||
      !ex_attrs_default(op, used)) {
    return CT_OK;
  }
  for (int k = 0; k < 2; k++) {
    const ct_tensor *t = tensor(x, in[k]);
    if (t == NULL || ct_tensor_dims(t).rank != 2) return CT_OK;
  }
  ex_node nd;
  ex_node_begin(&nd, x, "Gemm", NULL, in, 2, &out, 1);
  if (tx->u.b) ex_attr_int(&nd, "transA", 1);
  if (ty->u.b) ex_attr_int(&nd, "transB", 1);
  ex_node_end(&nd);
  *done = true;
  return CT_OK;
}

static ct_status clip(ex_cx *x, const ex_op *op, bool *done) {
  bool used[64] = {false};
  size_t n, nmin, nmax;
  const char *xin = one_in(op, "X", &n), *out = one_out(op);
  const char *mins = one_in(op, "Min", &nmin), *maxs = one_in(op, "Max", &nmax);
  const ct_attr_value *lo = use(op, "min", used), *hi = use(op, "max", used);
  const ct_tensor *t = xin ? tensor(x, xin) : NULL;
  if (xin == NULL || out == NULL || lo == NULL || hi == NULL) return CT_OK;
  /* X's dtype from its tensor; float32 when the scope holds none yet (the load reads either
   * back exactly; onnxruntime needs min and max of X's dtype) */
  ct_dtype dt = t != NULL ? ct_tensor_dtype(t) : CT_DTYPE_UNDEFINED;
  if (dt == CT_DTYPE_UNDEFINED) dt = CT_FLOAT32;
  char names[2][64] = {"", ""};
  const ct_attr_value *v[2] = {lo, hi};
  const char *wired[2] = {mins, maxs};
  size_t counts[2] = {nmin, nmax};
  double dflt[2] = {-INFINITY, INFINITY};
  for (int k = 0; k < 2; k++) {
    if (counts[k] > 1) return CT_OK;
    if (wired[k] != NULL) {
      if (memcmp(&v[k]->u.f, &dflt[k], sizeof dflt[k]) != 0) return CT_OK; /* slot wins */
      snprintf(names[k], sizeof names[k], "%s", wired[k]);
    } else if (memcmp(&v[k]->u.f, &dflt[k], sizeof dflt[k]) != 0) {
      if (dt != CT_FLOAT32 && dt != CT_FLOAT64) return CT_OK;
      float f = (float)v[k]->u.f;
      if (dt == CT_FLOAT32 && (double)f != v[k]->u.f) return CT_OK;
    }
  }
  for (int k = 0; k < 2; k++) {
    if (wired[k] == NULL && memcmp(&v[k]->u.f, &dflt[k], sizeof dflt[k]) != 0) {
      snprintf(names[k], sizeof names[k], "%s", ex_const_scalar(x, out, v[k]->u.f, dt));
    }
  }
  const char *in[3] = {xin, names[0], names[1]};
  ex_node nd;
  ex_node_begin(&nd, x, "Clip", NULL, in, names[1][0] ? 3 : names[0][0] ? 2 : 1, &out, 1);
  ex_node_end(&nd);
  *done = true;
  return CT_OK;
}

/* Whether an op of the program reads name. */
static bool read_anywhere(const ex_cx *x, const char *name) {
  for (size_t i = 0; i < ct_program_size(x->prog); i++) {
    const ct_op *op = ct_program_op(x->prog, i);
    ct_op_def d;
    if (ct_op_type_get(ct_op_type(op), &d) != CT_OK) return true;
    for (size_t s = 0; s < d.n_inputs; s++) {
      for (size_t k = 0; k < ct_op_input_count(op, d.inputs[s].name); k++) {
        if (strcmp(ct_op_input(op, d.inputs[s].name, k), name) == 0) return true;
      }
    }
  }
  return false;
}

/* layer_norm -> LayerNormalization (axis, epsilon; Mean and Variance read by no op, epsilon
 * exact in float32). The import reshapes Scale and Bias to [-1] first: a copy of the same
 * values, so the loaded program computes the same bits with two more ops. */
static ct_status layer_norm(ex_cx *x, const ex_op *op, bool *done) {
  bool used[64] = {false};
  size_t nx, ns, nb;
  const char *in[3] = {one_in(op, "X", &nx), one_in(op, "Scale", &ns), one_in(op, "Bias", &nb)};
  const ct_attr_value *ax = use(op, "begin_norm_axis", used), *ep = use(op, "epsilon", used);
  if (in[0] == NULL || in[1] == NULL || nb > 1 || ax == NULL || ep == NULL ||
      op->def->n_out != 3 || op->out[0].n != 1 || !ex_attrs_default(op, used) ||
      (double)(float)ep->u.f != ep->u.f) {
    return CT_OK;
  }
  for (size_t s = 1; s < 3; s++) {
    if (op->out[s].n > 1 || (op->out[s].n == 1 && read_anywhere(x, op->out[s].names[0]))) {
      return CT_OK;
    }
  }
  const char *out = op->out[0].names[0];
  ex_node nd;
  ex_node_begin(&nd, x, "LayerNormalization", NULL, in, nb ? 3 : 2, &out, 1);
  ex_attr_int(&nd, "axis", ax->u.i);
  ex_attr_float(&nd, "epsilon", (float)ep->u.f);
  ex_node_end(&nd);
  *done = true;
  return CT_OK;
}

/* constant_of_shape -> ConstantOfShape: value a one-element tensor of dtype holding `value`
 * exactly (float32, float64, int32, int64 within 2^53, bool). */
static ct_status constant_of_shape(ex_cx *x, const ex_op *op, bool *done) {
  bool used[64] = {false};
  size_t n;
  const char *shape = one_in(op, "ShapeTensor", &n), *out = one_out(op);
  const ct_attr_value *sh = use(op, "shape", used), *va = use(op, "value", used);
  const ct_attr_value *dt = use(op, "dtype", used);
  if (out == NULL || sh == NULL || va == NULL || dt == NULL || n > 1 ||
      !ex_attrs_default(op, used)) {
    return CT_OK;
  }
  if (shape != NULL && sh->u.ints.n != 0) return CT_OK;
  if (shape == NULL && sh->u.ints.n == 0) return CT_OK;
  double v = va->u.f;
  union { float f; double d; int32_t i32; int64_t i64; bool b; } u;
  size_t bytes;
  switch ((ct_dtype)dt->u.i) {
    case CT_FLOAT32: u.f = (float)v, bytes = 4; if ((double)u.f != v) return CT_OK; break;
    case CT_FLOAT64: u.d = v, bytes = 8; break;
    case CT_INT32:
      if (!(v >= -2147483648.0 && v <= 2147483647.0) || v != (double)(int32_t)v) return CT_OK;
      u.i32 = (int32_t)v, bytes = 4;
      break;
    case CT_INT64:
      if (!(v >= -9007199254740992.0 && v <= 9007199254740992.0) || v != (double)(int64_t)v) {
        return CT_OK;
      }
      u.i64 = (int64_t)v, bytes = 8;
      break;
    case CT_BOOL: u.b = v != 0, bytes = 1; if (v != 0 && v != 1) return CT_OK; break;
    default: return CT_OK;
  }
  char name[64] = "";
  if (shape == NULL) {
    snprintf(name, sizeof name, "%s", ex_const_ints(x, out, sh->u.ints.v, sh->u.ints.n));
    shape = name;
  }
  ex_node nd;
  ex_node_begin(&nd, x, "ConstantOfShape", NULL, &shape, 1, &out, 1);
  pbw a = {0}, t = {0};
  int64_t one = 1;
  pbw_str(&a, 1, "value");
  ex_tensor(&t, NULL, ex_onnx_dtype((ct_dtype)dt->u.i), &one, 1, &u, bytes);
  pbw_msg(&a, 5, &t);
  pbw_int(&a, 20, 4); /* TENSOR */
  pbw_msg(&nd.body, 5, &a);
  ex_node_end(&nd);
  *done = true;
  return CT_OK;
}

ct_status ex_nn(ex_cx *x, const ex_op *op, bool *done) {
  const char *type = op->def->type;
  *done = false;
  if (op->def->n_attr > 64) return CT_OK;
  static const char *const conv[] = {"Input", "Filter"};
  static const char *const conv_int[] = {"Input", "Filter", "InputZeroPoint", "FilterZeroPoint"};
  static const char *const qconv[] = {"Input",  "InputScale", "InputZeroPoint",
                                      "Filter", "FilterScale", "FilterZeroPoint",
                                      "OutScale", "OutZeroPoint", "Bias"};
  if (strcmp(type, "conv2d") == 0) return conv_like(x, op, "Conv", conv, 2, 2, done);
  if (strcmp(type, "conv_nd") == 0) return conv_nd(x, op, done);
  if (strcmp(type, "conv_integer") == 0) {
    return conv_like(x, op, "ConvInteger", conv_int, 4, 2, done);
  }
  if (strcmp(type, "qlinear_conv") == 0) {
    return conv_like(x, op, "QLinearConv", qconv, 9, 8, done);
  }
  for (size_t r = 0; r < sizeof plain_rows / sizeof plain_rows[0]; r++) {
    if (strcmp(type, plain_rows[r].type) == 0) return plain(x, op, &plain_rows[r], done);
  }
  if (strcmp(type, "pool2d") == 0) return pool2d(x, op, done);
  if (strcmp(type, "matmul") == 0) return gemm(x, op, done);
  if (strcmp(type, "clip") == 0) return clip(x, op, done);
  if (strcmp(type, "layer_norm") == 0) return layer_norm(x, op, done);
  if (strcmp(type, "constant_of_shape") == 0) return constant_of_shape(x, op, done);
  return ex_rnn(x, op, done);
}
