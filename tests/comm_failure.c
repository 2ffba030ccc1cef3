/* SPDX-License-Identifier: Apache-2.0 */
/* tests/comm_failure.c: a rank that never arrives, or dies, makes the others fail within the
 * communicator's time limit, with an error naming the op, the communicator and the rank; run
 * under mpirun by tests/run_comm_failure.sh, which counts the "PASS" lines (a process that
 * broke a communicator leaves without MPI_Finalize, so mpirun's own exit code says nothing).
 *
 *   comm_failure late    the last rank starts its collective twice the limit late: the others
 *                        fail in the header exchange naming it, their in-place X left as it
 *                        was; the late rank then fails mid-transfer, its Out holding no memory
 *   comm_failure killed  the last rank kills itself after one good collective (mpirun
 *                        --enable-recovery keeps the others alive): the others fail naming it
 *   comm_failure noinit  the last rank calls ct_comm_init_mpi twice the limit late: the others'
 *                        init fails within the limit (set before it) naming the communicator
 *                        and the fix, leaving the variable uninitialised; then the late rank's
 *                        fails alike, its peers gone
 *   comm_failure late_small  as late, for an X small enough to travel with the header exchange
 *                        (256 bytes): the others fail naming the late rank; the late rank, whose
 *                        header they never take, fails naming them; each rank's in-place X (odd
 *                        ranks) or out-of-place Out (even ranks) left as it was
 * Each rank that saw what it should prints "PASS rank R: ..."; anything else prints "FAIL". */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include <corten/corten.h>

static const double LIMIT = 1.0; /* seconds */
static int fail(int rank, const char *what) {
  printf("FAIL rank %d: %s: %s\n", rank, what, ct_last_error());
  return 1;
}

static ct_op *allreduce(const char *x, const char *out) {
  ct_op *op = ct_op_new("c_allreduce_sum");
  if (op == NULL || ct_op_set_input(op, "X", x) != CT_OK ||
      ct_op_set_output(op, "Out", out) != CT_OK ||
      ct_op_set_attr_string(op, "comm", "grads") != CT_OK) {
    ct_op_free(op);
    return NULL;
  }
  return op;
}

/* Runs op and checks that it returns (ctest's TIMEOUT guards against a hang; no timing here)
 * with CT_ERR_DEVICE and a message holding each of need (NULL-terminated). */
static int fails_with(ct_op *op, ct_scope *s, int rank, const char *const *need) {
  if (ct_op_run(op, s, ct_cpu()) != CT_ERR_DEVICE) {
    return fail(rank, "the collective did not fail with CT_ERR_DEVICE");
  }
  for (; *need != NULL; need++) {
    if (strstr(ct_last_error(), *need) == NULL) {
      printf("FAIL rank %d: '%s' not in: %s\n", rank, *need, ct_last_error());
      return 1;
    }
  }
  printf("PASS rank %d: %s\n", rank, ct_last_error());
  return 0;
}

static void nap(double seconds) {
  struct timespec t = {.tv_sec = (time_t)seconds};
  nanosleep(&t, NULL);
}

/* noinit: MPI is up on every rank (the program's own MPI_Init_thread), but the last rank comes
 * to ct_comm_init_mpi late. */
static int run_noinit(ct_scope *s) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ct_var *comm = ct_scope_var(s, "grads");
  if (ct_comm_set_timeout(comm, LIMIT) != CT_OK) return fail(rank, "ct_comm_set_timeout");
  if (rank == size - 1) nap(2 * LIMIT);
  if (ct_comm_init_mpi(comm) != CT_ERR_DEVICE) return fail(rank, "ct_comm_init_mpi did not fail");
  const char *need[] = {"ct_comm_init_mpi", "communicator 'grads'", "not every rank arrived",
                        "ct_comm_set_timeout", "call it on every rank", NULL};
  for (const char *const *w = need; *w != NULL; w++) {
    if (strstr(ct_last_error(), *w) == NULL) {
      printf("FAIL rank %d: '%s' not in: %s\n", rank, *w, ct_last_error());
      return 1;
    }
  }
  if (ct_comm_rank(comm) != -1) return fail(rank, "the variable holds a communicator");
  printf("PASS rank %d: %s\n", rank, ct_last_error());
  return 0;
}

/* Whether variable name in s holds the n float32 values want. */
static bool holds(ct_scope *s, const char *name, const float *want, size_t n) {
  const float *got = ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(s, name)), CT_FLOAT32);
  return got != NULL && memcmp(got, want, n * sizeof *got) == 0;
}

/* late_small: X of 64 float32 values, i % 7 + rank, then 10 more each for the failing round.
 * Each rank's message (header and X, 352 bytes) is past the inline size of OpenMPI's shared
 * memory (256 bytes), so its send completes only when the peer takes it: the on-time ranks,
 * which gave up (and then nap, alive but out of MPI), never take the late rank's. */
enum { SMALL = 64 };
static int run_late_small(ct_scope *s, ct_var *comm, ct_op *op, ct_op *op_out) {
  int rank = ct_comm_rank(comm), size = ct_comm_size(comm), last = size - 1;
  float x[SMALL], sum[SMALL];
  for (int i = 0; i < SMALL; i++) {
    x[i] = (float)(i % 7 + rank);
    sum[i] = (float)(size * (i % 7) + size * (size - 1) / 2);
  }
  ct_tensor *xt = ct_var_tensor(ct_scope_var(s, "x"));
  if (ct_tensor_set_value(xt, x, CT_DIMS(SMALL), CT_FLOAT32, ct_cpu()) != CT_OK ||
      ct_op_run(op_out, s, ct_cpu()) != CT_OK || !holds(s, "out", sum, SMALL)) {
    return fail(rank, "the first collective");
  }
  for (int i = 0; i < SMALL; i++) x[i] += 10.0f;
  if (ct_tensor_set_value(xt, x, CT_DIMS(SMALL), CT_FLOAT32, ct_cpu()) != CT_OK) {
    return fail(rank, "setting X");
  }
  char who[64] = "";
  bool in_place = rank % 2 == 1;
  if (rank == last) { /* every peer's part reached it, but they never take its own */
    for (int r = 0; r < last; r++) {
      size_t n = strlen(who);
      snprintf(who + n, sizeof who - n, "%s%d", r ? ", " : "rank(s) ", r);
    }
    strncat(who, " sent their part but did not take this rank's", sizeof who - strlen(who) - 1);
    nap(2 * LIMIT);
  } else {
    snprintf(who, sizeof who, "rank(s) %d did not arrive", last);
  }
  const char *need[] = {"c_allreduce_sum", "communicator 'grads'", who, NULL};
  int bad = fails_with(in_place ? op : op_out, s, rank, need);
  if (!bad && !holds(s, "x", x, SMALL)) bad = fail(rank, "X changed");
  if (!bad && !in_place && !holds(s, "out", sum, SMALL)) bad = fail(rank, "Out changed");
  if (!bad && !ct_comm_broken(comm)) bad = fail(rank, "the communicator is not broken");
  if (rank != last) nap(2 * LIMIT); /* alive while the late rank waits for them */
  return bad;
}

static int run(ct_scope *s, const char *mode) {
  if (strcmp(mode, "noinit") == 0) return run_noinit(s);
  ct_var *comm = ct_scope_var(s, "grads");
  if (ct_comm_init_mpi(comm) != CT_OK) return fail(-1, "ct_comm_init_mpi");
  int rank = ct_comm_rank(comm), size = ct_comm_size(comm), last = size - 1;
  ct_comm_set_timeout(comm, LIMIT);
  if (strcmp(mode, "late_small") == 0) {
    ct_op *op = allreduce("x", "x"), *op_out = allreduce("x", "out");
    int bad = op == NULL || op_out == NULL ? fail(rank, "making the ops")
                                           : run_late_small(s, comm, op, op_out);
    ct_op_free(op);
    ct_op_free(op_out);
    return bad;
  }
  /* 4 KiB: past what travels with the header exchange, so a transfer follows it (a small X
   * would reach the late rank with its peers' headers, before they gave up). */
  float x[1024];
  for (int i = 0; i < 1024; i++) x[i] = (float)(i % 7);
  ct_op *op = allreduce("x", "x"), *op_out = allreduce("x", "out");
  if (op == NULL || op_out == NULL ||
      ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, "x")), x, CT_DIMS(1024), CT_FLOAT32,
                          ct_cpu()) != CT_OK ||
      ct_op_run(op_out, s, ct_cpu()) != CT_OK) {
    ct_op_free(op);
    ct_op_free(op_out);
    return fail(rank, "setting up");
  }
  char who[64];
  snprintf(who, sizeof who, "rank(s) %d did not arrive", last);
  const char *need[] = {"c_allreduce_sum", "communicator 'grads'", who, NULL};
  int bad = 0;
  if (rank == last && strcmp(mode, "killed") == 0) {
    fflush(stdout);
    raise(SIGKILL);
  } else if (rank == last) { /* late: arrives when the others gave up */
    nap(2 * LIMIT);
    const char *mid[] = {"c_allreduce_sum", "communicator 'grads'", "mid-transfer", NULL};
    bad = fails_with(op_out, s, rank, mid);
    if (!bad && ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(s, "out")), CT_FLOAT32)) {
      bad = fail(rank, "Out still holds memory after a failed transfer");
    }
  } else {
    bad = fails_with(op, s, rank, need);
    const float *after = ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(s, "x")), CT_FLOAT32);
    if (!bad && (after == NULL || memcmp(after, x, sizeof x) != 0)) {
      bad = fail(rank, "the in-place X changed");
    }
    if (!bad && (!ct_comm_broken(comm) || ct_op_run(op, s, ct_cpu()) != CT_ERR_DEVICE ||
                 strstr(ct_last_error(), "broken") == NULL)) {
      bad = fail(rank, "the communicator is not broken");
    }
  }
  ct_op_free(op);
  ct_op_free(op_out);
  return bad;
}

int main(int argc, char **argv) {
  if (argc != 2 || (strcmp(argv[1], "late") != 0 && strcmp(argv[1], "killed") != 0 &&
                    strcmp(argv[1], "noinit") != 0 && strcmp(argv[1], "late_small") != 0)) {
    fprintf(stderr, "usage: comm_failure late|killed|noinit|late_small\n");
    return 2;
  }
  int provided = 0; /* noinit: MPI must be up before ct_comm_init_mpi, which comes late */
  if (strcmp(argv[1], "noinit") == 0) {
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  }
  ct_scope *s = ct_scope_new();
  int bad = s == NULL ? fail(-1, "ct_scope_new") : run(s, argv[1]);
  ct_scope_free(s);
  fflush(stdout);
  return bad;
}
