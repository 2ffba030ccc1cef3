/* SPDX-License-Identifier: Apache-2.0 */
/* core/scope/scope_list.h: the link between a step scope and the list slot that names it.
 *
 * A scope named by a ct_scope_list records (list, index); the scope's teardown empties that slot
 * before anything else, and the list clears the record before it frees a scope itself. So the
 * list never names a freed scope and a scope is never freed twice, whatever goes first. */
#ifndef CORTEN_CORE_SCOPE_LIST_H
#define CORTEN_CORE_SCOPE_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <corten/scope.h>

/* Records that slot index of l names s (l NULL: s is named by no list). */
void ct__scope_set_list(ct_scope *s, ct_scope_list *l, size_t index);

/* The list naming s, NULL when none. */
ct_scope_list *ct__scope_get_list(const ct_scope *s);

/* Kid i of s in the order they were made, NULL past the last (the memory report's walk). */
ct_scope *ct__scope_kid(const ct_scope *s, size_t i);

/* Whether a teardown that frees s has begun (s itself, its parent's, or the parent's
 * ct_scope_drop_kids): a list then forgets s without freeing it. */
bool ct__scope_dying(const ct_scope *s);

/* Called by the teardown of the scope in slot index of l: empties the slot. */
void ct__scope_list_forget(ct_scope_list *l, size_t index);

/* The stamp of s's name table: it changes whenever a variable of s is created, erased or
 * renamed, and no other scope, live or freed, ever had the same stamp. Whoever caches what a
 * name lookup through s found (a bound step program) keeps the stamps of s and its ancestors,
 * and rebinds when one differs. Lock-free. */
uint64_t ct__scope_stamp(const ct_scope *s);

/* A cache its user hangs on a list (the recurrent op's bound step programs): freed with
 * free_cache(cache) when the list is destroyed, never otherwise. The list does not look inside;
 * the user checks, with scope stamps, that what it cached still holds. NULL when none. */
void *ct__scope_list_cache(const ct_scope_list *l);
void ct__scope_list_set_cache(ct_scope_list *l, void *cache, void (*free_cache)(void *cache));

#endif /* CORTEN_CORE_SCOPE_LIST_H */
