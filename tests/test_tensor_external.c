/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of external buffers in corten/tensor.h: ct_tensor_wrap over caller memory (never
 * counted, released once after the last view), writes into a buffer that fits and refusals of
 * one that does not, copies out of one, the wraps it refuses without taking the buffer, and
 * ct_tensor_move between external and normal tensors. Each test runs in its own process, so the
 * memory stats start at zero. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "harness.h"

/* ---- External buffers ------------------------------------------------------------------------ */

START_TEST(wrap_points_at_caller_memory) {
  float buf[6] = {1, 2, 3, 4, 5, 6};
  ct_tensor *t = ct_tensor_new();
  ct_memory_stats s;
  ck_assert_int_eq(ct_tensor_wrap(t, buf, CT_DIMS(2, 3), CT_FLOAT32, ct_cpu(), NULL, NULL), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), buf);
  ck_assert(ct_tensor_is_external(t));
  ck_assert(ct_tensor_has_memory(t));
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(2, 3)));
  ck_assert_int_eq(ct_tensor_dtype(t), CT_FLOAT32);
  ck_assert(ct_place_equal(ct_tensor_place(t), ct_cpu()));
  ck_assert_uint_eq(ct_tensor_capacity(t), 24);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.reserved, 0);
  ck_assert_uint_eq(s.allocs, 0);
  ct_tensor_free(t);
  ck_assert_uint_eq(cpu_stats().frees, 0);
  ck_assert(buf[5] == 6.0f);
}
END_TEST

START_TEST(wrap_release_runs_once_after_last_view) {
  float *buf = malloc(6 * sizeof(float));
  int released = 0;
  ct_tensor *t = ct_tensor_new(), *v = ct_tensor_new();
  ck_assert_ptr_nonnull(buf);
  ck_assert_int_eq(
      ct_tensor_wrap(t, buf, CT_DIMS(2, 3), CT_FLOAT32, ct_cpu(), count_release, &released),
      CT_OK);
  ck_assert_int_eq(ct_tensor_share(v, t), CT_OK);
  ck_assert(ct_tensor_is_external(v));
  ck_assert_ptr_eq(ct_tensor_data(v, CT_FLOAT32), buf);
  ct_tensor_free(t);
  ck_assert_int_eq(released, 0);
  ct_tensor_free(v);
  ck_assert_int_eq(released, 1);
  ck_assert_uint_eq(cpu_stats().frees, 0);
  free(buf);
}
END_TEST

START_TEST(views_keep_the_external_flag) {
  float buf[20] = {0};
  ct_tensor *t = ct_tensor_new(), *s = ct_tensor_new(), *f = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_wrap(t, buf, CT_DIMS(4, 5), CT_FLOAT32, ct_cpu(), NULL, NULL), CT_OK);
  ck_assert_int_eq(ct_tensor_slice(s, t, 1, 3), CT_OK);
  ck_assert(ct_tensor_is_external(s));
  ck_assert_ptr_eq(ct_tensor_data(s, CT_FLOAT32), buf + 5);
  ck_assert_int_eq(ct_tensor_flatten_to_2d(f, t, 2), CT_OK);
  ck_assert(ct_tensor_is_external(f));
  /* A normal source gives a normal view, even into a tensor that was external. */
  ct_tensor_free(t);
  t = iota_f32(CT_DIMS(4), NULL);
  ck_assert_int_eq(ct_tensor_share(s, t), CT_OK);
  ck_assert(!ct_tensor_is_external(s));
  ct_tensor_free(t);
  ct_tensor_free(s);
  ct_tensor_free(f);
}
END_TEST

START_TEST(failed_wrap_does_not_take_buffer) {
  float buf[6] = {0};
  int released = 0;
  float *q;
  ct_tensor *t = iota_f32(CT_DIMS(3), &q);
  ct_ddim unset;
  memset(&unset, 0, sizeof unset);
  unset.rank = -1;
  ck_assert_int_eq(ct_tensor_wrap(t, NULL, CT_DIMS(2, 3), CT_FLOAT32, ct_cpu(), count_release,
                                  &released),
                   CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(
      ct_tensor_wrap(t, buf, unset, CT_FLOAT32, ct_cpu(), count_release, &released),
      CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(
      ct_tensor_wrap(t, buf, CT_DIMS(2, -3), CT_FLOAT32, ct_cpu(), count_release, &released),
      CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_wrap(t, buf, CT_DIMS(2, 3), CT_DTYPE_UNDEFINED, ct_cpu(),
                                  count_release, &released),
                   CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(
      ct_tensor_wrap(t, buf, CT_DIMS(2, 3), CT_FLOAT32, bad_place(), count_release, &released),
      CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_wrap(t, buf, CT_DIMS(1, 1, 1, 1, 1, 1, 1, 1, 1, 1), CT_FLOAT32,
                                  ct_cpu(), count_release, &released),
                   CT_ERR_OUT_OF_RANGE);
  ck_assert_int_eq(ct_tensor_wrap(t, buf, CT_DIMS((int64_t)1 << 61), CT_FLOAT64, ct_cpu(),
                                  count_release, &released),
                   CT_ERR_OUT_OF_RANGE);
  if (ct_cuda_device_count() == 0) {
    ck_assert_int_eq(
        ct_tensor_wrap(t, buf, CT_DIMS(2, 3), CT_FLOAT32, ct_cuda(0), count_release, &released),
        no_cuda_status());
  }
  ck_assert_int_eq(
      ct_tensor_wrap(NULL, buf, CT_DIMS(2, 3), CT_FLOAT32, ct_cpu(), count_release, &released),
      CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(released, 0);
  /* t is unchanged */
  ck_assert(!ct_tensor_is_external(t));
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), q);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(3)));
  assert_iota_f32(t, 0.0f, 3);
  ck_assert_uint_eq(cpu_stats().frees, 0);
  ct_tensor_free(t);
  ck_assert_int_eq(released, 0);
}
END_TEST

START_TEST(wrap_null_data_with_zero_elements_is_ok) {
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_wrap(t, NULL, CT_DIMS(0, 3), CT_FLOAT32, ct_cpu(), NULL, NULL),
                   CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(0, 3)));
  ck_assert_int_eq(ct_tensor_numel(t), 0);
  ck_assert(ct_tensor_is_external(t));
  ck_assert_uint_eq(cpu_stats().allocs, 0);
  ct_tensor_free(t);
}
END_TEST

START_TEST(wrap_lets_go_of_what_the_tensor_held) {
  float a[4] = {0}, b[4] = {0};
  int released_a = 0, released_b = 0;
  ct_tensor *t = iota_f32(CT_DIMS(10), NULL);
  ct_memory_stats s;
  ck_assert_int_eq(
      ct_tensor_wrap(t, a, CT_DIMS(4), CT_FLOAT32, ct_cpu(), count_release, &released_a), CT_OK);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.frees, 1);
  ck_assert_int_eq(
      ct_tensor_wrap(t, b, CT_DIMS(4), CT_FLOAT32, ct_cpu(), count_release, &released_b), CT_OK);
  ck_assert_int_eq(released_a, 1);
  ck_assert_int_eq(released_b, 0);
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), b);
  ct_tensor_free(t);
  ck_assert_int_eq(released_a, 1);
  ck_assert_int_eq(released_b, 1);
}
END_TEST

START_TEST(external_mutable_data_that_fits_returns_buffer) {
  float buf[6] = {0};
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_wrap(t, buf, CT_DIMS(2, 3), CT_FLOAT32, ct_cpu(), NULL, NULL), CT_OK);
  ck_assert_ptr_eq(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()), buf);
  ck_assert_ptr_eq(ct_tensor_mutable_data(t, CT_INT32, ct_cpu()), buf);
  ck_assert_int_eq(ct_tensor_dtype(t), CT_INT32);
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(4)), CT_OK);
  ck_assert_ptr_eq(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()), buf);
  ck_assert(ct_tensor_is_external(t));
  ck_assert_uint_eq(cpu_stats().allocs, 0);
  ct_tensor_free(t);
}
END_TEST

START_TEST(external_mutable_data_growing_is_external_buffer) {
  float buf[6] = {0};
  int released = 0;
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(
      ct_tensor_wrap(t, buf, CT_DIMS(2, 3), CT_FLOAT32, ct_cpu(), count_release, &released),
      CT_OK);
  CT_ASSERT_NULL_FAILS(ct_tensor_mutable_data(t, CT_FLOAT64, ct_cpu()), CT_ERR_EXTERNAL_BUFFER);
  ck_assert_int_eq(ct_tensor_dtype(t), CT_FLOAT32);
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(3, 3)), CT_OK);
  CT_ASSERT_NULL_FAILS(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()), CT_ERR_EXTERNAL_BUFFER);
  ck_assert(ct_tensor_is_external(t));
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(3, 3)));
  ck_assert_int_eq(ct_tensor_dtype(t), CT_FLOAT32);
  ck_assert_int_eq(released, 0);
  ck_assert_uint_eq(cpu_stats().allocs, 0);
  /* Back within the buffer, it works again. */
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(2, 3)), CT_OK);
  ck_assert_ptr_eq(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()), buf);
  ct_tensor_free(t);
  ck_assert_int_eq(released, 1);
}
END_TEST

START_TEST(copy_into_external_writes_in_place) {
  float buf[6] = {0};
  ct_tensor *dst = ct_tensor_new();
  ct_tensor *src = iota_f32(CT_DIMS(3, 2), NULL);
  ct_tensor *small = iota_f32(CT_DIMS(4), NULL);
  int i;
  ck_assert_int_eq(ct_tensor_wrap(dst, buf, CT_DIMS(2, 3), CT_FLOAT32, ct_cpu(), NULL, NULL),
                   CT_OK);
  ck_assert_int_eq(ct_tensor_copy(dst, src, ct_cpu()), CT_OK);
  for (i = 0; i < 6; i++) ck_assert(buf[i] == (float)i);
  ck_assert(ct_tensor_is_external(dst));
  ck_assert_ptr_eq(ct_tensor_data(dst, CT_FLOAT32), buf);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(3, 2)));
  /* Fewer bytes fit too; dst takes the source's dims. */
  memset(buf, 0, sizeof buf);
  ck_assert_int_eq(ct_tensor_copy(dst, small, ct_cpu()), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(4)));
  for (i = 0; i < 4; i++) ck_assert(buf[i] == (float)i);
  ck_assert(buf[4] == 0.0f);
  ck_assert(ct_tensor_is_external(dst));
  ck_assert_uint_eq(cpu_stats().allocs, 2);
  ct_tensor_free(dst);
  ct_tensor_free(src);
  ct_tensor_free(small);
}
END_TEST

START_TEST(copy_into_external_too_large_is_external_buffer) {
  float buf[6] = {9, 9, 9, 9, 9, 9};
  int released = 0, i;
  ct_tensor *dst = ct_tensor_new();
  ct_tensor *src = iota_f32(CT_DIMS(10), NULL);
  ck_assert_int_eq(
      ct_tensor_wrap(dst, buf, CT_DIMS(2, 3), CT_FLOAT32, ct_cpu(), count_release, &released),
      CT_OK);
  CT_ASSERT_FAILS(ct_tensor_copy(dst, src, ct_cpu()), CT_ERR_EXTERNAL_BUFFER);
  for (i = 0; i < 6; i++) ck_assert(buf[i] == 9.0f);
  ck_assert(ct_tensor_is_external(dst));
  ck_assert_ptr_eq(ct_tensor_data(dst, CT_FLOAT32), buf);
  ck_assert_int_eq(released, 0);
  ck_assert_uint_eq(cpu_stats().allocs, 1);
  ct_tensor_free(dst);
  ck_assert_int_eq(released, 1);
  ct_tensor_free(src);
}
END_TEST

/* float64 values copied into an external float32 buffer wrapped from its second element (4
 * bytes in: enough room, but no float64 may live there): refused, the buffer untouched (the
 * program fuzzer's reshape of a float64 into such a variable wrote misaligned doubles). */
START_TEST(copy_into_external_misaligned_for_the_dtype_is_external_buffer) {
  _Alignas(8) float buf[9] = {9, 9, 9, 9, 9, 9, 9, 9, 9};
  ct_tensor *dst = ct_tensor_new();
  ct_tensor *src = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_set_value(src, (const double[]){1, 2}, CT_DIMS(2), CT_FLOAT64,
                                       ct_cpu()),
                   CT_OK);
  ck_assert_int_eq(ct_tensor_wrap(dst, buf + 1, CT_DIMS(8), CT_FLOAT32, ct_cpu(), NULL, NULL),
                   CT_OK);
  CT_ASSERT_FAILS(ct_tensor_copy(dst, src, ct_cpu()), CT_ERR_EXTERNAL_BUFFER);
  ck_assert(strstr(ct_last_error(), "not aligned for float64") != NULL);
  for (int i = 0; i < 9; i++) ck_assert(buf[i] == 9.0f);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(8)));
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(set_value_into_external_writes_in_place) {
  float buf[6] = {0};
  static const float vals[6] = {6, 5, 4, 3, 2, 1};
  static const int32_t ivals[3] = {-1, 7, 65536};
  ct_tensor *t = ct_tensor_new();
  int i;
  ck_assert_int_eq(ct_tensor_wrap(t, buf, CT_DIMS(2, 3), CT_FLOAT32, ct_cpu(), NULL, NULL), CT_OK);
  ck_assert_int_eq(ct_tensor_set_value(t, vals, CT_DIMS(3, 2), CT_FLOAT32, ct_cpu()), CT_OK);
  for (i = 0; i < 6; i++) ck_assert(buf[i] == vals[i]);
  ck_assert(ct_tensor_is_external(t));
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(3, 2)));
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), buf);
  /* Another dtype that fits is written in place too. */
  ck_assert_int_eq(ct_tensor_set_value(t, ivals, CT_DIMS(3), CT_INT32, ct_cpu()), CT_OK);
  ck_assert_int_eq(ct_tensor_dtype(t), CT_INT32);
  ck_assert_ptr_eq(ct_tensor_data(t, CT_INT32), buf);
  ck_assert_int_eq(memcmp(buf, ivals, sizeof ivals), 0);
  ck_assert(ct_tensor_is_external(t));
  ck_assert_uint_eq(cpu_stats().allocs, 0);
  ct_tensor_free(t);
}
END_TEST

START_TEST(set_value_into_external_too_large_is_external_buffer) {
  float buf[6] = {9, 9, 9, 9, 9, 9};
  static const float vals[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  ct_tensor *t = ct_tensor_new();
  int i;
  ck_assert_int_eq(ct_tensor_wrap(t, buf, CT_DIMS(2, 3), CT_FLOAT32, ct_cpu(), NULL, NULL), CT_OK);
  CT_ASSERT_FAILS(ct_tensor_set_value(t, vals, CT_DIMS(3, 3), CT_FLOAT32, ct_cpu()),
                  CT_ERR_EXTERNAL_BUFFER);
  for (i = 0; i < 6; i++) ck_assert(buf[i] == 9.0f);
  ck_assert(ct_tensor_is_external(t));
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), buf);
  ck_assert_uint_eq(cpu_stats().allocs, 0);
  ct_tensor_free(t);
}
END_TEST

START_TEST(copy_from_external_is_deep) {
  float buf[6] = {1, 2, 3, 4, 5, 6};
  ct_tensor *src = ct_tensor_new(), *dst = ct_tensor_new();
  const float *q;
  int i;
  ck_assert_int_eq(ct_tensor_wrap(src, buf, CT_DIMS(2, 3), CT_FLOAT32, ct_cpu(), NULL, NULL),
                   CT_OK);
  ck_assert_int_eq(ct_tensor_copy(dst, src, ct_cpu()), CT_OK);
  ck_assert(!ct_tensor_is_external(dst));
  ck_assert(ct_tensor_has_memory(dst));
  ck_assert(!ct_tensor_shares_memory(dst, src));
  q = ct_tensor_data(dst, CT_FLOAT32);
  ck_assert_ptr_nonnull(q);
  ck_assert_ptr_ne(q, buf);
  for (i = 0; i < 6; i++) ck_assert(q[i] == buf[i]);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(2, 3)));
  ck_assert_uint_eq(cpu_stats().allocated, 24);
  ck_assert_uint_eq(cpu_stats().allocs, 1);
  /* src still views the caller's buffer */
  ck_assert(ct_tensor_is_external(src));
  ck_assert_ptr_eq(ct_tensor_data(src, CT_FLOAT32), buf);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(move_external_into_normal_dst) {
  float buf[6] = {1, 2, 3, 4, 5, 6};
  int released = 0;
  ct_tensor *dst = iota_f32(CT_DIMS(10), NULL);
  ct_tensor *src = ct_tensor_new();
  ct_memory_stats s;
  ck_assert_int_eq(
      ct_tensor_wrap(src, buf, CT_DIMS(2, 3), CT_FLOAT32, ct_cpu(), count_release, &released),
      CT_OK);
  ct_tensor_move(dst, src);
  ck_assert(ct_tensor_is_external(dst));
  ck_assert_ptr_eq(ct_tensor_data(dst, CT_FLOAT32), buf);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(2, 3)));
  ck_assert_int_eq(ct_tensor_dtype(dst), CT_FLOAT32);
  /* src is a new tensor again */
  ck_assert_int_eq(ct_tensor_dims(src).rank, -1);
  ck_assert_int_eq(ct_tensor_numel(src), -1);
  ck_assert(!ct_tensor_has_memory(src));
  ck_assert(!ct_tensor_is_external(src));
  ck_assert_int_eq(ct_tensor_dtype(src), CT_DTYPE_UNDEFINED);
  /* dst's old block went back */
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.frees, 1);
  ck_assert_int_eq(released, 0);
  ct_tensor_free(src);
  ck_assert_int_eq(released, 0);
  ct_tensor_free(dst);
  ck_assert_int_eq(released, 1);
}
END_TEST

START_TEST(move_normal_into_external_dst) {
  float buf[6] = {0};
  int released = 0;
  float *p;
  ct_tensor *dst = ct_tensor_new();
  ct_tensor *src = iota_f32(CT_DIMS(4), &p);
  ct_memory_stats s;
  ck_assert_int_eq(
      ct_tensor_wrap(dst, buf, CT_DIMS(2, 3), CT_FLOAT32, ct_cpu(), count_release, &released),
      CT_OK);
  ct_tensor_move(dst, src);
  ck_assert_int_eq(released, 1);
  ck_assert(!ct_tensor_is_external(dst));
  ck_assert_ptr_eq(ct_tensor_data(dst, CT_FLOAT32), p);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(4)));
  assert_iota_f32(dst, 0.0f, 4);
  ck_assert(!ct_tensor_has_memory(src));
  ck_assert_int_eq(ct_tensor_dims(src).rank, -1);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 16);
  ck_assert_uint_eq(s.frees, 0);
  ct_tensor_free(src);
  ct_tensor_free(dst);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.frees, 1);
  ck_assert_int_eq(released, 1);
}
END_TEST

START_TEST(move_with_null_or_self_does_nothing) {
  float *p;
  ct_tensor *t = iota_f32(CT_DIMS(4), &p);
  ct_tensor_move(t, t);
  ct_tensor_move(NULL, t);
  ct_tensor_move(t, NULL);
  ct_tensor_move(NULL, NULL);
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), p);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(4)));
  assert_iota_f32(t, 0.0f, 4);
  ck_assert_uint_eq(cpu_stats().frees, 0);
  ct_tensor_free(t);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("tensor_external");
  CT_ADD_TEST(s, wrap_points_at_caller_memory);
  CT_ADD_TEST(s, wrap_release_runs_once_after_last_view);
  CT_ADD_TEST(s, views_keep_the_external_flag);
  CT_ADD_TEST(s, failed_wrap_does_not_take_buffer);
  CT_ADD_TEST(s, wrap_null_data_with_zero_elements_is_ok);
  CT_ADD_TEST(s, wrap_lets_go_of_what_the_tensor_held);
  CT_ADD_TEST(s, external_mutable_data_that_fits_returns_buffer);
  CT_ADD_TEST(s, external_mutable_data_growing_is_external_buffer);
  CT_ADD_TEST(s, copy_into_external_writes_in_place);
  CT_ADD_TEST(s, copy_into_external_too_large_is_external_buffer);
  CT_ADD_TEST(s, copy_into_external_misaligned_for_the_dtype_is_external_buffer);
  CT_ADD_TEST(s, set_value_into_external_writes_in_place);
  CT_ADD_TEST(s, set_value_into_external_too_large_is_external_buffer);
  CT_ADD_TEST(s, copy_from_external_is_deep);
  CT_ADD_TEST(s, move_external_into_normal_dst);
  CT_ADD_TEST(s, move_normal_into_external_dst);
  CT_ADD_TEST(s, move_with_null_or_self_does_nothing);
  return s;
}

CT_TEST_MAIN(make_suite)
