/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/optimizer.c: the optimizer op types sgd, momentum and adam (PaddlePaddle's names,
 * slots, attributes and update rules): their shapes and checks.
 *
 *   sgd       Param, Grad, LearningRate -> ParamOut
 *             ParamOut = Param - lr Grad
 *   momentum  Param, Grad, Velocity, LearningRate -> ParamOut, VelocityOut; mu, use_nesterov
 *             VelocityOut = mu Velocity + Grad
 *             ParamOut = Param - lr VelocityOut, or with use_nesterov
 *             ParamOut = Param - lr (Grad + mu VelocityOut)
 *   adam      Param, Grad, LearningRate, Moment1, Moment2, Beta1Pow, Beta2Pow -> ParamOut,
 *             Moment1Out, Moment2Out, Beta1PowOut, Beta2PowOut; beta1, beta2, epsilon
 *             lr_t = lr sqrt(1 - Beta2Pow) / (1 - Beta1Pow)
 *             Moment1Out = beta1 Moment1 + (1 - beta1) Grad
 *             Moment2Out = beta2 Moment2 + (1 - beta2) Grad^2
 *             ParamOut = Param - lr_t Moment1Out / (sqrt(Moment2Out) + epsilon sqrt(1 - Beta2Pow))
 *             Beta1PowOut = Beta1Pow beta1, Beta2PowOut = Beta2Pow beta2
 *             (Beta1Pow and Beta2Pow start at beta1 and beta2: the powers of the first step)
 * Grad and the state (Velocity, Moment1, Moment2) have Param's dims and dtype; LearningRate,
 * Beta1Pow and Beta2Pow are one-element tensors of float32 or float64, whatever Param's dtype.
 * Every output may name its input (ParamOut = Param, in place): the framework then gives the
 * output a fresh block before the kernel runs, so no kernel reads what it overwrites.
 *   lr_schedule  Step -> LearningRate, StepOut; base_lr, kind, warmup_steps, step_size, gamma,
 *                total_steps, min_lr: the learning rate of step t (its doc below). */
#include <math.h>
#include <string.h>

#include "ops/defs.h"

static const ct_slot_def sgd_in[] = {{"Param", 0}, {"Grad", 0}, {"LearningRate", 0}};
static const ct_slot_def sgd_out[] = {{"ParamOut", 0}};
static const ct_slot_def mom_in[] = {
    {"Param", 0}, {"Grad", 0}, {"Velocity", 0}, {"LearningRate", 0}};
static const ct_slot_def mom_out[] = {{"ParamOut", 0}, {"VelocityOut", 0}};
static const ct_slot_def adam_in[] = {{"Param", 0},   {"Grad", 0},     {"LearningRate", 0},
                                      {"Moment1", 0}, {"Moment2", 0},  {"Beta1Pow", 0},
                                      {"Beta2Pow", 0}};
static const ct_slot_def adam_out[] = {{"ParamOut", 0},    {"Moment1Out", 0},
                                       {"Moment2Out", 0},  {"Beta1PowOut", 0},
                                       {"Beta2PowOut", 0}};

static const ct_attr_def mom_attrs[] = {
    {"mu", {.type = CT_ATTR_FLOAT, .u.f = 0.0}, true},
    {"use_nesterov", {.type = CT_ATTR_BOOL, .u.b = false}, false},
};
static const ct_attr_def adam_attrs[] = {
    {"beta1", {.type = CT_ATTR_FLOAT, .u.f = 0.9}, false},
    {"beta2", {.type = CT_ATTR_FLOAT, .u.f = 0.999}, false},
    {"epsilon", {.type = CT_ATTR_FLOAT, .u.f = 1e-8}, false},
};

/* Input `slot` has Param's dims and dtype (Grad and the state tensors). */
static ct_status check_like_param(const ct_kernel_ctx *c, size_t slot) {
  ct_status s = ct__k_check_dtype(c, slot, 0, c->dtype);
  if (s != CT_OK) return s;
  const ct_tensor *p = ct_kernel_in(c, CT__OPT_PARAM, 0), *t = ct_kernel_in(c, slot, 0);
  if (CT__LIKELY(ct_ddim_equal(p->dims, t->dims))) return CT_OK;
  char a[CT__DDIM_STR_CAP], b[CT__DDIM_STR_CAP];
  return ct_kernel_fail(c, CT_ERR_SHAPE,
                        "input %s variable '%s' is %s but input Param variable '%s' is %s: they "
                        "must have the same dims",
                        c->op->def->in[slot].name, ct_kernel_in_name(c, slot, 0),
                        ct_ddim_str(t->dims, a, sizeof a), ct_kernel_in_name(c, CT__OPT_PARAM, 0),
                        ct_ddim_str(p->dims, b, sizeof b));
}

/* Input `slot` is one float32 or float64 element (LearningRate, Beta1Pow, Beta2Pow). */
static ct_status check_scalar(const ct_kernel_ctx *c, size_t slot) {
  const ct_tensor *t = ct_kernel_in(c, slot, 0);
  if (t->dtype != CT_FLOAT32 && t->dtype != CT_FLOAT64) {
    return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH,
                          "input %s variable '%s' is %s: it must be float32 or float64; cast it",
                          c->op->def->in[slot].name, ct_kernel_in_name(c, slot, 0),
                          ct_dtype_name(t->dtype));
  }
  if (CT__LIKELY(t->numel == 1)) return CT_OK;
  char a[CT__DDIM_STR_CAP];
  return ct_kernel_fail(c, CT_ERR_SHAPE,
                        "input %s variable '%s' is %s: it must hold exactly one element (for "
                        "example dims [1])",
                        c->op->def->in[slot].name, ct_kernel_in_name(c, slot, 0),
                        ct_ddim_str(t->dims, a, sizeof a));
}

static ct_status sgd_infer(const ct_kernel_ctx *c) {
  ct_status s = check_like_param(c, CT__OPT_GRAD);
  if (s == CT_OK) s = check_scalar(c, CT__SGD_LR);
  if (s != CT_OK) return s;
  return ct__k_resize(c, CT__OPT_PARAM_OUT, 0, ct_kernel_in(c, CT__OPT_PARAM, 0)->dims);
}

static ct_status mom_infer(const ct_kernel_ctx *c) {
  ct_status s = check_like_param(c, CT__OPT_GRAD);
  if (s == CT_OK) s = check_like_param(c, CT__MOM_VELOCITY);
  if (s == CT_OK) s = check_scalar(c, CT__MOM_LR);
  if (s != CT_OK) return s;
  ct_ddim p = ct_kernel_in(c, CT__OPT_PARAM, 0)->dims;
  s = ct__k_resize(c, CT__OPT_PARAM_OUT, 0, p);
  return s == CT_OK ? ct__k_resize(c, CT__MOM_VELOCITY_OUT, 0, p) : s;
}

/* Attribute a (beta1 or beta2) is in [0, 1): the bias correction divides by 1 - beta^t. */
static ct_status check_beta(const ct_kernel_ctx *c, size_t a) {
  double v = c->attr[a].u.f;
  if (CT__LIKELY(v >= 0 && v < 1)) return CT_OK;
  return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                        "attribute '%s' is %g: it must be in [0, 1) (0.9 and 0.999 are usual)",
                        c->op->def->attr[a].name, v);
}

/* Input Beta1Pow or Beta2Pow (slot) holds beta^t in [0, 1): 1 (t = 0) would divide the bias
 * correction by zero and turn every parameter into inf. Checked where the value is readable on
 * the host (a CPU or pinned tensor); on a device the kernel trusts it. */
static ct_status check_pow(const ct_kernel_ctx *c, size_t slot) {
  const ct_tensor *t = ct_kernel_in(c, slot, 0);
  if (ct_tensor_place(t).kind == CT_DEVICE_CUDA) return CT_OK;
  const void *d = ct__k_in_data(t);
  double v = t->dtype == CT_FLOAT64 ? *(const double *)d : (double)*(const float *)d;
  if (CT__LIKELY(v >= 0 && v < 1)) return CT_OK;
  return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                        "input %s variable '%s' holds %g: it is beta^t, in [0, 1); start it at "
                        "beta (attribute %s), the power of the first step",
                        c->op->def->in[slot].name, ct_kernel_in_name(c, slot, 0), v,
                        slot == CT__ADAM_B1POW ? "beta1" : "beta2");
}

static ct_status adam_infer(const ct_kernel_ctx *c) {
  ct_status s = check_beta(c, CT__ADAM_BETA1);
  if (s == CT_OK) s = check_beta(c, CT__ADAM_BETA2);
  if (s == CT_OK) s = check_like_param(c, CT__OPT_GRAD);
  if (s == CT_OK) s = check_like_param(c, CT__ADAM_M1);
  if (s == CT_OK) s = check_like_param(c, CT__ADAM_M2);
  if (s == CT_OK) s = check_scalar(c, CT__ADAM_LR);
  if (s == CT_OK) s = check_scalar(c, CT__ADAM_B1POW);
  if (s == CT_OK) s = check_scalar(c, CT__ADAM_B2POW);
  if (s == CT_OK) s = check_pow(c, CT__ADAM_B1POW);
  if (s == CT_OK) s = check_pow(c, CT__ADAM_B2POW);
  if (s != CT_OK) return s;
  ct_ddim p = ct_kernel_in(c, CT__OPT_PARAM, 0)->dims;
  s = ct__k_resize(c, CT__OPT_PARAM_OUT, 0, p);
  if (s == CT_OK) s = ct__k_resize(c, CT__ADAM_M1_OUT, 0, p);
  if (s == CT_OK) s = ct__k_resize(c, CT__ADAM_M2_OUT, 0, p);
  if (s == CT_OK) {
    s = ct__k_resize(c, CT__ADAM_B1POW_OUT, 0, ct_kernel_in(c, CT__ADAM_B1POW, 0)->dims);
  }
  if (s == CT_OK) {
    s = ct__k_resize(c, CT__ADAM_B2POW_OUT, 0, ct_kernel_in(c, CT__ADAM_B2POW, 0)->dims);
  }
  return s;
}

/* ---- lr_schedule: Step -> LearningRate, StepOut ------------------------------------------ */

static const ct_slot_def sched_in[] = {{"Step", 0}};
static const ct_slot_def sched_out[] = {{"LearningRate", 0}, {"StepOut", 0}};
static const ct_attr_def sched_attrs[] = {
    {"base_lr", {.type = CT_ATTR_FLOAT, .u.f = 0.0}, true},
    {"kind", {.type = CT_ATTR_STRING, .u.s = "constant"}, false},
    {"warmup_steps", {.type = CT_ATTR_INT, .u.i = 0}, false},
    {"step_size", {.type = CT_ATTR_INT, .u.i = 1}, false},
    {"gamma", {.type = CT_ATTR_FLOAT, .u.f = 0.1}, false},
    {"total_steps", {.type = CT_ATTR_INT, .u.i = 1}, false},
    {"min_lr", {.type = CT_ATTR_FLOAT, .u.f = 0.0}, false},
};

/* The attributes describe a schedule: a kind it knows, a base above 0, and the kind's numbers. */
static ct_status check_schedule(const ct_kernel_ctx *c) {
  const char *kind = c->attr[CT__SCHED_KIND].u.s;
  double base = c->attr[CT__SCHED_BASE].u.f, gamma = c->attr[CT__SCHED_GAMMA].u.f;
  double min_lr = c->attr[CT__SCHED_MIN_LR].u.f;
  if (strcmp(kind, "constant") != 0 && strcmp(kind, "step") != 0 && strcmp(kind, "cosine") != 0) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT, "attribute kind is \"%s\": give "
                          "\"constant\", \"step\" or \"cosine\"", kind);
  }
  if (!(base > 0 && base < INFINITY)) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT, "attribute base_lr is %g: give a finite "
                          "learning rate above 0", base);
  }
  if (c->attr[CT__SCHED_WARMUP].u.i < 0) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT, "attribute warmup_steps is %lld: give 0 "
                          "(no warm-up) or more", (long long)c->attr[CT__SCHED_WARMUP].u.i);
  }
  if (strcmp(kind, "step") == 0 && (c->attr[CT__SCHED_STEP_SIZE].u.i < 1 ||
                                    !(gamma > 0 && gamma < INFINITY))) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT, "kind \"step\" with step_size %lld and "
                          "gamma %g: give a step_size of 1 or more and a finite gamma above 0",
                          (long long)c->attr[CT__SCHED_STEP_SIZE].u.i, gamma);
  }
  if (strcmp(kind, "cosine") == 0 && (c->attr[CT__SCHED_TOTAL].u.i < 1 ||
                                      !(min_lr >= 0 && min_lr <= base))) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT, "kind \"cosine\" with total_steps %lld "
                          "and min_lr %g: give total_steps of 1 or more and a min_lr in [0, "
                          "base_lr]", (long long)c->attr[CT__SCHED_TOTAL].u.i, min_lr);
  }
  return CT_OK;
}

static ct_status sched_infer(const ct_kernel_ctx *c) {
  ct_status s = check_schedule(c);
  if (s != CT_OK) return s;
  const ct_tensor *t = ct_kernel_in(c, CT__SCHED_STEP, 0);
  if (t->dtype != CT_INT64 || t->numel != 1) {
    char a[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH, "input Step variable '%s' is %s %s: give one "
                          "int64 element (the steps taken, starting at 0)",
                          ct_kernel_in_name(c, CT__SCHED_STEP, 0), ct_dtype_name(t->dtype),
                          ct_ddim_str(t->dims, a, sizeof a));
  }
  s = ct__k_resize(c, CT__SCHED_LR_OUT, 0, CT_DIMS(1));
  return s == CT_OK ? ct__k_resize(c, CT__SCHED_STEP_OUT, 0, t->dims) : s;
}

static const ct_op_def defs[] = {
    {.type = "sgd", .inputs = sgd_in, .n_inputs = 3, .outputs = sgd_out, .n_outputs = 1,
     .flags = CT_OP_PURE_INFER, .infer_shape = sgd_infer},
    {.type = "momentum", .inputs = mom_in, .n_inputs = 4, .outputs = mom_out, .n_outputs = 2,
     .attrs = mom_attrs, .n_attrs = 2, .flags = CT_OP_PURE_INFER, .infer_shape = mom_infer},
    {.type = "adam", .inputs = adam_in, .n_inputs = 7, .outputs = adam_out, .n_outputs = 5,
     .attrs = adam_attrs, .n_attrs = 3, .infer_shape = adam_infer}, /* reads values: not pure */
    {.type = "lr_schedule", .inputs = sched_in, .n_inputs = 1, .outputs = sched_out,
     .n_outputs = 2, .attrs = sched_attrs, .n_attrs = 7, .flags = CT_OP_PURE_INFER,
     .infer_shape = sched_infer},
};

const ct__def_table ct__optimizer_defs = CT__TABLE(defs);

static const ct__op_doc docs[] = {
    {"sgd", "One step of plain gradient descent: `ParamOut = Param - lr Grad`. Grad has Param's "
            "dims and dtype; LearningRate is a one-element float32 or float64 tensor (lr). "
            "ParamOut may be Param (in place). No state to start."},
    {"momentum", "One step of gradient descent with momentum: `VelocityOut = mu Velocity + "
                 "Grad`, then `ParamOut = Param - lr VelocityOut`, or with use_nesterov "
                 "`ParamOut = Param - lr (Grad + mu VelocityOut)`. Grad and Velocity have "
                 "Param's dims and dtype; LearningRate is a one-element float32 or float64 "
                 "tensor. Start Velocity at zeros of Param's dims; wire VelocityOut to Velocity "
                 "and ParamOut to Param so that the next step reads this one's."},
    {"adam", "One Adam step (Kingma and Ba, PaddlePaddle's form): `lr_t = lr sqrt(1 - "
             "Beta2Pow) / (1 - Beta1Pow)`, `Moment1Out = beta1 Moment1 + (1 - beta1) Grad`, "
             "`Moment2Out = beta2 Moment2 + (1 - beta2) Grad^2`, `ParamOut = Param - lr_t "
             "Moment1Out / (sqrt(Moment2Out) + epsilon sqrt(1 - Beta2Pow))`, `Beta1PowOut = "
             "Beta1Pow beta1`, `Beta2PowOut = Beta2Pow beta2`. Grad, Moment1 and Moment2 have "
             "Param's dims and dtype; LearningRate, Beta1Pow and Beta2Pow are one-element "
             "float32 or float64 tensors. Start Moment1 and Moment2 at zeros, Beta1Pow at beta1 "
             "and Beta2Pow at beta2 (the powers of the first step: 1 would divide by zero and "
             "is refused), and wire each ...Out to its input for the next step (corten/nn.h's "
             "optimizers do all of this)."},
    {"lr_schedule", "The learning rate of step t (Step, one int64 element, the steps taken so "
                    "far; start it at 0 and wire StepOut = t + 1 back to it) into LearningRate "
                    "(float32 [1]), computed in double: during warm-up (t < warmup_steps) "
                    "`base_lr (t + 1) / warmup_steps`; after it, with u = t - warmup_steps, "
                    "kind \"constant\" gives `base_lr`, \"step\" `base_lr gamma^floor(u / "
                    "step_size)` and \"cosine\" `min_lr + (base_lr - min_lr) (1 + cos(pi "
                    "min(u, total_steps) / total_steps)) / 2`. Append it before the update ops "
                    "that read LearningRate (corten/nn.h's optimizers do, given a schedule). A "
                    "negative Step is refused."},
};

const ct__doc_table ct__optimizer_docs = CT__TABLE(docs);
