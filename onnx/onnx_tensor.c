/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/onnx_tensor.c: ONNX tensors' element types and payloads (onnx/onnx_model.h). raw_data is
 * little-endian bytes of the element type; the typed fields are repeated protobuf scalars, which
 * a writer may pack or not: float_data (4), int32_data (5, also carrying bool, int8, uint8, int16,
 * uint16 and the bits of float16 and bfloat16), int64_data (7), double_data (10), uint64_data
 * (11, uint32 and uint64). */
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "onnx/onnx_conv.h"

ct_dtype ox_dtype(int32_t t) {
  switch (t) {
    case OX_FLOAT: return CT_FLOAT32;
    case OX_UINT8: return CT_UINT8;
    case OX_INT8: return CT_INT8;
    case OX_INT16: return CT_INT16;
    case OX_INT32: return CT_INT32;
    case OX_INT64: return CT_INT64;
    case OX_BOOL: return CT_BOOL;
    case OX_FLOAT16: return CT_FLOAT16;
    case OX_DOUBLE: return CT_FLOAT64;
    case OX_BFLOAT16: return CT_BFLOAT16;
    case OX_UINT16: return CT_UINT16;
    case OX_UINT32: return CT_UINT32;
    case OX_UINT64: return CT_UINT64;
    default: return CT_DTYPE_UNDEFINED;
  }
}

const char *ox_type_name(int32_t t) {
  static const char *const names[] = {"undefined", "float", "uint8", "int8", "uint16", "int16",
                                      "int32", "int64", "string", "bool", "float16", "double",
                                      "uint32", "uint64", "complex64", "complex128", "bfloat16"};
  return t >= 0 && t < (int32_t)(sizeof names / sizeof names[0]) ? names[t] : "unknown";
}

int64_t ox_numel(const ox_tensor *t) {
  int64_t n = 1;
  for (int k = 0; k < t->rank; k++) {
    if (__builtin_mul_overflow(n, t->dims[k], &n) || n > ((int64_t)1 << 52)) return -1;
  }
  return n;
}

/* The typed field that carries dtype dt's values. */
static int field_of(ct_dtype dt) {
  switch (dt) {
    case CT_FLOAT32: return 4;
    case CT_INT64: return 7;
    case CT_FLOAT64: return 10;
    case CT_UINT32: case CT_UINT64: return 11;
    default: return 5;
  }
}

typedef struct cursor {
  const uint8_t *p, *end;
} cursor;

static bool get_varint(cursor *c, uint64_t *v) {
  uint64_t x = 0;
  for (int shift = 0; shift < 70 && c->p < c->end; shift += 7) {
    uint8_t b = *c->p++;
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = x;
      return true;
    }
  }
  return false;
}

/* Stores value k (raw: the varint, or the fixed bytes) as element i of dst. */
static void store(ct_dtype dt, void *dst, int64_t i, uint64_t raw) {
  switch (dt) {
    case CT_BOOL: ((uint8_t *)dst)[i] = raw != 0; break;
    case CT_INT8: case CT_UINT8: ((uint8_t *)dst)[i] = (uint8_t)raw; break;
    case CT_INT16: case CT_UINT16: case CT_FLOAT16: case CT_BFLOAT16:
      ((uint16_t *)dst)[i] = (uint16_t)raw;
      break;
    case CT_INT32: case CT_UINT32: case CT_FLOAT32: ((uint32_t *)dst)[i] = (uint32_t)raw; break;
    default: ((uint64_t *)dst)[i] = raw; break;
  }
}

/* Reads one element of the field's wire type wt at c into *raw. */
static bool element(cursor *c, int wt, uint64_t *raw) {
  if (wt == 0) return get_varint(c, raw);
  size_t n = wt == 1 ? 8 : 4;
  if ((size_t)(c->end - c->p) < n) return false;
  uint64_t v = 0;
  memcpy(&v, c->p, n);
  c->p += n;
  *raw = v;
  return true;
}

ct_status ox_tensor_values(const ox_tensor *t, int64_t numel, ct_dtype dt, void *dst,
                           const char *what) {
  int want = field_of(dt), ewt = dt == CT_FLOAT32 ? 5 : dt == CT_FLOAT64 ? 1 : 0;
  cursor c = {t->msg.p, t->msg.p + t->msg.n};
  int64_t got = 0;
  bool ok = true;
  while (ok && c.p < c.end) {
    uint64_t tagv, len;
    if (!get_varint(&c, &tagv)) {
      ok = false;
      break;
    }
    int f = (int)(tagv >> 3), wt = (int)(tagv & 7);
    if (f == want && wt == 2) { /* packed */
      if (!get_varint(&c, &len) || len > (uint64_t)(c.end - c.p)) {
        ok = false;
        break;
      }
      cursor in = {c.p, c.p + len};
      c.p += len;
      while (ok && in.p < in.end) {
        uint64_t raw;
        ok = element(&in, ewt, &raw) && got < numel;
        if (ok) store(dt, dst, got++, raw);
      }
    } else if (f == want && wt == ewt) {
      uint64_t raw;
      ok = element(&c, ewt, &raw) && got < numel;
      if (ok) store(dt, dst, got++, raw);
    } else { /* any other field: skip it */
      uint64_t v;
      if (wt == 0) ok = get_varint(&c, &v);
      else if (wt == 1 || wt == 5) ok = element(&c, wt, &v);
      else if (wt == 2) ok = get_varint(&c, &len) && len <= (uint64_t)(c.end - c.p) && (c.p += len, true);
      else ok = false;
    }
  }
  if (!ok || got != numel) {
    char count[48];
    if (ok) snprintf(count, sizeof count, "%lld values", (long long)got);
    else snprintf(count, sizeof count, "more values than that, or a truncated one,");
    return ct__error(CT_ERR_FORMAT,
                     "%s: tensor '%.*s' (%s, %lld elements by its dims) holds %s in its typed "
                     "field %d (and no raw_data): a malformed or truncated ONNX file",
                     what, (int)(t->name.n > 200 ? 200 : t->name.n), (const char *)t->name.p,
                     ox_type_name(t->data_type), (long long)numel, count, want);
  }
  return CT_OK;
}

ct_status ox_tensor_make(const ox_tensor *t, const char *what, ox_external_fn read_external,
                         ox_copied_fn copied, void *arg, ct_tensor **out) {
  int nl = (int)(t->name.n > 200 ? 200 : t->name.n);
  const char *name = (const char *)t->name.p;
  ct_dtype dt = ox_dtype(t->data_type);
  if (dt == CT_DTYPE_UNDEFINED) {
    return ct__error(CT_ERR_UNSUPPORTED,
                     "%s: tensor '%.*s' holds ONNX type %s, which corten has no tensor of "
                     "(bool, int8 to int64, uint8 to uint64, float16, bfloat16, float32 and float64 "
                     "only)",
                     what, nl, name, ox_type_name(t->data_type));
  }
  int64_t numel = ox_numel(t);
  if (numel < 0) {
    return ct__error(CT_ERR_FORMAT, "%s: tensor '%.*s' has dims whose product overflows", what,
                     nl, name);
  }
  size_t bytes = (size_t)numel * ct_dtype_size(dt);
  if (t->external && read_external == NULL) {
    return ct__error(CT_ERR_UNSUPPORTED,
                     "%s: tensor '%.*s' keeps its data in an external file, which a model loaded "
                     "from memory has no folder to find: load it with ct_onnx_load(path)",
                     what, nl, name);
  }
  if (!t->external && t->has_raw && t->raw.n != bytes) {
    return ct__error(CT_ERR_FORMAT,
                     "%s: tensor '%.*s' (%s, %lld elements) has %zu bytes of raw_data, not %zu: "
                     "a malformed or truncated ONNX file",
                     what, nl, name, ox_type_name(t->data_type), (long long)numel, t->raw.n, bytes);
  }
  ct_tensor *x = ct_tensor_new();
  ct_ddim dims = {.rank = t->rank};
  for (int k = 0; k < t->rank; k++) dims.d[k] = t->dims[k];
  void *p = NULL;
  ct_status s = x == NULL ? ct_last_status() : ct_tensor_resize(x, dims);
  if (s == CT_OK) {
    p = ct_tensor_mutable_data(x, dt, ct_cpu());
    if (p == NULL) s = ct_last_status();
  }
  if (s == CT_OK) {
    if (t->external) s = read_external(arg, t, p, bytes);
    else if (t->has_raw) {
      /* In pieces, each given back to the caller once copied (a mapped file drops its pages),
       * so a large weight is not in memory twice while it is copied. */
      for (size_t off = 0; off < bytes; off += (size_t)1 << 20) {
        size_t n = bytes - off < ((size_t)1 << 20) ? bytes - off : (size_t)1 << 20;
        memcpy((char *)p + off, t->raw.p + off, n);
        if (copied != NULL) copied(arg, (ox_span){t->raw.p + off, n});
      }
    }
    else s = ox_tensor_values(t, numel, dt, p, what);
  }
  if (s != CT_OK) {
    ct_tensor_free(x);
    return s;
  }
  *out = x;
  return CT_OK;
}
