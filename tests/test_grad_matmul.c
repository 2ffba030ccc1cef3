/* SPDX-License-Identifier: Apache-2.0 */
/* The gradient of matmul (matmul_grad), against central finite differences in float64
 * (grad_util.h): plain, every transpose, rank-1 operands, batches broadcast either way, size-1
 * dims and empty operands; the float32 kernel against the float64 one; a wrong Out@GRAD. */
#include <corten/corten.h>

#include "grad_util.h"

static const char *const xy[] = {"x", "y"};
static bool tx, ty;

static void build_matmul(ct_program *p) {
  ct_op *op = op_xy("matmul", "x", "y", "out");
  ck_assert_int_eq(ct_op_set_attr_bool(op, "transpose_x", tx), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "transpose_y", ty), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

/* Checks d(loss)/dx and d(loss)/dy of x (dims xd) @ y (dims yd) under the transposes. */
static void check_mm(ct_ddim xd, ct_ddim yd, bool tx_, bool ty_) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", xd, 0.1);
  put_smooth(s, "y", yd, 0.7);
  tx = tx_;
  ty = ty_;
  check_grads(s, build_matmul, "loss", xy, 2);
  ct_scope_free(s);
}

START_TEST(matmul_grads_plain) { check_mm(CT_DIMS(2, 3), CT_DIMS(3, 4), false, false); }
END_TEST

START_TEST(matmul_grads_each_transpose) {
  check_mm(CT_DIMS(3, 2), CT_DIMS(3, 4), true, false);
  check_mm(CT_DIMS(2, 3), CT_DIMS(4, 3), false, true);
  check_mm(CT_DIMS(3, 2), CT_DIMS(4, 3), true, true);
}
END_TEST

/* A rank-1 X is a row, a rank-1 Y a column; their transpose attributes are ignored. */
START_TEST(matmul_grads_rank1_operands) {
  check_mm(CT_DIMS(3), CT_DIMS(3, 4), false, false);
  check_mm(CT_DIMS(3), CT_DIMS(4, 3), true, true);
  check_mm(CT_DIMS(2, 3), CT_DIMS(3), false, true);
  check_mm(CT_DIMS(3, 2), CT_DIMS(3), true, false);
  check_mm(CT_DIMS(3), CT_DIMS(3), false, false); /* a rank-0 Out */
  check_mm(CT_DIMS(3), CT_DIMS(2, 3, 4), false, false);
  check_mm(CT_DIMS(2, 4, 3), CT_DIMS(3), false, false);
}
END_TEST

/* Batches: the gradient of an operand broadcast over batch dims is summed over them. */
START_TEST(matmul_grads_batches) {
  check_mm(CT_DIMS(2, 2, 3), CT_DIMS(2, 3, 4), false, false); /* same batch */
  check_mm(CT_DIMS(2, 2, 3), CT_DIMS(3, 4), false, false);    /* Y shared: one folded GEMM */
  check_mm(CT_DIMS(2, 2, 3), CT_DIMS(4, 3), false, true);
  check_mm(CT_DIMS(2, 3, 2), CT_DIMS(3, 4), true, false);     /* X transposed: no folding */
  check_mm(CT_DIMS(2, 3), CT_DIMS(3, 3, 4), false, false);    /* X shared */
  check_mm(CT_DIMS(2, 1, 3, 2), CT_DIMS(3, 4, 3), true, true); /* broadcast both ways */
  /* Y shared and X's batch dims of extent 1 among them: one folded GEMM too */
  check_mm(CT_DIMS(1, 2, 3), CT_DIMS(3, 4), false, false);
  check_mm(CT_DIMS(2, 1, 2, 3), CT_DIMS(4, 3), false, true);
}
END_TEST

START_TEST(matmul_grads_size1_dims) {
  check_mm(CT_DIMS(1, 1), CT_DIMS(1, 5), false, false);
  check_mm(CT_DIMS(1, 2, 3), CT_DIMS(1, 3, 1), false, false);
  check_mm(CT_DIMS(4, 1), CT_DIMS(1, 4, 1), true, false);
}
END_TEST

/* Empty: an empty inner dim (Out all zeros), no rows, an empty batch. The gradients take the
 * operands' dims and are zeros wherever the operand has elements. */
START_TEST(matmul_grads_empty) {
  const struct {
    ct_ddim x, y;
  } cases[] = {
      {CT_DIMS(2, 0), CT_DIMS(0, 3)},
      {CT_DIMS(0, 3), CT_DIMS(3, 2)},
      {CT_DIMS(0, 2, 3), CT_DIMS(3, 4)},
      {CT_DIMS(1, 2, 3), CT_DIMS(0, 3, 4)},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ct_scope *s = ct_scope_new();
    put_smooth(s, "x", cases[i].x, 0.1);
    put_smooth(s, "y", cases[i].y, 0.7);
    tx = ty = false;
    run_backward(s, build_matmul, xy, 2);
    const ct_tensor *dx = tensor_dims(s, "x@GRAD", cases[i].x);
    const ct_tensor *dy = tensor_dims(s, "y@GRAD", cases[i].y);
    for (int64_t j = 0; j < ct_tensor_numel(dx); j++) ck_assert(var_f64(s, "x@GRAD")[j] == 0.0);
    for (int64_t j = 0; j < ct_tensor_numel(dy); j++) ck_assert(var_f64(s, "y@GRAD")[j] == 0.0);
    ct_scope_free(s);
  }
}
END_TEST

/* Only X depends on a parameter: matmul_grad writes X@GRAD alone. */
START_TEST(matmul_grad_of_x_only) {
  static const char *const just_x[] = {"x"};
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(2, 3), 0.1);
  put_smooth(s, "y", CT_DIMS(3, 4), 0.7);
  tx = ty = false;
  check_grads(s, build_matmul, "loss", just_x, 1);
  ck_assert_ptr_null(ct_scope_find_var(s, "y@GRAD"));
  ct_scope_free(s);
}
END_TEST

static ct_op *mm_grad_op(bool tx_, bool ty_) {
  ct_op *op = new_op("matmul_grad");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Y", "y"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Out@GRAD", "g"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "X@GRAD", "dx"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Y@GRAD", "dy"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "transpose_x", tx_), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "transpose_y", ty_), CT_OK);
  return op;
}

/* The float32 kernel computes what the float64 one does, on a batch broadcast both ways. */
START_TEST(matmul_grad_f32_matches_f64) {
  static const char *const ins[] = {"x", "y", "g"}, *const outs[] = {"dx", "dy"};
  const ct_ddim dims[] = {CT_DIMS(2, 1, 3, 2), CT_DIMS(3, 4, 3), CT_DIMS(2, 3, 2, 4)};
  ct_op *op = mm_grad_op(true, true);
  check_f32_matches_f64(op, ins, dims, 3, outs, 2);
  ct_op_free(op);
}
END_TEST

/* An Out@GRAD of other dims than the product's is refused, naming the op and variable. */
START_TEST(matmul_grad_refuses_wrong_dout) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(2, 3), 0.1);
  put_smooth(s, "y", CT_DIMS(3, 4), 0.7);
  put_smooth(s, "g", CT_DIMS(2, 5), 0.2);
  ct_op *op = mm_grad_op(false, false);
  run_fails(op, s, CT_ERR_SHAPE, "matmul_grad", "Out@GRAD", "'g'", "[2,5]", "[2,4]", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("grad_matmul");
  CT_ADD_TEST(s, matmul_grads_plain);
  CT_ADD_TEST(s, matmul_grads_each_transpose);
  CT_ADD_TEST(s, matmul_grads_rank1_operands);
  CT_ADD_TEST(s, matmul_grads_batches);
  CT_ADD_TEST(s, matmul_grads_size1_dims);
  CT_ADD_TEST(s, matmul_grads_empty);
  CT_ADD_TEST(s, matmul_grad_of_x_only);
  CT_ADD_TEST(s, matmul_grad_f32_matches_f64);
  CT_ADD_TEST(s, matmul_grad_refuses_wrong_dout);
  return s;
}

CT_TEST_MAIN(make_suite)
