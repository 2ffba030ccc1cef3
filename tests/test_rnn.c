/* SPDX-License-Identifier: Apache-2.0 */
/* The RNN suite, step-scope lists: the kids of a scope that hold the steps of a recurrent op.
 * Every teardown order frees each step scope exactly once; run under AddressSanitizer to prove
 * it. The recurrent op itself is tested in test_rnn_op.c. */
#include <stdio.h>
#include <string.h>

#include <corten/corten.h>

#include "harness.h"

/* The step-scope list in variable name of s, made there when the variable is new. */
static ct_scope_list *list_of(ct_scope *s, const char *name) {
  ct_scope_list *l = ct_var_get_mutable(ct_scope_var(s, name), &ct_scope_list_type);
  ck_assert_ptr_nonnull(l);
  return l;
}

/* ---- Step-scope lists ------------------------------------------------------------------------ */

START_TEST(list_resize_makes_kids) {
  ct_scope *root = ct_scope_new();
  ct_scope_list *l = list_of(root, "steps");
  ck_assert_uint_eq(ct_scope_list_size(l), 0);
  ck_assert_ptr_null(ct_scope_list_parent(l));
  ck_assert_int_eq(ct_scope_list_resize(l, root, 3), CT_OK);
  ck_assert_uint_eq(ct_scope_list_size(l), 3);
  ck_assert_ptr_eq(ct_scope_list_parent(l), root);
  ck_assert_uint_eq(ct_scope_kid_count(root), 3);
  for (size_t i = 0; i < 3; i++) {
    ck_assert_ptr_nonnull(ct_scope_list_get(l, i));
    ck_assert(ct_scope_has_kid(root, ct_scope_list_get(l, i)));
  }
  ck_assert_ptr_null(ct_scope_list_get(l, 3));
  ck_assert_ptr_null(ct_scope_list_get(NULL, 0));
  ck_assert_uint_eq(ct_scope_list_size(NULL), 0);
  ct_scope_free(root);
}
END_TEST

START_TEST(list_resize_keeps_and_trims) {
  ct_scope *root = ct_scope_new();
  ct_scope_list *l = list_of(root, "steps");
  ck_assert_int_eq(ct_scope_list_resize(l, root, 4), CT_OK);
  ct_scope *s0 = ct_scope_list_get(l, 0), *s1 = ct_scope_list_get(l, 1);
  ck_assert_ptr_nonnull(ct_scope_var(s1, "h"));
  ck_assert_int_eq(ct_scope_list_resize(l, root, 2), CT_OK);
  ck_assert_uint_eq(ct_scope_list_size(l), 2);
  ck_assert_uint_eq(ct_scope_kid_count(root), 2);
  ck_assert_ptr_eq(ct_scope_list_get(l, 0), s0);
  ck_assert_ptr_eq(ct_scope_list_get(l, 1), s1);
  ck_assert_ptr_nonnull(ct_scope_find_local_var(s1, "h")); /* kept with its variables */
  ck_assert_int_eq(ct_scope_list_resize(l, root, 5), CT_OK);
  ck_assert_uint_eq(ct_scope_kid_count(root), 5);
  ck_assert_ptr_eq(ct_scope_list_get(l, 1), s1);
  ck_assert_int_eq(ct_scope_list_resize(l, root, 0), CT_OK);
  ck_assert_uint_eq(ct_scope_list_size(l), 0);
  ck_assert_uint_eq(ct_scope_kid_count(root), 0);
  ct_scope_free(root);
}
END_TEST

START_TEST(list_resize_errors) {
  ct_scope *root = ct_scope_new();
  ct_scope_list *l = list_of(root, "steps");
  ck_assert_int_eq(ct_scope_list_resize(NULL, root, 1), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_scope_list_resize(l, NULL, 1), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_scope_list_resize(l, root, 2), CT_OK);
  ct_scope *below = ct_scope_new_kid(ct_scope_list_get(l, 1));
  ck_assert_int_eq(ct_scope_list_resize(l, ct_scope_list_get(l, 0), 2), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "own step scopes");
  ck_assert_int_eq(ct_scope_list_resize(l, below, 2), CT_ERR_INVALID_ARGUMENT);
  ck_assert_uint_eq(ct_scope_list_size(l), 2); /* unchanged */
  ct_scope_free(root);
}
END_TEST

START_TEST(list_new_parent_frees_old) {
  ct_scope *root = ct_scope_new();
  ct_scope *a = ct_scope_new_kid(root), *b = ct_scope_new_kid(root);
  ct_scope_list *l = list_of(root, "steps");
  ck_assert_int_eq(ct_scope_list_resize(l, a, 3), CT_OK);
  ck_assert_int_eq(ct_scope_list_resize(l, b, 2), CT_OK);
  ck_assert_uint_eq(ct_scope_kid_count(a), 0);
  ck_assert_uint_eq(ct_scope_kid_count(b), 2);
  ck_assert_ptr_eq(ct_scope_list_parent(l), b);
  ct_scope_free(root);
}
END_TEST

/* Teardown orders: each ends with everything freed; ASan reports any double free or leak. */

START_TEST(order_clear_list_then_parent) {
  ct_scope *root = ct_scope_new();
  ct_var *v = ct_scope_var(root, "steps");
  ct_scope_list *l = list_of(root, "steps");
  ck_assert_int_eq(ct_scope_list_resize(l, root, 3), CT_OK);
  ct_var_clear(v);
  ck_assert_uint_eq(ct_scope_kid_count(root), 0);
  ct_scope_free(root);
}
END_TEST

START_TEST(order_list_clear_then_rerun) {
  ct_scope *root = ct_scope_new();
  ct_scope_list *l = list_of(root, "steps");
  ck_assert_int_eq(ct_scope_list_resize(l, root, 3), CT_OK);
  ct_scope_list_clear(l);
  ct_scope_list_clear(l);
  ck_assert_uint_eq(ct_scope_list_size(l), 0);
  ck_assert_uint_eq(ct_scope_kid_count(root), 0);
  ck_assert_int_eq(ct_scope_list_resize(l, root, 2), CT_OK);
  ck_assert_uint_eq(ct_scope_kid_count(root), 2);
  ct_scope_list_clear(NULL);
  ct_scope_free(root);
}
END_TEST

START_TEST(order_drop_kids_then_clear) {
  ct_scope *root = ct_scope_new();
  ct_var *v = ct_scope_var(root, "steps");
  ct_scope_list *l = list_of(root, "steps");
  ck_assert_int_eq(ct_scope_list_resize(l, root, 3), CT_OK);
  ct_scope_drop_kids(root);
  ck_assert_uint_eq(ct_scope_list_size(l), 0);
  ck_assert_ptr_null(ct_scope_list_get(l, 0));
  ck_assert_ptr_null(ct_scope_list_parent(l));
  ct_var_clear(v);
  ct_scope_free(root);
}
END_TEST

START_TEST(order_drop_kids_then_rerun) {
  ct_scope *root = ct_scope_new();
  ct_scope_list *l = list_of(root, "steps");
  ck_assert_int_eq(ct_scope_list_resize(l, root, 3), CT_OK);
  ct_scope_drop_kids(root);
  ck_assert_int_eq(ct_scope_list_resize(l, root, 3), CT_OK);
  ck_assert_uint_eq(ct_scope_kid_count(root), 3);
  ct_scope_free(root);
}
END_TEST

START_TEST(order_free_step_scopes_one_by_one) {
  ct_scope *root = ct_scope_new();
  ct_scope_list *l = list_of(root, "steps");
  ck_assert_int_eq(ct_scope_list_resize(l, root, 3), CT_OK);
  ct_scope *s1 = ct_scope_list_get(l, 1), *s2 = ct_scope_list_get(l, 2);
  ct_scope_free(s1); /* a middle slot empties, the size stays */
  ck_assert_uint_eq(ct_scope_list_size(l), 3);
  ck_assert_ptr_null(ct_scope_list_get(l, 1));
  ck_assert_uint_eq(ct_scope_kid_count(root), 2);
  ct_scope_free(s2); /* trailing empty slots go */
  ck_assert_uint_eq(ct_scope_list_size(l), 1);
  ck_assert_int_eq(ct_scope_list_resize(l, root, 3), CT_OK); /* refills the gaps */
  ck_assert_uint_eq(ct_scope_kid_count(root), 3);
  ct_scope_free(root);
}
END_TEST

START_TEST(order_free_parent_holding_list) {
  ct_scope *root = ct_scope_new();
  ct_scope *parent = ct_scope_new_kid(root);
  ct_scope_list *l = list_of(parent, "steps");
  ck_assert_int_eq(ct_scope_list_resize(l, parent, 4), CT_OK);
  ct_scope_free(parent); /* kids go before the variables: the list finds nothing to free */
  ck_assert_uint_eq(ct_scope_kid_count(root), 0);
  ct_scope_free(root);
}
END_TEST

START_TEST(order_free_parent_then_list_in_ancestor) {
  ct_scope *root = ct_scope_new();
  ct_scope *parent = ct_scope_new_kid(root);
  ct_var *v = ct_scope_var(root, "steps");
  ct_scope_list *l = list_of(root, "steps");
  ck_assert_int_eq(ct_scope_list_resize(l, parent, 4), CT_OK);
  ct_scope_free(parent);
  ck_assert_uint_eq(ct_scope_list_size(l), 0);
  ct_var_clear(v);
  ct_scope_free(root);
}
END_TEST

START_TEST(order_free_root_list_in_ancestor) {
  ct_scope *root = ct_scope_new();
  ct_scope *parent = ct_scope_new_kid(root);
  ct_scope_list *l = list_of(root, "steps");
  ck_assert_int_eq(ct_scope_list_resize(l, parent, 4), CT_OK);
  ct_scope_free(root);
}
END_TEST

START_TEST(order_list_in_sibling_scope) {
  /* The list lives in a sibling of the parent: the root's teardown frees the sibling (and so
   * the list) and the parent in either order. */
  for (int first = 0; first < 2; first++) {
    ct_scope *root = ct_scope_new();
    ct_scope *a = ct_scope_new_kid(root), *b = ct_scope_new_kid(root);
    ct_scope *home = first ? a : b, *parent = first ? b : a;
    ct_scope_list *l = list_of(home, "steps");
    ck_assert_int_eq(ct_scope_list_resize(l, parent, 3), CT_OK);
    ct_scope_free(root);
  }
}
END_TEST

START_TEST(order_standalone_var) {
  ct_scope *root = ct_scope_new();
  ct_var *v = ct_var_new();
  ct_scope_list *l = ct_var_get_mutable(v, &ct_scope_list_type);
  ck_assert_ptr_nonnull(l);
  ck_assert_int_eq(ct_scope_list_resize(l, root, 3), CT_OK);
  ct_scope_free(root); /* parent first */
  ck_assert_uint_eq(ct_scope_list_size(l), 0);
  ct_var_free(v);

  root = ct_scope_new();
  v = ct_var_new();
  l = ct_var_get_mutable(v, &ct_scope_list_type);
  ck_assert_int_eq(ct_scope_list_resize(l, root, 3), CT_OK);
  ct_var_free(v); /* list first */
  ck_assert_uint_eq(ct_scope_kid_count(root), 0);
  ct_scope_free(root);
}
END_TEST

START_TEST(order_erase_var_then_drop_kids) {
  ct_scope *root = ct_scope_new();
  ct_scope_list *l = list_of(root, "steps");
  ck_assert_int_eq(ct_scope_list_resize(l, root, 3), CT_OK);
  ct_scope *keep = ct_scope_new_kid(root); /* a kid that is no step scope stays */
  const char *names[] = {"steps"};
  ck_assert_uint_eq(ct_scope_erase_vars(root, names, 1), 1);
  ck_assert_uint_eq(ct_scope_kid_count(root), 1);
  ck_assert(ct_scope_has_kid(root, keep));
  ct_scope_drop_kids(root);
  ct_scope_free(root);
}
END_TEST

START_TEST(order_two_lists_one_parent) {
  ct_scope *root = ct_scope_new();
  ct_scope_list *a = list_of(root, "a"), *b = list_of(root, "b");
  ck_assert_int_eq(ct_scope_list_resize(a, root, 2), CT_OK);
  ck_assert_int_eq(ct_scope_list_resize(b, root, 3), CT_OK);
  ck_assert_uint_eq(ct_scope_kid_count(root), 5);
  const char *names[] = {"a"};
  ck_assert_uint_eq(ct_scope_erase_vars(root, names, 1), 1);
  ck_assert_uint_eq(ct_scope_kid_count(root), 3);
  ck_assert_uint_eq(ct_scope_list_size(b), 3);
  ct_scope_free(root);
}
END_TEST

static Suite *rnn_suite(void) {
  Suite *s = suite_create("rnn");
  CT_ADD_TEST(s, list_resize_makes_kids);
  CT_ADD_TEST(s, list_resize_keeps_and_trims);
  CT_ADD_TEST(s, list_resize_errors);
  CT_ADD_TEST(s, list_new_parent_frees_old);
  CT_ADD_TEST(s, order_clear_list_then_parent);
  CT_ADD_TEST(s, order_list_clear_then_rerun);
  CT_ADD_TEST(s, order_drop_kids_then_clear);
  CT_ADD_TEST(s, order_drop_kids_then_rerun);
  CT_ADD_TEST(s, order_free_step_scopes_one_by_one);
  CT_ADD_TEST(s, order_free_parent_holding_list);
  CT_ADD_TEST(s, order_free_parent_then_list_in_ancestor);
  CT_ADD_TEST(s, order_free_root_list_in_ancestor);
  CT_ADD_TEST(s, order_list_in_sibling_scope);
  CT_ADD_TEST(s, order_standalone_var);
  CT_ADD_TEST(s, order_erase_var_then_drop_kids);
  CT_ADD_TEST(s, order_two_lists_one_parent);
  return s;
}

CT_TEST_MAIN(rnn_suite)
