/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/reduce.c: the op types sum (of any number of tensors), mean, reduce_sum and softmax:
 * their shapes, and the checks every backend's kernels share.
 *
 * sum's X tensors must agree in dims and dtype; mean gives a rank-0 tensor; reduce_sum drops (or,
 * with keep_dim, keeps as 1) the dims listed in `dim`, all of them when the list is empty;
 * softmax keeps X's dims and normalises along `axis`. */
#include "ops/defs.h"

/* Checks that input X i has the dtype of X 0 (the kernel's dtype), for every i. */
static ct_status check_all_dtypes(const ct_kernel_ctx *c) {
  for (size_t i = 1, n = ct_kernel_in_count(c, CT__IN_X); i < n; i++) {
    ct_status s = ct__k_check_dtype(c, CT__IN_X, i, c->dtype);
    if (CT__UNLIKELY(s != CT_OK)) return s;
  }
  return CT_OK;
}

static ct_status sum_infer(const ct_kernel_ctx *c) {
  const ct_tensor *x0 = ct_kernel_in(c, CT__IN_X, 0);
  for (size_t i = 1, n = ct_kernel_in_count(c, CT__IN_X); i < n; i++) {
    const ct_tensor *xi = ct_kernel_in(c, CT__IN_X, i);
    if (!ct_ddim_equal(xi->dims, x0->dims)) {
      char a[CT__DDIM_STR_CAP], b[CT__DDIM_STR_CAP];
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "input X variable '%s' %s and input X variable '%s' %s differ: sum "
                            "needs equal dims (no broadcasting)",
                            ct_kernel_in_name(c, CT__IN_X, 0), ct_ddim_str(x0->dims, a, sizeof a),
                            ct_kernel_in_name(c, CT__IN_X, i), ct_ddim_str(xi->dims, b, sizeof b));
    }
  }
  ct_status s = check_all_dtypes(c);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, x0->dims) : s;
}

static ct_status mean_infer(const ct_kernel_ctx *c) {
  return ct__k_resize(c, CT__OUT, 0, CT_DIMS());
}

/* The dims of X that reduce_sum sums over, as flags; CT_ERR_OUT_OF_RANGE for a dim outside
 * [-rank, rank), CT_ERR_INVALID_ARGUMENT for a dim listed twice. A rank-0 X takes 0 and -1. */
ct_status ct__rs_dims(const ct_kernel_ctx *c, int rank, bool red[CT_MAX_RANK]) {
  const ct_attr_value *dim = &c->attr[CT__RS_DIM];
  for (int k = 0; k < CT_MAX_RANK; k++) red[k] = dim->u.ints.n == 0;
  for (size_t i = 0; i < dim->u.ints.n; i++) {
    int a;
    ct_status s = ct__k_axis(c, "dim", dim->u.ints.v[i], rank, &a);
    if (s != CT_OK) return s;
    if (red[a]) {
      return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                            "attribute 'dim' lists dim %d of input X variable '%s' twice (as "
                            "%lld): list each dim once",
                            a, ct_kernel_in_name(c, CT__IN_X, 0), (long long)dim->u.ints.v[i]);
    }
    red[a] = true;
  }
  return CT_OK;
}

ct_status ct__rs_out_dims(const ct_kernel_ctx *c, ct_ddim x, ct_ddim *out) {
  bool red[CT_MAX_RANK];
  ct_status s = ct__rs_dims(c, x.rank, red);
  if (s != CT_OK) return s;
  bool keep = c->attr[CT__RS_KEEP_DIM].u.b;
  out->rank = 0;
  for (int k = 0; k < x.rank; k++) {
    if (!red[k]) {
      out->d[out->rank++] = x.d[k];
    } else if (keep) {
      out->d[out->rank++] = 1;
    }
  }
  return CT_OK;
}

static ct_status rs_infer(const ct_kernel_ctx *c) {
  ct_ddim out;
  ct_status s = ct__rs_out_dims(c, ct_kernel_in(c, CT__IN_X, 0)->dims, &out);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, out) : s;
}

static const ct_attr_def rs_attrs[] = {
    {"dim", {.type = CT_ATTR_INTS, .u.ints = {NULL, 0}}, false},
    {"keep_dim", {.type = CT_ATTR_BOOL, .u.b = false}, false},
};

static ct_status sm_infer(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);
  int axis;
  ct_status s = ct__k_axis(c, "axis", c->attr[CT__SOFTMAX_AXIS].u.i, xt->dims.rank, &axis);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, xt->dims) : s;
}

static const ct_attr_def sm_attrs[] = {{"axis", {.type = CT_ATTR_INT, .u.i = -1}, false}};

/* The gradients (ops/defs/reduce_grad.c): sum's is one assign per input. */
static const ct_op_def defs[] = {
    {.type = "sum", .inputs = ct__slot_xs, .n_inputs = 1, .outputs = ct__slot_out,
     .n_outputs = 1, .flags = CT_OP_PURE_INFER, .infer_shape = sum_infer, .grad = ct__grad_assign},
    {.type = "reduce_sum", .inputs = ct__slot_x, .n_inputs = 1, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = rs_attrs, .n_attrs = 2,
     .flags = CT_OP_PURE_INFER, .infer_shape = rs_infer,
     .grad = ct__grad_unary},
    {.type = "mean", .inputs = ct__slot_x, .n_inputs = 1, .outputs = ct__slot_out,
     .n_outputs = 1, .flags = CT_OP_PURE_INFER, .infer_shape = mean_infer, .grad = ct__grad_unary},
    {.type = "softmax", .inputs = ct__slot_x, .n_inputs = 1, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = sm_attrs, .n_attrs = 1,
     .flags = CT_OP_PURE_INFER, .infer_shape = sm_infer,
     .grad = ct__grad_unary},
};

const ct__def_table ct__reduce_defs = CT__TABLE(defs);

/* ---- What each op type computes (ct_op_type_doc) --------------------------------------------- */
static const ct__op_doc docs[] = {
    {"sum", "`Out = X[0] + X[1] + ...` element by element over any number of X tensors (one gives "
            "a copy), which must have equal dims and one dtype: no broadcasting. Integers wrap. "
            "Out has X's dims."},
    {"reduce_sum", "Out is the sum of X over the dims listed in `dim` (negative ones count from "
                   "the end; a dim listed twice is refused), over every dim when the list is "
                   "empty (the default); keep_dim (default false) keeps the summed dims as "
                   "extent 1, else they are dropped. An empty group sums to 0 and integers wrap. "
                   "For dims given at run time use reduce_sum_axes."},
    {"mean", "Out is the mean of all of X's elements, a rank-0 tensor; the mean of an empty X is "
             "NaN (0 / 0, as numpy gives)."},
    {"softmax", "`Out = exp(X - m) / sum(exp(X - m))` over each row along `axis` (default -1, "
                "negative counting from the end), m the row's largest element, so that no finite "
                "input overflows; a row holding NaN, +inf or only -inf gives NaN, as in numpy. "
                "Out has X's dims. softmax_v2 adds float16 and coerce_2d."},
};

const ct__doc_table ct__reduce_docs = CT__TABLE(docs);
