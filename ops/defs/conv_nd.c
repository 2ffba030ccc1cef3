/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/conv_nd.c: the op type conv_nd (ONNX's Conv over 1 to 3 spatial dims; the formula
 * and its plan, the mirror of a transposed convolution's, in ops/defs/conv_transpose.h), its
 * grad type conv_nd_grad and the grad-op maker.
 *
 *   inputs   X [N, C, I...] (1 to 3 spatial dims), W [M, C/groups, K...], B [M] (optional)
 *   output   Y [N, M, O...]
 *   attrs    strides, dilations (>= 1), pads (begins then ends, >= 0), kernel_shape (checked
 *            against W's K...), each one value per spatial dim (pads: two) or empty for the
 *            default; groups; auto_pad "NOTSET" (or ""), "VALID", "SAME_UPPER", "SAME_LOWER"
 *            (refused with nonzero pads)
 *
 *   conv_nd_grad  X, W, Y@GRAD -> X@GRAD, W@GRAD, B@GRAD (each optional), conv_nd's attributes:
 *       with col the unfolding of X (one row per input channel of the group and filter tap, one
 *       column per output element), per image and group: W@GRAD += Y@GRAD_g col^T (images in
 *       order), X@GRAD = the folding back of W_g^T Y@GRAD_g (a transposed convolution),
 *       B@GRAD = Y@GRAD summed over images and positions. */
#include <string.h>

#include <corten/backward.h>

#include "ops/defs/conv_transpose.h"

/* X [N, C, I...] of rank 3 to 5 and W [M, C/groups, K...] of the same rank, M a multiple of
 * groups; the plan's channels and extents (mirrored: in = O, set later; out = I). */
static ct_status check_dims(const ct_kernel_ctx *c, ct_ddim x, ct_ddim w, ct__cvt_plan *p) {
  char sx[CT__DDIM_STR_CAP], sw[CT__DDIM_STR_CAP];
  const int64_t groups = c->attr[CT__CND_GROUPS].u.i;
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
  int64_t cw;
  if (w.rank != x.rank || __builtin_mul_overflow(w.d[1], groups, &cw) || cw != x.d[1] ||
      w.d[0] % groups != 0) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input X variable '%s' %s and input W variable '%s' %s with groups "
                          "%lld: W must be [M, C/groups, K...] with X's rank, M a multiple of "
                          "groups",
                          ct_kernel_in_name(c, CT__CVT_X, 0), ct_ddim_str(x, sx, sizeof sx),
                          ct_kernel_in_name(c, CT__CVT_W, 0), ct_ddim_str(w, sw, sizeof sw),
                          (long long)groups);
  }
  p->nsp = x.rank - 2;
  p->n = x.d[0];
  p->c = w.d[0];
  p->m = x.d[1];
  p->groups = groups;
  const int off = 3 - p->nsp; /* the spatial dims are the last ones: the longest loop inside */
  for (int i = 0; i < 3; i++) {
    p->out[i] = i >= off ? x.d[2 + i - off] : 1;
    p->k[i] = i >= off ? w.d[2 + i - off] : 1;
    p->s[i] = p->d[i] = p->in[i] = 1;
    p->pb[i] = 0;
    if (p->k[i] == 0 || p->out[i] > INT32_MAX || p->k[i] > INT32_MAX) {
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

ct_status ct__cnd_plan_make(const ct_kernel_ctx *c, ct_ddim x, ct_ddim w, ct__cvt_plan *p) {
  memset(p, 0, sizeof *p);
  ct_status s = check_dims(c, x, w, p);
  if (s != CT_OK) return s;
  const size_t k = (size_t)p->nsp, off = 3 - k; /* list entry i is the plan's dim off + i */
  const int64_t *st, *pads, *dil, *ks;
  size_t nst, npads, ndil, nks;
  if ((s = ct__cvt_list_attr(c, CT__CND_STRIDES, k, 1, &st, &nst)) != CT_OK ||
      (s = ct__cvt_list_attr(c, CT__CND_PADS, 2 * k, 0, &pads, &npads)) != CT_OK ||
      (s = ct__cvt_list_attr(c, CT__CND_DILATIONS, k, 1, &dil, &ndil)) != CT_OK ||
      (s = ct__cvt_list_attr(c, CT__CND_KERNEL_SHAPE, k, 1, &ks, &nks)) != CT_OK) {
    return s;
  }
  const int ap = ct__cvt_auto_pad(c, CT__CND_AUTO_PAD);
  if (ap < 0) return ct_last_status();
  for (size_t i = 0; ap != 0 && i < npads; i++) {
    if (pads[i] != 0) {
      return ct_kernel_fail(c, CT_ERR_UNSUPPORTED,
                            "attribute 'pads' is not all 0 and 'auto_pad' is \"%s\": ONNX lets "
                            "one of them decide and forbids both; give only one",
                            c->attr[CT__CND_AUTO_PAD].u.s);
    }
  }
  for (size_t i = 0; i < k; i++) {
    const size_t j = off + i;
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
    const int64_t in = p->out[j], span = p->d[j] * (p->k[j] - 1) + 1; /* each below 2^62 */
    int64_t o;
    if (ap >= 2) { /* SAME_*: O = ceil(I / s), the padding that needs split */
      o = (in + p->s[j] - 1) / p->s[j];
      int64_t total = (o - 1) * p->s[j] + span - in;
      if (total < 0) total = 0;
      p->pb[j] = ap == 2 ? total / 2 : total - total / 2;
    } else { /* NOTSET: the pads given; VALID: none */
      p->pb[j] = ap == 0 && npads > 0 ? pads[i] : 0;
      const int64_t padded = in + p->pb[j] + (ap == 0 && npads > 0 ? pads[k + i] : 0);
      o = padded < span ? 0 : (padded - span) / p->s[j] + 1;
    }
    if (o < 1 && in > 0) {
      char sx[CT__DDIM_STR_CAP];
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "input X variable '%s' %s: spatial dim %zu, padded, is shorter than "
                            "the dilated window (%lld): give a larger input, more padding or a "
                            "smaller kernel or dilation",
                            ct_kernel_in_name(c, CT__CVT_X, 0), ct_ddim_str(x, sx, sizeof sx), i,
                            (long long)span);
    }
    p->in[j] = o < 0 ? 0 : o;
  }
  return CT_OK;
}

ct_ddim ct__cnd_out_dims(const ct__cvt_plan *p) {
  ct_ddim d = CT_DIMS(p->n, p->c);
  d.rank = 2 + p->nsp;
  for (int i = 0; i < p->nsp; i++) d.d[2 + i] = p->in[3 - p->nsp + i];
  return d;
}

static ct_status cnd_infer(const ct_kernel_ctx *c) { return ct__cvt_infer_any(c, true); }

ct_status ct__cnd_grad_infer(const ct_kernel_ctx *c) { return ct__cvt_grad_infer_any(c, true); }

ct_status ct__grad_conv_nd(ct_grad_ctx *g) { return ct__cvt_grad_make(g, "conv_nd_grad"); }

#define LIST(name) {name, {.type = CT_ATTR_INTS, .u.ints = {NULL, 0}}, false}
const ct_attr_def ct__cnd_attrs[CT__CND_N_ATTRS] = {
    LIST("strides"),
    LIST("pads"),
    LIST("dilations"),
    LIST("kernel_shape"),
    {"groups", {.type = CT_ATTR_INT, .u.i = 1}, false},
    {"auto_pad", {.type = CT_ATTR_STRING, .u.s = "NOTSET"}, false},
};

static const ct_slot_def cnd_in[] = {{"X", 0}, {"W", 0}, {"B", CT_SLOT_OPTIONAL}};
static const ct_slot_def cnd_out[] = {{"Y", 0}};

static const ct_op_def defs[] = {
    {.type = "conv_nd", .inputs = cnd_in, .n_inputs = 3, .outputs = cnd_out, .n_outputs = 1,
     .attrs = ct__cnd_attrs, .n_attrs = CT__CND_N_ATTRS, .flags = CT_OP_PURE_INFER,
     .infer_shape = cnd_infer, .grad = ct__grad_conv_nd},
    {.type = "conv_nd_grad", .inputs = ct__cvt_grad_in, .n_inputs = 3,
     .outputs = ct__cvt_grad_out, .n_outputs = 3, .attrs = ct__cnd_attrs,
     .n_attrs = CT__CND_N_ATTRS, .flags = CT_OP_PURE_INFER, .infer_shape = ct__cnd_grad_infer},
};

const ct__def_table ct__conv_nd_defs = CT__TABLE(defs);

static const ct__op_doc docs[] = {
    {"conv_nd",
     "ONNX's Conv over 1 to 3 spatial dims (3-D convolutions: video, volumes): X [N, C, I...], "
     "W [M, C/groups, K...] and the optional B [M], all of X's dtype (float32 or float64), give "
     "Y [N, M, O...] = B + the sum over the channels c of the group and the taps k of `X[n, c, "
     "o stride - pad_begin + k dilation] W[m, c, k]` (0 outside X), each sum then + B. The list "
     "attributes hold one value per spatial dim (pads: the beginnings, then the ends) or none "
     "for the defaults (strides and dilations 1, pads 0); kernel_shape, when given, must match "
     "W. auto_pad \"NOTSET\" (the default) gives `O = (I + pad_begin + pad_end - dilation (K - "
     "1) - 1) / stride + 1`, \"VALID\" the same without pads, \"SAME_UPPER\" / \"SAME_LOWER\" `O "
     "= ceil(I / stride)` with the padding split, the odd one at the end for SAME_UPPER and the "
     "beginning for SAME_LOWER; nonzero pads with another auto_pad than NOTSET are refused "
     "(ONNX forbids both). Its gradient is conv_nd_grad. (2-D images take conv2d, whose kernels "
     "are faster.)"},
};

const ct__doc_table ct__conv_nd_docs = CT__TABLE(docs);
