/* SPDX-License-Identifier: Apache-2.0 */
/* The helpers of the gradient suites (test_backward.c, test_grad_*.c): a loss op registered
 * from the test side, as a framework author would, and a checker that compares the gradients of
 * ct_program_append_backward with central finite differences in float64.
 *
 * The loss is test_weighted_sum: Out (rank 0) = sum_i w_i X_i with fixed weights
 * w_i = 1 + (i mod 7) / 4, so every element of X reaches the loss with its own weight and a
 * gradient that treats two elements alike (or drops one) is caught. Its gradient op,
 * test_weighted_sum_grad, writes X@GRAD_i = w_i x Out@GRAD. */
#ifndef CORTEN_TESTS_GRAD_UTIL_H
#define CORTEN_TESTS_GRAD_UTIL_H

#include <math.h>
#include <pthread.h>
#include <stdio.h>

#include <corten/corten.h>

#include "harness.h"
#include "op_util.h"

static inline double grad_weight(int64_t i) { return 1.0 + (double)(i % 7) / 4.0; }

static ct_status weighted_sum_infer(const ct_kernel_ctx *c) {
  return ct_tensor_resize(ct_kernel_out(c, 0, 0), CT_DIMS());
}

static ct_status weighted_sum_f64(const ct_kernel_ctx *c) {
  const ct_tensor *x = ct_kernel_in(c, 0, 0);
  double *o = ct_tensor_mutable_data(ct_kernel_out(c, 0, 0), CT_FLOAT64, c->place);
  if (o == NULL) return ct_last_status();
  const double *xs = ct_tensor_data(x, CT_FLOAT64);
  double s = 0;
  for (int64_t i = 0; i < ct_tensor_numel(x); i++) s += grad_weight(i) * xs[i];
  *o = s;
  return CT_OK;
}

static ct_status weighted_sum_grad_infer(const ct_kernel_ctx *c) {
  return ct_tensor_resize(ct_kernel_out(c, 0, 0), ct_tensor_dims(ct_kernel_in(c, 0, 0)));
}

static ct_status weighted_sum_grad_f64(const ct_kernel_ctx *c) {
  const ct_tensor *x = ct_kernel_in(c, 0, 0);
  double g = *(const double *)ct_tensor_data(ct_kernel_in(c, 1, 0), CT_FLOAT64);
  double *dx = ct_tensor_mutable_data(ct_kernel_out(c, 0, 0), CT_FLOAT64, c->place);
  if (dx == NULL) return ct_last_status();
  for (int64_t i = 0; i < ct_tensor_numel(x); i++) dx[i] = grad_weight(i) * g;
  return CT_OK;
}

/* The grad-op maker, written against corten/backward.h alone. */
static ct_status weighted_sum_grad(ct_grad_ctx *g) {
  const char *dx = ct_grad_input_grad(g, "X", 0);
  if (dx == NULL) return CT_OK;
  ct_op *op = ct_grad_op_new(g, "test_weighted_sum_grad");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", ct_grad_input(g, "X", 0));
  if (s == CT_OK) s = ct_op_set_input(op, "Out@GRAD", ct_grad_output_grad(g, "Out", 0));
  if (s == CT_OK) s = ct_op_set_output(op, "X@GRAD", dx);
  return s;
}

static void register_weighted_sum_once(void) {
  static const ct_slot_def in[] = {{"X", 0}}, out[] = {{"Out", 0}};
  static const ct_slot_def gin[] = {{"X", 0}, {"Out@GRAD", 0}}, gout[] = {{"X@GRAD", 0}};
  const ct_op_def def = {.type = "test_weighted_sum", .inputs = in, .n_inputs = 1,
                         .outputs = out, .n_outputs = 1, .infer_shape = weighted_sum_infer,
                         .grad = weighted_sum_grad};
  const ct_op_def gdef = {.type = "test_weighted_sum_grad", .inputs = gin, .n_inputs = 2,
                          .outputs = gout, .n_outputs = 1, .infer_shape = weighted_sum_grad_infer};
  ck_assert_int_eq(ct_op_register(&def), CT_OK);
  ck_assert_int_eq(ct_op_register(&gdef), CT_OK);
  ck_assert_int_eq(ct_kernel_register("test_weighted_sum", CT_DEVICE_CPU, CT_FLOAT64,
                                      weighted_sum_f64), CT_OK);
  ck_assert_int_eq(ct_kernel_register("test_weighted_sum_grad", CT_DEVICE_CPU, CT_FLOAT64,
                                      weighted_sum_grad_f64), CT_OK);
}

/* Registers the loss op types (once per process: tests fork, or not, under CK_FORK). */
static inline void register_weighted_sum(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, register_weighted_sum_once);
}

/* Appends loss = test_weighted_sum(x) to p. */
static inline void append_weighted_loss(ct_program *p, const char *x, const char *loss) {
  register_weighted_sum();
  ck_assert_int_eq(ct_program_append(p, op_x("test_weighted_sum", x, loss)), CT_OK);
}

/* Puts a float64 tensor of dims into name of s holding values of the pattern
 * 0.3 + 0.7 sin(1.3 i + seed), away from 0 so that log and division stay tame. */
static inline void put_smooth(ct_scope *s, const char *name, ct_ddim dims, double seed) {
  int64_t n = ct_ddim_numel(dims);
  double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
  ck_assert_ptr_nonnull(v);
  for (int64_t i = 0; i < n; i++) v[i] = 0.3 + 0.7 * sin(1.3 * (double)i + seed);
  put(s, name, CT_FLOAT64, dims, v);
  free(v);
}

/* Runs p once over s on the CPU. */
static inline void run_program(ct_program *p, ct_scope *s) {
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  ct_executor_free(e);
}

static inline double loss_value(const ct_scope *s, const char *loss) {
  const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, loss));
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(ct_tensor_numel(t), 1);
  return *(const double *)ct_tensor_data(t, CT_FLOAT64);
}

/* Builds the forward program twice with build (ending in the scalar `loss`), appends the
 * backward pass for params to one, runs it over s (whose inputs the caller has put), and checks
 * each param@GRAD element against the central difference (L(p + h) - L(p - h)) / 2h of the
 * other, with h = 1e-6 and a tolerance of 1e-6 relative (1e-8 absolute). */
static inline void check_grads(ct_scope *s, void (*build)(ct_program *p), const char *loss,
                               const char *const *params, size_t n) {
  ct_program *fwd = ct_program_new(), *train = ct_program_new();
  build(fwd);
  build(train);
  ck_assert_msg(ct_program_append_backward(train, loss, params, n) == CT_OK, "%s",
                ct_last_error());
  run_program(train, s);
  for (size_t k = 0; k < n; k++) {
    char gname[128];
    snprintf(gname, sizeof gname, "%s@GRAD", params[k]);
    const ct_tensor *gt = ct_var_get_tensor(ct_scope_find_var(s, gname));
    ck_assert_msg(gt != NULL, "no gradient '%s': %s", gname, ct_last_error());
    ct_tensor *pt = ct_var_tensor(ct_scope_find_var(s, params[k]));
    ck_assert_msg(ct_ddim_equal(ct_tensor_dims(gt), ct_tensor_dims(pt)), "dims of '%s'", gname);
    const double *grad = ct_tensor_data(gt, CT_FLOAT64);
    double *pv = ct_tensor_mutable_data(pt, CT_FLOAT64, ct_cpu());
    for (int64_t i = 0; i < ct_tensor_numel(pt); i++) {
      const double h = 1e-6, keep = pv[i];
      pv[i] = keep + h;
      run_program(fwd, s);
      double up = loss_value(s, loss);
      pv[i] = keep - h;
      run_program(fwd, s);
      double down = loss_value(s, loss);
      pv[i] = keep;
      double num = (up - down) / (2 * h), tol = 1e-8 + 1e-6 * fabs(num);
      ck_assert_msg(fabs(grad[i] - num) <= tol, "%s[%lld] = %.12g, finite difference %.12g",
                    gname, (long long)i, grad[i], num);
    }
  }
  ct_program_free(fwd);
  ct_program_free(train);
}

/* ---- Helpers of the matmul, reduce and shape gradient suites --------------------------------- */

/* The forward op of check_x_grad and run_x_backward: x_op_type reading X = "x" and writing
 * Out = "out", its attributes set by x_op_attrs (when not NULL), then the loss. */
static const char *x_op_type;
static void (*x_op_attrs)(ct_op *op);

static inline void build_x_op(ct_program *p) {
  ct_op *op = op_x(x_op_type, "x", "out");
  if (x_op_attrs != NULL) x_op_attrs(op);
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

/* Checks d(loss)/dx of the op above against finite differences, for x of dims xd holding
 * put_smooth's values. */
static inline void check_x_grad(const char *type, void (*attrs)(ct_op *op), ct_ddim xd) {
  static const char *const just_x[] = {"x"};
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", xd, 0.1);
  x_op_type = type;
  x_op_attrs = attrs;
  check_grads(s, build_x_op, "loss", just_x, 1);
  ct_scope_free(s);
}

/* Builds the program with build, appends the backward pass for params and runs it over s: for
 * the cases finite differences say nothing of (empty tensors, which gradients exist). */
static inline void run_backward(ct_scope *s, void (*build)(ct_program *p),
                                const char *const *params, size_t n) {
  ct_program *p = ct_program_new();
  build(p);
  ck_assert_msg(ct_program_append_backward(p, "loss", params, n) == CT_OK, "%s", ct_last_error());
  run_program(p, s);
  ct_program_free(p);
}

/* The tensor of variable name, checked to have dims. */
static inline const ct_tensor *tensor_dims(ct_scope *s, const char *name, ct_ddim dims) {
  const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, name));
  ck_assert_msg(t != NULL, "no variable '%s'", name);
  char a[256], b[256];
  ck_assert_msg(ct_ddim_equal(ct_tensor_dims(t), dims), "'%s' is %s, expected %s", name,
                ct_ddim_str(ct_tensor_dims(t), a, sizeof a), ct_ddim_str(dims, b, sizeof b));
  return t;
}

/* Runs the op of check_x_grad and the backward pass for x of dims xd, checks that x@GRAD has
 * dims xd and returns the scope (the caller frees it): for the cases finite differences say
 * nothing of. */
static inline ct_scope *run_x_backward(const char *type, void (*attrs)(ct_op *op), ct_ddim xd) {
  static const char *const just_x[] = {"x"};
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", xd, 0.1);
  x_op_type = type;
  x_op_attrs = attrs;
  run_backward(s, build_x_op, just_x, 1);
  tensor_dims(s, "x@GRAD", xd);
  return s;
}

/* Runs op (owned by the caller) twice over fresh scopes, its n_in inputs ins of dims filled with
 * put_smooth's pattern (seed i) in float32 and then in float64, and checks that every element
 * of each output in outs agrees: |f32 - f64| <= 1e-5 (1 + |f64|). */
static inline void check_f32_matches_f64(const ct_op *op, const char *const *ins,
                                         const ct_ddim *dims, size_t n_in,
                                         const char *const *outs, size_t n_out) {
  ct_scope *s[2] = {ct_scope_new(), ct_scope_new()};
  for (size_t i = 0; i < n_in; i++) {
    int64_t n = ct_ddim_numel(dims[i]);
    float *v32 = malloc((size_t)(n > 0 ? n : 1) * sizeof *v32);
    ck_assert_ptr_nonnull(v32);
    put_smooth(s[1], ins[i], dims[i], (double)i);
    const double *v64 = var_f64(s[1], ins[i]);
    for (int64_t j = 0; j < n; j++) v32[j] = (float)v64[j];
    put(s[0], ins[i], CT_FLOAT32, dims[i], v32);
    free(v32);
  }
  for (int k = 0; k < 2; k++) {
    ck_assert_msg(ct_op_run(op, s[k], ct_cpu()) == CT_OK, "%s", ct_last_error());
  }
  for (size_t o = 0; o < n_out; o++) {
    const ct_tensor *t32 = ct_var_get_tensor(ct_scope_find_var(s[0], outs[o]));
    const ct_tensor *t64 = ct_var_get_tensor(ct_scope_find_var(s[1], outs[o]));
    ck_assert_int_eq(ct_tensor_dtype(t32), CT_FLOAT32);
    ck_assert(ct_ddim_equal(ct_tensor_dims(t32), ct_tensor_dims(t64)));
    const float *a = ct_tensor_data(t32, CT_FLOAT32);
    const double *b = ct_tensor_data(t64, CT_FLOAT64);
    for (int64_t j = 0; j < ct_tensor_numel(t64); j++) {
      ck_assert_msg(fabs((double)a[j] - b[j]) <= 1e-5 * (1 + fabs(b[j])),
                    "%s[%lld]: %.9g vs %.17g", outs[o], (long long)j, (double)a[j], b[j]);
    }
  }
  ct_scope_free(s[0]);
  ct_scope_free(s[1]);
}

#endif /* CORTEN_TESTS_GRAD_UTIL_H */
