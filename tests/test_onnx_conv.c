/* SPDX-License-Identifier: Apache-2.0 */
/* The ONNX rules of onnx/rules_conv.c on models written byte by byte: a 1-D Conv with auto_pad
 * SAME_LOWER (the odd pad at the beginning) against SAME_UPPER, by hand; SAME_LOWER following
 * the dims fed, not the declared ones; global pooling of 1-D data; a 3-D Conv as conv_nd,
 * exported back as Conv; a 4-D one refused;
 * BatchNormalization in training mode (opset 15) giving Y and the new running mean and variance,
 * its inputs unchanged; ConvTranspose importing with output_shape and refusing an output_shape
 * whose length disagrees with kernel_shape. */
#define _GNU_SOURCE
#include <math.h>

#include "file_util.h"
#include "onnx_util.h"
#include "op_util.h"

enum { FLOAT = 1 };

static void attr_string(pb *node, const char *name, const char *v) {
  pb a = {0};
  pb_str(&a, 1, name);
  pb_int(&a, 20, 3); /* STRING */
  pb_str(&a, 4, v);
  pb_msg(node, 5, &a);
}

/* A model of one node (taken) at opset, with float graph inputs in[] of dims in_dims[] (rank
 * in_rank[]) and float outputs out[] (no shape). */
static pb one_node(pb *node, int64_t opset, const char *const *in, const int64_t (*in_dims)[5],
                   const int *in_rank, const char *const *out) {
  pb g = {0}, v;
  pb_msg(&g, 1, node);
  pb_str(&g, 2, "conv");
  for (size_t i = 0; in[i] != NULL; i++) {
    v = ox_value_pb(in[i], FLOAT, in_dims[i], in_rank[i]);
    pb_msg(&g, 11, &v);
  }
  for (size_t i = 0; out[i] != NULL; i++) {
    v = ox_value_pb(out[i], FLOAT, NULL, 0);
    pb_msg(&g, 12, &v);
  }
  return ox_model_pb(&g, opset);
}

static void set_f32(ct_scope *s, const char *name, const float *v, ct_ddim d) {
  ct_tensor *t = ct_var_tensor(ct_scope_find_var(s, name));
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(ct_tensor_set_value(t, v, d, CT_FLOAT32, ct_cpu()), CT_OK);
}

static void run_model(ct_onnx_model *om, ct_scope *s) {
  ct_executor *e = ct_executor_new(ct_onnx_program(om), s, ct_cpu());
  ck_assert_msg(e != NULL && ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  ct_executor_free(e);
}

/* Conv of X [1, 1, 4] = 1 2 3 4 by W [1, 1, 2] = 1 10 with auto_pad `pad`: y[o] sums
 * x[o - pb + k] w[k] over the taps inside X. */
static void conv_1d(const char *pad, const float *want) {
  static const char *const in[] = {"x", "w", NULL}, *const out[] = {"y", NULL};
  static const int64_t dims[2][5] = {{1, 1, 4}, {1, 1, 2}}, ks[1] = {2};
  static const int rank[2] = {3, 3};
  static const float x[4] = {1, 2, 3, 4}, w[2] = {1, 10};
  pb n = ox_node_pb("Conv", in, out);
  ox_attr_ints_pb(&n, "kernel_shape", ks, 1);
  attr_string(&n, "auto_pad", pad);
  pb m = one_node(&n, 11, in, dims, rank, out);
  ct_scope *s = ct_scope_new();
  ct_onnx_model *om = ct_onnx_load_buffer(m.p, m.n, s);
  ck_assert_msg(om != NULL, "%s", ct_last_error());
  set_f32(s, "x", x, CT_DIMS(1, 1, 4));
  set_f32(s, "w", w, CT_DIMS(1, 1, 2));
  run_model(om, s);
  const float *y = result(s, "y", CT_FLOAT32, CT_DIMS(1, 1, 4));
  for (int i = 0; i < 4; i++) ck_assert_float_eq(y[i], want[i]);
  ct_onnx_free(om);
  ct_scope_free(s);
  free(m.p);
}

START_TEST(conv_1d_same_lower_and_upper) {
  static const float lower[4] = {10, 21, 32, 43}, upper[4] = {21, 32, 43, 4};
  conv_1d("SAME_LOWER", lower);
  conv_1d("SAME_UPPER", upper);
}
END_TEST

/* Loads the model expecting CT_ERR_UNSUPPORTED with each string in the message. */
static void load_refused(pb *m, const char *a, const char *b) {
  ct_scope *s = ct_scope_new();
  ck_assert_ptr_null(ct_onnx_load_buffer(m->p, m->n, s));
  ck_assert_int_eq(ct_last_status(), CT_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(ct_last_error(), a) != NULL && strstr(ct_last_error(), b) != NULL,
                "'%s', '%s' not in: %s", a, b, ct_last_error());
  ct_scope_free(s);
  free(m->p);
}

/* SAME_LOWER's pads come from the dims fed, not the declared ones: X declared [1, 1, N] runs
 * at N = 5 and N = 3 with the extra pad at the beginning (W = 1 10: y[o] = x[o-1] + 10 x[o]). */
START_TEST(conv_same_lower_follows_the_fed_dims) {
  static const char *const in[] = {"x", "w", NULL}, *const out[] = {"y", NULL};
  static const int64_t dims[2][5] = {{1, 1, -1}, {1, 1, 2}}, ks[1] = {2};
  static const int rank[2] = {3, 3};
  static const float x[5] = {1, 2, 3, 4, 5}, w[2] = {1, 10}, want[5] = {10, 21, 32, 43, 54};
  pb n = ox_node_pb("Conv", in, out);
  ox_attr_ints_pb(&n, "kernel_shape", ks, 1);
  attr_string(&n, "auto_pad", "SAME_LOWER");
  pb m = one_node(&n, 11, in, dims, rank, out);
  for (int64_t len = 5; len >= 3; len -= 2) {
    ct_scope *s = ct_scope_new();
    ct_onnx_model *om = ct_onnx_load_buffer(m.p, m.n, s);
    ck_assert_msg(om != NULL, "%s", ct_last_error());
    set_f32(s, "x", x, CT_DIMS(1, 1, len));
    set_f32(s, "w", w, CT_DIMS(1, 1, 2));
    run_model(om, s);
    const float *y = result(s, "y", CT_FLOAT32, CT_DIMS(1, 1, len));
    for (int64_t i = 0; i < len; i++) ck_assert_float_eq(y[i], want[i]);
    ct_onnx_free(om);
    ct_scope_free(s);
  }
  free(m.p);
}
END_TEST

/* GlobalAveragePool and GlobalMaxPool of 1-D data (X declared [1, 2, 3]): pool_nd's global
 * pooling, Y [1, 2, 1]. */
START_TEST(global_pooling_of_1d_data) {
  static const char *const in[] = {"x", NULL}, *const out[] = {"y", NULL};
  static const int64_t dims[1][5] = {{1, 2, 3}};
  static const int rank[1] = {3};
  static const float x[6] = {1, 2, 6, -1, -4, 2};
  static const char *const types[2] = {"GlobalAveragePool", "GlobalMaxPool"};
  static const float want[2][2] = {{3, -1}, {6, 2}};
  for (int t = 0; t < 2; t++) {
    pb n = ox_node_pb(types[t], in, out);
    pb m = one_node(&n, 11, in, dims, rank, out);
    ct_scope *s = ct_scope_new();
    ct_onnx_model *om = ct_onnx_load_buffer(m.p, m.n, s);
    ck_assert_msg(om != NULL, "%s", ct_last_error());
    set_f32(s, "x", x, CT_DIMS(1, 2, 3));
    run_model(om, s);
    const float *y = result(s, "y", CT_FLOAT32, CT_DIMS(1, 2, 1));
    ck_assert_float_eq(y[0], want[t][0]);
    ck_assert_float_eq(y[1], want[t][1]);
    ct_onnx_free(om);
    ct_scope_free(s);
    free(m.p);
  }
}
END_TEST

/* Model m (inputs x [1, 1, 3, 3, 3] = 0 .. 26 and w [1, 1, 2, 2, 2] of ones, output y) run twice
 * in the work dir `dir`: loaded from m, then from `file`, the first import saved there (its op
 * types checked to be `types`); y of dims yd must be want's n values both times. */
static void conv3d_rounds(const pb *m, const char *dir, const char *file, const char *types,
                          ct_ddim yd, const float *want, int n) {
  float x[27], w[8];
  for (int i = 0; i < 27; i++) x[i] = (float)i;
  for (int i = 0; i < 8; i++) w[i] = 1;
  make_work_dir(dir);
  for (int round = 0; round < 2; round++) {
    ct_scope *s = ct_scope_new();
    ct_onnx_model *om = round == 0 ? ct_onnx_load_buffer(m->p, m->n, s)
                                   : ct_onnx_load(in_dir(file), s);
    ck_assert_msg(om != NULL, "%s", ct_last_error());
    set_f32(s, "x", x, CT_DIMS(1, 1, 3, 3, 3));
    set_f32(s, "w", w, CT_DIMS(1, 1, 2, 2, 2));
    run_model(om, s);
    const float *y = result(s, "y", CT_FLOAT32, yd);
    for (int i = 0; i < n; i++) ck_assert_float_eq(y[i], want[i]);
    if (round == 0) {
      const char *ins[] = {"x", "w"}, *outs[] = {"y"};
      ck_assert_msg(ct_onnx_save(in_dir(file), ct_onnx_program(om), s, ins, 2, outs, 1) == CT_OK,
                    "%s", ct_last_error());
      char got[64];
      ck_assert_int_eq(ct_onnx_op_types(in_dir(file), got, sizeof got), CT_OK);
      ck_assert_str_eq(got, types);
    }
    ct_onnx_free(om);
    ct_scope_free(s);
  }
  remove_work_dir();
}

/* X [1, 1, 3, 3, 3] = 0 .. 26 by a 2 x 2 x 2 window of ones: each output sums its window,
 * 8 (9 a + 3 b + c) + 52; exported back as a standard Conv that loads to the same values. */
START_TEST(conv_3d_imports_as_conv_nd_and_exports_back) {
  static const char *const in[] = {"x", "w", NULL}, *const out[] = {"y", NULL};
  static const int64_t d3[2][5] = {{1, 1, 3, 3, 3}, {1, 1, 2, 2, 2}}, k3[3] = {2, 2, 2};
  static const int rank5[2] = {5, 5};
  static const float want[8] = {52, 60, 76, 84, 124, 132, 148, 156};
  pb n = ox_node_pb("Conv", in, out);
  ox_attr_ints_pb(&n, "kernel_shape", k3, 3);
  pb m = one_node(&n, 11, in, d3, rank5, out);
  conv3d_rounds(&m, "onnx-conv3d", "c3.onnx", "Conv", CT_DIMS(1, 1, 2, 2, 2), want, 8);
  free(m.p);
}
END_TEST

/* The same Conv, then GlobalAveragePool of its output (an intermediate whose rank the import
 * does not know: pool2d takes the 3-D planes as one): the mean of the eight sums, 104; saved,
 * the pooling goes out as GlobalAveragePool again (not an ai.corten node) and loads back to the
 * same value. */
START_TEST(global_average_pool_of_a_3d_intermediate) {
  static const int64_t d3[2][5] = {{1, 1, 3, 3, 3}, {1, 1, 2, 2, 2}};
  pb g = {0}, n, v;
  n = ox_node_pb("Conv", (const char *[]){"x", "w", NULL}, (const char *[]){"c", NULL});
  pb_msg(&g, 1, &n);
  n = ox_node_pb("GlobalAveragePool", (const char *[]){"c", NULL}, (const char *[]){"y", NULL});
  pb_msg(&g, 1, &n);
  pb_str(&g, 2, "conv3d_pool");
  for (int k = 0; k < 2; k++) {
    v = ox_value_pb(k ? "w" : "x", FLOAT, d3[k], 5);
    pb_msg(&g, 11, &v);
  }
  v = ox_value_pb("y", FLOAT, NULL, 0);
  pb_msg(&g, 12, &v);
  pb m = ox_model_pb(&g, 11);
  static const float want[1] = {104};
  conv3d_rounds(&m, "onnx-pool3d", "p3.onnx", "Conv,GlobalAveragePool", CT_DIMS(1, 1, 1, 1, 1),
                want, 1);
  free(m.p);
}
END_TEST

START_TEST(conv_refusals) {
  static const char *const in[] = {"x", "w", NULL}, *const out[] = {"y", NULL};
  static const int64_t d4[2][5] = {{1, 1, 3, 3, 3}, {1, 1, 2, 2, 2}}, k4[4] = {2, 2, 2, 2};
  static const int rank5[2] = {5, 5};
  pb n = ox_node_pb("Conv", in, out);
  ox_attr_ints_pb(&n, "kernel_shape", k4, 4);
  pb m = one_node(&n, 11, in, d4, rank5, out);
  load_refused(&m, "(Conv, opset 11)", "4-D convolution");
}
END_TEST

/* X [2, 1, 2] = 1 3 5 7 (one channel): batch mean 4, biased variance 5; running mean 0 and
 * variance 1 at momentum 0.9 become 0.4 and 1.4; Y = (x - 4) / sqrt(5 + 1e-5). */
START_TEST(batch_norm_training_mode) {
  static const char *const in[] = {"x", "s", "b", "m", "v", NULL};
  static const char *const out[] = {"y", "rm", "rv", NULL};
  static const int64_t dims[5][5] = {{2, 1, 2}, {1}, {1}, {1}, {1}};
  static const int rank[5] = {3, 1, 1, 1, 1};
  static const float x[4] = {1, 3, 5, 7}, one = 1, zero = 0;
  pb n = ox_node_pb("BatchNormalization", in, out);
  ox_attr_int_pb(&n, "training_mode", 1);
  pb m = one_node(&n, 15, in, dims, rank, out);
  ct_scope *s = ct_scope_new();
  ct_onnx_model *om = ct_onnx_load_buffer(m.p, m.n, s);
  ck_assert_msg(om != NULL, "%s", ct_last_error());
  set_f32(s, "x", x, CT_DIMS(2, 1, 2));
  set_f32(s, "s", &one, CT_DIMS(1));
  set_f32(s, "b", &zero, CT_DIMS(1));
  set_f32(s, "m", &zero, CT_DIMS(1));
  set_f32(s, "v", &one, CT_DIMS(1));
  run_model(om, s);
  const float *y = result(s, "y", CT_FLOAT32, CT_DIMS(2, 1, 2));
  for (int i = 0; i < 4; i++) {
    double want = (x[i] - 4) / sqrt(5 + 1e-5);
    ck_assert_msg(fabs(y[i] - want) <= 1e-6, "y[%d] = %.9g, expected %.9g", i, y[i], want);
  }
  ck_assert_float_eq_tol(*(const float *)result(s, "rm", CT_FLOAT32, CT_DIMS(1)), 0.4f, 1e-7f);
  ck_assert_float_eq_tol(*(const float *)result(s, "rv", CT_FLOAT32, CT_DIMS(1)), 1.4f, 2e-7f);
  ck_assert_float_eq(*(const float *)result(s, "m", CT_FLOAT32, CT_DIMS(1)), 0.0f);
  ck_assert_float_eq(*(const float *)result(s, "v", CT_FLOAT32, CT_DIMS(1)), 1.0f);
  ct_onnx_free(om);
  ct_scope_free(s);
  free(m.p);
}
END_TEST

/* ConvTranspose of X [1, 1, 2] = 1 2 by W [1, 1, 2] = 1 10 at stride 2, output_shape 5: the
 * full output 1 10 2 20, then a zero at the end. */
START_TEST(conv_transpose_output_shape) {
  static const char *const in[] = {"x", "w", NULL}, *const out[] = {"y", NULL};
  static const int64_t dims[2][5] = {{1, 1, 2}, {1, 1, 2}}, st[1] = {2}, os[1] = {5};
  static const int64_t ks2[2] = {2, 2};
  static const int rank[2] = {3, 3};
  static const float x[2] = {1, 2}, w[2] = {1, 10}, want[5] = {1, 10, 2, 20, 0};
  pb n = ox_node_pb("ConvTranspose", in, out);
  ox_attr_ints_pb(&n, "strides", st, 1);
  ox_attr_ints_pb(&n, "output_shape", os, 1);
  pb m = one_node(&n, 11, in, dims, rank, out);
  ct_scope *s = ct_scope_new();
  ct_onnx_model *om = ct_onnx_load_buffer(m.p, m.n, s);
  ck_assert_msg(om != NULL, "%s", ct_last_error());
  set_f32(s, "x", x, CT_DIMS(1, 1, 2));
  set_f32(s, "w", w, CT_DIMS(1, 1, 2));
  run_model(om, s);
  const float *y = result(s, "y", CT_FLOAT32, CT_DIMS(1, 1, 5));
  for (int i = 0; i < 5; i++) ck_assert_float_eq(y[i], want[i]);
  ct_onnx_free(om);
  ct_scope_free(s);
  free(m.p);
  n = ox_node_pb("ConvTranspose", in, out);
  ox_attr_ints_pb(&n, "output_shape", os, 1);
  ox_attr_ints_pb(&n, "kernel_shape", ks2, 2);
  m = one_node(&n, 11, in, dims, rank, out);
  load_refused(&m, "(ConvTranspose, opset 11)", "output_shape of 1 values for a 2-D kernel");
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("onnx_conv");
  CT_ADD_TEST(s, conv_1d_same_lower_and_upper);
  CT_ADD_TEST(s, conv_same_lower_follows_the_fed_dims);
  CT_ADD_TEST(s, global_pooling_of_1d_data);
  CT_ADD_TEST(s, conv_3d_imports_as_conv_nd_and_exports_back);
  CT_ADD_TEST(s, global_average_pool_of_a_3d_intermediate);
  CT_ADD_TEST(s, conv_refusals);
  CT_ADD_TEST(s, batch_norm_training_mode);
  CT_ADD_TEST(s, conv_transpose_output_shape);
  return s;
}

CT_TEST_MAIN(make_suite)
