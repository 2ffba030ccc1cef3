/* SPDX-License-Identifier: Apache-2.0 */
/* The corten side of the PyTorch parity test (tests/python/test_torch_parity.py): trains a small
 * network in float64 and writes what the script compares with the same training in PyTorch.
 *
 * mlp: 25 SGD steps of
 *   x [16, 12] -matmul fc1.w [12, 8] -add fc1.b -relu -matmul fc2.w [8, 5] -add fc2.b-> logits
 *   logits, labels -softmax_with_cross_entropy-> row_loss -mean-> loss; sgd(lr 0.1) in place
 * cnn: 20 adam steps of
 *   x [4, 2, 8, 8] -conv2d conv.w [4, 2, 3, 3] (padding 1) -add conv.b [4, 1, 1] -relu
 *     -pool2d max 2x2 (stride 2) -conv2d conv2.w [6, 4, 3, 3] (stride 2, padding 1, groups 2)
 *     -pool2d avg 2x2 (stride 1, padding 1, exclusive)-> [4, 6, 3, 3] -reshape-> [4, 54]
 *     -matmul fc.w [54, 5] -add fc.b-> logits, then the loss as above; adam(lr 0.01) in place
 *
 * The inputs and initial weights are fixed values made here (smooth patterns, no random
 * generator) and written first, so both sides start from the same numbers. Then: the logits,
 * loss and gradients of the first step, the loss of every step, and the weights after the last.
 *
 * Usage: torch_parity OUT [mlp|cnn] (mlp by default). OUT is text: for each array a line "name count", then count values
 * one per line (%.17g, exact for doubles). Exits 0 when written, 77 when this build has no
 * gradient for an op of the network (the script then reports a skip), 1 on any other failure. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <corten/corten.h>

enum { N = 16, IN = 12, HID = 8, OUT = 5, MLP_STEPS = 25, CNN_STEPS = 20, CNN_N = 4 };

static const char *const MLP_PARAMS[] = {"fc1.w", "fc1.b", "fc2.w", "fc2.b"};
static const char *const CNN_PARAMS[] = {"conv.w", "conv.b", "conv2.w", "fc.w", "fc.b"};

/* The network being trained: its parameters, steps and optimizer. */
static const char *const *PARAMS = MLP_PARAMS;
static int N_PARAMS = 4, STEPS = MLP_STEPS;
static bool CNN = false;

static int fail(const char *what) {
  fprintf(stderr, "torch_parity: %s: %s\n", what, ct_last_error());
  return 1;
}

/* Appends type(X = x, Y = y) -> out; y may be NULL. */
static ct_status add(ct_program *p, const char *type, const char *x, const char *y,
                     const char *out) {
  ct_op *op = ct_op_new(type);
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "X", x);
  if (s == CT_OK && y != NULL) s = ct_op_set_input(op, "Y", y);
  if (s == CT_OK) s = ct_op_set_output(op, "Out", out);
  if (s != CT_OK) {
    ct_op_free(op);
    return s;
  }
  return ct_program_append(p, op);
}

/* Sets int list attribute name of op to {a, b}. */
static ct_status pair(ct_op *op, const char *name, int64_t a, int64_t b) {
  const int64_t v[2] = {a, b};
  return ct_op_set_attr_ints(op, name, v, 2);
}

/* Appends type(in_slot = in, [Filter = filter]) -> out_slot = out, returned for attributes. */
static ct_op *add_io(ct_program *p, const char *type, const char *in, const char *filter,
                     const char *out) {
  ct_op *op = ct_op_new(type);
  if (op == NULL) return NULL;
  bool conv = filter != NULL;
  ct_status s = ct_op_set_input(op, conv ? "Input" : "X", in);
  if (s == CT_OK && conv) s = ct_op_set_input(op, "Filter", filter);
  if (s == CT_OK) s = ct_op_set_output(op, conv ? "Output" : "Out", out);
  if (s != CT_OK || ct_program_append(p, op) != CT_OK) {
    if (s != CT_OK) ct_op_free(op);
    return NULL;
  }
  return op;
}

static ct_status build_cnn_forward(ct_program *p) {
  ct_op *op = add_io(p, "conv2d", "x", "conv.w", "c1");
  ct_status s = op == NULL ? ct_last_status() : pair(op, "paddings", 1, 1);
  if (s == CT_OK) s = add(p, "elementwise_add", "c1", "conv.b", "c1.b");
  if (s == CT_OK) s = add(p, "relu", "c1.b", NULL, "r1");
  if (s == CT_OK && (op = add_io(p, "pool2d", "r1", NULL, "p1")) == NULL) s = ct_last_status();
  if (s == CT_OK) s = pair(op, "ksize", 2, 2);
  if (s == CT_OK) s = pair(op, "strides", 2, 2);
  if (s == CT_OK && (op = add_io(p, "conv2d", "p1", "conv2.w", "c2")) == NULL) {
    s = ct_last_status();
  }
  if (s == CT_OK) s = pair(op, "paddings", 1, 1);
  if (s == CT_OK) s = pair(op, "strides", 2, 2);
  if (s == CT_OK) s = ct_op_set_attr_int(op, "groups", 2);
  if (s == CT_OK && (op = add_io(p, "pool2d", "c2", NULL, "p2")) == NULL) s = ct_last_status();
  if (s == CT_OK) s = ct_op_set_attr_string(op, "pooling_type", "avg");
  if (s == CT_OK) s = pair(op, "ksize", 2, 2);
  if (s == CT_OK) s = pair(op, "paddings", 1, 1);
  if (s == CT_OK && (op = add_io(p, "reshape", "p2", NULL, "flat")) == NULL) s = ct_last_status();
  if (s == CT_OK) s = pair(op, "shape", CNN_N, 54);
  if (s == CT_OK) s = add(p, "matmul", "flat", "fc.w", "z.mm");
  if (s == CT_OK) s = add(p, "elementwise_add", "z.mm", "fc.b", "logits");
  return s;
}

/* The optimizer op of parameter i: sgd, or adam with its state variables <param>.m1 ... */
static ct_status add_update(ct_program *p, int i) {
  char g[32], m1[32], m2[32], b1[32], b2[32];
  snprintf(g, sizeof g, "%s@GRAD", PARAMS[i]);
  snprintf(m1, sizeof m1, "%s.m1", PARAMS[i]);
  snprintf(m2, sizeof m2, "%s.m2", PARAMS[i]);
  snprintf(b1, sizeof b1, "%s.b1p", PARAMS[i]);
  snprintf(b2, sizeof b2, "%s.b2p", PARAMS[i]);
  ct_op *op = ct_op_new(CNN ? "adam" : "sgd");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_input(op, "Param", PARAMS[i]);
  if (s == CT_OK) s = ct_op_set_input(op, "Grad", g);
  if (s == CT_OK) s = ct_op_set_input(op, "LearningRate", "lr");
  if (s == CT_OK) s = ct_op_set_output(op, "ParamOut", PARAMS[i]);
  if (CNN) {
    const char *slots[] = {"Moment1", "Moment2", "Beta1Pow", "Beta2Pow"};
    const char *vars[] = {m1, m2, b1, b2};
    for (int k = 0; k < 4 && s == CT_OK; k++) {
      char out[16];
      snprintf(out, sizeof out, "%sOut", slots[k]);
      s = ct_op_set_input(op, slots[k], vars[k]);
      if (s == CT_OK) s = ct_op_set_output(op, out, vars[k]);
    }
  }
  if (s != CT_OK) {
    ct_op_free(op);
    return s;
  }
  return ct_program_append(p, op);
}

static ct_status build(ct_program *p) {
  ct_status s;
  if (CNN) {
    s = build_cnn_forward(p);
  } else {
    s = add(p, "matmul", "x", "fc1.w", "h.mm");
    if (s == CT_OK) s = add(p, "elementwise_add", "h.mm", "fc1.b", "h.pre");
    if (s == CT_OK) s = add(p, "relu", "h.pre", NULL, "h");
    if (s == CT_OK) s = add(p, "matmul", "h", "fc2.w", "z.mm");
    if (s == CT_OK) s = add(p, "elementwise_add", "z.mm", "fc2.b", "logits");
  }
  if (s != CT_OK) return s;
  ct_op *op = ct_op_new("softmax_with_cross_entropy");
  if (op == NULL) return ct_last_status();
  s = ct_op_set_input(op, "Logits", "logits");
  if (s == CT_OK) s = ct_op_set_input(op, "Label", "labels");
  if (s == CT_OK) s = ct_op_set_output(op, "Softmax", "prob");
  if (s == CT_OK) s = ct_op_set_output(op, "Loss", "row_loss");
  if (s != CT_OK) {
    ct_op_free(op);
    return s;
  }
  if ((s = ct_program_append(p, op)) != CT_OK) return s;
  if ((s = add(p, "mean", "row_loss", NULL, "loss")) != CT_OK) return s;
  if ((s = ct_program_append_backward(p, "loss", PARAMS, (size_t)N_PARAMS)) != CT_OK) return s;
  for (int i = 0; i < N_PARAMS && s == CT_OK; i++) s = add_update(p, i);
  return s;
}

/* A float64 tensor of dims in variable name, element i = a sin(b i + c). */
static ct_status put_pattern(ct_scope *s, const char *name, ct_ddim dims, double a, double b,
                             double c) {
  double v[1024];
  if (ct_ddim_numel(dims) > 1024) return CT_ERR_OUT_OF_RANGE;
  int64_t n = ct_ddim_numel(dims);
  for (int64_t i = 0; i < n; i++) v[i] = a * sin(b * (double)i + c);
  return ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, name)), v, dims, CT_FLOAT64,
                             ct_cpu());
}

/* Writes variable name (float64 or int64) to f as "label count" and its values. */
static int write_var(FILE *f, ct_scope *s, const char *name, const char *label) {
  const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, name));
  if (t == NULL || !ct_tensor_has_memory(t)) return fail(name);
  int64_t n = ct_tensor_numel(t);
  fprintf(f, "%s %lld\n", label, (long long)n);
  if (ct_tensor_dtype(t) == CT_INT64) {
    const int64_t *v = ct_tensor_data(t, CT_INT64);
    for (int64_t i = 0; i < n; i++) fprintf(f, "%lld\n", (long long)v[i]);
  } else {
    const double *v = ct_tensor_data(t, CT_FLOAT64);
    if (v == NULL) return fail(name);
    for (int64_t i = 0; i < n; i++) fprintf(f, "%.17g\n", v[i]);
  }
  return 0;
}

static int write_params(FILE *f, ct_scope *s, const char *suffix) {
  for (int i = 0; i < N_PARAMS; i++) {
    char label[48];
    snprintf(label, sizeof label, "%s%s", PARAMS[i], suffix);
    if (write_var(f, s, PARAMS[i], label) != 0) return 1;
  }
  return 0;
}

/* The inputs and initial weights of the mlp; adam's zero moments and powers for the cnn's. */
static ct_status put_mlp(ct_scope *s) {
  ct_status st = put_pattern(s, "x", CT_DIMS(N, IN), 1.0, 0.37, 0.1);
  if (st == CT_OK) st = put_pattern(s, "fc1.w", CT_DIMS(IN, HID), 0.4, 1.13, 0.2);
  if (st == CT_OK) st = put_pattern(s, "fc1.b", CT_DIMS(HID), 0.1, 0.71, 0.3);
  if (st == CT_OK) st = put_pattern(s, "fc2.w", CT_DIMS(HID, OUT), 0.5, 0.89, 0.4);
  if (st == CT_OK) st = put_pattern(s, "fc2.b", CT_DIMS(OUT), 0.1, 0.53, 0.5);
  return st;
}

static ct_status put_cnn(ct_scope *s) {
  static const ct_ddim dims[] = {{4, {4, 2, 3, 3}}, {3, {4, 1, 1}}, {4, {6, 2, 3, 3}},
                                 {2, {54, OUT}}, {1, {OUT}}};
  ct_status st = put_pattern(s, "x", CT_DIMS(CNN_N, 2, 8, 8), 1.0, 0.37, 0.1);
  for (int i = 0; i < N_PARAMS && st == CT_OK; i++) {
    char name[32];
    st = put_pattern(s, PARAMS[i], dims[i], 0.3, 1.13 - 0.1 * i, 0.2 + 0.1 * i);
    const double pows[2] = {0.9, 0.999};
    for (int k = 0; k < 4 && st == CT_OK; k++) {
      snprintf(name, sizeof name, "%s.%s", PARAMS[i], (const char *[]){"m1", "m2", "b1p", "b2p"}[k]);
      st = k < 2 ? put_pattern(s, name, dims[i], 0, 0, 0)
                 : ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, name)), &pows[k - 2],
                                       CT_DIMS(1), CT_FLOAT64, ct_cpu());
    }
  }
  return st;
}

static int run(FILE *f, ct_scope *s, ct_program *p) {
  int n = CNN ? CNN_N : N;
  int64_t labels[N];
  for (int i = 0; i < n; i++) labels[i] = (7 * i + 3) % OUT;
  double lr = CNN ? 0.01 : 0.1;
  if ((CNN ? put_cnn(s) : put_mlp(s)) != CT_OK ||
      ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, "labels")), labels, CT_DIMS(n),
                          CT_INT64, ct_cpu()) != CT_OK ||
      ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, "lr")), &lr, CT_DIMS(1), CT_FLOAT64,
                          ct_cpu()) != CT_OK) {
    return fail("putting the inputs");
  }
  if (write_var(f, s, "x", "x") || write_var(f, s, "labels", "labels") ||
      write_params(f, s, "")) {
    return 1;
  }
  ct_status st = build(p);
  if (st == CT_ERR_UNSUPPORTED) {
    printf("SKIPPED: this build of corten lacks a gradient the network needs: %s\n",
           ct_last_error());
    return 77;
  }
  if (st != CT_OK) return fail("building the program");
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  if (e == NULL) return fail("making the executor");
  int rc = 0;
  for (int k = 0; k < STEPS && rc == 0; k++) {
    if (ct_executor_run(e) != CT_OK) {
      rc = fail("a training step");
      break;
    }
    if (k == 0) {
      rc = write_var(f, s, "logits", "logits") || write_var(f, s, "row_loss", "row_loss");
      for (int i = 0; i < N_PARAMS && rc == 0; i++) {
        char g[32];
        snprintf(g, sizeof g, "%s@GRAD", PARAMS[i]);
        rc = write_var(f, s, g, g);
      }
    }
    char label[32];
    snprintf(label, sizeof label, "loss.%d", k);
    if (rc == 0) rc = write_var(f, s, "loss", label);
  }
  if (rc == 0) rc = write_params(f, s, ".final");
  ct_executor_free(e);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "mlp") != 0 &&
                                strcmp(argv[2], "cnn") != 0)) {
    fprintf(stderr, "usage: torch_parity OUT [mlp|cnn]\n");
    return 1;
  }
  if (argc == 3 && strcmp(argv[2], "cnn") == 0) {
    CNN = true;
    PARAMS = CNN_PARAMS;
    N_PARAMS = 5;
    STEPS = CNN_STEPS;
  }
  FILE *f = fopen(argv[1], "w");
  if (f == NULL) {
    perror(argv[1]);
    return 1;
  }
  ct_scope *s = ct_scope_new();
  ct_program *p = ct_program_new();
  int rc = s != NULL && p != NULL ? run(f, s, p) : fail("setting up");
  ct_program_free(p);
  ct_scope_free(s);
  if (fclose(f) != 0 && rc == 0) rc = 1;
  return rc;
}
