/* SPDX-License-Identifier: Apache-2.0 */
/* core/common/common.h: what every corten module shares internally: error reporting, branch
 * hints and small checks. Not installed; names that cross files are ct__. */
#ifndef CORTEN_CORE_COMMON_H
#define CORTEN_CORE_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <corten/export.h>
#include <corten/status.h>
#include <corten/types.h>

/* Branch hints and attributes, on top of the public ones of corten/export.h (which include/corten
 * headers already pull in): the same compilers, the same fallbacks. */
#define CT__LIKELY(x) CT_LIKELY(x)
#define CT__PRINTF(fmt, args) CT_PRINTF(fmt, args)
#if CT__GNU_ATTRIBUTES
#define CT__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define CT__COLD __attribute__((cold, noinline))
#else
#define CT__UNLIKELY(x) (x)
#define CT__COLD
#endif

/* Records status s and the formatted message as this thread's last error; returns s. */
ct_status ct__error(ct_status s, const char *fmt, ...) CT__COLD CT__PRINTF(2, 3);

/* How many errors this thread has recorded so far: a caller that compares the count before and
 * after a call of foreign code (a kernel) knows whether that code recorded its failure. */
extern _Thread_local uint64_t ct__errors_recorded; /* status.c; read inline on the per-op path.
                                                     Not initial-exec TLS: a library loaded with
                                                     dlopen (Python's ctypes) may find no static
                                                     TLS room left. */
static inline uint64_t ct__error_count(void) { return ct__errors_recorded; }
/* While set on a thread, an error it records sets the status and the count (a caller's
 * ct_last_status() still sees a failure) but leaves the last error's text as it was: the
 * executor trying an op it fused, which on failure runs the ops it stands for instead and then
 * puts the status back (ops/passes_rewrite.c). */
extern _Thread_local bool ct__errors_quiet;
/* Puts back a status ct_last_status() returned before a quiet attempt (the text is unchanged). */
void ct__error_status_put(ct_status s);
/* The address of this thread's count: a loop over many calls takes it once (a call, so that the
 * compiler does not compute the thread-local address again in the loop). */
const uint64_t *ct__error_counter(void);

/* As ct__error, for NULL-returning functions: records the error and returns NULL. */
void *ct__error_null(ct_status s, const char *fmt, ...) CT__COLD CT__PRINTF(2, 3);

/* Records "<prefix><name><suffix>" (prefix and suffix static strings, name len bytes) without
 * formatting: only the name is copied now, the text is built when ct_last_error asks. The cheap
 * path for a lookup miss, which may be a hot path (probing for optional variables). */
void ct__error_name(ct_status s, const char *prefix, const char *name, size_t len,
                    const char *suffix);

/* Buffers large enough for ct_ddim_str and ct_place_str of any value. */
#define CT__DDIM_STR_CAP 224
#define CT__PLACE_STR_CAP 48

/* Whether a place has a valid kind (and, for CUDA, a device ordinal >= 0; the host places
 * ignore the ordinal). */
int ct__place_valid(ct_place p);

/* Whether dtype is a defined ct_dtype (not UNDEFINED, not outside the enum). */
static inline int ct__dtype_valid(ct_dtype t) { return t > CT_DTYPE_UNDEFINED && t <= CT_UINT64; }

/* ct_dtype_size inline, for the per-op path (no call through the PLT): 0 outside the enum. */
static inline size_t ct__dtype_size(ct_dtype t) {
  static const unsigned char sizes[] = {0, 1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 2, 4, 8};
  return (unsigned)t < sizeof sizes ? sizes[t] : 0;
}

/* Checks dims for a tensor: rank 0..CT_MAX_RANK, no negative extent, and numel x 8 bytes
 * representable. Returns CT_OK with the element count in *numel, or records the error (naming
 * what, e.g. "ct_tensor_resize") and returns its status. */
ct_status ct__check_dims_slow(ct_ddim dims, const char *what, int64_t *numel);

/* ct__check_dims_slow's passing case inline (a tensor is resized on every new variable): the
 * nonzero extents multiplied out without overflow, as ct_ddim_numel does (a zero extent does not
 * excuse an overflowing rest); anything else goes the slow way, which decides exactly as before
 * and records the error. */
static inline ct_status ct__check_dims(ct_ddim dims, const char *what, int64_t *numel) {
  int64_t n = 1;
  bool ok = dims.rank >= 0 && dims.rank <= CT_MAX_RANK, empty = false;
  for (int i = 0; ok && i < dims.rank; i++) {
    int64_t e = dims.d[i];
    ok = e > 0 ? !__builtin_mul_overflow(n, e, &n) : e == 0;
    empty |= e == 0;
  }
  if (CT__LIKELY(ok && n <= INT64_MAX / 8)) {
    *numel = empty ? 0 : n;
    return CT_OK;
  }
  return ct__check_dims_slow(dims, what, numel);
}

/* ct_ddim_equal by pointer, inline, for hot paths (dims known to have rank <= CT_MAX_RANK). */
static inline int ct__ddim_eq(const ct_ddim *a, const ct_ddim *b) {
  if (a->rank != b->rank) return 0;
  for (int i = 0; i < a->rank; i++) {
    if (a->d[i] != b->d[i]) return 0;
  }
  return 1;
}

/* ct_place_equal, inline, for hot paths: the same kind, and the same device on CUDA. */
static inline int ct__place_eq(ct_place a, ct_place b) {
  return a.kind == b.kind && (a.kind != CT_DEVICE_CUDA || a.device == b.device);
}

/* a * b into *out; returns 0 on overflow. */
static inline int ct__mul_size(size_t a, size_t b, size_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}

#endif /* CORTEN_CORE_COMMON_H */
