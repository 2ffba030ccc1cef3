/* The shared main of the Check suites: runs one suite and exits non-zero when a test fails.
 * CK_FORK (Check's environment variable) picks fork mode; the default forks each test, so a
 * crash fails one test, and each test starts from fresh memory stats. */
#ifndef CORTEN_TESTS_HARNESS_H
#define CORTEN_TESTS_HARNESS_H

#include <check.h>
#include <stdlib.h>

#define CT_TEST_MAIN(make_suite)                         \
  int main(void) {                                       \
    SRunner *sr = srunner_create(make_suite());          \
    int failed;                                          \
    srunner_run_all(sr, CK_NORMAL);                      \
    failed = srunner_ntests_failed(sr);                  \
    srunner_free(sr);                                    \
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;    \
  }

/* Adds one tcase holding one test, named after the test function. */
#define CT_ADD_TEST(suite, fn)            \
  do {                                    \
    TCase *tc_ = tcase_create(#fn);       \
    tcase_add_test(tc_, fn);              \
    suite_add_tcase((suite), tc_);        \
  } while (0)

#endif /* CORTEN_TESTS_HARNESS_H */
