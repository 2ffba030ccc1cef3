/* SPDX-License-Identifier: Apache-2.0 */
/* core/memory/host_cache.c: the cache of large host blocks in front of the default allocator.
 *
 * jemalloc gives freed large extents back to the system after a while (its decay), so a tensor
 * of many megabytes freed and allocated again (a parameter reload, an intermediate of the next
 * step) pays a page fault per 4 KiB page every time. The cache keeps such blocks, pages and all,
 * and hands one back to the next request of at least half its size. Blocks are binned by size
 * class (4 classes per power of two); a bin holds the blocks of its class, most recently freed
 * first, and a request takes the first block of at least its size and less than twice it in the
 * classes from its own up: a network's values differ in size from layer to layer, and an exact
 * size left each layer its own blocks (memory.md). Every cached block is also on one list from the
 * least to the most recently freed, so that when the cache would pass its limit it gives the
 * oldest blocks back to the allocator first. ct_memory_empty_cache gives back all.
 *
 * The limit is CT__HOST_CACHE_LIMIT, or CORTEN_HOST_CACHE_LIMIT from the environment (read once,
 * at the cache's first use), or what ct_memory_set_cache_limit set last; 0 caches nothing. The
 * lock is held across fork (pthread_atfork), so a child finds the cache whole and unlocked.
 *
 * The cache holds the allocator's memory, so the bytes it keeps stay in the place's `reserved`;
 * `allocated` and `peak` count tensors only. In an AddressSanitizer build a cached block is
 * poisoned, so a read through a pointer kept past the free is still reported. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "memory/memory_impl.h"
#include "memory/poison.h"

/* A cached block's first bytes while it sits in the cache. */
typedef struct node {
  struct node *older, *newer; /* the age list */
  struct node *next, *prev;   /* the bin */
  size_t size;                /* the whole allocation, as the allocator was asked */
} node;

enum { CLASS_STEPS = 4, N_BINS = 64 * CLASS_STEPS };

static struct {
  pthread_mutex_t lock;
  node *bins[N_BINS];
  node *oldest, *newest;
  size_t bytes;
  size_t limit; /* under lock, once set_up has run */
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER, .limit = CT__HOST_CACHE_LIMIT};

static pthread_once_t set_up_once = PTHREAD_ONCE_INIT;

bool ct__host_cache_parse_limit(const char *text, size_t *out) {
  if (text == NULL || *text < '0' || *text > '9') return false;
  size_t v = 0;
  for (; *text >= '0' && *text <= '9'; text++) {
    size_t digit = (size_t)(*text - '0');
    if (v > (SIZE_MAX - digit) / 10) return false;
    v = v * 10 + digit;
  }
  unsigned shift = 0;
  switch (*text) {
    case 'k': case 'K': shift = 10; text++; break;
    case 'm': case 'M': shift = 20; text++; break;
    case 'g': case 'G': shift = 30; text++; break;
    default: break;
  }
  if (*text != '\0' || (shift > 0 && v > (SIZE_MAX >> shift))) return false;
  *out = v << shift;
  return true;
}

static void lock_for_fork(void) { pthread_mutex_lock(&cache.lock); }
static void unlock_after_fork(void) { pthread_mutex_unlock(&cache.lock); }

/* Once, at the first use: the environment's limit (a bad value leaves the default), and the
 * fork handlers. */
static void set_up(void) {
  size_t limit;
  if (ct__host_cache_parse_limit(getenv("CORTEN_HOST_CACHE_LIMIT"), &limit)) cache.limit = limit;
  pthread_atfork(lock_for_fork, unlock_after_fork, unlock_after_fork);
}

static void lock_cache(void) {
  pthread_once(&set_up_once, set_up);
  pthread_mutex_lock(&cache.lock);
}

/* The bin of a size: its power of two and the quarter of it below. */
static size_t bin_of(size_t size) {
  unsigned lg = 63u - (unsigned)__builtin_clzll((unsigned long long)size);
  size_t quarter = lg >= 2 ? (size >> (lg - 2)) & 3u : 0;
  return (size_t)lg * CLASS_STEPS + quarter;
}

static void unlink_node(node *n) {
  if (n->older) n->older->newer = n->newer; else cache.oldest = n->newer;
  if (n->newer) n->newer->older = n->older; else cache.newest = n->older;
  size_t b = bin_of(n->size);
  if (n->prev) n->prev->next = n->next; else cache.bins[b] = n->next;
  if (n->next) n->next->prev = n->prev;
  cache.bytes -= n->size;
}

void *ct__host_cache_take(size_t size, size_t *got) {
  lock_cache();
  node *n = NULL;
  for (size_t b = bin_of(size), last = bin_of(2 * size - 1); n == NULL && b <= last; b++) {
    n = cache.bins[b];
    while (n != NULL && (n->size < size || n->size >= 2 * size)) n = n->next;
  }
  if (n != NULL) {
    unlink_node(n);
    *got = n->size;
  }
  pthread_mutex_unlock(&cache.lock);
  if (n != NULL) UNPOISON((char *)n + sizeof *n, *got - sizeof *n);
  return n;
}

/* Gives the blocks of a chain linked through `next` back to the allocator; returns the bytes
 * their data took (what `reserved` counted: each block less its header). */
static size_t give_back(node *chain) {
  size_t bytes = 0;
  while (chain != NULL) {
    node *next = chain->next;
    size_t size = chain->size;
    UNPOISON((char *)chain + sizeof *chain, size - sizeof *chain);
    bytes += size - CT__BLOCK_HEADER;
    ct__host_allocator.free(NULL, chain, size);
    chain = next;
  }
  return bytes;
}

/* Unlinks the oldest blocks until the cache holds at most `keep` bytes (under the lock); returns
 * them chained through `next`. */
static node *evict_down_to(size_t keep) {
  node *evicted = NULL;
  while (cache.oldest != NULL && cache.bytes > keep) {
    node *old = cache.oldest;
    unlink_node(old);
    old->next = evicted;
    evicted = old;
  }
  return evicted;
}

size_t ct__host_cache_put(void *mem, size_t size) {
  node *n = mem;
  lock_cache();
  if (size > cache.limit) {
    pthread_mutex_unlock(&cache.lock);
    ct__host_allocator.free(NULL, mem, size);
    return size - CT__BLOCK_HEADER;
  }
  node *evicted = evict_down_to(cache.limit - size);
  size_t b = bin_of(size);
  *n = (node){.older = cache.newest, .newer = NULL, .next = cache.bins[b], .prev = NULL,
              .size = size};
  if (n->next) n->next->prev = n;
  cache.bins[b] = n;
  if (cache.newest) cache.newest->newer = n; else cache.oldest = n;
  cache.newest = n;
  cache.bytes += size;
  /* Poisoned before the lock goes: once unlocked, another thread may take and unpoison the
   * block, and a late poison would then mark its live memory as freed. */
  POISON((char *)n + sizeof *n, size - sizeof *n);
  pthread_mutex_unlock(&cache.lock);
  return give_back(evicted);
}

size_t ct__host_cache_set_limit(size_t bytes) {
  lock_cache();
  cache.limit = bytes;
  node *evicted = evict_down_to(bytes);
  pthread_mutex_unlock(&cache.lock);
  return give_back(evicted);
}

size_t ct__host_cache_limit(void) {
  lock_cache();
  size_t limit = cache.limit;
  pthread_mutex_unlock(&cache.lock);
  return limit;
}

size_t ct__host_cache_empty(void) {
  lock_cache();
  node *chain = evict_down_to(0);
  pthread_mutex_unlock(&cache.lock);
  return give_back(chain);
}
