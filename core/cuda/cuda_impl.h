/* SPDX-License-Identifier: Apache-2.0 */
/* core/cuda/cuda_impl.h: what CUDA code inside corten shares: the stream object, the current
 * stream of a device, device guards and error reporting.
 *
 * For C files and for .cu files (nvcc, C++): it includes only the CUDA runtime API and public
 * corten headers. Device code of the place itself (core/cuda/fill.cu) launches on
 * ct__cuda_stream(device) under a guard and reports a failed launch with ct__cuda_fail:
 *
 *   ct__cuda_guard g;
 *   if (ct__cuda_guard_enter(&g, device) != CT_OK) return ct_last_status();
 *   my_kernel<<<blocks, threads, 0, ct__cuda_stream(device)>>>(...);
 *   cudaError_t e = cudaGetLastError();
 *   ct__cuda_guard_exit(&g);
 *   if (e != cudaSuccess) return ct__cuda_fail(e, device, "my kernel launch");
 *
 * Operator kernels live above the place, in the op layer's CUDA backend, which builds its own
 * launch convention (naming the op in each error) on these same calls.
 */
#ifndef CORTEN_CORE_CUDA_IMPL_H
#define CORTEN_CORE_CUDA_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include <corten/cuda.h>
#include <corten/status.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ct_stream {
  cudaStream_t handle; /* NULL for the default stream: CUDA's legacy default stream */
  int device;
  uint64_t id;         /* unique for the process's lifetime; the caching pool keys chunks by it */
  bool is_default;
};

#ifdef __cplusplus
/* common/common.h's error recorder, for .cu files (that header is C only). */
ct_status ct__error(ct_status s, const char *fmt, ...);
#endif

/* Records CT_ERR_DEVICE as "<what> failed on cuda:<device>: <CUDA's text> (<error name>)",
 * where what is printf-formatted (name the call: "cudaMalloc of 4096 bytes"), and returns it.
 * Clears CUDA's last-error note, so that a later check does not report this failure again.
 * device < 0 leaves the device out of the text. */
ct_status ct__cuda_fail(cudaError_t err, int device, const char *what, ...)
    __attribute__((cold, format(printf, 3, 4)));

/* The calling thread's current stream on device: the one set by ct_stream_set_current, else the
 * device's default stream. The device must have been set up (it passed the place check and
 * holds memory, or a stream was asked of it); see ct__cuda_setup. */
ct_stream *ct__cuda_current(int device);

/* The cudaStream_t of the current stream, for kernel launches. */
cudaStream_t ct__cuda_stream(int device);

/* Sets device's state up (its pool, its default stream) if that has not happened yet. CT_OK or
 * CT_ERR_OUT_OF_MEMORY recorded. The device must exist. */
ct_status ct__cuda_setup(int device);

/* Makes device the calling thread's current CUDA device until ct__cuda_guard_exit, which
 * restores the previous one. CT_OK or CT_ERR_DEVICE recorded (then exit is a no-op). */
typedef struct ct__cuda_guard {
  int prev;
  int device;
} ct__cuda_guard;

ct_status ct__cuda_guard_enter(ct__cuda_guard *g, int device);
void ct__cuda_guard_exit(ct__cuda_guard *g);

/* Fills numel elements of elem_size bytes (1, 2, 4 or 8) at dst on device with the value at
 * *value, on the device's current stream (asynchronous, like a kernel). CT_OK,
 * CT_ERR_INVALID_ARGUMENT for another elem_size, or CT_ERR_DEVICE recorded. */
ct_status ct__cuda_fill(void *dst, size_t numel, size_t elem_size, const void *value,
                        int device);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_CORE_CUDA_IMPL_H */
