/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_cuda_layers.c: the CUDA kernels of batch_norm, layer_norm, gelu, lookup_table_v2,
 * dropout, arg_max and their gradients against their CPU kernels.
 *
 * On a GPU: each op runs at ct_cpu() and at ct_cuda(0) over copies of the same host inputs, and
 * every output is compared byte for byte (the norms' gradients, batch_norm with given
 * statistics, the lookup and its gradient, dropout's mask and values, arg_max: the CPU's
 * arithmetic in its order), within two float32 ulps for the norms' forward statistics from a
 * block's fold (FOLD_REL) and for gelu (CUDA's erf and tanh against the C library's). A bad id is refused with the CPU's message.
 *
 * Without a GPU: the registry holds these CUDA kernels in a CUDA build (none in a CPU-only
 * one); then the suite reports itself skipped (77). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "ops/defs.h"
#include "ops/op_impl.h"

#include "cuda_ops_util.h"
#include "op_util.h"

/* ---- Without a device ------------------------------------------------------------------------ */

static const kernel_key layer_kernels[] = {
    {"batch_norm", CT_FLOAT32}, {"batch_norm_grad", CT_FLOAT32},
    {"layer_norm", CT_FLOAT32}, {"layer_norm_grad", CT_FLOAT32},
    {"gelu", CT_FLOAT32},       {"gelu_grad", CT_FLOAT32},
    {"lookup_table_v2", CT_DTYPE_UNDEFINED}, {"lookup_table_v2_grad", CT_FLOAT32},
    {"dropout", CT_FLOAT32},    {"dropout_grad", CT_FLOAT32},
    {"arg_max", CT_FLOAT32},
};

START_TEST(absent_kernels_are_registered_for_cuda_in_a_cuda_build) {
  assert_cuda_kernels(layer_kernels, sizeof layer_kernels / sizeof layer_kernels[0]);
}
END_TEST

static Suite *absent_suite(void) {
  Suite *s = suite_create("cuda_layers_absent");
  CT_ADD_TEST(s, absent_kernels_are_registered_for_cuda_in_a_cuda_build);
  return s;
}

/* ---- On a GPU ------------------------------------------------------------------------------ */

#ifdef CORTEN_TEST_CUDA

/* ---- batch_norm, layer_norm ------------------------------------------------------------------ */

static const struct {
  ct_ddim x;
  int64_t c;
  const char *layout;
} bn_cases[] = {
    {{4, {2, 3, 4, 5}}, 3, "NCHW"}, {{4, {2, 4, 5, 3}}, 3, "NHWC"},
    {{2, {7, 6}}, 6, "NCHW"},       {{4, {8, 16, 9, 9}}, 16, "NCHW"},
    {{4, {2, 4, 24, 24}}, 4, "NCHW"}, /* planes of 576 */
    {{4, {2, 3, 40, 40}}, 3, "NCHW"}, /* planes of 1600: four floats a load in training */
    {{4, {2, 3, 33, 33}}, 3, "NCHW"}, /* planes of 1089 (odd): a training block walks each */
};

/* The forward kernels in training (batch_norm's batch statistics, layer_norm) sum across a
 * block in double in another order than the CPU: a float output may then differ in its last
 * bit (and by about a float ulp of the terms where they cancel). */
#define FOLD_REL 2.4e-7
#define FOLD_ABS 1e-6

START_TEST(batch_norm_and_its_gradient_match_the_cpu) {
  static const char *const ins[] = {"X", "Scale", "Bias", "Mean", "Variance"};
  static const char *const outs[] = {"Y", "MeanOut", "VarianceOut", "SavedMean",
                                     "SavedVariance"};
  static const char *const gins[] = {"X", "Scale", "Bias", "SavedMean", "SavedVariance",
                                     "Y@GRAD"};
  static const char *const gouts[] = {"X@GRAD", "Scale@GRAD", "Bias@GRAD"};
  for (size_t k = 0; k < sizeof bn_cases / sizeof bn_cases[0]; k++) {
    ct_ddim v = CT_DIMS(bn_cases[k].c);
    unsigned sd = 10 * (unsigned)k;
    ct_tensor *in[6] = {host_values(bn_cases[k].x, CT_FLOAT32, -2, 3, sd),
                        host_values(v, CT_FLOAT32, 0.5, 1.5, sd + 1),
                        host_values(v, CT_FLOAT32, -1, 1, sd + 2),
                        host_values(v, CT_FLOAT32, -1, 1, sd + 3),
                        host_values(v, CT_FLOAT32, 0.2, 2, sd + 4),
                        host_values(bn_cases[k].x, CT_FLOAT32, -1, 1, sd + 5)};
    for (int mode = 0; mode < 3; mode++) { /* training, is_test, use_global_stats */
      ct_op *op = named_op("batch_norm", ins, 5, outs, 5);
      ct_op *gop = named_op("batch_norm_grad", gins, 6, gouts, 3);
      for (int g = 0; g < 2; g++) {
        ct_op *o = g ? gop : op;
        ck_assert_int_eq(ct_op_set_attr_string(o, "data_layout", bn_cases[k].layout), CT_OK);
        ck_assert_int_eq(ct_op_set_attr_bool(o, "is_test", mode == 1), CT_OK);
        ck_assert_int_eq(ct_op_set_attr_bool(o, "use_global_stats", mode == 2), CT_OK);
      }
      char what[64];
      snprintf(what, sizeof what, "batch_norm case #%zu mode %d", k, mode);
      /* given statistics: elementwise, the same bits */
      places_agree(op, ins, in, 5, outs, 5, mode ? -1 : FOLD_REL, FOLD_ABS, what);
      /* The gradient from the CPU's saved statistics (the same bytes as the GPU's). */
      ct_tensor *saved[2];
      run_named(op, ins, in, 5, outs + 3, saved, 2, ct_cpu());
      ct_tensor *gin[6] = {in[0], in[1], in[2], saved[0], saved[1], in[5]};
      snprintf(what, sizeof what, "batch_norm_grad case #%zu mode %d", k, mode);
      places_agree(gop, gins, gin, 6, gouts, 3, -1, 0, what);
      free_all(saved, 2);
      ct_op_free(op);
      ct_op_free(gop);
    }
    free_all(in, 6);
  }
}
END_TEST

START_TEST(layer_norm_and_its_gradient_match_the_cpu) {
  static const char *const ins[] = {"X", "Scale", "Bias"}, *const outs[] = {"Y", "Mean",
                                                                           "Variance"};
  static const char *const gins[] = {"X", "Scale", "Bias", "Mean", "Variance", "Y@GRAD"};
  static const char *const gouts[] = {"X@GRAD", "Scale@GRAD", "Bias@GRAD"};
  /* rows in registers (8, 1000, 8192 floats: one to eight float4 a thread) and not (257, 1:
   * not a multiple of 4; 8196: too long) */
  const ct_ddim shapes[] = {CT_DIMS(2, 3, 8),  CT_DIMS(64, 257), CT_DIMS(5, 1),
                            CT_DIMS(3, 1000),  CT_DIMS(2, 8192), CT_DIMS(2, 8196)};
  const int64_t axes[] = {2, 1, 1, 1, 1, 1};
  for (size_t k = 0; k < sizeof axes / sizeof axes[0]; k++) {
    ct_ddim x = shapes[k], v = CT_DIMS(x.d[x.rank - 1]);
    unsigned sd = 20 * (unsigned)k;
    ct_tensor *in[6] = {host_values(x, CT_FLOAT32, -2, 3, sd),
                        host_values(v, CT_FLOAT32, 0.5, 1.5, sd + 1),
                        host_values(v, CT_FLOAT32, -1, 1, sd + 2), NULL, NULL,
                        host_values(x, CT_FLOAT32, -1, 1, sd + 3)};
    for (int affine = 0; affine < 2; affine++) {
      size_t n_in = affine ? 3 : 1;
      ct_op *op = named_op("layer_norm", ins, n_in, outs, 3);
      ck_assert_int_eq(ct_op_set_attr_int(op, "begin_norm_axis", axes[k]), CT_OK);
      char what[64];
      snprintf(what, sizeof what, "layer_norm case #%zu affine %d", k, affine);
      places_agree(op, ins, in, n_in, outs, 3, FOLD_REL, FOLD_ABS, what);
      ct_tensor *stats[2];
      run_named(op, ins, in, n_in, outs + 1, stats, 2, ct_cpu());
      in[3] = stats[0];
      in[4] = stats[1];
      /* Without Scale and Bias: X, Mean, Variance, Y@GRAD -> X@GRAD only. */
      const char *const gins_plain[] = {"X", "Mean", "Variance", "Y@GRAD"};
      ct_tensor *gin_plain[4] = {in[0], in[3], in[4], in[5]};
      ct_op *gop = affine ? named_op("layer_norm_grad", gins, 6, gouts, 3)
                          : named_op("layer_norm_grad", gins_plain, 4, gouts, 1);
      ck_assert_int_eq(ct_op_set_attr_int(gop, "begin_norm_axis", axes[k]), CT_OK);
      snprintf(what, sizeof what, "layer_norm_grad case #%zu affine %d", k, affine);
      places_agree(gop, affine ? gins : gins_plain, affine ? in : gin_plain, affine ? 6 : 4,
                   gouts, affine ? 3 : 1, -1, 0, what);
      free_all(stats, 2);
      in[3] = in[4] = NULL;
      ct_op_free(op);
      ct_op_free(gop);
    }
    free_all(in, 6);
  }
}
END_TEST

/* ---- gelu, lookup_table_v2, dropout, arg_max ------------------------------------------------ */

START_TEST(gelu_and_its_gradient_match_the_cpu) {
  static const char *const ins[] = {"X", "Out@GRAD"}, *const out[] = {"Out"};
  static const char *const gout[] = {"X@GRAD"};
  ct_tensor *in[2] = {host_values(CT_DIMS(3, 1000), CT_FLOAT32, -6, 6, 1),
                      host_values(CT_DIMS(3, 1000), CT_FLOAT32, -1, 1, 2)};
  for (int t = 0; t < 2; t++) {
    ct_op *op = named_op("gelu", ins, 1, out, 1);
    ct_op *gop = named_op("gelu_grad", ins, 2, gout, 1);
    ck_assert_int_eq(ct_op_set_attr_bool(op, "approximate", t), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_bool(gop, "approximate", t), CT_OK);
    places_agree(op, ins, in, 1, out, 1, 2.5e-7, 1e-37, t ? "gelu tanh" : "gelu");
    places_agree(gop, ins, in, 2, gout, 1, 2.5e-7, 1e-37, t ? "gelu_grad tanh" : "gelu_grad");
    ct_op_free(op);
    ct_op_free(gop);
  }
  free_all(in, 2);
}
END_TEST

/* ids [3, 40] over 50 rows (many repeats), padding none (int64 ids) or row 7 (int32 ids);
 * float32 and float64 W. */
START_TEST(lookup_and_its_gradient_match_the_cpu_exactly) {
  static const char *const ins[] = {"W", "Ids", "Out@GRAD"}, *const out[] = {"Out"};
  static const char *const gout[] = {"W@GRAD"};
  for (int pad = 0; pad < 2; pad++) {
    for (int dt = 0; dt < 2; dt++) {
      ct_tensor *in[3] = {host_values(CT_DIMS(50, 24), dt ? CT_FLOAT64 : CT_FLOAT32, -1, 1, 3),
                          host_values(CT_DIMS(3, 40), pad ? CT_INT32 : CT_INT64, 0, 50, 4),
                          host_values(CT_DIMS(3, 40, 24), CT_FLOAT32, -1, 1, 5)};
      ct_op *op = named_op("lookup_table_v2", ins, 2, out, 1);
      ct_op *gop = named_op("lookup_table_v2_grad", ins, 3, gout, 1);
      ck_assert_int_eq(ct_op_set_attr_int(op, "padding_idx", pad ? 7 : -1), CT_OK);
      ck_assert_int_eq(ct_op_set_attr_int(gop, "padding_idx", pad ? 7 : -1), CT_OK);
      places_agree(op, ins, in, 2, out, 1, -1, 0, "lookup_table_v2");
      if (!dt) places_agree(gop, ins, in, 3, gout, 1, -1, 0, "lookup_table_v2_grad");
      ct_op_free(op);
      ct_op_free(gop);
      free_all(in, 3);
    }
  }
}
END_TEST

START_TEST(a_bad_id_is_refused_with_the_cpus_message) {
  static const char *const ins[] = {"W", "Ids"}, *const out[] = {"Out"};
  ct_tensor *in[2] = {host_values(CT_DIMS(5, 3), CT_FLOAT32, -1, 1, 3),
                      host_values(CT_DIMS(4), CT_INT64, 5, 6, 4)};
  ct_op *op = named_op("lookup_table_v2", ins, 2, out, 1);
  char msg[2][512];
  for (int k = 0; k < 2; k++) {
    ct_status st;
    ct_tensor *o = run_at(op, ins, in, 2, k ? ct_cuda(0) : ct_cpu(), &st);
    ck_assert_ptr_null(o);
    ck_assert_int_eq(st, CT_ERR_OUT_OF_RANGE);
    snprintf(msg[k], sizeof msg[k], "%s", ct_last_error());
  }
  ck_assert_str_eq(msg[0], msg[1]);
  ct_op_free(op);
  free_all(in, 2);
}
END_TEST

START_TEST(dropout_and_its_gradient_match_the_cpu_exactly) {
  static const char *const ins[] = {"X", "Out@GRAD", "Mask"};
  static const char *const outs[] = {"Out", "Mask"}, *const gout[] = {"X@GRAD"};
  ct_tensor *in[3] = {host_values(CT_DIMS(7, 1001), CT_FLOAT32, -2, 2, 6),
                      host_values(CT_DIMS(7, 1001), CT_FLOAT32, -1, 1, 7), NULL};
  for (int mode = 0; mode < 3; mode++) { /* upscale, downgrade, test */
    ct_op *op = named_op("dropout", ins, 1, outs, 2);
    ct_op *gop = named_op("dropout_grad", ins + 1, 2, gout, 1);
    for (int g = 0; g < 2; g++) {
      ct_op *o = g ? gop : op;
      ck_assert_int_eq(ct_op_set_attr_float(o, "dropout_prob", 0.35), CT_OK);
      ck_assert_int_eq(ct_op_set_attr_bool(o, "fix_seed", true), CT_OK);
      ck_assert_int_eq(ct_op_set_attr_int(o, "seed", 1234), CT_OK);
      ck_assert_int_eq(ct_op_set_attr_bool(o, "is_test", mode == 2), CT_OK);
      ck_assert_int_eq(ct_op_set_attr_string(o, "dropout_implementation",
                                             mode == 1 ? "downgrade_in_infer"
                                                       : "upscale_in_train"),
                       CT_OK);
    }
    places_agree(op, ins, in, 1, outs, 2, -1, 0, "dropout");
    run_named(op, ins, in, 1, outs + 1, &in[2], 1, ct_cpu());
    places_agree(gop, ins + 1, in + 1, 2, gout, 1, -1, 0, "dropout_grad");
    ct_tensor_free(in[2]);
    in[2] = NULL;
    ct_op_free(op);
    ct_op_free(gop);
  }
  free_all(in, 2);
}
END_TEST

/* Input Seed (int32 [1], read on the device) draws the CPU's mask, whatever the attributes. */
START_TEST(dropout_seed_input_matches_the_cpu) {
  static const char *const ins[] = {"X", "Seed"}, *const outs[] = {"Out", "Mask"};
  ct_tensor *in[2] = {host_values(CT_DIMS(5, 999), CT_FLOAT32, -2, 2, 6),
                      host_values(CT_DIMS(1), CT_INT32, 4321, 4322, 7)};
  ct_op *op = named_op("dropout", ins, 2, outs, 2);
  ck_assert_int_eq(ct_op_set_attr_float(op, "dropout_prob", 0.4), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "fix_seed", false), CT_OK);
  places_agree(op, ins, in, 2, outs, 2, -1, 0, "dropout");
  ct_op_free(op);
  free_all(in, 2);
}
END_TEST

START_TEST(arg_max_matches_the_cpu_exactly) {
  static const char *const ins[] = {"X"}, *const out[] = {"Out"};
  ct_tensor *in[1] = {host_values(CT_DIMS(6, 33, 10), CT_FLOAT32, -1, 1, 8)};
  float *x = ct_tensor_mutable_data(in[0], CT_FLOAT32, ct_cpu());
  x[5] = NAN;
  x[40] = x[50]; /* a tie along axis 1 */
  for (int k = 0; k < 5; k++) {
    ct_op *op = named_op("arg_max", ins, 1, out, 1);
    ck_assert_int_eq(ct_op_set_attr_int(op, "axis", k < 3 ? k : -1), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_bool(op, "flatten", k == 4), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", k == 3 ? CT_INT32 : CT_INT64), CT_OK);
    places_agree(op, ins, in, 1, out, 1, -1, 0, "arg_max");
    ct_op_free(op);
  }
  free_all(in, 1);
}
END_TEST

static Suite *cuda_suite(void) {
  Suite *s = suite_create("cuda_layers");
  CT_ADD_TEST(s, absent_kernels_are_registered_for_cuda_in_a_cuda_build);
  CT_ADD_TEST(s, batch_norm_and_its_gradient_match_the_cpu);
  CT_ADD_TEST(s, layer_norm_and_its_gradient_match_the_cpu);
  CT_ADD_TEST(s, gelu_and_its_gradient_match_the_cpu);
  CT_ADD_TEST(s, lookup_and_its_gradient_match_the_cpu_exactly);
  CT_ADD_TEST(s, a_bad_id_is_refused_with_the_cpus_message);
  CT_ADD_TEST(s, dropout_and_its_gradient_match_the_cpu_exactly);
  CT_ADD_TEST(s, dropout_seed_input_matches_the_cpu);
  CT_ADD_TEST(s, arg_max_matches_the_cpu_exactly);
  return s;
}

#endif /* CORTEN_TEST_CUDA */

CT_GPU_TEST_MAIN(absent_suite, cuda_suite)
