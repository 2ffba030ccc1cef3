/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of ct_tensor_copy and ct_tensor_set_value: deep copies, blocks reused or replaced,
 * views and overlapping sources, every dtype byte for byte, and the errors (which change
 * nothing). Each test runs in its own process, so the memory stats start at zero. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "harness.h"

/* ---- Copy ------------------------------------------------------------------------------- */

START_TEST(copy_is_deep) {
  float *p;
  ct_tensor *src = iota_f32(CT_DIMS(4, 5), &p);
  ct_tensor *dst = ct_tensor_new();
  float *q;
  ck_assert_int_eq(ct_tensor_copy(dst, src, ct_cpu()), CT_OK);
  q = (float *)ct_tensor_data(dst, CT_FLOAT32);
  ck_assert_ptr_nonnull(q);
  ck_assert_ptr_ne(q, p);
  ck_assert(!ct_tensor_shares_memory(dst, src));
  ck_assert(!ct_tensor_is_external(dst));
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(4, 5)));
  ck_assert_int_eq(ct_tensor_dtype(dst), CT_FLOAT32);
  ck_assert(ct_place_equal(ct_tensor_place(dst), ct_cpu()));
  assert_iota_f32(dst, 0.0f, 20);
  q[0] = 100.0f;
  ck_assert(p[0] == 0.0f);
  ck_assert_uint_eq(cpu_stats().allocated, 160);
  ck_assert_uint_eq(cpu_stats().allocs, 2);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(copy_into_shared_dst_gives_it_own_block) {
  static const float vals[6] = {10, 11, 12, 13, 14, 15};
  float *pa;
  ct_tensor *a = iota_f32(CT_DIMS(6), &pa);
  ct_tensor *b = ct_tensor_new(), *src = ct_tensor_new();
  const float *qb;
  int i;
  ck_assert_int_eq(ct_tensor_set_value(src, vals, CT_DIMS(6), CT_FLOAT32, ct_cpu()), CT_OK);
  ck_assert_int_eq(ct_tensor_share(b, a), CT_OK);
  ck_assert_int_eq(ct_tensor_copy(b, src, ct_cpu()), CT_OK);
  ck_assert(!ct_tensor_shares_memory(a, b));
  ck_assert(!ct_tensor_shares_memory(b, src));
  qb = ct_tensor_data(b, CT_FLOAT32);
  ck_assert_ptr_ne(qb, pa);
  for (i = 0; i < 6; i++) ck_assert(qb[i] == vals[i]);
  /* a keeps its block and values */
  ck_assert_ptr_eq(ct_tensor_data(a, CT_FLOAT32), pa);
  assert_iota_f32(a, 0.0f, 6);
  ck_assert_uint_eq(cpu_stats().allocs, 3);
  ck_assert_uint_eq(cpu_stats().frees, 0);
  ct_tensor_free(a);
  ct_tensor_free(b);
  ct_tensor_free(src);
}
END_TEST

START_TEST(copy_reuses_sole_block_that_fits) {
  float *q;
  ct_tensor *dst = iota_f32(CT_DIMS(100), &q);
  ct_tensor *src = iota_f32(CT_DIMS(10), NULL);
  ct_memory_stats s;
  ck_assert_int_eq(ct_tensor_copy(dst, src, ct_cpu()), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(dst, CT_FLOAT32), q);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(10)));
  assert_iota_f32(dst, 0.0f, 10);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocs, 2);
  ck_assert_uint_eq(s.frees, 0);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(copy_of_slice_copies_its_rows) {
  ct_tensor *src = iota_f32(CT_DIMS(4, 5), NULL);
  ct_tensor *view = ct_tensor_new(), *dst = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_slice(view, src, 2, 4), CT_OK);
  ck_assert_int_eq(ct_tensor_copy(dst, view, ct_cpu()), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(2, 5)));
  assert_iota_f32(dst, 10.0f, 10);
  ck_assert_uint_eq(cpu_stats().allocated, 80 + 40);
  ct_tensor_free(view);
  ct_tensor_free(src);
  assert_iota_f32(dst, 10.0f, 10);
  ct_tensor_free(dst);
}
END_TEST

START_TEST(copy_onto_itself_keeps_values) {
  float *p;
  ct_tensor *t = iota_f32(CT_DIMS(6), &p);
  ct_tensor *v = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_copy(t, t, ct_cpu()), CT_OK);
  assert_iota_f32(t, 0.0f, 6);
  /* A shared t ends with a block of its own, same values. */
  ck_assert_int_eq(ct_tensor_share(v, t), CT_OK);
  ck_assert_int_eq(ct_tensor_copy(t, t, ct_cpu()), CT_OK);
  ck_assert(!ct_tensor_shares_memory(t, v));
  assert_iota_f32(t, 0.0f, 6);
  assert_iota_f32(v, 0.0f, 6);
  ct_tensor_free(v);
  ct_tensor_free(t);
  ck_assert_uint_eq(cpu_stats().allocated, 0);
}
END_TEST

START_TEST(copy_to_cuda_is_unsupported) {
  if (ct_cuda_device_count() > 0) return;
  ct_tensor *src = iota_f32(CT_DIMS(4), NULL);
  ct_tensor *dst = ct_tensor_new();
  CT_ASSERT_FAILS(ct_tensor_copy(dst, src, ct_cuda(0)), no_cuda_status());
  ck_assert(!ct_tensor_has_memory(dst));
  ck_assert_uint_eq(cpu_stats().allocs, 1);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(copy_errors) {
  ct_tensor *src = iota_f32(CT_DIMS(2, 3), NULL);
  ct_tensor *empty = ct_tensor_new(), *dst = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_copy(NULL, src, ct_cpu()), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_copy(dst, NULL, ct_cpu()), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_copy(dst, src, bad_place()), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_copy(dst, empty, ct_cpu()), CT_ERR_UNINITIALIZED);
  ck_assert_int_eq(ct_tensor_resize(empty, CT_DIMS(3)), CT_OK);
  ck_assert_int_eq(ct_tensor_copy(dst, empty, ct_cpu()), CT_ERR_UNINITIALIZED);
  ck_assert_int_eq(ct_tensor_resize(src, CT_DIMS(100, 100)), CT_OK);
  ck_assert_int_eq(ct_tensor_copy(dst, src, ct_cpu()), CT_ERR_OUT_OF_RANGE);
  ck_assert(!ct_tensor_has_memory(dst));
  ck_assert_uint_eq(cpu_stats().allocs, 1);
  ct_tensor_free(dst);
  ct_tensor_free(empty);
  ct_tensor_free(src);
}
END_TEST

/* ---- Set value ------------------------------------------------------------------------------ */

START_TEST(set_value_fills_a_new_tensor) {
  static const float vals[6] = {1.5f, -2.0f, 3.25f, 0.0f, 1e30f, -1e-30f};
  ct_tensor *t = ct_tensor_new();
  const float *q;
  ct_memory_stats s;
  ck_assert_int_eq(ct_tensor_set_value(t, vals, CT_DIMS(2, 3), CT_FLOAT32, ct_cpu()), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(2, 3)));
  ck_assert_int_eq(ct_tensor_dtype(t), CT_FLOAT32);
  ck_assert(ct_tensor_has_memory(t));
  ck_assert(!ct_tensor_is_external(t));
  ck_assert(ct_place_equal(ct_tensor_place(t), ct_cpu()));
  q = ct_tensor_data(t, CT_FLOAT32);
  ck_assert_ptr_nonnull(q);
  ck_assert_ptr_ne(q, vals);
  ck_assert_int_eq(memcmp(q, vals, sizeof vals), 0);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 24);
  ck_assert_uint_eq(s.allocs, 1);
  ct_tensor_free(t);
}
END_TEST

START_TEST(set_value_resizes_a_normal_tensor) {
  float big[100];
  static const float small[2] = {7.0f, 8.0f};
  ct_tensor *t = ct_tensor_new();
  const float *q;
  ct_memory_stats s;
  int i;
  for (i = 0; i < 100; i++) big[i] = (float)(i * i);
  ck_assert_int_eq(ct_tensor_set_value(t, small, CT_DIMS(2), CT_FLOAT32, ct_cpu()), CT_OK);
  ck_assert_int_eq(ct_tensor_set_value(t, big, CT_DIMS(10, 10), CT_FLOAT32, ct_cpu()), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(10, 10)));
  q = ct_tensor_data(t, CT_FLOAT32);
  ck_assert_int_eq(memcmp(q, big, sizeof big), 0);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 400);
  ck_assert_uint_eq(s.allocs, 2);
  ck_assert_uint_eq(s.frees, 1);
  /* Shrinking reuses the block. */
  ck_assert_int_eq(ct_tensor_set_value(t, small, CT_DIMS(2), CT_FLOAT32, ct_cpu()), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), q);
  ck_assert_int_eq(memcmp(q, small, sizeof small), 0);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(2)));
  ck_assert_uint_eq(cpu_stats().allocs, 2);
  ct_tensor_free(t);
}
END_TEST

START_TEST(set_value_into_shared_tensor_leaves_other_view) {
  static const float vals[4] = {-1, -2, -3, -4};
  ct_tensor *t = iota_f32(CT_DIMS(4), NULL);
  ct_tensor *v = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_share(v, t), CT_OK);
  ck_assert_int_eq(ct_tensor_set_value(t, vals, CT_DIMS(4), CT_FLOAT32, ct_cpu()), CT_OK);
  ck_assert(!ct_tensor_shares_memory(t, v));
  ck_assert_int_eq(memcmp(ct_tensor_data(t, CT_FLOAT32), vals, sizeof vals), 0);
  assert_iota_f32(v, 0.0f, 4);
  ct_tensor_free(t);
  ct_tensor_free(v);
}
END_TEST

START_TEST(set_value_from_own_data_in_place) {
  float *p;
  ct_tensor *t = iota_f32(CT_DIMS(6), &p);
  /* The source overlaps the destination: the bytes land as they were read. */
  ck_assert_int_eq(ct_tensor_set_value(t, p + 1, CT_DIMS(5), CT_FLOAT32, ct_cpu()), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), p);
  assert_iota_f32(t, 1.0f, 5);
  ck_assert_uint_eq(cpu_stats().allocs, 1);
  ct_tensor_free(t);
}
END_TEST

START_TEST(set_value_from_own_block_into_new_block) {
  float *p;
  ct_tensor *t = iota_f32(CT_DIMS(100), &p);
  ct_memory_stats s;
  /* t keeps only the last 2 elements of its block, then takes all 100 back from it: the old
   * block must outlive the copy. */
  ck_assert_int_eq(ct_tensor_slice(t, t, 98, 100), CT_OK);
  ck_assert_int_eq(ct_tensor_set_value(t, p, CT_DIMS(100), CT_FLOAT32, ct_cpu()), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(100)));
  assert_iota_f32(t, 0.0f, 100);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 400);
  ck_assert_uint_eq(s.allocs, 2);
  ck_assert_uint_eq(s.frees, 1);
  ct_tensor_free(t);
}
END_TEST

START_TEST(set_value_errors) {
  static const float vals[4] = {1, 2, 3, 4};
  float *q;
  ct_tensor *t = iota_f32(CT_DIMS(2), &q);
  ct_ddim unset;
  memset(&unset, 0, sizeof unset);
  unset.rank = -1;
  ck_assert_int_eq(ct_tensor_set_value(NULL, vals, CT_DIMS(4), CT_FLOAT32, ct_cpu()),
                   CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_set_value(t, NULL, CT_DIMS(4), CT_FLOAT32, ct_cpu()),
                   CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_set_value(t, vals, unset, CT_FLOAT32, ct_cpu()),
                   CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_set_value(t, vals, CT_DIMS(-4), CT_FLOAT32, ct_cpu()),
                   CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_set_value(t, vals, CT_DIMS(4), CT_DTYPE_UNDEFINED, ct_cpu()),
                   CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_set_value(t, vals, CT_DIMS(4), CT_FLOAT32, bad_place()),
                   CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_set_value(t, vals, CT_DIMS(1, 1, 1, 1, 1, 1, 1, 1, 1, 4),
                                       CT_FLOAT32, ct_cpu()),
                   CT_ERR_OUT_OF_RANGE);
  ck_assert_int_eq(
      ct_tensor_set_value(t, vals, CT_DIMS((int64_t)1 << 61), CT_FLOAT64, ct_cpu()),
      CT_ERR_OUT_OF_RANGE);
  if (ct_cuda_device_count() == 0) {
    ck_assert_int_eq(ct_tensor_set_value(t, vals, CT_DIMS(4), CT_FLOAT32, ct_cuda(0)),
                     no_cuda_status());
  }
  /* t is as it was */
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), q);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(2)));
  assert_iota_f32(t, 0.0f, 2);
  ck_assert_uint_eq(cpu_stats().allocs, 1);
  ct_tensor_free(t);
}
END_TEST

START_TEST(set_value_null_src_with_zero_elements_is_ok) {
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_set_value(t, NULL, CT_DIMS(0, 4), CT_INT64, ct_cpu()), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(0, 4)));
  ck_assert_int_eq(ct_tensor_dtype(t), CT_INT64);
  ck_assert_int_eq(ct_tensor_numel(t), 0);
  ct_tensor_free(t);
}
END_TEST

START_TEST(every_dtype_round_trips_byte_for_byte) {
  static const struct {
    ct_dtype dtype;
    size_t size;
  } types[] = {{CT_BOOL, 1},    {CT_INT8, 1},     {CT_UINT8, 1},    {CT_INT16, 2},
               {CT_INT32, 4},   {CT_INT64, 8},    {CT_FLOAT16, 2},  {CT_BFLOAT16, 2},
               {CT_FLOAT32, 4}, {CT_FLOAT64, 8}};
  unsigned char bytes[7 * 8];
  size_t i, j;
  for (i = 0; i < sizeof types / sizeof types[0]; i++) {
    ct_dtype dt = types[i].dtype;
    size_t nbytes = 7 * types[i].size;
    ct_tensor *t = ct_tensor_new(), *u = ct_tensor_new();
    const void *pt, *pu;
    ct_memory_stats s;
    ck_assert_uint_eq(ct_dtype_size(dt), types[i].size);
    /* bool bytes stay 0 or 1; other types get every kind of byte, NaN patterns included */
    for (j = 0; j < sizeof bytes; j++)
      bytes[j] = dt == CT_BOOL ? (unsigned char)(j % 2) : (unsigned char)(0xFF - j * 37 - i);
    ck_assert_int_eq(ct_tensor_set_value(t, bytes, CT_DIMS(7), dt, ct_cpu()), CT_OK);
    ck_assert_int_eq(ct_tensor_dtype(t), dt);
    pt = ct_tensor_data(t, dt);
    ck_assert_ptr_nonnull(pt);
    ck_assert_int_eq(memcmp(pt, bytes, nbytes), 0);
    ck_assert_int_eq(ct_tensor_copy(u, t, ct_cpu()), CT_OK);
    ck_assert_int_eq(ct_tensor_dtype(u), dt);
    pu = ct_tensor_data(u, dt);
    ck_assert_ptr_nonnull(pu);
    ck_assert_ptr_ne(pu, pt);
    ck_assert_int_eq(memcmp(pu, bytes, nbytes), 0);
    s = cpu_stats();
    ck_assert_uint_eq(s.allocated, 2 * nbytes);
    ct_tensor_free(t);
    ct_tensor_free(u);
    ck_assert_uint_eq(cpu_stats().allocated, 0);
  }
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("tensor_copy");
  CT_ADD_TEST(s, copy_is_deep);
  CT_ADD_TEST(s, copy_into_shared_dst_gives_it_own_block);
  CT_ADD_TEST(s, copy_reuses_sole_block_that_fits);
  CT_ADD_TEST(s, copy_of_slice_copies_its_rows);
  CT_ADD_TEST(s, copy_onto_itself_keeps_values);
  CT_ADD_TEST(s, copy_to_cuda_is_unsupported);
  CT_ADD_TEST(s, copy_errors);
  CT_ADD_TEST(s, set_value_fills_a_new_tensor);
  CT_ADD_TEST(s, set_value_resizes_a_normal_tensor);
  CT_ADD_TEST(s, set_value_into_shared_tensor_leaves_other_view);
  CT_ADD_TEST(s, set_value_from_own_data_in_place);
  CT_ADD_TEST(s, set_value_from_own_block_into_new_block);
  CT_ADD_TEST(s, set_value_errors);
  CT_ADD_TEST(s, set_value_null_src_with_zero_elements_is_ok);
  CT_ADD_TEST(s, every_dtype_round_trips_byte_for_byte);
  return s;
}

CT_TEST_MAIN(make_suite)
