/* SPDX-License-Identifier: Apache-2.0 */
/* ONNX export of the recurrent op (onnx/export_unroll.c): an Elman RNN saved as its steps
 * unrolled loads back into a program of plain ops (a Gather per step, no recurrent op) that
 * computes the same bits, forward and reverse; a training program (which reads the step scopes)
 * and a sequence of unknown length are refused, leaving no file. */
#define _GNU_SOURCE
#include <unistd.h>

#include "file_util.h"
#include "onnx_save_util.h"
#include "rnn_elman.h"

enum { T = 5 };

/* The Elman RNN over x_seq [T,B,D] run once in a new scope, saved to name. Returns the scope. */
static ct_scope *saved_elman(const char *name, bool reverse, ct_program **p) {
  ct_scope *s = ct_scope_new();
  elman_data(s, T);
  *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(*p, elman_op(reverse)), CT_OK);
  run_program(*p, s);
  const char *in[] = {"x_seq"}, *out[] = {"h_seq", "h_last"};
  ck_assert_msg(ct_onnx_save(in_dir(name), *p, s, in, 1, out, 2) == CT_OK, "%s",
                ct_last_error());
  return s;
}

static size_t count_type(const ct_program *p, const char *type) {
  size_t n = 0;
  for (size_t i = 0; i < ct_program_size(p); i++) {
    n += strcmp(ct_op_type(ct_program_op(p, i)), type) == 0;
  }
  return n;
}

static void round_trip(bool reverse) {
  make_work_dir("onnx-unroll");
  ct_program *p = NULL;
  ct_scope *s = saved_elman("elman.onnx", reverse, &p);
  ct_scope *s2 = ct_scope_new();
  ct_onnx_model *m = ct_onnx_load(in_dir("elman.onnx"), s2);
  ck_assert_msg(m != NULL, "%s", ct_last_error());
  const ct_program *q = ct_onnx_program(m);
  ck_assert_uint_eq(count_type(q, "recurrent"), 0);
  ck_assert_uint_eq(count_type(q, "gather"), T);  /* one row of x_seq per step */
  ck_assert_uint_eq(count_type(q, "tanh"), T);    /* the step program, T times */
  ck_assert_uint_eq(count_type(q, "concat"), 1);  /* h_seq stacked */
  same_bits(s, "W", s2, "W");                     /* the parameters are initializers */
  same_bits(s, "h0", s2, "h0");
  put_random(s2, "x_seq", CT_DIMS(T, B, D), 5 + (unsigned)T); /* elman_data's sequence */
  run_program(q, s2);
  same_bits(s, "h_seq", s2, "h_seq");
  same_bits(s, "h_last", s2, "h_last");
  ct_onnx_free(m);
  ct_scope_free(s2);
  ct_program_free(p);
  ct_scope_free(s);
  remove_work_dir();
}

START_TEST(an_elman_rnn_unrolled_computes_the_same_bits) { round_trip(false); }
END_TEST

START_TEST(a_reverse_elman_rnn_unrolled_computes_the_same_bits) { round_trip(true); }
END_TEST

START_TEST(a_training_program_over_a_recurrent_op_is_refused) {
  make_work_dir("onnx-unroll");
  ct_scope *s = ct_scope_new();
  elman_data(s, T);
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, elman_op(false)), CT_OK);
  append_op(p, "mean", "h_seq", NULL, "loss");
  static const char *const params[] = {"W"};
  ck_assert_int_eq(ct_program_append_backward(p, "loss", params, 1), CT_OK);
  run_program(p, s);
  const char *in[] = {"x_seq"}, *out[] = {"loss"};
  ck_assert_int_eq(ct_onnx_save(in_dir("t.onnx"), p, s, in, 1, out, 1), CT_ERR_UNSUPPORTED);
  HAS(ct_last_error(), "op 0 ('recurrent') cannot be unrolled");
  HAS(ct_last_error(), "reads its step scopes");
  ck_assert_int_eq(count_entries(work_dir), 0);
  ct_program_free(p);
  ct_scope_free(s);
  remove_work_dir();
}
END_TEST

START_TEST(a_sequence_of_unknown_length_is_refused) {
  make_work_dir("onnx-unroll");
  ct_scope *s = ct_scope_new();
  elman_data(s, T);
  static const char *const x_seq[] = {"x_seq"};
  ck_assert_uint_eq(ct_scope_erase_vars(s, x_seq, 1), 1);
  ck_assert_ptr_nonnull(ct_var_tensor(ct_scope_var(s, "x_seq"))); /* no dims */
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, elman_op(false)), CT_OK);
  const char *in[] = {"x_seq"}, *out[] = {"h_seq"};
  ck_assert_int_eq(ct_onnx_save(in_dir("u.onnx"), p, s, in, 1, out, 1), CT_ERR_UNINITIALIZED);
  HAS(ct_last_error(), "its X 'x_seq', which holds no sequence");
  ck_assert_int_eq(count_entries(work_dir), 0);
  ct_program_free(p);
  ct_scope_free(s);
  remove_work_dir();
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("onnx_unroll");
  CT_ADD_TEST(s, an_elman_rnn_unrolled_computes_the_same_bits);
  CT_ADD_TEST(s, a_reverse_elman_rnn_unrolled_computes_the_same_bits);
  CT_ADD_TEST(s, a_training_program_over_a_recurrent_op_is_refused);
  CT_ADD_TEST(s, a_sequence_of_unknown_length_is_refused);
  return s;
}

CT_TEST_MAIN(make_suite)
