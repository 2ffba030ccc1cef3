/* SPDX-License-Identifier: Apache-2.0 */
/* Scopes, variables, lazy memory and views: the README's first tour program. */
#include <stdio.h>

#include <corten/corten.h>

int main(void) {
  ct_scope *params = ct_scope_new();         /* a root scope */
  ct_scope *step = ct_scope_new_kid(params); /* owned by params */
  if (params == NULL || step == NULL) return 1;

  /* Find or create a variable, and the tensor inside it: no memory yet. */
  ct_tensor *w = ct_var_tensor(ct_scope_var(params, "fc1.w"));
  if (w == NULL || ct_tensor_resize(w, CT_DIMS(784, 128)) != CT_OK) goto fail;

  /* Memory appears here, 784 x 128 x 4 bytes, 64-byte aligned. */
  float *data = ct_tensor_mutable_data(w, CT_FLOAT32, ct_cpu());
  if (data == NULL) goto fail;
  for (int i = 0; i < 784 * 128; i++) data[i] = (float)i;

  /* A lookup from the kid finds the parent's variable; a view shares its memory. */
  const ct_tensor *found = ct_var_get_tensor(ct_scope_find_var(step, "fc1.w"));
  ct_tensor *rows = ct_var_tensor(ct_scope_var(step, "fc1.w.rows"));
  if (found == NULL || rows == NULL || ct_tensor_slice(rows, found, 1, 10) != CT_OK) goto fail;
  const float *r = ct_tensor_data(rows, CT_FLOAT32); /* rows [1,10), no copy */
  printf("rows [1,10) of fc1.w start with %g\n", r[0]);     /* 128 */

  /* Wrong type: NULL, and a message that names the variable and both types. */
  if (ct_var_get(ct_scope_find_var(step, "fc1.w"), &ct_int64_type) == NULL) {
    printf("%s\n", ct_last_error()); /* variable 'fc1.w' holds ct_tensor, asked for int64: ... */
  }

  ct_memory_stats st;
  ct_memory_stats_get(ct_cpu(), &st);
  printf("host memory held by tensors: %zu bytes\n", st.allocated); /* 401408 */
  int ok = st.allocated == 784 * 128 * 4 && r[0] == 128;
  ct_scope_free(params); /* frees step, every variable, the memory */
  return ok ? 0 : 1;

fail:
  fprintf(stderr, "tour_scope: %s\n", ct_last_error());
  ct_scope_free(params);
  return 1;
}
