/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the CUDA places.
 *
 * On a GPU (a CUDA build with a device): lazy device memory and exact stats, reuse through the
 * caching allocator, page-locked memory, devices that do not exist, a replaced device allocator
 * and the fill kernel. Copies, external device buffers and streams are tested in
 * test_cuda_copy.c.
 *
 * Without one (a build without CUDA, or no device): the CUDA entry points fail as documented,
 * CT_ERR_UNSUPPORTED ("built without CUDA") or CT_ERR_DEVICE ("no CUDA device"), and change
 * nothing. Those checks run, then the suite reports itself skipped (77) for the GPU part.
 *
 * Check forks a process per test, and CUDA cannot be used across fork: the device count is
 * therefore asked in a child process (CT_GPU_TEST_MAIN, harness.h), so the parent never
 * initializes CUDA and every test starts with a fresh context and fresh stats. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "cuda_util.h"

/* ---- Without a device --------------------------------------------------------------------- */

START_TEST(absent_build_flag_matches_the_build) {
#ifdef CORTEN_TEST_CUDA
  ck_assert(ct_cuda_is_built());
#else
  ck_assert(!ct_cuda_is_built());
#endif
  ck_assert_int_eq(ct_cuda_device_count(), 0);
}
END_TEST

START_TEST(absent_mutable_data_is_refused_and_changes_nothing) {
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(2, 3)), CT_OK);
  ck_assert_ptr_null(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cuda(0)));
  assert_refused("cuda:0");
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "ct_tensor_mutable_data"));
  ck_assert_ptr_null(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cuda_host()));
  assert_refused("cuda_host");
  ck_assert(!ct_tensor_has_memory(t));
  ck_assert_int_eq(ct_tensor_dtype(t), CT_DTYPE_UNDEFINED);
  /* A CPU block stays where it is when a CUDA place is refused. */
  void *p = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu());
  ck_assert_ptr_nonnull(p);
  ck_assert_ptr_null(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cuda(1)));
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), p);
  ct_tensor_free(t);
}
END_TEST

START_TEST(absent_stats_and_allocators_are_refused) {
  ct_memory_stats s;
  ct_allocator a = {NULL, NULL, NULL};
  ck_assert_int_eq(ct_memory_stats_get(ct_cuda(0), &s), no_cuda_status());
  assert_refused("cuda:0");
  ck_assert_int_eq(ct_memory_stats_get(ct_cuda_host(), &s), no_cuda_status());
  assert_refused("cuda_host");
  ck_assert_int_eq(ct_set_allocator(ct_cuda(0), NULL), no_cuda_status());
  ck_assert_int_eq(ct_set_allocator(ct_cuda_host(), &a), no_cuda_status());
  ct_memory_reset_peak(ct_cuda(0)); /* nothing to reset; no crash */
  ct_memory_reset_peak(ct_cuda(1000));
}
END_TEST

static Suite *absent_suite(void) {
  Suite *s = suite_create("cuda (no device)");
  CT_ADD_TEST(s, absent_build_flag_matches_the_build);
  CT_ADD_TEST(s, absent_mutable_data_is_refused_and_changes_nothing);
  CT_ADD_TEST(s, absent_stats_and_allocators_are_refused);
  return s;
}

#ifdef CORTEN_TEST_CUDA

#include <cuda_runtime_api.h>

#include "cuda/cuda_impl.h"

/* ---- Lazy memory and stats ---------------------------------------------------------------- */

START_TEST(built_with_cuda_and_a_device_is_visible) {
  ck_assert(ct_cuda_is_built());
  ck_assert_int_ge(ct_cuda_device_count(), 1);
}
END_TEST

START_TEST(no_device_bytes_before_mutable_data) {
  ct_scope *scope = ct_scope_new();
  ct_tensor *t = ct_var_tensor(ct_scope_var(scope, "fc1.w"));
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(256, 256)), CT_OK);
  ct_memory_stats s = stats_of(ct_cuda(0));
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.reserved, 0);
  ck_assert_uint_eq(s.allocs, 0);
  ck_assert(!ct_tensor_has_memory(t));

  float *p = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cuda(0));
  ck_assert_ptr_nonnull(p);
  assert_device_pointer(p, 0);
  s = stats_of(ct_cuda(0));
  ck_assert_uint_eq(s.allocated, 256 * 256 * 4);
  ck_assert_uint_eq(s.peak, 256 * 256 * 4);
  ck_assert_uint_eq(s.reserved, 2 * MiB); /* one segment of the small pool */
  ck_assert_uint_eq(s.allocs, 1);
  ck_assert(ct_place_equal(ct_tensor_place(t), ct_cuda(0)));
  ck_assert_uint_eq(stats_of(ct_cpu()).allocated, 0);
  ct_scope_free(scope);
  s = stats_of(ct_cuda(0));
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.frees, 1);
  ck_assert_uint_eq(s.reserved, 2 * MiB); /* cached */
}
END_TEST

START_TEST(stats_count_requested_bytes_and_reserved_counts_segments) {
  ct_tensor *a = ct_tensor_new(), *b = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(a, CT_DIMS(250)), CT_OK);      /* 1000 bytes */
  ck_assert_int_eq(ct_tensor_resize(b, CT_DIMS(3, MiB / 4)), CT_OK); /* 3 MiB: large pool */
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(a, CT_FLOAT32, ct_cuda(0)));
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(b, CT_FLOAT32, ct_cuda(0)));
  ct_memory_stats s = stats_of(ct_cuda(0));
  ck_assert_uint_eq(s.allocated, 1000 + 3 * MiB);
  ck_assert_uint_eq(s.reserved, 2 * MiB + 20 * MiB);
  ck_assert_uint_eq(s.allocs, 2);
  ct_tensor_free(b);
  s = stats_of(ct_cuda(0));
  ck_assert_uint_eq(s.allocated, 1000);
  ck_assert_uint_eq(s.peak, 1000 + 3 * MiB);
  ck_assert_uint_eq(s.frees, 1);
  ct_memory_reset_peak(ct_cuda(0));
  ck_assert_uint_eq(stats_of(ct_cuda(0)).peak, 1000);
  ck_assert_int_eq(ct_cuda_empty_cache(), CT_OK);
  s = stats_of(ct_cuda(0));
  ck_assert_uint_eq(s.reserved, 2 * MiB); /* a's segment stays */
  ct_tensor_free(a);
  ck_assert_int_eq(ct_cuda_empty_cache(), CT_OK);
  s = stats_of(ct_cuda(0));
  ck_assert_uint_eq(s.reserved, 0);
  ck_assert_uint_eq(s.allocated, 0);
}
END_TEST

START_TEST(cached_block_is_reused_without_the_driver) {
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(1000)), CT_OK);
  void *p1 = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cuda(0));
  ck_assert_ptr_nonnull(p1);
  ct_tensor_free(t);
  size_t reserved = stats_of(ct_cuda(0)).reserved;
  t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(1000)), CT_OK);
  void *p2 = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cuda(0));
  ck_assert_ptr_eq(p2, p1);
  ck_assert_uint_eq(stats_of(ct_cuda(0)).reserved, reserved);
  ct_tensor_free(t);
}
END_TEST

START_TEST(zero_element_tensor_gets_a_valid_device_pointer) {
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(0, 5)), CT_OK);
  void *p = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cuda(0));
  ck_assert_ptr_nonnull(p);
  assert_device_pointer(p, 0);
  ck_assert_uint_eq(stats_of(ct_cuda(0)).allocated, 0);
  ct_tensor_free(t);
}
END_TEST

/* ---- Reuse -------------------------------------------------------------------------------- */

static uint64_t lcg(uint64_t *state) {
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  return *state >> 33;
}

/* A working set of mixed sizes (bytes up to 24 MiB), then 10,000 cycles that each free two of
 * its tensors and allocate them again with their sizes exchanged: the working set's peak stays
 * the same, and reserved must not grow past what it was when the set was first built. */
START_TEST(ten_thousand_mixed_cycles_do_not_grow_reserved) {
  enum { SLOTS = 32, CYCLES = 10000 };
  static const int64_t sizes[] = {1,      100,     1000,    4096,    16384,   65536,
                                  200000, 262144,  700000,  1048576, 1500000, 4000000,
                                  6000000, 9000000, 12000000, 25165824};
  ct_tensor *slot[SLOTS];
  int64_t size[SLOTS];
  uint64_t rng = 7;
  for (int i = 0; i < SLOTS; i++) {
    size[i] = sizes[lcg(&rng) % (sizeof sizes / sizeof sizes[0])];
    slot[i] = ct_tensor_new();
    ck_assert_int_eq(ct_tensor_resize(slot[i], CT_DIMS(size[i])), CT_OK);
    ck_assert_ptr_nonnull(ct_tensor_mutable_data(slot[i], CT_UINT8, ct_cuda(0)));
  }
  ct_memory_stats start = stats_of(ct_cuda(0));
  size_t max_reserved = 0;
  for (int n = 0; n < CYCLES; n++) {
    int i = (int)(lcg(&rng) % SLOTS), j = (int)(lcg(&rng) % SLOTS);
    if (i == j) j = (j + 1) % SLOTS;
    ct_tensor_free(slot[i]);
    ct_tensor_free(slot[j]);
    int64_t t = size[i];
    size[i] = size[j];
    size[j] = t;
    int idx[2] = {i, j};
    for (int k = 0; k < 2; k++) {
      slot[idx[k]] = ct_tensor_new();
      ck_assert_int_eq(ct_tensor_resize(slot[idx[k]], CT_DIMS(size[idx[k]])), CT_OK);
      ck_assert_ptr_nonnull(ct_tensor_mutable_data(slot[idx[k]], CT_UINT8, ct_cuda(0)));
    }
    size_t r = stats_of(ct_cuda(0)).reserved;
    if (r > max_reserved) max_reserved = r;
  }
  ct_memory_stats s = stats_of(ct_cuda(0));
  ck_assert_uint_le(max_reserved, start.reserved);
  ck_assert_uint_eq(s.peak, start.peak); /* the working set never grew either */
  ck_assert_uint_eq(s.allocs, (uint64_t)(SLOTS + 2 * CYCLES));
  ck_assert_uint_eq(s.frees, (uint64_t)(2 * CYCLES));
  for (int i = 0; i < SLOTS; i++) ct_tensor_free(slot[i]);
  ck_assert_uint_eq(stats_of(ct_cuda(0)).allocated, 0);
  ck_assert_int_eq(ct_cuda_empty_cache(), CT_OK);
  ck_assert_uint_eq(stats_of(ct_cuda(0)).reserved, 0);
}
END_TEST

START_TEST(device_out_of_memory_is_reported_and_nothing_leaks) {
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS((int64_t)1 << 40, 64)), CT_OK); /* 256 TiB */
  CT_ASSERT_NULL_FAILS(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cuda(0)), CT_ERR_OUT_OF_MEMORY);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "cuda:0"));
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "float32"));
  ct_memory_stats s = stats_of(ct_cuda(0));
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.allocs, 0);
  ck_assert_uint_eq(s.reserved, 0);
  ck_assert(!ct_tensor_has_memory(t));
  /* The device still works. */
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(16)), CT_OK);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cuda(0)));
  ct_tensor_free(t);
}
END_TEST

/* ---- Page-locked memory ------------------------------------------------------------------- */

START_TEST(cuda_host_memory_is_page_locked_and_counted) {
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(100)), CT_OK);
  ck_assert_uint_eq(stats_of(ct_cuda_host()).allocated, 0);
  void *p = ct_tensor_mutable_data(t, CT_FLOAT64, ct_cuda_host());
  ck_assert_ptr_nonnull(p);
  struct cudaPointerAttributes attr;
  ck_assert_int_eq(cudaPointerGetAttributes(&attr, p), cudaSuccess);
  ck_assert_int_eq(attr.type, cudaMemoryTypeHost);
  memset(p, 0x11, 800); /* host memory: the CPU writes it directly */
  ct_memory_stats s = stats_of(ct_cuda_host());
  ck_assert_uint_eq(s.allocated, 800);
  ck_assert_uint_eq(s.reserved, 832); /* rounded to 64 */
  ck_assert_uint_eq(s.allocs, 1);
  ck_assert_uint_eq(stats_of(ct_cpu()).allocated, 0);
  ct_tensor_free(t);
  s = stats_of(ct_cuda_host());
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.reserved, 0);
  ck_assert_uint_eq(s.frees, 1);
}
END_TEST

/* ---- Devices that do not exist ------------------------------------------------------------ */

START_TEST(ordinal_past_the_last_device_is_a_device_error) {
  int n = ct_cuda_device_count();
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(4)), CT_OK);
  CT_ASSERT_NULL_FAILS(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cuda(n)), CT_ERR_DEVICE);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "does not exist"));
  ct_memory_stats s;
  ck_assert_int_eq(ct_memory_stats_get(ct_cuda(n), &s), CT_ERR_DEVICE);
  ck_assert_int_eq(ct_tensor_wrap(t, (void *)t, CT_DIMS(1), CT_UINT8, ct_cuda(n), NULL, NULL),
                   CT_ERR_DEVICE);
  ct_tensor_free(t);
}
END_TEST

/* ---- Replaced allocator and the fill kernel ----------------------------------------------- */

typedef struct trace {
  int allocs, frees;
  size_t last_size, last_align;
} trace;

static void *trace_alloc(void *ctx, size_t size, size_t align) {
  trace *t = ctx;
  void *p = NULL;
  t->allocs++;
  t->last_size = size;
  t->last_align = align;
  return cudaMalloc(&p, size) == cudaSuccess ? p : NULL;
}

static void trace_free(void *ctx, void *ptr, size_t size) {
  trace *t = ctx;
  (void)size;
  t->frees++;
  cudaFree(ptr);
}

START_TEST(replaced_device_allocator_gets_rounded_sizes_and_is_counted) {
  trace tr = {0, 0, 0, 0};
  ct_allocator a = {trace_alloc, trace_free, &tr};
  ct_tensor *pooled = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(pooled, CT_DIMS(10)), CT_OK);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(pooled, CT_FLOAT32, ct_cuda(0)));
  ck_assert_int_eq(ct_set_allocator(ct_cuda(0), &a), CT_OK);
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(1000)), CT_OK);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cuda(0)));
  ck_assert_int_eq(tr.allocs, 1);
  ck_assert_uint_eq(tr.last_size, 4096);
  ck_assert_uint_eq(tr.last_align, 256);
  ct_memory_stats s = stats_of(ct_cuda(0));
  ck_assert_uint_eq(s.allocated, 40 + 4000);
  ck_assert_uint_eq(s.reserved, 2 * MiB + 4096);
  ct_tensor_free(t);
  ck_assert_int_eq(tr.frees, 1);
  ck_assert_int_eq(ct_set_allocator(ct_cuda(0), NULL), CT_OK);
  ct_tensor_free(pooled); /* back to the pool that made it */
  ck_assert_int_eq(tr.frees, 1);
  s = stats_of(ct_cuda(0));
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.reserved, 2 * MiB);
}
END_TEST

START_TEST(fill_kernel_writes_every_element) {
  for (size_t size = 1; size <= 8; size *= 2) {
    ct_tensor *t = ct_tensor_new(), *back = ct_tensor_new();
    ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(100003)), CT_OK);
    ct_dtype dt = size == 1 ? CT_UINT8 : size == 2 ? CT_INT16 : size == 4 ? CT_INT32 : CT_INT64;
    void *p = ct_tensor_mutable_data(t, dt, ct_cuda(0));
    ck_assert_ptr_nonnull(p);
    uint64_t value = 0x0102030405060708ULL;
    ck_assert_int_eq(ct__cuda_fill(p, 100003, size, &value, 0), CT_OK);
    ck_assert_int_eq(ct_tensor_copy(back, t, ct_cpu()), CT_OK);
    const unsigned char *h = ct_tensor_data(back, dt);
    for (size_t i = 0; i < 100003; i++) ck_assert_int_eq(memcmp(h + i * size, &value, size), 0);
    ct_tensor_free(t);
    ct_tensor_free(back);
  }
  uint64_t v = 0;
  ck_assert_int_eq(ct__cuda_fill(NULL, 1, 3, &v, 0), CT_ERR_INVALID_ARGUMENT);
}
END_TEST

static Suite *cuda_suite(void) {
  Suite *s = suite_create("cuda");
  CT_ADD_TEST(s, built_with_cuda_and_a_device_is_visible);
  CT_ADD_TEST(s, no_device_bytes_before_mutable_data);
  CT_ADD_TEST(s, stats_count_requested_bytes_and_reserved_counts_segments);
  CT_ADD_TEST(s, cached_block_is_reused_without_the_driver);
  CT_ADD_TEST(s, zero_element_tensor_gets_a_valid_device_pointer);
  CT_ADD_TEST(s, ten_thousand_mixed_cycles_do_not_grow_reserved);
  CT_ADD_TEST(s, device_out_of_memory_is_reported_and_nothing_leaks);
  CT_ADD_TEST(s, cuda_host_memory_is_page_locked_and_counted);
  CT_ADD_TEST(s, ordinal_past_the_last_device_is_a_device_error);
  CT_ADD_TEST(s, replaced_device_allocator_gets_rounded_sizes_and_is_counted);
  CT_ADD_TEST(s, fill_kernel_writes_every_element);
  return s;
}

#endif /* CORTEN_TEST_CUDA */



CT_GPU_TEST_MAIN(absent_suite, cuda_suite)
