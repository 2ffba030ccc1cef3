/* SPDX-License-Identifier: Apache-2.0 */
/* bench/bench_comm.c: corten_bench_comm, the collectives' benchmark, an MPI program that
 * corten_bench runs under `mpirun -n 2` (bench_comm_rows.c) and whose figures it records.
 *
 *   mpirun -n 2 corten_bench_comm [--quick]
 *   mpirun -n <GPUs> corten_bench_comm --nccl [--quick]    (bench_comm_nccl.c)
 *
 * For each size (one float32, where the fixed costs show: corten's header exchange and
 * dispatch; 4 MiB; 64 MiB): c_allreduce_sum run by an executor (corten's header
 * exchange, nonblocking MPI_Iallreduce and its polled wait included) against MPI_Allreduce called
 * directly on the same buffers, in alternating rounds so both see the same machine. Each round
 * starts after a barrier and times `iters` calls on rank 0; the medians over the rounds are
 * printed by rank 0 as "row<TAB>corten ns<TAB>MPI_Allreduce ns", one line per size. The program
 * initialises MPI itself, so corten leaves MPI's start and end to it. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "bench_comm.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double bench_comm_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

/* One size: 0, or 1 after printing why it failed. */
static int bench_size(const char *row, int64_t n, int rounds, int iters, int rank) {
  ct_scope *s = ct_scope_new();
  ct_op *op = ct_op_new("c_allreduce_sum");
  ct_program *p = ct_program_new();
  ct_executor *e = NULL;
  ct_tensor *x = s ? ct_var_tensor(ct_scope_var(s, "x")) : NULL;
  double *tc = calloc((size_t)rounds, sizeof *tc), *tb = calloc((size_t)rounds, sizeof *tb);
  int bad = s == NULL || op == NULL || p == NULL || x == NULL || tc == NULL || tb == NULL ||
            ct_comm_init_mpi(ct_scope_var(s, "comm")) != CT_OK ||
            ct_op_set_input(op, "X", "x") != CT_OK || ct_op_set_output(op, "Out", "out") != CT_OK ||
            ct_op_set_attr_string(op, "comm", "comm") != CT_OK ||
            ct_tensor_resize(x, CT_DIMS(n)) != CT_OK ||
            ct_tensor_mutable_data(x, CT_FLOAT32, ct_cpu()) == NULL;
  if (!bad) {
    bad = ct_program_append(p, op) != CT_OK;
    op = NULL;
  }
  if (!bad) bad = (e = ct_executor_new(p, s, ct_cpu())) == NULL || ct_executor_run(e) != CT_OK;
  if (bad) {
    fprintf(stderr, "corten_bench_comm: setting up %s: %s\n", row, ct_last_error());
  } else {
    float *in = ct_tensor_mutable_data(x, CT_FLOAT32, ct_cpu());
    for (int64_t i = 0; i < n; i++) in[i] = (float)(i % 7);
    float *out = ct_tensor_mutable_data(ct_var_tensor(ct_scope_var(s, "out")), CT_FLOAT32,
                                        ct_cpu());
    for (int r = 0; r < rounds && !bad; r++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t = MPI_Wtime();
      for (int i = 0; i < iters && !bad; i++) bad = ct_executor_run(e) != CT_OK;
      tc[r] = (MPI_Wtime() - t) / iters;
      MPI_Barrier(MPI_COMM_WORLD);
      t = MPI_Wtime();
      for (int i = 0; i < iters; i++) {
        MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      }
      tb[r] = (MPI_Wtime() - t) / iters;
    }
    if (bad) fprintf(stderr, "corten_bench_comm: %s\n", ct_last_error());
    if (!bad && rank == 0) {
      printf("%s\t%.0f\t%.0f\n", row, 1e9 * bench_comm_median(tc, rounds),
             1e9 * bench_comm_median(tb, rounds));
    }
  }
  ct_executor_free(e);
  ct_op_free(op);
  ct_program_free(p);
  ct_scope_free(s);
  free(tc);
  free(tb);
  return bad;
}

int main(int argc, char **argv) {
  /* corten's collectives need MPI_THREAD_SERIALIZED (corten/comm.h); a lower level makes
   * ct_comm_init_mpi say so and every row report no figure. */
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0, size = 0, quick = 0, nccl = 0;
  for (int i = 1; i < argc; i++) {
    quick |= strcmp(argv[i], "--quick") == 0;
    nccl |= strcmp(argv[i], "--nccl") == 0;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (nccl) {
#ifdef CORTEN_BENCH_NCCL
    int bad = bench_comm_nccl(rank, size, quick);
#else
    int bad = 1;
    fprintf(stderr, "corten_bench_comm: this build has no CUDA: no NCCL rows\n");
#endif
    fflush(stdout);
    MPI_Finalize();
    return bad;
  }
  /* One element: the latency, where corten's header exchange shows. */
  int bad = bench_size("allreduce 1 float32, MPI, 2 ranks", 1, quick ? 5 : 21, 1000, rank) ||
            bench_size("allreduce 4 MiB float32, MPI, 2 ranks", 1 << 20, quick ? 5 : 21, 4, rank) ||
            bench_size("allreduce 64 MiB float32, MPI, 2 ranks", 16 << 20, quick ? 5 : 11, 1, rank);
  fflush(stdout);
  MPI_Finalize();
  return bad;
}
