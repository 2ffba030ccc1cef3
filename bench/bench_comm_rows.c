/* SPDX-License-Identifier: Apache-2.0 */
/* bench/bench_comm_rows.c: the collectives' rows of corten_bench. They need several processes,
 * so corten_bench runs the MPI program corten_bench_comm (bench_comm.c) under
 * `mpirun -n 2 --oversubscribe` and records the lines it prints: corten's c_allreduce_sum
 * against MPI_Allreduce on the same buffers; then, where there is a GPU, under `mpirun -n
 * <GPUs>` with --nccl: over NCCL against ncclAllReduce. Without MPI in the build the rows are
 * skipped, and the NCCL rows without a CUDA device. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <corten/corten.h>

#include "bench_comm.h"
#include "bench_util.h"

static const char *const mpi_rows[] = {"allreduce 1 float32, MPI, 2 ranks",
                                       "allreduce 4 MiB float32, MPI, 2 ranks",
                                       "allreduce 64 MiB float32, MPI, 2 ranks", NULL};
static const char *const nccl_rows[] = {BENCH_COMM_NCCL_4M, BENCH_COMM_NCCL_64M, NULL};

#if defined(CORTEN_BENCH_MPIEXEC) && defined(CORTEN_BENCH_COMM)
/* Runs corten_bench_comm on n ranks with flags and records the rows it prints (NULL-ended);
 * baseline names what corten is measured against. */
static void run_rows(int n, const char *flags, const char *const *rows, const char *baseline) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' -n %d --oversubscribe %s '%s' %s 2>&1", CORTEN_BENCH_MPIEXEC, n,
           geteuid() == 0 ? "--allow-run-as-root" : "", CORTEN_BENCH_COMM, flags);
  FILE *f = popen(cmd, "r");
  int seen[4] = {0};
  char line[512];
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    char *tab = strchr(line, '\t');
    for (int i = 0; tab != NULL && rows[i] != NULL; i++) {
      if (strncmp(line, rows[i], strlen(rows[i])) != 0 || seen[i]) continue;
      double corten = NAN, base = NAN;
      if (sscanf(tab + 1, "%lf\t%lf", &corten, &base) == 2) {
        bench_record(rows[i], corten / 1e3, baseline, base / 1e3, "us");
        seen[i] = 1;
      }
    }
    if (tab == NULL) fprintf(stderr, "corten_bench_comm: %s", line);
  }
  if (f != NULL) pclose(f);
  for (int i = 0; rows[i] != NULL; i++) {
    if (!seen[i]) bench_record(rows[i], NAN, baseline, NAN, "us");
  }
}
#endif

static void skip_rows(const char *const *rows, const char *why) {
  for (int i = 0; rows[i] != NULL; i++) bench_skip(rows[i], why);
}

void bench_comm_rows(const bench_cfg *cfg) {
#if defined(CORTEN_BENCH_MPIEXEC) && defined(CORTEN_BENCH_COMM)
  run_rows(2, cfg->quick ? "--quick" : "", mpi_rows, "MPI_Allreduce, same buffers");
  int gpus = ct_cuda_device_count();
  if (gpus > 0) {
    run_rows(gpus, cfg->quick ? "--nccl --quick" : "--nccl", nccl_rows,
             "ncclAllReduce, same buffers");
  } else {
    skip_rows(nccl_rows, "skipped: no CUDA device");
  }
#else
  (void)cfg;
  skip_rows(mpi_rows, "skipped: this build has no MPI");
  skip_rows(nccl_rows, "skipped: this build has no MPI");
#endif
}
