/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/stream.h: non-temporal ("streaming") stores for kernels whose output is larger than
 * the last-level cache (docs/design/threads.md, "Streaming stores").
 *
 * A plain store to a line that is not in the cache first reads the line from memory (read for
 * ownership) and writes it back later: an output written once costs two transfers. A streaming
 * store writes whole lines without reading them, so c = a + b over arrays far larger than the
 * cache moves 3 arrays' bytes instead of 4. The stored line also leaves the cache, which is why
 * only outputs larger than the last-level cache stream: a smaller one may be read again from the
 * cache by the next kernel. Streaming changes where bytes go, never their values.
 *
 * On x86-64 (SSE2 is the baseline) a kernel streams with ct__stream_* below; elsewhere
 * ct__stream_wanted is always false and the kernels store as usual. */
#ifndef CORTEN_OPS_CPU_STREAM_H
#define CORTEN_OPS_CPU_STREAM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The output size, in bytes, from which kernels stream (ops/cpu/parallel.c): the last-level
 * cache's size (sysfs, else the C library's figure, else 32 MiB). Read once; the kernels test
 * it inline, so a one-element op pays a load and a comparison. */
extern _Atomic size_t ct__stream_min; /* 0: not read yet */
size_t ct__stream_min_read(void);
static inline size_t ct__stream_min_bytes(void) {
  size_t n = atomic_load_explicit(&ct__stream_min, memory_order_relaxed);
  return n > 0 ? n : ct__stream_min_read();
}
/* Tests set it (0: the cache's size again), to take the streaming paths on small tensors. */
void ct__stream_set_min_bytes(size_t bytes);

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define CT__STREAM 1

static inline bool ct__stream_wanted(size_t out_bytes) {
  return out_bytes >= ct__stream_min_bytes();
}

/* Elements of o before its first 16-byte boundary (at most n): the ones a streaming loop
 * stores plainly. */
static inline int64_t ct__stream_head(const void *o, size_t es, int64_t n) {
  int64_t h = (int64_t)(((16 - ((uintptr_t)o & 15)) & 15) / es);
  return h < n ? h : n;
}

/* The SSE vector helpers of the streaming loops, picked by element type (float or double):
 * unaligned load, streaming store (16-byte aligned p), a scalar in every lane, and the vector
 * type of T. GCC's vector arithmetic (+ - * /) on these is the packed instruction, which rounds
 * as the scalar one (SSE2 has no FMA to contract into). */
#define CT__VLOAD(p)                                                               \
  _Generic((p), const float *: _mm_loadu_ps, float *: _mm_loadu_ps,               \
           const double *: _mm_loadu_pd, double *: _mm_loadu_pd)(p)
#define CT__VSTREAM(p, v) _Generic((p), float *: _mm_stream_ps, double *: _mm_stream_pd)((p), (v))
#define CT__VSET1(v) _Generic((v), float: _mm_set1_ps, double: _mm_set1_pd)(v)
#define CT__VTYPE(T) __typeof__(CT__VSET1((T)0))
/* relu on a vector, as the scalar a < 0 ? 0 : a: max(+0, a) returns its second operand, a, for
 * a NaN or a zero of either sign (NaN and -0 pass through, as onnxruntime's and PyTorch's). */
static inline __m128 ct__vrelu_ps(__m128 a) { return _mm_max_ps(_mm_setzero_ps(), a); }
static inline __m128d ct__vrelu_pd(__m128d a) { return _mm_max_pd(_mm_setzero_pd(), a); }
#define CT__VRELU(v) _Generic((v), __m128: ct__vrelu_ps, __m128d: ct__vrelu_pd)(v)
/* Elements per vector of T. */
#define CT__VLANES(T) ((int64_t)(16 / sizeof(T)))

/* The streaming loop over elements [b, e) of output o, with i the element index: SCALAR stores
 * element i plainly (before o's first 16-byte boundary past b and after the last whole vector),
 * VECTOR stores the vector of elements from i with CT__VSTREAM. The caller fences. */
#define CT__STREAM_LOOP(o, b, e, SCALAR, VECTOR)                                     \
  do {                                                                               \
    const int64_t lanes_ = CT__VLANES((o)[0]), e_ = (e);                             \
    int64_t i = (b), h_ = i + ct__stream_head((o) + i, sizeof((o)[0]), e_ - i);      \
    for (; i < h_; i++) SCALAR;                                                      \
    for (; i + lanes_ <= e_; i += lanes_) VECTOR;                                    \
    for (; i < e_; i++) SCALAR;                                                      \
  } while (0)

/* Streaming stores are weakly ordered: a piece that made any ends with this, before the pool
 * counts it done and another thread reads the output. */
static inline void ct__stream_fence(void) { _mm_sfence(); }

#else
#define CT__STREAM 0
static inline bool ct__stream_wanted(size_t out_bytes) {
  (void)out_bytes;
  return false;
}
static inline void ct__stream_fence(void) {}
#endif

#endif /* CORTEN_OPS_CPU_STREAM_H */
