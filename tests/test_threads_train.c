/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_threads_train.c: the training kernels split across threads give the same bytes at
 * 1, 2, 3 and 7 threads (threads_util.h), and the serial results: the elementwise gradients
 * under broadcasting (sums in Out's order), reduce_sum over leading and middle dims,
 * mean_grad, sgd, momentum and adam, softmax_with_cross_entropy and its gradient, concat and
 * its gradient. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include <corten/corten.h>

#include "threads_util.h"

static double data_small(int64_t i) { return (double)(i % 13) * 0.25 + 0.5; } /* never 0 */

/* ---- Elementwise gradients under broadcasting ------------------------------------------------ */

/* The binary gradients of X (xd) and Y (yd), Out out, in dt, at every count: sub and div (the
 * gradients of add and mul are sub's and div's shapes of expression), or all four. */
static void check_bcast_grads(ct_ddim xd, ct_ddim yd, ct_ddim out, ct_dtype dt, bool all) {
  static const char *types[] = {"elementwise_sub", "elementwise_div", "elementwise_add",
                                "elementwise_mul"};
  static const char *const outs[] = {"dx", "dy"};
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", dt, xd, data_mixed);
  put_fn(s, "y", dt, yd, data_small);
  put_fn(s, "g", dt, out, data_mixed);
  for (size_t k = 0; k < (all ? 4u : 2u); k++) {
    ct_op *op = op_binary_grad(types[k]);
    check_outs_same_at_counts(s, op, outs, 2);
    ct_op_free(op);
  }
  ct_scope_free(s);
}

START_TEST(broadcast_grads_at_every_count) {
  check_bcast_grads(CT_DIMS(700, 301), CT_DIMS(301), CT_DIMS(700, 301), CT_FLOAT32, true);
  check_bcast_grads(CT_DIMS(300, 1, 250), CT_DIMS(4, 1), CT_DIMS(300, 4, 250), CT_FLOAT32, false);
  check_bcast_grads(CT_DIMS(1000, 1), CT_DIMS(1, 300), CT_DIMS(1000, 300), CT_FLOAT64, false);
  check_bcast_grads(CT_DIMS(3, 80000), CT_DIMS(1), CT_DIMS(3, 80000), CT_FLOAT32, false);
  check_bcast_grads(CT_DIMS(10, 1, 30, 400), CT_DIMS(7, 1, 400), CT_DIMS(10, 7, 30, 400),
                    CT_FLOAT64, false);
  /* conv biases: runs of H W each summed into one element, 8 channels side by side (the
   * pieces split the 32 channels, here 10 + 11 + 11 at 3 threads: blocks and leftovers) */
  check_bcast_grads(CT_DIMS(50, 32, 8, 8), CT_DIMS(32, 1, 1), CT_DIMS(50, 32, 8, 8), CT_FLOAT32,
                    true);
  check_bcast_grads(CT_DIMS(32, 1, 1), CT_DIMS(50, 32, 8, 8), CT_DIMS(50, 32, 8, 8), CT_FLOAT32,
                    false);
}
END_TEST

/* A bias gradient: Y@GRAD sums Out@GRAD's rows one after the other in float, X@GRAD is it. */
START_TEST(bias_grad_sums_rows_in_order) {
  const int64_t rows = 900, cols = 301;
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(rows, cols), data_mixed);
  put_fn(s, "y", CT_FLOAT32, CT_DIMS(cols), data_small);
  put_fn(s, "g", CT_FLOAT32, CT_DIMS(rows, cols), data_mixed);
  ct_op *op = op_binary_grad("elementwise_add");
  ct_set_num_threads(3);
  run(op, s);
  ct_set_num_threads(0);
  const float *dx = result(s, "dx", CT_FLOAT32, CT_DIMS(rows, cols));
  const float *dy = result(s, "dy", CT_FLOAT32, CT_DIMS(cols));
  for (int64_t j = 0; j < cols; j++) {
    float want = 0;
    for (int64_t i = 0; i < rows; i++) want += (float)data_mixed(i * cols + j);
    ck_assert_msg(dy[j] == want, "dy[%lld] %.9g, want %.9g", (long long)j, dy[j], want);
  }
  for (int64_t i = 0; i < rows * cols; i++) ck_assert(dx[i] == (float)data_mixed(i));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- reduce_sum over leading and middle dims, mean_grad ------------------------------------- */

START_TEST(reduce_sum_of_leading_and_middle_dims_at_every_count) {
  check_reduce_sum(CT_DIMS(40, 300, 30), (const int64_t[]){0, 2}, 2);
  check_reduce_sum(CT_DIMS(10, 30, 40, 50), (const int64_t[]){0, 2}, 2);
  check_reduce_sum(CT_DIMS(1, 300000), (const int64_t[]){0}, 1);
}
END_TEST

START_TEST(mean_grad_at_every_count) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(300001), data_mixed);
  put_fn(s, "g", CT_FLOAT32, CT_DIMS(), data_small);
  ct_op *op = new_op("mean_grad");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Out@GRAD", "g"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "X@GRAD", "dx"), CT_OK);
  check_same_at_counts(s, op, "dx");
  const float *dx = result(s, "dx", CT_FLOAT32, CT_DIMS(300001));
  for (int64_t i = 0; i < 300001; i++) ck_assert(dx[i] == (float)(0.5 / 300001));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- Optimizers ------------------------------------------------------------------------------ */

/* The learning rate and adam's beta powers, exact in float32. */
static double data_lr(int64_t i) { return 0.03125 + 0.0 * (double)i; }
static double data_b1p(int64_t i) { return 0.5 + 0.0 * (double)i; }
static double data_b2p(int64_t i) { return 0.75 + 0.0 * (double)i; }

/* An optimizer op wired to (input slot, variable) pairs, each output to the variable with "_out"
 * appended, so every run reads the same inputs. */
static ct_op *opt_op(const char *type, const char *const (*ins)[2], int n_in,
                     const char *const (*outs)[2], int n_out) {
  ct_op *op = new_op(type);
  for (int i = 0; i < n_in; i++) ck_assert_int_eq(ct_op_set_input(op, ins[i][0], ins[i][1]), CT_OK);
  for (int i = 0; i < n_out; i++) {
    char name[32];
    snprintf(name, sizeof name, "%s_out", outs[i][1]);
    ck_assert_int_eq(ct_op_set_output(op, outs[i][0], name), CT_OK);
  }
  return op;
}

/* sgd, momentum (plain and Nesterov) and adam over n parameters in dt at every count; sgd's
 * ParamOut exactly p - lr g. */
static void check_optimizers(ct_dtype dt, int64_t n) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "p", dt, CT_DIMS(n), data_mixed);
  put_fn(s, "g", dt, CT_DIMS(n), data_unary);
  put_fn(s, "v", dt, CT_DIMS(n), data_small);
  put_fn(s, "m1", dt, CT_DIMS(n), data_unary);
  put_fn(s, "m2", dt, CT_DIMS(n), data_small);
  put_fn(s, "lr", dt, CT_DIMS(1), data_lr);
  put_fn(s, "b1p", dt, CT_DIMS(1), data_b1p);
  put_fn(s, "b2p", dt, CT_DIMS(1), data_b2p);
  static const char *const sgd_in[][2] = {{"Param", "p"}, {"Grad", "g"}, {"LearningRate", "lr"}};
  static const char *const sgd_out[][2] = {{"ParamOut", "p"}};
  ct_op *op = opt_op("sgd", sgd_in, 3, sgd_out, 1);
  check_same_at_counts(s, op, "p_out");
  const void *po = result(s, "p_out", dt, CT_DIMS(n));
  for (int64_t i = 0; i < n; i++) {
    if (dt == CT_FLOAT32) {
      ck_assert(((const float *)po)[i] == (float)data_mixed(i) - 0.03125f * (float)data_unary(i));
    } else {
      ck_assert(((const double *)po)[i] == data_mixed(i) - 0.03125 * data_unary(i));
    }
  }
  ct_op_free(op);
  static const char *const mom_in[][2] = {
      {"Param", "p"}, {"Grad", "g"}, {"Velocity", "v"}, {"LearningRate", "lr"}};
  static const char *const mom_out[][2] = {{"ParamOut", "p"}, {"VelocityOut", "v"}};
  for (int nesterov = 0; nesterov < 2; nesterov++) {
    op = opt_op("momentum", mom_in, 4, mom_out, 2);
    ck_assert_int_eq(ct_op_set_attr_float(op, "mu", 0.9), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_bool(op, "use_nesterov", nesterov), CT_OK);
    check_outs_same_at_counts(s, op, (const char *const[]){"p_out", "v_out"}, 2);
    ct_op_free(op);
  }
  static const char *const adam_in[][2] = {{"Param", "p"},      {"Grad", "g"},
                                           {"LearningRate", "lr"}, {"Moment1", "m1"},
                                           {"Moment2", "m2"},   {"Beta1Pow", "b1p"},
                                           {"Beta2Pow", "b2p"}};
  static const char *const adam_out[][2] = {{"ParamOut", "p"},   {"Moment1Out", "m1"},
                                            {"Moment2Out", "m2"}, {"Beta1PowOut", "b1p"},
                                            {"Beta2PowOut", "b2p"}};
  op = opt_op("adam", adam_in, 7, adam_out, 5);
  check_outs_same_at_counts(s, op, (const char *const[]){"p_out", "m1_out", "m2_out"}, 3);
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(optimizers_at_every_count) {
  check_optimizers(CT_FLOAT32, 250001);
  check_optimizers(CT_FLOAT64, 100003);
}
END_TEST

/* ---- softmax_with_cross_entropy and its gradient --------------------------------------------- */

static double data_label(int64_t i) { return (double)(i * 7 % 100); }

START_TEST(cross_entropy_and_grad_at_every_count) {
  for (int soft = 0; soft < 2; soft++) {
    ct_scope *s = ct_scope_new();
    put_fn(s, "x", CT_FLOAT32, CT_DIMS(3000, 100), data_mixed);
    if (soft) put_fn(s, "y", CT_FLOAT32, CT_DIMS(3000, 100), data_small);
    else put_fn(s, "y", CT_INT64, CT_DIMS(3000, 1), data_label);
    put_fn(s, "dl", CT_FLOAT32, CT_DIMS(3000, 1), data_small);
    ct_op *op = new_op("softmax_with_cross_entropy");
    ck_assert_int_eq(ct_op_set_input(op, "Logits", "x"), CT_OK);
    ck_assert_int_eq(ct_op_set_input(op, "Label", "y"), CT_OK);
    ck_assert_int_eq(ct_op_set_output(op, "Softmax", "sm"), CT_OK);
    ck_assert_int_eq(ct_op_set_output(op, "Loss", "loss"), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_bool(op, "soft_label", soft), CT_OK);
    check_outs_same_at_counts(s, op, (const char *const[]){"sm", "loss"}, 2);
    ct_op_free(op);
    op = new_op("softmax_with_cross_entropy_grad");
    ck_assert_int_eq(ct_op_set_input(op, "Softmax", "sm"), CT_OK);
    ck_assert_int_eq(ct_op_set_input(op, "Label", "y"), CT_OK);
    ck_assert_int_eq(ct_op_set_input(op, "Loss@GRAD", "dl"), CT_OK);
    ck_assert_int_eq(ct_op_set_output(op, "Logits@GRAD", "dx"), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_bool(op, "soft_label", soft), CT_OK);
    check_same_at_counts(s, op, "dx");
    ct_op_free(op);
    ct_scope_free(s);
  }
}
END_TEST

/* ---- concat and its gradient ----------------------------------------------------------------- */

START_TEST(concat_and_grad_at_every_count) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "a", CT_FLOAT32, CT_DIMS(600, 3, 100), data_iota);
  put_fn(s, "b", CT_FLOAT32, CT_DIMS(600, 2, 100), data_mixed);
  const char *xs[] = {"a", "b"};
  ct_op *op = op_many("concat", xs, 2, "out");
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", 1), CT_OK);
  check_same_at_counts(s, op, "out");
  const float *o = result(s, "out", CT_FLOAT32, CT_DIMS(600, 5, 100));
  for (int64_t i = 0; i < 600 * 5 * 100; i++) {
    int64_t r = i / 500, c = i % 500;
    ck_assert(o[i] == (c < 300 ? (float)(r * 300 + c) : (float)data_mixed(r * 200 + c - 300)));
  }
  ct_op_free(op);
  op = new_op("concat_grad");
  ck_assert_int_eq(ct_op_set_inputs(op, "X", xs, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Out@GRAD", "out"), CT_OK);
  const char *dxs[] = {"da", "db"};
  ck_assert_int_eq(ct_op_set_outputs(op, "X@GRAD", dxs, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", 1), CT_OK);
  check_outs_same_at_counts(s, op, dxs, 2);
  const float *da = result(s, "da", CT_FLOAT32, CT_DIMS(600, 3, 100));
  for (int64_t i = 0; i < 600 * 300; i++) ck_assert(da[i] == (float)i);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static Suite *threads_train_suite(void) {
  Suite *s = suite_create("threads_train");
  CT_ADD_TEST(s, broadcast_grads_at_every_count);
  CT_ADD_TEST(s, bias_grad_sums_rows_in_order);
  CT_ADD_TEST(s, reduce_sum_of_leading_and_middle_dims_at_every_count);
  CT_ADD_TEST(s, mean_grad_at_every_count);
  CT_ADD_TEST(s, optimizers_at_every_count);
  CT_ADD_TEST(s, cross_entropy_and_grad_at_every_count);
  CT_ADD_TEST(s, concat_and_grad_at_every_count);
  return s;
}

CT_TEST_MAIN(threads_train_suite)
