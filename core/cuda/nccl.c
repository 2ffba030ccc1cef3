/* SPDX-License-Identifier: Apache-2.0 */
/* core/cuda/nccl.c: the NCCL engine of the collectives, for CUDA tensors.
 *
 * NCCL is loaded with dlopen on the first ct_comm_init_nccl (by its soname, then from the toolkit
 * corten was built with), never linked: libcorten needs only the driver. The communicator keeps
 * its MPI duplicate beside the NCCL one: MPI carries the unique id at init and every
 * collective's header exchange (core/comm/comm_run.c), so ranks that disagree fail before any
 * kernel is queued. Each NCCL communicator owns a stream: the collective waits there for the
 * work queued on the caller's current stream, and the current stream waits for the collective,
 * so the ops stay in order. The host polls the completion event and ncclCommGetAsyncError until
 * the deadline; at the deadline it aborts the NCCL communicator (ncclCommAbort), which stops the
 * kernels, so Out is left holding no memory, X's and Out's blocks are released as usual (nothing
 * touches them after the abort), and the communicator is broken.
 *
 * Init never leaves a rank waiting for one that gave up: every rank, whatever failed on it,
 * takes part in the id's broadcast and a vote on readiness (both nonblocking, polled to the time
 * limit) before NCCL's init, which runs only when every rank is ready. Where the loaded NCCL has
 * ncclCommInitRankConfig (2.14 on), that init is nonblocking too (config.blocking = 0), polled
 * with ncclCommGetAsyncError to the same deadline and aborted (ncclCommAbort) past it, so a peer
 * that dies between the vote and the init fails the others instead of leaving them in NCCL's
 * bootstrap. A nonblocking communicator may answer a collective with ncclInProgress (still
 * being queued): the engine then polls until it is queued before recording its event. Its
 * destroy finalises it (ncclCommFinalize, polled to the time limit, then ncclCommDestroy) and
 * aborts it past the limit, so a rank whose peers never finalise is not held forever. */
#include "comm/comm_state.h"

#if defined(CORTEN_HAVE_MPI)
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* nccl.h declares a few functions with () instead of (void). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "cuda/cuda_impl.h"

#ifndef CORTEN_NCCL_SONAME
#define CORTEN_NCCL_SONAME "libnccl.so.2"
#endif

typedef ncclResult_t (*nccl_get_id_fn)(ncclUniqueId *);
typedef ncclResult_t (*nccl_init_rank_fn)(ncclComm_t *, int, ncclUniqueId, int);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
#define CT__NCCL_CONFIG 1 /* this nccl.h has ncclConfig_t and ncclCommInitRankConfig */
typedef ncclResult_t (*nccl_init_config_fn)(ncclComm_t *, int, ncclUniqueId, int,
                                            ncclConfig_t *);
#endif
typedef ncclResult_t (*nccl_comm_fn)(ncclComm_t);
typedef ncclResult_t (*nccl_async_fn)(ncclComm_t, ncclResult_t *);
typedef const char *(*nccl_string_fn)(ncclResult_t);
typedef ncclResult_t (*nccl_allreduce_fn)(const void *, void *, size_t, ncclDataType_t,
                                          ncclRedOp_t, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*nccl_reduce_fn)(const void *, void *, size_t, ncclDataType_t,
                                       ncclRedOp_t, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*nccl_bcast_fn)(const void *, void *, size_t, ncclDataType_t, int,
                                      ncclComm_t, cudaStream_t);
typedef ncclResult_t (*nccl_allgather_fn)(const void *, void *, size_t, ncclDataType_t,
                                          ncclComm_t, cudaStream_t);

static struct {
  pthread_once_t once;
  void *lib;
  char error[256];
  nccl_get_id_fn get_id;
  nccl_init_rank_fn init_rank;
#ifdef CT__NCCL_CONFIG
  nccl_init_config_fn init_config; /* NULL when the loaded NCCL predates it (blocking init) */
#endif
  nccl_comm_fn destroy, abort;
  nccl_comm_fn finalize; /* NULL when the loaded NCCL predates it (2.14): destroy alone */
  nccl_async_fn async_error;
  nccl_string_fn string;
  nccl_allreduce_fn allreduce, reduce_scatter;
  nccl_reduce_fn reduce;
  nccl_bcast_fn bcast;
  nccl_allgather_fn allgather;
} nccl = {.once = PTHREAD_ONCE_INIT};

static void *sym(const char *name) {
  void *p = dlsym(nccl.lib, name);
  if (p == NULL && nccl.error[0] == '\0') {
    snprintf(nccl.error, sizeof nccl.error, "%s has no %s", CORTEN_NCCL_SONAME, name);
  }
  return p;
}

static void nccl_load(void) {
  nccl.lib = dlopen(CORTEN_NCCL_SONAME, RTLD_NOW | RTLD_LOCAL);
#ifdef CORTEN_NCCL_DIR
  if (nccl.lib == NULL) {
    nccl.lib = dlopen(CORTEN_NCCL_DIR "/" CORTEN_NCCL_SONAME, RTLD_NOW | RTLD_LOCAL);
  }
#endif
  if (nccl.lib == NULL) {
    const char *why = dlerror();
    snprintf(nccl.error, sizeof nccl.error, "cannot load %s (%s): install NCCL or add its "
             "directory to LD_LIBRARY_PATH", CORTEN_NCCL_SONAME, why ? why : "not found");
    return;
  }
  /* ISO C has no cast from void * to a function pointer; memcpy carries the address. */
#define CT__NCCL_SYM(field, name)            \
  do {                                       \
    void *p_ = sym(name);                    \
    memcpy(&nccl.field, &p_, sizeof p_);     \
  } while (0)
  CT__NCCL_SYM(get_id, "ncclGetUniqueId");
  CT__NCCL_SYM(init_rank, "ncclCommInitRank");
  CT__NCCL_SYM(destroy, "ncclCommDestroy");
  CT__NCCL_SYM(abort, "ncclCommAbort");
  CT__NCCL_SYM(async_error, "ncclCommGetAsyncError");
  CT__NCCL_SYM(string, "ncclGetErrorString");
  CT__NCCL_SYM(allreduce, "ncclAllReduce");
  CT__NCCL_SYM(reduce_scatter, "ncclReduceScatter");
  CT__NCCL_SYM(reduce, "ncclReduce");
  CT__NCCL_SYM(bcast, "ncclBroadcast");
  CT__NCCL_SYM(allgather, "ncclAllGather");
#undef CT__NCCL_SYM
#ifdef CT__NCCL_CONFIG
  void *cfg = dlsym(nccl.lib, "ncclCommInitRankConfig"); /* optional */
  memcpy(&nccl.init_config, &cfg, sizeof cfg);
#endif
  void *fin = dlsym(nccl.lib, "ncclCommFinalize"); /* optional */
  memcpy(&nccl.finalize, &fin, sizeof fin);
  if (nccl.error[0] != '\0') {
    dlclose(nccl.lib);
    nccl.lib = NULL;
  }
}

/* The engine's state behind ct__comm.nccl. */
typedef struct nccl_state {
  ncclComm_t comm;
  bool nonblocking; /* made by ncclCommInitRankConfig with config.blocking = 0 */
  bool ended;       /* comm was aborted (a failed collective) or destroyed: it is gone */
  int device;
  cudaStream_t stream;
  cudaEvent_t ready, done;
} nccl_state;

static ct_status nccl_fail(ncclResult_t r, const char *what) {
  return ct__error(CT_ERR_DEVICE, "%s failed: %s", what, nccl.string ? nccl.string(r) : "NCCL");
}

static void state_free(nccl_state *st) {
  if (st->done) cudaEventDestroy(st->done);
  if (st->ready) cudaEventDestroy(st->ready);
  if (st->stream) cudaStreamDestroy(st->stream);
  free(st);
}

/* What the ranks exchange at init: rank 0's unique id, then each rank's readiness and their
 * minimum. It lives in the spare entry at the end of c->peers (comm_state.h), which a
 * rank that gives up at the deadline keeps alive with the rest of the broken communicator. */
typedef struct nccl_hello {
  ncclUniqueId id;
  int ready, all_ready;
} nccl_hello;
_Static_assert(sizeof(nccl_hello) <= sizeof(ct__coll_slot),
               "nccl_hello must fit the spare entry of ct__comm.peers");

/* This rank's own part of the init: NCCL loaded, the device, the stream and events, and on rank
 * 0 the unique id. The state into *out, or the failure recorded. */
static ct_status nccl_local(const ct__comm *c, int device, nccl_state **out, ncclUniqueId *id) {
  *out = NULL;
  pthread_once(&nccl.once, nccl_load);
  if (nccl.lib == NULL) return ct__error(CT_ERR_UNSUPPORTED, "ct_comm_init_nccl: %s", nccl.error);
  ct__cuda_guard g;
  if (ct__cuda_guard_enter(&g, device) != CT_OK) return ct_last_status();
  nccl_state *st = ct__calloc(1, sizeof *st);
  ct_status s = CT_OK;
  if (st == NULL) {
    s = ct__error(CT_ERR_OUT_OF_MEMORY, "ct_comm_init_nccl: out of host memory");
  } else {
    st->device = device;
    cudaError_t e = cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&st->ready, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&st->done, cudaEventDisableTiming);
    if (e != cudaSuccess) {
      s = ct__cuda_fail(e, device, "ct_comm_init_nccl: making the communicator's stream");
    }
  }
  ncclResult_t r = s == CT_OK && c->rank == 0 ? nccl.get_id(id) : ncclSuccess;
  if (r != ncclSuccess) s = nccl_fail(r, "ct_comm_init_nccl: ncclGetUniqueId");
  if (s != CT_OK && st != NULL) state_free(st);
  if (s == CT_OK) *out = st;
  ct__cuda_guard_exit(&g);
  return s;
}

static void state_release(nccl_state *st) {
  ct__cuda_guard g;
  if (st == NULL || ct__cuda_guard_enter(&g, st->device) != CT_OK) return;
  state_free(st);
  ct__cuda_guard_exit(&g);
}

/* The clocks of deadlines: MPI's for init and the collectives (ct__comm_run's deadline), a
 * monotonic one for the destroy, which may run after MPI_Finalize. */
static double mpi_clock(void) { return MPI_Wtime(); }

static double mono_clock(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Every rank takes part in the id's broadcast and in the vote on readiness, whatever failed on
 * it before (a rank that left early would leave the others in ncclCommInitRank forever), all
 * polled to the communicator's deadline. ncclCommInitRank runs only when every rank is ready;
 * otherwise every rank fails, and the MPI duplicate is freed on all of them (comm.c). */
/* Polls a nonblocking NCCL call's outcome (r: what the call returned) until it is no longer
 * ncclInProgress or the deadline (on the clock now_fn reads) passes (ncclInProgress then). */
static ncclResult_t nccl_settle(ncclComm_t comm, ncclResult_t r, double deadline,
                                double (*now_fn)(void)) {
  double spin_until = now_fn() + 1e-3;
  while (r == ncclInProgress) {
    double now = now_fn();
    if (now > deadline) return ncclInProgress;
    if (now > spin_until) sched_yield();
    if (nccl.async_error(comm, &r) != ncclSuccess) return ncclSystemError;
  }
  return r;
}

/* NCCL's init of st->comm: nonblocking where the loaded NCCL can, polled to the deadline. */
static ncclResult_t nccl_init_rank(const ct__comm *c, nccl_state *st, ncclUniqueId id,
                                   double deadline) {
#ifdef CT__NCCL_CONFIG
  if (nccl.init_config != NULL) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t r = nccl.init_config(&st->comm, c->size, id, c->rank, &config);
    st->nonblocking = true;
    return r == ncclSuccess || r == ncclInProgress
               ? nccl_settle(st->comm, ncclInProgress, deadline, mpi_clock)
               : r;
  }
#endif
  (void)deadline;
  return nccl.init_rank(&st->comm, c->size, id, c->rank);
}

ct_status ct__nccl_init(ct__comm *c, int device) {
  double deadline = MPI_Wtime() + c->timeout;
  nccl_hello *h = (nccl_hello *)(void *)&c->peers[c->size];
  memset(h, 0, sizeof *h);
  nccl_state *st = NULL;
  ct_status s = nccl_local(c, device, &st, &h->id);
  char why[300] = "";
  if (s != CT_OK) snprintf(why, sizeof why, "%s", ct_last_error());
  h->ready = s == CT_OK;
  MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  int err = MPI_Ibcast(&h->id, (int)sizeof h->id, MPI_BYTE, 0, c->mpi, &req[0]);
  if (err == MPI_SUCCESS) {
    err = MPI_Iallreduce(&h->ready, &h->all_ready, 1, MPI_INT, MPI_MIN, c->mpi, &req[1]);
  }
  int w = err == MPI_SUCCESS
              ? ct__mpi_wait(req, 2, deadline, "ct_comm_init_nccl: the NCCL id")
              : ct__mpi_fail(err, "ct_comm_init_nccl: sending the NCCL id (rank %d of %d)",
                             c->rank, c->size);
  if (w != CT_OK) {
    state_release(st);
    if (w == -1) {
      ct__error(CT_ERR_DEVICE, "ct_comm_init_nccl: rank %d of %d: not every rank arrived "
                               "within %g s (the time limit) to share NCCL's id: a peer died, "
                               "stalled or does not call ct_comm_init_nccl",
                c->rank, c->size, c->timeout);
    }
    /* Requests may be left on h: the MPI duplicate and its buffers are kept, never freed. */
    return ct__comm_break(c, CT_ERR_DEVICE, NULL, CT__LEFT_UNTOUCHED);
  }
  if (!h->all_ready) {
    state_release(st);
    if (s != CT_OK) return ct__error(s, "%s", why);
    return ct__error(CT_ERR_DEVICE, "ct_comm_init_nccl: rank %d of %d was ready but another "
                                    "rank could not set up NCCL (its own error says why): no "
                                    "communicator was made", c->rank, c->size);
  }
  ct__cuda_guard g;
  if (ct__cuda_guard_enter(&g, device) != CT_OK) { /* it just worked in nccl_local */
    state_release(st);
    return ct_last_status();
  }
  ncclResult_t r = nccl_init_rank(c, st, h->id, deadline);
  if (r == ncclSuccess) {
    c->nccl = st;
    ct__cuda_guard_exit(&g);
    return CT_OK;
  }
  if (r == ncclInProgress) { /* a peer died or stalled after the vote */
    nccl.abort(st->comm);
    state_free(st);
    ct__cuda_guard_exit(&g);
    ct__error(CT_ERR_DEVICE, "ct_comm_init_nccl: rank %d of %d: NCCL's init did not complete "
                             "within %g s (the time limit, ct_comm_set_timeout) although every "
                             "rank had voted ready: a peer died or stalled; the NCCL "
                             "communicator is aborted", c->rank, c->size, c->timeout);
    /* The peers may be gone: the MPI duplicate is kept, never freed (MPI_Comm_free). */
    return ct__comm_break(c, CT_ERR_DEVICE, NULL, CT__LEFT_UNTOUCHED);
  }
#ifdef CT__NCCL_CONFIG
  /* A failed nonblocking init leaves a communicator to abort. */
  if (nccl.init_config != NULL && st->comm != NULL) nccl.abort(st->comm);
#endif
  s = nccl_fail(r, "ct_comm_init_nccl: NCCL's init (ncclCommInitRank)");
  state_free(st);
  ct__cuda_guard_exit(&g);
  return s;
}

/* Ends st->comm. A healthy nonblocking communicator is finalised (ncclCommFinalize: it flushes
 * what the peers still exchange with this rank, a step every rank takes), polled with
 * ncclCommGetAsyncError to the communicator's time limit, then freed (ncclCommDestroy); past the
 * limit, or when the finalise fails, it is aborted (ncclCommAbort: local, never waits on a peer).
 * A blocking one (an NCCL before 2.14), or an NCCL without ncclCommFinalize, gets
 * ncclCommDestroy alone, as NCCL documents for those. A broken communicator's peers may be gone:
 * it is aborted, unless a failed collective did that already. The caller holds the device. */
static void nccl_end(nccl_state *st, bool broken, double timeout) {
  if (st->ended) return;
  if (broken) {
    nccl.abort(st->comm);
  } else if (st->nonblocking && nccl.finalize != NULL) {
    ncclResult_t r = nccl.finalize(st->comm);
    if (r == ncclSuccess || r == ncclInProgress) {
      r = nccl_settle(st->comm, ncclInProgress, mono_clock() + timeout, mono_clock);
    }
    if (r == ncclSuccess) {
      nccl.destroy(st->comm);
    } else {
      nccl.abort(st->comm);
    }
  } else {
    nccl.destroy(st->comm);
  }
  st->ended = true;
}

void ct__nccl_destroy(ct__comm *c) {
  nccl_state *st = c->nccl;
  if (st == NULL) return;
  ct__cuda_guard g;
  if (ct__cuda_guard_enter(&g, st->device) != CT_OK) return;
  nccl_end(st, c->broken[0] != '\0', c->timeout);
  state_free(st);
  c->nccl = NULL;
  ct__cuda_guard_exit(&g);
}

static bool nccl_type(ct_dtype t, ncclDataType_t *out) {
  switch (t) {
  case CT_INT8: *out = ncclInt8; return true;
  case CT_UINT8: *out = ncclUint8; return true;
  case CT_INT32: *out = ncclInt32; return true;
  case CT_INT64: *out = ncclInt64; return true;
  case CT_UINT32: *out = ncclUint32; return true;
  case CT_UINT64: *out = ncclUint64; return true;
  case CT_FLOAT16: *out = ncclFloat16; return true;
  case CT_BFLOAT16: *out = ncclBfloat16; return true;
  case CT_FLOAT32: *out = ncclFloat32; return true;
  case CT_FLOAT64: *out = ncclFloat64; return true;
  default: return false;
  }
}

static ncclResult_t nccl_start(const ct__comm *c, const nccl_state *st, const ct__coll *a,
                               ncclDataType_t t, size_t count) {
  const void *in = ct__tensor_ptr(a->x);
  void *out = ct__tensor_ptr(a->out);
  switch (a->kind) {
  case CT__COLL_ALLREDUCE_SUM:
    return nccl.allreduce(in, out, count, t, ncclSum, st->comm, st->stream);
  case CT__COLL_ALLREDUCE_MAX:
    return nccl.allreduce(in, out, count, t, ncclMax, st->comm, st->stream);
  case CT__COLL_BROADCAST: return nccl.bcast(in, out, count, t, a->root, st->comm, st->stream);
  case CT__COLL_ALLGATHER: return nccl.allgather(in, out, count, t, st->comm, st->stream);
  case CT__COLL_REDUCESCATTER:
    return nccl.reduce_scatter(in, out, count / (size_t)c->size, t, ncclSum, st->comm, st->stream);
  case CT__COLL_REDUCE_SUM:
    if (c->rank != a->root &&
        cudaMemsetAsync(out, 0, count * ct_dtype_size(a->x->dtype), st->stream) != cudaSuccess) {
      return ncclUnhandledCudaError;
    }
    return nccl.reduce(in, out, count, t, ncclSum, a->root, st->comm, st->stream);
  }
  return ncclInvalidArgument;
}

/* Polls the completion event and NCCL's async error until the deadline: CT_OK, or the failure
 * recorded (-1 for the deadline, nothing recorded). */
static int nccl_wait(const nccl_state *st, double deadline) {
  double spin_until = MPI_Wtime() + 1e-3;
  for (;;) {
    cudaError_t e = cudaEventQuery(st->done);
    if (e == cudaSuccess) return CT_OK;
    if (e != cudaErrorNotReady) return ct__cuda_fail(e, st->device, "the NCCL transfer");
    ncclResult_t ar = ncclSuccess;
    nccl.async_error(st->comm, &ar);
    if (ar != ncclSuccess && ar != ncclInProgress) return nccl_fail(ar, "the NCCL transfer");
    double now = MPI_Wtime();
    if (now > deadline) return -1;
    if (now > spin_until) sched_yield();
  }
}

ct_status ct__nccl_run(ct__comm *c, const ct__coll *a, double deadline) {
  char label[CT__COMM_LABEL_CAP];
  ct__comm_label(c, a->name, label, sizeof label);
  nccl_state *st = c->nccl;
  ncclDataType_t t = ncclUint8;
  size_t count = (size_t)a->x->numel;
  bool moves = a->kind == CT__COLL_BROADCAST || a->kind == CT__COLL_ALLGATHER;
  if (!nccl_type(a->x->dtype, &t)) {
    if (!moves) {
      return ct__error(CT_ERR_UNSUPPORTED, "%s: %s: NCCL has no arithmetic on %s: cast X '%s' "
                                           "to float32", a->op, label, ct_dtype_name(a->x->dtype),
                       a->x_name);
    }
    t = ncclUint8;
    count *= ct_dtype_size(a->x->dtype);
  }
  ct_status s = ct__comm_check_peers(c, a, deadline);
  if (s != CT_OK) return s;
  ct__cuda_guard g;
  if (ct__cuda_guard_enter(&g, st->device) != CT_OK) return ct_last_status();
  cudaStream_t caller = ct__cuda_stream(st->device);
  cudaError_t e = cudaEventRecord(st->ready, caller);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(st->stream, st->ready, 0);
  if (e != cudaSuccess) {
    ct__cuda_guard_exit(&g);
    return ct__cuda_fail(e, st->device, "%s: %s: ordering the NCCL stream", a->op, label);
  }
  /* A nonblocking communicator may still be queueing the collective: the event must follow it. */
  ncclResult_t r = nccl_settle(st->comm, nccl_start(c, st, a, t, count), deadline, mpi_clock);
  int w = r == ncclInProgress ? -1 : r != ncclSuccess ? nccl_fail(r, "starting the NCCL transfer")
                                                      : CT_OK;
  bool ordered = false; /* the caller's stream waits for the collective */
  if (w == CT_OK) {
    e = cudaEventRecord(st->done, st->stream);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(caller, st->done, 0);
    ordered = e == cudaSuccess;
    w = e == cudaSuccess ? nccl_wait(st, deadline)
                         : ct__cuda_fail(e, st->device, "ordering the caller's stream");
  }
  if (w == CT_OK) {
    ct__cuda_guard_exit(&g);
    return CT_OK;
  }
  if (w == -1) {
    ct__error(CT_ERR_DEVICE, "%s: %s: the NCCL transfer did not complete within %g s (the "
                             "communicator's time limit): a peer died or stalled; the "
                             "communicator is aborted and Out holds no memory now", a->op, label,
              c->timeout);
  } else {
    char copy[300];
    snprintf(copy, sizeof copy, "%s", ct_last_error());
    ct__error(CT_ERR_DEVICE, "%s: %s: %s; the communicator is aborted and Out holds no memory "
                             "now", a->op, label, copy);
  }
  nccl.abort(st->comm); /* stops the kernels: nothing reads X or writes Out after this */
  st->ended = true;
  ct__cuda_guard_exit(&g);
  /* X's and Out's blocks go back to the caller stream's pool, whose later work waits for the
   * (aborted) collective; only when that ordering failed to be set up are they kept. */
  return ct__comm_break(c, CT_ERR_DEVICE, a, ordered ? CT__LEFT_STOPPED : CT__LEFT_RUNNING);
}
#else
ct_status ct__nccl_init(ct__comm *c, int device) {
  (void)c, (void)device;
  return ct__error(CT_ERR_UNSUPPORTED, "ct_comm_init_nccl: this build of corten has no MPI, "
                                       "which carries NCCL's unique id: install an MPI and "
                                       "rebuild");
}
ct_status ct__nccl_run(ct__comm *c, const ct__coll *a, double deadline) {
  (void)c, (void)deadline;
  return ct__error(CT_ERR_UNSUPPORTED, "%s: this build of corten has no MPI", a->op);
}
void ct__nccl_destroy(ct__comm *c) { (void)c; }
#endif
