/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/shape.c: the op types reshape, transpose and concat: their shapes, the plans every
 * backend's kernels follow, and reshape's kernel, which serves every place.
 *
 * reshape makes Out a view of X's memory with new dims (no copy; with X and Out the same
 * variable it works in place). Its `shape` follows PaddlePaddle: -1 (at most once) is inferred
 * from the element count, 0 copies the input's dim at the same position (with `allowzero`,
 * ONNX's, a 0 is an extent of 0 instead); the element counts must match. transpose copies X
 * with its dims permuted by `axis` (a permutation of the dims, negative entries counting from
 * the end as in numpy). concat joins its X tensors along `axis`
 * (negative counts from the end); all other dims must match. */
#include <stdio.h>

#include "ops/defs.h"

/* Writes a list of ints as "[2,-1,0]" into buf, for messages (cut short when long). */
static const char *ints_str(const int64_t *v, size_t n, char *buf, size_t cap) {
  size_t pos = (size_t)snprintf(buf, cap, "[");
  for (size_t i = 0; i < n && pos + 1 < cap; i++) {
    int w = snprintf(buf + pos, cap - pos, "%s%lld", i ? "," : "", (long long)v[i]);
    if (w < 0) break;
    pos += (size_t)w;
  }
  if (pos + 1 < cap) snprintf(buf + pos, cap - pos, "]");
  return buf;
}

/* reshape's optional input Shape (PaddlePaddle's reshape2 has one): int64 or int32 values of
 * rank 0 or 1 in host memory, read on every run (so reshape is no CT_OP_PURE_INFER type), used
 * instead of attribute `shape` with the same meaning (the messages still say "attribute
 * 'shape'" for both). */
enum { CT__RESHAPE_IN_SHAPE = 1 };
static ct_status shape_input(const ct_kernel_ctx *c, int64_t v[CT_MAX_RANK], size_t *n) {
  const ct_tensor *t = ct_kernel_in(c, CT__RESHAPE_IN_SHAPE, 0);
  const char *name = ct_kernel_in_name(c, CT__RESHAPE_IN_SHAPE, 0);
  char sd[CT__DDIM_STR_CAP];
  if (t->dtype != CT_INT64 && t->dtype != CT_INT32) {
    return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH,
                          "input Shape variable '%s' is %s: give int64 or int32 values", name,
                          ct_dtype_name(t->dtype));
  }
  if (c->place.kind != CT_DEVICE_CPU) {
    return ct_kernel_fail(c, CT_ERR_UNSUPPORTED,
                          "input Shape variable '%s' is read on the host: run reshape on the CPU "
                          "or set attribute 'shape'", name);
  }
  if (t->dims.rank > 1 || t->numel > CT_MAX_RANK) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "input Shape variable '%s' is %s: give a list of at most CT_MAX_RANK "
                          "(%d) dims",
                          name, ct_ddim_str(t->dims, sd, sizeof sd), CT_MAX_RANK);
  }
  const void *p = ct__tensor_ptr(t);
  for (int64_t i = 0; i < t->numel; i++) {
    v[i] = t->dtype == CT_INT32 ? ((const int32_t *)p)[i] : ((const int64_t *)p)[i];
  }
  *n = (size_t)t->numel;
  return CT_OK;
}

/* The dims of Out from the `shape` attribute (or input Shape) and X's dims. Errors: more than CT_MAX_RANK dims,
 * CT_ERR_OUT_OF_RANGE; an entry below -1, two -1s, or a 0 past X's rank,
 * CT_ERR_INVALID_ARGUMENT; element counts that cannot match, CT_ERR_SHAPE. */
static ct_status reshape_dims(const ct_kernel_ctx *c, ct_ddim *out) {
  const ct_attr_value *shape = &c->attr[CT__RESHAPE_SHAPE];
  const int64_t *v = shape->u.ints.v;
  size_t n = shape->u.ints.n;
  const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);
  char sx[CT__DDIM_STR_CAP], ss[CT__DDIM_STR_CAP];
  int64_t from_input[CT_MAX_RANK];
  if (ct_kernel_in_count(c, CT__RESHAPE_IN_SHAPE) > 0) {
    ct_status s = shape_input(c, from_input, &n);
    if (s != CT_OK) return s;
    v = from_input;
  } else if (!c->op->attr_set[CT__RESHAPE_SHAPE]) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute 'shape' is required when input Shape is not wired: set it "
                          "with ct_op_set_attr_ints");
  }
  if (n > CT_MAX_RANK) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "attribute 'shape' has %zu dims, more than CT_MAX_RANK (%d)", n,
                          CT_MAX_RANK);
  }
  int infer = -1;
  int64_t known = 1;
  out->rank = (int)n;
  for (size_t i = 0; i < n; i++) {
    int64_t d = v[i];
    if (d == -1) {
      if (infer >= 0) {
        return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                              "attribute 'shape' %s has more than one -1: at most one dim can "
                              "be inferred",
                              ints_str(v, n, ss, sizeof ss));
      }
      infer = (int)i;
      out->d[i] = 1;
      continue;
    }
    if (d < -1) {
      return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                            "attribute 'shape' %s has %lld at position %zu: use an extent, 0 to "
                            "copy the input's dim or -1 to infer it",
                            ints_str(v, n, ss, sizeof ss), (long long)d, i);
    }
    if (d == 0 && !c->attr[CT__RESHAPE_ALLOWZERO].u.b) {
      if ((int)i >= xt->dims.rank) {
        return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                              "attribute 'shape' %s has 0 at position %zu but input X variable "
                              "'%s' %s has no dim there to copy",
                              ints_str(v, n, ss, sizeof ss), i, ct_kernel_in_name(c, CT__IN_X, 0),
                              ct_ddim_str(xt->dims, sx, sizeof sx));
      }
      d = xt->dims.d[i];
    }
    out->d[i] = d;
    /* Once the product overflows it stays unusable (a later 0 must not bring it back). */
    if (known >= 0 && __builtin_mul_overflow(known, d, &known)) known = -1;
  }
  if (infer >= 0 && known > 0 && xt->numel % known == 0) {
    out->d[infer] = xt->numel / known;
  } else if (infer >= 0 || known != xt->numel) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input X variable '%s' %s has %lld elements, which attribute 'shape' "
                          "%s cannot hold: keep the element count",
                          ct_kernel_in_name(c, CT__IN_X, 0), ct_ddim_str(xt->dims, sx, sizeof sx),
                          (long long)xt->numel, ints_str(v, n, ss, sizeof ss));
  }
  return CT_OK;
}

static ct_status reshape_infer(const ct_kernel_ctx *c) {
  ct_ddim d;
  ct_status s = reshape_dims(c, &d);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, d) : s;
}

/* Output 0 (reshape's Out, reshape_grad's X@GRAD) becomes a view of x's memory (sharing its
 * block, marked as an op's view: an op that later writes either of them while both hold it takes
 * a block of its own, ops/prep.c), then takes the new dims. An external output keeps its buffer
 * (ops.md): x's bytes are copied into it when they fit (by ct_tensor_copy's rule for an external
 * destination), CT_ERR_EXTERNAL_BUFFER when they do not. An external x is copied too, not viewed:
 * an op that writes the caller's buffer later writes it in place, and a view would change with
 * it. An output that already shares x's block never gets here with it: the framework gives it a
 * block of its own first. */
ct_status ct__share_as(const ct_kernel_ctx *c, const ct_tensor *x, ct_ddim d) {
  ct_tensor *o = ct_kernel_out(c, 0, 0);
  bool copy = x->block->external ||
              (o->block != NULL && o->block->external && o->block != x->block);
  if (CT__UNLIKELY((copy ? ct_tensor_copy(o, x, c->place) : ct_tensor_share(o, x)) != CT_OK)) {
    char text[512];
    snprintf(text, sizeof text, "%s", ct_last_error());
    return ct_kernel_fail(c, ct_last_status(), "output %s variable '%s': %s",
                          c->op->def->out[0].name, ct_kernel_out_name(c, 0, 0), text);
  }
  if (!copy) atomic_store_explicit(&o->block->op_view, true, memory_order_relaxed);
  return ct__k_resize(c, 0, 0, d);
}

ct_status ct__reshape_kernel(const ct_kernel_ctx *c) {
  ct_ddim d;
  ct_status s = reshape_dims(c, &d);
  if (CT__UNLIKELY(s != CT_OK)) return s;
  return ct__share_as(c, ct_kernel_in(c, CT__IN_X, 0), d);
}

/* shape is required unless input Shape is wired (reshape_dims checks). */
static const ct_slot_def reshape_in[] = {{"X", 0}, {"Shape", CT_SLOT_OPTIONAL}};
static const ct_attr_def reshape_attrs[] = {
    {"shape", {.type = CT_ATTR_INTS, .u.ints = {NULL, 0}}, false},
    {"allowzero", {.type = CT_ATTR_BOOL, .u.b = false}, false},
};

/* The permutation of X's dims in `axis`, normalised; an empty `axis` reverses the dims (numpy's
 * transpose without axes, ONNX's Transpose without perm: the rank known only when it runs).
 * Errors: another length than X's rank, CT_ERR_SHAPE; an entry outside [-rank, rank),
 * CT_ERR_OUT_OF_RANGE; a dim listed twice, CT_ERR_INVALID_ARGUMENT. */
ct_status ct__tr_perm(const ct_kernel_ctx *c, int perm[CT_MAX_RANK]) {
  const ct_attr_value *axis = &c->attr[CT__TRANSPOSE_AXIS];
  const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);
  int rank = xt->dims.rank;
  char sx[CT__DDIM_STR_CAP], sa[CT__DDIM_STR_CAP];
  if (axis->u.ints.n == 0) {
    for (int k = 0; k < rank; k++) perm[k] = rank - 1 - k;
    return CT_OK;
  }
  if (axis->u.ints.n != (size_t)rank) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "attribute 'axis' %s has %zu entries but input X variable '%s' %s has "
                          "rank %d: give a permutation of all its dims",
                          ints_str(axis->u.ints.v, axis->u.ints.n, sa, sizeof sa),
                          axis->u.ints.n, ct_kernel_in_name(c, CT__IN_X, 0),
                          ct_ddim_str(xt->dims, sx, sizeof sx), rank);
  }
  bool seen[CT_MAX_RANK] = {false};
  for (int k = 0; k < rank; k++) {
    ct_status s = ct__k_axis(c, "axis", axis->u.ints.v[k], rank, &perm[k]);
    if (s != CT_OK) return s;
    if (seen[perm[k]]) {
      return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                            "attribute 'axis' %s lists dim %d twice: give a permutation of the "
                            "dims of input X variable '%s'",
                            ints_str(axis->u.ints.v, axis->u.ints.n, sa, sizeof sa), perm[k],
                            ct_kernel_in_name(c, CT__IN_X, 0));
    }
    seen[perm[k]] = true;
  }
  return CT_OK;
}

static ct_status tr_infer(const ct_kernel_ctx *c) {
  int perm[CT_MAX_RANK];
  ct_status s = ct__tr_perm(c, perm);
  if (s != CT_OK) return s;
  ct_ddim x = ct_kernel_in(c, CT__IN_X, 0)->dims, out = {.rank = x.rank};
  for (int k = 0; k < x.rank; k++) out.d[k] = x.d[perm[k]];
  return ct__k_resize(c, CT__OUT, 0, out);
}

/* The walk over Out (ct__tr_plan, kernels.h). */
void ct__tr_make_plan(ct_ddim x, const int perm[CT_MAX_RANK], ct__tr_plan *p) {
  int64_t xs[CT_MAX_RANK], st = 1;
  for (int k = x.rank - 1; k >= 0; k--) {
    xs[k] = st;
    st *= x.d[k];
  }
  int n = 0;
  for (int k = 0; k < x.rank; k++) {
    int64_t d = x.d[perm[k]], s = xs[perm[k]];
    if (d == 1) continue;
    if (n > 0 && p->is[n - 1] == s * d) {
      p->d[n - 1] *= d;
      p->is[n - 1] = s;
      continue;
    }
    p->d[n] = d;
    p->is[n] = s;
    n++;
  }
  if (n == 0) {
    p->d[0] = 1;
    p->is[0] = 1;
    n = 1;
  }
  p->rank = n;
}

static const ct_attr_def tr_attrs[] = {
    {"axis", {.type = CT_ATTR_INTS, .u.ints = {NULL, 0}}, true},
};

ct_status ct__concat_dims(const ct_kernel_ctx *c, int *axis_out, ct_ddim *out_dims) {
  const ct_tensor *x0 = ct_kernel_in(c, CT__IN_X, 0);
  char a[CT__DDIM_STR_CAP], b[CT__DDIM_STR_CAP];
  if (x0->dims.rank == 0) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input X variable '%s' is a scalar (rank 0): concat needs rank 1 or "
                          "more; reshape it to [1] first",
                          ct_kernel_in_name(c, CT__IN_X, 0));
  }
  int axis;
  ct_status s = ct__k_axis(c, "axis", c->attr[CT__CONCAT_AXIS].u.i, x0->dims.rank, &axis);
  if (s != CT_OK) return s;
  ct_ddim out = x0->dims;
  for (size_t i = 1, n = ct_kernel_in_count(c, CT__IN_X); i < n; i++) {
    const ct_tensor *xi = ct_kernel_in(c, CT__IN_X, i);
    bool fits = xi->dims.rank == x0->dims.rank;
    for (int k = 0; fits && k < x0->dims.rank; k++) {
      fits = k == axis || xi->dims.d[k] == x0->dims.d[k];
    }
    if (!fits) {
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "input X variable '%s' %s does not fit input X variable '%s' %s "
                            "along axis %d: every dim but the axis must match",
                            ct_kernel_in_name(c, CT__IN_X, i), ct_ddim_str(xi->dims, b, sizeof b),
                            ct_kernel_in_name(c, CT__IN_X, 0), ct_ddim_str(x0->dims, a, sizeof a),
                            axis);
    }
    if (__builtin_add_overflow(out.d[axis], xi->dims.d[axis], &out.d[axis])) {
      return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                            "the inputs X add up to more than %lld along axis %d",
                            (long long)INT64_MAX, axis);
    }
  }
  for (size_t i = 1, n = ct_kernel_in_count(c, CT__IN_X); i < n; i++) {
    s = ct__k_check_dtype(c, CT__IN_X, i, c->dtype);
    if (s != CT_OK) return s;
  }
  *axis_out = axis;
  *out_dims = out;
  return CT_OK;
}

static ct_status cc_infer(const ct_kernel_ctx *c) {
  int axis;
  ct_ddim out;
  ct_status s = ct__concat_dims(c, &axis, &out);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, out) : s;
}

static const ct_attr_def cc_attrs[] = {{"axis", {.type = CT_ATTR_INT, .u.i = 0}, false}};

/* The gradients: reshape_grad, transpose_grad, concat_grad (ops/defs/shape_grad.c). */
static const ct_op_def defs[] = {
    {.type = "reshape", .inputs = reshape_in, .n_inputs = 2, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = reshape_attrs, .n_attrs = 2,
     .infer_shape = reshape_infer, /* not pure: it reads input Shape's values */
     .grad = ct__grad_unary},
    {.type = "transpose", .inputs = ct__slot_x, .n_inputs = 1, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = tr_attrs, .n_attrs = 1,
     .flags = CT_OP_PURE_INFER, .infer_shape = tr_infer,
     .grad = ct__grad_unary},
    {.type = "concat", .inputs = ct__slot_xs, .n_inputs = 1, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = cc_attrs, .n_attrs = 1,
     .flags = CT_OP_PURE_INFER, .infer_shape = cc_infer,
     .grad = ct__grad_concat},
};

const ct__def_table ct__shape_defs = CT__TABLE(defs);

/* ---- What each op type computes (ct_op_type_doc) --------------------------------------------- */
static const ct__op_doc docs[] = {
    {"reshape", "Out is X with the dims listed in `shape`, the same elements in the same row-major "
                "order: a view of X's memory (no copy; X and Out may be one variable), copied "
                "instead into an external output or from an external X. An entry -1 (at most "
                "once) is inferred from the element count, and 0 copies X's extent at that "
                "position or, with allowzero (ONNX's), is an extent of 0; the element counts "
                "must match. Shape, when wired (int64 or int32, rank 0 or 1, read on the host at "
                "every run, so the op then runs on the CPU), replaces attribute shape, which is "
                "required otherwise."},
    {"transpose", "Out is X with its dims permuted, a copy: `Out.dims[k] = X.dims[axis[k]]`, and "
                  "each element moves with its coordinates (numpy's transpose). `axis` "
                  "(required) is a permutation of all of X's dims, negative entries counting "
                  "from the end, or empty: the dims reversed (numpy's default, ONNX's "
                  "Transpose without perm)."},
    {"concat", "Out joins the X tensors (one or more, in order) along `axis` (default 0, negative "
               "counting from the end), a copy: they must have one rank of 1 or more, one dtype "
               "and equal extents in every dim but the axis, where Out's extent is the sum of "
               "theirs."},
};

const ct__doc_table ct__shape_docs = CT__TABLE(docs);
