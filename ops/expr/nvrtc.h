/* SPDX-License-Identifier: Apache-2.0 */
/* ops/expr/nvrtc.h: NVRTC (CUDA's run-time compiler) loaded with dlopen, and the table of compiled
 * expression kernels in memory, backed by the disk cache (ops/expr/kernel_cache.h).
 *
 * Neither needs a GPU or the CUDA headers: a kernel is compiled to PTX (a virtual target,
 * "compute_90") or to a CUBIN (a real one, "sm_90") and kept as bytes; the device engine
 * (ops/cuda/expr.c) loads those bytes and attaches the loaded handle to the table's entry. So
 * every build has these, and the CPU suite tests them wherever libnvrtc can be loaded. */
#ifndef CORTEN_OPS_EXPR_NVRTC_H
#define CORTEN_OPS_EXPR_NVRTC_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

/* Where NVRTC is looked for, in order: $CORTEN_NVRTC (a path or a file name; when set, nothing
 * else is tried), then CORTEN_NVRTC_SONAME (the toolkit's at build time, libnvrtc.so.<major>, in
 * a CUDA build), then libnvrtc.so, then those in CORTEN_NVRTC_DIR (the build's toolkit). CT_OK,
 * or CT_ERR_UNSUPPORTED naming the library and the fix. Loaded once per process. */
ct_status ct__nvrtc_available(void);

/* "<major>.<minor>" of the loaded NVRTC, or "" when none is loaded. */
const char *ct__nvrtc_version(void);

/* The target for a device of compute capability major.minor: "sm_<major><minor>" when NVRTC
 * compiles for it, else PTX for the newest architecture it knows ("compute_<n>"), which the
 * driver compiles on loading. CT_OK or the error of ct__nvrtc_available. */
ct_status ct__nvrtc_target(int major, int minor, char *buf, size_t cap);

/* Compiles source (ops/expr/expr_source.c's, which may include "ops/half.h") for target ("sm_XY":
 * a CUBIN; "compute_XY": PTX, NUL-terminated) with --fmad=false. The binary malloc'ed in *bin,
 * its size in *n. CT_ERR_DEVICE with NVRTC's log when the source does not compile. */
ct_status ct__nvrtc_compile(const char *source, const char *target, void **bin, size_t *n);

/* ---- The table of compiled kernels ------------------------------------------------------------
 * Keyed by the source (which holds the structure, dtype and broadcast pattern: expr_source.c),
 * the target and NVRTC's version; at most CT__KERNELS_MAX entries, the least recently used one
 * dropped first. Thread-safe. An entry is counted: the table holds one reference, each
 * ct__kernels_get another, and the last ct__kernels_put frees it (unloading its handle, after
 * the devices it was launched on finish their work: ct__kernels_launching). */
#define CT__KERNELS_MAX 256

typedef struct ct__kernel {
  const void *bin; /* the compiled binary (PTX or CUBIN) */
  size_t n;
  void *handle;    /* what the device engine loaded from bin (NULL until ct__kernels_attach) */
  void *fn;        /* the kernel's handle in it (read it with ct__kernels_loaded) */
} ct__kernel;

/* The kernel of source for target: from memory, else from the disk cache, else compiled (and
 * stored on disk). NULL with the failure recorded (ct__nvrtc_compile's errors). */
ct__kernel *ct__kernels_get(const char *source, const char *target);
void ct__kernels_put(ct__kernel *k);

/* The function loaded from k's binary (ct__kernels_attach), or NULL before. */
void *ct__kernels_loaded(ct__kernel *k);

/* Gives k the handle and function loaded from its binary, unless another thread did first:
 * true when k took them (unload(handle, devices) runs when k is freed, devices as below);
 * false when k had some already, which the caller uses instead (and unloads its own). */
bool ct__kernels_attach(ct__kernel *k, void *handle, void *fn,
                        void (*unload)(void *handle, uint64_t devices));

/* Notes that k is about to be launched on device (before the launch, while the caller still
 * holds k): the unload of a freed entry gets the devices so noted as a mask, bit d for device d
 * and bit 63 for any device from 63 on, so that it waits for those devices only. Lock-free. */
void ct__kernels_launching(ct__kernel *k, int device);

/* Counts since the process started (or the last ct__kernels_reset), for the tests. */
typedef struct ct__kernel_stats {
  uint64_t compiles;     /* NVRTC compilations that succeeded */
  uint64_t disk_hits;    /* binaries read from the disk cache */
  uint64_t memory_hits;  /* found in the table */
  uint64_t evictions;    /* entries dropped to keep the bound */
  int live;              /* entries in the table now */
} ct__kernel_stats;

void ct__kernels_stats(ct__kernel_stats *s);

/* Empties the table (entries still held go when put), zeroes the counts and sets the bound
 * (max <= 0: CT__KERNELS_MAX). For the tests. */
void ct__kernels_reset(int max);

#endif /* CORTEN_OPS_EXPR_NVRTC_H */
