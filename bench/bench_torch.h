/* SPDX-License-Identifier: Apache-2.0 */
/* bench/bench_torch.h: the libtorch baselines (bench_torch.cc), built when CMake finds Torch
 * (CORTEN_BENCH_TORCH is then defined). Each *_setup returns a context for bench_median_ns's
 * batch function and *_teardown frees it. Tensors over caller memory (from_blob) take no copy. */
#ifndef CORTEN_BENCH_TORCH_H
#define CORTEN_BENCH_TORCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* at::set_num_threads(n): libtorch's intra-op thread pool. */
void tb_set_threads(int n);
/* The libtorch version string ("1.13.1"). */
const char *tb_version(void);

/* torch::empty({1024}, float32) and its release, per iteration (arg unused). */
void tb_empty_batch(void *arg, size_t iters);

/* n_ops calls of at::add_out(out_i, a_i, b) on one-element float tensors, per iteration. */
void *tb_add1_setup(int n_ops);
void tb_add1_batch(void *arg, size_t iters);
void tb_add1_teardown(void *arg);

/* at::add_out(o, x, y) over n floats at caller memory. */
void *tb_add_setup(float *o, const float *x, const float *y, long n);
void tb_add_batch(void *arg, size_t iters);
void tb_add_teardown(void *arg);
/* at::exp_out(o, x) on a context of tb_add_setup (its y unused). */
void tb_exp_batch(void *arg, size_t iters);

/* at::mm_out(c, a, b) of n x n row-major floats at caller memory. */
void *tb_mm_setup(float *c, const float *a, const float *b, long n);
void tb_mm_batch(void *arg, size_t iters);
void tb_mm_teardown(void *arg);

/* On n x n row-major floats x at caller memory, into o: op 0 at::_softmax_out along dim 1,
 * 1 at::sum_out over dim 1 (o: n floats), 2 o.copy_(x.t()). */
void *tb_square_setup(int op, float *o, const float *x, long n);
void tb_square_batch(void *arg, size_t iters);
void tb_square_teardown(void *arg);

/* One training step of the MLP of bench_train.c (x [batch, in], w1 [in, hidden], b1 [hidden],
 * w2 [hidden, classes], b2 [classes], labels int64 [batch]; the parameters copied in): forward,
 * cross_entropy (mean), backward through autograd, and p -= lr * p.grad, per iteration. */
void *tb_train_setup(const float *x, const float *w1, const float *b1, const float *w2,
                     const float *b2, const int64_t *labels, long batch, long in, long hidden,
                     long classes, float lr);
void tb_train_batch(void *arg, size_t iters);
void tb_train_teardown(void *arg);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_BENCH_TORCH_H */
