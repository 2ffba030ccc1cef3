/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/reduce_ext_norm.c: the op type layer_norm_stats, which gives layer_norm's statistics
 * in ONNX's form (LayerNormalization's Mean and InvStdDev outputs).
 *
 *   layer_norm_stats  X, Mean, Variance (layer_norm's outputs for that X, [rows]) -> MeanOut,
 *                     InvStdDev, both X's dims with the dims from begin_norm_axis set to 1:
 *                     MeanOut = Mean, InvStdDev = 1 / sqrt(Variance + epsilon). X's values
 *                     are not read. No gradient (the statistics are outputs, not losses). */
#include "ops/defs/reduce_ext.h"

const ct_slot_def ct__lns_in[3] = {{"X", 0}, {"Mean", 0}, {"Variance", 0}};
const ct_slot_def ct__lns_out[2] = {{"MeanOut", 0}, {"InvStdDev", 0}};

ct_status ct__lns_infer(const ct_kernel_ctx *c) {
  ct__norm_plan p;
  ct_status s = ct__ln_plan(c, &p); /* slot X and attributes in layer_norm's order */
  if (s == CT_OK) s = ct__norm_check_vec(c, CT__LNS_MEAN, p.outer, "one mean per row of X");
  if (s == CT_OK) s = ct__norm_check_vec(c, CT__LNS_VAR, p.outer, "one variance per row of X");
  if (s != CT_OK) return s;
  ct_ddim d = ct_kernel_in(c, CT__LN_X, 0)->dims;
  int64_t b = c->attr[CT__LN_BEGIN_NORM_AXIS].u.i;
  for (int k = (int)(b < 0 ? b + d.rank : b); k < d.rank; k++) d.d[k] = 1;
  s = ct__k_resize(c, 0, 0, d);
  return s == CT_OK ? ct__k_resize(c, 1, 0, d) : s;
}

/* ---- What each op type computes (ct_op_type_doc) --------------------------------------------- */
static const ct__op_doc docs[] = {
    {"layer_norm_stats", "layer_norm's statistics in the form of ONNX LayerNormalization's "
                         "outputs: `MeanOut = Mean` and `InvStdDev = 1 / sqrt(Variance + "
                         "epsilon)`, both with X's dims but the dims from begin_norm_axis on set "
                         "to 1. Mean and Variance are layer_norm's outputs for this X: [rows] of "
                         "X's dtype, rows the product of X's dims before begin_norm_axis "
                         "(default 1, negative counting from the end, 0 for one row); epsilon "
                         "(default 1e-5) must be 0 or more. X's values are not read; no gradient."},
};

const ct__doc_table ct__reduce_ext_norm_docs = CT__TABLE(docs);
