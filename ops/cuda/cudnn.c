/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/cudnn.c: conv2d (and depthwise_conv2d) forward and gradients through cuDNN, where it
 * is present (ops/cuda/cudnn.h).
 *
 * cuDNN is loaded with dlopen on the first CUDA convolution, like cuBLAS (ops/cuda/matmul.c): by
 * its soname, then from the toolkit's library folder; without it, or without its header at build
 * time, every convolution runs corten's direct kernels (ops/cuda/conv.cu). One handle per device,
 * kept for the process; calls on it are serialised by a mutex (its stream is shared state).
 *
 * Float32 in float32: the descriptors ask for CUDNN_FMA_MATH, so no TF32 (corten's CUDA matmul
 * does not use it either). The algorithm of each geometry is cuDNN's heuristic choice
 * (cudnnGet...Algorithm_v7), the first it ranks that is deterministic, whose workspace fits, taken
 * once per geometry and kept, with the geometry's descriptors, in a table of 256 (open
 * addressing); a geometry cuDNN declines is remembered as declined. The workspace comes from
 * corten's caching pool on the op's stream for the call. cuDNN takes symmetric paddings only:
 * other geometries, dims past int, a workspace the device cannot hold, and any call cuDNN
 * declines fall back to the direct kernels, as does every convolution when the environment
 * variable CORTEN_CUDNN is 0 (to test or compare the direct kernels where cuDNN is present). A
 * failed cuDNN call leaves nothing in CUDA's last-error note for a later launch to report. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/defs.h"

#include "ops/cuda/cudnn.h"

#ifdef CORTEN_HAVE_CUDNN_H
#include <cudnn.h>

#ifndef CORTEN_CUDNN_SONAME
#define CORTEN_CUDNN_SONAME "libcudnn.so.9"
#endif

#define CT__CUDNN_MAX_DEVICES 64
#define CT__CUDNN_PLANS 256 /* geometries remembered (open addressing, PROBES slots each) */
#define CT__CUDNN_MAX_WORKSPACE ((size_t)1 << 30)

/* The entry points used, in the order of the names below. */
enum {
  F_CREATE, F_SET_STREAM, F_ERROR_STRING, F_NEW_TENSOR, F_SET_TENSOR, F_FREE_TENSOR,
  F_NEW_FILTER, F_SET_FILTER, F_FREE_FILTER, F_NEW_CONV, F_SET_CONV, F_SET_GROUPS, F_SET_MATH,
  F_FREE_CONV, F_FWD_ALGOS, F_FWD, F_DATA_ALGOS, F_DATA, F_FILTER_ALGOS, F_FILTER, F_COUNT
};
static const char *const names[F_COUNT] = {
    "cudnnCreate", "cudnnSetStream", "cudnnGetErrorString", "cudnnCreateTensorDescriptor",
    "cudnnSetTensor4dDescriptor", "cudnnDestroyTensorDescriptor", "cudnnCreateFilterDescriptor",
    "cudnnSetFilter4dDescriptor", "cudnnDestroyFilterDescriptor",
    "cudnnCreateConvolutionDescriptor", "cudnnSetConvolution2dDescriptor",
    "cudnnSetConvolutionGroupCount", "cudnnSetConvolutionMathType",
    "cudnnDestroyConvolutionDescriptor", "cudnnGetConvolutionForwardAlgorithm_v7",
    "cudnnConvolutionForward", "cudnnGetConvolutionBackwardDataAlgorithm_v7",
    "cudnnConvolutionBackwardData", "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
    "cudnnConvolutionBackwardFilter"};

/* cuDNN's descriptors of a geometry. */
typedef struct descs {
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
} descs;

/* A geometry's descriptors (made on its first call, kept), and its chosen algorithm and
 * workspace per kind (ALGO_UNCHOSEN, ALGO_DECLINED: cuDNN has none for it, or refused it). */
enum { ALGO_UNCHOSEN = -1, ALGO_DECLINED = -2, PROBES = 8 };
typedef struct plan {
  int64_t key[15]; /* device, n, c, h, w, m, groups, kh, kw, sh, sw, dh, dw, pt, pl */
  bool used, described;
  descs d;
  int algo[3];
  size_t space[3];
} plan;

static struct {
  pthread_once_t once;
  pthread_mutex_t mu; /* handles, the plans, and each call on a handle */
  void *lib;          /* NULL: not loaded (cuDNN absent): the direct kernels run */
  void *fn[F_COUNT];
  cudnnHandle_t handle[CT__CUDNN_MAX_DEVICES];
  bool no_handle[CT__CUDNN_MAX_DEVICES]; /* cudnnCreate failed there: not tried again */
  plan plans[CT__CUDNN_PLANS];
} dnn = {.once = PTHREAD_ONCE_INIT, .mu = PTHREAD_MUTEX_INITIALIZER};

/* The entry point i as a function of type T. */
#define DNN(T, i) (*(T)dnn.fn[i])

static void dnn_load(void) {
  const char *use = getenv("CORTEN_CUDNN");
  if (use != NULL && strcmp(use, "0") == 0) return;
  void *lib = dlopen(CORTEN_CUDNN_SONAME, RTLD_NOW | RTLD_LOCAL);
#ifdef CORTEN_CUBLAS_DIR
  if (lib == NULL) lib = dlopen(CORTEN_CUBLAS_DIR "/" CORTEN_CUDNN_SONAME, RTLD_NOW | RTLD_LOCAL);
#endif
  if (lib == NULL) return;
  for (int i = 0; i < F_COUNT; i++) {
    if ((dnn.fn[i] = dlsym(lib, names[i])) == NULL) return; /* left loaded, unused */
  }
  dnn.lib = lib;
}

bool ct__cudnn_available(void) {
  pthread_once(&dnn.once, dnn_load);
  return dnn.lib != NULL;
}

static void descs_free(descs *d) {
  if (d->x) DNN(cudnnStatus_t(*)(cudnnTensorDescriptor_t), F_FREE_TENSOR)(d->x);
  if (d->y) DNN(cudnnStatus_t(*)(cudnnTensorDescriptor_t), F_FREE_TENSOR)(d->y);
  if (d->w) DNN(cudnnStatus_t(*)(cudnnFilterDescriptor_t), F_FREE_FILTER)(d->w);
  if (d->conv) DNN(cudnnStatus_t(*)(cudnnConvolutionDescriptor_t), F_FREE_CONV)(d->conv);
}

/* The plan of g's geometry on device (mu held): found among PROBES slots from its hash, or
 * made in the first free one of them; when all are taken, the home slot's geometry is
 * forgotten (a table of 256 holds the few dozen geometries of a model). */
static plan *plan_of(const ct__conv_geom *g, int device) {
  int64_t key[15] = {device, g->n, g->c, g->h, g->w, g->m, g->groups, g->kh, g->kw,
                     g->sh, g->sw, g->dh, g->dw, g->pt, g->pl};
  uint64_t h = 1469598103934665603u;
  for (int i = 0; i < 15; i++) h = (h ^ (uint64_t)key[i]) * 1099511628211u;
  plan *free_slot = NULL;
  for (int i = 0; i < PROBES; i++) {
    plan *p = &dnn.plans[(h + (uint64_t)i) % CT__CUDNN_PLANS];
    if (p->used && memcmp(p->key, key, sizeof key) == 0) return p;
    if (!p->used && free_slot == NULL) free_slot = p;
  }
  plan *p = free_slot != NULL ? free_slot : &dnn.plans[h % CT__CUDNN_PLANS];
  if (p->described) descs_free(&p->d);
  p->described = false;
  memcpy(p->key, key, sizeof key);
  p->used = true;
  for (int k = 0; k < 3; k++) p->algo[k] = ALGO_UNCHOSEN, p->space[k] = 0;
  return p;
}

typedef cudnnStatus_t (*set4d_fn)(cudnnTensorDescriptor_t, cudnnTensorFormat_t, cudnnDataType_t,
                                  int, int, int, int);

/* Describes g to cuDNN; false when cuDNN refuses it. */
static bool descs_make(const ct__conv_geom *g, descs *d) {
  memset(d, 0, sizeof *d);
  typedef cudnnStatus_t (*new_t)(cudnnTensorDescriptor_t *);
  typedef cudnnStatus_t (*new_f)(cudnnFilterDescriptor_t *);
  typedef cudnnStatus_t (*new_c)(cudnnConvolutionDescriptor_t *);
  typedef cudnnStatus_t (*set_f)(cudnnFilterDescriptor_t, cudnnDataType_t, cudnnTensorFormat_t,
                                 int, int, int, int);
  typedef cudnnStatus_t (*set_c)(cudnnConvolutionDescriptor_t, int, int, int, int, int, int,
                                 cudnnConvolutionMode_t, cudnnDataType_t);
  typedef cudnnStatus_t (*set_g)(cudnnConvolutionDescriptor_t, int);
  typedef cudnnStatus_t (*set_m)(cudnnConvolutionDescriptor_t, cudnnMathType_t);
  const cudnnStatus_t ok = CUDNN_STATUS_SUCCESS;
  bool good = DNN(new_t, F_NEW_TENSOR)(&d->x) == ok && DNN(new_t, F_NEW_TENSOR)(&d->y) == ok &&
              DNN(new_f, F_NEW_FILTER)(&d->w) == ok && DNN(new_c, F_NEW_CONV)(&d->conv) == ok;
  good = good &&
         DNN(set4d_fn, F_SET_TENSOR)(d->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, (int)g->n,
                                     (int)g->c, (int)g->h, (int)g->w) == ok &&
         DNN(set4d_fn, F_SET_TENSOR)(d->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, (int)g->n,
                                     (int)g->m, (int)g->oh, (int)g->ow) == ok &&
         DNN(set_f, F_SET_FILTER)(d->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, (int)g->m,
                                  (int)(g->c / g->groups), (int)g->kh, (int)g->kw) == ok &&
         DNN(set_c, F_SET_CONV)(d->conv, (int)g->pt, (int)g->pl, (int)g->sh, (int)g->sw,
                                (int)g->dh, (int)g->dw, CUDNN_CROSS_CORRELATION,
                                CUDNN_DATA_FLOAT) == ok &&
         DNN(set_g, F_SET_GROUPS)(d->conv, (int)g->groups) == ok &&
         DNN(set_m, F_SET_MATH)(d->conv, CUDNN_FMA_MATH) == ok;
  if (!good) descs_free(d);
  return good;
}

/* Whether cuDNN can take g: symmetric paddings and every extent an int. */
static bool takes(const ct__conv_geom *g) {
  if (g->pt != g->pb || g->pl != g->pr || g->groups <= 0 || g->c % g->groups != 0) return false;
  const int64_t v[] = {g->n, g->c, g->h, g->w, g->m, g->kh, g->kw, g->oh, g->ow,
                       g->sh, g->sw, g->dh, g->dw, g->pt, g->pl};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    if (v[i] < 0 || v[i] > INT_MAX) return false;
  }
  return g->n * g->c * g->h * g->w <= INT_MAX && g->n * g->m * g->oh * g->ow <= INT_MAX;
}

/* Chooses kind's algorithm for the geometry of d into p (mu held): cuDNN's ranking, the first
 * deterministic one whose workspace fits. false (and the kind declined) when none does. */
/* The first of cuDNN's ranked results r[0 .. got) (its three kinds' perf structs have the same
 * fields) that succeeded, is deterministic and whose workspace fits: into algo and space. */
#define FIRST_FIT(r)                                                                         \
  for (int i = 0; i < got && algo < 0; i++) {                                                \
    if ((r)[i].status == ok && (r)[i].determinism == CUDNN_DETERMINISTIC &&                  \
        (r)[i].memory <= CT__CUDNN_MAX_WORKSPACE) {                                          \
      algo = (int)(r)[i].algo, space = (r)[i].memory;                                        \
    }                                                                                        \
  }

static bool choose(cudnnHandle_t h, const descs *d, ct__cudnn_kind kind, plan *p) {
  enum { N = 16 };
  int got = 0, algo = -1;
  size_t space = 0;
  p->algo[kind] = ALGO_DECLINED; /* unless one is found below */
  const cudnnStatus_t ok = CUDNN_STATUS_SUCCESS;
  if (kind == CT__CUDNN_FORWARD) {
    cudnnConvolutionFwdAlgoPerf_t r[N];
    typedef cudnnStatus_t (*fn)(cudnnHandle_t, cudnnTensorDescriptor_t, cudnnFilterDescriptor_t,
                                cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, int, int *,
                                cudnnConvolutionFwdAlgoPerf_t *);
    if (DNN(fn, F_FWD_ALGOS)(h, d->x, d->w, d->conv, d->y, N, &got, r) != ok) return false;
    FIRST_FIT(r);
  } else if (kind == CT__CUDNN_BACKWARD_DATA) {
    cudnnConvolutionBwdDataAlgoPerf_t r[N];
    typedef cudnnStatus_t (*fn)(cudnnHandle_t, cudnnFilterDescriptor_t, cudnnTensorDescriptor_t,
                                cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, int, int *,
                                cudnnConvolutionBwdDataAlgoPerf_t *);
    if (DNN(fn, F_DATA_ALGOS)(h, d->w, d->y, d->conv, d->x, N, &got, r) != ok) return false;
    FIRST_FIT(r);
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t r[N];
    typedef cudnnStatus_t (*fn)(cudnnHandle_t, cudnnTensorDescriptor_t, cudnnTensorDescriptor_t,
                                cudnnConvolutionDescriptor_t, cudnnFilterDescriptor_t, int, int *,
                                cudnnConvolutionBwdFilterAlgoPerf_t *);
    if (DNN(fn, F_FILTER_ALGOS)(h, d->x, d->y, d->conv, d->w, N, &got, r) != ok) return false;
    FIRST_FIT(r);
  }
  p->algo[kind] = algo < 0 ? ALGO_DECLINED : algo;
  p->space[kind] = space;
  return algo >= 0;
}

/* Runs kind (mu held, handle on the stream). */
static cudnnStatus_t call(cudnnHandle_t h, const descs *d, ct__cudnn_kind kind, int algo,
                          void *space, size_t bytes, void *out, const void *a, const void *b) {
  const float one = 1.0f, zero = 0.0f;
  if (kind == CT__CUDNN_FORWARD) { /* a = X, b = W -> Y */
    typedef cudnnStatus_t (*fn)(cudnnHandle_t, const void *, cudnnTensorDescriptor_t,
                                const void *, cudnnFilterDescriptor_t, const void *,
                                cudnnConvolutionDescriptor_t, cudnnConvolutionFwdAlgo_t, void *,
                                size_t, const void *, cudnnTensorDescriptor_t, void *);
    return DNN(fn, F_FWD)(h, &one, d->x, a, d->w, b, d->conv, (cudnnConvolutionFwdAlgo_t)algo,
                          space, bytes, &zero, d->y, out);
  }
  if (kind == CT__CUDNN_BACKWARD_DATA) { /* a = W, b = dY -> dX */
    typedef cudnnStatus_t (*fn)(cudnnHandle_t, const void *, cudnnFilterDescriptor_t,
                                const void *, cudnnTensorDescriptor_t, const void *,
                                cudnnConvolutionDescriptor_t, cudnnConvolutionBwdDataAlgo_t,
                                void *, size_t, const void *, cudnnTensorDescriptor_t, void *);
    return DNN(fn, F_DATA)(h, &one, d->w, a, d->y, b, d->conv,
                           (cudnnConvolutionBwdDataAlgo_t)algo, space, bytes, &zero, d->x, out);
  }
  /* a = X, b = dY -> dW */
  typedef cudnnStatus_t (*fn)(cudnnHandle_t, const void *, cudnnTensorDescriptor_t, const void *,
                              cudnnTensorDescriptor_t, const void *, cudnnConvolutionDescriptor_t,
                              cudnnConvolutionBwdFilterAlgo_t, void *, size_t, const void *,
                              cudnnFilterDescriptor_t, void *);
  return DNN(fn, F_FILTER)(h, &one, d->x, a, d->y, b, d->conv,
                           (cudnnConvolutionBwdFilterAlgo_t)algo, space, bytes, &zero, d->w, out);
}

int ct__cudnn_conv(const ct_kernel_ctx *c, const ct__conv_geom *g, ct__cudnn_kind kind,
                   cudaStream_t stream, void *out, const void *a, const void *b) {
  int dev = c->place.device;
  if (!ct__cudnn_available() || !takes(g) || dev < 0 || dev >= CT__CUDNN_MAX_DEVICES) return 0;
  typedef cudnnStatus_t (*create_fn)(cudnnHandle_t *);
  typedef cudnnStatus_t (*stream_fn)(cudnnHandle_t, cudaStream_t);
  typedef const char *(*string_fn)(cudnnStatus_t);
  ct_tensor *space = NULL;
  int done = 0;
  pthread_mutex_lock(&dnn.mu);
  if (dnn.handle[dev] == NULL && !dnn.no_handle[dev] &&
      DNN(create_fn, F_CREATE)(&dnn.handle[dev]) != CUDNN_STATUS_SUCCESS) {
    dnn.handle[dev] = NULL;
    dnn.no_handle[dev] = true;
  }
  cudnnHandle_t h = dnn.handle[dev];
  plan *p = plan_of(g, dev);
  if (h != NULL && !p->described && p->algo[kind] != ALGO_DECLINED) {
    p->described = descs_make(g, &p->d);
    if (!p->described) {
      for (int k = 0; k < 3; k++) p->algo[k] = ALGO_DECLINED;
    }
  }
  if (h == NULL || !p->described || p->algo[kind] == ALGO_DECLINED ||
      DNN(stream_fn, F_SET_STREAM)(h, stream) != CUDNN_STATUS_SUCCESS ||
      (p->algo[kind] == ALGO_UNCHOSEN && !choose(h, &p->d, kind, p))) {
    pthread_mutex_unlock(&dnn.mu);
    cudaGetLastError(); /* whatever cuDNN left there is not the direct kernel's */
    return 0;
  }
  void *ws = NULL;
  if (p->space[kind] > 0) {
    space = ct_tensor_new();
    if (space == NULL || ct_tensor_resize(space, CT_DIMS((int64_t)p->space[kind])) != CT_OK ||
        (ws = ct_tensor_mutable_data(space, CT_UINT8, c->place)) == NULL) {
      pthread_mutex_unlock(&dnn.mu); /* no room for the workspace: the direct kernels need none */
      ct_tensor_free(space);
      cudaGetLastError();
      return 0;
    }
  }
  cudnnStatus_t st = call(h, &p->d, kind, p->algo[kind], ws, p->space[kind], out, a, b);
  if (st == CUDNN_STATUS_SUCCESS) {
    done = 1;
  } else if (st == CUDNN_STATUS_NOT_SUPPORTED) {
    p->algo[kind] = ALGO_DECLINED; /* the direct kernels from now on */
  } else {
    ct_kernel_fail(c, CT_ERR_DEVICE, "cuDNN convolution failed on cuda:%d: %s (status %d)",
                   dev, DNN(string_fn, F_ERROR_STRING)(st), (int)st);
    done = -1;
  }
  pthread_mutex_unlock(&dnn.mu);
  if (done != 1) cudaGetLastError();
  ct_tensor_free(space); /* the pool keeps it for this stream's later work */
  return done;
}

#else /* no cudnn.h at build time: the direct kernels always */

bool ct__cudnn_available(void) { return false; }

int ct__cudnn_conv(const ct_kernel_ctx *c, const ct__conv_geom *g, ct__cudnn_kind kind,
                   cudaStream_t stream, void *out, const void *a, const void *b) {
  (void)c, (void)g, (void)kind, (void)stream, (void)out, (void)a, (void)b;
  return 0;
}

#endif
