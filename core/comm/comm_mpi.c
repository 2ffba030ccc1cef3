/* SPDX-License-Identifier: Apache-2.0 */
/* core/comm/comm_mpi.c: the MPI engine's transfers: which MPI datatype and reduction carry each
 * dtype, the nonblocking collective that moves a large tensor, and the polled wait.
 *
 * float16 and bfloat16 have no arithmetic in MPI: they are reduced with user-defined
 * commutative MPI_Ops (one per dtype and reduction, made with the communicator) that call the
 * op layer's arithmetic (ct__coll.combine: float32 sums rounded as corten's kernels round).
 *
 * The algorithm: OpenMPI runs MPI_Iallreduce in libnbc, which on fewer than 4 ranks picks a
 * binomial tree (the sum travels to rank 0 and back: twice the data in series) where the
 * blocking MPI_Allreduce halves the vector and exchanges halves. For a vector from 64 KiB to
 * below 16 MiB the engine asks libnbc for that halving algorithm (Rabenseifner's:
 * reduce-scatter, then allgather) through MPI's tool interface (control variable
 * coll_libnbc_iallreduce_algorithm, set for the one call and put back), unless the program
 * chose an algorithm itself. From 16 MiB the binomial tree measured faster than the blocking
 * call already (docs/performance.md), and under load faster than the halving one. An MPI
 * without that variable is left to its own choice. */
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "comm/comm_state.h"

#ifdef CORTEN_HAVE_MPI
enum {
  NBC_RABENSEIFNER = 3,        /* libnbc's number for reduce-scatter + allgather */
  NBC_FROM_BYTES = 64 * 1024,  /* below, libnbc's own choice already matches */
  NBC_BELOW_BYTES = 16 << 20,  /* from here libnbc's binomial tree measured fast enough */
};
static const double SPIN_SECONDS = 1e-3; /* polls without yielding the core, then yields */

int ct__mpi_wait(MPI_Request *reqs, int n, double deadline, const char *what) {
  double spin_until = 0;
  bool swept = false; /* past the deadline, one more round of progress ran */
  for (;;) {
    /* MPI_Testany runs MPI's progress once when nothing completed, and turns a completed
     * request into MPI_REQUEST_NULL, so the missing peers can be named. */
    int idx = MPI_UNDEFINED, done = 0;
    int err = MPI_Testany(n, reqs, &idx, &done, MPI_STATUS_IGNORE);
    if (err != MPI_SUCCESS) return ct__mpi_fail(err, "%s", what);
    if (done && idx == MPI_UNDEFINED) return CT_OK; /* no request left */
    if (done) continue;
    double now = MPI_Wtime();
    if (spin_until == 0) spin_until = now + SPIN_SECONDS;
    if (now > deadline) {
      /* One more progress round first: a request that finished since the last test is then
       * collected, so the caller names only the peers that really are missing. */
      if (swept) return -1;
      swept = true;
      continue;
    }
    if (now > spin_until) sched_yield(); /* lets a peer sharing the core run */
  }
}

/* The op layer's arithmetic, for the half MPI_Ops (MPI calls them without a context). */
static _Atomic(ct__coll_combine) half_combine;

#define CT__HALF_OP(fn, dtype, is_max)                                          \
  static void fn(void *in, void *inout, int *len, MPI_Datatype *t) {            \
    (void)t;                                                                    \
    ct__coll_combine f = atomic_load(&half_combine);                            \
    if (f != NULL) f(inout, in, *len, dtype, is_max);                           \
  }
CT__HALF_OP(sum_f16, CT_FLOAT16, false)
CT__HALF_OP(max_f16, CT_FLOAT16, true)
CT__HALF_OP(sum_bf16, CT_BFLOAT16, false)
CT__HALF_OP(max_bf16, CT_BFLOAT16, true)
#undef CT__HALF_OP

ct_status ct__mpi_extras_open(ct__comm *c) {
  MPI_User_function *const fns[4] = {sum_f16, max_f16, sum_bf16, max_bf16};
  for (int i = 0; i < 4; i++) c->half_ops[i] = MPI_OP_NULL;
  for (int i = 0; i < 4; i++) {
    int err = MPI_Op_create(fns[i], 1, &c->half_ops[i]);
    if (err != MPI_SUCCESS) {
      ct__mpi_extras_close(c);
      return ct__mpi_fail(err, "ct_comm_init_mpi: MPI_Op_create (float16 and bfloat16 sums)");
    }
  }
  /* The tool interface is optional: without it (or the variable) nothing changes. */
  int provided = 0, idx = -1, count = 0;
  c->has_tune = false;
  if (MPI_T_init_thread(MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) return CT_OK;
  if (MPI_T_cvar_get_index("coll_libnbc_iallreduce_algorithm", &idx) == MPI_SUCCESS &&
      MPI_T_cvar_handle_alloc(idx, NULL, &c->tune, &count) == MPI_SUCCESS) {
    c->has_tune = count == 1;
    if (!c->has_tune) MPI_T_cvar_handle_free(&c->tune);
  }
  if (!c->has_tune) MPI_T_finalize();
  return CT_OK;
}

void ct__mpi_extras_close(ct__comm *c) {
  for (int i = 0; i < 4; i++) {
    if (c->half_ops[i] != MPI_OP_NULL) MPI_Op_free(&c->half_ops[i]);
  }
  if (c->has_tune) {
    MPI_T_cvar_handle_free(&c->tune);
    MPI_T_finalize();
    c->has_tune = false;
  }
}

/* The MPI datatype of t for a reduction, or MPI_DATATYPE_NULL (no arithmetic on it in MPI). */
static MPI_Datatype mpi_arith_type(ct_dtype t) {
  switch (t) {
  case CT_INT8: return MPI_INT8_T;
  case CT_UINT8: return MPI_UINT8_T;
  case CT_INT16: return MPI_INT16_T;
  case CT_INT32: return MPI_INT32_T;
  case CT_INT64: return MPI_INT64_T;
  case CT_UINT16: return MPI_UINT16_T;
  case CT_UINT32: return MPI_UINT32_T;
  case CT_UINT64: return MPI_UINT64_T;
  case CT_FLOAT32: return MPI_FLOAT;
  case CT_FLOAT64: return MPI_DOUBLE;
  case CT_FLOAT16:
  case CT_BFLOAT16: return MPI_UINT16_T; /* with the half MPI_Ops */
  default: return MPI_DATATYPE_NULL;
  }
}

static bool reduces(ct__coll_kind k) {
  return k != CT__COLL_BROADCAST && k != CT__COLL_ALLGATHER;
}

/* The reduction of a: MPI's own, or the half MPI_Op of the dtype. */
static MPI_Op reduction(const ct__comm *c, const ct__coll *a) {
  bool max = a->kind == CT__COLL_ALLREDUCE_MAX;
  ct_dtype t = a->x->dtype;
  if (t != CT_FLOAT16 && t != CT_BFLOAT16) return max ? MPI_MAX : MPI_SUM;
  atomic_store(&half_combine, a->combine);
  return c->half_ops[(t == CT_BFLOAT16 ? 2 : 0) + (max ? 1 : 0)];
}

/* MPI_Iallreduce, asking OpenMPI's libnbc for the halving algorithm on a large vector. */
static int iallreduce(ct__comm *c, const void *in, void *out, int n, MPI_Datatype t, MPI_Op op,
                      size_t bytes, MPI_Request *req) {
  int before = -1, want = NBC_RABENSEIFNER;
  bool set = c->has_tune && bytes >= NBC_FROM_BYTES && bytes < NBC_BELOW_BYTES &&
             MPI_T_cvar_read(c->tune, &before) == MPI_SUCCESS && before == 0 &&
             MPI_T_cvar_write(c->tune, &want) == MPI_SUCCESS;
  int err = MPI_Iallreduce(in, out, n, t, op, c->mpi, req);
  if (set) MPI_T_cvar_write(c->tune, &before); /* the choice is made: the program's again */
  return err;
}

int ct__mpi_start(ct__comm *c, const ct__coll *a, MPI_Request *req) {
  const ct_tensor *x = a->x;
  void *in = ct__tensor_ptr(x), *out = ct__tensor_ptr(a->out);
  size_t bytes = (size_t)x->numel * ct_dtype_size(x->dtype);
  MPI_Datatype t = reduces(a->kind) ? mpi_arith_type(x->dtype) : MPI_BYTE;
  int n = (int)(reduces(a->kind) ? x->numel : (int64_t)bytes);
  switch (a->kind) {
  case CT__COLL_ALLREDUCE_SUM:
  case CT__COLL_ALLREDUCE_MAX: return iallreduce(c, in, out, n, t, reduction(c, a), bytes, req);
  case CT__COLL_BROADCAST:
    if (c->rank == a->root) memcpy(out, in, bytes);
    return MPI_Ibcast(out, n, t, a->root, c->mpi, req);
  case CT__COLL_ALLGATHER: return MPI_Iallgather(in, n, t, out, n, t, c->mpi, req);
  case CT__COLL_REDUCESCATTER:
    return MPI_Ireduce_scatter_block(in, out, n / c->size, t, reduction(c, a), c->mpi, req);
  case CT__COLL_REDUCE_SUM:
    if (c->rank != a->root) memset(out, 0, bytes);
    return MPI_Ireduce(in, c->rank == a->root ? out : NULL, n, t, reduction(c, a), a->root,
                       c->mpi, req);
  }
  return MPI_ERR_OP;
}

ct_status ct__mpi_check(const ct__comm *c, const ct__coll *a) {
  char label[CT__COMM_LABEL_CAP];
  bool arith = mpi_arith_type(a->x->dtype) != MPI_DATATYPE_NULL && a->combine != NULL;
  if (reduces(a->kind) && !arith) {
    return ct__error(CT_ERR_UNSUPPORTED, "%s: %s: the MPI engine has no arithmetic on %s: cast X "
                                         "'%s' to a number type", a->op,
                     ct__comm_label(c, a->name, label, sizeof label),
                     ct_dtype_name(a->x->dtype), a->x_name);
  }
  int64_t count = a->x->numel * (reduces(a->kind) ? 1 : (int64_t)ct_dtype_size(a->x->dtype));
  if (count > INT32_MAX) {
    return ct__error(CT_ERR_OUT_OF_RANGE, "%s: %s: %lld elements exceed MPI's int count: split "
                                          "the tensor", a->op,
                     ct__comm_label(c, a->name, label, sizeof label), (long long)count);
  }
  return CT_OK;
}
#endif
