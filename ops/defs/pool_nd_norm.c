/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/pool_nd_norm.c: the op types lrn and instance_norm (ONNX's LRN and
 * InstanceNormalization), NC first, over any number of dims after C.
 *
 *   lrn            X [N, C, ...] -> Out (X's dims): Out = X / (bias + alpha / size sq)^beta,
 *                  sq the sum of X^2 over the channels c - floor((size - 1) / 2) to
 *                  c + ceil((size - 1) / 2) that exist, at the same n and position. size >= 1.
 *   instance_norm  X [N, C, ...], Scale [C], Bias [C] -> Y (X's dims):
 *                  Y = Scale[c] (X - mean) / sqrt(var + epsilon) + Bias[c], mean and the
 *                  (biased) variance over the elements of each (n, c) after C. Sums in double.
 *
 * Both run in float32 and float64; the gradients are in ops/defs/pool_nd_grad.c. */
#include "ops/defs/pool_nd.h"

const ct_attr_def ct__lrn_attrs[4] = {
    {"size", {.type = CT_ATTR_INT, .u.i = 5}, false},
    {"alpha", {.type = CT_ATTR_FLOAT, .u.f = 1e-4}, false},
    {"beta", {.type = CT_ATTR_FLOAT, .u.f = 0.75}, false},
    {"bias", {.type = CT_ATTR_FLOAT, .u.f = 1.0}, false},
};
const ct_attr_def ct__inn_attrs[1] = {
    {"epsilon", {.type = CT_ATTR_FLOAT, .u.f = 1e-5}, false}};
static const ct_slot_def inn_in[] = {{"X", 0}, {"Scale", 0}, {"Bias", 0}};
static const ct_slot_def inn_out[] = {{"Y", 0}};

ct_status ct__nchw_view(const ct_kernel_ctx *c, size_t slot, int64_t *n, int64_t *ch,
                        int64_t *inner) {
  ct_ddim x = ct_kernel_in(c, slot, 0)->dims;
  if (x.rank < 2) {
    char sd[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input %s variable '%s' is %s: it must be [N, C, ...] (rank 2 or more)",
                          c->op->def->in[slot].name, ct_kernel_in_name(c, slot, 0),
                          ct_ddim_str(x, sd, sizeof sd));
  }
  *n = x.d[0];
  *ch = x.d[1];
  *inner = 1;
  for (int k = 2; k < x.rank; k++) *inner *= x.d[k];
  return CT_OK;
}

ct_status ct__lrn_check_size(const ct_kernel_ctx *c) {
  int64_t size = c->attr[CT__LRN_SIZE].u.i;
  if (size < 1 || size > INT32_MAX) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "attribute 'size' is %lld: the number of channels summed must be in "
                          "[1, %d]",
                          (long long)size, INT32_MAX);
  }
  return CT_OK;
}

static ct_status lrn_infer(const ct_kernel_ctx *c) {
  int64_t n, ch, inner;
  ct_status s = ct__nchw_view(c, CT__IN_X, &n, &ch, &inner);
  if (s == CT_OK) s = ct__lrn_check_size(c);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, ct_kernel_in(c, CT__IN_X, 0)->dims) : s;
}

/* Input `slot` is [C] of X's dtype (Scale, Bias of instance_norm and its gradient). */
static ct_status channel_vec(const ct_kernel_ctx *c, size_t slot, int64_t ch) {
  const ct_tensor *t = ct_kernel_in(c, slot, 0);
  ct_status s = ct__k_check_dtype(c, slot, 0, ct_kernel_in(c, 0, 0)->dtype);
  if (s != CT_OK) return s;
  if (t->dims.rank != 1 || t->dims.d[0] != ch) {
    char sd[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input %s variable '%s' is %s: it must be [C], one value per channel "
                          "of X (C = %lld)",
                          c->op->def->in[slot].name, ct_kernel_in_name(c, slot, 0),
                          ct_ddim_str(t->dims, sd, sizeof sd), (long long)ch);
  }
  return CT_OK;
}

ct_status ct__inn_check(const ct_kernel_ctx *c, size_t scale_slot, size_t bias_slot) {
  int64_t n, ch, inner;
  ct_status s = ct__nchw_view(c, CT__INN_X, &n, &ch, &inner);
  if (s == CT_OK) s = channel_vec(c, scale_slot, ch);
  if (s == CT_OK && bias_slot != (size_t)-1) s = channel_vec(c, bias_slot, ch);
  double eps = c->attr[CT__INN_EPSILON].u.f;
  if (s == CT_OK && !(eps >= 0)) {
    s = ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                       "attribute 'epsilon' is %g: it must be >= 0 (added to the variance)", eps);
  }
  return s;
}

static ct_status inn_infer(const ct_kernel_ctx *c) {
  ct_status s = ct__inn_check(c, CT__INN_SCALE, CT__INN_BIAS);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, ct_kernel_in(c, CT__INN_X, 0)->dims) : s;
}

static const ct_op_def defs[] = {
    {.type = "lrn", .inputs = ct__slot_x, .n_inputs = 1, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = ct__lrn_attrs, .n_attrs = 4, .flags = CT_OP_PURE_INFER,
     .infer_shape = lrn_infer, .grad = ct__grad_lrn},
    {.type = "instance_norm", .inputs = inn_in, .n_inputs = 3, .outputs = inn_out,
     .n_outputs = 1, .attrs = ct__inn_attrs, .n_attrs = 1, .flags = CT_OP_PURE_INFER,
     .infer_shape = inn_infer, .grad = ct__grad_instance_norm},
};

const ct__def_table ct__pool_nd_norm_defs = CT__TABLE(defs);

/* What the types compute (ct_op_type_doc, `corten ops`). */
static const ct__op_doc docs[] = {
    {"lrn",
     "ONNX's LRN, local response normalisation across channels: X [N, C, ...] (rank 2 or more) "
     "gives Out of X's dims, `Out = X / (bias + alpha / size * sq)^beta` with sq the sum of "
     "X^2 over the channels c - floor((size - 1) / 2) to c + ceil((size - 1) / 2) that exist, "
     "at the same n and position. Defaults: size 5 (at least 1), alpha 1e-4, beta 0.75, bias "
     "1."},
    {"instance_norm",
     "ONNX's InstanceNormalization: each (n, c) plane of X [N, C, ...] (rank 2 or more) is "
     "normalised by its own mean and biased variance over the elements after C, `Y = Scale[c] "
     "(X - mean) / sqrt(var + epsilon) + Bias[c]` with Scale and Bias [C] of X's dtype and Y "
     "of X's dims. No running statistics: training and inference compute the same. Sums run in "
     "double; epsilon (default 1e-5) must be 0 or more."},
};

const ct__doc_table ct__pool_nd_norm_docs = CT__TABLE(docs);
