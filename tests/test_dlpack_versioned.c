/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of DLPack 1.x in corten/dlpack.h: DLManagedTensorVersioned both ways, the version
 * check, and the read-only flag kept on import, enforced by every writing call and carried on
 * export. Each test runs in its own process, so the memory stats start at zero. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "harness.h"
#include "op_util.h"

/* A producer's versioned tensor: six floats 0..5 as [2,3], a deleter that counts. */
typedef struct producer {
  DLManagedTensorVersioned m;
  int64_t shape[2];
  _Alignas(64) float data[6];
  int deleted;
} producer;

static void producer_deleter(DLManagedTensorVersioned *m) {
  ((producer *)m->manager_ctx)->deleted++;
}

static void producer_init(producer *p, uint64_t flags) {
  memset(p, 0, sizeof *p);
  for (int i = 0; i < 6; i++) p->data[i] = (float)i;
  p->shape[0] = 2;
  p->shape[1] = 3;
  p->m.version.major = 1;
  p->m.version.minor = 3; /* a later minor version is read the same */
  p->m.manager_ctx = p;
  p->m.deleter = producer_deleter;
  p->m.flags = flags;
  DLTensor *x = &p->m.dl_tensor;
  x->data = p->data;
  x->device.device_type = kDLCPU;
  x->ndim = 2;
  x->dtype.code = kDLFloat;
  x->dtype.bits = 32;
  x->dtype.lanes = 1;
  x->shape = p->shape;
}

/* A CPU tensor [2,3] of dtype holding no particular values. */
static ct_tensor *tensor_2x3(ct_dtype dtype) {
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(2, 3)), CT_OK);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, dtype, ct_cpu()));
  return t;
}

/* ---- Export ---------------------------------------------------------------------------------- */

START_TEST(to_dlpack_versioned_is_version_1_0_zero_copy) {
  ct_tensor *t = tensor_2x3(CT_FLOAT32);
  DLManagedTensorVersioned *m = NULL;
  ck_assert_int_eq(ct_tensor_to_dlpack_versioned(t, &m), CT_OK);
  ck_assert_uint_eq(m->version.major, 1);
  ck_assert_uint_eq(m->version.minor, 0);
  ck_assert_uint_eq(m->flags, 0);
  ck_assert_ptr_eq(m->dl_tensor.data, ct_tensor_data(t, CT_FLOAT32));
  ck_assert_int_eq(m->dl_tensor.ndim, 2);
  ck_assert_int_eq(m->dl_tensor.shape[0], 2);
  ck_assert_int_eq(m->dl_tensor.shape[1], 3);
  ck_assert_int_eq(m->dl_tensor.strides[0], 3);
  ck_assert_int_eq(m->dl_tensor.strides[1], 1);
  ck_assert_uint_eq(m->dl_tensor.dtype.code, kDLFloat);
  ck_assert_int_eq(m->dl_tensor.device.device_type, kDLCPU);
  ct_tensor_free(t);
  ck_assert_uint_eq(cpu_stats().frees, 0); /* the export keeps the memory */
  m->deleter(m);
  ck_assert_uint_eq(cpu_stats().frees, 1);
  ck_assert_uint_eq(cpu_stats().allocated, 0);
}
END_TEST

START_TEST(to_dlpack_versioned_writes_bool_as_kdlbool) {
  ct_tensor *t = tensor_2x3(CT_BOOL);
  DLManagedTensorVersioned *m = NULL;
  ck_assert_int_eq(ct_tensor_to_dlpack_versioned(t, &m), CT_OK);
  ck_assert_uint_eq(m->dl_tensor.dtype.code, CT_DLPACK_BOOL);
  ck_assert_uint_eq(m->dl_tensor.dtype.bits, 8);
  ck_assert_uint_eq(m->dl_tensor.dtype.lanes, 1);
  m->deleter(m);
  ct_tensor_free(t);
}
END_TEST

START_TEST(to_dlpack_versioned_null_arguments) {
  ct_tensor *t = tensor_2x3(CT_FLOAT32);
  DLManagedTensorVersioned *m = (DLManagedTensorVersioned *)&m;
  CT_ASSERT_FAILS(ct_tensor_to_dlpack_versioned(NULL, &m), CT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(m);
  CT_ASSERT_FAILS(ct_tensor_to_dlpack_versioned(t, NULL), CT_ERR_INVALID_ARGUMENT);
  ct_tensor *empty = ct_tensor_new();
  CT_ASSERT_FAILS(ct_tensor_to_dlpack_versioned(empty, &m), CT_ERR_UNINITIALIZED);
  ct_tensor_free(empty);
  ct_tensor_free(t);
}
END_TEST

/* ---- Import ---------------------------------------------------------------------------------- */

START_TEST(from_dlpack_versioned_views_and_deletes_once) {
  producer p;
  producer_init(&p, 0);
  ct_tensor *t = ct_tensor_new(), *v = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_from_dlpack_versioned(t, &p.m), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), p.data);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(2, 3)));
  ck_assert(!ct_tensor_is_read_only(t));
  float *w = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu());
  ck_assert_ptr_eq(w, p.data);
  w[4] = 40.0f; /* writes reach the producer */
  ck_assert(p.data[4] == 40.0f);
  ck_assert_int_eq(ct_tensor_share(v, t), CT_OK);
  ct_tensor_free(t);
  ck_assert_int_eq(p.deleted, 0);
  ct_tensor_free(v);
  ck_assert_int_eq(p.deleted, 1);
  ck_assert_uint_eq(cpu_stats().allocs, 0);
}
END_TEST

START_TEST(from_dlpack_versioned_refuses_another_major_version) {
  producer p;
  producer_init(&p, 0);
  p.m.version.major = 2;
  ct_tensor *t = ct_tensor_new();
  CT_ASSERT_FAILS(ct_tensor_from_dlpack_versioned(t, &p.m), CT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "2.3"));
  ck_assert_int_eq(p.deleted, 0);
  ck_assert(!ct_tensor_has_memory(t));
  CT_ASSERT_FAILS(ct_tensor_from_dlpack_versioned(NULL, &p.m), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_FAILS(ct_tensor_from_dlpack_versioned(t, NULL), CT_ERR_INVALID_ARGUMENT);
  ct_tensor_free(t);
}
END_TEST

START_TEST(from_dlpack_versioned_checks_the_tensor_as_the_old_form_does) {
  producer p;
  producer_init(&p, 0);
  p.m.dl_tensor.dtype.lanes = 4;
  ct_tensor *t = ct_tensor_new();
  CT_ASSERT_FAILS(ct_tensor_from_dlpack_versioned(t, &p.m), CT_ERR_UNSUPPORTED);
  ck_assert_int_eq(p.deleted, 0);
  p.m.dl_tensor.dtype.lanes = 1;
  p.m.dl_tensor.ndim = -1;
  CT_ASSERT_FAILS(ct_tensor_from_dlpack_versioned(t, &p.m), CT_ERR_FORMAT);
  ck_assert_int_eq(p.deleted, 0);
  ck_assert(!ct_tensor_has_memory(t));
  ct_tensor_free(t);
}
END_TEST

/* ---- Read-only ------------------------------------------------------------------------------- */

START_TEST(read_only_import_refuses_every_write) {
  producer p;
  producer_init(&p, DLPACK_FLAG_BITMASK_READ_ONLY);
  ct_tensor *t = ct_tensor_new(), *v = ct_tensor_new(), *src = tensor_2x3(CT_FLOAT32);
  ck_assert_int_eq(ct_tensor_from_dlpack_versioned(t, &p.m), CT_OK);
  ck_assert(ct_tensor_is_read_only(t));
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), p.data); /* reading is fine */
  ct_clear_error();
  ck_assert_ptr_null(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()));
  ck_assert_int_eq(ct_last_status(), CT_ERR_READ_ONLY);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "read-only"));
  CT_ASSERT_FAILS(ct_tensor_copy(t, src, ct_cpu()), CT_ERR_READ_ONLY);
  const float six[6] = {9, 9, 9, 9, 9, 9};
  CT_ASSERT_FAILS(ct_tensor_set_value(t, six, CT_DIMS(2, 3), CT_FLOAT32, ct_cpu()),
                  CT_ERR_READ_ONLY);
  /* Expressions write in place with every mode but CT_SAVETO (which would reallocate). */
  ct_expr *e = ct_expr_tensor(src);
  CT_ASSERT_FAILS(ct_expr_assign(t, CT_PLUSTO, e), CT_ERR_READ_ONLY);
  ct_expr_free(e);
  ck_assert_int_eq(ct_tensor_slice(v, t, 0, 1), CT_OK); /* views stay read-only */
  ck_assert(ct_tensor_is_read_only(v));
  ck_assert_ptr_null(ct_tensor_mutable_data(v, CT_FLOAT32, ct_cpu()));
  for (int i = 0; i < 6; i++) ck_assert(p.data[i] == (float)i);
  ct_tensor_free(v);
  ct_tensor_free(t);
  ct_tensor_free(src);
  ck_assert_int_eq(p.deleted, 1);
}
END_TEST

START_TEST(read_only_import_copies_into_a_writable_tensor) {
  producer p;
  producer_init(&p, DLPACK_FLAG_BITMASK_READ_ONLY);
  ct_tensor *t = ct_tensor_new(), *c = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_from_dlpack_versioned(t, &p.m), CT_OK);
  ck_assert_int_eq(ct_tensor_copy(c, t, ct_cpu()), CT_OK);
  ck_assert(!ct_tensor_is_read_only(c));
  float *w = ct_tensor_mutable_data(c, CT_FLOAT32, ct_cpu());
  ck_assert_ptr_nonnull(w);
  ck_assert(w[5] == 5.0f);
  ct_tensor_free(t);
  ct_tensor_free(c);
}
END_TEST

START_TEST(read_only_output_of_an_op_fails_the_op) {
  producer p;
  producer_init(&p, DLPACK_FLAG_BITMASK_READ_ONLY);
  ct_scope *s = ct_scope_new();
  ct_tensor *x = ct_var_tensor(ct_scope_var(s, "x"));
  ck_assert_int_eq(ct_tensor_resize(x, CT_DIMS(2, 3)), CT_OK);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(x, CT_FLOAT32, ct_cpu()));
  ck_assert_int_eq(ct_tensor_from_dlpack_versioned(ct_var_tensor(ct_scope_var(s, "out")), &p.m),
                   CT_OK);
  ct_op *op = op_xy("elementwise_add", "x", "x", "out");
  CT_ASSERT_FAILS(ct_op_run(op, s, ct_cpu()), CT_ERR_READ_ONLY);
  for (int i = 0; i < 6; i++) ck_assert(p.data[i] == (float)i);
  ct_op_free(op);
  ct_scope_free(s);
  ck_assert_int_eq(p.deleted, 1);
}
END_TEST

START_TEST(read_only_tensor_exports_with_the_flag_and_not_unversioned) {
  producer p;
  producer_init(&p, DLPACK_FLAG_BITMASK_READ_ONLY);
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_from_dlpack_versioned(t, &p.m), CT_OK);
  DLManagedTensorVersioned *m = NULL;
  ck_assert_int_eq(ct_tensor_to_dlpack_versioned(t, &m), CT_OK);
  ck_assert_uint_eq(m->flags, DLPACK_FLAG_BITMASK_READ_ONLY);
  ck_assert_ptr_eq(m->dl_tensor.data, p.data);
  DLManagedTensor *old = (DLManagedTensor *)&old;
  CT_ASSERT_FAILS(ct_tensor_to_dlpack(t, &old), CT_ERR_READ_ONLY);
  ck_assert_ptr_null(old);
  ct_tensor_free(t);
  ck_assert_int_eq(p.deleted, 0); /* the export still holds the memory */
  m->deleter(m);
  ck_assert_int_eq(p.deleted, 1);
}
END_TEST

START_TEST(versioned_round_trip_through_corten_shares_memory) {
  ct_tensor *a = tensor_2x3(CT_INT32), *b = ct_tensor_new();
  DLManagedTensorVersioned *m = NULL;
  ck_assert_int_eq(ct_tensor_to_dlpack_versioned(a, &m), CT_OK);
  ck_assert_int_eq(ct_tensor_from_dlpack_versioned(b, m), CT_OK);
  int32_t *pa = ct_tensor_mutable_data(a, CT_INT32, ct_cpu());
  pa[2] = 7;
  ck_assert_int_eq(((const int32_t *)ct_tensor_data(b, CT_INT32))[2], 7);
  ct_tensor_free(a);
  ct_tensor_free(b); /* runs the export's deleter, which frees the block */
  ck_assert_uint_eq(cpu_stats().allocated, 0);
}
END_TEST

/* A C test program has no CPython functions: the capsule destructor says so and leaves the
 * (fake) capsule alone; a NULL capsule sets no error. */
START_TEST(capsule_destructor_without_python_sets_an_error) {
  ct_clear_error();
  ct_dlpack_capsule_destructor(NULL);
  ck_assert_int_eq(ct_last_status(), CT_OK);
  int not_a_capsule = 0;
  ct_dlpack_capsule_destructor(&not_a_capsule);
  ck_assert_int_eq(ct_last_status(), CT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "leaked"));
  ck_assert_int_eq(not_a_capsule, 0);
}
END_TEST

static Suite *dlpack_versioned_suite(void) {
  Suite *s = suite_create("dlpack_versioned");
  CT_ADD_TEST(s, to_dlpack_versioned_is_version_1_0_zero_copy);
  CT_ADD_TEST(s, to_dlpack_versioned_writes_bool_as_kdlbool);
  CT_ADD_TEST(s, to_dlpack_versioned_null_arguments);
  CT_ADD_TEST(s, from_dlpack_versioned_views_and_deletes_once);
  CT_ADD_TEST(s, from_dlpack_versioned_refuses_another_major_version);
  CT_ADD_TEST(s, from_dlpack_versioned_checks_the_tensor_as_the_old_form_does);
  CT_ADD_TEST(s, read_only_import_refuses_every_write);
  CT_ADD_TEST(s, read_only_import_copies_into_a_writable_tensor);
  CT_ADD_TEST(s, read_only_output_of_an_op_fails_the_op);
  CT_ADD_TEST(s, read_only_tensor_exports_with_the_flag_and_not_unversioned);
  CT_ADD_TEST(s, versioned_round_trip_through_corten_shares_memory);
  CT_ADD_TEST(s, capsule_destructor_without_python_sets_an_error);
  return s;
}

CT_TEST_MAIN(dlpack_versioned_suite)
