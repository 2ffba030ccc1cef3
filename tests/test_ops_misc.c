/* SPDX-License-Identifier: Apache-2.0 */
/* The misc family (ops/defs/misc_ops.h): non_max_suppression (suppression by IoU, both box
 * formats, score threshold, output limit, batches and classes), unique (sorted and not,
 * flattened and along an axis, exact int64), einsum (transpose, sum, inner product, batch
 * matmul, batch diagonal, implicit output) against plain loops, det (with pivoting, batches,
 * singular), window and mel_weight_matrix against their formulas, dropout_identity, the narrow
 * integer arithmetic of elementwise_add/sub/mul/div, reshape's allowzero, the refusals, the
 * gradients of einsum and det against central finite differences in float64 (grad_util.h), and
 * ONNX's Dropout imported with a mask, or refused in training (onnx_util.h). */
#include <math.h>

#include <corten/corten.h>
#include <corten/onnx.h>

#include "grad_util.h"
#include "onnx_util.h"

static void expect_i64(const int64_t *got, const int64_t *want, int n, const char *what) {
  for (int i = 0; i < n; i++) {
    ck_assert_msg(got[i] == want[i], "%s[%d] = %lld, want %lld", what, i, (long long)got[i],
                  (long long)want[i]);
  }
}

static void expect_f64(const double *got, const double *want, int64_t n, const char *what) {
  for (int64_t i = 0; i < n; i++) {
    ck_assert_msg(fabs(got[i] - want[i]) <= 1e-12 * (1 + fabs(want[i])),
                  "%s[%lld] = %.17g, want %.17g", what, (long long)i, got[i], want[i]);
  }
}

/* ---- non_max_suppression --------------------------------------------------------------------- */

/* ONNX's six boxes: three overlapping near 0, two near 10, one at 100. */
static const float nms_boxes[] = {0, 0, 1, 1,   0, 0.1f, 1, 1.1f,   0, -0.1f, 1, 0.9f,
                                  0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100, 1, 101};
static const float nms_scores[] = {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f};

static ct_op *nms_op(ct_scope *s, int64_t max, float iou, const float *thr) {
  ct_op *op = new_op("non_max_suppression");
  ck_assert_int_eq(ct_op_set_input(op, "Boxes", "boxes"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Scores", "scores"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "MaxOutput", "max"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "IouThreshold", "iou"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "SelectedIndices", "sel"), CT_OK);
  put(s, "max", CT_INT64, CT_DIMS(1), &max);
  put(s, "iou", CT_FLOAT32, CT_DIMS(1), &iou);
  if (thr != NULL) {
    ck_assert_int_eq(ct_op_set_input(op, "ScoreThreshold", "thr"), CT_OK);
    put(s, "thr", CT_FLOAT32, CT_DIMS(1), thr);
  }
  return op;
}

START_TEST(nms_suppresses_by_iou) {
  ct_scope *s = ct_scope_new();
  put(s, "boxes", CT_FLOAT32, CT_DIMS(1, 6, 4), nms_boxes);
  put(s, "scores", CT_FLOAT32, CT_DIMS(1, 1, 6), nms_scores);
  const float zero = 0, high = 0.4f;
  ct_op *op = nms_op(s, 3, 0.5f, &zero);
  run(op, s);
  static const int64_t want[] = {0, 0, 3, 0, 0, 0, 0, 0, 5};
  expect_i64(result(s, "sel", CT_INT64, CT_DIMS(3, 3)), want, 9, "sel");
  /* A score threshold of 0.4 drops box 5; a limit of 2 stops after box 0. */
  ct_op_free(op);
  op = nms_op(s, 3, 0.5f, &high);
  run(op, s);
  expect_i64(result(s, "sel", CT_INT64, CT_DIMS(2, 3)), want, 6, "sel");
  ct_op_free(op);
  op = nms_op(s, 0, 0.5f, NULL);
  run(op, s);
  result(s, "sel", CT_INT64, CT_DIMS(0, 3));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(nms_center_format_batches_and_classes) {
  ct_scope *s = ct_scope_new();
  /* The same boxes as centers and sizes; two batches, the second's boxes flipped (corner
   * format is any diagonal pair), and two classes whose second prefers box 5. */
  float centers[24], two[48], scores[24];
  for (int i = 0; i < 6; i++) {
    const float *b = nms_boxes + 4 * i;
    centers[4 * i] = (b[1] + b[3]) / 2, centers[4 * i + 1] = (b[0] + b[2]) / 2;
    centers[4 * i + 2] = b[3] - b[1], centers[4 * i + 3] = b[2] - b[0];
    for (int k = 0; k < 4; k++) two[4 * i + k] = b[k], two[24 + 4 * i + k] = b[(k + 2) % 4];
  }
  put(s, "boxes", CT_FLOAT32, CT_DIMS(1, 6, 4), centers);
  put(s, "scores", CT_FLOAT32, CT_DIMS(1, 1, 6), nms_scores);
  ct_op *op = nms_op(s, 3, 0.5f, NULL);
  ck_assert_int_eq(ct_op_set_attr_int(op, "center_point_box", 1), CT_OK);
  run(op, s);
  static const int64_t want[] = {0, 0, 3, 0, 0, 0, 0, 0, 5};
  expect_i64(result(s, "sel", CT_INT64, CT_DIMS(3, 3)), want, 9, "sel (center format)");
  ct_op_free(op);
  for (int i = 0; i < 6; i++) scores[i] = scores[12 + i] = nms_scores[i];
  for (int i = 0; i < 6; i++) scores[6 + i] = scores[18 + i] = i == 5 ? 0.99f : 0.1f;
  put(s, "boxes", CT_FLOAT32, CT_DIMS(2, 6, 4), two);
  put(s, "scores", CT_FLOAT32, CT_DIMS(2, 2, 6), scores);
  op = nms_op(s, 2, 0.5f, NULL);
  run(op, s);
  static const int64_t want2[] = {0, 0, 3, 0, 0, 0, 0, 1, 5, 0, 1, 0,
                                  1, 0, 3, 1, 0, 0, 1, 1, 5, 1, 1, 0};
  expect_i64(result(s, "sel", CT_INT64, CT_DIMS(8, 3)), want2, 24, "sel (two batches)");
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(nms_refusals) {
  ct_scope *s = ct_scope_new();
  put(s, "boxes", CT_FLOAT32, CT_DIMS(1, 6, 4), nms_boxes);
  put(s, "scores", CT_FLOAT32, CT_DIMS(1, 6), nms_scores);
  ct_op *op = nms_op(s, 3, 0.5f, NULL);
  run_fails(op, s, CT_ERR_SHAPE, "non_max_suppression", "'scores'", "[batches, classes, boxes]",
            NULL);
  put(s, "scores", CT_FLOAT32, CT_DIMS(1, 1, 6), nms_scores);
  ck_assert_int_eq(ct_op_set_attr_int(op, "center_point_box", 2), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "center_point_box", "use 0", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- unique ---------------------------------------------------------------------------------- */

static ct_op *unique_op(bool sorted, int64_t axis) {
  ct_op *op = op_x("unique", "x", "y");
  ck_assert_int_eq(ct_op_set_output(op, "Indices", "idx"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "InverseIndices", "inv"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Counts", "cnt"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "sorted", sorted), CT_OK);
  if (axis != INT64_MIN) {
    ck_assert_int_eq(ct_op_set_attr_bool(op, "flatten", false), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_int(op, "axis", axis), CT_OK);
  }
  return op;
}

static void expect_unique(ct_scope *s, int g, int n, const int64_t *idx, const int64_t *inv,
                          const int64_t *cnt) {
  expect_i64(result(s, "idx", CT_INT64, CT_DIMS(g)), idx, g, "indices");
  expect_i64(result(s, "inv", CT_INT64, CT_DIMS(n)), inv, n, "inverse");
  expect_i64(result(s, "cnt", CT_INT64, CT_DIMS(g)), cnt, g, "counts");
}

START_TEST(unique_flattened_sorted_and_not) {
  ct_scope *s = ct_scope_new();
  static const float x[] = {2, 1, 1, 3, 4, 3};
  put(s, "x", CT_FLOAT32, CT_DIMS(2, 3), x);
  ct_op *op = unique_op(true, INT64_MIN);
  run(op, s);
  const float *y = result(s, "y", CT_FLOAT32, CT_DIMS(4));
  for (int i = 0; i < 4; i++) ck_assert_float_eq(y[i], (float)(i + 1));
  expect_unique(s, 4, 6, (const int64_t[]){1, 0, 3, 4}, (const int64_t[]){1, 0, 0, 2, 3, 2},
                (const int64_t[]){2, 1, 2, 1});
  ct_op_free(op);
  op = unique_op(false, INT64_MIN);
  run(op, s);
  y = result(s, "y", CT_FLOAT32, CT_DIMS(4));
  static const float want[] = {2, 1, 3, 4};
  for (int i = 0; i < 4; i++) ck_assert_float_eq(y[i], want[i]);
  expect_unique(s, 4, 6, (const int64_t[]){0, 1, 3, 4}, (const int64_t[]){0, 1, 1, 2, 3, 2},
                (const int64_t[]){1, 2, 2, 1});
  ct_op_free(op);
  /* int64 values a double cannot tell apart stay apart, in their order. */
  static const int64_t big[] = {((int64_t)1 << 62) + 1, (int64_t)1 << 62, ((int64_t)1 << 62) + 1};
  put(s, "x", CT_INT64, CT_DIMS(3), big);
  op = unique_op(true, INT64_MIN);
  run(op, s);
  expect_i64(result(s, "y", CT_INT64, CT_DIMS(2)), (const int64_t[]){big[1], big[0]}, 2, "y");
  ct_op_free(op);
  /* uint64 past 2^53 and past INT64_MAX: compared as uint64, four values in ascending order. */
  static const uint64_t u[] = {(uint64_t)1 << 53, ((uint64_t)1 << 53) + 1, UINT64_MAX, 1};
  put(s, "x", CT_UINT64, CT_DIMS(4), u);
  op = unique_op(true, INT64_MIN);
  run(op, s);
  const uint64_t *uy = result(s, "y", CT_UINT64, CT_DIMS(4));
  static const uint64_t uw[] = {1, (uint64_t)1 << 53, ((uint64_t)1 << 53) + 1, UINT64_MAX};
  for (int i = 0; i < 4; i++) ck_assert_msg(uy[i] == uw[i], "y[%d]", i);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(unique_along_an_axis) {
  ct_scope *s = ct_scope_new();
  /* Columns of [[1, 0, 1], [2, 0, 2]] along axis -1: (1,2), (0,0), (1,2). */
  static const int32_t x[] = {1, 0, 1, 2, 0, 2};
  put(s, "x", CT_INT32, CT_DIMS(2, 3), x);
  ct_op *op = unique_op(true, -1);
  run(op, s);
  expect_unique(s, 2, 3, (const int64_t[]){1, 0}, (const int64_t[]){1, 0, 1},
                (const int64_t[]){1, 2});
  const int32_t *y = result(s, "y", CT_INT32, CT_DIMS(2, 2));
  static const int32_t want[] = {0, 1, 0, 2};
  for (int i = 0; i < 4; i++) ck_assert_int_eq(y[i], want[i]);
  ct_op_free(op);
  op = unique_op(true, 2);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "unique", "axis", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- einsum ---------------------------------------------------------------------------------- */

static ct_op *einsum_op(const char *eq, int n) {
  static const char *const names[] = {"a", "b", "c"};
  ct_op *op = new_op("einsum");
  ck_assert_int_eq(ct_op_set_inputs(op, "Inputs", names, (size_t)n), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "out"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "equation", eq), CT_OK);
  return op;
}

static void run_einsum(ct_scope *s, const char *eq, int n, ct_ddim dims, const double *want) {
  ct_op *op = einsum_op(eq, n);
  run(op, s);
  expect_f64(result(s, "out", CT_FLOAT64, dims), want, ct_ddim_numel(dims), eq);
  ct_op_free(op);
}

START_TEST(einsum_equations) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "a", CT_DIMS(2, 3, 4), 0.1);
  put_smooth(s, "b", CT_DIMS(2, 4, 5), 0.7);
  const double *a = ct_tensor_data(tensor_of(s, "a"), CT_FLOAT64);
  const double *b = ct_tensor_data(tensor_of(s, "b"), CT_FLOAT64);
  double want[40] = {0};
  for (int n = 0; n < 2; n++) {
    for (int i = 0; i < 3; i++) {
      for (int k = 0; k < 5; k++) {
        for (int j = 0; j < 4; j++) {
          want[(n * 3 + i) * 5 + k] += a[(n * 3 + i) * 4 + j] * b[(n * 4 + j) * 5 + k];
        }
      }
    }
  }
  run_einsum(s, "bij,bjk->bik", 2, CT_DIMS(2, 3, 5), want);
  run_einsum(s, "...ij, ...jk", 2, CT_DIMS(2, 3, 5), want); /* implicit, with spaces */
  for (int n = 0; n < 2; n++) {
    for (int i = 0; i < 3; i++) {
      for (int j = 0; j < 4; j++) want[(n * 4 + j) * 3 + i] = a[(n * 3 + i) * 4 + j];
    }
  }
  run_einsum(s, "nij->nji", 1, CT_DIMS(2, 4, 3), want);
  for (int n = 0; n < 6; n++) {
    want[n] = 0;
    for (int j = 0; j < 4; j++) want[n] += a[n * 4 + j];
  }
  run_einsum(s, "abc->ab", 1, CT_DIMS(2, 3), want);
  put_smooth(s, "a", CT_DIMS(5), 0.2);
  put_smooth(s, "b", CT_DIMS(5), 0.4);
  a = ct_tensor_data(tensor_of(s, "a"), CT_FLOAT64);
  b = ct_tensor_data(tensor_of(s, "b"), CT_FLOAT64);
  want[0] = 0;
  for (int i = 0; i < 5; i++) want[0] += a[i] * b[i];
  run_einsum(s, "i,i", 2, CT_DIMS(), want);
  put_smooth(s, "a", CT_DIMS(3, 4, 4), 0.3);
  a = ct_tensor_data(tensor_of(s, "a"), CT_FLOAT64);
  for (int n = 0; n < 3; n++) {
    for (int i = 0; i < 4; i++) want[n * 4 + i] = a[(n * 4 + i) * 4 + i];
  }
  run_einsum(s, "...ii->...i", 1, CT_DIMS(3, 4), want);
  want[0] = 0;
  for (int i = 0; i < 4; i++) want[0] += a[i * 4 + i];
  put_smooth(s, "a", CT_DIMS(4, 4), 0.3);
  run_einsum(s, "ii", 1, CT_DIMS(), want); /* implicit: the trace */
  ct_scope_free(s);
}
END_TEST

START_TEST(einsum_refusals) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "a", CT_DIMS(2, 3), 0.1);
  put_smooth(s, "b", CT_DIMS(4, 3), 0.1);
  static const struct {
    const char *eq;
    int n;
    ct_status want;
    const char *needle;
  } cases[] = {
      {"ij,jk", 2, CT_ERR_SHAPE, "'b'"},          {"ij", 2, CT_ERR_INVALID_ARGUMENT, "fewer"},
      {"i1", 1, CT_ERR_INVALID_ARGUMENT, "letter"}, {"ijk", 1, CT_ERR_SHAPE, "rank 2"},
      {"ij->k", 1, CT_ERR_INVALID_ARGUMENT, "output"}, {"ij.", 1, CT_ERR_INVALID_ARGUMENT, "'.'"},
      {"...j->j", 1, CT_ERR_UNSUPPORTED, "\"...\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ct_op *op = einsum_op(cases[i].eq, cases[i].n);
    run_fails(op, s, cases[i].want, "einsum", cases[i].needle, NULL);
    ct_op_free(op);
  }
  ct_scope_free(s);
}
END_TEST

/* einsum_grad refuses an input of another dtype than Inputs[0]'s, as einsum does (its kernel
 * reads every input as that dtype). */
START_TEST(einsum_grad_checks_every_inputs_dtype) {
  ct_scope *s = ct_scope_new();
  static const double a[3] = {1, 2, 3}, g = 1;
  static const int32_t b[3] = {4, 5, 6};
  put(s, "a", CT_FLOAT64, CT_DIMS(3), a);
  put(s, "b", CT_INT32, CT_DIMS(3), b);
  put(s, "g", CT_FLOAT64, CT_DIMS(), &g);
  ct_op *op = ct_op_new("einsum_grad");
  const char *ins[] = {"a", "b"}, *outs[] = {"da", "db"};
  ck_assert_int_eq(ct_op_set_inputs(op, "Inputs", ins, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Out@GRAD", "g"), CT_OK);
  ck_assert_int_eq(ct_op_set_outputs(op, "Inputs@GRAD", outs, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "equation", "i,i->"), CT_OK);
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "einsum_grad", "'b'", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static const char *grad_eq;
static void build_einsum(ct_program *p) {
  ck_assert_int_eq(ct_program_append(p, einsum_op(grad_eq, grad_eq[1] == 'i' ? 2 : 1)), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

START_TEST(einsum_gradients) {
  static const char *const both[] = {"a", "b"}, *const just_a[] = {"a"};
  ct_scope *s = ct_scope_new();
  put_smooth(s, "a", CT_DIMS(2, 3, 4), 0.1);
  put_smooth(s, "b", CT_DIMS(2, 4, 2), 0.5);
  grad_eq = "bij,bjk->bik"; /* grad_eq[1] 'i': two inputs */
  check_grads(s, build_einsum, "loss", both, 2);
  check_grads(s, build_einsum, "loss", just_a, 1);
  put_smooth(s, "a", CT_DIMS(2, 3, 3), 0.2);
  grad_eq = "...ii->...i";
  check_grads(s, build_einsum, "loss", just_a, 1);
  ct_scope_free(s);
}
END_TEST

/* ---- det ------------------------------------------------------------------------------------- */

START_TEST(det_values) {
  ct_scope *s = ct_scope_new();
  /* [[0, 2], [3, 4]] needs a pivot: -6; [[2, 0, 1], [1, 3, 2], [1, 1, 2]]: 6; zeros: 0. */
  static const double x[] = {0, 2, 3, 4, 0, 0, 0, 0};
  put(s, "x", CT_FLOAT64, CT_DIMS(2, 2, 2), x);
  ct_op *op = op_x("det", "x", "out");
  run(op, s);
  expect_f64(result(s, "out", CT_FLOAT64, CT_DIMS(2)), (const double[]){-6, 0}, 2, "det");
  static const float x3[] = {2, 0, 1, 1, 3, 2, 1, 1, 2};
  put(s, "x", CT_FLOAT32, CT_DIMS(3, 3), x3);
  run(op, s);
  ck_assert_float_eq_tol(*(const float *)result(s, "out", CT_FLOAT32, CT_DIMS()), 6.0f, 1e-6f);
  put(s, "x", CT_FLOAT32, CT_DIMS(2, 3), x3);
  run_fails(op, s, CT_ERR_SHAPE, "det", "'x'", "square", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(det_gradients) {
  static const char *const just_x[] = {"x"};
  check_x_grad("det", NULL, CT_DIMS(2, 3, 3));
  /* A singular matrix: the cofactors, not det inv^T. */
  ct_scope *s = ct_scope_new();
  static const double x[] = {1, 2, 2, 4};
  put(s, "x", CT_FLOAT64, CT_DIMS(2, 2), x);
  x_op_type = "det";
  x_op_attrs = NULL;
  check_grads(s, build_x_op, "loss", just_x, 1);
  ct_scope_free(s);
}
END_TEST

/* ---- window, mel_weight_matrix, dropout_identity --------------------------------------------- */

START_TEST(window_formulas) {
  ct_scope *s = ct_scope_new();
  int32_t size = 5;
  put(s, "n", CT_INT32, CT_DIMS(), &size);
  ct_op *op = new_op("window");
  ck_assert_int_eq(ct_op_set_input(op, "Size", "n"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "w"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", CT_FLOAT64), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "periodic", false), CT_OK);
  run(op, s);
  expect_f64(result(s, "w", CT_FLOAT64, CT_DIMS(5)), (const double[]){0, 0.5, 1, 0.5, 0}, 5,
             "hann");
  static const char *const kinds[] = {"hamming", "blackman"};
  for (int k = 0; k < 2; k++) {
    ck_assert_int_eq(ct_op_set_attr_string(op, "kind", kinds[k]), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_bool(op, "periodic", true), CT_OK);
    run(op, s);
    double want[5];
    for (int i = 0; i < 5; i++) {
      const double pi = 3.14159265358979323846;
      double c1 = cos(2 * pi * i / 5), c2 = cos(4 * pi * i / 5);
      want[i] = k == 0 ? 25.0 / 46 - 21.0 / 46 * c1 : 0.42 - 0.5 * c1 + 0.08 * c2;
    }
    expect_f64(result(s, "w", CT_FLOAT64, CT_DIMS(5)), want, 5, kinds[k]);
  }
  ck_assert_int_eq(ct_op_set_attr_string(op, "kind", "kaiser"), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "window", "kaiser", "hann", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(mel_weight_matrix_bands) {
  ct_scope *s = ct_scope_new();
  static const char *const slots[] = {"NumMelBins", "DftLength", "SampleRate", "LowerEdgeHertz",
                                      "UpperEdgeHertz"};
  static const char *const vars[] = {"bins", "dft", "rate", "lo", "hi"};
  const int32_t bins = 8, dft = 16, rate = 8192;
  const float lo = 0, hi = 4096;
  put(s, "bins", CT_INT32, CT_DIMS(), &bins);
  put(s, "dft", CT_INT32, CT_DIMS(), &dft);
  put(s, "rate", CT_INT32, CT_DIMS(), &rate);
  put(s, "lo", CT_FLOAT32, CT_DIMS(), &lo);
  put(s, "hi", CT_FLOAT32, CT_DIMS(), &hi);
  ct_op *op = new_op("mel_weight_matrix");
  for (int k = 0; k < 5; k++) ck_assert_int_eq(ct_op_set_input(op, slots[k], vars[k]), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "m"), CT_OK);
  run(op, s);
  /* The edges by the formula: mels in float, the rest in double, floored bins. */
  float ml = 2595.0f * log10f(1.0f + lo / 700.0f), mh = 2595.0f * log10f(1.0f + hi / 700.0f);
  float step = (mh - ml) / 10.0f;
  int64_t e[10];
  for (int k = 0; k < 10; k++) {
    double hz = 700 * (pow(10, ((double)k * step + ml) / 2595) - 1);
    e[k] = (int64_t)floor(17 * hz / 8192);
  }
  double want[9 * 8] = {0};
  for (int i = 0; i < 8; i++) {
    if (e[i + 1] == e[i]) want[e[i + 1] * 8 + i] = 1;
    for (int64_t j = e[i]; e[i + 1] != e[i] && j <= e[i + 1]; j++) {
      want[j * 8 + i] = (double)(j - e[i]) / (double)(e[i + 1] - e[i]);
    }
    for (int64_t j = e[i + 1]; j < e[i + 2]; j++) {
      want[j * 8 + i] = (double)(e[i + 2] - j) / (double)(e[i + 2] - e[i + 1]);
    }
  }
  const float *m = result(s, "m", CT_FLOAT32, CT_DIMS(9, 8));
  for (int i = 0; i < 72; i++) ck_assert_float_eq(m[i], (float)want[i]);
  const float far = 9000;
  put(s, "hi", CT_FLOAT32, CT_DIMS(), &far);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "mel_weight_matrix", "UpperEdgeHertz", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(dropout_identity_modes) {
  ct_scope *s = ct_scope_new();
  static const float x[] = {1, -2, 3};
  put(s, "x", CT_FLOAT32, CT_DIMS(3), x);
  ct_op *op = op_x("dropout_identity", "x", "y");
  ck_assert_int_eq(ct_op_set_output(op, "Mask", "mask"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Ratio", "r"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "TrainingMode", "t"), CT_OK);
  const float ratios[] = {0.5f, 0, 0.5f};
  const bool modes[] = {false, true, true};
  for (int k = 0; k < 3; k++) {
    put(s, "r", CT_FLOAT32, CT_DIMS(), &ratios[k]);
    put(s, "t", CT_BOOL, CT_DIMS(), &modes[k]);
    if (k == 2) {
      run_fails(op, s, CT_ERR_UNSUPPORTED, "dropout_identity", "ratio of 0.5", NULL);
      break;
    }
    run(op, s);
    const float *y = result(s, "y", CT_FLOAT32, CT_DIMS(3));
    const bool *m = result(s, "mask", CT_BOOL, CT_DIMS(3));
    for (int i = 0; i < 3; i++) ck_assert(y[i] == x[i] && m[i]);
  }
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- Narrow integer arithmetic, reshape's allowzero ------------------------------------------ */

START_TEST(narrow_integers_wrap) {
  ct_scope *s = ct_scope_new();
  static const char *const types[] = {"elementwise_add", "elementwise_sub", "elementwise_mul",
                                      "elementwise_div"};
  static const uint8_t ux[] = {200, 3, 16, 255}, uy[] = {100, 5, 17, 255};
  static const uint8_t uwant[4][4] = {{44, 8, 33, 254}, {100, 254, 255, 0},
                                      {32, 15, 16, 1}, {2, 0, 0, 1}};
  static const int8_t ix[] = {127, -128, -7, 100}, iy[] = {1, -1, 2, 3};
  static const int8_t iwant[4][4] = {{-128, 127, -5, 103}, {126, -127, -9, 97},
                                     {127, -128, -14, 44}, {127, -128, -3, 33}};
  static const int16_t hx[] = {30000, -32768}, hy[] = {2, -1};
  static const int16_t hwant[4][2] = {{30002, 32767}, {29998, -32767}, {-5536, -32768},
                                      {15000, -32768}};
  for (int k = 0; k < 4; k++) {
    ct_op *op = op_xy(types[k], "x", "y", "out");
    put(s, "x", CT_UINT8, CT_DIMS(4), ux);
    put(s, "y", CT_UINT8, CT_DIMS(4), uy);
    run(op, s);
    const uint8_t *u = result(s, "out", CT_UINT8, CT_DIMS(4));
    for (int i = 0; i < 4; i++) ck_assert_msg(u[i] == uwant[k][i], "%s u8[%d]", types[k], i);
    put(s, "x", CT_INT8, CT_DIMS(4), ix);
    put(s, "y", CT_INT8, CT_DIMS(4), iy);
    run(op, s);
    const int8_t *v = result(s, "out", CT_INT8, CT_DIMS(4));
    for (int i = 0; i < 4; i++) ck_assert_msg(v[i] == iwant[k][i], "%s i8[%d]", types[k], i);
    put(s, "x", CT_INT16, CT_DIMS(2), hx);
    put(s, "y", CT_INT16, CT_DIMS(2), hy);
    run(op, s);
    const int16_t *h = result(s, "out", CT_INT16, CT_DIMS(2));
    for (int i = 0; i < 2; i++) ck_assert_msg(h[i] == hwant[k][i], "%s i16[%d]", types[k], i);
    ct_op_free(op);
  }
  static const uint8_t zero[] = {1, 0};
  put(s, "x", CT_UINT8, CT_DIMS(2), zero);
  put(s, "y", CT_UINT8, CT_DIMS(2), zero);
  ct_op *op = op_xy("elementwise_div", "x", "y", "out");
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "elementwise_div", "'y'", "division by zero", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(reshape_allowzero) {
  ct_scope *s = ct_scope_new();
  float none = 0;
  put(s, "x", CT_FLOAT32, CT_DIMS(0, 3, 4), &none);
  static const int64_t shape[] = {3, 4, 0};
  put(s, "shape", CT_INT64, CT_DIMS(3), shape);
  ct_op *op = op_x("reshape", "x", "out");
  ck_assert_int_eq(ct_op_set_input(op, "Shape", "shape"), CT_OK);
  /* Without allowzero the 0 copies X's dim 2 (4): 48 elements cannot come from 0. */
  run_fails(op, s, CT_ERR_SHAPE, "reshape", "'x'", "keep the element count", NULL);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "allowzero", true), CT_OK);
  run(op, s);
  result(s, "out", CT_FLOAT32, CT_DIMS(3, 4, 0));
  static const int64_t with_infer[] = {0, -1};
  put(s, "shape", CT_INT64, CT_DIMS(2), with_infer);
  run_fails(op, s, CT_ERR_SHAPE, "reshape", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- ONNX's Dropout -------------------------------------------------------------------------- */

/* A graph of one Dropout node at opset 13: x [3] -> y (and the mask m), with training_mode the
 * constant `training` when it is 0 or 1. */
static pb dropout_model(bool mask, int training) {
  static const int64_t xd[1] = {3};
  pb g = {0}, n, v, t;
  const char *in[] = {"x", "", training >= 0 ? "t" : NULL, NULL};
  n = ox_node_pb("Dropout", in, (const char *[]){"y", mask ? "m" : NULL, NULL});
  pb_msg(&g, 1, &n);
  pb_str(&g, 2, "dropout");
  if (training >= 0) {
    uint8_t b = (uint8_t)training;
    t = ox_tensor_pb("t", 9, NULL, 0, &b, 1); /* BOOL */
    pb_msg(&g, 5, &t);
  }
  v = ox_value_pb("x", 1, xd, 1);
  pb_msg(&g, 11, &v);
  v = ox_value_pb("y", 1, xd, 1);
  pb_msg(&g, 12, &v);
  if (mask) {
    v = ox_value_pb("m", 9, xd, 1);
    pb_msg(&g, 12, &v);
  }
  return ox_model_pb(&g, 13);
}

START_TEST(onnx_dropout_mask_and_training) {
  pb m = dropout_model(true, 0);
  ct_scope *s = ct_scope_new();
  ct_onnx_model *om = ct_onnx_load_buffer(m.p, m.n, s);
  ck_assert_msg(om != NULL, "%s", ct_last_error());
  static const float x[] = {1, -2, 3};
  put(s, "x", CT_FLOAT32, CT_DIMS(3), x);
  ct_executor *e = ct_executor_new(ct_onnx_program(om), s, ct_cpu());
  ck_assert_msg(e != NULL && ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  const float *y = result(s, "y", CT_FLOAT32, CT_DIMS(3));
  const bool *mk = result(s, "m", CT_BOOL, CT_DIMS(3));
  for (int i = 0; i < 3; i++) ck_assert(y[i] == x[i] && mk[i]);
  ct_executor_free(e);
  ct_onnx_free(om);
  ct_scope_free(s);
  free(m.p);
  /* Training with the default ratio 0.5, known at load: refused naming the node. */
  m = dropout_model(false, 1);
  s = ct_scope_new();
  ck_assert_ptr_null(ct_onnx_load_buffer(m.p, m.n, s));
  ck_assert_int_eq(ct_last_status(), CT_ERR_UNSUPPORTED);
  ck_assert_msg(strstr(ct_last_error(), "node 0 (Dropout, opset 13)") != NULL &&
                    strstr(ct_last_error(), "training mode with ratio 0.5") != NULL,
                "%s", ct_last_error());
  ct_scope_free(s);
  free(m.p);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("ops_misc");
  CT_ADD_TEST(s, nms_suppresses_by_iou);
  CT_ADD_TEST(s, nms_center_format_batches_and_classes);
  CT_ADD_TEST(s, nms_refusals);
  CT_ADD_TEST(s, unique_flattened_sorted_and_not);
  CT_ADD_TEST(s, unique_along_an_axis);
  CT_ADD_TEST(s, einsum_equations);
  CT_ADD_TEST(s, einsum_refusals);
  CT_ADD_TEST(s, einsum_grad_checks_every_inputs_dtype);
  CT_ADD_TEST(s, einsum_gradients);
  CT_ADD_TEST(s, det_values);
  CT_ADD_TEST(s, det_gradients);
  CT_ADD_TEST(s, window_formulas);
  CT_ADD_TEST(s, mel_weight_matrix_bands);
  CT_ADD_TEST(s, dropout_identity_modes);
  CT_ADD_TEST(s, narrow_integers_wrap);
  CT_ADD_TEST(s, reshape_allowzero);
  CT_ADD_TEST(s, onnx_dropout_mask_and_training);
  return s;
}

CT_TEST_MAIN(make_suite)
