/* SPDX-License-Identifier: Apache-2.0 */
/* The lazy-allocation suite: variables, scopes and resized tensors hold no tensor memory until
 * ct_tensor_mutable_data asks for it, and freeing the scope gives back exactly what was taken.
 * Each test runs in its own process, so the memory stats start at zero. */
#include <stdio.h>
#include <string.h>

#include <corten/corten.h>

#include "harness.h"

#define NVARS 1000

/* Adds n variables "<prefix><i>" to s, each a tensor resized to [100,200]. */
static void add_resized_vars(ct_scope *s, const char *prefix, int n) {
  char name[64];
  int i;
  for (i = 0; i < n; i++) {
    ct_var *v;
    ct_tensor *t;
    snprintf(name, sizeof name, "%s%d", prefix, i);
    v = ct_scope_var(s, name);
    ck_assert_ptr_nonnull(v);
    t = ct_var_tensor(v);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(100, 200)), CT_OK);
  }
}

static void assert_nothing_allocated(void) {
  ct_memory_stats st = cpu_stats();
  ck_assert_uint_eq(st.allocated, 0);
  ck_assert_uint_eq(st.reserved, 0);
  ck_assert_uint_eq(st.allocs, 0);
}

START_TEST(resized_tensors_in_scope_allocate_nothing) {
  ct_scope *s = ct_scope_new();
  ck_assert_ptr_nonnull(s);
  add_resized_vars(s, "var", NVARS);
  ck_assert_uint_eq(ct_scope_var_count(s), NVARS);
  assert_nothing_allocated();
  ct_scope_free(s);
  assert_nothing_allocated();
}
END_TEST

START_TEST(mutable_data_allocates_only_that_tensor) {
  ct_scope *s = ct_scope_new();
  ct_tensor *t;
  ct_memory_stats st;
  add_resized_vars(s, "var", NVARS);
  t = ct_var_tensor(ct_scope_find_var(s, "var500"));
  ck_assert_ptr_nonnull(t);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()));
  st = cpu_stats();
  ck_assert_uint_eq(st.allocated, 80000);
  ck_assert_uint_eq(st.reserved, 80000);
  ck_assert_uint_eq(st.peak, 80000);
  ck_assert_uint_eq(st.allocs, 1);
  ck_assert_uint_eq(st.frees, 0);
  /* Every other variable still holds no memory. */
  ck_assert(!ct_tensor_has_memory(ct_var_get_tensor(ct_scope_find_var(s, "var499"))));
  ck_assert(!ct_tensor_has_memory(ct_var_get_tensor(ct_scope_find_var(s, "var0"))));
  ct_scope_free(s);
}
END_TEST

START_TEST(freeing_scope_returns_all_memory) {
  ct_scope *s = ct_scope_new();
  ct_memory_stats st;
  add_resized_vars(s, "var", NVARS);
  ck_assert_ptr_nonnull(
      ct_tensor_mutable_data(ct_var_tensor(ct_scope_find_var(s, "var7")), CT_FLOAT32, ct_cpu()));
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(ct_var_tensor(ct_scope_find_var(s, "var999")),
                                               CT_FLOAT32, ct_cpu()));
  st = cpu_stats();
  ck_assert_uint_eq(st.allocated, 160000);
  ck_assert_uint_eq(st.allocs, 2);
  ct_scope_free(s);
  st = cpu_stats();
  ck_assert_uint_eq(st.allocated, 0);
  ck_assert_uint_eq(st.reserved, 160000); /* the two 80 KB blocks, in the host cache */
  ck_assert_int_eq(ct_memory_empty_cache(ct_cpu()), CT_OK);
  ck_assert_uint_eq(cpu_stats().reserved, 0);
  ck_assert_uint_eq(st.frees, st.allocs);
  ck_assert_uint_eq(st.frees, 2);
  ck_assert_uint_eq(st.peak, 160000);
}
END_TEST

START_TEST(kid_scopes_allocate_nothing_until_asked) {
  ct_scope *root = ct_scope_new();
  ct_scope *kids[4];
  ct_scope *grandkid;
  char prefix[16];
  ct_memory_stats st;
  int k;
  add_resized_vars(root, "w", 100);
  for (k = 0; k < 4; k++) {
    kids[k] = ct_scope_new_kid(root);
    ck_assert_ptr_nonnull(kids[k]);
    snprintf(prefix, sizeof prefix, "k%d_", k);
    add_resized_vars(kids[k], prefix, 200);
  }
  grandkid = ct_scope_new_kid(kids[2]);
  ck_assert_ptr_nonnull(grandkid);
  add_resized_vars(grandkid, "g", 100);
  assert_nothing_allocated();
  /* A kid finds its ancestor's variable without allocating it. */
  ck_assert_ptr_eq(ct_scope_find_var(grandkid, "w5"), ct_scope_find_var(root, "w5"));
  ck_assert(!ct_tensor_has_memory(ct_var_get_tensor(ct_scope_find_var(grandkid, "w5"))));
  assert_nothing_allocated();
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(ct_var_tensor(ct_scope_find_var(grandkid, "g3")),
                                               CT_FLOAT32, ct_cpu()));
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(ct_var_tensor(ct_scope_find_var(kids[1], "k1_0")),
                                               CT_FLOAT32, ct_cpu()));
  st = cpu_stats();
  ck_assert_uint_eq(st.allocated, 160000);
  ck_assert_uint_eq(st.allocs, 2);
  ct_scope_free(root);
  st = cpu_stats();
  ck_assert_uint_eq(st.allocated, 0);
  ck_assert_uint_eq(st.frees, st.allocs);
  ck_assert_uint_eq(st.frees, 2);
}
END_TEST

START_TEST(dropping_kids_returns_their_memory) {
  ct_scope *root = ct_scope_new();
  ct_scope *kid = ct_scope_new_kid(root);
  ct_memory_stats st;
  add_resized_vars(root, "w", 10);
  add_resized_vars(kid, "a", 10);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(ct_var_tensor(ct_scope_find_var(root, "w1")),
                                               CT_FLOAT32, ct_cpu()));
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(ct_var_tensor(ct_scope_find_var(kid, "a1")),
                                               CT_FLOAT32, ct_cpu()));
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(ct_var_tensor(ct_scope_find_var(kid, "a2")),
                                               CT_FLOAT32, ct_cpu()));
  ck_assert_uint_eq(cpu_stats().allocated, 240000);
  ct_scope_drop_kids(root);
  st = cpu_stats();
  ck_assert_uint_eq(st.allocated, 80000);
  ck_assert_uint_eq(st.frees, 2);
  ck_assert(ct_tensor_has_memory(ct_var_get_tensor(ct_scope_find_var(root, "w1"))));
  ct_scope_free(root);
  st = cpu_stats();
  ck_assert_uint_eq(st.allocated, 0);
  ck_assert_uint_eq(st.frees, st.allocs);
}
END_TEST

START_TEST(erasing_a_variable_returns_its_memory) {
  ct_scope *s = ct_scope_new();
  const char *names[1] = {"var3"};
  ct_memory_stats st;
  add_resized_vars(s, "var", 10);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(ct_var_tensor(ct_scope_find_var(s, "var3")),
                                               CT_FLOAT32, ct_cpu()));
  ck_assert_uint_eq(cpu_stats().allocated, 80000);
  ck_assert_uint_eq(ct_scope_erase_vars(s, names, 1), 1);
  st = cpu_stats();
  ck_assert_uint_eq(st.allocated, 0);
  ck_assert_uint_eq(st.frees, 1);
  ct_scope_free(s);
}
END_TEST

START_TEST(get_mutable_on_empty_variable_allocates_no_tensor_memory) {
  ct_var *v = ct_var_new();
  ct_tensor *t;
  ck_assert_ptr_nonnull(v);
  t = ct_var_get_mutable(v, &ct_tensor_type);
  ck_assert_ptr_nonnull(t);
  ck_assert(ct_var_is(v, &ct_tensor_type));
  ck_assert(!ct_tensor_has_memory(t));
  ck_assert_int_eq(ct_tensor_dims(t).rank, -1);
  assert_nothing_allocated();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(100, 200)), CT_OK);
  assert_nothing_allocated();
  ct_var_free(v);
  assert_nothing_allocated();
}
END_TEST

START_TEST(clearing_a_variable_returns_its_memory) {
  ct_var *v = ct_var_new();
  ct_tensor *t = ct_var_tensor(v);
  ct_memory_stats st;
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(100, 200)), CT_OK);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()));
  ck_assert_uint_eq(cpu_stats().allocated, 80000);
  ct_var_clear(v);
  st = cpu_stats();
  ck_assert_uint_eq(st.allocated, 0);
  ck_assert_uint_eq(st.frees, 1);
  ck_assert_ptr_null(ct_var_type(v));
  /* A new tensor in the same variable starts lazy again. */
  t = ct_var_tensor(v);
  ck_assert_ptr_nonnull(t);
  ck_assert(!ct_tensor_has_memory(t));
  ck_assert_uint_eq(cpu_stats().allocs, 1);
  ct_var_free(v);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("lazy_alloc");
  CT_ADD_TEST(s, resized_tensors_in_scope_allocate_nothing);
  CT_ADD_TEST(s, mutable_data_allocates_only_that_tensor);
  CT_ADD_TEST(s, freeing_scope_returns_all_memory);
  CT_ADD_TEST(s, kid_scopes_allocate_nothing_until_asked);
  CT_ADD_TEST(s, dropping_kids_returns_their_memory);
  CT_ADD_TEST(s, erasing_a_variable_returns_its_memory);
  CT_ADD_TEST(s, get_mutable_on_empty_variable_allocates_no_tensor_memory);
  CT_ADD_TEST(s, clearing_a_variable_returns_its_memory);
  return s;
}

CT_TEST_MAIN(make_suite)
