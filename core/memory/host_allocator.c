/* SPDX-License-Identifier: Apache-2.0 */
/* core/memory/host_allocator.c: the default host allocator.
 *
 * jemalloc's sized API: mallocx with the alignment flag, sdallocx with the same flag and the
 * size, which spares jemalloc a metadata lookup on free. Without jemalloc (sanitizer builds) the
 * C library's aligned_alloc, so AddressSanitizer tracks every tensor block. */
#include <stdlib.h>

#include "common/fault.h"
#include "memory/memory_impl.h"

#ifdef CORTEN_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>

static void *host_alloc(void *ctx, size_t size, size_t align) {
  (void)ctx;
  if (ct__fault()) return NULL;
  return mallocx(size, MALLOCX_ALIGN(align));
}

/* The allocator interface passes no alignment to free; every tensor block is CT__BLOCK_ALIGN
 * aligned (ct__block_alloc asks for nothing else), which sdallocx needs to find the size class. */
static void host_free(void *ctx, void *ptr, size_t size) {
  (void)ctx;
  sdallocx(ptr, size, MALLOCX_ALIGN(CT__BLOCK_ALIGN));
}
#else
static void *host_alloc(void *ctx, size_t size, size_t align) {
  (void)ctx;
  if (ct__fault()) return NULL;
  return aligned_alloc(align, size); /* size is a multiple of align: ct__block_alloc rounds */
}

static void host_free(void *ctx, void *ptr, size_t size) {
  (void)ctx;
  (void)size;
  free(ptr);
}
#endif

const ct_allocator ct__host_allocator = {.alloc = host_alloc, .free = host_free, .ctx = NULL};
