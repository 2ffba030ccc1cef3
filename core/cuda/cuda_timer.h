/* SPDX-License-Identifier: Apache-2.0 */
/* core/cuda/cuda_timer.h: device time marks for the profiler (ops/profile.c).
 *
 * A mark is a pair of CUDA events recorded on the calling thread's current stream of a device,
 * one before an op's launches and one after, so the device time between them is the op's
 * kernels' time (and any work queued on that stream in between). Marks are shared (counted
 * references): an op recorded by a thread's profile and the process's one has one mark.
 *
 * No CUDA header here: the profiler calls these in every build. A CUDA build implements them in
 * cuda_timer.c; a CPU-only build in cuda_stub.c (begin gives NULL: no CUDA place runs there).
 * Nothing here records an error, and what these calls leave in CUDA's last-error note is cleared
 * (a note left there before is kept for its owner). */
#ifndef CORTEN_CORE_CUDA_TIMER_H
#define CORTEN_CORE_CUDA_TIMER_H

#include <stdbool.h>
#include <stdint.h>

typedef struct ct__cuda_mark ct__cuda_mark;

/* A new mark (one reference) whose start event is recorded now on device's current stream, or
 * NULL when that fails (no device, out of memory). */
ct__cuda_mark *ct__cuda_mark_begin(int device);
/* Records m's end event on the same device's current stream. */
void ct__cuda_mark_end(ct__cuda_mark *m);
void ct__cuda_mark_ref(ct__cuda_mark *m);
/* Drops a reference; the last one gives the events back to a cache for later marks. */
void ct__cuda_mark_unref(ct__cuda_mark *m);
/* Waits for m's end event, then gives the device time between m's start and end in *dur_ns,
 * and (from_ns not NULL) between from's start and m's start in *from_ns (negative when m
 * started first; INT64_MIN when from is NULL, of another device, or cannot be read). false when
 * m's own events cannot be read (a failed record, an error of the device): nothing is written
 * then. */
bool ct__cuda_mark_time(ct__cuda_mark *m, ct__cuda_mark *from, int64_t *dur_ns,
                        int64_t *from_ns);

#endif /* CORTEN_CORE_CUDA_TIMER_H */
