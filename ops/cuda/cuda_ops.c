/* ops/cuda/cuda_ops.c: the CUDA kernels of the built-in ops, their C side: wiring, checks,
 * output allocation and messages here, device code in the .cu files of core/cuda/kernels
 * (cuda_ops.h).
 *
 * Registered by ct__register_builtin_ops in CUDA builds only, after the op types exist:
 *   elementwise_{add,sub,mul,div}  float32, float16, bfloat16 (numpy broadcasting)
 *   relu, sigmoid, tanh, exp, log, scale  float32
 *   cast      from and to float32, float16, bfloat16
 *   assign    every dtype (a device-to-device copy); reshape every dtype (the CPU kernel: it
 *             only shares memory)
 *   fill_constant every dtype; uniform_random, gaussian_random float16/bfloat16/float32/float64
 *   matmul    float32, float16, bfloat16 through cuBLAS
 *   sum, mean, reduce_sum, softmax  float32, float64 (sums in double, like the CPU's float32)
 *   transpose, concat  every dtype (elements moved by their size)
 * Every kernel runs on the op's device, on the calling thread's current stream of that device
 * (asynchronously, like any CUDA kernel); its outputs are allocated there. The checks and
 * planning are the CPU kernels' own (kernels.h), so both places accept and refuse the same ops
 * with the same messages.
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
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>

#include "ops/half.h"
#include "ops/defs.h"

#include "cuda/cuda_impl.h"
#include "ops/cuda/cuda_kernels.h"
#include "ops/cuda/launch.h"

enum { IN_X, IN_Y };
enum { OUT_OUT };

/* ---- Errors and launching ------------------------------------------------------------------ */

CT__COLD static ct_status cu_fail(const ct_kernel_ctx *c, cudaError_t e, const char *what) {
  (void)cudaGetLastError(); /* a launch error is sticky in that note: report it once */
  return ct_kernel_fail(c, CT_ERR_DEVICE, "%s failed on cuda:%d: %s (%s)", what, c->place.device,
                        cudaGetErrorString(e), cudaGetErrorName(e));
}

/* Rewords the error a corten CUDA helper recorded so that it names the op. */
CT__COLD static ct_status relabel(const ct_kernel_ctx *c) {
  char text[512];
  snprintf(text, sizeof text, "%s", ct_last_error());
  return ct_kernel_fail(c, ct_last_status(), "%s", text);
}

/* Makes the op's device current for a launch; the stream to launch on in *s. */
static ct_status enter(const ct_kernel_ctx *c, ct__cuda_guard *g, cudaStream_t *s) {
  /* The device may hold only wrapped buffers or blocks of a replaced allocator: set its state
   * up here rather than count on an earlier allocation having done it. */
  if (ct__cuda_setup(c->place.device) != CT_OK) return relabel(c);
  if (ct__cuda_guard_enter(g, c->place.device) != CT_OK) return relabel(c);
  *s = ct__cuda_stream(c->place.device);
  return CT_OK;
}

/* ---- Elementwise ---------------------------------------------------------------------------- */

static ct_status cu_binary(const ct_kernel_ctx *c, int op) {
  const ct_tensor *xt = ct_kernel_in(c, IN_X, 0), *yt = ct_kernel_in(c, IN_Y, 0);
  ct_tensor *ot = ct_kernel_out(c, OUT_OUT, 0);
  void *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  int64_t n = ot->numel;
  if (n == 0) return CT_OK;
  ct__cu_plan plan, *pp = NULL;
  if (xt->numel != n || yt->numel != n) {
    ct__bcast_plan bp;
    ct__plan_bcast(xt->dims, yt->dims, ot->dims, &bp);
    plan.rank = bp.rank;
    for (int k = 0; k < bp.rank; k++) {
      plan.d[k] = bp.d[k];
      plan.sx[k] = bp.sx[k];
      plan.sy[k] = bp.sy[k];
    }
    pp = &plan;
  }
  ct__cuda_guard g;
  cudaStream_t s = NULL;
  if (enter(c, &g, &s) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_binary(op, c->dtype, o, ct__k_in_data(xt), ct__k_in_data(yt), n, pp, s);
  ct__cuda_guard_exit(&g);
  return e == cudaSuccess ? CT_OK : cu_fail(c, e, "elementwise kernel launch");
}

static ct_status add_cu(const ct_kernel_ctx *c) { return cu_binary(c, CT__CU_ADD); }
static ct_status sub_cu(const ct_kernel_ctx *c) { return cu_binary(c, CT__CU_SUB); }
static ct_status mul_cu(const ct_kernel_ctx *c) { return cu_binary(c, CT__CU_MUL); }
static ct_status div_cu(const ct_kernel_ctx *c) { return cu_binary(c, CT__CU_DIV); }

static ct_status cu_unary(const ct_kernel_ctx *c, int op) {
  const ct_tensor *xt = ct_kernel_in(c, IN_X, 0);
  float *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  if (xt->numel == 0) return CT_OK;
  ct__cuda_guard g;
  cudaStream_t s = NULL;
  if (enter(c, &g, &s) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_unary(op, o, ct__k_in_data(xt), xt->numel, s);
  ct__cuda_guard_exit(&g);
  return e == cudaSuccess ? CT_OK : cu_fail(c, e, "activation kernel launch");
}

static ct_status relu_cu(const ct_kernel_ctx *c) { return cu_unary(c, CT__CU_RELU); }
static ct_status sigmoid_cu(const ct_kernel_ctx *c) { return cu_unary(c, CT__CU_SIGMOID); }
static ct_status tanh_cu(const ct_kernel_ctx *c) { return cu_unary(c, CT__CU_TANH); }
static ct_status exp_cu(const ct_kernel_ctx *c) { return cu_unary(c, CT__CU_EXP); }
static ct_status log_cu(const ct_kernel_ctx *c) { return cu_unary(c, CT__CU_LOG); }

/* scale's attributes: scale, bias, bias_after_scale; computed in float like the CPU kernel. */
static ct_status scale_cu(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, IN_X, 0);
  float *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  float sc = (float)c->attr[0].u.f, bi = (float)c->attr[1].u.f;
  if (!c->attr[2].u.b) bi *= sc;
  if (xt->numel == 0) return CT_OK;
  ct__cuda_guard g;
  cudaStream_t s = NULL;
  if (enter(c, &g, &s) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_scale(o, ct__k_in_data(xt), xt->numel, sc, bi, s);
  ct__cuda_guard_exit(&g);
  return e == cudaSuccess ? CT_OK : cu_fail(c, e, "scale kernel launch");
}

static bool float_type(int64_t t) {
  return t == CT_FLOAT32 || t == CT_FLOAT16 || t == CT_BFLOAT16;
}

/* A device-to-device copy of n bytes on the current stream. */
static ct_status copy_d2d(const ct_kernel_ctx *c, void *o, const void *x, size_t n) {
  if (n == 0 || o == x) return CT_OK;
  ct__cuda_guard g;
  cudaStream_t s = NULL;
  if (enter(c, &g, &s) != CT_OK) return ct_last_status();
  cudaError_t e = cudaMemcpyAsync(o, x, n, cudaMemcpyDeviceToDevice, s);
  ct__cuda_guard_exit(&g);
  return e == cudaSuccess ? CT_OK : cu_fail(c, e, "cudaMemcpyAsync (device to device)");
}

/* cast's attribute: dtype. Refused before Out is touched when either side is not a float type
 * the GPU converts. */
static ct_status cast_cu(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, IN_X, 0);
  ct_dtype dt;
  ct_status st = ct__k_attr_dtype(c, 0, &dt);
  if (st != CT_OK) return st;
  if (!float_type(dt) || !float_type(xt->dtype)) {
    return ct_kernel_fail(c, CT_ERR_UNSUPPORTED,
                          "cast of input X variable '%s' from %s to %s: on CUDA, cast converts "
                          "between float32, float16 and bfloat16 only; cast on the CPU",
                          ct_kernel_in_name(c, IN_X, 0), ct_dtype_name(xt->dtype),
                          ct_dtype_name(dt));
  }
  void *o = ct__k_out_data(c, OUT_OUT, 0, dt);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  const void *x = ct__k_in_data(xt);
  if (xt->dtype == dt) return copy_d2d(c, o, x, ct__tensor_bytes(xt, dt));
  if (xt->numel == 0) return CT_OK;
  ct__cuda_guard g;
  cudaStream_t s = NULL;
  if (enter(c, &g, &s) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_cast(o, dt, x, xt->dtype, xt->numel, s);
  ct__cuda_guard_exit(&g);
  return e == cudaSuccess ? CT_OK : cu_fail(c, e, "cast kernel launch");
}

static ct_status assign_cu(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, IN_X, 0);
  void *o = ct__k_out_data(c, OUT_OUT, 0, xt->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  return copy_d2d(c, o, ct__k_in_data(xt), ct__tensor_bytes(xt, xt->dtype));
}

/* ---- fill_constant, uniform_random, gaussian_random ----------------------------------------- */

/* fill_constant's attributes: shape, value, dtype. The element is made on the host exactly as the
 * CPU kernel makes it, then repeated on the device. */
static ct_status fill_cu(const ct_kernel_ctx *c) {
  double v = c->attr[1].u.f;
  ct_status st = ct__fill_check(c, v);
  if (st != CT_OK) return st;
  ct_tensor *t = ct_kernel_out(c, OUT_OUT, 0);
  void *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);
  if (o == NULL) return ct_last_status();
  unsigned char elem[8];
  size_t sz = ct_dtype_size(c->dtype);
  switch (c->dtype) {
    case CT_FLOAT32: { float f = (float)v; memcpy(elem, &f, 4); break; }
    case CT_FLOAT64: memcpy(elem, &v, 8); break;
    case CT_FLOAT16: { uint16_t h = ct__f64_to_half(v); memcpy(elem, &h, 2); break; }
    case CT_BFLOAT16: { uint16_t h = ct__f64_to_bf16(v); memcpy(elem, &h, 2); break; }
    default: {
      int64_t iv = (int64_t)v; /* exact: ct__fill_check */
      if (sz == 1) { uint8_t u = (uint8_t)iv; memcpy(elem, &u, 1); }
      else if (sz == 2) { int16_t u = (int16_t)iv; memcpy(elem, &u, 2); }
      else if (sz == 4) { int32_t u = (int32_t)iv; memcpy(elem, &u, 4); }
      else memcpy(elem, &iv, 8);
    }
  }
  if (t->numel == 0) return CT_OK;
  if (ct__cuda_fill(o, (size_t)t->numel, sz, elem, c->place.device) != CT_OK) return relabel(c);
  return CT_OK;
}

/* uniform_random's and gaussian_random's attributes: shape, min/mean, max/std, seed, dtype. */
static ct_status uniform_cu(const ct_kernel_ctx *c) {
  ct_status st = ct__random_check_range(c, false);
  if (st != CT_OK) return st;
  ct_tensor *t = ct_kernel_out(c, OUT_OUT, 0);
  void *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);
  if (o == NULL) return ct_last_status();
  double lo = c->attr[1].u.f, hi = c->attr[2].u.f, vmin, vmax;
  ct__uniform_bounds(c->dtype, lo, hi, &vmin, &vmax);
  uint64_t seed = ct__random_seed(c);
  if (t->numel == 0) return CT_OK;
  ct__cuda_guard g;
  cudaStream_t s = NULL;
  if (enter(c, &g, &s) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_uniform(o, c->dtype, t->numel, seed, lo, hi - lo, vmin, vmax, s);
  ct__cuda_guard_exit(&g);
  return e == cudaSuccess ? CT_OK : cu_fail(c, e, "uniform_random kernel launch");
}

static ct_status gaussian_cu(const ct_kernel_ctx *c) {
  ct_status st = ct__random_check_range(c, true);
  if (st != CT_OK) return st;
  ct_tensor *t = ct_kernel_out(c, OUT_OUT, 0);
  void *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);
  if (o == NULL) return ct_last_status();
  double mean = c->attr[1].u.f, std = c->attr[2].u.f;
  uint64_t seed = ct__random_seed(c);
  if (t->numel == 0) return CT_OK;
  ct__cuda_guard g;
  cudaStream_t s = NULL;
  if (enter(c, &g, &s) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_gaussian(o, c->dtype, t->numel, seed, mean, std, s);
  ct__cuda_guard_exit(&g);
  return e == cudaSuccess ? CT_OK : cu_fail(c, e, "gaussian_random kernel launch");
}

/* ---- sum, mean, reduce_sum, softmax (float32, float64) -------------------------------------- */

/* sum: X0 + X1, then + X2 and so on, one launch each: the CPU's order, so float32 results are
 * bit-identical. sum's infer_shape has checked the dims and dtypes. */
static ct_status sum_cu(const ct_kernel_ctx *c) {
  void *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  size_t k = ct_kernel_in_count(c, IN_X);
  int64_t n = ct_kernel_out(c, OUT_OUT, 0)->numel;
  const void *x0 = ct__k_in_data(ct_kernel_in(c, IN_X, 0));
  if (k == 1) return copy_d2d(c, o, x0, (size_t)n * ct_dtype_size(c->dtype));
  if (n == 0) return CT_OK;
  ct__cuda_guard g;
  cudaStream_t s = NULL;
  if (enter(c, &g, &s) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_add_n(c->dtype, o, x0, ct__k_in_data(ct_kernel_in(c, IN_X, 1)), n, s);
  for (size_t i = 2; i < k && e == cudaSuccess; i++) {
    e = ct__cu_add_n(c->dtype, o, o, ct__k_in_data(ct_kernel_in(c, IN_X, i)), n, s);
  }
  ct__cuda_guard_exit(&g);
  return e == cudaSuccess ? CT_OK : cu_fail(c, e, "sum kernel launch");
}

/* Launches the block sums of ct__cu_reduce for n_out outputs (none when n_out is 0). */
static ct_status launch_reduce(const ct_kernel_ctx *c, void *o, const void *x, int64_t n_out,
                               int64_t n_red, const ct__cu_walk *keep, const ct__cu_walk *red,
                               int mean) {
  if (n_out == 0) return CT_OK;
  ct__cuda_guard g;
  cudaStream_t s = NULL;
  if (enter(c, &g, &s) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_reduce(c->dtype, o, x, n_out, n_red, keep, red, mean, s);
  ct__cuda_guard_exit(&g);
  return e == cudaSuccess ? CT_OK : cu_fail(c, e, mean ? "mean kernel launch"
                                                       : "reduce_sum kernel launch");
}

/* mean: all of X as one run of numel elements; an empty X gives 0 / 0 = NaN, as on the CPU. */
static ct_status mean_cu(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, IN_X, 0);
  const void *x = ct__k_in_data(xt);
  int64_t n = xt->numel;
  void *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  ct__cu_walk keep = {.rank = 0}, red = {.rank = 1};
  red.d[0] = n > 0 ? n : 1;
  red.s[0] = 1;
  return launch_reduce(c, o, x, 1, n, &keep, &red, 1);
}

/* reduce_sum: output i walks X's kept dims (in order: Out's layout, keep_dim only adds 1s), the
 * summed elements walk the summed dims; an empty summed dim gives 0. */
static ct_status reduce_sum_cu(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, IN_X, 0);
  bool red[CT_MAX_RANK];
  ct_status st = ct__rs_dims(c, xt->dims.rank, red);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  void *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  ct__cu_walk keep = {.rank = 0}, rw = {.rank = 0};
  int64_t xs[CT_MAX_RANK], stride = 1, n_red = 1;
  for (int k = xt->dims.rank - 1; k >= 0; k--) {
    xs[k] = stride;
    stride *= xt->dims.d[k];
  }
  for (int k = 0; k < xt->dims.rank; k++) {
    ct__cu_walk *w = red[k] ? &rw : &keep;
    w->d[w->rank] = xt->dims.d[k];
    w->s[w->rank] = xs[k];
    w->rank++;
    if (red[k]) n_red *= xt->dims.d[k];
  }
  return launch_reduce(c, o, ct__k_in_data(xt), ct_kernel_out(c, OUT_OUT, 0)->numel, n_red,
                       &keep, &rw, 0);
}

/* softmax: X as [outer, n, inner] around the axis, as in reduce.c. */
static ct_status softmax_cu(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, IN_X, 0);
  int axis;
  ct_status st = ct__k_axis(c, "axis", c->attr[0].u.i, xt->dims.rank, &axis);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  void *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  if (xt->numel == 0) return CT_OK;
  int64_t outer = 1, n = 1, inner = 1;
  for (int k = 0; k < xt->dims.rank; k++) {
    if (k < axis) outer *= xt->dims.d[k];
    if (k == axis) n = xt->dims.d[k];
    if (k > axis) inner *= xt->dims.d[k];
  }
  ct__cuda_guard g;
  cudaStream_t s = NULL;
  if (enter(c, &g, &s) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_softmax(c->dtype, o, ct__k_in_data(xt), outer * inner, n, inner, s);
  ct__cuda_guard_exit(&g);
  return e == cudaSuccess ? CT_OK : cu_fail(c, e, "softmax kernel launch");
}

/* ---- transpose, concat (every dtype) --------------------------------------------------------- */

/* transpose: a gather along the CPU's plan (a plain copy when the permutation moves nothing). */
static ct_status transpose_cu(const ct_kernel_ctx *c) {
  int perm[CT_MAX_RANK];
  ct_status st = ct__tr_perm(c, perm);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  const ct_tensor *xt = ct_kernel_in(c, IN_X, 0);
  void *o = ct__k_out_data(c, OUT_OUT, 0, xt->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  if (xt->numel == 0) return CT_OK;
  const void *x = ct__k_in_data(xt);
  size_t es = ct_dtype_size(xt->dtype);
  ct__tr_plan p;
  ct__tr_make_plan(xt->dims, perm, &p);
  if (p.rank == 1 && p.is[0] == 1) return copy_d2d(c, o, x, (size_t)xt->numel * es);
  ct__cu_walk w = {.rank = p.rank};
  for (int k = 0; k < p.rank; k++) {
    w.d[k] = p.d[k];
    w.s[k] = p.is[k];
  }
  ct__cuda_guard g;
  cudaStream_t s = NULL;
  if (enter(c, &g, &s) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_gather(o, x, es, xt->numel, &w, s);
  ct__cuda_guard_exit(&g);
  return e == cudaSuccess ? CT_OK : cu_fail(c, e, "transpose kernel launch");
}

/* concat: each input's rows (outer of them, dims before the axis) placed into Out's rows at the
 * input's offset along the axis. concat's infer_shape has checked the dims and dtypes. */
static ct_status concat_cu(const ct_kernel_ctx *c) {
  const ct_tensor *x0 = ct_kernel_in(c, IN_X, 0);
  int axis;
  ct_status st = ct__k_axis(c, "axis", c->attr[0].u.i, x0->dims.rank, &axis);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  void *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  const ct_tensor *ot = ct_kernel_out(c, OUT_OUT, 0);
  if (ot->numel == 0) return CT_OK;
  size_t es = ct_dtype_size(c->dtype), n = ct_kernel_in_count(c, IN_X);
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < x0->dims.rank; k++) {
    if (k < axis) outer *= x0->dims.d[k];
    if (k > axis) inner *= x0->dims.d[k];
  }
  int64_t bo = ot->dims.d[axis] * inner, at = 0;
  ct__cuda_guard g;
  cudaStream_t s = NULL;
  if (enter(c, &g, &s) != CT_OK) return ct_last_status();
  cudaError_t e = cudaSuccess;
  for (size_t i = 0; i < n && e == cudaSuccess; i++) {
    const ct_tensor *xi = ct_kernel_in(c, IN_X, i);
    int64_t bx = xi->dims.d[axis] * inner;
    e = ct__cu_place_rows(o, ct__k_in_data(xi), es, outer, bx, bo, at, s);
    at += bx;
  }
  ct__cuda_guard_exit(&g);
  return e == cudaSuccess ? CT_OK : cu_fail(c, e, "concat kernel launch");
}

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

/* matmul as in matmul.c. cuBLAS is column-major: row-major Out = X Y is column-major
 * Out^T = Y^T X^T, and a row-major matrix read column-major is its transpose, so the call takes
 * Y first and X second with the same leading dims as CBLAS's row-major call. */
static ct_status matmul_cu(const ct_kernel_ctx *c) {
  ct__mm_shape s;
  ct_status st = ct__mm_plan(c, &s);
  if (CT__UNLIKELY(st != CT_OK)) return st;
  char *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  const ct_tensor *xt = ct_kernel_in(c, IN_X, 0), *yt = ct_kernel_in(c, IN_Y, 0);
  const char *x = ct__k_in_data(xt), *y = ct__k_in_data(yt);
  const ct_ddim xd = xt->dims, yd = yt->dims;
  bool tx = c->attr[0].u.b && xd.rank > 1, ty = c->attr[1].u.b && yd.rank > 1;
  int64_t m = s.m, n = s.n, k = s.k;
  if (m == 0 || n == 0 || s.n_batch == 0) return CT_OK;
  size_t es = ct_dtype_size(c->dtype);
  ct__cuda_guard g;
  cudaStream_t stream = NULL;
  if (enter(c, &g, &stream) != CT_OK) return ct_last_status();
  if (k == 0) {
    cudaError_t e = cudaMemsetAsync(o, 0, (size_t)(s.n_batch * m * n) * es, stream);
    ct__cuda_guard_exit(&g);
    return e == cudaSuccess ? CT_OK : cu_fail(c, e, "cudaMemsetAsync");
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
  pthread_once(&cublas.once, cublas_load);
  pthread_mutex_lock(&cublas.mu);
  cublasHandle_t h = NULL;
  st = get_handle(c, &h);
  cublasStatus_t bs = CUBLAS_STATUS_SUCCESS;
  const char *what = "cublasSetStream";
  if (st == CT_OK) bs = cublas.set_stream(h, stream);
  if (st == CT_OK && bs == CUBLAS_STATUS_SUCCESS) {
    if (y_shared && x_full && !tx && s.n_batch <= INT_MAX / m) {
      /* Y is shared by the whole batch: one GEMM over all batch x M rows of X. */
      what = "cublasGemmEx";
      bs = cublas.gemm(h, opy, opx, (int)n, (int)(s.n_batch * m), (int)k, &one, y, type,
                       (int)ldb, x, type, (int)lda, &zero, o, type, (int)n, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT);
    } else if (s.n_batch <= INT_MAX && linear_batch(&s, s.bx, x_mat, &sx) &&
               linear_batch(&s, s.by, y_mat, &sy)) {
      what = "cublasGemmStridedBatchedEx";
      bs = cublas.gemm_batched(h, opy, opx, (int)n, (int)m, (int)k, &one, y, type, (int)ldb, sy,
                               x, type, (int)lda, sx, &zero, o, type, (int)n,
                               (long long)(m * n), (int)s.n_batch, CUBLAS_COMPUTE_32F,
                               CUBLAS_GEMM_DEFAULT);
    } else {
      /* Batch dims broadcast in a pattern no single stride describes: one GEMM per entry. */
      what = "cublasGemmEx";
      int64_t idx[CT_MAX_RANK] = {0};
      for (int64_t b = 0; b < s.n_batch && bs == CUBLAS_STATUS_SUCCESS; b++) {
        int64_t ox = 0, oy = 0;
        for (int r = 0; r < s.batch_rank; r++) {
          ox += idx[r] * s.bx[r];
          oy += idx[r] * s.by[r];
        }
        bs = cublas.gemm(h, opy, opx, (int)n, (int)m, (int)k, &one,
                         y + (size_t)(oy * y_mat) * es, type, (int)ldb,
                         x + (size_t)(ox * x_mat) * es, type, (int)lda, &zero,
                         o + (size_t)(b * m * n) * es, type, (int)n, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT);
        for (int r = s.batch_rank - 1; r >= 0 && ++idx[r] == s.batch[r]; r--) idx[r] = 0;
      }
    }
  }
  if (st == CT_OK && bs != CUBLAS_STATUS_SUCCESS) st = blas_fail(c, bs, what);
  pthread_mutex_unlock(&cublas.mu);
  ct__cuda_guard_exit(&g);
  return st;
}

/* ---- The kernel table ------------------------------------------------------------------------ */

#define HALFS(fn) CT__KERNELS([CT_FLOAT32] = fn, [CT_FLOAT16] = fn, [CT_BFLOAT16] = fn)
#define REALS(fn) \
  CT__KERNELS([CT_FLOAT32] = fn, [CT_FLOAT16] = fn, [CT_BFLOAT16] = fn, [CT_FLOAT64] = fn)
#define WIDE(fn) CT__KERNELS([CT_FLOAT32] = fn, [CT_FLOAT64] = fn)
#define F32(fn) CT__KERNELS([CT_FLOAT32] = fn)
#define ANY(fn) CT__KERNELS([0] = fn)

static const ct__kernel_set kernels[] = {
    {"elementwise_add", HALFS(add_cu)},
    {"elementwise_sub", HALFS(sub_cu)},
    {"elementwise_mul", HALFS(mul_cu)},
    {"elementwise_div", HALFS(div_cu)},
    {"cast", HALFS(cast_cu)},
    {"matmul", HALFS(matmul_cu)},
    {"relu", F32(relu_cu)},
    {"sigmoid", F32(sigmoid_cu)},
    {"tanh", F32(tanh_cu)},
    {"exp", F32(exp_cu)},
    {"log", F32(log_cu)},
    {"scale", F32(scale_cu)},
    {"assign", ANY(assign_cu)},
    {"fill_constant", ANY(fill_cu)},
    {"uniform_random", REALS(uniform_cu)},
    {"gaussian_random", REALS(gaussian_cu)},
    {"sum", WIDE(sum_cu)},
    {"mean", WIDE(mean_cu)},
    {"reduce_sum", WIDE(reduce_sum_cu)},
    {"softmax", WIDE(softmax_cu)},
    {"transpose", ANY(transpose_cu)},
    {"concat", ANY(concat_cu)},
};

const ct__kernel_table ct__cuda_kernels = CT__TABLE(kernels);
