/* SPDX-License-Identifier: Apache-2.0 */
/* core/comm/comm_impl.h: the communicator behind ct_comm_type and the collectives' engine calls
 * that the op layer's kernels make (ops/cpu/comm.c over MPI, ops/cuda/comm.c over NCCL).
 *
 * Without MPI at build time (no CORTEN_HAVE_MPI) the same calls exist and fail with
 * CT_ERR_UNSUPPORTED, so the op layer never tests the build. */
#ifndef CORTEN_CORE_COMM_IMPL_H
#define CORTEN_CORE_COMM_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include <corten/comm.h>

#include "tensor/tensor_impl.h"

/* The collectives, as the engines run them. */
typedef enum ct__coll_kind {
  CT__COLL_ALLREDUCE_SUM = 1,
  CT__COLL_ALLREDUCE_MAX,
  CT__COLL_BROADCAST,     /* root's X to every Out */
  CT__COLL_ALLGATHER,     /* every X, rank after rank along dim 0, into every Out */
  CT__COLL_REDUCESCATTER, /* sum of X, slice `rank` of dim 0 into Out (allgather's gradient) */
  CT__COLL_REDUCE_SUM,    /* sum of X into root's Out; zeros elsewhere (broadcast's gradient) */
} ct__coll_kind;

enum { CT__ENGINE_NONE = 0, CT__ENGINE_MPI = 1, CT__ENGINE_NCCL = 2 };

typedef struct ct__comm ct__comm;

/* acc[i] = acc[i] + x[i] (max: the larger) for n elements of dtype t: the op layer's arithmetic
 * (ops/cpu/comm.c), so that the MPI engine reduces float16 and bfloat16 (in float32, rounded as
 * corten's kernels round) and finishes small collectives itself. */
typedef void (*ct__coll_combine)(void *acc, const void *x, int64_t n, ct_dtype t, bool max);

/* One collective call: the op's label and the communicator variable's name, for messages; X
 * and Out (Out already allocated to its inferred dims and X's dtype; it never shares X's
 * block, the framework sees to that); root for broadcast and reduce. */
typedef struct ct__coll {
  ct__coll_kind kind;
  const char *op;   /* "op 'c_allreduce_sum'" */
  const char *name; /* the variable holding the communicator */
  const char *x_name; /* the variable holding X */
  const ct_tensor *x;
  ct_tensor *out;
  int root;
  ct__coll_combine combine; /* the MPI engine's arithmetic; NULL for NCCL */
} ct__coll;

/* The engine of v's communicator (CT__ENGINE_NONE when v holds none, or an uninitialised one),
 * its rank and size. */
int ct__comm_engine(const ct__comm *c);
int ct__comm_rank_of(const ct__comm *c);
int ct__comm_size_of(const ct__comm *c);

/* Runs a collective on the communicator: the header exchange (every rank checks that the
 * others run the same op on the same dtype and dims; CT_ERR_TYPE_MISMATCH or CT_ERR_SHAPE
 * naming both otherwise; a rank out of step, one that skipped a collective, breaks the
 * communicator), then the transfer, waiting at most the time limit. On a timeout or an
 * engine error the communicator is broken, the buffers the engine may still touch are kept
 * alive, and Out, when the transfer had begun, is left holding no memory (marked invalid). */
ct_status ct__comm_run(ct__comm *c, const ct__coll *a);

/* ---- Shared by the engines (core/comm/comm.c, core/cuda/nccl.c) --------------------------- */

/* Exchanges the header of a over c's MPI communicator with every peer; CT_OK when every rank
 * runs the same collective on the same dtype and dims before the deadline (MPI_Wtime). */
ct_status ct__comm_check_peers(ct__comm *c, const ct__coll *a, double deadline);

/* What a broken collective leaves of X and Out (ct__comm_break). */
typedef enum ct__coll_left {
  CT__LEFT_UNTOUCHED, /* no transfer began: X and Out are left alone */
  CT__LEFT_RUNNING,   /* the engine may still read X and write Out (MPI cannot cancel): both
                       * blocks are kept alive for the rest of the process, Out holds no memory */
  CT__LEFT_STOPPED,   /* the engine was stopped (ncclCommAbort returned): Out holds no memory,
                       * nothing is kept */
} ct__coll_left;

/* Marks c broken with the message just recorded (the first failure is kept); what X and Out
 * become is `left` (a may be NULL with CT__LEFT_UNTOUCHED). Returns s. */
ct_status ct__comm_break(ct__comm *c, ct_status s, const ct__coll *a, ct__coll_left left);

/* "communicator 'grads' (MPI, rank 1 of 4)" into buf, for messages. */
const char *ct__comm_label(const ct__comm *c, const char *name, char *buf, size_t cap);
#define CT__COMM_LABEL_CAP 160

/* The NCCL engine (core/cuda/nccl.c; the stub refuses without CUDA). */
ct_status ct__nccl_init(ct__comm *c, int device);
ct_status ct__nccl_run(ct__comm *c, const ct__coll *a, double deadline);
void ct__nccl_destroy(ct__comm *c);

#endif /* CORTEN_CORE_COMM_IMPL_H */
