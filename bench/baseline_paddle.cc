/* SPDX-License-Identifier: Apache-2.0 */
// bench/baseline_paddle.cc: the C++ baselines of bench_core, written to the shape of
// PaddlePaddle's Scope and Variable: a scope is an unordered_map<string, unique_ptr<Variable>>
// behind a shared_mutex with a parent pointer, and FindVar takes each scope's reader lock on
// the way up; a variable holds its value in a std::any read with any_cast.
#include <any>
#include <cstddef>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

struct Tensor {
  long dims[10];
  void *holder;
};

struct Variable {
  std::any value;
};

class Scope {
 public:
  explicit Scope(const Scope *parent) : parent_(parent) {}
  Variable *Var(const std::string &name) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    auto &slot = vars_[name];
    if (!slot) slot.reset(new Variable());
    return slot.get();
  }
  __attribute__((noinline)) Variable *FindVar(const std::string &name) const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = vars_.find(name);
    if (it != vars_.end()) return it->second.get();
    return parent_ ? parent_->FindVar(name) : nullptr;
  }

 private:
  const Scope *parent_;
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<Variable>> vars_;
};

struct FindBench {
  std::vector<std::unique_ptr<Scope>> chain;  // chain[0] is the root
  std::vector<std::string> keys;
  const Scope *from;
};

__attribute__((noinline)) const Tensor *GetTensor(const Variable *v) {
  return std::any_cast<Tensor>(&v->value);
}

}  // namespace

extern "C" {

// A root holding `names` (n of them) and `depth` kids below it, each holding `locals` variables
// of its own; lookups start from the deepest scope. `keys` are the names to look up.
void *pd_find_setup(const char *const *names, size_t n, int depth, size_t locals,
                    const char *const *keys, size_t nkeys) {
  auto *b = new FindBench();
  b->chain.emplace_back(new Scope(nullptr));
  for (size_t i = 0; i < n; i++) b->chain[0]->Var(names[i]);
  for (int d = 1; d <= depth; d++) {
    b->chain.emplace_back(new Scope(b->chain.back().get()));
    for (size_t i = 0; i < locals; i++) {
      b->chain.back()->Var("local." + std::to_string(d) + "." + std::to_string(i));
    }
  }
  for (size_t i = 0; i < nkeys; i++) b->keys.emplace_back(keys[i]);
  b->from = b->chain.back().get();
  return b;
}

void pd_find_batch(void *arg, size_t iters) {
  auto *b = static_cast<FindBench *>(arg);
  size_t nk = b->keys.size();
  for (size_t i = 0, k = 0; i < iters; i++, k = k + 1 == nk ? 0 : k + 1) {
    Variable *v = b->from->FindVar(b->keys[k]);
    __asm__ __volatile__("" : : "g"(v) : "memory");
  }
}

void pd_find_teardown(void *arg) { delete static_cast<FindBench *>(arg); }

void *pd_get_setup(void) {
  auto *v = new Variable();
  v->value = Tensor{};
  return v;
}

void pd_get_batch(void *arg, size_t iters) {
  auto *v = static_cast<Variable *>(arg);
  for (size_t i = 0; i < iters; i++) {
    const Tensor *t = GetTensor(v);
    __asm__ __volatile__("" : : "g"(t) : "memory");
  }
}

void pd_get_teardown(void *arg) { delete static_cast<Variable *>(arg); }

}  // extern "C"
