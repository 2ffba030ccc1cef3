/* SPDX-License-Identifier: Apache-2.0 */
/* ops/expr/nvrtc.c: NVRTC loaded with dlopen on first use, and compiling an expression kernel's
 * source with it (ops/expr/nvrtc.h). No CUDA header: the few NVRTC entry points are declared
 * here by their documented C signatures, so a CPU build can compile kernels too.
 *
 * The generated source includes "ops/half.h" for float16 and bfloat16, and that header includes
 * <stdint.h> and <string.h>. NVRTC has no C library headers, so all three are handed to it by
 * name: half.h's own text (embedded at build time, ct_half_text.h) and two small stand-ins. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/expr/nvrtc.h"
#include "common/alloc.h"

#include "ct_half_text.h" /* generated: static const char ct__half_text[], ops/half.h's text */

#ifndef CORTEN_NVRTC_SONAME
#define CORTEN_NVRTC_SONAME "libnvrtc.so"
#endif

typedef int nvrtc_result; /* nvrtcResult: 0 is NVRTC_SUCCESS */
typedef struct nvrtc_prog *nvrtc_prog;

static struct {
  pthread_once_t once;
  void *lib; /* NULL when loading failed: why is in error */
  char error[320];
  char version[16];
  int archs[64], n_archs; /* the real architectures NVRTC compiles for, ascending */
  const char *(*error_string)(nvrtc_result);
  nvrtc_result (*create)(nvrtc_prog *, const char *, const char *, int, const char *const *,
                         const char *const *);
  nvrtc_result (*destroy)(nvrtc_prog *);
  nvrtc_result (*compile)(nvrtc_prog, int, const char *const *);
  nvrtc_result (*log_size)(nvrtc_prog, size_t *);
  nvrtc_result (*log)(nvrtc_prog, char *);
  nvrtc_result (*ptx_size)(nvrtc_prog, size_t *);
  nvrtc_result (*ptx)(nvrtc_prog, char *);
  nvrtc_result (*cubin_size)(nvrtc_prog, size_t *);
  nvrtc_result (*cubin)(nvrtc_prog, char *);
} nv = {.once = PTHREAD_ONCE_INIT};

static void *try_open(const char *name) {
  return name[0] != '\0' ? dlopen(name, RTLD_NOW | RTLD_LOCAL) : NULL;
}

/* dlsym into a function pointer of any type (ISO C has no cast between the two). */
static bool sym(void *fp, const char *name) {
  void *p = dlsym(nv.lib, name);
  if (p == NULL) {
    snprintf(nv.error, sizeof nv.error, "the loaded NVRTC has no %s: install the CUDA toolkit's "
             "NVRTC of version 12 or later", name);
    return false;
  }
  memcpy(fp, &p, sizeof p);
  return true;
}

static void load(void) {
  const char *env = getenv("CORTEN_NVRTC"), *tried = env;
  if (env != NULL && env[0] != '\0') {
    nv.lib = try_open(env);
  } else {
    tried = CORTEN_NVRTC_SONAME;
    nv.lib = try_open(CORTEN_NVRTC_SONAME);
    if (nv.lib == NULL) nv.lib = try_open("libnvrtc.so");
#ifdef CORTEN_NVRTC_DIR
    if (nv.lib == NULL) nv.lib = try_open(CORTEN_NVRTC_DIR "/" CORTEN_NVRTC_SONAME);
#endif
  }
  if (nv.lib == NULL) {
    const char *why = dlerror();
    snprintf(nv.error, sizeof nv.error,
             "ct_expr_assign: cannot load NVRTC, %s (%s): CUDA expressions compile their kernels with it; install "
             "the CUDA toolkit's NVRTC (libnvrtc) and add its directory to LD_LIBRARY_PATH, or "
             "set CORTEN_NVRTC to its path", tried, why ? why : "not found");
    return;
  }
  nvrtc_result (*version)(int *, int *);
  nvrtc_result (*n_archs)(int *), (*archs)(int *);
  bool ok = sym(&version, "nvrtcVersion") && sym(&n_archs, "nvrtcGetNumSupportedArchs") &&
            sym(&archs, "nvrtcGetSupportedArchs") && sym(&nv.error_string, "nvrtcGetErrorString") &&
            sym(&nv.create, "nvrtcCreateProgram") && sym(&nv.destroy, "nvrtcDestroyProgram") &&
            sym(&nv.compile, "nvrtcCompileProgram") &&
            sym(&nv.log_size, "nvrtcGetProgramLogSize") && sym(&nv.log, "nvrtcGetProgramLog") &&
            sym(&nv.ptx_size, "nvrtcGetPTXSize") && sym(&nv.ptx, "nvrtcGetPTX") &&
            sym(&nv.cubin_size, "nvrtcGetCUBINSize") && sym(&nv.cubin, "nvrtcGetCUBIN");
  int major = 0, minor = 0, n = 0;
  if (ok && (version(&major, &minor) != 0 || n_archs(&n) != 0 || n < 1 || n > 64 ||
             archs(nv.archs) != 0)) {
    snprintf(nv.error, sizeof nv.error, "NVRTC does not report its version and architectures: "
             "reinstall the CUDA toolkit's NVRTC");
    ok = false;
  }
  if (!ok) {
    nv.lib = NULL; /* left loaded: harmless, and dlclose under sanitizers is noisy */
    return;
  }
  nv.n_archs = n;
  snprintf(nv.version, sizeof nv.version, "%d.%d", major, minor);
}

ct_status ct__nvrtc_available(void) {
  pthread_once(&nv.once, load);
  if (nv.lib == NULL) return ct__error(CT_ERR_UNSUPPORTED, "%s", nv.error);
  return CT_OK;
}

const char *ct__nvrtc_version(void) {
  pthread_once(&nv.once, load);
  return nv.lib != NULL ? nv.version : "";
}

ct_status ct__nvrtc_target(int major, int minor, char *buf, size_t cap) {
  if (ct__nvrtc_available() != CT_OK) return ct_last_status();
  int want = major * 10 + minor;
  for (int i = 0; i < nv.n_archs; i++) {
    if (nv.archs[i] == want) {
      snprintf(buf, cap, "sm_%d", want);
      return CT_OK;
    }
  }
  /* A device NVRTC does not know (newer, or an odd minor): PTX of the newest architecture not
   * above it, else of the oldest, for the driver to compile. */
  int pick = nv.archs[0];
  for (int i = 0; i < nv.n_archs; i++) {
    if (nv.archs[i] <= want) pick = nv.archs[i];
  }
  snprintf(buf, cap, "compute_%d", pick);
  return CT_OK;
}

/* The stand-ins for the C headers half.h includes: the fixed-width types and memcpy, which is a
 * built-in of device code. */
static const char stdint_text[] =
    "#pragma once\n"
    "typedef signed char int8_t; typedef unsigned char uint8_t;\n"
    "typedef short int16_t; typedef unsigned short uint16_t;\n"
    "typedef int int32_t; typedef unsigned int uint32_t;\n"
    "typedef long long int64_t; typedef unsigned long long uint64_t;\n";
static const char string_text[] = "#pragma once\n";

/* Records the failed compile with the start of NVRTC's log. */
CT__COLD static ct_status compile_failed(nvrtc_prog p, nvrtc_result r, const char *target) {
  size_t n = 0;
  char *log = NULL;
  if (nv.log_size(p, &n) == 0 && n > 0 && (log = ct__malloc(n + 1)) != NULL) {
    if (nv.log(p, log) != 0) log[0] = '\0';
    log[n] = '\0';
  }
  ct_status st = ct__error(CT_ERR_DEVICE, "ct_expr_assign: NVRTC could not compile the expression "
                           "kernel for %s (%s): %s", target, nv.error_string(r),
                           log != NULL && log[0] != '\0' ? log : "no log");
  free(log);
  return st;
}

ct_status ct__nvrtc_compile(const char *source, const char *target, void **bin, size_t *n) {
  if (ct__nvrtc_available() != CT_OK) return ct_last_status();
  static const char *const names[] = {"ops/half.h", "stdint.h", "string.h"};
  const char *const headers[] = {ct__half_text, stdint_text, string_text};
  char arch[48];
  snprintf(arch, sizeof arch, "--gpu-architecture=%s", target);
  const char *const opts[] = {arch, "--fmad=false", "--std=c++17"};
  bool ptx = strncmp(target, "compute_", 8) == 0;
  nvrtc_prog p = NULL;
  nvrtc_result r = nv.create(&p, source, "corten_expr.cu", 3, headers, names);
  if (r != 0) {
    return ct__error(CT_ERR_DEVICE, "ct_expr_assign: NVRTC could not take the kernel's source "
                     "(%s)", nv.error_string(r));
  }
  r = nv.compile(p, 3, opts);
  if (r != 0) {
    ct_status st = compile_failed(p, r, target);
    nv.destroy(&p);
    return st;
  }
  size_t size = 0;
  r = ptx ? nv.ptx_size(p, &size) : nv.cubin_size(p, &size);
  char *out = r == 0 ? ct__malloc(size > 0 ? size : 1) : NULL;
  ct_status st = CT_OK;
  if (r == 0 && out == NULL) {
    st = ct__error(CT_ERR_OUT_OF_MEMORY, "ct_expr_assign: no memory for a compiled expression "
                   "kernel (%zu bytes)", size);
  } else if (r != 0 || (r = ptx ? nv.ptx(p, out) : nv.cubin(p, out)) != 0) {
    st = ct__error(CT_ERR_DEVICE, "ct_expr_assign: NVRTC compiled the expression kernel for %s "
                   "but gave no binary (%s)", target, nv.error_string(r));
  }
  nv.destroy(&p);
  if (st != CT_OK) {
    free(out);
    return st;
  }
  *bin = out;
  *n = size;
  return CT_OK;
}
