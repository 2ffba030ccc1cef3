/* SPDX-License-Identifier: Apache-2.0 */
/* Tests that corten/dlpack.h defers to a DLPack 1.x system header: compiled with
 * tests/dlpack_1x first on the include path (a stand-in 1.x header), it must use that header's
 * DLManagedTensorVersioned (declaring its own would not compile), and the library, built
 * against the 0.6 header and corten's own declarations, must exchange tensors with it. */
#include <stdint.h>

#include <corten/corten.h>

#include "harness.h"

/* The stand-in header was the one included. */
static const ct_test_fake_dlpack_1x_marker marker = 1;
_Static_assert(DLPACK_MAJOR_VERSION == 1 && DLPACK_MINOR_VERSION == 1, "the stand-in header");

START_TEST(versioned_exchange_with_a_1x_header) {
  ck_assert_int_eq(marker, 1);
  ct_tensor *t = ct_tensor_new(), *back = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(2)), CT_OK);
  int64_t *p = ct_tensor_mutable_data(t, CT_INT64, ct_cpu());
  p[0] = 5;
  p[1] = 6;
  DLManagedTensorVersioned *m = NULL;
  ck_assert_int_eq(ct_tensor_to_dlpack_versioned(t, &m), CT_OK);
  ck_assert_uint_eq(m->version.major, 1);
  ck_assert_uint_eq(m->flags & DLPACK_FLAG_BITMASK_READ_ONLY, 0);
  ck_assert_int_eq(((const int64_t *)m->dl_tensor.data)[1], 6);
  m->flags |= DLPACK_FLAG_BITMASK_READ_ONLY;
  ck_assert_int_eq(ct_tensor_from_dlpack_versioned(back, m), CT_OK);
  ck_assert(ct_tensor_is_read_only(back));
  ck_assert_ptr_eq(ct_tensor_data(back, CT_INT64), p);
  ct_tensor_free(t);
  ct_tensor_free(back);
  ck_assert_uint_eq(cpu_stats().allocated, 0);
}
END_TEST

static Suite *dlpack_header_suite(void) {
  Suite *s = suite_create("dlpack_header");
  CT_ADD_TEST(s, versioned_exchange_with_a_1x_header);
  return s;
}

CT_TEST_MAIN(dlpack_header_suite)
