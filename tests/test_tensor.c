/* Tests of corten/tensor.h: dims, lazy memory, views, external buffers, copy, set_value, move.
 * Each test runs in its own process, so the memory stats start at zero. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>

#include <corten/corten.h>

#include "harness.h"

/* ---- Helpers ------------------------------------------------------------------------------- */

static ct_memory_stats cpu_stats(void) {
  ct_memory_stats s;
  memset(&s, 0xAB, sizeof s);
  ck_assert_int_eq(ct_memory_stats_get(ct_cpu(), &s), CT_OK);
  return s;
}

static ct_place bad_place(void) { return (ct_place){(ct_device_kind)99, 0}; }

/* A tensor of the given dims holding float32 memory filled with 0, 1, 2, ... */
static ct_tensor *iota_f32(ct_ddim dims, float **data) {
  ct_tensor *t = ct_tensor_new();
  float *p;
  int64_t i, n;
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(ct_tensor_resize(t, dims), CT_OK);
  p = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu());
  ck_assert_ptr_nonnull(p);
  n = ct_tensor_numel(t);
  for (i = 0; i < n; i++) p[i] = (float)i;
  if (data) *data = p;
  return t;
}

/* Asserts that t holds float32 values first, first+1, ... over n elements. */
static void assert_iota_f32(const ct_tensor *t, float first, int64_t n) {
  const float *p = ct_tensor_data(t, CT_FLOAT32);
  int64_t i;
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(ct_tensor_numel(t), n);
  for (i = 0; i < n; i++) ck_assert(p[i] == first + (float)i);
}

static void count_release(void *ctx) { (*(int *)ctx)++; }

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
  ck_assert_ptr_null(ct_tensor_data(t, CT_FLOAT32));
  ck_assert_int_eq(ct_last_status(), CT_ERR_UNINITIALIZED);
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(2, 3)), CT_OK);
  ct_clear_error();
  ck_assert_ptr_null(ct_tensor_data(t, CT_FLOAT32));
  ck_assert_int_eq(ct_last_status(), CT_ERR_UNINITIALIZED);
  msg = ct_last_error();
  ck_assert_ptr_nonnull(strstr(msg, "ct_tensor_mutable_data"));
  ck_assert_ptr_nonnull(strstr(msg, "[2,3]"));
  ct_tensor_free(t);
}
END_TEST

START_TEST(mutable_data_with_unset_dims_is_shape_error) {
  ct_tensor *t = ct_tensor_new();
  ck_assert_ptr_null(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()));
  ck_assert_int_eq(ct_last_status(), CT_ERR_SHAPE);
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
  ck_assert_ptr_null(ct_tensor_mutable_data(NULL, CT_FLOAT32, ct_cpu()));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ct_clear_error();
  ck_assert_ptr_null(ct_tensor_mutable_data(t, CT_DTYPE_UNDEFINED, ct_cpu()));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ct_clear_error();
  ck_assert_ptr_null(ct_tensor_mutable_data(t, (ct_dtype)42, ct_cpu()));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ct_clear_error();
  ck_assert_ptr_null(ct_tensor_mutable_data(t, CT_FLOAT32, bad_place()));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ck_assert(!ct_tensor_has_memory(t));
  ck_assert_int_eq(ct_tensor_dtype(t), CT_DTYPE_UNDEFINED);
  ck_assert_uint_eq(cpu_stats().allocs, 0);
  ct_tensor_free(t);
}
END_TEST

/* What a CUDA place gives where it cannot hold memory: CT_ERR_UNSUPPORTED in a build without
 * CUDA, CT_ERR_DEVICE in a CUDA build on a machine without a GPU. The tests using it do nothing
 * where a GPU is present (tests/test_cuda.c covers that). */
static ct_status no_cuda_status(void) {
  return ct_cuda_is_built() ? CT_ERR_DEVICE : CT_ERR_UNSUPPORTED;
}

START_TEST(mutable_data_on_cuda_is_unsupported) {
  if (ct_cuda_device_count() > 0) return;
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(2)), CT_OK);
  ck_assert_ptr_null(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cuda(0)));
  ck_assert_int_eq(ct_last_status(), no_cuda_status());
  ck_assert(!ct_tensor_has_memory(t));
  ck_assert_int_eq(ct_tensor_dtype(t), CT_DTYPE_UNDEFINED);
  ct_tensor_free(t);
}
END_TEST

START_TEST(data_with_wrong_dtype_is_type_mismatch) {
  ct_tensor *t = iota_f32(CT_DIMS(2, 3), NULL);
  ck_assert_ptr_null(ct_tensor_data(t, CT_INT32));
  ck_assert_int_eq(ct_last_status(), CT_ERR_TYPE_MISMATCH);
  ct_clear_error();
  ck_assert_ptr_null(ct_tensor_data(t, CT_FLOAT64));
  ck_assert_int_eq(ct_last_status(), CT_ERR_TYPE_MISMATCH);
  ck_assert_ptr_nonnull(ct_tensor_data(t, CT_FLOAT32));
  ct_tensor_free(t);
}
END_TEST

START_TEST(data_after_growing_past_capacity_is_out_of_range) {
  float *p;
  ct_tensor *t = iota_f32(CT_DIMS(2, 3), &p);
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(100, 100)), CT_OK);
  ck_assert(ct_tensor_has_memory(t));
  ck_assert_ptr_null(ct_tensor_data(t, CT_FLOAT32));
  ck_assert_int_eq(ct_last_status(), CT_ERR_OUT_OF_RANGE);
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
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(2, -1)), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
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

/* ---- Share ------------------------------------------------------------------------------- */

START_TEST(share_views_the_same_memory) {
  float *p;
  ct_tensor *src = iota_f32(CT_DIMS(2, 3), &p);
  ct_tensor *dst = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_share(dst, src), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(dst, CT_FLOAT32), p);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(2, 3)));
  ck_assert_int_eq(ct_tensor_dtype(dst), CT_FLOAT32);
  ck_assert(ct_tensor_shares_memory(dst, src));
  ck_assert(!ct_tensor_is_external(dst));
  ck_assert_uint_eq(ct_tensor_capacity(dst), ct_tensor_capacity(src));
  ck_assert_uint_eq(cpu_stats().allocs, 1);
  /* A write through one view shows through the other. */
  p[4] = 42.0f;
  ck_assert(((const float *)ct_tensor_data(dst, CT_FLOAT32))[4] == 42.0f);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(shared_memory_lives_until_last_view) {
  ct_tensor *src = iota_f32(CT_DIMS(100, 200), NULL);
  ct_tensor *a = ct_tensor_new(), *b = ct_tensor_new();
  ct_memory_stats s;
  ck_assert_int_eq(ct_tensor_share(a, src), CT_OK);
  ck_assert_int_eq(ct_tensor_share(b, a), CT_OK);
  ct_tensor_free(src);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 80000);
  ck_assert_uint_eq(s.frees, 0);
  assert_iota_f32(a, 0.0f, 20000);
  ct_tensor_free(a);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 80000);
  ck_assert_uint_eq(s.frees, 0);
  assert_iota_f32(b, 0.0f, 20000);
  ct_tensor_free(b);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.reserved, 0);
  ck_assert_uint_eq(s.frees, 1);
}
END_TEST

START_TEST(share_lets_go_of_dst_memory) {
  ct_tensor *src = iota_f32(CT_DIMS(10), NULL);
  ct_tensor *dst = iota_f32(CT_DIMS(20), NULL);
  ct_memory_stats s;
  ck_assert_int_eq(ct_tensor_share(dst, src), CT_OK);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocs, 2);
  ck_assert_uint_eq(s.frees, 1);
  ck_assert_uint_eq(s.allocated, 40);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(shares_memory_needs_a_common_block) {
  ct_tensor *a = iota_f32(CT_DIMS(4), NULL);
  ct_tensor *b = iota_f32(CT_DIMS(4), NULL);
  ct_tensor *e1 = ct_tensor_new(), *e2 = ct_tensor_new();
  ck_assert(!ct_tensor_shares_memory(a, b));
  ck_assert(ct_tensor_shares_memory(a, a));
  ck_assert(!ct_tensor_shares_memory(e1, e2));
  ck_assert(!ct_tensor_shares_memory(a, e1));
  ck_assert(!ct_tensor_shares_memory(a, NULL));
  ck_assert(!ct_tensor_shares_memory(NULL, NULL));
  ct_tensor_free(a);
  ct_tensor_free(b);
  ct_tensor_free(e1);
  ct_tensor_free(e2);
}
END_TEST

/* ---- Slice ------------------------------------------------------------------------------- */

START_TEST(slice_rows_offsets_data_by_rows) {
  float *p;
  ct_tensor *src = iota_f32(CT_DIMS(4, 5), &p);
  ct_tensor *dst = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_slice(dst, src, 1, 3), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(dst, CT_FLOAT32), p + 5);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(2, 5)));
  ck_assert_int_eq(ct_tensor_dtype(dst), CT_FLOAT32);
  ck_assert(ct_tensor_shares_memory(dst, src));
  ck_assert_uint_eq(ct_tensor_capacity(dst), ct_tensor_capacity(src) - 20);
  assert_iota_f32(dst, 5.0f, 10);
  /* The source is untouched. */
  ck_assert(ct_ddim_equal(ct_tensor_dims(src), CT_DIMS(4, 5)));
  ck_assert_ptr_eq(ct_tensor_data(src, CT_FLOAT32), p);
  ck_assert_uint_eq(cpu_stats().allocs, 1);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(slice_of_vector_offsets_by_elements) {
  ct_tensor *src = ct_tensor_new(), *dst = ct_tensor_new();
  int32_t *p;
  int i;
  ck_assert_int_eq(ct_tensor_resize(src, CT_DIMS(10)), CT_OK);
  p = ct_tensor_mutable_data(src, CT_INT32, ct_cpu());
  for (i = 0; i < 10; i++) p[i] = i * 3;
  ck_assert_int_eq(ct_tensor_slice(dst, src, 2, 5), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(dst, CT_INT32), p + 2);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(3)));
  ck_assert_int_eq(((const int32_t *)ct_tensor_data(dst, CT_INT32))[2], 12);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(slice_of_slice_adds_offsets) {
  float *p;
  ct_tensor *src = iota_f32(CT_DIMS(4, 5), &p);
  ct_tensor *mid = ct_tensor_new(), *dst = ct_tensor_new();
  ct_memory_stats s;
  ck_assert_int_eq(ct_tensor_slice(mid, src, 1, 4), CT_OK);
  ck_assert_int_eq(ct_tensor_slice(dst, mid, 1, 2), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(dst, CT_FLOAT32), p + 10);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(1, 5)));
  assert_iota_f32(dst, 10.0f, 5);
  ck_assert_uint_eq(ct_tensor_capacity(dst), ct_tensor_capacity(src) - 40);
  ct_tensor_free(src);
  ct_tensor_free(mid);
  ck_assert_uint_eq(cpu_stats().frees, 0);
  assert_iota_f32(dst, 10.0f, 5);
  ct_tensor_free(dst);
  s = cpu_stats();
  ck_assert_uint_eq(s.frees, 1);
  ck_assert_uint_eq(s.allocated, 0);
}
END_TEST

START_TEST(slice_bounds_outside_rows_are_out_of_range) {
  float *p, *q;
  ct_tensor *src = iota_f32(CT_DIMS(4, 5), &p);
  ct_tensor *dst = iota_f32(CT_DIMS(3), &q);
  ck_assert_int_eq(ct_tensor_slice(dst, src, -1, 2), CT_ERR_OUT_OF_RANGE);
  ck_assert_int_eq(ct_last_status(), CT_ERR_OUT_OF_RANGE);
  ck_assert_int_eq(ct_tensor_slice(dst, src, 0, 5), CT_ERR_OUT_OF_RANGE);
  ck_assert_int_eq(ct_tensor_slice(dst, src, 3, 2), CT_ERR_OUT_OF_RANGE);
  ck_assert_int_eq(ct_tensor_slice(dst, src, 5, 5), CT_ERR_OUT_OF_RANGE);
  /* dst is unchanged */
  ck_assert_ptr_eq(ct_tensor_data(dst, CT_FLOAT32), q);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(3)));
  ck_assert(!ct_tensor_shares_memory(dst, src));
  assert_iota_f32(dst, 0.0f, 3);
  ck_assert_uint_eq(cpu_stats().frees, 0);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(slice_with_begin_equal_end_is_empty) {
  float *p;
  ct_tensor *src = iota_f32(CT_DIMS(4, 5), &p);
  ct_tensor *dst = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_slice(dst, src, 2, 2), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(0, 5)));
  ck_assert_int_eq(ct_tensor_numel(dst), 0);
  ck_assert(ct_tensor_shares_memory(dst, src));
  ck_assert_int_eq(ct_tensor_slice(dst, src, 4, 4), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(0, 5)));
  ck_assert_int_eq(ct_tensor_slice(dst, src, 0, 0), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(0, 5)));
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(slice_whole_range_is_the_source) {
  float *p;
  ct_tensor *src = iota_f32(CT_DIMS(4, 5), &p);
  ct_tensor *dst = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_slice(dst, src, 0, 4), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(dst, CT_FLOAT32), p);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(4, 5)));
  ck_assert_uint_eq(ct_tensor_capacity(dst), ct_tensor_capacity(src));
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(slice_of_scalar_is_out_of_range) {
  ct_tensor *src = iota_f32(CT_DIMS(), NULL);
  ct_tensor *dst = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_slice(dst, src, 0, 1), CT_ERR_OUT_OF_RANGE);
  ck_assert_int_eq(ct_tensor_slice(dst, src, 0, 0), CT_ERR_OUT_OF_RANGE);
  ck_assert(!ct_tensor_has_memory(dst));
  ck_assert_int_eq(ct_tensor_dims(dst).rank, -1);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

/* ---- Flatten ------------------------------------------------------------------------------- */

START_TEST(flatten_to_2d_splits_at_num_col_dims) {
  float *p;
  ct_tensor *src = iota_f32(CT_DIMS(2, 3, 4), &p);
  ct_tensor *dst = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_flatten_to_2d(dst, src, 1), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(2, 12)));
  ck_assert_ptr_eq(ct_tensor_data(dst, CT_FLOAT32), p);
  ck_assert(ct_tensor_shares_memory(dst, src));
  ck_assert_int_eq(ct_tensor_flatten_to_2d(dst, src, 2), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(6, 4)));
  ck_assert_int_eq(ct_tensor_flatten_to_2d(dst, src, 0), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(1, 24)));
  ck_assert_int_eq(ct_tensor_flatten_to_2d(dst, src, 3), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(24, 1)));
  ck_assert_int_eq(ct_tensor_dtype(dst), CT_FLOAT32);
  assert_iota_f32(dst, 0.0f, 24);
  ck_assert(ct_ddim_equal(ct_tensor_dims(src), CT_DIMS(2, 3, 4)));
  ck_assert_uint_eq(cpu_stats().allocs, 1);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(flatten_to_2d_num_col_dims_outside_rank_is_out_of_range) {
  ct_tensor *src = iota_f32(CT_DIMS(2, 3, 4), NULL);
  ct_tensor *dst = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_flatten_to_2d(dst, src, 4), CT_ERR_OUT_OF_RANGE);
  ck_assert_int_eq(ct_last_status(), CT_ERR_OUT_OF_RANGE);
  ck_assert_int_eq(ct_tensor_flatten_to_2d(dst, src, -1), CT_ERR_OUT_OF_RANGE);
  ck_assert(!ct_tensor_has_memory(dst));
  ck_assert_int_eq(ct_tensor_dims(dst).rank, -1);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(flatten_to_2d_of_scalar_is_1x1) {
  ct_tensor *src = iota_f32(CT_DIMS(), NULL);
  ct_tensor *dst = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_flatten_to_2d(dst, src, 0), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(1, 1)));
  ck_assert_int_eq(ct_tensor_flatten_to_2d(dst, src, 1), CT_ERR_OUT_OF_RANGE);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

/* ---- View errors and corner cases ----------------------------------------------------------- */

START_TEST(views_of_tensor_without_memory_are_uninitialized) {
  ct_tensor *src = ct_tensor_new(), *dst = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_share(dst, src), CT_ERR_UNINITIALIZED);
  ck_assert_int_eq(ct_tensor_resize(src, CT_DIMS(4, 5)), CT_OK);
  ck_assert_int_eq(ct_tensor_share(dst, src), CT_ERR_UNINITIALIZED);
  ck_assert_int_eq(ct_last_status(), CT_ERR_UNINITIALIZED);
  ck_assert_int_eq(ct_tensor_slice(dst, src, 0, 2), CT_ERR_UNINITIALIZED);
  ck_assert_int_eq(ct_tensor_flatten_to_2d(dst, src, 1), CT_ERR_UNINITIALIZED);
  ck_assert(!ct_tensor_has_memory(dst));
  ck_assert_int_eq(ct_tensor_dims(dst).rank, -1);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(views_of_tensor_past_capacity_are_out_of_range) {
  ct_tensor *src = iota_f32(CT_DIMS(2, 3), NULL);
  ct_tensor *dst = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(src, CT_DIMS(100, 100)), CT_OK);
  ck_assert_int_eq(ct_tensor_share(dst, src), CT_ERR_OUT_OF_RANGE);
  ck_assert_int_eq(ct_tensor_slice(dst, src, 0, 1), CT_ERR_OUT_OF_RANGE);
  ck_assert_int_eq(ct_tensor_flatten_to_2d(dst, src, 1), CT_ERR_OUT_OF_RANGE);
  ck_assert(!ct_tensor_has_memory(dst));
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(failed_view_leaves_dst_unchanged) {
  float *q;
  ct_tensor *src = ct_tensor_new();
  ct_tensor *dst = iota_f32(CT_DIMS(3), &q);
  ck_assert_int_eq(ct_tensor_resize(src, CT_DIMS(4, 5)), CT_OK);
  ck_assert_int_eq(ct_tensor_share(dst, src), CT_ERR_UNINITIALIZED);
  ck_assert_int_eq(ct_tensor_slice(dst, src, 0, 1), CT_ERR_UNINITIALIZED);
  ck_assert_int_eq(ct_tensor_flatten_to_2d(dst, src, 1), CT_ERR_UNINITIALIZED);
  ck_assert(ct_tensor_has_memory(dst));
  ck_assert_ptr_eq(ct_tensor_data(dst, CT_FLOAT32), q);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(3)));
  assert_iota_f32(dst, 0.0f, 3);
  ck_assert_uint_eq(cpu_stats().frees, 0);
  ck_assert_uint_eq(cpu_stats().allocated, 12);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(views_onto_the_source_itself) {
  float *p;
  ct_tensor *t = iota_f32(CT_DIMS(4, 5), &p);
  ct_tensor *u = iota_f32(CT_DIMS(2, 3, 4), NULL);
  ct_memory_stats s;
  ck_assert_int_eq(ct_tensor_share(t, t), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), p);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(4, 5)));
  ck_assert_int_eq(ct_tensor_slice(t, t, 1, 3), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), p + 5);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(2, 5)));
  assert_iota_f32(t, 5.0f, 10);
  ck_assert_int_eq(ct_tensor_flatten_to_2d(u, u, 2), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(u), CT_DIMS(6, 4)));
  assert_iota_f32(u, 0.0f, 24);
  s = cpu_stats();
  ck_assert_uint_eq(s.frees, 0);
  ck_assert_uint_eq(s.allocated, 80 + 96);
  ct_tensor_free(t);
  ct_tensor_free(u);
  s = cpu_stats();
  ck_assert_uint_eq(s.frees, 2);
  ck_assert_uint_eq(s.allocated, 0);
}
END_TEST

START_TEST(views_with_null_are_invalid_argument) {
  ct_tensor *t = iota_f32(CT_DIMS(4, 5), NULL);
  ck_assert_int_eq(ct_tensor_share(NULL, t), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_share(t, NULL), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_slice(NULL, t, 0, 1), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_slice(t, NULL, 0, 1), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_flatten_to_2d(NULL, t, 1), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_flatten_to_2d(t, NULL, 1), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(4, 5)));
  ct_tensor_free(t);
}
END_TEST

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
  ck_assert_ptr_null(ct_tensor_mutable_data(t, CT_FLOAT64, ct_cpu()));
  ck_assert_int_eq(ct_last_status(), CT_ERR_EXTERNAL_BUFFER);
  ck_assert_int_eq(ct_tensor_dtype(t), CT_FLOAT32);
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(3, 3)), CT_OK);
  ct_clear_error();
  ck_assert_ptr_null(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()));
  ck_assert_int_eq(ct_last_status(), CT_ERR_EXTERNAL_BUFFER);
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
  ck_assert_int_eq(ct_tensor_copy(dst, src, ct_cpu()), CT_ERR_EXTERNAL_BUFFER);
  ck_assert_int_eq(ct_last_status(), CT_ERR_EXTERNAL_BUFFER);
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
  ck_assert_int_eq(ct_tensor_set_value(t, vals, CT_DIMS(3, 3), CT_FLOAT32, ct_cpu()),
                   CT_ERR_EXTERNAL_BUFFER);
  ck_assert_int_eq(ct_last_status(), CT_ERR_EXTERNAL_BUFFER);
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
  ck_assert_int_eq(ct_tensor_copy(dst, src, ct_cuda(0)), no_cuda_status());
  ck_assert_int_eq(ct_last_status(), no_cuda_status());
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

/* ---- NULL arguments and variables ------------------------------------------------------------ */

START_TEST(null_tensor_arguments_are_invalid_argument) {
  float v = 1.0f;
  ck_assert_int_eq(ct_tensor_resize(NULL, CT_DIMS(2)), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ct_clear_error();
  ck_assert_ptr_null(ct_tensor_data(NULL, CT_FLOAT32));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
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
  ck_assert_ptr_null(ct_var_get_tensor(v));
  ck_assert_int_eq(ct_last_status(), CT_ERR_UNINITIALIZED);
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

/* ---- Threads -------------------------------------------------------------------------------- */

#define NTHREADS 4
#define NROUNDS 500

typedef struct view_job {
  ct_tensor *normal;   /* this thread's view of a normal block */
  ct_tensor *external; /* this thread's view of an external buffer */
  int bad;
} view_job;

static atomic_int releases;

static void count_release_atomic(void *ctx) {
  (void)ctx;
  atomic_fetch_add(&releases, 1);
}

/* Makes and drops views of its two tensors, then frees them. */
static void *churn_views(void *arg) {
  view_job *j = arg;
  int r;
  for (r = 0; r < NROUNDS; r++) {
    ct_tensor *a = ct_tensor_new(), *b = ct_tensor_new();
    if (ct_tensor_share(a, j->normal) != CT_OK) j->bad++;
    if (ct_tensor_slice(b, j->external, 1, 3) != CT_OK) j->bad++;
    if (ct_tensor_slice(a, a, 0, 1) != CT_OK) j->bad++;
    ct_tensor_free(a);
    ct_tensor_free(b);
  }
  ct_tensor_free(j->normal);
  ct_tensor_free(j->external);
  j->normal = j->external = NULL;
  return NULL;
}

START_TEST(views_across_threads_free_block_once) {
  float buf[20] = {0};
  ct_tensor *normal = iota_f32(CT_DIMS(4, 5), NULL);
  ct_tensor *external = ct_tensor_new();
  view_job jobs[NTHREADS];
  pthread_t th[NTHREADS];
  ct_memory_stats s;
  int i;
  atomic_store(&releases, 0);
  ck_assert_int_eq(ct_tensor_wrap(external, buf, CT_DIMS(4, 5), CT_FLOAT32, ct_cpu(),
                                  count_release_atomic, NULL),
                   CT_OK);
  for (i = 0; i < NTHREADS; i++) {
    jobs[i].normal = ct_tensor_new();
    jobs[i].external = ct_tensor_new();
    jobs[i].bad = 0;
    ck_assert_int_eq(ct_tensor_share(jobs[i].normal, normal), CT_OK);
    ck_assert_int_eq(ct_tensor_share(jobs[i].external, external), CT_OK);
  }
  for (i = 0; i < NTHREADS; i++)
    ck_assert_int_eq(pthread_create(&th[i], NULL, churn_views, &jobs[i]), 0);
  /* The sources go while the threads run; the last view, in some thread, frees the block. */
  ct_tensor_free(normal);
  ct_tensor_free(external);
  for (i = 0; i < NTHREADS; i++) {
    ck_assert_int_eq(pthread_join(th[i], NULL), 0);
    ck_assert_int_eq(jobs[i].bad, 0);
  }
  ck_assert_int_eq(atomic_load(&releases), 1);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.allocs, 1);
  ck_assert_uint_eq(s.frees, 1);
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
  CT_ADD_TEST(s, share_views_the_same_memory);
  CT_ADD_TEST(s, shared_memory_lives_until_last_view);
  CT_ADD_TEST(s, share_lets_go_of_dst_memory);
  CT_ADD_TEST(s, shares_memory_needs_a_common_block);
  CT_ADD_TEST(s, slice_rows_offsets_data_by_rows);
  CT_ADD_TEST(s, slice_of_vector_offsets_by_elements);
  CT_ADD_TEST(s, slice_of_slice_adds_offsets);
  CT_ADD_TEST(s, slice_bounds_outside_rows_are_out_of_range);
  CT_ADD_TEST(s, slice_with_begin_equal_end_is_empty);
  CT_ADD_TEST(s, slice_whole_range_is_the_source);
  CT_ADD_TEST(s, slice_of_scalar_is_out_of_range);
  CT_ADD_TEST(s, flatten_to_2d_splits_at_num_col_dims);
  CT_ADD_TEST(s, flatten_to_2d_num_col_dims_outside_rank_is_out_of_range);
  CT_ADD_TEST(s, flatten_to_2d_of_scalar_is_1x1);
  CT_ADD_TEST(s, views_of_tensor_without_memory_are_uninitialized);
  CT_ADD_TEST(s, views_of_tensor_past_capacity_are_out_of_range);
  CT_ADD_TEST(s, failed_view_leaves_dst_unchanged);
  CT_ADD_TEST(s, views_onto_the_source_itself);
  CT_ADD_TEST(s, views_with_null_are_invalid_argument);
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
  CT_ADD_TEST(s, set_value_into_external_writes_in_place);
  CT_ADD_TEST(s, set_value_into_external_too_large_is_external_buffer);
  CT_ADD_TEST(s, copy_from_external_is_deep);
  CT_ADD_TEST(s, move_external_into_normal_dst);
  CT_ADD_TEST(s, move_normal_into_external_dst);
  CT_ADD_TEST(s, move_with_null_or_self_does_nothing);
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
  CT_ADD_TEST(s, null_tensor_arguments_are_invalid_argument);
  CT_ADD_TEST(s, accessors_of_null_give_defaults);
  CT_ADD_TEST(s, free_null_is_noop);
  CT_ADD_TEST(s, var_tensor_is_created_lazily);
  CT_ADD_TEST(s, views_across_threads_free_block_once);
  return s;
}

CT_TEST_MAIN(make_suite)
