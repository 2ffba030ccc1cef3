/* SPDX-License-Identifier: Apache-2.0 */
/* ONNX export (ct_onnx_save, onnx/onnx_save.c): a small program saved and loaded again computes
 * the same bits; an op without a standard equivalent goes through the domain ai.corten with every
 * attribute type; weights become initializers and inputs without dims load as unknown shapes;
 * a variable nothing defines, or one holding no tensor, is refused naming it, and no file (not
 * even a temporary one) is left. */
#define _GNU_SOURCE
#include <unistd.h>

#include "file_util.h"
#include "onnx_save_util.h"
#include "op_util.h"

static ct_ddim dims2(int64_t a, int64_t b) { return (ct_ddim){.rank = 2, .d = {a, b}}; }

static void append(ct_program *p, ct_op *op) { ck_assert_int_eq(ct_program_append(p, op), CT_OK); }

static void put_ramp2(ct_scope *s, const char *name, int64_t a, int64_t b, float step) {
  float *v = xmalloc(a * b, sizeof *v);
  for (int64_t i = 0; i < a * b; i++) v[i] = (float)(i % 7 - 3) * step;
  put(s, name, CT_FLOAT32, dims2(a, b), v);
  free(v);
}

/* x [2,3] @ W [3,4] + b [4], relu, softmax, then scale (ai.corten), transpose and reshape. */
static ct_program *small_program(ct_scope *s) {
  put_ramp2(s, "W", 3, 4, 0.25f);
  put_ramp2(s, "b", 1, 4, 0.5f);
  put_ramp2(s, "x", 2, 3, 1.0f);
  ct_program *p = ct_program_new();
  append(p, op_xy("matmul", "x", "W", "xw"));
  append(p, op_xy("elementwise_add", "xw", "b", "h"));
  append(p, op_x("relu", "h", "r"));
  ct_op *sm = op_x("softmax", "r", "sm");
  ck_assert_int_eq(ct_op_set_attr_int(sm, "axis", -1), CT_OK);
  append(p, sm);
  ct_op *sc = op_x("scale", "sm", "sc");
  ck_assert_int_eq(ct_op_set_attr_float(sc, "scale", 0.1), CT_OK); /* not a float32: a tensor */
  ck_assert_int_eq(ct_op_set_attr_float(sc, "bias", 2.0), CT_OK);
  append(p, sc);
  ct_op *tr = op_x("transpose", "sc", "tr");
  static const int64_t perm[2] = {1, 0}, shape[2] = {2, -1};
  ck_assert_int_eq(ct_op_set_attr_ints(tr, "axis", perm, 2), CT_OK);
  append(p, tr);
  ct_op *rs = op_x("reshape", "tr", "y");
  ck_assert_int_eq(ct_op_set_attr_ints(rs, "shape", shape, 2), CT_OK);
  append(p, rs);
  return p;
}

START_TEST(small_program_saved_and_loaded_computes_the_same_bits) {
  make_work_dir("onnx-save");
  ct_scope *s = ct_scope_new();
  ct_program *p = small_program(s);
  run_program(p, s);
  const char *in[] = {"x"}, *out[] = {"y"};
  ck_assert_msg(ct_onnx_save(in_dir("m.onnx"), p, s, in, 1, out, 1) == CT_OK, "%s",
                ct_last_error());
  ct_scope *s2 = ct_scope_new();
  ct_onnx_model *m = ct_onnx_load(in_dir("m.onnx"), s2);
  ck_assert_msg(m != NULL, "%s", ct_last_error());
  ck_assert_uint_eq(ct_onnx_input_count(m), 1);
  ck_assert_str_eq(ct_onnx_input_name(m, 0), "x");
  ck_assert_str_eq(ct_onnx_output_name(m, 0), "y");
  ck_assert_uint_eq(ct_program_size(ct_onnx_program(m)), ct_program_size(p));
  for (size_t i = 0; i < ct_program_size(p); i++) {
    ck_assert_str_eq(ct_op_type(ct_program_op(ct_onnx_program(m), i)),
                     ct_op_type(ct_program_op(p, i)));
  }
  put_ramp2(s2, "x", 2, 3, 1.0f);
  run_program(ct_onnx_program(m), s2);
  same_bits(s, "y", s2, "y");
  ct_onnx_free(m);
  ct_scope_free(s2);
  ct_program_free(p);
  ct_scope_free(s);
  remove_work_dir();
}
END_TEST

/* A test op type with one attribute of every type: Out = X * f + i + b + sum(ints) +
 * sum(floats) + strlen(s), in double. */
static const ct_slot_def x_slot[] = {{"X", 0}}, out_slot[] = {{"Out", 0}};
static const int64_t no_ints[1] = {0};
static const double no_floats[1] = {0};
static const ct_attr_def all_attrs[] = {
    {"i", {.type = CT_ATTR_INT, .u.i = 0}, false},
    {"f", {.type = CT_ATTR_FLOAT, .u.f = 1}, false},
    {"b", {.type = CT_ATTR_BOOL, .u.b = false}, false},
    {"s", {.type = CT_ATTR_STRING, .u.s = ""}, false},
    {"ints", {.type = CT_ATTR_INTS, .u.ints = {no_ints, 0}}, false},
    {"floats", {.type = CT_ATTR_FLOATS, .u.floats = {no_floats, 0}}, false},
};

static double attr_sum(const ct_attr_value *a) {
  double v = (double)a[0].u.i + (a[2].u.b ? 1 : 0) + (double)strlen(a[3].u.s);
  for (size_t k = 0; k < a[4].u.ints.n; k++) v += (double)a[4].u.ints.v[k];
  for (size_t k = 0; k < a[5].u.floats.n; k++) v += a[5].u.floats.v[k];
  return v;
}

static ct_status all_attrs_infer(const ct_kernel_ctx *c) {
  return ct_tensor_resize(ct_kernel_out(c, 0, 0), ct_tensor_dims(ct_kernel_in(c, 0, 0)));
}

static ct_status all_attrs_kernel(const ct_kernel_ctx *c) {
  const ct_tensor *x = ct_kernel_in(c, 0, 0);
  ct_tensor *o = ct_kernel_out(c, 0, 0);
  const double *xv = ct_tensor_data(x, CT_FLOAT64);
  double *ov = ct_tensor_mutable_data(o, CT_FLOAT64, c->place);
  if (xv == NULL || ov == NULL) return ct_last_status();
  for (int64_t i = 0; i < ct_tensor_numel(x); i++) {
    ov[i] = xv[i] * c->attr[1].u.f + attr_sum(c->attr);
  }
  return CT_OK;
}

static void register_all_attrs(void) {
  if (ct_op_registered("test_all_attrs")) return;
  ct_op_def d = {.type = "test_all_attrs", .inputs = x_slot, .n_inputs = 1, .outputs = out_slot,
                 .n_outputs = 1, .attrs = all_attrs, .n_attrs = 6, .infer_shape = all_attrs_infer};
  ck_assert_int_eq(ct_op_register(&d), CT_OK);
  ck_assert_int_eq(
      ct_kernel_register("test_all_attrs", CT_DEVICE_CPU, CT_FLOAT64, all_attrs_kernel), CT_OK);
}

START_TEST(a_corten_op_round_trips_with_every_attribute_type) {
  register_all_attrs();
  make_work_dir("onnx-save");
  ct_scope *s = ct_scope_new();
  const double x[3] = {1, -2, 0.5};
  put(s, "x", CT_FLOAT64, (ct_ddim){.rank = 1, .d = {3}}, x);
  ct_op *op = op_x("test_all_attrs", "x", "y");
  static const int64_t ints[3] = {-5, 7, 1LL << 40};
  static const double floats_exact[2] = {0.5, -3}, floats_wide[2] = {0.1, 1e300};
  ck_assert_int_eq(ct_op_set_attr_int(op, "i", -123456789012LL), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "f", 1.0 / 3.0), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "b", true), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "s", "four"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "ints", ints, 3), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_floats(op, "floats", floats_wide, 2), CT_OK);
  ct_program *p = ct_program_new();
  append(p, op);
  ct_op *op2 = op_x("test_all_attrs", "y", "z"); /* float32-exact floats: FLOAT and FLOATS */
  ck_assert_int_eq(ct_op_set_attr_float(op2, "f", 0.25), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_floats(op2, "floats", floats_exact, 2), CT_OK);
  append(p, op2);
  run_program(p, s);
  const char *in[] = {"x"}, *out[] = {"z"};
  ck_assert_msg(ct_onnx_save(in_dir("a.onnx"), p, s, in, 1, out, 1) == CT_OK, "%s",
                ct_last_error());
  ct_scope *s2 = ct_scope_new();
  ct_onnx_model *m = ct_onnx_load(in_dir("a.onnx"), s2);
  ck_assert_msg(m != NULL, "%s", ct_last_error());
  put(s2, "x", CT_FLOAT64, (ct_ddim){.rank = 1, .d = {3}}, x);
  run_program(ct_onnx_program(m), s2);
  same_bits(s, "y", s2, "y");
  same_bits(s, "z", s2, "z");
  /* by hand: y = x / 3 + (-123456789012 + 1 + 4 + (-5 + 7 + 2^40) + 0.1 + 1e300) */
  const double *y = ct_tensor_data(tensor_of(s2, "y"), CT_FLOAT64);
  double add = -123456789012.0 + 1 + 4 + (-5 + 7 + (double)(1LL << 40)) + 0.1 + 1e300;
  for (int i = 0; i < 3; i++) ck_assert(y[i] == x[i] * (1.0 / 3.0) + add);
  ct_onnx_free(m);
  ct_scope_free(s2);
  ct_program_free(p);
  ct_scope_free(s);
  remove_work_dir();
}
END_TEST

START_TEST(weights_become_initializers_and_dimless_inputs_load_unshaped) {
  make_work_dir("onnx-save");
  ct_scope *s = ct_scope_new();
  put_ramp2(s, "W", 3, 4, 0.25f);
  ck_assert_ptr_nonnull(ct_var_tensor(ct_scope_var(s, "x"))); /* no dims, no memory */
  ct_program *p = ct_program_new();
  append(p, op_xy("matmul", "x", "W", "y"));
  const char *in[] = {"x"}, *out[] = {"y"};
  ck_assert_msg(ct_onnx_save(in_dir("w.onnx"), p, s, in, 1, out, 1) == CT_OK, "%s",
                ct_last_error());
  ct_scope *s2 = ct_scope_new();
  ct_onnx_model *m = ct_onnx_load(in_dir("w.onnx"), s2);
  ck_assert_msg(m != NULL, "%s", ct_last_error());
  same_bits(s, "W", s2, "W"); /* the initializer, bit for bit */
  ct_ddim d;
  ct_dtype dt;
  ck_assert_int_eq(ct_onnx_input_info(m, 0, &d, &dt), CT_ERR_UNINITIALIZED);
  /* any batch runs: 5 rows here */
  put_ramp2(s2, "x", 5, 3, 1.0f);
  put_ramp2(s, "x", 5, 3, 1.0f);
  run_program(p, s);
  run_program(ct_onnx_program(m), s2);
  same_bits(s, "y", s2, "y");
  ct_onnx_free(m);
  ct_scope_free(s2);
  ct_program_free(p);
  ct_scope_free(s);
  remove_work_dir();
}
END_TEST

START_TEST(named_dims_are_saved_symbolic_and_run_at_any_size) {
  make_work_dir("onnx-save");
  ct_scope *s = ct_scope_new();
  ct_program *p = small_program(s);
  run_program(p, s);
  const char *in[] = {"x"}, *out[] = {"y"};
  const ct_onnx_dim_name batch[1] = {{"x", 0, "N"}};
  const ct_onnx_save_options o = {.dim_names = batch, .n_dim_names = 1};
  ck_assert_msg(ct_onnx_save_with(in_dir("n.onnx"), p, s, in, 1, out, 1, &o) == CT_OK, "%s",
                ct_last_error());
  ct_scope *s2 = ct_scope_new();
  ct_onnx_model *m = ct_onnx_load(in_dir("n.onnx"), s2);
  ck_assert_msg(m != NULL, "%s", ct_last_error());
  ct_ddim d;
  ct_dtype dt;
  ck_assert_int_eq(ct_onnx_input_info(m, 0, &d, &dt), CT_OK);
  ck_assert_int_eq(d.rank, 2);
  ck_assert_int_eq(d.d[0], -1); /* "N" */
  ck_assert_int_eq(d.d[1], 3);
  ck_assert_int_eq(dt, CT_FLOAT32);
  put_ramp2(s2, "x", 5, 3, 1.0f); /* 5 rows where 2 were saved */
  put_ramp2(s, "x", 5, 3, 1.0f);
  run_program(p, s);
  run_program(ct_onnx_program(m), s2);
  same_bits(s, "y", s2, "y");
  ct_onnx_free(m);
  ct_scope_free(s2);
  ct_program_free(p);
  ct_scope_free(s);
  remove_work_dir();
}
END_TEST

START_TEST(bad_dim_names_are_refused_and_no_file_is_left) {
  make_work_dir("onnx-save");
  ct_scope *s = ct_scope_new();
  ct_program *p = small_program(s);
  run_program(p, s);
  const char *in[] = {"x"}, *out[] = {"y"};
  const ct_onnx_dim_name not_io[1] = {{"W", 0, "N"}}, past[1] = {{"y", 2, "N"}},
                         empty[1] = {{"x", 0, ""}}, negative[1] = {{"x", -1, "N"}};
  ct_onnx_save_options o = {.dim_names = not_io, .n_dim_names = 1};
  ck_assert_int_eq(ct_onnx_save_with(in_dir("b.onnx"), p, s, in, 1, out, 1, &o),
                   CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "names 'W', which is neither an input nor an output");
  o.dim_names = past;
  ck_assert_int_eq(ct_onnx_save_with(in_dir("b.onnx"), p, s, in, 1, out, 1, &o),
                   CT_ERR_OUT_OF_RANGE);
  HAS(ct_last_error(), "axis 2 of 'y', which has 2 dims");
  o.dim_names = empty;
  ck_assert_int_eq(ct_onnx_save_with(in_dir("b.onnx"), p, s, in, 1, out, 1, &o),
                   CT_ERR_INVALID_ARGUMENT);
  o.dim_names = negative;
  ck_assert_int_eq(ct_onnx_save_with(in_dir("b.onnx"), p, s, in, 1, out, 1, &o),
                   CT_ERR_INVALID_ARGUMENT);
  o.dim_names = NULL;
  ck_assert_int_eq(ct_onnx_save_with(in_dir("b.onnx"), p, s, in, 1, out, 1, &o),
                   CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(count_entries(work_dir), 0);
  ct_program_free(p);
  ct_scope_free(s);
  remove_work_dir();
}
END_TEST

START_TEST(an_undefined_variable_is_refused_and_no_file_is_left) {
  make_work_dir("onnx-save");
  ct_scope *s = ct_scope_new();
  ct_program *p = ct_program_new();
  append(p, op_xy("matmul", "x", "nowhere", "y"));
  put_ramp2(s, "x", 2, 2, 1.0f);
  const char *in[] = {"x"}, *out[] = {"y"};
  ck_assert_int_eq(ct_onnx_save(in_dir("u.onnx"), p, s, in, 1, out, 1), CT_ERR_NOT_FOUND);
  HAS(ct_last_error(), "'nowhere'");
  ck_assert_int_eq(count_entries(work_dir), 0);
  /* an existing file stays as it was */
  write_all(in_dir("u.onnx"), "old", 3);
  ck_assert_int_eq(ct_onnx_save(in_dir("u.onnx"), p, s, in, 1, out, 1), CT_ERR_NOT_FOUND);
  size_t n = 0;
  unsigned char *bytes = read_all(in_dir("u.onnx"), &n);
  ck_assert_uint_eq(n, 3);
  ck_assert_int_eq(memcmp(bytes, "old", 3), 0);
  free(bytes);
  ck_assert_int_eq(count_entries(work_dir), 1);
  ct_program_free(p);
  ct_scope_free(s);
  remove_work_dir();
}
END_TEST

START_TEST(a_variable_holding_no_tensor_is_refused_naming_it) {
  make_work_dir("onnx-save");
  ct_scope *s = ct_scope_new();
  ck_assert_ptr_nonnull(ct_var_get_mutable(ct_scope_var(s, "count"), &ct_int64_type));
  put_ramp2(s, "x", 2, 2, 1.0f);
  ct_program *p = ct_program_new();
  append(p, op_xy("elementwise_add", "x", "count", "y"));
  const char *in[] = {"x"}, *out[] = {"y"};
  ck_assert_int_eq(ct_onnx_save(in_dir("t.onnx"), p, s, in, 1, out, 1), CT_ERR_TYPE_MISMATCH);
  HAS(ct_last_error(), "'count'");
  HAS(ct_last_error(), "holds no tensor");
  ck_assert_int_eq(count_entries(work_dir), 0);
  ck_assert_int_eq(ct_onnx_save(NULL, p, s, in, 1, out, 1), CT_ERR_INVALID_ARGUMENT);
  ct_program_free(p);
  ct_scope_free(s);
  remove_work_dir();
}
END_TEST

/* A training program: forward, ct_program_append_backward's grad ops, then sgd writing the
 * weight it read first (an initializer). Two steps of the loaded program give the original's
 * weights and losses bit for bit. */
START_TEST(a_training_program_round_trips_through_ai_corten) {
  make_work_dir("onnx-save");
  ct_scope *s = ct_scope_new(), *s2 = ct_scope_new();
  double x[12], t[4], w[3] = {0.5, -1.25, 2}, lr = 0.1;
  for (int i = 0; i < 12; i++) x[i] = (double)(i % 5) - 2;
  for (int i = 0; i < 4; i++) t[i] = (double)i * 0.5;
  put(s, "x", CT_FLOAT64, dims2(4, 3), x);
  put(s, "t", CT_FLOAT64, dims2(4, 1), t);
  put(s, "w", CT_FLOAT64, dims2(3, 1), w);
  put(s, "lr", CT_FLOAT64, (ct_ddim){.rank = 1, .d = {1}}, &lr);
  ct_program *p = ct_program_new();
  append(p, op_xy("matmul", "x", "w", "y"));
  append(p, op_xy("elementwise_sub", "y", "t", "d"));
  append(p, op_xy("elementwise_mul", "d", "d", "d2"));
  append(p, op_x("mean", "d2", "loss"));
  const char *params[] = {"w"};
  ck_assert_msg(ct_program_append_backward(p, "loss", params, 1) == CT_OK, "%s", ct_last_error());
  ct_op *sgd = new_op("sgd");
  ck_assert_int_eq(ct_op_set_input(sgd, "Param", "w"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(sgd, "Grad", "w@GRAD"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(sgd, "LearningRate", "lr"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(sgd, "ParamOut", "w"), CT_OK);
  append(p, sgd);
  const char *in[] = {"x", "t"}, *out[] = {"loss", "w"};
  ck_assert_msg(ct_onnx_save(in_dir("train.onnx"), p, s, in, 2, out, 2) == CT_OK, "%s",
                ct_last_error());
  ct_onnx_model *m = ct_onnx_load(in_dir("train.onnx"), s2);
  ck_assert_msg(m != NULL, "%s", ct_last_error());
  ck_assert_uint_eq(ct_program_size(ct_onnx_program(m)), ct_program_size(p));
  put(s2, "x", CT_FLOAT64, dims2(4, 3), x);
  put(s2, "t", CT_FLOAT64, dims2(4, 1), t);
  for (int step = 0; step < 2; step++) {
    run_program(p, s);
    run_program(ct_onnx_program(m), s2);
    same_bits(s, "loss", s2, "loss");
    same_bits(s, "w", s2, "w");
  }
  ct_onnx_free(m);
  ct_program_free(p);
  ct_scope_free(s);
  ct_scope_free(s2);
  remove_work_dir();
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("onnx_save");
  CT_ADD_TEST(s, small_program_saved_and_loaded_computes_the_same_bits);
  CT_ADD_TEST(s, a_corten_op_round_trips_with_every_attribute_type);
  CT_ADD_TEST(s, weights_become_initializers_and_dimless_inputs_load_unshaped);
  CT_ADD_TEST(s, named_dims_are_saved_symbolic_and_run_at_any_size);
  CT_ADD_TEST(s, bad_dim_names_are_refused_and_no_file_is_left);
  CT_ADD_TEST(s, an_undefined_variable_is_refused_and_no_file_is_left);
  CT_ADD_TEST(s, a_variable_holding_no_tensor_is_refused_naming_it);
  CT_ADD_TEST(s, a_training_program_round_trips_through_ai_corten);
  return s;
}

CT_TEST_MAIN(make_suite)
