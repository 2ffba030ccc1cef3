/* SPDX-License-Identifier: Apache-2.0 */
/* bench_memory.c: the peak host memory of one run of a 4-layer MLP forward program
 * (batch 512, widths 1024 -> 1024 -> 1024 -> 1024 -> 256: matmul, elementwise_add of a bias,
 * relu; no relu after the last layer), measured with ct_memory_stats (peak of what tensors
 * hold) over a steady-state run (after a first run has sized everything), with and without
 * ct_executor_options.free_intermediates; and of one training step of the same MLP
 * (softmax_with_cross_entropy over 256 classes, mean, the backward pass, sgd on every
 * parameter in place) with free_intermediates, against the same bound over the whole step.
 *   [the bound the liveness of the program's variables sets: computed here from the program's
 *    wiring and the variables' sizes: before op k runs, the parameters and the input are live,
 *    and so is every variable an earlier op wrote that op k or a later op reads, or that no
 *    later op reads (a result, kept); while op k runs its outputs are live too. The bound is the
 *    largest such sum over k. A program that frees perfectly reaches it; one that frees nothing
 *    holds every variable at once.] */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "bench_util.h"

#define LAYERS 4
#define BATCH 512

typedef struct mlp {
  char params[2 * LAYERS + 1][24]; /* variables that exist before the executor: x, W, b */
  int n_params;
} mlp;


static int put(ct_scope *s, mlp *m, const char *name, ct_ddim dims) {
  ct_tensor *t = ct_var_tensor(ct_scope_var(s, name));
  if (t == NULL || ct_tensor_resize(t, dims) != CT_OK) return -1;
  float *d = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu());
  if (d == NULL) return -1;
  for (int64_t i = 0; i < ct_tensor_numel(t); i++) d[i] = (float)(i % 13) * 0.01f - 0.05f;
  snprintf(m->params[m->n_params++], sizeof m->params[0], "%s", name);
  return 0;
}

/* Puts the parameters into the scope and builds the forward program. */
static ct_program *build(ct_scope *s, mlp *m) {
  static const int64_t widths[LAYERS + 1] = {1024, 1024, 1024, 1024, 256};
  ct_program *p = ct_program_new();
  if (p == NULL || put(s, m, "x", CT_DIMS(BATCH, widths[0])) != 0) {
    ct_program_free(p);
    return NULL;
  }
  char h[24] = "x";
  for (int l = 0; l < LAYERS; l++) {
    char w[24], b[24], mm[24], z[24], r[24];
    snprintf(w, sizeof w, "W%d", l);
    snprintf(b, sizeof b, "b%d", l);
    snprintf(mm, sizeof mm, "mm%d", l);
    snprintf(z, sizeof z, "z%d", l);
    snprintf(r, sizeof r, "h%d", l);
    if (put(s, m, w, CT_DIMS(widths[l], widths[l + 1])) != 0 ||
        put(s, m, b, CT_DIMS(widths[l + 1])) != 0) {
      ct_program_free(p);
      return NULL;
    }
    bool ok = BENCH_APPEND(p, "matmul", "X", h, "Y", w, ">Out", mm) == 0 &&
              BENCH_APPEND(p, "elementwise_add", "X", mm, "Y", b, ">Out", z) == 0;
    if (ok && l + 1 < LAYERS) {
      ok = BENCH_APPEND(p, "relu", "X", z, ">Out", r) == 0;
      snprintf(h, sizeof h, "%s", r);
    }
    if (!ok) {
      ct_program_free(p);
      return NULL;
    }
  }
  return p;
}

/* ---- The liveness bound, read from any program ----------------------------------------- */

#define MAX_NAMES 256

/* The variables of a program and, per op, which it reads and writes (read through the public
 * wiring: ct_op_type_get for the slots, ct_op_input / ct_op_output for the names). */
typedef struct names {
  const char *v[MAX_NAMES];
  int n;
} names;

static int name_index(names *ns, const char *name) {
  for (int i = 0; i < ns->n; i++) {
    if (strcmp(ns->v[i], name) == 0) return i;
  }
  if (ns->n == MAX_NAMES) return -1;
  ns->v[ns->n] = name;
  return ns->n++;
}

static size_t tensor_bytes(const ct_scope *s, const char *name) {
  const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, name));
  return t == NULL ? 0 : (size_t)ct_tensor_numel(t) * ct_dtype_size(ct_tensor_dtype(t));
}

/* The liveness bound of program p over s, as at the top of the file, read from the program's own
 * wiring; `before` lists the variables that existed before the executor (the parameters, the
 * input, the labels). */
static size_t liveness_bound(const ct_program *p, const ct_scope *s, const names *before) {
  names ns = {.n = 0};
  int written[MAX_NAMES], last_read[MAX_NAMES];
  bool fixed[MAX_NAMES] = {false};
  for (int i = 0; i < MAX_NAMES; i++) written[i] = last_read[i] = -1;
  for (int i = 0; i < before->n; i++) {
    int v = name_index(&ns, before->v[i]);
    if (v >= 0) fixed[v] = true;
  }
  int n_ops = (int)ct_program_size(p);
  for (int k = 0; k < n_ops; k++) {
    const ct_op *op = ct_program_op(p, k);
    ct_op_def d;
    if (ct_op_type_get(ct_op_type(op), &d) != CT_OK) return 0;
    for (size_t sl = 0; sl < d.n_inputs; sl++) {
      for (size_t i = 0; i < ct_op_input_count(op, d.inputs[sl].name); i++) {
        int v = name_index(&ns, ct_op_input(op, d.inputs[sl].name, i));
        if (v < 0) return 0;
        if (written[v] >= 0 || fixed[v]) last_read[v] = k;
      }
    }
    for (size_t sl = 0; sl < d.n_outputs; sl++) {
      for (size_t i = 0; i < ct_op_output_count(op, d.outputs[sl].name); i++) {
        int v = name_index(&ns, ct_op_output(op, d.outputs[sl].name, i));
        if (v < 0) return 0;
        if (written[v] < 0) written[v] = k;
      }
    }
  }
  size_t fixed_bytes = 0, best = 0;
  for (int v = 0; v < ns.n; v++) {
    if (fixed[v]) fixed_bytes += tensor_bytes(s, ns.v[v]);
  }
  for (int k = 0; k < n_ops; k++) {
    size_t live = fixed_bytes;
    for (int v = 0; v < ns.n; v++) {
      if (fixed[v] || written[v] < 0 || written[v] > k) continue;
      if (last_read[v] < written[v] || last_read[v] >= k) live += tensor_bytes(s, ns.v[v]);
    }
    if (live > best) best = live;
  }
  return best;
}


/* The training step: the forward MLP, the loss, the backward pass, sgd on each parameter. */
static ct_program *build_step(ct_scope *s, mlp *m, names *before) {
  ct_program *p = build(s, m);
  if (p == NULL) return NULL;
  int64_t labels[BATCH];
  for (int i = 0; i < BATCH; i++) labels[i] = i % 256;
  const float lr = 0.01f;
  ct_tensor *lt = ct_var_tensor(ct_scope_var(s, "labels"));
  ct_tensor *rt = ct_var_tensor(ct_scope_var(s, "lr"));
  const char *params[2 * LAYERS];
  for (int i = 1; i < m->n_params; i++) params[i - 1] = m->params[i]; /* all but x */
  bool ok = lt != NULL && rt != NULL &&
            ct_tensor_set_value(lt, labels, CT_DIMS(BATCH, 1), CT_INT64, ct_cpu()) == CT_OK &&
            ct_tensor_set_value(rt, &lr, CT_DIMS(1), CT_FLOAT32, ct_cpu()) == CT_OK;
  char last[24];
  snprintf(last, sizeof last, "z%d", LAYERS - 1);
  ok = ok && BENCH_APPEND(p, "softmax_with_cross_entropy", "Logits", last, "Label", "labels",
                    ">Softmax", "prob", ">Loss", "losses") == 0;
  ok = ok && BENCH_APPEND(p, "mean", "X", "losses", ">Out", "loss") == 0;
  ok = ok && ct_program_append_backward(p, "loss", params, (size_t)m->n_params - 1) == CT_OK;
  for (int i = 0; ok && i < m->n_params - 1; i++) {
    char g[32];
    snprintf(g, sizeof g, "%s@GRAD", params[i]);
    ok = BENCH_APPEND(p, "sgd", "Param", params[i], "Grad", g, "LearningRate", "lr", ">ParamOut",
                params[i]) == 0;
  }
  if (!ok) {
    ct_program_free(p);
    return NULL;
  }
  before->n = 0;
  for (int i = 0; i < m->n_params; i++) before->v[before->n++] = m->params[i];
  before->v[before->n++] = "labels";
  before->v[before->n++] = "lr";
  return p;
}

/* The peak of one steady-state run of the forward program or the training step: after a first
 * run, reset the peak, run, read it; and the liveness bound of the program run. */
static double run_peak(bool training, bool free_intermediates, size_t *bound) {
  ct_scope *s = ct_scope_new();
  mlp *m = calloc(1, sizeof *m);
  names before = {.n = 0};
  ct_program *p = NULL;
  if (s != NULL && m != NULL) p = training ? build_step(s, m, &before) : build(s, m);
  for (int i = 0; !training && p != NULL && i < m->n_params; i++) {
    before.v[before.n++] = m->params[i];
  }
  ct_executor_options o = {.free_intermediates = free_intermediates};
  ct_executor *e = p != NULL ? ct_executor_new_with(p, s, ct_cpu(), &o) : NULL;
  ct_memory_stats st;
  double peak = NAN;
  if (e != NULL && ct_executor_run(e) == CT_OK) {
    ct_memory_reset_peak(ct_cpu());
    if (ct_executor_run(e) == CT_OK && ct_memory_stats_get(ct_cpu(), &st) == CT_OK) {
      peak = (double)st.peak;
      *bound = liveness_bound(p, s, &before);
    }
  }
  if (isnan(peak)) fprintf(stderr, "bench_memory: %s\n", ct_last_error());
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
  free(m);
  return peak;
}

void bench_memory_rows(const bench_cfg *cfg) {
  (void)cfg;
  const double mib = 1024.0 * 1024.0;
  size_t bound_keep = 0, bound_free = 0;
  double keep = run_peak(false, false, &bound_keep);
  double freed = run_peak(false, true, &bound_free);
  bench_record("MLP forward peak, intermediates kept", keep / mib, "liveness bound of the program",
               bound_keep > 0 ? (double)bound_keep / mib : NAN, "MiB");
  bench_record("MLP forward peak, free_intermediates", freed / mib, "liveness bound of the program",
               bound_free > 0 ? (double)bound_free / mib : NAN, "MiB");
  size_t bound_step = 0;
  double step = run_peak(true, true, &bound_step);
  bench_record("MLP training step peak, free_intermediates", step / mib,
               "liveness bound of the step", bound_step > 0 ? (double)bound_step / mib : NAN,
               "MiB");
}
