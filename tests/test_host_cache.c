/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_host_cache.c: the host cache's limit from the environment
 * (CORTEN_HOST_CACHE_LIMIT) and its lock across fork; the huge-page advice's range. Internal
 * (the parser of the limit): links the static library. The environment is read once per
 * process, so each such check runs in a child of its own. */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <corten/corten.h>

#include "harness.h"
#include "memory/memory_impl.h"

START_TEST(limit_parses_digits_and_a_suffix) {
  size_t v = 7;
  ck_assert(ct__host_cache_parse_limit("0", &v) && v == 0);
  ck_assert(ct__host_cache_parse_limit("65536", &v) && v == 65536);
  ck_assert(ct__host_cache_parse_limit("300k", &v) && v == (size_t)300 << 10);
  ck_assert(ct__host_cache_parse_limit("512M", &v) && v == (size_t)512 << 20);
  ck_assert(ct__host_cache_parse_limit("2G", &v) && v == (size_t)2 << 30);
}
END_TEST

START_TEST(limit_refuses_anything_else) {
  static const char *const bad[] = {"", "-1", "+5", " 5", "5 ", "5KB", "5T", "0x10", "1.5G",
                                    "18446744073709551616", "17179869184G", "M"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    size_t v = 7;
    ck_assert_msg(!ct__host_cache_parse_limit(bad[i], &v), "'%s' accepted", bad[i]);
    ck_assert_uint_eq(v, 7);
  }
  size_t v = 7;
  ck_assert(!ct__host_cache_parse_limit(NULL, &v));
  ck_assert_uint_eq(v, 7);
}
END_TEST

/* The huge pages' range of a block: the 2 MiB pages wholly inside it. */
START_TEST(huge_pages_cover_the_whole_2mib_pages_inside) {
  const uintptr_t mib = (uintptr_t)1 << 20;
  uintptr_t at;
  size_t len;
  ct__huge_interior(20 * mib + 100, 5 * mib, &at, &len); /* [20 MiB + 100, 25 MiB + 100) */
  ck_assert(at == 22 * mib && len == 2 * mib);
  ct__huge_interior(8 * mib, 4 * mib, &at, &len); /* aligned both ends */
  ck_assert(at == 8 * mib && len == 4 * mib);
  ct__huge_interior(8 * mib + 64, 4 * mib - 128, &at, &len); /* no whole page inside */
  ck_assert_uint_eq(len, 0);
  ct__huge_interior(3 * mib, 1 * mib, &at, &len);
  ck_assert_uint_eq(len, 0);
  /* the advice on real memory changes nothing a caller sees (whatever the system's THP) */
  size_t bytes = 6 << 20;
  ct__block *b = ct__block_alloc(ct_cpu(), bytes), *small = ct__block_alloc(ct_cpu(), 4096);
  ck_assert(b != NULL && small != NULL && b->coalloc);
  ct__block_advise_huge(b);
  ct__block_advise_huge(small); /* below CT__HUGE_MIN: nothing */
  ct__block_advise_huge(NULL);
  unsigned char *p = b->ptr;
  for (size_t i = 0; i < bytes; i += 4096) p[i] = (unsigned char)(i >> 12);
  for (size_t i = 0; i < bytes; i += 4096) ck_assert_uint_eq(p[i], (unsigned char)(i >> 12));
  ct__block_release(b);
  ct__block_release(small);
}
END_TEST

/* Runs body in a child with CORTEN_HOST_CACHE_LIMIT = env (NULL: unset); the child's exit code. */
static int in_child(const char *env, int (*body)(void)) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    if (env != NULL) setenv("CORTEN_HOST_CACHE_LIMIT", env, 1);
    else unsetenv("CORTEN_HOST_CACHE_LIMIT");
    _exit(body());
  }
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFEXITED(status));
  return WEXITSTATUS(status);
}

/* Frees a 256 KiB and then a 512 KiB tensor; 1 when only the first was kept, 2 when both were,
 * 0 when neither. */
static int kept_of_two(void) {
  ct_tensor *a = alloc_tensor(CT_DIMS(1 << 16), CT_FLOAT32, NULL);
  ct_tensor_free(a);
  ct_tensor *b = alloc_tensor(CT_DIMS(1 << 17), CT_FLOAT32, NULL);
  ct_tensor_free(b);
  size_t r = cpu_stats().reserved;
  return r == 0 ? 0 : r == (1 << 18) ? 1 : r == (1 << 18) + (1 << 19) ? 2 : 99;
}

static int setter_wins(void) {
  if (ct_memory_set_cache_limit(ct_cpu(), 0) != CT_OK) return 98;
  return kept_of_two();
}

START_TEST(environment_sets_the_limit_once) {
  ck_assert_int_eq(in_child("300K", kept_of_two), 1); /* 512 KiB is past 300 KiB */
  ck_assert_int_eq(in_child("0", kept_of_two), 0);
  ck_assert_int_eq(in_child(NULL, kept_of_two), 2);      /* the default, 256 MiB */
  ck_assert_int_eq(in_child("lots", kept_of_two), 2);    /* ignored: the default */
  ck_assert_int_eq(in_child("-300K", kept_of_two), 2);   /* ignored: the default */
  ck_assert_int_eq(in_child("1G", setter_wins), 0);      /* the setter wins */
}
END_TEST

/* A fork while the cache is in use leaves the child a cache it can use (the lock released). */
static int fork_then_reuse(void) {
  ct_tensor *a = alloc_tensor(CT_DIMS(1 << 16), CT_FLOAT32, NULL);
  ct_tensor_free(a);
  pid_t pid = fork();
  if (pid == 0) {
    ct_tensor *b = alloc_tensor(CT_DIMS(1 << 16), CT_FLOAT32, NULL); /* from the cache */
    ct_memory_stats s = cpu_stats();
    _exit(s.reserved == (1 << 18) && s.allocated == (1 << 18) && b != NULL ? 0 : 1);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 2;
  return WEXITSTATUS(status);
}

START_TEST(child_of_a_fork_uses_the_cache) { ck_assert_int_eq(in_child(NULL, fork_then_reuse), 0); }
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("host_cache");
  CT_ADD_TEST(s, limit_parses_digits_and_a_suffix);
  CT_ADD_TEST(s, limit_refuses_anything_else);
  CT_ADD_TEST(s, huge_pages_cover_the_whole_2mib_pages_inside);
  CT_ADD_TEST(s, environment_sets_the_limit_once);
  CT_ADD_TEST(s, child_of_a_fork_uses_the_cache);
  return s;
}

CT_TEST_MAIN(make_suite)
