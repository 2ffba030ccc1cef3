/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/onnx_rules.h: how an ONNX node becomes corten ops. A rule is a row: the ONNX op type, the
 * opset from which it holds (`since`), and the function that appends the node's ops to the
 * program through the calls below. A model uses, for each op type, the last row whose `since` is
 * at or below its opset; a new opset adds rows and never edits old ones. One file per family
 * (rules_math.c, rules_nn.c, rules_shape.c) exports its rows; onnx_rules.c lists the families.
 *
 * A rule reads the node through its context: input and output names (NULL for an input left
 * out), attributes with their defaults, and the values of inputs that are constants (an
 * initializer or a Constant node), so a shape known at load becomes an attribute of the corten
 * op and one known only at run time is wired as an input. What the rule cannot do it reports with
 * ox_unsupported, which records the part and returns CT_ERR_UNSUPPORTED; the importer goes on to
 * the next node, so one message names every node of a model that corten cannot run. */
#ifndef CORTEN_ONNX_RULES_H
#define CORTEN_ONNX_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <corten/op.h>
#include <corten/status.h>

#include "common/common.h"
#include "onnx/onnx_model.h"

typedef struct ox_cx ox_cx;
typedef ct_status (*ox_rule_fn)(ox_cx *c);

typedef struct ox_rule {
  const char *op;     /* ONNX op type */
  int since;          /* the first opset (of its family's domain) this row holds for */
  ox_rule_fn fn;
  const char *corten; /* the corten op types it makes, for docs/design/onnx.md */
} ox_rule;

typedef struct ox_rules {
  const ox_rule *rows;
  size_t n;
} ox_rules;

extern const ox_rules ox_rules_math, ox_rules_nn, ox_rules_shape, ox_rules_ew, ox_rules_index,
    ox_rules_reduce, ox_rules_rnn, ox_rules_train;
/* NonMaxSuppression, Unique, Einsum, Det, the window functions, MelWeightMatrix (rules_misc.c). */
extern const ox_rules ox_rules_misc;
/* QuantizeLinear, DequantizeLinear (rules_quant.c). */
extern const ox_rules ox_rules_quant;
/* Resize, Upsample, GridSample, RoiAlign (rules_resample.c). */
extern const ox_rules ox_rules_resample;
/* Conv, ConvTranspose, BatchNormalization (rules_conv.c). */
extern const ox_rules ox_rules_conv;
/* MaxPool, AveragePool, MaxUnpool, LRN, InstanceNormalization, MeanVarianceNormalization
 * (rules_pool.c). */
extern const ox_rules ox_rules_pool;
/* Every corten op type, as ct_onnx_save writes it in the domain ai.corten (rules_corten.c): one
 * row "*" that matches any op type of that domain. */
extern const ox_rules ox_rules_corten;
extern const ox_rules ox_rules_ms; /* com.microsoft: onnxruntime's quantized ops */

/* The row for op type `op` of domain `domain` (dlen bytes; empty or "ai.onnx": the default one)
 * at that domain's `opset`; NULL when none holds. */
const ox_rule *ox_rule_for(const char *domain, size_t dlen, const char *op, size_t len,
                           int64_t opset);

/* ---- What a rule reads ------------------------------------------------------------------------- */
int64_t ox_opset(const ox_cx *c);
size_t ox_n_in(const ox_cx *c);
size_t ox_n_out(const ox_cx *c);
/* Input or output k's name; NULL when k is past the node's or the name is empty (left out). */
const char *ox_in(ox_cx *c, size_t k);
const char *ox_out(ox_cx *c, size_t k);

/* The attribute called name, or NULL. */
const ox_attr *ox_attr_get(const ox_cx *c, const char *name);
int64_t ox_int(const ox_cx *c, const char *name, int64_t dflt);
double ox_float(const ox_cx *c, const char *name, double dflt);
/* A string attribute as a C string in the model's arena (dflt when absent). */
const char *ox_string(ox_cx *c, const char *name, const char *dflt);
/* An ints attribute: its values and count; false when absent. */
bool ox_ints(const ox_cx *c, const char *name, const int64_t **v, size_t *n);

/* Whether input k is a constant (an initializer, or a Constant node's output) and then its
 * values as int64 (*v, *n; from int32 or int64 tensors) or as doubles (floating tensors). false
 * for an input computed at run time or a constant of another dtype. The arrays live as long as
 * the model. */
bool ox_const_ints(ox_cx *c, size_t k, const int64_t **v, size_t *n);
bool ox_const_floats(ox_cx *c, size_t k, const double **v, size_t *n);
/* Input k's constant values as doubles, whatever its dtype (bool and integers included); false
 * when a double would not hold them exactly (float16 and bfloat16, which are not decoded here,
 * and 64-bit integers past 2^53): the rule then wires the input, read exactly at run time. */
bool ox_const_any(ox_cx *c, size_t k, const double **v, size_t *n);
/* Whether input k is a constant at all (whatever its dtype). */
bool ox_is_const(const ox_cx *c, size_t k);
/* Input k's rank where the import knows it (a constant's, or a graph input's declared one);
 * -1 otherwise. */
int ox_in_rank(const ox_cx *c, size_t k);
/* Input 1 (B) of a binary node as numpy's broadcasting takes it: before opset 7 with
 * `broadcast` 1 and `axis`, B's dims lie from A's dim `axis` on, so B unsqueezed at its end to
 * A's rank (a fresh variable) where they do not reach A's last dim; the input itself otherwise.
 * Unsupported, naming the node, when the ranks are not known at import (a constant's, or a
 * graph input's declared one) or the axis puts B past A. */
ct_status ox_legacy_b(ox_cx *c, const char **b);
/* Input 1 (rank rb) aligned from dim `axis` of input 0 (rank ra) as above, into *b. */
ct_status ox_align_b(ox_cx *c, int64_t axis, int ra, int rb, const char **b);

/* Whether the node gives inputs required[0..n) and output 0: CT_OK, else unsupported naming
 * the missing one (with names[k], ONNX input k's name, when names is not NULL). */
ct_status ox_need(ox_cx *c, const size_t *required, size_t n, const char *const *names);

/* ---- What a rule makes ----------------------------------------------------------------------------- */
/* A new op of corten type `type`, owned by the context until ox_push hands it to the program
 * (or the node fails and it is freed); NULL with the error recorded. */
ct_op *ox_op(ox_cx *c, const char *type);
/* An op of `type` with the node's input k wired to slot slots[k] where the node gives it
 * (k < n_in) and output 0 to slot `out`, after ox_need(required, n_required, slots); NULL with
 * the error recorded (the op, owned by the context, is freed with the node). */
ct_op *ox_op_wired(ox_cx *c, const char *type, const char *const *slots, size_t n_in,
                   const size_t *required, size_t n_required, const char *out);
/* Appends op to the program. */
ct_status ox_push(ox_cx *c, ct_op *op);
/* Makes an op of `type` reading x (slot X) and writing out (slot Out), appended. */
ct_status ox_unary(ox_cx *c, const char *type, const char *x, const char *out);
/* A fresh variable name for a value between the node's ops ("<first output>@onnx<k>"). */
const char *ox_tmp(ox_cx *c);
/* A new constant variable holding the n int64 values v as dims [n] (or a scalar when rank0),
 * or n doubles as a float32 tensor: its name. NULL when out of memory. */
const char *ox_const_new_ints(ox_cx *c, const int64_t *v, size_t n);
const char *ox_const_new_float(ox_cx *c, double v, ct_dtype dt);

/* Records that the node cannot be imported because of `fmt` (the part: an attribute's value, an
 * input computed at run time ...) and returns CT_ERR_UNSUPPORTED. */
ct_status ox_unsupported(ox_cx *c, const char *fmt, ...) CT__PRINTF(2, 3);

/* The ONNX data type in attribute `to` (Cast) or `dtype` as a corten dtype; CT_DTYPE_UNDEFINED
 * when corten has none. */
ct_dtype ox_attr_dtype(const ox_cx *c, const char *name, int32_t dflt);

#endif /* CORTEN_ONNX_RULES_H */
