/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/index_misc.c: the shapes of the index family's other op types (listed in the table of
 * ops/defs/index.c through CT__IX_MISC_DEFS) and the makers of the two that are their own
 * gradient's type.
 *
 *   tril_triu        X, Diagonal -> Out: X's lower (lower true) or upper triangle of its last
 *                    two dims, from diagonal `diagonal` (or Diagonal's value) on; zeros elsewhere
 *   cumsum           X, AxisTensor -> Out: running sums along `axis` (exclusive: without the
 *                    element itself; reverse: from the end)
 *   take_along_axis  Input, Index -> Result: Result[.., i, ..] = Input[.., Index[.., i, ..], ..]
 *                    along Axis (ONNX's GatherElements); Result takes Index's dims
 *   put_along_axis   Input, Index, Value -> Result: Input with Value written at Index along Axis
 *                    ("assign"), or added ("add") or multiplied ("mul") in (ScatterElements)
 *   gather_nd        X, Index -> Out: the slices of X that Index's last dim addresses, after
 *                    batch_dims leading dims both share (ONNX's GatherND)
 *   scatter_nd       X, Index, Updates -> Out: X with the addressed slices replaced ("none"),
 *                    added to ("add") or multiplied ("mul") by Updates (ONNX's ScatterND)
 *   one_hot          X, Depth, Values -> Out: Values[1] where X's index falls along a new dim
 *                    `axis` of extent Depth, Values[0] elsewhere (negative indices count from
 *                    the end; others outside [-depth, depth) give a row of Values[0])
 *   depth_to_space   X [N, C, H, W] -> Out [N, C/b^2, H b, W b], mode "DCR" or "CRD"
 *   space_to_depth   X [N, C, H, W] -> Out [N, C b^2, H/b, W/b]
 *   eye_like         X [R, C] -> Out [R, C]: ones on diagonal k, zeros elsewhere, of `dtype`
 *                    (-1: X's)
 *   where_index      Condition -> Out [n, rank] int64: the indices of the n nonzero elements
 *   compress         X, Condition -> Out: the slices of X along `axis` whose Condition is nonzero
 *   reverse_sequence X, SeqLens -> Out: along time_axis, the first SeqLens[b] steps of batch
 *                    entry b (along batch_axis) reversed, the rest kept
 *   top_k_v2         X, K -> Out, Indices: the k largest (or smallest) along `axis`, sorted, ties
 *                    by the lower index first */
#include <string.h>

#include <corten/backward.h>

#include "ops/defs/index.h"

#define OPT CT_SLOT_OPTIONAL
#define INT(name, v) {name, {.type = CT_ATTR_INT, .u.i = (v)}, false}
#define BOOL(name, v) {name, {.type = CT_ATTR_BOOL, .u.b = (v)}, false}
#define STR(name, v) {name, {.type = CT_ATTR_STRING, .u.s = (v)}, false}

const ct_slot_def ct__ix_tri_in[2] = {{"X", 0}, {"Diagonal", OPT}};
const ct_slot_def ct__ix_cumsum_in[2] = {{"X", 0}, {"AxisTensor", OPT}};
const ct_slot_def ct__ix_tal_in[2] = {{"Input", 0}, {"Index", 0}};
const ct_slot_def ct__ix_pal_in[3] = {{"Input", 0}, {"Index", 0}, {"Value", 0}};
const ct_slot_def ct__ix_result[1] = {{"Result", 0}};
const ct_slot_def ct__ix_gnd_in[2] = {{"X", 0}, {"Index", 0}};
const ct_slot_def ct__ix_snd_in[3] = {{"X", 0}, {"Index", 0}, {"Updates", 0}};
const ct_slot_def ct__ix_oh_in[3] = {{"X", 0}, {"Depth", 0}, {"Values", 0}};
const ct_slot_def ct__ix_cond_in[1] = {{"Condition", 0}};
const ct_slot_def ct__ix_compress_in[2] = {{"X", 0}, {"Condition", 0}};
const ct_slot_def ct__ix_rs_in[2] = {{"X", 0}, {"SeqLens", 0}};
const ct_slot_def ct__ix_topk_in[2] = {{"X", 0}, {"K", OPT}};
const ct_slot_def ct__ix_topk_out[2] = {{"Out", 0}, {"Indices", 0}};
const ct_attr_def ct__ix_tri_attrs[2] = {INT("diagonal", 0), BOOL("lower", true)};
const ct_attr_def ct__ix_cumsum_attrs[3] = {INT("axis", 0), BOOL("exclusive", false),
                                            BOOL("reverse", false)};
const ct_attr_def ct__ix_tal_attrs[1] = {INT("Axis", 0)};
const ct_attr_def ct__ix_pal_attrs[2] = {INT("Axis", 0), STR("Reduce", "assign")};
const ct_attr_def ct__ix_gnd_attrs[1] = {INT("batch_dims", 0)};
const ct_attr_def ct__ix_snd_attrs[1] = {STR("reduction", "none")};
const ct_attr_def ct__ix_oh_attrs[1] = {INT("axis", -1)};
const ct_attr_def ct__ix_d2s_attrs[2] = {INT("blocksize", 1), STR("mode", "DCR")};
const ct_attr_def ct__ix_s2d_attrs[1] = {INT("blocksize", 1)};
const ct_attr_def ct__ix_eye_attrs[2] = {INT("k", 0), INT("dtype", -1)};
const ct_attr_def ct__ix_compress_attrs[1] = {INT("axis", 0)};
const ct_attr_def ct__ix_rs_attrs[2] = {INT("batch_axis", 1), INT("time_axis", 0)};
const ct_attr_def ct__ix_topk_attrs[4] = {INT("k", 1), INT("axis", -1), BOOL("largest", true),
                                          BOOL("sorted", true)};

static ct_status same_dims(const ct_kernel_ctx *c) {
  return ct__k_resize(c, 0, 0, ct_kernel_in(c, 0, 0)->dims);
}

/* ---- tril_triu, cumsum ----------------------------------------------------------------------- */

ct_status ct__ix_tri_diag(const ct_kernel_ctx *c, int64_t *k) {
  if (ct_kernel_in(c, 0, 0)->dims.rank < 2) {
    return ct_kernel_fail(c, CT_ERR_SHAPE, "input X variable '%s' has rank %d: tril_triu needs "
                          "rank 2 or more", ct_kernel_in_name(c, 0, 0),
                          ct_kernel_in(c, 0, 0)->dims.rank);
  }
  *k = c->attr[0].u.i;
  return ct_kernel_in_count(c, 1) ? ct__ix_scalar(c, 1, k) : CT_OK;
}

ct_status ct__ix_tri_infer(const ct_kernel_ctx *c) {
  int64_t k;
  ct_status s = ct__ix_tri_diag(c, &k);
  return s == CT_OK ? same_dims(c) : s;
}

ct_status ct__ix_cumsum_axis(const ct_kernel_ctx *c, int *axis) {
  int64_t a = c->attr[0].u.i;
  ct_status s = ct_kernel_in_count(c, 1) ? ct__ix_scalar(c, 1, &a) : CT_OK;
  return s == CT_OK ? ct__k_axis(c, "axis", a, ct_kernel_in(c, 0, 0)->dims.rank, axis) : s;
}

ct_status ct__ix_cumsum_infer(const ct_kernel_ctx *c) {
  int a;
  ct_status s = ct__ix_cumsum_axis(c, &a);
  return s == CT_OK ? same_dims(c) : s;
}

/* Both are linear maps whose adjoint is of their own type: tril_triu keeps the same triangle;
 * cumsum's adjoint runs the other way. */
static ct_status self_grad(ct_grad_ctx *g, bool flip_reverse) {
  const char *dx = ct_grad_input_grad(g, "X", 0);
  if (dx == NULL) return CT_OK;
  const ct_op *fw = ct_grad_forward(g);
  ct_op *op = ct_grad_op_new(g, ct_op_type(fw));
  if (op == NULL) return ct_last_status();
  ct_status s = ct__grad_wire_in(op, "X", ct_grad_output_grad(g, "Out", 0));
  const char *in1 = flip_reverse ? "AxisTensor" : "Diagonal";
  if (s == CT_OK && ct_grad_input_count(g, in1) > 0) {
    s = ct__grad_wire_in(op, in1, ct_grad_input(g, in1, 0));
  }
  if (s == CT_OK) s = ct_op_set_output(op, "Out", dx);
  if (s == CT_OK) s = ct_grad_copy_attrs(g, op);
  if (s == CT_OK && flip_reverse) s = ct_op_set_attr_bool(op, "reverse", !fw->attr[2].u.b);
  return s;
}
ct_status ct__ix_grad_tri(ct_grad_ctx *g) { return self_grad(g, false); }
ct_status ct__ix_grad_cumsum(ct_grad_ctx *g) { return self_grad(g, true); }

/* ---- take_along_axis, put_along_axis --------------------------------------------------------- */

ct_status ct__ix_along_check(const ct_kernel_ctx *c, int *axis) {
  ct_ddim x = ct_kernel_in(c, 0, 0)->dims, ix = ct_kernel_in(c, 1, 0)->dims;
  ct_status s = ct__ix_check_index_dtype(c, 1);
  if (s == CT_OK) s = ct__k_axis(c, "Axis", c->attr[0].u.i, x.rank, axis);
  if (s != CT_OK) return s;
  bool fits = ix.rank == x.rank && x.rank > 0;
  for (int k = 0; fits && k < x.rank; k++) fits = k == *axis || ix.d[k] <= x.d[k];
  if (!fits) {
    char a[CT__DDIM_STR_CAP], b[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input Index variable '%s' %s does not fit input Input variable '%s' "
                          "%s: give the same rank and no larger dim off the axis",
                          ct_kernel_in_name(c, 1, 0), ct_ddim_str(ix, a, sizeof a),
                          ct_kernel_in_name(c, 0, 0), ct_ddim_str(x, b, sizeof b));
  }
  if (c->op->def->n_in > 2) { /* put_along_axis's Value */
    const ct_tensor *v = ct_kernel_in(c, 2, 0);
    s = ct__k_check_dtype(c, 2, 0, ct_kernel_in(c, 0, 0)->dtype);
    if (s == CT_OK && !ct_ddim_equal(v->dims, ix)) {
      return ct_kernel_fail(c, CT_ERR_SHAPE, "input Value variable '%s' must have input Index's "
                            "dims", ct_kernel_in_name(c, 2, 0));
    }
  }
  return s;
}

ct_status ct__ix_tal_infer(const ct_kernel_ctx *c) {
  int a;
  ct_status s = ct__ix_along_check(c, &a);
  return s == CT_OK ? ct__k_resize(c, 0, 0, ct_kernel_in(c, 1, 0)->dims) : s;
}

ct_status ct__ix_pal_infer(const ct_kernel_ctx *c) {
  int a;
  ct_status s = ct__ix_along_check(c, &a);
  return s == CT_OK ? same_dims(c) : s;
}

/* ---- gather_nd, scatter_nd ------------------------------------------------------------------- */

ct_status ct__ix_nd_plan(const ct_kernel_ctx *c, int64_t batch_dims, ct__ix_nd *p) {
  ct_ddim x = ct_kernel_in(c, 0, 0)->dims, ix = ct_kernel_in(c, 1, 0)->dims;
  ct_status s = ct__ix_check_index_dtype(c, 1);
  if (s != CT_OK) return s;
  int64_t m = ix.rank > 0 ? ix.d[ix.rank - 1] : 0;
  bool ok = ix.rank >= 1 && batch_dims >= 0 && batch_dims < ix.rank && m >= 1 &&
            m <= x.rank - batch_dims && ix.rank - 1 + x.rank - batch_dims - m <= CT_MAX_RANK;
  for (int k = 0; ok && k < batch_dims; k++) ok = ix.d[k] == x.d[k];
  if (!ok) {
    char a[CT__DDIM_STR_CAP], b[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input Index variable '%s' %s cannot address input X variable '%s' %s "
                          "with batch_dims %lld: its last dim must be in [1, rank - batch_dims] "
                          "and its batch dims X's",
                          ct_kernel_in_name(c, 1, 0), ct_ddim_str(ix, a, sizeof a),
                          ct_kernel_in_name(c, 0, 0), ct_ddim_str(x, b, sizeof b),
                          (long long)batch_dims);
  }
  p->m = (int)m;
  p->batch = p->per_batch = p->inner = 1;
  p->out.rank = 0;
  for (int k = 0; k < batch_dims; k++) p->batch *= (p->out.d[p->out.rank++] = ix.d[k]);
  for (int k = (int)batch_dims; k < ix.rank - 1; k++) {
    p->per_batch *= (p->out.d[p->out.rank++] = ix.d[k]);
  }
  for (int k = (int)(batch_dims + m); k < x.rank; k++) {
    p->inner *= (p->out.d[p->out.rank++] = x.d[k]);
  }
  p->lead = (int)batch_dims;
  return CT_OK;
}

ct_status ct__ix_gnd_infer(const ct_kernel_ctx *c) {
  ct__ix_nd p;
  ct_status s = ct__ix_nd_plan(c, c->attr[0].u.i, &p);
  return s == CT_OK ? ct__k_resize(c, 0, 0, p.out) : s;
}

ct_status ct__ix_snd_infer(const ct_kernel_ctx *c) {
  ct__ix_nd p;
  ct_status s = ct__ix_nd_plan(c, 0, &p);
  if (s == CT_OK) s = ct__k_check_dtype(c, 2, 0, ct_kernel_in(c, 0, 0)->dtype);
  if (s == CT_OK && !ct_ddim_equal(ct_kernel_in(c, 2, 0)->dims, p.out)) {
    char a[CT__DDIM_STR_CAP], b[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE, "input Updates variable '%s' is %s: give %s (Index's "
                          "dims but the last, then X's addressed slice)",
                          ct_kernel_in_name(c, 2, 0),
                          ct_ddim_str(ct_kernel_in(c, 2, 0)->dims, a, sizeof a),
                          ct_ddim_str(p.out, b, sizeof b));
  }
  return s == CT_OK ? same_dims(c) : s;
}

/* ---- one_hot --------------------------------------------------------------------------------- */

ct_status ct__ix_oh_plan(const ct_kernel_ctx *c, int *axis, int64_t *depth, ct_ddim *out) {
  const ct_tensor *x = ct_kernel_in(c, 0, 0), *d = ct_kernel_in(c, 1, 0);
  const ct_tensor *v = ct_kernel_in(c, 2, 0);
  if (d->numel != 1 || v->numel != 2) {
    return ct_kernel_fail(c, CT_ERR_SHAPE, "input Depth variable '%s' must hold one value and "
                          "input Values variable '%s' two (off, on)", ct_kernel_in_name(c, 1, 0),
                          ct_kernel_in_name(c, 2, 0));
  }
  if (c->place.kind != CT_DEVICE_CPU) {
    return ct_kernel_fail(c, CT_ERR_UNSUPPORTED, "input Depth is read on the host");
  }
  double dv = ct__ix_load(ct__k_in_data(d), d->dtype, 0);
  if (!(dv >= 0 && dv < 1e15) || x->dims.rank + 1 > CT_MAX_RANK) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE, "input Depth variable '%s' is %g: give a "
                          "count of 0 or more", ct_kernel_in_name(c, 1, 0), dv);
  }
  *depth = (int64_t)dv;
  int r = x->dims.rank + 1;
  int64_t a = c->attr[0].u.i;
  if (a < -r || a >= r) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE, "attribute 'axis' is %lld: use one in [%d, %d)",
                          (long long)a, -r, r);
  }
  *axis = (int)(a < 0 ? a + r : a);
  out->rank = r;
  for (int k = 0, j = 0; k < r; k++) out->d[k] = k == *axis ? *depth : x->dims.d[j++];
  return CT_OK;
}

ct_status ct__ix_oh_infer(const ct_kernel_ctx *c) {
  int a;
  int64_t d;
  ct_ddim out;
  ct_status s = ct__ix_oh_plan(c, &a, &d, &out);
  return s == CT_OK ? ct__k_resize(c, 0, 0, out) : s;
}

/* ---- depth_to_space, space_to_depth, eye_like ------------------------------------------------ */

ct_status ct__ix_block_dims(const ct_kernel_ctx *c, bool to_space, ct_ddim *out) {
  ct_ddim x = ct_kernel_in(c, 0, 0)->dims;
  int64_t b = c->attr[0].u.i;
  if (to_space) {
    const char *m = c->attr[1].u.s;
    if (strcmp(m, "DCR") != 0 && strcmp(m, "CRD") != 0) {
      return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT, "attribute 'mode' is \"%s\": use \"DCR\" "
                            "or \"CRD\"", m);
    }
  }
  bool ok = x.rank == 4 && b >= 1 && b <= 65536;
  if (ok && to_space) ok = x.d[1] % (b * b) == 0;
  if (ok && !to_space) ok = x.d[2] % b == 0 && x.d[3] % b == 0;
  if (!ok) {
    char sx[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE, "input X variable '%s' %s does not fit blocksize %lld: "
                          "give [N, C, H, W] with %s divisible", ct_kernel_in_name(c, 0, 0),
                          ct_ddim_str(x, sx, sizeof sx), (long long)b,
                          to_space ? "C by blocksize^2" : "H and W by blocksize");
  }
  *out = to_space ? CT_DIMS(x.d[0], x.d[1] / (b * b), x.d[2] * b, x.d[3] * b)
                  : CT_DIMS(x.d[0], x.d[1] * b * b, x.d[2] / b, x.d[3] / b);
  return CT_OK;
}

ct_status ct__ix_d2s_infer(const ct_kernel_ctx *c) {
  ct_ddim d;
  ct_status s = ct__ix_block_dims(c, true, &d);
  return s == CT_OK ? ct__k_resize(c, 0, 0, d) : s;
}

ct_status ct__ix_s2d_infer(const ct_kernel_ctx *c) {
  ct_ddim d;
  ct_status s = ct__ix_block_dims(c, false, &d);
  return s == CT_OK ? ct__k_resize(c, 0, 0, d) : s;
}

ct_status ct__ix_eye_infer(const ct_kernel_ctx *c) {
  if (ct_kernel_in(c, 0, 0)->dims.rank != 2) {
    return ct_kernel_fail(c, CT_ERR_SHAPE, "input X variable '%s' has rank %d: eye_like needs "
                          "rank 2", ct_kernel_in_name(c, 0, 0), ct_kernel_in(c, 0, 0)->dims.rank);
  }
  ct_dtype dt;
  ct_status s = c->attr[1].u.i == -1 ? CT_OK : ct__k_attr_dtype(c, 1, &dt);
  return s == CT_OK ? same_dims(c) : s;
}

/* ---- reverse_sequence, top_k_v2 -------------------------------------------------------------- */

ct_status ct__ix_rs_check(const ct_kernel_ctx *c) {
  ct_ddim x = ct_kernel_in(c, 0, 0)->dims;
  int64_t b = c->attr[0].u.i, t = c->attr[1].u.i;
  const ct_tensor *l = ct_kernel_in(c, 1, 0);
  ct_status s = ct__ix_check_index_dtype(c, 1);
  if (s != CT_OK) return s;
  if (x.rank < 2 || (b != 0 && b != 1) || (t != 0 && t != 1) || b == t ||
      l->dims.rank != 1 || l->dims.d[0] != x.d[b]) {
    return ct_kernel_fail(c, CT_ERR_SHAPE, "reverse_sequence needs X of rank 2 or more, "
                          "batch_axis and time_axis 0 and 1 in some order, and SeqLens of one "
                          "length per batch entry (input X variable '%s')",
                          ct_kernel_in_name(c, 0, 0));
  }
  const void *p = ct__k_in_data(l);
  for (int64_t i = 0; i < l->numel; i++) {
    int64_t v = ct__ix_index(p, l->dtype, i);
    if (v < 0 || v > x.d[t]) {
      return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE, "input SeqLens variable '%s' holds %lld at "
                            "%lld: give lengths in [0, %lld]", ct_kernel_in_name(c, 1, 0),
                            (long long)v, (long long)i, (long long)x.d[t]);
    }
  }
  return CT_OK;
}

ct_status ct__ix_rs_infer(const ct_kernel_ctx *c) {
  ct_status s = ct__ix_rs_check(c);
  return s == CT_OK ? same_dims(c) : s;
}

ct_status ct__ix_topk_plan(const ct_kernel_ctx *c, int *axis, int64_t *k, ct_ddim *out) {
  ct_ddim x = ct_kernel_in(c, 0, 0)->dims;
  *k = c->attr[0].u.i;
  ct_status s = ct_kernel_in_count(c, 1) ? ct__ix_scalar(c, 1, k) : CT_OK;
  if (s == CT_OK) s = ct__k_axis(c, "axis", c->attr[1].u.i, x.rank, axis);
  if (s != CT_OK) return s;
  if (x.rank == 0 || *k < 0 || *k > x.d[*axis]) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE, "k is %lld but input X variable '%s' has %lld "
                          "along the axis: give k in [0, that]", (long long)*k,
                          ct_kernel_in_name(c, 0, 0), (long long)(x.rank ? x.d[*axis] : 0));
  }
  *out = x;
  out->d[*axis] = *k;
  return CT_OK;
}

ct_status ct__ix_topk_infer(const ct_kernel_ctx *c) {
  int a;
  int64_t k;
  ct_ddim d;
  ct_status s = ct__ix_topk_plan(c, &a, &k, &d);
  if (s == CT_OK) s = ct__k_resize(c, 0, 0, d);
  return s == CT_OK ? ct__k_resize(c, 1, 0, d) : s;
}

/* ---- What each op type computes (ct_op_type_doc) --------------------------------------------- */
static const ct__op_doc docs[] = {
    {"tril_triu", "Out keeps, in each matrix of X's last two dims (X has rank 2 or more; the "
                  "leading dims are a batch), the elements on and below diagonal k when `lower` "
                  "(the default: `j - i <= k` for row i, column j) or on and above it otherwise "
                  "(`j - i >= k`), and is 0 elsewhere (ONNX's Trilu). k is attribute diagonal "
                  "(default 0, the main diagonal; positive above it) or, when Diagonal is wired, "
                  "its one int64 or int32 value, read on the host at every run. Out has X's dims "
                  "and dtype."},
    {"cumsum", "Out has X's dims; each element is the sum of X's elements along `axis` (default 0, "
               "negative counting from the end) up to and including it, or with `exclusive` up "
               "to but not including it (the first is 0), running from the end instead with "
               "`reverse` (ONNX's CumSum). The axis is attribute axis or, when AxisTensor is "
               "wired, its one int64 or int32 value, read on the host at every run. The sums "
               "accumulate in X's dtype in order along the axis."},
    {"take_along_axis", "`Result[..., i, ...] = Input[..., Index[..., i, ...], ...]` along `Axis` "
                        "(default 0): each element of Index picks the element of Input at the "
                        "same position but with its value as the coordinate along the axis "
                        "(ONNX's GatherElements). Index is int64 or int32 with Input's rank and "
                        "no dim off the axis larger than Input's (no broadcasting); its values "
                        "lie in [-d, d), negative counting from the end, others refused when the "
                        "op runs. Result has Index's dims and Input's dtype."},
    {"put_along_axis", "Result is Input with each element of Value applied at the position "
                       "take_along_axis would read for the same element of Index along `Axis` "
                       "(default 0; ONNX's ScatterElements): `Reduce` \"assign\" (the default; "
                       "\"none\" is the same) stores it, \"add\", \"mul\", \"max\" and \"min\" "
                       "combine it with the element there (those need an int32, int64, float32 "
                       "or float64 Input). Index is int64 or int32 with Input's rank, no dim off "
                       "the axis larger than Input's and values in [-d, d) (negative from the "
                       "end); Value has Index's dims and Input's dtype. Elements apply in "
                       "Index's row-major order, so at a repeated position the last assignment "
                       "wins and the reductions accumulate; Result has Input's dims."},
    {"gather_nd", "Each tuple of m values along Index's last dim (int64 or int32, negative "
                  "counting from the end, out of range refused when the op runs) picks the slice "
                  "`X[b..., i1 ... im, :]`, after `batch_dims` (default 0) leading dims that "
                  "Index and X share (ONNX's GatherND). m lies in [1, rank(X) - batch_dims]; "
                  "Out's dims are Index's dims but the last, then X's dims from batch_dims + m "
                  "on; Out has X's dtype."},
    {"scatter_nd", "Out is X with the slices that Index's tuples address (as gather_nd's with no "
                   "batch dims: Index [..., m], m in [1, rank(X)], int64 or int32, negative "
                   "counting from the end, out of range refused) replaced by Updates under "
                   "`reduction` \"none\" (the default) or combined with them by \"add\", "
                   "\"mul\", \"max\" or \"min\" (those need an int32, int64, float32 or float64 "
                   "X; ONNX's ScatterND). Updates has Index's dims but the last, then X's dims "
                   "from m on, and X's dtype; Out has X's dims. Tuples apply in order, so under "
                   "\"none\" a repeated tuple's last update wins."},
    {"one_hot", "Out is X's dims with a new dim of extent Depth inserted at `axis` (default -1, "
                "the last; in [-(rank + 1), rank]): an element is Values[1] where its coordinate "
                "along the new dim equals X's value at its other coordinates, Values[0] "
                "elsewhere (ONNX's OneHot). X holds the indices in any numeric dtype: negative "
                "ones count from the end, others outside [-Depth, Depth) give a row of "
                "Values[0]. Depth is one value of 0 or more, read on the host when the op runs "
                "(Out's dims follow it); Values holds [off, on] and gives Out its dtype."},
    {"depth_to_space", "Moves blocks of channels into space (ONNX's DepthToSpace): X [N, C, H, W] "
                       "gives Out [N, C / b^2, H b, W b] for b = blocksize (default 1; C must be "
                       "a multiple of b^2), with `Out[n, c, h b + i, w b + j] = X[n, (i b + j) C "
                       "/ b^2 + c, h, w]` in mode \"DCR\" (the default) or `X[n, c b^2 + i b + "
                       "j, h, w]` in mode \"CRD\". Any dtype; a copy."},
    {"space_to_depth", "Moves blocks of space into channels, the inverse of depth_to_space's DCR "
                       "mode (ONNX's SpaceToDepth): X [N, C, H, W] gives Out [N, C b^2, H / b, W "
                       "/ b] for b = blocksize (default 1; H and W must be multiples of b), with "
                       "`Out[n, (i b + j) C + c, h, w] = X[n, c, h b + i, w b + j]`. Any dtype; "
                       "a copy."},
    {"eye_like", "Out has X's dims [R, C] (X must have rank 2; its values are not read) and holds "
                 "1 at row i, column i + k for `k` (default 0, the main diagonal; positive above "
                 "it) and 0 elsewhere, in dtype `dtype` (a ct_dtype value; -1, the default, "
                 "takes X's), as ONNX's EyeLike does."},
    {"where_index", "Out [n, rank] int64 lists the coordinates of the n nonzero elements of "
                    "Condition (any dtype; NaN counts as nonzero), one row each in row-major "
                    "order, as numpy's argwhere (ONNX's NonZero is its transpose). Out's dims "
                    "follow the values, so they are set when the op runs, not by infer-shape."},
    {"compress", "Out keeps, in order, the slices of X along `axis` (default 0, negative counting "
                 "from the end) whose entry in Condition is nonzero (ONNX's Compress with an "
                 "axis): Condition is 1-D of any dtype and no longer than X's extent along the "
                 "axis, and slices past its end are dropped. Out's extent along the axis is the "
                 "count of nonzero entries, set when the op runs, not by infer-shape."},
    {"reverse_sequence", "For each batch entry b along `batch_axis`, the first SeqLens[b] steps "
                         "along `time_axis` are reversed and the rest kept: `Out[b, t] = X[b, "
                         "SeqLens[b] - 1 - t]` for t < SeqLens[b], else X[b, t] (ONNX's "
                         "ReverseSequence). batch_axis (default 1) and time_axis (default 0) "
                         "must be 0 and 1 in some order, and X has rank 2 or more (later dims "
                         "ride along); SeqLens is int64 or int32 [batch] with values from 0 to "
                         "the time axis's extent. Out has X's dims and dtype."},
    {"top_k_v2", "Out holds the k largest elements of X along `axis` (default -1), or with "
                 "`largest` false the k smallest, sorted from the most extreme on, equal values "
                 "in index order; Indices (int64) holds their positions along the axis. Both "
                 "have X's dims with extent k along the axis. k is attribute k (default 1) or, "
                 "when K is wired, its one int64 or int32 value, read on the host at every run, "
                 "and lies in [0, the axis's extent]. The `sorted` attribute is not read (the "
                 "results are always sorted), and a NaN in X is refused."},
};

const ct__doc_table ct__index_misc_docs = CT__TABLE(docs);
