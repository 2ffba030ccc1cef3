/* SPDX-License-Identifier: Apache-2.0 */
/* Adding an op type from outside corten: `square` (Out = X * X) with a float32 kernel, its
 * infer-shape, and a gradient (square_grad: X@GRAD = 2 X Out@GRAD), registered, run, and
 * differentiated. docs/design/ops.md walks through it. */
#include <stdio.h>

#include <corten/corten.h>

/* Infer-shape: Out takes X's dims; kernels then allocate it at the op's place. */
static ct_status same_dims(const ct_kernel_ctx *c) {
  return ct_tensor_resize(ct_kernel_out(c, 0, 0), ct_tensor_dims(ct_kernel_in(c, 0, 0)));
}

static ct_status square_f32(const ct_kernel_ctx *c) {
  const ct_tensor *x = ct_kernel_in(c, 0, 0);
  float *out = ct_tensor_mutable_data(ct_kernel_out(c, 0, 0), CT_FLOAT32, c->place);
  if (out == NULL) return ct_kernel_fail(c, ct_last_status(), "output Out: no memory");
  const float *xs = ct_tensor_data(x, CT_FLOAT32);
  for (int64_t i = 0; i < ct_tensor_numel(x); i++) out[i] = xs[i] * xs[i];
  return CT_OK;
}

/* square_grad: inputs X, Out@GRAD; output X@GRAD. */
static ct_status square_grad_f32(const ct_kernel_ctx *c) {
  const ct_tensor *x = ct_kernel_in(c, 0, 0);
  const float *xs = ct_tensor_data(x, CT_FLOAT32);
  const float *g = ct_tensor_data(ct_kernel_in(c, 1, 0), CT_FLOAT32);
  float *dx = ct_tensor_mutable_data(ct_kernel_out(c, 0, 0), CT_FLOAT32, c->place);
  if (dx == NULL) return ct_kernel_fail(c, ct_last_status(), "output X@GRAD: no memory");
  for (int64_t i = 0; i < ct_tensor_numel(x); i++) dx[i] = 2 * xs[i] * g[i];
  return CT_OK;
}

/* The grad-op maker: appends square_grad, wired to the names the backward pass hands out. */
static ct_status square_grad_maker(ct_grad_ctx *g) {
  const char *dx = ct_grad_input_grad(g, "X", 0);
  if (dx == NULL) return CT_OK; /* X depends on no parameter */
  ct_op *op = ct_grad_op_new(g, "square_grad");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", ct_grad_input(g, "X", 0));
  if (s == CT_OK) s = ct_op_set_input(op, "Out@GRAD", ct_grad_output_grad(g, "Out", 0));
  if (s == CT_OK) s = ct_op_set_output(op, "X@GRAD", dx);
  return s;
}

static ct_status register_square(void) {
  static const ct_slot_def x[] = {{"X", 0}}, out[] = {{"Out", 0}};
  static const ct_slot_def gin[] = {{"X", 0}, {"Out@GRAD", 0}}, gout[] = {{"X@GRAD", 0}};
  const ct_op_def square = {.type = "square", .inputs = x, .n_inputs = 1, .outputs = out,
                            .n_outputs = 1, .infer_shape = same_dims, .grad = square_grad_maker};
  const ct_op_def grad = {.type = "square_grad", .inputs = gin, .n_inputs = 2, .outputs = gout,
                          .n_outputs = 1, .infer_shape = same_dims};
  ct_status s = ct_op_register(&square);
  if (s == CT_OK) {
    s = ct_op_set_doc("square", "Each element squared: `Out = X * X`, of X's dims and dtype.");
  }
  if (s == CT_OK) s = ct_op_register(&grad);
  if (s == CT_OK) s = ct_kernel_register("square", CT_DEVICE_CPU, CT_FLOAT32, square_f32);
  if (s == CT_OK) {
    s = ct_kernel_register("square_grad", CT_DEVICE_CPU, CT_FLOAT32, square_grad_f32);
  }
  return s;
}

/* Appends type(X = x) -> Out = out to prog; the program owns the op, also on failure. */
static ct_status append_op(ct_program *prog, const char *type, const char *x, const char *out) {
  ct_op *op = ct_op_new(type);
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", x);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", out);
  if (s != CT_OK) {
    ct_op_free(op);
    return s;
  }
  return ct_program_append(prog, op);
}

int main(void) {
  ct_scope *scope = ct_scope_new();
  ct_program *prog = ct_program_new();
  const float w[] = {1, -2, 3};
  if (scope == NULL || prog == NULL || register_square() != CT_OK) goto fail;
  ct_tensor *wt = ct_var_tensor(ct_scope_var(scope, "w"));
  if (wt == NULL || ct_tensor_set_value(wt, w, CT_DIMS(3), CT_FLOAT32, ct_cpu()) != CT_OK) {
    goto fail;
  }
  /* loss = mean(square(w)); d(loss)/dw = 2 w / 3 */
  const char *params[] = {"w"};
  if (append_op(prog, "square", "w", "w2") != CT_OK ||
      append_op(prog, "mean", "w2", "loss") != CT_OK ||
      ct_program_append_backward(prog, "loss", params, 1) != CT_OK) {
    goto fail;
  }
  ct_executor *ex = ct_executor_new(prog, scope, ct_cpu());
  if (ex == NULL || ct_executor_run(ex) != CT_OK) {
    ct_executor_free(ex);
    goto fail;
  }
  const float *g = ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(scope, "w@GRAD")),
                                  CT_FLOAT32);
  printf("w@GRAD = [%g, %g, %g]\n", g[0], g[1], g[2]); /* [0.666667, -1.33333, 2] */
  int ok = g[0] == 2.0f / 3 && g[1] == -4.0f / 3 && g[2] == 2.0f;
  ct_executor_free(ex);
  ct_program_free(prog);
  ct_scope_free(scope);
  return ok ? 0 : 1;

fail:
  fprintf(stderr, "custom_op: %s\n", ct_last_error());
  ct_program_free(prog);
  ct_scope_free(scope);
  return 1;
}
