/* SPDX-License-Identifier: Apache-2.0 */
/* ops/recurrent_grad.h: what the recurrent_grad maker (ops/recurrent_grad.c) and its kernel
 * (ops/recurrent_grad_run.c) share: the slots, the one attribute beyond recurrent's and the
 * suffixes of the seed names. */
#ifndef CORTEN_OPS_RECURRENT_GRAD_H
#define CORTEN_OPS_RECURRENT_GRAD_H

#include "ops/recurrent.h"

enum { G_X, G_INIT, G_PARAMS, G_DOUT, G_DFINAL, G_SCOPES };
enum { G_DX, G_DINIT, G_DPARAMS };
enum { A_INIT_STATES = CT__RNN_REVERSE + 1 };

#define SEED_NEXT "@GRAD@next"
#define SEED_OUT "@GRAD@out"

/* "<a><suffix>" in new memory; NULL when out of memory (nothing recorded). */
char *ct__rnn_suffixed(const char *a, const char *suffix);

#endif /* CORTEN_OPS_RECURRENT_GRAD_H */
