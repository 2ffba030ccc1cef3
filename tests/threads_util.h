/* SPDX-License-Identifier: Apache-2.0 */
/* tests/threads_util.h: the helpers of the thread suites (test_threads*.c): the thread counts
 * every split kernel is run at, data whose float sums depend on the order, the check that an op
 * gives the same bytes at every count, and that check for reduce_sum. */
#ifndef CORTEN_TESTS_THREADS_UTIL_H
#define CORTEN_TESTS_THREADS_UTIL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "op_util.h"

static const int counts[] = {1, 2, 3, 7};

/* Values in [-50, 53) with fractions (float32 values), in no order: float sums of them depend
 * on the order. */
static inline double data_mixed64(int64_t i) {
  return (double)((uint64_t)(i + 1) * 2654435761u % 10007) / 97.0 - 50.0;
}
static inline double data_mixed(int64_t i) { return (float)data_mixed64(i); }

/* Runs op over s at each thread count and checks that the bytes of outputs outs[0..n) are the
 * same every time; leaves the last results in s and the thread count at its default. */
static inline void check_outs_same_at_counts(ct_scope *s, const ct_op *op,
                                             const char *const *outs, size_t n_outs) {
  void *first[8] = {NULL};
  size_t bytes[8] = {0};
  ck_assert_uint_le(n_outs, 8);
  for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
    ct_set_num_threads(counts[k]);
    ck_assert_int_eq(ct_get_num_threads(), counts[k]);
    run(op, s);
    for (size_t o = 0; o < n_outs; o++) {
      const ct_tensor *t = tensor_of(s, outs[o]);
      const void *p = ct_tensor_data(t, ct_tensor_dtype(t));
      ck_assert_ptr_nonnull(p);
      size_t n = (size_t)ct_tensor_numel(t) * ct_dtype_size(ct_tensor_dtype(t));
      if (k == 0) {
        bytes[o] = n;
        first[o] = xmalloc((int64_t)n, 1);
        memcpy(first[o], p, n);
        continue;
      }
      ck_assert_uint_eq(n, bytes[o]);
      ck_assert_msg(memcmp(first[o], p, n) == 0, "%s at %d threads differs from 1 thread",
                    outs[o], counts[k]);
    }
  }
  for (size_t o = 0; o < n_outs; o++) free(first[o]);
  ct_set_num_threads(0);
}

/* check_outs_same_at_counts of one output. */
static inline void check_same_at_counts(ct_scope *s, const ct_op *op, const char *out) {
  check_outs_same_at_counts(s, op, &out, 1);
}

/* reduce_sum of float64 X (dims xd) over dims (n of them; none: all) at every count (float64:
 * float32 sums run in double, where another order seldom shows), and within 1e-12 of a plain
 * sum (the kernel folds runs in lanes). */
static inline void check_reduce_sum(ct_ddim xd, const int64_t *dims, size_t n) {
  ct_scope *s = ct_scope_new();
  put_fn(s, "x", CT_FLOAT64, xd, data_mixed64);
  ct_op *op = op_x("reduce_sum", "x", "out");
  if (n > 0) ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", dims, n), CT_OK);
  check_same_at_counts(s, op, "out");
  const ct_tensor *t = tensor_of(s, "out");
  const double *o = ct_tensor_data(t, CT_FLOAT64);
  int64_t no = ct_tensor_numel(t), nx = ct_ddim_numel(xd);
  double *want = calloc((size_t)no, sizeof *want);
  bool red[CT_MAX_RANK];
  for (int k = 0; k < CT_MAX_RANK; k++) red[k] = n == 0;
  for (size_t k = 0; k < n; k++) red[dims[k]] = true;
  for (int64_t i = 0; i < nx; i++) {
    int64_t rem = i, at = 0, st = 1;
    for (int k = xd.rank - 1; k >= 0; k--) {
      if (!red[k]) {
        at += rem % xd.d[k] * st;
        st *= xd.d[k];
      }
      rem /= xd.d[k];
    }
    want[at] += data_mixed64(i);
  }
  for (int64_t i = 0; i < no; i++) {
    ck_assert_msg(fabs(o[i] - want[i]) <= 1e-12 * (1 + fabs(want[i])), "out[%lld] %.17g, want %.17g",
                  (long long)i, o[i], want[i]);
  }
  free(want);
  ct_op_free(op);
  ct_scope_free(s);
}

#endif /* CORTEN_TESTS_THREADS_UTIL_H */
