/* SPDX-License-Identifier: Apache-2.0 */
/* bench/bench_comm_rows.c: the collectives' rows of corten_bench. They need several processes,
 * so corten_bench runs the MPI program corten_bench_comm (bench_comm.c) under
 * `mpirun -n 2 --oversubscribe` and records the lines it prints: corten's c_allreduce_sum
 * against MPI_Allreduce on the same buffers. Without MPI in the build the rows are skipped. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"

static const char *const rows[] = {"allreduce 1 float32, MPI, 2 ranks",
                                   "allreduce 4 MiB float32, MPI, 2 ranks",
                                   "allreduce 64 MiB float32, MPI, 2 ranks"};
enum { N_ROWS = sizeof rows / sizeof rows[0] };

void bench_comm_rows(const bench_cfg *cfg) {
#if defined(CORTEN_BENCH_MPIEXEC) && defined(CORTEN_BENCH_COMM)
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' -n 2 --oversubscribe %s '%s' %s 2>&1", CORTEN_BENCH_MPIEXEC,
           geteuid() == 0 ? "--allow-run-as-root" : "", CORTEN_BENCH_COMM,
           cfg->quick ? "--quick" : "");
  FILE *f = popen(cmd, "r");
  int seen[N_ROWS] = {0};
  char line[512];
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    char *tab = strchr(line, '\t');
    for (int i = 0; tab != NULL && i < N_ROWS; i++) {
      if (strncmp(line, rows[i], strlen(rows[i])) != 0 || seen[i]) continue;
      double corten = NAN, mpi = NAN;
      if (sscanf(tab + 1, "%lf\t%lf", &corten, &mpi) == 2) {
        bench_record(rows[i], corten / 1e3, "MPI_Allreduce, same buffers", mpi / 1e3, "us");
        seen[i] = 1;
      }
    }
    if (tab == NULL) fprintf(stderr, "corten_bench_comm: %s", line);
  }
  if (f != NULL) pclose(f);
  for (int i = 0; i < N_ROWS; i++) {
    if (!seen[i]) bench_record(rows[i], NAN, "MPI_Allreduce, same buffers", NAN, "us");
  }
#else
  (void)cfg;
  for (int i = 0; i < N_ROWS; i++) bench_skip(rows[i], "skipped: this build has no MPI");
#endif
}
