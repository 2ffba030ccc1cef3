/* SPDX-License-Identifier: Apache-2.0 */
/* The prune suite: ct_program_prune cuts a program down to the ops some variables depend on
 * (a model's features without its head; a training step's forward part). */
#include <string.h>

#include <corten/corten.h>

#include "op_util.h"

/* The op types of p, space-separated, into buf. */
static const char *types(const ct_program *p, char *buf, size_t cap) {
  buf[0] = '\0';
  for (size_t i = 0; i < ct_program_size(p); i++) {
    if (i > 0) strncat(buf, " ", cap - strlen(buf) - 1);
    strncat(buf, ct_op_type(ct_program_op(p, i)), cap - strlen(buf) - 1);
  }
  return buf;
}

static void append(ct_program *p, ct_op *op) { ck_assert_int_eq(ct_program_append(p, op), CT_OK); }

/* x -relu-> a -tanh-> feat -scale 2-> head;  x -sigmoid-> side;  feat + side -> both */
static ct_program *branches(void) {
  ct_program *p = ct_program_new();
  append(p, op_x("relu", "x", "a"));
  append(p, op_x("sigmoid", "x", "side"));
  append(p, op_x("tanh", "a", "feat"));
  ct_op *sc = op_x("scale", "feat", "head");
  ck_assert_int_eq(ct_op_set_attr_float(sc, "scale", 2.0), CT_OK);
  append(p, sc);
  append(p, op_xy("elementwise_add", "feat", "side", "both"));
  return p;
}

START_TEST(prune_keeps_the_ops_a_target_depends_on_in_order) {
  ct_program *p = branches();
  char buf[128];
  static const char *const feat[] = {"feat"};
  ck_assert_int_eq(ct_program_prune(p, feat, 1), CT_OK);
  ck_assert_str_eq(types(p, buf, sizeof buf), "relu tanh");
  ct_program_free(p);
  p = branches();
  static const char *const two[] = {"head", "side"};
  ck_assert_int_eq(ct_program_prune(p, two, 2), CT_OK);
  ck_assert_str_eq(types(p, buf, sizeof buf), "relu sigmoid tanh scale");
  ct_program_free(p);
}
END_TEST

START_TEST(a_pruned_program_computes_its_targets_as_before) {
  ct_scope *s = ct_scope_new();
  static const float x[4] = {-1.0f, 0.0f, 0.5f, 2.0f};
  put(s, "x", CT_FLOAT32, CT_DIMS(4), x);
  ct_program *p = branches();
  static const char *const head[] = {"head"};
  ck_assert_int_eq(ct_program_prune(p, head, 1), CT_OK);
  ck_assert_uint_eq(ct_program_size(p), 3);
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  const float *h = var_f32(s, "head");
  for (int i = 0; i < 4; i++) ck_assert_float_eq(h[i], 2.0f * tanhf(x[i] > 0 ? x[i] : 0.0f));
  ck_assert_ptr_null(ct_scope_find_var(s, "side")); /* the dropped branch made nothing */
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

START_TEST(prune_drops_the_backward_and_optimizer_ops_of_a_training_step) {
  ct_scope *s = ct_scope_new();
  static const float x[2 * 3] = {1, 2, 3, 4, 5, 6}, w[3] = {0.5f, -1.0f, 0.25f}, lr = 0.1f;
  put(s, "x", CT_FLOAT32, CT_DIMS(2, 3), x);
  put(s, "w", CT_FLOAT32, CT_DIMS(3, 1), w);
  put(s, "lr", CT_FLOAT32, CT_DIMS(1), &lr);
  ct_program *p = ct_program_new();
  append(p, op_xy("matmul", "x", "w", "y"));
  append(p, op_x("mean", "y", "loss"));
  static const char *const params[] = {"w"};
  ck_assert_int_eq(ct_program_append_backward(p, "loss", params, 1), CT_OK);
  ct_op *sgd = new_op("sgd");
  ck_assert_int_eq(ct_op_set_input(sgd, "Param", "w"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(sgd, "Grad", "w@GRAD"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(sgd, "LearningRate", "lr"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(sgd, "ParamOut", "w"), CT_OK);
  append(p, sgd);
  ck_assert_uint_gt(ct_program_size(p), 3);
  static const char *const loss[] = {"loss"};
  ck_assert_int_eq(ct_program_prune(p, loss, 1), CT_OK);
  char buf[128];
  ck_assert_str_eq(types(p, buf, sizeof buf), "matmul mean");
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ck_assert_float_eq(var_f32(s, "loss")[0], -1.125f); /* the rows' -0.75 and -1.5 */
  ck_assert_float_eq(var_f32(s, "w")[1], -1.0f);      /* no update ran */
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

START_TEST(an_op_whose_nested_program_reads_a_value_keeps_its_writer) {
  static const ct_attr_def attrs[] = {{"body", {.type = CT_ATTR_PROGRAM}, true}};
  static const ct_slot_def in[] = {{"X", 0}};
  static const ct_slot_def out[] = {{"Out", 0}};
  static const ct_op_def def = {.type = "test_prune_holder", .inputs = in, .n_inputs = 1,
                                .outputs = out, .n_outputs = 1, .attrs = attrs, .n_attrs = 1};
  ck_assert_int_eq(ct_op_register(&def), CT_OK);
  ct_program *p = ct_program_new();
  append(p, op_x("relu", "w", "w.pos"));  /* read only inside the body */
  append(p, op_x("tanh", "w", "unused"));
  ct_program *body = ct_program_new();
  append(body, op_xy("elementwise_mul", "step.x", "w.pos", "step.y"));
  ct_op *h = op_x("test_prune_holder", "x", "out");
  ck_assert_int_eq(ct_op_set_attr_program(h, "body", body), CT_OK);
  append(p, h);
  static const char *const out_[] = {"out"};
  ck_assert_int_eq(ct_program_prune(p, out_, 1), CT_OK);
  char buf[128];
  ck_assert_str_eq(types(p, buf, sizeof buf), "relu test_prune_holder");
  ck_assert_uint_eq(ct_program_size(body), 1); /* the nested program is left as it was */
  ct_program_free(p);
}
END_TEST

START_TEST(prune_refuses_a_target_nothing_writes_and_leaves_the_program) {
  ct_program *p = branches();
  static const char *const bad[] = {"feat", "faet"};
  ck_assert_int_eq(ct_program_prune(p, bad, 2), CT_ERR_NOT_FOUND);
  HAS(ct_last_error(), "no op of the program writes target 'faet'");
  ck_assert_uint_eq(ct_program_size(p), 5);
  static const char *const input[] = {"x"}; /* read, never written */
  ck_assert_int_eq(ct_program_prune(p, input, 1), CT_ERR_NOT_FOUND);
  ck_assert_uint_eq(ct_program_size(p), 5);
  ct_program_free(p);
}
END_TEST

START_TEST(prune_argument_errors) {
  ct_program *p = branches();
  static const char *const feat[] = {"feat"}, *const empty[] = {""}, *const null[] = {NULL};
  ck_assert_int_eq(ct_program_prune(NULL, feat, 1), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_program_prune(p, NULL, 1), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_program_prune(p, feat, 0), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_program_prune(p, empty, 1), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "target #0 is NULL or empty");
  ck_assert_int_eq(ct_program_prune(p, null, 1), CT_ERR_INVALID_ARGUMENT);
  ck_assert_uint_eq(ct_program_size(p), 5);
  ct_program_free(p);
}
END_TEST

static Suite *prune_suite(void) {
  Suite *s = suite_create("op_prune");
  CT_ADD_TEST(s, prune_keeps_the_ops_a_target_depends_on_in_order);
  CT_ADD_TEST(s, a_pruned_program_computes_its_targets_as_before);
  CT_ADD_TEST(s, prune_drops_the_backward_and_optimizer_ops_of_a_training_step);
  CT_ADD_TEST(s, an_op_whose_nested_program_reads_a_value_keeps_its_writer);
  CT_ADD_TEST(s, prune_refuses_a_target_nothing_writes_and_leaves_the_program);
  CT_ADD_TEST(s, prune_argument_errors);
  return s;
}

CT_TEST_MAIN(prune_suite)
