/* SPDX-License-Identifier: Apache-2.0 */
/* core/interop/memory_report.c: ct_scope_memory_report, which variables of a scope tree hold
 * memory and how (corten/scope.h).
 *
 * One walk over the tree: a scope's local variables in name order; a variable holding a step
 * scope list leads into its scopes ("steps[3]/"), and the kids no list names come after
 * ("kid0/"). Each tensor with memory becomes an entry with its block; once the walk is done,
 * the entries are grouped by block (sorted by block address) to say who shares what, and then
 * sorted by bytes. The report copies every string, so it outlives the scope. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/scope.h>
#include <corten/tensor.h>

#include "common/alloc.h"
#include "common/common.h"
#include "memory/memory_impl.h"
#include "scope/scope_list.h"
#include "tensor/tensor_impl.h"

#define WHAT "ct_scope_memory_report"

/* Per entry, its block and where in it the tensor starts. */
typedef struct holder {
  const ct__block *block;
  size_t offset, index;
} holder;

typedef struct walk {
  ct_memory_report_entry *e;
  holder *h;
  size_t n, cap;
  bool oom;
} walk;

static char *copy_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *c = ct__malloc(n);
  if (c != NULL) memcpy(c, s, n);
  return c;
}

static void add_entry(walk *w, const char *path, const ct_tensor *t) {
  if (w->n == w->cap) {
    size_t cap = w->cap ? 2 * w->cap : 32;
    ct_memory_report_entry *e = ct__realloc(w->e, cap * sizeof *e);
    if (e != NULL) w->e = e;
    holder *h = e != NULL ? ct__realloc(w->h, cap * sizeof *h) : NULL;
    if (h == NULL) {
      w->oom = true;
      return;
    }
    w->h = h;
    w->cap = cap;
  }
  const ct__block *b = t->block;
  ct_memory_report_entry *e = &w->e[w->n];
  *e = (ct_memory_report_entry){
      .path = copy_str(path),
      .dtype = t->dtype,
      .dims = t->dims,
      .place = b->place,
      .bytes = t->numel > 0 ? (size_t)t->numel * ct_dtype_size(t->dtype) : 0,
      .block_bytes = b->nbytes,
      .holding = b->external ? CT_HOLDING_EXTERNAL : CT_HOLDING_OWN,
  };
  if (e->path == NULL) {
    w->oom = true;
    return;
  }
  w->h[w->n] = (holder){b, t->offset, w->n};
  w->n++;
}

static void walk_scope(walk *w, const ct_scope *s, const char *prefix, int depth);

/* The scopes of the step scope list l, held by variable name of s. */
static void walk_list(walk *w, const ct_scope_list *l, const char *prefix, const char *name,
                      int depth) {
  for (size_t i = 0; i < ct_scope_list_size(l) && !w->oom; i++) {
    const ct_scope *step = ct_scope_list_get(l, i);
    if (step == NULL) continue;
    char p[1024];
    snprintf(p, sizeof p, "%s%s[%zu]/", prefix, name, i);
    walk_scope(w, step, p, depth + 1);
  }
}

static void walk_scope(walk *w, const ct_scope *s, const char *prefix, int depth) {
  if (depth > 64) return; /* deeper trees are not reported (a path would not fit anyway) */
  size_t n = ct_scope_local_var_names(s, NULL, 0);
  const char **names = ct__malloc((n ? n : 1) * sizeof *names);
  if (names == NULL) {
    w->oom = true;
    return;
  }
  n = ct_scope_local_var_names(s, names, n);
  for (size_t i = 0; i < n && !w->oom; i++) {
    const ct_var *v = ct_scope_find_local_var(s, names[i]);
    const ct_tensor *t = ct_var_get(v, &ct_tensor_type);
    const ct_scope_list *l = t == NULL ? ct_var_get(v, &ct_scope_list_type) : NULL;
    ct_clear_error();
    char path[1024];
    snprintf(path, sizeof path, "%s%s", prefix, names[i]);
    if (t != NULL && t->block != NULL) add_entry(w, path, t);
    if (l != NULL && ct_scope_list_parent(l) == s) walk_list(w, l, prefix, names[i], depth);
  }
  free(names);
  for (size_t k = 0; !w->oom; k++) {
    const ct_scope *kid = ct__scope_kid(s, k);
    if (kid == NULL) break;
    const ct_scope_list *l = ct__scope_get_list(kid);
    if (l != NULL && ct_scope_list_parent(l) == s) continue; /* reached through its list */
    char p[1024];
    snprintf(p, sizeof p, "%skid%zu/", prefix, k);
    walk_scope(w, kid, p, depth + 1);
  }
}

/* ---- Who shares what ------------------------------------------------------------------------ */

static int by_block(const void *a, const void *b) {
  const holder *x = a, *y = b;
  if (x->block != y->block) return (uintptr_t)x->block < (uintptr_t)y->block ? -1 : 1;
  return x->index < y->index ? -1 : 1;
}

/* The holders of each block: holding, shared_with and block number of every entry. A tensor
 * is a view when it starts inside its block, or covers only part of a block something else
 * holds too (a tensor alone in a larger block it kept from before is its own). */
static bool classify(walk *w) {
  if (w->n > 1) qsort(w->h, w->n, sizeof *w->h, by_block);
  size_t number = 0;
  for (size_t g = 0; g < w->n; number++) {
    size_t end = g;
    while (end < w->n && w->h[end].block == w->h[g].block) end++;
    const ct__block *b = w->h[g].block;
    size_t refs = atomic_load_explicit(&((ct__block *)b)->refs, memory_order_relaxed);
    for (size_t k = g; k < end; k++) {
      ct_memory_report_entry *e = &w->e[w->h[k].index];
      size_t len = 1;
      for (size_t j = g; j < end; j++) len += j == k ? 0 : strlen(w->e[w->h[j].index].path) + 2;
      char *with = ct__malloc(len);
      if (with == NULL) return false;
      with[0] = '\0';
      for (size_t j = g; j < end; j++) {
        if (j == k) continue;
        if (with[0] != '\0') strcat(with, ", ");
        strcat(with, w->e[w->h[j].index].path);
      }
      e->shared_with = with;
      e->block = number;
      if (e->holding == CT_HOLDING_EXTERNAL) continue;
      bool view = w->h[k].offset != 0 || (e->bytes < b->nbytes && refs > 1);
      e->holding = view ? CT_HOLDING_VIEW : refs > 1 ? CT_HOLDING_SHARED : CT_HOLDING_OWN;
    }
    g = end;
  }
  return true;
}

static int by_bytes(const void *a, const void *b) {
  const ct_memory_report_entry *x = a, *y = b;
  if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
  return strcmp(x->path, y->path);
}

void ct_memory_report_free(ct_memory_report *r) {
  if (r == NULL) return;
  for (size_t i = 0; i < r->n; i++) {
    free((char *)r->entries[i].path);
    free((char *)r->entries[i].shared_with);
  }
  free(r->entries);
  free(r);
}

ct_status ct_scope_memory_report(const ct_scope *s, ct_memory_report **out) {
  if (s == NULL || out == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, WHAT ": the %s is NULL",
                     s == NULL ? "scope" : "out pointer");
  }
  walk w = {0};
  walk_scope(&w, s, "", 0);
  ct_memory_report *r = ct__calloc(1, sizeof *r);
  bool ok = !w.oom && r != NULL && classify(&w);
  if (r != NULL) {
    r->entries = w.e;
    r->n = w.n;
  } else {
    for (size_t i = 0; i < w.n; i++) free((char *)w.e[i].path);
    free(w.e);
    w.n = 0;
  }
  free(w.h);
  if (!ok) {
    ct_memory_report_free(r);
    return ct__error(CT_ERR_OUT_OF_MEMORY, WHAT ": out of host memory for the report");
  }
  if (r->n > 1) qsort(r->entries, r->n, sizeof *r->entries, by_bytes);
  *out = r;
  return CT_OK;
}

size_t ct_memory_report_total(const ct_memory_report *r, ct_place place) {
  size_t total = 0, blocks = 0;
  for (size_t i = 0; r != NULL && i < r->n; i++) {
    if (r->entries[i].block >= blocks) blocks = r->entries[i].block + 1;
  }
  bool *seen = blocks > 0 ? ct__calloc(blocks, sizeof *seen) : NULL;
  for (size_t i = 0; seen != NULL && i < r->n; i++) {
    const ct_memory_report_entry *e = &r->entries[i];
    if (e->holding == CT_HOLDING_EXTERNAL || seen[e->block] || e->place.kind != place.kind ||
        e->place.device != place.device) {
      continue;
    }
    seen[e->block] = true;
    total += e->block_bytes;
  }
  free(seen);
  return total;
}

static const char *const holding_names[] = {"own", "shared", "view", "external"};

ct_status ct_memory_report_print(const ct_memory_report *r, FILE *out) {
  if (r == NULL || out == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_memory_report_print: the %s is NULL",
                     r == NULL ? "report" : "stream");
  }
  fprintf(out, "%-40s %-9s %-20s %-8s %12s  %s\n", "variable", "dtype", "dims", "place", "bytes",
          "holding");
  ct_place places[16];
  size_t n_places = 0;
  for (size_t i = 0; i < r->n; i++) {
    const ct_memory_report_entry *e = &r->entries[i];
    char dims[CT__DDIM_STR_CAP], place[CT__PLACE_STR_CAP];
    fprintf(out, "%-40s %-9s %-20s %-8s %12zu  %s%s%s%s\n", e->path, ct_dtype_name(e->dtype),
            ct_ddim_str(e->dims, dims, sizeof dims), ct_place_str(e->place, place, sizeof place),
            e->bytes, holding_names[e->holding], e->shared_with[0] ? " (with " : "",
            e->shared_with, e->shared_with[0] ? ")" : "");
    bool known = false;
    for (size_t k = 0; k < n_places && !known; k++) {
      known = places[k].kind == e->place.kind && places[k].device == e->place.device;
    }
    if (!known && n_places < 16) places[n_places++] = e->place;
  }
  for (size_t k = 0; k < n_places; k++) {
    char place[CT__PLACE_STR_CAP];
    fprintf(out, "total on %s: %zu bytes (each block once, external buffers left out)\n",
            ct_place_str(places[k], place, sizeof place), ct_memory_report_total(r, places[k]));
  }
  return ferror(out) ? ct__error(CT_ERR_IO, "ct_memory_report_print: writing failed") : CT_OK;
}
