/* SPDX-License-Identifier: Apache-2.0 */
/* corten/cuda.h: the CUDA places: streams, synchronization and the device memory cache.
 *
 * Tensors live on a GPU at ct_cuda(i) and in page-locked host memory at ct_cuda_host(), exactly
 * as on ct_cpu(): ct_tensor_mutable_data allocates there, ct_tensor_copy and ct_tensor_set_value
 * copy between any two places, ct_memory_stats_get counts the bytes.
 *
 * In a build without CUDA, ct_cuda_device_count() is 0 and every CUDA place gives
 * CT_ERR_UNSUPPORTED ("built without CUDA"). In a CUDA build on a machine without a usable GPU
 * (or driver), the places give CT_ERR_DEVICE ("no CUDA device", with CUDA's own reason). Every
 * CUDA call corten makes is checked: a failure is CT_ERR_DEVICE naming the call and CUDA's
 * error text.
 *
 * Device memory comes from a caching allocator per device (docs/design/cuda-memory.md): sizes
 * round up to 512 bytes, freed blocks are kept for reuse on the stream they were allocated on,
 * and the stats of ct_cuda(i) say allocated (what tensors asked for) and reserved (what is held
 * from the driver, the cache included). Page-locked memory comes from cudaHostAlloc, one call
 * per block.
 *
 * Streams. Each device has a default stream (CUDA's legacy default stream) and each thread a
 * current stream per device, the default until ct_stream_set_current says otherwise. Device
 * memory is allocated for, and reused on, the current stream; copies run on it and are
 * synchronous: when ct_tensor_copy returns, the bytes are in place. Streams made by
 * ct_stream_new do not synchronize with the default stream (cudaStreamNonBlocking): order work
 * across streams with ct_stream_synchronize or ct_device_synchronize.
 *
 * A block freed on the stream it was allocated for may be handed out again at once on that
 * stream. So a tensor that work on another stream still reads must outlive that work: before
 * freeing (or letting an executor free) a tensor used on a second stream, synchronize that
 * stream. matmul calls on several streams of one device at the same time share cuBLAS's
 * default workspace; run them on one stream, or synchronize between them.
 *
 * Thread-safety: each thread has its own current stream per device (ct_stream_set_current
 * changes only the caller's); ct_stream_free says which stream must not be freed. */
#ifndef CORTEN_CUDA_H
#define CORTEN_CUDA_H

#include <stdbool.h>

#include <corten/status.h>
#include <corten/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Whether this corten was built with the CUDA place (whatever the machine has). */
CT_API bool ct_cuda_is_built(void);

typedef struct ct_stream ct_stream;

/* A new stream on the CUDA device of place (ct_cuda(i)), owned by the caller: free it with
 * ct_stream_free.
 * Errors (NULL returned):
 *   CT_ERR_INVALID_ARGUMENT  place is not a valid place, or is a host place
 *   CT_ERR_UNSUPPORTED       a build without CUDA
 *   CT_ERR_DEVICE            no such device, or a CUDA failure
 *   CT_ERR_OUT_OF_MEMORY     no host memory for the stream */
CT_NODISCARD CT_API ct_stream *ct_stream_new(ct_place place);

/* Waits for the stream's work, then releases it. Device memory cached for the stream becomes
 * usable on every stream. The default stream is never freed (passing it does nothing), nor is
 * NULL. Do not free a stream that another thread has as its current stream. */
CT_API void ct_stream_free(ct_stream *s);

/* The device's default stream, owned by corten (never NULL for a usable CUDA place).
 * Errors (NULL returned): those of ct_stream_new but CT_ERR_OUT_OF_MEMORY. */
CT_API ct_stream *ct_stream_default(ct_place place);

/* The calling thread's current stream on the device: the default stream until
 * ct_stream_set_current. The stream is not the caller's to free unless it made it.
 * Errors (NULL returned): those of ct_stream_new but CT_ERR_OUT_OF_MEMORY. */
CT_API ct_stream *ct_stream_current(ct_place place);

/* Makes s the calling thread's current stream on s's device.
 * Errors:
 *   CT_ERR_INVALID_ARGUMENT  s is NULL (always the case without CUDA: there are no streams) */
CT_API ct_status ct_stream_set_current(ct_stream *s);

/* Blocks until the work queued on s has finished.
 * Errors:
 *   CT_ERR_INVALID_ARGUMENT  s is NULL
 *   CT_ERR_DEVICE            a CUDA failure, including one of earlier asynchronous work */
CT_API ct_status ct_stream_synchronize(ct_stream *s);

/* The place of the stream's device; ct_cpu() for NULL. */
CT_API ct_place ct_stream_place(const ct_stream *s);

/* The stream's cudaStream_t, for CUDA code outside corten (NULL is the legacy default stream,
 * which is also what the default stream gives, and what NULL s gives). */
CT_API void *ct_stream_handle(const ct_stream *s);

/* Blocks until the place is idle: ct_cuda(i) waits for all work on device i
 * (cudaDeviceSynchronize); ct_cuda_host() for every device corten has used; ct_cpu() returns
 * CT_OK at once.
 * Errors:
 *   CT_ERR_INVALID_ARGUMENT  place is not a valid place
 *   CT_ERR_UNSUPPORTED       a CUDA place in a build without CUDA
 *   CT_ERR_DEVICE            no such device, or a CUDA failure */
CT_API ct_status ct_device_synchronize(ct_place place);

/* Returns the device memory cached by corten (every segment no tensor uses) to the driver, on
 * every device: reserved drops to what tensors hold. Waits for each device first. CT_OK when
 * nothing is cached or without CUDA. Thread-safe.
 * Errors:
 *   CT_ERR_DEVICE            a CUDA call fails */
CT_API ct_status ct_cuda_empty_cache(void);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_CUDA_H */
