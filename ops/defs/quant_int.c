/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/quant_int.c: the integer products and convolutions of the quant family
 * (ops/defs/quant.h) and dynamic_quantize_linear: their table, the plan the kernels follow
 * (ops/cpu/quant_int.c) and its checks, and their outputs' dims.
 *
 *   matmul_integer           ONNX's MatMulInteger: (X - XZeroPoint) (Y - YZeroPoint) in int32,
 *                            numpy's matmul rules (batch dims broadcast, a rank-1 side a row
 *                            or a column). The sums are exact; one past int32 wraps as the
 *                            reference's int32 arithmetic does.
 *   qlinear_matmul           ONNX's QLinearMatMul: that product C, then
 *                            saturate(round_half_even(C (XScale YScale / OutScale) +
 *                            OutZeroPoint)), the scales' product and quotient in float32 and the
 *                            rest in float64, in the reference's order (the zero point added
 *                            before the rounding).
 *   conv_integer, qlinear_conv
 *                            ONNX's ConvInteger and QLinearConv in 2-D, the same arithmetic on
 *                            conv2d's sums (its attributes and plan), QLinearConv's int32 Bias
 *                            added to the sum before the scaling.
 *   dynamic_quantize_linear  ONNX's DynamicQuantizeLinear: the uint8 quantization of X by the
 *                            range [min(0, min X), max(0, max X)] as the reference computes
 *                            it (a range of 0 gives the scale 1, as onnxruntime does), and its
 *                            scale and zero point.
 *
 * The first operand's zero point and scale are one value (per tensor); the second's one value
 * or one per column of Y (rank 1, Y's last extent) or per output channel of Filter; the
 * output's scale and zero point one value each. Other shapes (ONNX's per-row zero points of X,
 * N-d ones) are refused as unsupported. Zero points have their operand's dtype, int8 or uint8.
 * No gradient. */
#include <stdio.h>

#include "ops/defs/quant.h"

/* Slot `slot`, when wired, holds 1 element (or `alt` when alt > 1), rank 0 or 1, of dtype dt
 * (CT_DTYPE_UNDEFINED: any); *n its count. */
static ct_status count_of(const ct_kernel_ctx *c, size_t slot, int64_t alt, ct_dtype dt,
                          const char *what, int64_t *n) {
  *n = 1;
  if (ct_kernel_in_count(c, slot) == 0) return CT_OK;
  const ct_tensor *t = ct_kernel_in(c, slot, 0);
  const char *name = c->op->def->in[slot].name, *var = ct_kernel_in_name(c, slot, 0);
  if (dt != CT_DTYPE_UNDEFINED && t->dtype != dt) {
    return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH, "input %s variable '%s' is %s: give %s",
                          name, var, ct_dtype_name(t->dtype), ct_dtype_name(dt));
  }
  char d[CT__DDIM_STR_CAP];
  if (t->dims.rank > 1 || (t->numel != 1 && (alt <= 1 || t->numel != alt))) {
    return ct_kernel_fail(c, CT_ERR_UNSUPPORTED, "input %s variable '%s' has dims %s: give %s",
                          name, var, ct_ddim_str(t->dims, d, sizeof d), what);
  }
  *n = t->numel;
  return CT_OK;
}

/* Slot `slot` is int8 or uint8. */
static ct_status byte_dtype(const ct_kernel_ctx *c, size_t slot) {
  ct_dtype t = ct_kernel_in(c, slot, 0)->dtype;
  if (t == CT_INT8 || t == CT_UINT8) return CT_OK;
  return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH, "input %s variable '%s' is %s: give int8 or "
                        "uint8 values (quantized)", c->op->def->in[slot].name,
                        ct_kernel_in_name(c, slot, 0), ct_dtype_name(t));
}

ct_status ct__qmm_plan_make(const ct_kernel_ctx *c, bool qlinear, ct__qmm_plan *p) {
  *p = (ct__qmm_plan){.x = qlinear ? CT__QLM_X : CT__QMI_X,
                      .y = qlinear ? CT__QLM_Y : CT__QMI_Y,
                      .xz = qlinear ? CT__QLM_XZERO : CT__QMI_XZERO,
                      .yz = qlinear ? CT__QLM_YZERO : CT__QMI_YZERO, .out = CT_INT32};
  ct_status s = byte_dtype(c, p->x);
  if (s == CT_OK) s = byte_dtype(c, p->y);
  if (s == CT_OK) s = ct__mm_plan_slots(c, p->x, p->y, false, false, &p->s);
  if (s != CT_OK) return s;
  const ct_dtype xt = ct_kernel_in(c, p->x, 0)->dtype, yt = ct_kernel_in(c, p->y, 0)->dtype;
  int64_t one;
  s = count_of(c, p->xz, 1, xt, "one zero point (per tensor)", &one);
  if (s == CT_OK) {
    s = count_of(c, p->yz, p->s.n, yt, "one zero point, or one per column of Y", &p->yz_n);
  }
  if (s != CT_OK || !qlinear) return s;
  s = count_of(c, CT__QLM_XSCALE, 1, CT_FLOAT32, "one float32 scale (per tensor)", &one);
  if (s == CT_OK) {
    s = count_of(c, CT__QLM_YSCALE, p->s.n, CT_FLOAT32,
                 "one float32 scale, or one per column of Y", &p->ys_n);
  }
  if (s == CT_OK) s = count_of(c, CT__QLM_OSCALE, 1, CT_FLOAT32, "one float32 scale", &one);
  if (s == CT_OK) {
    s = count_of(c, CT__QLM_OZERO, 1, CT_DTYPE_UNDEFINED, "one zero point", &one);
  }
  if (s != CT_OK) return s;
  p->out = xt; /* the reference's dtype without an output zero point */
  if (ct_kernel_in_count(c, CT__QLM_OZERO) > 0) {
    s = byte_dtype(c, CT__QLM_OZERO);
    p->out = ct_kernel_in(c, CT__QLM_OZERO, 0)->dtype;
  }
  return s;
}

ct_status ct__qconv_plan_make(const ct_kernel_ctx *c, bool qlinear, ct__qconv_plan *p) {
  *p = (ct__qconv_plan){.out = CT_INT32};
  ct_status s = byte_dtype(c, CT__QC_INPUT);
  if (s == CT_OK) s = byte_dtype(c, CT__QC_FILTER);
  const ct_tensor *x = ct_kernel_in(c, CT__QC_INPUT, 0), *f = ct_kernel_in(c, CT__QC_FILTER, 0);
  if (s == CT_OK) s = ct__conv_plan(c, x->dims, f->dims, &p->g);
  if (s != CT_OK) return s;
  const int64_t m = p->g.m;
  int64_t one;
  s = count_of(c, CT__QC_IZERO, 1, x->dtype, "one zero point (per tensor)", &one);
  if (s == CT_OK) {
    s = count_of(c, CT__QC_FZERO, m, f->dtype, "one zero point, or one per output channel",
                 &p->fz_n);
  }
  if (s != CT_OK || !qlinear) return s;
  s = count_of(c, CT__QC_ISCALE, 1, CT_FLOAT32, "one float32 scale (per tensor)", &one);
  if (s == CT_OK) {
    s = count_of(c, CT__QC_FSCALE, m, CT_FLOAT32,
                 "one float32 scale, or one per output channel", &p->fs_n);
  }
  if (s == CT_OK) s = count_of(c, CT__QC_OSCALE, 1, CT_FLOAT32, "one float32 scale", &one);
  if (s == CT_OK) {
    s = count_of(c, CT__QC_OZERO, 1, CT_DTYPE_UNDEFINED, "one zero point", &one);
  }
  if (s == CT_OK && ct_kernel_in_count(c, CT__QC_BIAS) > 0) {
    const ct_tensor *b = ct_kernel_in(c, CT__QC_BIAS, 0);
    char d[CT__DDIM_STR_CAP];
    if (b->dtype != CT_INT32 || b->dims.rank != 1 || b->numel != m) {
      return ct_kernel_fail(c, CT_ERR_SHAPE, "input Bias variable '%s' is %s of dims %s: give "
                            "int32 of dims [%lld] (one per output channel)",
                            ct_kernel_in_name(c, CT__QC_BIAS, 0), ct_dtype_name(b->dtype),
                            ct_ddim_str(b->dims, d, sizeof d), (long long)m);
    }
  }
  if (s != CT_OK) return s;
  p->out = x->dtype;
  if (ct_kernel_in_count(c, CT__QC_OZERO) > 0) {
    s = byte_dtype(c, CT__QC_OZERO);
    p->out = ct_kernel_in(c, CT__QC_OZERO, 0)->dtype;
  }
  return s;
}

static ct_status qconv_infer(const ct_kernel_ctx *c, bool qlinear) {
  ct__qconv_plan p;
  ct_status s = ct__qconv_plan_make(c, qlinear, &p);
  return s == CT_OK ? ct__k_resize(c, 0, 0, ct__conv_out_dims(&p.g)) : s;
}
static ct_status conv_integer_infer(const ct_kernel_ctx *c) { return qconv_infer(c, false); }
static ct_status qlinear_conv_infer(const ct_kernel_ctx *c) { return qconv_infer(c, true); }

static ct_status qmm_infer(const ct_kernel_ctx *c, bool qlinear) {
  ct__qmm_plan p;
  ct_status s = ct__qmm_plan_make(c, qlinear, &p);
  return s == CT_OK ? ct__k_resize(c, 0, 0, p.s.out) : s;
}
static ct_status matmul_integer_infer(const ct_kernel_ctx *c) { return qmm_infer(c, false); }
static ct_status qlinear_matmul_infer(const ct_kernel_ctx *c) { return qmm_infer(c, true); }

static ct_status dql_infer(const ct_kernel_ctx *c) {
  const ct_tensor *x = ct_kernel_in(c, 0, 0);
  if (x->dtype != CT_FLOAT32) {
    return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH, "input X variable '%s' is %s: give float32 "
                          "values (ONNX's DynamicQuantizeLinear takes float32)",
                          ct_kernel_in_name(c, 0, 0), ct_dtype_name(x->dtype));
  }
  ct_status s = ct__k_resize(c, CT__DQL_Y, 0, x->dims);
  if (s == CT_OK) s = ct__k_resize(c, CT__DQL_SCALE, 0, CT_DIMS());
  return s == CT_OK ? ct__k_resize(c, CT__DQL_ZERO, 0, CT_DIMS()) : s;
}

/* ---- The table ------------------------------------------------------------------------------- */

static const ct_slot_def mi_in[] = {{"X", 0},
                                    {"Y", 0},
                                    {"XZeroPoint", CT_SLOT_OPTIONAL},
                                    {"YZeroPoint", CT_SLOT_OPTIONAL}};
static const ct_slot_def qlm_in[] = {{"X", 0},
                                     {"XScale", 0},
                                     {"XZeroPoint", CT_SLOT_OPTIONAL},
                                     {"Y", 0},
                                     {"YScale", 0},
                                     {"YZeroPoint", CT_SLOT_OPTIONAL},
                                     {"OutScale", 0},
                                     {"OutZeroPoint", CT_SLOT_OPTIONAL}};
static const ct_slot_def mm_out[] = {{"Out", 0}};
static const ct_slot_def ci_in[] = {{"Input", 0},
                                    {"Filter", 0},
                                    {"InputZeroPoint", CT_SLOT_OPTIONAL},
                                    {"FilterZeroPoint", CT_SLOT_OPTIONAL}};
static const ct_slot_def qlc_in[] = {{"Input", 0},
                                     {"Filter", 0},
                                     {"InputZeroPoint", CT_SLOT_OPTIONAL},
                                     {"FilterZeroPoint", CT_SLOT_OPTIONAL},
                                     {"InputScale", 0},
                                     {"FilterScale", 0},
                                     {"OutScale", 0},
                                     {"OutZeroPoint", CT_SLOT_OPTIONAL},
                                     {"Bias", CT_SLOT_OPTIONAL}};
static const ct_slot_def conv_out[] = {{"Output", 0}};
static const ct_slot_def dql_in[] = {{"X", 0}};
static const ct_slot_def dql_out[] = {{"Y", 0}, {"YScale", 0}, {"YZeroPoint", 0}};

static const ct_op_def defs[] = {
    {.type = "matmul_integer", .inputs = mi_in, .n_inputs = 4, .outputs = mm_out,
     .n_outputs = 1, .infer_shape = matmul_integer_infer, .flags = CT_OP_PURE_INFER},
    {.type = "qlinear_matmul", .inputs = qlm_in, .n_inputs = 8, .outputs = mm_out,
     .n_outputs = 1, .infer_shape = qlinear_matmul_infer, .flags = CT_OP_PURE_INFER},
    {.type = "conv_integer", .inputs = ci_in, .n_inputs = 4, .outputs = conv_out,
     .n_outputs = 1, .attrs = ct__conv_attrs, .n_attrs = 6, .infer_shape = conv_integer_infer,
     .flags = CT_OP_PURE_INFER},
    {.type = "qlinear_conv", .inputs = qlc_in, .n_inputs = 9, .outputs = conv_out,
     .n_outputs = 1, .attrs = ct__conv_attrs, .n_attrs = 6, .infer_shape = qlinear_conv_infer,
     .flags = CT_OP_PURE_INFER},
    {.type = "dynamic_quantize_linear", .inputs = dql_in, .n_inputs = 1, .outputs = dql_out,
     .n_outputs = 3, .infer_shape = dql_infer, .flags = CT_OP_PURE_INFER},
};

const ct__def_table ct__quant_int_defs = CT__TABLE(defs);

static const ct__op_doc docs[] = {
    {"matmul_integer",
     "ONNX's MatMulInteger: `Out = (X - XZeroPoint) (Y - YZeroPoint)` in int32 under numpy's "
     "matmul rules (batch dims broadcast; a rank-1 X is a row, a rank-1 Y a column). X and Y "
     "are int8 or uint8; the optional zero points have their operand's dtype, one value for X, "
     "one value or one per column for Y. The sums are exact; one past int32 wraps as the "
     "reference's int32 arithmetic does. No gradient."},
    {"qlinear_matmul",
     "ONNX's QLinearMatMul: C = (X - XZeroPoint) (Y - YZeroPoint) as matmul_integer, then `Out "
     "= saturate(round_half_even(C (XScale YScale / OutScale) + OutZeroPoint))`, the scales' "
     "product and quotient in float32, the rest in float64 (ONNX's reference's order: the zero "
     "point added before rounding). Scales are float32; XScale, OutScale and the zero points of "
     "X and Out one value each, YScale and YZeroPoint one value or one per column of Y. Out "
     "has OutZeroPoint's dtype (int8 or uint8; X's without it). No gradient."},
    {"conv_integer",
     "ONNX's ConvInteger in 2-D: conv2d of (Input - InputZeroPoint) by (Filter - "
     "FilterZeroPoint) in int32, with conv2d's attributes (strides, paddings, dilations, "
     "groups, padding_algorithm; NCHW), the padding contributing 0. Input and Filter are int8 "
     "or uint8; the optional zero points have their operand's dtype, one value for Input, one "
     "value or one per output channel for Filter. Exact sums; one past int32 wraps. No "
     "gradient."},
    {"qlinear_conv",
     "ONNX's QLinearConv in 2-D: C = conv_integer's sum + Bias (int32, one per output channel, "
     "optional), then `Output = saturate(round_half_even(C (InputScale FilterScale / OutScale) "
     "+ OutZeroPoint))`, the scales' product and quotient in float32 and the rest in float64, "
     "as ONNX's reference. FilterScale and FilterZeroPoint hold one value or one per output "
     "channel, the other scales and zero points one value; Output has OutZeroPoint's dtype "
     "(Input's without it). conv2d's attributes. No gradient."},
    {"dynamic_quantize_linear",
     "ONNX's DynamicQuantizeLinear as its reference computes it: lo = min(0, min X) and hi = "
     "max(0, max X) over float32 X; YScale = (hi - lo) / 255 (1 when hi = lo, as onnxruntime) and "
     "YZeroPoint = round_half_even(clamp(0 - lo / YScale, 0, 255)), in float32 (rank 0, "
     "float32 and uint8); Y = saturate(round_half_even(X / YScale) + YZeroPoint) in uint8. NaN "
     "anywhere in X makes YScale NaN, YZeroPoint 255 (the reference's comparisons) and every Y "
     "0. No gradient."},
};

const ct__doc_table ct__quant_int_docs = CT__TABLE(docs);
