/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_stream.c: streaming stores (ops/cpu/stream.h). Outputs larger than the last-level
 * cache are written with non-temporal stores by the binary elementwise kernels and by the
 * expression engine's last node; the values must be those of the plain stores, element for
 * element, at any alignment of the output and any thread count. The tests lower the threshold
 * (an internal hook, hence the static library) so that small tensors take the streaming paths. */
#include <math.h>
#include <stdint.h>

#include <corten/expr.h>

#include "expr_util.h"
#include "harness.h"
#include "ops/cpu/stream.h"

#define N 1027 /* odd: a tail after the last whole vector */

static void stream_all(void) { ct__stream_set_min_bytes(1); }
static void stream_none(void) { ct__stream_set_min_bytes(SIZE_MAX); }

START_TEST(the_threshold_is_the_last_level_cache_until_set) {
  size_t first = ct__stream_min_bytes();
  ck_assert_uint_gt(first, 0);
  ct__stream_set_min_bytes(4096);
  ck_assert_uint_eq(ct__stream_min_bytes(), 4096);
  ct__stream_set_min_bytes(0);
  ck_assert_uint_eq(ct__stream_min_bytes(), first);
}
END_TEST

/* ---- Binary kernels --------------------------------------------------------------------------- */

static const char *const bin_types[] = {"elementwise_add", "elementwise_sub", "elementwise_mul",
                                        "elementwise_div"};

static double bin_ref(int op, double a, double b, ct_dtype dt) {
  if (dt == CT_FLOAT32) {
    float x = (float)a, y = (float)b;
    float r = op == 0 ? x + y : op == 1 ? x - y : op == 2 ? x * y : x / y;
    return r;
  }
  return op == 0 ? a + b : op == 1 ? a - b : op == 2 ? a * b : a / b;
}

/* Runs each binary op over n elements of dtype dt, streaming, in a fresh scope and checks every
 * element against the scalar operation in C. */
static void check_binary_ops(ct_dtype dt, int64_t n) {
  stream_all();
  ct_scope *s = ct_scope_new();
  ct_tensor *x = tensor_k(dt, CT_DIMS(n), 0), *y = tensor_k(dt, CT_DIMS(n), 1);
  ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, "x")), x, ct_cpu()), CT_OK);
  ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, "y")), y, ct_cpu()), CT_OK);
  for (int op = 0; op < 4; op++) {
    ct_op *o = op_xy(bin_types[op], "x", "y", "z");
    run(o, s);
    const void *z = ct_tensor_data(tensor_of(s, "z"), dt);
    ck_assert_ptr_nonnull(z);
    for (int64_t i = 0; i < n; i++) {
      double want = bin_ref(op, data_k(0, i), data_k(1, i), dt);
      ck_assert_msg(get_elem(z, dt, i) == want, "%s element %lld: %.17g, expected %.17g",
                    bin_types[op], (long long)i, get_elem(z, dt, i), want);
    }
    ct_op_free(o);
  }
  ct_tensor_free(x);
  ct_tensor_free(y);
  ct_scope_free(s);
}

START_TEST(binary_float32_kernels_stream_the_scalar_results) { check_binary_ops(CT_FLOAT32, N); }
END_TEST

START_TEST(binary_float64_kernels_stream_the_scalar_results) { check_binary_ops(CT_FLOAT64, N); }
END_TEST

START_TEST(two_threads_stream_their_own_pieces) {
  ct_set_num_threads(2);
  check_binary_ops(CT_FLOAT32, ((int64_t)1 << 17) + 5);
  ct_set_num_threads(0);
}
END_TEST

/* Out is a view 12 bytes past a 16-byte boundary: its first element and the tail are stored
 * plainly, the middle streamed; nothing outside the view is touched. */
START_TEST(a_misaligned_output_gets_every_element_and_no_more) {
  stream_all();
  ct_scope *s = ct_scope_new();
  const int64_t cols = N;
  put_fn(s, "base", CT_FLOAT32, CT_DIMS(3, cols), data_iota);
  ct_tensor *z = ct_var_tensor(ct_scope_var(s, "z"));
  ck_assert_int_eq(ct_tensor_slice(z, tensor_of(s, "base"), 1, 2), CT_OK);
  const float *row = ct_tensor_data(z, CT_FLOAT32);
  ck_assert_uint_eq((uintptr_t)row % 16, (uintptr_t)(cols * 4) % 16); /* 12: one plain store */
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(1, cols), data_x);
  put_fn(s, "y", CT_FLOAT32, CT_DIMS(1, cols), data_y);
  ct_op *o = op_xy("elementwise_add", "x", "y", "z");
  run(o, s);
  ck_assert_ptr_eq(ct_tensor_data(tensor_of(s, "z"), CT_FLOAT32), row); /* written in place */
  const float *base = ct_tensor_data(tensor_of(s, "base"), CT_FLOAT32);
  for (int64_t i = 0; i < 3 * cols; i++) {
    double want = i >= cols && i < 2 * cols ? data_x(i - cols) + data_y(i - cols) : (double)i;
    ck_assert_msg(base[i] == want, "element %lld: %g, expected %g", (long long)i, base[i], want);
  }
  ct_op_free(o);
  ct_scope_free(s);
}
END_TEST

/* Out [3, N] from X [3, N] and Y [N] (a row broadcast down), then X [N] and Y [3, 1] (a column
 * broadcast along): each row's run streams with the broadcast operand in every lane. */
START_TEST(broadcast_rows_stream_the_scalar_results) {
  stream_all();
  ct_scope *s = ct_scope_new();
  ct_ddim shapes[2][2] = {{CT_DIMS(3, N), CT_DIMS(N)}, {CT_DIMS(N), CT_DIMS(3, 1)}};
  for (int k = 0; k < 2; k++) {
    ct_tensor *x = tensor_k(CT_FLOAT32, shapes[k][0], 0), *y = tensor_k(CT_FLOAT32, shapes[k][1], 1);
    ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, "x")), x, ct_cpu()), CT_OK);
    ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, "y")), y, ct_cpu()), CT_OK);
    ct_op *o = op_xy("elementwise_sub", "x", "y", "z");
    run(o, s);
    const float *z = ct_tensor_data(tensor_of(s, "z"), CT_FLOAT32);
    for (int64_t r = 0; r < 3; r++) {
      for (int64_t i = 0; i < N; i++) {
        float a = (float)data_k(0, k == 0 ? r * N + i : i), b = (float)data_k(1, k == 0 ? i : r);
        ck_assert_msg(z[r * N + i] == a - b, "case %d, element [%lld, %lld]", k, (long long)r,
                      (long long)i);
      }
    }
    ct_op_free(o);
    ct_tensor_free(x);
    ct_tensor_free(y);
  }
  ct_scope_free(s);
}
END_TEST

/* relu (negatives +0, NaN and -0 passed through) streamed as stored plainly; scale's sc * x + bi. */
START_TEST(relu_and_scale_stream_the_scalar_results) {
  stream_all();
  ct_scope *s = ct_scope_new();
  float *v = xmalloc(N, sizeof(float));
  for (int64_t i = 0; i < N; i++) v[i] = (float)data_k(0, i);
  v[5] = NAN;
  v[6] = -0.0f;
  v[N - 1] = -0.0f;
  put(s, "x", CT_FLOAT32, CT_DIMS(N), v);
  ct_op *relu = op_x("relu", "x", "r");
  run(relu, s);
  ct_op *scale = op_x("scale", "x", "q");
  ck_assert_int_eq(ct_op_set_attr_float(scale, "scale", 0.75), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(scale, "bias", -1.5), CT_OK);
  run(scale, s);
  const float *r = ct_tensor_data(tensor_of(s, "r"), CT_FLOAT32);
  const float *q = ct_tensor_data(tensor_of(s, "q"), CT_FLOAT32);
  for (int64_t i = 0; i < N; i++) {
    float want = v[i] < 0 ? 0.0f : v[i];
    ck_assert_msg(f32_bits(r[i]) == f32_bits(want), "relu element %lld: %g", (long long)i, r[i]);
    float sc = 0.75f * v[i] + -1.5f;
    ck_assert_msg(f32_bits(q[i]) == f32_bits(sc) || (q[i] != q[i] && sc != sc),
                  "scale element %lld: %g, expected %g", (long long)i, q[i], sc);
  }
  free(v);
  ct_op_free(relu);
  ct_op_free(scale);
  ct_scope_free(s);
}
END_TEST

/* ---- The expression engine's last node ------------------------------------------------------- */

/* A new expression over a, b and c: case k of the last-node kinds. */
static ct_expr *expr_case(int k, const ct_tensor *a, const ct_tensor *b, const ct_tensor *c) {
  switch (k) {
    case 0: return BIN(ADD, BIN(MUL, LEAF(a), LEAF(b)), LEAF(c));     /* a fused pair, left */
    case 1: return BIN(SUB, LEAF(a), BIN(DIV, LEAF(b), LEAF(c)));     /* a fused pair, right */
    case 2: return BIN(MUL, LEAF(a), LEAF(b));                        /* two blocks */
    case 3: return BIN(DIV, LEAF(a), ct_expr_scalar(3.0));            /* a block and a scalar */
    case 4: return BIN(SUB, ct_expr_scalar(2.0), LEAF(a));            /* a scalar and a block */
    case 5: return BIN(ADD, BIN(MUL, LEAF(a), ct_expr_scalar(0.75)), ct_expr_scalar(-1.5));
    case 6: return UN(EXP, LEAF(a));                                  /* stored plainly */
    case 7: return BIN(MAX, LEAF(a), LEAF(b));                        /* stored plainly */
    case 8: return UN(RELU, BIN(ADD, LEAF(a), LEAF(b)));              /* stored plainly */
    default: return LEAF(a);                                          /* a leaf alone */
  }
}
#define EXPR_CASES 10

/* Each case evaluated streaming into a fresh tensor has the bits of its plain evaluation. */
static void check_expr_cases(ct_dtype dt, int64_t n) {
  ct_tensor *a = tensor_k(dt, CT_DIMS(n), 0), *b = tensor_k(dt, CT_DIMS(n), 1);
  ct_tensor *c = tensor_k(dt, CT_DIMS(n), 2);
  for (int k = 0; k < EXPR_CASES; k++) {
    stream_none();
    ct_tensor *want = eval_new(expr_case(k, a, b, c));
    stream_all();
    ct_tensor *got = eval_new(expr_case(k, a, b, c));
    assert_same_bits(got, want);
    ct_tensor_free(want);
    ct_tensor_free(got);
  }
  ct_tensor_free(a);
  ct_tensor_free(b);
  ct_tensor_free(c);
}

START_TEST(expr_float32_streams_the_bits_of_the_plain_stores) { check_expr_cases(CT_FLOAT32, N); }
END_TEST

START_TEST(expr_float64_streams_the_bits_of_the_plain_stores) { check_expr_cases(CT_FLOAT64, N); }
END_TEST

START_TEST(expr_a_times_b_plus_c_streams_the_scalar_results) {
  stream_all();
  ct_tensor *a = tensor_k(CT_FLOAT32, CT_DIMS(N), 0), *b = tensor_k(CT_FLOAT32, CT_DIMS(N), 1);
  ct_tensor *c = tensor_k(CT_FLOAT32, CT_DIMS(N), 2);
  ct_tensor *d = eval_new(expr_case(0, a, b, c));
  const float *o = ct_tensor_data(d, CT_FLOAT32);
  for (int64_t i = 0; i < N; i++) {
    float t = (float)data_k(0, i) * (float)data_k(1, i);
    ck_assert_msg(o[i] == t + (float)data_k(2, i), "element %lld", (long long)i);
  }
  ct_tensor_free(a);
  ct_tensor_free(b);
  ct_tensor_free(c);
  ct_tensor_free(d);
}
END_TEST

/* dst a view 12 bytes past a 16-byte boundary, assigned with CT_SAVETO and then CT_PLUSTO (dst
 * read as it is written): the plain results, and the rows around it untouched. */
START_TEST(expr_misaligned_dst_and_plusto_stream_the_plain_results) {
  ct_tensor *a = tensor_k(CT_FLOAT32, CT_DIMS(1, N), 0);
  ct_tensor *b = tensor_k(CT_FLOAT32, CT_DIMS(1, N), 1);
  ct_tensor *base = tensor_fn(CT_FLOAT32, CT_DIMS(3, N), data_k, 5);
  ct_tensor *view = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_slice(view, base, 1, 2), CT_OK);
  ck_assert_uint_eq((uintptr_t)ct_tensor_data(view, CT_FLOAT32) % 16, (N * 4) % 16);
  stream_all();
  ct_expr *e = expr_case(0, a, b, a);
  ck_assert_int_eq(ct_expr_assign(view, CT_SAVETO, e), CT_OK);
  ct_expr_free(e);
  e = expr_case(2, a, b, a);
  ck_assert_int_eq(ct_expr_assign(view, CT_PLUSTO, e), CT_OK);
  ct_expr_free(e);
  ck_assert_ptr_eq(ct_tensor_data(view, CT_FLOAT32), (const float *)ct_tensor_data(base, CT_FLOAT32) + N);
  const float *o = ct_tensor_data(base, CT_FLOAT32);
  for (int64_t i = 0; i < 3 * N; i++) {
    float want = (float)data_k(5, i);
    if (i >= N && i < 2 * N) {
      float x = (float)data_k(0, i - N), y = (float)data_k(1, i - N);
      float t = x * y, first = t + x;
      want = first + t;
    }
    ck_assert_msg(o[i] == want, "element %lld: %g, expected %g", (long long)i, o[i], want);
  }
  ct_tensor_free(view);
  ct_tensor_free(base);
  ct_tensor_free(a);
  ct_tensor_free(b);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("stream");
  CT_ADD_TEST(s, the_threshold_is_the_last_level_cache_until_set);
  CT_ADD_TEST(s, binary_float32_kernels_stream_the_scalar_results);
  CT_ADD_TEST(s, binary_float64_kernels_stream_the_scalar_results);
  CT_ADD_TEST(s, two_threads_stream_their_own_pieces);
  CT_ADD_TEST(s, a_misaligned_output_gets_every_element_and_no_more);
  CT_ADD_TEST(s, broadcast_rows_stream_the_scalar_results);
  CT_ADD_TEST(s, relu_and_scale_stream_the_scalar_results);
  CT_ADD_TEST(s, expr_float32_streams_the_bits_of_the_plain_stores);
  CT_ADD_TEST(s, expr_float64_streams_the_bits_of_the_plain_stores);
  CT_ADD_TEST(s, expr_a_times_b_plus_c_streams_the_scalar_results);
  CT_ADD_TEST(s, expr_misaligned_dst_and_plusto_stream_the_plain_results);
  return s;
}

CT_TEST_MAIN(make_suite)
