/* Tests of corten/memory.h: host stats, block rounding and alignment, replaceable allocators and
 * fault injection. Each test runs in its own process, so the stats start at zero. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
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

/* A new tensor with the given dims and memory of the given dtype. */
static ct_tensor *alloc_tensor(ct_ddim dims, ct_dtype dtype, void **data) {
  ct_tensor *t = ct_tensor_new();
  void *p;
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(ct_tensor_resize(t, dims), CT_OK);
  p = ct_tensor_mutable_data(t, dtype, ct_cpu());
  ck_assert_ptr_nonnull(p);
  if (data) *data = p;
  return t;
}

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

/* What a CUDA place gives where it cannot hold memory: CT_ERR_UNSUPPORTED in a build without
 * CUDA, CT_ERR_DEVICE in a CUDA build on a machine without a GPU. The tests using it do nothing
 * where a GPU is present (tests/test_cuda.c covers that). */
static ct_status no_cuda_status(void) {
  return ct_cuda_is_built() ? CT_ERR_DEVICE : CT_ERR_UNSUPPORTED;
}

/* ---- Stats --------------------------------------------------------------------------------- */

START_TEST(stats_start_at_zero) {
  ct_memory_stats s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.peak, 0);
  ck_assert_uint_eq(s.reserved, 0);
  ck_assert_uint_eq(s.allocs, 0);
  ck_assert_uint_eq(s.frees, 0);
}
END_TEST

START_TEST(stats_count_float32_100x200) {
  ct_tensor *t = alloc_tensor(CT_DIMS(100, 200), CT_FLOAT32, NULL);
  ct_memory_stats s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 80000);
  ck_assert_uint_eq(s.reserved, 80000);
  ck_assert_uint_eq(s.peak, 80000);
  ck_assert_uint_eq(s.allocs, 1);
  ck_assert_uint_eq(s.frees, 0);
  ct_tensor_free(t);
}
END_TEST

START_TEST(stats_round_reserved_to_64_bytes) {
  ct_tensor *t = alloc_tensor(CT_DIMS(10), CT_INT8, NULL);
  ct_memory_stats s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 10);
  ck_assert_uint_eq(s.reserved, 64);
  ck_assert_uint_eq(s.allocs, 1);
  ct_tensor_free(t);
}
END_TEST

START_TEST(stats_round_100_bytes_to_128) {
  ct_tensor *t = alloc_tensor(CT_DIMS(25), CT_FLOAT32, NULL);
  ct_memory_stats s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 100);
  ck_assert_uint_eq(s.reserved, 128);
  ct_tensor_free(t);
}
END_TEST

START_TEST(zero_element_tensor_gets_a_64_byte_block) {
  void *p = NULL;
  ct_tensor *t = alloc_tensor(CT_DIMS(0), CT_FLOAT32, &p);
  ct_memory_stats s = cpu_stats();
  ck_assert_ptr_nonnull(p);
  ck_assert(ct_tensor_has_memory(t));
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.reserved, 64);
  ck_assert_uint_eq(s.allocs, 1);
  ct_tensor_free(t);
  s = cpu_stats();
  ck_assert_uint_eq(s.reserved, 0);
  ck_assert_uint_eq(s.frees, 1);
}
END_TEST

START_TEST(data_pointer_is_64_byte_aligned) {
  static const int64_t sizes[] = {0, 1, 3, 10, 63, 64, 65, 1000, 4097};
  ct_tensor *ts[sizeof sizes / sizeof sizes[0]];
  size_t i;
  for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    void *p = NULL;
    ts[i] = alloc_tensor(CT_DIMS(sizes[i]), CT_INT8, &p);
    ck_assert_uint_eq((uintptr_t)p % 64, 0);
  }
  for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) ct_tensor_free(ts[i]);
}
END_TEST

START_TEST(free_returns_stats_to_zero) {
  ct_tensor *a = alloc_tensor(CT_DIMS(100, 200), CT_FLOAT32, NULL);
  ct_tensor *b = alloc_tensor(CT_DIMS(10), CT_INT8, NULL);
  ct_tensor *c = alloc_tensor(CT_DIMS(3, 3), CT_FLOAT64, NULL);
  ct_memory_stats s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 80000 + 10 + 72);
  ck_assert_uint_eq(s.reserved, 80000 + 64 + 128);
  ck_assert_uint_eq(s.allocs, 3);
  ct_tensor_free(a);
  ct_tensor_free(b);
  ct_tensor_free(c);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.reserved, 0);
  ck_assert_uint_eq(s.allocs, 3);
  ck_assert_uint_eq(s.frees, 3);
}
END_TEST

START_TEST(peak_tracks_high_water_mark) {
  ct_tensor *a = alloc_tensor(CT_DIMS(250), CT_FLOAT32, NULL); /* 1000 bytes */
  ct_tensor *b = alloc_tensor(CT_DIMS(500), CT_FLOAT32, NULL); /* 2000 bytes */
  ct_memory_stats s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 3000);
  ck_assert_uint_eq(s.peak, 3000);
  ct_tensor_free(b);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 1000);
  ck_assert_uint_eq(s.peak, 3000);
  ct_tensor_free(a);
}
END_TEST

START_TEST(reset_peak_sets_peak_to_allocated) {
  ct_tensor *a = alloc_tensor(CT_DIMS(250), CT_FLOAT32, NULL); /* 1000 bytes */
  ct_tensor *b = alloc_tensor(CT_DIMS(500), CT_FLOAT32, NULL); /* 2000 bytes */
  ct_tensor *c;
  ct_memory_stats s;
  ct_tensor_free(b);
  ct_memory_reset_peak(ct_cpu());
  s = cpu_stats();
  ck_assert_uint_eq(s.peak, 1000);
  ck_assert_uint_eq(s.allocated, 1000);
  c = alloc_tensor(CT_DIMS(125), CT_FLOAT32, NULL); /* 500 bytes */
  s = cpu_stats();
  ck_assert_uint_eq(s.peak, 1500);
  ct_tensor_free(a);
  ct_tensor_free(c);
  ct_memory_reset_peak(ct_cpu());
  s = cpu_stats();
  ck_assert_uint_eq(s.peak, 0);
}
END_TEST

START_TEST(reset_peak_of_invalid_place_does_nothing) {
  ct_tensor *a = alloc_tensor(CT_DIMS(250), CT_FLOAT32, NULL);
  ct_memory_stats s;
  ct_memory_reset_peak((ct_place){(ct_device_kind)99, 0});
  ct_memory_reset_peak(ct_cuda(0));
  s = cpu_stats();
  ck_assert_uint_eq(s.peak, 1000);
  ck_assert_uint_eq(s.allocated, 1000);
  ct_tensor_free(a);
}
END_TEST

START_TEST(stats_get_null_out_is_invalid_argument) {
  ck_assert_int_eq(ct_memory_stats_get(ct_cpu(), NULL), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(stats_get_cuda_is_unsupported) {
  ct_memory_stats s;
  if (ct_cuda_device_count() > 0) return;
  ck_assert_int_eq(ct_memory_stats_get(ct_cuda(0), &s), no_cuda_status());
  ck_assert_int_eq(ct_last_status(), no_cuda_status());
}
END_TEST

START_TEST(stats_get_invalid_place_is_invalid_argument) {
  ct_memory_stats s;
  ck_assert_int_eq(ct_memory_stats_get((ct_place){(ct_device_kind)99, 0}, &s),
                   CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_memory_stats_get((ct_place){(ct_device_kind)0, 0}, &s),
                   CT_ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(new_tensor_and_resize_allocate_nothing) {
  ct_tensor *t = ct_tensor_new();
  ct_memory_stats s;
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(1000, 1000)), CT_OK);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.reserved, 0);
  ck_assert_uint_eq(s.allocs, 0);
  ct_tensor_free(t);
}
END_TEST

/* ---- Replaceable allocators ------------------------------------------------------------------ */

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
  ck_assert_int_eq(ct_set_allocator(ct_cpu(), &al), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
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
  ck_assert_int_eq(ct_set_allocator((ct_place){(ct_device_kind)99, 0}, &al),
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
  ct_clear_error();
  ck_assert_ptr_null(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()));
  ck_assert_int_eq(ct_last_status(), CT_ERR_OUT_OF_MEMORY);
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
  ck_assert_ptr_null(ct_tensor_mutable_data(t, CT_FLOAT64, ct_cpu()));
  ck_assert_int_eq(ct_last_status(), CT_ERR_OUT_OF_MEMORY);
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
  ck_assert_ptr_null(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()));
  ck_assert_int_eq(ct_last_status(), CT_ERR_OUT_OF_MEMORY);
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

/* ---- Threads -------------------------------------------------------------------------------- */

#define NTHREADS 4
#define NROUNDS 300

typedef struct loop_job {
  int64_t n; /* int8 elements per tensor */
  int bad;   /* calls that failed */
} loop_job;

/* Allocates and frees a tensor of job->n int8 elements NROUNDS times. */
static void *alloc_free_loop(void *arg) {
  loop_job *j = arg;
  int r;
  for (r = 0; r < NROUNDS; r++) {
    ct_tensor *t = ct_tensor_new();
    char *p;
    if (t == NULL || ct_tensor_resize(t, CT_DIMS(j->n)) != CT_OK) {
      j->bad++;
      ct_tensor_free(t);
      continue;
    }
    p = ct_tensor_mutable_data(t, CT_INT8, ct_cpu());
    if (p == NULL) j->bad++;
    else memset(p, r & 0xFF, (size_t)j->n);
    ct_tensor_free(t);
  }
  return NULL;
}

START_TEST(stats_stay_exact_across_threads) {
  loop_job jobs[NTHREADS] = {{10, 0}, {100, 0}, {1000, 0}, {5000, 0}};
  pthread_t th[NTHREADS];
  ct_memory_stats s;
  int i;
  for (i = 0; i < NTHREADS; i++)
    ck_assert_int_eq(pthread_create(&th[i], NULL, alloc_free_loop, &jobs[i]), 0);
  for (i = 0; i < NTHREADS; i++) {
    ck_assert_int_eq(pthread_join(th[i], NULL), 0);
    ck_assert_int_eq(jobs[i].bad, 0);
  }
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.reserved, 0);
  ck_assert_uint_eq(s.allocs, NTHREADS * NROUNDS);
  ck_assert_uint_eq(s.frees, NTHREADS * NROUNDS);
  ck_assert_uint_ge(s.peak, 5000);
  ck_assert_uint_le(s.peak, 10 + 100 + 1000 + 5000);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("memory");
  CT_ADD_TEST(s, stats_start_at_zero);
  CT_ADD_TEST(s, stats_count_float32_100x200);
  CT_ADD_TEST(s, stats_round_reserved_to_64_bytes);
  CT_ADD_TEST(s, stats_round_100_bytes_to_128);
  CT_ADD_TEST(s, zero_element_tensor_gets_a_64_byte_block);
  CT_ADD_TEST(s, data_pointer_is_64_byte_aligned);
  CT_ADD_TEST(s, free_returns_stats_to_zero);
  CT_ADD_TEST(s, peak_tracks_high_water_mark);
  CT_ADD_TEST(s, reset_peak_sets_peak_to_allocated);
  CT_ADD_TEST(s, reset_peak_of_invalid_place_does_nothing);
  CT_ADD_TEST(s, stats_get_null_out_is_invalid_argument);
  CT_ADD_TEST(s, stats_get_cuda_is_unsupported);
  CT_ADD_TEST(s, stats_get_invalid_place_is_invalid_argument);
  CT_ADD_TEST(s, new_tensor_and_resize_allocate_nothing);
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
  CT_ADD_TEST(s, stats_stay_exact_across_threads);
  return s;
}

CT_TEST_MAIN(make_suite)
