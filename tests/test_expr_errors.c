/* SPDX-License-Identifier: Apache-2.0 */
/* Lazy expressions (corten/expr.h): ownership (a failing constructor frees its operands, a NULL
 * operand propagates and the first error stays; the ASan build checks that nothing leaks with
 * any node failing), and each error of ct_expr_assign, with the dims and dtypes it names and dst
 * left as it was. */
#include "expr_util.h"

/* ---- Ownership ------------------------------------------------------------------------------- */

/* sigmoid(a * b + exp(c)) - max(d, 2), built one node per statement (so the numbering does not
 * hang on the order C evaluates arguments in), with node `fail` built wrongly: a NULL tensor for
 * a leaf, a kind of the other arity for an inner node, a NULL expression for the scalar. Every
 * constructor after it gets a NULL operand. Nodes 0, 1, 3, 7 are leaves, 4 and 6 unary, 2, 5, 9
 * and 10 binary, 8 the scalar. */
static ct_expr *build(const ct_tensor *t, int fail) {
  int k = 0;
#define L() (k++ == fail ? ct_expr_tensor(NULL) : ct_expr_tensor(t))
#define U(op, x) ct_expr_unary(k++ == fail ? CT_EXPR_ADD : (op), (x))
#define B(op, x, y) ct_expr_binary(k++ == fail ? CT_EXPR_EXP : (op), (x), (y))
  ct_expr *l0 = L();
  ct_expr *l1 = L();
  ct_expr *mul = B(CT_EXPR_MUL, l0, l1);
  ct_expr *l3 = L();
  ct_expr *ex = U(CT_EXPR_EXP, l3);
  ct_expr *add = B(CT_EXPR_ADD, mul, ex);
  ct_expr *sg = U(CT_EXPR_SIGMOID, add);
  ct_expr *l7 = L();
  ct_expr *two = k++ == fail ? NULL : ct_expr_scalar(2);
  ct_expr *mx = B(CT_EXPR_MAX, l7, two);
  ct_expr *e = B(CT_EXPR_SUB, sg, mx);
#undef L
#undef U
#undef B
  ck_assert_int_eq(k, 11);
  return e;
}

START_TEST(a_failing_node_anywhere_frees_the_whole_tree_and_keeps_the_first_error) {
  ct_tensor *t = tensor_k(CT_FLOAT32, CT_DIMS(3), 1);
  ct_expr *whole = build(t, -1);
  ck_assert_ptr_nonnull(whole);
  ct_expr_free(whole);
  for (int fail = 0; fail < 11; fail++) {
    ct_clear_error();
    ck_assert_msg(build(t, fail) == NULL, "node %d failed but the tree was built", fail);
    /* The scalar's slot gets a NULL expression without an error of its own. */
    ck_assert_int_eq(ct_last_status(), fail == 8 ? CT_OK : CT_ERR_INVALID_ARGUMENT);
    if (fail == 8) continue;
    assert_message_has(fail == 0 || fail == 1 || fail == 3 || fail == 7 ? "ct_expr_tensor"
                       : fail == 4 || fail == 6                       ? "not a unary kind"
                                                                      : "not a binary kind",
                       NULL);
  }
  ct_tensor_free(t);
}
END_TEST

START_TEST(constructors_free_their_operands_on_a_wrong_kind) {
  ct_tensor *t = tensor_k(CT_FLOAT32, CT_DIMS(3), 1);
  ck_assert_ptr_null(ct_expr_unary(CT_EXPR_MUL, ct_expr_tensor(t)));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(ct_expr_binary((ct_expr_op)0, ct_expr_tensor(t), ct_expr_scalar(1)));
  ck_assert_ptr_null(ct_expr_binary((ct_expr_op)99, ct_expr_tensor(t), ct_expr_scalar(1)));
  ck_assert_ptr_null(ct_expr_dot(NULL, false, ct_expr_tensor(t), false));
  ck_assert_ptr_null(ct_expr_dot(ct_expr_tensor(t), false, NULL, true));
  ct_expr_free(NULL);
  ct_tensor_free(t);
}
END_TEST

/* A chain far deeper than any recursion could take is freed; assigning it is refused. */
START_TEST(a_very_deep_tree_is_freed_and_refused) {
  ct_tensor *t = tensor_k(CT_FLOAT32, CT_DIMS(3), 1), *d = ct_tensor_new();
  ct_expr *e = ct_expr_tensor(t);
  for (int i = 0; i < 200000; i++) e = i % 2 ? UN(NEG, e) : BIN(ADD, ct_expr_scalar(1), e);
  ck_assert_ptr_nonnull(e);
  CT_ASSERT_FAILS(ct_expr_assign(d, CT_SAVETO, e), CT_ERR_OUT_OF_RANGE);
  assert_message_has("deeper than 1000", NULL);
  ck_assert(!ct_tensor_has_memory(d));
  ct_expr_free(e);
  ct_tensor_free(t);
  ct_tensor_free(d);
}
END_TEST

/* ---- Errors of ct_expr_assign ---------------------------------------------------------------- */

/* dst is unchanged after a failure: dims [2,2], float32, 1 2 3 4. */
static ct_tensor *dst_1234(void) {
  float v[4] = {1, 2, 3, 4};
  ct_tensor *d = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_set_value(d, v, CT_DIMS(2, 2), CT_FLOAT32, ct_cpu()), CT_OK);
  return d;
}

static void assert_1234(const ct_tensor *d) {
  ck_assert(ct_ddim_equal(ct_tensor_dims(d), CT_DIMS(2, 2)));
  ck_assert_int_eq(ct_tensor_dtype(d), CT_FLOAT32);
  const float *p = ct_tensor_data(d, CT_FLOAT32);
  ck_assert(p[0] == 1 && p[1] == 2 && p[2] == 3 && p[3] == 4);
}

/* Assigns e with mode into a dst_1234, expecting want and the strings after it in the message;
 * checks dst is unchanged and frees e. */
static void assign_fails(ct_assign mode, ct_expr *e, ct_status want, ...) {
  ct_tensor *d = dst_1234();
  CT_ASSERT_FAILS(ct_expr_assign(d, mode, e), want);
  va_list ap;
  va_start(ap, want);
  for (const char *s = va_arg(ap, const char *); s != NULL; s = va_arg(ap, const char *)) {
    assert_message_has(s, NULL);
  }
  va_end(ap);
  assert_1234(d);
  ct_tensor_free(d);
  ct_expr_free(e);
}

START_TEST(leaves_of_two_dtypes_are_a_type_mismatch_naming_both) {
  ct_tensor *a = tensor_k(CT_FLOAT32, CT_DIMS(3), 1), *b = tensor_k(CT_FLOAT64, CT_DIMS(3), 1);
  assign_fails(CT_SAVETO, BIN(ADD, LEAF(a), UN(EXP, LEAF(b))), CT_ERR_TYPE_MISMATCH, "float32",
               "float64", NULL);
  /* The modes that keep dst need its dtype. */
  ct_tensor *c = tensor_k(CT_FLOAT64, CT_DIMS(2, 2), 1);
  assign_fails(CT_PLUSTO, LEAF(c), CT_ERR_TYPE_MISMATCH, "dst holds float32", "float64", NULL);
  ct_tensor_free(a);
  ct_tensor_free(b);
  ct_tensor_free(c);
}
END_TEST

START_TEST(dims_that_do_not_broadcast_are_a_shape_error_naming_them) {
  ct_tensor *a = tensor_k(CT_FLOAT32, CT_DIMS(2, 3), 1), *b = tensor_k(CT_FLOAT32, CT_DIMS(4), 1);
  assign_fails(CT_SAVETO, BIN(MUL, ct_expr_scalar(2), BIN(SUB, LEAF(a), LEAF(b))), CT_ERR_SHAPE,
               "[2,3]", "[4]", "3 against 4", NULL);
  /* Modes other than SAVETO need dst of the result's dims. */
  assign_fails(CT_MULTO, LEAF(a), CT_ERR_SHAPE, "dst has dims [2,2]", "[2,3]", NULL);
  ct_tensor_free(a);
  ct_tensor_free(b);
}
END_TEST

START_TEST(a_dst_leaf_that_would_need_resizing_is_a_shape_error) {
  ct_tensor *d = dst_1234(), *a = tensor_k(CT_FLOAT32, CT_DIMS(3, 2, 2), 1);
  ct_expr *e = BIN(ADD, LEAF(d), LEAF(a));
  CT_ASSERT_FAILS(ct_expr_assign(d, CT_SAVETO, e), CT_ERR_SHAPE);
  assert_message_has("dst is also a leaf", "[3,2,2]", NULL);
  assert_1234(d);
  ct_expr_free(e);
  ct_tensor_free(a);
  ct_tensor_free(d);
}
END_TEST

START_TEST(a_leaf_viewing_dst_at_another_offset_is_refused) {
  ct_tensor *big = tensor_k(CT_FLOAT32, CT_DIMS(4, 2), 1), *d = ct_tensor_new();
  ct_tensor *v = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_slice(d, big, 0, 2), CT_OK);
  ck_assert_int_eq(ct_tensor_slice(v, big, 1, 3), CT_OK);
  ct_expr *e = BIN(ADD, LEAF(v), ct_expr_scalar(1));
  CT_ASSERT_FAILS(ct_expr_assign(d, CT_SAVETO, e), CT_ERR_INVALID_ARGUMENT);
  assert_message_has("another offset", NULL);
  /* Rows 2..3 do not overlap rows 0..1: fine. */
  ck_assert_int_eq(ct_tensor_slice(v, big, 2, 4), CT_OK);
  ck_assert_int_eq(ct_expr_assign(d, CT_SAVETO, e), CT_OK);
  ck_assert(((const float *)ct_tensor_data(d, CT_FLOAT32))[0] == (float)data_k(1, 4) + 1);
  ct_expr_free(e);
  ct_tensor_free(big);
  ct_tensor_free(d);
  ct_tensor_free(v);
}
END_TEST

/* dst has room for [2,1000] but dims [1000]; v shares dst (same first byte, same count), and
 * dst = v + b with b [2,1] resizes dst in place to [2,1000]: row 1 would read row 0's fresh
 * results through v. The alias check runs on dst's dims after the resize, so it is refused and
 * dst keeps its dims and values. */
START_TEST(a_view_of_dst_is_checked_against_dst_after_a_resize_in_place) {
  ct_tensor *d = tensor_k(CT_FLOAT32, CT_DIMS(2, 1000), 1), *v = ct_tensor_new();
  ct_tensor *b = tensor_k(CT_FLOAT32, CT_DIMS(2, 1), 2);
  ck_assert_int_eq(ct_tensor_resize(d, CT_DIMS(1000)), CT_OK);
  ck_assert_int_eq(ct_tensor_share(v, d), CT_OK);
  ct_expr *e = BIN(ADD, LEAF(v), LEAF(b));
  CT_ASSERT_FAILS(ct_expr_assign(d, CT_SAVETO, e), CT_ERR_INVALID_ARGUMENT);
  assert_message_has("views the memory that dst (dims [2,1000] after the assignment)",
                     "copy the leaf first", NULL);
  ck_assert(ct_ddim_equal(ct_tensor_dims(d), CT_DIMS(1000)));
  const float *p = ct_tensor_data(d, CT_FLOAT32);
  for (int64_t i = 0; i < 1000; i++) ck_assert(p[i] == (float)data_k(1, i));
  ct_expr_free(e);
  ct_tensor_free(b);
  ct_tensor_free(v);
  ct_tensor_free(d);
}
END_TEST

/* Two tensors wrapping one external buffer are one memory: a leaf wrapping it one element on
 * from dst is refused, like a view of dst's own block at another offset. */
START_TEST(a_leaf_wrapping_dst_s_external_buffer_at_another_offset_is_refused) {
  float buf[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  ct_tensor *d = ct_tensor_new(), *l = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_wrap(d, buf, CT_DIMS(8), CT_FLOAT32, ct_cpu(), NULL, NULL), CT_OK);
  ck_assert_int_eq(ct_tensor_wrap(l, buf + 1, CT_DIMS(8), CT_FLOAT32, ct_cpu(), NULL, NULL),
                   CT_OK);
  ct_expr *e = BIN(MUL, LEAF(l), ct_expr_scalar(2));
  CT_ASSERT_FAILS(ct_expr_assign(d, CT_SAVETO, e), CT_ERR_INVALID_ARGUMENT);
  assert_message_has("another offset", NULL);
  for (int i = 0; i < 9; i++) ck_assert(buf[i] == (float)i);
  ct_expr_free(e);
  ct_tensor_free(l);
  ct_tensor_free(d);
}
END_TEST

/* A compound mode keeps dst's dims: an expression whose dims would change them is a shape error
 * naming both, and dst is untouched. */
START_TEST(a_compound_mode_that_would_change_dst_s_dims_is_a_shape_error) {
  ct_tensor *a = tensor_k(CT_FLOAT32, CT_DIMS(3, 2, 2), 1);
  assign_fails(CT_PLUSTO, BIN(ADD, LEAF(a), ct_expr_scalar(1)), CT_ERR_SHAPE, "[2,2]",
               "[3,2,2]", "keeps dst's dims", NULL);
  ct_tensor_free(a);
}
END_TEST

START_TEST(leaves_without_memory_or_of_integer_dtypes_are_refused) {
  ct_tensor *none = ct_tensor_new(), *ints = ct_tensor_new();
  int32_t iv[4] = {1, 2, 3, 4};
  ck_assert_int_eq(ct_tensor_resize(none, CT_DIMS(5)), CT_OK);
  ck_assert_int_eq(ct_tensor_set_value(ints, iv, CT_DIMS(4), CT_INT32, ct_cpu()), CT_OK);
  assign_fails(CT_SAVETO, UN(ABS, LEAF(none)), CT_ERR_UNINITIALIZED, "[5]", "no memory", NULL);
  assign_fails(CT_SAVETO, UN(ABS, LEAF(ints)), CT_ERR_UNSUPPORTED, "int32", NULL);
  ct_tensor_free(none);
  ct_tensor_free(ints);
}
END_TEST

START_TEST(bad_arguments_are_refused) {
  ct_tensor *a = tensor_k(CT_FLOAT32, CT_DIMS(2, 2), 1);
  ct_expr *e = LEAF(a);
  CT_ASSERT_FAILS(ct_expr_assign(NULL, CT_SAVETO, e), CT_ERR_INVALID_ARGUMENT);
  assign_fails((ct_assign)5, LEAF(a), CT_ERR_INVALID_ARGUMENT, "mode 5", NULL);
  assign_fails((ct_assign)-1, LEAF(a), CT_ERR_INVALID_ARGUMENT, "mode -1", NULL);
  /* A NULL tree: the message repeats why building it failed. */
  ct_expr *bad = BIN(ADD, LEAF(a), ct_expr_tensor(NULL));
  ct_tensor *d = dst_1234();
  CT_ASSERT_FAILS(ct_expr_assign(d, CT_SAVETO, bad), CT_ERR_INVALID_ARGUMENT);
  ct_tensor_free(d);
  /* A tree of scalars into a dst without a dtype. */
  d = ct_tensor_new();
  ct_expr *s = ct_expr_scalar(1);
  CT_ASSERT_FAILS(ct_expr_assign(d, CT_SAVETO, s), CT_ERR_INVALID_ARGUMENT);
  assert_message_has("no tensor leaf", NULL);
  /* PLUSTO into a dst without memory. */
  CT_ASSERT_FAILS(ct_expr_assign(d, CT_PLUSTO, e), CT_ERR_UNINITIALIZED);
  ct_expr_free(s);
  ct_expr_free(e);
  ct_tensor_free(d);
  ct_tensor_free(a);
}
END_TEST

START_TEST(a_null_tree_repeats_the_first_error) {
  ct_tensor *d = dst_1234();
  ct_expr *bad = UN(EXP, BIN(ADD, ct_expr_tensor(NULL), ct_expr_scalar(1)));
  /* Not CT_ASSERT_FAILS, which clears the error the call is to repeat. */
  ck_assert_int_eq(ct_expr_assign(d, CT_SAVETO, bad), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  assert_message_has("expression is NULL", "ct_expr_tensor: the tensor is NULL", NULL);
  assert_1234(d);
  ct_tensor_free(d);
}
END_TEST

/* ---- The dot rule's errors ---------------------------------------------------------------- */

START_TEST(a_dot_outside_the_rule_is_unsupported) {
  ct_tensor *a = tensor_k(CT_FLOAT32, CT_DIMS(2, 2), 1);
#define DOT() ct_expr_dot(LEAF(a), false, LEAF(a), false)
  assign_fails(CT_SAVETO, BIN(ADD, DOT(), LEAF(a)), CT_ERR_UNSUPPORTED, "top", NULL);
  assign_fails(CT_SAVETO, UN(EXP, DOT()), CT_ERR_UNSUPPORTED, "top", NULL);
  assign_fails(CT_SAVETO, BIN(MUL, LEAF(a), DOT()), CT_ERR_UNSUPPORTED, "top", NULL);
  assign_fails(CT_MINUSTO, DOT(), CT_ERR_UNSUPPORTED, "CT_PLUSTO", NULL);
  assign_fails(CT_SAVETO, ct_expr_dot(UN(EXP, LEAF(a)), false, LEAF(a), false),
               CT_ERR_UNSUPPORTED, "not a tensor leaf", NULL);
#undef DOT
  ct_tensor_free(a);
}
END_TEST

START_TEST(a_dot_of_mismatched_dims_is_a_shape_error_naming_them) {
  ct_tensor *a = tensor_k(CT_FLOAT32, CT_DIMS(2, 3), 1),
            *b = tensor_k(CT_FLOAT32, CT_DIMS(2, 5), 1);
  ct_tensor *v = tensor_k(CT_FLOAT32, CT_DIMS(3), 1);
  assign_fails(CT_SAVETO, ct_expr_dot(LEAF(a), false, LEAF(b), false), CT_ERR_SHAPE, "[2,3]",
               "[2,5]", "3 against 2", NULL);
  assign_fails(CT_SAVETO, ct_expr_dot(LEAF(a), false, LEAF(v), false), CT_ERR_SHAPE, "[3]",
               "2-D", NULL);
  /* PLUSTO needs dst of [m, n]: a^T b is [3,5], dst is [2,2]. */
  assign_fails(CT_PLUSTO, ct_expr_dot(LEAF(a), true, LEAF(b), false), CT_ERR_SHAPE, "[3,5]",
               NULL);
  ct_tensor_free(a);
  ct_tensor_free(b);
  ct_tensor_free(v);
}
END_TEST

START_TEST(a_dot_into_its_own_operand_or_of_halves_is_refused) {
  ct_tensor *d = dst_1234(), *b = tensor_k(CT_FLOAT32, CT_DIMS(2, 2), 1);
  ct_expr *e = ct_expr_dot(LEAF(d), false, LEAF(b), false);
  CT_ASSERT_FAILS(ct_expr_assign(d, CT_PLUSTO, e), CT_ERR_INVALID_ARGUMENT);
  assert_message_has("operand of the dot", NULL);
  assert_1234(d);
  ct_expr_free(e);
  ct_tensor *h = tensor_k(CT_FLOAT16, CT_DIMS(2, 2), 1);
  assign_fails(CT_SAVETO, ct_expr_dot(LEAF(h), false, LEAF(h), false), CT_ERR_UNSUPPORTED,
               "float16", NULL);
  ct_tensor_free(h);
  ct_tensor_free(b);
  ct_tensor_free(d);
}
END_TEST

/* The contract's trees: a node has one parent, so one node as both operands, or a node already
 * below another, would be freed twice. Refused, and each node is freed once (ASan checks). */
START_TEST(a_shared_node_is_refused_and_freed_once) {
  ct_tensor *a = tensor_k(CT_FLOAT32, CT_DIMS(3), 1);
  ct_expr *x = LEAF(a);
  ct_clear_error();
  ck_assert_ptr_null(ct_expr_binary(CT_EXPR_MUL, x, x)); /* x freed once */
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  assert_message_has("only one parent", NULL);
  ct_expr *y = LEAF(a), *z = LEAF(a);
  ct_expr *sum = ct_expr_binary(CT_EXPR_ADD, y, z);
  ck_assert_ptr_nonnull(sum);
  ct_clear_error();
  ck_assert_ptr_null(ct_expr_binary(CT_EXPR_MUL, y, LEAF(a))); /* the new leaf freed, y kept */
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(ct_expr_unary(CT_EXPR_EXP, z));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ct_tensor *d = dst_1234();
  ck_assert_int_eq(ct_expr_assign(d, CT_SAVETO, sum), CT_OK); /* sum is whole */
  const float *v = ct_tensor_data(d, CT_FLOAT32);
  const float *av = ct_tensor_data(a, CT_FLOAT32);
  for (int i = 0; i < 3; i++) ck_assert(v[i] == av[i] + av[i]);
  ct_expr_free(sum);
  ct_tensor_free(d);
  ct_tensor_free(a);
}
END_TEST

/* dst written in place (every mode but CT_SAVETO) must hold memory for its dims: a resize after
 * its last mutable_data does not grow it. Refused before anything is written. */
START_TEST(an_in_place_dst_whose_memory_does_not_cover_its_dims_is_refused) {
  ct_tensor *d = tensor_k(CT_FLOAT32, CT_DIMS(4), 1);
  float before[4];
  memcpy(before, ct_tensor_data(d, CT_FLOAT32), sizeof before);
  ck_assert_int_eq(ct_tensor_resize(d, CT_DIMS(100000)), CT_OK);
  ct_tensor *big = tensor_k(CT_FLOAT32, CT_DIMS(100000), 2);
  ct_expr *e = LEAF(big);
  CT_ASSERT_FAILS(ct_expr_assign(d, CT_PLUSTO, e), CT_ERR_OUT_OF_RANGE);
  ct_expr_free(e);
  assert_message_has("ct_expr_assign: dst", "needs 400000 bytes", NULL);
  /* The dot rule writes through GEMM: the same check. */
  ck_assert_int_eq(ct_tensor_resize(d, CT_DIMS(300, 300)), CT_OK);
  ct_tensor *p = tensor_k(CT_FLOAT32, CT_DIMS(300, 300), 4);
  e = ct_expr_dot(LEAF(p), false, LEAF(p), false);
  CT_ASSERT_FAILS(ct_expr_assign(d, CT_PLUSTO, e), CT_ERR_OUT_OF_RANGE);
  ct_expr_free(e);
  ck_assert_int_eq(ct_tensor_resize(d, CT_DIMS(4)), CT_OK);
  ck_assert_mem_eq(ct_tensor_data(d, CT_FLOAT32), before, sizeof before);
  ct_tensor_free(p);
  ct_tensor_free(big);
  ct_tensor_free(d);
}
END_TEST

static Suite *expr_errors_suite(void) {
  Suite *s = suite_create("expr_errors");
  CT_ADD_TEST(s, a_failing_node_anywhere_frees_the_whole_tree_and_keeps_the_first_error);
  CT_ADD_TEST(s, constructors_free_their_operands_on_a_wrong_kind);
  CT_ADD_TEST(s, a_very_deep_tree_is_freed_and_refused);
  CT_ADD_TEST(s, leaves_of_two_dtypes_are_a_type_mismatch_naming_both);
  CT_ADD_TEST(s, dims_that_do_not_broadcast_are_a_shape_error_naming_them);
  CT_ADD_TEST(s, a_dst_leaf_that_would_need_resizing_is_a_shape_error);
  CT_ADD_TEST(s, a_leaf_viewing_dst_at_another_offset_is_refused);
  CT_ADD_TEST(s, a_view_of_dst_is_checked_against_dst_after_a_resize_in_place);
  CT_ADD_TEST(s, a_leaf_wrapping_dst_s_external_buffer_at_another_offset_is_refused);
  CT_ADD_TEST(s, a_compound_mode_that_would_change_dst_s_dims_is_a_shape_error);
  CT_ADD_TEST(s, leaves_without_memory_or_of_integer_dtypes_are_refused);
  CT_ADD_TEST(s, bad_arguments_are_refused);
  CT_ADD_TEST(s, a_null_tree_repeats_the_first_error);
  CT_ADD_TEST(s, a_dot_outside_the_rule_is_unsupported);
  CT_ADD_TEST(s, a_dot_of_mismatched_dims_is_a_shape_error_naming_them);
  CT_ADD_TEST(s, a_dot_into_its_own_operand_or_of_halves_is_refused);
  CT_ADD_TEST(s, a_shared_node_is_refused_and_freed_once);
  CT_ADD_TEST(s, an_in_place_dst_whose_memory_does_not_cover_its_dims_is_refused);
  return s;
}

CT_TEST_MAIN(expr_errors_suite)
