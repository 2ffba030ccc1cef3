/* SPDX-License-Identifier: Apache-2.0 */
/* corten/op.h: operators that read and write the variables of a scope by name, and the registry
 * that defines op types and their kernels.
 *
 * An op is an instance of a registered op type: for each of the type's input and output slots
 * ("X", "Y", "Out" ...) the names of the variables it reads or writes, plus typed attributes.
 * ct_op_run finds the inputs in a scope (walking up to the ancestors), creates missing outputs
 * locally, checks the wiring, infers the output dims and calls the kernel registered for the
 * place's device kind and the data type. Programs and the executor (corten/program.h) run many
 * ops with the names resolved once.
 *
 * Op types and kernels are registered through ct_op_register and ct_kernel_register, by corten
 * for its built-in ops and by framework authors for their own, from outside the library. A kernel
 * sees a ct_kernel_ctx: its input and output variables, their tensors, the attributes and the
 * place, laid out so that reading them costs an array index.
 *
 * Thread-safety: registration takes a lock and may run at any time; an op type or kernel stays
 * registered for the life of the process. Building an op (set_*) must not run alongside other
 * calls on the same op. Different threads may run ops on different scopes, or the same op
 * object on different scopes. */
#ifndef CORTEN_OP_H
#define CORTEN_OP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <corten/export.h>
#include <corten/scope.h>
#include <corten/status.h>
#include <corten/tensor.h>
#include <corten/types.h>
#include <corten/variable.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_op ct_op;
typedef struct ct_program ct_program;

/* ---- Building an op -----------------------------------------------------------------------------
 * A new op of a registered type, owned by the caller: free it with ct_op_free, or hand it to a
 * program (ct_program_append). Attributes start at the type's defaults; slots start unwired.
 * Errors (NULL returned):
 *   CT_ERR_INVALID_ARGUMENT  type is NULL or empty
 *   CT_ERR_NOT_FOUND         no op type of that name is registered (the message names it)
 *   CT_ERR_OUT_OF_MEMORY     no host memory for the op */
CT_NODISCARD CT_API ct_op *ct_op_new(const char *type);

/* Frees the op, its names, its attribute values and any program it holds. NULL: no-op. An op
 * that belongs to a program is the program's to free. */
CT_API void ct_op_free(ct_op *op);

/* The op's type name ("matmul"); "" for NULL. */
CT_API const char *ct_op_type(const ct_op *op);

/* Wires an input or output slot to n variable names (copied), replacing earlier wiring; n == 0
 * unwires it. set_input and set_output wire one name.
 * Errors (the slot keeps its old wiring):
 *   CT_ERR_INVALID_ARGUMENT  op or slot is NULL, vars is NULL with n > 0, a name is NULL or
 *                            empty, or n > 1 for a slot that takes one variable
 *   CT_ERR_NOT_FOUND         the op's type has no such slot (the message lists its slots)
 *   CT_ERR_OUT_OF_MEMORY     no host memory for the names */
CT_API ct_status ct_op_set_inputs(ct_op *op, const char *slot, const char *const *vars, size_t n);
CT_API ct_status ct_op_set_outputs(ct_op *op, const char *slot, const char *const *vars,
                                   size_t n);
CT_API ct_status ct_op_set_input(ct_op *op, const char *slot, const char *var);
CT_API ct_status ct_op_set_output(ct_op *op, const char *slot, const char *var);

/* Reading the wiring back (a program made by ct_program_append_backward, say): the number of
 * variables wired to an input or output slot (0 for an unwired slot, an unknown slot name or a
 * NULL op), and the name of the i-th (NULL past the count). The names belong to the op and stay
 * valid until it is rewired or freed. Nothing is recorded. */
CT_API size_t ct_op_input_count(const ct_op *op, const char *slot);
CT_API size_t ct_op_output_count(const ct_op *op, const char *slot);
CT_API const char *ct_op_input(const ct_op *op, const char *slot, size_t i);
CT_API const char *ct_op_output(const ct_op *op, const char *slot, size_t i);

/* Sets an attribute. An int is accepted for a float attribute (2 means 2.0); nothing else
 * converts. Lists and strings are copied: the caller keeps its own.
 * Errors (the attribute keeps its old value):
 *   CT_ERR_INVALID_ARGUMENT  op or name is NULL, a string value is NULL, or a list's values are
 *                            NULL with n > 0
 *   CT_ERR_NOT_FOUND         the op's type has no such attribute (the message lists them)
 *   CT_ERR_TYPE_MISMATCH     the attribute is of another type (the message names both)
 *   CT_ERR_OUT_OF_RANGE      a list of more values than memory can address
 *   CT_ERR_OUT_OF_MEMORY     no host memory for the copy */
CT_API ct_status ct_op_set_attr_int(ct_op *op, const char *name, int64_t v);
CT_API ct_status ct_op_set_attr_float(ct_op *op, const char *name, double v);
CT_API ct_status ct_op_set_attr_bool(ct_op *op, const char *name, bool v);
CT_API ct_status ct_op_set_attr_string(ct_op *op, const char *name, const char *v);
CT_API ct_status ct_op_set_attr_ints(ct_op *op, const char *name, const int64_t *v, size_t n);
CT_API ct_status ct_op_set_attr_floats(ct_op *op, const char *name, const double *v, size_t n);

/* Sets a program attribute. Takes p, also on failure (it is then freed), so a program is never
 * leaked or held twice; the op frees it. Setting the same program on the same attribute again
 * is CT_OK and changes nothing.
 * Errors: those of the other setters, and
 *   CT_ERR_INVALID_ARGUMENT  also: p is NULL; or, leaving p untouched instead of freeing it, p
 *                            already belongs to an op's attribute, or p contains this op (an op
 *                            cannot hold its own program) */
CT_API ct_status ct_op_set_attr_program(ct_op *op, const char *name, ct_program *p);

/* Runs the op once on the variables of scope: inputs are found through the ancestors, missing
 * outputs are created in scope itself, the output dims are inferred and the kernel for the
 * place's device kind and the data type runs, allocating outputs through
 * ct_tensor_mutable_data. The op, the scope and the variables stay the caller's.
 * Errors (each names the op type, and the slot and variable involved):
 *   CT_ERR_INVALID_ARGUMENT  op or scope is NULL, a required attribute is unset, or an input is
 *                            on another place than the run's
 *   CT_ERR_NOT_FOUND         a required slot is unwired, or an input variable is not in the
 *                            scope or its ancestors
 *   CT_ERR_UNINITIALIZED     an input variable holds nothing, or a tensor without memory
 *   CT_ERR_TYPE_MISMATCH     an input or output variable holds something other than a tensor
 *   CT_ERR_SHAPE             dims that do not fit together
 *   CT_ERR_UNSUPPORTED       no kernel for the place and dtype
 *   CT_ERR_OUT_OF_RANGE      more variables wired than can be bound
 *   CT_ERR_OUT_OF_MEMORY     no host memory to bind the variables, or for an output
 *   any other                what the kernel reports
 * The data of outputs the failing op had not written yet is left as it was (an in-place op gets
 * its input back); output variables the call created stay in the scope, and an empty output
 * variable may now hold an empty tensor.
 *
 * Memory: an output that already has memory of the right size is written in place, as in
 * PaddlePaddle, even when a tensor outside the op views that memory; only an output sharing
 * memory with one of the op's own inputs (an in-place op, or reshape's view) gets a new block
 * first, so no kernel reads what it overwrites; when that output wraps an external buffer, the
 * result is then copied into the buffer (CT_ERR_EXTERNAL_BUFFER if it does not fit). */
CT_API ct_status ct_op_run(const ct_op *op, ct_scope *scope, ct_place place);

/* ---- Defining op types ----------------------------------------------------------------------- */
typedef enum ct_attr_type {
  CT_ATTR_INT = 1,
  CT_ATTR_FLOAT,
  CT_ATTR_BOOL,
  CT_ATTR_STRING,
  CT_ATTR_INTS,
  CT_ATTR_FLOATS,
  CT_ATTR_PROGRAM
} ct_attr_type;

/* The name of an attribute type ("int", "floats" ...); "unknown" outside the enum. */
CT_API const char *ct_attr_type_name(ct_attr_type t);

/* An attribute value. Lists and strings belong to the op (or, for defaults, are static). */
typedef struct ct_attr_value {
  ct_attr_type type;
  union {
    int64_t i;
    double f;
    bool b;
    const char *s;
    struct {
      const int64_t *v;
      size_t n;
    } ints;
    struct {
      const double *v;
      size_t n;
    } floats;
    const ct_program *program;
  } u;
} ct_attr_value;

/* The value of attribute name (set, or the type's default) into *out; lists, strings and
 * programs in it belong to the op and stay valid until the attribute is set again or the op
 * freed. Nothing is recorded on success.
 * Errors (*out unchanged):
 *   CT_ERR_INVALID_ARGUMENT  op, name or out is NULL
 *   CT_ERR_NOT_FOUND         the op's type has no such attribute */
CT_API ct_status ct_op_get_attr(const ct_op *op, const char *name, ct_attr_value *out);

/* Slot flags. A slot is required and takes one tensor variable unless flagged. */
enum {
  CT_SLOT_OPTIONAL = 1u << 0, /* may be left unwired */
  CT_SLOT_MANY = 1u << 1,     /* takes any number of variables (at least one when required) */
  CT_SLOT_ANY_TYPE = 1u << 2, /* variables of any type: the kernel reads them through the
                                 ct_var; no tensor is looked at (RNN step scopes, ids) */
};

/* An input or output slot of an op type: its name ("X", "Out") and its CT_SLOT_* flags. */
typedef struct ct_slot_def {
  const char *name;
  unsigned flags;
} ct_slot_def;

/* An attribute of an op type: its name, its type and default (value.type is the attribute's
 * type), or required, in which case ct_op_run fails until the op sets it. */
typedef struct ct_attr_def {
  const char *name;
  ct_attr_value value;
  bool required;
} ct_attr_def;

typedef struct ct_kernel_ctx ct_kernel_ctx;

/* A grad-op maker: appends the ops that compute the gradients of an op's inputs from the
 * gradients of its outputs (corten/backward.h says how), or returns the failure it recorded. */
typedef struct ct_grad_ctx ct_grad_ctx;
typedef ct_status (*ct_grad_fn)(ct_grad_ctx *g);

/* Infers and sets the output dims (ct_tensor_resize) from the inputs and attributes, or reports
 * CT_ERR_SHAPE through ct_kernel_fail. Runs before the kernel, every run, unless the type is
 * flagged CT_OP_PURE_INFER. */
typedef ct_status (*ct_infer_shape_fn)(const ct_kernel_ctx *ctx);

/* Computes the outputs; allocates them with ct_tensor_mutable_data. */
typedef ct_status (*ct_kernel_fn)(const ct_kernel_ctx *ctx);

/* An op type. Slots and attributes are addressed by their index in these arrays, in the kernel
 * context as in the op. The registry copies everything, names included.
 *   infer_shape  NULL: the kernel sets the output dims itself
 *   dtype_attr   the int attribute that holds the dtype the kernel is chosen by (fill ops);
 *                NULL: the dtype of the first wired input variable (float32 when none)
 *   grad         the type's grad-op maker (corten/backward.h); NULL: the type has no gradient,
 *                and ct_program_append_backward refuses a program that needs one
 *   flags        CT_OP_* bits; 0: none */
typedef struct ct_op_def {
  const char *type;
  const ct_slot_def *inputs;
  size_t n_inputs;
  const ct_slot_def *outputs;
  size_t n_outputs;
  const ct_attr_def *attrs;
  size_t n_attrs;
  ct_infer_shape_fn infer_shape;
  const char *dtype_attr;
  ct_grad_fn grad;
  unsigned flags;
} ct_op_def;

/* Op type flags (ct_op_def.flags). */
enum {
  /* infer_shape is pure: it reads only the inputs' dims and dtypes, the op's attributes and its
   * wiring; it sets output dims to values that depend on nothing else (not on what the outputs
   * held before); and it has no other effect. An executor may then skip it on a run where none
   * of those changed since the op's last successful run (the inputs' dims and dtypes, no edit
   * of the op) and the outputs still have the dims and dtypes its infer_shape left them.
   * ct_op_run always runs it. An infer_shape that reads input values, a scope or any other
   * state must not set the flag. */
  CT_OP_PURE_INFER = 1u << 0,
};

/* Registers an op type. The registry copies def; the caller keeps it.
 * Errors (nothing registered):
 *   CT_ERR_INVALID_ARGUMENT  def is NULL; a NULL or empty type, slot or attribute name; a name
 *                            used twice among the slots or among the attributes; a count set
 *                            with a NULL array; more than 64 input slots, output slots or
 *                            attributes; an attribute default whose type is outside the enum;
 *                            a dtype_attr that names no int attribute; or a flag bit that is
 *                            no CT_OP_* flag
 *   CT_ERR_ALREADY_EXISTS    the type is already registered
 *   CT_ERR_OUT_OF_MEMORY     no host memory for the registry's copy */
CT_API ct_status ct_op_register(const ct_op_def *def);

/* Registers the kernel of an op type for a device kind and dtype. CT_DTYPE_UNDEFINED registers
 * the kernel for every dtype that has no kernel of its own (copies, reshapes).
 * Errors (nothing registered):
 *   CT_ERR_INVALID_ARGUMENT  type or fn is NULL, or kind or dtype is outside its enum
 *   CT_ERR_NOT_FOUND         the op type is not registered
 *   CT_ERR_ALREADY_EXISTS    that type, kind and dtype already have a kernel */
CT_API ct_status ct_kernel_register(const char *type, ct_device_kind kind, ct_dtype dtype,
                                    ct_kernel_fn fn);

/* Whether an op type of this name is registered. false for NULL type. */
CT_API bool ct_op_registered(const char *type);

/* The definition of op type `type` as the registry holds it, in *out: its slots, attributes
 * with their defaults, infer-shape function, dtype attribute (its name, or NULL) and grad-op
 * maker. Every pointer in it stays valid for the life of the process (registered types are
 * never freed). Thread-safe.
 * Errors (*out unchanged):
 *   CT_ERR_INVALID_ARGUMENT  type or out is NULL
 *   CT_ERR_NOT_FOUND         no op type of that name is registered */
CT_API ct_status ct_op_type_get(const char *type, ct_op_def *out);

/* What op type `type` computes, as its definition documents it: the formula or a sentence, its
 * inputs' dims and dtypes, and for an optimizer how to start its state (`corten ops` and
 * docs/ops.md print it). NULL for an unknown type or one without documentation. The text stays
 * valid for the life of the process. Thread-safe. */
CT_API const char *ct_op_type_doc(const char *type);

/* Documents a registered op type that has no documentation yet (a caller's own type; the text
 * is copied). Set once: it never changes afterwards.
 * Errors (nothing changed):
 *   CT_ERR_INVALID_ARGUMENT  type or doc is NULL, or doc is empty
 *   CT_ERR_NOT_FOUND         no op type of that name is registered
 *   CT_ERR_ALREADY_EXISTS    the type already has its documentation
 *   CT_ERR_OUT_OF_MEMORY     no host memory for the copy */
CT_API ct_status ct_op_set_doc(const char *type, const char *doc);

/* The names of the registered op types, sorted by strcmp: up to cap of them in out (out may be
 * NULL when cap is 0); returns how many there are in all. The names stay valid for the life of
 * the process. Thread-safe. */
CT_API size_t ct_op_type_names(const char **out, size_t cap);

/* The kernel registered for exactly this op type, device kind and dtype (CT_DTYPE_UNDEFINED:
 * the kernel for any dtype), or NULL when there is none or the type is unknown; nothing is
 * recorded either way. Thread-safe. */
CT_API ct_kernel_fn ct_kernel_get(const char *type, ct_device_kind kind, ct_dtype dtype);

/* ---- Inside a kernel ----------------------------------------------------------------------------
 * What a kernel and an infer-shape function see. Slot s of the inputs holds the variables
 * in[in_pos[s]] .. in[in_pos[s + 1] - 1] (none for an unwired optional slot); their tensors are
 * in_t (NULL for CT_SLOT_ANY_TYPE slots), checked to hold memory at the op's place before the
 * call. Outputs likewise, their tensors created when missing. attr[a] is attribute a of the
 * op's type, set or default. */
struct ct_kernel_ctx {
  const ct_op *op;
  ct_scope *scope; /* the scope the op runs in */
  ct_place place;
  ct_dtype dtype; /* the dtype the kernel was chosen by */
  ct_var *const *in;
  const ct_tensor *const *in_t;
  const uint32_t *in_pos;
  ct_var *const *out;
  ct_tensor *const *out_t;
  const uint32_t *out_pos;
  const ct_attr_value *attr;
};

/* The number of variables wired to an input or output slot (0 for an unwired optional slot). */
static inline size_t ct_kernel_in_count(const ct_kernel_ctx *c, size_t slot) {
  return c->in_pos[slot + 1] - c->in_pos[slot];
}
static inline size_t ct_kernel_out_count(const ct_kernel_ctx *c, size_t slot) {
  return c->out_pos[slot + 1] - c->out_pos[slot];
}

/* The i-th tensor of an input or output slot (i < the slot's count); NULL for an input of a
 * CT_SLOT_ANY_TYPE slot. The tensors belong to their variables. */
static inline const ct_tensor *ct_kernel_in(const ct_kernel_ctx *c, size_t slot, size_t i) {
  return c->in_t[c->in_pos[slot] + i];
}
static inline ct_tensor *ct_kernel_out(const ct_kernel_ctx *c, size_t slot, size_t i) {
  return c->out_t[c->out_pos[slot] + i];
}

/* The i-th variable of an input or output slot (i < the slot's count), owned by its scope. */
static inline ct_var *ct_kernel_in_var(const ct_kernel_ctx *c, size_t slot, size_t i) {
  return c->in[c->in_pos[slot] + i];
}
static inline ct_var *ct_kernel_out_var(const ct_kernel_ctx *c, size_t slot, size_t i) {
  return c->out[c->out_pos[slot] + i];
}

/* The variable name wired to an input or output slot, for messages; "" past the slot's count.
 * The text belongs to the op. */
CT_API const char *ct_kernel_in_name(const ct_kernel_ctx *c, size_t slot, size_t i);
CT_API const char *ct_kernel_out_name(const ct_kernel_ctx *c, size_t slot, size_t i);

/* Records status s with the message "op 'type': <formatted text>" as the thread's last error
 * and returns s: how kernels and infer-shape functions report. Name the slot and variable in
 * the text (ct_kernel_in_name). fmt is a printf format, checked by the compiler. */
CT_API ct_status ct_kernel_fail(const ct_kernel_ctx *c, ct_status s, const char *fmt, ...)
    CT_PRINTF(3, 4);

/* ---- Threads of the CPU kernels ----------------------------------------------------------- */

/* The number of threads a large CPU kernel splits across: n = 0 (the default) one per core the
 * process may run on (its CPU set, read at the first kernel that splits and again after each
 * call of this function), 1 the calling thread only, n > 1 that many (at most 256; a negative n
 * counts as 0). Kernels below a size that pays for a split run on the calling thread. Results
 * do not depend on the count: a reduction splits its work by its sizes alone, and matmul's
 * GEMM (corten's own) sums each element in the same order however it splits.
 * Thread-safe: kernels already running finish with the count they read. It touches no other
 * library's threads (no BLAS setting). */
CT_API void ct_set_num_threads(int n);
/* The number of threads ct_set_num_threads's setting stands for (0 read as the core count). */
CT_API int ct_get_num_threads(void);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_OP_H */
