/* SPDX-License-Identifier: Apache-2.0 */
/* ops/expr/kernel_cache.c: the on-disk cache of compiled expression kernels
 * (ops/expr/kernel_cache.h). POSIX files; no CUDA. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops/expr/kernel_cache.h"
#include "common/alloc.h"

#define MAGIC "ctkc0001"
#define HEADER 32 /* magic, key length, binary length, checksum: 8 bytes each */
#define PATH_CAP 4096

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
  const unsigned char *s = p;
  for (size_t i = 0; i < n; i++) {
    h ^= s[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

#define FNV_BASIS 0xcbf29ce484222325ULL

bool ct__kcache_dir(char *buf, size_t cap) {
  const char *env = getenv("CORTEN_KERNEL_CACHE");
  int k;
  if (env != NULL) {
    if (env[0] == '\0' || strcmp(env, "off") == 0) return false;
    k = snprintf(buf, cap, "%s", env);
  } else if ((env = getenv("XDG_CACHE_HOME")) != NULL && env[0] == '/') {
    k = snprintf(buf, cap, "%s/corten/kernels", env);
  } else if ((env = getenv("HOME")) != NULL && env[0] != '\0') {
    k = snprintf(buf, cap, "%s/.cache/corten/kernels", env);
  } else {
    return false;
  }
  return k > 0 && (size_t)k < cap;
}

size_t ct__kcache_max_bytes(void) {
  const char *env = getenv("CORTEN_KERNEL_CACHE_MAX_MB");
  char *end;
  if (env == NULL) return CT__KCACHE_MAX_BYTES;
  unsigned long long mb = strtoull(env, &end, 10);
  if (end == env || *end != '\0' || mb > (SIZE_MAX >> 20)) return CT__KCACHE_MAX_BYTES;
  return (size_t)mb << 20;
}

static bool entry_path(char *buf, const char *dir, const char *key) {
  uint64_t h = fnv1a(FNV_BASIS, key, strlen(key));
  int k = snprintf(buf, PATH_CAP, "%s/%016llx.ctk", dir, (unsigned long long)h);
  return k > 0 && k < PATH_CAP;
}

static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* The whole file at path, malloc'ed; NULL when it cannot be read. */
static unsigned char *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  unsigned char *buf = NULL;
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && st.st_size >= 0 && (uint64_t)st.st_size < SIZE_MAX) {
    *n = (size_t)st.st_size;
    buf = ct__malloc(*n > 0 ? *n : 1);
    if (buf != NULL && fread(buf, 1, *n, f) != *n) {
      free(buf);
      buf = NULL;
    }
  }
  fclose(f);
  return buf;
}

void *ct__kcache_load(const char *dir, const char *key, size_t *n) {
  char path[PATH_CAP];
  if (dir == NULL || key == NULL || !entry_path(path, dir, key)) return NULL;
  size_t len;
  unsigned char *f = read_file(path, &len);
  if (f == NULL) return NULL;
  size_t klen = strlen(key);
  bool ok = len >= HEADER + klen && memcmp(f, MAGIC, 8) == 0 && get_u64(f + 8) == klen &&
            get_u64(f + 16) == len - HEADER - klen && memcmp(f + HEADER, key, klen) == 0 &&
            get_u64(f + 24) == fnv1a(FNV_BASIS, f + HEADER, len - HEADER);
  size_t fb = len - HEADER - klen;
  void *bin = NULL;
  if (ok) { /* fb is valid from here on */
    bin = ct__malloc(fb > 0 ? fb : 1);
    if (bin != NULL) {
      memcpy(bin, f + HEADER + klen, fb);
      *n = fb;
      utimensat(AT_FDCWD, path, NULL, 0); /* a hit is recent: trimming keeps it longest */
    }
  } else {
    unlink(path); /* never trusted; the caller compiles and stores it again */
  }
  free(f);
  return bin;
}

/* mkdir -p */
static int make_dirs(const char *dir) {
  char p[PATH_CAP];
  if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) return -1;
  for (char *s = p + 1; *s != '\0'; s++) {
    if (*s != '/') continue;
    *s = '\0';
    if (mkdir(p, 0700) != 0 && errno != EEXIST) return -1;
    *s = '/';
  }
  return mkdir(p, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

typedef struct entry {
  char name[32];
  off_t size;
  struct timespec mtime;
} entry;

static int older(const void *a, const void *b) {
  const entry *x = a, *y = b;
  if (x->mtime.tv_sec != y->mtime.tv_sec) return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
  if (x->mtime.tv_nsec != y->mtime.tv_nsec) return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* "<dir>/<name>" into buf (PATH_CAP bytes); false when it does not fit. */
static bool join(char *buf, const char *dir, const char *name) {
  size_t d = strlen(dir), k = strlen(name);
  if (d + 1 + k >= PATH_CAP) return false;
  memcpy(buf, dir, d);
  buf[d] = '/';
  memcpy(buf + d + 1, name, k + 1);
  return true;
}

/* Removes the oldest entries of dir until they total at most max_bytes. */
static void trim(const char *dir, size_t max_bytes) {
  DIR *d = opendir(dir);
  if (d == NULL) return;
  entry *v = NULL;
  size_t n = 0, cap = 0;
  uint64_t total = 0;
  char path[PATH_CAP];
  for (struct dirent *de; (de = readdir(d)) != NULL;) {
    size_t len = strlen(de->d_name);
    if (len != 20 || strcmp(de->d_name + 16, ".ctk") != 0) continue;
    struct stat st;
    if (!join(path, dir, de->d_name) || stat(path, &st) != 0) continue;
    if (n == cap) {
      entry *w = ct__realloc(v, (cap = cap ? 2 * cap : 64) * sizeof *v);
      if (w == NULL) break;
      v = w;
    }
    /* memcpy, not snprintf: GCC cannot see len == 20 without optimising and rejects the
     * possible truncation of a 256-byte d_name (-Wformat-truncation). */
    _Static_assert(sizeof v[n].name > 20, "an entry's name is 20 characters");
    memcpy(v[n].name, de->d_name, len + 1);
    v[n].size = st.st_size;
    v[n].mtime = st.st_mtim;
    total += (uint64_t)st.st_size;
    n++;
  }
  closedir(d);
  if (total > max_bytes) qsort(v, n, sizeof *v, older);
  for (size_t i = 0; i < n && total > max_bytes; i++) {
    if (join(path, dir, v[i].name) && unlink(path) == 0) total -= (uint64_t)v[i].size;
  }
  free(v);
}

int ct__kcache_store(const char *dir, const char *key, const void *bin, size_t n,
                     size_t max_bytes) {
  char path[PATH_CAP], tmp[PATH_CAP];
  if (dir == NULL || key == NULL || !entry_path(path, dir, key) || make_dirs(dir) != 0) return -1;
  if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp) return -1;
  int fd = mkstemp(tmp);
  if (fd < 0) return -1;
  size_t klen = strlen(key);
  unsigned char h[HEADER];
  memcpy(h, MAGIC, 8);
  put_u64(h + 8, klen);
  put_u64(h + 16, n);
  put_u64(h + 24, fnv1a(fnv1a(FNV_BASIS, key, klen), bin, n));
  FILE *f = fdopen(fd, "wb");
  bool ok = f != NULL && fwrite(h, 1, HEADER, f) == HEADER && fwrite(key, 1, klen, f) == klen &&
            fwrite(bin, 1, n, f) == n;
  if (f != NULL) {
    ok = fclose(f) == 0 && ok;
  } else {
    close(fd);
  }
  if (!ok || rename(tmp, path) != 0) {
    unlink(tmp);
    return -1;
  }
  trim(dir, max_bytes);
  return 0;
}
