/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of corten/params.h against real parameter files written by TVM (2018 to 2022), found in
 * the directory named by CORTEN_PARAMS_DIR (ctest passes the shared data folder). Every file
 * there with a FILE.manifest.tsv must load and match its manifest entry for entry (name, dtype,
 * shape, byte count, CRC-32, sum); saving what was loaded must give back the original bytes
 * (names in file order) or the original with its entries sorted by name (names == NULL); and
 * every prefix cut at a field boundary must be refused. Reports itself skipped (77) when the
 * directory or its manifests are missing. */
#define _GNU_SOURCE
#include <dirent.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <corten/corten.h>

#include "file_util.h"

#define MAX_FILES 32
#define MAX_ROWS 1024

typedef struct row {
  char name[128], dtype[16], shape[128], crc[16], sum[32];
  size_t nbytes;
} row;

typedef struct real_file {
  char path[512];
  row *rows;
  size_t n;
} real_file;

static real_file files[MAX_FILES];
static size_t nfiles;

/* ---- Reading the data folder ----------------------------------------------------------------- */

/* Reads a manifest: a header row, then name, dtype, shape, nbytes, crc32, sum per row. */
static int read_manifest(const char *path, real_file *rf) {
  FILE *f = fopen(path, "r");
  char line[1024];
  if (f == NULL) return 0;
  rf->rows = calloc(MAX_ROWS, sizeof *rf->rows);
  rf->n = 0;
  if (fgets(line, sizeof line, f) == NULL) {
    fclose(f);
    return 0;
  }
  while (fgets(line, sizeof line, f) != NULL && rf->n < MAX_ROWS) {
    row *r = &rf->rows[rf->n];
    char *fields[6], *p = line;
    line[strcspn(line, "\r\n")] = '\0';
    int k = 0;
    /* strsep keeps empty fields (a scalar's shape is empty) */
    while (k < 6 && (fields[k] = strsep(&p, "\t")) != NULL) k++;
    if (k != 6) continue;
    snprintf(r->name, sizeof r->name, "%s", fields[0]);
    snprintf(r->dtype, sizeof r->dtype, "%s", fields[1]);
    snprintf(r->shape, sizeof r->shape, "%s", fields[2]);
    r->nbytes = (size_t)strtoull(fields[3], NULL, 10);
    snprintf(r->crc, sizeof r->crc, "%s", fields[4]);
    snprintf(r->sum, sizeof r->sum, "%s", fields[5]);
    rf->n++;
  }
  fclose(f);
  return rf->n > 0;
}

static int cmp_file(const void *a, const void *b) {
  return strcmp(((const real_file *)a)->path, ((const real_file *)b)->path);
}

/* Finds every FILE with a FILE.manifest.tsv in dir. */
static void discover(const char *dir) {
  static const char suffix[] = ".manifest.tsv";
  DIR *d = opendir(dir);
  struct dirent *e;
  if (d == NULL) return;
  while ((e = readdir(d)) != NULL && nfiles < MAX_FILES) {
    size_t len = strlen(e->d_name), sl = sizeof suffix - 1;
    if (len <= sl || strcmp(e->d_name + len - sl, suffix) != 0) continue;
    char manifest[600];
    real_file *rf = &files[nfiles];
    snprintf(manifest, sizeof manifest, "%s/%s", dir, e->d_name);
    snprintf(rf->path, sizeof rf->path, "%s/%.*s", dir, (int)(len - sl), e->d_name);
    if (access(rf->path, R_OK) == 0 && read_manifest(manifest, rf)) nfiles++;
  }
  closedir(d);
  qsort(files, nfiles, sizeof files[0], cmp_file);
}

/* ---- Checks ---------------------------------------------------------------------------------- */

static uint32_t crc32_of(const unsigned char *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

/* The sum of the elements as the manifests print it: %.6g of a double accumulated in order for
 * floating types, an integer otherwise. float16/bfloat16 do not occur in these files. */
static void sum_text(const ct_tensor *t, char *buf, size_t cap) {
  ct_dtype dt = ct_tensor_dtype(t);
  const void *p = ct_tensor_data(t, dt);
  int64_t n = ct_tensor_numel(t);
  double d = 0;
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++) {
    switch (dt) {
      case CT_FLOAT32: d += ((const float *)p)[i]; break;
      case CT_FLOAT64: d += ((const double *)p)[i]; break;
      case CT_INT8: k += ((const int8_t *)p)[i]; break;
      case CT_UINT8:
      case CT_BOOL: k += ((const uint8_t *)p)[i]; break;
      case CT_INT16: k += ((const int16_t *)p)[i]; break;
      case CT_INT32: k += ((const int32_t *)p)[i]; break;
      case CT_INT64: k = (int64_t)((uint64_t)k + (uint64_t)((const int64_t *)p)[i]); break;
      default: ck_abort_msg("unexpected dtype %s", ct_dtype_name(dt));
    }
  }
  if (dt == CT_FLOAT32 || dt == CT_FLOAT64) {
    snprintf(buf, cap, "%.6g", d);
  } else {
    snprintf(buf, cap, "%" PRId64, k);
  }
}

static void shape_text(ct_ddim dims, char *buf, size_t cap) {
  size_t pos = 0;
  buf[0] = '\0';
  for (int i = 0; i < dims.rank && pos < cap; i++) {
    pos += (size_t)snprintf(buf + pos, cap - pos, "%s%" PRId64, i ? "," : "", dims.d[i]);
  }
}

static void assert_matches_manifest(ct_scope *s, const real_file *rf) {
  char text[128];
  ck_assert_uint_eq(ct_scope_var_count(s), rf->n);
  for (size_t i = 0; i < rf->n; i++) {
    const row *r = &rf->rows[i];
    ct_var *v = ct_scope_find_local_var(s, r->name);
    ck_assert_msg(v != NULL, "%s: no variable '%s'", rf->path, r->name);
    const ct_tensor *t = ct_var_get_tensor(v);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(ct_dtype_name(ct_tensor_dtype(t)), r->dtype);
    shape_text(ct_tensor_dims(t), text, sizeof text);
    ck_assert_str_eq(text, r->shape);
    size_t nbytes = (size_t)ct_tensor_numel(t) * ct_dtype_size(ct_tensor_dtype(t));
    ck_assert_uint_eq(nbytes, r->nbytes);
    snprintf(text, sizeof text, "%08" PRIx32,
             crc32_of(ct_tensor_data(t, ct_tensor_dtype(t)), nbytes));
    ck_assert_msg(strcmp(text, r->crc) == 0, "%s '%s': crc %s, manifest %s", rf->path, r->name,
                  text, r->crc);
    sum_text(t, text, sizeof text);
    ck_assert_msg(strcmp(text, r->sum) == 0, "%s '%s': sum %s, manifest %s", rf->path, r->name,
                  text, r->sum);
  }
}

/* ---- An independent reading of a dictionary's layout, for byte-level comparisons ------------- */

typedef struct layout {
  size_t n;
  size_t name_at[MAX_ROWS], name_len[MAX_ROWS]; /* at: the name's length field */
  size_t rec_at[MAX_ROWS], rec_len[MAX_ROWS];
  size_t names_end; /* offset of the second count */
} layout;

static uint64_t rd64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

static void parse_layout(const unsigned char *p, size_t len, layout *l) {
  size_t at = 24;
  l->n = (size_t)rd64(p + 16);
  ck_assert_uint_le(l->n, MAX_ROWS);
  for (size_t i = 0; i < l->n; i++) {
    l->name_at[i] = at;
    l->name_len[i] = (size_t)rd64(p + at);
    at += 8 + l->name_len[i];
  }
  l->names_end = at;
  at += 8;
  for (size_t i = 0; i < l->n; i++) {
    int ndim = (int)(p[at + 24] | p[at + 25] << 8 | p[at + 26] << 16 | p[at + 27] << 24);
    size_t nb_at = at + 32 + 8 * (size_t)ndim;
    l->rec_at[i] = at;
    l->rec_len[i] = nb_at + 8 + (size_t)rd64(p + nb_at) - at;
    at += l->rec_len[i];
  }
  ck_assert_uint_eq(at, len);
}

static const unsigned char *sort_base;
static const layout *sort_layout;

static int cmp_entry(const void *a, const void *b) {
  size_t i = *(const size_t *)a, j = *(const size_t *)b;
  size_t li = sort_layout->name_len[i], lj = sort_layout->name_len[j];
  int c = memcmp(sort_base + sort_layout->name_at[i] + 8, sort_base + sort_layout->name_at[j] + 8,
                 li < lj ? li : lj);
  return c != 0 ? c : (li > lj) - (li < lj);
}

/* The original bytes with the entries put in name order: the same header, names and records. */
static unsigned char *reorder_sorted(const unsigned char *p, size_t len, const layout *l) {
  size_t *order = malloc(l->n * sizeof *order + 1);
  unsigned char *out = malloc(len), *q = out;
  for (size_t i = 0; i < l->n; i++) order[i] = i;
  sort_base = p;
  sort_layout = l;
  qsort(order, l->n, sizeof *order, cmp_entry);
  memcpy(q, p, 24), q += 24;
  for (size_t i = 0; i < l->n; i++) {
    size_t k = order[i];
    memcpy(q, p + l->name_at[k], 8 + l->name_len[k]), q += 8 + l->name_len[k];
  }
  memcpy(q, p + l->names_end, 8), q += 8;
  for (size_t i = 0; i < l->n; i++) {
    size_t k = order[i];
    memcpy(q, p + l->rec_at[k], l->rec_len[k]), q += l->rec_len[k];
  }
  ck_assert_uint_eq((size_t)(q - out), len);
  free(order);
  return out;
}

/* ---- Tests ----------------------------------------------------------------------------------- */

START_TEST(every_file_matches_its_manifest) {
  for (size_t f = 0; f < nfiles; f++) {
    ct_scope *s = ct_scope_new();
    ck_assert_msg(ct_params_load(files[f].path, s) == CT_OK, "%s", ct_last_error());
    assert_matches_manifest(s, &files[f]);
    ct_scope_free(s);
  }
}
END_TEST

START_TEST(loading_from_memory_matches_the_manifest_too) {
  for (size_t f = 0; f < nfiles; f++) {
    size_t len;
    unsigned char *p = read_all(files[f].path, &len);
    ct_scope *s = ct_scope_new();
    ck_assert_msg(ct_params_load_memory(p, len, s) == CT_OK, "%s", ct_last_error());
    assert_matches_manifest(s, &files[f]);
    ct_scope_free(s);
    free(p);
  }
}
END_TEST

START_TEST(saving_in_file_order_reproduces_the_file_byte_for_byte) {
  make_work_dir("params-files-test");
  for (size_t f = 0; f < nfiles; f++) {
    const real_file *rf = &files[f];
    const char **names = malloc(rf->n * sizeof *names);
    char out[128];
    size_t a, b;
    ct_scope *s = ct_scope_new();
    for (size_t i = 0; i < rf->n; i++) names[i] = rf->rows[i].name;
    snprintf(out, sizeof out, "%s/same.params", work_dir);
    ck_assert_int_eq(ct_params_load(rf->path, s), CT_OK);
    ck_assert_msg(ct_params_save(out, s, names, rf->n) == CT_OK, "%s", ct_last_error());
    unsigned char *orig = read_all(rf->path, &a), *saved = read_all(out, &b);
    ck_assert_uint_eq(a, b);
    ck_assert_msg(memcmp(orig, saved, a) == 0, "%s differs from its re-save", rf->path);
    free(orig);
    free(saved);
    free(names);
    ct_scope_free(s);
  }
  remove_work_dir();
}
END_TEST

START_TEST(saving_all_gives_the_original_with_entries_sorted) {
  make_work_dir("params-files-test");
  for (size_t f = 0; f < nfiles; f++) {
    static layout l;
    char out[128];
    size_t a, b;
    ct_scope *s = ct_scope_new();
    snprintf(out, sizeof out, "%s/sorted.params", work_dir);
    ck_assert_int_eq(ct_params_load(files[f].path, s), CT_OK);
    ck_assert_int_eq(ct_params_save(out, s, NULL, 0), CT_OK);
    unsigned char *orig = read_all(files[f].path, &a), *saved = read_all(out, &b);
    parse_layout(orig, a, &l);
    unsigned char *expect = reorder_sorted(orig, a, &l);
    ck_assert_uint_eq(a, b);
    ck_assert_msg(memcmp(expect, saved, a) == 0, "%s: sorted re-save differs", files[f].path);
    free(expect);
    free(orig);
    free(saved);
    ct_scope_free(s);
  }
  remove_work_dir();
}
END_TEST

START_TEST(a_real_file_cut_at_any_field_boundary_is_refused) {
  /* The smallest file; every offset in its first 512 bytes and its last 64, and the start, the
   * start + 1 and the end - 1 of every field of every record. */
  size_t best = 0, len, smallest = SIZE_MAX;
  for (size_t f = 0; f < nfiles; f++) {
    struct stat st;
    if (stat(files[f].path, &st) == 0 && (size_t)st.st_size < smallest) {
      smallest = (size_t)st.st_size;
      best = f;
    }
  }
  unsigned char *p = read_all(files[best].path, &len);
  static layout l;
  parse_layout(p, len, &l);
  size_t *cuts = malloc((1024 + 64 * l.n) * sizeof *cuts);
  size_t ncuts = 0;
  for (size_t k = 0; k < 512 && k < len; k++) cuts[ncuts++] = k;
  for (size_t k = len > 64 ? len - 64 : 0; k < len; k++) cuts[ncuts++] = k;
  for (size_t i = 0; i < l.n; i++) {
    static const size_t fields[] = {0, 8, 16, 20, 24, 28, 29, 30, 32};
    for (size_t j = 0; j < sizeof fields / sizeof fields[0]; j++) {
      cuts[ncuts++] = l.rec_at[i] + fields[j];
      cuts[ncuts++] = l.rec_at[i] + fields[j] + 1;
    }
    cuts[ncuts++] = l.rec_at[i] + l.rec_len[i] - 1;
  }
  ct_scope *s = ct_scope_new();
  for (size_t c = 0; c < ncuts; c++) {
    ct_status st = ct_params_load_memory(p, cuts[c], s);
    ck_assert_msg(st == CT_ERR_FORMAT, "%s cut at %zu: %d", files[best].path, cuts[c], st);
    ck_assert_uint_eq(ct_scope_var_count(s), 0);
  }
  ct_scope_free(s);
  free(cuts);
  free(p);
}
END_TEST

static Suite *params_files_suite(void) {
  Suite *s = suite_create("params_files");
  CT_ADD_TEST(s, every_file_matches_its_manifest);
  CT_ADD_TEST(s, loading_from_memory_matches_the_manifest_too);
  CT_ADD_TEST(s, saving_in_file_order_reproduces_the_file_byte_for_byte);
  CT_ADD_TEST(s, saving_all_gives_the_original_with_entries_sorted);
  CT_ADD_TEST(s, a_real_file_cut_at_any_field_boundary_is_refused);
  return s;
}

int main(void) {
  const char *dir = getenv("CORTEN_PARAMS_DIR");
  if (dir == NULL || dir[0] == '\0') {
    printf("SKIPPED: CORTEN_PARAMS_DIR is not set (ctest sets it to the shared data/params)\n");
    return 77;
  }
  discover(dir);
  if (nfiles == 0) {
    printf("SKIPPED: no parameter file with a .manifest.tsv in %s\n", dir);
    return 77;
  }
  printf("%zu real parameter files in %s\n", nfiles, dir);
  SRunner *sr = srunner_create(params_files_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  for (size_t f = 0; f < nfiles; f++) free(files[f].rows);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
