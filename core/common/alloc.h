/* SPDX-License-Identifier: Apache-2.0 */
/* core/common/alloc.h: the one door for corten's own allocations. Every allocation in core/ and
 * ops/ goes through these (tensor blocks of the default host allocator ask ct__fault too), so a
 * fault-injection build (CORTEN_FAULT_INJECTION, core/common/fault.h) can fail any of them.
 *
 * Two families:
 * - sized, for the hot small objects (variables, tensor and block headers, DLPack export
 *   records): ct__alloc / ct__zalloc with ct__free_sized(p, size) and the same size. They come
 *   from jemalloc's sized API when the process has jemalloc (core/memory/host_allocator.c makes
 *   the choice once, when the library is loaded), so they take its thread-cache fast path
 *   whatever malloc the process resolved; otherwise, and in a sanitizer build, from the C
 *   library.
 * - small, 64-byte aligned and kept per thread when freed: ct__small_alloc / ct__small_free.
 * - C library: ct__malloc, ct__calloc, ct__realloc, ct__strdup, ct__strndup,
 *   ct__aligned_alloc, released with free() (or ct__realloc). A failed ct__realloc leaves the
 *   old block as it was, like realloc.
 * - scratch, one buffer per thread kept between calls (core/memory/scratch.c): ct__scratch_take
 *   and ct__scratch_give_back. */
#ifndef CORTEN_CORE_ALLOC_H
#define CORTEN_CORE_ALLOC_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/fault.h"

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
  if (ct__fault()) return NULL;
  return ct__je.mallocx != NULL ? ct__je.mallocx(size, 0) : malloc(size);
}
static inline void *ct__zalloc(size_t size) {
  if (ct__fault()) return NULL;
  return ct__je.mallocx != NULL ? ct__je.mallocx(size, CT__MALLOCX_ZERO) : calloc(1, size);
}
static inline void ct__free_sized(void *p, size_t size) {
  if (p == NULL) return;
  if (ct__je.sdallocx != NULL) {
    ct__je.sdallocx(p, size, 0);
  } else {
    free(p);
  }
}

/* Small host memory, 64-byte aligned: size a multiple of 64 below 64 KiB, released with
 * ct__small_free and the same size. Served by the calling thread's cache of such memory first
 * (core/memory/thread_cache.c), then by the default host allocator; every request asks
 * ct__fault, hit or miss. For the host blocks of tensors and standalone variables. */
void *ct__small_alloc(size_t size);
void ct__small_free(void *p, size_t size);

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
/* The calling thread's scratch buffer, at least `bytes` long and 64-byte aligned, the caller's
 * until it calls ct__scratch_give_back; NULL when out of memory, or for a second take on the
 * thread before the give_back (nothing recorded: the caller says what needed it). The buffer is kept between
 * takes and grows to the largest request; its bytes count in the host's `reserved`;
 * ct_memory_empty_cache frees every thread's buffer that is not taken. The buffers come from the
 * C library, never from a place's replaced allocator (they are not tensor memory), so with one
 * installed the host's reserved is what it handed out plus ct__scratch_total. ct__scratch_held:
 * the calling thread's buffer's size (0 when it has none); ct__scratch_total: all threads'. */
void *ct__scratch_take(size_t bytes);
void ct__scratch_give_back(void);
size_t ct__scratch_held(void);
size_t ct__scratch_total(void);
/* The same per slot: each thread has CT__SCRATCH_SLOTS buffers, taken and given back apart:
 * the GEMM's (what ct__scratch_take takes) and a kernel's working space around its GEMMs
 * (im2col's columns, Winograd's transforms), so the two nest. ct__scratch_give_back_if gives
 * back the slot when p is its buffer and it is taken, and says whether it did (a caller that
 * fell back to ct__malloc frees p itself). */
enum { CT__SCRATCH_GEMM = 0, CT__SCRATCH_WORK = 1, CT__SCRATCH_SLOTS = 2 };
void *ct__scratch_take_in(int slot, size_t bytes);
void ct__scratch_give_back_in(int slot);
bool ct__scratch_give_back_if(int slot, const void *p);
size_t ct__scratch_held_in(int slot);
/* bytes of a kernel's working space around its GEMMs: the calling thread's CT__SCRATCH_WORK
 * buffer, or the C library's memory when that is taken (a kernel nested in another's pieces);
 * NULL when out of memory (nothing recorded: the kernel names itself). ct__work_free gives it
 * back either way (NULL: nothing). */
void *ct__work_take(size_t bytes);
void ct__work_free(void *p);

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
