/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/shape_grad.c: the gradients of the shape family: the grad op types (PaddlePaddle's
 * names and slots), concat's grad-op maker, and reshape_grad's kernel, which serves every place.
 *
 *   reshape_grad    X, Out@GRAD -> X@GRAD: Out@GRAD with X's dims, sharing its memory. X's dims
 *                   are read when the op runs, since reshape's `shape` gives them only by
 *                   values (0 copies X's dim, -1 infers one).
 *   transpose_grad  X, Out@GRAD -> X@GRAD; axis: Out@GRAD permuted by the inverse of axis
 *   concat_grad     X (many), Out@GRAD -> X@GRAD (many, optional); axis: each X@GRAD_i the
 *                   slice of Out@GRAD that X_i filled; an entry named CT__GRAD_EMPTY (an input
 *                   that needs no gradient) is not written
 * reshape's and transpose's makers are the shared ct__grad_unary (their grad types read X). */
#include <stdlib.h>
#include <string.h>

#include <corten/backward.h>

#include "common/alloc.h"
#include "ops/defs.h"

enum { IN_X = 0, IN_DOUT = 1 };

static ct_status reshape_grad_infer(const ct_kernel_ctx *c) {
  const ct_tensor *x = ct_kernel_in(c, IN_X, 0), *dout = ct_kernel_in(c, IN_DOUT, 0);
  ct_status s = ct__k_check_dtype(c, IN_DOUT, 0, x->dtype);
  if (s != CT_OK) return s;
  if (dout->numel != x->numel) {
    char a[CT__DDIM_STR_CAP], b[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input Out@GRAD variable '%s' is %s (%lld elements) but input X "
                          "variable '%s' is %s (%lld): wire the gradient of the forward op's Out",
                          ct_kernel_in_name(c, IN_DOUT, 0), ct_ddim_str(dout->dims, a, sizeof a),
                          (long long)dout->numel, ct_kernel_in_name(c, IN_X, 0),
                          ct_ddim_str(x->dims, b, sizeof b), (long long)x->numel);
  }
  return ct__k_resize(c, CT__G_DX, 0, x->dims);
}

ct_status ct__reshape_grad_kernel(const ct_kernel_ctx *c) {
  ct_status s = reshape_grad_infer(c); /* checks again: a kernel may be run on its own */
  if (CT__UNLIKELY(s != CT_OK)) return s;
  return ct__share_as(c, ct_kernel_in(c, IN_DOUT, 0), ct_kernel_in(c, IN_X, 0)->dims);
}

/* Out@GRAD must have X's dims permuted by axis (ct__tr_perm reads X and axis at transpose's
 * indices). */
static ct_status tr_grad_infer(const ct_kernel_ctx *c) {
  const ct_tensor *x = ct_kernel_in(c, IN_X, 0);
  int perm[CT_MAX_RANK];
  ct_status s = ct__k_check_dtype(c, IN_DOUT, 0, x->dtype);
  if (s == CT_OK) s = ct__tr_perm(c, perm);
  if (s != CT_OK) return s;
  ct_ddim want = {.rank = x->dims.rank};
  for (int k = 0; k < want.rank; k++) want.d[k] = x->dims.d[perm[k]];
  s = ct__grad_check_dout(c, IN_DOUT, want, "X transposed by attribute 'axis'");
  return s == CT_OK ? ct__k_resize(c, CT__G_DX, 0, x->dims) : s;
}

/* Out@GRAD must have concat's Out dims (ct__concat_dims reads X and axis at concat's indices);
 * X@GRAD has one entry per X, each taking that X's dims. */
static ct_status cc_grad_infer(const ct_kernel_ctx *c) {
  int axis;
  ct_ddim want;
  ct_status s = ct__concat_dims(c, &axis, &want);
  if (s == CT_OK) s = ct__k_check_dtype(c, IN_DOUT, 0, c->dtype);
  if (s == CT_OK) s = ct__grad_check_dout(c, IN_DOUT, want, "the concatenation of X");
  if (s != CT_OK) return s;
  size_t n = ct_kernel_in_count(c, IN_X), m = ct_kernel_out_count(c, CT__G_DX);
  if (m != 0 && m != n) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "output X@GRAD has %zu variables but input X has %zu: wire one per "
                          "input, named '" CT__GRAD_EMPTY "' where no gradient is wanted",
                          m, n);
  }
  for (size_t i = 0; i < m; i++) {
    if (strcmp(ct_kernel_out_name(c, CT__G_DX, i), CT__GRAD_EMPTY) == 0) continue;
    s = ct__k_resize(c, CT__G_DX, i, ct_kernel_in(c, IN_X, i)->dims);
    if (s != CT_OK) return s;
  }
  return CT_OK;
}

static const ct_slot_def x_dout[] = {{"X", 0}, {"Out@GRAD", 0}};
static const ct_slot_def dx[] = {{"X@GRAD", 0}};
static const ct_slot_def xs_dout[] = {{"X", CT_SLOT_MANY}, {"Out@GRAD", 0}};
static const ct_slot_def dxs[] = {{"X@GRAD", CT_SLOT_MANY | CT_SLOT_OPTIONAL}};

/* The attributes of transpose and concat, at the same indices. */
static const ct_attr_def tr_grad_attrs[] = {
    {"axis", {.type = CT_ATTR_INTS, .u.ints = {NULL, 0}}, true},
};
static const ct_attr_def cc_grad_attrs[] = {{"axis", {.type = CT_ATTR_INT, .u.i = 0}, false}};

static const ct_op_def defs[] = {
    {.type = "reshape_grad", .inputs = x_dout, .n_inputs = 2, .outputs = dx, .n_outputs = 1,
     .flags = CT_OP_PURE_INFER, .infer_shape = reshape_grad_infer},
    {.type = "transpose_grad", .inputs = x_dout, .n_inputs = 2, .outputs = dx, .n_outputs = 1,
     .attrs = tr_grad_attrs, .n_attrs = 1, .flags = CT_OP_PURE_INFER, .infer_shape = tr_grad_infer},
    {.type = "concat_grad", .inputs = xs_dout, .n_inputs = 2, .outputs = dxs, .n_outputs = 1,
     .attrs = cc_grad_attrs, .n_attrs = 1, .flags = CT_OP_PURE_INFER, .infer_shape = cc_grad_infer},
};

const ct__def_table ct__shape_grad_defs = CT__TABLE(defs);

/* concat: one concat_grad over all inputs (their dims place the slices), writing the gradients
 * of those that need one. */
ct_status ct__grad_concat(ct_grad_ctx *g) {
  size_t n = ct_grad_input_count(g, "X");
  const char **names = ct__malloc(2 * (n ? n : 1) * sizeof *names);
  if (names == NULL) {
    return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_program_append_backward: out of host memory");
  }
  const char **grads = names + n;
  bool any = false;
  for (size_t i = 0; i < n; i++) {
    names[i] = ct_grad_input(g, "X", i);
    grads[i] = ct_grad_input_grad(g, "X", i);
    any = any || grads[i] != NULL;
    if (grads[i] == NULL) grads[i] = CT__GRAD_EMPTY;
  }
  ct_status s = CT_OK;
  ct_op *op = any ? ct_grad_op_new(g, "concat_grad") : NULL;
  const char *dout = any ? ct_grad_output_grad(g, "Out", 0) : NULL;
  if (any && (op == NULL || dout == NULL)) s = ct_last_status();
  if (op != NULL && s == CT_OK) s = ct_op_set_inputs(op, "X", names, n);
  if (op != NULL && s == CT_OK) s = ct_op_set_input(op, "Out@GRAD", dout);
  if (op != NULL && s == CT_OK) s = ct_op_set_outputs(op, "X@GRAD", grads, n);
  if (op != NULL && s == CT_OK) s = ct_grad_copy_attrs(g, op);
  free(names);
  return s;
}
