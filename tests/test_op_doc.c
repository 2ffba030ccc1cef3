/* SPDX-License-Identifier: Apache-2.0 */
/* What op types compute (ct_op_type_doc, ct_op_set_doc): every built-in forward type carries
 * its text (one line of ASCII, for `corten ops` and docs/ops.md), a caller's type gets its own
 * once, and the refusals name the type and the fix. */
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "harness.h"

static ct_status copy_infer(const ct_kernel_ctx *c) {
  return ct_tensor_resize(ct_kernel_out(c, 0, 0), ct_tensor_dims(ct_kernel_in(c, 0, 0)));
}

static const ct_slot_def one_in[] = {{"X", 0}};
static const ct_slot_def one_out[] = {{"Out", 0}};
static const ct_op_def doc_def = {.type = "test_documented", .inputs = one_in, .n_inputs = 1,
                                  .outputs = one_out, .n_outputs = 1, .infer_shape = copy_infer};

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

START_TEST(builtin_types_say_what_they_compute) {
  const char *adam = ct_op_type_doc("adam");
  ck_assert_ptr_nonnull(adam);
  ck_assert_ptr_nonnull(strstr(adam, "Beta1Pow at beta1"));
  ck_assert_ptr_nonnull(strstr(ct_op_type_doc("sgd"), "ParamOut = Param - lr Grad"));
  ck_assert_ptr_null(ct_op_type_doc("no_such_op"));
  ck_assert_ptr_null(ct_op_type_doc(NULL));
}
END_TEST

/* Every registered type that is not a gradient has a text: one line of printable ASCII that
 * ends a sentence. */
START_TEST(every_builtin_forward_type_is_documented) {
  size_t n = ct_op_type_names(NULL, 0);
  const char **names = malloc(n * sizeof *names);
  ck_assert_ptr_nonnull(names);
  ck_assert_uint_eq(ct_op_type_names(names, n), n);
  size_t documented = 0;
  for (size_t i = 0; i < n; i++) {
    if (ends_with(names[i], "_grad")) continue;
    const char *doc = ct_op_type_doc(names[i]);
    ck_assert_msg(doc != NULL, "op type '%s' has no documentation", names[i]);
    size_t len = strlen(doc);
    ck_assert_msg(len >= 20, "op type '%s': documentation of %zu characters", names[i], len);
    for (size_t k = 0; k < len; k++) {
      ck_assert_msg(doc[k] >= 0x20 && doc[k] < 0x7f, "op type '%s': character %zu is 0x%02x",
                    names[i], k, (unsigned char)doc[k]);
    }
    ck_assert_msg(doc[len - 1] == '.' || doc[len - 1] == ')', "op type '%s' ends with '%c'",
                  names[i], doc[len - 1]);
    documented++;
  }
  ck_assert_uint_ge(documented, 150);
  free(names);
}
END_TEST

START_TEST(a_callers_type_is_documented_once) {
  ck_assert_int_eq(ct_op_register(&doc_def), CT_OK);
  ck_assert_ptr_null(ct_op_type_doc("test_documented"));
  char text[] = "Copies X into Out.";
  ck_assert_int_eq(ct_op_set_doc("test_documented", text), CT_OK);
  text[0] = 'X'; /* the registry keeps its own copy */
  ck_assert_str_eq(ct_op_type_doc("test_documented"), "Copies X into Out.");
  ck_assert_int_eq(ct_op_set_doc("test_documented", "Another text."), CT_ERR_ALREADY_EXISTS);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "'test_documented' already has"));
  ck_assert_str_eq(ct_op_type_doc("test_documented"), "Copies X into Out.");
  ck_assert_int_eq(ct_op_set_doc("adam", "Not adam."), CT_ERR_ALREADY_EXISTS);
}
END_TEST

START_TEST(refusals_name_the_type_and_the_fix) {
  ck_assert_int_eq(ct_op_set_doc("no_such_op", "Text."), CT_ERR_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "'no_such_op'"));
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "ct_op_register"));
  ck_assert_int_eq(ct_op_set_doc(NULL, "Text."), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_op_set_doc("adam", NULL), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_op_set_doc("adam", ""), CT_ERR_INVALID_ARGUMENT);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("op_doc");
  CT_ADD_TEST(s, builtin_types_say_what_they_compute);
  CT_ADD_TEST(s, every_builtin_forward_type_is_documented);
  CT_ADD_TEST(s, a_callers_type_is_documented_once);
  CT_ADD_TEST(s, refusals_name_the_type_and_the_fix);
  return s;
}

CT_TEST_MAIN(make_suite)
