/* SPDX-License-Identifier: Apache-2.0 */
/* core/cuda/cuda_pool.h: the caching pool behind device memory, apart from the driver.
 *
 * A pool serves one device. It takes segments from a backing allocator (cudaMalloc in corten, a
 * fake in the CPU test suite), carves them into chunks and keeps freed chunks for reuse:
 *   - sizes are rounded up to CT__POOL_ROUND (512 B);
 *   - requests up to CT__POOL_SMALL_MAX (1 MiB) live in the small pool, packed into 2 MiB
 *     segments; larger ones in the large pool, from 20 MiB segments when under 10 MiB, else from a
 *     segment of their own rounded up to 2 MiB;
 *   - the best fit among the free chunks (smallest that fits, lowest address on a tie) is split
 *     when the rest is worth keeping (any rest in the small pool, more than 1 MiB in the large);
 *   - a freed chunk merges with free neighbours of its segment;
 *   - every chunk belongs to a stream: a freed chunk is reused at once only by allocations on its
 *     own stream. Another stream gets it after an event recorded on the owning stream (after the
 *     free) has completed; such chunks become "clean" and serve any stream;
 *   - when the backing allocator runs out of memory, the pool synchronizes, returns every free
 *     segment and retries once before reporting CT_ERR_OUT_OF_MEMORY.
 * Plain C with no CUDA header: the driver calls are the backing's. Thread-safe: one mutex per
 * pool, held across the backing calls. See docs/design/cuda-memory.md. */
#ifndef CORTEN_CORE_CUDA_POOL_H
#define CORTEN_CORE_CUDA_POOL_H

#include <stddef.h>
#include <stdint.h>

#include <corten/status.h>

#define CT__POOL_ROUND ((size_t)512)
#define CT__POOL_SMALL_MAX ((size_t)1 << 20)           /* largest request of the small pool */
#define CT__POOL_SMALL_SEGMENT ((size_t)2 << 20)       /* segments of the small pool */
#define CT__POOL_MEDIUM_MAX ((size_t)10 << 20)         /* requests below this share ... */
#define CT__POOL_MEDIUM_SEGMENT ((size_t)20 << 20)     /* ... segments of this size */
#define CT__POOL_LARGE_GRANULE ((size_t)2 << 20)       /* larger requests round up to this */

/* Where a pool's memory and events come from. Every function gets ctx. Statuses other than
 * CT_OK and CT_ERR_OUT_OF_MEMORY are passed back to the pool's caller unchanged (the backing
 * records their message). */
typedef struct ct__pool_backing {
  /* size bytes (a multiple of 512) into *ptr: CT_OK, CT_ERR_OUT_OF_MEMORY (the pool then frees
   * its cache and retries once), or another failure. */
  ct_status (*alloc)(void *ctx, size_t size, void **ptr);
  ct_status (*free)(void *ctx, void *ptr, size_t size);
  /* Records a new event on stream (a backing stream handle) into *event. */
  ct_status (*event_record)(void *ctx, void *stream, void **event);
  /* 1 when the event has completed, 0 while pending, a negative ct_status on failure. */
  int (*event_query)(void *ctx, void *event);
  void (*event_free)(void *ctx, void *event);
  /* Waits until the device is idle: before cached segments go back, and to clean every chunk. */
  ct_status (*synchronize)(void *ctx);
  void *ctx;
} ct__pool_backing;

/* A stream as the pool sees it: id identifies it (ids are never reused; 0 is reserved), handle
 * is what the backing records events on. */
typedef struct ct__pool_stream {
  uint64_t id;
  void *handle;
} ct__pool_stream;

typedef struct ct__pool ct__pool;
typedef struct ct__pool_chunk ct__pool_chunk;

typedef struct ct__pool_stats {
  size_t reserved;          /* bytes of the segments held from the backing */
  size_t in_use;            /* bytes of the chunks handed out (rounded sizes) */
  size_t cached;            /* bytes of the free chunks: reserved - in_use */
  size_t segments;          /* segments held */
  size_t free_chunks;       /* free chunks, in every pool and stream */
  uint64_t backing_allocs;  /* successful backing alloc calls */
  uint64_t backing_frees;   /* backing free calls */
  uint64_t backing_failures;/* backing alloc calls that failed */
  uint64_t retries;         /* times the cache was freed to retry a failed backing alloc */
  uint64_t events;          /* events recorded to hand chunks across streams */
} ct__pool_stats;

/* Rounds a request up to the pool's granule (512 B); 0 becomes 512. SIZE_MAX-ish values that
 * would wrap give 0 (the pool refuses them). */
size_t ct__pool_round(size_t size);

/* A new empty pool over *backing (copied). NULL when out of host memory. */
ct__pool *ct__pool_new(const ct__pool_backing *backing);

/* Returns every segment to the backing and frees the pool. Chunks still handed out are lost
 * (their segments are freed too): call it only when nothing uses the pool. NULL: no-op. */
void ct__pool_free(ct__pool *p);

/* A chunk of at least size bytes for use on stream (id > 0): CT_OK with *out and *ptr set;
 * CT_ERR_OUT_OF_MEMORY when the backing cannot provide a segment even after the cache was
 * freed; CT_ERR_OUT_OF_MEMORY also when the host cannot hold the chunk's bookkeeping, or for a
 * size that cannot be rounded; CT_ERR_INVALID_ARGUMENT for stream id 0; or a backing failure's
 * status. */
ct_status ct__pool_alloc(ct__pool *p, size_t size, ct__pool_stream stream, ct__pool_chunk **out,
                         void **ptr);

/* Gives a chunk back: it is cached for its stream and merged with free neighbours. */
void ct__pool_release(ct__pool *p, ct__pool_chunk *c);

/* The rounded size of a chunk handed out. */
size_t ct__pool_chunk_size(const ct__pool_chunk *c);

/* Frees every cached segment (one whose chunks are all free): synchronizes first, so every
 * cached chunk is clean, then returns the segments. The first failure is returned; the pool
 * stays usable. */
ct_status ct__pool_empty_cache(ct__pool *p);

/* The stream is going away: its cached chunks become clean (usable on any stream) and chunks
 * handed out on it become clean when released. The caller has synchronized the stream. */
void ct__pool_stream_retire(ct__pool *p, uint64_t stream_id);

/* The pool's figures, read together under its lock. */
void ct__pool_get_stats(ct__pool *p, ct__pool_stats *out);

#endif /* CORTEN_CORE_CUDA_POOL_H */
