/* SPDX-License-Identifier: Apache-2.0 */
/* core/memory/host_allocator.c: the default host allocator, and the choice of jemalloc or the
 * C library, made once as the library is loaded.
 *
 * jemalloc's sized API: mallocx with the alignment flag, sdallocx with the same flag and the
 * size, which spares jemalloc a metadata lookup on free. The library does not link jemalloc:
 * Debian's libjemalloc uses initial-exec thread-local storage, which glibc can place only for
 * objects loaded with the program (a dlopen'ed libcorten.so that needed it failed with "cannot
 * allocate memory in static TLS block"). So a constructor asks the dynamic linker whether
 * jemalloc is already in the process (RTLD_NOLOAD: it never loads it) and takes its functions
 * when it is. Programs linked with jemalloc (corten's own tests, examples, tools and bench) get
 * jemalloc; Python and other dlopen users get the C library's aligned_alloc. Sanitizer builds
 * (no CORTEN_HAVE_JEMALLOC) always use the C library, so AddressSanitizer tracks every block. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#ifdef CORTEN_HAVE_JEMALLOC
#include <dlfcn.h>
#endif

#include <corten/memory.h>

#include "common/alloc.h"
#include "memory/memory_impl.h"

ct__jemalloc_api ct__je = {NULL, NULL};

#ifdef CORTEN_HAVE_JEMALLOC
/* Runs before any corten call can allocate: the program's own code, and every library that
 * needs libcorten, start after it. dlerror is read to leave no error pending for the caller's
 * next dlerror. */
__attribute__((constructor)) static void choose_host_allocator(void) {
  void *h = dlopen("libjemalloc.so.2", RTLD_NOW | RTLD_NOLOAD);
  if (h == NULL) {
    (void)dlerror();
    return;
  }
  ct__jemalloc_api api;
  *(void **)&api.mallocx = dlsym(h, "mallocx");
  *(void **)&api.sdallocx = dlsym(h, "sdallocx");
  if (api.mallocx != NULL && api.sdallocx != NULL) {
    ct__je = api; /* the handle is kept: jemalloc stays loaded while corten may use it */
  } else {
    (void)dlerror();
    dlclose(h);
  }
}
#endif

const char *ct_host_allocator_name(void) { return ct__je.mallocx != NULL ? "jemalloc" : "libc"; }

/* Memory of size bytes at alignment align, asking no fault injection (the callers do). */
static void *aligned_host(size_t size, size_t align) {
  if (ct__je.mallocx != NULL) {
    return ct__je.mallocx(size, CT__MALLOCX_LG_ALIGN(__builtin_ctzll(align)));
  }
  return aligned_alloc(align, size); /* size is a multiple of align: ct__block_alloc rounds */
}

void *ct__host_mem_alloc(size_t size) { return aligned_host(size, CT__BLOCK_ALIGN); }

/* The allocator interface passes no alignment to free; every tensor block is CT__BLOCK_ALIGN
 * aligned (ct__block_alloc asks for nothing else), which sdallocx needs to find the size class. */
void ct__host_mem_free(void *ptr, size_t size) {
  if (ct__je.sdallocx != NULL) {
    ct__je.sdallocx(ptr, size, CT__MALLOCX_LG_ALIGN(__builtin_ctzll(CT__BLOCK_ALIGN)));
  } else {
    free(ptr);
  }
}

static void *host_alloc(void *ctx, size_t size, size_t align) {
  (void)ctx;
  if (ct__fault()) return NULL;
  return aligned_host(size, align);
}

static void host_free(void *ctx, void *ptr, size_t size) {
  (void)ctx;
  ct__host_mem_free(ptr, size);
}

const ct_allocator ct__host_allocator = {.alloc = host_alloc, .free = host_free, .ctx = NULL};

void ct__huge_interior(uintptr_t p, size_t bytes, uintptr_t *at, size_t *len) {
  const uintptr_t page = CT__HUGE_PAGE;
  uintptr_t b = (p + page - 1) & ~(page - 1), e = (p + bytes) & ~(page - 1);
  *at = b;
  *len = e > b ? (size_t)(e - b) : 0;
}

void ct__block_advise_huge(const ct__block *b) {
#ifdef MADV_HUGEPAGE
  if (b == NULL || !b->coalloc || b->nbytes < CT__HUGE_MIN) return;
  uintptr_t at;
  size_t len;
  ct__huge_interior((uintptr_t)b->ptr, b->nbytes, &at, &len);
  if (len > 0) (void)madvise((void *)at, len, MADV_HUGEPAGE); /* best effort: see the header */
#else
  (void)b;
#endif
}
