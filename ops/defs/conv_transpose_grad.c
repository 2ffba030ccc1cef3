/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/conv_transpose_grad.c: the gradient of conv_transpose: its grad type's slots and
 * shapes (the type is listed in ct__conv_transpose_defs) and the grad-op maker.
 *
 *   conv_transpose_grad  X, W, Y@GRAD -> X@GRAD, W@GRAD, B@GRAD (each optional); the forward
 *       op's attributes. With col the unfolding of Y@GRAD that im2col makes for a convolution
 *       of Y@GRAD by W (one row per output channel of the group and filter tap, one column per
 *       input element: Y@GRAD[n, m, i s - pb + k d], 0 outside), per image and group:
 *       X@GRAD = W_g col (a convolution of Y@GRAD: conv_transpose is conv2d's input gradient,
 *       and the other way round), W@GRAD += X_g col^T, B@GRAD = Y@GRAD summed over images and
 *       positions. */
#include <corten/backward.h>

#include "ops/defs/conv_transpose.h"

const ct_slot_def ct__cvt_grad_in[3] = {{"X", 0}, {"W", 0}, {"Y@GRAD", 0}};
const ct_slot_def ct__cvt_grad_out[3] = {
    {"X@GRAD", CT_SLOT_OPTIONAL}, {"W@GRAD", CT_SLOT_OPTIONAL}, {"B@GRAD", CT_SLOT_OPTIONAL}};

/* W and Y@GRAD have X's dtype, Y@GRAD the forward's Y dims; X@GRAD and W@GRAD take the dims of
 * X and W, B@GRAD [M]. nd: conv_nd_grad (its plan), else conv_transpose_grad. */
ct_status ct__cvt_grad_infer_any(const ct_kernel_ctx *c, bool nd) {
  const ct_tensor *x = ct_kernel_in(c, CT__CVTG_X, 0), *w = ct_kernel_in(c, CT__CVTG_W, 0);
  ct_status s = ct__k_check_dtype(c, CT__CVTG_W, 0, x->dtype);
  if (s == CT_OK) s = ct__k_check_dtype(c, CT__CVTG_DY, 0, x->dtype);
  ct__cvt_plan p;
  if (s == CT_OK) {
    s = nd ? ct__cnd_plan_make(c, x->dims, w->dims, &p)
           : ct__cvt_plan_make(c, x->dims, w->dims, &p);
  }
  if (s == CT_OK) {
    s = ct__grad_check_dout(c, CT__CVTG_DY, nd ? ct__cnd_out_dims(&p) : ct__cvt_out_dims(&p),
                            "Y");
  }
  if (s == CT_OK && ct_kernel_out_count(c, CT__CVTG_DX) > 0) {
    s = ct__k_resize(c, CT__CVTG_DX, 0, x->dims);
  }
  if (s == CT_OK && ct_kernel_out_count(c, CT__CVTG_DW) > 0) {
    s = ct__k_resize(c, CT__CVTG_DW, 0, w->dims);
  }
  if (s == CT_OK && ct_kernel_out_count(c, CT__CVTG_DB) > 0) {
    s = ct__k_resize(c, CT__CVTG_DB, 0, CT_DIMS(nd ? p.c : p.m));
  }
  return s;
}

ct_status ct__cvt_grad_infer(const ct_kernel_ctx *c) { return ct__cvt_grad_infer_any(c, false); }

ct_status ct__cvt_grad_make(ct_grad_ctx *g, const char *type) {
  const char *dx = ct_grad_input_grad(g, "X", 0), *dw = ct_grad_input_grad(g, "W", 0);
  const char *db = ct_grad_input(g, "B", 0) != NULL ? ct_grad_input_grad(g, "B", 0) : NULL;
  if (dx == NULL && dw == NULL && db == NULL) return CT_OK;
  ct_op *op = ct_grad_op_new(g, type);
  if (op == NULL) return ct_last_status();
  ct_status s = ct__grad_wire_in(op, "X", ct_grad_input(g, "X", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "W", ct_grad_input(g, "W", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Y@GRAD", ct_grad_output_grad(g, "Y", 0));
  if (s == CT_OK && dx != NULL) s = ct_op_set_output(op, "X@GRAD", dx);
  if (s == CT_OK && dw != NULL) s = ct_op_set_output(op, "W@GRAD", dw);
  if (s == CT_OK && db != NULL) s = ct_op_set_output(op, "B@GRAD", db);
  return s == CT_OK ? ct_grad_copy_attrs(g, op) : s;
}

ct_status ct__grad_conv_transpose(ct_grad_ctx *g) {
  return ct__cvt_grad_make(g, "conv_transpose_grad");
}
