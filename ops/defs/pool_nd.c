/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/pool_nd.c: the op types pool_nd and max_unpool (ONNX's MaxPool, AveragePool and
 * MaxUnpool over 1 to 3 spatial dims, NC first) and the plan their kernels follow.
 *
 *   pool_nd     X [N, C, D1 (, D2 (, D3))] -> Out [N, C, O1 ...], Indices (optional, int64, Out's
 *               dims, max only). Along dim j the window's taps sit at o stride - pad_begin +
 *               t dilation, t in [0, ksize); taps in the padding never count for max; avg sums
 *               the taps inside X and divides by their count (exclusive) or by the taps inside
 *               the padded extent [-pad_begin, D + pad_end) (exclusive false: ONNX's
 *               count_include_pad). Max keeps the first largest tap in window order (a NaN is
 *               largest, the first one kept); Indices holds its flat index into X
 *               ((n C + c) D1 D2 D3 + the spatial index, row-major, or column-major over the
 *               spatial dims with storage_order 1).
 *               Extents: EXPLICIT O = floor((D + pads - ((k - 1) dil + 1)) / s) + 1, ceil_mode
 *               rounding up but dropping a last window that would start in the end padding (as
 *               ONNX's reference and PyTorch do); VALID the same with no pads; SAME_UPPER and
 *               SAME_LOWER O = ceil(D / s), the total padding (O - 1) s + (k - 1) dil + 1 - D
 *               split with the odd one at the end (UPPER) or at the beginning (LOWER);
 *               ceil_mode applies to EXPLICIT only (ONNX's output-shape formulas for VALID and
 *               SAME do not depend on it). global_pooling takes each spatial dim whole.
 *               A window of padding alone (no maximum, no mean) is refused.
 *   max_unpool  X [N, C, D...], Indices (int64 or int32, X's dims), OutputShape (optional, int64
 *               or int32, read on the host at every run) -> Out. The unpooled dims U are X's
 *               with each spatial D replaced by (D - 1) stride + ksize - pad_begin - pad_end;
 *               U.flat[Indices[i]] = X[i] in element order over zeros (a repeated index keeps
 *               the last). Out is U, or, given OutputShape's values (else attribute
 *               output_shape), that shape (no dim below U's) with U at its start and zeros
 *               after, as ONNX's reference places it. An index outside U is refused before
 *               anything is written. No gradient. */
#include <string.h>

#include "ops/defs/index.h"
#include "ops/defs/pool_nd.h"

static const int64_t none_ints[1] = {0};
#define NO_INTS {.type = CT_ATTR_INTS, .u.ints = {none_ints, 0}}
#define STR(v) {.type = CT_ATTR_STRING, .u.s = (v)}
#define BOOL(v) {.type = CT_ATTR_BOOL, .u.b = (v)}

const ct_attr_def ct__pnd_attrs[CT__PND_N_ATTRS] = {
    {"pooling_type", STR("max"), false},
    {"ksize", NO_INTS, false},
    {"strides", NO_INTS, false},
    {"paddings", NO_INTS, false},
    {"dilations", NO_INTS, false},
    {"padding_algorithm", STR("EXPLICIT"), false},
    {"ceil_mode", BOOL(false), false},
    {"exclusive", BOOL(true), false},
    {"storage_order", {.type = CT_ATTR_INT, .u.i = 0}, false},
    {"global_pooling", BOOL(false), false},
};
static const ct_slot_def pnd_out[] = {{"Out", 0}, {"Indices", CT_SLOT_OPTIONAL}};

/* Ints attribute a: none (when may_be_empty; v keeps its defaults) or per values for each of
 * the k spatial dims, each in [lo, INT32_MAX], copied into v in order. */
static ct_status list_attr(const ct_kernel_ctx *c, size_t a, size_t k, size_t per,
                           bool may_be_empty, int64_t lo, int64_t *v) {
  const ct_attr_value *x = &c->attr[a];
  size_t want = k * per;
  const char *name = c->op->def->attr[a].name;
  if (x->u.ints.n == 0 && may_be_empty) return CT_OK;
  if (x->u.ints.n != want) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute '%s' has %zu values but input X variable '%s' has %zu "
                          "spatial dims: give %zu%s",
                          name, x->u.ints.n, ct_kernel_in_name(c, 0, 0), k, want,
                          may_be_empty ? " (or none for the default)" : "");
  }
  for (size_t i = 0; i < want; i++) {
    if (x->u.ints.v[i] < lo || x->u.ints.v[i] > INT32_MAX) {
      return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                            "attribute '%s' value %zu is %lld: each value must be in [%lld, %d]",
                            name, i, (long long)x->u.ints.v[i], (long long)lo, INT32_MAX);
    }
    v[i] = x->u.ints.v[i];
  }
  return CT_OK;
}

/* X of rank 3 to 5: [N, C, spatial...]. */
static ct_status spatial_rank(const ct_kernel_ctx *c, size_t slot, ct_ddim x, int *k) {
  if (x.rank < 3 || x.rank > 5) {
    char sd[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input %s variable '%s' is %s: it must be [N, C, D1], [N, C, D1, D2] "
                          "or [N, C, D1, D2, D3] (1 to 3 spatial dims)",
                          c->op->def->in[slot].name, ct_kernel_in_name(c, slot, 0),
                          ct_ddim_str(x, sd, sizeof sd));
  }
  *k = x.rank - 2;
  return CT_OK;
}

/* The extents and paddings of dim j (the real dims' lists at index i) under algorithm algo. */
static ct_status dim_extent(const ct_kernel_ctx *c, ct__pnd_plan *p, int j, const char *algo,
                            bool ceil) {
  int64_t ek = p->dil[j] * (p->ks[j] - 1) + 1, in = p->in[j], s = p->st[j];
  if (strncmp(algo, "SAME_", 5) == 0) {
    int64_t out = (in + s - 1) / s, total = (out - 1) * s + ek - in;
    total = total > 0 ? total : 0;
    p->pb[j] = algo[5] == 'U' ? total / 2 : total - total / 2;
    p->pe[j] = total - p->pb[j];
    p->out[j] = out;
    return CT_OK;
  }
  int64_t span = in + p->pb[j] + p->pe[j] - ek;
  if (span < 0) {
    char sd[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input X variable '%s' %s: spatial dim %d (extent %lld, paddings %lld, "
                          "%lld) is smaller than the window (%lld with dilation): pad it or use "
                          "a smaller window",
                          ct_kernel_in_name(c, 0, 0),
                          ct_ddim_str(ct_kernel_in(c, 0, 0)->dims, sd, sizeof sd),
                          j - (3 - p->k), (long long)in, (long long)p->pb[j],
                          (long long)p->pe[j], (long long)ek);
  }
  p->out[j] = (span + (ceil ? s - 1 : 0)) / s + 1;
  if (ceil && (p->out[j] - 1) * s >= in + p->pb[j]) p->out[j]--;
  return CT_OK;
}

/* Every window along every dim holds a tap inside X (needed for max and exclusive avg). */
static ct_status check_windows(const ct_kernel_ctx *c, const ct__pnd_plan *p) {
  if ((!p->max && !p->exclusive) || p->n * p->c == 0) return CT_OK; /* empty: no window runs */
  for (int j = 3 - p->k; j < 3; j++) {
    for (int64_t o = 0; o < p->out[j]; o++) {
      int64_t t0, t1;
      ct__pnd_taps(p, j, o, &t0, &t1);
      if (t1 > t0) continue;
      return ct_kernel_fail(c, CT_ERR_UNSUPPORTED,
                            "window %lld along spatial dim %d covers padding only (no element "
                            "of input X variable '%s'): its %s is undefined; use smaller "
                            "paddings or dilations",
                            (long long)o, j - (3 - p->k), ct_kernel_in_name(c, 0, 0),
                            p->max ? "maximum" : "mean");
    }
  }
  return CT_OK;
}

ct_status ct__pnd_plan_make(const ct_kernel_ctx *c, ct_ddim x, ct__pnd_plan *p) {
  memset(p, 0, sizeof *p);
  int k = 1;
  ct_status s = spatial_rank(c, 0, x, &k);
  if (s != CT_OK) return s;
  const char *type = c->attr[CT__PND_TYPE].u.s, *algo = c->attr[CT__PND_ALGO].u.s;
  if (strcmp(type, "max") != 0 && strcmp(type, "avg") != 0) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute 'pooling_type' is \"%s\": use \"max\" or \"avg\"", type);
  }
  if (strcmp(algo, "EXPLICIT") != 0 && strcmp(algo, "VALID") != 0 &&
      strcmp(algo, "SAME_UPPER") != 0 && strcmp(algo, "SAME_LOWER") != 0) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute 'padding_algorithm' is \"%s\": use \"EXPLICIT\", \"VALID\", "
                          "\"SAME_UPPER\" or \"SAME_LOWER\"",
                          algo);
  }
  int64_t so = c->attr[CT__PND_STORAGE].u.i;
  if (so != 0 && so != 1) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute 'storage_order' is %lld: use 0 (row-major) or 1 "
                          "(column-major)",
                          (long long)so);
  }
  p->k = k;
  p->n = x.d[0];
  p->c = x.d[1];
  p->max = type[0] == 'm';
  p->exclusive = c->attr[CT__PND_EXCLUSIVE].u.b;
  p->storage = (int)so;
  int f = 3 - k; /* the first real dim */
  for (int j = 0; j < 3; j++) {
    p->in[j] = j < f ? 1 : x.d[2 + j - f];
    p->ks[j] = p->st[j] = p->dil[j] = 1;
  }
  bool global = c->attr[CT__PND_GLOBAL].u.b;
  if (global) {
    for (int j = f; j < 3; j++) p->ks[j] = p->in[j] > 0 ? p->in[j] : 1;
  } else {
    int64_t pads[6] = {0};
    if ((s = list_attr(c, CT__PND_KSIZE, (size_t)k, 1, false, 1, p->ks + f)) != CT_OK ||
        (s = list_attr(c, CT__PND_STRIDES, (size_t)k, 1, true, 1, p->st + f)) != CT_OK ||
        (s = list_attr(c, CT__PND_DILATIONS, (size_t)k, 1, true, 1, p->dil + f)) != CT_OK ||
        (s = list_attr(c, CT__PND_PADDINGS, (size_t)k, 2, true, 0, pads)) != CT_OK) {
      return s;
    }
    for (int i = 0; i < k; i++) {
      p->pb[f + i] = pads[i];
      p->pe[f + i] = pads[k + i];
    }
  }
  bool ceil = !global && strcmp(algo, "EXPLICIT") == 0 && c->attr[CT__PND_CEIL].u.b;
  if (strcmp(algo, "VALID") == 0 || global) {
    for (int j = 0; j < 3; j++) p->pb[j] = p->pe[j] = 0;
  }
  for (int j = 0; j < 3; j++) {
    if (j >= f && (s = dim_extent(c, p, j, global ? "EXPLICIT" : algo, ceil)) != CT_OK) return s;
    if (j < f) p->out[j] = 1;
  }
  /* A window's taps are counted in int64 (an average's divisor): at most 2^40 of them. */
  int64_t vol = 1;
  for (int j = 0; j < 3; j++) {
    if (__builtin_mul_overflow(vol, p->ks[j], &vol) || vol > ((int64_t)1 << 40)) {
      return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                            "the window (%s %lld x %lld x %lld) holds more than 2^40 taps: give "
                            "a smaller ksize", global ? "X's spatial extent" : "attribute ksize",
                            (long long)p->ks[0], (long long)p->ks[1], (long long)p->ks[2]);
    }
  }
  p->in_sz = p->in[0] * p->in[1] * p->in[2];
  p->out_sz = p->out[0] * p->out[1] * p->out[2];
  return check_windows(c, p);
}

ct_ddim ct__pnd_out_dims(const ct__pnd_plan *p) {
  ct_ddim d = {.rank = p->k + 2};
  d.d[0] = p->n;
  d.d[1] = p->c;
  for (int i = 0; i < p->k; i++) d.d[2 + i] = p->out[3 - p->k + i];
  return d;
}

int64_t ct__pnd_count(const ct__pnd_plan *p, const int64_t o[3]) {
  int64_t cnt = 1;
  for (int j = 0; j < 3; j++) {
    int64_t t0, t1;
    if (p->exclusive) {
      ct__pnd_taps(p, j, o[j], &t0, &t1);
    } else { /* the taps below in + pe: start >= -pb always */
      int64_t start = o[j] * p->st[j] - p->pb[j], lim = p->in[j] + p->pe[j] - start;
      t0 = 0;
      t1 = lim <= 0 ? 0 : (lim - 1) / p->dil[j] + 1;
      if (t1 > p->ks[j]) t1 = p->ks[j];
    }
    cnt *= t1 > t0 ? t1 - t0 : 0;
  }
  return cnt;
}

void ct__pnd_from_pool2d(const ct__conv_geom *g, ct__pnd_plan *p) {
  memset(p, 0, sizeof *p);
  p->k = 2;
  p->n = g->n;
  p->c = g->c;
  p->in[0] = p->out[0] = p->ks[0] = p->st[0] = p->dil[0] = p->dil[1] = p->dil[2] = 1;
  p->in[1] = g->h, p->in[2] = g->w, p->out[1] = g->oh, p->out[2] = g->ow;
  p->ks[1] = g->kh, p->ks[2] = g->kw, p->st[1] = g->sh, p->st[2] = g->sw;
  p->pb[1] = g->pt, p->pe[1] = g->pb, p->pb[2] = g->pl, p->pe[2] = g->pr;
  p->in_sz = g->h * g->w;
  p->out_sz = g->oh * g->ow;
  p->max = g->max;
  p->exclusive = g->exclusive;
}

static ct_status pnd_infer(const ct_kernel_ctx *c) {
  ct__pnd_plan p;
  ct_status s = ct__pnd_plan_make(c, ct_kernel_in(c, CT__IN_X, 0)->dims, &p);
  if (s != CT_OK) return s;
  ct_ddim out = ct__pnd_out_dims(&p);
  if (ct_kernel_out_count(c, CT__PND_INDICES) > 0) {
    if (!p.max) {
      return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                            "output Indices variable '%s' is wired to avg pooling: only max "
                            "pooling has indices (leave Indices out)",
                            ct_kernel_out_name(c, CT__PND_INDICES, 0));
    }
    s = ct__k_resize(c, CT__PND_INDICES, 0, out);
  }
  return s == CT_OK ? ct__k_resize(c, CT__PND_OUT, 0, out) : s;
}

/* ---- max_unpool ------------------------------------------------------------------------------ */

static const ct_slot_def mup_in[] = {
    {"X", 0}, {"Indices", 0}, {"OutputShape", CT_SLOT_OPTIONAL}};
static const ct_attr_def mup_attrs[CT__MUP_N_ATTRS] = {
    {"ksize", NO_INTS, false},
    {"strides", NO_INTS, false},
    {"paddings", NO_INTS, false},
    {"output_shape", NO_INTS, false},
};

ct_status ct__mup_dims(const ct_kernel_ctx *c, ct_ddim *inferred, ct_ddim *out) {
  const ct_tensor *x = ct_kernel_in(c, CT__MUP_X, 0), *ix = ct_kernel_in(c, CT__MUP_INDICES, 0);
  int k = 1;
  ct_status s = spatial_rank(c, CT__MUP_X, x->dims, &k);
  if (s == CT_OK) s = ct__ix_check_index_dtype(c, CT__MUP_INDICES);
  if (s != CT_OK) return s;
  char a[CT__DDIM_STR_CAP], b[CT__DDIM_STR_CAP];
  if (!ct_ddim_equal(x->dims, ix->dims)) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input Indices variable '%s' is %s but input X variable '%s' is %s: "
                          "give one index per element of X",
                          ct_kernel_in_name(c, CT__MUP_INDICES, 0),
                          ct_ddim_str(ix->dims, a, sizeof a),
                          ct_kernel_in_name(c, CT__MUP_X, 0), ct_ddim_str(x->dims, b, sizeof b));
  }
  int64_t ks[3], st[3] = {1, 1, 1}, pads[6] = {0};
  if ((s = list_attr(c, CT__MUP_KSIZE, (size_t)k, 1, false, 1, ks)) != CT_OK ||
      (s = list_attr(c, CT__MUP_STRIDES, (size_t)k, 1, true, 1, st)) != CT_OK ||
      (s = list_attr(c, CT__MUP_PADDINGS, (size_t)k, 2, true, 0, pads)) != CT_OK) {
    return s;
  }
  *inferred = x->dims;
  for (int i = 0; i < k; i++) {
    int64_t d = x->dims.d[2 + i], e = 0;
    if (d != 0 && (__builtin_mul_overflow(d - 1, st[i], &e) ||
                   __builtin_add_overflow(e, ks[i], &e) || e > ((int64_t)1 << 56))) {
      return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                            "input X variable '%s': spatial dim %d of extent %lld with stride "
                            "%lld unpools past 2^56 elements: give smaller strides",
                            ct_kernel_in_name(c, 0, 0), i, (long long)d, (long long)st[i]);
    }
    e -= d == 0 ? 0 : pads[i] + pads[k + i];
    if (e < 0) {
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "spatial dim %d of Out would be %lld (paddings larger than the "
                            "unpooled extent): use smaller paddings",
                            i, (long long)e);
    }
    inferred->d[2 + i] = e;
  }
  int64_t v[CT_MAX_RANK];
  size_t n = 0;
  s = ct__ix_ints(c, CT__MUP_SHAPE, CT__MUP_OUTPUT_SHAPE, v, &n, CT_MAX_RANK);
  if (s != CT_OK) return s;
  *out = *inferred;
  if (n == 0) return CT_OK;
  if (n != (size_t)x->dims.rank) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "the output shape has %zu values but input X variable '%s' is %s: "
                          "give the whole shape of Out, %d values",
                          n, ct_kernel_in_name(c, CT__MUP_X, 0), ct_ddim_str(x->dims, b, sizeof b),
                          x->dims.rank);
  }
  for (size_t i = 0; i < n; i++) {
    if (v[i] < inferred->d[i]) {
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "the output shape's value %zu is %lld, below the unpooled extent "
                            "%lld (%s): give an output shape at least as large",
                            i, (long long)v[i], (long long)inferred->d[i],
                            ct_ddim_str(*inferred, a, sizeof a));
    }
    out->d[i] = v[i];
  }
  return CT_OK;
}

static ct_status mup_infer(const ct_kernel_ctx *c) {
  ct_ddim inferred, out;
  ct_status s = ct__mup_dims(c, &inferred, &out);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, out) : s;
}

/* pool_nd's infer-shape reads dims and attributes only; max_unpool's reads OutputShape's
 * values, so it is not pure. */
static const ct_op_def defs[] = {
    {.type = "pool_nd", .inputs = ct__slot_x, .n_inputs = 1, .outputs = pnd_out,
     .n_outputs = 2, .attrs = ct__pnd_attrs, .n_attrs = CT__PND_N_ATTRS,
     .flags = CT_OP_PURE_INFER, .infer_shape = pnd_infer, .grad = ct__grad_pool_nd},
    {.type = "max_unpool", .inputs = mup_in, .n_inputs = 3, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = mup_attrs, .n_attrs = CT__MUP_N_ATTRS, .infer_shape = mup_infer},
};

const ct__def_table ct__pool_nd_defs = CT__TABLE(defs);

/* What the types compute (ct_op_type_doc, `corten ops`). */
static const ct__op_doc docs[] = {
    {"pool_nd",
     "ONNX's MaxPool and AveragePool over 1 to 3 spatial dims: X [N, C, D...] gives Out [N, C, "
     "O...] (`pooling_type` \"max\", the default, or \"avg\"), each window's taps at `o stride "
     "- pad_begin + t dilation` for t in [0, ksize); ksize is required (one value per spatial "
     "dim), strides and dilations default to 1, paddings (the beginnings, then the ends) to 0, "
     "and global_pooling takes each spatial dim whole. Max keeps the first largest tap in "
     "window order (a NaN is largest) and never sees the padding; the optional Indices (int64, "
     "Out's dims, max only) holds its flat index into X, `(n C + c) D1 D2 D3` plus the spatial "
     "index, row-major (column-major over the spatial dims with storage_order 1). Avg divides "
     "the sum of the taps inside X by their count (exclusive, the default) or by the taps inside "
     "the padded extent (exclusive false: ONNX's count_include_pad). Extents: padding_algorithm "
     "\"EXPLICIT\" (the default) gives `O = floor((D + pads - ((ksize - 1) dilation + 1)) / "
     "stride) + 1`, ceil_mode rounding up but dropping a last window that would start in the "
     "end padding; \"VALID\" the same without pads; \"SAME_UPPER\" / \"SAME_LOWER\" `O = "
     "ceil(D / stride)`, the odd padding at the end / beginning. A window of padding alone is "
     "refused for max and exclusive avg (CT_ERR_UNSUPPORTED)."},
    {"max_unpool",
     "ONNX's MaxUnpool, the inverse of max pooling with indices: X [N, C, D...] and Indices "
     "(int64 or int32, X's dims, flat indices as pool_nd's Indices gives them) scatter into "
     "zeros of U, X's dims with each spatial D replaced by `(D - 1) stride + ksize - pad_begin "
     "- pad_end` (ksize required, strides default 1, paddings 0), `U.flat[Indices[i]] = X[i]` "
     "in element order (a repeated index keeps the last). Out is U, or, when OutputShape "
     "(optional, int64 or int32, read on the host when the op runs) or else attribute "
     "output_shape gives a shape, that shape (no dim below U's) with U's elements at its start "
     "and zeros after, as ONNX's reference places them. An index outside U is refused before "
     "anything is written. No gradient."},
};

const ct__doc_table ct__pool_nd_docs = CT__TABLE(docs);
