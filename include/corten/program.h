/* SPDX-License-Identifier: Apache-2.0 */
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
 * lives is not allowed (make a new executor after such changes). A run after the scope was
 * freed, after one of its ops was re-wired (ct_op_set_input, ct_op_set_output ...) or after ops
 * were appended to or pruned from the program fails with CT_ERR_INVALID_ARGUMENT saying so,
 * touching nothing; attributes are read at each run, so their edits take effect.
 *
 * Thread-safety: an executor is used by one thread at a time; different executors may run at
 * once on different scopes. */
#ifndef CORTEN_PROGRAM_H
#define CORTEN_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>

#include <corten/export.h>
#include <corten/op.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An empty program, owned by the caller: free it with ct_program_free, or hand it to an op's
 * attribute (ct_op_set_attr_program).
 * Errors (NULL returned):
 *   CT_ERR_OUT_OF_MEMORY     no host memory for the program */
CT_NODISCARD CT_API ct_program *ct_program_new(void);

/* Frees the program and its ops. NULL: no-op.
 * Errors (recorded in the last error only; nothing is returned):
 *   CT_ERR_INVALID_ARGUMENT  an op's attribute holds p: it belongs to that op and is left
 *                            alone; free the op */
CT_API void ct_program_free(ct_program *p);

/* Appends op; the program takes it, also on failure (it is then freed), with two exceptions
 * below.
 * Errors:
 *   CT_ERR_INVALID_ARGUMENT  p or op is NULL; or op already belongs to a program, and is left
 *                            to that program (not freed); or op holds p in a program
 *                            attribute, directly or through nested programs (an op cannot hold
 *                            its own program), and stays the caller's (not freed)
 *   CT_ERR_OUT_OF_MEMORY     no host memory to grow the program */
CT_API ct_status ct_program_append(ct_program *p, ct_op *op);

/* The number of ops (0 for NULL p), and op i (NULL past the end or for NULL p), which stays
 * the program's. */
CT_API size_t ct_program_size(const ct_program *p);
CT_API const ct_op *ct_program_op(const ct_program *p, size_t i);

/* Cuts p down to the ops that the values of the n variables `targets` depend on, and frees the
 * rest: a model's features without its classifier (then append a new head), or the forward part
 * of a training program without its loss, backward and optimizer ops. An op stays when it writes
 * a target or a variable that a staying op after it reads (through a slot, or through a program
 * nested in that op, such as a recurrent op's step); ops keep their order, wiring and attributes.
 * So the targets get the values the whole program's run gives them from the same scope; an op
 * whose only effect is on a later run (an optimizer updating a weight) goes. Executors made over
 * p before the call must not run afterwards: make new ones.
 * Errors (p unchanged):
 *   CT_ERR_INVALID_ARGUMENT  p is NULL, no targets (n 0 or targets NULL), a NULL or empty name,
 *                            or p belongs to an op's attribute (prune the program holding it)
 *   CT_ERR_NOT_FOUND         a target that no op of p writes (named)
 *   CT_ERR_OUT_OF_MEMORY     no host memory for the walk */
CT_API ct_status ct_program_prune(ct_program *p, const char *const *targets, size_t n);

typedef struct ct_executor ct_executor;

/* How an executor runs; all zero (or NULL options) is the default. */
typedef struct ct_executor_options {
  bool free_intermediates;  /* release intermediates after their last use (see above) */
  const char *const *keep;  /* names never released, in addition to the rules above */
  size_t n_keep;
  /* Chains (trees) of elementwise ops (elementwise_add/sub/mul/div, relu, sigmoid, tanh, exp,
   * log, erf, scale) whose intermediates are read by one later such op and not kept (created by
   * the executor, not named in keep, read by no other op or nested program) run as one expression
   * (corten/expr.h) at the last op's turn; those intermediates are never allocated (they stay
   * without memory). Float32 and float64 CPU tensors only; anything else runs op by op. Results
   * are bit-identical to the unfused program (but for which NaN comes out where two NaNs meet
   * in an add or a multiply: its sign or payload); a group whose expression fails runs its ops
   * one by one, so a failure is the unfused program's, with its op's message. */
  bool fuse_elementwise;
  /* Graph passes over the bound ops, once, when the executor is made (docs/design/passes.md):
   * on the CPU, conv2d (or depthwise_conv2d) followed by its bias add (elementwise_add of a
   * reshape of the bias to [-1, 1, 1]), an inference batch_norm, a residual elementwise_add and
   * relu or clip runs as one conv2d_fusion, whose intermediates are never allocated (matmul,
   * its bias add and relu or clip as one matmul_fusion); three such convolutions that form
   * MobileNetV2's inverted residual block (1x1 expansion, 3x3 depthwise at stride 1 or 2, 1x1
   * projection plus the block's input) run as one inverted_residual, band by band, the expanded
   * values never stored whole (the same bits); attention (matmul, an optional scale by one
   * value and mask add, softmax over the last axis, matmul) as one attention op, a block of
   * query rows at a time, the scores never stored whole (the same bits); a layer norm
   * written out as nine ops (opset < 17 exports) as one decomposed_layer_norm (the same
   * bits); an assign whose output is an intermediate that later ops read goes, those ops
   * reading its input (which no later op writes) instead; last, what fuse_elementwise fuses
   * (a GELU written as Div, Erf, Add, Mul, Mul runs as one expression). Only intermediates are
   * fused (as for fuse_elementwise: created by the executor, not kept, read by the chain's next
   * op alone), so every variable the caller reads holds what it would without the option, bit
   * for bit (but for which NaN comes out where two NaNs meet in an add or a multiply, in any
   * pass: its sign or payload, never whether an element is NaN). The program is
   * not changed; editing one of the ops a pass replaced afterwards makes the run fail
   * (CT_ERR_INVALID_ARGUMENT): make a new executor (an elementwise group reads its ops'
   * attributes at each run). A fused op that cannot run the dims a run
   * brings (a residual that would broadcast the convolution's output to larger dims, a bias
   * that no longer fits after the executor was made) runs the ops it stands for instead, so the
   * outcome is the unfused program's: its values, or its error and message (the error of
   * another failing op when one between a chain's ops fails too: it now runs first). */
  bool optimize;
  /* Variables the caller declares constant while the executor lives: a served model's weights
   * (docs/design/constants.md). On the CPU a kernel may derive data from one at its first run
   * (conv2d's, matmul's and the recurrent layers' weights packed for the GEMM) and read that at
   * later runs instead of deriving it again: the results are the same bits. From then on until
   * the executor is freed, the constant's memory is read-only: every corten call that would
   * write it (mutable_data, set_value, copy, expr_assign, an op of another program) fails with
   * CT_ERR_READ_ONLY. A constant given other memory (ct_tensor_move, ct_tensor_share), other
   * dims or another dtype is derived again at the next run; memory corten does not own
   * (ct_tensor_wrap, DLPack imports) is never derived from. A write through a pointer taken
   * earlier (a NumPy array exported before the run) is not seen: do not write constants that
   * way. Errors of ct_executor_new: CT_ERR_NOT_FOUND for a name that is no
   * variable of the scope, CT_ERR_INVALID_ARGUMENT for one an op of the program writes (naming
   * the op), or n > 0 with a NULL list. */
  const char *const *constants;
  size_t n_constants;
} ct_executor_options;

/* An executor of p over scope at place, owned by the caller: free it with ct_executor_free.
 * ct_executor_new uses the default options (nothing freed); ct_executor_new_with takes options
 * (read during the call only; NULL: the defaults). The program and the scope stay the caller's.
 * The program must outlive the executor. The scope should: once it is freed (itself, or with an
 * ancestor), ct_executor_run refuses to run, touching nothing of it, and ct_executor_free
 * still frees the executor.
 * Errors (NULL returned; output variables it had created may stay in the scope, empty):
 *   CT_ERR_INVALID_ARGUMENT  p or scope is NULL, place is not a valid place, or options name
 *                            n_keep > 0 variables with a NULL keep
 *   CT_ERR_UNSUPPORTED       a place this build has no memory for
 *   CT_ERR_DEVICE            a CUDA place without such a device
 *   CT_ERR_OUT_OF_MEMORY     no host memory
 *   any other                a wiring error of an op, as ct_op_run would report it (the message
 *                            names the op's index and type, the slot and the variable) */
CT_NODISCARD CT_API ct_executor *ct_executor_new(const ct_program *p, ct_scope *scope,
                                                 ct_place place);
CT_NODISCARD CT_API ct_executor *ct_executor_new_with(const ct_program *p, ct_scope *scope,
                                                      ct_place place,
                                                      const ct_executor_options *options);

/* Runs the program once. Stops at the first failing op and returns its status.
 * Errors:
 *   CT_ERR_INVALID_ARGUMENT  e is NULL, or the scope it was made over has been freed
 *   any other                the first failing op's, as ct_op_run reports it (the message names
 *                            the op's index and type) */
CT_API ct_status ct_executor_run(ct_executor *e);

/* Frees the executor; the program, the scope and its variables stay. NULL: no-op. */
CT_API void ct_executor_free(ct_executor *e);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_PROGRAM_H */
