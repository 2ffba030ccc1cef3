/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/reduce_ext_grad.c: the gradients of the reduce_ext family's reductions and softmax
 * rows (ops/defs/reduce_ext.c): their grad types' slots and shapes, and the grad-op makers.
 *
 *   reduce_<kind>_grad  X, Axes (optional), Out, Out@GRAD -> X@GRAD (X's dims), each element
 *       taking its group's Out@GRAD g times dOut/dx: sum 1, mean 1/n, max and min 1 where x
 *       equals Out (every tied element) and 0 elsewhere, prod the product of the others, l1
 *       sign(x), l2 x / Out (0 where Out is 0), log_sum 1 / exp(Out), log_sum_exp
 *       exp(x - Out), sum_square 2x. Axes gets no gradient.
 *   log_softmax_grad    Out, Out@GRAD -> X@GRAD: g - exp(Out) sum(g) along the row
 *   softmax_v2_grad     Out, Out@GRAD -> X@GRAD: Out (g - sum(g Out)) along the row
 * hardmax and the arg-extremes have none (their outputs are piecewise constant). */
#include <stdio.h>

#include <corten/backward.h>

#include "ops/defs/reduce_ext.h"

const ct_slot_def ct__rx_grad_in[4] = {
    {"X", 0}, {"Axes", CT_SLOT_OPTIONAL}, {"Out", 0}, {"Out@GRAD", 0}};
const ct_slot_def ct__rx_dx_out[1] = {{"X@GRAD", 0}};
const ct_slot_def ct__sx_grad_in[2] = {{"Out", 0}, {"Out@GRAD", 0}};

ct_status ct__rx_grad_infer(const ct_kernel_ctx *c) {
  ct__rx_plan p;
  ct_status s = ct__rx_make_plan(c, &p);
  if (s == CT_OK) s = ct__k_check_dtype(c, CT__RXG_OUT, 0, c->dtype);
  if (s == CT_OK) s = ct__k_check_dtype(c, CT__RXG_DOUT, 0, c->dtype);
  if (s == CT_OK) s = ct__grad_check_dout(c, CT__RXG_OUT, p.out, "the reduction of X");
  if (s == CT_OK) s = ct__grad_check_dout(c, CT__RXG_DOUT, p.out, "the reduction of X");
  return s == CT_OK ? ct__k_resize(c, 0, 0, p.x) : s;
}

ct_status ct__sx_grad_infer(const ct_kernel_ctx *c) {
  ct__norm_plan p;
  const ct_tensor *o = ct_kernel_in(c, CT__SXG_OUT, 0);
  ct_status s = ct__sx_plan(c, &p);
  if (s == CT_OK) s = ct__k_check_dtype(c, CT__SXG_DOUT, 0, c->dtype);
  if (s == CT_OK) s = ct__grad_check_dout(c, CT__SXG_DOUT, o->dims, "input Out");
  return s == CT_OK ? ct__k_resize(c, 0, 0, o->dims) : s;
}

/* The grad type of the forward op: its type with "_grad". */
static ct_op *grad_op(ct_grad_ctx *g) {
  char type[64];
  snprintf(type, sizeof type, "%s_grad", ct_grad_forward(g)->def->type);
  return ct_grad_op_new(g, type);
}

ct_status ct__grad_reduce_ext(ct_grad_ctx *g) {
  const char *dx = ct_grad_input_grad(g, "X", 0);
  if (dx == NULL) return CT_OK;
  ct_op *op = grad_op(g);
  if (op == NULL) return ct_last_status();
  ct_status s = ct__grad_wire_in(op, "X", ct_grad_input(g, "X", 0));
  if (s == CT_OK && ct_grad_input_count(g, "Axes") > 0) {
    s = ct__grad_wire_in(op, "Axes", ct_grad_input(g, "Axes", 0));
  }
  if (s == CT_OK) s = ct__grad_wire_in(op, "Out", ct_grad_output(g, "Out", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Out@GRAD", ct_grad_output_grad(g, "Out", 0));
  if (s == CT_OK) s = ct_op_set_output(op, "X@GRAD", dx);
  return s == CT_OK ? ct_grad_copy_attrs(g, op) : s;
}

ct_status ct__grad_softmax_ext(ct_grad_ctx *g) {
  const char *dx = ct_grad_input_grad(g, "X", 0);
  if (dx == NULL) return CT_OK;
  ct_op *op = grad_op(g);
  if (op == NULL) return ct_last_status();
  ct_status s = ct__grad_wire_in(op, "Out", ct_grad_output(g, "Out", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Out@GRAD", ct_grad_output_grad(g, "Out", 0));
  if (s == CT_OK) s = ct_op_set_output(op, "X@GRAD", dx);
  return s == CT_OK ? ct_grad_copy_attrs(g, op) : s;
}
