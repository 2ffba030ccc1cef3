/* SPDX-License-Identifier: Apache-2.0 */
/* ops/recurrent.h: what the recurrent op (ops/recurrent.c) and its gradient
 * (ops/recurrent_grad.c) share: their slot and attribute indices and the name lists their string
 * attributes hold. */
#ifndef CORTEN_OPS_RECURRENT_H
#define CORTEN_OPS_RECURRENT_H

#include "ops/defs.h"
#include "scope/scope_list.h"

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

/* ---- Bindings kept between runs (ops/recurrent_bind.c) ---------------------------------------
 *
 * An op's tape, hung on its StepScopes list: its name lists, parsed once, and per step scope an
 * executor of the step program bound to that scope, with the variables the kernel itself reads
 * and writes there. A binding holds pointers to variables of the step scope and its ancestors,
 * so it is trusted only while their name tables are as they were (ct__scope_stamp): a variable
 * created, erased or renamed in any of them, an edit of the op or of its step program (the op's
 * generation, ops/op_impl.h; an edit of any other op leaves it), another place or another parent
 * scope, and the binding is made again. */
enum { CT__RNN_N_NAMES = 5 }; /* states, ex_states, step_inputs, step_outputs, one more */

typedef struct ct__rnn_step {
  const ct_scope *scope; /* bound to this scope at this stamp; NULL: not bound */
  uint64_t stamp;
  ct_executor *exec;
  ct_var **vars; /* the kernel's: n_vars entries */
} ct__rnn_step;

typedef struct ct__rnn_tape {
  const ct_op *op; /* NULL: an empty tape */
  uint64_t gen; /* the op's edit generation when bound (ops/op_impl.h) */
  ct_place place;
  ct__names names[CT__RNN_N_NAMES];
  const ct_scope *parent;
  uint64_t *chain; /* the stamps of parent and its ancestors */
  size_t depth, chain_cap;
  uint64_t chain_gen; /* moves each time parent or the chain's stamps change */
  ct__rnn_step *steps;
  size_t n_steps, n_vars;
  void *extra;        /* the op's own kept state (recurrent_grad's), freed when the tape empties */
  void (*extra_free)(void *extra);
} ct__rnn_tape;

/* The tape of c's op on list. *fresh: it was just made or emptied (op, place or an edit changed),
 * so its names must be parsed (on failure, ct__rnn_tape_drop it). NULL: out of host memory
 * (recorded). */
ct__rnn_tape *ct__rnn_tape_get(ct_scope_list *list, const ct_kernel_ctx *c, bool *fresh);

/* Empties a tape: the next ct__rnn_tape_get finds it fresh. */
void ct__rnn_tape_drop(ct__rnn_tape *tp);

/* Prepares tp for a run of T steps under parent, with n_vars variables per step: unbinds every
 * step when parent or an ancestor changed its names. CT_OK, or CT_ERR_OUT_OF_MEMORY recorded. */
ct_status ct__rnn_tape_begin(ct__rnn_tape *tp, const ct_scope *parent, size_t T, size_t n_vars);

/* Step t's binding when it still holds for s, else NULL (inline: the forward op asks at every
 * step). */
static inline ct__rnn_step *ct__rnn_tape_bound(ct__rnn_tape *tp, size_t t, const ct_scope *s) {
  ct__rnn_step *st = &tp->steps[t];
  return st->scope == s && st->stamp == ct__scope_stamp(s) ? st : NULL;
}

/* Binds step t to s: an executor of p on s at the tape's place, vars copied (n_vars entries).
 * Call it after the kernel made every variable it needs in s. NULL with the error recorded. */
ct__rnn_step *ct__rnn_tape_bind(ct__rnn_tape *tp, size_t t, ct_scope *s, const ct_program *p,
                                ct_var *const *vars);

#endif /* CORTEN_OPS_RECURRENT_H */
