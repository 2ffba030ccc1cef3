/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the CUDA kernel of matmul on a GPU, against the CPU's kernel: float32 within a
 * tolerance (cuBLAS sums in another order), float16 and bfloat16 against a float32 reference,
 * a non-default stream, and the CPU's shape errors; the profiler's device time of CUDA ops. Without a GPU the suite reports itself
 * skipped (77); the no-device checks of the op kernels run in test_cuda_ops.c. */
#define _GNU_SOURCE /* mkstemp */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <corten/corten.h>

#include "cuda_ops_util.h"

#ifdef CORTEN_TEST_CUDA

/* ---- matmul ---- */

static ct_op *mm_op(bool tx, bool ty) {
  ct_op *op = binary_op("matmul");
  ck_assert_int_eq(ct_op_set_attr_bool(op, "transpose_x", tx), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "transpose_y", ty), CT_OK);
  return op;
}

static const struct {
  ct_ddim x, y;
  bool tx, ty;
} mshapes[] = {
    {{2, {3, 4}}, {2, {4, 5}}, false, false},
    {{2, {4, 3}}, {2, {4, 5}}, true, false},
    {{2, {3, 4}}, {2, {5, 4}}, false, true},
    {{2, {4, 3}}, {2, {5, 4}}, true, true},
    {{1, {4}}, {2, {4, 5}}, false, false},          /* rank-1 X */
    {{2, {3, 4}}, {1, {4}}, false, false},          /* rank-1 Y */
    {{1, {4}}, {1, {4}}, false, false},             /* dot product */
    {{3, {2, 3, 4}}, {2, {4, 5}}, false, false},    /* batch folds into rows */
    {{3, {2, 3, 4}}, {3, {2, 4, 5}}, false, false}, /* strided batch */
    {{3, {2, 4, 3}}, {2, {4, 5}}, true, false},     /* shared Y, transposed X */
    {{2, {3, 4}}, {3, {2, 4, 5}}, false, false},    /* shared X */
    {{4, {2, 1, 3, 4}}, {3, {3, 4, 5}}, false, false}, /* broadcast batch */
    {{4, {2, 1, 3, 4}}, {4, {1, 3, 5, 4}}, false, true},
    {{2, {3, 0}}, {2, {0, 4}}, false, false},       /* k = 0: zeros */
    {{2, {0, 4}}, {2, {4, 5}}, false, false},       /* empty result */
    {{2, {33, 70}}, {2, {70, 65}}, false, false},
};

START_TEST(matmul_float32_matches_the_cpu) {
  for (size_t k = 0; k < sizeof mshapes / sizeof mshapes[0]; k++) {
    ct_op *op = mm_op(mshapes[k].tx, mshapes[k].ty);
    ct_tensor *in[2] = {host_values(mshapes[k].x, CT_FLOAT32, -1, 1, 1 + (unsigned)k),
                        host_values(mshapes[k].y, CT_FLOAT32, -1, 1, 50 + (unsigned)k)};
    ct_tensor *cpu = run_at(op, xy, in, 2, ct_cpu(), NULL);
    ct_tensor *gpu = run_at(op, xy, in, 2, ct_cuda(0), NULL);
    char what[32];
    snprintf(what, sizeof what, "matmul shapes #%zu", k);
    assert_close(gpu, cpu, 1e-5, 1e-4, what);
    ct_tensor_free(cpu);
    ct_tensor_free(gpu);
    ct_tensor_free(in[0]);
    ct_tensor_free(in[1]);
    ct_op_free(op);
  }
}
END_TEST

/* float16 / bfloat16: against the CPU's float32 matmul of the same (converted) values; the GPU
 * accumulates in float and rounds the result to the half type once. */
static void half_matmul(ct_dtype dt, double rel) {
  const char *xn[] = {"X"};
  for (size_t k = 0; k < sizeof mshapes / sizeof mshapes[0]; k++) {
    ct_op *op = mm_op(mshapes[k].tx, mshapes[k].ty);
    ct_tensor *in[2] = {host_values(mshapes[k].x, dt, -1, 1, 1 + (unsigned)k),
                        host_values(mshapes[k].y, dt, -1, 1, 50 + (unsigned)k)};
    ct_op *to32 = unary_op("cast");
    ck_assert_int_eq(ct_op_set_attr_int(to32, "dtype", CT_FLOAT32), CT_OK);
    ct_tensor *in32[2] = {run_at(to32, xn, &in[0], 1, ct_cpu(), NULL),
                          run_at(to32, xn, &in[1], 1, ct_cpu(), NULL)};
    ct_tensor *want = run_at(op, xy, in32, 2, ct_cpu(), NULL);
    ct_tensor *gpu = run_at(op, xy, in, 2, ct_cuda(0), NULL);
    ck_assert_int_eq(ct_tensor_dtype(gpu), dt);
    char what[48];
    snprintf(what, sizeof what, "matmul %s shapes #%zu", ct_dtype_name(dt), k);
    assert_close(gpu, want, rel, rel, what);
    ct_tensor *all[] = {in[0], in[1], in32[0], in32[1], want, gpu};
    for (size_t i = 0; i < 6; i++) ct_tensor_free(all[i]);
    ct_op_free(to32);
    ct_op_free(op);
  }
}

START_TEST(matmul_float16_matches_a_float32_reference) { half_matmul(CT_FLOAT16, 4e-3); }
END_TEST

START_TEST(matmul_bfloat16_matches_a_float32_reference) { half_matmul(CT_BFLOAT16, 2e-2); }
END_TEST

START_TEST(matmul_runs_on_a_non_default_stream) {
  ct_stream *st = ct_stream_new(ct_cuda(0));
  ck_assert_ptr_nonnull(st);
  ck_assert_int_eq(ct_stream_set_current(st), CT_OK);
  ct_op *op = mm_op(false, false);
  ct_tensor *in[2] = {host_values(CT_DIMS(2, 64, 32), CT_FLOAT32, -1, 1, 1),
                      host_values(CT_DIMS(2, 32, 16), CT_FLOAT32, -1, 1, 2)};
  ct_tensor *cpu = run_at(op, xy, in, 2, ct_cpu(), NULL);
  ct_tensor *gpu = run_at(op, xy, in, 2, ct_cuda(0), NULL);
  assert_close(gpu, cpu, 1e-5, 1e-4, "matmul on a stream");
  ck_assert_int_eq(ct_stream_synchronize(st), CT_OK);
  ck_assert_int_eq(ct_stream_set_current(ct_stream_default(ct_cuda(0))), CT_OK);
  ct_stream_free(st);
  ct_tensor_free(cpu);
  ct_tensor_free(gpu);
  ct_tensor_free(in[0]);
  ct_tensor_free(in[1]);
  ct_op_free(op);
}
END_TEST

START_TEST(matmul_shape_errors_are_the_cpus) {
  ct_op *op = mm_op(false, false);
  ct_tensor *in[2] = {host_values(CT_DIMS(3, 4), CT_FLOAT32, -1, 1, 1),
                      host_values(CT_DIMS(5, 6), CT_FLOAT32, -1, 1, 2)};
  ct_status st;
  ck_assert_ptr_null(run_at(op, xy, in, 2, ct_cuda(0), &st));
  ck_assert_int_eq(st, CT_ERR_SHAPE);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "inner dims 4 and 5 differ"));
  ct_tensor_free(in[0]);
  ct_tensor_free(in[1]);
  ct_op_free(op);
}
END_TEST

/* ---- The profiler's device time (corten/profile.h) ---- */

/* An executor at cuda:0 runs matmul [512, 512] x [512, 512] then relu; a profile of two runs
 * gives each op and run its kernels' device time from CUDA events: positive, the relu after the
 * matmul on the device (one stream), both inside their run's device span, the matmul (268M
 * flops) longer than the relu (256K elements); the table gets a device column and the Chrome
 * trace a device track. Event times are read in 0.5 us steps: 2 us of slack. */
START_TEST(a_profile_times_cuda_ops_with_device_events) {
  ct_scope *s = ct_scope_new();
  ct_tensor *x = host_values(CT_DIMS(512, 512), CT_FLOAT32, -1, 1, 7);
  ct_tensor *y = host_values(CT_DIMS(512, 512), CT_FLOAT32, -1, 1, 8);
  ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, "x")), x, ct_cuda(0)), CT_OK);
  ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, "y")), y, ct_cuda(0)), CT_OK);
  ct_program *p = ct_program_new();
  ct_op *mm = ct_op_new("matmul"), *relu = ct_op_new("relu");
  ck_assert_int_eq(ct_op_set_input(mm, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(mm, "Y", "y"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(mm, "Out", "m"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(relu, "X", "m"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(relu, "Out", "r"), CT_OK);
  ck_assert_int_eq(ct_program_append(p, mm), CT_OK);
  ck_assert_int_eq(ct_program_append(p, relu), CT_OK);
  ct_executor *e = ct_executor_new(p, s, ct_cuda(0));
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(ct_executor_run(e), CT_OK); /* warm: cuBLAS loaded, outputs allocated */
  ct_profile *prof = ct_profile_start(CT_PROFILE_THREAD);
  ck_assert_ptr_nonnull(prof);
  for (int r = 0; r < 2; r++) ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ck_assert_int_eq(ct_profile_stop(prof), CT_OK);
  ck_assert_uint_eq(ct_profile_count(prof), 6);
  const int64_t slack = 2000;
  for (size_t r = 0; r < 2; r++) {
    ct_profile_event pm = profile_event(prof, 3 * r), pr = profile_event(prof, 3 * r + 1);
    ct_profile_event run = profile_event(prof, 3 * r + 2);
    ck_assert_str_eq(pm.type, "matmul");
    ck_assert_str_eq(pr.type, "relu");
    ck_assert_str_eq(run.type, "executor_run");
    ck_assert_int_gt(pm.device_dur_ns, 0);
    ck_assert_int_gt(pr.device_dur_ns, 0);
    ck_assert_int_ge(pm.device_start_ns, 0);
    ck_assert_int_ge(pr.device_start_ns + slack, pm.device_start_ns + pm.device_dur_ns);
    ck_assert_int_ge(pm.device_start_ns + slack, run.device_start_ns);
    ck_assert_int_le(pr.device_start_ns + pr.device_dur_ns,
                     run.device_start_ns + run.device_dur_ns + slack);
    ck_assert_int_gt(pm.device_dur_ns, pr.device_dur_ns);
  }
  if (profile_event(prof, 3).device_start_ns < profile_event(prof, 2).device_start_ns) {
    ck_abort_msg("the second run's device time starts before the first run's");
  }
  char table[4096];
  ck_assert_int_eq(ct_profile_table(prof, CT_PROFILE_BY_TOTAL, table, sizeof table, NULL), CT_OK);
  ck_assert_ptr_nonnull(strstr(table, "device ms"));
  ck_assert_ptr_nonnull(strstr(table, "(device: "));
  char path[] = "/tmp/corten_cuda_trace_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  ck_assert_int_eq(ct_profile_save_chrome_trace(prof, path), CT_OK);
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  static char trace[1 << 16];
  size_t n = fread(trace, 1, sizeof trace - 1, f);
  trace[n] = '\0';
  fclose(f);
  unlink(path);
  ck_assert_ptr_nonnull(strstr(trace, "\"cuda:0 (device time)\""));
  ck_assert_ptr_nonnull(strstr(trace, "\"cat\":\"device op\""));
  ct_profile_free(prof);
  ct_executor_free(e);
  ct_program_free(p);
  ct_tensor_free(x);
  ct_tensor_free(y);
  ct_scope_free(s);
}
END_TEST

static Suite *cuda_suite(void) {
  Suite *s = suite_create("cuda_ops_matmul");
  CT_ADD_TEST(s, matmul_float32_matches_the_cpu);
  CT_ADD_TEST(s, matmul_float16_matches_a_float32_reference);
  CT_ADD_TEST(s, matmul_bfloat16_matches_a_float32_reference);
  CT_ADD_TEST(s, matmul_runs_on_a_non_default_stream);
  CT_ADD_TEST(s, matmul_shape_errors_are_the_cpus);
  CT_ADD_TEST(s, a_profile_times_cuda_ops_with_device_events);
  return s;
}

#endif /* CORTEN_TEST_CUDA */



CT_GPU_TEST_MAIN(NULL, cuda_suite)
