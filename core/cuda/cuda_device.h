/* SPDX-License-Identifier: Apache-2.0 */
/* core/cuda/cuda_device.h: the per-device state of a CUDA build (C files of core/cuda only). */
#ifndef CORTEN_CORE_CUDA_DEVICE_H
#define CORTEN_CORE_CUDA_DEVICE_H

#include "cuda/cuda_impl.h"
#include "cuda/cuda_place.h"
#include "cuda/cuda_pool.h"

/* One device corten has used: set up on first use, kept for the life of the process. */
typedef struct ct__cuda_dev {
  int device;
  ct__pool *pool;           /* the caching allocator of the device's memory */
  ct_stream default_stream; /* the legacy default stream (handle NULL) */
} ct__cuda_dev;

/* The device's state when it has been set up, else NULL. Lock-free. */
ct__cuda_dev *ct__cuda_dev_peek(int device);

/* The device's state, set up now if needed; NULL with CT_ERR_OUT_OF_MEMORY recorded. The
 * device must exist. */
ct__cuda_dev *ct__cuda_dev_get(int device);

/* A fresh stream id (never 0, never reused). */
uint64_t ct__cuda_next_stream_id(void);

/* Makes the pool of a device talk to the driver through this backing (cuda_memory.c). */
void ct__cuda_pool_backing(ct__cuda_dev *d, ct__pool_backing *out);

/* Forgets s as the calling thread's current stream wherever it is (cuda_stream.c). */
void ct__cuda_forget_current(const ct_stream *s);

#endif /* CORTEN_CORE_CUDA_DEVICE_H */
