/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_scope_kids.c: the scope tree (kids made, dropped and freed in every order, each
 * value destroyed once) and the variables a scope owns. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <corten/corten.h>

#include "scope_util.h"

/* ---- Kids ------------------------------------------------------------------------------------ */

START_TEST(test_new_kid_links_parent_and_kid) {
  ct_scope *root = ct_scope_new();
  ct_scope *kid = ct_scope_new_kid(root);
  ct_scope *grandkid = ct_scope_new_kid(kid);
  ct_scope *other = ct_scope_new();
  ck_assert_ptr_nonnull(kid);
  ck_assert_ptr_nonnull(grandkid);
  ck_assert_ptr_null(ct_scope_parent(root));
  ck_assert_ptr_eq(ct_scope_parent(kid), root);
  ck_assert_ptr_eq(ct_scope_parent(grandkid), kid);
  ck_assert(ct_scope_has_kid(root, kid));
  ck_assert(ct_scope_has_kid(kid, grandkid));
  ck_assert(!ct_scope_has_kid(root, grandkid)); /* direct kids only */
  ck_assert(!ct_scope_has_kid(kid, root));
  ck_assert(!ct_scope_has_kid(root, other));
  ck_assert(!ct_scope_has_kid(root, root));
  ct_scope_free(other);
  ct_scope_free(root);
}
END_TEST

START_TEST(test_new_kid_null_parent_is_invalid) {
  CT_ASSERT_NULL_FAILS(ct_scope_new_kid(NULL), CT_ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_kid_queries_on_null) {
  ct_scope *s = ct_scope_new();
  ck_assert_ptr_null(ct_scope_parent(NULL));
  ck_assert(!ct_scope_has_kid(NULL, s));
  ck_assert(!ct_scope_has_kid(s, NULL));
  ct_scope_free(s);
}
END_TEST

START_TEST(test_many_kids) {
  ct_scope *root = ct_scope_new();
  ct_scope *kids[100];
  int i;
  reset_counters();
  for (i = 0; i < 100; i++) {
    kids[i] = ct_scope_new_kid(root);
    ck_assert_ptr_nonnull(kids[i]);
    put_counted(kids[i], "x", i);
  }
  for (i = 0; i < 100; i++) {
    ck_assert(ct_scope_has_kid(root, kids[i]));
    ck_assert_int_eq(counted_value(ct_scope_find_var(kids[i], "x")), i);
  }
  ct_scope_free(root);
  ck_assert_int_eq(atomic_load(&counted_destroys), 100);
}
END_TEST

START_TEST(test_drop_kids_frees_kids_and_keeps_parent_vars) {
  ct_scope *root = ct_scope_new();
  ct_scope *k1 = ct_scope_new_kid(root);
  ct_scope *k2 = ct_scope_new_kid(root);
  ct_scope *g = ct_scope_new_kid(k1);
  ct_var *ra;
  reset_counters();
  ra = put_counted(root, "a", 10);
  put_counted(k1, "b", 1);
  put_counted(k1, "a", 2);
  put_counted(k2, "c", 3);
  put_counted(g, "d", 4);
  ct_scope_drop_kids(root);
  ck_assert_int_eq(atomic_load(&counted_destroys), 4);
  ck_assert_int_eq(atomic_load(&counted_double_destroys), 0);
  ck_assert_ptr_eq(ct_scope_find_var(root, "a"), ra);
  ck_assert_int_eq(counted_value(ra), 10);
  ck_assert_uint_eq(ct_scope_var_count(root), 1);
  /* the parent still works and can grow new kids */
  k1 = ct_scope_new_kid(root);
  ck_assert_ptr_nonnull(k1);
  ck_assert(ct_scope_has_kid(root, k1));
  ck_assert_ptr_eq(ct_scope_find_var(k1, "a"), ra);
  ct_scope_free(root);
  ck_assert_int_eq(atomic_load(&counted_destroys), 5);
  ck_assert_int_eq(atomic_load(&counted_double_destroys), 0);
}
END_TEST

START_TEST(test_drop_kids_null_and_childless_are_noops) {
  ct_scope *s = ct_scope_new();
  reset_counters();
  put_counted(s, "a", 1);
  ct_scope_drop_kids(NULL);
  ct_scope_drop_kids(s);
  ck_assert_int_eq(atomic_load(&counted_destroys), 0);
  ck_assert_uint_eq(ct_scope_var_count(s), 1);
  ct_scope_free(s);
}
END_TEST

START_TEST(test_free_kid_unlinks_from_parent) {
  ct_scope *root = ct_scope_new();
  ct_scope *k1 = ct_scope_new_kid(root);
  ct_scope *k2 = ct_scope_new_kid(root);
  ct_var *ra;
  reset_counters();
  ra = put_counted(root, "a", 1);
  put_counted(k1, "b", 2);
  put_counted(ct_scope_new_kid(k1), "c", 3);
  put_counted(k2, "d", 4);
  ct_scope_free(k1);
  ck_assert_int_eq(atomic_load(&counted_destroys), 2);
  ck_assert(!ct_scope_has_kid(root, k1));
  ck_assert(ct_scope_has_kid(root, k2));
  ck_assert_ptr_eq(ct_scope_find_var(root, "a"), ra);
  ck_assert_int_eq(counted_value(ra), 1);
  ck_assert_ptr_nonnull(ct_scope_new_kid(root));
  ct_scope_free(root); /* must not free k1 again */
  ck_assert_int_eq(atomic_load(&counted_destroys), 4);
  ck_assert_int_eq(atomic_load(&counted_double_destroys), 0);
}
END_TEST

START_TEST(test_drop_kids_after_freeing_one_kid) {
  ct_scope *root = ct_scope_new();
  ct_scope *k1 = ct_scope_new_kid(root);
  ct_scope *k2 = ct_scope_new_kid(root);
  reset_counters();
  put_counted(k1, "a", 1);
  put_counted(k2, "a", 2);
  ct_scope_free(k2);
  ct_scope_drop_kids(root);
  ck_assert_int_eq(atomic_load(&counted_destroys), 2);
  ck_assert(!ct_scope_has_kid(root, k1));
  ct_scope_free(root);
  ck_assert_int_eq(atomic_load(&counted_destroys), 2);
}
END_TEST

START_TEST(test_free_tree_destroys_every_value_once) {
  ct_scope *root = ct_scope_new();
  char name[32];
  int i, j, k, n = 0;
  reset_counters();
  for (i = 0; i < 5; i++) {
    snprintf(name, sizeof name, "root.%d", i);
    put_counted(root, name, n++);
  }
  for (i = 0; i < 3; i++) {
    ct_scope *kid = ct_scope_new_kid(root);
    for (j = 0; j < 4; j++) {
      snprintf(name, sizeof name, "kid.%d", j);
      put_counted(kid, name, n++);
    }
    put_counted(kid, "root.0", n++); /* a shadow */
    for (j = 0; j < 2; j++) {
      ct_scope *grandkid = ct_scope_new_kid(kid);
      for (k = 0; k < 3; k++) {
        snprintf(name, sizeof name, "gk.%d", k);
        put_counted(grandkid, name, n++);
      }
      ct_scope_var(grandkid, "empty_one"); /* no value: nothing to destroy */
    }
  }
  ck_assert_int_eq(n, 5 + 3 * (4 + 1 + 2 * 3));
  ck_assert_int_eq(atomic_load(&counted_inits), n);
  ck_assert_int_eq(atomic_load(&counted_destroys), 0);
  ct_scope_free(root);
  ck_assert_int_eq(atomic_load(&counted_destroys), n);
  ck_assert_int_eq(atomic_load(&counted_double_destroys), 0);
}
END_TEST

START_TEST(test_scope_free_null_is_noop) {
  ct_scope_free(NULL);
  ck_assert_uint_eq(ct_scope_var_count(NULL), 0);
}
END_TEST

/* Scope teardown frees tensor memory held by its variables. */
START_TEST(test_free_releases_tensor_memory) {
  ct_memory_stats before, after;
  ct_scope *s = ct_scope_new();
  ct_tensor *t;
  before = cpu_stats();
  t = ct_var_tensor(ct_scope_var(s, "fc1.w"));
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(16, 16)), CT_OK);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()));
  ct_scope_free(s);
  after = cpu_stats();
  ck_assert_uint_eq(after.allocated, before.allocated);
  ck_assert_uint_eq(after.frees, before.frees + 1);
}
END_TEST

/* ---- Variables owned by a scope -------------------------------------------------------------- */

START_TEST(test_var_free_on_scope_var_is_refused) {
  ct_scope *s = ct_scope_new();
  ct_var *v;
  reset_counters();
  v = put_counted(s, "owned", 8);
  ct_clear_error();
  ct_var_free(v);
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(atomic_load(&counted_destroys), 0);
  ck_assert_ptr_eq(ct_scope_find_var(s, "owned"), v);
  ck_assert_int_eq(counted_value(v), 8);
  ck_assert_str_eq(ct_var_name(v), "owned");
  ck_assert_uint_eq(ct_scope_var_count(s), 1);
  ct_scope_free(s);
  ck_assert_int_eq(atomic_load(&counted_destroys), 1);
}
END_TEST

/* Clearing a scope's variable empties it but keeps it in the scope. */
START_TEST(test_var_clear_on_scope_var_keeps_variable) {
  ct_scope *s = ct_scope_new();
  ct_var *v;
  reset_counters();
  v = put_counted(s, "w", 3);
  ct_var_clear(v);
  ck_assert_int_eq(atomic_load(&counted_destroys), 1);
  ck_assert_ptr_eq(ct_scope_find_var(s, "w"), v);
  ck_assert_ptr_null(ct_var_type(v));
  ct_scope_free(s);
  ck_assert_int_eq(atomic_load(&counted_destroys), 1);
}
END_TEST

START_TEST(test_mismatch_message_names_variable_and_types) {
  ct_scope *s = ct_scope_new();
  ct_var *v = ct_scope_var(s, "fc1.w");
  ck_assert_ptr_nonnull(ct_var_tensor(v));
  CT_ASSERT_NULL_FAILS(ct_var_get(v, &ct_int64_type), CT_ERR_TYPE_MISMATCH);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "fc1.w"));
  ck_assert_ptr_nonnull(strstr(ct_last_error(), ct_tensor_type.name));
  ck_assert_ptr_nonnull(strstr(ct_last_error(), ct_int64_type.name));
  ct_scope_free(s);
}
END_TEST

START_TEST(test_empty_scope_var_message_names_variable) {
  ct_scope *s = ct_scope_new();
  ct_var *v = ct_scope_var(s, "conv1.b");
  CT_ASSERT_NULL_FAILS(ct_var_get(v, &ct_int64_type), CT_ERR_UNINITIALIZED);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "conv1.b"));
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("scope_kids");
  CT_ADD_TEST(s, test_new_kid_links_parent_and_kid);
  CT_ADD_TEST(s, test_new_kid_null_parent_is_invalid);
  CT_ADD_TEST(s, test_kid_queries_on_null);
  CT_ADD_TEST(s, test_many_kids);
  CT_ADD_TEST(s, test_drop_kids_frees_kids_and_keeps_parent_vars);
  CT_ADD_TEST(s, test_drop_kids_null_and_childless_are_noops);
  CT_ADD_TEST(s, test_free_kid_unlinks_from_parent);
  CT_ADD_TEST(s, test_drop_kids_after_freeing_one_kid);
  CT_ADD_TEST(s, test_free_tree_destroys_every_value_once);
  CT_ADD_TEST(s, test_scope_free_null_is_noop);
  CT_ADD_TEST(s, test_free_releases_tensor_memory);
  CT_ADD_TEST(s, test_var_free_on_scope_var_is_refused);
  CT_ADD_TEST(s, test_var_clear_on_scope_var_keeps_variable);
  CT_ADD_TEST(s, test_mismatch_message_names_variable_and_types);
  CT_ADD_TEST(s, test_empty_scope_var_message_names_variable);
  return s;
}

CT_TEST_MAIN(make_suite)
