/* SPDX-License-Identifier: Apache-2.0 */
/* Ops, programs and the executor: the README's second tour program. */
#include <stdio.h>

#include <corten/corten.h>

/* Puts a float32 tensor of dims holding values into variable name of s. */
static ct_status put(ct_scope *s, const char *name, ct_ddim dims, const float *values) {
  ct_tensor *t = ct_var_tensor(ct_scope_var(s, name));
  if (t == NULL) return ct_last_status();
  return ct_tensor_set_value(t, values, dims, CT_FLOAT32, ct_cpu());
}

int main(void) {
  ct_scope *scope = ct_scope_new();
  const float a[] = {1, 2, 3, 4, 5, 6}, b[] = {1, 0, 0, 1, 1, 1};
  if (scope == NULL || put(scope, "v1", CT_DIMS(2, 3), a) != CT_OK ||
      put(scope, "v2", CT_DIMS(3, 2), b) != CT_OK) {
    goto fail;
  }

  /* An op names the variables it reads and writes, slot by slot (docs/ops.md lists them). */
  ct_op *mm = ct_op_new("matmul");
  if (mm == NULL || ct_op_set_input(mm, "X", "v1") != CT_OK ||
      ct_op_set_input(mm, "Y", "v2") != CT_OK ||
      ct_op_set_output(mm, "Out", "vr") != CT_OK ||      /* created in the scope when missing */
      ct_op_run(mm, scope, ct_cpu()) != CT_OK) {         /* vr's dims come from infer-shape */
    ct_op_free(mm);
    goto fail;
  }

  /* A program owns its ops; an executor resolves every name once, then runs without look-ups. */
  ct_program *prog = ct_program_new();
  if (prog == NULL || ct_program_append(prog, mm) != CT_OK) goto fail;
  ct_op *relu = ct_op_new("relu");
  if (relu == NULL || ct_op_set_input(relu, "X", "vr") != CT_OK ||
      ct_op_set_output(relu, "Out", "vy") != CT_OK || ct_program_append(prog, relu) != CT_OK) {
    ct_program_free(prog);
    goto fail;
  }
  ct_executor *ex = ct_executor_new(prog, scope, ct_cpu());
  if (ex == NULL || ct_executor_run(ex) != CT_OK) {
    ct_executor_free(ex);
    ct_program_free(prog);
    goto fail;
  }
  const float *y = ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(scope, "vy")), CT_FLOAT32);
  printf("vy = [[%g, %g], [%g, %g]]\n", y[0], y[1], y[2], y[3]); /* [[4, 5], [10, 11]] */
  int ok = y[0] == 4 && y[1] == 5 && y[2] == 10 && y[3] == 11;
  ct_executor_free(ex);
  ct_program_free(prog);
  ct_scope_free(scope);
  return ok ? 0 : 1;

fail:
  fprintf(stderr, "tour_ops: %s\n", ct_last_error());
  ct_scope_free(scope);
  return 1;
}
