/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/pool_nd.h: what the op types pool_nd, max_unpool, lrn, instance_norm
 * (ops/defs/pool_nd.c, pool_nd_norm.c), their grad types (pool_nd_grad.c) and their CPU kernels
 * (ops/cpu/pool_nd*.c) share: slot and attribute indices and the pooling plan.
 *
 * pool_nd pools 1 to 3 spatial dims (ONNX's MaxPool and AveragePool in full: dilations,
 * ceil_mode, count_include_pad, explicit, VALID, SAME_UPPER and SAME_LOWER padding, the Indices
 * output). pool2d (ops/defs/conv.c) stays the 2-D op with a CUDA kernel; the ONNX import uses it
 * wherever it computes ONNX's values, and pool_nd elsewhere (onnx/rules_pool.c). */
#ifndef CORTEN_OPS_DEFS_POOL_ND_H
#define CORTEN_OPS_DEFS_POOL_ND_H

#include "ops/defs.h"

/* pool_nd: X -> Out, Indices (optional, int64, max only). */
enum { CT__PND_OUT = 0, CT__PND_INDICES = 1 };
enum {
  CT__PND_TYPE,       /* pooling_type: "max" or "avg" */
  CT__PND_KSIZE,      /* ksize: one value per spatial dim */
  CT__PND_STRIDES,    /* strides: none (all 1) or one per spatial dim */
  CT__PND_PADDINGS,   /* paddings: none (all 0) or begins..., ends... (ONNX's order) */
  CT__PND_DILATIONS,  /* dilations: none (all 1) or one per spatial dim */
  CT__PND_ALGO,       /* padding_algorithm: EXPLICIT, VALID, SAME_UPPER, SAME_LOWER */
  CT__PND_CEIL,       /* ceil_mode (EXPLICIT padding only) */
  CT__PND_EXCLUSIVE,  /* exclusive: avg divides by the taps inside X (else inside the padding) */
  CT__PND_STORAGE,    /* storage_order: 0 row-major Indices, 1 column-major spatial dims */
  CT__PND_GLOBAL,     /* global_pooling: the window is the whole of each spatial dim */
  CT__PND_N_ATTRS
};
/* pool_nd_grad: X, Out@GRAD -> X@GRAD, pool_nd's attributes. */
enum { CT__PNDG_X = 0, CT__PNDG_DOUT = 1 };

/* max_unpool: X, Indices (int64), OutputShape (optional, int64, run time) -> Out. */
enum { CT__MUP_X = 0, CT__MUP_INDICES = 1, CT__MUP_SHAPE = 2 };
enum { CT__MUP_KSIZE, CT__MUP_STRIDES, CT__MUP_PADDINGS, CT__MUP_OUTPUT_SHAPE, CT__MUP_N_ATTRS };

/* lrn: X -> Out; lrn_grad: X, Out@GRAD -> X@GRAD. */
enum { CT__LRN_SIZE, CT__LRN_ALPHA, CT__LRN_BETA, CT__LRN_BIAS };
/* instance_norm: X, Scale, Bias -> Y; instance_norm_grad: X, Scale, Y@GRAD -> X@GRAD,
 * Scale@GRAD, Bias@GRAD (each optional). */
enum { CT__INN_X = 0, CT__INN_SCALE = 1, CT__INN_BIAS = 2 };
enum { CT__INNG_X = 0, CT__INNG_SCALE = 1, CT__INNG_DY = 2 };
enum { CT__INN_EPSILON };

extern const ct_attr_def ct__pnd_attrs[CT__PND_N_ATTRS];
extern const ct_attr_def ct__lrn_attrs[4];
/* lrn's and lrn_grad's check of attribute size (in [1, INT32_MAX]). */
ct_status ct__lrn_check_size(const ct_kernel_ctx *c);
extern const ct_attr_def ct__inn_attrs[1];

/* A pooling over planes (N x C of them) of up to 3 spatial dims, held as 3 (leading dims of
 * extent 1 added for 1-D and 2-D: d[3 - k ..] are the real ones). Per dim: the input extent, the
 * output extent, the window size, stride, dilation and the padding before it (pb) and after
 * (pe). */
typedef struct ct__pnd_plan {
  int k; /* spatial dims: 1, 2 or 3 */
  int64_t n, c;
  int64_t in[3], out[3], ks[3], st[3], dil[3], pb[3], pe[3];
  int64_t in_sz, out_sz; /* per plane */
  bool max, exclusive;
  int storage; /* 0 or 1 */
} ct__pnd_plan;

/* Plans pool_nd (and pool_nd_grad) for X dims x: every attribute checked, the output extents
 * computed, and every window checked to hold an element of X (a window of padding alone has no
 * maximum nor, exclusive, a mean): CT_ERR_SHAPE, CT_ERR_INVALID_ARGUMENT, CT_ERR_OUT_OF_RANGE,
 * CT_ERR_UNSUPPORTED naming the op. */
ct_status ct__pnd_plan_make(const ct_kernel_ctx *c, ct_ddim x, ct__pnd_plan *p);
/* Out's dims [N, C, out...]. */
ct_ddim ct__pnd_out_dims(const ct__pnd_plan *p);

/* The taps of window o along dim j: positions pos = o st - pb + t dil for t in [0, ks); *t0 and
 * *t1 bound the taps that land inside [0, in) (t1 <= t0 when none does). */
static inline void ct__pnd_taps(const ct__pnd_plan *p, int j, int64_t o, int64_t *t0,
                                int64_t *t1) {
  int64_t start = o * p->st[j] - p->pb[j], d = p->dil[j];
  int64_t a = start >= 0 ? 0 : (-start + d - 1) / d;
  int64_t lim = p->in[j] - start; /* tap t inside when t d < lim */
  int64_t b = lim <= 0 ? 0 : (lim - 1) / d + 1;
  *t0 = a;
  *t1 = b < p->ks[j] ? b : p->ks[j];
}

/* The divisor of avg window (o0, o1, o2): its taps inside X (exclusive) or inside the padded
 * extent [-pb, in + pe) (count_include_pad). */
int64_t ct__pnd_count(const ct__pnd_plan *p, const int64_t o[3]);

/* Plans pool2d's windows (ct__conv_geom, ops/defs.h) as a ct__pnd_plan of 2 dims: the integer
 * kernels pool2d gains from ops/cpu/pool_nd.c. */
void ct__pnd_from_pool2d(const ct__conv_geom *g, ct__pnd_plan *p);

/* max_unpool's unpooled dims (X's, each spatial one (in - 1) stride + ksize - pads) and Out's
 * (the OutputShape input's values when wired, else attribute output_shape, else the unpooled
 * dims), after checking X, Indices and the attributes. */
ct_status ct__mup_dims(const ct_kernel_ctx *c, ct_ddim *inferred, ct_ddim *out);

/* X of rank >= 2 with C = dims[1] channels: lrn and instance_norm's [N, C, inner] view. */
ct_status ct__nchw_view(const ct_kernel_ctx *c, size_t slot, int64_t *n, int64_t *ch,
                        int64_t *inner);

/* instance_norm's (and its gradient's) checks: X [N, C, ...], input scale_slot (and bias_slot,
 * unless (size_t)-1) [C] of X's dtype, epsilon >= 0. */
ct_status ct__inn_check(const ct_kernel_ctx *c, size_t scale_slot, size_t bias_slot);

/* The grad makers. */
ct_status ct__grad_pool_nd(ct_grad_ctx *g);
ct_status ct__grad_lrn(ct_grad_ctx *g);
ct_status ct__grad_instance_norm(ct_grad_ctx *g);

#endif /* CORTEN_OPS_DEFS_POOL_ND_H */
