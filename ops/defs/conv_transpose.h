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

/* The values of list attribute a: *v and *n (n 0: not given); CT_ERR_INVALID_ARGUMENT when it
 * holds neither 0 nor `want` values, CT_ERR_OUT_OF_RANGE when one lies outside [lo, INT32_MAX].
 * The auto_pad attribute at index attr: 0 NOTSET (or ""), 1 VALID, 2 SAME_UPPER, 3 SAME_LOWER;
 * -1 with the error. Both name the op's own attributes (conv_transpose's and conv_nd's). */
ct_status ct__cvt_list_attr(const ct_kernel_ctx *c, int a, size_t want, int64_t lo,
                            const int64_t **v, size_t *n);
int ct__cvt_auto_pad(const ct_kernel_ctx *c, int attr);

/* conv_nd (ops/defs/conv_nd.c), ONNX's Conv over 1 to 3 spatial dims: X [N, C, I...],
 * W [M, C/groups, K...], B [M] (optional) -> Y [N, M, O...], with
 *   Y[n, g Mg + m, o] = B[g Mg + m] + sum over c of group g and k of
 *                       X[n, c, o s - pb + k d] W[g Mg + m, c, k]   (0 outside X)
 * Its plan is a ct__cvt_plan of the transposed convolution it is the adjoint of (the same index
 * relation with X and Y exchanged): in = Y's extents O, out = X's I, c = M (Y's channels),
 * m = C (X's); k, s, d and pb as they are. So the transposed convolution's im2col gathers
 * conv_nd's columns from X, and its col2im scatters conv_nd's input gradient. The slots and
 * the grad type's are conv_transpose's (X, W, B; X, W, Y@GRAD -> X@GRAD, W@GRAD, B@GRAD). */
enum { CT__CND_STRIDES, CT__CND_PADS, CT__CND_DILATIONS, CT__CND_KERNEL_SHAPE, CT__CND_GROUPS,
       CT__CND_AUTO_PAD, CT__CND_N_ATTRS };
extern const ct_attr_def ct__cnd_attrs[CT__CND_N_ATTRS];
/* Plans conv_nd (or its grad) for X dims x and W dims w, as ct__cvt_plan_make does. O per dim:
 * NOTSET (I + pad_begin + pad_end - d (K - 1) - 1) / s + 1; VALID the same with no pads;
 * SAME_UPPER / SAME_LOWER ceil(I / s), the padding that needs split with the odd one at the end
 * (UPPER) or the beginning (LOWER). */
ct_status ct__cnd_plan_make(const ct_kernel_ctx *c, ct_ddim x, ct_ddim w, ct__cvt_plan *p);
/* Y's dims: [n, M, O...]. */
ct_ddim ct__cnd_out_dims(const ct__cvt_plan *p);
ct_status ct__cnd_grad_infer(const ct_kernel_ctx *c);
ct_status ct__grad_conv_nd(ct_grad_ctx *g);

/* Y's dims: [n, m, out...] (nsp spatial dims). */
ct_ddim ct__cvt_out_dims(const ct__cvt_plan *p);

/* The product of the 3 extents of a (in, k or out). */
static inline int64_t ct__cvt_vol(const int64_t a[3]) { return a[0] * a[1] * a[2]; }

/* The forward's infer-shape (W and B of X's dtype, B one value per output channel; Y the plan's
 * dims), the grad type's (ops/defs/conv_transpose_grad.c) and its maker of a grad op of `type`
 * wiring X, W and Y@GRAD to X@GRAD, W@GRAD and B@GRAD, for conv_transpose or (nd) conv_nd. */
ct_status ct__cvt_infer_any(const ct_kernel_ctx *c, bool nd);
ct_status ct__cvt_grad_infer_any(const ct_kernel_ctx *c, bool nd);
ct_status ct__cvt_grad_make(ct_grad_ctx *g, const char *type);

/* The grad type's slots, infer-shape and the maker (ops/defs/conv_transpose_grad.c); the type
 * is listed in ct__conv_transpose_defs with the forward one. */
extern const ct_slot_def ct__cvt_grad_in[3], ct__cvt_grad_out[3];
ct_status ct__cvt_grad_infer(const ct_kernel_ctx *c);
ct_status ct__grad_conv_transpose(ct_grad_ctx *g);

extern const ct__def_table ct__conv_transpose_defs;

#endif /* CORTEN_OPS_DEFS_CONV_TRANSPOSE_H */
