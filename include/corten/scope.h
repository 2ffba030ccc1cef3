/* corten/scope.h: named variables in nested scopes.
 *
 * A scope maps names to variables it owns, and has a parent (NULL for a root) and kids it owns.
 * ct_scope_var finds or creates a variable in the scope itself; ct_scope_find_var looks in the
 * scope, then in its parent, and so on up to the root, so a kid's variable shadows an
 * ancestor's of the same name.
 *
 * Thread-safety: any number of threads may call find_var, find_local_var, find_scope, var,
 * erase_vars, rename, new_kid, var_count and local_var_names on a scope tree at the same time.
 * Lookups take no lock and allocate nothing; changes to one scope are serialised by that scope's
 * lock. free and drop_kids must not run alongside any other call on the scopes they free.
 * A ct_var pointer stays valid until its variable is erased or its scope is freed; a renamed
 * variable keeps its ct_var. */
#ifndef CORTEN_SCOPE_H
#define CORTEN_SCOPE_H

#include <stdbool.h>
#include <stddef.h>

#include <corten/status.h>
#include <corten/variable.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_scope ct_scope;

/* A root scope. NULL with CT_ERR_OUT_OF_MEMORY when memory runs out. */
CT_API ct_scope *ct_scope_new(void);

/* A kid of parent, owned by it (freed with it). NULL with CT_ERR_INVALID_ARGUMENT for a NULL
 * parent, CT_ERR_OUT_OF_MEMORY when memory runs out. */
CT_API ct_scope *ct_scope_new_kid(ct_scope *parent);

/* Frees s, its kids and all their variables (each value destroyed once), and unlinks s from its
 * parent. NULL: no-op. */
CT_API void ct_scope_free(ct_scope *s);

/* Frees every kid of s (and theirs); s and its variables stay. NULL: no-op. */
CT_API void ct_scope_drop_kids(ct_scope *s);

/* Whether kid is a direct kid of s. */
CT_API bool ct_scope_has_kid(const ct_scope *s, const ct_scope *kid);

/* The parent; NULL for a root (or NULL s). */
CT_API ct_scope *ct_scope_parent(const ct_scope *s);

/* The variable called name in s itself, created empty when missing (an ancestor's variable of
 * the same name is not looked at: the new one shadows it).
 * Errors (NULL returned): NULL s, NULL or empty name, CT_ERR_INVALID_ARGUMENT; no memory,
 * CT_ERR_OUT_OF_MEMORY. */
CT_API ct_var *ct_scope_var(ct_scope *s, const char *name);

/* The variable called name in s or its nearest ancestor that has one.
 * Errors (NULL returned): NULL s, NULL or empty name, CT_ERR_INVALID_ARGUMENT; nowhere,
 * CT_ERR_NOT_FOUND. */
CT_API ct_var *ct_scope_find_var(const ct_scope *s, const char *name);

/* The variable called name in s itself. Errors as ct_scope_find_var. */
CT_API ct_var *ct_scope_find_local_var(const ct_scope *s, const char *name);

/* The scope, s or its nearest ancestor, whose own variables include name. Errors as
 * ct_scope_find_var. */
CT_API const ct_scope *ct_scope_find_scope(const ct_scope *s, const char *name);

/* Erases the named local variables of s, destroying their values; names not in s (or NULL) are
 * skipped. Returns how many were erased. NULL s, or NULL names with n > 0: 0, with
 * CT_ERR_INVALID_ARGUMENT in the last error. */
CT_API size_t ct_scope_erase_vars(ct_scope *s, const char *const *names, size_t n);

/* Renames the local variable from to to; the ct_var and its value stay the same.
 * Errors: NULL s, NULL or empty names, CT_ERR_INVALID_ARGUMENT; from not in s,
 * CT_ERR_NOT_FOUND; to already in s, CT_ERR_ALREADY_EXISTS; no memory, CT_ERR_OUT_OF_MEMORY.
 * Renaming a name onto itself succeeds and changes nothing. */
CT_API ct_status ct_scope_rename(ct_scope *s, const char *from, const char *to);

/* Local variables of s (not its ancestors'). 0 for NULL s. */
CT_API size_t ct_scope_var_count(const ct_scope *s);

/* Writes up to cap local variable names of s into out, the first cap in strcmp order, and
 * returns how many s has (call with cap 0 to size out). The strings belong to the scope and stay
 * valid until that variable is renamed or erased. NULL s, or NULL out with cap > 0: 0, with
 * CT_ERR_INVALID_ARGUMENT in the last error. */
CT_API size_t ct_scope_local_var_names(const ct_scope *s, const char **out, size_t cap);

/* The number of direct kids of s. 0 for NULL s. */
CT_API size_t ct_scope_kid_count(const ct_scope *s);

/* ---- Step scopes ---------------------------------------------------------------------------------
 * A ct_scope_list (held by a variable through ct_scope_list_type) is an ordered list of scopes
 * that are kids of one parent: the step scopes of an RNN, scope t for time step t. The parent
 * owns the scopes, as it owns any kid; the list names them, and destroying the list frees them.
 * Each step scope knows the list slot that names it, so whichever goes first, every step scope
 * is freed exactly once and the list never names a freed scope:
 *   - clearing, erasing or freeing the list's variable (or the teardown of the scope holding it)
 *     frees the step scopes that are still alive, unlinking each from its parent;
 *   - freeing a step scope (ct_scope_free, ct_scope_drop_kids of the parent, freeing the parent)
 *     empties its slot: ct_scope_list_get returns NULL for it, and trailing empty slots are
 *     dropped, so after ct_scope_drop_kids(parent) the size is 0.
 * The list must not live in one of its own step scopes (or below one): freeing that scope would
 * free the list while the list frees its scopes. The recurrent op refuses such wiring.
 * Thread-safety: as a variable's value, a list is not locked; freeing a step scope writes to its
 * list, so it must not run alongside other calls on the list. */

/* The number of slots: one past the last step scope still alive. 0 for NULL l. */
CT_API size_t ct_scope_list_size(const ct_scope_list *l);

/* Step scope i; NULL past the end, for a scope freed since, or for NULL l. */
CT_API ct_scope *ct_scope_list_get(const ct_scope_list *l, size_t i);

/* The parent of the step scopes; NULL while the list is empty. */
CT_API ct_scope *ct_scope_list_parent(const ct_scope_list *l);

/* Makes l hold exactly n step scopes, kids of parent: step scopes already there (same parent)
 * are kept with their variables, so a second run of the same length allocates nothing; empty
 * slots get a new kid; slots past n are freed. A different parent frees every step scope first.
 * Errors: NULL l or parent, CT_ERR_INVALID_ARGUMENT; parent is one of l's step scopes or below
 * one, CT_ERR_INVALID_ARGUMENT; no memory, CT_ERR_OUT_OF_MEMORY (l then holds the scopes made
 * so far, each still a kid of parent and freed with l). */
CT_API ct_status ct_scope_list_resize(ct_scope_list *l, ct_scope *parent, size_t n);

/* Frees every step scope of l; l stays, empty. NULL: no-op. */
CT_API void ct_scope_list_clear(ct_scope_list *l);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_SCOPE_H */
