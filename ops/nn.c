/* SPDX-License-Identifier: Apache-2.0 */
/* ops/nn.c: the program builder (corten/nn.h): its two programs, the names it hands out, the
 * parameters and their initialisers, and the undo of a layer that failed half-way. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "ops/nn_impl.h"

ct_nn *ct_nn_new(ct_scope *scope, uint64_t seed) {
  if (scope == NULL) {
    return ct__error_null(CT_ERR_INVALID_ARGUMENT, "ct_nn_new: the scope is NULL");
  }
  ct_nn *nn = ct__calloc(1, sizeof *nn);
  if (nn == NULL || (nn->startup = ct_program_new()) == NULL ||
      (nn->main = ct_program_new()) == NULL) {
    ct_nn_free(nn);
    return ct__error_null(CT_ERR_OUT_OF_MEMORY, "ct_nn_new: out of host memory");
  }
  nn->scope = scope;
  nn->seed = seed;
  return nn;
}

void ct_nn_free(ct_nn *nn) {
  if (nn == NULL) return;
  ct_program_free(nn->startup);
  ct_program_free(nn->main);
  for (size_t i = 0; i < nn->n_params; i++) free(nn->params[i]);
  for (size_t i = 0; i < nn->n_names; i++) free(nn->names[i]);
  free(nn->params);
  free(nn->names);
  free(nn);
}

ct_program *ct_nn_startup(ct_nn *nn) { return nn != NULL ? nn->startup : NULL; }
ct_program *ct_nn_main(ct_nn *nn) { return nn != NULL ? nn->main : NULL; }
size_t ct_nn_param_count(const ct_nn *nn) { return nn != NULL ? nn->n_params : 0; }

const char *ct_nn_param(const ct_nn *nn, size_t i) {
  return nn != NULL && i < nn->n_params ? nn->params[i] : NULL;
}

ct_status ct_nn_run_startup(ct_nn *nn, ct_place place) {
  if (nn == NULL) return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_nn_run_startup: nn is NULL");
  ct_executor *e = ct_executor_new(nn->startup, nn->scope, place);
  if (e == NULL) return ct_last_status();
  ct_status s = ct_executor_run(e);
  ct_executor_free(e);
  return s;
}

/* ---- Names and undo ------------------------------------------------------------------------ */

static bool push(char ***v, size_t *n, size_t *cap, char *s) {
  if (*n == *cap) {
    size_t c = *cap ? 2 * *cap : 16;
    char **g = ct__realloc(*v, c * sizeof *g);
    if (g == NULL) return false;
    *v = g;
    *cap = c;
  }
  (*v)[(*n)++] = s;
  return true;
}

static char *copy(const char *s) {
  size_t n = strlen(s) + 1;
  char *c = ct__malloc(n);
  if (c != NULL) memcpy(c, s, n);
  return c;
}

const char *ct__nn_keep(ct_nn *nn, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  char *c = copy(buf);
  if (c == NULL || !push(&nn->names, &nn->n_names, &nn->cap_names, c)) {
    free(c);
    return ct__error_null(CT_ERR_OUT_OF_MEMORY, "corten/nn.h: out of host memory for a name");
  }
  return c;
}

void ct__nn_layer_name(ct_nn *nn, const char *kind, char *buf, size_t cap) {
  size_t i = 0;
  while (i < nn->n_counters && strcmp(nn->counters[i].kind, kind) != 0) i++;
  if (i == nn->n_counters && i < sizeof nn->counters / sizeof nn->counters[0]) {
    snprintf(nn->counters[i].kind, sizeof nn->counters[i].kind, "%s", kind);
    nn->counters[i].count = 0;
    nn->n_counters++;
  }
  int k = i < nn->n_counters ? nn->counters[i].count++ : 0;
  snprintf(buf, cap, "%s_%d", kind, k);
}

void ct__nn_begin(ct_nn *nn, nn_undo *u) {
  *u = (nn_undo){ct_program_size(nn->main), ct_program_size(nn->startup), nn->n_params,
                 nn->n_counters, {0}, nn->n_inits};
  for (size_t i = 0; i < nn->n_counters; i++) u->counts[i] = nn->counters[i].count;
}

static void drop_after(ct_program *p, size_t n) {
  size_t size = ct_program_size(p);
  if (size <= n) return;
  bool keep[1024];
  bool *k = size <= 1024 ? keep : ct__malloc(size * sizeof *k);
  if (k == NULL) return; /* the extra ops stay: nothing better is possible without memory */
  for (size_t i = 0; i < size; i++) k[i] = i < n;
  ct__program_retain(p, k);
  if (k != keep) free(k);
}

const char *ct__nn_fail(ct_nn *nn, const nn_undo *u) {
  ct_status s = ct_last_status();
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", ct_last_error());
  drop_after(nn->main, u->main_n);
  drop_after(nn->startup, u->startup_n);
  while (nn->n_params > u->params_n) free(nn->params[--nn->n_params]);
  nn->n_counters = u->n_counters;
  for (size_t i = 0; i < nn->n_counters; i++) nn->counters[i].count = u->counts[i];
  nn->n_inits = u->n_inits;
  ct__error(s == CT_OK ? CT_ERR_OUT_OF_MEMORY : s, "%s", msg);
  return NULL;
}

ct_status ct__nn_check_name(const char *fn, const char *what, const char *name) {
  if (name != NULL && name[0] != '\0') return CT_OK;
  return ct__error(CT_ERR_INVALID_ARGUMENT, "%s: %s is %s: name a variable", fn, what,
                   name == NULL ? "NULL" : "empty");
}

/* ---- Ops and parameters -------------------------------------------------------------------- */

ct_op *ct__nn_add(ct_program *p, const char *type, ...) {
  ct_op *op = ct_op_new(type);
  if (op == NULL) return NULL;
  va_list ap;
  va_start(ap, type);
  ct_status s = CT_OK;
  for (int output = 0; output < 2; output++) {
    for (const char *slot; (slot = va_arg(ap, const char *)) != NULL;) {
      const char *name = va_arg(ap, const char *);
      if (s != CT_OK) continue;
      s = output ? ct_op_set_output(op, slot, name) : ct_op_set_input(op, slot, name);
    }
  }
  va_end(ap);
  if (s != CT_OK) {
    ct_op_free(op);
    return NULL;
  }
  return ct_program_append(p, op) == CT_OK ? op : NULL;
}

ct_status ct__nn_param(ct_nn *nn, const char *name, const int64_t *dims, int n, ct_nn_init init,
                   double fan_in, double fan_out, bool trainable) {
  double lo = 0, hi = 0, value = 0, mean = 0, std = 0;
  const char *type = "uniform_random";
  switch (init.kind) {
    case CT_NN_INIT_DEFAULT: hi = 1 / sqrt(fan_in); lo = -hi; break;
    case CT_NN_INIT_XAVIER_UNIFORM:
      hi = (init.a > 0 ? init.a : 1) * sqrt(6 / (fan_in + fan_out));
      lo = -hi;
      break;
    case CT_NN_INIT_KAIMING_UNIFORM:
      hi = (init.a > 0 ? init.a : 1) * sqrt(6 / fan_in);
      lo = -hi;
      break;
    case CT_NN_INIT_UNIFORM: lo = init.a; hi = init.b; break;
    case CT_NN_INIT_NORMAL: type = "gaussian_random"; mean = init.a; std = init.b; break;
    case CT_NN_INIT_CONSTANT: type = "fill_constant"; value = init.a; break;
    case CT_NN_INIT_ZEROS: type = "fill_constant"; break;
    default:
      return ct__error(CT_ERR_INVALID_ARGUMENT, "corten/nn.h: parameter '%s': initialiser kind %d "
                       "is not a ct_nn_init_kind", name, (int)init.kind);
  }
  if (!(lo <= hi) || !(std >= 0)) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "corten/nn.h: parameter '%s': the initialiser's "
                     "range [%g, %g) or deviation %g is not valid", name, lo, hi, std);
  }
  ct_op *op = ct__nn_add(nn->startup, type, NULL, "Out", name, NULL);
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_attr_ints(op, "shape", dims, (size_t)n);
  if (s == CT_OK && strcmp(type, "fill_constant") == 0) {
    s = ct_op_set_attr_float(op, "value", value);
  } else if (s == CT_OK) {
    int64_t seed = (int64_t)((nn->seed * 1000003u + ++nn->n_inits) & 0x7fffffffffffffff);
    s = ct_op_set_attr_int(op, "seed", seed);
    if (s == CT_OK && strcmp(type, "uniform_random") == 0) {
      s = ct_op_set_attr_float(op, "min", lo);
      if (s == CT_OK) s = ct_op_set_attr_float(op, "max", hi);
    } else if (s == CT_OK) {
      s = ct_op_set_attr_float(op, "mean", mean);
      if (s == CT_OK) s = ct_op_set_attr_float(op, "std", std);
    }
  }
  if (s != CT_OK || !trainable) return s;
  char *c = copy(name);
  if (c == NULL || !push(&nn->params, &nn->n_params, &nn->cap_params, c)) {
    free(c);
    return ct__error(CT_ERR_OUT_OF_MEMORY, "corten/nn.h: out of host memory");
  }
  return CT_OK;
}

/* ---- Activations --------------------------------------------------------------------------- */

static const char *const acts[] = {"relu", "tanh", "sigmoid", "gelu"};

bool ct__nn_act_known(const char *act) {
  if (act == NULL || act[0] == '\0') return true;
  for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
    if (strcmp(act, acts[i]) == 0) return true;
  }
  return false;
}

const char *ct__nn_act(ct_nn *nn, const char *layer, const char *x, const char *act) {
  if (act == NULL || act[0] == '\0') return x;
  const char *out = ct__nn_keep(nn, "%s.act", layer);
  if (out == NULL || ct__nn_add(nn->main, act, "X", x, NULL, "Out", out, NULL) == NULL) return NULL;
  return out;
}
