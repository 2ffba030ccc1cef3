/* SPDX-License-Identifier: Apache-2.0 */
/* tools/onnx_roundtrip.c: `corten onnx MODEL --round-trip`: loads MODEL, runs it on random
 * inputs (floats in [-1, 1), integers 0; symbolic dims 1), saves the program with ct_onnx_save to
 * a temporary file, loads that, runs it on the same inputs and compares every output bit for bit
 * (dtype, dims and bytes). Exit 0 when all are identical, 1 otherwise. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <corten/corten.h>
#include <corten/onnx.h>

#include "tool.h"


static bool run(ct_onnx_model *m, ct_scope *s) {
  ct_executor *e = ct_executor_new(ct_onnx_program(m), s, ct_cpu());
  bool ok = e != NULL && ct_executor_run(e) == CT_OK;
  if (!ok) fprintf(stderr, "corten onnx: running the model failed: %s\n", ct_last_error());
  ct_executor_free(e);
  return ok;
}

/* Whether output name holds the same dtype, dims and bytes in a and b (a line printed). */
static bool same(ct_scope *a, ct_scope *b, const char *name) {
  const ct_tensor *ta = ct_var_get_tensor(ct_scope_find_var(a, name));
  const ct_tensor *tb = ct_var_get_tensor(ct_scope_find_var(b, name));
  if (ta == NULL || tb == NULL) {
    printf("  %s: missing after the %s load\n", name, ta == NULL ? "first" : "second");
    return false;
  }
  ct_dtype dt = ct_tensor_dtype(ta);
  ct_ddim da = ct_tensor_dims(ta), db = ct_tensor_dims(tb);
  bool ok = dt == ct_tensor_dtype(tb) && da.rank == db.rank;
  for (int k = 0; ok && k < da.rank; k++) ok = da.d[k] == db.d[k];
  int64_t n = ct_tensor_numel(ta), diff = 0;
  if (ok) {
    size_t es = ct_dtype_size(dt);
    const unsigned char *pa = ct_tensor_data(ta, dt), *pb = ct_tensor_data(tb, dt);
    ok = pa != NULL && pb != NULL;
    for (int64_t i = 0; ok && i < n; i++) diff += memcmp(pa + i * es, pb + i * es, es) != 0;
    ok = ok && diff == 0;
  }
  printf("  %s: %s, %lld elements: %s", name, ct_dtype_name(dt), (long long)n,
         ok ? "identical\n" : "");
  if (!ok) printf("DIFFERENT (%lld elements differ, or dtype/dims)\n", (long long)diff);
  return ok;
}

int corten_onnx_round_trip(const char *path) {
  char tmp[] = "/tmp/corten-roundtrip-XXXXXX.onnx";
  int fd = mkstemps(tmp, 5);
  if (fd < 0) {
    perror("corten onnx: a temporary file");
    return 1;
  }
  close(fd);
  ct_scope *s1 = ct_scope_new(), *s2 = ct_scope_new();
  ct_onnx_model *m1 = ct_onnx_load(path, s1), *m2 = NULL;
  bool ok = m1 != NULL;
  if (!ok) fprintf(stderr, "corten onnx: %s\n", ct_last_error());
  size_t n_in = ok ? ct_onnx_input_count(m1) : 0, n_out = ok ? ct_onnx_output_count(m1) : 0;
  const char **in = calloc(n_in + 1, sizeof *in), **out = calloc(n_out + 1, sizeof *out);
  ok = ok && in != NULL && out != NULL;
  for (size_t i = 0; ok && i < n_in; i++) {
    in[i] = ct_onnx_input_name(m1, i);
    ok = tool_random_input(m1, i, ct_var_tensor(ct_scope_find_var(s1, in[i])));
  }
  for (size_t i = 0; ok && i < n_out; i++) out[i] = ct_onnx_output_name(m1, i);
  ok = ok && run(m1, s1);
  if (ok && ct_onnx_save(tmp, ct_onnx_program(m1), s1, in, n_in, out, n_out) != CT_OK) {
    fprintf(stderr, "corten onnx: saving failed: %s\n", ct_last_error());
    ok = false;
  }
  if (ok && (m2 = ct_onnx_load(tmp, s2)) == NULL) {
    fprintf(stderr, "corten onnx: loading the saved model failed: %s\n", ct_last_error());
    ok = false;
  }
  for (size_t i = 0; ok && i < n_in; i++) {
    ok = ct_tensor_copy(ct_var_tensor(ct_scope_find_var(s2, in[i])),
                        ct_var_get_tensor(ct_scope_find_var(s1, in[i])), ct_cpu()) == CT_OK;
  }
  ok = ok && run(m2, s2);
  if (ok) {
    char types[2048];
    if (ct_onnx_op_types(tmp, types, sizeof types) == CT_OK) printf("saved op types: %s\n", types);
    printf("round trip of %s: %zu ops loaded, %zu after save and load\n", path,
           ct_program_size(ct_onnx_program(m1)), ct_program_size(ct_onnx_program(m2)));
    bool all = true;
    for (size_t i = 0; i < n_out; i++) all = same(s1, s2, out[i]) && all;
    printf("%s\n", all ? "round trip: every output identical, bit for bit"
                       : "round trip: outputs DIFFER");
    ok = all;
  }
  free(in);
  free(out);
  ct_onnx_free(m1);
  ct_onnx_free(m2);
  ct_scope_free(s1);
  ct_scope_free(s2);
  unlink(tmp);
  return ok ? 0 : 1;
}
