/* SPDX-License-Identifier: Apache-2.0 */
/* ct_program_append_backward: gradient names, sums over several readers, ops off the path,
 * zero gradients, refusals that leave the program unchanged, an op type with a gradient
 * registered from this file (grad_util.h's test_weighted_sum), and the executor running forward
 * and backward with free_intermediates. */
#include <string.h>

#include <corten/corten.h>

#include "grad_util.h"

/* The type of op i of p. */
static const char *type_at(const ct_program *p, size_t i) {
  return ct_op_type(ct_program_op(p, i));
}

/* h = x * w; out = relu(h); loss = weighted_sum(out) */
static void build_mlp_like(ct_program *p) {
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_mul", "x", "w", "h")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("relu", "h", "out")), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

START_TEST(gradients_are_named_after_the_parameters) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(2, 3), 0.1);
  put_smooth(s, "w", CT_DIMS(3), 0.5);
  static const char *const params[] = {"w"};
  check_grads(s, build_mlp_like, "loss", params, 1);
  ck_assert_ptr_nonnull(ct_scope_find_var(s, "w@GRAD"));
  ck_assert_ptr_nonnull(ct_scope_find_var(s, "loss@GRAD"));
  ck_assert_ptr_nonnull(ct_scope_find_var(s, "out@GRAD"));
  ck_assert_ptr_null(ct_scope_find_var(s, "x@GRAD")); /* x is no parameter */
  ct_scope_free(s);
}
END_TEST

/* The appended ops, in order: the loss's ones, then each differentiated op's grad ops in
 * reverse, each reading the final gradient of its outputs. */
START_TEST(appended_ops_run_in_reverse_order) {
  ct_program *p = ct_program_new();
  build_mlp_like(p);
  static const char *const params[] = {"w"};
  ck_assert_int_eq(ct_program_append_backward(p, "loss", params, 1), CT_OK);
  ck_assert_uint_eq(ct_program_size(p), 7);
  ck_assert_str_eq(type_at(p, 3), "fill_any_like");
  ck_assert_str_eq(type_at(p, 4), "test_weighted_sum_grad");
  ck_assert_str_eq(type_at(p, 5), "relu_grad");
  ck_assert_str_eq(type_at(p, 6), "elementwise_mul_grad");
  /* The wiring reads back: relu_grad reads out and out@GRAD and writes h@GRAD. */
  const ct_op *rg = ct_program_op(p, 5);
  ck_assert_str_eq(ct_op_input(rg, "Out", 0), "out");
  ck_assert_str_eq(ct_op_input(rg, "Out@GRAD", 0), "out@GRAD");
  ck_assert_str_eq(ct_op_output(rg, "X@GRAD", 0), "h@GRAD");
  ck_assert_uint_eq(ct_op_output_count(ct_program_op(p, 6), "X@GRAD"), 0); /* x: no gradient */
  ck_assert_uint_eq(ct_op_output_count(ct_program_op(p, 6), "Y@GRAD"), 1);
  ck_assert_ptr_null(ct_op_input(rg, "Out", 1));
  ck_assert_ptr_null(ct_op_input(rg, "no_such_slot", 0));
  ct_program_free(p);
}
END_TEST

/* w is read by two ops: its gradient is the sum of both contributions, made by one `sum`. */
static void build_shared(ct_program *p) {
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_mul", "x", "w", "a")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("tanh", "w", "b")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_add", "a", "b", "out")), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

START_TEST(a_variable_read_twice_sums_its_gradients) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(4), 0.1);
  put_smooth(s, "w", CT_DIMS(4), 0.9);
  static const char *const params[] = {"w"};
  check_grads(s, build_shared, "loss", params, 1);
  ct_program *p = ct_program_new();
  build_shared(p);
  ck_assert_int_eq(ct_program_append_backward(p, "loss", params, 1), CT_OK);
  const ct_op *last = ct_program_op(p, ct_program_size(p) - 1);
  ck_assert_str_eq(ct_op_type(last), "sum");
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

/* An op whose output the loss does not read gets no grad op. */
static void build_with_dead_branch(ct_program *p) {
  ck_assert_int_eq(ct_program_append(p, op_x("exp", "w", "unused")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("sigmoid", "w", "out")), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

START_TEST(ops_that_do_not_reach_the_loss_are_skipped) {
  ct_program *p = ct_program_new();
  build_with_dead_branch(p);
  static const char *const params[] = {"w"};
  ck_assert_int_eq(ct_program_append_backward(p, "loss", params, 1), CT_OK);
  for (size_t i = 3; i < ct_program_size(p); i++) ck_assert_str_ne(type_at(p, i), "exp_grad");
  ct_scope *s = ct_scope_new();
  put_smooth(s, "w", CT_DIMS(3), 0.2);
  check_grads(s, build_with_dead_branch, "loss", params, 1);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

START_TEST(a_parameter_the_loss_ignores_gets_zeros_of_its_dims) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(2, 3), 0.1);
  put_smooth(s, "w", CT_DIMS(3), 0.5);
  put_smooth(s, "bias", CT_DIMS(2, 5), 0.5);
  ct_program *p = ct_program_new();
  build_mlp_like(p);
  static const char *const params[] = {"w", "bias"};
  ck_assert_int_eq(ct_program_append_backward(p, "loss", params, 2), CT_OK);
  run_program(p, s);
  const ct_tensor *g = ct_var_get_tensor(ct_scope_find_var(s, "bias@GRAD"));
  ck_assert(ct_ddim_equal(ct_tensor_dims(g), CT_DIMS(2, 5)));
  const double *v = ct_tensor_data(g, CT_FLOAT64);
  for (int i = 0; i < 10; i++) ck_assert(v[i] == 0.0);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

/* No parameter reaches the loss: every gradient is zero and no grad op is made. */
START_TEST(a_loss_without_parameters_gives_zero_gradients) {
  ct_program *p = ct_program_new();
  build_mlp_like(p);
  static const char *const params[] = {"other"};
  ck_assert_int_eq(ct_program_append_backward(p, "loss", params, 1), CT_OK);
  ck_assert_uint_eq(ct_program_size(p), 4);
  ck_assert_str_eq(type_at(p, 3), "fill_any_like");
  ct_program_free(p);
}
END_TEST

/* test_opaque: an op type registered here without a gradient (Out = X). */
static ct_status opaque_infer(const ct_kernel_ctx *c) {
  return ct_tensor_resize(ct_kernel_out(c, 0, 0), ct_tensor_dims(ct_kernel_in(c, 0, 0)));
}

static void register_opaque_once(void) {
  static const ct_slot_def in[] = {{"X", 0}}, out[] = {{"Out", 0}};
  const ct_op_def def = {.type = "test_opaque", .inputs = in, .n_inputs = 1, .outputs = out,
                         .n_outputs = 1, .infer_shape = opaque_infer};
  ck_assert_int_eq(ct_op_register(&def), CT_OK);
}

static void register_opaque(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, register_opaque_once);
}

/* An op type without a gradient on the path: refused naming the op, the program unchanged. */
START_TEST(an_op_without_gradient_is_refused_and_the_program_kept) {
  register_opaque();
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_mul", "x", "w", "h")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("test_opaque", "h", "o")), CT_OK);
  append_weighted_loss(p, "o", "loss");
  static const char *const params[] = {"w"};
  CT_ASSERT_FAILS(ct_program_append_backward(p, "loss", params, 1), CT_ERR_UNSUPPORTED);
  HAS(ct_last_error(), "op #1 'test_opaque'");
  ck_assert_uint_eq(ct_program_size(p), 3);
  ct_program_free(p);
}
END_TEST

/* The same op off the path (it reads no parameter) is no obstacle. */
START_TEST(an_op_without_gradient_off_the_path_is_fine) {
  register_opaque();
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op_x("test_opaque", "x", "xo")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_mul", "xo", "w", "h")), CT_OK);
  append_weighted_loss(p, "h", "loss");
  static const char *const params[] = {"w"};
  ck_assert_msg(ct_program_append_backward(p, "loss", params, 1) == CT_OK, "%s",
                ct_last_error());
  ct_program_free(p);
}
END_TEST

START_TEST(a_loss_no_op_writes_is_not_found) {
  ct_program *p = ct_program_new();
  build_mlp_like(p);
  static const char *const params[] = {"w"};
  CT_ASSERT_FAILS(ct_program_append_backward(p, "nothing", params, 1), CT_ERR_NOT_FOUND);
  HAS(ct_last_error(), "'nothing'");
  ck_assert_uint_eq(ct_program_size(p), 3);
  ct_program_free(p);
}
END_TEST

START_TEST(bad_arguments_are_refused) {
  ct_program *p = ct_program_new();
  build_mlp_like(p);
  static const char *const twice[] = {"w", "w"};
  static const char *const empty[] = {""};
  CT_ASSERT_FAILS(ct_program_append_backward(NULL, "loss", twice, 1), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_FAILS(ct_program_append_backward(p, NULL, twice, 1), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_FAILS(ct_program_append_backward(p, "loss", NULL, 1), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_FAILS(ct_program_append_backward(p, "loss", empty, 1), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_FAILS(ct_program_append_backward(p, "loss", twice, 2), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "'w' is listed twice");
  ck_assert_uint_eq(ct_program_size(p), 3);
  ct_program_free(p);
}
END_TEST

/* A variable on the path written twice (here: in place) names no single value: refused. */
START_TEST(a_variable_written_twice_on_the_path_is_refused) {
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_mul", "x", "w", "h")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("relu", "h", "h")), CT_OK);
  append_weighted_loss(p, "h", "loss");
  static const char *const params[] = {"w"};
  CT_ASSERT_FAILS(ct_program_append_backward(p, "loss", params, 1), CT_ERR_UNSUPPORTED);
  HAS(ct_last_error(), "variable 'h'");
  ck_assert_uint_eq(ct_program_size(p), 3);
  ct_program_free(p);
}
END_TEST

/* a = x * w; then x = exp(z), an op off the path: the gradient op of the multiply would read
 * x's second value, so the pass refuses the program, naming x, both ops, and the fix. */
START_TEST(a_forward_value_overwritten_off_the_path_is_refused) {
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_mul", "x", "w", "a")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("exp", "z", "x")), CT_OK);
  append_weighted_loss(p, "a", "loss");
  static const char *const params[] = {"w"};
  CT_ASSERT_FAILS(ct_program_append_backward(p, "loss", params, 1), CT_ERR_UNSUPPORTED);
  HAS(ct_last_error(), "op #0 'elementwise_mul' reads variable 'x'");
  HAS(ct_last_error(), "op #1 'exp' writes again");
  HAS(ct_last_error(), "give each value its own name");
  ck_assert_uint_eq(ct_program_size(p), 3);
  ct_program_free(p);
}
END_TEST

/* The same with x scaled in place after its use: refused (the gradient came out 10x). */
START_TEST(a_forward_value_scaled_in_place_later_is_refused) {
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_mul", "x", "w", "a")), CT_OK);
  ct_op *sc = op_x("scale", "x", "x");
  ck_assert_int_eq(ct_op_set_attr_float(sc, "scale", 10), CT_OK);
  ck_assert_int_eq(ct_program_append(p, sc), CT_OK);
  append_weighted_loss(p, "a", "loss");
  static const char *const params[] = {"w"};
  CT_ASSERT_FAILS(ct_program_append_backward(p, "loss", params, 1), CT_ERR_UNSUPPORTED);
  HAS(ct_last_error(), "reads variable 'x'");
  ck_assert_uint_eq(ct_program_size(p), 3);
  ct_program_free(p);
}
END_TEST

/* The parameter itself overwritten after its use: x@GRAD would read w's second value. */
START_TEST(a_parameter_overwritten_after_its_use_is_refused) {
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_mul", "x", "w", "a")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("relu", "z", "w")), CT_OK);
  append_weighted_loss(p, "a", "loss");
  static const char *const params[] = {"x"};
  CT_ASSERT_FAILS(ct_program_append_backward(p, "loss", params, 1), CT_ERR_UNSUPPORTED);
  HAS(ct_last_error(), "reads variable 'w'");
  ck_assert_uint_eq(ct_program_size(p), 3);
  ct_program_free(p);
}
END_TEST

/* With free_intermediates the forward values the backward pass reads live until it has read
 * them: the gradients equal those of a run that frees nothing. */
START_TEST(free_intermediates_keeps_what_backward_reads) {
  static const char *const params[] = {"w"};
  double want[3];
  for (int pass = 0; pass < 2; pass++) {
    ct_scope *s = ct_scope_new();
    put_smooth(s, "x", CT_DIMS(2, 3), 0.1);
    put_smooth(s, "w", CT_DIMS(3), 0.5);
    ct_program *p = ct_program_new();
    build_mlp_like(p);
    ck_assert_int_eq(ct_program_append_backward(p, "loss", params, 1), CT_OK);
    static const char *const keep[] = {"w@GRAD"};
    ct_executor_options o = {.free_intermediates = pass == 1, .keep = keep, .n_keep = 1};
    ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
    ck_assert_ptr_nonnull(e);
    ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
    const double *g = var_f64(s, "w@GRAD");
    for (int i = 0; i < 3; i++) {
      if (pass == 0) want[i] = g[i];
      else ck_assert(g[i] == want[i]);
    }
    if (pass == 1) ck_assert(!ct_tensor_has_memory(ct_var_get_tensor(ct_scope_find_var(s, "h"))));
    ct_executor_free(e);
    ct_program_free(p);
    ct_scope_free(s);
  }
}
END_TEST

/* h is read by two ops: the sum of its contributions runs before the grad op of h's writer,
 * which reads it, though that op's maker makes its op before it asks for h's gradient. */
static void build_intermediate_read_twice(ct_program *p) {
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_mul", "x", "w", "h")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("relu", "h", "a")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("tanh", "h", "b")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_add", "a", "b", "out")), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

START_TEST(an_intermediate_read_twice_is_summed_before_it_is_read) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(2, 3), 0.1);
  put_smooth(s, "w", CT_DIMS(3), 0.9);
  static const char *const params[] = {"x", "w"};
  check_grads(s, build_intermediate_read_twice, "loss", params, 2);
  ct_program *p = ct_program_new();
  build_intermediate_read_twice(p);
  ck_assert_int_eq(ct_program_append_backward(p, "loss", params, 2), CT_OK);
  size_t n = ct_program_size(p);
  ck_assert_str_eq(type_at(p, n - 2), "sum");
  ck_assert_str_eq(type_at(p, n - 1), "elementwise_mul_grad");
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

/* A second backward pass over one program would write w@GRAD (and the rest) twice: refused,
 * the program unchanged. So is a user variable named like a gradient the pass would make. */
START_TEST(a_second_backward_pass_is_refused) {
  ct_program *p = ct_program_new();
  build_mlp_like(p);
  static const char *const params[] = {"w"};
  ck_assert_int_eq(ct_program_append_backward(p, "loss", params, 1), CT_OK);
  size_t n = ct_program_size(p);
  CT_ASSERT_FAILS(ct_program_append_backward(p, "loss", params, 1), CT_ERR_ALREADY_EXISTS);
  HAS(ct_last_error(), "@GRAD'");
  ck_assert_uint_eq(ct_program_size(p), n);
  ct_program_free(p);
  ct_program *q = ct_program_new();
  build_mlp_like(q);
  ck_assert_int_eq(ct_program_append(q, op_x("relu", "h", "h@GRAD")), CT_OK);
  CT_ASSERT_FAILS(ct_program_append_backward(q, "loss", params, 1), CT_ERR_ALREADY_EXISTS);
  HAS(ct_last_error(), "'h@GRAD'");
  ct_program_free(q);
}
END_TEST

/* The loss must hold one element when the program runs: a [2,3] loss is refused at run time
 * with a message that says to reduce it. */
START_TEST(a_loss_of_several_elements_is_refused_when_run) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(2, 3), 0.1);
  put_smooth(s, "w", CT_DIMS(3), 0.5);
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_mul", "x", "w", "loss")), CT_OK);
  static const char *const params[] = {"w"};
  ck_assert_int_eq(ct_program_append_backward(p, "loss", params, 1), CT_OK);
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  ck_assert_ptr_nonnull(e);
  CT_ASSERT_FAILS(ct_executor_run(e), CT_ERR_SHAPE);
  HAS(ct_last_error(), "'loss'");
  HAS(ct_last_error(), "6 elements");
  HAS(ct_last_error(), "mean or reduce_sum");
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("backward");
  CT_ADD_TEST(s, gradients_are_named_after_the_parameters);
  CT_ADD_TEST(s, appended_ops_run_in_reverse_order);
  CT_ADD_TEST(s, a_variable_read_twice_sums_its_gradients);
  CT_ADD_TEST(s, ops_that_do_not_reach_the_loss_are_skipped);
  CT_ADD_TEST(s, a_parameter_the_loss_ignores_gets_zeros_of_its_dims);
  CT_ADD_TEST(s, a_loss_without_parameters_gives_zero_gradients);
  CT_ADD_TEST(s, an_op_without_gradient_is_refused_and_the_program_kept);
  CT_ADD_TEST(s, an_op_without_gradient_off_the_path_is_fine);
  CT_ADD_TEST(s, a_loss_no_op_writes_is_not_found);
  CT_ADD_TEST(s, bad_arguments_are_refused);
  CT_ADD_TEST(s, a_variable_written_twice_on_the_path_is_refused);
  CT_ADD_TEST(s, a_forward_value_overwritten_off_the_path_is_refused);
  CT_ADD_TEST(s, a_forward_value_scaled_in_place_later_is_refused);
  CT_ADD_TEST(s, a_parameter_overwritten_after_its_use_is_refused);
  CT_ADD_TEST(s, free_intermediates_keeps_what_backward_reads);
  CT_ADD_TEST(s, a_second_backward_pass_is_refused);
  CT_ADD_TEST(s, a_loss_of_several_elements_is_refused_when_run);
  CT_ADD_TEST(s, an_intermediate_read_twice_is_summed_before_it_is_read);
  return s;
}

CT_TEST_MAIN(make_suite)
