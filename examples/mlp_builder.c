/* SPDX-License-Identifier: Apache-2.0 */
/* mlp_builder: a two-layer MLP trained with adam on the digits (../shared/data/digits), written
 * with the layer builder (corten/nn.h): the model and its optimizer are the ten lines of
 * build() below; tests/test_nn.c checks that they give the hand-wired program's bits.
 *
 * Usage: mlp_builder [digits.params] (default ../shared/data/digits/digits.params). Prints the
 * loss of every epoch and the test accuracy; exits 0 at 90% or more (an MLP on these 8x8 digits
 * reaches about 92 to 95%), 1 below, 2 when the data cannot be read or a call fails. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <corten/corten.h>

static const char digits_program[] = "mlp_builder";
static const ct_dtype digits_dtype = CT_FLOAT32;

#include "digits_data.h"

enum { BATCH = 50, EPOCHS = 20 };

/* The model, x [N, 64] to logits [N, 10], its loss and adam: what the builder saves writing. */
static const char *build(ct_nn *nn) {
  const char *h = ct_nn_linear(nn, "x", 64, 64, &(ct_nn_opts){.act = "relu"});
  const char *logits = h != NULL ? ct_nn_linear(nn, h, 64, CLASSES, NULL) : NULL;
  const char *loss = logits != NULL ? ct_nn_cross_entropy(nn, logits, "batch.labels") : NULL;
  return loss != NULL && ct_nn_adam(nn, loss, 0.01) == CT_OK ? logits : NULL;
}

static double train(const char *path, ct_scope *s, ct_nn *nn) {
  static const int64_t flat[2] = {-1, DIGIT_SIDE * DIGIT_SIDE};
  if (!load_digits(path, s) || !take_rows(s, "", 0, BATCH) ||
      !add_pixels(ct_nn_main(nn), flat, 2, "x")) {
    return -1;
  }
  const char *logits = build(nn);
  if (logits == NULL) return failed("building the model"), -1;
  if (!ok(ct_nn_run_startup(nn, ct_cpu()), "the startup program")) return -1;
  ct_executor *step = ct_executor_new(ct_nn_main(nn), s, ct_cpu());
  for (int epoch = 1; step != NULL && epoch <= EPOCHS; epoch++) {
    double sum = 0;
    for (int64_t b = 0; b < N_TRAIN; b += BATCH) {
      if (!take_rows(s, "", b, b + BATCH < N_TRAIN ? b + BATCH : N_TRAIN) ||
          !ok(ct_executor_run(step), "a step")) {
        ct_executor_free(step);
        return -1;
      }
      sum += *(const float *)ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(s, "loss_0")),
                                            CT_FLOAT32);
    }
    if (epoch % 5 == 0) printf("epoch %2d  loss %.4f\n", epoch, sum / (N_TRAIN / BATCH));
  }
  ct_executor_free(step);
  /* Scoring: the step cut down to the logits (no loss, backward or adam). */
  const char *const target[1] = {logits};
  ct_executor *eval = NULL;
  double acc = -1;
  if (ok(ct_program_prune(ct_nn_main(nn), target, 1), "pruning") &&
      take_rows(s, "", N_TRAIN, N_ALL) &&
      (eval = ct_executor_new(ct_nn_main(nn), s, ct_cpu())) != NULL &&
      ok(ct_executor_run(eval), "scoring")) {
    /* accuracy() reads "logits": the builder's second layer wrote its own name */
    ct_scope_rename(s, logits, "logits");
    acc = accuracy(s);
    printf("test accuracy %.2f%% (%d images)\n", 100 * acc, N_ALL - N_TRAIN);
  }
  ct_executor_free(eval);
  return acc;
}

/* The usage line: on stdout with status 0 for --help, on stderr with 2 for a wrong call. */
static int usage(bool asked) {
  fprintf(asked ? stdout : stderr, "usage: mlp_builder [digits.params]\n"
          "  digits.params defaults to ../shared/data/digits/digits.params: the team's shared data\n"
          "  folder beside the repository (../shared/data/digits/README.md describes the file)\n");
  return asked ? 0 : 2;
}

int main(int argc, char **argv) {
  if (argc > 2 || (argc > 1 && argv[1][0] == '-')) {
    return usage(argc > 1 && strcmp(argv[1], "--help") == 0);
  }
  ct_scope *s = ct_scope_new();
  ct_nn *nn = s != NULL ? ct_nn_new(s, 7) : NULL;
  double acc = nn != NULL ? train(argc > 1 ? argv[1] : "../shared/data/digits/digits.params", s, nn)
                          : (failed("setting up"), -1);
  ct_nn_free(nn);
  ct_scope_free(s);
  if (acc < 0) return 2;
  if (acc < 0.90) {
    printf("the accuracy is below 90%%: training did not work\n");
    return 1;
  }
  return 0;
}
