/* SPDX-License-Identifier: Apache-2.0 */
/* The quant family (ops/defs/quant.h): quantize_linear per tensor and per axis (a negative axis
 * too), ties rounded half to even after a float32 division (and a float64 one for float64 and
 * int32 X, as numpy promotes them), uint8 and int8 saturation at both ends with infinities and
 * NaN, a Scale of 0, float16 X, no zero point (uint8); dequantize_linear on int8, uint8 and int32
 * per tensor and per axis; the refusals (Scale's length, rank and dtype, ZeroPoint's dtype and
 * dims, an int32 zero point other than 0, an axis out of range, an X without a kernel), no
 * gradient; ONNX's QuantizeLinear and DequantizeLinear imported (opset 13, per axis, the zero
 * point left out) and exported back as the same standard nodes, loading to the same bits. */
#define _GNU_SOURCE
#include <math.h>
#include <unistd.h>

#include <corten/corten.h>
#include <corten/onnx.h>

#include "file_util.h"
#include "onnx_util.h"
#include "op_util.h"

#define SCALAR ((ct_ddim){.rank = 0})

/* quantize_linear or dequantize_linear of x, scale and (when not NULL) zero into y. */
static ct_op *q_op(const char *type, const char *zero, int64_t axis) {
  ct_op *op = new_op(type);
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Scale", "s"), CT_OK);
  if (zero != NULL) ck_assert_int_eq(ct_op_set_input(op, "ZeroPoint", zero), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Y", "y"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", axis), CT_OK);
  return op;
}

static void expect_u8(ct_scope *s, ct_ddim d, const uint8_t *want, int64_t n) {
  const uint8_t *y = result(s, "y", CT_UINT8, d);
  for (int64_t i = 0; i < n; i++) {
    ck_assert_msg(y[i] == want[i], "y[%lld] = %d, want %d", (long long)i, y[i], want[i]);
  }
}

static void expect_i8(ct_scope *s, ct_ddim d, const int8_t *want, int64_t n) {
  const int8_t *y = result(s, "y", CT_INT8, d);
  for (int64_t i = 0; i < n; i++) {
    ck_assert_msg(y[i] == want[i], "y[%lld] = %d, want %d", (long long)i, y[i], want[i]);
  }
}

/* Bit for bit, so a float32 product is checked exactly. */
static void expect_f32(ct_scope *s, ct_ddim d, const float *want, int64_t n) {
  const float *y = result(s, "y", CT_FLOAT32, d);
  for (int64_t i = 0; i < n; i++) {
    ck_assert_msg(f32_bits(y[i]) == f32_bits(want[i]), "y[%lld] = %.9g, want %.9g",
                  (long long)i, (double)y[i], (double)want[i]);
  }
}

/* ---- quantize_linear ------------------------------------------------------------------------- */

START_TEST(quantize_per_tensor_uint8) {
  ct_scope *s = ct_scope_new();
  static const float x[] = {0, 2, 3, 1000, -254, 510, -4.1f, 7};
  const float sc = 2;
  const uint8_t zp = 128;
  put(s, "x", CT_FLOAT32, CT_DIMS(2, 4), x);
  put(s, "s", CT_FLOAT32, SCALAR, &sc); /* a scalar */
  put(s, "z", CT_UINT8, SCALAR, &zp);
  ct_op *op = q_op("quantize_linear", "z", 1);
  run(op, s);
  /* 3 / 2 = 1.5 -> 2; -4.1 / 2 = -2.05 -> -2; 7 / 2 = 3.5 -> 4. */
  static const uint8_t want[] = {128, 129, 130, 255, 1, 255, 126, 132};
  expect_u8(s, CT_DIMS(2, 4), want, 8);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(quantize_ties_round_half_to_even) {
  ct_scope *s = ct_scope_new();
  static const float x[] = {2.5f, 3.5f, -2.5f, -3.5f, 0.5f, 1.5f, -0.5f, 2.4999998f};
  const float one = 1;
  const int8_t zp = 0;
  put(s, "x", CT_FLOAT32, CT_DIMS(8), x);
  put(s, "s", CT_FLOAT32, CT_DIMS(1), &one);
  put(s, "z", CT_INT8, CT_DIMS(1), &zp);
  ct_op *op = q_op("quantize_linear", "z", 0);
  run(op, s);
  static const int8_t want[] = {2, 4, -2, -4, 0, 2, 0, 2};
  expect_i8(s, CT_DIMS(8), want, 8);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* x / 0.1f in float32 lands on a tie that the exact quotient misses: 0.35f / 0.1f is 3.5 in
 * float32 (3.4999999 in double) and rounds to 4; 0x3ee66667 / 0.1f is 4.5 (4.5000001) and
 * rounds to 4. ONNX's reference divides in float32 too. A float64 X divides in double. */
START_TEST(quantize_divides_in_float32) {
  ct_scope *s = ct_scope_new();
  const float x[] = {0.35f, f32_from_bits(0x3ee66667u), 0.75f, f32_from_bits(0x3f59999au)};
  const float tenth = 0.1f;
  put(s, "x", CT_FLOAT32, CT_DIMS(4), x);
  put(s, "s", CT_FLOAT32, SCALAR, &tenth);
  ct_op *op = q_op("quantize_linear", NULL, 1);
  run(op, s);
  static const uint8_t want[] = {4, 4, 8, 8};
  expect_u8(s, CT_DIMS(4), want, 4);
  static const double xd[] = {0.35, 0.45, 0.75, 0.85};
  put(s, "x", CT_FLOAT64, CT_DIMS(4), xd);
  run(op, s);
  static const uint8_t want_d[] = {3, 4, 7, 8}; /* 3.49999995, 4.49999993, 7.4999999, 8.4999999 */
  expect_u8(s, CT_DIMS(4), want_d, 4);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(quantize_saturates_both_ends) {
  ct_scope *s = ct_scope_new();
  const float x[] = {-1, 256, 300, INFINITY, -INFINITY, NAN, 1e30f, -1e30f, -0.4f, 254.5f};
  const float one = 1;
  put(s, "x", CT_FLOAT32, CT_DIMS(10), x);
  put(s, "s", CT_FLOAT32, SCALAR, &one);
  ct_op *op = q_op("quantize_linear", NULL, 1);
  run(op, s);
  /* NaN gives the lowest value, as ONNX's reference does; 254.5 -> 254 (even). */
  static const uint8_t want_u[] = {0, 255, 255, 255, 0, 0, 255, 0, 0, 254};
  expect_u8(s, CT_DIMS(10), want_u, 10);
  ct_op_free(op);
  const int8_t zp = -10;
  put(s, "z", CT_INT8, SCALAR, &zp);
  op = q_op("quantize_linear", "z", 1);
  run(op, s);
  /* -1 - 10 = -11; 256 - 10 = 246 -> 127; -0.4 -> 0 - 10; 254.5 -> 254 - 10 -> 127. */
  static const int8_t want_i[] = {-11, 127, 127, 127, -128, -128, 127, -128, -10, 127};
  expect_i8(s, CT_DIMS(10), want_i, 10);
  static const float edges[] = {-118, -119, 137, 138};
  put(s, "x", CT_FLOAT32, CT_DIMS(4), edges);
  run(op, s);
  static const int8_t want_e[] = {-128, -128, 127, 127};
  expect_i8(s, CT_DIMS(4), want_e, 4);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* A Scale of 0 is not refused (DynamicQuantizeLinear makes one for an all-zero X): 0 / 0 is NaN
 * (the lowest value), +-1 / 0 are infinities that saturate. */
START_TEST(quantize_scale_zero_follows_the_arithmetic) {
  ct_scope *s = ct_scope_new();
  static const float x[] = {0, 1, -1};
  const float zero = 0;
  const uint8_t zp = 7;
  put(s, "x", CT_FLOAT32, CT_DIMS(3), x);
  put(s, "s", CT_FLOAT32, CT_DIMS(1), &zero);
  put(s, "z", CT_UINT8, CT_DIMS(1), &zp);
  ct_op *op = q_op("quantize_linear", "z", 1);
  run(op, s);
  static const uint8_t want[] = {0, 255, 0};
  expect_u8(s, CT_DIMS(3), want, 3);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* X [2, 3, 2] with one scale and zero point per slice of dim 1 (axis 1, then -2). */
START_TEST(quantize_per_axis) {
  ct_scope *s = ct_scope_new();
  static const float x[] = {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6};
  static const float sc[] = {1, 2, 4};
  static const int8_t zp[] = {0, 10, -10};
  put(s, "x", CT_FLOAT32, CT_DIMS(2, 3, 2), x);
  put(s, "s", CT_FLOAT32, CT_DIMS(3), sc);
  put(s, "z", CT_INT8, CT_DIMS(3), zp);
  /* Slice 1: 3 / 2 = 1.5 -> 2, 4 / 2 = 2; slice 2: 5 / 4 = 1.25 -> 1, 6 / 4 = 1.5 -> 2. */
  static const int8_t want[] = {1, 2, 12, 12, -9, -8, -1, -2, 8, 8, -11, -12};
  for (int64_t axis = 1; axis >= -2; axis -= 3) {
    ct_op *op = q_op("quantize_linear", "z", axis);
    run(op, s);
    expect_i8(s, CT_DIMS(2, 3, 2), want, 12);
    ct_op_free(op);
  }
  ct_scope_free(s);
}
END_TEST

/* float16 X divides in float32; int32 X in double (numpy's promotion). No zero point: uint8. */
START_TEST(quantize_float16_and_int32_inputs) {
  ct_scope *s = ct_scope_new();
  const uint16_t h[] = {half_exact(2.5), half_exact(3.5), half_exact(-1), half_exact(600)};
  const float one = 1, two = 2;
  put(s, "x", CT_FLOAT16, CT_DIMS(4), h);
  put(s, "s", CT_FLOAT32, SCALAR, &one);
  ct_op *op = q_op("quantize_linear", NULL, 1);
  run(op, s);
  static const uint8_t want_h[] = {2, 4, 0, 255};
  expect_u8(s, CT_DIMS(4), want_h, 4);
  static const int32_t xi[] = {7, 5, 300000, -3};
  put(s, "x", CT_INT32, CT_DIMS(4), xi);
  put(s, "s", CT_FLOAT32, SCALAR, &two);
  run(op, s);
  static const uint8_t want_i[] = {4, 2, 255, 0};
  expect_u8(s, CT_DIMS(4), want_i, 4);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- dequantize_linear ----------------------------------------------------------------------- */

START_TEST(dequantize_per_tensor_and_per_axis) {
  ct_scope *s = ct_scope_new();
  static const uint8_t xu[] = {0, 3, 128, 255};
  const float sc = 0.1f;
  const uint8_t zu = 128;
  put(s, "x", CT_UINT8, CT_DIMS(4), xu);
  put(s, "s", CT_FLOAT32, SCALAR, &sc);
  put(s, "z", CT_UINT8, SCALAR, &zu);
  ct_op *op = q_op("dequantize_linear", "z", 1);
  run(op, s);
  const float want_u[] = {-128.0f * 0.1f, -125.0f * 0.1f, 0, 127.0f * 0.1f};
  expect_f32(s, CT_DIMS(4), want_u, 4);
  ct_op_free(op);
  /* int8 [2, 2] per axis 0. */
  static const int8_t xi[] = {-128, 127, 5, -5};
  static const float scs[] = {0.5f, 3};
  static const int8_t zi[] = {-128, 1};
  put(s, "x", CT_INT8, CT_DIMS(2, 2), xi);
  put(s, "s", CT_FLOAT32, CT_DIMS(2), scs);
  put(s, "z", CT_INT8, CT_DIMS(2), zi);
  op = q_op("dequantize_linear", "z", 0);
  run(op, s);
  static const float want_i[] = {0, 127.5f, 12, -18};
  expect_f32(s, CT_DIMS(2, 2), want_i, 4);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* int32 X (a bias) has no zero point: unwired, or all zeros; another value is refused. The
 * conversion to float32 rounds as numpy's astype does (2^24 + 1 -> 2^24). */
START_TEST(dequantize_int32) {
  ct_scope *s = ct_scope_new();
  static const int32_t x[] = {-7, 16777217, 1000};
  const float sc = 0.5f;
  put(s, "x", CT_INT32, CT_DIMS(3), x);
  put(s, "s", CT_FLOAT32, CT_DIMS(1), &sc);
  ct_op *op = q_op("dequantize_linear", NULL, 1);
  run(op, s);
  static const float want[] = {-3.5f, 8388608.0f, 500};
  expect_f32(s, CT_DIMS(3), want, 3);
  ct_op_free(op);
  int32_t z = 0;
  put(s, "z", CT_INT32, CT_DIMS(1), &z);
  op = q_op("dequantize_linear", "z", 1);
  run(op, s);
  expect_f32(s, CT_DIMS(3), want, 3);
  z = 3;
  put(s, "z", CT_INT32, CT_DIMS(1), &z);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "ZeroPoint variable 'z' holds 3", "int32 X",
            "give zeros", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- Refusals and the gradient --------------------------------------------------------------- */

START_TEST(refusals_name_the_input_and_the_fix) {
  ct_scope *s = ct_scope_new();
  static const float x[] = {1, 2, 3, 4, 5, 6};
  static const float sc3[] = {1, 2, 3}, sc4[] = {1, 2, 3, 4};
  static const double sd = 1;
  static const int32_t zi[] = {0, 0, 0};
  static const uint8_t zu[] = {0, 0}, zu3[] = {0, 0, 0}, zu4[] = {0, 0, 0, 0};
  static const int8_t xi[] = {1, 2, 3, 4, 5, 6};
  put(s, "x", CT_FLOAT32, CT_DIMS(2, 3), x);
  ct_op *q = q_op("quantize_linear", "z", 1), *q0 = q_op("quantize_linear", NULL, 5);
  /* Scale of the wrong length for axis 1, of rank 2, of float64. */
  put(s, "s", CT_FLOAT32, CT_DIMS(4), sc4);
  put(s, "z", CT_UINT8, CT_DIMS(4), zu4);
  run_fails(q, s, CT_ERR_SHAPE, "Scale variable 's' has dims [4]", "extent 3 on axis 1",
            "one per slice along the axis", NULL);
  put(s, "s", CT_FLOAT32, CT_DIMS(1, 3), sc3);
  run_fails(q, s, CT_ERR_SHAPE, "Scale variable 's' has dims [1,3]", "give a scalar or a vector",
            NULL);
  put(s, "s", CT_FLOAT64, SCALAR, &sd);
  run_fails(q, s, CT_ERR_TYPE_MISMATCH, "Scale variable 's' is float64", "float32", NULL);
  /* ZeroPoint of another dtype than uint8 or int8, or of other dims than Scale. */
  put(s, "s", CT_FLOAT32, CT_DIMS(3), sc3);
  put(s, "z", CT_INT32, CT_DIMS(3), zi);
  run_fails(q, s, CT_ERR_TYPE_MISMATCH, "ZeroPoint variable 'z' is int32",
            "give a uint8 or int8 zero point", NULL);
  put(s, "z", CT_UINT8, CT_DIMS(2), zu);
  run_fails(q, s, CT_ERR_SHAPE, "ZeroPoint variable 'z' has dims [2]",
            "one zero point per scale", NULL);
  /* Axis out of range (read only per axis). */
  run_fails(q0, s, CT_ERR_OUT_OF_RANGE, "attribute 'axis' is 5", NULL);
  /* X without a kernel. */
  put(s, "z", CT_UINT8, CT_DIMS(3), zu3);
  put(s, "x", CT_INT8, CT_DIMS(2, 3), xi);
  CT_ASSERT_FAILS(ct_op_run(q, s, ct_cpu()), CT_ERR_UNSUPPORTED);
  /* dequantize_linear: ZeroPoint of another dtype than X. */
  ct_op *d = q_op("dequantize_linear", "z", 1);
  run_fails(d, s, CT_ERR_TYPE_MISMATCH, "ZeroPoint variable 'z' is uint8 and X variable 'x' int8",
            "give a zero point of X's dtype", NULL);
  put(s, "x", CT_FLOAT32, CT_DIMS(2, 3), x);
  CT_ASSERT_FAILS(ct_op_run(d, s, ct_cpu()), CT_ERR_UNSUPPORTED);
  ct_op_free(q);
  ct_op_free(q0);
  ct_op_free(d);
  ct_scope_free(s);
}
END_TEST

START_TEST(no_gradient) {
  ct_op_def def;
  ck_assert_int_eq(ct_op_type_get("quantize_linear", &def), CT_OK);
  ck_assert_ptr_null(def.grad);
  ck_assert_int_eq(ct_op_type_get("dequantize_linear", &def), CT_OK);
  ck_assert_ptr_null(def.grad);
}
END_TEST

/* ---- ONNX ------------------------------------------------------------------------------------ */

/* x [2, 2] float -> QuantizeLinear(x, s [2], z [2] int8, axis 0) -> q -> DequantizeLinear(q,
 * s2 scalar, no zero point) -> y. */
static pb qdq_model(void) {
  static const int64_t xd[2] = {2, 2}, two[1] = {2};
  static const float s[2] = {0.5f, 2}, s2 = 4;
  static const int8_t z[2] = {1, -1};
  pb g = {0}, n, t, v;
  n = ox_node_pb("QuantizeLinear", (const char *[]){"x", "s", "z", NULL},
                 (const char *[]){"q", NULL});
  ox_attr_int_pb(&n, "axis", 0);
  pb_msg(&g, 1, &n);
  n = ox_node_pb("DequantizeLinear", (const char *[]){"q", "s2", NULL},
                 (const char *[]){"y", NULL});
  pb_msg(&g, 1, &n);
  pb_str(&g, 2, "qdq");
  t = ox_tensor_pb("s", 1, two, 1, s, sizeof s);
  pb_msg(&g, 5, &t);
  t = ox_tensor_pb("z", 3, two, 1, z, sizeof z); /* INT8 */
  pb_msg(&g, 5, &t);
  t = ox_tensor_pb("s2", 1, NULL, 0, &s2, sizeof s2);
  pb_msg(&g, 5, &t);
  v = ox_value_pb("x", 1, xd, 2);
  pb_msg(&g, 11, &v);
  v = ox_value_pb("y", 1, xd, 2);
  pb_msg(&g, 12, &v);
  return ox_model_pb(&g, 13);
}

START_TEST(onnx_import_and_export) {
  make_work_dir("onnx-quant");
  pb m = qdq_model();
  ct_scope *s = ct_scope_new();
  ct_onnx_model *om = ct_onnx_load_buffer(m.p, m.n, s);
  ck_assert_msg(om != NULL, "%s", ct_last_error());
  static const float x[] = {1.25f, -3, 5, 200};
  put(s, "x", CT_FLOAT32, CT_DIMS(2, 2), x);
  ct_executor *e = ct_executor_new(ct_onnx_program(om), s, ct_cpu());
  ck_assert_msg(e != NULL && ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  ct_executor_free(e);
  /* Row 0: 1.25 / 0.5 = 2.5 -> 2, + 1; -6 + 1. Row 1: 5 / 2 = 2.5 -> 2, - 1; 100 - 1. Times 4. */
  static const int8_t want_q[] = {3, -5, 1, 99};
  const int8_t *q = result(s, "q", CT_INT8, CT_DIMS(2, 2));
  for (int i = 0; i < 4; i++) ck_assert_int_eq(q[i], want_q[i]);
  static const float want[] = {12, -20, 4, 396};
  expect_f32(s, CT_DIMS(2, 2), want, 4);
  /* Exported as the same standard nodes, which load back to the same ops and bits. */
  const char *in[] = {"x"}, *out[] = {"y"};
  ck_assert_msg(ct_onnx_save(in_dir("qdq.onnx"), ct_onnx_program(om), s, in, 1, out, 1) == CT_OK,
                "%s", ct_last_error());
  char types[128];
  ck_assert_int_eq(ct_onnx_op_types(in_dir("qdq.onnx"), types, sizeof types), CT_OK);
  ck_assert_str_eq(types, "QuantizeLinear,DequantizeLinear");
  ct_scope *s2 = ct_scope_new();
  ct_onnx_model *om2 = ct_onnx_load(in_dir("qdq.onnx"), s2);
  ck_assert_msg(om2 != NULL, "%s", ct_last_error());
  put(s2, "x", CT_FLOAT32, CT_DIMS(2, 2), x);
  e = ct_executor_new(ct_onnx_program(om2), s2, ct_cpu());
  ck_assert_msg(e != NULL && ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  ct_executor_free(e);
  expect_f32(s2, CT_DIMS(2, 2), want, 4);
  ct_onnx_free(om2);
  ct_scope_free(s2);
  ct_onnx_free(om);
  ct_scope_free(s);
  free(m.p);
  remove_work_dir();
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("ops_quant");
  CT_ADD_TEST(s, quantize_per_tensor_uint8);
  CT_ADD_TEST(s, quantize_ties_round_half_to_even);
  CT_ADD_TEST(s, quantize_divides_in_float32);
  CT_ADD_TEST(s, quantize_saturates_both_ends);
  CT_ADD_TEST(s, quantize_scale_zero_follows_the_arithmetic);
  CT_ADD_TEST(s, quantize_per_axis);
  CT_ADD_TEST(s, quantize_float16_and_int32_inputs);
  CT_ADD_TEST(s, dequantize_per_tensor_and_per_axis);
  CT_ADD_TEST(s, dequantize_int32);
  CT_ADD_TEST(s, refusals_name_the_input_and_the_fix);
  CT_ADD_TEST(s, no_gradient);
  CT_ADD_TEST(s, onnx_import_and_export);
  return s;
}

CT_TEST_MAIN(make_suite)
