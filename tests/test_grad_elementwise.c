/* SPDX-License-Identifier: Apache-2.0 */
/* The gradients of the elementwise ops, each against central finite differences in float64
 * (grad_util.h): the binary ops with same dims, broadcasting both ways, rank 0, a size-1 dim
 * and empty tensors; the activations, scale, cast and assign; the float32 kernels against
 * the float64 ones; and a broadcast input's gradient summed in Out's order, bit for bit. */
#include <corten/corten.h>

#include "grad_util.h"

static const char *const xy[] = {"x", "y"};
static const char *binary_type;

static void build_binary(ct_program *p) {
  ck_assert_int_eq(ct_program_append(p, op_xy(binary_type, "x", "y", "out")), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

/* Checks d(loss)/dx and d(loss)/dy of every binary op for x of dims xd and y of dims yd. */
static void check_binary(ct_ddim xd, ct_ddim yd) {
  static const char *const types[] = {"elementwise_add", "elementwise_sub", "elementwise_mul",
                                      "elementwise_div"};
  for (size_t t = 0; t < 4; t++) {
    ct_scope *s = ct_scope_new();
    put_smooth(s, "x", xd, 0.1);
    put_smooth(s, "y", yd, 0.7);
    binary_type = types[t];
    check_grads(s, build_binary, "loss", xy, 2);
    ct_scope_free(s);
  }
}

START_TEST(binary_grads_same_dims) { check_binary(CT_DIMS(2, 3), CT_DIMS(2, 3)); }
END_TEST

START_TEST(binary_grads_broadcast_row) { check_binary(CT_DIMS(3, 4), CT_DIMS(4)); }
END_TEST

START_TEST(binary_grads_broadcast_both_ways) { check_binary(CT_DIMS(3, 1, 2), CT_DIMS(4, 1)); }
END_TEST

START_TEST(binary_grads_rank0_against_matrix) { check_binary(CT_DIMS(), CT_DIMS(2, 3)); }
END_TEST

START_TEST(binary_grads_size1_dims) { check_binary(CT_DIMS(1, 3), CT_DIMS(1, 1)); }
END_TEST

/* Empty inputs: the gradients are empty tensors of the inputs' dims, and a broadcast input of
 * one element that meets an empty one gets 0. */
START_TEST(binary_grads_empty) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(0, 3), 0.1);
  put_smooth(s, "y", CT_DIMS(1, 3), 0.7);
  binary_type = "elementwise_mul";
  ct_program *p = ct_program_new();
  build_binary(p);
  ck_assert_int_eq(ct_program_append_backward(p, "loss", xy, 2), CT_OK);
  run_program(p, s);
  const ct_tensor *dx = ct_var_get_tensor(ct_scope_find_var(s, "x@GRAD"));
  const ct_tensor *dy = ct_var_get_tensor(ct_scope_find_var(s, "y@GRAD"));
  ck_assert(ct_ddim_equal(ct_tensor_dims(dx), CT_DIMS(0, 3)));
  ck_assert(ct_ddim_equal(ct_tensor_dims(dy), CT_DIMS(1, 3)));
  const double *g = ct_tensor_data(dy, CT_FLOAT64);
  for (int i = 0; i < 3; i++) ck_assert(g[i] == 0.0);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

static const char *unary_type;
static const char *const just_x[] = {"x"};

static void build_unary(ct_program *p) {
  ck_assert_int_eq(ct_program_append(p, op_x(unary_type, "x", "out")), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

START_TEST(activation_grads) {
  static const char *const types[] = {"relu", "sigmoid", "tanh", "exp", "log", "assign"};
  for (size_t t = 0; t < 6; t++) {
    ct_scope *s = ct_scope_new();
    unary_type = types[t];
    if (strcmp(unary_type, "log") == 0) {
      double v[15]; /* log: positive inputs */
      for (int i = 0; i < 15; i++) v[i] = 0.5 + 0.1 * i;
      put(s, "x", CT_FLOAT64, CT_DIMS(3, 5), v);
    } else {
      put_smooth(s, "x", CT_DIMS(3, 5), 0.2); /* values on both sides of 0 (relu) */
    }
    check_grads(s, build_unary, "loss", just_x, 1);
    ct_scope_free(s);
  }
}
END_TEST

static void build_scale(ct_program *p) {
  ct_op *op = op_x("scale", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_float(op, "scale", -2.5), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "bias", 3.0), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

START_TEST(scale_grad_ignores_bias) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(4), 0.3);
  check_grads(s, build_scale, "loss", just_x, 1);
  const double *g = var_f64(s, "x@GRAD");
  for (int i = 0; i < 4; i++) ck_assert(g[i] == -2.5 * grad_weight(i));
  ct_scope_free(s);
}
END_TEST

/* x float64 -> float32 -> float64: the gradient comes back in float64, through float32. */
static void build_cast(ct_program *p) {
  ct_op *a = op_x("cast", "x", "x32");
  ck_assert_int_eq(ct_op_set_attr_int(a, "dtype", CT_FLOAT32), CT_OK);
  ct_op *b = op_x("cast", "x32", "out");
  ck_assert_int_eq(ct_op_set_attr_int(b, "dtype", CT_FLOAT64), CT_OK);
  ck_assert_int_eq(ct_program_append(p, a), CT_OK);
  ck_assert_int_eq(ct_program_append(p, b), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

START_TEST(cast_grad_returns_to_the_input_dtype) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(5), 0.3);
  ct_program *p = ct_program_new();
  build_cast(p);
  ck_assert_int_eq(ct_program_append_backward(p, "loss", just_x, 1), CT_OK);
  run_program(p, s);
  const ct_tensor *g = ct_var_get_tensor(ct_scope_find_var(s, "x@GRAD"));
  ck_assert_int_eq(ct_tensor_dtype(g), CT_FLOAT64);
  ck_assert_int_eq(ct_tensor_dtype(ct_var_get_tensor(ct_scope_find_var(s, "x32@GRAD"))),
                   CT_FLOAT32);
  const double *gv = ct_tensor_data(g, CT_FLOAT64);
  for (int i = 0; i < 5; i++) ck_assert(gv[i] == grad_weight(i)); /* exact in float32 */
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

/* The float32 kernels compute what the float64 ones do, to float32's precision. */
START_TEST(binary_grad_f32_matches_f64) {
  float x32[6], y32[3], g32[6];
  double x64[6], y64[3], g64[6];
  for (int i = 0; i < 6; i++) {
    x64[i] = 0.5 + 0.25 * i, g64[i] = 1.0 - 0.125 * i;
    x32[i] = (float)x64[i], g32[i] = (float)g64[i];
  }
  for (int i = 0; i < 3; i++) y64[i] = 1.5 + 0.5 * i, y32[i] = (float)y64[i];
  for (int dt = 0; dt < 2; dt++) {
    ct_scope *s = ct_scope_new();
    ct_dtype t = dt ? CT_FLOAT64 : CT_FLOAT32;
    put(s, "x", t, CT_DIMS(2, 3), dt ? (void *)x64 : (void *)x32);
    put(s, "y", t, CT_DIMS(3), dt ? (void *)y64 : (void *)y32);
    put(s, "g", t, CT_DIMS(2, 3), dt ? (void *)g64 : (void *)g32);
    ct_op *op = new_op("elementwise_div_grad");
    ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
    ck_assert_int_eq(ct_op_set_input(op, "Y", "y"), CT_OK);
    ck_assert_int_eq(ct_op_set_input(op, "Out@GRAD", "g"), CT_OK);
    ck_assert_int_eq(ct_op_set_output(op, "X@GRAD", "dx"), CT_OK);
    ck_assert_int_eq(ct_op_set_output(op, "Y@GRAD", "dy"), CT_OK);
    ck_assert_msg(ct_op_run(op, s, ct_cpu()) == CT_OK, "%s", ct_last_error());
    ct_op_free(op);
    for (int j = 0; j < 3; j++) {
      double want = 0;
      for (int r = 0; r < 2; r++) {
        double xv = x64[r * 3 + j];
        want += -g64[r * 3 + j] * xv / (y64[j] * y64[j]);
      }
      double got = dt ? var_f64(s, "dy")[j] : (double)var_f32(s, "dy")[j];
      ck_assert_msg(fabs(got - want) <= (dt ? 1e-15 : 1e-6) * fabs(want), "dy[%d]", j);
    }
    ct_scope_free(s);
  }
}
END_TEST

/* float32 values whose sums round differently in another order. */
static double data_rough(int64_t i) {
  return (float)((double)((i * 7919 % 1000) - 500) * 1e-3 + (i % 13 == 0 ? 4096.0 : 0.0));
}

/* type's gradient (type: elementwise_add or _mul) with X dims xd and Y dims yd (one of them [11,1] against [3,11,5]), float32:
 * the broadcast input's gradient (X@GRAD when bx, else Y@GRAD) is each channel's terms (factor
 * g, or g times the other input when mul) added in Out's order from 0, bit for bit. 11
 * channels: a block of 8 summed side by side, then 3 one by one. */
static void check_bias_sum(const char *type, bool bx, bool mul) {
  const ct_ddim big = CT_DIMS(3, 11, 5), small = CT_DIMS(11, 1);
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, bx ? small : big, data_rough);
  put_fn(s, "y", CT_FLOAT32, bx ? big : small, data_unary);
  put_fn(s, "g", CT_FLOAT32, big, data_rough);
  ct_op *op = op_binary_grad(type);
  run(op, s);
  const float *got = result(s, bx ? "dx" : "dy", CT_FLOAT32, small);
  for (int64_t c = 0; c < 11; c++) {
    float want = 0;
    for (int64_t n = 0; n < 3; n++) {
      for (int64_t w = 0; w < 5; w++) {
        int64_t i = (n * 11 + c) * 5 + w;
        float g = (float)data_rough(i), other = (float)(bx ? data_unary(i) : data_rough(i));
        want += mul ? g * other : g;
      }
    }
    ck_assert_msg(f32_bits(got[c]) == f32_bits(want), "%s channel %lld: %.9g, want %.9g", type,
                  (long long)c, (double)got[c], (double)want);
  }
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(broadcast_grads_sum_in_out_order) {
  check_bias_sum("elementwise_add", false, false);
  check_bias_sum("elementwise_add", true, false);
  check_bias_sum("elementwise_mul", false, true);
  check_bias_sum("elementwise_mul", true, true);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("grad_elementwise");
  CT_ADD_TEST(s, binary_grads_same_dims);
  CT_ADD_TEST(s, binary_grads_broadcast_row);
  CT_ADD_TEST(s, binary_grads_broadcast_both_ways);
  CT_ADD_TEST(s, binary_grads_rank0_against_matrix);
  CT_ADD_TEST(s, binary_grads_size1_dims);
  CT_ADD_TEST(s, binary_grads_empty);
  CT_ADD_TEST(s, activation_grads);
  CT_ADD_TEST(s, scale_grad_ignores_bias);
  CT_ADD_TEST(s, cast_grad_returns_to_the_input_dtype);
  CT_ADD_TEST(s, binary_grad_f32_matches_f64);
  CT_ADD_TEST(s, broadcast_grads_sum_in_out_order);
  return s;
}

CT_TEST_MAIN(make_suite)
