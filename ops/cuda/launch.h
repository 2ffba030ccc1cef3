/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/launch.h: how the CUDA kernels of the built-in ops launch device code, and the
 * launchers of the .cu files of ops/cuda.
 *
 * One convention for every kernel in ops/cuda:
 *
 * - Device side (ops/cuda/<family>.cu, nvcc): kernels are grid-stride loops sized by grid.cuh.
 *   Each launcher below takes the stream to launch on, queues its kernel(s) there and returns
 *   what cudaGetLastError says after the launch, or cudaSuccess without launching when there is
 *   nothing to do. A launcher chooses no device, allocates nothing and records no corten error.
 * - C side (ops/cuda/<family>.c): a kernel checks and plans as the CPU kernel does (ops/defs.h),
 *   allocates its outputs, returns early when there is no work, then brackets its launches:
 *
 *     ct__cu_launch l;
 *     if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
 *     cudaError_t e = ct__cu_scale(o, x, n, sc, bi, l.stream);
 *     return ct__cu_leave(c, &l, e, "scale kernel launch");
 *
 *   ct__cu_enter sets the op's device up, makes it current and picks the calling thread's
 *   current stream of it; ct__cu_leave restores the previous device and reports a failure as
 *   CT_ERR_DEVICE naming the op. Runtime calls that are not launches (cudaMemcpyAsync,
 *   cudaMemsetAsync, cuBLAS) take the same bracket. fill_constant uses the place's own fill
 *   (ct__cuda_fill, core/cuda), which brackets itself; its error is reworded to name the op.
 *
 * Element counts are the output's; pointers are device memory of the named dtypes. Arithmetic
 * matches the CPU kernels operation for operation (the device code is compiled with
 * --fmad=false), so results are bit-identical to them except for the transcendental functions
 * (expf, tanhf, logf). */
#ifndef CORTEN_OPS_CUDA_LAUNCH_H
#define CORTEN_OPS_CUDA_LAUNCH_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include <corten/status.h>
#include <corten/types.h>

#ifndef __cplusplus
#include "cuda/cuda_impl.h"
#include "ops/kernel.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- The launchers (C and nvcc) ------------------------------------------------------------ */

/* elementwise.cu */

/* A broadcast walk over the output (ct__bcast_plan in ops/defs.h): the output in memory order is
 * the dims d, and sx / sy are the inputs' strides in elements (0 where broadcast). */
typedef struct ct__cu_plan {
  int rank;
  int64_t d[CT_MAX_RANK];
  int64_t sx[CT_MAX_RANK], sy[CT_MAX_RANK];
} ct__cu_plan;

enum { CT__CU_ADD, CT__CU_SUB, CT__CU_MUL, CT__CU_DIV };
enum { CT__CU_RELU, CT__CU_SIGMOID, CT__CU_TANH, CT__CU_EXP, CT__CU_LOG };

/* o = x (op) y over n elements of dtype dt (float32, float16 or bfloat16; the half types are
 * computed in float and rounded once); plan NULL when x, y and o all have n elements. */
cudaError_t ct__cu_binary(int op, ct_dtype dt, void *o, const void *x, const void *y, int64_t n,
                          const ct__cu_plan *plan, cudaStream_t stream);

/* o = f(x) over n float32 elements. */
cudaError_t ct__cu_unary(int op, float *o, const float *x, int64_t n, cudaStream_t stream);
/* clip over n float32 elements, as the CPU kernel: each in double against the bounds lo, hi
 * (from lo_dev[0] / hi_dev[0], float32 on the device, when not NULL), stored back as float. */
cudaError_t ct__cu_clip(float *o, const float *x, int64_t n, double lo, double hi,
                        const float *lo_dev, const float *hi_dev, cudaStream_t stream);

/* o = sc * x + bi over n float32 elements. */
cudaError_t ct__cu_scale(float *o, const float *x, int64_t n, float sc, float bi,
                         cudaStream_t stream);

/* Converts n elements between float32, float16 and bfloat16 (from != to). */
cudaError_t ct__cu_cast(void *o, ct_dtype to, const void *x, ct_dtype from, int64_t n,
                        cudaStream_t stream);

/* random.cu */

/* uniform_random over n elements of dt (float16, bfloat16, float32, float64): lo + span x u
 * clamped to [vmin, vmax] (ct__uniform_bounds). */
cudaError_t ct__cu_uniform(void *o, ct_dtype dt, int64_t n, uint64_t seed, double lo,
                           double span, double vmin, double vmax, cudaStream_t stream);

/* gaussian_random over n elements of dt: mean + std x z. */
cudaError_t ct__cu_gaussian(void *o, ct_dtype dt, int64_t n, uint64_t seed, double mean,
                            double std, cudaStream_t stream);

/* reduce.cu and shape.cu */

/* A strided walk: an index over the dims d (row-major) maps to the offset sum idx[k] x s[k], in
 * elements. */
typedef struct ct__cu_walk {
  int rank;
  int64_t d[CT_MAX_RANK], s[CT_MAX_RANK];
} ct__cu_walk;

/* o = a + b over n elements of dt (float32 or float64), in dt's arithmetic (sum's step). */
cudaError_t ct__cu_add_n(ct_dtype dt, void *o, const void *a, const void *b, int64_t n,
                         cudaStream_t stream);

/* Sums of float32 / float64 x, accumulated in double and rounded once: output i (n_out of them)
 * is the sum over the n_red offsets of walk red, each added to output i's offset in walk keep;
 * with mean set it is that sum divided by n_red (NaN for n_red 0). */
cudaError_t ct__cu_reduce(ct_dtype dt, void *o, const void *x, int64_t n_out, int64_t n_red,
                          const ct__cu_walk *keep, const ct__cu_walk *red, int mean,
                          cudaStream_t stream);

/* softmax of float32 / float64 x seen as [outer, n, inner], along n: the CPU's steps (the row's
 * max subtracted, exp in dt, the sum in double). rows = outer x inner, n at least 1. */
cudaError_t ct__cu_softmax(ct_dtype dt, void *o, const void *x, int64_t rows, int64_t n,
                           int64_t inner, cudaStream_t stream);

/* o[i] = x[offset of i in walk w] for n elements of es bytes (1, 2, 4 or 8). */
cudaError_t ct__cu_gather(void *o, const void *x, size_t es, int64_t n, const ct__cu_walk *w,
                          cudaStream_t stream);

/* Moves rows between a whole (outer rows of bw elements of es bytes) and a part (outer rows of bp
 * elements): part row a is whole row a's elements [at, at + bp). split 0 copies the part into
 * the whole (concat's step for one input), split 1 the whole's slice into the part
 * (concat_grad's). */
cudaError_t ct__cu_move_rows(void *whole, void *part, size_t es, int64_t outer, int64_t bp,
                             int64_t bw, int64_t at, int split, cudaStream_t stream);

/* elementwise_grad.cu */

/* The gradients of elementwise_{add,sub,mul,div} (op CT__CU_ADD ...) over n float32 elements
 * when X, Y and Out@GRAD g all have n: dx and dy element by element, either of them NULL when
 * not wanted. */
cudaError_t ct__cu_binary_grad(int op, float *dx, float *dy, const float *g, const float *x,
                               const float *y, int64_t n, cudaStream_t stream);

/* How one input's gradient gathers Out@GRAD under broadcasting. Element i of the input (memory
 * order) is the sum, in Out's order and starting from 0, of one term per element of Out it was
 * broadcast to: keep_out and keep_other split i over the input's own dims into the offsets of
 * its first such element in Out and in the other input; red_out and red_other walk the n_red
 * elements along the broadcast dims (the same dims, strides in Out and in the other input). */
typedef struct ct__cu_grad_walk {
  ct__cu_walk keep_out, keep_other;
  ct__cu_walk red_out, red_other;
  int64_t n_red;
} ct__cu_grad_walk;

/* The gradient d of X (dy 0) or of Y (dy 1), n_in float32 elements, under broadcasting: walk w
 * over Out@GRAD g and the inputs x and y. */
cudaError_t ct__cu_binary_grad_bcast(int op, int dy, float *d, const float *g, const float *x,
                                     const float *y, int64_t n_in, const ct__cu_grad_walk *w,
                                     cudaStream_t stream);

/* The gradient of an activation (op CT__CU_RELU ...) over n float32 elements: dx from a (Out,
 * or X for log) and g (Out@GRAD). */
cudaError_t ct__cu_unary_grad(int op, float *dx, const float *a, const float *g, int64_t n,
                              cudaStream_t stream);

/* reduce_grad.cu (float32) */

/* mean_grad: dx[i] = g[0] / n for the n elements of dx, divided in double, g read on the device. */
cudaError_t ct__cu_mean_grad(float *dx, const float *g, int64_t n, cudaStream_t stream);

/* softmax_grad of o (Out) and g (Out@GRAD) seen as [outer, n, inner], along n: the CPU's steps
 * (the sum of g x o in double, then o (g - sum) in double). rows = outer x inner. */
cudaError_t ct__cu_softmax_grad(float *dx, const float *o, const float *g, int64_t rows,
                                int64_t n, int64_t inner, cudaStream_t stream);

/* loss.cu (float32): softmax_with_cross_entropy over rows of k classes; labels hard (int64, one
 * per row; a row whose label is ignore gets loss 0 and gradient 0) or soft (float32 [rows, k],
 * hard NULL). The labels have been checked on the host. */

/* Softmax sm and loss (one per row) from the logits x, in the CPU's steps. */
cudaError_t ct__cu_sce(float *sm, float *loss, const float *x, const int64_t *hard,
                       const float *soft, int64_t ignore, int64_t rows, int64_t k,
                       cudaStream_t stream);

/* Logits@GRAD dx from the softmax sm and Loss@GRAD dl (one per row). */
cudaError_t ct__cu_sce_grad(float *dx, const float *sm, const int64_t *hard, const float *soft,
                            const float *dl, int64_t ignore, int64_t rows, int64_t k,
                            cudaStream_t stream);

/* optimizer.cu (float32 parameters): lr, and adam's b1p and b2p, are one-element tensors on the
 * device, float64 where their *64 flag is set, else float32; they are read by the kernel. */

/* sgd: po = p - lr g over n elements. */
cudaError_t ct__cu_sgd(float *po, const float *p, const float *g, const void *lr, int lr64,
                       int64_t n, cudaStream_t stream);

/* momentum: vo = v mu + g; po = p - lr vo, or p - (g + vo mu) lr with nesterov. */
cudaError_t ct__cu_momentum(float *po, float *vo, const float *p, const float *g, const float *v,
                            const void *lr, int lr64, float mu, int nesterov, int64_t n,
                            cudaStream_t stream);

/* adam's moments and parameter update over n elements (ops/cpu/optimizer.c's steps); the pows
 * are read, not written. */
typedef struct ct__cu_adam {
  float *po, *m1o, *m2o;
  const float *p, *g, *m1, *m2;
  const void *lr, *b1p, *b2p;
  int lr64, b1p64, b2p64;
  float beta1, beta2, eps;
} ct__cu_adam;

cudaError_t ct__cu_adam_step(const ct__cu_adam *a, int64_t n, cudaStream_t stream);

/* o = x factor for a one-element float32 (is64 0) or float64 tensor, in its dtype: the pows'
 * update, launched after ct__cu_adam_step has read them. */
cudaError_t ct__cu_scale_scalar(void *o, const void *x, int is64, double factor,
                                cudaStream_t stream);

/* conv.cu (float32, NCHW): the geometry of ct__conv_geom (ops/defs.h) as the device sees it. */
typedef struct ct__cu_conv {
  int64_t n, c, h, w, m, groups, kh, kw, oh, ow;
  int64_t sh, sw, dh, dw, pt, pl;
  int max, exclusive;
} ct__cu_conv;

/* conv2d: o [n, m, oh, ow] from x [n, c, h, w] and filters f [m, c / groups, kh, kw]; one thread
 * per output, its taps summed in the order (ci, ky, kx). */
cudaError_t ct__cu_conv2d(const ct__cu_conv *g, float *o, const float *x, const float *f,
                          cudaStream_t stream);

/* conv2d_grad: dx (when not NULL) one thread per input element, summing the taps that read it;
 * df (when not NULL) one thread per filter element, summing over images and outputs in order. */
cudaError_t ct__cu_conv2d_grad(const ct__cu_conv *g, float *dx, float *df, const float *x,
                               const float *f, const float *d, cudaStream_t stream);

/* pool2d over n c planes: one thread per output, in the CPU kernel's order. pool2d_grad: one
 * thread per plane, doing the CPU kernel's walk (the first element equal to Out takes max's
 * gradient), so the two agree bit for bit. */
cudaError_t ct__cu_pool2d(const ct__cu_conv *g, float *o, const float *x, cudaStream_t stream);
cudaError_t ct__cu_pool2d_grad(const ct__cu_conv *g, float *dx, const float *x, const float *o,
                               const float *d, cudaStream_t stream);

#ifdef __cplusplus
}
#else

/* ---- The C side's bracket and shared steps (C only: ops/cuda/launch.c) --------------------- */

/* A kernel's hold on its op's device while it launches. */
typedef struct ct__cu_launch {
  ct__cuda_guard guard;
  cudaStream_t stream; /* the calling thread's current stream of the op's device */
} ct__cu_launch;

/* Sets the op's device up (it may hold only wrapped buffers or blocks of a replaced allocator,
 * so no earlier allocation need have done it), makes it current and picks its stream. CT_OK, or
 * the failure recorded naming the op (then there is nothing to leave). */
ct_status ct__cu_enter(const ct_kernel_ctx *c, ct__cu_launch *l);

/* Restores the device current before ct__cu_enter and reports e: CT_OK for cudaSuccess, else
 * CT_ERR_DEVICE recorded as "<what> failed on cuda:<device>: <CUDA's text> (<error name>)"
 * naming the op, with CUDA's sticky note of the error cleared so it is reported once. */
ct_status ct__cu_leave(const ct_kernel_ctx *c, ct__cu_launch *l, cudaError_t e, const char *what);

/* Copies n bytes from x to o, both device memory of the op's device, on its current stream
 * (nothing when n is 0 or o is x): assign, and the kernels whose result is their input. */
ct_status ct__cu_copy(const ct_kernel_ctx *c, void *o, const void *x, size_t n);

/* Input X (its first variable) seen as [outer, n, inner] around an axis; n is 1 for rank 0. */
typedef struct ct__cu_around {
  int axis;
  int64_t outer, n, inner;
} ct__cu_around;

/* The first steps of the kernels that see X around the axis in int attribute attr, named "axis"
 * (softmax, concat): the axis normalised over X's rank as the CPU kernels do, then Out allocated
 * as the kernel's dtype. Out's data with the split in *a, or NULL with the failure recorded
 * naming the op. */
void *ct__cu_out_around(const ct_kernel_ctx *c, size_t attr, ct__cu_around *a);

/* The split alone, without Out (concat_grad, softmax_grad's checks): CT_OK or the axis's
 * failure recorded naming the op. */
ct_status ct__cu_around_axis(const ct_kernel_ctx *c, size_t attr, ct__cu_around *a);

/* cuBLAS for the C side (ops/cuda/matmul.c). ct__cu_blas_begin enters the op's device as
 * ct__cu_enter does, then takes the device's cuBLAS handle (loading cuBLAS on first use) on the
 * launch's stream and holds it: CT_OK, or the failure recorded naming the op with nothing to
 * end. Between it and ct__cu_blas_end, ct__cu_sgemm queues one float32 GEMM in CBLAS's
 * row-major terms with alpha 1, o [m, n] = op(a) [m, k] x op(b) [k, n] + beta o (ta / tb
 * transpose a / b, leading dims in elements): CT_OK or CT_ERR_DEVICE recorded. */
ct_status ct__cu_blas_begin(const ct_kernel_ctx *c, ct__cu_launch *l);
ct_status ct__cu_sgemm(const ct_kernel_ctx *c, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                       const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                       float *o, int64_t ldo);
void ct__cu_blas_end(ct__cu_launch *l);

#endif /* __cplusplus */

#endif /* CORTEN_OPS_CUDA_LAUNCH_H */
