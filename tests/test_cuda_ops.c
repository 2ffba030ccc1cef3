/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the CUDA kernels of the built-in ops.
 *
 * On a GPU: the elementwise ops, the activations, scale, cast, assign, reshape, fill_constant and
 * the random ops, each CUDA kernel against its CPU kernel on the same inputs, run through
 * ct_op_run at ct_cuda(0) and at ct_cpu() over copies of one host tensor (cuda_ops_util.h).
 * Exact where the arithmetic is the same (elementwise float32, scale, casts, fill and the random
 * ops, which are bit-identical by design); within a tolerance for expf / tanhf / logf. float16
 * and bfloat16 have no CPU kernels: their reference is computed here, in float with half.h's
 * rounding. matmul, the reductions and shape ops, and the recurrent op are tested in
 * test_cuda_ops_matmul.c, test_cuda_ops_reduce.c and test_cuda_ops_rnn.c.
 *
 * Without a GPU: the registry holds exactly the CUDA kernels the build promises (none without
 * CUDA), cuBLAS loads in a CUDA build, and an op run at a CUDA place is refused without touching
 * its output; then the suite reports itself skipped (77).
 *
 * As in test_cuda.c, the device count is asked in a child process: Check forks per test and a
 * CUDA context does not survive fork. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "ops/half.h"
#include "ops/op_impl.h"
#ifdef CORTEN_TEST_CUDA
#include "ops/cuda/cuda_kernels.h"
#include "ops/cuda/launch.h"
#endif

#include "cuda_ops_util.h"

/* ---- Without a device ------------------------------------------------------------------------ */

static const kernel_key cuda_kernels[] = {
    {"recurrent", CT_DTYPE_UNDEFINED},
    {"elementwise_add", CT_FLOAT32}, {"elementwise_add", CT_FLOAT16},
    {"elementwise_add", CT_BFLOAT16}, {"elementwise_sub", CT_FLOAT32},
    {"elementwise_sub", CT_FLOAT16}, {"elementwise_sub", CT_BFLOAT16},
    {"elementwise_mul", CT_FLOAT32}, {"elementwise_mul", CT_FLOAT16},
    {"elementwise_mul", CT_BFLOAT16}, {"elementwise_div", CT_FLOAT32},
    {"elementwise_div", CT_FLOAT16}, {"elementwise_div", CT_BFLOAT16},
    {"relu", CT_FLOAT32}, {"sigmoid", CT_FLOAT32}, {"tanh", CT_FLOAT32}, {"exp", CT_FLOAT32},
    {"log", CT_FLOAT32}, {"scale", CT_FLOAT32}, {"cast", CT_FLOAT32}, {"cast", CT_FLOAT16},
    {"cast", CT_BFLOAT16}, {"matmul", CT_FLOAT32}, {"matmul", CT_FLOAT16},
    {"matmul", CT_BFLOAT16}, {"assign", CT_DTYPE_UNDEFINED}, {"reshape", CT_DTYPE_UNDEFINED},
    {"fill_constant", CT_DTYPE_UNDEFINED}, {"uniform_random", CT_FLOAT32},
    {"uniform_random", CT_FLOAT16}, {"uniform_random", CT_BFLOAT16},
    {"uniform_random", CT_FLOAT64}, {"gaussian_random", CT_FLOAT32},
    {"gaussian_random", CT_FLOAT16}, {"gaussian_random", CT_BFLOAT16},
    {"gaussian_random", CT_FLOAT64}, {"sum", CT_FLOAT32}, {"sum", CT_FLOAT64},
    {"mean", CT_FLOAT32}, {"mean", CT_FLOAT64}, {"reduce_sum", CT_FLOAT32},
    {"reduce_sum", CT_FLOAT64}, {"softmax", CT_FLOAT32}, {"softmax", CT_FLOAT64},
    {"transpose", CT_DTYPE_UNDEFINED}, {"concat", CT_DTYPE_UNDEFINED},
    {"clip", CT_FLOAT32}, {"flatten", CT_DTYPE_UNDEFINED}, {"squeeze", CT_DTYPE_UNDEFINED},
    {"unsqueeze", CT_DTYPE_UNDEFINED},
};


static ct_kernel_fn cuda_kernel(const char *type, ct_dtype dtype) {
  const ct__opdef *d = ct__op_lookup(type);
  ck_assert_msg(d != NULL, "op type %s", type);
  return atomic_load(&((ct__opdef *)d)->kernels[CT_DEVICE_CUDA][dtype]);
}

START_TEST(absent_registry_holds_the_cuda_kernels_of_this_build) {
  size_t n = sizeof cuda_kernels / sizeof cuda_kernels[0], found = 0;
  for (size_t i = 0; i < n; i++) {
    ct_kernel_fn fn = cuda_kernel(cuda_kernels[i].type, cuda_kernels[i].dtype);
    found += fn != NULL;
#ifdef CORTEN_TEST_CUDA
    ck_assert_msg(fn != NULL, "no CUDA kernel for %s/%s", cuda_kernels[i].type,
                  ct_dtype_name(cuda_kernels[i].dtype));
#endif
  }
#ifdef CORTEN_TEST_CUDA
  ck_assert_uint_eq(found, n);
#else
  /* A CPU-only build has no CUDA kernel at all. */
  static const char *const builtin_types[] = {
      "elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div", "relu",
      "sigmoid", "tanh", "exp", "log", "scale", "cast", "assign", "matmul", "fill_constant",
      "uniform_random", "gaussian_random", "reshape", "transpose", "concat", "sum", "mean",
      "reduce_sum", "softmax", "recurrent"};
  ck_assert_uint_eq(found, 0);
  for (size_t i = 0; i < sizeof builtin_types / sizeof builtin_types[0]; i++) {
    const ct__opdef *d = ct__op_lookup(builtin_types[i]);
    if (d == NULL) continue;
    for (int t = 0; t < CT__N_DTYPES; t++) {
      ck_assert_ptr_null(atomic_load(&((ct__opdef *)d)->kernels[CT_DEVICE_CUDA][t]));
    }
  }
#endif
}
END_TEST

START_TEST(absent_cuda_kernels_are_not_registered_for_other_dtypes) {
#ifdef CORTEN_TEST_CUDA
  /* float64 and integer elementwise, and the half types for activations, stay CPU-only. */
  ck_assert_ptr_null(cuda_kernel("elementwise_add", CT_FLOAT64));
  ck_assert_ptr_null(cuda_kernel("elementwise_add", CT_INT32));
  ck_assert_ptr_null(cuda_kernel("elementwise_add", CT_DTYPE_UNDEFINED));
  ck_assert_ptr_null(cuda_kernel("relu", CT_FLOAT16));
  ck_assert_ptr_null(cuda_kernel("matmul", CT_FLOAT64));
  ck_assert_ptr_null(cuda_kernel("cast", CT_INT32));
  ck_assert_ptr_null(cuda_kernel("transpose", CT_FLOAT32));
  ck_assert_ptr_null(cuda_kernel("sum", CT_INT32));
  ck_assert_ptr_null(cuda_kernel("reduce_sum", CT_INT64));
  ck_assert_ptr_null(cuda_kernel("softmax", CT_FLOAT16));
  ck_assert_ptr_null(cuda_kernel("mean", CT_DTYPE_UNDEFINED));
  /* reshape and its kin only share memory: the CUDA place runs the CPU kernel itself. */
  static const char *const views[] = {"reshape", "flatten", "squeeze", "unsqueeze"};
  for (size_t i = 0; i < sizeof views / sizeof views[0]; i++) {
    ck_assert_ptr_eq(cuda_kernel(views[i], CT_DTYPE_UNDEFINED),
                     atomic_load(&((ct__opdef *)ct__op_lookup(views[i]))
                                      ->kernels[CT_DEVICE_CPU][CT_DTYPE_UNDEFINED]));
  }
#else
  ck_assert_ptr_null(cuda_kernel("reshape", CT_DTYPE_UNDEFINED));
#endif
}
END_TEST

START_TEST(absent_cublas_loads_in_a_cuda_build) {
#ifdef CORTEN_TEST_CUDA
  ck_assert_msg(ct__cuda_cublas_available() == CT_OK, "%s", ct_last_error());
  /* Loaded once: asking again gives the same answer. */
  ck_assert_int_eq(ct__cuda_cublas_available(), CT_OK);
#else
  ck_assert(!ct_cuda_is_built());
#endif
}
END_TEST

START_TEST(absent_op_at_a_cuda_place_is_refused_and_changes_nothing) {
  ct_scope *s = ct_scope_new();
  ct_op *op = ct_op_new("fill_constant");
  ck_assert_int_eq(ct_op_set_output(op, "Out", "out"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", (const int64_t[]){2, 3}, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "value", 1.5), CT_OK);
  ct_tensor *out = ct_var_tensor(ct_scope_var(s, "out"));
  const float old[2] = {7, 8};
  ck_assert_int_eq(ct_tensor_set_value(out, old, CT_DIMS(2), CT_FLOAT32, ct_cpu()), CT_OK);
  ck_assert_int_eq(ct_op_run(op, s, ct_cuda(0)),
                   ct_cuda_is_built() ? CT_ERR_DEVICE : CT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "fill_constant"));
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "cuda:0"));
  ck_assert(ct_ddim_equal(ct_tensor_dims(out), CT_DIMS(2)));
  ck_assert(ct_place_equal(ct_tensor_place(out), ct_cpu()));
  const float *v = ct_tensor_data(out, CT_FLOAT32);
  ck_assert(v[0] == 7 && v[1] == 8);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static Suite *absent_suite(void) {
  Suite *s = suite_create("cuda_ops_absent");
  CT_ADD_TEST(s, absent_registry_holds_the_cuda_kernels_of_this_build);
  CT_ADD_TEST(s, absent_cuda_kernels_are_not_registered_for_other_dtypes);
  CT_ADD_TEST(s, absent_cublas_loads_in_a_cuda_build);
  CT_ADD_TEST(s, absent_op_at_a_cuda_place_is_refused_and_changes_nothing);
  return s;
}

/* ---- On a GPU ------------------------------------------------------------------------------ */

#ifdef CORTEN_TEST_CUDA

static const char *const binary_types[] = {"elementwise_add", "elementwise_sub",
                                           "elementwise_mul", "elementwise_div"};

/* Shape pairs covering the broadcast plans: same shape, a row, a column against a row, a
 * middle dim, rank 0, extent 1 everywhere, and empty; the last is same-shape with a tail past
 * the 16-byte steps of the kernel (1003 = 4 x 250 + 3 = 8 x 125 + 3). */
static const struct {
  ct_ddim x, y;
} bshapes[] = {
    {{2, {3, 4}}, {2, {3, 4}}},       {{2, {3, 4}}, {1, {4}}},    {{2, {3, 1}}, {2, {1, 4}}},
    {{3, {2, 3, 4}}, {2, {3, 1}}},    {{0, {0}}, {1, {5}}},       {{1, {5}}, {0, {0}}},
    {{3, {2, 1, 4}}, {3, {1, 3, 1}}}, {{2, {1, 1}}, {1, {1}}},    {{2, {0, 3}}, {1, {3}}},
    {{4, {2, 3, 5, 7}}, {4, {2, 1, 5, 1}}}, {{1, {1003}}, {1, {1003}}},
};

START_TEST(elementwise_float32_matches_the_cpu_exactly) {
  for (size_t t = 0; t < 4; t++) {
    ct_op *op = binary_op(binary_types[t]);
    for (size_t k = 0; k < sizeof bshapes / sizeof bshapes[0]; k++) {
      ct_tensor *in[2] = {host_values(bshapes[k].x, CT_FLOAT32, -4, 4, 1 + (unsigned)k),
                          host_values(bshapes[k].y, CT_FLOAT32, 0.5, 3, 100 + (unsigned)k)};
      ct_tensor *cpu = run_at(op, xy, in, 2, ct_cpu(), NULL);
      ct_tensor *gpu = run_at(op, xy, in, 2, ct_cuda(0), NULL);
      char what[64];
      snprintf(what, sizeof what, "%s shapes #%zu", binary_types[t], k);
      assert_same_bytes(gpu, cpu, what);
      ct_tensor_free(cpu);
      ct_tensor_free(gpu);
      ct_tensor_free(in[0]);
      ct_tensor_free(in[1]);
    }
    ct_op_free(op);
  }
}
END_TEST

/* float16 / bfloat16: the reference applies the op in float to the converted inputs and rounds
 * once, which is what the kernel promises. */
static void half_binary(ct_dtype dt) {
  for (size_t t = 0; t < 4; t++) {
    ct_op *op = binary_op(binary_types[t]);
    for (size_t k = 0; k < sizeof bshapes / sizeof bshapes[0]; k++) {
      ct_tensor *in[2] = {host_values(bshapes[k].x, dt, -4, 4, 1 + (unsigned)k),
                          host_values(bshapes[k].y, dt, 0.5, 3, 100 + (unsigned)k)};
      ct_tensor *gpu = run_at(op, xy, in, 2, ct_cuda(0), NULL);
      /* The CPU's float32 kernel over the converted inputs, then rounded to dt. */
      ct_op *to32 = unary_op("cast"), *back = unary_op("cast");
      ck_assert_int_eq(ct_op_set_attr_int(to32, "dtype", CT_FLOAT32), CT_OK);
      ck_assert_int_eq(ct_op_set_attr_int(back, "dtype", dt), CT_OK);
      const char *xn[] = {"X"};
      ct_tensor *x32 = run_at(to32, xn, &in[0], 1, ct_cpu(), NULL);
      ct_tensor *y32 = run_at(to32, xn, &in[1], 1, ct_cpu(), NULL);
      ct_tensor *in32[2] = {x32, y32};
      ct_tensor *o32 = run_at(op, xy, in32, 2, ct_cpu(), NULL);
      ct_tensor *want = run_at(back, xn, &o32, 1, ct_cpu(), NULL);
      char what[64];
      snprintf(what, sizeof what, "%s %s shapes #%zu", binary_types[t], ct_dtype_name(dt), k);
      assert_same_bytes(gpu, want, what);
      ct_tensor *all[] = {gpu, x32, y32, o32, want, in[0], in[1]};
      for (size_t i = 0; i < 7; i++) ct_tensor_free(all[i]);
      ct_op_free(to32);
      ct_op_free(back);
    }
    ct_op_free(op);
  }
}

START_TEST(elementwise_float16_is_computed_in_float_and_rounded_once) { half_binary(CT_FLOAT16); }
END_TEST

START_TEST(elementwise_bfloat16_is_computed_in_float_and_rounded_once) {
  half_binary(CT_BFLOAT16);
}
END_TEST

/* Same-shape buffers that are not 16-byte aligned (views one element into the device tensors)
 * take the kernel's element-by-element loop: their result is the bytes of the same values in
 * fresh, aligned tensors (whose 16-byte loop the tests above hold to the CPU). */
START_TEST(elementwise_unaligned_views_give_the_aligned_bytes) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT16, CT_BFLOAT16};
  for (size_t a = 0; a < 3; a++) {
    ct_tensor *hx = host_values(CT_DIMS(1004, 1), types[a], -4, 4, 21 + (unsigned)a);
    ct_tensor *hy = host_values(CT_DIMS(1004, 1), types[a], 0.5, 3, 31 + (unsigned)a);
    ct_tensor *dx = ct_tensor_new(), *dy = ct_tensor_new();
    ck_assert_int_eq(ct_tensor_copy(dx, hx, ct_cuda(0)), CT_OK);
    ck_assert_int_eq(ct_tensor_copy(dy, hy, ct_cuda(0)), CT_OK);
    for (size_t t = 0; t < 4; t++) {
      ct_op *op = binary_op(binary_types[t]);
      /* Unaligned: views of rows [1, 1004) at cuda:0. */
      ct_scope *s = ct_scope_new();
      ck_assert_int_eq(ct_tensor_slice(ct_var_tensor(ct_scope_var(s, "X")), dx, 1, 1004), CT_OK);
      ck_assert_int_eq(ct_tensor_slice(ct_var_tensor(ct_scope_var(s, "Y")), dy, 1, 1004), CT_OK);
      ck_assert_msg(ct_op_run(op, s, ct_cuda(0)) == CT_OK, "%s", ct_last_error());
      ct_tensor *got = ct_tensor_new();
      ck_assert_int_eq(
          ct_tensor_copy(got, ct_var_get_tensor(ct_scope_find_var(s, "Out")), ct_cpu()), CT_OK);
      ct_scope_free(s);
      /* Aligned: the same rows copied into tensors of their own (run_at copies to the place). */
      ct_tensor *rx = ct_tensor_new(), *ry = ct_tensor_new();
      ck_assert_int_eq(ct_tensor_slice(rx, hx, 1, 1004), CT_OK);
      ck_assert_int_eq(ct_tensor_slice(ry, hy, 1, 1004), CT_OK);
      ct_tensor *in[2] = {rx, ry};
      ct_tensor *want = run_at(op, xy, in, 2, ct_cuda(0), NULL);
      char what[64];
      snprintf(what, sizeof what, "%s %s, unaligned", binary_types[t], ct_dtype_name(types[a]));
      assert_same_bytes(got, want, what);
      ct_tensor *all[] = {got, rx, ry, want};
      for (size_t i = 0; i < 4; i++) ct_tensor_free(all[i]);
      ct_op_free(op);
    }
    ct_tensor *all[] = {hx, hy, dx, dy};
    for (size_t i = 0; i < 4; i++) ct_tensor_free(all[i]);
  }
}
END_TEST

START_TEST(activations_match_the_cpu) {
  static const char *const types[] = {"relu", "sigmoid", "tanh", "exp", "log"};
  const char *xn[] = {"X"};
  for (size_t t = 0; t < 5; t++) {
    ct_op *op = unary_op(types[t]);
    ct_ddim shapes[] = {CT_DIMS(1000), CT_DIMS(), CT_DIMS(0, 4), CT_DIMS(3, 5)};
    for (size_t k = 0; k < 4; k++) {
      bool is_log = strcmp(types[t], "log") == 0;
      ct_tensor *x = host_values(shapes[k], CT_FLOAT32, is_log ? 1e-3 : -8, 8, (unsigned)k);
      ct_tensor *cpu = run_at(op, xn, &x, 1, ct_cpu(), NULL);
      ct_tensor *gpu = run_at(op, xn, &x, 1, ct_cuda(0), NULL);
      if (strcmp(types[t], "relu") == 0) {
        assert_same_bytes(gpu, cpu, "relu");
      } else {
        assert_close(gpu, cpu, 1e-6, 1e-7, types[t]);
      }
      ct_tensor_free(x);
      ct_tensor_free(cpu);
      ct_tensor_free(gpu);
    }
    ct_op_free(op);
  }
}
END_TEST

START_TEST(clip_matches_the_cpu_exactly_with_attributes_and_inputs) {
  ct_op *attrs = unary_op("clip"); /* relu6, as mobilenet's Clip imports */
  ck_assert_int_eq(ct_op_set_attr_float(attrs, "min", 0.0), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(attrs, "max", 6.0), CT_OK);
  ct_op *inputs = unary_op("clip");
  ck_assert_int_eq(ct_op_set_input(inputs, "Min", "Min"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(inputs, "Max", "Max"), CT_OK);
  ct_tensor *x = host_values(CT_DIMS(1031), CT_FLOAT32, -10, 10, 4);
  ((float *)ct_tensor_mutable_data(x, CT_FLOAT32, ct_cpu()))[7] = NAN;
  ct_tensor *in[3] = {x, host_values(CT_DIMS(), CT_FLOAT32, -2, -1, 5),
                      host_values(CT_DIMS(), CT_FLOAT32, 1, 3, 6)};
  const char *names[] = {"X", "Min", "Max"};
  for (int k = 0; k < 2; k++) {
    ct_op *op = k == 0 ? attrs : inputs;
    ct_tensor *cpu = run_at(op, names, in, k == 0 ? 1 : 3, ct_cpu(), NULL);
    ct_tensor *gpu = run_at(op, names, in, k == 0 ? 1 : 3, ct_cuda(0), NULL);
    assert_same_bytes(gpu, cpu, "clip"); /* NaN's bits included */
    ct_tensor_free(cpu);
    ct_tensor_free(gpu);
  }
  for (int k = 0; k < 3; k++) ct_tensor_free(in[k]);
  ct_op_free(attrs);
  ct_op_free(inputs);
}
END_TEST

START_TEST(scale_matches_the_cpu_exactly_both_bias_orders) {
  const char *xn[] = {"X"};
  for (int after = 0; after < 2; after++) {
    ct_op *op = unary_op("scale");
    ck_assert_int_eq(ct_op_set_attr_float(op, "scale", 1.7), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_float(op, "bias", -0.3), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_bool(op, "bias_after_scale", after != 0), CT_OK);
    ct_tensor *x = host_values(CT_DIMS(517), CT_FLOAT32, -100, 100, 9);
    ct_tensor *cpu = run_at(op, xn, &x, 1, ct_cpu(), NULL);
    ct_tensor *gpu = run_at(op, xn, &x, 1, ct_cuda(0), NULL);
    assert_same_bytes(gpu, cpu, "scale");
    ct_tensor_free(x);
    ct_tensor_free(cpu);
    ct_tensor_free(gpu);
    ct_op_free(op);
  }
}
END_TEST

START_TEST(cast_between_float_types_matches_the_cpu_exactly) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT16, CT_BFLOAT16};
  const char *xn[] = {"X"};
  for (size_t a = 0; a < 3; a++) {
    for (size_t b = 0; b < 3; b++) {
      ct_op *op = unary_op("cast");
      ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", types[b]), CT_OK);
      /* Values past float16's range and below its normal range round as the CPU rounds. */
      ct_tensor *x = host_values(CT_DIMS(4, 251), types[a], -70000, 70000, 3);
      float *p32 = NULL;
      if (types[a] == CT_FLOAT32) {
        p32 = ct_tensor_mutable_data(x, CT_FLOAT32, ct_cpu());
        p32[0] = 1e-6f;
        p32[1] = -3e-8f;
        p32[2] = 65519.f;
        p32[3] = 65520.f;
        p32[4] = NAN;
        p32[5] = INFINITY;
      }
      ct_tensor *cpu = run_at(op, xn, &x, 1, ct_cpu(), NULL);
      ct_tensor *gpu = run_at(op, xn, &x, 1, ct_cuda(0), NULL);
      char what[64];
      snprintf(what, sizeof what, "cast %s to %s", ct_dtype_name(types[a]),
               ct_dtype_name(types[b]));
      assert_same_bytes(gpu, cpu, what);
      ct_tensor_free(x);
      ct_tensor_free(cpu);
      ct_tensor_free(gpu);
      ct_op_free(op);
    }
  }
}
END_TEST

START_TEST(cast_to_an_integer_on_cuda_is_unsupported_and_changes_nothing) {
  ct_op *op = unary_op("cast");
  ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", CT_INT32), CT_OK);
  ct_scope *s = ct_scope_new();
  ct_tensor *x = host_values(CT_DIMS(4), CT_FLOAT32, 0, 1, 1);
  ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, "X")), x, ct_cuda(0)), CT_OK);
  ct_tensor *out = ct_var_tensor(ct_scope_var(s, "Out"));
  ck_assert_int_eq(ct_op_run(op, s, ct_cuda(0)), CT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "int32"));
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "'X'"));
  ck_assert(!ct_tensor_has_memory(out));
  /* An integer input has no CUDA cast kernel at all. */
  ct_tensor *xi = host_values(CT_DIMS(4), CT_INT32, 0, 9, 1);
  ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, "X")), xi, ct_cuda(0)), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", CT_FLOAT32), CT_OK);
  ck_assert_int_eq(ct_op_run(op, s, ct_cuda(0)), CT_ERR_UNSUPPORTED);
  ck_assert(!ct_tensor_has_memory(out));
  ct_tensor_free(x);
  ct_tensor_free(xi);
  ct_scope_free(s);
  ct_op_free(op);
}
END_TEST

START_TEST(assign_copies_every_dtype_on_the_device) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT64, CT_INT32, CT_INT64, CT_FLOAT16};
  const char *xn[] = {"X"};
  ct_op *op = unary_op("assign");
  for (size_t a = 0; a < 5; a++) {
    ct_tensor *x = host_values(CT_DIMS(3, 7), types[a], -50, 50, 5);
    ct_tensor *gpu = run_at(op, xn, &x, 1, ct_cuda(0), NULL);
    assert_same_bytes(gpu, x, ct_dtype_name(types[a]));
    ct_tensor_free(gpu);
    ct_tensor_free(x);
  }
  ct_tensor *e = host_values(CT_DIMS(0, 2), CT_FLOAT32, 0, 1, 1);
  ct_tensor *gpu = run_at(op, xn, &e, 1, ct_cuda(0), NULL);
  ck_assert_int_eq(ct_tensor_numel(gpu), 0);
  ct_tensor_free(gpu);
  ct_tensor_free(e);
  ct_op_free(op);
}
END_TEST

START_TEST(reshape_on_cuda_shares_the_device_memory) {
  ct_op *op = unary_op("reshape");
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", (const int64_t[]){-1, 2}, 2), CT_OK);
  ct_scope *s = ct_scope_new();
  ct_tensor *x = host_values(CT_DIMS(3, 4), CT_FLOAT16, -1, 1, 2);
  ct_tensor *dx = ct_var_tensor(ct_scope_var(s, "X"));
  ck_assert_int_eq(ct_tensor_copy(dx, x, ct_cuda(0)), CT_OK);
  ck_assert_int_eq(ct_op_run(op, s, ct_cuda(0)), CT_OK);
  const ct_tensor *out = ct_var_get_tensor(ct_scope_find_var(s, "Out"));
  ck_assert(ct_tensor_shares_memory(out, dx));
  ck_assert(ct_ddim_equal(ct_tensor_dims(out), CT_DIMS(6, 2)));
  ck_assert(ct_place_equal(ct_tensor_place(out), ct_cuda(0)));
  ct_tensor_free(x);
  ct_scope_free(s);
  ct_op_free(op);
}
END_TEST

static ct_op *fill_op(const char *type, ct_dtype dt, const int64_t *shape, size_t rank) {
  ct_op *op = ct_op_new(type);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "Out"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", shape, rank), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", dt), CT_OK);
  return op;
}

START_TEST(fill_constant_matches_the_cpu_in_every_dtype) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16, CT_INT8,
                                   CT_UINT8,   CT_INT16,   CT_INT32,   CT_INT64,    CT_BOOL};
  for (size_t a = 0; a < sizeof types / sizeof types[0]; a++) {
    ct_op *op = fill_op("fill_constant", types[a], (const int64_t[]){5, 3}, 2);
    ck_assert_int_eq(ct_op_set_attr_float(op, "value", types[a] == CT_BOOL ? 1 : 3.0), CT_OK);
    if (types[a] >= CT_FLOAT16) {
      ck_assert_int_eq(ct_op_set_attr_float(op, "value", 0.1), CT_OK);
    }
    ct_tensor *cpu = run_at(op, NULL, NULL, 0, ct_cpu(), NULL);
    ct_tensor *gpu = run_at(op, NULL, NULL, 0, ct_cuda(0), NULL);
    assert_same_bytes(gpu, cpu, ct_dtype_name(types[a]));
    ct_tensor_free(cpu);
    ct_tensor_free(gpu);
    ct_op_free(op);
  }
  /* A value the dtype cannot hold is refused on the device as on the CPU. */
  ct_op *op = fill_op("fill_constant", CT_INT8, (const int64_t[]){2}, 1);
  ck_assert_int_eq(ct_op_set_attr_float(op, "value", 300), CT_OK);
  ct_status st;
  ck_assert_ptr_null(run_at(op, NULL, NULL, 0, ct_cuda(0), &st));
  ck_assert_int_eq(st, CT_ERR_OUT_OF_RANGE);
  ct_op_free(op);
}
END_TEST

/* Sizes that end inside a Philox block, and bounds where rounding to the dtype needs the clamp. */
static void random_case(const char *type, ct_dtype dt, int64_t n, double a, double b,
                        int64_t seed) {
  ct_op *op = fill_op(type, dt, &n, 1);
  bool uni = strcmp(type, "uniform_random") == 0;
  ck_assert_int_eq(ct_op_set_attr_float(op, uni ? "min" : "mean", a), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, uni ? "max" : "std", b), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "seed", seed), CT_OK);
  ct_tensor *cpu = run_at(op, NULL, NULL, 0, ct_cpu(), NULL);
  ct_tensor *gpu = run_at(op, NULL, NULL, 0, ct_cuda(0), NULL);
  char what[96];
  snprintf(what, sizeof what, "%s %s n=%lld [%g, %g]", type, ct_dtype_name(dt), (long long)n, a,
           b);
  assert_same_bytes(gpu, cpu, what);
  ct_tensor_free(cpu);
  ct_tensor_free(gpu);
  ct_op_free(op);
}

START_TEST(uniform_random_is_bit_identical_to_the_cpu) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT16, CT_BFLOAT16, CT_FLOAT64};
  static const int64_t sizes[] = {1, 3, 4, 5, 1001, 65537};
  for (size_t a = 0; a < 4; a++) {
    for (size_t k = 0; k < 6; k++) random_case("uniform_random", types[a], sizes[k], -1, 1, 42);
    random_case("uniform_random", types[a], 4099, 0.999, 1.0, 7);   /* clamps onto max's side */
    random_case("uniform_random", types[a], 4099, -3.14159, 2.71828, 1ll << 40);
    random_case("uniform_random", types[a], 16, 2.5, 2.5, 3);        /* min == max */
    random_case("uniform_random", types[a], 0, -1, 1, 3);
  }
}
END_TEST

START_TEST(gaussian_random_is_bit_identical_to_the_cpu) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT16, CT_BFLOAT16, CT_FLOAT64};
  static const int64_t sizes[] = {1, 3, 4, 5, 1001, 65537};
  for (size_t a = 0; a < 4; a++) {
    for (size_t k = 0; k < 6; k++) random_case("gaussian_random", types[a], sizes[k], 0, 1, 42);
    random_case("gaussian_random", types[a], 999, 10, 0.25, -5);
    random_case("gaussian_random", types[a], 7, 1, 0, 11);
  }
}
END_TEST

static Suite *cuda_suite(void) {
  Suite *s = suite_create("cuda_ops");
  CT_ADD_TEST(s, absent_registry_holds_the_cuda_kernels_of_this_build);
  CT_ADD_TEST(s, absent_cublas_loads_in_a_cuda_build);
  CT_ADD_TEST(s, elementwise_float32_matches_the_cpu_exactly);
  CT_ADD_TEST(s, elementwise_float16_is_computed_in_float_and_rounded_once);
  CT_ADD_TEST(s, elementwise_bfloat16_is_computed_in_float_and_rounded_once);
  CT_ADD_TEST(s, elementwise_unaligned_views_give_the_aligned_bytes);
  CT_ADD_TEST(s, activations_match_the_cpu);
  CT_ADD_TEST(s, clip_matches_the_cpu_exactly_with_attributes_and_inputs);
  CT_ADD_TEST(s, scale_matches_the_cpu_exactly_both_bias_orders);
  CT_ADD_TEST(s, cast_between_float_types_matches_the_cpu_exactly);
  CT_ADD_TEST(s, cast_to_an_integer_on_cuda_is_unsupported_and_changes_nothing);
  CT_ADD_TEST(s, assign_copies_every_dtype_on_the_device);
  CT_ADD_TEST(s, reshape_on_cuda_shares_the_device_memory);
  CT_ADD_TEST(s, fill_constant_matches_the_cpu_in_every_dtype);
  CT_ADD_TEST(s, uniform_random_is_bit_identical_to_the_cpu);
  CT_ADD_TEST(s, gaussian_random_is_bit_identical_to_the_cpu);
  return s;
}

#endif /* CORTEN_TEST_CUDA */



CT_GPU_TEST_MAIN(absent_suite, cuda_suite)
