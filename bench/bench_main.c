/* SPDX-License-Identifier: Apache-2.0 */
/* bench_main.c: corten_bench, the benchmark runner. Every row puts corten's figure next to a
 * baseline measured in the same run, prints a table and, with --json PATH, writes it as JSON.
 *
 *   corten_bench [--quick] [--json PATH]
 *
 * --quick: fewer repetitions (same sizes; under a minute on a laptop-class core). Exit status:
 * 0 when every row that ran has a corten figure, 1 otherwise, 2 on a usage error. Rows whose
 * baseline is not built into this binary (libtorch not found) say "baseline not installed";
 * GPU rows without a CUDA device say "skipped".
 *
 * Everything runs on one thread: OpenBLAS (behind corten's matmul and the CBLAS baseline) is set
 * to one thread with openblas_set_num_threads(1), and libtorch with at::set_num_threads(1). */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_torch.h"
#include "bench_util.h"

/* The CPU's model name from /proc/cpuinfo ("unknown" elsewhere). */
static void cpu_model(char *out, size_t n) {
  snprintf(out, n, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f == NULL) return;
  char line[256];
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "model name", 10) == 0) {
      const char *v = strchr(line, ':');
      if (v != NULL) {
        v++;
        while (*v == ' ' || *v == '\t') v++;
        snprintf(out, n, "%s", v);
        out[strcspn(out, "\n")] = '\0';
      }
      break;
    }
  }
  fclose(f);
}

int main(int argc, char **argv) {
  bench_cfg cfg = {0, 0};
  const char *json = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) {
      cfg.quick = 1;
    } else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      json = argv[++i];
    } else {
      fprintf(stderr, "usage: %s [--quick] [--json PATH]\n", argv[0]);
      return 2;
    }
  }
  cfg.reps = cfg.quick ? 5 : 21;

  openblas_set_num_threads(1);
#ifdef CORTEN_BENCH_TORCH
  tb_set_threads(1);
  const char *torch = tb_version();
#else
  const char *torch = "not installed";
#endif
  char cpu[128];
  cpu_model(cpu, sizeof cpu);
  printf("corten_bench (%s mode): medians of %d runs after a warm-up, single thread\n",
         cfg.quick ? "quick" : "full", cfg.reps);
  printf("cpu: %s; libtorch: %s\n\n", cpu, torch);
  printf("%-44s %10s | %-34s %10s | %6s | %s\n", "row", "corten", "baseline", "baseline",
         "ratio", "unit");

  bench_core_rows(&cfg);
  bench_ops_rows(&cfg);
  bench_expr_rows(&cfg);
  bench_train_rows(&cfg);
  bench_rnn_rows(&cfg);
  bench_params_rows(&cfg);
  bench_memory_rows(&cfg);
  bench_cuda_rows(&cfg);
  bench_comm_rows(&cfg);

  int missing = bench_finish(json, &cfg);
  if (missing > 0) {
    fprintf(stderr, "corten_bench: %d row(s) produced no corten figure\n", missing);
    return 1;
  }
  return 0;
}
