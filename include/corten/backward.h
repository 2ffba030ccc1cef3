/* SPDX-License-Identifier: Apache-2.0 */
/* corten/backward.h: differentiating a program, and how an op type says what its gradient is.
 *
 * ct_program_append_backward appends to a program the ops that compute the gradient of a loss
 * with respect to named parameters, into variables named "<name>@GRAD" (PaddlePaddle's
 * convention). Each op type declares its gradient when it is registered: ct_op_def.grad is a
 * grad-op maker, a function that appends the ops computing the gradients of the op's inputs
 * from the gradients of its outputs, through the ct_grad_* calls below. The built-in op types
 * have one where a gradient exists; framework authors write their own the same way.
 *
 * Thread-safety: appending to a program is not thread-safe for that program (one thread at a
 * time per program, like ct_program_append); the registry may be read meanwhile. */
#ifndef CORTEN_BACKWARD_H
#define CORTEN_BACKWARD_H

#include <stddef.h>

#include <corten/export.h>
#include <corten/op.h>
#include <corten/program.h>
#include <corten/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The suffix of a gradient's variable name: the gradient of "fc1.w" is "fc1.w@GRAD". */
#define CT_GRAD_SUFFIX "@GRAD"

/* Appends to p the ops that compute d(loss)/d(x) into "x@GRAD" for each of the n names x in
 * params.
 *   - loss names a variable of one element (any rank) written by an op of p; its gradient
 *     starts at 1 ("loss@GRAD", made like the loss by the op fill_any_like, which fails the
 *     run with CT_ERR_SHAPE, naming the loss, when it holds more or fewer elements).
 *   - Only the ops on a path from a parameter to the loss are differentiated; a variable read by
 *     several of them receives the sum of their gradients (one `sum` op).
 *   - A parameter the loss does not depend on gets a zero gradient of its own dims (made at run
 *     time from the parameter, which must then exist in the scope, read by an op or not).
 *   - Intermediate gradients are named "<name>@GRAD" too; contributions to one that several ops
 *     make are named "<name>@GRAD@<k>" before they are summed.
 * The program's variables must each be written by at most one op (no op writes a variable it
 * also reads, as an in-place op would, and no variable is written twice), so that a name is one
 * value; optimizer ops, which update parameters in place, come after the backward pass. One
 * exception: an op may update in place a variable that no other op reads (its own state, as
 * batch_norm's MeanOut = Mean), since no gradient flows through either value.
 * Errors (p unchanged):
 *   CT_ERR_INVALID_ARGUMENT  p or loss is NULL, params is NULL with n > 0, a name is NULL or
 *                            empty, or a name is listed twice
 *   CT_ERR_NOT_FOUND         no op of p writes the loss
 *   CT_ERR_ALREADY_EXISTS    p already uses a name the pass would write ("w@GRAD", "h@GRAD@0"
 *                            for a parameter or a differentiated variable): a second backward
 *                            pass over one program, or a variable of the user's named so
 *   CT_ERR_UNSUPPORTED       an op on a path from a parameter to the loss has no gradient (the
 *                            message names the op's index and type), or a variable on such a
 *                            path is written by two ops or by an op that also reads it
 *                            (and another op reads it too), or a variable that such an op
 *                            reads is written again by any op (on the path or not), since
 *                            the gradient would read the later value
 *   CT_ERR_OUT_OF_MEMORY     no host memory
 *   any other                a grad-op maker's own failure, with its message */
CT_API ct_status ct_program_append_backward(ct_program *p, const char *loss,
                                            const char *const *params, size_t n);

/* ---- Writing a grad-op maker ------------------------------------------------------------------
 * A maker is called once per op being differentiated, in reverse program order, with a context
 * that names the forward op's variables and their gradients. It makes the grad ops with
 * ct_grad_op_new (the pass owns them), wires them with ct_op_set_input/ct_op_set_output to the
 * names below, sets their attributes, and returns CT_OK, or a failure (a ct_status recorded with
 * a message) that stops the pass with the program unchanged. A maker touches no program itself:
 * the ops it makes reach the program only when the whole pass succeeds. A request below that
 * fails (out of memory) returns NULL with the error recorded and fails the pass even if the
 * maker, taking the NULL for "no gradient wanted", goes on and returns CT_OK.
 *
 *   static ct_status my_scale_grad(ct_grad_ctx *g) {    // Out = a * X
 *     const char *dx = ct_grad_input_grad(g, "X", 0);
 *     if (dx == NULL) return CT_OK;                     // X needs no gradient
 *     ct_op *op = ct_grad_op_new(g, "scale");
 *     if (op == NULL) return ct_last_status();
 *     ct_op_set_input(op, "X", ct_grad_output_grad(g, "Out", 0));
 *     ct_op_set_output(op, "Out", dx);
 *     return ct_grad_copy_attrs(g, op);
 *   }
 *
 * Every call below that takes a slot names it as the op type does ("X", "Out"); i indexes the
 * variables of a CT_SLOT_MANY slot (0 otherwise). The returned names belong to the pass and stay
 * valid until the maker returns. */
typedef struct ct_grad_ctx ct_grad_ctx;

/* The forward op being differentiated (owned by its program). */
CT_API const ct_op *ct_grad_forward(const ct_grad_ctx *g);

/* The number of variables wired to an input or output slot of the forward op (0 for an unwired
 * optional slot or an unknown slot name). */
CT_API size_t ct_grad_input_count(const ct_grad_ctx *g, const char *slot);
CT_API size_t ct_grad_output_count(const ct_grad_ctx *g, const char *slot);

/* The name of the forward op's variable i of an input or output slot; NULL when there is none
 * (an unknown slot, or i past the slot's count). */
CT_API const char *ct_grad_input(const ct_grad_ctx *g, const char *slot, size_t i);
CT_API const char *ct_grad_output(const ct_grad_ctx *g, const char *slot, size_t i);

/* The name of the gradient of forward output (slot, i), for a grad op to read. Always a
 * variable: when the loss does not depend on that output, the pass fills it with zeros of the
 * output's dims. NULL when the output does not exist, or with the error recorded when the pass
 * ran out of memory making it. */
CT_API const char *ct_grad_output_grad(ct_grad_ctx *g, const char *slot, size_t i);

/* The name a grad op writes the gradient of forward input (slot, i) to; NULL when that input
 * needs no gradient (it depends on no parameter) or does not exist, or with the error recorded
 * (and the pass failed) when out of memory. Each call for the same input is a separate
 * contribution, summed by the pass. */
CT_API const char *ct_grad_input_grad(ct_grad_ctx *g, const char *slot, size_t i);

/* A new op of the given type, owned by the pass (appended to the program in the order made
 * when the whole pass succeeds). NULL on failure:
 *   CT_ERR_INVALID_ARGUMENT  g is NULL, or type is NULL or empty
 *   CT_ERR_NOT_FOUND         no op type of that name is registered
 *   CT_ERR_OUT_OF_MEMORY     no host memory */
CT_API ct_op *ct_grad_op_new(ct_grad_ctx *g, const char *type);

/* Sets on op every attribute of the forward op that op's type also defines with the same name
 * and type, to the forward op's value (set or default). CT_ERR_OUT_OF_MEMORY, else CT_OK. */
CT_API ct_status ct_grad_copy_attrs(ct_grad_ctx *g, ct_op *op);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_BACKWARD_H */
