/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs.h: the built-in op types as every backend sees them: their slot and attribute
 * indices, the op-type tables that ops/defs/ defines, and the plans both backends follow, so that
 * the CPU and CUDA kernels accept and refuse the same ops with the same messages.
 *
 * Backend-neutral: nothing here knows a device. ops/defs/<family>.c defines the op types of a
 * family (slots, attributes, infer-shape) and its plans; ops/cpu/<family>.c and
 * ops/cuda/<family>.c hold the kernels. */
#ifndef CORTEN_OPS_DEFS_H
#define CORTEN_OPS_DEFS_H

#include "ops/kernel.h"

/* ---- Slots and attributes, in the order the op types define them -------------------------- */

/* The slots most op types have: X; X and Y; X taking many variables; Out. */
extern const ct_slot_def ct__slot_x[1], ct__slot_xy[2], ct__slot_xs[1], ct__slot_out[1];
enum { CT__IN_X = 0, CT__IN_Y = 1 };
enum { CT__OUT = 0 };

enum { CT__SCALE_SCALE, CT__SCALE_BIAS, CT__SCALE_BIAS_AFTER };  /* scale */
enum { CT__CAST_DTYPE };                                         /* cast */
enum { CT__MM_TRANSPOSE_X, CT__MM_TRANSPOSE_Y };                 /* matmul */
enum { CT__FILL_SHAPE, CT__FILL_VALUE, CT__FILL_DTYPE };         /* fill_constant */
enum { CT__FILL_LIKE_VALUE, CT__FILL_LIKE_ONE_ELEMENT };          /* fill_any_like */
/* uniform_random (A = min, B = max) and gaussian_random (A = mean, B = std). */
enum { CT__RND_SHAPE, CT__RND_A, CT__RND_B, CT__RND_SEED, CT__RND_DTYPE };
enum { CT__RS_DIM, CT__RS_KEEP_DIM };                            /* reduce_sum */
enum { CT__SOFTMAX_AXIS };                                       /* softmax */
enum { CT__RESHAPE_SHAPE };                                      /* reshape */
enum { CT__TRANSPOSE_AXIS };                                     /* transpose */
enum { CT__CONCAT_AXIS };                                        /* concat */

/* Grad op types: a binary op's X, Y, Out@GRAD -> X@GRAD, Y@GRAD; a unary op's (Out or X),
 * Out@GRAD -> X@GRAD. */
enum { CT__G_X = 0, CT__G_Y = 1, CT__G_DOUT = 2 };
enum { CT__G_DX = 0, CT__G_DY = 1 };
enum { CT__G_UNARY_IN = 0, CT__G_UNARY_DOUT = 1 }; /* the unary ones' inputs */

/* ---- The op-type tables of ops/defs, registered by ops/backends.c ------------------------- */

struct ct__def_table {
  const ct_op_def *v;
  size_t n;
};

extern const ct__def_table ct__elementwise_defs, ct__matmul_defs, ct__random_defs,
    ct__reduce_defs, ct__shape_defs, ct__recurrent_defs;
extern const ct__def_table ct__elementwise_grad_defs;
extern const ct__def_table ct__recurrent_grad_defs;

/* The grad-op makers of the built-in types (ops/defs/<family>_grad.c), which their ct_op_def
 * entries name. */
ct_status ct__grad_binary(ct_grad_ctx *g);
ct_status ct__grad_unary(ct_grad_ctx *g);
ct_status ct__grad_scale(ct_grad_ctx *g);
ct_status ct__grad_assign(ct_grad_ctx *g);
ct_status ct__grad_none(ct_grad_ctx *g); /* an output that does not depend on the inputs' values */

/* Wires input `slot` of a grad op to name, the failure recorded when name is NULL (a maker's
 * request that failed): makers chain it as `s = ct__grad_wire_in(op, "X", ct_grad_input(...))`. */
ct_status ct__grad_wire_in(ct_op *op, const char *slot, const char *name);
ct_status ct__grad_recurrent(ct_grad_ctx *g); /* ops/recurrent_grad.c */

/* The kernels that never touch element data, so one function serves every place (ops/backends.c
 * registers them for each backend): reshape makes Out share X's memory (ops/defs/shape.c);
 * recurrent runs its step program at the op's place (ops/recurrent.c). */
ct_status ct__reshape_kernel(const ct_kernel_ctx *c);
ct_status ct__recurrent_kernel(const ct_kernel_ctx *c);
ct_status ct__recurrent_grad_kernel(const ct_kernel_ctx *c); /* ops/recurrent_grad.c */

/* ---- Plans --------------------------------------------------------------------------------- */

/* A binary elementwise op's walk over Out: dims aligned at the end, stride 0 where an input is
 * broadcast, neighbouring dims merged where both inputs stay contiguous (rank at least 1). */
typedef struct ct__bcast_plan {
  int rank;
  int64_t d[CT_MAX_RANK];
  int64_t sx[CT_MAX_RANK], sy[CT_MAX_RANK];
} ct__bcast_plan;

void ct__plan_bcast(ct_ddim x, ct_ddim y, ct_ddim out, ct__bcast_plan *p);

/* The shape of a matmul (numpy rules, see ops/defs/matmul.c): batch dims of the result, and each
 * operand's batch strides in matrices (0 where broadcast). */
typedef struct ct__mm_shape {
  int64_t m, n, k;
  int batch_rank;
  int64_t batch[CT_MAX_RANK];
  int64_t bx[CT_MAX_RANK], by[CT_MAX_RANK];
  int64_t n_batch;
  ct_ddim out;
} ct__mm_shape;

/* Plans the matmul of inputs X and Y under transpose_x / transpose_y; CT_ERR_SHAPE or
 * CT_ERR_OUT_OF_RANGE naming the op otherwise. */
ct_status ct__mm_plan(const ct_kernel_ctx *c, ct__mm_shape *s);

/* Over an operand's batch strides (s->bx or s->by): whether they are all zero (zero set: one
 * matrix serves the whole batch) or all nonzero (a matrix of its own per batch entry, in batch
 * order); and whether some batch entries share one matrix (its gradient then sums over them). */
bool ct__mm_batch_strides_all(const ct__mm_shape *s, const int64_t *stride, bool zero);
bool ct__mm_batch_repeats(const ct__mm_shape *s, const int64_t *stride);

/* The random ops' checks and values: fill_constant's value fits the kernel's dtype; uniform's
 * min <= max or gaussian's std >= 0; the run's seed (a fresh one for seed 0); the values of
 * dtype t that uniform values in [lo, hi) are clamped to. */
ct_status ct__fill_check(const ct_kernel_ctx *c, double v);
ct_status ct__random_check_range(const ct_kernel_ctx *c, bool gaussian);
uint64_t ct__random_seed(const ct_kernel_ctx *c);
void ct__uniform_bounds(ct_dtype t, double lo, double hi, double *vmin, double *vmax);

/* reduce_sum's summed dims: flags over X's rank from attribute `dim` (all dims when it is
 * empty); CT_ERR_OUT_OF_RANGE or CT_ERR_INVALID_ARGUMENT naming the op otherwise. */
ct_status ct__rs_dims(const ct_kernel_ctx *c, int rank, bool red[CT_MAX_RANK]);

/* transpose's permutation: attribute `axis` normalised, or the error naming the op. */
ct_status ct__tr_perm(const ct_kernel_ctx *c, int perm[CT_MAX_RANK]);

/* transpose's walk over Out in memory order: its dims with extent-1 dims dropped and neighbours
 * merged where X's strides continue across them; is is each dim's stride in X (elements). The
 * product of d is X's element count. */
typedef struct ct__tr_plan {
  int rank; /* at least 1 */
  int64_t d[CT_MAX_RANK], is[CT_MAX_RANK];
} ct__tr_plan;

void ct__tr_make_plan(ct_ddim x, const int perm[CT_MAX_RANK], ct__tr_plan *p);

/* ---- The gradients of matmul, the reduce family and the shape family ---------------------- */

extern const ct__def_table ct__matmul_grad_defs, ct__reduce_grad_defs, ct__shape_grad_defs;

/* Makers shared across families: ct__grad_binary also serves matmul (matmul_grad),
 * ct__grad_unary every "<type>_grad" of one input (read from Out: softmax; read from X: cast,
 * mean, reduce_sum, reshape, transpose), ct__grad_assign sum (one assign per input);
 * ct__grad_concat appends concat_grad. Each copies the forward op's attributes that its grad op
 * type also has. */
ct_status ct__grad_concat(ct_grad_ctx *g);

/* The name a grad op's many-variable output slot takes where an entry is not wanted
 * (PaddlePaddle's empty variable): concat_grad writes no X@GRAD entry of that name. */
#define CT__GRAD_EMPTY "@EMPTY@"

/* Checks that input Out@GRAD (slot, 0) has dims want, those of the forward op's Out, which
 * `what` describes ("the product of X and Y"); CT_ERR_SHAPE naming the op and variable. */
ct_status ct__grad_check_dout(const ct_kernel_ctx *c, size_t slot, ct_ddim want,
                              const char *what);

/* A binary grad op's optional outputs X@GRAD and Y@GRAD (CT__G_DX, CT__G_DY) allocated with the
 * kernel's dtype at the op's place, their data in *dx and *dy: NULL for an unwired slot (that
 * gradient is not wanted). CT_OK or the allocation's failure, naming the op. */
ct_status ct__grad_outs(const ct_kernel_ctx *c, void **dx, void **dy);

/* reduce_sum's Out dims for X of dims x under attributes dim and keep_dim (ct__rs_dims). */
ct_status ct__rs_out_dims(const ct_kernel_ctx *c, ct_ddim x, ct_ddim *out);

/* concat's Out dims from its inputs X (slot 0) along attribute axis, normalised into *axis;
 * CT_ERR_SHAPE, CT_ERR_OUT_OF_RANGE or CT_ERR_TYPE_MISMATCH naming the op otherwise. */
ct_status ct__concat_dims(const ct_kernel_ctx *c, int *axis, ct_ddim *out);

/* Makes output (0, 0) a view of `from`'s memory with dims d (reshape, reshape_grad); an
 * external output gets a copy of the bytes instead. */
ct_status ct__share_as(const ct_kernel_ctx *c, const ct_tensor *from, ct_ddim d);

/* reshape_grad's kernel, for every place like reshape's: X@GRAD shares Out@GRAD's memory with
 * X's dims (ops/defs/shape_grad.c). */
ct_status ct__reshape_grad_kernel(const ct_kernel_ctx *c);

/* ---- Losses and optimizers (ops/defs/loss.c, ops/defs/optimizer.c) ------------------------ */

/* softmax_with_cross_entropy: Logits, Label -> Softmax, Loss; its grad op:
 * Softmax, Label, Loss@GRAD -> Logits@GRAD (Softmax first, so the kernel is chosen by the
 * float dtype). */
enum { CT__SCE_LOGITS = 0, CT__SCE_LABEL = 1 };
enum { CT__SCE_SOFTMAX = 0, CT__SCE_LOSS = 1 };
enum { CT__SCE_SOFT_LABEL, CT__SCE_IGNORE_INDEX };
enum { CT__SCEG_SOFTMAX = 0, CT__SCEG_LABEL = 1, CT__SCEG_DLOSS = 2 };
enum { CT__SCEG_DLOGITS = 0 };
extern const ct__def_table ct__loss_defs;
ct_status ct__grad_softmax_with_cross_entropy(ct_grad_ctx *g);

/* Checks n hard labels against `classes`: each in [0, classes) or equal to attribute
 * ignore_index; CT_ERR_OUT_OF_RANGE naming the op, input (slot) variable, row and value
 * otherwise. */
ct_status ct__sce_check_labels(const ct_kernel_ctx *c, size_t slot, const int64_t *labels,
                               int64_t n, int64_t classes);

/* The optimizers' slots: every one starts with Param, Grad and writes ParamOut first. */
enum { CT__OPT_PARAM = 0, CT__OPT_GRAD = 1 };
enum { CT__OPT_PARAM_OUT = 0 };
enum { CT__SGD_LR = 2 };
enum { CT__MOM_VELOCITY = 2, CT__MOM_LR = 3 };
enum { CT__MOM_VELOCITY_OUT = 1 };
enum { CT__MOM_MU, CT__MOM_USE_NESTEROV };
enum { CT__ADAM_LR = 2, CT__ADAM_M1 = 3, CT__ADAM_M2 = 4, CT__ADAM_B1POW = 5, CT__ADAM_B2POW = 6 };
enum { CT__ADAM_M1_OUT = 1, CT__ADAM_M2_OUT = 2, CT__ADAM_B1POW_OUT = 3, CT__ADAM_B2POW_OUT = 4 };
enum { CT__ADAM_BETA1, CT__ADAM_BETA2, CT__ADAM_EPSILON };
extern const ct__def_table ct__optimizer_defs;

/* ---- Collectives (ops/defs/comm.c) ---------------------------------------------------------- */

extern const ct__def_table ct__comm_defs;

/* The kernel of every collective op type: engine (CT__ENGINE_MPI or CT__ENGINE_NCCL, from
 * comm/comm_impl.h) is the one the backend's place needs; the op's communicator must be of it. */
ct_status ct__comm_kernel(const ct_kernel_ctx *c, int engine);

/* A backend's kernel sets of the collectives: fn (calling ct__comm_kernel) for every dtype. */
#define CT__COMM_KERNEL_SETS(fn)                                                          \
  {"c_allreduce_sum", CT__KERNELS([0] = fn)}, {"c_allreduce_max", CT__KERNELS([0] = fn)}, \
      {"c_broadcast", CT__KERNELS([0] = fn)}, {"c_allgather", CT__KERNELS([0] = fn)},     \
      {"c_reducescatter", CT__KERNELS([0] = fn)}, {"c_reduce_sum", CT__KERNELS([0] = fn)}

#endif /* CORTEN_OPS_DEFS_H */
