/* SPDX-License-Identifier: Apache-2.0 */
/* Tests that the layer kernels (ops/cpu/norm.c, nn.c: batch_norm, layer_norm, gelu,
 * lookup_table_v2, dropout, arg_max and the gradients) split across corten's threads give the
 * same bytes in every output at 1, 2, 3 and 7 threads, at sizes large enough to split, with
 * values whose sums round differently in another order. The helpers are in op_util.h. */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "op_util.h"

static const int counts[] = {1, 2, 3, 7};

/* Values in [-50, 53) with fractions, in no order: float sums of them depend on the order. */
static double data_mixed(int64_t i) {
  return (float)((double)((uint64_t)(i + 1) * 2654435761u % 10007) / 97.0 - 50.0);
}
static double data_pos(int64_t i) { return 0.5 + (double)(i % 13) * 0.25; }

/* An op of type with the (slot, variable) pairs of list (NULL-ended; a slot that starts with
 * '>' is an output). */
static ct_op *op_with(const char *type, ...) {
  ct_op *op = new_op(type);
  va_list ap;
  va_start(ap, type);
  for (const char *slot; (slot = va_arg(ap, const char *)) != NULL;) {
    const char *var = va_arg(ap, const char *);
    ct_status s = slot[0] == '>' ? ct_op_set_output(op, slot + 1, var)
                                 : ct_op_set_input(op, slot, var);
    ck_assert_int_eq(s, CT_OK);
  }
  va_end(ap);
  return op;
}

/* Runs op over s at each thread count and checks that each of the n_out variables outs holds
 * the same bytes every time; leaves the thread count at its default. */
static void check_same(ct_scope *s, const ct_op *op, const char *const *outs, int n_out) {
  void *first[8] = {0};
  size_t bytes[8] = {0};
  for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
    ct_set_num_threads(counts[k]);
    run(op, s);
    for (int o = 0; o < n_out; o++) {
      const ct_tensor *t = tensor_of(s, outs[o]);
      const void *p = ct_tensor_data(t, ct_tensor_dtype(t));
      ck_assert_ptr_nonnull(p);
      size_t n = (size_t)ct_tensor_numel(t) * ct_dtype_size(ct_tensor_dtype(t));
      if (k == 0) {
        bytes[o] = n;
        first[o] = xmalloc((int64_t)n, 1);
        memcpy(first[o], p, n);
        continue;
      }
      ck_assert_uint_eq(n, bytes[o]);
      ck_assert_msg(memcmp(first[o], p, n) == 0, "%s of %s at %d threads differs from 1 thread",
                    outs[o], ct_op_type(op), counts[k]);
    }
  }
  for (int o = 0; o < n_out; o++) free(first[o]);
  ct_set_num_threads(0);
}

/* check_same over op's outputs, then over its grad op g's (which read them); frees both ops. */
static void check_pair(ct_scope *s, ct_op *op, const char *const *outs, int n_out, ct_op *g,
                       const char *const *gouts, int n_gout) {
  check_same(s, op, outs, n_out);
  check_same(s, g, gouts, n_gout);
  ct_op_free(g);
  ct_op_free(op);
}

/* batch_norm over [8, 16, 40, 40] (two channels a piece at most): training and its gradient,
 * float32 and float64. */
START_TEST(batch_norm_and_grad_same_at_every_count) {
  static const char *const outs[] = {"y", "mo", "vo", "sm", "sv"};
  static const char *const gouts[] = {"dx", "dsc", "dbi"};
  static const ct_dtype dts[] = {CT_FLOAT32, CT_FLOAT64};
  for (int d = 0; d < 2; d++) {
    ct_scope *s = ct_scope_new();
    put_fn(s, "x", dts[d], CT_DIMS(8, 16, 40, 40), data_mixed);
    put_fn(s, "dy", dts[d], CT_DIMS(8, 16, 40, 40), data_unary);
    put_fn(s, "sc", dts[d], CT_DIMS(16), data_pos);
    put_fn(s, "bi", dts[d], CT_DIMS(16), data_unary);
    put_fn(s, "rm", dts[d], CT_DIMS(16), data_unary);
    put_fn(s, "rv", dts[d], CT_DIMS(16), data_pos);
    ct_op *op = op_with("batch_norm", "X", "x", "Scale", "sc", "Bias", "bi", "Mean", "rm",
                        "Variance", "rv", ">Y", "y", ">MeanOut", "mo", ">VarianceOut", "vo",
                        ">SavedMean", "sm", ">SavedVariance", "sv", NULL);
    ct_op *g = op_with("batch_norm_grad", "X", "x", "Scale", "sc", "Bias", "bi", "SavedMean",
                       "sm", "SavedVariance", "sv", "Y@GRAD", "dy", ">X@GRAD", "dx",
                       ">Scale@GRAD", "dsc", ">Bias@GRAD", "dbi", NULL);
    check_pair(s, op, outs, 5, g, gouts, 3);
    ct_scope_free(s);
  }
}
END_TEST

/* layer_norm over [600, 300] (rows split), its gradient (X@GRAD by rows, Scale@GRAD and
 * Bias@GRAD by columns, each a sum over the 600 rows). */
START_TEST(layer_norm_and_grad_same_at_every_count) {
  static const char *const outs[] = {"y", "mean", "var"};
  static const char *const gouts[] = {"dx", "dsc", "dbi"};
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(600, 300), data_mixed);
  put_fn(s, "dy", CT_FLOAT32, CT_DIMS(600, 300), data_unary);
  put_fn(s, "sc", CT_FLOAT32, CT_DIMS(300), data_pos);
  put_fn(s, "bi", CT_FLOAT32, CT_DIMS(300), data_unary);
  ct_op *op = op_with("layer_norm", "X", "x", "Scale", "sc", "Bias", "bi", ">Y", "y", ">Mean",
                      "mean", ">Variance", "var", NULL);
  ct_op *g = op_with("layer_norm_grad", "X", "x", "Scale", "sc", "Bias", "bi", "Mean", "mean",
                     "Variance", "var", "Y@GRAD", "dy", ">X@GRAD", "dx", ">Scale@GRAD", "dsc",
                     ">Bias@GRAD", "dbi", NULL);
  check_pair(s, op, outs, 3, g, gouts, 3);
  ct_scope_free(s);
}
END_TEST

START_TEST(gelu_and_grad_same_at_every_count) {
  static const char *const outs[] = {"out"}, *const gouts[] = {"dx"};
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(20001), data_mixed);
  put_fn(s, "d", CT_FLOAT32, CT_DIMS(20001), data_unary);
  for (int a = 0; a < 2; a++) {
    ct_op *op = op_with("gelu", "X", "x", ">Out", "out", NULL);
    ct_op *g = op_with("gelu_grad", "X", "x", "Out@GRAD", "d", ">X@GRAD", "dx", NULL);
    ck_assert_int_eq(ct_op_set_attr_bool(op, "approximate", a), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_bool(g, "approximate", a), CT_OK);
    check_pair(s, op, outs, 1, g, gouts, 1);
  }
  ct_scope_free(s);
}
END_TEST

static double data_id(int64_t i) { return (double)((uint64_t)i * 7919 % 1999); }

/* W [2000, 64], 6000 ids with repeats and padding: the lookup splits over ids, its gradient over
 * rows of W (a row's repeated ids add in the ids' order). */
START_TEST(lookup_and_grad_same_at_every_count) {
  static const char *const outs[] = {"out"}, *const gouts[] = {"dw"};
  static const ct_dtype ids_dt[] = {CT_INT64, CT_INT32};
  for (int k = 0; k < 2; k++) {
    ct_scope *s = ct_scope_new();
    put_fn(s, "w", CT_FLOAT32, CT_DIMS(2000, 64), data_mixed);
    put_fn(s, "ids", ids_dt[k], CT_DIMS(6000), data_id);
    put_fn(s, "d", CT_FLOAT32, CT_DIMS(6000, 64), data_mixed);
    ct_op *op = op_with("lookup_table_v2", "W", "w", "Ids", "ids", ">Out", "out", NULL);
    ct_op *g = op_with("lookup_table_v2_grad", "W", "w", "Ids", "ids", "Out@GRAD", "d",
                       ">W@GRAD", "dw", NULL);
    ck_assert_int_eq(ct_op_set_attr_int(op, "padding_idx", 5), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_int(g, "padding_idx", 5), CT_OK);
    check_pair(s, op, outs, 1, g, gouts, 1);
    ct_scope_free(s);
  }
}
END_TEST

/* dropout over 300001 elements (training, fixed seed; and test mode), its gradient. */
START_TEST(dropout_and_grad_same_at_every_count) {
  static const char *const outs[] = {"out", "mask"}, *const gouts[] = {"dx"};
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT32, CT_DIMS(300001), data_mixed);
  put_fn(s, "d", CT_FLOAT32, CT_DIMS(300001), data_unary);
  for (int t = 0; t < 2; t++) {
    ct_op *op = op_with("dropout", "X", "x", ">Out", "out", ">Mask", "mask", NULL);
    ck_assert_int_eq(ct_op_set_attr_bool(op, "fix_seed", true), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_int(op, "seed", 17), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_bool(op, "is_test", t), CT_OK);
    ct_op *g = op_with("dropout_grad", "Out@GRAD", "d", "Mask", "mask", ">X@GRAD", "dx", NULL);
    check_pair(s, op, outs, 2, g, gouts, 1);
  }
  ct_scope_free(s);
}
END_TEST

/* arg_max along the last axis of [3000, 50] and the first of [50, 3000]. */
START_TEST(arg_max_same_at_every_count) {
  static const char *const outs[] = {"out"};
  ct_scope *s = ct_scope_new();
  for (int axis = 0; axis < 2; axis++) {
    put_fn(s, "x", CT_FLOAT32, axis ? CT_DIMS(3000, 50) : CT_DIMS(50, 3000), data_mixed);
    ct_op *op = op_with("arg_max", "X", "x", ">Out", "out", NULL);
    ck_assert_int_eq(ct_op_set_attr_int(op, "axis", axis), CT_OK);
    check_same(s, op, outs, 1);
    ct_op_free(op);
  }
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("threads_layers");
  CT_ADD_TEST(s, batch_norm_and_grad_same_at_every_count);
  CT_ADD_TEST(s, layer_norm_and_grad_same_at_every_count);
  CT_ADD_TEST(s, gelu_and_grad_same_at_every_count);
  CT_ADD_TEST(s, lookup_and_grad_same_at_every_count);
  CT_ADD_TEST(s, dropout_and_grad_same_at_every_count);
  CT_ADD_TEST(s, arg_max_same_at_every_count);
  return s;
}

CT_TEST_MAIN(make_suite)
