/* SPDX-License-Identifier: Apache-2.0 */
/* examples/digits_model.h: the digits MLP that examples/train_digits_dp.c trains data parallel
 * (train_digits.c trains a CNN instead): the programs that initialise it, run it forward and
 * train it one step (adam). Included by train_digits_dp.c only (static functions); the data, the
 * batch views and the op helpers are digits_data.h's. Before including it, a program defines
 * digits_program (its name, for messages) and digits_dtype (float32 or float64, the parameters'
 * dtype). */
#ifndef CORTEN_EXAMPLES_DIGITS_MODEL_H
#define CORTEN_EXAMPLES_DIGITS_MODEL_H

#include <math.h>
#include <stdio.h>

#include <corten/corten.h>

#include "digits_data.h"

enum {
  PIXELS = DIGIT_SIDE * DIGIT_SIDE,
  HIDDEN = 64,
};

static const double LEARNING_RATE = 0.01;
static const char *const PARAMS[] = {"fc1.w", "fc1.b", "fc2.w", "fc2.b"};
enum { N_PARAMS = sizeof PARAMS / sizeof PARAMS[0] };

/* The init program: the weights (uniform in +-sqrt(6 / (fan_in + fan_out)), fixed seeds), zero
 * biases, and adam's state per parameter: zero moments and the powers beta1, beta2. */
static int build_init(ct_program *p) {
  static const int64_t dims[N_PARAMS][2] = {{PIXELS, HIDDEN}, {HIDDEN, 0}, {HIDDEN, CLASSES},
                                            {CLASSES, 0}};
  static const int64_t one[1] = {1};
  for (int i = 0; i < N_PARAMS; i++) {
    size_t rank = dims[i][1] ? 2 : 1;
    double bound = rank == 2 ? sqrt(6.0 / (double)(dims[i][0] + dims[i][1])) : 0.0;
    if (!add_init(p, PARAMS[i], dims[i], rank, bound, 0.0, 1 + i) ||
        !add_adam_init(p, PARAMS[i], dims[i], rank)) {
      return 0;
    }
  }
  return add_init(p, "lr", one, 1, 0, LEARNING_RATE, 0);
}

/* The forward ops, from batch.images to logits. */
static int build_forward(ct_program *p) {
  static const int64_t flat[2] = {-1, PIXELS};
  return add_pixels(p, flat, 2, "x") &&
         add(p, "matmul", "X", "x", "Y", "fc1.w", NULL, "Out", "h.mm", NULL) &&
         add(p, "elementwise_add", "X", "h.mm", "Y", "fc1.b", NULL, "Out", "h.pre", NULL) &&
         add(p, "relu", "X", "h.pre", NULL, "Out", "h", NULL) &&
         add(p, "matmul", "X", "h", "Y", "fc2.w", NULL, "Out", "z.mm", NULL) &&
         add(p, "elementwise_add", "X", "z.mm", "Y", "fc2.b", NULL, "Out", "logits", NULL);
}

/* Data parallel: after the backward pass, each gradient is summed over the ranks of the
 * communicator in variable `comm` (c_allreduce_sum, in place) and divided by their number, so
 * that it is the gradient of the mean loss over every rank's rows. */
static int add_average(ct_program *p, const char *g, const char *comm, int ranks) {
  ct_op *op = add(p, "c_allreduce_sum", "X", g, NULL, "Out", g, NULL);
  if (op == NULL || !ok(ct_op_set_attr_string(op, "comm", comm), g)) return 0;
  op = add(p, "scale", "X", g, NULL, "Out", g, NULL);
  return op != NULL && ok(ct_op_set_attr_float(op, "scale", 1.0 / ranks), g);
}

/* The training step: the forward ops, the loss, the backward pass, (with a communicator named
 * comm, not NULL, the gradients averaged over its `ranks` ranks), adam on every parameter.
 * Returns 1, 0 after reporting a failure, or -1 when an op on the path has no gradient. */
static int build_train(ct_program *p, const char *comm, int ranks) {
  if (!build_forward(p)) return 0;
  int built = add_loss_and_backward(p, PARAMS, N_PARAMS);
  if (built <= 0) return built;
  for (int i = 0; i < N_PARAMS; i++) {
    char g[32];
    snprintf(g, sizeof g, "%s@GRAD", PARAMS[i]);
    if ((comm != NULL && !add_average(p, g, comm, ranks)) || !add_adam(p, PARAMS[i])) return 0;
  }
  return 1;
}

#endif /* CORTEN_EXAMPLES_DIGITS_MODEL_H */
