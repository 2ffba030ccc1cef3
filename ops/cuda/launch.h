/* ops/cuda/launch.h: the launchers of the operator kernels (the .cu files of
 * core/cuda/kernels), called by core/cuda/cuda_ops.c (the C side: wiring, checks, allocation,
 * messages).
 *
 * For C and for nvcc. Each launcher queues its kernel on `stream` and returns what
 * cudaGetLastError says after the launch (cudaSuccess when nothing had to run). Element counts
 * are the output's; pointers are device memory of the named dtypes. Arithmetic matches the CPU
 * kernels operation for operation (the device code is compiled with --fmad=false), so results
 * are bit-identical to them except for the transcendental functions (expf, tanhf, logf). */
#ifndef CORTEN_CORE_CUDA_OPS_H
#define CORTEN_CORE_CUDA_OPS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include <corten/status.h>
#include <corten/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A broadcast walk over the output (see ct__bcast_plan in core/op/kernels/kernels.h): the output
 * in memory order is the dims d, and sx / sy are the inputs' strides in elements (0 where
 * broadcast). */
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

/* o = sc * x + bi over n float32 elements. */
cudaError_t ct__cu_scale(float *o, const float *x, int64_t n, float sc, float bi,
                         cudaStream_t stream);

/* Converts n elements between float32, float16 and bfloat16 (from != to). */
cudaError_t ct__cu_cast(void *o, ct_dtype to, const void *x, ct_dtype from, int64_t n,
                        cudaStream_t stream);

/* uniform_random over n elements of dt (float16, bfloat16, float32, float64): lo + span x u
 * clamped to [vmin, vmax] (ct__uniform_bounds). */
cudaError_t ct__cu_uniform(void *o, ct_dtype dt, int64_t n, uint64_t seed, double lo,
                           double span, double vmin, double vmax, cudaStream_t stream);

/* gaussian_random over n elements of dt: mean + std x z. */
cudaError_t ct__cu_gaussian(void *o, ct_dtype dt, int64_t n, uint64_t seed, double mean,
                            double std, cudaStream_t stream);

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

/* Copies x (outer rows of bx elements of es bytes) into o, whose rows are bo elements, starting
 * at element at of each row (concat's step for one input). */
cudaError_t ct__cu_place_rows(void *o, const void *x, size_t es, int64_t outer, int64_t bx,
                              int64_t bo, int64_t at, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_CORE_CUDA_OPS_H */
