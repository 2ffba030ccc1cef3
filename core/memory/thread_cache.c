/* SPDX-License-Identifier: Apache-2.0 */
/* core/memory/thread_cache.c: each thread's cache of small host memory (common/alloc.h's
 * ct__small_alloc): the blocks of host tensors under CT__HOST_CACHE_MIN (header and data) and
 * standalone variables (variable_impl.h).
 *
 * A small allocation freed by a thread is kept in that thread's cache and handed to the next
 * request of exactly its size on the same thread: a pointer pop instead of an allocator call
 * (jemalloc's mallocx with an alignment takes its slow path, about five times the work of the
 * pop). Blocks are binned by size class (4 classes per power of two, like host_cache.c); a bin
 * holds at most BIN_MAX blocks, most recently freed first, and a thread at most its budget,
 * CT__THREAD_CACHE_BYTES or the host cache's limit when that is lower (0 caches nothing). A
 * free that does not fit goes straight to the allocator.
 *
 * No lock: only its own thread touches a cache. Other threads reach it through the epoch: a
 * change (ct_memory_empty_cache, ct_memory_set_cache_limit) makes every thread give its cache
 * back at its next small allocation or free, and read its budget again. A thread's cache is
 * given back when the thread exits (a pthread key's destructor) and the calling thread's at
 * process exit (atexit, registered at the first use, so it runs before LeakSanitizer's check);
 * a cache given back that way keeps nothing afterwards. A child of fork finds the forking
 * thread's cache as it was, its own copy.
 *
 * The stats count a cached block as freed (memory.c counts it out of `reserved` before it comes
 * here, and in again when it is taken), as they count what jemalloc's own thread cache keeps.
 * In an AddressSanitizer build a cached block is poisoned past its first 16 bytes. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "common/alloc.h"
#include "memory/memory_impl.h"
#include "memory/poison.h"

/* A cached block's first bytes while it sits in the cache. */
typedef struct node {
  struct node *next;
  size_t size;
} node;

enum {
  CLASS_STEPS = 4,
  FIRST_LG = 6,  /* 64 bytes, the smallest request */
  LAST_LG = 15,  /* below CT__HOST_CACHE_MIN (64 KiB) */
  N_BINS = (LAST_LG - FIRST_LG + 1) * CLASS_STEPS,
  BIN_MAX = 16,
};

enum { STATE_NEW, STATE_LIVE, STATE_CLOSED };

typedef struct thread_cache {
  node *bins[N_BINS];
  unsigned char count[N_BINS];
  size_t bytes;   /* what the bins hold */
  size_t budget;  /* the most they may hold; 0 for a closed cache */
  unsigned epoch; /* the epoch this cache last caught up with (0: never) */
  unsigned char state;
} thread_cache;

static _Thread_local thread_cache tc;

/* The calling thread's cache. The address is computed once per call (a __tls_get_addr call in
 * a shared library): the empty asm keeps the compiler from computing it again at each use. */
static inline thread_cache *this_cache(void) {
  thread_cache *c = &tc;
  __asm__("" : "+r"(c));
  return c;
}

/* Bumped to make every thread give its cache back; starts at 1, so a new cache catches up at its
 * first use. */
static _Atomic unsigned epoch_now = 1;

/* Bytes given back by exiting threads (process lifetime): what the tests can see of a thread's
 * exit. */
static _Atomic size_t released_at_exit;

static pthread_once_t set_up_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static atomic_bool set_up_ok; /* false again once process_exit deleted the key */

/* The bin of a size in [64, 64 KiB): its power of two and the quarter of it below. */
static inline size_t bin_of(size_t size) {
  unsigned lg = 63u - (unsigned)__builtin_clzll((unsigned long long)size);
  return (size_t)(lg - FIRST_LG) * CLASS_STEPS + ((size >> (lg - 2)) & 3u);
}

/* Gives every block of c back to the allocator; returns their bytes. */
static size_t give_back(thread_cache *c) {
  size_t bytes = c->bytes;
  for (size_t b = 0; b < N_BINS; b++) {
    node *n = c->bins[b];
    while (n != NULL) {
      node *next = n->next;
      size_t size = n->size;
      UNPOISON((char *)n + sizeof *n, size - sizeof *n);
      ct__host_mem_free(n, size);
      n = next;
    }
    c->bins[b] = NULL;
    c->count[b] = 0;
  }
  c->bytes = 0;
  return bytes;
}

/* Gives c back and keeps nothing after: its thread is ending, or the process. */
static size_t close_cache(thread_cache *c) {
  size_t bytes = give_back(c);
  c->state = STATE_CLOSED;
  c->budget = 0;
  return bytes;
}

static void thread_exit(void *arg) {
  atomic_fetch_add_explicit(&released_at_exit, close_cache(arg), memory_order_relaxed);
}

/* At process exit (or when the library is unloaded): the calling thread's cache goes back, and
 * the key goes, so that no thread exiting later calls into code that may be gone. */
static void process_exit(void) {
  close_cache(this_cache());
  /* A thread's first small allocation after this point must not register with a deleted key
   * (whose slot another library may have taken since): its cache stays closed. */
  atomic_store(&set_up_ok, false);
  pthread_key_delete(exit_key);
}

static void set_up(void) {
  if (pthread_key_create(&exit_key, thread_exit) != 0) return;
  if (atexit(process_exit) != 0) {
    pthread_key_delete(exit_key);
    return;
  }
  atomic_store(&set_up_ok, true);
}

/* Brings c up to the current epoch: gives back what it holds, and (re)reads its budget. A new
 * cache registers for its thread's exit first; without that registration it keeps nothing. */
CT__COLD static void catch_up(thread_cache *c) {
  unsigned now = atomic_load_explicit(&epoch_now, memory_order_acquire);
  give_back(c);
  if (c->state == STATE_NEW) {
    pthread_once(&set_up_once, set_up);
    c->state = atomic_load(&set_up_ok) && pthread_setspecific(exit_key, c) == 0 ? STATE_LIVE
                                                                                : STATE_CLOSED;
  }
  if (c->state == STATE_LIVE) {
    size_t limit = ct__host_cache_limit();
    c->budget = limit < CT__THREAD_CACHE_BYTES ? limit : CT__THREAD_CACHE_BYTES;
  } else {
    c->budget = 0;
  }
  c->epoch = now;
}

void *ct__small_alloc(size_t size) {
  if (ct__fault()) return NULL; /* a cache hit counts as an allocation for the fault suites */
  thread_cache *c = this_cache();
  if (CT__LIKELY(c->epoch == atomic_load_explicit(&epoch_now, memory_order_relaxed))) {
    size_t b = bin_of(size);
    for (node **link = &c->bins[b], *n = *link; n != NULL; link = &n->next, n = *link) {
      if (CT__LIKELY(n->size == size)) {
        *link = n->next;
        c->count[b]--;
        c->bytes -= size;
        UNPOISON((char *)n + sizeof *n, size - sizeof *n);
        return n;
      }
    }
  } else {
    catch_up(c);
  }
  return ct__host_mem_alloc(size);
}

void ct__small_free(void *mem, size_t size) {
  thread_cache *c = this_cache();
  if (CT__UNLIKELY(c->epoch != atomic_load_explicit(&epoch_now, memory_order_relaxed))) {
    catch_up(c);
  }
  size_t b = bin_of(size);
  if (CT__LIKELY(c->bytes + size <= c->budget && c->count[b] < BIN_MAX)) {
    node *n = mem;
    n->next = c->bins[b];
    n->size = size;
    c->bins[b] = n;
    c->count[b]++;
    c->bytes += size;
    POISON((char *)n + sizeof *n, size - sizeof *n);
    return;
  }
  ct__host_mem_free(mem, size);
}

void ct__thread_caches_empty(void) {
  atomic_fetch_add_explicit(&epoch_now, 1, memory_order_acq_rel);
  catch_up(this_cache());
}

size_t ct__thread_cache_bytes(void) { return this_cache()->bytes; }

size_t ct__thread_cache_released_at_exit(void) {
  return atomic_load_explicit(&released_at_exit, memory_order_relaxed);
}
