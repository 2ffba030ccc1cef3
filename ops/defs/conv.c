/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/conv.c: the op types conv2d, depthwise_conv2d and pool2d (PaddlePaddle's names, slots
 * and attributes, NCHW) and the geometry plan their kernels on every backend follow.
 *
 *   conv2d, depthwise_conv2d  Input [N,C,H,W], Filter [M,C/groups,KH,KW] -> Output [N,M,OH,OW]
 *       OH = (H + pad_top + pad_bottom - (dilation (KH - 1) + 1)) / stride + 1, likewise OW
 *   pool2d  X [N,C,H,W] -> Out [N,C,OH,OW]; "max" or "avg" over ksize windows (padding never
 *       counts for max; avg divides by the window clipped to the image when exclusive, by
 *       KH KW otherwise); global_pooling takes the whole image; ceil_mode rounds OH, OW up
 *
 * paddings holds 2 values (height, width: both sides alike) or 4 (top, bottom, left, right);
 * padding_algorithm "SAME" pads so that OH = ceil(H / stride) (an odd total pad's extra row
 * and column at the end; "SAME_LOWER": at the beginning), "VALID" pads nothing, "EXPLICIT"
 * (the default) takes paddings. data_format must be "NCHW" (or "AnyLayout").
 *
 *   conv2d_fusion  conv2d, then in its epilogue Output = act(bn(conv + Bias) + ResidualData):
 *       Bias of 1 or M elements added per channel, bn an inference batch_norm (BnScale, BnBias,
 *       BnMean, BnVariance, epsilon), ResidualData broadcast to Output's dims, act identity,
 *       relu or clip (clip_min, clip_max); each step rounded as the separate op would, so the
 *       bits are those of conv2d, elementwise_add, batch_norm, elementwise_add, relu/clip run
 *       one by one. */
#include <math.h>
#include <string.h>

#include "ops/defs.h"

/* Reads a 2-value list attribute (strides, dilations, ksize) into a, b, each at least lo. */
static ct_status pair_attr(const ct_kernel_ctx *c, size_t i, const char *name, int64_t lo,
                           int64_t *a, int64_t *b) {
  const ct_attr_value *v = &c->attr[i];
  if (v->u.ints.n != 2) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute '%s' has %zu values: give 2 (height, width)", name,
                          v->u.ints.n);
  }
  *a = v->u.ints.v[0];
  *b = v->u.ints.v[1];
  if (*a < lo || *b < lo || *a > INT32_MAX || *b > INT32_MAX) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "attribute '%s' is [%lld, %lld]: each value must be in [%lld, %d]",
                          name, (long long)*a, (long long)*b, (long long)lo, INT32_MAX);
  }
  return CT_OK;
}

/* data_format and padding_algorithm, then the paddings: explicit ones from attribute pi, or
 * those SAME and VALID give for windows of extent kh, kw (dilation included). */
static ct_status paddings(const ct_kernel_ctx *c, size_t fi, size_t ai, size_t pi,
                          ct__conv_geom *g) {
  const char *fmt = c->attr[fi].u.s, *alg = c->attr[ai].u.s;
  if (strcmp(fmt, "NCHW") != 0 && strcmp(fmt, "AnyLayout") != 0) {
    return ct_kernel_fail(c, CT_ERR_UNSUPPORTED,
                          "attribute 'data_format' is \"%s\": only \"NCHW\" is supported "
                          "(transpose the data to NCHW)",
                          fmt);
  }
  g->pt = g->pb = g->pl = g->pr = 0;
  if (strcmp(alg, "VALID") == 0) return CT_OK;
  bool lower = strcmp(alg, "SAME_LOWER") == 0;
  if (lower || strcmp(alg, "SAME") == 0) {
    int64_t oh = (g->h + g->sh - 1) / g->sh, ow = (g->w + g->sw - 1) / g->sw;
    int64_t th = (oh - 1) * g->sh + g->kh - g->h, tw = (ow - 1) * g->sw + g->kw - g->w;
    th = th > 0 ? th : 0;
    tw = tw > 0 ? tw : 0;
    g->pt = lower ? th - th / 2 : th / 2; /* the odd one: at the end, or at the beginning */
    g->pb = th - g->pt;
    g->pl = lower ? tw - tw / 2 : tw / 2;
    g->pr = tw - g->pl;
    return CT_OK;
  }
  if (strcmp(alg, "EXPLICIT") != 0) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute 'padding_algorithm' is \"%s\": use \"EXPLICIT\", \"SAME\", "
                          "\"SAME_LOWER\" or \"VALID\"",
                          alg);
  }
  const ct_attr_value *v = &c->attr[pi];
  const int64_t *p = v->u.ints.v;
  if (v->u.ints.n != 2 && v->u.ints.n != 4) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute 'paddings' has %zu values: give 2 (height, width) or 4 "
                          "(top, bottom, left, right)",
                          v->u.ints.n);
  }
  bool two = v->u.ints.n == 2;
  g->pt = p[0];
  g->pb = two ? p[0] : p[1];
  g->pl = two ? p[1] : p[2];
  g->pr = two ? p[1] : p[3];
  if (g->pt < 0 || g->pb < 0 || g->pl < 0 || g->pr < 0 || g->pt > INT32_MAX ||
      g->pb > INT32_MAX || g->pl > INT32_MAX || g->pr > INT32_MAX) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "attribute 'paddings' holds a value outside [0, %d]", INT32_MAX);
  }
  return CT_OK;
}

/* OH and OW from the window extents (dilation included), strides and paddings; ceil rounds up.
 * CT_ERR_SHAPE naming input (slot 0) when the padded image is smaller than a window. */
static ct_status out_extent(const ct_kernel_ctx *c, ct__conv_geom *g, int64_t ekh, int64_t ekw,
                            bool ceil) {
  int64_t ph = g->h + g->pt + g->pb - ekh, pw = g->w + g->pl + g->pr - ekw;
  if (ph < 0 || pw < 0) {
    char sd[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input %s variable '%s' %s is smaller than the %lldx%lld window (with "
                          "paddings %lld, %lld, %lld, %lld): pad it or use a smaller window",
                          c->op->def->in[0].name, ct_kernel_in_name(c, 0, 0),
                          ct_ddim_str(ct_kernel_in(c, 0, 0)->dims, sd, sizeof sd),
                          (long long)ekh, (long long)ekw, (long long)g->pt, (long long)g->pb,
                          (long long)g->pl, (long long)g->pr);
  }
  g->oh = (ph + (ceil ? g->sh - 1 : 0)) / g->sh + 1;
  g->ow = (pw + (ceil ? g->sw - 1 : 0)) / g->sw + 1;
  return CT_OK;
}

/* Input (slot 0) of rank 4, NCHW. */
static ct_status check_nchw(const ct_kernel_ctx *c, ct_ddim x, ct__conv_geom *g) {
  if (x.rank != 4) {
    char sd[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input %s variable '%s' is %s: it must be rank 4, [N, C, H, W]",
                          c->op->def->in[0].name, ct_kernel_in_name(c, 0, 0),
                          ct_ddim_str(x, sd, sizeof sd));
  }
  g->n = x.d[0];
  g->c = x.d[1];
  g->h = x.d[2];
  g->w = x.d[3];
  return CT_OK;
}

ct_status ct__conv_plan(const ct_kernel_ctx *c, ct_ddim in, ct_ddim f, ct__conv_geom *g) {
  memset(g, 0, sizeof *g);
  ct_status s = check_nchw(c, in, g);
  if (s != CT_OK) return s;
  char si[CT__DDIM_STR_CAP], sf[CT__DDIM_STR_CAP];
  int64_t groups = c->attr[CT__CONV_GROUPS].u.i;
  if (groups < 1 || groups > INT32_MAX) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE, "attribute 'groups' is %lld: it must be >= 1",
                          (long long)groups);
  }
  g->groups = groups;
  if (f.rank != 4 || g->c % groups != 0 || f.d[1] != g->c / groups || f.d[0] % groups != 0) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input Input variable '%s' %s and input Filter variable '%s' %s with "
                          "groups %lld: Filter must be [M, C/groups, KH, KW], M a multiple of "
                          "groups",
                          ct_kernel_in_name(c, CT__CONV_INPUT, 0), ct_ddim_str(in, si, sizeof si),
                          ct_kernel_in_name(c, CT__CONV_FILTER, 0), ct_ddim_str(f, sf, sizeof sf),
                          (long long)groups);
  }
  g->m = f.d[0];
  g->kh = f.d[2];
  g->kw = f.d[3];
  if ((s = pair_attr(c, CT__CONV_STRIDES, "strides", 1, &g->sh, &g->sw)) != CT_OK ||
      (s = pair_attr(c, CT__CONV_DILATIONS, "dilations", 1, &g->dh, &g->dw)) != CT_OK) {
    return s;
  }
  int64_t ekh = g->dh * (g->kh - 1) + 1, ekw = g->dw * (g->kw - 1) + 1;
  g->kh = ekh; /* paddings() and out_extent() see the dilated extent */
  g->kw = ekw;
  s = paddings(c, CT__CONV_DATA_FORMAT, CT__CONV_PADDING_ALGORITHM, CT__CONV_PADDINGS, g);
  if (s == CT_OK && (f.d[2] == 0 || f.d[3] == 0)) {
    s = ct_kernel_fail(c, CT_ERR_SHAPE, "input Filter variable '%s' %s has an empty window",
                       ct_kernel_in_name(c, CT__CONV_FILTER, 0), ct_ddim_str(f, sf, sizeof sf));
  }
  if (s == CT_OK) s = out_extent(c, g, ekh, ekw, false);
  g->kh = f.d[2];
  g->kw = f.d[3];
  return s;
}

ct_status ct__pool_plan(const ct_kernel_ctx *c, ct_ddim x, ct__conv_geom *g) {
  memset(g, 0, sizeof *g);
  /* Global pooling of 1-D or 3-D data: the spatial dims as one plane of their product (rows of
   * the last dim), the same elements in the same order (ONNX's GlobalAveragePool of a tensor
   * whose rank the import did not know). */
  if (c->attr[CT__POOL_GLOBAL].u.b && (x.rank == 3 || x.rank == 5)) {
    const int64_t rows = x.rank == 5 ? x.d[2] * x.d[3] : 1;
    x = CT_DIMS(x.d[0], x.d[1], rows, x.d[x.rank - 1]);
  }
  ct_status s = check_nchw(c, x, g);
  if (s != CT_OK) return s;
  const char *type = c->attr[CT__POOL_TYPE].u.s;
  if (strcmp(type, "max") != 0 && strcmp(type, "avg") != 0) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute 'pooling_type' is \"%s\": use \"max\" or \"avg\"", type);
  }
  if (c->attr[CT__POOL_ADAPTIVE].u.b) {
    return ct_kernel_fail(c, CT_ERR_UNSUPPORTED,
                          "attribute 'adaptive' is true: adaptive pooling is not supported (set "
                          "ksize and strides for the output size)");
  }
  g->max = type[0] == 'm';
  g->exclusive = c->attr[CT__POOL_EXCLUSIVE].u.b;
  g->m = g->c;
  g->groups = g->c;
  g->dh = g->dw = 1;
  if (c->attr[CT__POOL_GLOBAL].u.b) {
    g->kh = g->sh = g->h;
    g->kw = g->sw = g->w;
    g->sh += g->sh == 0;
    g->sw += g->sw == 0;
    s = paddings(c, CT__POOL_DATA_FORMAT, CT__POOL_PADDING_ALGORITHM, CT__POOL_PADDINGS, g);
    g->pt = g->pb = g->pl = g->pr = 0;
    return s == CT_OK ? out_extent(c, g, g->kh, g->kw, false) : s;
  }
  if ((s = pair_attr(c, CT__POOL_KSIZE, "ksize", 1, &g->kh, &g->kw)) != CT_OK ||
      (s = pair_attr(c, CT__POOL_STRIDES, "strides", 1, &g->sh, &g->sw)) != CT_OK ||
      (s = paddings(c, CT__POOL_DATA_FORMAT, CT__POOL_PADDING_ALGORITHM, CT__POOL_PADDINGS, g)) !=
          CT_OK) {
    return s;
  }
  return out_extent(c, g, g->kh, g->kw, c->attr[CT__POOL_CEIL_MODE].u.b);
}

/* Filter has Input's dtype; Output takes the plan's dims. */
static ct_status conv_infer(const ct_kernel_ctx *c) {
  const ct_tensor *in = ct_kernel_in(c, CT__CONV_INPUT, 0);
  ct_status s = ct__k_check_dtype(c, CT__CONV_FILTER, 0, in->dtype);
  ct__conv_geom g;
  if (s == CT_OK) s = ct__conv_plan(c, in->dims, ct_kernel_in(c, CT__CONV_FILTER, 0)->dims, &g);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, ct__conv_out_dims(&g)) : s;
}

ct_ddim ct__pool_out_dims(const ct__conv_geom *g, ct_ddim x) {
  if (x.rank == 4) return ct__conv_out_dims(g);
  ct_ddim d = CT_DIMS(g->n, g->m); /* global pooling of 1-D or 3-D data: 1 per spatial dim */
  for (d.rank = 2; d.rank < x.rank; d.rank++) d.d[d.rank] = 1;
  return d;
}

static ct_status pool_infer(const ct_kernel_ctx *c) {
  ct__conv_geom g;
  const ct_ddim x = ct_kernel_in(c, CT__IN_X, 0)->dims;
  ct_status s = ct__pool_plan(c, x, &g);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, ct__pool_out_dims(&g, x)) : s;
}

static const int64_t ones[2] = {1, 1}, zeros[2] = {0, 0};
#define INTS(a) {.type = CT_ATTR_INTS, .u.ints = {(a), 2}}
#define STR(v) {.type = CT_ATTR_STRING, .u.s = (v)}
#define BOOL(v) {.type = CT_ATTR_BOOL, .u.b = (v)}

/* The attributes in the CT__CONV_* order; conv2d_grad (ops/defs/conv_grad.c) has the same. */
#define CONV_ATTR_ROWS                                                                   \
  {"strides", INTS(ones), false}, {"paddings", INTS(zeros), false},                      \
      {"dilations", INTS(ones), false}, {"groups", {.type = CT_ATTR_INT, .u.i = 1}, false}, \
      {"data_format", STR("NCHW"), false}, {"padding_algorithm", STR("EXPLICIT"), false}
const ct_attr_def ct__conv_attrs[6] = {CONV_ATTR_ROWS};

/* In the CT__POOL_* order, each name after prefix P; pool2d_grad has the same. ksize defaults
 * to 1x1. */
#define POOL_ATTR_ROWS(P)                                                             \
  {P "pooling_type", STR("max"), false}, {P "ksize", INTS(ones), false},              \
      {P "strides", INTS(ones), false}, {P "paddings", INTS(zeros), false},           \
      {P "global_pooling", BOOL(false), false}, {P "exclusive", BOOL(true), false},   \
      {P "ceil_mode", BOOL(false), false}, {P "data_format", STR("NCHW"), false},     \
      {P "padding_algorithm", STR("EXPLICIT"), false}, {P "adaptive", BOOL(false), false}
const ct_attr_def ct__pool_attrs[10] = {POOL_ATTR_ROWS("")};

/* conv2d_fusion: conv2d's attributes first, in their order (its kernel is conv2d's, then the
 * epilogue), then the epilogue's. */
#define FUSION_ATTR_ROWS                                                      \
  CONV_ATTR_ROWS, {"activation", STR("identity"), false},                     \
      {"clip_min", {.type = CT_ATTR_FLOAT, .u.f = -INFINITY}, false},         \
      {"clip_max", {.type = CT_ATTR_FLOAT, .u.f = INFINITY}, false},          \
      {"epsilon", {.type = CT_ATTR_FLOAT, .u.f = 1e-5}, false}
static const ct_attr_def fusion_attrs[10] = {FUSION_ATTR_ROWS};

/* conv2d's checks and dims, then the epilogue's operands: Bias of 1 or M elements (what an
 * elementwise_add of a [M', 1, 1] bias to an NCHW output accepts: M' is 1 or M), the batch
 * norm's four vectors [M] or none of them (what batch_norm accepts), ResidualData of
 * dims that broadcast to Output's without enlarging them, both of Input's dtype, and a known
 * activation. */
static ct_status fusion_infer(const ct_kernel_ctx *c) {
  ct_status s = conv_infer(c);
  if (s != CT_OK) return s;
  const ct_tensor *in = ct_kernel_in(c, CT__CONV_INPUT, 0), *out = ct_kernel_out(c, CT__OUT, 0);
  int64_t m = out->dims.d[1];
  if (ct_kernel_in_count(c, CT__FUSION_BIAS) > 0) {
    const ct_tensor *b = ct_kernel_in(c, CT__FUSION_BIAS, 0);
    if ((s = ct__k_check_dtype(c, CT__FUSION_BIAS, 0, in->dtype)) != CT_OK) return s;
    if (b->numel != 1 && b->numel != m) {
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "Bias '%s' holds %lld elements; the output has %lld channels (give it "
                            "1 or %lld elements, or run without the executor's optimize option)",
                            ct_kernel_in_name(c, CT__FUSION_BIAS, 0), (long long)b->numel,
                            (long long)m, (long long)m);
    }
  }
  /* The batch norm: all four of its vectors or none, each [M] of Input's dtype. */
  size_t n_bn = 0;
  for (size_t k = CT__FUSION_BN_SCALE; k <= CT__FUSION_BN_VARIANCE; k++) {
    n_bn += ct_kernel_in_count(c, k) > 0;
    if ((s = ct__norm_check_vec(c, k, m, "one value per output channel")) != CT_OK) return s;
  }
  if (n_bn != 0 && n_bn != 4) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "%zu of the batch norm's inputs BnScale, BnBias, BnMean and BnVariance "
                          "are wired (wire all four, or none)",
                          n_bn);
  }
  if (ct_kernel_in_count(c, CT__FUSION_RESIDUAL) > 0) {
    const ct_tensor *r = ct_kernel_in(c, CT__FUSION_RESIDUAL, 0);
    if ((s = ct__k_check_dtype(c, CT__FUSION_RESIDUAL, 0, in->dtype)) != CT_OK) return s;
    bool fits = r->dims.rank <= 4;
    for (int k = 0; fits && k < r->dims.rank; k++) {
      int64_t rk = r->dims.d[r->dims.rank - 1 - k], ok = out->dims.d[3 - k];
      fits = rk == ok || rk == 1;
    }
    if (!fits) {
      char have[CT__DDIM_STR_CAP], want[CT__DDIM_STR_CAP];
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "ResidualData '%s' has dims %s, which do not broadcast to the "
                            "output's %s without enlarging them (give it the output's dims, or "
                            "run the program without the executor's optimize option)",
                            ct_kernel_in_name(c, CT__FUSION_RESIDUAL, 0),
                            ct_ddim_str(r->dims, have, sizeof have),
                            ct_ddim_str(out->dims, want, sizeof want));
    }
  }
  return ct__fusion_act_check(c, CT__FUSION_ACTIVATION);
}

/* conv2d_pool: conv2d_fusion's attributes, then pool2d's (CT__CPOOL_POOL on). */
static const ct_attr_def cpool_attrs[20] = {FUSION_ATTR_ROWS, POOL_ATTR_ROWS("pool_")};

/* conv2d_fusion's checks, then pool2d's over its output's dims, which max pooling of windows
 * (not global) takes to Output's. */
static ct_status cpool_infer(const ct_kernel_ctx *c) {
  ct_status s = fusion_infer(c);
  if (s != CT_OK) return s;
  const ct_kernel_ctx pc = ct__cpool_pool_view(c);
  ct__conv_geom g;
  s = ct__pool_plan(&pc, ct_kernel_out(c, CT__OUT, 0)->dims, &g);
  if (s != CT_OK) { /* pool2d's message, naming its attributes: this op's pool_ ones */
    char text[400];
    snprintf(text, sizeof text, "%s", ct_last_error());
    return ct_kernel_fail(c, s, "the pool over the convolution's output (attributes pool_ and "
                                "pool2d's name): %s", text);
  }
  if (!g.max || pc.attr[CT__POOL_GLOBAL].u.b) {
    return ct_kernel_fail(c, CT_ERR_UNSUPPORTED,
                          "conv2d_pool pools by max over windows: set pool_pooling_type \"max\" "
                          "and pool_global_pooling false, or run conv2d_fusion then pool2d");
  }
  return ct__k_resize(c, CT__OUT, 0, ct__conv_out_dims(&g));
}

ct_status ct__fusion_act_check(const ct_kernel_ctx *c, size_t attr) {
  const char *act = c->attr[attr].u.s;
  if (strcmp(act, "identity") != 0 && strcmp(act, "relu") != 0 && strcmp(act, "clip") != 0) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "activation '%s' is not one of identity, relu, clip", act);
  }
  return CT_OK;
}

static const ct_slot_def fusion_in[] = {{"Input", 0},
                                        {"Filter", 0},
                                        {"Bias", CT_SLOT_OPTIONAL},
                                        {"ResidualData", CT_SLOT_OPTIONAL},
                                        {"BnScale", CT_SLOT_OPTIONAL},
                                        {"BnBias", CT_SLOT_OPTIONAL},
                                        {"BnMean", CT_SLOT_OPTIONAL},
                                        {"BnVariance", CT_SLOT_OPTIONAL}};

static const ct_slot_def conv_in[] = {{"Input", 0}, {"Filter", 0}};
static const ct_slot_def conv_out[] = {{"Output", 0}};

#define CONV(name)                                                                            \
  {.type = (name), .inputs = conv_in, .n_inputs = 2, .outputs = conv_out, .n_outputs = 1,    \
   .attrs = ct__conv_attrs, .n_attrs = 6,                                                    \
   .flags = CT_OP_PURE_INFER, .infer_shape = conv_infer, .grad = ct__grad_conv2d}

static const ct_op_def defs[] = {
    CONV("conv2d"),
    CONV("depthwise_conv2d"),
    /* The executor's optimize pass (ops/passes.c) makes it; no gradient: it is never on a path
     * that append_backward walks. */
    {.type = "conv2d_fusion", .inputs = fusion_in, .n_inputs = 8, .outputs = conv_out,
     .n_outputs = 1, .attrs = fusion_attrs, .n_attrs = 10, .flags = CT_OP_PURE_INFER,
     .infer_shape = fusion_infer},
    /* The executor's optimize pass (ops/passes_pool.c) makes it; no gradient either. */
    {.type = "conv2d_pool", .inputs = fusion_in, .n_inputs = 8, .outputs = conv_out,
     .n_outputs = 1, .attrs = cpool_attrs, .n_attrs = 20, .flags = CT_OP_PURE_INFER,
     .infer_shape = cpool_infer},
    {.type = "pool2d", .inputs = ct__slot_x, .n_inputs = 1, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = ct__pool_attrs, .n_attrs = 10,
     .flags = CT_OP_PURE_INFER, .infer_shape = pool_infer,
     .grad = ct__grad_pool2d},
};

const ct__def_table ct__conv_defs = CT__TABLE(defs);

/* What the types compute (ct_op_type_doc, `corten ops`). */
#define DOC_GEOM                                                                              \
  " `paddings` holds 2 values (height, width: both sides alike) or 4 (top, bottom, left, "     \
  "right); padding_algorithm \"SAME\" pads so that OH = ceil(H / stride), an odd total's "     \
  "extra row and column at the end (\"SAME_LOWER\": at the beginning), \"VALID\" pads "        \
  "nothing, \"EXPLICIT\" (the default) takes paddings. NCHW only (data_format \"NCHW\" or "   \
  "\"AnyLayout\"); a padded image smaller than the window is refused (CT_ERR_SHAPE)."
#define DOC_CONV                                                                              \
  "2-D convolution (cross-correlation, PaddlePaddle's conv2d): Input [N, C, H, W] and Filter " \
  "[M, C/groups, KH, KW] of Input's dtype give Output [N, M, OH, OW], `OH = (H + pad_top + "   \
  "pad_bottom - (dilations[0] (KH - 1) + 1)) / strides[0] + 1` rounded down (OW likewise), "   \
  "each of the `groups` groups of C/groups input channels feeding M/groups output channels."   \
  DOC_GEOM " On CUDA, through cuDNN where libcudnn loads (float32 products, no TF32) and the "  \
  "paddings are symmetric, else corten's direct kernels."

static const ct__op_doc docs[] = {
    {"conv2d", DOC_CONV " There is no bias slot: add a [M, 1, 1] tensor with elementwise_add."},
    {"depthwise_conv2d", DOC_CONV " The same op as conv2d under PaddlePaddle's name for the "
                         "depthwise case: set groups to C yourself (Filter [M, 1, KH, KW])."},
    {"conv2d_fusion", "conv2d (its slots and attributes), then in one pass over Output `Output = "
                      "act(bn(conv + Bias) + ResidualData)`: Bias (optional) holds 1 or M "
                      "elements added per output channel; bn (optional: BnScale, BnBias, BnMean "
                      "and BnVariance, all four [M] or none) is batch_norm with is_test and "
                      "`epsilon` (default 1e-5), `(v - mean) / sqrt(var + epsilon) scale + "
                      "bias` in double; ResidualData (optional) broadcasts to Output's dims "
                      "without enlarging them; all of Input's dtype. `activation` is "
                      "\"identity\" (the default), \"relu\" or \"clip\" between clip_min and "
                      "clip_max (default -inf, +inf). Each step rounds as the separate ops do, "
                      "so the bits are those of conv2d, elementwise_add, batch_norm, "
                      "elementwise_add and relu or clip run one by one. The executor's optimize "
                      "pass (CPU only) makes it from such a chain (docs/design/passes.md); it has "
                      "no gradient."},
    {"conv2d_pool", "conv2d_fusion (its slots and attributes), then pool2d by max over its "
                    "Output with the attributes pool_pooling_type (\"max\"), pool_ksize, "
                    "pool_strides, pool_paddings, pool_ceil_mode, pool_padding_algorithm and "
                    "the rest of pool2d's, each named pool_ and pool2d's name: the bits of "
                    "conv2d_fusion then pool2d. On the CPU, where the convolution takes the "
                    "direct loop (a stride-2 stem), its output goes through cache a band of "
                    "rows at a time, never to memory. The executor's optimize pass (CPU only) "
                    "makes it from a convolution (conv2d, depthwise_conv2d, conv2d_fusion) "
                    "followed by a max pool2d (docs/design/passes.md); it has no gradient."},
    {"pool2d", "Max or average pooling (`pooling_type` \"max\", the default, or \"avg\") of X "
               "[N, C, H, W] over `ksize` windows (default 1x1) at `strides`, giving Out [N, C, "
               "OH, OW] with conv2d's extent formula (ceil_mode rounds it up instead); "
               "global_pooling takes the whole image (also of 1-D [N, C, L] and 3-D [N, C, D, H, "
               "W] data, Out then of X's rank with 1 per spatial dim). Max never sees the padding "
               "(a NaN wins its window); avg divides by the window's taps inside the image with `exclusive` "
               "(the default), else by KH KW, and a window lying wholly in the padding gives 0."
               DOC_GEOM " Adaptive pooling is refused (CT_ERR_UNSUPPORTED)."},
};

const ct__doc_table ct__conv_docs = CT__TABLE(docs);
