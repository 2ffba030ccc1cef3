/* SPDX-License-Identifier: Apache-2.0 */
/* ops/nn_impl.h: what the builder's files share (ops/nn.c: the builder, names, parameters and
 * their initialisers, the undo of a failed layer; ops/nn_layers.c: layers and losses;
 * ops/nn_optim.c: optimizers). The builder makes its ops through the public op API; it sits in
 * ops/ only to take back the ops of a layer that failed half-way (ct__program_retain). */
#ifndef CORTEN_OPS_NN_IMPL_H
#define CORTEN_OPS_NN_IMPL_H

#include <stdarg.h>

#include <corten/nn.h>

#include "ops/op_impl.h"

struct ct_nn {
  ct_scope *scope;
  uint64_t seed;
  ct_program *startup, *main;
  char **params; /* trainable parameter names, owned */
  size_t n_params, cap_params;
  char **names; /* every name handed out (outputs), owned */
  size_t n_names, cap_names;
  struct { char kind[24]; int count; } counters[16];
  size_t n_counters;
  uint64_t n_inits; /* initialisers made: each gets its own seed */
};

/* A layer being built: where both programs, the parameters and the name counters stood, to
 * undo it on failure (a failed layer takes no number). */
typedef struct nn_undo {
  size_t main_n, startup_n, params_n, n_counters;
  int counts[16];
  uint64_t n_inits;
} nn_undo;

void ct__nn_begin(ct_nn *nn, nn_undo *u);
/* Takes back everything since ct__nn_begin; returns NULL for the layer's return. */
const char *ct__nn_fail(ct_nn *nn, const nn_undo *u);

/* "<kind>_<k>", k counting this kind's layers, into buf. */
void ct__nn_layer_name(ct_nn *nn, const char *kind, char *buf, size_t cap);
/* A name kept by nn (formatted); NULL when out of memory. */
const char *ct__nn_keep(ct_nn *nn, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends to p an op of type with the given slot/name pairs: inputs up to NULL, then outputs up
 * to NULL. The op (the program's), or NULL with the error. */
ct_op *ct__nn_add(ct_program *p, const char *type, ...);

/* A parameter `name` of dims (rank n) made by init in the startup program, fan_in/fan_out for
 * the scaled kinds; trainable ones are listed for the optimizers. CT_OK or the error. */
ct_status ct__nn_param(ct_nn *nn, const char *name, const int64_t *dims, int n, ct_nn_init init,
                   double fan_in, double fan_out, bool trainable);

/* Whether act is a known activation (NULL or "" is: none). */
bool ct__nn_act_known(const char *act);
/* x through activation act (none: x itself) under the layer's name; NULL with the error. */
const char *ct__nn_act(ct_nn *nn, const char *layer, const char *x, const char *act);

/* Checks a name argument of fn; CT_OK or CT_ERR_INVALID_ARGUMENT naming it. */
ct_status ct__nn_check_name(const char *fn, const char *what, const char *name);

#endif /* CORTEN_OPS_NN_IMPL_H */
