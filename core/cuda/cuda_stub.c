/* SPDX-License-Identifier: Apache-2.0 */
/* core/cuda/cuda_stub.c: the CUDA places in a build without CUDA. Every CUDA place is refused
 * with CT_ERR_UNSUPPORTED; there are no devices, streams or cached bytes. */
#include <corten/cuda.h>

#include "common/common.h"
#include "cuda/cuda_place.h"
#include "cuda/cuda_timer.h"

int ct_cuda_device_count(void) { return 0; }

bool ct_cuda_is_built(void) { return false; }

ct_status ct__cuda_place_check(ct_place place, const char *what) {
  char p[CT__PLACE_STR_CAP];
  return ct__error(CT_ERR_UNSUPPORTED,
                   "%s: place %s is not available: corten was built without CUDA; rebuild with "
                   "a CUDA toolkit (CORTEN_CUDA=ON), or use ct_cpu()",
                   what, ct_place_str(place, p, sizeof p));
}

/* Unreachable: the place check above lets no CUDA place through. */
void *ct__cuda_alloc(int device, size_t nbytes, void **handle) {
  (void)device;
  (void)nbytes;
  (void)handle;
  return NULL;
}

void ct__cuda_release(int device, void *handle) {
  (void)device;
  (void)handle;
}

size_t ct__cuda_reserved(int device) {
  (void)device;
  return 0;
}

static void *no_alloc(void *ctx, size_t size, size_t align) {
  (void)ctx;
  (void)size;
  (void)align;
  return NULL;
}

static void no_free(void *ctx, void *ptr, size_t size) {
  (void)ctx;
  (void)ptr;
  (void)size;
}

const ct_allocator ct__cuda_host_allocator = {.alloc = no_alloc, .free = no_free, .ctx = NULL};

ct_status ct__cuda_take_alloc_error(void) { return CT_OK; }

ct_status ct__cuda_memcpy(void *dst, ct_place dst_place, const void *src, ct_place src_place,
                          size_t n) {
  (void)dst;
  (void)src;
  (void)n;
  return ct__cuda_place_check(dst_place.kind == CT_DEVICE_CUDA ? dst_place : src_place,
                              "copy");
}

/* ---- Public API --------------------------------------------------------------------------- */

static ct_status refuse(ct_place place, const char *what) {
  char p[CT__PLACE_STR_CAP];
  if (!ct__place_valid(place)) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "%s: %s is not a place: use ct_cpu(), ct_cuda(n) or ct_cuda_host()", what,
                     ct_place_str(place, p, sizeof p));
  }
  return ct__cuda_place_check(place, what);
}

/* Streams: a host place is the caller's mistake in any build; a CUDA place is not built in. */
static void refuse_stream(ct_place place, const char *what) {
  char p[CT__PLACE_STR_CAP];
  if (ct__place_valid(place) && place.kind != CT_DEVICE_CUDA) {
    ct__error(CT_ERR_INVALID_ARGUMENT,
              "%s: %s is a host place: streams belong to CUDA devices, pass ct_cuda(n)", what,
              ct_place_str(place, p, sizeof p));
    return;
  }
  refuse(place, what);
}

ct_stream *ct_stream_new(ct_place place) {
  refuse_stream(place, "ct_stream_new");
  return NULL;
}

void ct_stream_free(ct_stream *s) { (void)s; }

ct_stream *ct_stream_default(ct_place place) {
  refuse_stream(place, "ct_stream_default");
  return NULL;
}

ct_stream *ct_stream_current(ct_place place) {
  refuse_stream(place, "ct_stream_current");
  return NULL;
}

ct_status ct_stream_set_current(ct_stream *s) {
  (void)s;
  return ct__error(CT_ERR_INVALID_ARGUMENT,
                   "ct_stream_set_current: the stream is NULL (corten was built without CUDA, "
                   "so there are no streams)");
}

ct_status ct_stream_synchronize(ct_stream *s) {
  (void)s;
  return ct__error(CT_ERR_INVALID_ARGUMENT,
                   "ct_stream_synchronize: the stream is NULL (corten was built without CUDA, "
                   "so there are no streams)");
}

ct_place ct_stream_place(const ct_stream *s) {
  (void)s;
  return ct_cpu();
}

void *ct_stream_handle(const ct_stream *s) {
  (void)s;
  return NULL;
}

ct_status ct_device_synchronize(ct_place place) {
  if (place.kind == CT_DEVICE_CPU) return CT_OK;
  return refuse(place, "ct_device_synchronize");
}

ct_status ct_cuda_empty_cache(void) { return CT_OK; }

ct_status ct__cuda_empty_device_cache(int device) {
  (void)device;
  return CT_OK;
}

/* ---- Profiler marks: no CUDA place runs in this build ------------------------------------- */

ct__cuda_mark *ct__cuda_mark_begin(int device) {
  (void)device;
  return NULL;
}

void ct__cuda_mark_end(ct__cuda_mark *m) { (void)m; }
void ct__cuda_mark_ref(ct__cuda_mark *m) { (void)m; }
void ct__cuda_mark_unref(ct__cuda_mark *m) { (void)m; }

bool ct__cuda_mark_time(ct__cuda_mark *m, ct__cuda_mark *from, int64_t *dur_ns,
                        int64_t *from_ns) {
  (void)m, (void)from, (void)dur_ns, (void)from_ns;
  return false;
}
