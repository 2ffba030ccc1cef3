/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the import half of corten/dlpack.h: a producer's DLManagedTensor viewed zero-copy,
 * its deleter run exactly once when the last view goes, and everything unrepresentable refused
 * without taking ownership. Each test runs in its own process, so the memory stats start at
 * zero. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "harness.h"

/* ---- A producer ------------------------------------------------------------------------------ */

/* A producer's tensor: a DLManagedTensor over its own float array, whose deleter counts. */
typedef struct producer {
  DLManagedTensor m;
  int64_t shape[12];
  int64_t strides[12];
  _Alignas(64) float data[64];
  int deleted;
} producer;

static void producer_deleter(DLManagedTensor *m) { ((producer *)m->manager_ctx)->deleted++; }

/* A compact float32 CPU producer of the given shape (extents multiply to at most 64), holding
 * 0, 1, 2, ... */
static void producer_init(producer *p, int ndim, const int64_t *shape) {
  memset(p, 0, sizeof *p);
  for (int i = 0; i < 64; i++) p->data[i] = (float)i;
  for (int i = 0; i < ndim; i++) p->shape[i] = shape[i];
  p->m.dl_tensor.data = p->data;
  p->m.dl_tensor.device.device_type = kDLCPU;
  p->m.dl_tensor.device.device_id = 0;
  p->m.dl_tensor.ndim = ndim;
  p->m.dl_tensor.dtype.code = kDLFloat;
  p->m.dl_tensor.dtype.bits = 32;
  p->m.dl_tensor.dtype.lanes = 1;
  p->m.dl_tensor.shape = p->shape;
  p->m.dl_tensor.strides = NULL;
  p->m.dl_tensor.byte_offset = 0;
  p->m.manager_ctx = p;
  p->m.deleter = producer_deleter;
}

static void producer_2x3(producer *p) {
  const int64_t shape[] = {2, 3};
  producer_init(p, 2, shape);
}

/* Asserts that from_dlpack fails with status s, leaves t as it was (holding memory `had`, or
 * none) and takes no ownership (the deleter did not run). */
static void assert_refused(ct_tensor *t, producer *p, ct_status s, const void *had) {
  CT_ASSERT_FAILS(ct_tensor_from_dlpack(t, &p->m), s);
  ck_assert_int_eq(p->deleted, 0);
  if (had == NULL) {
    ck_assert(!ct_tensor_has_memory(t));
  } else {
    ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), had);
  }
}

/* ---- Import ---------------------------------------------------------------------------------- */

START_TEST(from_dlpack_views_the_producer_memory) {
  producer p;
  ct_tensor *t = ct_tensor_new();
  producer_2x3(&p);
  ck_assert_int_eq(ct_tensor_from_dlpack(t, &p.m), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), p.data);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(2, 3)));
  ck_assert_int_eq(ct_tensor_numel(t), 6);
  ck_assert_int_eq(ct_tensor_dtype(t), CT_FLOAT32);
  ck_assert(ct_place_equal(ct_tensor_place(t), ct_cpu()));
  ck_assert(ct_tensor_is_external(t));
  ck_assert_uint_eq(ct_tensor_capacity(t), 24);
  ck_assert_uint_eq(cpu_stats().allocs, 0); /* nothing copied */
  p.data[5] = 42.0f;
  ck_assert(((const float *)ct_tensor_data(t, CT_FLOAT32))[5] == 42.0f);
  ck_assert_int_eq(p.deleted, 0);
  ct_tensor_free(t);
  ck_assert_int_eq(p.deleted, 1);
}
END_TEST

START_TEST(from_dlpack_deleter_runs_once_when_the_last_view_goes) {
  producer p;
  ct_tensor *t = ct_tensor_new(), *shared = ct_tensor_new(), *rows = ct_tensor_new();
  ct_tensor *flat = ct_tensor_new();
  producer_2x3(&p);
  ck_assert_int_eq(ct_tensor_from_dlpack(t, &p.m), CT_OK);
  ck_assert_int_eq(ct_tensor_share(shared, t), CT_OK);
  ck_assert_int_eq(ct_tensor_slice(rows, t, 1, 2), CT_OK);
  ck_assert_int_eq(ct_tensor_flatten_to_2d(flat, t, 1), CT_OK);
  ck_assert(ct_tensor_is_external(rows));
  ct_tensor_free(t);
  ct_tensor_free(shared);
  ct_tensor_free(flat);
  ck_assert_int_eq(p.deleted, 0);
  ck_assert(((const float *)ct_tensor_data(rows, CT_FLOAT32))[0] == 3.0f);
  ct_tensor_free(rows);
  ck_assert_int_eq(p.deleted, 1);
}
END_TEST

START_TEST(from_dlpack_replaces_what_the_tensor_held) {
  producer p;
  ct_tensor *t = iota_f32(CT_DIMS(8), NULL);
  producer_2x3(&p);
  ck_assert_uint_eq(cpu_stats().frees, 0);
  ck_assert_int_eq(ct_tensor_from_dlpack(t, &p.m), CT_OK);
  ck_assert_uint_eq(cpu_stats().frees, 1);
  ck_assert_uint_eq(cpu_stats().allocated, 0);
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), p.data);
  ct_tensor_free(t);
  ck_assert_int_eq(p.deleted, 1);
}
END_TEST

START_TEST(from_dlpack_applies_byte_offset) {
  producer p;
  const int64_t shape[] = {4};
  ct_tensor *t = ct_tensor_new();
  producer_init(&p, 1, shape);
  p.m.dl_tensor.byte_offset = 8;
  ck_assert_int_eq(ct_tensor_from_dlpack(t, &p.m), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), p.data + 2);
  ck_assert(((const float *)ct_tensor_data(t, CT_FLOAT32))[0] == 2.0f);
  ck_assert_uint_eq(ct_tensor_capacity(t), 16);
  ct_tensor_free(t);
  ck_assert_int_eq(p.deleted, 1);
}
END_TEST

START_TEST(from_dlpack_accepts_compact_strides) {
  producer p;
  const int64_t shape[] = {2, 1, 3};
  ct_tensor *t = ct_tensor_new();
  producer_init(&p, 3, shape);
  p.strides[0] = 3;
  p.strides[1] = 99; /* an extent of 1 may carry any stride */
  p.strides[2] = 1;
  p.m.dl_tensor.strides = p.strides;
  ck_assert_int_eq(ct_tensor_from_dlpack(t, &p.m), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(2, 1, 3)));
  ct_tensor_free(t);
  ck_assert_int_eq(p.deleted, 1);
}
END_TEST

START_TEST(from_dlpack_accepts_any_strides_without_elements) {
  producer p;
  const int64_t shape[] = {0, 3};
  ct_tensor *t = ct_tensor_new();
  producer_init(&p, 2, shape);
  p.strides[0] = 7;
  p.strides[1] = 5;
  p.m.dl_tensor.strides = p.strides;
  ck_assert_int_eq(ct_tensor_from_dlpack(t, &p.m), CT_OK);
  ck_assert_int_eq(ct_tensor_numel(t), 0);
  ct_tensor_free(t);
  ck_assert_int_eq(p.deleted, 1);
}
END_TEST

START_TEST(from_dlpack_refuses_non_compact_strides) {
  producer p;
  ct_tensor *t = iota_f32(CT_DIMS(2), NULL);
  const void *had = ct_tensor_data(t, CT_FLOAT32);
  producer_2x3(&p);
  p.strides[0] = 1; /* a transposed view */
  p.strides[1] = 2;
  p.m.dl_tensor.strides = p.strides;
  assert_refused(t, &p, CT_ERR_UNSUPPORTED, had);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "stride"));
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "[2,3]"));
  ct_tensor_free(t);
  ck_assert_int_eq(p.deleted, 0);
}
END_TEST

START_TEST(from_dlpack_refuses_vector_lanes) {
  producer p;
  ct_tensor *t = ct_tensor_new();
  producer_2x3(&p);
  p.m.dl_tensor.dtype.lanes = 4;
  assert_refused(t, &p, CT_ERR_UNSUPPORTED, NULL);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "4 lanes"));
  ct_tensor_free(t);
}
END_TEST

START_TEST(from_dlpack_refuses_dtypes_corten_lacks) {
  static const struct {
    uint8_t code, bits;
    ct_status s;
  } cases[] = {
      {kDLUInt, 4, CT_ERR_UNSUPPORTED},    {kDLUInt, 128, CT_ERR_UNSUPPORTED},
      {kDLComplex, 64, CT_ERR_UNSUPPORTED},
      {kDLOpaqueHandle, 64, CT_ERR_UNSUPPORTED}, {kDLFloat, 8, CT_ERR_UNSUPPORTED},
      {kDLInt, 4, CT_ERR_UNSUPPORTED},     {kDLBfloat, 32, CT_ERR_UNSUPPORTED},
      {7, 32, CT_ERR_FORMAT}, /* a code DLPack does not define */
      {200, 8, CT_ERR_FORMAT},             {kDLFloat, 0, CT_ERR_FORMAT},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    producer p;
    ct_tensor *t = ct_tensor_new();
    producer_2x3(&p);
    p.m.dl_tensor.dtype.code = cases[i].code;
    p.m.dl_tensor.dtype.bits = cases[i].bits;
    assert_refused(t, &p, cases[i].s, NULL);
    ct_tensor_free(t);
    ck_assert_int_eq(p.deleted, 0);
  }
}
END_TEST

START_TEST(from_dlpack_maps_bool_and_byte_conventions) {
  static const struct {
    uint8_t code, bits;
    ct_dtype t;
  } cases[] = {
      {kDLUInt, 1, CT_BOOL}, /* TVM's bool */
      {6, 8, CT_BOOL},       /* kDLBool (DLPack >= 0.8) */
      {kDLUInt, 8, CT_UINT8},
      {kDLUInt, 16, CT_UINT16},
      {kDLUInt, 32, CT_UINT32},
      {kDLUInt, 64, CT_UINT64},
      {kDLInt, 8, CT_INT8},
      {kDLInt, 16, CT_INT16},
      {kDLInt, 64, CT_INT64},
      {kDLFloat, 16, CT_FLOAT16},
      {kDLBfloat, 16, CT_BFLOAT16},
      {kDLFloat, 64, CT_FLOAT64},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    producer p;
    const int64_t shape[] = {4};
    ct_tensor *t = ct_tensor_new();
    producer_init(&p, 1, shape);
    p.m.dl_tensor.dtype.code = cases[i].code;
    p.m.dl_tensor.dtype.bits = cases[i].bits;
    ck_assert_int_eq(ct_tensor_from_dlpack(t, &p.m), CT_OK);
    ck_assert_int_eq(ct_tensor_dtype(t), cases[i].t);
    ck_assert_uint_eq(ct_tensor_capacity(t), 4 * ct_dtype_size(cases[i].t));
    ct_tensor_free(t);
    ck_assert_int_eq(p.deleted, 1);
  }
}
END_TEST

START_TEST(from_dlpack_refuses_devices_corten_lacks) {
  static const int kinds[] = {kDLOpenCL, kDLVulkan, kDLMetal, kDLROCM, kDLCUDAManaged, 0, 99};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    producer p;
    ct_tensor *t = ct_tensor_new();
    producer_2x3(&p);
    p.m.dl_tensor.device.device_type = (DLDeviceType)kinds[i];
    assert_refused(t, &p, CT_ERR_UNSUPPORTED, NULL);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "device type"));
    ct_tensor_free(t);
  }
}
END_TEST

/* CUDA memory is taken as it is when this build and machine have the device; otherwise the
 * place check refuses it (CT_ERR_UNSUPPORTED without CUDA, CT_ERR_DEVICE without that GPU), and
 * nothing is taken. The memory is never touched here, so a made-up address will do. */
START_TEST(from_dlpack_takes_cuda_memory_only_where_the_device_exists) {
  producer p;
  ct_tensor *t = ct_tensor_new();
  producer_2x3(&p);
  p.m.dl_tensor.device.device_type = kDLCUDA;
  p.m.dl_tensor.device.device_id = 0;
  ct_status s = ct_tensor_from_dlpack(t, &p.m);
  if (ct_cuda_device_count() > 0) {
    ck_assert_int_eq(s, CT_OK);
    ck_assert(ct_place_equal(ct_tensor_place(t), ct_cuda(0)));
    ck_assert(ct_tensor_is_external(t));
    ct_tensor_free(t);
    ck_assert_int_eq(p.deleted, 1);
  } else {
    ck_assert(s == CT_ERR_UNSUPPORTED || s == CT_ERR_DEVICE);
    ck_assert_int_eq(p.deleted, 0);
    ck_assert(!ct_tensor_has_memory(t));
    ct_tensor_free(t);
  }
  /* A device ordinal no machine has is refused everywhere. */
  producer q;
  t = ct_tensor_new();
  producer_2x3(&q);
  q.m.dl_tensor.device.device_type = kDLCUDA;
  q.m.dl_tensor.device.device_id = 4096;
  s = ct_tensor_from_dlpack(t, &q.m);
  ck_assert(s == CT_ERR_UNSUPPORTED || s == CT_ERR_DEVICE);
  ck_assert_int_eq(q.deleted, 0);
  ct_tensor_free(t);
}
END_TEST

START_TEST(from_dlpack_takes_pinned_memory_where_built_in) {
  producer p;
  ct_tensor *t = ct_tensor_new();
  producer_2x3(&p);
  p.m.dl_tensor.device.device_type = kDLCUDAHost;
  ct_status s = ct_tensor_from_dlpack(t, &p.m);
  if (s == CT_OK) {
    ck_assert(ct_place_equal(ct_tensor_place(t), ct_cuda_host()));
    ct_tensor_free(t);
    ck_assert_int_eq(p.deleted, 1);
  } else {
    ck_assert(s == CT_ERR_UNSUPPORTED || s == CT_ERR_DEVICE);
    ck_assert_int_eq(p.deleted, 0);
    ct_tensor_free(t);
  }
}
END_TEST

START_TEST(from_dlpack_refuses_malformed_tensors) {
  producer p;
  ct_tensor *t = ct_tensor_new();
  const int64_t ten[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

  producer_2x3(&p);
  p.m.dl_tensor.ndim = -1;
  assert_refused(t, &p, CT_ERR_FORMAT, NULL);

  producer_2x3(&p);
  p.m.dl_tensor.shape = NULL;
  assert_refused(t, &p, CT_ERR_FORMAT, NULL);

  producer_2x3(&p);
  p.shape[1] = -3;
  assert_refused(t, &p, CT_ERR_FORMAT, NULL);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "negative extent at dim 1"));

  producer_2x3(&p);
  p.m.dl_tensor.data = NULL;
  assert_refused(t, &p, CT_ERR_FORMAT, NULL);

  producer_2x3(&p);
  p.m.dl_tensor.device.device_type = kDLCUDA;
  p.m.dl_tensor.device.device_id = -1;
  assert_refused(t, &p, CT_ERR_FORMAT, NULL);

  producer_2x3(&p);
  p.m.dl_tensor.byte_offset = UINT64_MAX - 4;
  assert_refused(t, &p, CT_ERR_FORMAT, NULL);

  producer_init(&p, 10, ten);
  assert_refused(t, &p, CT_ERR_OUT_OF_RANGE, NULL);

  producer_2x3(&p);
  p.shape[0] = INT64_MAX / 2;
  assert_refused(t, &p, CT_ERR_OUT_OF_RANGE, NULL);
  ct_tensor_free(t);
}
END_TEST

START_TEST(from_dlpack_refuses_misaligned_data) {
  producer p;
  ct_tensor *t = ct_tensor_new();
  producer_2x3(&p);
  p.m.dl_tensor.byte_offset = 2; /* float32 elements at an address that is 2 mod 4 */
  assert_refused(t, &p, CT_ERR_UNSUPPORTED, NULL);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "aligned"));
  ct_tensor_free(t);
}
END_TEST

START_TEST(from_dlpack_allows_null_data_without_elements) {
  producer p;
  const int64_t shape[] = {0};
  ct_tensor *t = ct_tensor_new();
  producer_init(&p, 1, shape);
  p.m.dl_tensor.data = NULL;
  ck_assert_int_eq(ct_tensor_from_dlpack(t, &p.m), CT_OK);
  ck_assert(ct_tensor_has_memory(t));
  ck_assert_int_eq(ct_tensor_numel(t), 0);
  ck_assert_ptr_nonnull(ct_tensor_data(t, CT_FLOAT32));
  ct_tensor_free(t);
  ck_assert_int_eq(p.deleted, 1);
}
END_TEST

START_TEST(from_dlpack_allows_a_null_deleter) {
  producer p;
  ct_tensor *t = ct_tensor_new();
  producer_2x3(&p);
  p.m.deleter = NULL;
  ck_assert_int_eq(ct_tensor_from_dlpack(t, &p.m), CT_OK);
  ct_tensor_free(t);
  ck_assert_int_eq(p.deleted, 0);
}
END_TEST

START_TEST(from_dlpack_null_arguments_are_invalid) {
  producer p;
  ct_tensor *t = ct_tensor_new();
  producer_2x3(&p);
  ck_assert_int_eq(ct_tensor_from_dlpack(NULL, &p.m), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_from_dlpack(t, NULL), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(p.deleted, 0);
  ct_tensor_free(t);
}
END_TEST

START_TEST(from_dlpack_tensor_follows_external_buffer_rules) {
  producer p;
  ct_tensor *t = ct_tensor_new();
  const float six[6] = {9, 8, 7, 6, 5, 4};
  producer_2x3(&p);
  ck_assert_int_eq(ct_tensor_from_dlpack(t, &p.m), CT_OK);
  /* set_value writes in place when it fits ... */
  ck_assert_int_eq(ct_tensor_set_value(t, six, CT_DIMS(3, 2), CT_FLOAT32, ct_cpu()), CT_OK);
  ck_assert(p.data[0] == 9.0f && p.data[5] == 4.0f);
  /* ... and never grows the producer's memory. */
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(100)), CT_OK);
  CT_ASSERT_NULL_FAILS(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()), CT_ERR_EXTERNAL_BUFFER);
  ct_tensor_free(t);
  ck_assert_int_eq(p.deleted, 1);
}
END_TEST

START_TEST(round_trip_shares_memory_and_frees_it_once) {
  ct_tensor *a = iota_f32(CT_DIMS(3, 4), NULL);
  ct_tensor *b = ct_tensor_new();
  DLManagedTensor *m = NULL;
  const void *data = ct_tensor_data(a, CT_FLOAT32);
  ck_assert_int_eq(ct_tensor_to_dlpack(a, &m), CT_OK);
  ck_assert_int_eq(ct_tensor_from_dlpack(b, m), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(b, CT_FLOAT32), data);
  ck_assert(ct_ddim_equal(ct_tensor_dims(b), CT_DIMS(3, 4)));
  ct_tensor_free(a);
  ck_assert_uint_eq(cpu_stats().frees, 0);
  ck_assert(((const float *)ct_tensor_data(b, CT_FLOAT32))[11] == 11.0f);
  ct_tensor_free(b);
  ck_assert_uint_eq(cpu_stats().frees, 1);
  ck_assert_uint_eq(cpu_stats().allocated, 0);
}
END_TEST

/* Device memory crosses both ways without a copy: a CUDA tensor exports as kDLCUDA and imports
 * back as a view of the same device memory; pinned host memory as kDLCUDAHost. Nothing to check
 * on a machine without a GPU (or a build without CUDA). */
START_TEST(device_memory_round_trips_without_a_copy) {
  if (ct_cuda_device_count() == 0) return;
  static const struct {
    ct_place (*place)(void);
    int kind;
  } places[] = {{NULL, kDLCUDA}, {ct_cuda_host, kDLCUDAHost}};
  const float vals[6] = {1, 2, 3, 4, 5, 6};
  for (size_t i = 0; i < 2; i++) {
    ct_place place = places[i].place ? places[i].place() : ct_cuda(0);
    ct_tensor *t = ct_tensor_new(), *b = ct_tensor_new(), *host = ct_tensor_new();
    DLManagedTensor *m = NULL;
    ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(2, 3)), CT_OK);
    void *p = ct_tensor_mutable_data(t, CT_FLOAT32, place);
    ck_assert_msg(p != NULL, "%s", ct_last_error());
    ck_assert_int_eq(ct_tensor_set_value(t, vals, CT_DIMS(2, 3), CT_FLOAT32, ct_cpu()), CT_OK);
    ck_assert_int_eq(ct_tensor_to_dlpack(t, &m), CT_OK);
    ck_assert_int_eq(m->dl_tensor.device.device_type, places[i].kind);
    ck_assert_int_eq(m->dl_tensor.device.device_id, 0);
    ck_assert_ptr_eq(m->dl_tensor.data, p);
    ck_assert_int_eq(ct_tensor_from_dlpack(b, m), CT_OK);
    ck_assert(ct_place_equal(ct_tensor_place(b), place));
    ck_assert_ptr_eq(ct_tensor_data(b, CT_FLOAT32), p);
    ct_tensor_free(t);
    ck_assert_int_eq(ct_tensor_copy(host, b, ct_cpu()), CT_OK);
    ck_assert_int_eq(memcmp(ct_tensor_data(host, CT_FLOAT32), vals, sizeof vals), 0);
    ct_tensor_free(b);
    ct_tensor_free(host);
  }
}
END_TEST

static Suite *dlpack_suite(void) {
  Suite *s = suite_create("dlpack_import");
  CT_ADD_TEST(s, from_dlpack_views_the_producer_memory);
  CT_ADD_TEST(s, from_dlpack_deleter_runs_once_when_the_last_view_goes);
  CT_ADD_TEST(s, from_dlpack_replaces_what_the_tensor_held);
  CT_ADD_TEST(s, from_dlpack_applies_byte_offset);
  CT_ADD_TEST(s, from_dlpack_accepts_compact_strides);
  CT_ADD_TEST(s, from_dlpack_accepts_any_strides_without_elements);
  CT_ADD_TEST(s, from_dlpack_refuses_non_compact_strides);
  CT_ADD_TEST(s, from_dlpack_refuses_vector_lanes);
  CT_ADD_TEST(s, from_dlpack_refuses_dtypes_corten_lacks);
  CT_ADD_TEST(s, from_dlpack_maps_bool_and_byte_conventions);
  CT_ADD_TEST(s, from_dlpack_refuses_devices_corten_lacks);
  CT_ADD_TEST(s, from_dlpack_takes_cuda_memory_only_where_the_device_exists);
  CT_ADD_TEST(s, from_dlpack_takes_pinned_memory_where_built_in);
  CT_ADD_TEST(s, from_dlpack_refuses_malformed_tensors);
  CT_ADD_TEST(s, from_dlpack_refuses_misaligned_data);
  CT_ADD_TEST(s, from_dlpack_allows_null_data_without_elements);
  CT_ADD_TEST(s, from_dlpack_allows_a_null_deleter);
  CT_ADD_TEST(s, from_dlpack_null_arguments_are_invalid);
  CT_ADD_TEST(s, from_dlpack_tensor_follows_external_buffer_rules);
  CT_ADD_TEST(s, round_trip_shares_memory_and_frees_it_once);
  CT_ADD_TEST(s, device_memory_round_trips_without_a_copy);
  return s;
}

CT_TEST_MAIN(dlpack_suite)
