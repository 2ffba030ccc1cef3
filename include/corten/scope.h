/* SPDX-License-Identifier: Apache-2.0 */
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
 * variable keeps its ct_var.
 *
 * Step scopes (a list of kids kept in a variable, for RNNs) have their own header,
 * corten/step_scopes.h, which this one includes: code written when they were declared here
 * keeps compiling. */
#ifndef CORTEN_SCOPE_H
#define CORTEN_SCOPE_H

#include <stdbool.h>
#include <stddef.h>

#include <corten/export.h>
#include <corten/status.h>
#include <corten/step_scopes.h> /* for compatibility: step scopes were declared here before */
#include <corten/variable.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_scope ct_scope;

/* A root scope, owned by the caller: free it with ct_scope_free.
 * Errors (NULL returned):
 *   CT_ERR_OUT_OF_MEMORY     no host memory for the scope or its lock */
CT_NODISCARD CT_API ct_scope *ct_scope_new(void);

/* A kid of parent, owned by it (freed with it, or earlier with ct_scope_free or
 * ct_scope_drop_kids).
 * Errors (NULL returned):
 *   CT_ERR_INVALID_ARGUMENT  parent is NULL
 *   CT_ERR_OUT_OF_MEMORY     no host memory for the kid */
CT_API ct_scope *ct_scope_new_kid(ct_scope *parent);

/* Frees s, its kids and all their variables (each value destroyed once), and unlinks s from its
 * parent. NULL: no-op. A step scope's slot in its list is emptied (corten/step_scopes.h). */
CT_API void ct_scope_free(ct_scope *s);

/* Frees every kid of s (and theirs); s and its variables stay. NULL: no-op. */
CT_API void ct_scope_drop_kids(ct_scope *s);

/* Whether kid is a direct kid of s. false when either is NULL. */
CT_API bool ct_scope_has_kid(const ct_scope *s, const ct_scope *kid);

/* The parent; NULL for a root (or NULL s). */
CT_API ct_scope *ct_scope_parent(const ct_scope *s);

/* The variable called name in s itself, created empty when missing (an ancestor's variable of
 * the same name is not looked at: the new one shadows it). The variable belongs to s.
 * Errors (NULL returned):
 *   CT_ERR_INVALID_ARGUMENT  s is NULL, or name is NULL or empty
 *   CT_ERR_OUT_OF_MEMORY     no host memory for the variable; nothing changed */
CT_API ct_var *ct_scope_var(ct_scope *s, const char *name);

/* The variable called name in s or its nearest ancestor that has one.
 * Errors (NULL returned):
 *   CT_ERR_INVALID_ARGUMENT  s is NULL, or name is NULL or empty
 *   CT_ERR_NOT_FOUND         no such variable in s or any ancestor */
CT_API ct_var *ct_scope_find_var(const ct_scope *s, const char *name);

/* The variable called name in s itself. Errors as ct_scope_find_var (CT_ERR_NOT_FOUND: not in
 * s). */
CT_API ct_var *ct_scope_find_local_var(const ct_scope *s, const char *name);

/* The scope, s or its nearest ancestor, whose own variables include name. Errors as
 * ct_scope_find_var. */
CT_API const ct_scope *ct_scope_find_scope(const ct_scope *s, const char *name);

/* Erases the named local variables of s, destroying their values; names not in s (or NULL or
 * empty) are skipped. Returns how many were erased.
 * Errors (0 returned; recorded in the last error):
 *   CT_ERR_INVALID_ARGUMENT  s is NULL, or names is NULL with n > 0 */
CT_API size_t ct_scope_erase_vars(ct_scope *s, const char *const *names, size_t n);

/* Renames the local variable from to to; the ct_var and its value stay the same. Renaming a
 * name onto itself succeeds and changes nothing.
 * Errors (nothing renamed):
 *   CT_ERR_INVALID_ARGUMENT  s is NULL, or from or to is NULL or empty
 *   CT_ERR_NOT_FOUND         from is not in s
 *   CT_ERR_ALREADY_EXISTS    to is already in s
 *   CT_ERR_OUT_OF_MEMORY     no host memory for the new name */
CT_API ct_status ct_scope_rename(ct_scope *s, const char *from, const char *to);

/* Local variables of s (not its ancestors'). 0 for NULL s. */
CT_API size_t ct_scope_var_count(const ct_scope *s);

/* Writes up to cap local variable names of s into out, the first cap in strcmp order, and
 * returns how many s has (call with cap 0 to size out). The strings belong to the scope and stay
 * valid until that variable is renamed or erased.
 * Errors (0 returned; recorded in the last error):
 *   CT_ERR_INVALID_ARGUMENT  s is NULL, or out is NULL with cap > 0 */
CT_API size_t ct_scope_local_var_names(const ct_scope *s, const char **out, size_t cap);

/* The number of direct kids of s. 0 for NULL s. */
CT_API size_t ct_scope_kid_count(const ct_scope *s);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_SCOPE_H */
