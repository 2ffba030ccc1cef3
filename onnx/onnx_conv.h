/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/onnx_conv.h: the state of one import (onnx/onnx_load.c), which the rules' context
 * (onnx/onnx_cx.c) reads and adds to: the staged tensors (initializers, Constant nodes and the
 * constants rules make), the names defined so far, the program, and the messages of the nodes
 * that cannot be imported. */
#ifndef CORTEN_ONNX_CONV_H
#define CORTEN_ONNX_CONV_H

#include <corten/program.h>
#include <corten/tensor.h>

#include "onnx/onnx_model.h"
#include "onnx/onnx_rules.h"

/* A tensor that becomes a variable of the scope when the load succeeds. */
typedef struct ox_staged {
  const char *name;
  ct_tensor *t;
  int64_t *ints;    /* its values as int64 / double, decoded on first ask */
  double *floats;
  size_t n;
  bool constant;    /* an initializer or Constant: rules may read its values */
  bool inexact;     /* a value its double does not hold (float16, bfloat16: not decoded;
                       64-bit integers past 2^53) */
} ox_staged;

typedef struct ox_conv {
  ox_model *m;
  const char *what;     /* "ct_onnx_load: 'model.onnx'" */
  int64_t opset;
  ct_program *prog;
  ox_staged *staged;
  size_t n_staged;
  /* names defined so far (graph inputs, staged tensors, node outputs): open addressing over
   * C strings; the value is the staged index + 1, or 0 for a value computed at run time */
  const char **keys;
  size_t *vals;
  size_t cap, used;
  char *unsup;          /* the messages of the nodes that cannot be imported, "; "-separated */
  size_t unsup_len, unsup_cap, n_unsup;
  unsigned tmp_counter;
} ox_conv;

struct ox_cx {
  ox_conv *cv;
  const ox_node *n;
  size_t index;         /* the node's position in the graph */
  ct_op **pending;      /* made, not yet pushed */
  size_t n_pending, cap_pending;
  bool reported;        /* ox_unsupported ran */
};

/* Defines name (a C string of the model's arena); staged: its staged index + 1, or 0. false when
 * out of memory. */
bool ox_define(ox_conv *cv, const char *name, size_t staged);
/* Whether name is defined; *staged its staged index + 1 (0: computed at run time). */
bool ox_defined(const ox_conv *cv, const char *name, size_t *staged);
/* Stages tensor t (taken) under name; its index, or SIZE_MAX when out of memory (t freed). */
size_t ox_stage(ox_conv *cv, const char *name, ct_tensor *t, bool constant);
/* The label of node i for messages: "node 'conv1' (Conv, opset 13)". */
const char *ox_node_label(ox_conv *cv, size_t i, char *buf, size_t cap);
/* Appends a message about node i to the unsupported list; false when out of memory. */
void ox_note_unsupported(ox_conv *cv, size_t i, const char *text);
/* A tensor from TensorProto t, staged data read from its payload (what: for messages). CT_OK,
 * CT_ERR_FORMAT, CT_ERR_UNSUPPORTED (a dtype corten has no tensor of) or CT_ERR_OUT_OF_MEMORY.
 * External data is read by read_external when it is not NULL. */
typedef ct_status (*ox_external_fn)(void *arg, const ox_tensor *t, void *dst, size_t bytes);
/* Told each piece of raw_data once it is copied (NULL: not told). */
typedef void (*ox_copied_fn)(void *arg, ox_span piece);
ct_status ox_tensor_make(const ox_tensor *t, const char *what, ox_external_fn read_external,
                         ox_copied_fn copied, void *arg, ct_tensor **out);

/* A model file mapped read-only (data, size) and its folder (external data). */
typedef struct ox_file {
  const uint8_t *data;
  size_t size;
  char dir[4096];
} ox_file;
ct_status ox_map(const char *path, const char *what, ox_file *f);
void ox_unmap(ox_file *f);

#endif /* CORTEN_ONNX_CONV_H */
