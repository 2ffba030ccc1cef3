/* SPDX-License-Identifier: Apache-2.0 */
/* bench/bench_cuda.h: what the GPU row files share (bench_cuda.c defines it): the timed
 * argument and the two timed loops, corten's prepared program and a device-to-device copy. */
#ifndef CORTEN_BENCH_CUDA_H
#define CORTEN_BENCH_CUDA_H

#ifdef CORTEN_BENCH_CUDA
#include <stddef.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <corten/corten.h>

typedef struct op_arg {
  ct_executor *exec; /* corten: the prepared program at cuda:0 */
  /* baseline: a device-to-device copy of `bytes`, or the GEMM C = A B of n x n matrices */
  void *dst;
  const void *src;
  size_t bytes;
  cublasHandle_t handle;
  const void *a, *b;
  void *c;
  int n;
  cudaDataType type;
  ct_tensor *d; /* the expression row's */
  const ct_expr *e;
  int failed;
} op_arg;

/* corten: iters runs of the program; the device is idle before and after the batch. */
void bench_cuda_exec_runs(void *arg, size_t iters);
/* The baseline: iters copies of `bytes` from src to dst on the device. */
void bench_cuda_copy_runs(void *arg, size_t iters);
/* Times corten (fa over a) and the baseline (fb over b) in turns, batches of iters, and records
 * the row in ms; t gets both medians in ns (NAN for a side that failed). */
void bench_cuda_pair(const char *row, const char *base_name, void (*fa)(void *, size_t),
                     op_arg *a, void (*fb)(void *, size_t), op_arg *b, size_t iters, int reps,
                     double t[2]);
#endif

#endif /* CORTEN_BENCH_CUDA_H */
