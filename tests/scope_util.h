/* SPDX-License-Identifier: Apache-2.0 */
/* The helpers of the scope suites (test_scope*.c): a value type that counts its lifecycle calls,
 * atomically so that the thread test can use it too. */
#ifndef CORTEN_TESTS_SCOPE_UTIL_H
#define CORTEN_TESTS_SCOPE_UTIL_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#include <corten/corten.h>

#include "harness.h"

typedef struct counted {
  int64_t value;
  int alive; /* 1 between init and destroy */
} counted;

static atomic_int counted_inits;
static atomic_int counted_destroys;
static atomic_int counted_double_destroys; /* destroy on an object not alive */

static inline void counted_init(void *obj) {
  counted *c = obj;
  c->alive = 1;
  atomic_fetch_add(&counted_inits, 1);
}

static inline void counted_destroy(void *obj) {
  counted *c = obj;
  if (c->alive != 1) atomic_fetch_add(&counted_double_destroys, 1);
  c->alive = 0;
  atomic_fetch_add(&counted_destroys, 1);
}

static const ct_type counted_type = {"counted", sizeof(counted), alignof(counted), counted_init,
                                     counted_destroy};

static inline void reset_counters(void) {
  atomic_store(&counted_inits, 0);
  atomic_store(&counted_destroys, 0);
  atomic_store(&counted_double_destroys, 0);
}

/* Makes name in s hold a counted value of v; returns the variable. */
static inline ct_var *put_counted(ct_scope *s, const char *name, int64_t v) {
  ct_var *var = ct_scope_var(s, name);
  counted *c;
  ck_assert_ptr_nonnull(var);
  c = ct_var_get_mutable(var, &counted_type);
  ck_assert_ptr_nonnull(c);
  c->value = v;
  return var;
}

static inline int64_t counted_value(const ct_var *var) {
  const counted *c = ct_var_get(var, &counted_type);
  ck_assert_ptr_nonnull(c);
  return c->value;
}

#endif /* CORTEN_TESTS_SCOPE_UTIL_H */
