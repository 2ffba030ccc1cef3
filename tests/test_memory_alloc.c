/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the replaceable allocators of corten/memory.h: what a custom allocator sees (sizes
 * rounded, alignment 64, every block back to the allocator that made it), what ct_set_allocator
 * refuses, and fault injection: a failed allocation leaves its tensor as it was, never loses a
 * shared block and never leaks. Each test runs in its own process, so the stats start at
 * zero. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "harness.h"

/* ---- A test allocator ------------------------------------------------------------------------ */

/* A test allocator: counts calls, remembers the size of each live block, and fails the
 * fail_at-th allocation (1-based; 0 never fails). */
#define TRACK_CAP 64

typedef struct test_alloc {
  int calls;      /* alloc calls, failed ones included */
  int fail_at;    /* which call fails; 0: none */
  int failures;   /* calls that returned NULL */
  int frees;      /* free calls */
  int live;       /* blocks handed out and not yet freed */
  int bad_sizes;  /* sizes that were not a multiple of 64 */
  int bad_aligns; /* aligns below 64 or not a power of two */
  int bad_frees;  /* frees of an unknown pointer or with another size */
  size_t last_size, last_align;
  void *ptrs[TRACK_CAP];
  size_t sizes[TRACK_CAP];
} test_alloc;

static void *test_alloc_fn(void *ctx, size_t size, size_t align) {
  test_alloc *a = ctx;
  size_t rounded;
  void *p;
  int i;
  a->calls++;
  a->last_size = size;
  a->last_align = align;
  if (size == 0 || size % 64 != 0) a->bad_sizes++;
  if (align < 64 || (align & (align - 1)) != 0) a->bad_aligns++;
  if (a->calls == a->fail_at) {
    a->failures++;
    return NULL;
  }
  if (align < 64) align = 64;
  rounded = (size + align - 1) / align * align;
  if (rounded == 0) rounded = align;
  p = aligned_alloc(align, rounded);
  if (!p) return NULL;
  for (i = 0; i < TRACK_CAP; i++) {
    if (a->ptrs[i] == NULL) {
      a->ptrs[i] = p;
      a->sizes[i] = size;
      break;
    }
  }
  ck_assert_int_lt(i, TRACK_CAP);
  a->live++;
  return p;
}

static void test_free_fn(void *ctx, void *ptr, size_t size) {
  test_alloc *a = ctx;
  int i;
  a->frees++;
  for (i = 0; i < TRACK_CAP; i++) {
    if (a->ptrs[i] == ptr) {
      if (a->sizes[i] != size) a->bad_frees++;
      a->ptrs[i] = NULL;
      break;
    }
  }
  if (i == TRACK_CAP) a->bad_frees++;
  a->live--;
  free(ptr);
}

static void use_test_alloc(test_alloc *a, int fail_at) {
  ct_allocator al;
  memset(a, 0, sizeof *a);
  a->fail_at = fail_at;
  al.alloc = test_alloc_fn;
  al.free = test_free_fn;
  al.ctx = a;
  ck_assert_int_eq(ct_set_allocator(ct_cpu(), &al), CT_OK);
}

static void restore_default_alloc(void) {
  ck_assert_int_eq(ct_set_allocator(ct_cpu(), NULL), CT_OK);
}

/* ---- Replaceable allocators ------------------------------------------------------------------ */

/* This program links jemalloc (as every corten program of the build tree does), so the library
 * picked it up as it was loaded; a sanitizer build (CORTEN_TEST_LIBC_HOST) has no jemalloc. */
START_TEST(default_host_allocator_is_jemalloc_when_the_program_has_it) {
#ifdef CORTEN_TEST_LIBC_HOST
  ck_assert_str_eq(ct_host_allocator_name(), "libc");
#else
  ck_assert_str_eq(ct_host_allocator_name(), "jemalloc");
#endif
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(3)), CT_OK);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()));
  ck_assert_uint_eq((uintptr_t)ct_tensor_data(t, CT_FLOAT32) % 64, 0);
  ct_tensor_free(t);
}
END_TEST

START_TEST(custom_allocator_sees_rounded_sizes_and_align_64) {
  test_alloc a;
  ct_tensor *t1, *t2, *t3;
  use_test_alloc(&a, 0);
  t1 = alloc_tensor(CT_DIMS(10), CT_INT8, NULL);
  ck_assert_int_eq(a.calls, 1);
  ck_assert_uint_eq(a.last_size, 64);
  ck_assert_uint_eq(a.last_align, 64);
  t2 = alloc_tensor(CT_DIMS(25), CT_FLOAT32, NULL); /* 100 bytes */
  ck_assert_uint_eq(a.last_size, 128);
  t3 = alloc_tensor(CT_DIMS(0), CT_FLOAT32, NULL);
  ck_assert_uint_eq(a.last_size, 64);
  ck_assert_int_eq(a.calls, 3);
  ck_assert_int_eq(a.live, 3);
  ck_assert_int_eq(a.bad_sizes, 0);
  ck_assert_int_eq(a.bad_aligns, 0);
  ct_tensor_free(t1);
  ct_tensor_free(t2);
  ct_tensor_free(t3);
  ck_assert_int_eq(a.frees, 3);
  ck_assert_int_eq(a.live, 0);
  ck_assert_int_eq(a.bad_frees, 0);
  restore_default_alloc();
}
END_TEST

START_TEST(custom_allocator_keeps_stats) {
  test_alloc a;
  ct_tensor *t;
  ct_memory_stats s;
  use_test_alloc(&a, 0);
  t = alloc_tensor(CT_DIMS(100, 200), CT_FLOAT32, NULL);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 80000);
  ck_assert_uint_eq(s.reserved, 80000);
  ck_assert_uint_eq(s.allocs, 1);
  ck_assert_uint_eq(a.last_size, 80000);
  ct_tensor_free(t);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.frees, 1);
  restore_default_alloc();
}
END_TEST

START_TEST(null_allocator_restores_default) {
  test_alloc a;
  ct_tensor *t1, *t2;
  void *p = NULL;
  use_test_alloc(&a, 0);
  t1 = alloc_tensor(CT_DIMS(10), CT_INT8, NULL);
  ck_assert_int_eq(a.calls, 1);
  restore_default_alloc();
  t2 = alloc_tensor(CT_DIMS(10), CT_INT8, &p);
  ck_assert_int_eq(a.calls, 1);
  ck_assert_uint_eq((uintptr_t)p % 64, 0);
  ct_tensor_free(t2);
  ck_assert_int_eq(a.frees, 0);
  /* t1's block still goes back to the test allocator. */
  ct_tensor_free(t1);
  ck_assert_int_eq(a.frees, 1);
  ck_assert_int_eq(a.live, 0);
}
END_TEST

START_TEST(block_returns_to_allocator_that_made_it) {
  test_alloc a, b;
  ct_tensor *t1, *t2;
  ct_memory_stats s;
  use_test_alloc(&a, 0);
  t1 = alloc_tensor(CT_DIMS(16), CT_FLOAT32, NULL);
  use_test_alloc(&b, 0);
  t2 = alloc_tensor(CT_DIMS(32), CT_FLOAT32, NULL);
  ck_assert_int_eq(a.calls, 1);
  ck_assert_int_eq(b.calls, 1);
  ct_tensor_free(t1);
  ck_assert_int_eq(a.frees, 1);
  ck_assert_int_eq(a.live, 0);
  ck_assert_int_eq(a.bad_frees, 0);
  ck_assert_int_eq(b.frees, 0);
  ct_tensor_free(t2);
  ck_assert_int_eq(b.frees, 1);
  ck_assert_int_eq(b.live, 0);
  ck_assert_int_eq(a.frees, 1);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.allocs, 2);
  ck_assert_uint_eq(s.frees, 2);
  restore_default_alloc();
}
END_TEST

START_TEST(set_allocator_null_alloc_is_invalid_argument) {
  ct_allocator al = {NULL, test_free_fn, NULL};
  CT_ASSERT_FAILS(ct_set_allocator(ct_cpu(), &al), CT_ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(set_allocator_null_free_is_invalid_argument) {
  ct_allocator al = {test_alloc_fn, NULL, NULL};
  ck_assert_int_eq(ct_set_allocator(ct_cpu(), &al), CT_ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(set_allocator_failure_keeps_old_allocator) {
  test_alloc a;
  ct_allocator bad = {NULL, test_free_fn, NULL};
  ct_tensor *t;
  use_test_alloc(&a, 0);
  ck_assert_int_eq(ct_set_allocator(ct_cpu(), &bad), CT_ERR_INVALID_ARGUMENT);
  t = alloc_tensor(CT_DIMS(4), CT_FLOAT32, NULL);
  ck_assert_int_eq(a.calls, 1);
  ct_tensor_free(t);
  ck_assert_int_eq(a.live, 0);
  restore_default_alloc();
}
END_TEST

START_TEST(set_allocator_cuda_is_unsupported) {
  test_alloc a;
  ct_allocator al = {test_alloc_fn, test_free_fn, &a};
  memset(&a, 0, sizeof a);
  if (ct_cuda_device_count() > 0) return;
  ck_assert_int_eq(ct_set_allocator(ct_cuda(0), &al), no_cuda_status());
  ck_assert_int_eq(ct_set_allocator(ct_cuda(0), NULL), no_cuda_status());
}
END_TEST

START_TEST(set_allocator_invalid_place_is_invalid_argument) {
  test_alloc a;
  ct_allocator al = {test_alloc_fn, test_free_fn, &a};
  memset(&a, 0, sizeof a);
  ck_assert_int_eq(ct_set_allocator(bad_place(), &al),
                   CT_ERR_INVALID_ARGUMENT);
}
END_TEST

/* ---- Fault injection ------------------------------------------------------------------------- */

START_TEST(failed_first_allocation_leaves_tensor_empty) {
  test_alloc a;
  ct_tensor *t = ct_tensor_new();
  ct_memory_stats s;
  ct_ddim d;
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(3, 4)), CT_OK);
  use_test_alloc(&a, 1);
  CT_ASSERT_NULL_FAILS(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()), CT_ERR_OUT_OF_MEMORY);
  ck_assert_int_eq(a.failures, 1);
  d = ct_tensor_dims(t);
  ck_assert(ct_ddim_equal(d, CT_DIMS(3, 4)));
  ck_assert_int_eq(ct_tensor_dtype(t), CT_DTYPE_UNDEFINED);
  ck_assert(!ct_tensor_has_memory(t));
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.reserved, 0);
  ck_assert_uint_eq(s.allocs, s.frees);
  /* The next try succeeds. */
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()));
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 48);
  ct_tensor_free(t);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.allocs, s.frees);
  ck_assert_int_eq(a.live, 0);
  restore_default_alloc();
}
END_TEST

START_TEST(out_of_memory_message_names_dims_and_dtype) {
  test_alloc a;
  ct_tensor *t = ct_tensor_new();
  const char *msg;
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(3, 4)), CT_OK);
  use_test_alloc(&a, 1);
  ck_assert_ptr_null(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()));
  msg = ct_last_error();
  ck_assert_ptr_nonnull(strstr(msg, "[3,4]"));
  ck_assert_ptr_nonnull(strstr(msg, "float32"));
  ct_tensor_free(t);
  restore_default_alloc();
}
END_TEST

START_TEST(failed_growth_of_sole_block_keeps_dims_and_dtype) {
  test_alloc a;
  ct_tensor *t;
  ct_memory_stats s;
  use_test_alloc(&a, 2);
  t = alloc_tensor(CT_DIMS(2), CT_FLOAT32, NULL);
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(100)), CT_OK);
  CT_ASSERT_NULL_FAILS(ct_tensor_mutable_data(t, CT_FLOAT64, ct_cpu()), CT_ERR_OUT_OF_MEMORY);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(100)));
  ck_assert_int_eq(ct_tensor_dtype(t), CT_FLOAT32);
  ck_assert(ct_place_equal(ct_tensor_place(t), ct_cpu()));
  /* The old block was given up before the allocation: the tensor holds none now. */
  ck_assert(!ct_tensor_has_memory(t));
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.allocs, 1);
  ck_assert_uint_eq(s.frees, 1);
  ck_assert_int_eq(a.live, 0);
  ct_tensor_free(t);
  restore_default_alloc();
}
END_TEST

START_TEST(failed_growth_never_loses_a_shared_block) {
  test_alloc a;
  ct_tensor *t, *v;
  float *p = NULL;
  const float *q;
  ct_memory_stats s;
  int i;
  use_test_alloc(&a, 2);
  t = alloc_tensor(CT_DIMS(4), CT_FLOAT32, (void **)&p);
  for (i = 0; i < 4; i++) p[i] = (float)(i + 1);
  v = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_share(v, t), CT_OK);
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(1000)), CT_OK);
  CT_ASSERT_NULL_FAILS(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()), CT_ERR_OUT_OF_MEMORY);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(1000)));
  ck_assert_int_eq(ct_tensor_dtype(t), CT_FLOAT32);
  /* The other view still has its block and values. */
  q = ct_tensor_data(v, CT_FLOAT32);
  ck_assert_ptr_eq(q, p);
  for (i = 0; i < 4; i++) ck_assert(q[i] == (float)(i + 1));
  /* And the failing view kept it too: it is exactly as before the call. */
  ck_assert(ct_tensor_shares_memory(t, v));
  ck_assert(ct_tensor_has_memory(t));
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 16);
  ck_assert_int_eq(a.live, 1);
  ct_tensor_free(t);
  ct_tensor_free(v);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.allocs, s.frees);
  ck_assert_int_eq(a.live, 0);
  restore_default_alloc();
}
END_TEST

START_TEST(failed_copy_and_set_value_are_out_of_memory) {
  test_alloc a;
  ct_tensor *src, *dst, *sv;
  static const float vals[3] = {1.0f, 2.0f, 3.0f};
  ct_memory_stats s;
  use_test_alloc(&a, 2);
  src = alloc_tensor(CT_DIMS(8), CT_FLOAT32, NULL);
  dst = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_copy(dst, src, ct_cpu()), CT_ERR_OUT_OF_MEMORY);
  ck_assert(!ct_tensor_has_memory(dst));
  ck_assert_int_eq(ct_tensor_dims(dst).rank, -1);
  ck_assert_int_eq(ct_tensor_dtype(dst), CT_DTYPE_UNDEFINED);
  a.fail_at = a.calls + 1;
  sv = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_set_value(sv, vals, CT_DIMS(3), CT_FLOAT32, ct_cpu()),
                   CT_ERR_OUT_OF_MEMORY);
  ck_assert(!ct_tensor_has_memory(sv));
  ck_assert_int_eq(ct_tensor_dims(sv).rank, -1);
  ck_assert_int_eq(ct_tensor_dtype(sv), CT_DTYPE_UNDEFINED);
  ck_assert_int_eq(a.failures, 2);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 32);
  ct_tensor_free(src);
  ct_tensor_free(dst);
  ct_tensor_free(sv);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.allocs, s.frees);
  ck_assert_int_eq(a.live, 0);
  restore_default_alloc();
}
END_TEST

/* A sequence of allocating calls over several tensors. Returns how many calls reported
 * CT_ERR_OUT_OF_MEMORY. Failures of later calls caused by earlier ones are fine. */
static int run_alloc_sequence(void) {
  static const float vals[20] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
                                 11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
  ct_tensor *t[5];
  int oom = 0, i;
  float *p;
  for (i = 0; i < 5; i++) {
    t[i] = ct_tensor_new();
    ck_assert_ptr_nonnull(t[i]);
  }
  ck_assert_int_eq(ct_tensor_resize(t[0], CT_DIMS(10)), CT_OK);
  p = ct_tensor_mutable_data(t[0], CT_FLOAT32, ct_cpu());
  if (p) memcpy(p, vals, 10 * sizeof(float));
  else oom += ct_last_status() == CT_ERR_OUT_OF_MEMORY;
  oom += ct_tensor_copy(t[1], t[0], ct_cpu()) == CT_ERR_OUT_OF_MEMORY;
  oom += ct_tensor_set_value(t[2], vals, CT_DIMS(4, 5), CT_FLOAT32, ct_cpu()) ==
         CT_ERR_OUT_OF_MEMORY;
  (void)ct_tensor_share(t[3], t[2]);
  ck_assert_int_eq(ct_tensor_resize(t[0], CT_DIMS(1000)), CT_OK);
  p = ct_tensor_mutable_data(t[0], CT_FLOAT32, ct_cpu());
  if (p) memset(p, 0, 4000);
  else oom += ct_last_status() == CT_ERR_OUT_OF_MEMORY;
  /* t[2] shares its block with t[3]: the copy needs a block of its own. */
  oom += ct_tensor_copy(t[2], t[1], ct_cpu()) == CT_ERR_OUT_OF_MEMORY;
  oom += ct_tensor_set_value(t[4], vals, CT_DIMS(20), CT_FLOAT32, ct_cpu()) ==
         CT_ERR_OUT_OF_MEMORY;
  ck_assert_int_eq(ct_tensor_resize(t[4], CT_DIMS(30)), CT_OK);
  if (!ct_tensor_mutable_data(t[4], CT_FLOAT64, ct_cpu()))
    oom += ct_last_status() == CT_ERR_OUT_OF_MEMORY;
  for (i = 0; i < 5; i++) ct_tensor_free(t[i]);
  return oom;
}

START_TEST(failing_each_allocation_never_leaks) {
  test_alloc a;
  ct_memory_stats s;
  int total, k;
  /* First count the allocations of a clean run. */
  use_test_alloc(&a, 0);
  ck_assert_int_eq(run_alloc_sequence(), 0);
  total = a.calls;
  ck_assert_int_ge(total, 6);
  ck_assert_int_eq(a.live, 0);
  for (k = 1; k <= total; k++) {
    use_test_alloc(&a, k);
    ck_assert_int_ge(run_alloc_sequence(), 1);
    ck_assert_int_eq(a.failures, 1);
    ck_assert_int_eq(a.live, 0);
    ck_assert_int_eq(a.bad_frees, 0);
    s = cpu_stats();
    ck_assert_uint_eq(s.allocated, 0);
    ck_assert_uint_eq(s.reserved, 0);
    ck_assert_uint_eq(s.allocs, s.frees);
  }
  restore_default_alloc();
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("memory_alloc");
  CT_ADD_TEST(s, default_host_allocator_is_jemalloc_when_the_program_has_it);
  CT_ADD_TEST(s, custom_allocator_sees_rounded_sizes_and_align_64);
  CT_ADD_TEST(s, custom_allocator_keeps_stats);
  CT_ADD_TEST(s, null_allocator_restores_default);
  CT_ADD_TEST(s, block_returns_to_allocator_that_made_it);
  CT_ADD_TEST(s, set_allocator_null_alloc_is_invalid_argument);
  CT_ADD_TEST(s, set_allocator_null_free_is_invalid_argument);
  CT_ADD_TEST(s, set_allocator_failure_keeps_old_allocator);
  CT_ADD_TEST(s, set_allocator_cuda_is_unsupported);
  CT_ADD_TEST(s, set_allocator_invalid_place_is_invalid_argument);
  CT_ADD_TEST(s, failed_first_allocation_leaves_tensor_empty);
  CT_ADD_TEST(s, out_of_memory_message_names_dims_and_dtype);
  CT_ADD_TEST(s, failed_growth_of_sole_block_keeps_dims_and_dtype);
  CT_ADD_TEST(s, failed_growth_never_loses_a_shared_block);
  CT_ADD_TEST(s, failed_copy_and_set_value_are_out_of_memory);
  CT_ADD_TEST(s, failing_each_allocation_never_leaks);
  return s;
}

CT_TEST_MAIN(make_suite)
