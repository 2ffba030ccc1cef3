/* SPDX-License-Identifier: Apache-2.0 */
/* batch_norm, layer_norm and their gradients: the forward values against naive loops written
 * here (training and inference statistics, NCHW and NHWC, rank 2, with and without Scale and
 * Bias), the running statistics and an in-place update of them, every gradient against central
 * finite differences in float64 (grad_util.h), float32 against float64, and the refusals. */
#include <corten/corten.h>

#include "grad_util.h"

static void assert_close(const double *got, const double *want, int64_t n, double rel,
                         const char *what) {
  for (int64_t i = 0; i < n; i++) {
    ck_assert_msg(fabs(got[i] - want[i]) <= rel * (1 + fabs(want[i])),
                  "%s[%lld] = %.17g, expected %.17g", what, (long long)i, got[i], want[i]);
  }
}

/* ---- batch_norm ------------------------------------------------------------------------------ */

static const char *bn_layout = "NCHW";
static bool bn_test_mode, bn_global;

/* batch_norm(x, scale, bias, mean, var) -> y, mean_out, var_out, saved_mean, saved_var. */
static ct_op *bn_op(const char *mean_out) {
  ct_op *op = new_op("batch_norm");
  const char *in[] = {"X", "x", "Scale", "scale", "Bias", "bias", "Mean", "mean",
                      "Variance", "var"};
  const char *out[] = {"Y", "y", "MeanOut", mean_out, "VarianceOut", "var_out",
                       "SavedMean", "saved_mean", "SavedVariance", "saved_var"};
  for (int k = 0; k < 10; k += 2) {
    ck_assert_int_eq(ct_op_set_input(op, in[k], in[k + 1]), CT_OK);
    ck_assert_int_eq(ct_op_set_output(op, out[k], out[k + 1]), CT_OK);
  }
  ck_assert_int_eq(ct_op_set_attr_string(op, "data_layout", bn_layout), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "is_test", bn_test_mode), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "use_global_stats", bn_global), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "momentum", 0.8), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "epsilon", 1e-3), CT_OK);
  return op;
}

/* Puts x of dims and the [c] vectors scale, bias, mean and var (var positive; c <= 8). */
static void put_bn_inputs(ct_scope *s, ct_ddim xd, int64_t c) {
  put_smooth(s, "x", xd, 0.1);
  put_smooth(s, "scale", CT_DIMS(c), 1.1);
  put_smooth(s, "bias", CT_DIMS(c), 2.3);
  put_smooth(s, "mean", CT_DIMS(c), 0.7);
  double v[8];
  for (int64_t i = 0; i < c; i++) v[i] = 0.5 + 0.25 * (double)i; /* positive variances */
  put(s, "var", CT_FLOAT64, CT_DIMS(c), v);
}

/* The naive batch_norm of s's inputs (X [n, c, hw] for NCHW, [n, hw, c] for NHWC), checked
 * against the op's outputs; global uses mean and var. */
static void check_bn(ct_scope *s, int64_t n, int64_t c, int64_t hw, bool nhwc, bool global) {
  const double *x = var_f64(s, "x"), *sc = var_f64(s, "scale"), *bi = var_f64(s, "bias");
  const double *rm = var_f64(s, "mean"), *rv = var_f64(s, "var");
  double *y = xmalloc(n * c * hw, sizeof *y), sm[8], sv[8], mo[8], vo[8];
  for (int64_t ch = 0; ch < c; ch++) {
    double mu = 0, var = 0;
#define IDX(b, i) (nhwc ? ((b) * hw + (i)) * c + ch : ((b) * c + ch) * hw + (i))
    for (int64_t b = 0; b < n; b++) {
      for (int64_t i = 0; i < hw; i++) mu += x[IDX(b, i)] / (double)(n * hw);
    }
    for (int64_t b = 0; b < n; b++) {
      for (int64_t i = 0; i < hw; i++) {
        var += (x[IDX(b, i)] - mu) * (x[IDX(b, i)] - mu) / (double)(n * hw);
      }
    }
    mo[ch] = global ? rm[ch] : 0.8 * rm[ch] + 0.2 * mu;
    vo[ch] = global ? rv[ch] : 0.8 * rv[ch] + 0.2 * var;
    if (global) {
      mu = rm[ch];
      var = rv[ch];
    }
    sm[ch] = mu;
    sv[ch] = 1 / sqrt(var + 1e-3);
    for (int64_t b = 0; b < n; b++) {
      for (int64_t i = 0; i < hw; i++) {
        y[IDX(b, i)] = sc[ch] * (x[IDX(b, i)] - mu) / sqrt(var + 1e-3) + bi[ch];
      }
    }
#undef IDX
  }
  assert_close(var_f64(s, "y"), y, n * c * hw, 1e-13, "Y");
  assert_close(var_f64(s, "saved_mean"), sm, c, 1e-14, "SavedMean");
  assert_close(var_f64(s, "saved_var"), sv, c, 1e-14, "SavedVariance");
  assert_close(var_f64(s, "mean_out"), mo, c, 1e-14, "MeanOut");
  assert_close(var_f64(s, "var_out"), vo, c, 1e-14, "VarianceOut");
  free(y);
}

static void run_bn_case(ct_ddim xd, int64_t n, int64_t c, int64_t hw, const char *layout,
                        bool test_mode, bool global) {
  bn_layout = layout;
  bn_test_mode = test_mode;
  bn_global = global;
  ct_scope *s = ct_scope_new();
  put_bn_inputs(s, xd, c);
  ct_op *op = bn_op("mean_out");
  run(op, s);
  tensor_dims(s, "y", xd);
  tensor_dims(s, "saved_var", CT_DIMS(c));
  check_bn(s, n, c, hw, strcmp(layout, "NHWC") == 0, test_mode || global);
  ct_op_free(op);
  ct_scope_free(s);
  bn_layout = "NCHW";
  bn_test_mode = bn_global = false;
}

START_TEST(bn_training_nchw_matches_naive_loops) {
  run_bn_case(CT_DIMS(2, 3, 2, 5), 2, 3, 10, "NCHW", false, false);
}
END_TEST

START_TEST(bn_training_nhwc_matches_naive_loops) {
  run_bn_case(CT_DIMS(2, 2, 5, 3), 2, 3, 10, "NHWC", false, false);
}
END_TEST

START_TEST(bn_rank_2_and_rank_5) {
  run_bn_case(CT_DIMS(6, 4), 6, 4, 1, "NCHW", false, false);
  run_bn_case(CT_DIMS(2, 3, 2, 2, 2), 2, 3, 8, "NCHW", false, false);
}
END_TEST

START_TEST(bn_is_test_and_global_stats_use_mean_and_variance) {
  run_bn_case(CT_DIMS(2, 3, 4), 2, 3, 4, "NCHW", true, false);
  run_bn_case(CT_DIMS(2, 3, 4), 2, 3, 4, "NCHW", false, true);
  run_bn_case(CT_DIMS(2, 4, 3), 2, 3, 4, "NHWC", true, false);
}
END_TEST

/* MeanOut naming Mean (PaddlePaddle's wiring) updates the running mean in place, run after run. */
START_TEST(bn_running_mean_updates_in_place) {
  ct_scope *s = ct_scope_new();
  put_bn_inputs(s, CT_DIMS(4, 2, 3), 2);
  double m0[2];
  memcpy(m0, var_f64(s, "mean"), sizeof m0);
  ct_op *op = bn_op("mean");
  run(op, s);
  run(op, s);
  const double *m = var_f64(s, "mean"), *mu = var_f64(s, "saved_mean");
  for (int ch = 0; ch < 2; ch++) {
    double want = 0.8 * (0.8 * m0[ch] + 0.2 * mu[ch]) + 0.2 * mu[ch];
    ck_assert_msg(fabs(m[ch] - want) <= 1e-15, "mean[%d] = %.17g, want %.17g", ch, m[ch], want);
  }
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(bn_f32_matches_f64) {
  const char *ins[] = {"x", "scale", "bias", "mean", "var"};
  const char *outs[] = {"y", "mean_out", "var_out", "saved_mean", "saved_var"};
  ct_ddim dims[] = {CT_DIMS(3, 2, 4), CT_DIMS(2), CT_DIMS(2), CT_DIMS(2), CT_DIMS(2)};
  ct_op *op = bn_op("mean_out");
  check_f32_matches_f64(op, ins, dims, 5, outs, 5);
  ct_op_free(op);
}
END_TEST

START_TEST(bn_refusals_name_the_problem) {
  ct_scope *s = ct_scope_new();
  put_bn_inputs(s, CT_DIMS(2, 3, 4), 3);
  put_smooth(s, "scale", CT_DIMS(4), 0);
  ct_op *op = bn_op("mean_out");
  run_fails(op, s, CT_ERR_SHAPE, "Scale", "'scale'", "[3]", NULL);
  put_smooth(s, "scale", CT_DIMS(3), 0);
  ck_assert_int_eq(ct_op_set_attr_string(op, "data_layout", "NCDHW"), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "data_layout", "NHWC", NULL);
  ck_assert_int_eq(ct_op_set_attr_string(op, "data_layout", "NCHW"), CT_OK);
  put_smooth(s, "x", CT_DIMS(0, 3, 4), 0);
  run_fails(op, s, CT_ERR_SHAPE, "empty", "is_test", NULL);
  put_smooth(s, "x", CT_DIMS(3), 0);
  run_fails(op, s, CT_ERR_SHAPE, "[N, C]", NULL);
  put_smooth(s, "x", CT_DIMS(2, 3, 4), 0);
  ck_assert_int_eq(ct_op_set_attr_float(op, "epsilon", -1e-3), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "batch_norm", "epsilon", "-0.001", ">= 0", NULL);
  ck_assert_int_eq(ct_op_set_attr_float(op, "epsilon", 1e-5), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "momentum", 1.5), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "batch_norm", "momentum", "1.5", "[0, 1]", NULL);
  ck_assert_int_eq(ct_op_set_attr_float(op, "momentum", -0.25), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "batch_norm", "momentum", "-0.25", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static void build_bn(ct_program *p) {
  ck_assert_int_eq(ct_program_append(p, bn_op("mean_out")), CT_OK);
  append_weighted_loss(p, "y", "loss");
}

static void check_bn_grads(ct_ddim xd, int64_t c, const char *layout, bool test_mode) {
  static const char *const params[] = {"x", "scale", "bias"};
  bn_layout = layout;
  bn_test_mode = test_mode;
  ct_scope *s = ct_scope_new();
  put_bn_inputs(s, xd, c);
  check_grads(s, build_bn, "loss", params, 3);
  ct_scope_free(s);
  bn_layout = "NCHW";
  bn_test_mode = false;
}

START_TEST(bn_grad_training) { check_bn_grads(CT_DIMS(3, 2, 2, 2), 2, "NCHW", false); }
END_TEST

START_TEST(bn_grad_training_nhwc) { check_bn_grads(CT_DIMS(2, 3, 3), 3, "NHWC", false); }
END_TEST

/* PaddlePaddle's wiring, MeanOut and VarianceOut naming Mean and Variance, differentiates: the
 * running statistics are the op's own state, read by no other op. Two training runs update the
 * running mean twice, and the gradients are those of the wiring with separate names. */
static void build_bn_in_place(ct_program *p) {
  ct_op *op = bn_op("mean");
  ck_assert_int_eq(ct_op_set_output(op, "VarianceOut", "var"), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  append_weighted_loss(p, "y", "loss");
}

START_TEST(bn_training_updates_running_stats_in_place) {
  static const char *const params[] = {"x", "scale"};
  double grads[2][12];
  for (int in_place = 0; in_place < 2; in_place++) {
    ct_scope *s = ct_scope_new();
    put_bn_inputs(s, CT_DIMS(3, 2, 2), 2);
    double m0[2];
    memcpy(m0, var_f64(s, "mean"), sizeof m0);
    ct_program *p = ct_program_new();
    (in_place ? build_bn_in_place : build_bn)(p);
    ck_assert_msg(ct_program_append_backward(p, "loss", params, 2) == CT_OK, "%s",
                  ct_last_error());
    run_program(p, s);
    run_program(p, s);
    memcpy(grads[in_place], var_f64(s, "x@GRAD"), sizeof grads[0]);
    const double *m = var_f64(s, in_place ? "mean" : "mean_out"), *mu = var_f64(s, "saved_mean");
    for (int ch = 0; ch < 2; ch++) {
      double want = in_place ? 0.8 * (0.8 * m0[ch] + 0.2 * mu[ch]) + 0.2 * mu[ch]
                             : 0.8 * m0[ch] + 0.2 * mu[ch];
      ck_assert_msg(fabs(m[ch] - want) <= 1e-15, "mean[%d] = %.17g, want %.17g", ch, m[ch],
                    want);
    }
    ct_program_free(p);
    ct_scope_free(s);
  }
  for (int i = 0; i < 12; i++) ck_assert(grads[0][i] == grads[1][i]);
}
END_TEST

/* A running statistic that a later op reads holds two values over the program: refused. */
START_TEST(bn_in_place_stats_read_by_another_op_are_refused) {
  static const char *const params[] = {"x"};
  ct_program *p = ct_program_new();
  build_bn_in_place(p);
  ck_assert_int_eq(ct_program_append(p, op_x("assign", "mean", "mean_copy")), CT_OK);
  CT_ASSERT_FAILS(ct_program_append_backward(p, "loss", params, 1), CT_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(ct_last_error(), "'mean'") != NULL, "%s", ct_last_error());
  ct_program_free(p);
}
END_TEST

START_TEST(bn_grad_is_test) { check_bn_grads(CT_DIMS(2, 3, 2), 3, "NCHW", true); }
END_TEST

/* ---- layer_norm ------------------------------------------------------------------------------ */

static int64_t ln_axis = 1;
static bool ln_affine = true;

static ct_op *ln_op(void) {
  ct_op *op = new_op("layer_norm");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  if (ln_affine) {
    ck_assert_int_eq(ct_op_set_input(op, "Scale", "scale"), CT_OK);
    ck_assert_int_eq(ct_op_set_input(op, "Bias", "bias"), CT_OK);
  }
  ck_assert_int_eq(ct_op_set_output(op, "Y", "y"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Mean", "mean"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Variance", "var"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "begin_norm_axis", ln_axis), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "epsilon", 1e-4), CT_OK);
  return op;
}

/* x [2, 3, 4]: rows of 12 (axis 1) or of 4 (axis 2), against naive loops. */
static void check_ln_forward(int64_t axis, bool affine) {
  ln_axis = axis;
  ln_affine = affine;
  int64_t rows = axis == 1 ? 2 : 6, r = 24 / rows;
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(2, 3, 4), 0.2);
  put_smooth(s, "scale", CT_DIMS(r), 1.5);
  put_smooth(s, "bias", CT_DIMS(r), 2.5);
  ct_op *op = ln_op();
  run(op, s);
  const double *x = var_f64(s, "x"), *sc = var_f64(s, "scale"), *bi = var_f64(s, "bias");
  double y[24], mean[6], var[6];
  for (int64_t i = 0; i < rows; i++) {
    mean[i] = var[i] = 0;
    for (int64_t j = 0; j < r; j++) mean[i] += x[i * r + j] / (double)r;
    for (int64_t j = 0; j < r; j++) {
      var[i] += (x[i * r + j] - mean[i]) * (x[i * r + j] - mean[i]) / (double)r;
    }
    for (int64_t j = 0; j < r; j++) {
      double xh = (x[i * r + j] - mean[i]) / sqrt(var[i] + 1e-4);
      y[i * r + j] = affine ? xh * sc[j] + bi[j] : xh;
    }
  }
  tensor_dims(s, "y", CT_DIMS(2, 3, 4));
  tensor_dims(s, "mean", CT_DIMS(rows));
  assert_close(var_f64(s, "y"), y, 24, 1e-13, "Y");
  assert_close(var_f64(s, "mean"), mean, rows, 1e-14, "Mean");
  assert_close(var_f64(s, "var"), var, rows, 1e-14, "Variance");
  ct_op_free(op);
  ct_scope_free(s);
  ln_axis = 1;
  ln_affine = true;
}

START_TEST(ln_forward_matches_naive_loops) {
  check_ln_forward(1, true);
  check_ln_forward(2, true);
  check_ln_forward(2, false);
}
END_TEST

START_TEST(ln_f32_matches_f64) {
  const char *ins[] = {"x", "scale", "bias"};
  const char *outs[] = {"y", "mean", "var"};
  ct_ddim dims[] = {CT_DIMS(3, 5), CT_DIMS(5), CT_DIMS(5)};
  ct_op *op = ln_op();
  check_f32_matches_f64(op, ins, dims, 3, outs, 3);
  ct_op_free(op);
}
END_TEST

START_TEST(ln_refusals_name_the_problem) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(2, 3), 0);
  put_smooth(s, "scale", CT_DIMS(3), 0);
  put_smooth(s, "bias", CT_DIMS(2), 0);
  ct_op *op = ln_op();
  run_fails(op, s, CT_ERR_SHAPE, "Bias", "'bias'", "[3]", NULL);
  ck_assert_int_eq(ct_op_set_attr_int(op, "begin_norm_axis", 2), CT_OK);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "begin_norm_axis", "[1, 2)", NULL);
  ck_assert_int_eq(ct_op_set_attr_int(op, "begin_norm_axis", 1), CT_OK);
  put_smooth(s, "bias", CT_DIMS(3), 0);
  ck_assert_int_eq(ct_op_set_attr_float(op, "epsilon", -0.5), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "layer_norm", "epsilon", "-0.5", ">= 0", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static void build_ln(ct_program *p) {
  ck_assert_int_eq(ct_program_append(p, ln_op()), CT_OK);
  append_weighted_loss(p, "y", "loss");
}

START_TEST(ln_grad_rows_of_the_last_dim) {
  static const char *const params[] = {"x", "scale", "bias"};
  ln_axis = 2;
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(2, 3, 4), 0.2);
  put_smooth(s, "scale", CT_DIMS(4), 1.5);
  put_smooth(s, "bias", CT_DIMS(4), 2.5);
  check_grads(s, build_ln, "loss", params, 3);
  ct_scope_free(s);
  ln_axis = 1;
}
END_TEST

START_TEST(ln_grad_without_scale_and_bias) {
  static const char *const params[] = {"x"};
  ln_affine = false;
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(3, 2, 3), 0.2);
  check_grads(s, build_ln, "loss", params, 1);
  ct_scope_free(s);
  ln_affine = true;
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("grad_norm");
  CT_ADD_TEST(s, bn_training_nchw_matches_naive_loops);
  CT_ADD_TEST(s, bn_training_nhwc_matches_naive_loops);
  CT_ADD_TEST(s, bn_rank_2_and_rank_5);
  CT_ADD_TEST(s, bn_is_test_and_global_stats_use_mean_and_variance);
  CT_ADD_TEST(s, bn_running_mean_updates_in_place);
  CT_ADD_TEST(s, bn_f32_matches_f64);
  CT_ADD_TEST(s, bn_refusals_name_the_problem);
  CT_ADD_TEST(s, bn_grad_training);
  CT_ADD_TEST(s, bn_grad_training_nhwc);
  CT_ADD_TEST(s, bn_grad_is_test);
  CT_ADD_TEST(s, bn_training_updates_running_stats_in_place);
  CT_ADD_TEST(s, bn_in_place_stats_read_by_another_op_are_refused);
  CT_ADD_TEST(s, ln_forward_matches_naive_loops);
  CT_ADD_TEST(s, ln_f32_matches_f64);
  CT_ADD_TEST(s, ln_refusals_name_the_problem);
  CT_ADD_TEST(s, ln_grad_rows_of_the_last_dim);
  CT_ADD_TEST(s, ln_grad_without_scale_and_bias);
  return s;
}

CT_TEST_MAIN(make_suite)
