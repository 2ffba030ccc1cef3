/* SPDX-License-Identifier: Apache-2.0 */
/* bench_conv.c: conv2d and a CNN training step, next to libtorch in the same run.
 *   conv2d forward   Input [32,16,32,32], Filter [32,16,3,3], padding 1, float32: one ct_op_run
 *                    (Winograd's F(2x2, 3x3): 16 GEMMs per block of tiles, ops/cpu/winograd.c)
 *                                                                 [at::conv2d]
 *   conv2d backward  conv2d_grad of the same, Input@GRAD and Filter@GRAD
 *                                                                 [at::convolution_backward]
 *   both again with every core: corten's pool, libtorch's intra-op pool and OpenBLAS's threads
 *   (libtorch's GEMMs) at nproc
 *   CNN train step   examples/train_digits.c's network and step (batch 50 of [1,8,8],
 *                    conv2d 32 3x3 + relu + max pool 2x2, 512 -> 64 (relu) -> 10, softmax with
 *                    cross entropy, mean, backward, adam on the 6 parameters), one thread
 *                    and every core                               [the same step in libtorch:
 *                                                                  autograd, optim::Adam]
 * Both sides read the same inputs and start from the same weights. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <corten/corten.h>

#ifdef CORTEN_BENCH_TORCH
#include "bench_torch.h"
#include "bench_torch_conv.h"
#endif
#include "bench_util.h"

enum { N = 32, C = 16, H = 32, M = 32, K = 3, PAD = 1 };
enum { BATCH = 50, FILTERS = 32, HIDDEN = 64, CLASSES = 10 };

static void fail(const char *what) {
  fprintf(stderr, "bench_conv: %s: %s\n", what, ct_last_error());
  exit(1);
}

typedef struct op_run {
  ct_op *op;
  ct_scope *s;
} op_run;

static void op_batch(void *arg, size_t iters) {
  op_run *r = arg;
  for (size_t i = 0; i < iters; i++) {
    if (ct_op_run(r->op, r->s, ct_cpu()) != CT_OK) fail(ct_op_type(r->op));
  }
}

static void exec_batch(void *arg, size_t iters) {
  for (size_t i = 0; i < iters; i++) {
    if (ct_executor_run(arg) != CT_OK) fail("a training step");
  }
}

/* conv2d (backward 0) or conv2d_grad (1) over s's x, w (and d) at `threads` threads. */
static void conv_row(const bench_cfg *cfg, ct_scope *s, const float *const *data, int backward,
                     int threads) {
  static const int64_t pads[2] = {PAD, PAD};
  ct_op *op = ct_op_new(backward ? "conv2d_grad" : "conv2d");
  if (op == NULL || ct_op_set_input(op, "Input", "x") != CT_OK ||
      ct_op_set_input(op, "Filter", "w") != CT_OK ||
      ct_op_set_attr_ints(op, "paddings", pads, 2) != CT_OK) {
    fail("conv op");
  }
  if ((backward ? ct_op_set_input(op, "Output@GRAD", "d") != CT_OK ||
                      ct_op_set_output(op, "Input@GRAD", "dx") != CT_OK ||
                      ct_op_set_output(op, "Filter@GRAD", "dw") != CT_OK
                : ct_op_set_output(op, "Output", "out") != CT_OK)) {
    fail("conv op");
  }
  bench_set_threads(threads);
  op_run r = {op, s};
  void (*fns[2])(void *, size_t) = {op_batch, NULL};
  void *args[2] = {&r, NULL};
#ifdef CORTEN_BENCH_TORCH
  void *tb = tbc_conv_setup(data[0], data[1], data[2], N, C, H, H, M, K, PAD, backward);
  fns[1] = tbc_conv_batch;
  args[1] = tb;
#else
  (void)data;
#endif
  double ns[2];
  bench_median_multi_ns(2, fns, args, cfg->quick ? 2 : 10, cfg->reps, ns);
  char name[96];
  snprintf(name, sizeof name, "conv2d %s [32,16,32,32]*[32,16,3,3], %d thread%s",
           backward ? "backward" : "forward", threads, threads > 1 ? "s" : "");
  bench_record(name, ns[0] / 1e3, backward ? "at::convolution_backward" : "at::conv2d",
               ns[1] < 0 ? ns[1] : ns[1] / 1e3, "us");
#ifdef CORTEN_BENCH_TORCH
  tbc_conv_teardown(tb);
#endif
  bench_set_threads(1);
  ct_op_free(op);
}

/* Appends type reading in and writing out (conv2d: Input, Filter conv.w, Output; else X, Out)
 * with the 2-value int list attribute a (and a2, when not NULL) set to v. */
static ct_status append_x(ct_program *p, const char *type, const char *in, const char *out,
                          const char *a, const int64_t *v, const char *a2) {
  ct_op *op = ct_op_new(type);
  if (op == NULL) return ct_last_status();
  bool conv = type[0] == 'c';
  ct_status s = ct_op_set_input(op, conv ? "Input" : "X", in);
  if (s == CT_OK && conv) s = ct_op_set_input(op, "Filter", "conv.w");
  if (s == CT_OK) s = ct_op_set_output(op, conv ? "Output" : "Out", out);
  if (s == CT_OK) s = ct_op_set_attr_ints(op, a, v, 2);
  if (s == CT_OK && a2 != NULL) s = ct_op_set_attr_ints(op, a2, v, 2);
  if (s != CT_OK) {
    ct_op_free(op);
    return s;
  }
  return ct_program_append(p, op);
}

/* The digits CNN's training step, as examples/train_digits.c builds it (from float32 x), at
 * `threads` threads (corten's pool and OpenBLAS; libtorch's intra-op pool). */
static void cnn_row(const bench_cfg *cfg, int threads) {
  static const char *const params[] = {"conv.w", "conv.b", "fc1.w", "fc1.b", "fc2.w", "fc2.b"};
  const ct_ddim dims[] = {CT_DIMS(FILTERS, 1, 3, 3), CT_DIMS(FILTERS, 1, 1),
                          CT_DIMS(FILTERS * 16, HIDDEN), CT_DIMS(HIDDEN),
                          CT_DIMS(HIDDEN, CLASSES), CT_DIMS(CLASSES)};
  ct_scope *s = ct_scope_new();
  float *x = bench_put_pattern(s, "x", CT_DIMS(BATCH, 1, 8, 8), 0.01f);
  const float *pv[6];
  ct_program *p = ct_program_new();
  if (s == NULL || p == NULL) fail("setting up");
  for (int i = 0; i < 6; i++) {
    char name[32];
    pv[i] = bench_put_pattern(s, params[i], dims[i], 0.002f);
    for (int k = 0; k < 4; k++) {
      static const char *const sfx[] = {"m1", "m2", "b1p", "b2p"};
      snprintf(name, sizeof name, "%s.%s", params[i], sfx[k]);
      float *v = bench_put_pattern(s, name, k < 2 ? dims[i] : CT_DIMS(1), 0);
      if (k >= 2) *v = k == 2 ? 0.9f : 0.999f;
    }
  }
  int64_t labels[BATCH];
  for (int i = 0; i < BATCH; i++) labels[i] = i % CLASSES;
  float lr = 0.01f;
  if (ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, "label")), labels, CT_DIMS(BATCH),
                          CT_INT64, ct_cpu()) != CT_OK ||
      ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, "lr")), &lr, CT_DIMS(1), CT_FLOAT32,
                          ct_cpu()) != CT_OK) {
    fail("labels");
  }
  static const int64_t pad1[2] = {1, 1}, two[2] = {2, 2}, flat[2] = {-1, FILTERS * 16};
  if (append_x(p, "conv2d", "x", "c0", "paddings", pad1, NULL) != CT_OK ||
      BENCH_APPEND(p, "elementwise_add", "X", "c0", "Y", "conv.b", ">Out", "c1") != 0 ||
      BENCH_APPEND(p, "relu", "X", "c1", ">Out", "c2") != 0 ||
      append_x(p, "pool2d", "c2", "c3", "ksize", two, "strides") != CT_OK ||
      append_x(p, "reshape", "c3", "flat", "shape", flat, NULL) != CT_OK ||
      BENCH_APPEND(p, "matmul", "X", "flat", "Y", "fc1.w", ">Out", "h0") != 0 ||
      BENCH_APPEND(p, "elementwise_add", "X", "h0", "Y", "fc1.b", ">Out", "h1") != 0 ||
      BENCH_APPEND(p, "relu", "X", "h1", ">Out", "h") != 0 ||
      BENCH_APPEND(p, "matmul", "X", "h", "Y", "fc2.w", ">Out", "z0") != 0 ||
      BENCH_APPEND(p, "elementwise_add", "X", "z0", "Y", "fc2.b", ">Out", "z") != 0 ||
      BENCH_APPEND(p, "softmax_with_cross_entropy", "Logits", "z", "Label", "label", ">Softmax",
                   "prob", ">Loss", "losses") != 0 ||
      BENCH_APPEND(p, "mean", "X", "losses", ">Out", "loss") != 0 ||
      ct_program_append_backward(p, "loss", params, 6) != CT_OK) {
    fail("the CNN");
  }
  for (int i = 0; i < 6; i++) {
    char g[32], m1[32], m2[32], b1[32], b2[32];
    snprintf(g, sizeof g, "%s@GRAD", params[i]);
    snprintf(m1, sizeof m1, "%s.m1", params[i]);
    snprintf(m2, sizeof m2, "%s.m2", params[i]);
    snprintf(b1, sizeof b1, "%s.b1p", params[i]);
    snprintf(b2, sizeof b2, "%s.b2p", params[i]);
    if (BENCH_APPEND(p, "adam", "Param", params[i], "Grad", g, "LearningRate", "lr", "Moment1",
                     m1, "Moment2", m2, "Beta1Pow", b1, "Beta2Pow", b2, ">ParamOut", params[i],
                     ">Moment1Out", m1, ">Moment2Out", m2, ">Beta1PowOut", b1, ">Beta2PowOut",
                     b2) != 0) {
      fail("adam");
    }
  }
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  if (e == NULL) fail("executor");
  bench_set_threads(threads);
  void (*fns[2])(void *, size_t) = {exec_batch, NULL};
  void *args[2] = {e, NULL};
#ifdef CORTEN_BENCH_TORCH
  void *tb = tbc_cnn_setup(x, pv, labels, BATCH, FILTERS, HIDDEN, lr);
  fns[1] = tbc_cnn_batch;
  args[1] = tb;
#else
  (void)x, (void)pv;
#endif
  double ns[2];
  bench_median_multi_ns(2, fns, args, cfg->quick ? 10 : 100, cfg->reps, ns);
  char name[96];
  snprintf(name, sizeof name, "digits CNN training step (batch 50, adam), %d thread%s", threads,
           threads > 1 ? "s" : "");
  bench_record(name, ns[0] / 1e3, "the same step in libtorch", ns[1] < 0 ? ns[1] : ns[1] / 1e3,
               "us");
#ifdef CORTEN_BENCH_TORCH
  tbc_cnn_teardown(tb);
#endif
  bench_set_threads(1);
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}

void bench_conv_rows(const bench_cfg *cfg) {
  ct_scope *s = ct_scope_new();
  if (s == NULL) fail("scope");
  const float *data[3] = {bench_put_pattern(s, "x", CT_DIMS(N, C, H, H), 0.01f),
                          bench_put_pattern(s, "w", CT_DIMS(M, C, K, K), 0.002f),
                          bench_put_pattern(s, "d", CT_DIMS(N, M, H, H), 0.001f)};
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int all = cores > 1 ? (int)cores : 1;
  for (int backward = 0; backward < 2; backward++) {
    conv_row(cfg, s, data, backward, 1);
    if (all > 1) conv_row(cfg, s, data, backward, all);
  }
  ct_scope_free(s);
  cnn_row(cfg, 1);
  if (all > 1) cnn_row(cfg, all);
}
