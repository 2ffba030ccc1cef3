/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of corten/tensor.h: a new tensor, its lazy memory (mutable_data and data), resize,
 * NULL arguments, and the tensor of a variable. Views are tested in test_tensor_views.c,
 * external buffers and move in test_tensor_external.c, copy and set_value in
 * test_tensor_copy.c. Each test runs in its own process, so the memory stats start at zero. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "harness.h"

/* ---- A new tensor ----------------------------------------------------------------------------- */

START_TEST(new_tensor_is_unset) {
  ct_tensor *t = ct_tensor_new();
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(ct_tensor_dims(t).rank, -1);
  ck_assert_int_eq(ct_tensor_numel(t), -1);
  ck_assert(!ct_tensor_has_memory(t));
  ck_assert(!ct_tensor_is_external(t));
  ck_assert_int_eq(ct_tensor_dtype(t), CT_DTYPE_UNDEFINED);
  ck_assert(ct_place_equal(ct_tensor_place(t), ct_cpu()));
  ck_assert_uint_eq(ct_tensor_capacity(t), 0);
  ct_tensor_free(t);
}
END_TEST

START_TEST(data_without_memory_is_uninitialized) {
  ct_tensor *t = ct_tensor_new();
  const char *msg;
  CT_ASSERT_NULL_FAILS(ct_tensor_data(t, CT_FLOAT32), CT_ERR_UNINITIALIZED);
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(2, 3)), CT_OK);
  CT_ASSERT_NULL_FAILS(ct_tensor_data(t, CT_FLOAT32), CT_ERR_UNINITIALIZED);
  msg = ct_last_error();
  ck_assert_ptr_nonnull(strstr(msg, "ct_tensor_mutable_data"));
  ck_assert_ptr_nonnull(strstr(msg, "[2,3]"));
  ct_tensor_free(t);
}
END_TEST

START_TEST(mutable_data_with_unset_dims_is_shape_error) {
  ct_tensor *t = ct_tensor_new();
  CT_ASSERT_NULL_FAILS(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()), CT_ERR_SHAPE);
  ck_assert(!ct_tensor_has_memory(t));
  ck_assert_int_eq(ct_tensor_dtype(t), CT_DTYPE_UNDEFINED);
  ck_assert_uint_eq(cpu_stats().allocs, 0);
  ct_tensor_free(t);
}
END_TEST

START_TEST(mutable_data_allocates_numel_times_dtype_size) {
  ct_tensor *t = ct_tensor_new();
  void *p;
  ct_memory_stats s;
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(2, 3)), CT_OK);
  p = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu());
  ck_assert_ptr_nonnull(p);
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), p);
  ck_assert(ct_tensor_has_memory(t));
  ck_assert(!ct_tensor_is_external(t));
  ck_assert_int_eq(ct_tensor_dtype(t), CT_FLOAT32);
  ck_assert(ct_place_equal(ct_tensor_place(t), ct_cpu()));
  ck_assert_int_eq(ct_tensor_numel(t), 6);
  ck_assert_uint_ge(ct_tensor_capacity(t), 24);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 24);
  ck_assert_uint_eq(s.allocs, 1);
  ct_tensor_free(t);
}
END_TEST

START_TEST(mutable_data_of_scalar_holds_one_element) {
  ct_tensor *t = ct_tensor_new();
  double *p;
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS()), CT_OK);
  ck_assert_int_eq(ct_tensor_dims(t).rank, 0);
  ck_assert_int_eq(ct_tensor_numel(t), 1);
  p = ct_tensor_mutable_data(t, CT_FLOAT64, ct_cpu());
  ck_assert_ptr_nonnull(p);
  *p = 2.5;
  ck_assert_uint_eq(cpu_stats().allocated, 8);
  ck_assert(*(const double *)ct_tensor_data(t, CT_FLOAT64) == 2.5);
  ct_tensor_free(t);
}
END_TEST

START_TEST(mutable_data_of_zero_elements_is_valid) {
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(0)), CT_OK);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()));
  ck_assert(ct_tensor_has_memory(t));
  ck_assert_int_eq(ct_tensor_numel(t), 0);
  ck_assert_ptr_nonnull(ct_tensor_data(t, CT_FLOAT32));
  ct_tensor_free(t);
}
END_TEST

START_TEST(mutable_data_keeps_block_when_size_stays) {
  ct_tensor *t = ct_tensor_new();
  void *p;
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(2, 3)), CT_OK);
  p = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu());
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(3, 2)), CT_OK);
  ck_assert_ptr_eq(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()), p);
  ck_assert_ptr_eq(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()), p);
  ck_assert_uint_eq(cpu_stats().allocs, 1);
  ct_tensor_free(t);
}
END_TEST

START_TEST(mutable_data_keeps_block_when_shrinking) {
  ct_tensor *t = ct_tensor_new();
  void *p;
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(100)), CT_OK);
  p = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu());
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(7)), CT_OK);
  ck_assert_ptr_eq(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()), p);
  ck_assert_int_eq(ct_tensor_numel(t), 7);
  ck_assert_uint_eq(cpu_stats().allocs, 1);
  ck_assert_uint_eq(cpu_stats().frees, 0);
  ct_tensor_free(t);
}
END_TEST

START_TEST(mutable_data_keeps_block_when_dtype_fits) {
  ct_tensor *t = ct_tensor_new();
  void *p;
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(2, 3)), CT_OK);
  p = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu());
  ck_assert_ptr_nonnull(p);
  ck_assert_ptr_eq(ct_tensor_mutable_data(t, CT_INT32, ct_cpu()), p);
  ck_assert_int_eq(ct_tensor_dtype(t), CT_INT32);
  ck_assert_ptr_eq(ct_tensor_mutable_data(t, CT_INT8, ct_cpu()), p);
  ck_assert_int_eq(ct_tensor_dtype(t), CT_INT8);
  ck_assert_ptr_eq(ct_tensor_data(t, CT_INT8), p);
  ck_assert_uint_eq(cpu_stats().allocs, 1);
  ck_assert_uint_eq(cpu_stats().frees, 0);
  ct_tensor_free(t);
}
END_TEST

START_TEST(mutable_data_replaces_block_when_growing) {
  ct_tensor *t = ct_tensor_new();
  ct_memory_stats s;
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(100)), CT_OK);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu())); /* 400 bytes */
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(1000)), CT_OK);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu())); /* 4000 bytes */
  s = cpu_stats();
  ck_assert_uint_eq(s.allocs, 2);
  ck_assert_uint_eq(s.frees, 1);
  ck_assert_uint_eq(s.allocated, 4000);
  ck_assert_uint_eq(s.reserved, 4032);
  /* The old block went before the new one came: no 4400 peak. */
  ck_assert_uint_eq(s.peak, 4000);
  ck_assert_uint_ge(ct_tensor_capacity(t), 4000);
  ct_tensor_free(t);
}
END_TEST

START_TEST(mutable_data_replaces_block_for_larger_dtype) {
  ct_tensor *t = ct_tensor_new();
  ct_memory_stats s;
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(4, 4)), CT_OK);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu())); /* 64 bytes */
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_FLOAT64, ct_cpu())); /* 128 bytes */
  ck_assert_int_eq(ct_tensor_dtype(t), CT_FLOAT64);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocs, 2);
  ck_assert_uint_eq(s.frees, 1);
  ck_assert_uint_eq(s.allocated, 128);
  ck_assert_uint_eq(s.peak, 128);
  ct_tensor_free(t);
}
END_TEST

START_TEST(mutable_data_bad_dtype_or_place_is_invalid_argument) {
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(2)), CT_OK);
  CT_ASSERT_NULL_FAILS(ct_tensor_mutable_data(NULL, CT_FLOAT32, ct_cpu()), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_NULL_FAILS(ct_tensor_mutable_data(t, CT_DTYPE_UNDEFINED, ct_cpu()),
                       CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_NULL_FAILS(ct_tensor_mutable_data(t, (ct_dtype)42, ct_cpu()), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_NULL_FAILS(ct_tensor_mutable_data(t, CT_FLOAT32, bad_place()), CT_ERR_INVALID_ARGUMENT);
  ck_assert(!ct_tensor_has_memory(t));
  ck_assert_int_eq(ct_tensor_dtype(t), CT_DTYPE_UNDEFINED);
  ck_assert_uint_eq(cpu_stats().allocs, 0);
  ct_tensor_free(t);
}
END_TEST

START_TEST(mutable_data_on_cuda_is_unsupported) {
  if (ct_cuda_device_count() > 0) return;
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(2)), CT_OK);
  CT_ASSERT_NULL_FAILS(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cuda(0)), no_cuda_status());
  ck_assert(!ct_tensor_has_memory(t));
  ck_assert_int_eq(ct_tensor_dtype(t), CT_DTYPE_UNDEFINED);
  ct_tensor_free(t);
}
END_TEST

START_TEST(data_with_wrong_dtype_is_type_mismatch) {
  ct_tensor *t = iota_f32(CT_DIMS(2, 3), NULL);
  CT_ASSERT_NULL_FAILS(ct_tensor_data(t, CT_INT32), CT_ERR_TYPE_MISMATCH);
  CT_ASSERT_NULL_FAILS(ct_tensor_data(t, CT_FLOAT64), CT_ERR_TYPE_MISMATCH);
  ck_assert_ptr_nonnull(ct_tensor_data(t, CT_FLOAT32));
  ct_tensor_free(t);
}
END_TEST

START_TEST(data_after_growing_past_capacity_is_out_of_range) {
  float *p;
  ct_tensor *t = iota_f32(CT_DIMS(2, 3), &p);
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(100, 100)), CT_OK);
  ck_assert(ct_tensor_has_memory(t));
  CT_ASSERT_NULL_FAILS(ct_tensor_data(t, CT_FLOAT32), CT_ERR_OUT_OF_RANGE);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()));
  ck_assert_ptr_nonnull(ct_tensor_data(t, CT_FLOAT32));
  ck_assert_uint_eq(cpu_stats().allocated, 40000);
  ct_tensor_free(t);
}
END_TEST

START_TEST(data_after_shrinking_keeps_values) {
  float *p;
  ct_tensor *t = iota_f32(CT_DIMS(4, 5), &p);
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(2, 5)), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), p);
  assert_iota_f32(t, 0.0f, 10);
  ct_tensor_free(t);
}
END_TEST

/* ---- Resize ------------------------------------------------------------------------------- */

START_TEST(resize_sets_dims_without_allocating) {
  ct_tensor *t = ct_tensor_new();
  ct_ddim d;
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(2, 3, 4)), CT_OK);
  d = ct_tensor_dims(t);
  ck_assert_int_eq(d.rank, 3);
  ck_assert_int_eq(d.d[0], 2);
  ck_assert_int_eq(d.d[1], 3);
  ck_assert_int_eq(d.d[2], 4);
  ck_assert_int_eq(ct_tensor_numel(t), 24);
  ck_assert(!ct_tensor_has_memory(t));
  ck_assert_uint_eq(cpu_stats().allocs, 0);
  ct_tensor_free(t);
}
END_TEST

START_TEST(resize_keeps_memory) {
  float *p;
  ct_tensor *t = iota_f32(CT_DIMS(4), &p);
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(1000)), CT_OK);
  ck_assert(ct_tensor_has_memory(t));
  ck_assert_int_eq(ct_tensor_dtype(t), CT_FLOAT32);
  ck_assert_uint_eq(cpu_stats().allocs, 1);
  ck_assert_uint_eq(cpu_stats().frees, 0);
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(4)), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), p);
  assert_iota_f32(t, 0.0f, 4);
  ct_tensor_free(t);
}
END_TEST

START_TEST(resize_negative_extent_is_invalid_argument) {
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(4, 5)), CT_OK);
  CT_ASSERT_FAILS(ct_tensor_resize(t, CT_DIMS(2, -1)), CT_ERR_INVALID_ARGUMENT);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(4, 5)));
  ct_tensor_free(t);
}
END_TEST

START_TEST(resize_rank_above_max_is_out_of_range) {
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(4, 5)), CT_OK);
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(1, 1, 1, 1, 1, 1, 1, 1, 1, 1)),
                   CT_ERR_OUT_OF_RANGE);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(4, 5)));
  /* Exactly CT_MAX_RANK extents is fine. */
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(1, 2, 1, 1, 1, 1, 1, 1, 3)), CT_OK);
  ck_assert_int_eq(ct_tensor_dims(t).rank, 9);
  ck_assert_int_eq(ct_tensor_numel(t), 6);
  ct_tensor_free(t);
}
END_TEST

START_TEST(resize_unset_rank_is_invalid_argument) {
  ct_tensor *t = ct_tensor_new();
  ct_ddim unset;
  memset(&unset, 0, sizeof unset);
  unset.rank = -1;
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(3)), CT_OK);
  ck_assert_int_eq(ct_tensor_resize(t, unset), CT_ERR_INVALID_ARGUMENT);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(3)));
  ct_tensor_free(t);
}
END_TEST

START_TEST(resize_overflowing_size_is_out_of_range) {
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(3)), CT_OK);
  /* numel overflows int64 */
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS((int64_t)1 << 40, (int64_t)1 << 40)),
                   CT_ERR_OUT_OF_RANGE);
  /* numel fits, numel x 8 bytes does not */
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS((int64_t)1 << 61)), CT_ERR_OUT_OF_RANGE);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(3)));
  ct_tensor_free(t);
}
END_TEST

/* ---- NULL arguments and variables ------------------------------------------------------------ */

START_TEST(null_tensor_arguments_are_invalid_argument) {
  float v = 1.0f;
  CT_ASSERT_FAILS(ct_tensor_resize(NULL, CT_DIMS(2)), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_NULL_FAILS(ct_tensor_data(NULL, CT_FLOAT32), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_wrap(NULL, &v, CT_DIMS(1), CT_FLOAT32, ct_cpu(), NULL, NULL),
                   CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_set_value(NULL, &v, CT_DIMS(1), CT_FLOAT32, ct_cpu()),
                   CT_ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(accessors_of_null_give_defaults) {
  ck_assert_int_eq(ct_tensor_dims(NULL).rank, -1);
  ck_assert_int_eq(ct_tensor_dtype(NULL), CT_DTYPE_UNDEFINED);
  ck_assert(ct_place_equal(ct_tensor_place(NULL), ct_cpu()));
  ck_assert_int_eq(ct_tensor_numel(NULL), -1);
  ck_assert(!ct_tensor_has_memory(NULL));
  ck_assert(!ct_tensor_is_external(NULL));
  ck_assert_uint_eq(ct_tensor_capacity(NULL), 0);
}
END_TEST

START_TEST(free_null_is_noop) {
  ct_tensor_free(NULL);
  ck_assert_uint_eq(cpu_stats().frees, 0);
}
END_TEST

START_TEST(var_tensor_is_created_lazily) {
  ct_var *v = ct_var_new();
  ct_tensor *t;
  ck_assert_ptr_nonnull(v);
  CT_ASSERT_NULL_FAILS(ct_var_get_tensor(v), CT_ERR_UNINITIALIZED);
  t = ct_var_tensor(v);
  ck_assert_ptr_nonnull(t);
  ck_assert(ct_var_is(v, &ct_tensor_type));
  ck_assert_int_eq(ct_tensor_dims(t).rank, -1);
  ck_assert(!ct_tensor_has_memory(t));
  ck_assert_ptr_eq(ct_var_tensor(v), t);
  ck_assert_ptr_eq(ct_var_get_tensor(v), t);
  ck_assert_uint_eq(cpu_stats().allocs, 0);
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(8)), CT_OK);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()));
  ck_assert_uint_eq(cpu_stats().allocated, 32);
  ct_var_free(v);
  ck_assert_uint_eq(cpu_stats().allocated, 0);
  ck_assert_uint_eq(cpu_stats().frees, 1);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("tensor");
  CT_ADD_TEST(s, new_tensor_is_unset);
  CT_ADD_TEST(s, data_without_memory_is_uninitialized);
  CT_ADD_TEST(s, mutable_data_with_unset_dims_is_shape_error);
  CT_ADD_TEST(s, mutable_data_allocates_numel_times_dtype_size);
  CT_ADD_TEST(s, mutable_data_of_scalar_holds_one_element);
  CT_ADD_TEST(s, mutable_data_of_zero_elements_is_valid);
  CT_ADD_TEST(s, mutable_data_keeps_block_when_size_stays);
  CT_ADD_TEST(s, mutable_data_keeps_block_when_shrinking);
  CT_ADD_TEST(s, mutable_data_keeps_block_when_dtype_fits);
  CT_ADD_TEST(s, mutable_data_replaces_block_when_growing);
  CT_ADD_TEST(s, mutable_data_replaces_block_for_larger_dtype);
  CT_ADD_TEST(s, mutable_data_bad_dtype_or_place_is_invalid_argument);
  CT_ADD_TEST(s, mutable_data_on_cuda_is_unsupported);
  CT_ADD_TEST(s, data_with_wrong_dtype_is_type_mismatch);
  CT_ADD_TEST(s, data_after_growing_past_capacity_is_out_of_range);
  CT_ADD_TEST(s, data_after_shrinking_keeps_values);
  CT_ADD_TEST(s, resize_sets_dims_without_allocating);
  CT_ADD_TEST(s, resize_keeps_memory);
  CT_ADD_TEST(s, resize_negative_extent_is_invalid_argument);
  CT_ADD_TEST(s, resize_rank_above_max_is_out_of_range);
  CT_ADD_TEST(s, resize_unset_rank_is_invalid_argument);
  CT_ADD_TEST(s, resize_overflowing_size_is_out_of_range);
  CT_ADD_TEST(s, null_tensor_arguments_are_invalid_argument);
  CT_ADD_TEST(s, accessors_of_null_give_defaults);
  CT_ADD_TEST(s, free_null_is_noop);
  CT_ADD_TEST(s, var_tensor_is_created_lazily);
  return s;
}

CT_TEST_MAIN(make_suite)
