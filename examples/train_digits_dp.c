/* SPDX-License-Identifier: Apache-2.0 */
/* train_digits_dp: the digits MLP of examples/digits_model.h (train_digits.c trains a CNN),
 * trained data parallel over MPI ranks, and checked against one process training on the whole
 * batch.
 *
 *   mpirun -n 4 build/examples/train_digits_dp [digits.params] [steps]
 *
 * Every rank holds the whole model. Each step takes the next BATCH training images; rank r of N
 * runs the forward and backward pass on its shard, rows [r BATCH/N, (r + 1) BATCH/N) of them;
 * the gradients are summed over the ranks (c_allreduce_sum, in place) and divided by N, which
 * makes them the gradient of the mean loss over the whole batch; then adam updates the
 * parameters on every rank alike. The parameters are float64, so the check is tight: after
 * each step every rank also
 *   - broadcasts rank 0's parameters and finds its own bit-identical to them, and
 *   - runs the same step as one process on the whole batch (a second scope, no communicator)
 *     and finds every parameter within 1e-6 of it (the sums differ only in their order).
 * Prints (rank 0) the largest difference from the single process and the test accuracy. Exits
 * 0 when every step passed both checks (and, after full training, the accuracy reaches 90%), 1
 * when one did not, 2 when a call failed or the data cannot be read, 77 without MPI. steps
 * (default 20 epochs' worth) cuts the run short for the test suite. */
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

static const char digits_program[] = "train_digits_dp";
static const ct_dtype digits_dtype = CT_FLOAT64;

#include "digits_model.h"

enum { BATCH = 48, STEPS_PER_EPOCH = N_TRAIN / BATCH, EPOCHS = 20 };
static const double TOLERANCE = 1e-6;

typedef struct run {
  ct_scope *dp, *ref; /* this rank's shard; the whole batch on one process */
  ct_program *init, *step_dp, *step_ref, *same, *eval;
  int rank, ranks;
} run;

/* Loads the data and builds the programs of both scopes. 1, 0 after reporting, -1 (skip) when
 * this build lacks a gradient. */
static int setup(run *r, const char *path) {
  ct_var *comm = ct_scope_var(r->dp, "comm");
  if (!ok(ct_comm_init_mpi(comm), "ct_comm_init_mpi")) {
    return ct_last_status() == CT_ERR_UNSUPPORTED ? -1 : 0;
  }
  r->rank = ct_comm_rank(comm);
  r->ranks = ct_comm_size(comm);
  if (BATCH % r->ranks != 0) {
    fprintf(stderr, "train_digits_dp: %d ranks do not divide the batch of %d\n", r->ranks, BATCH);
    return 0;
  }
  if (!load_digits(path, r->dp) || !load_digits(path, r->ref) || !take_rows(r->dp, "", 0, BATCH) ||
      !take_rows(r->ref, "", 0, BATCH) || !build_init(r->init) || !build_forward(r->eval)) {
    return 0;
  }
  int a = build_train(r->step_dp, "comm", r->ranks), b = build_train(r->step_ref, NULL, 1);
  if (a <= 0 || b <= 0) return a < 0 || b < 0 ? -1 : 0;
  /* "<param>.rank0": rank 0's parameter, to compare with this rank's own. */
  for (int i = 0; i < N_PARAMS; i++) {
    char to[32];
    snprintf(to, sizeof to, "%s.rank0", PARAMS[i]);
    ct_op *op = add(r->same, "c_broadcast", "X", PARAMS[i], NULL, "Out", to, NULL);
    if (op == NULL || !ok(ct_op_set_attr_string(op, "comm", "comm"), to)) return 0;
  }
  return 1;
}

static int run_program(ct_program *p, ct_scope *s, const char *what) {
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  int good = e != NULL && ok(ct_executor_run(e), what);
  if (e == NULL) failed(what);
  ct_executor_free(e);
  return good;
}

static const double *param(ct_scope *s, const char *name, int64_t *n) {
  const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, name));
  *n = ct_tensor_numel(t);
  return ct_tensor_data(t, CT_FLOAT64);
}

/* After a step: the largest |dp - ref| over the parameters into *diff; 1 when every parameter
 * equals rank 0's bit for bit, 0 when one does not, -1 after reporting a failure. */
static int compare(run *r, ct_executor *same, double *diff) {
  if (!ok(ct_executor_run(same), "broadcasting rank 0's parameters")) return -1;
  int identical = 1;
  *diff = 0;
  for (int i = 0; i < N_PARAMS; i++) {
    char r0[32];
    snprintf(r0, sizeof r0, "%s.rank0", PARAMS[i]);
    int64_t n, n0, nr;
    const double *mine = param(r->dp, PARAMS[i], &n), *theirs = param(r->dp, r0, &n0),
                 *single = param(r->ref, PARAMS[i], &nr);
    if (mine == NULL || theirs == NULL || single == NULL || n != n0 || n != nr) {
      return failed("reading the parameters"), -1;
    }
    identical &= memcmp(mine, theirs, (size_t)n * sizeof *mine) == 0;
    for (int64_t k = 0; k < n; k++) {
      double d = fabs(mine[k] - single[k]);
      if (!(d <= *diff)) *diff = d; /* NaN counts as the largest */
    }
  }
  return identical;
}

/* Trains `steps` steps; 0 when every step passed, 1 when one did not, 2 after a failure. */
static int train(run *r, int steps) {
  if (!run_program(r->init, r->dp, "initialising") ||
      !run_program(r->init, r->ref, "initialising")) {
    return 2;
  }
  ct_executor *dp = ct_executor_new(r->step_dp, r->dp, ct_cpu());
  ct_executor *ref = ct_executor_new(r->step_ref, r->ref, ct_cpu());
  ct_executor *same = ct_executor_new(r->same, r->dp, ct_cpu());
  int code = 2;
  double worst = 0;
  if (dp == NULL || ref == NULL || same == NULL) {
    failed("making the executors");
    goto done;
  }
  int64_t shard = BATCH / r->ranks;
  for (int k = 0; k < steps; k++) {
    int64_t b = (int64_t)(k % STEPS_PER_EPOCH) * BATCH, mine = b + r->rank * shard;
    if (!take_rows(r->dp, "", mine, mine + shard) || !take_rows(r->ref, "", b, b + BATCH) ||
        !ok(ct_executor_run(dp), "a data-parallel step") ||
        !ok(ct_executor_run(ref), "a single-process step")) {
      goto done;
    }
    double diff;
    int identical = compare(r, same, &diff);
    if (identical < 0) goto done;
    worst = diff > worst ? diff : worst;
    if (!identical || !(diff <= TOLERANCE)) {
      printf("rank %d, step %d: %s, largest difference from one process %.3g (limit %g)\n",
             r->rank, k + 1, identical ? "parameters identical on every rank"
                                       : "parameters differ from rank 0's",
             diff, TOLERANCE);
      code = 1;
      goto done;
    }
  }
  code = 0;
  if (r->rank == 0) {
    printf("%d steps on %d ranks: parameters identical on every rank after each step, within "
           "%.3g of one process on the whole batch (limit %g)\n", steps, r->ranks, worst,
           TOLERANCE);
  }
done:
  ct_executor_free(dp);
  ct_executor_free(ref);
  ct_executor_free(same);
  return code;
}

/* The test accuracy of the data-parallel model (every rank holds the same one). */
static double dp_accuracy(run *r) {
  if (!take_rows(r->dp, "", N_TRAIN, N_ALL) || !run_program(r->eval, r->dp, "scoring")) return -1;
  return accuracy(r->dp);
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "../shared/data/digits/digits.params";
  int steps = argc > 2 ? atoi(argv[2]) : EPOCHS * STEPS_PER_EPOCH;
  run r = {.dp = ct_scope_new(), .ref = ct_scope_new(), .init = ct_program_new(),
           .step_dp = ct_program_new(), .step_ref = ct_program_new(), .same = ct_program_new(),
           .eval = ct_program_new()};
  int code = 2;
  if (r.dp && r.ref && r.init && r.step_dp && r.step_ref && r.same && r.eval && steps > 0) {
    int built = setup(&r, path);
    code = built < 0 ? 77 : built == 0 ? 2 : train(&r, steps);
  } else {
    failed("setting up");
  }
  if (code == 0 && argc <= 2) {
    double acc = dp_accuracy(&r);
    if (r.rank == 0) printf("test accuracy %.2f%% (%d images)\n", 100 * acc, N_ALL - N_TRAIN);
    code = acc < 0 ? 2 : acc < 0.90 ? 1 : 0;
  }
  if (code == 77) printf("SKIPPED: %s\n", ct_last_error());
  ct_program_free(r.init);
  ct_program_free(r.step_dp);
  ct_program_free(r.step_ref);
  ct_program_free(r.same);
  ct_program_free(r.eval);
  ct_scope_free(r.dp);
  ct_scope_free(r.ref);
  return code;
}
