/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/math_grad.c: the gradients of the math family (ops/defs/math.c lists the grad op
 * types beside the forward ones, since the family registers one table):
 *
 *   <unary>_grad      X, Out@GRAD -> X@GRAD = dOut f'(X), the forward's attributes (sqrt, abs,
 *                     neg, reciprocal, erf, the trigonometric and hyperbolic functions and the
 *                     activations); floor, ceil, round and sign pass no gradient (zero almost
 *                     everywhere)
 *   elementwise_{max,min,pow}_grad  X, Y, Out@GRAD -> X@GRAD, Y@GRAD (each optional), summed
 *                     back over the dims each input was broadcast along; max and min send the
 *                     gradient to X where X wins or ties, to Y elsewhere
 *   where_grad        Condition, X, Y, Out@GRAD -> X@GRAD (dOut where Condition), Y@GRAD (dOut
 *                     elsewhere), each summed back to its input's dims
 *   clip_grad         X, Min, Max, Out@GRAD -> X@GRAD: dOut where min <= X <= max, else 0
 *   prelu_grad        X, Alpha, Out@GRAD -> X@GRAD (dOut, or Alpha dOut where X < 0),
 *                     Alpha@GRAD (X dOut where X < 0, summed back to Alpha's dims) */
#include <stdio.h>

#include <corten/backward.h>

#include "ops/defs/math.h"

/* Out@GRAD has dims `want`; each wired output k takes the dims of input in_slot[k]. */
static ct_status grad_dims(const ct_kernel_ctx *c, size_t dout, ct_ddim want, const char *what,
                           const size_t *in_slot, size_t n_out) {
  ct_status s = ct__k_check_dtype(c, dout, 0, ct_kernel_in(c, in_slot[0], 0)->dtype);
  if (s == CT_OK) s = ct__grad_check_dout(c, dout, want, what);
  for (size_t k = 0; s == CT_OK && k < n_out; k++) {
    if (ct_kernel_out_count(c, k) > 0) s = ct__k_resize(c, k, 0, ct_kernel_in(c, in_slot[k], 0)->dims);
  }
  return s;
}

ct_status ct__math_binary_grad_infer(const ct_kernel_ctx *c) {
  static const size_t xy[2] = {CT__IN_X, CT__IN_Y};
  ct_status s = ct__k_check_dtype(c, CT__IN_Y, 0, c->dtype);
  ct_ddim out;
  if (s == CT_OK) s = ct__math_broadcast(c, xy, 2, &out);
  return s == CT_OK ? grad_dims(c, CT__G_DOUT, out, "the broadcast of X and Y", xy, 2) : s;
}

ct_status ct__where_grad_infer(const ct_kernel_ctx *c) {
  static const size_t xy[2] = {CT__WHERE_X, CT__WHERE_Y};
  ct_ddim out;
  ct_status s = ct__where_dims(c, &out);
  return s == CT_OK ? grad_dims(c, CT__WHERE_DOUT, out, "the broadcast of the inputs", xy, 2)
                    : s;
}

ct_status ct__clip_grad_infer(const ct_kernel_ctx *c) {
  static const size_t x[1] = {CT__CLIP_X};
  ct_status s = ct__clip_check(c);
  ct_ddim xd = ct_kernel_in(c, CT__CLIP_X, 0)->dims;
  return s == CT_OK ? grad_dims(c, CT__CLIPG_DOUT, xd, "input X", x, 1) : s;
}

ct_status ct__prelu_grad_infer(const ct_kernel_ctx *c) {
  static const size_t xa[2] = {CT__PRELU_X, CT__PRELU_ALPHA};
  ct_status s = ct__prelu_check(c);
  ct_ddim xd = ct_kernel_in(c, CT__PRELU_X, 0)->dims;
  return s == CT_OK ? grad_dims(c, CT__PRELU_DOUT, xd, "input X", xa, 2) : s;
}

/* ---- The grad-op makers ---------------------------------------------------------------------- */

/* Wires input slot of op to the forward's input of the same slot when it is wired there. */
static ct_status wire_same(ct_grad_ctx *g, ct_op *op, const char *slot) {
  if (ct_grad_input_count(g, slot) == 0) return CT_OK;
  return ct__grad_wire_in(op, slot, ct_grad_input(g, slot, 0));
}

/* op (type `type`) reading the forward's inputs named in[0..n) and Out@GRAD, writing the
 * gradients of the inputs named grads[0..n_g) into the grad type's outputs "<name>@GRAD". */
static ct_status make(ct_grad_ctx *g, const char *type, const char *const *in, size_t n,
                      const char *const *grads, size_t n_g) {
  const char *dst[2] = {NULL, NULL};
  bool any = false;
  for (size_t k = 0; k < n_g; k++) {
    dst[k] = ct_grad_input_grad(g, grads[k], 0);
    any = any || dst[k] != NULL;
  }
  if (!any) return CT_OK;
  ct_op *op = ct_grad_op_new(g, type);
  if (op == NULL) return ct_last_status();
  ct_status s = CT_OK;
  for (size_t k = 0; s == CT_OK && k < n; k++) s = wire_same(g, op, in[k]);
  if (s == CT_OK) s = ct__grad_wire_in(op, "Out@GRAD", ct_grad_output_grad(g, "Out", 0));
  for (size_t k = 0; s == CT_OK && k < n_g; k++) {
    char slot[32];
    snprintf(slot, sizeof slot, "%s@GRAD", grads[k]);
    if (dst[k] != NULL) s = ct_op_set_output(op, slot, dst[k]);
  }
  return s == CT_OK ? ct_grad_copy_attrs(g, op) : s;
}

ct_status ct__grad_where(ct_grad_ctx *g) {
  static const char *const in[] = {"Condition", "X", "Y"}, *const grads[] = {"X", "Y"};
  return make(g, "where_grad", in, 3, grads, 2);
}

ct_status ct__grad_clip(ct_grad_ctx *g) {
  static const char *const in[] = {"X", "Min", "Max"}, *const grads[] = {"X"};
  return make(g, "clip_grad", in, 3, grads, 1);
}

ct_status ct__grad_prelu(ct_grad_ctx *g) {
  static const char *const in[] = {"X", "Alpha"}, *const grads[] = {"X", "Alpha"};
  return make(g, "prelu_grad", in, 2, grads, 2);
}
