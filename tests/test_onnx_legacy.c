/* SPDX-License-Identifier: Apache-2.0 */
/* ONNX models of opsets before 7 (the model zoos' and early PyTorch exporters' files): a binary
 * op's B aligned at `axis` (broadcast 1), unsqueezed at its end where it does not reach A's last
 * dim; refused, naming the node, where the import cannot know the ranks; PRelu's slope per
 * channel; Gemm with the old `broadcast` attribute and the variadic Max, Sum of opset 6. */
#include <math.h>
#include <string.h>

#include <corten/corten.h>
#include <corten/onnx.h>

#include "onnx_util.h"
#include "op_util.h"

/* The model's output "y" on inputs (name, dims, values) after a load at opset 6. */
static void run_model(pb *m, const char *const *names, const ct_ddim *dims,
                      const float *const *values, size_t n, ct_ddim want_dims,
                      const float *want, int64_t count) {
  ct_scope *s = ct_scope_new();
  ct_onnx_model *om = ct_onnx_load_buffer(m->p, m->n, s);
  ck_assert_msg(om != NULL, "%s", ct_last_error());
  for (size_t k = 0; k < n; k++) put(s, names[k], CT_FLOAT32, dims[k], values[k]);
  ct_executor *e = ct_executor_new(ct_onnx_program(om), s, ct_cpu());
  ck_assert_msg(e != NULL && ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  ct_executor_free(e);
  const float *y = result(s, "y", CT_FLOAT32, want_dims);
  for (int64_t i = 0; i < count; i++) {
    ck_assert_msg(f32_bits(y[i]) == f32_bits(want[i]), "y[%lld] = %.9g, want %.9g",
                  (long long)i, (double)y[i], (double)want[i]);
  }
  ct_onnx_free(om);
  ct_scope_free(s);
  free(m->p);
}

/* Graph inputs a [2, 3, 2] (declared with a rank, or none when `ranked` is false: a Relu of it
 * then feeds the Add) and b [3]; Add(a, b, broadcast 1, axis 1) -> y, at opset 6. */
static pb add_axis_model(bool ranked) {
  static const int64_t ad[3] = {2, 3, 2}, bd[1] = {3};
  pb g = {0}, n, v;
  if (!ranked) {
    n = ox_node_pb("Relu", (const char *[]){"a", NULL}, (const char *[]){"r", NULL});
    pb_msg(&g, 1, &n);
  }
  n = ox_node_pb("Add", (const char *[]){ranked ? "a" : "r", "b", NULL},
                 (const char *[]){"y", NULL});
  ox_attr_int_pb(&n, "broadcast", 1);
  ox_attr_int_pb(&n, "axis", 1);
  pb_msg(&g, 1, &n);
  pb_str(&g, 2, "legacy_add");
  v = ox_value_pb("a", 1, ad, ranked ? 3 : 0);
  pb_msg(&g, 11, &v);
  v = ox_value_pb("b", 1, bd, 1);
  pb_msg(&g, 11, &v);
  v = ox_value_pb("y", 1, ad, 3);
  pb_msg(&g, 12, &v);
  return ox_model_pb(&g, 6);
}

/* b [3] lies along a's dim 1 of three: b unsqueezed to [3, 1], y[i][j][k] = a + b[j]. */
START_TEST(an_add_aligns_b_at_its_axis) {
  pb m = add_axis_model(true);
  float a[12];
  for (int i = 0; i < 12; i++) a[i] = (float)i;
  static const float b[3] = {100, 200, 300};
  static const float want[12] = {100, 101, 202, 203, 304, 305, 106, 107, 208, 209, 310, 311};
  run_model(&m, (const char *[]){"a", "b"}, (const ct_ddim[]){CT_DIMS(2, 3, 2), CT_DIMS(3)},
            (const float *[]){a, b}, 2, CT_DIMS(2, 3, 2), want, 12);
}
END_TEST

/* A's rank unknown at import (an intermediate of an input declared without a shape): the node
 * is refused by name, nothing guessed. */
START_TEST(an_axis_on_an_operand_of_unknown_rank_is_refused) {
  pb m = add_axis_model(false);
  ct_scope *s = ct_scope_new();
  ck_assert_ptr_null(ct_onnx_load_buffer(m.p, m.n, s));
  ck_assert_int_eq(ct_last_status(), CT_ERR_UNSUPPORTED);
  const char *why = ct_last_error();
  ck_assert_msg(strstr(why, "node 1 (Add, opset 6)") != NULL &&
                    strstr(why, "whose rank the model does not give") != NULL,
                "%s", why);
  ct_scope_free(s);
  free(m.p);
}
END_TEST

/* x [1, 2, 2], slope [2] an initializer: one slope per channel (dim 1), not per column. */
START_TEST(prelu_takes_a_slope_per_channel) {
  static const int64_t xd[3] = {1, 2, 2}, sd[1] = {2};
  static const float slope[2] = {0.5f, 0.25f};
  pb g = {0}, n, t, v;
  n = ox_node_pb("PRelu", (const char *[]){"x", "s", NULL}, (const char *[]){"y", NULL});
  pb_msg(&g, 1, &n);
  pb_str(&g, 2, "legacy_prelu");
  t = ox_tensor_pb("s", 1, sd, 1, slope, sizeof slope);
  pb_msg(&g, 5, &t);
  v = ox_value_pb("x", 1, xd, 3);
  pb_msg(&g, 11, &v);
  v = ox_value_pb("y", 1, xd, 3);
  pb_msg(&g, 12, &v);
  pb m = ox_model_pb(&g, 6);
  static const float x[4] = {-1, 2, -3, 4}, want[4] = {-0.5f, 2, -0.75f, 4};
  run_model(&m, (const char *[]){"x"}, (const ct_ddim[]){CT_DIMS(1, 2, 2)},
            (const float *[]){x}, 1, CT_DIMS(1, 2, 2), want, 4);
}
END_TEST

/* Gemm(a [1, 2], w [2, 2] transB, c [2], broadcast 1) -> g; Max(g, a2) -> m; Sum(m, g) -> y. */
START_TEST(gemm_max_and_sum_of_opset_6) {
  static const int64_t ad[2] = {1, 2}, wd[2] = {2, 2}, cd[1] = {2};
  static const float w[4] = {1, 2, 3, 4}, cb[2] = {10, 20};
  pb g = {0}, n, t, v;
  n = ox_node_pb("Gemm", (const char *[]){"a", "w", "c", NULL}, (const char *[]){"g", NULL});
  ox_attr_int_pb(&n, "broadcast", 1);
  ox_attr_int_pb(&n, "transB", 1);
  pb_msg(&g, 1, &n);
  n = ox_node_pb("Max", (const char *[]){"g", "a2", NULL}, (const char *[]){"m", NULL});
  pb_msg(&g, 1, &n);
  n = ox_node_pb("Sum", (const char *[]){"m", "g", NULL}, (const char *[]){"y", NULL});
  pb_msg(&g, 1, &n);
  pb_str(&g, 2, "legacy_gemm");
  t = ox_tensor_pb("w", 1, wd, 2, w, sizeof w);
  pb_msg(&g, 5, &t);
  t = ox_tensor_pb("c", 1, cd, 1, cb, sizeof cb);
  pb_msg(&g, 5, &t);
  v = ox_value_pb("a", 1, ad, 2);
  pb_msg(&g, 11, &v);
  v = ox_value_pb("a2", 1, ad, 2);
  pb_msg(&g, 11, &v);
  v = ox_value_pb("y", 1, ad, 2);
  pb_msg(&g, 12, &v);
  pb m = ox_model_pb(&g, 6);
  /* g = [1 1] [1 3; 2 4] + [10 20] = {13, 27}; max with {20, 20} = {20, 27}; + g = {33, 54} */
  static const float a[2] = {1, 1}, a2[2] = {20, 20}, want[2] = {33, 54};
  run_model(&m, (const char *[]){"a", "a2"}, (const ct_ddim[]){CT_DIMS(1, 2), CT_DIMS(1, 2)},
            (const float *[]){a, a2}, 2, CT_DIMS(1, 2), want, 2);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("onnx_legacy");
  CT_ADD_TEST(s, an_add_aligns_b_at_its_axis);
  CT_ADD_TEST(s, an_axis_on_an_operand_of_unknown_rank_is_refused);
  CT_ADD_TEST(s, prelu_takes_a_slope_per_channel);
  CT_ADD_TEST(s, gemm_max_and_sum_of_opset_6);
  return s;
}

CT_TEST_MAIN(make_suite)
