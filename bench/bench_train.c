/* SPDX-License-Identifier: Apache-2.0 */
/* bench_train.c: one training step of an MLP, forward, backward and sgd, next to the same step
 * in libtorch from the same run.
 *   train step    batch 64, 64 -> 128 (relu) -> 10, softmax_with_cross_entropy, mean, then sgd
 *                 on the four parameters: one executor run of the program that
 *                 ct_program_append_backward made, float32, one thread
 *                                               [the same step in libtorch: at::matmul, relu,
 *                                                cross_entropy, autograd's backward, and
 *                                                p -= lr * p.grad under NoGradGuard]
 * Both sides start from the same weights and inputs. */
#include <stdio.h>
#include <stdlib.h>

#include <corten/corten.h>

#include "bench_torch.h"
#include "bench_util.h"

enum { BATCH = 64, IN = 64, HIDDEN = 128, CLASSES = 10 };

static void fail(const char *what) {
  fprintf(stderr, "bench_train: %s: %s\n", what, ct_last_error());
  exit(1);
}

/* Appends an op wired by BENCH_APPEND's pairs, or stops the run with corten's message. */
#define APPEND(p, type, ...)                                                 \
  do {                                                                       \
    if (BENCH_APPEND((p), (type), __VA_ARGS__) != 0) fail(type);             \
  } while (0)

typedef struct step {
  ct_executor *ex;
} step;

static void step_batch(void *arg, size_t iters) {
  step *s = arg;
  for (size_t i = 0; i < iters; i++) {
    if (ct_executor_run(s->ex) != CT_OK) fail("a training step");
  }
}

void bench_train_rows(const bench_cfg *cfg) {
  ct_scope *s = ct_scope_new();
  float *x = bench_put_pattern(s, "x", CT_DIMS(BATCH, IN), 0.01f);
  float *w1 = bench_put_pattern(s, "w1", CT_DIMS(IN, HIDDEN), 0.002f);
  float *b1 = bench_put_pattern(s, "b1", CT_DIMS(HIDDEN), 0.001f);
  float *w2 = bench_put_pattern(s, "w2", CT_DIMS(HIDDEN, CLASSES), 0.002f);
  float *b2 = bench_put_pattern(s, "b2", CT_DIMS(CLASSES), 0.001f);
  int64_t labels[BATCH];
  for (int i = 0; i < BATCH; i++) labels[i] = i % CLASSES;
  ct_tensor *lt = ct_var_tensor(ct_scope_var(s, "label"));
  float lr_value = 0.01f;
  ct_tensor *lr = ct_var_tensor(ct_scope_var(s, "lr"));
  if (lt == NULL || lr == NULL ||
      ct_tensor_set_value(lt, labels, CT_DIMS(BATCH, 1), CT_INT64, ct_cpu()) != CT_OK ||
      ct_tensor_set_value(lr, &lr_value, CT_DIMS(1), CT_FLOAT32, ct_cpu()) != CT_OK) {
    fail("labels");
  }

  ct_program *p = ct_program_new();
  if (p == NULL) fail("program");
  APPEND(p, "matmul", "X", "x", "Y", "w1", ">Out", "h0");
  APPEND(p, "elementwise_add", "X", "h0", "Y", "b1", ">Out", "h1");
  APPEND(p, "relu", "X", "h1", ">Out", "h");
  APPEND(p, "matmul", "X", "h", "Y", "w2", ">Out", "z0");
  APPEND(p, "elementwise_add", "X", "z0", "Y", "b2", ">Out", "z");
  APPEND(p, "softmax_with_cross_entropy", "Logits", "z", "Label", "label", ">Softmax", "prob",
         ">Loss", "losses");
  APPEND(p, "mean", "X", "losses", ">Out", "loss");
  static const char *const params[] = {"w1", "b1", "w2", "b2"};
  if (ct_program_append_backward(p, "loss", params, 4) != CT_OK) fail("backward");
  for (int i = 0; i < 4; i++) {
    char grad[32];
    snprintf(grad, sizeof grad, "%s@GRAD", params[i]);
    APPEND(p, "sgd", "Param", params[i], "Grad", grad, "LearningRate", "lr", ">ParamOut",
           params[i]);
  }
  step st = {.ex = ct_executor_new(p, s, ct_cpu())};
  if (st.ex == NULL) fail("executor");

  void (*fns[2])(void *, size_t) = {step_batch, NULL};
  void *args[2] = {&st, NULL};
#ifdef CORTEN_BENCH_TORCH
  void *tb = tb_train_setup(x, w1, b1, w2, b2, labels, BATCH, IN, HIDDEN, CLASSES, lr_value);
  fns[1] = tb_train_batch;
  args[1] = tb;
#else
  (void)x, (void)w1, (void)b1, (void)w2, (void)b2;
#endif
  double ns[2];
  bench_median_multi_ns(2, fns, args, cfg->quick ? 20 : 200, cfg->reps, ns);
  bench_record("MLP training step (64x64-128-10, sgd)", ns[0] / 1e3,
               "the same step in libtorch", ns[1] < 0 ? ns[1] : ns[1] / 1e3, "us");
#ifdef CORTEN_BENCH_TORCH
  tb_train_teardown(tb);
#endif
  ct_executor_free(st.ex);
  ct_program_free(p);
  ct_scope_free(s);
}
