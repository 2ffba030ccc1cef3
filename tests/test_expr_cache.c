/* SPDX-License-Identifier: Apache-2.0 */
/* The on-disk cache of compiled expression kernels (ops/expr/kernel_cache.h), on the CPU: a hit
 * returns the stored bytes, a miss is NULL, an entry that does not check out (a flipped byte, a
 * cut file, another key under the same file name) is a miss and is removed, and the directory is
 * trimmed to its bound oldest first. Links the static library for the internal entry points. */
#define _GNU_SOURCE /* mkdtemp, nftw (file_util.h), utimensat, setenv */
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include "file_util.h"

#include "ops/expr/kernel_cache.h"

static const char bin[] = "\x7f" "ELF not really, but bytes all the same";

static char *cache_dir(void) {
  make_work_dir("expr-cache");
  return in_dir("a/b/kernels"); /* parents made by the first store */
}

START_TEST(a_stored_entry_is_found_by_its_key_only) {
  char *dir = cache_dir();
  size_t n = 0;
  ck_assert_ptr_null(ct__kcache_load(dir, "source 1 sm_90", &n));
  ck_assert_int_eq(ct__kcache_store(dir, "source 1 sm_90", bin, sizeof bin, 1 << 20), 0);
  void *got = ct__kcache_load(dir, "source 1 sm_90", &n);
  ck_assert_ptr_nonnull(got);
  ck_assert_uint_eq(n, sizeof bin);
  ck_assert_int_eq(memcmp(got, bin, sizeof bin), 0);
  free(got);
  ck_assert_ptr_null(ct__kcache_load(dir, "source 1 sm_80", &n));
  remove_work_dir();
}
END_TEST

/* The path of key's entry, found as the one .ctk file in dir. */
static void only_entry(const char *dir, char *path, size_t cap) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int found = 0;
  for (struct dirent *de; (de = readdir(d)) != NULL;) {
    if (strstr(de->d_name, ".ctk") == NULL) continue;
    snprintf(path, cap, "%s/%s", dir, de->d_name);
    found++;
  }
  closedir(d);
  ck_assert_int_eq(found, 1);
}

START_TEST(a_corrupt_entry_is_a_miss_and_is_removed) {
  char *dir = cache_dir();
  char path[512];
  for (int how = 0; how < 3; how++) {
    ck_assert_int_eq(ct__kcache_store(dir, "key", bin, sizeof bin, 1 << 20), 0);
    only_entry(dir, path, sizeof path);
    size_t len;
    unsigned char *f = read_all(path, &len);
    if (how == 0) f[len - 3] ^= 0x20; /* a flipped bit in the binary */
    if (how == 1) len -= 5;           /* a cut file */
    if (how == 2) f[33] ^= 0x01;      /* another key of the same length */
    write_all(path, f, len);
    free(f);
    size_t n;
    ck_assert_ptr_null(ct__kcache_load(dir, "key", &n));
    ck_assert_int_eq(count_entries(dir), 0);
  }
  remove_work_dir();
}
END_TEST

/* The entry file of key: "<FNV-1a 64 of the key, 16 hex digits>.ctk", computed here. */
static char *entry_of(const char *dir, const char *key) {
  static char path[512];
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char *c = key; *c != '\0'; c++) h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
  snprintf(path, sizeof path, "%s/%016llx.ctk", dir, (unsigned long long)h);
  return path;
}

static void age(const char *path, int seconds) {
  struct timespec now, t[2];
  clock_gettime(CLOCK_REALTIME, &now);
  t[0] = t[1] = (struct timespec){.tv_sec = now.tv_sec - seconds};
  ck_assert_int_eq(utimensat(AT_FDCWD, path, t, 0), 0);
}

/* k0, k1, k2 aged 300, 200, 100 s; a hit on k0 makes it the newest; storing k3 under a bound of
 * two entries removes k1 and k2. */
START_TEST(the_directory_is_trimmed_to_its_bound_oldest_first) {
  char *dir = cache_dir();
  char big[1000];
  memset(big, 7, sizeof big);
  const char *keys[] = {"k0", "k1", "k2", "k3"};
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(ct__kcache_store(dir, keys[i], big, sizeof big, 1 << 20), 0);
    age(entry_of(dir, keys[i]), 300 - 100 * i);
  }
  size_t n;
  void *p = ct__kcache_load(dir, "k0", &n);
  ck_assert_ptr_nonnull(p);
  free(p);
  struct stat st;
  ck_assert_int_eq(stat(entry_of(dir, "k0"), &st), 0);
  ck_assert_int_eq(ct__kcache_store(dir, "k3", big, sizeof big, 2 * (size_t)st.st_size), 0);
  ck_assert_int_eq(count_entries(dir), 2);
  for (int i = 0; i < 4; i++) {
    p = ct__kcache_load(dir, keys[i], &n);
    ck_assert_msg((p != NULL) == (i == 0 || i == 3), "entry %s", keys[i]);
    free(p);
  }
  remove_work_dir();
}
END_TEST

START_TEST(the_directory_comes_from_the_environment) {
  char buf[256];
  setenv("CORTEN_KERNEL_CACHE", "off", 1);
  ck_assert(!ct__kcache_dir(buf, sizeof buf));
  setenv("CORTEN_KERNEL_CACHE", "here/kernels", 1);
  ck_assert(ct__kcache_dir(buf, sizeof buf));
  ck_assert_str_eq(buf, "here/kernels");
  unsetenv("CORTEN_KERNEL_CACHE");
  setenv("XDG_CACHE_HOME", "/x/cache", 1);
  ck_assert(ct__kcache_dir(buf, sizeof buf));
  ck_assert_str_eq(buf, "/x/cache/corten/kernels");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/h", 1);
  ck_assert(ct__kcache_dir(buf, sizeof buf));
  ck_assert_str_eq(buf, "/h/.cache/corten/kernels");
  setenv("CORTEN_KERNEL_CACHE_MAX_MB", "3", 1);
  ck_assert_uint_eq(ct__kcache_max_bytes(), (size_t)3 << 20);
  setenv("CORTEN_KERNEL_CACHE_MAX_MB", "lots", 1);
  ck_assert_uint_eq(ct__kcache_max_bytes(), CT__KCACHE_MAX_BYTES);
}
END_TEST

static Suite *expr_cache_suite(void) {
  Suite *s = suite_create("expr_cache");
  CT_ADD_TEST(s, a_stored_entry_is_found_by_its_key_only);
  CT_ADD_TEST(s, a_corrupt_entry_is_a_miss_and_is_removed);
  CT_ADD_TEST(s, the_directory_is_trimmed_to_its_bound_oldest_first);
  CT_ADD_TEST(s, the_directory_comes_from_the_environment);
  return s;
}

CT_TEST_MAIN(expr_cache_suite)
