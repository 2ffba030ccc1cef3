/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the ops that make values from attributes alone, on the CPU: fill_constant in every
 * dtype (ranges, rounding, bad shapes), and uniform_random and gaussian_random: bits that follow
 * a Philox4x32-10 reference written here, the same bits for the same seed, ranges, moments and
 * normality, in float32, float64, float16 and bfloat16, and the bad bounds they refuse. Each
 * test runs in its own process. The helpers are in op_util.h. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "op_util.h"

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
  for (int a = 0; a < N_ALL_DTYPES; a++) {
    ct_dtype dt = all_dtypes[a];
    double v = dt == CT_BOOL ? 1 : -3;
    if (dt == CT_UINT8) v = 200;
    if (dt == CT_UINT16 || dt == CT_UINT32 || dt == CT_UINT64) v = 60000;
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

static Suite *ops_random_suite(void) {
  Suite *s = suite_create("ops_random");
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
  return s;
}

CT_TEST_MAIN(ops_random_suite)
