/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_comm.c: the collective ops over MPI (corten/comm.h), run by ctest under
 * `mpirun -n 2` and `-n 4`: every op, every dtype each one takes, in place, the checks that
 * ranks agree, the gradients. Every rank runs every test, in the same order, in one process
 * (Check's fork mode is off: an MPI process cannot fork its communicators). Rank r's X holds
 * value(r, i) = (r + 1) (i % 5 + 1) mod 7 + r at element i, small integers that every dtype holds
 * exactly, so each expected value is exact. The failure of a rank (killed, or late) is tested
 * by tests/comm_failure.c. This program initialises MPI itself, so corten must leave MPI's
 * start and end to it (checked at the end); comm_failure.c and examples/train_digits_dp.c
 * leave both to corten. */
#include <stdarg.h>

#ifdef CORTEN_TEST_MPI
#include <mpi.h>

#include "comm/comm_state.h" /* a rank's collective count, to make it skip one */
#endif

#include "harness.h"
#include "op_util.h"

static int n_ranks, my_rank;

static double value(int r, int64_t i) { return (double)((r + 1) * (i % 5 + 1) % 7 + r); }

/* Puts this rank's values, of dims and dtype, into variable name of s. */
static void put_values(ct_scope *s, const char *name, ct_dtype dt, ct_ddim dims) {
  int64_t n = ct_ddim_numel(dims);
  void *p = xmalloc(n, 8);
  for (int64_t i = 0; i < n; i++) set_elem(p, dt, i, value(my_rank, i));
  put(s, name, dt, dims, p);
  free(p);
}

/* A scope holding communicator "comm" and X of dims and dtype with this rank's values. */
static ct_scope *setup(ct_dtype dt, ct_ddim dims) {
  ct_scope *s = ct_scope_new();
  ck_assert_ptr_nonnull(s);
  ck_assert_msg(ct_comm_init_mpi(ct_scope_var(s, "comm")) == CT_OK, "%s", ct_last_error());
  /* A rank whose test failed skips the rest of it: the others then fail soon, not in 2 min. */
  ck_assert_int_eq(ct_comm_set_timeout(ct_scope_var(s, "comm"), 20), CT_OK);
  put_values(s, "x", dt, dims);
  return s;
}

/* An op of type reading X and writing out over communicator "comm" (root when >= 0). */
static ct_op *coll(const char *type, const char *x, const char *out, int root) {
  ct_op *op = op_x(type, x, out);
  ck_assert_int_eq(ct_op_set_attr_string(op, "comm", "comm"), CT_OK);
  if (root >= 0) ck_assert_int_eq(ct_op_set_attr_int(op, "root", root), CT_OK);
  return op;
}

static void run_coll(ct_scope *s, const char *type, const char *x, const char *out, int root) {
  ct_op *op = coll(type, x, out, root);
  run(op, s);
  ct_op_free(op);
}

static const ct_dtype arith[] = {CT_INT8,    CT_UINT8,    CT_INT16,   CT_INT32,  CT_INT64,
                                 CT_FLOAT16, CT_BFLOAT16, CT_FLOAT32, CT_FLOAT64};
enum { N_ARITH = sizeof arith / sizeof arith[0] };

/* Each collective runs at two lengths along the last dim: a small X travels with the header
 * exchange and every rank finishes the op itself; a large one (1,200 bytes and more, past
 * CT__COMM_INLINE_BYTES) goes through MPI's nonblocking collectives. The 64 KiB from which the
 * engine asks for MPI's halving algorithm: test_allreduce_in_place and the half sums. */
static const int64_t lengths[] = {5, 600};
enum { N_LENGTHS = sizeof lengths / sizeof lengths[0] };

START_TEST(test_rank_and_size) {
  ct_scope *s = setup(CT_FLOAT32, CT_DIMS(1));
  ct_var *c = ct_scope_var(s, "default");
  ck_assert_int_eq(ct_comm_init_mpi(c), CT_OK);
  /* What mpirun told this process: OpenMPI's variables, or the PMI ones of MPICH. */
  const char *size = getenv("OMPI_COMM_WORLD_SIZE"), *rank = getenv("OMPI_COMM_WORLD_RANK");
  if (size == NULL) size = getenv("PMI_SIZE"), rank = getenv("PMI_RANK");
  ck_assert(size != NULL && rank != NULL);
  ck_assert_int_eq(ct_comm_size(c), atoi(size));
  ck_assert_int_eq(ct_comm_rank(c), atoi(rank));
  ck_assert(ct_comm_timeout(c) == CT_COMM_DEFAULT_TIMEOUT);
  ck_assert_int_eq(ct_comm_set_timeout(c, 2.5), CT_OK);
  ck_assert(ct_comm_timeout(c) == 2.5);
  CT_ASSERT_FAILS(ct_comm_set_timeout(c, 0), CT_ERR_INVALID_ARGUMENT);
  ck_assert(!ct_comm_broken(c));
  ck_assert_int_eq(ct_comm_rank(ct_scope_var(s, "x")), -1);
  ct_scope_free(s);
}
END_TEST

/* Runs type over every arithmetic dtype; want(i) is element i of the result. */
static void check_reduce(const char *type, double (*want)(int64_t)) {
  for (int k = 0; k < N_ARITH; k++) {
    ct_dtype t = arith[k];
    ct_scope *s = setup(t, CT_DIMS(2, lengths[0]));
    put_values(s, "x_long", t, CT_DIMS(2, lengths[1]));
    for (int j = 0; j < N_LENGTHS; j++) {
      int64_t n = lengths[j];
      run_coll(s, type, j ? "x_long" : "x", "out", -1);
      const void *p = result(s, "out", t, CT_DIMS(2, n));
      for (int64_t i = 0; i < 2 * n; i++) {
        ck_assert_msg(get_elem(p, t, i) == want(i), "%s %s [2,%lld] element %lld: %g, want %g",
                      type, ct_dtype_name(t), (long long)n, (long long)i, get_elem(p, t, i),
                      want(i));
      }
    }
    ct_scope_free(s);
  }
}

static double sum_of(int64_t i) {
  double v = 0;
  for (int r = 0; r < n_ranks; r++) v += value(r, i);
  return v;
}

static double max_of(int64_t i) {
  double v = value(0, i);
  for (int r = 1; r < n_ranks; r++) v = value(r, i) > v ? value(r, i) : v;
  return v;
}

START_TEST(test_allreduce_sum_every_dtype) { check_reduce("c_allreduce_sum", sum_of); }
END_TEST

START_TEST(test_allreduce_max_every_dtype) { check_reduce("c_allreduce_max", max_of); }
END_TEST

START_TEST(test_allreduce_in_place) {
  const int64_t ns[] = {7, 10000}; /* 80,000 bytes: MPI's halving algorithm */
  for (int k = 0; k < 2; k++) {
    ct_scope *s = setup(CT_FLOAT64, CT_DIMS(ns[k]));
    run_coll(s, "c_allreduce_sum", "x", "x", -1);
    const double *p = result(s, "x", CT_FLOAT64, CT_DIMS(ns[k]));
    for (int64_t i = 0; i < ns[k]; i++) ck_assert(p[i] == sum_of(i));
    ct_scope_free(s);
  }
}
END_TEST

/* Broadcast's value of element i on rank r: fits every dtype (bool: its parity). */
static double bvalue(ct_dtype t, int r, int64_t i) {
  return t == CT_BOOL ? (r + i) % 2 : r * 10 + i % 50;
}

START_TEST(test_broadcast_every_dtype) {
  enum { N_ALL = sizeof all_dtypes / sizeof all_dtypes[0] };
  for (int k = 0; k < N_ALL; k++) {
    ct_dtype t = all_dtypes[k];
    ct_scope *s = ct_scope_new();
    ck_assert_int_eq(ct_comm_init_mpi(ct_scope_var(s, "comm")), CT_OK);
    for (int j = 0; j < N_LENGTHS; j++) {
      int64_t n = 2 * lengths[j];
      unsigned char *v = xmalloc(n, 8);
      for (int64_t i = 0; i < n; i++) set_elem(v, t, i, bvalue(t, my_rank, i));
      put(s, "x", t, CT_DIMS(2, n / 2), v);
      free(v);
      int root = n_ranks - 1;
      bool in_place = (k + j) % 2;
      run_coll(s, "c_broadcast", "x", in_place ? "x" : "out", root);
      const void *o = result(s, in_place ? "x" : "out", t, CT_DIMS(2, n / 2));
      for (int64_t i = 0; i < n; i++) {
        ck_assert_msg(get_elem(o, t, i) == bvalue(t, root, i), "%s element %lld",
                      ct_dtype_name(t), (long long)i);
      }
    }
    ct_scope_free(s);
  }
}
END_TEST

START_TEST(test_allgather_stacks_ranks_along_dim_0) {
  const ct_dtype types[] = {CT_INT32, CT_FLOAT16};
  for (int k = 0; k < 2 * N_LENGTHS; k++) {
    ct_dtype t = types[k % 2];
    int64_t n = lengths[k / 2];
    ct_scope *s = setup(t, CT_DIMS(2, n));
    run_coll(s, "c_allgather", "x", "out", -1);
    const void *p = result(s, "out", t, CT_DIMS(2 * n_ranks, n));
    for (int r = 0; r < n_ranks; r++) {
      for (int64_t i = 0; i < 2 * n; i++) ck_assert(get_elem(p, t, r * 2 * n + i) == value(r, i));
    }
    ct_scope_free(s);
  }
}
END_TEST

START_TEST(test_reducescatter_keeps_this_ranks_slice_of_the_sum) {
  for (int k = 0; k < N_LENGTHS; k++) {
    int64_t n = lengths[k];
    ct_scope *s = setup(CT_FLOAT32, CT_DIMS(2 * n_ranks, n));
    run_coll(s, "c_reducescatter", "x", "out", -1);
    const float *p = result(s, "out", CT_FLOAT32, CT_DIMS(2, n));
    for (int64_t i = 0; i < 2 * n; i++) ck_assert(p[i] == sum_of(my_rank * 2 * n + i));
    ct_scope_free(s);
  }
}
END_TEST

START_TEST(test_reduce_sum_to_root_zeros_elsewhere) {
  for (int k = 0; k < N_LENGTHS; k++) {
    int64_t n = lengths[k];
    ct_scope *s = setup(CT_INT64, CT_DIMS(n));
    run_coll(s, "c_reduce_sum", "x", "out", 0);
    const int64_t *p = result(s, "out", CT_INT64, CT_DIMS(n));
    for (int64_t i = 0; i < n; i++) ck_assert(p[i] == (my_rank == 0 ? sum_of(i) : 0));
    ct_scope_free(s);
  }
}
END_TEST

START_TEST(test_bool_reductions_are_unsupported_over_mpi) {
  ct_scope *s = setup(CT_BOOL, CT_DIMS(4));
  ct_op *op = coll("c_allreduce_sum", "x", "out", -1);
  run_fails(op, s, CT_ERR_UNSUPPORTED, "c_allreduce_sum", "bool", "communicator 'comm'",
            "cast X 'x'", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* float16 and bfloat16 sums are float32 sums rounded to nearest even, as corten's kernels
 * round. Rank 0 holds big (where the format's spacing is 2), rank 1 holds 1 and 3 by turns, the
 * others 0, so every order of summing gives the same: big + 1 is a tie that rounds to the even
 * big, big + 3 a tie that rounds up to big + 4. The max is big. */
static void check_half_sum(ct_dtype t, double big, int64_t n) {
  ct_scope *s = ct_scope_new();
  ck_assert_int_eq(ct_comm_set_timeout(ct_scope_var(s, "comm"), 20), CT_OK);
  ck_assert_int_eq(ct_comm_init_mpi(ct_scope_var(s, "comm")), CT_OK);
  void *v = xmalloc(2 * n, 8);
  for (int64_t i = 0; i < 2 * n; i++) {
    set_elem(v, t, i, my_rank == 0 ? big : my_rank == 1 ? (i % 2 ? 3 : 1) : 0);
  }
  put(s, "x", t, CT_DIMS(2, n), v);
  free(v);
  run_coll(s, "c_allreduce_sum", "x", "out", -1);
  run_coll(s, "c_allreduce_max", "x", "top", -1);
  const void *p = result(s, "out", t, CT_DIMS(2, n)), *m = result(s, "top", t, CT_DIMS(2, n));
  for (int64_t i = 0; i < 2 * n; i++) {
    ck_assert_msg(get_elem(p, t, i) == (i % 2 ? big + 4 : big), "%s element %lld: %g",
                  ct_dtype_name(t), (long long)i, get_elem(p, t, i));
    ck_assert(get_elem(m, t, i) == big);
  }
  ct_scope_free(s);
}

START_TEST(test_half_sums_round_as_the_kernels_do) {
  const int64_t ns[] = {5, 20000}; /* 80,000 bytes: MPI's halving algorithm too */
  for (int k = 0; k < 2; k++) {
    check_half_sum(CT_FLOAT16, 2048, ns[k]); /* float16 spacing 2 from 2048 */
    check_half_sum(CT_BFLOAT16, 256, ns[k]); /* bfloat16 spacing 2 from 256 */
  }
}
END_TEST

/* Rank 0 runs X of dims a and dtype ta, the others dims b and dtype tb: every rank fails with
 * want, naming both; the communicator stays usable. */
static void check_mismatch(ct_ddim a, ct_dtype ta, ct_ddim b, ct_dtype tb, ct_status want,
                           const char *mine, const char *theirs) {
  ct_scope *s = setup(my_rank == 0 ? ta : tb, my_rank == 0 ? a : b);
  /* Out holds int64 [2] (7, 8) before: the failed collective leaves it so (issue 32's fuzzer
   * found it retyped to X's dtype on a fresh block). */
  const int64_t old_out[2] = {7, 8};
  put(s, "out", CT_INT64, CT_DIMS(2), old_out);
  const ct_tensor *out_t = ct_var_get_tensor(ct_scope_find_var(s, "out"));
  const void *old_data = ct_tensor_data(out_t, CT_INT64);
  ct_op *op = coll("c_allreduce_sum", "x", "out", -1);
  run_fails(op, s, want, "c_allreduce_sum", "communicator 'comm'", my_rank == 0 ? mine : theirs,
            my_rank == 0 ? theirs : mine, "rank", NULL);
  ct_op_free(op);
  ck_assert_int_eq(ct_tensor_dtype(out_t), CT_INT64);
  ck_assert(ct_ddim_equal(ct_tensor_dims(out_t), CT_DIMS(2)));
  ck_assert_ptr_eq(ct_tensor_data(out_t, CT_INT64), old_data);
  ck_assert(((const int64_t *)old_data)[1] == 8);
  put_fn(s, "y", CT_FLOAT32, CT_DIMS(3), data_iota);
  run_coll(s, "c_allreduce_sum", "y", "out", -1);
  const float *p = result(s, "out", CT_FLOAT32, CT_DIMS(3));
  ck_assert(p[2] == 2.0f * (float)n_ranks);
  ct_scope_free(s);
}

START_TEST(test_ranks_with_other_dims_fail_naming_both) {
  check_mismatch(CT_DIMS(2, 3), CT_FLOAT32, CT_DIMS(3, 2), CT_FLOAT32, CT_ERR_SHAPE,
                 "float32 [2,3]", "float32 [3,2]");
}
END_TEST

START_TEST(test_ranks_with_other_dtypes_fail_naming_both) {
  check_mismatch(CT_DIMS(4), CT_FLOAT32, CT_DIMS(4), CT_FLOAT64, CT_ERR_TYPE_MISMATCH,
                 "float32 [4]", "float64 [4]");
}
END_TEST

#ifdef CORTEN_TEST_MPI
START_TEST(test_a_rank_out_of_step_breaks_the_communicator) {
  ct_scope *s = setup(CT_FLOAT32, CT_DIMS(4));
  ct_var *v = ct_scope_var(s, "comm");
  /* Rank 0 counts one collective more, as if the others had skipped it. */
  if (my_rank == 0) ((ct__comm *)ct_var_get_mutable(v, &ct_comm_type))->seq++;
  ct_op *op = coll("c_allreduce_sum", "x", "out", -1);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "c_allreduce_sum", "communicator 'comm'",
            my_rank == 0 ? "(collective #1)" : "(collective #0)", "skipped a collective",
            "now broken", NULL);
  ck_assert(ct_comm_broken(v));
  run_fails(op, s, CT_ERR_DEVICE, "broken by an earlier failure", "ct_comm_init_mpi", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* Rank 0 runs an allreduce that the others skip, going on to their next collective (a
 * broadcast): at that turn the ranks run different collectives, which they can never agree on
 * again, so every rank breaks the communicator and its next collective fails at once instead of
 * waiting out the time limit. */
START_TEST(test_ranks_running_other_collectives_break_the_communicator) {
  ct_scope *s = setup(CT_FLOAT32, CT_DIMS(4));
  ct_var *v = ct_scope_var(s, "comm");
  ct_op *op = my_rank == 0 ? coll("c_allreduce_sum", "x", "out", -1)
                           : coll("c_broadcast", "x", "out", 0);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "communicator 'comm'", "out of step", "now broken",
            NULL);
  ck_assert(ct_comm_broken(v));
  double t0 = MPI_Wtime();
  run_fails(op, s, CT_ERR_DEVICE, "broken by an earlier failure", NULL);
  ck_assert(MPI_Wtime() - t0 < 5); /* at once, not after the 20 s limit */
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST
#endif

START_TEST(test_a_failed_init_leaves_the_communicator_as_it_was) {
  ct_scope *s = setup(CT_FLOAT32, CT_DIMS(4));
  ct_var *v = ct_scope_var(s, "comm");
  /* No device -1 on any rank (and no NCCL in a build without CUDA): every rank fails alike. */
  ck_assert_int_ne(ct_comm_init_nccl(v, -1), CT_OK);
  ck_assert_int_eq(ct_comm_rank(v), my_rank);
  ck_assert_int_eq(ct_comm_size(v), n_ranks);
  ck_assert(ct_comm_timeout(v) == 20);
  ck_assert(!ct_comm_broken(v));
  run_coll(s, "c_allreduce_sum", "x", "out", -1);
  const float *p = result(s, "out", CT_FLOAT32, CT_DIMS(4));
  double want = 0;
  for (int r = 0; r < n_ranks; r++) want += value(r, 3);
  ck_assert(p[3] == (float)want);
  ct_scope_free(s);
}
END_TEST

START_TEST(test_allgather_refuses_a_first_dim_that_overflows) {
  ct_scope *s = setup(CT_FLOAT32, CT_DIMS(1));
  /* No element, so X exists; gathered from 2 or more ranks its first dim passes 2^63. */
  put(s, "big", CT_FLOAT32, CT_DIMS(INT64_C(1) << 62, 0), NULL);
  ct_op *op = coll("c_allgather", "big", "out", -1);
  run_fails(op, s, CT_ERR_SHAPE, "c_allgather", "'big'", "2^63", NULL);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(test_comm_attribute_errors) {
  ct_scope *s = setup(CT_FLOAT32, CT_DIMS(4));
  ct_op *op = coll("c_allreduce_sum", "x", "out", -1);
  ck_assert_int_eq(ct_op_set_attr_string(op, "comm", "nope"), CT_OK);
  run_fails(op, s, CT_ERR_NOT_FOUND, "'nope'", NULL);
  ck_assert_ptr_nonnull(ct_var_get_mutable(ct_scope_var(s, "fresh"), &ct_comm_type));
  ck_assert_int_eq(ct_op_set_attr_string(op, "comm", "fresh"), CT_OK);
  run_fails(op, s, CT_ERR_UNINITIALIZED, "'fresh'", "ct_comm_init_mpi", NULL);
  ck_assert_int_eq(ct_op_set_attr_string(op, "comm", "x"), CT_OK);
  run_fails(op, s, CT_ERR_TYPE_MISMATCH, "'x'", NULL);
  ct_op_free(op);
  op = coll("c_broadcast", "x", "out", n_ranks);
  run_fails(op, s, CT_ERR_OUT_OF_RANGE, "root", NULL);
  ct_op_free(op);
  CT_ASSERT_FAILS(ct_comm_init_mpi(ct_scope_var(s, "x")), CT_ERR_TYPE_MISMATCH);
  ct_scope_free(s);
}
END_TEST

static double one_up(int64_t i) { return (double)(i + 1); }

/* A program: w -> collective `type` -> y; loss = mean(y * c) with c[i] = i + 1 on every rank;
 * the backward pass's w@GRAD is checked against want(i). */
static void check_grad(const char *type, ct_ddim w_dims, ct_ddim y_dims, double (*want)(int64_t)) {
  ct_scope *s = setup(CT_FLOAT64, w_dims);
  put_fn(s, "c", CT_FLOAT64, y_dims, one_up);
  ct_program *p = ct_program_new();
  int root = strcmp(type, "c_broadcast") == 0 ? 0 : -1;
  ck_assert_int_eq(ct_program_append(p, coll(type, "x", "y", root)), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_mul", "y", "c", "yc")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("reduce_sum", "yc", "loss")), CT_OK);
  const char *params[] = {"x"};
  ck_assert_msg(ct_program_append_backward(p, "loss", params, 1) == CT_OK, "%s", ct_last_error());
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  ck_assert_ptr_nonnull(e);
  ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  ct_executor_free(e);
  const double *g = result(s, "x@GRAD", CT_FLOAT64, w_dims);
  for (int64_t i = 0; i < ct_ddim_numel(w_dims); i++) {
    ck_assert_msg(g[i] == want(i), "%s: x@GRAD[%lld] = %g, want %g", type, (long long)i, g[i],
                  want(i));
  }
  ct_program_free(p);
  ct_scope_free(s);
}

/* Every rank's loss sums y c: d(sum of the losses)/dx sums each rank's c. */
static double grad_allreduce(int64_t i) { return (double)n_ranks * (double)(i + 1); }
static double grad_broadcast(int64_t i) { return my_rank == 0 ? grad_allreduce(i) : 0.0; }
static double grad_allgather(int64_t i) { return (double)n_ranks * (double)(my_rank * 3 + i + 1); }

START_TEST(test_grad_allreduce_sum_is_allreduce_of_the_grad) {
  check_grad("c_allreduce_sum", CT_DIMS(3), CT_DIMS(3), grad_allreduce);
}
END_TEST

START_TEST(test_grad_broadcast_is_a_reduce_to_the_root) {
  check_grad("c_broadcast", CT_DIMS(3), CT_DIMS(3), grad_broadcast);
}
END_TEST

START_TEST(test_grad_allgather_is_a_reduce_scatter) {
  check_grad("c_allgather", CT_DIMS(3), CT_DIMS(3 * n_ranks), grad_allgather);
}
END_TEST

static Suite *comm_suite(void) {
  Suite *s = suite_create("comm");
  CT_ADD_TEST(s, test_rank_and_size);
  CT_ADD_TEST(s, test_allreduce_sum_every_dtype);
  CT_ADD_TEST(s, test_allreduce_max_every_dtype);
  CT_ADD_TEST(s, test_allreduce_in_place);
  CT_ADD_TEST(s, test_broadcast_every_dtype);
  CT_ADD_TEST(s, test_allgather_stacks_ranks_along_dim_0);
  CT_ADD_TEST(s, test_reducescatter_keeps_this_ranks_slice_of_the_sum);
  CT_ADD_TEST(s, test_reduce_sum_to_root_zeros_elsewhere);
  CT_ADD_TEST(s, test_bool_reductions_are_unsupported_over_mpi);
  CT_ADD_TEST(s, test_half_sums_round_as_the_kernels_do);
  CT_ADD_TEST(s, test_ranks_with_other_dims_fail_naming_both);
  CT_ADD_TEST(s, test_ranks_with_other_dtypes_fail_naming_both);
  CT_ADD_TEST(s, test_comm_attribute_errors);
  CT_ADD_TEST(s, test_a_failed_init_leaves_the_communicator_as_it_was);
  CT_ADD_TEST(s, test_allgather_refuses_a_first_dim_that_overflows);
#ifdef CORTEN_TEST_MPI
  CT_ADD_TEST(s, test_a_rank_out_of_step_breaks_the_communicator);
  CT_ADD_TEST(s, test_ranks_running_other_collectives_break_the_communicator);
#endif
  CT_ADD_TEST(s, test_grad_allreduce_sum_is_allreduce_of_the_grad);
  CT_ADD_TEST(s, test_grad_broadcast_is_a_reduce_to_the_root);
  CT_ADD_TEST(s, test_grad_allgather_is_a_reduce_scatter);
  return s;
}

int main(int argc, char **argv) {
#ifdef CORTEN_TEST_MPI
  /* corten needs MPI_THREAD_SERIALIZED (comm_thread_level.c checks the refusal of less). */
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
#else
  (void)argc, (void)argv;
#endif
  ct_var *world = ct_var_new();
  if (world == NULL || ct_comm_init_mpi(world) != CT_OK) {
    printf("test_comm: %s\n", ct_last_error());
    ct_var_free(world);
    return ct_last_status() == CT_ERR_UNSUPPORTED ? 77 : EXIT_FAILURE;
  }
  n_ranks = ct_comm_size(world);
  my_rank = ct_comm_rank(world);
  ct_var_free(world);
  SRunner *sr = srunner_create(comm_suite());
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, my_rank == 0 ? CK_NORMAL : CK_SILENT); /* one report, rank 0's */
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
#ifdef CORTEN_TEST_MPI
  /* Every communicator is freed: MPI must still be the program's to finalise. */
  int done = 1;
  MPI_Finalized(&done);
  if (done) {
    printf("test_comm: corten finalised MPI, which the program had initialised\n");
    failed++;
  } else {
    MPI_Finalize();
  }
#endif
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
