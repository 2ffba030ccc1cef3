/* SPDX-License-Identifier: Apache-2.0 */
/* ops/recurrent.h: what the recurrent op (ops/recurrent.c) and its gradient
 * (ops/recurrent_grad.c) share: their slot and attribute indices and the name lists their string
 * attributes hold. */
#ifndef CORTEN_OPS_RECURRENT_H
#define CORTEN_OPS_RECURRENT_H

#include "ops/defs.h"

/* recurrent: X, InitStates, Params -> Out, FinalStates, StepScopes. */
enum { CT__RNN_X, CT__RNN_INIT, CT__RNN_PARAMS };
enum { CT__RNN_OUT, CT__RNN_FINAL, CT__RNN_SCOPES };
enum {
  CT__RNN_PROGRAM,
  CT__RNN_STATES,
  CT__RNN_EX_STATES,
  CT__RNN_STEP_INPUTS,
  CT__RNN_STEP_OUTPUTS,
  CT__RNN_REVERSE
};

/* A comma-separated list of names split in place (spaces around names dropped). */
typedef struct ct__names {
  char *buf;
  char **v;
  size_t n;
} ct__names;

/* Splits s (NULL: no names) into l. CT_ERR_OUT_OF_MEMORY, or CT_ERR_INVALID_ARGUMENT for an
 * empty name between commas; nothing is recorded (the caller names the op and attribute), and l
 * holds nothing on failure. */
ct_status ct__names_split(const char *s, ct__names *l);
void ct__names_free(ct__names *l);

/* The index of name in l, or -1. */
long ct__names_find(const ct__names *l, const char *name);

#endif /* CORTEN_OPS_RECURRENT_H */
