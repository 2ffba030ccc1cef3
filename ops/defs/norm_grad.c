/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/norm_grad.c: the gradients of batch_norm and layer_norm: their grad op types
 * (PaddlePaddle's names and slots, the forward types' attributes) and grad-op makers.
 *
 *   batch_norm_grad  X, Scale, Bias, SavedMean, SavedVariance, Y@GRAD
 *                    -> X@GRAD, Scale@GRAD, Bias@GRAD (each optional)
 *   layer_norm_grad  X, Scale, Bias (optional), Mean, Variance, Y@GRAD
 *                    -> X@GRAD, Scale@GRAD, Bias@GRAD (each optional)
 * With xhat = (x - mean) inv and g = dY scale over one group of m elements (a channel, a row):
 *   Bias@GRAD = sum dY, Scale@GRAD = sum dY xhat (over the channel; for layer_norm over the rows,
 *   per row element);
 *   X@GRAD = inv (g - mean(g) - xhat mean(g xhat)) where the statistics come from the batch
 *   (batch_norm training, layer_norm), and X@GRAD = g inv where they are constants
 *   (batch_norm with is_test or use_global_stats: SavedMean and SavedVariance then hold Mean and
 *   1 / sqrt(Variance + epsilon)). The running statistics get no gradient. */
#include <corten/backward.h>

#include "ops/defs.h"

static const ct_slot_def bn_grad_in[] = {{"X", 0},           {"Scale", 0},
                                         {"Bias", 0},        {"SavedMean", 0},
                                         {"SavedVariance", 0}, {"Y@GRAD", 0}};
static const ct_slot_def ln_grad_in[] = {{"X", 0},        {"Scale", CT_SLOT_OPTIONAL},
                                         {"Bias", CT_SLOT_OPTIONAL}, {"Mean", 0},
                                         {"Variance", 0}, {"Y@GRAD", 0}};
static const ct_slot_def norm_grad_out[] = {{"X@GRAD", CT_SLOT_OPTIONAL},
                                            {"Scale@GRAD", CT_SLOT_OPTIONAL},
                                            {"Bias@GRAD", CT_SLOT_OPTIONAL}};

/* Y@GRAD (slot dy) has X's dims and dtype; the wired outputs take the dims of X and of the
 * n-element vectors. */
static ct_status norm_grad_outs(const ct_kernel_ctx *c, size_t dy, int64_t n) {
  ct_ddim x = ct_kernel_in(c, 0, 0)->dims;
  ct_status s = ct__k_check_dtype(c, dy, 0, c->dtype);
  if (s == CT_OK) s = ct__grad_check_dout(c, dy, x, "input X");
  if (s == CT_OK && ct_kernel_out_count(c, CT__NG_DX) > 0) s = ct__k_resize(c, CT__NG_DX, 0, x);
  for (size_t k = CT__NG_DSCALE; k <= CT__NG_DBIAS && s == CT_OK; k++) {
    if (ct_kernel_out_count(c, k) > 0) s = ct__k_resize(c, k, 0, CT_DIMS(n));
  }
  return s;
}

static ct_status bn_grad_infer(const ct_kernel_ctx *c) {
  ct__norm_plan p;
  ct_status s = ct__bn_plan(c, &p);
  for (size_t k = CT__BNG_SCALE; k <= CT__BNG_SAVED_VAR && s == CT_OK; k++) {
    s = ct__norm_check_vec(c, k, p.c, "one value per channel of X");
  }
  return s == CT_OK ? norm_grad_outs(c, CT__BNG_DY, p.c) : s;
}

static ct_status ln_grad_infer(const ct_kernel_ctx *c) {
  ct__norm_plan p;
  ct_status s = ct__ln_plan(c, &p);
  if (s == CT_OK) s = ct__norm_check_vec(c, CT__LNG_SCALE, p.inner, "one value per row element");
  if (s == CT_OK) s = ct__norm_check_vec(c, CT__LNG_BIAS, p.inner, "one value per row element");
  if (s == CT_OK) s = ct__norm_check_vec(c, CT__LNG_MEAN, p.outer, "one mean per row");
  if (s == CT_OK) s = ct__norm_check_vec(c, CT__LNG_VARIANCE, p.outer, "one variance per row");
  return s == CT_OK ? norm_grad_outs(c, CT__LNG_DY, p.inner) : s;
}

static const ct_op_def defs[] = {
    {.type = "batch_norm_grad", .inputs = bn_grad_in, .n_inputs = 6, .outputs = norm_grad_out,
     .n_outputs = 3, .attrs = ct__bn_attrs, .n_attrs = 5,
     .flags = CT_OP_PURE_INFER, .infer_shape = bn_grad_infer},
    {.type = "layer_norm_grad", .inputs = ln_grad_in, .n_inputs = 6, .outputs = norm_grad_out,
     .n_outputs = 3, .attrs = ct__ln_attrs, .n_attrs = 2,
     .flags = CT_OP_PURE_INFER, .infer_shape = ln_grad_infer},
};

const ct__def_table ct__norm_grad_defs = CT__TABLE(defs);

/* ---- The grad-op makers ---------------------------------------------------------------------- */

/* Wires the forward op's input slot `slot` (when it has one) to the same slot of op, and its
 * gradient (when wanted) to output slot `slot`@GRAD. */
static ct_status wire_param(ct_grad_ctx *g, ct_op *op, const char *slot, const char *grad_slot,
                            const char *dparam) {
  ct_status s = CT_OK;
  if (ct_grad_input_count(g, slot) > 0) s = ct__grad_wire_in(op, slot, ct_grad_input(g, slot, 0));
  if (s == CT_OK && dparam != NULL) s = ct_op_set_output(op, grad_slot, dparam);
  return s;
}

/* The common maker: grad type `type`, the forward op's statistics outputs `mean` and `var` wired
 * to the grad op's slots of the same names. */
static ct_status norm_grad(ct_grad_ctx *g, const char *type, const char *mean, const char *var) {
  const char *dx = ct_grad_input_grad(g, "X", 0);
  const char *dscale = ct_grad_input_count(g, "Scale") ? ct_grad_input_grad(g, "Scale", 0) : NULL;
  const char *dbias = ct_grad_input_count(g, "Bias") ? ct_grad_input_grad(g, "Bias", 0) : NULL;
  if (dx == NULL && dscale == NULL && dbias == NULL) return CT_OK;
  ct_op *op = ct_grad_op_new(g, type);
  if (op == NULL) return ct_last_status();
  ct_status s = ct__grad_wire_in(op, "X", ct_grad_input(g, "X", 0));
  if (s == CT_OK) s = wire_param(g, op, "Scale", "Scale@GRAD", dscale);
  if (s == CT_OK) s = wire_param(g, op, "Bias", "Bias@GRAD", dbias);
  if (s == CT_OK) s = ct__grad_wire_in(op, mean, ct_grad_output(g, mean, 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, var, ct_grad_output(g, var, 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Y@GRAD", ct_grad_output_grad(g, "Y", 0));
  if (s == CT_OK && dx != NULL) s = ct_op_set_output(op, "X@GRAD", dx);
  return s == CT_OK ? ct_grad_copy_attrs(g, op) : s;
}

ct_status ct__grad_batch_norm(ct_grad_ctx *g) {
  return norm_grad(g, "batch_norm_grad", "SavedMean", "SavedVariance");
}

ct_status ct__grad_layer_norm(ct_grad_ctx *g) {
  return norm_grad(g, "layer_norm_grad", "Mean", "Variance");
}
