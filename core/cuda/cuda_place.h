/* SPDX-License-Identifier: Apache-2.0 */
/* core/cuda/cuda_place.h: what the memory module asks of the CUDA places.
 *
 * No CUDA header here: core/memory calls these in every build. A CUDA build implements them in
 * cuda_device.c and cuda_memory.c; a CPU-only build in cuda_stub.c, whose place check refuses
 * every CUDA place with CT_ERR_UNSUPPORTED, so the other entries are never reached there. */
#ifndef CORTEN_CORE_CUDA_PLACE_H
#define CORTEN_CORE_CUDA_PLACE_H

#include <stddef.h>

#include <corten/memory.h>

/* Devices corten serves; ordinals past it are reported as absent. */
#define CT__CUDA_MAX_DEVICES 64

/* Device blocks are requested in multiples of this, and aligned to at least 256 bytes. */
#define CT__CUDA_BLOCK_ROUND ((size_t)512)
#define CT__CUDA_BLOCK_ALIGN ((size_t)256)

/* Checks that a valid CUDA or CUDA-host place can hold memory now: CT_OK, or records
 * CT_ERR_UNSUPPORTED (built without CUDA) or CT_ERR_DEVICE (no CUDA device, no such ordinal). */
ct_status ct__cuda_place_check(ct_place place, const char *what);

/* nbytes bytes of device memory from device's caching pool, for the calling thread's current
 * stream (the device passed ct__cuda_place_check). *handle identifies the chunk for
 * ct__cuda_release. NULL on failure: out of memory records nothing (the caller says what needed
 * the bytes), any other failure is recorded and left for ct__cuda_take_alloc_error. */
void *ct__cuda_alloc(int device, size_t nbytes, void **handle);

/* Gives a chunk back to device's pool. */
void ct__cuda_release(int device, void *handle);

/* Gives the free blocks of device's caching pool back to the driver (nothing before its first
 * allocation). CT_OK or the CT_ERR_DEVICE recorded. */
ct_status ct__cuda_empty_device_cache(int device);

/* Bytes device's pool holds from the driver (0 before its first allocation). */
size_t ct__cuda_reserved(int device);

/* The default allocator of ct_cuda_host(): cudaHostAlloc / cudaFreeHost. */
extern const ct_allocator ct__cuda_host_allocator;

/* CT_ERR_DEVICE when this thread's last failed CUDA-place allocation failed for a reason other
 * than memory (the message is ct_last_error()), else CT_OK. Clears the note. */
ct_status ct__cuda_take_alloc_error(void);

/* Copies n bytes where at least one side is a CUDA place, synchronously on the current stream
 * of the device involved. CT_OK or the CT_ERR_DEVICE recorded. */
ct_status ct__cuda_memcpy(void *dst, ct_place dst_place, const void *src, ct_place src_place,
                          size_t n);

#endif /* CORTEN_CORE_CUDA_PLACE_H */
