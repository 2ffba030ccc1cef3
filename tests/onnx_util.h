/* SPDX-License-Identifier: Apache-2.0 */
/* tests/onnx_util.h: ONNX models written byte by byte for the import tests: a small protobuf
 * writer (varints, tags, length-delimited fields, nested messages) and builders of the few
 * messages the tests need (ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto,
 * ValueInfoProto), so a test states exactly which bytes the importer sees, broken ones included.
 * Field numbers are onnx.proto's. */
#ifndef CORTEN_TESTS_ONNX_UTIL_H
#define CORTEN_TESTS_ONNX_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

typedef struct pb {
  uint8_t *p;
  size_t n, cap;
} pb;

static inline void pb_bytes(pb *b, const void *v, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
    ck_assert_ptr_nonnull(b->p);
  }
  if (n) memcpy(b->p + b->n, v, n);
  b->n += n;
}

static inline void pb_varint(pb *b, uint64_t v) {
  uint8_t tmp[10];
  size_t k = 0;
  do {
    tmp[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  pb_bytes(b, tmp, k);
}

static inline void pb_tag(pb *b, int field, int wt) { pb_varint(b, (uint64_t)field << 3 | (uint64_t)wt); }
static inline void pb_int(pb *b, int field, int64_t v) {
  pb_tag(b, field, 0);
  pb_varint(b, (uint64_t)v);
}
static inline void pb_len(pb *b, int field, const void *v, size_t n) {
  pb_tag(b, field, 2);
  pb_varint(b, n);
  pb_bytes(b, v, n);
}
static inline void pb_str(pb *b, int field, const char *s) { pb_len(b, field, s, strlen(s)); }
/* Appends message m as field `field` of b, and frees m. */
static inline void pb_msg(pb *b, int field, pb *m) {
  pb_len(b, field, m->p, m->n);
  free(m->p);
  *m = (pb){0};
}
static inline void pb_float(pb *b, int field, float f) {
  pb_tag(b, field, 5);
  pb_bytes(b, &f, 4);
}

/* TensorProto: name, dims, data type, raw data. */
static inline pb ox_tensor_pb(const char *name, int dtype, const int64_t *dims, int rank,
                              const void *raw, size_t raw_bytes) {
  pb t = {0};
  for (int k = 0; k < rank; k++) pb_int(&t, 1, dims[k]);
  pb_int(&t, 2, dtype);
  pb_str(&t, 8, name);
  if (raw != NULL) pb_len(&t, 9, raw, raw_bytes);
  return t;
}

/* ValueInfoProto of a float tensor with dims (-1: a symbolic dim "N"). */
static inline pb ox_value_pb(const char *name, int elem_type, const int64_t *dims, int rank) {
  pb shape = {0}, tensor = {0}, type = {0}, v = {0};
  for (int k = 0; k < rank; k++) {
    pb d = {0};
    if (dims[k] < 0) pb_str(&d, 2, "N");
    else pb_int(&d, 1, dims[k]);
    pb_msg(&shape, 1, &d);
  }
  pb_int(&tensor, 1, elem_type);
  pb_msg(&tensor, 2, &shape);
  pb_msg(&type, 1, &tensor);
  pb_str(&v, 1, name);
  pb_msg(&v, 2, &type);
  return v;
}

/* NodeProto of op_type with NULL-ended input and output lists; attributes appended after. */
static inline pb ox_node_pb(const char *op_type, const char *const *in, const char *const *out) {
  pb n = {0};
  for (; in && *in; in++) pb_str(&n, 1, *in);
  for (; out && *out; out++) pb_str(&n, 2, *out);
  pb_str(&n, 4, op_type);
  return n;
}

static inline void ox_attr_ints_pb(pb *node, const char *name, const int64_t *v, size_t n) {
  pb a = {0};
  pb_str(&a, 1, name);
  pb_int(&a, 20, 7); /* INTS */
  for (size_t i = 0; i < n; i++) pb_int(&a, 8, v[i]);
  pb_msg(node, 5, &a);
}

static inline void ox_attr_int_pb(pb *node, const char *name, int64_t v) {
  pb a = {0};
  pb_str(&a, 1, name);
  pb_int(&a, 20, 2); /* INT */
  pb_int(&a, 3, v);
  pb_msg(node, 5, &a);
}

/* ModelProto around graph g (taken) at opset. */
static inline pb ox_model_pb(pb *g, int64_t opset) {
  pb m = {0}, op = {0};
  pb_int(&m, 1, 8); /* ir_version */
  pb_str(&op, 1, "");
  pb_int(&op, 2, opset);
  pb_msg(&m, 8, &op);
  pb_msg(&m, 7, g);
  return m;
}

#endif /* CORTEN_TESTS_ONNX_UTIL_H */
