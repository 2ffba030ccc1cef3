/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of corten/params.h on inputs built here byte by byte: the exact layout written and read,
 * all-or-nothing loading, single tensors, and atomic saving (a failed write, a failed rename, a
 * missing directory). Bad input is tested in test_params_bad.c. Each test runs in its own
 * process; files go to a fresh directory under the working directory. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <corten/corten.h>

#include "file_util.h"
#include "params_util.h"

/* ---- Files ----------------------------------------------------------------------------------- */

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
  make_work_dir("params-test");
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
  make_work_dir("params-test");
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
  make_work_dir("params-test");
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
  make_work_dir("params-test");
  ck_assert_int_eq(ct_params_save(in_dir("f.params"), s, one, 1), CT_OK);
  unsigned char *p = read_all(in_dir("f.params"), &len);
  /* 24 header + 12 name + 8 count = 44, then the record: dtype at 44 + 28 */
  ck_assert_uint_eq(len, 44 + 40 + 8 + 4);
  ck_assert_uint_eq(p[44 + 28], 6); /* code: kDLBool */
  ck_assert_uint_eq(p[44 + 29], 8); /* bits: 8 */
  ck_assert_uint_eq(p[44 + 30], 1); /* lanes: 1 */
  ck_assert_uint_eq(p[44 + 31], 0);
  free(p);
  remove_work_dir();
  ct_scope_free(s);
}
END_TEST

/* Older TVM (and corten before it) wrote bool as (uint, 1 bit), one byte per element. */
START_TEST(load_accepts_the_older_uint1_bool) {
  const unsigned char v[2] = {1, 0};
  const int64_t shape[1] = {2};
  bytes b = {NULL, 0, 0};
  ct_scope *s = ct_scope_new();
  b_u64(&b, 0xF7E58D4F05049CB7ull);
  b_u64(&b, 0);
  b_u64(&b, 1);
  b_name(&b, "m", 1);
  b_u64(&b, 1);
  b_record(&b, 1, 1, 1, shape, v, 2); /* uint, 1 bit */
  ck_assert_int_eq(ct_params_load_memory(b.p, b.n, s), CT_OK);
  ck_assert_int_eq(ct_tensor_dtype(find_tensor(s, "m")), CT_BOOL);
  ct_scope_free(s);
  free(b.p);
}
END_TEST

START_TEST(empty_dictionary_round_trips) {
  ct_scope *s = ct_scope_new(), *back = ct_scope_new();
  size_t len;
  make_work_dir("params-test");
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
  make_work_dir("params-test");
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
  before = cpu_stats();
  ck_assert_int_eq(ct_params_load_memory(b.p, b.n, s), CT_ERR_FORMAT);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "tensor 2 ('flag')"));
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "offset 214"));
  assert_guarded_unchanged(s);
  after = cpu_stats();
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
  make_work_dir("params-test");
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
  make_work_dir("params-test");
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

/* A dictionary of one float32 tensor [4] holding 0.5 .. 3.5, named by name_len 'n's: its data
 * starts at byte 88 + name_len. */
static bytes one_float_dict(size_t name_len) {
  static const float v[4] = {0.5f, 1.5f, 2.5f, 3.5f};
  static const int64_t shape[1] = {4};
  char name[128];
  ck_assert_uint_lt(name_len, sizeof name);
  memset(name, 'n', name_len);
  bytes b = {NULL, 0, 0};
  b_u64(&b, 0xF7E58D4F05049CB7ull);
  b_u64(&b, 0);
  b_u64(&b, 1);
  b_name(&b, name, name_len);
  b_u64(&b, 1);
  b_record(&b, 2, 32, 1, shape, v, sizeof v);
  ck_assert_uint_eq(b.n, 88 + name_len + sizeof v);
  return b;
}

/* The data's address within a 64-byte line after loading one_float_dict(name_len), from a file
 * (file true) or from memory; the values and the capacity checked. */
static unsigned loaded_line_offset(size_t name_len, bool file) {
  bytes b = one_float_dict(name_len);
  ct_scope *s = ct_scope_new();
  if (file) {
    make_work_dir("params-test");
    write_all(in_dir("one.params"), b.p, b.n);
    ck_assert_int_eq(ct_params_load(in_dir("one.params"), s), CT_OK);
    remove_work_dir();
  } else {
    ck_assert_int_eq(ct_params_load_memory(b.p, b.n, s), CT_OK);
  }
  char name[128];
  memset(name, 'n', name_len);
  name[name_len] = '\0';
  const ct_tensor *t = find_tensor(s, name);
  const float *d = ct_tensor_data(t, CT_FLOAT32);
  ck_assert(d[0] == 0.5f && d[1] == 1.5f && d[2] == 2.5f && d[3] == 3.5f);
  ck_assert_uint_eq(ct_tensor_capacity(t), 16);
  unsigned at = (unsigned)((uintptr_t)d % 64);
  ct_scope_free(s);
  free(b.p);
  return at;
}

/* From a file, data sits in its block as it sits in the file's 64-byte lines (the kernel's copy
 * is fast only so) when that keeps its elements aligned; from memory, and at an offset that is
 * not a multiple of the element size, at the block's 64-byte-aligned start. */
START_TEST(file_data_sits_in_its_line_as_in_the_file) {
  ck_assert_uint_eq(loaded_line_offset(60, true), 20); /* data at 148 = 2 * 64 + 20 */
  ck_assert_uint_eq(loaded_line_offset(60, false), 0);
  ck_assert_uint_eq(loaded_line_offset(2, true), 0); /* data at 90 = 64 + 26: not 4-aligned */
  ck_assert_uint_eq(loaded_line_offset(40, true), 0); /* data at 128 */
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
  make_work_dir("params-test");
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
  make_work_dir("params-test");
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
  make_work_dir("params-test");
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
  make_work_dir("params-test");
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
  make_work_dir("params-test");
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
  make_work_dir("params-test");
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
  make_work_dir("params-test");
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
  make_work_dir("params-test");
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
  make_work_dir("params-test");
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
  CT_ADD_TEST(s, load_accepts_the_older_uint1_bool);
  CT_ADD_TEST(s, empty_dictionary_round_trips);
  CT_ADD_TEST(s, save_finds_names_in_ancestors);
  CT_ADD_TEST(s, load_replaces_existing_tensors_and_keeps_their_views);
  CT_ADD_TEST(s, load_is_all_or_nothing);
  CT_ADD_TEST(s, load_into_a_variable_of_another_type_changes_nothing);
  CT_ADD_TEST(s, load_null_arguments_are_invalid);
  CT_ADD_TEST(s, load_of_a_missing_file_or_directory_is_io_error);
  CT_ADD_TEST(s, load_from_file_matches_load_from_memory);
  CT_ADD_TEST(s, file_data_sits_in_its_line_as_in_the_file);
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
