/* SPDX-License-Identifier: Apache-2.0 */
/* ops/nn_optim.c: the builder's optimizers (corten/nn.h): the backward pass over every trainable
 * parameter, one update op per parameter, and the state (learning rate, moments, velocities)
 * filled by the startup program. A failure takes back everything the call added. */
#include <stdio.h>
#include <string.h>

#include <corten/backward.h>

#include "ops/nn_impl.h"

enum { SGD, MOMENTUM, ADAM };
static const char *const kinds[] = {"sgd", "momentum", "adam"};

/* A float32 [1] state variable filled with value by the startup program (not trainable). */
static ct_status state(ct_nn *nn, const char *name, const int64_t *dims, int n, double value) {
  return ct__nn_param(nn, name, dims, n, (ct_nn_init){CT_NN_INIT_CONSTANT, value, 0}, 1, 1, false);
}

/* The update op of parameter w (dims d, rank r) for optimizer kind, with its state. */
static ct_status update(ct_nn *nn, int kind, const char *w, const char *lr, double mu) {
  char g[512], a[512], b[512], p1[512], p2[512];
  snprintf(g, sizeof g, "%s@GRAD", w);
  if (kind == SGD) {
    ct_op *op = ct__nn_add(nn->main, "sgd", "Param", w, "Grad", g, "LearningRate", lr, NULL,
                           "ParamOut", w, NULL);
    return op != NULL ? CT_OK : ct_last_status();
  }
  /* the state has the parameter's dims: a fill_any_like of it in the startup program, which
   * runs after the parameter's initialiser */
  snprintf(a, sizeof a, "%s.%s", w, kind == MOMENTUM ? "velocity" : "moment1");
  snprintf(b, sizeof b, "%s.moment2", w);
  ct_op *op = ct__nn_add(nn->startup, "fill_any_like", "X", w, NULL, "Out", a, NULL);
  if (op == NULL) return ct_last_status();
  if (kind == MOMENTUM) {
    op = ct__nn_add(nn->main, "momentum", "Param", w, "Grad", g, "Velocity", a, "LearningRate",
                    lr, NULL, "ParamOut", w, "VelocityOut", a, NULL);
    return op != NULL ? ct_op_set_attr_float(op, "mu", mu) : ct_last_status();
  }
  static const int64_t one[1] = {1};
  snprintf(p1, sizeof p1, "%s.beta1_pow", w);
  snprintf(p2, sizeof p2, "%s.beta2_pow", w);
  ct_status s = CT_OK;
  if (ct__nn_add(nn->startup, "fill_any_like", "X", w, NULL, "Out", b, NULL) == NULL ||
      (s = state(nn, p1, one, 1, 0.9)) != CT_OK || (s = state(nn, p2, one, 1, 0.999)) != CT_OK) {
    return s != CT_OK ? s : ct_last_status();
  }
  op = ct__nn_add(nn->main, "adam", "Param", w, "Grad", g, "LearningRate", lr, "Moment1", a,
                  "Moment2", b, "Beta1Pow", p1, "Beta2Pow", p2, NULL, "ParamOut", w,
                  "Moment1Out", a, "Moment2Out", b, "Beta1PowOut", p1, "Beta2PowOut", p2, NULL);
  return op != NULL ? CT_OK : ct_last_status();
}

static ct_status minimize(ct_nn *nn, int kind, const char *loss, double lr, double mu) {
  const char *fn = kind == SGD ? "ct_nn_sgd" : kind == MOMENTUM ? "ct_nn_momentum" : "ct_nn_adam";
  if (nn == NULL) return ct__error(CT_ERR_INVALID_ARGUMENT, "%s: nn is NULL", fn);
  ct_status s = ct__nn_check_name(fn, "the loss", loss);
  if (s != CT_OK) return s;
  if (!(lr > 0)) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "%s: the learning rate is %g: give one above 0", fn,
                     lr);
  }
  if (nn->n_params == 0) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "%s: no trainable parameter yet: add the layers before the optimizer", fn);
  }
  nn_undo u;
  ct__nn_begin(nn, &u);
  char opt[48];
  ct__nn_layer_name(nn, kinds[kind], opt, sizeof opt);
  const char *lr_name = ct__nn_keep(nn, "%s.lr", opt);
  static const int64_t one[1] = {1};
  if (lr_name == NULL || (s = state(nn, lr_name, one, 1, lr)) != CT_OK) {
    ct__nn_fail(nn, &u);
    return ct_last_status();
  }
  size_t n = u.params_n; /* the parameters before this call (state is not trainable) */
  s = ct_program_append_backward(nn->main, loss, (const char *const *)nn->params, n);
  for (size_t i = 0; s == CT_OK && i < n; i++) s = update(nn, kind, nn->params[i], lr_name, mu);
  if (s != CT_OK) {
    ct__nn_fail(nn, &u);
    return ct_last_status();
  }
  return CT_OK;
}

ct_status ct_nn_sgd(ct_nn *nn, const char *loss, double lr) {
  return minimize(nn, SGD, loss, lr, 0);
}

ct_status ct_nn_momentum(ct_nn *nn, const char *loss, double lr, double mu) {
  return minimize(nn, MOMENTUM, loss, lr, mu);
}

ct_status ct_nn_adam(ct_nn *nn, const char *loss, double lr) {
  return minimize(nn, ADAM, loss, lr, 0);
}
