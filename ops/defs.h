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

#include <math.h>

#include "ops/kernel.h"

/* ---- Slots and attributes, in the order the op types define them -------------------------- */

/* The slots most op types have: X; X and Y; X taking many variables; Out. */
extern const ct_slot_def ct__slot_x[1], ct__slot_xy[2], ct__slot_xs[1], ct__slot_out[1];
enum { CT__IN_X = 0, CT__IN_Y = 1 };
enum { CT__OUT = 0 };

enum { CT__SCALE_SCALE, CT__SCALE_BIAS, CT__SCALE_BIAS_AFTER };  /* scale */
enum { CT__CAST_DTYPE };                                         /* cast */
enum { CT__MM_TRANSPOSE_X, CT__MM_TRANSPOSE_Y };                 /* matmul */
/* matmul_fusion (ops/passes.c makes it): matmul's slots and attributes, then these. */
enum { CT__MMF_BIAS = 2 };
enum { CT__MMF_ACTIVATION = 2, CT__MMF_CLIP_MIN = 3, CT__MMF_CLIP_MAX = 4 };
/* A fused op's string attribute `activation` (index attr) is identity, relu or clip; else
 * CT_ERR_INVALID_ARGUMENT naming it (ops/defs/conv.c). */
ct_status ct__fusion_act_check(const ct_kernel_ctx *c, size_t attr);
/* attention (ops/passes_attention.c makes it): Q and K first with matmul's transposes at
 * matmul's indices, so that ct__mm_plan plans Q K. */
enum { CT__ATT_Q, CT__ATT_K, CT__ATT_V, CT__ATT_SCALE, CT__ATT_MASK };
enum { CT__ATT_TRANSPOSE_Q, CT__ATT_TRANSPOSE_K, CT__ATT_TRANSPOSE_V, CT__ATT_SCALE_MODE,
       CT__ATT_MASK_FIRST, CT__ATT_AXIS, CT__ATT_K_RANK };
enum { CT__ATT_NONE, CT__ATT_MUL, CT__ATT_RMUL, CT__ATT_DIV }; /* scale_mode's values */
/* decomposed_layer_norm (ops/passes_norm.c makes it); ct__dnorm_check: its dims' checks. */
enum { CT__DN_X, CT__DN_EXPONENT, CT__DN_EPSILON, CT__DN_SCALE, CT__DN_BIAS };
enum { CT__DN_EPSILON_FIRST, CT__DN_SCALE_FIRST, CT__DN_BIAS_FIRST };
ct_status ct__dnorm_check(const ct_kernel_ctx *c);
enum { CT__FILL_SHAPE, CT__FILL_VALUE, CT__FILL_DTYPE };         /* fill_constant */
enum { CT__FILL_LIKE_VALUE, CT__FILL_LIKE_ONE_ELEMENT };          /* fill_any_like */
/* uniform_random (A = min, B = max) and gaussian_random (A = mean, B = std). */
enum { CT__RND_SHAPE, CT__RND_A, CT__RND_B, CT__RND_SEED, CT__RND_DTYPE };
enum { CT__RS_DIM, CT__RS_KEEP_DIM };                            /* reduce_sum */
enum { CT__SOFTMAX_AXIS };                                       /* softmax */
enum { CT__RESHAPE_SHAPE, CT__RESHAPE_ALLOWZERO };               /* reshape */
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

/* What a built-in op type computes, written beside its definition (ct_op_type_doc and
 * `corten ops` give it): the formula or a sentence, its inputs' dims and dtypes, and for an
 * optimizer how to start its state. A family's docs are a table CT__TABLE(docs) makes. */
typedef struct ct__op_doc {
  const char *type, *text;
} ct__op_doc;
typedef struct ct__doc_table {
  const ct__op_doc *v;
  size_t n;
} ct__doc_table;

/* The families added for ONNX import: ops/defs/math.c (elementwise math, comparisons, logic),
 * index.c (shapes, slicing, gathering, padding: run-time shape inputs), reduce_ext.c (the other
 * reductions and layers), rnn_layers.c (RNN, GRU, LSTM). */
extern const ct__def_table ct__math_defs, ct__index_defs, ct__reduce_ext_defs, ct__rnn_layers_defs;
/* misc_ops*.c: non_max_suppression, unique, einsum, det, window, mel_weight_matrix,
 * dropout_identity (ops/defs/misc_ops.h). */
extern const ct__def_table ct__misc_defs;
/* quant.c: quantize_linear, dequantize_linear (ops/defs/quant.h). */
extern const ct__def_table ct__quant_defs, ct__quant_int_defs;
/* resample.c: resize, grid_sample, roi_align (ONNX's Resize, Upsample, GridSample, RoiAlign). */
extern const ct__def_table ct__resample_defs;
extern const ct__def_table ct__conv_transpose_defs; /* ops/defs/conv_transpose.c */
extern const ct__def_table ct__conv_nd_defs;        /* ops/defs/conv_nd.c */
extern const ct__def_table ct__signal_defs;         /* ops/defs/signal.c */
/* pool_nd*.c: pool_nd, max_unpool, lrn, instance_norm and their gradients (ops/defs/pool_nd.h). */
extern const ct__def_table ct__pool_nd_defs, ct__pool_nd_norm_defs, ct__pool_nd_grad_defs;
extern const ct__def_table ct__elementwise_defs, ct__matmul_defs, ct__attention_defs,
    ct__decomposed_norm_defs,
    ct__random_defs, ct__reduce_defs, ct__shape_defs, ct__recurrent_defs;
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
/* The same for the operands in slots xs and ys (messages name those slots) under tx / ty. */
ct_status ct__mm_plan_slots(const ct_kernel_ctx *c, size_t xs, size_t ys, bool tx, bool ty,
                            ct__mm_shape *s);

/* attention's plan: the scores Q K (qk: their batch, m = Sq rows, n = Sk columns, k), V's
 * columns and its matrix stride per batch dim of the scores (0: one V for those entries), the
 * Mask's element stride per dim of the scores (0: broadcast; mask_st unset without a Mask), the
 * scale mode (CT__ATT_*) and Out's dims (the scores' batch, Sq, dv). CT_ERR_SHAPE naming the op
 * and the fix for what the fused op does not run (ranks below 2, an empty operand, a Scale of
 * more than one element or of higher rank than the scores, a Mask or V that would enlarge them,
 * a softmax over another axis), CT_ERR_TYPE_MISMATCH for mixed dtypes. */
typedef struct ct__attn_shape {
  ct__mm_shape qk;
  int64_t dv;
  int64_t bv[CT_MAX_RANK];
  int64_t mask_st[CT_MAX_RANK];
  int mode;
  ct_ddim out;
} ct__attn_shape;
ct_status ct__attn_plan(const ct_kernel_ctx *c, ct__attn_shape *s);

/* Over an operand's batch strides (s->bx or s->by): whether they are all zero (zero set: one
 * matrix serves the whole batch) or all nonzero (a matrix of its own per batch entry, in batch
 * order); and whether some batch entries share one matrix (its gradient then sums over them).
 * Where none do, the operand's entries lie one after another in the batch's order, so the
 * batch folds into its rows: a dim of extent 1 (a batch of one, X [1, M, K]) has stride 0 as a
 * broadcast's, which all-nonzero strides refuse (the CPU matmul's product had fallen to its
 * per-entry loop and its epilogue to a pass there). */
bool ct__mm_batch_strides_all(const ct__mm_shape *s, const int64_t *stride, bool zero);
bool ct__mm_batch_repeats(const ct__mm_shape *s, const int64_t *stride);

/* The random ops' checks and values: fill_constant's value fits the kernel's dtype; uniform's
 * min <= max or gaussian's std >= 0; the run's seed (a fresh one for seed 0); the values of
 * dtype t that uniform values in [lo, hi) are clamped to. */
ct_status ct__fill_check(const ct_kernel_ctx *c, double v);
ct_status ct__random_check_range(const ct_kernel_ctx *c, bool gaussian);
uint64_t ct__random_seed(const ct_kernel_ctx *c);
uint64_t ct__fresh_seed(const ct_kernel_ctx *c); /* a new seed each call (seed 0's) */
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

/* Out takes X's dims (the activations); a unary grad op's X@GRAD takes its first input's dims,
 * which Out@GRAD must have. */
ct_status ct__same_dims_infer(const ct_kernel_ctx *c);
ct_status ct__unary_grad_infer(const ct_kernel_ctx *c);

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
enum { CT__SCHED_STEP = 0 };
enum { CT__SCHED_LR_OUT = 0, CT__SCHED_STEP_OUT = 1 };
enum { CT__SCHED_BASE, CT__SCHED_KIND, CT__SCHED_WARMUP, CT__SCHED_STEP_SIZE, CT__SCHED_GAMMA,
       CT__SCHED_TOTAL, CT__SCHED_MIN_LR };
extern const ct__def_table ct__optimizer_defs;
/* What each family's types compute: a table at the end of each ops/defs/<family>.c (and
 * ops/recurrent.c), listed in ops/backends.c. */
extern const ct__doc_table ct__optimizer_docs, ct__comm_docs, ct__conv_docs,
    ct__conv_transpose_docs, ct__conv_nd_docs, ct__elementwise_docs, ct__index_docs,
    ct__index_misc_docs,
    ct__index_slice_docs, ct__loss_docs, ct__math_docs, ct__matmul_docs, ct__attention_docs,
    ct__decomposed_norm_docs,
    ct__misc_ops_docs,
    ct__nn_docs, ct__norm_docs, ct__pool_nd_docs, ct__pool_nd_norm_docs, ct__quant_docs,
    ct__quant_int_docs, ct__signal_docs,
    ct__random_docs, ct__recurrent_docs, ct__reduce_docs, ct__reduce_ext_docs,
    ct__reduce_ext_loss_docs, ct__reduce_ext_norm_docs, ct__resample_docs, ct__rnn_layers_docs,
    ct__shape_docs;

/* ---- Convolution and pooling (ops/defs/conv.c, ops/defs/conv_grad.c) ---------------------- */

/* conv2d (and depthwise_conv2d): Input [N,C,H,W], Filter [M,C/groups,KH,KW] -> Output
 * [N,M,OH,OW]; conv2d_grad: Input, Filter, Output@GRAD -> Input@GRAD, Filter@GRAD (optional). */
enum { CT__CONV_INPUT = 0, CT__CONV_FILTER = 1, CT__CONV_DOUT = 2 };
/* conv2d_fusion (ops/passes.c makes it): conv2d's slots and attributes, then these. */
enum { CT__FUSION_BIAS = 2, CT__FUSION_RESIDUAL = 3, CT__FUSION_BN_SCALE = 4,
       CT__FUSION_BN_BIAS = 5, CT__FUSION_BN_MEAN = 6, CT__FUSION_BN_VARIANCE = 7 };
enum { CT__FUSION_ACTIVATION = 6, CT__FUSION_CLIP_MIN = 7, CT__FUSION_CLIP_MAX = 8,
       CT__FUSION_EPSILON = 9 };
/* conv2d_pool (ops/passes_pool.c makes it): conv2d_fusion's slots and attributes, then from
 * CT__CPOOL_POOL on pool2d's attributes in pool2d's order (named pool_ and pool2d's name). */
enum { CT__CPOOL_POOL = 10 };
/* conv2d_pool's context c seen as its pool's: the attributes from CT__CPOOL_POOL on (for
 * ct__pool_plan; its messages name pool2d's attributes, which are this op's pool_ ones). */
static inline ct_kernel_ctx ct__cpool_pool_view(const ct_kernel_ctx *c) {
  ct_kernel_ctx pc = *c;
  pc.attr = c->attr + CT__CPOOL_POOL;
  return pc;
}
enum { CT__CONV_DINPUT = 0, CT__CONV_DFILTER = 1 };
enum { CT__CONV_STRIDES, CT__CONV_PADDINGS, CT__CONV_DILATIONS, CT__CONV_GROUPS,
       CT__CONV_DATA_FORMAT, CT__CONV_PADDING_ALGORITHM };
/* pool2d: X -> Out; pool2d_grad: X, Out, Out@GRAD -> X@GRAD. */
enum { CT__POOL_X = 0, CT__POOL_OUT = 1, CT__POOL_DOUT = 2 };
enum { CT__POOL_TYPE, CT__POOL_KSIZE, CT__POOL_STRIDES, CT__POOL_PADDINGS, CT__POOL_GLOBAL,
       CT__POOL_EXCLUSIVE, CT__POOL_CEIL_MODE, CT__POOL_DATA_FORMAT,
       CT__POOL_PADDING_ALGORITHM, CT__POOL_ADAPTIVE };
extern const ct__def_table ct__conv_defs, ct__conv_grad_defs;
extern const ct_attr_def ct__conv_attrs[6], ct__pool_attrs[10]; /* forward and grad types alike */
ct_status ct__grad_conv2d(ct_grad_ctx *g);
ct_status ct__grad_pool2d(ct_grad_ctx *g);

/* inverted_residual (ops/defs/conv_block.c; ops/passes_block.c makes it): the slots and
 * attributes in order, and its geometry: n images of c channels h x w, e expanded channels, m
 * output channels, the depthwise stride s (1 or 2; padding 1), giving oh x ow. */
enum { CT__IR_INPUT, CT__IR_FILTER, CT__IR_BIAS, CT__IR_DWFILTER, CT__IR_DWBIAS, CT__IR_PFILTER,
       CT__IR_PBIAS, CT__IR_RESIDUAL };
enum { CT__IR_STRIDES, CT__IR_ACT, CT__IR_CLIP_MIN, CT__IR_CLIP_MAX, CT__IR_DW_ACT,
       CT__IR_DW_CLIP_MIN, CT__IR_DW_CLIP_MAX, CT__IR_P_ACT, CT__IR_P_CLIP_MIN,
       CT__IR_P_CLIP_MAX };
typedef struct ct__ir_geom {
  int64_t n, c, h, w, e, m, s, oh, ow;
} ct__ir_geom;
/* Checks an inverted_residual's operands and attributes (CT_ERR_SHAPE, CT_ERR_UNSUPPORTED or
 * CT_ERR_INVALID_ARGUMENT naming the op otherwise) and gives its geometry. */
ct_status ct__inverted_residual_plan(const ct_kernel_ctx *c, ct__ir_geom *g);
extern const ct__def_table ct__conv_block_defs;
extern const ct__doc_table ct__conv_block_docs;

/* The geometry of a 2-D window op over NCHW: n images of c channels h x w, m output channels
 * (conv: filters; pool: c) in `groups` groups, windows kh x kw with strides, dilations and
 * paddings (top, bottom, left, right), giving oh x ow outputs. avg pooling divides by the window
 * clipped to the image (exclusive) or by kh kw; max is set for max pooling. */
typedef struct ct__conv_geom {
  int64_t n, c, h, w, m, groups, kh, kw, oh, ow;
  int64_t sh, sw, dh, dw, pt, pb, pl, pr;
  bool max, exclusive;
} ct__conv_geom;

/* Plans conv2d (and its grad, whose attributes come in the same order) for Input dims in and
 * Filter dims f; pool2d (and its grad) for X dims x. CT_ERR_SHAPE, CT_ERR_OUT_OF_RANGE,
 * CT_ERR_INVALID_ARGUMENT or CT_ERR_UNSUPPORTED naming the op otherwise. */
ct_status ct__conv_plan(const ct_kernel_ctx *c, ct_ddim in, ct_ddim f, ct__conv_geom *g);
ct_status ct__pool_plan(const ct_kernel_ctx *c, ct_ddim x, ct__conv_geom *g);
/* pool2d's Out dims for X dims x: the plan's [n, m, oh, ow], or (global pooling of 1-D or 3-D
 * data, which the plan takes as one plane) [n, m] and 1 per spatial dim of X. */
ct_ddim ct__pool_out_dims(const ct__conv_geom *g, ct_ddim x);

/* The output dims of a plan, [n, m, oh, ow]. */
static inline ct_ddim ct__conv_out_dims(const ct__conv_geom *g) {
  return CT_DIMS(g->n, g->m, g->oh, g->ow);
}

/* The window of pool output (oy, ox) clipped to the image: rows [*y0, *y1), columns [*x0, *x1);
 * and the count avg pooling divides by. */
static inline int64_t ct__pool_window(const ct__conv_geom *g, int64_t oy, int64_t ox,
                                      int64_t *y0, int64_t *y1, int64_t *x0, int64_t *x1) {
  int64_t ys = oy * g->sh - g->pt, xs = ox * g->sw - g->pl;
  int64_t ye = ys + g->kh, xe = xs + g->kw;
  *y0 = ys < 0 ? 0 : ys;
  *x0 = xs < 0 ? 0 : xs;
  *y1 = ye > g->h ? g->h : ye;
  *x1 = xe > g->w ? g->w : xe;
  return g->exclusive ? (*y1 - *y0) * (*x1 - *x0) : g->kh * g->kw;
}

/* ---- Normalisation and the other layers (ops/defs/norm.c, norm_grad.c, nn.c, nn_grad.c) ---- */

/* batch_norm: X, Scale, Bias, Mean, Variance -> Y, MeanOut, VarianceOut, SavedMean,
 * SavedVariance; batch_norm_grad: X, Scale, Bias, SavedMean, SavedVariance, Y@GRAD -> X@GRAD,
 * Scale@GRAD, Bias@GRAD (each optional). Both types take the same attributes. */
enum { CT__BN_X, CT__BN_SCALE, CT__BN_BIAS, CT__BN_MEAN, CT__BN_VARIANCE };
enum { CT__BN_Y, CT__BN_MEAN_OUT, CT__BN_VAR_OUT, CT__BN_SAVED_MEAN, CT__BN_SAVED_VAR };
enum { CT__BN_MOMENTUM, CT__BN_EPSILON, CT__BN_IS_TEST, CT__BN_LAYOUT, CT__BN_GLOBAL_STATS };
enum { CT__BNG_X, CT__BNG_SCALE, CT__BNG_BIAS, CT__BNG_SAVED_MEAN, CT__BNG_SAVED_VAR, CT__BNG_DY };
/* layer_norm: X, Scale, Bias (both optional) -> Y, Mean, Variance; layer_norm_grad: X, Scale,
 * Bias, Mean, Variance, Y@GRAD -> X@GRAD, Scale@GRAD, Bias@GRAD (each optional). */
enum { CT__LN_X, CT__LN_SCALE, CT__LN_BIAS };
enum { CT__LN_Y, CT__LN_MEAN, CT__LN_VARIANCE };
enum { CT__LN_BEGIN_NORM_AXIS, CT__LN_EPSILON };
enum { CT__LNG_X, CT__LNG_SCALE, CT__LNG_BIAS, CT__LNG_MEAN, CT__LNG_VARIANCE, CT__LNG_DY };
/* Both grad types write X@GRAD, Scale@GRAD, Bias@GRAD in this order. */
enum { CT__NG_DX, CT__NG_DSCALE, CT__NG_DBIAS };
/* gelu (X -> Out; gelu_grad X, Out@GRAD -> X@GRAD); lookup_table_v2 (W, Ids -> Out;
 * lookup_table_v2_grad W, Ids, Out@GRAD -> W@GRAD); dropout (X -> Out, Mask; dropout_grad
 * Out@GRAD, Mask -> X@GRAD); arg_max (X -> Out). */
enum { CT__GELU_APPROXIMATE };
enum { CT__LT_W, CT__LT_IDS, CT__LTG_DOUT };
enum { CT__LT_PADDING_IDX };
enum { CT__DO_X, CT__DO_SEED_IN };
enum { CT__DO_OUT, CT__DO_MASK };
enum { CT__DOG_DOUT, CT__DOG_MASK };
enum { CT__DO_PROB, CT__DO_IS_TEST, CT__DO_FIX_SEED, CT__DO_SEED, CT__DO_UPSCALE };
enum { CT__AM_AXIS, CT__AM_KEEPDIMS, CT__AM_FLATTEN, CT__AM_DTYPE };
extern const ct__def_table ct__norm_defs, ct__norm_grad_defs, ct__nn_defs, ct__nn_grad_defs;
ct_status ct__grad_batch_norm(ct_grad_ctx *g);
ct_status ct__grad_layer_norm(ct_grad_ctx *g);
ct_status ct__grad_lookup_table_v2(ct_grad_ctx *g);
ct_status ct__grad_dropout(ct_grad_ctx *g);

/* The normalised groups of X: batch_norm's channel c holds the elements
 * x[o][c][i] (o < outer, i < inner) of X seen as [outer, C, inner] (NCHW: [N, C, H*W];
 * NHWC: [N*H*W, C, 1]); layer_norm's row r holds x[r][0..inner) of X seen as [outer, inner]
 * (c 1). */
typedef struct ct__norm_plan {
  int64_t outer, c, inner;
} ct__norm_plan;

/* batch_norm's plan from input X (slot 0) and attribute data_layout, and layer_norm's from
 * begin_norm_axis: CT_ERR_SHAPE or CT_ERR_INVALID_ARGUMENT naming the op otherwise. */
ct_status ct__bn_plan(const ct_kernel_ctx *c, ct__norm_plan *p);
ct_status ct__ln_plan(const ct_kernel_ctx *c, ct__norm_plan *p);
extern const ct_attr_def ct__bn_attrs[5], ct__ln_attrs[2]; /* shared by the grad types */

/* Input (slot, 0), when wired, holds n elements of the kernel's dtype as [n]; CT_ERR_SHAPE or
 * CT_ERR_TYPE_MISMATCH naming the op, slot and variable (what: what its values are) otherwise. */
ct_status ct__norm_check_vec(const ct_kernel_ctx *c, size_t slot, int64_t n, const char *what);

/* 1 / sqrt(v + epsilon) in double, the inverse deviation both norms use. */
static inline double ct__inv_std(double v, double eps) { return 1.0 / sqrt(v + eps); }

/* dropout's seed of this run: input Seed's int32 (host memory) when wired, else attribute seed
 * with fix_seed, else a fresh one. Element i is kept
 * when ct__dropout_keep says so: Philox's 24-bit uniform of element i (word i % 4 of block i / 4,
 * ops/philox.h) is at least dropout_prob, so every place draws the same mask. */
uint64_t ct__dropout_seed(const ct_kernel_ctx *c);
ct_status ct__dropout_check(const ct_kernel_ctx *c); /* dropout_prob, dropout_implementation */
/* The seed an int32 Seed input stands for: the attribute seed of the same value's. */
static inline uint64_t ct__dropout_seed_of(int32_t v) { return (uint64_t)(int64_t)v; }
/* The factor of a kept element in training (1 / (1 - p) with upscale_in_train, else 1), and of
 * every element in test mode (1, or 1 - p with downgrade_in_infer). */
double ct__dropout_factor(const ct_kernel_ctx *c);

/* lookup_table_v2's checks (W [rows, D], Ids int64 or int32, padding_idx) and Out's dims. */
ct_status ct__lt_dims(const ct_kernel_ctx *c, ct_ddim *out);
extern const ct_attr_def ct__gelu_attrs[1], ct__lt_attrs[1], ct__do_attrs[5];

/* Id i of lookup_table_v2's ids (dt int64 or int32). */
static inline int64_t ct__lt_id(const void *ids, ct_dtype dt, int64_t i) {
  return dt == CT_INT32 ? ((const int32_t *)ids)[i] : ((const int64_t *)ids)[i];
}

/* lookup_table_v2's ids of input `slot` (dt int64 or int32, host memory): each a row of W, in
 * [0, rows); CT_ERR_OUT_OF_RANGE naming the op, variable and position otherwise. */
ct_status ct__lt_check_ids(const ct_kernel_ctx *c, size_t slot, const void *ids, ct_dtype dt,
                           int64_t n, int64_t rows);

/* arg_max's walk: Out element o = (a, b) of [outer, inner] takes the first index k < n where
 * X[a][k][b] is largest (a NaN counts as largest). */
ct_status ct__am_plan(const ct_kernel_ctx *c, ct__norm_plan *p);

/* ---- Collectives (ops/defs/comm.c) ---------------------------------------------------------- */

extern const ct__def_table ct__comm_defs;

/* The kernel of every collective op type: engine (CT__ENGINE_MPI or CT__ENGINE_NCCL, from
 * comm/comm_impl.h) is the one the backend's place needs; the op's communicator must be of it.
 * combine is the engine's host arithmetic (ct__coll_combine; NULL for NCCL). */
ct_status ct__comm_kernel(const ct_kernel_ctx *c, int engine,
                          void (*combine)(void *, const void *, int64_t, ct_dtype, bool));

/* A backend's kernel sets of the collectives: fn (calling ct__comm_kernel) for every dtype. */
#define CT__COMM_KERNEL_SETS(fn)                                                          \
  {"c_allreduce_sum", CT__KERNELS([0] = fn)}, {"c_allreduce_max", CT__KERNELS([0] = fn)}, \
      {"c_broadcast", CT__KERNELS([0] = fn)}, {"c_allgather", CT__KERNELS([0] = fn)},     \
      {"c_reducescatter", CT__KERNELS([0] = fn)}, {"c_reduce_sum", CT__KERNELS([0] = fn)}

#endif /* CORTEN_OPS_DEFS_H */
