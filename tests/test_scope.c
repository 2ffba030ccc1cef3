/* tests/test_scope.c: named variables in nested scopes. */
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <corten/corten.h>

#include "harness.h"

/* ---- A value type that counts its lifecycle calls (atomically, for the thread test) ---------- */

typedef struct counted {
  int64_t value;
  int alive; /* 1 between init and destroy */
} counted;

static atomic_int counted_inits;
static atomic_int counted_destroys;
static atomic_int counted_double_destroys; /* destroy on an object not alive */

static void counted_init(void *obj) {
  counted *c = obj;
  c->alive = 1;
  atomic_fetch_add(&counted_inits, 1);
}

static void counted_destroy(void *obj) {
  counted *c = obj;
  if (c->alive != 1) atomic_fetch_add(&counted_double_destroys, 1);
  c->alive = 0;
  atomic_fetch_add(&counted_destroys, 1);
}

static const ct_type counted_type = {"counted", sizeof(counted), alignof(counted), counted_init,
                                     counted_destroy};

static void reset_counters(void) {
  atomic_store(&counted_inits, 0);
  atomic_store(&counted_destroys, 0);
  atomic_store(&counted_double_destroys, 0);
}

/* Makes name in s hold a counted value of v; returns the variable. */
static ct_var *put_counted(ct_scope *s, const char *name, int64_t v) {
  ct_var *var = ct_scope_var(s, name);
  counted *c;
  ck_assert_ptr_nonnull(var);
  c = ct_var_get_mutable(var, &counted_type);
  ck_assert_ptr_nonnull(c);
  c->value = v;
  return var;
}

static int64_t counted_value(const ct_var *var) {
  const counted *c = ct_var_get(var, &counted_type);
  ck_assert_ptr_nonnull(c);
  return c->value;
}

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
  ct_clear_error();
  ck_assert_ptr_null(ct_scope_find_var(kid, "no_such_var_xyz"));
  ck_assert_int_eq(ct_last_status(), CT_ERR_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "no_such_var_xyz"));
  ct_scope_free(root);
}
END_TEST

START_TEST(test_find_local_missing_is_not_found) {
  ct_scope *s = ct_scope_new();
  ct_clear_error();
  ck_assert_ptr_null(ct_scope_find_local_var(s, "missing_local_q"));
  ck_assert_int_eq(ct_last_status(), CT_ERR_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "missing_local_q"));
  ct_scope_free(s);
}
END_TEST

START_TEST(test_find_scope_missing_is_not_found) {
  ct_scope *root = ct_scope_new();
  ct_scope *kid = ct_scope_new_kid(root);
  ct_clear_error();
  ck_assert_ptr_null(ct_scope_find_scope(kid, "nowhere_name"));
  ck_assert_int_eq(ct_last_status(), CT_ERR_NOT_FOUND);
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
  ct_clear_error();
  ck_assert_ptr_null(ct_scope_find_local_var(kid, "a"));
  ck_assert_int_eq(ct_last_status(), CT_ERR_NOT_FOUND);
  ck_assert_ptr_nonnull(ct_scope_find_local_var(root, "a"));
  ct_scope_free(root);
}
END_TEST

/* Ancestors never see a kid's variables. */
START_TEST(test_parent_does_not_see_kid_vars) {
  ct_scope *root = ct_scope_new();
  ct_scope *kid = ct_scope_new_kid(root);
  ck_assert_ptr_nonnull(ct_scope_var(kid, "only_in_kid"));
  ct_clear_error();
  ck_assert_ptr_null(ct_scope_find_var(root, "only_in_kid"));
  ck_assert_int_eq(ct_last_status(), CT_ERR_NOT_FOUND);
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
  ct_clear_error();
  ck_assert_ptr_null(ct_scope_find_var(s, "gone"));
  ck_assert_int_eq(ct_last_status(), CT_ERR_NOT_FOUND);
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
  ct_clear_error();
  ck_assert_ptr_null(ct_scope_find_var(s, "old"));
  ck_assert_int_eq(ct_last_status(), CT_ERR_NOT_FOUND);
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
  ck_assert_int_eq(ct_scope_rename(s, "a", "b"), CT_ERR_ALREADY_EXISTS);
  ck_assert_int_eq(ct_last_status(), CT_ERR_ALREADY_EXISTS);
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
  ck_assert_int_eq(ct_scope_rename(s, "absent", "other"), CT_ERR_NOT_FOUND);
  ck_assert_int_eq(ct_last_status(), CT_ERR_NOT_FOUND);
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
  ck_assert_int_eq(ct_scope_rename(s, "a", ""), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
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

/* ---- Invalid names --------------------------------------------------------------------------- */

START_TEST(test_var_null_or_empty_name_is_invalid) {
  ct_scope *s = ct_scope_new();
  ct_clear_error();
  ck_assert_ptr_null(ct_scope_var(s, NULL));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ct_clear_error();
  ck_assert_ptr_null(ct_scope_var(s, ""));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ct_clear_error();
  ck_assert_ptr_null(ct_scope_var(NULL, "a"));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ck_assert_uint_eq(ct_scope_var_count(s), 0);
  ct_scope_free(s);
}
END_TEST

START_TEST(test_find_null_or_empty_name_is_invalid) {
  ct_scope *s = ct_scope_new();
  ct_scope_var(s, "a");
  ct_clear_error();
  ck_assert_ptr_null(ct_scope_find_var(s, NULL));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ct_clear_error();
  ck_assert_ptr_null(ct_scope_find_var(s, ""));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ct_clear_error();
  ck_assert_ptr_null(ct_scope_find_var(NULL, "a"));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ct_clear_error();
  ck_assert_ptr_null(ct_scope_find_local_var(s, NULL));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ct_clear_error();
  ck_assert_ptr_null(ct_scope_find_local_var(s, ""));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ct_clear_error();
  ck_assert_ptr_null(ct_scope_find_local_var(NULL, "a"));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ct_clear_error();
  ck_assert_ptr_null(ct_scope_find_scope(s, NULL));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ct_clear_error();
  ck_assert_ptr_null(ct_scope_find_scope(s, ""));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ct_clear_error();
  ck_assert_ptr_null(ct_scope_find_scope(NULL, "a"));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ct_scope_free(s);
}
END_TEST

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
  ct_clear_error();
  ck_assert_ptr_null(ct_scope_new_kid(NULL));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
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
  ck_assert_int_eq(ct_memory_stats_get(ct_cpu(), &before), CT_OK);
  t = ct_var_tensor(ct_scope_var(s, "fc1.w"));
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(16, 16)), CT_OK);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()));
  ct_scope_free(s);
  ck_assert_int_eq(ct_memory_stats_get(ct_cpu(), &after), CT_OK);
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
  ct_clear_error();
  ck_assert_ptr_null(ct_var_get(v, &ct_int64_type));
  ck_assert_int_eq(ct_last_status(), CT_ERR_TYPE_MISMATCH);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "fc1.w"));
  ck_assert_ptr_nonnull(strstr(ct_last_error(), ct_tensor_type.name));
  ck_assert_ptr_nonnull(strstr(ct_last_error(), ct_int64_type.name));
  ct_scope_free(s);
}
END_TEST

START_TEST(test_empty_scope_var_message_names_variable) {
  ct_scope *s = ct_scope_new();
  ct_var *v = ct_scope_var(s, "conv1.b");
  ct_clear_error();
  ck_assert_ptr_null(ct_var_get(v, &ct_int64_type));
  ck_assert_int_eq(ct_last_status(), CT_ERR_UNINITIALIZED);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "conv1.b"));
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

/* ---- Threads --------------------------------------------------------------------------------- */

#define T_THREADS 8
#define T_OPS 60000
#define T_STABLE 48      /* per scope level: never erased */
#define T_SLOTS 48       /* per thread: churned, tracked exactly */
#define T_HOT 8          /* shared by all threads: churned, not tracked */
#define T_MAX_NEW_KIDS 64 /* per thread */

typedef struct tree {
  ct_scope *level[3]; /* root, kid, grandkid */
  ct_var *stable[3][T_STABLE];
} tree;

typedef enum slot_state { SLOT_ABSENT, SLOT_AS_A, SLOT_AS_B } slot_state;

typedef struct worker {
  tree *t;
  int id;
  uint64_t rng;
  slot_state state[T_SLOTS];
  ct_var *var[T_SLOTS];
  int new_kids;
  int failures;
  char first_failure[160];
} worker;

static void stable_name(char *buf, size_t cap, int level, int i) {
  snprintf(buf, cap, "stable.L%d.%02d", level, i);
}

static void slot_name(char *buf, size_t cap, int thread, int slot, slot_state st) {
  snprintf(buf, cap, "churn.t%d.s%02d.%c", thread, slot, st == SLOT_AS_B ? 'b' : 'a');
}

static void hot_name(char *buf, size_t cap, int i) { snprintf(buf, cap, "hot.%d", i); }

static uint64_t next_rand(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *s = x;
  return x;
}

/* Notes a failure in a worker; the main thread asserts on it after the join. */
static void report(worker *w, const char *what, const char *name) {
  if (w->failures++ == 0) {
    snprintf(w->first_failure, sizeof w->first_failure, "thread %d: %s (%s): %s", w->id, what,
             name, ct_last_error());
  }
}

/* The scope a thread's slot lives in: spread over the three levels. */
static ct_scope *slot_scope(const worker *w, int slot) { return w->t->level[slot % 3]; }

static void op_find_stable(worker *w) {
  char name[48];
  uint64_t r = next_rand(&w->rng);
  int level = (int)(r % 3), i = (int)((r >> 8) % T_STABLE);
  int from = level + (int)((r >> 16) % (uint64_t)(3 - level)); /* this level or below */
  ct_var *v;
  const counted *c;
  stable_name(name, sizeof name, level, i);
  v = ct_scope_find_var(w->t->level[from], name);
  if (v != w->t->stable[level][i]) {
    report(w, "find_var of a stable name gave another pointer", name);
    return;
  }
  c = ct_var_get(v, &counted_type);
  if (c == NULL || c->value != level * 1000 + i) report(w, "stable value changed", name);
}

static void op_create_slot(worker *w, int slot) {
  char name[48];
  ct_var *v;
  slot_state st = w->state[slot] == SLOT_ABSENT ? SLOT_AS_A : w->state[slot];
  slot_name(name, sizeof name, w->id, slot, st);
  v = ct_scope_var(slot_scope(w, slot), name);
  if (v == NULL) {
    report(w, "ct_scope_var failed", name);
    return;
  }
  if (w->state[slot] == SLOT_ABSENT) {
    counted *c = ct_var_get_mutable(v, &counted_type);
    if (c == NULL) {
      report(w, "get_mutable on a new variable failed", name);
      return;
    }
    c->value = w->id * 1000 + slot;
    w->state[slot] = SLOT_AS_A;
    w->var[slot] = v;
  } else if (v != w->var[slot]) {
    report(w, "ct_scope_var of an existing name gave another pointer", name);
  }
}

static void op_erase_slot(worker *w, int slot) {
  char name[48];
  const char *names[1];
  size_t expect = w->state[slot] == SLOT_ABSENT ? 0 : 1;
  slot_name(name, sizeof name, w->id, slot, w->state[slot]);
  names[0] = name;
  if (ct_scope_erase_vars(slot_scope(w, slot), names, 1) != expect) {
    report(w, "erase_vars count", name);
  }
  w->state[slot] = SLOT_ABSENT;
  w->var[slot] = NULL;
}

static void op_rename_slot(worker *w, int slot) {
  char from[48], to[48];
  ct_scope *s = slot_scope(w, slot);
  slot_state next = w->state[slot] == SLOT_AS_A ? SLOT_AS_B : SLOT_AS_A;
  ct_status st;
  slot_name(from, sizeof from, w->id, slot, w->state[slot]);
  slot_name(to, sizeof to, w->id, slot, next);
  st = ct_scope_rename(s, from, to);
  if (w->state[slot] == SLOT_ABSENT) {
    if (st != CT_ERR_NOT_FOUND || ct_last_status() != CT_ERR_NOT_FOUND) {
      report(w, "rename of an absent name", from);
    }
    return;
  }
  if (st != CT_OK) {
    report(w, "rename failed", from);
    return;
  }
  w->state[slot] = next;
  if (ct_scope_find_local_var(s, to) != w->var[slot]) {
    report(w, "renamed variable has another pointer", to);
    return;
  }
  {
    const counted *c = ct_var_get(w->var[slot], &counted_type);
    if (c == NULL || c->value != w->id * 1000 + slot) report(w, "renamed value changed", to);
  }
  if (strcmp(ct_var_name(w->var[slot]), to) != 0) report(w, "ct_var_name after rename", to);
}

static void op_hot(worker *w) {
  char name[48];
  uint64_t r = next_rand(&w->rng);
  ct_scope *kid = w->t->level[1];
  hot_name(name, sizeof name, (int)(r % T_HOT));
  if ((r >> 8) % 2) {
    /* the pointer may be erased by another thread at once: only check it */
    if (ct_scope_var(kid, name) == NULL) report(w, "ct_scope_var of a hot name failed", name);
  } else {
    const char *names[1] = {name};
    if (ct_scope_erase_vars(kid, names, 1) > 1) report(w, "erase_vars of one name gave > 1", name);
  }
}

static void op_new_kid(worker *w) {
  ct_scope *k;
  char name[48];
  if (w->new_kids >= T_MAX_NEW_KIDS) return;
  k = ct_scope_new_kid(w->t->level[1 + w->new_kids % 2]);
  if (k == NULL) {
    report(w, "new_kid failed", "-");
    return;
  }
  w->new_kids++;
  stable_name(name, sizeof name, 0, w->id % T_STABLE);
  if (ct_scope_find_var(k, name) != w->t->stable[0][w->id % T_STABLE]) {
    report(w, "find_var from a new kid", name);
  }
  if (ct_scope_var(k, "kid_local") == NULL) report(w, "ct_scope_var in a new kid", "kid_local");
}

static void *worker_main(void *arg) {
  worker *w = arg;
  int op;
  for (op = 0; op < T_OPS; op++) {
    uint64_t r = next_rand(&w->rng);
    int kind = (int)(r % 100), slot = (int)((r >> 8) % T_SLOTS);
    if (kind < 50) {
      op_find_stable(w);
    } else if (kind < 65) {
      op_create_slot(w, slot);
    } else if (kind < 75) {
      op_erase_slot(w, slot);
    } else if (kind < 87) {
      op_rename_slot(w, slot);
    } else if (kind < 99) {
      op_hot(w);
    } else {
      op_new_kid(w);
    }
  }
  return NULL;
}

START_TEST(test_threads_share_a_scope_tree) {
  static tree t;
  static worker workers[T_THREADS];
  pthread_t threads[T_THREADS];
  size_t expect_local[3] = {T_STABLE, T_STABLE, T_STABLE};
  char name[48];
  int i, lv, s;
  reset_counters();
  t.level[0] = ct_scope_new();
  t.level[1] = ct_scope_new_kid(t.level[0]);
  t.level[2] = ct_scope_new_kid(t.level[1]);
  ck_assert_ptr_nonnull(t.level[2]);
  for (lv = 0; lv < 3; lv++) {
    for (i = 0; i < T_STABLE; i++) {
      stable_name(name, sizeof name, lv, i);
      t.stable[lv][i] = put_counted(t.level[lv], name, lv * 1000 + i);
    }
  }
  for (i = 0; i < T_THREADS; i++) {
    memset(&workers[i], 0, sizeof workers[i]);
    workers[i].t = &t;
    workers[i].id = i;
    workers[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
    ck_assert_int_eq(pthread_create(&threads[i], NULL, worker_main, &workers[i]), 0);
  }
  for (i = 0; i < T_THREADS; i++) ck_assert_int_eq(pthread_join(threads[i], NULL), 0);
  for (i = 0; i < T_THREADS; i++) {
    ck_assert_msg(workers[i].failures == 0, "%d failures, first: %s", workers[i].failures,
                  workers[i].first_failure);
  }

  /* stable names: all present, same pointers, same values */
  for (lv = 0; lv < 3; lv++) {
    for (i = 0; i < T_STABLE; i++) {
      stable_name(name, sizeof name, lv, i);
      ck_assert_ptr_eq(ct_scope_find_local_var(t.level[lv], name), t.stable[lv][i]);
      ck_assert_int_eq(counted_value(t.stable[lv][i]), lv * 1000 + i);
    }
  }
  /* tracked slots: present exactly under their current name */
  for (i = 0; i < T_THREADS; i++) {
    for (s = 0; s < T_SLOTS; s++) {
      ct_scope *sc = t.level[s % 3];
      slot_name(name, sizeof name, i, s, SLOT_AS_A);
      if (workers[i].state[s] == SLOT_AS_A) {
        ck_assert_ptr_eq(ct_scope_find_local_var(sc, name), workers[i].var[s]);
      } else {
        ck_assert_ptr_null(ct_scope_find_local_var(sc, name));
      }
      slot_name(name, sizeof name, i, s, SLOT_AS_B);
      if (workers[i].state[s] == SLOT_AS_B) {
        ck_assert_ptr_eq(ct_scope_find_local_var(sc, name), workers[i].var[s]);
      } else {
        ck_assert_ptr_null(ct_scope_find_local_var(sc, name));
      }
      if (workers[i].state[s] != SLOT_ABSENT) expect_local[s % 3]++;
    }
  }
  /* hot names live in the kid */
  for (i = 0; i < T_HOT; i++) {
    hot_name(name, sizeof name, i);
    if (ct_scope_find_local_var(t.level[1], name) != NULL) expect_local[1]++;
  }
  for (lv = 0; lv < 3; lv++) {
    ck_assert_uint_eq(ct_scope_var_count(t.level[lv]), expect_local[lv]);
    ck_assert_uint_eq(ct_scope_local_var_names(t.level[lv], NULL, 0), expect_local[lv]);
  }
  /* every value made was destroyed by an erase or is destroyed now, once */
  ct_scope_free(t.level[0]);
  ck_assert_int_eq(atomic_load(&counted_destroys), atomic_load(&counted_inits));
  ck_assert_int_eq(atomic_load(&counted_double_destroys), 0);
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
  CT_ADD_TEST(s, test_var_null_or_empty_name_is_invalid);
  CT_ADD_TEST(s, test_find_null_or_empty_name_is_invalid);
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
  CT_ADD_TEST(s, test_many_variables_all_findable);
  CT_ADD_TEST(s, test_many_variables_listing_sorted);
  CT_ADD_TEST(s, test_many_variables_after_erasing_half);
  CT_ADD_TEST(s, test_threads_share_a_scope_tree);
  return s;
}

CT_TEST_MAIN(make_suite)
