/* SPDX-License-Identifier: Apache-2.0 */
/* simple_rnn, gru and lstm (ONNX's RNN, GRU, LSTM) and their gradients: one and two steps
 * against the closed forms of ONNX's equations (gru with and without linear_before_reset, lstm
 * with peepholes and input_forget), reverse steps and SequenceLength (zeros past a length, zero
 * last states for a length of 0), the two directions and the batch-major layout, clip, every
 * activation with its alpha and beta, the refusals, and every gradient (default and other
 * activations) against central finite differences in float64 (grad_util.h). */
#include <math.h>

#include <corten/corten.h>

#include "grad_util.h"
#include "ops/cpu/gemm_ukr.h" /* ct__gemm_use_kernel (internal: the static library) */

static double sigm(double v) { return 1 / (1 + exp(-v)); }

/* An op of type wired to the variables of the same names in lower case (x, w, r, b, seq, h0,
 * c0, p -> out, last_h, last_c), each input only when has[k] (X, W, R always). */
static ct_op *layer_op(const char *type, const bool has[8], bool out, bool last_h, bool last_c) {
  static const char *const slots[] = {"X", "W", "R", "B", "SequenceLength", "InitH", "InitC", "P"};
  static const char *const vars[] = {"x", "w", "r", "b", "seq", "h0", "c0", "p"};
  ct_op *op = new_op(type);
  for (int k = 0; k < 8; k++) {
    if (k < 3 || has[k]) ck_assert_int_eq(ct_op_set_input(op, slots[k], vars[k]), CT_OK);
  }
  if (out) ck_assert_int_eq(ct_op_set_output(op, "Out", "out"), CT_OK);
  if (last_h) ck_assert_int_eq(ct_op_set_output(op, "LastH", "last_h"), CT_OK);
  if (last_c) ck_assert_int_eq(ct_op_set_output(op, "LastC", "last_c"), CT_OK);
  return op;
}

static void expect(const double *got, const double *want, int n, const char *what) {
  for (int i = 0; i < n; i++) {
    ck_assert_msg(fabs(got[i] - want[i]) <= 1e-15 * (1 + fabs(want[i])),
                  "%s[%d] = %.17g, want %.17g", what, i, got[i], want[i]);
  }
}

/* ---- Forward values -------------------------------------------------------------------------- */

START_TEST(simple_rnn_two_steps) {
  ct_scope *s = ct_scope_new();
  double x[2] = {1, -2}, w = 0.5, r = 0.25, b[2] = {0.1, 0.2};
  put(s, "x", CT_FLOAT64, CT_DIMS(2, 1, 1), x);
  put(s, "w", CT_FLOAT64, CT_DIMS(1, 1, 1), &w);
  put(s, "r", CT_FLOAT64, CT_DIMS(1, 1, 1), &r);
  put(s, "b", CT_FLOAT64, CT_DIMS(1, 2), b);
  const bool has[8] = {[3] = true};
  ct_op *op = layer_op("simple_rnn", has, true, true, false);
  run(op, s);
  double h1 = tanh(0.5 + 0.3), h2 = tanh(-1 + 0.25 * h1 + 0.3), want[2] = {h1, h2};
  expect(result(s, "out", CT_FLOAT64, CT_DIMS(2, 1, 1, 1)), want, 2, "Out");
  expect(result(s, "last_h", CT_FLOAT64, CT_DIMS(1, 1, 1)), &h2, 1, "LastH");
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* One gru step of ONNX's equations, z r h gates, with and without linear_before_reset. */
START_TEST(gru_one_step_both_reset_forms) {
  for (int lbr = 0; lbr < 2; lbr++) {
    ct_scope *s = ct_scope_new();
    double x = 2, h0 = 0.5, w[3] = {0.5, -0.5, 1}, r[3] = {0.25, 0.5, -1};
    double b[6] = {0.1, 0.2, 0.3, 0.05, 0.1, 0.15};
    put(s, "x", CT_FLOAT64, CT_DIMS(1, 1, 1), &x);
    put(s, "w", CT_FLOAT64, CT_DIMS(1, 3, 1), w);
    put(s, "r", CT_FLOAT64, CT_DIMS(1, 3, 1), r);
    put(s, "b", CT_FLOAT64, CT_DIMS(1, 6), b);
    put(s, "h0", CT_FLOAT64, CT_DIMS(1, 1, 1), &h0);
    const bool has[8] = {[3] = true, [5] = true};
    ct_op *op = layer_op("gru", has, false, true, false);
    ck_assert_int_eq(ct_op_set_attr_bool(op, "linear_before_reset", lbr), CT_OK);
    run(op, s);
    double z = sigm(1 + 0.125 + 0.15), rg = sigm(-1 + 0.25 + 0.3);
    double c = lbr ? tanh(2 + rg * (0.5 * -1 + 0.15) + 0.3) : tanh(2 + rg * 0.5 * -1 + 0.15 + 0.3);
    double want = (1 - z) * c + z * 0.5;
    expect(result(s, "last_h", CT_FLOAT64, CT_DIMS(1, 1, 1)), &want, 1, "LastH");
    ct_op_free(op);
    ct_scope_free(s);
  }
}
END_TEST

/* One lstm step, i o f c gates, peepholes i o f, initial states; and with input_forget. */
START_TEST(lstm_one_step_with_peepholes) {
  for (int fused = 0; fused < 2; fused++) {
    ct_scope *s = ct_scope_new();
    double x = 1, h0 = 0.5, c0 = -1, w[4] = {0.5, 0.25, -0.5, 1}, r[4] = {0.1, 0.2, 0.3, 0.4};
    double p[3] = {0.1, 0.2, 0.3};
    put(s, "x", CT_FLOAT64, CT_DIMS(1, 1, 1), &x);
    put(s, "w", CT_FLOAT64, CT_DIMS(1, 4, 1), w);
    put(s, "r", CT_FLOAT64, CT_DIMS(1, 4, 1), r);
    put(s, "h0", CT_FLOAT64, CT_DIMS(1, 1, 1), &h0);
    put(s, "c0", CT_FLOAT64, CT_DIMS(1, 1, 1), &c0);
    put(s, "p", CT_FLOAT64, CT_DIMS(1, 3), p);
    const bool has[8] = {[5] = true, [6] = true, [7] = true};
    ct_op *op = layer_op("lstm", has, true, true, true);
    ck_assert_int_eq(ct_op_set_attr_bool(op, "input_forget", fused), CT_OK);
    run(op, s);
    double i = sigm(0.5 + 0.05 + 0.1 * -1);
    double f = fused ? 1 - i : sigm(-0.5 + 0.15 + 0.3 * -1), g = tanh(1 + 0.2);
    double cell = f * -1 + i * g, o = sigm(0.25 + 0.1 + 0.2 * cell), h = o * tanh(cell);
    expect(result(s, "out", CT_FLOAT64, CT_DIMS(1, 1, 1, 1)), &h, 1, "Out");
    expect(result(s, "last_h", CT_FLOAT64, CT_DIMS(1, 1, 1)), &h, 1, "LastH");
    expect(result(s, "last_c", CT_FLOAT64, CT_DIMS(1, 1, 1)), &cell, 1, "LastC");
    ct_op_free(op);
    ct_scope_free(s);
  }
}
END_TEST

/* reverse: each entry runs from its last step (its length's) back to step 0; Out is zero past
 * the length, LastH is the state after step 0, and zero for a length of 0. */
START_TEST(reverse_with_sequence_lengths) {
  ct_scope *s = ct_scope_new();
  /* [t 3, n 3, i 1]: entry 0 {0.1, 0.2, 0.3}, entry 1 {0.4, 0.5, -}, entry 2 empty. */
  double x[9] = {0.1, 0.4, 9, 0.2, 0.5, 9, 0.3, 9, 9}, one = 1;
  int32_t len[3] = {3, 2, 0};
  put(s, "x", CT_FLOAT64, CT_DIMS(3, 3, 1), x);
  put(s, "w", CT_FLOAT64, CT_DIMS(1, 1, 1), &one);
  put(s, "r", CT_FLOAT64, CT_DIMS(1, 1, 1), &one);
  put(s, "seq", CT_INT32, CT_DIMS(3), len);
  const bool has[8] = {[4] = true};
  ct_op *op = layer_op("simple_rnn", has, true, true, false);
  ck_assert_int_eq(ct_op_set_attr_string(op, "direction", "reverse"), CT_OK);
  run(op, s);
  double a2 = tanh(0.3), a1 = tanh(0.2 + a2), a0 = tanh(0.1 + a1);
  double b1 = tanh(0.5), b0 = tanh(0.4 + b1);
  double want[9] = {a0, b0, 0, a1, b1, 0, a2, 0, 0}, last[3] = {a0, b0, 0};
  expect(result(s, "out", CT_FLOAT64, CT_DIMS(3, 1, 3, 1)), want, 9, "Out");
  expect(result(s, "last_h", CT_FLOAT64, CT_DIMS(1, 3, 1)), last, 3, "LastH");
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* bidirectional, batch-major: Out [n, t, 2, h] with the forward direction first; LastH
 * [n, 2, h] holds the forward state after the last step and the reverse one after step 0. */
START_TEST(bidirectional_batch_major) {
  ct_scope *s = ct_scope_new();
  double x[6] = {0.1, 0.2, 0.3, -0.4, -0.5, -0.6}, w[2] = {1, 2}, r[2] = {0, 0};
  put(s, "x", CT_FLOAT64, CT_DIMS(2, 3, 1), x);
  put(s, "w", CT_FLOAT64, CT_DIMS(2, 1, 1), w);
  put(s, "r", CT_FLOAT64, CT_DIMS(2, 1, 1), r);
  const bool has[8] = {0};
  ct_op *op = layer_op("simple_rnn", has, true, true, false);
  ck_assert_int_eq(ct_op_set_attr_string(op, "direction", "bidirectional"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "time_major", false), CT_OK);
  run(op, s);
  double want[12], last[4] = {tanh(0.3), tanh(0.2), tanh(-0.6), tanh(-0.8)};
  for (int k = 0; k < 6; k++) {
    want[2 * k] = tanh(x[k]);
    want[2 * k + 1] = tanh(2 * x[k]);
  }
  expect(result(s, "out", CT_FLOAT64, CT_DIMS(2, 3, 2, 1)), want, 12, "Out");
  expect(result(s, "last_h", CT_FLOAT64, CT_DIMS(2, 2, 1)), last, 4, "LastH");
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* clip bounds each gate's input before its activation. */
START_TEST(clip_bounds_the_gate_inputs) {
  ct_scope *s = ct_scope_new();
  float x[2] = {3, -0.25f}, one = 1;
  put(s, "x", CT_FLOAT32, CT_DIMS(2, 1, 1), x);
  put(s, "w", CT_FLOAT32, CT_DIMS(1, 1, 1), &one);
  put(s, "r", CT_FLOAT32, CT_DIMS(1, 1, 1), &one);
  const bool has[8] = {0};
  ct_op *op = layer_op("simple_rnn", has, true, false, false);
  ck_assert_int_eq(ct_op_set_attr_float(op, "clip", 0.5), CT_OK);
  run(op, s);
  const float *o = result(s, "out", CT_FLOAT32, CT_DIMS(2, 1, 1, 1));
  float h1 = tanhf(0.5f), h2 = tanhf(-0.25f + h1);
  ck_assert_float_eq_tol(o[0], h1, 1e-6);
  ck_assert_float_eq_tol(o[1], h2, 1e-6);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* The other activations, each against its closed form: simple_rnn's one function on one step
 * with alpha and beta given or left to their defaults (leaky_relu 0.01, elu 1, hard_sigmoid
 * 0.2 and 0.5, scaled_tanh 1 and 1, affine 1 and 0, thresholded_relu 1). */
START_TEST(simple_rnn_activations) {
  static const char *const names[] = {
      "sigmoid",      "tanh", "relu",     "leaky_relu", "thresholded_relu", "scaled_tanh",
      "hard_sigmoid", "elu",  "softsign", "softplus",   "affine"};
  const double xs[3] = {-1.5, 0.25, 2}, al = 0.3, be = 0.6;
  for (int a = 0; a < 11; a++) {
    for (int given = 0; given < 2; given++) {
      ct_scope *s = ct_scope_new();
      double one = 1;
      put(s, "x", CT_FLOAT64, CT_DIMS(1, 3, 1), xs);
      put(s, "w", CT_FLOAT64, CT_DIMS(1, 1, 1), &one);
      put(s, "r", CT_FLOAT64, CT_DIMS(1, 1, 1), &one);
      const bool has[8] = {0};
      ct_op *op = layer_op("simple_rnn", has, false, true, false);
      ck_assert_int_eq(ct_op_set_attr_string(op, "activation", names[a]), CT_OK);
      if (given) {
        ck_assert_int_eq(ct_op_set_attr_floats(op, "activation_alpha", &al, 1), CT_OK);
        ck_assert_int_eq(ct_op_set_attr_floats(op, "activation_beta", &be, 1), CT_OK);
      }
      run(op, s);
      const double *o = result(s, "last_h", CT_FLOAT64, CT_DIMS(1, 3, 1));
      static const double alpha0[] = {0, 0, 0, 0.01, 1, 1, 0.2, 1, 0, 0, 1};
      static const double beta0[] = {0, 0, 0, 0, 0, 1, 0.5, 0, 0, 0, 0};
      double A = given ? al : alpha0[a], B = given ? be : beta0[a];
      for (int i = 0; i < 3; i++) {
        double v = xs[i], want[11] = {
            sigm(v), tanh(v), v > 0 ? v : 0, v >= 0 ? v : A * v, v > A ? v : 0,
            A * tanh(B * v), fmin(fmax(A * v + B, 0), 1), v >= 0 ? v : A * (exp(v) - 1),
            v / (1 + fabs(v)), log1p(exp(v)), A * v + B};
        ck_assert_msg(fabs(o[i] - want[a]) <= 1e-15 * (1 + fabs(want[a])),
                      "%s(%g) = %.17g, want %.17g", names[a], v, o[i], want[a]);
      }
      ct_op_free(op);
      ct_scope_free(s);
    }
  }
}
END_TEST

/* ---- Refusals -------------------------------------------------------------------------------- */

/* A 2-step lstm of batch 2, 3 features, hidden size 2, float64, ready to be broken. */
static ct_scope *lstm_scope(void) {
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", CT_DIMS(2, 2, 3), 0);
  put_smooth(s, "w", CT_DIMS(1, 8, 3), 1);
  put_smooth(s, "r", CT_DIMS(1, 8, 2), 2);
  return s;
}

START_TEST(refuses_bad_attributes) {
  ct_scope *s = lstm_scope();
  const bool has[8] = {0};
  ct_op *op = layer_op("lstm", has, true, false, false);
  ck_assert_int_eq(ct_op_set_attr_string(op, "direction", "sideways"), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "direction", "sideways", "bidirectional", NULL);
  ck_assert_int_eq(ct_op_set_attr_string(op, "direction", "forward"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "clip", -1), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "clip", NULL);
  ck_assert_int_eq(ct_op_set_attr_float(op, "clip", 0), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(op, "hidden_size", 3), CT_OK);
  run_fails(op, s, CT_ERR_SHAPE, "hidden_size is 3", "'r'", NULL);
  ck_assert_int_eq(ct_op_set_attr_int(op, "hidden_size", 2), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "cell_activation", "swish"), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "cell_activation", "swish", "hard_sigmoid", NULL);
  ck_assert_int_eq(ct_op_set_attr_string(op, "cell_activation", "tanh"), CT_OK);
  const double two[2] = {1, 2};
  ck_assert_int_eq(ct_op_set_attr_floats(op, "activation_beta", two, 2), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "activation_beta has 2 values",
            "one per activation (3)", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(refuses_mismatched_inputs) {
  ct_scope *s = lstm_scope();
  const bool has[8] = {[3] = true, [4] = true, [5] = true};
  ct_op *op = layer_op("lstm", has, true, false, false);
  put_smooth(s, "b", CT_DIMS(1, 8), 3); /* lstm's B is [dirs, 8 h] */
  put_smooth(s, "h0", CT_DIMS(1, 2, 2), 4);
  int64_t len[2] = {2, 3};
  put(s, "seq", CT_INT64, CT_DIMS(2), len);
  run_fails(op, s, CT_ERR_SHAPE, "input B variable 'b'", "[1,16]", NULL);
  put_smooth(s, "b", CT_DIMS(1, 16), 3);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "SequenceLength", "entry 1 is 3", NULL);
  len[1] = 1;
  put(s, "seq", CT_INT64, CT_DIMS(2), len);
  put_smooth(s, "w", CT_DIMS(1, 8, 2), 1);
  run_fails(op, s, CT_ERR_SHAPE, "input W variable 'w'", NULL);
  put_smooth(s, "w", CT_DIMS(1, 8, 3), 1);
  float wf[24] = {0};
  put(s, "w", CT_FLOAT32, CT_DIMS(1, 8, 3), wf);
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "'w'", "float32", NULL);
  put_smooth(s, "w", CT_DIMS(1, 8, 3), 1);
  int32_t xi[12] = {0};
  put(s, "x", CT_INT32, CT_DIMS(2, 2, 3), xi);
  run_fails(op, s, CT_ERR_UNSUPPORTED, NULL);
  put_smooth(s, "x", CT_DIMS(2, 3), 0);
  run_fails(op, s, CT_ERR_SHAPE, "input X variable 'x'", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* An X without features holds no memory whatever its steps and batch: sizes whose working
 * space could not be counted are refused, not allocated. */
START_TEST(refuses_working_space_past_the_address_space) {
  ct_scope *s = ct_scope_new();
  double one = 1;
  put(s, "x", CT_FLOAT64, CT_DIMS(INT64_C(1) << 31, INT64_C(1) << 31, 0), NULL);
  put(s, "w", CT_FLOAT64, CT_DIMS(1, 1, 0), NULL);
  put(s, "r", CT_FLOAT64, CT_DIMS(1, 1, 1), &one);
  const bool has[8] = {0};
  ct_op *op = layer_op("simple_rnn", has, false, true, false);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "input X variable 'x'", "address space", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- The entries split across threads ------------------------------------------------------ */

enum { SP_T = 10, SP_N = 7, SP_I = 6, SP_H = 64 };

/* Variable name of dims filled with sin-pattern values of seed in dtype dt. */
static void put_pattern_dt(ct_scope *s, const char *name, ct_dtype dt, ct_ddim dims,
                           double seed) {
  int64_t n = ct_ddim_numel(dims);
  double *v = malloc((size_t)n * sizeof *v);
  float *f = malloc((size_t)n * sizeof *f);
  ck_assert(v != NULL && f != NULL);
  for (int64_t i = 0; i < n; i++) {
    v[i] = 0.6 * sin(1.7 * (double)i + seed);
    f[i] = (float)v[i];
  }
  put(s, name, dt, dims, dt == CT_FLOAT32 ? (const void *)f : (const void *)v);
  free(v);
  free(f);
}

/* A scope holding a bidirectional layer's inputs in dtype dt, hidden size h (sin patterns):
 * x, w, r, b, h0, c0 (read by lstm alone), p (peepholes, read when wired) and seq, SP_N entries
 * of lengths 10, 7, 0, 10, 3, 10, 1. */
static ct_scope *split_scope(const char *type, ct_dtype dt, bool batch_major, int64_t h) {
  int64_t gates = strcmp(type, "lstm") == 0 ? 4 : strcmp(type, "gru") == 0 ? 3 : 1;
  ct_scope *s = ct_scope_new();
  put_pattern_dt(s, "x", dt, batch_major ? CT_DIMS(SP_N, SP_T, SP_I) : CT_DIMS(SP_T, SP_N, SP_I),
                 0.1);
  put_pattern_dt(s, "w", dt, CT_DIMS(2, gates * h, SP_I), 1.2);
  put_pattern_dt(s, "r", dt, CT_DIMS(2, gates * h, h), 2.3);
  put_pattern_dt(s, "b", dt, CT_DIMS(2, gates * 2 * h), 3.4);
  put_pattern_dt(s, "h0", dt, batch_major ? CT_DIMS(SP_N, 2, h) : CT_DIMS(2, SP_N, h), 4.5);
  put_pattern_dt(s, "c0", dt, batch_major ? CT_DIMS(SP_N, 2, h) : CT_DIMS(2, SP_N, h), 5.6);
  put_pattern_dt(s, "p", dt, CT_DIMS(2, 3 * h), 6.7);
  int32_t len[SP_N] = {10, 7, 0, 10, 3, 10, 1};
  put(s, "seq", CT_INT32, CT_DIMS(SP_N), len);
  return s;
}

/* Out, LastH and LastC's bytes (LastC for lstm) after one run at `threads` of split_scope's
 * layer of hidden size h, every input wired (peepholes when `peep`, else the usual cells'
 * vectorised path), in dtype dt; *bytes their size. */
static unsigned char *split_run(const char *type, ct_dtype dt, bool batch_major, bool peep,
                                bool lbr, int64_t h, int threads, size_t *bytes) {
  bool lstm = strcmp(type, "lstm") == 0;
  ct_scope *s = split_scope(type, dt, batch_major, h);
  const bool has[8] = {[3] = true, [4] = true, [5] = true, [6] = lstm, [7] = lstm && peep};
  ct_op *op = layer_op(type, has, true, true, lstm);
  ck_assert_int_eq(ct_op_set_attr_string(op, "direction", "bidirectional"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "time_major", !batch_major), CT_OK);
  if (strcmp(type, "gru") == 0) {
    ck_assert_int_eq(ct_op_set_attr_bool(op, "linear_before_reset", lbr), CT_OK);
  }
  ct_set_num_threads(threads);
  run(op, s);
  ct_set_num_threads(1);
  static const char *const outs[3] = {"out", "last_h", "last_c"};
  size_t total = 0, at = 0;
  for (int k = 0; k < (lstm ? 3 : 2); k++) {
    const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, outs[k]));
    total += (size_t)ct_tensor_numel(t) * ct_dtype_size(dt);
  }
  unsigned char *all = malloc(total);
  ck_assert_ptr_nonnull(all);
  for (int k = 0; k < (lstm ? 3 : 2); k++) {
    const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, outs[k]));
    size_t n = (size_t)ct_tensor_numel(t) * ct_dtype_size(dt);
    memcpy(all + at, ct_tensor_data(t, dt), n);
    at += n;
  }
  *bytes = total;
  ct_op_free(op);
  ct_scope_free(s);
  return all;
}

/* A layer's entries run on several threads (each thread all the steps of its entries, each
 * step's H' R^T over its rows): the bits of one thread, for every kind (gru both reset forms,
 * lstm with and without peepholes), both layouts and dtypes, entries of lengths 0 to t. */
START_TEST(entries_split_across_threads_give_the_bits_of_one) {
  static const struct {
    const char *type;
    bool peep, lbr;
  } kinds[] = {{"simple_rnn", false, false}, {"gru", false, false}, {"gru", false, true},
               {"lstm", false, false},       {"lstm", true, false}};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    for (int v = 0; v < 4; v++) {
      ct_dtype dt = v & 1 ? CT_FLOAT64 : CT_FLOAT32;
      bool bm = v & 2;
      size_t n1, nt;
      unsigned char *one =
          split_run(kinds[k].type, dt, bm, kinds[k].peep, kinds[k].lbr, SP_H, 1, &n1);
      for (int threads = 2; threads <= 4; threads++) { /* at 4, pieces of one entry */
        unsigned char *many =
            split_run(kinds[k].type, dt, bm, kinds[k].peep, kinds[k].lbr, SP_H, threads, &nt);
        ck_assert_uint_eq(nt, n1);
        ck_assert_msg(memcmp(one, many, n1) == 0, "%s (peep %d, lbr %d) dtype %d batch-major %d "
                      "differs at %d threads", kinds[k].type, kinds[k].peep, kinds[k].lbr,
                      (int)dt, bm, threads);
        free(many);
      }
      free(one);
    }
  }
}
END_TEST

/* The float32 cells on AVX-512 (vmath512.h's functions) against the loops every other CPU runs
 * (the GEMM's AVX2 or portable kernel chosen turns the kernels' AVX-512 code off): the same bits,
 * every kind with the usual cells, both layouts, at 1 and 3 threads, hidden sizes of 64 and 37
 * (the cells' last 5 units masked). */
START_TEST(avx512_cells_give_the_bits_of_the_portable_loops) {
  if (!ct__gemm_use_kernel("avx512")) return; /* nothing to compare on this CPU */
  static const struct {
    const char *type;
    bool lbr;
  } kinds[] = {{"simple_rnn", false}, {"gru", false}, {"gru", true}, {"lstm", false}};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    for (int v = 0; v < 8; v++) {
      const bool bm = v & 1;
      const int threads = v & 2 ? 3 : 1;
      const int64_t h = v & 4 ? 37 : SP_H;
      size_t n1, n2;
      ck_assert(ct__gemm_use_kernel("avx512"));
      unsigned char *wide = split_run(kinds[k].type, CT_FLOAT32, bm, false, kinds[k].lbr, h,
                                      threads, &n1);
      ck_assert(ct__gemm_use_kernel("avx2") || ct__gemm_use_kernel("portable"));
      unsigned char *other = split_run(kinds[k].type, CT_FLOAT32, bm, false, kinds[k].lbr, h,
                                       threads, &n2);
      ck_assert_uint_eq(n1, n2);
      ck_assert_msg(memcmp(wide, other, n1) == 0, "%s (lbr %d) batch-major %d at %d threads, "
                    "hidden %lld", kinds[k].type, kinds[k].lbr, bm, threads, (long long)h);
      free(wide);
      free(other);
    }
  }
  ck_assert(ct__gemm_use_kernel(NULL));
}
END_TEST

/* ---- Gradients ------------------------------------------------------------------------------- */

/* The layer the gradient tests build: its type, attributes and wired inputs. */
static const char *g_type;
static const char *g_dir;
static bool g_lbr, g_fused, g_batch_major;
static double g_clip;
static const char *g_acts[3]; /* NULL: the defaults */

/* loss = test_weighted_sum(concat(Out, LastH, LastC flattened)). */
static void build_layer(ct_program *p) {
  bool lstm = strcmp(g_type, "lstm") == 0;
  const bool has[8] = {[3] = true, [4] = true, [5] = true, [6] = lstm, [7] = lstm};
  ct_op *op = layer_op(g_type, has, true, true, lstm);
  ck_assert_int_eq(ct_op_set_attr_string(op, "direction", g_dir), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "time_major", !g_batch_major), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(op, "clip", g_clip), CT_OK);
  if (strcmp(g_type, "gru") == 0) {
    ck_assert_int_eq(ct_op_set_attr_bool(op, "linear_before_reset", g_lbr), CT_OK);
  }
  if (lstm) ck_assert_int_eq(ct_op_set_attr_bool(op, "input_forget", g_fused), CT_OK);
  const char *const slots[3][3] = {{"activation"},
                                   {"gate_activation", "activation"},
                                   {"gate_activation", "candidate_activation", "cell_activation"}};
  int kind = lstm ? 2 : strcmp(g_type, "gru") == 0 ? 1 : 0;
  for (int k = 0; k <= kind && g_acts[0] != NULL; k++) {
    ck_assert_int_eq(ct_op_set_attr_string(op, slots[kind][k], g_acts[k]), CT_OK);
  }
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  static const char *const outs[] = {"out", "last_h", "last_c"}, *const flat[] = {"f0", "f1", "f2"};
  static const int64_t minus_one = -1;
  for (int k = 0; k < (lstm ? 3 : 2); k++) {
    ct_op *rs = op_x("reshape", outs[k], flat[k]);
    ck_assert_int_eq(ct_op_set_attr_ints(rs, "shape", &minus_one, 1), CT_OK);
    ck_assert_int_eq(ct_program_append(p, rs), CT_OK);
  }
  ct_op *cat = op_many("concat", flat, lstm ? 3 : 2, "all");
  ck_assert_int_eq(ct_program_append(p, cat), CT_OK);
  append_weighted_loss(p, "all", "loss");
}

/* Checks every gradient of a layer of 3 steps, batch 2, 2 features, hidden size 2, the second
 * entry 2 steps long. */
static void check_layer_grads(const char *type, const char *dir) {
  g_type = type;
  g_dir = dir;
  bool lstm = strcmp(type, "lstm") == 0;
  int64_t gates = lstm ? 4 : strcmp(type, "gru") == 0 ? 3 : 1;
  int64_t d = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
  ct_scope *s = ct_scope_new();
  put_smooth(s, "x", g_batch_major ? CT_DIMS(2, 3, 2) : CT_DIMS(3, 2, 2), 0.1);
  put_smooth(s, "w", CT_DIMS(d, gates * 2, 2), 1.2);
  put_smooth(s, "r", CT_DIMS(d, gates * 2, 2), 2.3);
  put_smooth(s, "b", CT_DIMS(d, gates * 4), 3.4);
  put_smooth(s, "h0", g_batch_major ? CT_DIMS(2, d, 2) : CT_DIMS(d, 2, 2), 4.5);
  put_smooth(s, "c0", g_batch_major ? CT_DIMS(2, d, 2) : CT_DIMS(d, 2, 2), 5.6);
  put_smooth(s, "p", CT_DIMS(d, 6), 6.7);
  int32_t len[2] = {3, 2};
  put(s, "seq", CT_INT32, CT_DIMS(2), len);
  static const char *const params[] = {"x", "w", "r", "b", "h0", "c0", "p"};
  check_grads(s, build_layer, "loss", params, lstm ? 7 : 5);
  ct_scope_free(s);
}

/* Every gradient of a bidirectional layer of SP_N entries (lengths 0 to T; the gradient
 * kernel runs the forward steps again, split across the threads as the forward kernel's, and
 * walks them back), in float64, as bytes; *bytes their size. */
static unsigned char *grad_run(const char *type, bool lbr, bool batch_major, int threads,
                               size_t *bytes) {
  g_type = type;
  g_dir = "bidirectional";
  g_lbr = lbr;
  g_fused = false;
  g_batch_major = batch_major;
  g_clip = 0;
  g_acts[0] = NULL;
  bool lstm = strcmp(type, "lstm") == 0;
  ct_scope *s = split_scope(type, CT_FLOAT64, batch_major, SP_H);
  static const char *const params[] = {"x", "w", "r", "b", "h0", "c0", "p"};
  const size_t np = lstm ? 7 : 5;
  ct_set_num_threads(threads);
  run_backward(s, build_layer, params, np);
  ct_set_num_threads(1);
  size_t total = 0;
  for (size_t k = 0; k < np; k++) {
    total += (size_t)ct_tensor_numel(ct_var_tensor(ct_scope_find_var(s, params[k]))) * 8;
  }
  unsigned char *all = malloc(total), *at = all;
  ck_assert_ptr_nonnull(all);
  for (size_t k = 0; k < np; k++) {
    char gname[32];
    snprintf(gname, sizeof gname, "%s@GRAD", params[k]);
    const ct_tensor *g = ct_var_get_tensor(ct_scope_find_var(s, gname));
    ck_assert_msg(g != NULL, "no gradient '%s'", gname);
    size_t n = (size_t)ct_tensor_numel(g) * 8;
    memcpy(at, ct_tensor_data(g, CT_FLOAT64), n);
    at += n;
  }
  *bytes = total;
  ct_scope_free(s);
  return all;
}

/* The gradient kernels with their forward steps split across 2 to 4 threads: one thread's
 * bits, every kind, both layouts. */
START_TEST(gradients_with_the_entries_split_give_the_bits_of_one) {
  static const struct {
    const char *type;
    bool lbr;
  } kinds[] = {{"simple_rnn", false}, {"gru", false}, {"gru", true}, {"lstm", false}};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    for (int bm = 0; bm < 2; bm++) {
      size_t n1, nt;
      unsigned char *one = grad_run(kinds[k].type, kinds[k].lbr, bm, 1, &n1);
      for (int threads = 2; threads <= 4; threads++) {
        unsigned char *many = grad_run(kinds[k].type, kinds[k].lbr, bm, threads, &nt);
        ck_assert_uint_eq(nt, n1);
        ck_assert_msg(memcmp(one, many, n1) == 0, "%s (lbr %d) batch-major %d differs at %d "
                      "threads", kinds[k].type, kinds[k].lbr, bm, threads);
        free(many);
      }
      free(one);
    }
  }
}
END_TEST

START_TEST(simple_rnn_gradients) {
  check_layer_grads("simple_rnn", "bidirectional");
  g_batch_major = true;
  check_layer_grads("simple_rnn", "reverse");
}
END_TEST

START_TEST(gru_gradients) {
  check_layer_grads("gru", "bidirectional");
  g_lbr = true;
  check_layer_grads("gru", "bidirectional");
  g_batch_major = true;
  check_layer_grads("gru", "reverse");
  g_lbr = false;
  g_clip = 0.9;
  check_layer_grads("gru", "forward");
}
END_TEST

START_TEST(lstm_gradients) {
  check_layer_grads("lstm", "bidirectional");
  g_batch_major = true;
  check_layer_grads("lstm", "reverse");
  g_fused = true;
  g_clip = 0.9;
  check_layer_grads("lstm", "forward");
}
END_TEST

/* Gradients through the other smooth activations (with their default alpha and beta). */
START_TEST(gradients_through_other_activations) {
  g_acts[0] = "softplus";
  check_layer_grads("simple_rnn", "forward");
  g_acts[0] = "softsign";
  g_acts[1] = "scaled_tanh";
  check_layer_grads("gru", "bidirectional");
  g_lbr = true;
  check_layer_grads("gru", "forward");
  g_acts[0] = "hard_sigmoid";
  g_acts[1] = "elu";
  g_acts[2] = "affine";
  check_layer_grads("lstm", "bidirectional");
  g_acts[0] = "leaky_relu";
  g_acts[2] = "softsign";
  check_layer_grads("lstm", "reverse");
}
END_TEST

/* A gradient of an input that is not wired is refused by the grad op. */
START_TEST(grad_refuses_gradient_of_unwired_input) {
  ct_scope *s = lstm_scope();
  ct_op *op = new_op("lstm_grad");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "W", "w"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "R", "r"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "InitH@GRAD", "dh0"), CT_OK);
  run_fails(op, s, CT_ERR_NOT_FOUND, "InitH@GRAD", "'dh0'", "input InitH", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("ops_rnn_layers");
  CT_ADD_TEST(s, simple_rnn_two_steps);
  CT_ADD_TEST(s, gru_one_step_both_reset_forms);
  CT_ADD_TEST(s, lstm_one_step_with_peepholes);
  CT_ADD_TEST(s, reverse_with_sequence_lengths);
  CT_ADD_TEST(s, bidirectional_batch_major);
  CT_ADD_TEST(s, clip_bounds_the_gate_inputs);
  CT_ADD_TEST(s, simple_rnn_activations);
  CT_ADD_TEST(s, refuses_bad_attributes);
  CT_ADD_TEST(s, refuses_mismatched_inputs);
  CT_ADD_TEST(s, refuses_working_space_past_the_address_space);
  CT_ADD_TEST(s, entries_split_across_threads_give_the_bits_of_one);
  CT_ADD_TEST(s, avx512_cells_give_the_bits_of_the_portable_loops);
  CT_ADD_TEST(s, gradients_with_the_entries_split_give_the_bits_of_one);
  CT_ADD_TEST(s, simple_rnn_gradients);
  CT_ADD_TEST(s, gru_gradients);
  CT_ADD_TEST(s, lstm_gradients);
  CT_ADD_TEST(s, gradients_through_other_activations);
  CT_ADD_TEST(s, grad_refuses_gradient_of_unwired_input);
  return s;
}

CT_TEST_MAIN(make_suite)
