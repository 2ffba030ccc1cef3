/* SPDX-License-Identifier: Apache-2.0 */
/* The helpers of the graph-pass suites (test_passes*.c): a variable filled with a fixed
 * pseudo-random pattern, and whether a variable holds memory (a fused intermediate never
 * does). */
#ifndef CORTEN_TESTS_PASSES_UTIL_H
#define CORTEN_TESTS_PASSES_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Sets element i of variable name (float32 or float64 dt, already sized) to x. */
static inline void put_elem(ct_scope *s, const char *name, ct_dtype dt, int64_t i, double x) {
  void *d = ct_tensor_mutable_data(ct_var_tensor(ct_scope_var(s, name)), dt, ct_cpu());
  ck_assert_ptr_nonnull(d);
  if (dt == CT_FLOAT32) ((float *)d)[i] = (float)x;
  else ((double *)d)[i] = x;
}

/* mid = batch_norm(in) in inference with put_bn's statistics (and its unread outputs). */
static inline void append_bn(ct_program *p, const char *in, const char *mid) {
  ct_op *bn = ct_op_new("batch_norm");
  static const char *const ins[4] = {"Scale", "Bias", "Mean", "Variance"};
  static const char *const outs[4] = {"MeanOut", "VarianceOut", "SavedMean", "SavedVariance"};
  ct_op_set_input(bn, "X", in);
  for (int k = 0; k < 4; k++) {
    char name[16];
    snprintf(name, sizeof name, "bn_in%d", k);
    ct_op_set_input(bn, ins[k], name);
    snprintf(name, sizeof name, "bn_out%d", k);
    ct_op_set_output(bn, outs[k], name);
  }
  ct_op_set_output(bn, "Y", mid);
  ct_op_set_attr_bool(bn, "is_test", true);
  ck_assert_int_eq(ct_program_append(p, bn), CT_OK);
}

/* The batch norm's vectors bn_in0 .. bn_in3 ([c] of dtype dt, seeds 9 .. 12; the variance
 * 0.25 .. 2.25). */
static inline void put_bn(ct_scope *s, int64_t c, ct_dtype dt) {
  for (int k = 0; k < 4; k++) {
    char name[16];
    snprintf(name, sizeof name, "bn_in%d", k);
    put_pattern(s, name, CT_DIMS(c), 9 + (unsigned)k, dt);
    if (k < 3) continue;
    void *v = ct_tensor_mutable_data(ct_var_tensor(ct_scope_var(s, name)), dt, ct_cpu());
    for (int64_t i = 0; i < c; i++) {
      if (dt == CT_FLOAT32) ((float *)v)[i] += 1.25f;
      else ((double *)v)[i] += 1.25;
    }
  }
}

static inline bool has_memory(const ct_scope *s, const char *name) {
  const ct_var *v = ct_scope_find_var(s, name);
  return v != NULL && ct_tensor_has_memory(ct_var_get_tensor(v));
}

/* Runs program p over a fresh scope (make(arg)) with options o (NULL: none) twice; returns a copy
 * of variable out's bytes (dtype dt; their count into *bytes), and into *mem whether variable
 * a or b (b may be NULL) holds memory after the runs. */
static inline void *run_twice(const ct_program *p, ct_scope *(*make)(const void *), const void *arg,
                              const ct_executor_options *o, const char *out, ct_dtype dt,
                              const char *a, const char *b, size_t *bytes, bool *mem) {
  ct_scope *s = make(arg);
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), o);
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  for (int k = 0; k < 2; k++) ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, out));
  *bytes = (size_t)ct_tensor_numel(t) * ct_dtype_size(dt);
  void *buf = xmalloc(ct_tensor_numel(t), ct_dtype_size(dt));
  memcpy(buf, ct_tensor_data(t, dt), *bytes);
  *mem = has_memory(s, a) || (b != NULL && has_memory(s, b));
  ct_executor_free(e);
  ct_scope_free(s);
  return buf;
}

/* Program p run with the optimize option gives the bits it gives without, at 1 and 3 threads
 * (run_twice's arguments); the unoptimized run leaves a or b with memory, the optimized one
 * neither when `fused` (the chain's intermediates never allocated). Frees p. */
static inline void same_bits_fused(ct_program *p, ct_scope *(*make)(const void *),
                                   const void *arg, const char *out, ct_dtype dt, const char *a,
                                   const char *b, bool fused) {
  int old = ct_get_num_threads();
  for (int threads = 1; threads <= 3; threads += 2) {
    ct_set_num_threads(threads);
    size_t n0, n1;
    bool mem0, mem1;
    void *plain = run_twice(p, make, arg, NULL, out, dt, a, b, &n0, &mem0);
    ct_executor_options o = {.optimize = true};
    void *opt = run_twice(p, make, arg, &o, out, dt, a, b, &n1, &mem1);
    ck_assert_uint_eq(n0, n1);
    ck_assert_msg(memcmp(plain, opt, n0) == 0, "bits differ at %d threads", threads);
    ck_assert(mem0);
    ck_assert_msg(mem1 == !fused, "fused: %d, intermediates with memory: %d", fused, mem1);
    free(plain);
    free(opt);
  }
  ct_set_num_threads(old);
  ct_program_free(p);
}

#endif
