/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of ct_params_inspect (corten/params.h): listing what a parameter file holds, entry by
 * entry, with names, dtypes, dims, byte counts and byte offsets, one tensor in memory at a time.
 *
 * The real-file tests read jakariamd_mnist_mod.params (TVM >= 0.8, 8 float32 tensors) from the
 * directory named by CORTEN_PARAMS_DIR (ctest passes the shared data folder); the expected
 * offsets and checksums below were read from that file independently of corten. The other tests
 * build their inputs here (with ct_params_save, or byte by byte) and always run; without the real
 * file the suite runs them and then reports itself skipped (77). */
#define _GNU_SOURCE
#include <ftw.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <corten/corten.h>

#include "harness.h"

#define REAL_FILE "jakariamd_mnist_mod.params"
#define MAX_SEEN 16

static char real_path[600];

/* ---- A visitor that records what it is shown ------------------------------------------------- */

typedef struct seen_entry {
  uint64_t index, nbytes, offset, data_offset;
  char name[32];
  bool has_name;
  ct_dtype dtype;
  ct_ddim dims;
  uint32_t crc;
  uint32_t first_bits; /* the first 4 data bytes, little-endian */
} seen_entry;

typedef struct seen {
  int begins;
  int entries_before_begin;
  ct_params_info info;
  size_t n;
  seen_entry e[MAX_SEEN];
  ct_status fail_with;   /* returned by entry at index fail_at; CT_OK: never */
  uint64_t fail_at;
  bool fail_in_begin;    /* begin returns fail_with instead */
  bool record_own_error; /* the failing function records its own message first */
  ct_tensor *keep;       /* entry 'keep_name' is shared into it */
  const char *keep_name;
} seen;

static uint32_t crc32_of(const unsigned char *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

static ct_status fail_as_asked(const seen *s) {
  if (s->record_own_error) {
    /* A visitor that says why: its message is kept. */
    ck_assert_ptr_null(ct_tensor_data(NULL, CT_FLOAT32));
    return ct_last_status();
  }
  return s->fail_with;
}

static ct_status on_begin(void *ctx, const ct_params_info *info) {
  seen *s = ctx;
  s->begins++;
  s->info = *info;
  if (s->fail_in_begin) return fail_as_asked(s);
  return CT_OK;
}

static ct_status on_entry(void *ctx, const ct_params_entry *e) {
  seen *s = ctx;
  if (s->begins == 0) s->entries_before_begin++;
  ck_assert_uint_lt(s->n, MAX_SEEN);
  seen_entry *r = &s->e[s->n++];
  r->index = e->index;
  r->nbytes = e->nbytes;
  r->offset = e->offset;
  r->data_offset = e->data_offset;
  r->has_name = e->name != NULL;
  snprintf(r->name, sizeof r->name, "%s", e->name ? e->name : "");
  r->dtype = e->dtype;
  r->dims = e->dims;
  /* The entry's fields describe its tensor. */
  ck_assert_int_eq(ct_tensor_dtype(e->tensor), e->dtype);
  ck_assert(ct_ddim_equal(ct_tensor_dims(e->tensor), e->dims));
  ck_assert(ct_place_equal(ct_tensor_place(e->tensor), ct_cpu()));
  const unsigned char *data = ct_tensor_data(e->tensor, e->dtype);
  ck_assert_ptr_nonnull(data);
  r->crc = crc32_of(data, (size_t)e->nbytes);
  r->first_bits = e->nbytes >= 4 ? (uint32_t)data[0] | (uint32_t)data[1] << 8 |
                                       (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24
                                 : 0;
  if (s->keep != NULL && e->name != NULL && strcmp(e->name, s->keep_name) == 0) {
    ck_assert_int_eq(ct_tensor_share(s->keep, e->tensor), CT_OK);
  }
  if (s->fail_with != CT_OK && !s->fail_in_begin && e->index == s->fail_at) {
    return fail_as_asked(s);
  }
  return CT_OK;
}

static ct_params_visitor visitor_of(seen *s) {
  return (ct_params_visitor){.begin = on_begin, .entry = on_entry, .ctx = s};
}

static void assert_entry(const seen_entry *r, uint64_t index, const char *name, ct_ddim dims,
                         uint64_t nbytes, uint64_t offset, uint64_t data_offset, uint32_t crc) {
  ck_assert_uint_eq(r->index, index);
  ck_assert(r->has_name);
  ck_assert_str_eq(r->name, name);
  ck_assert_int_eq(r->dtype, CT_FLOAT32);
  ck_assert(ct_ddim_equal(r->dims, dims));
  ck_assert_uint_eq(r->nbytes, nbytes);
  ck_assert_uint_eq(r->offset, offset);
  ck_assert_uint_eq(r->data_offset, data_offset);
  ck_assert_uint_eq(r->crc, crc);
}

/* The eight entries of the real file, as an independent reading of its bytes gives them. */
static void assert_real_file_listing(const seen *s) {
  ck_assert_int_eq(s->begins, 1);
  ck_assert_int_eq(s->entries_before_begin, 0);
  ck_assert_int_eq(s->info.kind, CT_PARAMS_DICT);
  ck_assert_uint_eq(s->info.count, 8);
  ck_assert_uint_eq(s->info.nbytes, 745680);
  ck_assert_uint_eq(s->n, 8);
  assert_entry(&s->e[0], 0, "p7", CT_DIMS(1, 10), 40, 112, 168, 0x2650b41bu);
  assert_entry(&s->e[1], 1, "p0", CT_DIMS(5, 1, 3, 3, 1, 1), 180, 208, 296, 0x57beb1ceu);
  assert_entry(&s->e[2], 2, "p1", CT_DIMS(1, 5, 1, 1, 1), 20, 476, 556, 0x2984af1fu);
  assert_entry(&s->e[3], 3, "p4", CT_DIMS(16, 1440, 8), 737280, 576, 640, 0x573e5920u);
  assert_entry(&s->e[4], 4, "p2", CT_DIMS(5, 5, 3, 3, 1, 2), 1800, 737920, 738008, 0xfd5743d0u);
  assert_entry(&s->e[5], 5, "p3", CT_DIMS(1, 5, 1, 1, 2), 40, 739808, 739888, 0x52510458u);
  assert_entry(&s->e[6], 6, "p5", CT_DIMS(1, 128), 512, 739928, 739984, 0xb2708de5u);
  assert_entry(&s->e[7], 7, "p6", CT_DIMS(2, 128, 5), 5120, 740496, 740560, 0xdb013d88u);
  ck_assert_uint_eq(s->e[0].first_bits, 0xbe5fa29cu); /* p7[0] = -0.218394 */
}

static unsigned char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
  long n = ftell(f);
  ck_assert_int_ge(n, 0);
  rewind(f);
  unsigned char *p = malloc((size_t)n + 1);
  ck_assert_ptr_nonnull(p);
  ck_assert_uint_eq(fread(p, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return p;
}

/* ---- A small dictionary written here --------------------------------------------------------- */

static char work_dir[64];
static char small_path[128];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static void remove_work_dir(void) { nftw(work_dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS); }

/* Saves "a" (int8 [3]: 1, -2, 3) and "b" (an int64 scalar: 7) to small_path. Sorted by name, the
 * file is: header 24, names 2 x 9, count 8 (to 50); a's record at 50 (40 + 8 bytes of shape, data
 * at 98, 3 bytes); b's record at 101 (40, data at 141, 8 bytes); 149 bytes in all. */
static void write_small_file(void) {
  static const int8_t a[3] = {1, -2, 3};
  static const int64_t b = 7;
  snprintf(work_dir, sizeof work_dir, "params-inspect-test-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(work_dir));
  snprintf(small_path, sizeof small_path, "%s/small.params", work_dir);
  ct_scope *s = ct_scope_new();
  ck_assert_int_eq(
      ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, "a")), a, CT_DIMS(3), CT_INT8, ct_cpu()),
      CT_OK);
  ck_assert_int_eq(
      ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, "b")), &b, CT_DIMS(), CT_INT64, ct_cpu()),
      CT_OK);
  ck_assert_int_eq(ct_params_save(small_path, s, NULL, 0), CT_OK);
  ct_scope_free(s);
}

/* ---- Real file ------------------------------------------------------------------------------- */

START_TEST(a_real_dictionary_lists_every_entry_in_file_order) {
  seen s = {0};
  ct_params_visitor v = visitor_of(&s);
  ck_assert_msg(ct_params_inspect(real_path, &v) == CT_OK, "%s", ct_last_error());
  assert_real_file_listing(&s);
}
END_TEST

START_TEST(the_same_bytes_in_memory_list_the_same) {
  size_t len;
  unsigned char *p = read_all(real_path, &len);
  seen s = {0};
  ct_params_visitor v = visitor_of(&s);
  ck_assert_msg(ct_params_inspect_memory(p, len, &v) == CT_OK, "%s", ct_last_error());
  assert_real_file_listing(&s);
  free(p);
}
END_TEST

START_TEST(a_single_tensor_file_lists_one_unnamed_entry_at_offset_0) {
  /* The first record of the real file (p7 at 112, 96 bytes) is a single-tensor file. */
  size_t len;
  unsigned char *p = read_all(real_path, &len);
  seen s = {0};
  ct_params_visitor v = visitor_of(&s);
  ck_assert_msg(ct_params_inspect_memory(p + 112, 96, &v) == CT_OK, "%s", ct_last_error());
  ck_assert_int_eq(s.begins, 1);
  ck_assert_int_eq(s.info.kind, CT_PARAMS_TENSOR);
  ck_assert_uint_eq(s.info.count, 1);
  ck_assert_uint_eq(s.info.nbytes, 96);
  ck_assert_uint_eq(s.n, 1);
  ck_assert(!s.e[0].has_name);
  ck_assert_uint_eq(s.e[0].index, 0);
  ck_assert_uint_eq(s.e[0].offset, 0);
  ck_assert_uint_eq(s.e[0].data_offset, 56);
  ck_assert_uint_eq(s.e[0].nbytes, 40);
  ck_assert(ct_ddim_equal(s.e[0].dims, CT_DIMS(1, 10)));
  ck_assert_uint_eq(s.e[0].crc, 0x2650b41bu);
  ck_assert_uint_eq(s.e[0].first_bits, 0xbe5fa29cu);
  free(p);
}
END_TEST

START_TEST(a_file_cut_short_fails_naming_the_entry_after_showing_the_ones_before) {
  size_t len;
  unsigned char *p = read_all(real_path, &len);
  seen s = {0};
  ct_params_visitor v = visitor_of(&s);
  /* Cut inside p4's data: p4's record is at 576, its data at 640. */
  ck_assert_int_eq(ct_params_inspect_memory(p, 1000, &v), CT_ERR_FORMAT);
  ck_assert_int_eq(ct_last_status(), CT_ERR_FORMAT);
  ck_assert_str_eq(ct_last_error(), "params buffer (1000 bytes): tensor 3 ('p4'): claims 737280 "
                                    "data bytes, 360 remain at offset 640: the input is cut short");
  ck_assert_int_eq(s.begins, 1);
  ck_assert_uint_eq(s.info.count, 8);
  ck_assert_uint_eq(s.n, 3);
  ck_assert_str_eq(s.e[2].name, "p1");
  free(p);
}
END_TEST

START_TEST(one_tensor_is_held_at_a_time_and_all_are_freed) {
  ct_memory_stats before, after;
  ck_assert_int_eq(ct_memory_stats_get(ct_cpu(), &before), CT_OK);
  ct_memory_reset_peak(ct_cpu());
  seen s = {0};
  ct_params_visitor v = visitor_of(&s);
  ck_assert_int_eq(ct_params_inspect(real_path, &v), CT_OK);
  ck_assert_int_eq(ct_memory_stats_get(ct_cpu(), &after), CT_OK);
  /* The peak is the largest tensor alone (p4, 737280 bytes), never two at once. */
  ck_assert_uint_eq(after.peak - before.allocated, 737280);
  ck_assert_uint_eq(after.allocated, before.allocated);
  ck_assert_uint_eq(after.allocs - before.allocs, 8);
  ck_assert_uint_eq(after.frees - before.frees, 8);
}
END_TEST

START_TEST(a_shared_tensor_outlives_the_call) {
  seen s = {0};
  s.keep = ct_tensor_new();
  s.keep_name = "p5";
  ct_params_visitor v = visitor_of(&s);
  ck_assert_int_eq(ct_params_inspect(real_path, &v), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(s.keep), CT_DIMS(1, 128)));
  const unsigned char *data = ct_tensor_data(s.keep, CT_FLOAT32);
  ck_assert_ptr_nonnull(data);
  ck_assert_uint_eq(crc32_of(data, 512), 0xb2708de5u);
  ct_tensor_free(s.keep);
}
END_TEST

/* ---- Inputs built here ----------------------------------------------------------------------- */

START_TEST(a_small_dictionary_lists_names_dtypes_dims_and_offsets) {
  write_small_file();
  seen s = {0};
  ct_params_visitor v = visitor_of(&s);
  ck_assert_msg(ct_params_inspect(small_path, &v) == CT_OK, "%s", ct_last_error());
  ck_assert_int_eq(s.info.kind, CT_PARAMS_DICT);
  ck_assert_uint_eq(s.info.count, 2);
  ck_assert_uint_eq(s.info.nbytes, 149);
  ck_assert_uint_eq(s.n, 2);
  ck_assert_str_eq(s.e[0].name, "a");
  ck_assert_int_eq(s.e[0].dtype, CT_INT8);
  ck_assert(ct_ddim_equal(s.e[0].dims, CT_DIMS(3)));
  ck_assert_uint_eq(s.e[0].nbytes, 3);
  ck_assert_uint_eq(s.e[0].offset, 50);
  ck_assert_uint_eq(s.e[0].data_offset, 98);
  ck_assert_str_eq(s.e[1].name, "b");
  ck_assert_int_eq(s.e[1].dtype, CT_INT64);
  ck_assert(ct_ddim_equal(s.e[1].dims, CT_DIMS()));
  ck_assert_uint_eq(s.e[1].nbytes, 8);
  ck_assert_uint_eq(s.e[1].offset, 101);
  ck_assert_uint_eq(s.e[1].data_offset, 141);
  ck_assert_uint_eq(s.e[1].first_bits, 7);
  remove_work_dir();
}
END_TEST

START_TEST(an_mxnet_file_is_refused_before_anything_is_shown) {
  static const unsigned char mxnet[16] = {0x12, 0x01};
  seen s = {0};
  ct_params_visitor v = visitor_of(&s);
  ck_assert_int_eq(ct_params_inspect_memory(mxnet, sizeof mxnet, &v), CT_ERR_FORMAT);
  ck_assert_ptr_nonnull(strstr(ct_last_error(),
                               "params buffer (16 bytes): starts with magic 0x112 at offset 0: "
                               "it is an MXNet .params file"));
  ck_assert_int_eq(s.begins, 0);
  ck_assert_uint_eq(s.n, 0);
}
END_TEST

START_TEST(bad_arguments_and_missing_files_are_named) {
  seen s = {0};
  ct_params_visitor v = visitor_of(&s);
  ck_assert_int_eq(ct_params_inspect(NULL, &v), CT_ERR_INVALID_ARGUMENT);
  ck_assert_str_eq(ct_last_error(),
                   "ct_params_inspect: the path is NULL: give the path of a parameter file");
  ck_assert_int_eq(ct_params_inspect_memory(NULL, 3, &v), CT_ERR_INVALID_ARGUMENT);
  ck_assert_str_eq(ct_last_error(), "ct_params_inspect_memory: the buffer is NULL but len is 3: "
                                    "pass the bytes, or len 0");
  /* NULL with len 0 is an empty input, which is too short to be a parameter file. */
  ck_assert_int_eq(ct_params_inspect_memory(NULL, 0, &v), CT_ERR_FORMAT);
  ck_assert_int_eq(ct_params_inspect("no-such-dir/missing.params", &v), CT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "params file 'no-such-dir/missing.params': cannot "
                                                "open it"));
  ck_assert_int_eq(ct_params_inspect(".", &v), CT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "is not a regular file but a directory"));
  ck_assert_int_eq(s.begins, 0);
}
END_TEST

START_TEST(an_entry_function_that_fails_stops_the_read_and_is_named) {
  char want[512];
  write_small_file();
  seen s = {.fail_with = CT_ERR_NOT_FOUND, .fail_at = 0};
  ct_params_visitor v = visitor_of(&s);
  ck_assert_int_eq(ct_params_inspect(small_path, &v), CT_ERR_NOT_FOUND);
  ck_assert_uint_eq(s.n, 1);
  snprintf(want, sizeof want,
           "params file '%s': tensor 0 ('a'): the visitor's entry function returned -3 (not "
           "found): the read stopped there; record a message with the status to say why",
           small_path);
  ck_assert_str_eq(ct_last_error(), want);
  remove_work_dir();
}
END_TEST

START_TEST(a_visitor_message_is_kept) {
  write_small_file();
  seen s = {.fail_with = CT_ERR_INVALID_ARGUMENT, .fail_at = 1, .record_own_error = true};
  ct_params_visitor v = visitor_of(&s);
  ck_assert_int_eq(ct_params_inspect(small_path, &v), CT_ERR_INVALID_ARGUMENT);
  ck_assert_uint_eq(s.n, 2);
  ck_assert_str_eq(ct_last_error(), "ct_tensor_data: the tensor is NULL");
  remove_work_dir();
}
END_TEST

START_TEST(a_begin_function_that_fails_shows_no_entry) {
  write_small_file();
  seen s = {.fail_with = CT_ERR_UNSUPPORTED, .fail_in_begin = true};
  ct_params_visitor v = visitor_of(&s);
  ck_assert_int_eq(ct_params_inspect(small_path, &v), CT_ERR_UNSUPPORTED);
  ck_assert_int_eq(s.begins, 1);
  ck_assert_uint_eq(s.n, 0);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "the visitor's begin function returned -10 "
                                                "(unsupported)"));
  remove_work_dir();
}
END_TEST

START_TEST(a_null_visitor_only_checks_the_file) {
  write_small_file();
  ck_assert_int_eq(ct_params_inspect(small_path, NULL), CT_OK);
  size_t len;
  unsigned char *p = read_all(small_path, &len);
  ck_assert_uint_eq(len, 149);
  ck_assert_int_eq(ct_params_inspect_memory(p, len, NULL), CT_OK);
  ck_assert_int_eq(ct_params_inspect_memory(p, len - 1, NULL), CT_ERR_FORMAT);
  ck_assert_str_eq(ct_last_error(), "params buffer (148 bytes): tensor 1 ('b'): claims 8 data "
                                    "bytes, 7 remain at offset 141: the input is cut short");
  /* A visitor with neither function behaves the same. */
  ct_params_visitor none = {.begin = NULL, .entry = NULL, .ctx = NULL};
  ck_assert_int_eq(ct_params_inspect_memory(p, len, &none), CT_OK);
  free(p);
  remove_work_dir();
}
END_TEST

static Suite *params_inspect_suite(bool real) {
  Suite *s = suite_create("params_inspect");
  if (real) {
    CT_ADD_TEST(s, a_real_dictionary_lists_every_entry_in_file_order);
    CT_ADD_TEST(s, the_same_bytes_in_memory_list_the_same);
    CT_ADD_TEST(s, a_single_tensor_file_lists_one_unnamed_entry_at_offset_0);
    CT_ADD_TEST(s, a_file_cut_short_fails_naming_the_entry_after_showing_the_ones_before);
    CT_ADD_TEST(s, one_tensor_is_held_at_a_time_and_all_are_freed);
    CT_ADD_TEST(s, a_shared_tensor_outlives_the_call);
  }
  CT_ADD_TEST(s, a_small_dictionary_lists_names_dtypes_dims_and_offsets);
  CT_ADD_TEST(s, an_mxnet_file_is_refused_before_anything_is_shown);
  CT_ADD_TEST(s, bad_arguments_and_missing_files_are_named);
  CT_ADD_TEST(s, an_entry_function_that_fails_stops_the_read_and_is_named);
  CT_ADD_TEST(s, a_visitor_message_is_kept);
  CT_ADD_TEST(s, a_begin_function_that_fails_shows_no_entry);
  CT_ADD_TEST(s, a_null_visitor_only_checks_the_file);
  return s;
}

int main(void) {
  const char *dir = getenv("CORTEN_PARAMS_DIR");
  bool real = false;
  if (dir != NULL && dir[0] != '\0') {
    snprintf(real_path, sizeof real_path, "%s/%s", dir, REAL_FILE);
    real = access(real_path, R_OK) == 0;
  }
  SRunner *sr = srunner_create(params_inspect_suite(real));
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  if (failed != 0) return EXIT_FAILURE;
  if (!real) {
    printf("SKIPPED the real-file tests: no readable %s in CORTEN_PARAMS_DIR ('%s')\n", REAL_FILE,
           dir != NULL ? dir : "");
    return 77;
  }
  return EXIT_SUCCESS;
}
