/* SPDX-License-Identifier: Apache-2.0 */
/* The corten side of the PyTorch parity test (tests/python/test_torch_parity.py): trains a small
 * MLP in float64 for 25 SGD steps and writes what the script compares with the same training in
 * PyTorch.
 *
 *   x [16, 12] -matmul fc1.w [12, 8] -add fc1.b -relu -matmul fc2.w [8, 5] -add fc2.b-> logits
 *   logits, labels -softmax_with_cross_entropy-> row_loss -mean-> loss; sgd(lr 0.1) in place
 *
 * The inputs and initial weights are fixed values made here (smooth patterns, no random
 * generator) and written first, so both sides start from the same numbers. Then: the logits,
 * loss and gradients of the first step, the loss of every step, and the weights after the last.
 *
 * Usage: torch_parity OUT. OUT is text: for each array a line "name count", then count values
 * one per line (%.17g, exact for doubles). Exits 0 when written, 77 when this build has no
 * gradient for an op of the network (the script then reports a skip), 1 on any other failure. */
#include <math.h>
#include <stdio.h>

#include <corten/corten.h>

#include "parity_util.h"

enum { N = 16, IN = 12, HID = 8, OUT = 5, STEPS = 25 };

static const char *const PARAMS[] = {"fc1.w", "fc1.b", "fc2.w", "fc2.b"};

/* Appends type(X = x, Y = y) -> out; y may be NULL. */
static ct_status add(ct_program *p, const char *type, const char *x, const char *y,
                     const char *out) {
  ct_op *op = ct_op_new(type);
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", x);
  if (s == CT_OK && y != NULL) s = ct_op_set_input(op, "Y", y);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", out);
  if (s != CT_OK) {
    ct_op_free(op);
    return s;
  }
  return ct_program_append(p, op);
}

static ct_status build(ct_program *p) {
  ct_status s = add(p, "matmul", "x", "fc1.w", "h.mm");
  if (s == CT_OK) s = add(p, "elementwise_add", "h.mm", "fc1.b", "h.pre");
  if (s == CT_OK) s = add(p, "relu", "h.pre", NULL, "h");
  if (s == CT_OK) s = add(p, "matmul", "h", "fc2.w", "z.mm");
  if (s == CT_OK) s = add(p, "elementwise_add", "z.mm", "fc2.b", "logits");
  if (s != CT_OK) return s;
  ct_op *op = ct_op_new("softmax_with_cross_entropy");
  if (op == NULL) return ct_last_status();
  s = ct_op_set_input(op, "Logits", "logits");
  if (s == CT_OK) s = ct_op_set_input(op, "Label", "labels");
  if (s == CT_OK) s = ct_op_set_output(op, "Softmax", "prob");
  if (s == CT_OK) s = ct_op_set_output(op, "Loss", "row_loss");
  if (s != CT_OK) {
    ct_op_free(op);
    return s;
  }
  if ((s = ct_program_append(p, op)) != CT_OK) return s;
  if ((s = add(p, "mean", "row_loss", NULL, "loss")) != CT_OK) return s;
  if ((s = ct_program_append_backward(p, "loss", PARAMS, 4)) != CT_OK) return s;
  for (int i = 0; i < 4 && s == CT_OK; i++) {
    char g[32];
    snprintf(g, sizeof g, "%s@GRAD", PARAMS[i]);
    op = ct_op_new("sgd");
    if (op == NULL) return ct_last_status();
    s = ct_op_set_input(op, "Param", PARAMS[i]);
    if (s == CT_OK) s = ct_op_set_input(op, "Grad", g);
    if (s == CT_OK) s = ct_op_set_input(op, "LearningRate", "lr");
    if (s == CT_OK) s = ct_op_set_output(op, "ParamOut", PARAMS[i]);
    if (s != CT_OK) {
      ct_op_free(op);
      return s;
    }
    s = ct_program_append(p, op);
  }
  return s;
}

/* A float64 tensor of dims in variable name, element i = a sin(b i + c). */
static ct_status put_pattern(ct_scope *s, const char *name, ct_ddim dims, double a, double b,
                             double c) {
  double v[N * IN];
  int64_t n = ct_ddim_numel(dims);
  for (int64_t i = 0; i < n; i++) v[i] = a * sin(b * (double)i + c);
  return ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, name)), v, dims, CT_FLOAT64,
                             ct_cpu());
}

static int run(FILE *f, ct_scope *s, ct_program *p) {
  int64_t labels[N];
  for (int i = 0; i < N; i++) labels[i] = (7 * i + 3) % OUT;
  double lr = 0.1;
  if (put_pattern(s, "x", CT_DIMS(N, IN), 1.0, 0.37, 0.1) != CT_OK ||
      put_pattern(s, "fc1.w", CT_DIMS(IN, HID), 0.4, 1.13, 0.2) != CT_OK ||
      put_pattern(s, "fc1.b", CT_DIMS(HID), 0.1, 0.71, 0.3) != CT_OK ||
      put_pattern(s, "fc2.w", CT_DIMS(HID, OUT), 0.5, 0.89, 0.4) != CT_OK ||
      put_pattern(s, "fc2.b", CT_DIMS(OUT), 0.1, 0.53, 0.5) != CT_OK ||
      ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, "labels")), labels, CT_DIMS(N),
                          CT_INT64, ct_cpu()) != CT_OK ||
      ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, "lr")), &lr, CT_DIMS(1), CT_FLOAT64,
                          ct_cpu()) != CT_OK) {
    return fail("putting the inputs");
  }
  if (write_var(f, s, "x", "x") || write_var(f, s, "labels", "labels") ||
      write_params(f, s, PARAMS, 4, "")) {
    return 1;
  }
  ct_status st = build(p);
  if (st == CT_ERR_UNSUPPORTED) {
    printf("SKIPPED: this build of corten lacks a gradient the MLP needs: %s\n", ct_last_error());
    return 77;
  }
  if (st != CT_OK) return fail("building the program");
  static const char *const first[] = {"logits", "row_loss"};
  return parity_train(f, s, p, STEPS, first, 2, PARAMS, 4);
}

int main(int argc, char **argv) {
  parity_name = "torch_parity";
  return parity_main(argc, argv, run);
}
