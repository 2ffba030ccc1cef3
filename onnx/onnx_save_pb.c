/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/onnx_save_pb.c: protobuf's wire format, written (the reader is onnx/onnx_wire.h): varints,
 * length-delimited fields and nested messages, each message built in its own buffer and appended
 * to its parent with its length. Also the ONNX messages the export writes: TensorProto, NodeProto
 * and AttributeProto. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "onnx/onnx_model.h"
#include "onnx/onnx_save.h"

void pbw_free(pbw *b) {
  free(b->p);
  *b = (pbw){0};
}

void pbw_raw(pbw *b, const void *p, size_t n) {
  if (b->oom || n == 0) return;
  if (b->cap - b->n < n) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->n < n) {
      if (cap > SIZE_MAX / 2) {
        b->oom = true;
        return;
      }
      cap *= 2;
    }
    uint8_t *g = ct__realloc(b->p, cap);
    if (g == NULL) {
      b->oom = true;
      return;
    }
    b->p = g;
    b->cap = cap;
  }
  memcpy(b->p + b->n, p, n);
  b->n += n;
}

void pbw_varint(pbw *b, uint64_t v) {
  uint8_t buf[10];
  size_t k = 0;
  do {
    uint8_t byte = v & 0x7f;
    v >>= 7;
    buf[k++] = byte | (v ? 0x80 : 0);
  } while (v);
  pbw_raw(b, buf, k);
}

void pbw_tag(pbw *b, int field, int wt) { pbw_varint(b, ((uint64_t)field << 3) | (unsigned)wt); }

void pbw_int(pbw *b, int field, int64_t v) {
  pbw_tag(b, field, PB_VARINT);
  pbw_varint(b, (uint64_t)v);
}

void pbw_f32(pbw *b, int field, float v) {
  uint8_t bytes[4];
  memcpy(bytes, &v, 4); /* little-endian, as every machine corten builds for */
  pbw_tag(b, field, PB_I32);
  pbw_raw(b, bytes, 4);
}

void pbw_bytes(pbw *b, int field, const void *p, size_t n) {
  pbw_tag(b, field, PB_LEN);
  pbw_varint(b, n);
  pbw_raw(b, p, n);
}

void pbw_str(pbw *b, int field, const char *s) { pbw_bytes(b, field, s, strlen(s)); }

void pbw_msg(pbw *b, int field, pbw *sub) {
  if (sub->oom) b->oom = true;
  pbw_bytes(b, field, sub->p, sub->n);
  pbw_free(sub);
}

int32_t ex_onnx_dtype(ct_dtype dt) {
  switch (dt) {
    case CT_FLOAT32: return OX_FLOAT;
    case CT_UINT8: return OX_UINT8;
    case CT_INT8: return OX_INT8;
    case CT_INT16: return OX_INT16;
    case CT_INT32: return OX_INT32;
    case CT_INT64: return OX_INT64;
    case CT_BOOL: return OX_BOOL;
    case CT_FLOAT16: return OX_FLOAT16;
    case CT_FLOAT64: return OX_DOUBLE;
    case CT_BFLOAT16: return OX_BFLOAT16;
    case CT_UINT16: return OX_UINT16;
    case CT_UINT32: return OX_UINT32;
    case CT_UINT64: return OX_UINT64;
    default: return 0;
  }
}

/* TensorProto: dims 1, data_type 2, name 8, raw_data 9. */
void ex_tensor(pbw *b, const char *name, int32_t data_type, const int64_t *dims, int rank,
               const void *data, size_t bytes) {
  for (int k = 0; k < rank; k++) pbw_int(b, 1, dims[k]);
  pbw_int(b, 2, data_type);
  if (name != NULL) pbw_str(b, 8, name);
  pbw_bytes(b, 9, data, bytes);
}

/* ---- Nodes and attributes ------------------------------------------------------------------ */
/* NodeProto: input 1, output 2, name 3, op_type 4, attribute 5, domain 7.
 * AttributeProto: name 1, f 2, i 3, s 4, t 5, floats 7, ints 8, type 20. */

void ex_node_begin(ex_node *nd, ex_cx *x, const char *op_type, const char *domain,
                   const char *const *in, size_t n_in, const char *const *out, size_t n_out) {
  *nd = (ex_node){.x = x};
  for (size_t k = 0; k < n_in; k++) pbw_str(&nd->body, 1, in[k] ? in[k] : "");
  for (size_t k = 0; k < n_out; k++) pbw_str(&nd->body, 2, out[k] ? out[k] : "");
  char name[48];
  snprintf(name, sizeof name, "n%zu", x->n_nodes);
  pbw_str(&nd->body, 3, name);
  pbw_str(&nd->body, 4, op_type);
  if (domain != NULL) {
    pbw_str(&nd->body, 7, domain);
    x->uses_corten = true;
  }
}

static void attr_end(ex_node *nd, pbw *a, int type) {
  pbw_int(a, 20, type);
  pbw_msg(&nd->body, 5, a);
}

void ex_attr_int(ex_node *nd, const char *name, int64_t v) {
  pbw a = {0};
  pbw_str(&a, 1, name);
  pbw_int(&a, 3, v);
  attr_end(nd, &a, OX_ATTR_INT);
}

void ex_attr_float(ex_node *nd, const char *name, float v) {
  pbw a = {0};
  pbw_str(&a, 1, name);
  pbw_f32(&a, 2, v);
  attr_end(nd, &a, OX_ATTR_FLOAT);
}

void ex_attr_str(ex_node *nd, const char *name, const char *v) {
  pbw a = {0};
  pbw_str(&a, 1, name);
  pbw_str(&a, 4, v);
  attr_end(nd, &a, OX_ATTR_STRING);
}

void ex_attr_ints(ex_node *nd, const char *name, const int64_t *v, size_t n) {
  pbw a = {0}, packed = {0};
  pbw_str(&a, 1, name);
  for (size_t k = 0; k < n; k++) pbw_varint(&packed, (uint64_t)v[k]);
  if (n > 0) pbw_msg(&a, 8, &packed);
  attr_end(nd, &a, OX_ATTR_INTS);
}

void ex_attr_floats(ex_node *nd, const char *name, const float *v, size_t n) {
  pbw a = {0};
  pbw_str(&a, 1, name);
  if (n > 0) pbw_bytes(&a, 7, v, n * sizeof *v);
  attr_end(nd, &a, OX_ATTR_FLOATS);
}

void ex_attr_doubles(ex_node *nd, const char *name, const double *v, size_t n, bool scalar) {
  pbw a = {0}, t = {0};
  int64_t dims[1] = {(int64_t)n};
  pbw_str(&a, 1, name);
  ex_tensor(&t, NULL, OX_DOUBLE, dims, scalar ? 0 : 1, v, n * sizeof *v);
  pbw_msg(&a, 5, &t);
  attr_end(nd, &a, OX_ATTR_TENSOR);
}

void ex_attr_tensor(ex_node *nd, const char *name, pbw *tensor) {
  pbw a = {0};
  pbw_str(&a, 1, name);
  pbw_msg(&a, 5, tensor);
  attr_end(nd, &a, OX_ATTR_TENSOR);
}

void ex_node_end(ex_node *nd) {
  pbw_msg(&nd->x->nodes, 1, &nd->body);
  nd->x->n_nodes++;
}

const char *ex_tmp(ex_cx *x, const char *base) {
  snprintf(x->name, sizeof x->name, "%.40s@export%u", base, x->tmp++);
  return x->name;
}

const char *ex_const_ints(ex_cx *x, const char *base, const int64_t *v, size_t n) {
  const char *name = ex_tmp(x, base);
  pbw t = {0};
  int64_t dims[1] = {(int64_t)n};
  ex_tensor(&t, name, OX_INT64, dims, 1, v, n * sizeof *v);
  pbw_msg(&x->inits, 5, &t);
  return name;
}

const char *ex_const_index(ex_cx *x, const char *base, int64_t v) {
  const char *name = ex_tmp(x, base);
  pbw t = {0};
  ex_tensor(&t, name, OX_INT64, NULL, 0, &v, sizeof v);
  pbw_msg(&x->inits, 5, &t);
  return name;
}

const char *ex_const_scalar(ex_cx *x, const char *base, double v, ct_dtype dt) {
  float f = (float)v;
  if (dt != CT_FLOAT32 && dt != CT_FLOAT64) return NULL;
  if (dt == CT_FLOAT32 && (v != v || (double)f != v)) return NULL;
  const char *name = ex_tmp(x, base);
  pbw t = {0};
  if (dt == CT_FLOAT32) ex_tensor(&t, name, OX_FLOAT, NULL, 0, &f, sizeof f);
  else ex_tensor(&t, name, OX_DOUBLE, NULL, 0, &v, sizeof v);
  pbw_msg(&x->inits, 5, &t);
  return name;
}
