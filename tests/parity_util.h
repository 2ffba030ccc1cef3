/* SPDX-License-Identifier: Apache-2.0 */
/* What the C sides of the PyTorch parity tests (torch_parity*.c) share: the failure report,
 * writing a variable as the scripts read it (tests/python/torch_parity_util.py), and main.
 * Each program sets parity_name and calls parity_main with its run function. */
#ifndef CORTEN_TESTS_PARITY_UTIL_H
#define CORTEN_TESTS_PARITY_UTIL_H

#include <stdio.h>

#include <corten/corten.h>

/* The program's name, for messages. */
static const char *parity_name;

/* Reports what failed with corten's last error; returns 1. */
static int fail(const char *what) {
  fprintf(stderr, "%s: %s: %s\n", parity_name, what, ct_last_error());
  return 1;
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
