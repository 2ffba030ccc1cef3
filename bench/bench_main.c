/* SPDX-License-Identifier: Apache-2.0 */
/* bench_main.c: corten_bench, the benchmark runner. Every row puts corten's figure next to a
 * baseline measured in the same run, prints a table and, with --json PATH, writes it as JSON.
 *
 *   corten_bench [--quick] [--json PATH] [--only GROUP]
 *
 * --only GROUP: the rows of one group (core, ops, kernels, expr, train, rnn, conv, params, memory,
 * cuda) only. --quick: fewer repetitions (same sizes; under a minute on a laptop-class core). Exit
 * status:
 * 0 when every row that ran has a corten figure, 1 otherwise, 2 on a usage error. Rows whose
 * baseline is not built into this binary (libtorch not found) say "baseline not installed";
 * GPU rows without a CUDA device say "skipped".
 *
 * Everything runs on one thread: corten with ct_set_num_threads(1), OpenBLAS (behind the CBLAS
 * baseline and libtorch's matmul; corten has its own GEMM) with openblas_set_num_threads(1), and
 * libtorch with at::set_num_threads(1); the kernel rows (bench_kernels.c) run at one thread and
 * at every core, and the rows marked "N threads" raise all three to N. */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <corten/corten.h>

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

/* Idle worker threads spin before they sleep, and in an interleaved round one side's spinning
 * workers take a core from the side timed next. libtorch's OpenMP workers (libgomp) spin for
 * milliseconds by default (GOMP_SPINCOUNT 300000): on a 2-core machine corten's exp at 2 threads
 * came out 1.8x slower next to them than with the spin cut. OpenBLAS's (the CBLAS baseline's and
 * libtorch's GEMMs) spin for 2^28 cycles, about 70 ms: corten's 2-thread matmul 1024 took 15-21
 * ms after their turns against 10.4 alone. Both libraries read these settings when they are
 * loaded, before main, so the bench runs itself again with GOMP_SPINCOUNT=10000 and
 * OPENBLAS_THREAD_TIMEOUT=19 (2^19 cycles), each about the 200 us that corten's pool spins,
 * unless the caller set a policy of its own. */
static void same_spin_policy(char **argv) {
  bool ob = false, gomp = false; /* set here */
  if (getenv("OPENBLAS_THREAD_TIMEOUT") == NULL) {
    ob = setenv("OPENBLAS_THREAD_TIMEOUT", "19", 1) == 0;
  }
#ifdef CORTEN_BENCH_TORCH
  if (getenv("GOMP_SPINCOUNT") == NULL && getenv("OMP_WAIT_POLICY") == NULL) {
    gomp = setenv("GOMP_SPINCOUNT", "10000", 1) == 0;
  }
#endif
  if (!ob && !gomp) return;
  execv("/proc/self/exe", argv);
  /* The libraries read their defaults already: the header must say so. */
  if (gomp) unsetenv("GOMP_SPINCOUNT");
  if (ob) unsetenv("OPENBLAS_THREAD_TIMEOUT");
  fprintf(stderr, "corten_bench: could not re-run itself with the spin settings; the baselines' "
                  "workers keep their default spin\n");
}

int main(int argc, char **argv) {
  same_spin_policy(argv);
  bench_cfg cfg = {0, 0};
  const char *json = NULL, *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) {
      cfg.quick = 1;
    } else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      json = argv[++i];
    } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else {
      fprintf(stderr, "usage: %s [--quick] [--json PATH] [--only GROUP]\n", argv[0]);
      return 2;
    }
  }
  cfg.reps = cfg.quick ? 5 : 21;

  bench_set_threads(1); /* the rows at several threads set their own, then 1 again */
#ifdef CORTEN_BENCH_TORCH
  const char *torch = tb_version();
#else
  const char *torch = "not installed";
#endif
  char cpu[128];
  cpu_model(cpu, sizeof cpu);
  printf("corten_bench (%s mode): medians of %d runs after a warm-up, single thread\n",
         cfg.quick ? "quick" : "full", cfg.reps);
  const char *gomp = getenv("GOMP_SPINCOUNT"), *ob = getenv("OPENBLAS_THREAD_TIMEOUT");
  printf("cpu: %s; libtorch: %s (GOMP_SPINCOUNT %s, OPENBLAS_THREAD_TIMEOUT %s)\n\n", cpu, torch,
         gomp != NULL ? gomp : "default", ob != NULL ? ob : "default");
  printf("%-44s %10s | %-34s %10s | %6s | %s\n", "row", "corten", "baseline", "baseline",
         "ratio", "unit");

  static const struct {
    const char *name;
    void (*rows)(const bench_cfg *);
  } groups[] = {{"core", bench_core_rows},     {"ops", bench_ops_rows},
                {"kernels", bench_kernels_rows}, {"expr", bench_expr_rows},
                {"train", bench_train_rows},   {"rnn", bench_rnn_rows},
                {"conv", bench_conv_rows},     {"params", bench_params_rows},
                {"memory", bench_memory_rows}, {"cuda", bench_cuda_rows},
                {"comm", bench_comm_rows}};
  int ran = 0;
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
    if (only != NULL && strcmp(only, groups[g].name) != 0) continue;
    groups[g].rows(&cfg);
    ran++;
  }
  if (ran == 0) {
    fprintf(stderr, "corten_bench: no group named %s\n", only);
    return 2;
  }

  int missing = bench_finish(json, &cfg);
  if (missing > 0) {
    fprintf(stderr, "corten_bench: %d row(s) produced no corten figure\n", missing);
    return 1;
  }
  return 0;
}
