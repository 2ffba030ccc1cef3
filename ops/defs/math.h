/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/math.h: what the math family's op types (ops/defs/math.c, math_grad.c) and their CPU
 * kernels (ops/cpu/math*.c) share: attribute indices, the slots of where, clip and prelu, and
 * the walk over a broadcast output of up to three inputs. */
#ifndef CORTEN_OPS_DEFS_MATH_H
#define CORTEN_OPS_DEFS_MATH_H

#include "ops/defs.h"

/* The unary formulas with parameters read them from float attributes 0, 1, 2 in this order. */
enum { CT__MATH_P0, CT__MATH_P1, CT__MATH_P2 };
/* isinf's attributes. */
enum { CT__ISINF_POSITIVE, CT__ISINF_NEGATIVE };
/* clip: X, Min, Max (optional, one element each, read at run time) -> Out; attributes min, max. */
enum { CT__CLIP_X, CT__CLIP_MIN, CT__CLIP_MAX };
enum { CT__CLIP_ATTR_MIN, CT__CLIP_ATTR_MAX };
/* clip_grad: X, Min, Max, Out@GRAD -> X@GRAD. */
enum { CT__CLIPG_DOUT = 3 };
/* where: Condition, X, Y -> Out; where_grad: Condition, X, Y, Out@GRAD -> X@GRAD, Y@GRAD. */
enum { CT__WHERE_COND, CT__WHERE_X, CT__WHERE_Y, CT__WHERE_DOUT };
/* prelu: X, Alpha -> Out; prelu_grad: X, Alpha, Out@GRAD -> X@GRAD, Alpha@GRAD. */
enum { CT__PRELU_X, CT__PRELU_ALPHA, CT__PRELU_DOUT };
/* cast_like: X, Like -> Out (Like's dtype). */
enum { CT__CL_X, CT__CL_LIKE };

/* The walk over an output of dims `out` reading up to three inputs broadcast to it: each input's
 * stride per output dim (0 where it is broadcast), and the offsets of the current element. */
typedef struct ct__mwalk {
  int rank, n_in;
  int64_t d[CT_MAX_RANK];
  int64_t s[3][CT_MAX_RANK];
  int64_t idx[CT_MAX_RANK];
  int64_t off[3];
} ct__mwalk;

/* Starts a walk at element `start` of out (row-major) over the inputs of dims in[0..n_in). */
void ct__mwalk_init(ct__mwalk *w, ct_ddim out, const ct_ddim *in, int n_in, int64_t start);

/* Steps to the next element of out. */
static inline void ct__mwalk_next(ct__mwalk *w) {
  for (int k = w->rank - 1; k >= 0; k--) {
    for (int j = 0; j < w->n_in; j++) w->off[j] += w->s[j][k];
    if (++w->idx[k] < w->d[k]) return;
    for (int j = 0; j < w->n_in; j++) w->off[j] -= w->s[j][k] * w->d[k];
    w->idx[k] = 0;
  }
}

/* The numpy broadcast of inputs slots[0..n) (each slot's first variable) into *out;
 * CT_ERR_SHAPE naming the op, the two inputs that clash and the dim otherwise. */
ct_status ct__math_broadcast(const ct_kernel_ctx *c, const size_t *slots, int n, ct_ddim *out);

/* where's checks (Condition bool, X and Y of one dtype) and the broadcast of its three inputs;
 * clip's (Min and Max, when wired, one element of X's dtype; attributes min and max not NaN);
 * prelu's (Alpha of X's dtype, broadcasting to X's dims). Each fails naming the op, the slot and
 * the variable. */
ct_status ct__where_dims(const ct_kernel_ctx *c, ct_ddim *out);
ct_status ct__clip_check(const ct_kernel_ctx *c);
ct_status ct__prelu_check(const ct_kernel_ctx *c);

/* The broadcast of X and Y that Out@GRAD (slot dout) must match in a binary grad op whose first
 * slots are X and Y; X@GRAD and Y@GRAD (when wired) are resized to X's and Y's dims. */
ct_status ct__math_binary_grad_infer(const ct_kernel_ctx *c);

/* Whether dtype t is one a comparison or an arithmetic kernel of this family takes. */
static inline bool ct__math_numeric(ct_dtype t) {
  return t == CT_INT8 || t == CT_UINT8 || t == CT_INT16 || t == CT_INT32 || t == CT_INT64 ||
         t == CT_UINT16 || t == CT_UINT32 || t == CT_UINT64 || t == CT_FLOAT16 ||
         t == CT_FLOAT32 || t == CT_FLOAT64;
}

/* ---- Gradients (ops/defs/math_grad.c) ------------------------------------------------------------ */

/* The makers of where, clip and prelu (the unary and binary types use ct__grad_unary and
 * ct__grad_binary). */
ct_status ct__grad_where(ct_grad_ctx *g);
ct_status ct__grad_clip(ct_grad_ctx *g);
ct_status ct__grad_prelu(ct_grad_ctx *g);

/* The infer-shapes of where_grad, clip_grad and prelu_grad. */
ct_status ct__where_grad_infer(const ct_kernel_ctx *c);
ct_status ct__clip_grad_infer(const ct_kernel_ctx *c);
ct_status ct__prelu_grad_infer(const ct_kernel_ctx *c);

#endif /* CORTEN_OPS_DEFS_MATH_H */
