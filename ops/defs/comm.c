/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/comm.c: the collective op types (PaddlePaddle's names), their shapes and gradients,
 * and the kernel body both backends share.
 *
 *   c_allreduce_sum  X -> Out   Out = the sum of every rank's X          grad: c_allreduce_sum
 *   c_allreduce_max  X -> Out   Out = the elementwise max of every X     no gradient
 *   c_broadcast      X -> Out   Out = X of rank `root`                   grad: c_reduce_sum
 *   c_allgather      X -> Out   Out = every rank's X along dim 0, rank   grad: c_reducescatter
 *                               after rank ([k, ...] -> [size k, ...])
 *   c_reducescatter  X -> Out   Out = slice `rank` along dim 0 of the    grad: c_allgather
 *                               sum of every X ([size k, ...] -> [k, ...])
 *   c_reduce_sum     X -> Out   Out = the sum of every X on rank `root`, grad: c_broadcast
 *                               zeros on the others
 * Attribute `comm` names the variable holding the communicator (corten/comm.h), found through
 * the scope's ancestors; `root` (broadcast, reduce) is a rank. Every rank must run the same op
 * on the same dtype and dims (checked: core/comm/comm_run.c). Out = X (in place) is allowed:
 * the framework gives Out a fresh block, and gives the input back if the collective fails.
 * The backend picks the engine: host tensors go over MPI, CUDA tensors over NCCL. */
#include <string.h>

#include <corten/backward.h>

#include "ops/defs.h"

#include "comm/comm_impl.h"
#include "tensor/tensor_impl.h"

static const ct_attr_def comm_attrs[] = {
    {"comm", {.type = CT_ATTR_STRING, .u.s = ""}, true},
};
static const ct_attr_def rooted_attrs[] = {
    {"comm", {.type = CT_ATTR_STRING, .u.s = ""}, true},
    {"root", {.type = CT_ATTR_INT, .u.i = 0}, false},
};
enum { CT__COMM_ATTR = 0, CT__COMM_ROOT = 1 };

/* The collective of an op type, by its name. */
static ct__coll_kind coll_kind(const ct_kernel_ctx *c) {
  static const char *const names[] = {
      [CT__COLL_ALLREDUCE_SUM] = "c_allreduce_sum", [CT__COLL_ALLREDUCE_MAX] = "c_allreduce_max",
      [CT__COLL_BROADCAST] = "c_broadcast",         [CT__COLL_ALLGATHER] = "c_allgather",
      [CT__COLL_REDUCESCATTER] = "c_reducescatter", [CT__COLL_REDUCE_SUM] = "c_reduce_sum",
  };
  for (int k = CT__COLL_ALLREDUCE_SUM; k <= CT__COLL_REDUCE_SUM; k++) {
    if (strcmp(c->op->def->type, names[k]) == 0) return (ct__coll_kind)k;
  }
  return CT__COLL_ALLREDUCE_SUM; /* not reached: only these types use this file's functions */
}

/* The initialised communicator that attribute `comm` names, or the error naming the op. */
static ct__comm *find_comm(const ct_kernel_ctx *c) {
  const char *name = c->attr[CT__COMM_ATTR].u.s;
  ct_var *v = ct_scope_find_var(c->scope, name);
  if (v == NULL) {
    ct_kernel_fail(c, CT_ERR_NOT_FOUND, "attribute comm names variable '%s', which is not in the "
                                        "scope or its ancestors: make it with ct_comm_init_mpi",
                   name);
    return NULL;
  }
  if (!ct_var_is(v, &ct_comm_type) || ct_comm_size(v) < 0) {
    const ct_type *t = ct_var_type(v);
    ct_kernel_fail(c, t == NULL || t == &ct_comm_type ? CT_ERR_UNINITIALIZED : CT_ERR_TYPE_MISMATCH,
                   "attribute comm names variable '%s', which holds %s: initialise a "
                   "communicator in it (ct_comm_init_mpi or ct_comm_init_nccl)",
                   name, t == NULL ? "nothing" : t == &ct_comm_type ? "an uninitialised "
                                                                      "communicator" : t->name);
    return NULL;
  }
  return ct_var_get_mutable(v, &ct_comm_type);
}

static ct_status comm_infer(const ct_kernel_ctx *c) {
  const ct__comm *comm = find_comm(c);
  if (comm == NULL) return ct_last_status();
  ct__coll_kind k = coll_kind(c);
  int size = ct__comm_size_of(comm);
  ct_ddim d = ct_kernel_in(c, CT__IN_X, 0)->dims;
  if (k == CT__COLL_BROADCAST || k == CT__COLL_REDUCE_SUM) {
    int64_t root = c->attr[CT__COMM_ROOT].u.i;
    if (root < 0 || root >= size) {
      return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE, "attribute root is %lld but communicator "
                                                    "'%s' has ranks 0 to %d",
                            (long long)root, c->attr[CT__COMM_ATTR].u.s, size - 1);
    }
  }
  if (k == CT__COLL_ALLGATHER || k == CT__COLL_REDUCESCATTER) {
    char buf[CT__DDIM_STR_CAP];
    if (d.rank < 1 || (k == CT__COLL_REDUCESCATTER && d.d[0] % size != 0)) {
      return ct_kernel_fail(c, CT_ERR_SHAPE, "input X variable '%s' is %s: it needs a first dim "
                                             "(to %s along)%s",
                            ct_kernel_in_name(c, CT__IN_X, 0), ct_ddim_str(d, buf, sizeof buf),
                            k == CT__COLL_ALLGATHER ? "gather" : "scatter",
                            k == CT__COLL_REDUCESCATTER ? " that the number of ranks divides"
                                                        : "");
    }
    if (k == CT__COLL_REDUCESCATTER) {
      d.d[0] /= size;
    } else {
      ct_ddim g = d;
      if (__builtin_mul_overflow(d.d[0], (int64_t)size, &g.d[0]) || ct_ddim_numel(g) < 0) {
        return ct_kernel_fail(c, CT_ERR_SHAPE, "input X variable '%s' is %s: gathered from %d "
                                               "ranks it would hold more than 2^63 elements: "
                                               "shrink X", ct_kernel_in_name(c, CT__IN_X, 0),
                              ct_ddim_str(d, buf, sizeof buf), size);
      }
      d = g;
    }
  }
  return ct__k_resize(c, CT__OUT, 0, d);
}

/* The kernel body of every collective on every backend: engine is the one the place needs. */
ct_status ct__comm_kernel(const ct_kernel_ctx *c, int engine, ct__coll_combine combine) {
  ct__comm *comm = find_comm(c);
  if (comm == NULL) return ct_last_status();
  const char *name = c->attr[CT__COMM_ATTR].u.s;
  if (ct__comm_engine(comm) != engine) {
    char place[CT__PLACE_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_UNSUPPORTED, "communicator '%s' is %s, which cannot carry "
                                                 "tensors at %s: use %s",
                          name, engine == CT__ENGINE_MPI ? "NCCL" : "MPI",
                          ct_place_str(c->place, place, sizeof place),
                          engine == CT__ENGINE_MPI ? "ct_comm_init_mpi for host tensors"
                                                   : "ct_comm_init_nccl for CUDA tensors");
  }
  /* Out as it was: a collective that fails before moving data (its peers disagree, the
   * communicator is broken) gives it back (its dims come back from the executor); one that fails
   * mid-transfer has dropped Out's memory, as comm.h says. */
  ct_tensor *out = ct_kernel_out(c, CT__OUT, 0), before = *out;
  if (before.block != NULL) ct__block_retain(before.block);
  if (ct__k_out_data(c, CT__OUT, 0, c->dtype) == NULL) {
    if (before.block != NULL) ct__block_release(before.block);
    return ct_last_status();
  }
  char label[CT__OP_LABEL_CAP];
  ct__coll a = {.kind = coll_kind(c),
                .op = ct__op_label(c->op, label, sizeof label),
                .name = name,
                .x_name = ct_kernel_in_name(c, CT__IN_X, 0),
                .x = ct_kernel_in(c, CT__IN_X, 0),
                .out = ct_kernel_out(c, CT__OUT, 0),
                .root = c->op->def->n_attr > CT__COMM_ROOT ? (int)c->attr[CT__COMM_ROOT].u.i : 0,
                .combine = combine};
  ct_status st = ct__comm_run(comm, &a);
  if (st != CT_OK && out->block != NULL) {
    ct__block *now = out->block;
    *out = before; /* our reference to its block becomes Out's */
    ct__block_release(now);
  } else if (before.block != NULL) {
    ct__block_release(before.block);
  }
  return st;
}

/* The gradient of each collective is another collective on Out@GRAD (see the top). */
static ct_status comm_grad(ct_grad_ctx *g) {
  static const char *const pairs[][2] = {
      {"c_allreduce_sum", "c_allreduce_sum"}, {"c_broadcast", "c_reduce_sum"},
      {"c_reduce_sum", "c_broadcast"},        {"c_allgather", "c_reducescatter"},
      {"c_reducescatter", "c_allgather"},
  };
  const char *dx = ct_grad_input_grad(g, "X", 0);
  if (dx == NULL) return CT_OK;
  const char *type = ct_op_type(ct_grad_forward(g)), *grad_type = NULL;
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    if (strcmp(type, pairs[i][0]) == 0) grad_type = pairs[i][1];
  }
  ct_op *op = ct_grad_op_new(g, grad_type);
  if (op == NULL) return ct_last_status();
  ct_status s = ct__grad_wire_in(op, "X", ct_grad_output_grad(g, "Out", 0));
  if (s == CT_OK) s = ct_op_set_output(op, "Out", dx);
  return s == CT_OK ? ct_grad_copy_attrs(g, op) : s;
}

/* No CT_OP_PURE_INFER: comm_infer looks up the communicator its attribute names, state outside
 * the op that an executor's key cannot see. */
#define CT__COLL_DEF(name, attrs, grad)                                                      \
  {name, ct__slot_x, 1, ct__slot_out, 1, attrs, sizeof attrs / sizeof attrs[0], comm_infer, \
   NULL, grad, 0}

static const ct_op_def comm_defs[] = {
    CT__COLL_DEF("c_allreduce_sum", comm_attrs, comm_grad),
    CT__COLL_DEF("c_allreduce_max", comm_attrs, NULL),
    CT__COLL_DEF("c_broadcast", rooted_attrs, comm_grad),
    CT__COLL_DEF("c_allgather", comm_attrs, comm_grad),
    CT__COLL_DEF("c_reducescatter", comm_attrs, comm_grad),
    CT__COLL_DEF("c_reduce_sum", rooted_attrs, comm_grad),
};

const ct__def_table ct__comm_defs = {comm_defs, sizeof comm_defs / sizeof comm_defs[0]};

/* What the types compute (ct_op_type_doc, `corten ops`). */
#define DOC_COMM                                                                              \
  " Attribute `comm` (in place of PaddlePaddle's ring_id) names the variable holding the "     \
  "communicator, found through the scope's ancestors: initialise it on every rank before the " \
  "op runs (ct_comm_init_mpi for host tensors, ct_comm_init_nccl for CUDA tensors). Every "    \
  "rank must run the same collective, in the same order, on X of the same dtype and dims "     \
  "(checked before data moves, failing on every rank), and a rank that does not arrive "       \
  "within the communicator's time limit (ct_comm_set_timeout) fails the others."

static const ct__op_doc docs[] = {
    {"c_allreduce_sum", "Every rank's Out is the elementwise sum of all ranks' X; Out has X's "
                        "dims and may be X (in place)." DOC_COMM " Its gradient is "
                        "c_allreduce_sum of Out@GRAD."},
    {"c_allreduce_max", "Every rank's Out is the elementwise maximum of all ranks' X; Out has "
                        "X's dims and may be X (in place)." DOC_COMM " No gradient."},
    {"c_broadcast", "Every rank's Out is a copy of the X of rank `root` (default 0, checked to "
                    "be a rank of the communicator); Out has X's dims and may be X (in place), "
                    "and only the root's values are read." DOC_COMM " Its gradient is "
                    "c_reduce_sum of Out@GRAD to the root."},
    {"c_reduce_sum", "Out on rank `root` (default 0) is the elementwise sum of all ranks' X; on "
                     "every other rank Out is zeros. Out has X's dims and may be X (in place)."
                     DOC_COMM},
    {"c_allgather", "Every rank's Out is all ranks' X concatenated along dim 0, rank after rank: "
                    "X [k, ...] gives Out [size k, ...] (size the number of ranks; X needs rank "
                    "1 or more)." DOC_COMM " Its gradient is c_reducescatter of Out@GRAD."},
    {"c_reducescatter", "Sums X over all ranks, then gives each rank its own slice along dim 0: "
                        "X [size k, ...] gives Out [k, ...], rank r taking rows r k to (r + 1) k "
                        "- 1 of the sum (dim 0 must be a multiple of the number of ranks)."
                        DOC_COMM},
};

const ct__doc_table ct__comm_docs = CT__TABLE(docs);
