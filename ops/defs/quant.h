/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/quant.h: what the quant family's op types (ops/defs/quant.c) and their CPU kernels
 * (ops/cpu/quant.c) share: slot and attribute indices and the plan. ONNX's linear quantization:
 *
 *   quantize_linear    X, Scale, ZeroPoint (optional) -> Y of ZeroPoint's dtype (uint8 or int8;
 *                      uint8 without one): Y = saturate(round_half_even(X / Scale) + ZeroPoint)
 *   dequantize_linear  X (int8, uint8 or int32), Scale, ZeroPoint (optional, X's dtype) ->
 *                      Y float32: Y = (X - ZeroPoint) * Scale
 *
 * Scale is float32, a scalar or a one-element vector (per tensor) or a vector of X's extent on
 * dim `axis` (per axis: element k applies to the slice X[..., k, ...] along that dim);
 * ZeroPoint, when wired, holds as many elements as Scale, rank 0 or 1. Neither op has a
 * gradient (rounding has none; ct_program_append_backward refuses a program that needs one). */
#ifndef CORTEN_OPS_DEFS_QUANT_H
#define CORTEN_OPS_DEFS_QUANT_H

#include "ops/defs.h"

enum { CT__Q_X, CT__Q_SCALE, CT__Q_ZERO };
enum { CT__Q_Y };
enum { CT__Q_AXIS };

/* X seen as [outer, ch, inner]: ch is X's extent on `axis` per axis, 1 per tensor, so element
 * i takes Scale[(i / inner) % ch]. q is the quantized dtype (quantize's Y, dequantize's X);
 * zero is whether ZeroPoint is wired. */
typedef struct ct__q_plan {
  int64_t outer, ch, inner;
  ct_dtype q;
  bool zero;
} ct__q_plan;

/* Checks the op's inputs (dtypes, Scale's and ZeroPoint's dims against X and axis) and plans the
 * walk: CT_ERR_TYPE_MISMATCH, CT_ERR_SHAPE or CT_ERR_OUT_OF_RANGE naming the op, the slot and
 * the variable otherwise. quantize: the op is quantize_linear (else dequantize_linear). */
ct_status ct__q_plan_make(const ct_kernel_ctx *c, bool quantize, ct__q_plan *p);

/* The integer products (ops/defs/quant_int.c): matmul_integer's slots, qlinear_matmul's, and
 * dynamic_quantize_linear's outputs. */
enum { CT__QMI_X, CT__QMI_Y, CT__QMI_XZERO, CT__QMI_YZERO };
enum { CT__QLM_X, CT__QLM_XSCALE, CT__QLM_XZERO, CT__QLM_Y, CT__QLM_YSCALE, CT__QLM_YZERO,
       CT__QLM_OSCALE, CT__QLM_OZERO };
enum { CT__DQL_Y, CT__DQL_SCALE, CT__DQL_ZERO };

/* A product's plan: its shape (numpy's matmul rules), the slots of X, Y and their zero points,
 * the count of Y's zero points and (qlinear_matmul) scales: 1 or one per column, and Out's
 * dtype (int32; qlinear_matmul's OutZeroPoint's, or X's without one). */
typedef struct ct__qmm_plan {
  ct__mm_shape s;
  size_t x, y, xz, yz;
  int64_t yz_n, ys_n;
  ct_dtype out;
} ct__qmm_plan;

/* conv_integer's and qlinear_conv's slots (Input and Filter first, as conv2d's: its plan names
 * them), their attributes conv2d's (ct__conv_attrs). */
enum { CT__QC_INPUT, CT__QC_FILTER, CT__QC_IZERO, CT__QC_FZERO, CT__QC_ISCALE, CT__QC_FSCALE,
       CT__QC_OSCALE, CT__QC_OZERO, CT__QC_BIAS };

/* A convolution's plan: conv2d's geometry, the counts of Filter's zero points and (qlinear_conv)
 * scales, 1 or one per output channel, and Output's dtype (as ct__qmm_plan's). */
typedef struct ct__qconv_plan {
  ct__conv_geom g;
  int64_t fz_n, fs_n;
  ct_dtype out;
} ct__qconv_plan;

/* Checks a convolution's operands as ct__qmm_plan_make does (and Bias: int32, one per output
 * channel) and plans it. qlinear: qlinear_conv, else conv_integer. */
ct_status ct__qconv_plan_make(const ct_kernel_ctx *c, bool qlinear, ct__qconv_plan *p);

/* Checks a product's operands (dtypes, the zero points' and scales' counts; CT_ERR_TYPE_MISMATCH,
 * CT_ERR_SHAPE or CT_ERR_UNSUPPORTED naming the op, slot and variable) and plans it. qlinear:
 * qlinear_matmul, else matmul_integer. */
ct_status ct__qmm_plan_make(const ct_kernel_ctx *c, bool qlinear, ct__qmm_plan *p);

#endif /* CORTEN_OPS_DEFS_QUANT_H */
