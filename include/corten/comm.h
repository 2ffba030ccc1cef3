/* SPDX-License-Identifier: Apache-2.0 */
/* corten/comm.h: communicators, the groups of processes (ranks) that the collective ops
 * c_allreduce_sum, c_allreduce_max, c_broadcast and c_allgather run over.
 *
 * A communicator is a value held in a variable (ct_comm_type), like a tensor; the ops name that
 * variable in their attribute `comm`. Two engines carry the data, never a transport of corten's
 * own: MPI for host tensors (ct_comm_init_mpi, over MPI_COMM_WORLD) and NCCL for CUDA tensors
 * (ct_comm_init_nccl, one GPU per rank; NCCL is loaded with dlopen on first use). Every rank
 * runs the same ops in the same order (docs/design/collectives.md).
 *
 * MPI: corten initialises MPI (MPI_Init_thread, MPI_THREAD_SERIALIZED asked) only when the
 * program has not (MPI_Initialized), and then finalises it at exit, never otherwise; a program
 * that initialised MPI itself finalises it itself, after freeing its communicators. corten needs
 * MPI_THREAD_SERIALIZED or better (an executor may run collectives from different threads, one
 * at a time): a program that initialises MPI must ask for it (MPI_Init_thread), and
 * ct_comm_init_mpi refuses a lower level, naming it.
 *
 * Failure: a collective waits for its peers at most the communicator's time limit
 * (CT_COMM_DEFAULT_TIMEOUT, or ct_comm_set_timeout), then fails with CT_ERR_DEVICE naming the
 * op, the communicator and the ranks that did not arrive, instead of hanging. A communicator
 * that timed out mid-transfer is broken: every later op on it fails at once (make a new one).
 * Ranks that disagree on an op's dtype or dims fail it on every rank, naming both (the
 * communicator stays usable). Ranks out of step (one skipped a collective, so every later one
 * would disagree: at one turn the ranks run different collectives, or the same one with
 * different roots) fail with CT_ERR_INVALID_ARGUMENT and break the communicator, on every rank
 * that sees the disagreement.
 *
 * Thread-safety: one thread at a time runs collectives, whichever communicators (corten asks
 * MPI for MPI_THREAD_SERIALIZED); the ops of one rank are ordered. */
#ifndef CORTEN_COMM_H
#define CORTEN_COMM_H

#include <stdbool.h>

#include <corten/export.h>
#include <corten/status.h>
#include <corten/variable.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A variable may hold a communicator. A fresh one (ct_var_get_mutable) is not initialised: the
 * ops refuse it until ct_comm_init_mpi or ct_comm_init_nccl. Clearing or freeing the variable
 * frees the communicator (MPI_Comm_free / ncclCommDestroy). */
CT_API extern const ct_type ct_comm_type;

/* Seconds a collective waits for its peers unless ct_comm_set_timeout says otherwise. */
#define CT_COMM_DEFAULT_TIMEOUT 120.0

/* Makes v hold a communicator over MPI_COMM_WORLD (a duplicate of it, with MPI_ERRORS_RETURN, so
 * corten's traffic never mixes with the program's). Collective: every rank calls it. Replaces a
 * communicator v held before.
 * Errors (v unchanged):
 *   CT_ERR_INVALID_ARGUMENT  v is NULL
 *   CT_ERR_TYPE_MISMATCH     v holds something other than a communicator
 *   CT_ERR_UNSUPPORTED       this build has no MPI (CMake found none), MPI was finalised, or
 *                            it provides less than MPI_THREAD_SERIALIZED (the message names
 *                            the level needed and the one provided)
 *   CT_ERR_DEVICE            MPI failed to initialise or to duplicate the communicator, or
 *                            not every rank called it within the time limit (the message
 *                            names the variable and the limit; ct_comm_set_timeout sets it)
 *   CT_ERR_OUT_OF_MEMORY     no host memory */
CT_API ct_status ct_comm_init_mpi(ct_var *v);

/* Makes v hold an NCCL communicator over the MPI ranks, this rank on CUDA device `device`: rank
 * 0 makes the unique id and MPI carries it to the others. Collective: every rank takes part in
 * the id's exchange and a vote on readiness, whatever failed on it, so a rank that cannot set
 * up (no such device, no NCCL) makes every rank fail instead of leaving them waiting in NCCL's
 * init; a peer that does not arrive within the time limit fails it with CT_ERR_DEVICE. NCCL (libnccl.so.2) is
 * loaded with dlopen, from the library path or the CUDA toolkit corten was built with.
 * Errors (v unchanged): those of ct_comm_init_mpi, and
 *   CT_ERR_UNSUPPORTED       this build has no CUDA, or NCCL cannot be loaded (the message
 *                            says why)
 *   CT_ERR_DEVICE            no such device, or NCCL failed (its text) */
CT_API ct_status ct_comm_init_nccl(ct_var *v, int device);

/* This process's rank in v's communicator, and the number of ranks; -1 when v holds no
 * initialised communicator. Nothing is recorded. */
CT_API int ct_comm_rank(const ct_var *v);
CT_API int ct_comm_size(const ct_var *v);

/* Sets how long each collective on v's communicator waits for its peers, in seconds (> 0). Set
 * on a variable before ct_comm_init_mpi / ct_comm_init_nccl (an empty one then holds an
 * uninitialised communicator), it also bounds the init, which waits for every rank to arrive
 * (CT_COMM_DEFAULT_TIMEOUT otherwise), and the communicator keeps it.
 * Errors: CT_ERR_INVALID_ARGUMENT (seconds not > 0, or not finite, or v NULL),
 * CT_ERR_TYPE_MISMATCH (v holds something else). */
CT_API ct_status ct_comm_set_timeout(ct_var *v, double seconds);

/* v's time limit in seconds; 0 when v holds no communicator, or an uninitialised one on which
 * no limit was set. */
CT_API double ct_comm_timeout(const ct_var *v);

/* Whether v's communicator is broken (a collective on it timed out, failed in the engine, or
 * found the ranks out of step). */
CT_API bool ct_comm_broken(const ct_var *v);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_COMM_H */
