/* SPDX-License-Identifier: Apache-2.0 */
/* core/variable/variable_impl.h: the layout of a variable, shared with the scope that owns it.
 *
 * A variable is a type pointer, an object pointer and, for small values (a ct_tensor, an int64),
 * inline storage for the object, so making a variable and its tensor is one allocation. A
 * variable made by a scope also carries its name, which the scope maintains; the variable module
 * only reads it for messages. */
#ifndef CORTEN_CORE_VARIABLE_IMPL_H
#define CORTEN_CORE_VARIABLE_IMPL_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>

#include <corten/variable.h>

/* A variable name too long for the variable's inline buffer, owned by its scope. Its capacity
 * never changes, so a lock-free reader that compares at most cap bytes stays inside the
 * allocation whatever a writer does meanwhile. */
typedef struct ct__name {
  size_t cap;                    /* bytes of s, the terminator included */
  struct ct__name *retired_next; /* the owner's list of replaced names */
  char s[];
} ct__name;

/* Objects up to this size with alignment up to 16 live inside the variable. */
#define CT__VAR_INLINE 128
/* Names up to this size (terminator included) live inside the variable, next to the fields a
 * lookup reads (within 64 bytes of the variable's start). */
#define CT__VAR_INLINE_NAME 32

/* The head and everything a name lookup reads take the first 64 bytes; the inline storage the
 * next 128, its first 64 bytes all an op run reads of a tensor of rank up to 3 (tensor_impl.h),
 * one cache line in a standalone variable (64-byte aligned, CT__VAR_BYTES); the rest after. */
struct ct_var {
  ct__var_head head;       /* type (NULL while empty) and the value; see corten/variable.h */
  _Atomic size_t name_len; /* 0 for a standalone variable */
  const char *_Atomic name; /* inline_name, heap_name->s, or NULL for a standalone variable */
  char inline_name[CT__VAR_INLINE_NAME];
  alignas(16) unsigned char inline_obj[CT__VAR_INLINE];
  ct__name *heap_name;     /* the block holding a long name, or NULL */
  void *owner;             /* the owning scope, NULL for a standalone variable */
  ct_var *next_free;       /* the owner's list of erased variables awaiting reuse */
};

/* The memory of a standalone variable (ct_var_new): small host memory (common/alloc.h's
 * ct__small_alloc, released with ct__small_free and this size), so it is 64-byte aligned (the
 * lookup fields in the first cache line, a tensor's hot fields in the second) and a variable
 * made and freed again and again on one thread comes from that thread's cache. A scope's
 * variables take sizeof(ct_var) from ct__alloc, packed tighter: a program's thousands of them
 * at 256-byte alignment crowded a quarter of the cache sets and made each op run slower. */
#define CT__VAR_BYTES ((sizeof(ct_var) + 63) & ~(size_t)63)

/* Bytes readable at a name pointer of v: a bound that holds whatever a writer does. */
static inline size_t ct__var_name_cap(const ct_var *v, const char *name) {
  if (name == v->inline_name) return CT__VAR_INLINE_NAME;
  return ((const ct__name *)(const void *)(name - offsetof(ct__name, s)))->cap;
}

/* Makes v a fresh, empty variable with no owner or name. */
void ct__var_init(ct_var *v);

#endif /* CORTEN_CORE_VARIABLE_IMPL_H */
