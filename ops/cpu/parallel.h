/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/parallel.h: the CPU kernels' parallel-for over index ranges, run on corten's own small
 * thread pool (ops/cpu/parallel.c; docs/design/threads.md says why and how).
 *
 * A kernel hands ct__parallel_for the number of items of its work and the fewest items worth a
 * thread (its grain); the call splits [0, n) into at most ct_get_num_threads() pieces of at
 * least grain items, runs one on the calling thread and the others on the pool, and returns
 * when all are done. Work below twice the grain, a one-thread setting, a call from inside a
 * piece or a call while another thread's kernel holds the pool run on the calling thread in one
 * piece, so small kernels pay one comparison. Where the pieces fall depends on the thread count:
 * a kernel whose result could depend on them (a floating-point reduction) splits its work into
 * pieces fixed by the sizes alone (CT__FIXED_PIECES) and combines them in order. */
#ifndef CORTEN_OPS_CPU_PARALLEL_H
#define CORTEN_OPS_CPU_PARALLEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Runs items [begin, end) of a kernel's work; ctx is the kernel's. */
typedef void (*ct__range_fn)(void *ctx, int64_t begin, int64_t end);

/* The largest context ct__parallel_for_job copies. */
#define CT__JOB_COPY_BYTES 40

/* Runs fn over [0, n) in pieces of at least grain items (pieces of 4096 items or more start on
 * multiples of 64 items, a cache line or more of any element type, so that two threads do not
 * write one line). copy: 0, or the size of ctx when the workers may run on a copy of it. */
void ct__parallel_split(int64_t n, int64_t grain, ct__range_fn fn, void *ctx, size_t copy);

/* Runs item `item` of a kernel's work with the buffers of piece `piece`. */
typedef void (*ct__item_fn)(void *ctx, int64_t item, int piece);

/* Runs fn on each item of [0, n), on at most `pieces` pieces (and threads): piece k starts with
 * its share of the items, [n k / pieces, n (k + 1) / pieces), in order, and a piece done with
 * its own takes the others' last items one at a time, so a thread that runs slower (a core
 * shared with another process, a part of the work that costs more) hands work to the others.
 * Each piece runs on one thread at a time and fn gets its number (below `pieces`), so a kernel
 * keeps one buffer per piece. For items that are independent and cost a few microseconds or
 * more: which thread runs an item changes from run to run, so an item's result must not
 * depend on it. Items run on the calling thread, piece 0, where ct__parallel_for would run
 * inline. */
void ct__parallel_items_split(int64_t n, int pieces, ct__item_fn fn, void *ctx);
static inline void ct__parallel_items(int64_t n, int pieces, ct__item_fn fn, void *ctx) {
  if (n < 2 || pieces < 2) { /* one piece: no thread count read, no pool code */
    for (int64_t i = 0; i < n; i++) fn(ctx, i, 0);
    return;
  }
  ct__parallel_items_split(n, pieces, fn, ctx);
}

/* Piece buffers at the same place from kernel to kernel. A kernel that keeps one buffer per
 * piece in one block of scratch puts piece p's at p ct__piece_stride(elems, es) elements, and
 * anything the pieces share after them, ct__pieces_elems(pieces, elems, es) elements in:
 * CT__PIECE_STRIDE bytes apart, or a multiple of it for larger buffers (which then move the
 * others' places for the next kernel). With the buffers elems apart, piece 1's buffer lay
 * wherever the kernel before had put part of piece 0's, or of its own, so a worker wrote lines
 * that the caller's cache held, and the other way round: the worker ran its half of
 * MobileNetV2's 56 x 56 blocks 5-10 % slower than the caller its own, whichever half and
 * whichever core. The stride is address space (counted in the scratch's reserved bytes, not
 * touched): only the pages a kernel writes are memory. */
#define CT__PIECE_STRIDE ((int64_t)2 << 20)
static inline int64_t ct__piece_stride(int64_t elems, size_t es) {
  const int64_t unit = CT__PIECE_STRIDE / (int64_t)es;
  return (elems + unit - 1) / unit * unit;
}
static inline int64_t ct__pieces_elems(int64_t pieces, int64_t elems, size_t es) {
  return pieces > 1 ? pieces * ct__piece_stride(elems, es) : pieces * elems;
}

/* Whether this thread runs a piece of a pool job: a ct__parallel_for from here runs inline, on
 * this thread alone (a kernel that sizes its work by the thread count should size it for one). */
bool ct__parallel_nested(void);

/* ct__parallel_for's own test of small work is inline: a one-piece kernel then calls its range
 * function directly (which the compiler can inline into it), not through the pool's code. */
static inline void ct__parallel_for(int64_t n, int64_t grain, ct__range_fn fn, void *ctx) {
  if ((grain > 0 ? n / grain : n) < 2) {
    fn(ctx, 0, n);
    return;
  }
  ct__parallel_split(n, grain, fn, ctx, 0);
}

#if defined(__GNUC__)
#define CT__JOB_ALIGN_CHECK(job) \
  _Static_assert(__alignof__(__typeof__(*(job))) <= 8, "a job aligned as the pool's copy is")
#else
#define CT__JOB_ALIGN_CHECK(job) ((void)0)
#endif
/* ct__parallel_for over a context *job of at most CT__JOB_COPY_BYTES (no member aligned past 8
 * bytes) that the pieces only read: the pool copies it into the cache line that announces the
 * job, so a worker reads the job and its context in one line transfer, not two (the context on
 * the caller's stack is in a line the caller has just written). A 32K float add over 2 threads:
 * 80 ns less a call (docs/design/threads.md). */
#define ct__parallel_for_job(n, grain, fn, job)                                         \
  do {                                                                                  \
    _Static_assert(sizeof *(job) <= CT__JOB_COPY_BYTES, "a job the pool can copy");     \
    CT__JOB_ALIGN_CHECK(job);                                                           \
    ct__parallel_for_copy((n), (grain), (fn), (job), sizeof *(job));                    \
  } while (0)
static inline void ct__parallel_for_copy(int64_t n, int64_t grain, ct__range_fn fn,
                                         const void *job, size_t size) {
  if ((grain > 0 ? n / grain : n) < 2) {
    fn((void *)job, 0, n);
    return;
  }
  ct__parallel_split(n, grain, fn, (void *)job, size);
}

/* Grains of the kernels, in elements: memory-bound arithmetic (a few bytes of traffic per
 * element) and a libm call per element. */
#define CT__GRAIN_MEM ((int64_t)1 << 14)
#define CT__GRAIN_MATH ((int64_t)1 << 11)

/* The number of pieces a reduction of n elements splits into, whatever the thread count: one
 * per 64K elements, at most 64 (each summed in its own lanes, the pieces then added in order). */
#define CT__FIXED_PIECES(n) \
  ((n) <= ((int64_t)1 << 16) ? 1 : (n) >= ((int64_t)64 << 16) ? 64 : (int)(((n) + 65535) >> 16))

/* Loops whose iterations are independent (an output element written from inputs at the same or
 * other indices only): vectorised without run-time alias checks even when Out is X. */
#define CT__SIMD _Pragma("omp simd")

#endif /* CORTEN_OPS_CPU_PARALLEL_H */
