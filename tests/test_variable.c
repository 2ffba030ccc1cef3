/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_variable.c: standalone variables holding values behind ct_type descriptors. */
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "harness.h"

/* ---- A user type that owns heap memory and counts its lifecycle calls ----------------------- */

typedef struct vocab {
  int *ids;  /* malloc'd in init, freed in destroy */
  size_t n;
  int magic;
} vocab;

static int vocab_inits;
static int vocab_destroys;
static int vocab_storage_was_zero; /* init saw zero-filled storage every time */

static void vocab_init(void *obj) {
  static const vocab zero;
  vocab *v = obj;
  if (memcmp(v, &zero, sizeof zero) != 0) vocab_storage_was_zero = 0;
  v->n = 16;
  v->ids = malloc(v->n * sizeof *v->ids);
  for (size_t i = 0; i < v->n; i++) v->ids[i] = (int)i;
  v->magic = 0x5eed;
  vocab_inits++;
}

static void vocab_destroy(void *obj) {
  vocab *v = obj;
  free(v->ids);
  v->ids = NULL;
  vocab_destroys++;
}

static const ct_type vocab_type = {"my_vocab", sizeof(vocab), alignof(vocab), vocab_init,
                                   vocab_destroy};

static void reset_counters(void) {
  vocab_inits = 0;
  vocab_destroys = 0;
  vocab_storage_was_zero = 1;
}

/* Same fields as ct_int64_type but another address, hence another type. */
static const ct_type fake_int64_type = {"int64_lookalike", sizeof(int64_t), alignof(int64_t), NULL,
                                        NULL};

typedef struct big_blob {
  unsigned char bytes[4096];
} big_blob;
static const ct_type big_type = {"big_blob", sizeof(big_blob), 0, NULL, NULL};

typedef struct wide {
  double lanes[8];
} wide;
static const ct_type aligned64_type = {"aligned64", sizeof(wide), 64, NULL, NULL};
static const ct_type aligned256_type = {"aligned256", 24, 256, NULL, NULL};
static const ct_type default_align_type = {"default_align", 3, 0, NULL, NULL};

static const ct_type zero_size_type = {"zero_size", 0, 8, NULL, NULL};
static const ct_type align3_type = {"align3", 8, 3, NULL, NULL};
static const ct_type huge_type = {"huge", SIZE_MAX, 0, NULL, NULL};

/* ---- Empty variables ------------------------------------------------------------------------- */

START_TEST(test_new_is_empty) {
  ct_var *v = ct_var_new();
  ck_assert_ptr_nonnull(v);
  ck_assert_ptr_null(ct_var_type(v));
  ck_assert(!ct_var_is(v, &ct_int64_type));
  ck_assert(!ct_var_is(v, &ct_tensor_type));
  ct_var_free(v);
}
END_TEST

START_TEST(test_get_on_empty_is_uninitialized) {
  ct_var *v = ct_var_new();
  CT_ASSERT_NULL_FAILS(ct_var_get(v, &ct_int64_type), CT_ERR_UNINITIALIZED);
  ck_assert_ptr_null(ct_var_type(v)); /* get never creates */
  ct_var_free(v);
}
END_TEST

START_TEST(test_standalone_name_is_empty) {
  ct_var *v = ct_var_new();
  ck_assert_str_eq(ct_var_name(v), "");
  ck_assert_str_eq(ct_var_name(NULL), "");
  ct_var_free(v);
}
END_TEST

/* ---- get_mutable creates lazily -------------------------------------------------------------- */

START_TEST(test_get_mutable_creates_value) {
  ct_var *v = ct_var_new();
  int64_t *p = ct_var_get_mutable(v, &ct_int64_type);
  ck_assert_ptr_nonnull(p);
  ck_assert_ptr_eq(ct_var_type(v), &ct_int64_type);
  ck_assert(ct_var_is(v, &ct_int64_type));
  ck_assert(!ct_var_is(v, &ct_tensor_type));
  ct_var_free(v);
}
END_TEST

START_TEST(test_get_mutable_returns_same_pointer_twice) {
  ct_var *v = ct_var_new();
  void *a = ct_var_get_mutable(v, &vocab_type);
  void *b = ct_var_get_mutable(v, &vocab_type);
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_eq(a, b);
  ck_assert_ptr_eq(ct_var_get(v, &vocab_type), a);
  ct_var_free(v);
}
END_TEST

START_TEST(test_int64_starts_at_zero_and_round_trips) {
  ct_var *v = ct_var_new();
  int64_t *p = ct_var_get_mutable(v, &ct_int64_type);
  const int64_t *q;
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(*p, 0);
  *p = INT64_C(-1234567890123);
  q = ct_var_get(v, &ct_int64_type);
  ck_assert_ptr_eq(q, p);
  ck_assert_int_eq(*q, INT64_C(-1234567890123));
  ck_assert_int_eq(*(int64_t *)ct_var_get_mutable(v, &ct_int64_type), INT64_C(-1234567890123));
  ct_var_free(v);
}
END_TEST

/* ---- User types with init and destroy -------------------------------------------------------- */

START_TEST(test_user_type_init_runs_once_on_zeroed_storage) {
  ct_var *v = ct_var_new();
  vocab *w;
  reset_counters();
  w = ct_var_get_mutable(v, &vocab_type);
  ck_assert_ptr_nonnull(w);
  ck_assert_int_eq(vocab_inits, 1);
  ck_assert_int_eq(vocab_storage_was_zero, 1);
  ck_assert_int_eq(w->magic, 0x5eed);
  ck_assert_int_eq(w->ids[15], 15);
  ck_assert_ptr_eq(ct_var_get_mutable(v, &vocab_type), w);
  ck_assert_int_eq(vocab_inits, 1);
  ck_assert_int_eq(vocab_destroys, 0);
  ct_var_free(v);
}
END_TEST

START_TEST(test_clear_runs_destroy_once) {
  ct_var *v = ct_var_new();
  reset_counters();
  ck_assert_ptr_nonnull(ct_var_get_mutable(v, &vocab_type));
  ct_var_clear(v);
  ck_assert_int_eq(vocab_destroys, 1);
  ck_assert_ptr_null(ct_var_type(v));
  ck_assert(!ct_var_is(v, &vocab_type));
  CT_ASSERT_NULL_FAILS(ct_var_get(v, &vocab_type), CT_ERR_UNINITIALIZED);
  ct_var_clear(v); /* empty: no-op */
  ck_assert_int_eq(vocab_destroys, 1);
  ct_var_free(v);
  ck_assert_int_eq(vocab_destroys, 1);
}
END_TEST

START_TEST(test_free_runs_destroy_once) {
  ct_var *v = ct_var_new();
  reset_counters();
  ck_assert_ptr_nonnull(ct_var_get_mutable(v, &vocab_type));
  ct_var_free(v);
  ck_assert_int_eq(vocab_inits, 1);
  ck_assert_int_eq(vocab_destroys, 1);
}
END_TEST

START_TEST(test_free_empty_runs_no_destroy) {
  ct_var *v = ct_var_new();
  reset_counters();
  ct_var_free(v);
  ck_assert_int_eq(vocab_destroys, 0);
}
END_TEST

START_TEST(test_get_mutable_after_clear_recreates) {
  ct_var *v = ct_var_new();
  vocab *w;
  reset_counters();
  w = ct_var_get_mutable(v, &vocab_type);
  ck_assert_ptr_nonnull(w);
  w->magic = 77;
  ct_var_clear(v);
  w = ct_var_get_mutable(v, &vocab_type);
  ck_assert_ptr_nonnull(w);
  ck_assert_int_eq(vocab_inits, 2);
  ck_assert_int_eq(vocab_storage_was_zero, 1);
  ck_assert_int_eq(w->magic, 0x5eed); /* a fresh value, not the old one */
  ct_var_free(v);
  ck_assert_int_eq(vocab_destroys, 2);
}
END_TEST

START_TEST(test_clear_allows_another_type) {
  ct_var *v = ct_var_new();
  int64_t *p;
  reset_counters();
  ck_assert_ptr_nonnull(ct_var_get_mutable(v, &vocab_type));
  ct_var_clear(v);
  p = ct_var_get_mutable(v, &ct_int64_type);
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(*p, 0);
  ck_assert_ptr_eq(ct_var_type(v), &ct_int64_type);
  ct_var_free(v);
  ck_assert_int_eq(vocab_destroys, 1);
}
END_TEST

/* ---- Type mismatch --------------------------------------------------------------------------- */

START_TEST(test_get_mutable_other_type_is_mismatch_and_keeps_value) {
  ct_var *v = ct_var_new();
  vocab *w;
  reset_counters();
  w = ct_var_get_mutable(v, &vocab_type);
  ck_assert_ptr_nonnull(w);
  w->ids[3] = 4242;
  CT_ASSERT_NULL_FAILS(ct_var_get_mutable(v, &ct_int64_type), CT_ERR_TYPE_MISMATCH);
  ck_assert_int_eq(vocab_destroys, 0);
  ck_assert_ptr_eq(ct_var_type(v), &vocab_type);
  ck_assert_ptr_eq(ct_var_get(v, &vocab_type), w);
  ck_assert_int_eq(w->magic, 0x5eed);
  ck_assert_int_eq(w->ids[3], 4242);
  ck_assert_int_eq(vocab_inits, 1);
  ct_var_free(v);
  ck_assert_int_eq(vocab_destroys, 1);
}
END_TEST

START_TEST(test_get_other_type_is_mismatch) {
  ct_var *v = ct_var_new();
  int64_t *p = ct_var_get_mutable(v, &ct_int64_type);
  ck_assert_ptr_nonnull(p);
  *p = 9;
  CT_ASSERT_NULL_FAILS(ct_var_get(v, &vocab_type), CT_ERR_TYPE_MISMATCH);
  ck_assert_int_eq(*(const int64_t *)ct_var_get(v, &ct_int64_type), 9);
  ct_var_free(v);
}
END_TEST

/* Identity is the descriptor's address, not its fields. */
START_TEST(test_lookalike_type_is_mismatch) {
  ct_var *v = ct_var_new();
  ck_assert_ptr_nonnull(ct_var_get_mutable(v, &ct_int64_type));
  ck_assert(!ct_var_is(v, &fake_int64_type));
  CT_ASSERT_NULL_FAILS(ct_var_get(v, &fake_int64_type), CT_ERR_TYPE_MISMATCH);
  CT_ASSERT_NULL_FAILS(ct_var_get_mutable(v, &fake_int64_type), CT_ERR_TYPE_MISMATCH);
  ct_var_free(v);
}
END_TEST

START_TEST(test_mismatch_message_names_both_types) {
  ct_var *v = ct_var_new();
  ck_assert_ptr_nonnull(ct_var_get_mutable(v, &vocab_type));
  ck_assert_ptr_null(ct_var_get_mutable(v, &big_type));
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "my_vocab"));
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "big_blob"));
  CT_ASSERT_NULL_FAILS(ct_var_get(v, &aligned64_type), CT_ERR_TYPE_MISMATCH);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "my_vocab"));
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "aligned64"));
  ct_var_free(v);
}
END_TEST

/* ---- Size and alignment ---------------------------------------------------------------------- */

START_TEST(test_large_type_is_zero_filled_and_writable) {
  ct_var *v = ct_var_new();
  big_blob *b = ct_var_get_mutable(v, &big_type);
  size_t i;
  ck_assert_ptr_nonnull(b);
  for (i = 0; i < sizeof b->bytes; i++) ck_assert_uint_eq(b->bytes[i], 0);
  memset(b->bytes, 0xab, sizeof b->bytes);
  b = (big_blob *)ct_var_get(v, &big_type);
  ck_assert_uint_eq(b->bytes[0], 0xab);
  ck_assert_uint_eq(b->bytes[4095], 0xab);
  ct_var_free(v);
}
END_TEST

START_TEST(test_align64_type_is_aligned) {
  ct_var *vars[16];
  int i;
  for (i = 0; i < 16; i++) {
    wide *w;
    vars[i] = ct_var_new();
    w = ct_var_get_mutable(vars[i], &aligned64_type);
    ck_assert_ptr_nonnull(w);
    ck_assert_uint_eq((uintptr_t)w % 64, 0);
    w->lanes[7] = 1.5; /* the whole object is writable */
  }
  for (i = 0; i < 16; i++) ct_var_free(vars[i]);
}
END_TEST

START_TEST(test_align256_type_is_aligned) {
  ct_var *vars[8];
  int i;
  for (i = 0; i < 8; i++) {
    unsigned char *p;
    vars[i] = ct_var_new();
    p = ct_var_get_mutable(vars[i], &aligned256_type);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq((uintptr_t)p % 256, 0);
    memset(p, 1, 24);
  }
  for (i = 0; i < 8; i++) ct_var_free(vars[i]);
}
END_TEST

START_TEST(test_align_zero_means_max_align) {
  ct_var *v = ct_var_new();
  unsigned char *p = ct_var_get_mutable(v, &default_align_type);
  ck_assert_ptr_nonnull(p);
  ck_assert_uint_eq((uintptr_t)p % alignof(max_align_t), 0);
  ck_assert_uint_eq(p[0] | p[1] | p[2], 0);
  ct_var_free(v);
}
END_TEST

START_TEST(test_zero_size_type_is_invalid) {
  ct_var *v = ct_var_new();
  CT_ASSERT_NULL_FAILS(ct_var_get_mutable(v, &zero_size_type), CT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(ct_var_type(v));
  ct_var_free(v);
}
END_TEST

START_TEST(test_non_power_of_two_align_is_invalid) {
  ct_var *v = ct_var_new();
  CT_ASSERT_NULL_FAILS(ct_var_get_mutable(v, &align3_type), CT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(ct_var_type(v));
  ct_var_free(v);
}
END_TEST

START_TEST(test_unallocatable_type_is_out_of_memory_and_stays_empty) {
  ct_var *v = ct_var_new();
  CT_ASSERT_NULL_FAILS(ct_var_get_mutable(v, &huge_type), CT_ERR_OUT_OF_MEMORY);
  ck_assert_ptr_null(ct_var_type(v));
  ck_assert_ptr_nonnull(ct_var_get_mutable(v, &ct_int64_type)); /* still usable */
  ct_var_free(v);
}
END_TEST

/* ---- NULL arguments -------------------------------------------------------------------------- */

START_TEST(test_get_mutable_null_args_are_invalid) {
  ct_var *v = ct_var_new();
  CT_ASSERT_NULL_FAILS(ct_var_get_mutable(NULL, &ct_int64_type), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_NULL_FAILS(ct_var_get_mutable(v, NULL), CT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(ct_var_type(v));
  ct_var_free(v);
}
END_TEST

START_TEST(test_get_null_args_are_invalid) {
  ct_var *v = ct_var_new();
  ck_assert_ptr_nonnull(ct_var_get_mutable(v, &ct_int64_type));
  CT_ASSERT_NULL_FAILS(ct_var_get(NULL, &ct_int64_type), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_NULL_FAILS(ct_var_get(v, NULL), CT_ERR_INVALID_ARGUMENT);
  ct_var_free(v);
}
END_TEST

START_TEST(test_queries_on_null_are_harmless) {
  ck_assert(!ct_var_is(NULL, &ct_int64_type));
  ck_assert_ptr_null(ct_var_type(NULL));
  ct_var_clear(NULL);
  ct_var_free(NULL);
  ck_assert_str_eq(ct_var_name(NULL), "");
}
END_TEST

START_TEST(test_is_with_null_type_is_false) {
  ct_var *v = ct_var_new();
  ck_assert(!ct_var_is(v, NULL));
  ck_assert_ptr_nonnull(ct_var_get_mutable(v, &ct_int64_type));
  ck_assert(!ct_var_is(v, NULL));
  ct_var_free(v);
}
END_TEST

/* ---- Tensor variables ------------------------------------------------------------------------ */

START_TEST(test_var_tensor_is_new_tensor_without_memory) {
  ct_var *v = ct_var_new();
  ct_tensor *t = ct_var_tensor(v);
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(ct_tensor_dims(t).rank, -1);
  ck_assert(!ct_tensor_has_memory(t));
  ck_assert_int_eq(ct_tensor_dtype(t), CT_DTYPE_UNDEFINED);
  ck_assert_ptr_eq(ct_var_type(v), &ct_tensor_type);
  ck_assert(ct_var_is(v, &ct_tensor_type));
  ck_assert_ptr_eq(ct_var_tensor(v), t);
  ck_assert_ptr_eq(ct_var_get_mutable(v, &ct_tensor_type), t);
  ct_var_free(v);
}
END_TEST

START_TEST(test_var_tensor_allocates_no_memory) {
  ct_memory_stats before, after;
  ct_var *v = ct_var_new();
  before = cpu_stats();
  ck_assert_ptr_nonnull(ct_var_tensor(v));
  after = cpu_stats();
  ck_assert_uint_eq(after.allocated, before.allocated);
  ck_assert_uint_eq(after.allocs, before.allocs);
  ct_var_free(v);
}
END_TEST

START_TEST(test_get_tensor) {
  ct_var *v = ct_var_new();
  ct_tensor *t;
  CT_ASSERT_NULL_FAILS(ct_var_get_tensor(v), CT_ERR_UNINITIALIZED);
  t = ct_var_tensor(v);
  ck_assert_ptr_nonnull(t);
  ck_assert_ptr_eq(ct_var_get_tensor(v), t);
  ck_assert_ptr_eq(ct_var_get(v, &ct_tensor_type), t);
  ct_var_free(v);
}
END_TEST

START_TEST(test_var_tensor_on_other_type_is_mismatch) {
  ct_var *v = ct_var_new();
  ck_assert_ptr_nonnull(ct_var_get_mutable(v, &ct_int64_type));
  CT_ASSERT_NULL_FAILS(ct_var_tensor(v), CT_ERR_TYPE_MISMATCH);
  CT_ASSERT_NULL_FAILS(ct_var_get_tensor(v), CT_ERR_TYPE_MISMATCH);
  ck_assert_ptr_eq(ct_var_type(v), &ct_int64_type);
  ct_var_free(v);
}
END_TEST

START_TEST(test_var_tensor_null_is_invalid) {
  CT_ASSERT_NULL_FAILS(ct_var_tensor(NULL), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_NULL_FAILS(ct_var_get_tensor(NULL), CT_ERR_INVALID_ARGUMENT);
}
END_TEST

/* Freeing the variable frees its tensor and hands the tensor's block back. */
START_TEST(test_free_releases_tensor_memory) {
  ct_memory_stats before, mid, after;
  ct_var *v = ct_var_new();
  ct_tensor *t = ct_var_tensor(v);
  float *data;
  before = cpu_stats();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(4, 8)), CT_OK);
  data = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu());
  ck_assert_ptr_nonnull(data);
  data[31] = 2.0f;
  mid = cpu_stats();
  ck_assert_uint_eq(mid.allocated, before.allocated + 128);
  ct_var_free(v);
  after = cpu_stats();
  ck_assert_uint_eq(after.allocated, before.allocated);
  ck_assert_uint_eq(after.frees, before.frees + 1);
}
END_TEST

START_TEST(test_clear_releases_tensor_memory) {
  ct_memory_stats before, after;
  ct_var *v = ct_var_new();
  ct_tensor *t = ct_var_tensor(v);
  before = cpu_stats();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(10)), CT_OK);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_INT64, ct_cpu()));
  ct_var_clear(v);
  after = cpu_stats();
  ck_assert_uint_eq(after.allocated, before.allocated);
  ck_assert_ptr_null(ct_var_type(v));
  t = ct_var_tensor(v); /* a fresh tensor again */
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(ct_tensor_dims(t).rank, -1);
  ck_assert(!ct_tensor_has_memory(t));
  ct_var_free(v);
}
END_TEST

/* The functions called by name (not through any inline fast path) behave the same. */
START_TEST(test_called_by_name_match_fast_paths) {
  ct_var *v = ct_var_new();
  ct_var *w = ct_var_new();
  void *p;
  ct_tensor *t;
  CT_ASSERT_NULL_FAILS((ct_var_get)(v, &ct_int64_type), CT_ERR_UNINITIALIZED);
  p = (ct_var_get_mutable)(v, &ct_int64_type);
  ck_assert_ptr_nonnull(p);
  ck_assert_ptr_eq((ct_var_get_mutable)(v, &ct_int64_type), p);
  ck_assert_ptr_eq((ct_var_get)(v, &ct_int64_type), p);
  ck_assert_ptr_eq(ct_var_get(v, &ct_int64_type), p);
  CT_ASSERT_NULL_FAILS((ct_var_get)(v, &vocab_type), CT_ERR_TYPE_MISMATCH);
  CT_ASSERT_NULL_FAILS((ct_var_tensor)(v), CT_ERR_TYPE_MISMATCH);
  t = (ct_var_tensor)(w);
  ck_assert_ptr_nonnull(t);
  ck_assert_ptr_eq((ct_var_get_tensor)(w), t);
  ck_assert_ptr_eq(ct_var_tensor(w), t);
  CT_ASSERT_NULL_FAILS((ct_var_get)(NULL, &ct_int64_type), CT_ERR_INVALID_ARGUMENT);
  ct_var_free(v);
  ct_var_free(w);
}
END_TEST

/* ---- Many variables -------------------------------------------------------------------------- */

START_TEST(test_variables_hold_independent_values) {
  ct_var *vars[64];
  int i;
  reset_counters();
  for (i = 0; i < 64; i++) {
    vars[i] = ct_var_new();
    ck_assert_ptr_nonnull(vars[i]);
    if (i % 2) {
      *(int64_t *)ct_var_get_mutable(vars[i], &ct_int64_type) = i;
    } else {
      ((vocab *)ct_var_get_mutable(vars[i], &vocab_type))->magic = i;
    }
  }
  for (i = 0; i < 64; i++) {
    if (i % 2) {
      ck_assert_int_eq(*(const int64_t *)ct_var_get(vars[i], &ct_int64_type), i);
    } else {
      ck_assert_int_eq(((const vocab *)ct_var_get(vars[i], &vocab_type))->magic, i);
    }
  }
  for (i = 0; i < 64; i++) ct_var_free(vars[i]);
  ck_assert_int_eq(vocab_inits, 32);
  ck_assert_int_eq(vocab_destroys, 32);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("variable");
  CT_ADD_TEST(s, test_new_is_empty);
  CT_ADD_TEST(s, test_get_on_empty_is_uninitialized);
  CT_ADD_TEST(s, test_standalone_name_is_empty);
  CT_ADD_TEST(s, test_get_mutable_creates_value);
  CT_ADD_TEST(s, test_get_mutable_returns_same_pointer_twice);
  CT_ADD_TEST(s, test_int64_starts_at_zero_and_round_trips);
  CT_ADD_TEST(s, test_user_type_init_runs_once_on_zeroed_storage);
  CT_ADD_TEST(s, test_clear_runs_destroy_once);
  CT_ADD_TEST(s, test_free_runs_destroy_once);
  CT_ADD_TEST(s, test_free_empty_runs_no_destroy);
  CT_ADD_TEST(s, test_get_mutable_after_clear_recreates);
  CT_ADD_TEST(s, test_clear_allows_another_type);
  CT_ADD_TEST(s, test_get_mutable_other_type_is_mismatch_and_keeps_value);
  CT_ADD_TEST(s, test_get_other_type_is_mismatch);
  CT_ADD_TEST(s, test_lookalike_type_is_mismatch);
  CT_ADD_TEST(s, test_mismatch_message_names_both_types);
  CT_ADD_TEST(s, test_large_type_is_zero_filled_and_writable);
  CT_ADD_TEST(s, test_align64_type_is_aligned);
  CT_ADD_TEST(s, test_align256_type_is_aligned);
  CT_ADD_TEST(s, test_align_zero_means_max_align);
  CT_ADD_TEST(s, test_zero_size_type_is_invalid);
  CT_ADD_TEST(s, test_non_power_of_two_align_is_invalid);
  CT_ADD_TEST(s, test_unallocatable_type_is_out_of_memory_and_stays_empty);
  CT_ADD_TEST(s, test_get_mutable_null_args_are_invalid);
  CT_ADD_TEST(s, test_get_null_args_are_invalid);
  CT_ADD_TEST(s, test_queries_on_null_are_harmless);
  CT_ADD_TEST(s, test_is_with_null_type_is_false);
  CT_ADD_TEST(s, test_var_tensor_is_new_tensor_without_memory);
  CT_ADD_TEST(s, test_var_tensor_allocates_no_memory);
  CT_ADD_TEST(s, test_get_tensor);
  CT_ADD_TEST(s, test_var_tensor_on_other_type_is_mismatch);
  CT_ADD_TEST(s, test_var_tensor_null_is_invalid);
  CT_ADD_TEST(s, test_free_releases_tensor_memory);
  CT_ADD_TEST(s, test_clear_releases_tensor_memory);
  CT_ADD_TEST(s, test_called_by_name_match_fast_paths);
  CT_ADD_TEST(s, test_variables_hold_independent_values);
  return s;
}

CT_TEST_MAIN(make_suite)
