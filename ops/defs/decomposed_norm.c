/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/decomposed_norm.c: the decomposed_layer_norm op type (docs/design/passes.md,
 * decomposed_layer_norm), which the executor's optimize pass makes from the ops an exporter
 * writes for a layer norm before opset 17 (ops/passes_norm.c). It takes the dims that chain
 * takes without a broadcast that enlarges a value, and refuses the rest with CT_ERR_SHAPE, on
 * which the executor runs the chain's own ops instead. */
#include "ops/defs.h"

/* Whether input slot's tensor (of X's dtype, checked) broadcasts onto x's dims as one value or
 * (per_row) one value per element of x's last dim, without enlarging them. */
static bool fits(const ct_tensor *t, ct_ddim x, bool per_row) {
  if (t->dims.rank > x.rank) return false;
  if (t->numel == 1) return true;
  if (!per_row || t->dims.rank == 0 || t->dims.d[t->dims.rank - 1] != x.d[x.rank - 1]) {
    return false;
  }
  for (int k = 0; k + 1 < t->dims.rank; k++) {
    if (t->dims.d[k] != 1) return false;
  }
  return true;
}

ct_status ct__dnorm_check(const ct_kernel_ctx *c) {
  const ct_tensor *x = ct_kernel_in(c, CT__DN_X, 0);
  ct_status st = CT_OK;
  for (size_t slot = CT__DN_EXPONENT; slot <= CT__DN_BIAS && st == CT_OK; slot++) {
    if (ct_kernel_in_count(c, slot) > 0) st = ct__k_check_dtype(c, slot, 0, x->dtype);
  }
  if (st != CT_OK) return st;
  const char *what = NULL;
  if (x->dims.rank == 0 || x->numel == 0) {
    what = "X is a scalar or empty";
  } else if (!fits(ct_kernel_in(c, CT__DN_EXPONENT, 0), x->dims, false) ||
             !fits(ct_kernel_in(c, CT__DN_EPSILON, 0), x->dims, false)) {
    what = "Exponent or Epsilon holds other than one element, or has a higher rank than X";
  } else if ((ct_kernel_in_count(c, CT__DN_SCALE) > 0 &&
              !fits(ct_kernel_in(c, CT__DN_SCALE, 0), x->dims, true)) ||
             (ct_kernel_in_count(c, CT__DN_BIAS) > 0 &&
              !fits(ct_kernel_in(c, CT__DN_BIAS, 0), x->dims, true))) {
    what = "Scale or Bias holds neither one element nor one per element of X's last dim";
  }
  if (what == NULL) return CT_OK;
  return ct_kernel_fail(c, CT_ERR_SHAPE,
                        "%s, which decomposed_layer_norm does not run (run the unfused ops: make "
                        "the executor without the optimize option)",
                        what);
}

static ct_status dnorm_infer(const ct_kernel_ctx *c) {
  ct_status st = ct__dnorm_check(c);
  return st == CT_OK ? ct__k_resize(c, CT__OUT, 0, ct_kernel_in(c, CT__DN_X, 0)->dims) : st;
}

static const ct_slot_def dnorm_in[] = {{"X", 0},
                                       {"Exponent", 0},
                                       {"Epsilon", 0},
                                       {"Scale", CT_SLOT_OPTIONAL},
                                       {"Bias", CT_SLOT_OPTIONAL}};
static const ct_attr_def dnorm_attrs[] = {
    {"epsilon_first", {.type = CT_ATTR_BOOL, .u.b = false}, false},
    {"scale_first", {.type = CT_ATTR_BOOL, .u.b = false}, false},
    {"bias_first", {.type = CT_ATTR_BOOL, .u.b = false}, false},
};

static const ct_op_def defs[] = {
    /* The executor's optimize pass makes it; no gradient. */
    {.type = "decomposed_layer_norm", .inputs = dnorm_in, .n_inputs = 5,
     .outputs = ct__slot_out, .n_outputs = 1, .attrs = dnorm_attrs, .n_attrs = 3,
     .flags = CT_OP_PURE_INFER, .infer_shape = dnorm_infer},
};

const ct__def_table ct__decomposed_norm_defs = CT__TABLE(defs);

static const ct__op_doc docs[] = {
    {"decomposed_layer_norm",
     "The layer norm over X's last dim as exporters write it before opset 17, computed as those "
     "ops compute it: `m = reduce_mean(X)`, `d = X - m`, `v = reduce_mean(d ^ Exponent)`, "
     "`Out = d / sqrt(v + Epsilon) * Scale + Bias` (reduce_mean, elementwise_sub, "
     "elementwise_pow, reduce_mean, elementwise_add, sqrt, elementwise_div, elementwise_mul, "
     "elementwise_add), each step rounded as that op rounds it (the means summed in double in "
     "order, the power and the square root in double), so the bits are the chain's. Exponent "
     "and Epsilon hold one element; Scale and Bias (optional) one, or one per element of X's "
     "last dim; all of X's dtype (float32, float64). epsilon_first, scale_first and bias_first "
     "say which operand of the add, multiply and add the chain's value was not. Out has X's "
     "dims. The executor's optimize pass (CPU only) makes it (docs/design/passes.md); other "
     "dims are refused (CT_ERR_SHAPE) and the executor then runs the chain's ops. No "
     "gradient."},
};

const ct__doc_table ct__decomposed_norm_docs = CT__TABLE(docs);
