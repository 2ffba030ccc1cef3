/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of cast and assign on the CPU: cast between every pair of dtypes, with truncation
 * toward zero, saturation, NaN, and float16 / bfloat16 rounding to nearest even checked against
 * bits written here; assign of every dtype; rank 0, empty tensors, in place, and the errors.
 * Each test runs in its own process. The helpers are in op_util.h. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "op_util.h"

/* ---- cast and assign ------------------------------------------------------------------------ */

/* Casts n values of dtype from (exact in it) to dtype to; returns Out's data. */
static const void *run_cast(ct_scope *s, ct_op **op, ct_dtype from, ct_dtype to, const double *v,
                            int64_t n) {
  void *p = xmalloc(n, 8);
  for (int64_t i = 0; i < n; i++) set_elem(p, from, i, v[i]);
  put(s, "x", from, CT_DIMS(n), p);
  free(p);
  *op = op_x("cast", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_int(*op, "dtype", to), CT_OK);
  run(*op, s);
  return result(s, "out", to, CT_DIMS(n));
}

/* Values every dtype but bool holds exactly survive a cast between any two dtypes; to bool they
 * become 0 or 1, from bool 0 and 1. */
START_TEST(cast_between_all_dtype_pairs) {
  const double vals[6] = {0, 1, 2, 5, 100, 127}, bools[4] = {0, 1, 1, 0};
  for (int a = 0; a < N_ALL_DTYPES; a++) {
    for (int b = 0; b < N_ALL_DTYPES; b++) {
      ct_dtype from = all_dtypes[a], to = all_dtypes[b];
      const double *v = from == CT_BOOL ? bools : vals;
      int64_t n = from == CT_BOOL ? 4 : 6;
      ct_scope *s = ct_scope_new();
      ct_op *op;
      const void *o = run_cast(s, &op, from, to, v, n);
      for (int64_t i = 0; i < n; i++) {
        double want = to == CT_BOOL ? (v[i] != 0) : v[i];
        ck_assert_msg(get_elem(o, to, i) == want, "%s -> %s element %lld: %g, expected %g",
                      ct_dtype_name(from), ct_dtype_name(to), (long long)i, get_elem(o, to, i),
                      want);
      }
      ct_op_free(op);
      ct_scope_free(s);
    }
  }
}
END_TEST

START_TEST(cast_negative_values_between_signed_types) {
  static const ct_dtype types[] = {CT_INT8, CT_INT16, CT_INT32, CT_INT64, CT_FLOAT16, CT_BFLOAT16,
                                   CT_FLOAT32, CT_FLOAT64};
  const double v[3] = {-1, -128, -100};
  for (int a = 0; a < 8; a++) {
    for (int b = 0; b < 8; b++) {
      ct_scope *s = ct_scope_new();
      ct_op *op;
      const void *o = run_cast(s, &op, types[a], types[b], v, 3);
      for (int64_t i = 0; i < 3; i++) ck_assert(get_elem(o, types[b], i) == v[i]);
      ct_op_free(op);
      ct_scope_free(s);
    }
  }
}
END_TEST

START_TEST(cast_float_to_int_truncates_toward_zero) {
  ct_scope *s = ct_scope_new();
  ct_op *op;
  const double v[4] = {2.75, -2.75, 0.5, -0.5};
  const int32_t *o = run_cast(s, &op, CT_FLOAT32, CT_INT32, v, 4);
  ck_assert_int_eq(o[0], 2);
  ck_assert_int_eq(o[1], -2);
  ck_assert_int_eq(o[2], 0);
  ck_assert_int_eq(o[3], 0);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(cast_to_narrow_int_saturates_and_nan_is_zero) {
  ct_scope *s = ct_scope_new();
  double x[6] = {300, -300, 1e300, -1e300, NAN, INFINITY};
  put(s, "x", CT_FLOAT64, CT_DIMS(6), x);
  ct_op *i8 = op_x("cast", "x", "i8"), *u8 = op_x("cast", "x", "u8");
  ct_op *i64 = op_x("cast", "x", "i64");
  ck_assert_int_eq(ct_op_set_attr_int(i8, "dtype", CT_INT8), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(u8, "dtype", CT_UINT8), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(i64, "dtype", CT_INT64), CT_OK);
  run(i8, s);
  run(u8, s);
  run(i64, s);
  const int8_t *a = result(s, "i8", CT_INT8, CT_DIMS(6));
  const uint8_t *b = result(s, "u8", CT_UINT8, CT_DIMS(6));
  const int64_t *c = result(s, "i64", CT_INT64, CT_DIMS(6));
  const int8_t wa[6] = {127, -128, 127, -128, 0, 127};
  const uint8_t wb[6] = {255, 0, 255, 0, 0, 255};
  const int64_t wc[6] = {300, -300, INT64_MAX, INT64_MIN, 0, INT64_MAX};
  for (int i = 0; i < 6; i++) {
    ck_assert_int_eq(a[i], wa[i]);
    ck_assert_int_eq(b[i], wb[i]);
    ck_assert(c[i] == wc[i]);
  }
  ct_op_free(i8);
  ct_op_free(u8);
  ct_op_free(i64);
  ct_scope_free(s);
}
END_TEST

START_TEST(cast_int_to_narrow_int_saturates) {
  ct_scope *s = ct_scope_new();
  int64_t x[4] = {INT64_MAX, INT64_MIN, 40000, -40000};
  put(s, "x", CT_INT64, CT_DIMS(4), x);
  ct_op *op = op_x("cast", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", CT_INT16), CT_OK);
  run(op, s);
  const int16_t *o = result(s, "out", CT_INT16, CT_DIMS(4));
  ck_assert_int_eq(o[0], INT16_MAX);
  ck_assert_int_eq(o[1], INT16_MIN);
  ck_assert_int_eq(o[2], INT16_MAX);
  ck_assert_int_eq(o[3], INT16_MIN);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(cast_to_bool_is_nonzero) {
  ct_scope *s = ct_scope_new();
  float x[5] = {0.0f, -0.0f, 0.25f, -3, NAN};
  put(s, "x", CT_FLOAT32, CT_DIMS(5), x);
  ct_op *op = op_x("cast", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", CT_BOOL), CT_OK);
  run(op, s);
  const uint8_t *o = result(s, "out", CT_BOOL, CT_DIMS(5));
  const uint8_t want[5] = {0, 0, 1, 1, 1};
  for (int i = 0; i < 5; i++) ck_assert_int_eq(o[i], want[i]);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* Casts float64 values to a 16-bit float dtype and returns the bits. */
static void cast_f64_bits(const double *x, int n, ct_dtype to, uint16_t *bits) {
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT64, CT_DIMS(n), x);
  ct_op *op = op_x("cast", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", to), CT_OK);
  run(op, s);
  memcpy(bits, result(s, "out", to, CT_DIMS(n)), (size_t)n * 2);
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(cast_to_float16_rounds_to_nearest_even) {
  const double x[12] = {
      1 + 0x1p-11,           /* tie between 0x3C00 and 0x3C01: even 0x3C00 */
      1 + 3 * 0x1p-11,       /* tie between 0x3C01 and 0x3C02: even 0x3C02 */
      1 + 0x1p-11 + 0x1p-40, /* just above the tie: up (a float in between would round twice) */
      65504,                 /* the largest half */
      65519,                 /* below the tie with 65536: 65504 */
      65520,                 /* the tie: rounds to even, 65536, which is inf */
      0x1p-24,               /* the smallest subnormal */
      0x1p-25,               /* tie between 0 and 2^-24: 0 */
      3 * 0x1p-25,           /* tie between 2^-24 and 2^-23: even, 2^-23 */
      -0.0, -INFINITY, 0x1p-14 - 0x1p-25 /* tie between the largest subnormal and 2^-14 */
  };
  const uint16_t want[12] = {0x3C00, 0x3C02, 0x3C01, 0x7BFF, 0x7BFF, 0x7C00,
                             0x0001, 0x0000, 0x0002, 0x8000, 0xFC00, 0x0400};
  uint16_t got[12];
  cast_f64_bits(x, 12, CT_FLOAT16, got);
  for (int i = 0; i < 12; i++) {
    ck_assert_msg(got[i] == want[i], "element %d: %04x, expected %04x", i, got[i], want[i]);
  }
}
END_TEST

START_TEST(cast_to_bfloat16_rounds_to_nearest_even) {
  const double x[8] = {
      1 + 0x1p-8,           /* tie between 0x3F80 and 0x3F81: even 0x3F80 */
      1 + 3 * 0x1p-8,       /* tie between 0x3F81 and 0x3F82: even 0x3F82 */
      1 + 0x1p-8 + 0x1p-30, /* above the tie (below float precision): up */
      -(1 + 0x1p-8 + 0x1p-9), 3.0e38 * 10, 0x1p-133, INFINITY, -2.0};
  const uint16_t want[8] = {0x3F80, 0x3F82, 0x3F81, 0xBF81, 0x7F80, 0x0001, 0x7F80, 0xC000};
  uint16_t got[8];
  cast_f64_bits(x, 8, CT_BFLOAT16, got);
  for (int i = 0; i < 8; i++) {
    ck_assert_msg(got[i] == want[i], "element %d: %04x, expected %04x", i, got[i], want[i]);
  }
}
END_TEST

START_TEST(cast_nan_to_16_bit_floats_stays_nan) {
  const double x[1] = {NAN};
  uint16_t h, b;
  cast_f64_bits(x, 1, CT_FLOAT16, &h);
  cast_f64_bits(x, 1, CT_BFLOAT16, &b);
  ck_assert((h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0);
  ck_assert((b & 0x7F80) == 0x7F80 && (b & 0x007F) != 0);
}
END_TEST

START_TEST(cast_int_to_float_rounds_once) {
  ct_scope *s = ct_scope_new();
  /* 2^60 + 2^36 + 1: to float32 it rounds up to 2^60 + 2^37; through a double it would land on
   * the tie 2^60 + 2^36 and round to even, 2^60. To bfloat16 likewise with 2^24 + 2^16 + 1. */
  int64_t x[3] = {((int64_t)1 << 60) + ((int64_t)1 << 36) + 1, 16777217,
                  (1 << 24) + (1 << 16) + 1};
  put(s, "x", CT_INT64, CT_DIMS(3), x);
  ct_op *f32 = op_x("cast", "x", "f32"), *bf = op_x("cast", "x", "bf");
  ck_assert_int_eq(ct_op_set_attr_int(f32, "dtype", CT_FLOAT32), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(bf, "dtype", CT_BFLOAT16), CT_OK);
  run(f32, s);
  run(bf, s);
  const float *a = result(s, "f32", CT_FLOAT32, CT_DIMS(3));
  const uint16_t *b = result(s, "bf", CT_BFLOAT16, CT_DIMS(3));
  ck_assert(a[0] == 0x1p60f + 0x1p37f);
  ck_assert(a[1] == 16777216.0f);
  ck_assert(bf16_value(b[2]) == 0x1p24 + 0x1p17);
  ct_op_free(f32);
  ct_op_free(bf);
  ct_scope_free(s);
}
END_TEST

START_TEST(cast_from_16_bit_floats_is_exact) {
  ct_scope *s = ct_scope_new();
  uint16_t h[5] = {0x3C00, 0x0001, 0x7BFF, 0xFC00, 0xC100}; /* 1, 2^-24, 65504, -inf, -2.5 */
  uint16_t b[3] = {0x3F81, 0x0001, 0xC0A0};                   /* 1.0078125, 2^-133, -5 */
  put(s, "h", CT_FLOAT16, CT_DIMS(5), h);
  put(s, "b", CT_BFLOAT16, CT_DIMS(3), b);
  ct_op *ch = op_x("cast", "h", "hf"), *cb = op_x("cast", "b", "bf"), *ci = op_x("cast", "h", "hi");
  ck_assert_int_eq(ct_op_set_attr_int(ch, "dtype", CT_FLOAT64), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(cb, "dtype", CT_FLOAT64), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(ci, "dtype", CT_INT32), CT_OK);
  run(ch, s);
  run(cb, s);
  run(ci, s);
  const double *hf = result(s, "hf", CT_FLOAT64, CT_DIMS(5));
  const double *bf = result(s, "bf", CT_FLOAT64, CT_DIMS(3));
  const int32_t *hi = result(s, "hi", CT_INT32, CT_DIMS(5));
  ck_assert(hf[0] == 1 && hf[1] == 0x1p-24 && hf[2] == 65504 && hf[3] == -INFINITY &&
            hf[4] == -2.5);
  ck_assert(bf[0] == 1.0078125 && bf[1] == 0x1p-133 && bf[2] == -5);
  ck_assert(hi[0] == 1 && hi[1] == 0 && hi[2] == 65504 && hi[3] == INT32_MIN && hi[4] == -2);
  ct_op_free(ch);
  ct_op_free(cb);
  ct_op_free(ci);
  ct_scope_free(s);
}
END_TEST

START_TEST(cast_float16_to_bfloat16_rounds) {
  ct_scope *s = ct_scope_new();
  /* In units of bfloat16's step at 1 (2^-7): 1 + 0.75 rounds up, 1 + 0.5 and 1 + 1.5 are ties
   * that go to the even neighbour. */
  uint16_t h[3] = {0x3C06, 0x3C04, 0x3C0C};
  put(s, "h", CT_FLOAT16, CT_DIMS(3), h);
  ct_op *op = op_x("cast", "h", "out");
  ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", CT_BFLOAT16), CT_OK);
  run(op, s);
  const uint16_t *o = result(s, "out", CT_BFLOAT16, CT_DIMS(3));
  ck_assert_uint_eq(o[0], 0x3F81);
  ck_assert_uint_eq(o[1], 0x3F80);
  ck_assert_uint_eq(o[2], 0x3F82);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(cast_rank0_and_empty) {
  ct_scope *s = ct_scope_new();
  float x[1] = {7.5f};
  put(s, "x", CT_FLOAT32, CT_DIMS(), x);
  put(s, "e", CT_FLOAT32, CT_DIMS(2, 0), NULL);
  ct_op *a = op_x("cast", "x", "xo"), *b = op_x("cast", "e", "eo");
  ck_assert_int_eq(ct_op_set_attr_int(a, "dtype", CT_INT64), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(b, "dtype", CT_INT64), CT_OK);
  run(a, s);
  run(b, s);
  ck_assert(*(const int64_t *)result(s, "xo", CT_INT64, CT_DIMS()) == 7);
  ck_assert_ptr_nonnull(result(s, "eo", CT_INT64, CT_DIMS(2, 0)));
  ct_op_free(a);
  ct_op_free(b);
  ct_scope_free(s);
}
END_TEST

START_TEST(cast_in_place_changes_the_dtype) {
  ct_scope *s = ct_scope_new();
  int32_t x[3] = {1, -2, 3};
  put(s, "x", CT_INT32, CT_DIMS(3), x);
  ct_op *op = op_x("cast", "x", "x");
  ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", CT_FLOAT64), CT_OK);
  run(op, s);
  const double *o = result(s, "x", CT_FLOAT64, CT_DIMS(3));
  ck_assert(o[0] == 1 && o[1] == -2 && o[2] == 3);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(cast_without_dtype_is_an_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2), data_x);
  ct_op *op = op_x("cast", "x", "out");
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "cast", "dtype", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(cast_to_an_invalid_dtype_is_an_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2), data_x);
  ct_op *op = op_x("cast", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", 99), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "cast", "dtype", "99", NULL);
  ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", CT_DTYPE_UNDEFINED), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "cast", "dtype", NULL);
  ck_assert(!ct_tensor_has_memory(tensor_of(s, "out")));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(assign_copies_any_dtype) {
  ct_scope *s = ct_scope_new();
  int16_t x[3] = {-1, 2, 300};
  put(s, "x", CT_INT16, CT_DIMS(3, 1), x);
  ct_op *op = op_x("assign", "x", "out");
  run(op, s);
  const int16_t *o = result(s, "out", CT_INT16, CT_DIMS(3, 1));
  ck_assert(o[0] == -1 && o[1] == 2 && o[2] == 300);
  ck_assert(!ct_tensor_shares_memory(tensor_of(s, "x"), tensor_of(s, "out")));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(assign_rank0_and_empty) {
  ct_scope *s = ct_scope_new();
  uint16_t x[1] = {0x3C00};
  put(s, "x", CT_FLOAT16, CT_DIMS(), x);
  put(s, "e", CT_INT8, CT_DIMS(0), NULL);
  ct_op *a = op_x("assign", "x", "xo"), *b = op_x("assign", "e", "eo");
  run(a, s);
  run(b, s);
  ck_assert_uint_eq(*(const uint16_t *)result(s, "xo", CT_FLOAT16, CT_DIMS()), 0x3C00);
  ck_assert_ptr_nonnull(result(s, "eo", CT_INT8, CT_DIMS(0)));
  ct_op_free(a);
  ct_op_free(b);
  ct_scope_free(s);
}
END_TEST

static Suite *ops_cast_suite(void) {
  Suite *s = suite_create("ops_cast");
  CT_ADD_TEST(s, cast_between_all_dtype_pairs);
  CT_ADD_TEST(s, cast_negative_values_between_signed_types);
  CT_ADD_TEST(s, cast_float_to_int_truncates_toward_zero);
  CT_ADD_TEST(s, cast_to_narrow_int_saturates_and_nan_is_zero);
  CT_ADD_TEST(s, cast_int_to_narrow_int_saturates);
  CT_ADD_TEST(s, cast_to_bool_is_nonzero);
  CT_ADD_TEST(s, cast_to_float16_rounds_to_nearest_even);
  CT_ADD_TEST(s, cast_to_bfloat16_rounds_to_nearest_even);
  CT_ADD_TEST(s, cast_nan_to_16_bit_floats_stays_nan);
  CT_ADD_TEST(s, cast_int_to_float_rounds_once);
  CT_ADD_TEST(s, cast_from_16_bit_floats_is_exact);
  CT_ADD_TEST(s, cast_float16_to_bfloat16_rounds);
  CT_ADD_TEST(s, cast_rank0_and_empty);
  CT_ADD_TEST(s, cast_in_place_changes_the_dtype);
  CT_ADD_TEST(s, cast_without_dtype_is_an_error);
  CT_ADD_TEST(s, cast_to_an_invalid_dtype_is_an_error);
  CT_ADD_TEST(s, assign_copies_any_dtype);
  CT_ADD_TEST(s, assign_rank0_and_empty);
  return s;
}

CT_TEST_MAIN(ops_cast_suite)
