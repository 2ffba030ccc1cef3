/* SPDX-License-Identifier: Apache-2.0 */
/* The helpers of the suites that write files (test_params*.c, test_faults.c): a fresh work
 * directory under the working directory, paths in it, whole-file reads and writes, and a count
 * of a directory's entries. A suite including this defines _GNU_SOURCE before any include
 * (mkdtemp and nftw are POSIX, not C11). */
#ifndef CORTEN_TESTS_FILE_UTIL_H
#define CORTEN_TESTS_FILE_UTIL_H

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"

/* The work directory of this test process, made by make_work_dir. */
static char work_dir[64];

/* Makes a fresh directory "<prefix>-XXXXXX" under the working directory, removed again by
 * remove_work_dir. */
static inline void make_work_dir(const char *prefix) {
  snprintf(work_dir, sizeof work_dir, "%s-XXXXXX", prefix);
  ck_assert_ptr_nonnull(mkdtemp(work_dir));
}

static inline int remove_entry(const char *path, const struct stat *st, int flag,
                               struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

/* Removes the work directory and everything below it. */
static inline void remove_work_dir(void) {
  nftw(work_dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* The path of name in the work directory, in one of four static buffers used in turn. */
static inline char *in_dir(const char *name) {
  static char path[4][256];
  static int next;
  char *p = path[next++ % 4];
  snprintf(p, sizeof path[0], "%s/%s", work_dir, name);
  return p;
}

/* The bytes of the file at path (malloc'd, to be freed) and their count through len. */
static inline unsigned char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
  long n = ftell(f);
  ck_assert_int_ge(n, 0);
  rewind(f);
  unsigned char *p = malloc((size_t)n + 1);
  ck_assert_uint_eq(fread(p, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return p;
}

static inline void write_all(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(p, 1, n, f), n);
  ck_assert_int_eq(fclose(f), 0);
}

/* Entries in dir besides . and .. */
static inline int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;
  ck_assert_ptr_nonnull(d);
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
  }
  closedir(d);
  return n;
}

#endif /* CORTEN_TESTS_FILE_UTIL_H */
