/* SPDX-License-Identifier: Apache-2.0 */
/* tests/alloc_count.h: counting the host allocations a stretch of code makes, for the suites
 * that promise "no allocation" (a second recurrent run, say).
 *
 * alloc_count() is a figure that grows with every allocation of the calling thread and stays
 * put otherwise; compare it before and after. How it is counted depends on the build:
 *   - a sanitizer build: the sanitizer's malloc hook counts every malloc, calloc, realloc and
 *     aligned allocation of the process;
 *   - a jemalloc build (CORTEN_HAVE_JEMALLOC): jemalloc's "thread.allocated", the bytes this
 *     thread ever allocated (jemalloc serves malloc there too, and corten's mallocx);
 *   - otherwise: malloc, calloc, realloc and aligned_alloc are wrapped here over glibc's own.
 * alloc_count_works() checks that the counter sees an allocation, so a test built where it
 * could not count fails instead of passing for nothing. */
#ifndef CORTEN_TESTS_ALLOC_COUNT_H
#define CORTEN_TESTS_ALLOC_COUNT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ALLOC_COUNT_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ALLOC_COUNT_SANITIZER 1
#endif

#if defined(ALLOC_COUNT_SANITIZER)
#include <sanitizer/allocator_interface.h>

static _Atomic uint64_t alloc_count_n;

static void alloc_count_on_malloc(const volatile void *p, size_t n) {
  (void)p;
  (void)n;
  atomic_fetch_add_explicit(&alloc_count_n, 1, memory_order_relaxed);
}

static void alloc_count_on_free(const volatile void *p) { (void)p; }

static inline uint64_t alloc_count(void) {
  static bool installed;
  if (!installed) {
    installed = __sanitizer_install_malloc_and_free_hooks(alloc_count_on_malloc,
                                                          alloc_count_on_free) != 0;
  }
  return atomic_load_explicit(&alloc_count_n, memory_order_relaxed);
}
#elif defined(CORTEN_HAVE_JEMALLOC)
#include <jemalloc/jemalloc.h>

static inline uint64_t alloc_count(void) {
  uint64_t v = 0;
  size_t sz = sizeof v;
  if (mallctl("thread.allocated", &v, &sz, NULL, 0) != 0) return 0;
  return v;
}
#else
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void *__libc_memalign(size_t align, size_t n);

static _Atomic uint64_t alloc_count_n;

void *malloc(size_t n) {
  atomic_fetch_add_explicit(&alloc_count_n, 1, memory_order_relaxed);
  return __libc_malloc(n);
}
void *calloc(size_t n, size_t size) {
  atomic_fetch_add_explicit(&alloc_count_n, 1, memory_order_relaxed);
  return __libc_calloc(n, size);
}
void *realloc(void *p, size_t n) {
  atomic_fetch_add_explicit(&alloc_count_n, 1, memory_order_relaxed);
  return __libc_realloc(p, n);
}
void *aligned_alloc(size_t align, size_t n) {
  atomic_fetch_add_explicit(&alloc_count_n, 1, memory_order_relaxed);
  return __libc_memalign(align, n);
}

static inline uint64_t alloc_count(void) {
  return atomic_load_explicit(&alloc_count_n, memory_order_relaxed);
}
#endif

/* Whether alloc_count sees an allocation made now. */
static inline bool alloc_count_works(void) {
  uint64_t before = alloc_count();
  void *volatile p = malloc(4096);
  uint64_t after = alloc_count();
  free(p);
  return after > before;
}

#endif /* CORTEN_TESTS_ALLOC_COUNT_H */
