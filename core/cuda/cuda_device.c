/* SPDX-License-Identifier: Apache-2.0 */
/* core/cuda/cuda_device.c: devices: how many there are, whether a place can be used, their
 * lazily made state, device guards, CUDA error text, synchronization and the cache. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/alloc.h"
#include "common/common.h"
#include "cuda/cuda_device.h"

/* ---- Device count ------------------------------------------------------------------------- */

static pthread_once_t count_once = PTHREAD_ONCE_INIT;
static int device_count;                 /* usable devices, at most CT__CUDA_MAX_DEVICES */
static int devices_found;                /* what CUDA reported */
static cudaError_t count_error = cudaSuccess;

static void count_devices(void) {
  int n = 0;
  count_error = cudaGetDeviceCount(&n);
  if (count_error != cudaSuccess) {
    (void)cudaGetLastError();
    n = 0;
  }
  devices_found = n;
  device_count = n < CT__CUDA_MAX_DEVICES ? n : CT__CUDA_MAX_DEVICES;
}

int ct_cuda_device_count(void) {
  pthread_once(&count_once, count_devices);
  return device_count;
}

bool ct_cuda_is_built(void) { return true; }

ct_status ct__cuda_place_check(ct_place place, const char *what) {
  char p[CT__PLACE_STR_CAP];
  int n = ct_cuda_device_count();
  if (n == 0) {
    if (count_error != cudaSuccess) {
      return ct__error(CT_ERR_DEVICE,
                       "%s: place %s is not available: no CUDA device (cudaGetDeviceCount: %s, "
                       "%s): run where an NVIDIA GPU and driver are, or use ct_cpu()",
                       what, ct_place_str(place, p, sizeof p), cudaGetErrorString(count_error),
                       cudaGetErrorName(count_error));
    }
    return ct__error(CT_ERR_DEVICE,
                     "%s: place %s is not available: no CUDA device (cudaGetDeviceCount found "
                     "none; check CUDA_VISIBLE_DEVICES), or use ct_cpu()",
                     what, ct_place_str(place, p, sizeof p));
  }
  if (place.kind == CT_DEVICE_CUDA && place.device >= n) {
    if (place.device < devices_found) {
      return ct__error(CT_ERR_DEVICE,
                       "%s: place %s is not available: corten serves the first %d CUDA devices",
                       what, ct_place_str(place, p, sizeof p), CT__CUDA_MAX_DEVICES);
    }
    return ct__error(CT_ERR_DEVICE,
                     "%s: place %s does not exist: %d CUDA device%s visible (cuda:0 .. cuda:%d)",
                     what, ct_place_str(place, p, sizeof p), n, n == 1 ? " is" : "s are", n - 1);
  }
  return CT_OK;
}

/* ---- Errors and guards -------------------------------------------------------------------- */

ct_status ct__cuda_fail(cudaError_t err, int device, const char *what, ...) {
  char call[256], dev[32] = "";
  va_list ap;
  va_start(ap, what);
  if (vsnprintf(call, sizeof call, what, ap) < 0) call[0] = '\0';
  va_end(ap);
  if (device >= 0) snprintf(dev, sizeof dev, " on cuda:%d", device);
  (void)cudaGetLastError(); /* reported here; do not let a later check see it again */
  return ct__error(CT_ERR_DEVICE, "%s failed%s: %s (%s)", call, dev, cudaGetErrorString(err),
                   cudaGetErrorName(err));
}

ct_status ct__cuda_guard_enter(ct__cuda_guard *g, int device) {
  g->device = device;
  g->prev = -1;
  cudaError_t e = cudaGetDevice(&g->prev);
  if (e != cudaSuccess) {
    g->prev = -1;
    return ct__cuda_fail(e, device, "cudaGetDevice");
  }
  if (g->prev != device) {
    e = cudaSetDevice(device);
    if (e != cudaSuccess) {
      g->prev = -1;
      return ct__cuda_fail(e, device, "cudaSetDevice(%d)", device);
    }
  }
  return CT_OK;
}

void ct__cuda_guard_exit(ct__cuda_guard *g) {
  if (g->prev >= 0 && g->prev != g->device) (void)cudaSetDevice(g->prev);
  g->prev = -1;
}

/* ---- Device state ------------------------------------------------------------------------- */

static _Atomic(ct__cuda_dev *) devs[CT__CUDA_MAX_DEVICES];
static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t next_stream_id = 1;

uint64_t ct__cuda_next_stream_id(void) {
  return atomic_fetch_add_explicit(&next_stream_id, 1, memory_order_relaxed);
}

ct__cuda_dev *ct__cuda_dev_peek(int device) {
  if (device < 0 || device >= CT__CUDA_MAX_DEVICES) return NULL;
  return atomic_load_explicit(&devs[device], memory_order_acquire);
}

ct__cuda_dev *ct__cuda_dev_get(int device) {
  ct__cuda_dev *d = ct__cuda_dev_peek(device);
  if (CT__LIKELY(d != NULL)) return d;
  pthread_mutex_lock(&setup_lock);
  d = atomic_load_explicit(&devs[device], memory_order_relaxed);
  if (d == NULL) {
    d = ct__calloc(1, sizeof *d);
    if (d != NULL) {
      ct__pool_backing b;
      d->device = device;
      d->default_stream.handle = NULL;
      d->default_stream.device = device;
      d->default_stream.id = ct__cuda_next_stream_id();
      d->default_stream.is_default = true;
      ct__cuda_pool_backing(d, &b);
      d->pool = ct__pool_new(&b);
      if (d->pool == NULL) {
        free(d);
        d = NULL;
      } else {
        atomic_store_explicit(&devs[device], d, memory_order_release);
      }
    }
  }
  pthread_mutex_unlock(&setup_lock);
  if (d == NULL) {
    ct__error(CT_ERR_OUT_OF_MEMORY,
              "setting up cuda:%d: out of host memory for the device's pool: free some memory",
              device);
  }
  return d;
}

ct_status ct__cuda_setup(int device) {
  return ct__cuda_dev_get(device) != NULL ? CT_OK : ct_last_status();
}

/* ---- Synchronization and the cache -------------------------------------------------------- */

static ct_status sync_device(int device, const char *what) {
  ct__cuda_guard g;
  if (ct__cuda_guard_enter(&g, device) != CT_OK) return ct_last_status();
  cudaError_t e = cudaDeviceSynchronize();
  ct__cuda_guard_exit(&g);
  if (e != cudaSuccess) return ct__cuda_fail(e, device, "%s: cudaDeviceSynchronize", what);
  return CT_OK;
}

ct_status ct_device_synchronize(ct_place place) {
  char p[CT__PLACE_STR_CAP];
  if (place.kind == CT_DEVICE_CPU) return CT_OK;
  if (!ct__place_valid(place)) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_device_synchronize: %s is not a place: use ct_cpu(), ct_cuda(n) or "
                     "ct_cuda_host()",
                     ct_place_str(place, p, sizeof p));
  }
  ct_status s = ct__cuda_place_check(place, "ct_device_synchronize");
  if (s != CT_OK) return s;
  if (place.kind == CT_DEVICE_CUDA) return sync_device(place.device, "ct_device_synchronize");
  for (int i = 0; i < CT__CUDA_MAX_DEVICES; i++) { /* cuda_host: every device corten used */
    if (ct__cuda_dev_peek(i) == NULL) continue;
    s = sync_device(i, "ct_device_synchronize(cuda_host)");
    if (s != CT_OK) return s;
  }
  return CT_OK;
}

ct_status ct__cuda_empty_device_cache(int device) {
  ct__cuda_dev *d = ct__cuda_dev_peek(device);
  return d == NULL ? CT_OK : ct__pool_empty_cache(d->pool);
}

ct_status ct_cuda_empty_cache(void) {
  ct_status first = CT_OK;
  for (int i = 0; i < CT__CUDA_MAX_DEVICES; i++) {
    ct_status s = ct__cuda_empty_device_cache(i);
    if (first == CT_OK) first = s;
  }
  return first;
}
