/* corten/program.h: programs of ops and the executor that runs them.
 *
 * A program is a list of ops run in order. An executor binds a program to a scope and a place:
 * ct_executor_new resolves every variable name once (inputs through the ancestors, missing
 * outputs created in the scope) and checks the wiring of every op, so ct_executor_run does no
 * name look-up. Kernels are picked per run from a table indexed by device kind and dtype (no
 * look-up either), output dims are re-inferred every run, and once a first run has sized the
 * tensors a run allocates nothing, unless intermediates are freed (below).
 *
 * Freeing intermediates: with the option set, the memory of a variable the program itself
 * created is released after the last op that reads it, so the peak memory of a run comes close
 * to the bound the liveness of its variables sets. A variable that existed before
 * ct_executor_new, one named in the keep list, and one no later op reads (a result) keep their
 * memory; the dims stay so ct_tensor_dims still reports them.
 *
 * The executor holds pointers to the scope's variables and the wiring it saw: erasing or
 * renaming a variable it uses, freeing the scope, or re-wiring one of its ops while the executor
 * lives is not allowed (make a new executor after such changes). An executor is used by one thread at a time; different executors may run at once on
 * different scopes. */
#ifndef CORTEN_PROGRAM_H
#define CORTEN_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>

#include <corten/op.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An empty program. NULL with CT_ERR_OUT_OF_MEMORY. */
CT_API ct_program *ct_program_new(void);

/* Frees the program and its ops. NULL: no-op. A program that an op's attribute holds belongs
 * to that op: it is left alone (CT_ERR_INVALID_ARGUMENT in the last error); free the op. */
CT_API void ct_program_free(ct_program *p);

/* Appends op; the program takes it, also on failure (it is then freed). Errors: NULL p or op,
 * CT_ERR_INVALID_ARGUMENT; no memory, CT_ERR_OUT_OF_MEMORY. Two exceptions, refused with
 * CT_ERR_INVALID_ARGUMENT and nothing changed: an op that already belongs to a program (left to
 * that program), and an op that holds p in a program attribute, directly or through nested
 * programs (an op cannot hold its own program; the op stays the caller's). */
CT_API ct_status ct_program_append(ct_program *p, ct_op *op);

/* The number of ops, and op i (NULL past the end). */
CT_API size_t ct_program_size(const ct_program *p);
CT_API const ct_op *ct_program_op(const ct_program *p, size_t i);

typedef struct ct_executor ct_executor;

typedef struct ct_executor_options {
  bool free_intermediates;  /* release intermediates after their last use (see above) */
  const char *const *keep;  /* names never released, in addition to the rules above */
  size_t n_keep;
} ct_executor_options;

/* An executor of p over scope at place, with default options (nothing freed). The program must
 * outlive the executor. NULL on error: NULL p or scope, an invalid place, CT_ERR_INVALID_ARGUMENT;
 * a place this build has no memory for, CT_ERR_UNSUPPORTED / CT_ERR_DEVICE; a wiring error of an
 * op (the message names the op's index and type, the slot and the variable) as ct_op_run would
 * report it; no memory, CT_ERR_OUT_OF_MEMORY. A failed ct_executor_new may leave output variables
 * it had created in the scope (empty). */
CT_API ct_executor *ct_executor_new(const ct_program *p, ct_scope *scope, ct_place place);
CT_API ct_executor *ct_executor_new_with(const ct_program *p, ct_scope *scope, ct_place place,
                                         const ct_executor_options *options);

/* Runs the program once. Stops at the first failing op and returns its status; the message
 * names the op's index and type. NULL e: CT_ERR_INVALID_ARGUMENT. */
CT_API ct_status ct_executor_run(ct_executor *e);

CT_API void ct_executor_free(ct_executor *e);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_PROGRAM_H */
