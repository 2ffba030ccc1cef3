/* SPDX-License-Identifier: Apache-2.0 */
/* bench_ops.c: the speed of the op layer, each figure next to a baseline from the same run.
 *   op overhead   a prepared program of 1000 one-element elementwise_add ops, per op
 *                                               [at::add_out on one-element tensors, libtorch;
 *                                                a hand-written C loop making 1000 calls of a
 *                                                one-element add through function pointers];
 *                 the same while a profile records, and while an allocation observer is set
 *                                               [the same program without]
 *   matmul N      matmul N x N float32, N = 256, 1024, 2048 (executor, one op); 1024 also at
 *                 every core                    [a direct cblas_sgemm call; at::mm_out]
 * (elementwise_add over 16M and 32K floats: bench_kernels.c.) Single thread but for that row: the
 * runner sets corten, OpenBLAS (the CBLAS baseline's, and libtorch's matmul's) and libtorch to
 * one thread. Medians of repeated runs after a warm-up. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "bench_torch.h"
#include "bench_util.h"

#define N_OPS 1000

static void fail(const char *what) {
  fprintf(stderr, "bench_ops: %s: %s\n", what, ct_last_error());
  exit(1);
}

static ct_tensor *put(ct_scope *s, const char *name, ct_ddim dims, float v) {
  ct_tensor *t = ct_var_tensor(ct_scope_var(s, name));
  if (t == NULL || ct_tensor_resize(t, dims) != CT_OK) fail(name);
  float *d = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu());
  if (d == NULL) fail(name);
  for (int64_t i = 0; i < ct_tensor_numel(t); i++) d[i] = v + (float)(i % 7);
  return t;
}

static ct_op *add_op(const char *type, const char *x, const char *y, const char *out) {
  ct_op *op = ct_op_new(type);
  if (op == NULL || ct_op_set_input(op, "X", x) != CT_OK || ct_op_set_input(op, "Y", y) != CT_OK ||
      ct_op_set_output(op, "Out", out) != CT_OK) {
    fail(type);
  }
  return op;
}

static void run_batch(void *arg, size_t iters) {
  for (size_t i = 0; i < iters; i++) {
    if (ct_executor_run(arg) != CT_OK) fail("ct_executor_run");
  }
}

/* ---- Baselines ---------------------------------------------------------------------------------- */

typedef void (*add1_fn)(float *o, const float *x, const float *y);

static void count_nothing(void *arg, const ct_memory_event *e) {
  (void)arg;
  (void)e;
}

__attribute__((noinline)) static void add1(float *o, const float *x, const float *y) {
  o[0] = x[0] + y[0];
}

typedef struct calls_ctx {
  add1_fn fns[N_OPS];
  float x[N_OPS], y, o[N_OPS];
} calls_ctx;

static void calls_batch(void *arg, size_t iters) {
  calls_ctx *c = arg;
  for (size_t r = 0; r < iters; r++) {
    for (int i = 0; i < N_OPS; i++) c->fns[i](&c->o[i], &c->x[i], &c->y);
    BENCH_KEEP(c->o);
  }
}

typedef struct gemm_ctx {
  const float *a, *b;
  float *c;
  int n;
} gemm_ctx;

static void gemm_batch(void *arg, size_t iters) {
  gemm_ctx *g = arg;
  for (size_t r = 0; r < iters; r++) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->n, g->n, g->n, 1.0f, g->a, g->n,
                g->b, g->n, 0.0f, g->c, g->n);
    BENCH_KEEP(g->c);
  }
}

/* A one-op program over scope, prepared. */
static ct_executor *one_op(ct_scope *s, ct_op *op, ct_program **prog) {
  *prog = ct_program_new();
  if (*prog == NULL || ct_program_append(*prog, op) != CT_OK) fail("program");
  ct_executor *e = ct_executor_new(*prog, s, ct_cpu());
  if (e == NULL) fail("ct_executor_new");
  return e;
}

/* matmul mn x mn float32 at `threads` threads (the caller has set them), against a direct
 * cblas_sgemm call and libtorch's at::mm_out, taking turns. */
static void mm_row(const bench_cfg *cfg, int mn, int threads) {
  int quick = cfg->quick;
  /* Fewer repetitions for the big ones in quick mode: 2048 is ~17 GFLOP a call. */
  int mreps = quick && mn >= 2048 ? 3 : cfg->reps;
  size_t miters = mn <= 256 ? (quick ? 20 : 100) : 1;
  char name[64];
  if (threads > 1) snprintf(name, sizeof name, "matmul %d float32, %d threads", mn, threads);
  else snprintf(name, sizeof name, "matmul %d float32", mn);
  ct_scope *s = ct_scope_new();
  ct_program *p;
  put(s, "A", CT_DIMS(mn, mn), 0.5f);
  put(s, "B", CT_DIMS(mn, mn), 0.25f);
  ct_executor *e = one_op(s, add_op("matmul", "A", "B", "C"), &p);
  run_batch(e, 1); /* sizes C, which the baselines write too */
  gemm_ctx g = {.n = mn};
  g.a = ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(s, "A")), CT_FLOAT32);
  g.b = ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(s, "B")), CT_FLOAT32);
  g.c = ct_tensor_mutable_data(ct_var_tensor(ct_scope_var(s, "C")), CT_FLOAT32, ct_cpu());
  /* corten, cblas_sgemm and libtorch take turns (bench_median_multi_ns). */
  void (*mm_fns[3])(void *, size_t) = {run_batch, gemm_batch, NULL};
  void *mm_args[3] = {e, &g, NULL};
#ifdef CORTEN_BENCH_TORCH
  mm_fns[2] = tb_mm_batch;
  mm_args[2] = tb_mm_setup(g.c, g.a, g.b, mn);
#endif
  double mm_t[3];
  bench_median_multi_ns(3, mm_fns, mm_args, miters, mreps, mm_t);
#ifdef CORTEN_BENCH_TORCH
  tb_mm_teardown(mm_args[2]);
#endif
  double tb = mm_t[2] > 0 ? mm_t[2] / 1e6 : BENCH_NOT_INSTALLED;
  bench_record(name, mm_t[0] / 1e6, "direct cblas_sgemm", mm_t[1] / 1e6, "ms");
  bench_record(name, mm_t[0] / 1e6, "libtorch at::mm_out", tb, "ms");
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}

void bench_ops_rows(const bench_cfg *cfg) {
  int quick = cfg->quick;
  int reps = cfg->reps;
  double tb = BENCH_NOT_INSTALLED;

  /* Op overhead: 1000 ops c_i = a_i + b over one-element tensors. */
  ct_scope *s = ct_scope_new();
  ct_program *p = ct_program_new();
  put(s, "b", CT_DIMS(1), 1.0f);
  for (int i = 0; i < N_OPS; i++) {
    char a[32], c[32];
    snprintf(a, sizeof a, "a%04d", i);
    snprintf(c, sizeof c, "c%04d", i);
    put(s, a, CT_DIMS(1), (float)i);
    if (ct_program_append(p, add_op("elementwise_add", a, "b", c)) != CT_OK) fail("append");
  }
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  if (e == NULL) fail("ct_executor_new");
  double per_run = bench_median_ns(run_batch, e, quick ? 200 : 2000, reps);
  calls_ctx *cc = calloc(1, sizeof *cc);
  for (int i = 0; i < N_OPS; i++) cc->fns[i] = add1;
  double base_run = bench_median_ns(calls_batch, cc, quick ? 2000 : 20000, reps);
#ifdef CORTEN_BENCH_TORCH
  void *ta = tb_add1_setup(N_OPS);
  tb = bench_median_ns(tb_add1_batch, ta, quick ? 200 : 2000, reps) / N_OPS;
  tb_add1_teardown(ta);
#endif
  bench_record("op overhead: program of 1000 1-elem adds", per_run / N_OPS,
               "at::add_out, 1-elem tensors", tb, "ns/op");
  bench_record("op overhead: program of 1000 1-elem adds", per_run / N_OPS,
               "C loop of 1000 add calls", base_run / N_OPS, "ns/op");
  /* The same program while a process profile records every op, and while an allocation
   * observer is set (which a run of a seen shape never calls): what each costs an op against
   * the run without (fewer runs profiled: each op is an event kept in memory). */
  ct_profile *prof = ct_profile_start(CT_PROFILE_PROCESS);
  if (prof == NULL) fail("ct_profile_start");
  double profiled = bench_median_ns(run_batch, e, quick ? 20 : 100, reps);
  if (ct_profile_stop(prof) != CT_OK) fail("ct_profile_stop");
  ct_profile_free(prof);
  bench_record("op overhead, a profile recording", profiled / N_OPS, "the same, no profile",
               per_run / N_OPS, "ns/op");
  ct_memory_set_observer(count_nothing, NULL);
  double observed = bench_median_ns(run_batch, e, quick ? 200 : 2000, reps);
  ct_memory_set_observer(NULL, NULL);
  bench_record("op overhead, an allocation observer set", observed / N_OPS,
               "the same, no observer", per_run / N_OPS, "ns/op");
  free(cc);
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);

  /* matmul N x N float32, at one thread; 1024 also at every core (corten's count, OpenBLAS's for
   * the CBLAS baseline and libtorch's matmul, and libtorch's). */
  static const int sizes[] = {256, 1024, 2048};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) mm_row(cfg, sizes[k], 1);
  ct_set_num_threads(0);
  int all = ct_get_num_threads();
  if (all > 1) {
    bench_set_threads(all);
    mm_row(cfg, 1024, all);
  }
  bench_set_threads(1);
}
