/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_common.c: status codes, the thread-local last error, dtypes, places and dims. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <corten/corten.h>

#include "harness.h"

/* The codes and device kinds are part of the ABI (the kinds are DLPack's device codes). */
_Static_assert(CT_OK == 0 && CT_ERR_INVALID_ARGUMENT == -1 && CT_ERR_OUT_OF_MEMORY == -2 &&
                   CT_ERR_NOT_FOUND == -3 && CT_ERR_TYPE_MISMATCH == -4 &&
                   CT_ERR_UNINITIALIZED == -5 && CT_ERR_OUT_OF_RANGE == -6 &&
                   CT_ERR_ALREADY_EXISTS == -7 && CT_ERR_EXTERNAL_BUFFER == -8 &&
                   CT_ERR_SHAPE == -9 && CT_ERR_UNSUPPORTED == -10 && CT_ERR_DEVICE == -11 &&
                   CT_ERR_IO == -12 && CT_ERR_FORMAT == -13 && CT_ERR_READ_ONLY == -14,
               "status codes as in the contract");
_Static_assert(CT_DEVICE_CPU == 1 && CT_DEVICE_CUDA == 2 && CT_DEVICE_CUDA_HOST == 3,
               "device kinds are DLPack's codes");

/* ---- Status codes and strings ---------------------------------------------------------------- */

START_TEST(test_status_str_type_mismatch) {
  ck_assert_str_eq(ct_status_str(CT_ERR_TYPE_MISMATCH), "type mismatch");
}
END_TEST

/* Every code has its own non-empty text, distinct from the others and from "unknown status". */
START_TEST(test_status_str_distinct_for_every_code) {
  const char *texts[15];
  int i, j;
  for (i = 0; i < 15; i++) {
    texts[i] = ct_status_str((ct_status)(-i));
    ck_assert_ptr_nonnull(texts[i]);
    ck_assert_uint_gt(strlen(texts[i]), 0);
    ck_assert_str_ne(texts[i], "unknown status");
  }
  for (i = 0; i < 15; i++) {
    for (j = i + 1; j < 15; j++) ck_assert_str_ne(texts[i], texts[j]);
  }
}
END_TEST

START_TEST(test_status_str_unknown_outside_enum) {
  ck_assert_str_eq(ct_status_str((ct_status)1), "unknown status");
  ck_assert_str_eq(ct_status_str((ct_status)-15), "unknown status");
  ck_assert_str_eq(ct_status_str((ct_status)-1000), "unknown status");
  ck_assert_str_eq(ct_status_str((ct_status)12345), "unknown status");
}
END_TEST

/* ---- The last error -------------------------------------------------------------------------- */

typedef struct fresh_state {
  ct_status status;
  char text[64];
} fresh_state;

static void *read_fresh_state(void *arg) {
  fresh_state *st = arg;
  st->status = ct_last_status();
  strncpy(st->text, ct_last_error(), sizeof st->text - 1);
  st->text[sizeof st->text - 1] = '\0';
  return NULL;
}

/* A new thread has had no failure yet. */
START_TEST(test_last_error_before_first_failure_is_no_error) {
  pthread_t th;
  fresh_state st;
  memset(&st, 0, sizeof st);
  st.status = CT_ERR_FORMAT;
  ck_assert_int_eq(pthread_create(&th, NULL, read_fresh_state, &st), 0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert_int_eq(st.status, CT_OK);
  ck_assert_str_eq(st.text, "no error");
}
END_TEST

START_TEST(test_failure_sets_last_status_and_text) {
  CT_ASSERT_NULL_FAILS(ct_var_get(NULL, &ct_int64_type), CT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(ct_last_error());
  ck_assert_uint_gt(strlen(ct_last_error()), 0);
  ck_assert_str_ne(ct_last_error(), "no error");
}
END_TEST

START_TEST(test_clear_error_resets_status_and_text) {
  CT_ASSERT_NULL_FAILS(ct_var_get(NULL, &ct_int64_type), CT_ERR_INVALID_ARGUMENT);
  ct_clear_error();
  ck_assert_int_eq(ct_last_status(), CT_OK);
  ck_assert_str_eq(ct_last_error(), "no error");
}
END_TEST

/* A later failure replaces the earlier one. */
START_TEST(test_last_status_tracks_latest_failure) {
  ct_var *v = ct_var_new();
  ck_assert_ptr_nonnull(v);
  ck_assert_ptr_null(ct_var_get(NULL, &ct_int64_type));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(ct_var_get(v, &ct_int64_type));
  ck_assert_int_eq(ct_last_status(), CT_ERR_UNINITIALIZED);
  ct_var_free(v);
}
END_TEST

typedef struct other_thread_result {
  ct_status status;
} other_thread_result;

static void *fail_with_invalid_argument(void *arg) {
  other_thread_result *r = arg;
  (void)ct_var_get(NULL, &ct_int64_type);
  r->status = ct_last_status();
  return NULL;
}

/* Another thread's failure leaves this thread's last error alone. */
START_TEST(test_last_error_is_thread_local) {
  pthread_t th;
  other_thread_result r;
  ct_var *v = ct_var_new();
  char before[512];
  ck_assert_ptr_nonnull(v);
  CT_ASSERT_NULL_FAILS(ct_var_get(v, &ct_int64_type), CT_ERR_UNINITIALIZED);
  strncpy(before, ct_last_error(), sizeof before - 1);
  before[sizeof before - 1] = '\0';

  r.status = CT_OK;
  ck_assert_int_eq(pthread_create(&th, NULL, fail_with_invalid_argument, &r), 0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert_int_eq(r.status, CT_ERR_INVALID_ARGUMENT);

  ck_assert_int_eq(ct_last_status(), CT_ERR_UNINITIALIZED);
  ck_assert_str_eq(ct_last_error(), before);
  ct_var_free(v);
}
END_TEST

/* ---- Dtypes ---------------------------------------------------------------------------------- */

START_TEST(test_dtype_sizes) {
  ck_assert_uint_eq(ct_dtype_size(CT_BOOL), 1);
  ck_assert_uint_eq(ct_dtype_size(CT_INT8), 1);
  ck_assert_uint_eq(ct_dtype_size(CT_UINT8), 1);
  ck_assert_uint_eq(ct_dtype_size(CT_INT16), 2);
  ck_assert_uint_eq(ct_dtype_size(CT_FLOAT16), 2);
  ck_assert_uint_eq(ct_dtype_size(CT_BFLOAT16), 2);
  ck_assert_uint_eq(ct_dtype_size(CT_INT32), 4);
  ck_assert_uint_eq(ct_dtype_size(CT_FLOAT32), 4);
  ck_assert_uint_eq(ct_dtype_size(CT_INT64), 8);
  ck_assert_uint_eq(ct_dtype_size(CT_FLOAT64), 8);
  ck_assert_uint_eq(ct_dtype_size(CT_UINT16), 2);
  ck_assert_uint_eq(ct_dtype_size(CT_UINT32), 4);
  ck_assert_uint_eq(ct_dtype_size(CT_UINT64), 8);
}
END_TEST

START_TEST(test_dtype_size_undefined_and_out_of_range_is_zero) {
  ck_assert_uint_eq(ct_dtype_size(CT_DTYPE_UNDEFINED), 0);
  ck_assert_uint_eq(ct_dtype_size((ct_dtype)(CT_UINT64 + 1)), 0);
  ck_assert_uint_eq(ct_dtype_size((ct_dtype)100), 0);
  ck_assert_uint_eq(ct_dtype_size((ct_dtype)-1), 0);
}
END_TEST

START_TEST(test_dtype_names) {
  ck_assert_str_eq(ct_dtype_name(CT_BOOL), "bool");
  ck_assert_str_eq(ct_dtype_name(CT_INT8), "int8");
  ck_assert_str_eq(ct_dtype_name(CT_UINT8), "uint8");
  ck_assert_str_eq(ct_dtype_name(CT_INT16), "int16");
  ck_assert_str_eq(ct_dtype_name(CT_INT32), "int32");
  ck_assert_str_eq(ct_dtype_name(CT_INT64), "int64");
  ck_assert_str_eq(ct_dtype_name(CT_FLOAT16), "float16");
  ck_assert_str_eq(ct_dtype_name(CT_BFLOAT16), "bfloat16");
  ck_assert_str_eq(ct_dtype_name(CT_FLOAT32), "float32");
  ck_assert_str_eq(ct_dtype_name(CT_FLOAT64), "float64");
  ck_assert_str_eq(ct_dtype_name(CT_UINT16), "uint16");
  ck_assert_str_eq(ct_dtype_name(CT_UINT32), "uint32");
  ck_assert_str_eq(ct_dtype_name(CT_UINT64), "uint64");
}
END_TEST

/* The enum is ABI: uint16, uint32 and uint64 came after float64, and nothing before moved. */
START_TEST(test_dtype_values_are_stable) {
  ck_assert_int_eq(CT_BOOL, 1);
  ck_assert_int_eq(CT_INT8, 2);
  ck_assert_int_eq(CT_UINT8, 3);
  ck_assert_int_eq(CT_INT16, 4);
  ck_assert_int_eq(CT_INT32, 5);
  ck_assert_int_eq(CT_INT64, 6);
  ck_assert_int_eq(CT_FLOAT16, 7);
  ck_assert_int_eq(CT_BFLOAT16, 8);
  ck_assert_int_eq(CT_FLOAT32, 9);
  ck_assert_int_eq(CT_FLOAT64, 10);
  ck_assert_int_eq(CT_UINT16, 11);
  ck_assert_int_eq(CT_UINT32, 12);
  ck_assert_int_eq(CT_UINT64, 13);
}
END_TEST

START_TEST(test_dtype_name_undefined_and_invalid) {
  ck_assert_str_eq(ct_dtype_name(CT_DTYPE_UNDEFINED), "undefined");
  ck_assert_str_eq(ct_dtype_name((ct_dtype)(CT_UINT64 + 1)), "invalid");
  ck_assert_str_eq(ct_dtype_name((ct_dtype)100), "invalid");
  ck_assert_str_eq(ct_dtype_name((ct_dtype)-1), "invalid");
}
END_TEST

/* ---- Places ---------------------------------------------------------------------------------- */

START_TEST(test_place_constructors) {
  ct_place p = ct_cpu();
  ck_assert_int_eq(p.kind, CT_DEVICE_CPU);
  ck_assert_int_eq(p.device, 0);
  p = ct_cuda(3);
  ck_assert_int_eq(p.kind, CT_DEVICE_CUDA);
  ck_assert_int_eq(p.device, 3);
  p = ct_cuda_host();
  ck_assert_int_eq(p.kind, CT_DEVICE_CUDA_HOST);
  ck_assert_int_eq(p.device, 0);
}
END_TEST

START_TEST(test_place_equal_same_kind_and_device) {
  ck_assert(ct_place_equal(ct_cpu(), ct_cpu()));
  ck_assert(ct_place_equal(ct_cuda(1), ct_cuda(1)));
  ck_assert(ct_place_equal(ct_cuda_host(), ct_cuda_host()));
  ck_assert(!ct_place_equal(ct_cuda(0), ct_cuda(1)));
  ck_assert(!ct_place_equal(ct_cpu(), ct_cuda(0)));
  ck_assert(!ct_place_equal(ct_cpu(), ct_cuda_host()));
  ck_assert(!ct_place_equal(ct_cuda_host(), ct_cuda(0)));
}
END_TEST

START_TEST(test_place_equal_host_ignores_device_field) {
  ct_place cpu5 = {CT_DEVICE_CPU, 5};
  ct_place host2 = {CT_DEVICE_CUDA_HOST, 2};
  ck_assert(ct_place_equal(cpu5, ct_cpu()));
  ck_assert(ct_place_equal(ct_cpu(), cpu5));
  ck_assert(ct_place_equal(host2, ct_cuda_host()));
  ck_assert(!ct_place_equal(cpu5, host2));
}
END_TEST

START_TEST(test_place_str) {
  char buf[64];
  ct_place bad = {(ct_device_kind)7, 0};
  ck_assert_ptr_eq(ct_place_str(ct_cpu(), buf, sizeof buf), buf);
  ck_assert_str_eq(buf, "cpu");
  ck_assert_str_eq(ct_place_str(ct_cuda(1), buf, sizeof buf), "cuda:1");
  ck_assert_str_eq(ct_place_str(ct_cuda(0), buf, sizeof buf), "cuda:0");
  ck_assert_str_eq(ct_place_str(ct_cuda_host(), buf, sizeof buf), "cuda_host");
  ck_assert_str_eq(ct_place_str(bad, buf, sizeof buf), "invalid place (kind 7)");
}
END_TEST

START_TEST(test_place_str_truncates_and_terminates) {
  char buf[8];
  memset(buf, 'x', sizeof buf);
  ck_assert_ptr_eq(ct_place_str(ct_cuda_host(), buf, 4), buf);
  ck_assert_str_eq(buf, "cud");
  ck_assert_int_eq(buf[4], 'x'); /* nothing written past cap */
  ct_place_str(ct_cpu(), buf, 1);
  ck_assert_str_eq(buf, "");
}
END_TEST

START_TEST(test_place_str_cap_zero_writes_nothing) {
  char buf[4] = {'x', 'x', 'x', 'x'};
  ck_assert_ptr_eq(ct_place_str(ct_cpu(), buf, 0), buf);
  ck_assert_int_eq(buf[0], 'x');
}
END_TEST

START_TEST(test_cuda_device_count_is_zero_without_cuda) {
  if (ct_cuda_is_built()) { /* a CUDA build: as many as the machine has, none here in CI */
    ck_assert_int_ge(ct_cuda_device_count(), 0);
    return;
  }
  ck_assert_int_eq(ct_cuda_device_count(), 0);
}
END_TEST

/* ---- Dims ------------------------------------------------------------------------------------ */

START_TEST(test_dims_macro_builds_extents) {
  ct_ddim d = CT_DIMS(2, 3, 4);
  ck_assert_int_eq(d.rank, 3);
  ck_assert_int_eq(d.d[0], 2);
  ck_assert_int_eq(d.d[1], 3);
  ck_assert_int_eq(d.d[2], 4);
}
END_TEST

START_TEST(test_dims_macro_empty_is_scalar) {
  ct_ddim d = CT_DIMS();
  ck_assert_int_eq(d.rank, 0);
  ck_assert_int_eq(ct_ddim_numel(d), 1);
}
END_TEST

START_TEST(test_dims_macro_max_rank) {
  ct_ddim d = CT_DIMS(1, 2, 3, 4, 5, 6, 7, 8, 9);
  int i;
  ck_assert_int_eq(d.rank, CT_MAX_RANK);
  for (i = 0; i < CT_MAX_RANK; i++) ck_assert_int_eq(d.d[i], i + 1);
  ck_assert_int_eq(ct_ddim_numel(d), 362880);
}
END_TEST

START_TEST(test_dims_macro_beyond_max_rank_keeps_rank) {
  ct_ddim d = CT_DIMS(1, 2, 3, 4, 5, 6, 7, 8, 9, 10);
  ck_assert_int_eq(d.rank, 10);
  ck_assert_int_eq(ct_ddim_numel(d), -1);
}
END_TEST

START_TEST(test_ddim_make_from_array) {
  const int64_t ext[] = {5, 6, 7, 8};
  ct_ddim d = ct_ddim_make(ext, 4);
  ck_assert_int_eq(d.rank, 4);
  ck_assert_int_eq(d.d[0], 5);
  ck_assert_int_eq(d.d[1], 6);
  ck_assert_int_eq(d.d[2], 7);
  ck_assert_int_eq(d.d[3], 8);
  ck_assert(ct_ddim_equal(d, CT_DIMS(5, 6, 7, 8)));
  ck_assert_int_eq(ct_ddim_numel(d), 1680);
}
END_TEST

START_TEST(test_ddim_make_rank_zero) {
  const int64_t ext[] = {9};
  ct_ddim d = ct_ddim_make(ext, 0);
  ck_assert_int_eq(d.rank, 0);
  ck_assert(ct_ddim_equal(d, CT_DIMS()));
}
END_TEST

START_TEST(test_ddim_make_negative_n_is_unset) {
  const int64_t ext[] = {1, 2};
  ct_ddim d = ct_ddim_make(ext, -3);
  ck_assert_int_eq(d.rank, -1);
  ck_assert_int_eq(ct_ddim_numel(d), -1);
}
END_TEST

START_TEST(test_ddim_make_beyond_max_rank_keeps_rank) {
  const int64_t ext[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  ct_ddim d = ct_ddim_make(ext, 12);
  ck_assert_int_eq(d.rank, 12);
  ck_assert_int_eq(ct_ddim_numel(d), -1);
}
END_TEST

START_TEST(test_ddim_numel_product) {
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(2, 3, 4)), 24);
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(7)), 7);
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(1, 1, 1)), 1);
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(3, 0, 5)), 0);
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(1024, 1024, 1024)), INT64_C(1073741824));
}
END_TEST

START_TEST(test_ddim_numel_negative_extent_is_minus_one) {
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(2, -3)), -1);
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(-1)), -1);
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(0, -1)), -1);
}
END_TEST

START_TEST(test_ddim_numel_unset_is_minus_one) {
  ct_ddim d = CT_DIMS();
  d.rank = -1;
  ck_assert_int_eq(ct_ddim_numel(d), -1);
}
END_TEST

START_TEST(test_ddim_numel_overflow_is_minus_one) {
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(INT64_MAX, 2)), -1);
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(INT64_C(1) << 32, INT64_C(1) << 32)), -1);
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(INT64_MAX, 1)), INT64_MAX);
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(INT64_C(1) << 31, INT64_C(1) << 31)), INT64_C(1) << 62);
}
END_TEST

START_TEST(test_ddim_equal_same_rank_and_extents) {
  ck_assert(ct_ddim_equal(CT_DIMS(2, 3, 4), CT_DIMS(2, 3, 4)));
  ck_assert(ct_ddim_equal(CT_DIMS(), CT_DIMS()));
  ck_assert(!ct_ddim_equal(CT_DIMS(2, 3, 4), CT_DIMS(2, 3, 5)));
  ck_assert(!ct_ddim_equal(CT_DIMS(2, 3, 4), CT_DIMS(2, 3)));
  ck_assert(!ct_ddim_equal(CT_DIMS(2, 3), CT_DIMS(3, 2)));
  ck_assert(!ct_ddim_equal(CT_DIMS(), CT_DIMS(1)));
}
END_TEST

START_TEST(test_ddim_equal_ignores_extents_beyond_rank) {
  ct_ddim a = CT_DIMS(2, 3);
  ct_ddim b = CT_DIMS(2, 3);
  a.d[2] = 11;
  a.d[8] = 99;
  b.d[5] = 42;
  ck_assert(ct_ddim_equal(a, b));
}
END_TEST

START_TEST(test_ddim_equal_unset) {
  ct_ddim a = CT_DIMS(1, 2);
  ct_ddim b = CT_DIMS(7);
  a.rank = -1;
  b.rank = -1;
  ck_assert(ct_ddim_equal(a, b));
  ck_assert(!ct_ddim_equal(a, CT_DIMS()));
}
END_TEST

START_TEST(test_ddim_str) {
  char buf[64];
  const int64_t ext[] = {1};
  ct_ddim unset = ct_ddim_make(ext, -1);
  ck_assert_ptr_eq(ct_ddim_str(CT_DIMS(2, 3, 4), buf, sizeof buf), buf);
  ck_assert_str_eq(buf, "[2,3,4]");
  ck_assert_str_eq(ct_ddim_str(CT_DIMS(), buf, sizeof buf), "[]");
  ck_assert_str_eq(ct_ddim_str(CT_DIMS(7), buf, sizeof buf), "[7]");
  ck_assert_str_eq(ct_ddim_str(CT_DIMS(0, 12345678901), buf, sizeof buf), "[0,12345678901]");
  ck_assert_str_eq(ct_ddim_str(unset, buf, sizeof buf), "unset");
}
END_TEST

START_TEST(test_ddim_str_max_rank) {
  char buf[64];
  ck_assert_str_eq(ct_ddim_str(CT_DIMS(1, 2, 3, 4, 5, 6, 7, 8, 9), buf, sizeof buf),
                   "[1,2,3,4,5,6,7,8,9]");
}
END_TEST

START_TEST(test_ddim_str_truncates_and_terminates) {
  char buf[16];
  memset(buf, 'x', sizeof buf);
  ck_assert_ptr_eq(ct_ddim_str(CT_DIMS(2, 3, 4), buf, 5), buf);
  ck_assert_str_eq(buf, "[2,3");
  ck_assert_int_eq(buf[5], 'x'); /* nothing written past cap */
  ck_assert_str_eq(ct_ddim_str(CT_DIMS(2, 3, 4), buf, 1), "");
  ck_assert_str_eq(ct_ddim_str(CT_DIMS(2, 3, 4), buf, 8), "[2,3,4]");
  ck_assert_str_eq(ct_ddim_str(CT_DIMS(2, 3, 4), buf, 7), "[2,3,4");
}
END_TEST

START_TEST(test_ddim_str_cap_zero_writes_nothing) {
  char buf[4] = {'x', 'x', 'x', 'x'};
  ck_assert_ptr_eq(ct_ddim_str(CT_DIMS(2, 3), buf, 0), buf);
  ck_assert_int_eq(buf[0], 'x');
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("common");
  CT_ADD_TEST(s, test_status_str_type_mismatch);
  CT_ADD_TEST(s, test_status_str_distinct_for_every_code);
  CT_ADD_TEST(s, test_status_str_unknown_outside_enum);
  CT_ADD_TEST(s, test_last_error_before_first_failure_is_no_error);
  CT_ADD_TEST(s, test_failure_sets_last_status_and_text);
  CT_ADD_TEST(s, test_clear_error_resets_status_and_text);
  CT_ADD_TEST(s, test_last_status_tracks_latest_failure);
  CT_ADD_TEST(s, test_last_error_is_thread_local);
  CT_ADD_TEST(s, test_dtype_sizes);
  CT_ADD_TEST(s, test_dtype_size_undefined_and_out_of_range_is_zero);
  CT_ADD_TEST(s, test_dtype_names);
  CT_ADD_TEST(s, test_dtype_name_undefined_and_invalid);
  CT_ADD_TEST(s, test_dtype_values_are_stable);
  CT_ADD_TEST(s, test_place_constructors);
  CT_ADD_TEST(s, test_place_equal_same_kind_and_device);
  CT_ADD_TEST(s, test_place_equal_host_ignores_device_field);
  CT_ADD_TEST(s, test_place_str);
  CT_ADD_TEST(s, test_place_str_truncates_and_terminates);
  CT_ADD_TEST(s, test_place_str_cap_zero_writes_nothing);
  CT_ADD_TEST(s, test_cuda_device_count_is_zero_without_cuda);
  CT_ADD_TEST(s, test_dims_macro_builds_extents);
  CT_ADD_TEST(s, test_dims_macro_empty_is_scalar);
  CT_ADD_TEST(s, test_dims_macro_max_rank);
  CT_ADD_TEST(s, test_dims_macro_beyond_max_rank_keeps_rank);
  CT_ADD_TEST(s, test_ddim_make_from_array);
  CT_ADD_TEST(s, test_ddim_make_rank_zero);
  CT_ADD_TEST(s, test_ddim_make_negative_n_is_unset);
  CT_ADD_TEST(s, test_ddim_make_beyond_max_rank_keeps_rank);
  CT_ADD_TEST(s, test_ddim_numel_product);
  CT_ADD_TEST(s, test_ddim_numel_negative_extent_is_minus_one);
  CT_ADD_TEST(s, test_ddim_numel_unset_is_minus_one);
  CT_ADD_TEST(s, test_ddim_numel_overflow_is_minus_one);
  CT_ADD_TEST(s, test_ddim_equal_same_rank_and_extents);
  CT_ADD_TEST(s, test_ddim_equal_ignores_extents_beyond_rank);
  CT_ADD_TEST(s, test_ddim_equal_unset);
  CT_ADD_TEST(s, test_ddim_str);
  CT_ADD_TEST(s, test_ddim_str_max_rank);
  CT_ADD_TEST(s, test_ddim_str_truncates_and_terminates);
  CT_ADD_TEST(s, test_ddim_str_cap_zero_writes_nothing);
  return s;
}

CT_TEST_MAIN(make_suite)
