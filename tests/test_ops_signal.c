/* SPDX-License-Identifier: Apache-2.0 */
/* dft and stft (ops/defs/signal.h), on signals whose transforms are exact with the exact
 * quarter-turn twiddles: an impulse and a constant; a signal padded and cut by DftLength, one
 * sided; the inverse of a spectrum, complex and (onesided) real; a transform along dim 2;
 * float32 and float64; stft's frames from each hop, windowed, and a window shorter than the
 * frames (zeros after it); the refusals, each naming the input and the fix. */
#include <math.h>
#include <string.h>

#include <corten/corten.h>

#include "op_util.h"

static ct_op *dft_op(int64_t axis, int64_t inverse, int64_t onesided, bool length) {
  ct_op *op = new_op("dft");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  if (length) ck_assert_int_eq(ct_op_set_input(op, "DftLength", "len"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Y", "y"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "axis", axis), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "inverse", inverse), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "onesided", onesided), CT_OK);
  return op;
}

/* Runs op over x (float32 or float64, of dims xd) and compares y (dims yd) exactly. */
static void expect(ct_op *op, ct_scope *s, ct_dtype dt, const double *x, ct_ddim xd,
                   const double *want, ct_ddim yd) {
  int64_t nx = 1, ny = 1;
  for (int i = 0; i < xd.rank; i++) nx *= xd.d[i];
  for (int i = 0; i < yd.rank; i++) ny *= yd.d[i];
  float xf[64];
  for (int64_t i = 0; i < nx && dt == CT_FLOAT32; i++) xf[i] = (float)x[i];
  put(s, "x", dt, xd, dt == CT_FLOAT32 ? (const void *)xf : (const void *)x);
  run(op, s);
  const void *y = result(s, "y", dt, yd);
  for (int64_t i = 0; i < ny; i++) {
    const double v = dt == CT_FLOAT32 ? ((const float *)y)[i] : ((const double *)y)[i];
    ck_assert_msg(v == want[i], "y[%lld] = %.17g, want %g", (long long)i, v, want[i]);
  }
}

/* [1 0 0 0] gives every bin 1; [1 1 1 1] gives 4 at bin 0 and exact zeros elsewhere. */
START_TEST(dft_of_an_impulse_and_of_ones) {
  for (int k = 0; k < 2; k++) {
    const ct_dtype dt = k ? CT_FLOAT64 : CT_FLOAT32;
    ct_scope *s = ct_scope_new();
    ct_op *op = dft_op(1, 0, 0, false);
    static const double x[8] = {1, 0, 0, 0, 1, 1, 1, 1};
    static const double want[16] = {1, 0, 1, 0, 1, 0, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0};
    expect(op, s, dt, x, CT_DIMS(2, 4, 1), want, CT_DIMS(2, 4, 2));
    ct_op_free(op);
    ct_scope_free(s);
  }
}
END_TEST

/* [1 1 1] padded to 4: 3, -i, 1, i, the first three one sided; [1 2 3 4] cut to 2: 3, -1. */
START_TEST(dft_length_pads_and_cuts_one_sided) {
  ct_scope *s = ct_scope_new();
  int64_t len = 4;
  put(s, "len", CT_INT64, (ct_ddim){.rank = 0}, &len);
  ct_op *op = dft_op(1, 0, 1, true);
  static const double x[3] = {1, 1, 1}, want[6] = {3, 0, 0, -1, 1, 0};
  expect(op, s, CT_FLOAT32, x, CT_DIMS(1, 3, 1), want, CT_DIMS(1, 3, 2));
  ct_op_free(op);
  len = 2;
  put(s, "len", CT_INT64, (ct_ddim){.rank = 0}, &len);
  op = dft_op(1, 0, 0, true);
  static const double x4[4] = {1, 2, 3, 4}, want2[4] = {3, 0, -1, 0};
  expect(op, s, CT_FLOAT32, x4, CT_DIMS(1, 4, 1), want2, CT_DIMS(1, 2, 2));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* The inverse of 4 at bin 0 is four ones; onesided, the half spectrum (0, 2, 0) of a signal of
 * 4 is cos(pi n / 2) = 1 0 -1 0, real (last dim 1), and (0, -2i, 0) is sin(pi n / 2). */
START_TEST(inverse_complex_and_real) {
  ct_scope *s = ct_scope_new();
  ct_op *op = dft_op(1, 1, 0, false);
  static const double x[8] = {4, 0, 0, 0, 0, 0, 0, 0}, want[8] = {1, 0, 1, 0, 1, 0, 1, 0};
  expect(op, s, CT_FLOAT64, x, CT_DIMS(1, 4, 2), want, CT_DIMS(1, 4, 2));
  ct_op_free(op);
  op = dft_op(1, 1, 1, false);
  static const double half[6] = {0, 0, 2, 0, 0, 0}, real[4] = {1, 0, -1, 0};
  expect(op, s, CT_FLOAT32, half, CT_DIMS(1, 3, 2), real, CT_DIMS(1, 4, 1));
  /* (0, -2i, 0), conjugated beyond the half: sin(pi n / 2) = 0 1 0 -1 */
  static const double half_i[6] = {0, 0, 0, -2, 0, 0}, sine[4] = {0, 1, 0, -1};
  expect(op, s, CT_FLOAT32, half_i, CT_DIMS(1, 3, 2), sine, CT_DIMS(1, 4, 1));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* Along dim 2 of [1, 2, 4, 1] (a negative axis, -2): each row on its own. */
START_TEST(dft_along_another_axis) {
  ct_scope *s = ct_scope_new();
  ct_op *op = dft_op(-2, 0, 0, false);
  static const double x[8] = {1, 0, 0, 0, 1, 1, 1, 1};
  static const double want[16] = {1, 0, 1, 0, 1, 0, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0};
  expect(op, s, CT_FLOAT32, x, CT_DIMS(1, 2, 4, 1), want, CT_DIMS(1, 2, 4, 2));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* Length 3 (twiddles off the quarter turns) over [1, 3, 2, 1], two signals interleaved (inner
 * 2): an impulse at n = 1, whose bins are e^(-2 pi i k / 3) (the same cos and sin as the op's
 * table: one term each, exact), and one at n = 0, all ones. */
START_TEST(dft_of_length_three_over_inner_dims) {
  ct_scope *s = ct_scope_new();
  ct_op *op = dft_op(1, 0, 0, false);
  static const double x[6] = {0, 1, 1, 0, 0, 0};
  double want[12];
  for (int k = 0; k < 3; k++) {
    const double a = 6.28318530717958647692 * (double)k / 3.0;
    want[4 * k] = k == 0 ? 1 : (float)cos(a);
    want[4 * k + 1] = k == 0 ? 0 : (float)-sin(a);
    want[4 * k + 2] = 1;
    want[4 * k + 3] = 0;
  }
  expect(op, s, CT_FLOAT32, x, CT_DIMS(1, 3, 2, 1), want, CT_DIMS(1, 3, 2, 2));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* The real inverse of an odd length (3, from two bins: 3 at bin 0 gives three ones), and of a
 * spectrum longer than L / 2 + 1 (its bins past 2 of 4 unread: four ones, whatever they hold),
 * and of the middle bin of an even length. */
START_TEST(real_inverse_of_odd_lengths_and_long_spectra) {
  ct_scope *s = ct_scope_new();
  int64_t len = 3;
  put(s, "len", CT_INT64, (ct_ddim){.rank = 0}, &len);
  ct_op *op = dft_op(1, 1, 1, true);
  static const double two[4] = {3, 0, 0, 0}, ones3[3] = {1, 1, 1};
  expect(op, s, CT_FLOAT64, two, CT_DIMS(1, 2, 2), ones3, CT_DIMS(1, 3, 1));
  len = 4;
  put(s, "len", CT_INT64, (ct_ddim){.rank = 0}, &len);
  static const double four[8] = {4, 0, 0, 0, 0, 0, 9, 9}, ones4[4] = {1, 1, 1, 1};
  expect(op, s, CT_FLOAT64, four, CT_DIMS(1, 4, 2), ones4, CT_DIMS(1, 4, 1));
  /* 4 at the middle bin (L / 2) alone: (-1)^n */
  static const double nyq[6] = {0, 0, 0, 0, 4, 0}, alt[4] = {1, -1, 1, -1};
  expect(op, s, CT_FLOAT64, nyq, CT_DIMS(1, 3, 2), alt, CT_DIMS(1, 4, 1));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static ct_op *stft_op(bool window, bool length) {
  ct_op *op = new_op("stft");
  ck_assert_int_eq(ct_op_set_input(op, "Signal", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "FrameStep", "step"), CT_OK);
  if (window) ck_assert_int_eq(ct_op_set_input(op, "Window", "w"), CT_OK);
  if (length) ck_assert_int_eq(ct_op_set_input(op, "FrameLength", "fl"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Y", "y"), CT_OK);
  return op;
}

/* Signal 0 .. 7, hop 2, frames of 4 (3 of them), one sided (3 bins). Window 1 0 0 0: frame f's
 * bins are all its first sample, 2 f. Window 1 1 and FrameLength 4: frame f is x[2f], x[2f+1],
 * 0, 0: bins 4 f + 1, (2 f, -(2 f + 1)), -1. */
START_TEST(stft_frames_each_hop_windowed) {
  ct_scope *s = ct_scope_new();
  const int64_t step = 2, fl = 4;
  put(s, "step", CT_INT64, (ct_ddim){.rank = 0}, &step);
  put(s, "fl", CT_INT64, (ct_ddim){.rank = 0}, &fl);
  double x[8];
  for (int i = 0; i < 8; i++) x[i] = i;
  static const float w4[4] = {1, 0, 0, 0}, w2[2] = {1, 1};
  put(s, "w", CT_FLOAT32, CT_DIMS(4), w4);
  ct_op *op = stft_op(true, false);
  static const double want[18] = {0, 0, 0, 0, 0, 0, 2, 0, 2, 0, 2, 0, 4, 0, 4, 0, 4, 0};
  expect(op, s, CT_FLOAT32, x, CT_DIMS(1, 8, 1), want, CT_DIMS(1, 3, 3, 2));
  ct_op_free(op);
  put(s, "w", CT_FLOAT32, CT_DIMS(2), w2);
  op = stft_op(true, true);
  static const double want2[18] = {1, 0, 0, -1, -1, 0, 5, 0, 2, -3, -1, 0, 9, 0, 4, -5, -1, 0};
  expect(op, s, CT_FLOAT32, x, CT_DIMS(1, 8, 1), want2, CT_DIMS(1, 3, 3, 2));
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(refusals_name_the_input_and_the_fix) {
  ct_scope *s = ct_scope_new();
  static const float v[24] = {0};
  put(s, "x", CT_FLOAT32, CT_DIMS(2, 4, 1), v);
  ct_op *op = dft_op(2, 0, 0, false);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "attribute 'axis' is 2", "a dim before the last", NULL);
  ct_op_free(op);
  op = dft_op(1, 0, 0, true);
  const int64_t zero = 0;
  put(s, "len", CT_INT64, (ct_ddim){.rank = 0}, &zero);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "input DftLength variable 'len' holds 0", NULL);
  put(s, "x", CT_FLOAT32, CT_DIMS(2, 4, 3), v);
  run_fails(op, s, CT_ERR_SHAPE, "input X variable 'x' has dims [2,4,3]",
            "last dim of 1 (real) or 2", NULL);
  ct_op_free(op);
  ct_op *st = stft_op(true, false);
  const double one = 1;
  put(s, "x", CT_FLOAT32, CT_DIMS(1, 8, 1), v);
  put(s, "w", CT_FLOAT32, CT_DIMS(2), v);
  put(s, "step", CT_FLOAT64, (ct_ddim){.rank = 0}, &one);
  run_fails(st, s, CT_ERR_TYPE_MISMATCH, "input FrameStep variable 'step' is float64",
            "one int32 or int64 value", NULL);
  const int32_t two = 2;
  put(s, "step", CT_INT32, (ct_ddim){.rank = 0}, &two);
  put(s, "w", CT_FLOAT64, CT_DIMS(1), &one);
  run_fails(st, s, CT_ERR_SHAPE, "input Window variable 'w' is float64", "Signal's dtype", NULL);
  put(s, "x", CT_FLOAT32, CT_DIMS(8, 1), v);
  run_fails(st, s, CT_ERR_SHAPE, "input Signal variable 'x' has dims [8,1]",
            "[batch, length, 1 or 2]", NULL);
  ct_op_free(st);
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("ops_signal");
  CT_ADD_TEST(s, dft_of_an_impulse_and_of_ones);
  CT_ADD_TEST(s, dft_length_pads_and_cuts_one_sided);
  CT_ADD_TEST(s, inverse_complex_and_real);
  CT_ADD_TEST(s, dft_along_another_axis);
  CT_ADD_TEST(s, dft_of_length_three_over_inner_dims);
  CT_ADD_TEST(s, real_inverse_of_odd_lengths_and_long_spectra);
  CT_ADD_TEST(s, stft_frames_each_hop_windowed);
  CT_ADD_TEST(s, refusals_name_the_input_and_the_fix);
  return s;
}

CT_TEST_MAIN(make_suite)
