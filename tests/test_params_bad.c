/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of corten/params.h on bad input built here byte by byte: every class of it (truncated at
 * every offset, corrupted counts and lengths, oversized dims, foreign magic, trailing bytes, bad
 * names, dtypes and devices) is refused as a format error that leaves the scope unchanged, and
 * corruption at any byte is caught or harmless. Each test runs in its own process. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "params_util.h"

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
  st = cpu_stats();
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
  b.p[90] = 1;
  b.p[91] = 24; /* uint24 */
  assert_format_error(&b, "dtype code 1 (uint), 24 bits, 1 lanes at offset 90", NULL);
  b.p[91] = 32;
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
  st = cpu_stats();
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

static Suite *params_suite(void) {
  Suite *s = suite_create("params_bad");
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
  return s;
}

CT_TEST_MAIN(params_suite)
