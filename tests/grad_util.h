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

#endif /* CORTEN_TESTS_GRAD_UTIL_H */
