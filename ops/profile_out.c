/* SPDX-License-Identifier: Apache-2.0 */
/* ops/profile_out.c: a profile as a table per op type and as a Chrome trace
 * (corten/profile.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "interop/params_format.h"
#include "ops/profile_impl.h"

static const char *str_of(const ct_profile *p, const char *offset) {
  return p->strings + (uintptr_t)offset;
}

static bool is_run(const ct_profile *p, const ct__prof_rec *r) {
  return strcmp(str_of(p, r->e.type), "executor_run") == 0;
}

/* ---- The table --------------------------------------------------------------------------------- */

typedef struct row {
  const char *type;
  int64_t count, total_ns, bytes, allocs;
  int64_t dev_ns; /* the device time of its CUDA events */
} row;

static ct_profile_sort sort_key;

static int cmp_rows(const void *a, const void *b) {
  const row *x = a, *y = b;
  double kx, ky;
  switch (sort_key) {
    case CT_PROFILE_BY_COUNT: kx = (double)x->count, ky = (double)y->count; break;
    case CT_PROFILE_BY_MEAN:
      kx = (double)x->total_ns / (double)x->count, ky = (double)y->total_ns / (double)y->count;
      break;
    case CT_PROFILE_BY_BYTES: kx = (double)x->bytes, ky = (double)y->bytes; break;
    default: kx = (double)x->total_ns, ky = (double)y->total_ns; break;
  }
  return kx > ky ? -1 : kx < ky ? 1 : strcmp(x->type, y->type);
}

/* Appends printf text to buf (cap bytes), counting the full length in *len. */
__attribute__((format(printf, 4, 5))) static void put(char *buf, size_t cap, size_t *len,
                                                      const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(*len < cap ? buf + *len : NULL, *len < cap ? cap - *len : 0, fmt, ap);
  va_end(ap);
  if (w > 0) *len += (size_t)w;
}

ct_status ct_profile_table(const ct_profile *p, ct_profile_sort sort, char *buf, size_t cap,
                           size_t *needed) {
  if (p == NULL || (buf == NULL && cap > 0) || (unsigned)sort > CT_PROFILE_BY_BYTES) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_profile_table: the profile is NULL, buf is NULL with cap %zu, or sort "
                     "%d is not a ct_profile_sort", cap, (int)sort);
  }
  row *rows = ct__calloc(p->n + 1, sizeof *rows);
  if (rows == NULL) return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_profile_table: out of host memory");
  size_t n_rows = 0;
  int64_t ops_ns = 0, runs = 0, runs_ns = 0, dev_ns = 0;
  bool timed = false; /* some op has a device time: the table gets its column */
  double rate = ct__prof_rate(p);
  for (size_t i = 0; i < p->n; i++) {
    const ct__prof_rec *r = &p->v[i];
    int64_t start_ns, dur_ns;
    ct__prof_span(r, rate, &start_ns, &dur_ns);
    if (is_run(p, r)) {
      runs++;
      runs_ns += dur_ns;
      continue;
    }
    const char *type = str_of(p, r->e.type);
    size_t k = 0;
    while (k < n_rows && strcmp(rows[k].type, type) != 0) k++;
    if (k == n_rows) rows[n_rows++] = (row){.type = type};
    rows[k].count++;
    rows[k].total_ns += dur_ns;
    rows[k].bytes += r->e.bytes;
    rows[k].allocs += r->e.allocs;
    ops_ns += dur_ns;
    if (r->dev_dur >= 0) {
      rows[k].dev_ns += r->dev_dur;
      dev_ns += r->dev_dur;
      timed = true;
    }
  }
  sort_key = sort;
  qsort(rows, n_rows, sizeof *rows, cmp_rows);
  size_t len = 0;
  if (cap > 0) buf[0] = '\0';
  put(buf, cap, &len, "%-28s %8s %11s %11s %7s %14s %8s%s\n", "op type", "count", "total ms",
      "mean us", "share", "bytes", "allocs", timed ? "   device ms" : "");
  for (size_t k = 0; k < n_rows; k++) {
    const row *w = &rows[k];
    put(buf, cap, &len, "%-28s %8lld %11.3f %11.2f %6.1f%% %14lld %8lld", w->type,
        (long long)w->count, (double)w->total_ns / 1e6, (double)w->total_ns / 1e3 / (double)w->count,
        ops_ns > 0 ? 100.0 * (double)w->total_ns / (double)ops_ns : 0.0, (long long)w->bytes,
        (long long)w->allocs);
    if (timed) put(buf, cap, &len, " %11.3f", (double)w->dev_ns / 1e6);
    put(buf, cap, &len, "\n");
  }
  put(buf, cap, &len, "ops: %.3f ms in all", (double)ops_ns / 1e6);
  if (timed) put(buf, cap, &len, " (device: %.3f ms)", (double)dev_ns / 1e6);
  if (runs > 0) {
    put(buf, cap, &len, "; %lld executor runs: %.3f ms (%.3f ms a run)", (long long)runs,
        (double)runs_ns / 1e6, (double)runs_ns / 1e6 / (double)runs);
  }
  put(buf, cap, &len, "\n");
  free(rows);
  if (needed != NULL) *needed = len + 1;
  return CT_OK;
}

/* ---- The Chrome trace -------------------------------------------------------------------------- */

typedef struct jout {
  ct__params_out o;
  char buf[65536];
  size_t n;
  ct_status s;
} jout;

static void jflush(jout *j) {
  if (j->s == CT_OK && j->n > 0) {
    j->s = ct__params_out_write(&j->o, j->buf, j->n, "ct_profile_save_chrome_trace");
  }
  j->n = 0;
}

__attribute__((format(printf, 2, 3))) static void jput(jout *j, const char *fmt, ...) {
  if (j->n + 1024 > sizeof j->buf) jflush(j);
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(j->buf + j->n, sizeof j->buf - j->n, fmt, ap);
  va_end(ap);
  if (w > 0) j->n += (size_t)w < sizeof j->buf - j->n ? (size_t)w : sizeof j->buf - j->n - 1;
}

/* s as the body of a JSON string (quotes, backslashes and control characters escaped). */
static void jstr(jout *j, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') jput(j, "\\%c", c);
    else if (c < 0x20) jput(j, "\\u%04x", c);
    else jput(j, "%c", c);
  }
}

/* The device's track of a CUDA place: one per device, after the host threads' numbers. */
enum { DEVICE_TRACK = 1000000 };

/* Opens r's complete slice on track tid, from ts to ts + dur ns, up to its label: the caller
 * adds its own args and closes it. */
static void slice_open(jout *j, const ct_profile *p, const ct__prof_rec *r, const char *cat,
                       int64_t ts, int64_t dur, int tid) {
  jput(j, ",\n{\"name\":\"");
  jstr(j, str_of(p, r->e.type));
  jput(j, "\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":1,\"tid\":%d,"
          "\"args\":{\"label\":\"", cat, (double)ts / 1e3, (double)dur / 1e3, tid);
  jstr(j, str_of(p, r->e.label));
}

/* The device time of r (a CUDA op or run) as a slice on its device's track; the track is
 * named at its first slice (named[device], false until then). */
static void device_slice(jout *j, const ct_profile *p, const ct__prof_rec *r, const char *place,
                         bool *named) {
  int tid = DEVICE_TRACK + r->place.device;
  if (!named[r->place.device]) {
    named[r->place.device] = true;
    jput(j, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
            "\"args\":{\"name\":\"%s (device time)\"}}", tid, place);
  }
  slice_open(j, p, r, is_run(p, r) ? "device run" : "device op", r->dev_start, r->dev_dur, tid);
  jput(j, "\"}}");
}

ct_status ct_profile_save_chrome_trace(const ct_profile *p, const char *path) {
  if (p == NULL || path == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_profile_save_chrome_trace: the profile or the path is NULL");
  }
  jout *j = ct__calloc(1, sizeof *j);
  if (j == NULL) {
    return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_profile_save_chrome_trace: out of host memory");
  }
  j->s = ct__params_out_open(&j->o, path, "ct_profile_save_chrome_trace");
  if (j->s != CT_OK) {
    ct_status s = j->s;
    free(j);
    return s;
  }
  jput(j, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
  jput(j, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"corten\"}}");
  double rate = ct__prof_rate(p);
  bool named[CT__PROF_DEVICES] = {false}; /* the device tracks named so far */
  for (size_t i = 0; i < p->n; i++) {
    const ct__prof_rec *r = &p->v[i];
    int64_t start_ns, dur_ns;
    ct__prof_span(r, rate, &start_ns, &dur_ns);
    slice_open(j, p, r, is_run(p, r) ? "run" : "op", start_ns, dur_ns, r->e.thread);
    jput(j, "\",\"bytes\":%lld,\"allocs\":%lld,\"status\":%d}}", (long long)r->e.bytes,
         (long long)r->e.allocs, (int)r->e.status);
    char place[32];
    ct_place_str(r->place, place, sizeof place);
    jput(j, ",\n{\"name\":\"%s allocated\",\"ph\":\"C\",\"ts\":%.3f,\"pid\":1,"
            "\"args\":{\"bytes\":%lld}}",
         place, (double)(start_ns + dur_ns) / 1e3, (long long)r->allocated);
    if (r->dev_dur >= 0) device_slice(j, p, r, place, named);
  }
  jput(j, "\n]}\n");
  jflush(j);
  ct_status s = j->s;
  if (s == CT_OK) s = ct__params_out_commit(&j->o, "ct_profile_save_chrome_trace");
  else ct__params_out_abort(&j->o);
  free(j);
  return s;
}
