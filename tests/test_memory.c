/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of corten/memory.h: host stats, block rounding and alignment, and stats that stay exact
 * across threads. Replaceable allocators and fault injection are tested in
 * test_memory_alloc.c. Each test runs in its own process, so the stats start at zero. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "harness.h"

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
  ck_assert_uint_eq(s.reserved, 80000); /* the 80 KB block stays in the host cache */
  ck_assert_uint_eq(s.allocs, 3);
  ck_assert_uint_eq(s.frees, 3);
  ck_assert_int_eq(ct_memory_empty_cache(ct_cpu()), CT_OK);
  ck_assert_uint_eq(cpu_stats().reserved, 0);
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
  ct_memory_reset_peak(bad_place());
  ct_memory_reset_peak(ct_cuda(0));
  s = cpu_stats();
  ck_assert_uint_eq(s.peak, 1000);
  ck_assert_uint_eq(s.allocated, 1000);
  ct_tensor_free(a);
}
END_TEST

START_TEST(stats_get_null_out_is_invalid_argument) {
  CT_ASSERT_FAILS(ct_memory_stats_get(ct_cpu(), NULL), CT_ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(stats_get_cuda_is_unsupported) {
  ct_memory_stats s;
  if (ct_cuda_device_count() > 0) return;
  CT_ASSERT_FAILS(ct_memory_stats_get(ct_cuda(0), &s), no_cuda_status());
}
END_TEST

START_TEST(stats_get_invalid_place_is_invalid_argument) {
  ct_memory_stats s;
  ck_assert_int_eq(ct_memory_stats_get(bad_place(), &s),
                   CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_memory_stats_get((ct_place){(ct_device_kind)0, 0}, &s),
                   CT_ERR_INVALID_ARGUMENT);
}
END_TEST

/* ---- The host cache ------------------------------------------------------------------------ */

START_TEST(freed_large_block_is_reused_at_the_same_size) {
  ct_tensor *t = alloc_tensor(CT_DIMS(1 << 18), CT_FLOAT32, NULL); /* 1 MiB */
  const void *first = ct_tensor_data(t, CT_FLOAT32);
  ct_tensor_free(t);
  ct_memory_stats s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.reserved, 1 << 20); /* kept, pages and all */
  t = alloc_tensor(CT_DIMS(1 << 18), CT_FLOAT32, NULL);
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), first);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 1 << 20);
  ck_assert_uint_eq(s.reserved, 1 << 20); /* counted once */
  ck_assert_uint_eq(s.peak, 1 << 20);
  ck_assert_uint_eq(s.allocs, 2);
  ck_assert_uint_eq(s.frees, 1);
  ct_tensor *u = alloc_tensor(CT_DIMS((1 << 18) - 32), CT_FLOAT32, NULL); /* another size */
  ck_assert_ptr_ne(ct_tensor_data(u, CT_FLOAT32), first);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, (1 << 20) + (1 << 20) - 128); /* exact, before rounding */
  ck_assert_uint_eq(s.peak, s.allocated);
  ck_assert_uint_eq(s.reserved, (1 << 20) + (1 << 20) - 128);
  ct_tensor_free(t);
  ct_tensor_free(u);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.peak, (1 << 20) + (1 << 20) - 128);
  ck_assert_uint_eq(s.reserved, (1 << 20) + (1 << 20) - 128);
}
END_TEST

/* A cached block serves a request of at least half its size (the most recently freed first),
 * counted once in reserved; a smaller request, or a larger one, gets a block of its own. */
START_TEST(a_cached_block_serves_a_request_of_at_least_half_its_size) {
  ct_tensor *t = alloc_tensor(CT_DIMS(1 << 18), CT_FLOAT32, NULL); /* 1 MiB */
  const void *first = ct_tensor_data(t, CT_FLOAT32);
  ct_tensor_free(t);
  t = alloc_tensor(CT_DIMS(150000), CT_FLOAT32, NULL); /* 600,000 bytes: the cached block */
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), first);
  ct_memory_stats s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 600000); /* what the tensor asked for */
  ck_assert_uint_eq(s.reserved, 1 << 20);  /* the block's, counted once */
  ct_tensor_free(t);
  ct_tensor *small = alloc_tensor(CT_DIMS(100000), CT_FLOAT32, NULL); /* 400,000: under half */
  ck_assert_ptr_ne(ct_tensor_data(small, CT_FLOAT32), first);
  ct_tensor *big = alloc_tensor(CT_DIMS((1 << 18) + 1024), CT_FLOAT32, NULL); /* past it */
  ck_assert_ptr_ne(ct_tensor_data(big, CT_FLOAT32), first);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 400000 + (1 << 20) + 4096);
  ck_assert_uint_eq(s.reserved, (1 << 20) + 400000 + (1 << 20) + 4096); /* the cached one too */
  ct_tensor_free(small);
  ct_tensor_free(big);
  ck_assert_int_eq(ct_memory_empty_cache(ct_cpu()), CT_OK);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.reserved, 0);
}
END_TEST

START_TEST(empty_cache_gives_back_what_no_tensor_holds) {
  ct_tensor *a = alloc_tensor(CT_DIMS(1 << 16), CT_FLOAT32, NULL); /* 256 KiB: cached */
  ct_tensor *b = alloc_tensor(CT_DIMS(1 << 17), CT_FLOAT32, NULL); /* 512 KiB: kept alive */
  ct_tensor *c = alloc_tensor(CT_DIMS(100), CT_FLOAT32, NULL);     /* small: never cached */
  ct_tensor_free(a);
  ct_tensor_free(c);
  ck_assert_uint_eq(cpu_stats().reserved, (1 << 18) + (1 << 19));
  ck_assert_int_eq(ct_memory_empty_cache(ct_cpu()), CT_OK);
  ct_memory_stats s = cpu_stats();
  ck_assert_uint_eq(s.reserved, 1 << 19);
  ck_assert_uint_eq(s.allocated, 1 << 19);
  ck_assert_int_eq(ct_memory_empty_cache(ct_cpu()), CT_OK); /* nothing left: fine */
  ck_assert_uint_eq(cpu_stats().reserved, 1 << 19);
  ct_tensor_free(b);
  ck_assert_int_eq(ct_memory_empty_cache(ct_cpu()), CT_OK);
  ck_assert_uint_eq(cpu_stats().reserved, 0);
  ck_assert_int_eq(ct_memory_empty_cache(bad_place()), CT_ERR_INVALID_ARGUMENT);
}
END_TEST

/* Blocks of 256 KiB, 512 KiB and 1 MiB freed in that order; a limit with room for the last two
 * (and their headers, a few hundred bytes) gives back the oldest only; 0 gives back the rest and
 * keeps nothing freed afterwards. */
START_TEST(cache_limit_gives_back_the_oldest_and_0_disables) {
  ct_tensor *a = alloc_tensor(CT_DIMS(1 << 16), CT_FLOAT32, NULL);
  ct_tensor *b = alloc_tensor(CT_DIMS(1 << 17), CT_FLOAT32, NULL);
  ct_tensor *c = alloc_tensor(CT_DIMS(1 << 18), CT_FLOAT32, NULL);
  ct_tensor_free(a);
  ct_tensor_free(b);
  ct_tensor_free(c);
  ck_assert_uint_eq(cpu_stats().reserved, (1 << 18) + (1 << 19) + (1 << 20));
  ck_assert_int_eq(ct_memory_set_cache_limit(ct_cpu(), (1 << 19) + (1 << 20) + 4096), CT_OK);
  ck_assert_uint_eq(cpu_stats().reserved, (1 << 19) + (1 << 20));
  ck_assert_int_eq(ct_memory_set_cache_limit(ct_cpu(), 0), CT_OK);
  ck_assert_uint_eq(cpu_stats().reserved, 0);
  a = alloc_tensor(CT_DIMS(1 << 16), CT_FLOAT32, NULL);
  ck_assert_uint_eq(cpu_stats().reserved, 1 << 18);
  ct_tensor_free(a);
  ck_assert_uint_eq(cpu_stats().reserved, 0); /* not kept */
  ck_assert_int_eq(ct_memory_set_cache_limit(ct_cpu(), 1 << 20), CT_OK);
  c = alloc_tensor(CT_DIMS(1 << 18), CT_FLOAT32, NULL); /* 1 MiB and its header: past it */
  a = alloc_tensor(CT_DIMS(1 << 16), CT_FLOAT32, NULL);
  ct_tensor_free(c);
  ct_tensor_free(a);
  ck_assert_uint_eq(cpu_stats().reserved, 1 << 18);
  ck_assert_int_eq(ct_memory_empty_cache(ct_cpu()), CT_OK);
  ck_assert_uint_eq(cpu_stats().reserved, 0);
}
END_TEST

START_TEST(cache_limit_is_the_hosts_only) {
  CT_ASSERT_FAILS(ct_memory_set_cache_limit(bad_place(), 0), CT_ERR_INVALID_ARGUMENT);
  ct_status want = ct_cuda_device_count() > 0 ? CT_ERR_UNSUPPORTED : no_cuda_status();
  CT_ASSERT_FAILS(ct_memory_set_cache_limit(ct_cuda(0), 0), want);
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
  CT_ADD_TEST(s, freed_large_block_is_reused_at_the_same_size);
  CT_ADD_TEST(s, a_cached_block_serves_a_request_of_at_least_half_its_size);
  CT_ADD_TEST(s, empty_cache_gives_back_what_no_tensor_holds);
  CT_ADD_TEST(s, cache_limit_gives_back_the_oldest_and_0_disables);
  CT_ADD_TEST(s, cache_limit_is_the_hosts_only);
  CT_ADD_TEST(s, new_tensor_and_resize_allocate_nothing);
  CT_ADD_TEST(s, stats_stay_exact_across_threads);
  return s;
}

CT_TEST_MAIN(make_suite)
