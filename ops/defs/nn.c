/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/nn.c: the op types gelu, lookup_table_v2, dropout and arg_max (PaddlePaddle's names,
 * slots and attributes): their shapes and the checks every backend's kernels share.
 *
 *   gelu             X -> Out; approximate false: x Phi(x) = x (1 + erf(x / sqrt 2)) / 2;
 *                    true: x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2
 *   lookup_table_v2  W [rows, D], Ids (int64 or int32, any dims) -> Out [Ids' dims..., D]: row
 *                    Ids[i] of W; an id equal to padding_idx (-1: none) gives a row of zeros
 *   dropout          X -> Out, Mask (uint8, X's dims); training (is_test false): Mask 1 where
 *                    kept (ops/philox.h's draw >= dropout_prob), Out = X Mask, divided by
 *                    1 - dropout_prob with dropout_implementation "upscale_in_train"; test: Mask
 *                    all 1, Out = X ("upscale_in_train") or X (1 - dropout_prob)
 *                    ("downgrade_in_infer", PaddlePaddle's default). The seed is input Seed
 *                    (optional, one int32) when wired, else attribute seed with fix_seed, else a
 *                    new one each run.
 *   arg_max          X -> Out (int64 or int32, attribute dtype): the index of the first largest
 *                    element along axis (a NaN counts as largest); keepdims keeps that dim as 1;
 *                    flatten takes X as one row (Out [1], or all ones with keepdims). No
 *                    gradient. */
#include <string.h>

#include "ops/defs.h"

const ct_attr_def ct__gelu_attrs[1] = {
    {"approximate", {.type = CT_ATTR_BOOL, .u.b = false}, false}};
static const ct_slot_def lt_in[] = {{"W", 0}, {"Ids", 0}};
const ct_attr_def ct__lt_attrs[1] = {{"padding_idx", {.type = CT_ATTR_INT, .u.i = -1}, false}};
static const ct_slot_def do_in[] = {{"X", 0}, {"Seed", CT_SLOT_OPTIONAL}};
static const ct_slot_def do_out[] = {{"Out", 0}, {"Mask", 0}};
const ct_attr_def ct__do_attrs[5] = {
    {"dropout_prob", {.type = CT_ATTR_FLOAT, .u.f = 0.5}, false},
    {"is_test", {.type = CT_ATTR_BOOL, .u.b = false}, false},
    {"fix_seed", {.type = CT_ATTR_BOOL, .u.b = false}, false},
    {"seed", {.type = CT_ATTR_INT, .u.i = 0}, false},
    {"dropout_implementation", {.type = CT_ATTR_STRING, .u.s = "downgrade_in_infer"}, false},
};
static const ct_attr_def am_attrs[] = {
    {"axis", {.type = CT_ATTR_INT, .u.i = -1}, false},
    {"keepdims", {.type = CT_ATTR_BOOL, .u.b = false}, false},
    {"flatten", {.type = CT_ATTR_BOOL, .u.b = false}, false},
    {"dtype", {.type = CT_ATTR_INT, .u.i = CT_INT64}, false},
};

/* ---- lookup_table_v2 ------------------------------------------------------------------------- */

/* W is [rows, D], Ids int64, padding_idx -1 or a row; the lookup's Out dims in *out. */
ct_status ct__lt_dims(const ct_kernel_ctx *c, ct_ddim *out) {
  const ct_tensor *w = ct_kernel_in(c, CT__LT_W, 0), *ids = ct_kernel_in(c, CT__LT_IDS, 0);
  char a[CT__DDIM_STR_CAP];
  if (w->dims.rank != 2) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input W variable '%s' is %s: the table must be [rows, D]",
                          ct_kernel_in_name(c, CT__LT_W, 0), ct_ddim_str(w->dims, a, sizeof a));
  }
  if (ids->dtype != CT_INT64 && ids->dtype != CT_INT32) {
    return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH,
                          "input Ids variable '%s' is %s: ids are int64 or int32 rows of W; "
                          "cast them to int64",
                          ct_kernel_in_name(c, CT__LT_IDS, 0), ct_dtype_name(ids->dtype));
  }
  if (ids->dims.rank >= CT_MAX_RANK) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "input Ids variable '%s' is %s: Out adds a dim, and a tensor has at "
                          "most CT_MAX_RANK (%d)",
                          ct_kernel_in_name(c, CT__LT_IDS, 0),
                          ct_ddim_str(ids->dims, a, sizeof a), CT_MAX_RANK);
  }
  int64_t pad = c->attr[CT__LT_PADDING_IDX].u.i;
  if (pad < -1 || pad >= w->dims.d[0]) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "attribute padding_idx is %lld but input W variable '%s' has %lld "
                          "rows: give a row, or -1 for none",
                          (long long)pad, ct_kernel_in_name(c, CT__LT_W, 0),
                          (long long)w->dims.d[0]);
  }
  *out = ids->dims;
  out->d[out->rank++] = w->dims.d[1];
  return CT_OK;
}

ct_status ct__lt_check_ids(const ct_kernel_ctx *c, size_t slot, const void *ids, ct_dtype dt,
                           int64_t n, int64_t rows) {
  for (int64_t i = 0; i < n; i++) {
    int64_t id = ct__lt_id(ids, dt, i);
    if (CT__LIKELY(id >= 0 && id < rows)) continue;
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "input Ids variable '%s' element %lld is %lld, outside the %lld rows "
                          "of W",
                          ct_kernel_in_name(c, slot, 0), (long long)i, (long long)id,
                          (long long)rows);
  }
  return CT_OK;
}

static ct_status lt_infer(const ct_kernel_ctx *c) {
  ct_ddim out;
  ct_status s = ct__lt_dims(c, &out);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, out) : s;
}

/* ---- dropout --------------------------------------------------------------------------------- */

/* dropout_prob in [0, 1] and a known dropout_implementation. */
ct_status ct__dropout_check(const ct_kernel_ctx *c) {
  double p = c->attr[CT__DO_PROB].u.f;
  if (!(p >= 0 && p <= 1)) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute dropout_prob is %g: a probability lies in [0, 1]", p);
  }
  const char *impl = c->attr[CT__DO_UPSCALE].u.s;
  if (strcmp(impl, "upscale_in_train") != 0 && strcmp(impl, "downgrade_in_infer") != 0) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute dropout_implementation is \"%s\": use "
                          "\"upscale_in_train\" or \"downgrade_in_infer\"",
                          impl);
  }
  return CT_OK;
}

/* Input Seed, when wired, is one int32. */
static ct_status seed_check(const ct_kernel_ctx *c) {
  if (ct_kernel_in_count(c, CT__DO_SEED_IN) == 0) return CT_OK;
  const ct_tensor *t = ct_kernel_in(c, CT__DO_SEED_IN, 0);
  if (t->dtype != CT_INT32 || t->numel != 1) {
    char a[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, t->dtype != CT_INT32 ? CT_ERR_TYPE_MISMATCH : CT_ERR_SHAPE,
                          "input Seed variable '%s' is %s %s: the seed is one int32 element",
                          ct_kernel_in_name(c, CT__DO_SEED_IN, 0), ct_dtype_name(t->dtype),
                          ct_ddim_str(t->dims, a, sizeof a));
  }
  return CT_OK;
}

uint64_t ct__dropout_seed(const ct_kernel_ctx *c) {
  if (ct_kernel_in_count(c, CT__DO_SEED_IN) > 0) {
    const int32_t *v = ct__k_in_data(ct_kernel_in(c, CT__DO_SEED_IN, 0));
    return ct__dropout_seed_of(*v);
  }
  return c->attr[CT__DO_FIX_SEED].u.b ? (uint64_t)c->attr[CT__DO_SEED].u.i : ct__fresh_seed(c);
}

double ct__dropout_factor(const ct_kernel_ctx *c) {
  double p = c->attr[CT__DO_PROB].u.f;
  bool upscale = strcmp(c->attr[CT__DO_UPSCALE].u.s, "upscale_in_train") == 0;
  if (c->attr[CT__DO_IS_TEST].u.b) return upscale ? 1.0 : 1.0 - p;
  return upscale && p < 1 ? 1.0 / (1.0 - p) : 1.0;
}

static ct_status do_infer(const ct_kernel_ctx *c) {
  ct_status s = ct__dropout_check(c);
  if (s == CT_OK) s = seed_check(c);
  ct_ddim x = ct_kernel_in(c, CT__IN_X, 0)->dims;
  if (s == CT_OK) s = ct__k_resize(c, CT__DO_OUT, 0, x);
  return s == CT_OK ? ct__k_resize(c, CT__DO_MASK, 0, x) : s;
}

/* ---- arg_max --------------------------------------------------------------------------------- */

ct_status ct__am_plan(const ct_kernel_ctx *c, ct__norm_plan *p) {
  const ct_tensor *x = ct_kernel_in(c, CT__IN_X, 0);
  ct_dtype dt;
  ct_status s = ct__k_attr_dtype(c, CT__AM_DTYPE, &dt);
  if (s != CT_OK) return s;
  if (dt != CT_INT64 && dt != CT_INT32) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute dtype is %s: the indices are int64 or int32",
                          ct_dtype_name(dt));
  }
  int axis = 0;
  if (!c->attr[CT__AM_FLATTEN].u.b) {
    s = ct__k_axis(c, "axis", c->attr[CT__AM_AXIS].u.i, x->dims.rank, &axis);
    if (s != CT_OK) return s;
  }
  p->outer = p->c = p->inner = 1;
  if (c->attr[CT__AM_FLATTEN].u.b || x->dims.rank == 0) {
    p->c = x->numel;
  } else {
    for (int k = 0; k < x->dims.rank; k++) {
      *(k < axis ? &p->outer : k == axis ? &p->c : &p->inner) *= x->dims.d[k];
    }
  }
  if (p->c == 0 && p->outer * p->inner > 0) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input X variable '%s' has no elements along the axis: the largest of "
                          "none has no index",
                          ct_kernel_in_name(c, CT__IN_X, 0));
  }
  return CT_OK;
}

static ct_status am_infer(const ct_kernel_ctx *c) {
  ct__norm_plan p;
  ct_status s = ct__am_plan(c, &p);
  if (s != CT_OK) return s;
  ct_ddim x = ct_kernel_in(c, CT__IN_X, 0)->dims, out = x;
  bool keep = c->attr[CT__AM_KEEPDIMS].u.b;
  if (c->attr[CT__AM_FLATTEN].u.b) {
    out.rank = keep ? x.rank : 1;
    for (int k = 0; k < out.rank; k++) out.d[k] = 1;
  } else if (x.rank > 0) {
    int axis = (int)(c->attr[CT__AM_AXIS].u.i < 0 ? c->attr[CT__AM_AXIS].u.i + x.rank
                                                   : c->attr[CT__AM_AXIS].u.i);
    out.d[axis] = 1;
    if (!keep) {
      for (int k = axis; k + 1 < x.rank; k++) out.d[k] = x.d[k + 1];
      out.rank--;
    }
  }
  return ct__k_resize(c, CT__OUT, 0, out);
}

static const ct_op_def defs[] = {
    {.type = "gelu", .inputs = ct__slot_x, .n_inputs = 1, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = ct__gelu_attrs, .n_attrs = 1,
     .flags = CT_OP_PURE_INFER, .infer_shape = ct__same_dims_infer,
     .grad = ct__grad_unary},
    {.type = "lookup_table_v2", .inputs = lt_in, .n_inputs = 2, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = ct__lt_attrs, .n_attrs = 1,
     .flags = CT_OP_PURE_INFER, .infer_shape = lt_infer,
     .grad = ct__grad_lookup_table_v2},
    {.type = "dropout", .inputs = do_in, .n_inputs = 2, .outputs = do_out, .n_outputs = 2,
     .attrs = ct__do_attrs, .n_attrs = 5,
     .flags = CT_OP_PURE_INFER, .infer_shape = do_infer, .grad = ct__grad_dropout},
    {.type = "arg_max", .inputs = ct__slot_x, .n_inputs = 1, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = am_attrs, .n_attrs = 4,
     .flags = CT_OP_PURE_INFER, .infer_shape = am_infer},
};

const ct__def_table ct__nn_defs = CT__TABLE(defs);

/* What the types compute (ct_op_type_doc, `corten ops`). */
static const ct__op_doc docs[] = {
    {"gelu", "The Gaussian error linear unit, elementwise: with `approximate` false (the "
             "default) `Out = X Phi(X) = X (1 + erf(X / sqrt 2)) / 2`, with true the tanh form "
             "`Out = X (1 + tanh(sqrt(2 / pi) (X + 0.044715 X^3))) / 2`. Out has X's dims and "
             "dtype; each element is computed in double and rounded once."},
    {"lookup_table_v2",
     "Embedding lookup (PaddlePaddle's lookup_table_v2): Out [Ids' dims..., D] holds row Ids[i] "
     "of W [rows, D] for each id, in W's dtype. Ids are int64 or int32 of any dims; an id "
     "outside [0, rows) is refused naming its position, and an id equal to padding_idx "
     "(default -1: none) reads as a row of zeros (PyTorch would return the row itself). The "
     "gradient adds each row of Out@GRAD into W@GRAD's row Ids[i] (repeated ids add up, the "
     "padding_idx row stays 0); Ids gets none."},
    {"dropout",
     "PaddlePaddle's dropout. Training (is_test false, the default): Mask (uint8, X's dims) is 1 "
     "where element i's 24-bit uniform from Philox4x32-10 (word i % 4 of block i / 4, "
     "ops/philox.h) is at least dropout_prob, 0 elsewhere, and `Out = X Mask`, divided by `1 - "
     "dropout_prob` with dropout_implementation \"upscale_in_train\"; in test mode Mask is all 1 "
     "and `Out = X` (\"upscale_in_train\") or `X (1 - dropout_prob)` (\"downgrade_in_infer\", "
     "the default). The seed is input Seed's value when wired (one int32 element, whatever "
     "fix_seed says), else attribute seed when fix_seed is true, else a fresh one at each run: "
     "for reproducible masks set fix_seed and seed, or wire Seed, and the same seed then gives "
     "the same mask on the CPU and on CUDA at any thread count. The probability must lie in "
     "[0, 1]; the gradient is `X@GRAD = Out@GRAD Mask` times the same factor."},
    {"arg_max", "The index of the largest element along `axis` (default -1, the last dim): the "
                "first one on ties, and a NaN counts as largest. Out drops that dim, or keeps it "
                "as 1 with keepdims; flatten takes X as one row (Out [1], or all ones with "
                "keepdims). Out is int64, or int32 with attribute `dtype` (a ct_dtype value); an "
                "empty axis is refused. No gradient."},
};

const ct__doc_table ct__nn_docs = CT__TABLE(docs);
