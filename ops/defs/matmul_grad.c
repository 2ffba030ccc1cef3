/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/matmul_grad.c: the gradient op type of matmul (PaddlePaddle's name and slots); its
 * maker is the binary one (ct__grad_binary), which copies transpose_x and transpose_y.
 *
 *   matmul_grad  X, Y, Out@GRAD -> X@GRAD, Y@GRAD (each optional); transpose_x, transpose_y
 *       with A = op(X), B = op(Y) the matrices the forward op multiplies (per batch entry),
 *       dA = dOut B^T and dB = A^T dOut, transposed back where X or Y was; a rank-1 operand is
 *       the row or column the forward op made of it, and an operand broadcast over batch dims
 *       gets the sum over them, so X@GRAD and Y@GRAD have the dims of X and Y. */
#include "ops/defs.h"

/* The forward op's plan (ct__mm_plan reads X, Y and both attributes at the same indices as
 * matmul) gives Out's dims, which Out@GRAD must have; all inputs have X's dtype. */
static ct_status mm_grad_infer(const ct_kernel_ctx *c) {
  const ct_tensor *x = ct_kernel_in(c, CT__G_X, 0), *y = ct_kernel_in(c, CT__G_Y, 0);
  ct_status s = ct__k_check_dtype(c, CT__G_Y, 0, x->dtype);
  if (s == CT_OK) s = ct__k_check_dtype(c, CT__G_DOUT, 0, x->dtype);
  ct__mm_shape plan;
  if (s == CT_OK) s = ct__mm_plan(c, &plan);
  if (s == CT_OK) s = ct__grad_check_dout(c, CT__G_DOUT, plan.out, "the product of X and Y");
  if (s == CT_OK && ct_kernel_out_count(c, CT__G_DX) > 0) s = ct__k_resize(c, CT__G_DX, 0, x->dims);
  if (s == CT_OK && ct_kernel_out_count(c, CT__G_DY) > 0) s = ct__k_resize(c, CT__G_DY, 0, y->dims);
  return s;
}

static const ct_slot_def mm_grad_in[] = {{"X", 0}, {"Y", 0}, {"Out@GRAD", 0}};
static const ct_slot_def mm_grad_out[] = {{"X@GRAD", CT_SLOT_OPTIONAL},
                                          {"Y@GRAD", CT_SLOT_OPTIONAL}};

/* The attributes in matmul's order, so CT__MM_TRANSPOSE_X and _Y index both. */
static const ct_attr_def mm_grad_attrs[] = {
    {"transpose_x", {.type = CT_ATTR_BOOL, .u.b = false}, false},
    {"transpose_y", {.type = CT_ATTR_BOOL, .u.b = false}, false},
};

static const ct_op_def defs[] = {
    {.type = "matmul_grad", .inputs = mm_grad_in, .n_inputs = 3, .outputs = mm_grad_out,
     .n_outputs = 2, .attrs = mm_grad_attrs, .n_attrs = 2,
     .flags = CT_OP_PURE_INFER, .infer_shape = mm_grad_infer},
};

const ct__def_table ct__matmul_grad_defs = CT__TABLE(defs);
