/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/onnx_wire.h: protobuf's wire format, for the ONNX reader (onnx/onnx_pb.c) only: a
 * message is a run of (tag, value) pairs, a tag the field number and the wire type; varints are
 * at most 10 bytes and every length is checked against the bytes left in its message. A reader
 * keeps the field path it is in ("graph.node[3].attribute[0]") for messages. */
#ifndef CORTEN_ONNX_WIRE_H
#define CORTEN_ONNX_WIRE_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/common.h"
#include "onnx/onnx_model.h"

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

typedef struct rd {
  const uint8_t *base; /* the whole input, for offsets in messages */
  const uint8_t *p, *end;
  const char *what;    /* the input's name */
  char path[200];      /* the field being read, "graph.node[3].attribute[0]" */
  ox_model *m;
} rd;

typedef struct pos_t {
  const uint8_t *p, *end;
  size_t path_len;
} pos_t;

static inline ct_status bad(const rd *r, const char *fmt, ...) CT__PRINTF(2, 3);
static inline ct_status bad(const rd *r, const char *fmt, ...) {
  char text[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  return ct__error(CT_ERR_FORMAT, "%s: %s at byte %zu: %s (a malformed or truncated ONNX file)",
                   r->what, r->path[0] ? r->path : "the model", (size_t)(r->p - r->base), text);
}

static inline ct_status oom(void) {
  return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_onnx_load: out of host memory reading the model");
}

static inline ct_status varint(rd *r, uint64_t *v) {
  uint64_t x = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (r->p >= r->end) return bad(r, "a varint runs past the end of its message");
    uint8_t b = *r->p++;
    if (shift == 63 && b > 1) return bad(r, "a varint longer than 64 bits");
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = x;
      return CT_OK;
    }
  }
  return bad(r, "a varint longer than 10 bytes");
}

static inline ct_status fixed(rd *r, size_t n, void *out) {
  if ((size_t)(r->end - r->p) < n) return bad(r, "a %zu-byte value runs past the end", n);
  memcpy(out, r->p, n); /* protobuf is little-endian, as every machine corten builds for */
  r->p += n;
  return CT_OK;
}

static inline ct_status span(rd *r, ox_span *s) {
  uint64_t len = 0;
  ct_status st = varint(r, &len);
  if (st != CT_OK) return st;
  if (len > (uint64_t)(r->end - r->p)) {
    return bad(r, "a length of %llu bytes but %zu are left", (unsigned long long)len,
               (size_t)(r->end - r->p));
  }
  s->p = r->p;
  s->n = (size_t)len;
  r->p += len;
  return CT_OK;
}

static inline ct_status skip(rd *r, int wt) {
  uint64_t v = 0;
  ox_span s;
  switch (wt) {
    case WT_VARINT: return varint(r, &v);
    case WT_I64: return fixed(r, 8, &v);
    case WT_I32: return fixed(r, 4, &v);
    case WT_LEN: return span(r, &s);
    default: return bad(r, "wire type %d (groups and unknown types are not ONNX's)", wt);
  }
}

/* The next tag of the message: *field, *wt; false at its end. */
static inline ct_status tag(rd *r, int *field, int *wt, bool *more) {
  *more = r->p < r->end;
  if (!*more) return CT_OK;
  uint64_t t = 0;
  ct_status st = varint(r, &t);
  if (st != CT_OK) return st;
  if ((t >> 3) == 0 || (t >> 3) > 536870911u) return bad(r, "field number 0 or out of range");
  *field = (int)(t >> 3);
  *wt = (int)(t & 7);
  return CT_OK;
}

/* Enters the message in span s (r reads it until leave), with the path extended by fmt. */
static inline pos_t enter(rd *r, ox_span s, const char *fmt, ...) CT__PRINTF(3, 4);
static inline pos_t enter(rd *r, ox_span s, const char *fmt, ...) {
  pos_t saved = {r->p, r->end, strlen(r->path)};
  r->p = s.p;
  r->end = s.p + s.n;
  va_list ap;
  va_start(ap, fmt);
  size_t len = saved.path_len;
  if (len + 1 < sizeof r->path) vsnprintf(r->path + len, sizeof r->path - len, fmt, ap);
  va_end(ap);
  return saved;
}

static inline void leave(rd *r, pos_t saved) {
  r->p = saved.p;
  r->end = saved.end;
  r->path[saved.path_len] = '\0';
}

/* Extends the path by ".name[k]"; returns the length to cut it back to. */
static inline size_t path_push(rd *r, const char *name, size_t k) {
  size_t len = strlen(r->path);
  if (len + 1 < sizeof r->path) snprintf(r->path + len, sizeof r->path - len, ".%s[%zu]", name, k);
  return len;
}

static inline ct_status expect(rd *r, int wt, int want, const char *name) {
  return wt == want ? CT_OK : bad(r, "field '%s' has wire type %d, not %d", name, wt, want);
}

/* Grows *arr (of *n entries of size) by one zeroed entry; NULL when out of memory. */
static inline void *push(void **arr, size_t *n, size_t size) {
  size_t k = *n;
  if ((k & (k - 1)) == 0) { /* 0, 1, 2, 4 ...: double */
    size_t cap = k ? 2 * k : 1;
    void *g = ct__realloc(*arr, cap * size);
    if (g == NULL) return NULL;
    *arr = g;
  }
  *n = k + 1;
  void *e = (char *)*arr + k * size;
  memset(e, 0, size);
  return e;
}

/* One element of a repeated int64 or float field (packed or not) appended to an arena array:
 * counts first, then reads. */
static inline ct_status read_int(rd *r, int wt, int64_t *out) {
  uint64_t v = 0;
  ct_status st = wt == WT_VARINT ? varint(r, &v) : bad(r, "an integer with wire type %d", wt);
  *out = (int64_t)v;
  return st;
}

#endif /* CORTEN_ONNX_WIRE_H */
