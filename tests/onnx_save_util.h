/* SPDX-License-Identifier: Apache-2.0 */
/* tests/onnx_save_util.h: what the export suites (test_onnx_save.c, test_onnx_unroll.c) share:
 * running a program once and comparing two variables bit for bit. */
#ifndef CORTEN_TESTS_ONNX_SAVE_UTIL_H
#define CORTEN_TESTS_ONNX_SAVE_UTIL_H

#include <string.h>

#include <corten/corten.h>

#include "op_util.h"

static inline void run_program(const ct_program *p, ct_scope *s) {
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  ct_executor_free(e);
}

/* Whether variables a of sa and b of sb hold the same dims, dtype and bytes. */
static inline void same_bits(ct_scope *sa, const char *a, ct_scope *sb, const char *b) {
  const ct_tensor *ta = tensor_of(sa, a), *tb = tensor_of(sb, b);
  ck_assert_int_eq(ct_tensor_dtype(ta), ct_tensor_dtype(tb));
  ct_ddim da = ct_tensor_dims(ta), db = ct_tensor_dims(tb);
  ck_assert_int_eq(da.rank, db.rank);
  for (int k = 0; k < da.rank; k++) ck_assert_int_eq(da.d[k], db.d[k]);
  size_t bytes = (size_t)ct_tensor_numel(ta) * ct_dtype_size(ct_tensor_dtype(ta));
  ck_assert_int_eq(memcmp(ct_tensor_data(ta, ct_tensor_dtype(ta)),
                          ct_tensor_data(tb, ct_tensor_dtype(tb)), bytes), 0);
}

#endif /* CORTEN_TESTS_ONNX_SAVE_UTIL_H */
