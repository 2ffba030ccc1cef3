/* SPDX-License-Identifier: Apache-2.0 */
/* The corten side of the PyTorch parity test of the layers (tests/python/
 * test_torch_parity_layers.py), in float64. Two networks:
 *
 * A transformer-style block, trained with adam (lr 0.01) for 20 steps, the ids [B, T] and
 * labels [B x T] fixed:
 *   emb = lookup_table_v2(emb.w [V, D], ids; padding_idx 0)
 *   h = layer_norm(emb; ln1, begin_norm_axis 2)
 *   f = dropout(gelu(h fc1.w + fc1.b); is_test, upscale_in_train) fc2.w + fc2.b
 *   z = layer_norm(emb + f; ln2) -> logits = z out.w (reshaped to [B x T, C])
 *   loss = mean(softmax_with_cross_entropy(logits, labels)); pred = arg_max(logits)
 * written: the logits, predictions and every gradient of the first step, the loss of each
 * step, the weights after the last.
 *
 * A batch_norm layer (NCHW, training, momentum 0.9) under loss = mean(Y x R) for a fixed R:
 * Y, SavedMean, SavedVariance, MeanOut, VarianceOut and the gradients of X, Scale and Bias;
 * then Y of the same layer in test mode from the updated running statistics.
 *
 * Usage: torch_parity_layers OUT. OUT is text: for each array a line "name count", then count
 * values one per line (%.17g). Exits 0 when written, 1 on a failure. */
#include <stdio.h>

#include <corten/corten.h>

#include "parity_util.h"

enum { B = 2, T = 5, V = 11, D = 8, H = 16, C = 4, STEPS = 20 };
enum { BN_N = 4, BN_C = 3 };

static const char *const PARAMS[] = {"emb.w", "ln1.scale", "ln1.bias", "fc1.w", "fc1.b",
                                     "fc2.w", "fc2.b",     "ln2.scale", "ln2.bias", "out.w"};
enum { N_PARAMS = sizeof PARAMS / sizeof PARAMS[0] };

static ct_op *ln(const char *x, const char *pre, const char *y) {
  char sc[32], bi[32], mean[32], var[32];
  snprintf(sc, sizeof sc, "%s.scale", pre);
  snprintf(bi, sizeof bi, "%s.bias", pre);
  snprintf(mean, sizeof mean, "%s.mean", pre);
  snprintf(var, sizeof var, "%s.var", pre);
  return with_int(mk("layer_norm", "X", x, "Scale", sc, "Bias", bi, NULL, "Y", y, "Mean", mean,
                     "Variance", var, NULL),
                  "begin_norm_axis", 2);
}

static ct_status build_block(ct_program *p) {
  ct_op *drop = with_string(mk("dropout", "X", "f.act", NULL, "Out", "f.drop", "Mask", "f.mask",
                                NULL),
                             "dropout_implementation", "upscale_in_train");
  static const int64_t rows[2] = {B * T, C};
  ct_op *reshape = mk("reshape", "X", "z.out", NULL, "Out", "logits", NULL);
  if (reshape != NULL && ct_op_set_attr_ints(reshape, "shape", rows, 2) != CT_OK) {
    ct_op_free(reshape);
    reshape = NULL;
  }
  ct_op *ops[] = {
      with_int(mk("lookup_table_v2", "W", "emb.w", "Ids", "ids", NULL, "Out", "emb", NULL),
               "padding_idx", 0),
      ln("emb", "ln1", "h"),
      mk("matmul", "X", "h", "Y", "fc1.w", NULL, "Out", "f.mm", NULL),
      mk("elementwise_add", "X", "f.mm", "Y", "fc1.b", NULL, "Out", "f.pre", NULL),
      mk("gelu", "X", "f.pre", NULL, "Out", "f.act", NULL),
      with_bool(drop, "is_test", true),
      mk("matmul", "X", "f.drop", "Y", "fc2.w", NULL, "Out", "f2.mm", NULL),
      mk("elementwise_add", "X", "f2.mm", "Y", "fc2.b", NULL, "Out", "f", NULL),
      mk("elementwise_add", "X", "emb", "Y", "f", NULL, "Out", "r", NULL),
      ln("r", "ln2", "z"),
      mk("matmul", "X", "z", "Y", "out.w", NULL, "Out", "z.out", NULL),
      reshape,
      mk("softmax_with_cross_entropy", "Logits", "logits", "Label", "labels", NULL, "Softmax",
         "prob", "Loss", "row_loss", NULL),
      mk("mean", "X", "row_loss", NULL, "Out", "loss", NULL),
      with_int(mk("arg_max", "X", "logits", NULL, "Out", "pred", NULL), "axis", 1),
  };
  ct_status s = add_all(p, ops, sizeof ops / sizeof ops[0]);
  if (s == CT_OK) s = ct_program_append_backward(p, "loss", PARAMS, N_PARAMS);
  for (int i = 0; i < N_PARAMS && s == CT_OK; i++) s = add_adam(p, PARAMS[i]);
  return s;
}

static ct_status put_block_inputs(ct_scope *s) {
  int64_t ids[B * T], labels[B * T];
  for (int i = 0; i < B * T; i++) {
    ids[i] = (7 * i + 2) % V; /* 0 (padding) at i = 7 */
    labels[i] = (3 * i + 1) % C;
  }
  const struct {
    const char *name;
    ct_ddim dims;
    double a, b, c, d;
  } w[] = {
      {"emb.w", CT_DIMS(V, D), 1.0, 0.37, 0.1, 0},  {"ln1.scale", CT_DIMS(D), 0.2, 0.9, 0.2, 1},
      {"ln1.bias", CT_DIMS(D), 0.1, 0.7, 0.3, 0},   {"fc1.w", CT_DIMS(D, H), 0.4, 1.13, 0.2, 0},
      {"fc1.b", CT_DIMS(H), 0.1, 0.71, 0.3, 0},     {"fc2.w", CT_DIMS(H, D), 0.3, 0.89, 0.4, 0},
      {"fc2.b", CT_DIMS(D), 0.1, 0.53, 0.5, 0},     {"ln2.scale", CT_DIMS(D), 0.2, 0.6, 0.1, 1},
      {"ln2.bias", CT_DIMS(D), 0.1, 0.8, 0.7, 0},   {"out.w", CT_DIMS(D, C), 0.5, 0.61, 0.9, 0},
  };
  ct_status st = CT_OK;
  for (size_t k = 0; k < sizeof w / sizeof w[0] && st == CT_OK; k++) {
    st = put_pattern(s, w[k].name, w[k].dims, w[k].a, w[k].b, w[k].c, w[k].d);
    if (st == CT_OK) st = put_adam_state(s, w[k].name, w[k].dims);
  }
  if (st == CT_OK) st = put_pattern(s, "lr", CT_DIMS(1), 0, 0, 0, 0.01);
  if (st == CT_OK) {
    st = ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, "ids")), ids, CT_DIMS(B, T), CT_INT64,
                             ct_cpu());
  }
  if (st == CT_OK) {
    st = ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, "labels")), labels, CT_DIMS(B * T),
                             CT_INT64, ct_cpu());
  }
  return st;
}

static int run_block(FILE *f, ct_scope *s, ct_program *p) {
  if (put_block_inputs(s) != CT_OK) return fail("putting the block's inputs");
  if (write_var(f, s, "ids", NULL) || write_var(f, s, "labels", NULL) ||
      write_params(f, s, PARAMS, N_PARAMS, "")) {
    return 1;
  }
  if (build_block(p) != CT_OK) return fail("building the block");
  static const char *const first[] = {"logits", "pred"};
  return parity_train(f, s, p, STEPS, first, 2, PARAMS, N_PARAMS);
}

/* ---- batch_norm ------------------------------------------------------------------------------ */

/* Runs p once over s on the CPU. */
static ct_status run_once(ct_program *p, ct_scope *s) {
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  if (e == NULL) return ct_last_status();
  ct_status st = ct_executor_run(e);
  ct_executor_free(e);
  return st;
}

static ct_op *bn(bool is_test) {
  return with_bool(mk("batch_norm", "X", "bn.x", "Scale", "bn.scale", "Bias", "bn.bias", "Mean",
                      "bn.mean", "Variance", "bn.var", NULL, "Y", "bn.y", "MeanOut",
                      "bn.mean_out", "VarianceOut", "bn.var_out", "SavedMean", "bn.saved_mean",
                      "SavedVariance", "bn.saved_var", NULL),
                   "is_test", is_test);
}

static int run_bn(FILE *f, ct_scope *s) {
  static const char *const params[] = {"bn.x", "bn.scale", "bn.bias"};
  ct_ddim xd = CT_DIMS(BN_N, BN_C, 2, 3);
  if (put_pattern(s, "bn.x", xd, 1.5, 0.41, 0.3, 0.2) != CT_OK ||
      put_pattern(s, "bn.r", xd, 1.0, 0.77, 0.9, 0) != CT_OK ||
      put_pattern(s, "bn.scale", CT_DIMS(BN_C), 0.3, 1.1, 0.1, 1) != CT_OK ||
      put_pattern(s, "bn.bias", CT_DIMS(BN_C), 0.2, 0.9, 0.4, 0) != CT_OK ||
      put_pattern(s, "bn.mean", CT_DIMS(BN_C), 0.1, 1.3, 0.2, 0) != CT_OK ||
      put_pattern(s, "bn.var", CT_DIMS(BN_C), 0.2, 1.7, 0.5, 1) != CT_OK) {
    return fail("putting the batch_norm inputs");
  }
  if (write_var(f, s, "bn.x", NULL) || write_var(f, s, "bn.r", NULL) ||
      write_var(f, s, "bn.scale", NULL) || write_var(f, s, "bn.bias", NULL) ||
      write_var(f, s, "bn.mean", NULL) || write_var(f, s, "bn.var", NULL)) {
    return 1;
  }
  ct_program *p = ct_program_new(), *test = ct_program_new();
  ct_status st = p && test ? add(p, bn(false)) : CT_ERR_OUT_OF_MEMORY;
  if (st == CT_OK) st = add(p, mk("elementwise_mul", "X", "bn.y", "Y", "bn.r", NULL, "Out",
                                  "bn.yr", NULL));
  if (st == CT_OK) st = add(p, mk("mean", "X", "bn.yr", NULL, "Out", "bn.loss", NULL));
  if (st == CT_OK) st = ct_program_append_backward(p, "bn.loss", params, 3);
  if (st == CT_OK) st = run_once(p, s);
  int rc = st != CT_OK ? fail("the batch_norm step") : 0;
  const char *outs[] = {"bn.y", "bn.saved_mean", "bn.saved_var", "bn.mean_out", "bn.var_out",
                        "bn.x@GRAD", "bn.scale@GRAD", "bn.bias@GRAD"};
  for (size_t k = 0; k < sizeof outs / sizeof outs[0] && rc == 0; k++) {
    rc = write_var(f, s, outs[k], NULL);
  }
  /* Test mode from the updated statistics. */
  if (rc == 0) {
    st = add(test, mk("assign", "X", "bn.mean_out", NULL, "Out", "bn.mean", NULL));
    if (st == CT_OK) st = add(test, mk("assign", "X", "bn.var_out", NULL, "Out", "bn.var", NULL));
    if (st == CT_OK) st = add(test, bn(true));
    if (st == CT_OK) st = run_once(test, s);
    rc = st != CT_OK ? fail("batch_norm in test mode") : write_var(f, s, "bn.y", "bn.y_test");
  }
  ct_program_free(p);
  ct_program_free(test);
  return rc;
}

static int run(FILE *f, ct_scope *s, ct_program *p) {
  int rc = run_block(f, s, p);
  return rc == 0 ? run_bn(f, s) : rc;
}

int main(int argc, char **argv) {
  parity_name = "torch_parity_layers";
  return parity_main(argc, argv, run);
}
