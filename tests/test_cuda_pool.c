/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the CUDA caching pool's logic (core/cuda/cuda_pool.c) on the CPU, over the fake
 * backing of cuda_pool_util.h, so every rule runs without a GPU: rounding, small and large pools
 * and their segment sizes, best fit, splitting, merging, exact stats, and churn in one thread and
 * in several. Streams, backing failures and empty_cache are tested in test_cuda_pool_streams.c. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "cuda_pool_util.h"

/* ---- Rounding and binning ----------------------------------------------------------------- */

START_TEST(round_up_to_512_bytes) {
  ck_assert_uint_eq(ct__pool_round(0), 512);
  ck_assert_uint_eq(ct__pool_round(1), 512);
  ck_assert_uint_eq(ct__pool_round(512), 512);
  ck_assert_uint_eq(ct__pool_round(513), 1024);
  ck_assert_uint_eq(ct__pool_round(1000000), 1000448);
  ck_assert_uint_eq(ct__pool_round(SIZE_MAX), 0);
}
END_TEST

START_TEST(small_request_takes_a_2mib_segment) {
  fake f;
  ct__pool *p = fake_pool(&f);
  held a = get(p, 1000, S1);
  ck_assert_uint_eq(a.ptr, f.seg_addr[0]);
  ck_assert_uint_eq(f.seg_size[0], 2 * MiB);
  ct__pool_stats s = stats(p);
  ck_assert_uint_eq(s.reserved, 2 * MiB);
  ck_assert_uint_eq(s.in_use, 1024);
  ck_assert_uint_eq(ct__pool_chunk_size(a.c), 1024);
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(small_requests_pack_into_one_segment) {
  fake f;
  ct__pool *p = fake_pool(&f);
  held a = get(p, 512, S1), b = get(p, 100 * KiB, S1), c = get(p, 1 * MiB, S1);
  ck_assert_int_eq(f.allocs, 1);
  ck_assert_uint_eq(b.ptr, a.ptr + 512);
  ck_assert_uint_eq(c.ptr, b.ptr + 100 * KiB);
  ck_assert_uint_eq(stats(p).in_use, 512 + 100 * KiB + 1 * MiB);
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(one_mib_is_small_and_one_byte_more_is_large) {
  fake f;
  ct__pool *p = fake_pool(&f);
  get(p, 1 * MiB, S1);
  ck_assert_uint_eq(f.seg_size[0], 2 * MiB);
  get(p, 1 * MiB + 1, S1);
  ck_assert_int_eq(f.allocs, 2);
  ck_assert_uint_eq(f.seg_size[1], 20 * MiB);
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(medium_requests_share_20mib_segments) {
  fake f;
  ct__pool *p = fake_pool(&f);
  held a = get(p, 3 * MiB, S1), b = get(p, 5 * MiB, S1);
  ck_assert_int_eq(f.allocs, 1);
  ck_assert_uint_eq(f.seg_size[0], 20 * MiB);
  ck_assert_uint_eq(b.ptr, a.ptr + 3 * MiB);
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(large_request_gets_its_own_segment_rounded_to_2mib) {
  fake f;
  ct__pool *p = fake_pool(&f);
  get(p, 10 * MiB, S1);
  get(p, 11 * MiB + 1, S1);
  ck_assert_int_eq(f.allocs, 2);
  ck_assert_uint_eq(f.seg_size[0], 10 * MiB);
  ck_assert_uint_eq(f.seg_size[1], 12 * MiB);
  ck_assert_uint_eq(stats(p).in_use, 10 * MiB + 12 * MiB); /* rests under 1 MiB stay inside */
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(small_requests_never_use_the_large_pool) {
  fake f;
  ct__pool *p = fake_pool(&f);
  held big = get(p, 3 * MiB, S1);
  ct__pool_release(p, big.c); /* a free 20 MiB segment in the large pool */
  held a = get(p, 4 * KiB, S1);
  ck_assert_int_eq(f.allocs, 2);
  ck_assert_uint_eq(a.ptr, f.seg_addr[1]);
  ck_assert_uint_eq(f.seg_size[1], 2 * MiB);
  fake_pool_done(p, &f);
}
END_TEST

/* ---- Best fit and splitting --------------------------------------------------------------- */

/* One segment laid out as [A 8K][B][C 4K][D][E 16K][F][rest], with A, C, E freed. */
static void holes(ct__pool *p, held *a, held *c, held *e) {
  *a = get(p, 8 * KiB, S1);
  get(p, 512, S1);
  *c = get(p, 4 * KiB, S1);
  get(p, 512, S1);
  *e = get(p, 16 * KiB, S1);
  get(p, 512, S1);
  ct__pool_release(p, a->c);
  ct__pool_release(p, c->c);
  ct__pool_release(p, e->c);
}

START_TEST(best_fit_takes_the_smallest_free_chunk_that_fits) {
  fake f;
  ct__pool *p = fake_pool(&f);
  held a, c, e;
  holes(p, &a, &c, &e);
  ck_assert_uint_eq(stats(p).free_chunks, 4);
  ck_assert_uint_eq(get(p, 3 * KiB, S1).ptr, c.ptr);
  ck_assert_uint_eq(get(p, 6 * KiB, S1).ptr, a.ptr);
  ck_assert_uint_eq(get(p, 10 * KiB, S1).ptr, e.ptr);
  ck_assert_int_eq(f.allocs, 1);
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(best_fit_breaks_ties_by_lowest_address) {
  fake f;
  ct__pool *p = fake_pool(&f);
  held a = get(p, 4 * KiB, S1);
  get(p, 512, S1);
  held b = get(p, 4 * KiB, S1);
  get(p, 512, S1);
  ct__pool_release(p, b.c);
  ct__pool_release(p, a.c);
  ck_assert_uint_eq(get(p, 4 * KiB, S1).ptr, a.ptr);
  ck_assert_uint_eq(get(p, 4 * KiB, S1).ptr, b.ptr);
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(split_hands_out_the_front_and_keeps_the_rest) {
  fake f;
  ct__pool *p = fake_pool(&f);
  held a, c, e;
  holes(p, &a, &c, &e);
  held x = get(p, 2 * KiB, S1); /* best fit: C (4K), split into 2K + 2K */
  ck_assert_uint_eq(x.ptr, c.ptr);
  ck_assert_uint_eq(ct__pool_chunk_size(x.c), 2 * KiB);
  ck_assert_uint_eq(stats(p).free_chunks, 4);
  ck_assert_uint_eq(get(p, 2 * KiB, S1).ptr, c.ptr + 2 * KiB); /* exactly the rest */
  ck_assert_uint_eq(stats(p).free_chunks, 3);
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(large_pool_keeps_rests_of_1mib_or_less_inside_the_chunk) {
  fake f;
  ct__pool *p = fake_pool(&f);
  held a = get(p, 19 * MiB + 512 * KiB, S1); /* rest 512 KiB: not split */
  ck_assert_uint_eq(ct__pool_chunk_size(a.c), 20 * MiB);
  ck_assert_uint_eq(stats(p).free_chunks, 0);
  ct__pool_release(p, a.c);
  held b = get(p, 18 * MiB, S1); /* rest 2 MiB: split */
  ck_assert_uint_eq(b.ptr, a.ptr);
  ck_assert_uint_eq(ct__pool_chunk_size(b.c), 18 * MiB);
  ct__pool_stats s = stats(p);
  ck_assert_uint_eq(s.free_chunks, 1);
  ck_assert_uint_eq(s.cached, 2 * MiB);
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(large_pool_best_fit_splits_a_bigger_cached_chunk) {
  fake f;
  ct__pool *p = fake_pool(&f);
  held a = get(p, 50 * MiB, S1);
  ct__pool_release(p, a.c);
  held b = get(p, 4 * MiB, S1);
  ck_assert_uint_eq(b.ptr, a.ptr);
  ck_assert_int_eq(f.allocs, 1);
  ck_assert_uint_eq(stats(p).cached, 46 * MiB);
  fake_pool_done(p, &f);
}
END_TEST

/* ---- Merging ------------------------------------------------------------------------------ */

START_TEST(freed_chunk_merges_with_both_free_neighbours) {
  fake f;
  ct__pool *p = fake_pool(&f);
  held a = get(p, 4 * KiB, S1), b = get(p, 4 * KiB, S1), c = get(p, 4 * KiB, S1);
  held d = get(p, 4 * KiB, S1); /* keeps c away from the segment's rest */
  ct__pool_release(p, a.c);
  ct__pool_release(p, c.c);
  ck_assert_uint_eq(stats(p).free_chunks, 3); /* a, c, rest */
  ct__pool_release(p, b.c);
  ck_assert_uint_eq(stats(p).free_chunks, 2); /* a+b+c, rest */
  ck_assert_uint_eq(get(p, 12 * KiB, S1).ptr, a.ptr); /* the merged chunk fits exactly */
  ck_assert_uint_eq(stats(p).free_chunks, 1);
  (void)d;
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(freeing_everything_merges_back_to_one_segment) {
  fake f;
  ct__pool *p = fake_pool(&f);
  held h[8];
  for (int i = 0; i < 8; i++) h[i] = get(p, (size_t)(i + 1) * 3 * KiB, S1);
  int order[8] = {3, 0, 7, 5, 1, 6, 2, 4};
  for (int i = 0; i < 8; i++) ct__pool_release(p, h[order[i]].c);
  ct__pool_stats s = stats(p);
  ck_assert_uint_eq(s.free_chunks, 1);
  ck_assert_uint_eq(s.in_use, 0);
  ck_assert_uint_eq(s.cached, 2 * MiB);
  ck_assert_uint_eq(get(p, 1 * MiB, S1).ptr, f.seg_addr[0]);
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(chunks_of_different_segments_never_merge) {
  fake f;
  ct__pool *p = fake_pool(&f);
  held a = get(p, 1 * MiB, S1), b = get(p, 1 * MiB, S1); /* fills segment 0 */
  held c = get(p, 1 * MiB, S1);                          /* segment 1 */
  ck_assert_int_eq(f.allocs, 2);
  ct__pool_release(p, b.c);
  ct__pool_release(p, c.c);
  ct__pool_stats s = stats(p);
  ck_assert_uint_eq(s.free_chunks, 2); /* b, and segment 1 whole again */
  (void)a;
  fake_pool_done(p, &f);
}
END_TEST

/* ---- Stats -------------------------------------------------------------------------------- */

START_TEST(stats_are_exact_through_a_sequence) {
  fake f;
  ct__pool *p = fake_pool(&f);
  ct__pool_stats s = stats(p);
  ck_assert_uint_eq(s.reserved, 0);
  ck_assert_uint_eq(s.in_use, 0);
  ck_assert_uint_eq(s.cached, 0);
  ck_assert_uint_eq(s.segments, 0);
  ck_assert_uint_eq(s.free_chunks, 0);
  ck_assert_uint_eq(s.backing_allocs, 0);

  held a = get(p, 100, S1);        /* 512 of a 2 MiB segment */
  held b = get(p, 5 * MiB, S1);    /* 5 MiB of a 20 MiB segment */
  held c = get(p, 30 * MiB, S1);   /* its own 30 MiB segment */
  s = stats(p);
  ck_assert_uint_eq(s.reserved, 52 * MiB);
  ck_assert_uint_eq(s.in_use, 512 + 35 * MiB);
  ck_assert_uint_eq(s.cached, 52 * MiB - 512 - 35 * MiB);
  ck_assert_uint_eq(s.segments, 3);
  ck_assert_uint_eq(s.free_chunks, 2);
  ck_assert_uint_eq(s.backing_allocs, 3);

  ct__pool_release(p, b.c);
  ct__pool_release(p, c.c);
  s = stats(p);
  ck_assert_uint_eq(s.in_use, 512);
  ck_assert_uint_eq(s.free_chunks, 3);
  ck_assert_uint_eq(s.cached, 52 * MiB - 512);

  ck_assert_int_eq(ct__pool_empty_cache(p), CT_OK);
  s = stats(p);
  ck_assert_uint_eq(s.reserved, 2 * MiB);
  ck_assert_uint_eq(s.segments, 1);
  ck_assert_uint_eq(s.backing_frees, 2);
  ck_assert_uint_eq(s.free_chunks, 1);
  ct__pool_release(p, a.c);
  s = stats(p);
  ck_assert_uint_eq(s.in_use, 0);
  ck_assert_uint_eq(s.cached, 2 * MiB);
  ck_assert_uint_eq(s.retries, 0);
  ck_assert_uint_eq(s.events, 0);
  fake_pool_done(p, &f);
}
END_TEST

/* ---- Churn -------------------------------------------------------------------------------- */

static uint64_t lcg(uint64_t *state) {
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  return *state >> 33;
}

/* A mixed size: mostly small tensors, some medium, a few large. */
static size_t mixed_size(uint64_t *rng) {
  uint64_t r = lcg(rng) % 100;
  if (r < 70) return 1 + lcg(rng) % (64 * KiB);
  if (r < 90) return 64 * KiB + lcg(rng) % (960 * KiB);
  if (r < 98) return 1 * MiB + lcg(rng) % (8 * MiB);
  return 10 * MiB + lcg(rng) % (22 * MiB);
}

/* A working set of mixed sizes, then 10,000 cycles that each free two of its tensors and allocate
 * them again with their sizes exchanged: the working set's peak never changes, so neither may
 * reserved, nor may the backing be asked for anything. */
START_TEST(steady_working_set_of_10000_mixed_cycles_never_grows_reserved) {
  enum { SLOTS = 64, CYCLES = 10000 };
  fake f;
  ct__pool *p = fake_pool(&f);
  held slot[SLOTS];
  size_t size[SLOTS];
  uint64_t rng = 42;
  for (int i = 0; i < SLOTS; i++) {
    size[i] = mixed_size(&rng);
    slot[i] = get(p, size[i], S1);
  }
  ct__pool_stats start = stats(p);
  size_t max_reserved = 0;
  for (int n = 0; n < CYCLES; n++) {
    int i = (int)(lcg(&rng) % SLOTS), j = (int)(lcg(&rng) % SLOTS);
    if (i == j) j = (j + 1) % SLOTS;
    ct__pool_release(p, slot[i].c);
    ct__pool_release(p, slot[j].c);
    size_t t = size[i];
    size[i] = size[j];
    size[j] = t;
    slot[i] = get(p, size[i], S1);
    slot[j] = get(p, size[j], S1);
    size_t r = stats(p).reserved;
    if (r > max_reserved) max_reserved = r;
  }
  ck_assert_uint_le(max_reserved, start.reserved);
  ck_assert_uint_eq(stats(p).backing_allocs, start.backing_allocs);
  for (int i = 0; i < SLOTS; i++) ct__pool_release(p, slot[i].c);
  ck_assert_uint_eq(stats(p).in_use, 0);
  ck_assert_int_eq(ct__pool_empty_cache(p), CT_OK);
  ck_assert_uint_eq(stats(p).reserved, 0);
  fake_pool_done(p, &f);
}
END_TEST

/* 10,000 cycles that each replace a random tensor with one of a fresh random size: the working
 * set wanders, and large chunks of exact sizes fragment; reserved stays within twice the peak
 * of the bytes in use (documented in docs/design/cuda-memory.md), and all of it comes back. */
START_TEST(random_churn_keeps_reserved_within_twice_the_peak_in_use) {
  enum { SLOTS = 64, CYCLES = 10000 };
  fake f;
  ct__pool *p = fake_pool(&f);
  held slot[SLOTS];
  uint64_t rng = 42;
  for (int i = 0; i < SLOTS; i++) slot[i] = get(p, mixed_size(&rng), S1);
  size_t peak_in_use = 0, max_reserved = 0;
  for (int n = 0; n < CYCLES; n++) {
    int i = (int)(lcg(&rng) % SLOTS);
    ct__pool_release(p, slot[i].c);
    slot[i] = get(p, mixed_size(&rng), S1);
    ct__pool_stats s = stats(p);
    if (s.in_use > peak_in_use) peak_in_use = s.in_use;
    if (s.reserved > max_reserved) max_reserved = s.reserved;
  }
  ck_assert_uint_le(max_reserved, 2 * peak_in_use);
  for (int i = 0; i < SLOTS; i++) ct__pool_release(p, slot[i].c);
  ct__pool_stats s = stats(p);
  ck_assert_uint_eq(s.in_use, 0);
  ck_assert_uint_eq(s.cached, s.reserved);
  ck_assert_int_eq(ct__pool_empty_cache(p), CT_OK);
  ck_assert_uint_eq(stats(p).reserved, 0);
  fake_pool_done(p, &f);
}
END_TEST

/* ---- Threads ------------------------------------------------------------------------------ */

typedef struct worker {
  ct__pool *p;
  ct__pool_stream s;
  int failures;
} worker;

static void *churn_thread(void *arg) {
  worker *w = arg;
  uint64_t rng = w->s.id * 7919;
  held h[16];
  for (int i = 0; i < 16; i++) h[i].c = NULL;
  for (int n = 0; n < 2000; n++) {
    int i = (int)(lcg(&rng) % 16);
    if (h[i].c != NULL) ct__pool_release(w->p, h[i].c);
    void *ptr;
    if (ct__pool_alloc(w->p, 1 + lcg(&rng) % (256 * KiB), w->s, &h[i].c, &ptr) != CT_OK) {
      w->failures++;
      h[i].c = NULL;
    }
  }
  for (int i = 0; i < 16; i++) {
    if (h[i].c != NULL) ct__pool_release(w->p, h[i].c);
  }
  return NULL;
}

START_TEST(threads_on_their_own_streams_share_one_pool) {
  fake f;
  ct__pool *p = fake_pool(&f);
  f.events_done_at_once = true;
  pthread_t t[4];
  worker w[4];
  for (int i = 0; i < 4; i++) {
    w[i].p = p;
    w[i].s.id = (uint64_t)i + 1;
    w[i].s.handle = (void *)(uintptr_t)(0x100 + i);
    w[i].failures = 0;
    ck_assert_int_eq(pthread_create(&t[i], NULL, churn_thread, &w[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    ck_assert_int_eq(w[i].failures, 0);
  }
  ct__pool_stats s = stats(p);
  ck_assert_uint_eq(s.in_use, 0);
  ck_assert_uint_eq(s.cached, s.reserved);
  ck_assert_int_eq(ct__pool_empty_cache(p), CT_OK);
  ck_assert_uint_eq(stats(p).reserved, 0);
  fake_pool_done(p, &f);
}
END_TEST

static Suite *cuda_pool_suite(void) {
  Suite *s = suite_create("cuda_pool");
  CT_ADD_TEST(s, round_up_to_512_bytes);
  CT_ADD_TEST(s, small_request_takes_a_2mib_segment);
  CT_ADD_TEST(s, small_requests_pack_into_one_segment);
  CT_ADD_TEST(s, one_mib_is_small_and_one_byte_more_is_large);
  CT_ADD_TEST(s, medium_requests_share_20mib_segments);
  CT_ADD_TEST(s, large_request_gets_its_own_segment_rounded_to_2mib);
  CT_ADD_TEST(s, small_requests_never_use_the_large_pool);
  CT_ADD_TEST(s, best_fit_takes_the_smallest_free_chunk_that_fits);
  CT_ADD_TEST(s, best_fit_breaks_ties_by_lowest_address);
  CT_ADD_TEST(s, split_hands_out_the_front_and_keeps_the_rest);
  CT_ADD_TEST(s, large_pool_keeps_rests_of_1mib_or_less_inside_the_chunk);
  CT_ADD_TEST(s, large_pool_best_fit_splits_a_bigger_cached_chunk);
  CT_ADD_TEST(s, freed_chunk_merges_with_both_free_neighbours);
  CT_ADD_TEST(s, freeing_everything_merges_back_to_one_segment);
  CT_ADD_TEST(s, chunks_of_different_segments_never_merge);
  CT_ADD_TEST(s, stats_are_exact_through_a_sequence);
  CT_ADD_TEST(s, steady_working_set_of_10000_mixed_cycles_never_grows_reserved);
  CT_ADD_TEST(s, random_churn_keeps_reserved_within_twice_the_peak_in_use);
  CT_ADD_TEST(s, threads_on_their_own_streams_share_one_pool);
  return s;
}

CT_TEST_MAIN(cuda_pool_suite)
