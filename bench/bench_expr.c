/* SPDX-License-Identifier: Apache-2.0 */
/* bench_expr.c: lazy expressions (corten/expr.h), each figure next to baselines from the same run.
 *   expr a*b+c 16M   ct_expr_assign(d, CT_SAVETO, a * b + c) over 16M float32
 *                                          [a hand-written C loop d[i] = a[i] * b[i] + c[i],
 *                                           this file being compiled at -O3 without FMA
 *                                           contraction, as the library is;
 *                                           the same sum as two ops (elementwise_mul, then
 *                                           elementwise_add) in a prepared program]
 *   fuse 5 ops ... 4M   out = relu(b * scale(relu(x + b))) and relu(scale(sigmoid(tanh(x + b))))
 *                                          over 16M float32 (b a row of 1024 broadcast over
 *                                          x's 16384 rows), a program run with fuse_elementwise
 *                                          and free_intermediates
 *                                          [the same program with free_intermediates only;
 *                                           the peak memory of a run, both ways]
 *   ..., all cores     the memory-bound chain again at every core (ct_set_num_threads(0)),
 *                                          both sides split over corten's thread pool
 * Single thread otherwise, like the ops. corten and the baselines take turns (bench_median_multi_ns). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "bench_util.h"

static void fail(const char *what) {
  fprintf(stderr, "bench_expr: %s: %s\n", what, ct_last_error());
  exit(1);
}

static float *put(ct_scope *s, const char *name, int64_t n, float v) {
  ct_tensor *t = ct_var_tensor(ct_scope_var(s, name));
  if (t == NULL || ct_tensor_resize(t, CT_DIMS(n)) != CT_OK) fail(name);
  float *d = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu());
  if (d == NULL) fail(name);
  for (int64_t i = 0; i < n; i++) d[i] = v + (float)(i % 7);
  return d;
}

typedef struct fma_ctx {
  float *d;
  const float *a, *b, *c;
  size_t n;
} fma_ctx;

__attribute__((noinline)) static void mul_add_loop(float *d, const float *a, const float *b,
                                                   const float *c, size_t n) {
  for (size_t i = 0; i < n; i++) d[i] = a[i] * b[i] + c[i];
}

static void loop_batch(void *arg, size_t iters) {
  fma_ctx *x = arg;
  for (size_t r = 0; r < iters; r++) {
    mul_add_loop(x->d, x->a, x->b, x->c, x->n);
    BENCH_KEEP(x->d);
  }
}

typedef struct expr_ctx {
  ct_tensor *dst;
  const ct_expr *e;
} expr_ctx;

static void expr_batch(void *arg, size_t iters) {
  expr_ctx *x = arg;
  for (size_t r = 0; r < iters; r++) {
    if (ct_expr_assign(x->dst, CT_SAVETO, x->e) != CT_OK) fail("ct_expr_assign");
  }
}

static void program_batch(void *arg, size_t iters) {
  for (size_t r = 0; r < iters; r++) {
    if (ct_executor_run(arg) != CT_OK) fail("ct_executor_run");
  }
}

/* A scope holding x [16384, 1024] and the row b [1024] broadcast over it. */
static ct_scope *chain_scope(void) {
  ct_scope *s = ct_scope_new();
  if (s == NULL) fail("ct_scope_new");
  bench_put_pattern(s, "x", CT_DIMS(16384, 1024), 0.01f);
  bench_put_pattern(s, "b", CT_DIMS(1024), 0.02f);
  return s;
}

/* The 5-op chain t1 = x + b, t2 = ops[0](t1), .., out = ops[3](t4) (each op unary or "*b"). */
static ct_program *chain_program(const char *const ops[4]) {
  ct_program *p = ct_program_new();
  if (p == NULL || BENCH_APPEND(p, "elementwise_add", "X", "x", "Y", "b", ">Out", "t1") != 0) {
    fail("chain program");
  }
  static const char *const names[] = {"t1", "t2", "t3", "t4", "out"};
  for (int k = 0; k < 4; k++) {
    int r = strcmp(ops[k], "*b") == 0
                ? BENCH_APPEND(p, "elementwise_mul", "X", names[k], "Y", "b", ">Out", names[k + 1])
                : BENCH_APPEND(p, ops[k], "X", names[k], ">Out", names[k + 1]);
    if (r != 0) fail("chain program");
  }
  return p;
}

/* An executor of p over s, with free_intermediates and with or without fuse_elementwise, run
 * once; *peak_mib: that run's peak above what s held before, in MiB. */
static ct_executor *chain_executor(ct_program *p, ct_scope *s, bool fuse, double *peak_mib) {
  ct_executor_options o = {.free_intermediates = true, .fuse_elementwise = fuse};
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
  if (e == NULL) fail("ct_executor_new_with");
  ct_memory_stats st;
  ct_memory_reset_peak(ct_cpu());
  ct_memory_stats_get(ct_cpu(), &st);
  size_t before = st.allocated;
  program_batch(e, 1);
  ct_memory_stats_get(ct_cpu(), &st);
  *peak_mib = (double)(st.peak - before) / (1024.0 * 1024.0);
  return e;
}

static void fused_chain_rows(const bench_cfg *cfg, const char *name, const char *const ops[4]) {
  ct_scope *sf = chain_scope(), *sp = chain_scope();
  ct_program *p = chain_program(ops);
  double peak_fused, peak_plain;
  ct_executor *fused = chain_executor(p, sf, true, &peak_fused);
  ct_executor *plain = chain_executor(p, sp, false, &peak_plain);
  void (*fns[2])(void *, size_t) = {program_batch, program_batch};
  void *args[2] = {fused, plain};
  double t[2];
  bench_median_multi_ns(2, fns, args, 1, cfg->reps, t);
  char row[96];
  bench_record(name, t[0] / 1e6, "unfused, free_intermediates", t[1] / 1e6, "ms");
  snprintf(row, sizeof row, "%s peak", name);
  bench_record(row, peak_fused, "unfused, free_intermediates", peak_plain, "MiB");
  ct_executor_free(fused);
  ct_executor_free(plain);
  ct_program_free(p);
  ct_scope_free(sf);
  ct_scope_free(sp);
}

void bench_expr_rows(const bench_cfg *cfg) {
  static const char *const cheap[4] = {"relu", "scale", "*b", "relu"};
  static const char *const math[4] = {"tanh", "sigmoid", "scale", "relu"};
  fused_chain_rows(cfg, "fuse 5 ops +b,relu,scale,*b,relu 16M", cheap);
  ct_set_num_threads(0);
  if (ct_get_num_threads() > 1) {
    char row[96];
    snprintf(row, sizeof row, "fuse 5 ops +b,relu,scale,*b,relu 16M, %d threads",
             ct_get_num_threads());
    fused_chain_rows(cfg, row, cheap);
  }
  ct_set_num_threads(1);
  fused_chain_rows(cfg, "fuse 5 ops +b,tanh,sigmoid,scale,relu 16M", math);
  const int64_t n = (int64_t)1 << 24;
  ct_scope *s = ct_scope_new();
  if (s == NULL) fail("ct_scope_new");
  fma_ctx lc = {.n = (size_t)n};
  lc.a = put(s, "a", n, 1.0f);
  lc.b = put(s, "b", n, 0.5f);
  lc.c = put(s, "c", n, 2.0f);
  lc.d = put(s, "d", n, 0.0f); /* the C loop's output, written before timing */
  put(s, "t", n, 0.0f);
  put(s, "out", n, 0.0f);

  /* The fused expression into its own tensor, given memory by a first assignment. */
  ct_tensor *dst = ct_tensor_new();
  ct_expr *e = ct_expr_binary(
      CT_EXPR_ADD,
      ct_expr_binary(CT_EXPR_MUL, ct_expr_tensor(ct_var_get_tensor(ct_scope_find_var(s, "a"))),
                     ct_expr_tensor(ct_var_get_tensor(ct_scope_find_var(s, "b")))),
      ct_expr_tensor(ct_var_get_tensor(ct_scope_find_var(s, "c"))));
  if (dst == NULL || e == NULL) fail("building a * b + c");
  expr_ctx ec = {.dst = dst, .e = e};
  expr_batch(&ec, 1);

  /* The unfused program: t = a * b; out = t + c. */
  ct_program *p = ct_program_new();
  if (p == NULL || BENCH_APPEND(p, "elementwise_mul", "X", "a", "Y", "b", ">Out", "t") != 0 ||
      BENCH_APPEND(p, "elementwise_add", "X", "t", "Y", "c", ">Out", "out") != 0) {
    fail("program");
  }
  ct_executor *ex = ct_executor_new(p, s, ct_cpu());
  if (ex == NULL) fail("ct_executor_new");
  program_batch(ex, 1);

  void (*fns[3])(void *, size_t) = {expr_batch, loop_batch, program_batch};
  void *args[3] = {&ec, &lc, ex};
  double t[3];
  bench_median_multi_ns(3, fns, args, 1, cfg->reps, t);
  bench_record("expr d = a*b+c 16M float32", t[0] / 1e6, "hand-written -O3 C loop", t[1] / 1e6,
               "ms");
  bench_record("expr d = a*b+c 16M float32", t[0] / 1e6, "two ops (mul, add) in a program",
               t[2] / 1e6, "ms");

  ct_executor_free(ex);
  ct_program_free(p);
  ct_expr_free(e);
  ct_tensor_free(dst);
  ct_scope_free(s);
}
