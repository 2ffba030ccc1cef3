/* SPDX-License-Identifier: Apache-2.0 */
/* The quant family's integer ops (ops/defs/quant_int.c): matmul_integer (zero points per tensor
 * and per column subtracted, batch dims broadcast, a rank-1 Y, int32 wrapping past its range),
 * qlinear_matmul (the zero point added before the rounding, per-column scales, saturation to
 * int8), conv_integer (the padding contributing 0 after the input's zero point, per-channel
 * filter zero points with groups), qlinear_conv (Bias and per-channel scales), and
 * dynamic_quantize_linear (ONNX's example, an all-zero X, one of one sign, NaN); the refusals,
 * no gradient; and ONNX's five ops imported and exported back as the same standard nodes,
 * loading to the same bits. */
#define _GNU_SOURCE
#include <math.h>
#include <string.h>

#include <corten/corten.h>
#include <corten/onnx.h>

#include "file_util.h"
#include "onnx_util.h"
#include "op_util.h"

#define SCALAR ((ct_ddim){.rank = 0})

/* An op of type `type` with inputs slots[k] <- names[k] (NULL names skipped) and output `out`
 * <- "y". */
static ct_op *op_with(const char *type, const char *const *slots, const char *const *names,
                      size_t n, const char *out) {
  ct_op *op = new_op(type);
  for (size_t k = 0; k < n; k++) {
    if (names[k] != NULL) ck_assert_int_eq(ct_op_set_input(op, slots[k], names[k]), CT_OK);
  }
  ck_assert_int_eq(ct_op_set_output(op, out, "y"), CT_OK);
  return op;
}

static ct_op *mi_op(const char *xz, const char *yz) {
  static const char *const slots[] = {"X", "Y", "XZeroPoint", "YZeroPoint"};
  return op_with("matmul_integer", slots, (const char *[]){"x", "w", xz, yz}, 4, "Out");
}

static ct_op *qlm_op(void) {
  static const char *const slots[] = {"X", "XScale", "XZeroPoint", "Y",
                                      "YScale", "YZeroPoint", "OutScale", "OutZeroPoint"};
  return op_with("qlinear_matmul", slots,
                 (const char *[]){"x", "xs", "xz", "w", "ws", "wz", "os", "oz"}, 8, "Out");
}

static void expect_i32(ct_scope *s, ct_ddim d, const int32_t *want, int64_t n) {
  const int32_t *y = result(s, "y", CT_INT32, d);
  for (int64_t i = 0; i < n; i++) {
    ck_assert_msg(y[i] == want[i], "y[%lld] = %d, want %d", (long long)i, y[i], want[i]);
  }
}

static void expect_bytes(ct_scope *s, const char *name, ct_dtype t, ct_ddim d,
                         const int *want, int64_t n) {
  const void *y = result(s, name, t, d);
  for (int64_t i = 0; i < n; i++) {
    int v = t == CT_INT8 ? ((const int8_t *)y)[i] : ((const uint8_t *)y)[i];
    ck_assert_msg(v == want[i], "%s[%lld] = %d, want %d", name, (long long)i, v, want[i]);
  }
}

/* ---- matmul_integer -------------------------------------------------------------------------- */

START_TEST(matmul_integer_subtracts_per_tensor_and_per_column_zero_points) {
  ct_scope *s = ct_scope_new();
  static const uint8_t x[] = {10, 20, 30, 40, 50, 60}, xz = 10;
  static const int8_t w[] = {1, -2, 3, 4, -5, 6}, wz[] = {1, -2};
  put(s, "x", CT_UINT8, CT_DIMS(2, 3), x);
  put(s, "xz", CT_UINT8, SCALAR, &xz);
  put(s, "w", CT_INT8, CT_DIMS(3, 2), w);
  put(s, "wz", CT_INT8, CT_DIMS(2), wz);
  ct_op *op = mi_op("xz", "wz");
  run(op, s);
  /* [0 10 20; 30 40 50] [0 0; 2 6; -6 8] */
  static const int32_t want[] = {-100, 220, -220, 640};
  expect_i32(s, CT_DIMS(2, 2), want, 4);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(matmul_integer_broadcasts_batches_and_takes_a_vector) {
  ct_scope *s = ct_scope_new();
  static const int8_t x[] = {1, 2, 3, 4}, w[] = {5, 6};
  put(s, "x", CT_INT8, CT_DIMS(2, 1, 2), x);
  put(s, "w", CT_INT8, CT_DIMS(2, 1), w);
  ct_op *op = mi_op(NULL, NULL);
  run(op, s);
  static const int32_t want[] = {17, 39};
  expect_i32(s, CT_DIMS(2, 1, 1), want, 2);
  put(s, "w", CT_INT8, CT_DIMS(2), w); /* a column: its dim dropped */
  run(op, s);
  expect_i32(s, CT_DIMS(2, 1), want, 2);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* 40000 terms of 255 * 255: 2601000000, past int32, wraps as the reference's int32 sums do. */
START_TEST(matmul_integer_wraps_past_int32) {
  enum { K = 40000 };
  uint8_t *v = xmalloc(K, 1);
  memset(v, 255, K);
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_UINT8, CT_DIMS(1, K), v);
  put(s, "w", CT_UINT8, CT_DIMS(K, 1), v);
  ct_op *op = mi_op(NULL, NULL);
  run(op, s);
  static const int32_t want[] = {-1693967296};
  expect_i32(s, CT_DIMS(1, 1), want, 1);
  ct_op_free(op);
  ct_scope_free(s);
  free(v);
}
END_TEST

/* ---- qlinear_matmul -------------------------------------------------------------------------- */

static void put_f(ct_scope *s, const char *name, ct_ddim d, const float *v) {
  put(s, name, CT_FLOAT32, d, v);
}

/* C = {5, 15} times 0.5 is {2.5, 7.5}; + 1 then rounded half to even: {4, 8} (rounded first,
 * then + 1, it would be {3, 9}). */
START_TEST(qlinear_matmul_adds_the_zero_point_before_rounding) {
  ct_scope *s = ct_scope_new();
  static const uint8_t x = 5, w[] = {1, 3}, zero = 0, oz = 1;
  static const float one = 1, half = 0.5f;
  put(s, "x", CT_UINT8, CT_DIMS(1, 1), &x);
  put(s, "w", CT_UINT8, CT_DIMS(1, 2), w);
  put(s, "xz", CT_UINT8, SCALAR, &zero);
  put(s, "wz", CT_UINT8, SCALAR, &zero);
  put(s, "oz", CT_UINT8, SCALAR, &oz);
  put_f(s, "xs", SCALAR, &one);
  put_f(s, "ws", SCALAR, &half);
  put_f(s, "os", SCALAR, &one);
  ct_op *op = qlm_op();
  run(op, s);
  static const int want[] = {4, 8};
  expect_bytes(s, "y", CT_UINT8, CT_DIMS(1, 2), want, 2);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* C = {100, 200}; column scales {2, 0.25}; + -10: 190 saturates to 127, 40. */
START_TEST(qlinear_matmul_scales_per_column_and_saturates) {
  ct_scope *s = ct_scope_new();
  static const int8_t x[] = {100, -100}, w[] = {1, 1, 0, -1}, zero = 0, oz = -10;
  static const float one = 1, ws[] = {2, 0.25f};
  put(s, "x", CT_INT8, CT_DIMS(1, 2), x);
  put(s, "w", CT_INT8, CT_DIMS(2, 2), w);
  put(s, "xz", CT_INT8, SCALAR, &zero);
  put(s, "wz", CT_INT8, SCALAR, &zero);
  put(s, "oz", CT_INT8, SCALAR, &oz);
  put_f(s, "xs", SCALAR, &one);
  put_f(s, "ws", CT_DIMS(2), ws);
  put_f(s, "os", SCALAR, &one);
  ct_op *op = qlm_op();
  run(op, s);
  static const int want[] = {127, 40};
  expect_bytes(s, "y", CT_INT8, CT_DIMS(1, 2), want, 2);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- conv_integer, qlinear_conv -------------------------------------------------------------- */

static void conv_attrs(ct_op *op, int64_t pad, int64_t groups) {
  const int64_t pads[4] = {pad, pad, pad, pad}, ones[2] = {1, 1};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "paddings", pads, 4), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "strides", ones, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "groups", groups), CT_OK);
}

/* x - 1 = [0 1; 2 3] under a 2x2 filter of ones, padding 1: the padding adds 0, not 0 - 1. */
START_TEST(conv_integer_pads_with_zero_after_the_zero_point) {
  ct_scope *s = ct_scope_new();
  static const uint8_t x[] = {1, 2, 3, 4}, xz = 1, f[] = {1, 1, 1, 1};
  put(s, "x", CT_UINT8, CT_DIMS(1, 1, 2, 2), x);
  put(s, "xz", CT_UINT8, SCALAR, &xz);
  put(s, "f", CT_UINT8, CT_DIMS(1, 1, 2, 2), f);
  static const char *const slots[] = {"Input", "Filter", "InputZeroPoint"};
  ct_op *op = op_with("conv_integer", slots, (const char *[]){"x", "f", "xz"}, 3, "Output");
  conv_attrs(op, 1, 1);
  run(op, s);
  static const int32_t want[] = {0, 1, 1, 2, 6, 4, 2, 5, 3};
  expect_i32(s, CT_DIMS(1, 1, 3, 3), want, 9);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* Two groups of one channel; filters 5 - 1 and 6 - 2. */
START_TEST(conv_integer_takes_a_zero_point_per_output_channel) {
  ct_scope *s = ct_scope_new();
  static const int8_t x[] = {1, 2, 3, 4}, f[] = {5, 6}, fz[] = {1, 2};
  put(s, "x", CT_INT8, CT_DIMS(1, 2, 1, 2), x);
  put(s, "f", CT_INT8, CT_DIMS(2, 1, 1, 1), f);
  put(s, "fz", CT_INT8, CT_DIMS(2), fz);
  static const char *const slots[] = {"Input", "Filter", "InputZeroPoint", "FilterZeroPoint"};
  ct_op *op = op_with("conv_integer", slots, (const char *[]){"x", "f", NULL, "fz"}, 4,
                      "Output");
  conv_attrs(op, 0, 2);
  run(op, s);
  static const int32_t want[] = {4, 8, 12, 16};
  expect_i32(s, CT_DIMS(1, 2, 1, 2), want, 4);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* Input and Filter alone (no zero points): 2 x and 3 x. */
START_TEST(conv_integer_without_zero_points) {
  ct_scope *s = ct_scope_new();
  static const uint8_t x[] = {1, 2, 3, 4}, f[] = {2, 3};
  put(s, "x", CT_UINT8, CT_DIMS(1, 1, 2, 2), x);
  put(s, "f", CT_UINT8, CT_DIMS(2, 1, 1, 1), f);
  static const char *const slots[] = {"Input", "Filter"};
  ct_op *op = op_with("conv_integer", slots, (const char *[]){"x", "f"}, 2, "Output");
  conv_attrs(op, 0, 1);
  run(op, s);
  static const int32_t want[] = {2, 4, 6, 8, 3, 6, 9, 12};
  expect_i32(s, CT_DIMS(1, 2, 2, 2), want, 8);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* x - 1 = {2, 4}; channel 0: 2 x + 1 = {5, 9} times 0.5, + 128: {130.5, 132.5} -> {130, 132};
 * channel 1: -x - 2 = {-4, -6} times 0.5 * 2, + 128: {124, 122}. */
static ct_op *qconv_case(ct_scope *s) {
  static const uint8_t x[] = {3, 5}, xz = 1, oz = 128;
  static const int8_t f[] = {2, -1}, fz = 0;
  static const int32_t b[] = {1, -2};
  static const float xs = 0.5f, fs[] = {1, 2}, os = 1;
  put(s, "x", CT_UINT8, CT_DIMS(1, 1, 1, 2), x);
  put(s, "xz", CT_UINT8, SCALAR, &xz);
  put(s, "f", CT_INT8, CT_DIMS(2, 1, 1, 1), f);
  put(s, "fz", CT_INT8, SCALAR, &fz);
  put(s, "b", CT_INT32, CT_DIMS(2), b);
  put(s, "oz", CT_UINT8, SCALAR, &oz);
  put_f(s, "xs", SCALAR, &xs);
  put_f(s, "fs", CT_DIMS(2), fs);
  put_f(s, "os", SCALAR, &os);
  static const char *const slots[] = {"Input", "Filter", "InputZeroPoint", "FilterZeroPoint",
                                      "InputScale", "FilterScale", "OutScale", "OutZeroPoint",
                                      "Bias"};
  ct_op *op = op_with("qlinear_conv", slots,
                      (const char *[]){"x", "f", "xz", "fz", "xs", "fs", "os", "oz", "b"}, 9,
                      "Output");
  conv_attrs(op, 0, 1);
  return op;
}

START_TEST(qlinear_conv_adds_bias_and_scales_per_channel) {
  ct_scope *s = ct_scope_new();
  ct_op *op = qconv_case(s);
  run(op, s);
  static const int want[] = {130, 132, 124, 122};
  expect_bytes(s, "y", CT_UINT8, CT_DIMS(1, 2, 1, 2), want, 4);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- dynamic_quantize_linear ----------------------------------------------------------------- */

/* X's values, and the expected Y, YScale's bits and YZeroPoint. */
static void dql_case(const float *x, int64_t n, const int *y, uint32_t scale_bits, int zero) {
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT32, CT_DIMS(n), x);
  ct_op *op = new_op("dynamic_quantize_linear");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Y", "y"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "YScale", "ys"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "YZeroPoint", "yz"), CT_OK);
  run(op, s);
  expect_bytes(s, "y", CT_UINT8, CT_DIMS(n), y, n);
  const float *sc = result(s, "ys", CT_FLOAT32, SCALAR);
  ck_assert_msg(f32_bits(*sc) == scale_bits, "YScale %.9g (0x%08x), want 0x%08x", (double)*sc,
                f32_bits(*sc), scale_bits);
  expect_bytes(s, "yz", CT_UINT8, SCALAR, &zero, 1);
  ct_op_free(op);
  ct_scope_free(s);
}

/* ONNX's example: range [-3, 2], scale 5 / 255, zero point 153. */
START_TEST(dynamic_quantize_linear_gives_onnx_example) {
  static const float x[] = {0, 2, -3, -2.5f, 1.34f, 0.5f};
  static const int y[] = {153, 255, 0, 26, 221, 179};
  dql_case(x, 6, y, 0x3ca0a0a1u, 153);
}
END_TEST

/* An all-zero X takes the scale 1 (onnxruntime's); an X of one sign a range from 0 (1 / (2 /
 * 255) is 127.49999 in float32: 127); a negative one the zero point 255. */
START_TEST(dynamic_quantize_linear_ranges_from_zero) {
  static const float zeros[] = {0, 0}, pos[] = {1, 2}, neg[] = {-1, -4};
  static const int y0[] = {0, 0}, yp[] = {127, 255}, yn[] = {191, 0};
  dql_case(zeros, 2, y0, 0x3f800000u, 0);
  dql_case(pos, 2, yp, 0x3c008081u, 0);
  dql_case(neg, 2, yn, 0x3c808081u, 255);
}
END_TEST

/* NaN anywhere: YScale NaN, YZeroPoint 255 (the reference's comparisons), every Y 0. */
START_TEST(dynamic_quantize_linear_with_nan) {
  static const float x[] = {1, NAN, -2};
  static const int y[] = {0, 0, 0};
  dql_case(x, 3, y, 0x7fc00000u, 255);
}
END_TEST

/* ---- refusals, no gradient ------------------------------------------------------------------- */

START_TEST(refusals_name_the_input_and_the_fix) {
  ct_scope *s = ct_scope_new();
  static const uint8_t x[] = {1, 2, 3, 4, 5, 6}, xz2[] = {1, 2}, wz3[] = {0, 0, 0};
  static const float xf[] = {1, 2, 3, 4, 5, 6};
  static const int8_t zi = 0;
  put(s, "x", CT_UINT8, CT_DIMS(2, 3), x);
  put(s, "w", CT_UINT8, CT_DIMS(3, 2), x);
  ct_op *op = mi_op("xz", "wz");
  /* ONNX's per-row zero points of X: unsupported, named. */
  put(s, "xz", CT_UINT8, CT_DIMS(2), xz2);
  put(s, "wz", CT_UINT8, SCALAR, x);
  run_fails(op, s, CT_ERR_UNSUPPORTED, "XZeroPoint variable 'xz' has dims [2]",
            "give one zero point (per tensor)", NULL);
  /* Y's zero points: one, or one per column (2), not 3. */
  put(s, "xz", CT_UINT8, SCALAR, x);
  put(s, "wz", CT_UINT8, CT_DIMS(3), wz3);
  run_fails(op, s, CT_ERR_UNSUPPORTED, "YZeroPoint variable 'wz' has dims [3]",
            "one per column of Y", NULL);
  /* A zero point of another dtype than its operand. */
  put(s, "wz", CT_INT8, SCALAR, &zi);
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "YZeroPoint variable 'wz' is int8", "give uint8", NULL);
  /* Inner dims that differ, named by the op's slots. */
  put(s, "wz", CT_UINT8, SCALAR, x);
  put(s, "w", CT_UINT8, CT_DIMS(2, 3), x);
  run_fails(op, s, CT_ERR_SHAPE, "input X variable 'x' [2,3]", "input Y variable 'w' [2,3]",
            "inner dims 3 and 2 differ", NULL);
  /* Y not quantized (X float32 has no kernel: the dtype picks it). */
  put(s, "w", CT_FLOAT32, CT_DIMS(3, 2), xf);
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "Y variable 'w' is float32", "int8 or uint8", NULL);
  ct_op_free(op);
  /* qlinear_conv's Bias of the wrong dims; dynamic_quantize_linear of float64. */
  ct_op *qc = qconv_case(s);
  static const int32_t b3[] = {1, 2, 3};
  put(s, "b", CT_INT32, CT_DIMS(3), b3);
  run_fails(qc, s, CT_ERR_SHAPE, "Bias variable 'b' is int32 of dims [3]",
            "give int32 of dims [2]", NULL);
  ct_op_free(qc);
  static const double xd[] = {1, 2};
  put(s, "x", CT_FLOAT64, CT_DIMS(2), xd);
  ct_op *dq = new_op("dynamic_quantize_linear");
  ck_assert_int_eq(ct_op_set_input(dq, "X", "x"), CT_OK);
  static const char *const outs[] = {"Y", "YScale", "YZeroPoint"};
  for (int k = 0; k < 3; k++) ck_assert_int_eq(ct_op_set_output(dq, outs[k], outs[k]), CT_OK);
  CT_ASSERT_FAILS(ct_op_run(dq, s, ct_cpu()), CT_ERR_UNSUPPORTED);
  ct_op_free(dq);
  ct_scope_free(s);
}
END_TEST

START_TEST(no_gradient) {
  static const char *const types[] = {"matmul_integer", "qlinear_matmul", "conv_integer",
                                      "qlinear_conv", "dynamic_quantize_linear"};
  for (int k = 0; k < 5; k++) {
    ct_op_def def;
    ck_assert_int_eq(ct_op_type_get(types[k], &def), CT_OK);
    ck_assert_ptr_null(def.grad);
  }
}
END_TEST

/* ---- ONNX ------------------------------------------------------------------------------------ */

/* x [1, 1, 2, 2] float -> DynamicQuantizeLinear -> q, qs, qz; ConvInteger(q, f, qz) -> ci;
 * QLinearConv(q, qs, qz, f, fs, fz, os, oz) -> qc; QLinearMatMul(qc, os, oz, w, ws, wz, os, oz)
 * -> qm; MatMulInteger(q, w, qz, wz) -> mi. */
static pb quant_model(void) {
  static const int64_t xd[4] = {1, 1, 2, 2}, fd[4] = {1, 1, 1, 1}, wd[2] = {2, 2};
  static const uint8_t f = 3, w[4] = {1, 2, 3, 4}, fz = 1, wz = 2, oz = 100;
  static const float fs = 0.5f, ws = 0.25f, os = 0.1f;
  pb g = {0}, n, t, v;
  n = ox_node_pb("DynamicQuantizeLinear", (const char *[]){"x", NULL},
                 (const char *[]){"q", "qs", "qz", NULL});
  pb_msg(&g, 1, &n);
  n = ox_node_pb("ConvInteger", (const char *[]){"q", "f", "qz", NULL},
                 (const char *[]){"ci", NULL});
  pb_msg(&g, 1, &n);
  n = ox_node_pb("QLinearConv", (const char *[]){"q", "qs", "qz", "f", "fs", "fz", "os", "oz",
                                                 NULL},
                 (const char *[]){"qc", NULL});
  pb_msg(&g, 1, &n);
  n = ox_node_pb("QLinearMatMul", (const char *[]){"qc", "os", "oz", "w", "ws", "wz", "os", "oz",
                                                   NULL},
                 (const char *[]){"qm", NULL});
  pb_msg(&g, 1, &n);
  n = ox_node_pb("MatMulInteger", (const char *[]){"q", "w", "qz", "wz", NULL},
                 (const char *[]){"mi", NULL});
  pb_msg(&g, 1, &n);
  pb_str(&g, 2, "quant");
  t = ox_tensor_pb("f", 2, fd, 4, &f, 1); /* UINT8 */
  pb_msg(&g, 5, &t);
  t = ox_tensor_pb("w", 2, wd, 2, w, sizeof w);
  pb_msg(&g, 5, &t);
  static const struct { const char *name; const void *v; int dt; size_t n; } scalars[] = {
      {"fz", &fz, 2, 1}, {"wz", &wz, 2, 1}, {"oz", &oz, 2, 1},
      {"fs", &fs, 1, 4}, {"ws", &ws, 1, 4}, {"os", &os, 1, 4}};
  for (int k = 0; k < 6; k++) {
    t = ox_tensor_pb(scalars[k].name, scalars[k].dt, NULL, 0, scalars[k].v, scalars[k].n);
    pb_msg(&g, 5, &t);
  }
  v = ox_value_pb("x", 1, xd, 4);
  pb_msg(&g, 11, &v);
  static const char *const outs[] = {"ci", "qc", "qm", "mi"};
  static const int out_types[] = {6, 2, 2, 6}; /* INT32, UINT8 */
  for (int k = 0; k < 4; k++) {
    v = ox_value_pb(outs[k], out_types[k], xd, 4);
    pb_msg(&g, 12, &v);
  }
  return ox_model_pb(&g, 13);
}

/* The four outputs of model file or buffer (path NULL: m) on x, copied into out (16 bytes each
 * at most: 4 values). */
static void run_quant(const char *path, const pb *m, uint8_t out[4][16]) {
  ct_scope *s = ct_scope_new();
  ct_onnx_model *om = path ? ct_onnx_load(path, s) : ct_onnx_load_buffer(m->p, m->n, s);
  ck_assert_msg(om != NULL, "%s", ct_last_error());
  static const float x[] = {-1.5f, 0.25f, 2, 3.75f};
  put(s, "x", CT_FLOAT32, CT_DIMS(1, 1, 2, 2), x);
  ct_executor *e = ct_executor_new(ct_onnx_program(om), s, ct_cpu());
  ck_assert_msg(e != NULL && ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  ct_executor_free(e);
  static const char *const outs[] = {"ci", "qc", "qm", "mi"};
  static const ct_dtype dts[] = {CT_INT32, CT_UINT8, CT_UINT8, CT_INT32};
  for (int k = 0; k < 4; k++) {
    memcpy(out[k], result(s, outs[k], dts[k], CT_DIMS(1, 1, 2, 2)), 4 * ct_dtype_size(dts[k]));
  }
  ct_onnx_free(om);
  ct_scope_free(s);
}

START_TEST(onnx_import_and_export) {
  make_work_dir("onnx-quant-int");
  pb m = quant_model();
  uint8_t got[4][16] = {{0}}, back[4][16] = {{0}}; /* uint8 outputs fill 4 bytes */
  run_quant(NULL, &m, got);
  /* q: x / (5.25 / 255) rounded + 73 = {0, 85, 170, 255} (-1.5 .. 3.75); ci = 3 (q - 73);
   * qc: 2 (q - 73) times 5.25 / 255 0.5 / 0.1 (about 0.10294), + 100, rounded; qm: (qc - 100)
   * [[-1 0] [1 2]] = [[17 4] [17 74]] times 0.25, + 100: 118.5 rounds to even; mi: (q - 73)
   * [[-1 0] [1 2]]. */
  const int32_t *ci = (const int32_t *)got[0], *mi = (const int32_t *)got[3];
  static const int32_t want_ci[] = {-219, 36, 291, 546}, want_mi[] = {85, 24, 85, 364};
  static const uint8_t want_qc[] = {85, 102, 120, 137}, want_qm[] = {104, 101, 104, 118};
  for (int k = 0; k < 4; k++) {
    ck_assert_int_eq(ci[k], want_ci[k]);
    ck_assert_int_eq(got[1][k], want_qc[k]);
    ck_assert_int_eq(got[2][k], want_qm[k]);
    ck_assert_int_eq(mi[k], want_mi[k]);
  }
  /* Exported as the same standard nodes, which load back to the same ops and bits. */
  ct_scope *s = ct_scope_new();
  ct_onnx_model *om = ct_onnx_load_buffer(m.p, m.n, s);
  ck_assert_msg(om != NULL, "%s", ct_last_error());
  static const float x[] = {0, 0, 0, 0};
  put(s, "x", CT_FLOAT32, CT_DIMS(1, 1, 2, 2), x);
  const char *in[] = {"x"}, *out[] = {"ci", "qc", "qm", "mi"};
  ck_assert_msg(ct_onnx_save(in_dir("q.onnx"), ct_onnx_program(om), s, in, 1, out, 4) == CT_OK,
                "%s", ct_last_error());
  ct_onnx_free(om);
  ct_scope_free(s);
  char types[160];
  ck_assert_int_eq(ct_onnx_op_types(in_dir("q.onnx"), types, sizeof types), CT_OK);
  ck_assert_str_eq(types, "DynamicQuantizeLinear,ConvInteger,QLinearConv,QLinearMatMul,"
                          "MatMulInteger");
  run_quant(in_dir("q.onnx"), NULL, back);
  for (int k = 0; k < 4; k++) ck_assert_int_eq(memcmp(got[k], back[k], 16), 0);
  free(m.p);
  remove_work_dir();
}
END_TEST

/* onnxruntime's com.microsoft ops of its QOperator format: QLinearAdd(a, 0.5, 10, b, 0.25, 0,
 * 1, 5) -> c; QGemm(c, 1, 5, w, {0.5, 0.25} per output column, {0, 0}, bias, transB, alpha 2)
 * -> y (float: no y_scale); QLinearGlobalAveragePool(g, 0.1, 0, 0.5, 0) -> m. */
static pb contrib_model(void) {
  static const int64_t d12[2] = {1, 2}, d22[2] = {2, 2}, d2[1] = {2}, d4[4] = {1, 1, 2, 2};
  static const uint8_t w[4] = {1, 2, 3, 4}, az = 10, zero = 0, cz = 5, wz[2] = {0, 0};
  static const int32_t bias[2] = {4, -4};
  static const float as = 0.5f, bs = 0.25f, one = 1, ws[2] = {0.5f, 0.25f}, gs = 0.1f,
                     ms = 0.5f, qs = 0.25f, ss = 0.00390625f;
  static const uint8_t hz = 100;
  pb g = {0}, n, t, v;
  n = ox_node_pb("QLinearAdd", (const char *[]){"a", "as", "az", "b", "bs", "zero", "one", "cz",
                                                NULL},
                 (const char *[]){"c", NULL});
  pb_str(&n, 7, "com.microsoft");
  pb_msg(&g, 1, &n);
  n = ox_node_pb("QGemm", (const char *[]){"c", "one", "cz", "w", "ws", "wz", "bias", NULL},
                 (const char *[]){"y", NULL});
  ox_attr_int_pb(&n, "transB", 1);
  pb a = {0}; /* alpha 2 (FLOAT) */
  pb_str(&a, 1, "alpha");
  pb_int(&a, 20, 1);
  pb_float(&a, 2, 2.0f);
  pb_msg(&n, 5, &a);
  pb_str(&n, 7, "com.microsoft");
  pb_msg(&g, 1, &n);
  n = ox_node_pb("QLinearGlobalAveragePool", (const char *[]){"g", "gs", "zero", "ms", "zero",
                                                              NULL},
                 (const char *[]){"m", NULL});
  pb_str(&n, 7, "com.microsoft");
  pb_msg(&g, 1, &n);
  n = ox_node_pb("QLinearMul", (const char *[]){"a", "as", "az", "b", "bs", "zero", "one", "cz",
                                                NULL},
                 (const char *[]){"p", NULL});
  pb_str(&n, 7, "com.microsoft");
  pb_msg(&g, 1, &n);
  n = ox_node_pb("QLinearLeakyRelu", (const char *[]){"a", "as", "hz", "qs", "hz", NULL},
                 (const char *[]){"l", NULL});
  pb a2 = {0}; /* alpha 0.5 (FLOAT) */
  pb_str(&a2, 1, "alpha");
  pb_int(&a2, 20, 1);
  pb_float(&a2, 2, 0.5f);
  pb_msg(&n, 5, &a2);
  pb_str(&n, 7, "com.microsoft");
  pb_msg(&g, 1, &n);
  n = ox_node_pb("QLinearSigmoid", (const char *[]){"az", "as", "az", "ss", "zero", NULL},
                 (const char *[]){"sg", NULL});
  pb_str(&n, 7, "com.microsoft");
  pb_msg(&g, 1, &n);
  pb_str(&g, 2, "contrib");
  t = ox_tensor_pb("w", 2, d22, 2, w, sizeof w);
  pb_msg(&g, 5, &t);
  t = ox_tensor_pb("bias", 6, d2, 1, bias, sizeof bias);
  pb_msg(&g, 5, &t);
  t = ox_tensor_pb("ws", 1, d2, 1, ws, sizeof ws);
  pb_msg(&g, 5, &t);
  t = ox_tensor_pb("wz", 2, d2, 1, wz, sizeof wz);
  pb_msg(&g, 5, &t);
  static const struct { const char *name; const void *v; int dt; size_t n; } scalars[] = {
      {"az", &az, 2, 1}, {"zero", &zero, 2, 1}, {"cz", &cz, 2, 1}, {"as", &as, 1, 4},
      {"bs", &bs, 1, 4}, {"one", &one, 1, 4},   {"gs", &gs, 1, 4},   {"ms", &ms, 1, 4},
      {"qs", &qs, 1, 4}, {"ss", &ss, 1, 4},     {"hz", &hz, 2, 1}};
  for (int k = 0; k < 11; k++) {
    t = ox_tensor_pb(scalars[k].name, scalars[k].dt, NULL, 0, scalars[k].v, scalars[k].n);
    pb_msg(&g, 5, &t);
  }
  static const char *const ins[] = {"a", "b", "g"};
  for (int k = 0; k < 3; k++) {
    v = ox_value_pb(ins[k], 2, k < 2 ? d12 : d4, k < 2 ? 2 : 4);
    pb_msg(&g, 11, &v);
  }
  v = ox_value_pb("y", 1, d12, 2);
  pb_msg(&g, 12, &v);
  v = ox_value_pb("m", 2, d4, 4);
  pb_msg(&g, 12, &v);
  static const char *const more[] = {"p", "l", "sg"};
  for (int k = 0; k < 3; k++) {
    v = ox_value_pb(more[k], 2, NULL, 0);
    pb_msg(&g, 12, &v);
  }
  pb m = ox_model_pb(&g, 17), op = {0};
  pb_str(&op, 1, "com.microsoft");
  pb_int(&op, 2, 1);
  pb_msg(&m, 8, &op);
  return m;
}

/* a - 10 = {2, 10} times 0.5 plus b {4, 9} times 0.25: {2, 7.25}, + 5 rounded: c {7, 12};
 * (c - 5) = {2, 7} by w's rows times {0.5, 0.25} ({0.5 1} and {0.75 1}): {8, 8.5}, plus the
 * bias at {0.5, 0.25} ({2, -1}), times alpha 2: y {20, 15}; the mean of {10 20 30 40} 0.1 is
 * 2.5, / 0.5: m 5. QLinearMul: {1 x 1, 5 x 2.25} + 5: p {6, 16}; QLinearLeakyRelu of a less
 * 100 ({-44, -40}, alpha 0.5: {-22, -20}) / 0.25 + 100: l {12, 20} (0.01: 98, 98);
 * QLinearSigmoid of 10 (0 dequantized): 0.5 / (1 / 256): sg 128. */
START_TEST(onnxruntime_quantized_contrib_ops) {
  pb model = contrib_model();
  ct_scope *s = ct_scope_new();
  ct_onnx_model *om = ct_onnx_load_buffer(model.p, model.n, s);
  ck_assert_msg(om != NULL, "%s", ct_last_error());
  static const uint8_t a[2] = {12, 20}, b[2] = {4, 9}, gv[4] = {10, 20, 30, 40};
  put(s, "a", CT_UINT8, CT_DIMS(1, 2), a);
  put(s, "b", CT_UINT8, CT_DIMS(1, 2), b);
  put(s, "g", CT_UINT8, CT_DIMS(1, 1, 2, 2), gv);
  ct_executor *e = ct_executor_new(ct_onnx_program(om), s, ct_cpu());
  ck_assert_msg(e != NULL && ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  ct_executor_free(e);
  static const int want_c[2] = {7, 12}, want_m[1] = {5};
  expect_bytes(s, "c", CT_UINT8, CT_DIMS(1, 2), want_c, 2);
  expect_bytes(s, "m", CT_UINT8, CT_DIMS(1, 1, 1, 1), want_m, 1);
  const float *y = result(s, "y", CT_FLOAT32, CT_DIMS(1, 2));
  ck_assert_msg(y[0] == 20 && y[1] == 15, "y = {%g, %g}", y[0], y[1]);
  static const int want_p[2] = {6, 16}, want_l[2] = {12, 20}, want_sg[1] = {128};
  expect_bytes(s, "p", CT_UINT8, CT_DIMS(1, 2), want_p, 2);
  expect_bytes(s, "l", CT_UINT8, CT_DIMS(1, 2), want_l, 2);
  expect_bytes(s, "sg", CT_UINT8, (ct_ddim){.rank = 0}, want_sg, 1);
  ct_onnx_free(om);
  ct_scope_free(s);
  free(model.p);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("ops_quant_int");
  CT_ADD_TEST(s, matmul_integer_subtracts_per_tensor_and_per_column_zero_points);
  CT_ADD_TEST(s, matmul_integer_broadcasts_batches_and_takes_a_vector);
  CT_ADD_TEST(s, matmul_integer_wraps_past_int32);
  CT_ADD_TEST(s, qlinear_matmul_adds_the_zero_point_before_rounding);
  CT_ADD_TEST(s, qlinear_matmul_scales_per_column_and_saturates);
  CT_ADD_TEST(s, conv_integer_pads_with_zero_after_the_zero_point);
  CT_ADD_TEST(s, conv_integer_takes_a_zero_point_per_output_channel);
  CT_ADD_TEST(s, conv_integer_without_zero_points);
  CT_ADD_TEST(s, qlinear_conv_adds_bias_and_scales_per_channel);
  CT_ADD_TEST(s, dynamic_quantize_linear_gives_onnx_example);
  CT_ADD_TEST(s, dynamic_quantize_linear_ranges_from_zero);
  CT_ADD_TEST(s, dynamic_quantize_linear_with_nan);
  CT_ADD_TEST(s, refusals_name_the_input_and_the_fix);
  CT_ADD_TEST(s, no_gradient);
  CT_ADD_TEST(s, onnx_import_and_export);
  CT_ADD_TEST(s, onnxruntime_quantized_contrib_ops);
  return s;
}

CT_TEST_MAIN(make_suite)
