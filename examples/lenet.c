/* SPDX-License-Identifier: Apache-2.0 */
/* lenet: a forward pass over a real parameter file. It loads the LeNet weights of
 * ../shared/data/params/lenet_deploy_param.params (Caffe's MNIST LeNet, as TVM saved it; the
 * manifest beside it lists the tensors), builds the network they describe and classifies
 * handwritten digits from ../shared/data/digits, printing each layer's dims and the memory
 * stats along the way: nothing is allocated until an op writes it, and an executor with
 * free_intermediates releases each activation after its last reader.
 *
 *   data [N,1,28,28] -conv2d _param_1 [20,1,5,5] -add _param_2-> [N,20,24,24]
 *     -pool2d max 2x2/2-> [N,20,12,12] -conv2d _param_3 [50,20,5,5] -add _param_4-> [N,50,8,8]
 *     -pool2d max 2x2/2-> [N,50,4,4] -reshape-> [N,800]
 *     -matmul _param_5^T [800,500] -add _param_6 -relu -matmul _param_7^T [500,10] -add _param_8
 *     -softmax-> prob [N,10]
 *
 * Caffe stores an inner product's weights as [out, in], so the matmuls set transpose_y; the
 * conv biases [C] are reshaped to [C,1,1] to broadcast over the image. The digits are 8x8 images
 * of 0..16; each is scaled up to 20x20 (bilinear) and centred in 28x28 with values in [0, 1],
 * as MNIST's digits are.
 *
 * Usage: lenet [lenet.params [digits.params [EXPORT.onnx]]]; with EXPORT, the network (data to
 * prob) is saved there as ONNX, with LeNet's weights. Exits 0 when the network ran and its
 * probabilities sum to 1, 1 otherwise, 2 when a file cannot be read. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <corten/corten.h>

static const char digits_program[] = "lenet";
static const ct_dtype digits_dtype = CT_FLOAT32;

/* Loading the digits file, failed/ok and add (an op wired from slot/name pairs), shared with
 * train_digits.c. */
#include "digits_data.h"

/* The N test digits (FIRST_TEST on) of SRC x SRC pixels, scaled up to DIGIT x DIGIT and centred
 * in SIDE x SIDE. */
enum { SIDE = 28, DIGIT = 20, SRC = DIGIT_SIDE, FIRST_TEST = N_TRAIN, N = N_ALL - N_TRAIN };

static void show(const char *step) {
  ct_memory_stats st;
  ct_memory_stats_get(ct_cpu(), &st);
  printf("%-52s allocated %9zu B  peak %9zu B  allocs %4llu  frees %4llu\n", step, st.allocated,
         st.peak, (unsigned long long)st.allocs, (unsigned long long)st.frees);
}

/* The weights the network needs and their dims, as the manifest lists them. */
static const struct {
  const char *name;
  ct_ddim dims;
} WEIGHTS[] = {
    {"_param_1", {4, {20, 1, 5, 5}}}, {"_param_2", {1, {20}}},
    {"_param_3", {4, {50, 20, 5, 5}}}, {"_param_4", {1, {50}}},
    {"_param_5", {2, {500, 800}}},    {"_param_6", {1, {500}}},
    {"_param_7", {2, {10, 500}}},     {"_param_8", {1, {10}}},
};

static int check_weights(ct_scope *s) {
  for (size_t i = 0; i < sizeof WEIGHTS / sizeof WEIGHTS[0]; i++) {
    const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, WEIGHTS[i].name));
    if (t == NULL || ct_tensor_dtype(t) != CT_FLOAT32 ||
        !ct_ddim_equal(ct_tensor_dims(t), WEIGHTS[i].dims)) {
      char d[64];
      fprintf(stderr, "lenet: the file lacks %s float32 %s\n", WEIGHTS[i].name,
              ct_ddim_str(WEIGHTS[i].dims, d, sizeof d));
      return 0;
    }
  }
  return 1;
}

/* conv2d of in by filter w, plus bias b (reshaped to [C,1,1]), then 2x2 max pooling. */
static int conv_pool(ct_program *p, const char *in, const char *w, const char *b,
                     const char *name, int64_t channels) {
  char conv[32], bias[32], sum[32], pool[32];
  snprintf(conv, sizeof conv, "%s", name);
  snprintf(bias, sizeof bias, "%s.bias", name);
  snprintf(sum, sizeof sum, "%s.biased", name);
  snprintf(pool, sizeof pool, "pool%c", name[4]);
  const int64_t shape[3] = {channels, 1, 1}, two[2] = {2, 2};
  ct_op *op = add(p, "reshape", "X", b, NULL, "Out", bias, NULL);
  if (op == NULL || !ok(ct_op_set_attr_ints(op, "shape", shape, 3), "reshape")) return 0;
  if (!add(p, "conv2d", "Input", in, "Filter", w, NULL, "Output", conv, NULL) ||
      !add(p, "elementwise_add", "X", conv, "Y", bias, NULL, "Out", sum, NULL)) {
    return 0;
  }
  op = add(p, "pool2d", "X", sum, NULL, "Out", pool, NULL);
  return op != NULL && ok(ct_op_set_attr_ints(op, "ksize", two, 2), "pool2d") &&
         ok(ct_op_set_attr_ints(op, "strides", two, 2), "pool2d");
}

static int build(ct_program *p) {
  const int64_t flat[2] = {-1, 800};
  if (!conv_pool(p, "data", "_param_1", "_param_2", "conv1", 20) ||
      !conv_pool(p, "pool1", "_param_3", "_param_4", "conv2", 50)) {
    return 0;
  }
  ct_op *op = add(p, "reshape", "X", "pool2", NULL, "Out", "flat", NULL);
  if (op == NULL || !ok(ct_op_set_attr_ints(op, "shape", flat, 2), "reshape")) return 0;
  op = add(p, "matmul", "X", "flat", "Y", "_param_5", NULL, "Out", "ip1", NULL);
  if (op == NULL || !ok(ct_op_set_attr_bool(op, "transpose_y", true), "matmul")) return 0;
  if (!add(p, "elementwise_add", "X", "ip1", "Y", "_param_6", NULL, "Out", "ip1.biased", NULL) ||
      !add(p, "relu", "X", "ip1.biased", NULL, "Out", "relu1", NULL)) {
    return 0;
  }
  op = add(p, "matmul", "X", "relu1", "Y", "_param_7", NULL, "Out", "ip2", NULL);
  if (op == NULL || !ok(ct_op_set_attr_bool(op, "transpose_y", true), "matmul")) return 0;
  return add(p, "elementwise_add", "X", "ip2", "Y", "_param_8", NULL, "Out", "logits", NULL) &&
         add(p, "softmax", "X", "logits", NULL, "Out", "prob", NULL);
}

/* The test digits (images FIRST_TEST ..) scaled to 20x20 bilinearly and centred in 28x28, as
 * data [N,1,28,28] float32 in [0, 1]; their labels in labels (load_digits checked the file). */
static int put_data(ct_scope *digits, ct_scope *s, int64_t *labels) {
  const ct_tensor *im = ct_var_get_tensor(ct_scope_find_var(digits, "images"));
  const ct_tensor *lb = ct_var_get_tensor(ct_scope_find_var(digits, "labels"));
  const uint8_t *src = ct_tensor_data(im, CT_UINT8);
  const int64_t *lab = ct_tensor_data(lb, CT_INT64);
  static float data[N * SIDE * SIDE];
  memset(data, 0, sizeof data);
  const int off = (SIDE - DIGIT) / 2;
  for (int i = 0; i < N; i++) {
    const uint8_t *img = src + (size_t)(FIRST_TEST + i) * SRC * SRC;
    labels[i] = lab[FIRST_TEST + i];
    for (int y = 0; y < DIGIT; y++) {
      for (int x = 0; x < DIGIT; x++) {
        /* pixel centres map onto the 8x8 grid; edges clamp */
        double fy = ((double)y + 0.5) * SRC / DIGIT - 0.5, fx = ((double)x + 0.5) * SRC / DIGIT - 0.5;
        fy = fy < 0 ? 0 : fy > SRC - 1 ? SRC - 1 : fy;
        fx = fx < 0 ? 0 : fx > SRC - 1 ? SRC - 1 : fx;
        int y0 = (int)fy, x0 = (int)fx, y1 = y0 + (y0 < SRC - 1), x1 = x0 + (x0 < SRC - 1);
        double wy = fy - y0, wx = fx - x0;
        double v = (1 - wy) * ((1 - wx) * img[y0 * SRC + x0] + wx * img[y0 * SRC + x1]) +
                   wy * ((1 - wx) * img[y1 * SRC + x0] + wx * img[y1 * SRC + x1]);
        data[((size_t)i * SIDE + (size_t)(y + off)) * SIDE + (size_t)(x + off)] = (float)(v / 16);
      }
    }
  }
  return ok(ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, "data")), data,
                                CT_DIMS(N, 1, SIDE, SIDE), CT_FLOAT32, ct_cpu()),
            "putting the digits");
}

/* Prints every op's output dims and bytes (the first run, which keeps them all). */
static void print_layers(const ct_program *p, ct_scope *s) {
  printf("\n%-4s %-16s %-14s %-18s %10s\n", "op", "type", "output", "dims", "bytes");
  for (size_t i = 0; i < ct_program_size(p); i++) {
    const ct_op *op = ct_program_op(p, i);
    const char *slot = strcmp(ct_op_type(op), "conv2d") == 0 ? "Output" : "Out";
    const char *name = ct_op_output(op, slot, 0);
    const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, name));
    char d[64] = "?";
    if (t != NULL) ct_ddim_str(ct_tensor_dims(t), d, sizeof d);
    printf("%-4zu %-16s %-14s %-18s %10lld\n", i, ct_op_type(op), name, d,
           t != NULL ? (long long)ct_tensor_numel(t) * 4 : 0LL);
  }
  printf("\n");
}

/* Runs p over a fresh kid of s; keeps every output, or frees the intermediates; saves p as ONNX
 * at export_path unless it is NULL. Returns the share of the N digits classified right, or -1. */
static double run_once(const ct_program *p, ct_scope *input, bool free_mid,
                       const int64_t *labels, bool print, const char *export_path) {
  static const char *const keep[] = {"prob"};
  ct_executor_options o = {.free_intermediates = free_mid, .keep = keep, .n_keep = 1};
  ct_scope *run = ct_scope_new_kid(input);
  ct_executor *e = run != NULL ? ct_executor_new_with(p, run, ct_cpu(), &o) : NULL;
  double acc = -1;
  if (e != NULL && ok(ct_executor_run(e), "the forward pass")) {
    if (print) print_layers(p, run);
    const float *prob = ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(run, "prob")),
                                       CT_FLOAT32);
    int right = 0, sums_ok = 1;
    for (int i = 0; i < N; i++) {
      const float *row = prob + i * CLASSES;
      int best = 0;
      double sum = 0;
      for (int j = 0; j < CLASSES; j++) {
        sum += row[j];
        if (row[j] > row[best]) best = j;
      }
      right += best == labels[i];
      sums_ok &= fabs(sum - 1) < 1e-4;
      if (print && i < 10) {
        printf("digit %d (label %lld): predicted %d with p = %.3f\n", i, (long long)labels[i],
               best, (double)row[best]);
      }
    }
    acc = sums_ok ? (double)right / N : -1;
    if (export_path != NULL && !save_onnx(export_path, p, run, "data", "prob")) acc = -1;
    show(free_mid ? "after the run freeing intermediates" : "after the run keeping everything");
  } else if (e == NULL) {
    failed("making the executor");
  }
  ct_executor_free(e);
  ct_scope_free(run);
  show("after freeing the run's scope");
  return acc;
}

/* The usage line: on stdout with status 0 for --help, on stderr with 2 for a wrong call. */
static int usage(bool asked) {
  fprintf(asked ? stdout : stderr, "usage: lenet [lenet.params [digits.params [EXPORT.onnx]]]\n"
          "  digits.params defaults to ../shared/data/digits/digits.params: the team's shared data\n"
          "  folder beside the repository (../shared/data/digits/README.md describes the file)\n");
  return asked ? 0 : 2;
}

int main(int argc, char **argv) {
  if (argc > 4 || (argc > 1 && argv[1][0] == '-')) {
    return usage(argc > 1 && strcmp(argv[1], "--help") == 0);
  }
  const char *params = argc > 1 ? argv[1] : "../shared/data/params/lenet_deploy_param.params";
  const char *digits = argc > 2 ? argv[2] : "../shared/data/digits/digits.params";
  show("start");
  ct_scope *weights = ct_scope_new(), *input = NULL, *dg = ct_scope_new();
  ct_program *p = ct_program_new();
  static int64_t labels[N];
  int rc = 2;
  if (weights == NULL || dg == NULL || p == NULL) goto done;
  if (!ok(ct_params_load(params, weights), "loading the LeNet weights") || !check_weights(weights)) {
    goto done;
  }
  show("LeNet's 8 weight tensors loaded (431080 floats)");
  input = ct_scope_new_kid(weights);
  if (input == NULL || !load_digits(digits, dg) || !put_data(dg, input, labels)) {
    goto done;
  }
  ct_scope_free(dg);
  dg = NULL;
  show("297 test digits as data [297,1,28,28]");
  rc = 1;
  if (!build(p)) goto done;
  show("the program built: no activation allocated yet");
  ct_memory_reset_peak(ct_cpu());
  double acc = run_once(p, input, false, labels, true, NULL);
  ct_memory_reset_peak(ct_cpu());
  double acc2 = run_once(p, input, true, labels, false, argc > 3 ? argv[3] : NULL);
  if (acc >= 0 && acc == acc2) {
    printf("LeNet classified %.1f%% of the %d test digits right (an MNIST network on rescaled "
           "8x8 digits)\n", 100 * acc, N);
    rc = 0;
  } else {
    printf("the forward pass did not give probabilities, or the two runs differ\n");
  }
done:
  ct_program_free(p);
  ct_scope_free(dg);
  ct_scope_free(weights);
  return rc;
}
