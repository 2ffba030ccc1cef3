/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/reduce_ext.c: the reductions, arg-extremes and softmax rows added for ONNX import
 * (issue 33): their slots, attributes and shapes. Kernels: ops/cpu/reduce_ext.c; gradients:
 * ops/defs/reduce_ext_grad.c; the losses: ops/defs/reduce_ext_loss.c; layer_norm_stats:
 * ops/defs/reduce_ext_norm.c.
 *
 *   reduce_mean, reduce_max, reduce_min, reduce_prod, reduce_l1 (sum |x|), reduce_l2
 *   (sqrt(sum x^2)), reduce_log_sum (log(sum x)), reduce_log_sum_exp, reduce_sum_square,
 *   reduce_sum_axes (reduce_sum with the Axes input):
 *       X, Axes (optional, int64 or int32, read on the host at every run) -> Out. The dims
 *       reduced are Axes' values when it is wired, else attribute dim; an empty list reduces
 *       every dim, or none with empty_dim_noop (each element its own group: X for sum, max,
 *       min, prod, mean; |X|, log X, X^2 for l1 and l2, log_sum, sum_square). keep_dim keeps
 *       them as 1. Floats are
 *       summed in double in element order; integers (sum, max, min, prod, l1, sum_square) in
 *       int64, wrapping as the dtype does. An empty group gives 0 (sums), 1 (prod), -inf (max,
 *       log_sum, log_sum_exp), +inf (min) and NaN (mean); integer max and min of none are
 *       refused.
 *   arg_min, arg_max_v2 (arg_max with select_last_index): X -> Out (int64 or int32, attribute
 *       dtype): the index along axis of the smallest (largest) element, the first one or, with
 *       select_last_index, the last one; a NaN counts as the extreme, as numpy's argmin does.
 *   log_softmax, softmax_v2, hardmax: X (float) -> Out of X's dims, along axis, or with
 *       coerce_2d over the row made of the dims from axis on (ONNX before opset 13).
 *       log_softmax = x - max - log(sum exp(x - max)); hardmax is 1 at the row's first largest
 *       element and 0 elsewhere. */
#include <string.h>

#include "ops/defs/reduce_ext.h"

static const ct_slot_def rx_in[] = {{"X", 0}, {"Axes", CT_SLOT_OPTIONAL}};
static const ct_attr_def rx_attrs[] = {
    {"dim", {.type = CT_ATTR_INTS, .u.ints = {NULL, 0}}, false},
    {"keep_dim", {.type = CT_ATTR_BOOL, .u.b = false}, false},
    {"empty_dim_noop", {.type = CT_ATTR_BOOL, .u.b = false}, false},
};

ct__rx_kind ct__rx_kind_of(const ct_kernel_ctx *c) {
  static const struct {
    const char *name;
    ct__rx_kind k;
  } names[] = {
      {"reduce_sum_axes", CT__RX_SUM}, {"reduce_mean", CT__RX_MEAN},
      {"reduce_max", CT__RX_MAX},      {"reduce_min", CT__RX_MIN},
      {"reduce_prod", CT__RX_PROD},    {"reduce_l1", CT__RX_L1},
      {"reduce_l2", CT__RX_L2},        {"reduce_log_sum_exp", CT__RX_LOG_SUM_EXP},
      {"reduce_log_sum", CT__RX_LOG_SUM}, {"reduce_sum_square", CT__RX_SUM_SQUARE},
  };
  const char *t = c->op->def->type;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    size_t n = strlen(names[i].name);
    if (strncmp(t, names[i].name, n) == 0 && (t[n] == '\0' || strcmp(t + n, "_grad") == 0)) {
      return names[i].k;
    }
  }
  return CT__RX_SUM;
}

/* The listed dims: Axes' values when wired, else attribute dim. */
static ct_status rx_axes(const ct_kernel_ctx *c, const int64_t **v, int64_t *n, int64_t buf[],
                         const char **what) {
  *what = "attribute dim";
  if (ct_kernel_in_count(c, CT__RX_AXES) == 0) {
    *v = c->attr[CT__RX_DIM].u.ints.v;
    *n = (int64_t)c->attr[CT__RX_DIM].u.ints.n;
    return CT_OK;
  }
  const ct_tensor *a = ct_kernel_in(c, CT__RX_AXES, 0);
  *what = "input Axes";
  if (a->dtype != CT_INT64 && a->dtype != CT_INT32) {
    return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH,
                          "input Axes variable '%s' is %s: the dims to reduce are int64 or int32",
                          ct_kernel_in_name(c, CT__RX_AXES, 0), ct_dtype_name(a->dtype));
  }
  if (a->dims.rank > 1 || a->numel > CT_MAX_RANK) {
    char s[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input Axes variable '%s' is %s: list at most %d dims in a 1-D tensor",
                          ct_kernel_in_name(c, CT__RX_AXES, 0), ct_ddim_str(a->dims, s, sizeof s),
                          CT_MAX_RANK);
  }
  const void *d = ct__k_in_data(a);
  for (int64_t i = 0; i < a->numel; i++) buf[i] = ct__rx_geti(d, a->dtype, i);
  *v = buf;
  *n = a->numel;
  return CT_OK;
}

ct_status ct__rx_make_plan(const ct_kernel_ctx *c, ct__rx_plan *p) {
  const ct_tensor *x = ct_kernel_in(c, CT__RX_X, 0);
  int r = x->dims.rank;
  int64_t buf[CT_MAX_RANK];
  const int64_t *v = NULL;
  int64_t n = 0;
  const char *what;
  ct_status s = rx_axes(c, &v, &n, buf, &what);
  if (s != CT_OK) return s;
  bool red[CT_MAX_RANK];
  bool all = n == 0 && !c->attr[CT__RX_EMPTY_NOOP].u.b;
  for (int k = 0; k < CT_MAX_RANK; k++) red[k] = all;
  for (int64_t i = 0; i < n; i++) {
    int a;
    s = ct__k_axis(c, what, v[i], r, &a);
    if (s != CT_OK) return s;
    if (red[a] && r > 0) {
      return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                            "%s lists dim %d of input X variable '%s' twice: list each dim once",
                            what, a, ct_kernel_in_name(c, CT__RX_X, 0));
    }
    red[a] = true;
  }
  bool keep = c->attr[CT__RX_KEEP_DIM].u.b;
  p->x = x->dims;
  p->out.rank = 0;
  p->group = 1;
  int64_t st = 1;
  for (int k = r - 1; k >= 0; k--) {
    p->ostride[k] = red[k] ? 0 : st;
    if (red[k]) {
      p->group *= x->dims.d[k];
    } else {
      st *= x->dims.d[k];
    }
  }
  for (int k = 0; k < r; k++) {
    if (!red[k]) {
      p->out.d[p->out.rank++] = x->dims.d[k];
    } else if (keep) {
      p->out.d[p->out.rank++] = 1;
    }
  }
  return CT_OK;
}

static ct_status rx_infer(const ct_kernel_ctx *c) {
  ct__rx_plan p;
  ct_status s = ct__rx_make_plan(c, &p);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, p.out) : s;
}

/* ---- arg_min, arg_max_v2 ------------------------------------------------------------------------ */

static const ct_attr_def ax_attrs[] = {
    {"axis", {.type = CT_ATTR_INT, .u.i = 0}, false},
    {"keepdims", {.type = CT_ATTR_BOOL, .u.b = true}, false},
    {"select_last_index", {.type = CT_ATTR_BOOL, .u.b = false}, false},
    {"dtype", {.type = CT_ATTR_INT, .u.i = CT_INT64}, false},
};

static ct_status ax_infer(const ct_kernel_ctx *c) {
  const ct_tensor *x = ct_kernel_in(c, CT__IN_X, 0);
  ct_dtype dt;
  ct_status s = ct__k_attr_dtype(c, CT__AX_DTYPE, &dt);
  if (s != CT_OK) return s;
  if (dt != CT_INT64 && dt != CT_INT32) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute dtype is %s: the indices are int64 or int32",
                          ct_dtype_name(dt));
  }
  int axis;
  s = ct__k_axis(c, "axis", c->attr[CT__AX_AXIS].u.i, x->dims.rank, &axis);
  if (s != CT_OK) return s;
  ct_ddim out = x->dims;
  if (x->dims.rank > 0) {
    if (x->dims.d[axis] == 0) {
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "input X variable '%s' has no elements along axis %d: the extreme of "
                            "none has no index",
                            ct_kernel_in_name(c, CT__IN_X, 0), axis);
    }
    out.d[axis] = 1;
    if (!c->attr[CT__AX_KEEPDIMS].u.b) {
      for (int k = axis; k + 1 < x->dims.rank; k++) out.d[k] = x->dims.d[k + 1];
      out.rank--;
    }
  }
  return ct__k_resize(c, CT__OUT, 0, out);
}

/* ---- log_softmax, softmax_v2, hardmax ------------------------------------------------------------ */

static const ct_attr_def sx_attrs[] = {
    {"axis", {.type = CT_ATTR_INT, .u.i = -1}, false},
    {"coerce_2d", {.type = CT_ATTR_BOOL, .u.b = false}, false},
};

ct_status ct__sx_plan(const ct_kernel_ctx *c, ct__norm_plan *p) {
  const ct_tensor *x = ct_kernel_in(c, CT__IN_X, 0);
  if (!ct__rx_is_float(x->dtype)) {
    return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH,
                          "input X variable '%s' is %s: the rows are float16, float32 or float64",
                          ct_kernel_in_name(c, CT__IN_X, 0), ct_dtype_name(x->dtype));
  }
  int axis;
  ct_status s = ct__k_axis(c, "axis", c->attr[CT__SX_AXIS].u.i, x->dims.rank, &axis);
  if (s != CT_OK) return s;
  bool coerce = c->attr[CT__SX_COERCE_2D].u.b;
  p->outer = p->c = p->inner = 1;
  for (int k = 0; k < x->dims.rank; k++) {
    int64_t *to = k < axis ? &p->outer : k == axis || coerce ? &p->c : &p->inner;
    *to *= x->dims.d[k];
  }
  return CT_OK;
}

static ct_status sx_infer(const ct_kernel_ctx *c) {
  ct__norm_plan p;
  ct_status s = ct__sx_plan(c, &p);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, ct_kernel_in(c, CT__IN_X, 0)->dims) : s;
}

#define RX_DEF(name)                                                                   \
  {.type = name, .inputs = rx_in, .n_inputs = 2, .outputs = ct__slot_out, .n_outputs = 1, \
   .attrs = rx_attrs, .n_attrs = 3, .infer_shape = rx_infer, .grad = ct__grad_reduce_ext}

#define RXG_DEF(name)                                                                     \
  {.type = name, .inputs = ct__rx_grad_in, .n_inputs = 4, .outputs = ct__rx_dx_out,         \
   .n_outputs = 1, .attrs = rx_attrs, .n_attrs = 3, .infer_shape = ct__rx_grad_infer}

/* The reductions read Axes' values in infer-shape, so none is flagged CT_OP_PURE_INFER. */
static const ct_op_def defs[] = {
    RX_DEF("reduce_sum_axes"), RX_DEF("reduce_mean"), RX_DEF("reduce_max"),
    RX_DEF("reduce_min"),      RX_DEF("reduce_prod"), RX_DEF("reduce_l1"),
    RX_DEF("reduce_l2"),       RX_DEF("reduce_log_sum"), RX_DEF("reduce_log_sum_exp"),
    RX_DEF("reduce_sum_square"),
    {.type = "arg_min", .inputs = ct__slot_x, .n_inputs = 1, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = ax_attrs, .n_attrs = 4, .flags = CT_OP_PURE_INFER,
     .infer_shape = ax_infer},
    {.type = "arg_max_v2", .inputs = ct__slot_x, .n_inputs = 1, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = ax_attrs, .n_attrs = 4, .flags = CT_OP_PURE_INFER,
     .infer_shape = ax_infer},
    {.type = "log_softmax", .inputs = ct__slot_x, .n_inputs = 1, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = sx_attrs, .n_attrs = 2, .flags = CT_OP_PURE_INFER,
     .infer_shape = sx_infer, .grad = ct__grad_softmax_ext},
    {.type = "softmax_v2", .inputs = ct__slot_x, .n_inputs = 1, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = sx_attrs, .n_attrs = 2, .flags = CT_OP_PURE_INFER,
     .infer_shape = sx_infer, .grad = ct__grad_softmax_ext},
    {.type = "hardmax", .inputs = ct__slot_x, .n_inputs = 1, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = sx_attrs, .n_attrs = 2, .flags = CT_OP_PURE_INFER,
     .infer_shape = sx_infer},
    /* The registry takes one table per family, so the gradients (ops/defs/reduce_ext_grad.c)
     * and the losses (ops/defs/reduce_ext_loss.c) are listed here too. */
    RXG_DEF("reduce_sum_axes_grad"), RXG_DEF("reduce_mean_grad"), RXG_DEF("reduce_max_grad"),
    RXG_DEF("reduce_min_grad"),      RXG_DEF("reduce_prod_grad"), RXG_DEF("reduce_l1_grad"),
    RXG_DEF("reduce_l2_grad"),       RXG_DEF("reduce_log_sum_grad"),
    RXG_DEF("reduce_log_sum_exp_grad"), RXG_DEF("reduce_sum_square_grad"),
    {.type = "log_softmax_grad", .inputs = ct__sx_grad_in, .n_inputs = 2,
     .outputs = ct__rx_dx_out, .n_outputs = 1, .attrs = sx_attrs, .n_attrs = 2,
     .flags = CT_OP_PURE_INFER, .infer_shape = ct__sx_grad_infer},
    {.type = "softmax_v2_grad", .inputs = ct__sx_grad_in, .n_inputs = 2,
     .outputs = ct__rx_dx_out, .n_outputs = 1, .attrs = sx_attrs, .n_attrs = 2,
     .flags = CT_OP_PURE_INFER, .infer_shape = ct__sx_grad_infer},
    {.type = "nll_loss", .inputs = ct__nll_in, .n_inputs = 3, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = ct__nll_attrs, .n_attrs = 2, .flags = CT_OP_PURE_INFER,
     .infer_shape = ct__nll_infer, .grad = ct__grad_nll_loss},
    {.type = "nll_loss_grad", .inputs = ct__nll_grad_in, .n_inputs = 4,
     .outputs = ct__rx_dx_out, .n_outputs = 1, .attrs = ct__nll_attrs, .n_attrs = 2,
     .flags = CT_OP_PURE_INFER, .infer_shape = ct__nll_grad_infer},
    {.type = "layer_norm_stats", .inputs = ct__lns_in, .n_inputs = 3, .outputs = ct__lns_out,
     .n_outputs = 2, .attrs = ct__ln_attrs, .n_attrs = 2, .flags = CT_OP_PURE_INFER,
     .infer_shape = ct__lns_infer},
};

const ct__def_table ct__reduce_ext_defs = CT__TABLE(defs);

/* ---- What each op type computes (ct_op_type_doc) --------------------------------------------- */
#define RX_DIMS                                                                                    \
  "The dims reduced are those listed in Axes when it is wired (int64 or int32, rank 0 or 1, "      \
  "read on the host at every run), else in attribute dim (negative ones counting from the end, "   \
  "none twice); an empty list reduces every dim, or with empty_dim_noop none (each element is "    \
  "then its own group and Out has X's dims). keep_dim keeps the reduced dims as extent 1, else "   \
  "they are dropped."

static const ct__op_doc docs[] = {
    {"reduce_sum_axes", "`Out = sum(X)` over the reduced dims: reduce_sum with the dims also "
                        "readable at run time (ONNX's ReduceSum from opset 13). " RX_DIMS " An "
                        "empty group gives 0. Floats accumulate in double in element order and "
                        "round once to X's dtype; integers wrap as the dtype does."},
    {"reduce_mean", "`Out = sum(X) / n` over the reduced dims, n the group's element count, the "
                    "sum in double. " RX_DIMS " An empty group gives NaN."},
    {"reduce_max", "Out is the largest element of X over the reduced dims; a NaN makes its group's "
                   "result NaN. " RX_DIMS " An empty float group gives -inf; an empty integer "
                   "group is refused."},
    {"reduce_min", "Out is the smallest element of X over the reduced dims; a NaN makes its "
                   "group's result NaN. " RX_DIMS " An empty float group gives +inf; an empty "
                   "integer group is refused."},
    {"reduce_prod", "`Out = prod(X)` over the reduced dims. " RX_DIMS " An empty group gives 1. "
                    "Floats accumulate in double in element order and round once to X's dtype; "
                    "integers wrap as the dtype does."},
    {"reduce_l1", "`Out = sum(|X|)` over the reduced dims. " RX_DIMS " An empty group gives 0, and "
                  "with empty_dim_noop Out is |X|. Floats accumulate in double in element order "
                  "and round once to X's dtype; integers wrap as the dtype does."},
    {"reduce_l2", "`Out = sqrt(sum(X^2))` over the reduced dims, the sum in double. " RX_DIMS " An "
                  "empty group gives 0, and with empty_dim_noop Out is |X|."},
    {"reduce_log_sum", "`Out = log(sum(X))` over the reduced dims, the sum in double (a negative "
                       "sum gives NaN). " RX_DIMS " An empty group gives -inf, and with "
                       "empty_dim_noop Out is log(X)."},
    {"reduce_log_sum_exp", "`Out = log(sum(exp(X)))` over the reduced dims, computed as `m + "
                           "log(sum(exp(X - m)))` in double with m the group's largest element, "
                           "so large inputs do not overflow; a group holding +inf gives +inf and "
                           "one holding NaN gives NaN. " RX_DIMS " An empty group, or one of "
                           "only -inf, gives -inf."},
    {"reduce_sum_square", "`Out = sum(X^2)` over the reduced dims. " RX_DIMS " An empty group "
                          "gives 0, and with empty_dim_noop Out is X^2. Floats accumulate in "
                          "double in element order and round once to X's dtype; integers wrap as "
                          "the dtype does."},
    {"arg_min", "Out holds, for each row of X along `axis` (default 0, negative counting from the "
                "end), the index of its smallest element: the first one or, with "
                "select_last_index, the last one; a NaN counts as the smallest, as in numpy's "
                "argmin. keepdims (default true) keeps the axis as extent 1, else it is dropped; "
                "a rank-0 X gives 0. Out's dtype is attribute dtype, int64 (the default) or "
                "int32. An axis of extent 0 is refused."},
    {"arg_max_v2", "arg_max with select_last_index: Out holds, for each row of X along `axis` "
                   "(default 0, negative counting from the end), the index of its largest "
                   "element, the first one or, with select_last_index, the last one; a NaN "
                   "counts as the largest, as in numpy's argmax. keepdims (default true) keeps "
                   "the axis as extent 1, else it is dropped; a rank-0 X gives 0. Out's dtype is "
                   "attribute dtype, int64 (the default) or int32. An axis of extent 0 is "
                   "refused."},
    {"log_softmax", "`Out = X - m - log(sum(exp(X - m)))` over each row along `axis` (default -1, "
                    "negative counting from the end), m the row's largest element, computed in "
                    "double and rounded once; with coerce_2d the row is all the dims from axis "
                    "on taken together (ONNX before opset 13). X is float16, float32 or float64; "
                    "Out has X's dims."},
    {"softmax_v2", "`Out = exp(X - m) / sum(exp(X - m))` over each row along `axis` (default -1, "
                   "negative counting from the end), m the row's largest element, computed in "
                   "double and rounded once; with coerce_2d the row is all the dims from axis on "
                   "taken together (ONNX's Softmax before opset 13). X is float16, float32 or "
                   "float64; Out has X's dims."},
    {"hardmax", "Out is 1 at the first largest element of each row along `axis` (default -1, "
                "negative counting from the end) and 0 elsewhere, a NaN counting as the largest; "
                "with coerce_2d the row is all the dims from axis on taken together (ONNX before "
                "opset 13). X is float16, float32 or float64; Out has X's dims and dtype."},
};

const ct__doc_table ct__reduce_ext_docs = CT__TABLE(docs);
