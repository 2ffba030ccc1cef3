/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: ct_tensor_from_dlpack with every DLTensor field taken from the input (ndim,
 * shape, strides, dtype code/bits/lanes, device, byte_offset, the data pointer's alignment),
 * over a real 4 KiB buffer. Promises checked: a refused tensor leaves t as it was and does not
 * call the deleter; an accepted one has the DLTensor's dims, is external, reads only inside the
 * bytes the DLTensor described, exports back through ct_tensor_to_dlpack with the same shape,
 * and calls the deleter exactly once, when the last view goes. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int deleted;
static void count_delete(DLManagedTensor *m) {
  (void)m;
  deleted++;
}

static _Alignas(64) unsigned char arena[4096 + 64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_bytes in = {data, size};
  int64_t shape[12], strides[12];
  DLManagedTensor m;
  memset(&m, 0, sizeof m);
  uint8_t flags = fz_u8(&in);
  m.dl_tensor.ndim = (flags & 1) ? (int32_t)fz_take(&in, 4) : (int32_t)(fz_u8(&in) % 12) - 1;
  for (int i = 0; i < 12; i++) shape[i] = fz_dim(&in, 0, 6);
  for (int i = 0; i < 12; i++) strides[i] = fz_dim(&in, 0, 40);
  m.dl_tensor.shape = (flags & 2) ? NULL : shape;
  m.dl_tensor.strides = (flags & 4) ? strides : NULL;
  m.dl_tensor.dtype.code = fz_u8(&in) % 8;
  if (flags & 8) m.dl_tensor.dtype.code = fz_u8(&in);
  static const uint8_t bits[] = {1, 8, 16, 32, 64, 24, 0, 128};
  m.dl_tensor.dtype.bits = bits[fz_u8(&in) % 8];
  m.dl_tensor.dtype.lanes = (flags & 16) ? (uint16_t)fz_take(&in, 2) : 1;
  m.dl_tensor.device.device_type = (flags & 32) ? (DLDeviceType)fz_take(&in, 4) : kDLCPU;
  m.dl_tensor.device.device_id = (flags & 32) ? (int32_t)fz_take(&in, 4) : 0;
  m.dl_tensor.byte_offset = (flags & 64) ? (uint64_t)fz_i64(&in) : (uint64_t)(fz_u8(&in) % 64);
  unsigned misalign = fz_u8(&in) % 8;
  m.dl_tensor.data = (flags & 128) ? NULL : arena + misalign;
  m.deleter = count_delete;

  ct_tensor *t = ct_tensor_new();
  FZ_CHECK(t != NULL);
  deleted = 0;
  ct_status st = ct_tensor_from_dlpack(t, &m);
  if (st != CT_OK) {
    FZ_CHECK(st == ct_last_status());
    FZ_CHECK(deleted == 0);
    FZ_CHECK(!ct_tensor_has_memory(t) && ct_tensor_dims(t).rank == -1);
    ct_tensor_free(t);
    FZ_CHECK(deleted == 0);
    return 0;
  }
  ct_ddim d = ct_tensor_dims(t);
  FZ_CHECK(d.rank == m.dl_tensor.ndim);
  for (int i = 0; i < d.rank; i++) FZ_CHECK(d.d[i] == m.dl_tensor.shape[i]);
  FZ_CHECK(ct_tensor_is_external(t));
  size_t nbytes = (size_t)ct_tensor_numel(t) * ct_dtype_size(ct_tensor_dtype(t));
  const unsigned char *p = ct_tensor_data(t, ct_tensor_dtype(t));
  FZ_CHECK(p != NULL);
  if (nbytes > 0) {
    /* Inside what the DLTensor described: data + byte_offset, nbytes long. */
    FZ_CHECK(p == (const unsigned char *)m.dl_tensor.data + m.dl_tensor.byte_offset);
    if (p >= arena && p + nbytes <= arena + sizeof arena) {
      volatile unsigned char acc = p[0] ^ p[nbytes - 1];
      (void)acc;
    }
  }
  ct_tensor *view = ct_tensor_new();
  FZ_CHECK(ct_tensor_share(view, t) == CT_OK);
  DLManagedTensor *out = NULL;
  st = ct_tensor_to_dlpack(t, &out);
  FZ_CHECK(st == CT_OK || st == CT_ERR_OUT_OF_MEMORY);
  ct_tensor_free(t);
  FZ_CHECK(deleted == 0);
  if (out != NULL) {
    FZ_CHECK(out->dl_tensor.ndim == d.rank);
    for (int i = 0; i < d.rank; i++) FZ_CHECK(out->dl_tensor.shape[i] == d.d[i]);
    out->deleter(out);
  }
  FZ_CHECK(deleted == 0);
  ct_tensor_free(view);
  FZ_CHECK(deleted == 1);
  return 0;
}
