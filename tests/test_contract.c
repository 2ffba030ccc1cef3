/* SPDX-License-Identifier: Apache-2.0 */
/* Contract regressions found by an adversarial pass over the public API (issue 21). Each test
 * is named after the promise it checks and failed before its fix:
 *   - an op cannot hold its own program, on every route that changes ownership (op.h, ops.md);
 *   - an external output keeps its buffer, reshape included (ops.md);
 *   - a dims value is valid whatever the order of its extents (tensor.md);
 *   - a failing op leaves each output's dims, data and memory as they were (ops.md);
 *   - a variable reused after an erase starts empty, and scope teardown never recurses
 *     (scope.md);
 *   - the temporary file of an interrupted save is removed by the next save of the same target,
 *     and nothing else is (interop.md). */
#define _GNU_SOURCE /* mkdtemp, lstat, gethostname, flock */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <corten/corten.h>

#include "harness.h"

/* ---- An op cannot hold its own program ------------------------------------------------------- */

/* An op holding p is refused when appended to p: the cycle would make ct_op_free recurse. */
START_TEST(append_refuses_op_holding_the_program) {
  ct_program *p = ct_program_new();
  ct_op *a = ct_op_new("recurrent");
  ck_assert_ptr_nonnull(a);
  ck_assert_int_eq(ct_op_set_attr_program(a, "step_program", p), CT_OK);
  ck_assert_int_eq(ct_program_append(p, a), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "recurrent");
  HAS(ct_last_error(), "its own program");
  /* Nothing changed: p is still empty and a still belongs to the caller. */
  ck_assert_uint_eq(ct_program_size(p), 0);
  ct_op_free(a);
}
END_TEST

/* The same rule through a nested program: a holds p, p holds b, b holds q; appending a to q
 * would close the cycle a -> p -> b -> q -> a. */
START_TEST(append_refuses_op_holding_the_program_nested) {
  ct_program *p = ct_program_new();
  ct_program *q = ct_program_new();
  ct_op *a = ct_op_new("recurrent");
  ct_op *b = ct_op_new("recurrent");
  ck_assert_int_eq(ct_op_set_attr_program(b, "step_program", q), CT_OK);
  ck_assert_int_eq(ct_program_append(p, b), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_program(a, "step_program", p), CT_OK);
  ck_assert_int_eq(ct_program_append(q, a), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "its own program");
  ck_assert_uint_eq(ct_program_size(q), 0);
  ck_assert_uint_eq(ct_program_size(p), 1);
  /* An unrelated program still takes a. */
  ct_program *other = ct_program_new();
  ck_assert_int_eq(ct_program_append(other, a), CT_OK);
  ct_program_free(other);
}
END_TEST

/* The set_attr route still refuses a program that contains the op, nested too. */
START_TEST(set_attr_program_refuses_program_containing_the_op_nested) {
  ct_program *outer = ct_program_new();
  ct_program *inner = ct_program_new();
  ct_op *a = ct_op_new("recurrent");
  ct_op *b = ct_op_new("recurrent");
  ck_assert_int_eq(ct_program_append(inner, a), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_program(b, "step_program", inner), CT_OK);
  ck_assert_int_eq(ct_program_append(outer, b), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_program(a, "step_program", outer), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "its own program");
  ct_program_free(outer);
}
END_TEST

/* ---- A dims value is valid whatever the order of its extents --------------------------------- */

#define BIG ((int64_t)1 << 62)

/* ct_ddim_numel gives the same answer for every order of the same extents. */
START_TEST(ddim_numel_does_not_depend_on_extent_order) {
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(0, BIG, 4)), -1);
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(BIG, 4, 0)), -1);
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(BIG, 0, 4)), -1);
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(0, BIG, 1)), 0);
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(BIG, 1, 0)), 0);
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(0, 3, 0)), 0);
  ck_assert_int_eq(ct_ddim_numel(CT_DIMS(2, 3)), 6);
}
END_TEST

/* resize and wrap refuse dims whose nonzero extents overflow, in every order, and leave the
 * tensor as it was. */
START_TEST(resize_and_wrap_refuse_overflowing_extents_in_any_order) {
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(3)), CT_OK);
  ct_ddim bad[] = {CT_DIMS(0, BIG, 2), CT_DIMS(BIG, 2, 0), CT_DIMS(2, 0, BIG)};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_int_eq(ct_tensor_resize(t, bad[i]), CT_ERR_OUT_OF_RANGE);
    HAS(ct_last_error(), "ct_tensor_resize");
    ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(3)));
    ck_assert_int_eq(ct_tensor_wrap(t, NULL, bad[i], CT_FLOAT32, ct_cpu(), NULL, NULL),
                     CT_ERR_OUT_OF_RANGE);
    ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(3)));
  }
  ct_tensor_free(t);
}
END_TEST

/* Valid dims with a zero extent and a large one give views whose extents never overflow. */
START_TEST(views_of_empty_dims_with_large_extents_do_not_overflow) {
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(0, BIG, 1)), CT_OK);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()));
  ct_tensor *v = ct_tensor_new();
  for (int k = 0; k <= 3; k++) {
    ck_assert_int_eq(ct_tensor_flatten_to_2d(v, t, k), CT_OK);
    ct_ddim d = ct_tensor_dims(v);
    ck_assert(d.d[0] >= 0 && d.d[1] >= 0);
    ck_assert_int_eq(ct_tensor_numel(v), 0);
  }
  ck_assert_int_eq(ct_tensor_slice(v, t, 0, 0), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(v), CT_DIMS(0, BIG, 1)));
  ct_tensor_free(v);
  ct_tensor_free(t);
}
END_TEST

static void put_le(unsigned char **q, uint64_t v, int width) {
  for (int i = 0; i < width; i++) *(*q)++ = (unsigned char)(v >> (8 * i));
}

/* The params loader takes the same rule: a record of float32 dims [0, 2^62, 2] is refused as
 * [2^62, 2, 0] is, and the scope is left as it was. */
START_TEST(params_load_refuses_overflowing_extents_in_any_order) {
  int64_t shapes[2][3] = {{0, BIG, 2}, {BIG, 2, 0}};
  for (int k = 0; k < 2; k++) {
    unsigned char buf[256], *q = buf;
    put_le(&q, 0xF7E58D4F05049CB7ull, 8); /* dictionary magic */
    put_le(&q, 0, 8);
    put_le(&q, 1, 8); /* one name */
    put_le(&q, 1, 8);
    *q++ = 'w';
    put_le(&q, 1, 8); /* one record */
    put_le(&q, 0xDD5E40F096B4A13Full, 8);
    put_le(&q, 0, 8);
    put_le(&q, 1, 4); /* device CPU, 0 */
    put_le(&q, 0, 4);
    put_le(&q, 3, 4); /* ndim */
    put_le(&q, 2, 1); /* float */
    put_le(&q, 32, 1);
    put_le(&q, 1, 2);
    for (int i = 0; i < 3; i++) put_le(&q, (uint64_t)shapes[k][i], 8);
    put_le(&q, 0, 8); /* no data bytes */
    ct_scope *s = ct_scope_new();
    ck_assert_int_eq(ct_params_load_memory(buf, (size_t)(q - buf), s), CT_ERR_FORMAT);
    HAS(ct_last_error(), "more elements than memory can address");
    ck_assert_uint_eq(ct_scope_var_count(s), 0);
    ct_scope_free(s);
  }
}
END_TEST

static int deleted;
static void count_delete(DLManagedTensor *m) {
  (void)m;
  deleted++;
}

/* DLPack import takes the same rule: an overflowing shape is refused whatever its order, and the
 * DLManagedTensor stays the caller's. */
START_TEST(dlpack_import_refuses_overflowing_extents_in_any_order) {
  int64_t shapes[2][3] = {{0, BIG, 2}, {BIG, 2, 0}};
  float cell = 0;
  ct_tensor *t = ct_tensor_new();
  for (int i = 0; i < 2; i++) {
    DLManagedTensor m;
    memset(&m, 0, sizeof m);
    m.dl_tensor.data = &cell;
    m.dl_tensor.device.device_type = kDLCPU;
    m.dl_tensor.ndim = 3;
    m.dl_tensor.dtype.code = kDLFloat;
    m.dl_tensor.dtype.bits = 32;
    m.dl_tensor.dtype.lanes = 1;
    m.dl_tensor.shape = shapes[i];
    m.deleter = count_delete;
    ck_assert_int_ne(ct_tensor_from_dlpack(t, &m), CT_OK);
    ck_assert_int_eq(deleted, 0);
    ck_assert_int_eq(ct_tensor_dims(t).rank, -1);
  }
  ct_tensor_free(t);
}
END_TEST

/* ---- An external output keeps its buffer ----------------------------------------------------- */

static int released; /* count_release (harness.h) counts the release callbacks here */

/* A float32 tensor variable `name` in s with dims and values 1, 2, 3 ... */
static ct_tensor *put_iota(ct_scope *s, const char *name, ct_ddim dims) {
  ct_tensor *t = ct_var_tensor(ct_scope_var(s, name));
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(ct_tensor_resize(t, dims), CT_OK);
  float *d = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu());
  ck_assert_ptr_nonnull(d);
  for (int64_t i = 0; i < ct_tensor_numel(t); i++) d[i] = (float)(i + 1);
  return t;
}

/* A variable `name` in s wrapping buf (n floats) with dims, released through count_release. */
static ct_tensor *put_external(ct_scope *s, const char *name, float *buf, ct_ddim dims) {
  ct_tensor *t = ct_var_tensor(ct_scope_var(s, name));
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(ct_tensor_wrap(t, buf, dims, CT_FLOAT32, ct_cpu(), count_release, &released),
                   CT_OK);
  return t;
}

static ct_op *reshape_op(const char *x, const char *out, const int64_t *shape, size_t n) {
  ct_op *op = ct_op_new("reshape");
  ck_assert_ptr_nonnull(op);
  ck_assert_int_eq(ct_op_set_input(op, "X", x), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", out), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "shape", shape, n), CT_OK);
  return op;
}

/* reshape into an external output of the right size writes the caller's buffer and keeps it. */
START_TEST(reshape_into_external_output_keeps_the_buffer) {
  released = 0;
  float buf[6] = {0};
  const int64_t shape[2] = {3, 2};
  ct_scope *s = ct_scope_new();
  ct_tensor *x = put_iota(s, "x", CT_DIMS(2, 3));
  ct_tensor *out = put_external(s, "out", buf, CT_DIMS(6));
  ct_op *op = reshape_op("x", "out", shape, 2);
  ck_assert_msg(ct_op_run(op, s, ct_cpu()) == CT_OK, "%s", ct_last_error());
  ck_assert_int_eq(released, 0);
  ck_assert(ct_tensor_is_external(out));
  ck_assert(!ct_tensor_shares_memory(out, x));
  ck_assert_ptr_eq(ct_tensor_data(out, CT_FLOAT32), buf);
  ck_assert(ct_ddim_equal(ct_tensor_dims(out), CT_DIMS(3, 2)));
  for (int i = 0; i < 6; i++) ck_assert(buf[i] == (float)(i + 1));
  ck_assert(ct_ddim_equal(ct_tensor_dims(x), CT_DIMS(2, 3)));
  ct_op_free(op);
  ct_scope_free(s);
  ck_assert_int_eq(released, 1);
}
END_TEST

/* An external output too small for X's bytes is refused and its buffer left untouched. */
START_TEST(reshape_into_small_external_output_is_refused) {
  released = 0;
  float buf[4] = {-1, -1, -1, -1};
  const int64_t shape[2] = {3, 2};
  ct_scope *s = ct_scope_new();
  put_iota(s, "x", CT_DIMS(2, 3));
  ct_tensor *out = put_external(s, "out", buf, CT_DIMS(4));
  ct_op *op = reshape_op("x", "out", shape, 2);
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_EXTERNAL_BUFFER);
  HAS(ct_last_error(), "reshape");
  HAS(ct_last_error(), "'out'");
  ck_assert_int_eq(released, 0);
  ck_assert(ct_tensor_is_external(out));
  ck_assert(ct_ddim_equal(ct_tensor_dims(out), CT_DIMS(4)));
  ck_assert_ptr_eq(ct_tensor_data(out, CT_FLOAT32), buf);
  for (int i = 0; i < 4; i++) ck_assert(buf[i] == -1.0f);
  ct_op_free(op);
  ct_scope_free(s);
  ck_assert_int_eq(released, 1);
}
END_TEST

/* reshape of an external variable into itself keeps the buffer and changes only the dims. */
START_TEST(reshape_external_in_place_keeps_the_buffer) {
  released = 0;
  float buf[6] = {1, 2, 3, 4, 5, 6};
  const int64_t shape[2] = {3, -1};
  ct_scope *s = ct_scope_new();
  ct_tensor *x = put_external(s, "x", buf, CT_DIMS(2, 3));
  ct_op *op = reshape_op("x", "x", shape, 2);
  ck_assert_msg(ct_op_run(op, s, ct_cpu()) == CT_OK, "%s", ct_last_error());
  ck_assert_int_eq(released, 0);
  ck_assert(ct_tensor_is_external(x));
  ck_assert_ptr_eq(ct_tensor_data(x, CT_FLOAT32), buf);
  ck_assert(ct_ddim_equal(ct_tensor_dims(x), CT_DIMS(3, 2)));
  for (int i = 0; i < 6; i++) ck_assert(buf[i] == (float)(i + 1));
  ct_op_free(op);
  ct_scope_free(s);
  ck_assert_int_eq(released, 1);
}
END_TEST

/* ---- A failing op leaves its outputs as they were -------------------------------------------- */

/* relu of [4] into a 2-float external buffer fails and leaves the output's dims at [2], so the
 * buffer's own data can still be read through it. */
START_TEST(failing_op_leaves_external_output_dims) {
  released = 0;
  float buf[2] = {7, 8};
  ct_scope *s = ct_scope_new();
  put_iota(s, "x", CT_DIMS(4));
  ct_tensor *out = put_external(s, "out", buf, CT_DIMS(2));
  ct_op *op = ct_op_new("relu");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "out"), CT_OK);
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_EXTERNAL_BUFFER);
  HAS(ct_last_error(), "relu");
  ck_assert(ct_ddim_equal(ct_tensor_dims(out), CT_DIMS(2)));
  ck_assert_int_eq(ct_tensor_numel(out), 2);
  const float *d = ct_tensor_data(out, CT_FLOAT32);
  ck_assert_ptr_eq(d, buf);
  ck_assert(d[0] == 7.0f && d[1] == 8.0f);
  /* The same through an executor. */
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(ct_executor_run(e), CT_ERR_EXTERNAL_BUFFER);
  ck_assert(ct_ddim_equal(ct_tensor_dims(out), CT_DIMS(2)));
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
  ck_assert_int_eq(released, 1);
}
END_TEST

/* An integer division by zero leaves a normal output's dims, data and memory as they were. */
START_TEST(failing_op_leaves_normal_output_dims_and_data) {
  ct_scope *s = ct_scope_new();
  const int32_t xv[4] = {1, 2, 3, 4}, yv[4] = {1, 0, 1, 1}, ov[2] = {7, 8};
  ct_tensor *x = ct_var_tensor(ct_scope_var(s, "x"));
  ct_tensor *y = ct_var_tensor(ct_scope_var(s, "y"));
  ct_tensor *out = ct_var_tensor(ct_scope_var(s, "out"));
  ck_assert_int_eq(ct_tensor_set_value(x, xv, CT_DIMS(4), CT_INT32, ct_cpu()), CT_OK);
  ck_assert_int_eq(ct_tensor_set_value(y, yv, CT_DIMS(4), CT_INT32, ct_cpu()), CT_OK);
  ck_assert_int_eq(ct_tensor_set_value(out, ov, CT_DIMS(2), CT_INT32, ct_cpu()), CT_OK);
  const void *before = ct_tensor_data(out, CT_INT32);
  ct_op *op = ct_op_new("elementwise_div");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Y", "y"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "out"), CT_OK);
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "division by zero");
  ck_assert(ct_ddim_equal(ct_tensor_dims(out), CT_DIMS(2)));
  ck_assert_int_eq(ct_tensor_numel(out), 2);
  const int32_t *d = ct_tensor_data(out, CT_INT32);
  ck_assert_ptr_eq(d, before);
  ck_assert(d[0] == 7 && d[1] == 8);
  /* An output the failing op found empty stays without dims. */
  ck_assert_int_eq(ct_op_set_output(op, "Out", "fresh"), CT_OK);
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_INVALID_ARGUMENT);
  const ct_tensor *fresh = ct_var_get_tensor(ct_scope_find_var(s, "fresh"));
  ck_assert(fresh == NULL || ct_tensor_dims(fresh).rank == -1);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- Scopes: reused variables start empty, teardown never recurses --------------------------- */

/* An executor bound to a variable keeps writing into it after the variable is erased; the next
 * variable the scope makes reuses that variable and must start empty like a new one. */
START_TEST(variable_reused_after_erase_starts_empty) {
  ct_scope *s = ct_scope_new();
  put_iota(s, "x", CT_DIMS(3));
  ct_op *op = ct_op_new("relu");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "y"), CT_OK);
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  ck_assert_ptr_nonnull(e);
  const char *names[] = {"y"};
  ck_assert_uint_eq(ct_scope_erase_vars(s, names, 1), 1);
  ck_assert_int_eq(ct_executor_run(e), CT_OK); /* writes into the erased variable */
  ct_var *z = ct_scope_var(s, "z");
  ck_assert_ptr_nonnull(z);
  ck_assert_ptr_null(ct_var_type(z));
  ck_assert_ptr_null(ct_var_get_tensor(z));
  ck_assert_str_eq(ct_var_name(z), "z");
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

/* Freeing a chain of 400,000 nested kid scopes (each holding a variable) never recurses, so it
 * cannot overflow the stack; dropping the kids of a scope walks the same way. */
START_TEST(freeing_a_deep_chain_of_kid_scopes_does_not_recurse) {
  enum { DEPTH = 400000 };
  ct_scope *root = ct_scope_new();
  ct_scope *s = root;
  for (int i = 0; i < DEPTH; i++) {
    s = ct_scope_new_kid(s);
    ck_assert_ptr_nonnull(s);
    if (i % 1000 == 0) ck_assert_ptr_nonnull(ct_scope_var(s, "v"));
  }
  ck_assert_uint_eq(ct_scope_kid_count(root), 1);
  ct_scope_free(root);
  root = ct_scope_new();
  s = root;
  for (int i = 0; i < DEPTH; i++) s = ct_scope_new_kid(s);
  ct_scope_drop_kids(root);
  ck_assert_uint_eq(ct_scope_kid_count(root), 0);
  ct_scope_free(root);
}
END_TEST

/* ---- Interrupted saves: the next save removes their temporary files -------------------------- */

/* This machine's tag in temporary file names, as core/interop/params_write.c writes it. */
static void host_tag(char *tag, size_t cap) {
  char host[256];
  if (gethostname(host, sizeof host) != 0 || host[0] == '\0') {
    snprintf(host, sizeof host, "localhost");
  }
  host[sizeof host - 1] = '\0';
  size_t i = 0;
  for (; host[i] != '\0' && i + 1 < cap && i < 64; i++) {
    char c = host[i];
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.';
    tag[i] = plain ? c : '_';
  }
  tag[i] = '\0';
}

static void touch(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, "x", 1), 1);
  close(fd);
}

static bool exists(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

/* Only a temporary file of the same target, written on this machine by a process that is gone
 * and locked by no one, is removed; a save's own process, a live process, another machine,
 * another target and a locked file keep theirs. */
START_TEST(next_save_removes_temporary_files_of_interrupted_saves) {
  /* Under the temporary directory, so a failing run leaves nothing in the working directory. */
  const char *tmp = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
  char dir[256];
  snprintf(dir, sizeof dir, "%s/corten-contract-XXXXXX", tmp);
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char target[320], tag[80], paths[7][512];
  snprintf(target, sizeof target, "%s/w.params", dir);
  host_tag(tag, sizeof tag);
  pid_t dead = fork();
  ck_assert_int_ge(dead, 0);
  if (dead == 0) _exit(0);
  ck_assert_int_eq(waitpid(dead, NULL, 0), dead);
  long me = (long)getpid(), live = (long)getppid(), gone = (long)dead;
  snprintf(paths[0], sizeof paths[0], "%s.tmp-%s-%ld-7", target, tag, gone);  /* stale */
  snprintf(paths[1], sizeof paths[1], "%s.tmp-%s-%ld-99", target, tag, me);   /* ours */
  snprintf(paths[2], sizeof paths[2], "%s.tmp-%s-%ld-3", target, tag, live);  /* live */
  snprintf(paths[3], sizeof paths[3], "%s.tmp-elsewhere_x-%ld-1", target, gone);
  snprintf(paths[4], sizeof paths[4], "%s/v.params.tmp-%s-%ld-1", dir, tag, gone);
  snprintf(paths[5], sizeof paths[5], "%s.tmp-notes", target);
  snprintf(paths[6], sizeof paths[6], "%s.tmp-%s-%ld-8", target, tag, gone); /* locked */
  for (int i = 0; i < 7; i++) touch(paths[i]);
  int held = open(paths[6], O_RDONLY);
  ck_assert_int_ge(held, 0);
  ck_assert_int_eq(flock(held, LOCK_EX | LOCK_NB), 0);

  ct_scope *s = ct_scope_new();
  put_iota(s, "w", CT_DIMS(3));
  const char *names[] = {"w"};
  ck_assert_msg(ct_params_save(target, s, names, 1) == CT_OK, "%s", ct_last_error());
  ck_assert(exists(target));
  ck_assert_msg(!exists(paths[0]), "%s was left", paths[0]);
  for (int i = 1; i < 7; i++) ck_assert_msg(exists(paths[i]), "%s was removed", paths[i]);
  /* Once its lock goes, the next save removes the last stale file too. */
  close(held);
  ck_assert_msg(ct_params_save(target, s, names, 1) == CT_OK, "%s", ct_last_error());
  ck_assert(!exists(paths[6]));
  ct_scope_free(s);
  for (int i = 0; i < 7; i++) unlink(paths[i]);
  unlink(target);
  ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

static Suite *contract_suite(void) {
  Suite *s = suite_create("contract");
  CT_ADD_TEST(s, append_refuses_op_holding_the_program);
  CT_ADD_TEST(s, append_refuses_op_holding_the_program_nested);
  CT_ADD_TEST(s, set_attr_program_refuses_program_containing_the_op_nested);
  CT_ADD_TEST(s, ddim_numel_does_not_depend_on_extent_order);
  CT_ADD_TEST(s, resize_and_wrap_refuse_overflowing_extents_in_any_order);
  CT_ADD_TEST(s, views_of_empty_dims_with_large_extents_do_not_overflow);
  CT_ADD_TEST(s, dlpack_import_refuses_overflowing_extents_in_any_order);
  CT_ADD_TEST(s, params_load_refuses_overflowing_extents_in_any_order);
  CT_ADD_TEST(s, reshape_into_external_output_keeps_the_buffer);
  CT_ADD_TEST(s, reshape_into_small_external_output_is_refused);
  CT_ADD_TEST(s, reshape_external_in_place_keeps_the_buffer);
  CT_ADD_TEST(s, failing_op_leaves_external_output_dims);
  CT_ADD_TEST(s, failing_op_leaves_normal_output_dims_and_data);
  CT_ADD_TEST(s, variable_reused_after_erase_starts_empty);
  CT_ADD_TEST(s, freeing_a_deep_chain_of_kid_scopes_does_not_recurse);
  CT_ADD_TEST(s, next_save_removes_temporary_files_of_interrupted_saves);
  return s;
}

CT_TEST_MAIN(contract_suite)
