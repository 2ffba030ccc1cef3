/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/rules_misc.c: the rules of ONNX's NonMaxSuppression, Unique, Einsum, Det, the window
 * functions (HannWindow, HammingWindow, BlackmanWindow), MelWeightMatrix, DFT and STFT: one op
 * each of corten's misc family (ops/defs/misc_ops.h) or of dft and stft (ops/defs/signal.h),
 * which read ONNX's inputs in ONNX's order; inputs
 * that carry thresholds, sizes or counts are wired as tensors read when the op runs, constant
 * or not. */
#include <string.h>

#include "onnx/onnx_rules.h"

/* A new op of type with ONNX inputs 0 .. n_in - 1 wired to slots[k] (those marked optional may
 * be left out) and output 0 to slot out. */
static ct_op *op_in(ox_cx *c, const char *type, const char *const *slots, size_t n_in,
                    size_t n_required, const char *out) {
  static const size_t first[] = {0, 1, 2, 3, 4, 5, 6, 7}; /* the first n_required (at most 8) */
  return ox_op_wired(c, type, slots, n_in, first, n_required, out);
}

static ct_status non_max_suppression(ox_cx *c) {
  static const char *const in[] = {"Boxes", "Scores", "MaxOutput", "IouThreshold",
                                   "ScoreThreshold"};
  ct_op *op = op_in(c, "non_max_suppression", in, 5, 2, "SelectedIndices");
  if (op == NULL) return ct_last_status();
  int64_t center = ox_int(c, "center_point_box", 0);
  if (center != 0 && center != 1) {
    return ox_unsupported(c, "center_point_box %lld", (long long)center);
  }
  ct_status s = ct_op_set_attr_int(op, "center_point_box", center);
  return s == CT_OK ? ox_push(c, op) : s;
}

/* Unique: without axis over X flattened; outputs indices, inverse_indices, counts optional. */
static ct_status unique(ox_cx *c) {
  static const char *const in[] = {"X"};
  static const char *const out[] = {"Indices", "InverseIndices", "Counts"};
  ct_op *op = op_in(c, "unique", in, 1, 1, "Out");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_attr_bool(op, "sorted", ox_int(c, "sorted", 1) != 0);
  if (s == CT_OK && ox_attr_get(c, "axis") != NULL) {
    s = ct_op_set_attr_bool(op, "flatten", false);
    if (s == CT_OK) s = ct_op_set_attr_int(op, "axis", ox_int(c, "axis", 0));
  }
  for (size_t k = 1; k < 4 && s == CT_OK; k++) {
    if (ox_out(c, k) != NULL) s = ct_op_set_output(op, out[k - 1], ox_out(c, k));
  }
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status einsum(ox_cx *c) {
  size_t n = ox_n_in(c);
  const char *names[16];
  if (n == 0 || n > 16) return ox_unsupported(c, "%zu inputs (1 to 16 are supported)", n);
  for (size_t k = 0; k < n; k++) {
    if ((names[k] = ox_in(c, k)) == NULL) return ox_unsupported(c, "input %zu is left out", k);
  }
  if (ox_out(c, 0) == NULL) return ox_unsupported(c, "output 0 is missing");
  const char *eq = ox_string(c, "equation", NULL);
  if (eq == NULL) return ox_unsupported(c, "no equation");
  ct_op *op = ox_op(c, "einsum");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_inputs(op, "Inputs", names, n);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", ox_out(c, 0));
  if (s == CT_OK) s = ct_op_set_attr_string(op, "equation", eq);
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status det(ox_cx *c) {
  if (ox_in(c, 0) == NULL || ox_out(c, 0) == NULL) {
    return ox_unsupported(c, "the input or the output is missing");
  }
  return ox_unary(c, "det", ox_in(c, 0), ox_out(c, 0));
}

/* The float dtype of attribute output_datatype (float32 by default). */
static ct_status out_dtype(ox_cx *c, ct_op *op) {
  ct_dtype dt = ox_attr_dtype(c, "output_datatype", 1);
  if (dt != CT_FLOAT32 && dt != CT_FLOAT64) {
    return ox_unsupported(c, "output_datatype %lld (float and double are supported)",
                          (long long)ox_int(c, "output_datatype", 1));
  }
  return ct_op_set_attr_int(op, "dtype", (int64_t)dt);
}

static ct_status window(ox_cx *c, const char *kind) {
  static const char *const in[] = {"Size"};
  ct_op *op = op_in(c, "window", in, 1, 1, "Out");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_attr_string(op, "kind", kind);
  if (s == CT_OK) s = ct_op_set_attr_bool(op, "periodic", ox_int(c, "periodic", 1) != 0);
  if (s == CT_OK) s = out_dtype(c, op);
  return s == CT_OK ? ox_push(c, op) : s;
}
static ct_status hann(ox_cx *c) { return window(c, "hann"); }
static ct_status hamming(ox_cx *c) { return window(c, "hamming"); }
static ct_status blackman(ox_cx *c) { return window(c, "blackman"); }

static ct_status mel_weight_matrix(ox_cx *c) {
  static const char *const in[] = {"NumMelBins", "DftLength", "SampleRate", "LowerEdgeHertz",
                                   "UpperEdgeHertz"};
  ct_op *op = op_in(c, "mel_weight_matrix", in, 5, 5, "Out");
  if (op == NULL) return ct_last_status();
  ct_status s = out_dtype(c, op);
  return s == CT_OK ? ox_push(c, op) : s;
}

/* DFT (17): x, dft_length (optional) -> dft with axis, inverse, onesided. */
static ct_status dft(ox_cx *c) {
  static const char *const in[] = {"X", "DftLength"};
  ct_op *op = op_in(c, "dft", in, 2, 1, "Y");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_attr_int(op, "axis", ox_int(c, "axis", 1));
  if (s == CT_OK) s = ct_op_set_attr_int(op, "inverse", ox_int(c, "inverse", 0));
  if (s == CT_OK) s = ct_op_set_attr_int(op, "onesided", ox_int(c, "onesided", 0));
  return s == CT_OK ? ox_push(c, op) : s;
}

/* STFT (17): signal, frame_step, window and frame_length (optional) -> stft with onesided. */
static ct_status stft(ox_cx *c) {
  static const char *const in[] = {"Signal", "FrameStep", "Window", "FrameLength"};
  ct_op *op = op_in(c, "stft", in, 4, 2, "Y");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_attr_int(op, "onesided", ox_int(c, "onesided", 1));
  return s == CT_OK ? ox_push(c, op) : s;
}

static const ox_rule rows[] = {
    {"NonMaxSuppression", 10, non_max_suppression, "non_max_suppression"},
    {"Unique", 11, unique, "unique"},
    {"Einsum", 12, einsum, "einsum"},
    {"Det", 11, det, "det"},
    {"HannWindow", 17, hann, "window"},
    {"HammingWindow", 17, hamming, "window"},
    {"BlackmanWindow", 17, blackman, "window"},
    {"MelWeightMatrix", 17, mel_weight_matrix, "mel_weight_matrix"},
    {"DFT", 17, dft, "dft"},
    {"STFT", 17, stft, "stft"},
};

const ox_rules ox_rules_misc = {rows, sizeof rows / sizeof rows[0]};
