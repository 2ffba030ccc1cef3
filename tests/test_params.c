/* Tests of corten/params.h on inputs built here byte by byte: the exact layout written and read,
 * every class of bad input (truncated at every offset, corrupted counts and lengths, oversized
 * dims, foreign magic, trailing bytes, bad names, dtypes and devices), all-or-nothing loading,
 * and atomic saving (a failed write, a failed rename, a missing directory). Each test runs in its
 * own process; files go to a fresh directory under the working directory. */
#define _GNU_SOURCE
#include <dirent.h>
#include <ftw.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <corten/corten.h>

#include "harness.h"

/* ---- Building inputs ----------------------------------------------------------------------- */

typedef struct bytes {
  unsigned char *p;
  size_t n, cap;
} bytes;

static void b_put(bytes *b, const void *src, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
    ck_assert_ptr_nonnull(b->p);
  }
  if (n > 0) memcpy(b->p + b->n, src, n);
  b->n += n;
}

static void b_le(bytes *b, uint64_t v, int width) {
  unsigned char c[8];
  for (int i = 0; i < width; i++) c[i] = (unsigned char)(v >> (8 * i));
  b_put(b, c, (size_t)width);
}

static void b_u64(bytes *b, uint64_t v) { b_le(b, v, 8); }

static void b_name(bytes *b, const char *s, size_t len) {
  b_u64(b, len);
  b_put(b, s, len);
}

/* A tensor record: magic, reserved, device (1, 0), ndim, dtype, shape, byte count, data. */
static void b_record(bytes *b, uint8_t code, uint8_t bits, int ndim, const int64_t *shape,
                     const void *data, size_t nbytes) {
  b_u64(b, 0xDD5E40F096B4A13Full);
  b_u64(b, 0);
  b_le(b, 1, 4);
  b_le(b, 0, 4);
  b_le(b, (uint64_t)(uint32_t)ndim, 4);
  b_le(b, code, 1);
  b_le(b, bits, 1);
  b_le(b, 1, 2);
  for (int i = 0; i < ndim; i++) b_u64(b, (uint64_t)shape[i]);
  b_u64(b, nbytes);
  b_put(b, data, nbytes);
}

/* The sample entries: w float32 [2,3] 0..5, b int64 [3], flag bool [4] (TVM's uint1). */
static const float w_data[6] = {0, 1, 2, 3, 4, 5};
static const int64_t w_shape[2] = {2, 3};
static const int64_t b_data[3] = {-1, 0, (int64_t)1 << 40};
static const int64_t b_shape[1] = {3};
static const unsigned char flag_data[4] = {1, 0, 1, 1};
static const int64_t flag_shape[1] = {4};

static void b_sample_record(bytes *b, const char *name) {
  if (strcmp(name, "w") == 0) b_record(b, 2, 32, 2, w_shape, w_data, sizeof w_data);
  if (strcmp(name, "b") == 0) b_record(b, 0, 64, 1, b_shape, b_data, sizeof b_data);
  if (strcmp(name, "flag") == 0) b_record(b, 1, 1, 1, flag_shape, flag_data, sizeof flag_data);
}

/* A dictionary of the sample entries in the given order. Offsets in the order w, b, flag:
 * count 16, names 24/33/42, second count 54, record w 62 (device type 78, ndim 86, code 90,
 * bits 91, lanes 92, shape 94, byte count 110, data 118), record b 142, record flag 214, end
 * 266. */
static bytes sample_dict(const char *const *order, size_t n) {
  bytes b = {NULL, 0, 0};
  b_u64(&b, 0xF7E58D4F05049CB7ull);
  b_u64(&b, 0);
  b_u64(&b, n);
  for (size_t i = 0; i < n; i++) b_name(&b, order[i], strlen(order[i]));
  b_u64(&b, n);
  for (size_t i = 0; i < n; i++) b_sample_record(&b, order[i]);
  return b;
}

static const char *const file_order[3] = {"w", "b", "flag"};
static const char *const sorted_order[3] = {"b", "flag", "w"};

static void set_u64(bytes *b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; i++) b->p[at + (size_t)i] = (unsigned char)(v >> (8 * i));
}

static void set_u32(bytes *b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; i++) b->p[at + (size_t)i] = (unsigned char)(v >> (8 * i));
}

/* ---- Checking results ---------------------------------------------------------------------- */

static const ct_tensor *find_tensor(ct_scope *s, const char *name) {
  ct_var *v = ct_scope_find_local_var(s, name);
  ck_assert_msg(v != NULL, "no variable '%s'", name);
  const ct_tensor *t = ct_var_get_tensor(v);
  ck_assert_ptr_nonnull(t);
  return t;
}

static void assert_sample_loaded(ct_scope *s) {
  const ct_tensor *w = find_tensor(s, "w"), *b = find_tensor(s, "b"), *f = find_tensor(s, "flag");
  ck_assert_uint_eq(ct_scope_var_count(s), 3);
  ck_assert(ct_ddim_equal(ct_tensor_dims(w), CT_DIMS(2, 3)));
  ck_assert_int_eq(ct_tensor_dtype(w), CT_FLOAT32);
  ck_assert(ct_place_equal(ct_tensor_place(w), ct_cpu()));
  ck_assert(!ct_tensor_is_external(w));
  ck_assert_int_eq(memcmp(ct_tensor_data(w, CT_FLOAT32), w_data, sizeof w_data), 0);
  ck_assert(ct_ddim_equal(ct_tensor_dims(b), CT_DIMS(3)));
  ck_assert_int_eq(memcmp(ct_tensor_data(b, CT_INT64), b_data, sizeof b_data), 0);
  ck_assert(ct_ddim_equal(ct_tensor_dims(f), CT_DIMS(4)));
  ck_assert_int_eq(memcmp(ct_tensor_data(f, CT_BOOL), flag_data, sizeof flag_data), 0);
}

/* A scope holding "w" (a float32 [1] tensor with 7) and "keep" (an int64 variable, 9): what a
 * failed load must leave exactly as it is. */
static ct_scope *guarded_scope(void) {
  ct_scope *s = ct_scope_new();
  ct_tensor *w = ct_var_tensor(ct_scope_var(s, "w"));
  ck_assert_int_eq(ct_tensor_resize(w, CT_DIMS(1)), CT_OK);
  *(float *)ct_tensor_mutable_data(w, CT_FLOAT32, ct_cpu()) = 7.0f;
  *(int64_t *)ct_var_get_mutable(ct_scope_var(s, "keep"), &ct_int64_type) = 9;
  return s;
}

static void assert_guarded_unchanged(ct_scope *s) {
  ck_assert_uint_eq(ct_scope_var_count(s), 2);
  const ct_tensor *w = find_tensor(s, "w");
  ck_assert(ct_ddim_equal(ct_tensor_dims(w), CT_DIMS(1)));
  ck_assert(*(const float *)ct_tensor_data(w, CT_FLOAT32) == 7.0f);
  ck_assert_int_eq(*(const int64_t *)ct_var_get(ct_scope_find_local_var(s, "keep"),
                                                &ct_int64_type), 9);
}

/* Loads b into the guarded scope, expects CT_ERR_FORMAT with every given fragment in the
 * message, and checks that the scope did not change. */
static void assert_format_error(const bytes *b, const char *f1, const char *f2) {
  ct_scope *s = guarded_scope();
  ck_assert_int_eq(ct_params_load_memory(b->p, b->n, s), CT_ERR_FORMAT);
  ck_assert_int_eq(ct_last_status(), CT_ERR_FORMAT);
  const char *msg = ct_last_error();
  ck_assert_msg(f1 == NULL || strstr(msg, f1) != NULL, "'%s' not in: %s", f1, msg);
  ck_assert_msg(f2 == NULL || strstr(msg, f2) != NULL, "'%s' not in: %s", f2, msg);
  assert_guarded_unchanged(s);
  ct_scope_free(s);
}

/* ---- Files ----------------------------------------------------------------------------------- */

static char work_dir[64];

/* A fresh directory under the working directory, removed again by remove_work_dir. */
static void make_work_dir(void) {
  snprintf(work_dir, sizeof work_dir, "params-test-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(work_dir));
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static void remove_work_dir(void) { nftw(work_dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS); }

static char *in_dir(const char *name) {
  static char path[4][256];
  static int next;
  char *p = path[next++ % 4];
  snprintf(p, sizeof path[0], "%s/%s", work_dir, name);
  return p;
}

static unsigned char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
  long n = ftell(f);
  ck_assert_int_ge(n, 0);
  rewind(f);
  unsigned char *p = malloc((size_t)n + 1);
  ck_assert_uint_eq(fread(p, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return p;
}

static void write_all(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(p, 1, n, f), n);
  ck_assert_int_eq(fclose(f), 0);
}

/* Entries in dir besides . and .. */
static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;
  ck_assert_ptr_nonnull(d);
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
  }
  closedir(d);
  return n;
}

static void assert_file_is(const char *path, const void *p, size_t n) {
  size_t len;
  unsigned char *got = read_all(path, &len);
  ck_assert_uint_eq(len, n);
  ck_assert_int_eq(memcmp(got, p, n), 0);
  free(got);
}

/* The sample entries, loaded into a new scope from bytes built in file order. */
static ct_scope *sample_scope(void) {
  bytes b = sample_dict(file_order, 3);
  ct_scope *s = ct_scope_new();
  ck_assert_int_eq(ct_params_load_memory(b.p, b.n, s), CT_OK);
  free(b.p);
  return s;
}

/* ---- The layout ------------------------------------------------------------------------------ */

START_TEST(load_reads_every_entry) {
  bytes b = sample_dict(file_order, 3);
  ct_scope *s = ct_scope_new();
  ck_assert_uint_eq(b.n, 266);
  ck_assert_int_eq(ct_params_load_memory(b.p, b.n, s), CT_OK);
  assert_sample_loaded(s);
  ct_scope_free(s);
  free(b.p);
}
END_TEST

START_TEST(save_in_given_order_writes_the_exact_bytes) {
  bytes b = sample_dict(file_order, 3);
  ct_scope *s = sample_scope();
  make_work_dir();
  ck_assert_int_eq(ct_params_save(in_dir("x.params"), s, file_order, 3), CT_OK);
  assert_file_is(in_dir("x.params"), b.p, b.n);
  ck_assert_int_eq(count_entries(work_dir), 1); /* no temporary file left */
  remove_work_dir();
  ct_scope_free(s);
  free(b.p);
}
END_TEST

START_TEST(save_all_writes_entries_sorted_by_name) {
  bytes b = sample_dict(sorted_order, 3);
  ct_scope *s = sample_scope();
  /* A variable of another type is skipped. */
  *(int64_t *)ct_var_get_mutable(ct_scope_var(s, "step"), &ct_int64_type) = 3;
  make_work_dir();
  ck_assert_int_eq(ct_params_save(in_dir("x.params"), s, NULL, 0), CT_OK);
  assert_file_is(in_dir("x.params"), b.p, b.n);
  remove_work_dir();
  ct_scope_free(s);
  free(b.p);
}
END_TEST

START_TEST(save_then_load_round_trips_every_dtype) {
  static const ct_dtype dtypes[] = {CT_BOOL,    CT_INT8,     CT_UINT8,   CT_INT16,
                                    CT_INT32,   CT_INT64,    CT_FLOAT16, CT_BFLOAT16,
                                    CT_FLOAT32, CT_FLOAT64};
  const ct_ddim shapes[] = {CT_DIMS(), CT_DIMS(0), CT_DIMS(3, 0, 2), CT_DIMS(5),
                            CT_DIMS(1, 1, 1, 1, 1, 1, 1, 2, 3)};
  ct_scope *s = ct_scope_new(), *back = ct_scope_new();
  char name[32];
  make_work_dir();
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
    for (size_t j = 0; j < sizeof shapes / sizeof shapes[0]; j++) {
      snprintf(name, sizeof name, "%s.%zu", ct_dtype_name(dtypes[i]), j);
      ct_tensor *t = ct_var_tensor(ct_scope_var(s, name));
      ck_assert_int_eq(ct_tensor_resize(t, shapes[j]), CT_OK);
      unsigned char *p = ct_tensor_mutable_data(t, dtypes[i], ct_cpu());
      size_t n = (size_t)ct_tensor_numel(t) * ct_dtype_size(dtypes[i]);
      for (size_t k = 0; k < n; k++) p[k] = dtypes[i] == CT_BOOL ? (unsigned char)(k & 1)
                                                                 : (unsigned char)(k * 7 + i);
    }
  }
  ck_assert_int_eq(ct_params_save(in_dir("all.params"), s, NULL, 0), CT_OK);
  ck_assert_int_eq(ct_params_load(in_dir("all.params"), back), CT_OK);
  ck_assert_uint_eq(ct_scope_var_count(back), ct_scope_var_count(s));
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
    for (size_t j = 0; j < sizeof shapes / sizeof shapes[0]; j++) {
      snprintf(name, sizeof name, "%s.%zu", ct_dtype_name(dtypes[i]), j);
      const ct_tensor *a = find_tensor(s, name), *b = find_tensor(back, name);
      ck_assert(ct_ddim_equal(ct_tensor_dims(a), ct_tensor_dims(b)));
      ck_assert_int_eq(ct_tensor_dtype(b), dtypes[i]);
      size_t n = (size_t)ct_tensor_numel(a) * ct_dtype_size(dtypes[i]);
      ck_assert_int_eq(memcmp(ct_tensor_data(a, dtypes[i]), ct_tensor_data(b, dtypes[i]), n), 0);
    }
  }
  remove_work_dir();
  ct_scope_free(s);
  ct_scope_free(back);
}
END_TEST

START_TEST(bool_is_written_as_tvm_writes_it) {
  ct_scope *s = sample_scope();
  const char *one[] = {"flag"};
  size_t len;
  make_work_dir();
  ck_assert_int_eq(ct_params_save(in_dir("f.params"), s, one, 1), CT_OK);
  unsigned char *p = read_all(in_dir("f.params"), &len);
  /* 24 header + 12 name + 8 count = 44, then the record: dtype at 44 + 28 */
  ck_assert_uint_eq(len, 44 + 40 + 8 + 4);
  ck_assert_uint_eq(p[44 + 28], 1); /* code: uint */
  ck_assert_uint_eq(p[44 + 29], 1); /* bits: 1 */
  ck_assert_uint_eq(p[44 + 30], 1); /* lanes: 1 */
  ck_assert_uint_eq(p[44 + 31], 0);
  free(p);
  remove_work_dir();
  ct_scope_free(s);
}
END_TEST

START_TEST(load_accepts_dlpack_bool_code) {
  const unsigned char v[2] = {1, 0};
  const int64_t shape[1] = {2};
  bytes b = {NULL, 0, 0};
  ct_scope *s = ct_scope_new();
  b_u64(&b, 0xF7E58D4F05049CB7ull);
  b_u64(&b, 0);
  b_u64(&b, 1);
  b_name(&b, "m", 1);
  b_u64(&b, 1);
  b_record(&b, 6, 8, 1, shape, v, 2); /* kDLBool, 8 bits */
  ck_assert_int_eq(ct_params_load_memory(b.p, b.n, s), CT_OK);
  ck_assert_int_eq(ct_tensor_dtype(find_tensor(s, "m")), CT_BOOL);
  ct_scope_free(s);
  free(b.p);
}
END_TEST

START_TEST(empty_dictionary_round_trips) {
  ct_scope *s = ct_scope_new(), *back = ct_scope_new();
  size_t len;
  make_work_dir();
  ck_assert_int_eq(ct_params_save(in_dir("e.params"), s, NULL, 0), CT_OK);
  unsigned char *p = read_all(in_dir("e.params"), &len);
  ck_assert_uint_eq(len, 32);
  ck_assert_int_eq(ct_params_load_memory(p, len, back), CT_OK);
  ck_assert_uint_eq(ct_scope_var_count(back), 0);
  free(p);
  remove_work_dir();
  ct_scope_free(s);
  ct_scope_free(back);
}
END_TEST

START_TEST(save_finds_names_in_ancestors) {
  ct_scope *s = sample_scope();
  ct_scope *kid = ct_scope_new_kid(s);
  const char *names[] = {"w"};
  ct_scope *back = ct_scope_new();
  make_work_dir();
  ck_assert_int_eq(ct_params_save(in_dir("k.params"), kid, names, 1), CT_OK);
  ck_assert_int_eq(ct_params_load(in_dir("k.params"), back), CT_OK);
  ck_assert_uint_eq(ct_scope_var_count(back), 1);
  ck_assert_int_eq(memcmp(ct_tensor_data(find_tensor(back, "w"), CT_FLOAT32), w_data, 24), 0);
  remove_work_dir();
  ct_scope_free(s);
  ct_scope_free(back);
}
END_TEST

/* ---- Loading into a scope -------------------------------------------------------------------- */

START_TEST(load_replaces_existing_tensors_and_keeps_their_views) {
  bytes b = sample_dict(file_order, 3);
  ct_scope *s = guarded_scope();
  ct_tensor *view = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_share(view, find_tensor(s, "w")), CT_OK);
  ck_assert_int_eq(ct_scope_erase_vars(s, (const char *const[]){"keep"}, 1), 1);
  ck_assert_int_eq(ct_params_load_memory(b.p, b.n, s), CT_OK);
  assert_sample_loaded(s);
  ck_assert(*(const float *)ct_tensor_data(view, CT_FLOAT32) == 7.0f);
  ct_tensor_free(view);
  ct_scope_free(s);
  free(b.p);
}
END_TEST

START_TEST(load_is_all_or_nothing) {
  bytes b = sample_dict(file_order, 3);
  b.p[214] ^= 0x40; /* the last record's magic: the first two entries are good */
  ct_scope *s = guarded_scope();
  ct_memory_stats before, after;
  ck_assert_int_eq(ct_memory_stats_get(ct_cpu(), &before), CT_OK);
  ck_assert_int_eq(ct_params_load_memory(b.p, b.n, s), CT_ERR_FORMAT);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "tensor 2 ('flag')"));
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "offset 214"));
  assert_guarded_unchanged(s);
  ck_assert_int_eq(ct_memory_stats_get(ct_cpu(), &after), CT_OK);
  ck_assert_uint_eq(after.allocated, before.allocated); /* the staged tensors went again */
  ct_scope_free(s);
  free(b.p);
}
END_TEST

START_TEST(load_into_a_variable_of_another_type_changes_nothing) {
  const char *order[] = {"w", "keep"};
  bytes b = {NULL, 0, 0};
  ct_scope *s = guarded_scope();
  b_u64(&b, 0xF7E58D4F05049CB7ull);
  b_u64(&b, 0);
  b_u64(&b, 2);
  b_name(&b, order[0], 1);
  b_name(&b, order[1], 4);
  b_u64(&b, 2);
  b_sample_record(&b, "w");
  b_sample_record(&b, "b");
  ck_assert_int_eq(ct_params_load_memory(b.p, b.n, s), CT_ERR_TYPE_MISMATCH);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "'keep'"));
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "int64"));
  assert_guarded_unchanged(s);
  ct_scope_free(s);
  free(b.p);
}
END_TEST

START_TEST(load_null_arguments_are_invalid) {
  ct_scope *s = ct_scope_new();
  ck_assert_int_eq(ct_params_load(NULL, s), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_params_load("x", NULL), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_params_load_memory(NULL, 8, s), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_params_load_memory("12345678", 8, NULL), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_params_load_memory(NULL, 0, s), CT_ERR_FORMAT); /* nothing to read */
  ct_scope_free(s);
}
END_TEST

START_TEST(load_of_a_missing_file_or_directory_is_io_error) {
  ct_scope *s = guarded_scope();
  make_work_dir();
  ck_assert_int_eq(ct_params_load(in_dir("missing.params"), s), CT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "missing.params"));
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "cannot open"));
  ck_assert_int_eq(ct_params_load(work_dir, s), CT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "not a regular file"));
  assert_guarded_unchanged(s);
  remove_work_dir();
  ct_scope_free(s);
}
END_TEST

START_TEST(load_from_file_matches_load_from_memory) {
  bytes b = sample_dict(file_order, 3);
  ct_scope *s = ct_scope_new();
  make_work_dir();
  write_all(in_dir("x.params"), b.p, b.n);
  ck_assert_int_eq(ct_params_load(in_dir("x.params"), s), CT_OK);
  assert_sample_loaded(s);
  /* and a truncated file fails the same way, naming the file */
  write_all(in_dir("cut.params"), b.p, 264);
  ct_scope_free(s);
  s = guarded_scope();
  ck_assert_int_eq(ct_params_load(in_dir("cut.params"), s), CT_ERR_FORMAT);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "cut.params"));
  ck_assert_ptr_nonnull(
      strstr(ct_last_error(), "tensor 2 ('flag'): claims 4 data bytes, 2 remain at offset 262"));
  assert_guarded_unchanged(s);
  remove_work_dir();
  ct_scope_free(s);
  free(b.p);
}
END_TEST

/* ---- Bad input ------------------------------------------------------------------------------- */

START_TEST(truncation_at_every_offset_is_a_format_error) {
  bytes b = sample_dict(file_order, 3);
  ct_scope *s = guarded_scope();
  for (size_t len = 0; len < b.n; len++) {
    ct_status st = ct_params_load_memory(b.p, len, s);
    ck_assert_msg(st == CT_ERR_FORMAT, "length %zu gave %d", len, st);
    ck_assert_msg(strstr(ct_last_error(), "offset") != NULL || len < 8, "length %zu: %s", len,
                  ct_last_error());
    assert_guarded_unchanged(s);
  }
  ct_scope_free(s);
  free(b.p);
}
END_TEST

START_TEST(corruption_at_every_byte_is_caught_or_harmless) {
  bytes b = sample_dict(file_order, 3);
  for (size_t at = 0; at < b.n; at++) {
    static const unsigned char masks[] = {0x01, 0x80, 0xFF};
    for (size_t k = 0; k < sizeof masks; k++) {
      ct_scope *s = guarded_scope();
      b.p[at] ^= masks[k];
      ct_status st = ct_params_load_memory(b.p, b.n, s);
      b.p[at] ^= masks[k];
      ck_assert_msg(st == CT_OK || st == CT_ERR_FORMAT, "byte %zu ^ %02x gave %d: %s", at,
                    masks[k], st, ct_last_error());
      if (st != CT_OK) assert_guarded_unchanged(s);
      ct_scope_free(s);
    }
  }
  free(b.p);
}
END_TEST

START_TEST(a_count_beyond_the_input_is_refused_before_allocating) {
  bytes b = sample_dict(file_order, 3);
  ct_memory_stats st;
  set_u64(&b, 16, (uint64_t)1 << 60);
  assert_format_error(&b, "claims 1152921504606846976 tensors at offset 16", "hold at most");
  set_u64(&b, 16, 6); /* 242 bytes follow: at most 4 entries */
  assert_format_error(&b, "claims 6 tensors", NULL);
  ck_assert_int_eq(ct_memory_stats_get(ct_cpu(), &st), CT_OK);
  ck_assert_uint_eq(st.allocs, 2); /* the two guarded scopes' 'w', nothing for the file */
  free(b.p);
}
END_TEST

START_TEST(counts_that_disagree_are_refused) {
  bytes b = sample_dict(file_order, 3);
  set_u64(&b, 54, 2);
  assert_format_error(&b, "the tensor count is 3 at offset 16 but 2 at offset 54", NULL);
  free(b.p);
}
END_TEST

START_TEST(a_name_longer_than_the_input_is_refused) {
  bytes b = sample_dict(file_order, 3);
  set_u64(&b, 24, 1000);
  assert_format_error(&b, "name 0 at offset 24 claims 1000 bytes", "remain");
  set_u64(&b, 24, UINT64_MAX);
  assert_format_error(&b, "name 0 at offset 24 claims 18446744073709551615 bytes", NULL);
  free(b.p);
}
END_TEST

START_TEST(bad_names_are_refused) {
  bytes b = sample_dict(file_order, 3);
  b.p[41] = 'w'; /* "b" becomes "w" */
  assert_format_error(&b, "tensor 1 ('w')", "repeats the name of tensor 0");
  b.p[41] = 'b';
  b.p[51] = '\0'; /* "flag" holds a NUL */
  assert_format_error(&b, "name 2 at offset 42", "NUL byte");
  free(b.p);
  bytes e = {NULL, 0, 0};
  b_u64(&e, 0xF7E58D4F05049CB7ull);
  b_u64(&e, 0);
  b_u64(&e, 1);
  b_name(&e, "", 0);
  b_u64(&e, 1);
  b_sample_record(&e, "w");
  assert_format_error(&e, "name 0 at offset 24 is empty", NULL);
  free(e.p);
}
END_TEST

START_TEST(bad_record_headers_are_refused) {
  bytes b = sample_dict(file_order, 3);
  set_u64(&b, 62, 0x1234);
  assert_format_error(&b, "tensor 0 ('w'): tensor magic 0x0000000000001234 at offset 62", NULL);
  set_u64(&b, 62, 0xDD5E40F096B4A13Full);
  set_u32(&b, 78, 2);
  assert_format_error(&b, "tensor 0 ('w'): device type 2 at offset 78", NULL);
  set_u32(&b, 78, 1);
  set_u32(&b, 86, 10);
  assert_format_error(&b, "rank 10 at offset 86", "CT_MAX_RANK");
  set_u32(&b, 86, (uint32_t)-1);
  assert_format_error(&b, "rank -1 at offset 86 is negative", NULL);
  set_u32(&b, 86, 2);
  b.p[90] = 1; /* uint32 */
  assert_format_error(&b, "dtype code 1 (uint), 32 bits, 1 lanes at offset 90", NULL);
  b.p[90] = 2;
  b.p[92] = 4; /* float32 x4 */
  assert_format_error(&b, "4 lanes", NULL);
  b.p[92] = 1;
  b.p[90] = 9; /* not a DLPack code */
  assert_format_error(&b, "dtype code 9 (unknown)", NULL);
  free(b.p);
}
END_TEST

START_TEST(oversized_dims_are_refused_before_allocating) {
  bytes b = sample_dict(file_order, 3);
  ct_memory_stats st;
  set_u64(&b, 94, (uint64_t)1 << 40); /* [2^40, 3] float32, still claiming 24 bytes */
  assert_format_error(&b, "claims 24 data bytes at offset 110, but [1099511627776,3] float32 "
                          "takes 13194139533312", NULL);
  set_u64(&b, 110, (uint64_t)13194139533312); /* now claims them: far more than remain */
  assert_format_error(&b, "claims 13194139533312 data bytes, 148 remain at offset 118", NULL);
  set_u64(&b, 94, (uint64_t)1 << 62); /* [2^62, 3]: more elements than memory can address */
  assert_format_error(&b, "dims [4611686018427387904,3] at offset 94 hold more elements", NULL);
  set_u64(&b, 94, (uint64_t)-2);
  assert_format_error(&b, "extent -2 of dim 0 at offset 94 is negative", NULL);
  ck_assert_int_eq(ct_memory_stats_get(ct_cpu(), &st), CT_OK);
  ck_assert_uint_eq(st.allocs, 4); /* only the guarded scopes' own tensors */
  free(b.p);
}
END_TEST

START_TEST(trailing_bytes_are_refused) {
  bytes b = sample_dict(file_order, 3);
  b_le(&b, 0, 1);
  assert_format_error(&b, "1 bytes follow the end of the last tensor at offset 266", NULL);
  free(b.p);
}
END_TEST

START_TEST(foreign_files_are_refused_as_such) {
  bytes m = {NULL, 0, 0};
  b_u64(&m, 0x112); /* MXNet's NDArray list */
  b_u64(&m, 0);
  b_u64(&m, 1);
  assert_format_error(&m, "MXNet", "magic 0x112 at offset 0");
  free(m.p);
  bytes z = {NULL, 0, 0};
  static const char zip[] = "PK\x03\x04 a zip file, say";
  b_put(&z, zip, sizeof zip - 1);
  assert_format_error(&z, "not a TVM/CVM parameter file", "offset 0");
  free(z.p);
  bytes s = {NULL, 0, 0};
  b_put(&s, "short", 5);
  assert_format_error(&s, "is 5 bytes long", NULL);
  free(s.p);
}
END_TEST

START_TEST(a_single_tensor_file_is_not_a_dictionary) {
  bytes r = {NULL, 0, 0};
  b_sample_record(&r, "w");
  assert_format_error(&r, "single tensor", "ct_tensor_load");
  ct_tensor *t = ct_tensor_new();
  bytes d = sample_dict(file_order, 3);
  ck_assert_int_eq(ct_tensor_load_memory(d.p, d.n, t), CT_ERR_FORMAT);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "ct_params_load"));
  ck_assert(!ct_tensor_has_memory(t));
  ct_tensor_free(t);
  free(r.p);
  free(d.p);
}
END_TEST

/* ---- Single tensors -------------------------------------------------------------------------- */

START_TEST(tensor_save_and_load_round_trip) {
  bytes r = {NULL, 0, 0};
  ct_tensor *t = ct_tensor_new(), *back = ct_tensor_new();
  b_sample_record(&r, "w");
  ck_assert_int_eq(ct_tensor_load_memory(r.p, r.n, t), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(2, 3)));
  ck_assert_int_eq(memcmp(ct_tensor_data(t, CT_FLOAT32), w_data, 24), 0);
  make_work_dir();
  ck_assert_int_eq(ct_tensor_save(in_dir("w.ndarray"), t), CT_OK);
  assert_file_is(in_dir("w.ndarray"), r.p, r.n); /* NDArray::Save's bytes */
  ck_assert_int_eq(ct_tensor_load(in_dir("w.ndarray"), back), CT_OK);
  ck_assert_int_eq(memcmp(ct_tensor_data(back, CT_FLOAT32), w_data, 24), 0);
  remove_work_dir();
  ct_tensor_free(t);
  ct_tensor_free(back);
  free(r.p);
}
END_TEST

START_TEST(tensor_load_failure_leaves_the_tensor_alone) {
  bytes r = {NULL, 0, 0};
  ct_tensor *t = ct_tensor_new();
  b_sample_record(&r, "w");
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(1)), CT_OK);
  *(float *)ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()) = 7.0f;
  for (size_t len = 0; len < r.n; len++) {
    ck_assert_int_eq(ct_tensor_load_memory(r.p, len, t), CT_ERR_FORMAT);
    ck_assert(*(const float *)ct_tensor_data(t, CT_FLOAT32) == 7.0f);
    ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(1)));
  }
  ck_assert_int_eq(ct_tensor_load_memory(NULL, 0, NULL), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_load(NULL, t), CT_ERR_INVALID_ARGUMENT);
  ct_tensor_free(t);
  free(r.p);
}
END_TEST

START_TEST(tensor_save_errors) {
  ct_tensor *t = ct_tensor_new();
  make_work_dir();
  ck_assert_int_eq(ct_tensor_save(in_dir("t"), NULL), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_save(NULL, t), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_save("", t), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_save(in_dir("t"), t), CT_ERR_UNINITIALIZED);
  ck_assert_int_eq(count_entries(work_dir), 0);
  remove_work_dir();
  ct_tensor_free(t);
}
END_TEST

/* ---- Saving ---------------------------------------------------------------------------------- */

START_TEST(save_argument_errors_write_nothing) {
  ct_scope *s = sample_scope();
  const char *missing[] = {"w", "nope"};
  const char *twice[] = {"w", "b", "w"};
  const char *empty[] = {"w", ""};
  const char *null_name[] = {NULL};
  make_work_dir();
  ck_assert_int_eq(ct_params_save(NULL, s, NULL, 0), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_params_save("", s, NULL, 0), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_params_save(in_dir("x"), NULL, NULL, 0), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_params_save(in_dir("x"), s, twice, 3), CT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "'w' is named twice"));
  ck_assert_int_eq(ct_params_save(in_dir("x"), s, empty, 2), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_params_save(in_dir("x"), s, null_name, 1), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_params_save(in_dir("x"), s, missing, 2), CT_ERR_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "'nope'"));
  *(int64_t *)ct_var_get_mutable(ct_scope_var(s, "step"), &ct_int64_type) = 3;
  ck_assert_int_eq(ct_params_save(in_dir("x"), s, (const char *const[]){"step"}, 1),
                   CT_ERR_TYPE_MISMATCH);
  ck_assert_ptr_nonnull(ct_scope_var(s, "empty"));
  ck_assert_int_eq(ct_params_save(in_dir("x"), s, (const char *const[]){"empty"}, 1),
                   CT_ERR_UNINITIALIZED);
  ct_tensor *lazy = ct_var_tensor(ct_scope_var(s, "lazy"));
  ck_assert_int_eq(ct_tensor_resize(lazy, CT_DIMS(2)), CT_OK);
  ck_assert_int_eq(ct_params_save(in_dir("x"), s, NULL, 0), CT_ERR_UNINITIALIZED);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "'lazy'"));
  ck_assert_int_eq(count_entries(work_dir), 0);
  remove_work_dir();
  ct_scope_free(s);
}
END_TEST

START_TEST(save_replaces_an_existing_file) {
  bytes b = sample_dict(file_order, 3);
  ct_scope *s = sample_scope();
  make_work_dir();
  write_all(in_dir("x.params"), "old contents", 12);
  ck_assert_int_eq(ct_params_save(in_dir("x.params"), s, file_order, 3), CT_OK);
  assert_file_is(in_dir("x.params"), b.p, b.n);
  ck_assert_int_eq(count_entries(work_dir), 1);
  remove_work_dir();
  ct_scope_free(s);
  free(b.p);
}
END_TEST

START_TEST(save_keeps_permissions_and_symbolic_links) {
  bytes b = sample_dict(file_order, 3);
  ct_scope *s = sample_scope();
  struct stat st;
  make_work_dir();
  write_all(in_dir("real.params"), "old contents", 12);
  ck_assert_int_eq(chmod(in_dir("real.params"), 0600), 0);
  ck_assert_int_eq(symlink("real.params", in_dir("link.params")), 0);
  ck_assert_int_eq(ct_params_save(in_dir("link.params"), s, file_order, 3), CT_OK);
  /* The link is still a link, the file it names has the new bytes and its old mode. */
  ck_assert_int_eq(lstat(in_dir("link.params"), &st), 0);
  ck_assert(S_ISLNK(st.st_mode));
  assert_file_is(in_dir("real.params"), b.p, b.n);
  ck_assert_int_eq(stat(in_dir("real.params"), &st), 0);
  ck_assert_int_eq(st.st_mode & 0777, 0600);
  ck_assert_int_eq(count_entries(work_dir), 2);
  remove_work_dir();
  ct_scope_free(s);
  free(b.p);
}
END_TEST

START_TEST(failed_write_keeps_the_old_file) {
  ct_scope *s = ct_scope_new();
  ct_tensor *big = ct_var_tensor(ct_scope_var(s, "big"));
  struct rlimit old, small;
  ck_assert_int_eq(ct_tensor_resize(big, CT_DIMS(100000)), CT_OK);
  memset(ct_tensor_mutable_data(big, CT_FLOAT32, ct_cpu()), 0x3f, 400000);
  make_work_dir();
  write_all(in_dir("x.params"), "old contents", 12);
  /* Files may grow to 1000 bytes only: the write of the temporary file fails (EFBIG). */
  signal(SIGXFSZ, SIG_IGN);
  ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
  small = old;
  small.rlim_cur = 1000;
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
  ct_status st = ct_params_save(in_dir("x.params"), s, NULL, 0);
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
  ck_assert_int_eq(st, CT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "unchanged"));
  assert_file_is(in_dir("x.params"), "old contents", 12);
  ck_assert_int_eq(count_entries(work_dir), 1); /* the temporary file is gone */
  remove_work_dir();
  ct_scope_free(s);
}
END_TEST

START_TEST(failed_rename_keeps_what_was_there) {
  ct_scope *s = sample_scope();
  make_work_dir();
  /* The target is a non-empty directory: the rename onto it fails after a full write. */
  ck_assert_int_eq(mkdir(in_dir("x.params"), 0755), 0);
  write_all(in_dir("x.params/inside"), "keep", 4);
  ck_assert_int_eq(ct_params_save(in_dir("x.params"), s, NULL, 0), CT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "renaming"));
  assert_file_is(in_dir("x.params/inside"), "keep", 4);
  ck_assert_int_eq(count_entries(work_dir), 1);
  remove_work_dir();
  ct_scope_free(s);
}
END_TEST

START_TEST(save_into_a_missing_directory_is_io_error) {
  ct_scope *s = sample_scope();
  make_work_dir();
  ck_assert_int_eq(ct_params_save(in_dir("no/such/dir/x.params"), s, NULL, 0), CT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "no/such/dir/x.params"));
  ck_assert_int_eq(count_entries(work_dir), 0);
  remove_work_dir();
  ct_scope_free(s);
}
END_TEST

/* A tensor in CUDA memory is written through a host copy; it loads back as a CPU tensor.
 * Nothing to check on a machine without a GPU (or a build without CUDA). */
START_TEST(save_writes_device_tensors_through_the_host) {
  if (ct_cuda_device_count() == 0) return;
  bytes b = sample_dict(file_order, 3);
  ct_scope *s = sample_scope();
  ct_tensor *w = ct_var_tensor(ct_scope_find_local_var(s, "w"));
  ct_tensor *dev = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_copy(dev, w, ct_cuda(0)), CT_OK);
  ct_tensor_move(w, dev);
  ck_assert(ct_place_equal(ct_tensor_place(w), ct_cuda(0)));
  make_work_dir();
  ck_assert_int_eq(ct_params_save(in_dir("x.params"), s, file_order, 3), CT_OK);
  assert_file_is(in_dir("x.params"), b.p, b.n);
  remove_work_dir();
  ct_tensor_free(dev);
  ct_scope_free(s);
  free(b.p);
}
END_TEST

static Suite *params_suite(void) {
  Suite *s = suite_create("params");
  CT_ADD_TEST(s, load_reads_every_entry);
  CT_ADD_TEST(s, save_in_given_order_writes_the_exact_bytes);
  CT_ADD_TEST(s, save_all_writes_entries_sorted_by_name);
  CT_ADD_TEST(s, save_then_load_round_trips_every_dtype);
  CT_ADD_TEST(s, bool_is_written_as_tvm_writes_it);
  CT_ADD_TEST(s, load_accepts_dlpack_bool_code);
  CT_ADD_TEST(s, empty_dictionary_round_trips);
  CT_ADD_TEST(s, save_finds_names_in_ancestors);
  CT_ADD_TEST(s, load_replaces_existing_tensors_and_keeps_their_views);
  CT_ADD_TEST(s, load_is_all_or_nothing);
  CT_ADD_TEST(s, load_into_a_variable_of_another_type_changes_nothing);
  CT_ADD_TEST(s, load_null_arguments_are_invalid);
  CT_ADD_TEST(s, load_of_a_missing_file_or_directory_is_io_error);
  CT_ADD_TEST(s, load_from_file_matches_load_from_memory);
  CT_ADD_TEST(s, truncation_at_every_offset_is_a_format_error);
  CT_ADD_TEST(s, corruption_at_every_byte_is_caught_or_harmless);
  CT_ADD_TEST(s, a_count_beyond_the_input_is_refused_before_allocating);
  CT_ADD_TEST(s, counts_that_disagree_are_refused);
  CT_ADD_TEST(s, a_name_longer_than_the_input_is_refused);
  CT_ADD_TEST(s, bad_names_are_refused);
  CT_ADD_TEST(s, bad_record_headers_are_refused);
  CT_ADD_TEST(s, oversized_dims_are_refused_before_allocating);
  CT_ADD_TEST(s, trailing_bytes_are_refused);
  CT_ADD_TEST(s, foreign_files_are_refused_as_such);
  CT_ADD_TEST(s, a_single_tensor_file_is_not_a_dictionary);
  CT_ADD_TEST(s, tensor_save_and_load_round_trip);
  CT_ADD_TEST(s, tensor_load_failure_leaves_the_tensor_alone);
  CT_ADD_TEST(s, tensor_save_errors);
  CT_ADD_TEST(s, save_argument_errors_write_nothing);
  CT_ADD_TEST(s, save_replaces_an_existing_file);
  CT_ADD_TEST(s, save_keeps_permissions_and_symbolic_links);
  CT_ADD_TEST(s, failed_write_keeps_the_old_file);
  CT_ADD_TEST(s, failed_rename_keeps_what_was_there);
  CT_ADD_TEST(s, save_into_a_missing_directory_is_io_error);
  CT_ADD_TEST(s, save_writes_device_tensors_through_the_host);
  return s;
}

CT_TEST_MAIN(params_suite)
