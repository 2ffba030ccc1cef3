/* SPDX-License-Identifier: Apache-2.0 */
/* The misuse table: every public function of the headers in include/corten called with what a careless or
 * hostile caller passes (NULL, negative or huge dims, numel overflowing int64, byte sizes
 * overflowing size_t, rank past CT_MAX_RANK, dtype and place values outside their enums, names
 * that are NULL or empty) must return the status its header documents, record the same status as
 * the thread's last error, and change nothing. One test walks the whole table and lists every
 * row that disagrees; the ASan build checks that no row crashes, reads out of bounds or leaks.
 *
 * Kernel-side helpers (ct_kernel_in_name, ct_kernel_fail) take a context only corten builds and
 * are not in the table. */
#define _GNU_SOURCE /* mkdtemp, setrlimit */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <corten/corten.h>

#include "harness.h"

/* A huge mutable_data must come back as CT_ERR_OUT_OF_MEMORY, also under AddressSanitizer,
 * whose allocator otherwise aborts on a request it cannot serve. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

static int rows, bad;
static char report[16384];

static void note(int line, const char *expr, const char *why) {
  size_t used = strlen(report);
  bad++;
  if (used < sizeof report - 1) {
    snprintf(report + used, sizeof report - used, "\n  line %d: %s: %s (last error: %s)", line,
             expr, why, ct_last_error());
  }
}

/* A ct_status call: returns want, and the last status says want too. */
#define S(want, expr)                                                                  \
  do {                                                                                 \
    rows++;                                                                            \
    ct_clear_error();                                                                  \
    ct_status got_ = (expr);                                                           \
    char why_[96];                                                                     \
    if (got_ != (want) || ct_last_status() != (want)) {                                \
      snprintf(why_, sizeof why_, "returned %d, last status %d, documented %d", got_,  \
               ct_last_status(), (want));                                              \
      note(__LINE__, #expr, why_);                                                     \
    }                                                                                  \
  } while (0)

/* A pointer-returning call: NULL, and the last status is want. */
#define P(want, expr)                                                                         \
  do {                                                                                        \
    rows++;                                                                                   \
    ct_clear_error();                                                                         \
    const void *got_ = (expr);                                                                \
    char why_[96];                                                                            \
    if (got_ != NULL || ct_last_status() != (want)) {                                         \
      snprintf(why_, sizeof why_, "returned %s, last status %d, documented NULL and %d",      \
               got_ == NULL ? "NULL" : "non-NULL", ct_last_status(), (want));                 \
      note(__LINE__, #expr, why_);                                                            \
    }                                                                                         \
  } while (0)

/* Anything else: the statement runs, then cond holds and the last status is want (CT_OK for a
 * documented no-op). */
#define V(want, stmt, cond)                                                          \
  do {                                                                               \
    rows++;                                                                          \
    ct_clear_error();                                                                \
    stmt;                                                                            \
    char why_[96];                                                                   \
    if (!(cond) || ct_last_status() != (want)) {                                     \
      snprintf(why_, sizeof why_, "%s, last status %d, documented %d",               \
               (cond) ? "value right" : "value wrong", ct_last_status(), (want));    \
      note(__LINE__, #stmt " => " #cond, why_);                                      \
    }                                                                                \
  } while (0)

#define OK CT_OK
#define INVAL CT_ERR_INVALID_ARGUMENT
#define OOR CT_ERR_OUT_OF_RANGE

static int released; /* counted by count_release (harness.h) */

static ct_status null_kernel(const ct_kernel_ctx *c) {
  (void)c;
  return CT_OK;
}

static char tmpdir[64];

static bool dims_are(const ct_tensor *t, ct_ddim d) { return ct_ddim_equal(ct_tensor_dims(t), d); }

START_TEST(every_public_function_refuses_misuse_as_documented) {
  /* ---- Fixtures -------------------------------------------------------------------------- */
  const ct_place bad_place = {(ct_device_kind)99, 0};
  const ct_place neg_cuda = ct_cuda(-1);
  const ct_place far_cuda = ct_cuda(64); /* no such device, or no CUDA in this build */
  const ct_status far_cuda_status = ct_cuda_is_built() ? CT_ERR_DEVICE : CT_ERR_UNSUPPORTED;
  const ct_dtype bad_dtype = (ct_dtype)99;
  const int64_t ten[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  const ct_ddim unset = ct_ddim_make(NULL, -1);
  const ct_ddim rank10 = ct_ddim_make(ten, 10);
  const ct_ddim negative = CT_DIMS(2, -3);
  const ct_ddim numel_overflow = CT_DIMS(INT64_MAX, 2);                  /* > INT64_MAX elements */
  const ct_ddim bytes_overflow = CT_DIMS((int64_t)1 << 61, 4);           /* x 8 bytes > SIZE_MAX */
  const ct_ddim huge_alloc = CT_DIMS((int64_t)1 << 58);                  /* 2^61 bytes as f64 */
  float six[6] = {0, 1, 2, 3, 4, 5};
  ct_tensor *T = ct_tensor_new(); /* float32 [2,3] with memory */
  ck_assert_int_eq(ct_tensor_set_value(T, six, CT_DIMS(2, 3), CT_FLOAT32, ct_cpu()), CT_OK);
  ct_tensor *E = ct_tensor_new(); /* new: unset dims, no memory */
  ct_tensor *D = ct_tensor_new(); /* destination of views and copies */
  ct_tensor *G = ct_tensor_new(); /* dims grown past its capacity */
  ck_assert_int_eq(ct_tensor_set_value(G, six, CT_DIMS(2), CT_FLOAT32, ct_cpu()), CT_OK);
  ck_assert_int_eq(ct_tensor_resize(G, CT_DIMS(1000)), CT_OK);
  ct_tensor *Z = ct_tensor_new(); /* a scalar with memory */
  ck_assert_int_eq(ct_tensor_set_value(Z, six, CT_DIMS(), CT_FLOAT32, ct_cpu()), CT_OK);
  ct_scope *S = ct_scope_new();
  ck_assert_ptr_nonnull(ct_var_tensor(ct_scope_var(S, "t")));
  ck_assert_int_eq(ct_tensor_set_value(ct_var_tensor(ct_scope_var(S, "t")), six, CT_DIMS(6),
                                       CT_FLOAT32, ct_cpu()),
                   CT_OK);
  ck_assert_ptr_nonnull(ct_var_get_mutable(ct_scope_var(S, "i"), &ct_int64_type));
  ck_assert_ptr_nonnull(ct_scope_var(S, "empty"));
  ck_assert_ptr_nonnull(ct_var_tensor(ct_scope_var(S, "nomem")));
  ct_var *V = ct_var_new();
  ck_assert_ptr_nonnull(ct_var_get_mutable(V, &ct_int64_type));
  static const ct_type zero_size = {"zero", 0, 0, NULL, NULL};
  static const ct_type bad_align = {"odd", 8, 3, NULL, NULL};
  strcpy(tmpdir, "misuse-test-XXXXXX"); /* under the working directory */
  ck_assert_ptr_nonnull(mkdtemp(tmpdir));
  char path[128], nodir[160];
  snprintf(path, sizeof path, "%s/p.params", tmpdir);
  snprintf(nodir, sizeof nodir, "%s/no/such/dir/p.params", tmpdir);
  ct_op *OP = ct_op_new("scale");
  ck_assert_ptr_nonnull(OP);
  ct_program *PR = ct_program_new();
  ck_assert_ptr_nonnull(PR);
  ct_memory_stats st;
  ct_allocator no_alloc = {NULL, NULL, NULL};
  char buf[64];
  DLManagedTensor *dl = (DLManagedTensor *)1;
  int64_t shape[CT_MAX_RANK + 2] = {2, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  float dldata[6];
  DLManagedTensor m;
  const char *two[] = {"a", "b"};
  const char *with_null[] = {"t", NULL};
  const char *with_empty[] = {"t", ""};
  const char *twice[] = {"t", "t"};
  const char *missing[] = {"missing"};
  const char *holds_int[] = {"i"};
  const char *holds_nothing[] = {"empty"};
  const char *no_memory[] = {"nomem"};
  const char *out[4];

  /* ---- status.h, types.h ----------------------------------------------------------------- */
  V(OK, (void)0, strcmp(ct_status_str((ct_status)42), "unknown status") == 0);
  V(OK, (void)0, ct_last_error() != NULL);
  V(OK, (void)0, ct_dtype_size(bad_dtype) == 0 && ct_dtype_size(CT_DTYPE_UNDEFINED) == 0);
  V(OK, (void)0, ct_dtype_size((ct_dtype)-1) == 0);
  V(OK, (void)0, strcmp(ct_dtype_name(bad_dtype), "invalid") == 0);
  V(OK, (void)0, strcmp(ct_dtype_name((ct_dtype)-1), "invalid") == 0);
  V(OK, (void)0, strcmp(ct_place_str(bad_place, buf, sizeof buf), "invalid place (kind 99)") == 0);
  V(OK, buf[0] = 'x', ct_place_str(ct_cpu(), buf, 0) == buf && buf[0] == 'x');
  V(OK, (void)0, strcmp(ct_place_str(ct_cpu(), buf, 2), "c") == 0);
  V(OK, (void)0, !ct_place_equal(bad_place, ct_cpu()));
  V(OK, (void)0, ct_ddim_make(NULL, -5).rank == -1);
  V(OK, (void)0, ct_ddim_make(ten, 10).rank == 10);
  V(OK, (void)0, ct_ddim_make(NULL, 0).rank == 0);
  V(OK, (void)0, ct_ddim_numel(unset) == -1 && ct_ddim_numel(rank10) == -1);
  V(OK, (void)0, ct_ddim_numel(negative) == -1 && ct_ddim_numel(numel_overflow) == -1);
  V(OK, (void)0, ct_ddim_numel(CT_DIMS(INT64_MAX, 0)) == 0);
  V(OK, (void)0, strcmp(ct_ddim_str(unset, buf, sizeof buf), "unset") == 0);
  V(OK, ct_ddim_str(rank10, buf, sizeof buf), strlen(buf) < sizeof buf);
  V(OK, ct_ddim_str(CT_DIMS(INT64_MAX, INT64_MIN, -1), buf, 8), strlen(buf) == 7);
  V(OK, buf[0] = 'x', ct_ddim_str(CT_DIMS(2), buf, 0) == buf && buf[0] == 'x');
  V(OK, (void)0, !ct_ddim_equal(unset, rank10));
  V(OK, (void)0, ct_cuda_device_count() >= 0);

  /* ---- memory.h -------------------------------------------------------------------------- */
  S(INVAL, ct_memory_stats_get(ct_cpu(), NULL));
  S(INVAL, ct_memory_stats_get(bad_place, &st));
  S(INVAL, ct_memory_stats_get(neg_cuda, &st));
  S(far_cuda_status == CT_ERR_DEVICE ? CT_ERR_DEVICE : CT_ERR_UNSUPPORTED,
    ct_memory_stats_get(far_cuda, &st));
  V(OK, ct_memory_reset_peak(bad_place), true);
  S(INVAL, ct_set_allocator(bad_place, NULL));
  S(INVAL, ct_set_allocator(ct_cpu(), &no_alloc));

  /* ---- tensor.h -------------------------------------------------------------------------- */
  V(OK, ct_tensor_free(NULL), true);
  S(INVAL, ct_tensor_resize(NULL, CT_DIMS(2)));
  S(INVAL, ct_tensor_resize(T, unset));
  S(OOR, ct_tensor_resize(T, rank10));
  S(INVAL, ct_tensor_resize(T, negative));
  S(OOR, ct_tensor_resize(T, numel_overflow));
  S(OOR, ct_tensor_resize(T, bytes_overflow));
  V(OK, (void)0, dims_are(T, CT_DIMS(2, 3)));
  P(INVAL, ct_tensor_mutable_data(NULL, CT_FLOAT32, ct_cpu()));
  P(INVAL, ct_tensor_mutable_data(T, CT_DTYPE_UNDEFINED, ct_cpu()));
  P(INVAL, ct_tensor_mutable_data(T, bad_dtype, ct_cpu()));
  P(INVAL, ct_tensor_mutable_data(T, (ct_dtype)-3, ct_cpu()));
  P(INVAL, ct_tensor_mutable_data(T, CT_FLOAT32, bad_place));
  P(INVAL, ct_tensor_mutable_data(T, CT_FLOAT32, neg_cuda));
  P(far_cuda_status, ct_tensor_mutable_data(T, CT_FLOAT32, far_cuda));
  P(CT_ERR_SHAPE, ct_tensor_mutable_data(E, CT_FLOAT32, ct_cpu()));
  S(OK, ct_tensor_resize(D, huge_alloc));
  P(CT_ERR_OUT_OF_MEMORY, ct_tensor_mutable_data(D, CT_FLOAT64, ct_cpu()));
  V(OK, (void)0, !ct_tensor_has_memory(D) && dims_are(D, huge_alloc));
  V(OK, (void)0, dims_are(T, CT_DIMS(2, 3)) && ct_tensor_dtype(T) == CT_FLOAT32);
  P(INVAL, ct_tensor_data(NULL, CT_FLOAT32));
  P(CT_ERR_UNINITIALIZED, ct_tensor_data(E, CT_FLOAT32));
  P(CT_ERR_TYPE_MISMATCH, ct_tensor_data(T, CT_INT64));
  P(CT_ERR_TYPE_MISMATCH, ct_tensor_data(T, bad_dtype));
  P(OOR, ct_tensor_data(G, CT_FLOAT32));
  V(OK, (void)0, ct_tensor_dims(NULL).rank == -1 && ct_tensor_dtype(NULL) == CT_DTYPE_UNDEFINED);
  V(OK, (void)0, ct_place_equal(ct_tensor_place(NULL), ct_cpu()) && ct_tensor_numel(NULL) == -1);
  V(OK, (void)0, !ct_tensor_has_memory(NULL) && !ct_tensor_is_external(NULL));
  V(OK, (void)0, ct_tensor_capacity(NULL) == 0 && !ct_tensor_shares_memory(NULL, NULL));
  V(OK, (void)0, !ct_tensor_shares_memory(T, NULL) && ct_tensor_numel(E) == -1);
  S(INVAL, ct_tensor_share(NULL, T));
  S(INVAL, ct_tensor_share(D, NULL));
  S(CT_ERR_UNINITIALIZED, ct_tensor_share(D, E));
  S(OOR, ct_tensor_share(D, G));
  S(INVAL, ct_tensor_slice(NULL, T, 0, 1));
  S(INVAL, ct_tensor_slice(D, NULL, 0, 1));
  S(CT_ERR_UNINITIALIZED, ct_tensor_slice(D, E, 0, 0));
  S(OOR, ct_tensor_slice(D, T, -1, 1));
  S(OOR, ct_tensor_slice(D, T, 1, 0));
  S(OOR, ct_tensor_slice(D, T, 0, 3));
  S(OOR, ct_tensor_slice(D, T, INT64_MAX, INT64_MAX));
  S(OOR, ct_tensor_slice(D, T, INT64_MIN, 1));
  S(OOR, ct_tensor_slice(D, Z, 0, 0));
  S(OOR, ct_tensor_slice(D, G, 0, 1));
  S(INVAL, ct_tensor_flatten_to_2d(NULL, T, 1));
  S(INVAL, ct_tensor_flatten_to_2d(D, NULL, 1));
  S(CT_ERR_UNINITIALIZED, ct_tensor_flatten_to_2d(D, E, 0));
  S(OOR, ct_tensor_flatten_to_2d(D, T, -1));
  S(OOR, ct_tensor_flatten_to_2d(D, T, 3));
  S(OOR, ct_tensor_flatten_to_2d(D, T, INT32_MIN));
  V(OK, (void)0, dims_are(D, huge_alloc) && !ct_tensor_has_memory(D));
  released = 0;
  S(INVAL,
    ct_tensor_wrap(NULL, dldata, CT_DIMS(6), CT_FLOAT32, ct_cpu(), count_release, &released));
  S(INVAL, ct_tensor_wrap(D, NULL, CT_DIMS(6), CT_FLOAT32, ct_cpu(), count_release, &released));
  S(INVAL, ct_tensor_wrap(D, dldata, unset, CT_FLOAT32, ct_cpu(), count_release, &released));
  S(INVAL, ct_tensor_wrap(D, dldata, negative, CT_FLOAT32, ct_cpu(), count_release, &released));
  S(OOR, ct_tensor_wrap(D, dldata, rank10, CT_FLOAT32, ct_cpu(), count_release, &released));
  S(OOR, ct_tensor_wrap(D, dldata, numel_overflow, CT_FLOAT32, ct_cpu(), count_release, &released));
  S(OOR, ct_tensor_wrap(D, dldata, bytes_overflow, CT_FLOAT32, ct_cpu(), count_release, &released));
  S(INVAL, ct_tensor_wrap(D, dldata, CT_DIMS(6), CT_DTYPE_UNDEFINED, ct_cpu(), count_release,
                          &released));
  S(INVAL, ct_tensor_wrap(D, dldata, CT_DIMS(6), bad_dtype, ct_cpu(), count_release, &released));
  S(INVAL, ct_tensor_wrap(D, dldata, CT_DIMS(6), CT_FLOAT32, bad_place, count_release, &released));
  S(INVAL, ct_tensor_wrap(D, dldata, CT_DIMS(6), CT_FLOAT32, neg_cuda, count_release, &released));
  S(far_cuda_status,
    ct_tensor_wrap(D, dldata, CT_DIMS(6), CT_FLOAT32, far_cuda, count_release, &released));
  V(OK, (void)0, released == 0 && !ct_tensor_is_external(D) && dims_are(D, huge_alloc));
  S(INVAL, ct_tensor_copy(NULL, T, ct_cpu()));
  S(INVAL, ct_tensor_copy(D, NULL, ct_cpu()));
  S(INVAL, ct_tensor_copy(D, T, bad_place));
  S(INVAL, ct_tensor_copy(D, T, neg_cuda));
  S(far_cuda_status, ct_tensor_copy(D, T, far_cuda));
  S(CT_ERR_UNINITIALIZED, ct_tensor_copy(D, E, ct_cpu()));
  S(OOR, ct_tensor_copy(D, G, ct_cpu()));
  S(INVAL, ct_tensor_set_value(NULL, six, CT_DIMS(6), CT_FLOAT32, ct_cpu()));
  S(INVAL, ct_tensor_set_value(D, NULL, CT_DIMS(6), CT_FLOAT32, ct_cpu()));
  S(INVAL, ct_tensor_set_value(D, six, unset, CT_FLOAT32, ct_cpu()));
  S(INVAL, ct_tensor_set_value(D, six, negative, CT_FLOAT32, ct_cpu()));
  S(OOR, ct_tensor_set_value(D, six, rank10, CT_FLOAT32, ct_cpu()));
  S(OOR, ct_tensor_set_value(D, six, numel_overflow, CT_FLOAT32, ct_cpu()));
  S(OOR, ct_tensor_set_value(D, six, bytes_overflow, CT_FLOAT32, ct_cpu()));
  S(INVAL, ct_tensor_set_value(D, six, CT_DIMS(6), CT_DTYPE_UNDEFINED, ct_cpu()));
  S(INVAL, ct_tensor_set_value(D, six, CT_DIMS(6), bad_dtype, ct_cpu()));
  S(INVAL, ct_tensor_set_value(D, six, CT_DIMS(6), CT_FLOAT32, bad_place));
  V(OK, (void)0, dims_are(D, huge_alloc) && !ct_tensor_has_memory(D));
  V(OK, ct_tensor_move(NULL, T), dims_are(T, CT_DIMS(2, 3)));
  V(OK, ct_tensor_move(T, NULL), dims_are(T, CT_DIMS(2, 3)) && ct_tensor_has_memory(T));
  V(OK, ct_tensor_move(T, T), dims_are(T, CT_DIMS(2, 3)) && ct_tensor_has_memory(T));

  /* ---- dlpack.h -------------------------------------------------------------------------- */
  S(INVAL, ct_tensor_to_dlpack(NULL, &dl));
  V(OK, (void)0, dl == NULL);
  S(INVAL, ct_tensor_to_dlpack(T, NULL));
  dl = (DLManagedTensor *)1;
  S(CT_ERR_UNINITIALIZED, ct_tensor_to_dlpack(E, &dl));
  V(OK, (void)0, dl == NULL);
  S(OOR, ct_tensor_to_dlpack(G, &dl));
#define DL_RESET()                                                             \
  do {                                                                         \
    memset(&m, 0, sizeof m);                                                   \
    m.dl_tensor.data = dldata;                                                 \
    m.dl_tensor.device.device_type = kDLCPU;                                   \
    m.dl_tensor.ndim = 2;                                                      \
    m.dl_tensor.dtype.code = kDLFloat;                                         \
    m.dl_tensor.dtype.bits = 32;                                               \
    m.dl_tensor.dtype.lanes = 1;                                               \
    m.dl_tensor.shape = shape;                                                 \
  } while (0)
  DL_RESET();
  S(INVAL, ct_tensor_from_dlpack(NULL, &m));
  S(INVAL, ct_tensor_from_dlpack(D, NULL));
  DL_RESET(); m.dl_tensor.ndim = -1;
  S(CT_ERR_FORMAT, ct_tensor_from_dlpack(D, &m));
  DL_RESET(); m.dl_tensor.ndim = CT_MAX_RANK + 1;
  S(OOR, ct_tensor_from_dlpack(D, &m));
  DL_RESET(); m.dl_tensor.ndim = INT32_MAX;
  S(OOR, ct_tensor_from_dlpack(D, &m));
  DL_RESET(); m.dl_tensor.shape = NULL;
  S(CT_ERR_FORMAT, ct_tensor_from_dlpack(D, &m));
  DL_RESET(); m.dl_tensor.data = NULL;
  S(CT_ERR_FORMAT, ct_tensor_from_dlpack(D, &m));
  {
    int64_t neg[2] = {2, -3}, big[2] = {INT64_MAX, 2}, bytes[2] = {(int64_t)1 << 62, 2};
    DL_RESET(); m.dl_tensor.shape = neg;
    S(CT_ERR_FORMAT, ct_tensor_from_dlpack(D, &m));
    DL_RESET(); m.dl_tensor.shape = big;
    S(OOR, ct_tensor_from_dlpack(D, &m));
    DL_RESET(); m.dl_tensor.shape = bytes;
    S(OOR, ct_tensor_from_dlpack(D, &m));
  }
  DL_RESET(); m.dl_tensor.dtype.lanes = 4;
  S(CT_ERR_UNSUPPORTED, ct_tensor_from_dlpack(D, &m));
  DL_RESET(); m.dl_tensor.dtype.code = 200;
  S(CT_ERR_FORMAT, ct_tensor_from_dlpack(D, &m));
  DL_RESET(); m.dl_tensor.dtype.bits = 24;
  S(CT_ERR_UNSUPPORTED, ct_tensor_from_dlpack(D, &m));
  DL_RESET(); m.dl_tensor.device.device_type = (DLDeviceType)99;
  S(CT_ERR_UNSUPPORTED, ct_tensor_from_dlpack(D, &m));
  DL_RESET(); m.dl_tensor.data = (char *)dldata + 1;
  S(CT_ERR_UNSUPPORTED, ct_tensor_from_dlpack(D, &m));
  DL_RESET(); m.dl_tensor.byte_offset = UINT64_MAX - 2;
  S(CT_ERR_FORMAT, ct_tensor_from_dlpack(D, &m));
  V(OK, (void)0, dims_are(D, huge_alloc) && !ct_tensor_is_external(D));

  /* ---- variable.h ------------------------------------------------------------------------ */
  V(OK, ct_var_free(NULL), true);
  V(INVAL, ct_var_free(ct_scope_find_var(S, "t")), ct_scope_find_var(S, "t") != NULL);
  P(INVAL, (ct_var_get_mutable)(NULL, &ct_int64_type));
  P(INVAL, (ct_var_get_mutable)(V, NULL));
  P(INVAL, (ct_var_get_mutable)(ct_scope_find_var(S, "empty"), &zero_size));
  P(INVAL, (ct_var_get_mutable)(ct_scope_find_var(S, "empty"), &bad_align));
  P(CT_ERR_TYPE_MISMATCH, (ct_var_get_mutable)(V, &ct_tensor_type));
  P(INVAL, ct_var_get_mutable(NULL, &ct_int64_type));
  P(INVAL, ct_var_get_mutable(V, NULL));
  P(INVAL, (ct_var_get)(NULL, &ct_int64_type));
  P(INVAL, (ct_var_get)(V, NULL));
  P(CT_ERR_UNINITIALIZED, (ct_var_get)(ct_scope_find_var(S, "empty"), &ct_int64_type));
  P(CT_ERR_TYPE_MISMATCH, (ct_var_get)(V, &ct_tensor_type));
  P(INVAL, ct_var_get(NULL, &ct_int64_type));
  P(INVAL, (ct_var_tensor)(NULL));
  P(INVAL, (ct_var_get_tensor)(NULL));
  P(CT_ERR_TYPE_MISMATCH, ct_var_tensor(V));
  P(CT_ERR_TYPE_MISMATCH, ct_var_get_tensor(V));
  V(OK, (void)0, !ct_var_is(NULL, &ct_int64_type) && !ct_var_is(V, NULL));
  V(OK, (void)0, ct_var_type(NULL) == NULL && strcmp(ct_var_name(NULL), "") == 0);
  V(OK, (void)0, strcmp(ct_var_name(V), "") == 0);
  V(OK, ct_var_clear(NULL), true);
  V(OK, ct_var_clear(ct_scope_find_var(S, "empty")), ct_var_type(ct_scope_find_var(S, "empty")) == NULL);

  /* ---- scope.h --------------------------------------------------------------------------- */
  P(INVAL, ct_scope_new_kid(NULL));
  V(OK, ct_scope_free(NULL), true);
  V(OK, ct_scope_drop_kids(NULL), true);
  V(OK, (void)0, !ct_scope_has_kid(NULL, NULL) && !ct_scope_has_kid(S, NULL));
  V(OK, (void)0, ct_scope_parent(NULL) == NULL && ct_scope_parent(S) == NULL);
  P(INVAL, ct_scope_var(NULL, "a"));
  P(INVAL, ct_scope_var(S, NULL));
  P(INVAL, ct_scope_var(S, ""));
  P(INVAL, ct_scope_find_var(NULL, "t"));
  P(INVAL, ct_scope_find_var(S, NULL));
  P(INVAL, ct_scope_find_var(S, ""));
  P(CT_ERR_NOT_FOUND, ct_scope_find_var(S, "missing"));
  P(INVAL, ct_scope_find_local_var(NULL, "t"));
  P(INVAL, ct_scope_find_local_var(S, NULL));
  P(INVAL, ct_scope_find_local_var(S, ""));
  P(CT_ERR_NOT_FOUND, ct_scope_find_local_var(S, "missing"));
  P(INVAL, ct_scope_find_scope(NULL, "t"));
  P(INVAL, ct_scope_find_scope(S, NULL));
  P(INVAL, ct_scope_find_scope(S, ""));
  P(CT_ERR_NOT_FOUND, ct_scope_find_scope(S, "missing"));
  V(INVAL, size_t n = ct_scope_erase_vars(NULL, two, 2), n == 0);
  V(INVAL, size_t n = ct_scope_erase_vars(S, NULL, 1), n == 0);
  V(OK, size_t n = ct_scope_erase_vars(S, NULL, 0), n == 0);
  V(OK, size_t n = ct_scope_erase_vars(S, missing, 1), n == 0);
  V(OK, size_t n = ct_scope_erase_vars(S, (const char *[]){NULL, ""}, 2), n == 0);
  S(INVAL, ct_scope_rename(NULL, "t", "u"));
  S(INVAL, ct_scope_rename(S, NULL, "u"));
  S(INVAL, ct_scope_rename(S, "t", NULL));
  S(INVAL, ct_scope_rename(S, "", "u"));
  S(INVAL, ct_scope_rename(S, "t", ""));
  S(CT_ERR_NOT_FOUND, ct_scope_rename(S, "missing", "u"));
  S(CT_ERR_ALREADY_EXISTS, ct_scope_rename(S, "t", "i"));
  V(OK, (void)0, ct_scope_var_count(NULL) == 0 && ct_scope_var_count(S) == 4);
  V(INVAL, (void)0, ct_scope_local_var_names(NULL, out, 4) == 0); /* recorded, header silent */
  V(INVAL, (void)0, ct_scope_local_var_names(S, NULL, 4) == 0);
  V(OK, (void)0, ct_scope_local_var_names(S, NULL, 0) == 4);

  /* ---- params.h -------------------------------------------------------------------------- */
  S(INVAL, ct_params_save(NULL, S, NULL, 0));
  S(INVAL, ct_params_save("", S, NULL, 0));
  S(INVAL, ct_params_save(path, NULL, NULL, 0));
  S(INVAL, ct_params_save(path, S, with_null, 2));
  S(INVAL, ct_params_save(path, S, with_empty, 2));
  S(INVAL, ct_params_save(path, S, twice, 2));
  S(CT_ERR_NOT_FOUND, ct_params_save(path, S, missing, 1));
  S(CT_ERR_TYPE_MISMATCH, ct_params_save(path, S, holds_int, 1));
  S(CT_ERR_UNINITIALIZED, ct_params_save(path, S, holds_nothing, 1));
  S(CT_ERR_UNINITIALIZED, ct_params_save(path, S, no_memory, 1));
  S(CT_ERR_UNINITIALIZED, ct_params_save(path, S, NULL, 0)); /* "nomem" is not left out */
  S(CT_ERR_IO, ct_params_save(nodir, S, (const char *[]){"t"}, 1));
  V(OK, (void)0, access(path, F_OK) != 0);
  S(INVAL, ct_params_load(NULL, S));
  S(INVAL, ct_params_load(path, NULL));
  S(CT_ERR_IO, ct_params_load(path, S));
  S(CT_ERR_IO, ct_params_load(tmpdir, S));
  S(CT_ERR_FORMAT, ct_params_load_memory(NULL, 0, S));
  S(INVAL, ct_params_load_memory(NULL, 8, S));
  S(INVAL, ct_params_load_memory(six, sizeof six, NULL));
  S(CT_ERR_FORMAT, ct_params_load_memory(six, sizeof six, S));
  S(INVAL, ct_tensor_save(path, NULL));
  S(INVAL, ct_tensor_save(NULL, T));
  S(INVAL, ct_tensor_save("", T));
  S(CT_ERR_UNINITIALIZED, ct_tensor_save(path, E));
  S(OOR, ct_tensor_save(path, G));
  S(CT_ERR_IO, ct_tensor_save(nodir, T));
  S(INVAL, ct_tensor_load(NULL, D));
  S(INVAL, ct_tensor_load(path, NULL));
  S(CT_ERR_IO, ct_tensor_load(path, D));
  S(INVAL, ct_tensor_load_memory(six, sizeof six, NULL));
  S(INVAL, ct_tensor_load_memory(NULL, 8, D));
  S(CT_ERR_FORMAT, ct_tensor_load_memory(NULL, 0, D));
  V(OK, (void)0, ct_scope_var_count(S) == 4 && dims_are(D, huge_alloc));

  /* ---- op.h ------------------------------------------------------------------------------ */
  P(INVAL, ct_op_new(NULL));
  P(INVAL, ct_op_new(""));
  P(CT_ERR_NOT_FOUND, ct_op_new("no_such_op"));
  V(OK, ct_op_free(NULL), true);
  V(OK, (void)0, strcmp(ct_op_type(NULL), "") == 0);
  S(INVAL, ct_op_set_inputs(NULL, "X", two, 1));
  S(INVAL, ct_op_set_inputs(OP, NULL, two, 1));
  S(INVAL, ct_op_set_inputs(OP, "X", NULL, 1));
  S(INVAL, ct_op_set_inputs(OP, "X", with_null + 1, 1));
  S(INVAL, ct_op_set_inputs(OP, "X", with_empty + 1, 1));
  S(CT_ERR_NOT_FOUND, ct_op_set_inputs(OP, "Nope", two, 1));
  S(INVAL, ct_op_set_inputs(OP, "X", two, 2));
  S(INVAL, ct_op_set_outputs(NULL, "Out", two, 1));
  S(INVAL, ct_op_set_outputs(OP, NULL, two, 1));
  S(INVAL, ct_op_set_outputs(OP, "Out", NULL, 1));
  S(CT_ERR_NOT_FOUND, ct_op_set_outputs(OP, "X", two, 1));
  S(INVAL, ct_op_set_outputs(OP, "Out", two, 2));
  S(INVAL, ct_op_set_input(NULL, "X", "a"));
  S(INVAL, ct_op_set_input(OP, "X", NULL));
  S(INVAL, ct_op_set_input(OP, "X", ""));
  S(INVAL, ct_op_set_output(OP, NULL, "a"));
  S(INVAL, ct_op_set_output(OP, "Out", NULL));
  S(INVAL, ct_op_set_attr_int(NULL, "scale", 1));
  S(INVAL, ct_op_set_attr_int(OP, NULL, 1));
  S(CT_ERR_NOT_FOUND, ct_op_set_attr_int(OP, "nope", 1));
  S(CT_ERR_TYPE_MISMATCH, ct_op_set_attr_bool(OP, "scale", true));
  S(CT_ERR_TYPE_MISMATCH, ct_op_set_attr_string(OP, "scale", "x"));
  S(INVAL, ct_op_set_attr_float(NULL, "scale", 1));
  S(INVAL, ct_op_set_attr_bool(OP, NULL, true));
  S(INVAL, ct_op_set_attr_string(NULL, "scale", "x"));
  S(INVAL, ct_op_set_attr_ints(NULL, "scale", NULL, 0));
  S(INVAL, ct_op_set_attr_floats(OP, NULL, NULL, 0));
  S(CT_ERR_TYPE_MISMATCH, ct_op_set_attr_ints(OP, "scale", NULL, 0));
  S(INVAL, ct_op_set_attr_program(NULL, "body", ct_program_new())); /* freed, not leaked */
  S(INVAL, ct_op_set_attr_program(OP, NULL, ct_program_new()));
  S(CT_ERR_NOT_FOUND, ct_op_set_attr_program(OP, "nope", ct_program_new()));
  S(INVAL, ct_op_run(NULL, S, ct_cpu()));
  S(INVAL, ct_op_run(OP, NULL, ct_cpu()));
  S(INVAL, ct_op_run(OP, S, bad_place));
  V(OK, (void)0, strcmp(ct_attr_type_name((ct_attr_type)99), "unknown") == 0);
  V(OK, (void)0, strcmp(ct_attr_type_name((ct_attr_type)-1), "unknown") == 0);
  S(INVAL, ct_op_register(NULL));
  S(INVAL, ct_op_register(&(ct_op_def){.type = NULL}));
  S(INVAL, ct_op_register(&(ct_op_def){.type = ""}));
  S(INVAL, ct_op_register(&(ct_op_def){.type = "misuse_op", .inputs = NULL, .n_inputs = 2}));
  S(CT_ERR_ALREADY_EXISTS, ct_op_register(&(ct_op_def){.type = "relu"}));
  S(CT_ERR_NOT_FOUND, ct_kernel_register("no_such_op", CT_DEVICE_CPU, CT_FLOAT32, null_kernel));
  S(INVAL, ct_kernel_register(NULL, CT_DEVICE_CPU, CT_FLOAT32, null_kernel));
  S(INVAL, ct_kernel_register("relu", (ct_device_kind)99, CT_FLOAT32, null_kernel));
  S(INVAL, ct_kernel_register("relu", (ct_device_kind)-1, CT_FLOAT32, null_kernel));
  S(INVAL, ct_kernel_register("relu", CT_DEVICE_CPU, bad_dtype, null_kernel));
  S(INVAL, ct_kernel_register("relu", CT_DEVICE_CPU, (ct_dtype)-1, null_kernel));
  S(INVAL, ct_kernel_register("relu", CT_DEVICE_CPU, CT_FLOAT32, NULL));
  S(CT_ERR_ALREADY_EXISTS, ct_kernel_register("relu", CT_DEVICE_CPU, CT_FLOAT32, null_kernel));
  V(OK, (void)0, !ct_op_registered(NULL) && !ct_op_registered("") && !ct_op_registered("x?"));

  /* ---- program.h ------------------------------------------------------------------------- */
  S(INVAL, ct_program_append(NULL, ct_op_new("relu"))); /* the op is freed */
  S(INVAL, ct_program_append(PR, NULL));
  V(OK, ct_program_free(NULL), true);
  V(OK, (void)0, ct_program_size(NULL) == 0 && ct_program_op(NULL, 0) == NULL);
  V(OK, (void)0, ct_program_op(PR, 0) == NULL && ct_program_op(PR, SIZE_MAX) == NULL);
  P(INVAL, ct_executor_new(NULL, S, ct_cpu()));
  P(INVAL, ct_executor_new(PR, NULL, ct_cpu()));
  P(INVAL, ct_executor_new(PR, S, bad_place));
  P(INVAL, ct_executor_new(PR, S, neg_cuda));
  P(far_cuda_status, ct_executor_new(PR, S, far_cuda));
  P(INVAL, ct_executor_new_with(PR, S, ct_cpu(),
                                &(ct_executor_options){.keep = NULL, .n_keep = 3}));
  S(INVAL, ct_executor_run(NULL));
  V(OK, ct_executor_free(NULL), true);

  /* ---- cuda.h ---------------------------------------------------------------------------- */
  P(INVAL, ct_stream_new(ct_cpu()));
  P(INVAL, ct_stream_new(bad_place));
  P(INVAL, ct_stream_new(neg_cuda));
  P(far_cuda_status, ct_stream_new(far_cuda));
  P(INVAL, ct_stream_default(bad_place));
  P(INVAL, ct_stream_current(bad_place));
  V(OK, ct_stream_free(NULL), true);
  S(INVAL, ct_stream_set_current(NULL));
  S(INVAL, ct_stream_synchronize(NULL));
  V(OK, (void)0, ct_place_equal(ct_stream_place(NULL), ct_cpu()));
  S(INVAL, ct_device_synchronize(bad_place));
  S(OK, ct_device_synchronize(ct_cpu()));
  S(ct_cuda_is_built() ? CT_ERR_DEVICE : CT_ERR_UNSUPPORTED, ct_device_synchronize(far_cuda));

  /* ---- Everything still works after the misuse -------------------------------------------- */
  const float *t = ct_tensor_data(T, CT_FLOAT32);
  ck_assert_ptr_nonnull(t);
  ck_assert_float_eq(t[5], 5.0f);
  ck_assert_int_eq(ct_params_save(path, S, (const char *[]){"t"}, 1), CT_OK);
  unlink(path);
  rmdir(tmpdir);

  printf("misuse: %d rows, %d wrong\n", rows, bad);
  ck_assert_msg(bad == 0, "%d of %d misuse rows disagree with the headers:%s", bad, rows, report);
  ck_assert_int_ge(rows, 300);

  ct_op_free(OP);
  ct_program_free(PR);
  ct_var_free(V);
  ct_scope_free(S);
  ct_tensor_free(T);
  ct_tensor_free(E);
  ct_tensor_free(D);
  ct_tensor_free(G);
  ct_tensor_free(Z);
}
END_TEST

static Suite *misuse_suite(void) {
  Suite *s = suite_create("misuse");
  CT_ADD_TEST(s, every_public_function_refuses_misuse_as_documented);
  return s;
}

CT_TEST_MAIN(misuse_suite)
