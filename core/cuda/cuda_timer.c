/* SPDX-License-Identifier: Apache-2.0 */
/* core/cuda/cuda_timer.c: device time marks for the profiler (cuda_timer.h). A mark holds two
 * events until the last profile holding it is freed (a profile of N CUDA ops holds 2N events);
 * dropped marks go to a per-device cache of at most CACHE_CAP for the next profiles, and the
 * surplus is destroyed. CUDA's last-error note is cleared only of what these calls left there. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "common/alloc.h"
#include "cuda/cuda_impl.h"
#include "cuda/cuda_place.h"
#include "cuda/cuda_timer.h"

struct ct__cuda_mark {
  cudaEvent_t start, end;
  int device;
  bool ended;         /* the end event was recorded */
  _Atomic int refs;
  ct__cuda_mark *next; /* in the cache */
};

enum { CACHE_CAP = 4096 };

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static ct__cuda_mark *cache[CT__CUDA_MAX_DEVICES];
static int cached[CT__CUDA_MAX_DEVICES];

/* Whether CUDA's last-error note is clear now (so that a note after our calls is ours). */
static bool note_clear(void) { return cudaPeekAtLastError() == cudaSuccess; }

/* Clears the note when it was clear before our calls (clear_before). */
static void clear_ours(bool clear_before) {
  if (clear_before) cudaGetLastError();
}

static ct__cuda_mark *take_cached(int device) {
  pthread_mutex_lock(&cache_lock);
  ct__cuda_mark *m = cache[device];
  if (m != NULL) cache[device] = m->next, cached[device]--;
  pthread_mutex_unlock(&cache_lock);
  return m;
}

/* A mark with its two events on device (the guard has made it current); NULL on failure. */
static ct__cuda_mark *new_mark(int device) {
  ct__cuda_mark *m = take_cached(device);
  if (m != NULL) return m;
  m = ct__calloc(1, sizeof *m);
  if (m == NULL) return NULL;
  if (cudaEventCreate(&m->start) != cudaSuccess) {
    free(m);
    return NULL;
  }
  if (cudaEventCreate(&m->end) != cudaSuccess) {
    cudaEventDestroy(m->start);
    free(m);
    return NULL;
  }
  m->device = device;
  return m;
}

static void give_back(ct__cuda_mark *m) {
  pthread_mutex_lock(&cache_lock);
  bool keep = cached[m->device] < CACHE_CAP;
  if (keep) {
    m->next = cache[m->device];
    cache[m->device] = m;
    cached[m->device]++;
  }
  pthread_mutex_unlock(&cache_lock);
  if (!keep) {
    bool clear = note_clear();
    cudaEventDestroy(m->start); /* events are not tied to the current device */
    cudaEventDestroy(m->end);
    clear_ours(clear);
    free(m);
  }
}

ct__cuda_mark *ct__cuda_mark_begin(int device) {
  if (device < 0 || device >= CT__CUDA_MAX_DEVICES) return NULL;
  bool clear = note_clear();
  int prev;
  if (cudaGetDevice(&prev) != cudaSuccess || (prev != device && cudaSetDevice(device) !=
                                              cudaSuccess)) {
    clear_ours(clear); /* the profiler's failure is not the op's */
    return NULL;
  }
  ct__cuda_mark *m = new_mark(device);
  if (m != NULL && cudaEventRecord(m->start, ct__cuda_stream(device)) != cudaSuccess) {
    give_back(m);
    m = NULL;
  }
  if (m != NULL) {
    m->ended = false;
    atomic_store(&m->refs, 1);
  }
  if (prev != device) cudaSetDevice(prev);
  clear_ours(clear);
  return m;
}

void ct__cuda_mark_end(ct__cuda_mark *m) {
  bool clear = note_clear();
  int prev;
  if (cudaGetDevice(&prev) != cudaSuccess) {
    clear_ours(clear);
    return;
  }
  if (prev != m->device) cudaSetDevice(m->device);
  m->ended = cudaEventRecord(m->end, ct__cuda_stream(m->device)) == cudaSuccess;
  if (prev != m->device) cudaSetDevice(prev);
  clear_ours(clear);
}

void ct__cuda_mark_ref(ct__cuda_mark *m) { atomic_fetch_add(&m->refs, 1); }

void ct__cuda_mark_unref(ct__cuda_mark *m) {
  if (m != NULL && atomic_fetch_sub(&m->refs, 1) == 1) give_back(m);
}

bool ct__cuda_mark_time(ct__cuda_mark *m, ct__cuda_mark *from, int64_t *dur_ns,
                        int64_t *from_ns) {
  if (!m->ended) return false;
  bool clear = note_clear();
  float ms = 0, from_ms = 0;
  bool ok = cudaEventSynchronize(m->end) == cudaSuccess &&
            cudaEventElapsedTime(&ms, m->start, m->end) == cudaSuccess;
  /* The reference may be on another stream: waited for on its own. */
  bool placed = ok && from != NULL && from->device == m->device &&
                cudaEventSynchronize(from->start) == cudaSuccess &&
                cudaEventElapsedTime(&from_ms, from->start, m->start) == cudaSuccess;
  clear_ours(clear);
  if (!ok) return false;
  *dur_ns = (int64_t)((double)ms * 1e6);
  if (from_ns != NULL) *from_ns = placed ? (int64_t)((double)from_ms * 1e6) : INT64_MIN;
  return true;
}
