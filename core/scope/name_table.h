/* SPDX-License-Identifier: Apache-2.0 */
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
#include <string.h>

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

/* ---- Lookups, inline: they are the hot path of every program that runs ops by name ---------- */

static inline uint64_t ct__load64(const char *p) {
  uint64_t w;
  memcpy(&w, p, sizeof w);
  return w;
}

static inline uint64_t ct__load32(const char *p) {
  uint32_t w;
  memcpy(&w, p, sizeof w);
  return w;
}

/* 64x64 -> 128-bit multiply, folded: the mixing step of the hash. */
static inline uint64_t ct__fold_mul(uint64_t a, uint64_t b) {
  __uint128_t r = (__uint128_t)a * b;
  return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/* The hash of len bytes at s, the same for every table, so a walk up the ancestors hashes once.
 * One multiply per 16 bytes and one to finish; the last 1..16 bytes are read as two
 * overlapping words, never past the end. */
static inline uint64_t ct__name_hash(const char *s, size_t len) {
  const uint64_t k0 = 0x9e3779b97f4a7c15u, k1 = 0xd6e8feb86659fd93u, k2 = 0xa0761d6478bd642fu;
  uint64_t h = k0 ^ len, a, b;
  size_t i = 0;
  for (; len - i > 16; i += 16) h = ct__fold_mul(ct__load64(s + i) ^ k1, ct__load64(s + i + 8) ^ h);
  size_t rest = len - i;
  const char *t = s + i;
  if (rest >= 8) {
    a = ct__load64(t);
    b = ct__load64(t + rest - 8);
  } else if (rest >= 4) {
    a = ct__load32(t);
    b = ct__load32(t + rest - 4);
  } else {
    a = rest ? ((uint64_t)(unsigned char)t[0] << 16) |
                   ((uint64_t)(unsigned char)t[rest / 2] << 8) | (unsigned char)t[rest - 1]
             : 0;
    b = 0;
  }
  h = ct__fold_mul(a ^ k1, b ^ h ^ k2);
  return ct__fold_mul(h ^ k0, k1 ^ len);
}

/* A stored name is read and written in aligned 8-byte words through relaxed atomics: a lookup
 * reads it while a writer (rename, or a create reusing an erased variable) may be rewriting it,
 * which the sequence check then throws away, and relaxed atomics make that overlap a defined
 * (and ThreadSanitizer-clean) access instead of a data race. On x86-64 and AArch64 such a load or
 * store is the same single move as a plain one. Name buffers are 8-byte aligned and their
 * capacity is a multiple of 8, so a word never crosses the buffer's end. */
static inline uint64_t ct__name_word(const char *p) {
  return __atomic_load_n((const uint64_t *)(const void *)p, __ATOMIC_RELAXED);
}

/* Bytes i..len-1 (1 to 7 of them) of the caller's name as the low bytes of a word in memory
 * order, read without a variable-length copy and never past the name's end. */
static inline uint64_t ct__name_tail(const char *name, size_t i, size_t len) {
  size_t k = len - i;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (len >= 8) return ct__load64(name + len - 8) >> (8 * (8 - k));
  if (k >= 4) return ct__load32(name) | (ct__load32(name + k - 4) << (8 * (k - 4)));
  return (uint64_t)(unsigned char)name[0] | ((uint64_t)(unsigned char)name[k / 2] << (8 * (k / 2))) |
         ((uint64_t)(unsigned char)name[k - 1] << (8 * (k - 1)));
#else
  uint64_t q = 0;
  memcpy(&q, name + i, k);
  return q;
#endif
}

/* Whether v is called (name, len). Reads at most the name's capacity, whatever a writer is
 * doing, so a torn read is only ever a wrong answer that the sequence check throws away. */
static inline int ct__var_named(const ct_var *v, const char *name, size_t len) {
  size_t vlen = atomic_load_explicit(&v->name_len, memory_order_relaxed);
  const char *n = atomic_load_explicit(&v->name, memory_order_acquire);
  if (vlen != len || n == NULL || len >= ct__var_name_cap(v, n)) return 0;
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    if (ct__name_word(n + i) != ct__load64(name + i)) return 0;
  }
  /* The stored word holding the terminator is zero past it (ct__name_store pads it), so the
   * tail compares as a whole word. */
  return i == len || ct__name_word(n + i) == ct__name_tail(name, i, len);
}

/* Writer side of the above: stores the name and its terminator as whole words (zero-padded to
 * the next multiple of 8, which the buffer's capacity allows). */
_Static_assert(offsetof(struct ct_var, inline_name) % 8 == 0 && CT__VAR_INLINE_NAME % 8 == 0 &&
                   offsetof(ct__name, s) % 8 == 0,
               "name buffers are read and written in aligned 8-byte words");

static inline void ct__name_store(char *dst, const char *name, size_t len) {
  for (size_t i = 0; i <= len; i += 8) {
    uint64_t w = 0; /* the terminator and the padding are its zero bytes */
    memcpy(&w, name + i, len - i < 8 ? len - i : 8);
    __atomic_store_n((uint64_t *)(void *)(dst + i), w, __ATOMIC_RELAXED);
  }
}

static inline ct_var *ct__slots_probe(const ct__slots *sl, const char *name, size_t len,
                                      uint64_t h) {
  size_t mask = sl->mask;
  for (size_t i = h & mask, n = 0; n <= mask; i = (i + 1) & mask, n++) {
    ct_var *v = atomic_load_explicit(&sl->slot[i].var, memory_order_relaxed);
    if (v == NULL) return NULL;
    if (atomic_load_explicit(&sl->slot[i].hash, memory_order_relaxed) == h &&
        ct__var_named(v, name, len)) {
      return v;
    }
  }
  return NULL;
}

static inline void ct__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Lock-free: the variable named (name, len) with hash h, or NULL. */
static inline ct_var *ct__table_find(const ct__name_table *t, const char *name, size_t len,
                                     uint64_t h) {
  for (;;) {
    unsigned s1 = atomic_load_explicit(&t->seq, memory_order_acquire);
    if (__builtin_expect(s1 & 1u, 0)) {
      ct__cpu_relax();
      continue;
    }
    const ct__slots *sl = atomic_load_explicit(&t->slots, memory_order_acquire);
    ct_var *found = sl ? ct__slots_probe(sl, name, len, h) : NULL;
    atomic_thread_fence(memory_order_acquire);
    if (__builtin_expect(atomic_load_explicit(&t->seq, memory_order_relaxed) == s1, 1)) {
      return found;
    }
  }
}

/* Writer side: the caller holds the scope's mutex. */

/* The lookup of a writer, which may be inside its own write section. */
static inline ct_var *ct__table_find_locked(const ct__name_table *t, const char *name, size_t len,
                                            uint64_t h) {
  const ct__slots *sl = atomic_load_explicit(&t->slots, memory_order_relaxed);
  return sl ? ct__slots_probe(sl, name, len, h) : NULL;
}

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
