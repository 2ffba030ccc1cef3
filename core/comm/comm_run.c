/* SPDX-License-Identifier: Apache-2.0 */
/* core/comm/comm_run.c: running a collective: the header exchange that checks the peers agree,
 * the transfer over MPI's nonblocking collectives (or NCCL's, core/cuda/nccl.c), the wait with a
 * deadline, and what a failure leaves behind.
 *
 * No blocking MPI call is made: a blocking MPI_Allreduce waits forever for a peer that died.
 * The header exchange is point to point (each rank sends its header to every peer and
 * receives theirs), so a rank that never arrives is named by the ranks that waited for it. A
 * small X (CT__COMM_INLINE_BYTES at most) travels in the same messages and every rank finishes
 * the collective itself, in rank order: one round of messages in all. A larger one then moves
 * in one nonblocking MPI collective (MPI_Iallreduce ..., core/comm/comm_mpi.c), polled until it
 * completes or the communicator's time limit passes. MPI cannot cancel a started collective:
 * after a timeout the engine may still read X and write Out if the peer turns up, so both blocks
 * are kept alive (on a list reachable until exit), the communicator is broken, and Out is left
 * holding no memory (an in-place op gets its input back from the framework). */
#include <stdlib.h>
#include <string.h>

#include "comm/comm_state.h"

/* The collectives' names in the ops, for messages. */
static const char *const coll_names[] = {
    [CT__COLL_ALLREDUCE_SUM] = "c_allreduce_sum", [CT__COLL_ALLREDUCE_MAX] = "c_allreduce_max",
    [CT__COLL_BROADCAST] = "c_broadcast",         [CT__COLL_ALLGATHER] = "c_allgather",
    [CT__COLL_REDUCESCATTER] = "c_reducescatter", [CT__COLL_REDUCE_SUM] = "c_reduce_sum",
};

static const char *coll_name(int32_t kind) {
  return kind >= CT__COLL_ALLREDUCE_SUM && kind <= CT__COLL_REDUCE_SUM ? coll_names[kind] : "?";
}

#ifdef CORTEN_HAVE_MPI
#include <pthread.h>

/* The communicator's label for a message, into the caller's `label`. */
#define LABEL() ct__comm_label(c, a->name, label, sizeof label)

/* Memory an abandoned transfer may still touch (tensor blocks, a broken communicator's header
 * buffers): held until exit, reachable from here. Never freed: MPI may write it any time. */
static struct {
  pthread_mutex_t mu;
  void **v;
  size_t n, cap;
} orphans = {.mu = PTHREAD_MUTEX_INITIALIZER};

void ct__comm_keep_alive(void *p) {
  if (p == NULL) return;
  pthread_mutex_lock(&orphans.mu);
  if (orphans.n == orphans.cap) {
    size_t cap = orphans.cap ? 2 * orphans.cap : 8;
    void **v = ct__realloc(orphans.v, cap * sizeof *v);
    if (v != NULL) {
      orphans.v = v;
      orphans.cap = cap;
    }
  }
  if (orphans.n < orphans.cap) orphans.v[orphans.n++] = p; /* else: unreachable, still alive */
  pthread_mutex_unlock(&orphans.mu);
}

static void keep_block(ct__block *b) {
  if (b == NULL) return;
  ct__block_retain(b);
  ct__comm_keep_alive(b);
}

static void header_of(const ct__comm *c, const ct__coll *a, ct__coll_header *h) {
  memset(h, 0, sizeof *h);
  h->seq = c->seq;
  h->kind = a->kind;
  h->dtype = a->x->dtype;
  h->root = a->root;
  h->rank = a->x->dims.rank;
  for (int i = 0; i < a->x->dims.rank; i++) h->dims[i] = a->x->dims.d[i];
}

static const char *header_str(const ct__coll_header *h, char *buf, size_t cap) {
  ct_ddim d = {.rank = h->rank >= 0 && h->rank <= CT_MAX_RANK ? h->rank : 0};
  for (int i = 0; i < d.rank; i++) d.d[i] = h->dims[i];
  char dims[CT__DDIM_STR_CAP];
  snprintf(buf, cap, "%s of %s %s", coll_name(h->kind), ct_dtype_name((ct_dtype)h->dtype),
           ct_ddim_str(d, dims, sizeof dims));
  if (h->kind == CT__COLL_BROADCAST || h->kind == CT__COLL_REDUCE_SUM) {
    size_t n = strlen(buf);
    snprintf(buf + n, cap - n, " (root %d)", (int)h->root);
  }
  return buf;
}

/* The ranks whose receive (sends false) or send (true) in the header exchange did not
 * complete, "1, 3" into buf; empty when all did. */
static const char *pending_ranks(const ct__comm *c, bool sends, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = '\0';
  for (int r = 0; r < c->size && n + 16 < cap; r++) {
    if (r == c->rank || c->reqs[(sends ? c->size : 0) + r] == MPI_REQUEST_NULL) continue;
    n += (size_t)snprintf(buf + n, cap - n, "%s%d", n ? ", " : "", r);
  }
  return buf;
}

/* Sends this rank's header, followed by X's first `inline_bytes` bytes (0: the header alone), to
 * every peer and receives theirs into c->peers; CT_OK when every rank runs the same collective on
 * the same dtype and dims before the deadline. */
static ct_status exchange(ct__comm *c, const ct__coll *a, double deadline, size_t inline_bytes) {
  char label[CT__COMM_LABEL_CAP]; /* filled only for a message: snprintf costs on every call */
  /* This rank's slot lives beside the received ones: a send a dead peer never takes must not
   * point into a stack frame or a tensor that is gone. */
  ct__coll_slot *me = &c->peers[c->rank];
  const ct__coll_header *mine = &me->h;
  header_of(c, a, &me->h);
  if (inline_bytes > 0) memcpy(me->data, ct__tensor_ptr(a->x), inline_bytes);
  int len = (int)(sizeof me->h + inline_bytes);
  const int tag = 0x63740; /* corten's header exchange, on corten's own duplicate */
  for (int r = 0; r < c->size; r++) {
    c->reqs[r] = c->reqs[c->size + r] = MPI_REQUEST_NULL;
    if (r == c->rank) continue;
    int e1 = MPI_Irecv(&c->peers[r], (int)sizeof *me, MPI_BYTE, r, tag, c->mpi, &c->reqs[r]);
    int e2 = MPI_Isend(me, len, MPI_BYTE, r, tag, c->mpi, &c->reqs[c->size + r]);
    if (e1 != MPI_SUCCESS || e2 != MPI_SUCCESS) {
      ct__mpi_fail(e1 != MPI_SUCCESS ? e1 : e2, "%s: %s: the header exchange with rank %d", a->op,
                   LABEL(), r);
      return ct__comm_break(c, CT_ERR_DEVICE, a, CT__LEFT_UNTOUCHED);
    }
  }
  int w = ct__mpi_wait(c->reqs, 2 * c->size, deadline, "the header exchange");
  if (w == -1) {
    char who[256];
    if (pending_ranks(c, false, who, sizeof who)[0] != '\0') {
      ct__error(CT_ERR_DEVICE, "%s: %s: rank(s) %s did not arrive within %g s (the "
                               "communicator's time limit, ct_comm_set_timeout): a peer died, "
                               "stalled or runs other ops; the communicator is now broken",
                a->op, LABEL(), who, c->timeout);
    } else {
      /* Every peer's part came, but some did not take this rank's: a transport may complete a
       * send only when the peer receives it (OpenMPI's shared memory past its inline size), and
       * a peer that gave up on this collective before this rank arrived never does. */
      ct__error(CT_ERR_DEVICE, "%s: %s: rank(s) %s sent their part but did not take this "
                               "rank's within %g s (the communicator's time limit, "
                               "ct_comm_set_timeout): they gave up on this collective before "
                               "this rank arrived, died or stalled; the communicator is now "
                               "broken", a->op, LABEL(), pending_ranks(c, true, who, sizeof who),
                c->timeout);
    }
    return ct__comm_break(c, CT_ERR_DEVICE, a, CT__LEFT_UNTOUCHED);
  }
  if (w != CT_OK) {
    char copy[300];
    snprintf(copy, sizeof copy, "%s", ct_last_error());
    ct__error(CT_ERR_DEVICE, "%s: %s: %s", a->op, LABEL(), copy);
    return ct__comm_break(c, CT_ERR_DEVICE, a, CT__LEFT_UNTOUCHED);
  }
  c->seq++;
  for (int r = 0; r < c->size; r++) {
    const ct__coll_header *h = &c->peers[r].h;
    if (r == c->rank || memcmp(h, mine, sizeof *mine) == 0) continue;
    char x[CT__DDIM_STR_CAP + 64], y[CT__DDIM_STR_CAP + 64];
    /* Another count of collectives, or another collective at this turn (a rank skipped one:
     * its next call meets the skipped one's peers), can never agree again. */
    bool out_of_step = h->seq != mine->seq || h->kind != mine->kind || h->root != mine->root;
    ct_status s = out_of_step ? CT_ERR_INVALID_ARGUMENT
                  : h->dtype != mine->dtype ? CT_ERR_TYPE_MISMATCH
                                           : CT_ERR_SHAPE;
    ct__error(s, "%s: %s: this rank runs %s (collective #%lld) but rank %d runs %s (collective "
                 "#%lld): every rank must run the same ops on the same dtypes and dims, in the "
                 "same order%s", a->op, LABEL(), header_str(mine, x, sizeof x),
              (long long)mine->seq, r, header_str(h, y, sizeof y), (long long)h->seq,
              out_of_step ? "; the ranks are out of step (one skipped a collective or ran "
                            "another), so every later one would disagree: the communicator is "
                            "now broken" : "");
    /* Out of step, the ranks can never agree again: break rather than fail every call alike. */
    return out_of_step ? ct__comm_break(c, s, a, CT__LEFT_UNTOUCHED) : s;
  }
  return CT_OK;
}

ct_status ct__comm_check_peers(ct__comm *c, const ct__coll *a, double deadline) {
  return exchange(c, a, deadline, 0);
}

/* A small collective, every rank's X received with the headers: Out from them, in rank order
 * on every rank (so the ranks' sums are bit-identical). */
static void finish_inline(const ct__comm *c, const ct__coll *a) {
  size_t es = ct_dtype_size(a->x->dtype), n = (size_t)a->x->numel, bytes = n * es;
  unsigned char *out = ct__tensor_ptr(a->out);
  if (bytes == 0) return;
  switch (a->kind) {
  case CT__COLL_BROADCAST: memcpy(out, c->peers[a->root].data, bytes); return;
  case CT__COLL_ALLGATHER:
    for (int r = 0; r < c->size; r++) memcpy(out + (size_t)r * bytes, c->peers[r].data, bytes);
    return;
  case CT__COLL_REDUCE_SUM:
    if (c->rank != a->root) {
      memset(out, 0, bytes);
      return;
    }
    break;
  default: break;
  }
  size_t k = a->kind == CT__COLL_REDUCESCATTER ? n / (size_t)c->size : n;
  size_t off = a->kind == CT__COLL_REDUCESCATTER ? (size_t)c->rank * k * es : 0;
  memcpy(out, c->peers[0].data + off, k * es);
  for (int r = 1; r < c->size; r++) {
    a->combine(out, c->peers[r].data + off, (int64_t)k, a->x->dtype,
               a->kind == CT__COLL_ALLREDUCE_MAX);
  }
}

static ct_status mpi_run(ct__comm *c, const ct__coll *a, double deadline) {
  char label[CT__COMM_LABEL_CAP];
  ct_status s = ct__mpi_check(c, a);
  if (s != CT_OK) return s;
  /* A small X travels with the header: one round of messages in all (on every rank alike, as
   * ranks that agree have the same X size; those that disagree fail on the headers). */
  size_t bytes = (size_t)a->x->numel * ct_dtype_size(a->x->dtype);
  bool small = bytes <= CT__COMM_INLINE_BYTES;
  s = exchange(c, a, deadline, small ? bytes : 0);
  if (s != CT_OK) return s;
  if (small) {
    finish_inline(c, a);
    return CT_OK;
  }
  MPI_Request req = MPI_REQUEST_NULL;
  int err = ct__mpi_start(c, a, &req);
  if (err != MPI_SUCCESS) {
    ct__mpi_fail(err, "%s: %s: starting the transfer", a->op, LABEL());
    return ct__comm_break(c, CT_ERR_DEVICE, a, CT__LEFT_UNTOUCHED);
  }
  int w = ct__mpi_wait(&req, 1, deadline, "the transfer");
  if (w == CT_OK) return CT_OK;
  if (w == -1) {
    ct__error(CT_ERR_DEVICE, "%s: %s: the transfer did not complete within %g s (the "
                             "communicator's time limit, ct_comm_set_timeout) although every "
                             "rank had arrived: a peer died or stalled mid-transfer; output Out "
                             "holds no memory now and the communicator is broken", a->op, LABEL(),
              c->timeout);
  } else {
    char copy[300];
    snprintf(copy, sizeof copy, "%s", ct_last_error());
    ct__error(CT_ERR_DEVICE, "%s: %s: %s; output Out holds no memory now", a->op, LABEL(), copy);
  }
  return ct__comm_break(c, CT_ERR_DEVICE, a, CT__LEFT_RUNNING);
}

ct_status ct__comm_break(ct__comm *c, ct_status s, const ct__coll *a, ct__coll_left left) {
  if (c->broken[0] == '\0') snprintf(c->broken, sizeof c->broken, "%s", ct_last_error());
  if (c->peers != NULL) { /* the communicator no longer owns its buffers (comm.c) */
    ct__comm_keep_alive(c->peers);
    ct__comm_keep_alive(c->reqs);
    c->peers = NULL;
    c->reqs = NULL;
  }
  ct__comm_mark_mpi_broken();
  if (left == CT__LEFT_RUNNING) {
    keep_block(a->x->block);
    keep_block(a->out->block);
  }
  if (left != CT__LEFT_UNTOUCHED) ct__tensor_drop_memory(a->out);
  return s;
}

ct_status ct__comm_run(ct__comm *c, const ct__coll *a) {
  if (c->broken[0] != '\0') {
    char label[CT__COMM_LABEL_CAP];
    return ct__error(CT_ERR_DEVICE, "%s: %s is broken by an earlier failure (%s): make a new "
                                    "one (ct_comm_init_mpi) on every rank", a->op,
                     ct__comm_label(c, a->name, label, sizeof label), c->broken);
  }
  double deadline = MPI_Wtime() + c->timeout;
  if (c->engine == CT__ENGINE_NCCL) return ct__nccl_run(c, a, deadline);
  return mpi_run(c, a, deadline);
}
#else
ct_status ct__comm_check_peers(ct__comm *c, const ct__coll *a, double deadline) {
  (void)c, (void)deadline;
  return ct__error(CT_ERR_UNSUPPORTED, "%s: this build of corten has no MPI", a->op);
}

ct_status ct__comm_break(ct__comm *c, ct_status s, const ct__coll *a, ct__coll_left left) {
  (void)c, (void)a, (void)left;
  return s;
}

ct_status ct__comm_run(ct__comm *c, const ct__coll *a) {
  (void)c;
  return ct__error(CT_ERR_UNSUPPORTED, "%s: this build of corten has no MPI (CMake found none): "
                                       "%s cannot run", a->op, coll_name(a->kind));
}
#endif
