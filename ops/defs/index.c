/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/index.c: the index family's op types (shapes, slicing, gathering, padding, with
 * run-time shape inputs), the checks that read those inputs, and the shapes of the ops that
 * only look at dims. The table at the end lists every type of the family, the gradients and the
 * ops of index_slice.c and index_misc.c included.
 *
 *   shape              Input -> Out: Input's dims as int64 [end - start], dims start..end-1
 *                      (negative count from the end, both clamped to [0, rank]; ONNX's Shape)
 *   size               Input -> Out: Input's element count as an int64 scalar
 *   squeeze            X, AxesTensor -> Out: X without the listed dims of extent 1 (all dims of
 *                      extent 1 when the list is empty); a view of X's memory
 *   unsqueeze          X, AxesTensor -> Out: dims of extent 1 inserted at the listed positions
 *                      of Out (negative count from Out's end); a view
 *   flatten            X -> Out: [d0 .. d(axis-1), the rest] as two dims; a view
 *   expand             X, Shape -> Out: X broadcast with `shape` (numpy rules, both ways)
 *   tile               X, RepeatTimes -> Out: X repeated repeat_times[k] times along dim k
 *   constant_of_shape  ShapeTensor -> Out: `value` in every element, of dtype `dtype`
 *   range              Start, End, Step -> Out: start, start + step ... while before end */
#include <stdio.h>

#include <corten/backward.h>

#include "ops/defs/index.h"
#include "ops/half.h"

/* ---- Run-time shape inputs ------------------------------------------------------------------- */

ct_status ct__ix_check_index_dtype(const ct_kernel_ctx *c, size_t slot) {
  const ct_tensor *t = ct_kernel_in(c, slot, 0);
  if (t->dtype == CT_INT64 || t->dtype == CT_INT32) return CT_OK;
  return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH,
                        "input %s variable '%s' is %s: give int64 or int32 values",
                        c->op->def->in[slot].name, ct_kernel_in_name(c, slot, 0),
                        ct_dtype_name(t->dtype));
}

ct_status ct__ix_check_host_list(const ct_kernel_ctx *c, size_t slot, size_t cap) {
  const ct_tensor *t = ct_kernel_in(c, slot, 0);
  const char *name = c->op->def->in[slot].name;
  if (c->place.kind != CT_DEVICE_CPU) {
    return ct_kernel_fail(c, CT_ERR_UNSUPPORTED,
                          "input %s variable '%s' is read on the host: run the op on the CPU",
                          name, ct_kernel_in_name(c, slot, 0));
  }
  if (t->dims.rank > 1 || t->numel > (int64_t)cap) {
    char sd[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input %s variable '%s' is %s: give a list of at most %zu values",
                          name, ct_kernel_in_name(c, slot, 0),
                          ct_ddim_str(t->dims, sd, sizeof sd), cap);
  }
  return CT_OK;
}

/* The wired input `slot` holds int64 or int32 values in host memory, rank 0 or 1, at most cap. */
static ct_status host_ints(const ct_kernel_ctx *c, size_t slot, size_t cap) {
  ct_status s = ct__ix_check_index_dtype(c, slot);
  return s == CT_OK ? ct__ix_check_host_list(c, slot, cap) : s;
}

ct_status ct__ix_ints(const ct_kernel_ctx *c, size_t slot, size_t attr, int64_t *v, size_t *n,
                      size_t cap) {
  if (ct_kernel_in_count(c, slot) == 0) {
    const ct_attr_value *a = &c->attr[attr];
    if (a->u.ints.n > cap) {
      return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                            "attribute '%s' has %zu values: give at most %zu",
                            c->op->def->attr[attr].name, a->u.ints.n, cap);
    }
    for (size_t i = 0; i < a->u.ints.n; i++) v[i] = a->u.ints.v[i];
    *n = a->u.ints.n;
    return CT_OK;
  }
  ct_status s = host_ints(c, slot, cap);
  if (s != CT_OK) return s;
  const ct_tensor *t = ct_kernel_in(c, slot, 0);
  const void *p = ct__k_in_data(t);
  for (int64_t i = 0; i < t->numel; i++) v[i] = ct__ix_index(p, t->dtype, i);
  *n = (size_t)t->numel;
  return CT_OK;
}

ct_status ct__ix_scalar(const ct_kernel_ctx *c, size_t slot, int64_t *v) {
  ct_status s = host_ints(c, slot, 1);
  if (s != CT_OK) return s;
  const ct_tensor *t = ct_kernel_in(c, slot, 0);
  if (t->numel != 1) {
    return ct_kernel_fail(c, CT_ERR_SHAPE, "input %s variable '%s' is empty: give one value",
                          c->op->def->in[slot].name, ct_kernel_in_name(c, slot, 0));
  }
  *v = ct__ix_index(ct__k_in_data(t), t->dtype, 0);
  return CT_OK;
}

double ct__ix_load(const void *data, ct_dtype dt, int64_t i) {
  switch (dt) {
    case CT_BOOL: return ((const bool *)data)[i] ? 1 : 0;
    case CT_INT8: return ((const int8_t *)data)[i];
    case CT_UINT8: return ((const uint8_t *)data)[i];
    case CT_INT16: return ((const int16_t *)data)[i];
    case CT_INT32: return ((const int32_t *)data)[i];
    case CT_INT64: return (double)((const int64_t *)data)[i];
    case CT_FLOAT16: return ct__half_to_float(((const uint16_t *)data)[i]);
    case CT_BFLOAT16: return ct__bf16_to_float(((const uint16_t *)data)[i]);
    case CT_FLOAT32: return ((const float *)data)[i];
    case CT_UINT16: return ((const uint16_t *)data)[i];
    case CT_UINT32: return ((const uint32_t *)data)[i];
    case CT_UINT64: return (double)((const uint64_t *)data)[i];
    default: return ((const double *)data)[i];
  }
}

void ct__ix_strides(ct_ddim d, int64_t st[CT_MAX_RANK]) {
  int64_t s = 1;
  for (int k = d.rank - 1; k >= 0; k--) {
    st[k] = s;
    s *= d.d[k];
  }
}

/* ---- shape, size ----------------------------------------------------------------------------- */

/* shape's dims [start, end) of a rank, clamped as ONNX's Shape does. */
static void shape_range(const ct_kernel_ctx *c, int rank, int64_t *b, int64_t *e) {
  int64_t s = c->attr[CT__IX_SHAPE_START].u.i, t = c->attr[CT__IX_SHAPE_END].u.i;
  if (s < 0) s += rank;
  if (t < 0) t += rank;
  *b = s < 0 ? 0 : s > rank ? rank : s;
  *e = t < *b ? *b : t > rank ? rank : t;
}

static ct_status shape_infer(const ct_kernel_ctx *c) {
  int64_t b, e;
  shape_range(c, ct_kernel_in(c, 0, 0)->dims.rank, &b, &e);
  return ct__k_resize(c, CT__OUT, 0, CT_DIMS(e - b));
}

ct_status ct__ix_shape_kernel(const ct_kernel_ctx *c) {
  ct_ddim d = ct_kernel_in(c, 0, 0)->dims;
  int64_t b, e;
  shape_range(c, d.rank, &b, &e);
  int64_t *o = ct__k_out_data(c, CT__OUT, 0, CT_INT64);
  if (o == NULL) return ct_last_status();
  for (int64_t k = b; k < e; k++) o[k - b] = d.d[k];
  return CT_OK;
}

static ct_status size_infer(const ct_kernel_ctx *c) {
  return ct__k_resize(c, CT__OUT, 0, (ct_ddim){.rank = 0});
}

ct_status ct__ix_size_kernel(const ct_kernel_ctx *c) {
  int64_t *o = ct__k_out_data(c, CT__OUT, 0, CT_INT64);
  if (o == NULL) return ct_last_status();
  o[0] = ct_kernel_in(c, 0, 0)->numel;
  return CT_OK;
}

/* ---- squeeze, unsqueeze, flatten: views ---------------------------------------------------- */

static ct_status squeeze_dims(const ct_kernel_ctx *c, ct_ddim *out) {
  int64_t ax[CT_MAX_RANK];
  size_t n;
  ct_status s = ct__ix_ints(c, CT__IX_SQ_AXES, CT__IX_SQ_AXES_ATTR, ax, &n, CT_MAX_RANK);
  if (s != CT_OK) return s;
  ct_ddim x = ct_kernel_in(c, CT__IX_SQ_X, 0)->dims;
  bool drop[CT_MAX_RANK] = {false};
  for (size_t i = 0; i < n; i++) {
    int a;
    s = ct__k_axis(c, "axes", ax[i], x.rank, &a);
    if (s != CT_OK) return s;
    if (x.rank == 0 || x.d[a] != 1) {
      char sd[CT__DDIM_STR_CAP];
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "axis %lld of input X variable '%s' %s is not of extent 1: squeeze "
                            "only dims of extent 1",
                            (long long)ax[i], ct_kernel_in_name(c, CT__IX_SQ_X, 0),
                            ct_ddim_str(x, sd, sizeof sd));
    }
    drop[a] = true;
  }
  out->rank = 0;
  for (int k = 0; k < x.rank; k++) {
    if (n == 0 ? x.d[k] == 1 : drop[k]) continue;
    out->d[out->rank++] = x.d[k];
  }
  return CT_OK;
}

static ct_status unsqueeze_dims(const ct_kernel_ctx *c, ct_ddim *out) {
  int64_t ax[CT_MAX_RANK];
  size_t n;
  ct_status s = ct__ix_ints(c, CT__IX_SQ_AXES, CT__IX_SQ_AXES_ATTR, ax, &n, CT_MAX_RANK);
  if (s != CT_OK) return s;
  ct_ddim x = ct_kernel_in(c, CT__IX_SQ_X, 0)->dims;
  int r = x.rank + (int)n;
  if (r > CT_MAX_RANK) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "Out would have rank %d, more than CT_MAX_RANK (%d)", r, CT_MAX_RANK);
  }
  bool one[CT_MAX_RANK] = {false};
  for (size_t i = 0; i < n; i++) {
    if (ax[i] < -r || ax[i] >= r) {
      return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                            "axes entry %lld is outside [%d, %d) for Out of rank %d",
                            (long long)ax[i], -r, r, r);
    }
    int a = (int)(ax[i] < 0 ? ax[i] + r : ax[i]);
    if (one[a]) {
      return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                            "axes lists position %d twice: give each new dim once", a);
    }
    one[a] = true;
  }
  out->rank = r;
  for (int k = 0, j = 0; k < r; k++) out->d[k] = one[k] ? 1 : x.d[j++];
  return CT_OK;
}

static ct_status flatten_dims(const ct_kernel_ctx *c, ct_ddim *out) {
  ct_ddim x = ct_kernel_in(c, 0, 0)->dims;
  int64_t axis = c->attr[CT__IX_FLATTEN_AXIS].u.i;
  if (axis < -x.rank || axis > x.rank) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "attribute 'axis' is %lld but input X variable '%s' has rank %d: use "
                          "an axis in [%d, %d]",
                          (long long)axis, ct_kernel_in_name(c, 0, 0), x.rank, -x.rank, x.rank);
  }
  if (axis < 0) axis += x.rank;
  int64_t a = 1, b = 1;
  for (int k = 0; k < x.rank; k++) *(k < axis ? &a : &b) *= x.d[k];
  *out = CT_DIMS(a, b);
  return CT_OK;
}

#define VIEW_OP(name, dims_fn)                                                  \
  static ct_status name##_infer(const ct_kernel_ctx *c) {                      \
    ct_ddim d;                                                                  \
    ct_status s = dims_fn(c, &d);                                               \
    return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, d) : s;                    \
  }                                                                             \
  ct_status ct__ix_##name##_kernel(const ct_kernel_ctx *c) {                   \
    ct_ddim d;                                                                  \
    ct_status s = dims_fn(c, &d);                                               \
    return s == CT_OK ? ct__share_as(c, ct_kernel_in(c, 0, 0), d) : s;          \
  }

VIEW_OP(squeeze, squeeze_dims)
VIEW_OP(unsqueeze, unsqueeze_dims)
VIEW_OP(flatten, flatten_dims)

/* ---- expand, tile ---------------------------------------------------------------------------- */

ct_status ct__ix_expand_dims(const ct_kernel_ctx *c, ct_ddim x, ct_ddim *out) {
  int64_t sh[CT_MAX_RANK];
  size_t n;
  ct_status s = ct__ix_ints(c, CT__IX_EXP_SHAPE, CT__IX_EXP_SHAPE_ATTR, sh, &n, CT_MAX_RANK);
  if (s != CT_OK) return s;
  int r = x.rank > (int)n ? x.rank : (int)n;
  out->rank = r;
  for (int k = 0; k < r; k++) {
    int kx = k - (r - x.rank), ks = k - (r - (int)n);
    int64_t a = kx >= 0 ? x.d[kx] : 1, b = ks >= 0 ? sh[ks] : 1;
    if (b < 0 || (a != b && a != 1 && b != 1)) {
      char sd[CT__DDIM_STR_CAP];
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "input X variable '%s' %s cannot be broadcast with shape entry %lld "
                            "at dim %d: each pair must match or one be 1",
                            ct_kernel_in_name(c, CT__IX_EXP_X, 0), ct_ddim_str(x, sd, sizeof sd),
                            (long long)b, k);
    }
    out->d[k] = a == 1 ? b : a;
  }
  return CT_OK;
}

ct_status ct__ix_tile_dims(const ct_kernel_ctx *c, ct_ddim x, ct_ddim *out) {
  int64_t rp[CT_MAX_RANK];
  size_t n;
  ct_status s =
      ct__ix_ints(c, CT__IX_TILE_REPEATS, CT__IX_TILE_REPEATS_ATTR, rp, &n, CT_MAX_RANK);
  if (s != CT_OK) return s;
  if ((int)n != x.rank) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "repeat_times has %zu values but input X variable '%s' has rank %d: "
                          "give one per dim",
                          n, ct_kernel_in_name(c, CT__IX_TILE_X, 0), x.rank);
  }
  *out = x;
  for (int k = 0; k < x.rank; k++) {
    if (rp[k] < 0 || __builtin_mul_overflow(x.d[k], rp[k], &out->d[k])) {
      return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                            "repeat_times entry %lld at dim %d: give a count of 0 or more "
                            "whose product with the dim fits",
                            (long long)rp[k], k);
    }
  }
  return CT_OK;
}

static ct_status expand_infer(const ct_kernel_ctx *c) {
  ct_ddim d;
  ct_status s = ct__ix_expand_dims(c, ct_kernel_in(c, 0, 0)->dims, &d);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, d) : s;
}

static ct_status tile_infer(const ct_kernel_ctx *c) {
  ct_ddim d;
  ct_status s = ct__ix_tile_dims(c, ct_kernel_in(c, 0, 0)->dims, &d);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, d) : s;
}

/* ---- constant_of_shape, range ---------------------------------------------------------------- */

static ct_status cos_infer(const ct_kernel_ctx *c) {
  int64_t sh[CT_MAX_RANK];
  size_t n;
  ct_dtype dt;
  ct_status s = ct__k_attr_dtype(c, CT__IX_COS_DTYPE, &dt);
  if (s == CT_OK) s = ct__ix_ints(c, CT__IX_COS_SHAPE, CT__IX_COS_SHAPE_ATTR, sh, &n, CT_MAX_RANK);
  if (s != CT_OK) return s;
  for (size_t k = 0; k < n; k++) {
    if (sh[k] < 0) {
      return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                            "shape entry %zu is %lld: give extents of 0 or more", k,
                            (long long)sh[k]);
    }
  }
  return ct__k_resize(c, CT__OUT, 0, ct_ddim_make(sh, (int)n));
}

/* The element count of range(start, end, step), or the failure (step 0, too many). */
static ct_status range_count(const ct_kernel_ctx *c, double a, double b, double st, int64_t *n) {
  if (st == 0 || st != st || a != a || b != b) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "Step is %g (Start %g, End %g): give a nonzero step and finite bounds",
                          st, a, b);
  }
  double k = ceil((b - a) / st);
  if (!(k < 9.2e18)) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE, "range(%g, %g, %g) has too many elements", a,
                          b, st);
  }
  *n = k > 0 ? (int64_t)k : 0;
  return CT_OK;
}

/* Start, End and Step as doubles (integers below 2^53 exactly), checked to be scalars of the
 * kernel's dtype. */
ct_status ct__ix_range_args(const ct_kernel_ctx *c, double v[3], int64_t iv[3]) {
  for (size_t k = 0; k < 3; k++) {
    const ct_tensor *t = ct_kernel_in(c, k, 0);
    ct_status s = ct__k_check_dtype(c, k, 0, c->dtype);
    if (s != CT_OK) return s;
    if (t->numel != 1) {
      return ct_kernel_fail(c, CT_ERR_SHAPE, "input %s variable '%s' holds %lld values: give one",
                            c->op->def->in[k].name, ct_kernel_in_name(c, k, 0),
                            (long long)t->numel);
    }
    if (c->place.kind != CT_DEVICE_CPU) {
      return ct_kernel_fail(c, CT_ERR_UNSUPPORTED, "range reads its inputs on the host");
    }
    const void *p = ct__k_in_data(t);
    switch (t->dtype) {
      case CT_INT16: iv[k] = *(const int16_t *)p; v[k] = (double)iv[k]; break;
      case CT_INT32: iv[k] = *(const int32_t *)p; v[k] = (double)iv[k]; break;
      case CT_INT64: iv[k] = *(const int64_t *)p; v[k] = (double)iv[k]; break;
      case CT_FLOAT32: v[k] = *(const float *)p; iv[k] = 0; break;
      case CT_FLOAT64: v[k] = *(const double *)p; iv[k] = 0; break;
      default:
        return ct_kernel_fail(c, CT_ERR_UNSUPPORTED, "range of %s: use int16, int32, int64, "
                              "float32 or float64", ct_dtype_name(t->dtype));
    }
  }
  return CT_OK;
}

ct_status ct__ix_range_count(const ct_kernel_ctx *c, int64_t *n) {
  double v[3];
  int64_t iv[3];
  ct_status s = ct__ix_range_args(c, v, iv);
  if (s != CT_OK) return s;
  if (c->dtype == CT_FLOAT32 || c->dtype == CT_FLOAT64) return range_count(c, v[0], v[1], v[2], n);
  if (iv[2] == 0) return range_count(c, v[0], v[1], 0, n);
  /* Integers: ceil((end - start) / step) exactly. */
  __int128 d = (__int128)iv[1] - iv[0], q = d / iv[2];
  if (q * iv[2] != d && ((d > 0) == (iv[2] > 0))) q++;
  *n = q > 0 ? (int64_t)q : 0;
  return CT_OK;
}

static ct_status range_infer(const ct_kernel_ctx *c) {
  int64_t n;
  ct_status s = ct__ix_range_count(c, &n);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, CT_DIMS(n)) : s;
}

/* ---- The table ------------------------------------------------------------------------------- */

static const ct_slot_def input_in[] = {{"Input", 0}};
static const ct_slot_def sq_in[] = {{"X", 0}, {"AxesTensor", CT_SLOT_OPTIONAL}};
static const ct_slot_def exp_in[] = {{"X", 0}, {"Shape", CT_SLOT_OPTIONAL}};
static const ct_slot_def tile_in[] = {{"X", 0}, {"RepeatTimes", CT_SLOT_OPTIONAL}};
static const ct_slot_def cos_in[] = {{"ShapeTensor", CT_SLOT_OPTIONAL}};
static const ct_slot_def range_in[] = {{"Start", 0}, {"End", 0}, {"Step", 0}};

#define INTS(name) {name, {.type = CT_ATTR_INTS, .u.ints = {NULL, 0}}, false}
static const ct_attr_def shape_attrs[] = {
    {"start", {.type = CT_ATTR_INT, .u.i = 0}, false},
    {"end", {.type = CT_ATTR_INT, .u.i = INT64_MAX}, false},
};
static const ct_attr_def axes_attrs[] = {INTS("axes")};
static const ct_attr_def flatten_attrs[] = {{"axis", {.type = CT_ATTR_INT, .u.i = 1}, false}};
const ct_attr_def ct__ix_exp_attrs[1] = {INTS("shape")};
const ct_attr_def ct__ix_tile_attrs[1] = {INTS("repeat_times")};
static const ct_attr_def cos_attrs[] = {
    INTS("shape"),
    {"value", {.type = CT_ATTR_FLOAT, .u.f = 0}, false},
    {"dtype", {.type = CT_ATTR_INT, .u.i = CT_FLOAT32}, false},
};

#define DEF CT__IX_DEF

static const ct_op_def defs[] = {
    DEF("shape", input_in, 1, ct__slot_out, 1, shape_attrs, 2, shape_infer, CT_OP_PURE_INFER,
        ct__grad_none),
    DEF("size", input_in, 1, ct__slot_out, 1, NULL, 0, size_infer, CT_OP_PURE_INFER,
        ct__grad_none),
    DEF("squeeze", sq_in, 2, ct__slot_out, 1, axes_attrs, 1, squeeze_infer, 0, ct__ix_view_grad),
    DEF("unsqueeze", sq_in, 2, ct__slot_out, 1, axes_attrs, 1, unsqueeze_infer, 0,
        ct__ix_view_grad),
    DEF("flatten", ct__slot_x, 1, ct__slot_out, 1, flatten_attrs, 1, flatten_infer,
        CT_OP_PURE_INFER, ct__ix_view_grad),
    DEF("expand", exp_in, 2, ct__slot_out, 1, ct__ix_exp_attrs, 1, expand_infer, 0,
        ct__ix_grad_generic),
    DEF("tile", tile_in, 2, ct__slot_out, 1, ct__ix_tile_attrs, 1, tile_infer, 0,
        ct__ix_grad_generic),
    {.type = "constant_of_shape", .inputs = cos_in, .n_inputs = 1, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = cos_attrs, .n_attrs = 3, .infer_shape = cos_infer,
     .dtype_attr = "dtype"},
    DEF("range", range_in, 3, ct__slot_out, 1, NULL, 0, range_infer, 0, NULL),
    CT__IX_SLICE_DEFS,
    CT__IX_GRAD_DEFS,
    CT__IX_MISC_DEFS,
};

const ct__def_table ct__index_defs = CT__TABLE(defs);

/* ---- What each op type computes (ct_op_type_doc) --------------------------------------------- */
static const ct__op_doc docs[] = {
    {"shape", "Out is an int64 tensor [end - start] holding Input's extents from dim `start` "
              "(default 0) up to but not including dim `end` (default past the last dim); "
              "negative values count from the end and both are then clamped to [0, rank], as "
              "ONNX's Shape does, so an empty range gives Out [0]. Input may have any dtype; its "
              "values are not read."},
    {"size", "Out is Input's element count as a rank-0 int64 tensor. Input may have any dtype; its "
             "values are not read."},
    {"squeeze", "Out is X without the dims listed in `axes` (negative ones count from the end), "
                "each of which must have extent 1 (a dim listed twice is dropped once, as "
                "onnxruntime does); with an empty list (the default), without "
                "every dim of extent 1. AxesTensor, when wired (int64 or int32, rank 0 or 1, "
                "read on the host at every run, so the op then runs on the CPU), replaces "
                "attribute axes. Out is a view of X's memory (no copy), as reshape's is."},
    {"unsqueeze", "Out is X with dims of extent 1 inserted at the positions listed in `axes`, "
                  "positions in Out, whose rank is X's plus the list's length (negative ones "
                  "count from Out's end; a position listed twice is refused); X's dims keep "
                  "their order. AxesTensor, when wired (int64 or int32, rank 0 or 1, read on the "
                  "host at every run, so the op then runs on the CPU), replaces attribute axes. "
                  "Out is a view of X's memory (no copy), as reshape's is."},
    {"flatten", "Out is X as a matrix: [the product of X's dims before `axis`, the product of the "
                "rest]. axis (default 1) lies in [-rank, rank], negative counting from the end; "
                "0 gives [1, numel]. Out is a view of X's memory (no copy), as reshape's is."},
    {"expand", "Out is X broadcast with the list `shape` by numpy's rules in both directions "
               "(ONNX's Expand): the two are aligned at their last dims, Out has the larger "
               "rank, and each pair of extents must be equal or one of them 1, Out taking the "
               "other; so a shape entry of 1 keeps X's extent. Negative entries are refused. "
               "Shape, when wired (int64 or int32, rank 0 or 1, read on the host at every run, "
               "so the op then runs on the CPU), replaces attribute shape. X may have any dtype; "
               "Out is a copy."},
    {"tile", "Out is X repeated repeat_times[k] times along each dim k, so Out's extent k is "
             "`X.dims[k] repeat_times[k]`; repeat_times needs exactly one count (0 or more) per "
             "dim of X. RepeatTimes, when wired (int64 or int32, rank 0 or 1, read on the host "
             "at every run, so the op then runs on the CPU), replaces attribute repeat_times. X "
             "may have any dtype."},
    {"constant_of_shape", "Out has the dims listed in `shape` (an empty list gives a rank-0 "
                          "tensor), or in ShapeTensor when that is wired (int64 or int32, rank 0 "
                          "or 1, read on the host at every run, so the op then runs on the CPU), "
                          "which then takes precedence; extents must be 0 or more. Every element "
                          "holds `value` (default 0) in dtype `dtype` (a ct_dtype value, float32 "
                          "by default), which also chooses the kernel; for an integer or bool "
                          "dtype the value must be an integer the dtype holds exactly, else the "
                          "op fails."},
    {"range", "Out is the 1-D sequence `Start, Start + Step, Start + 2 Step ...` of the values "
              "before End (exclusive), `ceil((End - Start) / Step)` elements or none when that "
              "is 0 or less, as numpy's arange. Start, End and Step are one-element tensors of "
              "one dtype (Start's chooses the kernel), read on the host when the op runs (so it "
              "runs on the CPU and Out's extent follows their values); a Step of 0 or a NaN is "
              "refused. Integers count exactly; for floats element i is `Start + i Step` "
              "computed in double."},
};

const ct__doc_table ct__index_docs = CT__TABLE(docs);
