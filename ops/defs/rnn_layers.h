/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/rnn_layers.h: what the op types simple_rnn, gru and lstm (ops/defs/rnn_layers.c),
 * their grad types (rnn_layers_grad.c) and their kernels (ops/cpu/rnn_layers*.c) share: slot and
 * attribute indices and the plan every backend follows.
 *
 * The three types take the same slots in the same order (lstm has two more) and the same
 * attributes (gru and lstm have one more each), so one plan and one kernel serve them all. */
#ifndef CORTEN_OPS_DEFS_RNN_LAYERS_H
#define CORTEN_OPS_DEFS_RNN_LAYERS_H

#include "ops/defs.h"

/* The forward inputs. simple_rnn and gru stop at InitH (6 slots); lstm adds InitC and P. */
enum {
  CT__RL_X = 0,
  CT__RL_W = 1,
  CT__RL_R = 2,
  CT__RL_B = 3,
  CT__RL_SEQ = 4,
  CT__RL_INIT_H = 5,
  CT__RL_INIT_C = 6,
  CT__RL_P = 7,
};
/* The forward outputs (LastC: lstm only). */
enum { CT__RL_OUT = 0, CT__RL_LAST_H = 1, CT__RL_LAST_C = 2 };
/* The grad types' inputs: the forward inputs (n_in of them: 6 or 8), then the gradients of the
 * forward outputs at n_in + CT__RL_OUT ... . Their outputs: the gradients of the forward
 * inputs but SequenceLength, in this order. */
enum {
  CT__RLG_DX = 0,
  CT__RLG_DW = 1,
  CT__RLG_DR = 2,
  CT__RLG_DB = 3,
  CT__RLG_DINIT_H = 4,
  CT__RLG_DINIT_C = 5,
  CT__RLG_DP = 6,
};
/* The attributes: the common ones, then gru's linear_before_reset or lstm's input_forget, then
 * the activations (simple_rnn: activation; gru: gate_activation, activation; lstm:
 * gate_activation, candidate_activation, cell_activation) and activation_alpha, activation_beta.
 * The plan reads them by name order from CT__RL_HIDDEN_SIZE on. */
enum {
  CT__RL_HIDDEN_SIZE,
  CT__RL_DIRECTION,
  CT__RL_TIME_MAJOR,
  CT__RL_CLIP,
  CT__RL_LINEAR_BEFORE_RESET,
  CT__RL_INPUT_FORGET = CT__RL_LINEAR_BEFORE_RESET,
};

typedef enum ct__rl_kind { CT__RL_RNN, CT__RL_GRU, CT__RL_LSTM } ct__rl_kind;

/* The activations a layer may apply (ONNX's list), each with its alpha and beta. */
typedef enum ct__rl_act {
  CT__ACT_SIGMOID,
  CT__ACT_TANH,
  CT__ACT_RELU,
  CT__ACT_LEAKY_RELU,       /* x >= 0 ? x : alpha x */
  CT__ACT_THRESHOLDED_RELU, /* x > alpha ? x : 0 */
  CT__ACT_SCALED_TANH,      /* alpha tanh(beta x) */
  CT__ACT_HARD_SIGMOID,     /* min(max(alpha x + beta, 0), 1) */
  CT__ACT_ELU,              /* x >= 0 ? x : alpha (e^x - 1) */
  CT__ACT_SOFTSIGN,         /* x / (1 + |x|) */
  CT__ACT_SOFTPLUS,         /* log(1 + e^x) */
  CT__ACT_AFFINE,           /* alpha x + beta */
  CT__ACT_COUNT
} ct__rl_act;

/* The name of activation a (corten's: "sigmoid", "leaky_relu" ...), and its default alpha
 * and beta (ONNX's operators' defaults; 0 where it takes none). */
extern const char *const ct__rl_act_names[CT__ACT_COUNT];
extern const double ct__rl_act_alpha[CT__ACT_COUNT], ct__rl_act_beta[CT__ACT_COUNT];

/* A recurrent layer's run: t steps over n sequences of i features, h hidden units in each of
 * `dirs` directions (2: forward then reverse), `gates` blocks of h rows in W and R (1, 3, 4).
 * X is [t, n, i] when time_major, else [n, t, i]; Out [t, dirs, n, h] or [n, t, dirs, h]; the
 * states [dirs, n, h] or [n, dirs, h]. */
typedef struct ct__rl_plan {
  ct__rl_kind kind;
  int gates;
  int64_t t, n, i, h, dirs;
  bool reverse;     /* the one direction runs backwards (direction "reverse") */
  bool time_major;
  bool lbr;         /* gru: linear_before_reset */
  double clip;      /* 0: none */
  size_t n_in;      /* the forward type's input slots: 6, or 8 for lstm */
  /* The activations: f (the gates; simple_rnn's only one), g (gru's and lstm's candidate),
   * h (lstm's of the cell), with their alpha and beta. */
  ct__rl_act act[3];
  double alpha[3], beta[3];
  bool grad;        /* planned for a grad type (its output gradients follow the inputs) */
} ct__rl_plan;

/* Plans a forward op (grad false) or a grad op (true) of kind k: checks every input's dtype
 * (the kernel's) and dims and the attributes; CT_ERR_SHAPE, CT_ERR_TYPE_MISMATCH or
 * CT_ERR_INVALID_ARGUMENT naming the op, the slot and the variable otherwise. */
ct_status ct__rl_plan_make(const ct_kernel_ctx *c, ct__rl_kind k, bool grad, ct__rl_plan *p);

/* The dims of a state ([dirs, n, h], or [n, dirs, h] when not time major) and of Out. */
ct_ddim ct__rl_state_dims(const ct__rl_plan *p);
ct_ddim ct__rl_out_dims(const ct__rl_plan *p);

/* The sequence length of entry b as SequenceLength's tensor holds it (int32 or int64). */
static inline int64_t ct__rl_seq_at(const void *v, ct_dtype dt, int64_t b) {
  return dt == CT_INT32 ? ((const int32_t *)v)[b] : ((const int64_t *)v)[b];
}

/* Checks SequenceLength's values, when wired: each in [0, t]; CT_ERR_OUT_OF_RANGE naming the
 * op, the variable, the entry and its value otherwise. Read on the host by the kernel before
 * it writes anything. */
ct_status ct__rl_check_seq(const ct_kernel_ctx *c, const ct__rl_plan *p);

/* The grad types (ops/defs/rnn_layers_grad.c), listed in ct__rnn_layers_defs with the forward
 * types: their slots (the forward types' inputs and output gradients; the input gradients), and
 * infer-shape, which plans as the forward type and gives each input gradient its input's dims.
 * The maker ct__grad_rnn_layer serves the three forward types. */
extern const ct_slot_def ct__rl_grad_in[3][11], ct__rl_grad_out[7];
ct_status ct__rl_grad_infer_rnn(const ct_kernel_ctx *c);
ct_status ct__rl_grad_infer_gru(const ct_kernel_ctx *c);
ct_status ct__rl_grad_infer_lstm(const ct_kernel_ctx *c);
ct_status ct__grad_rnn_layer(ct_grad_ctx *g);

#endif /* CORTEN_OPS_DEFS_RNN_LAYERS_H */
