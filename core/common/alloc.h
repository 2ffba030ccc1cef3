/* SPDX-License-Identifier: Apache-2.0 */
/* core/common/alloc.h: corten's own small allocations (variables, tensor headers, block headers,
 * DLPack export records; scope tables come from the C library). They come from jemalloc's sized
 * API when the process has jemalloc (see core/memory/host_allocator.c: the choice is made once,
 * when the library is loaded), so they take its thread-cache fast path whatever malloc the
 * process resolved; otherwise, and in a sanitizer build, from the C library. Pair
 * ct__alloc/ct__calloc with ct__free(p, size) and the same size. */
#ifndef CORTEN_CORE_ALLOC_H
#define CORTEN_CORE_ALLOC_H

#include <stdlib.h>

/* jemalloc's mallocx and sdallocx when the process had jemalloc loaded as corten was loaded;
 * both NULL otherwise (and always in a build without CORTEN_HAVE_JEMALLOC). Set once, before any
 * corten allocation, never changed after. */
typedef struct ct__jemalloc_api {
  void *(*mallocx)(size_t size, int flags);
  void (*sdallocx)(void *ptr, size_t size, int flags);
} ct__jemalloc_api;
extern ct__jemalloc_api ct__je;

/* jemalloc's flag bits (its <jemalloc/jemalloc.h>, stable since 4.0): zero-fill, and an
 * alignment given as its base-2 logarithm. */
#define CT__MALLOCX_ZERO 0x40
#define CT__MALLOCX_LG_ALIGN(lg) ((int)(lg))

static inline void *ct__alloc(size_t size) {
  return ct__je.mallocx != NULL ? ct__je.mallocx(size, 0) : malloc(size);
}
static inline void *ct__calloc(size_t size) {
  return ct__je.mallocx != NULL ? ct__je.mallocx(size, CT__MALLOCX_ZERO) : calloc(1, size);
}
static inline void ct__free(void *p, size_t size) {
  if (p == NULL) return;
  if (ct__je.sdallocx != NULL) {
    ct__je.sdallocx(p, size, 0);
  } else {
    free(p);
  }
}

#endif /* CORTEN_CORE_ALLOC_H */
