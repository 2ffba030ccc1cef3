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

#endif /* CORTEN_OPS_DEFS_QUANT_H */
