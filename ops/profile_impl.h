/* SPDX-License-Identifier: Apache-2.0 */
/* ops/profile_impl.h: the profiler's object (ops/profile.c records, ops/profile_out.c writes) and
 * the hooks the executor and ct_op_run call around each op and run. */
#ifndef CORTEN_OPS_PROFILE_IMPL_H
#define CORTEN_OPS_PROFILE_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <pthread.h>

#include <corten/memory.h>
#include <corten/profile.h>

#include "cuda/cuda_timer.h"
#include "ops/op_impl.h"

typedef struct ct__prof_rec {
  ct_profile_event e; /* type and label: offsets into the profile's strings; the times below */
  int64_t start, end; /* clock ticks from the profile's tick0 (ct__prof_span gives ns) */
  ct_place place;
  int64_t allocated; /* the place's allocated bytes at the event's end (the counter track) */
  ct__cuda_mark *dev; /* at a CUDA place (one reference), else NULL */
  int64_t dev_start, dev_dur; /* ns, set when the profile stops: -1 where unknown */
} ct__prof_rec;

/* An op's type and label, put in the profile's strings once per op state (the op and its edit
 * generation: an edit of a nested program gives the ops holding it one generation, so the op
 * is part of the key), so a recorded op formats nothing. */
typedef struct ct__prof_label {
  const void *op;
  uint64_t gen; /* 0: an empty slot */
  size_t type, label; /* offsets into strings */
} ct__prof_label;

struct ct_profile {
  pthread_mutex_t lock; /* pthreads, not C11's mtx_t: ThreadSanitizer sees these */
  ct__prof_label *labels; /* open addressing by gen, at most half full */
  size_t labels_n, labels_cap;
  ct__prof_rec *v;
  size_t n, cap;
  char *strings; /* types and labels, NUL-terminated, one after another */
  size_t s_n, s_cap;
  int64_t t0, tick0;  /* the monotonic clock (ns) and the tick counter when it started */
  int64_t t1;         /* the same when it stopped: t1 written before tick1 is published */
  _Atomic int64_t tick1; /* 0 while it records (readers load it first, acquire) */
  ct_profile_where where;
  bool recording;
  pthread_t owner; /* CT_PROFILE_THREAD: the thread it records */
};

/* Where an event started: the clock and its place's counts. */
typedef struct ct__prof_mark {
  int64_t t;
  ct_place place;
  size_t allocated; /* the place's allocated bytes and allocation count (ct__memory_counts) */
  uint64_t allocs;
  int thread; /* the calling thread's number (read once here: thread-locals cost a call) */
  ct__cuda_mark *dev; /* its device events at a CUDA place, else NULL */
} ct__prof_mark;

/* Nanoseconds per tick over p (1 when ticks are nanoseconds): measured between its start and
 * its stop (or now, while it records). */
double ct__prof_rate(const ct_profile *p);

/* Record r's start (from p's start) and duration in ns at rate: each end point converted on
 * its own (a monotone map, so slices nested in ticks stay nested). */
static inline void ct__prof_span(const ct__prof_rec *r, double rate, int64_t *start_ns,
                                 int64_t *dur_ns) {
  int64_t a = (int64_t)((double)r->start * rate), b = (int64_t)((double)r->end * rate);
  *start_ns = a;
  *dur_ns = b - a;
}

/* Devices whose CUDA events a profile places and draws (ordinals below it). */
#define CT__PROF_DEVICES 64

/* Profiles recording, anywhere: the hooks' one test when none does. */
extern _Atomic int ct__prof_active;

static inline bool ct__prof_on(void) {
  return atomic_load_explicit(&ct__prof_active, memory_order_relaxed) != 0;
}
/* Whether a profile records the calling thread (its own, or the process's). */
bool ct__prof_records(void);
void ct__prof_mark_now(ct__prof_mark *m, ct_place place);
/* Appends the event begun at m to the profiles recording the calling thread. */
void ct__prof_end(const ct__prof_mark *m, const char *type, const char *label, ct_status st);
/* The event of prep p's op: its type, its outputs' names as the label. */
void ct__prof_op_end(const ct__prof_mark *m, const ct__prep *p, ct_status st);

#endif /* CORTEN_OPS_PROFILE_IMPL_H */
