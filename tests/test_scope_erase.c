/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_scope_erase.c: erasing and renaming the variables of a scope. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <corten/corten.h>

#include "scope_util.h"

/* ---- Erasing --------------------------------------------------------------------------------- */

START_TEST(test_erase_vars_returns_count_and_skips_missing) {
  ct_scope *s = ct_scope_new();
  const char *names[] = {"a", "missing", NULL, "c", "", "also_missing"};
  ct_scope_var(s, "a");
  ct_scope_var(s, "b");
  ct_scope_var(s, "c");
  ck_assert_uint_eq(ct_scope_erase_vars(s, names, 6), 2);
  ck_assert_uint_eq(ct_scope_var_count(s), 1);
  ck_assert_ptr_nonnull(ct_scope_find_local_var(s, "b"));
  ct_scope_free(s);
}
END_TEST

START_TEST(test_erase_vars_destroys_each_value_once) {
  ct_scope *s = ct_scope_new();
  const char *names[] = {"a", "b"};
  reset_counters();
  put_counted(s, "a", 1);
  put_counted(s, "b", 2);
  put_counted(s, "c", 3);
  ck_assert_uint_eq(ct_scope_erase_vars(s, names, 2), 2);
  ck_assert_int_eq(atomic_load(&counted_destroys), 2);
  ck_assert_uint_eq(ct_scope_erase_vars(s, names, 2), 0); /* already gone */
  ck_assert_int_eq(atomic_load(&counted_destroys), 2);
  ct_scope_free(s);
  ck_assert_int_eq(atomic_load(&counted_destroys), 3);
  ck_assert_int_eq(atomic_load(&counted_double_destroys), 0);
}
END_TEST

/* The same name twice in one call erases one variable. */
START_TEST(test_erase_vars_duplicate_name_counts_once) {
  ct_scope *s = ct_scope_new();
  const char *names[] = {"a", "a"};
  reset_counters();
  put_counted(s, "a", 1);
  ck_assert_uint_eq(ct_scope_erase_vars(s, names, 2), 1);
  ck_assert_int_eq(atomic_load(&counted_destroys), 1);
  ct_scope_free(s);
  ck_assert_int_eq(atomic_load(&counted_destroys), 1);
}
END_TEST

START_TEST(test_erased_name_is_not_found) {
  ct_scope *s = ct_scope_new();
  const char *names[] = {"gone"};
  ct_scope_var(s, "gone");
  ck_assert_uint_eq(ct_scope_erase_vars(s, names, 1), 1);
  CT_ASSERT_NULL_FAILS(ct_scope_find_var(s, "gone"), CT_ERR_NOT_FOUND);
  ck_assert_uint_eq(ct_scope_var_count(s), 0);
  ck_assert_uint_eq(ct_scope_local_var_names(s, NULL, 0), 0);
  ct_scope_free(s);
}
END_TEST

START_TEST(test_erased_name_recreated_is_empty) {
  ct_scope *s = ct_scope_new();
  const char *names[] = {"a"};
  ct_var *v;
  reset_counters();
  put_counted(s, "a", 5);
  ck_assert_uint_eq(ct_scope_erase_vars(s, names, 1), 1);
  v = ct_scope_var(s, "a");
  ck_assert_ptr_nonnull(v);
  ck_assert_ptr_null(ct_var_type(v));
  ct_scope_free(s);
  ck_assert_int_eq(atomic_load(&counted_destroys), 1);
}
END_TEST

/* Erasing from a kid leaves an ancestor's variable of that name alone. */
START_TEST(test_erase_vars_is_local_only) {
  ct_scope *root = ct_scope_new();
  ct_scope *kid = ct_scope_new_kid(root);
  const char *names[] = {"a"};
  ct_var *a = ct_scope_var(root, "a");
  ck_assert_uint_eq(ct_scope_erase_vars(kid, names, 1), 0);
  ck_assert_ptr_eq(ct_scope_find_var(kid, "a"), a);
  ck_assert_uint_eq(ct_scope_var_count(root), 1);
  ct_scope_free(root);
}
END_TEST

/* Erasing a kid's shadowing variable uncovers the parent's again. */
START_TEST(test_erase_shadow_uncovers_parent) {
  ct_scope *root = ct_scope_new();
  ct_scope *kid = ct_scope_new_kid(root);
  const char *names[] = {"a"};
  ct_var *pa = ct_scope_var(root, "a");
  ct_var *ka = ct_scope_var(kid, "a");
  ck_assert_ptr_eq(ct_scope_find_var(kid, "a"), ka);
  ck_assert_uint_eq(ct_scope_erase_vars(kid, names, 1), 1);
  ck_assert_ptr_eq(ct_scope_find_var(kid, "a"), pa);
  ct_scope_free(root);
}
END_TEST

START_TEST(test_erase_vars_null_args_are_invalid) {
  ct_scope *s = ct_scope_new();
  const char *names[] = {"a"};
  ct_scope_var(s, "a");
  ct_clear_error();
  ck_assert_uint_eq(ct_scope_erase_vars(NULL, names, 1), 0);
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ct_clear_error();
  ck_assert_uint_eq(ct_scope_erase_vars(s, NULL, 1), 0);
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ck_assert_uint_eq(ct_scope_erase_vars(s, NULL, 0), 0);
  ck_assert_uint_eq(ct_scope_erase_vars(s, names, 0), 0);
  ck_assert_uint_eq(ct_scope_var_count(s), 1);
  ct_scope_free(s);
}
END_TEST

/* ---- Renaming -------------------------------------------------------------------------------- */

START_TEST(test_rename_keeps_variable_and_value) {
  ct_scope *s = ct_scope_new();
  ct_var *v;
  reset_counters();
  v = put_counted(s, "old", 99);
  ck_assert_int_eq(ct_scope_rename(s, "old", "new"), CT_OK);
  ck_assert_ptr_eq(ct_scope_find_var(s, "new"), v);
  ck_assert_str_eq(ct_var_name(v), "new");
  ck_assert_int_eq(counted_value(v), 99);
  ck_assert_int_eq(atomic_load(&counted_inits), 1);
  ck_assert_int_eq(atomic_load(&counted_destroys), 0);
  CT_ASSERT_NULL_FAILS(ct_scope_find_var(s, "old"), CT_ERR_NOT_FOUND);
  ck_assert_uint_eq(ct_scope_var_count(s), 1);
  ct_scope_free(s);
  ck_assert_int_eq(atomic_load(&counted_destroys), 1);
}
END_TEST

START_TEST(test_rename_updates_listing) {
  ct_scope *s = ct_scope_new();
  const char *out[3] = {NULL, NULL, NULL};
  ct_scope_var(s, "m");
  ct_scope_var(s, "b");
  ck_assert_int_eq(ct_scope_rename(s, "b", "z"), CT_OK);
  ck_assert_uint_eq(ct_scope_local_var_names(s, out, 3), 2);
  ck_assert_str_eq(out[0], "m");
  ck_assert_str_eq(out[1], "z");
  ct_scope_free(s);
}
END_TEST

/* The old name can be used again after a rename, for a new variable. */
START_TEST(test_rename_frees_old_name) {
  ct_scope *s = ct_scope_new();
  ct_var *v = ct_scope_var(s, "a");
  ct_var *w;
  ck_assert_int_eq(ct_scope_rename(s, "a", "b"), CT_OK);
  w = ct_scope_var(s, "a");
  ck_assert_ptr_nonnull(w);
  ck_assert_ptr_ne(w, v);
  ck_assert_uint_eq(ct_scope_var_count(s), 2);
  ct_scope_free(s);
}
END_TEST

START_TEST(test_rename_onto_existing_is_already_exists) {
  ct_scope *s = ct_scope_new();
  ct_var *a, *b;
  reset_counters();
  a = put_counted(s, "a", 1);
  b = put_counted(s, "b", 2);
  CT_ASSERT_FAILS(ct_scope_rename(s, "a", "b"), CT_ERR_ALREADY_EXISTS);
  ck_assert_ptr_eq(ct_scope_find_var(s, "a"), a);
  ck_assert_ptr_eq(ct_scope_find_var(s, "b"), b);
  ck_assert_int_eq(counted_value(a), 1);
  ck_assert_int_eq(counted_value(b), 2);
  ck_assert_str_eq(ct_var_name(a), "a");
  ck_assert_int_eq(atomic_load(&counted_destroys), 0);
  ct_scope_free(s);
}
END_TEST

START_TEST(test_rename_missing_is_not_found) {
  ct_scope *s = ct_scope_new();
  ct_scope_var(s, "present");
  CT_ASSERT_FAILS(ct_scope_rename(s, "absent", "other"), CT_ERR_NOT_FOUND);
  ck_assert_uint_eq(ct_scope_var_count(s), 1);
  ct_clear_error();
  ck_assert_ptr_null(ct_scope_find_var(s, "other"));
  ct_scope_free(s);
}
END_TEST

/* rename looks only at the scope itself, not its ancestors. */
START_TEST(test_rename_ancestor_var_is_not_found) {
  ct_scope *root = ct_scope_new();
  ct_scope *kid = ct_scope_new_kid(root);
  ct_var *a = ct_scope_var(root, "a");
  ck_assert_int_eq(ct_scope_rename(kid, "a", "b"), CT_ERR_NOT_FOUND);
  ck_assert_ptr_eq(ct_scope_find_local_var(root, "a"), a);
  ck_assert_str_eq(ct_var_name(a), "a");
  ct_scope_free(root);
}
END_TEST

/* A kid may rename onto a name its parent holds: the result shadows the parent's. */
START_TEST(test_rename_onto_ancestor_name_shadows) {
  ct_scope *root = ct_scope_new();
  ct_scope *kid = ct_scope_new_kid(root);
  ct_var *pa = ct_scope_var(root, "a");
  ct_var *kx = ct_scope_var(kid, "x");
  ck_assert_int_eq(ct_scope_rename(kid, "x", "a"), CT_OK);
  ck_assert_ptr_eq(ct_scope_find_var(kid, "a"), kx);
  ck_assert_ptr_eq(ct_scope_find_var(root, "a"), pa);
  ck_assert_str_eq(ct_var_name(pa), "a");
  ct_scope_free(root);
}
END_TEST

START_TEST(test_rename_onto_itself_succeeds) {
  ct_scope *s = ct_scope_new();
  ct_var *v;
  reset_counters();
  v = put_counted(s, "same", 5);
  ck_assert_int_eq(ct_scope_rename(s, "same", "same"), CT_OK);
  ck_assert_ptr_eq(ct_scope_find_var(s, "same"), v);
  ck_assert_str_eq(ct_var_name(v), "same");
  ck_assert_int_eq(counted_value(v), 5);
  ck_assert_uint_eq(ct_scope_var_count(s), 1);
  ck_assert_int_eq(atomic_load(&counted_destroys), 0);
  ct_scope_free(s);
}
END_TEST

START_TEST(test_rename_null_or_empty_names_are_invalid) {
  ct_scope *s = ct_scope_new();
  ct_var *v = ct_scope_var(s, "a");
  ck_assert_int_eq(ct_scope_rename(NULL, "a", "b"), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_scope_rename(s, NULL, "b"), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_scope_rename(s, "a", NULL), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_scope_rename(s, "", "b"), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_FAILS(ct_scope_rename(s, "a", ""), CT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_eq(ct_scope_find_local_var(s, "a"), v);
  ck_assert_str_eq(ct_var_name(v), "a");
  ct_scope_free(s);
}
END_TEST

/* A renamed variable's name text does not depend on the caller's buffer. */
START_TEST(test_rename_copies_new_name) {
  ct_scope *s = ct_scope_new();
  ct_var *v = ct_scope_var(s, "a");
  char to[16];
  strcpy(to, "renamed");
  ck_assert_int_eq(ct_scope_rename(s, "a", to), CT_OK);
  memset(to, 'q', sizeof to - 1);
  ck_assert_str_eq(ct_var_name(v), "renamed");
  ck_assert_ptr_eq(ct_scope_find_var(s, "renamed"), v);
  ct_scope_free(s);
}
END_TEST

START_TEST(test_var_copies_name) {
  ct_scope *s = ct_scope_new();
  char name[16];
  ct_var *v;
  strcpy(name, "fc1.w");
  v = ct_scope_var(s, name);
  strcpy(name, "xxxxx");
  ck_assert_str_eq(ct_var_name(v), "fc1.w");
  ck_assert_ptr_eq(ct_scope_find_var(s, "fc1.w"), v);
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("scope_erase");
  CT_ADD_TEST(s, test_erase_vars_returns_count_and_skips_missing);
  CT_ADD_TEST(s, test_erase_vars_destroys_each_value_once);
  CT_ADD_TEST(s, test_erase_vars_duplicate_name_counts_once);
  CT_ADD_TEST(s, test_erased_name_is_not_found);
  CT_ADD_TEST(s, test_erased_name_recreated_is_empty);
  CT_ADD_TEST(s, test_erase_vars_is_local_only);
  CT_ADD_TEST(s, test_erase_shadow_uncovers_parent);
  CT_ADD_TEST(s, test_erase_vars_null_args_are_invalid);
  CT_ADD_TEST(s, test_rename_keeps_variable_and_value);
  CT_ADD_TEST(s, test_rename_updates_listing);
  CT_ADD_TEST(s, test_rename_frees_old_name);
  CT_ADD_TEST(s, test_rename_onto_existing_is_already_exists);
  CT_ADD_TEST(s, test_rename_missing_is_not_found);
  CT_ADD_TEST(s, test_rename_ancestor_var_is_not_found);
  CT_ADD_TEST(s, test_rename_onto_ancestor_name_shadows);
  CT_ADD_TEST(s, test_rename_onto_itself_succeeds);
  CT_ADD_TEST(s, test_rename_null_or_empty_names_are_invalid);
  CT_ADD_TEST(s, test_rename_copies_new_name);
  CT_ADD_TEST(s, test_var_copies_name);
  return s;
}

CT_TEST_MAIN(make_suite)
