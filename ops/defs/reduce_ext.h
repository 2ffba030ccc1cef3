/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/reduce_ext.h: what the reduce_ext family's op types (ops/defs/reduce_ext*.c) and their
 * CPU kernels (ops/cpu/reduce_ext*.c) share: slot and attribute indices, the plans of the
 * reductions, the softmax rows and the losses, and element access by dtype. */
#ifndef CORTEN_OPS_DEFS_REDUCE_EXT_H
#define CORTEN_OPS_DEFS_REDUCE_EXT_H

#include "ops/defs.h"
#include "ops/half.h"

/* ---- Reductions (reduce_mean, reduce_max, ...): X, Axes (optional) -> Out ------------------- */
enum { CT__RX_X = 0, CT__RX_AXES = 1 };
enum { CT__RX_DIM, CT__RX_KEEP_DIM, CT__RX_EMPTY_NOOP };
/* Their grad types: X, Axes, Out, Out@GRAD -> X@GRAD. */
enum { CT__RXG_X = 0, CT__RXG_AXES = 1, CT__RXG_OUT = 2, CT__RXG_DOUT = 3 };

/* What a reduction computes over each group of X's elements. */
typedef enum ct__rx_kind {
  CT__RX_SUM,
  CT__RX_MEAN,
  CT__RX_MAX,
  CT__RX_MIN,
  CT__RX_PROD,
  CT__RX_L1,
  CT__RX_L2,
  CT__RX_LOG_SUM,
  CT__RX_LOG_SUM_EXP,
  CT__RX_SUM_SQUARE,
} ct__rx_kind;

/* A reduction's walk: X's dims, for each dim its stride in Out (0 for a reduced dim), Out's
 * dims, and the number of X's elements per Out element. */
typedef struct ct__rx_plan {
  ct_ddim x, out;
  int64_t ostride[CT_MAX_RANK];
  int64_t group;
} ct__rx_plan;

/* Plans a reduction (or its grad: slots X and Axes come first in both) from attribute dim, or
 * from input Axes (int64 or int32, host memory) when it is wired, with keep_dim and
 * empty_dim_noop; CT_ERR_OUT_OF_RANGE, CT_ERR_INVALID_ARGUMENT or CT_ERR_TYPE_MISMATCH naming
 * the op otherwise. */
ct_status ct__rx_make_plan(const ct_kernel_ctx *c, ct__rx_plan *p);

/* The kind of a reduction type, from its name ("reduce_mean" or "reduce_mean_grad"). */
ct__rx_kind ct__rx_kind_of(const ct_kernel_ctx *c);

ct_status ct__grad_reduce_ext(ct_grad_ctx *g);

/* The grad and loss types' slots, attributes and infer-shapes (ops/defs/reduce_ext_grad.c,
 * reduce_ext_loss.c), which ops/defs/reduce_ext.c's one table lists. */
extern const ct_slot_def ct__rx_grad_in[4], ct__rx_dx_out[1], ct__sx_grad_in[2], ct__nll_in[3],
    ct__nll_grad_in[4];
extern const ct_attr_def ct__nll_attrs[2];
ct_status ct__rx_grad_infer(const ct_kernel_ctx *c);
ct_status ct__sx_grad_infer(const ct_kernel_ctx *c);
ct_status ct__nll_infer(const ct_kernel_ctx *c);
ct_status ct__nll_grad_infer(const ct_kernel_ctx *c);

/* ---- arg_min / arg_max_v2: X -> Out (int64 or int32) ----------------------------------------- */
enum { CT__AX_AXIS, CT__AX_KEEPDIMS, CT__AX_SELECT_LAST, CT__AX_DTYPE };

/* ---- The rows of log_softmax, hardmax, softmax_v2: X -> Out ---------------------------------- */
enum { CT__SX_AXIS, CT__SX_COERCE_2D };
/* Their grad types: Out, Out@GRAD -> X@GRAD. */
enum { CT__SXG_OUT = 0, CT__SXG_DOUT = 1 };

/* X seen as [outer, n, inner]: each row is the n elements x[o][0..n)[i] (stride inner). With
 * coerce_2d (softmax_v2's attribute) the dims from axis on make one row (inner 1). */
ct_status ct__sx_plan(const ct_kernel_ctx *c, ct__norm_plan *p);
ct_status ct__grad_softmax_ext(ct_grad_ctx *g);

/* ---- nll_loss: X [N, C, d...], Label [N, d...], Weight [C] (optional) -> Out -------------- */
enum { CT__NLL_X = 0, CT__NLL_LABEL = 1, CT__NLL_WEIGHT = 2, CT__NLL_DOUT = 3 };
enum { CT__NLL_REDUCTION, CT__NLL_IGNORE_INDEX };
enum { CT__NLL_NONE, CT__NLL_SUM, CT__NLL_MEAN };
/* N, C and the positions d per sample (X seen as [n, c, d]), and the reduction. */
typedef struct ct__nll_plan {
  int64_t n, c, d;
  int reduction;
  ct_ddim label;
} ct__nll_plan;
ct_status ct__nll_make_plan(const ct_kernel_ctx *c, ct__nll_plan *p);
/* Label i of the label tensor (int64 or int32). */
static inline int64_t ct__nll_label(const void *l, ct_dtype t, int64_t i) {
  return t == CT_INT32 ? ((const int32_t *)l)[i] : ((const int64_t *)l)[i];
}
/* Checks every label: in [0, C) or ignore_index; CT_ERR_OUT_OF_RANGE naming the position. */
ct_status ct__nll_check_labels(const ct_kernel_ctx *c, const ct__nll_plan *p);
ct_status ct__grad_nll_loss(ct_grad_ctx *g);

/* ---- layer_norm_stats: X, Mean, Variance -> MeanOut, InvStdDev (ops/defs/reduce_ext_norm.c;
 * attributes begin_norm_axis and epsilon, as layer_norm's) --------------------------------- */
enum { CT__LNS_X = 0, CT__LNS_MEAN = 1, CT__LNS_VAR = 2 };
extern const ct_slot_def ct__lns_in[3], ct__lns_out[2];
ct_status ct__lns_infer(const ct_kernel_ctx *c);

/* ---- Element access by dtype (kernels that serve many dtypes through one loop) -------------- */

/* Element i of p (dtype t) as a double; float16 widened exactly. */
static inline double ct__rx_get(const void *p, ct_dtype t, int64_t i) {
  switch (t) {
    case CT_BOOL: return ((const bool *)p)[i] ? 1.0 : 0.0;
    case CT_INT8: return ((const int8_t *)p)[i];
    case CT_UINT8: return ((const uint8_t *)p)[i];
    case CT_INT16: return ((const int16_t *)p)[i];
    case CT_INT32: return ((const int32_t *)p)[i];
    case CT_INT64: return (double)((const int64_t *)p)[i];
    case CT_FLOAT16: return ct__half_to_float(((const uint16_t *)p)[i]);
    case CT_FLOAT32: return ((const float *)p)[i];
    case CT_FLOAT64: return ((const double *)p)[i];
    default: return 0;
  }
}

/* Element i of an integer tensor exactly. */
static inline int64_t ct__rx_geti(const void *p, ct_dtype t, int64_t i) {
  switch (t) {
    case CT_BOOL: return ((const bool *)p)[i];
    case CT_INT8: return ((const int8_t *)p)[i];
    case CT_UINT8: return ((const uint8_t *)p)[i];
    case CT_INT16: return ((const int16_t *)p)[i];
    case CT_INT32: return ((const int32_t *)p)[i];
    case CT_INT64: return ((const int64_t *)p)[i];
    default: return 0;
  }
}

/* Stores v as element i of a float tensor (rounded once to the dtype). */
static inline void ct__rx_set(void *p, ct_dtype t, int64_t i, double v) {
  switch (t) {
    case CT_FLOAT16: ((uint16_t *)p)[i] = ct__float_to_half((float)v); break;
    case CT_FLOAT32: ((float *)p)[i] = (float)v; break;
    case CT_FLOAT64: ((double *)p)[i] = v; break;
    default: break;
  }
}

/* Stores v as element i of an integer tensor, wrapping as the dtype does. */
static inline void ct__rx_seti(void *p, ct_dtype t, int64_t i, int64_t v) {
  switch (t) {
    case CT_BOOL: ((bool *)p)[i] = v != 0; break;
    case CT_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
    case CT_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case CT_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
    case CT_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case CT_INT64: ((int64_t *)p)[i] = v; break;
    default: break;
  }
}

static inline bool ct__rx_is_float(ct_dtype t) {
  return t == CT_FLOAT16 || t == CT_FLOAT32 || t == CT_FLOAT64;
}

#endif /* CORTEN_OPS_DEFS_REDUCE_EXT_H */
