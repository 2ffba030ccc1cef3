/* SPDX-License-Identifier: Apache-2.0 */
/* core/comm/comm_state.h: the communicator's fields, shared by core/comm/comm.c (the value and
 * its life), core/comm/comm_run.c (the collectives over MPI) and core/cuda/nccl.c (NCCL). */
#ifndef CORTEN_CORE_COMM_STATE_H
#define CORTEN_CORE_COMM_STATE_H

#include <stdarg.h>
#include <stdio.h>

#include "comm/comm_impl.h"
#include "common/alloc.h"
#include "common/common.h"

#ifdef CORTEN_HAVE_MPI
#include <mpi.h>
#endif

/* What each rank sends its peers before a collective: the op and its operand, so that ranks
 * that disagree fail before any data moves. Plain integers: the same layout on every rank. */
typedef struct ct__coll_header {
  int64_t seq; /* the communicator's count of collectives: ranks out of step disagree */
  int32_t kind, dtype, root, rank;
  int64_t dims[CT_MAX_RANK];
} ct__coll_header;

/* What one rank sends each peer: its header and, when X is small (CT__COMM_INLINE_BYTES at
 * most, the same on every rank that agrees), X itself, so a small collective is one round of
 * messages and each rank finishes it locally (comm_run.c). */
enum { CT__COMM_INLINE_BYTES = 1024 };
typedef struct ct__coll_slot {
  ct__coll_header h;
  unsigned char data[CT__COMM_INLINE_BYTES];
} ct__coll_slot;

struct ct__comm {
  int engine; /* CT__ENGINE_*; NONE until initialised */
  int rank, size;
  double timeout;   /* seconds */
  int64_t seq;      /* collectives run so far */
  char broken[320]; /* the failure that broke it; empty while usable */
  bool has_mpi;
#ifdef CORTEN_HAVE_MPI
  MPI_Comm mpi;
  ct__coll_slot *peers; /* size + 1 entries: what each rank sent (this rank's own at its
                         * rank), then a spare one that carries NCCL's id and readiness at init
                         * (core/cuda/nccl.c) */
  MPI_Request *reqs;    /* 2 x size: the header exchange's receives and sends */
  bool has_tune;        /* tune holds OpenMPI's control of MPI_Iallreduce's algorithm */
  MPI_T_cvar_handle tune;
  MPI_Op half_ops[4];   /* sum and max of float16, then of bfloat16 (comm_mpi.c) */
#endif
  void *nccl; /* the NCCL engine's state (core/cuda/nccl.c) */
};

#ifdef CORTEN_HAVE_MPI
/* Records CT_ERR_DEVICE as "<what> failed: <MPI's text for err>"; returns it. */
ct_status ct__mpi_fail(int err, const char *fmt, ...) CT__COLD CT__PRINTF(2, 3);

/* No MPI_Finalize at exit: a communicator broke, and its peers may never answer. */
void ct__comm_mark_mpi_broken(void);

/* Waits for n requests until the deadline (MPI_Wtime), polling them with MPI_Testany (spinning
 * first, then yielding the core); a completed request becomes MPI_REQUEST_NULL. CT_OK when all
 * completed; CT_ERR_DEVICE when MPI reported an error (recorded, naming what); -1 (nothing
 * recorded) at the deadline. */
int ct__mpi_wait(MPI_Request *reqs, int n, double deadline, const char *what);

/* The MPI engine's transfers (core/comm/comm_mpi.c). */
/* Checks what MPI can carry for a on c (an arithmetic dtype, or a combine function for the
 * halves; counts that fit an int). */
ct_status ct__mpi_check(const ct__comm *c, const ct__coll *a);
/* Starts a's transfer as one nonblocking MPI collective. */
int ct__mpi_start(ct__comm *c, const ct__coll *a, MPI_Request *req);
/* What the MPI engine holds beside the duplicate: the float16 and bfloat16 reductions and
 * OpenMPI's control of MPI_Iallreduce's algorithm, where the MPI has it. Made at the
 * communicator's start (CT_OK or the failure recorded) and freed at its end (comm.c). */
ct_status ct__mpi_extras_open(ct__comm *c);
void ct__mpi_extras_close(ct__comm *c);

/* Keeps p (NULL allowed) allocated and reachable until exit: an abandoned MPI request may
 * still write it. */
void ct__comm_keep_alive(void *p);
#endif

#endif /* CORTEN_CORE_COMM_STATE_H */
