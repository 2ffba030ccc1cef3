/* core/memory/memory.c: per-place allocators and stats, and reference-counted blocks. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "memory/memory_impl.h"

/* A place's allocator and stats. The lock guards the stats only; the allocator is set while no
 * other thread allocates on the place (ct_set_allocator's documented rule). */
typedef struct domain {
  _Atomic int lock;
  ct_memory_stats stats;
  ct_allocator allocator;
} domain;

static domain host_domain = {.lock = 0, .allocator = {NULL, NULL, NULL}};

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

ct_status ct__place_check(ct_place place, const char *what) {
  char p[CT__PLACE_STR_CAP];
  if (!ct__place_valid(place)) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "%s: %s is not a place: use ct_cpu(), ct_cuda(n) or ct_cuda_host()", what,
                     ct_place_str(place, p, sizeof p));
  }
  if (place.kind != CT_DEVICE_CPU) {
    return ct__error(CT_ERR_UNSUPPORTED,
                     "%s: place %s is not available: corten was built without CUDA, use ct_cpu()",
                     what, ct_place_str(place, p, sizeof p));
  }
  return CT_OK;
}

/* The domain of a supported place; NULL with the error recorded otherwise. */
static domain *domain_of(ct_place place, const char *what) {
  if (ct__place_check(place, what) != CT_OK) return NULL;
  return &host_domain;
}

static const ct_allocator *domain_allocator(const domain *d) {
  return d->allocator.alloc ? &d->allocator : &ct__host_allocator;
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
  return CT_OK;
}

void ct_memory_reset_peak(ct_place place) {
  if (!ct__place_valid(place) || place.kind != CT_DEVICE_CPU) return;
  domain_lock(&host_domain);
  host_domain.stats.peak = host_domain.stats.allocated;
  domain_unlock(&host_domain);
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

ct__block *ct__block_alloc(ct_place place, size_t nbytes) {
  domain *d = &host_domain; /* the only place ct__place_check lets through in this build */
  size_t reserved = nbytes == 0 ? CT__BLOCK_ALIGN : (nbytes + CT__BLOCK_ALIGN - 1) & ~(CT__BLOCK_ALIGN - 1);
  ct__block *b = ct__alloc(sizeof *b);
  if (b == NULL) return NULL;
  const ct_allocator *a = domain_allocator(d);
  void *ptr = a->alloc(a->ctx, reserved, CT__BLOCK_ALIGN);
  if (ptr == NULL) {
    ct__free(b, sizeof *b);
    return NULL;
  }
  atomic_init(&b->refs, 1);
  b->external = false;
  b->place = place;
  b->ptr = ptr;
  b->nbytes = nbytes;
  b->reserved = reserved;
  b->allocator = *a;
  b->release = NULL;
  b->release_ctx = NULL;

  domain_lock(d);
  d->stats.allocated += nbytes;
  d->stats.reserved += reserved;
  d->stats.allocs++;
  if (d->stats.allocated > d->stats.peak) d->stats.peak = d->stats.allocated;
  domain_unlock(d);
  return b;
}

ct_status ct__block_oom(const char *what, ct_place place, size_t nbytes) {
  char p[CT__PLACE_STR_CAP];
  return ct__error(CT_ERR_OUT_OF_MEMORY,
                   "%s: the %s allocator could not provide %zu bytes: free some tensors or use "
                   "smaller dims",
                   what, ct_place_str(place, p, sizeof p), nbytes);
}

ct__block *ct__block_wrap(void *ptr, size_t nbytes, ct_place place, void (*release)(void *),
                          void *ctx) {
  ct__block *b = ct__alloc(sizeof *b);
  if (b == NULL) {
    return ct__error_null(CT_ERR_OUT_OF_MEMORY,
                          "ct_tensor_wrap: out of host memory for a block header: free some tensors");
  }
  atomic_init(&b->refs, 1);
  b->external = true;
  b->place = place;
  b->ptr = ptr;
  b->nbytes = nbytes;
  b->reserved = 0;
  memset(&b->allocator, 0, sizeof b->allocator);
  b->release = release;
  b->release_ctx = ctx;
  return b;
}

void ct__block_free_last(ct__block *b) {
  if (b->external) {
    if (b->release) b->release(b->release_ctx);
  } else {
    domain *d = &host_domain; /* the only place blocks are allocated on in this build */
    b->allocator.free(b->allocator.ctx, b->ptr, b->reserved);
    domain_lock(d);
    d->stats.allocated -= b->nbytes;
    d->stats.reserved -= b->reserved;
    d->stats.frees++;
    domain_unlock(d);
  }
  ct__free(b, sizeof *b);
}

ct_status ct__memcpy(void *dst, ct_place dst_place, const void *src, ct_place src_place, size_t n) {
  (void)dst_place;
  (void)src_place; /* host to host is the only pair in this build; callers checked the places */
  if (n > 0) memmove(dst, src, n);
  return CT_OK;
}
