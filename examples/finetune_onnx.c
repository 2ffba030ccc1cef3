/* SPDX-License-Identifier: Apache-2.0 */
/* finetune_onnx: imports a classifier from an ONNX file, replaces its last layer, and trains the
 * whole network on the digits (../shared/data/digits/README.md) in the same program.
 *
 *   ct_onnx_load(model)                         the file's ops and weights, in scope s
 *   features = the X input of the last matmul on the path to the model's output
 *   ct_program_prune(program, {features})       the old head (its matmul, bias add) goes
 *   features -matmul head.w [F,10] -add head.b-> logits     the new head, in the same program
 *   logits, batch.labels -softmax_with_cross_entropy, mean-> loss
 *   ct_program_append_backward(loss, every weight of the file the features depend on + head)
 *   adam on each
 *
 * The pixels reach the model's input through a second program (batch.images -reshape-> [B,1,8,8]
 * -cast-> float32 -scale 1/16-> input), run before each step on the same scope. The training
 * images are augmented (each also moved by one pixel in the 8 directions) and the learning rate
 * halves after half the epochs, as in train_digits.c; the new head starts uniform in
 * +-1/sqrt(F), PyTorch's default for a linear layer.
 *
 * tests/python/models_onnx_finetune.py exports the model this is tested with from PyTorch (a
 * digits CNN: conv 3x3 32, relu, 2x2 max pool, linear 512->64, relu, linear 64->10, random
 * weights) and checks the accuracy; any classifier with an input [N,1,8,8] and a matmul or Gemm
 * as its last layer works.
 *
 * Usage: finetune_onnx MODEL.onnx [digits.params [EXPORT.onnx]] (the digits default to
 * ../shared/data/digits/digits.params). With EXPORT, the fine-tuned classifier (pixels in
 * [0, 1] to logits, any batch) is saved there as ONNX (ct_onnx_save_with), for onnxruntime or
 * any other runtime.
 * Prints the loss of every epoch and the test accuracy; exits 0 when it reaches 97%, 1 when it
 * does not, 2 when a file cannot be read or a call fails, and 77 (a skip to ctest) when an op of
 * the model has no gradient in this build. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <corten/corten.h>

static const char digits_program[] = "finetune_onnx";
static const ct_dtype digits_dtype = CT_FLOAT32;

#include "digits_data.h"

enum { BATCH = 50, EPOCHS = 6, MAX_PARAMS = 64 };
static const double LEARNING_RATE = 0.005;

/* The last op of p before op `before` that writes variable name, or NULL. */
static const ct_op *writer_of(const ct_program *p, size_t before, const char *name, size_t *at) {
  while (before-- > 0) {
    const ct_op *op = ct_program_op(p, before);
    ct_op_def def;
    if (ct_op_type_get(ct_op_type(op), &def) != CT_OK) continue;
    for (size_t s = 0; s < def.n_outputs; s++) {
      for (size_t k = 0; k < ct_op_output_count(op, def.outputs[s].name); k++) {
        if (strcmp(ct_op_output(op, def.outputs[s].name, k), name) == 0) {
          *at = before;
          return op;
        }
      }
    }
  }
  return NULL;
}

/* The variable the model's last layer reads: walking back from the output through the ops'
 * X inputs (a bias add, a scale), the X input of the first matmul met. NULL after reporting. */
static const char *find_features(const ct_program *p, const char *output) {
  const char *name = output;
  size_t at = ct_program_size(p);
  for (int hops = 0; hops < 8; hops++) {
    const ct_op *op = writer_of(p, at, name, &at);
    if (op == NULL || ct_op_input_count(op, "X") != 1) break;
    name = ct_op_input(op, "X", 0);
    if (strcmp(ct_op_type(op), "matmul") == 0) return name;
  }
  fprintf(stderr, "%s: no matmul (a Linear or Gemm layer) found on the path to output '%s'\n",
          digits_program, output);
  return NULL;
}

/* The weights to train: every float32 tensor of the scope (the file's initializers) that an op
 * of p reads, once each. Returns how many (at most cap), -1 after reporting. */
static int find_weights(const ct_program *p, ct_scope *s, const char **names, int cap) {
  int n = 0;
  for (size_t i = 0; i < ct_program_size(p); i++) {
    const ct_op *op = ct_program_op(p, i);
    ct_op_def def;
    if (ct_op_type_get(ct_op_type(op), &def) != CT_OK) return failed("ct_op_type_get"), -1;
    for (size_t sl = 0; sl < def.n_inputs; sl++) {
      for (size_t k = 0; k < ct_op_input_count(op, def.inputs[sl].name); k++) {
        const char *name = ct_op_input(op, def.inputs[sl].name, k);
        const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, name));
        if (t == NULL || !ct_tensor_has_memory(t) || ct_tensor_dtype(t) != CT_FLOAT32) continue;
        int seen = 0;
        for (int j = 0; j < n && !seen; j++) seen = strcmp(names[j], name) == 0;
        if (seen) continue;
        if (n == cap) {
          fprintf(stderr, "%s: the model has more than %d weights\n", digits_program, cap);
          return -1;
        }
        names[n++] = name;
      }
    }
  }
  return n;
}

/* head.w [features, CLASSES] uniform in +-1/sqrt(features) (a fixed seed) and head.b zero. */
static int make_head(ct_scope *s, int64_t features) {
  ct_tensor *w = ct_var_tensor(ct_scope_var(s, "head.w"));
  ct_tensor *b = ct_var_tensor(ct_scope_var(s, "head.b"));
  if (w == NULL || b == NULL || !ok(ct_tensor_resize(w, CT_DIMS(features, CLASSES)), "head.w") ||
      !ok(ct_tensor_resize(b, CT_DIMS(CLASSES)), "head.b")) {
    return 0;
  }
  float *wd = ct_tensor_mutable_data(w, CT_FLOAT32, ct_cpu());
  float *bd = ct_tensor_mutable_data(b, CT_FLOAT32, ct_cpu());
  if (wd == NULL || bd == NULL) return failed("making the new head");
  double bound = 1 / sqrt((double)features);
  uint64_t r = 2024;
  for (int64_t i = 0; i < features * CLASSES; i++) {
    r = r * 6364136223846793005u + 1442695040888963407u;
    wd[i] = (float)(bound * (2.0 * (double)(r >> 11) / 9007199254740992.0 - 1.0));
  }
  for (int j = 0; j < CLASSES; j++) bd[j] = 0;
  return 1;
}

/* The new head after the features, the loss, the backward pass to the n weights and the head's,
 * and adam on each, into step; adam's state and the learning rate into init. 1, 0 after
 * reporting, -1 when a gradient is missing (reported as a skip). */
static int add_training(ct_program *step, ct_program *init, ct_scope *s, const char *features,
                        const char **params, int n) {
  if (!add(step, "matmul", "X", features, "Y", "head.w", NULL, "Out", "head.mm", NULL) ||
      !add(step, "elementwise_add", "X", "head.mm", "Y", "head.b", NULL, "Out", "logits", NULL)) {
    return 0;
  }
  params[n++] = "head.w";
  params[n++] = "head.b";
  int built = add_loss_and_backward(step, params, (size_t)n);
  if (built <= 0) return built;
  static const int64_t one[1] = {1};
  for (int i = 0; i < n; i++) {
    ct_ddim d = ct_tensor_dims(ct_var_get_tensor(ct_scope_find_var(s, params[i])));
    if (strlen(params[i]) > 200) {
      fprintf(stderr, "%s: weight name '%.40s...' is too long\n", digits_program, params[i]);
      return 0;
    }
    if (!add_adam_init(init, params[i], d.d, (size_t)d.rank) || !add_adam(step, params[i])) {
      return 0;
    }
  }
  return add_init(init, "lr", one, 1, 0, LEARNING_RATE, 0);
}

/* An executor of p over s on the CPU; NULL after reporting. */
static ct_executor *new_exec(const ct_program *p, ct_scope *s, const ct_executor_options *o) {
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), o);
  if (e == NULL) failed("making an executor");
  return e;
}

/* Runs e and then f (either may be NULL: skipped); 0 after reporting. */
static int run2(ct_executor *e, ct_executor *f, const char *what) {
  return (e == NULL || ok(ct_executor_run(e), what)) && (f == NULL || ok(ct_executor_run(f), what));
}

/* The features' width F: one run of the pruned model on the first batch. 0 after reporting. */
static int64_t feature_width(ct_program *feed, ct_program *model, ct_scope *s, const char *feat) {
  ct_executor *ef = new_exec(feed, s, NULL), *em = ef ? new_exec(model, s, NULL) : NULL;
  int64_t width = 0;
  if (em != NULL && run2(ef, em, "running the imported model")) {
    ct_ddim d = ct_tensor_dims(ct_var_get_tensor(ct_scope_find_var(s, feat)));
    if (d.rank == 2 && d.d[1] > 0) {
      width = d.d[1];
    } else {
      fprintf(stderr, "%s: the features '%s' are not a matrix [N, F]\n", digits_program, feat);
    }
  }
  ct_executor_free(ef);
  ct_executor_free(em);
  return width;
}

/* Trains: EPOCHS over the augmented images. 0 after reporting. */
static int train(ct_program *feed, ct_program *init, ct_program *step, ct_scope *s) {
  ct_executor *e_init = new_exec(init, s, NULL);
  int good = e_init != NULL && run2(e_init, NULL, "initialising adam");
  ct_executor_free(e_init);
  static const char *const keep[] = {"loss"};
  ct_executor_options o = {.free_intermediates = true, .keep = keep, .n_keep = 1};
  ct_executor *ef = good ? new_exec(feed, s, NULL) : NULL;
  ct_executor *es = ef ? new_exec(step, s, &o) : NULL;
  good = es != NULL;
  for (int epoch = 1; good && epoch <= EPOCHS; epoch++) {
    float *lr = ct_tensor_mutable_data(ct_var_tensor(ct_scope_var(s, "lr")), CT_FLOAT32, ct_cpu());
    if (lr == NULL) {
      good = failed("setting the learning rate");
      break;
    }
    *lr = (float)(LEARNING_RATE * (epoch > EPOCHS / 2 ? 0.5 : 1) *
                  (epoch > 3 * EPOCHS / 4 ? 0.5 : 1));
    double sum = 0;
    int batches = 0;
    for (int64_t b = 0; good && b < SHIFTS * N_TRAIN; b += BATCH, batches++) {
      int64_t end = b + BATCH < SHIFTS * N_TRAIN ? b + BATCH : SHIFTS * N_TRAIN;
      good = take_rows(s, "train.", b, end) && run2(ef, es, "a training step");
      if (good) {
        sum += *(const float *)ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(s, "loss")),
                                              CT_FLOAT32);
      }
    }
    if (good) printf("epoch %2d  loss %.4f\n", epoch, sum / batches);
  }
  ct_executor_free(ef);
  ct_executor_free(es);
  return good;
}

/* The fine-tuning of main: returns the test accuracy, -1 after reporting, -2 for a skip. */
static double finetune(const char *model, const char *digits, const char *export_path,
                       ct_scope *s, ct_program *feed, ct_program *init) {
  ct_onnx_model *m = ct_onnx_load(model, s);
  if (m == NULL) return failed("loading the model"), -1;
  double acc = -1;
  ct_program *step = ct_onnx_program(m);
  const char *in = ct_onnx_input_name(m, 0), *found = NULL;
  static const int64_t nchw[4] = {-1, 1, DIGIT_SIDE, DIGIT_SIDE};
  char features[256];
  if (in == NULL || ct_onnx_output_count(m) == 0 ||
      (found = find_features(step, ct_onnx_output_name(m, 0))) == NULL ||
      strlen(found) >= sizeof features) {
    if (found != NULL || in == NULL) {
      fprintf(stderr, "%s: the model needs one input, an output, and a name under 256 bytes\n",
              digits_program);
    }
    goto done;
  }
  strcpy(features, found); /* the name's op goes with the old head */
  const char *const target[1] = {features};
  const char *params[MAX_PARAMS + 2];
  int n;
  int64_t width;
  if (!load_digits(digits, s) || !augment(s) || !take_rows(s, "train.", 0, BATCH) ||
      !add_pixels(feed, nchw, 4, in) || !ok(ct_program_prune(step, target, 1), "pruning") ||
      (n = find_weights(step, s, params, MAX_PARAMS)) < 0 ||
      (width = feature_width(feed, step, s, features)) == 0 || !make_head(s, width)) {
    goto done;
  }
  printf("%s: last layer replaced after '%s' [N, %lld]; training %d tensors of the file and "
         "the new head\n", model, features, (long long)width, n);
  int built = add_training(step, init, s, features, params, n);
  if (built < 0) acc = -2;
  if (built <= 0 || !train(feed, init, step, s)) goto done;
  /* Scoring: the step cut down to the logits (no loss, backward or adam), on the test images. */
  static const char *const logits[1] = {"logits"};
  ct_executor *ef = NULL, *ee = NULL;
  if (ok(ct_program_prune(step, logits, 1), "pruning to the logits") &&
      take_rows(s, "", N_TRAIN, N_ALL) && (ef = new_exec(feed, s, NULL)) != NULL &&
      (ee = new_exec(step, s, NULL)) != NULL && run2(ef, ee, "scoring")) {
    acc = accuracy(s);
    printf("test accuracy %.2f%% (%d images)\n", 100 * acc, N_ALL - N_TRAIN);
  }
  ct_executor_free(ef);
  ct_executor_free(ee);
  if (acc >= 0 && export_path != NULL) {
    if (!save_onnx(export_path, step, s, in, "logits")) acc = -1;
  }
done:
  ct_onnx_free(m);
  return acc;
}

/* The usage line: on stdout with status 0 for --help, on stderr with 2 for a wrong call. */
static int usage(bool asked) {
  fprintf(asked ? stdout : stderr, "usage: finetune_onnx MODEL.onnx [digits.params [EXPORT.onnx]]\n"
          "  digits.params defaults to ../shared/data/digits/digits.params: the team's shared data\n"
          "  folder beside the repository (../shared/data/digits/README.md describes the file)\n");
  return asked ? 0 : 2;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 4 || argv[1][0] == '-') {
    return usage(argc > 1 && strcmp(argv[1], "--help") == 0);
  }
  const char *digits = argc > 2 ? argv[2] : "../shared/data/digits/digits.params";
  ct_scope *s = ct_scope_new();
  ct_program *feed = ct_program_new(), *init = ct_program_new();
  double acc = -1;
  if (s != NULL && feed != NULL && init != NULL) {
    acc = finetune(argv[1], digits, argc > 3 ? argv[3] : NULL, s, feed, init);
  } else {
    failed("setting up");
  }
  ct_program_free(feed);
  ct_program_free(init);
  ct_scope_free(s);
  if (acc == -2) return 77;
  if (acc < 0) return 2;
  if (acc < 0.97) {
    printf("the accuracy is below 97%%: fine-tuning did not work\n");
    return 1;
  }
  return 0;
}
