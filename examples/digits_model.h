/* SPDX-License-Identifier: Apache-2.0 */
/* examples/digits_model.h: the digits MLP that examples/train_digits.c trains on one process and
 * examples/train_digits_dp.c data parallel: the programs that initialise it, run it forward and
 * train it one step (adam), and the batch views. Included by those two programs only (static
 * functions). Before including it, a program defines digits_program (its name, for messages)
 * and digits_dtype (float32 or float64, the parameters' dtype). */
#ifndef CORTEN_EXAMPLES_DIGITS_MODEL_H
#define CORTEN_EXAMPLES_DIGITS_MODEL_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include <corten/corten.h>

enum {
  N_ALL = 1797,   /* images in the file */
  N_TRAIN = 1500, /* the first ones train, the rest test */
  PIXELS = 64,
  HIDDEN = 64,
  CLASSES = 10,
};

static const double LEARNING_RATE = 0.01;
static const char *const PARAMS[] = {"fc1.w", "fc1.b", "fc2.w", "fc2.b"};
enum { N_PARAMS = sizeof PARAMS / sizeof PARAMS[0] };

/* Reports a failed call with corten's message; returns 0 so that callers can chain on it. */
static int failed(const char *what) {
  fprintf(stderr, "%s: %s failed: %s\n", digits_program, what, ct_last_error());
  return 0;
}

static int ok(ct_status s, const char *what) { return s == CT_OK ? 1 : failed(what); }

/* Appends an op of `type` to p, wired from slot/name pairs: the inputs, NULL, the outputs,
 * NULL. Returns the op (the program's) for its attributes, or NULL after reporting. */
static ct_op *add(ct_program *p, const char *type, ...) {
  ct_op *op = ct_op_new(type);
  if (op == NULL) return failed(type), NULL;
  va_list ap;
  va_start(ap, type);
  ct_status s = CT_OK;
  for (int output = 0; output < 2; output++) {
    for (const char *slot; (slot = va_arg(ap, const char *)) != NULL;) {
      const char *name = va_arg(ap, const char *);
      if (s != CT_OK) continue;
      s = output ? ct_op_set_output(op, slot, name) : ct_op_set_input(op, slot, name);
    }
  }
  va_end(ap);
  if (s != CT_OK) {
    ct_op_free(op);
    return failed(type), NULL;
  }
  return ct_program_append(p, op) == CT_OK ? op : (failed(type), NULL);
}

/* An op with only an Out slot making a digits_dtype tensor of `dims`: uniform_random in
 * [-bound, bound) when bound > 0, else fill_constant with value. */
static int add_init(ct_program *p, const char *out, const int64_t *dims, size_t rank,
                    double bound, double value, int64_t seed) {
  ct_op *op = add(p, bound > 0 ? "uniform_random" : "fill_constant", NULL, "Out", out, NULL);
  if (op == NULL) return 0;
  if (!ok(ct_op_set_attr_ints(op, "shape", dims, rank), out) ||
      !ok(ct_op_set_attr_int(op, "dtype", digits_dtype), out)) {
    return 0;
  }
  if (bound > 0) {
    return ok(ct_op_set_attr_float(op, "min", -bound), out) &&
           ok(ct_op_set_attr_float(op, "max", bound), out) &&
           ok(ct_op_set_attr_int(op, "seed", seed), out);
  }
  return ok(ct_op_set_attr_float(op, "value", value), out);
}

/* The init program: the weights (uniform in +-sqrt(6 / (fan_in + fan_out)), fixed seeds), zero
 * biases, and adam's state per parameter: zero moments and the powers beta1, beta2. */
static int build_init(ct_program *p) {
  static const int64_t dims[N_PARAMS][2] = {{PIXELS, HIDDEN}, {HIDDEN, 0}, {HIDDEN, CLASSES},
                                            {CLASSES, 0}};
  static const int64_t one[1] = {1};
  for (int i = 0; i < N_PARAMS; i++) {
    size_t rank = dims[i][1] ? 2 : 1;
    char m1[32], m2[32], b1[32], b2[32];
    snprintf(m1, sizeof m1, "%s.m1", PARAMS[i]);
    snprintf(m2, sizeof m2, "%s.m2", PARAMS[i]);
    snprintf(b1, sizeof b1, "%s.beta1_pow", PARAMS[i]);
    snprintf(b2, sizeof b2, "%s.beta2_pow", PARAMS[i]);
    double bound = rank == 2 ? sqrt(6.0 / (double)(dims[i][0] + dims[i][1])) : 0.0;
    if (!add_init(p, PARAMS[i], dims[i], rank, bound, 0.0, 1 + i) ||
        !add_init(p, m1, dims[i], rank, 0, 0.0, 0) || !add_init(p, m2, dims[i], rank, 0, 0.0, 0) ||
        !add_init(p, b1, one, 1, 0, 0.9, 0) || !add_init(p, b2, one, 1, 0, 0.999, 0)) {
      return 0;
    }
  }
  return add_init(p, "lr", one, 1, 0, LEARNING_RATE, 0);
}

/* The forward ops, from batch.images to logits. */
static int build_forward(ct_program *p) {
  static const int64_t flat[2] = {-1, PIXELS};
  ct_op *op = add(p, "reshape", "X", "batch.images", NULL, "Out", "pixels.u8", NULL);
  if (op == NULL || !ok(ct_op_set_attr_ints(op, "shape", flat, 2), "reshape")) return 0;
  op = add(p, "cast", "X", "pixels.u8", NULL, "Out", "pixels", NULL);
  if (op == NULL || !ok(ct_op_set_attr_int(op, "dtype", digits_dtype), "cast")) return 0;
  op = add(p, "scale", "X", "pixels", NULL, "Out", "x", NULL);
  if (op == NULL || !ok(ct_op_set_attr_float(op, "scale", 1.0 / 16), "scale")) return 0;
  return add(p, "matmul", "X", "x", "Y", "fc1.w", NULL, "Out", "h.mm", NULL) &&
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
  if (!build_forward(p) ||
      !add(p, "softmax_with_cross_entropy", "Logits", "logits", "Label", "batch.labels", NULL,
           "Softmax", "prob", "Loss", "row_loss", NULL) ||
      !add(p, "mean", "X", "row_loss", NULL, "Out", "loss", NULL)) {
    return 0;
  }
  ct_status s = ct_program_append_backward(p, "loss", PARAMS, N_PARAMS);
  if (s == CT_ERR_UNSUPPORTED) {
    printf("SKIPPED: this build of corten lacks a gradient the network needs: %s\n",
           ct_last_error());
    return -1;
  }
  if (!ok(s, "the backward pass")) return 0;
  for (int i = 0; i < N_PARAMS; i++) {
    const char *w = PARAMS[i];
    char g[32], m1[32], m2[32], b1[32], b2[32];
    snprintf(g, sizeof g, "%s@GRAD", w);
    snprintf(m1, sizeof m1, "%s.m1", w);
    snprintf(m2, sizeof m2, "%s.m2", w);
    snprintf(b1, sizeof b1, "%s.beta1_pow", w);
    snprintf(b2, sizeof b2, "%s.beta2_pow", w);
    if (comm != NULL && !add_average(p, g, comm, ranks)) return 0;
    if (!add(p, "adam", "Param", w, "Grad", g, "LearningRate", "lr", "Moment1", m1, "Moment2",
             m2, "Beta1Pow", b1, "Beta2Pow", b2, NULL, "ParamOut", w, "Moment1Out", m1,
             "Moment2Out", m2, "Beta1PowOut", b1, "Beta2PowOut", b2, NULL)) {
      return 0;
    }
  }
  return 1;
}

/* Points the batch variables at rows [begin, end) of the loaded images and labels. */
static int take_rows(ct_scope *s, int64_t begin, int64_t end) {
  const ct_tensor *images = ct_var_get_tensor(ct_scope_find_var(s, "images"));
  const ct_tensor *labels = ct_var_get_tensor(ct_scope_find_var(s, "labels"));
  return ok(ct_tensor_slice(ct_var_tensor(ct_scope_var(s, "batch.images")), images, begin, end),
            "slicing the images") &&
         ok(ct_tensor_slice(ct_var_tensor(ct_scope_var(s, "batch.labels")), labels, begin, end),
            "slicing the labels");
}

#endif /* CORTEN_EXAMPLES_DIGITS_MODEL_H */
