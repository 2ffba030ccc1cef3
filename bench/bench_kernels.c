/* SPDX-License-Identifier: Apache-2.0 */
/* bench_kernels.c: the CPU kernels at one thread and at every core (ct_set_num_threads), each
 * row next to baselines from the same run.
 *   elementwise_add 16M and 32K float32 (executor, one op)
 *                      [a vectorised C loop, compiled at -O3 (this file); at every core the same
 *                       loop split over a team of pthreads that spin between calls;
 *                       at::add_out with at::set_num_threads(n)]
 *   exp 16M float32    [a C loop calling expf, on the same team; at::exp_out]
 *   softmax, reduce_sum (dim 1), transpose of [4096, 4096] float32
 *                      [at::_softmax_out, at::sum_out, out.copy_(x.t()), same thread count]
 *   adam over 16M float32 parameters, in place; elementwise_add_grad of [4096, 4096] + [4096]
 *                      (a bias's gradient: X@GRAD = Out@GRAD, Y@GRAD its column sums)
 *                      [the same C loop at -O3, on one thread or split over the pthread team]
 * 16M floats (192 MiB of traffic a call) is bound by memory bandwidth; 32K (384 KiB) sits in L2.
 * The runner is single-threaded elsewhere: these rows set the count and put it back to 1. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <corten/corten.h>

#include "bench_torch.h"
#include "bench_util.h"

static void fail(const char *what) {
  fprintf(stderr, "bench_kernels: %s: %s\n", what, ct_last_error());
  exit(1);
}

static float *put(ct_scope *s, const char *name, ct_ddim dims) {
  ct_tensor *t = ct_var_tensor(ct_scope_var(s, name));
  if (t == NULL || ct_tensor_resize(t, dims) != CT_OK) fail(name);
  float *d = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu());
  if (d == NULL) fail(name);
  for (int64_t i = 0; i < ct_tensor_numel(t); i++) d[i] = (float)(i % 13) * 0.25f - 1.0f;
  return d;
}

static float *data_of(ct_scope *s, const char *name) {
  return ct_tensor_mutable_data(ct_var_tensor(ct_scope_var(s, name)), CT_FLOAT32, ct_cpu());
}

static void run_batch(void *arg, size_t iters) {
  for (size_t i = 0; i < iters; i++) {
    if (ct_executor_run(arg) != CT_OK) fail("ct_executor_run");
  }
}

/* ---- The C loop, on one thread or on a team of pthreads ------------------------------------ */

__attribute__((noinline)) static void add_loop(float *o, const float *x, const float *y, size_t n) {
  for (size_t i = 0; i < n; i++) o[i] = x[i] + y[i];
}

/* The C library's expf, as a C program would call it (y unused). */
__attribute__((noinline)) static void exp_loop(float *o, const float *x, const float *y, size_t n) {
  (void)y;
  for (size_t i = 0; i < n; i++) o[i] = expf(x[i]);
}

#define MAX_TEAM 64

/* The team: workers 1..n-1 spin on `gen` during a batch and sleep between batches; each call
 * runs part over its share of [0, n). */
typedef struct team {
  float *o;
  const float *x, *y;
  void (*part)(size_t b, size_t e);
  size_t n;
  int size;
  atomic_uint gen, done;
  unsigned start_gen; /* gen when the workers were made: a job is a later gen */
  atomic_int stop; /* 1: sleep (between batches), 2: exit */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t th[MAX_TEAM];
  int ids[MAX_TEAM];
} team;

static team tm = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void add_part(size_t b, size_t e) { add_loop(tm.o + b, tm.x + b, tm.y + b, e - b); }
static void exp_part(size_t b, size_t e) { exp_loop(tm.o + b, tm.x + b, tm.y + b, e - b); }

static void team_part(int k) {
  size_t b = tm.n * (size_t)k / (size_t)tm.size, e = tm.n * (size_t)(k + 1) / (size_t)tm.size;
  tm.part(b, e);
}

static void *team_worker(void *arg) {
  int k = *(int *)arg;
  /* Not 0: gen carries over from the rows before, and a new worker that took it for a job
   * would run a part and count it done before the batch began (the batch then waited forever
   * for a count it had passed). */
  unsigned seen = tm.start_gen;
  for (;;) {
    int st = atomic_load(&tm.stop);
    if (st == 2) return NULL;
    if (st == 1) {
      pthread_mutex_lock(&tm.mu);
      while (atomic_load(&tm.stop) == 1) pthread_cond_wait(&tm.cv, &tm.mu);
      pthread_mutex_unlock(&tm.mu);
      continue;
    }
    unsigned g = atomic_load_explicit(&tm.gen, memory_order_acquire);
    if (g == seen) {
      __builtin_ia32_pause();
      continue;
    }
    seen = g;
    team_part(k);
    atomic_fetch_add_explicit(&tm.done, 1, memory_order_release);
  }
}

static void team_wake(int stop) {
  pthread_mutex_lock(&tm.mu);
  atomic_store(&tm.stop, stop);
  pthread_cond_broadcast(&tm.cv);
  pthread_mutex_unlock(&tm.mu);
}

static void team_batch(void *arg, size_t iters) {
  (void)arg;
  team_wake(0);
  for (size_t r = 0; r < iters; r++) {
    atomic_store(&tm.done, 0);
    atomic_fetch_add_explicit(&tm.gen, 1, memory_order_release);
    team_part(0);
    while (atomic_load_explicit(&tm.done, memory_order_acquire) != (unsigned)tm.size - 1) {
      __builtin_ia32_pause();
    }
    BENCH_KEEP(tm.o);
  }
  team_wake(1);
}

static void loop_batch(void *arg, size_t iters) {
  (void)arg;
  for (size_t r = 0; r < iters; r++) {
    tm.part(0, tm.n);
    BENCH_KEEP(tm.o);
  }
}

static void team_start(int size) {
  tm.size = size;
  atomic_store(&tm.stop, 1);
  tm.start_gen = atomic_load(&tm.gen); /* read by the workers, made after this store */
  for (int k = 1; k < size; k++) {
    tm.ids[k] = k;
    if (pthread_create(&tm.th[k], NULL, team_worker, &tm.ids[k]) != 0) fail("pthread_create");
  }
}

static void team_end(void) {
  team_wake(2);
  for (int k = 1; k < tm.size; k++) pthread_join(tm.th[k], NULL);
}

/* ---- Rows ------------------------------------------------------------------------------------ */

/* An executor of one op: type(X x, Y y) -> Out out, or type(X x) -> Out out when unary. */
static ct_executor *one_op(ct_scope *s, ct_program **p, const char *type, bool unary,
                           const char *out) {
  *p = ct_program_new();
  if (*p == NULL || (unary ? BENCH_APPEND(*p, type, "X", "x", ">Out", out)
                           : BENCH_APPEND(*p, type, "X", "x", "Y", "y", ">Out", out)) != 0) {
    fail(type);
  }
  ct_executor *e = ct_executor_new(*p, s, ct_cpu());
  if (e == NULL) fail("ct_executor_new");
  return e;
}

/* elementwise_add (exp false) or exp of n floats. */
static void add_rows(const bench_cfg *cfg, int64_t n, const char *size, int threads, bool exp) {
  ct_scope *s = ct_scope_new();
  tm.x = put(s, "x", CT_DIMS(n));
  tm.y = put(s, "y", CT_DIMS(n));
  ct_program *p;
  ct_executor *e = one_op(s, &p, exp ? "exp" : "elementwise_add", exp, "z");
  run_batch(e, 1);
  tm.o = data_of(s, "z");
  tm.n = (size_t)n;
  tm.part = exp ? exp_part : add_part;
  team_start(threads);
  void (*fns[3])(void *, size_t) = {run_batch, threads > 1 ? team_batch : loop_batch, NULL};
  void *args[3] = {e, NULL, NULL};
#ifdef CORTEN_BENCH_TORCH
  fns[2] = exp ? tb_exp_batch : tb_add_batch;
  args[2] = tb_add_setup(tm.o, tm.x, tm.y, (long)n);
#endif
  size_t iters = n >= (1 << 20) ? 1 : (cfg->quick ? 2000 : 20000);
  double t[3];
  bench_median_multi_ns(3, fns, args, iters, cfg->reps, t);
#ifdef CORTEN_BENCH_TORCH
  tb_add_teardown(args[2]);
#endif
  team_end();
  char name[96], loop[64];
  snprintf(name, sizeof name, "%s %s float32, %d thread%s", exp ? "exp" : "elementwise_add", size,
           threads, threads > 1 ? "s" : "");
  snprintf(loop, sizeof loop, threads > 1 ? "C loop%s, %d pthreads" : "C loop%s",
           exp ? " of expf" : " -O3", threads);
  double unit = n >= (1 << 20) ? 1e6 : 1e3;
  const char *u = n >= (1 << 20) ? "ms" : "us";
  bench_record(name, t[0] / unit, loop, t[1] / unit, u);
  bench_record(name, t[0] / unit, exp ? "libtorch at::exp_out" : "libtorch at::add_out",
               t[2] > 0 ? t[2] / unit : t[2], u);
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}

/* softmax (axis 1), reduce_sum (dim 1) or transpose of [4096, 4096]. */
static void square_row(const bench_cfg *cfg, int op, int threads) {
  static const char *const types[] = {"softmax", "reduce_sum", "transpose"};
  static const char *const torch[] = {"libtorch at::_softmax_out", "libtorch at::sum_out",
                                      "libtorch out.copy_(x.t())"};
  const int64_t n = 4096;
  ct_scope *s = ct_scope_new();
  const float *x = put(s, "x", CT_DIMS(n, n));
  /* softmax along the last axis (its default), reduce_sum over dim 1, transpose (1, 0). */
  ct_op *o = ct_op_new(types[op]);
  if (o == NULL || ct_op_set_input(o, "X", "x") != CT_OK ||
      ct_op_set_output(o, "Out", "z") != CT_OK) {
    fail(types[op]);
  }
  if (op == 1 && ct_op_set_attr_ints(o, "dim", (const int64_t[]){1}, 1) != CT_OK) fail("dim");
  if (op == 2 && ct_op_set_attr_ints(o, "axis", (const int64_t[]){1, 0}, 2) != CT_OK) fail("axis");
  ct_program *p = ct_program_new();
  if (p == NULL || ct_program_append(p, o) != CT_OK) fail("append");
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  if (e == NULL) fail("ct_executor_new");
  run_batch(e, 1);
  void (*fns[2])(void *, size_t) = {run_batch, NULL};
  void *args[2] = {e, NULL};
#ifdef CORTEN_BENCH_TORCH
  fns[1] = tb_square_batch;
  args[1] = tb_square_setup(op, data_of(s, "z"), x, (long)n);
#else
  (void)x;
#endif
  double t[2];
  bench_median_multi_ns(2, fns, args, 1, cfg->reps, t);
#ifdef CORTEN_BENCH_TORCH
  tb_square_teardown(args[1]);
#endif
  char name[96];
  snprintf(name, sizeof name, "%s [4096,4096] float32, %d thread%s", types[op], threads,
           threads > 1 ? "s" : "");
  bench_record(name, t[0] / 1e6, torch[op], t[1] > 0 ? t[1] / 1e6 : t[1], "ms");
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}

/* ---- Training kernels: adam and a bias's gradient ----------------------------------------- */

/* The C loops' data: adam's in place (p, g, m1, m2; the step's scalars), the bias gradient's
 * (g [rows, cols] -> dx, dy [cols]). */
static struct {
  float *p, *g, *m1, *m2, *dx, *dy;
  float b1, b2, lr_t, eps_t;
  size_t cols, rows;
} tr;

__attribute__((noinline)) static void adam_part(size_t b, size_t e) {
  float *p = tr.p, *m1 = tr.m1, *m2 = tr.m2, b1 = tr.b1, b2 = tr.b2;
  const float *g = tr.g;
  for (size_t i = b; i < e; i++) {
    float gi = g[i], a = b1 * m1[i] + (1 - b1) * gi, v = b2 * m2[i] + (1 - b2) * gi * gi;
    m1[i] = a;
    m2[i] = v;
    p[i] = p[i] - tr.lr_t * (a / (sqrtf(v) + tr.eps_t));
  }
}

/* Columns b to e - 1 of the bias gradient, row after row. */
__attribute__((noinline)) static void bias_part(size_t b, size_t e) {
  for (size_t c = b; c < e; c++) tr.dy[c] = 0;
  for (size_t r = 0; r < tr.rows; r++) {
    const float *gr = tr.g + r * tr.cols;
    float *dxr = tr.dx + r * tr.cols;
    for (size_t c = b; c < e; c++) {
      dxr[c] = gr[c];
      tr.dy[c] += gr[c];
    }
  }
}

/* Times program p over s against the C loop part over [0, n) (split over the team at more than
 * one thread), and records row `name` against `loop`. */
static void loop_row(const bench_cfg *cfg, ct_scope *s, ct_program *p, void (*part)(size_t, size_t),
                     size_t n, const char *name, int threads) {
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  if (e == NULL) fail("ct_executor_new");
  run_batch(e, 1);
  tm.part = part;
  tm.n = n;
  tm.o = tr.p != NULL ? tr.p : tr.dx;
  team_start(threads);
  void (*fns[2])(void *, size_t) = {run_batch, threads > 1 ? team_batch : loop_batch};
  void *args[2] = {e, NULL};
  double t[2];
  bench_median_multi_ns(2, fns, args, 1, cfg->reps, t);
  team_end();
  char row[112], loop[64];
  snprintf(row, sizeof row, "%s, %d thread%s", name, threads, threads > 1 ? "s" : "");
  snprintf(loop, sizeof loop, threads > 1 ? "C loop -O3, %d pthreads" : "C loop -O3", threads);
  bench_record(row, t[0] / 1e6, loop, t[1] / 1e6, "ms");
  ct_executor_free(e);
}

static void adam_row(const bench_cfg *cfg, int threads) {
  const int64_t n = (int64_t)1 << 24;
  ct_scope *s = ct_scope_new();
  tr = (__typeof__(tr)){.p = put(s, "p", CT_DIMS(n)), .g = put(s, "g", CT_DIMS(n)),
                        .m1 = put(s, "m1", CT_DIMS(n)), .m2 = put(s, "m2", CT_DIMS(n))};
  for (int64_t i = 0; i < n; i++) tr.m2[i] = tr.m2[i] * tr.m2[i];
  float *lr = put(s, "lr", CT_DIMS(1)), *b1p = put(s, "b1p", CT_DIMS(1));
  float *b2p = put(s, "b2p", CT_DIMS(1));
  *lr = 1e-3f;
  *b1p = 0.9f;
  *b2p = 0.999f;
  tr.b1 = 0.9f;
  tr.b2 = 0.999f;
  tr.lr_t = *lr * sqrtf(1 - *b2p) / (1 - *b1p);
  tr.eps_t = 1e-8f * sqrtf(1 - *b2p);
  ct_program *p = ct_program_new();
  if (p == NULL || BENCH_APPEND(p, "adam", "Param", "p", "Grad", "g", "LearningRate", "lr",
                                "Moment1", "m1", "Moment2", "m2", "Beta1Pow", "b1p", "Beta2Pow",
                                "b2p", ">ParamOut", "p", ">Moment1Out", "m1", ">Moment2Out", "m2",
                                ">Beta1PowOut", "b1p", ">Beta2PowOut", "b2p") != 0) {
    fail("adam");
  }
  loop_row(cfg, s, p, adam_part, (size_t)n, "adam 16M float32 in place", threads);
  ct_program_free(p);
  ct_scope_free(s);
}

static void bias_grad_row(const bench_cfg *cfg, int threads) {
  const int64_t rows = 4096, cols = 4096;
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_DIMS(rows, cols));
  put(s, "y", CT_DIMS(cols));
  tr = (__typeof__(tr)){.g = put(s, "g", CT_DIMS(rows, cols)),
                        .dx = put(s, "cdx", CT_DIMS(rows, cols)), .dy = put(s, "cdy", CT_DIMS(cols)),
                        .rows = (size_t)rows, .cols = (size_t)cols};
  ct_program *p = ct_program_new();
  if (p == NULL || BENCH_APPEND(p, "elementwise_add_grad", "X", "x", "Y", "y", "Out@GRAD", "g",
                                ">X@GRAD", "dx", ">Y@GRAD", "dy") != 0) {
    fail("elementwise_add_grad");
  }
  loop_row(cfg, s, p, bias_part, (size_t)cols, "elementwise_add_grad [4096,4096] + [4096] float32",
           threads);
  ct_program_free(p);
  ct_scope_free(s);
}

void bench_kernels_rows(const bench_cfg *cfg) {
  ct_set_num_threads(0);
  int all = ct_get_num_threads();
  int counts[2] = {1, all > MAX_TEAM ? MAX_TEAM : all};
  for (int k = 0; k < (all > 1 ? 2 : 1); k++) {
    bench_set_threads(counts[k]);
    add_rows(cfg, (int64_t)1 << 24, "16M", counts[k], false);
    add_rows(cfg, (int64_t)1 << 15, "32K", counts[k], false);
    add_rows(cfg, (int64_t)1 << 24, "16M", counts[k], true);
    for (int op = 0; op < 3; op++) square_row(cfg, op, counts[k]);
    adam_row(cfg, counts[k]);
    bias_grad_row(cfg, counts[k]);
  }
  bench_set_threads(1);
}
