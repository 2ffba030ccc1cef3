/* SPDX-License-Identifier: Apache-2.0 */
/* The executor option constants (corten/program.h, ops/consts.c, docs/design/constants.md):
 * conv2d's filters, matmul's Y and the recurrent layers' W (packed) and R (transposed) kept give
 * the bits of the executor without the option on every path (im2col image by image, images batched, 1x1 read in place, Winograd, a
 * batch folded into the rows; float32 and float64); the filters are read-only to corten while the executor lives and writable again
 * after; a constant given new memory is packed again; caller memory is never frozen nor kept;
 * and bad names are refused. */
#include <stdio.h>
#include <string.h>

#include "op_util.h"

/* A convolution: x [n, c, hw, hw] by w [m, c, ks, ks] at stride st, padding pad. */
typedef struct conv_spec {
  int64_t n, c, m, hw, ks, st, pad;
  ct_dtype dt;
} conv_spec;

static int64_t out_hw(const conv_spec *sp) { return (sp->hw + 2 * sp->pad - sp->ks) / sp->st + 1; }

/* Variable name filled (dims d) with a fixed pattern of seed, in [-1, 1], not exact sums. */
static void put_pattern(ct_scope *s, const char *name, ct_ddim d, unsigned seed, ct_dtype dt) {
  ct_tensor *t = ct_var_tensor(ct_scope_var(s, name));
  ck_assert_int_eq(ct_tensor_resize(t, d), CT_OK);
  void *p = ct_tensor_mutable_data(t, dt, ct_cpu());
  ck_assert_msg(p != NULL, "%s", ct_last_error());
  unsigned v = seed * 2654435761u + 1;
  for (int64_t i = 0; i < ct_tensor_numel(t); i++) {
    v = v * 1103515245u + 12345u;
    double x = (double)((v >> 8) % 2001) / 1000.0 - 1.0 + 1e-4 * (double)(i % 7);
    if (dt == CT_FLOAT32) ((float *)p)[i] = (float)x;
    else ((double *)p)[i] = x;
  }
}

static ct_program *conv_program(const conv_spec *sp) {
  ct_program *p = ct_program_new();
  ct_op *conv = ct_op_new("conv2d");
  ct_op_set_input(conv, "Input", "x");
  ct_op_set_input(conv, "Filter", "w");
  ct_op_set_output(conv, "Output", "y");
  ct_op_set_attr_ints(conv, "strides", (const int64_t[]){sp->st, sp->st}, 2);
  ct_op_set_attr_ints(conv, "paddings", (const int64_t[]){sp->pad, sp->pad}, 2);
  ck_assert_int_eq(ct_program_append(p, conv), CT_OK);
  return p;
}

static ct_scope *conv_scope(const conv_spec *sp) {
  ct_scope *s = ct_scope_new();
  put_pattern(s, "x", CT_DIMS(sp->n, sp->c, sp->hw, sp->hw), 1, sp->dt);
  put_pattern(s, "w", CT_DIMS(sp->m, sp->c, sp->ks, sp->ks), 2, sp->dt);
  return s;
}

static size_t y_bytes(const conv_spec *sp) {
  return (size_t)(sp->n * sp->m * out_hw(sp) * out_hw(sp)) * ct_dtype_size(sp->dt);
}

/* Runs e once and copies y into buf. */
static void run_copy(ct_executor *e, ct_scope *s, void *buf, size_t bytes) {
  ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  const ct_tensor *y = ct_var_get_tensor(ct_scope_find_var(s, "y"));
  ck_assert_uint_eq((size_t)ct_tensor_numel(y) * ct_dtype_size(ct_tensor_dtype(y)), bytes);
  memcpy(buf, ct_tensor_data(y, ct_tensor_dtype(y)), bytes);
}

static const char *const w_only[] = {"w"};
static const ct_executor_options with_w = {.constants = w_only, .n_constants = 1};

static const ct_tensor *w_of(ct_scope *s) { return ct_var_get_tensor(ct_scope_find_var(s, "w")); }

/* y with and without the option, three runs with it, the same bytes each time; w read-only
 * while the executor lives (the packing kept), writable after. */
/* Program p over scope s: y's bytes from an executor without the option, then from one with
 * constants names (n of them) at three runs, the same each time, each constant read-only while
 * the executor lives and writable after; what: the case, for messages. Frees p and s. */
static void check_kept(ct_program *p, ct_scope *s, const char *const *names, size_t n,
                       const char *what) {
  ct_executor *plain = ct_executor_new(p, s, ct_cpu());
  ck_assert_msg(plain != NULL && ct_executor_run(plain) == CT_OK, "%s", ct_last_error());
  const ct_tensor *y = ct_var_get_tensor(ct_scope_find_var(s, "y"));
  size_t bytes = (size_t)ct_tensor_numel(y) * ct_dtype_size(ct_tensor_dtype(y));
  char *want = malloc(bytes), *got = malloc(bytes);
  memcpy(want, ct_tensor_data(y, ct_tensor_dtype(y)), bytes);
  ct_executor_free(plain);
  ct_executor_options o = {.constants = names, .n_constants = n};
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  for (int r = 0; r < 3; r++) {
    memset(got, 0x7f, bytes);
    run_copy(e, s, got, bytes);
    ck_assert_msg(memcmp(got, want, bytes) == 0, "%s: run %d differs", what, r);
    for (size_t k = 0; k < n; k++) {
      ck_assert(ct_tensor_is_read_only(ct_var_get_tensor(ct_scope_find_var(s, names[k]))));
    }
  }
  ct_executor_free(e);
  for (size_t k = 0; k < n; k++) {
    ck_assert(!ct_tensor_is_read_only(ct_var_get_tensor(ct_scope_find_var(s, names[k]))));
  }
  free(want);
  free(got);
  ct_scope_free(s);
  ct_program_free(p);
}

static void check_same_bits(const conv_spec *sp) {
  char what[96];
  snprintf(what, sizeof what, "conv %lldx%lld m %lld hw %lld ks %lld st %lld %s",
           (long long)sp->n, (long long)sp->c, (long long)sp->m, (long long)sp->hw,
           (long long)sp->ks, (long long)sp->st, ct_dtype_name(sp->dt));
  check_kept(conv_program(sp), conv_scope(sp), w_only, 1, what);
}

START_TEST(im2col_image_by_image_gives_the_same_bits) {
  check_same_bits(&(conv_spec){1, 5, 20, 23, 3, 2, 1, CT_FLOAT32});
  check_same_bits(&(conv_spec){2, 3, 16, 40, 7, 2, 3, CT_FLOAT32}); /* a 7x7 stem */
  check_same_bits(&(conv_spec){1, 5, 20, 23, 3, 2, 1, CT_FLOAT64});
}
END_TEST

START_TEST(batched_images_give_the_same_bits) {
  check_same_bits(&(conv_spec){4, 6, 13, 9, 3, 2, 1, CT_FLOAT32});
  check_same_bits(&(conv_spec){4, 6, 13, 9, 3, 2, 1, CT_FLOAT64});
}
END_TEST

START_TEST(one_by_one_gives_the_same_bits_swapped_or_not) {
  check_same_bits(&(conv_spec){1, 40, 300, 7, 1, 1, 0, CT_FLOAT32});  /* 49 pixels: swapped */
  check_same_bits(&(conv_spec){2, 24, 20, 30, 1, 1, 0, CT_FLOAT32});  /* 900 pixels */
  check_same_bits(&(conv_spec){1, 300, 40, 9, 1, 1, 0, CT_FLOAT64});  /* k past one block */
}
END_TEST

START_TEST(winograd_gives_the_same_bits) {
  check_same_bits(&(conv_spec){1, 16, 24, 14, 3, 1, 1, CT_FLOAT32});
  check_same_bits(&(conv_spec){2, 32, 64, 38, 3, 1, 1, CT_FLOAT32}); /* several tile blocks */
  /* kept packings over 1 MiB, each product fetching the next position's (ct__gemm.next):
   * F(2x2) of 160 x 128 filters on 10 x 10 (1.3 MB) and F(4x4) of 128 x 64 on 16 x 16 (1.2
   * MB), on one thread and on three (one block over all of them; F(4x4) by parts) */
  for (int threads = 1; threads <= 3; threads += 2) {
    ct_set_num_threads(threads);
    check_same_bits(&(conv_spec){1, 128, 160, 10, 3, 1, 1, CT_FLOAT32});
    check_same_bits(&(conv_spec){1, 64, 128, 16, 3, 1, 1, CT_FLOAT32});
  }
  ct_set_num_threads(1);
}
END_TEST

/* matmul of x (dims xd) by the constant w (dims wd, transposed when ty): the bits of the
 * executor without the option at every run, w read-only while kept. */
static void check_matmul(ct_ddim xd, ct_ddim wd, bool ty, ct_dtype dt) {
  ct_program *p = ct_program_new();
  ct_op *mm = ct_op_new("matmul");
  ct_op_set_input(mm, "X", "x");
  ct_op_set_input(mm, "Y", "w");
  ct_op_set_output(mm, "Out", "y");
  ck_assert_int_eq(ct_op_set_attr_bool(mm, "transpose_y", ty), CT_OK);
  ck_assert_int_eq(ct_program_append(p, mm), CT_OK);
  ct_scope *s = ct_scope_new();
  put_pattern(s, "x", xd, 5, dt);
  put_pattern(s, "w", wd, 6, dt);
  check_kept(p, s, w_only, 1, ct_dtype_name(dt));
}

START_TEST(matmul_by_a_constant_gives_the_same_bits) {
  check_matmul(CT_DIMS(40, 33), CT_DIMS(33, 7), false, CT_FLOAT32);    /* swapped */
  check_matmul(CT_DIMS(2, 5, 70), CT_DIMS(70, 300), false, CT_FLOAT32); /* batch folded */
  check_matmul(CT_DIMS(1, 300), CT_DIMS(50, 300), true, CT_FLOAT32);   /* k past a block */
  check_matmul(CT_DIMS(17, 64), CT_DIMS(192, 64), true, CT_FLOAT64);
}
END_TEST

/* A bidirectional recurrent layer of `type` (gates G) with W and R constants: Out's bits at
 * every run those of the executor without the option, W and R read-only while kept. */
static void check_recurrent(const char *type, int64_t gates, ct_dtype dt) {
  const int64_t t = 5, n = 3, i = 7, h = 6;
  ct_program *p = ct_program_new();
  ct_op *op = ct_op_new(type);
  ct_op_set_input(op, "X", "x");
  ct_op_set_input(op, "W", "w");
  ct_op_set_input(op, "R", "r");
  ct_op_set_input(op, "B", "b");
  ct_op_set_output(op, "Out", "y");
  ck_assert_int_eq(ct_op_set_attr_string(op, "direction", "bidirectional"), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  ct_scope *s = ct_scope_new();
  put_pattern(s, "x", CT_DIMS(t, n, i), 11, dt);
  put_pattern(s, "w", CT_DIMS(2, gates * h, i), 12, dt);
  put_pattern(s, "r", CT_DIMS(2, gates * h, h), 13, dt);
  put_pattern(s, "b", CT_DIMS(2, 2 * gates * h), 14, dt);
  static const char *const wr[] = {"w", "r"};
  check_kept(p, s, wr, 2, type);
}

START_TEST(recurrent_layers_with_constant_weights_give_the_same_bits) {
  check_recurrent("lstm", 4, CT_FLOAT32);
  check_recurrent("gru", 3, CT_FLOAT32);
  check_recurrent("simple_rnn", 1, CT_FLOAT64);
}
END_TEST

START_TEST(writing_a_constant_fails_while_the_executor_lives) {
  const conv_spec sp = {1, 4, 8, 9, 3, 2, 1, CT_FLOAT32};
  ct_program *p = conv_program(&sp);
  ct_scope *s = conv_scope(&sp);
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &with_w);
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ct_tensor *w = ct_var_tensor(ct_scope_find_var(s, "w"));
  float before = ((const float *)ct_tensor_data(w, CT_FLOAT32))[5];
  static const float zeros[8 * 4 * 3 * 3];
  ck_assert_ptr_null(ct_tensor_mutable_data(w, CT_FLOAT32, ct_cpu()));
  ck_assert_int_eq(ct_last_status(), CT_ERR_READ_ONLY);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "ct_executor_options.constants"));
  ck_assert_int_eq(ct_tensor_set_value(w, zeros, CT_DIMS(8, 4, 3, 3), CT_FLOAT32, ct_cpu()),
                   CT_ERR_READ_ONLY);
  ct_tensor *src = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_set_value(src, zeros, CT_DIMS(8, 4, 3, 3), CT_FLOAT32, ct_cpu()),
                   CT_OK);
  ck_assert_int_eq(ct_tensor_copy(w, src, ct_cpu()), CT_ERR_READ_ONLY);
  ck_assert(((const float *)ct_tensor_data(w, CT_FLOAT32))[5] == before);
  ck_assert(before != 0);
  ct_executor_free(e);
  ck_assert_int_eq(ct_tensor_set_value(w, zeros, CT_DIMS(8, 4, 3, 3), CT_FLOAT32, ct_cpu()),
                   CT_OK);
  ck_assert(((const float *)ct_tensor_data(w, CT_FLOAT32))[5] == 0);
  ct_tensor_free(src);
  ct_scope_free(s);
  ct_program_free(p);
}
END_TEST

/* The output of a fresh executor without the option, into buf. */
static void plain_run(const ct_program *p, ct_scope *s, void *buf, size_t bytes) {
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  ck_assert_ptr_nonnull(e);
  run_copy(e, s, buf, bytes);
  ct_executor_free(e);
}

START_TEST(a_constant_given_new_memory_is_packed_again) {
  const conv_spec sp = {1, 6, 10, 12, 3, 2, 1, CT_FLOAT32};
  ct_program *p = conv_program(&sp);
  ct_scope *s = conv_scope(&sp);
  size_t bytes = y_bytes(&sp);
  char *want = malloc(bytes), *got = malloc(bytes);
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &with_w);
  ck_assert_ptr_nonnull(e);
  run_copy(e, s, got, bytes);
  /* New filters moved into w (its old memory let go): the next run uses them. */
  ct_scope *tmp = ct_scope_new();
  put_pattern(tmp, "w2", CT_DIMS(10, 6, 3, 3), 9, CT_FLOAT32);
  ct_tensor_move(ct_var_tensor(ct_scope_find_var(s, "w")),
                 ct_var_tensor(ct_scope_find_var(tmp, "w2")));
  ck_assert(!ct_tensor_is_read_only(w_of(s)));
  run_copy(e, s, got, bytes);
  ck_assert(ct_tensor_is_read_only(w_of(s)));
  ct_executor_free(e);
  plain_run(p, s, want, bytes);
  ck_assert(memcmp(got, want, bytes) == 0);
  free(want);
  free(got);
  ct_scope_free(tmp);
  ct_scope_free(s);
  ct_program_free(p);
}
END_TEST

START_TEST(caller_memory_is_never_frozen_nor_kept) {
  const conv_spec sp = {1, 4, 8, 11, 3, 2, 1, CT_FLOAT32};
  ct_program *p = conv_program(&sp);
  ct_scope *s = conv_scope(&sp);
  size_t bytes = y_bytes(&sp);
  char *want = malloc(bytes), *got = malloc(bytes);
  float wbuf[8 * 4 * 3 * 3];
  for (int i = 0; i < 8 * 4 * 9; i++) wbuf[i] = (float)((i * 37) % 11) / 8.0f - 0.6f;
  ck_assert_int_eq(ct_tensor_wrap(ct_var_tensor(ct_scope_find_var(s, "w")), wbuf,
                                  CT_DIMS(8, 4, 3, 3), CT_FLOAT32, ct_cpu(), NULL, NULL),
                   CT_OK);
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &with_w);
  ck_assert_ptr_nonnull(e);
  run_copy(e, s, got, bytes);
  ck_assert(!ct_tensor_is_read_only(w_of(s)));
  for (int i = 0; i < 8 * 4 * 9; i++) wbuf[i] *= -2; /* the owner writes its memory */
  run_copy(e, s, got, bytes);
  ct_executor_free(e);
  plain_run(p, s, want, bytes);
  ck_assert(memcmp(got, want, bytes) == 0);
  free(want);
  free(got);
  ct_scope_free(s);
  ct_program_free(p);
}
END_TEST

START_TEST(bad_constants_are_refused) {
  const conv_spec sp = {1, 4, 8, 9, 3, 2, 1, CT_FLOAT32};
  ct_program *p = conv_program(&sp);
  ct_scope *s = conv_scope(&sp);
  static const char *const missing[] = {"w", "nowhere"};
  ct_executor_options o = {.constants = missing, .n_constants = 2};
  ck_assert_ptr_null(ct_executor_new_with(p, s, ct_cpu(), &o));
  ck_assert_int_eq(ct_last_status(), CT_ERR_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "'nowhere'"));
  static const char *const written[] = {"y"};
  o = (ct_executor_options){.constants = written, .n_constants = 1};
  ct_var_tensor(ct_scope_var(s, "y"));
  ck_assert_ptr_null(ct_executor_new_with(p, s, ct_cpu(), &o));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "conv2d"));
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "'y'"));
  o = (ct_executor_options){.constants = NULL, .n_constants = 1};
  ck_assert_ptr_null(ct_executor_new_with(p, s, ct_cpu(), &o));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ck_assert(!ct_tensor_is_read_only(w_of(s)));
  ct_scope_free(s);
  ct_program_free(p);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("executor_constants");
  CT_ADD_TEST(s, im2col_image_by_image_gives_the_same_bits);
  CT_ADD_TEST(s, batched_images_give_the_same_bits);
  CT_ADD_TEST(s, one_by_one_gives_the_same_bits_swapped_or_not);
  CT_ADD_TEST(s, winograd_gives_the_same_bits);
  CT_ADD_TEST(s, matmul_by_a_constant_gives_the_same_bits);
  CT_ADD_TEST(s, recurrent_layers_with_constant_weights_give_the_same_bits);
  CT_ADD_TEST(s, writing_a_constant_fails_while_the_executor_lives);
  CT_ADD_TEST(s, a_constant_given_new_memory_is_packed_again);
  CT_ADD_TEST(s, caller_memory_is_never_frozen_nor_kept);
  CT_ADD_TEST(s, bad_constants_are_refused);
  return s;
}

CT_TEST_MAIN(make_suite)
