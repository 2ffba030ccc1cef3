/* SPDX-License-Identifier: Apache-2.0 */
/* bench/bench_util.h: timing and the result table of the benchmarks.
 *
 * Timing: medians of repeated batches after a warm-up run. Results: every row is recorded with
 * bench_record (corten's figure, the baseline's figure from the same run, the unit), printed as
 * it comes, and written to a JSON file at the end. A row whose corten figure is missing (NaN) is
 * a failure of the run; a baseline that is not built into this binary is BENCH_NOT_INSTALLED. */
#ifndef CORTEN_BENCH_UTIL_H
#define CORTEN_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <corten/program.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Keeps the compiler from dropping a value or reordering work across this point. */
#define BENCH_KEEP(x) __asm__ __volatile__("" : : "g"(x) : "memory")

/* A baseline figure for "this baseline is not built here" (libtorch missing). */
#define BENCH_NOT_INSTALLED (-1.0)

typedef struct bench_cfg {
  int quick; /* fewer repetitions and iterations; same sizes */
  int reps;  /* timed repetitions per figure (the median is taken) */
} bench_cfg;

/* The thread count of every side of a row: corten's (ct_set_num_threads), OpenBLAS's (the CBLAS
 * baseline's and libtorch's GEMMs) and libtorch's intra-op pool (when built in). */
void bench_set_threads(int n);

/* Runs fn(arg, iters) `reps` times after one warm-up run and returns the median nanoseconds per
 * iteration. */
double bench_median_ns(void (*fn)(void *arg, size_t iters), void *arg, size_t iters, int reps);

/* Times n functions together: one warm-up run of each, then `reps` rounds in which each runs once
 * in turn, so that all of them see the same state of a shared, noisy machine. fns[i] == NULL
 * leaves out[i] at BENCH_NOT_INSTALLED. Writes the median nanoseconds per iteration of each to
 * out[i] (NaN when memory runs out). */
void bench_median_multi_ns(int n, void (*const *fns)(void *arg, size_t iters), void *const *args,
                           size_t iters, int reps, double *out);

/* Records and prints one row. corten: corten's figure (NaN when it could not be measured);
 * baseline_value: the baseline's figure in the same unit, or BENCH_NOT_INSTALLED. The ratio is
 * corten / baseline: for times, below 1 means corten is faster. */
void bench_record(const char *name, double corten, const char *baseline, double baseline_value,
                  const char *unit);

/* bench_record with the unit "ns/op" (the older interface, kept for bench_cuda.c). */
void bench_row(const char *name, double corten_ns, const char *baseline, double baseline_ns);

/* Records a row that did not run at all, with the reason ("skipped: no CUDA device"). */
void bench_skip(const char *name, const char *reason);

/* Prints the closing summary, writes the JSON file (json_path may be NULL) and returns the
 * number of rows without a corten figure (a skipped row does not count). */
int bench_finish(const char *json_path, const bench_cfg *cfg);

/* Appends an op of type to p, wired by the NULL-ended pairs "Slot", "name" ("Slot" an input,
 * ">Slot" an output); 0, or -1 with corten's error recorded. BENCH_APPEND(p, type, pairs...)
 * writes the list. */
int bench_append(ct_program *p, const char *type, const char *const *pairs);
#define BENCH_APPEND(p, type, ...) \
  bench_append((p), (type), (const char *const[]){__VA_ARGS__, NULL})

/* The groups of rows, one per source file. */
/* A float32 tensor of dims in variable name of s, element i = scale ((i 37 mod 101) - 50): the
 * weights and inputs of the training rows. Its data; a failure ends the run with corten's
 * message. */
float *bench_put_pattern(ct_scope *s, const char *name, ct_ddim dims, float scale);

void bench_core_rows(const bench_cfg *cfg);
void bench_ops_rows(const bench_cfg *cfg);
void bench_kernels_rows(const bench_cfg *cfg);
void bench_expr_rows(const bench_cfg *cfg);
void bench_params_rows(const bench_cfg *cfg);
void bench_memory_rows(const bench_cfg *cfg);
void bench_train_rows(const bench_cfg *cfg);
void bench_rnn_rows(const bench_cfg *cfg);
void bench_conv_rows(const bench_cfg *cfg);
void bench_cuda_rows(const bench_cfg *cfg);
/* bench_cuda_layers.c, called by bench_cuda_rows: the layer kernels' rows, or their skips. */
void bench_cuda_layer_rows(int quick, int reps);
void bench_cuda_layer_skip(const char *note);
void bench_comm_rows(const bench_cfg *cfg);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_BENCH_UTIL_H */
