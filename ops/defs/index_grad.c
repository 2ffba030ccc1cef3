/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/index_grad.c: the gradients of the index family. Each grad type takes its forward's
 * input slots and attributes, then Out@GRAD, and writes the first input's gradient:
 *
 *   strided_slice_grad  Input ..., Out@GRAD -> Input@GRAD: zeros, Out@GRAD at the sliced places
 *   gather_grad         X, Index, Out@GRAD -> X@GRAD: zeros, each Out@GRAD row added at its
 *                       index (an index met twice gets both)
 *   expand_grad         X, Shape, Out@GRAD -> X@GRAD: Out@GRAD summed over the broadcast dims
 *   tile_grad           X, RepeatTimes, Out@GRAD -> X@GRAD: the sum of the copies
 *   pad_grad            X, Paddings, PadValue, Out@GRAD -> X@GRAD: each Out@GRAD element added
 *                       to the X element it came from (none for the constant)
 *
 * squeeze, unsqueeze and flatten take reshape_grad (X@GRAD is Out@GRAD viewed with X's dims);
 * split takes a concat of its pieces' gradients. shape and size have none (ct__grad_none). */
#include <stdio.h>
#include <string.h>

#include <corten/backward.h>

#include "ops/defs/index.h"

#define OPT CT_SLOT_OPTIONAL
const ct_slot_def ct__ix_slice_grad_in[6] = {{"Input", 0},        {"StartsTensor", OPT},
                                             {"EndsTensor", OPT}, {"AxesTensor", OPT},
                                             {"StridesTensor", OPT}, {"Out@GRAD", 0}};
const ct_slot_def ct__ix_gather_grad_in[3] = {{"X", 0}, {"Index", 0}, {"Out@GRAD", 0}};
const ct_slot_def ct__ix_expand_grad_in[3] = {{"X", 0}, {"Shape", OPT}, {"Out@GRAD", 0}};
const ct_slot_def ct__ix_tile_grad_in[3] = {{"X", 0}, {"RepeatTimes", OPT}, {"Out@GRAD", 0}};
const ct_slot_def ct__ix_pad_grad_in[4] = {{"X", 0}, {"Paddings", OPT}, {"PadValue", OPT},
                                           {"Out@GRAD", 0}};
const ct_slot_def ct__ix_slice_grad_out[1] = {{"Input@GRAD", 0}};
const ct_slot_def ct__ix_x_grad_out[1] = {{"X@GRAD", 0}};

/* Out@GRAD (the last input slot) has dims want and the forward's dtype; X@GRAD takes input 0's. */
static ct_status grad_finish(const ct_kernel_ctx *c, size_t dout, ct_ddim want) {
  const ct_tensor *x = ct_kernel_in(c, 0, 0);
  ct_status s = ct__k_check_dtype(c, dout, 0, x->dtype);
  if (s == CT_OK) s = ct__grad_check_dout(c, dout, want, "the forward op's Out");
  return s == CT_OK ? ct__k_resize(c, 0, 0, x->dims) : s;
}

ct_status ct__ix_slice_grad_infer(const ct_kernel_ctx *c) {
  ct__ix_slice_plan p;
  ct_status s = ct__ix_slice_plan_make(c, &p);
  return s == CT_OK ? grad_finish(c, 5, p.out) : s;
}

ct_status ct__ix_gather_grad_infer(const ct_kernel_ctx *c) {
  ct__ix_gather_plan p;
  ct_status s = ct__ix_gather_plan_make(c, &p);
  return s == CT_OK ? grad_finish(c, 2, p.out) : s;
}

ct_status ct__ix_expand_grad_infer(const ct_kernel_ctx *c) {
  ct_ddim d;
  ct_status s = ct__ix_expand_dims(c, ct_kernel_in(c, 0, 0)->dims, &d);
  return s == CT_OK ? grad_finish(c, 2, d) : s;
}

ct_status ct__ix_tile_grad_infer(const ct_kernel_ctx *c) {
  ct_ddim d;
  ct_status s = ct__ix_tile_dims(c, ct_kernel_in(c, 0, 0)->dims, &d);
  return s == CT_OK ? grad_finish(c, 2, d) : s;
}

ct_status ct__ix_pad_grad_infer(const ct_kernel_ctx *c) {
  ct__ix_pad_plan p;
  ct_status s = ct__ix_pad_plan_make(c, ct_kernel_in(c, 0, 0)->dims, &p);
  return s == CT_OK ? grad_finish(c, 3, p.out) : s;
}

/* ---- Makers ---------------------------------------------------------------------------------- */

ct_status ct__ix_view_grad(ct_grad_ctx *g) {
  const char *dx = ct_grad_input_grad(g, "X", 0);
  if (dx == NULL) return CT_OK;
  ct_op *op = ct_grad_op_new(g, "reshape_grad");
  if (op == NULL) return ct_last_status();
  ct_status s = ct__grad_wire_in(op, "X", ct_grad_input(g, "X", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Out@GRAD", ct_grad_output_grad(g, "Out", 0));
  return s == CT_OK ? ct_op_set_output(op, "X@GRAD", dx) : s;
}

ct_status ct__ix_grad_generic(ct_grad_ctx *g) {
  const ct_op *fw = ct_grad_forward(g);
  ct_op_def d;
  ct_status s = ct_op_type_get(ct_op_type(fw), &d);
  if (s != CT_OK) return s;
  const char *dx = ct_grad_input_grad(g, d.inputs[0].name, 0);
  if (dx == NULL) return CT_OK;
  char type[64];
  snprintf(type, sizeof type, "%s_grad", d.type);
  ct_op *op = ct_grad_op_new(g, type);
  if (op == NULL) return ct_last_status();
  for (size_t k = 0; s == CT_OK && k < d.n_inputs; k++) {
    if (ct_grad_input_count(g, d.inputs[k].name) == 0) continue;
    s = ct__grad_wire_in(op, d.inputs[k].name, ct_grad_input(g, d.inputs[k].name, 0));
  }
  if (s == CT_OK) s = ct__grad_wire_in(op, "Out@GRAD", ct_grad_output_grad(g, "Out", 0));
  if (s == CT_OK) {
    char slot[64];
    snprintf(slot, sizeof slot, "%s@GRAD", d.inputs[0].name);
    s = ct_op_set_output(op, slot, dx);
  }
  return s == CT_OK ? ct_grad_copy_attrs(g, op) : s;
}

/* split: X@GRAD is the concat of the pieces' gradients along the axis (zeros for a piece the
 * loss does not read, which the pass fills). A run-time SectionsTensor does not matter: the
 * pieces' gradients carry their extents. */
ct_status ct__ix_grad_split(ct_grad_ctx *g) {
  const char *dx = ct_grad_input_grad(g, "X", 0);
  if (dx == NULL) return CT_OK;
  size_t n = ct_grad_output_count(g, "Out");
  const char *names[64];
  if (n > 64) {
    return ct__error(CT_ERR_OUT_OF_RANGE, "split: %zu outputs Out, more than 64 to differentiate",
                     n);
  }
  for (size_t i = 0; i < n; i++) {
    names[i] = ct_grad_output_grad(g, "Out", i);
    if (names[i] == NULL) return ct_last_status();
  }
  ct_op *op = ct_grad_op_new(g, "concat");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_inputs(op, "X", names, n);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", dx);
  int64_t axis = ct_grad_forward(g)->attr[CT__IX_SPLIT_AXIS].u.i;
  if (s == CT_OK) s = ct_op_set_attr_int(op, "axis", axis);
  return s;
}
