/* SPDX-License-Identifier: Apache-2.0 */
/* corten/profile.h: where a run's time goes, op by op (docs/design/profile.md).
 *
 *   ct_profile *p = ct_profile_start(CT_PROFILE_THREAD);
 *   ... ct_executor_run(e) ... ct_op_run(op, scope, place) ...
 *   ct_profile_stop(p);
 *   ct_profile_table(p, CT_PROFILE_BY_TOTAL, buf, sizeof buf, NULL);   // per op type
 *   ct_profile_save_chrome_trace(p, "run.json");                       // chrome://tracing, Perfetto
 *   ct_profile_free(p);
 *
 * While a profile records, every op an executor or ct_op_run runs (on the calling thread, or on
 * any thread for CT_PROFILE_PROCESS) is an event: its type, its label (its output variables'
 * names), start and duration, the thread, and the change of its place's allocated bytes and
 * allocation count across it (ct_memory_stats), and at a CUDA place the device time of its
 * kernels from CUDA events; each ct_executor_run is an enclosing event. Off, an op costs one
 * relaxed atomic load more; on, about two clock reads and an append (and at a CUDA place two
 * event records). */
#ifndef CORTEN_PROFILE_H
#define CORTEN_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include <corten/status.h>
#include <corten/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_profile ct_profile;

typedef enum ct_profile_where {
  CT_PROFILE_THREAD = 0,  /* the runs of the thread that started it */
  CT_PROFILE_PROCESS = 1, /* the runs of every thread */
} ct_profile_where;

/* One recorded event. Strings belong to the profile. */
typedef struct ct_profile_event {
  const char *type;  /* the op type, or "executor_run" for a run of an executor */
  const char *label; /* the op's output variables, "a, b"; the run's op count, "12 ops" */
  int64_t start_ns;  /* from the profile's start */
  int64_t dur_ns;
  int thread;        /* 1, 2 ...: the order in which threads first recorded */
  int64_t bytes;     /* change of the place's allocated bytes across the event */
  int64_t allocs;    /* blocks allocated on the place during the event */
  ct_status status;  /* what the op or run returned */
  /* At a CUDA place: the device time between two events recorded on the thread's current
   * stream before and after the op's launches (its kernels' time, and the time of any other
   * work queued on that stream in between), and when it began, in ns from the profile's start
   * (placed by the first CUDA event of the profile on that device, taken to start when it was
   * recorded). -1 for both on the host, and where the events could not be read. Read when the
   * profile stops (which waits for the device to finish them). */
  int64_t device_start_ns;
  int64_t device_dur_ns;
} ct_profile_event;

/* Starts a profile. At most one per thread records for CT_PROFILE_THREAD, and one for the
 * process; a thread's own profile and the process's both record its ops when both run.
 * Errors (NULL returned): CT_ERR_ALREADY_EXISTS (one already records there: stop it first),
 * CT_ERR_INVALID_ARGUMENT (where is not a ct_profile_where), CT_ERR_OUT_OF_MEMORY. */
CT_API ct_profile *ct_profile_start(ct_profile_where where);

/* Stops recording; the events stay readable. Waits for the device time of the CUDA ops
 * recorded (their events) to be known. A second stop is a no-op.
 * Errors: CT_ERR_INVALID_ARGUMENT (p is NULL). */
CT_API ct_status ct_profile_stop(ct_profile *p);

/* Stops it if needed and frees it. NULL: no-op. */
CT_API void ct_profile_free(ct_profile *p);

/* The events recorded (op events and run events), in the order they ended; 0 for NULL. Read them
 * after ct_profile_stop (while it records, other threads may be appending). */
CT_API size_t ct_profile_count(const ct_profile *p);
/* Event i into *out. Errors: CT_ERR_INVALID_ARGUMENT (p or out NULL), CT_ERR_OUT_OF_RANGE. */
CT_API ct_status ct_profile_event_get(const ct_profile *p, size_t i, ct_profile_event *out);

typedef enum ct_profile_sort {
  CT_PROFILE_BY_TOTAL = 0, /* total time, largest first */
  CT_PROFILE_BY_COUNT = 1,
  CT_PROFILE_BY_MEAN = 2,
  CT_PROFILE_BY_BYTES = 3, /* bytes allocated, largest first */
} ct_profile_sort;

/* A text table per op type: count, total ms, mean us, share of the ops' total, bytes and
 * allocations, sorted by `sort`; then the runs' count and total. Written into buf (cap bytes,
 * NUL-terminated, cut at cap); *needed (when not NULL) gets the full length plus 1.
 * Errors: CT_ERR_INVALID_ARGUMENT (p NULL, buf NULL with cap > 0, sort unknown). */
CT_API ct_status ct_profile_table(const ct_profile *p, ct_profile_sort sort, char *buf,
                                  size_t cap, size_t *needed);

/* Writes the events as a Chrome trace (the Trace Event Format's JSON object form, which
 * chrome://tracing and Perfetto open): one complete ("X") slice per op on its thread's track,
 * the executor runs as enclosing slices, and a counter track of the allocated bytes of each place
 * the ops ran on. Atomic: written to a temporary file in the same folder, then renamed; a failure
 * leaves an earlier file at path as it was.
 * Errors: CT_ERR_INVALID_ARGUMENT (p or path NULL), CT_ERR_IO (naming the path and the reason). */
CT_API ct_status ct_profile_save_chrome_trace(const ct_profile *p, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_PROFILE_H */
