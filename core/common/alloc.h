/* SPDX-License-Identifier: Apache-2.0 */
/* core/common/alloc.h: the one door for corten's own allocations. Every allocation in core/ and
 * ops/ goes through these (tensor blocks of the default host allocator ask ct__fault too), so a
 * fault-injection build (CORTEN_FAULT_INJECTION, core/common/fault.h) can fail any of them.
 *
 * Two families:
 * - sized, for the hot small objects (variables, tensor and block headers, DLPack export
 *   records): ct__alloc / ct__zalloc with ct__free_sized(p, size) and the same size. They come
 *   from jemalloc's sized API when corten is built with it (its thread-cache fast path whatever
 *   malloc the process resolved); a sanitizer build uses the C library so that AddressSanitizer
 *   sees them.
 * - C library: ct__malloc, ct__calloc, ct__realloc, ct__strdup, ct__strndup,
 *   ct__aligned_alloc, released with free() (or ct__realloc). A failed ct__realloc leaves the
 *   old block as it was, like realloc. */
#ifndef CORTEN_CORE_ALLOC_H
#define CORTEN_CORE_ALLOC_H

#include <stdlib.h>
#include <string.h>

#include "common/fault.h"

#ifdef CORTEN_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>

static inline void *ct__alloc(size_t size) { return ct__fault() ? NULL : mallocx(size, 0); }
static inline void *ct__zalloc(size_t size) {
  return ct__fault() ? NULL : mallocx(size, MALLOCX_ZERO);
}
static inline void ct__free_sized(void *p, size_t size) {
  if (p != NULL) sdallocx(p, size, 0);
}
#else
static inline void *ct__alloc(size_t size) { return ct__fault() ? NULL : malloc(size); }
static inline void *ct__zalloc(size_t size) { return ct__fault() ? NULL : calloc(1, size); }
static inline void ct__free_sized(void *p, size_t size) {
  (void)size;
  free(p);
}
#endif

static inline void *ct__malloc(size_t size) { return ct__fault() ? NULL : malloc(size); }
static inline void *ct__calloc(size_t n, size_t size) {
  return ct__fault() ? NULL : calloc(n, size);
}
static inline void *ct__realloc(void *p, size_t size) {
  return ct__fault() ? NULL : realloc(p, size);
}
/* size a multiple of align (aligned_alloc's rule). */
static inline void *ct__aligned_alloc(size_t align, size_t size) {
  return ct__fault() ? NULL : aligned_alloc(align, size);
}
/* A copy of the first n bytes of s (fewer when s ends sooner), terminated. */
static inline char *ct__strndup(const char *s, size_t n) {
  size_t len = 0;
  while (len < n && s[len] != '\0') len++; /* strnlen, which ISO C lacks */
  char *c = ct__malloc(len + 1);
  if (c == NULL) return NULL;
  memcpy(c, s, len);
  c[len] = '\0';
  return c;
}
static inline char *ct__strdup(const char *s) { return ct__strndup(s, strlen(s)); }

#endif /* CORTEN_CORE_ALLOC_H */
