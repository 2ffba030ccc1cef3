/* SPDX-License-Identifier: Apache-2.0 */
/* examples/expr.c: lazy expressions (corten/expr.h). dst = a * b + c in one pass with no
 * temporary, then dst += 0.5 * dot(a^T, b) as one GEMM call; checks what it computes. */
#include <stdio.h>

#include <corten/corten.h>

static ct_tensor *matrix(const float *v, ct_ddim dims) {
  ct_tensor *t = ct_tensor_new();
  if (t != NULL && ct_tensor_set_value(t, v, dims, CT_FLOAT32, ct_cpu()) != CT_OK) {
    ct_tensor_free(t);
    return NULL;
  }
  return t;
}

int main(void) {
  const float av[4] = {1, 2, 3, 4}, bv[4] = {5, 6, 7, 8}, cv[2] = {10, 20};
  ct_tensor *a = matrix(av, CT_DIMS(2, 2)), *b = matrix(bv, CT_DIMS(2, 2));
  ct_tensor *c = matrix(cv, CT_DIMS(2)), *dst = ct_tensor_new();
  int rc = 1;
  if (a == NULL || b == NULL || c == NULL || dst == NULL) goto done;

  /* dst = a * b + c: built without computing anything (c broadcasts over the rows); a NULL
   * anywhere comes out at the top, and the first error stays in ct_last_error(). */
  ct_expr *e = ct_expr_binary(CT_EXPR_ADD,
                              ct_expr_binary(CT_EXPR_MUL, ct_expr_tensor(a), ct_expr_tensor(b)),
                              ct_expr_tensor(c));
  ct_status s = ct_expr_assign(dst, CT_SAVETO, e); /* one pass over dst, no temporaries */
  ct_expr_free(e);
  if (s != CT_OK) goto done;

  /* dst += 0.5 * dot(a^T, b): one GEMM call, alpha 0.5, beta 1, a transposed in place. */
  e = ct_expr_binary(CT_EXPR_MUL, ct_expr_scalar(0.5),
                     ct_expr_dot(ct_expr_tensor(a), true, ct_expr_tensor(b), false));
  s = ct_expr_assign(dst, CT_PLUSTO, e);
  ct_expr_free(e);
  if (s != CT_OK) goto done;

  const float *d = ct_tensor_data(dst, CT_FLOAT32);
  /* a*b+c = [15 32; 31 52]; a^T b = [26 30; 38 44], half of it added. */
  const float want[4] = {28, 47, 50, 74};
  rc = 0;
  for (int i = 0; i < 4; i++) rc |= d[i] != want[i];
  printf("dst = [%g %g; %g %g]%s\n", d[0], d[1], d[2], d[3], rc ? " (wrong)" : "");
done:
  if (rc && ct_last_status() != CT_OK) fprintf(stderr, "expr: %s\n", ct_last_error());
  ct_tensor_free(a);
  ct_tensor_free(b);
  ct_tensor_free(c);
  ct_tensor_free(dst);
  return rc;
}
