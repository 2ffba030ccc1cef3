/* SPDX-License-Identifier: Apache-2.0 */
/* gelu, lookup_table_v2, dropout and arg_max, and the gradients of the first three: forward
 * values against closed forms and naive loops, every gradient against central finite
 * differences in float64 (grad_util.h), exact gradients where they are sums (lookup with
 * repeated ids, dropout's mask), dropout's mask (rate, seed, dtype independence, test modes),
 * arg_max's axes, ties and NaN, and the refusals. */
#include <corten/corten.h>

#include "grad_util.h"

/* ---- gelu ------------------------------------------------------------------------------------ */

static bool gelu_tanh;

static void gelu_attrs(ct_op *op) {
  ck_assert_int_eq(ct_op_set_attr_bool(op, "approximate", gelu_tanh), CT_OK);
}

START_TEST(gelu_forward_matches_closed_forms) {
  ct_scope *s = ct_scope_new();
  double x[9] = {-6, -2.5, -1, -0.25, 0, 0.25, 1, 2.5, 6};
  put(s, "x", CT_FLOAT64, CT_DIMS(9), x);
  for (int t = 0; t < 2; t++) {
    gelu_tanh = t;
    ct_op *op = op_x("gelu", "x", "out");
    gelu_attrs(op);
    run(op, s);
    const double *o = result(s, "out", CT_FLOAT64, CT_DIMS(9));
    for (int i = 0; i < 9; i++) {
      double u = sqrt(2 / acos(-1.0)) * (x[i] + 0.044715 * pow(x[i], 3));
      double want = t ? x[i] / (1 + exp(-2 * u)) : 0.5 * x[i] * erfc(-x[i] / sqrt(2.0));
      ck_assert_msg(fabs(o[i] - want) <= 1e-15 * (1 + fabs(want)), "gelu%s(%g) = %.17g, want %.17g",
                    t ? "_tanh" : "", x[i], o[i], want);
    }
    ct_op_free(op);
  }
  gelu_tanh = false;
  ct_scope_free(s);
}
END_TEST

START_TEST(gelu_grad_exact_and_tanh) {
  gelu_tanh = false;
  check_x_grad("gelu", gelu_attrs, CT_DIMS(3, 4));
  gelu_tanh = true;
  check_x_grad("gelu", gelu_attrs, CT_DIMS(3, 4));
  gelu_tanh = false;
}
END_TEST

START_TEST(gelu_f32_matches_f64) {
  const char *ins[] = {"x"}, *outs[] = {"out"};
  ct_ddim dims[] = {CT_DIMS(17)};
  ct_op *op = op_x("gelu", "x", "out");
  check_f32_matches_f64(op, ins, dims, 1, outs, 1);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "approximate", true), CT_OK);
  check_f32_matches_f64(op, ins, dims, 1, outs, 1);
  ct_op_free(op);
}
END_TEST

/* ---- lookup_table_v2 ------------------------------------------------------------------------- */

static int64_t lt_pad = -1;

static ct_op *lt_op(void) {
  ct_op *op = new_op("lookup_table_v2");
  ck_assert_int_eq(ct_op_set_input(op, "W", "w"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Ids", "ids"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "out"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "padding_idx", lt_pad), CT_OK);
  return op;
}

static const int64_t lt_ids[6] = {3, 0, 3, 4, 1, 3};
static const int32_t lt_ids32[6] = {3, 0, 3, 4, 1, 3};
static bool lt_int32; /* Ids as int32 (PaddlePaddle takes both) */

/* w [5, 3] and ids [2, 3] with a repeated id. */
static ct_scope *lt_scope(void) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "w", CT_DIMS(5, 3), 0.3);
  if (lt_int32) {
    put(s, "ids", CT_INT32, CT_DIMS(2, 3), lt_ids32);
  } else {
    put(s, "ids", CT_INT64, CT_DIMS(2, 3), lt_ids);
  }
  return s;
}

/* k 0..3: padding_idx none or 4, ids int64 or int32. */
START_TEST(lookup_gathers_rows_and_zeros_padding) {
  for (int k = 0; k < 4; k++) {
    lt_pad = k % 2 ? 4 : -1;
    lt_int32 = k >= 2;
    ct_scope *s = lt_scope();
    ct_op *op = lt_op();
    run(op, s);
    const double *o = result(s, "out", CT_FLOAT64, CT_DIMS(2, 3, 3)), *w = var_f64(s, "w");
    for (int i = 0; i < 6; i++) {
      for (int j = 0; j < 3; j++) {
        double want = lt_ids[i] == lt_pad ? 0.0 : w[lt_ids[i] * 3 + j];
        ck_assert(o[i * 3 + j] == want);
      }
    }
    ct_op_free(op);
    ct_scope_free(s);
  }
  lt_pad = -1;
  lt_int32 = false;
}
END_TEST

START_TEST(lookup_moves_any_dtype) {
  ct_scope *s = ct_scope_new();
  int32_t w[6] = {1, 2, 3, 4, 5, 6};
  int64_t ids[3] = {2, 0, 2};
  put(s, "w", CT_INT32, CT_DIMS(3, 2), w);
  put(s, "ids", CT_INT64, CT_DIMS(3), ids);
  ct_op *op = lt_op();
  run(op, s);
  const int32_t *o = result(s, "out", CT_INT32, CT_DIMS(3, 2));
  int32_t want[6] = {5, 6, 1, 2, 5, 6};
  for (int i = 0; i < 6; i++) ck_assert_int_eq(o[i], want[i]);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static void build_lt(ct_program *p) {
  ck_assert_int_eq(ct_program_append(p, lt_op()), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

/* W@GRAD row r = the sum of the loss weights of every output row that read r (id 3 three
 * times); the padding row and unread rows get 0. */
START_TEST(lookup_grad_adds_repeated_rows) {
  static const char *const params[] = {"w"};
  for (int k = 0; k < 4; k++) {
    lt_pad = k % 2 ? 3 : -1;
    lt_int32 = k >= 2;
    ct_scope *s = lt_scope();
    check_grads(s, build_lt, "loss", params, 1);
    const double *dw = var_f64(s, "w@GRAD");
    for (int r = 0; r < 5; r++) {
      for (int j = 0; j < 3; j++) {
        double want = 0;
        for (int i = 0; i < 6; i++) {
          if (lt_ids[i] == r && r != lt_pad) want += grad_weight(i * 3 + j);
        }
        ck_assert_msg(dw[r * 3 + j] == want, "dW[%d][%d] = %g, want %g", r, j, dw[r * 3 + j],
                      want);
      }
    }
    ct_scope_free(s);
  }
  lt_pad = -1;
  lt_int32 = false;
}
END_TEST

START_TEST(lookup_refusals_name_the_problem) {
  ct_scope *s = lt_scope();
  int64_t bad[2] = {1, 5};
  put(s, "ids", CT_INT64, CT_DIMS(2), bad);
  ct_op *op = lt_op();
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "'ids'", "element 1 is 5", "5 rows", NULL);
  int32_t ids32[2] = {1, -1};
  put(s, "ids", CT_INT32, CT_DIMS(2), ids32);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "'ids'", "element 1 is -1", "5 rows", NULL);
  float idsf[2] = {1, 2};
  put(s, "ids", CT_FLOAT32, CT_DIMS(2), idsf);
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "'ids'", "float32", "int64 or int32", "cast", NULL);
  put(s, "ids", CT_INT64, CT_DIMS(2), lt_ids);
  ck_assert_int_eq(ct_op_set_attr_int(op, "padding_idx", 5), CT_OK);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "padding_idx", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- dropout --------------------------------------------------------------------------------- */

static const char *do_impl = "upscale_in_train";
static bool do_test_mode;

static ct_op *do_op(int64_t seed) {
  ct_op *op = op_x("dropout", "x", "out");
  ck_assert_int_eq(ct_op_set_output(op, "Mask", "mask"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "dropout_prob", 0.3), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "fix_seed", true), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "seed", seed), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "is_test", do_test_mode), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "dropout_implementation", do_impl), CT_OK);
  return op;
}

/* Runs dropout(seed) over n elements of dtype dt and copies its mask into m. */
static void run_dropout(ct_dtype dt, int64_t n, int64_t seed, uint8_t *m) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", dt, CT_DIMS(n), data_unary);
  ct_op *op = do_op(seed);
  run(op, s);
  memcpy(m, result(s, "mask", CT_UINT8, CT_DIMS(n)), (size_t)n);
  const ct_tensor *xt = tensor_of(s, "x"), *ot = tensor_of(s, "out");
  for (int64_t i = 0; i < n; i++) {
    double x = get_elem(ct_tensor_data(xt, dt), dt, i);
    double o = get_elem(ct_tensor_data(ot, dt), dt, i);
    double want = m[i] ? (dt == CT_FLOAT32 ? (double)((float)x * (float)(1 / 0.7)) : x / 0.7) : 0;
    ck_assert_msg(m[i] <= 1 && fabs(o - want) <= 1e-15 * fabs(want), "out[%lld] = %g, want %g",
                  (long long)i, o, want);
  }
  ct_op_free(op);
  ct_scope_free(s);
}

/* 20000 draws keep 70% of the elements (to 1%); the mask depends on the seed, not the dtype. */
START_TEST(dropout_mask_rate_seed_and_dtype) {
  enum { N = 20000 };
  static uint8_t a[N], b[N], c[N];
  run_dropout(CT_FLOAT64, N, 7, a);
  run_dropout(CT_FLOAT32, N, 7, b);
  run_dropout(CT_FLOAT64, N, 8, c);
  int kept = 0, same = 0;
  for (int i = 0; i < N; i++) {
    kept += a[i];
    same += a[i] == c[i];
    ck_assert_int_eq(a[i], b[i]);
  }
  ck_assert_msg(abs(kept - 14000) < 200, "kept %d of %d", kept, N);
  ck_assert_msg(same < N * 7 / 10, "seeds 7 and 8 agree on %d of %d", same, N);
}
END_TEST

START_TEST(dropout_test_modes) {
  ct_scope *s = ct_scope_new();
  double x[4] = {1, -2, 3, 0.5};
  put(s, "x", CT_FLOAT64, CT_DIMS(4), x);
  do_test_mode = true;
  for (int k = 0; k < 2; k++) {
    do_impl = k ? "downgrade_in_infer" : "upscale_in_train";
    ct_op *op = do_op(1);
    run(op, s);
    const double *o = result(s, "out", CT_FLOAT64, CT_DIMS(4));
    const uint8_t *m = result(s, "mask", CT_UINT8, CT_DIMS(4));
    for (int i = 0; i < 4; i++) ck_assert(o[i] == (k ? x[i] * 0.7 : x[i]) && m[i] == 1);
    ct_op_free(op);
  }
  do_test_mode = false;
  do_impl = "upscale_in_train";
  ct_scope_free(s);
}
END_TEST

/* Training with downgrade_in_infer keeps X where the mask is 1; without fix_seed two runs draw
 * different masks. */
START_TEST(dropout_downgrade_and_fresh_seeds) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT64, CT_DIMS(256), data_unary);
  do_impl = "downgrade_in_infer";
  ct_op *op = do_op(3);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "fix_seed", false), CT_OK);
  run(op, s);
  uint8_t first[256];
  memcpy(first, result(s, "mask", CT_UINT8, CT_DIMS(256)), sizeof first);
  const double *o = var_f64(s, "out"), *x = var_f64(s, "x");
  for (int i = 0; i < 256; i++) ck_assert(o[i] == (first[i] ? x[i] : 0.0));
  run(op, s);
  ck_assert(memcmp(first, result(s, "mask", CT_UINT8, CT_DIMS(256)), sizeof first) != 0);
  ct_op_free(op);
  do_impl = "upscale_in_train";
  ct_scope_free(s);
}
END_TEST

/* Input Seed (one int32) overrides attributes seed and fix_seed: the mask of attribute seed 7,
 * whatever the attributes say, every run; another Seed draws another mask. */
START_TEST(dropout_seed_input_wins_over_the_attribute) {
  enum { N = 512 };
  static uint8_t want[N];
  run_dropout(CT_FLOAT64, N, 7, want);
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT64, CT_DIMS(N), data_unary);
  int32_t seed = 7;
  put(s, "seed", CT_INT32, CT_DIMS(1), &seed);
  for (int k = 0; k < 3; k++) {
    ct_op *op = do_op(3);
    ck_assert_int_eq(ct_op_set_input(op, "Seed", "seed"), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_bool(op, "fix_seed", k != 1), CT_OK);
    if (k == 2) {
      seed = 8;
      put(s, "seed", CT_INT32, CT_DIMS(1), &seed);
    }
    run(op, s);
    const uint8_t *m = result(s, "mask", CT_UINT8, CT_DIMS(N));
    ck_assert_int_eq(memcmp(m, want, N) == 0, k < 2);
    ct_op_free(op);
  }
  ct_scope_free(s);
}
END_TEST

static void build_do(ct_program *p) {
  ck_assert_int_eq(ct_program_append(p, do_op(11)), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

START_TEST(dropout_grad_follows_the_mask) {
  static const char *const params[] = {"x"};
  for (int k = 0; k < 3; k++) {
    do_impl = k == 1 ? "downgrade_in_infer" : "upscale_in_train";
    do_test_mode = k == 2;
    ct_scope *s = ct_scope_new();
    put_smooth(s, "x", CT_DIMS(4, 5), 0.3);
    check_grads(s, build_do, "loss", params, 1);
    const double *dx = var_f64(s, "x@GRAD");
    const uint8_t *m = result(s, "mask", CT_UINT8, CT_DIMS(4, 5));
    for (int i = 0; i < 20; i++) {
      double f = k == 0 ? 1 / 0.7 : 1.0;
      ck_assert(dx[i] == (m[i] ? grad_weight(i) * f : 0.0));
    }
    ct_scope_free(s);
  }
  do_impl = "upscale_in_train";
  do_test_mode = false;
}
END_TEST

START_TEST(dropout_refusals_name_the_problem) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(4), 0);
  ct_op *op = do_op(1);
  ck_assert_int_eq(ct_op_set_attr_float(op, "dropout_prob", 1.5), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "dropout_prob", "[0, 1]", NULL);
  ck_assert_int_eq(ct_op_set_attr_float(op, "dropout_prob", 0.5), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "dropout_implementation", "upscale"), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "dropout_implementation", "upscale_in_train", NULL);
  ck_assert_int_eq(ct_op_set_attr_string(op, "dropout_implementation", "upscale_in_train"),
                   CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Seed", "seed"), CT_OK);
  int64_t seed64 = 1;
  put(s, "seed", CT_INT64, CT_DIMS(1), &seed64);
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "input Seed", "'seed'", "int64", "one int32", NULL);
  int32_t seeds[2] = {1, 2};
  put(s, "seed", CT_INT32, CT_DIMS(2), seeds);
  run_fails(op, s, CT_ERR_SHAPE, "'seed'", "[2]", "one int32", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- arg_max --------------------------------------------------------------------------------- */

static ct_op *am_op(int64_t axis, bool keep, bool flatten, ct_dtype dt) {
  ct_op *op = op_x("arg_max", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", axis), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "keepdims", keep), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "flatten", flatten), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", dt), CT_OK);
  return op;
}

/* x [2, 3, 4] = put_smooth's values: each axis against a naive loop. */
START_TEST(arg_max_axes_match_naive_loops) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(2, 3, 4), 0.5);
  const double *x = var_f64(s, "x");
  int64_t d[3] = {2, 3, 4}, st[3] = {12, 4, 1};
  for (int axis = 0; axis < 3; axis++) {
    ct_op *op = am_op(axis - 3, axis == 1, false, CT_INT64);
    run(op, s);
    const int64_t *o = ct_tensor_data(tensor_of(s, "out"), CT_INT64);
    ck_assert_int_eq(ct_tensor_numel(tensor_of(s, "out")), 24 / d[axis]);
    ck_assert_int_eq(ct_tensor_dims(tensor_of(s, "out")).rank, axis == 1 ? 3 : 2);
    int64_t k = 0;
    for (int64_t i = 0; i < 24; i++) {
      if ((i / st[axis]) % d[axis] != 0) continue; /* the first element of each line */
      int64_t best = 0;
      for (int64_t j = 1; j < d[axis]; j++) {
        if (x[i + j * st[axis]] > x[i + best * st[axis]]) best = j;
      }
      ck_assert_int_eq(o[k++], best);
    }
    ct_op_free(op);
  }
  ct_scope_free(s);
}
END_TEST

START_TEST(arg_max_ties_nan_flatten_and_int32) {
  ct_scope *s = ct_scope_new();
  float x[6] = {1, 5, 5, 2, NAN, 3};
  put(s, "x", CT_FLOAT32, CT_DIMS(2, 3), x);
  ct_op *op = am_op(1, false, false, CT_INT32);
  run(op, s);
  const int32_t *o = result(s, "out", CT_INT32, CT_DIMS(2));
  ck_assert(o[0] == 1 && o[1] == 1);
  ct_op_free(op);
  int64_t xi[6] = {4, 9, 2, 9, 0, 1};
  put(s, "x", CT_INT64, CT_DIMS(2, 3), xi);
  op = am_op(0, true, true, CT_INT64);
  run(op, s);
  ck_assert(*(const int64_t *)result(s, "out", CT_INT64, CT_DIMS(1, 1)) == 1);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(arg_max_refusals_name_the_problem) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(2, 3), 0);
  ct_op *op = am_op(2, false, false, CT_INT64);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "axis", NULL);
  ct_op_free(op);
  op = am_op(1, false, false, CT_FLOAT32);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "dtype", "int64 or int32", NULL);
  ct_op_free(op);
  put_smooth(s, "x", CT_DIMS(2, 0), 0);
  op = am_op(1, false, false, CT_INT64);
  run_fails(op, s, CT_ERR_SHAPE, "no elements along the axis", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* arg_max has no gradient: a loss reached only through it is refused by the backward pass. */
START_TEST(arg_max_has_no_gradient) {
  static const char *const params[] = {"x"};
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, am_op(1, false, false, CT_INT64)), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("cast", "out", "outf")), CT_OK);
  append_weighted_loss(p, "outf", "loss");
  CT_ASSERT_FAILS(ct_program_append_backward(p, "loss", params, 1), CT_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(ct_last_error(), "arg_max") != NULL, "%s", ct_last_error());
  ct_program_free(p);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("grad_nn");
  CT_ADD_TEST(s, gelu_forward_matches_closed_forms);
  CT_ADD_TEST(s, gelu_grad_exact_and_tanh);
  CT_ADD_TEST(s, gelu_f32_matches_f64);
  CT_ADD_TEST(s, lookup_gathers_rows_and_zeros_padding);
  CT_ADD_TEST(s, lookup_moves_any_dtype);
  CT_ADD_TEST(s, lookup_grad_adds_repeated_rows);
  CT_ADD_TEST(s, lookup_refusals_name_the_problem);
  CT_ADD_TEST(s, dropout_mask_rate_seed_and_dtype);
  CT_ADD_TEST(s, dropout_test_modes);
  CT_ADD_TEST(s, dropout_downgrade_and_fresh_seeds);
  CT_ADD_TEST(s, dropout_seed_input_wins_over_the_attribute);
  CT_ADD_TEST(s, dropout_grad_follows_the_mask);
  CT_ADD_TEST(s, dropout_refusals_name_the_problem);
  CT_ADD_TEST(s, arg_max_axes_match_naive_loops);
  CT_ADD_TEST(s, arg_max_ties_nan_flatten_and_int32);
  CT_ADD_TEST(s, arg_max_refusals_name_the_problem);
  CT_ADD_TEST(s, arg_max_has_no_gradient);
  return s;
}

CT_TEST_MAIN(make_suite)
