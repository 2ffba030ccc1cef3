/* tools/corten.c: the `corten` command-line tool.
 *
 *   corten inspect FILE   lists the tensors of a TVM / CVM-runtime parameter file
 *   corten --help         usage
 *   corten --version      the library's version
 *
 * `inspect` prints one tab-separated row per tensor in file order, under a header row, in the
 * format of the manifests that describe the project's test files: name, dtype, shape
 * (comma-separated, empty for a scalar), data bytes, CRC-32 of the raw little-endian data (zlib's
 * polynomial, 8 hex digits) and the sum of the elements (%.6g for floating types, accumulated in
 * double in file order; an integer for integer and bool types). A last line, starting with '#',
 * sums up the file. A broken file gets a message on stderr saying what is wrong and at which
 * byte offset and entry, and exit status 1; a usage error exits with 2.
 *
 * It streams the file through ct_params_inspect (corten/params.h), the library's checked reader,
 * one tensor in memory at a time, and uses nothing but the public API. */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

static const char usage[] =
    "usage: corten <command> [arguments]\n"
    "\n"
    "commands:\n"
    "  inspect FILE   list the tensors of a TVM / CVM-runtime parameter file (a dictionary, or\n"
    "                 one tensor written by NDArray::Save): one row per tensor in file order with\n"
    "                 name, dtype, shape, data bytes, CRC-32 of the data and the sum of the\n"
    "                 elements, then a summary line starting with '#'\n"
    "  --help, -h     show this text\n"
    "  --version      show the version of corten\n"
    "\n"
    "exit status: 0 success, 1 the file is unreadable or malformed (the message says where),\n"
    "2 a usage error\n";

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
      default: break;
    }
    k = (int64_t)((uint64_t)k + (uint64_t)v); /* wraps like a fixed-width integer sum */
  }
  if (dtype == CT_FLOAT32 || dtype == CT_FLOAT64 || dtype == CT_FLOAT16 || dtype == CT_BFLOAT16) {
    snprintf(buf, cap, "%.6g", d);
  } else {
    snprintf(buf, cap, "%" PRId64, k);
  }
}

/* ---- inspect --------------------------------------------------------------------------------- */

typedef struct inspect_state {
  ct_params_info info;
  uint64_t rows, data_bytes;
  char *last_name;
  bool sorted;
} inspect_state;

static ct_status on_begin(void *ctx, const ct_params_info *info) {
  inspect_state *st = ctx;
  st->info = *info;
  printf("name\tdtype\tshape\tnbytes\tcrc32\tsum\n");
  return CT_OK;
}

static ct_status on_entry(void *ctx, const ct_params_entry *e) {
  inspect_state *st = ctx;
  char sum[64];
  const unsigned char *data = ct_tensor_data(e->tensor, e->dtype);
  size_t nbytes = (size_t)e->nbytes;
  if (data == NULL) return ct_last_status();
  printf("%s\t%s\t", e->name ? e->name : "-", ct_dtype_name(e->dtype));
  for (int i = 0; i < e->dims.rank; i++) printf("%s%" PRId64, i ? "," : "", e->dims.d[i]);
  sum_text(data, ct_tensor_numel(e->tensor), e->dtype, sum, sizeof sum);
  printf("\t%zu\t%08" PRIx32 "\t%s\n", nbytes, crc32_of(data, nbytes), sum);
  if (e->name != NULL) {
    if (st->last_name != NULL && strcmp(st->last_name, e->name) > 0) st->sorted = false;
    free(st->last_name);
    st->last_name = strdup(e->name);
  }
  st->rows++;
  st->data_bytes += nbytes;
  return CT_OK;
}

static int inspect(const char *path) {
  inspect_state st = {.sorted = true};
  ct_params_visitor visitor = {.begin = on_begin, .entry = on_entry, .ctx = &st};
  ct_status s = ct_params_inspect(path, &visitor);
  free(st.last_name);
  fflush(stdout);
  if (s != CT_OK) {
    fprintf(stderr, "corten inspect: %s (%s)\n", ct_last_error(), ct_status_str(s));
    return 1;
  }
  if (st.info.kind == CT_PARAMS_TENSOR) {
    printf("# single tensor (NDArray::Save), %" PRIu64 " data bytes, %" PRIu64
           " bytes in all\n", st.data_bytes, st.info.nbytes);
  } else {
    printf("# parameter dictionary: %" PRIu64 " tensors, %" PRIu64 " data bytes, %" PRIu64
           " bytes in all, entries %s\n",
           st.rows, st.data_bytes, st.info.nbytes,
           st.sorted ? "sorted by name" : "not sorted by name");
  }
  return 0;
}

int main(int argc, char **argv) {
  crc_init();
  if (argc < 2) {
    fputs(usage, stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
    fputs(usage, stdout);
    return 0;
  }
  if (strcmp(cmd, "--version") == 0) {
    printf("corten %d.%d.%d\n", CORTEN_VERSION_MAJOR, CORTEN_VERSION_MINOR, CORTEN_VERSION_PATCH);
    return 0;
  }
  if (strcmp(cmd, "inspect") == 0) {
    if (argc != 3) {
      fprintf(stderr, "corten inspect: give exactly one file, e.g. corten inspect model.params\n");
      return 2;
    }
    return inspect(argv[2]);
  }
  fprintf(stderr, "corten: unknown command '%s'\n\n%s", cmd, usage);
  return 2;
}
