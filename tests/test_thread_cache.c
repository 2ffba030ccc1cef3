/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_thread_cache.c: each thread's cache of small host memory (core/memory/
 * thread_cache.c): reuse at the same size on the same thread, exact stats with the cache, its
 * limits, and its release by ct_memory_empty_cache, by the host cache limit and at thread exit.
 * Links the static library for the cache's test hooks (memory_impl.h). */
#include <pthread.h>
#include <stdint.h>

#include "harness.h"
#include "memory/memory_impl.h"

#ifdef CORTEN_FAULT_INJECTION
#include "common/fault.h"
#endif

/* The whole allocation of a host block holding n data bytes: header, and data rounded to 64. */
static size_t block_total(size_t n) { return CT__BLOCK_HEADER + ((n + 63) & ~(size_t)63); }

/* A new float32 tensor of n elements with its memory. */
static ct_tensor *tensor_of(int64_t n) {
  ct_tensor *t = ct_tensor_new();
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(n)), CT_OK);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()));
  return t;
}

/* Each test starts with an empty cache on this thread (Check forks it from the runner). */
static void empty_all(void) {
  ck_assert_int_eq(ct_memory_empty_cache(ct_cpu()), CT_OK);
  ck_assert_uint_eq(ct__thread_cache_bytes(), 0);
}

START_TEST(freed_small_block_is_reused_at_the_same_size) {
  empty_all();
  ct_tensor *t = tensor_of(1024);
  void *first = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu());
  ct_tensor_free(t);
  ck_assert_uint_eq(ct__thread_cache_bytes(), block_total(4096));
  t = tensor_of(1024);
  ck_assert_ptr_eq(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()), first);
  ck_assert_uint_eq(ct__thread_cache_bytes(), 0);
  ct_tensor_free(t);
}
END_TEST

START_TEST(a_request_of_another_size_leaves_the_cached_block) {
  empty_all();
  ct_tensor_free(tensor_of(1024));
  ct_tensor *t = tensor_of(1000); /* 4000 bytes: 4032 rounded, not 4096 */
  ck_assert_uint_eq(ct__thread_cache_bytes(), block_total(4096));
  ct_tensor_free(t);
  ck_assert_uint_eq(ct__thread_cache_bytes(), block_total(4096) + block_total(4000));
}
END_TEST

START_TEST(stats_stay_exact_with_the_cache) {
  empty_all();
  ct_tensor *t = tensor_of(1000);
  ct_tensor_free(t);
  ct_memory_stats s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.reserved, 0); /* a cached small block is counted as given back */
  ck_assert_uint_eq(s.frees, 1);
  t = tensor_of(1000); /* from the cache */
  ct_tensor *u = tensor_of(1000);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 8000);
  ck_assert_uint_eq(s.peak, 8000);
  ck_assert_uint_eq(s.reserved, 2 * 4032);
  ck_assert_uint_eq(s.allocs, 3);
  ck_assert_uint_eq(s.frees, 1);
  ct_tensor_free(t);
  ct_tensor_free(u);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.reserved, 0);
  ck_assert_uint_eq(s.frees, 3);
}
END_TEST

START_TEST(a_bin_keeps_at_most_16_blocks) {
  empty_all();
  ct_tensor *t[17];
  for (int i = 0; i < 17; i++) t[i] = tensor_of(16);
  for (int i = 0; i < 17; i++) ct_tensor_free(t[i]);
  ck_assert_uint_eq(ct__thread_cache_bytes(), 16 * block_total(64));
}
END_TEST

START_TEST(a_thread_keeps_at_most_256_KiB) {
  empty_all();
  ct_tensor *t[5];
  for (int i = 0; i < 5; i++) t[i] = tensor_of(15000); /* 60000 bytes: a 60160-byte block */
  for (int i = 0; i < 5; i++) ct_tensor_free(t[i]);
  ck_assert_uint_eq(ct__thread_cache_bytes(), 4 * block_total(60000)); /* the fifth goes back */
}
END_TEST

START_TEST(standalone_variables_are_cached_and_64_byte_aligned) {
  empty_all();
  ct_var *v = ct_var_new();
  ck_assert_ptr_nonnull(v);
  ck_assert_uint_eq((uintptr_t)v % 64, 0);
  ct_var_free(v);
  ck_assert_uint_gt(ct__thread_cache_bytes(), 0);
  ct_var *w = ct_var_new();
  ck_assert_ptr_eq(w, v);
  ck_assert_ptr_eq(ct_var_type(w), NULL); /* a fresh, empty variable */
  ck_assert_str_eq(ct_var_name(w), "");
  ct_var_free(w);
}
END_TEST

START_TEST(empty_cache_gives_back_the_calling_threads_cache) {
  empty_all();
  ct_tensor_free(tensor_of(1024));
  ck_assert_uint_gt(ct__thread_cache_bytes(), 0);
  ck_assert_int_eq(ct_memory_empty_cache(ct_cpu()), CT_OK);
  ck_assert_uint_eq(ct__thread_cache_bytes(), 0);
}
END_TEST

/* A thread that frees a block, waits for the main thread, then frees another; it reports what
 * its cache held after each. */
typedef struct step_job {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int stage;                /* 1: the first block is freed; 2: the main thread went on */
  size_t after_first, after_second;
} step_job;

static void wait_stage(step_job *j, int stage) {
  pthread_mutex_lock(&j->lock);
  while (j->stage < stage) pthread_cond_wait(&j->cond, &j->lock);
  pthread_mutex_unlock(&j->lock);
}

static void set_stage(step_job *j, int stage) {
  pthread_mutex_lock(&j->lock);
  j->stage = stage;
  pthread_cond_broadcast(&j->cond);
  pthread_mutex_unlock(&j->lock);
}

static void *two_frees(void *arg) {
  step_job *j = arg;
  ct_tensor_free(tensor_of(1024));
  j->after_first = ct__thread_cache_bytes();
  set_stage(j, 1);
  wait_stage(j, 2);
  ct_tensor_free(tensor_of(16));
  j->after_second = ct__thread_cache_bytes();
  return NULL;
}

START_TEST(empty_cache_reaches_other_threads_at_their_next_free) {
  step_job j = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0};
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, two_frees, &j), 0);
  wait_stage(&j, 1);
  ck_assert_int_eq(ct_memory_empty_cache(ct_cpu()), CT_OK);
  set_stage(&j, 2);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert_uint_eq(j.after_first, block_total(4096));
  ck_assert_uint_eq(j.after_second, block_total(64)); /* the 4 KB block went back first */
}
END_TEST

static void *free_one_block(void *arg) {
  (void)arg;
  ct_tensor_free(tensor_of(1024));
  return (void *)(uintptr_t)ct__thread_cache_bytes();
}

START_TEST(an_exiting_thread_gives_its_cache_back) {
  size_t before = ct__thread_cache_released_at_exit();
  pthread_t th;
  void *held;
  ck_assert_int_eq(pthread_create(&th, NULL, free_one_block, NULL), 0);
  ck_assert_int_eq(pthread_join(th, &held), 0);
  ck_assert_uint_eq((uintptr_t)held, block_total(4096));
  ck_assert_uint_eq(ct__thread_cache_released_at_exit() - before, block_total(4096));
}
END_TEST

START_TEST(cache_limit_0_keeps_nothing_in_thread_caches) {
  empty_all();
  ck_assert_int_eq(ct_memory_set_cache_limit(ct_cpu(), 0), CT_OK);
  ct_tensor_free(tensor_of(1024));
  ct_var_free(ct_var_new()); /* a variable kept nothing either */
  ck_assert_uint_eq(ct__thread_cache_bytes(), 0);
  ck_assert_int_eq(ct_memory_set_cache_limit(ct_cpu(), 1 << 20), CT_OK);
  ct_tensor_free(tensor_of(1024));
  ck_assert_uint_eq(ct__thread_cache_bytes(), block_total(4096));
}
END_TEST

START_TEST(a_lower_cache_limit_lowers_the_threads_budget) {
  empty_all();
  ck_assert_int_eq(ct_memory_set_cache_limit(ct_cpu(), 5000), CT_OK);
  ct_tensor *a = tensor_of(1024), *b = tensor_of(1024);
  ct_tensor_free(a);
  ct_tensor_free(b); /* a second 4224-byte block would pass 5000 */
  ck_assert_uint_eq(ct__thread_cache_bytes(), block_total(4096));
  ck_assert_int_eq(ct_memory_set_cache_limit(ct_cpu(), CT__HOST_CACHE_LIMIT), CT_OK);
}
END_TEST

#ifdef CORTEN_FAULT_INJECTION
START_TEST(fault_injection_reaches_an_allocation_the_cache_would_serve) {
  empty_all();
  ct_tensor_free(tensor_of(1024));
  ct_var_free(ct_var_new());
  ct__fault_arm(0);
  ck_assert_ptr_null(ct_var_new());
  ck_assert_int_eq(ct__fault_fired(), 1);
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(1024)), CT_OK);
  ct__fault_arm(0);
  ck_assert_ptr_null(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()));
  ck_assert_int_eq(ct_last_status(), CT_ERR_OUT_OF_MEMORY);
  ct__fault_arm(-1);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()));
  ct_tensor_free(t);
}
END_TEST
#endif

static Suite *make_suite(void) {
  Suite *s = suite_create("thread_cache");
  CT_ADD_TEST(s, freed_small_block_is_reused_at_the_same_size);
  CT_ADD_TEST(s, a_request_of_another_size_leaves_the_cached_block);
  CT_ADD_TEST(s, stats_stay_exact_with_the_cache);
  CT_ADD_TEST(s, a_bin_keeps_at_most_16_blocks);
  CT_ADD_TEST(s, a_thread_keeps_at_most_256_KiB);
  CT_ADD_TEST(s, standalone_variables_are_cached_and_64_byte_aligned);
  CT_ADD_TEST(s, empty_cache_gives_back_the_calling_threads_cache);
  CT_ADD_TEST(s, empty_cache_reaches_other_threads_at_their_next_free);
  CT_ADD_TEST(s, an_exiting_thread_gives_its_cache_back);
  CT_ADD_TEST(s, cache_limit_0_keeps_nothing_in_thread_caches);
  CT_ADD_TEST(s, a_lower_cache_limit_lowers_the_threads_budget);
#ifdef CORTEN_FAULT_INJECTION
  CT_ADD_TEST(s, fault_injection_reaches_an_allocation_the_cache_would_serve);
#endif
  return s;
}

CT_TEST_MAIN(make_suite)
