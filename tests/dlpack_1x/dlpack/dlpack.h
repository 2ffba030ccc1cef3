/* SPDX-License-Identifier: Apache-2.0 */
/* tests/dlpack_1x/dlpack/dlpack.h: stands in for a DLPack 1.x system header in
 * test_dlpack_header.c. It takes the system's older header for DLTensor and adds what a 1.x
 * header adds, under DLPACK_MAJOR_VERSION, with a marker type: corten/dlpack.h must then use
 * these declarations and not declare its own (a second definition would not compile). */
#ifndef CORTEN_TEST_FAKE_DLPACK_1X_H
#define CORTEN_TEST_FAKE_DLPACK_1X_H

#include_next <dlpack/dlpack.h>

#include <stdint.h>

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1

typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)

typedef int ct_test_fake_dlpack_1x_marker;

#endif
