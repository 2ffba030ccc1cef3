/* SPDX-License-Identifier: Apache-2.0 */
/* bench_expr.c: lazy expressions (corten/expr.h), each figure next to baselines from the same run.
 *   expr a*b+c 16M   ct_expr_assign(d, CT_SAVETO, a * b + c) over 16M float32
 *                                          [a hand-written C loop d[i] = a[i] * b[i] + c[i],
 *                                           this file being compiled at -O3 without FMA
 *                                           contraction, as the library is;
 *                                           the same sum as two ops (elementwise_mul, then
 *                                           elementwise_add) in a prepared program]
 * Single thread, like the ops. corten and the baselines take turns (bench_median_multi_ns). */
#include <stdio.h>
#include <stdlib.h>

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

void bench_expr_rows(const bench_cfg *cfg) {
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
