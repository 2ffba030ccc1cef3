/* bench/bench_util.h: timing for the benchmarks: medians of repeated batches after a warm-up. */
#ifndef CORTEN_BENCH_UTIL_H
#define CORTEN_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Keeps the compiler from dropping a value or reordering work across this point. */
#define BENCH_KEEP(x) __asm__ __volatile__("" : : "g"(x) : "memory")

/* Runs fn(arg, iters) `reps` times after one warm-up run and returns the median nanoseconds per
 * iteration. */
double bench_median_ns(void (*fn)(void *arg, size_t iters), void *arg, size_t iters, int reps);

/* Prints one row: name, corten's ns, the baseline's ns and name, and the ratio. */
void bench_row(const char *name, double corten_ns, const char *baseline, double baseline_ns);

#endif /* CORTEN_BENCH_UTIL_H */
