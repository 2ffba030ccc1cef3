/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/conv_block.c: the op type inverted_residual, MobileNetV2's block as one op (the
 * executor's optimize pass makes it, ops/passes_block.c; docs/design/passes.md):
 *
 *   Input [N,C,H,W] -> 1x1 conv by Filter [E,C,1,1] + Bias [E], activation (or, without
 *                      Filter, Bias and activation, Input itself: E = C, MobileNetV2's first
 *                      block)
 *                   -> 3x3 depthwise conv by DepthwiseFilter [E,1,3,3] (padding 1, stride 1 or
 *                      2) + DepthwiseBias [E], dw_activation
 *                   -> 1x1 conv by ProjectFilter [M,E,1,1] + ProjectBias [M] + ResidualData
 *                      [N,M,OH,OW], project_activation -> Output [N,M,OH,OW]
 *
 * each step rounded as the three conv2d_fusion ops it replaces round it, so the bits are theirs;
 * the expanded values (E channels) are never written out whole. */
#include <math.h>
#include <string.h>

#include "ops/defs.h"

#define STR(v) {.type = CT_ATTR_STRING, .u.s = (v)}
#define FLT(v) {.type = CT_ATTR_FLOAT, .u.f = (v)}
static const int64_t ones[2] = {1, 1};

/* In the CT__IR_* order (ops/defs.h). */
static const ct_attr_def attrs[10] = {
    {"strides", {.type = CT_ATTR_INTS, .u.ints = {ones, 2}}, false},
    {"activation", STR("identity"), false},
    {"clip_min", FLT(-INFINITY), false},
    {"clip_max", FLT(INFINITY), false},
    {"dw_activation", STR("identity"), false},
    {"dw_clip_min", FLT(-INFINITY), false},
    {"dw_clip_max", FLT(INFINITY), false},
    {"project_activation", STR("identity"), false},
    {"project_clip_min", FLT(-INFINITY), false},
    {"project_clip_max", FLT(INFINITY), false},
};

static const ct_slot_def ins[] = {{"Input", 0},
                                  {"Filter", CT_SLOT_OPTIONAL},
                                  {"Bias", CT_SLOT_OPTIONAL},
                                  {"DepthwiseFilter", 0},
                                  {"DepthwiseBias", CT_SLOT_OPTIONAL},
                                  {"ProjectFilter", 0},
                                  {"ProjectBias", CT_SLOT_OPTIONAL},
                                  {"ResidualData", CT_SLOT_OPTIONAL}};
static const ct_slot_def outs[] = {{"Output", 0}};

/* Slot `slot` (when given) of Input's dtype and of exactly dims `want`. */
static ct_status check_dims(const ct_kernel_ctx *c, size_t slot, ct_dtype dtype, ct_ddim want) {
  if (ct_kernel_in_count(c, slot) == 0) return CT_OK;
  ct_status s = ct__k_check_dtype(c, slot, 0, dtype);
  if (s != CT_OK) return s;
  const ct_tensor *t = ct_kernel_in(c, slot, 0);
  if (ct_ddim_equal(t->dims, want)) return CT_OK;
  char have[CT__DDIM_STR_CAP], need[CT__DDIM_STR_CAP];
  return ct_kernel_fail(c, CT_ERR_SHAPE,
                        "%s '%s' has dims %s; the block needs %s (Input %lld channels, Filter "
                        "[E, C, 1, 1], DepthwiseFilter [E, 1, 3, 3], ProjectFilter [M, E, 1, "
                        "1]), or run without the executor's optimize option",
                        c->op->def->in[slot].name, ct_kernel_in_name(c, slot, 0),
                        ct_ddim_str(t->dims, have, sizeof have),
                        ct_ddim_str(want, need, sizeof need),
                        (long long)ct_kernel_in(c, CT__IR_INPUT, 0)->dims.d[1]);
}

/* Activation attribute `a` (then its clip bounds): a known name, and bounds the dtype holds
 * exactly (each step rounds in the dtype, as the ops it replaces did with such bounds). */
static ct_status check_act(const ct_kernel_ctx *c, size_t a, ct_dtype dtype) {
  ct_status s = ct__fusion_act_check(c, a);
  if (s != CT_OK) return s;
  for (size_t b = a + 1; b <= a + 2; b++) {
    double v = c->attr[b].u.f;
    bool exact = isnan(v) ? false : dtype == CT_FLOAT64 || (double)(float)v == v;
    if (!exact) {
      return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                            "attribute '%s' is %g, which float32 does not hold exactly: give a "
                            "bound the dtype holds (or run without the executor's optimize "
                            "option)",
                            c->op->def->attr[b].name, v);
    }
  }
  return CT_OK;
}

ct_status ct__inverted_residual_plan(const ct_kernel_ctx *c, ct__ir_geom *g) {
  const ct_tensor *in = ct_kernel_in(c, CT__IR_INPUT, 0);
  const bool expand = ct_kernel_in_count(c, CT__IR_FILTER) > 0;
  const ct_tensor *f = ct_kernel_in(c, expand ? CT__IR_FILTER : CT__IR_INPUT, 0);
  const ct_tensor *p = ct_kernel_in(c, CT__IR_PFILTER, 0);
  if (in->dtype != CT_FLOAT32 && in->dtype != CT_FLOAT64) {
    return ct_kernel_fail(c, CT_ERR_UNSUPPORTED,
                          "Input '%s' is %s: the block runs float32 and float64 (cast it, or run "
                          "without the executor's optimize option)",
                          ct_kernel_in_name(c, CT__IR_INPUT, 0), ct_dtype_name(in->dtype));
  }
  if (in->dims.rank != 4 || f->dims.rank != 4 || p->dims.rank != 4) {
    char a[CT__DDIM_STR_CAP], b[CT__DDIM_STR_CAP], d[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "Input %s, Filter %s and ProjectFilter %s must each have rank 4 "
                          "(NCHW; [E, C, 1, 1]; [M, E, 1, 1])",
                          ct_ddim_str(in->dims, a, sizeof a),
                          expand ? ct_ddim_str(f->dims, b, sizeof b) : "(none)",
                          ct_ddim_str(p->dims, d, sizeof d));
  }
  const ct_attr_value *st = &c->attr[CT__IR_STRIDES];
  if (st->u.ints.n != 2 || st->u.ints.v[0] != st->u.ints.v[1] ||
      (st->u.ints.v[0] != 1 && st->u.ints.v[0] != 2)) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute 'strides' must be [1, 1] or [2, 2] (the depthwise "
                          "convolution's)");
  }
  if (!expand) { /* the depthwise reads Input: no expansion's Bias or activation */
    if (ct_kernel_in_count(c, CT__IR_BIAS) > 0) {
      return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                            "Bias '%s' belongs to the expansion: give Filter with it, or neither "
                            "(a block without expansion)",
                            ct_kernel_in_name(c, CT__IR_BIAS, 0));
    }
    if (strcmp(c->attr[CT__IR_ACT].u.s, "identity") != 0) {
      return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                            "'activation' \"%s\" belongs to the expansion: give Filter with it, "
                            "or leave it \"identity\" (a block without expansion)",
                            c->attr[CT__IR_ACT].u.s);
    }
    if (in->dims.d[1] < 1) {
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "Input '%s' has no channels: a block without Filter convolves "
                            "Input's channels, so give it at least one",
                            ct_kernel_in_name(c, CT__IR_INPUT, 0));
    }
  }
  *g = (ct__ir_geom){.n = in->dims.d[0], .c = in->dims.d[1], .h = in->dims.d[2],
                     .w = in->dims.d[3], .e = expand ? f->dims.d[0] : in->dims.d[1],
                     .m = p->dims.d[0], .s = st->u.ints.v[0]};
  if (g->h < 1 || g->w < 1) {
    char a[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "Input '%s' %s is empty in height or width: give it at least one row "
                          "and column",
                          ct_kernel_in_name(c, CT__IR_INPUT, 0),
                          ct_ddim_str(in->dims, a, sizeof a));
  }
  g->oh = (g->h - 1) / g->s + 1;
  g->ow = (g->w - 1) / g->s + 1;
  ct_dtype dt = in->dtype;
  ct_status s = check_dims(c, CT__IR_FILTER, dt, CT_DIMS(g->e, g->c, 1, 1));
  if (s == CT_OK) s = check_dims(c, CT__IR_BIAS, dt, CT_DIMS(g->e));
  if (s == CT_OK) s = check_dims(c, CT__IR_DWFILTER, dt, CT_DIMS(g->e, 1, 3, 3));
  if (s == CT_OK) s = check_dims(c, CT__IR_DWBIAS, dt, CT_DIMS(g->e));
  if (s == CT_OK) s = check_dims(c, CT__IR_PFILTER, dt, CT_DIMS(g->m, g->e, 1, 1));
  if (s == CT_OK) s = check_dims(c, CT__IR_PBIAS, dt, CT_DIMS(g->m));
  if (s == CT_OK) s = check_dims(c, CT__IR_RESIDUAL, dt, CT_DIMS(g->n, g->m, g->oh, g->ow));
  if (s == CT_OK) s = check_act(c, CT__IR_ACT, dt);
  if (s == CT_OK) s = check_act(c, CT__IR_DW_ACT, dt);
  if (s == CT_OK) s = check_act(c, CT__IR_P_ACT, dt);
  return s;
}

static ct_status infer(const ct_kernel_ctx *c) {
  ct__ir_geom g;
  ct_status s = ct__inverted_residual_plan(c, &g);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, CT_DIMS(g.n, g.m, g.oh, g.ow)) : s;
}

static const ct_op_def defs[] = {
    /* The executor's optimize pass makes it; no gradient: it is never on a path that
     * append_backward walks. */
    {.type = "inverted_residual", .inputs = ins, .n_inputs = 8, .outputs = outs,
     .n_outputs = 1, .attrs = attrs, .n_attrs = 10, .flags = CT_OP_PURE_INFER,
     .infer_shape = infer},
};

const ct__def_table ct__conv_block_defs = CT__TABLE(defs);

static const ct__op_doc docs[] = {
    {"inverted_residual",
     "MobileNetV2's inverted residual block as one op: Input [N, C, H, W], a 1x1 convolution by "
     "Filter [E, C, 1, 1] + Bias [E] then `activation` (or none of the three: the depthwise "
     "convolution reads Input, E = C); a 3x3 depthwise convolution (padding 1, "
     "`strides` [1, 1] or [2, 2]) by DepthwiseFilter [E, 1, 3, 3] + DepthwiseBias [E] then "
     "`dw_activation`; a 1x1 convolution by ProjectFilter [M, E, 1, 1] + ProjectBias [M] + "
     "ResidualData [N, M, OH, OW] then `project_activation`, giving Output [N, M, OH, OW] "
     "(biases and the residual optional, of Input's dtype, float32 or float64). Each activation "
     "is \"identity\" (the default), \"relu\" or \"clip\" between its clip bounds, which the "
     "dtype must hold exactly. Each step rounds as the three conv2d_fusion ops it replaces do, "
     "so the bits are theirs; the E-channel values are computed a band of rows at a time and "
     "never stored whole. The executor's optimize pass (CPU only) makes it from such a chain "
     "(docs/design/passes.md); it has no gradient."},
};

const ct__doc_table ct__conv_block_docs = CT__TABLE(docs);
