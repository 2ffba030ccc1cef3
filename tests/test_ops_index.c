/* SPDX-License-Identifier: Apache-2.0 */
/* The index family (ops/defs/index.h): shapes, slicing, gathering and padding with run-time
 * shape inputs, on small hand-computed cases; their refusals (status and message words); the
 * gradients against float64 central differences (grad_util.h); and the Shape -> Gather ->
 * Unsqueeze -> Concat -> Reshape chain torch.onnx exports for a dynamic batch, run by one
 * executor at two batch sizes. */
#include <corten/corten.h>

#include "grad_util.h"

#define D(...) ((const double[]){__VA_ARGS__})
#define I64(...) ((const int64_t[]){__VA_ARGS__})

#define put_f64(s, name, dims, v) put(s, name, CT_FLOAT64, dims, v)
#define put_i64(s, name, dims, v) put(s, name, CT_INT64, dims, v)

/* Variable name holds dims, dtype dt and the values want (as doubles). */
static void expect_vals(ct_scope *s, const char *name, ct_dtype dt, ct_ddim dims,
                        const double *want) {
  const void *p = result(s, name, dt, dims);
  for (int64_t i = 0; i < ct_ddim_numel(dims); i++) {
    ck_assert_msg(get_elem(p, dt, i) == want[i], "%s[%lld] = %g, expected %g", name,
                  (long long)i, get_elem(p, dt, i), want[i]);
  }
}
#define expect_f64(s, name, dims, want) expect_vals(s, name, CT_FLOAT64, dims, want)
#define expect_i64(s, name, dims, ...) \
  expect_vals(s, name, CT_INT64, dims, (const double[]){__VA_ARGS__})

static ct_op *op_io2(const char *type, const char *xs, const char *x, const char *os,
                     const char *o) {
  ct_op *op = new_op(type);
  ck_assert_int_eq(ct_op_set_input(op, xs, x), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, os, o), CT_OK);
  return op;
}

static void set_ints(ct_op *op, const char *name, const int64_t *v, size_t n) {
  ck_assert_int_eq(ct_op_set_attr_ints(op, name, v, n), CT_OK);
}

static const double iota6[] = {0, 1, 2, 3, 4, 5};

/* ---- shape, size, squeeze, unsqueeze, flatten, reshape's Shape ------------------------------- */

START_TEST(shape_and_size) {
  ct_scope *s = ct_scope_new();
  put_f64(s, "x", CT_DIMS(2, 3, 1), iota6);
  ct_op *op = op_io2("shape", "Input", "x", "Out", "sh");
  run(op, s);
  expect_i64(s, "sh", CT_DIMS(3), 2, 3, 1);
  ck_assert_int_eq(ct_op_set_attr_int(op, "start", -2), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "end", 100), CT_OK); /* clamped to the rank */
  run(op, s);
  expect_i64(s, "sh", CT_DIMS(2), 3, 1);
  ct_op_free(op);
  op = op_io2("size", "Input", "x", "Out", "n");
  run(op, s);
  expect_i64(s, "n", CT_DIMS(), 6);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(squeeze_unsqueeze_flatten_are_views) {
  ct_scope *s = ct_scope_new();
  put_f64(s, "x", CT_DIMS(1, 3, 1, 2), iota6);
  ct_op *op = op_x("squeeze", "x", "a");
  run(op, s);
  expect_f64(s, "a", CT_DIMS(3, 2), iota6);
  ck_assert(ct_tensor_shares_memory(tensor_of(s, "a"), tensor_of(s, "x")));
  set_ints(op, "axes", I64(-2), 1);
  run(op, s);
  expect_f64(s, "a", CT_DIMS(1, 3, 2), iota6);
  set_ints(op, "axes", I64(1), 1);
  run_fails(op, s, CT_ERR_SHAPE, "squeeze", "axis 1", "not of extent 1", NULL);
  set_ints(op, "axes", I64(0, -4), 2); /* dim 0 twice: dropped once, as onnxruntime does */
  run(op, s);
  expect_f64(s, "a", CT_DIMS(3, 1, 2), iota6);
  ct_op_free(op);
  /* unsqueeze: positions of Out, negative from its end; the axes from a run-time input. */
  put_f64(s, "y", CT_DIMS(3), iota6);
  put_i64(s, "axes", CT_DIMS(2), I64(0, -1));
  op = op_x("unsqueeze", "y", "b");
  ck_assert_int_eq(ct_op_set_input(op, "AxesTensor", "axes"), CT_OK);
  run(op, s);
  expect_f64(s, "b", CT_DIMS(1, 3, 1), iota6);
  put_i64(s, "axes", CT_DIMS(2), I64(1, 1));
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "unsqueeze", "twice", NULL);
  put(s, "axes", CT_FLOAT32, CT_DIMS(1), (const float[]){0});
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "AxesTensor", "'axes'", "int64 or int32", NULL);
  ct_op_free(op);
  op = op_x("flatten", "x", "c");
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", -1), CT_OK);
  run(op, s);
  expect_f64(s, "c", CT_DIMS(3, 2), iota6);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(reshape_reads_shape_at_run_time) {
  ct_scope *s = ct_scope_new();
  put_f64(s, "x", CT_DIMS(2, 3), iota6);
  put_i64(s, "sh", CT_DIMS(2), I64(3, -1));
  ct_op *op = op_x("reshape", "x", "y");
  ck_assert_int_eq(ct_op_set_input(op, "Shape", "sh"), CT_OK);
  run(op, s);
  expect_f64(s, "y", CT_DIMS(3, 2), iota6);
  put(s, "sh", CT_INT32, CT_DIMS(3), (const int32_t[]){0, 1, -1}); /* 0 copies X's dim */
  run(op, s);
  expect_f64(s, "y", CT_DIMS(2, 1, 3), iota6);
  put_i64(s, "sh", CT_DIMS(1), I64(4));
  run_fails(op, s, CT_ERR_SHAPE, "reshape", "6 elements", NULL);
  put(s, "sh", CT_FLOAT64, CT_DIMS(1), D(6));
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "input Shape", "int64 or int32", NULL);
  ct_op_free(op);
  op = op_x("reshape", "x", "z"); /* neither the attribute nor the input */
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "attribute 'shape' is required", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- strided_slice, gather, split, pad, expand, tile ---------------------------------------- */

START_TEST(strided_slice_clamps_as_onnx) {
  ct_scope *s = ct_scope_new();
  put_f64(s, "x", CT_DIMS(6), iota6);
  ct_op *op = op_io2("strided_slice", "Input", "x", "Out", "y");
  set_ints(op, "starts", I64(-1), 1);
  set_ints(op, "ends", I64(INT64_MIN), 1);
  set_ints(op, "strides", I64(-2), 1);
  run(op, s);
  expect_f64(s, "y", CT_DIMS(3), D(5, 3, 1));
  set_ints(op, "starts", I64(1), 1);
  set_ints(op, "ends", I64(1000), 1);
  set_ints(op, "strides", NULL, 0);
  run(op, s);
  expect_f64(s, "y", CT_DIMS(5), D(1, 2, 3, 4, 5));
  set_ints(op, "starts", I64(4), 1);
  set_ints(op, "ends", I64(2), 1); /* empty */
  run(op, s);
  expect_f64(s, "y", CT_DIMS(0), NULL);
  set_ints(op, "strides", I64(0), 1);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "strided_slice", "strides entry 0 is 0", NULL);
  ct_op_free(op);
  /* [2, 3] along axis 1 from run-time inputs. */
  put_f64(s, "m", CT_DIMS(2, 3), iota6);
  put_i64(s, "st", CT_DIMS(1), I64(1));
  put_i64(s, "en", CT_DIMS(1), I64(3));
  put_i64(s, "ax", CT_DIMS(1), I64(-1));
  op = op_io2("strided_slice", "Input", "m", "Out", "z");
  ck_assert_int_eq(ct_op_set_input(op, "StartsTensor", "st"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "EndsTensor", "en"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "AxesTensor", "ax"), CT_OK);
  run(op, s);
  expect_f64(s, "z", CT_DIMS(2, 2), D(1, 2, 4, 5));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(gather_takes_any_axis_and_negative_indices) {
  ct_scope *s = ct_scope_new();
  put_f64(s, "x", CT_DIMS(3, 2), iota6);
  put_i64(s, "i", CT_DIMS(2), I64(-1, 0));
  ct_op *op = op_x("gather", "x", "y");
  ck_assert_int_eq(ct_op_set_input(op, "Index", "i"), CT_OK);
  run(op, s);
  expect_f64(s, "y", CT_DIMS(2, 2), D(4, 5, 0, 1));
  put_i64(s, "i", CT_DIMS(), I64(1));
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", 1), CT_OK);
  run(op, s);
  expect_f64(s, "y", CT_DIMS(3), D(1, 3, 5));
  put_i64(s, "i", CT_DIMS(), I64(2));
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "gather", "'i' holds 2", "[-2, 2)", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(split_equal_and_listed_sections) {
  ct_scope *s = ct_scope_new();
  put_f64(s, "x", CT_DIMS(5), iota6);
  static const char *const outs[] = {"a", "b"};
  ct_op *op = op_x("split", "x", "a");
  ck_assert_int_eq(ct_op_set_outputs(op, "Out", outs, 2), CT_OK);
  run(op, s); /* ceil(5 / 2) = 3, then the rest */
  expect_f64(s, "a", CT_DIMS(3), D(0, 1, 2));
  expect_f64(s, "b", CT_DIMS(2), D(3, 4));
  set_ints(op, "sections", I64(1, -1), 2);
  run(op, s);
  expect_f64(s, "a", CT_DIMS(1), D(0));
  expect_f64(s, "b", CT_DIMS(4), D(1, 2, 3, 4));
  set_ints(op, "sections", I64(1, 2), 2);
  run_fails(op, s, CT_ERR_SHAPE, "split", "add up to 3", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(pad_modes) {
  ct_scope *s = ct_scope_new();
  put_f64(s, "x", CT_DIMS(3), D(1, 2, 3));
  ct_op *op = op_x("pad", "x", "y");
  set_ints(op, "paddings", I64(2, 1), 2);
  ck_assert_int_eq(ct_op_set_attr_float(op, "pad_value", 9), CT_OK);
  run(op, s);
  expect_f64(s, "y", CT_DIMS(6), D(9, 9, 1, 2, 3, 9));
  ck_assert_int_eq(ct_op_set_attr_string(op, "mode", "reflect"), CT_OK);
  set_ints(op, "paddings", I64(2, 2), 2);
  run(op, s);
  expect_f64(s, "y", CT_DIMS(7), D(3, 2, 1, 2, 3, 2, 1));
  ck_assert_int_eq(ct_op_set_attr_string(op, "mode", "edge"), CT_OK);
  set_ints(op, "paddings", I64(1, 2), 2);
  run(op, s);
  expect_f64(s, "y", CT_DIMS(6), D(1, 1, 2, 3, 3, 3));
  ck_assert_int_eq(ct_op_set_attr_string(op, "mode", "wrap"), CT_OK);
  set_ints(op, "paddings", I64(1, -1), 2); /* a negative padding crops */
  run(op, s);
  expect_f64(s, "y", CT_DIMS(3), D(3, 1, 2));
  ck_assert_int_eq(ct_op_set_attr_string(op, "mode", "mirror"), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "pad", "\"mirror\"", NULL);
  ck_assert_int_eq(ct_op_set_attr_string(op, "mode", "constant"), CT_OK);
  set_ints(op, "paddings", I64(-2, -2), 2);
  run_fails(op, s, CT_ERR_SHAPE, "pad", "leave no extent", NULL);
  ct_op_free(op);
  /* A pad_value the integer dtype does not hold is refused, never wrapped or truncated. */
  static const uint16_t u[2] = {1, 2};
  put(s, "u", CT_UINT16, CT_DIMS(2), u);
  op = op_x("pad", "u", "uy");
  set_ints(op, "paddings", I64(1, 1), 2);
  static const double bad[3] = {-1, 1e30, 2.5};
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(ct_op_set_attr_float(op, "pad_value", bad[i]), CT_OK);
    run_fails(op, s, CT_ERR_OUT_OF_RANGE, "pad", "attribute 'pad_value'", "uint16", NULL);
  }
  ck_assert_int_eq(ct_op_set_attr_float(op, "pad_value", 65535), CT_OK);
  run(op, s);
  const uint16_t *uy = result(s, "uy", CT_UINT16, CT_DIMS(4));
  ck_assert(uy[0] == 65535 && uy[1] == 1 && uy[2] == 2 && uy[3] == 65535);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(expand_and_tile) {
  ct_scope *s = ct_scope_new();
  put_f64(s, "x", CT_DIMS(3, 1), D(1, 2, 3));
  put_i64(s, "sh", CT_DIMS(3), I64(2, 1, 2));
  ct_op *op = op_x("expand", "x", "y");
  ck_assert_int_eq(ct_op_set_input(op, "Shape", "sh"), CT_OK);
  run(op, s);
  expect_f64(s, "y", CT_DIMS(2, 3, 2), D(1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3));
  put_i64(s, "sh", CT_DIMS(1), I64(2)); /* [3, 1] with [2]: [3, 2] */
  run(op, s);
  expect_f64(s, "y", CT_DIMS(3, 2), D(1, 1, 2, 2, 3, 3));
  put_i64(s, "sh", CT_DIMS(2), I64(2, 2));
  run_fails(op, s, CT_ERR_SHAPE, "expand", "cannot be broadcast", NULL);
  ct_op_free(op);
  op = op_x("tile", "x", "t");
  set_ints(op, "repeat_times", I64(1, 2), 2);
  run(op, s);
  expect_f64(s, "t", CT_DIMS(3, 2), D(1, 1, 2, 2, 3, 3));
  set_ints(op, "repeat_times", I64(2), 1);
  run_fails(op, s, CT_ERR_SHAPE, "tile", "1 values", "rank 2", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(constant_of_shape_and_range) {
  ct_scope *s = ct_scope_new();
  put_i64(s, "sh", CT_DIMS(2), I64(2, 2));
  ct_op *op = op_out("constant_of_shape", "c");
  ck_assert_int_eq(ct_op_set_input(op, "ShapeTensor", "sh"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "value", 7), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", CT_INT64), CT_OK);
  run(op, s);
  expect_i64(s, "c", CT_DIMS(2, 2), 7, 7, 7, 7);
  /* sizes whose copies do not double evenly, one element and none, in float32 */
  ck_assert_int_eq(ct_op_set_attr_float(op, "value", -2.5), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", CT_FLOAT32), CT_OK);
  static const int64_t sizes[][2] = {{3, 37}, {1, 1}, {0, 5}, {1, 1025}};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    put_i64(s, "sh", CT_DIMS(2), sizes[k]);
    run(op, s);
    const float *c = result(s, "c", CT_FLOAT32, CT_DIMS(sizes[k][0], sizes[k][1]));
    for (int64_t i = 0; i < sizes[k][0] * sizes[k][1]; i++) {
      ck_assert_msg(c[i] == -2.5f, "c[%lld] of %lld x %lld = %g", (long long)i,
                    (long long)sizes[k][0], (long long)sizes[k][1], c[i]);
    }
  }
  put_i64(s, "sh", CT_DIMS(1), I64(-1));
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "constant_of_shape", "-1", NULL);
  ct_op_free(op);
  put_i64(s, "a", CT_DIMS(), I64(10));
  put_i64(s, "b", CT_DIMS(), I64(4));
  put_i64(s, "d", CT_DIMS(), I64(-3));
  op = op_out("range", "r");
  ck_assert_int_eq(ct_op_set_input(op, "Start", "a"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "End", "b"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Step", "d"), CT_OK);
  run(op, s);
  expect_i64(s, "r", CT_DIMS(2), 10, 7);
  put_i64(s, "d", CT_DIMS(), I64(0));
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "range", "nonzero step", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- The other op types --------------------------------------------------------------------- */

START_TEST(tril_triu_and_cumsum) {
  ct_scope *s = ct_scope_new();
  put_f64(s, "x", CT_DIMS(2, 3), D(1, 2, 3, 4, 5, 6));
  ct_op *op = op_x("tril_triu", "x", "y");
  run(op, s);
  expect_f64(s, "y", CT_DIMS(2, 3), D(1, 0, 0, 4, 5, 0));
  ck_assert_int_eq(ct_op_set_attr_bool(op, "lower", false), CT_OK);
  put_i64(s, "k", CT_DIMS(), I64(1));
  ck_assert_int_eq(ct_op_set_input(op, "Diagonal", "k"), CT_OK);
  run(op, s);
  expect_f64(s, "y", CT_DIMS(2, 3), D(0, 2, 3, 0, 0, 6));
  ct_op_free(op);
  op = op_x("cumsum", "x", "c");
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", 1), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "exclusive", true), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "reverse", true), CT_OK);
  run(op, s);
  expect_f64(s, "c", CT_DIMS(2, 3), D(5, 3, 0, 11, 6, 0));
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", 2), CT_OK);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "cumsum", "'axis' is 2", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* Integer sums and products wrap in two's complement (as the elementwise and reduce kernels
 * do), never signed overflow: cumsum, put_along_axis "add", scatter_nd "mul". */
START_TEST(integer_accumulations_wrap) {
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_INT32, CT_DIMS(3), (const int32_t[]){INT32_MAX, 1, 1});
  ct_op *op = op_x("cumsum", "x", "c");
  run(op, s);
  const int32_t *c = result(s, "c", CT_INT32, CT_DIMS(3));
  ck_assert_int_eq(c[0], INT32_MAX);
  ck_assert_int_eq(c[1], INT32_MIN);
  ck_assert_int_eq(c[2], INT32_MIN + 1);
  ct_op_free(op);
  put(s, "a", CT_INT64, CT_DIMS(1, 1), (const int64_t[]){INT64_MAX});
  put(s, "one", CT_INT64, CT_DIMS(1, 1), (const int64_t[]){1});
  put_i64(s, "i", CT_DIMS(1, 1), I64(0));
  op = op_io2("put_along_axis", "Input", "a", "Result", "z");
  ck_assert_int_eq(ct_op_set_input(op, "Index", "i"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Value", "one"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "Axis", 1), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "Reduce", "add"), CT_OK);
  run(op, s);
  ck_assert(*(const int64_t *)result(s, "z", CT_INT64, CT_DIMS(1, 1)) == INT64_MIN);
  ct_op_free(op);
  put(s, "q", CT_INT32, CT_DIMS(2), (const int32_t[]){65536, 3});
  put(s, "w", CT_INT32, CT_DIMS(1), (const int32_t[]){65536});
  put_i64(s, "r", CT_DIMS(1, 1), I64(0));
  op = op_x("scatter_nd", "q", "p");
  ck_assert_int_eq(ct_op_set_input(op, "Index", "r"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Updates", "w"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "reduction", "mul"), CT_OK);
  run(op, s);
  const int32_t *pq = result(s, "p", CT_INT32, CT_DIMS(2));
  ck_assert_int_eq(pq[0], 0); /* 2^32 wraps to 0 */
  ck_assert_int_eq(pq[1], 3);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(along_axis_and_nd) {
  ct_scope *s = ct_scope_new();
  put_f64(s, "x", CT_DIMS(2, 2), D(1, 2, 3, 4));
  put_i64(s, "i", CT_DIMS(2, 2), I64(0, 0, -1, 0));
  ct_op *op = op_io2("take_along_axis", "Input", "x", "Result", "y");
  ck_assert_int_eq(ct_op_set_input(op, "Index", "i"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "Axis", 1), CT_OK);
  run(op, s);
  expect_f64(s, "y", CT_DIMS(2, 2), D(1, 1, 4, 3));
  ct_op_free(op);
  /* put_along_axis "add": a repeated index gets both updates. */
  put_f64(s, "u", CT_DIMS(2, 2), D(10, 20, 30, 40));
  op = op_io2("put_along_axis", "Input", "x", "Result", "z");
  ck_assert_int_eq(ct_op_set_input(op, "Index", "i"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Value", "u"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "Axis", 1), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "Reduce", "add"), CT_OK);
  run(op, s);
  expect_f64(s, "z", CT_DIMS(2, 2), D(31, 2, 43, 34));
  put_i64(s, "i", CT_DIMS(2, 2), I64(0, 2, 0, 0));
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "put_along_axis", "holds 2", NULL);
  ct_op_free(op);
  /* gather_nd with one batch dim: row b takes element [b, idx]. */
  put_i64(s, "j", CT_DIMS(2, 1), I64(1, 0));
  op = op_x("gather_nd", "x", "g");
  ck_assert_int_eq(ct_op_set_input(op, "Index", "j"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "batch_dims", 1), CT_OK);
  run(op, s);
  expect_f64(s, "g", CT_DIMS(2), D(2, 3));
  ct_op_free(op);
  /* scatter_nd "mul" on rows. */
  put_i64(s, "r", CT_DIMS(1, 1), I64(1));
  put_f64(s, "w", CT_DIMS(1, 2), D(2, 3));
  op = op_x("scatter_nd", "x", "q");
  ck_assert_int_eq(ct_op_set_input(op, "Index", "r"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Updates", "w"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "reduction", "mul"), CT_OK);
  run(op, s);
  expect_f64(s, "q", CT_DIMS(2, 2), D(1, 2, 6, 12));
  put_f64(s, "w", CT_DIMS(2), D(2, 3));
  run_fails(op, s, CT_ERR_SHAPE, "scatter_nd", "Updates", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(one_hot_eye_like_and_blocks) {
  ct_scope *s = ct_scope_new();
  put_i64(s, "i", CT_DIMS(3), I64(1, -1, 5));
  put_f64(s, "depth", CT_DIMS(), D(3));
  put_f64(s, "v", CT_DIMS(2), D(0, 9));
  ct_op *op = op_x("one_hot", "i", "y");
  ck_assert_int_eq(ct_op_set_input(op, "Depth", "depth"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Values", "v"), CT_OK);
  run(op, s); /* 5 is outside [-3, 3): a row of the off value */
  expect_f64(s, "y", CT_DIMS(3, 3), D(0, 9, 0, 0, 0, 9, 0, 0, 0));
  ct_op_free(op);
  put_f64(s, "m", CT_DIMS(2, 3), iota6);
  op = op_x("eye_like", "m", "e");
  ck_assert_int_eq(ct_op_set_attr_int(op, "k", 1), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "dtype", CT_INT64), CT_OK);
  run(op, s);
  expect_i64(s, "e", CT_DIMS(2, 3), 0, 1, 0, 0, 0, 1);
  ct_op_free(op);
  /* [1, 4, 1, 1] to [1, 1, 2, 2]: DCR reads channel (i b + j) C' + c, CRD c b^2 + i b + j
   * (the same with one output channel); space_to_depth takes it back. */
  put_f64(s, "d", CT_DIMS(1, 4, 1, 1), D(1, 2, 3, 4));
  op = op_x("depth_to_space", "d", "sp");
  ck_assert_int_eq(ct_op_set_attr_int(op, "blocksize", 2), CT_OK);
  run(op, s);
  expect_f64(s, "sp", CT_DIMS(1, 1, 2, 2), D(1, 2, 3, 4));
  ck_assert_int_eq(ct_op_set_attr_int(op, "blocksize", 3), CT_OK);
  run_fails(op, s, CT_ERR_SHAPE, "depth_to_space", "blocksize 3", NULL);
  ct_op_free(op);
  op = op_x("space_to_depth", "sp", "back");
  ck_assert_int_eq(ct_op_set_attr_int(op, "blocksize", 2), CT_OK);
  run(op, s);
  expect_f64(s, "back", CT_DIMS(1, 4, 1, 1), D(1, 2, 3, 4));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(where_index_compress_reverse_sequence_top_k) {
  ct_scope *s = ct_scope_new();
  put_f64(s, "x", CT_DIMS(2, 2), D(0, 7, -0.0, 5));
  ct_op *op = op_io2("where_index", "Condition", "x", "Out", "w");
  run(op, s); /* -0.0 is zero */
  expect_i64(s, "w", CT_DIMS(2, 2), 0, 1, 1, 1);
  ct_op_free(op);
  put(s, "c", CT_BOOL, CT_DIMS(1), (const bool[]){true});
  op = op_x("compress", "x", "k");
  ck_assert_int_eq(ct_op_set_input(op, "Condition", "c"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", 1), CT_OK);
  run(op, s); /* a short condition drops the columns past it */
  expect_f64(s, "k", CT_DIMS(2, 1), D(0, -0.0));
  ct_op_free(op);
  put_f64(s, "seq", CT_DIMS(2, 3), iota6);
  put_i64(s, "len", CT_DIMS(2), I64(2, 3));
  op = op_x("reverse_sequence", "seq", "r");
  ck_assert_int_eq(ct_op_set_input(op, "SeqLens", "len"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "batch_axis", 0), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "time_axis", 1), CT_OK);
  run(op, s);
  expect_f64(s, "r", CT_DIMS(2, 3), D(1, 0, 2, 5, 4, 3));
  put_i64(s, "len", CT_DIMS(2), I64(2, 4));
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "reverse_sequence", "holds 4", NULL);
  ct_op_free(op);
  put_f64(s, "t", CT_DIMS(5), D(3, 1, 3, 2, 1));
  put_i64(s, "kk", CT_DIMS(1), I64(3));
  op = op_x("top_k_v2", "t", "tv");
  ck_assert_int_eq(ct_op_set_output(op, "Indices", "ti"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "K", "kk"), CT_OK);
  run(op, s); /* ties: the lower index first */
  expect_f64(s, "tv", CT_DIMS(3), D(3, 3, 2));
  expect_i64(s, "ti", CT_DIMS(3), 0, 2, 3);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "largest", false), CT_OK);
  run(op, s);
  expect_f64(s, "tv", CT_DIMS(3), D(1, 1, 2));
  expect_i64(s, "ti", CT_DIMS(3), 1, 4, 3);
  put_i64(s, "kk", CT_DIMS(1), I64(6));
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "top_k_v2", "k is 6", NULL);
  put_f64(s, "t", CT_DIMS(5), D(3, NAN, 3, 2, 1));
  put_i64(s, "kk", CT_DIMS(1), I64(1));
  run_fails(op, s, CT_ERR_UNSUPPORTED, "top_k_v2", "NaN", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- torch.onnx's dynamic batch: x.view(x.size(0), -1) --------------------------------------- */

/* shape(x) -> gather [0] -> unsqueeze [0] -> concat with [-1] -> reshape(x, Shape), one executor
 * run at batch 2, then 5, then 2 again: the run-time shape is read every run. */
START_TEST(dynamic_batch_view_chain) {
  ct_scope *s = ct_scope_new();
  put_i64(s, "zero", CT_DIMS(), I64(0));
  put_i64(s, "minus1", CT_DIMS(1), I64(-1));
  ct_program *p = ct_program_new();
  ct_op *op = op_io2("shape", "Input", "x", "Out", "sh");
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  op = op_x("gather", "sh", "b");
  ck_assert_int_eq(ct_op_set_input(op, "Index", "zero"), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  op = op_x("unsqueeze", "b", "b1");
  set_ints(op, "axes", I64(0), 1);
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  static const char *const parts[] = {"b1", "minus1"};
  ck_assert_int_eq(ct_program_append(p, op_many("concat", parts, 2, "target")), CT_OK);
  op = op_x("reshape", "x", "y");
  ck_assert_int_eq(ct_op_set_input(op, "Shape", "target"), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  static const double v[30] = {0};
  put_f64(s, "x", CT_DIMS(2, 3, 4), v);
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  static const int64_t batches[] = {2, 5, 2};
  for (int r = 0; r < 3; r++) {
    put_f64(s, "x", CT_DIMS(batches[r], 3, 2), v);
    ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
    expect_f64(s, "y", CT_DIMS(batches[r], 6), v);
  }
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

/* ---- Gradients ------------------------------------------------------------------------------ */

static const char *g_type;
static void (*g_attrs)(ct_op *op);

/* g_type reading X = "x" (Input for strided_slice) and writing Out = "out", then the loss. */
static void build_g(ct_program *p) {
  ct_op *op = op_io2(g_type, strcmp(g_type, "strided_slice") == 0 ? "Input" : "X", "x", "Out",
                     "out");
  if (g_attrs != NULL) g_attrs(op);
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  append_weighted_loss(p, "out", "loss");
}

static void check_g(const char *type, void (*attrs)(ct_op *op), ct_ddim xd) {
  static const char *const just_x[] = {"x"};
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", xd, 0.1);
  put_i64(s, "idx", CT_DIMS(3), I64(2, -1, 0));
  g_type = type;
  g_attrs = attrs;
  check_grads(s, build_g, "loss", just_x, 1);
  ct_scope_free(s);
}

static void a_slice(ct_op *op) {
  set_ints(op, "starts", I64(-1, 0), 2);
  set_ints(op, "ends", I64(0, 3), 2);
  set_ints(op, "strides", I64(-1, 2), 2);
}
static void a_gather(ct_op *op) {
  ck_assert_int_eq(ct_op_set_input(op, "Index", "idx"), CT_OK); /* 2 repeats -1 on axis 1 */
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", 1), CT_OK);
}
static void a_expand(ct_op *op) { set_ints(op, "shape", I64(2, 3, 1), 3); }
static void a_tile(ct_op *op) { set_ints(op, "repeat_times", I64(2, 1), 2); }
static void a_pad_c(ct_op *op) { set_ints(op, "paddings", I64(1, 0, 2, -1), 4); }
static void a_pad_r(ct_op *op) {
  set_ints(op, "paddings", I64(1, 1, 2, 0), 4);
  ck_assert_int_eq(ct_op_set_attr_string(op, "mode", "reflect"), CT_OK);
}
static void a_tri(ct_op *op) { ck_assert_int_eq(ct_op_set_attr_int(op, "diagonal", -1), CT_OK); }
static void a_cumsum(ct_op *op) {
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", 1), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "exclusive", true), CT_OK);
}

START_TEST(gradients_match_finite_differences) {
  check_g("strided_slice", a_slice, CT_DIMS(2, 3));
  check_g("gather", a_gather, CT_DIMS(2, 3));
  check_g("expand", a_expand, CT_DIMS(3, 1));
  check_g("tile", a_tile, CT_DIMS(2, 3));
  check_g("pad", a_pad_c, CT_DIMS(2, 3));
  check_g("pad", a_pad_r, CT_DIMS(2, 3));
  check_g("squeeze", NULL, CT_DIMS(2, 1, 3));
  check_g("flatten", NULL, CT_DIMS(2, 3, 2));
  check_g("tril_triu", a_tri, CT_DIMS(3, 3));
  check_g("cumsum", a_cumsum, CT_DIMS(2, 3));
}
END_TEST

/* split: X@GRAD joins the pieces' gradients; a piece the loss does not read gives zeros. */
static void build_split(ct_program *p) {
  static const char *const outs[] = {"a", "b"};
  ct_op *op = op_x("split", "x", "a");
  ck_assert_int_eq(ct_op_set_outputs(op, "Out", outs, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", 1), CT_OK);
  set_ints(op, "sections", I64(1, 2), 2);
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  append_weighted_loss(p, "b", "loss");
}

START_TEST(split_gradient) {
  static const char *const just_x[] = {"x"};
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(2, 3), 0.4);
  check_grads(s, build_split, "loss", just_x, 1);
  const double *g = result(s, "x@GRAD", CT_FLOAT64, CT_DIMS(2, 3));
  ck_assert(g[0] == 0 && g[3] == 0);
  ct_scope_free(s);
}
END_TEST

/* A wrong Out@GRAD is refused, naming it. */
START_TEST(grad_op_refuses_wrong_dout) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(3, 1), 0.1);
  put_smooth(s, "g", CT_DIMS(3, 3), 0.2);
  ct_op *op = new_op("expand_grad");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Out@GRAD", "g"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "X@GRAD", "dx"), CT_OK);
  set_ints(op, "shape", I64(2, 3, 1), 3);
  run_fails(op, s, CT_ERR_SHAPE, "expand_grad", "Out@GRAD", "'g'", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("ops_index");
  CT_ADD_TEST(s, shape_and_size);
  CT_ADD_TEST(s, squeeze_unsqueeze_flatten_are_views);
  CT_ADD_TEST(s, reshape_reads_shape_at_run_time);
  CT_ADD_TEST(s, strided_slice_clamps_as_onnx);
  CT_ADD_TEST(s, gather_takes_any_axis_and_negative_indices);
  CT_ADD_TEST(s, split_equal_and_listed_sections);
  CT_ADD_TEST(s, pad_modes);
  CT_ADD_TEST(s, expand_and_tile);
  CT_ADD_TEST(s, constant_of_shape_and_range);
  CT_ADD_TEST(s, tril_triu_and_cumsum);
  CT_ADD_TEST(s, integer_accumulations_wrap);
  CT_ADD_TEST(s, along_axis_and_nd);
  CT_ADD_TEST(s, one_hot_eye_like_and_blocks);
  CT_ADD_TEST(s, where_index_compress_reverse_sequence_top_k);
  CT_ADD_TEST(s, dynamic_batch_view_chain);
  CT_ADD_TEST(s, gradients_match_finite_differences);
  CT_ADD_TEST(s, split_gradient);
  CT_ADD_TEST(s, grad_op_refuses_wrong_dout);
  return s;
}

CT_TEST_MAIN(make_suite)
