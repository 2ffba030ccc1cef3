/* SPDX-License-Identifier: Apache-2.0 */
/* corten/dlpack.h: zero-copy exchange of tensors with other frameworks through DLPack.
 *
 * DLPack (the system's <dlpack/dlpack.h>; Debian: libdlpack-dev) is the common in-memory tensor
 * description of NumPy, PyTorch, TVM, CuPy and JAX. Both directions share memory, nothing is
 * copied:
 *
 *   ct_tensor_to_dlpack    hands a consumer a DLManagedTensor over a tensor's memory; the memory
 *                          stays alive until the consumer calls its deleter, even after every
 *                          corten view of it is gone.
 *   ct_tensor_from_dlpack  makes a tensor view a producer's memory; the producer's deleter runs
 *                          exactly once, when the last corten view of that memory goes.
 *
 * What DLPack can say and a corten tensor cannot hold is refused, with no ownership taken:
 * strides that are not compact row-major, vector lanes other than 1, dtype codes and widths
 * without a corten dtype, devices other than CPU, CUDA and pinned host memory, and places this
 * build has not got (CUDA in a CPU-only build).
 *
 * Two forms of the managed tensor, both ways:
 *   DLManagedTensor            DLPack 0.x, for older consumers and producers (NumPy 1.x,
 *                              PyTorch 1.x); it has no flags, so a read-only tensor is not
 *                              exported in it (CT_ERR_READ_ONLY).
 *   DLManagedTensorVersioned   DLPack 1.x: a version (corten writes 1.0, reads any 1.x) and
 *                              flags; DLPACK_FLAG_BITMASK_READ_ONLY is kept both ways: an import
 *                              with it gives a read-only tensor (ct_tensor_is_read_only), which
 *                              no corten call writes (CT_ERR_READ_ONLY), and such a tensor is
 *                              exported with the flag.
 * Which form a Python consumer gets is negotiated there (__dlpack__'s max_version).
 *
 * dtype mapping (code, bits), lanes always 1:
 *   int (0)    8 int8, 16 int16, 32 int32, 64 int64
 *   uint (1)   8 uint8; 1 bool (TVM's convention: one byte per element, 0 or 1)
 *   float (2)  16 float16, 32 float32, 64 float64
 *   bfloat (4) 16 bfloat16
 *   bool (6)   8 bool (kDLBool of DLPack 0.8 and later)
 * A corten bool tensor is exported as kDLBool (code 6, 8 bits), in both forms, as DLPack 1.x and
 * current TVM write it; the older (uint, 1 bit) form is still read.
 *
 * Places: kDLCPU is ct_cpu(), kDLCUDA with device_id n is ct_cuda(n), kDLCUDAHost is
 * ct_cuda_host(), and back. The tensor takes the producer's place as it is: memory is never
 * moved between devices here (use ct_tensor_copy for that).
 *
 * Thread-safety: as for any tensor call. The deleters may run on whichever thread lets go of
 * the last reference. */
#ifndef CORTEN_DLPACK_H
#define CORTEN_DLPACK_H

#include <stdint.h>

#include <dlpack/dlpack.h>

#include <corten/status.h>
#include <corten/tensor.h>

/* The DLPack 1.x additions corten uses, declared here when the system header is older (Debian
 * 12's libdlpack-dev is 0.6). They follow the DLPack 1.0 specification's ABI: the version pair,
 * the versioned managed tensor (version, manager_ctx, deleter, flags, then the DLTensor) and the
 * flag bits. A 1.x header defines DLPACK_MAJOR_VERSION and its own declarations win. */
#ifndef DLPACK_MAJOR_VERSION
typedef struct DLPackVersion {
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

#ifndef DLPACK_FLAG_BITMASK_READ_ONLY
#define DLPACK_FLAG_BITMASK_READ_ONLY (UINT64_C(1) << 0)
#endif
#ifndef DLPACK_FLAG_BITMASK_IS_COPIED
#define DLPACK_FLAG_BITMASK_IS_COPIED (UINT64_C(1) << 1)
#endif
#endif /* DLPACK_MAJOR_VERSION */

/* The DLPack version corten's versioned exports carry, and the major version it reads. */
#define CT_DLPACK_MAJOR 1
#define CT_DLPACK_MINOR 0
/* kDLBool's code (DLPack 0.8 and later), spelled out for an older header. */
#define CT_DLPACK_BOOL 6

#ifdef __cplusplus
extern "C" {
#endif

/* Exports t's data as a new DLManagedTensor in *out, without copying: dl_tensor.data is the
 * address of t's first element (byte_offset 0), shape holds t's dims, strides the compact
 * row-major strides (never NULL), and the device is t's place. A scalar has ndim 0.
 * The managed tensor holds a reference to t's memory and owns its shape and strides arrays; the
 * consumer owns the managed tensor and calls (*out)->deleter(*out) exactly once when done, which
 * lets go of all of them. t may be changed or freed meanwhile: the memory lives on until the
 * deleter runs.
 * Errors (*out set to NULL when out is not NULL):
 *   CT_ERR_INVALID_ARGUMENT  t or out is NULL
 *   CT_ERR_UNINITIALIZED     t holds no memory
 *   CT_ERR_OUT_OF_RANGE      t's dims exceed its capacity
 *   CT_ERR_READ_ONLY         t is read-only, which this form cannot say: export it versioned
 *   CT_ERR_OUT_OF_MEMORY     no host memory for the managed tensor */
CT_API ct_status ct_tensor_to_dlpack(const ct_tensor *t, DLManagedTensor **out);

/* As ct_tensor_to_dlpack, in DLPack 1.x's form: version {CT_DLPACK_MAJOR, CT_DLPACK_MINOR},
 * flags DLPACK_FLAG_BITMASK_READ_ONLY when t is read-only (else 0; never IS_COPIED: nothing is
 * copied). The consumer calls (*out)->deleter(*out) exactly once. Errors as there, except that
 * a read-only t is exported (with the flag). */
CT_API ct_status ct_tensor_to_dlpack_versioned(const ct_tensor *t,
                                               DLManagedTensorVersioned **out);

/* Makes t view the memory m describes, without copying, and takes ownership of m: m->deleter
 * (when not NULL) runs exactly once, when the last view of that memory goes (t, and every
 * share, slice or flatten made from it). t becomes external (ct_tensor_is_external): it never
 * frees, grows or moves that memory; its dims are m's shape, its data starts at
 * data + byte_offset, its place is m's device. t lets go of what it held first.
 * Errors (t unchanged, and m still the caller's: the deleter is not called):
 *   CT_ERR_INVALID_ARGUMENT  t or m is NULL
 *   CT_ERR_FORMAT            a DLTensor that breaks DLPack's own rules: a negative ndim, a NULL
 *                            shape with ndim > 0, a negative extent, NULL data with elements, a
 *                            dtype code DLPack does not define or 0 bits, a negative CUDA device
 *                            id, an address range that wraps
 *   CT_ERR_OUT_OF_RANGE      ndim above CT_MAX_RANK, or a size that overflows
 *   CT_ERR_UNSUPPORTED       valid DLPack that corten cannot hold: non-compact strides, lanes
 *                            other than 1, a dtype without a corten counterpart, data not
 *                            aligned to its element size, a device type other than CPU, CUDA or
 *                            CUDA host; or a CUDA or CUDA host place in a build without CUDA
 *   CT_ERR_DEVICE            a CUDA ordinal with no device
 *   CT_ERR_OUT_OF_MEMORY     no memory for corten's block header */
CT_API ct_status ct_tensor_from_dlpack(ct_tensor *t, DLManagedTensor *m);

/* As ct_tensor_from_dlpack, for DLPack 1.x's form: m->deleter runs exactly once, when the last
 * view goes; with DLPACK_FLAG_BITMASK_READ_ONLY in m->flags, t and its views are read-only
 * (ct_tensor_is_read_only). Errors as there (no ownership taken), and:
 *   CT_ERR_UNSUPPORTED       m->version.major is not CT_DLPACK_MAJOR: the layout past the
 *                            version is unknown, nothing else is read; DLPack asks the consumer
 *                            to call m->deleter then, which stays the caller's to do */
CT_API ct_status ct_tensor_from_dlpack_versioned(ct_tensor *t, DLManagedTensorVersioned *m);

/* For Python bindings: a PyCapsule destructor (pass its address to PyCapsule_New) for capsules
 * holding a DLManagedTensor named "dltensor" or a DLManagedTensorVersioned named
 * "dltensor_versioned", as DLPack's Python protocol has producers make them. A capsule destroyed
 * under that name was never consumed: its deleter runs. A consumed one (renamed "used_...") is
 * left alone. Safe with a Python exception pending, which it keeps. Call it only from Python
 * with the GIL held. It finds CPython's functions in the process once (thread-safe); where they
 * are not visible (Python's library loaded RTLD_LOCAL, or a plain C program) it cannot read the
 * capsule: it sets the thread's error message (CT_ERR_UNSUPPORTED) and the unconsumed tensor is
 * leaked. A NULL capsule does nothing. */
CT_API void ct_dlpack_capsule_destructor(void *capsule);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_DLPACK_H */
