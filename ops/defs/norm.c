/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/norm.c: the op types batch_norm and layer_norm (PaddlePaddle's names, slots and
 * attributes): their shapes and the plans every backend's kernels follow.
 *
 *   batch_norm  X [N, C, ...] (NCHW) or [N, ..., C] (NHWC), Scale, Bias, Mean, Variance [C]
 *               -> Y (X's dims), MeanOut, VarianceOut, SavedMean, SavedVariance [C]
 *       training (is_test and use_global_stats false): each channel is normalised by its batch
 *       mean and biased variance; MeanOut = Mean momentum + mean (1 - momentum), VarianceOut
 *       likewise with the biased batch variance (PaddlePaddle's rule; PyTorch keeps the
 *       unbiased one); SavedMean = the batch mean, SavedVariance = 1 / sqrt(var + epsilon).
 *       is_test or use_global_stats: Mean and Variance normalise; MeanOut and VarianceOut are
 *       copies of them; SavedMean / SavedVariance hold Mean and 1 / sqrt(Variance + epsilon).
 *       Y = (X - mean) inv scale + bias.
 *   layer_norm  X, Scale, Bias (optional, [prod of X's dims from begin_norm_axis])
 *               -> Y (X's dims), Mean, Variance [prod of X's dims before begin_norm_axis]
 *       each row (the trailing dims from begin_norm_axis) normalised by its mean and biased
 *       variance; Variance is that variance (not its inverse). begin_norm_axis may count from
 *       the end (-1 is the last dim); 0 makes all of X one row.
 * Statistics are summed in double in element order for both dtypes (two passes: the mean, then
 * the squared deviations from it). */
#include <string.h>

#include "ops/defs.h"

static const ct_slot_def bn_in[] = {
    {"X", 0}, {"Scale", 0}, {"Bias", 0}, {"Mean", 0}, {"Variance", 0}};
static const ct_slot_def bn_out[] = {
    {"Y", 0}, {"MeanOut", 0}, {"VarianceOut", 0}, {"SavedMean", 0}, {"SavedVariance", 0}};
const ct_attr_def ct__bn_attrs[5] = {
    {"momentum", {.type = CT_ATTR_FLOAT, .u.f = 0.9}, false},
    {"epsilon", {.type = CT_ATTR_FLOAT, .u.f = 1e-5}, false},
    {"is_test", {.type = CT_ATTR_BOOL, .u.b = false}, false},
    {"data_layout", {.type = CT_ATTR_STRING, .u.s = "NCHW"}, false},
    {"use_global_stats", {.type = CT_ATTR_BOOL, .u.b = false}, false},
};
static const ct_slot_def ln_in[] = {
    {"X", 0}, {"Scale", CT_SLOT_OPTIONAL}, {"Bias", CT_SLOT_OPTIONAL}};
static const ct_slot_def ln_out[] = {{"Y", 0}, {"Mean", 0}, {"Variance", 0}};
const ct_attr_def ct__ln_attrs[2] = {
    {"begin_norm_axis", {.type = CT_ATTR_INT, .u.i = 1}, false},
    {"epsilon", {.type = CT_ATTR_FLOAT, .u.f = 1e-5}, false},
};

/* epsilon must be >= 0 (a negative one makes 1 / sqrt(var + epsilon) NaN where var is small). */
static ct_status check_epsilon(const ct_kernel_ctx *c, double eps) {
  if (eps >= 0) return CT_OK; /* NaN fails too */
  return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                        "attribute epsilon is %g: it must be >= 0 (1e-5 is usual)", eps);
}

ct_status ct__bn_plan(const ct_kernel_ctx *c, ct__norm_plan *p) {
  ct_status s = check_epsilon(c, c->attr[CT__BN_EPSILON].u.f);
  if (s != CT_OK) return s;
  double mom = c->attr[CT__BN_MOMENTUM].u.f;
  if (!(mom >= 0 && mom <= 1)) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute momentum is %g: it must lie in [0, 1] (the weight of the "
                          "running mean and variance, 0.9 is usual)",
                          mom);
  }
  const ct_tensor *x = ct_kernel_in(c, CT__BN_X, 0);
  const char *layout = c->attr[CT__BN_LAYOUT].u.s;
  bool nhwc = strcmp(layout, "NHWC") == 0;
  if (!nhwc && strcmp(layout, "NCHW") != 0) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute data_layout is \"%s\": use \"NCHW\" or \"NHWC\"", layout);
  }
  int r = x->dims.rank;
  if (r < 2) {
    char a[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input X variable '%s' is %s: batch_norm needs at least [N, C]",
                          ct_kernel_in_name(c, CT__BN_X, 0), ct_ddim_str(x->dims, a, sizeof a));
  }
  int ch = nhwc ? r - 1 : 1;
  p->outer = 1;
  p->inner = 1;
  p->c = x->dims.d[ch];
  for (int k = 0; k < ch; k++) p->outer *= x->dims.d[k];
  for (int k = ch + 1; k < r; k++) p->inner *= x->dims.d[k];
  return CT_OK;
}

ct_status ct__ln_plan(const ct_kernel_ctx *c, ct__norm_plan *p) {
  ct_status s = check_epsilon(c, c->attr[CT__LN_EPSILON].u.f);
  if (s != CT_OK) return s;
  const ct_tensor *x = ct_kernel_in(c, CT__LN_X, 0);
  int64_t b = c->attr[CT__LN_BEGIN_NORM_AXIS].u.i;
  int r = x->dims.rank;
  /* A negative axis counts from the end (ONNX's LayerNormalization); 0 makes all of X one row. */
  if (b < -r || b >= r || r == 0) {
    char a[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "attribute begin_norm_axis is %lld but input X variable '%s' is %s: "
                          "it must lie in [1, %d) (the rows are the dims from it on), or be 0 "
                          "(all of X one row), or count from the end in [%d, 0)",
                          (long long)b, ct_kernel_in_name(c, CT__LN_X, 0),
                          ct_ddim_str(x->dims, a, sizeof a), r, -r);
  }
  if (b < 0) b += r;
  p->outer = 1;
  p->inner = 1;
  p->c = 1;
  for (int k = 0; k < r; k++) *(k < b ? &p->outer : &p->inner) *= x->dims.d[k];
  return CT_OK;
}

/* Input (slot, 0), when wired, holds n elements of the kernel's dtype, one per channel or per
 * row element (`what`). */
ct_status ct__norm_check_vec(const ct_kernel_ctx *c, size_t slot, int64_t n, const char *what) {
  if (ct_kernel_in_count(c, slot) == 0) return CT_OK;
  ct_status s = ct__k_check_dtype(c, slot, 0, c->dtype);
  if (s != CT_OK) return s;
  const ct_tensor *t = ct_kernel_in(c, slot, 0);
  if (t->dims.rank == 1 && t->dims.d[0] == n) return CT_OK;
  char a[CT__DDIM_STR_CAP];
  return ct_kernel_fail(c, CT_ERR_SHAPE, "input %s variable '%s' is %s: it must be [%lld], %s",
                        c->op->def->in[slot].name, ct_kernel_in_name(c, slot, 0),
                        ct_ddim_str(t->dims, a, sizeof a), (long long)n, what);
}

static ct_status bn_infer(const ct_kernel_ctx *c) {
  ct__norm_plan p;
  ct_status s = ct__bn_plan(c, &p);
  for (size_t k = CT__BN_SCALE; k <= CT__BN_VARIANCE && s == CT_OK; k++) {
    s = ct__norm_check_vec(c, k, p.c, "one value per channel of X");
  }
  if (s != CT_OK) return s;
  bool global = c->attr[CT__BN_IS_TEST].u.b || c->attr[CT__BN_GLOBAL_STATS].u.b;
  if (!global && p.c > 0 && p.outer * p.inner == 0) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input X variable '%s' is empty: training statistics need at least "
                          "one element per channel (set is_test to use Mean and Variance)",
                          ct_kernel_in_name(c, CT__BN_X, 0));
  }
  s = ct__k_resize(c, CT__BN_Y, 0, ct_kernel_in(c, CT__BN_X, 0)->dims);
  for (size_t k = CT__BN_MEAN_OUT; k <= CT__BN_SAVED_VAR && s == CT_OK; k++) {
    s = ct__k_resize(c, k, 0, CT_DIMS(p.c));
  }
  return s;
}

static ct_status ln_infer(const ct_kernel_ctx *c) {
  ct__norm_plan p;
  ct_status s = ct__ln_plan(c, &p);
  if (s == CT_OK) s = ct__norm_check_vec(c, CT__LN_SCALE, p.inner, "one value per row element");
  if (s == CT_OK) s = ct__norm_check_vec(c, CT__LN_BIAS, p.inner, "one value per row element");
  if (s == CT_OK) s = ct__k_resize(c, CT__LN_Y, 0, ct_kernel_in(c, CT__LN_X, 0)->dims);
  if (s == CT_OK) s = ct__k_resize(c, CT__LN_MEAN, 0, CT_DIMS(p.outer));
  if (s == CT_OK) s = ct__k_resize(c, CT__LN_VARIANCE, 0, CT_DIMS(p.outer));
  return s;
}

static const ct_op_def defs[] = {
    {.type = "batch_norm", .inputs = bn_in, .n_inputs = 5, .outputs = bn_out, .n_outputs = 5,
     .attrs = ct__bn_attrs, .n_attrs = 5,
     .flags = CT_OP_PURE_INFER, .infer_shape = bn_infer, .grad = ct__grad_batch_norm},
    {.type = "layer_norm", .inputs = ln_in, .n_inputs = 3, .outputs = ln_out, .n_outputs = 3,
     .attrs = ct__ln_attrs, .n_attrs = 2,
     .flags = CT_OP_PURE_INFER, .infer_shape = ln_infer, .grad = ct__grad_layer_norm},
};

const ct__def_table ct__norm_defs = CT__TABLE(defs);

/* What the types compute (ct_op_type_doc, `corten ops`). */
static const ct__op_doc docs[] = {
    {"batch_norm",
     "Batch normalisation per channel: X [N, C, ...] (data_layout \"NCHW\", the default) or [N, "
     "..., C] (\"NHWC\"); Scale, Bias, Mean and Variance are [C] of X's dtype; Y has X's dims, "
     "MeanOut, VarianceOut, SavedMean and SavedVariance are [C]; `Y = (X - mean) / sqrt(var + "
     "epsilon) Scale + Bias`. Training (is_test and use_global_stats false, the default) uses "
     "each channel's batch mean and biased variance and updates the running statistics "
     "PaddlePaddle's way, `MeanOut = momentum Mean + (1 - momentum) mean`, VarianceOut likewise "
     "with the biased variance (momentum, default 0.9, is the weight of the old value: "
     "PyTorch's momentum 0.1, whose running variance is unbiased); SavedMean is the batch mean, "
     "`SavedVariance = 1 / sqrt(var + epsilon)`. With is_test or use_global_stats, Mean and "
     "Variance normalise instead and are copied into MeanOut and VarianceOut. Start Mean at "
     "zeros and "
     "Variance at ones and wire MeanOut to Mean and VarianceOut to Variance (in place, which "
     "the backward pass allows while no other op reads them), so each step reads the last "
     "one's statistics; they get no gradient."},
    {"layer_norm",
     "Layer normalisation: X is seen as rows, each row the dims from begin_norm_axis (default "
     "1; negative counts from the end, 0 makes X one row) on, normalised by its own mean and "
     "biased variance: `Y = (X - mean) / sqrt(var + epsilon) Scale + Bias`. Scale and Bias are "
     "optional, each holding one value per row element ([product of X's dims from the axis], "
     "X's dtype); Y has X's dims, Mean and Variance are [product of X's dims before the axis] "
     "(Variance the variance itself, not its inverse). Statistics are summed in double in "
     "element order (the mean, then the squared deviations), for float32 too; epsilon "
     "(default 1e-5) must be 0 or more."},
};

const ct__doc_table ct__norm_docs = CT__TABLE(docs);
