/* SPDX-License-Identifier: Apache-2.0 */
/* tools/inspect.c: `corten inspect FILE`, the rows of a TVM / CVM-runtime parameter file.
 *
 * One tab-separated row per tensor in file order, under a header row, in the format of the
 * manifests that describe the project's test files: name, dtype, shape (comma-separated, empty
 * for a scalar), data bytes, CRC-32 of the raw little-endian data (zlib's polynomial, 8 hex
 * digits) and the sum of the elements (%.6g for floating types, accumulated in double in file
 * order; an integer for integer and bool types). A last line, starting with '#', sums up the
 * file: tensors, parameters (elements), data bytes, bytes in all.
 *
 * The rows are gathered in memory and printed only once the whole file has been read and found
 * sound: a broken file prints nothing on stdout, and a message on stderr saying what is wrong
 * and at which byte offset and entry (exit status 1). The file streams through
 * ct_params_inspect (corten/params.h), one tensor in memory at a time. */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "tool.h"

/* ---- Checksums ------------------------------------------------------------------------------- */

static uint32_t crc_table[256];

static void crc_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    crc_table[i] = c;
  }
}

static uint32_t crc32_of(const unsigned char *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) c = crc_table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

static double half_to_double(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1F, frac = h & 0x3FF;
  double v;
  if (exp == 0) {
    v = frac / 1024.0 / 16384.0; /* subnormal: frac x 2^-24 */
  } else if (exp == 31) {
    v = frac ? NAN : INFINITY;
  } else {
    v = (1.0 + frac / 1024.0) * ldexp(1.0, exp - 15);
  }
  return sign ? -v : v;
}

static double bf16_to_double(uint16_t b) {
  uint32_t bits = (uint32_t)b << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* Writes the sum of the n elements at p, as the manifests print it, into buf. */
static void sum_text(const void *p, int64_t n, ct_dtype dtype, char *buf, size_t cap) {
  double d = 0.0;
  int64_t k = 0;
  bool is_float = true;
  for (int64_t i = 0; i < n; i++) {
    switch (dtype) {
      case CT_FLOAT32: d += ((const float *)p)[i]; break;
      case CT_FLOAT64: d += ((const double *)p)[i]; break;
      case CT_FLOAT16: d += half_to_double(((const uint16_t *)p)[i]); break;
      case CT_BFLOAT16: d += bf16_to_double(((const uint16_t *)p)[i]); break;
      default: is_float = false; break;
    }
    if (is_float) continue;
    int64_t v = 0;
    switch (dtype) {
      case CT_BOOL:
      case CT_UINT8: v = ((const uint8_t *)p)[i]; break;
      case CT_INT8: v = ((const int8_t *)p)[i]; break;
      case CT_INT16: v = ((const int16_t *)p)[i]; break;
      case CT_INT32: v = ((const int32_t *)p)[i]; break;
      case CT_INT64: v = ((const int64_t *)p)[i]; break;
      case CT_UINT16: v = ((const uint16_t *)p)[i]; break;
      case CT_UINT32: v = ((const uint32_t *)p)[i]; break;
      case CT_UINT64: v = (int64_t)((const uint64_t *)p)[i]; break;
      default: break;
    }
    k = (int64_t)((uint64_t)k + (uint64_t)v); /* wraps like a fixed-width integer sum */
  }
  if (dtype == CT_FLOAT32 || dtype == CT_FLOAT64 || dtype == CT_FLOAT16 || dtype == CT_BFLOAT16) {
    snprintf(buf, cap, "%.6g", d);
  } else if (dtype == CT_UINT64) {
    snprintf(buf, cap, "%" PRIu64, (uint64_t)k);
  } else {
    snprintf(buf, cap, "%" PRId64, k);
  }
}

/* ---- inspect --------------------------------------------------------------------------------- */

typedef struct inspect_state {
  ct_params_info info;
  FILE *out; /* the rows, in memory until the file is known to be sound */
  uint64_t rows, data_bytes, params;
  char *last_name;
  bool sorted;
} inspect_state;

static ct_status on_begin(void *ctx, const ct_params_info *info) {
  inspect_state *st = ctx;
  st->info = *info;
  fprintf(st->out, "name\tdtype\tshape\tnbytes\tcrc32\tsum\n");
  return CT_OK;
}

static ct_status on_entry(void *ctx, const ct_params_entry *e) {
  inspect_state *st = ctx;
  char sum[64];
  const unsigned char *data = ct_tensor_data(e->tensor, e->dtype);
  size_t nbytes = (size_t)e->nbytes;
  if (data == NULL) return ct_last_status();
  fprintf(st->out, "%s\t%s\t", e->name ? e->name : "-", ct_dtype_name(e->dtype));
  for (int i = 0; i < e->dims.rank; i++) fprintf(st->out, "%s%" PRId64, i ? "," : "", e->dims.d[i]);
  sum_text(data, ct_tensor_numel(e->tensor), e->dtype, sum, sizeof sum);
  fprintf(st->out, "\t%zu\t%08" PRIx32 "\t%s\n", nbytes, crc32_of(data, nbytes), sum);
  if (e->name != NULL) {
    if (st->last_name != NULL && strcmp(st->last_name, e->name) > 0) st->sorted = false;
    free(st->last_name);
    st->last_name = strdup(e->name);
  }
  st->rows++;
  st->data_bytes += nbytes;
  st->params += (uint64_t)ct_tensor_numel(e->tensor);
  return CT_OK;
}

int corten_inspect(const char *path) {
  crc_init();
  char *text = NULL;
  size_t len = 0;
  inspect_state st = {.sorted = true, .out = open_memstream(&text, &len)};
  if (st.out == NULL) {
    fprintf(stderr, "corten inspect: out of memory for the listing of %s\n", path);
    return 1;
  }
  ct_params_visitor visitor = {.begin = on_begin, .entry = on_entry, .ctx = &st};
  ct_status s = ct_params_inspect(path, &visitor);
  free(st.last_name);
  fclose(st.out);
  if (s != CT_OK) {
    free(text);
    fprintf(stderr, "corten inspect: %s (%s)\n", ct_last_error(), ct_status_str(s));
    return 1;
  }
  fwrite(text, 1, len, stdout);
  free(text);
  if (st.info.kind == CT_PARAMS_TENSOR) {
    printf("# single tensor (NDArray::Save), %" PRIu64 " parameters, %" PRIu64
           " data bytes, %" PRIu64 " bytes in all\n",
           st.params, st.data_bytes, st.info.nbytes);
  } else {
    printf("# parameter dictionary: %" PRIu64 " tensors, %" PRIu64 " parameters, %" PRIu64
           " data bytes, %" PRIu64 " bytes in all, entries %s\n",
           st.rows, st.params, st.data_bytes, st.info.nbytes,
           st.sorted ? "sorted by name" : "not sorted by name");
  }
  return 0;
}
