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

struct ct__comm {
  int engine; /* CT__ENGINE_*; NONE until initialised */
  int rank, size;
  double timeout;   /* seconds */
  int64_t seq;      /* collectives run so far */
  char broken[320]; /* the failure that broke it; empty while usable */
  bool has_mpi;
#ifdef CORTEN_HAVE_MPI
  MPI_Comm mpi;
  ct__coll_header *peers; /* size + 2 entries: the headers received, then two spare ones that
                           * carry NCCL's id and readiness at init (core/cuda/nccl.c) */
  MPI_Request *reqs;      /* 2 x size: the header exchange's receives and sends */
#endif
  void *nccl; /* the NCCL engine's state (core/cuda/nccl.c) */
};

#ifdef CORTEN_HAVE_MPI
/* Records CT_ERR_DEVICE as "<what> failed: <MPI's text for err>"; returns it. */
ct_status ct__mpi_fail(int err, const char *fmt, ...) CT__COLD CT__PRINTF(2, 3);

/* No MPI_Finalize at exit: a communicator broke, and its peers may never answer. */
void ct__comm_mark_mpi_broken(void);

/* Waits for n requests until the deadline (MPI_Wtime), polling each with MPI_Test (spinning
 * first, then yielding the core). CT_OK when all completed; CT_ERR_DEVICE when MPI reported an
 * error (recorded, naming what); -1 (nothing recorded) at the deadline. */
int ct__mpi_wait(MPI_Request *reqs, int n, double deadline, const char *what);

/* Keeps p (NULL allowed) allocated and reachable until exit: an abandoned MPI request may
 * still write it. */
void ct__comm_keep_alive(void *p);
#endif

#endif /* CORTEN_CORE_COMM_STATE_H */
