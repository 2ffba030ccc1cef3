/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/onnx_save.h: the export side of ONNX (ct_onnx_save, onnx/onnx_save.c): a small protobuf
 * writer (onnx/onnx_save_pb.c), the graph being written, and the mapping of corten op types onto
 * ONNX nodes (onnx/export_std.c: standard ONNX, opset 17; onnx/export_corten.c: every other op as
 * a node of the domain ai.corten, which onnx/rules_corten.c imports back).
 *
 * A corten op becomes standard ONNX only when the import rule of that ONNX op makes exactly the
 * same corten op again (same type, wiring and attributes); otherwise it goes to ai.corten. So a
 * saved program always loads back into one that computes the same bits. */
#ifndef CORTEN_ONNX_SAVE_H
#define CORTEN_ONNX_SAVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <corten/op.h>
#include <corten/scope.h>
#include <corten/status.h>

/* A growing byte buffer holding protobuf fields; `oom` once an append failed (later appends
 * do nothing, so callers check once at the end). */
typedef struct pbw {
  uint8_t *p;
  size_t n, cap;
  bool oom;
} pbw;

enum { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2, PB_I32 = 5 };

void pbw_free(pbw *b);
void pbw_raw(pbw *b, const void *p, size_t n);
void pbw_varint(pbw *b, uint64_t v);
void pbw_tag(pbw *b, int field, int wt);
/* field = v (varint; a negative int64 as its 10-byte two's complement, as protobuf does). */
void pbw_int(pbw *b, int field, int64_t v);
void pbw_f32(pbw *b, int field, float v);
void pbw_bytes(pbw *b, int field, const void *p, size_t n);
void pbw_str(pbw *b, int field, const char *s);
/* Appends sub as the length-delimited field `field`, then frees sub. */
void pbw_msg(pbw *b, int field, pbw *sub);

/* The ONNX data type of a corten dtype; 0 when ONNX (or corten's import of it) has none. */
int32_t ex_onnx_dtype(ct_dtype dt);

/* A TensorProto of name, dtype, dims and the little-endian bytes at data (raw_data). */
void ex_tensor(pbw *b, const char *name, int32_t data_type, const int64_t *dims, int rank,
               const void *data, size_t bytes);

/* An op as the export reads it, through the public op API (onnx/ sits above ops/): its type's
 * definition and, per slot and attribute, the wiring and values (owned by the op). */
typedef struct ex_def {
  const char *type;
  const ct_slot_def *in, *out;
  const ct_attr_def *attr;
  size_t n_in, n_out, n_attr;
} ex_def;

typedef struct ex_wiring {
  const char **names;
  size_t n;
} ex_wiring;

typedef struct ex_op {
  const ex_def *def; /* &d */
  ex_def d;
  ex_wiring in[64], out[64];
  ct_attr_value attr[64];
  const char **pool; /* every slot's names */
} ex_op;

/* Reads op into *v (CT_ERR_OUT_OF_MEMORY, or the registry's error); ex_op_release frees it. */
ct_status ex_op_view(ex_op *v, const ct_op *op);
void ex_op_release(ex_op *v);

typedef struct ex_sets ex_sets; /* onnx/onnx_save.c: the names defined so far, kept strings */

/* The graph being written. */
typedef struct ex_cx {
  pbw nodes;            /* the GraphProto's node fields so far */
  pbw inits;            /* initializer fields (constants the mapping adds) */
  size_t n_nodes;
  unsigned tmp;         /* counter of fresh names */
  bool uses_corten;     /* a node of ai.corten was written: import that domain too */
  const ct_scope *scope; /* the variables' tensors, for dims and dtypes a mapping needs */
  const ct_program *prog; /* the program being written, for who reads a value */
  ex_sets *sets;        /* onnx/onnx_save.c's */
  char name[64];        /* scratch for ex_tmp */
} ex_cx;

/* A node being built: its attributes go into attrs; ex_node_end appends it to the graph. */
typedef struct ex_node {
  ex_cx *x;
  pbw body;
} ex_node;

void ex_node_begin(ex_node *nd, ex_cx *x, const char *op_type, const char *domain,
                   const char *const *in, size_t n_in, const char *const *out, size_t n_out);
void ex_attr_int(ex_node *nd, const char *name, int64_t v);
void ex_attr_float(ex_node *nd, const char *name, float v);
void ex_attr_str(ex_node *nd, const char *name, const char *v);
void ex_attr_ints(ex_node *nd, const char *name, const int64_t *v, size_t n);
void ex_attr_floats(ex_node *nd, const char *name, const float *v, size_t n);
/* A TENSOR attribute of float64 values (dims [n], or a scalar when scalar): how doubles that
 * float32 cannot hold exactly are kept. */
void ex_attr_doubles(ex_node *nd, const char *name, const double *v, size_t n, bool scalar);
/* A TENSOR attribute holding the TensorProto fields in tensor (freed). */
void ex_attr_tensor(ex_node *nd, const char *name, pbw *tensor);
void ex_node_end(ex_node *nd);

/* A fresh name for a value between the nodes of one op ("<base>@export<k>"); valid until the
 * next call. */
const char *ex_tmp(ex_cx *x, const char *base);
/* A new int64 initializer holding v (dims [n]): its name (as ex_tmp). */
const char *ex_const_ints(ex_cx *x, const char *base, const int64_t *v, size_t n);

/* onnx/onnx_save.c: writes one op of the graph: each input nothing has defined yet becomes an
 * initializer (the scope's tensor), then the op's node(s), standard or ai.corten; its outputs are
 * defined after. index names the op in messages. */
ct_status ex_emit(ex_cx *x, const ex_op *op, size_t index);
/* The same bookkeeping for a node written directly: a name it reads (an initializer when
 * nothing defines it yet) and a name it writes. */
ct_status ex_reads(ex_cx *x, const char *name);
ct_status ex_writes(ex_cx *x, const char *name);
/* A copy of s owned by the export until it ends (for names made up while writing); NULL when
 * out of host memory (recorded). */
const char *ex_keep(ex_cx *x, const char *s);
/* A new int64 initializer holding the one value v as a scalar (rank 0): its name (as ex_tmp). */
const char *ex_const_index(ex_cx *x, const char *base, int64_t v);
/* The recurrent op at index as its steps unrolled (onnx/export_unroll.c): per step a Gather of
 * each sequence's row and the step program's ops on names of their own, then the outputs
 * stacked (Unsqueeze, Concat) and the final states (Identity). CT_ERR_UNINITIALIZED when the
 * sequence length is not known (X holds no dims), CT_ERR_UNSUPPORTED for what cannot be
 * unrolled (named). */
ct_status ex_unroll(ex_cx *x, const ex_op *op, size_t index);

/* Writes op as standard ONNX when an exact mapping exists (*done true), else leaves the graph
 * as it was (*done false). Errors: CT_ERR_OUT_OF_MEMORY. */
ct_status ex_standard(ex_cx *x, const ex_op *op, bool *done);
/* The rows of export_std.c that need more than copying attributes (conv2d, pool2d, matmul with
 * transposes as Gemm, clip; onnx/export_nn.c), as ex_standard. */
ct_status ex_nn(ex_cx *x, const ex_op *op, bool *done);
/* simple_rnn, gru and lstm as RNN, GRU and LSTM (onnx/export_rnn.c), as ex_standard. */
ct_status ex_rnn(ex_cx *x, const ex_op *op, bool *done);
/* Whether every attribute of op whose used[] entry is false holds its type's default. */
bool ex_attrs_default(const ex_op *op, const bool *used);
/* A new initializer of dtype dt holding the one value v (a scalar): its name (as ex_tmp);
 * NULL when dt is not float32 or float64, or v does not fit it exactly. */
const char *ex_const_scalar(ex_cx *x, const char *base, double v, ct_dtype dt);
/* Writes op as a node of ai.corten: op type, every slot's names (counts in the attributes
 * "__in" and "__out"), every attribute. CT_ERR_UNSUPPORTED for a program attribute (naming the
 * op at index and the attribute). */
ct_status ex_corten(ex_cx *x, const ex_op *op, size_t index);

#endif /* CORTEN_ONNX_SAVE_H */
