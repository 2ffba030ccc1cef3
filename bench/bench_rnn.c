/* SPDX-License-Identifier: Apache-2.0 */
/* bench_rnn.c: the recurrent op's cost per step, next to the same step ops run flat.
 *   recurrent per step   an Elman cell h = tanh(x W + h_prev U + b), B = 1, D = H = 8, T = 64
 *                        (small, so that what the op adds per step shows): a prepared program
 *                        holding one recurrent op, per step
 *                        [one prepared program of the T steps' ops written out, each step's
 *                         variables named apart: what the op runs, without the step scopes]
 * Single thread; medians after a warm-up (which binds the step programs). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <corten/corten.h>

#include "bench_util.h"

enum { B = 1, D = 8, H = 8, T = 64 };

static int put(ct_scope *s, const char *name, ct_ddim dims) {
  ct_tensor *t = ct_var_tensor(ct_scope_var(s, name));
  if (t == NULL || ct_tensor_resize(t, dims) != CT_OK) return -1;
  float *d = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu());
  if (d == NULL) return -1;
  for (int64_t i = 0; i < ct_tensor_numel(t); i++) d[i] = (float)(i % 13) * 0.01f - 0.06f;
  return 0;
}

/* The step's ops into p; names get the suffix sfx (the flat program's step t), the previous
 * state is h_prev, the new one h. */
static int append_step(ct_program *p, const char *x, const char *h_prev, const char *h,
                       const char *sfx) {
  char xw[32], hu[32], sum[32], pre[32];
  snprintf(xw, sizeof xw, "xw%s", sfx);
  snprintf(hu, sizeof hu, "hu%s", sfx);
  snprintf(sum, sizeof sum, "s%s", sfx);
  snprintf(pre, sizeof pre, "pre%s", sfx);
  return BENCH_APPEND(p, "matmul", "X", x, "Y", "W", ">Out", xw) ||
         BENCH_APPEND(p, "matmul", "X", h_prev, "Y", "U", ">Out", hu) ||
         BENCH_APPEND(p, "elementwise_add", "X", xw, "Y", hu, ">Out", sum) ||
         BENCH_APPEND(p, "elementwise_add", "X", sum, "Y", "b", ">Out", pre) ||
         BENCH_APPEND(p, "tanh", "X", pre, ">Out", h);
}

/* A program of one recurrent op over x_seq, in s. */
static ct_program *rnn_program(void) {
  ct_program *step = ct_program_new(), *p = ct_program_new();
  ct_op *op = ct_op_new("recurrent");
  if (step == NULL || p == NULL || op == NULL || append_step(step, "x", "h_prev", "h", "") != 0 ||
      ct_op_set_attr_program(op, "step_program", step) != CT_OK) {
    ct_program_free(step);
    ct_program_free(p);
    ct_op_free(op);
    return NULL;
  }
  const char *params[] = {"W", "U", "b"};
  if (ct_op_set_attr_string(op, "states", "h") != CT_OK ||
      ct_op_set_attr_string(op, "ex_states", "h_prev") != CT_OK ||
      ct_op_set_attr_string(op, "step_inputs", "x") != CT_OK ||
      ct_op_set_attr_string(op, "step_outputs", "h") != CT_OK ||
      ct_op_set_input(op, "X", "x_seq") != CT_OK ||
      ct_op_set_input(op, "InitStates", "h0") != CT_OK ||
      ct_op_set_inputs(op, "Params", params, 3) != CT_OK ||
      ct_op_set_output(op, "Out", "h_seq") != CT_OK ||
      ct_op_set_output(op, "FinalStates", "h_last") != CT_OK ||
      ct_op_set_output(op, "StepScopes", "steps") != CT_OK) {
    ct_op_free(op);
    ct_program_free(p);
    return NULL;
  }
  if (ct_program_append(p, op) != CT_OK) {
    ct_program_free(p);
    return NULL;
  }
  return p;
}

/* The T steps written out: x_t and h_t for each step, h_-1 = h0. */
static ct_program *flat_program(ct_scope *s) {
  ct_program *p = ct_program_new();
  if (p == NULL) return NULL;
  for (int t = 0; t < T; t++) {
    char x[32], h_prev[32], h[32], sfx[16];
    snprintf(sfx, sizeof sfx, "_%d", t);
    snprintf(x, sizeof x, "x_%d", t);
    snprintf(h_prev, sizeof h_prev, t == 0 ? "h0" : "h_%d", t - 1);
    snprintf(h, sizeof h, "h_%d", t);
    if (put(s, x, CT_DIMS(B, D)) != 0 || append_step(p, x, h_prev, h, sfx) != 0) {
      ct_program_free(p);
      return NULL;
    }
  }
  return p;
}

static void run_batch(void *arg, size_t iters) {
  for (size_t i = 0; i < iters; i++) {
    if (ct_executor_run(arg) != CT_OK) {
      fprintf(stderr, "bench_rnn: %s\n", ct_last_error());
      exit(1);
    }
  }
}

void bench_rnn_rows(const bench_cfg *cfg) {
  const char *name = "recurrent per step (Elman, B 1, H 8, T 64)";
  const char *base = "flat prepared program, same ops";
  ct_scope *s = ct_scope_new();
  int ok = s != NULL && put(s, "W", CT_DIMS(D, H)) == 0 && put(s, "U", CT_DIMS(H, H)) == 0 &&
           put(s, "b", CT_DIMS(H)) == 0 && put(s, "h0", CT_DIMS(B, H)) == 0 &&
           put(s, "x_seq", CT_DIMS(T, B, D)) == 0;
  ct_program *rp = ok ? rnn_program() : NULL, *fp = ok ? flat_program(s) : NULL;
  ct_executor *re = rp ? ct_executor_new(rp, s, ct_cpu()) : NULL;
  ct_executor *fe = fp ? ct_executor_new(fp, s, ct_cpu()) : NULL;
  if (re == NULL || fe == NULL) {
    fprintf(stderr, "bench_rnn: %s\n", ct_last_error());
    bench_record(name, NAN, base, NAN, "ns/step");
  } else {
    void (*const fns[2])(void *, size_t) = {run_batch, run_batch};
    void *const args[2] = {re, fe};
    double t[2];
    bench_median_multi_ns(2, fns, args, cfg->quick ? 20 : 200, cfg->reps, t);
    bench_record(name, t[0] / T, base, t[1] / T, "ns/step");
  }
  ct_executor_free(re);
  ct_executor_free(fe);
  ct_program_free(rp);
  ct_program_free(fp);
  ct_scope_free(s);
}
