/* SPDX-License-Identifier: Apache-2.0 */
/* corten/step_scopes.h: step scopes, the per-time-step kids of a scope that RNN code keeps.
 *
 * A ct_scope_list (held by a variable through ct_scope_list_type, corten/variable.h) is an
 * ordered list of scopes that are kids of one parent: the step scopes of an RNN, scope t for
 * time step t. The parent owns the scopes, as it owns any kid; the list names them, and
 * destroying the list frees them. Each step scope knows the list slot that names it, so
 * whichever goes first, every step scope is freed exactly once and the list never names a freed
 * scope:
 *   - clearing, erasing or freeing the list's variable (or the teardown of the scope holding it)
 *     frees the step scopes that are still alive, unlinking each from its parent;
 *   - freeing a step scope (ct_scope_free, ct_scope_drop_kids of the parent, freeing the parent)
 *     empties its slot: ct_scope_list_get returns NULL for it, and trailing empty slots are
 *     dropped, so after ct_scope_drop_kids(parent) the size is 0.
 * The list must not live in one of its own step scopes (or below one): freeing that scope would
 * free the list while the list frees its scopes. The recurrent op refuses such wiring.
 *
 * A list is made like any variable's value:
 *   ct_scope_list *steps = ct_var_get_mutable(ct_scope_var(scope, "steps"), &ct_scope_list_type);
 *   ct_scope_list_resize(steps, scope, T);
 *
 * Thread-safety: as a variable's value, a list is not locked; freeing a step scope writes to its
 * list, so it must not run alongside other calls on the list. */
#ifndef CORTEN_STEP_SCOPES_H
#define CORTEN_STEP_SCOPES_H

#include <stddef.h>

#include <corten/export.h>
#include <corten/status.h>
#include <corten/variable.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The scope type (corten/scope.h) and the list type (declared with ct_scope_list_type in
 * corten/variable.h), repeated so that this header stands on its own. */
typedef struct ct_scope ct_scope;
typedef struct ct_scope_list ct_scope_list;

/* The number of slots: one past the last step scope still alive. 0 for NULL l. */
CT_API size_t ct_scope_list_size(const ct_scope_list *l);

/* Step scope i, owned by the list's parent; NULL past the end, for a scope freed since, or for
 * NULL l. */
CT_API ct_scope *ct_scope_list_get(const ct_scope_list *l, size_t i);

/* The parent of the step scopes; NULL while the list is empty (or for NULL l). */
CT_API ct_scope *ct_scope_list_parent(const ct_scope_list *l);

/* Makes l hold exactly n step scopes, kids of parent: step scopes already there (same parent)
 * are kept with their variables, so a second run of the same length allocates nothing; empty
 * slots get a new kid; slots past n are freed. A different parent frees every step scope first.
 * Errors:
 *   CT_ERR_INVALID_ARGUMENT  l or parent is NULL, or parent is one of l's step scopes or below
 *                            one; l is unchanged
 *   CT_ERR_OUT_OF_MEMORY     no memory for the slots or a new kid; l then holds the scopes made
 *                            so far, each still a kid of parent and freed with l */
CT_API ct_status ct_scope_list_resize(ct_scope_list *l, ct_scope *parent, size_t n);

/* Frees every step scope of l; l stays, empty. NULL: no-op. */
CT_API void ct_scope_list_clear(ct_scope_list *l);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_STEP_SCOPES_H */
