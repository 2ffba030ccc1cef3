/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/pool_nd_grad.c: the gradients of pool_nd, lrn and instance_norm: their grad op types
 * (the forward types' attributes) and grad-op makers. max_unpool has none.
 *
 *   pool_nd_grad        X, Out@GRAD -> X@GRAD (X's dims): max sends each output's gradient to
 *                       the tap the forward op kept (its first largest, found again from X);
 *                       avg spreads it evenly over the taps inside X, each getting
 *                       dOut / the forward's divisor. Contributions add in output order.
 *   lrn_grad            X, Out@GRAD -> X@GRAD: with s_c = bias + alpha / size sq_c,
 *                       dX_j = dOut_j s_j^-beta - 2 beta alpha / size X_j
 *                              sum over the c whose window holds j of dOut_c X_c s_c^(-beta-1)
 *   instance_norm_grad  X, Scale, Y@GRAD -> X@GRAD, Scale@GRAD, Bias@GRAD (each optional): per
 *                       (n, c), with xhat = (X - mean) / sqrt(var + eps) and g = Y@GRAD Scale[c],
 *                       X@GRAD = (g - mean(g) - xhat mean(g xhat)) / sqrt(var + eps);
 *                       Scale@GRAD[c] = sum over n and the elements of Y@GRAD xhat,
 *                       Bias@GRAD[c] = the sum of Y@GRAD. */
#include <corten/backward.h>

#include "ops/defs/pool_nd.h"

static const ct_slot_def x_dout_in[] = {{"X", 0}, {"Out@GRAD", 0}};
static const ct_slot_def dx_out[] = {{"X@GRAD", 0}};
static const ct_slot_def inn_grad_in[] = {{"X", 0}, {"Scale", 0}, {"Y@GRAD", 0}};
static const ct_slot_def inn_grad_out[] = {
    {"X@GRAD", CT_SLOT_OPTIONAL},
    {"Scale@GRAD", CT_SLOT_OPTIONAL},
    {"Bias@GRAD", CT_SLOT_OPTIONAL}};

static ct_status pnd_grad_infer(const ct_kernel_ctx *c) {
  const ct_tensor *x = ct_kernel_in(c, CT__PNDG_X, 0);
  ct__pnd_plan p;
  ct_status s = ct__pnd_plan_make(c, x->dims, &p);
  if (s == CT_OK) s = ct__k_check_dtype(c, CT__PNDG_DOUT, 0, x->dtype);
  if (s == CT_OK) {
    s = ct__grad_check_dout(c, CT__PNDG_DOUT, ct__pnd_out_dims(&p), "the pooling of X");
  }
  return s == CT_OK ? ct__k_resize(c, 0, 0, x->dims) : s;
}

static ct_status inn_grad_infer(const ct_kernel_ctx *c) {
  const ct_tensor *x = ct_kernel_in(c, CT__INNG_X, 0);
  ct_status s = ct__inn_check(c, CT__INNG_SCALE, (size_t)-1);
  if (s == CT_OK) s = ct__k_check_dtype(c, CT__INNG_DY, 0, x->dtype);
  if (s == CT_OK) s = ct__grad_check_dout(c, CT__INNG_DY, x->dims, "input X");
  for (size_t k = 0; k < 3 && s == CT_OK; k++) {
    if (ct_kernel_out_count(c, k) == 0) continue;
    s = ct__k_resize(c, k, 0, k == 0 ? x->dims : ct_kernel_in(c, CT__INNG_SCALE, 0)->dims);
  }
  return s;
}

/* lrn_grad checks size as lrn does (its kernel divides by it and reaches size - 1 channels). */
static ct_status lrn_grad_infer(const ct_kernel_ctx *c) {
  ct_status s = ct__lrn_check_size(c);
  return s == CT_OK ? ct__unary_grad_infer(c) : s;
}

static const ct_op_def defs[] = {
    {.type = "pool_nd_grad", .inputs = x_dout_in, .n_inputs = 2, .outputs = dx_out,
     .n_outputs = 1, .attrs = ct__pnd_attrs, .n_attrs = CT__PND_N_ATTRS,
     .flags = CT_OP_PURE_INFER, .infer_shape = pnd_grad_infer},
    {.type = "lrn_grad", .inputs = x_dout_in, .n_inputs = 2, .outputs = dx_out, .n_outputs = 1,
     .attrs = ct__lrn_attrs, .n_attrs = 4, .flags = CT_OP_PURE_INFER,
     .infer_shape = lrn_grad_infer},
    {.type = "instance_norm_grad", .inputs = inn_grad_in, .n_inputs = 3, .outputs = inn_grad_out,
     .n_outputs = 3, .attrs = ct__inn_attrs, .n_attrs = 1, .flags = CT_OP_PURE_INFER,
     .infer_shape = inn_grad_infer},
};

const ct__def_table ct__pool_nd_grad_defs = CT__TABLE(defs);

/* ---- The grad-op makers ---------------------------------------------------------------------- */

/* `type` reading X and Out's gradient, writing X@GRAD (pool_nd_grad, lrn_grad). */
static ct_status x_grad(ct_grad_ctx *g, const char *type) {
  const char *dx = ct_grad_input_grad(g, "X", 0);
  if (dx == NULL) return CT_OK;
  ct_op *op = ct_grad_op_new(g, type);
  if (op == NULL) return ct_last_status();
  ct_status s = ct__grad_wire_in(op, "X", ct_grad_input(g, "X", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Out@GRAD", ct_grad_output_grad(g, "Out", 0));
  if (s == CT_OK) s = ct_op_set_output(op, "X@GRAD", dx);
  return s == CT_OK ? ct_grad_copy_attrs(g, op) : s;
}

ct_status ct__grad_pool_nd(ct_grad_ctx *g) { return x_grad(g, "pool_nd_grad"); }
ct_status ct__grad_lrn(ct_grad_ctx *g) { return x_grad(g, "lrn_grad"); }

ct_status ct__grad_instance_norm(ct_grad_ctx *g) {
  const char *dx = ct_grad_input_grad(g, "X", 0), *ds = ct_grad_input_grad(g, "Scale", 0),
             *db = ct_grad_input_grad(g, "Bias", 0);
  if (dx == NULL && ds == NULL && db == NULL) return CT_OK;
  ct_op *op = ct_grad_op_new(g, "instance_norm_grad");
  if (op == NULL) return ct_last_status();
  ct_status s = ct__grad_wire_in(op, "X", ct_grad_input(g, "X", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Scale", ct_grad_input(g, "Scale", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Y@GRAD", ct_grad_output_grad(g, "Y", 0));
  if (s == CT_OK && dx != NULL) s = ct_op_set_output(op, "X@GRAD", dx);
  if (s == CT_OK && ds != NULL) s = ct_op_set_output(op, "Scale@GRAD", ds);
  if (s == CT_OK && db != NULL) s = ct_op_set_output(op, "Bias@GRAD", db);
  return s == CT_OK ? ct_grad_copy_attrs(g, op) : s;
}
