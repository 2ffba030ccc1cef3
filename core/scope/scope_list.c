/* SPDX-License-Identifier: Apache-2.0 */
/* core/scope/scope_list.c: step-scope lists, the value behind ct_scope_list_type.
 *
 * The list owns nothing but its slot array; the scopes are kids of the parent. Each named scope
 * records its slot (scope/scope_list.h), so the two sides stay consistent in any order:
 *   - a scope's teardown empties its slot first (and trailing empty slots are dropped);
 *   - the list clears a scope's record before freeing it, and leaves alone a scope whose
 *     teardown has already begun (its parent's teardown or drop_kids frees it), so it never
 *     frees a scope twice nor locks a parent that is being torn down. */
#include <stdlib.h>
#include <string.h>

#include <corten/scope.h>

#include "common/alloc.h"
#include "common/common.h"
#include "scope/scope_list.h"

struct ct_scope_list {
  ct_scope **scopes; /* slots; NULL for a scope freed elsewhere; scopes[n - 1] != NULL */
  size_t n, cap;
  ct_scope *parent; /* of every live step scope; NULL while n == 0 */
  void *cache;      /* the user's (scope/scope_list.h), freed with free_cache */
  void (*free_cache)(void *cache);
};

void *ct__scope_list_cache(const ct_scope_list *l) { return l->cache; }

void ct__scope_list_set_cache(ct_scope_list *l, void *cache, void (*free_cache)(void *cache)) {
  l->cache = cache;
  l->free_cache = free_cache;
}

static void trim(ct_scope_list *l) {
  while (l->n > 0 && l->scopes[l->n - 1] == NULL) l->n--;
  if (l->n == 0) l->parent = NULL;
}

void ct__scope_list_forget(ct_scope_list *l, size_t index) {
  if (index < l->n) l->scopes[index] = NULL;
  trim(l);
}

size_t ct_scope_list_size(const ct_scope_list *l) { return l ? l->n : 0; }

ct_scope *ct_scope_list_get(const ct_scope_list *l, size_t i) {
  return l != NULL && i < l->n ? l->scopes[i] : NULL;
}

ct_scope *ct_scope_list_parent(const ct_scope_list *l) { return l ? l->parent : NULL; }

/* Frees the step scopes in slots [from, n). The slots are detached first, so a scope whose
 * teardown reaches this list again finds nothing left to free. */
static void free_from(ct_scope_list *l, size_t from) {
  while (l->n > from) {
    size_t i = l->n - 1;
    ct_scope *s = l->scopes[i];
    l->scopes[i] = NULL;
    trim(l);
    if (s == NULL) continue;
    ct__scope_set_list(s, NULL, 0);
    if (!ct__scope_dying(s)) ct_scope_free(s);
  }
}

void ct_scope_list_clear(ct_scope_list *l) {
  if (l == NULL) return;
  free_from(l, 0);
}

ct_status ct_scope_list_resize(ct_scope_list *l, ct_scope *parent, size_t n) {
  if (l == NULL || parent == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_scope_list_resize: the %s is NULL",
                     l == NULL ? "list" : "parent scope");
  }
  for (const ct_scope *s = parent; s != NULL; s = ct_scope_parent(s)) {
    if (ct__scope_get_list(s) == l) {
      return ct__error(CT_ERR_INVALID_ARGUMENT,
                       "ct_scope_list_resize: the parent scope is one of the list's own step "
                       "scopes (or below one): make the step scopes under another scope");
    }
  }
  if (l->n > 0 && l->parent != parent) free_from(l, 0);
  free_from(l, n);
  if (n > l->cap) {
    if (n > SIZE_MAX / sizeof *l->scopes) {
      return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_scope_list_resize: %zu step scopes are too many",
                       n);
    }
    ct_scope **grown = ct__realloc(l->scopes, n * sizeof *grown);
    if (grown == NULL) {
      return ct__error(CT_ERR_OUT_OF_MEMORY,
                       "ct_scope_list_resize: out of host memory for %zu step scope slots", n);
    }
    memset(grown + l->cap, 0, (n - l->cap) * sizeof *grown);
    l->scopes = grown;
    l->cap = n;
  }
  for (size_t i = 0; i < n; i++) {
    if (l->scopes[i] != NULL) continue;
    ct_scope *kid = ct_scope_new_kid(parent);
    if (kid == NULL) {
      return ct__error(ct_last_status(),
                       "ct_scope_list_resize: making step scope %zu of %zu under the parent: %s",
                       i, n, ct_last_status() == CT_ERR_OUT_OF_MEMORY ? "out of host memory"
                                                                      : "cannot make a kid");
    }
    l->scopes[i] = kid;
    ct__scope_set_list(kid, l, i);
    if (i >= l->n) l->n = i + 1;
    l->parent = parent;
  }
  return CT_OK;
}

static void list_destroy(void *obj) {
  ct_scope_list *l = obj;
  free_from(l, 0);
  free(l->scopes);
  l->scopes = NULL;
  l->cap = 0;
  if (l->free_cache != NULL) l->free_cache(l->cache);
  l->cache = NULL;
  l->free_cache = NULL;
}

const ct_type ct_scope_list_type = {.name = "ct_scope_list",
                                    .size = sizeof(ct_scope_list),
                                    .align = 0,
                                    .init = NULL,
                                    .destroy = list_destroy};
