/* SPDX-License-Identifier: Apache-2.0 */
/* core/memory/scratch.c: each thread's scratch buffers (common/alloc.h's ct__scratch_take), the
 * working space kernels keep between calls: one slot for the CPU GEMM's packed operands, one for
 * a kernel's own working space around its GEMMs (im2col's columns, Winograd's transforms), so a
 * convolution holds its buffer while the GEMMs it calls take theirs.
 *
 * Each slot of a thread grows to the largest request it has seen and is kept, so a kernel run again
 * costs no allocation and no page fault. What the buffers hold counts in the host's `reserved`
 * (memory.c), not in `allocated`: they are corten's memory, not a tensor's.
 *
 * Every thread's record sits in one list (a mutex), so ct_memory_empty_cache can give back the
 * buffers of all threads: it frees each buffer whose thread is not between take and give_back
 * (a state word moved IDLE -> EMPTYING with a compare-and-swap, which the owner's take waits
 * out), and skips the others. A thread's buffer is freed, and its record unlinked, when the
 * thread exits (a pthread key's destructor); the calling thread's at process exit stays
 * reachable from the list. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "common/alloc.h"
#include "memory/memory_impl.h"

enum { IDLE, TAKEN, EMPTYING };

typedef struct scratch_slot {
  _Atomic int state;
  void *p;
  size_t cap;
} scratch_slot;

typedef struct scratch_rec {
  scratch_slot slot[CT__SCRATCH_SLOTS];
  bool linked;
  bool exited; /* its thread ran at_thread_exit: no buffer again (see ct__scratch_take) */
  struct scratch_rec *prev, *next;
} scratch_rec;

static _Thread_local scratch_rec rec;

static _Atomic size_t total; /* the bytes of all threads' buffers */

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static scratch_rec *list_head;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static bool key_made;
static size_t forgotten; /* bytes a fork child dropped, still to count out of reserved (lock) */

/* Frees one slot's buffer; the bytes it held. Called with it not TAKEN by anyone else. */
static size_t drop_slot(scratch_slot *sl) {
  size_t held = sl->cap;
  free(sl->p);
  sl->p = NULL;
  sl->cap = 0;
  atomic_fetch_sub_explicit(&total, held, memory_order_relaxed);
  return held;
}

/* Frees every buffer of r; the bytes they held. */
static size_t drop(scratch_rec *r) {
  size_t held = 0;
  for (int k = 0; k < CT__SCRATCH_SLOTS; k++) held += drop_slot(&r->slot[k]);
  return held;
}

/* At the thread's exit: its buffer freed and its record out of the list. */
static void at_thread_exit(void *arg) {
  scratch_rec *r = arg;
  pthread_mutex_lock(&list_lock);
  if (r->prev != NULL) r->prev->next = r->next;
  else list_head = r->next;
  if (r->next != NULL) r->next->prev = r->prev;
  r->linked = false;
  r->exited = true;
  size_t held = drop(r);
  pthread_mutex_unlock(&list_lock);
  ct__host_reserve(0, held);
}

/* The list's lock is held across fork (as the host cache's is), so a child forked while another
 * thread walks or changes the list finds it whole. In the child only the forking thread exists:
 * the other records are copies of threads that are gone, whose stacks (and so records) the
 * child's new threads may reuse, so the child frees their buffers (its copies) and forgets them;
 * their bytes leave reserved when a thread of the child first takes a buffer, or at its next
 * ct_memory_empty_cache (not here: the stats' lock may have been held by a thread that is gone). */
static void fork_prepare(void) { pthread_mutex_lock(&list_lock); }
static void fork_parent(void) { pthread_mutex_unlock(&list_lock); }
static void fork_child(void) {
  for (scratch_rec *r = list_head, *next; r != NULL; r = next) {
    next = r->next;
    if (r == &rec) continue;
    forgotten += drop(r);
  }
  list_head = rec.linked ? &rec : NULL;
  rec.prev = rec.next = NULL;
  for (int k = 0; k < CT__SCRATCH_SLOTS; k++) { /* a kernel does not fork */
    atomic_store_explicit(&rec.slot[k].state, IDLE, memory_order_relaxed);
  }
  pthread_mutex_unlock(&list_lock);
}

/* Counts out of reserved what a fork child forgot; called with the lock held, returns the bytes
 * for the caller to count out after unlocking. */
static size_t take_forgotten(void) {
  size_t f = forgotten;
  forgotten = 0;
  return f;
}

static void make_key(void) {
  key_made = pthread_key_create(&exit_key, at_thread_exit) == 0 &&
             pthread_atfork(fork_prepare, fork_parent, fork_child) == 0;
}

/* Puts this thread's record in the list, with its exit destructor: false if that failed. */
static bool link_self(void) {
  pthread_once(&key_once, make_key);
  if (!key_made || pthread_setspecific(exit_key, &rec) != 0) return false;
  pthread_mutex_lock(&list_lock);
  rec.prev = NULL;
  rec.next = list_head;
  if (list_head != NULL) list_head->prev = &rec;
  list_head = &rec;
  rec.linked = true;
  size_t f = take_forgotten();
  pthread_mutex_unlock(&list_lock);
  ct__host_reserve(0, f);
  return true;
}

void *ct__scratch_take_in(int slot, size_t bytes) {
  /* A take in a thread-exit destructor that runs after this file's: relinking could leave the
   * record in the list past the thread (destructor rounds are bounded), so it is refused. */
  if (rec.exited || slot < 0 || slot >= CT__SCRATCH_SLOTS) return NULL;
  if (!rec.linked && !link_self()) return NULL;
  scratch_slot *sl = &rec.slot[slot];
  for (;;) {
    int seen = IDLE;
    if (atomic_compare_exchange_weak_explicit(&sl->state, &seen, TAKEN, memory_order_acquire,
                                              memory_order_relaxed)) {
      break;
    }
    if (seen == TAKEN) return NULL; /* only this thread takes its buffer: a nested take */
    if (seen == EMPTYING) sched_yield(); /* ct__scratch_empty is freeing it: a free() call */
  }
  if (bytes <= sl->cap) return sl->p;
  size_t size = (bytes + 4095) & ~(size_t)4095;
  void *p = size >= bytes ? ct__aligned_alloc(64, size) : NULL;
  if (p == NULL) {
    atomic_store_explicit(&sl->state, IDLE, memory_order_release);
    return NULL;
  }
  size_t old = drop_slot(sl);
  sl->p = p;
  sl->cap = size;
  atomic_fetch_add_explicit(&total, size, memory_order_relaxed);
  ct__host_reserve(size, old);
  return p;
}

void ct__scratch_give_back_in(int slot) {
  atomic_store_explicit(&rec.slot[slot].state, IDLE, memory_order_release);
}

bool ct__scratch_give_back_if(int slot, const void *p) {
  scratch_slot *sl = &rec.slot[slot];
  if (p == NULL || p != sl->p ||
      atomic_load_explicit(&sl->state, memory_order_relaxed) != TAKEN) {
    return false;
  }
  atomic_store_explicit(&sl->state, IDLE, memory_order_release);
  return true;
}

void *ct__work_take(size_t bytes) {
  void *p = ct__scratch_take_in(CT__SCRATCH_WORK, bytes);
  return p != NULL ? p : ct__malloc(bytes);
}

void ct__work_free(void *p) {
  if (!ct__scratch_give_back_if(CT__SCRATCH_WORK, p)) free(p);
}

void *ct__scratch_take(size_t bytes) { return ct__scratch_take_in(CT__SCRATCH_GEMM, bytes); }

void ct__scratch_give_back(void) { ct__scratch_give_back_in(CT__SCRATCH_GEMM); }

/* The owner reads its own cap; a concurrent ct__scratch_empty may clear it (tests call this
 * when none runs). */
size_t ct__scratch_held(void) { return rec.slot[CT__SCRATCH_GEMM].cap; }

size_t ct__scratch_held_in(int slot) { return rec.slot[slot].cap; }

size_t ct__scratch_total(void) { return atomic_load_explicit(&total, memory_order_relaxed); }

size_t ct__scratch_empty(void) {
  size_t freed = 0;
  pthread_mutex_lock(&list_lock);
  for (scratch_rec *r = list_head; r != NULL; r = r->next) {
    for (int k = 0; k < CT__SCRATCH_SLOTS; k++) {
      scratch_slot *sl = &r->slot[k];
      int idle = IDLE;
      if (!atomic_compare_exchange_strong_explicit(&sl->state, &idle, EMPTYING,
                                                   memory_order_acquire, memory_order_relaxed)) {
        continue; /* in use: kept */
      }
      freed += drop_slot(sl);
      atomic_store_explicit(&sl->state, IDLE, memory_order_release);
    }
  }
  freed += take_forgotten();
  pthread_mutex_unlock(&list_lock);
  return freed;
}
