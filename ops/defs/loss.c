/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/loss.c: the loss op type softmax_with_cross_entropy and its gradient (PaddlePaddle's
 * names, slots and attributes): their shapes, the label checks every backend shares, and the
 * grad-op maker.
 *
 *   softmax_with_cross_entropy       Logits [N, C], Label -> Softmax [N, C], Loss [N, 1]
 *       hard labels (soft_label false): Label int64 [N] or [N, 1], class indices in [0, C);
 *       a row whose label is ignore_index (default -100) has loss 0 and gradient 0.
 *       soft labels (soft_label true): Label [N, C] of Logits' dtype, a distribution per row.
 *       Loss_i = logsumexp(Logits_i) - sum_j Label_ij Logits_ij (hard: the label's logit),
 *       computed from the row's maximum, so large logits neither overflow nor lose the loss.
 *   softmax_with_cross_entropy_grad  Softmax, Label, Loss@GRAD -> Logits@GRAD
 *       Logits@GRAD_ij = (Softmax_ij - onehot_ij) Loss@GRAD_i (hard), or
 *       (Softmax_ij sum_k Label_ik - Label_ij) Loss@GRAD_i (soft: exact also for rows that do
 *       not sum to 1).
 * As in PaddlePaddle, the gradient flows to Logits from Loss only: a loss that also reads the
 * Softmax output gets no gradient through it (differentiate a `softmax` op for that), and a
 * soft Label that depends on a parameter is refused by the maker. */
#include <corten/backward.h>

#include "ops/defs.h"

static const ct_slot_def sce_in[] = {{"Logits", 0}, {"Label", 0}};
static const ct_slot_def sce_out[] = {{"Softmax", 0}, {"Loss", 0}};
static const ct_slot_def sce_grad_in[] = {{"Softmax", 0}, {"Label", 0}, {"Loss@GRAD", 0}};
static const ct_slot_def sce_grad_out[] = {{"Logits@GRAD", 0}};

static const ct_attr_def sce_attrs[] = {
    {"soft_label", {.type = CT_ATTR_BOOL, .u.b = false}, false},
    {"ignore_index", {.type = CT_ATTR_INT, .u.i = -100}, false},
};

/* Input `slot` holds the [N, C] scores (Logits, or Softmax for the grad op): rank 2. */
static ct_status check_scores(const ct_kernel_ctx *c, size_t slot) {
  const ct_tensor *t = ct_kernel_in(c, slot, 0);
  if (CT__LIKELY(t->dims.rank == 2)) return CT_OK;
  char a[CT__DDIM_STR_CAP];
  return ct_kernel_fail(c, CT_ERR_SHAPE,
                        "input %s variable '%s' is %s: it must be [N, C] (a row of class scores "
                        "per example); reshape it to rank 2",
                        c->op->def->in[slot].name, ct_kernel_in_name(c, slot, 0),
                        ct_ddim_str(t->dims, a, sizeof a));
}

/* Label against the [N, C] scores in input slot `scores`: int64 [N] or [N, 1] (hard), or [N, C]
 * of the scores' dtype (soft). */
static ct_status check_label(const ct_kernel_ctx *c, size_t scores, size_t slot) {
  const ct_tensor *x = ct_kernel_in(c, scores, 0), *y = ct_kernel_in(c, slot, 0);
  bool soft = c->attr[CT__SCE_SOFT_LABEL].u.b;
  char a[CT__DDIM_STR_CAP], b[CT__DDIM_STR_CAP];
  int64_t n = x->dims.d[0];
  if (soft) {
    ct_status s = ct__k_check_dtype(c, slot, 0, x->dtype);
    if (s != CT_OK) return s;
    if (ct_ddim_equal(y->dims, x->dims)) return CT_OK;
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input Label variable '%s' is %s but input %s variable '%s' is %s: "
                          "soft labels (soft_label true) are one distribution per row, of the "
                          "scores' dims",
                          ct_kernel_in_name(c, slot, 0), ct_ddim_str(y->dims, a, sizeof a),
                          c->op->def->in[scores].name, ct_kernel_in_name(c, scores, 0),
                          ct_ddim_str(x->dims, b, sizeof b));
  }
  if (y->dtype != CT_INT64) {
    return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH,
                          "input Label variable '%s' is %s: hard labels are int64 class indices; "
                          "cast them to int64, or set soft_label for [N, C] probabilities",
                          ct_kernel_in_name(c, slot, 0), ct_dtype_name(y->dtype));
  }
  bool rows = (y->dims.rank == 1 && y->dims.d[0] == n) ||
              (y->dims.rank == 2 && y->dims.d[0] == n && y->dims.d[1] == 1);
  if (rows) return CT_OK;
  return ct_kernel_fail(c, CT_ERR_SHAPE,
                        "input Label variable '%s' is %s but input %s variable '%s' is %s: hard "
                        "labels are one class index per row, [%lld] or [%lld, 1]",
                        ct_kernel_in_name(c, slot, 0), ct_ddim_str(y->dims, a, sizeof a),
                        c->op->def->in[scores].name, ct_kernel_in_name(c, scores, 0),
                        ct_ddim_str(x->dims, b, sizeof b), (long long)n, (long long)n);
}

static ct_status sce_infer(const ct_kernel_ctx *c) {
  ct_status s = check_scores(c, CT__SCE_LOGITS);
  if (s == CT_OK) s = check_label(c, CT__SCE_LOGITS, CT__SCE_LABEL);
  if (s != CT_OK) return s;
  ct_ddim x = ct_kernel_in(c, CT__SCE_LOGITS, 0)->dims;
  s = ct__k_resize(c, CT__SCE_SOFTMAX, 0, x);
  return s == CT_OK ? ct__k_resize(c, CT__SCE_LOSS, 0, CT_DIMS(x.d[0], 1)) : s;
}

static ct_status sce_grad_infer(const ct_kernel_ctx *c) {
  ct_status s = check_scores(c, CT__SCEG_SOFTMAX);
  if (s == CT_OK) s = check_label(c, CT__SCEG_SOFTMAX, CT__SCEG_LABEL);
  if (s == CT_OK) s = ct__k_check_dtype(c, CT__SCEG_DLOSS, 0, c->dtype);
  if (s != CT_OK) return s;
  ct_ddim x = ct_kernel_in(c, CT__SCEG_SOFTMAX, 0)->dims;
  ct_ddim g = ct_kernel_in(c, CT__SCEG_DLOSS, 0)->dims;
  if (!ct_ddim_equal(g, CT_DIMS(x.d[0], 1))) {
    char a[CT__DDIM_STR_CAP], b[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input Loss@GRAD variable '%s' is %s but input Softmax variable '%s' "
                          "is %s: wire the gradient of the forward op's Loss, [%lld, 1]",
                          ct_kernel_in_name(c, CT__SCEG_DLOSS, 0), ct_ddim_str(g, a, sizeof a),
                          ct_kernel_in_name(c, CT__SCEG_SOFTMAX, 0),
                          ct_ddim_str(x, b, sizeof b), (long long)x.d[0]);
  }
  return ct__k_resize(c, CT__SCEG_DLOGITS, 0, x);
}

ct_status ct__sce_check_labels(const ct_kernel_ctx *c, size_t slot, const int64_t *labels,
                               int64_t n, int64_t classes) {
  int64_t ignore = c->attr[CT__SCE_IGNORE_INDEX].u.i;
  for (int64_t i = 0; i < n; i++) {
    int64_t v = labels[i];
    if (CT__LIKELY((v >= 0 && v < classes) || v == ignore)) continue;
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "input Label variable '%s' row %lld holds %lld, outside [0, %lld): "
                          "labels are class indices (or ignore_index, %lld)",
                          ct_kernel_in_name(c, slot, 0), (long long)i, (long long)v,
                          (long long)classes, (long long)ignore);
  }
  return CT_OK;
}

static const ct_op_def defs[] = {
    {.type = "softmax_with_cross_entropy", .inputs = sce_in, .n_inputs = 2, .outputs = sce_out,
     .n_outputs = 2, .attrs = sce_attrs, .n_attrs = 2,
     .flags = CT_OP_PURE_INFER, .infer_shape = sce_infer,
     .grad = ct__grad_softmax_with_cross_entropy},
    {.type = "softmax_with_cross_entropy_grad", .inputs = sce_grad_in, .n_inputs = 3,
     .outputs = sce_grad_out, .n_outputs = 1, .attrs = sce_attrs, .n_attrs = 2,
     .flags = CT_OP_PURE_INFER, .infer_shape = sce_grad_infer},
};

const ct__def_table ct__loss_defs = CT__TABLE(defs);

/* ---- The grad-op maker ----------------------------------------------------------------------- */

ct_status ct__grad_softmax_with_cross_entropy(ct_grad_ctx *g) {
  const ct_op *fwd = ct_grad_forward(g);
  if (fwd->attr[CT__SCE_SOFT_LABEL].u.b && ct_grad_input_grad(g, "Label", 0) != NULL) {
    char label[CT__OP_LABEL_CAP];
    return ct__error(CT_ERR_UNSUPPORTED,
                     "%s: soft Label variable '%s' depends on a parameter, but the gradient "
                     "flows to Logits only: compute the labels outside the differentiated "
                     "path, or write the loss from log and elementwise ops",
                     ct__op_label(fwd, label, sizeof label), ct_grad_input(g, "Label", 0));
  }
  const char *dx = ct_grad_input_grad(g, "Logits", 0);
  if (dx == NULL) return CT_OK;
  ct_op *op = ct_grad_op_new(g, "softmax_with_cross_entropy_grad");
  if (op == NULL) return ct_last_status();
  ct_status s = ct__grad_wire_in(op, "Softmax", ct_grad_output(g, "Softmax", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Label", ct_grad_input(g, "Label", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Loss@GRAD", ct_grad_output_grad(g, "Loss", 0));
  if (s == CT_OK) s = ct_op_set_output(op, "Logits@GRAD", dx);
  return s == CT_OK ? ct_grad_copy_attrs(g, op) : s;
}

/* What the type computes (ct_op_type_doc, `corten ops`). */
static const ct__op_doc docs[] = {
    {"softmax_with_cross_entropy",
     "Softmax of each row of Logits [N, C] into Softmax [N, C], and the row's cross entropy "
     "into Loss [N, 1]: `Loss_i = logsumexp(Logits_i) - sum_j Label_ij Logits_ij`, computed "
     "from the row's maximum so that large logits neither overflow nor lose the loss. Hard "
     "labels (soft_label false, the default): Label is int64 [N] or [N, 1], class indices in "
     "[0, C) (others refused when the op runs), and a row labelled ignore_index (default -100) "
     "has loss 0 and gradient 0. Soft labels (soft_label true): Label is [N, C] of Logits' "
     "dtype, one distribution per row. As in PaddlePaddle the gradient reaches Logits from Loss "
     "only: a loss that also reads Softmax gets no gradient through it."},
};

const ct__doc_table ct__loss_docs = CT__TABLE(docs);
