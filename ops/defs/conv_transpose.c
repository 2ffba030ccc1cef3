/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/conv_transpose.c: the op type conv_transpose (ONNX's ConvTranspose; the formula in
 * ops/defs/conv_transpose.h), its plan and shapes; the grad type's in conv_transpose_grad.c.
 *
 *   inputs   X [N, C, I...] (1 to 3 spatial dims), W [C, M/groups, K...], B [M] (optional)
 *   output   Y [N, M, O...]
 *   attrs    strides, dilations (>= 1), pads (begins then ends, >= 0), output_padding (>= 0),
 *            output_shape (the spatial O...), kernel_shape (checked against W's K...), each a
 *            list of one value per spatial dim (pads: two) or empty for the default; groups;
 *            auto_pad "NOTSET" (or ""), "VALID", "SAME_UPPER", "SAME_LOWER"
 *
 * With full = s (I - 1) + output_padding + d (K - 1) + 1 per dim:
 *   NOTSET: O = full - pad_begin - pad_end;  VALID: O = full (pads must be 0)
 *   output_shape given, or SAME_*: O = output_shape (SAME_* without it: I s), total = full - O;
 *   SAME_UPPER cuts total / 2 from the beginning, the others total - total / 2 (ONNX's rule).
 *   A total below 0 (the output larger than full) puts the extra zeros (plus B) at the end
 *   for NOTSET and VALID, as onnxruntime and ONNX's reference implementation do; for SAME_*
 *   they disagree, and the op refuses it (CT_ERR_UNSUPPORTED). output_shape with nonzero pads
 *   is refused likewise (ONNX ignores one of them, which one differs between runtimes). */
#include <string.h>

#include "ops/defs/conv_transpose.h"

ct_status ct__cvt_list_attr(const ct_kernel_ctx *c, int a, size_t want, int64_t lo,
                            const int64_t **v, size_t *n) {
  const char *name = c->op->def->attr[a].name;
  *v = c->attr[a].u.ints.v;
  *n = c->attr[a].u.ints.n;
  if (*n != 0 && *n != want) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute '%s' has %zu values: give %zu (one per spatial dim of X%s) "
                          "or none",
                          name, *n, want, want > 3 ? ", the beginnings then the ends" : "");
  }
  for (size_t i = 0; i < *n; i++) {
    if ((*v)[i] < lo || (*v)[i] > INT32_MAX) {
      return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                            "attribute '%s' holds %lld: each value must be in [%lld, %d]", name,
                            (long long)(*v)[i], (long long)lo, INT32_MAX);
    }
  }
  return CT_OK;
}

/* X [N, C, I...] of rank 3 to 5 and W [C, M/groups, K...] of the same rank. */
static ct_status check_dims(const ct_kernel_ctx *c, ct_ddim x, ct_ddim w, ct__cvt_plan *p) {
  char sx[CT__DDIM_STR_CAP], sw[CT__DDIM_STR_CAP];
  int64_t groups = c->attr[CT__CVT_GROUPS].u.i;
  if (x.rank < 3 || x.rank > 5) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input X variable '%s' is %s: it must be [N, C, I...] with 1 to 3 "
                          "spatial dims",
                          ct_kernel_in_name(c, CT__CVT_X, 0), ct_ddim_str(x, sx, sizeof sx));
  }
  if (groups < 1 || groups > INT32_MAX) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE, "attribute 'groups' is %lld: it must be >= 1",
                          (long long)groups);
  }
  if (w.rank != x.rank || w.d[0] != x.d[1] || x.d[1] % groups != 0) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input X variable '%s' %s and input W variable '%s' %s with groups "
                          "%lld: W must be [C, M/groups, K...] with X's rank, C a multiple of "
                          "groups",
                          ct_kernel_in_name(c, CT__CVT_X, 0), ct_ddim_str(x, sx, sizeof sx),
                          ct_kernel_in_name(c, CT__CVT_W, 0), ct_ddim_str(w, sw, sizeof sw),
                          (long long)groups);
  }
  p->nsp = x.rank - 2;
  p->n = x.d[0];
  p->c = x.d[1];
  p->groups = groups;
  if (__builtin_mul_overflow(w.d[1], groups, &p->m) || p->m > ((int64_t)1 << 48)) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input W variable '%s' %s with groups %lld gives more than 2^48 "
                          "output channels: give W a dim 1 of at most 2^48 / groups",
                          ct_kernel_in_name(c, CT__CVT_W, 0), ct_ddim_str(w, sw, sizeof sw),
                          (long long)groups);
  }
  const int off = 3 - p->nsp; /* the spatial dims are the last ones: the longest loop inside */
  for (int i = 0; i < 3; i++) {
    p->in[i] = i >= off ? x.d[2 + i - off] : 1;
    p->k[i] = i >= off ? w.d[2 + i - off] : 1;
    p->s[i] = p->d[i] = 1;
    p->out[i] = 1;
    p->pb[i] = 0;
    if (p->k[i] == 0 || p->in[i] > INT32_MAX || p->k[i] > INT32_MAX) {
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "input X variable '%s' %s and input W variable '%s' %s: W's window "
                            "must not be empty, and each spatial extent at most %d",
                            ct_kernel_in_name(c, CT__CVT_X, 0), ct_ddim_str(x, sx, sizeof sx),
                            ct_kernel_in_name(c, CT__CVT_W, 0), ct_ddim_str(w, sw, sizeof sw),
                            INT32_MAX);
    }
  }
  return CT_OK;
}

int ct__cvt_auto_pad(const ct_kernel_ctx *c, int attr) {
  static const char *const names[] = {"NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"};
  const char *a = c->attr[attr].u.s;
  if (a[0] == '\0') return 0;
  for (int i = 0; i < 4; i++) {
    if (strcmp(a, names[i]) == 0) return i;
  }
  ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                 "attribute 'auto_pad' is \"%s\": use \"NOTSET\", \"VALID\", \"SAME_UPPER\" or "
                 "\"SAME_LOWER\"",
                 a);
  return -1;
}

ct_status ct__cvt_plan_make(const ct_kernel_ctx *c, ct_ddim x, ct_ddim w, ct__cvt_plan *p) {
  memset(p, 0, sizeof *p);
  ct_status s = check_dims(c, x, w, p);
  if (s != CT_OK) return s;
  size_t k = (size_t)p->nsp, off = 3 - k; /* list entry i is the plan's dim off + i */
  const int64_t *st, *pads, *dil, *op, *os, *ks;
  size_t nst, npads, ndil, nop, nos, nks;
  if ((s = ct__cvt_list_attr(c, CT__CVT_STRIDES, k, 1, &st, &nst)) != CT_OK ||
      (s = ct__cvt_list_attr(c, CT__CVT_PADS, 2 * k, 0, &pads, &npads)) != CT_OK ||
      (s = ct__cvt_list_attr(c, CT__CVT_DILATIONS, k, 1, &dil, &ndil)) != CT_OK ||
      (s = ct__cvt_list_attr(c, CT__CVT_OUTPUT_PADDING, k, 0, &op, &nop)) != CT_OK ||
      (s = ct__cvt_list_attr(c, CT__CVT_OUTPUT_SHAPE, k, 0, &os, &nos)) != CT_OK ||
      (s = ct__cvt_list_attr(c, CT__CVT_KERNEL_SHAPE, k, 1, &ks, &nks)) != CT_OK) {
    return s;
  }
  int ap = ct__cvt_auto_pad(c, CT__CVT_AUTO_PAD);
  if (ap < 0) return ct_last_status();
  bool any_pad = false;
  for (size_t i = 0; i < npads; i++) any_pad |= pads[i] != 0;
  if (any_pad && (nos > 0 || ap != 0)) {
    return ct_kernel_fail(c, CT_ERR_UNSUPPORTED,
                          "attribute 'pads' is not all 0 and %s is given: ONNX lets one of them "
                          "decide and runtimes differ on which; give only one",
                          nos > 0 ? "'output_shape'" : "'auto_pad'");
  }
  for (size_t i = 0; i < k; i++) {
    size_t j = off + i;
    if (nks > 0 && ks[i] != p->k[j]) {
      char sw[CT__DDIM_STR_CAP];
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "attribute 'kernel_shape' holds %lld for spatial dim %zu where input "
                            "W variable '%s' %s has %lld: they must agree (or leave it out)",
                            (long long)ks[i], i, ct_kernel_in_name(c, CT__CVT_W, 0),
                            ct_ddim_str(w, sw, sizeof sw), (long long)p->k[j]);
    }
    p->s[j] = nst > 0 ? st[i] : 1;
    p->d[j] = ndil > 0 ? dil[i] : 1;
    /* Each term below 2^62, so the sum fits. */
    int64_t full = p->s[j] * (p->in[j] - 1) + (nop > 0 ? op[i] : 0) + p->d[j] * (p->k[j] - 1) + 1;
    if (nos > 0 || ap >= 2) {
      p->out[j] = nos > 0 ? os[i] : p->in[j] * p->s[j];
      int64_t total = full - p->out[j];
      if (total < 0 && ap >= 2) {
        return ct_kernel_fail(c, CT_ERR_UNSUPPORTED,
                              "spatial dim %zu: the output (%lld) is larger than the full "
                              "transposed convolution (%lld) with auto_pad %s, where ONNX's "
                              "runtimes place the extra zeros differently: give pads and "
                              "output_padding instead",
                              i, (long long)p->out[j], (long long)full,
                              c->attr[CT__CVT_AUTO_PAD].u.s);
      }
      p->pb[j] = total < 0 ? 0 : ap == 2 ? total / 2 : total - total / 2;
    } else {
      p->pb[j] = npads > 0 ? pads[i] : 0;
      p->out[j] = full - p->pb[j] - (npads > 0 ? pads[k + i] : 0);
    }
    if (p->out[j] < 0) {
      char sx[CT__DDIM_STR_CAP];
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "input X variable '%s' %s gives spatial dim %zu an output extent of "
                            "%lld (pads larger than the output): use smaller pads",
                            ct_kernel_in_name(c, CT__CVT_X, 0), ct_ddim_str(x, sx, sizeof sx), i,
                            (long long)p->out[j]);
    }
  }
  return CT_OK;
}

ct_ddim ct__cvt_out_dims(const ct__cvt_plan *p) {
  ct_ddim d = CT_DIMS(p->n, p->m);
  d.rank = 2 + p->nsp;
  for (int i = 0; i < p->nsp; i++) d.d[2 + i] = p->out[3 - p->nsp + i];
  return d;
}

ct_status ct__cvt_infer_any(const ct_kernel_ctx *c, bool nd) {
  const ct_tensor *x = ct_kernel_in(c, CT__CVT_X, 0);
  ct_status s = ct__k_check_dtype(c, CT__CVT_W, 0, x->dtype);
  ct__cvt_plan p;
  const ct_ddim w = ct_kernel_in(c, CT__CVT_W, 0)->dims;
  if (s == CT_OK) {
    s = nd ? ct__cnd_plan_make(c, x->dims, w, &p) : ct__cvt_plan_make(c, x->dims, w, &p);
  }
  const int64_t m = s == CT_OK ? (nd ? p.c : p.m) : 0; /* Y's channels */
  if (s == CT_OK && ct_kernel_in_count(c, CT__CVT_B) > 0) {
    const ct_tensor *b = ct_kernel_in(c, CT__CVT_B, 0);
    s = ct__k_check_dtype(c, CT__CVT_B, 0, x->dtype);
    if (s == CT_OK && !ct_ddim_equal(b->dims, CT_DIMS(m))) {
      char sb[CT__DDIM_STR_CAP];
      s = ct_kernel_fail(c, CT_ERR_SHAPE,
                         "input B variable '%s' is %s: it must be [%lld], one value per output "
                         "channel (%s)",
                         ct_kernel_in_name(c, CT__CVT_B, 0), ct_ddim_str(b->dims, sb, sizeof sb),
                         (long long)m, nd ? "W's dim 0" : "W's dim 1 times groups");
    }
  }
  if (s != CT_OK) return s;
  return ct__k_resize(c, CT__CVT_Y, 0, nd ? ct__cnd_out_dims(&p) : ct__cvt_out_dims(&p));
}

static ct_status cvt_infer(const ct_kernel_ctx *c) { return ct__cvt_infer_any(c, false); }

#define LIST(name) {name, {.type = CT_ATTR_INTS, .u.ints = {NULL, 0}}, false}
const ct_attr_def ct__cvt_attrs[CT__CVT_N_ATTRS] = {
    LIST("strides"),
    LIST("pads"),
    LIST("dilations"),
    LIST("output_padding"),
    LIST("output_shape"),
    LIST("kernel_shape"),
    {"groups", {.type = CT_ATTR_INT, .u.i = 1}, false},
    {"auto_pad", {.type = CT_ATTR_STRING, .u.s = "NOTSET"}, false},
};

static const ct_slot_def cvt_in[] = {{"X", 0}, {"W", 0}, {"B", CT_SLOT_OPTIONAL}};
static const ct_slot_def cvt_out[] = {{"Y", 0}};

static const ct_op_def defs[] = {
    {.type = "conv_transpose", .inputs = cvt_in, .n_inputs = 3, .outputs = cvt_out,
     .n_outputs = 1, .attrs = ct__cvt_attrs, .n_attrs = CT__CVT_N_ATTRS,
     .flags = CT_OP_PURE_INFER, .infer_shape = cvt_infer, .grad = ct__grad_conv_transpose},
    {.type = "conv_transpose_grad", .inputs = ct__cvt_grad_in, .n_inputs = 3,
     .outputs = ct__cvt_grad_out, .n_outputs = 3, .attrs = ct__cvt_attrs,
     .n_attrs = CT__CVT_N_ATTRS, .flags = CT_OP_PURE_INFER, .infer_shape = ct__cvt_grad_infer},
};

const ct__def_table ct__conv_transpose_defs = CT__TABLE(defs);

/* What the type computes (ct_op_type_doc, `corten ops`). */
static const ct__op_doc docs[] = {
    {"conv_transpose",
     "ONNX's ConvTranspose over 1 to 3 spatial dims: X [N, C, I...], W [C, M/groups, K...] and "
     "the optional B [M], both of X's dtype, give Y [N, M, O...], each input element spreading "
     "its value times the filter over the output: `Y[n, m, o] = B[m] + sum X[n, c, i] W[c, m', "
     "k]` over the channels c of m's group and the i, k with `o = i stride - pad_begin + k "
     "dilation` (m' = m mod M/groups). The list attributes hold one value per spatial dim "
     "(pads: the beginnings, then "
     "the ends) or none for the defaults (strides and dilations 1, pads and output_padding 0); "
     "kernel_shape, when given, must match W. With `full = stride (I - 1) + output_padding + "
     "dilation (K - 1) + 1`, auto_pad \"NOTSET\" (the default) gives `O = full - pad_begin - "
     "pad_end`, \"VALID\" `O = full`; output_shape, or \"SAME_UPPER\" / \"SAME_LOWER\" (O = I "
     "stride without it), sets O and cuts `full - O` from the two ends, the odd one at the end "
     "for SAME_UPPER and at the beginning otherwise. An output larger than full gets zeros "
     "(plus B) at the end under NOTSET and VALID and is refused under SAME_*, as is "
     "output_shape with nonzero pads (runtimes disagree on both)."},
};

const ct__doc_table ct__conv_transpose_docs = CT__TABLE(docs);
