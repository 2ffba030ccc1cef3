/* SPDX-License-Identifier: Apache-2.0 */
/* The shared harness of the Check suites: their main functions, the assertions on corten's error
 * reports, and the small helpers that more than one suite uses. Helpers of one family of suites
 * (the op suites, the scope suites, ...) live in that family's *_util.h beside this file.
 *
 * CK_FORK (Check's environment variable) picks fork mode; the default forks each test, so a
 * crash fails one test, and each test starts from fresh memory stats.
 *
 * The helpers are static inline: a suite compiles only those it calls, and an unused one raises
 * no warning. */
#ifndef CORTEN_TESTS_HARNESS_H
#define CORTEN_TESTS_HARNESS_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <corten/corten.h>

/* ---- Running suites ------------------------------------------------------------------------ */

/* Runs suite (and frees it); returns how many of its tests failed. */
static inline int ct_test_run(Suite *suite) {
  SRunner *sr = srunner_create(suite);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed;
}

/* The main of a suite: runs one suite and exits non-zero when a test fails. */
#define CT_TEST_MAIN(make_suite) \
  int main(void) { return ct_test_run(make_suite()) == 0 ? EXIT_SUCCESS : EXIT_FAILURE; }

/* Adds one tcase holding one test, named after the test function. */
#define CT_ADD_TEST(suite, fn)            \
  do {                                    \
    TCase *tc_ = tcase_create(#fn);       \
    tcase_add_test(tc_, fn);              \
    suite_add_tcase((suite), tc_);        \
  } while (0)

/* The number of CUDA devices, asked in a child process so that this one never initializes CUDA
 * (a CUDA context does not survive fork, and Check forks for every test); -1 when the child
 * cannot be run. The child prints why there is no device. */
static inline int ct_test_cuda_devices(void) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int n = ct_cuda_device_count();
    if (n == 0) {
      ct_memory_stats s;
      ct_memory_stats_get(ct_cuda(0), &s);
      printf("no CUDA device: %s\n", ct_last_error());
      fflush(stdout);
    }
    _exit(n > 100 ? 100 : n);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

/* The main of a GPU suite. Without a device it runs make_absent's suite (the checks of what a
 * CUDA place answers where there is none; NULL: none) and then reports the suite skipped with
 * ctest's SKIP_RETURN_CODE 77; with one it runs make_gpu's suite (NULL in a build without CUDA,
 * which never sees a device). */
static inline int ct_test_gpu_main(Suite *(*make_absent)(void), Suite *(*make_gpu)(void)) {
  int n = ct_test_cuda_devices();
  if (n < 0) {
    printf("could not probe for CUDA devices in a child process\n");
    return EXIT_FAILURE;
  }
  if (n == 0) {
    if (make_absent != NULL && ct_test_run(make_absent()) != 0) return EXIT_FAILURE;
    printf("skipped: the GPU tests need a CUDA device%s\n",
           make_absent != NULL ? " (the no-device checks passed)" : "");
    return 77;
  }
  if (make_gpu == NULL) return EXIT_FAILURE; /* unreachable: without CUDA there are no devices */
  return ct_test_run(make_gpu()) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* CT_GPU_TEST_MAIN(make_absent, make_gpu): main through ct_test_gpu_main. make_gpu is named only
 * where CORTEN_TEST_CUDA is defined, so a CPU-only build need not declare it; make_absent may
 * be NULL. */
#ifdef CORTEN_TEST_CUDA
#define CT_GPU_TEST_MAIN(make_absent, make_gpu) \
  int main(void) { return ct_test_gpu_main((make_absent), (make_gpu)); }
#else
#define CT_GPU_TEST_MAIN(make_absent, make_gpu) \
  int main(void) { return ct_test_gpu_main((make_absent), NULL); }
#endif

/* ---- Assertions on error reports ----------------------------------------------------------- */

/* CT_ASSERT_FAILS(expr, want): expr, a call returning ct_status, fails with exactly want and
 * reports it: ct_last_status() is want and ct_last_error() holds a message. The thread's last
 * error is cleared before the call, so an earlier failure cannot pass for this one's report.
 * want is evaluated once, before the call. */
#define CT_ASSERT_FAILS(expr, want)                                                           \
  do {                                                                                        \
    ct_status want_ = (want);                                                                 \
    ct_clear_error();                                                                         \
    ct_status got_ = (expr);                                                                  \
    ck_assert_msg(got_ == want_, "%s: status %d (%s), expected %d (%s): %s", #expr, (int)got_, \
                  ct_status_str(got_), (int)want_, ct_status_str(want_), ct_last_error());    \
    CT_ASSERT_REPORTED_(#expr, want_);                                                        \
  } while (0)

/* CT_ASSERT_NULL_FAILS(expr, want): the same for a call returning a pointer: it returns NULL,
 * and the report is as above. */
#define CT_ASSERT_NULL_FAILS(expr, want)                                                      \
  do {                                                                                        \
    ct_status want_ = (want);                                                                 \
    ct_clear_error();                                                                         \
    ck_assert_msg((expr) == NULL, "%s: not NULL", #expr);                                     \
    CT_ASSERT_REPORTED_(#expr, want_);                                                        \
  } while (0)

/* The report half of the two above. "no error" is what ct_last_error() says after a clear. */
#define CT_ASSERT_REPORTED_(text, want_)                                                      \
  do {                                                                                        \
    ck_assert_msg(ct_last_status() == (want_), "%s: last status %d (%s), expected %d", (text), \
                  (int)ct_last_status(), ct_status_str(ct_last_status()), (int)(want_));      \
    ck_assert_msg(ct_last_error()[0] != '\0' && strcmp(ct_last_error(), "no error") != 0,     \
                  "%s: failed without a message", (text));                                    \
  } while (0)

/* Asserts that the string text contains part. */
#define HAS(text, part) \
  ck_assert_msg(strstr((text), (part)) != NULL, "'%s' lacks '%s'", (text), (part))

/* ---- Memory and places --------------------------------------------------------------------- */

#define KiB ((size_t)1024)
#define MiB ((size_t)1024 * 1024)

/* The memory stats of place p; every field is overwritten first, so a field the call forgot
 * shows. cpu_stats: the host's. */
static inline ct_memory_stats stats_of(ct_place p) {
  ct_memory_stats s;
  memset(&s, 0xAB, sizeof s);
  ck_assert_int_eq(ct_memory_stats_get(p, &s), CT_OK);
  return s;
}

static inline ct_memory_stats cpu_stats(void) { return stats_of(ct_cpu()); }

/* What a CUDA place gives where it cannot hold memory: CT_ERR_UNSUPPORTED in a build without
 * CUDA, CT_ERR_DEVICE in a CUDA build on a machine without a GPU. The CPU suites' tests using it
 * do nothing where a GPU is present (the GPU suites cover that). */
static inline ct_status no_cuda_status(void) {
  return ct_cuda_is_built() ? CT_ERR_DEVICE : CT_ERR_UNSUPPORTED;
}

/* A place of no device kind corten knows. */
static inline ct_place bad_place(void) { return (ct_place){(ct_device_kind)99, 0}; }

/* Event i of profile p (asserting it is there). */
static inline ct_profile_event profile_event(const ct_profile *p, size_t i) {
  ct_profile_event e;
  ck_assert_int_eq(ct_profile_event_get(p, i, &e), CT_OK);
  return e;
}

/* A release callback for external buffers: counts its calls in the int ctx points to. */
static inline void count_release(void *ctx) { ++*(int *)ctx; }

/* ---- Tensors ------------------------------------------------------------------------------- */

/* A new tensor of the given dims holding float32 0, 1, 2, ...; its data through data when data
 * is not NULL. */
static inline ct_tensor *iota_f32(ct_ddim dims, float **data) {
  ct_tensor *t = ct_tensor_new();
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(ct_tensor_resize(t, dims), CT_OK);
  float *p = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu());
  ck_assert_ptr_nonnull(p);
  for (int64_t i = 0; i < ct_tensor_numel(t); i++) p[i] = (float)i;
  if (data != NULL) *data = p;
  return t;
}

/* A new tensor of the given dims with (unset) memory of dtype; its data through data when data
 * is not NULL. */
static inline ct_tensor *alloc_tensor(ct_ddim dims, ct_dtype dtype, void **data) {
  ct_tensor *t = ct_tensor_new();
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(ct_tensor_resize(t, dims), CT_OK);
  void *p = ct_tensor_mutable_data(t, dtype, ct_cpu());
  ck_assert_ptr_nonnull(p);
  if (data != NULL) *data = p;
  return t;
}

/* Asserts that t holds float32 values first, first+1, ... over n elements. */
static inline void assert_iota_f32(const ct_tensor *t, float first, int64_t n) {
  const float *p = ct_tensor_data(t, CT_FLOAT32);
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(ct_tensor_numel(t), n);
  for (int64_t i = 0; i < n; i++) ck_assert(p[i] == first + (float)i);
}

/* The float32 data of the tensor in variable name of s (found through the ancestors). */
static inline const float *var_f32(const ct_scope *s, const char *name) {
  const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, name));
  ck_assert_ptr_nonnull(t);
  const float *d = ct_tensor_data(t, CT_FLOAT32);
  ck_assert_ptr_nonnull(d);
  return d;
}

/* The float64 data of the tensor in variable name of s (found through the ancestors). */
static inline const double *var_f64(const ct_scope *s, const char *name) {
  const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, name));
  ck_assert_ptr_nonnull(t);
  const double *d = ct_tensor_data(t, CT_FLOAT64);
  ck_assert_ptr_nonnull(d);
  return d;
}

#endif /* CORTEN_TESTS_HARNESS_H */
