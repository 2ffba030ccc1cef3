/* SPDX-License-Identifier: Apache-2.0 */
/* core/memory/memory.c: per-place allocators and stats, and reference-counted blocks.
 *
 * Places: the host (ct_cpu) is the hot path, reached through one predictable branch on the
 * place kind; page-locked host memory (ct_cuda_host) and each CUDA device have domains of their
 * own and come from core/cuda (cuda_place.h), which in a CPU-only build refuses them. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/cuda.h>

#include "common/alloc.h"
#include "common/fault.h"
#include "cuda/cuda_place.h"
#include "memory/memory_impl.h"

/* A place's allocator and stats. The lock guards the stats only; the allocator is set while no
 * other thread allocates on the place (ct_set_allocator's documented rule). A CUDA device's
 * default allocator is its caching pool (fallback NULL); its stats' reserved is then the pool's,
 * added when the stats are read, plus what replaced allocators hold. */
typedef struct domain {
  _Atomic int lock;
  ct_memory_stats stats;
  /* stats.allocated and stats.allocs as of the last change, for readers without the lock (the
   * profiler reads them around every op: ct__memory_counts). */
  _Atomic size_t live;
  _Atomic uint64_t nallocs;
  ct_allocator allocator;
  const ct_allocator *fallback; /* the default allocator; NULL: the device's caching pool */
} domain;

static domain host_domain = {.lock = 0, .allocator = {NULL, NULL, NULL},
                             .fallback = &ct__host_allocator};
static domain pinned_domain = {.lock = 0, .allocator = {NULL, NULL, NULL},
                               .fallback = &ct__cuda_host_allocator};
static domain cuda_domains[CT__CUDA_MAX_DEVICES];

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static void domain_lock(domain *d) {
  for (unsigned spins = 0;; spins++) {
    if (!atomic_exchange_explicit(&d->lock, 1, memory_order_acquire)) return;
    while (atomic_load_explicit(&d->lock, memory_order_relaxed)) {
      if (++spins % 256 == 0) {
        sched_yield();
      } else {
        cpu_relax();
      }
    }
  }
}

static void domain_unlock(domain *d) { atomic_store_explicit(&d->lock, 0, memory_order_release); }

/* Counts an allocation of nbytes (reserved bytes taken from the allocator; 0 when a pool keeps
 * its own count) into d's stats, and a free out of them. */
static inline void stats_alloc(domain *d, size_t nbytes, size_t reserved) {
  domain_lock(d);
  d->stats.allocated += nbytes;
  d->stats.reserved += reserved;
  d->stats.allocs++;
  if (d->stats.allocated > d->stats.peak) d->stats.peak = d->stats.allocated;
  atomic_store_explicit(&d->live, d->stats.allocated, memory_order_relaxed);
  atomic_store_explicit(&d->nallocs, d->stats.allocs, memory_order_relaxed);
  domain_unlock(d);
}

static inline void stats_free(domain *d, size_t nbytes, size_t reserved) {
  domain_lock(d);
  d->stats.allocated -= nbytes;
  d->stats.reserved -= reserved;
  d->stats.frees++;
  atomic_store_explicit(&d->live, d->stats.allocated, memory_order_relaxed);
  domain_unlock(d);
}

/* Counts out reserved bytes the host cache gave back to the allocator. */
static void stats_unreserve(domain *d, size_t reserved) {
  if (reserved == 0) return;
  domain_lock(d);
  d->stats.reserved -= reserved;
  domain_unlock(d);
}

void ct__host_reserve(size_t add, size_t sub) {
  if (add == sub) return;
  domain_lock(&host_domain);
  host_domain.stats.reserved += add;
  host_domain.stats.reserved -= sub;
  domain_unlock(&host_domain);
}

ct_status ct__place_check(ct_place place, const char *what) {
  char p[CT__PLACE_STR_CAP];
  if (!ct__place_valid(place)) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "%s: %s is not a place: use ct_cpu(), ct_cuda(n) or ct_cuda_host()", what,
                     ct_place_str(place, p, sizeof p));
  }
  if (place.kind != CT_DEVICE_CPU) return ct__cuda_place_check(place, what);
  return CT_OK;
}

/* The domain of a valid place other than the host (device < CT__CUDA_MAX_DEVICES). */
static domain *device_domain(ct_place place) {
  return place.kind == CT_DEVICE_CUDA ? &cuda_domains[place.device] : &pinned_domain;
}

/* The domain of a supported place; NULL with the error recorded otherwise. */
static domain *domain_of(ct_place place, const char *what) {
  if (ct__place_check(place, what) != CT_OK) return NULL;
  return place.kind == CT_DEVICE_CPU ? &host_domain : device_domain(place);
}

void ct__memory_counts(ct_place place, size_t *allocated, uint64_t *allocs) {
  const domain *d = NULL;
  if (place.kind == CT_DEVICE_CPU) {
    d = &host_domain;
  } else if ((place.kind == CT_DEVICE_CUDA || place.kind == CT_DEVICE_CUDA_HOST) &&
             place.device >= 0 && place.device < CT__CUDA_MAX_DEVICES) {
    d = device_domain(place);
  }
  *allocated = d != NULL ? atomic_load_explicit(&d->live, memory_order_relaxed) : 0;
  *allocs = d != NULL ? atomic_load_explicit(&d->nallocs, memory_order_relaxed) : 0;
}

/* The allocator of a domain: the replacement when one is set, else the default (NULL for a
 * CUDA device: its caching pool). */
static const ct_allocator *domain_allocator(const domain *d) {
  return d->allocator.alloc ? &d->allocator : d->fallback;
}

ct_status ct_memory_stats_get(ct_place place, ct_memory_stats *out) {
  if (out == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_memory_stats_get: out is NULL: pass a ct_memory_stats to fill");
  }
  domain *d = domain_of(place, "ct_memory_stats_get");
  if (d == NULL) return ct_last_status();
  domain_lock(d);
  *out = d->stats;
  domain_unlock(d);
  if (place.kind == CT_DEVICE_CUDA) out->reserved += ct__cuda_reserved(place.device);
  return CT_OK;
}

void ct_memory_reset_peak(ct_place place) {
  domain *d;
  if (!ct__place_valid(place)) return;
  if (place.kind == CT_DEVICE_CPU) {
    d = &host_domain;
  } else if (place.kind == CT_DEVICE_CUDA && place.device >= CT__CUDA_MAX_DEVICES) {
    return;
  } else {
    d = device_domain(place);
  }
  domain_lock(d);
  d->stats.peak = d->stats.allocated;
  domain_unlock(d);
}

ct_status ct_memory_empty_cache(ct_place place) {
  domain *d = domain_of(place, "ct_memory_empty_cache");
  if (d == NULL) return ct_last_status();
  if (place.kind == CT_DEVICE_CUDA) return ct__cuda_empty_device_cache(place.device);
  if (place.kind == CT_DEVICE_CPU) {
    ct__thread_caches_empty();
    stats_unreserve(d, ct__host_cache_empty());
    stats_unreserve(d, ct__scratch_empty());
  }
  return CT_OK;
}

ct_status ct_memory_set_cache_limit(ct_place place, size_t bytes) {
  domain *d = domain_of(place, "ct_memory_set_cache_limit");
  if (d == NULL) return ct_last_status();
  if (place.kind != CT_DEVICE_CPU) {
    char p[CT__PLACE_STR_CAP];
    return ct__error(CT_ERR_UNSUPPORTED,
                     "ct_memory_set_cache_limit: %s has no cache with a limit (only the host's, "
                     "ct_cpu(), has one): use ct_memory_empty_cache to give its memory back",
                     ct_place_str(place, p, sizeof p));
  }
  stats_unreserve(d, ct__host_cache_set_limit(bytes));
  ct__thread_caches_empty(); /* each thread reads its budget again */
  return CT_OK;
}

ct_status ct_set_allocator(ct_place place, const ct_allocator *a) {
  domain *d = domain_of(place, "ct_set_allocator");
  if (d == NULL) return ct_last_status();
  if (a != NULL && (a->alloc == NULL || a->free == NULL)) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_set_allocator: the allocator's %s function is NULL: give both alloc and "
                     "free, or pass NULL to restore the default",
                     a->alloc == NULL ? "alloc" : "free");
  }
  if (a == NULL) {
    memset(&d->allocator, 0, sizeof d->allocator);
  } else {
    d->allocator = *a;
  }
  return CT_OK;
}

/* nbytes rounded up to a multiple of the power of two g; a zero-byte request still takes g. */
static inline size_t round_up(size_t nbytes, size_t g) {
  return nbytes == 0 ? g : (nbytes + g - 1) & ~(g - 1);
}

/* Fills in a new block header (refs 1): what every kind of block starts from. a: the allocator
 * the memory goes back to (NULL: none, or the device's pool). */
static inline __attribute__((always_inline)) void block_init(ct__block *b, ct_place place,
                                                             void *ptr, size_t nbytes,
                                                             size_t reserved,
                                                             const ct_allocator *a) {
  atomic_init(&b->refs, 1);
  b->external = false;
  b->read_only = false;
  atomic_init(&b->frozen, 0);
  atomic_init(&b->op_view, false);
  b->coalloc = false;
  b->place = place;
  b->ptr = ptr;
  b->nbytes = nbytes;
  b->reserved = reserved;
  if (a != NULL) {
    b->allocator = *a;
  } else {
    memset(&b->allocator, 0, sizeof b->allocator);
  }
  b->handle = NULL;
  b->release = NULL;
  b->release_ctx = NULL;
}

/* A block of nbytes from allocator a, counted in d with `reserved` bytes taken. */
static inline __attribute__((always_inline)) ct__block *block_alloc_from(
    domain *d, const ct_allocator *a, ct_place place, size_t nbytes, size_t reserved,
    size_t align) {
  ct__block *b = ct__alloc(sizeof *b);
  if (b == NULL) return NULL;
  void *ptr = a->alloc(a->ctx, reserved, align);
  if (ptr == NULL) {
    ct__free_sized(b, sizeof *b);
    return NULL;
  }
  block_init(b, place, ptr, nbytes, reserved, a);
  stats_alloc(d, nbytes, reserved);
  return b;
}

/* Page-locked host memory, or a CUDA device (the place passed ct__place_check). */
static CT__COLD ct__block *block_alloc_device(ct_place place, size_t nbytes) {
  domain *d = device_domain(place);
  if (place.kind == CT_DEVICE_CUDA_HOST) {
    return block_alloc_from(d, domain_allocator(d), place, nbytes,
                            round_up(nbytes, CT__BLOCK_ALIGN), CT__BLOCK_ALIGN);
  }
  size_t reserved = round_up(nbytes, CT__CUDA_BLOCK_ROUND);
  const ct_allocator *a = domain_allocator(d);
  if (a != NULL) return block_alloc_from(d, a, place, nbytes, reserved, CT__CUDA_BLOCK_ALIGN);

  /* The device's caching pool: it keeps the reserved count itself. */
  ct__block *b = ct__alloc(sizeof *b);
  if (b == NULL) return NULL;
  void *handle = NULL;
  void *ptr = ct__cuda_alloc(place.device, reserved, &handle);
  if (ptr == NULL) {
    ct__free_sized(b, sizeof *b);
    return NULL;
  }
  block_init(b, place, ptr, nbytes, reserved, NULL);
  b->handle = handle;

  stats_alloc(d, nbytes, 0); /* the pool counts its reserved bytes */
  return b;
}

/* A host block from the default allocator: header and data in one allocation, so a tensor's
 * memory costs one allocator call instead of two. (A replaced allocator sees exactly the data
 * sizes it is asked for, so its blocks keep a separate header.) */
static inline __attribute__((always_inline)) ct__block *block_alloc_host(size_t nbytes,
                                                                         size_t reserved) {
  size_t total = CT__BLOCK_HEADER + reserved, got;
  char *mem;
  size_t taken = reserved; /* a block from the host cache was counted as reserved already */
  if (CT__LIKELY(total < CT__HOST_CACHE_MIN)) {
    mem = ct__small_alloc(total); /* the thread's cache: counted out of reserved when kept */
  } else if ((mem = ct__host_cache_take(total, &got)) != NULL) {
    if (CT__UNLIKELY(ct__fault())) { /* a cache hit counts as an allocation for the fault suite */
      stats_unreserve(&host_domain, ct__host_cache_put(mem, got));
      return NULL;
    }
    taken = 0;
    reserved = got - CT__BLOCK_HEADER; /* the cached block's, which may be larger */
  } else {
    mem = ct__host_allocator.alloc(NULL, total, CT__BLOCK_ALIGN);
  }
  if (CT__UNLIKELY(mem == NULL)) return NULL;
  ct__block *b = (ct__block *)(void *)mem;
  block_init(b, ct_cpu(), mem + CT__BLOCK_HEADER, nbytes, reserved, NULL);
  b->coalloc = true;
  stats_alloc(&host_domain, nbytes, taken);
  return b;
}

static inline ct__block *block_alloc_any(ct_place place, size_t nbytes) {
  if (CT__UNLIKELY(place.kind != CT_DEVICE_CPU)) return block_alloc_device(place, nbytes);
  size_t reserved = round_up(nbytes, CT__BLOCK_ALIGN);
  if (CT__LIKELY(host_domain.allocator.alloc == NULL)) return block_alloc_host(nbytes, reserved);
  return block_alloc_from(&host_domain, &host_domain.allocator, place, nbytes, reserved,
                          CT__BLOCK_ALIGN);
}

ct__block *ct__block_alloc_for(ct_place place, size_t nbytes, const void *t) {
  ct__block *b = block_alloc_any(place, nbytes);
  if (CT__UNLIKELY(atomic_load_explicit(&ct__observed, memory_order_relaxed)) && b != NULL) {
    ct__observe(b, true, t);
  }
  return b;
}

ct__block *ct__block_alloc(ct_place place, size_t nbytes) {
  return ct__block_alloc_for(place, nbytes, NULL);
}

ct_status ct__block_oom(const char *what, ct_place place, size_t nbytes) {
  char p[CT__PLACE_STR_CAP];
  if (CT__UNLIKELY(place.kind != CT_DEVICE_CPU)) {
    if (ct__cuda_take_alloc_error() != CT_OK) { /* a CUDA failure, recorded by core/cuda */
      char cause[512];
      snprintf(cause, sizeof cause, "%s", ct_last_error());
      return ct__error(CT_ERR_DEVICE, "%s: %s", what, cause);
    }
    if (place.kind == CT_DEVICE_CUDA) {
      ct_memory_stats s;
      if (ct_memory_stats_get(place, &s) != CT_OK) memset(&s, 0, sizeof s);
      return ct__error(CT_ERR_OUT_OF_MEMORY,
                       "%s: %s is out of memory for %zu more bytes, even after returning the "
                       "cache to the driver (tensors hold %zu bytes, corten reserves %zu): free "
                       "some tensors or use smaller dims",
                       what, ct_place_str(place, p, sizeof p), nbytes, s.allocated, s.reserved);
    }
  }
  return ct__error(CT_ERR_OUT_OF_MEMORY,
                   "%s: the %s allocator could not provide %zu bytes: free some tensors or use "
                   "smaller dims",
                   what, ct_place_str(place, p, sizeof p), nbytes);
}

ct__block *ct__block_wrap(void *ptr, size_t nbytes, ct_place place, void (*release)(void *),
                          void *ctx) {
  /* An empty buffer may come as NULL: the block points at a placeholder instead, so a tensor's
   * data is a non-NULL pointer like any other (and no NULL + 0 is ever computed). */
  static char empty_buffer[1];
  if (ptr == NULL) ptr = empty_buffer;
  ct__block *b = ct__alloc(sizeof *b);
  if (b == NULL) {
    return ct__error_null(CT_ERR_OUT_OF_MEMORY,
                          "ct_tensor_wrap: out of host memory for a block header: free some tensors");
  }
  block_init(b, place, ptr, nbytes, 0, NULL);
  b->external = true;
  b->release = release;
  b->release_ctx = ctx;
  return b;
}

/* Returns an allocator-made block's memory and counts it out of d. */
static inline __attribute__((always_inline)) void block_free_to(domain *d, ct__block *b) {
  b->allocator.free(b->allocator.ctx, b->ptr, b->reserved);
  stats_free(d, b->nbytes, b->reserved);
}

static CT__COLD void block_free_device(ct__block *b) {
  domain *d = device_domain(b->place);
  if (b->allocator.free != NULL) {
    block_free_to(d, b);
    return;
  }
  ct__cuda_release(b->place.device, b->handle); /* the pool counts its reserved bytes */
  stats_free(d, b->nbytes, 0);
}

void ct__block_free_last(ct__block *b) {
  if (CT__UNLIKELY(atomic_load_explicit(&ct__observed, memory_order_relaxed)) && !b->external) {
    ct__observe(b, false, NULL);
  }
  if (CT__LIKELY(b->coalloc)) {
    domain *d = &host_domain;
    size_t reserved = b->reserved, total = CT__BLOCK_HEADER + reserved;
    if (CT__UNLIKELY(total >= CT__HOST_CACHE_MIN)) {
      stats_free(d, b->nbytes, 0); /* the cache keeps the memory: still reserved */
      stats_unreserve(d, ct__host_cache_put(b, total));
      return;
    }
    stats_free(d, b->nbytes, reserved);
    ct__small_free(b, total);
    return;
  }
  if (b->external) {
    if (b->release) b->release(b->release_ctx);
  } else if (CT__LIKELY(b->place.kind == CT_DEVICE_CPU)) {
    block_free_to(&host_domain, b);
  } else {
    block_free_device(b);
  }
  ct__free_sized(b, sizeof *b);
}

ct_status ct__memcpy(void *dst, ct_place dst_place, const void *src, ct_place src_place, size_t n) {
  /* Between host places (cpu, cuda_host) a plain move; callers checked the places. */
  if (CT__LIKELY(dst_place.kind != CT_DEVICE_CUDA && src_place.kind != CT_DEVICE_CUDA)) {
    if (n > 0) memmove(dst, src, n);
    return CT_OK;
  }
  return ct__cuda_memcpy(dst, dst_place, src, src_place, n);
}
