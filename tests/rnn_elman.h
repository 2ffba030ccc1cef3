/* SPDX-License-Identifier: Apache-2.0 */
/* tests/rnn_elman.h: the Elman RNN the recurrent-op suites share (test_rnn_op.c, test_rnn_bind.c,
 * test_cuda_ops_rnn.c): its step program, the op over it, seeded data and the hand-written loop
 * it must match. */
#ifndef CORTEN_TESTS_RNN_ELMAN_H
#define CORTEN_TESTS_RNN_ELMAN_H

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include <corten/corten.h>

#include "harness.h"
#include "rnn_util.h"

enum { B = 2, D = 3, H = 4 };

/* A float32 tensor variable in s with pseudo-random values in [-1, 1) from seed. */
static inline float *put_random(ct_scope *s, const char *name, ct_ddim dims, unsigned seed) {
  ct_tensor *t = ct_var_tensor(ct_scope_var(s, name));
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(ct_tensor_resize(t, dims), CT_OK);
  float *d = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu());
  ck_assert_ptr_nonnull(d);
  unsigned x = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < ct_tensor_numel(t); i++) {
    x = x * 1103515245u + 12345u;
    d[i] = (float)((x >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
  return d;
}

static inline void append_op(ct_program *p, const char *type, const char *x, const char *y,
                             const char *out) {
  ct_op *op = ct_op_new(type);
  ck_assert_ptr_nonnull(op);
  ck_assert_int_eq(ct_op_set_input(op, "X", x), CT_OK);
  if (y != NULL) ck_assert_int_eq(ct_op_set_input(op, "Y", y), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", out), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
}

/* h = tanh(x W + h_prev U + b) */
static inline ct_program *elman_program(void) {
  ct_program *p = ct_program_new();
  ck_assert_ptr_nonnull(p);
  append_op(p, "matmul", "x", "W", "xw");
  append_op(p, "matmul", "h_prev", "U", "hu");
  append_op(p, "elementwise_add", "xw", "hu", "s");
  append_op(p, "elementwise_add", "s", "b", "pre");
  append_op(p, "tanh", "pre", NULL, "h");
  return p;
}

/* The Elman recurrent op over step program step (the op takes it). */
static inline ct_op *elman_op_over(ct_program *step, bool reverse) {
  ct_op *op = recurrent_op(step, "h", "h_prev", reverse);
  const char *params[] = {"W", "U", "b"};
  ck_assert_int_eq(ct_op_set_inputs(op, "Params", params, 3), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "InitStates", "h0"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "FinalStates", "h_last"), CT_OK);
  return op;
}

static inline ct_op *elman_op(bool reverse) { return elman_op_over(elman_program(), reverse); }

/* Weights W [D,H], U [H,H], b [H], h0 [B,H], x_seq [T,B,D] in s. */
static inline void elman_data(ct_scope *s, int64_t T) {
  put_random(s, "W", CT_DIMS(D, H), 1);
  put_random(s, "U", CT_DIMS(H, H), 2);
  put_random(s, "b", CT_DIMS(H), 3);
  put_random(s, "h0", CT_DIMS(B, H), 4);
  put_random(s, "x_seq", CT_DIMS(T, B, D), 5 + (unsigned)T);
}

/* The hand-written loop: ref[t] = h_t, [T, B, H]. */
static inline void elman_ref(const ct_scope *s, int64_t T, bool reverse, double *ref) {
  const float *W = var_f32(s, "W"), *U = var_f32(s, "U"), *b = var_f32(s, "b"),
              *h0 = var_f32(s, "h0");
  const float *x = var_f32(s, "x_seq");
  double h[B * H];
  for (int i = 0; i < B * H; i++) h[i] = h0[i];
  for (int64_t k = 0; k < T; k++) {
    int64_t t = reverse ? T - 1 - k : k;
    double next[B * H];
    for (int r = 0; r < B; r++) {
      for (int j = 0; j < H; j++) {
        double acc = b[j];
        for (int q = 0; q < D; q++) acc += (double)x[(t * B + r) * D + q] * W[q * H + j];
        for (int q = 0; q < H; q++) acc += h[r * H + q] * U[q * H + j];
        next[r * H + j] = tanh(acc);
      }
    }
    memcpy(h, next, sizeof h);
    memcpy(ref + t * B * H, h, sizeof h);
  }
}

#endif /* CORTEN_TESTS_RNN_ELMAN_H */
