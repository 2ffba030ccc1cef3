/* SPDX-License-Identifier: Apache-2.0 */
/* Fault injection: every scenario runs once per allocation it makes, with the k-th allocation
 * failing, for k = 1, 2, ... until a run completes without reaching k. Each failing run must
 * report CT_ERR_OUT_OF_MEMORY, give every block back (the test allocator's live count returns
 * to 0; the ASan build's LeakSanitizer checks the rest), and leave its objects usable: the same
 * steps re-run on the same objects with the default allocator must succeed with exact values.
 *
 * Only tensor memory goes through the replaceable allocator (ct_set_allocator), the public seam
 * used here. Corten's own small objects are failed through the internal fault-injection hook by
 * tests/test_alloc_faults*.c.
 *
 * I/O faults: a save runs under RLIMIT_FSIZE set to every byte count below the file's size
 * (SIGXFSZ ignored, so write() fails with EFBIG); each must fail with CT_ERR_IO, leave the old
 * file byte for byte and leave no temporary file behind. Each Check test runs in its own
 * process, so the limit does not escape. */
#define _GNU_SOURCE /* mkdtemp, setrlimit */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <corten/corten.h>

#include "file_util.h"

/* ---- The failing allocator --------------------------------------------------------------- */

typedef struct fault_alloc {
  long calls;    /* alloc calls, the failing one included */
  long fail_at;  /* which call fails (1-based); 0: none */
  long failures; /* calls answered with NULL */
  long live;     /* blocks handed out and not yet returned */
  size_t live_bytes;
} fault_alloc;

static fault_alloc fa;

static void *fault_alloc_fn(void *ctx, size_t size, size_t align) {
  fault_alloc *a = ctx;
  a->calls++;
  if (a->calls == a->fail_at) {
    a->failures++;
    return NULL;
  }
  size_t rounded = (size + align - 1) / align * align;
  void *p = aligned_alloc(align, rounded == 0 ? align : rounded);
  if (p == NULL) return NULL;
  a->live++;
  a->live_bytes += size;
  return p;
}

static void fault_free_fn(void *ctx, void *p, size_t size) {
  fault_alloc *a = ctx;
  a->live--;
  a->live_bytes -= size;
  free(p);
}

static void fail_at(long k) {
  memset(&fa, 0, sizeof fa);
  fa.fail_at = k;
  ct_allocator al = {fault_alloc_fn, fault_free_fn, &fa};
  ck_assert_int_eq(ct_set_allocator(ct_cpu(), &al), CT_OK);
}

static void default_alloc(void) { ck_assert_int_eq(ct_set_allocator(ct_cpu(), NULL), CT_OK); }

/* A failing step: the status and the thread's last status are both CT_ERR_OUT_OF_MEMORY. */
#define STEP(expr)                                                                  \
  do {                                                                              \
    ct_status s_ = (expr);                                                          \
    if (s_ != CT_OK) {                                                              \
      ck_assert_msg(s_ == CT_ERR_OUT_OF_MEMORY, "%s: %s", #expr, ct_last_error());  \
      ck_assert_int_eq(ct_last_status(), CT_ERR_OUT_OF_MEMORY);                     \
      return s_;                                                                    \
    }                                                                               \
  } while (0)
#define STEP_PTR(expr) STEP((expr) != NULL ? CT_OK : ct_last_status())

static void fill(float *p, int64_t n, float base) {
  for (int64_t i = 0; i < n; i++) p[i] = base + (float)i;
}

/* ---- Scenario 1: lazy allocation -------------------------------------------------------- */

typedef struct lazy_objs {
  ct_tensor *a, *b, *c, *d;
  ct_scope *s;
  ct_var *v;
} lazy_objs;

static ct_status lazy_steps(lazy_objs *o) {
  float *p;
  STEP(ct_tensor_resize(o->a, CT_DIMS(4, 8)));
  STEP_PTR(p = ct_tensor_mutable_data(o->a, CT_FLOAT32, ct_cpu()));
  fill(p, 32, 0);
  STEP(ct_tensor_resize(o->a, CT_DIMS(16, 8))); /* grows: the next mutable_data reallocates */
  STEP_PTR(p = ct_tensor_mutable_data(o->a, CT_FLOAT32, ct_cpu()));
  fill(p, 128, 0);
  STEP(ct_tensor_share(o->b, o->a));
  STEP(ct_tensor_slice(o->b, o->a, 2, 6));
  STEP(ct_tensor_copy(o->c, o->b, ct_cpu())); /* rows 2..5 of a, own memory */
  float row[8];
  fill(row, 8, 1000);
  STEP(ct_tensor_set_value(o->d, row, CT_DIMS(1, 8), CT_FLOAT32, ct_cpu()));
  STEP(ct_tensor_copy(o->d, o->c, ct_cpu())); /* grows d */
  ct_tensor *vt = ct_var_tensor(o->v);
  ck_assert_ptr_nonnull(vt);
  STEP(ct_tensor_resize(vt, CT_DIMS(3)));
  STEP_PTR(p = ct_tensor_mutable_data(vt, CT_FLOAT64, ct_cpu()));
  ((double *)(void *)p)[2] = 7.5;
  return CT_OK;
}

static void lazy_check(const lazy_objs *o) {
  const float *c = ct_tensor_data(o->c, CT_FLOAT32);
  const float *d = ct_tensor_data(o->d, CT_FLOAT32);
  ck_assert_ptr_nonnull(c);
  ck_assert_ptr_nonnull(d);
  ck_assert(ct_ddim_equal(ct_tensor_dims(o->c), CT_DIMS(4, 8)));
  ck_assert(ct_ddim_equal(ct_tensor_dims(o->d), CT_DIMS(4, 8)));
  for (int i = 0; i < 32; i++) {
    ck_assert_float_eq(c[i], (float)(16 + i));
    ck_assert_float_eq(d[i], (float)(16 + i));
  }
  ck_assert(ct_tensor_shares_memory(o->a, o->b));
  ck_assert(!ct_tensor_shares_memory(o->c, o->a));
  const double *v = ct_tensor_data(ct_var_get_tensor(o->v), CT_FLOAT64);
  ck_assert_ptr_nonnull(v);
  ck_assert(v[2] == 7.5);
}

/* Runs a scenario for k = 1, 2, ... and returns how many fault points it swept. */
typedef struct scenario {
  void *(*setup)(void);                 /* makes the objects (default allocator) */
  ct_status (*steps)(void *objs);       /* the work, failing cleanly */
  void (*check)(void *objs);            /* exact values after a complete run */
  void (*teardown)(void *objs);         /* frees everything */
} scenario;

static long sweep(const scenario *sc) {
  long k;
  for (k = 1;; k++) {
    void *objs = sc->setup();
    fail_at(k);
    ct_clear_error();
    ct_status s = sc->steps(objs);
    long calls = fa.calls, failures = fa.failures;
    if (calls < k) {
      /* The run completed without reaching the k-th allocation: the sweep is over. */
      ck_assert_msg(s == CT_OK, "k=%ld: %s", k, ct_last_error());
      default_alloc(); /* blocks go back to the allocator that made them */
      sc->check(objs);
      sc->teardown(objs);
      ck_assert_int_eq(fa.live, 0);
      ck_assert_uint_eq(fa.live_bytes, 0);
      break;
    }
    ck_assert_int_eq(failures, 1);
    ck_assert_msg(s == CT_ERR_OUT_OF_MEMORY, "k=%ld: status %d (%s)", k, s, ct_last_error());
    /* The objects stay usable: the same steps with the default allocator succeed. */
    default_alloc();
    ck_assert_msg(sc->steps(objs) == CT_OK, "k=%ld re-run: %s", k, ct_last_error());
    sc->check(objs);
    sc->teardown(objs);
    ck_assert_msg(fa.live == 0, "k=%ld: %ld blocks of the failing allocator leaked", k, fa.live);
    ck_assert_uint_eq(fa.live_bytes, 0);
  }
  return k - 1;
}

static void *lazy_setup(void) {
  lazy_objs *o = calloc(1, sizeof *o);
  ck_assert_ptr_nonnull(o);
  o->a = ct_tensor_new();
  o->b = ct_tensor_new();
  o->c = ct_tensor_new();
  o->d = ct_tensor_new();
  o->s = ct_scope_new();
  ck_assert_ptr_nonnull(o->s);
  o->v = ct_scope_var(o->s, "w");
  ck_assert_ptr_nonnull(o->v);
  return o;
}

static ct_status lazy_steps_v(void *o) { return lazy_steps(o); }
static void lazy_check_v(void *o) { lazy_check(o); }

static void lazy_teardown(void *p) {
  lazy_objs *o = p;
  ct_tensor_free(o->a);
  ct_tensor_free(o->b);
  ct_tensor_free(o->c);
  ct_tensor_free(o->d);
  ct_scope_free(o->s);
  free(o);
}

START_TEST(lazy_allocation_survives_every_allocation_failure) {
  scenario sc = {lazy_setup, lazy_steps_v, lazy_check_v, lazy_teardown};
  long n = sweep(&sc);
  printf("faults: lazy allocation, %ld fault points\n", n);
  ck_assert_int_ge(n, 6); /* a twice, c, d twice, w: at least six allocations to fail */
}
END_TEST

/* ---- Scenario 2: an op program ---------------------------------------------------------- */

typedef struct prog_objs {
  ct_scope *s;
  ct_program *p;
  ct_executor *e;
} prog_objs;

static ct_op *op2(const char *type, const char *x, const char *y, const char *out) {
  ct_op *op = ct_op_new(type);
  ck_assert_ptr_nonnull(op);
  ck_assert_int_eq(ct_op_set_input(op, "X", x), CT_OK);
  if (y != NULL) ck_assert_int_eq(ct_op_set_input(op, "Y", y), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", out), CT_OK);
  return op;
}

static void *prog_setup_with(bool free_intermediates) {
  prog_objs *o = calloc(1, sizeof *o);
  ck_assert_ptr_nonnull(o);
  o->s = ct_scope_new();
  o->p = ct_program_new();
  ck_assert_int_eq(ct_program_append(o->p, op2("matmul", "x", "W", "xw")), CT_OK);
  ck_assert_int_eq(ct_program_append(o->p, op2("elementwise_add", "xw", "b", "pre")), CT_OK);
  ck_assert_int_eq(ct_program_append(o->p, op2("relu", "pre", NULL, "h")), CT_OK);
  ck_assert_int_eq(ct_program_append(o->p, op2("matmul", "h", "W2", "y")), CT_OK);
  /* The inputs exist (empty) before the executor, so it binds them; their memory is set by the
   * steps, under the failing allocator. */
  const char *in[] = {"x", "W", "b", "W2"};
  for (int i = 0; i < 4; i++) ck_assert_ptr_nonnull(ct_var_tensor(ct_scope_var(o->s, in[i])));
  ct_executor_options opt = {.free_intermediates = free_intermediates};
  o->e = ct_executor_new_with(o->p, o->s, ct_cpu(), &opt);
  ck_assert_msg(o->e != NULL, "%s", ct_last_error());
  return o;
}

static void *prog_setup(void) { return prog_setup_with(false); }
static void *prog_setup_free(void) { return prog_setup_with(true); }

static ct_status set_input(ct_scope *s, const char *name, ct_ddim dims, float scale) {
  float buf[64];
  int64_t n = ct_ddim_numel(dims);
  for (int64_t i = 0; i < n; i++) buf[i] = scale * (float)(i % 7 - 3);
  return ct_tensor_set_value(ct_var_tensor(ct_scope_find_var(s, name)), buf, dims, CT_FLOAT32,
                             ct_cpu());
}

static ct_status prog_steps(void *p) {
  prog_objs *o = p;
  STEP(set_input(o->s, "x", CT_DIMS(2, 4), 0.5f));
  STEP(set_input(o->s, "W", CT_DIMS(4, 8), 0.25f));
  STEP(set_input(o->s, "b", CT_DIMS(8), 1.0f));
  STEP(set_input(o->s, "W2", CT_DIMS(8, 3), 1.0f));
  STEP(ct_executor_run(o->e));
  STEP(ct_executor_run(o->e)); /* a second run allocates again only when freeing */
  return CT_OK;
}

static void prog_check(void *p) {
  prog_objs *o = p;
  float x[8], w[32], b[8], w2[24], h[16];
  for (int i = 0; i < 8; i++) x[i] = 0.5f * (float)(i % 7 - 3);
  for (int i = 0; i < 32; i++) w[i] = 0.25f * (float)(i % 7 - 3);
  for (int i = 0; i < 8; i++) b[i] = (float)(i % 7 - 3);
  for (int i = 0; i < 24; i++) w2[i] = (float)(i % 7 - 3);
  for (int i = 0; i < 2; i++) {
    for (int j = 0; j < 8; j++) {
      float acc = 0;
      for (int k = 0; k < 4; k++) acc += x[i * 4 + k] * w[k * 8 + j];
      acc += b[j];
      h[i * 8 + j] = acc > 0 ? acc : 0;
    }
  }
  const float *y = ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(o->s, "y")), CT_FLOAT32);
  ck_assert_ptr_nonnull(y);
  for (int i = 0; i < 2; i++) {
    for (int j = 0; j < 3; j++) {
      float acc = 0;
      for (int k = 0; k < 8; k++) acc += h[i * 8 + k] * w2[k * 3 + j];
      ck_assert_float_eq_tol(y[i * 3 + j], acc, 1e-4);
    }
  }
}

static void prog_teardown(void *p) {
  prog_objs *o = p;
  ct_executor_free(o->e);
  ct_program_free(o->p);
  ct_scope_free(o->s);
  free(o);
}

START_TEST(executor_survives_every_allocation_failure) {
  scenario sc = {prog_setup, prog_steps, prog_check, prog_teardown};
  long n = sweep(&sc);
  printf("faults: executor, %ld fault points\n", n);
  ck_assert_int_ge(n, 8); /* 4 inputs + 4 outputs */
}
END_TEST

START_TEST(executor_freeing_intermediates_survives_every_allocation_failure) {
  scenario sc = {prog_setup_free, prog_steps, prog_check, prog_teardown};
  long n = sweep(&sc);
  printf("faults: executor freeing intermediates, %ld fault points\n", n);
  ck_assert_int_ge(n, 11); /* 4 inputs + 4 outputs, xw, pre, h again on run 2 */
}
END_TEST

/* ---- Scenario 2b: the recurrent op (an Elman RNN: step scopes, a step program) ---------- */

typedef struct rnn_objs {
  ct_scope *s;
  ct_op *op;
} rnn_objs;

static ct_op *rnn_step(const char *type, const char *x, const char *y, const char *out) {
  return op2(type, x, y, out);
}

static ct_op *elman(void) {
  ct_program *p = ct_program_new();
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(ct_program_append(p, rnn_step("matmul", "x", "W", "xw")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, rnn_step("matmul", "h_prev", "U", "hu")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, rnn_step("elementwise_add", "xw", "hu", "s")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, rnn_step("elementwise_add", "s", "b", "pre")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, rnn_step("relu", "pre", NULL, "h")), CT_OK);
  ct_op *op = ct_op_new("recurrent");
  ck_assert_ptr_nonnull(op);
  ck_assert_int_eq(ct_op_set_attr_program(op, "step_program", p), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "states", "h"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "ex_states", "h_prev"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "step_inputs", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "step_outputs", "h"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "X", "x_seq"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "h_seq"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "StepScopes", "steps"), CT_OK);
  const char *params[] = {"W", "U", "b"};
  ck_assert_int_eq(ct_op_set_inputs(op, "Params", params, 3), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "InitStates", "h0"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "FinalStates", "h_last"), CT_OK);
  return op;
}

static void rnn_inputs(ct_scope *s) {
  ck_assert_int_eq(set_input(s, "W", CT_DIMS(3, 4), 0.25f), CT_OK);
  ck_assert_int_eq(set_input(s, "U", CT_DIMS(4, 4), 0.125f), CT_OK);
  ck_assert_int_eq(set_input(s, "b", CT_DIMS(4), 0.5f), CT_OK);
  ck_assert_int_eq(set_input(s, "h0", CT_DIMS(2, 4), 0.5f), CT_OK);
  ck_assert_int_eq(set_input(s, "x_seq", CT_DIMS(5, 2, 3), 0.5f), CT_OK);
}

static void *rnn_setup(void) {
  rnn_objs *o = calloc(1, sizeof *o);
  ck_assert_ptr_nonnull(o);
  o->s = ct_scope_new();
  const char *in[] = {"W", "U", "b", "h0", "x_seq"};
  for (int i = 0; i < 5; i++) ck_assert_ptr_nonnull(ct_var_tensor(ct_scope_var(o->s, in[i])));
  rnn_inputs(o->s);
  o->op = elman();
  return o;
}

static ct_status rnn_steps(void *p) {
  rnn_objs *o = p;
  STEP(ct_op_run(o->op, o->s, ct_cpu()));
  STEP(ct_op_run(o->op, o->s, ct_cpu())); /* again, over the step scopes of the first run */
  return CT_OK;
}

static void rnn_check(void *p) {
  rnn_objs *o = p;
  /* The reference: the same op on a fresh scope, never failed. */
  ct_scope *ref = ct_scope_new();
  const char *in[] = {"W", "U", "b", "h0", "x_seq"};
  for (int i = 0; i < 5; i++) ck_assert_ptr_nonnull(ct_var_tensor(ct_scope_var(ref, in[i])));
  rnn_inputs(ref);
  ck_assert_msg(ct_op_run(o->op, ref, ct_cpu()) == CT_OK, "%s", ct_last_error());
  const char *outs[] = {"h_seq", "h_last"};
  for (int k = 0; k < 2; k++) {
    const ct_tensor *a = ct_var_get_tensor(ct_scope_find_var(o->s, outs[k]));
    const ct_tensor *b = ct_var_get_tensor(ct_scope_find_var(ref, outs[k]));
    ck_assert(ct_ddim_equal(ct_tensor_dims(a), ct_tensor_dims(b)));
    const float *x = ct_tensor_data(a, CT_FLOAT32), *y = ct_tensor_data(b, CT_FLOAT32);
    ck_assert_ptr_nonnull(x);
    ck_assert_ptr_nonnull(y);
    for (int64_t i = 0; i < ct_tensor_numel(a); i++) ck_assert_float_eq(x[i], y[i]);
  }
  ct_scope_free(ref);
}

static void rnn_teardown(void *p) {
  rnn_objs *o = p;
  ct_op_free(o->op);
  ct_scope_free(o->s);
  free(o);
}

START_TEST(recurrent_op_survives_every_allocation_failure) {
  if (!ct_op_registered("recurrent")) return;
  scenario sc = {rnn_setup, rnn_steps, rnn_check, rnn_teardown};
  long n = sweep(&sc);
  printf("faults: recurrent op, %ld fault points\n", n);
  ck_assert_int_ge(n, 10); /* 5 steps x (xw, hu, s, pre, h) at least once */
}
END_TEST

/* ---- Scenario 3: params save + load round trip ------------------------------------------ */

typedef struct params_objs {
  ct_scope *src, *dst, *dst2;
  char path[256];
} params_objs;

static void *params_setup(void) {
  params_objs *o = calloc(1, sizeof *o);
  ck_assert_ptr_nonnull(o);
  o->src = ct_scope_new();
  o->dst = ct_scope_new();
  o->dst2 = ct_scope_new();
  snprintf(o->path, sizeof o->path, "%s", in_dir("round.params"));
  /* dst already holds one of the names, with other data: a failed load must keep it. */
  float old[2] = {-1, -2};
  ck_assert_int_eq(ct_tensor_set_value(ct_var_tensor(ct_scope_var(o->dst, "fc.b")), old,
                                       CT_DIMS(2), CT_FLOAT32, ct_cpu()),
                   CT_OK);
  return o;
}

static ct_status params_steps(void *p) {
  params_objs *o = p;
  float w[12];
  int64_t ids[5] = {5, 4, 3, 2, 1};
  fill(w, 12, 0.5f);
  STEP(ct_tensor_set_value(ct_var_tensor(ct_scope_var(o->src, "fc.w")), w, CT_DIMS(3, 4),
                           CT_FLOAT32, ct_cpu()));
  STEP(ct_tensor_set_value(ct_var_tensor(ct_scope_var(o->src, "fc.b")), w, CT_DIMS(4),
                           CT_FLOAT32, ct_cpu()));
  STEP(ct_tensor_set_value(ct_var_tensor(ct_scope_var(o->src, "ids")), ids, CT_DIMS(5),
                           CT_INT64, ct_cpu()));
  STEP(ct_params_save(o->path, o->src, NULL, 0));
  ct_status s = ct_params_load(o->path, o->dst);
  if (s != CT_OK) {
    /* All or nothing: dst is exactly as it was. */
    ck_assert_int_eq(s, CT_ERR_OUT_OF_MEMORY);
    const float *b = ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(o->dst, "fc.b")),
                                    CT_FLOAT32);
    ck_assert_ptr_nonnull(b);
    ck_assert(ct_ddim_equal(ct_tensor_dims(ct_var_get_tensor(ct_scope_find_var(o->dst, "fc.b"))),
                            CT_DIMS(2)));
    ck_assert_float_eq(b[1], -2.0f);
    ck_assert_uint_eq(ct_scope_var_count(o->dst), 1);
    return s;
  }
  size_t len;
  unsigned char *bytes = read_all(o->path, &len);
  s = ct_params_load_memory(bytes, len, o->dst2);
  free(bytes);
  if (s != CT_OK) ck_assert_uint_eq(ct_scope_var_count(o->dst2), 0);
  STEP(s);
  return CT_OK;
}

static void params_check(void *p) {
  params_objs *o = p;
  ct_scope *scopes[2] = {o->dst, o->dst2};
  for (int i = 0; i < 2; i++) {
    ck_assert_uint_eq(ct_scope_var_count(scopes[i]), 3);
    const float *w = ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(scopes[i], "fc.w")),
                                    CT_FLOAT32);
    const int64_t *ids = ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(scopes[i], "ids")),
                                        CT_INT64);
    ck_assert_ptr_nonnull(w);
    ck_assert_ptr_nonnull(ids);
    ck_assert_float_eq(w[11], 11.5f);
    ck_assert_int_eq(ids[4], 1);
  }
}

static void params_teardown(void *p) {
  params_objs *o = p;
  ct_scope_free(o->src);
  ct_scope_free(o->dst);
  ct_scope_free(o->dst2);
  unlink(o->path);
  free(o);
}

START_TEST(params_round_trip_survives_every_allocation_failure) {
  make_work_dir("faults-test");
  scenario sc = {params_setup, params_steps, params_check, params_teardown};
  long n = sweep(&sc);
  printf("faults: params round trip, %ld fault points\n", n);
  ck_assert_int_ge(n, 9); /* 3 sources, 3 loaded twice */
  ck_assert_int_eq(count_entries(work_dir), 0);
  remove_work_dir();
}
END_TEST

/* ---- I/O faults: the k-th byte cannot be written ---------------------------------------- */

static void set_fsize_limit(rlim_t n) {
  struct rlimit r;
  ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &r), 0);
  r.rlim_cur = n;
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &r), 0);
}

START_TEST(save_failing_at_every_byte_keeps_the_old_file) {
  make_work_dir("faults-test");
  signal(SIGXFSZ, SIG_IGN); /* write() past the limit then fails with EFBIG */
  char path[256];
  snprintf(path, sizeof path, "%s", in_dir("w.params"));
  ct_scope *s = ct_scope_new();
  float old[3] = {1, 2, 3};
  ck_assert_int_eq(ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, "a")), old, CT_DIMS(3),
                                       CT_FLOAT32, ct_cpu()),
                   CT_OK);
  ck_assert_int_eq(ct_params_save(path, s, NULL, 0), CT_OK);
  size_t old_len, new_len;
  unsigned char *old_bytes = read_all(path, &old_len);
  /* The new contents: two tensors, one larger than the writer's buffer. */
  static float big[5000];
  fill(big, 5000, 3);
  ck_assert_int_eq(ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, "a")), big, CT_DIMS(5000),
                                       CT_FLOAT32, ct_cpu()),
                   CT_OK);
  ck_assert_int_eq(ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, "b")), big, CT_DIMS(10),
                                       CT_FLOAT32, ct_cpu()),
                   CT_OK);
  char probe[256];
  snprintf(probe, sizeof probe, "%s", in_dir("probe.params"));
  ck_assert_int_eq(ct_params_save(probe, s, NULL, 0), CT_OK);
  unsigned char *new_bytes = read_all(probe, &new_len);
  unlink(probe);
  long points = 0;
  /* Every limit from 0 to the size less one: every byte boundary inside the header and names,
   * then every 61st inside the data (all buffer boundaries included by the stride). */
  for (size_t lim = 0; lim < new_len; lim += lim < 256 ? 1 : 61) {
    set_fsize_limit((rlim_t)lim);
    ct_status st = ct_params_save(path, s, NULL, 0);
    set_fsize_limit(RLIM_INFINITY);
    ck_assert_msg(st == CT_ERR_IO, "limit %zu: status %d", lim, st);
    ck_assert_ptr_nonnull(strstr(ct_last_error(), "unchanged"));
    size_t len;
    unsigned char *now = read_all(path, &len);
    ck_assert_uint_eq(len, old_len);
    ck_assert_int_eq(memcmp(now, old_bytes, len), 0);
    free(now);
    ck_assert_int_eq(count_entries(work_dir), 1); /* no temporary file left */
    points++;
  }
  printf("faults: save, %ld write-failure points over %zu bytes\n", points, new_len);
  ck_assert_int_ge(points, 300);
  /* Without the limit the save goes through. */
  ck_assert_int_eq(ct_params_save(path, s, NULL, 0), CT_OK);
  size_t len;
  unsigned char *now = read_all(path, &len);
  ck_assert_uint_eq(len, new_len);
  ck_assert_int_eq(memcmp(now, new_bytes, len), 0);
  free(now);
  free(old_bytes);
  free(new_bytes);
  ct_scope_free(s);
  remove_work_dir();
}
END_TEST

static Suite *faults_suite(void) {
  Suite *s = suite_create("faults");
  CT_ADD_TEST(s, lazy_allocation_survives_every_allocation_failure);
  CT_ADD_TEST(s, executor_survives_every_allocation_failure);
  CT_ADD_TEST(s, executor_freeing_intermediates_survives_every_allocation_failure);
  CT_ADD_TEST(s, recurrent_op_survives_every_allocation_failure);
  CT_ADD_TEST(s, params_round_trip_survives_every_allocation_failure);
  CT_ADD_TEST(s, save_failing_at_every_byte_keeps_the_old_file);
  return s;
}

CT_TEST_MAIN(faults_suite)
