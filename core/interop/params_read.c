/* SPDX-License-Identifier: Apache-2.0 */
/* core/interop/params_read.c: the reader of parameter files, for untrusted input.
 *
 * Every field is read only after checking that its bytes are there; every count and length is
 * compared with the bytes that remain before anything is allocated for it (a dictionary's count
 * against the smallest size an entry can take, a name's length and a tensor's data bytes
 * against what is left); sizes are computed with overflow checks. A failure names the input,
 * the entry and the byte offset. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/alloc.h"
#include "common/common.h"
#include "interop/interop_impl.h"
#include "interop/params_format.h"
#include "tensor/tensor_impl.h"

/* ---- Sources --------------------------------------------------------------------------------- */

void ct__params_src_memory(ct__params_src *s, const void *buf, size_t len) {
  s->buf = buf != NULL ? buf : (const void *)"";
  s->file = NULL;
  s->size = len;
  s->off = 0;
  snprintf(s->label, sizeof s->label, "params buffer (%zu bytes)", len);
}

ct_status ct__params_src_file(ct__params_src *s, const char *path) {
  char err[128];
  struct stat st;
  s->buf = NULL;
  s->file = NULL;
  s->size = 0;
  s->off = 0;
  snprintf(s->label, sizeof s->label, "params file '%.280s'", path);
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    return ct__error(CT_ERR_IO, "%s: cannot open it: %s", s->label,
                     ct__errno_str(errno, err, sizeof err));
  }
  if (fstat(fileno(f), &st) != 0) {
    int e = errno;
    fclose(f);
    return ct__error(CT_ERR_IO, "%s: cannot stat it: %s", s->label,
                     ct__errno_str(e, err, sizeof err));
  }
  if (!S_ISREG(st.st_mode)) {
    fclose(f);
    return ct__error(CT_ERR_IO, "%s is not a regular file%s: give the path of a .params file",
                     s->label, S_ISDIR(st.st_mode) ? " but a directory" : "");
  }
  s->file = f;
  s->size = (uint64_t)st.st_size;
  return CT_OK;
}

void ct__params_src_close(ct__params_src *s) {
  if (s->file != NULL) fclose(s->file);
  s->file = NULL;
}

/* ---- The parser ------------------------------------------------------------------------------ */

typedef struct parser {
  ct__params_src *src;
  int64_t entry;    /* the tensor being read, -1 outside the records */
  const char *name; /* its name; NULL for a single tensor */
} parser;

static uint64_t remaining(const parser *p) { return p->src->size - p->src->off; }

const char *ct__params_name_shown(const char *name, char *buf, size_t cap) {
  size_t n = strlen(name), keep = n > 60 ? 60 : n;
  if (keep + 4 > cap) keep = cap > 4 ? cap - 4 : 0;
  for (size_t i = 0; i < keep; i++) {
    unsigned char c = (unsigned char)name[i];
    buf[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
  }
  snprintf(buf + keep, cap - keep, "%s", n > keep ? "..." : "");
  return buf;
}

/* Records s with "<input>: tensor <i> ('<name>'): <message>". */
CT__PRINTF(3, 4) static ct_status fail(const parser *p, ct_status s, const char *fmt, ...) {
  char msg[384], who[128];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  who[0] = '\0';
  if (p->entry >= 0 && p->name != NULL) {
    char shown[72];
    snprintf(who, sizeof who, "tensor %" PRId64 " ('%s'): ", p->entry,
             ct__params_name_shown(p->name, shown, sizeof shown));
  } else if (p->entry >= 0) {
    snprintf(who, sizeof who, "the tensor: ");
  }
  return ct__error(s, "%s: %s%s", p->src->label, who, msg);
}

/* Reads n bytes whose presence the caller has checked. */
static ct_status take(parser *p, void *dst, size_t n) {
  ct__params_src *s = p->src;
  if (n == 0) return CT_OK;
  if (s->file != NULL) {
    if (fread(dst, 1, n, s->file) != n) {
      char err[128];
      int e = ferror(s->file) ? errno : 0;
      return fail(p, CT_ERR_IO, "reading %zu bytes at offset %" PRIu64 " failed: %s", n, s->off,
                  e ? ct__errno_str(e, err, sizeof err)
                    : "the file ended early (did it change while being read?)");
    }
  } else {
    memcpy(dst, s->buf + s->off, n);
  }
  s->off += n;
  return CT_OK;
}

/* Checks that n bytes remain for `what`. */
static ct_status need(parser *p, uint64_t n, const char *what) {
  if (n <= remaining(p)) return CT_OK;
  return fail(p, CT_ERR_FORMAT,
              "%s needs %" PRIu64 " bytes at offset %" PRIu64 ", %" PRIu64
              " remain: the input is cut short",
              what, n, p->src->off, remaining(p));
}

static uint64_t le64(const unsigned char *b) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | b[i];
  return v;
}

static uint32_t le32(const unsigned char *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static ct_status read_u64(parser *p, const char *what, uint64_t *v) {
  unsigned char b[8];
  ct_status s = need(p, 8, what);
  if (s == CT_OK) s = take(p, b, 8);
  if (s == CT_OK) *v = le64(b);
  return s;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
/* Files are little-endian: swap each element on a big-endian host. */
static void swap_elements(void *data, size_t nbytes, size_t size) {
  unsigned char *b = data;
  for (size_t i = 0; i + size <= nbytes; i += size) {
    for (size_t j = 0; j < size / 2; j++) {
      unsigned char c = b[i + j];
      b[i + j] = b[i + size - 1 - j];
      b[i + size - 1 - j] = c;
    }
  }
}
#endif

/* Where in its 64-byte-aligned block a tensor's data read from a file starts: at the data's own
 * offset within a 64-byte line of the file (when that is a multiple of the element size), else
 * at the block's start. The system call's copy from the page cache runs at full speed only when
 * source and destination sit alike within a cache line: 64 tensors of 4 MiB at unaligned file
 * offsets load in 1.35x the time of one read() of the file into aligned memory, 1.0x placed so
 * (docs/design/interop.md). A buffer is copied by memcpy, which does not care: aligned. */
static size_t data_shift(const parser *p, ct_dtype dtype) {
  size_t shift = (size_t)(p->src->off % 64);
  return p->src->file != NULL && shift % ct_dtype_size(dtype) == 0 ? shift : 0;
}

/* Reads a tensor record whose magic (at offset start) has been read and checked; *data_at is
 * the offset of its data. */
static ct_status read_record_body(parser *p, uint64_t start, ct_tensor **out, uint64_t *data_at) {
  unsigned char h[24];
  char d[CT__DDIM_STR_CAP];
  ct_status s = need(p, 24, "the tensor header");
  if (s == CT_OK) s = take(p, h, sizeof h);
  if (s != CT_OK) return s;
  /* h: reserved u64, device_type i32, device_id i32, ndim i32, code u8, bits u8, lanes u16 */
  int32_t device_type = (int32_t)le32(h + 8);
  int32_t ndim = (int32_t)le32(h + 16);
  uint8_t code = h[20], bits = h[21];
  unsigned lanes = (unsigned)h[22] | (unsigned)h[23] << 8;
  if (device_type != 1) {
    return fail(p, CT_ERR_FORMAT,
                "device type %" PRId32 " at offset %" PRIu64 ", expected 1 (kDLCPU): parameter "
                "files hold host tensors",
                device_type, start + 16);
  }
  if (ndim < 0 || ndim > CT_MAX_RANK) {
    return fail(p, CT_ERR_FORMAT, "rank %" PRId32 " at offset %" PRIu64 " is %s", ndim,
                start + 24,
                ndim < 0 ? "negative" : "above corten's CT_MAX_RANK (9): reshape it to 9 dims");
  }
  ct_dtype dtype = ct__dtype_from_dl(code, bits);
  if (lanes != 1 || dtype == CT_DTYPE_UNDEFINED) {
    return fail(p, CT_ERR_FORMAT,
                "dtype code %u (%s), %u bits, %u lanes at offset %" PRIu64 " has no corten "
                "dtype (one lane of int8/16/32/64, uint8/16/32/64, bool, float16/32/64 or "
                "bfloat16)",
                (unsigned)code, ct__dl_code_name(code), (unsigned)bits, lanes, start + 28);
  }
  uint64_t shape_at = p->src->off;
  s = need(p, (uint64_t)ndim * 8, "the shape");
  if (s != CT_OK) return s;
  ct_ddim dims;
  memset(&dims, 0, sizeof dims);
  dims.rank = ndim;
  for (int i = 0; i < ndim; i++) {
    unsigned char b[8];
    s = take(p, b, 8);
    if (s != CT_OK) return s;
    dims.d[i] = (int64_t)le64(b);
    if (dims.d[i] < 0) {
      return fail(p, CT_ERR_FORMAT, "extent %" PRId64 " of dim %d at offset %" PRIu64
                  " is negative", dims.d[i], i, shape_at + 8 * (uint64_t)i);
    }
  }
  int64_t numel = ct_ddim_numel(dims);
  if (numel < 0 || numel > INT64_MAX / 8) {
    return fail(p, CT_ERR_FORMAT, "dims %s at offset %" PRIu64 " hold more elements than "
                "memory can address", ct_ddim_str(dims, d, sizeof d), shape_at);
  }
  uint64_t expect = (uint64_t)numel * ct_dtype_size(dtype);
  uint64_t nbytes_at = p->src->off, nbytes;
  s = read_u64(p, "the data byte count", &nbytes);
  if (s != CT_OK) return s;
  if (nbytes != expect) {
    return fail(p, CT_ERR_FORMAT,
                "claims %" PRIu64 " data bytes at offset %" PRIu64 ", but %s %s takes %" PRIu64,
                nbytes, nbytes_at, ct_ddim_str(dims, d, sizeof d), ct_dtype_name(dtype), expect);
  }
  if (nbytes > remaining(p)) {
    return fail(p, CT_ERR_FORMAT,
                "claims %" PRIu64 " data bytes, %" PRIu64 " remain at offset %" PRIu64
                ": the input is cut short",
                nbytes, remaining(p), p->src->off);
  }
  /* Only now, with the bytes known to be there, is memory taken for them. */
  ct_tensor *t = ct_tensor_new();
  void *data = NULL;
  size_t shift = data_shift(p, dtype);
  if (t != NULL && shift > 0) {
    ct__block *b = ct__block_alloc(ct_cpu(), (size_t)nbytes + shift);
    if (b != NULL) {
      ct__tensor_adopt(t, b, dims, numel, dtype);
      t->offset = shift;
      data = ct__tensor_ptr(t);
    }
  } else if (t != NULL && ct_tensor_resize(t, dims) == CT_OK) {
    data = ct_tensor_mutable_data(t, dtype, ct_cpu());
  }
  if (data == NULL) {
    ct_tensor_free(t);
    return fail(p, CT_ERR_OUT_OF_MEMORY, "no host memory for its %" PRIu64 " data bytes (%s %s)",
                nbytes, ct_ddim_str(dims, d, sizeof d), ct_dtype_name(dtype));
  }
  *data_at = p->src->off;
  s = take(p, data, (size_t)nbytes);
  if (s != CT_OK) {
    ct_tensor_free(t);
    return s;
  }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  swap_elements(data, (size_t)nbytes, ct_dtype_size(dtype));
#endif
  *out = t;
  return CT_OK;
}

static ct_status read_record(parser *p, ct_tensor **out, ct__params_pos *pos) {
  uint64_t start = p->src->off, magic;
  pos->record = start;
  ct_status s = read_u64(p, "the tensor magic", &magic);
  if (s != CT_OK) return s;
  if (magic != CT__PARAMS_TENSOR_MAGIC) {
    return fail(p, CT_ERR_FORMAT,
                "tensor magic 0x%016" PRIx64 " at offset %" PRIu64
                ", expected 0xDD5E40F096B4A13F: the record is corrupt",
                magic, start);
  }
  return read_record_body(p, start, out, &pos->data);
}

/* Reads the dictionary's names (after its magic and reserved field) into *names_out. */
static ct_status read_names(parser *p, uint64_t *count_out, char ***names_out) {
  char what[64];
  uint64_t count_at = p->src->off, count;
  ct_status s = read_u64(p, "the tensor count", &count);
  if (s != CT_OK) return s;
  uint64_t rem = remaining(p);
  uint64_t most = rem < 8 ? 0 : (rem - 8) / CT__PARAMS_MIN_ENTRY;
  if (count > most) {
    return fail(p, CT_ERR_FORMAT,
                "claims %" PRIu64 " tensors at offset %" PRIu64 ", but the %" PRIu64
                " bytes that follow hold at most %" PRIu64 " (an entry takes at least %d "
                "bytes): the input is cut short or the count is corrupt",
                count, count_at, rem, most, CT__PARAMS_MIN_ENTRY);
  }
  char **names = ct__calloc(count ? (size_t)count : 1, sizeof *names);
  if (names == NULL) {
    return fail(p, CT_ERR_OUT_OF_MEMORY, "no host memory for %" PRIu64 " names", count);
  }
  *names_out = names;
  *count_out = count;
  for (uint64_t i = 0; i < count; i++) {
    uint64_t at = p->src->off, len;
    snprintf(what, sizeof what, "the length of name %" PRIu64, i);
    s = read_u64(p, what, &len);
    if (s != CT_OK) return s;
    if (len == 0) {
      return fail(p, CT_ERR_FORMAT, "name %" PRIu64 " at offset %" PRIu64 " is empty", i, at);
    }
    if (len > remaining(p)) {
      return fail(p, CT_ERR_FORMAT,
                  "name %" PRIu64 " at offset %" PRIu64 " claims %" PRIu64 " bytes, %" PRIu64
                  " remain: the input is cut short",
                  i, at, len, remaining(p));
    }
    names[i] = ct__malloc((size_t)len + 1);
    if (names[i] == NULL) {
      return fail(p, CT_ERR_OUT_OF_MEMORY, "no host memory for name %" PRIu64 " (%" PRIu64
                  " bytes)", i, len);
    }
    s = take(p, names[i], (size_t)len);
    if (s != CT_OK) return s;
    names[i][len] = '\0';
    const char *nul = memchr(names[i], '\0', (size_t)len);
    if (nul != NULL) {
      return fail(p, CT_ERR_FORMAT, "name %" PRIu64 " at offset %" PRIu64
                  " holds a NUL byte at offset %" PRIu64 ": a variable name cannot",
                  i, at, at + 8 + (uint64_t)(nul - names[i]));
    }
  }
  uint64_t again_at = p->src->off, again;
  s = read_u64(p, "the second tensor count", &again);
  if (s != CT_OK) return s;
  if (again != count) {
    return fail(p, CT_ERR_FORMAT,
                "the tensor count is %" PRIu64 " at offset %" PRIu64 " but %" PRIu64
                " at offset %" PRIu64 ": the two must agree",
                count, count_at, again, again_at);
  }
  return CT_OK;
}

static int cmp_name(const void *a, const void *b) {
  return strcmp(**(char *const *const *)a, **(char *const *const *)b);
}

/* Refuses a dictionary that names one tensor twice. */
static ct_status check_unique(parser *p, char **names, uint64_t count) {
  if (count < 2) return CT_OK;
  char ***order = ct__malloc((size_t)count * sizeof *order);
  if (order == NULL) {
    return fail(p, CT_ERR_OUT_OF_MEMORY, "no host memory to sort %" PRIu64 " names", count);
  }
  for (uint64_t i = 0; i < count; i++) order[i] = &names[i];
  qsort(order, (size_t)count, sizeof *order, cmp_name);
  ct_status s = CT_OK;
  for (uint64_t i = 1; i < count && s == CT_OK; i++) {
    if (strcmp(*order[i - 1], *order[i]) == 0) {
      uint64_t a = (uint64_t)(order[i - 1] - names), b = (uint64_t)(order[i] - names);
      p->entry = (int64_t)(a > b ? a : b);
      p->name = names[p->entry];
      s = fail(p, CT_ERR_FORMAT, "repeats the name of tensor %" PRIu64 ": names must be unique",
               a < b ? a : b);
      p->entry = -1;
      p->name = NULL;
    }
  }
  free(order);
  return s;
}

static ct_status read_dict(parser *p, const ct__params_sink *sink) {
  char **names = NULL;
  uint64_t count = 0, reserved;
  ct_status s = read_u64(p, "the reserved field", &reserved);
  if (s == CT_OK) s = read_names(p, &count, &names);
  if (s == CT_OK) s = check_unique(p, names, count);
  if (s == CT_OK && sink->begin) s = sink->begin(sink->ctx, CT__PARAMS_DICT, count);
  for (uint64_t i = 0; i < count && s == CT_OK; i++) {
    ct_tensor *t = NULL;
    ct__params_pos pos = {.index = i};
    p->entry = (int64_t)i;
    p->name = names[i];
    s = read_record(p, &t, &pos);
    if (s == CT_OK) s = sink->entry(sink->ctx, &pos, names[i], t);
  }
  p->entry = -1;
  p->name = NULL;
  if (names != NULL) {
    for (uint64_t i = 0; i < count; i++) free(names[i]);
    free(names);
  }
  return s;
}

ct_status ct__params_read(ct__params_src *src, ct__params_kind want, const ct__params_sink *sink) {
  parser p = {.src = src, .entry = -1, .name = NULL};
  uint64_t magic;
  if (src->size < 8) {
    return fail(&p, CT_ERR_FORMAT,
                "is %" PRIu64 " bytes long, too short for a parameter file (it starts with an "
                "8-byte magic)",
                src->size);
  }
  ct_status s = read_u64(&p, "the magic", &magic);
  if (s != CT_OK) return s;
  if (magic == CT__MXNET_LIST_MAGIC) {
    return fail(&p, CT_ERR_FORMAT,
                "starts with magic 0x112 at offset 0: it is an MXNet .params file (an NDArray "
                "list), not a TVM/CVM parameter dictionary; convert the model with TVM's MXNet "
                "frontend and save its params with relay.save_param_dict");
  }
  if (magic != CT__PARAMS_DICT_MAGIC && magic != CT__PARAMS_TENSOR_MAGIC) {
    return fail(&p, CT_ERR_FORMAT,
                "starts with 0x%016" PRIx64 " at offset 0, which is not a TVM/CVM parameter "
                "file (a dictionary starts with 0xF7E58D4F05049CB7, a single tensor with "
                "0xDD5E40F096B4A13F)",
                magic);
  }
  ct__params_kind kind = magic == CT__PARAMS_DICT_MAGIC ? CT__PARAMS_DICT : CT__PARAMS_TENSOR;
  if (want != CT__PARAMS_ANY && want != kind) {
    return fail(&p, CT_ERR_FORMAT,
                kind == CT__PARAMS_TENSOR
                    ? "holds a single tensor (NDArray::Save, magic 0xDD5E40F096B4A13F at offset "
                      "0), not a dictionary: load it with ct_tensor_load"
                    : "holds a parameter dictionary (magic 0xF7E58D4F05049CB7 at offset 0), not "
                      "a single tensor: load it with ct_params_load");
  }
  if (kind == CT__PARAMS_DICT) {
    s = read_dict(&p, sink);
  } else {
    ct_tensor *t = NULL;
    ct__params_pos pos = {.index = 0, .record = 0};
    if (sink->begin) s = sink->begin(sink->ctx, CT__PARAMS_TENSOR, 1);
    p.entry = 0;
    if (s == CT_OK) s = read_record_body(&p, 0, &t, &pos.data);
    if (s == CT_OK) s = sink->entry(sink->ctx, &pos, NULL, t);
    p.entry = -1;
  }
  if (s == CT_OK && remaining(&p) > 0) {
    s = fail(&p, CT_ERR_FORMAT,
             "%" PRIu64 " bytes follow the end of the %s at offset %" PRIu64
             ": the input is corrupt or holds something else after it",
             remaining(&p), kind == CT__PARAMS_DICT ? "last tensor" : "tensor", src->off);
  }
  return s;
}
