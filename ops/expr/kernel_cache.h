/* SPDX-License-Identifier: Apache-2.0 */
/* ops/expr/kernel_cache.h: the on-disk cache of compiled expression kernels (for the device
 * engine that compiles ops/expr/expr_source.c's sources at run time).
 *
 * An entry is one file, "<16 hex digits>.ctk" (FNV-1a of the key), holding a header (magic,
 * key length, binary length, an FNV-1a checksum of both), the key itself and the binary. The
 * key is the kernel's whole source plus what else its binary depends on (the target
 * architecture, the compiler's version), so an entry is found only by the exact key that made
 * it. Anything that does not check out (short file, other magic, other key, other length, other
 * checksum) is a miss and the file is removed: a corrupt entry is recompiled, never trusted.
 * Writes go to a temporary file renamed into place, so a reader sees a whole entry or none; after
 * each write the oldest entries (by modification time; a hit touches its file) go until the
 * directory's entries total at most the bound. The cache only saves time: its failures are
 * never errors of the caller. */
#ifndef CORTEN_OPS_EXPR_KERNEL_CACHE_H
#define CORTEN_OPS_EXPR_KERNEL_CACHE_H

#include <stdbool.h>
#include <stddef.h>

/* The default bound of the directory's entries, in bytes (CORTEN_KERNEL_CACHE_MAX_MB sets
 * another). */
#define CT__KCACHE_MAX_BYTES ((size_t)64 << 20)

/* The cache directory into buf: $CORTEN_KERNEL_CACHE when set (empty or "off": no disk cache),
 * else $XDG_CACHE_HOME/corten/kernels, else $HOME/.cache/corten/kernels. false when there is
 * none (disabled, no home, or a path longer than cap). */
bool ct__kcache_dir(char *buf, size_t cap);

/* The bound: CORTEN_KERNEL_CACHE_MAX_MB megabytes when set to a number, else the default. */
size_t ct__kcache_max_bytes(void);

/* The binary stored under key in dir, malloc'ed, its size in *n; NULL on a miss (no entry, an
 * entry that does not check out, which is removed, or no memory). */
void *ct__kcache_load(const char *dir, const char *key, size_t *n);

/* Stores bin (n bytes) under key in dir, creating dir (and its parents) when missing, then
 * trims the directory to max_bytes. 0, or -1 when the entry could not be written. */
int ct__kcache_store(const char *dir, const char *key, const void *bin, size_t n,
                     size_t max_bytes);

#endif /* CORTEN_OPS_EXPR_KERNEL_CACHE_H */
