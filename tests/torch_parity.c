/* SPDX-License-Identifier: Apache-2.0 */
/* The corten side of the PyTorch parity test (tests/python/test_torch_parity.py): trains a small
 * network in float64 and writes what the script compares with the same training in PyTorch.
 *
 * mlp: 25 SGD steps of
 *   x [16, 12] -matmul fc1.w [12, 8] -add fc1.b -relu -matmul fc2.w [8, 5] -add fc2.b-> logits
 *   logits, labels -softmax_with_cross_entropy-> row_loss -mean-> loss; sgd(lr 0.1) in place
 * cnn: 20 adam steps of
 *   x [4, 2, 8, 8] -conv2d conv.w [4, 2, 3, 3] (padding 1)
 *     -batch_norm bn.scale, bn.bias [4] (training, momentum 0.9; the running statistics bn.mean,
 *      bn.var updated in place)-> bn.y -relu
 *     -pool2d max 2x2 (stride 2) -conv2d conv2.w [6, 2, 3, 3] (stride 2, padding 1, groups 2)
 *     -pool2d avg 2x2 (stride 1, padding 1, exclusive)-> [4, 6, 3, 3] -reshape-> [4, 54]
 *     -matmul fc.w [54, 5] -add fc.b-> logits, then the loss as above; adam(lr 0.01) in place
 *
 * The inputs and initial weights are fixed values made here (smooth patterns, no random
 * generator) and written first, so both sides start from the same numbers. Then: the logits,
 * loss and gradients of the first step (for the cnn also batch_norm's Y, SavedMean and
 * SavedVariance), the loss of every step, and the weights (and running statistics) after the
 * last.
 *
 * Usage: torch_parity OUT [mlp|cnn] (mlp by default). OUT is text: for each array a line "name
 * count", then count values one per line (%.17g, exact for doubles). Exits 0 when written, 77
 * when this build has no gradient for an op of the network (the script then reports a skip), 1
 * on any other failure. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <corten/corten.h>

#include "parity_util.h"

enum { N = 16, IN = 12, HID = 8, OUT = 5, MLP_STEPS = 25, CNN_STEPS = 20, CNN_N = 4 };

static const char *const MLP_PARAMS[] = {"fc1.w", "fc1.b", "fc2.w", "fc2.b"};
static const char *const CNN_PARAMS[] = {"conv.w",  "bn.scale", "bn.bias",
                                         "conv2.w", "fc.w",     "fc.b"};

/* The network being trained: its parameters, steps and optimizer. */
static const char *const *PARAMS = MLP_PARAMS;
static int N_PARAMS = 4, STEPS = MLP_STEPS;
static bool CNN = false;

static ct_status build_cnn_forward(ct_program *p) {
  ct_op *ops[] = {
      with_pair(mk("conv2d", "Input", "x", "Filter", "conv.w", NULL, "Output", "c1", NULL),
                "paddings", 1, 1),
      mk("batch_norm", "X", "c1", "Scale", "bn.scale", "Bias", "bn.bias", "Mean", "bn.mean",
         "Variance", "bn.var", NULL, "Y", "bn.y", "MeanOut", "bn.mean", "VarianceOut", "bn.var",
         "SavedMean", "bn.saved_mean", "SavedVariance", "bn.saved_var", NULL),
      mk("relu", "X", "bn.y", NULL, "Out", "r1", NULL),
      with_pair(with_pair(mk("pool2d", "X", "r1", NULL, "Out", "p1", NULL), "ksize", 2, 2),
                "strides", 2, 2),
      with_int(with_pair(with_pair(mk("conv2d", "Input", "p1", "Filter", "conv2.w", NULL,
                                      "Output", "c2", NULL),
                                   "paddings", 1, 1),
                         "strides", 2, 2),
               "groups", 2),
      with_pair(with_pair(with_string(mk("pool2d", "X", "c2", NULL, "Out", "p2", NULL),
                                      "pooling_type", "avg"),
                          "ksize", 2, 2),
                "paddings", 1, 1),
      with_pair(mk("reshape", "X", "p2", NULL, "Out", "flat", NULL), "shape", CNN_N, 54),
      mk("matmul", "X", "flat", "Y", "fc.w", NULL, "Out", "z.mm", NULL),
      mk("elementwise_add", "X", "z.mm", "Y", "fc.b", NULL, "Out", "logits", NULL),
  };
  return add_all(p, ops, sizeof ops / sizeof ops[0]);
}

static ct_status build_mlp_forward(ct_program *p) {
  ct_op *ops[] = {
      mk("matmul", "X", "x", "Y", "fc1.w", NULL, "Out", "h.mm", NULL),
      mk("elementwise_add", "X", "h.mm", "Y", "fc1.b", NULL, "Out", "h.pre", NULL),
      mk("relu", "X", "h.pre", NULL, "Out", "h", NULL),
      mk("matmul", "X", "h", "Y", "fc2.w", NULL, "Out", "z.mm", NULL),
      mk("elementwise_add", "X", "z.mm", "Y", "fc2.b", NULL, "Out", "logits", NULL),
  };
  return add_all(p, ops, sizeof ops / sizeof ops[0]);
}

/* The forward ops, the loss, the backward pass and the optimizer (sgd or adam) per parameter. */
static ct_status build(ct_program *p) {
  ct_status s = CNN ? build_cnn_forward(p) : build_mlp_forward(p);
  if (s == CT_OK) {
    s = add(p, mk("softmax_with_cross_entropy", "Logits", "logits", "Label", "labels", NULL,
                  "Softmax", "prob", "Loss", "row_loss", NULL));
  }
  if (s == CT_OK) s = add(p, mk("mean", "X", "row_loss", NULL, "Out", "loss", NULL));
  if (s == CT_OK) s = ct_program_append_backward(p, "loss", PARAMS, (size_t)N_PARAMS);
  for (int i = 0; i < N_PARAMS && s == CT_OK; i++) {
    char g[48];
    snprintf(g, sizeof g, "%s@GRAD", PARAMS[i]);
    s = CNN ? add_adam(p, PARAMS[i])
            : add(p, mk("sgd", "Param", PARAMS[i], "Grad", g, "LearningRate", "lr", NULL,
                        "ParamOut", PARAMS[i], NULL));
  }
  return s;
}

/* The inputs and initial weights of the mlp. */
static ct_status put_mlp(ct_scope *s) {
  ct_status st = put_pattern(s, "x", CT_DIMS(N, IN), 1.0, 0.37, 0.1, 0);
  if (st == CT_OK) st = put_pattern(s, "fc1.w", CT_DIMS(IN, HID), 0.4, 1.13, 0.2, 0);
  if (st == CT_OK) st = put_pattern(s, "fc1.b", CT_DIMS(HID), 0.1, 0.71, 0.3, 0);
  if (st == CT_OK) st = put_pattern(s, "fc2.w", CT_DIMS(HID, OUT), 0.5, 0.89, 0.4, 0);
  if (st == CT_OK) st = put_pattern(s, "fc2.b", CT_DIMS(OUT), 0.1, 0.53, 0.5, 0);
  return st;
}

/* The cnn's: the weights with adam's state (batch_norm's scale about 1), and the running
 * statistics (the variance about 1). */
static ct_status put_cnn(ct_scope *s) {
  static const ct_ddim dims[] = {{4, {4, 2, 3, 3}}, {1, {4}},        {1, {4}},
                                 {4, {6, 2, 3, 3}}, {2, {54, OUT}}, {1, {OUT}}};
  ct_status st = put_pattern(s, "x", CT_DIMS(CNN_N, 2, 8, 8), 1.0, 0.37, 0.1, 0);
  for (int i = 0; i < N_PARAMS && st == CT_OK; i++) {
    double d = strcmp(PARAMS[i], "bn.scale") == 0 ? 1 : 0;
    st = put_pattern(s, PARAMS[i], dims[i], 0.3, 1.13 - 0.1 * i, 0.2 + 0.1 * i, d);
    if (st == CT_OK) st = put_adam_state(s, PARAMS[i], dims[i]);
  }
  if (st == CT_OK) st = put_pattern(s, "bn.mean", CT_DIMS(4), 0.1, 1.3, 0.2, 0);
  if (st == CT_OK) st = put_pattern(s, "bn.var", CT_DIMS(4), 0.2, 1.7, 0.5, 1);
  return st;
}

static int run(FILE *f, ct_scope *s, ct_program *p) {
  int n = CNN ? CNN_N : N;
  int64_t labels[N];
  for (int i = 0; i < n; i++) labels[i] = (7 * i + 3) % OUT;
  if ((CNN ? put_cnn(s) : put_mlp(s)) != CT_OK ||
      ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, "labels")), labels, CT_DIMS(n),
                          CT_INT64, ct_cpu()) != CT_OK ||
      put_pattern(s, "lr", CT_DIMS(1), 0, 0, 0, CNN ? 0.01 : 0.1) != CT_OK) {
    return fail("putting the inputs");
  }
  if (write_var(f, s, "x", NULL) || write_var(f, s, "labels", NULL) ||
      write_params(f, s, PARAMS, (size_t)N_PARAMS, "") ||
      (CNN && (write_var(f, s, "bn.mean", NULL) || write_var(f, s, "bn.var", NULL)))) {
    return 1;
  }
  ct_status st = build(p);
  if (st == CT_ERR_UNSUPPORTED) {
    printf("SKIPPED: this build of corten lacks a gradient the network needs: %s\n",
           ct_last_error());
    return 77;
  }
  if (st != CT_OK) return fail("building the program");
  static const char *const first[] = {"logits", "row_loss", "bn.y", "bn.saved_mean",
                                      "bn.saved_var"};
  int rc = parity_train(f, s, p, STEPS, first, CNN ? 5 : 2, PARAMS, (size_t)N_PARAMS);
  if (rc == 0 && CNN) {
    rc = write_var(f, s, "bn.mean", "bn.mean.final") || write_var(f, s, "bn.var", "bn.var.final");
  }
  return rc;
}

/* "torch_parity OUT [mlp|cnn]": the network chosen, parity_main does the rest with OUT. */
int main(int argc, char **argv) {
  parity_name = "torch_parity";
  if (argc < 2 || argc > 3 ||
      (argc == 3 && strcmp(argv[2], "mlp") != 0 && strcmp(argv[2], "cnn") != 0)) {
    fprintf(stderr, "usage: torch_parity OUT [mlp|cnn]\n");
    return 1;
  }
  if (argc == 3 && strcmp(argv[2], "cnn") == 0) {
    CNN = true;
    PARAMS = CNN_PARAMS;
    N_PARAMS = sizeof CNN_PARAMS / sizeof CNN_PARAMS[0];
    STEPS = CNN_STEPS;
  }
  return parity_main(2, argv, run);
}
