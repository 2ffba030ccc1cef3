/* Tests of the CUDA caching pool's logic (core/cuda/cuda_pool.c) on the CPU: a fake backing
 * allocator hands out addresses (never dereferenced) and fake events whose completion the test
 * controls, so every rule runs without a GPU: rounding, small and large pools and their segment
 * sizes, best fit, splitting, merging, per-stream reuse, event-gated reuse across streams, the
 * free-and-retry path on a backing failure, empty_cache, and exact stats. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "cuda/cuda_pool.h"
#include "harness.h"

#define KiB ((size_t)1024)
#define MiB ((size_t)1024 * 1024)

/* ---- The fake backing --------------------------------------------------------------------- */

#define FAKE_SEGMENTS 4096
#define FAKE_EVENTS 4096

typedef struct fake_event {
  void *stream;
  bool done, freed;
} fake_event;

typedef struct fake {
  uintptr_t next_addr;  /* where the next segment goes */
  size_t limit;         /* bytes the fake "device" has; 0: unlimited */
  size_t live;          /* bytes held by the pool */
  int fail_next;        /* fail this many alloc calls ... */
  ct_status fail_with;  /* ... with this status */
  int allocs, alloc_calls, frees, bad_frees, syncs;
  bool events_done_at_once; /* events complete as soon as they are recorded */
  int nsegs;
  uintptr_t seg_addr[FAKE_SEGMENTS];
  size_t seg_size[FAKE_SEGMENTS];
  int nevents;
  fake_event events[FAKE_EVENTS];
} fake;

static ct_status fake_alloc(void *ctx, size_t size, void **ptr) {
  fake *f = ctx;
  f->alloc_calls++;
  if (f->fail_next > 0) {
    f->fail_next--;
    return f->fail_with;
  }
  if (f->limit != 0 && f->live + size > f->limit) return CT_ERR_OUT_OF_MEMORY;
  ck_assert_int_lt(f->nsegs, FAKE_SEGMENTS);
  ck_assert_uint_eq(size % 512, 0);
  f->seg_addr[f->nsegs] = f->next_addr;
  f->seg_size[f->nsegs] = size;
  f->nsegs++;
  *ptr = (void *)f->next_addr;
  f->next_addr += size + 64 * MiB; /* segments never touch */
  f->live += size;
  f->allocs++;
  return CT_OK;
}

static ct_status fake_free(void *ctx, void *ptr, size_t size) {
  fake *f = ctx;
  f->frees++;
  for (int i = 0; i < f->nsegs; i++) {
    if (f->seg_addr[i] == (uintptr_t)ptr && f->seg_size[i] != 0) {
      if (f->seg_size[i] != size) f->bad_frees++;
      f->seg_size[i] = 0;
      f->live -= size;
      return CT_OK;
    }
  }
  f->bad_frees++;
  return CT_OK;
}

static ct_status fake_event_record(void *ctx, void *stream, void **event) {
  fake *f = ctx;
  ck_assert_int_lt(f->nevents, FAKE_EVENTS);
  fake_event *e = &f->events[f->nevents++];
  e->stream = stream;
  e->done = f->events_done_at_once;
  e->freed = false;
  *event = e;
  return CT_OK;
}

static int fake_event_query(void *ctx, void *event) {
  (void)ctx;
  fake_event *e = event;
  ck_assert(!e->freed);
  return e->done ? 1 : 0;
}

static void fake_event_free(void *ctx, void *event) {
  (void)ctx;
  fake_event *e = event;
  ck_assert(!e->freed);
  e->freed = true;
}

static ct_status fake_synchronize(void *ctx) {
  fake *f = ctx;
  f->syncs++;
  for (int i = 0; i < f->nevents; i++) f->events[i].done = true;
  return CT_OK;
}

/* Marks every event recorded so far as completed. */
static void complete_events(fake *f) {
  for (int i = 0; i < f->nevents; i++) f->events[i].done = true;
}

static int pending_events(const fake *f) {
  int n = 0;
  for (int i = 0; i < f->nevents; i++) n += !f->events[i].freed;
  return n;
}

static ct__pool *fake_pool(fake *f) {
  ct__pool_backing b = {fake_alloc, fake_free, fake_event_record, fake_event_query,
                        fake_event_free, fake_synchronize, f};
  memset(f, 0, sizeof *f);
  f->next_addr = (uintptr_t)1 << 32;
  ct__pool *p = ct__pool_new(&b);
  ck_assert_ptr_nonnull(p);
  return p;
}

/* Frees the pool and checks that every segment went back exactly once, with its size. */
static void fake_pool_done(ct__pool *p, fake *f) {
  ct__pool_free(p);
  ck_assert_uint_eq(f->live, 0);
  ck_assert_int_eq(f->bad_frees, 0);
  ck_assert_int_eq(f->frees, f->allocs);
  ck_assert_int_eq(pending_events(f), 0);
}

static const ct__pool_stream S1 = {1, (void *)0x51};
static const ct__pool_stream S2 = {2, (void *)0x52};

typedef struct held {
  ct__pool_chunk *c;
  uintptr_t ptr;
} held;

static held get(ct__pool *p, size_t size, ct__pool_stream s) {
  held h;
  void *ptr = NULL;
  ck_assert_int_eq(ct__pool_alloc(p, size, s, &h.c, &ptr), CT_OK);
  ck_assert_ptr_nonnull(h.c);
  h.ptr = (uintptr_t)ptr;
  return h;
}

static ct__pool_stats stats(ct__pool *p) {
  ct__pool_stats s;
  memset(&s, 0xAB, sizeof s);
  ct__pool_get_stats(p, &s);
  return s;
}

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
  CT_ADD_TEST(s, stats_are_exact_through_a_sequence);
  CT_ADD_TEST(s, steady_working_set_of_10000_mixed_cycles_never_grows_reserved);
  CT_ADD_TEST(s, random_churn_keeps_reserved_within_twice_the_peak_in_use);
  CT_ADD_TEST(s, threads_on_their_own_streams_share_one_pool);
  return s;
}

CT_TEST_MAIN(cuda_pool_suite)
