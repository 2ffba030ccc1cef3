/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/index.h: what the index family's op types (ops/defs/index*.c) and their CPU kernels
 * (ops/cpu/index*.c) share: slot and attribute indices, the checks that read a run-time shape
 * input on the host, and the plans the kernels follow.
 *
 * A run-time shape input (a StartsTensor, a RepeatTimes ...) is an optional int64 or int32
 * tensor of rank 0 or 1 in host memory; when it is wired it replaces the attribute of the same
 * meaning, and the op type is not flagged CT_OP_PURE_INFER, since its infer-shape reads values. */
#ifndef CORTEN_OPS_DEFS_INDEX_H
#define CORTEN_OPS_DEFS_INDEX_H

#include "ops/defs.h"

/* ---- Slots and attributes -------------------------------------------------------------------- */

enum { CT__IX_SHAPE_START, CT__IX_SHAPE_END };            /* shape: Input -> Out */
enum { CT__IX_SQ_X = 0, CT__IX_SQ_AXES = 1 };              /* squeeze, unsqueeze: X, AxesTensor */
enum { CT__IX_SQ_AXES_ATTR };
enum { CT__IX_FLATTEN_AXIS };                              /* flatten: X -> Out */
enum { CT__IX_EXP_X = 0, CT__IX_EXP_SHAPE = 1 };           /* expand: X, Shape */
enum { CT__IX_EXP_SHAPE_ATTR };
enum { CT__IX_TILE_X = 0, CT__IX_TILE_REPEATS = 1 };       /* tile: X, RepeatTimes */
enum { CT__IX_TILE_REPEATS_ATTR };
enum { CT__IX_COS_SHAPE = 0 };                             /* constant_of_shape: ShapeTensor */
enum { CT__IX_COS_SHAPE_ATTR, CT__IX_COS_VALUE, CT__IX_COS_DTYPE };
enum { CT__IX_RANGE_START = 0, CT__IX_RANGE_END = 1, CT__IX_RANGE_STEP = 2 }; /* range */
/* strided_slice: Input, StartsTensor, EndsTensor, AxesTensor, StridesTensor -> Out */
enum { CT__IX_SL_INPUT, CT__IX_SL_STARTS, CT__IX_SL_ENDS, CT__IX_SL_AXES, CT__IX_SL_STRIDES };
enum { CT__IX_SL_AXES_ATTR, CT__IX_SL_STARTS_ATTR, CT__IX_SL_ENDS_ATTR, CT__IX_SL_STRIDES_ATTR };
enum { CT__IX_GA_X = 0, CT__IX_GA_INDEX = 1 };             /* gather: X, Index -> Out */
enum { CT__IX_GA_AXIS };
enum { CT__IX_SPLIT_X = 0, CT__IX_SPLIT_SECTIONS = 1 };    /* split: X, SectionsTensor -> Out[] */
enum { CT__IX_SPLIT_AXIS, CT__IX_SPLIT_SECTIONS_ATTR };
enum { CT__IX_PAD_X = 0, CT__IX_PAD_PADDINGS = 1, CT__IX_PAD_VALUE = 2 }; /* pad */
enum { CT__IX_PAD_PADDINGS_ATTR, CT__IX_PAD_VALUE_ATTR, CT__IX_PAD_MODE };

/* Grad ops: the forward's inputs (as its slots are numbered), then Out@GRAD; X@GRAD first. */

/* ---- Run-time shape inputs ------------------------------------------------------------------- */

/* The values of input `slot` when it is wired (int64 or int32, rank 0 or 1, at most cap of
 * them), else those of ints attribute `attr`: into v, their count in *n. Errors naming the op,
 * slot and variable: another dtype, CT_ERR_TYPE_MISMATCH; a higher rank or more than cap values,
 * CT_ERR_SHAPE; a wired input on a device (its values are read on the host),
 * CT_ERR_UNSUPPORTED. */
ct_status ct__ix_ints(const ct_kernel_ctx *c, size_t slot, size_t attr, int64_t *v, size_t *n,
                      size_t cap);

/* One int64 or int32 value of a wired input `slot` of one element (k of Trilu, say). */
ct_status ct__ix_scalar(const ct_kernel_ctx *c, size_t slot, int64_t *v);

/* Index value i of an int64 or int32 tensor's data. */
static inline int64_t ct__ix_index(const void *p, ct_dtype dt, int64_t i) {
  return dt == CT_INT32 ? ((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}

/* Checks that input (slot, 0) holds int64 or int32 indices; CT_ERR_TYPE_MISMATCH otherwise. */
ct_status ct__ix_check_index_dtype(const ct_kernel_ctx *c, size_t slot);
/* The wired input `slot` is read on the host (the op runs on the CPU) and holds a list: rank 0
 * or 1, at most cap values. CT_OK, or the failure naming the variable. */
ct_status ct__ix_check_host_list(const ct_kernel_ctx *c, size_t slot, size_t cap);

/* Row-major strides of dims d (elements). */
void ct__ix_strides(ct_ddim d, int64_t st[CT_MAX_RANK]);

/* ---- Plans ----------------------------------------------------------------------------------- */

/* strided_slice: per dim of Input, the first index, the step and Out's extent. */
typedef struct ct__ix_slice_plan {
  int64_t start[CT_MAX_RANK], step[CT_MAX_RANK];
  ct_ddim out;
} ct__ix_slice_plan;
ct_status ct__ix_slice_plan_make(const ct_kernel_ctx *c, ct__ix_slice_plan *p);

/* gather: X seen as [outer, n, inner] along the axis; Out [outer, n_index, inner]. */
typedef struct ct__ix_gather_plan {
  int64_t outer, n, inner, n_index;
  ct_ddim out;
} ct__ix_gather_plan;
ct_status ct__ix_gather_plan_make(const ct_kernel_ctx *c, ct__ix_gather_plan *p);
/* Checks Index's values against the axis's extent n (negative ones count from the end). */
ct_status ct__ix_gather_check(const ct_kernel_ctx *c, const ct__ix_gather_plan *p);

/* split: the axis and each output's extent along it. */
typedef struct ct__ix_split_plan {
  int axis;
  size_t n;
  int64_t *len; /* n extents, in the caller's buffer */
} ct__ix_split_plan;
ct_status ct__ix_split_plan_make(const ct_kernel_ctx *c, int64_t *len, size_t cap,
                                 ct__ix_split_plan *p);

/* pad: per dim the padding before and after (negative crops), and the mode. */
enum { CT__IX_PAD_CONSTANT, CT__IX_PAD_REFLECT, CT__IX_PAD_EDGE, CT__IX_PAD_WRAP };
typedef struct ct__ix_pad_plan {
  int64_t before[CT_MAX_RANK], after[CT_MAX_RANK];
  int mode;
  ct_ddim out;
} ct__ix_pad_plan;
ct_status ct__ix_pad_plan_make(const ct_kernel_ctx *c, ct_ddim x, ct__ix_pad_plan *p);
/* The source index along a dim of extent n for the padded index i (i already shifted by the
 * padding before), or -1 for the constant. */
int64_t ct__ix_pad_src(int mode, int64_t i, int64_t n);

/* expand's Out dims (X broadcast with the shape) and tile's (X's dims times the repeats). */
ct_status ct__ix_expand_dims(const ct_kernel_ctx *c, ct_ddim x, ct_ddim *out);
ct_status ct__ix_tile_dims(const ct_kernel_ctx *c, ct_ddim x, ct_ddim *out);

/* Stores v into element i of data of dtype dt (float16 and bfloat16 rounded). */
void ct__ix_store(void *data, ct_dtype dt, int64_t i, double v);

/* ---- Infer-shape functions, makers and view kernels (ops/defs/index*.c) -------------------- */
ct_status ct__ix_view_grad(ct_grad_ctx *g); /* reshape_grad: squeeze, unsqueeze, flatten */
/* "<type>_grad" reading the forward's wired inputs and Out@GRAD, writing the first input's
 * gradient: strided_slice, gather, expand, tile, pad. */
ct_status ct__ix_grad_generic(ct_grad_ctx *g);
ct_status ct__ix_grad_split(ct_grad_ctx *g); /* concat of the pieces' gradients */
ct_status ct__ix_squeeze_kernel(const ct_kernel_ctx *c);
ct_status ct__ix_unsqueeze_kernel(const ct_kernel_ctx *c);
ct_status ct__ix_flatten_kernel(const ct_kernel_ctx *c);
ct_status ct__ix_shape_kernel(const ct_kernel_ctx *c);
ct_status ct__ix_size_kernel(const ct_kernel_ctx *c);
ct_status ct__ix_range_count(const ct_kernel_ctx *c, int64_t *n);
ct_status ct__ix_range_args(const ct_kernel_ctx *c, double v[3], int64_t iv[3]);
ct_status ct__ix_slice_infer(const ct_kernel_ctx *c);
ct_status ct__ix_gather_infer(const ct_kernel_ctx *c);
ct_status ct__ix_split_infer(const ct_kernel_ctx *c);
ct_status ct__ix_pad_infer(const ct_kernel_ctx *c);
ct_status ct__ix_slice_grad_infer(const ct_kernel_ctx *c);
ct_status ct__ix_gather_grad_infer(const ct_kernel_ctx *c);
ct_status ct__ix_expand_grad_infer(const ct_kernel_ctx *c);
ct_status ct__ix_tile_grad_infer(const ct_kernel_ctx *c);
ct_status ct__ix_pad_grad_infer(const ct_kernel_ctx *c);

/* Slots and attributes of the types defined in index_slice.c and index_grad.c, for the table of
 * index.c (a grad type takes its forward's input slots and attributes, then Out@GRAD). */
extern const ct_slot_def ct__ix_slice_in[5], ct__ix_gather_in[2], ct__ix_split_in[2],
    ct__ix_pad_in[3], ct__ix_split_out[1];
extern const ct_attr_def ct__ix_slice_attrs[4], ct__ix_gather_attrs[1], ct__ix_split_attrs[2],
    ct__ix_pad_attrs[3], ct__ix_exp_attrs[1], ct__ix_tile_attrs[1];
extern const ct_slot_def ct__ix_slice_grad_in[6], ct__ix_gather_grad_in[3],
    ct__ix_expand_grad_in[3], ct__ix_tile_grad_in[3], ct__ix_pad_grad_in[4],
    ct__ix_slice_grad_out[1], ct__ix_x_grad_out[1];

#define CT__IX_DEF(name, in, n_in, out, n_out, at, n_at, inf, flg, gr)                           \
  {.type = name, .inputs = in, .n_inputs = n_in, .outputs = out, .n_outputs = n_out,           \
   .attrs = at, .n_attrs = n_at, .infer_shape = inf, .flags = flg, .grad = gr}

#define CT__IX_SLICE_DEFS                                                                        \
  CT__IX_DEF("strided_slice", ct__ix_slice_in, 5, ct__slot_out, 1, ct__ix_slice_attrs, 4,          \
             ct__ix_slice_infer, 0, ct__ix_grad_generic),                                         \
      CT__IX_DEF("gather", ct__ix_gather_in, 2, ct__slot_out, 1, ct__ix_gather_attrs, 1,           \
                 ct__ix_gather_infer, CT_OP_PURE_INFER, ct__ix_grad_generic),                    \
      CT__IX_DEF("split", ct__ix_split_in, 2, ct__ix_split_out, 1, ct__ix_split_attrs, 2,          \
                 ct__ix_split_infer, 0, ct__ix_grad_split),                                       \
      CT__IX_DEF("pad", ct__ix_pad_in, 3, ct__slot_out, 1, ct__ix_pad_attrs, 3, ct__ix_pad_infer,  \
                 0, ct__ix_grad_generic)

#define CT__IX_GRAD_DEFS                                                                         \
  CT__IX_DEF("strided_slice_grad", ct__ix_slice_grad_in, 6, ct__ix_slice_grad_out, 1,            \
             ct__ix_slice_attrs, 4, ct__ix_slice_grad_infer, 0, NULL),                            \
      CT__IX_DEF("gather_grad", ct__ix_gather_grad_in, 3, ct__ix_x_grad_out, 1,                   \
                 ct__ix_gather_attrs, 1, ct__ix_gather_grad_infer, CT_OP_PURE_INFER, NULL),       \
      CT__IX_DEF("expand_grad", ct__ix_expand_grad_in, 3, ct__ix_x_grad_out, 1, ct__ix_exp_attrs, \
                 1, ct__ix_expand_grad_infer, 0, NULL),                                           \
      CT__IX_DEF("tile_grad", ct__ix_tile_grad_in, 3, ct__ix_x_grad_out, 1, ct__ix_tile_attrs, 1, \
                 ct__ix_tile_grad_infer, 0, NULL),                                                \
      CT__IX_DEF("pad_grad", ct__ix_pad_grad_in, 4, ct__ix_x_grad_out, 1, ct__ix_pad_attrs, 3,    \
                 ct__ix_pad_grad_infer, 0, NULL)


/* ---- The other op types (ops/defs/index_misc.c) ---------------------------------------------- */

/* Element i of data of dtype dt as a double (float16 and bfloat16 widened; bool 0 or 1). */
double ct__ix_load(const void *data, ct_dtype dt, int64_t i);

/* gather_nd and scatter_nd: `batch` leading dims both share, then per batch entry `per_batch`
 * index tuples of m values each addressing a slice of `inner` elements; out is gather_nd's Out
 * (scatter_nd's Updates). */
typedef struct ct__ix_nd {
  int m, lead;
  int64_t batch, per_batch, inner;
  ct_ddim out;
} ct__ix_nd;
ct_status ct__ix_nd_plan(const ct_kernel_ctx *c, int64_t batch_dims, ct__ix_nd *p);
ct_status ct__ix_tri_diag(const ct_kernel_ctx *c, int64_t *k);
ct_status ct__ix_cumsum_axis(const ct_kernel_ctx *c, int *axis);
ct_status ct__ix_along_check(const ct_kernel_ctx *c, int *axis);
ct_status ct__ix_oh_plan(const ct_kernel_ctx *c, int *axis, int64_t *depth, ct_ddim *out);
ct_status ct__ix_block_dims(const ct_kernel_ctx *c, bool to_space, ct_ddim *out);
ct_status ct__ix_rs_check(const ct_kernel_ctx *c);
ct_status ct__ix_topk_plan(const ct_kernel_ctx *c, int *axis, int64_t *k, ct_ddim *out);
ct_status ct__ix_grad_tri(ct_grad_ctx *g);
ct_status ct__ix_grad_cumsum(ct_grad_ctx *g);
#define CT__IX_INFER(n) ct_status ct__ix_##n##_infer(const ct_kernel_ctx *c)
CT__IX_INFER(tri); CT__IX_INFER(cumsum); CT__IX_INFER(tal); CT__IX_INFER(pal);
CT__IX_INFER(gnd); CT__IX_INFER(snd); CT__IX_INFER(oh); CT__IX_INFER(d2s);
CT__IX_INFER(s2d); CT__IX_INFER(eye); CT__IX_INFER(rs); CT__IX_INFER(topk);
extern const ct_slot_def ct__ix_tri_in[2], ct__ix_cumsum_in[2], ct__ix_tal_in[2], ct__ix_pal_in[3],
    ct__ix_result[1], ct__ix_gnd_in[2], ct__ix_snd_in[3], ct__ix_oh_in[3], ct__ix_cond_in[1],
    ct__ix_compress_in[2], ct__ix_rs_in[2], ct__ix_topk_in[2], ct__ix_topk_out[2];
extern const ct_attr_def ct__ix_tri_attrs[2], ct__ix_cumsum_attrs[3], ct__ix_tal_attrs[1],
    ct__ix_pal_attrs[2], ct__ix_gnd_attrs[1], ct__ix_snd_attrs[1], ct__ix_oh_attrs[1],
    ct__ix_d2s_attrs[2], ct__ix_s2d_attrs[1], ct__ix_eye_attrs[2], ct__ix_compress_attrs[1],
    ct__ix_rs_attrs[2], ct__ix_topk_attrs[4];

/* where_index and compress set their Out dims in the kernel (they depend on the values). */
#define CT__IX_MISC_DEFS                                                                          \
  CT__IX_DEF("tril_triu", ct__ix_tri_in, 2, ct__slot_out, 1, ct__ix_tri_attrs, 2,                  \
             ct__ix_tri_infer, 0, ct__ix_grad_tri),                                                \
      CT__IX_DEF("cumsum", ct__ix_cumsum_in, 2, ct__slot_out, 1, ct__ix_cumsum_attrs, 3,           \
                 ct__ix_cumsum_infer, 0, ct__ix_grad_cumsum),                                      \
      CT__IX_DEF("take_along_axis", ct__ix_tal_in, 2, ct__ix_result, 1, ct__ix_tal_attrs, 1,       \
                 ct__ix_tal_infer, CT_OP_PURE_INFER, NULL),                                        \
      CT__IX_DEF("put_along_axis", ct__ix_pal_in, 3, ct__ix_result, 1, ct__ix_pal_attrs, 2,        \
                 ct__ix_pal_infer, CT_OP_PURE_INFER, NULL),                                        \
      CT__IX_DEF("gather_nd", ct__ix_gnd_in, 2, ct__slot_out, 1, ct__ix_gnd_attrs, 1,              \
                 ct__ix_gnd_infer, CT_OP_PURE_INFER, NULL),                                        \
      CT__IX_DEF("scatter_nd", ct__ix_snd_in, 3, ct__slot_out, 1, ct__ix_snd_attrs, 1,             \
                 ct__ix_snd_infer, CT_OP_PURE_INFER, NULL),                                        \
      CT__IX_DEF("one_hot", ct__ix_oh_in, 3, ct__slot_out, 1, ct__ix_oh_attrs, 1, ct__ix_oh_infer, \
                 0, ct__grad_none),                                                                \
      CT__IX_DEF("depth_to_space", ct__slot_x, 1, ct__slot_out, 1, ct__ix_d2s_attrs, 2,            \
                 ct__ix_d2s_infer, CT_OP_PURE_INFER, NULL),                                        \
      CT__IX_DEF("space_to_depth", ct__slot_x, 1, ct__slot_out, 1, ct__ix_s2d_attrs, 1,            \
                 ct__ix_s2d_infer, CT_OP_PURE_INFER, NULL),                                        \
      CT__IX_DEF("eye_like", ct__slot_x, 1, ct__slot_out, 1, ct__ix_eye_attrs, 2,                  \
                 ct__ix_eye_infer, CT_OP_PURE_INFER, ct__grad_none),                               \
      CT__IX_DEF("where_index", ct__ix_cond_in, 1, ct__slot_out, 1, NULL, 0, NULL, 0,              \
                 ct__grad_none),                                                                   \
      CT__IX_DEF("compress", ct__ix_compress_in, 2, ct__slot_out, 1, ct__ix_compress_attrs, 1,     \
                 NULL, 0, NULL),                                                                   \
      CT__IX_DEF("reverse_sequence", ct__ix_rs_in, 2, ct__slot_out, 1, ct__ix_rs_attrs, 2,         \
                 ct__ix_rs_infer, 0, NULL),                                                        \
      CT__IX_DEF("top_k_v2", ct__ix_topk_in, 2, ct__ix_topk_out, 2, ct__ix_topk_attrs, 4,          \
                 ct__ix_topk_infer, 0, NULL)

#endif /* CORTEN_OPS_DEFS_INDEX_H */
