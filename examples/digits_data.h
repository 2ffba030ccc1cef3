/* SPDX-License-Identifier: Apache-2.0 */
/* examples/digits_data.h: what the digits examples (train_digits.c, train_digits_dp.c through
 * digits_model.h, lenet.c) share: reporting a failed call, appending a wired op, loading and
 * checking the digits file, pointing the batch variables at some of its rows, the pixels'
 * preparation, the loss and backward pass, and adam's state and update. Before including it, a
 * program defines digits_program (its name, for messages) and digits_dtype (the dtype of the
 * parameters and pixels). Each program uses a part of it, so the functions are static inline. */
#ifndef CORTEN_EXAMPLES_DIGITS_DATA_H
#define CORTEN_EXAMPLES_DIGITS_DATA_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include <corten/corten.h>

/* The digits file (see ../shared/data/digits/README.md): images uint8 [N_ALL, SIDE, SIDE] with
 * values 0..16 and labels int64 [N_ALL] in 0..CLASSES-1. The first N_TRAIN images train, the
 * rest test. */
enum {
  N_ALL = 1797,
  N_TRAIN = 1500,
  DIGIT_SIDE = 8,
  CLASSES = 10,
  SHIFTS = 9, /* augment(): each training image as is and moved by one pixel in 8 directions */
};

/* Reports a failed call with corten's message; returns 0 so that callers can chain on it. */
static inline int failed(const char *what) {
  fprintf(stderr, "%s: %s failed: %s\n", digits_program, what, ct_last_error());
  return 0;
}

static inline int ok(ct_status s, const char *what) { return s == CT_OK ? 1 : failed(what); }

/* Appends an op of `type` to p, wired from slot/name pairs: the inputs, NULL, the outputs,
 * NULL. Returns the op (the program's) for its attributes, or NULL after reporting. */
static inline ct_op *add(ct_program *p, const char *type, ...) {
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

/* Loads the digits file at path into s (variables images and labels) and checks their dtypes
 * and dims; 0 after reporting. */
static inline int load_digits(const char *path, ct_scope *s) {
  if (!ok(ct_params_load(path, s), "loading the digits")) return 0;
  const ct_tensor *images = ct_var_get_tensor(ct_scope_find_var(s, "images"));
  const ct_tensor *labels = ct_var_get_tensor(ct_scope_find_var(s, "labels"));
  if (images != NULL && labels != NULL && ct_tensor_dtype(images) == CT_UINT8 &&
      ct_tensor_dtype(labels) == CT_INT64 &&
      ct_ddim_equal(ct_tensor_dims(images), CT_DIMS(N_ALL, DIGIT_SIDE, DIGIT_SIDE)) &&
      ct_ddim_equal(ct_tensor_dims(labels), CT_DIMS(N_ALL))) {
    return 1;
  }
  fprintf(stderr, "%s: %s does not hold images uint8 [%d,%d,%d] and labels int64 [%d]\n",
          digits_program, path, N_ALL, DIGIT_SIDE, DIGIT_SIDE, N_ALL);
  return 0;
}

/* Points the variables batch.images and batch.labels at rows [begin, end) of the variables
 * <from>images and <from>labels ("" for the loaded digits): views, no copy. */
static inline int take_rows(ct_scope *s, const char *from, int64_t begin, int64_t end) {
  char in[32], ln[32];
  snprintf(in, sizeof in, "%simages", from);
  snprintf(ln, sizeof ln, "%slabels", from);
  const ct_tensor *images = ct_var_get_tensor(ct_scope_find_var(s, in));
  const ct_tensor *labels = ct_var_get_tensor(ct_scope_find_var(s, ln));
  return ok(ct_tensor_slice(ct_var_tensor(ct_scope_var(s, "batch.images")), images, begin, end),
            "slicing the images") &&
         ok(ct_tensor_slice(ct_var_tensor(ct_scope_var(s, "batch.labels")), labels, begin, end),
            "slicing the labels");
}

/* The ops from batch.images to variable out: reshaped to `shape` (rank dims), cast to
 * digits_dtype and scaled by 1/16, the pixels in [0, 1]. */
static inline int add_pixels(ct_program *p, const int64_t *shape, size_t rank, const char *out) {
  ct_op *op = add(p, "reshape", "X", "batch.images", NULL, "Out", "pixels.u8", NULL);
  if (op == NULL || !ok(ct_op_set_attr_ints(op, "shape", shape, rank), "reshape")) return 0;
  op = add(p, "cast", "X", "pixels.u8", NULL, "Out", "pixels", NULL);
  if (op == NULL || !ok(ct_op_set_attr_int(op, "dtype", digits_dtype), "cast")) return 0;
  op = add(p, "scale", "X", "pixels", NULL, "Out", out, NULL);
  return op != NULL && ok(ct_op_set_attr_float(op, "scale", 1.0 / 16), "scale");
}

/* The training set, augmented: each of the first N_TRAIN images as is and moved by one pixel in
 * each direction (zeros moving in), SHIFTS x N_TRAIN images in a fixed shuffled order, into
 * train.images and train.labels. The test images stay as they are. */
static inline int augment(ct_scope *s) {
  static const int dy[SHIFTS] = {0, -1, 1, 0, 0, -1, -1, 1, 1};
  static const int dx[SHIFTS] = {0, 0, 0, -1, 1, -1, 1, -1, 1};
  static uint8_t img[SHIFTS * N_TRAIN][DIGIT_SIDE][DIGIT_SIDE];
  static int64_t lab[SHIFTS * N_TRAIN];
  const uint8_t(*src)[DIGIT_SIDE][DIGIT_SIDE] =
      ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(s, "images")), CT_UINT8);
  const int64_t *labels =
      ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(s, "labels")), CT_INT64);
  int64_t order[SHIFTS * N_TRAIN];
  uint64_t r = 12345;
  for (int64_t i = 0; i < SHIFTS * N_TRAIN; i++) {
    order[i] = i;
    r = r * 6364136223846793005u + 1442695040888963407u;
    int64_t j = (int64_t)((r >> 33) % (uint64_t)(i + 1)), t = order[i];
    order[i] = order[j]; /* Fisher-Yates, inside out */
    order[j] = t;
  }
  for (int64_t k = 0; k < SHIFTS * N_TRAIN; k++) {
    int64_t i = order[k] % N_TRAIN;
    int sh = (int)(order[k] / N_TRAIN);
    lab[k] = labels[i];
    for (int y = 0; y < DIGIT_SIDE; y++) {
      for (int x = 0; x < DIGIT_SIDE; x++) {
        int sy = y - dy[sh], sx = x - dx[sh];
        bool inside = sy >= 0 && sy < DIGIT_SIDE && sx >= 0 && sx < DIGIT_SIDE;
        img[k][y][x] = inside ? src[i][sy][sx] : 0;
      }
    }
  }
  ct_ddim dims = CT_DIMS(SHIFTS * N_TRAIN, DIGIT_SIDE, DIGIT_SIDE);
  return ok(ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, "train.images")), img, dims,
                                CT_UINT8, ct_cpu()),
            "making the augmented images") &&
         ok(ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, "train.labels")), lab,
                                CT_DIMS(SHIFTS * N_TRAIN), CT_INT64, ct_cpu()),
            "making the augmented labels");
}

/* The share of the rows of variable logits [N, CLASSES] (of digits_dtype, float32 or float64)
 * whose largest logit is their label in batch.labels. */
static inline double accuracy(ct_scope *s) {
  const ct_tensor *lt = ct_var_get_tensor(ct_scope_find_var(s, "logits"));
  const void *logits = ct_tensor_data(lt, digits_dtype);
  const int64_t *labels =
      ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(s, "batch.labels")), CT_INT64);
  int64_t n = ct_tensor_dims(lt).d[0], right = 0;
  for (int64_t i = 0; i < n; i++) {
    double row[CLASSES];
    for (int j = 0; j < CLASSES; j++) {
      row[j] = digits_dtype == CT_FLOAT64 ? ((const double *)logits)[i * CLASSES + j]
                                          : ((const float *)logits)[i * CLASSES + j];
    }
    int best = 0;
    for (int j = 1; j < CLASSES; j++) {
      if (row[j] > row[best]) best = j;
    }
    right += best == labels[i];
  }
  return n > 0 ? (double)right / (double)n : 0.0;
}

/* Saves p as an ONNX model at path (ct_onnx_save_with): graph input `in`, output `out`, both
 * with a symbolic batch ("N"), so the file runs at any batch size in onnxruntime and elsewhere.
 * 0 after reporting. */
static inline int save_onnx(const char *path, const ct_program *p, const ct_scope *s,
                            const char *in, const char *out) {
  const ct_onnx_dim_name batch[2] = {{in, 0, "N"}, {out, 0, "N"}};
  const ct_onnx_save_options o = {.dim_names = batch, .n_dim_names = 2};
  if (!ok(ct_onnx_save_with(path, p, s, &in, 1, &out, 1, &o), "saving the ONNX model")) return 0;
  printf("saved the model (%s -> %s) to %s\n", in, out, path);
  return 1;
}

/* The loss of the logits in variable logits against batch.labels (softmax_with_cross_entropy,
 * row_loss, their mean: loss) and the backward pass from it to the n params (<param>@GRAD).
 * 1, 0 after reporting a failure, or -1 (reported as a skip) when an op on the path has no
 * gradient in this build. */
static inline int add_loss_and_backward(ct_program *p, const char *const *params, size_t n) {
  if (!add(p, "softmax_with_cross_entropy", "Logits", "logits", "Label", "batch.labels", NULL,
           "Softmax", "prob", "Loss", "row_loss", NULL) ||
      !add(p, "mean", "X", "row_loss", NULL, "Out", "loss", NULL)) {
    return 0;
  }
  ct_status s = ct_program_append_backward(p, "loss", params, n);
  if (s == CT_ERR_UNSUPPORTED) {
    printf("SKIPPED: this build of corten lacks a gradient the network needs: %s\n",
           ct_last_error());
    return -1;
  }
  return ok(s, "the backward pass");
}

/* An op with only an Out slot making a digits_dtype tensor of `dims`: uniform_random in
 * [-bound, bound) when bound > 0, else fill_constant with value. */
static inline int add_init(ct_program *p, const char *out, const int64_t *dims, size_t rank,
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

/* adam's state variable of parameter w: <w>.m1, .m2, .beta1_pow or .beta2_pow (k = 0..3). */
static inline const char *adam_state(char *buf, size_t size, const char *w, int k) {
  static const char *const suffix[] = {"m1", "m2", "beta1_pow", "beta2_pow"};
  snprintf(buf, size, "%s.%s", w, suffix[k]);
  return buf;
}

/* The init ops of adam's state for parameter w of `dims`: zero moments, the powers 0.9 and
 * 0.999 (adam's beta1, beta2). */
static inline int add_adam_init(ct_program *p, const char *w, const int64_t *dims, size_t rank) {
  static const int64_t one[1] = {1};
  char m1[256], m2[256], b1[256], b2[256];
  return add_init(p, adam_state(m1, sizeof m1, w, 0), dims, rank, 0, 0.0, 0) &&
         add_init(p, adam_state(m2, sizeof m2, w, 1), dims, rank, 0, 0.0, 0) &&
         add_init(p, adam_state(b1, sizeof b1, w, 2), one, 1, 0, 0.9, 0) &&
         add_init(p, adam_state(b2, sizeof b2, w, 3), one, 1, 0, 0.999, 0);
}

/* adam on parameter w with its gradient <w>@GRAD and the learning rate in variable lr, in
 * place. */
static inline int add_adam(ct_program *p, const char *w) {
  char g[256], m1[256], m2[256], b1[256], b2[256];
  snprintf(g, sizeof g, "%s@GRAD", w);
  adam_state(m1, sizeof m1, w, 0);
  adam_state(m2, sizeof m2, w, 1);
  adam_state(b1, sizeof b1, w, 2);
  adam_state(b2, sizeof b2, w, 3);
  return add(p, "adam", "Param", w, "Grad", g, "LearningRate", "lr", "Moment1", m1, "Moment2",
             m2, "Beta1Pow", b1, "Beta2Pow", b2, NULL, "ParamOut", w, "Moment1Out", m1,
             "Moment2Out", m2, "Beta1PowOut", b1, "Beta2PowOut", b2, NULL) != NULL;
}

#endif /* CORTEN_EXAMPLES_DIGITS_DATA_H */
