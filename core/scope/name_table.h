/* core/scope/name_table.h: the name -> variable map of a scope, with lock-free lookups.
 *
 * An open-addressing table (linear probing, backward-shift deletion, at most half full) of
 * (hash, variable) slots; a variable carries its own name. Writers hold the scope's mutex and
 * wrap every change in a sequence counter (odd while writing). Readers take no lock: they read
 * the counter, probe, and retry if the counter moved, so they never return a result torn by a
 * writer. What a reader may be looking at is never freed while the scope lives: replaced slot
 * arrays and name blocks are retired to lists freed with the scope, and erased variables are kept
 * for reuse. So a lookup allocates nothing, writes nothing shared, and costs a hash and a probe. */
#ifndef CORTEN_CORE_NAME_TABLE_H
#define CORTEN_CORE_NAME_TABLE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "variable/variable_impl.h"

typedef struct ct__slot {
  _Atomic uint64_t hash;
  ct_var *_Atomic var; /* NULL: empty */
} ct__slot;

typedef struct ct__slots {
  size_t mask;             /* slot count - 1 (a power of two minus one) */
  struct ct__slots *retired_next;
  ct__slot slot[];
} ct__slots;

typedef struct ct__name_table {
  _Atomic unsigned seq;
  ct__slots *_Atomic slots; /* NULL until the first insert */
  _Atomic size_t count;
  ct__slots *retired;       /* replaced slot arrays, freed with the table */
} ct__name_table;

/* The hash of len bytes at s (the same for every table, so a walk up the ancestors hashes once). */
uint64_t ct__name_hash(const char *s, size_t len);

/* Lock-free: the variable named (name, len) with hash h, or NULL. */
ct_var *ct__table_find(const ct__name_table *t, const char *name, size_t len, uint64_t h);

/* Writer side: the caller holds the scope's mutex. */

/* The lookup of a writer, which may be inside its own write section. */
ct_var *ct__table_find_locked(const ct__name_table *t, const char *name, size_t len, uint64_t h);

void ct__table_write_begin(ct__name_table *t);
void ct__table_write_end(ct__name_table *t);

/* Makes room for one more variable, before a write section: 0 when memory runs out (nothing
 * changed). Grows into a new slot array when the table would pass half full. */
int ct__table_reserve(ct__name_table *t);

/* Inside a write section: adds v (whose name hashes to h) after a successful reserve. */
void ct__table_insert(ct__name_table *t, ct_var *v, uint64_t h);

/* Inside a write section: removes v, which is in the table under hash h. */
void ct__table_remove(ct__name_table *t, ct_var *v, uint64_t h);

/* Calls fn(v, arg) for each variable; for writers (or a quiescent table). */
void ct__table_each(const ct__name_table *t, void (*fn)(ct_var *v, void *arg), void *arg);

/* Frees the slot arrays (not the variables). */
void ct__table_destroy(ct__name_table *t);

#endif /* CORTEN_CORE_NAME_TABLE_H */
