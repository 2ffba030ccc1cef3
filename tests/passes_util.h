/* SPDX-License-Identifier: Apache-2.0 */
/* The helpers of the graph-pass suites (test_passes*.c): a variable filled with a fixed
 * pseudo-random pattern, and whether a variable holds memory (a fused intermediate never
 * does). */
#ifndef CORTEN_TESTS_PASSES_UTIL_H
#define CORTEN_TESTS_PASSES_UTIL_H

#include "op_util.h"

/* Fills variable name (dims d, float32 or float64 dt) with a fixed pseudo-random pattern of
 * seed, values in -1 .. 1. */
static inline void put_pattern(ct_scope *s, const char *name, ct_ddim d, unsigned seed,
                               ct_dtype dt) {
  ct_tensor *t = ct_var_tensor(ct_scope_var(s, name));
  ck_assert_int_eq(ct_tensor_resize(t, d), CT_OK);
  void *p = ct_tensor_mutable_data(t, dt, ct_cpu());
  ck_assert_ptr_nonnull(p);
  unsigned v = seed * 2654435761u + 1;
  for (int64_t i = 0; i < ct_tensor_numel(t); i++) {
    v = v * 1103515245u + 12345u;
    double x = (double)((v >> 8) % 2001) / 1000.0 - 1.0;
    if (dt == CT_FLOAT32) ((float *)p)[i] = (float)x;
    else ((double *)p)[i] = x;
  }
}

static inline bool has_memory(const ct_scope *s, const char *name) {
  const ct_var *v = ct_scope_find_var(s, name);
  return v != NULL && ct_tensor_has_memory(ct_var_get_tensor(v));
}

#endif
