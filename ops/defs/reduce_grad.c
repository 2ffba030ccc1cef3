/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/reduce_grad.c: the gradient op types of the reduce family (PaddlePaddle's names and
 * slots). Their makers are the shared ones of ops/defs/elementwise_grad.c.
 *
 *   sum              X_i@GRAD = Out@GRAD for each input: one `assign` per input that needs it
 *   mean_grad        X, Out@GRAD -> X@GRAD: Out@GRAD / numel(X) everywhere
 *   reduce_sum_grad  X, Out@GRAD -> X@GRAD; dim, keep_dim: Out@GRAD broadcast back over the
 *                    summed dims
 *   softmax_grad     Out, Out@GRAD -> X@GRAD; axis: Out (Out@GRAD - sum(Out@GRAD Out)), the sum
 *                    along axis */
#include "ops/defs.h"

enum { IN_A = 0, IN_DOUT = 1 }; /* X or Out, then Out@GRAD */

/* Out@GRAD has the dtype of the first input; X@GRAD takes that input's dims. */
static ct_status finish_infer(const ct_kernel_ctx *c, ct_status s) {
  if (s != CT_OK) return s;
  return ct__k_resize(c, CT__G_DX, 0, ct_kernel_in(c, IN_A, 0)->dims);
}

static ct_status mean_grad_infer(const ct_kernel_ctx *c) {
  ct_status s = ct__k_check_dtype(c, IN_DOUT, 0, ct_kernel_in(c, IN_A, 0)->dtype);
  if (s == CT_OK) s = ct__grad_check_dout(c, IN_DOUT, CT_DIMS(), "the mean of X");
  return finish_infer(c, s);
}

static ct_status rs_grad_infer(const ct_kernel_ctx *c) {
  const ct_tensor *x = ct_kernel_in(c, IN_A, 0);
  ct_status s = ct__k_check_dtype(c, IN_DOUT, 0, x->dtype);
  ct_ddim want;
  if (s == CT_OK) s = ct__rs_out_dims(c, x->dims, &want);
  if (s == CT_OK) s = ct__grad_check_dout(c, IN_DOUT, want, "the sum of X over attribute 'dim'");
  return finish_infer(c, s);
}

static ct_status sm_grad_infer(const ct_kernel_ctx *c) {
  const ct_tensor *out = ct_kernel_in(c, IN_A, 0);
  ct_status s = ct__k_check_dtype(c, IN_DOUT, 0, out->dtype);
  int axis;
  if (s == CT_OK) s = ct__k_axis(c, "axis", c->attr[CT__SOFTMAX_AXIS].u.i, out->dims.rank, &axis);
  if (s == CT_OK) s = ct__grad_check_dout(c, IN_DOUT, out->dims, "input Out");
  return finish_infer(c, s);
}

static const ct_slot_def x_dout[] = {{"X", 0}, {"Out@GRAD", 0}};
static const ct_slot_def out_dout[] = {{"Out", 0}, {"Out@GRAD", 0}};
static const ct_slot_def dx[] = {{"X@GRAD", 0}};

/* In the forward types' order, so CT__RS_* and CT__SOFTMAX_AXIS index these too. */
static const ct_attr_def rs_grad_attrs[] = {
    {"dim", {.type = CT_ATTR_INTS, .u.ints = {NULL, 0}}, false},
    {"keep_dim", {.type = CT_ATTR_BOOL, .u.b = false}, false},
};
static const ct_attr_def sm_grad_attrs[] = {{"axis", {.type = CT_ATTR_INT, .u.i = -1}, false}};

static const ct_op_def defs[] = {
    {.type = "mean_grad", .inputs = x_dout, .n_inputs = 2, .outputs = dx, .n_outputs = 1,
     .flags = CT_OP_PURE_INFER, .infer_shape = mean_grad_infer},
    {.type = "reduce_sum_grad", .inputs = x_dout, .n_inputs = 2, .outputs = dx, .n_outputs = 1,
     .attrs = rs_grad_attrs, .n_attrs = 2, .flags = CT_OP_PURE_INFER, .infer_shape = rs_grad_infer},
    {.type = "softmax_grad", .inputs = out_dout, .n_inputs = 2, .outputs = dx, .n_outputs = 1,
     .attrs = sm_grad_attrs, .n_attrs = 1, .flags = CT_OP_PURE_INFER, .infer_shape = sm_grad_infer},
};

const ct__def_table ct__reduce_grad_defs = CT__TABLE(defs);
