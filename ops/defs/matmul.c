/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/matmul.c: the matmul op type and its plan.
 *
 * numpy's matmul rules: the last two dims of X and Y multiply (after transpose_x / transpose_y),
 * the dims before them are batch dims and broadcast; a rank-1 X is a row [1,K] and a rank-1 Y a
 * column [K,1], and that dim is dropped from the result. */
#include <limits.h>
#include <math.h>

#include "ops/defs.h"

ct_status ct__mm_plan(const ct_kernel_ctx *c, ct__mm_shape *s) {
  return ct__mm_plan_slots(c, CT__IN_X, CT__IN_Y, c->attr[CT__MM_TRANSPOSE_X].u.b,
                           c->attr[CT__MM_TRANSPOSE_Y].u.b, s);
}

ct_status ct__mm_plan_slots(const ct_kernel_ctx *c, size_t xs, size_t ys, bool tx0, bool ty0,
                            ct__mm_shape *s) {
  ct_ddim x = ct_kernel_in(c, xs, 0)->dims, y = ct_kernel_in(c, ys, 0)->dims;
  bool tx = tx0, ty = ty0;
  const char *xn = c->op->def->in[xs].name, *yn = c->op->def->in[ys].name;
  char sx[CT__DDIM_STR_CAP], sy[CT__DDIM_STR_CAP];
  if (x.rank == 0 || y.rank == 0) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input %s variable '%s' %s and input %s variable '%s' %s: a matrix "
                          "product needs rank 1 or more on both sides",
                          xn, ct_kernel_in_name(c, xs, 0), ct_ddim_str(x, sx, sizeof sx), yn,
                          ct_kernel_in_name(c, ys, 0), ct_ddim_str(y, sy, sizeof sy));
  }
  bool x_vec = x.rank == 1, y_vec = y.rank == 1;
  int64_t xr = x_vec ? 1 : x.d[x.rank - 2], xc = x.d[x.rank - 1];
  int64_t yr = y.d[y_vec ? 0 : y.rank - 2], yc = y_vec ? 1 : y.d[y.rank - 1];
  if (x_vec) tx = false;
  if (y_vec) ty = false;
  s->m = tx ? xc : xr;
  s->k = tx ? xr : xc;
  int64_t ky = ty ? yc : yr;
  s->n = ty ? yr : yc;
  if (s->k != ky) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input %s variable '%s' %s%s and input %s variable '%s' %s%s: inner "
                          "dims %lld and %lld differ",
                          xn, ct_kernel_in_name(c, xs, 0), ct_ddim_str(x, sx, sizeof sx),
                          tx0 ? " (transposed)" : "", yn,
                          ct_kernel_in_name(c, ys, 0), ct_ddim_str(y, sy, sizeof sy),
                          ty0 ? " (transposed)" : "", (long long)s->k,
                          (long long)ky);
  }
  if (s->m > INT_MAX || s->n > INT_MAX || s->k > INT_MAX) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "input %s variable '%s' %s and input %s variable '%s' %s: a matrix "
                          "dim exceeds BLAS's int range (%d)",
                          xn, ct_kernel_in_name(c, xs, 0), ct_ddim_str(x, sx, sizeof sx), yn,
                          ct_kernel_in_name(c, ys, 0), ct_ddim_str(y, sy, sizeof sy),
                          INT_MAX);
  }
  int bxr = x_vec ? 0 : x.rank - 2, byr = y_vec ? 0 : y.rank - 2;
  int br = bxr > byr ? bxr : byr;
  s->batch_rank = br;
  s->n_batch = 1;
  int64_t stx = 1, sty = 1;
  for (int k = br - 1; k >= 0; k--) {
    int ix = bxr - br + k, iy = byr - br + k;
    int64_t dx = ix >= 0 ? x.d[ix] : 1, dy = iy >= 0 ? y.d[iy] : 1;
    if (dx != dy && dx != 1 && dy != 1) {
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "input %s variable '%s' %s and input %s variable '%s' %s: batch "
                            "dims do not broadcast (%lld vs %lld)",
                            xn, ct_kernel_in_name(c, xs, 0), ct_ddim_str(x, sx, sizeof sx), yn,
                            ct_kernel_in_name(c, ys, 0), ct_ddim_str(y, sy, sizeof sy),
                            (long long)dx, (long long)dy);
    }
    s->batch[k] = dx == 1 ? dy : dx; /* 1 against 0 broadcasts to 0 */
    s->bx[k] = dx == 1 ? 0 : stx;
    s->by[k] = dy == 1 ? 0 : sty;
    stx *= dx;
    sty *= dy;
    s->n_batch *= s->batch[k];
  }
  ct_ddim out = {.rank = 0};
  for (int k = 0; k < br; k++) out.d[out.rank++] = s->batch[k];
  if (!x_vec) out.d[out.rank++] = s->m;
  if (!y_vec) out.d[out.rank++] = s->n;
  s->out = out;
  return CT_OK;
}

bool ct__mm_batch_strides_all(const ct__mm_shape *s, const int64_t *stride, bool zero) {
  for (int r = 0; r < s->batch_rank; r++) {
    if ((stride[r] == 0) != zero) return false;
  }
  return true;
}

bool ct__mm_batch_repeats(const ct__mm_shape *s, const int64_t *stride) {
  for (int r = 0; r < s->batch_rank; r++) {
    if (stride[r] == 0 && s->batch[r] > 1) return true;
  }
  return false;
}

/* Checks the dtypes too, before Out is touched, so a failing op leaves Out as it was. */
static ct_status mm_infer(const ct_kernel_ctx *c) {
  ct__mm_shape s;
  ct_status st = ct__k_check_dtype(c, CT__IN_Y, 0, ct_kernel_in(c, CT__IN_X, 0)->dtype);
  if (st != CT_OK) return st;
  st = ct__mm_plan(c, &s);
  return st == CT_OK ? ct__k_resize(c, CT__OUT, 0, s.out) : st;
}

static const ct_attr_def mm_attrs[] = {
    {"transpose_x", {.type = CT_ATTR_BOOL, .u.b = false}, false},
    {"transpose_y", {.type = CT_ATTR_BOOL, .u.b = false}, false},
};

/* matmul's attributes first, in its order (ct__mm_plan reads them by index), then the
 * epilogue's. */
static const ct_attr_def mmf_attrs[] = {
    {"transpose_x", {.type = CT_ATTR_BOOL, .u.b = false}, false},
    {"transpose_y", {.type = CT_ATTR_BOOL, .u.b = false}, false},
    {"activation", {.type = CT_ATTR_STRING, .u.s = "identity"}, false},
    {"clip_min", {.type = CT_ATTR_FLOAT, .u.f = -INFINITY}, false},
    {"clip_max", {.type = CT_ATTR_FLOAT, .u.f = INFINITY}, false},
};
static const ct_slot_def mmf_in[] = {{"X", 0}, {"Y", 0}, {"Bias", CT_SLOT_OPTIONAL}};

/* matmul's checks and dims, then Bias: X's dtype, its dims all 1 but the last, which is 1 or
 * Out's last (what an elementwise_add of it to Out accepts without enlarging Out), and Out of
 * rank 1 or more; and a known activation. */
static ct_status mmf_infer(const ct_kernel_ctx *c) {
  ct_status s = mm_infer(c);
  if (s != CT_OK) return s;
  const ct_tensor *out = ct_kernel_out(c, CT__OUT, 0);
  if (ct_kernel_in_count(c, CT__MMF_BIAS) > 0) {
    const ct_tensor *b = ct_kernel_in(c, CT__MMF_BIAS, 0);
    s = ct__k_check_dtype(c, CT__MMF_BIAS, 0, ct_kernel_in(c, CT__IN_X, 0)->dtype);
    if (s != CT_OK) return s;
    int64_t n = out->dims.rank > 0 ? out->dims.d[out->dims.rank - 1] : 0;
    bool fits = out->dims.rank > 0 && b->dims.rank <= out->dims.rank &&
                (b->numel == 1 || b->numel == n);
    for (int k = 0; fits && k + 1 < b->dims.rank; k++) fits = b->dims.d[k] == 1;
    if (!fits) {
      char have[CT__DDIM_STR_CAP], want[CT__DDIM_STR_CAP];
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "Bias '%s' has dims %s; the product is %s (give it 1 element or one "
                            "per column of the product, or run without the executor's "
                            "optimize option)",
                            ct_kernel_in_name(c, CT__MMF_BIAS, 0),
                            ct_ddim_str(b->dims, have, sizeof have),
                            ct_ddim_str(out->dims, want, sizeof want));
    }
  }
  return ct__fusion_act_check(c, CT__MMF_ACTIVATION);
}

static const ct_op_def defs[] = {
    {.type = "matmul", .inputs = ct__slot_xy, .n_inputs = 2, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = mm_attrs, .n_attrs = 2,
     .flags = CT_OP_PURE_INFER, .infer_shape = mm_infer,
     .grad = ct__grad_binary}, /* matmul_grad, ops/defs/matmul_grad.c */
    /* The executor's optimize pass (ops/passes.c) makes it; no gradient: it is never on a path
     * that append_backward walks. */
    {.type = "matmul_fusion", .inputs = mmf_in, .n_inputs = 3, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = mmf_attrs, .n_attrs = 5, .flags = CT_OP_PURE_INFER,
     .infer_shape = mmf_infer},
};

const ct__def_table ct__matmul_defs = CT__TABLE(defs);

/* What the type computes (ct_op_type_doc, `corten ops`). */
static const ct__op_doc docs[] = {
    {"matmul",
     "Matrix product with numpy's matmul rules: the last two dims of X and Y multiply, `Out = "
     "op(X) op(Y)` with op transposing those two dims when transpose_x / transpose_y is set "
     "(both false by default), and X and Y of one dtype. The dims before them are batch dims "
     "and broadcast (aligned at the end, each pair equal or one of them 1; a 1 against a 0 "
     "gives 0), so X [B, M, K] times Y [K, N] is B products, Out [B, M, N]. A rank-1 X is a row "
     "[1, K] and a rank-1 Y a column [K, 1], that dim dropped from Out, and transposing a "
     "rank-1 operand does nothing. There is no alpha attribute (scale Out with a `scale` op); "
     "matrix dims above INT_MAX are refused."},
    {"matmul_fusion",
     "matmul (its slots and attributes), then `Out = act(product + Bias)` as the product is "
     "stored: Bias (optional, X's dtype) holds 1 element or one per column of the product (dims "
     "all 1 but the last); `activation` is \"identity\" (the default), \"relu\" or \"clip\" "
     "between clip_min and clip_max (default -inf, +inf). Each step rounds as the separate ops "
     "do, so the bits are those of matmul, elementwise_add and relu or clip run one by one. The "
     "executor's optimize pass (CPU only) makes it from such a chain (docs/design/passes.md); "
     "it has no gradient."},
};

const ct__doc_table ct__matmul_docs = CT__TABLE(docs);
