/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/matmul.c: the CUDA kernel of matmul (float32, float16, bfloat16) through cuBLAS, the
 * loading of cuBLAS, and the row-major float32 GEMM that matmul_grad (ops/cuda/matmul_grad.c)
 * calls through. It follows the CPU kernel's plan (ct__mm_plan in ops/defs.h), so both
 * places accept and refuse the same shapes with the same messages.
 *
 * cuBLAS is loaded with dlopen on the first CUDA matmul, not linked: libcorten links the CUDA
 * runtime statically so it loads wherever a driver is, and a hard dependency on libcublas would
 * undo that. One cuBLAS handle per device, created on first use and kept for the life of the
 * process (reachable from a static array, so LeakSanitizer does not count it); calls on a handle
 * are serialised by a mutex, since a handle's stream is shared state. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <cublas_v2.h>

#include "ops/defs.h"

#include "ops/cuda/cuda_kernels.h"
#include "ops/cuda/launch.h"

/* ---- cuBLAS, loaded on first use ------------------------------------------------------------- */

#ifndef CORTEN_CUBLAS_SONAME
#define CORTEN_CUBLAS_SONAME "libcublas.so"
#endif

typedef cublasStatus_t (*cublas_create_fn)(cublasHandle_t *);
typedef cublasStatus_t (*cublas_set_stream_fn)(cublasHandle_t, cudaStream_t);
typedef const char *(*cublas_status_string_fn)(cublasStatus_t);
typedef cublasStatus_t (*cublas_gemm_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                         int, int, int, const void *, const void *,
                                         cudaDataType, int, const void *, cudaDataType, int,
                                         const void *, void *, cudaDataType, int,
                                         cublasComputeType_t, cublasGemmAlgo_t);
typedef cublasStatus_t (*cublas_gemm_batched_fn)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
    const void *, cudaDataType, int, long long, const void *, cudaDataType, int, long long,
    const void *, void *, cudaDataType, int, long long, int, cublasComputeType_t,
    cublasGemmAlgo_t);

#define CT__CUBLAS_MAX_DEVICES 64

static struct {
  pthread_once_t once;
  pthread_mutex_t mu; /* handle creation, and each op's use of a handle */
  void *lib;          /* NULL when loading failed: why is in error */
  char error[256];
  cublas_create_fn create;
  cublas_set_stream_fn set_stream;
  cublas_status_string_fn status_string;
  cublas_gemm_fn gemm;
  cublas_gemm_batched_fn gemm_batched;
  cublasHandle_t handle[CT__CUBLAS_MAX_DEVICES];
} cublas = {.once = PTHREAD_ONCE_INIT, .mu = PTHREAD_MUTEX_INITIALIZER};

/* dlsym's void * to a function pointer, without the cast ISO C frowns on. */
static void *sym(const char *name) {
  void *p = dlsym(cublas.lib, name);
  if (p == NULL && cublas.error[0] == '\0') {
    snprintf(cublas.error, sizeof cublas.error, "%s has no %s", CORTEN_CUBLAS_SONAME, name);
  }
  return p;
}

static void cublas_load(void) {
  cublas.lib = dlopen(CORTEN_CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
#ifdef CORTEN_CUBLAS_DIR
  if (cublas.lib == NULL) {
    cublas.lib = dlopen(CORTEN_CUBLAS_DIR "/" CORTEN_CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
  }
#endif
  if (cublas.lib == NULL) {
    const char *why = dlerror();
    snprintf(cublas.error, sizeof cublas.error, "cannot load %s (%s): install cuBLAS or add its "
             "directory to LD_LIBRARY_PATH", CORTEN_CUBLAS_SONAME, why ? why : "not found");
    return;
  }
  void *p[5] = {sym("cublasCreate_v2"), sym("cublasSetStream_v2"), sym("cublasGetStatusString"),
                sym("cublasGemmEx"), sym("cublasGemmStridedBatchedEx")};
  for (int i = 0; i < 5; i++) {
    if (p[i] == NULL) {
      cublas.lib = NULL; /* left loaded: harmless, and dlclose under sanitizers is noisy */
      return;
    }
  }
  memcpy(&cublas.create, &p[0], sizeof p[0]);
  memcpy(&cublas.set_stream, &p[1], sizeof p[1]);
  memcpy(&cublas.status_string, &p[2], sizeof p[2]);
  memcpy(&cublas.gemm, &p[3], sizeof p[3]);
  memcpy(&cublas.gemm_batched, &p[4], sizeof p[4]);
}

ct_status ct__cuda_cublas_available(void) {
  pthread_once(&cublas.once, cublas_load);
  if (cublas.lib == NULL) return ct__error(CT_ERR_DEVICE, "%s", cublas.error);
  return CT_OK;
}

CT__COLD static ct_status blas_fail(const ct_kernel_ctx *c, cublasStatus_t st, const char *what) {
  return ct_kernel_fail(c, CT_ERR_DEVICE, "%s failed on cuda:%d: %s (status %d)", what,
                        c->place.device, cublas.status_string(st), (int)st);
}

/* The device's handle (the caller holds cublas.mu and has made the device current). */
static ct_status get_handle(const ct_kernel_ctx *c, cublasHandle_t *h) {
  int dev = c->place.device;
  if (cublas.lib == NULL) return ct_kernel_fail(c, CT_ERR_DEVICE, "matmul: %s", cublas.error);
  if (dev < 0 || dev >= CT__CUBLAS_MAX_DEVICES) {
    return ct_kernel_fail(c, CT_ERR_UNSUPPORTED, "matmul on cuda:%d: cuBLAS handles are kept for "
                          "devices 0..%d only", dev, CT__CUBLAS_MAX_DEVICES - 1);
  }
  if (cublas.handle[dev] == NULL) {
    cublasStatus_t st = cublas.create(&cublas.handle[dev]);
    if (st != CUBLAS_STATUS_SUCCESS) {
      cublas.handle[dev] = NULL;
      return blas_fail(c, st, "cublasCreate");
    }
  }
  *h = cublas.handle[dev];
  return CT_OK;
}

/* Enters the op's device, locks cuBLAS and sets the device's handle onto the launch's stream,
 * into *h. CT_OK, or the failure recorded naming the op with everything undone; after CT_OK,
 * ct__cu_blas_end releases both. */
static ct_status blas_begin(const ct_kernel_ctx *c, ct__cu_launch *l, cublasHandle_t *h) {
  if (ct__cu_enter(c, l) != CT_OK) return ct_last_status();
  pthread_once(&cublas.once, cublas_load);
  pthread_mutex_lock(&cublas.mu);
  ct_status st = get_handle(c, h);
  if (st == CT_OK) {
    cublasStatus_t bs = cublas.set_stream(*h, l->stream);
    if (bs != CUBLAS_STATUS_SUCCESS) st = blas_fail(c, bs, "cublasSetStream");
  }
  if (st != CT_OK) ct__cu_blas_end(l);
  return st;
}

/* Whether the batch offsets of an operand are b x stride for output batch b: true with *stride
 * one matrix when it has every batch dim the output has (beyond extent 1), 0 when it has none. */
static bool linear_batch(const ct__mm_shape *s, const int64_t *bs, int64_t mat, long long *stride) {
  bool all = true, none = true;
  for (int r = 0; r < s->batch_rank; r++) {
    if (s->batch[r] == 1) continue;
    all = all && bs[r] != 0;
    none = none && bs[r] == 0;
  }
  if (none) {
    *stride = 0;
    return true;
  }
  *stride = all ? (long long)mat : 0;
  return all;
}

/* matmul as in ops/cpu/matmul.c. cuBLAS is column-major: row-major Out = X Y is column-major
 * Out^T = Y^T X^T, and a row-major matrix read column-major is its transpose, so the call takes
 * Y first and X second with the same leading dims as CBLAS's row-major call. */
static ct_status matmul_cu(const ct_kernel_ctx *c) {
  ct__mm_shape s;
  ct_status st = ct__mm_plan(c, &s);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  char *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0), *yt = ct_kernel_in(c, CT__IN_Y, 0);
  const char *x = ct__k_in_data(xt), *y = ct__k_in_data(yt);
  const ct_ddim xd = xt->dims, yd = yt->dims;
  bool tx = c->attr[CT__MM_TRANSPOSE_X].u.b && xd.rank > 1;
  bool ty = c->attr[CT__MM_TRANSPOSE_Y].u.b && yd.rank > 1;
  int64_t m = s.m, n = s.n, k = s.k;
  if (m == 0 || n == 0 || s.n_batch == 0) return CT_OK;
  size_t es = ct_dtype_size(c->dtype);
  ct__cu_launch l;
  if (k == 0) {
    if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
    cudaError_t e = cudaMemsetAsync(o, 0, (size_t)(s.n_batch * m * n) * es, l.stream);
    return ct__cu_leave(c, &l, e, "cudaMemsetAsync");
  }
  cudaDataType type = c->dtype == CT_FLOAT16    ? CUDA_R_16F
                      : c->dtype == CT_BFLOAT16 ? CUDA_R_16BF
                                                : CUDA_R_32F;
  const float one = 1.0f, zero = 0.0f;
  int64_t lda = xd.rank > 1 ? xd.d[xd.rank - 1] : k;
  int64_t ldb = yd.rank > 1 ? yd.d[yd.rank - 1] : 1;
  int64_t x_mat = xd.rank > 1 ? xd.d[xd.rank - 2] * xd.d[xd.rank - 1] : k;
  int64_t y_mat = yd.rank > 1 ? yd.d[yd.rank - 2] * yd.d[yd.rank - 1] : k;
  cublasOperation_t opx = tx ? CUBLAS_OP_T : CUBLAS_OP_N, opy = ty ? CUBLAS_OP_T : CUBLAS_OP_N;
  long long sx = 0, sy = 0;
  bool y_shared = true, x_full = true;
  for (int b = 0; b < s.batch_rank; b++) {
    y_shared = y_shared && s.by[b] == 0;
    x_full = x_full && s.bx[b] != 0;
  }
  cublasHandle_t h = NULL;
  st = blas_begin(c, &l, &h);
  if (st != CT_OK) return st;
  cublasStatus_t bs;
  const char *what;
  if (y_shared && x_full && !tx && s.n_batch <= INT_MAX / m) {
    /* Y is shared by the whole batch: one GEMM over all batch x M rows of X. */
    what = "cublasGemmEx";
    bs = cublas.gemm(h, opy, opx, (int)n, (int)(s.n_batch * m), (int)k, &one, y, type, (int)ldb,
                     x, type, (int)lda, &zero, o, type, (int)n, CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT);
  } else if (s.n_batch <= INT_MAX && linear_batch(&s, s.bx, x_mat, &sx) &&
             linear_batch(&s, s.by, y_mat, &sy)) {
    what = "cublasGemmStridedBatchedEx";
    bs = cublas.gemm_batched(h, opy, opx, (int)n, (int)m, (int)k, &one, y, type, (int)ldb, sy, x,
                             type, (int)lda, sx, &zero, o, type, (int)n, (long long)(m * n),
                             (int)s.n_batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  } else {
    /* Batch dims broadcast in a pattern no single stride describes: one GEMM per entry. */
    what = "cublasGemmEx";
    bs = CUBLAS_STATUS_SUCCESS;
    int64_t idx[CT_MAX_RANK] = {0};
    for (int64_t b = 0; b < s.n_batch && bs == CUBLAS_STATUS_SUCCESS; b++) {
      int64_t ox = 0, oy = 0;
      for (int r = 0; r < s.batch_rank; r++) {
        ox += idx[r] * s.bx[r];
        oy += idx[r] * s.by[r];
      }
      bs = cublas.gemm(h, opy, opx, (int)n, (int)m, (int)k, &one, y + (size_t)(oy * y_mat) * es,
                       type, (int)ldb, x + (size_t)(ox * x_mat) * es, type, (int)lda, &zero,
                       o + (size_t)(b * m * n) * es, type, (int)n, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT);
      for (int r = s.batch_rank - 1; r >= 0 && ++idx[r] == s.batch[r]; r--) idx[r] = 0;
    }
  }
  /* cuBLAS's failures are reported in its own words (blas_fail): only the device is left. */
  if (bs != CUBLAS_STATUS_SUCCESS) st = blas_fail(c, bs, what);
  ct__cu_blas_end(&l);
  return st;
}

/* ---- Row-major float32 GEMMs for the other kernels (launch.h) ------------------------------- */

ct_status ct__cu_blas_begin(const ct_kernel_ctx *c, ct__cu_launch *l) {
  cublasHandle_t h;
  return blas_begin(c, l, &h);
}

/* Row-major O = op(A) op(B) is column-major O^T = op(B)^T op(A)^T, and a row-major matrix read
 * column-major is its transpose: B goes first, each with its own transpose flag. */
ct_status ct__cu_sgemm(const ct_kernel_ctx *c, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                       const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                       float *o, int64_t ldo) {
  const float one = 1.0f;
  cublasStatus_t bs = cublas.gemm(cublas.handle[c->place.device], tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                  ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, b,
                                  CUDA_R_32F, (int)ldb, a, CUDA_R_32F, (int)lda, &beta, o,
                                  CUDA_R_32F, (int)ldo, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return bs == CUBLAS_STATUS_SUCCESS ? CT_OK : blas_fail(c, bs, "cublasGemmEx");
}

void ct__cu_blas_end(ct__cu_launch *l) {
  pthread_mutex_unlock(&cublas.mu);
  ct__cuda_guard_exit(&l->guard);
}

/* ---- The kernel table ------------------------------------------------------------------------ */

static const ct__kernel_set kernels[] = {
    {"matmul", CT__KERNELS([CT_FLOAT32] = matmul_cu, [CT_FLOAT16] = matmul_cu,
                           [CT_BFLOAT16] = matmul_cu)},
};

const ct__kernel_table ct__cuda_matmul = CT__TABLE(kernels);
