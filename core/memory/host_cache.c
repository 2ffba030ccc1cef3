/* SPDX-License-Identifier: Apache-2.0 */
/* core/memory/host_cache.c: the cache of large host blocks in front of the default allocator.
 *
 * The allocators give large freed blocks back to the system at once (glibc's mmap threshold,
 * jemalloc's oversize arena) or after a while (jemalloc's decay), so a tensor of many megabytes
 * freed and allocated again (a parameter reload, an intermediate of the next run) paid a page
 * fault per 4 KiB page every time. The cache keeps that memory as regions: each is one
 * allocation, made for a request no free piece could serve, and cut into pieces. A request takes
 * the smallest free piece that holds it (best fit), split when what is left would be a block of
 * the cache's own (CT__HOST_CACHE_MIN or more); a freed piece merges with the free pieces beside
 * it in its region. So a network whose values differ in size from layer to layer reuses the same
 * few regions in every run: MobileNetV2 at batch 8 held 109 MB of blocks for 46 MB of live values
 * when a block served requests of half to all of its size only, 61 MB cut into pieces (memory.md).
 *
 * Each piece has a header of its own just before the memory it hands out (the block's header and
 * data). Free pieces sit in bins by size class (4 classes per power of two), the most recently
 * freed first; a free piece that is a whole region is also on a list from the least to the most
 * recently freed, and when the free pieces pass the cache's limit the oldest whole regions go
 * back to the allocator first (a region with a live piece cannot). ct_memory_empty_cache gives
 * back every whole free region.
 *
 * The limit is CT__HOST_CACHE_LIMIT, or CORTEN_HOST_CACHE_LIMIT from the environment (read once,
 * at the cache's first use), or what ct_memory_set_cache_limit set last; 0 keeps no free region.
 * The lock is held across fork (pthread_atfork), so a child finds the cache whole and unlocked.
 *
 * The cache holds the allocator's memory, so its regions stay in the place's `reserved`, each
 * counted once, at the size it was made (less the block header, as memory.c counts it);
 * `allocated` and `peak` count tensors only. In an AddressSanitizer build a free piece's memory is
 * poisoned, so a read through a pointer kept past the free is still reported. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "memory/memory_impl.h"
#include "memory/poison.h"

/* A piece of a region, HDR bytes before the memory it hands out. */
typedef struct chunk {
  size_t size;                 /* the bytes after the header */
  struct chunk *left, *right;  /* the pieces beside it in its region (NULL at the ends) */
  struct chunk *next, *prev;   /* free: its bin; on the way back to the allocator: the chain */
  struct chunk *older, *newer; /* free and a whole region: the age list */
  size_t free;
} chunk;

#define HDR CT__BLOCK_ALIGN /* a piece's header, and the alignment of what it hands out */
_Static_assert(sizeof(chunk) <= HDR, "a piece's header fits in HDR bytes");

enum { CLASS_STEPS = 4, N_BINS = 64 * CLASS_STEPS };

static struct {
  pthread_mutex_t lock;
  chunk *bins[N_BINS];
  chunk *oldest, *newest; /* whole free regions */
  size_t bytes;           /* of the free pieces */
  size_t limit;           /* under lock, once set_up has run */
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

static bool whole(const chunk *c) { return c->left == NULL && c->right == NULL; }

/* Files a free piece in its bin (and, a whole region, as the newest on the age list). */
static void file_free(chunk *c) {
  size_t b = bin_of(c->size);
  c->free = 1;
  c->prev = NULL;
  c->next = cache.bins[b];
  if (c->next) c->next->prev = c;
  cache.bins[b] = c;
  c->older = c->newer = NULL;
  if (whole(c)) {
    c->older = cache.newest;
    if (cache.newest) cache.newest->newer = c; else cache.oldest = c;
    cache.newest = c;
  }
  cache.bytes += c->size;
}

/* Takes a free piece out of its bin (and the age list). */
static void unfile(chunk *c) {
  if (whole(c)) {
    if (c->older) c->older->newer = c->newer; else cache.oldest = c->newer;
    if (c->newer) c->newer->older = c->older; else cache.newest = c->older;
  }
  if (c->prev) c->prev->next = c->next; else cache.bins[bin_of(c->size)] = c->next;
  if (c->next) c->next->prev = c->prev;
  c->free = 0;
  cache.bytes -= c->size;
}

/* The smallest free piece of at least size bytes, or NULL (under the lock). The bins above
 * size's hold larger pieces only, so the first bin with a piece that fits has the best. */
static chunk *best_fit(size_t size) {
  for (size_t b = bin_of(size); b < N_BINS; b++) {
    chunk *best = NULL;
    for (chunk *c = cache.bins[b]; c != NULL; c = c->next) {
      if (c->size >= size && (best == NULL || c->size < best->size)) best = c;
    }
    if (best != NULL) return best;
  }
  return NULL;
}

void *ct__host_cache_take(size_t size, size_t *got, bool *fresh) {
  size = (size + HDR - 1) / HDR * HDR;
  lock_cache();
  chunk *c = best_fit(size);
  if (c != NULL) {
    unfile(c);
    if (c->size - size >= HDR + CT__HOST_CACHE_MIN) { /* the rest a piece of its own */
      chunk *r = (chunk *)(void *)((char *)c + HDR + size);
      UNPOISON(r, HDR);
      *r = (chunk){.size = c->size - size - HDR, .left = c, .right = c->right};
      if (r->right) r->right->left = r;
      c->right = r;
      c->size = size;
      file_free(r);
    }
  }
  pthread_mutex_unlock(&cache.lock);
  if (c != NULL) {
    *got = c->size;
    *fresh = false;
    UNPOISON((char *)c + HDR, c->size);
    return (char *)c + HDR;
  }
  c = ct__host_allocator.alloc(NULL, HDR + size, CT__BLOCK_ALIGN);
  if (c == NULL) return NULL;
  *c = (chunk){.size = size};
  *got = size;
  *fresh = true;
  return (char *)c + HDR;
}

/* Gives the regions of a chain linked through `next` back to the allocator; returns the bytes
 * `reserved` counted for them (each less the block header). */
static size_t give_back(chunk *chain) {
  size_t bytes = 0;
  while (chain != NULL) {
    chunk *next = chain->next;
    size_t size = chain->size;
    UNPOISON((char *)chain + HDR, size);
    bytes += size - CT__BLOCK_HEADER;
    ct__host_allocator.free(NULL, chain, HDR + size);
    chain = next;
  }
  return bytes;
}

/* Unfiles the oldest whole free regions while the free pieces hold more than `keep` bytes
 * (under the lock); returns them chained through `next`. */
static chunk *evict_down_to(size_t keep) {
  chunk *evicted = NULL;
  while (cache.oldest != NULL && cache.bytes > keep) {
    chunk *old = cache.oldest;
    unfile(old);
    old->next = evicted;
    evicted = old;
  }
  return evicted;
}

size_t ct__host_cache_put(void *mem) {
  chunk *c = (chunk *)(void *)((char *)mem - HDR);
  lock_cache();
  /* Poisoned before the lock goes: once unlocked, another thread may take and unpoison the
   * memory, and a late poison would then mark its live memory as freed. */
  POISON(mem, c->size);
  chunk *r = c->right;
  if (r != NULL && r->free) { /* r's header becomes free memory of c's */
    unfile(r);
    c->size += HDR + r->size;
    c->right = r->right;
    if (c->right) c->right->left = c;
    POISON(r, HDR);
  }
  chunk *l = c->left;
  if (l != NULL && l->free) {
    unfile(l);
    l->size += HDR + c->size;
    l->right = c->right;
    if (l->right) l->right->left = l;
    POISON(c, HDR);
    c = l;
  }
  chunk *evicted = NULL;
  if (whole(c) && c->size > cache.limit) { /* larger than the whole cache: back at once */
    c->next = NULL;
    evicted = c;
  } else {
    file_free(c);
    evicted = evict_down_to(cache.limit);
  }
  pthread_mutex_unlock(&cache.lock);
  return give_back(evicted);
}

size_t ct__host_cache_set_limit(size_t bytes) {
  lock_cache();
  cache.limit = bytes;
  chunk *evicted = evict_down_to(bytes);
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
  chunk *chain = evict_down_to(0);
  pthread_mutex_unlock(&cache.lock);
  return give_back(chain);
}
