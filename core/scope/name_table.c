/* SPDX-License-Identifier: Apache-2.0 */
/* core/scope/name_table.c: see name_table.h. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/common.h"
#include "scope/name_table.h"

#define MIN_SLOTS 16


void ct__table_write_begin(ct__name_table *t) {
  unsigned s = atomic_load_explicit(&t->seq, memory_order_relaxed);
  atomic_store_explicit(&t->seq, s + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
}

void ct__table_write_end(ct__name_table *t) {
  unsigned s = atomic_load_explicit(&t->seq, memory_order_relaxed);
  atomic_store_explicit(&t->seq, s + 1, memory_order_release);
}

static void put(ct__slots *sl, ct_var *v, uint64_t h) {
  size_t i = h & sl->mask;
  while (atomic_load_explicit(&sl->slot[i].var, memory_order_relaxed) != NULL) {
    i = (i + 1) & sl->mask;
  }
  atomic_store_explicit(&sl->slot[i].hash, h, memory_order_relaxed);
  atomic_store_explicit(&sl->slot[i].var, v, memory_order_relaxed);
}

int ct__table_reserve(ct__name_table *t) {
  ct__slots *old = atomic_load_explicit(&t->slots, memory_order_relaxed);
  size_t count = atomic_load_explicit(&t->count, memory_order_relaxed);
  size_t cap = old ? old->mask + 1 : 0;
  if ((count + 1) * 2 <= cap) return 1;
  size_t ncap = cap ? cap * 2 : MIN_SLOTS;
  ct__slots *sl = ct__calloc(1, sizeof *sl + ncap * sizeof(ct__slot));
  if (sl == NULL) return 0;
  sl->mask = ncap - 1;
  for (size_t i = 0; i < cap; i++) {
    ct_var *v = atomic_load_explicit(&old->slot[i].var, memory_order_relaxed);
    if (v) put(sl, v, atomic_load_explicit(&old->slot[i].hash, memory_order_relaxed));
  }
  /* Publishing a complete array is one pointer store: readers see the old or the new table,
   * both whole, so this needs no write section. The old array stays readable until the end. */
  atomic_store_explicit(&t->slots, sl, memory_order_release);
  if (old) {
    old->retired_next = t->retired;
    t->retired = old;
  }
  return 1;
}

void ct__table_insert(ct__name_table *t, ct_var *v, uint64_t h) {
  put(atomic_load_explicit(&t->slots, memory_order_relaxed), v, h);
  atomic_fetch_add_explicit(&t->count, 1, memory_order_relaxed);
}

void ct__table_remove(ct__name_table *t, ct_var *v, uint64_t h) {
  ct__slots *sl = atomic_load_explicit(&t->slots, memory_order_relaxed);
  size_t mask = sl->mask, i = h & mask;
  while (atomic_load_explicit(&sl->slot[i].var, memory_order_relaxed) != v) i = (i + 1) & mask;
  /* Backward-shift deletion: pull later entries of the probe run into the hole when their home
   * slot does not lie cyclically in (hole, j]. */
  for (size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
    ct_var *w = atomic_load_explicit(&sl->slot[j].var, memory_order_relaxed);
    if (w == NULL) break;
    uint64_t hw = atomic_load_explicit(&sl->slot[j].hash, memory_order_relaxed);
    size_t home = hw & mask;
    int stays = (i <= j) ? (i < home && home <= j) : (i < home || home <= j);
    if (stays) continue;
    atomic_store_explicit(&sl->slot[i].hash, hw, memory_order_relaxed);
    atomic_store_explicit(&sl->slot[i].var, w, memory_order_relaxed);
    i = j;
  }
  atomic_store_explicit(&sl->slot[i].var, NULL, memory_order_relaxed);
  atomic_fetch_sub_explicit(&t->count, 1, memory_order_relaxed);
}

void ct__table_each(const ct__name_table *t, void (*fn)(ct_var *v, void *arg), void *arg) {
  const ct__slots *sl = atomic_load_explicit(&t->slots, memory_order_relaxed);
  if (sl == NULL) return;
  for (size_t i = 0; i <= sl->mask; i++) {
    ct_var *v = atomic_load_explicit(&sl->slot[i].var, memory_order_relaxed);
    if (v) fn(v, arg);
  }
}

void ct__table_destroy(ct__name_table *t) {
  free(atomic_load_explicit(&t->slots, memory_order_relaxed));
  for (ct__slots *r = t->retired, *next; r; r = next) {
    next = r->retired_next;
    free(r);
  }
  atomic_store_explicit(&t->slots, NULL, memory_order_relaxed);
  t->retired = NULL;
}
