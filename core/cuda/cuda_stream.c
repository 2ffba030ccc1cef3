/* SPDX-License-Identifier: Apache-2.0 */
/* core/cuda/cuda_stream.c: streams, and each thread's current stream per device. */
#include <stdlib.h>

#include "common/alloc.h"
#include "common/common.h"
#include "cuda/cuda_device.h"

/* The calling thread's current stream per device; NULL means the device's default stream. */
static _Thread_local ct_stream *tls_current[CT__CUDA_MAX_DEVICES];

ct_stream *ct__cuda_current(int device) {
  ct_stream *s = tls_current[device];
  return s != NULL ? s : &ct__cuda_dev_peek(device)->default_stream;
}

/* The default stream's handle is NULL (the legacy default stream), so this needs no device state:
 * a launch works even on a device corten has not allocated on (wrapped buffers, a replaced
 * allocator). */
cudaStream_t ct__cuda_stream(int device) {
  ct_stream *s = tls_current[device];
  return s != NULL ? s->handle : NULL;
}

void ct__cuda_forget_current(const ct_stream *s) {
  if (tls_current[s->device] == s) tls_current[s->device] = NULL;
}

/* The state of the device of a CUDA place for a stream call; NULL with the error recorded. */
static ct__cuda_dev *stream_device(ct_place place, const char *what) {
  char p[CT__PLACE_STR_CAP];
  if (!ct__place_valid(place)) {
    return ct__error_null(CT_ERR_INVALID_ARGUMENT,
                          "%s: %s is not a place: pass ct_cuda(n)", what,
                          ct_place_str(place, p, sizeof p));
  }
  if (place.kind != CT_DEVICE_CUDA) {
    return ct__error_null(CT_ERR_INVALID_ARGUMENT,
                          "%s: %s is a host place: streams belong to CUDA devices, pass "
                          "ct_cuda(n)",
                          what, ct_place_str(place, p, sizeof p));
  }
  if (ct__cuda_place_check(place, what) != CT_OK) return NULL;
  return ct__cuda_dev_get(place.device);
}

ct_stream *ct_stream_new(ct_place place) {
  ct__cuda_dev *d = stream_device(place, "ct_stream_new");
  if (d == NULL) return NULL;
  ct_stream *s = ct__calloc(1, sizeof *s);
  if (s == NULL) {
    return ct__error_null(CT_ERR_OUT_OF_MEMORY,
                          "ct_stream_new: out of host memory for a stream on cuda:%d",
                          place.device);
  }
  ct__cuda_guard g;
  if (ct__cuda_guard_enter(&g, place.device) != CT_OK) {
    free(s);
    return NULL;
  }
  cudaError_t e = cudaStreamCreateWithFlags(&s->handle, cudaStreamNonBlocking);
  ct__cuda_guard_exit(&g);
  if (e != cudaSuccess) {
    free(s);
    ct__cuda_fail(e, place.device, "ct_stream_new: cudaStreamCreateWithFlags");
    return NULL;
  }
  s->device = place.device;
  s->id = ct__cuda_next_stream_id();
  s->is_default = false;
  return s;
}

void ct_stream_free(ct_stream *s) {
  if (s == NULL || s->is_default) return;
  ct__cuda_dev *d = ct__cuda_dev_peek(s->device);
  ct__cuda_guard g;
  int guarded = ct__cuda_guard_enter(&g, s->device) == CT_OK;
  /* Its work must be done before its cached chunks serve other streams. A failure here is a
   * broken context; the chunks are then handed over anyway, as the device is unusable. */
  if (cudaStreamSynchronize(s->handle) != cudaSuccess) (void)cudaGetLastError();
  if (d != NULL) ct__pool_stream_retire(d->pool, s->id);
  if (cudaStreamDestroy(s->handle) != cudaSuccess) (void)cudaGetLastError();
  if (guarded) ct__cuda_guard_exit(&g);
  ct__cuda_forget_current(s);
  free(s);
}

ct_stream *ct_stream_default(ct_place place) {
  ct__cuda_dev *d = stream_device(place, "ct_stream_default");
  return d != NULL ? &d->default_stream : NULL;
}

ct_stream *ct_stream_current(ct_place place) {
  ct__cuda_dev *d = stream_device(place, "ct_stream_current");
  return d != NULL ? ct__cuda_current(place.device) : NULL;
}

ct_status ct_stream_set_current(ct_stream *s) {
  if (s == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_stream_set_current: the stream is NULL: pass ct_stream_new(...) or "
                     "ct_stream_default(...)");
  }
  tls_current[s->device] = s->is_default ? NULL : s;
  return CT_OK;
}

ct_status ct_stream_synchronize(ct_stream *s) {
  if (s == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_stream_synchronize: the stream is NULL");
  }
  ct__cuda_guard g;
  if (ct__cuda_guard_enter(&g, s->device) != CT_OK) return ct_last_status();
  cudaError_t e = cudaStreamSynchronize(s->handle);
  ct__cuda_guard_exit(&g);
  if (e != cudaSuccess) return ct__cuda_fail(e, s->device, "cudaStreamSynchronize");
  return CT_OK;
}

ct_place ct_stream_place(const ct_stream *s) { return s != NULL ? ct_cuda(s->device) : ct_cpu(); }

void *ct_stream_handle(const ct_stream *s) { return s != NULL ? (void *)s->handle : NULL; }
