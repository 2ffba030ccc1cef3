/* SPDX-License-Identifier: Apache-2.0 */
/* softmax_with_cross_entropy and its gradient: the forward values against hand computations
 * (hard labels [N] and [N, 1], soft labels, large logits, ignore_index, empty batches), the
 * gradient against central finite differences in float64 (grad_util.h; the [N, 1] Loss is
 * reduced to a scalar by test_weighted_sum), the float32 kernels, and the refusals: labels out
 * of range, labels of the wrong dtype or dims, a soft Label that depends on a parameter. */
#include <corten/corten.h>

#include "grad_util.h"

/* An op softmax_with_cross_entropy(Logits = x, Label = y) -> sm, loss. */
static ct_op *sce_op(const char *x, const char *y, bool soft) {
  ct_op *op = new_op("softmax_with_cross_entropy");
  ck_assert_int_eq(ct_op_set_input(op, "Logits", x), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Label", y), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Softmax", "sm"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Loss", "loss"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "soft_label", soft), CT_OK);
  return op;
}

static void run_sce(ct_scope *s, bool soft, int64_t ignore_index) {
  ct_op *op = sce_op("x", "y", soft);
  ck_assert_int_eq(ct_op_set_attr_int(op, "ignore_index", ignore_index), CT_OK);
  run(op, s);
  ct_op_free(op);
}

static void assert_close(double got, double want, double rel, const char *what, int i) {
  ck_assert_msg(fabs(got - want) <= rel * fabs(want) + 1e-300, "%s[%d] = %.17g, expected %.17g",
                what, i, got, want);
}

/* ---- Forward ----------------------------------------------------------------------------- */

/* Equal logits: Softmax is 1/C exactly and every loss is log C. */
START_TEST(forward_equal_logits_give_log_c) {
  ct_scope *s = ct_scope_new();
  double x[8] = {0, 0, 0, 0, 5, 5, 5, 5};
  int64_t y[2] = {2, 0};
  put(s, "x", CT_FLOAT64, CT_DIMS(2, 4), x);
  put(s, "y", CT_INT64, CT_DIMS(2), y);
  run_sce(s, false, -100);
  const double *sm = result(s, "sm", CT_FLOAT64, CT_DIMS(2, 4));
  const double *loss = result(s, "loss", CT_FLOAT64, CT_DIMS(2, 1));
  for (int i = 0; i < 8; i++) ck_assert(sm[i] == 0.25);
  for (int i = 0; i < 2; i++) assert_close(loss[i], 1.3862943611198906, TOL64, "loss", i);
  ct_scope_free(s);
}
END_TEST

/* Softmax_ij = exp(x_ij) / sum_k exp(x_ik), Loss_i = -log(Softmax_i,label), written out. */
START_TEST(forward_hard_labels_match_the_definition) {
  ct_scope *s = ct_scope_new();
  double x[6] = {1.0, 2.0, 3.0, -0.5, 0.25, 0.0};
  int64_t y[2] = {0, 1};
  put(s, "x", CT_FLOAT64, CT_DIMS(2, 3), x);
  put(s, "y", CT_INT64, CT_DIMS(2, 1), y);
  run_sce(s, false, -100);
  const double *sm = result(s, "sm", CT_FLOAT64, CT_DIMS(2, 3));
  const double *loss = result(s, "loss", CT_FLOAT64, CT_DIMS(2, 1));
  for (int i = 0; i < 2; i++) {
    double z = exp(x[3 * i]) + exp(x[3 * i + 1]) + exp(x[3 * i + 2]);
    for (int j = 0; j < 3; j++) assert_close(sm[3 * i + j], exp(x[3 * i + j]) / z, 1e-15, "sm", j);
    assert_close(loss[i], -log(exp(x[3 * i + y[i]]) / z), 1e-15, "loss", i);
  }
  /* Row 0 by hand: log(e + e^2 + e^3) - 1 = 2.40760596444438 (to 15 digits). */
  assert_close(loss[0], 2.40760596444438, 1e-14, "loss", 0);
  ct_scope_free(s);
}
END_TEST

/* Labels [N] and [N, 1] give the same results. */
START_TEST(forward_label_dims_n_and_n1_agree) {
  double x[6] = {0.5, -1.0, 2.0, 0.0, 3.0, 1.0};
  int64_t y[2] = {2, 1};
  double loss[2][2];
  for (int k = 0; k < 2; k++) {
    ct_scope *s = ct_scope_new();
    put(s, "x", CT_FLOAT64, CT_DIMS(2, 3), x);
    put(s, "y", CT_INT64, k ? CT_DIMS(2, 1) : CT_DIMS(2), y);
    run_sce(s, false, -100);
    memcpy(loss[k], result(s, "loss", CT_FLOAT64, CT_DIMS(2, 1)), sizeof loss[k]);
    ct_scope_free(s);
  }
  ck_assert(loss[0][0] == loss[1][0] && loss[0][1] == loss[1][1]);
}
END_TEST

/* Logits of 1000 would overflow exp; log-sum-exp from the row's maximum keeps the loss. */
START_TEST(forward_is_stable_for_large_logits) {
  ct_scope *s = ct_scope_new();
  double x[4] = {1000.0, 0.0, -1000.0, 0.0};
  int64_t y[2] = {1, 0};
  put(s, "x", CT_FLOAT64, CT_DIMS(2, 2), x);
  put(s, "y", CT_INT64, CT_DIMS(2), y);
  run_sce(s, false, -100);
  const double *sm = result(s, "sm", CT_FLOAT64, CT_DIMS(2, 2));
  const double *loss = result(s, "loss", CT_FLOAT64, CT_DIMS(2, 1));
  ck_assert(sm[0] == 1.0 && sm[1] == 0.0 && sm[2] == 0.0 && sm[3] == 1.0);
  ck_assert_msg(loss[0] == 1000.0, "loss[0] = %.17g", loss[0]);
  ck_assert_msg(loss[1] == 1000.0, "loss[1] = %.17g", loss[1]);
  float xf[2] = {100.0f, 0.0f};
  int64_t yf[1] = {1};
  put(s, "x", CT_FLOAT32, CT_DIMS(1, 2), xf);
  put(s, "y", CT_INT64, CT_DIMS(1), yf);
  run_sce(s, false, -100);
  ck_assert(*(const float *)result(s, "loss", CT_FLOAT32, CT_DIMS(1, 1)) == 100.0f);
  ct_scope_free(s);
}
END_TEST

/* Soft labels: Loss_i = -sum_j y_ij log Softmax_ij. */
START_TEST(forward_soft_labels) {
  ct_scope *s = ct_scope_new();
  double x[6] = {0.0, 0.0, 0.0, 1.0, 2.0, 3.0};
  double y[6] = {0.25, 0.75, 0.0, 0.5, 0.25, 0.25};
  put(s, "x", CT_FLOAT64, CT_DIMS(2, 3), x);
  put(s, "y", CT_FLOAT64, CT_DIMS(2, 3), y);
  run_sce(s, true, -100);
  const double *loss = result(s, "loss", CT_FLOAT64, CT_DIMS(2, 1));
  assert_close(loss[0], 1.0986122886681098, 1e-15, "loss", 0); /* log 3 */
  double z = exp(1.0) + exp(2.0) + exp(3.0), want = 0;
  for (int j = 0; j < 3; j++) want -= y[3 + j] * log(exp(x[3 + j]) / z);
  assert_close(loss[1], want, 1e-15, "loss", 1);
  ct_scope_free(s);
}
END_TEST

/* A row whose label is ignore_index has loss 0; ignore_index may also be a valid class. */
START_TEST(forward_ignore_index_rows_have_zero_loss) {
  ct_scope *s = ct_scope_new();
  double x[6] = {1.0, 2.0, 3.0, 0.0, 0.0, 0.0};
  int64_t y[2] = {-100, 1};
  put(s, "x", CT_FLOAT64, CT_DIMS(2, 3), x);
  put(s, "y", CT_INT64, CT_DIMS(2), y);
  run_sce(s, false, -100);
  const double *loss = result(s, "loss", CT_FLOAT64, CT_DIMS(2, 1));
  ck_assert(loss[0] == 0.0);
  assert_close(loss[1], 1.0986122886681098, 1e-15, "loss", 1);
  ct_scope_free(s);
}
END_TEST

START_TEST(forward_custom_ignore_index) {
  ct_scope *s = ct_scope_new();
  double x[6] = {1.0, 2.0, 3.0, 0.0, 0.0, 0.0};
  int64_t y[2] = {2, 1};
  put(s, "x", CT_FLOAT64, CT_DIMS(2, 3), x);
  put(s, "y", CT_INT64, CT_DIMS(2), y);
  run_sce(s, false, 1);
  const double *loss = result(s, "loss", CT_FLOAT64, CT_DIMS(2, 1));
  ck_assert(loss[0] > 0.0 && loss[1] == 0.0);
  ct_scope_free(s);
}
END_TEST

/* The Softmax output is the softmax op's, bit for bit. */
START_TEST(forward_softmax_matches_the_softmax_op) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(3, 5), 0.4);
  int64_t y[3] = {0, 4, 2};
  put(s, "y", CT_INT64, CT_DIMS(3), y);
  run_sce(s, false, -100);
  ct_op *op = op_x("softmax", "x", "ref");
  run(op, s);
  ct_op_free(op);
  const double *a = var_f64(s, "sm"), *b = var_f64(s, "ref");
  for (int i = 0; i < 15; i++) ck_assert(a[i] == b[i]);
  ct_scope_free(s);
}
END_TEST

START_TEST(forward_empty_batch) {
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT32, CT_DIMS(0, 4), NULL);
  put(s, "y", CT_INT64, CT_DIMS(0), NULL);
  run_sce(s, false, -100);
  result(s, "sm", CT_FLOAT32, CT_DIMS(0, 4));
  result(s, "loss", CT_FLOAT32, CT_DIMS(0, 1));
  ct_scope_free(s);
}
END_TEST

/* ---- Gradients against finite differences ------------------------------------------------ */

static const char *const logits_param[] = {"x"};
static bool build_soft;
static int64_t build_ignore = -100;

/* total = test_weighted_sum(Loss): every row's loss with its own weight. */
static void build_sce(ct_program *p) {
  ct_op *op = sce_op("x", "y", build_soft);
  ck_assert_int_eq(ct_op_set_attr_int(op, "ignore_index", build_ignore), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  append_weighted_loss(p, "loss", "total");
}

START_TEST(grad_hard_labels) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(4, 5), 0.3);
  int64_t y[4] = {0, 4, 2, 2};
  put(s, "y", CT_INT64, CT_DIMS(4, 1), y);
  build_soft = false;
  build_ignore = -100;
  check_grads(s, build_sce, "total", logits_param, 1);
  ct_scope_free(s);
}
END_TEST

/* Soft labels whose rows do not sum to 1 (the gradient is exact for any row sum). */
START_TEST(grad_soft_labels) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(3, 4), 0.9);
  double y[12] = {0.1, 0.2, 0.3, 0.4, 1.0, 0.0, 0.0, 0.0, 0.5, 0.25, 0.5, 0.0};
  put(s, "y", CT_FLOAT64, CT_DIMS(3, 4), y);
  build_soft = true;
  build_ignore = -100;
  check_grads(s, build_sce, "total", logits_param, 1);
  ct_scope_free(s);
}
END_TEST

/* An ignored row's gradient is 0; the others match finite differences. */
START_TEST(grad_ignore_index_rows_are_zero) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(3, 3), 0.5);
  int64_t y[3] = {1, 7, 0};
  put(s, "y", CT_INT64, CT_DIMS(3), y);
  build_soft = false;
  build_ignore = 7;
  check_grads(s, build_sce, "total", logits_param, 1);
  const double *g = var_f64(s, "x@GRAD");
  for (int j = 0; j < 3; j++) ck_assert(g[3 + j] == 0.0);
  ct_scope_free(s);
}
END_TEST

/* Through a parameter before the loss: logits = x * w, the gradient reaches w. */
static void build_scaled(ct_program *p) {
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_mul", "in", "w", "x")), CT_OK);
  build_sce(p);
}

START_TEST(grad_reaches_a_parameter_before_the_loss) {
  static const char *const w[] = {"w"};
  ct_scope *s = ct_scope_new();
  put_smooth(s, "in", CT_DIMS(2, 3), 0.2);
  put_smooth(s, "w", CT_DIMS(3), 1.1);
  int64_t y[2] = {2, 0};
  put(s, "y", CT_INT64, CT_DIMS(2), y);
  build_soft = false;
  build_ignore = -100;
  check_grads(s, build_scaled, "total", w, 1);
  ct_scope_free(s);
}
END_TEST

/* The gradient op alone: (Softmax - onehot) x Loss@GRAD, float32 and float64. */
START_TEST(grad_op_values_f32_and_f64) {
  for (int dt = 0; dt < 2; dt++) {
    ct_scope *s = ct_scope_new();
    ct_dtype t = dt ? CT_FLOAT64 : CT_FLOAT32;
    double sm64[4] = {0.25, 0.75, 0.5, 0.5}, g64[2] = {2.0, -1.0};
    float sm32[4] = {0.25f, 0.75f, 0.5f, 0.5f}, g32[2] = {2.0f, -1.0f};
    int64_t y[2] = {1, 0};
    put(s, "sm", t, CT_DIMS(2, 2), dt ? (void *)sm64 : (void *)sm32);
    put(s, "g", t, CT_DIMS(2, 1), dt ? (void *)g64 : (void *)g32);
    put(s, "y", CT_INT64, CT_DIMS(2), y);
    ct_op *op = new_op("softmax_with_cross_entropy_grad");
    ck_assert_int_eq(ct_op_set_input(op, "Softmax", "sm"), CT_OK);
    ck_assert_int_eq(ct_op_set_input(op, "Label", "y"), CT_OK);
    ck_assert_int_eq(ct_op_set_input(op, "Loss@GRAD", "g"), CT_OK);
    ck_assert_int_eq(ct_op_set_output(op, "Logits@GRAD", "dx"), CT_OK);
    run(op, s);
    ct_op_free(op);
    const double want[4] = {0.5, -0.5, 0.5, -0.5};
    const void *dx = result(s, "dx", t, CT_DIMS(2, 2));
    for (int i = 0; i < 4; i++) {
      double got = dt ? ((const double *)dx)[i] : (double)((const float *)dx)[i];
      ck_assert_msg(got == want[i], "dx[%d] = %g", i, got);
    }
    ct_scope_free(s);
  }
}
END_TEST

/* ---- Refusals ---------------------------------------------------------------------------- */

START_TEST(label_out_of_range_names_op_row_and_value) {
  ct_scope *s = ct_scope_new();
  double x[6] = {0};
  int64_t y[2] = {1, 3};
  put(s, "x", CT_FLOAT64, CT_DIMS(2, 3), x);
  put(s, "y", CT_INT64, CT_DIMS(2), y);
  ct_op *op = sce_op("x", "y", false);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "softmax_with_cross_entropy", "Label", "'y'", "row 1",
            "holds 3", "[0, 3)", NULL);
  ck_assert(!ct_tensor_has_memory(tensor_of(s, "sm"))); /* checked before anything is written */
  y[1] = -1;
  put(s, "y", CT_INT64, CT_DIMS(2), y);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "row 1", "holds -1", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(grad_op_refuses_a_label_out_of_range) {
  ct_scope *s = ct_scope_new();
  double sm[4] = {0.5, 0.5, 0.5, 0.5}, g[2] = {1, 1};
  int64_t y[2] = {2, 0};
  put(s, "sm", CT_FLOAT64, CT_DIMS(2, 2), sm);
  put(s, "g", CT_FLOAT64, CT_DIMS(2, 1), g);
  put(s, "y", CT_INT64, CT_DIMS(2), y);
  ct_op *op = new_op("softmax_with_cross_entropy_grad");
  ck_assert_int_eq(ct_op_set_input(op, "Softmax", "sm"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Label", "y"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Loss@GRAD", "g"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Logits@GRAD", "dx"), CT_OK);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "softmax_with_cross_entropy_grad", "row 0", "holds 2",
            NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(label_of_wrong_dtype_or_dims_is_refused) {
  ct_scope *s = ct_scope_new();
  double x[6] = {0};
  int32_t y32[2] = {0, 1};
  int64_t y3[3] = {0, 1, 2};
  put(s, "x", CT_FLOAT64, CT_DIMS(2, 3), x);
  put(s, "y", CT_INT32, CT_DIMS(2), y32);
  ct_op *op = sce_op("x", "y", false);
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "softmax_with_cross_entropy", "Label", "int32", "int64",
            NULL);
  put(s, "y", CT_INT64, CT_DIMS(3), y3);
  run_fails(op, s, CT_ERR_SHAPE, "Label", "'y'", "[3]", NULL);
  ct_op_free(op);
  op = sce_op("x", "y", true); /* soft: [N, C] of Logits' dtype */
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "Label", "int64", NULL);
  put(s, "y", CT_FLOAT64, CT_DIMS(2), x);
  run_fails(op, s, CT_ERR_SHAPE, "Label", "soft_label", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(logits_must_be_rank_2) {
  ct_scope *s = ct_scope_new();
  double x[6] = {0};
  int64_t y[2] = {0, 0};
  put(s, "x", CT_FLOAT64, CT_DIMS(6), x);
  put(s, "y", CT_INT64, CT_DIMS(2), y);
  ct_op *op = sce_op("x", "y", false);
  run_fails(op, s, CT_ERR_SHAPE, "softmax_with_cross_entropy", "Logits", "'x'", "[N, C]", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* A soft Label that is a parameter would need its own gradient: refused, program kept. */
START_TEST(backward_refuses_a_soft_label_from_a_parameter) {
  static const char *const params[] = {"x", "y"};
  ct_program *p = ct_program_new();
  build_soft = true;
  build_ignore = -100;
  build_sce(p);
  size_t before = ct_program_size(p);
  CT_ASSERT_FAILS(ct_program_append_backward(p, "total", params, 2), CT_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(ct_last_error(), "softmax_with_cross_entropy") != NULL &&
                    strstr(ct_last_error(), "'y'") != NULL,
                "%s", ct_last_error());
  ck_assert_uint_eq(ct_program_size(p), before);
  ct_program_free(p);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("grad_loss");
  CT_ADD_TEST(s, forward_equal_logits_give_log_c);
  CT_ADD_TEST(s, forward_hard_labels_match_the_definition);
  CT_ADD_TEST(s, forward_label_dims_n_and_n1_agree);
  CT_ADD_TEST(s, forward_is_stable_for_large_logits);
  CT_ADD_TEST(s, forward_soft_labels);
  CT_ADD_TEST(s, forward_ignore_index_rows_have_zero_loss);
  CT_ADD_TEST(s, forward_custom_ignore_index);
  CT_ADD_TEST(s, forward_softmax_matches_the_softmax_op);
  CT_ADD_TEST(s, forward_empty_batch);
  CT_ADD_TEST(s, grad_hard_labels);
  CT_ADD_TEST(s, grad_soft_labels);
  CT_ADD_TEST(s, grad_ignore_index_rows_are_zero);
  CT_ADD_TEST(s, grad_reaches_a_parameter_before_the_loss);
  CT_ADD_TEST(s, grad_op_values_f32_and_f64);
  CT_ADD_TEST(s, label_out_of_range_names_op_row_and_value);
  CT_ADD_TEST(s, grad_op_refuses_a_label_out_of_range);
  CT_ADD_TEST(s, label_of_wrong_dtype_or_dims_is_refused);
  CT_ADD_TEST(s, logits_must_be_rank_2);
  CT_ADD_TEST(s, backward_refuses_a_soft_label_from_a_parameter);
  return s;
}

CT_TEST_MAIN(make_suite)
