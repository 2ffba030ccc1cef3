/* SPDX-License-Identifier: Apache-2.0 */
// bench/bench_torch_conv.cc: the libtorch baselines of bench_conv.c (see bench_torch_conv.h):
// at::conv2d, at::convolution_backward, and a CNN training step with autograd and
// torch::optim::Adam, as a C++ user of libtorch would write them.
#include <ATen/ATen.h>
#include <torch/optim/adam.h>

#include <memory>
#include <vector>

#include "bench_torch_conv.h"

namespace {

inline void keep(const void *p) { __asm__ __volatile__("" : : "g"(p) : "memory"); }

struct Conv {
  at::Tensor x, w, d;
  long pad;
  bool backward;
};

struct Cnn {
  at::Tensor x, labels;
  std::vector<at::Tensor> params;
  std::unique_ptr<torch::optim::Adam> opt;
};

at::Tensor wrap(const float *p, at::IntArrayRef dims) {
  return at::from_blob(const_cast<float *>(p), dims, at::TensorOptions().dtype(at::kFloat));
}

}  // namespace

extern "C" {

void *tbc_conv_setup(const float *x, const float *w, const float *d, long n, long c, long h,
                     long wd, long m, long k, long pad, int backward) {
  auto *s = new Conv();
  s->x = wrap(x, {n, c, h, wd});
  s->w = wrap(w, {m, c, k, k});
  s->d = wrap(d, {n, m, h + 2 * pad - k + 1, wd + 2 * pad - k + 1});
  s->pad = pad;
  s->backward = backward != 0;
  return s;
}

void tbc_conv_batch(void *arg, size_t iters) {
  auto *s = static_cast<Conv *>(arg);
  for (size_t i = 0; i < iters; i++) {
    if (!s->backward) {
      at::Tensor o = at::conv2d(s->x, s->w, {}, 1, s->pad);
      keep(o.data_ptr());
      continue;
    }
    auto g = at::convolution_backward(s->d, s->x, s->w, c10::nullopt, {1, 1}, {s->pad, s->pad},
                                      {1, 1}, false, {0, 0}, 1, {true, true, false});
    keep(std::get<0>(g).data_ptr());
    keep(std::get<1>(g).data_ptr());
  }
}

void tbc_conv_teardown(void *arg) { delete static_cast<Conv *>(arg); }

void *tbc_cnn_setup(const float *x, const float *const *params, const int64_t *labels,
                    long batch, long filters, long hidden, float lr) {
  auto *s = new Cnn();
  s->x = wrap(x, {batch, 1, 8, 8}).clone();
  s->labels = at::from_blob(const_cast<int64_t *>(labels), {batch},
                            at::TensorOptions().dtype(at::kLong))
                  .clone();
  const std::vector<std::vector<int64_t>> dims = {
      {filters, 1, 3, 3}, {filters}, {filters * 16, hidden}, {hidden}, {hidden, 10}, {10}};
  for (size_t i = 0; i < dims.size(); i++) {
    s->params.push_back(wrap(params[i], dims[i]).clone().set_requires_grad(true));
  }
  s->opt = std::make_unique<torch::optim::Adam>(s->params, torch::optim::AdamOptions(lr));
  return s;
}

void tbc_cnn_batch(void *arg, size_t iters) {
  auto *s = static_cast<Cnn *>(arg);
  const auto &p = s->params;
  for (size_t i = 0; i < iters; i++) {
    s->opt->zero_grad();
    at::Tensor c = at::max_pool2d(at::relu(at::conv2d(s->x, p[0], p[1], 1, 1)), 2, 2);
    at::Tensor h = at::relu(at::matmul(c.reshape({c.size(0), -1}), p[2]) + p[3]);
    at::Tensor loss = at::cross_entropy_loss(at::matmul(h, p[4]) + p[5], s->labels);
    loss.backward();
    s->opt->step();
    keep(loss.data_ptr());
  }
}

void tbc_cnn_teardown(void *arg) { delete static_cast<Cnn *>(arg); }

}  // extern "C"
