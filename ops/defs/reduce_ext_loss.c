/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/reduce_ext_loss.c: the op type nll_loss (PyTorch's and ONNX's negative log likelihood
 * over log-probabilities) and its gradient: slots, attributes, shapes and the label check.
 *
 *   nll_loss       X [N, C, d1 ... dk] (float), Label [N, d1 ... dk] (int64 or int32), Weight [C]
 *                  (optional, X's dtype) -> Out: each position's loss is -w[l] x[n][l][d] for its
 *                  label l (w 1 without Weight), 0 where l equals ignore_index. reduction "none"
 *                  gives them in Label's dims; "sum" their sum; "mean" their sum divided by the
 *                  sum of the weights w[l] of the positions not ignored (NaN when that is 0, as
 *                  PyTorch gives). Both are rank 0. A label outside [0, C) that is not
 *                  ignore_index is refused.
 *   nll_loss_grad  X, Label, Weight, Out@GRAD -> X@GRAD (X's dims): -w[l] g at each label's
 *                  class (g divided by the weight sum for "mean"), 0 elsewhere.
 * ONNX's SoftmaxCrossEntropyLoss is log_softmax along axis 1 followed by nll_loss. */
#include <string.h>

#include <corten/backward.h>

#include "ops/defs/reduce_ext.h"

const ct_slot_def ct__nll_in[3] = {{"X", 0}, {"Label", 0}, {"Weight", CT_SLOT_OPTIONAL}};
const ct_slot_def ct__nll_grad_in[4] = {
    {"X", 0}, {"Label", 0}, {"Weight", CT_SLOT_OPTIONAL}, {"Out@GRAD", 0}};
const ct_attr_def ct__nll_attrs[2] = {
    {"reduction", {.type = CT_ATTR_STRING, .u.s = "mean"}, false},
    {"ignore_index", {.type = CT_ATTR_INT, .u.i = -100}, false},
};

ct_status ct__nll_make_plan(const ct_kernel_ctx *c, ct__nll_plan *p) {
  const ct_tensor *x = ct_kernel_in(c, CT__NLL_X, 0), *l = ct_kernel_in(c, CT__NLL_LABEL, 0);
  const char *red = c->attr[CT__NLL_REDUCTION].u.s;
  if (strcmp(red, "none") == 0) {
    p->reduction = CT__NLL_NONE;
  } else if (strcmp(red, "sum") == 0) {
    p->reduction = CT__NLL_SUM;
  } else if (strcmp(red, "mean") == 0) {
    p->reduction = CT__NLL_MEAN;
  } else {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute reduction is \"%s\": use \"none\", \"sum\" or \"mean\"", red);
  }
  if (!ct__rx_is_float(x->dtype)) {
    return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH,
                          "input X variable '%s' is %s: the log-probabilities are float16, "
                          "float32 or float64",
                          ct_kernel_in_name(c, CT__NLL_X, 0), ct_dtype_name(x->dtype));
  }
  if (l->dtype != CT_INT64 && l->dtype != CT_INT32) {
    return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH,
                          "input Label variable '%s' is %s: the class indices are int64 or int32",
                          ct_kernel_in_name(c, CT__NLL_LABEL, 0), ct_dtype_name(l->dtype));
  }
  bool ok = x->dims.rank >= 2 && l->dims.rank == x->dims.rank - 1 && l->dims.d[0] == x->dims.d[0];
  p->d = 1;
  for (int k = 2; ok && k < x->dims.rank; k++) {
    ok = l->dims.d[k - 1] == x->dims.d[k];
    p->d *= x->dims.d[k];
  }
  if (!ok) {
    char a[CT__DDIM_STR_CAP], b[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input X variable '%s' is %s and input Label variable '%s' is %s: X "
                          "must be [N, C, d...] and Label [N, d...]",
                          ct_kernel_in_name(c, CT__NLL_X, 0), ct_ddim_str(x->dims, a, sizeof a),
                          ct_kernel_in_name(c, CT__NLL_LABEL, 0),
                          ct_ddim_str(l->dims, b, sizeof b));
  }
  p->n = x->dims.d[0];
  p->c = x->dims.d[1];
  p->label = l->dims;
  if (ct_kernel_in_count(c, CT__NLL_WEIGHT) > 0) {
    return ct__norm_check_vec(c, CT__NLL_WEIGHT, p->c, "one weight per class of X");
  }
  return CT_OK;
}

ct_status ct__nll_check_labels(const ct_kernel_ctx *c, const ct__nll_plan *p) {
  const ct_tensor *lt = ct_kernel_in(c, CT__NLL_LABEL, 0);
  const void *l = ct__k_in_data(lt);
  int64_t ign = c->attr[CT__NLL_IGNORE_INDEX].u.i;
  for (int64_t i = 0; i < lt->numel; i++) {
    int64_t v = ct__nll_label(l, lt->dtype, i);
    if (v == ign || (v >= 0 && v < p->c)) continue;
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "input Label variable '%s' holds %lld at position %lld: a label is a "
                          "class in [0, %lld) or ignore_index (%lld)",
                          ct_kernel_in_name(c, CT__NLL_LABEL, 0), (long long)v, (long long)i,
                          (long long)p->c, (long long)ign);
  }
  return CT_OK;
}

ct_status ct__nll_infer(const ct_kernel_ctx *c) {
  ct__nll_plan p;
  ct_status s = ct__nll_make_plan(c, &p);
  if (s != CT_OK) return s;
  return ct__k_resize(c, CT__OUT, 0, p.reduction == CT__NLL_NONE ? p.label : CT_DIMS());
}

ct_status ct__nll_grad_infer(const ct_kernel_ctx *c) {
  ct__nll_plan p;
  ct_status s = ct__nll_make_plan(c, &p);
  if (s == CT_OK) s = ct__k_check_dtype(c, CT__NLL_DOUT, 0, c->dtype);
  if (s == CT_OK) {
    s = ct__grad_check_dout(c, CT__NLL_DOUT, p.reduction == CT__NLL_NONE ? p.label : CT_DIMS(),
                            "the loss");
  }
  return s == CT_OK ? ct__k_resize(c, 0, 0, ct_kernel_in(c, CT__NLL_X, 0)->dims) : s;
}

ct_status ct__grad_nll_loss(ct_grad_ctx *g) {
  const char *dx = ct_grad_input_grad(g, "X", 0);
  if (dx == NULL) return CT_OK;
  ct_op *op = ct_grad_op_new(g, "nll_loss_grad");
  if (op == NULL) return ct_last_status();
  ct_status s = ct__grad_wire_in(op, "X", ct_grad_input(g, "X", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Label", ct_grad_input(g, "Label", 0));
  if (s == CT_OK && ct_grad_input_count(g, "Weight") > 0) {
    s = ct__grad_wire_in(op, "Weight", ct_grad_input(g, "Weight", 0));
  }
  if (s == CT_OK) s = ct__grad_wire_in(op, "Out@GRAD", ct_grad_output_grad(g, "Out", 0));
  if (s == CT_OK) s = ct_op_set_output(op, "X@GRAD", dx);
  return s == CT_OK ? ct_grad_copy_attrs(g, op) : s;
}

/* ---- What each op type computes (ct_op_type_doc) --------------------------------------------- */
static const ct__op_doc docs[] = {
    {"nll_loss", "Negative log likelihood over log-probabilities X [N, C, d1 ... dk] (float) with "
                 "Label [N, d1 ... dk] (int64 or int32) and Weight [C] (optional, X's dtype): "
                 "the loss at each position is `-Weight[l] X[n, l, d...]` for its label l "
                 "(weight 1 without Weight), 0 where l equals ignore_index (default -100). "
                 "reduction \"none\" gives the losses in Label's dims, \"sum\" their sum and "
                 "\"mean\" (the default) their sum divided by the sum of the weights of the "
                 "positions not ignored (NaN when that is 0), both rank 0. A label outside [0, "
                 "C) other than ignore_index is refused when the op runs; log_softmax along axis "
                 "1 before it makes a softmax cross entropy."},
};

const ct__doc_table ct__reduce_ext_loss_docs = CT__TABLE(docs);
