/* SPDX-License-Identifier: Apache-2.0 */
/* core/memory/poison.h: the host caches' AddressSanitizer hooks. A cached block is poisoned past
 * the cache's own links, so a read through a pointer kept past the free is still reported; it is
 * unpoisoned when handed out or given back. Without AddressSanitizer both are no-ops. */
#ifndef CORTEN_CORE_MEMORY_POISON_H
#define CORTEN_CORE_MEMORY_POISON_H

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CT__CACHE_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define CT__CACHE_ASAN 1
#endif
#ifdef CT__CACHE_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#endif /* CORTEN_CORE_MEMORY_POISON_H */
