/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the CUDA kernels of sum, mean, reduce_sum, softmax, transpose and concat on a GPU,
 * against the CPU's kernels (exactly where the arithmetic is the same), and their errors, which
 * must be the CPU's. Without a GPU the suite reports itself skipped (77); the no-device checks
 * of the op kernels run in test_cuda_ops.c. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "cuda_ops_util.h"

#ifdef CORTEN_TEST_CUDA

/* ---- sum, mean, reduce_sum, softmax, transpose, concat ---- */

static const char *const xs4[] = {"X0", "X1", "X2", "X3"};

/* An op of type with the k inputs X0.. in its slot X and output Out. */
static ct_op *many_op(const char *type, size_t k) {
  ct_op *op = ct_op_new(type);
  ck_assert_ptr_nonnull(op);
  ck_assert_int_eq(ct_op_set_inputs(op, "X", xs4, k), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "Out"), CT_OK);
  return op;
}

/* Runs op at the CPU and at cuda:0 over the same k host inputs and checks the results: the same
 * bytes when rel is negative, else within rel (relative) plus abs_tol. */
static void compare_run(const ct_op *op, const char *const *names, ct_tensor *const *in,
                        size_t k, double rel, double abs_tol, const char *what) {
  ct_tensor *cpu = run_at(op, names, in, k, ct_cpu(), NULL);
  ct_tensor *gpu = run_at(op, names, in, k, ct_cuda(0), NULL);
  ck_assert_int_eq(ct_tensor_dtype(gpu), ct_tensor_dtype(cpu));
  if (rel < 0) {
    assert_same_bytes(gpu, cpu, what);
  } else {
    assert_close(gpu, cpu, rel, abs_tol, what);
  }
  ct_tensor_free(cpu);
  ct_tensor_free(gpu);
}

static const ct_ddim sum_shapes[] = {{0, {0}}, {1, {5}}, {2, {3, 4}}, {2, {0, 3}},
                                     {3, {2, 3, 4}}, {1, {4099}}};

START_TEST(sum_matches_the_cpu_exactly) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT64};
  for (size_t a = 0; a < 2; a++) {
    for (size_t k = 1; k <= 4; k++) {
      ct_op *op = many_op("sum", k);
      for (size_t d = 0; d < sizeof sum_shapes / sizeof sum_shapes[0]; d++) {
        ct_tensor *in[4] = {NULL, NULL, NULL, NULL};
        for (size_t i = 0; i < k; i++) {
          in[i] = host_values(sum_shapes[d], types[a], -3, 3, (unsigned)(10 * d + i + 1));
        }
        char what[64];
        snprintf(what, sizeof what, "sum %s of %zu, shape #%zu", ct_dtype_name(types[a]), k, d);
        compare_run(op, xs4, in, k, -1, 0, what);
        for (size_t i = 0; i < k; i++) ct_tensor_free(in[i]);
      }
      ct_op_free(op);
    }
  }
}
END_TEST

START_TEST(mean_matches_the_cpu_and_an_empty_mean_is_nan) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT64};
  static const ct_ddim shapes[] = {{0, {0}}, {1, {7}}, {2, {3, 4}}, {2, {1000, 3}}, {1, {5000}}};
  const char *xn[] = {"X"};
  ct_op *op = unary_op("mean");
  for (size_t a = 0; a < 2; a++) {
    for (size_t d = 0; d < sizeof shapes / sizeof shapes[0]; d++) {
      ct_tensor *x = host_values(shapes[d], types[a], 0.5, 2, 3 + (unsigned)d);
      char what[48];
      snprintf(what, sizeof what, "mean %s shape #%zu", ct_dtype_name(types[a]), d);
      compare_run(op, xn, &x, 1, 1e-5, 0, what);
      ct_tensor_free(x);
    }
    ct_tensor *e = host_values(CT_DIMS(0, 3), types[a], 0, 1, 1);
    ct_tensor *gpu = run_at(op, xn, &e, 1, ct_cuda(0), NULL);
    ck_assert_int_eq(ct_tensor_dims(gpu).rank, 0);
    ck_assert(isnan(elem(gpu, 0)));
    ct_tensor_free(gpu);
    ct_tensor_free(e);
  }
  ct_op_free(op);
}
END_TEST

static const struct {
  ct_ddim x;
  int64_t dim[3];
  size_t n_dim;
  bool keep;
} rs_cases[] = {
    {{2, {3, 4}}, {0}, 0, false},        {{2, {3, 4}}, {0}, 1, false},
    {{2, {3, 4}}, {-1}, 1, true},        {{3, {2, 3, 4}}, {0, 2}, 2, false},
    {{3, {2, 3, 4}}, {1}, 1, true},      {{0, {0}}, {0}, 0, false},
    {{0, {0}}, {-1}, 1, true},           {{2, {0, 3}}, {0}, 1, false}, /* sums of nothing: 0 */
    {{2, {0, 3}}, {1}, 1, false},        {{4, {2, 1, 5, 3}}, {-3, 0}, 2, true},
    {{2, {1000, 7}}, {0}, 1, false},     {{1, {4099}}, {0}, 0, false},
    {{3, {4, 5, 6}}, {2, 0, 1}, 3, false},
};

START_TEST(reduce_sum_matches_the_cpu) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT64};
  const char *xn[] = {"X"};
  for (size_t a = 0; a < 2; a++) {
    for (size_t k = 0; k < sizeof rs_cases / sizeof rs_cases[0]; k++) {
      ct_op *op = unary_op("reduce_sum");
      if (rs_cases[k].n_dim > 0) {
        ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", rs_cases[k].dim, rs_cases[k].n_dim),
                         CT_OK);
      }
      ck_assert_int_eq(ct_op_set_attr_bool(op, "keep_dim", rs_cases[k].keep), CT_OK);
      ct_tensor *x = host_values(rs_cases[k].x, types[a], 0.5, 2, 20 + (unsigned)k);
      char what[48];
      snprintf(what, sizeof what, "reduce_sum %s case #%zu", ct_dtype_name(types[a]), k);
      compare_run(op, xn, &x, 1, 1e-5, 0, what);
      ct_tensor_free(x);
      ct_op_free(op);
    }
  }
}
END_TEST

START_TEST(softmax_matches_the_cpu) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT64};
  static const struct {
    ct_ddim x;
    int64_t axis;
    double lo, hi;
  } cases[] = {
      {{1, {5}}, -1, -4, 4},       {{2, {3, 4}}, -1, -4, 4},  {{2, {3, 4}}, 0, -4, 4},
      {{3, {2, 3, 4}}, 1, -4, 4},  {{3, {2, 3, 4}}, -3, -4, 4}, {{0, {0}}, 0, -4, 4},
      {{0, {0}}, -1, -4, 4},       {{2, {0, 3}}, 1, -4, 4},   {{2, {4, 1}}, 1, -4, 4},
      {{2, {2, 300}}, -1, -4, 4},  {{2, {3, 50}}, -1, 50, 90}, /* exp would overflow unshifted */
      /* float32 rows in registers (one to eight float4 a thread), and one too long for them */
      {{2, {5, 64}}, -1, -4, 4},   {{2, {3, 4096}}, -1, -4, 4}, {{2, {2, 8192}}, -1, -4, 4},
      {{2, {2, 8196}}, -1, -4, 4},
  };
  const char *xn[] = {"X"};
  for (size_t a = 0; a < 2; a++) {
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
      ct_op *op = unary_op("softmax");
      ck_assert_int_eq(ct_op_set_attr_int(op, "axis", cases[k].axis), CT_OK);
      ct_tensor *x = host_values(cases[k].x, types[a], cases[k].lo, cases[k].hi, 40 + (unsigned)k);
      char what[48];
      snprintf(what, sizeof what, "softmax %s case #%zu", ct_dtype_name(types[a]), k);
      compare_run(op, xn, &x, 1, 1e-5, 1e-7, what);
      ct_tensor_free(x);
      ct_op_free(op);
    }
  }
}
END_TEST

START_TEST(transpose_matches_the_cpu_exactly_in_every_size) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT64, CT_INT64, CT_FLOAT16};
  static const struct {
    ct_ddim x;
    int64_t axis[CT_MAX_RANK];
  } cases[] = {
      {{2, {3, 4}}, {1, 0}},
      {{3, {2, 3, 4}}, {2, 0, 1}},
      {{3, {2, 3, 4}}, {-1, -2, -3}},
      {{3, {2, 3, 4}}, {0, 1, 2}}, /* nothing moves: a copy */
      {{0, {0}}, {0}},
      {{2, {0, 3}}, {1, 0}},
      {{3, {2, 1, 3}}, {1, 0, 2}}, /* extent 1 dropped: a copy */
      {{3, {65, 3, 70}}, {2, 1, 0}},
      {{9, {2, 3, 2, 1, 2, 3, 1, 2, 2}}, {8, 7, 6, 5, 4, 3, 2, 1, 0}},
      {{9, {2, 3, 2, 1, 2, 3, 1, 2, 2}}, {1, 0, 3, 2, 5, 4, 8, 6, 7}},
  };
  const char *xn[] = {"X"};
  for (size_t a = 0; a < 4; a++) {
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
      ct_op *op = unary_op("transpose");
      ck_assert_int_eq(
          ct_op_set_attr_ints(op, "axis", cases[k].axis, (size_t)cases[k].x.rank), CT_OK);
      ct_tensor *x = host_values(cases[k].x, types[a], -100, 100, 60 + (unsigned)k);
      char what[48];
      snprintf(what, sizeof what, "transpose %s case #%zu", ct_dtype_name(types[a]), k);
      compare_run(op, xn, &x, 1, -1, 0, what);
      ct_tensor_free(x);
      ct_op_free(op);
    }
  }
}
END_TEST

START_TEST(concat_matches_the_cpu_exactly_in_every_size) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT64, CT_INT32, CT_FLOAT16};
  static const struct {
    ct_ddim x[3];
    size_t k;
    int64_t axis;
  } cases[] = {
      {{{2, {2, 3}}, {2, {4, 3}}}, 2, 0},
      {{{2, {2, 3}}, {2, {2, 5}}, {2, {2, 1}}}, 3, 1},
      {{{2, {2, 3}}, {2, {2, 5}}, {2, {2, 1}}}, 3, -1},
      {{{3, {2, 3, 4}}, {3, {2, 0, 4}}, {3, {2, 2, 4}}}, 3, 1},
      {{{2, {0, 3}}, {2, {0, 3}}}, 2, 0}, /* empty result */
      {{{2, {3, 4}}}, 1, 0},
      {{{1, {5}}, {1, {0}}, {1, {7}}}, 3, -1},
      {{{3, {3, 70, 2}}, {3, {3, 65, 2}}}, 2, -2},
  };
  for (size_t a = 0; a < 4; a++) {
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      ct_op *op = many_op("concat", cases[c].k);
      ck_assert_int_eq(ct_op_set_attr_int(op, "axis", cases[c].axis), CT_OK);
      ct_tensor *in[3] = {NULL, NULL, NULL};
      for (size_t i = 0; i < cases[c].k; i++) {
        in[i] = host_values(cases[c].x[i], types[a], -100, 100, (unsigned)(80 + 3 * c + i));
      }
      char what[48];
      snprintf(what, sizeof what, "concat %s case #%zu", ct_dtype_name(types[a]), c);
      compare_run(op, xs4, in, cases[c].k, -1, 0, what);
      for (size_t i = 0; i < cases[c].k; i++) ct_tensor_free(in[i]);
      ct_op_free(op);
    }
  }
}
END_TEST

/* Runs op at the CPU and at cuda:0, both refused with status want and the same message. */
static void same_refusal(const ct_op *op, const char *const *names, ct_tensor *const *in,
                         size_t k, ct_status want) {
  ct_status st;
  char msg[512];
  ck_assert_ptr_null(run_at(op, names, in, k, ct_cpu(), &st));
  ck_assert_int_eq(st, want);
  snprintf(msg, sizeof msg, "%s", ct_last_error());
  ck_assert_ptr_null(run_at(op, names, in, k, ct_cuda(0), &st));
  ck_assert_int_eq(st, want);
  ck_assert_str_eq(ct_last_error(), msg);
}

START_TEST(reduce_and_shape_errors_are_the_cpus) {
  const char *xn[] = {"X"};
  ct_tensor *x = host_values(CT_DIMS(3, 4), CT_FLOAT32, 0, 1, 1);
  ct_tensor *y = host_values(CT_DIMS(3, 5), CT_FLOAT32, 0, 1, 2);
  ct_tensor *xy2[2] = {x, y};
  ct_op *op = unary_op("reduce_sum");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", (const int64_t[]){2}, 1), CT_OK);
  same_refusal(op, xn, &x, 1, CT_ERR_OUT_OF_RANGE);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", (const int64_t[]){1, -1}, 2), CT_OK);
  same_refusal(op, xn, &x, 1, CT_ERR_INVALID_ARGUMENT);
  ct_op_free(op);
  op = unary_op("softmax");
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", -3), CT_OK);
  same_refusal(op, xn, &x, 1, CT_ERR_OUT_OF_RANGE);
  ct_op_free(op);
  op = unary_op("transpose");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "axis", (const int64_t[]){0, 0}, 2), CT_OK);
  same_refusal(op, xn, &x, 1, CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "axis", (const int64_t[]){0}, 1), CT_OK);
  same_refusal(op, xn, &x, 1, CT_ERR_SHAPE);
  ct_op_free(op);
  op = many_op("concat", 2);
  same_refusal(op, xs4, xy2, 2, CT_ERR_SHAPE);
  ct_op_free(op);
  op = many_op("sum", 2);
  same_refusal(op, xs4, xy2, 2, CT_ERR_SHAPE);
  ct_op_free(op);
  ct_tensor_free(x);
  ct_tensor_free(y);
}
END_TEST

static Suite *cuda_suite(void) {
  Suite *s = suite_create("cuda_ops_reduce");
  CT_ADD_TEST(s, sum_matches_the_cpu_exactly);
  CT_ADD_TEST(s, mean_matches_the_cpu_and_an_empty_mean_is_nan);
  CT_ADD_TEST(s, reduce_sum_matches_the_cpu);
  CT_ADD_TEST(s, softmax_matches_the_cpu);
  CT_ADD_TEST(s, transpose_matches_the_cpu_exactly_in_every_size);
  CT_ADD_TEST(s, concat_matches_the_cpu_exactly_in_every_size);
  CT_ADD_TEST(s, reduce_and_shape_errors_are_the_cpus);
  return s;
}

#endif /* CORTEN_TEST_CUDA */



CT_GPU_TEST_MAIN(NULL, cuda_suite)
