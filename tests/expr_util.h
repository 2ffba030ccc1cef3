/* SPDX-License-Identifier: Apache-2.0 */
/* tests/expr_util.h: the helpers of the expression suites (test_expr*.c): tensors of test data,
 * the op-by-op reference (the built-in ops run one at a time in a scope), and bit-exact
 * comparison. */
#ifndef CORTEN_TESTS_EXPR_UTIL_H
#define CORTEN_TESTS_EXPR_UTIL_H

#include "op_util.h"

/* Test data for element i of input k: irregular values in about [-3, 3], never 0, exact in
 * float32 and float64 (multiples of 1/64). */
static inline double data_k(int k, int64_t i) {
  int64_t h = (i * 37 + k * 101 + (i * i) % 13) % 389;
  double v = (double)(h - 194) / 64.0;
  return v == 0 ? 0.5 : v;
}

/* Positive test data (for log, sqrt, pow): about (0, 6]. */
static inline double data_pos(int k, int64_t i) { return fabs(data_k(k, i)) + 1.0 / 64; }

/* A new tensor of dims and dtype with element i = f(k, i). */
static inline ct_tensor *tensor_fn(ct_dtype dt, ct_ddim dims, double (*f)(int, int64_t), int k) {
  int64_t n = ct_ddim_numel(dims);
  void *buf = xmalloc(n, ct_dtype_size(dt));
  for (int64_t i = 0; i < n; i++) set_elem(buf, dt, i, f(k, i));
  ct_tensor *t = ct_tensor_new();
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(ct_tensor_set_value(t, buf, dims, dt, ct_cpu()), CT_OK);
  free(buf);
  return t;
}

static inline ct_tensor *tensor_k(ct_dtype dt, ct_ddim dims, int k) {
  return tensor_fn(dt, dims, data_k, k);
}

/* Runs op `type` (X, and Y when y is not NULL; attribute-free) on copies of x and y in a fresh
 * scope and returns a new tensor holding its Out. */
static inline ct_tensor *ref_op(const char *type, const ct_tensor *x, const ct_tensor *y) {
  ct_scope *s = ct_scope_new();
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, "x")), x, ct_cpu()), CT_OK);
  if (y != NULL) {
    ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, "y")), y, ct_cpu()), CT_OK);
  }
  ct_op *op = y != NULL ? op_xy(type, "x", "y", "out") : op_x(type, "x", "out");
  run(op, s);
  ct_tensor *r = ct_tensor_new();
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(ct_tensor_copy(r, tensor_of(s, "out"), ct_cpu()), CT_OK);
  ct_op_free(op);
  ct_scope_free(s);
  return r;
}

/* ref_op that frees its operands (for nesting references as expressions nest). */
static inline ct_tensor *ref_op_take(const char *type, ct_tensor *x, ct_tensor *y) {
  ct_tensor *r = ref_op(type, x, y);
  ct_tensor_free(x);
  ct_tensor_free(y);
  return r;
}

/* A new tensor with a's dims and dtype holding f(a[i]) (or f(a[i], b[i]) of equal dims), each
 * computed in C in a's type: the reference of the node kinds no op has. */
static inline ct_tensor *ref_map(const ct_tensor *a, const ct_tensor *b, float (*f32)(float, float),
                                 double (*f64)(double, double)) {
  ct_tensor *r = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_copy(r, a, ct_cpu()), CT_OK);
  int64_t n = ct_tensor_numel(a);
  if (ct_tensor_dtype(a) == CT_FLOAT32) {
    const float *x = ct_tensor_data(a, CT_FLOAT32), *y = b ? ct_tensor_data(b, CT_FLOAT32) : x;
    float *o = ct_tensor_mutable_data(r, CT_FLOAT32, ct_cpu());
    for (int64_t i = 0; i < n; i++) o[i] = f32(x[i], y[i]);
  } else {
    const double *x = ct_tensor_data(a, CT_FLOAT64), *y = b ? ct_tensor_data(b, CT_FLOAT64) : x;
    double *o = ct_tensor_mutable_data(r, CT_FLOAT64, ct_cpu());
    for (int64_t i = 0; i < n; i++) o[i] = f64(x[i], y[i]);
  }
  return r;
}

/* got and want have the same dims and dtype and the same bytes. */
static inline void assert_same_bits(const ct_tensor *got, const ct_tensor *want) {
  char a[256], b[256];
  ck_assert_msg(ct_ddim_equal(ct_tensor_dims(got), ct_tensor_dims(want)), "dims %s, expected %s",
                ct_ddim_str(ct_tensor_dims(got), a, sizeof a),
                ct_ddim_str(ct_tensor_dims(want), b, sizeof b));
  ck_assert_int_eq(ct_tensor_dtype(got), ct_tensor_dtype(want));
  ct_dtype dt = ct_tensor_dtype(want);
  size_t es = ct_dtype_size(dt);
  const unsigned char *g = ct_tensor_data(got, dt), *w = ct_tensor_data(want, dt);
  ck_assert_ptr_nonnull(g);
  for (int64_t i = 0; i < ct_tensor_numel(want); i++) {
    ck_assert_msg(memcmp(g + i * es, w + i * es, es) == 0, "element %lld: %.17g, expected %.17g",
                  (long long)i, get_elem(g, dt, i), get_elem(w, dt, i));
  }
}

/* Assigns e (then frees it) into a new tensor with mode CT_SAVETO and returns the tensor. */
static inline ct_tensor *eval_new(ct_expr *e) {
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  ct_tensor *d = ct_tensor_new();
  ck_assert_ptr_nonnull(d);
  ct_status st = ct_expr_assign(d, CT_SAVETO, e);
  ck_assert_msg(st == CT_OK, "ct_expr_assign: %s", ct_last_error());
  ct_expr_free(e);
  return d;
}

/* The last error holds each of the strings after it (NULL-terminated). */
static inline void assert_message_has(const char *first, ...) {
  va_list ap;
  va_start(ap, first);
  for (const char *s = first; s != NULL; s = va_arg(ap, const char *)) {
    ck_assert_msg(strstr(ct_last_error(), s) != NULL, "'%s' not in the message: %s", s,
                  ct_last_error());
  }
  va_end(ap);
}

#define LEAF(t) ct_expr_tensor(t)
#define BIN(op, a, b) ct_expr_binary(CT_EXPR_##op, (a), (b))
#define UN(op, a) ct_expr_unary(CT_EXPR_##op, (a))

#endif /* CORTEN_TESTS_EXPR_UTIL_H */
