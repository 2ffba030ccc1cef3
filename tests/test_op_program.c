/* SPDX-License-Identifier: Apache-2.0 */
/* The program suite: programs of ops and the executor that runs them (no allocation after the
 * first run; freeing intermediates). Single ops and the registry are tested in test_op.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <corten/corten.h>

#include "op_util.h"

/* ---- Programs and the executor ----------------------------------------------------------------- */

/* h = relu(x W + b); y = h * 2: four ops over x, W, b. */
static ct_program *mlp_program(void) {
  ct_program *p = ct_program_new();
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(ct_program_append(p, op_xy("matmul", "x", "W", "xw")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_add", "xw", "b", "pre")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("relu", "pre", "h")), CT_OK);
  ct_op *sc = op_x("scale", "h", "y");
  ct_op_set_attr_float(sc, "scale", 2.0);
  ck_assert_int_eq(ct_program_append(p, sc), CT_OK);
  return p;
}

static void mlp_inputs(ct_scope *s) {
  put_ramp(s, "x", CT_DIMS(4, 8), 0.25f);
  put_ramp(s, "W", CT_DIMS(8, 16), -0.01f);
  put_ramp(s, "b", CT_DIMS(16), 1.0f);
}

/* y[i][j] = 2 * relu(sum_k x[i][k] W[k][j] + b[j]) with the values mlp_inputs writes. */
static float mlp_expected(int i, int j) {
  float acc = 0;
  for (int k = 0; k < 8; k++) acc += (float)(i * 8 + k) * 0.25f * ((float)(k * 16 + j) * -0.01f);
  acc += (float)j;
  return 2.0f * (acc > 0 ? acc : 0);
}

START_TEST(program_holds_its_ops_in_order) {
  ct_program *p = mlp_program();
  ck_assert_uint_eq(ct_program_size(p), 4);
  ck_assert_str_eq(ct_op_type(ct_program_op(p, 0)), "matmul");
  ck_assert_str_eq(ct_op_type(ct_program_op(p, 3)), "scale");
  ck_assert_ptr_null(ct_program_op(p, 4));
  ck_assert_int_eq(ct_program_append(p, NULL), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_program_append(NULL, ct_op_new("relu")), CT_ERR_INVALID_ARGUMENT);
  ct_program_free(p);
  ct_program_free(NULL);
}
END_TEST

START_TEST(executor_runs_the_program) {
  ct_scope *s = ct_scope_new();
  mlp_inputs(s);
  ct_program *p = mlp_program();
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  const float *y = var_f32(s, "y");
  for (int i = 0; i < 4; i++) {
    for (int j = 0; j < 16; j++) ck_assert_float_eq_tol(y[i * 16 + j], mlp_expected(i, j), 1e-4);
  }
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

START_TEST(executor_allocates_nothing_after_the_first_run) {
  ct_scope *s = ct_scope_new();
  mlp_inputs(s);
  ct_program *p = mlp_program();
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ct_memory_stats before = cpu_stats();
  for (int r = 0; r < 10; r++) ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ct_memory_stats after = cpu_stats();
  ck_assert_uint_eq(after.allocs, before.allocs);
  ck_assert_uint_eq(after.frees, before.frees);
  ck_assert_uint_eq(after.allocated, before.allocated);
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

START_TEST(executor_frees_intermediates_after_last_use) {
  ct_scope *s = ct_scope_new();
  mlp_inputs(s);
  ct_program *p = mlp_program();
  const char *keep[] = {"pre"};
  ct_executor_options o = {.free_intermediates = true, .keep = keep, .n_keep = 1};
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
  ck_assert_ptr_nonnull(e);
  ct_memory_stats inputs = cpu_stats();
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  /* xw and h are gone, pre is kept, y is a result; x, W, b existed before. */
  ck_assert(!ct_tensor_has_memory(ct_var_get_tensor(ct_scope_find_var(s, "xw"))));
  ck_assert(!ct_tensor_has_memory(ct_var_get_tensor(ct_scope_find_var(s, "h"))));
  ck_assert(ct_tensor_has_memory(ct_var_get_tensor(ct_scope_find_var(s, "pre"))));
  ck_assert(ct_tensor_has_memory(ct_var_get_tensor(ct_scope_find_var(s, "x"))));
  ck_assert(ct_ddim_equal(ct_tensor_dims(ct_var_get_tensor(ct_scope_find_var(s, "h"))),
                          CT_DIMS(4, 16)));
  ct_memory_stats st = cpu_stats();
  ck_assert_uint_eq(st.allocated - inputs.allocated, 2 * 4 * 16 * sizeof(float));
  ck_assert_float_eq_tol(var_f32(s, "y")[5], mlp_expected(0, 5), 1e-4);
  ck_assert_int_eq(ct_executor_run(e), CT_OK); /* and again */
  ck_assert_float_eq_tol(var_f32(s, "y")[63], mlp_expected(3, 15), 1e-4);
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

START_TEST(freeing_intermediates_lowers_the_peak) {
  ct_memory_stats with, without;
  for (int pass = 0; pass < 2; pass++) {
    ct_scope *s = ct_scope_new();
    mlp_inputs(s);
    ct_program *p = mlp_program();
    ct_executor_options o = {.free_intermediates = pass == 1};
    ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
    ct_memory_reset_peak(ct_cpu());
    size_t base = cpu_stats().allocated;
    ck_assert_int_eq(ct_executor_run(e), CT_OK);
    ct_memory_stats st = cpu_stats();
    st.peak -= base;
    if (pass == 0) without = st; else with = st;
    ct_executor_free(e);
    ct_program_free(p);
    ct_scope_free(s);
  }
  /* Without freeing, xw, pre, h and y all live: 4 x 256 bytes. With it, at most two of them. */
  ck_assert_uint_eq(without.peak, 4 * 256);
  ck_assert_uint_eq(with.peak, 2 * 256);
}
END_TEST

START_TEST(in_place_result_is_not_freed) {
  ct_scope *s = ct_scope_new();
  put_ramp(s, "x", CT_DIMS(3), 1.0f);
  ct_program *p = ct_program_new();
  ct_program_append(p, op_x("relu", "x", "a"));
  ct_op *sc = op_x("scale", "a", "a"); /* in place: a's last read is also its last write */
  ct_op_set_attr_float(sc, "scale", 3.0);
  ct_program_append(p, sc);
  ct_executor_options o = {.free_intermediates = true};
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ck_assert_float_eq(var_f32(s, "a")[2], 6.0f);
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

/* t = exp(a); v = assign(b); v = reshape(t): at the end of every run v holds exp(a). On the
 * second run, assign writes v while v still views t's block (reshape made it so on the first):
 * it takes a block of its own rather than writing b into t. With and without
 * free_intermediates and fuse_elementwise. */
START_TEST(rerun_does_not_write_through_a_reshape_view) {
  for (int cfg = 0; cfg < 4; cfg++) {
    ct_program *p = ct_program_new();
    ck_assert_int_eq(ct_program_append(p, op_x("exp", "a", "t")), CT_OK);
    ck_assert_int_eq(ct_program_append(p, op_x("assign", "b", "v")), CT_OK);
    ct_op *r = op_x("reshape", "t", "v");
    int64_t shape[1] = {-1};
    ct_op_set_attr_ints(r, "shape", shape, 1);
    ck_assert_int_eq(ct_program_append(p, r), CT_OK);
    ct_scope *s = ct_scope_new();
    put_ramp(s, "a", CT_DIMS(3), 1.0f);  /* 0 1 2 */
    put_ramp(s, "b", CT_DIMS(3), -7.0f); /* 0 -7 -14 */
    ct_executor_options o = {.free_intermediates = cfg & 1, .fuse_elementwise = cfg >> 1};
    ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
    ck_assert_ptr_nonnull(e);
    for (int run = 0; run < 3; run++) {
      ck_assert_int_eq(ct_executor_run(e), CT_OK);
      const float *v = var_f32(s, "v");
      ck_assert_float_eq(v[0], 1.0f);
      ck_assert_float_eq(v[1], expf(1.0f));
      ck_assert_float_eq(v[2], expf(2.0f));
    }
    ct_executor_free(e);
    ct_program_free(p);
    ct_scope_free(s);
  }
}
END_TEST

START_TEST(executor_wiring_error_names_the_op_index) {
  ct_scope *s = ct_scope_new();
  mlp_inputs(s);
  ct_program *p = mlp_program();
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_add", "y", "missing", "z")), CT_OK);
  CT_ASSERT_NULL_FAILS(ct_executor_new(p, s, ct_cpu()), CT_ERR_NOT_FOUND);
  HAS(ct_last_error(), "op #4 'elementwise_add'");
  HAS(ct_last_error(), "'missing'");
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

START_TEST(executor_stops_at_the_failing_op) {
  ct_scope *s = ct_scope_new();
  mlp_inputs(s);
  put_ramp(s, "bad", CT_DIMS(3), 1.0f);
  ct_program *p = mlp_program();
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_add", "y", "bad", "z")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("relu", "z", "zz")), CT_OK);
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(ct_executor_run(e), CT_ERR_SHAPE);
  HAS(ct_last_error(), "op #4 'elementwise_add'");
  ck_assert(!ct_tensor_has_memory(ct_var_get_tensor(ct_scope_find_var(s, "zz"))));
  ck_assert(ct_tensor_has_memory(ct_var_get_tensor(ct_scope_find_var(s, "y"))));
  ck_assert_int_eq(ct_executor_run(NULL), CT_ERR_INVALID_ARGUMENT);
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

START_TEST(executor_argument_errors) {
  ct_scope *s = ct_scope_new();
  ct_program *p = ct_program_new();
  CT_ASSERT_NULL_FAILS(ct_executor_new(NULL, s, ct_cpu()), CT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(ct_executor_new(p, NULL, ct_cpu()));
  ct_executor_options o = {.n_keep = 2};
  CT_ASSERT_NULL_FAILS(ct_executor_new_with(p, s, ct_cpu(), &o), CT_ERR_INVALID_ARGUMENT);
  ct_executor *e = ct_executor_new(p, s, ct_cpu()); /* an empty program runs */
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ct_executor_free(e);
  ct_executor_free(NULL);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

START_TEST(executor_over_a_freed_scope_refuses_to_run) {
  ct_scope *s = ct_scope_new();
  mlp_inputs(s);
  ct_program *p = mlp_program();
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ct_scope_free(s); /* the executor still points at its variables */
  ck_assert_int_eq(ct_executor_run(e), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "the scope this executor was made over has been freed");
  ck_assert_int_eq(ct_executor_run(e), CT_ERR_INVALID_ARGUMENT); /* and stays refused */
  ct_executor_free(e);
  ct_program_free(p);
}
END_TEST

/* An executor binds the wiring and the list of ops it saw: re-wiring one of its ops, or
 * appending to or pruning the program, fails the next run naming what changed (it ran the old
 * wiring, relu(x) for relu(z), with CT_OK); attribute edits are read at each run and stay
 * allowed; a new executor runs the program as it is. */
START_TEST(executor_refuses_to_run_a_changed_program) {
  ct_scope *s = ct_scope_new();
  mlp_inputs(s);
  put_ramp(s, "z", CT_DIMS(4, 16), -1.0f);
  ct_program *p = mlp_program();
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float((ct_op *)ct_program_op(p, 3), "scale", 3.0), CT_OK);
  ck_assert_int_eq(ct_executor_run(e), CT_OK); /* the attribute is read at each run */
  ck_assert_float_eq_tol(var_f32(s, "y")[5], 1.5f * mlp_expected(0, 5), 1e-4);
  ck_assert_int_eq(ct_op_set_input((ct_op *)ct_program_op(p, 2), "X", "z"), CT_OK);
  ck_assert_int_eq(ct_executor_run(e), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "op #2 'relu' was re-wired");
  HAS(ct_last_error(), "make a new executor");
  ct_executor_free(e);
  e = ct_executor_new(p, s, ct_cpu());
  ck_assert_int_eq(ct_executor_run(e), CT_OK); /* relu(z): every element of z is <= 0 */
  ck_assert(var_f32(s, "y")[7] == 0);
  ck_assert_int_eq(ct_program_append(p, op_x("exp", "y", "ey")), CT_OK);
  ck_assert_int_eq(ct_executor_run(e), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "appended to or pruned from the program");
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

START_TEST(executor_over_a_kid_refuses_to_run_once_an_ancestor_is_freed) {
  ct_scope *root = ct_scope_new();
  mlp_inputs(root);
  ct_scope *kid = ct_scope_new_kid(root), *grandkid = ct_scope_new_kid(kid);
  ct_program *p = mlp_program();
  ct_executor *e = ct_executor_new(p, grandkid, ct_cpu());
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ct_scope_free(root);
  ck_assert_int_eq(ct_executor_run(e), CT_ERR_INVALID_ARGUMENT);
  ct_executor_free(e);
  ct_program_free(p);
}
END_TEST

START_TEST(executors_and_their_scope_are_freed_in_any_order) {
  ct_scope *s = ct_scope_new();
  mlp_inputs(s);
  ct_program *p = mlp_program();
  ct_executor *e[3];
  for (int i = 0; i < 3; i++) e[i] = ct_executor_new(p, s, ct_cpu());
  ct_executor_free(e[1]); /* the middle one first, while the scope lives */
  ck_assert_int_eq(ct_executor_run(e[0]), CT_OK);
  ck_assert_int_eq(ct_executor_run(e[2]), CT_OK);
  ct_scope_free(s);
  ck_assert_int_eq(ct_executor_run(e[2]), CT_ERR_INVALID_ARGUMENT);
  ct_executor_free(e[2]);
  ct_executor_free(e[0]);
  ct_program_free(p);
}
END_TEST

START_TEST(op_belongs_to_one_program) {
  ct_program *p = ct_program_new(), *q = ct_program_new();
  ct_op *op = op_x("relu", "a", "b");
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  ck_assert_int_eq(ct_program_append(q, op), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "already belongs to a program");
  ck_assert_uint_eq(ct_program_size(q), 0);
  ct_program_free(q);
  ct_program_free(p);
}
END_TEST

START_TEST(program_attribute_is_owned_by_the_op) {
  static const ct_attr_def attrs[] = {{"body", {.type = CT_ATTR_PROGRAM}, true}};
  static const ct_slot_def out[] = {{"Out", CT_SLOT_OPTIONAL}};
  static const ct_op_def def = {.type = "test_holder", .outputs = out, .n_outputs = 1,
                                .attrs = attrs, .n_attrs = 1};
  ck_assert_int_eq(ct_op_register(&def), CT_OK);
  ct_op *op = ct_op_new("test_holder");
  ct_program *body = ct_program_new();
  ct_program_append(body, op_x("relu", "a", "b"));
  ck_assert_int_eq(ct_op_set_attr_program(op, "body", body), CT_OK);
  /* Replacing frees the first; a wrong name frees the one given: ASan sees no leak. */
  ck_assert_int_eq(ct_op_set_attr_program(op, "body", ct_program_new()), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_program(op, "nobody", ct_program_new()), CT_ERR_NOT_FOUND);
  ck_assert_int_eq(ct_op_set_attr_program(op, "body", NULL), CT_ERR_INVALID_ARGUMENT);
  ct_op_free(op);
}
END_TEST

static const ct_attr_def holder_attrs[] = {{"body", {.type = CT_ATTR_PROGRAM}, true}};
static const ct_slot_def holder_out[] = {{"Out", CT_SLOT_OPTIONAL}};
static const ct_op_def holder_def = {.type = "test_holder2", .outputs = holder_out,
                                     .n_outputs = 1, .attrs = holder_attrs, .n_attrs = 1};

START_TEST(program_is_held_by_one_attribute_only) {
  ck_assert_int_eq(ct_op_register(&holder_def), CT_OK);
  ct_op *a = ct_op_new("test_holder2"), *b = ct_op_new("test_holder2");
  ct_program *body = ct_program_new();
  ck_assert_int_eq(ct_op_set_attr_program(a, "body", body), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_program(a, "body", body), CT_OK); /* again: no change */
  ck_assert_int_eq(ct_op_set_attr_program(b, "body", body), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "already belongs to an op");
  ct_program_free(body); /* refused: a holds it */
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ct_op_free(b);
  ct_op_free(a); /* frees body once */
}
END_TEST

START_TEST(op_cannot_hold_a_program_containing_itself) {
  ck_assert_int_eq(ct_op_register(&holder_def), CT_OK);
  ct_op *a = ct_op_new("test_holder2");
  ct_program *outer = ct_program_new();
  ck_assert_int_eq(ct_program_append(outer, a), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_program(a, "body", outer), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "contains that op itself");
  ct_program_free(outer);
}
END_TEST

/* Runs its body program on the scope it runs in. */
static ct_status holder_kernel(const ct_kernel_ctx *c) {
  ct_executor *e = ct_executor_new(c->attr[0].u.program, c->scope, c->place);
  ct_status st = e ? ct_executor_run(e) : ct_last_status();
  ct_executor_free(e);
  return st;
}

START_TEST(intermediate_read_by_a_nested_program_is_kept_until_then) {
  ck_assert_int_eq(ct_op_register(&holder_def), CT_OK);
  ck_assert_int_eq(ct_kernel_register("test_holder2", CT_DEVICE_CPU, CT_DTYPE_UNDEFINED,
                                      holder_kernel),
                   CT_OK);
  ct_scope *s = ct_scope_new();
  put_ramp(s, "W", CT_DIMS(3), 1.0f);
  ct_program *p = ct_program_new();
  ct_op *sc = op_x("scale", "W", "Wt");
  ct_op_set_attr_float(sc, "scale", 2.0);
  ct_program_append(p, sc);
  ct_program_append(p, op_x("relu", "Wt", "Z"));
  ct_program *body = ct_program_new();
  ct_program_append(body, op_x("relu", "Wt", "Z2"));
  ct_op *h = ct_op_new("test_holder2");
  ck_assert_int_eq(ct_op_set_attr_program(h, "body", body), CT_OK);
  ct_program_append(p, h);
  ct_executor_options o = {.free_intermediates = true};
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ck_assert_float_eq(var_f32(s, "Z2")[2], 4.0f);
  ck_assert(!ct_tensor_has_memory(ct_var_get_tensor(ct_scope_find_var(s, "Wt"))));
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

START_TEST(string_and_list_attributes_are_copied) {
  static const ct_attr_def attrs[] = {
      {"mode", {.type = CT_ATTR_STRING, .u.s = "fast"}, false},
      {"sizes", {.type = CT_ATTR_INTS}, false},
      {"weights", {.type = CT_ATTR_FLOATS}, false},
  };
  static const ct_slot_def out[] = {{"Out", 0}};
  static const ct_op_def def = {.type = "test_attrs", .outputs = out, .n_outputs = 1,
                                .attrs = attrs, .n_attrs = 3};
  ck_assert_int_eq(ct_op_register(&def), CT_OK);
  ct_op *op = ct_op_new("test_attrs");
  char mode[8] = "slow";
  int64_t sizes[3] = {1, 2, 3};
  double w[2] = {0.5, 0.25};
  ck_assert_int_eq(ct_op_set_attr_string(op, "mode", mode), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "sizes", sizes, 3), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_floats(op, "weights", w, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "sizes", NULL, 2), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_op_set_attr_string(op, "mode", NULL), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "sizes", NULL, 0), CT_OK);
  ct_op_free(op);
}
END_TEST

static Suite *op_suite(void) {
  Suite *s = suite_create("op_program");
  CT_ADD_TEST(s, program_holds_its_ops_in_order);
  CT_ADD_TEST(s, executor_runs_the_program);
  CT_ADD_TEST(s, executor_allocates_nothing_after_the_first_run);
  CT_ADD_TEST(s, executor_frees_intermediates_after_last_use);
  CT_ADD_TEST(s, freeing_intermediates_lowers_the_peak);
  CT_ADD_TEST(s, in_place_result_is_not_freed);
  CT_ADD_TEST(s, rerun_does_not_write_through_a_reshape_view);
  CT_ADD_TEST(s, executor_wiring_error_names_the_op_index);
  CT_ADD_TEST(s, executor_stops_at_the_failing_op);
  CT_ADD_TEST(s, executor_argument_errors);
  CT_ADD_TEST(s, executor_over_a_freed_scope_refuses_to_run);
  CT_ADD_TEST(s, executor_refuses_to_run_a_changed_program);
  CT_ADD_TEST(s, executor_over_a_kid_refuses_to_run_once_an_ancestor_is_freed);
  CT_ADD_TEST(s, executors_and_their_scope_are_freed_in_any_order);
  CT_ADD_TEST(s, op_belongs_to_one_program);
  CT_ADD_TEST(s, program_attribute_is_owned_by_the_op);
  CT_ADD_TEST(s, program_is_held_by_one_attribute_only);
  CT_ADD_TEST(s, op_cannot_hold_a_program_containing_itself);
  CT_ADD_TEST(s, intermediate_read_by_a_nested_program_is_kept_until_then);
  CT_ADD_TEST(s, string_and_list_attributes_are_copied);
  return s;
}

CT_TEST_MAIN(op_suite)
