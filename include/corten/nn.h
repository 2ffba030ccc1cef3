/* SPDX-License-Identifier: Apache-2.0 */
/* corten/nn.h: a builder of programs by layers: parameters made and initialised for you,
 * predictable names, losses, and optimizers that add the backward pass, the updates and their
 * state in one call.
 *
 *   ct_nn *nn = ct_nn_new(scope, 42);                       // a startup and a main program
 *   const char *h = ct_nn_linear(nn, "x", 64, 128, &(ct_nn_opts){.act = "relu"});  // fc_0
 *   const char *y = ct_nn_linear(nn, h, 128, 10, NULL);     // fc_1: y = h fc_1.w + fc_1.b
 *   const char *loss = ct_nn_cross_entropy(nn, y, "label"); // mean softmax cross-entropy
 *   ct_nn_adam(nn, loss, 1e-3);                             // backward, adam on every weight
 *   ct_nn_run_startup(nn, ct_cpu());                        // the weights, adam's state
 *   ct_executor *step = ct_executor_new(ct_nn_main(nn), scope, ct_cpu());  // one step a run
 *
 * Names: each layer kind counts its calls: fc_0, fc_1, conv2d_0, ... and names its parameters
 * <layer>.w and <layer>.b (batch_norm: .scale, .bias, .mean, .var; embedding: .w), its output
 * <layer>.out (an activation's: <layer>.act). Every op a layer adds goes to the main program,
 * every initialiser to the startup program, which runs once before training (its ops fill the
 * parameters with seeded random values: corten's Philox, so a seed gives the same weights on
 * every machine). The programs are ordinary ones: append to them, save them, export them.
 *
 * Errors: a layer returns NULL with the last error set (CT_ERR_INVALID_ARGUMENT naming the
 * argument: a NULL or empty input name, a size below 1, an unknown activation; or what the op
 * layer said); nothing is added to either program then. */
#ifndef CORTEN_NN_H
#define CORTEN_NN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <corten/export.h>
#include <corten/program.h>
#include <corten/scope.h>
#include <corten/status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_nn ct_nn;

/* How a parameter starts. fan_in and fan_out are a weight's inputs and outputs per output
 * element (a linear layer's in and out; a convolution's in_channels*k*k and out_channels*k*k). */
typedef enum ct_nn_init_kind {
  CT_NN_INIT_DEFAULT = 0,    /* weights as PyTorch's Linear and Conv2d: uniform in
                                +-1/sqrt(fan_in); biases zero (PyTorch draws those too) */
  CT_NN_INIT_XAVIER_UNIFORM, /* uniform in +-a*sqrt(6/(fan_in+fan_out)) (a: the gain, 0 = 1) */
  CT_NN_INIT_KAIMING_UNIFORM,/* uniform in +-sqrt(6/fan_in) (relu's gain), times a when a > 0 */
  CT_NN_INIT_NORMAL,         /* normal with mean a and standard deviation b */
  CT_NN_INIT_UNIFORM,        /* uniform in [a, b) */
  CT_NN_INIT_CONSTANT,       /* a everywhere */
  CT_NN_INIT_ZEROS,
} ct_nn_init_kind;

typedef struct ct_nn_init {
  ct_nn_init_kind kind;
  double a, b;
} ct_nn_init;

/* A layer's options; NULL or all zero: no activation, default initialisers, a bias. */
typedef struct ct_nn_opts {
  const char *act;   /* applied to the output: NULL, "relu", "tanh", "sigmoid" or "gelu" */
  ct_nn_init weight; /* the weight's initialiser */
  ct_nn_init bias;   /* the bias's */
  bool no_bias;      /* no bias parameter */
} ct_nn_opts;

/* A builder over scope (which will hold the parameters), with its random seed. Owned by the
 * caller: ct_nn_free. NULL with CT_ERR_INVALID_ARGUMENT (scope NULL) or CT_ERR_OUT_OF_MEMORY. */
CT_NODISCARD CT_API ct_nn *ct_nn_new(ct_scope *scope, uint64_t seed);
/* Frees the builder and its two programs (the scope and its variables stay). NULL: no-op. */
CT_API void ct_nn_free(ct_nn *nn);

/* The programs, owned by nn: the startup (initialisers, run once) and the main one. */
CT_API ct_program *ct_nn_startup(ct_nn *nn);
CT_API ct_program *ct_nn_main(ct_nn *nn);
/* Runs the startup program once over the builder's scope at place (an executor made and freed
 * here); the error of the run otherwise. */
CT_API ct_status ct_nn_run_startup(ct_nn *nn, ct_place place);

/* The trainable parameters so far, in the order the layers made them ("fc_0.w", "fc_0.b", ...);
 * NULL past the end. Owned by nn. */
CT_API size_t ct_nn_param_count(const ct_nn *nn);
CT_API const char *ct_nn_param(const ct_nn *nn, size_t i);

/* ---- Layers: each returns its output variable's name (owned by nn), NULL on failure -------- */

/* fc_k: y = x W + b over the last dim of x, W [in, out], b [out]. */
CT_API const char *ct_nn_linear(ct_nn *nn, const char *x, int64_t in, int64_t out,
                                const ct_nn_opts *o);
/* conv2d_k: NCHW convolution of in channels to out, a k x k filter [out, in, k, k], stride and
 * padding (both sides) alike in height and width, and a bias [out]. */
CT_API const char *ct_nn_conv2d(ct_nn *nn, const char *x, int64_t in, int64_t out, int k,
                                int stride, int padding, const ct_nn_opts *o);
/* pool_k: max (max true) or average pooling, a k x k window moving by stride (no parameters). */
CT_API const char *ct_nn_pool2d(ct_nn *nn, const char *x, bool max, int k, int stride);
/* flatten_k: [N, ...] to [N, rest]. */
CT_API const char *ct_nn_flatten(ct_nn *nn, const char *x);
/* act_k: the activation ("relu", "tanh", "sigmoid", "gelu") of x. */
CT_API const char *ct_nn_activation(ct_nn *nn, const char *x, const char *act);
/* batch_norm_k over the channels (dim 1) of x: scale (ones), bias (zeros) trainable; running
 * mean and variance (zeros, ones) updated with momentum 0.9 while training. training false:
 * normalises with the running statistics (inference). */
CT_API const char *ct_nn_batch_norm(ct_nn *nn, const char *x, int64_t channels, bool training);
/* layer_norm_k over the last dim of x, of size n: scale (ones) and bias (zeros). */
CT_API const char *ct_nn_layer_norm(ct_nn *nn, const char *x, int64_t n);
/* embedding_k: rows of w [count, dim] (normal, std 1, as PyTorch's) picked by the int64 ids. */
CT_API const char *ct_nn_embedding(ct_nn *nn, const char *ids, int64_t count, int64_t dim);
/* dropout_k: zeroes each element with probability p while training, scaling the rest by
 * 1/(1-p); the identity when training is false. */
CT_API const char *ct_nn_dropout(ct_nn *nn, const char *x, double p, bool training);

/* lstm_k / gru_k: one recurrent layer over x, [T, N, in] ([N, T, in] with batch_first), the ONNX
 * LSTM and GRU ops (gru with linear_before_reset: PyTorch's candidate), their weights <layer>.w
 * [1, G h, in], .r [1, G h, h] and .b [1, 2 G h] (G 4 or 3) uniform in +-1/sqrt(hidden), as
 * PyTorch's. Returns the output <layer>.out, [T, N, hidden] ([N, T, hidden]); the last hidden
 * state is <layer>.h, [N, hidden] (lstm's last cell state <layer>.last_c, [1, N, hidden]). */
CT_API const char *ct_nn_lstm(ct_nn *nn, const char *x, int64_t in, int64_t hidden,
                              bool batch_first);
CT_API const char *ct_nn_gru(ct_nn *nn, const char *x, int64_t in, int64_t hidden,
                             bool batch_first);

/* ---- Losses: the loss variable's name ------------------------------------------------------- */

/* The mean over the rows of softmax cross-entropy of logits [N, C] against int64 labels [N, 1]
 * (loss_k). */
CT_API const char *ct_nn_cross_entropy(ct_nn *nn, const char *logits, const char *labels);
/* The mean squared difference of prediction and target (loss_k). */
CT_API const char *ct_nn_mse(ct_nn *nn, const char *prediction, const char *target);

/* ---- Optimizers: minimize the loss over every trainable parameter made so far ---------------
 * Each appends ct_program_append_backward(loss, parameters) and one update op per parameter to
 * the main program, and the optimizer's state to the startup program: the learning rate in
 * <opt>.lr (a float32 [1] variable: change it between runs for a schedule), moments or
 * velocities named <param>.<state>. The update formulas are the ops' (docs/ops.md).
 * Errors: CT_ERR_INVALID_ARGUMENT (nn or loss NULL, a learning rate not above 0, no parameter),
 * CT_ERR_UNSUPPORTED (an op on the path without a gradient), CT_ERR_OUT_OF_MEMORY; the main
 * program is left as it was. */
CT_API ct_status ct_nn_sgd(ct_nn *nn, const char *loss, double lr);
CT_API ct_status ct_nn_momentum(ct_nn *nn, const char *loss, double lr, double mu);
CT_API ct_status ct_nn_adam(ct_nn *nn, const char *loss, double lr);

/* The same with every option: weight decay and a learning-rate schedule.
 *   weight_decay  L2 decay: before its update each parameter's gradient becomes
 *                 `Grad + weight_decay Param` (a scale and an elementwise_add in the main
 *                 program); 0: none.
 *   schedule      NULL or "constant": <opt>.lr stays lr (the caller may still write it);
 *                 "step" or "cosine": an lr_schedule op (docs/ops.md) before the updates
 *                 writes <opt>.lr from the steps taken, counted in <opt>.step (int64 [1],
 *                 0 after the startup program); warmup_steps > 0 adds a linear warm-up to any
 *                 of them. step_size and gamma ("step"; 0 takes 1 and 0.1), total_steps (at
 *                 least 1) and min_lr ("cosine") are the op's attributes. A schedule op runs on
 *                 the CPU only for now.
 * Errors as above, and CT_ERR_INVALID_ARGUMENT for an unknown kind or schedule, a negative or
 * non-finite weight_decay, or a schedule's numbers out of range (the op's checks). */
typedef enum ct_nn_optimizer_kind { CT_NN_SGD, CT_NN_MOMENTUM, CT_NN_ADAM } ct_nn_optimizer_kind;
typedef struct ct_nn_optimizer {
  ct_nn_optimizer_kind kind;
  double lr;           /* the (base) learning rate, above 0 */
  double mu;           /* momentum's */
  double weight_decay; /* >= 0 */
  const char *schedule;
  int64_t warmup_steps, step_size, total_steps;
  double gamma, min_lr;
} ct_nn_optimizer;
CT_API ct_status ct_nn_minimize(ct_nn *nn, const char *loss, const ct_nn_optimizer *opt);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_NN_H */
