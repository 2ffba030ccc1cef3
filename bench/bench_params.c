/* SPDX-License-Identifier: Apache-2.0 */
/* bench_params.c: saving and loading a 256 MB parameter dictionary (64 float32 tensors of
 * 4 MiB) with ct_params_save / ct_params_load, next to write() / read() of the file's exact
 * bytes in the same run.
 *   save   ct_params_save of every tensor of a scope
 *          [open + write() of the same bytes + fsync + rename + fsync of the directory: the
 *           steps that make corten's save atomic and durable, without the format work]
 *   load   ct_params_load into a new scope (then freed)
 *          [open + fstat + malloc + read() of the same bytes + close + free]
 *   reload the same load, repeated: after the first one the tensors' blocks come from the host
 *          cache (docs/design/memory.md)
 *          [read() of the same bytes into one buffer allocated and touched beforehand]
 *          [and pread() of each tensor's data bytes, at its offset in the file, into its own
 *           64-byte-aligned buffer touched beforehand: where a loader must put them. The
 *           format puts the data at offsets that are not multiples of 64 (the names and
 *           headers before it have any length), and the kernel copies from a page-cache
 *           offset into a differently aligned destination at a lower rate]
 *   reload page faults: minor faults (getrusage) of one reload after the warm-up
 *          [the same count for open + malloc + read() + free of fresh memory]
 * The file sits in $TMPDIR (or the C library's P_tmpdir), warm in the page cache on both sides
 * after the warm-up run. Single thread. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <corten/corten.h>

#include "bench_util.h"

#define N_TENSORS 64
#define TENSOR_FLOATS ((int64_t)1 << 20) /* 4 MiB each, 256 MiB in all */

typedef struct io_ctx {
  char path[512], raw_path[512], raw_tmp[512], dir[512];
  ct_scope *scope;
  unsigned char *bytes; /* the saved file's bytes, for the baselines */
  size_t len;
  unsigned char *touched; /* len bytes, written once: the reload baseline reads into it */
  float *aligned[N_TENSORS]; /* 64-byte-aligned, touched: the aligned reload baseline's */
  uint64_t data_at[N_TENSORS], data_len[N_TENSORS]; /* each tensor's data in the file */
  int n_data;
  int failed;
} io_ctx;

static void save_batch(void *arg, size_t iters) {
  io_ctx *c = arg;
  for (size_t i = 0; i < iters; i++) {
    if (ct_params_save(c->path, c->scope, NULL, 0) != CT_OK) c->failed = 1;
  }
}

static void load_batch(void *arg, size_t iters) {
  io_ctx *c = arg;
  for (size_t i = 0; i < iters; i++) {
    ct_scope *s = ct_scope_new();
    if (s == NULL || ct_params_load(c->path, s) != CT_OK) c->failed = 1;
    ct_scope_free(s);
  }
}

static int write_all(int fd, const unsigned char *p, size_t len) {
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

static void raw_save_batch(void *arg, size_t iters) {
  io_ctx *c = arg;
  for (size_t i = 0; i < iters; i++) {
    int fd = open(c->raw_tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0 || write_all(fd, c->bytes, c->len) != 0 || fsync(fd) != 0) c->failed = 1;
    if (fd >= 0 && close(fd) != 0) c->failed = 1;
    if (rename(c->raw_tmp, c->raw_path) != 0) c->failed = 1;
    int dfd = open(c->dir, O_RDONLY);
    if (dfd < 0 || fsync(dfd) != 0) c->failed = 1;
    if (dfd >= 0) close(dfd);
  }
}

static void raw_load_batch(void *arg, size_t iters) {
  io_ctx *c = arg;
  for (size_t i = 0; i < iters; i++) {
    int fd = open(c->raw_path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
      c->failed = 1;
      if (fd >= 0) close(fd);
      continue;
    }
    size_t len = (size_t)st.st_size, got = 0;
    unsigned char *buf = malloc(len);
    while (buf != NULL && got < len) {
      ssize_t r = read(fd, buf + got, len - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += (size_t)r;
    }
    if (buf == NULL || got != len) c->failed = 1;
    BENCH_KEEP(buf);
    free(buf);
    close(fd);
  }
}

/* read() of the raw file into memory touched beforehand: a reload that costs no page fault. */
static void touched_load_batch(void *arg, size_t iters) {
  io_ctx *c = arg;
  for (size_t i = 0; i < iters; i++) {
    int fd = open(c->raw_path, O_RDONLY);
    size_t got = 0;
    while (fd >= 0 && got < c->len) {
      ssize_t r = read(fd, c->touched + got, c->len - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += (size_t)r;
    }
    if (got != c->len) c->failed = 1;
    BENCH_KEEP(c->touched);
    if (fd >= 0) close(fd);
  }
}

/* pread() of each tensor's data into its aligned buffer. */
static void aligned_load_batch(void *arg, size_t iters) {
  io_ctx *c = arg;
  for (size_t i = 0; i < iters; i++) {
    int fd = open(c->path, O_RDONLY);
    for (int k = 0; fd >= 0 && k < c->n_data; k++) {
      size_t got = 0;
      while (got < c->data_len[k]) {
        ssize_t r = pread(fd, (unsigned char *)c->aligned[k] + got, c->data_len[k] - got,
                          (off_t)(c->data_at[k] + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
      }
      if (got != c->data_len[k]) c->failed = 1;
    }
    if (fd < 0) c->failed = 1;
    BENCH_KEEP(c->aligned[0]);
    if (fd >= 0) close(fd);
  }
}

/* Records where each tensor's data lies (ct_params_inspect's data offsets). */
static ct_status note_entry(void *ctx, const ct_params_entry *e) {
  io_ctx *c = ctx;
  if (c->n_data == N_TENSORS) return CT_ERR_FORMAT;
  c->data_at[c->n_data] = e->data_offset;
  c->data_len[c->n_data++] = e->nbytes;
  return CT_OK;
}

/* Minor page faults of one run of fn. */
static double faults_of(void (*fn)(void *, size_t), void *arg) {
  struct rusage a, b;
  getrusage(RUSAGE_SELF, &a);
  fn(arg, 1);
  getrusage(RUSAGE_SELF, &b);
  return (double)(b.ru_minflt - a.ru_minflt);
}

/* Reads the whole file at path into *out (malloc'd). */
static int slurp(const char *path, unsigned char **out, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return -1;
  if (fseek(f, 0, SEEK_END) != 0) {
    fclose(f);
    return -1;
  }
  long n = ftell(f);
  rewind(f);
  *out = n > 0 ? malloc((size_t)n) : NULL;
  int ok = *out != NULL && fread(*out, 1, (size_t)n, f) == (size_t)n;
  fclose(f);
  if (!ok) return -1;
  *len = (size_t)n;
  return 0;
}

void bench_params_rows(const bench_cfg *cfg) {
  int reps = cfg->quick ? 3 : 7;
  const char *save_name = "params save 256 MiB (64 x 4 MiB)";
  const char *load_name = "params load 256 MiB (64 x 4 MiB)";
  const char *reload_name = "params reload 256 MiB (64 x 4 MiB)";
  const char *faults_name = "params reload 256 MiB, page faults";
  io_ctx *c = calloc(1, sizeof *c);
  const char *dir = getenv("TMPDIR");
  if (dir == NULL || dir[0] == '\0') dir = P_tmpdir;
  if (c == NULL) goto fail;
  snprintf(c->dir, sizeof c->dir, "%s", dir);
  snprintf(c->path, sizeof c->path, "%s/corten-bench-%ld.params", dir, (long)getpid());
  snprintf(c->raw_path, sizeof c->raw_path, "%s/corten-bench-%ld.raw", dir, (long)getpid());
  snprintf(c->raw_tmp, sizeof c->raw_tmp, "%s/corten-bench-%ld.raw.tmp", dir, (long)getpid());

  /* The reload row measures the host cache: room for the file's 64 blocks (with their headers,
   * a little over 256 MiB) whatever the default or CORTEN_HOST_CACHE_LIMIT says. */
  if (ct_memory_set_cache_limit(ct_cpu(), (size_t)512 << 20) != CT_OK) goto fail;
  c->scope = ct_scope_new();
  if (c->scope == NULL) goto fail;
  for (int i = 0; i < N_TENSORS; i++) {
    char name[48];
    snprintf(name, sizeof name, "block%02d.conv.weight", i);
    ct_tensor *t = ct_var_tensor(ct_scope_var(c->scope, name));
    if (t == NULL || ct_tensor_resize(t, CT_DIMS(TENSOR_FLOATS / 1024, 1024)) != CT_OK) goto fail;
    float *d = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu());
    if (d == NULL) goto fail;
    for (int64_t k = 0; k < TENSOR_FLOATS; k++) d[k] = (float)((k * 31 + i) % 1000) * 0.001f;
  }
  if (ct_params_save(c->path, c->scope, NULL, 0) != CT_OK) goto fail;
  if (slurp(c->path, &c->bytes, &c->len) != 0) goto fail;
  if ((c->touched = malloc(c->len)) == NULL) goto fail;
  memset(c->touched, 1, c->len);
  if (ct_params_inspect(c->path, &(ct_params_visitor){NULL, note_entry, c}) != CT_OK ||
      c->n_data != N_TENSORS) {
    goto fail;
  }
  for (int k = 0; k < N_TENSORS; k++) {
    c->aligned[k] = aligned_alloc(64, (size_t)c->data_len[k]);
    if (c->aligned[k] == NULL) goto fail;
    memset(c->aligned[k], 1, (size_t)c->data_len[k]);
  }

  /* Each pair takes turns (bench_median_multi_ns): the disk and the machine's load are shared. */
  void (*const save_fns[2])(void *, size_t) = {save_batch, raw_save_batch};
  void (*const load_fns[4])(void *, size_t) = {load_batch, raw_load_batch, touched_load_batch,
                                                aligned_load_batch};
  void *const args[4] = {c, c, c, c};
  double save_t[2], load_t[4];
  bench_median_multi_ns(2, save_fns, args, 1, reps, save_t);
  bench_median_multi_ns(4, load_fns, args, 1, reps, load_t);
  double faults = faults_of(load_batch, c), raw_faults = faults_of(raw_load_batch, c);
  double save_ns = save_t[0], raw_save_ns = save_t[1];
  double load_ns = load_t[0], raw_load_ns = load_t[1];
  if (c->failed) goto fail;
  bench_record(save_name, save_ns / 1e6, "write() + fsync + rename, same bytes", raw_save_ns / 1e6,
               "ms");
  bench_record(load_name, load_ns / 1e6, "read() of the same bytes", raw_load_ns / 1e6, "ms");
  bench_record(reload_name, load_ns / 1e6, "read() into touched memory", load_t[2] / 1e6, "ms");
  bench_record(reload_name, load_ns / 1e6, "pread() per tensor, aligned touched", load_t[3] / 1e6,
               "ms");
  bench_record(faults_name, faults, "malloc + read(), fresh memory", raw_faults, "faults");
  goto done;

fail:
  fprintf(stderr, "bench_params: %s (%s)\n", ct_last_error(), strerror(errno));
  bench_record(save_name, NAN, "write() + fsync + rename, same bytes", NAN, "ms");
  bench_record(load_name, NAN, "read() of the same bytes", NAN, "ms");
  bench_record(reload_name, NAN, "read() into touched memory", NAN, "ms");
  bench_record(reload_name, NAN, "pread() per tensor, aligned touched", NAN, "ms");
  bench_record(faults_name, NAN, "malloc + read(), fresh memory", NAN, "faults");
done:
  if (c != NULL) {
    remove(c->path);
    remove(c->raw_path);
    remove(c->raw_tmp);
    ct_scope_free(c->scope);
    free(c->bytes);
    free(c->touched);
    for (int k = 0; k < N_TENSORS; k++) free(c->aligned[k]);
    free(c);
  }
}
