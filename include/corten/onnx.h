/* SPDX-License-Identifier: Apache-2.0 */
/* corten/onnx.h: ONNX models in: a model file becomes a program of corten ops and variables of a
 * scope, which an executor runs (and ct_program_append_backward can differentiate).
 *
 *   ct_scope *s = ct_scope_new();
 *   ct_onnx_model *m = ct_onnx_load("resnet18.onnx", s);     // initializers -> variables of s
 *   // put the input: ct_var_tensor(ct_scope_var(s, ct_onnx_input_name(m, 0))) ...
 *   ct_executor *e = ct_executor_new(ct_onnx_program(m), s, ct_cpu());
 *   ct_executor_run(e);                                      // outputs in their variables
 *
 * What a load makes:
 *   - every initializer (and every Constant node) becomes a variable of scope named as in the
 *     file, holding a host tensor of its dtype and dims; the graph's inputs that are not
 *     initializers get variables of their names, empty, for the caller to fill; the graph's
 *     outputs get variables of their names too, empty until the program writes them (the
 *     caller's variables, so an executor's passes never fuse one away, even one that another
 *     node also reads);
 *   - each node becomes one or a few corten ops (docs/design/onnx.md lists the mapping); a name
 *     the importer needs for a value between those ops ends in "@onnx" and a number;
 *   - nothing is specialised to shapes: a symbolic dim (batch, sequence) takes any size when the
 *     program runs, and shape-valued inputs that are not constants are read at run time.
 * Every node is checked before anything is made: the message of a CT_ERR_UNSUPPORTED names
 * every node corten cannot run (its name, op type, opset and the part: op type, domain,
 * attribute or dtype), not only the first. On any failure `scope` is left exactly as it was.
 *
 * Thread-safety: a load touches only its own model and the given scope (one thread at a time
 * per scope, as for every scope call); models are independent objects. */
#ifndef CORTEN_ONNX_H
#define CORTEN_ONNX_H

#include <stddef.h>
#include <stdio.h>

#include <corten/export.h>
#include <corten/program.h>
#include <corten/scope.h>
#include <corten/status.h>
#include <corten/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A loaded model: its program, and the names of its inputs and outputs. */
typedef struct ct_onnx_model ct_onnx_model;

/* Loads the ONNX model file at path into scope (see above). Tensors stored outside the model
 * (data_location EXTERNAL) are read from files named relative to the model's folder; an absolute
 * path or one that leaves the folder ("..") is refused. Peak host memory during the load is the
 * weights once plus the largest tensor: the file is mapped, not read whole, and each weight is
 * copied once into its variable.
 * Errors (NULL returned, scope unchanged):
 *   CT_ERR_INVALID_ARGUMENT  path or scope is NULL
 *   CT_ERR_IO                the file (or an external data file) cannot be opened or read
 *   CT_ERR_FORMAT            a malformed or truncated file: the message names the field
 *                            ("graph.node[3].attribute[0]"), the byte offset and what is wrong;
 *                            a graph that reads a name nothing defines, or whose nodes form a
 *                            cycle; a tensor whose payload is shorter or longer than its dims
 *   CT_ERR_UNSUPPORTED       nodes corten cannot run (all of them named), an opset above 17 of
 *                            the default domain, sparse initializers, a graph input of a
 *                            sequence, map or optional type, or a dtype corten has no tensor of
 *                            (string, uint16/32/64, complex)
 *   CT_ERR_ALREADY_EXISTS    scope already holds a variable named like an initializer or input
 *   CT_ERR_OUT_OF_MEMORY */
CT_NODISCARD CT_API ct_onnx_model *ct_onnx_load(const char *path, ct_scope *scope);

/* As ct_onnx_load, from the size bytes at data (read during the call only). Tensors with
 * external data are refused (CT_ERR_UNSUPPORTED): there is no folder to find them in. */
CT_NODISCARD CT_API ct_onnx_model *ct_onnx_load_buffer(const void *data, size_t size,
                                                      ct_scope *scope);

/* The model's program, owned by m: run it with an executor over the scope given to the load
 * (or a kid of it); callers may append ops to it (ct_program_append_backward, optimizers).
 * NULL for a NULL m. */
CT_API ct_program *ct_onnx_program(ct_onnx_model *m);

/* The graph's inputs that are not initializers, and its outputs, in the file's order. A name is
 * owned by m; NULL for an i out of range or a NULL m (counts 0). */
CT_API size_t ct_onnx_input_count(const ct_onnx_model *m);
CT_API const char *ct_onnx_input_name(const ct_onnx_model *m, size_t i);
CT_API size_t ct_onnx_output_count(const ct_onnx_model *m);
CT_API const char *ct_onnx_output_name(const ct_onnx_model *m, size_t i);

/* The variables the load created besides the inputs: the initializers (the weights), the
 * values of Constant nodes and the tensors the import made. The model's program reads them and
 * writes none: they are what ct_executor_options.constants can name for a model run as loaded
 * (docs/design/constants.md). A name is owned by m; NULL past the count or for a NULL m. */
CT_API size_t ct_onnx_constant_count(const ct_onnx_model *m);
CT_API const char *ct_onnx_constant_name(const ct_onnx_model *m, size_t i);

/* The dims the file declares for input i (rank, and -1 for a symbolic or unknown extent) into
 * *dims, and its dtype; CT_ERR_OUT_OF_RANGE for an i past the inputs, CT_ERR_UNINITIALIZED when
 * the file gives no shape (dims->rank is then -1), CT_ERR_INVALID_ARGUMENT for NULLs. */
CT_API ct_status ct_onnx_input_info(const ct_onnx_model *m, size_t i, ct_ddim *dims,
                                    ct_dtype *dtype);
/* The same for output i: the dims and dtype the file declares for it (what the graph promises,
 * not what a run gave). */
CT_API ct_status ct_onnx_output_info(const ct_onnx_model *m, size_t i, ct_ddim *dims,
                                     ct_dtype *dtype);

/* The opset of the default domain the model was written for. 0 for a NULL m. */
CT_API long long ct_onnx_opset(const ct_onnx_model *m);

/* Reads a serialized ONNX TensorProto (the `input_0.pb` files of ONNX's test data) at path into
 * t, replacing what t held (its dims, dtype and memory; an external t gets CT_ERR_EXTERNAL_BUFFER
 * unless the bytes fit). External data is read relative to the file's folder.
 * Errors (t unchanged): CT_ERR_INVALID_ARGUMENT (NULLs), CT_ERR_IO, CT_ERR_FORMAT (naming the
 * field), CT_ERR_UNSUPPORTED (a dtype corten has no tensor of), CT_ERR_OUT_OF_MEMORY. */
CT_API ct_status ct_onnx_load_tensor(const char *path, ct_tensor *t);

/* Writes a description of the model file at path to out, for people: opset and producer, the
 * graph's inputs and outputs with dtypes and dims ("N" for a symbolic dim), the op types with
 * their counts, the initializers' count and bytes, and every node corten cannot import with the
 * reason (an import into a scratch scope decides). CT_OK, or the load's CT_ERR_IO /
 * CT_ERR_FORMAT (nothing written then). An unsupported model is still described: CT_OK. */
CT_API ct_status ct_onnx_describe(const char *path, FILE *out);

/* The distinct op types of the model file's nodes, in first-use order, comma-separated, into
 * buf (cut short at cap, always terminated). CT_OK or the load's CT_ERR_IO / CT_ERR_FORMAT. */
CT_API ct_status ct_onnx_op_types(const char *path, char *buf, size_t cap);

/* The ONNX op types whose import makes corten op type `type`, each with the first opset of the
 * row ("Conv (1)", "Softmax (13)"), comma-separated into buf (cut short at cap, always
 * terminated; "" when none). Returns how many rows name `type`. */
CT_API size_t ct_onnx_names_of(const char *type, char *buf, size_t cap);

/* Writes program p as an ONNX model (opset 17) to path. Each op becomes standard ONNX when the
 * import of that ONNX op gives the same op back (relu, matmul, elementwise_*, softmax, reshape,
 * transpose, concat, flatten ...; docs/design/onnx.md lists them), else a node of the domain
 * ai.corten holding its type, slots and attributes; ct_onnx_load of the file gives back a
 * program computing the same values bit for bit. A variable an op reads before any op writes it
 * that is not among inputs becomes an initializer holding its tensor in scope (or an ancestor);
 * inputs become graph inputs of their tensors' dtypes and dims (an unset or negative extent
 * symbolic), outputs graph outputs. The file is written beside path and renamed over it: a
 * failure leaves no file (and an existing one untouched). Initializers hold the tensors as they
 * are when saved (after a training run, the trained values). A program that writes a variable
 * twice, or writes one the file holds as an initializer (a training step's w = sgd(w)), is saved
 * as written, so that reloading it keeps the program's meaning; ONNX asks one writer per name,
 * so onnx.checker rejects such a file and other runtimes may too. A recurrent op is written as its
 * steps unrolled (plain nodes, a Gather of each sequence's row per step) at the sequence length
 * its X holds when saved; the file loads back into ops computing the same bits.
 * Errors (nothing written):
 *   CT_ERR_INVALID_ARGUMENT  path, p or scope is NULL, a NULL list with a count, a NULL or empty
 *                            name
 *   CT_ERR_NOT_FOUND         a variable read that nothing defines (named), an output no op writes
 *   CT_ERR_TYPE_MISMATCH     such a variable holding no tensor
 *   CT_ERR_UNINITIALIZED     such a tensor without memory; a recurrent op whose X holds no
 *                            sequence yet (its length is unknown)
 *   CT_ERR_UNSUPPORTED       a dtype ONNX lacks, an op with a program attribute (control flow)
 *                            other than recurrent, a recurrent op whose step scopes a later op
 *                            reads (recurrent_grad: a training program)
 *   CT_ERR_IO                the file cannot be written
 *   CT_ERR_OUT_OF_MEMORY */
CT_API ct_status ct_onnx_save(const char *path, const ct_program *p, const ct_scope *scope,
                              const char *const *inputs, size_t n_inputs,
                              const char *const *outputs, size_t n_outputs);

/* A symbolic dim of an exported graph input or output: axis `axis` of variable `var` is written
 * as the symbol `name` ("N") instead of the extent its tensor holds, so the model runs at any
 * size there (what torch.onnx.export's dynamic_axes does). */
typedef struct ct_onnx_dim_name {
  const char *var;
  int axis;
  const char *name;
} ct_onnx_dim_name;

typedef struct ct_onnx_save_options {
  const ct_onnx_dim_name *dim_names; /* n_dim_names of them; NULL with 0: extents as held */
  size_t n_dim_names;
} ct_onnx_save_options;

/* ct_onnx_save with options (NULL: ct_onnx_save's behaviour), read during the call only. A
 * variable whose tensor has no dims (an output not computed yet) gets no shape in the file, which
 * leaves every axis free: its dim names are then not needed and not checked.
 * Errors, besides ct_onnx_save's (nothing written):
 *   CT_ERR_INVALID_ARGUMENT  a dim name without a variable or a symbol, a negative axis, or a
 *                            variable that is neither among inputs nor outputs (named)
 *   CT_ERR_OUT_OF_RANGE      an axis at or past the rank of the variable's tensor (named) */
CT_API ct_status ct_onnx_save_with(const char *path, const ct_program *p, const ct_scope *scope,
                                   const char *const *inputs, size_t n_inputs,
                                   const char *const *outputs, size_t n_outputs,
                                   const ct_onnx_save_options *options);

/* Frees m and its program; the scope's variables stay. NULL: no-op. */
CT_API void ct_onnx_free(ct_onnx_model *m);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_ONNX_H */
