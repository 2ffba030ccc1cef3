/* SPDX-License-Identifier: Apache-2.0 */
/* The op-layer suite: building ops, the registry (a test registers its own op type and kernel),
 * wiring errors with the names they must carry, ct_op_run over nested scopes, and in-place ops.
 * Programs and the executor are tested in test_op_program.c; the kernels themselves are checked
 * value by value in test_ops_*.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "op_util.h"

/* ---- Building ops ------------------------------------------------------------------------------ */

START_TEST(new_of_unknown_type_is_not_found) {
  CT_ASSERT_NULL_FAILS(ct_op_new("no_such_op"), CT_ERR_NOT_FOUND);
  HAS(ct_last_error(), "'no_such_op'");
  CT_ASSERT_NULL_FAILS(ct_op_new(""), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_NULL_FAILS(ct_op_new(NULL), CT_ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(builtin_types_are_registered) {
  static const char *const types[] = {
      "fill_constant", "uniform_random", "gaussian_random", "assign", "cast", "scale",
      "elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div", "relu",
      "sigmoid", "tanh", "exp", "log", "matmul", "sum", "mean", "reduce_sum", "softmax",
      "reshape", "transpose", "concat"};
  for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
    ck_assert_msg(ct_op_registered(types[i]), "%s is not registered", types[i]);
  }
  ck_assert(!ct_op_registered("no_such_op"));
  ck_assert(!ct_op_registered(NULL));
}
END_TEST

START_TEST(unknown_slot_lists_the_slots) {
  ct_op *op = ct_op_new("matmul");
  ck_assert_int_eq(ct_op_set_input(op, "Z", "a"), CT_ERR_NOT_FOUND);
  HAS(ct_last_error(), "no input slot 'Z'");
  HAS(ct_last_error(), "X, Y");
  ck_assert_int_eq(ct_op_set_output(op, "X", "a"), CT_ERR_NOT_FOUND);
  HAS(ct_last_error(), "Out");
  ct_op_free(op);
}
END_TEST

START_TEST(many_names_on_a_single_slot_are_refused) {
  ct_op *op = ct_op_new("matmul");
  const char *names[] = {"a", "b"};
  ck_assert_int_eq(ct_op_set_inputs(op, "X", names, 2), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "takes one variable, got 2");
  ck_assert_int_eq(ct_op_set_input(op, "X", ""), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_op_set_input(op, "X", NULL), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_op_set_input(NULL, "X", "a"), CT_ERR_INVALID_ARGUMENT);
  ct_op_free(op);
}
END_TEST

START_TEST(attribute_types_are_checked) {
  ct_op *op = ct_op_new("scale");
  ck_assert_int_eq(ct_op_set_attr_bool(op, "scale", true), CT_ERR_TYPE_MISMATCH);
  HAS(ct_last_error(), "attribute 'scale' is of type float, not bool");
  ck_assert_int_eq(ct_op_set_attr_string(op, "bias", "1"), CT_ERR_TYPE_MISMATCH);
  ck_assert_int_eq(ct_op_set_attr_int(op, "scale", 3), CT_OK); /* int widens to float */
  ck_assert_int_eq(ct_op_set_attr_float(op, "bias_after_scale", 1.0), CT_ERR_TYPE_MISMATCH);
  ck_assert_int_eq(ct_op_set_attr_int(op, "nope", 1), CT_ERR_NOT_FOUND);
  HAS(ct_last_error(), "scale, bias, bias_after_scale");
  ct_op_free(op);
}
END_TEST

START_TEST(float_attribute_does_not_narrow_to_int) {
  ct_op *op = ct_op_new("softmax");
  ck_assert_int_eq(ct_op_set_attr_float(op, "axis", 1.0), CT_ERR_TYPE_MISMATCH);
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", 1), CT_OK);
  ct_op_free(op);
}
END_TEST

START_TEST(op_type_names_the_type) {
  ct_op *op = ct_op_new("relu");
  ck_assert_str_eq(ct_op_type(op), "relu");
  ck_assert_str_eq(ct_op_type(NULL), "");
  ct_op_free(op);
  ct_op_free(NULL);
}
END_TEST

/* ---- Running one op ---------------------------------------------------------------------------- */

START_TEST(run_finds_inputs_in_ancestors_and_creates_outputs_locally) {
  ct_scope *root = ct_scope_new(), *kid = ct_scope_new_kid(root);
  put_ramp(root, "a", CT_DIMS(2, 2), 1.0f);
  put_ramp(root, "b", CT_DIMS(2, 2), 10.0f);
  ct_op *op = op_xy("elementwise_add", "a", "b", "c");
  ck_assert_int_eq(ct_op_run(op, kid, ct_cpu()), CT_OK);
  ck_assert_ptr_nonnull(ct_scope_find_local_var(kid, "c"));
  ck_assert_ptr_null(ct_scope_find_local_var(root, "c"));
  const float *c = var_f32(kid, "c");
  ck_assert_float_eq(c[0], 0.0f);
  ck_assert_float_eq(c[3], 33.0f);
  ck_assert(ct_ddim_equal(ct_tensor_dims(ct_var_get_tensor(ct_scope_find_var(kid, "c"))),
                          CT_DIMS(2, 2)));
  ct_op_free(op);
  ct_scope_free(root);
}
END_TEST

START_TEST(run_writes_an_output_that_an_ancestor_holds) {
  ct_scope *root = ct_scope_new(), *kid = ct_scope_new_kid(root);
  put_ramp(root, "a", CT_DIMS(3), 1.0f);
  put_ramp(root, "acc", CT_DIMS(3), 0.0f);
  ct_op *op = op_x("relu", "a", "acc");
  ck_assert_int_eq(ct_op_run(op, kid, ct_cpu()), CT_OK);
  ck_assert_ptr_null(ct_scope_find_local_var(kid, "acc"));
  ck_assert_float_eq(var_f32(root, "acc")[2], 2.0f);
  ct_op_free(op);
  ct_scope_free(root);
}
END_TEST

START_TEST(missing_input_names_op_slot_and_variable) {
  ct_scope *s = ct_scope_new();
  put_ramp(s, "a", CT_DIMS(2), 1.0f);
  ct_op *op = op_xy("elementwise_mul", "a", "ghost", "c");
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_NOT_FOUND);
  HAS(ct_last_error(), "op 'elementwise_mul'");
  HAS(ct_last_error(), "input Y variable 'ghost'");
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(unwired_required_slot_is_reported) {
  ct_scope *s = ct_scope_new();
  ct_op *op = ct_op_new("matmul");
  ck_assert_int_eq(ct_op_set_input(op, "X", "a"), CT_OK);
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_NOT_FOUND);
  HAS(ct_last_error(), "input slot 'Y' is not wired");
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(input_without_memory_is_uninitialized) {
  ct_scope *s = ct_scope_new();
  put_ramp(s, "a", CT_DIMS(2), 1.0f);
  ct_tensor_resize(ct_var_tensor(ct_scope_var(s, "b")), CT_DIMS(2));
  ct_op *op = op_xy("elementwise_add", "a", "b", "c");
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_UNINITIALIZED);
  HAS(ct_last_error(), "input Y variable 'b' holds a tensor without memory");
  /* The output was created but nothing was written into it. */
  ck_assert(!ct_tensor_has_memory(ct_var_get_tensor(ct_scope_find_var(s, "c"))));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(input_of_another_type_is_a_mismatch) {
  ct_scope *s = ct_scope_new();
  *(int64_t *)ct_var_get_mutable(ct_scope_var(s, "n"), &ct_int64_type) = 7;
  ct_op *op = op_x("relu", "n", "out");
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_TYPE_MISMATCH);
  HAS(ct_last_error(), "input X variable 'n' holds int64, not a tensor");
  ct_var_clear(ct_scope_var(s, "n"));
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_UNINITIALIZED);
  HAS(ct_last_error(), "'n' holds nothing");
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(output_of_another_type_is_a_mismatch) {
  ct_scope *s = ct_scope_new();
  put_ramp(s, "a", CT_DIMS(2), 1.0f);
  *(int64_t *)ct_var_get_mutable(ct_scope_var(s, "out"), &ct_int64_type) = 7;
  ct_op *op = op_x("relu", "a", "out");
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_TYPE_MISMATCH);
  HAS(ct_last_error(), "output Out variable 'out' holds int64");
  ck_assert_int_eq(*(const int64_t *)ct_var_get(ct_scope_find_var(s, "out"), &ct_int64_type), 7);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(shape_conflict_names_both_inputs) {
  ct_scope *s = ct_scope_new();
  put_ramp(s, "a", CT_DIMS(2, 3), 1.0f);
  put_ramp(s, "b", CT_DIMS(4, 5), 1.0f);
  ct_op *op = op_xy("matmul", "a", "b", "c");
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_SHAPE);
  HAS(ct_last_error(), "op 'matmul'");
  HAS(ct_last_error(), "'a' [2,3]");
  HAS(ct_last_error(), "'b' [4,5]");
  ct_op_free(op);
  op = op_xy("elementwise_add", "a", "b", "c");
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_SHAPE);
  HAS(ct_last_error(), "do not broadcast");
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(missing_kernel_is_unsupported_and_lists_kernels) {
  ct_scope *s = ct_scope_new();
  ct_tensor *t = ct_var_tensor(ct_scope_var(s, "i"));
  ct_tensor_resize(t, CT_DIMS(2));
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_INT8, ct_cpu()));
  ct_op *op = op_x("sigmoid", "i", "o");
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_UNSUPPORTED);
  HAS(ct_last_error(), "no kernel for int8 on cpu");
  HAS(ct_last_error(), "float32/cpu");
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(mixed_dtypes_are_a_mismatch) {
  ct_scope *s = ct_scope_new();
  put_ramp(s, "a", CT_DIMS(2), 1.0f);
  ct_tensor *t = ct_var_tensor(ct_scope_var(s, "d"));
  ct_tensor_resize(t, CT_DIMS(2));
  ct_tensor_mutable_data(t, CT_FLOAT64, ct_cpu());
  ct_op *op = op_xy("elementwise_add", "a", "d", "c");
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_TYPE_MISMATCH);
  HAS(ct_last_error(), "'d' is float64");
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(required_attribute_must_be_set) {
  ct_scope *s = ct_scope_new();
  put_ramp(s, "a", CT_DIMS(2, 3), 1.0f);
  ct_op *op = op_x("reshape", "a", "b");
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "attribute 'shape' is required");
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(run_with_null_or_bad_arguments) {
  ct_scope *s = ct_scope_new();
  ct_op *op = op_x("relu", "a", "b");
  ck_assert_int_eq(ct_op_run(NULL, s, ct_cpu()), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_op_run(op, NULL, ct_cpu()), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_op_run(op, s, (ct_place){.kind = (ct_device_kind)9, .device = 0}),
                   CT_ERR_INVALID_ARGUMENT);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(cuda_place_refuses_host_inputs_or_a_missing_device) {
  ct_scope *s = ct_scope_new();
  put_ramp(s, "a", CT_DIMS(2), 1.0f);
  ct_op *op = op_x("relu", "a", "b");
  ct_status st = ct_op_run(op, s, ct_cuda(0));
  if (ct_cuda_device_count() == 0) {
    /* Built without CUDA, or no device: the place itself is refused. */
    ck_assert_msg(st == CT_ERR_UNSUPPORTED || st == CT_ERR_DEVICE, "status %d", st);
  } else {
    /* A device: the input lives on the host, and the message says where each side is. */
    ck_assert_int_eq(st, CT_ERR_INVALID_ARGUMENT);
    HAS(ct_last_error(), "is on cpu but the op runs on cuda:0");
  }
  ck_assert(!ct_tensor_has_memory(ct_var_get_tensor(ct_scope_find_var(s, "b"))));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(in_place_op_reads_its_old_value) {
  ct_scope *s = ct_scope_new();
  put_ramp(s, "a", CT_DIMS(2, 2), 1.0f);  /* [[0,1],[2,3]] */
  put_ramp(s, "b", CT_DIMS(2, 2), 1.0f);
  ct_op *op = op_xy("matmul", "a", "b", "a");
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_OK);
  const float *a = var_f32(s, "a");
  ck_assert_float_eq(a[0], 2.0f);  /* [[0,1],[2,3]]^2 = [[2,3],[6,11]] */
  ck_assert_float_eq(a[1], 3.0f);
  ck_assert_float_eq(a[2], 6.0f);
  ck_assert_float_eq(a[3], 11.0f);
  ct_op_free(op);
  op = ct_op_new("scale");
  ct_op_set_input(op, "X", "b");
  ct_op_set_output(op, "Out", "b");
  ct_op_set_attr_float(op, "scale", 2.0);
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_OK);
  ck_assert_float_eq(var_f32(s, "b")[3], 6.0f);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST


START_TEST(output_viewing_an_input_gets_its_own_memory) {
  ct_scope *s = ct_scope_new();
  put_ramp(s, "X", CT_DIMS(2, 2), 1.0f); /* [[0,1],[2,3]] */
  ct_op *rs = op_x("reshape", "X", "H");
  int64_t shape[2] = {2, 2}, perm[2] = {1, 0};
  ct_op_set_attr_ints(rs, "shape", shape, 2);
  ck_assert_int_eq(ct_op_run(rs, s, ct_cpu()), CT_OK);
  ct_op *tr = op_x("transpose", "H", "X"); /* X = H^T while H views X */
  ct_op_set_attr_ints(tr, "axis", perm, 2);
  ck_assert_int_eq(ct_op_run(tr, s, ct_cpu()), CT_OK);
  const float *x = var_f32(s, "X");
  ck_assert_float_eq(x[0], 0.0f);
  ck_assert_float_eq(x[1], 2.0f);
  ck_assert_float_eq(x[2], 1.0f);
  ck_assert_float_eq(x[3], 3.0f);
  ct_op_free(rs);
  ct_op_free(tr);
  ct_scope_free(s);
}
END_TEST

/* Runs reshape of X into Out (to one dimension) in s. */
static void reshape_flat(ct_scope *s, const char *x, const char *out) {
  ct_op *rs = op_x("reshape", x, out);
  int64_t shape[1] = {-1};
  ct_op_set_attr_ints(rs, "shape", shape, 1);
  ck_assert_int_eq(ct_op_run(rs, s, ct_cpu()), CT_OK);
  ct_op_free(rs);
}

/* H = reshape(X) views X's block; an op that then writes H (assign) gives H a block of its own:
 * X keeps its values. */
START_TEST(writing_a_reshapes_output_leaves_its_input_alone) {
  ct_scope *s = ct_scope_new();
  put_ramp(s, "X", CT_DIMS(3), 1.0f);   /* 0 1 2 */
  put_ramp(s, "B", CT_DIMS(3), -1.0f);  /* 0 -1 -2 */
  reshape_flat(s, "X", "H");
  ct_op *as = op_x("assign", "B", "H");
  ck_assert_int_eq(ct_op_run(as, s, ct_cpu()), CT_OK);
  ck_assert(!ct_tensor_shares_memory(ct_var_get_tensor(ct_scope_find_var(s, "X")),
                                     ct_var_get_tensor(ct_scope_find_var(s, "H"))));
  ck_assert_float_eq(var_f32(s, "X")[2], 2.0f);
  ck_assert_float_eq(var_f32(s, "H")[2], -2.0f);
  ct_op_free(as);
  ct_scope_free(s);
}
END_TEST

/* H = reshape(X), then an op writes X: H keeps the values X had (the writer takes a block of its
 * own; H holds the old one). */
START_TEST(writing_a_reshapes_input_leaves_the_view_alone) {
  ct_scope *s = ct_scope_new();
  put_ramp(s, "X", CT_DIMS(3), 1.0f);
  put_ramp(s, "A", CT_DIMS(3), 1.0f);
  reshape_flat(s, "X", "H");
  ct_op *sc = op_x("scale", "A", "X");
  ct_op_set_attr_float(sc, "scale", 10.0);
  ck_assert_int_eq(ct_op_run(sc, s, ct_cpu()), CT_OK);
  ck_assert_float_eq(var_f32(s, "X")[2], 20.0f);
  ck_assert_float_eq(var_f32(s, "H")[2], 2.0f);
  ct_op_free(sc);
  ct_scope_free(s);
}
END_TEST

/* reshape of a caller's buffer copies it: an op writing the buffer later (in place, as an
 * external output must be written) leaves the reshape's result as it was. */
START_TEST(reshape_of_an_external_buffer_copies_it) {
  ct_scope *s = ct_scope_new();
  float buf[3] = {1, 2, 3};
  ct_tensor *x = ct_var_tensor(ct_scope_var(s, "X"));
  ck_assert_int_eq(ct_tensor_wrap(x, buf, CT_DIMS(3), CT_FLOAT32, ct_cpu(), NULL, NULL), CT_OK);
  reshape_flat(s, "X", "H");
  ck_assert(!ct_tensor_is_external(ct_var_get_tensor(ct_scope_find_var(s, "H"))));
  ct_op *sc = op_x("scale", "X", "X");
  ct_op_set_attr_float(sc, "scale", 10.0);
  ck_assert_int_eq(ct_op_run(sc, s, ct_cpu()), CT_OK);
  ck_assert_float_eq(buf[2], 30.0f);
  ck_assert_float_eq(var_f32(s, "H")[2], 3.0f);
  ct_op_free(sc);
  ct_scope_free(s);
}
END_TEST

/* X wraps buf[0..n), Y wraps buf[1..n+1): two blocks over overlapping bytes. Y = exp(X) reads X
 * as it was before the op (the result is computed aside, then copied into Y's buffer): each
 * Y[i] equals exp of the old X[i], which the same op gives over a copy. */
START_TEST(output_overlapping_an_input_through_two_wraps_reads_the_old_values) {
  enum { N = 5000 };
  float *buf = malloc((N + 1) * sizeof *buf);
  ck_assert_ptr_nonnull(buf);
  for (int i = 0; i <= N; i++) buf[i] = (float)(i % 7) / 8.0f;
  ct_scope *s = ct_scope_new();
  put_ramp(s, "C", CT_DIMS(N), 1.0f);
  float *c = ct_tensor_mutable_data(ct_var_tensor(ct_scope_find_var(s, "C")), CT_FLOAT32, ct_cpu());
  memcpy(c, buf, N * sizeof *buf);
  ct_op *ref = op_x("exp", "C", "E");
  ck_assert_int_eq(ct_op_run(ref, s, ct_cpu()), CT_OK);
  ct_tensor *x = ct_var_tensor(ct_scope_var(s, "X")), *y = ct_var_tensor(ct_scope_var(s, "Y"));
  ck_assert_int_eq(ct_tensor_wrap(x, buf, CT_DIMS(N), CT_FLOAT32, ct_cpu(), NULL, NULL), CT_OK);
  ck_assert_int_eq(ct_tensor_wrap(y, buf + 1, CT_DIMS(N), CT_FLOAT32, ct_cpu(), NULL, NULL), CT_OK);
  ct_op *op = op_x("exp", "X", "Y");
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(y, CT_FLOAT32), buf + 1);
  ck_assert_int_eq(memcmp(buf + 1, var_f32(s, "E"), N * sizeof *buf), 0);
  ct_op_free(ref);
  ct_op_free(op);
  ct_scope_free(s);
  free(buf);
}
END_TEST

START_TEST(in_place_op_on_an_external_buffer_writes_into_it) {
  ct_scope *s = ct_scope_new();
  float buf[6] = {0, 1, 2, 3, 0, 0}; /* X [2,2] = [[0,1],[2,3]] in the first four */
  ct_tensor *x = ct_var_tensor(ct_scope_var(s, "X"));
  ck_assert_int_eq(ct_tensor_wrap(x, buf, CT_DIMS(2, 2), CT_FLOAT32, ct_cpu(), NULL, NULL), CT_OK);
  put_ramp(s, "W", CT_DIMS(2, 2), 1.0f);
  ct_op *op = op_xy("matmul", "X", "W", "X");
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_OK);
  ck_assert(ct_tensor_is_external(x));
  ck_assert_ptr_eq(ct_tensor_data(x, CT_FLOAT32), buf);
  ck_assert_float_eq(buf[0], 2.0f); /* [[0,1],[2,3]]^2 = [[2,3],[6,11]] */
  ck_assert_float_eq(buf[1], 3.0f);
  ck_assert_float_eq(buf[2], 6.0f);
  ck_assert_float_eq(buf[3], 11.0f);
  ct_op_free(op);
  /* A result that does not fit the buffer is refused and the buffer is left alone. */
  put_ramp(s, "W3", CT_DIMS(2, 3), 1.0f);
  op = op_xy("matmul", "X", "W3", "X"); /* [2,2] x [2,3] = [2,3]: 6 floats, the buffer has 4 */
  ck_assert_int_eq(ct_tensor_resize(x, CT_DIMS(2, 2)), CT_OK);
  ck_assert_int_eq(ct_tensor_wrap(x, buf, CT_DIMS(2, 2), CT_FLOAT32, ct_cpu(), NULL, NULL), CT_OK);
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_EXTERNAL_BUFFER);
  ck_assert(ct_tensor_is_external(x));
  ck_assert(ct_ddim_equal(ct_tensor_dims(x), CT_DIMS(2, 2)));
  ck_assert_float_eq(buf[3], 11.0f);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(failed_in_place_op_keeps_its_data) {
  ct_scope *s = ct_scope_new();
  put_ramp(s, "X", CT_DIMS(3), 1.0f);
  put_ramp(s, "Y", CT_DIMS(2), 1.0f);
  ct_op *op = op_xy("elementwise_add", "X", "Y", "X");
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_SHAPE);
  const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, "X"));
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(3)));
  ck_assert_float_eq(var_f32(s, "X")[2], 2.0f);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- A user-defined op type -------------------------------------------------------------------- */

enum { AXPY_X, AXPY_Y };
enum { AXPY_A };

static ct_status axpy_infer(const ct_kernel_ctx *c) {
  ct_ddim x = ct_tensor_dims(ct_kernel_in(c, AXPY_X, 0));
  if (!ct_ddim_equal(x, ct_tensor_dims(ct_kernel_in(c, AXPY_Y, 0)))) {
    return ct_kernel_fail(c, CT_ERR_SHAPE, "X '%s' and Y '%s' differ",
                          ct_kernel_in_name(c, AXPY_X, 0), ct_kernel_in_name(c, AXPY_Y, 0));
  }
  return ct_tensor_resize(ct_kernel_out(c, 0, 0), x);
}

static ct_status axpy_f32(const ct_kernel_ctx *c) {
  const float *x = ct_tensor_data(ct_kernel_in(c, AXPY_X, 0), CT_FLOAT32);
  const float *y = ct_tensor_data(ct_kernel_in(c, AXPY_Y, 0), CT_FLOAT32);
  float *o = ct_tensor_mutable_data(ct_kernel_out(c, 0, 0), CT_FLOAT32, c->place);
  if (x == NULL || y == NULL || o == NULL) return ct_last_status();
  float a = (float)c->attr[AXPY_A].u.f;
  for (int64_t i = 0; i < ct_tensor_numel(ct_kernel_in(c, AXPY_X, 0)); i++) o[i] = a * x[i] + y[i];
  return CT_OK;
}

static const ct_slot_def axpy_in[] = {{"X", 0}, {"Y", 0}};
static const ct_slot_def axpy_out[] = {{"Out", 0}};
static const ct_attr_def axpy_attrs[] = {{"alpha", {.type = CT_ATTR_FLOAT, .u.f = 1.0}, false}};
static const ct_op_def axpy_def = {.type = "test_axpy", .inputs = axpy_in, .n_inputs = 2,
                                   .outputs = axpy_out, .n_outputs = 1, .attrs = axpy_attrs,
                                   .n_attrs = 1, .infer_shape = axpy_infer};

START_TEST(user_op_type_registers_and_runs) {
  ck_assert_int_eq(ct_op_register(&axpy_def), CT_OK);
  ck_assert_int_eq(ct_kernel_register("test_axpy", CT_DEVICE_CPU, CT_FLOAT32, axpy_f32), CT_OK);
  ct_scope *s = ct_scope_new();
  put_ramp(s, "x", CT_DIMS(3), 1.0f);
  put_ramp(s, "y", CT_DIMS(3), 10.0f);
  ct_op *op = op_xy("test_axpy", "x", "y", "z");
  ck_assert_int_eq(ct_op_set_attr_float(op, "alpha", 2.0), CT_OK);
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_OK);
  const float *z = var_f32(s, "z");
  ck_assert_float_eq(z[0], 0.0f);
  ck_assert_float_eq(z[1], 12.0f);
  ck_assert_float_eq(z[2], 24.0f);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(user_kernel_failure_names_the_op) {
  ck_assert_int_eq(ct_op_register(&axpy_def), CT_OK);
  ck_assert_int_eq(ct_kernel_register("test_axpy", CT_DEVICE_CPU, CT_FLOAT32, axpy_f32), CT_OK);
  ct_scope *s = ct_scope_new();
  put_ramp(s, "x", CT_DIMS(3), 1.0f);
  put_ramp(s, "y", CT_DIMS(4), 1.0f);
  ct_op *op = op_xy("test_axpy", "x", "y", "z");
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_SHAPE);
  ck_assert_str_eq(ct_last_error(), "op 'test_axpy': X 'x' and Y 'y' differ");
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(registering_twice_is_already_exists) {
  ck_assert_int_eq(ct_op_register(&axpy_def), CT_OK);
  ck_assert_int_eq(ct_op_register(&axpy_def), CT_ERR_ALREADY_EXISTS);
  HAS(ct_last_error(), "'test_axpy' is already registered");
  ck_assert_int_eq(ct_kernel_register("test_axpy", CT_DEVICE_CPU, CT_FLOAT32, axpy_f32), CT_OK);
  ck_assert_int_eq(ct_kernel_register("test_axpy", CT_DEVICE_CPU, CT_FLOAT32, axpy_f32),
                   CT_ERR_ALREADY_EXISTS);
  ct_op_def builtin = axpy_def;
  builtin.type = "matmul";
  ck_assert_int_eq(ct_op_register(&builtin), CT_ERR_ALREADY_EXISTS);
}
END_TEST

START_TEST(bad_definitions_are_refused) {
  static const ct_slot_def twice[] = {{"X", 0}, {"X", 0}};
  ct_op_def d = axpy_def;
  d.type = "test_bad";
  d.inputs = twice;
  ck_assert_int_eq(ct_op_register(&d), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "input slot 'X' is declared twice");
  d = axpy_def;
  d.type = "test_bad";
  d.dtype_attr = "alpha"; /* a float attribute cannot choose the dtype */
  ck_assert_int_eq(ct_op_register(&d), CT_ERR_INVALID_ARGUMENT);
  d = axpy_def;
  d.type = "";
  ck_assert_int_eq(ct_op_register(&d), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_op_register(NULL), CT_ERR_INVALID_ARGUMENT);
  ck_assert(!ct_op_registered("test_bad"));
  ck_assert_int_eq(ct_kernel_register("test_bad", CT_DEVICE_CPU, CT_FLOAT32, axpy_f32),
                   CT_ERR_NOT_FOUND);
  ck_assert_int_eq(ct_kernel_register("matmul", (ct_device_kind)7, CT_FLOAT32, axpy_f32),
                   CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_kernel_register("matmul", CT_DEVICE_CPU, CT_FLOAT32, NULL),
                   CT_ERR_INVALID_ARGUMENT);
}
END_TEST

/* An op whose input slot takes a variable of any type: it counts the int64 it is given. */
static ct_status count_kernel(const ct_kernel_ctx *c) {
  const int64_t *n = ct_var_get(ct_kernel_in_var(c, 0, 0), &ct_int64_type);
  if (n == NULL) return ct_kernel_fail(c, ct_last_status(), "%s", ct_last_error());
  ct_tensor *o = ct_kernel_out(c, 0, 0);
  ct_tensor_resize(o, CT_DIMS(*n));
  float *d = ct_tensor_mutable_data(o, CT_FLOAT32, c->place);
  if (d == NULL) return ct_last_status();
  for (int64_t i = 0; i < *n; i++) d[i] = (float)i;
  return CT_OK;
}

START_TEST(any_type_slot_passes_the_variable) {
  static const ct_slot_def in[] = {{"N", CT_SLOT_ANY_TYPE}};
  static const ct_slot_def out[] = {{"Out", 0}};
  static const ct_op_def def = {.type = "test_count", .inputs = in, .n_inputs = 1,
                                .outputs = out, .n_outputs = 1};
  ck_assert_int_eq(ct_op_register(&def), CT_OK);
  ck_assert_int_eq(ct_kernel_register("test_count", CT_DEVICE_CPU, CT_DTYPE_UNDEFINED,
                                      count_kernel),
                   CT_OK);
  ct_scope *s = ct_scope_new();
  *(int64_t *)ct_var_get_mutable(ct_scope_var(s, "n"), &ct_int64_type) = 4;
  ct_op *op = ct_op_new("test_count");
  ct_op_set_input(op, "N", "n");
  ct_op_set_output(op, "Out", "r");
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_OK);
  ck_assert_int_eq(ct_tensor_numel(ct_var_get_tensor(ct_scope_find_var(s, "r"))), 4);
  ck_assert_float_eq(var_f32(s, "r")[3], 3.0f);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static Suite *op_suite(void) {
  Suite *s = suite_create("op");
  CT_ADD_TEST(s, new_of_unknown_type_is_not_found);
  CT_ADD_TEST(s, builtin_types_are_registered);
  CT_ADD_TEST(s, unknown_slot_lists_the_slots);
  CT_ADD_TEST(s, many_names_on_a_single_slot_are_refused);
  CT_ADD_TEST(s, attribute_types_are_checked);
  CT_ADD_TEST(s, float_attribute_does_not_narrow_to_int);
  CT_ADD_TEST(s, op_type_names_the_type);
  CT_ADD_TEST(s, run_finds_inputs_in_ancestors_and_creates_outputs_locally);
  CT_ADD_TEST(s, run_writes_an_output_that_an_ancestor_holds);
  CT_ADD_TEST(s, missing_input_names_op_slot_and_variable);
  CT_ADD_TEST(s, unwired_required_slot_is_reported);
  CT_ADD_TEST(s, input_without_memory_is_uninitialized);
  CT_ADD_TEST(s, input_of_another_type_is_a_mismatch);
  CT_ADD_TEST(s, output_of_another_type_is_a_mismatch);
  CT_ADD_TEST(s, shape_conflict_names_both_inputs);
  CT_ADD_TEST(s, missing_kernel_is_unsupported_and_lists_kernels);
  CT_ADD_TEST(s, mixed_dtypes_are_a_mismatch);
  CT_ADD_TEST(s, required_attribute_must_be_set);
  CT_ADD_TEST(s, run_with_null_or_bad_arguments);
  CT_ADD_TEST(s, cuda_place_refuses_host_inputs_or_a_missing_device);
  CT_ADD_TEST(s, in_place_op_reads_its_old_value);
  CT_ADD_TEST(s, output_viewing_an_input_gets_its_own_memory);
  CT_ADD_TEST(s, writing_a_reshapes_output_leaves_its_input_alone);
  CT_ADD_TEST(s, writing_a_reshapes_input_leaves_the_view_alone);
  CT_ADD_TEST(s, reshape_of_an_external_buffer_copies_it);
  CT_ADD_TEST(s, output_overlapping_an_input_through_two_wraps_reads_the_old_values);
  CT_ADD_TEST(s, in_place_op_on_an_external_buffer_writes_into_it);
  CT_ADD_TEST(s, failed_in_place_op_keeps_its_data);
  CT_ADD_TEST(s, user_op_type_registers_and_runs);
  CT_ADD_TEST(s, user_kernel_failure_names_the_op);
  CT_ADD_TEST(s, registering_twice_is_already_exists);
  CT_ADD_TEST(s, bad_definitions_are_refused);
  CT_ADD_TEST(s, any_type_slot_passes_the_variable);
  return s;
}

CT_TEST_MAIN(op_suite)
