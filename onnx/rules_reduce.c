/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/rules_reduce.c: the rules of ONNX's reductions, arg-extremes, softmax rows and losses
 * (issue 33), onto reduce_sum and softmax where they fit and the reduce_ext family otherwise
 * (ops/defs/reduce_ext.c).
 *
 * Reductions take their axes from attribute `axes` (before opset 13 for ReduceSum, 18 for the
 * others) or from input 1: a constant becomes attribute dim, one computed at run time is wired
 * to the op's Axes input, whose values its infer-shape reads every run. */
#include <stdint.h>
#include <string.h>

#include "onnx/onnx_rules.h"

/* Sets op's input slot to name (skipped when name is NULL) and returns the status chained. */
static ct_status in(ct_status s, ct_op *op, const char *slot, const char *name) {
  return s == CT_OK && name != NULL ? ct_op_set_input(op, slot, name) : s;
}

static ct_status out(ct_status s, ct_op *op, const char *slot, const char *name) {
  return s == CT_OK && name != NULL ? ct_op_set_output(op, slot, name) : s;
}

/* ---- Reductions ------------------------------------------------------------------------------ */

/* The reduction of node input 0 into output 0 by corten type `type` (a reduce_ext type), or by
 * reduce_sum when `type` is "reduce_sum_axes" and the axes are known at load. */
static ct_status reduce(ox_cx *c, const char *type) {
  const char *x = ox_in(c, 0), *o = ox_out(c, 0);
  if (x == NULL || o == NULL) return ox_unsupported(c, "the input or the output is missing");
  bool keep = ox_int(c, "keepdims", 1) != 0, noop = ox_int(c, "noop_with_empty_axes", 0) != 0;
  const int64_t *axes = NULL;
  size_t n = 0;
  const char *axes_in = NULL;
  if (!ox_ints(c, "axes", &axes, &n) && ox_in(c, 1) != NULL && !ox_const_ints(c, 1, &axes, &n)) {
    axes_in = ox_in(c, 1);
  }
  if (axes_in == NULL && n == 0 && noop) return ox_unary(c, "assign", x, o);
  bool sum = strcmp(type, "reduce_sum_axes") == 0;
  ct_op *op = ox_op(c, sum && axes_in == NULL ? "reduce_sum" : type);
  if (op == NULL) return ct_last_status();
  static const int64_t none[1] = {0};
  ct_status s = in(CT_OK, op, "X", x);
  s = in(s, op, "Axes", axes_in);
  s = out(s, op, "Out", o);
  if (s == CT_OK) s = ct_op_set_attr_ints(op, "dim", n > 0 ? axes : none, n);
  if (s == CT_OK) s = ct_op_set_attr_bool(op, "keep_dim", keep);
  if (s == CT_OK && axes_in != NULL) s = ct_op_set_attr_bool(op, "empty_dim_noop", noop);
  return s == CT_OK ? ox_push(c, op) : s;
}

#define REDUCE_RULE(fn, type) \
  static ct_status fn(ox_cx *c) { return reduce(c, type); }
REDUCE_RULE(reduce_sum, "reduce_sum_axes")
REDUCE_RULE(reduce_mean, "reduce_mean")
REDUCE_RULE(reduce_max, "reduce_max")
REDUCE_RULE(reduce_min, "reduce_min")
REDUCE_RULE(reduce_prod, "reduce_prod")
REDUCE_RULE(reduce_l1, "reduce_l1")
REDUCE_RULE(reduce_l2, "reduce_l2")
REDUCE_RULE(reduce_log_sum, "reduce_log_sum")
REDUCE_RULE(reduce_log_sum_exp, "reduce_log_sum_exp")
REDUCE_RULE(reduce_sum_square, "reduce_sum_square")

/* ---- ArgMax, ArgMin ---------------------------------------------------------------------------- */

static ct_status arg(ox_cx *c, bool max) {
  const char *x = ox_in(c, 0), *o = ox_out(c, 0);
  if (x == NULL || o == NULL) return ox_unsupported(c, "the input or the output is missing");
  bool last = ox_int(c, "select_last_index", 0) != 0;
  ct_op *op = ox_op(c, max ? (last ? "arg_max_v2" : "arg_max") : "arg_min");
  if (op == NULL) return ct_last_status();
  ct_status s = in(CT_OK, op, "X", x);
  s = out(s, op, "Out", o);
  if (s == CT_OK) s = ct_op_set_attr_int(op, "axis", ox_int(c, "axis", 0));
  if (s == CT_OK) s = ct_op_set_attr_bool(op, "keepdims", ox_int(c, "keepdims", 1) != 0);
  if (s == CT_OK && (!max || last)) s = ct_op_set_attr_bool(op, "select_last_index", last);
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status arg_max(ox_cx *c) { return arg(c, true); }
static ct_status arg_min(ox_cx *c) { return arg(c, false); }

/* ---- Softmax, LogSoftmax, Hardmax ------------------------------------------------------------- */

/* type along `axis`; coerce: the dims from axis on as one row (before opset 13). Softmax along
 * the last axis alone is corten's softmax. */
static ct_status rows_of(ox_cx *c, const char *type, int64_t axis, bool coerce) {
  const char *x = ox_in(c, 0), *o = ox_out(c, 0);
  if (x == NULL || o == NULL) return ox_unsupported(c, "the input or the output is missing");
  bool plain = strcmp(type, "softmax_v2") == 0 && (!coerce || axis == -1);
  ct_op *op = ox_op(c, plain ? "softmax" : type);
  if (op == NULL) return ct_last_status();
  ct_status s = in(CT_OK, op, "X", x);
  s = out(s, op, "Out", o);
  if (s == CT_OK) s = ct_op_set_attr_int(op, "axis", axis);
  if (s == CT_OK && !plain) s = ct_op_set_attr_bool(op, "coerce_2d", coerce && axis != -1);
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status softmax_1(ox_cx *c) { return rows_of(c, "softmax_v2", ox_int(c, "axis", 1), true); }
static ct_status softmax_13(ox_cx *c) {
  return rows_of(c, "softmax_v2", ox_int(c, "axis", -1), false);
}
static ct_status log_softmax_1(ox_cx *c) {
  return rows_of(c, "log_softmax", ox_int(c, "axis", 1), true);
}
static ct_status log_softmax_13(ox_cx *c) {
  return rows_of(c, "log_softmax", ox_int(c, "axis", -1), false);
}
static ct_status hardmax_1(ox_cx *c) { return rows_of(c, "hardmax", ox_int(c, "axis", 1), true); }
static ct_status hardmax_13(ox_cx *c) {
  return rows_of(c, "hardmax", ox_int(c, "axis", -1), false);
}

/* ---- NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss ------------------------------------- */

/* nll_loss of log-probabilities lp with labels and weights (node inputs 1 and 2) into o. */
static ct_status nll(ox_cx *c, const char *lp, const char *o) {
  const char *label = ox_in(c, 1), *w = ox_in(c, 2);
  if (label == NULL) return ox_unsupported(c, "input labels is missing");
  const char *red = ox_string(c, "reduction", "mean");
  if (red == NULL) return ct_last_status();
  ct_op *op = ox_op(c, "nll_loss");
  if (op == NULL) return ct_last_status();
  ct_status s = in(CT_OK, op, "X", lp);
  s = in(s, op, "Label", label);
  s = in(s, op, "Weight", w);
  s = out(s, op, "Out", o);
  if (s == CT_OK) s = ct_op_set_attr_string(op, "reduction", red);
  /* No ignore_index: no label is ignored, and every one must be a class. */
  if (s == CT_OK) s = ct_op_set_attr_int(op, "ignore_index", ox_int(c, "ignore_index", INT64_MIN));
  return s == CT_OK ? ox_push(c, op) : s;
}

static ct_status nll_loss(ox_cx *c) {
  const char *x = ox_in(c, 0), *o = ox_out(c, 0);
  if (x == NULL || o == NULL) return ox_unsupported(c, "input or output is missing");
  return nll(c, x, o);
}

static ct_status sce_loss(ox_cx *c) {
  const char *x = ox_in(c, 0), *o = ox_out(c, 0), *lp = ox_out(c, 1);
  if (x == NULL || o == NULL) return ox_unsupported(c, "scores or output is missing");
  if (lp == NULL && (lp = ox_tmp(c)) == NULL) return ct_last_status();
  ct_op *op = ox_op(c, "log_softmax");
  if (op == NULL) return ct_last_status();
  ct_status s = in(CT_OK, op, "X", x);
  s = out(s, op, "Out", lp);
  if (s == CT_OK) s = ct_op_set_attr_int(op, "axis", 1);
  if (s == CT_OK) s = ox_push(c, op);
  return s == CT_OK ? nll(c, lp, o) : s;
}

static const ox_rule rows[] = {
    {"ReduceSum", 1, reduce_sum, "reduce_sum, reduce_sum_axes, assign"},
    {"ReduceSum", 13, reduce_sum, "reduce_sum, reduce_sum_axes, assign"},
    {"ReduceMean", 1, reduce_mean, "reduce_mean, assign"},
    {"ReduceMean", 18, reduce_mean, "reduce_mean, assign"},
    {"ReduceMax", 1, reduce_max, "reduce_max, assign"},
    {"ReduceMax", 18, reduce_max, "reduce_max, assign"},
    {"ReduceMin", 1, reduce_min, "reduce_min, assign"},
    {"ReduceMin", 18, reduce_min, "reduce_min, assign"},
    {"ReduceProd", 1, reduce_prod, "reduce_prod, assign"},
    {"ReduceProd", 18, reduce_prod, "reduce_prod, assign"},
    {"ReduceL1", 1, reduce_l1, "reduce_l1, assign"},
    {"ReduceL1", 18, reduce_l1, "reduce_l1, assign"},
    {"ReduceL2", 1, reduce_l2, "reduce_l2, assign"},
    {"ReduceL2", 18, reduce_l2, "reduce_l2, assign"},
    {"ReduceLogSum", 1, reduce_log_sum, "reduce_log_sum, assign"},
    {"ReduceLogSum", 18, reduce_log_sum, "reduce_log_sum, assign"},
    {"ReduceLogSumExp", 1, reduce_log_sum_exp, "reduce_log_sum_exp, assign"},
    {"ReduceLogSumExp", 18, reduce_log_sum_exp, "reduce_log_sum_exp, assign"},
    {"ReduceSumSquare", 1, reduce_sum_square, "reduce_sum_square, assign"},
    {"ReduceSumSquare", 18, reduce_sum_square, "reduce_sum_square, assign"},
    {"ArgMax", 1, arg_max, "arg_max, arg_max_v2"},
    {"ArgMin", 1, arg_min, "arg_min"},
    {"Softmax", 1, softmax_1, "softmax, softmax_v2"},
    {"Softmax", 13, softmax_13, "softmax"},
    {"LogSoftmax", 1, log_softmax_1, "log_softmax"},
    {"LogSoftmax", 13, log_softmax_13, "log_softmax"},
    {"Hardmax", 1, hardmax_1, "hardmax"},
    {"Hardmax", 13, hardmax_13, "hardmax"},
    {"NegativeLogLikelihoodLoss", 12, nll_loss, "nll_loss"},
    {"SoftmaxCrossEntropyLoss", 12, sce_loss, "log_softmax, nll_loss"},
};

const ox_rules ox_rules_reduce = {rows, sizeof rows / sizeof rows[0]};
