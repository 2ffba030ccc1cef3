/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/conv_grad.c: the gradients of conv2d and pool2d: their grad op types (PaddlePaddle's
 * names and slots) and grad-op makers.
 *
 *   conv2d_grad, depthwise_conv2d_grad  Input, Filter, Output@GRAD -> Input@GRAD, Filter@GRAD
 *       (each optional); the forward op's attributes. With col the im2col unfolding of Input
 *       (one column per output pixel, one row per filter tap) and per group:
 *       Filter@GRAD = sum over images of Output@GRAD col^T, and Input@GRAD the col2im fold of
 *       Filter^T Output@GRAD (each tap's product added back to the pixel it read).
 *   pool2d_grad  X, Out, Out@GRAD -> X@GRAD; the forward op's attributes. max: each output's
 *       gradient goes to the first element of its window equal to Out (the one forward picked);
 *       avg: spread evenly over the window's elements, divided as forward divided. */
#include <stdio.h>

#include <corten/backward.h>

#include "ops/defs.h"

/* Input@GRAD and Filter@GRAD take the dims of Input and Filter; Output@GRAD must have Output's
 * dims, every input Input's dtype. */
static ct_status conv_grad_infer(const ct_kernel_ctx *c) {
  const ct_tensor *in = ct_kernel_in(c, CT__CONV_INPUT, 0);
  const ct_tensor *f = ct_kernel_in(c, CT__CONV_FILTER, 0);
  ct_status s = ct__k_check_dtype(c, CT__CONV_FILTER, 0, in->dtype);
  if (s == CT_OK) s = ct__k_check_dtype(c, CT__CONV_DOUT, 0, in->dtype);
  ct__conv_geom g;
  if (s == CT_OK) s = ct__conv_plan(c, in->dims, f->dims, &g);
  if (s == CT_OK) s = ct__grad_check_dout(c, CT__CONV_DOUT, ct__conv_out_dims(&g), "Output");
  if (s == CT_OK && ct_kernel_out_count(c, CT__CONV_DINPUT) > 0) {
    s = ct__k_resize(c, CT__CONV_DINPUT, 0, in->dims);
  }
  if (s == CT_OK && ct_kernel_out_count(c, CT__CONV_DFILTER) > 0) {
    s = ct__k_resize(c, CT__CONV_DFILTER, 0, f->dims);
  }
  return s;
}

/* Out and Out@GRAD have the plan's Out dims and X's dtype; X@GRAD takes X's dims. */
static ct_status pool_grad_infer(const ct_kernel_ctx *c) {
  const ct_tensor *x = ct_kernel_in(c, CT__POOL_X, 0);
  ct_status s = ct__k_check_dtype(c, CT__POOL_OUT, 0, x->dtype);
  if (s == CT_OK) s = ct__k_check_dtype(c, CT__POOL_DOUT, 0, x->dtype);
  ct__conv_geom g;
  if (s == CT_OK) s = ct__pool_plan(c, x->dims, &g);
  const ct_ddim out = s == CT_OK ? ct__pool_out_dims(&g, x->dims) : x->dims;
  if (s == CT_OK) s = ct__grad_check_dout(c, CT__POOL_DOUT, out, "Out");
  if (s == CT_OK && !ct_ddim_equal(ct_kernel_in(c, CT__POOL_OUT, 0)->dims, out)) {
    s = ct_kernel_fail(c, CT_ERR_SHAPE,
                       "input Out variable '%s' does not have the pooled dims of X: wire the "
                       "forward op's Out",
                       ct_kernel_in_name(c, CT__POOL_OUT, 0));
  }
  return s == CT_OK ? ct__k_resize(c, 0, 0, x->dims) : s;
}

static const ct_slot_def conv_grad_in[] = {{"Input", 0}, {"Filter", 0}, {"Output@GRAD", 0}};
static const ct_slot_def conv_grad_out[] = {{"Input@GRAD", CT_SLOT_OPTIONAL},
                                            {"Filter@GRAD", CT_SLOT_OPTIONAL}};
static const ct_slot_def pool_grad_in[] = {{"X", 0}, {"Out", 0}, {"Out@GRAD", 0}};
static const ct_slot_def pool_grad_out[] = {{"X@GRAD", 0}};

#define CONV_GRAD(name)                                                                       \
  {.type = (name), .inputs = conv_grad_in, .n_inputs = 3, .outputs = conv_grad_out,          \
   .n_outputs = 2, .attrs = ct__conv_attrs, .n_attrs = 6,                                    \
   .flags = CT_OP_PURE_INFER, .infer_shape = conv_grad_infer}

static const ct_op_def defs[] = {
    CONV_GRAD("conv2d_grad"),
    CONV_GRAD("depthwise_conv2d_grad"),
    {.type = "pool2d_grad", .inputs = pool_grad_in, .n_inputs = 3, .outputs = pool_grad_out,
     .n_outputs = 1, .attrs = ct__pool_attrs, .n_attrs = 10,
     .flags = CT_OP_PURE_INFER, .infer_shape = pool_grad_infer},
};

const ct__def_table ct__conv_grad_defs = CT__TABLE(defs);

/* ---- Grad-op makers ------------------------------------------------------------------------ */

ct_status ct__grad_conv2d(ct_grad_ctx *g) {
  const char *di = ct_grad_input_grad(g, "Input", 0), *df = ct_grad_input_grad(g, "Filter", 0);
  if (di == NULL && df == NULL) return CT_OK;
  char type[40];
  snprintf(type, sizeof type, "%s_grad", ct_op_type(ct_grad_forward(g)));
  ct_op *op = ct_grad_op_new(g, type);
  if (op == NULL) return ct_last_status();
  ct_status s = ct__grad_wire_in(op, "Input", ct_grad_input(g, "Input", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Filter", ct_grad_input(g, "Filter", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Output@GRAD", ct_grad_output_grad(g, "Output", 0));
  if (s == CT_OK && di != NULL) s = ct_op_set_output(op, "Input@GRAD", di);
  if (s == CT_OK && df != NULL) s = ct_op_set_output(op, "Filter@GRAD", df);
  return s == CT_OK ? ct_grad_copy_attrs(g, op) : s;
}

ct_status ct__grad_pool2d(ct_grad_ctx *g) {
  const char *dx = ct_grad_input_grad(g, "X", 0);
  if (dx == NULL) return CT_OK;
  ct_op *op = ct_grad_op_new(g, "pool2d_grad");
  if (op == NULL) return ct_last_status();
  ct_status s = ct__grad_wire_in(op, "X", ct_grad_input(g, "X", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Out", ct_grad_output(g, "Out", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Out@GRAD", ct_grad_output_grad(g, "Out", 0));
  if (s == CT_OK) s = ct_op_set_output(op, "X@GRAD", dx);
  return s == CT_OK ? ct_grad_copy_attrs(g, op) : s;
}
