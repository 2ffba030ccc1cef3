/* SPDX-License-Identifier: Apache-2.0 */
/* The executor's fuse_elementwise option: random trees of elementwise ops (every fusable kind,
 * broadcasting leaves, float32 and float64) give the unfused program's bits and never allocate
 * their intermediates; kept, pre-existing and twice-read variables are not fused; it composes
 * with free_intermediates and with a training program; other dtypes run op by op; a failing
 * group fails as its ops do; a chain read only for its dims by a gradient fuses. */
#include "harness.h"
#include "op_util.h"
#include "grad_util.h"

/* A small seeded generator (the runs must repeat). */
static uint32_t rng_state;
static uint32_t rnd(uint32_t n) {
  rng_state = rng_state * 1664525u + 1013904223u;
  return (rng_state >> 8) % n;
}

static const char *const unary_ops[] = {"relu", "sigmoid", "tanh", "exp", "log", "scale", "erf"};
static const char *const binary_ops[] = {"elementwise_add", "elementwise_sub",
                                         "elementwise_mul", "elementwise_div"};

/* Leaves l0 .. l3 of dims broadcasting to [3, 5]: [3, 5], [5], [3, 1], [1]. */
static void put_leaves(ct_scope *s, ct_dtype dt, uint32_t seed) {
  const ct_ddim dims[4] = {CT_DIMS(3, 5), CT_DIMS(5), CT_DIMS(3, 1), CT_DIMS(1)};
  for (int l = 0; l < 4; l++) {
    int64_t n = ct_ddim_numel(dims[l]);
    double v[15];
    double step = dt == CT_INT32 ? 1.0 : 0.25; /* -2 .. 2 in quarters, integers for int32 */
    for (int64_t i = 0; i < n; i++) {
      v[i] = step * ((double)((seed + 7 * (uint32_t)(l * 15 + i)) % 17) - 8.0);
    }
    void *data = xmalloc(n, 8);
    for (int64_t i = 0; i < n; i++) set_elem(data, dt, i, v[i]);
    char name[8];
    snprintf(name, sizeof name, "l%d", l);
    put(s, name, dt, dims[l], data);
    free(data);
  }
}

static void append(ct_program *p, ct_op *op) { ck_assert_int_eq(ct_program_append(p, op), CT_OK); }

/* A random tree: each op consumes one or two pending intermediates (or a leaf), the pending
 * ones are summed at the end into "out". Every intermediate t<k> is read exactly once. Returns
 * how many intermediates it made. */
static int random_program(ct_program *p, uint32_t seed) {
  rng_state = seed;
  char pending[16][16], leaf[8];
  int n_pending = 0, n_t = 0, n_ops = 2 + (int)rnd(7);
  for (int k = 0; k < n_ops; k++) {
    char out[16];
    snprintf(out, sizeof out, "t%d", n_t++);
    snprintf(leaf, sizeof leaf, "l%u", rnd(4));
    const char *a = leaf, *b;
    char ta[16], tb[16];
    if (n_pending > 0 && rnd(4) != 0) {
      snprintf(ta, sizeof ta, "%s", pending[--n_pending]);
      a = ta;
    }
    if (rnd(2) == 0) {
      const char *type = unary_ops[rnd(7)];
      ct_op *op = op_x(type, a, out);
      if (strcmp(type, "scale") == 0) {
        ck_assert_int_eq(ct_op_set_attr_float(op, "scale", 0.1 * (double)rnd(30) - 1.3), CT_OK);
        ck_assert_int_eq(ct_op_set_attr_float(op, "bias", 0.37 * (double)rnd(9) - 1.0), CT_OK);
        ck_assert_int_eq(ct_op_set_attr_bool(op, "bias_after_scale", rnd(2) == 0), CT_OK);
      }
      append(p, op);
    } else {
      char lb[8];
      snprintf(lb, sizeof lb, "l%u", rnd(4));
      b = lb;
      if (n_pending > 0 && rnd(2) == 0) {
        snprintf(tb, sizeof tb, "%s", pending[--n_pending]);
        b = tb;
      }
      if (rnd(2) == 0) {
        const char *x = a;
        a = b;
        b = x;
      }
      append(p, op_xy(binary_ops[rnd(4)], a, b, out));
    }
    snprintf(pending[n_pending++], sizeof pending[0], "%s", out);
  }
  while (n_pending > 1) {
    char out[16];
    snprintf(out, sizeof out, "t%d", n_t++);
    append(p, op_xy("elementwise_add", pending[n_pending - 2], pending[n_pending - 1], out));
    n_pending -= 2;
    snprintf(pending[n_pending++], sizeof pending[0], "%s", out);
  }
  append(p, op_x("relu", pending[0], "out"));
  return n_t;
}

/* Runs p over a fresh scope holding the leaves (twice, so a second run sees its own state). */
static ct_scope *run_prog(const ct_program *p, ct_dtype dt, uint32_t seed,
                             const ct_executor_options *o) {
  ct_scope *s = ct_scope_new();
  put_leaves(s, dt, seed);
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), o);
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  for (int r = 0; r < 2; r++) {
    ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  }
  ct_executor_free(e);
  return s;
}

/* Same bits element by element, except that any two NaNs match: which NaN an operation on two
 * NaNs returns (x86 gives its first operand's) is not specified by IEEE 754, and the fused
 * engine may take a commutative node's operands in the other order. */
static void assert_same_bits(ct_scope *a, ct_scope *b, const char *name) {
  const ct_tensor *x = tensor_of(a, name), *y = tensor_of(b, name);
  ct_dtype dt = ct_tensor_dtype(x);
  ck_assert(ct_ddim_equal(ct_tensor_dims(x), ct_tensor_dims(y)));
  ck_assert_int_eq(dt, ct_tensor_dtype(y));
  const char *px = ct_tensor_data(x, dt), *py = ct_tensor_data(y, dt);
  size_t es = ct_dtype_size(dt);
  for (int64_t i = 0; i < ct_tensor_numel(x); i++) {
    double u = get_elem(px, dt, i), v = get_elem(py, dt, i);
    ck_assert_msg(memcmp(px + i * es, py + i * es, es) == 0 || (isnan(u) && isnan(v)),
                  "'%s' element %lld differs from the unfused program's: %g, %g", name,
                  (long long)i, u, v);
  }
}

static bool holds_memory(ct_scope *s, const char *name) {
  const ct_tensor *t = tensor_of(s, name);
  return t != NULL && ct_tensor_has_memory(t);
}

START_TEST(random_trees_match_unfused_bits) {
  static const ct_executor_options fused = {.fuse_elementwise = true}, plain = {0};
  for (uint32_t trial = 0; trial < 200; trial++) {
    ct_dtype dt = trial % 2 ? CT_FLOAT64 : CT_FLOAT32;
    ct_program *p = ct_program_new();
    int n_t = random_program(p, 1000 + trial);
    ct_scope *a = run_prog(p, dt, trial, &fused), *b = run_prog(p, dt, trial, &plain);
    assert_same_bits(a, b, "out");
    for (int k = 0; k < n_t; k++) {
      char name[16];
      snprintf(name, sizeof name, "t%d", k);
      ck_assert_msg(!holds_memory(a, name), "trial %u: %s was allocated", trial, name);
      ck_assert(holds_memory(b, name));
    }
    ct_scope_free(a);
    ct_scope_free(b);
    ct_program_free(p);
  }
}
END_TEST

/* t1 = exp(l0), t2 = sigmoid(t1), t3 = t2 * l1, out = t3 + t1: t1 is read twice and computed
 * on its own; t2 and t3 fuse into out. */
static ct_program *shared_program(void) {
  ct_program *p = ct_program_new();
  append(p, op_x("exp", "l0", "t1"));
  append(p, op_x("sigmoid", "t1", "t2"));
  append(p, op_xy("elementwise_mul", "t2", "l1", "t3"));
  append(p, op_xy("elementwise_add", "t3", "t1", "out"));
  return p;
}

START_TEST(twice_read_kept_and_existing_variables_are_not_fused) {
  static const char *const keep[] = {"t3"};
  ct_program *p = shared_program();
  ct_executor_options plain = {0}, fused = {.fuse_elementwise = true};
  ct_scope *b = run_prog(p, CT_FLOAT32, 3, &plain);
  ct_scope *a = run_prog(p, CT_FLOAT32, 3, &fused);
  assert_same_bits(a, b, "out");
  ck_assert(holds_memory(a, "t1"));
  ck_assert(!holds_memory(a, "t2"));
  ck_assert(!holds_memory(a, "t3"));
  ct_scope_free(a);
  /* Kept by name: t3 holds its value; t2 still fuses into it. */
  fused.keep = keep;
  fused.n_keep = 1;
  a = run_prog(p, CT_FLOAT32, 3, &fused);
  assert_same_bits(a, b, "out");
  assert_same_bits(a, b, "t3");
  ck_assert(!holds_memory(a, "t2"));
  ct_scope_free(a);
  /* Existing before the executor: t2 is the caller's and holds its value. */
  a = ct_scope_new();
  put_leaves(a, CT_FLOAT32, 3);
  ck_assert_ptr_nonnull(ct_scope_var(a, "t2"));
  fused.n_keep = 0;
  ct_executor *e = ct_executor_new_with(p, a, ct_cpu(), &fused);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  assert_same_bits(a, b, "t2");
  assert_same_bits(a, b, "out");
  ck_assert(!holds_memory(a, "t3"));
  ct_executor_free(e);
  ct_scope_free(a);
  ct_scope_free(b);
  ct_program_free(p);
}
END_TEST

/* An op between the members that rewrites a leaf: the members cannot move past it, so nothing
 * fuses and the result is the unfused one. */
START_TEST(a_leaf_rewritten_between_is_not_fused) {
  ct_program *p = ct_program_new();
  append(p, op_x("exp", "l0", "t1"));
  append(p, op_x("scale", "l1", "l0"));
  append(p, op_xy("elementwise_add", "t1", "l0", "out"));
  static const ct_executor_options plain = {0}, fused = {.fuse_elementwise = true};
  ct_scope *a = run_prog(p, CT_FLOAT64, 5, &fused), *b = run_prog(p, CT_FLOAT64, 5, &plain);
  assert_same_bits(a, b, "out");
  ck_assert(holds_memory(a, "t1"));
  ct_scope_free(a);
  ct_scope_free(b);
  ct_program_free(p);
}
END_TEST

/* Runs p once over a scope of leaves in which "v" shares l0's memory under another name (once:
 * a second run would read what the first wrote through v either way). */
static ct_scope *run_shared_leaf(const ct_program *p, const ct_executor_options *o) {
  ct_scope *s = ct_scope_new();
  put_leaves(s, CT_FLOAT64, 9);
  ct_tensor *v = ct_var_tensor(ct_scope_var(s, "v"));
  ck_assert_int_eq(ct_tensor_share(v, tensor_of(s, "l0")), CT_OK);
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), o);
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  ct_executor_free(e);
  return s;
}

/* An op between the members writes a leaf's memory under another name (v shares l0's block):
 * the plan cannot see it by name, so the run-time guard runs the deferred exp before the scale
 * writes l0's memory, and the result is the unfused program's (it read the overwritten memory,
 * 28.2 against 2.45, before the guard). */
START_TEST(a_leaf_written_through_a_shared_block_between_runs_unfused) {
  ct_program *p = ct_program_new();
  append(p, op_x("exp", "l0", "t1"));
  ct_op *sc = op_x("scale", "l1", "v");
  ck_assert_int_eq(ct_op_set_attr_float(sc, "scale", 3), CT_OK);
  append(p, sc);
  append(p, op_xy("elementwise_add", "t1", "l1", "out"));
  static const ct_executor_options plain = {0}, fused = {.fuse_elementwise = true};
  ct_scope *a = run_shared_leaf(p, &fused), *b = run_shared_leaf(p, &plain);
  assert_same_bits(a, b, "out");
  assert_same_bits(a, b, "l0");
  /* l0's first row holds 3 l1 ([5]) after the run, written through v. */
  const double *l0 = ct_tensor_data(tensor_of(a, "l0"), CT_FLOAT64);
  const double *l1 = ct_tensor_data(tensor_of(a, "l1"), CT_FLOAT64);
  for (int i = 0; i < 5; i++) ck_assert(l0[i] == 3 * l1[i]);
  ct_scope_free(a);
  ct_scope_free(b);
  ct_program_free(p);
}
END_TEST

/* With free_intermediates too: the same bits, t1 freed after its last read, the fused
 * intermediates never allocated, and a lower peak than free_intermediates alone. */
/* With free_intermediates, a leaf of a group (a, made by the executor) whose last unfused reader
 * (transpose) comes between the deferred member (exp) and the root: its release waits for the
 * root, so the fused run reads it whole (found by fuzz_programs: the run failed, 'uninitialized',
 * where the plain one passed). */
START_TEST(a_leaf_freed_between_a_member_and_its_root_lives_until_the_root) {
  static const ct_executor_options plain = {0},
                                   fused = {.free_intermediates = true, .fuse_elementwise = true};
  ct_program *p = ct_program_new();
  ct_op *sc = op_x("scale", "l0", "a");
  ck_assert_int_eq(ct_op_set_attr_float(sc, "scale", -1.25), CT_OK);
  append(p, sc);
  append(p, op_x("exp", "a", "e"));
  ct_op *tr = op_x("transpose", "a", "t");
  static const int64_t perm[] = {1, 0};
  ck_assert_int_eq(ct_op_set_attr_ints(tr, "axis", perm, 2), CT_OK);
  append(p, tr);
  append(p, op_xy("elementwise_sub", "e", "l2", "out"));
  ct_scope *a = run_prog(p, CT_FLOAT64, 4, &fused), *b = run_prog(p, CT_FLOAT64, 4, &plain);
  assert_same_bits(a, b, "out");
  ck_assert(!holds_memory(a, "e")); /* still fused: its intermediate never allocated */
  ct_scope_free(a);
  ct_scope_free(b);
  ct_program_free(p);
}
END_TEST

START_TEST(fuses_with_free_intermediates) {
  static const ct_executor_options plain = {.free_intermediates = true},
                                   fused = {.free_intermediates = true, .fuse_elementwise = true};
  ct_program *p = shared_program();
  ct_scope *b = run_prog(p, CT_FLOAT64, 9, &plain);
  ct_scope *a = ct_scope_new();
  put_leaves(a, CT_FLOAT64, 9);
  ct_memory_reset_peak(ct_cpu());
  size_t before = cpu_stats().allocated;
  ct_executor *e = ct_executor_new_with(p, a, ct_cpu(), &fused);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  size_t fused_peak = cpu_stats().peak - before;
  assert_same_bits(a, b, "out");
  for (int k = 1; k <= 3; k++) {
    char name[8];
    snprintf(name, sizeof name, "t%d", k);
    ck_assert(!holds_memory(a, name));
  }
  ct_executor_free(e);
  ct_scope_free(a);
  /* The same program unfused: its peak holds one more [3, 5] float64 tensor. */
  a = ct_scope_new();
  put_leaves(a, CT_FLOAT64, 9);
  ct_memory_reset_peak(ct_cpu());
  before = cpu_stats().allocated;
  e = ct_executor_new_with(p, a, ct_cpu(), &plain);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ck_assert_uint_eq(cpu_stats().peak - before, fused_peak + 15 * sizeof(double));
  ct_executor_free(e);
  ct_scope_free(a);
  ct_scope_free(b);
  ct_program_free(p);
}
END_TEST

/* int32 leaves: no expression engine for them, so the group runs op by op (same values) and
 * still leaves its intermediate without memory. */
START_TEST(other_dtypes_run_op_by_op) {
  ct_program *p = ct_program_new();
  ct_op *sc = op_x("scale", "l0", "t1");
  ck_assert_int_eq(ct_op_set_attr_float(sc, "scale", -3.0), CT_OK);
  append(p, sc);
  append(p, op_xy("elementwise_add", "t1", "l1", "out"));
  static const ct_executor_options plain = {0}, fused = {.fuse_elementwise = true};
  ct_scope *a = run_prog(p, CT_INT32, 4, &fused), *b = run_prog(p, CT_INT32, 4, &plain);
  assert_same_bits(a, b, "out");
  ck_assert(!holds_memory(a, "t1"));
  ct_scope_free(a);
  ct_scope_free(b);
  ct_program_free(p);
}
END_TEST

/* Leaves that do not broadcast: the expression fails, the group runs op by op, so the run fails
 * as the unfused program's does (CT_ERR_SHAPE, the add's message naming both dims), out without
 * memory and the intermediate's dropped. */
START_TEST(a_failing_group_fails_as_its_ops) {
  static const double v[4] = {1, 2, 3, 4};
  ct_program *p = ct_program_new();
  append(p, op_x("exp", "x", "t1"));
  append(p, op_xy("elementwise_add", "t1", "y", "out"));
  char msgs[2][512];
  for (int fuse = 0; fuse < 2; fuse++) {
    ct_scope *s = ct_scope_new();
    put(s, "x", CT_FLOAT64, CT_DIMS(2, 2), v);
    put(s, "y", CT_FLOAT64, CT_DIMS(3), v);
    ct_executor_options o = {.fuse_elementwise = fuse == 1};
    ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
    CT_ASSERT_FAILS(ct_executor_run(e), CT_ERR_SHAPE);
    snprintf(msgs[fuse], sizeof msgs[fuse], "%s", ct_last_error());
    ck_assert(!holds_memory(s, "out"));
    if (fuse == 1) ck_assert(!holds_memory(s, "t1"));
    ct_executor_free(e);
    ct_scope_free(s);
  }
  ck_assert_str_eq(msgs[1], msgs[0]);
  ck_assert_msg(strstr(msgs[0], "elementwise_add") && strstr(msgs[0], "[2,2]") &&
                    strstr(msgs[0], "[3]"),
                "%s", msgs[0]);
  ct_program_free(p);
}
END_TEST

/* A training step (out = tanh(scale(x * w)), a weighted loss, the backward pass, sgd on w):
 * w after three steps has the same bits with and without the option, with and without
 * free_intermediates. */
static ct_scope *train(bool fuse, bool free_intermediates) {
  static const double x[4] = {1.0, 2.0, -1.0, 0.5}, w0[4] = {0.5, -0.25, 0.75, 0.125};
  static const char *const params[] = {"w"};
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT64, CT_DIMS(4), x);
  put(s, "w", CT_FLOAT64, CT_DIMS(4), w0);
  double lr = 0.25;
  put(s, "lr", CT_FLOAT64, CT_DIMS(1), &lr);
  ct_program *p = ct_program_new();
  append(p, op_xy("elementwise_mul", "x", "w", "xw"));
  ct_op *sc = op_x("scale", "xw", "z");
  ck_assert_int_eq(ct_op_set_attr_float(sc, "scale", 1.5), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_float(sc, "bias", 0.1), CT_OK);
  append(p, sc);
  append(p, op_x("tanh", "z", "out"));
  append_weighted_loss(p, "out", "total");
  ck_assert_msg(ct_program_append_backward(p, "total", params, 1) == CT_OK, "%s", ct_last_error());
  ct_op *opt = new_op("sgd");
  ck_assert_int_eq(ct_op_set_input(opt, "Param", "w"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(opt, "Grad", "w@GRAD"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(opt, "LearningRate", "lr"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(opt, "ParamOut", "w"), CT_OK);
  append(p, opt);
  ct_executor_options o = {.free_intermediates = free_intermediates, .fuse_elementwise = fuse};
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  for (int k = 0; k < 3; k++) ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  ct_executor_free(e);
  ct_program_free(p);
  return s;
}

START_TEST(training_step_is_identical) {
  for (int free_them = 0; free_them < 2; free_them++) {
    ct_scope *a = train(true, free_them), *b = train(false, free_them);
    assert_same_bits(a, b, "w");
    ck_assert(var_f64(a, "w")[0] != 0.5); /* it did move */
    if (!free_them) { /* the backward ops read out, not xw or z: those two fused into out */
      ck_assert(!holds_memory(a, "xw") && !holds_memory(a, "z") && holds_memory(a, "out"));
      ck_assert(holds_memory(b, "xw") && holds_memory(b, "z"));
    }
    ct_scope_free(a);
    ct_scope_free(b);
  }
}
END_TEST

/* ---- Backward programs ------------------------------------------------------------------------ */

/* The same bits, except that a NaN matches any NaN: a kernel such as elementwise_div_grad's
 * -g * x / (y * y) may have its negation moved by the compiler (C does not fix the sign of a
 * NaN), so the sign of a NaN it passes on is not the expression's. */
static void assert_same_values(ct_scope *a, ct_scope *b, const char *name) {
  const ct_tensor *x = tensor_of(a, name), *y = tensor_of(b, name);
  ck_assert(ct_ddim_equal(ct_tensor_dims(x), ct_tensor_dims(y)));
  ck_assert_int_eq(ct_tensor_dtype(x), ct_tensor_dtype(y));
  for (int64_t i = 0; i < ct_tensor_numel(x); i++) {
    double u = get_elem(ct_tensor_data(x, ct_tensor_dtype(x)), ct_tensor_dtype(x), i);
    double v = get_elem(ct_tensor_data(y, ct_tensor_dtype(y)), ct_tensor_dtype(y), i);
    ck_assert_msg((u != u && v != v) || memcmp(&u, &v, sizeof u) == 0,
                  "'%s'[%lld] is %.17g, the unfused program's %.17g", name, (long long)i, u, v);
  }
}

/* Runs p (a forward program with its backward) over the leaves, twice, and returns the scope. */
static ct_scope *run_fwd_bwd(const ct_program *p, ct_dtype dt, uint32_t seed, bool fuse,
                              bool free_them) {
  ct_executor_options o = {.free_intermediates = free_them, .fuse_elementwise = fuse};
  return run_prog(p, dt, seed, &o);
}

/* Random forward trees, a loss and their backward with respect to l0 (of the output's dims) and
 * l2 ([3, 1]: its gradient sums over a broadcast dim, so those grad ops stay ops): the gradients
 * have the unfused program's bits, with and without free_intermediates. */
START_TEST(random_backward_programs_match_unfused_bits) {
  static const char *const params[] = {"l0", "l2"};
  for (uint32_t trial = 0; trial < 100; trial++) {
    ct_dtype dt = trial % 2 ? CT_FLOAT64 : CT_FLOAT32;
    ct_program *p = ct_program_new();
    random_program(p, 5000 + trial);
    /* The loss: a mean of out weighted by l0 (test_weighted_sum has float64 kernels only). */
    append(p, op_xy("elementwise_mul", "out", "l0", "weighted"));
    append(p, op_x("mean", "weighted", "total"));
    ck_assert_msg(ct_program_append_backward(p, "total", params, 1 + trial % 2) == CT_OK, "%s",
                  ct_last_error());
    for (int free_them = 0; free_them < 2; free_them++) {
      ct_scope *a = run_fwd_bwd(p, dt, trial, true, free_them);
      ct_scope *b = run_fwd_bwd(p, dt, trial, false, free_them);
      assert_same_values(a, b, "l0@GRAD");
      if (trial % 2) assert_same_values(a, b, "l2@GRAD");
      ct_scope_free(a);
      ct_scope_free(b);
    }
    ct_program_free(p);
  }
}
END_TEST

/* out = sigmoid(scale(tanh(l0 + l1))) and its backward for l0: sigmoid_grad, scale, tanh_grad
 * and elementwise_add_grad (X@GRAD only; l1 [5] is broadcast) fuse into l0@GRAD, as t1 .. t3
 * fuse into out, t1 and t3 likewise (t2 is read by tanh_grad), so a run allocates five blocks
 * fewer than the unfused program (with free_intermediates, which frees them after use). */
static ct_program *chain_backward(void) {
  static const char *const params[] = {"l0"};
  ct_program *p = ct_program_new();
  append(p, op_xy("elementwise_add", "l0", "l1", "t1"));
  append(p, op_x("tanh", "t1", "t2"));
  ct_op *sc = op_x("scale", "t2", "t3");
  ck_assert_int_eq(ct_op_set_attr_float(sc, "scale", -1.25), CT_OK);
  append(p, sc);
  append(p, op_x("sigmoid", "t3", "out"));
  append_weighted_loss(p, "out", "total");
  ck_assert_int_eq(ct_program_append_backward(p, "total", params, 1), CT_OK);
  return p;
}

/* The blocks one run of p over s allocates (its second run, the first having made the
 * variables), with free_intermediates, fused or not. */
static uint64_t run_allocs(const ct_program *p, ct_scope *s, bool fuse) {
  ct_executor_options o = {.free_intermediates = true, .fuse_elementwise = fuse};
  put_leaves(s, CT_FLOAT64, 11);
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  uint64_t before = cpu_stats().allocs;
  ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  uint64_t n = cpu_stats().allocs - before;
  ct_executor_free(e);
  return n;
}

START_TEST(backward_intermediates_are_never_allocated) {
  static const char *const inner[] = {"t1@GRAD", "t2@GRAD", "t3@GRAD"};
  ct_program *p = chain_backward();
  ct_scope *a = ct_scope_new(), *b = ct_scope_new();
  uint64_t fused = run_allocs(p, a, true), plain = run_allocs(p, b, false);
  assert_same_bits(a, b, "l0@GRAD");
  ck_assert_uint_eq(fused + 5, plain);
  for (size_t k = 0; k < 3; k++) {
    ck_assert_msg(!holds_memory(a, inner[k]), "%s holds memory", inner[k]);
    ck_assert_ptr_nonnull(ct_scope_find_var(b, inner[k])); /* the unfused program's */
  }
  ct_scope_free(a);
  ct_scope_free(b);
  ct_program_free(p);
}
END_TEST

/* out = relu(l0 * l3), l3 [1] = -1.25 broadcast: elementwise_mul_grad's kernel sums dOut * Y
 * into a zeroed l0@GRAD, so where relu passed no gradient (0 * -1.25 = -0) it holds 0 + -0 = +0;
 * the fused relu_grad and mul_grad give the same. */
START_TEST(a_gradient_beside_a_broadcast_input_rounds_as_its_kernel) {
  static const char *const params[] = {"l0"};
  ct_program *p = ct_program_new();
  append(p, op_xy("elementwise_mul", "l0", "l3", "t1"));
  append(p, op_x("relu", "t1", "out"));
  append_weighted_loss(p, "out", "total");
  ck_assert_int_eq(ct_program_append_backward(p, "total", params, 1), CT_OK);
  ct_scope *a = run_fwd_bwd(p, CT_FLOAT64, 11, true, false);
  ct_scope *b = run_fwd_bwd(p, CT_FLOAT64, 11, false, false);
  ck_assert(var_f64(a, "l3")[0] == -1.25);
  assert_same_bits(a, b, "l0@GRAD");
  ck_assert(!holds_memory(a, "t1@GRAD"));
  int zeros = 0;
  for (int i = 0; i < 15; i++) {
    double g = var_f64(a, "l0@GRAD")[i];
    zeros += g == 0;
    ck_assert(g != 0 || !signbit(g));
  }
  ck_assert_int_gt(zeros, 0);
  ct_scope_free(a);
  ct_scope_free(b);
  ct_program_free(p);
}
END_TEST

/* t2 = exp(relu(l0)), read only as X by a binary gradient whose dX template never reads X (the
 * kernel needs its dims): t2 must hold a tensor, so it roots a group of relu and exp (t1 is
 * never allocated) and the gradient runs on its own, with the unfused program's bits. */
START_TEST(a_chain_read_only_for_its_dims_fuses) {
  static const char *const grads[] = {"elementwise_add_grad", "elementwise_mul_grad"};
  static const ct_executor_options plain = {0}, fused = {.fuse_elementwise = true};
  for (size_t g = 0; g < 2; g++) {
    ct_program *p = ct_program_new();
    append(p, op_x("relu", "l0", "t1"));
    append(p, op_x("exp", "t1", "t2"));
    ct_op *op = new_op(grads[g]);
    ck_assert_int_eq(ct_op_set_input(op, "X", "t2"), CT_OK);
    ck_assert_int_eq(ct_op_set_input(op, "Y", "l1"), CT_OK);
    ck_assert_int_eq(ct_op_set_input(op, "Out@GRAD", "l0"), CT_OK);
    ck_assert_int_eq(ct_op_set_output(op, "X@GRAD", "dx"), CT_OK);
    append(p, op);
    ct_scope *a = run_prog(p, CT_FLOAT32, 6, &fused), *b = run_prog(p, CT_FLOAT32, 6, &plain);
    assert_same_bits(a, b, "t2");
    assert_same_bits(a, b, "dx");
    ck_assert_msg(!holds_memory(a, "t1"), "%s: t1 was allocated", grads[g]);
    ck_assert(holds_memory(b, "t1"));
    ct_scope_free(a);
    ct_scope_free(b);
    ct_program_free(p);
  }
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("fuse");
  CT_ADD_TEST(s, random_trees_match_unfused_bits);
  CT_ADD_TEST(s, twice_read_kept_and_existing_variables_are_not_fused);
  CT_ADD_TEST(s, a_leaf_rewritten_between_is_not_fused);
  CT_ADD_TEST(s, a_leaf_written_through_a_shared_block_between_runs_unfused);
  CT_ADD_TEST(s, a_leaf_freed_between_a_member_and_its_root_lives_until_the_root);
  CT_ADD_TEST(s, fuses_with_free_intermediates);
  CT_ADD_TEST(s, other_dtypes_run_op_by_op);
  CT_ADD_TEST(s, a_failing_group_fails_as_its_ops);
  CT_ADD_TEST(s, training_step_is_identical);
  CT_ADD_TEST(s, random_backward_programs_match_unfused_bits);
  CT_ADD_TEST(s, backward_intermediates_are_never_allocated);
  CT_ADD_TEST(s, a_gradient_beside_a_broadcast_input_rounds_as_its_kernel);
  CT_ADD_TEST(s, a_chain_read_only_for_its_dims_fuses);
  return s;
}

CT_TEST_MAIN(make_suite)
