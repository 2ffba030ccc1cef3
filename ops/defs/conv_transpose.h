/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/conv_transpose.h: what the op type conv_transpose (ops/defs/conv_transpose.c), its
 * grad type (conv_transpose_grad.c) and their kernels (ops/cpu/conv_transpose.c) share: slot
 * and attribute indices and the plan every backend follows.
 *
 * conv_transpose is ONNX's ConvTranspose over 1 to 3 spatial dims (NC...): X [N, C, I...],
 * W [C, M/groups, K...], B [M] (optional) -> Y [N, M, O...]; each input element spreads its
 * value times the filter over the output:
 *   Y[n, g Mg + m, o] = B[g Mg + m] + sum over c of group g, i, k with o = i s - pb + k d of
 *                       X[n, c, i] W[c, m, k]
 * The plan pads the spatial dims to 3 with unit dims (size 1, stride 1, no padding), so one
 * kernel serves every rank. */
#ifndef CORTEN_OPS_DEFS_CONV_TRANSPOSE_H
#define CORTEN_OPS_DEFS_CONV_TRANSPOSE_H

#include "ops/defs.h"

enum { CT__CVT_X = 0, CT__CVT_W = 1, CT__CVT_B = 2 }; /* the forward's inputs */
enum { CT__CVT_Y = 0 };                                 /* its output */
/* The grad type's inputs (X, W, Y@GRAD) and outputs (X@GRAD, W@GRAD, B@GRAD, each optional). */
enum { CT__CVTG_X = 0, CT__CVTG_W = 1, CT__CVTG_DY = 2 };
enum { CT__CVTG_DX = 0, CT__CVTG_DW = 1, CT__CVTG_DB = 2 };
/* The attributes, in this order on both types. Lists empty (the default) mean: strides,
 * dilations 1; pads, output_padding 0; output_shape, kernel_shape not given. */
enum {
  CT__CVT_STRIDES,
  CT__CVT_PADS,
  CT__CVT_DILATIONS,
  CT__CVT_OUTPUT_PADDING,
  CT__CVT_OUTPUT_SHAPE,
  CT__CVT_KERNEL_SHAPE,
  CT__CVT_GROUPS,
  CT__CVT_AUTO_PAD,
  CT__CVT_N_ATTRS
};
extern const ct_attr_def ct__cvt_attrs[CT__CVT_N_ATTRS];

/* A run: n images, c input channels in `groups` groups, m output channels; per spatial dim
 * (padded to 3) the input extent in, filter extent k, output extent out, stride s, dilation d
 * and the padding pb cut from the output's beginning (the end's follows from out). */
typedef struct ct__cvt_plan {
  int nsp; /* the spatial dims the op has: 1, 2 or 3 */
  int64_t n, c, m, groups;
  int64_t in[3], k[3], out[3], s[3], d[3], pb[3];
} ct__cvt_plan;

/* Plans the op (forward or grad: the attributes are the same) for X dims x and W dims w:
 * CT_ERR_SHAPE, CT_ERR_INVALID_ARGUMENT, CT_ERR_OUT_OF_RANGE or CT_ERR_UNSUPPORTED naming the op,
 * the slot or attribute and the fix otherwise. */
ct_status ct__cvt_plan_make(const ct_kernel_ctx *c, ct_ddim x, ct_ddim w, ct__cvt_plan *p);

/* Y's dims: [n, m, out...] (nsp spatial dims). */
ct_ddim ct__cvt_out_dims(const ct__cvt_plan *p);

/* The product of the 3 extents of a (in, k or out). */
static inline int64_t ct__cvt_vol(const int64_t a[3]) { return a[0] * a[1] * a[2]; }

/* The grad type's slots, infer-shape and the maker (ops/defs/conv_transpose_grad.c); the type
 * is listed in ct__conv_transpose_defs with the forward one. */
extern const ct_slot_def ct__cvt_grad_in[3], ct__cvt_grad_out[3];
ct_status ct__cvt_grad_infer(const ct_kernel_ctx *c);
ct_status ct__grad_conv_transpose(ct_grad_ctx *g);

extern const ct__def_table ct__conv_transpose_defs;

#endif /* CORTEN_OPS_DEFS_CONV_TRANSPOSE_H */
