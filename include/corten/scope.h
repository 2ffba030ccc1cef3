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
#include <stdio.h>

#include <corten/export.h>
#include <corten/status.h>
#include <corten/types.h>
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

/* ---- Memory report: which variables hold the memory -------------------------------------------
 *
 * ct_scope_memory_report lists every variable of a scope and of its kids (step scopes included)
 * whose tensor holds memory, with how it holds it, sorted by bytes; ct_memory_report_total gives
 * what the listed blocks of a place take, each block once, which equals that place's
 * ct_memory_stats allocated when the scope's tensors are all there is.
 *
 *   ct_memory_report *r = NULL;
 *   ct_scope_memory_report(scope, &r);
 *   ct_memory_report_print(r, stdout);      // a table, largest first
 *   ct_memory_report_free(r); */

/* How a variable's tensor holds its memory. */
typedef enum ct_memory_holding {
  CT_HOLDING_OWN,      /* the whole of a block nothing else holds */
  CT_HOLDING_SHARED,   /* the whole of a block other tensors hold too (reshape outputs, shares):
                          shared_with names the report's other holders ("" when they are all
                          outside the scope) */
  CT_HOLDING_VIEW,     /* a part of a block (ct_tensor_slice, a step input's row) */
  CT_HOLDING_EXTERNAL, /* a buffer lent to corten (ct_tensor_wrap, DLPack): no stats count it */
} ct_memory_holding;

typedef struct ct_memory_report_entry {
  const char *path;        /* the variable's name, after its scopes': "h", "kid0/h" for a scope's
                              first kid, "steps[3]/h" for step scope 3 of the list in "steps" */
  ct_dtype dtype;
  ct_ddim dims;
  ct_place place;
  size_t bytes;            /* the tensor's elements: numel * dtype size */
  size_t block_bytes;      /* its block's bytes as the stats count them */
  ct_memory_holding holding;
  const char *shared_with; /* the other paths on the same block, comma-separated, or "" */
  size_t block;            /* the block's number in this report: equal for entries sharing it */
} ct_memory_report_entry;

typedef struct ct_memory_report {
  ct_memory_report_entry *entries; /* n of them, by bytes, largest first (then by path) */
  size_t n;
} ct_memory_report;

/* Makes *out the report of s and its kids, owned by the caller (free it with
 * ct_memory_report_free). The report is a copy: it stays valid whatever happens to the scope.
 * Errors (*out untouched):
 *   CT_ERR_INVALID_ARGUMENT  s or out is NULL
 *   CT_ERR_OUT_OF_MEMORY     no host memory for the report */
CT_API ct_status ct_scope_memory_report(const ct_scope *s, ct_memory_report **out);

/* The bytes the report's blocks at place take, each block once, external buffers left out. */
CT_API size_t ct_memory_report_total(const ct_memory_report *r, ct_place place);

/* Writes r as a table (path, dtype, dims, place, bytes, holding) with a total per place.
 * CT_ERR_INVALID_ARGUMENT for NULLs, CT_ERR_IO when out fails. */
CT_API ct_status ct_memory_report_print(const ct_memory_report *r, FILE *out);

/* Frees r. NULL: no-op. */
CT_API void ct_memory_report_free(ct_memory_report *r);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_SCOPE_H */
