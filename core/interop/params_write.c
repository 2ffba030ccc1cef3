/* SPDX-License-Identifier: Apache-2.0 */
/* core/interop/params_write.c: the writer of parameter files, and the atomic file under it.
 *
 * A save never writes the target itself: it writes "<path>.tmp-<host>-<pid>-<n>" beside it (same
 * directory, so the same file system), fsyncs it, renames it over the target (atomic in POSIX)
 * and fsyncs the directory so the rename is durable. A failure at any step removes the
 * temporary file; the target is then exactly as before. An existing target keeps its permission
 * bits, and a symbolic link at the path stays a link: the file it names is replaced.
 *
 * A save killed mid-way cannot remove its temporary file, so the next save of the same target
 * does (remove_stale_temps): the name says which machine and process wrote it, and a file is
 * removed only when it was written on this machine by a process that no longer exists, and no
 * one holds the lock its writer took on it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/common.h"
#include "interop/interop_impl.h"
#include "interop/params_format.h"

const char *ct__errno_str(int e, char *buf, size_t cap) {
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
  return strerror_r(e, buf, cap); /* the GNU variant returns the text */
#else
  if (strerror_r(e, buf, cap) != 0) snprintf(buf, cap, "error %d", e);
  return buf;
#endif
}

static _Atomic unsigned tmp_counter;

/* The file a save replaces: path itself, or, when path is a symbolic link, the file it names
 * (so the link survives and the file it points at gets the new contents). NULL without memory. */
static char *resolve_target(const char *path) {
  struct stat st;
  if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
    char *real = realpath(path, NULL);
    if (real != NULL) return real;
  }
  size_t n = strlen(path) + 1;
  char *c = ct__malloc(n);
  if (c != NULL) memcpy(c, path, n);
  return c;
}

/* The name of this machine as it appears in temporary file names: the host name's letters,
 * digits and dots, '_' for any other byte, at most CT__HOST_TAG_CAP - 1 bytes; "localhost" when
 * the name is unknown. */
#define CT__HOST_TAG_CAP 65
static void host_tag(char tag[CT__HOST_TAG_CAP]) {
  char host[256];
  if (gethostname(host, sizeof host) != 0 || host[0] == '\0') {
    snprintf(host, sizeof host, "localhost");
  }
  host[sizeof host - 1] = '\0';
  size_t i = 0;
  for (; host[i] != '\0' && i + 1 < CT__HOST_TAG_CAP; i++) {
    char c = host[i];
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.';
    tag[i] = plain ? c : '_';
  }
  tag[i] = '\0';
}

/* Parses the decimal digits s[0..n) into *v; false when there are none, another byte, or too
 * many. */
static bool parse_digits(const char *s, size_t n, long long *v) {
  if (n == 0 || n > 12) return false;
  long long r = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    r = r * 10 + (s[i] - '0');
  }
  *v = r;
  return true;
}

/* Whether `rest` (what follows "<base>.tmp-" in a directory entry) is "<tag>-<pid>-<n>" with
 * this machine's tag, and the pid of a process that is gone: then the save that wrote it was
 * interrupted. A process of this program (a save running in another thread) or one that still
 * exists, even under another user (EPERM), is never taken for gone. */
static bool stale_name(const char *rest, const char *tag) {
  const char *last = strrchr(rest, '-');
  if (last == NULL || last == rest) return false;
  const char *mid = last - 1;
  while (mid > rest && *mid != '-') mid--;
  long long pid, n;
  if (*mid != '-' || !parse_digits(mid + 1, (size_t)(last - mid - 1), &pid) ||
      !parse_digits(last + 1, strlen(last + 1), &n)) {
    return false;
  }
  size_t tag_len = strlen(tag);
  if ((size_t)(mid - rest) != tag_len || memcmp(rest, tag, tag_len) != 0) return false;
  if (pid <= 0 || (pid_t)pid == getpid()) return false;
  return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* The directory holding path, opened read-only; -1 when it cannot be. Allocates nothing (a
 * directory name longer than PATH_MAX could not be opened anyway), so the best-effort steps
 * that use it cannot fail for lack of memory. */
static int open_dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  char dir[PATH_MAX];
  size_t len = slash == NULL ? 1 : slash == path ? 1 : (size_t)(slash - path);
  if (len >= sizeof dir) return -1;
  memcpy(dir, slash == NULL ? "." : path, len);
  dir[len] = '\0';
  return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* Best effort, before a save of target: removes the temporary files that interrupted saves of
 * the same target left beside it (see the top of this file). Errors are ignored: a file left
 * here is removed by a later save, and the save itself does not depend on it. */
static void remove_stale_temps(const char *target) {
  const char *slash = strrchr(target, '/');
  const char *base = slash ? slash + 1 : target;
  int dir_fd = open_dir_of(target);
  DIR *d = dir_fd < 0 ? NULL : fdopendir(dir_fd);
  if (d == NULL) {
    if (dir_fd >= 0) close(dir_fd);
    return;
  }
  char tag[CT__HOST_TAG_CAP];
  host_tag(tag);
  size_t base_len = strlen(base);
  int dfd = dirfd(d);
  for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
    const char *name = e->d_name;
    if (strncmp(name, base, base_len) != 0 || strncmp(name + base_len, ".tmp-", 5) != 0) continue;
    if (!stale_name(name + base_len + 5, tag)) continue;
    /* The writer took a lock on its file: a file someone still holds locked is left alone. */
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0) {
      (void)unlinkat(dfd, name, 0);
    }
    close(fd);
  }
  closedir(d);
}

ct_status ct__params_out_open(ct__params_out *o, const char *path, const char *what) {
  char err[128];
  o->fd = -1;
  o->path = path;
  o->written = 0;
  o->used = 0;
  o->target = resolve_target(path);
  size_t cap = o->target ? strlen(o->target) + CT__HOST_TAG_CAP + 64 : 0;
  o->tmp_path = o->target ? ct__malloc(cap) : NULL;
  if (o->tmp_path == NULL) {
    free(o->target);
    o->target = NULL;
    return ct__error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory for a temporary file name", what);
  }
  remove_stale_temps(o->target);
  char tag[CT__HOST_TAG_CAP];
  host_tag(tag);
  for (int tries = 0; tries < 64; tries++) {
    unsigned n = atomic_fetch_add_explicit(&tmp_counter, 1, memory_order_relaxed);
    snprintf(o->tmp_path, cap, "%s.tmp-%s-%ld-%u", o->target, tag, (long)getpid(), n);
    o->fd = open(o->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (o->fd >= 0 || errno != EEXIST) break;
  }
  /* Held until the file is closed: another process's clean-up leaves a locked file alone. */
  if (o->fd >= 0) (void)flock(o->fd, LOCK_EX | LOCK_NB);
  if (o->fd < 0) {
    int e = errno;
    ct_status s = ct__error(CT_ERR_IO,
                            "%s: cannot create the temporary file '%s' to write '%s': %s", what,
                            o->tmp_path, path, ct__errno_str(e, err, sizeof err));
    free(o->tmp_path);
    o->tmp_path = NULL;
    free(o->target);
    o->target = NULL;
    return s;
  }
  /* A file that exists keeps its permissions (a 0600 file stays private). */
  struct stat st;
  if (stat(o->target, &st) == 0) (void)fchmod(o->fd, st.st_mode & 07777);
  return CT_OK;
}

/* Writes all n bytes to the temporary file. */
static ct_status write_all(ct__params_out *o, const unsigned char *p, size_t n, const char *what) {
  while (n > 0) {
    ssize_t w = write(o->fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      char err[128];
      int e = w < 0 ? errno : EIO;
      return ct__error(CT_ERR_IO, "%s: writing '%s' failed at byte %" PRIu64 ": %s; '%s' is "
                       "unchanged", what, o->tmp_path, o->written - o->used,
                       ct__errno_str(e, err, sizeof err), o->path);
    }
    p += w;
    n -= (size_t)w;
  }
  return CT_OK;
}

static ct_status flush(ct__params_out *o, const char *what) {
  ct_status s = write_all(o, o->buf, o->used, what);
  o->used = 0;
  return s;
}

ct_status ct__params_out_write(ct__params_out *o, const void *p, size_t n, const char *what) {
  const unsigned char *b = p;
  if (n <= sizeof o->buf - o->used) {
    if (n > 0) memcpy(o->buf + o->used, b, n);
    o->used += n;
    o->written += n;
    return CT_OK;
  }
  ct_status s = flush(o, what);
  if (s != CT_OK) return s;
  if (n < sizeof o->buf) {
    memcpy(o->buf, b, n);
    o->used = n;
    o->written += n;
    return CT_OK;
  }
  s = write_all(o, b, n, what);
  if (s == CT_OK) o->written += n;
  return s;
}

static void put64(unsigned char *b, uint64_t v) {
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
}

static void put32(unsigned char *b, uint32_t v) {
  for (int i = 0; i < 4; i++) b[i] = (unsigned char)(v >> (8 * i));
}

ct_status ct__params_out_u64(ct__params_out *o, uint64_t v, const char *what) {
  unsigned char b[8];
  put64(b, v);
  return ct__params_out_write(o, b, sizeof b, what);
}

ct_status ct__params_out_record(ct__params_out *o, const ct_tensor *t, const char *what) {
  unsigned char h[CT__PARAMS_RECORD_FIXED + 8 * CT_MAX_RANK];
  ct_ddim dims = ct_tensor_dims(t);
  ct_dtype dtype = ct_tensor_dtype(t);
  size_t size = ct_dtype_size(dtype);
  uint64_t nbytes = (uint64_t)ct_tensor_numel(t) * size;
  uint8_t code, bits;
  size_t n = 0;
  ct__dtype_to_dl_file(dtype, &code, &bits);
  put64(h + n, CT__PARAMS_TENSOR_MAGIC), n += 8;
  put64(h + n, 0), n += 8;                  /* reserved */
  put32(h + n, 1), n += 4;                  /* device type: kDLCPU */
  put32(h + n, 0), n += 4;                  /* device id */
  put32(h + n, (uint32_t)dims.rank), n += 4;
  h[n++] = code;
  h[n++] = bits;
  h[n++] = 1; /* lanes, u16 */
  h[n++] = 0;
  for (int i = 0; i < dims.rank; i++) put64(h + n, (uint64_t)dims.d[i]), n += 8;
  put64(h + n, nbytes), n += 8;
  ct_status s = ct__params_out_write(o, h, n, what);
  if (s != CT_OK || nbytes == 0) return s;
  const unsigned char *data = ct_tensor_data(t, dtype);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  /* Files are little-endian: swap each element through a small buffer. */
  for (uint64_t at = 0; at < nbytes && s == CT_OK;) {
    unsigned char chunk[4096];
    size_t m = nbytes - at < sizeof chunk ? (size_t)(nbytes - at) : sizeof chunk;
    for (size_t i = 0; i < m; i += size) {
      for (size_t j = 0; j < size; j++) chunk[i + j] = data[at + i + size - 1 - j];
    }
    s = ct__params_out_write(o, chunk, m, what);
    at += m;
  }
  return s;
#else
  return ct__params_out_write(o, data, (size_t)nbytes, what);
#endif
}

void ct__params_out_abort(ct__params_out *o) {
  if (o->fd >= 0) close(o->fd);
  o->fd = -1;
  if (o->tmp_path != NULL) {
    unlink(o->tmp_path);
    free(o->tmp_path);
    o->tmp_path = NULL;
  }
  free(o->target);
  o->target = NULL;
}

/* Best effort: makes the rename durable. Some file systems refuse fsync on a directory; the
 * rename has happened either way. */
static void sync_dir_of(const char *path) {
  int fd = open_dir_of(path);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
}

ct_status ct__params_out_commit(ct__params_out *o, const char *what) {
  char err[128];
  ct_status s = flush(o, what);
  if (s == CT_OK && fsync(o->fd) != 0) {
    int e = errno;
    s = ct__error(CT_ERR_IO, "%s: syncing '%s' to disk failed: %s; '%s' is unchanged", what,
                  o->tmp_path, ct__errno_str(e, err, sizeof err), o->path);
  }
  if (s == CT_OK) {
    int rc = close(o->fd);
    o->fd = -1;
    if (rc != 0) {
      int e = errno;
      s = ct__error(CT_ERR_IO, "%s: closing '%s' failed: %s; '%s' is unchanged", what,
                    o->tmp_path, ct__errno_str(e, err, sizeof err), o->path);
    }
  }
  if (s == CT_OK && rename(o->tmp_path, o->target) != 0) {
    int e = errno;
    s = ct__error(CT_ERR_IO, "%s: renaming '%s' over '%s' failed: %s; '%s' is unchanged", what,
                  o->tmp_path, o->path, ct__errno_str(e, err, sizeof err), o->path);
  }
  if (s != CT_OK) {
    ct__params_out_abort(o);
    return s;
  }
  free(o->tmp_path);
  o->tmp_path = NULL;
  sync_dir_of(o->target);
  free(o->target);
  o->target = NULL;
  return CT_OK;
}
