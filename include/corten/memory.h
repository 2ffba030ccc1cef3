/* SPDX-License-Identifier: Apache-2.0 */
/* corten/memory.h: where tensor memory comes from, and how much of it there is.
 *
 * Each place has an allocator. Host memory (CT_DEVICE_CPU) comes from jemalloc when the process
 * has it (a program linked with jemalloc, as corten's own programs are), else from the C
 * library (a library opened with dlopen, Python's ctypes say: see ct_host_allocator_name), 64-byte
 * aligned. Every tensor block is requested from the allocator rounded up to a multiple of 64
 * bytes (so a vector kernel may touch a whole last cache line), and a zero-byte tensor still
 * gets a 64-byte block so that its data pointer is valid.
 *
 * CUDA places (corten/cuda.h): device memory (ct_cuda(i)) comes from a caching allocator per
 * device, in multiples of 512 bytes; page-locked host memory (ct_cuda_host()) from cudaHostAlloc,
 * rounded like host memory. Their stats follow the same rules: allocated counts what tensors asked
 * for, reserved what is held from the driver, the device cache included. In a build without CUDA
 * those places report CT_ERR_UNSUPPORTED, on a machine without a GPU CT_ERR_DEVICE.
 *
 * The stats of a place count exactly what tensors hold there: a test can assert that nothing
 * was allocated before the first ct_tensor_mutable_data, and exactly how much after.
 *
 * Thread-safety: reading and resetting the stats may run from any thread at any time;
 * ct_set_allocator may not (see there). */
#ifndef CORTEN_MEMORY_H
#define CORTEN_MEMORY_H

#include <stdbool.h>
#include <stddef.h>

#include <corten/status.h>
#include <corten/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The figures of one place, as ct_memory_stats_get reads them. */
typedef struct ct_memory_stats {
  size_t allocated;       /* bytes tensors asked for and now hold on this place (before rounding) */
  size_t peak;            /* high-water mark of allocated since start or the last reset */
  size_t reserved;        /* bytes held from the system/driver (rounded), cached blocks included */
  uint64_t allocs, frees; /* counts of blocks handed out and returned */
} ct_memory_stats;

/* Fills *out with the place's current stats. Thread-safe; the figures are read together under
 * the place's stats lock, so they are consistent with each other.
 * Errors (*out untouched):
 *   CT_ERR_INVALID_ARGUMENT  out is NULL, or place is not a valid place
 *   CT_ERR_UNSUPPORTED       a place this build cannot allocate on (CUDA without CUDA)
 *   CT_ERR_DEVICE            a CUDA place without such a device */
CT_API ct_status ct_memory_stats_get(ct_place place, ct_memory_stats *out);

/* Sets the place's peak to its current allocated. Does nothing for a place without stats (an
 * invalid place, or a device this build or machine lacks); never fails. Thread-safe. */
CT_API void ct_memory_reset_peak(ct_place place);

/* Gives the memory the place keeps for reuse back to the system: reserved drops to what live
 * tensors take. The host keeps freed tensor blocks of 64 KiB and more (up to its cache limit in
 * all, 256 MiB by default, the least recently freed going first beyond that; see
 * ct_memory_set_cache_limit), so that a block allocated again at exactly the same size costs no
 * page faults, and each thread's kernel scratch buffer (the CPU matrix product's packing space,
 * a few MiB at most, on each thread that ran one; a buffer in use at the moment stays);
 * page-locked memory keeps nothing; a CUDA device gives back its
 * cache (that device's only; ct_cuda_empty_cache empties every device's). Thread-safe.
 * Errors: those of ct_memory_stats_get, and CT_ERR_DEVICE when a CUDA call fails. */
CT_API ct_status ct_memory_empty_cache(ct_place place);

/* Sets how many bytes of freed blocks the host's cache (see ct_memory_empty_cache) may keep;
 * 0 keeps none. Blocks past the new limit, the least recently freed first, are given back now
 * (reserved drops by their bytes); a block larger than the limit is never kept. The default is
 * 256 MiB, or the environment's CORTEN_HOST_CACHE_LIMIT, read once when the cache is first used:
 * decimal bytes with an optional K, M or G suffix (powers of 1024), e.g. "0", "512M", "2G". A
 * value not of that form (a sign, spaces, another suffix, too large for size_t) is ignored and
 * the default stands; nothing aborts. A call of this function wins over the environment.
 * Thread-safe.
 * Errors (the limit unchanged):
 *   CT_ERR_INVALID_ARGUMENT  place is not a valid place
 *   CT_ERR_UNSUPPORTED       a place other than ct_cpu() (CUDA devices cache in their own pool,
 *                            page-locked memory keeps nothing), or CUDA without CUDA
 *   CT_ERR_DEVICE            a CUDA place without such a device */
CT_API ct_status ct_memory_set_cache_limit(ct_place place, size_t bytes);

/* A replaceable allocator: pools, tracing, fault injection.
 * alloc returns size bytes aligned to align (a power of two, at least 64 for tensors), or NULL
 * on failure; free gets back the pointer and the same size. Both may be called from any thread.
 * ctx is passed through untouched. */
typedef struct ct_allocator {
  void *(*alloc)(void *ctx, size_t size, size_t align);
  void (*free)(void *ctx, void *ptr, size_t size);
  void *ctx;
} ct_allocator;

/* Replaces the allocator of a place (copied: *a need not outlive the call); NULL a restores the
 * default. On a CUDA device the replacement gets device-memory requests (multiples of 512 bytes,
 * align 256) in place of the caching allocator, and what it hands out counts as reserved. It
 * gets tensor memory only: the host's reserved also counts the threads' kernel scratch buffers
 * (see ct_memory_empty_cache), which come from the C library.
 * Blocks allocated before the call are returned to the allocator that made them, so replacing
 * an allocator while tensors hold memory is safe. The stats are kept across the swap.
 * Errors (the place keeps its allocator):
 *   CT_ERR_INVALID_ARGUMENT  place is not a valid place, or a has a NULL alloc or free
 *   CT_ERR_UNSUPPORTED       a place this build cannot allocate on
 *   CT_ERR_DEVICE            a CUDA place without such a device
 * Thread-safety: call it while no other thread is allocating on that place (at start-up, or
 * around a test). */
CT_API ct_status ct_set_allocator(ct_place place, const ct_allocator *a);

/* ---- Allocation observers: who allocates what ------------------------------------------------
 * An observer is called on every block a place's stats count, as it is allocated and as it is
 * freed, on the thread that does it: exactly the allocations and frees ct_memory_stats counts
 * (allocs, frees, and allocated moving by bytes), on every place. External buffers
 * (ct_tensor_wrap, DLPack) are not blocks of corten's and are not reported. */
typedef struct ct_memory_event {
  bool alloc;      /* true: a block was allocated; false: one is being freed */
  ct_place place;
  size_t bytes;    /* as allocated counts them (before rounding) */
  const char *var; /* an allocation for an op's variable (run by an executor or ct_op_run): its
                      name; NULL otherwise (a tensor the caller allocates, a copy, a free) */
  const char *op;  /* the type of the op running on this thread then, or NULL */
} ct_memory_event;

typedef void (*ct_memory_observer)(void *arg, const ct_memory_event *event);

/* Sets the observer (fn with arg; NULL fn removes it). The strings of an event are valid during
 * the call only. The observer must not allocate or free tensor memory itself.
 * Thread-safety: the observer is called from every thread that allocates; set it while no other
 * thread is allocating (as ct_set_allocator), and make fn thread-safe when several do. */
CT_API void ct_memory_set_observer(ct_memory_observer fn, void *arg);

/* Where the default host allocator gets memory in this process: "jemalloc" or "libc". Chosen
 * once, as the library is loaded: jemalloc when it is already in the process then (linked into
 * the program, or preloaded), the C library otherwise. corten never loads jemalloc itself: its
 * initial-exec thread-local storage does not fit in what glibc keeps for libraries opened later
 * with dlopen. Never NULL; always "libc" in a build without jemalloc (sanitizer builds). */
CT_API const char *ct_host_allocator_name(void);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_MEMORY_H */
