/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/attention.c: the attention op type and its plan (docs/design/passes.md, attention).
 *
 * attention stands for the chain matmul(Q, K) -> [scale] -> [+ Mask] -> softmax -> matmul(., V)
 * that the executor's optimize pass finds (ops/passes_attention.c): it takes the dims that chain
 * takes without a broadcast that enlarges the scores or the result, and refuses the rest with
 * CT_ERR_SHAPE, on which the executor runs the chain's own ops instead. */
#include <string.h>

#include "ops/defs.h"

static ct_status refuse(const ct_kernel_ctx *c, const char *what) {
  return ct_kernel_fail(c, CT_ERR_SHAPE,
                        "%s, which attention does not run (run the unfused ops: make the "
                        "executor without the optimize option)",
                        what);
}

/* Q K's dims as ct__mm_plan gives them, and the rest of the chain's checks. */
ct_status ct__attn_plan(const ct_kernel_ctx *c, ct__attn_shape *s) {
  const ct_tensor *q = ct_kernel_in(c, CT__ATT_Q, 0), *k = ct_kernel_in(c, CT__ATT_K, 0);
  const ct_tensor *v = ct_kernel_in(c, CT__ATT_V, 0);
  const ct_tensor *sc = ct_kernel_in_count(c, CT__ATT_SCALE) > 0
                            ? ct_kernel_in(c, CT__ATT_SCALE, 0) : NULL;
  const ct_tensor *mk = ct_kernel_in_count(c, CT__ATT_MASK) > 0
                            ? ct_kernel_in(c, CT__ATT_MASK, 0) : NULL;
  memset(s->mask_st, 0, sizeof s->mask_st);
  ct_status st = CT_OK;
  for (size_t slot = CT__ATT_K; slot <= CT__ATT_MASK && st == CT_OK; slot++) {
    if (ct_kernel_in_count(c, slot) > 0) st = ct__k_check_dtype(c, slot, 0, q->dtype);
  }
  if (st != CT_OK) return st;
  if (q->dims.rank < 2 || k->dims.rank < 2 || v->dims.rank < 2) {
    return refuse(c, "Q, K or V has rank below 2");
  }
  if (q->numel == 0 || k->numel == 0 || v->numel == 0) return refuse(c, "Q, K or V is empty");
  const int64_t k_rank = c->attr[CT__ATT_K_RANK].u.i;
  if (k_rank > 0 && k->dims.rank != k_rank) {
    return refuse(c, "K's rank differs from the axes of the transpose the pass took in");
  }
  st = ct__mm_plan(c, &s->qk);
  if (st != CT_OK) return st;
  const ct_ddim sd = s->qk.out; /* the scores: batch, Sq, Sk */
  const int r = sd.rank;
  const char *mode = c->attr[CT__ATT_SCALE_MODE].u.s;
  s->mode = strcmp(mode, "mul") == 0 ? CT__ATT_MUL : strcmp(mode, "rmul") == 0 ? CT__ATT_RMUL
            : strcmp(mode, "div") == 0 ? CT__ATT_DIV : CT__ATT_NONE;
  if ((s->mode == CT__ATT_NONE) != (sc == NULL) ||
      (s->mode == CT__ATT_NONE && strcmp(mode, "none") != 0)) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "scale_mode \"%s\" %s a Scale input: give \"mul\", \"rmul\" or "
                          "\"div\" with a Scale, \"none\" without",
                          mode, sc != NULL ? "with" : "without");
  }
  if (sc != NULL && (sc->numel != 1 || sc->dims.rank > r)) {
    return refuse(c, "Scale holds other than one element, or has a higher rank than the scores");
  }
  if (mk != NULL) {
    if (mk->dims.rank > r) return refuse(c, "Mask has a higher rank than the scores");
    int64_t st_el = 1;
    for (int d = r - 1; d >= 0; d--) {
      int md = d - (r - mk->dims.rank);
      int64_t e = md >= 0 ? mk->dims.d[md] : 1;
      if (e != sd.d[d] && e != 1) return refuse(c, "Mask does not broadcast to the scores' dims");
      s->mask_st[d] = e == 1 ? 0 : st_el;
      st_el *= e;
    }
  }
  int64_t axis = c->attr[CT__ATT_AXIS].u.i;
  if (axis != r - 1 && axis != -1) return refuse(c, "the softmax is over another axis");
  bool tv = c->attr[CT__ATT_TRANSPOSE_V].u.b;
  const ct_ddim vd = v->dims;
  int64_t v_rows = vd.d[vd.rank - (tv ? 1 : 2)];
  s->dv = vd.d[vd.rank - (tv ? 2 : 1)];
  if (v_rows != s->qk.n) {
    return refuse(c, "V's rows differ from the scores' columns");
  }
  const int br = s->qk.batch_rank, vbr = vd.rank - 2;
  if (vbr > br) return refuse(c, "V has more batch dims than the scores");
  int64_t stride = 1;
  for (int d = br - 1; d >= 0; d--) {
    int vd_i = d - (br - vbr);
    int64_t e = vd_i >= 0 ? vd.d[vd_i] : 1;
    if (e != s->qk.batch[d] && e != 1) return refuse(c, "V's batch dims differ from the scores'");
    s->bv[d] = e == 1 ? 0 : stride;
    stride *= e;
  }
  s->out = sd;
  s->out.d[r - 1] = s->dv;
  return CT_OK;
}

static ct_status attn_infer(const ct_kernel_ctx *c) {
  ct__attn_shape s;
  ct_status st = ct__attn_plan(c, &s);
  return st == CT_OK ? ct__k_resize(c, CT__OUT, 0, s.out) : st;
}

static const ct_slot_def attn_in[] = {
    {"Q", 0}, {"K", 0}, {"V", 0}, {"Scale", CT_SLOT_OPTIONAL}, {"Mask", CT_SLOT_OPTIONAL}};
static const ct_attr_def attn_attrs[] = {
    {"transpose_q", {.type = CT_ATTR_BOOL, .u.b = false}, false},
    {"transpose_k", {.type = CT_ATTR_BOOL, .u.b = false}, false},
    {"transpose_v", {.type = CT_ATTR_BOOL, .u.b = false}, false},
    {"scale_mode", {.type = CT_ATTR_STRING, .u.s = "none"}, false},
    {"mask_first", {.type = CT_ATTR_BOOL, .u.b = false}, false},
    {"axis", {.type = CT_ATTR_INT, .u.i = -1}, false},
    {"k_rank", {.type = CT_ATTR_INT, .u.i = 0}, false},
};

static const ct_op_def defs[] = {
    /* The executor's optimize pass makes it; no gradient: it is never on a path that
     * append_backward walks. */
    {.type = "attention", .inputs = attn_in, .n_inputs = 5, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = attn_attrs, .n_attrs = 7, .flags = CT_OP_PURE_INFER,
     .infer_shape = attn_infer},
};

const ct__def_table ct__attention_defs = CT__TABLE(defs);

static const ct__op_doc docs[] = {
    {"attention",
     "`Out = softmax(mask(scale(op(Q) op(K)))) op(V)`, the chain matmul, [elementwise_mul or "
     "elementwise_div by Scale], [elementwise_add of Mask], softmax over the last axis, matmul, "
     "computed a block of query rows at a time so that the scores are never stored whole. "
     "transpose_q, transpose_k and transpose_v are the matmuls' transposes; scale_mode is "
     "\"none\", \"mul\" (scores * Scale), \"rmul\" (Scale * scores) or \"div\" (scores / Scale), "
     "Scale one element; Mask broadcasts to the scores without enlarging them, added after "
     "(mask_first: as Mask + scores); axis is the softmax's (the last); k_rank, when not 0, is "
     "the rank K must have (the pass sets it for a K it takes from a transpose, to the count of "
     "that transpose's axes). Q, K and V are of rank 2 or more and one dtype, their batch dims "
     "broadcast as matmul's (V's into the scores'). Each step rounds as the separate ops do, so "
     "the bits are the chain's. The executor's optimize pass (CPU only) makes it "
     "(docs/design/passes.md); other dims are refused (CT_ERR_SHAPE), and the executor then runs "
     "the chain's ops. No gradient."},
};

const ct__doc_table ct__attention_docs = CT__TABLE(docs);
