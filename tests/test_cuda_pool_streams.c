/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of how the CUDA caching pool (core/cuda/cuda_pool.c) hands memory between streams and
 * back, on the CPU over the fake backing of cuda_pool_util.h: per-stream reuse, event-gated reuse
 * across streams, retired streams, the free-and-retry path on a backing failure, and
 * empty_cache. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "cuda_pool_util.h"

/* ---- Streams ------------------------------------------------------------------------------ */

START_TEST(freed_chunk_is_reused_on_its_stream_without_the_backing) {
  fake f;
  ct__pool *p = fake_pool(&f);
  held a = get(p, 64 * KiB, S1);
  ct__pool_release(p, a.c);
  held b = get(p, 64 * KiB, S1);
  ck_assert_uint_eq(b.ptr, a.ptr);
  ck_assert_int_eq(f.allocs, 1);
  ck_assert_int_eq(f.nevents, 0); /* same stream: no event needed */
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(other_stream_does_not_reuse_a_chunk_before_its_event_completes) {
  fake f;
  ct__pool *p = fake_pool(&f);
  held a = get(p, 1 * MiB, S1);
  held keep = get(p, 1 * MiB, S1); /* the segment is full */
  ct__pool_release(p, a.c);
  held b = get(p, 1 * MiB, S2);
  ck_assert_uint_ne(b.ptr, a.ptr);
  ck_assert_int_eq(f.allocs, 2);
  ck_assert_int_eq(f.nevents, 1); /* recorded on S1, after the free */
  ck_assert_ptr_eq(f.events[0].stream, S1.handle);
  ck_assert_uint_eq(stats(p).events, 1);
  (void)keep;
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(other_stream_reuses_a_chunk_once_the_event_completes) {
  fake f;
  ct__pool *p = fake_pool(&f);
  held a = get(p, 1 * MiB, S1);
  held keep = get(p, 1 * MiB, S1);
  ct__pool_release(p, a.c);
  held b1 = get(p, 1 * MiB, S2); /* miss: event recorded on S1, new segment ... */
  held b2 = get(p, 1 * MiB, S2); /* ... whose rest S2 takes next */
  complete_events(&f);
  held c = get(p, 1 * MiB, S2);
  ck_assert_uint_eq(c.ptr, a.ptr);
  ck_assert_int_eq(f.allocs, 2);
  ck_assert_int_eq(f.nevents, 1);
  ck_assert_int_eq(pending_events(&f), 0);
  (void)b1;
  (void)b2;
  (void)keep;
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(an_event_covers_only_the_frees_before_it) {
  fake f;
  ct__pool *p = fake_pool(&f);
  held x = get(p, 1 * MiB, S1), y = get(p, 1 * MiB, S1); /* segment 0, full */
  ct__pool_release(p, x.c);
  get(p, 1 * MiB, S2); /* miss: event 1 after x's free; segment 1 ... */
  get(p, 1 * MiB, S2); /* ... filled */
  ct__pool_release(p, y.c); /* after event 1; merges with x: the chunk's last free is y's */
  complete_events(&f);
  held z = get(p, 1 * MiB, S2);
  ck_assert_uint_eq(z.ptr, f.seg_addr[2]); /* not covered: a new segment, and event 2 */
  ck_assert_int_eq(f.nevents, 2);
  get(p, 1 * MiB, S2); /* segment 2 filled */
  complete_events(&f);
  held w = get(p, 1 * MiB, S2);
  ck_assert_uint_eq(w.ptr, x.ptr); /* event 2 covers y's free */
  ck_assert_int_eq(f.allocs, 3);
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(idle_stream_hands_its_chunks_over_at_once) {
  fake f;
  ct__pool *p = fake_pool(&f);
  f.events_done_at_once = true; /* S1 has nothing queued: its event completes immediately */
  held a = get(p, 1 * MiB, S1);
  held keep = get(p, 1 * MiB, S1);
  ct__pool_release(p, a.c);
  held b = get(p, 1 * MiB, S2);
  ck_assert_uint_eq(b.ptr, a.ptr);
  ck_assert_int_eq(f.allocs, 1);
  (void)keep;
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(own_stream_chunk_is_preferred_to_an_equal_clean_one) {
  fake f;
  ct__pool *p = fake_pool(&f);
  f.events_done_at_once = true;
  held a = get(p, 4 * KiB, S1), sep = get(p, 512, S1);
  held b = get(p, 4 * KiB, S2); /* same segment, owned by S2 */
  held sep2 = get(p, 512, S2);
  ct__pool_release(p, a.c);
  ct__pool_release(p, b.c);
  /* Make a clean: an S2 miss hands S1's chunks over. */
  held big = get(p, 1 * MiB + 1, S2);
  (void)big;
  ck_assert_uint_eq(get(p, 4 * KiB, S2).ptr, b.ptr); /* own, not the clean a */
  ck_assert_uint_eq(get(p, 4 * KiB, S2).ptr, a.ptr); /* then the clean one */
  (void)sep;
  (void)sep2;
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(retired_stream_chunks_serve_every_stream) {
  fake f;
  ct__pool *p = fake_pool(&f);
  held a = get(p, 1 * MiB, S1), keep = get(p, 1 * MiB, S1);
  ct__pool_release(p, a.c);
  ct__pool_stream_retire(p, S1.id);
  held b = get(p, 1 * MiB, S2);
  ck_assert_uint_eq(b.ptr, a.ptr);
  ck_assert_int_eq(f.nevents, 0);
  ck_assert_int_eq(f.allocs, 1);
  (void)keep;
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(chunk_released_after_its_stream_retired_is_clean) {
  fake f;
  ct__pool *p = fake_pool(&f);
  held a = get(p, 1 * MiB, S1), keep = get(p, 1 * MiB, S1);
  ct__pool_stream_retire(p, S1.id); /* a still in use */
  ct__pool_release(p, a.c);
  held b = get(p, 1 * MiB, S2);
  ck_assert_uint_eq(b.ptr, a.ptr);
  ck_assert_int_eq(f.nevents, 0);
  ct__pool_release(p, keep.c);
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(stream_id_0_is_refused) {
  fake f;
  ct__pool *p = fake_pool(&f);
  ct__pool_chunk *c = NULL;
  void *ptr = NULL;
  ct__pool_stream zero = {0, NULL};
  ck_assert_int_eq(ct__pool_alloc(p, 512, zero, &c, &ptr), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(f.alloc_calls, 0);
  fake_pool_done(p, &f);
}
END_TEST

/* ---- Backing failures --------------------------------------------------------------------- */

START_TEST(backing_failure_frees_the_cache_and_retries_once) {
  fake f;
  ct__pool *p = fake_pool(&f);
  f.limit = 21 * MiB;
  held a = get(p, 4 * KiB, S1); /* 2 MiB segment */
  ct__pool_release(p, a.c);     /* cached */
  held b = get(p, 3 * MiB, S1); /* needs 20 MiB: 22 > 21, fails; cache freed; retry fits */
  ct__pool_stats s = stats(p);
  ck_assert_int_eq(f.alloc_calls, 3);
  ck_assert_int_eq(f.syncs, 1);
  ck_assert_int_eq(f.frees, 1);
  ck_assert_uint_eq(s.retries, 1);
  ck_assert_uint_eq(s.backing_failures, 1);
  ck_assert_uint_eq(s.reserved, 20 * MiB);
  ck_assert_uint_eq(s.segments, 1);
  ck_assert_uint_eq(b.ptr, f.seg_addr[1]);
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(second_backing_failure_is_out_of_memory) {
  fake f;
  ct__pool *p = fake_pool(&f);
  f.limit = 16 * MiB;
  held a = get(p, 4 * KiB, S1); /* in use: survives the retry */
  ct__pool_chunk *c = NULL;
  void *ptr = NULL;
  ck_assert_int_eq(ct__pool_alloc(p, 20 * MiB, S1, &c, &ptr), CT_ERR_OUT_OF_MEMORY);
  ck_assert_ptr_null(c);
  ct__pool_stats s = stats(p);
  ck_assert_int_eq(f.alloc_calls, 3);
  ck_assert_uint_eq(s.backing_failures, 2);
  ck_assert_uint_eq(s.retries, 1);
  ck_assert_uint_eq(s.reserved, 2 * MiB);
  ck_assert_uint_eq(s.in_use, 4 * KiB);
  /* The pool still works. */
  ck_assert_uint_eq(get(p, 4 * KiB, S1).ptr, a.ptr + 4 * KiB);
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(retry_after_failure_cleans_other_streams_chunks) {
  fake f;
  ct__pool *p = fake_pool(&f);
  f.limit = 21 * MiB;
  held a = get(p, 1 * MiB, S1), b = get(p, 1 * MiB, S1);
  ct__pool_release(p, a.c);
  ct__pool_release(p, b.c); /* segment 0 whole and free, but S1's, its event pending */
  held big = get(p, 3 * MiB, S2); /* 20 MiB more than fits: synchronize, clean, free, retry */
  ct__pool_stats s = stats(p);
  ck_assert_uint_eq(big.ptr, f.seg_addr[1]);
  ck_assert_int_eq(f.syncs, 1);
  ck_assert_int_eq(f.frees, 1);
  ck_assert_uint_eq(s.retries, 1);
  ck_assert_uint_eq(s.reserved, 20 * MiB);
  ck_assert_int_eq(pending_events(&f), 0);
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(retry_reuses_a_cleaned_chunk_it_cannot_release) {
  fake f;
  ct__pool *p = fake_pool(&f);
  f.limit = 20 * MiB;
  held a = get(p, 8 * MiB, S1), b = get(p, 8 * MiB, S1); /* one 20 MiB segment */
  ct__pool_release(p, a.c); /* free on S1, its event pending; b keeps the segment */
  /* On S2 the chunk is gated and no new segment fits; after the synchronising retry the chunk
   * is clean, and it fits. */
  held c = get(p, 8 * MiB, S2);
  ck_assert_uint_eq(c.ptr, a.ptr);
  ct__pool_stats s = stats(p);
  ck_assert_uint_eq(s.retries, 1);
  ck_assert_uint_eq(s.reserved, 20 * MiB);
  ck_assert_int_eq(f.syncs, 1);
  ct__pool_release(p, b.c);
  ct__pool_release(p, c.c);
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(device_failure_is_returned_without_retry) {
  fake f;
  ct__pool *p = fake_pool(&f);
  f.fail_next = 1;
  f.fail_with = CT_ERR_DEVICE;
  ct__pool_chunk *c = NULL;
  void *ptr = NULL;
  ck_assert_int_eq(ct__pool_alloc(p, 512, S1, &c, &ptr), CT_ERR_DEVICE);
  ct__pool_stats s = stats(p);
  ck_assert_int_eq(f.alloc_calls, 1);
  ck_assert_uint_eq(s.retries, 0);
  ck_assert_uint_eq(s.backing_failures, 1);
  ck_assert_uint_eq(s.reserved, 0);
  get(p, 512, S1); /* the next call goes through */
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(request_too_large_to_round_is_out_of_memory) {
  fake f;
  ct__pool *p = fake_pool(&f);
  ct__pool_chunk *c = NULL;
  void *ptr = NULL;
  ck_assert_int_eq(ct__pool_alloc(p, SIZE_MAX, S1, &c, &ptr), CT_ERR_OUT_OF_MEMORY);
  ck_assert_int_eq(ct__pool_alloc(p, SIZE_MAX - 4096, S1, &c, &ptr), CT_ERR_OUT_OF_MEMORY);
  ck_assert_int_eq(f.alloc_calls, 0);
  fake_pool_done(p, &f);
}
END_TEST

/* ---- empty_cache -------------------------------------------------------------------------- */

START_TEST(empty_cache_returns_free_segments_only) {
  fake f;
  ct__pool *p = fake_pool(&f);
  held a = get(p, 4 * KiB, S1);        /* segment 0 (small), stays in use */
  held b = get(p, 3 * MiB, S1);        /* segment 1 (20 MiB) */
  ct__pool_release(p, b.c);
  ck_assert_uint_eq(stats(p).reserved, 22 * MiB);
  ck_assert_int_eq(ct__pool_empty_cache(p), CT_OK);
  ct__pool_stats s = stats(p);
  ck_assert_int_eq(f.syncs, 1);
  ck_assert_int_eq(f.frees, 1);
  ck_assert_uint_eq(s.reserved, 2 * MiB);
  ck_assert_uint_eq(s.segments, 1);
  ck_assert_uint_eq(s.in_use, 4 * KiB);
  ck_assert_uint_eq(s.cached, 2 * MiB - 4 * KiB);
  ck_assert_uint_eq(s.backing_frees, 1);
  (void)a;
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(empty_cache_releases_chunks_of_every_stream) {
  fake f;
  ct__pool *p = fake_pool(&f);
  f.events_done_at_once = true;
  held a = get(p, 1 * MiB, S1), b = get(p, 1 * MiB, S2); /* one segment, two streams */
  ck_assert_int_eq(f.allocs, 1);
  ct__pool_release(p, a.c);
  ct__pool_release(p, b.c);
  ck_assert_uint_eq(stats(p).free_chunks, 2); /* different streams: not merged */
  ck_assert_int_eq(ct__pool_empty_cache(p), CT_OK);
  ct__pool_stats s = stats(p);
  ck_assert_uint_eq(s.reserved, 0);
  ck_assert_uint_eq(s.segments, 0);
  ck_assert_uint_eq(s.free_chunks, 0);
  ck_assert_int_eq(f.frees, 1);
  fake_pool_done(p, &f);
}
END_TEST

START_TEST(empty_cache_on_an_empty_pool_does_nothing) {
  fake f;
  ct__pool *p = fake_pool(&f);
  ck_assert_int_eq(ct__pool_empty_cache(p), CT_OK);
  ck_assert_int_eq(f.frees, 0);
  ck_assert_uint_eq(stats(p).reserved, 0);
  fake_pool_done(p, &f);
}
END_TEST

static Suite *cuda_pool_suite(void) {
  Suite *s = suite_create("cuda_pool_streams");
  CT_ADD_TEST(s, freed_chunk_is_reused_on_its_stream_without_the_backing);
  CT_ADD_TEST(s, other_stream_does_not_reuse_a_chunk_before_its_event_completes);
  CT_ADD_TEST(s, other_stream_reuses_a_chunk_once_the_event_completes);
  CT_ADD_TEST(s, an_event_covers_only_the_frees_before_it);
  CT_ADD_TEST(s, idle_stream_hands_its_chunks_over_at_once);
  CT_ADD_TEST(s, own_stream_chunk_is_preferred_to_an_equal_clean_one);
  CT_ADD_TEST(s, retired_stream_chunks_serve_every_stream);
  CT_ADD_TEST(s, chunk_released_after_its_stream_retired_is_clean);
  CT_ADD_TEST(s, stream_id_0_is_refused);
  CT_ADD_TEST(s, backing_failure_frees_the_cache_and_retries_once);
  CT_ADD_TEST(s, second_backing_failure_is_out_of_memory);
  CT_ADD_TEST(s, retry_after_failure_cleans_other_streams_chunks);
  CT_ADD_TEST(s, retry_reuses_a_cleaned_chunk_it_cannot_release);
  CT_ADD_TEST(s, device_failure_is_returned_without_retry);
  CT_ADD_TEST(s, request_too_large_to_round_is_out_of_memory);
  CT_ADD_TEST(s, empty_cache_returns_free_segments_only);
  CT_ADD_TEST(s, empty_cache_releases_chunks_of_every_stream);
  CT_ADD_TEST(s, empty_cache_on_an_empty_pool_does_nothing);
  return s;
}

CT_TEST_MAIN(cuda_pool_suite)
