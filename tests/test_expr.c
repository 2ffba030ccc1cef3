/* SPDX-License-Identifier: Apache-2.0 */
/* Lazy expressions (corten/expr.h): every node kind and assignment mode against the op-by-op
 * result, bit for bit; broadcasting; dst as a leaf; float16 and bfloat16 computed in float32;
 * the dot rule against a direct CBLAS call. Errors and ownership: test_expr_errors.c. */
#include <cblas.h>

#include "expr_util.h"

static const ct_dtype float_types[] = {CT_FLOAT32, CT_FLOAT64};

/* 1000 elements: several blocks of the engine and a partial last one. */
#define N 1000

/* ---- Node kinds that are ops: bit-identical to the op ---------------------------------------- */

START_TEST(binary_ops_match_the_elementwise_ops) {
  static const struct { ct_expr_op op; const char *type; } kinds[] = {
      {CT_EXPR_ADD, "elementwise_add"}, {CT_EXPR_SUB, "elementwise_sub"},
      {CT_EXPR_MUL, "elementwise_mul"}, {CT_EXPR_DIV, "elementwise_div"}};
  for (size_t t = 0; t < 2; t++) {
    ct_tensor *a = tensor_k(float_types[t], CT_DIMS(N), 1),
              *b = tensor_k(float_types[t], CT_DIMS(N), 2);
    for (size_t k = 0; k < 4; k++) {
      ct_tensor *got = eval_new(ct_expr_binary(kinds[k].op, LEAF(a), LEAF(b)));
      ct_tensor *want = ref_op(kinds[k].type, a, b);
      assert_same_bits(got, want);
      ct_tensor_free(got);
      ct_tensor_free(want);
    }
    ct_tensor_free(a);
    ct_tensor_free(b);
  }
}
END_TEST

START_TEST(unary_ops_match_the_activation_ops) {
  static const struct { ct_expr_op op; const char *type; } kinds[] = {
      {CT_EXPR_EXP, "exp"}, {CT_EXPR_LOG, "log"}, {CT_EXPR_TANH, "tanh"},
      {CT_EXPR_SIGMOID, "sigmoid"}, {CT_EXPR_RELU, "relu"}, {CT_EXPR_ERF, "erf"}};
  for (size_t t = 0; t < 2; t++) {
    ct_tensor *a = tensor_k(float_types[t], CT_DIMS(N), 1);
    ct_tensor *pos = tensor_fn(float_types[t], CT_DIMS(N), data_pos, 1);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
      const ct_tensor *x = kinds[k].op == CT_EXPR_LOG ? pos : a;
      ct_tensor *got = eval_new(ct_expr_unary(kinds[k].op, LEAF(x)));
      ct_tensor *want = ref_op(kinds[k].type, x, NULL);
      assert_same_bits(got, want);
      ct_tensor_free(got);
      ct_tensor_free(want);
    }
    ct_tensor_free(a);
    ct_tensor_free(pos);
  }
}
END_TEST

/* ---- Node kinds without an op: the same C expression in the same type ------------------------ */

static float max_f(float a, float b) { return a > b || a != a ? a : b; }
static double max_d(double a, double b) { return a > b || a != a ? a : b; }
static float min_f(float a, float b) { return a < b || a != a ? a : b; }
static double min_d(double a, double b) { return a < b || a != a ? a : b; }
static float pow_f(float a, float b) { return powf(a, b); }
static double pow_d(double a, double b) { return pow(a, b); }
static float neg_f(float a, float b) { return (void)b, -a; }
static double neg_d(double a, double b) { return (void)b, -a; }
static float sqrt_f(float a, float b) { return (void)b, sqrtf(a); }
static double sqrt_d(double a, double b) { return (void)b, sqrt(a); }
static float abs_f(float a, float b) { return (void)b, fabsf(a); }
static double abs_d(double a, double b) { return (void)b, fabs(a); }

START_TEST(kinds_without_an_op_compute_as_c_does) {
  static const struct {
    ct_expr_op op;
    float (*f)(float, float);
    double (*d)(double, double);
  } kinds[] = {{CT_EXPR_MAX, max_f, max_d}, {CT_EXPR_MIN, min_f, min_d},
               {CT_EXPR_POW, pow_f, pow_d}, {CT_EXPR_NEG, neg_f, neg_d},
               {CT_EXPR_SQRT, sqrt_f, sqrt_d}, {CT_EXPR_ABS, abs_f, abs_d}};
  for (size_t t = 0; t < 2; t++) {
    ct_tensor *a = tensor_fn(float_types[t], CT_DIMS(N), data_pos, 1);
    ct_tensor *b = tensor_k(float_types[t], CT_DIMS(N), 2);
    for (size_t k = 0; k < 6; k++) {
      bool bin = kinds[k].op <= CT_EXPR_POW;
      ct_expr *e = bin ? ct_expr_binary(kinds[k].op, LEAF(a), LEAF(b))
                       : ct_expr_unary(kinds[k].op, LEAF(b));
      ct_tensor *got = eval_new(e);
      ct_tensor *want = bin ? ref_map(a, b, kinds[k].f, kinds[k].d)
                            : ref_map(b, NULL, kinds[k].f, kinds[k].d);
      assert_same_bits(got, want);
      ct_tensor_free(got);
      ct_tensor_free(want);
    }
    ct_tensor_free(a);
    ct_tensor_free(b);
  }
}
END_TEST

START_TEST(max_and_min_propagate_nan) {
  float x[4] = {1, NAN, 3, NAN}, y[4] = {NAN, 2, 1, NAN};
  ct_tensor *a = ct_tensor_new(), *b = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_set_value(a, x, CT_DIMS(4), CT_FLOAT32, ct_cpu()), CT_OK);
  ck_assert_int_eq(ct_tensor_set_value(b, y, CT_DIMS(4), CT_FLOAT32, ct_cpu()), CT_OK);
  for (int k = 0; k < 2; k++) {
    ct_tensor *got = eval_new(BIN(MAX, LEAF(a), LEAF(b)));
    if (k == 1) {
      ct_tensor_free(got);
      got = eval_new(BIN(MIN, LEAF(a), LEAF(b)));
    }
    const float *o = ct_tensor_data(got, CT_FLOAT32);
    ck_assert(isnan(o[0]) && isnan(o[1]) && isnan(o[3]));
    ck_assert(o[2] == (k == 0 ? 3.0f : 1.0f));
    ct_tensor_free(got);
  }
  ct_tensor_free(a);
  ct_tensor_free(b);
}
END_TEST

/* ---- Trees ---------------------------------------------------------------------------------- */

/* sigmoid(a * b + c) - tanh(a) / exp(b), fused and op by op. */
START_TEST(a_nested_tree_matches_the_ops_one_by_one) {
  for (size_t t = 0; t < 2; t++) {
    ct_dtype dt = float_types[t];
    ct_tensor *a = tensor_k(dt, CT_DIMS(10, 100), 1), *b = tensor_k(dt, CT_DIMS(10, 100), 2);
    ct_tensor *c = tensor_k(dt, CT_DIMS(10, 100), 3);
    ct_tensor *got = eval_new(BIN(SUB, UN(SIGMOID, BIN(ADD, BIN(MUL, LEAF(a), LEAF(b)), LEAF(c))),
                                  BIN(DIV, UN(TANH, LEAF(a)), UN(EXP, LEAF(b)))));
    ct_tensor *ab = ref_op("elementwise_mul", a, b);
    ct_tensor *abc = ref_op("elementwise_add", ab, c);
    ct_tensor *sg = ref_op("sigmoid", abc, NULL);
    ct_tensor *ta = ref_op("tanh", a, NULL), *eb = ref_op("exp", b, NULL);
    ct_tensor *q = ref_op("elementwise_div", ta, eb);
    ct_tensor *want = ref_op("elementwise_sub", sg, q);
    assert_same_bits(got, want);
    ct_tensor *all[] = {a, b, c, got, ab, abc, sg, ta, eb, q, want};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) ct_tensor_free(all[i]);
  }
}
END_TEST

/* Two arithmetic nodes over three blocks run as one loop (left: (a op b) arg c, right:
 * a arg (b op c)); every pair rounds as the two ops do. */
START_TEST(every_pair_of_arithmetic_nodes_matches_the_ops) {
  static const char *types[] = {NULL, "elementwise_add", "elementwise_sub", "elementwise_mul",
                                "elementwise_div"};
  for (size_t t = 0; t < 2; t++) {
    ct_tensor *a = tensor_k(float_types[t], CT_DIMS(N), 1),
              *b = tensor_k(float_types[t], CT_DIMS(N), 2);
    ct_tensor *c = tensor_k(float_types[t], CT_DIMS(N), 3);
    for (int op = CT_EXPR_ADD; op <= CT_EXPR_DIV; op++) {
      for (int arg = CT_EXPR_ADD; arg <= CT_EXPR_DIV; arg++) {
        for (int left = 0; left < 2; left++) {
          ct_expr *e = left ? ct_expr_binary(arg, ct_expr_binary(op, LEAF(a), LEAF(b)), LEAF(c))
                            : ct_expr_binary(arg, LEAF(a), ct_expr_binary(op, LEAF(b), LEAF(c)));
          ct_tensor *got = eval_new(e);
          ct_tensor *in = left ? ref_op(types[op], a, b) : ref_op(types[op], b, c);
          ct_tensor *want = left ? ref_op(types[arg], in, c) : ref_op(types[arg], a, in);
          assert_same_bits(got, want);
          ct_tensor_free(got);
          ct_tensor_free(in);
          ct_tensor_free(want);
        }
      }
    }
    ct_tensor_free(a);
    ct_tensor_free(b);
    ct_tensor_free(c);
  }
}
END_TEST

/* A block through two arithmetic nodes with scalars, (a op s) arg t (scale's a * s + b), runs as
 * one loop; every pair rounds as the two ops with one-element tensors do. */
static double three_eighths(int k, int64_t i) { return (void)i, k ? 0.375 : -1.5; }

START_TEST(every_pair_with_two_scalars_matches_the_ops) {
  static const char *types[] = {NULL, "elementwise_add", "elementwise_sub", "elementwise_mul",
                                "elementwise_div"};
  for (size_t t = 0; t < 2; t++) {
    ct_tensor *a = tensor_k(float_types[t], CT_DIMS(N), 1);
    ct_tensor *s0 = tensor_fn(float_types[t], CT_DIMS(), three_eighths, 0);
    ct_tensor *s1 = tensor_fn(float_types[t], CT_DIMS(), three_eighths, 1);
    for (int op = CT_EXPR_ADD; op <= CT_EXPR_DIV; op++) {
      for (int arg = CT_EXPR_ADD; arg <= CT_EXPR_DIV; arg++) {
        ct_tensor *got = eval_new(ct_expr_binary(
            arg, ct_expr_binary(op, LEAF(a), ct_expr_scalar(-1.5)), ct_expr_scalar(0.375)));
        ct_tensor *in = ref_op(types[op], a, s0), *want = ref_op(types[arg], in, s1);
        assert_same_bits(got, want);
        ct_tensor_free(got);
        ct_tensor_free(in);
        ct_tensor_free(want);
      }
    }
    ct_tensor_free(a);
    ct_tensor_free(s0);
    ct_tensor_free(s1);
  }
}
END_TEST

/* Large enough for the engine to split its blocks over threads: the same bits at one thread and
 * at three, and as the ops; a broadcast row of 1031 (blocks straddle its rows, read in place
 * within one) and a libm node (a smaller grain). */
START_TEST(threads_give_the_same_bits) {
  int before = ct_get_num_threads();
  for (size_t t = 0; t < 2; t++) {
    ct_tensor *a = tensor_k(float_types[t], CT_DIMS(100, 1031), 1);
    ct_tensor *b = tensor_k(float_types[t], CT_DIMS(1031), 2);
    ct_tensor *got[2];
    for (int k = 0; k < 2; k++) {
      ct_set_num_threads(k ? 3 : 1);
      got[k] = eval_new(UN(SIGMOID, BIN(MUL, BIN(ADD, LEAF(a), LEAF(b)), LEAF(b))));
    }
    ct_tensor *ab = ref_op("elementwise_add", a, b), *abb = ref_op("elementwise_mul", ab, b);
    ct_tensor *want = ref_op("sigmoid", abb, NULL);
    assert_same_bits(got[0], want);
    assert_same_bits(got[1], want);
    ct_tensor *all[] = {a, b, got[0], got[1], ab, abb, want};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) ct_tensor_free(all[i]);
  }
  ct_set_num_threads(before);
}
END_TEST

/* A RELU right after a binary node runs in the node's loop: relu(a op b), relu(a op 0.375) and
 * relu(0.375 op b) for every binary kind, as the two ops. */
START_TEST(a_relu_after_a_binary_node_matches_the_ops) {
  static const char *types[] = {NULL, "elementwise_add", "elementwise_sub", "elementwise_mul",
                                "elementwise_div"};
  for (size_t t = 0; t < 2; t++) {
    ct_tensor *a = tensor_k(float_types[t], CT_DIMS(N), 1);
    ct_tensor *b = tensor_k(float_types[t], CT_DIMS(N), 2);
    ct_tensor *s = tensor_fn(float_types[t], CT_DIMS(), three_eighths, 1);
    for (int op = CT_EXPR_ADD; op <= CT_EXPR_DIV; op++) {
      for (int form = 0; form < 3; form++) {
        ct_expr *x = form == 2 ? ct_expr_scalar(0.375) : LEAF(a);
        ct_expr *y = form == 1 ? ct_expr_scalar(0.375) : LEAF(b);
        ct_tensor *got = eval_new(UN(RELU, ct_expr_binary(op, x, y)));
        ct_tensor *in = ref_op(types[op], form == 2 ? s : a, form == 1 ? s : b);
        ct_tensor *want = ref_op("relu", in, NULL);
        assert_same_bits(got, want);
        ct_tensor_free(got);
        ct_tensor_free(in);
        ct_tensor_free(want);
      }
    }
    ct_tensor_free(a);
    ct_tensor_free(b);
    ct_tensor_free(s);
  }
}
END_TEST

/* A right-leaning chain needs a block buffer per level: deeper than the engine's stack buffers. */
START_TEST(a_deep_right_leaning_tree_is_exact) {
  ct_tensor *a = tensor_k(CT_FLOAT32, CT_DIMS(N), 1), *b = tensor_k(CT_FLOAT32, CT_DIMS(N), 2);
  ct_expr *e = LEAF(b);
  for (int i = 0; i < 20; i++) {
    e = ct_expr_binary(i % 2 ? CT_EXPR_ADD : CT_EXPR_MUL, LEAF(a), UN(TANH, e));
  }
  ct_tensor *got = eval_new(e);
  ct_tensor *want = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_copy(want, b, ct_cpu()), CT_OK);
  for (int i = 0; i < 20; i++) {
    ct_tensor *th = ref_op("tanh", want, NULL);
    ct_tensor_free(want);
    want = ref_op(i % 2 ? "elementwise_add" : "elementwise_mul", a, th);
    ct_tensor_free(th);
  }
  assert_same_bits(got, want);
  ct_tensor_free(a);
  ct_tensor_free(b);
  ct_tensor_free(got);
  ct_tensor_free(want);
}
END_TEST

START_TEST(a_scalar_leaf_is_broadcast_in_the_leaves_type) {
  ct_tensor *a = tensor_k(CT_FLOAT32, CT_DIMS(N), 1);
  ct_tensor *got = eval_new(BIN(ADD, BIN(MUL, LEAF(a), ct_expr_scalar(0.1)), ct_expr_scalar(2)));
  const float *x = ct_tensor_data(a, CT_FLOAT32), *o = ct_tensor_data(got, CT_FLOAT32);
  for (int i = 0; i < N; i++) ck_assert(o[i] == x[i] * 0.1f + 2.0f);
  ct_tensor_free(got);
  /* Scalars only: dst's dtype, the broadcast dims of no tensor (a scalar). */
  got = tensor_k(CT_FLOAT64, CT_DIMS(3), 1);
  ct_expr *e = UN(EXP, BIN(SUB, ct_expr_scalar(1), ct_expr_scalar(0.5)));
  ck_assert_int_eq(ct_expr_assign(got, CT_SAVETO, e), CT_OK);
  ct_expr_free(e);
  ck_assert_int_eq(ct_tensor_dims(got).rank, 0);
  ck_assert(*(const double *)ct_tensor_data(got, CT_FLOAT64) == exp(0.5));
  ct_tensor_free(got);
  ct_tensor_free(a);
}
END_TEST

/* Building reads nothing: a tree built once sees the data its leaves hold at each assignment. */
START_TEST(leaves_are_read_at_assignment) {
  ct_tensor *a = tensor_k(CT_FLOAT64, CT_DIMS(3), 1), *d = ct_tensor_new();
  ct_expr *e = BIN(MUL, LEAF(a), ct_expr_scalar(2));
  double v1[3] = {1, 2, 3}, v2[3] = {-1, 0, 8};
  ck_assert_int_eq(ct_tensor_set_value(a, v1, CT_DIMS(3), CT_FLOAT64, ct_cpu()), CT_OK);
  ck_assert_int_eq(ct_expr_assign(d, CT_SAVETO, e), CT_OK);
  ck_assert(((const double *)ct_tensor_data(d, CT_FLOAT64))[2] == 6);
  ck_assert_int_eq(ct_tensor_set_value(a, v2, CT_DIMS(3), CT_FLOAT64, ct_cpu()), CT_OK);
  ck_assert_int_eq(ct_expr_assign(d, CT_SAVETO, e), CT_OK);
  ck_assert(((const double *)ct_tensor_data(d, CT_FLOAT64))[2] == 16);
  ct_expr_free(e);
  ct_tensor_free(a);
  ct_tensor_free(d);
}
END_TEST

/* ---- Assignment modes ------------------------------------------------------------------------ */

START_TEST(each_mode_matches_the_op_on_dst) {
  static const char *types[] = {NULL, "elementwise_add", "elementwise_sub", "elementwise_mul",
                                "elementwise_div"};
  for (size_t t = 0; t < 2; t++) {
    ct_dtype dt = float_types[t];
    ct_tensor *a = tensor_k(dt, CT_DIMS(4, 250), 1), *b = tensor_k(dt, CT_DIMS(250), 2);
    for (int mode = CT_SAVETO; mode <= CT_DIVTO; mode++) {
      ct_tensor *d = tensor_k(dt, CT_DIMS(4, 250), 5), *d0 = tensor_k(dt, CT_DIMS(4, 250), 5);
      ct_expr *e = UN(RELU, BIN(SUB, LEAF(a), LEAF(b)));
      ck_assert_int_eq(ct_expr_assign(d, (ct_assign)mode, e), CT_OK);
      ct_expr_free(e);
      ct_tensor *v = ref_op_take("relu", ref_op("elementwise_sub", a, b), NULL);
      ct_tensor *want = mode == CT_SAVETO ? v : ref_op(types[mode], d0, v);
      assert_same_bits(d, want);
      if (want != v) ct_tensor_free(want);
      ct_tensor_free(v);
      ct_tensor_free(d);
      ct_tensor_free(d0);
    }
    ct_tensor_free(a);
    ct_tensor_free(b);
  }
}
END_TEST

/* numpy's in-place rule: the expression of a compound mode broadcasts to dst's dims, a scalar
 * alone included (`d /= 2`), and each element rounds as the op on dst does. */
START_TEST(compound_modes_broadcast_the_expression_to_dst) {
  static const char *types[] = {NULL, "elementwise_add", "elementwise_sub", "elementwise_mul",
                                "elementwise_div"};
  ct_tensor *b = tensor_k(CT_FLOAT32, CT_DIMS(37), 2), *two = tensor_k(CT_FLOAT32, CT_DIMS(1), 3);
  ck_assert_int_eq(ct_tensor_set_value(two, (float[]){2}, CT_DIMS(1), CT_FLOAT32, ct_cpu()),
                   CT_OK);
  for (int mode = CT_PLUSTO; mode <= CT_DIVTO; mode++) {
    ct_tensor *d = tensor_k(CT_FLOAT32, CT_DIMS(1000, 37), 5);
    ct_tensor *d0 = tensor_k(CT_FLOAT32, CT_DIMS(1000, 37), 5);
    ct_expr *e = LEAF(b);
    ck_assert_int_eq(ct_expr_assign(d, (ct_assign)mode, e), CT_OK);
    ct_expr_free(e);
    ct_tensor *want = ref_op(types[mode], d0, b);
    assert_same_bits(d, want);
    ct_tensor_free(want);
    /* A scalar alone: d op= 2. */
    e = ct_expr_scalar(2);
    ck_assert_int_eq(ct_expr_assign(d0, (ct_assign)mode, e), CT_OK);
    ct_expr_free(e);
    want = tensor_k(CT_FLOAT32, CT_DIMS(1000, 37), 5);
    ct_tensor *w2 = ref_op(types[mode], want, two);
    assert_same_bits(d0, w2);
    ck_assert(ct_ddim_equal(ct_tensor_dims(d0), CT_DIMS(1000, 37)));
    ct_tensor_free(w2);
    ct_tensor_free(want);
    ct_tensor_free(d);
    ct_tensor_free(d0);
  }
  ct_tensor_free(b);
  ct_tensor_free(two);
}
END_TEST

START_TEST(saveto_gives_dst_the_result_dims_and_dtype) {
  ct_tensor *a = tensor_k(CT_FLOAT64, CT_DIMS(2, 3), 1), *d = tensor_k(CT_FLOAT32, CT_DIMS(7), 1);
  ct_expr *e = BIN(ADD, LEAF(a), ct_expr_scalar(1));
  ck_assert_int_eq(ct_expr_assign(d, CT_SAVETO, e), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(d), CT_DIMS(2, 3)));
  ck_assert_int_eq(ct_tensor_dtype(d), CT_FLOAT64);
  ck_assert(((const double *)ct_tensor_data(d, CT_FLOAT64))[5] == data_k(1, 5) + 1);
  ct_expr_free(e);
  ct_tensor_free(a);
  ct_tensor_free(d);
}
END_TEST

/* dst = dst * a + dst and dst += dst * a: each element reads only its own position. */
START_TEST(dst_may_be_a_leaf) {
  ct_tensor *a = tensor_k(CT_FLOAT32, CT_DIMS(N), 1);
  for (int mode = CT_SAVETO; mode <= CT_PLUSTO; mode++) {
    ct_tensor *d = tensor_k(CT_FLOAT32, CT_DIMS(N), 2), *d0 = tensor_k(CT_FLOAT32, CT_DIMS(N), 2);
    ct_expr *e = mode == CT_SAVETO ? BIN(ADD, BIN(MUL, LEAF(d), LEAF(a)), LEAF(d))
                                   : BIN(MUL, LEAF(d), LEAF(a));
    ck_assert_int_eq(ct_expr_assign(d, (ct_assign)mode, e), CT_OK);
    ct_expr_free(e);
    ct_tensor *m = ref_op("elementwise_mul", d0, a);
    ct_tensor *want =
        ref_op("elementwise_add", mode == CT_SAVETO ? m : d0, mode == CT_SAVETO ? d0 : m);
    assert_same_bits(d, want);
    ct_tensor_free(m);
    ct_tensor_free(want);
    ct_tensor_free(d);
    ct_tensor_free(d0);
  }
  ct_tensor_free(a);
}
END_TEST

/* ---- Broadcasting ---------------------------------------------------------------------------- */

static double minus_one(int k, int64_t i) { return (void)k, (void)i, -1.0; }

START_TEST(broadcasting_matches_the_ops) {
  const struct { ct_ddim a, b; } cases[] = {
      {CT_DIMS(2, 3, 4), CT_DIMS(4)},       {CT_DIMS(2, 1, 4), CT_DIMS(3, 1)},
      {CT_DIMS(5, 1), CT_DIMS(1, 7)},       {CT_DIMS(3, 4), CT_DIMS()},
      {CT_DIMS(1), CT_DIMS(6, 2)},          {CT_DIMS(300, 7), CT_DIMS(7)},
      {CT_DIMS(7, 300), CT_DIMS(7, 1)},     {CT_DIMS(3, 1, 257), CT_DIMS(2, 1)},
      {CT_DIMS(1, 1, 1), CT_DIMS(2, 1, 3)}, {CT_DIMS(0, 3), CT_DIMS(3)}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    for (size_t t = 0; t < 2; t++) {
      ct_tensor *a = tensor_k(float_types[t], cases[c].a, 1);
      ct_tensor *b = tensor_k(float_types[t], cases[c].b, 2);
      /* The broadcast leaf on both sides, under a unary node. */
      ct_tensor *got = eval_new(BIN(MUL, UN(NEG, BIN(SUB, LEAF(a), LEAF(b))), LEAF(b)));
      ct_tensor *d = ref_op("elementwise_sub", a, b);
      /* -x as the ops compute it: x * -1 (0 - x would lose the sign of a zero). */
      ct_tensor *mt = tensor_fn(float_types[t], CT_DIMS(), minus_one, 0);
      ct_tensor *neg = ref_op("elementwise_mul", d, mt);
      ct_tensor *want = ref_op("elementwise_mul", neg, b);
      assert_same_bits(got, want);
      /* (a - b) * b: two nodes fused into one loop over gathered blocks. */
      ct_tensor *got2 = eval_new(BIN(MUL, BIN(SUB, LEAF(a), LEAF(b)), LEAF(b)));
      ct_tensor *want2 = ref_op("elementwise_mul", d, b);
      assert_same_bits(got2, want2);
      ct_tensor *all[] = {a, b, got, d, mt, neg, want, got2, want2};
      for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) ct_tensor_free(all[i]);
    }
  }
}
END_TEST

/* ---- float16 and bfloat16 ----------------------------------------------------------------- */

/* (a * 1000) / 1000 + b: a * 1000 overflows float16 (up to 65504) but not the float32 it is
 * computed in, so the result is a + b exactly; bfloat16 rounds once, at the store. */
START_TEST(half_types_compute_in_float32) {
  static const ct_dtype halves[] = {CT_FLOAT16, CT_BFLOAT16};
  for (size_t t = 0; t < 2; t++) {
    ct_tensor *a = ct_tensor_new(), *b = ct_tensor_new();
    uint16_t x[3], y[3];
    double xv[3] = {100, -64, 0.5}, yv[3] = {2, 1, -0.25};
    for (int i = 0; i < 3; i++) {
      x[i] = t == 0 ? half_exact(xv[i]) : bf16_exact(xv[i]);
      y[i] = t == 0 ? half_exact(yv[i]) : bf16_exact(yv[i]);
    }
    ck_assert_int_eq(ct_tensor_set_value(a, x, CT_DIMS(3), halves[t], ct_cpu()), CT_OK);
    ck_assert_int_eq(ct_tensor_set_value(b, y, CT_DIMS(3), halves[t], ct_cpu()), CT_OK);
    ct_tensor *got = eval_new(BIN(ADD, BIN(DIV, BIN(MUL, LEAF(a), ct_expr_scalar(1000)),
                                          ct_expr_scalar(1000)), LEAF(b)));
    ck_assert_int_eq(ct_tensor_dtype(got), halves[t]);
    const void *o = ct_tensor_data(got, halves[t]);
    for (int i = 0; i < 3; i++) ck_assert(get_elem(o, halves[t], i) == xv[i] + yv[i]);
    /* += keeps dst's half type: 102 + 1000 * 1000 / 1000 */
    ct_expr *e = BIN(MUL, LEAF(a), ct_expr_scalar(10));
    ck_assert_int_eq(ct_expr_assign(got, CT_PLUSTO, e), CT_OK);
    ct_expr_free(e);
    o = ct_tensor_data(got, halves[t]);
    ck_assert(get_elem(o, halves[t], 0) == (t == 0 ? 1102.0 : 1104.0)); /* bf16: 8 bits */
    ct_tensor *all[] = {a, b, got};
    for (size_t i = 0; i < 3; i++) ct_tensor_free(all[i]);
  }
}
END_TEST

/* ---- The dot rule ---------------------------------------------------------------------------- */

/* dst (+)= alpha op(a) op(b) against cblas_?gemm called directly, for each transpose and mode.
 * The data are multiples of 1/64 and the sums short, so every sum is exact: any correct GEMM
 * gives these bits, whatever its order of summing. */
START_TEST(the_dot_rule_is_one_gemm_call) {
  const int m = 5, n = 7, k = 3;
  for (size_t t = 0; t < 2; t++) {
    ct_dtype dt = float_types[t];
    for (int tr = 0; tr < 4; tr++) {
      bool ta = tr & 1, tb = tr & 2;
      ct_tensor *a = tensor_k(dt, ta ? CT_DIMS(k, m) : CT_DIMS(m, k), 1);
      ct_tensor *b = tensor_k(dt, tb ? CT_DIMS(n, k) : CT_DIMS(k, n), 2);
      for (int mode = CT_SAVETO; mode <= CT_PLUSTO; mode++) {
        ct_tensor *d = tensor_k(dt, CT_DIMS(m, n), 3), *w = tensor_k(dt, CT_DIMS(m, n), 3);
        double alpha = mode == CT_SAVETO ? 1 : 0.375;
        ct_expr *dot = ct_expr_dot(LEAF(a), ta, LEAF(b), tb);
        ct_expr *e = mode == CT_SAVETO ? dot : BIN(MUL, ct_expr_scalar(alpha), dot);
        ck_assert_int_eq(ct_expr_assign(d, (ct_assign)mode, e), CT_OK);
        ct_expr_free(e);
        void *wp = ct_tensor_mutable_data(w, dt, ct_cpu());
        enum CBLAS_TRANSPOSE TA = ta ? CblasTrans : CblasNoTrans,
                             TB = tb ? CblasTrans : CblasNoTrans;
        int lda = ta ? m : k, ldb = tb ? k : n;
        if (dt == CT_FLOAT32) {
          cblas_sgemm(CblasRowMajor, TA, TB, m, n, k, (float)alpha, ct_tensor_data(a, dt), lda,
                      ct_tensor_data(b, dt), ldb, (float)mode, wp, n);
        } else {
          cblas_dgemm(CblasRowMajor, TA, TB, m, n, k, alpha, ct_tensor_data(a, dt), lda,
                      ct_tensor_data(b, dt), ldb, (double)mode, wp, n);
        }
        assert_same_bits(d, w);
        ct_tensor_free(d);
        ct_tensor_free(w);
      }
      ct_tensor_free(a);
      ct_tensor_free(b);
    }
  }
}
END_TEST

START_TEST(a_dot_times_a_scalar_on_the_right_and_into_a_new_dst) {
  ct_tensor *a = tensor_k(CT_FLOAT32, CT_DIMS(4, 6), 1),
            *b = tensor_k(CT_FLOAT32, CT_DIMS(4, 2), 2);
  ct_tensor *got =
      eval_new(BIN(MUL, ct_expr_dot(LEAF(a), true, LEAF(b), false), ct_expr_scalar(2)));
  ck_assert(ct_ddim_equal(ct_tensor_dims(got), CT_DIMS(6, 2)));
  float w[12];
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, 6, 2, 4, 2.0f, ct_tensor_data(a, CT_FLOAT32),
              6, ct_tensor_data(b, CT_FLOAT32), 2, 0.0f, w, 2);
  ck_assert_int_eq(memcmp(ct_tensor_data(got, CT_FLOAT32), w, sizeof w), 0);
  ct_tensor_free(a);
  ct_tensor_free(b);
  ct_tensor_free(got);
}
END_TEST

static Suite *expr_suite(void) {
  Suite *s = suite_create("expr");
  CT_ADD_TEST(s, binary_ops_match_the_elementwise_ops);
  CT_ADD_TEST(s, unary_ops_match_the_activation_ops);
  CT_ADD_TEST(s, kinds_without_an_op_compute_as_c_does);
  CT_ADD_TEST(s, max_and_min_propagate_nan);
  CT_ADD_TEST(s, a_nested_tree_matches_the_ops_one_by_one);
  CT_ADD_TEST(s, every_pair_of_arithmetic_nodes_matches_the_ops);
  CT_ADD_TEST(s, every_pair_with_two_scalars_matches_the_ops);
  CT_ADD_TEST(s, threads_give_the_same_bits);
  CT_ADD_TEST(s, a_relu_after_a_binary_node_matches_the_ops);
  CT_ADD_TEST(s, a_deep_right_leaning_tree_is_exact);
  CT_ADD_TEST(s, a_scalar_leaf_is_broadcast_in_the_leaves_type);
  CT_ADD_TEST(s, leaves_are_read_at_assignment);
  CT_ADD_TEST(s, each_mode_matches_the_op_on_dst);
  CT_ADD_TEST(s, compound_modes_broadcast_the_expression_to_dst);
  CT_ADD_TEST(s, saveto_gives_dst_the_result_dims_and_dtype);
  CT_ADD_TEST(s, dst_may_be_a_leaf);
  CT_ADD_TEST(s, broadcasting_matches_the_ops);
  CT_ADD_TEST(s, half_types_compute_in_float32);
  CT_ADD_TEST(s, the_dot_rule_is_one_gemm_call);
  CT_ADD_TEST(s, a_dot_times_a_scalar_on_the_right_and_into_a_new_dst);
  return s;
}

CT_TEST_MAIN(expr_suite)
