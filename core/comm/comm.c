/* SPDX-License-Identifier: Apache-2.0 */
/* core/comm/comm.c: the communicator value (ct_comm_type), MPI's start and end, and the public
 * calls of corten/comm.h. The collectives themselves are in core/comm/comm_run.c.
 *
 * MPI is initialised by corten only when the program has not done it (MPI_Initialized), and then
 * finalised by an atexit handler, after the program's own exit work, unless a communicator broke
 * (a peer died or stalled: MPI_Finalize could then wait on it forever, so the process leaves
 * without it). Each communicator is a duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN, so
 * errors come back as codes and corten's messages never match the program's own. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_state.h"
#include "common/common.h"

#ifdef CORTEN_HAVE_MPI
#include <pthread.h>

static struct {
  pthread_mutex_t mu;
  bool ours;   /* corten called MPI_Init_thread */
  bool broken; /* some communicator broke: no MPI_Finalize at exit */
} mpi_life = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void finalize_at_exit(void) {
  int done = 0;
  MPI_Finalized(&done);
  if (!done && !mpi_life.broken) MPI_Finalize();
}

void ct__comm_mark_mpi_broken(void) { mpi_life.broken = true; }

ct_status ct__mpi_fail(int err, const char *fmt, ...) {
  char what[200], text[MPI_MAX_ERROR_STRING] = "";
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  int len = 0;
  if (MPI_Error_string(err, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "code %d", err);
  return ct__error(CT_ERR_DEVICE, "%s failed: %s", what, text);
}

static const char *thread_level_name(int level) {
  return level == MPI_THREAD_SINGLE       ? "MPI_THREAD_SINGLE"
         : level == MPI_THREAD_FUNNELED   ? "MPI_THREAD_FUNNELED"
         : level == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
                                          : "MPI_THREAD_MULTIPLE";
}

/* Initialises MPI unless the program did; CT_OK when MPI is usable from any thread, one call at
 * a time (MPI_THREAD_SERIALIZED or better, whoever initialised it). */
static ct_status mpi_start(void) {
  pthread_mutex_lock(&mpi_life.mu);
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  ct_status s = CT_OK;
  if (fin) {
    s = ct__error(CT_ERR_UNSUPPORTED, "ct_comm_init_mpi: MPI was finalised already: make the "
                                      "communicators before MPI_Finalize");
  } else {
    int provided = MPI_THREAD_SINGLE, err = MPI_SUCCESS;
    if (!init) {
      err = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
      if (err == MPI_SUCCESS) {
        mpi_life.ours = true;
        atexit(finalize_at_exit);
      }
    } else {
      err = MPI_Query_thread(&provided);
    }
    if (err != MPI_SUCCESS) {
      s = ct__mpi_fail(err, "ct_comm_init_mpi: %s", init ? "MPI_Query_thread" : "MPI_Init_thread");
    } else if (provided < MPI_THREAD_SERIALIZED) {
      s = ct__error(CT_ERR_UNSUPPORTED, "ct_comm_init_mpi: MPI provides thread level %s but "
                    "corten needs MPI_THREAD_SERIALIZED (an executor may run collectives from "
                    "different threads, one at a time): initialise MPI with "
                    "MPI_Init_thread(..., MPI_THREAD_SERIALIZED, ...) or use an MPI built with "
                    "thread support", thread_level_name(provided));
    }
  }
  pthread_mutex_unlock(&mpi_life.mu);
  return s;
}

/* The duplicate of MPI_COMM_WORLD into c->mpi: MPI_Comm_idup polled to c's time limit, so a rank
 * that never calls ct_comm_init_mpi (it died, or runs something else) fails the others instead
 * of leaving them in a blocking MPI_Comm_dup. name is the variable, for the message. */
static ct_status mpi_dup(ct__comm *c, const char *what, const char *name) {
  /* MPI writes the handle when the duplicate completes: into memory that outlives a timeout. */
  MPI_Comm *dup = ct__malloc(sizeof *dup);
  if (dup == NULL) return ct__error(CT_ERR_OUT_OF_MEMORY, "%s: out of host memory", what);
  MPI_Request req = MPI_REQUEST_NULL;
  int err = MPI_Comm_idup(MPI_COMM_WORLD, dup, &req);
  int w = err == MPI_SUCCESS ? ct__mpi_wait(&req, 1, MPI_Wtime() + c->timeout, "MPI_Comm_idup")
                             : ct__mpi_fail(err, "%s: MPI_Comm_idup(MPI_COMM_WORLD)", what);
  if (w == -1) {
    ct__comm_keep_alive(dup); /* the abandoned request may still write it */
    ct__comm_mark_mpi_broken();
    return ct__error(CT_ERR_DEVICE, "%s: communicator '%s' (MPI, rank %d of %d): not every rank "
                     "arrived within %g s (the time limit; ct_comm_set_timeout before the init "
                     "sets it) to make it: a rank died, stalled or does not call %s; call it on "
                     "every rank, at the same point of the program", what, name, c->rank,
                     c->size, c->timeout, what);
  }
  if (w == CT_OK) c->mpi = *dup;
  free(dup);
  return w == CT_OK ? CT_OK : ct_last_status();
}

static ct_status mpi_comm_make(ct__comm *c, const char *what, const char *name) {
  ct_status s = mpi_start();
  if (s != CT_OK) return s;
  /* Every host buffer first: after the duplicate nothing can fail, so no rank alone ever frees
   * it (MPI_Comm_free is collective). */
  MPI_Comm_size(MPI_COMM_WORLD, &c->size);
  MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
  c->peers = ct__calloc((size_t)c->size + 1, sizeof *c->peers);
  c->reqs = ct__calloc(2 * (size_t)c->size, sizeof *c->reqs);
  if (c->peers == NULL || c->reqs == NULL) {
    free(c->peers);
    free(c->reqs);
    return ct__error(CT_ERR_OUT_OF_MEMORY, "%s: out of host memory for %d ranks", what, c->size);
  }
  s = ct__mpi_extras_open(c);
  if (s == CT_OK) {
    s = mpi_dup(c, what, name);
    if (s != CT_OK) ct__mpi_extras_close(c);
  }
  if (s != CT_OK) {
    free(c->peers);
    free(c->reqs);
    return s;
  }
  MPI_Comm_set_errhandler(c->mpi, MPI_ERRORS_RETURN);
  MPI_Comm_rank(c->mpi, &c->rank);
  MPI_Comm_size(c->mpi, &c->size);
  c->has_mpi = true;
  return CT_OK;
}

static void mpi_comm_free(ct__comm *c) {
  int fin = 0;
  MPI_Finalized(&fin);
  /* A broken communicator may have requests outstanding: its handle, buffers and reductions stay
   * (freeing them could hang or let MPI write into freed memory). */
  if (c->broken[0] == '\0') {
    if (!fin) {
      MPI_Comm_free(&c->mpi);
      ct__mpi_extras_close(c);
    }
    free(c->peers);
    free(c->reqs);
  }
}
#else
static ct_status mpi_comm_make(ct__comm *c, const char *what, const char *name) {
  (void)c, (void)what, (void)name;
  return ct__error(CT_ERR_UNSUPPORTED, "ct_comm_init_mpi: this build of corten has no MPI (CMake "
                                       "found none): install an MPI (libopenmpi-dev) and rebuild");
}
static void mpi_comm_free(ct__comm *c) { (void)c; }
#endif

static void comm_destroy(void *obj) {
  ct__comm *c = obj;
  if (c->engine == CT__ENGINE_NONE) return;
  if (c->engine == CT__ENGINE_NCCL) ct__nccl_destroy(c);
  if (c->has_mpi) mpi_comm_free(c);
}

const ct_type ct_comm_type = {.name = "ct_comm", .size = sizeof(ct__comm),
                              .align = _Alignof(ct__comm), .init = NULL, .destroy = comm_destroy};

int ct__comm_engine(const ct__comm *c) { return c ? c->engine : CT__ENGINE_NONE; }
int ct__comm_rank_of(const ct__comm *c) { return c->rank; }
int ct__comm_size_of(const ct__comm *c) { return c->size; }

const char *ct__comm_label(const ct__comm *c, const char *name, char *buf, size_t cap) {
  snprintf(buf, cap, "communicator '%s' (%s, rank %d of %d)", name,
           c->engine == CT__ENGINE_NCCL ? "NCCL" : "MPI", c->rank, c->size);
  return buf;
}

/* Checks that v may hold a communicator (empty, or holding one); the error naming `what`. */
static ct_status comm_check(const ct_var *v, const char *what) {
  if (v == NULL) return ct__error(CT_ERR_INVALID_ARGUMENT, "%s: the variable is NULL", what);
  if (ct_var_type(v) != NULL && ct_var_type(v) != &ct_comm_type) {
    return ct__error(CT_ERR_TYPE_MISMATCH, "%s: variable '%s' holds %s, not a communicator",
                     what, ct_var_name(v), ct_var_type(v)->name);
  }
  return CT_OK;
}

/* Takes v's slot first (creating an empty communicator when v is empty), then makes the new
 * communicator aside with make() and swaps it in at the end, destroying the old one: a failure
 * leaves v as it was, and no rank frees a collective handle alone on an error path. */
static ct_status comm_install(ct_var *v, const char *what, int device,
                              ct_status (*make)(ct__comm *, const char *, const char *, int)) {
  ct_status s = comm_check(v, what);
  if (s != CT_OK) return s;
  bool was_empty = ct_var_type(v) == NULL;
  ct__comm *c = ct_var_get_mutable(v, &ct_comm_type);
  if (c == NULL) return ct_last_status();
  ct__comm fresh;
  memset(&fresh, 0, sizeof fresh);
  /* A limit set before the init (on an uninitialised communicator) bounds the init too. */
  fresh.timeout = c->engine == CT__ENGINE_NONE && c->timeout > 0 ? c->timeout
                                                                  : CT_COMM_DEFAULT_TIMEOUT;
  s = make(&fresh, what, ct_var_name(v), device);
  if (s != CT_OK) {
    if (was_empty) ct_var_clear(v); /* an uninitialised communicator: nothing to free */
    return s;
  }
  ct__comm old = *c;
  *c = fresh;
  comm_destroy(&old);
  return CT_OK;
}

static ct_status make_mpi(ct__comm *c, const char *what, const char *name, int device) {
  (void)device;
  ct_status s = mpi_comm_make(c, what, name);
  if (s == CT_OK) c->engine = CT__ENGINE_MPI;
  return s;
}

static ct_status make_nccl(ct__comm *c, const char *what, const char *name, int device) {
  ct_status s = mpi_comm_make(c, what, name);
  if (s != CT_OK) return s;
  s = ct__nccl_init(c, device);
  if (s != CT_OK) { /* every rank fails here alike, or the duplicate is broken and kept */
    mpi_comm_free(c);
    return s;
  }
  c->engine = CT__ENGINE_NCCL;
  return CT_OK;
}

ct_status ct_comm_init_mpi(ct_var *v) { return comm_install(v, "ct_comm_init_mpi", 0, make_mpi); }

ct_status ct_comm_init_nccl(ct_var *v, int device) {
  return comm_install(v, "ct_comm_init_nccl", device, make_nccl);
}

/* The initialised communicator v holds, or NULL (nothing recorded). */
static const ct__comm *comm_peek(const ct_var *v) {
  if (v == NULL || ct_var_type(v) != &ct_comm_type) return NULL;
  const ct__comm *c = ct_var_get(v, &ct_comm_type);
  return c != NULL && c->engine != CT__ENGINE_NONE ? c : NULL;
}

int ct_comm_rank(const ct_var *v) {
  const ct__comm *c = comm_peek(v);
  return c ? c->rank : -1;
}

int ct_comm_size(const ct_var *v) {
  const ct__comm *c = comm_peek(v);
  return c ? c->size : -1;
}

double ct_comm_timeout(const ct_var *v) {
  if (v == NULL || ct_var_type(v) != &ct_comm_type) return 0.0;
  const ct__comm *c = ct_var_get(v, &ct_comm_type);
  return c != NULL ? c->timeout : 0.0; /* 0 when nothing was set on an uninitialised one */
}

bool ct_comm_broken(const ct_var *v) {
  const ct__comm *c = comm_peek(v);
  return c != NULL && c->broken[0] != '\0';
}

ct_status ct_comm_set_timeout(ct_var *v, double seconds) {
  if (!(seconds > 0) || !isfinite(seconds)) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_comm_set_timeout: %g seconds: give a finite "
                                              "time > 0", seconds);
  }
  ct_status s = comm_check(v, "ct_comm_set_timeout");
  if (s != CT_OK) return s;
  /* On an empty variable: an uninitialised communicator whose init waits that long. */
  ct__comm *c = ct_var_get_mutable(v, &ct_comm_type);
  if (c == NULL) return ct_last_status();
  c->timeout = seconds;
  return CT_OK;
}

#ifndef CORTEN_HAVE_CUDA
ct_status ct__nccl_init(ct__comm *c, int device) {
  (void)c, (void)device;
  return ct__error(CT_ERR_UNSUPPORTED, "ct_comm_init_nccl: this build of corten has no CUDA");
}
ct_status ct__nccl_run(ct__comm *c, const ct__coll *a, double deadline) {
  (void)c, (void)deadline;
  return ct__error(CT_ERR_UNSUPPORTED, "%s: this build of corten has no CUDA", a->op);
}
void ct__nccl_destroy(ct__comm *c) { (void)c; }
#endif
