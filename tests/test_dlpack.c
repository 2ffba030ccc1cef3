/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the export half of corten/dlpack.h: a tensor handed out as a DLManagedTensor,
 * zero-copy, with every dtype mapped, its memory kept until the deleter runs (exactly once), and
 * everything unrepresentable refused. Import is tested in test_dlpack_import.c. Each test runs
 * in its own process, so the memory stats start at zero. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "harness.h"

/* ---- Export ---------------------------------------------------------------------------------- */

START_TEST(to_dlpack_describes_the_tensor) {
  ct_tensor *t = iota_f32(CT_DIMS(2, 3), NULL);
  DLManagedTensor *m = NULL;
  ck_assert_int_eq(ct_tensor_to_dlpack(t, &m), CT_OK);
  ck_assert_ptr_nonnull(m);
  DLTensor *x = &m->dl_tensor;
  ck_assert_ptr_eq(x->data, ct_tensor_data(t, CT_FLOAT32));
  ck_assert_int_eq(x->device.device_type, kDLCPU);
  ck_assert_int_eq(x->device.device_id, 0);
  ck_assert_int_eq(x->ndim, 2);
  ck_assert_int_eq(x->shape[0], 2);
  ck_assert_int_eq(x->shape[1], 3);
  ck_assert_ptr_nonnull(x->strides);
  ck_assert_int_eq(x->strides[0], 3);
  ck_assert_int_eq(x->strides[1], 1);
  ck_assert_uint_eq(x->dtype.code, kDLFloat);
  ck_assert_uint_eq(x->dtype.bits, 32);
  ck_assert_uint_eq(x->dtype.lanes, 1);
  ck_assert_uint_eq(x->byte_offset, 0);
  ck_assert_ptr_nonnull(m->deleter);
  m->deleter(m);
  ct_tensor_free(t);
}
END_TEST

START_TEST(to_dlpack_keeps_memory_until_the_deleter) {
  ct_tensor *t = iota_f32(CT_DIMS(4), NULL);
  DLManagedTensor *m = NULL;
  ck_assert_int_eq(ct_tensor_to_dlpack(t, &m), CT_OK);
  ct_tensor_free(t);
  ck_assert_uint_eq(cpu_stats().frees, 0);
  ck_assert_uint_eq(cpu_stats().allocated, 16);
  const float *p = m->dl_tensor.data;
  ck_assert(p[0] == 0.0f && p[3] == 3.0f);
  m->deleter(m);
  ck_assert_uint_eq(cpu_stats().frees, 1);
  ck_assert_uint_eq(cpu_stats().allocated, 0);
}
END_TEST

START_TEST(to_dlpack_twice_needs_both_deleters) {
  ct_tensor *t = iota_f32(CT_DIMS(4), NULL);
  DLManagedTensor *a = NULL, *b = NULL;
  ck_assert_int_eq(ct_tensor_to_dlpack(t, &a), CT_OK);
  ck_assert_int_eq(ct_tensor_to_dlpack(t, &b), CT_OK);
  ck_assert_ptr_ne(a, b);
  ck_assert_ptr_eq(a->dl_tensor.data, b->dl_tensor.data);
  ct_tensor_free(t);
  a->deleter(a);
  ck_assert_uint_eq(cpu_stats().frees, 0);
  b->deleter(b);
  ck_assert_uint_eq(cpu_stats().frees, 1);
}
END_TEST

START_TEST(to_dlpack_of_a_slice_starts_at_its_first_row) {
  ct_tensor *t = iota_f32(CT_DIMS(4, 2), NULL);
  ct_tensor *rows = ct_tensor_new();
  DLManagedTensor *m = NULL;
  ck_assert_int_eq(ct_tensor_slice(rows, t, 1, 3), CT_OK);
  ck_assert_int_eq(ct_tensor_to_dlpack(rows, &m), CT_OK);
  ck_assert_ptr_eq(m->dl_tensor.data, (const float *)ct_tensor_data(t, CT_FLOAT32) + 2);
  ck_assert_uint_eq(m->dl_tensor.byte_offset, 0);
  ck_assert_int_eq(m->dl_tensor.shape[0], 2);
  ck_assert_int_eq(m->dl_tensor.shape[1], 2);
  ck_assert(((const float *)m->dl_tensor.data)[0] == 2.0f);
  m->deleter(m);
  ct_tensor_free(rows);
  ct_tensor_free(t);
}
END_TEST

START_TEST(to_dlpack_of_a_scalar_has_ndim_0) {
  ct_tensor *t = iota_f32(CT_DIMS(), NULL);
  DLManagedTensor *m = NULL;
  ck_assert_int_eq(ct_tensor_to_dlpack(t, &m), CT_OK);
  ck_assert_int_eq(m->dl_tensor.ndim, 0);
  ck_assert_ptr_nonnull(m->dl_tensor.shape);
  m->deleter(m);
  ct_tensor_free(t);
}
END_TEST

START_TEST(to_dlpack_maps_every_dtype) {
  static const struct {
    ct_dtype t;
    uint8_t code, bits;
  } map[] = {
      {CT_INT8, kDLInt, 8},       {CT_UINT8, kDLUInt, 8},     {CT_INT16, kDLInt, 16},
      {CT_INT32, kDLInt, 32},     {CT_INT64, kDLInt, 64},     {CT_FLOAT16, kDLFloat, 16},
      {CT_BFLOAT16, kDLBfloat, 16}, {CT_FLOAT32, kDLFloat, 32}, {CT_FLOAT64, kDLFloat, 64},
      {CT_BOOL, CT_DLPACK_BOOL, 8}, /* kDLBool, whatever the DLPack header's version */
      {CT_UINT16, kDLUInt, 16},   {CT_UINT32, kDLUInt, 32},   {CT_UINT64, kDLUInt, 64},
  };
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
    ct_tensor *t = ct_tensor_new();
    DLManagedTensor *m = NULL;
    ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(3)), CT_OK);
    ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, map[i].t, ct_cpu()));
    ck_assert_int_eq(ct_tensor_to_dlpack(t, &m), CT_OK);
    ck_assert_uint_eq(m->dl_tensor.dtype.code, map[i].code);
    ck_assert_uint_eq(m->dl_tensor.dtype.bits, map[i].bits);
    ck_assert_uint_eq(m->dl_tensor.dtype.lanes, 1);
    m->deleter(m);
    ct_tensor_free(t);
  }
}
END_TEST

START_TEST(to_dlpack_without_memory_is_uninitialized) {
  ct_tensor *t = ct_tensor_new();
  DLManagedTensor *m = (DLManagedTensor *)&m;
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(2, 3)), CT_OK);
  ck_assert_int_eq(ct_tensor_to_dlpack(t, &m), CT_ERR_UNINITIALIZED);
  ck_assert_ptr_null(m);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "ct_tensor_to_dlpack"));
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "[2,3]"));
  ct_tensor_free(t);
}
END_TEST

START_TEST(to_dlpack_with_dims_beyond_capacity_is_out_of_range) {
  ct_tensor *t = iota_f32(CT_DIMS(2), NULL);
  DLManagedTensor *m = NULL;
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(100)), CT_OK);
  ck_assert_int_eq(ct_tensor_to_dlpack(t, &m), CT_ERR_OUT_OF_RANGE);
  ck_assert_ptr_null(m);
  ct_tensor_free(t);
}
END_TEST

START_TEST(to_dlpack_null_arguments_are_invalid) {
  ct_tensor *t = iota_f32(CT_DIMS(2), NULL);
  DLManagedTensor *m = (DLManagedTensor *)&m;
  ck_assert_int_eq(ct_tensor_to_dlpack(NULL, &m), CT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(m);
  ck_assert_int_eq(ct_tensor_to_dlpack(t, NULL), CT_ERR_INVALID_ARGUMENT);
  ck_assert_uint_eq(cpu_stats().allocs, 1);
  ct_tensor_free(t);
  ck_assert_uint_eq(cpu_stats().frees, 1);
}
END_TEST

static Suite *dlpack_suite(void) {
  Suite *s = suite_create("dlpack");
  CT_ADD_TEST(s, to_dlpack_describes_the_tensor);
  CT_ADD_TEST(s, to_dlpack_keeps_memory_until_the_deleter);
  CT_ADD_TEST(s, to_dlpack_twice_needs_both_deleters);
  CT_ADD_TEST(s, to_dlpack_of_a_slice_starts_at_its_first_row);
  CT_ADD_TEST(s, to_dlpack_of_a_scalar_has_ndim_0);
  CT_ADD_TEST(s, to_dlpack_maps_every_dtype);
  CT_ADD_TEST(s, to_dlpack_without_memory_is_uninitialized);
  CT_ADD_TEST(s, to_dlpack_with_dims_beyond_capacity_is_out_of_range);
  CT_ADD_TEST(s, to_dlpack_null_arguments_are_invalid);
  return s;
}

CT_TEST_MAIN(dlpack_suite)
