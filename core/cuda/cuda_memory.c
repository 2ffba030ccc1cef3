/* SPDX-License-Identifier: Apache-2.0 */
/* core/cuda/cuda_memory.c: device memory (the pool over cudaMalloc), page-locked host memory
 * (cudaHostAlloc) and copies that touch a device. */
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "cuda/cuda_device.h"

/* This thread's last CUDA-place allocation failure that was not a lack of memory. */
static _Thread_local ct_status tls_alloc_error = CT_OK;

ct_status ct__cuda_take_alloc_error(void) {
  ct_status s = tls_alloc_error;
  tls_alloc_error = CT_OK;
  return s;
}

/* ---- The pool's backing: the driver ------------------------------------------------------- */

static ct_status backing_alloc(void *ctx, size_t size, void **ptr) {
  ct__cuda_dev *d = ctx;
  ct__cuda_guard g;
  if (ct__cuda_guard_enter(&g, d->device) != CT_OK) return ct_last_status();
  cudaError_t e = cudaMalloc(ptr, size);
  ct__cuda_guard_exit(&g);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    return CT_ERR_OUT_OF_MEMORY;
  }
  if (e != cudaSuccess) return ct__cuda_fail(e, d->device, "cudaMalloc of %zu bytes", size);
  return CT_OK;
}

static ct_status backing_free(void *ctx, void *ptr, size_t size) {
  ct__cuda_dev *d = ctx;
  ct__cuda_guard g;
  if (ct__cuda_guard_enter(&g, d->device) != CT_OK) return ct_last_status();
  cudaError_t e = cudaFree(ptr);
  ct__cuda_guard_exit(&g);
  if (e != cudaSuccess) return ct__cuda_fail(e, d->device, "cudaFree of %zu bytes", size);
  return CT_OK;
}

static ct_status backing_event_record(void *ctx, void *stream, void **event) {
  ct__cuda_dev *d = ctx;
  ct__cuda_guard g;
  cudaEvent_t ev = NULL;
  if (ct__cuda_guard_enter(&g, d->device) != CT_OK) return ct_last_status();
  cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
  if (e == cudaSuccess) {
    e = cudaEventRecord(ev, (cudaStream_t)stream);
    if (e != cudaSuccess) {
      (void)cudaEventDestroy(ev);
      ct__cuda_guard_exit(&g);
      return ct__cuda_fail(e, d->device, "cudaEventRecord");
    }
  }
  ct__cuda_guard_exit(&g);
  if (e != cudaSuccess) return ct__cuda_fail(e, d->device, "cudaEventCreateWithFlags");
  *event = ev;
  return CT_OK;
}

static int backing_event_query(void *ctx, void *event) {
  ct__cuda_dev *d = ctx;
  cudaError_t e = cudaEventQuery((cudaEvent_t)event);
  if (e == cudaSuccess) return 1;
  if (e == cudaErrorNotReady) return 0;
  return (int)ct__cuda_fail(e, d->device, "cudaEventQuery");
}

static void backing_event_free(void *ctx, void *event) {
  (void)ctx;
  if (cudaEventDestroy((cudaEvent_t)event) != cudaSuccess) (void)cudaGetLastError();
}

static ct_status backing_synchronize(void *ctx) {
  ct__cuda_dev *d = ctx;
  ct__cuda_guard g;
  if (ct__cuda_guard_enter(&g, d->device) != CT_OK) return ct_last_status();
  cudaError_t e = cudaDeviceSynchronize();
  ct__cuda_guard_exit(&g);
  if (e != cudaSuccess) return ct__cuda_fail(e, d->device, "cudaDeviceSynchronize");
  return CT_OK;
}

void ct__cuda_pool_backing(ct__cuda_dev *d, ct__pool_backing *out) {
  out->alloc = backing_alloc;
  out->free = backing_free;
  out->event_record = backing_event_record;
  out->event_query = backing_event_query;
  out->event_free = backing_event_free;
  out->synchronize = backing_synchronize;
  out->ctx = d;
}

/* ---- Device blocks ------------------------------------------------------------------------ */

void *ct__cuda_alloc(int device, size_t nbytes, void **handle) {
  ct__cuda_dev *d = ct__cuda_dev_get(device);
  if (CT__UNLIKELY(d == NULL)) return NULL; /* out of host memory: the caller reports it */
  ct_stream *s = ct__cuda_current(device);
  ct__pool_stream key = {s->id, (void *)s->handle};
  ct__pool_chunk *c;
  void *ptr;
  ct_status st = ct__pool_alloc(d->pool, nbytes, key, &c, &ptr);
  if (CT__UNLIKELY(st != CT_OK)) {
    if (st != CT_ERR_OUT_OF_MEMORY) tls_alloc_error = st;
    return NULL;
  }
  *handle = c;
  return ptr;
}

void ct__cuda_release(int device, void *handle) {
  ct__pool_release(ct__cuda_dev_peek(device)->pool, handle);
}

size_t ct__cuda_reserved(int device) {
  ct__cuda_dev *d = ct__cuda_dev_peek(device);
  if (d == NULL) return 0;
  ct__pool_stats st;
  ct__pool_get_stats(d->pool, &st);
  return st.reserved;
}

/* ---- Page-locked host memory -------------------------------------------------------------- */

static void *host_alloc(void *ctx, size_t size, size_t align) {
  void *p = NULL;
  (void)ctx;
  /* Portable: page-locked for every device's context, not only the current one. */
  cudaError_t e = cudaHostAlloc(&p, size, cudaHostAllocPortable);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    return NULL;
  }
  if (e != cudaSuccess) {
    tls_alloc_error = ct__cuda_fail(e, -1, "cudaHostAlloc of %zu bytes", size);
    return NULL;
  }
  if (((uintptr_t)p & (align - 1)) != 0) { /* page-aligned in practice; never trust it blindly */
    (void)cudaFreeHost(p);
    tls_alloc_error = ct__error(CT_ERR_DEVICE,
                                "cudaHostAlloc of %zu bytes returned %p, not %zu-byte aligned",
                                size, p, align);
    return NULL;
  }
  return p;
}

static void host_free(void *ctx, void *ptr, size_t size) {
  (void)ctx;
  (void)size;
  if (cudaFreeHost(ptr) != cudaSuccess) (void)cudaGetLastError();
}

const ct_allocator ct__cuda_host_allocator = {.alloc = host_alloc, .free = host_free, .ctx = NULL};

/* ---- Copies ------------------------------------------------------------------------------- */

/* Waits for the current stream of device (whose state exists). */
static ct_status sync_current(int device, const char *why) {
  ct__cuda_guard g;
  if (ct__cuda_guard_enter(&g, device) != CT_OK) return ct_last_status();
  cudaError_t e = cudaStreamSynchronize(ct__cuda_stream(device));
  ct__cuda_guard_exit(&g);
  if (e != cudaSuccess) return ct__cuda_fail(e, device, "cudaStreamSynchronize (%s)", why);
  return CT_OK;
}

/* A same-device copy whose ranges overlap: through a scratch chunk of the pool. */
static ct_status copy_overlapping(void *dst, const void *src, size_t n, int device,
                                  cudaStream_t stream, const char *what) {
  void *handle, *tmp = ct__cuda_alloc(device, n, &handle);
  if (tmp == NULL) {
    if (ct__cuda_take_alloc_error() != CT_OK) return ct_last_status();
    return ct__error(CT_ERR_OUT_OF_MEMORY,
                     "%s: no device memory on cuda:%d for a %zu-byte scratch buffer (source and "
                     "destination overlap): free some tensors",
                     what, device, n);
  }
  cudaError_t e = cudaMemcpyAsync(tmp, src, n, cudaMemcpyDeviceToDevice, stream);
  if (e == cudaSuccess) e = cudaMemcpyAsync(dst, tmp, n, cudaMemcpyDeviceToDevice, stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  ct__cuda_release(device, handle);
  if (e != cudaSuccess) return ct__cuda_fail(e, device, "%s: cudaMemcpyAsync via scratch", what);
  return CT_OK;
}

ct_status ct__cuda_memcpy(void *dst, ct_place dst_place, const void *src, ct_place src_place,
                          size_t n) {
  char a[CT__PLACE_STR_CAP], b[CT__PLACE_STR_CAP], what[128];
  bool to_dev = dst_place.kind == CT_DEVICE_CUDA, from_dev = src_place.kind == CT_DEVICE_CUDA;
  if (n == 0) return CT_OK;
  /* The copy runs on the current stream of the source device (device to host, device to
   * device) or of the destination device (host to device). */
  int device = from_dev ? src_place.device : dst_place.device;
  snprintf(what, sizeof what, "copying %zu bytes %s -> %s", n,
           ct_place_str(src_place, a, sizeof a), ct_place_str(dst_place, b, sizeof b));
  if (ct__cuda_setup(device) != CT_OK) return ct_last_status();
  bool peer = to_dev && from_dev && dst_place.device != src_place.device;
  if (peer) {
    /* Work queued on the destination's stream may still use the bytes being overwritten. */
    if (ct__cuda_setup(dst_place.device) != CT_OK) return ct_last_status();
    ct_status s = sync_current(dst_place.device, what);
    if (s != CT_OK) return s;
  }
  ct__cuda_guard g;
  if (ct__cuda_guard_enter(&g, device) != CT_OK) return ct_last_status();
  cudaStream_t stream = ct__cuda_stream(device);
  cudaError_t e;
  const char *call = "cudaMemcpyAsync";
  if (peer) {
    call = "cudaMemcpyPeerAsync";
    e = cudaMemcpyPeerAsync(dst, dst_place.device, src, src_place.device, n, stream);
  } else if (to_dev && from_dev) {
    const char *d = dst, *s = src;
    if (d == s) {
      ct__cuda_guard_exit(&g);
      return sync_current(device, what); /* nothing to move; still ordered after queued work */
    }
    if (d < s + n && s < d + n) {
      ct_status st = copy_overlapping(dst, src, n, device, stream, what);
      ct__cuda_guard_exit(&g);
      return st;
    }
    e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, stream);
  } else {
    e = cudaMemcpyAsync(dst, src, n, to_dev ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost,
                        stream);
  }
  if (e == cudaSuccess) {
    call = "cudaStreamSynchronize after the copy";
    e = cudaStreamSynchronize(stream);
  }
  ct__cuda_guard_exit(&g);
  if (e != cudaSuccess) return ct__cuda_fail(e, device, "%s: %s", what, call);
  return CT_OK;
}
