/* SPDX-License-Identifier: Apache-2.0 */
/* Crash safety of ct_params_save: a child process saves two different dictionaries over one
 * path in a loop and is killed with SIGKILL at a random moment, 200 times. After every kill the
 * path must hold exactly one of the two files, byte for byte: never a prefix, a mix or nothing.
 * A temporary file the killed save was writing may remain beside it (nothing can remove it
 * once the process is gone); the test counts those as proof that kills landed mid-save, and
 * removes them. The kill points come from CORTEN_CRASH_SEED (default fixed), so a failure can
 * be replayed. */
#define _GNU_SOURCE /* mkdtemp, usleep */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <corten/corten.h>

#include "harness.h"

#define KILLS 200

static char tmpdir[64];

static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)n + 1);
  ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return b;
}

/* A scope of n float32 tensors of 'size' elements each, filled with seed-dependent values. */
static ct_scope *dict(int n, int64_t size, float seed) {
  ct_scope *s = ct_scope_new();
  float *buf = malloc((size_t)size * sizeof *buf);
  for (int64_t i = 0; i < size; i++) buf[i] = seed + (float)i;
  for (int k = 0; k < n; k++) {
    char name[32];
    snprintf(name, sizeof name, "layer%d.w", k);
    ck_assert_int_eq(ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, name)), buf,
                                         CT_DIMS(size), CT_FLOAT32, ct_cpu()),
                     CT_OK);
  }
  free(buf);
  return s;
}

/* Removes leftover temporary files; returns how many there were. */
static int sweep_tmp(void) {
  DIR *d = opendir(tmpdir);
  struct dirent *e;
  int n = 0;
  char p[512];
  ck_assert_ptr_nonnull(d);
  while ((e = readdir(d)) != NULL) {
    if (strstr(e->d_name, ".tmp-") == NULL) continue;
    snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name);
    unlink(p);
    n++;
  }
  closedir(d);
  return n;
}

START_TEST(sigkill_during_save_leaves_the_old_or_the_new_file) {
  strcpy(tmpdir, "crash-test-XXXXXX"); /* under the working directory */
  ck_assert_ptr_nonnull(mkdtemp(tmpdir));
  char path[128], pa[128], pb[128];
  snprintf(path, sizeof path, "%s/model.params", tmpdir);
  snprintf(pa, sizeof pa, "%s/a.ref", tmpdir);
  snprintf(pb, sizeof pb, "%s/b.ref", tmpdir);
  ct_scope *a = dict(4, 64 * 1024, 1.0f); /* about 1 MiB */
  ct_scope *b = dict(3, 50 * 1024, 7.0f); /* about 600 KiB, other names' data */
  ck_assert_int_eq(ct_params_save(pa, a, NULL, 0), CT_OK);
  ck_assert_int_eq(ct_params_save(pb, b, NULL, 0), CT_OK);
  size_t la, lb;
  unsigned char *ba = slurp(pa, &la), *bb = slurp(pb, &lb);
  unlink(pa);
  unlink(pb);
  ck_assert_int_eq(ct_params_save(path, a, NULL, 0), CT_OK);

  const char *env = getenv("CORTEN_CRASH_SEED");
  unsigned seed = env ? (unsigned)strtoul(env, NULL, 10) : 12345u;
  srand(seed);
  int saw_a = 0, saw_b = 0, leftovers = 0;
  for (int k = 0; k < KILLS; k++) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
      for (unsigned i = 0;; i++) (void)ct_params_save(path, (i + (unsigned)k) % 2 ? b : a, NULL, 0);
    }
    usleep((useconds_t)(rand() % 20000)); /* 0 to 20 ms: several saves' worth */
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    size_t len;
    unsigned char *now = slurp(path, &len);
    ck_assert_msg(now != NULL, "kill %d (seed %u): the file is gone", k, seed);
    if (len == la && memcmp(now, ba, la) == 0) {
      saw_a++;
    } else if (len == lb && memcmp(now, bb, lb) == 0) {
      saw_b++;
    } else {
      ck_abort_msg("kill %d (seed %u): the file (%zu bytes) is neither the old nor the new one", k,
                   seed, len);
    }
    free(now);
    leftovers += sweep_tmp();
  }
  printf("crash: %d kills (seed %u): %d left file A, %d file B, %d mid-save temporaries\n", KILLS,
         seed, saw_a, saw_b, leftovers);
  ck_assert_int_eq(saw_a + saw_b, KILLS);
  ck_assert_int_gt(leftovers, 0); /* kills did land inside saves */
  free(ba);
  free(bb);
  unlink(path);
  rmdir(tmpdir);
  ct_scope_free(a);
  ct_scope_free(b);
}
END_TEST

static Suite *crash_suite(void) {
  Suite *s = suite_create("crash");
  TCase *tc = tcase_create("sigkill_during_save_leaves_the_old_or_the_new_file");
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, sigkill_during_save_leaves_the_old_or_the_new_file);
  suite_add_tcase(s, tc);
  return s;
}

CT_TEST_MAIN(crash_suite)
