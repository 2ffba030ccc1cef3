/* SPDX-License-Identifier: Apache-2.0 */
/* core/scope/scope_watch.h: objects bound to a scope that must learn when it is freed (an
 * executor holds pointers to the scope's variables). A watch is linked into its scope's list
 * (under the scope's lock); the teardown that frees the scope marks every watch of it gone, at
 * its first step, before any variable goes, and unlinks them all. The owner of a watch checks
 * `gone` before using what it holds, and removes the watch when it dies (a gone watch is no
 * longer linked: removing it touches nothing of the freed scope). Freeing a scope and removing
 * one of its watches must not run at once (the scope's one-thread rule). */
#ifndef CORTEN_CORE_SCOPE_WATCH_H
#define CORTEN_CORE_SCOPE_WATCH_H

#include <stdatomic.h>
#include <stdbool.h>

#include <corten/scope.h>

typedef struct ct__scope_watch {
  struct ct__scope_watch *prev, *next;
  ct_scope *scope; /* NULL once gone */
  _Atomic bool gone;
} ct__scope_watch;

/* Links w (zeroed, or removed before) into s's watches. */
void ct__scope_watch_add(ct_scope *s, ct__scope_watch *w);

/* Unlinks w from its scope unless the scope is gone (or w was never added). */
void ct__scope_watch_remove(ct__scope_watch *w);

/* Whether w's scope was freed. */
static inline bool ct__scope_watch_gone(const ct__scope_watch *w) {
  return atomic_load_explicit(&((ct__scope_watch *)w)->gone, memory_order_relaxed);
}

#endif /* CORTEN_CORE_SCOPE_WATCH_H */
