/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/quant.c: the quant family's op types (ops/defs/quant.h lists them): their table, the
 * plan both kernels follow and its checks, and Y's dims (X's).
 *
 *   quantize_linear    ONNX's QuantizeLinear (opsets 10 and 13) as ONNX's reference computes
 *                      it: X / Scale in float32 (float64 for a float64 or int32 X, as numpy
 *                      promotes them), rounded half to even (rintf under the default rounding
 *                      mode), plus ZeroPoint, saturated to Y's range. Infinities saturate to the
 *                      end of their sign; NaN (an X of NaN, or 0 / 0 with a Scale of 0) gives the
 *                      lowest value of Y's dtype (0 for uint8, -128 for int8), as the reference
 *                      gives for a zero point of 0 or more (numpy turns NaN into INT32_MIN,
 *                      which its clip raises to the lowest). Quotients of 2^31 or more saturate
 *                      (the spec's rule and onnxruntime's), where the reference's int32 cast is
 *                      undefined. A Scale of 0, negative or not finite is not refused, as
 *                      neither the spec nor the reference refuses it (DynamicQuantizeLinear's
 *                      function makes a Scale of 0 for an all-zero X): the arithmetic above
 *                      decides.
 *   dequantize_linear  ONNX's DequantizeLinear (opsets 10 and 13): (float)X - (float)ZeroPoint,
 *                      times Scale, each in float32 as the reference computes them. An int32 X
 *                      takes no zero point (ONNX: it is 0): a ZeroPoint holding anything else is
 *                      refused when the op runs. */
#include <stdio.h>

#include "ops/defs/quant.h"

static ct_status need_float32_scale(const ct_kernel_ctx *c) {
  const ct_tensor *s = ct_kernel_in(c, CT__Q_SCALE, 0);
  if (s->dtype == CT_FLOAT32) return CT_OK;
  return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH, "input Scale variable '%s' is %s: give float32 "
                        "scales", ct_kernel_in_name(c, CT__Q_SCALE, 0), ct_dtype_name(s->dtype));
}

/* Scale's and ZeroPoint's element count, checked: rank 0 or 1, ZeroPoint as many as Scale. */
static ct_status scale_count(const ct_kernel_ctx *c, int64_t *n) {
  const ct_tensor *s = ct_kernel_in(c, CT__Q_SCALE, 0);
  char a[128], b[128];
  if (s->dims.rank > 1) {
    return ct_kernel_fail(c, CT_ERR_SHAPE, "input Scale variable '%s' has dims %s: give a scalar "
                          "or a vector (one scale per slice along attribute axis)",
                          ct_kernel_in_name(c, CT__Q_SCALE, 0), ct_ddim_str(s->dims, a, sizeof a));
  }
  *n = s->numel;
  if (!ct_kernel_in_count(c, CT__Q_ZERO)) return CT_OK;
  const ct_tensor *z = ct_kernel_in(c, CT__Q_ZERO, 0);
  if (z->dims.rank > 1 || z->numel != s->numel) {
    return ct_kernel_fail(c, CT_ERR_SHAPE, "input ZeroPoint variable '%s' has dims %s and Scale "
                          "variable '%s' %s: give one zero point per scale",
                          ct_kernel_in_name(c, CT__Q_ZERO, 0), ct_ddim_str(z->dims, a, sizeof a),
                          ct_kernel_in_name(c, CT__Q_SCALE, 0), ct_ddim_str(s->dims, b, sizeof b));
  }
  return CT_OK;
}

/* The quantized dtype: quantize's Y (ZeroPoint's, uint8 or int8; uint8 without one), or
 * dequantize's X (int8, uint8 or int32; ZeroPoint of the same). */
static ct_status quantized_dtype(const ct_kernel_ctx *c, bool quantize, ct_dtype *q) {
  bool zero = ct_kernel_in_count(c, CT__Q_ZERO) > 0;
  ct_dtype x = ct_kernel_in(c, CT__Q_X, 0)->dtype;
  ct_dtype z = zero ? ct_kernel_in(c, CT__Q_ZERO, 0)->dtype : CT_UINT8;
  const char *zn = zero ? ct_kernel_in_name(c, CT__Q_ZERO, 0) : "";
  if (quantize) {
    *q = z;
    if (z == CT_UINT8 || z == CT_INT8) return CT_OK;
    return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH, "input ZeroPoint variable '%s' is %s, which "
                          "sets Y's dtype: give a uint8 or int8 zero point", zn, ct_dtype_name(z));
  }
  *q = x;
  if (x != CT_INT8 && x != CT_UINT8 && x != CT_INT32) {
    return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH, "input X variable '%s' is %s: give int8, "
                          "uint8 or int32 values", ct_kernel_in_name(c, CT__Q_X, 0),
                          ct_dtype_name(x));
  }
  if (zero && z != x) {
    return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH, "input ZeroPoint variable '%s' is %s and X "
                          "variable '%s' %s: give a zero point of X's dtype", zn,
                          ct_dtype_name(z), ct_kernel_in_name(c, CT__Q_X, 0), ct_dtype_name(x));
  }
  return CT_OK;
}

ct_status ct__q_plan_make(const ct_kernel_ctx *c, bool quantize, ct__q_plan *p) {
  const ct_tensor *x = ct_kernel_in(c, CT__Q_X, 0), *s = ct_kernel_in(c, CT__Q_SCALE, 0);
  int64_t n = 0;
  ct_status st = need_float32_scale(c);
  if (st == CT_OK) st = scale_count(c, &n);
  if (st == CT_OK) st = quantized_dtype(c, quantize, &p->q);
  if (st != CT_OK) return st;
  p->zero = ct_kernel_in_count(c, CT__Q_ZERO) > 0;
  p->outer = 1, p->ch = 1, p->inner = x->numel;
  if (n == 1) return CT_OK; /* per tensor: axis is not read, as ONNX's reference does */
  int64_t axis_attr = c->attr[CT__Q_AXIS].u.i;
  char a[128], b[128];
  if (x->dims.rank == 0) {
    return ct_kernel_fail(c, CT_ERR_SHAPE, "input Scale variable '%s' has dims %s but X variable "
                          "'%s' is a scalar: give one scale", ct_kernel_in_name(c, CT__Q_SCALE, 0),
                          ct_ddim_str(s->dims, a, sizeof a), ct_kernel_in_name(c, CT__Q_X, 0));
  }
  int axis;
  st = ct__k_axis(c, "axis", axis_attr, x->dims.rank, &axis);
  if (st != CT_OK) return st;
  if (n != x->dims.d[axis]) {
    return ct_kernel_fail(c, CT_ERR_SHAPE, "input Scale variable '%s' has dims %s but X variable "
                          "'%s' has dims %s, extent %lld on axis %d: give one scale, or one per "
                          "slice along the axis", ct_kernel_in_name(c, CT__Q_SCALE, 0),
                          ct_ddim_str(s->dims, a, sizeof a), ct_kernel_in_name(c, CT__Q_X, 0),
                          ct_ddim_str(x->dims, b, sizeof b), (long long)x->dims.d[axis], axis);
  }
  p->ch = n;
  p->inner = 1;
  for (int k = axis + 1; k < x->dims.rank; k++) p->inner *= x->dims.d[k];
  for (int k = 0; k < axis; k++) p->outer *= x->dims.d[k];
  return CT_OK;
}

/* Y takes X's dims once the plan's checks pass. */
static ct_status q_infer(const ct_kernel_ctx *c, bool quantize) {
  ct__q_plan p;
  ct_status s = ct__q_plan_make(c, quantize, &p);
  return s == CT_OK ? ct__k_resize(c, CT__Q_Y, 0, ct_kernel_in(c, CT__Q_X, 0)->dims) : s;
}
static ct_status quantize_infer(const ct_kernel_ctx *c) { return q_infer(c, true); }
static ct_status dequantize_infer(const ct_kernel_ctx *c) { return q_infer(c, false); }

/* ---- The table ------------------------------------------------------------------------------- */

static const ct_slot_def q_in[] = {{"X", 0}, {"Scale", 0}, {"ZeroPoint", CT_SLOT_OPTIONAL}};
static const ct_slot_def q_out[] = {{"Y", 0}};
static const ct_attr_def q_attrs[] = {{"axis", {.type = CT_ATTR_INT, .u.i = 1}, false}};

/* Both infer-shapes read dims and dtypes only (pure); no gradient (grad NULL). */
static const ct_op_def defs[] = {
    {.type = "quantize_linear", .inputs = q_in, .n_inputs = 3, .outputs = q_out, .n_outputs = 1,
     .attrs = q_attrs, .n_attrs = 1, .infer_shape = quantize_infer, .flags = CT_OP_PURE_INFER},
    {.type = "dequantize_linear", .inputs = q_in, .n_inputs = 3, .outputs = q_out,
     .n_outputs = 1, .attrs = q_attrs, .n_attrs = 1, .infer_shape = dequantize_infer,
     .flags = CT_OP_PURE_INFER},
};

const ct__def_table ct__quant_defs = CT__TABLE(defs);

/* What the types compute (ct_op_type_doc, `corten ops`). */
static const ct__op_doc docs[] = {
    {"quantize_linear",
     "ONNX's QuantizeLinear (opsets 10 and 13) as its reference computes it: `Y = saturate(round"
     "(X / Scale) + ZeroPoint)`, the quotient in float32 (float64 for a float64 or int32 X), "
     "rounded half to even, saturated to Y's range. Scale is float32, one element (per tensor) "
     "or a vector with one scale per slice along `axis` (default 1); the optional ZeroPoint has "
     "Scale's count and sets Y's dtype, uint8 or int8 (uint8 without it); Y has X's dims. "
     "Infinities saturate to the end of their sign and NaN gives the dtype's lowest value (0 "
     "for uint8, -128 for int8); a Scale of 0, negative or not finite is not refused (the "
     "arithmetic decides). No gradient."},
    {"dequantize_linear",
     "ONNX's DequantizeLinear (opsets 10 and 13): `Y = ((float)X - (float)ZeroPoint) Scale`, "
     "each step in float32 as ONNX's reference computes it, Y float32 of X's dims. X is int8, "
     "uint8 or int32; ZeroPoint (optional, default 0) has X's dtype and Scale's count. Scale is "
     "float32, one element (per tensor) or one per slice along `axis` (default 1). An int32 X "
     "takes no zero point: a ZeroPoint holding anything but 0 is refused when the op runs."},
};

const ct__doc_table ct__quant_docs = CT__TABLE(docs);
