/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/rules_index.c: the rules of ONNX's shape, slicing, gathering and padding ops whose
 * shapes, axes, pads or counts may come as inputs computed at run time. An input that is a
 * constant at load becomes the corten op's attribute; one computed at run time is wired to the
 * op's optional tensor slot, read on every run (ops/defs/index.h). */
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_conv.h"
#include "onnx/onnx_rules.h"

/* A new op of type reading x (slot xs) and writing o (slot os). */
static ct_op *op_io(ox_cx *c, const char *type, const char *xs, const char *x, const char *os,
                    const char *o) {
  ct_op *op = ox_op(c, type);
  if (op == NULL) return NULL;
  if (ct_op_set_input(op, xs, x) != CT_OK || ct_op_set_output(op, os, o) != CT_OK) return NULL;
  return op;
}

/* ONNX input k (when present) as ints attribute `attr` when constant, else wired to `slot`. */
static ct_status ints_or_input(ox_cx *c, ct_op *op, size_t k, const char *attr, const char *slot) {
  const int64_t *v;
  size_t n;
  if (ox_in(c, k) == NULL) return CT_OK;
  if (ox_const_ints(c, k, &v, &n)) return ct_op_set_attr_ints(op, attr, v, n);
  if (ox_is_const(c, k)) return ox_unsupported(c, "input %zu is a constant but not of integers", k);
  return ct_op_set_input(op, slot, ox_in(c, k));
}

static ct_status need(ox_cx *c, const char *x, const char *o) {
  if (x == NULL || o == NULL) return ox_unsupported(c, "the input or the output is missing");
  return CT_OK;
}

#define OP_IO(type, xs, os)                                         \
  const char *x = ox_in(c, 0), *o = ox_out(c, 0);                   \
  ct_status s = need(c, x, o);                                      \
  if (s != CT_OK) return s;                                         \
  ct_op *op = op_io(c, type, xs, x, os, o);                         \
  if (op == NULL) return ct_last_status()

/* Shape (1; start and end from 15). */
static ct_status shape(ox_cx *c) {
  OP_IO("shape", "Input", "Out");
  s = ct_op_set_attr_int(op, "start", ox_int(c, "start", 0));
  if (s == CT_OK) s = ct_op_set_attr_int(op, "end", ox_int(c, "end", INT64_MAX));
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status size(ox_cx *c) {
  OP_IO("size", "Input", "Out");
  return ox_push(c, op);
}

/* Squeeze and Unsqueeze: axes an attribute before opset 13, input 1 from it. */
static ct_status squeeze_like(ox_cx *c, const char *type, bool from_input) {
  OP_IO(type, "X", "Out");
  if (from_input) {
    s = ints_or_input(c, op, 1, "axes", "AxesTensor");
  } else {
    const int64_t *v;
    size_t n;
    if (ox_ints(c, "axes", &v, &n)) s = ct_op_set_attr_ints(op, "axes", v, n);
  }
  return s == CT_OK ? ox_push(c, op) : s;
}
static ct_status squeeze_1(ox_cx *c) { return squeeze_like(c, "squeeze", false); }
static ct_status squeeze_13(ox_cx *c) { return squeeze_like(c, "squeeze", true); }
static ct_status unsqueeze_1(ox_cx *c) {
  if (ox_attr_get(c, "axes") == NULL) return ox_unsupported(c, "no axes");
  return squeeze_like(c, "unsqueeze", false);
}
static ct_status unsqueeze_13(ox_cx *c) {
  if (ox_in(c, 1) == NULL) return ox_unsupported(c, "no input axes");
  return squeeze_like(c, "unsqueeze", true);
}

/* Slice: starts, ends, axes as attributes (1); starts, ends, axes, steps as inputs (10). */
static ct_status slice_1(ox_cx *c) {
  OP_IO("strided_slice", "Input", "Out");
  static const char *const names[] = {"starts", "ends", "axes"};
  for (size_t i = 0; i < 3 && s == CT_OK; i++) {
    const int64_t *v;
    size_t n;
    if (ox_ints(c, names[i], &v, &n)) s = ct_op_set_attr_ints(op, names[i], v, n);
    else if (i < 2) s = ox_unsupported(c, "no %s", names[i]);
  }
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status slice_10(ox_cx *c) {
  OP_IO("strided_slice", "Input", "Out");
  if (ox_in(c, 1) == NULL || ox_in(c, 2) == NULL) return ox_unsupported(c, "no starts or ends");
  s = ints_or_input(c, op, 1, "starts", "StartsTensor");
  if (s == CT_OK) s = ints_or_input(c, op, 2, "ends", "EndsTensor");
  if (s == CT_OK) s = ints_or_input(c, op, 3, "axes", "AxesTensor");
  if (s == CT_OK) s = ints_or_input(c, op, 4, "strides", "StridesTensor");
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status expand(ox_cx *c) {
  OP_IO("expand", "X", "Out");
  if (ox_in(c, 1) == NULL) return ox_unsupported(c, "no input shape");
  s = ints_or_input(c, op, 1, "shape", "Shape");
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status tile(ox_cx *c) {
  OP_IO("tile", "X", "Out");
  if (ox_in(c, 1) == NULL) return ox_unsupported(c, "no input repeats");
  s = ints_or_input(c, op, 1, "repeat_times", "RepeatTimes");
  return s == CT_OK ? ox_push(c, op) : s;
}

/* ConstantOfShape (9): the value attribute's one element (float32 0 when absent). */
static ct_status constant_of_shape(ox_cx *c) {
  const char *o = ox_out(c, 0);
  if (o == NULL || ox_in(c, 0) == NULL) {
    return ox_unsupported(c, "the input or the output is missing");
  }
  ct_op *op = ox_op(c, "constant_of_shape");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_output(op, "Out", o);
  double v = 0;
  ct_dtype dt = CT_FLOAT32;
  const ox_attr *a = ox_attr_get(c, "value");
  if (a != NULL) {
    ct_tensor *t = NULL;
    if (a->type != OX_ATTR_TENSOR ||
        ox_tensor_make(&a->t, "value", NULL, NULL, NULL, &t) != CT_OK) {
      ct_tensor_free(t);
      return ox_unsupported(c, "attribute value is no tensor corten can hold");
    }
    dt = ct_tensor_dtype(t);
    if (ct_tensor_numel(t) != 1) {
      ct_tensor_free(t);
      return ox_unsupported(c, "attribute value holds other than one element");
    }
    const void *p = ct_tensor_data(t, dt);
    switch (dt) {
      case CT_BOOL: v = *(const bool *)p; break;
      case CT_INT8: v = *(const int8_t *)p; break;
      case CT_UINT8: v = *(const uint8_t *)p; break;
      case CT_INT16: v = *(const int16_t *)p; break;
      case CT_INT32: v = *(const int32_t *)p; break;
      case CT_INT64: {
        int64_t i = *(const int64_t *)p;
        v = (double)i;
        if (i > ((int64_t)1 << 53) || i < -((int64_t)1 << 53)) {
          ct_tensor_free(t);
          return ox_unsupported(c, "an int64 value beyond 2^53");
        }
        break;
      }
      case CT_FLOAT32: v = *(const float *)p; break;
      case CT_FLOAT64: v = *(const double *)p; break;
      default:
        ct_tensor_free(t);
        return ox_unsupported(c, "attribute value of %s", ct_dtype_name(dt));
    }
    ct_tensor_free(t);
  }
  if (s == CT_OK) s = ct_op_set_attr_float(op, "value", v);
  if (s == CT_OK) s = ct_op_set_attr_int(op, "dtype", (int64_t)dt);
  if (s == CT_OK) s = ints_or_input(c, op, 0, "shape", "ShapeTensor");
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status range(ox_cx *c) {
  const char *o = ox_out(c, 0);
  static const char *const slots[] = {"Start", "End", "Step"};
  if (o == NULL) return ox_unsupported(c, "the output is missing");
  ct_op *op = ox_op(c, "range");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_output(op, "Out", o);
  for (size_t k = 0; k < 3 && s == CT_OK; k++) {
    if (ox_in(c, k) == NULL) return ox_unsupported(c, "input %zu is missing", k);
    s = ct_op_set_input(op, slots[k], ox_in(c, k));
  }
  return s == CT_OK ? ox_push(c, op) : s;
}

/* Split: `split` an attribute (2) or input 1 (13); without it, as many equal pieces as outputs
 * (num_outputs from 18 says the same count; the last piece may be smaller). */
static ct_status split_any(ox_cx *c, bool from_input) {
  const char *x = ox_in(c, 0);
  size_t n = ox_n_out(c);
  const char *names[64];
  if (x == NULL || n == 0) return ox_unsupported(c, "the input or the outputs are missing");
  if (n > 64) return ox_unsupported(c, "more than 64 outputs");
  for (size_t i = 0; i < n; i++) {
    names[i] = ox_out(c, i);
    if (names[i] == NULL) return ox_unsupported(c, "output %zu is left out", i);
  }
  ct_op *op = ox_op(c, "split");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_outputs(op, "Out", names, n);
  if (s == CT_OK) s = ct_op_set_attr_int(op, "axis", ox_int(c, "axis", 0));
  if (s == CT_OK && from_input) {
    s = ints_or_input(c, op, 1, "sections", "SectionsTensor");
  } else if (s == CT_OK) {
    const int64_t *v;
    size_t k;
    if (ox_ints(c, "split", &v, &k)) s = ct_op_set_attr_ints(op, "sections", v, k);
  }
  int64_t num = ox_int(c, "num_outputs", (int64_t)n);
  if (s == CT_OK && num != (int64_t)n) {
    return ox_unsupported(c, "num_outputs other than the outputs' count");
  }
  return s == CT_OK ? ox_push(c, op) : s;
}
static ct_status split_2(ox_cx *c) { return split_any(c, false); }
static ct_status split_13(ox_cx *c) { return split_any(c, true); }

/* Pad: ONNX lists pads as [begin of each axis, then end of each]; corten's paddings pair them
 * per dim. Constant pads are reordered here; run-time pads through reshape [2, r], transpose
 * and reshape [2r], all ops with attributes. */
static ct_status pad_mode(ox_cx *c, ct_op *op) {
  const char *mode = ox_string(c, "mode", "constant");
  if (strcmp(mode, "constant") != 0 && strcmp(mode, "reflect") != 0 &&
      strcmp(mode, "edge") != 0 && strcmp(mode, "wrap") != 0) {
    return ox_unsupported(c, "mode \"%s\"", mode);
  }
  return ct_op_set_attr_string(op, "mode", mode);
}

static ct_status pad_pairs(ox_cx *c, ct_op *op, const int64_t *v, size_t n) {
  int64_t p[2 * CT_MAX_RANK];
  if (n % 2 != 0 || n > 2 * CT_MAX_RANK) return ox_unsupported(c, "pads of %zu values", n);
  size_t r = n / 2;
  for (size_t i = 0; i < r; i++) {
    p[2 * i] = v[i];
    p[2 * i + 1] = v[r + i];
  }
  return ct_op_set_attr_ints(op, "paddings", p, n);
}

static ct_status pad_2(ox_cx *c) {
  OP_IO("pad", "X", "Out");
  const int64_t *v;
  size_t n;
  if (!ox_ints(c, "pads", &v, &n)) return ox_unsupported(c, "no pads");
  s = pad_pairs(c, op, v, n);
  if (s == CT_OK) s = pad_mode(c, op);
  if (s == CT_OK) s = ct_op_set_attr_float(op, "pad_value", ox_float(c, "value", 0));
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status pad_11(ox_cx *c) {
  OP_IO("pad", "X", "Out");
  const int64_t *v;
  size_t n;
  if (ox_in(c, 1) == NULL) return ox_unsupported(c, "no input pads");
  s = pad_mode(c, op);
  if (s == CT_OK && ox_in(c, 3) != NULL) {
    return ox_unsupported(c, "input axes (the input's rank is not known at load)");
  }
  if (s == CT_OK && ox_const_ints(c, 1, &v, &n)) {
    s = pad_pairs(c, op, v, n);
  } else if (s == CT_OK) {
    /* [b0 .. b(r-1), e0 .. e(r-1)] -> [b0, e0, b1, e1 ...] at run time. */
    const char *t1 = ox_tmp(c), *t2 = ox_tmp(c), *t3 = ox_tmp(c);
    if (t1 == NULL || t2 == NULL || t3 == NULL) return CT_ERR_OUT_OF_MEMORY;
    static const int64_t two[] = {2, -1}, perm[] = {1, 0}, flat[] = {-1};
    ct_op *r1 = op_io(c, "reshape", "X", ox_in(c, 1), "Out", t1);
    ct_op *tr = r1 ? op_io(c, "transpose", "X", t1, "Out", t2) : NULL;
    ct_op *r2 = tr ? op_io(c, "reshape", "X", t2, "Out", t3) : NULL;
    if (r2 == NULL) return ct_last_status();
    s = ct_op_set_attr_ints(r1, "shape", two, 2);
    if (s == CT_OK) s = ct_op_set_attr_ints(tr, "axis", perm, 2);
    if (s == CT_OK) s = ct_op_set_attr_ints(r2, "shape", flat, 1);
    if (s == CT_OK) s = ox_push(c, r1);
    if (s == CT_OK) s = ox_push(c, tr);
    if (s == CT_OK) s = ox_push(c, r2);
    if (s == CT_OK) s = ct_op_set_input(op, "Paddings", t3);
  }
  if (s == CT_OK && ox_in(c, 2) != NULL) {
    const double *cv;
    size_t k;
    if (ox_const_any(c, 2, &cv, &k) && k == 1) s = ct_op_set_attr_float(op, "pad_value", cv[0]);
    else s = ct_op_set_input(op, "PadValue", ox_in(c, 2));
  }
  return s == CT_OK ? ox_push(c, op) : s;
}


/* ---- The other ops --------------------------------------------------------------------------- */

/* The op's inputs: ONNX input k (all present) wired to slots[k]; outputs likewise. */
static ct_op *op_wired(ox_cx *c, const char *type, const char *const *in, size_t n_in,
                       const char *const *out, size_t n_out) {
  for (size_t k = 0; k < n_in; k++) {
    if (ox_in(c, k) == NULL) {
      ox_unsupported(c, "input %zu is missing", k);
      return NULL;
    }
  }
  for (size_t k = 0; k < n_out; k++) {
    if (ox_out(c, k) == NULL) {
      ox_unsupported(c, "output %zu is missing", k);
      return NULL;
    }
  }
  ct_op *op = ox_op(c, type);
  if (op == NULL) return NULL;
  for (size_t k = 0; k < n_in; k++) {
    if (ct_op_set_input(op, in[k], ox_in(c, k)) != CT_OK) return NULL;
  }
  for (size_t k = 0; k < n_out; k++) {
    if (ct_op_set_output(op, out[k], ox_out(c, k)) != CT_OK) return NULL;
  }
  return op;
}

static const char *const s_x[] = {"X"}, *const s_out[] = {"Out"}, *const s_result[] = {"Result"};

/* An optional scalar input k: an int attribute when constant, else wired to slot. */
static ct_status int_or_input(ox_cx *c, ct_op *op, size_t k, const char *attr, const char *slot) {
  const int64_t *v;
  size_t n;
  if (ox_in(c, k) == NULL) return CT_OK;
  if (ox_const_ints(c, k, &v, &n)) {
    if (n != 1) return ox_unsupported(c, "input %zu holds %zu values", k, n);
    return ct_op_set_attr_int(op, attr, v[0]);
  }
  return ct_op_set_input(op, slot, ox_in(c, k));
}

static ct_status trilu(ox_cx *c) {
  ct_op *op = op_wired(c, "tril_triu", s_x, 1, s_out, 1);
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_attr_bool(op, "lower", ox_int(c, "upper", 1) == 0);
  if (s == CT_OK) s = int_or_input(c, op, 1, "diagonal", "Diagonal");
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status cumsum(ox_cx *c) {
  ct_op *op = op_wired(c, "cumsum", s_x, 1, s_out, 1);
  if (op == NULL) return ct_last_status();
  if (ox_in(c, 1) == NULL) return ox_unsupported(c, "no input axis");
  ct_status s = int_or_input(c, op, 1, "axis", "AxisTensor");
  if (s == CT_OK) s = ct_op_set_attr_bool(op, "exclusive", ox_int(c, "exclusive", 0) != 0);
  if (s == CT_OK) s = ct_op_set_attr_bool(op, "reverse", ox_int(c, "reverse", 0) != 0);
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status gather_elements(ox_cx *c) {
  static const char *const in[] = {"Input", "Index"};
  ct_op *op = op_wired(c, "take_along_axis", in, 2, s_result, 1);
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_attr_int(op, "Axis", ox_int(c, "axis", 0));
  return s == CT_OK ? ox_push(c, op) : s;
}

/* ScatterElements (and the older Scatter): reduction "none" is corten's "assign". */
static ct_status scatter_elements(ox_cx *c) {
  static const char *const in[] = {"Input", "Index", "Value"};
  ct_op *op = op_wired(c, "put_along_axis", in, 3, s_result, 1);
  if (op == NULL) return ct_last_status();
  const char *r = ox_string(c, "reduction", "none");
  ct_status s = ct_op_set_attr_int(op, "Axis", ox_int(c, "axis", 0));
  if (s == CT_OK) s = ct_op_set_attr_string(op, "Reduce", strcmp(r, "none") == 0 ? "assign" : r);
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status gather_nd(ox_cx *c) {
  static const char *const in[] = {"X", "Index"};
  ct_op *op = op_wired(c, "gather_nd", in, 2, s_out, 1);
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_attr_int(op, "batch_dims", ox_int(c, "batch_dims", 0));
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status scatter_nd(ox_cx *c) {
  static const char *const in[] = {"X", "Index", "Updates"};
  ct_op *op = op_wired(c, "scatter_nd", in, 3, s_out, 1);
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_attr_string(op, "reduction", ox_string(c, "reduction", "none"));
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status one_hot(ox_cx *c) {
  static const char *const in[] = {"X", "Depth", "Values"};
  ct_op *op = op_wired(c, "one_hot", in, 3, s_out, 1);
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_attr_int(op, "axis", ox_int(c, "axis", -1));
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status depth_to_space(ox_cx *c) {
  ct_op *op = op_wired(c, "depth_to_space", s_x, 1, s_out, 1);
  if (op == NULL) return ct_last_status();
  if (ox_attr_get(c, "blocksize") == NULL) return ox_unsupported(c, "no blocksize");
  ct_status s = ct_op_set_attr_int(op, "blocksize", ox_int(c, "blocksize", 1));
  if (s == CT_OK) s = ct_op_set_attr_string(op, "mode", ox_string(c, "mode", "DCR"));
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status space_to_depth(ox_cx *c) {
  ct_op *op = op_wired(c, "space_to_depth", s_x, 1, s_out, 1);
  if (op == NULL) return ct_last_status();
  if (ox_attr_get(c, "blocksize") == NULL) return ox_unsupported(c, "no blocksize");
  ct_status s = ct_op_set_attr_int(op, "blocksize", ox_int(c, "blocksize", 1));
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status eye_like(ox_cx *c) {
  ct_op *op = op_wired(c, "eye_like", s_x, 1, s_out, 1);
  if (op == NULL) return ct_last_status();
  int64_t dt = -1;
  if (ox_attr_get(c, "dtype") != NULL) {
    ct_dtype d = ox_attr_dtype(c, "dtype", 0);
    if (d == CT_DTYPE_UNDEFINED) {
      return ox_unsupported(c, "dtype %s", ox_type_name((int32_t)ox_int(c, "dtype", 0)));
    }
    dt = (int64_t)d;
  }
  ct_status s = ct_op_set_attr_int(op, "k", ox_int(c, "k", 0));
  if (s == CT_OK) s = ct_op_set_attr_int(op, "dtype", dt);
  return s == CT_OK ? ox_push(c, op) : s;
}

/* NonZero: where_index gives [n, rank]; ONNX wants [rank, n]. */
static ct_status nonzero(ox_cx *c) {
  const char *x = ox_in(c, 0), *o = ox_out(c, 0), *t = NULL;
  ct_status s = need(c, x, o);
  if (s == CT_OK && (t = ox_tmp(c)) == NULL) s = CT_ERR_OUT_OF_MEMORY;
  if (s != CT_OK) return s;
  static const int64_t perm[] = {1, 0};
  ct_op *w = op_io(c, "where_index", "Condition", x, "Out", t);
  ct_op *tr = w ? op_io(c, "transpose", "X", t, "Out", o) : NULL;
  if (tr == NULL) return ct_last_status();
  s = ct_op_set_attr_ints(tr, "axis", perm, 2);
  if (s == CT_OK) s = ox_push(c, w);
  return s == CT_OK ? ox_push(c, tr) : s;
}

/* Compress: without an axis, over X flattened (a reshape to [-1] first). */
static ct_status compress(ox_cx *c) {
  const char *x = ox_in(c, 0), *cond = ox_in(c, 1), *o = ox_out(c, 0);
  if (x == NULL || cond == NULL || o == NULL) {
    return ox_unsupported(c, "an input or the output is missing");
  }
  ct_status s = CT_OK;
  int64_t axis = ox_int(c, "axis", 0);
  if (ox_attr_get(c, "axis") == NULL) {
    static const int64_t flat[] = {-1};
    const char *t = ox_tmp(c);
    if (t == NULL) return CT_ERR_OUT_OF_MEMORY;
    ct_op *r = op_io(c, "reshape", "X", x, "Out", t);
    if (r == NULL) return ct_last_status();
    s = ct_op_set_attr_ints(r, "shape", flat, 1);
    if (s == CT_OK) s = ox_push(c, r);
    x = t;
  }
  ct_op *op = s == CT_OK ? op_io(c, "compress", "X", x, "Out", o) : NULL;
  if (op == NULL) return s != CT_OK ? s : ct_last_status();
  s = ct_op_set_input(op, "Condition", cond);
  if (s == CT_OK) s = ct_op_set_attr_int(op, "axis", axis);
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status reverse_sequence(ox_cx *c) {
  static const char *const in[] = {"X", "SeqLens"};
  ct_op *op = op_wired(c, "reverse_sequence", in, 2, s_out, 1);
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_attr_int(op, "batch_axis", ox_int(c, "batch_axis", 1));
  if (s == CT_OK) s = ct_op_set_attr_int(op, "time_axis", ox_int(c, "time_axis", 0));
  return s == CT_OK ? ox_push(c, op) : s;
}

/* TopK: k an attribute (1), input K (10); largest and sorted (11; unsorted results come sorted,
 * which ONNX allows). */
static ct_status top_k_any(ox_cx *c, bool k_input) {
  static const char *const out[] = {"Out", "Indices"};
  ct_op *op = op_wired(c, "top_k_v2", s_x, 1, out, 2);
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_attr_int(op, "axis", ox_int(c, "axis", -1));
  if (s == CT_OK) s = ct_op_set_attr_bool(op, "largest", ox_int(c, "largest", 1) != 0);
  if (s == CT_OK && k_input) {
    if (ox_in(c, 1) == NULL) return ox_unsupported(c, "no input K");
    s = int_or_input(c, op, 1, "k", "K");
  } else if (s == CT_OK) {
    s = ct_op_set_attr_int(op, "k", ox_int(c, "k", 1));
  }
  return s == CT_OK ? ox_push(c, op) : s;
}
static ct_status top_k_1(ox_cx *c) { return top_k_any(c, false); }
static ct_status top_k_10(ox_cx *c) { return top_k_any(c, true); }

static const ox_rule rows[] = {
    {"Shape", 1, shape, "shape"},
    {"Size", 1, size, "size"},
    {"Squeeze", 1, squeeze_1, "squeeze"},
    {"Squeeze", 13, squeeze_13, "squeeze"},
    {"Unsqueeze", 1, unsqueeze_1, "unsqueeze"},
    {"Unsqueeze", 13, unsqueeze_13, "unsqueeze"},
    {"Slice", 1, slice_1, "strided_slice"},
    {"Slice", 10, slice_10, "strided_slice"},
    {"Expand", 8, expand, "expand"},
    {"Tile", 6, tile, "tile"},
    {"ConstantOfShape", 9, constant_of_shape, "constant_of_shape"},
    {"Range", 11, range, "range"},
    {"Split", 2, split_2, "split"},
    {"Split", 13, split_13, "split"},
    {"Pad", 2, pad_2, "pad"},
    {"Pad", 11, pad_11, "pad, reshape, transpose"},
    {"Trilu", 14, trilu, "tril_triu"},
    {"CumSum", 11, cumsum, "cumsum"},
    {"GatherElements", 11, gather_elements, "take_along_axis"},
    {"Scatter", 9, scatter_elements, "put_along_axis"},
    {"ScatterElements", 11, scatter_elements, "put_along_axis"},
    {"GatherND", 11, gather_nd, "gather_nd"},
    {"ScatterND", 11, scatter_nd, "scatter_nd"},
    {"OneHot", 9, one_hot, "one_hot"},
    {"DepthToSpace", 1, depth_to_space, "depth_to_space"},
    {"SpaceToDepth", 1, space_to_depth, "space_to_depth"},
    {"EyeLike", 9, eye_like, "eye_like"},
    {"NonZero", 9, nonzero, "where_index, transpose"},
    {"Compress", 9, compress, "compress (reshape)"},
    {"ReverseSequence", 10, reverse_sequence, "reverse_sequence"},
    {"TopK", 1, top_k_1, "top_k_v2"},
    {"TopK", 10, top_k_10, "top_k_v2"},
};

const ox_rules ox_rules_index = {rows, sizeof rows / sizeof rows[0]};
