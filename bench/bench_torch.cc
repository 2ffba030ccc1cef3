/* SPDX-License-Identifier: Apache-2.0 */
// bench/bench_torch.cc: the libtorch baselines of the benchmarks (see bench_torch.h), calling
// the same entry points a C++ user of libtorch would: torch::empty, at::add_out, at::mm_out.
// Tensors over the benchmark's own buffers come from at::from_blob, so both sides read and write
// the same memory.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/generated/variable_factories.h>
#include <torch/version.h>

#include <vector>

#include "bench_torch.h"

namespace {

inline void keep(const void *p) { __asm__ __volatile__("" : : "g"(p) : "memory"); }

struct Add1 {
  std::vector<at::Tensor> a, out;
  at::Tensor b;
};

struct Binary {
  at::Tensor o, x, y;
};

struct Train {
  at::Tensor x, labels;
  std::vector<at::Tensor> params;
  float lr;
};

}  // namespace

extern "C" {

void tb_set_threads(int n) { at::set_num_threads(n); }

const char *tb_version(void) { return TORCH_VERSION; }

void tb_empty_batch(void *arg, size_t iters) {
  (void)arg;
  for (size_t i = 0; i < iters; i++) {
    at::Tensor t = torch::empty({1024}, at::TensorOptions().dtype(at::kFloat));
    keep(t.data_ptr());
  }
}

void *tb_add1_setup(int n_ops) {
  auto *c = new Add1();
  auto opt = at::TensorOptions().dtype(at::kFloat);
  c->b = at::ones({1}, opt);
  for (int i = 0; i < n_ops; i++) {
    c->a.push_back(at::full({1}, static_cast<double>(i), opt));
    c->out.push_back(at::empty({1}, opt));
  }
  return c;
}

void tb_add1_batch(void *arg, size_t iters) {
  auto *c = static_cast<Add1 *>(arg);
  for (size_t r = 0; r < iters; r++) {
    for (size_t i = 0; i < c->a.size(); i++) at::add_out(c->out[i], c->a[i], c->b);
    keep(c->out.data());
  }
}

void tb_add1_teardown(void *arg) { delete static_cast<Add1 *>(arg); }

void *tb_add_setup(float *o, const float *x, const float *y, long n) {
  auto *c = new Binary();
  auto opt = at::TensorOptions().dtype(at::kFloat);
  c->o = at::from_blob(o, {n}, opt);
  c->x = at::from_blob(const_cast<float *>(x), {n}, opt);
  c->y = at::from_blob(const_cast<float *>(y), {n}, opt);
  return c;
}

void tb_add_batch(void *arg, size_t iters) {
  auto *c = static_cast<Binary *>(arg);
  for (size_t r = 0; r < iters; r++) {
    at::add_out(c->o, c->x, c->y);
    keep(c->o.data_ptr());
  }
}

void tb_add_teardown(void *arg) { delete static_cast<Binary *>(arg); }

void tb_exp_batch(void *arg, size_t iters) {
  auto *c = static_cast<Binary *>(arg);
  for (size_t r = 0; r < iters; r++) {
    at::exp_out(c->o, c->x);
    keep(c->o.data_ptr());
  }
}

void *tb_mm_setup(float *c_out, const float *a, const float *b, long n) {
  auto *c = new Binary();
  auto opt = at::TensorOptions().dtype(at::kFloat);
  c->o = at::from_blob(c_out, {n, n}, opt);
  c->x = at::from_blob(const_cast<float *>(a), {n, n}, opt);
  c->y = at::from_blob(const_cast<float *>(b), {n, n}, opt);
  return c;
}

void tb_mm_batch(void *arg, size_t iters) {
  auto *c = static_cast<Binary *>(arg);
  for (size_t r = 0; r < iters; r++) {
    at::mm_out(c->o, c->x, c->y);
    keep(c->o.data_ptr());
  }
}

void tb_mm_teardown(void *arg) { delete static_cast<Binary *>(arg); }

void *tb_square_setup(int op, float *o, const float *x, long n) {
  auto *c = new Binary();
  auto opt = at::TensorOptions().dtype(at::kFloat);
  c->x = at::from_blob(const_cast<float *>(x), {n, n}, opt);
  c->o = op == 1 ? at::from_blob(o, {n}, opt) : at::from_blob(o, {n, n}, opt);
  c->y = at::scalar_tensor(op, at::TensorOptions().dtype(at::kLong));
  return c;
}

void tb_square_batch(void *arg, size_t iters) {
  auto *c = static_cast<Binary *>(arg);
  long op = c->y.item<long>();
  for (size_t r = 0; r < iters; r++) {
    if (op == 0) at::_softmax_out(c->o, c->x, 1, false);
    else if (op == 1) at::sum_out(c->o, c->x, {1});
    else c->o.copy_(c->x.t());
    keep(c->o.data_ptr());
  }
}

void tb_square_teardown(void *arg) { delete static_cast<Binary *>(arg); }

void *tb_train_setup(const float *x, const float *w1, const float *b1, const float *w2,
                     const float *b2, const int64_t *labels, long batch, long in, long hidden,
                     long classes, float lr) {
  auto *c = new Train();
  auto f32 = at::TensorOptions().dtype(at::kFloat);
  auto copy = [&](const float *p, at::IntArrayRef dims) {
    return at::from_blob(const_cast<float *>(p), dims, f32).clone().set_requires_grad(true);
  };
  c->x = at::from_blob(const_cast<float *>(x), {batch, in}, f32).clone();
  c->labels = at::from_blob(const_cast<int64_t *>(labels), {batch},
                            at::TensorOptions().dtype(at::kLong))
                  .clone();
  c->params = {copy(w1, {in, hidden}), copy(b1, {hidden}), copy(w2, {hidden, classes}),
               copy(b2, {classes})};
  c->lr = lr;
  return c;
}

void tb_train_batch(void *arg, size_t iters) {
  auto *c = static_cast<Train *>(arg);
  for (size_t i = 0; i < iters; i++) {
    at::Tensor h = at::relu(at::matmul(c->x, c->params[0]) + c->params[1]);
    at::Tensor z = at::matmul(h, c->params[2]) + c->params[3];
    at::Tensor loss = at::cross_entropy_loss(z, c->labels);
    loss.backward();
    at::NoGradGuard no_grad;
    for (auto &p : c->params) {
      p.sub_(p.grad(), c->lr);
      p.mutable_grad().zero_();
    }
    keep(loss.data_ptr());
  }
}

void tb_train_teardown(void *arg) { delete static_cast<Train *>(arg); }

}  // extern "C"
