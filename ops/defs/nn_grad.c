/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/nn_grad.c: the gradients of gelu, lookup_table_v2 and dropout: their grad op types
 * (PaddlePaddle's names and slots, the forward types' attributes) and grad-op makers. arg_max
 * has none (its output is an index).
 *
 *   gelu_grad             X, Out@GRAD -> X@GRAD: dOut (Phi(x) + x phi(x)) exactly, or the
 *                         derivative of the tanh form with approximate
 *   lookup_table_v2_grad  W, Ids, Out@GRAD -> W@GRAD (W's dims): zeros, then row Out@GRAD[i]
 *                         added into row Ids[i] for each i in order (an id seen twice gets both
 *                         rows); ids equal to padding_idx add nothing. Ids gets no gradient.
 *   dropout_grad          Out@GRAD, Mask -> X@GRAD: dOut Mask (divided by 1 - dropout_prob with
 *                         "upscale_in_train"); in test mode dOut, or dOut (1 - dropout_prob)
 *                         with "downgrade_in_infer" (the forward's factor). */
#include <corten/backward.h>

#include "ops/defs.h"

static const ct_slot_def gelu_grad_in[] = {{"X", 0}, {"Out@GRAD", 0}};
static const ct_slot_def dx_out[] = {{"X@GRAD", 0}};
static const ct_slot_def lt_grad_in[] = {{"W", 0}, {"Ids", 0}, {"Out@GRAD", 0}};
static const ct_slot_def lt_grad_out[] = {{"W@GRAD", 0}};
static const ct_slot_def do_grad_in[] = {{"Out@GRAD", 0}, {"Mask", 0}};

static ct_status lt_grad_infer(const ct_kernel_ctx *c) {
  ct_ddim out;
  ct_status s = ct__lt_dims(c, &out);
  if (s == CT_OK) s = ct__k_check_dtype(c, CT__LTG_DOUT, 0, c->dtype);
  if (s == CT_OK) s = ct__grad_check_dout(c, CT__LTG_DOUT, out, "the lookup of Ids in W");
  return s == CT_OK ? ct__k_resize(c, 0, 0, ct_kernel_in(c, CT__LT_W, 0)->dims) : s;
}

static ct_status do_grad_infer(const ct_kernel_ctx *c) {
  ct_status s = ct__dropout_check(c);
  const ct_tensor *m = ct_kernel_in(c, CT__DOG_MASK, 0);
  if (s == CT_OK) s = ct__k_check_dtype(c, CT__DOG_MASK, 0, CT_UINT8);
  if (s == CT_OK) s = ct__grad_check_dout(c, CT__DOG_DOUT, m->dims, "input Mask");
  return s == CT_OK ? ct__k_resize(c, 0, 0, m->dims) : s;
}

static const ct_op_def defs[] = {
    {.type = "gelu_grad", .inputs = gelu_grad_in, .n_inputs = 2, .outputs = dx_out,
     .n_outputs = 1, .attrs = ct__gelu_attrs, .n_attrs = 1,
     .flags = CT_OP_PURE_INFER, .infer_shape = ct__unary_grad_infer},
    {.type = "lookup_table_v2_grad", .inputs = lt_grad_in, .n_inputs = 3, .outputs = lt_grad_out,
     .n_outputs = 1, .attrs = ct__lt_attrs, .n_attrs = 1,
     .flags = CT_OP_PURE_INFER, .infer_shape = lt_grad_infer},
    {.type = "dropout_grad", .inputs = do_grad_in, .n_inputs = 2, .outputs = dx_out,
     .n_outputs = 1, .attrs = ct__do_attrs, .n_attrs = 5,
     .flags = CT_OP_PURE_INFER, .infer_shape = do_grad_infer},
};

const ct__def_table ct__nn_grad_defs = CT__TABLE(defs);

/* ---- The grad-op makers ---------------------------------------------------------------------- */

ct_status ct__grad_lookup_table_v2(ct_grad_ctx *g) {
  const char *dw = ct_grad_input_grad(g, "W", 0);
  if (dw == NULL) return CT_OK;
  ct_op *op = ct_grad_op_new(g, "lookup_table_v2_grad");
  if (op == NULL) return ct_last_status();
  ct_status s = ct__grad_wire_in(op, "W", ct_grad_input(g, "W", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Ids", ct_grad_input(g, "Ids", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Out@GRAD", ct_grad_output_grad(g, "Out", 0));
  if (s == CT_OK) s = ct_op_set_output(op, "W@GRAD", dw);
  return s == CT_OK ? ct_grad_copy_attrs(g, op) : s;
}

ct_status ct__grad_dropout(ct_grad_ctx *g) {
  const char *dx = ct_grad_input_grad(g, "X", 0);
  if (dx == NULL) return CT_OK;
  ct_op *op = ct_grad_op_new(g, "dropout_grad");
  if (op == NULL) return ct_last_status();
  ct_status s = ct__grad_wire_in(op, "Out@GRAD", ct_grad_output_grad(g, "Out", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Mask", ct_grad_output(g, "Mask", 0));
  if (s == CT_OK) s = ct_op_set_output(op, "X@GRAD", dx);
  return s == CT_OK ? ct_grad_copy_attrs(g, op) : s;
}
