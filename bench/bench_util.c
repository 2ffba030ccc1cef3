/* bench/bench_util.c: see bench_util.h. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_util.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double bench_median_ns(void (*fn)(void *arg, size_t iters), void *arg, size_t iters, int reps) {
  double *t = malloc((size_t)reps * sizeof *t);
  if (t == NULL) return -1.0;
  fn(arg, iters); /* warm-up: caches, branch predictors, allocator pools */
  for (int r = 0; r < reps; r++) {
    double t0 = now_ns();
    fn(arg, iters);
    t[r] = (now_ns() - t0) / (double)iters;
  }
  qsort(t, (size_t)reps, sizeof *t, cmp_double);
  double m = t[reps / 2];
  free(t);
  return m;
}

void bench_row(const char *name, double corten_ns, const char *baseline, double baseline_ns) {
  if (baseline_ns > 0) {
    printf("%-46s %8.2f ns | %-40s %8.2f ns | ratio %5.2f\n", name, corten_ns, baseline,
           baseline_ns, corten_ns / baseline_ns);
  } else {
    printf("%-46s %8.2f ns | %-40s %11s | ratio   n/a\n", name, corten_ns, baseline,
           "not built");
  }
}
