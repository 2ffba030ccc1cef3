/* SPDX-License-Identifier: Apache-2.0 */
/* Uses a few calls of every module and exits 0 when they behave. */
#include <corten/corten.h>
#include <stdio.h>

int main(void) {
  ct_scope *s = ct_scope_new();
  ct_tensor *t = ct_var_tensor(ct_scope_var(s, "x"));
  ct_memory_stats st;
  int ok = t != NULL && ct_tensor_resize(t, CT_DIMS(2, 3)) == CT_OK &&
           ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()) != NULL &&
           ct_memory_stats_get(ct_cpu(), &st) == CT_OK && st.allocated == 24 &&
           ct_scope_find_var(s, "x") != NULL;
  ct_scope_free(s);
  printf("consumer: %s\n", ok ? "ok" : ct_last_error());
  return ok ? 0 : 1;
}
