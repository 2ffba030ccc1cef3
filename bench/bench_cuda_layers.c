/* SPDX-License-Identifier: Apache-2.0 */
/* bench/bench_cuda_layers.c: the layer kernels on the GPU (softmax, layer_norm, batch_norm in
 * training and with given statistics) against a device-to-device copy of their input's bytes,
 * the fewest bytes such a kernel moves (its input read once, its output written once): the
 * ratio is how far the kernel is from the device's bandwidth. Inputs are uniform random on the
 * device (never constants: a constant row can run faster than real data). Rows "cuda layer
 * ..." of corten_bench's cuda group; skipped without a device. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <corten/corten.h>

#include "bench_cuda.h"
#include "bench_util.h"

static const char *const layer_rows[] = {
    "cuda softmax 16384x4096 float32",
    "cuda layer_norm 16384x4096 float32",
    "cuda batch_norm train 64x256x56x56 float32",
    "cuda batch_norm infer 64x256x56x56 float32",
};
#define NLAYERS (sizeof layer_rows / sizeof layer_rows[0])

void bench_cuda_layer_skip(const char *note) {
  for (size_t i = 0; i < NLAYERS; i++) bench_skip(layer_rows[i], note);
}

#ifdef CORTEN_BENCH_CUDA

static const char *const base_name = "cudaMemcpy D2D of the input";

/* Variable name of s: uniform random in [lo, hi) on cuda:0. */
static ct_status random_dev(ct_scope *s, const char *name, const int64_t *shape, size_t rank,
                            double lo, double hi, int seed) {
  ct_op *op = ct_op_new("uniform_random");
  if (op == NULL) return ct_last_status();
  ct_status st = ct_op_set_output(op, "Out", name);
  if (st == CT_OK) st = ct_op_set_attr_ints(op, "shape", shape, rank);
  if (st == CT_OK) st = ct_op_set_attr_float(op, "min", lo);
  if (st == CT_OK) st = ct_op_set_attr_float(op, "max", hi);
  if (st == CT_OK) st = ct_op_set_attr_int(op, "seed", seed);
  if (st == CT_OK) st = ct_op_run(op, s, ct_cuda(0));
  ct_op_free(op);
  return st;
}

/* Times the one-op program of op (owned) over s against a copy of the variable x's bytes. */
static void time_layer(const char *row, ct_scope *s, ct_op *op, int quick, int reps) {
  ct_program *p = ct_program_new();
  ct_executor *e = NULL;
  void *dst = NULL;
  const ct_tensor *x = ct_var_get_tensor(ct_scope_find_var(s, "x"));
  size_t bytes = x != NULL ? (size_t)ct_tensor_numel(x) * sizeof(float) : 0;
  if (p != NULL && ct_program_append(p, op) == CT_OK) {
    op = NULL;
    e = ct_executor_new(p, s, ct_cuda(0));
  }
  ct_op_free(op);
  if (e == NULL || ct_executor_run(e) != CT_OK || ct_device_synchronize(ct_cuda(0)) != CT_OK ||
      bytes == 0 || cudaMalloc(&dst, bytes) != cudaSuccess) {
    fprintf(stderr, "bench_cuda: %s: %s\n", row, ct_last_error());
    bench_record(row, NAN, base_name, NAN, "ms");
  } else {
    op_arg a = {.exec = e}, b = {.dst = dst, .src = ct_tensor_data(x, CT_FLOAT32),
                                 .bytes = bytes};
    double t[2];
    bench_cuda_pair(row, base_name, bench_cuda_exec_runs, &a, bench_cuda_copy_runs, &b,
                    quick ? 5 : 20, reps, t);
    double gb = 2.0 * (double)bytes / 1e9;
    printf("  bandwidth at the fewest bytes (input read, output written once): corten %.0f "
           "GB/s, cudaMemcpy %.0f GB/s: %.2fx (goal: 0.8x or more)\n", gb / (t[0] * 1e-9),
           gb / (t[1] * 1e-9), t[1] / t[0]);
  }
  cudaFree(dst);
  ct_executor_free(e);
  ct_program_free(p);
}

static ct_op *op_of(const char *type, const char *const *slots, const char *const *vars,
                    size_t n_in, const char *const *outs, const char *const *out_vars,
                    size_t n_out) {
  ct_op *op = ct_op_new(type);
  for (size_t i = 0; op != NULL && i < n_in; i++) {
    if (ct_op_set_input(op, slots[i], vars[i]) != CT_OK) ct_op_free(op), op = NULL;
  }
  for (size_t i = 0; op != NULL && i < n_out; i++) {
    if (ct_op_set_output(op, outs[i], out_vars[i]) != CT_OK) ct_op_free(op), op = NULL;
  }
  return op;
}

static void rows_rows(int quick, int reps) {
  const int64_t shape[2] = {16384, 4096}, v[1] = {4096};
  ct_scope *s = ct_scope_new();
  if (s == NULL || random_dev(s, "x", shape, 2, -4, 4, 1) != CT_OK ||
      random_dev(s, "g", v, 1, 0.5, 1.5, 2) != CT_OK || random_dev(s, "b", v, 1, -1, 1, 3) != CT_OK) {
    fprintf(stderr, "bench_cuda: %s\n", ct_last_error());
    bench_record(layer_rows[0], NAN, base_name, NAN, "ms");
    bench_record(layer_rows[1], NAN, base_name, NAN, "ms");
  } else {
    static const char *const x_slot[] = {"X"}, *const x_var[] = {"x"};
    static const char *const out_slot[] = {"Out"}, *const y_var[] = {"y"};
    time_layer(layer_rows[0], s, op_of("softmax", x_slot, x_var, 1, out_slot, y_var, 1), quick,
               reps);
    static const char *const ln_slots[] = {"X", "Scale", "Bias"}, *const ln_vars[] = {"x", "g",
                                                                                     "b"};
    static const char *const ln_outs[] = {"Y", "Mean", "Variance"};
    static const char *const ln_out_vars[] = {"y", "mean", "var"};
    ct_op *ln = op_of("layer_norm", ln_slots, ln_vars, 3, ln_outs, ln_out_vars, 3);
    if (ln != NULL) ct_op_set_attr_int(ln, "begin_norm_axis", 1);
    time_layer(layer_rows[1], s, ln, quick, reps);
  }
  ct_scope_free(s);
  ct_cuda_empty_cache();
}

static void batch_norm_rows(int quick, int reps) {
  const int64_t shape[4] = {64, 256, 56, 56}, c[1] = {256};
  ct_scope *s = ct_scope_new();
  if (s == NULL || random_dev(s, "x", shape, 4, -2, 3, 4) != CT_OK ||
      random_dev(s, "g", c, 1, 0.5, 1.5, 5) != CT_OK || random_dev(s, "b", c, 1, -1, 1, 6) != CT_OK ||
      random_dev(s, "mean", c, 1, -1, 1, 7) != CT_OK ||
      random_dev(s, "var", c, 1, 0.2, 2, 8) != CT_OK) {
    fprintf(stderr, "bench_cuda: %s\n", ct_last_error());
    bench_record(layer_rows[2], NAN, base_name, NAN, "ms");
    bench_record(layer_rows[3], NAN, base_name, NAN, "ms");
  } else {
    static const char *const slots[] = {"X", "Scale", "Bias", "Mean", "Variance"};
    static const char *const vars[] = {"x", "g", "b", "mean", "var"};
    static const char *const outs[] = {"Y", "MeanOut", "VarianceOut", "SavedMean",
                                       "SavedVariance"};
    static const char *const out_vars[] = {"y", "mean_out", "var_out", "saved_mean",
                                           "saved_var"};
    for (int test = 0; test < 2; test++) {
      ct_op *op = op_of("batch_norm", slots, vars, 5, outs, out_vars, 5);
      if (op != NULL) ct_op_set_attr_bool(op, "is_test", test);
      time_layer(layer_rows[2 + test], s, op, quick, reps);
    }
  }
  ct_scope_free(s);
  ct_cuda_empty_cache();
}

void bench_cuda_layer_rows(int quick, int reps) {
  rows_rows(quick, reps);
  batch_norm_rows(quick, reps);
}

#endif /* CORTEN_BENCH_CUDA */
