/* SPDX-License-Identifier: Apache-2.0 */
/* The helpers of the op suites (test_op*.c, the op layer, and test_ops_*.c, the built-in ops):
 * making ops, putting inputs into a scope, running an op and reading its result, expecting a
 * failure, and reading and writing elements of every dtype (float16 and bfloat16 bits written
 * here independently of corten's conversions). */
#ifndef CORTEN_TESTS_OP_UTIL_H
#define CORTEN_TESTS_OP_UTIL_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "harness.h"

/* Relative tolerances of four ulps, for results of expf / exp and the like. */
#define TOL32 (4 * 1.1920929e-7)
#define TOL64 (4 * 2.220446e-16)

/* Every dtype, in enum order. */
static const ct_dtype all_dtypes[] = {CT_BOOL,    CT_INT8,    CT_UINT8,    CT_INT16,  CT_INT32,
                                      CT_INT64,   CT_FLOAT16, CT_BFLOAT16, CT_FLOAT32, CT_FLOAT64,
                                      CT_UINT16,  CT_UINT32,  CT_UINT64};
#define N_ALL_DTYPES ((int)(sizeof all_dtypes / sizeof all_dtypes[0]))

/* ---- Ops and scopes -------------------------------------------------------------------------- */
/* Puts a tensor of dims and dtype holding data into variable name of s (created when missing). */
static inline void put(ct_scope *s, const char *name, ct_dtype dt, ct_ddim dims,
                       const void *data) {
  ct_var *v = ct_scope_var(s, name);
  ck_assert_ptr_nonnull(v);
  ct_tensor *t = ct_var_tensor(v);
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(ct_tensor_set_value(t, data, dims, dt, ct_cpu()), CT_OK);
}

static inline ct_op *new_op(const char *type) {
  ct_op *op = ct_op_new(type);
  ck_assert_msg(op != NULL, "%s", ct_last_error());
  return op;
}

/* An op reading X (and Y when y is not NULL) and writing Out. */
static inline ct_op *op_x(const char *type, const char *x, const char *out) {
  ct_op *op = new_op(type);
  ck_assert_int_eq(ct_op_set_input(op, "X", x), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", out), CT_OK);
  return op;
}

static inline ct_op *op_xy(const char *type, const char *x, const char *y, const char *out) {
  ct_op *op = op_x(type, x, out);
  ck_assert_int_eq(ct_op_set_input(op, "Y", y), CT_OK);
  return op;
}

static inline ct_op *op_many(const char *type, const char *const *xs, size_t n,
                             const char *out) {
  ct_op *op = new_op(type);
  ck_assert_int_eq(ct_op_set_inputs(op, "X", xs, n), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", out), CT_OK);
  return op;
}

/* <type>_grad(X = x, Y = y, Out@GRAD = g) -> dx, dy (type: a binary elementwise op). */
static inline ct_op *op_binary_grad(const char *type) {
  char name[64];
  snprintf(name, sizeof name, "%s_grad", type);
  ct_op *op = new_op(name);
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Y", "y"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Out@GRAD", "g"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "X@GRAD", "dx"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Y@GRAD", "dy"), CT_OK);
  return op;
}

/* An op with only an Out slot (fill and random ops). */
static inline ct_op *op_out(const char *type, const char *out) {
  ct_op *op = new_op(type);
  ck_assert_int_eq(ct_op_set_output(op, "Out", out), CT_OK);
  return op;
}

static inline void run(const ct_op *op, ct_scope *s) {
  ct_status st = ct_op_run(op, s, ct_cpu());
  ck_assert_msg(st == CT_OK, "ct_op_run failed (%d): %s", (int)st, ct_last_error());
}

/* The tensor of variable name, checked to have dims and dtype; its data. */
static inline const void *result(ct_scope *s, const char *name, ct_dtype dt, ct_ddim dims) {
  ct_var *v = ct_scope_find_var(s, name);
  ck_assert_ptr_nonnull(v);
  const ct_tensor *t = ct_var_get_tensor(v);
  ck_assert_ptr_nonnull(t);
  char a[256], b[256];
  ck_assert_msg(ct_ddim_equal(ct_tensor_dims(t), dims), "dims %s, expected %s",
                ct_ddim_str(ct_tensor_dims(t), a, sizeof a), ct_ddim_str(dims, b, sizeof b));
  ck_assert_int_eq(ct_tensor_dtype(t), dt);
  const void *p = ct_tensor_data(t, dt);
  ck_assert_msg(p != NULL, "%s", ct_last_error());
  return p;
}

static inline const ct_tensor *tensor_of(ct_scope *s, const char *name) {
  ct_var *v = ct_scope_find_var(s, name);
  ck_assert_ptr_nonnull(v);
  return ct_var_get_tensor(v);
}

/* Runs op expecting status want, and checks that the message holds each of the strings given
 * after it (NULL-terminated). */
static inline void run_fails(const ct_op *op, ct_scope *s, ct_status want, ...) {
  CT_ASSERT_FAILS(ct_op_run(op, s, ct_cpu()), want);
  va_list ap;
  va_start(ap, want);
  for (const char *needle = va_arg(ap, const char *); needle != NULL;
       needle = va_arg(ap, const char *)) {
    ck_assert_msg(strstr(ct_last_error(), needle) != NULL, "'%s' not in the message: %s",
                  needle, ct_last_error());
  }
  va_end(ap);
}

/* ---- Test data and elements of every dtype --------------------------------------------------- */

static inline void *xmalloc(int64_t n, size_t size) {
  void *p = calloc(n > 0 ? (size_t)n : 1, size);
  ck_assert_ptr_nonnull(p);
  return p;
}

/* Flat index into a tensor of dims `in` of flat index i of `out`, in broadcasts `in` to. */
static inline int64_t bcast_src(ct_ddim out, ct_ddim in, int64_t i) {
  int64_t src = 0, stride = 1;
  for (int k = out.rank - 1; k >= 0; k--) {
    int64_t ik = i % out.d[k];
    i /= out.d[k];
    int kin = in.rank - out.rank + k;
    if (kin < 0) continue;
    if (in.d[kin] != 1) src += ik * stride;
    stride *= in.d[kin];
  }
  return src;
}

/* Test data: small integers, exact in every float type and in every sum the tests make. */
static inline double small_int(int64_t i, int mod, int shift) {
  return (double)(i % mod) - shift;
}

/* float16 and bfloat16 bits of values the tests know to be exact, and back, written here
 * independently of corten's conversions. */
static inline uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline double half_value(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

/* The half bits of v, which must be a half value exactly (normal or zero). */
static inline uint16_t half_exact(double v) {
  uint16_t sign = v < 0 ? 0x8000 : 0;
  v = fabs(v);
  if (v == 0) return sign;
  int e;
  double m = frexp(v, &e); /* v = m 2^e, m in [0.5, 1) */
  uint16_t bits = (uint16_t)(sign | ((e + 14) << 10) | ((int)(m * 2048) & 0x3ff));
  ck_assert(half_value(bits) == (sign ? -v : v));
  return bits;
}

static inline double bf16_value(uint16_t b) { return f32_from_bits((uint32_t)b << 16); }

static inline uint16_t bf16_exact(double v) {
  uint32_t u = f32_bits((float)v);
  ck_assert((u & 0xffff) == 0 && (double)(float)v == v);
  return (uint16_t)(u >> 16);
}

/* Element i of any dtype as a double, and an exactly representable v stored as element i. */
static inline double get_elem(const void *p, ct_dtype t, int64_t i) {
  switch (t) {
    case CT_BOOL: return ((const uint8_t *)p)[i];
    case CT_INT8: return ((const int8_t *)p)[i];
    case CT_UINT8: return ((const uint8_t *)p)[i];
    case CT_INT16: return ((const int16_t *)p)[i];
    case CT_INT32: return ((const int32_t *)p)[i];
    case CT_INT64: return (double)((const int64_t *)p)[i];
    case CT_UINT16: return ((const uint16_t *)p)[i];
    case CT_UINT32: return ((const uint32_t *)p)[i];
    case CT_UINT64: return (double)((const uint64_t *)p)[i];
    case CT_FLOAT16: return half_value(((const uint16_t *)p)[i]);
    case CT_BFLOAT16: return bf16_value(((const uint16_t *)p)[i]);
    case CT_FLOAT32: return ((const float *)p)[i];
    case CT_FLOAT64: return ((const double *)p)[i];
    default: ck_abort_msg("bad dtype %d", (int)t);
  }
  return 0;
}

static inline void set_elem(void *p, ct_dtype t, int64_t i, double v) {
  switch (t) {
    case CT_BOOL: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case CT_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
    case CT_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case CT_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
    case CT_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case CT_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    case CT_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case CT_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case CT_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    case CT_FLOAT16: ((uint16_t *)p)[i] = half_exact(v); break;
    case CT_BFLOAT16: ((uint16_t *)p)[i] = bf16_exact(v); break;
    case CT_FLOAT32: ((float *)p)[i] = (float)v; break;
    case CT_FLOAT64: ((double *)p)[i] = v; break;
    default: ck_abort_msg("bad dtype %d", (int)t);
  }
  ck_assert(get_elem(p, t, i) == v);
}

/* Puts dims of dtype dt into name, element i being f(i). */
static inline void put_fn(ct_scope *s, const char *name, ct_dtype dt, ct_ddim dims,
                          double (*f)(int64_t)) {
  int64_t n = ct_ddim_numel(dims);
  void *p = xmalloc(n, 8);
  for (int64_t i = 0; i < n; i++) set_elem(p, dt, i, f(i));
  put(s, name, dt, dims, p);
  free(p);
}

static inline double data_x(int64_t i) { return small_int(i, 7, 3); }  /* -3 .. 3 */
static inline double data_y(int64_t i) { return small_int(i, 5, -1); } /* 1 .. 5, never 0 */
static inline double data_iota(int64_t i) { return (double)i; }
static inline double data_zero_one(int64_t i) { return (double)(i % 2); }
static inline double data_unary(int64_t i) { return (double)(i % 9) * 0.5 - 2.0; } /* -2 .. 2 */

/* A float32 tensor variable name in s with dims and values 0, 1, 2 ... times step. */
static inline ct_tensor *put_ramp(ct_scope *s, const char *name, ct_ddim dims, float step) {
  ct_tensor *t = ct_var_tensor(ct_scope_var(s, name));
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(ct_tensor_resize(t, dims), CT_OK);
  float *d = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu());
  ck_assert_ptr_nonnull(d);
  for (int64_t i = 0; i < ct_tensor_numel(t); i++) d[i] = (float)i * step;
  return t;
}

#endif /* CORTEN_TESTS_OP_UTIL_H */
