/* SPDX-License-Identifier: Apache-2.0 */
/* ops/nn_optim.c: the builder's optimizers (corten/nn.h): the backward pass over every trainable
 * parameter, an optional lr_schedule op, one update op per parameter (after an optional weight
 * decay), and the state (learning rate, step, moments, velocities) filled by the startup
 * program. A failure takes back everything the call added. */
#include <math.h>
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

/* Grad += decay Param, in place, before w's update. */
static ct_status decay(ct_nn *nn, const char *w, const char *g, double wd) {
  char d[512];
  snprintf(d, sizeof d, "%s.decay", w);
  ct_op *op = ct__nn_add(nn->main, "scale", "X", w, NULL, "Out", d, NULL);
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_attr_float(op, "scale", wd);
  if (s != CT_OK) return s;
  op = ct__nn_add(nn->main, "elementwise_add", "X", g, "Y", d, NULL, "Out", g, NULL);
  return op != NULL ? CT_OK : ct_last_status();
}

/* The update op of parameter w for optimizer opt, with its state (and weight decay). */
static ct_status update(ct_nn *nn, const ct_nn_optimizer *opt, const char *w, const char *lr) {
  char g[512], a[512], b[512], p1[512], p2[512];
  int kind = (int)opt->kind;
  double mu = opt->mu;
  snprintf(g, sizeof g, "%s@GRAD", w);
  if (opt->weight_decay > 0) {
    ct_status s = decay(nn, w, g, opt->weight_decay);
    if (s != CT_OK) return s;
  }
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

/* The schedule op writing lr_name before the updates, and its step counter in the startup
 * program; nothing for a constant rate without warm-up. */
static ct_status schedule(ct_nn *nn, const ct_nn_optimizer *opt, const char *opt_name,
                          const char *lr_name) {
  const char *kind = opt->schedule != NULL ? opt->schedule : "constant";
  if (strcmp(kind, "constant") == 0 && opt->warmup_steps == 0) return CT_OK;
  const char *step = ct__nn_keep(nn, "%s.step", opt_name);
  if (step == NULL) return ct_last_status();
  static const int64_t one[1] = {1};
  ct_op *fill = ct__nn_add(nn->startup, "fill_constant", NULL, "Out", step, NULL);
  if (fill == NULL) return ct_last_status();
  ct_status s = ct_op_set_attr_ints(fill, "shape", one, 1);
  if (s == CT_OK) s = ct_op_set_attr_int(fill, "dtype", CT_INT64);
  if (s != CT_OK) return s;
  ct_op *op = ct__nn_add(nn->main, "lr_schedule", "Step", step, NULL, "LearningRate", lr_name,
                         "StepOut", step, NULL);
  if (op == NULL) return ct_last_status();
  s = ct_op_set_attr_float(op, "base_lr", opt->lr);
  if (s == CT_OK) s = ct_op_set_attr_string(op, "kind", kind);
  if (s == CT_OK) s = ct_op_set_attr_int(op, "warmup_steps", opt->warmup_steps);
  if (s == CT_OK && opt->step_size != 0) s = ct_op_set_attr_int(op, "step_size", opt->step_size);
  if (s == CT_OK && opt->gamma != 0) s = ct_op_set_attr_float(op, "gamma", opt->gamma);
  if (s == CT_OK && opt->total_steps != 0) {
    s = ct_op_set_attr_int(op, "total_steps", opt->total_steps);
  }
  if (s == CT_OK) s = ct_op_set_attr_float(op, "min_lr", opt->min_lr);
  return s;
}

/* The options a call names, checked before anything is added. */
static ct_status check_options(const char *fn, const ct_nn_optimizer *opt) {
  if (opt->kind != CT_NN_SGD && opt->kind != CT_NN_MOMENTUM && opt->kind != CT_NN_ADAM) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "%s: optimizer kind %d is not a "
                     "ct_nn_optimizer_kind (CT_NN_SGD, CT_NN_MOMENTUM, CT_NN_ADAM)", fn,
                     (int)opt->kind);
  }
  if (!(opt->lr > 0)) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "%s: the learning rate is %g: give one above 0", fn,
                     opt->lr);
  }
  if (!(opt->weight_decay >= 0 && opt->weight_decay < INFINITY)) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "%s: weight_decay is %g: give 0 (none) or a "
                     "finite value above 0", fn, opt->weight_decay);
  }
  const char *k = opt->schedule;
  if (k != NULL && strcmp(k, "constant") != 0 && strcmp(k, "step") != 0 &&
      strcmp(k, "cosine") != 0) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "%s: schedule \"%s\": give NULL, \"constant\", "
                     "\"step\" or \"cosine\"", fn, k);
  }
  bool step = k != NULL && strcmp(k, "step") == 0, cosine = k != NULL && strcmp(k, "cosine") == 0;
  if (opt->warmup_steps < 0 || (step && (opt->step_size < 0 || !(opt->gamma >= 0) ||
                                         opt->gamma == INFINITY)) ||
      (cosine && (opt->total_steps < 1 || !(opt->min_lr >= 0 && opt->min_lr <= opt->lr)))) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "%s: schedule \"%s\" with warmup_steps %lld, "
                     "step_size %lld, gamma %g, total_steps %lld, min_lr %g: give warmup_steps "
                     ">= 0; for \"step\" a step_size >= 1 and a finite gamma above 0 (0 takes "
                     "1 and 0.1); for \"cosine\" total_steps >= 1 and min_lr in [0, lr]", fn,
                     k != NULL ? k : "constant", (long long)opt->warmup_steps,
                     (long long)opt->step_size, opt->gamma, (long long)opt->total_steps,
                     opt->min_lr);
  }
  return CT_OK;
}

static ct_status minimize(ct_nn *nn, const char *fn, const char *loss,
                          const ct_nn_optimizer *opt) {
  if (nn == NULL || opt == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "%s: nn or the options are NULL", fn);
  }
  ct_status s = ct__nn_check_name(fn, "the loss", loss);
  if (s == CT_OK) s = check_options(fn, opt);
  if (s != CT_OK) return s;
  if (nn->n_params == 0) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "%s: no trainable parameter yet: add the layers before the optimizer", fn);
  }
  nn_undo u;
  ct__nn_begin(nn, &u);
  char name[48];
  ct__nn_layer_name(nn, kinds[opt->kind], name, sizeof name);
  const char *lr_name = ct__nn_keep(nn, "%s.lr", name);
  static const int64_t one[1] = {1};
  if (lr_name == NULL || (s = state(nn, lr_name, one, 1, opt->lr)) != CT_OK) {
    ct__nn_fail(nn, &u);
    return ct_last_status();
  }
  size_t n = u.params_n; /* the parameters before this call (state is not trainable) */
  s = ct_program_append_backward(nn->main, loss, (const char *const *)nn->params, n);
  if (s == CT_OK) s = schedule(nn, opt, name, lr_name);
  for (size_t i = 0; s == CT_OK && i < n; i++) s = update(nn, opt, nn->params[i], lr_name);
  if (s != CT_OK) {
    ct__nn_fail(nn, &u);
    return ct_last_status();
  }
  return CT_OK;
}

ct_status ct_nn_sgd(ct_nn *nn, const char *loss, double lr) {
  return minimize(nn, "ct_nn_sgd", loss, &(ct_nn_optimizer){.kind = CT_NN_SGD, .lr = lr});
}

ct_status ct_nn_momentum(ct_nn *nn, const char *loss, double lr, double mu) {
  return minimize(nn, "ct_nn_momentum", loss,
                  &(ct_nn_optimizer){.kind = CT_NN_MOMENTUM, .lr = lr, .mu = mu});
}

ct_status ct_nn_adam(ct_nn *nn, const char *loss, double lr) {
  return minimize(nn, "ct_nn_adam", loss, &(ct_nn_optimizer){.kind = CT_NN_ADAM, .lr = lr});
}

ct_status ct_nn_minimize(ct_nn *nn, const char *loss, const ct_nn_optimizer *opt) {
  return minimize(nn, "ct_nn_minimize", loss, opt);
}
