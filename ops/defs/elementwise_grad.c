/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/elementwise_grad.c: the gradients of the elementwise family: the grad-op makers of
 * its forward types, and the grad op types they append (PaddlePaddle's names and slots).
 *
 *   elementwise_{add,sub,mul,div}_grad  X, Y, Out@GRAD -> X@GRAD, Y@GRAD (each optional)
 *       each input's gradient is summed back over the dims it was broadcast along, so it has
 *       that input's dims
 *   relu_grad, sigmoid_grad, tanh_grad, exp_grad  Out, Out@GRAD -> X@GRAD (from the output:
 *       relu's mask, sigmoid's Out(1-Out), tanh's 1-Out^2, exp's Out)
 *   log_grad                           X, Out@GRAD -> X@GRAD (dOut / X)
 *   cast_grad                          X, Out@GRAD -> X@GRAD (dOut cast back to X's dtype)
 *   scale: its gradient is `scale` itself (scale = the forward scale, bias 0); assign's is
 *   `assign`.
 * The makers serve the other families too (ops/defs.h says which); each copies the forward op's
 * attributes that its grad op type also has (matmul's transposes, softmax's axis ...). */
#include <stdio.h>
#include <string.h>

#include <corten/backward.h>

#include "ops/defs.h"

/* ---- Grad op types ------------------------------------------------------------------------- */

static const ct_slot_def binary_in[] = {{"X", 0}, {"Y", 0}, {"Out@GRAD", 0}};
static const ct_slot_def binary_out[] = {{"X@GRAD", CT_SLOT_OPTIONAL},
                                         {"Y@GRAD", CT_SLOT_OPTIONAL}};
static const ct_slot_def from_out_in[] = {{"Out", 0}, {"Out@GRAD", 0}};
static const ct_slot_def from_x_in[] = {{"X", 0}, {"Out@GRAD", 0}};
static const ct_slot_def dx_out[] = {{"X@GRAD", 0}};

ct_status ct__grad_check_dout(const ct_kernel_ctx *c, size_t slot, ct_ddim want,
                              const char *what) {
  const ct_tensor *dout = ct_kernel_in(c, slot, 0);
  if (ct_ddim_equal(dout->dims, want)) return CT_OK;
  char a[CT__DDIM_STR_CAP], b[CT__DDIM_STR_CAP];
  const char *slot_name = c->op->def->in[slot].name; /* "Out@GRAD", "Output@GRAD" ... */
  int base = (int)(strlen(slot_name) > 5 ? strlen(slot_name) - 5 : 0);
  return ct_kernel_fail(c, CT_ERR_SHAPE,
                        "input %s variable '%s' is %s but %s is %s: wire the gradient of "
                        "the forward op's %.*s",
                        slot_name, ct_kernel_in_name(c, slot, 0),
                        ct_ddim_str(dout->dims, a, sizeof a), what, ct_ddim_str(want, b, sizeof b),
                        base, slot_name);
}

ct_status ct__grad_outs(const ct_kernel_ctx *c, void **dx, void **dy) {
  *dx = *dy = NULL;
  if (ct_kernel_out_count(c, CT__G_DX) > 0 &&
      (*dx = ct__k_out_data(c, CT__G_DX, 0, c->dtype)) == NULL) {
    return ct_last_status();
  }
  if (ct_kernel_out_count(c, CT__G_DY) > 0 &&
      (*dy = ct__k_out_data(c, CT__G_DY, 0, c->dtype)) == NULL) {
    return ct_last_status();
  }
  return CT_OK;
}

/* X@GRAD and Y@GRAD take the dims of X and Y; Out@GRAD must have the dims the forward op's
 * broadcast gives, and every input the dtype of X. */
static ct_status binary_grad_infer(const ct_kernel_ctx *c) {
  const ct_tensor *x = ct_kernel_in(c, CT__G_X, 0), *y = ct_kernel_in(c, CT__G_Y, 0);
  ct_status s = ct__k_check_dtype(c, CT__G_Y, 0, x->dtype);
  if (s == CT_OK) s = ct__k_check_dtype(c, CT__G_DOUT, 0, x->dtype);
  ct_ddim out;
  if (s == CT_OK) s = ct__k_broadcast(c, x->dims, y->dims, &out);
  if (s == CT_OK) s = ct__grad_check_dout(c, CT__G_DOUT, out, "the broadcast of X and Y");
  if (s != CT_OK) return s;
  if (ct_kernel_out_count(c, CT__G_DX) > 0 &&
      (s = ct__k_resize(c, CT__G_DX, 0, x->dims)) != CT_OK) {
    return s;
  }
  if (ct_kernel_out_count(c, CT__G_DY) > 0) s = ct__k_resize(c, CT__G_DY, 0, y->dims);
  return s;
}

/* One input (Out or X) and Out@GRAD of the same dims and dtype; X@GRAD takes them. */
ct_status ct__unary_grad_infer(const ct_kernel_ctx *c) {
  const ct_tensor *a = ct_kernel_in(c, CT__G_UNARY_IN, 0);
  const ct_tensor *dout = ct_kernel_in(c, CT__G_UNARY_DOUT, 0);
  ct_status s = ct__k_check_dtype(c, CT__G_UNARY_DOUT, 0, a->dtype);
  if (s != CT_OK) return s;
  if (!ct_ddim_equal(a->dims, dout->dims)) {
    char sa[CT__DDIM_STR_CAP], sb[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input %s variable '%s' is %s but input Out@GRAD variable '%s' is %s: "
                          "they must have the same dims",
                          c->op->def->in[0].name, ct_kernel_in_name(c, CT__G_UNARY_IN, 0),
                          ct_ddim_str(a->dims, sa, sizeof sa),
                          ct_kernel_in_name(c, CT__G_UNARY_DOUT, 0),
                          ct_ddim_str(dout->dims, sb, sizeof sb));
  }
  return ct__k_resize(c, CT__G_DX, 0, a->dims);
}

/* cast_grad: the kernel is chosen by X's dtype (the first input); Out@GRAD may be any dtype. */
static ct_status cast_grad_infer(const ct_kernel_ctx *c) {
  const ct_tensor *x = ct_kernel_in(c, CT__G_UNARY_IN, 0);
  const ct_tensor *dout = ct_kernel_in(c, CT__G_UNARY_DOUT, 0);
  if (!ct_ddim_equal(x->dims, dout->dims)) {
    char sa[CT__DDIM_STR_CAP], sb[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input X variable '%s' is %s but input Out@GRAD variable '%s' is %s: "
                          "they must have the same dims",
                          ct_kernel_in_name(c, CT__G_UNARY_IN, 0),
                          ct_ddim_str(x->dims, sa, sizeof sa),
                          ct_kernel_in_name(c, CT__G_UNARY_DOUT, 0),
                          ct_ddim_str(dout->dims, sb, sizeof sb));
  }
  return ct__k_resize(c, CT__G_DX, 0, x->dims);
}

#define BINARY_GRAD(name)                                                                    \
  {.type = (name), .inputs = binary_in, .n_inputs = 3, .outputs = binary_out, .n_outputs = 2, \
   .flags = CT_OP_PURE_INFER, .infer_shape = binary_grad_infer}
#define UNARY_GRAD(name, in)                                                          \
  {.type = (name), .inputs = (in), .n_inputs = 2, .outputs = dx_out, .n_outputs = 1,  \
   .flags = CT_OP_PURE_INFER, .infer_shape = ct__unary_grad_infer}

static const ct_op_def defs[] = {
    BINARY_GRAD("elementwise_add_grad"), BINARY_GRAD("elementwise_sub_grad"),
    BINARY_GRAD("elementwise_mul_grad"), BINARY_GRAD("elementwise_div_grad"),
    UNARY_GRAD("relu_grad", from_out_in), UNARY_GRAD("sigmoid_grad", from_out_in),
    UNARY_GRAD("tanh_grad", from_out_in),  UNARY_GRAD("exp_grad", from_out_in),
    UNARY_GRAD("log_grad", from_x_in),
    {.type = "cast_grad", .inputs = from_x_in, .n_inputs = 2, .outputs = dx_out, .n_outputs = 1,
     .flags = CT_OP_PURE_INFER, .infer_shape = cast_grad_infer},
};

const ct__def_table ct__elementwise_grad_defs = CT__TABLE(defs);

/* ---- Grad-op makers of the forward types --------------------------------------------------- */

/* The grad op "<forward type>_grad", or NULL with the error recorded. */
static ct_op *grad_op(ct_grad_ctx *g) {
  char type[64];
  snprintf(type, sizeof type, "%s_grad", ct_op_type(ct_grad_forward(g)));
  return ct_grad_op_new(g, type);
}

ct_status ct__grad_wire_in(ct_op *op, const char *slot, const char *name) {
  return name == NULL ? ct_last_status() : ct_op_set_input(op, slot, name);
}

/* fill_any_like: Out does not depend on X's values, so X gets no contribution (a zero
 * gradient); the maker makes nothing. */
ct_status ct__grad_none(ct_grad_ctx *g) {
  (void)g;
  return CT_OK;
}

ct_status ct__grad_binary(ct_grad_ctx *g) {
  const char *dx = ct_grad_input_grad(g, "X", 0), *dy = ct_grad_input_grad(g, "Y", 0);
  if (dx == NULL && dy == NULL) return CT_OK;
  ct_op *op = grad_op(g);
  if (op == NULL) return ct_last_status();
  ct_status s = ct__grad_wire_in(op, "X", ct_grad_input(g, "X", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Y", ct_grad_input(g, "Y", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Out@GRAD", ct_grad_output_grad(g, "Out", 0));
  if (s == CT_OK && dx != NULL) s = ct_op_set_output(op, "X@GRAD", dx);
  if (s == CT_OK && dy != NULL) s = ct_op_set_output(op, "Y@GRAD", dy);
  return s == CT_OK ? ct_grad_copy_attrs(g, op) : s;
}

/* relu, sigmoid, tanh, exp, softmax: from Out; log, cast and the types whose gradient reads X
 * (mean, reshape, transpose, reduce_sum ...): from X. The grad type's first slot says which. */
ct_status ct__grad_unary(ct_grad_ctx *g) {
  const char *dx = ct_grad_input_grad(g, "X", 0);
  if (dx == NULL) return CT_OK;
  ct_op *op = grad_op(g);
  if (op == NULL) return ct_last_status();
  ct_status s = strcmp(op->def->in[CT__G_UNARY_IN].name, "X") == 0
                    ? ct__grad_wire_in(op, "X", ct_grad_input(g, "X", 0))
                    : ct__grad_wire_in(op, "Out", ct_grad_output(g, "Out", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Out@GRAD", ct_grad_output_grad(g, "Out", 0));
  if (s == CT_OK) s = ct_op_set_output(op, "X@GRAD", dx);
  return s == CT_OK ? ct_grad_copy_attrs(g, op) : s;
}

/* An op of the forward's own type taking Out@GRAD to X@GRAD (NULL when X needs no gradient,
 * with *s CT_OK, or on failure, with *s the status). */
static ct_op *same_type_grad(ct_grad_ctx *g, ct_status *s) {
  const char *dx = ct_grad_input_grad(g, "X", 0);
  *s = CT_OK;
  if (dx == NULL) return NULL;
  ct_op *op = ct_grad_op_new(g, ct_op_type(ct_grad_forward(g)));
  if (op == NULL) {
    *s = ct_last_status();
    return NULL;
  }
  *s = ct__grad_wire_in(op, "X", ct_grad_output_grad(g, "Out", 0));
  if (*s == CT_OK) *s = ct_op_set_output(op, "Out", dx);
  return *s == CT_OK ? op : NULL;
}

/* scale: dX = scale x dOut (the bias does not reach the gradient). */
ct_status ct__grad_scale(ct_grad_ctx *g) {
  ct_status s;
  ct_op *op = same_type_grad(g, &s);
  if (op == NULL) return s;
  return ct_op_set_attr_float(op, "scale", ct_grad_forward(g)->attr[CT__SCALE_SCALE].u.f);
}

/* assign: dX = dOut; sum: dX_i = dOut for each of its inputs X_i (one assign each). */
ct_status ct__grad_assign(ct_grad_ctx *g) {
  for (size_t i = 0, n = ct_grad_input_count(g, "X"); i < n; i++) {
    const char *dx = ct_grad_input_grad(g, "X", i);
    if (dx == NULL) continue;
    ct_op *op = ct_grad_op_new(g, "assign");
    if (op == NULL) return ct_last_status();
    ct_status s = ct__grad_wire_in(op, "X", ct_grad_output_grad(g, "Out", 0));
    if (s == CT_OK) s = ct_op_set_output(op, "Out", dx);
    if (s != CT_OK) return s;
  }
  return CT_OK;
}
