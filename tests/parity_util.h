/* SPDX-License-Identifier: Apache-2.0 */
/* What the C sides of the PyTorch parity tests (torch_parity*.c) share: the failure report,
 * making ops (mk, add, with_*), adam and its state, the fixed input patterns, writing a variable
 * as the scripts read it (tests/python/torch_parity_util.py), the training loop, and main.
 * Each program sets parity_name and calls parity_main with its run function. The helpers a
 * program may not use are static inline. */
#ifndef CORTEN_TESTS_PARITY_UTIL_H
#define CORTEN_TESTS_PARITY_UTIL_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include <corten/corten.h>

/* The program's name, for messages. */
static const char *parity_name;

/* Reports what failed with corten's last error; returns 1. */
static int fail(const char *what) {
  fprintf(stderr, "%s: %s: %s\n", parity_name, what, ct_last_error());
  return 1;
}

/* An op of type with the given wiring: slot, name pairs for the inputs, NULL, then pairs for
 * the outputs, NULL. NULL on failure (recorded). */
static inline ct_op *mk(const char *type, ...) {
  ct_op *op = ct_op_new(type);
  if (op == NULL) return NULL;
  va_list ap;
  va_start(ap, type);
  ct_status s = CT_OK;
  for (int out = 0; out < 2; out++) {
    for (const char *slot = va_arg(ap, const char *); slot != NULL;
         slot = va_arg(ap, const char *)) {
      const char *name = va_arg(ap, const char *);
      if (s == CT_OK) s = out ? ct_op_set_output(op, slot, name) : ct_op_set_input(op, slot, name);
    }
  }
  va_end(ap);
  if (s != CT_OK) {
    ct_op_free(op);
    return NULL;
  }
  return op;
}

/* Appends op (NULL: the failure of making it). */
static inline ct_status add(ct_program *p, ct_op *op) {
  return op == NULL ? ct_last_status() : ct_program_append(p, op);
}

/* op with attribute name set (freed, NULL, when that fails; NULL passes through). */
static inline ct_op *with_int(ct_op *op, const char *name, int64_t v) {
  if (op != NULL && ct_op_set_attr_int(op, name, v) != CT_OK) {
    ct_op_free(op);
    return NULL;
  }
  return op;
}

static inline ct_op *with_bool(ct_op *op, const char *name, bool v) {
  if (op != NULL && ct_op_set_attr_bool(op, name, v) != CT_OK) {
    ct_op_free(op);
    return NULL;
  }
  return op;
}

static inline ct_op *with_string(ct_op *op, const char *name, const char *v) {
  if (op != NULL && ct_op_set_attr_string(op, name, v) != CT_OK) {
    ct_op_free(op);
    return NULL;
  }
  return op;
}

/* Sets int list attribute name of op to {a, b}. */
static inline ct_op *with_pair(ct_op *op, const char *name, int64_t a, int64_t b) {
  const int64_t v[2] = {a, b};
  if (op != NULL && ct_op_set_attr_ints(op, name, v, 2) != CT_OK) {
    ct_op_free(op);
    return NULL;
  }
  return op;
}

/* Appends ops[0..n) in order; after a failure frees the rest. */
static inline ct_status add_all(ct_program *p, ct_op *const *ops, size_t n) {
  ct_status s = CT_OK;
  for (size_t k = 0; k < n; k++) {
    if (s == CT_OK) {
      s = add(p, ops[k]);
    } else if (ops[k] != NULL) {
      ct_op_free(ops[k]);
    }
  }
  return s;
}

/* A float64 tensor of dims (1024 elements at most) in variable name, element i =
 * a sin(b i + c) + d. */
static inline ct_status put_pattern(ct_scope *s, const char *name, ct_ddim dims, double a,
                                    double b, double c, double d) {
  double v[1024];
  int64_t n = ct_ddim_numel(dims);
  if (n > 1024) return CT_ERR_OUT_OF_RANGE;
  for (int64_t i = 0; i < n; i++) v[i] = a * sin(b * (double)i + c) + d;
  return ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, name)), v, dims, CT_FLOAT64,
                             ct_cpu());
}

/* The names adam reads for param: its gradient and state, "<param><suffix>". */
static const char *const ADAM_SUFFIX[5] = {"@GRAD", ".m1", ".m2", ".b1p", ".b2p"};

/* adam's state of param (dims): zero moments <param>.m1, .m2 and the powers <param>.b1p = 0.9,
 * .b2p = 0.999. */
static inline ct_status put_adam_state(ct_scope *s, const char *param, ct_ddim dims) {
  ct_status st = CT_OK;
  for (int k = 1; k < 5 && st == CT_OK; k++) {
    char n[48];
    snprintf(n, sizeof n, "%s%s", param, ADAM_SUFFIX[k]);
    st = k < 3 ? put_pattern(s, n, dims, 0, 0, 0, 0)
               : put_pattern(s, n, CT_DIMS(1), 0, 0, 0, k == 3 ? 0.9 : 0.999);
  }
  return st;
}

/* Appends adam (learning rate in variable lr) on param, in place, with the state above. */
static inline ct_status add_adam(ct_program *p, const char *param) {
  char n[5][48];
  for (int k = 0; k < 5; k++) snprintf(n[k], sizeof n[k], "%s%s", param, ADAM_SUFFIX[k]);
  return add(p, mk("adam", "Param", param, "Grad", n[0], "LearningRate", "lr", "Moment1", n[1],
                   "Moment2", n[2], "Beta1Pow", n[3], "Beta2Pow", n[4], NULL, "ParamOut", param,
                   "Moment1Out", n[1], "Moment2Out", n[2], "Beta1PowOut", n[3], "Beta2PowOut",
                   n[4], NULL));
}

/* Writes variable name (float64 or int64) to f as "label count" (label NULL: the name) and its
 * values one per line (%.17g, exact for doubles). 0, or 1 when it holds nothing. */
static int write_var(FILE *f, ct_scope *s, const char *name, const char *label) {
  const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, name));
  if (t == NULL || !ct_tensor_has_memory(t)) return fail(name);
  int64_t n = ct_tensor_numel(t);
  fprintf(f, "%s %lld\n", label != NULL ? label : name, (long long)n);
  if (ct_tensor_dtype(t) == CT_INT64) {
    const int64_t *v = ct_tensor_data(t, CT_INT64);
    for (int64_t i = 0; i < n; i++) fprintf(f, "%lld\n", (long long)v[i]);
  } else {
    const double *v = ct_tensor_data(t, CT_FLOAT64);
    if (v == NULL) return fail(name);
    for (int64_t i = 0; i < n; i++) fprintf(f, "%.17g\n", v[i]);
  }
  return 0;
}

/* Writes each of the n params as "<name><suffix>". */
static int write_params(FILE *f, ct_scope *s, const char *const *params, size_t n,
                        const char *suffix) {
  for (size_t i = 0; i < n; i++) {
    char label[64];
    snprintf(label, sizeof label, "%s%s", params[i], suffix);
    if (write_var(f, s, params[i], label) != 0) return 1;
  }
  return 0;
}

/* Runs the training program p `steps` times over s on the CPU and writes: after the first step
 * the n_first variables first and each param's gradient "<param>@GRAD"; after every step k the
 * variable "loss" as "loss.<k>"; after the last the params as "<param>.final". */
static int parity_train(FILE *f, ct_scope *s, ct_program *p, int steps,
                        const char *const *first, size_t n_first, const char *const *params,
                        size_t n) {
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  if (e == NULL) return fail("making the executor");
  int rc = 0;
  for (int k = 0; k < steps && rc == 0; k++) {
    if (ct_executor_run(e) != CT_OK) {
      rc = fail("a training step");
      break;
    }
    for (size_t i = 0; k == 0 && i < n_first && rc == 0; i++) rc = write_var(f, s, first[i], NULL);
    for (size_t i = 0; k == 0 && i < n && rc == 0; i++) {
      char g[64];
      snprintf(g, sizeof g, "%s@GRAD", params[i]);
      rc = write_var(f, s, g, NULL);
    }
    char label[32];
    snprintf(label, sizeof label, "loss.%d", k);
    if (rc == 0) rc = write_var(f, s, "loss", label);
  }
  if (rc == 0) rc = write_params(f, s, params, n, ".final");
  ct_executor_free(e);
  return rc;
}

/* main: "NAME OUT" opens OUT and runs run(OUT, a new scope, a new program); returns its status
 * (0 written, 77 skipped, 1 failed), 1 when OUT cannot be written. */
static int parity_main(int argc, char **argv, int (*run)(FILE *f, ct_scope *s, ct_program *p)) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUT\n", parity_name);
    return 1;
  }
  FILE *f = fopen(argv[1], "w");
  if (f == NULL) {
    perror(argv[1]);
    return 1;
  }
  ct_scope *s = ct_scope_new();
  ct_program *p = ct_program_new();
  int rc = s != NULL && p != NULL ? run(f, s, p) : fail("setting up");
  ct_program_free(p);
  ct_scope_free(s);
  if (fclose(f) != 0 && rc == 0) rc = 1;
  return rc;
}

#endif /* CORTEN_TESTS_PARITY_UTIL_H */
