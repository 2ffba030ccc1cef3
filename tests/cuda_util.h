/* SPDX-License-Identifier: Apache-2.0 */
/* The helpers of the CUDA place suites (test_cuda*.c): the check of a refused CUDA place where
 * there is no device, and, in a build with CUDA, where a pointer points. */
#ifndef CORTEN_TESTS_CUDA_UTIL_H
#define CORTEN_TESTS_CUDA_UTIL_H

#include <string.h>

#include <corten/corten.h>

#include "harness.h"

#ifdef CORTEN_TEST_CUDA
#include <cuda_runtime_api.h>
#endif

/* Asserts that the last failure is the refusal of a CUDA place in this build: no_cuda_status(),
 * with a message naming place_text and the reason. */
static inline void assert_refused(const char *place_text) {
  ck_assert_int_eq(ct_last_status(), no_cuda_status());
  ck_assert_ptr_nonnull(strstr(ct_last_error(), place_text));
  ck_assert_ptr_nonnull(strstr(ct_last_error(), ct_cuda_is_built() ? "no CUDA device"
                                                                     : "built without CUDA"));
}

#ifdef CORTEN_TEST_CUDA

/* Asserts that p is device memory of the given device. */
static inline void assert_device_pointer(const void *p, int device) {
  struct cudaPointerAttributes attr;
  ck_assert_int_eq(cudaPointerGetAttributes(&attr, p), cudaSuccess);
  ck_assert_int_eq(attr.type, cudaMemoryTypeDevice);
  ck_assert_int_eq(attr.device, device);
}

#endif /* CORTEN_TEST_CUDA */

#endif /* CORTEN_TESTS_CUDA_UTIL_H */
