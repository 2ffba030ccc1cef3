/* SPDX-License-Identifier: Apache-2.0 */
/* core/common/alloc.h: corten's own small allocations (variables, tensor headers, block headers,
 * DLPack export records; scope tables come from the C library). They come from jemalloc's sized
 * API when corten is built with it, so they take its thread-cache fast path whatever malloc the
 * process resolved; a sanitizer build uses the C library so that AddressSanitizer sees them. Pair
 * ct__alloc/ct__calloc with ct__free(p, size) and the same size. */
#ifndef CORTEN_CORE_ALLOC_H
#define CORTEN_CORE_ALLOC_H

#include <stdlib.h>

#ifdef CORTEN_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>

static inline void *ct__alloc(size_t size) { return mallocx(size, 0); }
static inline void *ct__calloc(size_t size) { return mallocx(size, MALLOCX_ZERO); }
static inline void ct__free(void *p, size_t size) {
  if (p != NULL) sdallocx(p, size, 0);
}
#else
static inline void *ct__alloc(size_t size) { return malloc(size); }
static inline void *ct__calloc(size_t size) { return calloc(1, size); }
static inline void ct__free(void *p, size_t size) {
  (void)size;
  free(p);
}
#endif

#endif /* CORTEN_CORE_ALLOC_H */
