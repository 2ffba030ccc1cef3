/* SPDX-License-Identifier: Apache-2.0 */
/* core/cuda/fill.cu: fills device memory with one repeated element.
 *
 * The pattern for device code in corten: a kernel template in an anonymous namespace, and a C
 * entry point (extern "C", ct__ name, hidden like every internal symbol) that picks the
 * instantiation, launches on the device's current stream and checks the launch. */
#include <string.h>

#include "cuda/cuda_impl.h"

namespace {

template <typename T>
__global__ void fill_kernel(T *dst, size_t numel, T value) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < numel; i += stride) {
    dst[i] = value;
  }
}

template <typename T>
void launch_fill(void *dst, size_t numel, const void *value, cudaStream_t stream) {
  const unsigned threads = 256;
  const size_t max_blocks = 4096; /* enough to fill any GPU; the loop covers the rest */
  size_t blocks = (numel + threads - 1) / threads;
  if (blocks > max_blocks) blocks = max_blocks;
  T v;
  memcpy(&v, value, sizeof v);
  fill_kernel<T><<<(unsigned)blocks, threads, 0, stream>>>(static_cast<T *>(dst), numel, v);
}

}  // namespace

extern "C" ct_status ct__cuda_fill(void *dst, size_t numel, size_t elem_size, const void *value,
                                   int device) {
  if (elem_size != 1 && elem_size != 2 && elem_size != 4 && elem_size != 8) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct__cuda_fill: elements of %zu bytes: only 1, 2, 4 or 8 are filled",
                     elem_size);
  }
  if (numel == 0) return CT_OK;
  if (ct__cuda_setup(device) != CT_OK) return ct_last_status();
  ct__cuda_guard g;
  if (ct__cuda_guard_enter(&g, device) != CT_OK) return ct_last_status();
  cudaStream_t stream = ct__cuda_stream(device);
  switch (elem_size) {
    case 1: launch_fill<uint8_t>(dst, numel, value, stream); break;
    case 2: launch_fill<uint16_t>(dst, numel, value, stream); break;
    case 4: launch_fill<uint32_t>(dst, numel, value, stream); break;
    default: launch_fill<uint64_t>(dst, numel, value, stream); break;
  }
  cudaError_t e = cudaGetLastError();
  ct__cuda_guard_exit(&g);
  if (e != cudaSuccess) return ct__cuda_fail(e, device, "fill kernel launch (%zu elements)", numel);
  return CT_OK;
}
