/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/resample_grad.c: the gradients of the resample family (ops/defs/resample.h).
 *
 *   resize_grad       X, Roi, Scales, Sizes, Out@GRAD -> X@GRAD: every mode; each Out@GRAD
 *                     element added to the X elements its value was made of, times their
 *                     weights (zero for an extrapolated element). Made by ct__ix_grad_generic.
 *   grid_sample_grad  X, Grid, Out@GRAD -> X@GRAD, Grid@GRAD (each optional): X@GRAD the
 *                     forward's weights, scattered; Grid@GRAD the derivative of the weights
 *                     (bilinear's, or Keys' cubic ones) through the denormalisation, the border
 *                     clamp and the reflections, zero for nearest (the output is piecewise
 *                     constant in the grid).
 *
 * roi_align has no gradient. */
#include <corten/backward.h>

#include "ops/defs/resample.h"

ct_status ct__rsz_grad_infer(const ct_kernel_ctx *c) {
  ct__rsz_plan p;
  ct_status s = ct__rsz_plan_make(c, &p);
  const ct_tensor *x = ct_kernel_in(c, CT__RSZ_X, 0);
  if (s == CT_OK) s = ct__k_check_dtype(c, CT__RSZ_DOUT, 0, x->dtype);
  if (s == CT_OK) s = ct__grad_check_dout(c, CT__RSZ_DOUT, p.out, "the forward op's Out");
  return s == CT_OK ? ct__k_resize(c, 0, 0, x->dims) : s;
}

ct_status ct__gs_grad_infer(const ct_kernel_ctx *c) {
  ct__gs_plan p;
  ct_status s = ct__gs_plan_make(c, &p);
  const ct_tensor *x = ct_kernel_in(c, CT__GS_X, 0), *g = ct_kernel_in(c, CT__GS_GRID, 0);
  if (s == CT_OK) s = ct__k_check_dtype(c, CT__GS_DOUT, 0, x->dtype);
  if (s == CT_OK) {
    s = ct__grad_check_dout(c, CT__GS_DOUT, CT_DIMS(p.n, p.c, p.ho, p.wo), "the forward op's Out");
  }
  if (s == CT_OK && ct_kernel_out_count(c, CT__GSG_DX) > 0) {
    s = ct__k_resize(c, CT__GSG_DX, 0, x->dims);
  }
  if (s == CT_OK && ct_kernel_out_count(c, CT__GSG_DGRID) > 0) {
    s = ct__k_resize(c, CT__GSG_DGRID, 0, g->dims);
  }
  return s;
}

ct_status ct__gs_grad_maker(ct_grad_ctx *g) {
  const char *dx = ct_grad_input_grad(g, "X", 0), *dg = ct_grad_input_grad(g, "Grid", 0);
  if (dx == NULL && dg == NULL) return CT_OK;
  ct_op *op = ct_grad_op_new(g, "grid_sample_grad");
  if (op == NULL) return ct_last_status();
  ct_status s = ct__grad_wire_in(op, "X", ct_grad_input(g, "X", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Grid", ct_grad_input(g, "Grid", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Out@GRAD", ct_grad_output_grad(g, "Out", 0));
  if (s == CT_OK && dx != NULL) s = ct_op_set_output(op, "X@GRAD", dx);
  if (s == CT_OK && dg != NULL) s = ct_op_set_output(op, "Grid@GRAD", dg);
  return s == CT_OK ? ct_grad_copy_attrs(g, op) : s;
}
