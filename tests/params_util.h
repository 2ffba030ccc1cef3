/* SPDX-License-Identifier: Apache-2.0 */
/* The helpers of the parameter-file suites (test_params*.c): inputs built byte by byte (the
 * records and dictionaries of the format, and the sample entries w, b and flag), and checks of
 * what a load gives or must leave unchanged. */
#ifndef CORTEN_TESTS_PARAMS_UTIL_H
#define CORTEN_TESTS_PARAMS_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "harness.h"

/* ---- Building inputs ------------------------------------------------------------------------ */

typedef struct bytes {
  unsigned char *p;
  size_t n, cap;
} bytes;

static inline void b_put(bytes *b, const void *src, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
    ck_assert_ptr_nonnull(b->p);
  }
  if (n > 0) memcpy(b->p + b->n, src, n);
  b->n += n;
}

static inline void b_le(bytes *b, uint64_t v, int width) {
  unsigned char c[8];
  for (int i = 0; i < width; i++) c[i] = (unsigned char)(v >> (8 * i));
  b_put(b, c, (size_t)width);
}

static inline void b_u64(bytes *b, uint64_t v) { b_le(b, v, 8); }

static inline void b_name(bytes *b, const char *s, size_t len) {
  b_u64(b, len);
  b_put(b, s, len);
}

/* A tensor record: magic, reserved, device (1, 0), ndim, dtype, shape, byte count, data. */
static inline void b_record(bytes *b, uint8_t code, uint8_t bits, int ndim,
                            const int64_t *shape, const void *data, size_t nbytes) {
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

/* The sample entries: w float32 [2,3] 0..5, b int64 [3], flag bool [4] (kDLBool, 8 bits, as
 * current TVM writes it). */
static const float w_data[6] = {0, 1, 2, 3, 4, 5};
static const int64_t w_shape[2] = {2, 3};
static const int64_t b_data[3] = {-1, 0, (int64_t)1 << 40};
static const int64_t b_shape[1] = {3};
static const unsigned char flag_data[4] = {1, 0, 1, 1};
static const int64_t flag_shape[1] = {4};

static inline void b_sample_record(bytes *b, const char *name) {
  if (strcmp(name, "w") == 0) b_record(b, 2, 32, 2, w_shape, w_data, sizeof w_data);
  if (strcmp(name, "b") == 0) b_record(b, 0, 64, 1, b_shape, b_data, sizeof b_data);
  if (strcmp(name, "flag") == 0) b_record(b, 6, 8, 1, flag_shape, flag_data, sizeof flag_data);
}

/* A dictionary of the sample entries in the given order. Offsets in the order w, b, flag:
 * count 16, names 24/33/42, second count 54, record w 62 (device type 78, ndim 86, code 90,
 * bits 91, lanes 92, shape 94, byte count 110, data 118), record b 142, record flag 214, end
 * 266. */
static inline bytes sample_dict(const char *const *order, size_t n) {
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

static inline void set_u64(bytes *b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; i++) b->p[at + (size_t)i] = (unsigned char)(v >> (8 * i));
}

static inline void set_u32(bytes *b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; i++) b->p[at + (size_t)i] = (unsigned char)(v >> (8 * i));
}

/* ---- Checking results ---------------------------------------------------------------------- */

static inline const ct_tensor *find_tensor(ct_scope *s, const char *name) {
  ct_var *v = ct_scope_find_local_var(s, name);
  ck_assert_msg(v != NULL, "no variable '%s'", name);
  const ct_tensor *t = ct_var_get_tensor(v);
  ck_assert_ptr_nonnull(t);
  return t;
}

static inline void assert_sample_loaded(ct_scope *s) {
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
static inline ct_scope *guarded_scope(void) {
  ct_scope *s = ct_scope_new();
  ct_tensor *w = ct_var_tensor(ct_scope_var(s, "w"));
  ck_assert_int_eq(ct_tensor_resize(w, CT_DIMS(1)), CT_OK);
  *(float *)ct_tensor_mutable_data(w, CT_FLOAT32, ct_cpu()) = 7.0f;
  *(int64_t *)ct_var_get_mutable(ct_scope_var(s, "keep"), &ct_int64_type) = 9;
  return s;
}

static inline void assert_guarded_unchanged(ct_scope *s) {
  ck_assert_uint_eq(ct_scope_var_count(s), 2);
  const ct_tensor *w = find_tensor(s, "w");
  ck_assert(ct_ddim_equal(ct_tensor_dims(w), CT_DIMS(1)));
  ck_assert(*(const float *)ct_tensor_data(w, CT_FLOAT32) == 7.0f);
  ck_assert_int_eq(*(const int64_t *)ct_var_get(ct_scope_find_local_var(s, "keep"),
                                                &ct_int64_type), 9);
}

/* Loads b into the guarded scope, expects CT_ERR_FORMAT with every given fragment in the
 * message, and checks that the scope did not change. */
static inline void assert_format_error(const bytes *b, const char *f1, const char *f2) {
  ct_scope *s = guarded_scope();
  ck_assert_int_eq(ct_params_load_memory(b->p, b->n, s), CT_ERR_FORMAT);
  ck_assert_int_eq(ct_last_status(), CT_ERR_FORMAT);
  const char *msg = ct_last_error();
  ck_assert_msg(f1 == NULL || strstr(msg, f1) != NULL, "'%s' not in: %s", f1, msg);
  ck_assert_msg(f2 == NULL || strstr(msg, f2) != NULL, "'%s' not in: %s", f2, msg);
  assert_guarded_unchanged(s);
  ct_scope_free(s);
}

#endif /* CORTEN_TESTS_PARAMS_UTIL_H */
