/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_op_reuse.c: the executor's reuse of infer-shape (CT_OP_PURE_INFER): skipped while
 * nothing it reads changed, run again after any change (an input resized or retyped, its tensor
 * replaced, an attribute edited, an output resized by the user), never skipped for a type without
 * the flag; and the built-in ops that carry the flag, which must follow the same changes. */
#include <stdio.h>
#include <string.h>

#include <corten/corten.h>

#include "op_util.h"

/* ---- Probe op types: X -> Out, Out = X; with attribute flat, Out is [numel of X] ------------- */

static int infers;        /* calls of probe_infer */
static bool kernel_fails; /* probe_kernel resizes Out, then fails with CT_ERR_INVALID_ARGUMENT */

static ct_status probe_infer(const ct_kernel_ctx *c) {
  infers++;
  const ct_tensor *x = ct_kernel_in(c, 0, 0);
  ct_ddim d = c->attr[0].u.b ? CT_DIMS(ct_tensor_numel(x)) : ct_tensor_dims(x);
  return ct_tensor_resize(ct_kernel_out(c, 0, 0), d);
}

static ct_status probe_kernel(const ct_kernel_ctx *c) {
  if (kernel_fails) { /* after resizing Out, which the failure must undo */
    ct_status s = ct_tensor_resize(ct_kernel_out(c, 0, 0), CT_DIMS(9));
    return ct_kernel_fail(c, s == CT_OK ? CT_ERR_INVALID_ARGUMENT : s, "asked to fail");
  }
  const ct_tensor *x = ct_kernel_in(c, 0, 0);
  ct_tensor *out = ct_kernel_out(c, 0, 0);
  void *dst = ct_tensor_mutable_data(out, c->dtype, c->place);
  if (dst == NULL) return ct_last_status();
  memcpy(dst, ct_tensor_data(x, c->dtype), (size_t)ct_tensor_numel(x) * ct_dtype_size(c->dtype));
  return CT_OK;
}

/* Registers probe type `type` with these op flags; with many, X takes any number of variables
 * (the probe reads X[0]). */
static void register_probe(const char *type, unsigned flags, bool many) {
  static const ct_slot_def in1[] = {{"X", 0}}, in_many[] = {{"X", CT_SLOT_MANY}};
  static const ct_slot_def out[] = {{"Out", 0}};
  const ct_slot_def *in = many ? in_many : in1;
  static const ct_attr_def attrs[] = {{"flat", {.type = CT_ATTR_BOOL, .u.b = false}, false}};
  if (ct_op_registered(type)) return;
  ct_op_def def = {.type = type, .inputs = in, .n_inputs = 1, .outputs = out, .n_outputs = 1,
                   .attrs = attrs, .n_attrs = 1, .infer_shape = probe_infer, .flags = flags};
  ck_assert_int_eq(ct_op_register(&def), CT_OK);
  ck_assert_int_eq(ct_kernel_register(type, CT_DEVICE_CPU, CT_DTYPE_UNDEFINED, probe_kernel),
                   CT_OK);
}

/* A scope with x = [1, 2, 3, 4] as [2, 2] float32, and an executor of one probe op
 * (pure: CT_OP_PURE_INFER) from x to y, run `warm` times. */
typedef struct fixture {
  ct_scope *s;
  ct_program *p;
  ct_op *op;
  ct_executor *e;
} fixture;

static const float x4[] = {1, 2, 3, 4};

static fixture setup(bool pure, int warm) {
  const char *type = pure ? "test_probe_pure" : "test_probe_plain";
  register_probe(type, pure ? CT_OP_PURE_INFER : 0, false);
  fixture f = {.s = ct_scope_new(), .p = ct_program_new()};
  put(f.s, "x", CT_FLOAT32, CT_DIMS(2, 2), x4);
  f.op = op_x(type, "x", "y");
  ck_assert_int_eq(ct_program_append(f.p, f.op), CT_OK);
  f.e = ct_executor_new(f.p, f.s, ct_cpu());
  ck_assert_ptr_nonnull(f.e);
  infers = 0;
  for (int r = 0; r < warm; r++) ck_assert_int_eq(ct_executor_run(f.e), CT_OK);
  return f;
}

static void teardown(fixture *f) {
  ct_executor_free(f->e);
  ct_program_free(f->p);
  ct_scope_free(f->s);
}

static const ct_tensor *var_t(const fixture *f, const char *name) {
  return ct_var_get_tensor(ct_scope_find_var(f->s, name));
}

static void assert_dims(const ct_tensor *t, ct_ddim want) {
  ck_assert_msg(ct_ddim_equal(ct_tensor_dims(t), want), "dims differ");
}

/* Variable name holds n float32 values, want. */
static void assert_f32(const ct_scope *s, const char *name, const float *want, int64_t n) {
  const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, name));
  ck_assert_int_eq(ct_tensor_numel(t), n);
  const float *got = var_f32(s, name);
  for (int64_t i = 0; i < n; i++) ck_assert_float_eq(got[i], want[i]);
}

/* Runs f's executor once; infer-shape has then run `infers_after` times since setup. */
static void run_expecting(fixture *f, int infers_after) {
  ck_assert_int_eq(ct_executor_run(f->e), CT_OK);
  ck_assert_int_eq(infers, infers_after);
}

/* ---- Reuse ------------------------------------------------------------------------------------ */

/* The first run infers; the second too, as the kernel gave y the dtype infer-shape saw it
 * without; from then on nothing changed and infer-shape is skipped. */
START_TEST(steady_runs_skip_infer_shape) {
  fixture f = setup(true, 0);
  for (int r = 0; r < 6; r++) ck_assert_int_eq(ct_executor_run(f.e), CT_OK);
  ck_assert_int_eq(infers, 2);
  assert_dims(var_t(&f, "y"), CT_DIMS(2, 2));
  assert_f32(f.s, "y", x4, 4);
  teardown(&f);
}
END_TEST

START_TEST(type_without_the_flag_infers_every_run) {
  fixture f = setup(false, 0);
  for (int r = 0; r < 6; r++) ck_assert_int_eq(ct_executor_run(f.e), CT_OK);
  ck_assert_int_eq(infers, 6);
  teardown(&f);
}
END_TEST

START_TEST(op_run_infers_every_call) {
  fixture f = setup(true, 0);
  for (int r = 0; r < 3; r++) ck_assert_int_eq(ct_op_run(f.op, f.s, ct_cpu()), CT_OK);
  ck_assert_int_eq(infers, 3);
  teardown(&f);
}
END_TEST

/* Seven variables (six inputs and Out), more than a prep keeps a key for: infers every run. */
START_TEST(op_of_many_variables_infers_every_run) {
  register_probe("test_probe_many", CT_OP_PURE_INFER, true);
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT32, CT_DIMS(2, 2), x4);
  const char *xs[] = {"x", "x", "x", "x", "x", "x"};
  ct_op *op = op_many("test_probe_many", xs, 6, "y");
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  infers = 0;
  for (int r = 0; r < 4; r++) ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ck_assert_int_eq(infers, 4);
  assert_f32(s, "y", x4, 4);
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

/* ---- Re-inference after a change --------------------------------------------------------------- */

START_TEST(input_resized_infers_again) {
  fixture f = setup(true, 3);
  static const float x6[] = {1, 2, 3, 4, 5, 6};
  put(f.s, "x", CT_FLOAT32, CT_DIMS(3, 2), x6);
  run_expecting(&f, 3);
  assert_dims(var_t(&f, "y"), CT_DIMS(3, 2));
  ck_assert_float_eq(var_f32(f.s, "y")[5], 6.0f);
  run_expecting(&f, 3);
  teardown(&f);
}
END_TEST

START_TEST(input_dtype_changed_infers_again) {
  fixture f = setup(true, 3);
  static const double x4d[] = {1, 2, 3, 4};
  put(f.s, "x", CT_FLOAT64, CT_DIMS(2, 2), x4d);
  run_expecting(&f, 3);
  ck_assert_int_eq(ct_tensor_dtype(var_t(&f, "y")), CT_FLOAT64);
  ck_assert_double_eq(var_f64(f.s, "y")[3], 4.0);
  teardown(&f);
}
END_TEST

START_TEST(attribute_edited_infers_again) {
  fixture f = setup(true, 3);
  ck_assert_int_eq(ct_op_set_attr_bool(f.op, "flat", true), CT_OK);
  run_expecting(&f, 3);
  assert_dims(var_t(&f, "y"), CT_DIMS(4));
  run_expecting(&f, 3);
  teardown(&f);
}
END_TEST

START_TEST(output_resized_by_the_user_infers_again) {
  fixture f = setup(true, 3);
  ck_assert_int_eq(ct_tensor_resize(ct_var_tensor(ct_scope_find_var(f.s, "y")), CT_DIMS(1, 4)),
                   CT_OK);
  run_expecting(&f, 3);
  assert_dims(var_t(&f, "y"), CT_DIMS(2, 2));
  teardown(&f);
}
END_TEST

/* Clears x's variable, fills it again with float32 data of dims d, and runs the executor. A
 * variable holds its tensor inline, so the refilled tensor is the same object: what tells the
 * key is its new state. */
static void refill_x_and_run(fixture *f, const float *data, ct_ddim d) {
  ct_var *vx = ct_scope_find_var(f->s, "x");
  ct_var_clear(vx);
  ck_assert_int_eq(ct_tensor_set_value(ct_var_tensor(vx), data, d, CT_FLOAT32, ct_cpu()), CT_OK);
  ck_assert_int_eq(ct_executor_run(f->e), CT_OK);
}

/* Refilled with other dims: infers. */
START_TEST(input_tensor_replaced_infers_again) {
  fixture f = setup(true, 3);
  refill_x_and_run(&f, (const float[]){7, 8, 9}, CT_DIMS(3));
  ck_assert_int_eq(infers, 3);
  assert_dims(var_t(&f, "y"), CT_DIMS(3));
  ck_assert_float_eq(var_f32(f.s, "y")[2], 9.0f);
  teardown(&f);
}
END_TEST

/* Refilled with the same dims and dtype but other values: infer-shape would compute what y
 * has, so it is skipped, and the kernel reads the new values. */
START_TEST(input_refilled_alike_skips_infer_shape) {
  fixture f = setup(true, 3);
  static const float x4b[] = {5, 6, 7, 8};
  refill_x_and_run(&f, x4b, CT_DIMS(2, 2));
  ck_assert_int_eq(infers, 2);
  assert_f32(f.s, "y", x4b, 4);
  teardown(&f);
}
END_TEST

/* A kernel failing on a run that skipped infer-shape leaves y's dims as they were, and drops
 * the key: the next run infers again. */
START_TEST(failed_run_infers_again) {
  fixture f = setup(true, 3);
  kernel_fails = true;
  CT_ASSERT_FAILS(ct_executor_run(f.e), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "asked to fail");
  ck_assert_int_eq(infers, 2);
  assert_dims(var_t(&f, "y"), CT_DIMS(2, 2));
  kernel_fails = false;
  run_expecting(&f, 3);
  teardown(&f);
}
END_TEST

/* ---- Built-in ops ------------------------------------------------------------------------------ */

/* c = a + b after steady runs: inputs grown, then b broadcast, then c resized by the user. */
START_TEST(builtin_add_follows_every_change) {
  ct_scope *s = ct_scope_new();
  put(s, "a", CT_FLOAT32, CT_DIMS(1), (float[]){1});
  put(s, "b", CT_FLOAT32, CT_DIMS(1), (float[]){2});
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_add", "a", "b", "c")), CT_OK);
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  for (int r = 0; r < 3; r++) ck_assert_int_eq(ct_executor_run(e), CT_OK);
  assert_f32(s, "c", (float[]){3}, 1);
  put(s, "a", CT_FLOAT32, CT_DIMS(3), (float[]){1, 2, 3});
  put(s, "b", CT_FLOAT32, CT_DIMS(3), (float[]){10, 20, 30});
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  assert_f32(s, "c", (float[]){11, 22, 33}, 3);
  put(s, "b", CT_FLOAT32, CT_DIMS(1), (float[]){5});
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  assert_f32(s, "c", (float[]){6, 7, 8}, 3);
  ct_tensor *c = ct_var_tensor(ct_scope_find_var(s, "c"));
  ck_assert_int_eq(ct_tensor_resize(c, CT_DIMS(1)), CT_OK);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  assert_dims(c, CT_DIMS(3));
  assert_f32(s, "c", (float[]){6, 7, 8}, 3);
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

/* x = 2 x in place (the aliased path) over steady runs, then after x is resized. */
START_TEST(builtin_in_place_op_follows_a_resize) {
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT32, CT_DIMS(2), (float[]){1, 2});
  ct_program *p = ct_program_new();
  ct_op *sc = op_x("scale", "x", "x");
  ck_assert_int_eq(ct_op_set_attr_float(sc, "scale", 2.0), CT_OK);
  ck_assert_int_eq(ct_program_append(p, sc), CT_OK);
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  for (int r = 0; r < 3; r++) ck_assert_int_eq(ct_executor_run(e), CT_OK);
  assert_f32(s, "x", (float[]){8, 16}, 2);
  put(s, "x", CT_FLOAT32, CT_DIMS(3), (float[]){1, 2, 3});
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  assert_f32(s, "x", (float[]){2, 4, 6}, 3);
  ck_assert_int_eq(ct_op_set_attr_float(sc, "scale", 3.0), CT_OK);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  assert_f32(s, "x", (float[]){6, 12, 18}, 3);
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

/* ---- The registry ----------------------------------------------------------------------------- */

START_TEST(registry_keeps_and_checks_flags) {
  register_probe("test_probe_pure", CT_OP_PURE_INFER, false);
  register_probe("test_probe_plain", 0, false);
  ct_op_def got;
  ck_assert_int_eq(ct_op_type_get("test_probe_pure", &got), CT_OK);
  ck_assert_uint_eq(got.flags, CT_OP_PURE_INFER);
  ck_assert_int_eq(ct_op_type_get("test_probe_plain", &got), CT_OK);
  ck_assert_uint_eq(got.flags, 0);
  ck_assert_int_eq(ct_op_type_get("elementwise_add", &got), CT_OK);
  ck_assert_uint_eq(got.flags, CT_OP_PURE_INFER);
  ck_assert_int_eq(ct_op_type_get("adam", &got), CT_OK); /* reads Beta1Pow's value */
  ck_assert_uint_eq(got.flags, 0);
  static const ct_slot_def out[] = {{"Out", 0}};
  ct_op_def bad = {.type = "test_bad_flags", .outputs = out, .n_outputs = 1, .flags = 1u << 5};
  CT_ASSERT_FAILS(ct_op_register(&bad), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "test_bad_flags");
  HAS(ct_last_error(), "CT_OP_PURE_INFER");
  ck_assert(!ct_op_registered("test_bad_flags"));
}
END_TEST

static Suite *reuse_suite(void) {
  Suite *s = suite_create("op_reuse");
  CT_ADD_TEST(s, steady_runs_skip_infer_shape);
  CT_ADD_TEST(s, type_without_the_flag_infers_every_run);
  CT_ADD_TEST(s, op_run_infers_every_call);
  CT_ADD_TEST(s, op_of_many_variables_infers_every_run);
  CT_ADD_TEST(s, input_resized_infers_again);
  CT_ADD_TEST(s, input_dtype_changed_infers_again);
  CT_ADD_TEST(s, attribute_edited_infers_again);
  CT_ADD_TEST(s, output_resized_by_the_user_infers_again);
  CT_ADD_TEST(s, input_tensor_replaced_infers_again);
  CT_ADD_TEST(s, input_refilled_alike_skips_infer_shape);
  CT_ADD_TEST(s, failed_run_infers_again);
  CT_ADD_TEST(s, builtin_add_follows_every_change);
  CT_ADD_TEST(s, builtin_in_place_op_follows_a_resize);
  CT_ADD_TEST(s, registry_keeps_and_checks_flags);
  return s;
}

CT_TEST_MAIN(reuse_suite)
