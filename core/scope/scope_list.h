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

#include <corten/scope.h>

/* Records that slot index of l names s (l NULL: s is named by no list). */
void ct__scope_set_list(ct_scope *s, ct_scope_list *l, size_t index);

/* The list naming s, NULL when none. */
ct_scope_list *ct__scope_get_list(const ct_scope *s);

/* Whether a teardown that frees s has begun (s itself, its parent's, or the parent's
 * ct_scope_drop_kids): a list then forgets s without freeing it. */
bool ct__scope_dying(const ct_scope *s);

/* Called by the teardown of the scope in slot index of l: empties the slot. */
void ct__scope_list_forget(ct_scope_list *l, size_t index);

#endif /* CORTEN_CORE_SCOPE_LIST_H */
