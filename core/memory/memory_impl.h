/* SPDX-License-Identifier: Apache-2.0 */
/* core/memory/memory_impl.h: blocks of tensor memory and the per-place domains they come from.
 *
 * A block is one allocation (or one wrapped external buffer) with a reference count; every
 * tensor viewing it holds one reference. An owned block remembers the allocator that made it, so
 * it goes back there even after ct_set_allocator swapped the place's allocator. Stats are kept
 * per place under a small spinlock: one atomic exchange per allocation and per free. */
#ifndef CORTEN_CORE_MEMORY_IMPL_H
#define CORTEN_CORE_MEMORY_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>

#include <corten/memory.h>

#include "common/common.h"

/* Alignment of every tensor block, and the granule its size is rounded up to. */
#define CT__BLOCK_ALIGN ((size_t)64)

typedef struct ct__block {
  _Atomic size_t refs;
  bool external;
  bool read_only;  /* external blocks lent read-only (DLPack's flag): never written through */
  _Atomic uint32_t frozen; /* executors holding it as a constant (ct_executor_options.constants):
                              while non-zero it is read-only too (ct__block_read_only) */
  _Atomic bool op_view; /* an op (reshape and its kin, ct__share_as) made a view of this block:
                           while it is shared, an op that writes it takes a block of its own
                           (ops/prep.c); relaxed loads and stores, by any thread holding it */
  bool coalloc;    /* host blocks of the default allocator: this header and the data are one
                      allocation, the data CT__BLOCK_HEADER bytes after the header */
  ct_place place;
  void *ptr;
  size_t nbytes;   /* bytes the first owner asked for: the block's capacity */
  size_t reserved; /* bytes taken from the allocator (nbytes rounded up to CT__BLOCK_ALIGN) */
  ct_allocator allocator;         /* owned blocks: where the memory goes back; all NULL for a
                                     block of a CUDA device's caching pool */
  void *handle;                   /* pool blocks: the pool's chunk */
  void (*release)(void *ctx);     /* external blocks: the owner's release, may be NULL */
  void *release_ctx;
} ct__block;

/* Whether b must not be written through: lent read-only, or held as a constant by a live
 * executor. */
static inline bool ct__block_read_only(const ct__block *b) {
  return b->read_only || atomic_load_explicit(&b->frozen, memory_order_relaxed) != 0;
}

/* Why b is read-only, for the messages of the calls that refuse to write it. */
static inline const char *ct__block_read_only_why(const ct__block *b) {
  return b->read_only ? "views memory its producer lent read-only (a DLPack tensor flagged "
                        "read-only)"
                      : "is a constant of a live executor (ct_executor_options.constants): "
                        "free that executor first";
}

/* The bytes a co-allocated header takes in front of its data (alignment kept). */
#define CT__BLOCK_HEADER ((sizeof(ct__block) + CT__BLOCK_ALIGN - 1) & ~(CT__BLOCK_ALIGN - 1))

/* A new owned block of nbytes (at most INT64_MAX) at place (refs 1), counted in the place's
 * stats. The place must have passed ct__place_check. NULL when the allocator (or the header's
 * malloc) fails: nothing is recorded, the caller reports CT_ERR_OUT_OF_MEMORY naming its object,
 * so the allocation path formats no text. (On a CUDA place a failure other than a lack of memory
 * is kept aside, and ct__block_oom reports it as CT_ERR_DEVICE.) */
ct__block *ct__block_alloc(ct_place place, size_t nbytes);
/* The same for tensor t (named to an allocation observer when a variable holds t). */
ct__block *ct__block_alloc_for(ct_place place, size_t nbytes, const void *t);

/* ---- Allocation observers (core/memory/observer.c, corten/memory.h) --------------------------
 * ct__observed: an observer is set (read inline, relaxed, on every block allocation and free).
 * ct__observe: tells the observer about b, allocated (tensor: the tensor it is for, or NULL) or
 * about to be freed. The namer is the calling thread's: ops (the executor, ct_op_run) set one
 * while an op runs when an observer is set, to name the variable holding a tensor and the op. */
#include <stdatomic.h>
extern _Atomic bool ct__observed;
void ct__observe(ct__block *b, bool alloc, const void *tensor);
typedef const char *(*ct__alloc_namer)(const void *arg, const void *tensor, const char **op);
void ct__memory_set_namer(ct__alloc_namer fn, const void *arg);

/* A place's allocated bytes and allocation count without its stats lock (each exact as of
 * some moment, the two not read together); zeros for a place without a domain. For the
 * profiler, which reads them around every op. */
void ct__memory_counts(ct_place place, size_t *allocated, uint64_t *allocs);

/* Records CT_ERR_OUT_OF_MEMORY for a block of nbytes at place that `what` needed (or the
 * CT_ERR_DEVICE that made a CUDA-place allocation fail); returns it. */
ct_status ct__block_oom(const char *what, ct_place place, size_t nbytes);

/* A block over caller memory (refs 1); not counted in stats. A NULL ptr (only for 0 bytes)
 * points the block at a placeholder. NULL with CT_ERR_OUT_OF_MEMORY when the header cannot be
 * allocated (release is then not called). */
ct__block *ct__block_wrap(void *ptr, size_t nbytes, ct_place place, void (*release)(void *),
                          void *ctx);

static inline void ct__block_retain(ct__block *b) {
  atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
}

/* Frees the block when this was its last reference. */
void ct__block_free_last(ct__block *b);

/* Drops one reference. The sole holder skips the atomic read-modify-write: no other thread can
 * hold a reference to add one concurrently. NULL: no-op. */
static inline void ct__block_release(ct__block *b) {
  if (b == NULL) return;
  if (atomic_load_explicit(&b->refs, memory_order_acquire) == 1 ||
      atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1) {
    ct__block_free_last(b);
  }
}

/* Whether this block has exactly one holder. */
static inline bool ct__block_unique(const ct__block *b) {
  return atomic_load_explicit((_Atomic size_t *)&b->refs, memory_order_acquire) == 1;
}

/* Checks that memory can live at place in this build: CT_OK, or the error recorded
 * (CT_ERR_INVALID_ARGUMENT for an invalid place, CT_ERR_UNSUPPORTED for one not built in). */
ct_status ct__place_check(ct_place place, const char *what);

/* Copies n bytes between two places (both supported in this build): memmove between host
 * places, the CUDA runtime (synchronously, on the current stream) when a device is involved.
 * CT_OK, or CT_ERR_DEVICE recorded. */
ct_status ct__memcpy(void *dst, ct_place dst_place, const void *src, ct_place src_place, size_t n);

/* Counts add bytes into the host's reserved and sub out of it (memory.c): the scratch buffers'
 * growth and release. */
void ct__host_reserve(size_t add, size_t sub);

/* Frees every thread's scratch buffer that is not taken (scratch.c); the bytes freed, which the
 * caller counts out of the host's reserved. */
size_t ct__scratch_empty(void);

/* The default host allocator (jemalloc, or aligned_alloc in a sanitizer build). */
extern const ct_allocator ct__host_allocator;

/* Its memory without the fault-injection hook (the caller asks ct__fault): size bytes (a
 * multiple of CT__BLOCK_ALIGN) at CT__BLOCK_ALIGN, NULL when the allocator fails; and back. */
void *ct__host_mem_alloc(size_t size);
void ct__host_mem_free(void *ptr, size_t size);

/* Transparent huge pages for long-lived host data read whole at every run (the kernels' kept
 * packed weights, ops/consts.c): ct__block_advise_huge asks the kernel (madvise MADV_HUGEPAGE)
 * to back the 2 MiB pages lying wholly inside block b's data with huge pages when b is a host
 * block of corten's default allocator (coalloc: never memory a caller's allocator gave) of
 * CT__HUGE_MIN bytes or more, so that reading it misses the TLB once per 2 MiB instead of once
 * per 4 KiB (resnet18 at batch 1 on one thread, its 30 MB of kept packings so: 2-4% less time,
 * minima and medians alternating in one process). Best effort, never an error: nothing where
 * the system has no THP or set it to "never", and pages already faulted in stay small until the
 * kernel's khugepaged merges them. ct__huge_interior gives that range: its start and length (0:
 * none). */
#define CT__HUGE_PAGE ((uintptr_t)2 << 20)
#define CT__HUGE_MIN ((size_t)4 << 20)
void ct__huge_interior(uintptr_t p, size_t bytes, uintptr_t *at, size_t *len);
void ct__block_advise_huge(const ct__block *b);

/* The cache of large host blocks (host_cache.c): a co-allocated block (header and data) of at
 * least CT__HOST_CACHE_MIN bytes goes there when freed, and the cache keeps at most its limit
 * (CT__HOST_CACHE_LIMIT by default, CORTEN_HOST_CACHE_LIMIT from the environment, or
 * ct_memory_set_cache_limit's), giving the least recently freed back to the allocator first. */
#define CT__HOST_CACHE_MIN ((size_t)64 << 10)
#define CT__HOST_CACHE_LIMIT ((size_t)256 << 20)

/* Memory of at least size bytes (header and data) and less than twice that the cache kept, its
 * size in *got; NULL when it has none. */
void *ct__host_cache_take(size_t size, size_t *got);

/* Keeps mem (size bytes, from ct__host_allocator); returns the data bytes (each block less its
 * header, as `reserved` counts them) of the blocks it gave back to the allocator to make room,
 * mem itself when it is larger than the whole cache. */
size_t ct__host_cache_put(void *mem, size_t size);

/* Gives every cached block back to the allocator; returns their data bytes. */
size_t ct__host_cache_empty(void);

/* Sets the cache's limit in bytes (0: keep nothing), giving the least recently freed blocks
 * back until the cache fits it; returns their data bytes. */
size_t ct__host_cache_set_limit(size_t bytes);

/* The cache's limit (the environment's, read at the first use, or the last one set). */
size_t ct__host_cache_limit(void);

/* The most a thread's cache of small host memory (thread_cache.c) keeps: its budget, or the host
 * cache's limit when that is lower. */
#define CT__THREAD_CACHE_BYTES ((size_t)256 << 10)

/* Makes every thread give its cache of small host memory back to the allocator: the calling
 * thread now, the others at their next small allocation or free (when they also read their
 * budget again). */
void ct__thread_caches_empty(void);

/* Test hooks: the bytes the calling thread's cache holds, and the bytes exiting threads' caches
 * gave back since the process started. */
size_t ct__thread_cache_bytes(void);
size_t ct__thread_cache_released_at_exit(void);

/* Reads a limit written as decimal digits with an optional K, M or G suffix (powers of 1024,
 * either case) and nothing else: "0", "65536", "512M", "2G". false for anything else (empty,
 * a sign, spaces, another suffix, a value past SIZE_MAX), *out then untouched. */
bool ct__host_cache_parse_limit(const char *text, size_t *out);

#endif /* CORTEN_CORE_MEMORY_IMPL_H */
