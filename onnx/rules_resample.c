/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/rules_resample.c: the rules of ONNX's Resize, Upsample, GridSample and RoiAlign
 * (corten's resample family, ops/defs/resample.h).
 *
 * Resize's scales, sizes and roi are inputs that may be computed at run time and may be empty
 * tensors meaning "absent": a constant one becomes the attribute of the same name (an empty one
 * is left out), any other is wired to the op's slot, which the op reads on every run, so one
 * loaded model runs at any input size. Upsample (7: scales an attribute; 9: an input) and
 * Resize-10 take the asymmetric coordinates of those opsets: linear as such, nearest as the
 * floor of x / scale (onnxruntime's rule for upsampling), refused by the op at run time for a
 * scale below 1, where runtimes differ. */
#include <string.h>

#include "onnx/onnx_rules.h"

static bool one_of(const char *v, const char *const *names, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (strcmp(v, names[i]) == 0) return true;
  }
  return false;
}

/* A string attribute checked against the values corten takes; NULL after recording the node as
 * unsupported. */
static const char *str_in(ox_cx *c, const char *name, const char *dflt, const char *const *ok,
                          size_t n) {
  const char *v = ox_string(c, name, dflt);
  if (v == NULL) return NULL;
  if (!one_of(v, ok, n)) {
    ox_unsupported(c, "attribute %s \"%s\"", name, v);
    return NULL;
  }
  return v;
}

/* The resize op reading X and writing Y, its mode set. */
static ct_op *resize_op(ox_cx *c, const char *mode) {
  const char *x = ox_in(c, 0), *y = ox_out(c, 0);
  if (x == NULL || y == NULL) {
    ox_unsupported(c, "the input or the output is missing");
    return NULL;
  }
  ct_op *op = ox_op(c, "resize");
  if (op == NULL) return NULL;
  if (ct_op_set_input(op, "X", x) != CT_OK || ct_op_set_output(op, "Out", y) != CT_OK ||
      ct_op_set_attr_string(op, "mode", mode) != CT_OK) {
    return NULL;
  }
  return op;
}

/* Input k (when present) as float attribute `attr` when constant, else wired to `slot`. */
static ct_status floats_or_input(ox_cx *c, ct_op *op, size_t k, const char *attr,
                                 const char *slot) {
  const double *v;
  size_t n;
  if (ox_in(c, k) == NULL) return CT_OK;
  if (ox_const_floats(c, k, &v, &n)) return n ? ct_op_set_attr_floats(op, attr, v, n) : CT_OK;
  if (ox_is_const(c, k)) return ox_unsupported(c, "input %zu is a constant but not of floats", k);
  return ct_op_set_input(op, slot, ox_in(c, k));
}

static ct_status ints_or_input(ox_cx *c, ct_op *op, size_t k, const char *attr,
                               const char *slot) {
  const int64_t *v;
  size_t n;
  if (ox_in(c, k) == NULL) return CT_OK;
  if (ox_const_ints(c, k, &v, &n)) return n ? ct_op_set_attr_ints(op, attr, v, n) : CT_OK;
  if (ox_is_const(c, k)) return ox_unsupported(c, "input %zu is a constant but not of integers", k);
  return ct_op_set_input(op, slot, ox_in(c, k));
}

/* Upsample (7, 9) and Resize (10): modes nearest and linear ("bilinear" too before 9),
 * asymmetric coordinates; scales the attribute (7) or input 1. */
static ct_status upsample_any(ox_cx *c, bool scales_attr) {
  static const char *const modes[] = {"nearest", "linear", "bilinear"};
  const char *mode = str_in(c, "mode", "nearest", modes, 3);
  if (mode == NULL) return CT_ERR_UNSUPPORTED;
  bool nearest = strcmp(mode, "nearest") == 0;
  ct_op *op = resize_op(c, nearest ? "nearest" : "linear");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_attr_string(op, "coordinate_transformation_mode", "asymmetric");
  if (s == CT_OK) s = ct_op_set_attr_string(op, "nearest_mode", "floor");
  if (s == CT_OK) s = ct_op_set_attr_bool(op, "upsample_only", nearest);
  if (s == CT_OK && scales_attr) {
    const ox_attr *a = ox_attr_get(c, "scales");
    if (a == NULL || a->type != OX_ATTR_FLOATS || a->n_floats == 0) {
      return ox_unsupported(c, "no attribute scales");
    }
    double v[CT_MAX_RANK];
    if (a->n_floats > CT_MAX_RANK) return ox_unsupported(c, "more scales than CT_MAX_RANK");
    for (size_t i = 0; i < a->n_floats; i++) v[i] = a->floats[i];
    s = ct_op_set_attr_floats(op, "scales", v, a->n_floats);
  } else if (s == CT_OK) {
    if (ox_in(c, 1) == NULL) return ox_unsupported(c, "no input scales");
    s = floats_or_input(c, op, 1, "scales", "Scales");
  }
  return s == CT_OK ? ox_push(c, op) : s;
}
static ct_status upsample_7(ox_cx *c) { return upsample_any(c, true); }
static ct_status upsample_9(ox_cx *c) { return upsample_any(c, false); }

/* Resize (11, 13): X, roi, scales, sizes; every mode and coordinate transformation. */
static ct_status resize_11(ox_cx *c) {
  static const char *const modes[] = {"nearest", "linear", "cubic"};
  static const char *const ctms[] = {"half_pixel",    "pytorch_half_pixel",   "align_corners",
                                     "asymmetric",    "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  const char *mode = str_in(c, "mode", "nearest", modes, 3);
  const char *ctm = mode ? str_in(c, "coordinate_transformation_mode", "half_pixel", ctms, 6)
                         : NULL;
  const char *nm = ctm ? str_in(c, "nearest_mode", "round_prefer_floor", nms, 4) : NULL;
  if (nm == NULL) return CT_ERR_UNSUPPORTED;
  if (ox_opset(c) >= 13 && strcmp(ctm, "tf_half_pixel_for_nn") == 0) {
    return ox_unsupported(c, "coordinate_transformation_mode tf_half_pixel_for_nn after opset 11");
  }
  ct_op *op = resize_op(c, mode);
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_attr_string(op, "coordinate_transformation_mode", ctm);
  if (s == CT_OK) s = ct_op_set_attr_string(op, "nearest_mode", nm);
  if (s == CT_OK) {
    s = ct_op_set_attr_float(op, "cubic_coeff_a", ox_float(c, "cubic_coeff_a", -0.75));
  }
  if (s == CT_OK) {
    s = ct_op_set_attr_bool(op, "exclude_outside", ox_int(c, "exclude_outside", 0) != 0);
  }
  if (s == CT_OK) {
    s = ct_op_set_attr_float(op, "extrapolation_value", ox_float(c, "extrapolation_value", 0));
  }
  if (s == CT_OK && strcmp(ctm, "tf_crop_and_resize") == 0 && ox_in(c, 1) != NULL) {
    s = ct_op_set_input(op, "Roi", ox_in(c, 1));
  }
  if (s == CT_OK) s = floats_or_input(c, op, 2, "scales", "Scales");
  if (s == CT_OK) s = ints_or_input(c, op, 3, "sizes", "Sizes");
  return s == CT_OK ? ox_push(c, op) : s;
}

/* GridSample (16): 4-D X and Grid. */
static ct_status grid_sample(ox_cx *c) {
  static const char *const modes[] = {"bilinear", "nearest", "bicubic"};
  static const char *const pads[] = {"zeros", "border", "reflection"};
  const char *x = ox_in(c, 0), *g = ox_in(c, 1), *y = ox_out(c, 0);
  if (x == NULL || g == NULL || y == NULL) {
    return ox_unsupported(c, "an input or the output is missing");
  }
  const char *mode = str_in(c, "mode", "bilinear", modes, 3);
  const char *pad = mode ? str_in(c, "padding_mode", "zeros", pads, 3) : NULL;
  if (pad == NULL) return CT_ERR_UNSUPPORTED;
  ct_op *op = ox_op(c, "grid_sample");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_input(op, "Grid", g);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", y);
  if (s == CT_OK) s = ct_op_set_attr_string(op, "mode", mode);
  if (s == CT_OK) s = ct_op_set_attr_string(op, "padding_mode", pad);
  if (s == CT_OK) s = ct_op_set_attr_bool(op, "align_corners", ox_int(c, "align_corners", 0) != 0);
  return s == CT_OK ? ox_push(c, op) : s;
}

/* RoiAlign (10: no half-pixel shift; 16: coordinate_transformation_mode, half_pixel default). */
static ct_status roi_align_any(ox_cx *c, bool v16) {
  static const char *const modes[] = {"avg", "max"};
  static const char *const ctms[] = {"half_pixel", "output_half_pixel"};
  const char *x = ox_in(c, 0), *r = ox_in(c, 1), *b = ox_in(c, 2), *y = ox_out(c, 0);
  if (x == NULL || r == NULL || b == NULL || y == NULL) {
    return ox_unsupported(c, "an input or the output is missing");
  }
  const char *mode = str_in(c, "mode", "avg", modes, 2);
  const char *ctm = !mode ? NULL
                    : v16 ? str_in(c, "coordinate_transformation_mode", "half_pixel", ctms, 2)
                          : "output_half_pixel";
  if (ctm == NULL) return CT_ERR_UNSUPPORTED;
  ct_op *op = ox_op(c, "roi_align");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_input(op, "ROIs", r);
  if (s == CT_OK) s = ct_op_set_input(op, "BatchIndices", b);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", y);
  if (s == CT_OK) s = ct_op_set_attr_string(op, "mode", mode);
  if (s == CT_OK) s = ct_op_set_attr_int(op, "pooled_height", ox_int(c, "output_height", 1));
  if (s == CT_OK) s = ct_op_set_attr_int(op, "pooled_width", ox_int(c, "output_width", 1));
  if (s == CT_OK) s = ct_op_set_attr_int(op, "sampling_ratio", ox_int(c, "sampling_ratio", 0));
  if (s == CT_OK) s = ct_op_set_attr_float(op, "spatial_scale", ox_float(c, "spatial_scale", 1));
  if (s == CT_OK) s = ct_op_set_attr_bool(op, "aligned", strcmp(ctm, "half_pixel") == 0);
  return s == CT_OK ? ox_push(c, op) : s;
}
static ct_status roi_align_10(ox_cx *c) { return roi_align_any(c, false); }
static ct_status roi_align_16(ox_cx *c) { return roi_align_any(c, true); }

static const ox_rule rows[] = {
    {"Upsample", 7, upsample_7, "resize"},
    {"Upsample", 9, upsample_9, "resize"},
    {"Resize", 10, upsample_9, "resize"},
    {"Resize", 11, resize_11, "resize"},
    {"GridSample", 16, grid_sample, "grid_sample"},
    {"RoiAlign", 10, roi_align_10, "roi_align"},
    {"RoiAlign", 16, roi_align_16, "roi_align"},
};

const ox_rules ox_rules_resample = {rows, sizeof rows / sizeof rows[0]};
