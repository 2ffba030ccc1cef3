/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_parallel.c: the pool's items jobs (ct__parallel_items, ops/cpu/parallel.h), through
 * the internal entry point (hence the static library): every item runs once, with a piece number
 * below the count asked for and the thread count (also when threads meet at a range's last
 * items), a piece on one thread at a time, a slow thread's items taken by the others, and the
 * inline cases on the calling thread in order. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "harness.h"
#include "ops/cpu/parallel.h"

enum { MAX_ITEMS = 4096, MAX_PIECES = 16 };

typedef struct record {
  atomic_int runs[MAX_ITEMS];  /* how often each item ran */
  int piece[MAX_ITEMS];        /* the piece it ran as */
  bool on_caller[MAX_ITEMS];   /* whether the calling thread ran it */
  int order[MAX_ITEMS];        /* items in the order they started (the inline cases) */
  atomic_int started;
  atomic_int inside[MAX_PIECES]; /* items of each piece running now */
  atomic_int overlaps;           /* an item began while another of its piece ran */
  pthread_t caller;
  int slow_piece;   /* items run by a thread other than the caller sleep when it is this piece's */
  int64_t slow_from; /* ... and the item is at least this one */
} record;

static void nap_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

static void note_item(void *ctx, int64_t i, int p) {
  record *r = ctx;
  ck_assert(p >= 0 && p < MAX_PIECES);
  if (atomic_fetch_add(&r->inside[p], 1) != 0) atomic_fetch_add(&r->overlaps, 1);
  r->order[atomic_fetch_add(&r->started, 1)] = (int)i;
  atomic_fetch_add(&r->runs[i], 1);
  r->piece[i] = p;
  r->on_caller[i] = pthread_equal(pthread_self(), r->caller);
  if (!r->on_caller[i] && p == r->slow_piece && i >= r->slow_from) nap_us(20000);
  else nap_us(i % 7 == 0 ? 50 : 0); /* some items longer, so that the threads interleave */
  atomic_fetch_sub(&r->inside[p], 1);
}

static record *new_record(void) {
  record *r = calloc(1, sizeof *r);
  ck_assert_ptr_nonnull(r);
  r->caller = pthread_self();
  r->slow_piece = -1;
  return r;
}

/* n items on `pieces` pieces at `threads` threads: each ran once, as a piece below `most`, no
 * two items of a piece at once. */
static record *run_items(int threads, int64_t n, int pieces, int most) {
  ct_set_num_threads(threads);
  record *r = new_record();
  ct__parallel_items(n, pieces, note_item, r);
  for (int64_t i = 0; i < n; i++) {
    ck_assert_msg(atomic_load(&r->runs[i]) == 1, "item %lld ran %d times", (long long)i,
                  atomic_load(&r->runs[i]));
    ck_assert_msg(r->piece[i] < most, "item %lld ran as piece %d", (long long)i, r->piece[i]);
  }
  ck_assert_int_eq(atomic_load(&r->overlaps), 0);
  ck_assert_int_eq(atomic_load(&r->started), (int)n);
  return r;
}

START_TEST(every_item_runs_once_as_one_of_the_pieces) {
  free(run_items(3, 1000, 3, 3));
  free(run_items(2, 2, 2, 2));
  free(run_items(7, 5, 7, 5)); /* more pieces than items: one item each */
  ct_set_num_threads(0);
}
END_TEST

START_TEST(no_more_pieces_than_threads) {
  free(run_items(2, 300, 8, 2)); /* a kernel's buffers for 8, the pool runs 2 */
  ct_set_num_threads(0);
}
END_TEST

/* The other thread's items of piece 1 take 20 ms each from the second on: the caller, done with
 * piece 0's, takes piece 1's last ones (whichever thread runs piece 1, or none). */
START_TEST(a_slow_threads_items_go_to_the_others) {
  ct_set_num_threads(2);
  record *r = new_record();
  r->slow_piece = 1;
  r->slow_from = 9;
  ct__parallel_items(16, 2, note_item, r);
  for (int64_t i = 0; i < 16; i++) ck_assert_int_eq(atomic_load(&r->runs[i]), 1);
  for (int64_t i = 0; i < 8; i++) ck_assert(r->on_caller[i] && r->piece[i] == 0);
  /* the last of piece 1's items, never the first it starts with, ran on the caller as piece 0 */
  ck_assert(r->on_caller[15] && r->piece[15] == 0);
  free(r);
  ct_set_num_threads(0);
}
END_TEST

static void count_item(void *ctx, int64_t i, int p) {
  (void)p;
  atomic_fetch_add(&((atomic_int *)ctx)[i], 1);
}

/* Many short jobs of items that cost nothing, so that the owner and a thief often reach the
 * last items of a range at once: each item still runs once. */
START_TEST(items_run_once_when_threads_meet_at_a_range) {
  for (int threads = 2; threads <= 3; threads++) {
    ct_set_num_threads(threads);
    for (int job = 0; job < 3000; job++) {
      enum { N = 24 };
      atomic_int runs[N];
      for (int i = 0; i < N; i++) atomic_init(&runs[i], 0);
      ct__parallel_items(N, threads, count_item, runs);
      for (int i = 0; i < N; i++) {
        ck_assert_msg(atomic_load(&runs[i]) == 1, "job %d: item %d ran %d times", job, i,
                      atomic_load(&runs[i]));
      }
    }
  }
  ct_set_num_threads(0);
}
END_TEST

static void nested_item(void *ctx, int64_t i, int p) {
  (void)p;
  record *inner = (record *)ctx + i;
  inner->caller = pthread_self();
  ct__parallel_items(10, 4, note_item, inner);
}

/* Inline: one thread, one piece, or a call from inside an item: every item on the calling
 * thread as piece 0, in order. */
START_TEST(inline_items_run_in_order_on_the_caller) {
  record *r = run_items(1, 50, 4, 1);
  for (int i = 0; i < 50; i++) ck_assert(r->order[i] == i && r->on_caller[i]);
  free(r);
  r = run_items(4, 50, 1, 1);
  for (int i = 0; i < 50; i++) ck_assert(r->order[i] == i && r->on_caller[i]);
  free(r);
  ct_set_num_threads(3);
  record *inner = calloc(6, sizeof *inner);
  ck_assert_ptr_nonnull(inner);
  ct__parallel_items(6, 3, nested_item, inner);
  for (int k = 0; k < 6; k++) {
    for (int i = 0; i < 10; i++) {
      ck_assert(inner[k].order[i] == i && inner[k].on_caller[i] && inner[k].piece[i] == 0);
    }
  }
  free(inner);
  ct_set_num_threads(0);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("parallel");
  CT_ADD_TEST(s, every_item_runs_once_as_one_of_the_pieces);
  CT_ADD_TEST(s, no_more_pieces_than_threads);
  CT_ADD_TEST(s, a_slow_threads_items_go_to_the_others);
  CT_ADD_TEST(s, items_run_once_when_threads_meet_at_a_range);
  CT_ADD_TEST(s, inline_items_run_in_order_on_the_caller);
  return s;
}

CT_TEST_MAIN(make_suite)
