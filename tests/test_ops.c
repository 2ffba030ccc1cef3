/* Tests of corten's built-in ops on the CPU: every op against a reference computed here with
 * naive loops, over shapes that include broadcasting edge cases, rank 0 and empty tensors, and
 * every error an op's kernel or infer-shape function reports. Each test runs in its own process.
 * The registry, the wiring errors and the executor are tested in test_op.c. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "harness.h"

/* ---- Helpers ------------------------------------------------------------------------------- */

/* Puts a tensor of dims and dtype holding data into variable name of s (created when missing). */
static void put(ct_scope *s, const char *name, ct_dtype dt, ct_ddim dims, const void *data) {
  ct_var *v = ct_scope_var(s, name);
  ck_assert_ptr_nonnull(v);
  ct_tensor *t = ct_var_tensor(v);
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(ct_tensor_set_value(t, data, dims, dt, ct_cpu()), CT_OK);
}

static ct_op *new_op(const char *type) {
  ct_op *op = ct_op_new(type);
  ck_assert_msg(op != NULL, "%s", ct_last_error());
  return op;
}

/* An op reading X (and Y when y is not NULL) and writing Out. */
static ct_op *op_x(const char *type, const char *x, const char *out) {
  ct_op *op = new_op(type);
  ck_assert_int_eq(ct_op_set_input(op, "X", x), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", out), CT_OK);
  return op;
}

static ct_op *op_xy(const char *type, const char *x, const char *y, const char *out) {
  ct_op *op = op_x(type, x, out);
  ck_assert_int_eq(ct_op_set_input(op, "Y", y), CT_OK);
  return op;
}

static ct_op *op_many(const char *type, const char *const *xs, size_t n, const char *out) {
  ct_op *op = new_op(type);
  ck_assert_int_eq(ct_op_set_inputs(op, "X", xs, n), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", out), CT_OK);
  return op;
}

/* An op with only an Out slot (fill and random ops). */
static ct_op *op_out(const char *type, const char *out) {
  ct_op *op = new_op(type);
  ck_assert_int_eq(ct_op_set_output(op, "Out", out), CT_OK);
  return op;
}

static void run(const ct_op *op, ct_scope *s) {
  ct_status st = ct_op_run(op, s, ct_cpu());
  ck_assert_msg(st == CT_OK, "ct_op_run failed (%d): %s", (int)st, ct_last_error());
}

/* The tensor of variable name, checked to have dims and dtype; its data. */
static const void *result(ct_scope *s, const char *name, ct_dtype dt, ct_ddim dims) {
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

static const ct_tensor *tensor_of(ct_scope *s, const char *name) {
  ct_var *v = ct_scope_find_var(s, name);
  ck_assert_ptr_nonnull(v);
  return ct_var_get_tensor(v);
}

/* Runs op expecting status want, and checks that the message holds each of the strings given
 * after it (NULL-terminated). */
static void run_fails(const ct_op *op, ct_scope *s, ct_status want, ...) {
  ct_status st = ct_op_run(op, s, ct_cpu());
  ck_assert_msg(st == want, "status %d, expected %d: %s", (int)st, (int)want, ct_last_error());
  ck_assert_int_eq(ct_last_status(), want);
  va_list ap;
  va_start(ap, want);
  for (const char *needle = va_arg(ap, const char *); needle != NULL;
       needle = va_arg(ap, const char *)) {
    ck_assert_msg(strstr(ct_last_error(), needle) != NULL, "'%s' not in the message: %s",
                  needle, ct_last_error());
  }
  va_end(ap);
}

static void *xmalloc(int64_t n, size_t size) {
  void *p = calloc(n > 0 ? (size_t)n : 1, size);
  ck_assert_ptr_nonnull(p);
  return p;
}

/* Flat index into a tensor of dims `in` of flat index i of `out`, in broadcasts `in` to. */
static int64_t bcast_src(ct_ddim out, ct_ddim in, int64_t i) {
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
static double small_int(int64_t i, int mod, int shift) { return (double)(i % mod) - shift; }

/* float16 and bfloat16 bits of values the tests know to be exact, and back, written here
 * independently of corten's conversions. */
static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static double half_value(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

/* The half bits of v, which must be a half value exactly (normal or zero). */
static uint16_t half_exact(double v) {
  uint16_t sign = v < 0 ? 0x8000 : 0;
  v = fabs(v);
  if (v == 0) return sign;
  int e;
  double m = frexp(v, &e); /* v = m 2^e, m in [0.5, 1) */
  uint16_t bits = (uint16_t)(sign | ((e + 14) << 10) | ((int)(m * 2048) & 0x3ff));
  ck_assert(half_value(bits) == (sign ? -v : v));
  return bits;
}

static double bf16_value(uint16_t b) { return f32_from_bits((uint32_t)b << 16); }

static uint16_t bf16_exact(double v) {
  uint32_t u = f32_bits((float)v);
  ck_assert((u & 0xffff) == 0 && (double)(float)v == v);
  return (uint16_t)(u >> 16);
}

/* Element i of any dtype as a double, and an exactly representable v stored as element i. */
static double get_elem(const void *p, ct_dtype t, int64_t i) {
  switch (t) {
    case CT_BOOL: return ((const uint8_t *)p)[i];
    case CT_INT8: return ((const int8_t *)p)[i];
    case CT_UINT8: return ((const uint8_t *)p)[i];
    case CT_INT16: return ((const int16_t *)p)[i];
    case CT_INT32: return ((const int32_t *)p)[i];
    case CT_INT64: return (double)((const int64_t *)p)[i];
    case CT_FLOAT16: return half_value(((const uint16_t *)p)[i]);
    case CT_BFLOAT16: return bf16_value(((const uint16_t *)p)[i]);
    case CT_FLOAT32: return ((const float *)p)[i];
    case CT_FLOAT64: return ((const double *)p)[i];
    default: ck_abort_msg("bad dtype %d", (int)t);
  }
  return 0;
}

static void set_elem(void *p, ct_dtype t, int64_t i, double v) {
  switch (t) {
    case CT_BOOL: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case CT_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
    case CT_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case CT_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
    case CT_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case CT_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    case CT_FLOAT16: ((uint16_t *)p)[i] = half_exact(v); break;
    case CT_BFLOAT16: ((uint16_t *)p)[i] = bf16_exact(v); break;
    case CT_FLOAT32: ((float *)p)[i] = (float)v; break;
    case CT_FLOAT64: ((double *)p)[i] = v; break;
    default: ck_abort_msg("bad dtype %d", (int)t);
  }
  ck_assert(get_elem(p, t, i) == v);
}

/* Puts dims of dtype dt into name, element i being f(i). */
static void put_fn(ct_scope *s, const char *name, ct_dtype dt, ct_ddim dims,
                   double (*f)(int64_t)) {
  int64_t n = ct_ddim_numel(dims);
  void *p = xmalloc(n, 8);
  for (int64_t i = 0; i < n; i++) set_elem(p, dt, i, f(i));
  put(s, name, dt, dims, p);
  free(p);
}

static double data_x(int64_t i) { return small_int(i, 7, 3); }     /* -3 .. 3 */
static double data_y(int64_t i) { return small_int(i, 5, -1); }    /* 1 .. 5, never 0 */
static double data_iota(int64_t i) { return (double)i; }
static double data_zero_one(int64_t i) { return (double)(i % 2); }

/* ---- Elementwise binary ops ------------------------------------------------------------------ */

typedef enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV } binop;

static const char *const binop_type[] = {"elementwise_add", "elementwise_sub", "elementwise_mul",
                                         "elementwise_div"};

/* Runs elementwise op o on X of dims xd and Y of dims yd (dtype dt, float32 or float64) and
 * checks Out against the broadcast computed here element by element, in the same type. */
static void check_binary(binop o, ct_dtype dt, ct_ddim xd, ct_ddim yd, ct_ddim want) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", dt, xd, data_x);
  put_fn(s, "y", dt, yd, data_y);
  ct_op *op = op_xy(binop_type[o], "x", "y", "out");
  run(op, s);
  const void *x = ct_tensor_data(tensor_of(s, "x"), dt), *y = ct_tensor_data(tensor_of(s, "y"), dt);
  const void *out = result(s, "out", dt, want);
  for (int64_t i = 0, n = ct_ddim_numel(want); i < n; i++) {
    int64_t ix = bcast_src(want, xd, i), iy = bcast_src(want, yd, i);
    if (dt == CT_FLOAT32) {
      float a = ((const float *)x)[ix], b = ((const float *)y)[iy];
      float r = o == OP_ADD ? a + b : o == OP_SUB ? a - b : o == OP_MUL ? a * b : a / b;
      ck_assert_msg(((const float *)out)[i] == r, "element %lld: %g, expected %g", (long long)i,
                    (double)((const float *)out)[i], (double)r);
    } else {
      double a = ((const double *)x)[ix], b = ((const double *)y)[iy];
      double r = o == OP_ADD ? a + b : o == OP_SUB ? a - b : o == OP_MUL ? a * b : a / b;
      ck_assert_msg(((const double *)out)[i] == r, "element %lld: %g, expected %g", (long long)i,
                    ((const double *)out)[i], r);
    }
  }
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(add_same_dims) {
  check_binary(OP_ADD, CT_FLOAT32, CT_DIMS(2, 3), CT_DIMS(2, 3), CT_DIMS(2, 3));
}
END_TEST

START_TEST(add_row_vector_broadcasts) {
  check_binary(OP_ADD, CT_FLOAT32, CT_DIMS(2, 3), CT_DIMS(3), CT_DIMS(2, 3));
}
END_TEST

START_TEST(add_column_and_row_broadcast_to_matrix) {
  check_binary(OP_ADD, CT_FLOAT32, CT_DIMS(2, 1), CT_DIMS(1, 3), CT_DIMS(2, 3));
}
END_TEST

START_TEST(add_rank3_with_rank2_broadcasts_both_ways) {
  check_binary(OP_ADD, CT_FLOAT32, CT_DIMS(4, 1, 5), CT_DIMS(3, 1), CT_DIMS(4, 3, 5));
}
END_TEST

START_TEST(add_scalar_to_matrix) {
  check_binary(OP_ADD, CT_FLOAT32, CT_DIMS(), CT_DIMS(2, 3), CT_DIMS(2, 3));
}
END_TEST

START_TEST(add_matrix_to_scalar) {
  check_binary(OP_ADD, CT_FLOAT32, CT_DIMS(2, 3), CT_DIMS(), CT_DIMS(2, 3));
}
END_TEST

START_TEST(add_scalars_gives_scalar) {
  check_binary(OP_ADD, CT_FLOAT64, CT_DIMS(), CT_DIMS(), CT_DIMS());
}
END_TEST

START_TEST(add_empty_with_row_gives_empty) {
  check_binary(OP_ADD, CT_FLOAT32, CT_DIMS(0, 3), CT_DIMS(3), CT_DIMS(0, 3));
}
END_TEST

START_TEST(add_broadcasts_size1_against_0) {
  check_binary(OP_ADD, CT_FLOAT32, CT_DIMS(2, 1), CT_DIMS(0), CT_DIMS(2, 0));
}
END_TEST

START_TEST(add_leading_ones_broadcast) {
  check_binary(OP_ADD, CT_FLOAT64, CT_DIMS(1, 1, 3), CT_DIMS(2, 1, 2, 1), CT_DIMS(2, 1, 2, 3));
}
END_TEST

START_TEST(add_noncontiguous_broadcast_rank4) {
  check_binary(OP_ADD, CT_FLOAT32, CT_DIMS(2, 1, 3, 1), CT_DIMS(1, 4, 1, 5), CT_DIMS(2, 4, 3, 5));
}
END_TEST

START_TEST(sub_broadcasts_float64) {
  check_binary(OP_SUB, CT_FLOAT64, CT_DIMS(4, 1, 5), CT_DIMS(3, 1), CT_DIMS(4, 3, 5));
}
END_TEST

START_TEST(sub_is_x_minus_y_when_x_broadcasts) {
  check_binary(OP_SUB, CT_FLOAT32, CT_DIMS(3), CT_DIMS(2, 3), CT_DIMS(2, 3));
}
END_TEST

START_TEST(mul_broadcasts) {
  check_binary(OP_MUL, CT_FLOAT32, CT_DIMS(2, 1), CT_DIMS(1, 3), CT_DIMS(2, 3));
}
END_TEST

START_TEST(div_broadcasts) {
  check_binary(OP_DIV, CT_FLOAT64, CT_DIMS(2, 3), CT_DIMS(3), CT_DIMS(2, 3));
}
END_TEST

START_TEST(div_float_by_zero_is_ieee) {
  ct_scope *s = ct_scope_new();
  float x[3] = {1, -1, 0}, y[3] = {0, 0, 0};
  put(s, "x", CT_FLOAT32, CT_DIMS(3), x);
  put(s, "y", CT_FLOAT32, CT_DIMS(3), y);
  ct_op *op = op_xy("elementwise_div", "x", "y", "out");
  run(op, s);
  const float *o = result(s, "out", CT_FLOAT32, CT_DIMS(3));
  ck_assert(isinf(o[0]) && o[0] > 0);
  ck_assert(isinf(o[1]) && o[1] < 0);
  ck_assert(isnan(o[2]));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(binary_dims_that_do_not_broadcast_are_shape_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 3), data_x);
  put_fn(s, "y", CT_FLOAT32, CT_DIMS(2), data_y);
  ct_op *op = op_xy("elementwise_mul", "x", "y", "out");
  run_fails(op, s, CT_ERR_SHAPE, "elementwise_mul", "'x'", "[2,3]", "'y'", "[2]", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(binary_dtypes_that_differ_are_type_mismatch) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(3), data_x);
  put_fn(s, "y", CT_FLOAT64, CT_DIMS(3), data_y);
  ct_op *op = op_xy("elementwise_add", "x", "y", "out");
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "elementwise_add", "'y'", "float64", "float32", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(binary_on_int8_is_unsupported) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_INT8, CT_DIMS(3), data_x);
  put_fn(s, "y", CT_INT8, CT_DIMS(3), data_y);
  ct_op *op = op_xy("elementwise_add", "x", "y", "out");
  run_fails(op, s, CT_ERR_UNSUPPORTED, "elementwise_add", "int8", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(add_in_place_writes_x) {
  ct_scope *s = ct_scope_new();
  float x[3] = {1, 2, 3}, y[3] = {10, 20, 30};
  put(s, "x", CT_FLOAT32, CT_DIMS(3), x);
  put(s, "y", CT_FLOAT32, CT_DIMS(3), y);
  ct_op *op = op_xy("elementwise_add", "x", "y", "x");
  run(op, s);
  const float *o = result(s, "x", CT_FLOAT32, CT_DIMS(3));
  ck_assert(o[0] == 11 && o[1] == 22 && o[2] == 33);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(add_in_place_may_grow_x_by_broadcasting) {
  ct_scope *s = ct_scope_new();
  float x[3] = {1, 2, 3}, y[2] = {10, 20};
  put(s, "x", CT_FLOAT32, CT_DIMS(3), x);
  put(s, "y", CT_FLOAT32, CT_DIMS(2, 1), y);
  ct_op *op = op_xy("elementwise_add", "x", "y", "x");
  run(op, s);
  const float *o = result(s, "x", CT_FLOAT32, CT_DIMS(2, 3));
  const float want[6] = {11, 12, 13, 21, 22, 23};
  for (int i = 0; i < 6; i++) ck_assert(o[i] == want[i]);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* Integer arithmetic wraps (two's complement), as the header of elementwise.c says. */
START_TEST(int32_add_sub_mul_wrap) {
  ct_scope *s = ct_scope_new();
  int32_t x[3] = {INT32_MAX, INT32_MIN, 65536}, y[3] = {1, 1, 65536};
  put(s, "x", CT_INT32, CT_DIMS(3), x);
  put(s, "y", CT_INT32, CT_DIMS(3), y);
  ct_op *add = op_xy("elementwise_add", "x", "y", "add");
  ct_op *sub = op_xy("elementwise_sub", "x", "y", "sub");
  ct_op *mul = op_xy("elementwise_mul", "x", "y", "mul");
  run(add, s);
  run(sub, s);
  run(mul, s);
  const int32_t *a = result(s, "add", CT_INT32, CT_DIMS(3));
  const int32_t *b = result(s, "sub", CT_INT32, CT_DIMS(3));
  const int32_t *m = result(s, "mul", CT_INT32, CT_DIMS(3));
  ck_assert_int_eq(a[0], INT32_MIN);
  ck_assert_int_eq(a[2], 131072);
  ck_assert_int_eq(b[1], INT32_MAX);
  ck_assert_int_eq(m[2], 0); /* 2^32 wraps to 0 */
  ck_assert_int_eq(m[0], INT32_MAX);
  ct_op_free(add);
  ct_op_free(sub);
  ct_op_free(mul);
  ct_scope_free(s);
}
END_TEST

START_TEST(int64_add_wraps_and_broadcasts) {
  ct_scope *s = ct_scope_new();
  int64_t x[2] = {INT64_MAX, -5}, y[1] = {1};
  put(s, "x", CT_INT64, CT_DIMS(2), x);
  put(s, "y", CT_INT64, CT_DIMS(), y);
  ct_op *op = op_xy("elementwise_add", "x", "y", "out");
  run(op, s);
  const int64_t *o = result(s, "out", CT_INT64, CT_DIMS(2));
  ck_assert(o[0] == INT64_MIN);
  ck_assert(o[1] == -4);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(int_div_truncates_toward_zero) {
  ct_scope *s = ct_scope_new();
  int32_t x[5] = {7, -7, 7, -7, INT32_MIN}, y[5] = {2, 2, -2, -2, -1};
  put(s, "x", CT_INT32, CT_DIMS(5), x);
  put(s, "y", CT_INT32, CT_DIMS(5), y);
  ct_op *op = op_xy("elementwise_div", "x", "y", "out");
  run(op, s);
  const int32_t *o = result(s, "out", CT_INT32, CT_DIMS(5));
  ck_assert_int_eq(o[0], 3);
  ck_assert_int_eq(o[1], -3);
  ck_assert_int_eq(o[2], -3);
  ck_assert_int_eq(o[3], 3);
  ck_assert_int_eq(o[4], INT32_MIN); /* MIN / -1 wraps */
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(int64_div_min_by_minus_one_wraps) {
  ct_scope *s = ct_scope_new();
  int64_t x[2] = {INT64_MIN, 9}, y[2] = {-1, 4};
  put(s, "x", CT_INT64, CT_DIMS(2), x);
  put(s, "y", CT_INT64, CT_DIMS(2), y);
  ct_op *op = op_xy("elementwise_div", "x", "y", "out");
  run(op, s);
  const int64_t *o = result(s, "out", CT_INT64, CT_DIMS(2));
  ck_assert(o[0] == INT64_MIN);
  ck_assert(o[1] == 2);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(int32_div_by_zero_is_an_error_and_writes_nothing) {
  ct_scope *s = ct_scope_new();
  int32_t x[3] = {1, 2, 3}, y[3] = {1, 0, 1};
  put(s, "x", CT_INT32, CT_DIMS(3), x);
  put(s, "y", CT_INT32, CT_DIMS(3), y);
  ct_op *op = op_xy("elementwise_div", "x", "y", "out");
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "elementwise_div", "'y'", "element 1", "zero", NULL);
  ck_assert(!ct_tensor_has_memory(tensor_of(s, "out")));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(int64_div_by_broadcast_zero_is_an_error) {
  ct_scope *s = ct_scope_new();
  int64_t x[3] = {1, 2, 3}, y[1] = {0};
  put(s, "x", CT_INT64, CT_DIMS(3), x);
  put(s, "y", CT_INT64, CT_DIMS(), y);
  ct_op *op = op_xy("elementwise_div", "x", "y", "out");
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "'y'", "element 0", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- Unary ops ----------------------------------------------------------------------------- */

static double data_unary(int64_t i) { return (double)(i % 9) * 0.5 - 2.0; } /* -2 .. 2 */
static double data_positive(int64_t i) { return (double)(i % 9) * 0.5 + 0.25; }

/* Runs a unary op on dims of dtype dt and checks Out against ref element by element, within
 * tol relative (0: exactly). */
static void check_unary(const char *type, ct_dtype dt, ct_ddim dims, double (*data)(int64_t),
                        double (*ref)(double, ct_dtype), double tol) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", dt, dims, data);
  ct_op *op = op_x(type, "x", "out");
  run(op, s);
  const void *out = result(s, "out", dt, dims);
  for (int64_t i = 0, n = ct_ddim_numel(dims); i < n; i++) {
    double got = get_elem(out, dt, i), want = ref(data(i), dt);
    ck_assert_msg(fabs(got - want) <= tol * fabs(want), "%s element %lld: %.17g, expected %.17g",
                  type, (long long)i, got, want);
  }
  ct_op_free(op);
  ct_scope_free(s);
}

static double ref_relu(double a, ct_dtype dt) { (void)dt; return a > 0 ? a : 0; }
static double ref_sigmoid(double a, ct_dtype dt) {
  return dt == CT_FLOAT32 ? (double)(1.0f / (1.0f + expf((float)-a))) : 1.0 / (1.0 + exp(-a));
}
static double ref_tanh(double a, ct_dtype dt) {
  return dt == CT_FLOAT32 ? (double)tanhf((float)a) : tanh(a);
}
static double ref_exp(double a, ct_dtype dt) {
  return dt == CT_FLOAT32 ? (double)expf((float)a) : exp(a);
}
static double ref_log(double a, ct_dtype dt) {
  return dt == CT_FLOAT32 ? (double)logf((float)a) : log(a);
}

#define TOL32 (4 * 1.1920929e-7)
#define TOL64 (4 * 2.220446e-16)

START_TEST(relu_float32) {
  check_unary("relu", CT_FLOAT32, CT_DIMS(3, 5), data_unary, ref_relu, 0);
}
END_TEST
START_TEST(relu_float64_rank0) {
  check_unary("relu", CT_FLOAT64, CT_DIMS(), data_unary, ref_relu, 0);
}
END_TEST
START_TEST(relu_int32) { check_unary("relu", CT_INT32, CT_DIMS(11), data_x, ref_relu, 0); }
END_TEST
START_TEST(relu_int64) { check_unary("relu", CT_INT64, CT_DIMS(2, 7), data_x, ref_relu, 0); }
END_TEST
START_TEST(relu_empty) { check_unary("relu", CT_FLOAT32, CT_DIMS(3, 0), data_unary, ref_relu, 0); }
END_TEST
START_TEST(sigmoid_float32) {
  check_unary("sigmoid", CT_FLOAT32, CT_DIMS(2, 9), data_unary, ref_sigmoid, TOL32);
}
END_TEST
START_TEST(sigmoid_float64) {
  check_unary("sigmoid", CT_FLOAT64, CT_DIMS(9), data_unary, ref_sigmoid, TOL64);
}
END_TEST
START_TEST(tanh_float32) {
  check_unary("tanh", CT_FLOAT32, CT_DIMS(9), data_unary, ref_tanh, TOL32);
}
END_TEST
START_TEST(tanh_float64) {
  check_unary("tanh", CT_FLOAT64, CT_DIMS(9), data_unary, ref_tanh, TOL64);
}
END_TEST
START_TEST(exp_float32) { check_unary("exp", CT_FLOAT32, CT_DIMS(9), data_unary, ref_exp, TOL32); }
END_TEST
START_TEST(exp_float64) {
  check_unary("exp", CT_FLOAT64, CT_DIMS(3, 3), data_unary, ref_exp, TOL64);
}
END_TEST
START_TEST(log_float32) {
  check_unary("log", CT_FLOAT32, CT_DIMS(9), data_positive, ref_log, TOL32);
}
END_TEST
START_TEST(log_float64) {
  check_unary("log", CT_FLOAT64, CT_DIMS(9), data_positive, ref_log, TOL64);
}
END_TEST
START_TEST(exp_rank0) { check_unary("exp", CT_FLOAT32, CT_DIMS(), data_unary, ref_exp, TOL32); }
END_TEST
START_TEST(sigmoid_empty) {
  check_unary("sigmoid", CT_FLOAT64, CT_DIMS(0), data_unary, ref_sigmoid, 0);
}
END_TEST

START_TEST(sigmoid_saturates_without_nan) {
  ct_scope *s = ct_scope_new();
  float x[4] = {-200, 200, -INFINITY, INFINITY};
  put(s, "x", CT_FLOAT32, CT_DIMS(4), x);
  ct_op *op = op_x("sigmoid", "x", "out");
  run(op, s);
  const float *o = result(s, "out", CT_FLOAT32, CT_DIMS(4));
  ck_assert(o[0] == 0.0f && o[1] == 1.0f && o[2] == 0.0f && o[3] == 1.0f);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(log_of_zero_and_negative) {
  ct_scope *s = ct_scope_new();
  double x[2] = {0, -1};
  put(s, "x", CT_FLOAT64, CT_DIMS(2), x);
  ct_op *op = op_x("log", "x", "out");
  run(op, s);
  const double *o = result(s, "out", CT_FLOAT64, CT_DIMS(2));
  ck_assert(isinf(o[0]) && o[0] < 0);
  ck_assert(isnan(o[1]));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(float_only_unary_on_int32_is_unsupported) {
  static const char *const types[] = {"sigmoid", "tanh", "exp", "log"};
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_INT32, CT_DIMS(3), data_x);
  for (size_t i = 0; i < 4; i++) {
    ct_op *op = op_x(types[i], "x", "out");
    run_fails(op, s, CT_ERR_UNSUPPORTED, types[i], "int32", NULL);
    ct_op_free(op);
  }
  ct_scope_free(s);
}
END_TEST

START_TEST(unary_in_place) {
  ct_scope *s = ct_scope_new();
  float x[3] = {-1, 0, 2};
  put(s, "x", CT_FLOAT32, CT_DIMS(3), x);
  ct_op *op = op_x("relu", "x", "x");
  run(op, s);
  const float *o = result(s, "x", CT_FLOAT32, CT_DIMS(3));
  ck_assert(o[0] == 0 && o[1] == 0 && o[2] == 2);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- scale ---------------------------------------------------------------------------------- */

/* scale on float32 [4] with the attributes given (NAN: left at its default). */
static const float *run_scale(ct_scope *s, ct_op **op, double scale, double bias, int after) {
  float x[4] = {0, 1, -2, 3.5f};
  put(s, "x", CT_FLOAT32, CT_DIMS(4), x);
  *op = op_x("scale", "x", "out");
  if (!isnan(scale)) ck_assert_int_eq(ct_op_set_attr_float(*op, "scale", scale), CT_OK);
  if (!isnan(bias)) ck_assert_int_eq(ct_op_set_attr_float(*op, "bias", bias), CT_OK);
  if (after >= 0) ck_assert_int_eq(ct_op_set_attr_bool(*op, "bias_after_scale", after), CT_OK);
  run(*op, s);
  return result(s, "out", CT_FLOAT32, CT_DIMS(4));
}

START_TEST(scale_defaults_copy) {
  ct_scope *s = ct_scope_new();
  ct_op *op;
  const float *o = run_scale(s, &op, NAN, NAN, -1);
  ck_assert(o[0] == 0 && o[1] == 1 && o[2] == -2 && o[3] == 3.5f);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(scale_adds_bias_after_scale_by_default) {
  ct_scope *s = ct_scope_new();
  ct_op *op;
  const float *o = run_scale(s, &op, 2, 1, -1);
  ck_assert(o[0] == 1 && o[1] == 3 && o[2] == -3 && o[3] == 8);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(scale_adds_bias_before_scale) {
  ct_scope *s = ct_scope_new();
  ct_op *op;
  const float *o = run_scale(s, &op, 2, 1, 0);
  ck_assert(o[0] == 2 && o[1] == 4 && o[2] == -2 && o[3] == 9);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(scale_float64_bias_before) {
  ct_scope *s = ct_scope_new();
  double x[2] = {1, 2};
  put(s, "x", CT_FLOAT64, CT_DIMS(2), x);
  ct_op *op = op_x("scale", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_float(op, "scale", -0.5), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "bias", 3), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "bias_after_scale", false), CT_OK);
  run(op, s);
  const double *o = result(s, "out", CT_FLOAT64, CT_DIMS(2));
  ck_assert(o[0] == -2 && o[1] == -2.5);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(scale_int32_truncates_and_saturates) {
  ct_scope *s = ct_scope_new();
  int32_t x[4] = {3, -3, INT32_MAX, INT32_MIN};
  put(s, "x", CT_INT32, CT_DIMS(4), x);
  ct_op *op = op_x("scale", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_float(op, "scale", 2.5), CT_OK);
  run(op, s);
  const int32_t *o = result(s, "out", CT_INT32, CT_DIMS(4));
  ck_assert_int_eq(o[0], 7);
  ck_assert_int_eq(o[1], -7);
  ck_assert_int_eq(o[2], INT32_MAX);
  ck_assert_int_eq(o[3], INT32_MIN);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(scale_int64_nan_gives_zero) {
  ct_scope *s = ct_scope_new();
  int64_t x[2] = {5, INT64_MAX};
  put(s, "x", CT_INT64, CT_DIMS(2), x);
  ct_op *op = op_x("scale", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_float(op, "scale", NAN), CT_OK);
  run(op, s);
  const int64_t *o = result(s, "out", CT_INT64, CT_DIMS(2));
  ck_assert(o[0] == 0 && o[1] == 0);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(scale_int64_saturates_at_max) {
  ct_scope *s = ct_scope_new();
  int64_t x[2] = {INT64_MAX, -4};
  put(s, "x", CT_INT64, CT_DIMS(2), x);
  ct_op *op = op_x("scale", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_float(op, "bias", 1), CT_OK);
  run(op, s);
  const int64_t *o = result(s, "out", CT_INT64, CT_DIMS(2));
  ck_assert(o[0] == INT64_MAX);
  ck_assert(o[1] == -3);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(scale_rank0_and_empty) {
  ct_scope *s = ct_scope_new();
  double x[1] = {4};
  put(s, "x", CT_FLOAT64, CT_DIMS(), x);
  put(s, "e", CT_INT32, CT_DIMS(3, 0), NULL);
  ct_op *a = op_x("scale", "x", "xo"), *b = op_x("scale", "e", "eo");
  ck_assert_int_eq(ct_op_set_attr_float(a, "scale", 0.5), CT_OK);
  run(a, s);
  run(b, s);
  ck_assert(*(const double *)result(s, "xo", CT_FLOAT64, CT_DIMS()) == 2);
  ck_assert_ptr_nonnull(result(s, "eo", CT_INT32, CT_DIMS(3, 0)));
  ct_op_free(a);
  ct_op_free(b);
  ct_scope_free(s);
}
END_TEST

/* ---- cast and assign ------------------------------------------------------------------------ */

static const ct_dtype all_dtypes[] = {CT_BOOL,  CT_INT8,    CT_UINT8,     CT_INT16,  CT_INT32,
                                      CT_INT64, CT_FLOAT16, CT_BFLOAT16, CT_FLOAT32, CT_FLOAT64};

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
  for (int a = 0; a < 10; a++) {
    for (int b = 0; b < 10; b++) {
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

/* ---- matmul ---------------------------------------------------------------------------------- */

/* The matmul of X (dims xd) and Y (dims yd) by numpy's rules, computed here with a naive loop:
 * rank-1 operands are a row and a column, batch dims broadcast. */
static void naive_matmul(const double *x, ct_ddim xd, bool tx, const double *y, ct_ddim yd,
                         bool ty, ct_ddim out, double *o) {
  bool xv = xd.rank == 1, yv = yd.rank == 1;
  if (xv) tx = false;
  if (yv) ty = false;
  int64_t xr = xv ? 1 : xd.d[xd.rank - 2], xc = xd.d[xd.rank - 1];
  int64_t yr = yv ? yd.d[0] : yd.d[yd.rank - 2], yc = yv ? 1 : yd.d[yd.rank - 1];
  int64_t m = tx ? xc : xr, k = tx ? xr : xc, n = ty ? yr : yc;
  ct_ddim xb = {.rank = xv ? 0 : xd.rank - 2}, yb = {.rank = yv ? 0 : yd.rank - 2};
  ct_ddim ob = {.rank = out.rank - (xv ? 0 : 1) - (yv ? 0 : 1)};
  for (int i = 0; i < xb.rank; i++) xb.d[i] = xd.d[i];
  for (int i = 0; i < yb.rank; i++) yb.d[i] = yd.d[i];
  for (int i = 0; i < ob.rank; i++) ob.d[i] = out.d[i];
  for (int64_t b = 0, nb = ct_ddim_numel(ob); b < nb; b++) {
    const double *xm = x + bcast_src(ob, xb, b) * xr * xc;
    const double *ym = y + bcast_src(ob, yb, b) * yr * yc;
    for (int64_t i = 0; i < m; i++) {
      for (int64_t j = 0; j < n; j++) {
        double acc = 0;
        for (int64_t p = 0; p < k; p++) {
          double a = tx ? xm[p * xc + i] : xm[i * xc + p];
          double c = ty ? ym[j * yc + p] : ym[p * yc + j];
          acc += a * c;
        }
        o[(b * m + i) * n + j] = acc;
      }
    }
  }
}

/* Runs matmul on X and Y of dtype dt holding small integers (every product and sum exact, so
 * BLAS must match the naive loop exactly) and checks Out's dims and values. */
static void check_matmul(ct_dtype dt, ct_ddim xd, bool tx, ct_ddim yd, bool ty, ct_ddim want) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", dt, xd, data_x);
  put_fn(s, "y", dt, yd, data_y);
  ct_op *op = op_xy("matmul", "x", "y", "out");
  if (tx) ck_assert_int_eq(ct_op_set_attr_bool(op, "transpose_x", true), CT_OK);
  if (ty) ck_assert_int_eq(ct_op_set_attr_bool(op, "transpose_y", true), CT_OK);
  run(op, s);
  const void *out = result(s, "out", dt, want);
  int64_t nx = ct_ddim_numel(xd), ny = ct_ddim_numel(yd), no = ct_ddim_numel(want);
  double *x = xmalloc(nx, 8), *y = xmalloc(ny, 8), *ref = xmalloc(no, 8);
  for (int64_t i = 0; i < nx; i++) x[i] = data_x(i);
  for (int64_t i = 0; i < ny; i++) y[i] = data_y(i);
  naive_matmul(x, xd, tx, y, yd, ty, want, ref);
  for (int64_t i = 0; i < no; i++) {
    ck_assert_msg(get_elem(out, dt, i) == ref[i], "element %lld: %g, expected %g", (long long)i,
                  get_elem(out, dt, i), ref[i]);
  }
  free(x);
  free(y);
  free(ref);
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(matmul_plain) {
  check_matmul(CT_FLOAT32, CT_DIMS(2, 3), false, CT_DIMS(3, 4), false, CT_DIMS(2, 4));
}
END_TEST
START_TEST(matmul_float64) {
  check_matmul(CT_FLOAT64, CT_DIMS(5, 7), false, CT_DIMS(7, 3), false, CT_DIMS(5, 3));
}
END_TEST
START_TEST(matmul_transpose_x) {
  check_matmul(CT_FLOAT32, CT_DIMS(3, 2), true, CT_DIMS(3, 4), false, CT_DIMS(2, 4));
}
END_TEST
START_TEST(matmul_transpose_y) {
  check_matmul(CT_FLOAT32, CT_DIMS(2, 3), false, CT_DIMS(4, 3), true, CT_DIMS(2, 4));
}
END_TEST
START_TEST(matmul_transpose_both) {
  check_matmul(CT_FLOAT64, CT_DIMS(3, 2), true, CT_DIMS(4, 3), true, CT_DIMS(2, 4));
}
END_TEST
START_TEST(matmul_batched_x_shared_y) {
  check_matmul(CT_FLOAT32, CT_DIMS(2, 3, 4), false, CT_DIMS(4, 5), false, CT_DIMS(2, 3, 5));
}
END_TEST
START_TEST(matmul_batched_x_shared_y_transposed) {
  check_matmul(CT_FLOAT32, CT_DIMS(2, 4, 3), true, CT_DIMS(5, 4), true, CT_DIMS(2, 3, 5));
}
END_TEST
START_TEST(matmul_batched_both) {
  check_matmul(CT_FLOAT32, CT_DIMS(3, 2, 4), false, CT_DIMS(3, 4, 2), false, CT_DIMS(3, 2, 2));
}
END_TEST
START_TEST(matmul_shared_x_batched_y) {
  check_matmul(CT_FLOAT64, CT_DIMS(2, 4), false, CT_DIMS(3, 4, 5), false, CT_DIMS(3, 2, 5));
}
END_TEST
START_TEST(matmul_batch_dims_broadcast) {
  check_matmul(CT_FLOAT32, CT_DIMS(2, 1, 2, 3), false, CT_DIMS(4, 3, 5), false,
               CT_DIMS(2, 4, 2, 5));
}
END_TEST
START_TEST(matmul_batch_dims_broadcast_with_ones_in_x) {
  check_matmul(CT_FLOAT32, CT_DIMS(1, 3, 2, 3), true, CT_DIMS(2, 1, 2, 4), false,
               CT_DIMS(2, 3, 3, 4));
}
END_TEST
START_TEST(matmul_vector_times_matrix) {
  check_matmul(CT_FLOAT32, CT_DIMS(3), false, CT_DIMS(3, 4), false, CT_DIMS(4));
}
END_TEST
START_TEST(matmul_matrix_times_vector) {
  check_matmul(CT_FLOAT32, CT_DIMS(2, 3), false, CT_DIMS(3), false, CT_DIMS(2));
}
END_TEST
START_TEST(matmul_transposed_matrix_times_vector) {
  check_matmul(CT_FLOAT64, CT_DIMS(3, 2), true, CT_DIMS(3), false, CT_DIMS(2));
}
END_TEST
START_TEST(matmul_vector_dot_vector_is_scalar) {
  check_matmul(CT_FLOAT32, CT_DIMS(5), false, CT_DIMS(5), false, CT_DIMS());
}
END_TEST
START_TEST(matmul_vector_ignores_transpose) {
  check_matmul(CT_FLOAT32, CT_DIMS(3), true, CT_DIMS(3), true, CT_DIMS());
}
END_TEST
START_TEST(matmul_batched_matrix_times_vector) {
  check_matmul(CT_FLOAT32, CT_DIMS(2, 2, 3), false, CT_DIMS(3), false, CT_DIMS(2, 2));
}
END_TEST
START_TEST(matmul_vector_times_batched_matrix) {
  check_matmul(CT_FLOAT32, CT_DIMS(3), false, CT_DIMS(2, 3, 4), false, CT_DIMS(2, 4));
}
END_TEST
START_TEST(matmul_k0_gives_zeros) {
  check_matmul(CT_FLOAT32, CT_DIMS(2, 0), false, CT_DIMS(0, 3), false, CT_DIMS(2, 3));
}
END_TEST
START_TEST(matmul_batched_k0_gives_zeros) {
  check_matmul(CT_FLOAT64, CT_DIMS(2, 2, 0), false, CT_DIMS(0, 3), false, CT_DIMS(2, 2, 3));
}
END_TEST
START_TEST(matmul_m0_gives_empty) {
  check_matmul(CT_FLOAT32, CT_DIMS(0, 3), false, CT_DIMS(3, 4), false, CT_DIMS(0, 4));
}
END_TEST
START_TEST(matmul_empty_batch_gives_empty) {
  check_matmul(CT_FLOAT32, CT_DIMS(0, 2, 3), false, CT_DIMS(3, 4), false, CT_DIMS(0, 2, 4));
}
END_TEST
START_TEST(matmul_larger_than_blas_blocks) {
  check_matmul(CT_FLOAT32, CT_DIMS(67, 129), false, CT_DIMS(129, 33), false,
               CT_DIMS(67, 33));
}
END_TEST

START_TEST(matmul_inner_dims_that_differ_are_shape_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 3), data_x);
  put_fn(s, "y", CT_FLOAT32, CT_DIMS(4, 5), data_y);
  ct_op *op = op_xy("matmul", "x", "y", "out");
  run_fails(op, s, CT_ERR_SHAPE, "matmul", "'x'", "[2,3]", "'y'", "[4,5]", NULL);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "transpose_y", true), CT_OK);
  run_fails(op, s, CT_ERR_SHAPE, "(transposed)", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(matmul_batch_dims_that_do_not_broadcast_are_shape_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 2, 3), data_x);
  put_fn(s, "y", CT_FLOAT32, CT_DIMS(3, 3, 4), data_y);
  ct_op *op = op_xy("matmul", "x", "y", "out");
  run_fails(op, s, CT_ERR_SHAPE, "batch", "'x'", "'y'", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(matmul_of_a_scalar_is_shape_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(), data_x);
  put_fn(s, "y", CT_FLOAT32, CT_DIMS(3), data_y);
  ct_op *op = op_xy("matmul", "x", "y", "out");
  run_fails(op, s, CT_ERR_SHAPE, "'x'", "rank", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(matmul_dtypes_that_differ_are_type_mismatch) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 3), data_x);
  put_fn(s, "y", CT_FLOAT64, CT_DIMS(3, 2), data_y);
  ct_op *op = op_xy("matmul", "x", "y", "out");
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "matmul", "'y'", "float64", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(matmul_on_int32_is_unsupported) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_INT32, CT_DIMS(2, 3), data_x);
  put_fn(s, "y", CT_INT32, CT_DIMS(3, 2), data_y);
  ct_op *op = op_xy("matmul", "x", "y", "out");
  run_fails(op, s, CT_ERR_UNSUPPORTED, "matmul", "int32", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(matmul_x_with_itself) {
  ct_scope *s = ct_scope_new();
  float x[4] = {1, 2, 3, 4};
  put(s, "x", CT_FLOAT32, CT_DIMS(2, 2), x);
  ct_op *op = op_xy("matmul", "x", "x", "x");
  run(op, s);
  const float *o = result(s, "x", CT_FLOAT32, CT_DIMS(2, 2));
  ck_assert(o[0] == 7 && o[1] == 10 && o[2] == 15 && o[3] == 22);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- fill_constant ------------------------------------------------------------------------- */

static ct_op *fill_op(const int64_t *shape, size_t rank, double value, ct_dtype dt) {
  ct_op *op = op_out("fill_constant", "out");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", shape, rank), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "value", value), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", dt), CT_OK);
  return op;
}

START_TEST(fill_constant_every_dtype) {
  const int64_t shape[2] = {2, 3};
  for (int a = 0; a < 10; a++) {
    ct_dtype dt = all_dtypes[a];
    double v = dt == CT_BOOL ? 1 : -3;
    if (dt == CT_UINT8) v = 200;
    ct_scope *s = ct_scope_new();
    ct_op *op = fill_op(shape, 2, v, dt);
    run(op, s);
    const void *o = result(s, "out", dt, CT_DIMS(2, 3));
    for (int64_t i = 0; i < 6; i++) {
      ck_assert_msg(get_elem(o, dt, i) == v, "%s element %lld: %g, expected %g",
                    ct_dtype_name(dt), (long long)i, get_elem(o, dt, i), v);
    }
    ct_op_free(op);
    ct_scope_free(s);
  }
}
END_TEST

START_TEST(fill_constant_defaults_to_float32_zero) {
  ct_scope *s = ct_scope_new();
  const int64_t shape[1] = {4};
  ct_op *op = op_out("fill_constant", "out");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", shape, 1), CT_OK);
  run(op, s);
  const float *o = result(s, "out", CT_FLOAT32, CT_DIMS(4));
  for (int i = 0; i < 4; i++) ck_assert(o[i] == 0.0f && !signbit(o[i]));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(fill_constant_rank0_and_empty) {
  ct_scope *s = ct_scope_new();
  const int64_t empty[2] = {0, 3};
  ct_op *a = fill_op(NULL, 0, 2.5, CT_FLOAT64), *b = fill_op(empty, 2, 1, CT_INT32);
  ck_assert_int_eq(ct_op_set_output(b, "Out", "e"), CT_OK);
  run(a, s);
  run(b, s);
  ck_assert(*(const double *)result(s, "out", CT_FLOAT64, CT_DIMS()) == 2.5);
  ck_assert_ptr_nonnull(result(s, "e", CT_INT32, CT_DIMS(0, 3)));
  ct_op_free(a);
  ct_op_free(b);
  ct_scope_free(s);
}
END_TEST

START_TEST(fill_constant_int64_extremes) {
  ct_scope *s = ct_scope_new();
  const int64_t shape[1] = {1};
  ct_op *op = fill_op(shape, 1, -9223372036854775808.0, CT_INT64);
  run(op, s);
  ck_assert(*(const int64_t *)result(s, "out", CT_INT64, CT_DIMS(1)) == INT64_MIN);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(fill_constant_value_out_of_range_is_an_error) {
  const int64_t shape[1] = {2};
  const struct {
    ct_dtype dt;
    double v;
  } bad[] = {{CT_INT8, 128},        {CT_INT8, -129},  {CT_UINT8, -1},
             {CT_UINT8, 256},       {CT_BOOL, 2},     {CT_BOOL, -1},
             {CT_INT16, 32768},     {CT_INT32, 2147483648.0},
             {CT_INT32, 1.5},       {CT_INT64, 9223372036854775808.0},
             {CT_INT64, NAN},       {CT_INT32, INFINITY}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ct_scope *s = ct_scope_new();
    ct_op *op = fill_op(shape, 1, bad[i].v, bad[i].dt);
    run_fails(op, s, CT_ERR_OUT_OF_RANGE, "fill_constant", "value", ct_dtype_name(bad[i].dt),
              NULL);
    ck_assert(!ct_tensor_has_memory(tensor_of(s, "out")));
    ct_op_free(op);
    ct_scope_free(s);
  }
}
END_TEST

START_TEST(fill_constant_float16_rounds_value_once) {
  ct_scope *s = ct_scope_new();
  const int64_t shape[1] = {1};
  ct_op *h = fill_op(shape, 1, 1 + 0x1p-11 + 0x1p-40, CT_FLOAT16);
  ct_op *b = fill_op(shape, 1, 1 + 0x1p-8 + 0x1p-30, CT_BFLOAT16);
  ck_assert_int_eq(ct_op_set_output(b, "Out", "b"), CT_OK);
  run(h, s);
  run(b, s);
  ck_assert_uint_eq(*(const uint16_t *)result(s, "out", CT_FLOAT16, CT_DIMS(1)), 0x3C01);
  ck_assert_uint_eq(*(const uint16_t *)result(s, "b", CT_BFLOAT16, CT_DIMS(1)), 0x3F81);
  ct_op_free(h);
  ct_op_free(b);
  ct_scope_free(s);
}
END_TEST

START_TEST(fill_constant_without_shape_is_an_error) {
  ct_scope *s = ct_scope_new();
  ct_op *op = op_out("fill_constant", "out");
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "fill_constant", "shape", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(fill_constant_negative_dim_is_an_error) {
  ct_scope *s = ct_scope_new();
  const int64_t shape[2] = {2, -1};
  ct_op *op = fill_op(shape, 2, 1, CT_FLOAT32);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "fill_constant", "'out'", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(fill_constant_too_many_dims_is_an_error) {
  ct_scope *s = ct_scope_new();
  const int64_t shape[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  ct_op *op = fill_op(shape, 10, 1, CT_FLOAT32);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "fill_constant", "shape", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(fill_constant_invalid_dtype_is_an_error) {
  ct_scope *s = ct_scope_new();
  const int64_t shape[1] = {1};
  ct_op *op = fill_op(shape, 1, 1, (ct_dtype)42);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "fill_constant", "dtype", "42", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- uniform_random and gaussian_random ------------------------------------------------------ */

/* Philox4x32-10 (Salmon et al., SC 2011), written here from the paper for reference. */
static void philox_ref(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
  for (int r = 0; r < 10; r++) {
    if (r > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint32_t)p1;
    c3 = (uint32_t)p0;
    c0 = n0;
    c2 = n2;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/* The reference implementation reproduces the known-answer vectors of Random123. */
START_TEST(philox_reference_matches_known_answers) {
  const uint32_t ctr[3][4] = {{0, 0, 0, 0},
                              {~0u, ~0u, ~0u, ~0u},
                              {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}};
  const uint32_t key[3][2] = {{0, 0}, {~0u, ~0u}, {0xa4093822, 0x299f31d0}};
  const uint32_t want[3][4] = {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
                               {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
                               {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}};
  for (int t = 0; t < 3; t++) {
    uint32_t out[4];
    philox_ref(ctr[t], key[t], out);
    for (int i = 0; i < 4; i++) ck_assert_uint_eq(out[i], want[t][i]);
  }
}
END_TEST

static ct_op *random_op(const char *type, int64_t n, double a, double b, int64_t seed,
                        ct_dtype dt) {
  const bool uni = strcmp(type, "uniform_random") == 0;
  ct_op *op = op_out(type, "out");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", &n, 1), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, uni ? "min" : "mean", a), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, uni ? "max" : "std", b), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "seed", seed), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", dt), CT_OK);
  return op;
}

/* n values of a random op into *data (malloc'd copy, n x dtype size bytes). */
static void *random_values(const char *type, int64_t n, double a, double b, int64_t seed,
                           ct_dtype dt) {
  ct_scope *s = ct_scope_new();
  ct_op *op = random_op(type, n, a, b, seed, dt);
  run(op, s);
  size_t bytes = (size_t)n * ct_dtype_size(dt);
  void *copy = xmalloc((int64_t)bytes, 1);
  memcpy(copy, result(s, "out", dt, CT_DIMS(n)), bytes);
  ct_op_free(op);
  ct_scope_free(s);
  return copy;
}

/* Element i of a float32 tensor is word i % 4 of Philox block i / 4 (counter (i / 4, 0, 0, 0),
 * key the seed), its top 24 bits scaled to [0, 1) and then to [min, max). */
START_TEST(uniform_random_float32_follows_philox) {
  const int64_t seed = 0x123456789abcdefLL;
  float *v = random_values("uniform_random", 10, -1, 1, seed, CT_FLOAT32);
  for (int64_t i = 0; i < 10; i++) {
    uint32_t ctr[4] = {(uint32_t)(i / 4), 0, 0, 0};
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t w[4];
    philox_ref(ctr, key, w);
    float want = (float)(-1 + 2 * ((double)(w[i % 4] >> 8) / 16777216.0));
    ck_assert_msg(v[i] == want, "element %lld: %.9g, expected %.9g", (long long)i, (double)v[i],
                  (double)want);
  }
  free(v);
}
END_TEST

/* A float64 element takes two words: 27 bits of the first and 26 of the second. */
START_TEST(uniform_random_float64_follows_philox) {
  const int64_t seed = 7;
  double *v = random_values("uniform_random", 5, 2, 3, seed, CT_FLOAT64);
  for (int64_t i = 0; i < 5; i++) {
    uint32_t ctr[4] = {(uint32_t)(i / 2), 0, 0, 0}, key[2] = {7, 0}, w[4];
    philox_ref(ctr, key, w);
    uint64_t bits = ((uint64_t)(w[2 * (i % 2)] >> 5) << 26) | (w[2 * (i % 2) + 1] >> 6);
    double want = 2 + 1 * ((double)bits / 9007199254740992.0);
    ck_assert_msg(v[i] == want, "element %lld: %.17g, expected %.17g", (long long)i, v[i], want);
  }
  free(v);
}
END_TEST

START_TEST(uniform_random_same_seed_same_bits) {
  static const ct_dtype types[] = {CT_FLOAT16, CT_BFLOAT16, CT_FLOAT32, CT_FLOAT64};
  for (int t = 0; t < 4; t++) {
    void *a = random_values("uniform_random", 1001, -2, 5, 42, types[t]);
    void *b = random_values("uniform_random", 1001, -2, 5, 42, types[t]);
    ck_assert(memcmp(a, b, 1001 * ct_dtype_size(types[t])) == 0);
    free(a);
    free(b);
  }
}
END_TEST

/* The first elements of a longer tensor are those of a shorter one: values depend on the index
 * only. */
START_TEST(uniform_random_prefix_is_stable) {
  float *a = random_values("uniform_random", 7, -1, 1, 99, CT_FLOAT32);
  float *b = random_values("uniform_random", 1000, -1, 1, 99, CT_FLOAT32);
  ck_assert(memcmp(a, b, 7 * sizeof(float)) == 0);
  free(a);
  free(b);
}
END_TEST

START_TEST(uniform_random_different_seeds_differ) {
  float *a = random_values("uniform_random", 1000, -1, 1, 1, CT_FLOAT32);
  float *b = random_values("uniform_random", 1000, -1, 1, 2, CT_FLOAT32);
  int same = 0;
  for (int i = 0; i < 1000; i++) same += a[i] == b[i];
  ck_assert_int_lt(same, 10);
  free(a);
  free(b);
}
END_TEST

START_TEST(uniform_random_seed_0_differs_each_run) {
  ct_scope *s = ct_scope_new();
  ct_op *op = random_op("uniform_random", 64, -1, 1, 0, CT_FLOAT32);
  run(op, s);
  float first[64];
  memcpy(first, result(s, "out", CT_FLOAT32, CT_DIMS(64)), sizeof first);
  run(op, s);
  ck_assert(memcmp(first, result(s, "out", CT_FLOAT32, CT_DIMS(64)), sizeof first) != 0);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* Every value lies in [min, max), also where rounding to the dtype would reach max: near 1e6 a
 * float32 has 16 values per unit, a float16 rounds values above 1 - 2^-12 to 1. */
static void check_uniform_range(ct_dtype dt, double lo, double hi, bool fine) {
  const int64_t n = 100000;
  void *v = random_values("uniform_random", n, lo, hi, 1234, dt);
  double below_mid = 0;
  for (int64_t i = 0; i < n; i++) {
    double x = get_elem(v, dt, i);
    ck_assert_msg(x >= lo && x < hi, "%s element %lld: %.17g outside [%g, %g)", ct_dtype_name(dt),
                  (long long)i, x, lo, hi);
    below_mid += x < (lo + hi) / 2;
  }
  /* Half the values lie below the middle where the dtype resolves the range finely. */
  if (fine) {
    ck_assert_msg(fabs(below_mid / (double)n - 0.5) < 0.02, "%g below the middle", below_mid);
  }
  free(v);
}

START_TEST(uniform_random_float32_in_range) {
  check_uniform_range(CT_FLOAT32, -1, 1, true);
  check_uniform_range(CT_FLOAT32, 1e6, 1e6 + 1, false);
  check_uniform_range(CT_FLOAT32, 0.1, 0.3, true);
}
END_TEST

START_TEST(uniform_random_float64_in_range) {
  check_uniform_range(CT_FLOAT64, -1, 1, true);
  check_uniform_range(CT_FLOAT64, 1e15, 1e15 + 1, false);
}
END_TEST

START_TEST(uniform_random_float16_in_range) {
  check_uniform_range(CT_FLOAT16, 0, 1, true);
  check_uniform_range(CT_FLOAT16, -3, 5, true);
  check_uniform_range(CT_FLOAT16, 0.1, 0.2, true);
}
END_TEST

START_TEST(uniform_random_bfloat16_in_range) {
  check_uniform_range(CT_BFLOAT16, 0, 1, true);
  check_uniform_range(CT_BFLOAT16, 100, 101, false);
}
END_TEST

START_TEST(uniform_random_min_equal_max_gives_min) {
  float *v = random_values("uniform_random", 9, 2.5, 2.5, 3, CT_FLOAT32);
  for (int i = 0; i < 9; i++) ck_assert(v[i] == 2.5f);
  free(v);
}
END_TEST

START_TEST(uniform_random_mean_and_variance) {
  const int64_t n = 100000;
  float *v = random_values("uniform_random", n, -1, 3, 2024, CT_FLOAT32);
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < n; i++) sum += v[i];
  double mean = sum / (double)n;
  for (int64_t i = 0; i < n; i++) sq += (v[i] - mean) * (v[i] - mean);
  /* mean 1 (its standard error 0.0037), variance 16 / 12 */
  ck_assert_msg(fabs(mean - 1) < 0.02, "mean %g", mean);
  ck_assert_msg(fabs(sq / (double)n - 16.0 / 12) < 0.02, "variance %g", sq / (double)n);
  free(v);
}
END_TEST

START_TEST(random_bounds_must_be_finite) {
  ct_scope *s = ct_scope_new();
  ct_op *op = random_op("uniform_random", 4, -INFINITY, INFINITY, 5, CT_FLOAT32);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "uniform_random", "finite", NULL, NULL);
  ct_op_free(op);
  op = random_op("uniform_random", 4, -1.7e308, 1.7e308, 5, CT_FLOAT64); /* max - min overflows */
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "uniform_random", "finite", NULL, NULL);
  ct_op_free(op);
  op = random_op("gaussian_random", 4, NAN, 1, 5, CT_FLOAT32);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "gaussian_random", "mean", NULL, NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(uniform_random_min_above_max_is_an_error) {
  ct_scope *s = ct_scope_new();
  ct_op *op = random_op("uniform_random", 4, 1, -1, 5, CT_FLOAT32);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "uniform_random", "min", "max", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(uniform_random_on_int32_is_unsupported) {
  ct_scope *s = ct_scope_new();
  ct_op *op = random_op("uniform_random", 4, -1, 1, 5, CT_INT32);
  run_fails(op, s, CT_ERR_UNSUPPORTED, "uniform_random", "int32", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(uniform_random_rank0_and_empty) {
  ct_scope *s = ct_scope_new();
  ct_op *a = op_out("uniform_random", "a"), *b = op_out("uniform_random", "b");
  const int64_t empty[2] = {3, 0};
  ck_assert_int_eq(ct_op_set_attr_ints(a, "shape", NULL, 0), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(b, "shape", empty, 2), CT_OK);
  run(a, s);
  run(b, s);
  float x = *(const float *)result(s, "a", CT_FLOAT32, CT_DIMS());
  ck_assert(x >= -1 && x < 1);
  ck_assert_ptr_nonnull(result(s, "b", CT_FLOAT32, CT_DIMS(3, 0)));
  ct_op_free(a);
  ct_op_free(b);
  ct_scope_free(s);
}
END_TEST

static void check_gaussian(ct_dtype dt, double mean, double std) {
  const int64_t n = 100000;
  void *v = random_values("gaussian_random", n, mean, std, 77, dt);
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < n; i++) sum += get_elem(v, dt, i);
  double m = sum / (double)n;
  for (int64_t i = 0; i < n; i++) sq += (get_elem(v, dt, i) - m) * (get_elem(v, dt, i) - m);
  double sd = sqrt(sq / (double)n);
  /* standard errors: std / sqrt(n) = 0.0095 for the mean, about 0.0067 for the deviation */
  ck_assert_msg(fabs(m - mean) < 0.05, "%s mean %g, expected %g", ct_dtype_name(dt), m, mean);
  ck_assert_msg(fabs(sd - std) < 0.05, "%s std %g, expected %g", ct_dtype_name(dt), sd, std);
  free(v);
}

START_TEST(gaussian_random_float32_mean_and_std) { check_gaussian(CT_FLOAT32, 2, 3); }
END_TEST
START_TEST(gaussian_random_float64_mean_and_std) { check_gaussian(CT_FLOAT64, -1, 3); }
END_TEST
START_TEST(gaussian_random_float16_mean_and_std) { check_gaussian(CT_FLOAT16, 0.5, 3); }
END_TEST
START_TEST(gaussian_random_bfloat16_mean_and_std) { check_gaussian(CT_BFLOAT16, 1, 3); }
END_TEST

/* About 68.3% of the values lie within one std of the mean, 95.4% within two. */
START_TEST(gaussian_random_is_normal) {
  const int64_t n = 100000;
  double *v = random_values("gaussian_random", n, 0, 1, 31337, CT_FLOAT64);
  int64_t one = 0, two = 0;
  for (int64_t i = 0; i < n; i++) {
    ck_assert(isfinite(v[i]));
    one += fabs(v[i]) < 1;
    two += fabs(v[i]) < 2;
  }
  ck_assert_msg(fabs((double)one / (double)n - 0.6827) < 0.01, "%lld within 1", (long long)one);
  ck_assert_msg(fabs((double)two / (double)n - 0.9545) < 0.01, "%lld within 2", (long long)two);
  free(v);
}
END_TEST

START_TEST(gaussian_random_same_seed_same_bits) {
  float *a = random_values("gaussian_random", 999, 0, 1, 8, CT_FLOAT32);
  float *b = random_values("gaussian_random", 999, 0, 1, 8, CT_FLOAT32);
  float *c = random_values("gaussian_random", 999, 0, 1, 9, CT_FLOAT32);
  ck_assert(memcmp(a, b, 999 * sizeof(float)) == 0);
  ck_assert(memcmp(a, c, 999 * sizeof(float)) != 0);
  free(a);
  free(b);
  free(c);
}
END_TEST

START_TEST(gaussian_random_std_0_gives_mean) {
  double *v = random_values("gaussian_random", 5, 1.5, 0, 4, CT_FLOAT64);
  for (int i = 0; i < 5; i++) ck_assert(v[i] == 1.5);
  free(v);
}
END_TEST

START_TEST(gaussian_random_negative_std_is_an_error) {
  ct_scope *s = ct_scope_new();
  ct_op *op = random_op("gaussian_random", 4, 0, -1, 5, CT_FLOAT32);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "gaussian_random", "std", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(gaussian_random_rank0_and_empty) {
  ct_scope *s = ct_scope_new();
  ct_op *a = op_out("gaussian_random", "a"), *b = op_out("gaussian_random", "b");
  const int64_t empty[1] = {0};
  ck_assert_int_eq(ct_op_set_attr_ints(a, "shape", NULL, 0), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(b, "shape", empty, 1), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(a, "dtype", CT_FLOAT64), CT_OK);
  run(a, s);
  run(b, s);
  ck_assert(isfinite(*(const double *)result(s, "a", CT_FLOAT64, CT_DIMS())));
  ck_assert_ptr_nonnull(result(s, "b", CT_FLOAT32, CT_DIMS(0)));
  ct_op_free(a);
  ct_op_free(b);
  ct_scope_free(s);
}
END_TEST

/* ---- sum ------------------------------------------------------------------------------------- */

START_TEST(sum_of_three_float32) {
  ct_scope *s = ct_scope_new();
  float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, c[4] = {0.5f, -1, 100, 0};
  put(s, "a", CT_FLOAT32, CT_DIMS(2, 2), a);
  put(s, "b", CT_FLOAT32, CT_DIMS(2, 2), b);
  put(s, "c", CT_FLOAT32, CT_DIMS(2, 2), c);
  const char *const xs[3] = {"a", "b", "c"};
  ct_op *op = op_many("sum", xs, 3, "out");
  run(op, s);
  const float *o = result(s, "out", CT_FLOAT32, CT_DIMS(2, 2));
  for (int i = 0; i < 4; i++) ck_assert(o[i] == a[i] + b[i] + c[i]);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(sum_of_one_copies) {
  ct_scope *s = ct_scope_new();
  double a[3] = {1.5, -2, 3};
  put(s, "a", CT_FLOAT64, CT_DIMS(3), a);
  const char *const xs[1] = {"a"};
  ct_op *op = op_many("sum", xs, 1, "out");
  run(op, s);
  const double *o = result(s, "out", CT_FLOAT64, CT_DIMS(3));
  for (int i = 0; i < 3; i++) ck_assert(o[i] == a[i]);
  ck_assert(!ct_tensor_shares_memory(tensor_of(s, "a"), tensor_of(s, "out")));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(sum_of_many_float64_against_loop) {
  enum { K = 7 };
  ct_scope *s = ct_scope_new();
  const char *names[K] = {"x0", "x1", "x2", "x3", "x4", "x5", "x6"};
  double ref[12] = {0};
  for (int k = 0; k < K; k++) {
    double v[12];
    for (int i = 0; i < 12; i++) {
      v[i] = (double)((i * 3 + k * 5) % 11) * 0.25 - 1;
      ref[i] += v[i];
    }
    put(s, names[k], CT_FLOAT64, CT_DIMS(3, 4), v);
  }
  ct_op *op = op_many("sum", names, K, "out");
  run(op, s);
  const double *o = result(s, "out", CT_FLOAT64, CT_DIMS(3, 4));
  for (int i = 0; i < 12; i++) ck_assert(o[i] == ref[i]);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(sum_int32_wraps) {
  ct_scope *s = ct_scope_new();
  int32_t a[2] = {INT32_MAX, -5}, b[2] = {1, 7}, c[2] = {1, INT32_MIN};
  put(s, "a", CT_INT32, CT_DIMS(2), a);
  put(s, "b", CT_INT32, CT_DIMS(2), b);
  put(s, "c", CT_INT32, CT_DIMS(2), c);
  const char *const xs[3] = {"a", "b", "c"};
  ct_op *op = op_many("sum", xs, 3, "out");
  run(op, s);
  const int32_t *o = result(s, "out", CT_INT32, CT_DIMS(2));
  ck_assert_int_eq(o[0], INT32_MIN + 1);
  ck_assert_int_eq(o[1], INT32_MIN + 2);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(sum_int64) {
  ct_scope *s = ct_scope_new();
  int64_t a[2] = {INT64_MAX, 3}, b[2] = {1, 4};
  put(s, "a", CT_INT64, CT_DIMS(2), a);
  put(s, "b", CT_INT64, CT_DIMS(2), b);
  const char *const xs[2] = {"a", "b"};
  ct_op *op = op_many("sum", xs, 2, "out");
  run(op, s);
  const int64_t *o = result(s, "out", CT_INT64, CT_DIMS(2));
  ck_assert(o[0] == INT64_MIN && o[1] == 7);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(sum_rank0_and_empty) {
  ct_scope *s = ct_scope_new();
  float a[1] = {2}, b[1] = {3};
  put(s, "a", CT_FLOAT32, CT_DIMS(), a);
  put(s, "b", CT_FLOAT32, CT_DIMS(), b);
  put(s, "e", CT_FLOAT32, CT_DIMS(0, 2), NULL);
  put(s, "f", CT_FLOAT32, CT_DIMS(0, 2), NULL);
  const char *const xs[2] = {"a", "b"}, *const es[2] = {"e", "f"};
  ct_op *op = op_many("sum", xs, 2, "out"), *oe = op_many("sum", es, 2, "eo");
  run(op, s);
  run(oe, s);
  ck_assert(*(const float *)result(s, "out", CT_FLOAT32, CT_DIMS()) == 5);
  ck_assert_ptr_nonnull(result(s, "eo", CT_FLOAT32, CT_DIMS(0, 2)));
  ct_op_free(op);
  ct_op_free(oe);
  ct_scope_free(s);
}
END_TEST

START_TEST(sum_into_one_of_its_inputs) {
  ct_scope *s = ct_scope_new();
  float a[2] = {1, 2}, b[2] = {10, 20};
  put(s, "a", CT_FLOAT32, CT_DIMS(2), a);
  put(s, "b", CT_FLOAT32, CT_DIMS(2), b);
  const char *const xs[3] = {"a", "b", "a"};
  ct_op *op = op_many("sum", xs, 3, "b");
  run(op, s);
  const float *o = result(s, "b", CT_FLOAT32, CT_DIMS(2));
  ck_assert(o[0] == 12 && o[1] == 24);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(sum_dims_that_differ_are_shape_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "a", CT_FLOAT32, CT_DIMS(2, 3), data_x);
  put_fn(s, "b", CT_FLOAT32, CT_DIMS(3), data_x);
  const char *const xs[2] = {"a", "b"};
  ct_op *op = op_many("sum", xs, 2, "out");
  run_fails(op, s, CT_ERR_SHAPE, "sum", "'a'", "[2,3]", "'b'", "[3]", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(sum_dtypes_that_differ_are_type_mismatch) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "a", CT_FLOAT32, CT_DIMS(3), data_x);
  put_fn(s, "b", CT_FLOAT32, CT_DIMS(3), data_x);
  put_fn(s, "c", CT_INT32, CT_DIMS(3), data_x);
  const char *const xs[3] = {"a", "b", "c"};
  ct_op *op = op_many("sum", xs, 3, "out");
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "sum", "'c'", "int32", "float32", NULL);
  ck_assert(!ct_tensor_has_memory(tensor_of(s, "out")));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(sum_on_bool_is_unsupported) {
  ct_scope *s = ct_scope_new();
  uint8_t a[2] = {1, 0};
  put(s, "a", CT_BOOL, CT_DIMS(2), a);
  const char *const xs[2] = {"a", "a"};
  ct_op *op = op_many("sum", xs, 2, "out");
  run_fails(op, s, CT_ERR_UNSUPPORTED, "sum", "bool", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- mean ------------------------------------------------------------------------------------ */

START_TEST(mean_float32_is_rank0) {
  ct_scope *s = ct_scope_new();
  float x[6] = {1, 2, 3, 4, 5, 9};
  put(s, "x", CT_FLOAT32, CT_DIMS(2, 3), x);
  ct_op *op = op_x("mean", "x", "out");
  run(op, s);
  ck_assert(*(const float *)result(s, "out", CT_FLOAT32, CT_DIMS()) == 4.0f);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(mean_float64_against_loop) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT64, CT_DIMS(3, 5, 7), data_unary);
  ct_op *op = op_x("mean", "x", "out");
  run(op, s);
  double sum = 0;
  for (int64_t i = 0; i < 105; i++) sum += data_unary(i);
  ck_assert(*(const double *)result(s, "out", CT_FLOAT64, CT_DIMS()) == sum / 105);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(mean_of_a_scalar_is_itself) {
  ct_scope *s = ct_scope_new();
  double x[1] = {-2.25};
  put(s, "x", CT_FLOAT64, CT_DIMS(), x);
  ct_op *op = op_x("mean", "x", "out");
  run(op, s);
  ck_assert(*(const double *)result(s, "out", CT_FLOAT64, CT_DIMS()) == -2.25);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(mean_of_empty_is_nan) {
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT32, CT_DIMS(0, 4), NULL);
  ct_op *op = op_x("mean", "x", "out");
  run(op, s);
  ck_assert(isnan(*(const float *)result(s, "out", CT_FLOAT32, CT_DIMS())));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(mean_float32_sums_in_double) {
  /* 2^24 ones and a 1 more: a float accumulator would stop at 2^24. */
  ct_scope *s = ct_scope_new();
  const int64_t n = (1 << 24) + 2;
  float *x = xmalloc(n, sizeof(float));
  for (int64_t i = 0; i < n; i++) x[i] = 1.0f;
  x[0] = 3.0f; /* the sum is n + 2 */
  put(s, "x", CT_FLOAT32, CT_DIMS(n), x);
  free(x);
  ct_op *op = op_x("mean", "x", "out");
  run(op, s);
  ck_assert(*(const float *)result(s, "out", CT_FLOAT32, CT_DIMS()) ==
            (float)((double)(n + 2) / (double)n));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(mean_on_int32_is_unsupported) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_INT32, CT_DIMS(3), data_x);
  ct_op *op = op_x("mean", "x", "out");
  run_fails(op, s, CT_ERR_UNSUPPORTED, "mean", "int32", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- reduce_sum ------------------------------------------------------------------------------ */

/* Runs reduce_sum over X (dims xd, dtype dt, values data_x) with the dims given (dim NULL: the
 * attribute left at its default) and checks Out against a naive loop. */
static void check_reduce_sum(ct_dtype dt, ct_ddim xd, const int64_t *dim, size_t nd, int keep,
                             ct_ddim want) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", dt, xd, data_x);
  ct_op *op = op_x("reduce_sum", "x", "out");
  if (dim != NULL) ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", dim, nd), CT_OK);
  if (keep >= 0) ck_assert_int_eq(ct_op_set_attr_bool(op, "keep_dim", keep), CT_OK);
  run(op, s);
  const void *out = result(s, "out", dt, want);
  bool red[CT_MAX_RANK];
  for (int k = 0; k < CT_MAX_RANK; k++) red[k] = dim == NULL || nd == 0;
  for (size_t i = 0; i < nd; i++) {
    red[dim[i] < 0 ? dim[i] + (xd.rank ? xd.rank : 1) : dim[i]] = true;
  }
  int64_t no = ct_ddim_numel(want);
  double *ref = xmalloc(no, sizeof(double));
  for (int64_t i = 0, n = ct_ddim_numel(xd); i < n; i++) {
    int64_t rest = i, o = 0, stride = 1;
    for (int k = xd.rank - 1; k >= 0; k--) {
      int64_t ik = rest % xd.d[k];
      rest /= xd.d[k];
      if (red[k]) continue;
      o += ik * stride;
      stride *= xd.d[k];
    }
    ref[o] += data_x(i);
  }
  for (int64_t i = 0; i < no; i++) {
    ck_assert_msg(get_elem(out, dt, i) == ref[i], "element %lld: %g, expected %g", (long long)i,
                  get_elem(out, dt, i), ref[i]);
  }
  free(ref);
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(reduce_sum_all_by_default) {
  check_reduce_sum(CT_FLOAT32, CT_DIMS(2, 3, 4), NULL, 0, -1, CT_DIMS());
}
END_TEST
START_TEST(reduce_sum_all_keep_dim) {
  check_reduce_sum(CT_FLOAT64, CT_DIMS(2, 3, 4), NULL, 0, 1, CT_DIMS(1, 1, 1));
}
END_TEST
START_TEST(reduce_sum_last_dim) {
  const int64_t d[1] = {2};
  check_reduce_sum(CT_FLOAT32, CT_DIMS(2, 3, 4), d, 1, -1, CT_DIMS(2, 3));
}
END_TEST
START_TEST(reduce_sum_first_dim) {
  const int64_t d[1] = {0};
  check_reduce_sum(CT_FLOAT32, CT_DIMS(2, 3, 4), d, 1, -1, CT_DIMS(3, 4));
}
END_TEST
START_TEST(reduce_sum_middle_dim_keep_dim) {
  const int64_t d[1] = {1};
  check_reduce_sum(CT_FLOAT64, CT_DIMS(2, 3, 4), d, 1, 1, CT_DIMS(2, 1, 4));
}
END_TEST
START_TEST(reduce_sum_outer_dims) {
  const int64_t d[2] = {0, 2};
  check_reduce_sum(CT_FLOAT32, CT_DIMS(2, 3, 4), d, 2, 0, CT_DIMS(3));
}
END_TEST
START_TEST(reduce_sum_alternating_dims_rank5) {
  const int64_t d[3] = {3, 1, 0};
  check_reduce_sum(CT_FLOAT64, CT_DIMS(3, 2, 4, 2, 3), d, 3, 1, CT_DIMS(1, 1, 4, 1, 3));
}
END_TEST
START_TEST(reduce_sum_negative_dims) {
  const int64_t d[2] = {-1, -3};
  check_reduce_sum(CT_FLOAT32, CT_DIMS(2, 3, 4), d, 2, -1, CT_DIMS(3));
}
END_TEST
START_TEST(reduce_sum_explicit_all_dims) {
  const int64_t d[3] = {2, 0, 1};
  check_reduce_sum(CT_FLOAT32, CT_DIMS(2, 3, 4), d, 3, -1, CT_DIMS());
}
END_TEST
START_TEST(reduce_sum_over_size1_dims) {
  const int64_t d[1] = {1};
  check_reduce_sum(CT_FLOAT32, CT_DIMS(3, 1, 1, 2), d, 1, -1, CT_DIMS(3, 1, 2));
}
END_TEST
START_TEST(reduce_sum_int32) {
  const int64_t d[1] = {1};
  check_reduce_sum(CT_INT32, CT_DIMS(4, 5), d, 1, -1, CT_DIMS(4));
}
END_TEST
START_TEST(reduce_sum_int64) {
  const int64_t d[1] = {0};
  check_reduce_sum(CT_INT64, CT_DIMS(4, 5), d, 1, 1, CT_DIMS(1, 5));
}
END_TEST
START_TEST(reduce_sum_rank0) { check_reduce_sum(CT_FLOAT32, CT_DIMS(), NULL, 0, -1, CT_DIMS()); }
END_TEST
START_TEST(reduce_sum_rank0_dim_0) {
  const int64_t d[1] = {-1};
  check_reduce_sum(CT_FLOAT64, CT_DIMS(), d, 1, 1, CT_DIMS());
}
END_TEST
START_TEST(reduce_sum_over_empty_dim_gives_zeros) {
  const int64_t d[1] = {0};
  check_reduce_sum(CT_FLOAT32, CT_DIMS(0, 3), d, 1, -1, CT_DIMS(3));
}
END_TEST
START_TEST(reduce_sum_keeping_empty_dim_gives_empty) {
  const int64_t d[1] = {1};
  check_reduce_sum(CT_FLOAT32, CT_DIMS(0, 3), d, 1, -1, CT_DIMS(0));
}
END_TEST
START_TEST(reduce_sum_all_of_empty_is_zero) {
  check_reduce_sum(CT_INT64, CT_DIMS(2, 0), NULL, 0, -1, CT_DIMS());
}
END_TEST

START_TEST(reduce_sum_int32_wraps) {
  ct_scope *s = ct_scope_new();
  int32_t x[3] = {INT32_MAX, 1, 1};
  put(s, "x", CT_INT32, CT_DIMS(3), x);
  ct_op *op = op_x("reduce_sum", "x", "out");
  run(op, s);
  ck_assert_int_eq(*(const int32_t *)result(s, "out", CT_INT32, CT_DIMS()), INT32_MIN + 1);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(reduce_sum_float32_folds_in_double) {
  ct_scope *s = ct_scope_new();
  const int64_t n = (1 << 24) + 2;
  float *x = xmalloc(n, sizeof(float));
  for (int64_t i = 0; i < n; i++) x[i] = 1.0f;
  put(s, "x", CT_FLOAT32, CT_DIMS(n), x);
  free(x);
  ct_op *op = op_x("reduce_sum", "x", "out");
  run(op, s);
  ck_assert(*(const float *)result(s, "out", CT_FLOAT32, CT_DIMS()) == (float)n);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(reduce_sum_dim_out_of_range_is_an_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 3), data_x);
  ct_op *op = op_x("reduce_sum", "x", "out");
  const int64_t d[2] = {0, 2};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", d, 2), CT_OK);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "reduce_sum", "'dim'", "2", "'x'", "rank 2", NULL);
  const int64_t e[1] = {-3};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", e, 1), CT_OK);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "reduce_sum", "-3", NULL);
  ck_assert(!ct_tensor_has_memory(tensor_of(s, "out")));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(reduce_sum_dim_listed_twice_is_an_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 3, 4), data_x);
  ct_op *op = op_x("reduce_sum", "x", "out");
  const int64_t d[2] = {1, -2};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", d, 2), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "reduce_sum", "'dim'", "twice", "'x'", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(reduce_sum_rank2_dim_on_rank0_is_an_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(), data_x);
  ct_op *op = op_x("reduce_sum", "x", "out");
  const int64_t d[1] = {1};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", d, 1), CT_OK);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "reduce_sum", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(reduce_sum_on_float16_is_unsupported) {
  ct_scope *s = ct_scope_new();
  uint16_t x[2] = {0x3C00, 0x3C00};
  put(s, "x", CT_FLOAT16, CT_DIMS(2), x);
  ct_op *op = op_x("reduce_sum", "x", "out");
  run_fails(op, s, CT_ERR_UNSUPPORTED, "reduce_sum", "float16", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- softmax --------------------------------------------------------------------------------- */

/* Runs softmax over X (dims xd, dtype dt, values v(i)) along axis (INT64_MIN: the default) and
 * checks Out against a naive double computation, within tol relative. */
static void check_softmax(ct_dtype dt, ct_ddim xd, int64_t axis, double (*v)(int64_t),
                          double tol) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", dt, xd, v);
  ct_op *op = op_x("softmax", "x", "out");
  if (axis != INT64_MIN) ck_assert_int_eq(ct_op_set_attr_int(op, "axis", axis), CT_OK);
  run(op, s);
  const void *out = result(s, "out", dt, xd);
  int a = (int)(axis == INT64_MIN ? -1 : axis);
  if (a < 0) a += xd.rank > 0 ? xd.rank : 1;
  int64_t outer = 1, n = 1, inner = 1;
  for (int k = 0; k < xd.rank; k++) {
    if (k < a) outer *= xd.d[k];
    if (k == a) n = xd.d[k];
    if (k > a) inner *= xd.d[k];
  }
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t i = 0; i < inner; i++) {
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < n; j++) mx = fmax(mx, v((o * n + j) * inner + i));
      for (int64_t j = 0; j < n; j++) sum += exp(v((o * n + j) * inner + i) - mx);
      for (int64_t j = 0; j < n; j++) {
        int64_t at = (o * n + j) * inner + i;
        double want = exp(v(at) - mx) / sum, got = get_elem(out, dt, at);
        ck_assert_msg(fabs(got - want) <= tol * want, "element %lld: %.17g, expected %.17g",
                      (long long)at, got, want);
      }
    }
  }
  ct_op_free(op);
  ct_scope_free(s);
}

static double data_big(int64_t i) { return 1000.0 + (double)(i % 5); }

START_TEST(softmax_last_axis_by_default) {
  check_softmax(CT_FLOAT32, CT_DIMS(2, 3), INT64_MIN, data_unary, TOL32);
}
END_TEST
START_TEST(softmax_first_axis) { check_softmax(CT_FLOAT32, CT_DIMS(3, 2), 0, data_unary, TOL32); }
END_TEST
START_TEST(softmax_middle_axis) {
  check_softmax(CT_FLOAT64, CT_DIMS(2, 3, 4), 1, data_unary, TOL64);
}
END_TEST
START_TEST(softmax_negative_axis) {
  check_softmax(CT_FLOAT64, CT_DIMS(2, 3, 4), -2, data_unary, TOL64);
}
END_TEST
START_TEST(softmax_large_values_do_not_overflow) {
  check_softmax(CT_FLOAT32, CT_DIMS(4, 5), -1, data_big, TOL32);
}
END_TEST
START_TEST(softmax_axis_of_one) {
  check_softmax(CT_FLOAT32, CT_DIMS(3, 1), 1, data_unary, 0);
}
END_TEST
START_TEST(softmax_rank0_is_one) { check_softmax(CT_FLOAT64, CT_DIMS(), INT64_MIN, data_unary, 0); }
END_TEST
START_TEST(softmax_empty) { check_softmax(CT_FLOAT32, CT_DIMS(0, 3), 1, data_unary, 0); }
END_TEST
START_TEST(softmax_over_empty_axis) { check_softmax(CT_FLOAT32, CT_DIMS(2, 0), 1, data_unary, 0); }
END_TEST

START_TEST(softmax_rows_sum_to_one) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT64, CT_DIMS(5, 17), data_unary);
  ct_op *op = op_x("softmax", "x", "out");
  run(op, s);
  const double *o = result(s, "out", CT_FLOAT64, CT_DIMS(5, 17));
  for (int r = 0; r < 5; r++) {
    double sum = 0;
    for (int j = 0; j < 17; j++) sum += o[r * 17 + j];
    ck_assert(fabs(sum - 1) < 1e-14);
  }
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(softmax_of_minus_inf_is_zero) {
  ct_scope *s = ct_scope_new();
  float x[3] = {-INFINITY, 0, 0};
  put(s, "x", CT_FLOAT32, CT_DIMS(3), x);
  ct_op *op = op_x("softmax", "x", "out");
  run(op, s);
  const float *o = result(s, "out", CT_FLOAT32, CT_DIMS(3));
  ck_assert(o[0] == 0 && o[1] == 0.5f && o[2] == 0.5f);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(softmax_in_place) {
  ct_scope *s = ct_scope_new();
  double x[2] = {0, 0};
  put(s, "x", CT_FLOAT64, CT_DIMS(2), x);
  ct_op *op = op_x("softmax", "x", "x");
  run(op, s);
  const double *o = result(s, "x", CT_FLOAT64, CT_DIMS(2));
  ck_assert(o[0] == 0.5 && o[1] == 0.5);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(softmax_axis_out_of_range_is_an_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 3), data_unary);
  ct_op *op = op_x("softmax", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", 2), CT_OK);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "softmax", "'axis'", "'x'", "rank 2", NULL);
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", -3), CT_OK);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "softmax", "-3", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(softmax_on_int32_is_unsupported) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_INT32, CT_DIMS(3), data_x);
  ct_op *op = op_x("softmax", "x", "out");
  run_fails(op, s, CT_ERR_UNSUPPORTED, "softmax", "int32", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- reshape --------------------------------------------------------------------------------- */

/* Runs reshape of X (dims xd, float32 iota) to shape; checks Out's dims, that it shares X's
 * memory and holds X's values in order. */
static void check_reshape(ct_ddim xd, const int64_t *shape, size_t n, ct_ddim want) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, xd, data_iota);
  ct_op *op = op_x("reshape", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", shape, n), CT_OK);
  run(op, s);
  const float *o = result(s, "out", CT_FLOAT32, want);
  ck_assert(ct_tensor_shares_memory(tensor_of(s, "x"), tensor_of(s, "out")));
  ck_assert_ptr_eq(o, ct_tensor_data(tensor_of(s, "x"), CT_FLOAT32));
  for (int64_t i = 0, m = ct_ddim_numel(want); i < m; i++) ck_assert(o[i] == (float)i);
  ck_assert(ct_ddim_equal(ct_tensor_dims(tensor_of(s, "x")), xd)); /* X keeps its dims */
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(reshape_to_explicit_dims) {
  const int64_t shape[2] = {3, 2};
  check_reshape(CT_DIMS(2, 3), shape, 2, CT_DIMS(3, 2));
}
END_TEST
START_TEST(reshape_infers_minus_one) {
  const int64_t shape[3] = {2, -1, 2};
  check_reshape(CT_DIMS(3, 4), shape, 3, CT_DIMS(2, 3, 2));
}
END_TEST
START_TEST(reshape_zero_copies_input_dim) {
  const int64_t shape[3] = {0, 0, -1};
  check_reshape(CT_DIMS(2, 3, 4, 5), shape, 3, CT_DIMS(2, 3, 20));
}
END_TEST
START_TEST(reshape_flattens) {
  const int64_t shape[1] = {-1};
  check_reshape(CT_DIMS(2, 3, 4), shape, 1, CT_DIMS(24));
}
END_TEST
START_TEST(reshape_scalar_to_1) {
  const int64_t shape[1] = {1};
  check_reshape(CT_DIMS(), shape, 1, CT_DIMS(1));
}
END_TEST
START_TEST(reshape_to_scalar) { check_reshape(CT_DIMS(1, 1), NULL, 0, CT_DIMS()); }
END_TEST
START_TEST(reshape_scalar_with_minus_one) {
  const int64_t shape[2] = {-1, 1};
  check_reshape(CT_DIMS(), shape, 2, CT_DIMS(1, 1));
}
END_TEST
START_TEST(reshape_empty_with_minus_one) {
  const int64_t shape[2] = {3, -1}; /* 0 elements over 3: -1 is 0 */
  check_reshape(CT_DIMS(0, 3), shape, 2, CT_DIMS(3, 0));
}
END_TEST
START_TEST(reshape_empty_copying_the_zero_dim) {
  const int64_t shape[3] = {0, 2, 2}; /* 0 copies X's dim 0, itself 0 */
  check_reshape(CT_DIMS(0, 4), shape, 3, CT_DIMS(0, 2, 2));
}
END_TEST
START_TEST(reshape_zero_is_never_a_literal_extent) {
  const int64_t shape[2] = {3, 0}; /* [3, X's dim 1] = [3,3]: 9 elements, not 0 */
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT32, CT_DIMS(0, 3), NULL);
  ct_op *op = op_x("reshape", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", shape, 2), CT_OK);
  run_fails(op, s, CT_ERR_SHAPE, "reshape", "[0,3]", "[3,0]", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(reshape_in_place) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT64, CT_DIMS(2, 3), data_iota);
  const void *before = ct_tensor_data(tensor_of(s, "x"), CT_FLOAT64);
  ct_op *op = op_x("reshape", "x", "x");
  const int64_t shape[2] = {-1, 2};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", shape, 2), CT_OK);
  run(op, s);
  const double *o = result(s, "x", CT_FLOAT64, CT_DIMS(3, 2));
  ck_assert_ptr_eq(o, before);
  for (int i = 0; i < 6; i++) ck_assert(o[i] == i);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(reshape_any_dtype) {
  for (int a = 0; a < 10; a++) {
    ct_scope *s = ct_scope_new();
    put_fn(s, "x", all_dtypes[a], CT_DIMS(4), all_dtypes[a] == CT_BOOL ? data_zero_one : data_iota);
    ct_op *op = op_x("reshape", "x", "out");
    const int64_t shape[2] = {2, 2};
    ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", shape, 2), CT_OK);
    run(op, s);
    ck_assert_ptr_nonnull(result(s, "out", all_dtypes[a], CT_DIMS(2, 2)));
    ck_assert(ct_tensor_shares_memory(tensor_of(s, "x"), tensor_of(s, "out")));
    ct_op_free(op);
    ct_scope_free(s);
  }
}
END_TEST

/* Later writes to X show through Out: they are one buffer. */
START_TEST(reshape_output_is_a_view) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(4), data_iota);
  ct_op *op = op_x("reshape", "x", "out");
  const int64_t shape[2] = {2, 2};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", shape, 2), CT_OK);
  run(op, s);
  float *x = ct_tensor_mutable_data(ct_var_tensor(ct_scope_find_var(s, "x")), CT_FLOAT32, ct_cpu());
  x[3] = 42;
  ck_assert(((const float *)result(s, "out", CT_FLOAT32, CT_DIMS(2, 2)))[3] == 42);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* Runs reshape of a [2,3] X to shape and expects status want. */
static void reshape_fails(const int64_t *shape, size_t n, ct_status want, const char *needle) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 3), data_iota);
  ct_op *op = op_x("reshape", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", shape, n), CT_OK);
  run_fails(op, s, want, "reshape", needle, NULL);
  ck_assert(!ct_tensor_has_memory(tensor_of(s, "out")));
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(reshape_count_mismatch_is_shape_error) {
  const int64_t shape[2] = {4, 2};
  reshape_fails(shape, 2, CT_ERR_SHAPE, "'x'");
}
END_TEST
START_TEST(reshape_minus_one_that_does_not_divide_is_shape_error) {
  const int64_t shape[2] = {4, -1};
  reshape_fails(shape, 2, CT_ERR_SHAPE, "[4,-1]");
}
END_TEST
START_TEST(reshape_minus_one_beside_zero_extent_is_shape_error) {
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT32, CT_DIMS(0, 3), NULL);
  ct_op *op = op_x("reshape", "x", "out");
  const int64_t shape[2] = {0, -1}; /* [0, ?]: any extent would do */
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", shape, 2), CT_OK);
  run_fails(op, s, CT_ERR_SHAPE, "reshape", "[0,-1]", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST
START_TEST(reshape_two_minus_ones_is_an_error) {
  const int64_t shape[3] = {-1, 3, -1};
  reshape_fails(shape, 3, CT_ERR_INVALID_ARGUMENT, "more than one -1");
}
END_TEST
START_TEST(reshape_below_minus_one_is_an_error) {
  const int64_t shape[2] = {-2, -3};
  reshape_fails(shape, 2, CT_ERR_INVALID_ARGUMENT, "-2");
}
END_TEST
START_TEST(reshape_zero_past_input_rank_is_an_error) {
  const int64_t shape[3] = {6, 1, 0};
  reshape_fails(shape, 3, CT_ERR_INVALID_ARGUMENT, "position 2");
}
END_TEST
START_TEST(reshape_too_many_dims_is_an_error) {
  const int64_t shape[10] = {1, 1, 1, 1, 1, 1, 1, 1, 2, 3};
  reshape_fails(shape, 10, CT_ERR_OUT_OF_RANGE, "shape");
}
END_TEST
START_TEST(reshape_overflowing_dims_are_shape_error) {
  const int64_t shape[3] = {INT64_MAX, 4, 2};
  reshape_fails(shape, 3, CT_ERR_SHAPE, "'x'");
}
END_TEST

START_TEST(reshape_without_shape_is_an_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 3), data_iota);
  ct_op *op = op_x("reshape", "x", "out");
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "reshape", "'shape'", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- transpose ------------------------------------------------------------------------------- */

/* Runs transpose of X (dims xd, dtype dt, values data_iota) by perm and checks Out against a
 * naive loop: Out[i0, i1, ...] = X at the index whose dim perm[k] is i_k. */
static void check_transpose(ct_dtype dt, ct_ddim xd, const int64_t *perm, ct_ddim want) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", dt, xd, dt == CT_BOOL ? data_zero_one : data_iota);
  ct_op *op = op_x("transpose", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "axis", perm, (size_t)xd.rank), CT_OK);
  run(op, s);
  const void *out = result(s, "out", dt, want);
  const void *x = ct_tensor_data(tensor_of(s, "x"), dt);
  int64_t xs[CT_MAX_RANK], st = 1;
  for (int k = xd.rank - 1; k >= 0; k--) {
    xs[k] = st;
    st *= xd.d[k];
  }
  for (int64_t i = 0, n = ct_ddim_numel(want); i < n; i++) {
    int64_t rest = i, src = 0;
    for (int k = want.rank - 1; k >= 0; k--) {
      int p = (int)(perm[k] < 0 ? perm[k] + xd.rank : perm[k]);
      src += (rest % want.d[k]) * xs[p];
      rest /= want.d[k];
    }
    ck_assert_msg(get_elem(out, dt, i) == get_elem(x, dt, src), "element %lld: %g, expected %g",
                  (long long)i, get_elem(out, dt, i), get_elem(x, dt, src));
  }
  if (ct_ddim_numel(want) > 0) {
    ck_assert(!ct_tensor_shares_memory(tensor_of(s, "x"), tensor_of(s, "out")));
  }
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(transpose_matrix) {
  const int64_t p[2] = {1, 0};
  check_transpose(CT_FLOAT32, CT_DIMS(2, 3), p, CT_DIMS(3, 2));
}
END_TEST
START_TEST(transpose_rank3_rotation) {
  const int64_t p[3] = {2, 0, 1};
  check_transpose(CT_FLOAT64, CT_DIMS(2, 3, 4), p, CT_DIMS(4, 2, 3));
}
END_TEST
START_TEST(transpose_rank4_keeps_inner_runs) {
  const int64_t p[4] = {0, 2, 3, 1};
  check_transpose(CT_FLOAT32, CT_DIMS(2, 3, 4, 5), p, CT_DIMS(2, 4, 5, 3));
}
END_TEST
START_TEST(transpose_negative_axes) {
  const int64_t p[3] = {-1, -3, -2};
  check_transpose(CT_INT32, CT_DIMS(2, 3, 4), p, CT_DIMS(4, 2, 3));
}
END_TEST
START_TEST(transpose_identity_copies) {
  const int64_t p[3] = {0, 1, 2};
  check_transpose(CT_FLOAT32, CT_DIMS(2, 3, 4), p, CT_DIMS(2, 3, 4));
}
END_TEST
START_TEST(transpose_moves_only_size1_dims) {
  const int64_t p[3] = {1, 0, 2};
  check_transpose(CT_FLOAT32, CT_DIMS(1, 3, 4), p, CT_DIMS(3, 1, 4));
}
END_TEST
START_TEST(transpose_rank0) { check_transpose(CT_FLOAT64, CT_DIMS(), NULL, CT_DIMS()); }
END_TEST
START_TEST(transpose_empty) {
  const int64_t p[2] = {1, 0};
  check_transpose(CT_FLOAT32, CT_DIMS(0, 3), p, CT_DIMS(3, 0));
}
END_TEST
START_TEST(transpose_1_byte_elements) {
  const int64_t p[2] = {1, 0};
  check_transpose(CT_INT8, CT_DIMS(5, 7), p, CT_DIMS(7, 5));
}
END_TEST
START_TEST(transpose_bool) {
  const int64_t p[2] = {1, 0};
  check_transpose(CT_BOOL, CT_DIMS(3, 2), p, CT_DIMS(2, 3));
}
END_TEST
START_TEST(transpose_2_byte_elements) {
  const int64_t p[3] = {2, 1, 0};
  check_transpose(CT_FLOAT16, CT_DIMS(3, 4, 5), p, CT_DIMS(5, 4, 3));
}
END_TEST
START_TEST(transpose_8_byte_elements) {
  const int64_t p[3] = {1, 2, 0};
  check_transpose(CT_INT64, CT_DIMS(3, 4, 5), p, CT_DIMS(4, 5, 3));
}
END_TEST

START_TEST(transpose_in_place) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 3), data_iota);
  ct_op *op = op_x("transpose", "x", "x");
  const int64_t p[2] = {1, 0};
  ck_assert_int_eq(ct_op_set_attr_ints(op, "axis", p, 2), CT_OK);
  run(op, s);
  const float *o = result(s, "x", CT_FLOAT32, CT_DIMS(3, 2));
  const float want[6] = {0, 3, 1, 4, 2, 5};
  for (int i = 0; i < 6; i++) ck_assert(o[i] == want[i]);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static void transpose_fails(const int64_t *perm, size_t n, ct_status want, const char *needle) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 3, 4), data_iota);
  ct_op *op = op_x("transpose", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "axis", perm, n), CT_OK);
  run_fails(op, s, want, "transpose", needle, NULL);
  ck_assert(!ct_tensor_has_memory(tensor_of(s, "out")));
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(transpose_axis_of_wrong_length_is_shape_error) {
  const int64_t p[2] = {1, 0};
  transpose_fails(p, 2, CT_ERR_SHAPE, "rank 3");
}
END_TEST
START_TEST(transpose_axis_listed_twice_is_an_error) {
  const int64_t p[3] = {0, 2, -1};
  transpose_fails(p, 3, CT_ERR_INVALID_ARGUMENT, "twice");
}
END_TEST
START_TEST(transpose_axis_out_of_range_is_an_error) {
  const int64_t p[3] = {0, 1, 3};
  transpose_fails(p, 3, CT_ERR_OUT_OF_RANGE, "'axis'");
}
END_TEST

START_TEST(transpose_without_axis_is_an_error) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(2, 3), data_iota);
  ct_op *op = op_x("transpose", "x", "out");
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "transpose", "'axis'", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- concat ---------------------------------------------------------------------------------- */

/* Runs concat of n inputs (dims xds[i], dtype dt, input i holding 10 i + j % 10 at element j) along
 * axis (INT64_MIN: the default) and checks Out against a naive loop. */
static void check_concat(ct_dtype dt, const ct_ddim *xds, size_t n, int64_t axis, ct_ddim want) {
  static const char *const names[4] = {"a", "b", "c", "d"};
  ct_scope *s = ct_scope_new();
  for (size_t i = 0; i < n; i++) {
    int64_t m = ct_ddim_numel(xds[i]);
    void *p = xmalloc(m, 8);
    for (int64_t j = 0; j < m; j++) set_elem(p, dt, j, (double)(10 * (int64_t)i + j % 10));
    put(s, names[i], dt, xds[i], p);
    free(p);
  }
  ct_op *op = op_many("concat", names, n, "out");
  if (axis != INT64_MIN) ck_assert_int_eq(ct_op_set_attr_int(op, "axis", axis), CT_OK);
  run(op, s);
  const void *out = result(s, "out", dt, want);
  int a = (int)(axis == INT64_MIN ? 0 : axis < 0 ? axis + want.rank : axis);
  for (int64_t i = 0, m = ct_ddim_numel(want); i < m; i++) {
    /* The index of element i in Out, then the input whose range along the axis holds it. */
    int64_t idx[CT_MAX_RANK] = {0}, rest = i;
    for (int k = want.rank - 1; k >= 0; k--) {
      idx[k] = rest % want.d[k];
      rest /= want.d[k];
    }
    size_t src = 0;
    while (idx[a] >= xds[src].d[a]) idx[a] -= xds[src++].d[a];
    int64_t j = 0;
    for (int k = 0; k < want.rank; k++) j = j * xds[src].d[k] + idx[k];
    double expect = (double)(10 * (int64_t)src + j % 10);
    ck_assert_msg(get_elem(out, dt, i) == expect, "element %lld: %g, expected %g", (long long)i,
                  get_elem(out, dt, i), expect);
  }
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(concat_rows) {
  const ct_ddim d[2] = {CT_DIMS(2, 3), CT_DIMS(1, 3)};
  check_concat(CT_FLOAT32, d, 2, INT64_MIN, CT_DIMS(3, 3));
}
END_TEST
START_TEST(concat_columns) {
  const ct_ddim d[2] = {CT_DIMS(2, 1), CT_DIMS(2, 3)};
  check_concat(CT_FLOAT64, d, 2, 1, CT_DIMS(2, 4));
}
END_TEST
START_TEST(concat_negative_axis) {
  const ct_ddim d[3] = {CT_DIMS(2, 2), CT_DIMS(2, 1), CT_DIMS(2, 3)};
  check_concat(CT_FLOAT32, d, 3, -1, CT_DIMS(2, 6));
}
END_TEST
START_TEST(concat_middle_axis_of_rank3) {
  const ct_ddim d[3] = {CT_DIMS(2, 1, 3), CT_DIMS(2, 2, 3), CT_DIMS(2, 3, 3)};
  check_concat(CT_INT64, d, 3, 1, CT_DIMS(2, 6, 3));
}
END_TEST
START_TEST(concat_one_input_copies) {
  const ct_ddim d[1] = {CT_DIMS(2, 3)};
  check_concat(CT_INT32, d, 1, 1, CT_DIMS(2, 3));
}
END_TEST
START_TEST(concat_with_an_empty_input) {
  const ct_ddim d[3] = {CT_DIMS(0, 3), CT_DIMS(2, 3), CT_DIMS(0, 3)};
  check_concat(CT_FLOAT32, d, 3, 0, CT_DIMS(2, 3));
}
END_TEST
START_TEST(concat_of_empties_is_empty) {
  const ct_ddim d[2] = {CT_DIMS(2, 0), CT_DIMS(2, 0)};
  check_concat(CT_FLOAT32, d, 2, 1, CT_DIMS(2, 0));
}
END_TEST
START_TEST(concat_empty_across_the_axis) {
  const ct_ddim d[2] = {CT_DIMS(0, 2), CT_DIMS(0, 3)};
  check_concat(CT_FLOAT32, d, 2, 1, CT_DIMS(0, 5));
}
END_TEST
START_TEST(concat_int8) {
  const ct_ddim d[2] = {CT_DIMS(3), CT_DIMS(4)};
  check_concat(CT_INT8, d, 2, 0, CT_DIMS(7));
}
END_TEST
START_TEST(concat_float16_rank4) {
  const ct_ddim d[2] = {CT_DIMS(2, 2, 1, 3), CT_DIMS(2, 2, 2, 3)};
  check_concat(CT_FLOAT16, d, 2, 2, CT_DIMS(2, 2, 3, 3));
}
END_TEST

START_TEST(concat_same_variable_twice) {
  ct_scope *s = ct_scope_new();
  float x[2] = {1, 2};
  put(s, "x", CT_FLOAT32, CT_DIMS(2), x);
  const char *const xs[2] = {"x", "x"};
  ct_op *op = op_many("concat", xs, 2, "x");
  run(op, s);
  const float *o = result(s, "x", CT_FLOAT32, CT_DIMS(4));
  ck_assert(o[0] == 1 && o[1] == 2 && o[2] == 1 && o[3] == 2);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* Runs concat of a [2,3] a and b of dims bd and dtype bt; expects status want. */
static void concat_fails(ct_ddim ad, ct_ddim bd, ct_dtype bt, int64_t axis, ct_status want,
                         const char *needle) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "a", CT_FLOAT32, ad, data_iota);
  put_fn(s, "b", bt, bd, data_iota);
  const char *const xs[2] = {"a", "b"};
  ct_op *op = op_many("concat", xs, 2, "out");
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", axis), CT_OK);
  run_fails(op, s, want, "concat", needle, NULL);
  ck_assert(!ct_tensor_has_memory(tensor_of(s, "out")));
  ct_op_free(op);
  ct_scope_free(s);
}

START_TEST(concat_other_dims_that_differ_are_shape_error) {
  concat_fails(CT_DIMS(2, 3), CT_DIMS(2, 4), CT_FLOAT32, 0, CT_ERR_SHAPE, "'b' [2,4]");
}
END_TEST
START_TEST(concat_ranks_that_differ_are_shape_error) {
  concat_fails(CT_DIMS(2, 3), CT_DIMS(2, 3, 1), CT_FLOAT32, 0, CT_ERR_SHAPE, "'a' [2,3]");
}
END_TEST
START_TEST(concat_of_scalars_is_shape_error) {
  concat_fails(CT_DIMS(), CT_DIMS(), CT_FLOAT32, 0, CT_ERR_SHAPE, "scalar");
}
END_TEST
START_TEST(concat_dtypes_that_differ_are_type_mismatch) {
  concat_fails(CT_DIMS(2, 3), CT_DIMS(2, 3), CT_INT32, 0, CT_ERR_TYPE_MISMATCH, "'b'");
}
END_TEST
START_TEST(concat_axis_out_of_range_is_an_error) {
  concat_fails(CT_DIMS(2, 3), CT_DIMS(2, 3), CT_FLOAT32, 2, CT_ERR_OUT_OF_RANGE, "'axis'");
}
END_TEST
START_TEST(concat_negative_axis_out_of_range_is_an_error) {
  concat_fails(CT_DIMS(2, 3), CT_DIMS(2, 3), CT_FLOAT32, -3, CT_ERR_OUT_OF_RANGE, "-3");
}
END_TEST

/* ---- Suite ----------------------------------------------------------------------------------- */

static Suite *ops_suite(void) {
  Suite *s = suite_create("ops");
  CT_ADD_TEST(s, add_same_dims);
  CT_ADD_TEST(s, add_row_vector_broadcasts);
  CT_ADD_TEST(s, add_column_and_row_broadcast_to_matrix);
  CT_ADD_TEST(s, add_rank3_with_rank2_broadcasts_both_ways);
  CT_ADD_TEST(s, add_scalar_to_matrix);
  CT_ADD_TEST(s, add_matrix_to_scalar);
  CT_ADD_TEST(s, add_scalars_gives_scalar);
  CT_ADD_TEST(s, add_empty_with_row_gives_empty);
  CT_ADD_TEST(s, add_broadcasts_size1_against_0);
  CT_ADD_TEST(s, add_leading_ones_broadcast);
  CT_ADD_TEST(s, add_noncontiguous_broadcast_rank4);
  CT_ADD_TEST(s, sub_broadcasts_float64);
  CT_ADD_TEST(s, sub_is_x_minus_y_when_x_broadcasts);
  CT_ADD_TEST(s, mul_broadcasts);
  CT_ADD_TEST(s, div_broadcasts);
  CT_ADD_TEST(s, div_float_by_zero_is_ieee);
  CT_ADD_TEST(s, binary_dims_that_do_not_broadcast_are_shape_error);
  CT_ADD_TEST(s, binary_dtypes_that_differ_are_type_mismatch);
  CT_ADD_TEST(s, binary_on_int8_is_unsupported);
  CT_ADD_TEST(s, add_in_place_writes_x);
  CT_ADD_TEST(s, add_in_place_may_grow_x_by_broadcasting);
  CT_ADD_TEST(s, int32_add_sub_mul_wrap);
  CT_ADD_TEST(s, int64_add_wraps_and_broadcasts);
  CT_ADD_TEST(s, int_div_truncates_toward_zero);
  CT_ADD_TEST(s, int64_div_min_by_minus_one_wraps);
  CT_ADD_TEST(s, int32_div_by_zero_is_an_error_and_writes_nothing);
  CT_ADD_TEST(s, int64_div_by_broadcast_zero_is_an_error);
  CT_ADD_TEST(s, relu_float32);
  CT_ADD_TEST(s, relu_float64_rank0);
  CT_ADD_TEST(s, relu_int32);
  CT_ADD_TEST(s, relu_int64);
  CT_ADD_TEST(s, relu_empty);
  CT_ADD_TEST(s, sigmoid_float32);
  CT_ADD_TEST(s, sigmoid_float64);
  CT_ADD_TEST(s, tanh_float32);
  CT_ADD_TEST(s, tanh_float64);
  CT_ADD_TEST(s, exp_float32);
  CT_ADD_TEST(s, exp_float64);
  CT_ADD_TEST(s, log_float32);
  CT_ADD_TEST(s, log_float64);
  CT_ADD_TEST(s, exp_rank0);
  CT_ADD_TEST(s, sigmoid_empty);
  CT_ADD_TEST(s, sigmoid_saturates_without_nan);
  CT_ADD_TEST(s, log_of_zero_and_negative);
  CT_ADD_TEST(s, float_only_unary_on_int32_is_unsupported);
  CT_ADD_TEST(s, unary_in_place);
  CT_ADD_TEST(s, scale_defaults_copy);
  CT_ADD_TEST(s, scale_adds_bias_after_scale_by_default);
  CT_ADD_TEST(s, scale_adds_bias_before_scale);
  CT_ADD_TEST(s, scale_float64_bias_before);
  CT_ADD_TEST(s, scale_int32_truncates_and_saturates);
  CT_ADD_TEST(s, scale_int64_nan_gives_zero);
  CT_ADD_TEST(s, scale_int64_saturates_at_max);
  CT_ADD_TEST(s, scale_rank0_and_empty);
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
  CT_ADD_TEST(s, matmul_plain);
  CT_ADD_TEST(s, matmul_float64);
  CT_ADD_TEST(s, matmul_transpose_x);
  CT_ADD_TEST(s, matmul_transpose_y);
  CT_ADD_TEST(s, matmul_transpose_both);
  CT_ADD_TEST(s, matmul_batched_x_shared_y);
  CT_ADD_TEST(s, matmul_batched_x_shared_y_transposed);
  CT_ADD_TEST(s, matmul_batched_both);
  CT_ADD_TEST(s, matmul_shared_x_batched_y);
  CT_ADD_TEST(s, matmul_batch_dims_broadcast);
  CT_ADD_TEST(s, matmul_batch_dims_broadcast_with_ones_in_x);
  CT_ADD_TEST(s, matmul_vector_times_matrix);
  CT_ADD_TEST(s, matmul_matrix_times_vector);
  CT_ADD_TEST(s, matmul_transposed_matrix_times_vector);
  CT_ADD_TEST(s, matmul_vector_dot_vector_is_scalar);
  CT_ADD_TEST(s, matmul_vector_ignores_transpose);
  CT_ADD_TEST(s, matmul_batched_matrix_times_vector);
  CT_ADD_TEST(s, matmul_vector_times_batched_matrix);
  CT_ADD_TEST(s, matmul_k0_gives_zeros);
  CT_ADD_TEST(s, matmul_batched_k0_gives_zeros);
  CT_ADD_TEST(s, matmul_m0_gives_empty);
  CT_ADD_TEST(s, matmul_empty_batch_gives_empty);
  CT_ADD_TEST(s, matmul_larger_than_blas_blocks);
  CT_ADD_TEST(s, matmul_inner_dims_that_differ_are_shape_error);
  CT_ADD_TEST(s, matmul_batch_dims_that_do_not_broadcast_are_shape_error);
  CT_ADD_TEST(s, matmul_of_a_scalar_is_shape_error);
  CT_ADD_TEST(s, matmul_dtypes_that_differ_are_type_mismatch);
  CT_ADD_TEST(s, matmul_on_int32_is_unsupported);
  CT_ADD_TEST(s, matmul_x_with_itself);
  CT_ADD_TEST(s, fill_constant_every_dtype);
  CT_ADD_TEST(s, fill_constant_defaults_to_float32_zero);
  CT_ADD_TEST(s, fill_constant_rank0_and_empty);
  CT_ADD_TEST(s, fill_constant_int64_extremes);
  CT_ADD_TEST(s, fill_constant_value_out_of_range_is_an_error);
  CT_ADD_TEST(s, fill_constant_float16_rounds_value_once);
  CT_ADD_TEST(s, fill_constant_without_shape_is_an_error);
  CT_ADD_TEST(s, fill_constant_negative_dim_is_an_error);
  CT_ADD_TEST(s, fill_constant_too_many_dims_is_an_error);
  CT_ADD_TEST(s, fill_constant_invalid_dtype_is_an_error);
  CT_ADD_TEST(s, philox_reference_matches_known_answers);
  CT_ADD_TEST(s, uniform_random_float32_follows_philox);
  CT_ADD_TEST(s, uniform_random_float64_follows_philox);
  CT_ADD_TEST(s, uniform_random_same_seed_same_bits);
  CT_ADD_TEST(s, uniform_random_prefix_is_stable);
  CT_ADD_TEST(s, uniform_random_different_seeds_differ);
  CT_ADD_TEST(s, uniform_random_seed_0_differs_each_run);
  CT_ADD_TEST(s, uniform_random_float32_in_range);
  CT_ADD_TEST(s, uniform_random_float64_in_range);
  CT_ADD_TEST(s, uniform_random_float16_in_range);
  CT_ADD_TEST(s, uniform_random_bfloat16_in_range);
  CT_ADD_TEST(s, uniform_random_min_equal_max_gives_min);
  CT_ADD_TEST(s, uniform_random_mean_and_variance);
  CT_ADD_TEST(s, random_bounds_must_be_finite);
  CT_ADD_TEST(s, uniform_random_min_above_max_is_an_error);
  CT_ADD_TEST(s, uniform_random_on_int32_is_unsupported);
  CT_ADD_TEST(s, uniform_random_rank0_and_empty);
  CT_ADD_TEST(s, gaussian_random_float32_mean_and_std);
  CT_ADD_TEST(s, gaussian_random_float64_mean_and_std);
  CT_ADD_TEST(s, gaussian_random_float16_mean_and_std);
  CT_ADD_TEST(s, gaussian_random_bfloat16_mean_and_std);
  CT_ADD_TEST(s, gaussian_random_is_normal);
  CT_ADD_TEST(s, gaussian_random_same_seed_same_bits);
  CT_ADD_TEST(s, gaussian_random_std_0_gives_mean);
  CT_ADD_TEST(s, gaussian_random_negative_std_is_an_error);
  CT_ADD_TEST(s, gaussian_random_rank0_and_empty);
  CT_ADD_TEST(s, sum_of_three_float32);
  CT_ADD_TEST(s, sum_of_one_copies);
  CT_ADD_TEST(s, sum_of_many_float64_against_loop);
  CT_ADD_TEST(s, sum_int32_wraps);
  CT_ADD_TEST(s, sum_int64);
  CT_ADD_TEST(s, sum_rank0_and_empty);
  CT_ADD_TEST(s, sum_into_one_of_its_inputs);
  CT_ADD_TEST(s, sum_dims_that_differ_are_shape_error);
  CT_ADD_TEST(s, sum_dtypes_that_differ_are_type_mismatch);
  CT_ADD_TEST(s, sum_on_bool_is_unsupported);
  CT_ADD_TEST(s, mean_float32_is_rank0);
  CT_ADD_TEST(s, mean_float64_against_loop);
  CT_ADD_TEST(s, mean_of_a_scalar_is_itself);
  CT_ADD_TEST(s, mean_of_empty_is_nan);
  CT_ADD_TEST(s, mean_float32_sums_in_double);
  CT_ADD_TEST(s, mean_on_int32_is_unsupported);
  CT_ADD_TEST(s, reduce_sum_all_by_default);
  CT_ADD_TEST(s, reduce_sum_all_keep_dim);
  CT_ADD_TEST(s, reduce_sum_last_dim);
  CT_ADD_TEST(s, reduce_sum_first_dim);
  CT_ADD_TEST(s, reduce_sum_middle_dim_keep_dim);
  CT_ADD_TEST(s, reduce_sum_outer_dims);
  CT_ADD_TEST(s, reduce_sum_alternating_dims_rank5);
  CT_ADD_TEST(s, reduce_sum_negative_dims);
  CT_ADD_TEST(s, reduce_sum_explicit_all_dims);
  CT_ADD_TEST(s, reduce_sum_over_size1_dims);
  CT_ADD_TEST(s, reduce_sum_int32);
  CT_ADD_TEST(s, reduce_sum_int64);
  CT_ADD_TEST(s, reduce_sum_rank0);
  CT_ADD_TEST(s, reduce_sum_rank0_dim_0);
  CT_ADD_TEST(s, reduce_sum_over_empty_dim_gives_zeros);
  CT_ADD_TEST(s, reduce_sum_keeping_empty_dim_gives_empty);
  CT_ADD_TEST(s, reduce_sum_all_of_empty_is_zero);
  CT_ADD_TEST(s, reduce_sum_int32_wraps);
  CT_ADD_TEST(s, reduce_sum_float32_folds_in_double);
  CT_ADD_TEST(s, reduce_sum_dim_out_of_range_is_an_error);
  CT_ADD_TEST(s, reduce_sum_dim_listed_twice_is_an_error);
  CT_ADD_TEST(s, reduce_sum_rank2_dim_on_rank0_is_an_error);
  CT_ADD_TEST(s, reduce_sum_on_float16_is_unsupported);
  CT_ADD_TEST(s, softmax_last_axis_by_default);
  CT_ADD_TEST(s, softmax_first_axis);
  CT_ADD_TEST(s, softmax_middle_axis);
  CT_ADD_TEST(s, softmax_negative_axis);
  CT_ADD_TEST(s, softmax_large_values_do_not_overflow);
  CT_ADD_TEST(s, softmax_axis_of_one);
  CT_ADD_TEST(s, softmax_rank0_is_one);
  CT_ADD_TEST(s, softmax_empty);
  CT_ADD_TEST(s, softmax_over_empty_axis);
  CT_ADD_TEST(s, softmax_rows_sum_to_one);
  CT_ADD_TEST(s, softmax_of_minus_inf_is_zero);
  CT_ADD_TEST(s, softmax_in_place);
  CT_ADD_TEST(s, softmax_axis_out_of_range_is_an_error);
  CT_ADD_TEST(s, softmax_on_int32_is_unsupported);
  CT_ADD_TEST(s, reshape_to_explicit_dims);
  CT_ADD_TEST(s, reshape_infers_minus_one);
  CT_ADD_TEST(s, reshape_zero_copies_input_dim);
  CT_ADD_TEST(s, reshape_flattens);
  CT_ADD_TEST(s, reshape_scalar_to_1);
  CT_ADD_TEST(s, reshape_to_scalar);
  CT_ADD_TEST(s, reshape_scalar_with_minus_one);
  CT_ADD_TEST(s, reshape_empty_with_minus_one);
  CT_ADD_TEST(s, reshape_empty_copying_the_zero_dim);
  CT_ADD_TEST(s, reshape_zero_is_never_a_literal_extent);
  CT_ADD_TEST(s, reshape_in_place);
  CT_ADD_TEST(s, reshape_any_dtype);
  CT_ADD_TEST(s, reshape_output_is_a_view);
  CT_ADD_TEST(s, reshape_count_mismatch_is_shape_error);
  CT_ADD_TEST(s, reshape_minus_one_that_does_not_divide_is_shape_error);
  CT_ADD_TEST(s, reshape_minus_one_beside_zero_extent_is_shape_error);
  CT_ADD_TEST(s, reshape_two_minus_ones_is_an_error);
  CT_ADD_TEST(s, reshape_below_minus_one_is_an_error);
  CT_ADD_TEST(s, reshape_zero_past_input_rank_is_an_error);
  CT_ADD_TEST(s, reshape_too_many_dims_is_an_error);
  CT_ADD_TEST(s, reshape_overflowing_dims_are_shape_error);
  CT_ADD_TEST(s, reshape_without_shape_is_an_error);
  CT_ADD_TEST(s, transpose_matrix);
  CT_ADD_TEST(s, transpose_rank3_rotation);
  CT_ADD_TEST(s, transpose_rank4_keeps_inner_runs);
  CT_ADD_TEST(s, transpose_negative_axes);
  CT_ADD_TEST(s, transpose_identity_copies);
  CT_ADD_TEST(s, transpose_moves_only_size1_dims);
  CT_ADD_TEST(s, transpose_rank0);
  CT_ADD_TEST(s, transpose_empty);
  CT_ADD_TEST(s, transpose_1_byte_elements);
  CT_ADD_TEST(s, transpose_bool);
  CT_ADD_TEST(s, transpose_2_byte_elements);
  CT_ADD_TEST(s, transpose_8_byte_elements);
  CT_ADD_TEST(s, transpose_in_place);
  CT_ADD_TEST(s, transpose_axis_of_wrong_length_is_shape_error);
  CT_ADD_TEST(s, transpose_axis_listed_twice_is_an_error);
  CT_ADD_TEST(s, transpose_axis_out_of_range_is_an_error);
  CT_ADD_TEST(s, transpose_without_axis_is_an_error);
  CT_ADD_TEST(s, concat_rows);
  CT_ADD_TEST(s, concat_columns);
  CT_ADD_TEST(s, concat_negative_axis);
  CT_ADD_TEST(s, concat_middle_axis_of_rank3);
  CT_ADD_TEST(s, concat_one_input_copies);
  CT_ADD_TEST(s, concat_with_an_empty_input);
  CT_ADD_TEST(s, concat_of_empties_is_empty);
  CT_ADD_TEST(s, concat_empty_across_the_axis);
  CT_ADD_TEST(s, concat_int8);
  CT_ADD_TEST(s, concat_float16_rank4);
  CT_ADD_TEST(s, concat_same_variable_twice);
  CT_ADD_TEST(s, concat_other_dims_that_differ_are_shape_error);
  CT_ADD_TEST(s, concat_ranks_that_differ_are_shape_error);
  CT_ADD_TEST(s, concat_of_scalars_is_shape_error);
  CT_ADD_TEST(s, concat_dtypes_that_differ_are_type_mismatch);
  CT_ADD_TEST(s, concat_axis_out_of_range_is_an_error);
  CT_ADD_TEST(s, concat_negative_axis_out_of_range_is_an_error);
  return s;
}

CT_TEST_MAIN(ops_suite)
