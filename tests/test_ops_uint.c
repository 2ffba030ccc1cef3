/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_ops_uint.c: the unsigned dtypes uint16, uint32 and uint64 through the kernels that
 * take them: arithmetic wrapping modulo 2^bits, max, min, mod, fmod, the shifts, comparisons,
 * pow, cast and cast_like (saturating, rounded once), the any-dtype ops (by element size), and
 * the tensor files. Expected values come from plain loops in uint64_t arithmetic, masked to the
 * width, or are written out by hand. */
#include <stdio.h>
#include <unistd.h>

#include <corten/dlpack.h>

#include "op_util.h"

static const ct_dtype udt[3] = {CT_UINT16, CT_UINT32, CT_UINT64};

static uint64_t mask_of(ct_dtype t) {
  return t == CT_UINT16 ? 0xFFFFu : t == CT_UINT32 ? 0xFFFFFFFFu : UINT64_MAX;
}

/* Element i of an unsigned tensor, exactly. */
static uint64_t uget(const void *p, ct_dtype t, int64_t i) {
  switch (t) {
    case CT_UINT16: return ((const uint16_t *)p)[i];
    case CT_UINT32: return ((const uint32_t *)p)[i];
    default: return ((const uint64_t *)p)[i];
  }
}

/* Puts n values (cut to t's width) into variable name: dims [n], or a rank-0 tensor holding
 * v[0] when scalar. */
static void uput(ct_scope *s, const char *name, ct_dtype t, const uint64_t *v, int64_t n,
                 bool scalar) {
  uint64_t buf[16];
  ck_assert(n <= 16);
  for (int64_t i = 0; i < n; i++) {
    uint64_t x = v[i] & mask_of(t);
    switch (t) {
      case CT_UINT16: ((uint16_t *)buf)[i] = (uint16_t)x; break;
      case CT_UINT32: ((uint32_t *)buf)[i] = (uint32_t)x; break;
      default: buf[i] = x; break;
    }
  }
  put(s, name, t, scalar ? CT_DIMS() : CT_DIMS(n), buf);
}

static const uint64_t A[6] = {0, 1, 7, 0xFFFF, 0xFFFFFFFFu, UINT64_MAX};
static const uint64_t B[6] = {1, 3, 2, 0xFFFF, 2, UINT64_MAX - 1};

/* Runs binary op `type` on X = A, Y = B (cut to t) and returns Out (dtype out_dt, dims [6]). */
static const void *run_bin(ct_scope *s, ct_op **op, const char *type, ct_dtype t,
                           ct_dtype out_dt) {
  uput(s, "x", t, A, 6, false);
  uput(s, "y", t, B, 6, false);
  *op = op_xy(type, "x", "y", "out");
  run(*op, s);
  return result(s, "out", out_dt, CT_DIMS(6));
}

START_TEST(arithmetic_wraps_modulo_the_width) {
  static const char *const ops[4] = {"elementwise_add", "elementwise_sub", "elementwise_mul",
                                     "elementwise_div"};
  for (int k = 0; k < 3; k++) {
    ct_dtype t = udt[k];
    uint64_t m = mask_of(t);
    for (int o = 0; o < 4; o++) {
      ct_scope *s = ct_scope_new();
      ct_op *op;
      const void *out = run_bin(s, &op, ops[o], t, t);
      for (int i = 0; i < 6; i++) {
        uint64_t a = A[i] & m, b = B[i] & m;
        uint64_t want = o == 0 ? a + b : o == 1 ? a - b : o == 2 ? a * b : a / b;
        want &= m;
        ck_assert_msg(uget(out, t, i) == want, "%s %s element %d: %llu, expected %llu", ops[o],
                      ct_dtype_name(t), i, (unsigned long long)uget(out, t, i),
                      (unsigned long long)want);
      }
      ct_op_free(op);
      ct_scope_free(s);
    }
  }
}
END_TEST

START_TEST(arithmetic_broadcasts_a_scalar) {
  ct_scope *s = ct_scope_new();
  const uint64_t two[1] = {2};
  uput(s, "x", CT_UINT64, A, 6, false);
  uput(s, "y", CT_UINT64, two, 1, true);
  ct_op *op = op_xy("elementwise_mul", "x", "y", "out");
  run(op, s);
  const uint64_t *o = result(s, "out", CT_UINT64, CT_DIMS(6));
  for (int i = 0; i < 6; i++) ck_assert(o[i] == A[i] * 2);
  ck_assert(o[5] == UINT64_MAX - 1);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(division_by_zero_is_refused) {
  for (int k = 0; k < 3; k++) {
    ct_scope *s = ct_scope_new();
    const uint64_t y[3] = {1, 0, 2};
    uput(s, "x", udt[k], A, 3, false);
    uput(s, "y", udt[k], y, 3, false);
    static const char *const ops[3] = {"elementwise_div", "elementwise_mod", "elementwise_fmod"};
    for (int o = 0; o < 3; o++) {
      ct_op *op = op_xy(ops[o], "x", "y", "out");
      run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "'y' holds 0 at element 1", "division by zero",
                NULL);
      ct_op_free(op);
    }
    ct_scope_free(s);
  }
}
END_TEST

START_TEST(max_min_mod_fmod_compare_unsigned) {
  static const char *const ops[4] = {"elementwise_max", "elementwise_min", "elementwise_mod",
                                     "elementwise_fmod"};
  for (int k = 0; k < 3; k++) {
    ct_dtype t = udt[k];
    uint64_t m = mask_of(t);
    for (int o = 0; o < 4; o++) {
      ct_scope *s = ct_scope_new();
      ct_op *op;
      const void *out = run_bin(s, &op, ops[o], t, t);
      for (int i = 0; i < 6; i++) {
        uint64_t a = A[i] & m, b = B[i] & m;
        uint64_t want = o == 0 ? (a > b ? a : b) : o == 1 ? (a < b ? a : b) : a % b;
        ck_assert_msg(uget(out, t, i) == want, "%s %s element %d", ops[o], ct_dtype_name(t), i);
      }
      ct_op_free(op);
      ct_scope_free(s);
    }
  }
}
END_TEST

START_TEST(shifts_cut_to_the_width_and_past_it_give_zero) {
  static const uint64_t x[6] = {1, 0x8001, 3, 5, 0xFFFFFFFFu, UINT64_MAX};
  static const uint64_t n[6] = {0, 1, 15, 16, 31, 63};
  for (int k = 0; k < 3; k++) {
    ct_dtype t = udt[k];
    uint64_t m = mask_of(t);
    int bits = t == CT_UINT16 ? 16 : t == CT_UINT32 ? 32 : 64;
    for (int left = 0; left < 2; left++) {
      ct_scope *s = ct_scope_new();
      uput(s, "x", t, x, 6, false);
      uput(s, "y", t, n, 6, false);
      ct_op *op = op_xy(left ? "bitwise_left_shift" : "bitwise_right_shift", "x", "y", "out");
      run(op, s);
      const void *out = result(s, "out", t, CT_DIMS(6));
      for (int i = 0; i < 6; i++) {
        uint64_t a = x[i] & m, b = n[i] & m;
        uint64_t want = b >= (uint64_t)bits ? 0 : ((left ? a << b : a >> b) & m);
        ck_assert_msg(uget(out, t, i) == want, "%s shift %s element %d: %llu, expected %llu",
                      left ? "left" : "right", ct_dtype_name(t), i,
                      (unsigned long long)uget(out, t, i), (unsigned long long)want);
      }
      ct_op_free(op);
      ct_scope_free(s);
    }
  }
}
END_TEST

START_TEST(comparisons_order_values_above_int64_max) {
  static const char *const ops[6] = {"equal",        "not_equal",   "less_than",
                                     "less_equal",   "greater_than", "greater_equal"};
  for (int k = 0; k < 3; k++) {
    ct_dtype t = udt[k];
    uint64_t m = mask_of(t);
    for (int o = 0; o < 6; o++) {
      ct_scope *s = ct_scope_new();
      ct_op *op;
      const uint8_t *out = run_bin(s, &op, ops[o], t, CT_BOOL);
      for (int i = 0; i < 6; i++) {
        uint64_t a = A[i] & m, b = B[i] & m;
        bool want = o == 0 ? a == b : o == 1 ? a != b : o == 2 ? a < b : o == 3 ? a <= b
                  : o == 4 ? a > b : a >= b;
        ck_assert_msg(out[i] == want, "%s %s element %d", ops[o], ct_dtype_name(t), i);
      }
      ct_op_free(op);
      ct_scope_free(s);
    }
  }
}
END_TEST

/* base^e modulo 2^64, the plain way. */
static uint64_t slow_pow(uint64_t base, uint64_t e) {
  uint64_t r = 1;
  for (uint64_t k = 0; k < e; k++) r *= base;
  return r;
}

START_TEST(pow_wraps_with_an_integer_exponent) {
  static const uint64_t x[6] = {3, 2, 0, 1, 0xFFFF, 10};
  static const uint64_t e[6] = {50, 70, 0, 999, 2, 19};
  for (int k = 0; k < 3; k++) {
    ct_dtype t = udt[k];
    uint64_t m = mask_of(t);
    ct_scope *s = ct_scope_new();
    uput(s, "x", t, x, 6, false);
    uput(s, "y", t, e, 6, false);
    ct_op *op = op_xy("elementwise_pow", "x", "y", "out");
    run(op, s);
    const void *out = result(s, "out", t, CT_DIMS(6));
    for (int i = 0; i < 6; i++) {
      uint64_t want = slow_pow(x[i] & m, e[i] & m) & m;
      ck_assert_msg(uget(out, t, i) == want, "pow %s element %d: %llu, expected %llu",
                    ct_dtype_name(t), i, (unsigned long long)uget(out, t, i),
                    (unsigned long long)want);
    }
    ct_op_free(op);
    ct_scope_free(s);
  }
}
END_TEST

START_TEST(pow_mixes_dtypes) {
  ct_scope *s = ct_scope_new();
  /* float32 base, uint32 and uint64 exponents (ONNX's Pow types). */
  const float fx[3] = {2.0f, -1.5f, 0.5f};
  const uint64_t e[3] = {10, 3, 1};
  put(s, "x", CT_FLOAT32, CT_DIMS(3), fx);
  for (int k = 1; k < 3; k++) {
    uput(s, "y", udt[k], e, 3, false);
    ct_op *op = op_xy("elementwise_pow", "x", "y", "out");
    run(op, s);
    const float *o = result(s, "out", CT_FLOAT32, CT_DIMS(3));
    ck_assert(o[0] == 1024.0f && o[1] == -3.375f && o[2] == 0.5f);
    ct_op_free(op);
  }
  /* uint64 base: a negative int64 exponent truncates 1 / x^-e; a float one saturates. */
  const uint64_t ux[3] = {1, 2, 2};
  const int64_t ie[3] = {-3, -1, 5};
  uput(s, "ux", CT_UINT64, ux, 3, false);
  put(s, "ie", CT_INT64, CT_DIMS(3), ie);
  ct_op *op = op_xy("elementwise_pow", "ux", "ie", "out");
  run(op, s);
  const uint64_t *o = result(s, "out", CT_UINT64, CT_DIMS(3));
  ck_assert(o[0] == 1 && o[1] == 0 && o[2] == 32);
  ct_op_free(op);
  const double fe[3] = {70.0, 0.5, -1.0};
  put(s, "fe", CT_FLOAT64, CT_DIMS(3), fe);
  op = op_xy("elementwise_pow", "ux", "fe", "out");
  run(op, s);
  o = result(s, "out", CT_UINT64, CT_DIMS(3));
  ck_assert(o[0] == 1 && o[1] == 1 && o[2] == 0); /* 1^70, trunc(sqrt 2), trunc(0.5) */
  const uint64_t big[3] = {2, 2, 2};
  uput(s, "ux", CT_UINT64, big, 3, false);
  run(op, s);
  o = result(s, "out", CT_UINT64, CT_DIMS(3));
  ck_assert(o[0] == UINT64_MAX && o[1] == 1 && o[2] == 0); /* 2^70 saturates */
  ct_op_free(op);
  /* 0 to a negative power is refused. */
  const uint64_t zero[3] = {0, 0, 0};
  uput(s, "ux", CT_UINT64, zero, 3, false);
  op = op_xy("elementwise_pow", "ux", "ie", "out");
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "negative power", "division by zero", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* Casts variable x to dtype `to` with op `type` ("cast", or "cast_like" against a tensor of
 * dtype to); returns Out (dims [n]). */
static const void *cast_to(ct_scope *s, const char *type, ct_dtype to, int64_t n) {
  ct_op *op = op_x(type, "x", "out");
  if (strcmp(type, "cast") == 0) {
    ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", to), CT_OK);
  } else {
    const uint64_t zero = 0;
    put(s, "like", to, CT_DIMS(), &zero);
    ck_assert_int_eq(ct_op_set_input(op, "Like", "like"), CT_OK);
  }
  run(op, s);
  ct_op_free(op);
  return result(s, "out", to, CT_DIMS(n));
}

START_TEST(cast_from_uint64_saturates_and_rounds_once) {
  /* 2^63 + 2^55 + 1 lies just above the bfloat16 tie between 2^63 and 2^63 + 2^56: rounded
   * once it goes up; through a double it would become the tie and round to even (down). */
  static const uint64_t x[4] = {5, (uint64_t)1 << 63 | (uint64_t)1 << 55 | 1, UINT64_MAX, 0};
  for (int k = 0; k < 2; k++) {
    const char *type = k == 0 ? "cast" : "cast_like";
    ct_scope *s = ct_scope_new();
    put(s, "x", CT_UINT64, CT_DIMS(4), x);
    const int64_t *i64 = cast_to(s, type, CT_INT64, 4);
    ck_assert(i64[0] == 5 && i64[1] == INT64_MAX && i64[2] == INT64_MAX && i64[3] == 0);
    const uint16_t *u16 = cast_to(s, type, CT_UINT16, 4);
    ck_assert(u16[0] == 5 && u16[1] == UINT16_MAX && u16[2] == UINT16_MAX && u16[3] == 0);
    const int8_t *i8 = cast_to(s, type, CT_INT8, 4);
    ck_assert(i8[0] == 5 && i8[1] == INT8_MAX && i8[2] == INT8_MAX && i8[3] == 0);
    const uint8_t *b = cast_to(s, type, CT_BOOL, 4);
    ck_assert(b[0] == 1 && b[1] == 1 && b[2] == 1 && b[3] == 0);
    const uint16_t *bf = cast_to(s, type, CT_BFLOAT16, 4);
    ck_assert_uint_eq(bf[1], 0x5F01);  /* 2^63 + 2^56 */
    ck_assert_uint_eq(bf[2], 0x5F80);  /* 2^64 */
    const uint16_t *h = cast_to(s, type, CT_FLOAT16, 4);
    ck_assert_uint_eq(h[0], 0x4500); /* 5 */
    ck_assert_uint_eq(h[1], 0x7C00); /* inf */
    const float *f = cast_to(s, type, CT_FLOAT32, 4);
    ck_assert(f[1] == 9259400833873739776.0f && f[2] == 18446744073709551616.0f);
    const double *d = cast_to(s, type, CT_FLOAT64, 4);
    ck_assert(d[1] == (double)x[1] && d[2] == 18446744073709551616.0);
    ct_scope_free(s);
  }
}
END_TEST

START_TEST(cast_into_unsigned_saturates) {
  static const double fx[6] = {-1.5, 0.9, 70000.5, 5e9, 1e30, NAN};
  static const int64_t ix[4] = {-5, 65536, 4294967296, INT64_MAX};
  for (int k = 0; k < 2; k++) {
    const char *type = k == 0 ? "cast" : "cast_like";
    ct_scope *s = ct_scope_new();
    put(s, "x", CT_FLOAT64, CT_DIMS(6), fx);
    const uint16_t *u16 = cast_to(s, type, CT_UINT16, 6);
    const uint16_t w16[6] = {0, 0, UINT16_MAX, UINT16_MAX, UINT16_MAX, 0};
    ck_assert(memcmp(u16, w16, sizeof w16) == 0);
    const uint32_t *u32 = cast_to(s, type, CT_UINT32, 6);
    const uint32_t w32[6] = {0, 0, 70000, UINT32_MAX, UINT32_MAX, 0};
    ck_assert(memcmp(u32, w32, sizeof w32) == 0);
    const uint64_t *u64 = cast_to(s, type, CT_UINT64, 6);
    const uint64_t w64[6] = {0, 0, 70000, 5000000000u, UINT64_MAX, 0};
    ck_assert(memcmp(u64, w64, sizeof w64) == 0);
    put(s, "x", CT_INT64, CT_DIMS(4), ix);
    u16 = cast_to(s, type, CT_UINT16, 4);
    ck_assert(u16[0] == 0 && u16[1] == UINT16_MAX && u16[2] == UINT16_MAX);
    u32 = cast_to(s, type, CT_UINT32, 4);
    ck_assert(u32[0] == 0 && u32[1] == 65536 && u32[2] == UINT32_MAX && u32[3] == UINT32_MAX);
    u64 = cast_to(s, type, CT_UINT64, 4);
    ck_assert(u64[0] == 0 && u64[1] == 65536 && u64[2] == 4294967296u && u64[3] == INT64_MAX);
    const uint32_t top = UINT32_MAX;
    put(s, "x", CT_UINT32, CT_DIMS(1), &top);
    const int32_t *i32 = cast_to(s, type, CT_INT32, 1);
    ck_assert(i32[0] == INT32_MAX);
    const float *f = cast_to(s, type, CT_FLOAT32, 1);
    ck_assert(f[0] == 4294967296.0f);
    ct_scope_free(s);
  }
}
END_TEST

/* reshape, transpose, concat and gather move uint64 elements whole. */
START_TEST(any_dtype_ops_move_whole_elements) {
  ct_scope *s = ct_scope_new();
  uint64_t x[6];
  for (int i = 0; i < 6; i++) x[i] = UINT64_MAX - (uint64_t)i;
  put(s, "x", CT_UINT64, CT_DIMS(2, 3), x);
  ct_op *op = op_x("transpose", "x", "t");
  const int64_t perm[2] = {1, 0};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "axis", perm, 2), CT_OK);
  run(op, s);
  const uint64_t *t = result(s, "t", CT_UINT64, CT_DIMS(3, 2));
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 2; j++) ck_assert(t[i * 2 + j] == x[j * 3 + i]);
  }
  ct_op_free(op);
  op = op_x("reshape", "x", "r");
  const int64_t shape[1] = {6};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", shape, 1), CT_OK);
  run(op, s);
  ck_assert(memcmp(result(s, "r", CT_UINT64, CT_DIMS(6)), x, sizeof x) == 0);
  ct_op_free(op);
  const char *const xs[2] = {"x", "x"};
  op = op_many("concat", xs, 2, "c");
  run(op, s);
  const uint64_t *c = result(s, "c", CT_UINT64, CT_DIMS(4, 3));
  ck_assert(memcmp(c, x, sizeof x) == 0 && memcmp(c + 6, x, sizeof x) == 0);
  ct_op_free(op);
  const int64_t idx[2] = {1, 0};
  put(s, "i", CT_INT64, CT_DIMS(2), idx);
  op = op_x("gather", "x", "g");
  ck_assert_int_eq(ct_op_set_input(op, "Index", "i"), CT_OK);
  run(op, s);
  const uint64_t *g = result(s, "g", CT_UINT64, CT_DIMS(2, 3));
  ck_assert(memcmp(g, x + 3, 3 * sizeof *x) == 0 && memcmp(g + 3, x, 3 * sizeof *x) == 0);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* An op without a uint64 kernel refuses it, naming the dtype. */
START_TEST(ops_without_unsigned_kernels_refuse) {
  ct_scope *s = ct_scope_new();
  uput(s, "x", CT_UINT64, A, 6, false);
  ct_op *op = op_x("clip", "x", "out");
  run_fails(op, s, CT_ERR_UNSUPPORTED, "uint64", NULL);
  ct_op_free(op);
  op = op_x("tanh", "x", "out");
  run_fails(op, s, CT_ERR_UNSUPPORTED, "uint64", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* A tensor file of each unsigned dtype loads back with its dtype and bits. */
START_TEST(tensor_files_round_trip) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/corten-uint-%d.tensor", (int)getpid());
  for (int k = 0; k < 3; k++) {
    ct_scope *s = ct_scope_new();
    uput(s, "x", udt[k], A, 6, false);
    ck_assert_int_eq(ct_tensor_save(path, tensor_of(s, "x")), CT_OK);
    ct_tensor *back = ct_tensor_new();
    ck_assert_int_eq(ct_tensor_load(path, back), CT_OK);
    ck_assert_int_eq(ct_tensor_dtype(back), udt[k]);
    ck_assert(ct_ddim_equal(ct_tensor_dims(back), CT_DIMS(6)));
    const void *p = ct_tensor_data(back, udt[k]);
    for (int i = 0; i < 6; i++) ck_assert(uget(p, udt[k], i) == (A[i] & mask_of(udt[k])));
    ct_tensor_free(back);
    ct_scope_free(s);
  }
  remove(path);
}
END_TEST

/* Exported as (kDLUInt, bits) and imported back: the same memory, dtype and values. */
START_TEST(dlpack_round_trip_keeps_dtype_and_bits) {
  static const uint8_t bits[3] = {16, 32, 64};
  for (int k = 0; k < 3; k++) {
    ct_scope *s = ct_scope_new();
    uput(s, "x", udt[k], A, 6, false);
    const ct_tensor *x = tensor_of(s, "x");
    DLManagedTensor *m = NULL;
    ck_assert_int_eq(ct_tensor_to_dlpack(x, &m), CT_OK);
    ck_assert_uint_eq(m->dl_tensor.dtype.code, kDLUInt);
    ck_assert_uint_eq(m->dl_tensor.dtype.bits, bits[k]);
    ct_tensor *back = ct_tensor_new();
    ck_assert_int_eq(ct_tensor_from_dlpack(back, m), CT_OK);
    ck_assert_int_eq(ct_tensor_dtype(back), udt[k]);
    const void *p = ct_tensor_data(back, udt[k]);
    ck_assert_ptr_eq(p, ct_tensor_data(x, udt[k]));
    for (int i = 0; i < 6; i++) ck_assert(uget(p, udt[k], i) == (A[i] & mask_of(udt[k])));
    ct_tensor_free(back);
    ct_scope_free(s);
  }
}
END_TEST

static Suite *ops_uint_suite(void) {
  Suite *s = suite_create("ops_uint");
  CT_ADD_TEST(s, arithmetic_wraps_modulo_the_width);
  CT_ADD_TEST(s, arithmetic_broadcasts_a_scalar);
  CT_ADD_TEST(s, division_by_zero_is_refused);
  CT_ADD_TEST(s, max_min_mod_fmod_compare_unsigned);
  CT_ADD_TEST(s, shifts_cut_to_the_width_and_past_it_give_zero);
  CT_ADD_TEST(s, comparisons_order_values_above_int64_max);
  CT_ADD_TEST(s, pow_wraps_with_an_integer_exponent);
  CT_ADD_TEST(s, pow_mixes_dtypes);
  CT_ADD_TEST(s, cast_from_uint64_saturates_and_rounds_once);
  CT_ADD_TEST(s, cast_into_unsigned_saturates);
  CT_ADD_TEST(s, any_dtype_ops_move_whole_elements);
  CT_ADD_TEST(s, ops_without_unsigned_kernels_refuse);
  CT_ADD_TEST(s, tensor_files_round_trip);
  CT_ADD_TEST(s, dlpack_round_trip_keeps_dtype_and_bits);
  return s;
}

CT_TEST_MAIN(ops_uint_suite)
