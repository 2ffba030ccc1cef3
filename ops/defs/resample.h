/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/resample.h: what the resample family's op types (ops/defs/resample*.c) and their CPU
 * kernels (ops/cpu/resample*.c) share: slot and attribute indices and the plans every backend
 * follows.
 *
 *   resize       X, Roi, Scales, Sizes -> Out: X resampled over every dim (ONNX's Resize and
 *                Upsample). Scales (float) or Sizes (int64/int32), read on the host at run
 *                time (an empty tensor counts as absent; the attributes `scales` and `sizes`
 *                stand in when neither input holds values); Roi (float, [2 rank]) only for
 *                coordinate_transformation_mode "tf_crop_and_resize".
 *   grid_sample  X [N, C, H, W], Grid [N, Ho, Wo, 2] -> Out [N, C, Ho, Wo] (ONNX's GridSample)
 *   roi_align    X [N, C, H, W], ROIs [R, 4], BatchIndices [R] -> Out [R, C, ph, pw]
 *                (ONNX's RoiAlign) */
#ifndef CORTEN_OPS_DEFS_RESAMPLE_H
#define CORTEN_OPS_DEFS_RESAMPLE_H

#include "ops/defs.h"

/* ---- resize ---------------------------------------------------------------------------------- */

enum { CT__RSZ_X, CT__RSZ_ROI, CT__RSZ_SCALES, CT__RSZ_SIZES, CT__RSZ_DOUT /* resize_grad */ };
enum {
  CT__RSZ_MODE,
  CT__RSZ_CTM,
  CT__RSZ_NEAREST,
  CT__RSZ_CUBIC_A,
  CT__RSZ_EXCLUDE,
  CT__RSZ_EXTRAP,
  CT__RSZ_SCALES_ATTR,
  CT__RSZ_SIZES_ATTR,
  CT__RSZ_UPSAMPLE_ONLY,
};
enum { CT__RSZ_M_NEAREST, CT__RSZ_M_LINEAR, CT__RSZ_M_CUBIC };
enum {
  CT__RSZ_C_HALF_PIXEL,
  CT__RSZ_C_PYTORCH_HALF_PIXEL,
  CT__RSZ_C_ALIGN_CORNERS,
  CT__RSZ_C_ASYMMETRIC,
  CT__RSZ_C_TF_HALF_PIXEL_FOR_NN,
  CT__RSZ_C_TF_CROP_AND_RESIZE,
};
enum { CT__RSZ_N_PREFER_FLOOR, CT__RSZ_N_PREFER_CEIL, CT__RSZ_N_FLOOR, CT__RSZ_N_CEIL };

/* A resize's run: per dim the input and output extents, the scale (Out / X when Sizes gave the
 * extents), the resized length the coordinate formulas use (ONNX's reference: X's extent times
 * the scale, which need not be whole when scales were given) and the roi. */
typedef struct ct__rsz_plan {
  int mode, ctm, nearest;
  bool exclude;
  double a, extrap;
  ct_ddim in, out;
  double scale[CT_MAX_RANK], length[CT_MAX_RANK], roi0[CT_MAX_RANK], roi1[CT_MAX_RANK];
} ct__rsz_plan;

ct_status ct__rsz_plan_make(const ct_kernel_ctx *c, ct__rsz_plan *p);

/* The taps of output index o along dim k: up to 4 input indices (clamped into the dim) and
 * their weights, zero weights left out (at least one tap stays); 0 when the coordinate falls
 * outside the roi of tf_crop_and_resize (the element is extrapolation_value). */
int ct__rsz_taps(const ct__rsz_plan *p, int k, int64_t o, int64_t idx[4], double w[4]);

/* ---- grid_sample ----------------------------------------------------------------------------- */

enum { CT__GS_X, CT__GS_GRID, CT__GS_DOUT /* grid_sample_grad */ };
enum { CT__GS_MODE, CT__GS_PADDING, CT__GS_ALIGN };
enum { CT__GS_M_BILINEAR, CT__GS_M_NEAREST, CT__GS_M_BICUBIC };
enum { CT__GS_P_ZEROS, CT__GS_P_BORDER, CT__GS_P_REFLECTION };
enum { CT__GSG_DX, CT__GSG_DGRID };

typedef struct ct__gs_plan {
  int mode, padding;
  bool align;
  int64_t n, c, h, w, ho, wo;
} ct__gs_plan;
ct_status ct__gs_plan_make(const ct_kernel_ctx *c, ct__gs_plan *p);

/* ---- roi_align ------------------------------------------------------------------------------- */

enum { CT__RA_X, CT__RA_ROIS, CT__RA_BATCH };
enum { CT__RA_MODE, CT__RA_PH, CT__RA_PW, CT__RA_SAMPLING, CT__RA_SCALE, CT__RA_ALIGNED };

typedef struct ct__ra_plan {
  bool max;
  int64_t n, c, h, w, r, ph, pw, sampling;
  double scale;
  bool aligned;
} ct__ra_plan;
ct_status ct__ra_plan_make(const ct_kernel_ctx *c, ct__ra_plan *p);
/* Checks BatchIndices' values against X's batch. */
ct_status ct__ra_check_batch(const ct_kernel_ctx *c, const ct__ra_plan *p);

/* ---- The table's parts ----------------------------------------------------------------------- */

ct_status ct__rsz_grad_infer(const ct_kernel_ctx *c);
ct_status ct__gs_grad_infer(const ct_kernel_ctx *c);
ct_status ct__gs_grad_maker(ct_grad_ctx *g);
extern const ct_slot_def ct__rsz_grad_in[5], ct__gs_grad_in[3], ct__gs_grad_out[2],
    ct__rsz_grad_out[1];

#endif /* CORTEN_OPS_DEFS_RESAMPLE_H */
