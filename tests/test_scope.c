/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_scope.c: named variables in nested scopes: creating and finding, shadowing,
 * counting and listing, invalid names, and many variables. Erasing and renaming are tested in
 * test_scope_erase.c, the tree of kids in test_scope_kids.c, threads in test_scope_threads.c. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <corten/corten.h>

#include "scope_util.h"

/* ---- Creating and finding -------------------------------------------------------------------- */

START_TEST(test_var_creates_local_variable) {
  ct_scope *s = ct_scope_new();
  ct_var *v;
  ck_assert_ptr_nonnull(s);
  ck_assert_uint_eq(ct_scope_var_count(s), 0);
  v = ct_scope_var(s, "a");
  ck_assert_ptr_nonnull(v);
  ck_assert_ptr_null(ct_var_type(v)); /* created empty */
  ck_assert_str_eq(ct_var_name(v), "a");
  ck_assert_uint_eq(ct_scope_var_count(s), 1);
  ck_assert_ptr_eq(ct_scope_find_var(s, "a"), v);
  ck_assert_ptr_eq(ct_scope_find_local_var(s, "a"), v);
  ct_scope_free(s);
}
END_TEST

START_TEST(test_var_is_find_or_create) {
  ct_scope *s = ct_scope_new();
  ct_var *a = ct_scope_var(s, "a");
  ct_var *b;
  int64_t *p = ct_var_get_mutable(a, &ct_int64_type);
  ck_assert_ptr_nonnull(p);
  *p = 17;
  b = ct_scope_var(s, "a");
  ck_assert_ptr_eq(b, a);
  ck_assert_int_eq(*(const int64_t *)ct_var_get(b, &ct_int64_type), 17);
  ck_assert_uint_eq(ct_scope_var_count(s), 1);
  ct_scope_free(s);
}
END_TEST

START_TEST(test_distinct_names_are_distinct_variables) {
  ct_scope *s = ct_scope_new();
  ct_var *a = ct_scope_var(s, "a");
  ct_var *b = ct_scope_var(s, "b");
  ct_var *ab = ct_scope_var(s, "ab");
  ck_assert_ptr_ne(a, b);
  ck_assert_ptr_ne(a, ab);
  ck_assert_ptr_ne(b, ab);
  ck_assert_uint_eq(ct_scope_var_count(s), 3);
  ct_scope_free(s);
}
END_TEST

START_TEST(test_find_var_in_parent_from_kid) {
  ct_scope *root = ct_scope_new();
  ct_scope *kid = ct_scope_new_kid(root);
  ct_scope *grandkid = ct_scope_new_kid(kid);
  ct_var *a = ct_scope_var(root, "a");
  ck_assert_ptr_nonnull(grandkid);
  ck_assert_ptr_eq(ct_scope_find_var(kid, "a"), a);
  ck_assert_ptr_eq(ct_scope_find_var(grandkid, "a"), a);
  ck_assert_uint_eq(ct_scope_var_count(kid), 0);
  ct_scope_free(root);
}
END_TEST

START_TEST(test_find_missing_is_not_found_and_names_it) {
  ct_scope *root = ct_scope_new();
  ct_scope *kid = ct_scope_new_kid(root);
  ct_scope_var(root, "present");
  CT_ASSERT_NULL_FAILS(ct_scope_find_var(kid, "no_such_var_xyz"), CT_ERR_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "no_such_var_xyz"));
  ct_scope_free(root);
}
END_TEST

START_TEST(test_find_local_missing_is_not_found) {
  ct_scope *s = ct_scope_new();
  CT_ASSERT_NULL_FAILS(ct_scope_find_local_var(s, "missing_local_q"), CT_ERR_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "missing_local_q"));
  ct_scope_free(s);
}
END_TEST

START_TEST(test_find_scope_missing_is_not_found) {
  ct_scope *root = ct_scope_new();
  ct_scope *kid = ct_scope_new_kid(root);
  CT_ASSERT_NULL_FAILS(ct_scope_find_scope(kid, "nowhere_name"), CT_ERR_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "nowhere_name"));
  ct_scope_free(root);
}
END_TEST

/* The lookup does not create: a failed find leaves the scope unchanged. */
START_TEST(test_find_does_not_create) {
  ct_scope *s = ct_scope_new();
  ck_assert_ptr_null(ct_scope_find_var(s, "x"));
  ck_assert_ptr_null(ct_scope_find_local_var(s, "x"));
  ck_assert_uint_eq(ct_scope_var_count(s), 0);
  ct_scope_free(s);
}
END_TEST

/* ---- Shadowing ------------------------------------------------------------------------------- */

START_TEST(test_kid_var_shadows_parent) {
  ct_scope *root = ct_scope_new();
  ct_scope *kid = ct_scope_new_kid(root);
  ct_var *pa, *ka;
  reset_counters();
  pa = put_counted(root, "a", 1);
  ka = ct_scope_var(kid, "a");
  ck_assert_ptr_nonnull(ka);
  ck_assert_ptr_ne(ka, pa);
  ck_assert_ptr_null(ct_var_type(ka)); /* a new, empty variable */
  ck_assert_ptr_eq(ct_scope_find_var(kid, "a"), ka);
  ck_assert_ptr_eq(ct_scope_find_var(root, "a"), pa);
  ck_assert_int_eq(counted_value(pa), 1);
  ck_assert_uint_eq(ct_scope_var_count(root), 1);
  ck_assert_uint_eq(ct_scope_var_count(kid), 1);
  ct_scope_free(root);
  ck_assert_int_eq(atomic_load(&counted_destroys), 1);
}
END_TEST

START_TEST(test_sibling_kids_shadow_independently) {
  ct_scope *root = ct_scope_new();
  ct_scope *k1 = ct_scope_new_kid(root);
  ct_scope *k2 = ct_scope_new_kid(root);
  ct_scope *k3 = ct_scope_new_kid(root);
  ct_var *pa, *a1, *a2;
  reset_counters();
  pa = put_counted(root, "a", 0);
  a1 = put_counted(k1, "a", 1);
  a2 = put_counted(k2, "a", 2);
  ck_assert_ptr_ne(a1, a2);
  ck_assert_ptr_eq(ct_scope_find_var(k1, "a"), a1);
  ck_assert_ptr_eq(ct_scope_find_var(k2, "a"), a2);
  ck_assert_ptr_eq(ct_scope_find_var(k3, "a"), pa);
  ck_assert_int_eq(counted_value(ct_scope_find_var(k1, "a")), 1);
  ck_assert_int_eq(counted_value(ct_scope_find_var(k2, "a")), 2);
  ck_assert_int_eq(counted_value(ct_scope_find_var(k3, "a")), 0);
  ct_scope_free(root);
  ck_assert_int_eq(atomic_load(&counted_destroys), 3);
}
END_TEST

START_TEST(test_nearest_ancestor_wins) {
  ct_scope *root = ct_scope_new();
  ct_scope *kid = ct_scope_new_kid(root);
  ct_scope *grandkid = ct_scope_new_kid(kid);
  ct_var *ka;
  ct_scope_var(root, "a");
  ka = ct_scope_var(kid, "a");
  ck_assert_ptr_eq(ct_scope_find_var(grandkid, "a"), ka);
  ck_assert_ptr_eq(ct_scope_find_scope(grandkid, "a"), kid);
  ct_scope_free(root);
}
END_TEST

START_TEST(test_find_local_var_ignores_ancestors) {
  ct_scope *root = ct_scope_new();
  ct_scope *kid = ct_scope_new_kid(root);
  ct_scope_var(root, "a");
  CT_ASSERT_NULL_FAILS(ct_scope_find_local_var(kid, "a"), CT_ERR_NOT_FOUND);
  ck_assert_ptr_nonnull(ct_scope_find_local_var(root, "a"));
  ct_scope_free(root);
}
END_TEST

/* Ancestors never see a kid's variables. */
START_TEST(test_parent_does_not_see_kid_vars) {
  ct_scope *root = ct_scope_new();
  ct_scope *kid = ct_scope_new_kid(root);
  ck_assert_ptr_nonnull(ct_scope_var(kid, "only_in_kid"));
  CT_ASSERT_NULL_FAILS(ct_scope_find_var(root, "only_in_kid"), CT_ERR_NOT_FOUND);
  ct_scope_free(root);
}
END_TEST

START_TEST(test_find_scope_returns_holder) {
  ct_scope *root = ct_scope_new();
  ct_scope *kid = ct_scope_new_kid(root);
  ct_scope *grandkid = ct_scope_new_kid(kid);
  ct_scope_var(root, "r");
  ct_scope_var(kid, "k");
  ct_scope_var(grandkid, "g");
  ck_assert_ptr_eq(ct_scope_find_scope(root, "r"), root);
  ck_assert_ptr_eq(ct_scope_find_scope(kid, "r"), root);
  ck_assert_ptr_eq(ct_scope_find_scope(grandkid, "r"), root);
  ck_assert_ptr_eq(ct_scope_find_scope(kid, "k"), kid);
  ck_assert_ptr_eq(ct_scope_find_scope(grandkid, "k"), kid);
  ck_assert_ptr_eq(ct_scope_find_scope(grandkid, "g"), grandkid);
  ck_assert_ptr_null(ct_scope_find_scope(kid, "g"));
  ct_scope_free(root);
}
END_TEST

/* ---- Counting and listing -------------------------------------------------------------------- */

START_TEST(test_var_count_counts_local_only) {
  ct_scope *root = ct_scope_new();
  ct_scope *kid = ct_scope_new_kid(root);
  ct_scope_var(root, "a");
  ct_scope_var(root, "b");
  ct_scope_var(root, "c");
  ct_scope_var(kid, "a");
  ct_scope_var(kid, "z");
  ck_assert_uint_eq(ct_scope_var_count(root), 3);
  ck_assert_uint_eq(ct_scope_var_count(kid), 2);
  ck_assert_uint_eq(ct_scope_var_count(NULL), 0);
  ct_scope_free(root);
}
END_TEST

START_TEST(test_local_var_names_sorted) {
  static const char *const created[] = {"fc2.w", "b", "fc1.w", "a", "fc1.b", "B", "a0", "fc10.w"};
  static const char *const sorted[] = {"B", "a", "a0", "b", "fc1.b", "fc1.w", "fc10.w", "fc2.w"};
  ct_scope *s = ct_scope_new();
  const char *out[16];
  size_t i;
  for (i = 0; i < 8; i++) ck_assert_ptr_nonnull(ct_scope_var(s, created[i]));
  memset(out, 0, sizeof out);
  ck_assert_uint_eq(ct_scope_local_var_names(s, out, 16), 8);
  for (i = 0; i < 8; i++) ck_assert_str_eq(out[i], sorted[i]);
  ck_assert_ptr_null(out[8]); /* nothing written past the total */
  ct_scope_free(s);
}
END_TEST

START_TEST(test_local_var_names_cap_smaller_than_total) {
  ct_scope *s = ct_scope_new();
  const char *out[4] = {NULL, NULL, NULL, NULL};
  ct_scope_var(s, "delta");
  ct_scope_var(s, "alpha");
  ct_scope_var(s, "echo");
  ct_scope_var(s, "charlie");
  ct_scope_var(s, "bravo");
  ck_assert_uint_eq(ct_scope_local_var_names(s, out, 3), 5);
  ck_assert_str_eq(out[0], "alpha");
  ck_assert_str_eq(out[1], "bravo");
  ck_assert_str_eq(out[2], "charlie");
  ck_assert_ptr_null(out[3]);
  ct_scope_free(s);
}
END_TEST

START_TEST(test_local_var_names_cap_zero_returns_total) {
  ct_scope *s = ct_scope_new();
  const char *out[1] = {NULL};
  ct_scope_var(s, "x");
  ct_scope_var(s, "y");
  ck_assert_uint_eq(ct_scope_local_var_names(s, NULL, 0), 2);
  ck_assert_uint_eq(ct_scope_local_var_names(s, out, 0), 2);
  ck_assert_ptr_null(out[0]);
  ct_scope_free(s);
}
END_TEST

START_TEST(test_local_var_names_excludes_ancestors) {
  ct_scope *root = ct_scope_new();
  ct_scope *kid = ct_scope_new_kid(root);
  const char *out[4] = {NULL, NULL, NULL, NULL};
  ct_scope_var(root, "a");
  ct_scope_var(root, "b");
  ct_scope_var(kid, "c");
  ck_assert_uint_eq(ct_scope_local_var_names(kid, out, 4), 1);
  ck_assert_str_eq(out[0], "c");
  ck_assert_ptr_null(out[1]);
  ct_scope_free(root);
}
END_TEST

START_TEST(test_local_var_names_null_args) {
  ct_scope *s = ct_scope_new();
  ct_scope_var(s, "a");
  ck_assert_uint_eq(ct_scope_local_var_names(NULL, NULL, 0), 0);
  ck_assert_uint_eq(ct_scope_local_var_names(s, NULL, 4), 0);
  ct_scope_free(s);
}
END_TEST

START_TEST(test_local_var_names_of_empty_scope) {
  ct_scope *s = ct_scope_new();
  const char *out[2] = {NULL, NULL};
  ck_assert_uint_eq(ct_scope_local_var_names(s, out, 2), 0);
  ck_assert_ptr_null(out[0]);
  ct_scope_free(s);
}
END_TEST

/* ---- Invalid names --------------------------------------------------------------------------- */

START_TEST(test_var_null_or_empty_name_is_invalid) {
  ct_scope *s = ct_scope_new();
  CT_ASSERT_NULL_FAILS(ct_scope_var(s, NULL), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_NULL_FAILS(ct_scope_var(s, ""), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_NULL_FAILS(ct_scope_var(NULL, "a"), CT_ERR_INVALID_ARGUMENT);
  ck_assert_uint_eq(ct_scope_var_count(s), 0);
  ct_scope_free(s);
}
END_TEST

START_TEST(test_find_null_or_empty_name_is_invalid) {
  ct_scope *s = ct_scope_new();
  ct_scope_var(s, "a");
  CT_ASSERT_NULL_FAILS(ct_scope_find_var(s, NULL), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_NULL_FAILS(ct_scope_find_var(s, ""), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_NULL_FAILS(ct_scope_find_var(NULL, "a"), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_NULL_FAILS(ct_scope_find_local_var(s, NULL), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_NULL_FAILS(ct_scope_find_local_var(s, ""), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_NULL_FAILS(ct_scope_find_local_var(NULL, "a"), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_NULL_FAILS(ct_scope_find_scope(s, NULL), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_NULL_FAILS(ct_scope_find_scope(s, ""), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_NULL_FAILS(ct_scope_find_scope(NULL, "a"), CT_ERR_INVALID_ARGUMENT);
  ct_scope_free(s);
}
END_TEST

/* ---- Many variables -------------------------------------------------------------------------- */

#define MANY 10000

static void many_name(char *buf, size_t cap, int i) {
  snprintf(buf, cap, "layer%03d.weight.%04d", i / 100, i);
}

START_TEST(test_many_variables_all_findable) {
  ct_scope *s = ct_scope_new();
  static ct_var *vars[MANY];
  char name[48];
  int i;
  for (i = 0; i < MANY; i++) {
    int64_t *p;
    many_name(name, sizeof name, i);
    vars[i] = ct_scope_var(s, name);
    ck_assert_ptr_nonnull(vars[i]);
    p = ct_var_get_mutable(vars[i], &ct_int64_type);
    ck_assert_ptr_nonnull(p);
    *p = i;
  }
  ck_assert_uint_eq(ct_scope_var_count(s), MANY);
  for (i = 0; i < MANY; i++) {
    ct_var *v;
    many_name(name, sizeof name, i);
    v = ct_scope_find_var(s, name);
    ck_assert_ptr_eq(v, vars[i]);
    ck_assert_int_eq(*(const int64_t *)ct_var_get(v, &ct_int64_type), i);
    ck_assert_str_eq(ct_var_name(v), name);
  }
  ct_scope_free(s);
}
END_TEST

START_TEST(test_many_variables_listing_sorted) {
  ct_scope *s = ct_scope_new();
  static const char *out[MANY];
  char name[48];
  int i;
  /* create in a scrambled order */
  for (i = 0; i < MANY; i++) {
    many_name(name, sizeof name, (i * 7919) % MANY);
    ck_assert_ptr_nonnull(ct_scope_var(s, name));
  }
  ck_assert_uint_eq(ct_scope_local_var_names(s, out, MANY), MANY);
  for (i = 0; i < MANY; i++) {
    many_name(name, sizeof name, i);
    ck_assert_str_eq(out[i], name);
  }
  ct_scope_free(s);
}
END_TEST

START_TEST(test_many_variables_after_erasing_half) {
  ct_scope *s = ct_scope_new();
  static ct_var *vars[MANY];
  static char names_buf[MANY / 2][48];
  static const char *names[MANY / 2];
  char name[48];
  int i;
  for (i = 0; i < MANY; i++) {
    many_name(name, sizeof name, i);
    vars[i] = ct_scope_var(s, name);
    ck_assert_ptr_nonnull(vars[i]);
    *(int64_t *)ct_var_get_mutable(vars[i], &ct_int64_type) = i;
  }
  for (i = 0; i < MANY / 2; i++) {
    many_name(names_buf[i], sizeof names_buf[i], 2 * i);
    names[i] = names_buf[i];
  }
  ck_assert_uint_eq(ct_scope_erase_vars(s, names, MANY / 2), MANY / 2);
  ck_assert_uint_eq(ct_scope_var_count(s), MANY / 2);
  for (i = 0; i < MANY; i++) {
    ct_var *v;
    many_name(name, sizeof name, i);
    v = ct_scope_find_var(s, name);
    if (i % 2 == 0) {
      ck_assert_ptr_null(v);
      ck_assert_int_eq(ct_last_status(), CT_ERR_NOT_FOUND);
    } else {
      ck_assert_ptr_eq(v, vars[i]);
      ck_assert_int_eq(*(const int64_t *)ct_var_get(v, &ct_int64_type), i);
    }
  }
  /* re-creating the erased names works and leaves the others alone */
  for (i = 0; i < MANY; i += 2) {
    many_name(name, sizeof name, i);
    ck_assert_ptr_nonnull(ct_scope_var(s, name));
  }
  ck_assert_uint_eq(ct_scope_var_count(s), MANY);
  for (i = 1; i < MANY; i += 2) {
    many_name(name, sizeof name, i);
    ck_assert_ptr_eq(ct_scope_find_local_var(s, name), vars[i]);
  }
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("scope");
  CT_ADD_TEST(s, test_var_creates_local_variable);
  CT_ADD_TEST(s, test_var_is_find_or_create);
  CT_ADD_TEST(s, test_distinct_names_are_distinct_variables);
  CT_ADD_TEST(s, test_find_var_in_parent_from_kid);
  CT_ADD_TEST(s, test_find_missing_is_not_found_and_names_it);
  CT_ADD_TEST(s, test_find_local_missing_is_not_found);
  CT_ADD_TEST(s, test_find_scope_missing_is_not_found);
  CT_ADD_TEST(s, test_find_does_not_create);
  CT_ADD_TEST(s, test_kid_var_shadows_parent);
  CT_ADD_TEST(s, test_sibling_kids_shadow_independently);
  CT_ADD_TEST(s, test_nearest_ancestor_wins);
  CT_ADD_TEST(s, test_find_local_var_ignores_ancestors);
  CT_ADD_TEST(s, test_parent_does_not_see_kid_vars);
  CT_ADD_TEST(s, test_find_scope_returns_holder);
  CT_ADD_TEST(s, test_var_count_counts_local_only);
  CT_ADD_TEST(s, test_local_var_names_sorted);
  CT_ADD_TEST(s, test_local_var_names_cap_smaller_than_total);
  CT_ADD_TEST(s, test_local_var_names_cap_zero_returns_total);
  CT_ADD_TEST(s, test_local_var_names_excludes_ancestors);
  CT_ADD_TEST(s, test_local_var_names_null_args);
  CT_ADD_TEST(s, test_local_var_names_of_empty_scope);
  CT_ADD_TEST(s, test_var_null_or_empty_name_is_invalid);
  CT_ADD_TEST(s, test_find_null_or_empty_name_is_invalid);
  CT_ADD_TEST(s, test_many_variables_all_findable);
  CT_ADD_TEST(s, test_many_variables_listing_sorted);
  CT_ADD_TEST(s, test_many_variables_after_erasing_half);
  return s;
}

CT_TEST_MAIN(make_suite)
