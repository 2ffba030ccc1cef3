/* SPDX-License-Identifier: Apache-2.0 */
/* The helpers of the CUDA caching pool suites (test_cuda_pool*.c): a fake backing allocator that
 * hands out addresses (never dereferenced) and fake events whose completion the test controls,
 * so that the pool's rules run on the CPU without a GPU; a pool over it, and short ways to take
 * a chunk and read the stats. */
#ifndef CORTEN_TESTS_CUDA_POOL_UTIL_H
#define CORTEN_TESTS_CUDA_POOL_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "cuda/cuda_pool.h"
#include "harness.h"

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

static inline ct_status fake_alloc(void *ctx, size_t size, void **ptr) {
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

static inline ct_status fake_free(void *ctx, void *ptr, size_t size) {
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

static inline ct_status fake_event_record(void *ctx, void *stream, void **event) {
  fake *f = ctx;
  ck_assert_int_lt(f->nevents, FAKE_EVENTS);
  fake_event *e = &f->events[f->nevents++];
  e->stream = stream;
  e->done = f->events_done_at_once;
  e->freed = false;
  *event = e;
  return CT_OK;
}

static inline int fake_event_query(void *ctx, void *event) {
  (void)ctx;
  fake_event *e = event;
  ck_assert(!e->freed);
  return e->done ? 1 : 0;
}

static inline void fake_event_free(void *ctx, void *event) {
  (void)ctx;
  fake_event *e = event;
  ck_assert(!e->freed);
  e->freed = true;
}

static inline ct_status fake_synchronize(void *ctx) {
  fake *f = ctx;
  f->syncs++;
  for (int i = 0; i < f->nevents; i++) f->events[i].done = true;
  return CT_OK;
}

/* Marks every event recorded so far as completed. */
static inline void complete_events(fake *f) {
  for (int i = 0; i < f->nevents; i++) f->events[i].done = true;
}

static inline int pending_events(const fake *f) {
  int n = 0;
  for (int i = 0; i < f->nevents; i++) n += !f->events[i].freed;
  return n;
}

static inline ct__pool *fake_pool(fake *f) {
  ct__pool_backing b = {fake_alloc, fake_free, fake_event_record, fake_event_query,
                        fake_event_free, fake_synchronize, f};
  memset(f, 0, sizeof *f);
  f->next_addr = (uintptr_t)1 << 32;
  ct__pool *p = ct__pool_new(&b);
  ck_assert_ptr_nonnull(p);
  return p;
}

/* Frees the pool and checks that every segment went back exactly once, with its size. */
static inline void fake_pool_done(ct__pool *p, fake *f) {
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

static inline held get(ct__pool *p, size_t size, ct__pool_stream s) {
  held h;
  void *ptr = NULL;
  ck_assert_int_eq(ct__pool_alloc(p, size, s, &h.c, &ptr), CT_OK);
  ck_assert_ptr_nonnull(h.c);
  h.ptr = (uintptr_t)ptr;
  return h;
}

static inline ct__pool_stats stats(ct__pool *p) {
  ct__pool_stats s;
  memset(&s, 0xAB, sizeof s);
  ct__pool_get_stats(p, &s);
  return s;
}

#endif /* CORTEN_TESTS_CUDA_POOL_UTIL_H */
