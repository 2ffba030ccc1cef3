/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/onnx_model.h: an ONNX model as corten's reader sees it (onnx/onnx_pb.c), before any of it
 * becomes ops and variables (onnx/onnx_load.c).
 *
 * The reader is corten's own, over protobuf's wire format (docs/design/onnx.md says why): it
 * keeps every string, tensor payload and nested message as a span of the input, reads nothing
 * twice and copies no weight; names are copied, NUL-terminated, into the model's arena when the
 * importer asks. Only what the importer uses is decoded; every other field is skipped over
 * without recursing, so a hostile nesting depth costs nothing. Every length and count is checked
 * against the bytes left before it is used. */
#ifndef CORTEN_ONNX_MODEL_H
#define CORTEN_ONNX_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <corten/status.h>
#include <corten/tensor.h>

/* Bytes of the input: a string, a payload or a whole nested message. */
typedef struct ox_span {
  const uint8_t *p;
  size_t n;
} ox_span;

/* TensorProto.DataType values. */
enum {
  OX_UNDEFINED = 0, OX_FLOAT = 1, OX_UINT8 = 2, OX_INT8 = 3, OX_UINT16 = 4, OX_INT16 = 5,
  OX_INT32 = 6, OX_INT64 = 7, OX_STRING = 8, OX_BOOL = 9, OX_FLOAT16 = 10, OX_DOUBLE = 11,
  OX_UINT32 = 12, OX_UINT64 = 13, OX_COMPLEX64 = 14, OX_COMPLEX128 = 15, OX_BFLOAT16 = 16
};

/* A TensorProto: the payload is raw_data, or the typed repeated field (kept as the whole message,
 * decoded by ox_tensor_values), or external (a file beside the model). */
typedef struct ox_tensor {
  ox_span name;
  int32_t data_type;
  int rank;
  int64_t dims[CT_MAX_RANK];
  bool has_raw, external;
  ox_span raw;
  ox_span msg; /* the whole TensorProto */
  ox_span location; /* external: the file, relative to the model's folder */
  int64_t ext_offset, ext_length; /* external: -1 when not given */
} ox_tensor;

/* AttributeProto.AttributeType values. */
enum {
  OX_ATTR_FLOAT = 1, OX_ATTR_INT = 2, OX_ATTR_STRING = 3, OX_ATTR_TENSOR = 4, OX_ATTR_GRAPH = 5,
  OX_ATTR_FLOATS = 6, OX_ATTR_INTS = 7, OX_ATTR_STRINGS = 8, OX_ATTR_TENSORS = 9,
  OX_ATTR_GRAPHS = 10, OX_ATTR_SPARSE_TENSOR = 11, OX_ATTR_SPARSE_TENSORS = 12,
  OX_ATTR_TYPE_PROTO = 13, OX_ATTR_TYPE_PROTOS = 14
};

typedef struct ox_attr {
  ox_span name;
  int type;
  float f;
  int64_t i;
  ox_span s;
  ox_tensor t;
  float *floats;
  int64_t *ints;
  ox_span *strings;
  size_t n_floats, n_ints, n_strings;
} ox_attr;

typedef struct ox_node {
  ox_span name, op_type, domain;
  ox_span *in, *out; /* "" for an input left out */
  size_t n_in, n_out;
  ox_attr *attr;
  size_t n_attr;
} ox_node;

/* A graph input or output (ValueInfoProto): its element type and dims (-1: symbolic or
 * unknown; rank -1: no shape given). */
typedef struct ox_value {
  ox_span name;
  bool not_tensor; /* a sequence, map, optional or sparse type */
  int32_t elem_type;
  int rank;
  int64_t dims[CT_MAX_RANK];
} ox_value;

typedef struct ox_opset_id {
  ox_span domain;
  int64_t version;
} ox_opset_id;

typedef struct ox_arena ox_arena;

typedef struct ox_model {
  int64_t ir_version;
  ox_opset_id *opsets;
  size_t n_opsets;
  ox_node *nodes;
  size_t n_nodes;
  ox_tensor *inits;
  size_t n_inits;
  ox_value *inputs, *outputs;
  size_t n_inputs, n_outputs;
  size_t n_sparse; /* sparse initializers: unsupported, counted for the message */
  size_t n_functions; /* model-local functions: unsupported unless unused */
  ox_arena *arena;
} ox_model;

/* Parses an ONNX ModelProto from the n bytes at p into *m (which then refers into p: keep p alive
 * while m is used). CT_OK, or CT_ERR_FORMAT naming the field and the byte offset (what: the
 * input's name for the message), or CT_ERR_OUT_OF_MEMORY; *m is then empty. */
ct_status ox_parse(const uint8_t *p, size_t n, const char *what, ox_model *m);
void ox_model_free(ox_model *m);
/* Parses one TensorProto message (a .pb file of ONNX's test data) into *t, which refers into p. */
ct_status ox_parse_tensor(const uint8_t *p, size_t n, const char *what, ox_tensor *t);

/* A NUL-terminated copy of s in m's arena (freed with m); NULL when out of memory. */
const char *ox_cstr(ox_model *m, ox_span s);
/* Whether s holds exactly the C string c. */
bool ox_eq(ox_span s, const char *c);

/* The number of elements the dims of t give; -1 when they overflow. */
int64_t ox_numel(const ox_tensor *t);
/* corten's dtype for an ONNX data type; CT_DTYPE_UNDEFINED when corten has none. */
ct_dtype ox_dtype(int32_t data_type);
const char *ox_type_name(int32_t data_type);
/* Decodes t's typed repeated field (float_data, int32_data, int64_data, double_data,
 * uint64_data; packed or not) into dst, numel elements of dtype dt's size, converting int32_data
 * to the narrower types it carries (bool, int8, uint8, int16, uint16, float16 and bfloat16 bits).
 * CT_OK, or CT_ERR_FORMAT when the field holds another count of elements than numel. */
ct_status ox_tensor_values(const ox_tensor *t, int64_t numel, ct_dtype dt, void *dst,
                           const char *what);

#endif /* CORTEN_ONNX_MODEL_H */
