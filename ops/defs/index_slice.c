/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/index_slice.c: the shapes and plans of the index family's ops that pick parts of a
 * tensor: strided_slice, gather, split and pad (their types are listed in ops/defs/index.c).
 *
 *   strided_slice  Input, StartsTensor, EndsTensor, AxesTensor, StridesTensor -> Out: along
 *                  each listed axis (all of starts' length from 0 when `axes` is empty) the
 *                  elements start, start + stride ... before end, clamped as ONNX's Slice does
 *                  (negative starts and ends count from the end; a negative stride walks back)
 *   gather         X, Index -> Out: numpy's take along `axis`: Out is X's dims before the axis,
 *                  then Index's dims, then X's dims after it; negative indices count from the end
 *   split          X, SectionsTensor -> Out (many): X cut along `axis` into pieces of the listed
 *                  extents (one -1 takes the rest); with no sections, into as many pieces as Out
 *                  has, each ceil(d / n) but the last (ONNX's Split)
 *   pad            X, Paddings, PadValue -> Out: paddings [before0, after0, before1 ...] added
 *                  around each dim (negative ones crop) in mode "constant" (pad_value, or the
 *                  one value of PadValue), "reflect", "edge" or "wrap" */
#include <string.h>

#include "ops/defs/index.h"

/* ---- strided_slice --------------------------------------------------------------------------- */

ct_status ct__ix_slice_plan_make(const ct_kernel_ctx *c, ct__ix_slice_plan *p) {
  int64_t st[CT_MAX_RANK], en[CT_MAX_RANK], ax[CT_MAX_RANK], sp[CT_MAX_RANK];
  size_t ns, ne, na, np;
  ct_status s = ct__ix_ints(c, CT__IX_SL_STARTS, CT__IX_SL_STARTS_ATTR, st, &ns, CT_MAX_RANK);
  if (s == CT_OK) s = ct__ix_ints(c, CT__IX_SL_ENDS, CT__IX_SL_ENDS_ATTR, en, &ne, CT_MAX_RANK);
  if (s == CT_OK) s = ct__ix_ints(c, CT__IX_SL_AXES, CT__IX_SL_AXES_ATTR, ax, &na, CT_MAX_RANK);
  if (s == CT_OK) {
    s = ct__ix_ints(c, CT__IX_SL_STRIDES, CT__IX_SL_STRIDES_ATTR, sp, &np, CT_MAX_RANK);
  }
  if (s != CT_OK) return s;
  ct_ddim x = ct_kernel_in(c, CT__IX_SL_INPUT, 0)->dims;
  if (ne != ns || (na != 0 && na != ns) || (np != 0 && np != ns)) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "starts has %zu values, ends %zu, axes %zu and strides %zu: give "
                          "starts and ends alike, axes and strides empty or alike",
                          ns, ne, na, np);
  }
  p->out = x;
  for (int k = 0; k < x.rank; k++) {
    p->start[k] = 0;
    p->step[k] = 1;
  }
  bool seen[CT_MAX_RANK] = {false};
  for (size_t i = 0; i < ns; i++) {
    int a;
    s = ct__k_axis(c, "axes", na ? ax[i] : (int64_t)i, x.rank, &a);
    if (s != CT_OK) return s;
    if (x.rank == 0 || seen[a]) {
      return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                            "axes lists dim %d twice or input Input variable '%s' is a scalar: "
                            "slice each dim once",
                            a, ct_kernel_in_name(c, CT__IX_SL_INPUT, 0));
    }
    seen[a] = true;
    int64_t n = x.d[a], t = np ? sp[i] : 1, b = st[i], e = en[i], len;
    if (t == 0) {
      return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                            "strides entry %zu is 0: give a nonzero step", i);
    }
    if (b < 0) b += n;
    if (e < 0) e += n;
    if (t > 0) {
      b = b < 0 ? 0 : b > n ? n : b;
      e = e < 0 ? 0 : e > n ? n : e;
      len = e > b ? (int64_t)(((uint64_t)(e - b) + (uint64_t)t - 1) / (uint64_t)t) : 0;
    } else {
      b = b < 0 ? 0 : b > n - 1 ? n - 1 : b;
      e = e < -1 ? -1 : e > n - 1 ? n - 1 : e;
      uint64_t m = (uint64_t)0 - (uint64_t)t; /* -t without overflow at INT64_MIN */
      len = n > 0 && b > e ? (int64_t)(((uint64_t)(b - e) + m - 1) / m) : 0;
    }
    p->start[a] = len > 0 ? b : 0;
    p->step[a] = t;
    p->out.d[a] = len;
  }
  return CT_OK;
}

ct_status ct__ix_slice_infer(const ct_kernel_ctx *c) {
  ct__ix_slice_plan p;
  ct_status s = ct__ix_slice_plan_make(c, &p);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, p.out) : s;
}

/* ---- gather ---------------------------------------------------------------------------------- */

ct_status ct__ix_gather_plan_make(const ct_kernel_ctx *c, ct__ix_gather_plan *p) {
  ct_ddim x = ct_kernel_in(c, CT__IX_GA_X, 0)->dims, ix = ct_kernel_in(c, CT__IX_GA_INDEX, 0)->dims;
  ct_status s = ct__ix_check_index_dtype(c, CT__IX_GA_INDEX);
  if (s != CT_OK) return s;
  if (x.rank == 0) {
    return ct_kernel_fail(c, CT_ERR_SHAPE, "input X variable '%s' is a scalar: gather needs "
                          "rank 1 or more", ct_kernel_in_name(c, CT__IX_GA_X, 0));
  }
  int a;
  s = ct__k_axis(c, "axis", c->attr[CT__IX_GA_AXIS].u.i, x.rank, &a);
  if (s != CT_OK) return s;
  if (x.rank - 1 + ix.rank > CT_MAX_RANK) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE, "Out would have rank %d, more than "
                          "CT_MAX_RANK (%d)", x.rank - 1 + ix.rank, CT_MAX_RANK);
  }
  p->outer = p->inner = 1;
  p->out.rank = 0;
  for (int k = 0; k < a; k++) p->outer *= (p->out.d[p->out.rank++] = x.d[k]);
  for (int k = 0; k < ix.rank; k++) p->out.d[p->out.rank++] = ix.d[k];
  for (int k = a + 1; k < x.rank; k++) p->inner *= (p->out.d[p->out.rank++] = x.d[k]);
  p->n = x.d[a];
  p->n_index = ct_ddim_numel(ix);
  return CT_OK;
}

ct_status ct__ix_gather_check(const ct_kernel_ctx *c, const ct__ix_gather_plan *p) {
  const ct_tensor *t = ct_kernel_in(c, CT__IX_GA_INDEX, 0);
  const void *d = ct__k_in_data(t);
  for (int64_t i = 0; i < p->n_index; i++) {
    int64_t v = ct__ix_index(d, t->dtype, i);
    if (v < -p->n || v >= p->n) {
      return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                            "input Index variable '%s' holds %lld at position %lld: give an "
                            "index in [%lld, %lld) along the axis",
                            ct_kernel_in_name(c, CT__IX_GA_INDEX, 0), (long long)v, (long long)i,
                            (long long)-p->n, (long long)p->n);
    }
  }
  return CT_OK;
}

ct_status ct__ix_gather_infer(const ct_kernel_ctx *c) {
  ct__ix_gather_plan p;
  ct_status s = ct__ix_gather_plan_make(c, &p);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, p.out) : s;
}

/* ---- split ----------------------------------------------------------------------------------- */

ct_status ct__ix_split_plan_make(const ct_kernel_ctx *c, int64_t *len, size_t cap,
                                 ct__ix_split_plan *p) {
  ct_ddim x = ct_kernel_in(c, CT__IX_SPLIT_X, 0)->dims;
  size_t n_out = ct_kernel_out_count(c, CT__OUT), n;
  int64_t sec[64];
  ct_status s = ct__k_axis(c, "axis", c->attr[CT__IX_SPLIT_AXIS].u.i, x.rank, &p->axis);
  if (s == CT_OK) {
    s = ct__ix_ints(c, CT__IX_SPLIT_SECTIONS, CT__IX_SPLIT_SECTIONS_ATTR, sec, &n, 64);
  }
  if (s != CT_OK) return s;
  if (x.rank == 0) {
    return ct_kernel_fail(c, CT_ERR_SHAPE, "input X variable '%s' is a scalar: split needs rank "
                          "1 or more", ct_kernel_in_name(c, CT__IX_SPLIT_X, 0));
  }
  int64_t d = x.d[p->axis];
  if (n_out > cap) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE, "%zu outputs Out: at most %zu", n_out, cap);
  }
  p->n = n_out;
  p->len = len;
  if (n == 0) {
    int64_t each = (d + (int64_t)n_out - 1) / (int64_t)n_out, left = d;
    for (size_t i = 0; i < n_out; i++) {
      len[i] = left < each ? left : each;
      left -= len[i];
    }
    return CT_OK;
  }
  if (n != n_out) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "sections has %zu values but output Out has %zu variables: give one "
                          "extent per output",
                          n, n_out);
  }
  int64_t sum = 0, infer = -1;
  for (size_t i = 0; i < n; i++) {
    if (sec[i] < -1 || (sec[i] == -1 && infer >= 0)) {
      return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                            "sections entry %zu is %lld: give extents of 0 or more and at most "
                            "one -1",
                            i, (long long)sec[i]);
    }
    if (sec[i] == -1) infer = (int64_t)i;
    else sum += sec[i];
    len[i] = sec[i];
  }
  if (infer >= 0 && sum <= d) len[infer] = d - sum;
  else if (sum != d) {
    char sd[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "sections add up to %lld but input X variable '%s' %s has %lld along "
                          "axis %d: make them add up",
                          (long long)sum, ct_kernel_in_name(c, CT__IX_SPLIT_X, 0),
                          ct_ddim_str(x, sd, sizeof sd), (long long)d, p->axis);
  }
  return CT_OK;
}

ct_status ct__ix_split_infer(const ct_kernel_ctx *c) {
  int64_t len[64];
  ct__ix_split_plan p;
  ct_status s = ct__ix_split_plan_make(c, len, 64, &p);
  ct_ddim d = ct_kernel_in(c, CT__IX_SPLIT_X, 0)->dims;
  for (size_t i = 0; s == CT_OK && i < p.n; i++) {
    d.d[p.axis] = len[i];
    s = ct__k_resize(c, CT__OUT, i, d);
  }
  return s;
}

/* ---- pad ------------------------------------------------------------------------------------- */

ct_status ct__ix_pad_plan_make(const ct_kernel_ctx *c, ct_ddim x, ct__ix_pad_plan *p) {
  int64_t pd[2 * CT_MAX_RANK];
  size_t n;
  ct_status s =
      ct__ix_ints(c, CT__IX_PAD_PADDINGS, CT__IX_PAD_PADDINGS_ATTR, pd, &n, 2 * CT_MAX_RANK);
  if (s != CT_OK) return s;
  const char *mode = c->attr[CT__IX_PAD_MODE].u.s;
  static const char *const modes[] = {"constant", "reflect", "edge", "wrap"};
  p->mode = -1;
  for (int m = 0; m < 4; m++) {
    if (strcmp(mode, modes[m]) == 0) p->mode = m;
  }
  if (p->mode < 0) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute 'mode' is \"%s\": use \"constant\", \"reflect\", \"edge\" "
                          "or \"wrap\"",
                          mode);
  }
  if (n != 2 * (size_t)x.rank) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "paddings has %zu values but input X variable '%s' has rank %d: give "
                          "a before and an after for each dim",
                          n, ct_kernel_in_name(c, CT__IX_PAD_X, 0), x.rank);
  }
  p->out = x;
  for (int k = 0; k < x.rank; k++) {
    p->before[k] = pd[2 * k];
    p->after[k] = pd[2 * k + 1];
    int64_t o;
    if (__builtin_add_overflow(x.d[k], p->before[k], &o) ||
        __builtin_add_overflow(o, p->after[k], &o) || o < 0) {
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "paddings %lld and %lld of dim %d (extent %lld) leave no extent: "
                            "crop at most the dim",
                            (long long)p->before[k], (long long)p->after[k], k,
                            (long long)x.d[k]);
    }
    if (p->mode != CT__IX_PAD_CONSTANT && x.d[k] == 0 && o > 0) {
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "dim %d of input X variable '%s' is empty: mode \"%s\" has nothing "
                            "to repeat",
                            k, ct_kernel_in_name(c, CT__IX_PAD_X, 0), mode);
    }
    p->out.d[k] = o;
  }
  return CT_OK;
}

int64_t ct__ix_pad_src(int mode, int64_t i, int64_t n) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case CT__IX_PAD_REFLECT: {
      if (n == 1) return 0;
      int64_t per = 2 * (n - 1), m = i % per;
      if (m < 0) m += per;
      return m < n ? m : per - m;
    }
    case CT__IX_PAD_EDGE:
      return i < 0 ? 0 : n - 1;
    case CT__IX_PAD_WRAP: {
      int64_t m = i % n;
      return m < 0 ? m + n : m;
    }
    default:
      return -1;
  }
}

ct_status ct__ix_pad_infer(const ct_kernel_ctx *c) {
  ct__ix_pad_plan p;
  ct_status s = ct__ix_pad_plan_make(c, ct_kernel_in(c, CT__IX_PAD_X, 0)->dims, &p);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, p.out) : s;
}

/* ---- Slots and attributes -------------------------------------------------------------------- */

#define OPT CT_SLOT_OPTIONAL
#define INTS(name) {name, {.type = CT_ATTR_INTS, .u.ints = {NULL, 0}}, false}
const ct_slot_def ct__ix_slice_in[5] = {{"Input", 0}, {"StartsTensor", OPT}, {"EndsTensor", OPT},
                                        {"AxesTensor", OPT}, {"StridesTensor", OPT}};
const ct_slot_def ct__ix_gather_in[2] = {{"X", 0}, {"Index", 0}};
const ct_slot_def ct__ix_split_in[2] = {{"X", 0}, {"SectionsTensor", OPT}};
const ct_slot_def ct__ix_split_out[1] = {{"Out", CT_SLOT_MANY}};
const ct_slot_def ct__ix_pad_in[3] = {{"X", 0}, {"Paddings", OPT}, {"PadValue", OPT}};
const ct_attr_def ct__ix_slice_attrs[4] = {INTS("axes"), INTS("starts"), INTS("ends"),
                                           INTS("strides")};
const ct_attr_def ct__ix_gather_attrs[1] = {{"axis", {.type = CT_ATTR_INT, .u.i = 0}, false}};
const ct_attr_def ct__ix_split_attrs[2] = {{"axis", {.type = CT_ATTR_INT, .u.i = 0}, false},
                                           INTS("sections")};
const ct_attr_def ct__ix_pad_attrs[3] = {
    INTS("paddings"),
    {"pad_value", {.type = CT_ATTR_FLOAT, .u.f = 0}, false},
    {"mode", {.type = CT_ATTR_STRING, .u.s = "constant"}, false},
};

/* ---- What each op type computes (ct_op_type_doc) --------------------------------------------- */
static const ct__op_doc docs[] = {
    {"strided_slice", "Out takes, along each dim listed in `axes`, the elements `starts[i]`, "
                      "`starts[i] + strides[i]` ... before `ends[i]`, and every other dim whole "
                      "(ONNX's Slice; a copy). starts and ends have one entry per listed dim; an "
                      "empty axes means dims 0, 1 ... in order and an empty strides step 1; a "
                      "dim listed twice or a step of 0 is refused. Negative starts and ends "
                      "count from the end, then are clamped to the dim (with a negative step, "
                      "which walks backwards, to [-1, d - 1] for ends), so bounds past either "
                      "end such as INT64_MAX are fine. Each of StartsTensor, EndsTensor, "
                      "AxesTensor and StridesTensor, when wired (int64 or int32, rank 0 or 1, "
                      "read on the host at every run, so the op then runs on the CPU), replaces "
                      "the attribute of the same meaning."},
    {"gather", "numpy's take along `axis` (default 0, negative counting from the end): `Out[a..., "
               "i..., b...] = X[a..., Index[i...], b...]`, so Out's dims are X's dims before the "
               "axis, then Index's dims, then X's dims after it (ONNX's Gather). X has rank 1 or "
               "more and any dtype; Index is int64 or int32 of any rank, negative values "
               "counting from the end; a value outside [-d, d) is refused when the op runs."},
    {"split", "X is cut along `axis` (default 0, negative counting from the end) into consecutive "
              "pieces, one per Out variable (at most 64), each keeping X's other dims and dtype. "
              "With `sections` (or SectionsTensor, when wired (int64 or int32, rank 0 or 1, read "
              "on the host at every run, so the op then runs on the CPU), which replaces it) "
              "piece i has extent sections[i]: one entry per Out variable, at most one -1 taking "
              "what the others leave, and they must add up to X's extent. Without sections every "
              "piece has ceil(d / n) but the last ones, which get what is left, possibly 0 "
              "(ONNX's Split)."},
    {"pad", "Out is X with paddings[2k] elements added before dim k and paddings[2k + 1] after it "
            "(before and after for each dim in turn, not ONNX's order of all the befores first); "
            "negative counts crop instead, and paddings holds one such pair per dim of X. mode "
            "\"constant\" (the default) fills with pad_value (default 0; for an integer X a "
            "whole number the dtype holds) or, when PadValue is wired, with its one element of "
            "X's dtype; \"reflect\" mirrors X without repeating the edge element, \"edge\" "
            "repeats the edge element and \"wrap\" continues X periodically; those three cannot "
            "grow an empty dim. Paddings, when wired (int64 or int32, rank 0 or 1, read on the "
            "host at every run, so the op then runs on the CPU), replaces attribute paddings."},
};

const ct__doc_table ct__index_slice_docs = CT__TABLE(docs);
