/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/expr.c: the expression engine of CUDA places (corten/expr.h). A plan becomes CUDA
 * source (ops/expr/expr_source.c: one text per structure, dtype and broadcast pattern), which
 * the table of compiled kernels (ops/expr/nvrtc.h) turns into a binary for the device's
 * architecture, from memory, from the disk cache or from NVRTC. The binary is loaded once with
 * the runtime's cudaLibraryLoadData (a context-independent library: one load serves every
 * device of that architecture) and launched with the plan's values as parameters on the calling
 * thread's current stream of dst's device, asynchronously, like every CUDA kernel of the ops.
 *
 * The runtime is the one libcorten links statically; NVRTC is loaded with dlopen, as cuBLAS is,
 * so the library needs only the driver. */
#include <stdio.h>
#include <string.h>

#include "ops/cuda/cuda_kernels.h"
#include "ops/expr/nvrtc.h"
#include "common/alloc.h"

#include "cuda/cuda_impl.h"

#define KERNEL "ct_expr_kernel"
#define THREADS 256
#define MAX_BLOCKS 4096 /* as ops/cuda/grid.cuh: enough to fill any current GPU */

/* Unloads a dropped kernel's library (the table calls this when its last user lets go).
 * Launches of it may still be queued, so first the devices it was launched on (the mask that
 * ct__kernels_launching built: bit d for device d, bit 63 for any from 63 on) finish their work;
 * other devices, and this process's other work, are left alone. A library never launched waits
 * for nothing. Rare: only entries past the table's bound (CT__KERNELS_MAX) are dropped. */
static void unload(void *handle, uint64_t devices) {
  int n = 0, prev = 0;
  if (devices != 0 && cudaGetDevice(&prev) == cudaSuccess &&
      cudaGetDeviceCount(&n) == cudaSuccess) {
    for (int d = 0; d < n; d++) {
      if ((devices >> (d < 63 ? d : 63) & 1) == 0) continue;
      if (cudaSetDevice(d) == cudaSuccess) (void)cudaDeviceSynchronize();
    }
    (void)cudaSetDevice(prev);
  }
  (void)cudaLibraryUnload((cudaLibrary_t)handle);
  (void)cudaGetLastError();
}

/* k's function, loading its binary on first use. NULL with CT_ERR_DEVICE recorded. */
static cudaKernel_t function(ct__kernel *k, int dev, const char *target) {
  cudaKernel_t fn = (cudaKernel_t)ct__kernels_loaded(k);
  if (fn != NULL) return fn;
  cudaLibrary_t lib = NULL;
  cudaError_t e = cudaLibraryLoadData(&lib, k->bin, NULL, NULL, 0, NULL, NULL, 0);
  if (e == cudaSuccess) {
    e = cudaLibraryGetKernel(&fn, lib, KERNEL);
    if (e != cudaSuccess) (void)cudaLibraryUnload(lib);
  }
  if (e != cudaSuccess) {
    ct__cuda_fail(e, dev, "ct_expr_assign: loading the expression kernel compiled for %s "
                  "(cudaLibraryLoadData)", target);
    return NULL;
  }
  if (!ct__kernels_attach(k, lib, (void *)fn, unload)) {
    (void)cudaLibraryUnload(lib); /* another thread loaded it first */
    fn = (cudaKernel_t)ct__kernels_loaded(k);
  }
  return fn;
}

/* The target of device dev: its architecture as NVRTC names it. */
static ct_status target_of(int dev, char *buf, size_t cap) {
  int major = 0, minor = 0;
  cudaError_t e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  if (e != cudaSuccess) {
    return ct__cuda_fail(e, dev, "ct_expr_assign: asking the device's compute capability");
  }
  return ct__nvrtc_target(major, minor, buf, cap);
}

static ct_status launch(const ct__expr_plan *p, cudaKernel_t fn) {
  int dev = p->place.device;
  int np = ct__expr_cuda_params(p, NULL, NULL);
  ct__expr_param *param = ct__malloc((sizeof *param + sizeof(void *)) * (size_t)np);
  if (param == NULL) {
    return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_expr_assign: no memory for %d kernel parameters",
                     np);
  }
  void **args = (void **)(param + np);
  ct__expr_cuda_params(p, param, NULL);
  for (int i = 0; i < np; i++) args[i] = &param[i];
  int64_t blocks = (p->numel + THREADS - 1) / THREADS;
  dim3 grid = {(unsigned)(blocks < MAX_BLOCKS ? blocks : MAX_BLOCKS), 1, 1};
  dim3 block = {THREADS, 1, 1};
  ct__cuda_guard g;
  ct_status st = ct__cuda_setup(dev);
  if (st == CT_OK) st = ct__cuda_guard_enter(&g, dev);
  if (st == CT_OK) {
    cudaError_t e =
        cudaLaunchKernel((const void *)fn, grid, block, args, 0, ct__cuda_stream(dev));
    ct__cuda_guard_exit(&g);
    if (e != cudaSuccess) st = ct__cuda_fail(e, dev, "ct_expr_assign: the expression kernel's launch");
  }
  free(param);
  return st;
}

static ct_status eval(const ct__expr_plan *p) {
  int dev = p->place.device;
  char target[32];
  if (target_of(dev, target, sizeof target) != CT_OK) return ct_last_status();
  char *src = ct__expr_cuda_source(p, KERNEL);
  if (src == NULL) return ct_last_status();
  ct__kernel *k = ct__kernels_get(src, target);
  free(src);
  if (k == NULL) return ct_last_status();
  cudaKernel_t fn = function(k, dev, target);
  if (fn != NULL) ct__kernels_launching(k, dev); /* before the launch, while k is held */
  ct_status st = fn != NULL ? launch(p, fn) : ct_last_status();
  ct__kernels_put(k);
  return st;
}

const ct__expr_engine ct__cuda_expr = {.kind = CT_DEVICE_CUDA, .eval = eval};
