/* SPDX-License-Identifier: Apache-2.0 */
/* ops/profile.c: the profiler (corten/profile.h, docs/design/profile.md). A profile is a
 * growing array of events under a mutex; the executor and ct_op_run ask ct__prof_begin whether
 * any profile records (one relaxed load of a count when none does) and, when one does, time the
 * op and append it to every profile that records the calling thread: its own and the
 * process's. */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "common/alloc.h"
#include "interop/params_format.h"
#include "ops/profile_impl.h"

_Atomic int ct__prof_active;                  /* profiles recording, anywhere */
static _Atomic(ct_profile *) process_profile; /* the CT_PROFILE_PROCESS one */
static _Thread_local ct_profile *thread_profile;
static _Thread_local int thread_number;        /* this thread's number (one across profiles) */
static _Atomic int thread_count;
static _Atomic int in_flight; /* threads between loading process_profile and appending to it */

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The events' clock. Reading CLOCK_MONOTONIC costs about 23 ns here, two reads an op, which
 * was most of what recording cost; where the kernel keeps time with the TSC (so it is
 * invariant and the same on every core) the events read the TSC (a few ns) and each profile
 * converts ticks to ns by the rate between its start and its stop. Decided once per process. */
enum { TICKS_UNDECIDED, TICKS_TSC, TICKS_NS };
static _Atomic int tick_mode;

static int decide_ticks(void) {
  int mode = atomic_load(&tick_mode);
  if (mode != TICKS_UNDECIDED) return mode;
  mode = TICKS_NS;
#if defined(__x86_64__)
  FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  char src[32] = "";
  if (f != NULL) {
    if (fgets(src, sizeof src, f) == NULL) src[0] = '\0';
    fclose(f);
  }
  if (strcmp(src, "tsc\n") == 0) mode = TICKS_TSC;
#endif
  int none = TICKS_UNDECIDED;
  atomic_compare_exchange_strong(&tick_mode, &none, mode);
  return atomic_load(&tick_mode);
}

static inline int64_t now_ticks(void) {
#if defined(__x86_64__)
  if (atomic_load_explicit(&tick_mode, memory_order_relaxed) == TICKS_TSC) {
    return (int64_t)__rdtsc();
  }
#endif
  return now_ns();
}

double ct__prof_rate(const ct_profile *p) {
  if (atomic_load_explicit(&tick_mode, memory_order_relaxed) != TICKS_TSC) return 1.0;
  int64_t tick1 = atomic_load_explicit(&p->tick1, memory_order_acquire), t1;
  if (tick1 == 0) { /* still recording: the rate so far (readers should wait for the stop) */
    tick1 = now_ticks();
    t1 = now_ns();
  } else {
    t1 = p->t1;
  }
  return tick1 > p->tick0 && t1 > p->t0 ? (double)(t1 - p->t0) / (double)(tick1 - p->tick0) : 1.0;
}

ct_profile *ct_profile_start(ct_profile_where where) {
  if (where != CT_PROFILE_THREAD && where != CT_PROFILE_PROCESS) {
    return ct__error_null(CT_ERR_INVALID_ARGUMENT,
                          "ct_profile_start: where is %d: give CT_PROFILE_THREAD or "
                          "CT_PROFILE_PROCESS", (int)where);
  }
  if (where == CT_PROFILE_THREAD ? thread_profile != NULL : atomic_load(&process_profile) != NULL) {
    return ct__error_null(CT_ERR_ALREADY_EXISTS,
                          "ct_profile_start: a %s profile already records: stop it first",
                          where == CT_PROFILE_THREAD ? "thread's" : "process-wide");
  }
  ct_profile *p = ct__calloc(1, sizeof *p);
  if (p == NULL || pthread_mutex_init(&p->lock, NULL) != 0) {
    free(p);
    return ct__error_null(CT_ERR_OUT_OF_MEMORY, "ct_profile_start: out of host memory");
  }
  p->where = where;
  p->owner = pthread_self();
  decide_ticks();
  p->tick0 = now_ticks();
  p->t0 = now_ns();
  p->recording = true;
  if (where == CT_PROFILE_THREAD) {
    thread_profile = p;
  } else {
    ct_profile *none = NULL;
    if (!atomic_compare_exchange_strong(&process_profile, &none, p)) {
      pthread_mutex_destroy(&p->lock);
      free(p);
      return ct__error_null(CT_ERR_ALREADY_EXISTS,
                            "ct_profile_start: a process-wide profile already records: stop it "
                            "first");
    }
  }
  atomic_fetch_add(&ct__prof_active, 1);
  return p;
}

/* The device times of p's CUDA events (p stopped, lock held): each device's events placed by
 * the one that started first on the host (its start event taken to run when it was recorded). */
static void device_times(ct_profile *p) {
  const ct__prof_rec *first[CT__PROF_DEVICES] = {NULL};
  for (size_t i = 0; i < p->n; i++) {
    const ct__prof_rec *r = &p->v[i];
    int d = r->dev != NULL ? r->place.device : -1; /* a mark is on its op's place */
    if (d >= 0 && d < CT__PROF_DEVICES && (first[d] == NULL || r->start < first[d]->start)) {
      first[d] = r;
    }
  }
  double rate = ct__prof_rate(p);
  for (size_t i = 0; i < p->n; i++) {
    ct__prof_rec *r = &p->v[i];
    int d = r->dev != NULL ? r->place.device : -1;
    int64_t dur, from;
    if (d < 0 || d >= CT__PROF_DEVICES ||
        !ct__cuda_mark_time(r->dev, first[d]->dev, &dur, &from)) {
      continue;
    }
    r->dev_dur = dur;
    /* unplaced (the reference unreadable): at the op's host start */
    r->dev_start = (int64_t)((double)(from == INT64_MIN ? r->start : first[d]->start) * rate) +
                   (from == INT64_MIN ? 0 : from);
  }
}

ct_status ct_profile_stop(ct_profile *p) {
  if (p == NULL) return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_profile_stop: the profile is NULL");
  if (p->where == CT_PROFILE_THREAD && p->recording && !pthread_equal(p->owner, pthread_self())) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_profile_stop: a thread's profile is stopped by the thread it records "
                     "(this is another): stop it there, or record with CT_PROFILE_PROCESS");
  }
  pthread_mutex_lock(&p->lock);
  bool was = p->recording;
  p->recording = false;
  if (was) {
    p->t1 = now_ns();
    int64_t tick1 = now_ticks();
    /* 0 means recording */
    atomic_store_explicit(&p->tick1, tick1 != 0 ? tick1 : 1, memory_order_release);
  }
  pthread_mutex_unlock(&p->lock);
  if (!was) return CT_OK;
  if (p->where == CT_PROFILE_PROCESS) {
    ct_profile *me = p;
    atomic_compare_exchange_strong(&process_profile, &me, NULL);
    /* A thread that loaded it before may still append (to a stopped profile: nothing). */
    while (atomic_load(&in_flight) != 0) sched_yield();
  } else if (thread_profile == p) {
    thread_profile = NULL;
  }
  atomic_fetch_sub(&ct__prof_active, 1);
  pthread_mutex_lock(&p->lock);
  device_times(p);
  pthread_mutex_unlock(&p->lock);
  return CT_OK;
}

void ct_profile_free(ct_profile *p) {
  if (p == NULL) return;
  /* A thread's profile still recording on another thread cannot be unhooked from here: it is
   * left (a leak, recorded as an error) rather than freed under that thread. */
  if (ct_profile_stop(p) != CT_OK) return;
  pthread_mutex_destroy(&p->lock);
  for (size_t i = 0; i < p->n; i++) ct__cuda_mark_unref(p->v[i].dev);
  free(p->v);
  free(p->strings);
  free(p->labels);
  free(p);
}

size_t ct_profile_count(const ct_profile *p) { return p != NULL ? p->n : 0; }

ct_status ct_profile_event_get(const ct_profile *p, size_t i, ct_profile_event *out) {
  if (p == NULL || out == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_profile_event_get: the profile or out is NULL");
  }
  if (i >= p->n) {
    return ct__error(CT_ERR_OUT_OF_RANGE, "ct_profile_event_get: event %zu of %zu", i, p->n);
  }
  *out = p->v[i].e;
  ct__prof_span(&p->v[i], ct__prof_rate(p), &out->start_ns, &out->dur_ns);
  out->type = p->strings + (uintptr_t)p->v[i].e.type;
  out->label = p->strings + (uintptr_t)p->v[i].e.label;
  out->device_start_ns = p->v[i].dev_start;
  out->device_dur_ns = p->v[i].dev_dur;
  return CT_OK;
}

/* ---- Recording ------------------------------------------------------------------------------ */

/* s appended to p's strings (lock held): its offset, or SIZE_MAX when out of memory. */
static size_t put_string(ct_profile *p, const char *s) {
  size_t n = strlen(s) + 1;
  if (p->s_n + n > p->s_cap) {
    size_t cap = p->s_cap ? 2 * p->s_cap : 4096;
    while (cap < p->s_n + n) cap *= 2;
    char *grown = ct__realloc(p->strings, cap);
    if (grown == NULL) return SIZE_MAX;
    p->strings = grown;
    p->s_cap = cap;
  }
  memcpy(p->strings + p->s_n, s, n);
  p->s_n += n;
  return p->s_n - n;
}

/* The label of prep's op: its outputs' names, "a, b". */
static void op_label(const ct__prep *pr, char *label, size_t cap) {
  size_t pos = 0;
  label[0] = '\0';
  for (uint32_t k = 0; k < pr->n_out_vars && pos + 1 < cap; k++) {
    const char *name = ct_var_name(pr->vars[pr->n_in_vars + k]);
    int w = snprintf(label + pos, cap - pos, "%s%s", k ? ", " : "", name ? name : "?");
    if (w > 0) pos += (size_t)w < cap - pos ? (size_t)w : cap - pos - 1;
  }
}

static size_t label_slot(const ct__prof_label *v, size_t cap, const void *op, uint64_t gen) {
  size_t i = (size_t)((gen ^ (uint64_t)(uintptr_t)op) * 0x9e3779b97f4a7c15u) & (cap - 1);
  while (v[i].gen != 0 && (v[i].gen != gen || v[i].op != op)) i = (i + 1) & (cap - 1);
  return i;
}

/* The offsets of prep's type and label in p's strings (lock held): found by its op's
 * generation, or put there the first time. false when out of memory. */
static bool op_strings(ct_profile *p, const ct__prep *pr, size_t *ts, size_t *ls) {
  uint64_t gen = pr->op->gen;
  const void *op = pr->op;
  if (p->labels_cap != 0) {
    const ct__prof_label *l = &p->labels[label_slot(p->labels, p->labels_cap, op, gen)];
    if (l->gen == gen && l->op == op) {
      *ts = l->type;
      *ls = l->label;
      return true;
    }
  }
  if (2 * (p->labels_n + 1) > p->labels_cap) {
    size_t cap = p->labels_cap ? 2 * p->labels_cap : 256;
    ct__prof_label *v = ct__calloc(cap, sizeof *v);
    if (v == NULL) return false;
    for (size_t k = 0; k < p->labels_cap; k++) {
      const ct__prof_label *l = &p->labels[k];
      if (l->gen != 0) v[label_slot(v, cap, l->op, l->gen)] = *l;
    }
    free(p->labels);
    p->labels = v;
    p->labels_cap = cap;
  }
  char label[256];
  op_label(pr, label, sizeof label);
  *ts = put_string(p, pr->op->def->type);
  *ls = *ts == SIZE_MAX ? SIZE_MAX : put_string(p, label);
  if (*ls == SIZE_MAX) return false;
  p->labels[label_slot(p->labels, p->labels_cap, op, gen)] = (ct__prof_label){op, gen, *ts, *ls};
  p->labels_n++;
  return true;
}

/* Appends an event to p (a full profile or one out of memory drops it silently: the
 * profiler never fails the run it watches): an op of prep pr, or (pr NULL) type and label. */
static void append(ct_profile *p, const ct__prof_mark *m, const ct__prep *pr, const char *type,
                   const char *label, int64_t end, size_t end_allocated, uint64_t end_allocs,
                   ct_status st) {
  pthread_mutex_lock(&p->lock);
  if (p->recording) {
    if (p->n == p->cap) {
      size_t cap = p->cap ? 2 * p->cap : 1024;
      ct__prof_rec *grown = ct__realloc(p->v, cap * sizeof *grown);
      if (grown != NULL) p->v = grown, p->cap = cap;
    }
    size_t ts = SIZE_MAX, ls = SIZE_MAX;
    if (pr != NULL) {
      if (!op_strings(p, pr, &ts, &ls)) ls = SIZE_MAX;
    } else {
      ts = put_string(p, type);
      ls = ts == SIZE_MAX ? SIZE_MAX : put_string(p, label);
    }
    if (p->n < p->cap && ls != SIZE_MAX) {
      ct__prof_rec *r = &p->v[p->n++];
      r->e = (ct_profile_event){.type = (const char *)(uintptr_t)ts,
                                .label = (const char *)(uintptr_t)ls,
                                .thread = m->thread,
                                .bytes = (int64_t)end_allocated - (int64_t)m->allocated,
                                .allocs = (int64_t)(end_allocs - m->allocs),
                                .status = st};
      r->start = m->t - p->tick0;
      r->end = end - p->tick0;
      r->place = m->place;
      r->allocated = (int64_t)end_allocated;
      r->dev = m->dev;
      r->dev_start = r->dev_dur = -1;
      if (m->dev != NULL) ct__cuda_mark_ref(m->dev);
    }
  }
  pthread_mutex_unlock(&p->lock);
}

bool ct__prof_records(void) { return thread_profile != NULL || atomic_load(&process_profile); }

void ct__prof_mark_now(ct__prof_mark *m, ct_place place) {
  if (thread_number == 0) thread_number = atomic_fetch_add(&thread_count, 1) + 1;
  m->thread = thread_number;
  m->place = place;
  ct__memory_counts(place, &m->allocated, &m->allocs);
  m->dev = place.kind == CT_DEVICE_CUDA ? ct__cuda_mark_begin(place.device) : NULL;
  m->t = now_ticks();
}

static void end_event(const ct__prof_mark *m, const ct__prep *pr, const char *type,
                      const char *label, ct_status st) {
  int64_t end = now_ticks();
  if (m->dev != NULL) ct__cuda_mark_end(m->dev);
  size_t allocated;
  uint64_t allocs;
  ct__memory_counts(m->place, &allocated, &allocs);
  ct_profile *mine = thread_profile;
  if (mine != NULL) append(mine, m, pr, type, label, end, allocated, allocs, st);
  /* A process profile is appended to after in_flight says so (this load is a hint; the one
   * that counts comes after, so ct_profile_stop waits for it). */
  if (atomic_load_explicit(&process_profile, memory_order_relaxed) != NULL) {
    atomic_fetch_add(&in_flight, 1);
    ct_profile *all = atomic_load(&process_profile);
    if (all != NULL && all != mine) append(all, m, pr, type, label, end, allocated, allocs, st);
    atomic_fetch_sub(&in_flight, 1);
  }
  ct__cuda_mark_unref(m->dev); /* the profiles appended to hold their own references */
}

void ct__prof_end(const ct__prof_mark *m, const char *type, const char *label, ct_status st) {
  end_event(m, NULL, type, label, st);
}

void ct__prof_op_end(const ct__prof_mark *m, const ct__prep *p, ct_status st) {
  end_event(m, p, NULL, NULL, st);
}
