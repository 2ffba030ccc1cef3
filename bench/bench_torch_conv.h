/* SPDX-License-Identifier: Apache-2.0 */
/* bench/bench_torch_conv.h: the libtorch baselines of bench_conv.c (bench_torch_conv.cc), built
 * with the other libtorch baselines (CORTEN_BENCH_TORCH). Tensors over caller memory. */
#ifndef CORTEN_BENCH_TORCH_CONV_H
#define CORTEN_BENCH_TORCH_CONV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* at::conv2d(x [n,c,h,w], w [m,c,k,k], padding pad, stride 1) per iteration; with backward set,
 * at::convolution_backward of d (Output's dims) for both the input's and the filter's
 * gradients instead. */
void *tbc_conv_setup(const float *x, const float *w, const float *d, long n, long c, long h,
                     long wd, long m, long k, long pad, int backward);
void tbc_conv_batch(void *arg, size_t iters);
void tbc_conv_teardown(void *arg);

/* One training step of train_digits' CNN (x [batch,1,8,8]; conv.w [f,1,3,3], conv.b [f];
 * fc1.w [f*16, hidden], fc1.b; fc2.w [hidden, 10], fc2.b; labels [batch]): at::conv2d (padding
 * 1), relu, max_pool2d 2x2, matmul, relu, matmul, cross_entropy, backward, and
 * torch::optim::Adam's step, per iteration. */
void *tbc_cnn_setup(const float *x, const float *const *params, const int64_t *labels,
                    long batch, long filters, long hidden, float lr);
void tbc_cnn_batch(void *arg, size_t iters);
void tbc_cnn_teardown(void *arg);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_BENCH_TORCH_CONV_H */
