/* SPDX-License-Identifier: Apache-2.0 */
/* core/scope/scope.c: nested scopes of named variables. See corten/scope.h for the contract and
 * scope/name_table.h for how lookups run without a lock. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corten/scope.h>

#include "common/alloc.h"
#include "common/common.h"
#include "scope/name_table.h"
#include "scope/scope_list.h"
#include "scope/scope_watch.h"

struct ct_scope {
  ct_scope *parent; /* fixed for the scope's life */
  pthread_mutex_t lock;
  ct__name_table names;
  ct_var *free_vars;       /* erased variables awaiting reuse, with their name blocks */
  ct__name *retired_names; /* name blocks replaced by a longer name */
  ct_scope **kids;
  size_t nkids, kids_cap;
  ct_scope_list *list; /* the step-scope list naming this scope, or NULL (scope/scope_list.h) */
  size_t list_index;
  bool dying; /* a teardown that frees this scope has begun: a list must leave it alone */
  _Atomic uint64_t stamp; /* this scope's name table as it stands (scope/scope_list.h) */
  ct__scope_watch *watches; /* what is bound to this scope (scope/scope_watch.h) */
};

/* Stamps are unique in the process: a scope made at the address of a freed one never shows a
 * stamp the freed one had, so (scope, stamp) names one state of one scope's name table. */
static _Atomic uint64_t next_stamp = 1;

static void restamp(ct_scope *s) {
  atomic_store_explicit(&s->stamp, atomic_fetch_add_explicit(&next_stamp, 1, memory_order_relaxed),
                        memory_order_release);
}

uint64_t ct__scope_stamp(const ct_scope *s) {
  return atomic_load_explicit(&((ct_scope *)s)->stamp, memory_order_acquire);
}

/* ---- Life ----------------------------------------------------------------------------------- */

static ct_scope *scope_alloc(ct_scope *parent) {
  ct_scope *s = ct__calloc(1, sizeof *s);
  if (s == NULL) {
    return ct__error_null(CT_ERR_OUT_OF_MEMORY, "ct_scope_new: out of host memory for a scope");
  }
  if (pthread_mutex_init(&s->lock, NULL) != 0) {
    free(s);
    return ct__error_null(CT_ERR_OUT_OF_MEMORY, "ct_scope_new: could not create the scope's lock");
  }
  s->parent = parent;
  restamp(s);
  return s;
}

ct_scope *ct_scope_new(void) { return scope_alloc(NULL); }

ct_scope *ct_scope_new_kid(ct_scope *parent) {
  if (parent == NULL) {
    return ct__error_null(CT_ERR_INVALID_ARGUMENT, "ct_scope_new_kid: the parent scope is NULL");
  }
  ct_scope *kid = scope_alloc(parent);
  if (kid == NULL) return NULL;
  pthread_mutex_lock(&parent->lock);
  if (parent->nkids == parent->kids_cap) {
    size_t cap = parent->kids_cap ? parent->kids_cap * 2 : 4;
    ct_scope **k = ct__realloc(parent->kids, cap * sizeof *k);
    if (k == NULL) {
      pthread_mutex_unlock(&parent->lock);
      pthread_mutex_destroy(&kid->lock);
      free(kid);
      return ct__error_null(CT_ERR_OUT_OF_MEMORY,
                            "ct_scope_new_kid: out of host memory for the parent's kid list");
    }
    parent->kids = k;
    parent->kids_cap = cap;
  }
  parent->kids[parent->nkids++] = kid;
  pthread_mutex_unlock(&parent->lock);
  return kid;
}

static void free_var(ct_var *v, void *arg) {
  (void)arg;
  v->owner = NULL;
  ct_var_clear(v);
  free(v->heap_name);
  ct__free_sized(v, sizeof *v);
}

/* The first step of freeing s: the list naming s forgets it, and every kid is marked as being
 * freed here, so a step-scope list destroyed later (among the variables) leaves them alone. */
static void scope_doom(ct_scope *s) {
  s->dying = true;
  for (ct__scope_watch *w = s->watches, *next; w != NULL; w = next) {
    next = w->next;
    w->prev = w->next = NULL;
    w->scope = NULL;
    atomic_store_explicit(&w->gone, true, memory_order_relaxed);
  }
  s->watches = NULL;
  if (s->list != NULL) ct__scope_list_forget(s->list, s->list_index);
  for (size_t i = 0; i < s->nkids; i++) s->kids[i]->dying = true;
}

/* The last step of freeing s, once its kids are gone: its variables, names and itself. */
static void scope_release(ct_scope *s) {
  free(s->kids);
  ct__table_each(&s->names, free_var, NULL);
  ct__table_destroy(&s->names);
  for (ct_var *v = s->free_vars, *next; v; v = next) {
    next = v->next_free;
    free_var(v, NULL);
  }
  for (ct__name *n = s->retired_names, *next; n; n = next) {
    next = n->retired_next;
    free(n);
  }
  pthread_mutex_destroy(&s->lock);
  free(s);
}

/* Frees root, its kids and its variables; root is already unlinked from its parent (or is a
 * root). The walk is iterative, so a chain of nested kids of any depth never overflows the
 * stack, and it allocates nothing: it goes down through the last kid of each scope (taking it
 * off the kid list), and a scope with no kids left is released and the walk goes back up to its
 * parent. Each scope is doomed (scope_doom) when the walk first reaches it, before any of its
 * kids or variables goes, and released after all its kids, as the recursive order did. */
static void scope_destroy(ct_scope *root) {
  scope_doom(root);
  ct_scope *s = root;
  for (;;) {
    if (s->nkids > 0) {
      ct_scope *kid = s->kids[--s->nkids];
      scope_doom(kid);
      s = kid;
      continue;
    }
    ct_scope *up = s == root ? NULL : s->parent;
    scope_release(s);
    if (up == NULL) return;
    s = up;
  }
}

void ct__scope_watch_add(ct_scope *s, ct__scope_watch *w) {
  pthread_mutex_lock(&s->lock);
  w->scope = s;
  w->prev = NULL;
  w->next = s->watches;
  if (s->watches != NULL) s->watches->prev = w;
  s->watches = w;
  atomic_store_explicit(&w->gone, false, memory_order_relaxed);
  pthread_mutex_unlock(&s->lock);
}

void ct__scope_watch_remove(ct__scope_watch *w) {
  ct_scope *s = w->scope;
  if (s == NULL || ct__scope_watch_gone(w)) return;
  pthread_mutex_lock(&s->lock);
  if (w->prev != NULL) w->prev->next = w->next;
  else s->watches = w->next;
  if (w->next != NULL) w->next->prev = w->prev;
  w->prev = w->next = NULL;
  w->scope = NULL;
  pthread_mutex_unlock(&s->lock);
}

void ct_scope_free(ct_scope *s) {
  if (s == NULL) return;
  ct_scope *p = s->parent;
  if (p != NULL) {
    pthread_mutex_lock(&p->lock);
    for (size_t i = 0; i < p->nkids; i++) {
      if (p->kids[i] == s) {
        memmove(&p->kids[i], &p->kids[i + 1], (p->nkids - i - 1) * sizeof *p->kids);
        p->nkids--;
        break;
      }
    }
    pthread_mutex_unlock(&p->lock);
  }
  scope_destroy(s);
}

void ct_scope_drop_kids(ct_scope *s) {
  if (s == NULL) return;
  pthread_mutex_lock(&s->lock);
  ct_scope **kids = s->kids;
  size_t n = s->nkids;
  s->kids = NULL;
  s->nkids = s->kids_cap = 0;
  pthread_mutex_unlock(&s->lock);
  for (size_t i = 0; i < n; i++) kids[i]->dying = true;
  for (size_t i = 0; i < n; i++) scope_destroy(kids[i]);
  free(kids);
}

bool ct_scope_has_kid(const ct_scope *s, const ct_scope *kid) {
  if (s == NULL || kid == NULL) return false;
  ct_scope *m = (ct_scope *)s; /* the lock is not part of the scope's logical state */
  bool found = false;
  pthread_mutex_lock(&m->lock);
  for (size_t i = 0; i < m->nkids && !found; i++) found = m->kids[i] == kid;
  pthread_mutex_unlock(&m->lock);
  return found;
}

ct_scope *ct_scope_parent(const ct_scope *s) { return s ? s->parent : NULL; }

size_t ct_scope_kid_count(const ct_scope *s) {
  if (s == NULL) return 0;
  ct_scope *m = (ct_scope *)s;
  pthread_mutex_lock(&m->lock);
  size_t n = m->nkids;
  pthread_mutex_unlock(&m->lock);
  return n;
}

void ct__scope_set_list(ct_scope *s, ct_scope_list *l, size_t index) {
  s->list = l;
  s->list_index = index;
}

ct_scope_list *ct__scope_get_list(const ct_scope *s) { return s->list; }

ct_scope *ct__scope_kid(const ct_scope *s, size_t i) {
  ct_scope *m = (ct_scope *)s;
  pthread_mutex_lock(&m->lock);
  ct_scope *kid = i < m->nkids ? m->kids[i] : NULL;
  pthread_mutex_unlock(&m->lock);
  return kid;
}

bool ct__scope_dying(const ct_scope *s) { return s->dying; }

/* ---- Lookups (no lock, no allocation) ------------------------------------------------------- */

/* Checks a scope and a name for function fn; returns the name's length, or 0 with the error
 * recorded. */
static size_t check_name(const ct_scope *s, const char *name, const char *fn) {
  if (s == NULL || name == NULL || name[0] == '\0') {
    ct__error(CT_ERR_INVALID_ARGUMENT, "%s: %s: pass a scope and a non-empty variable name", fn,
              s == NULL ? "the scope is NULL"
                        : (name == NULL ? "the name is NULL" : "the name is empty"));
    return 0;
  }
  return strlen(name);
}

CT__COLD static void not_found(const char *name, size_t len, int walk) {
  ct__error_name(CT_ERR_NOT_FOUND, "variable '", name, len,
                 walk ? "' not found in the scope or its ancestors: create it with ct_scope_var"
                      : "' not found in the scope: create it with ct_scope_var");
}

/* The nearest scope from s upwards holding name, and the variable in *out. */
static const ct_scope *find_holder(const ct_scope *s, const char *name, size_t len, ct_var **out) {
  uint64_t h = ct__name_hash(name, len);
  for (; s != NULL; s = s->parent) {
    ct_var *v = ct__table_find(&s->names, name, len, h);
    if (v != NULL) {
      *out = v;
      return s;
    }
  }
  return NULL;
}

ct_var *ct_scope_find_var(const ct_scope *s, const char *name) {
  size_t len = check_name(s, name, "ct_scope_find_var");
  ct_var *v = NULL;
  if (len == 0) return NULL;
  if (CT__LIKELY(find_holder(s, name, len, &v) != NULL)) return v;
  not_found(name, len, 1);
  return NULL;
}

ct_var *ct_scope_find_local_var(const ct_scope *s, const char *name) {
  size_t len = check_name(s, name, "ct_scope_find_local_var");
  if (len == 0) return NULL;
  ct_var *v = ct__table_find(&s->names, name, len, ct__name_hash(name, len));
  if (CT__LIKELY(v != NULL)) return v;
  not_found(name, len, 0);
  return NULL;
}

const ct_scope *ct_scope_find_scope(const ct_scope *s, const char *name) {
  size_t len = check_name(s, name, "ct_scope_find_scope");
  ct_var *v;
  if (len == 0) return NULL;
  const ct_scope *holder = find_holder(s, name, len, &v);
  if (holder == NULL) not_found(name, len, 1);
  return holder;
}

size_t ct_scope_var_count(const ct_scope *s) {
  return s ? atomic_load_explicit(&s->names.count, memory_order_relaxed) : 0;
}

/* ---- Changes (under the scope's lock) ------------------------------------------------------- */

/* Where v can keep a name of len bytes: *block NULL for its inline buffer, else its heap block
 * when that fits, else a new one (the capacity at least doubling). 0 when memory runs out. */
static int name_storage_for(const ct_var *v, size_t len, ct__name **block) {
  *block = NULL;
  if (len < CT__VAR_INLINE_NAME) return 1;
  if (v->heap_name != NULL && len < v->heap_name->cap) {
    *block = v->heap_name;
    return 1;
  }
  size_t cap = len + 1;
  if (v->heap_name != NULL && cap < v->heap_name->cap * 2) cap = v->heap_name->cap * 2;
  cap = (cap + 7) & ~(size_t)7; /* whole words: lookups read names 8 bytes at a time */
  ct__name *n = ct__malloc(sizeof *n + cap);
  if (n == NULL) return 0;
  n->cap = cap;
  n->retired_next = NULL;
  *block = n;
  return 1;
}

/* Inside a write section: gives v the name (name, len), kept in block (NULL: inline). A heap
 * block it replaces is retired, not freed: a reader may still be comparing against it. */
static void set_name(ct_scope *s, ct_var *v, ct__name *block, const char *name, size_t len) {
  char *dst = block ? block->s : v->inline_name;
  ct__name_store(dst, name, len);
  atomic_store_explicit(&v->name, dst, memory_order_release); /* publishes a new block's cap */
  atomic_store_explicit(&v->name_len, len, memory_order_relaxed);
  if (v->heap_name != NULL && v->heap_name != block) {
    v->heap_name->retired_next = s->retired_names;
    s->retired_names = v->heap_name;
  }
  v->heap_name = block;
}

ct_var *ct_scope_var(ct_scope *s, const char *name) {
  size_t len = check_name(s, name, "ct_scope_var");
  if (len == 0) return NULL;
  uint64_t h = ct__name_hash(name, len);
  ct_var *v = ct__table_find(&s->names, name, len, h);
  if (CT__LIKELY(v != NULL)) return v;

  pthread_mutex_lock(&s->lock);
  v = ct__table_find_locked(&s->names, name, len, h); /* another thread may have made it meanwhile */
  if (v != NULL) {
    pthread_mutex_unlock(&s->lock);
    return v;
  }
  if (s->free_vars != NULL && s->free_vars->head.type != NULL) {
    /* An erased variable is empty when it is erased, but a holder of its pointer (an executor
     * bound before the erase) may have written a value into it since. A reused variable starts
     * empty like a new one, so that value goes now, outside the lock (its destroy may call back
     * into this scope); the variable stays on the free list meanwhile, detached. */
    ct_var *dirty = s->free_vars;
    s->free_vars = dirty->next_free;
    pthread_mutex_unlock(&s->lock);
    ct_var_clear(dirty);
    pthread_mutex_lock(&s->lock);
    dirty->next_free = s->free_vars;
    s->free_vars = dirty;
    v = ct__table_find_locked(&s->names, name, len, h); /* made by another thread meanwhile */
    if (v != NULL) {
      pthread_mutex_unlock(&s->lock);
      return v;
    }
  }
  int reused = s->free_vars != NULL;
  v = reused ? s->free_vars : ct__alloc(sizeof *v);
  if (v == NULL) goto oom;
  if (!reused) ct__var_init(v);
  ct__name *block;
  if (!name_storage_for(v, len, &block)) {
    if (!reused) ct__free_sized(v, sizeof *v);
    goto oom;
  }
  if (!ct__table_reserve(&s->names)) {
    if (block != NULL && block != v->heap_name) free(block);
    if (!reused) ct__free_sized(v, sizeof *v);
    goto oom;
  }
  if (reused) s->free_vars = v->next_free;
  v->next_free = NULL;
  v->owner = s;
  ct__table_write_begin(&s->names);
  set_name(s, v, block, name, len);
  ct__table_insert(&s->names, v, h);
  ct__table_write_end(&s->names);
  restamp(s);
  pthread_mutex_unlock(&s->lock);
  return v;

oom:
  pthread_mutex_unlock(&s->lock);
  return ct__error_null(CT_ERR_OUT_OF_MEMORY,
                        "ct_scope_var: out of host memory creating variable '%s'", name);
}

size_t ct_scope_erase_vars(ct_scope *s, const char *const *names, size_t n) {
  if (s == NULL || (names == NULL && n > 0)) {
    ct__error(CT_ERR_INVALID_ARGUMENT, "ct_scope_erase_vars: the %s is NULL",
              s == NULL ? "scope" : "names array");
    return 0;
  }
  ct_var *erased = NULL;
  size_t count = 0;
  pthread_mutex_lock(&s->lock);
  ct__table_write_begin(&s->names);
  for (size_t i = 0; i < n; i++) {
    const char *name = names[i];
    if (name == NULL || name[0] == '\0') continue;
    size_t len = strlen(name);
    uint64_t h = ct__name_hash(name, len);
    ct_var *v = ct__table_find_locked(&s->names, name, len, h);
    if (v == NULL) continue;
    ct__table_remove(&s->names, v, h);
    v->next_free = erased;
    erased = v;
    count++;
  }
  ct__table_write_end(&s->names);
  if (count > 0) restamp(s);
  pthread_mutex_unlock(&s->lock);

  /* Destroy the values outside the lock: a value's destroy may call back into this scope. */
  ct_var *last = NULL;
  for (ct_var *v = erased; v; v = v->next_free) {
    ct_var_clear(v);
    last = v;
  }
  if (erased != NULL) {
    pthread_mutex_lock(&s->lock);
    last->next_free = s->free_vars;
    s->free_vars = erased;
    pthread_mutex_unlock(&s->lock);
  }
  return count;
}

ct_status ct_scope_rename(ct_scope *s, const char *from, const char *to) {
  size_t flen = check_name(s, from, "ct_scope_rename");
  if (flen == 0) return ct_last_status();
  size_t tlen = check_name(s, to, "ct_scope_rename");
  if (tlen == 0) return ct_last_status();
  uint64_t fh = ct__name_hash(from, flen), th = ct__name_hash(to, tlen);
  ct_status st = CT_OK;

  pthread_mutex_lock(&s->lock);
  ct_var *v = ct__table_find_locked(&s->names, from, flen, fh);
  if (v == NULL) {
    st = ct__error(CT_ERR_NOT_FOUND,
                   "ct_scope_rename: variable '%s' not found in the scope: only local variables "
                   "can be renamed",
                   from);
  } else if (flen == tlen && memcmp(from, to, flen) == 0) {
    /* renaming onto itself changes nothing */
  } else if (ct__table_find_locked(&s->names, to, tlen, th) != NULL) {
    st = ct__error(CT_ERR_ALREADY_EXISTS,
                   "ct_scope_rename: cannot rename '%s' to '%s': the scope already has a '%s'; "
                   "erase it first",
                   from, to, to);
  } else {
    ct__name *block;
    if (!name_storage_for(v, tlen, &block)) {
      st = ct__error(CT_ERR_OUT_OF_MEMORY,
                     "ct_scope_rename: out of host memory renaming '%s' to '%s'", from, to);
    } else {
      /* The count does not change, so the table needs no room: nothing below can fail. */
      ct__table_write_begin(&s->names);
      ct__table_remove(&s->names, v, fh);
      set_name(s, v, block, to, tlen);
      ct__table_insert(&s->names, v, th);
      ct__table_write_end(&s->names);
      restamp(s);
    }
  }
  pthread_mutex_unlock(&s->lock);
  return st;
}

/* ---- Listing -------------------------------------------------------------------------------- */

typedef struct name_list {
  const char **out;
  size_t cap, total;
} name_list;

/* Keeps out[0..min(total, cap)) as the smallest names seen so far, sorted (insertion). */
static void collect_name(ct_var *v, void *arg) {
  name_list *l = arg;
  const char *name = atomic_load_explicit(&v->name, memory_order_relaxed);
  size_t n = l->total < l->cap ? l->total : l->cap;
  l->total++;
  size_t i = n;
  if (n == l->cap) {
    if (n == 0 || strcmp(name, l->out[n - 1]) >= 0) return;
    i = n - 1; /* drop the largest */
  }
  while (i > 0 && strcmp(name, l->out[i - 1]) < 0) {
    l->out[i] = l->out[i - 1];
    i--;
  }
  l->out[i] = name;
}

size_t ct_scope_local_var_names(const ct_scope *s, const char **out, size_t cap) {
  if (s == NULL || (out == NULL && cap > 0)) {
    ct__error(CT_ERR_INVALID_ARGUMENT, "ct_scope_local_var_names: the %s is NULL",
              s == NULL ? "scope" : "output array");
    return 0;
  }
  ct_scope *m = (ct_scope *)s;
  name_list l = {out, cap, 0};
  pthread_mutex_lock(&m->lock);
  ct__table_each(&m->names, collect_name, &l);
  pthread_mutex_unlock(&m->lock);
  return l.total;
}
