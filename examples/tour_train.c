/* SPDX-License-Identifier: Apache-2.0 */
/* Training: a softmax classifier learns two classes of points with sgd. The README's third
 * tour program; examples/train_digits.c does the same on real handwritten digits. */
#include <stdio.h>

#include <corten/corten.h>

/* Appends an op wired by the NULL-ended pairs "Slot", "name" ("Slot" an input, ">Slot" an
 * output); the program owns it. */
static ct_status add(ct_program *p, const char *type, const char *const *wiring) {
  ct_op *op = ct_op_new(type);
  if (op == NULL) return ct_last_status();
  for (int i = 0; wiring[i] != NULL; i += 2) {
    const char *slot = wiring[i], *var = wiring[i + 1];
    ct_status s = slot[0] == '>' ? ct_op_set_output(op, slot + 1, var)
                                 : ct_op_set_input(op, slot, var);
    if (s != CT_OK) {
      ct_op_free(op);
      return s;
    }
  }
  return ct_program_append(p, op);
}
#define ADD(p, type, ...) add((p), (type), (const char *const[]){__VA_ARGS__, NULL})

static ct_status put(ct_scope *s, const char *name, const void *v, ct_ddim dims, ct_dtype t) {
  ct_tensor *tensor = ct_var_tensor(ct_scope_var(s, name));
  return tensor ? ct_tensor_set_value(tensor, v, dims, t, ct_cpu()) : ct_last_status();
}

int main(void) {
  const float x[] = {0, 0, 1, 0, 0, 1, 1, 1, 3, 3, 4, 3, 3, 4, 4, 4}; /* 8 points */
  const int64_t label[] = {0, 0, 0, 0, 1, 1, 1, 1};
  const float w[4] = {0}, b[2] = {0}, lr = 0.5f;
  ct_scope *s = ct_scope_new();
  ct_program *p = ct_program_new();
  const char *params[] = {"w", "b"};
  ct_status st = s && p ? CT_OK : CT_ERR_OUT_OF_MEMORY;
  if (st == CT_OK) st = put(s, "x", x, CT_DIMS(8, 2), CT_FLOAT32);
  if (st == CT_OK) st = put(s, "label", label, CT_DIMS(8), CT_INT64);
  if (st == CT_OK) st = put(s, "w", w, CT_DIMS(2, 2), CT_FLOAT32);
  if (st == CT_OK) st = put(s, "b", b, CT_DIMS(2), CT_FLOAT32);
  if (st == CT_OK) st = put(s, "lr", &lr, CT_DIMS(1), CT_FLOAT32);
  /* The forward ops, then the ones ct_program_append_backward makes (w@GRAD, b@GRAD), then
   * one sgd per parameter, updating it in place: the whole step is one program. */
  if (st == CT_OK) st = ADD(p, "matmul", "X", "x", "Y", "w", ">Out", "xw");
  if (st == CT_OK) st = ADD(p, "elementwise_add", "X", "xw", "Y", "b", ">Out", "logits");
  if (st == CT_OK) {
    st = ADD(p, "softmax_with_cross_entropy", "Logits", "logits", "Label", "label",
             ">Softmax", "prob", ">Loss", "row_loss");
  }
  if (st == CT_OK) st = ADD(p, "mean", "X", "row_loss", ">Out", "loss");
  if (st == CT_OK) st = ct_program_append_backward(p, "loss", params, 2);
  for (int i = 0; i < 2 && st == CT_OK; i++) {
    char grad[16];
    snprintf(grad, sizeof grad, "%s@GRAD", params[i]);
    st = ADD(p, "sgd", "Param", params[i], "Grad", grad, "LearningRate", "lr", ">ParamOut",
             params[i]);
  }
  ct_executor *ex = st == CT_OK ? ct_executor_new(p, s, ct_cpu()) : NULL;
  double first = 0, last = 0;
  for (int step = 0; ex != NULL && step < 200 && st == CT_OK; step++) {
    st = ct_executor_run(ex);
    const float *l = ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(s, "loss")), CT_FLOAT32);
    if (st == CT_OK && step == 0) first = *l;
    if (st == CT_OK) last = *l;
  }
  if (ex == NULL || st != CT_OK) fprintf(stderr, "tour_train: %s\n", ct_last_error());
  else printf("loss %.4f after the first step, %.4f after 200\n", first, last);
  int ok = ex != NULL && st == CT_OK && last < first / 10;
  ct_executor_free(ex);
  ct_program_free(p);
  ct_scope_free(s);
  return ok ? 0 : 1;
}
