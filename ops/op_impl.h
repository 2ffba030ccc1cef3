/* SPDX-License-Identifier: Apache-2.0 */
/* ops/op_impl.h: op types in the registry, op instances, and prepared ops (an op bound to
 * the variables of a scope), shared by the op, program and kernel files. */
#ifndef CORTEN_CORE_OP_IMPL_H
#define CORTEN_CORE_OP_IMPL_H

#include <stdatomic.h>
#include <string.h>

#include <corten/op.h>
#include <corten/program.h>

#include "common/common.h"
#include "tensor/tensor_impl.h"

#define CT__N_KINDS 4  /* indexed by ct_device_kind (1..3) */
#define CT__N_DTYPES 14 /* indexed by ct_dtype (0 is the any-dtype kernel) */

/* A registered op type: the registry's deep copy of a ct_op_def, plus its kernel table. Never
 * freed once registered, so ops and prepared ops point at it freely. */
typedef struct ct__opdef {
  char *type;
  ct_slot_def *in, *out;
  ct_attr_def *attr;
  size_t n_in, n_out, n_attr;
  ct_infer_shape_fn infer_shape;
  unsigned flags;  /* CT_OP_* */
  int dtype_attr; /* index into attr, or -1 */
  ct_grad_fn grad; /* NULL: no gradient */
  _Atomic(ct_kernel_fn) kernels[CT__N_KINDS][CT__N_DTYPES];
  _Atomic(const char *) doc; /* what it computes (ops/op_doc.c); NULL: none yet */
  bool doc_owned;            /* doc is a copy ct_op_set_doc made (freed with the type) */
} ct__opdef;

/* The variable names wired to one slot. */
typedef struct ct__wiring {
  char **names;
  size_t n;
} ct__wiring;

struct ct_op {
  const ct__opdef *def;
  uint64_t gen;          /* its edit generation (ct__op_edited); beside def, as every executor
                            run reads both */
  uint64_t wire_gen;     /* counts its re-wirings (ct_op_set_input ...): an executor bound to
                            the old wiring refuses to run (ops/program.c) */
  ct__wiring *in, *out;  /* def->n_in and def->n_out entries */
  ct_attr_value *attr;   /* def->n_attr entries: owned copies of lists and strings */
  bool *attr_set;
  long index;            /* position in the program that holds it, -1 when none */
  struct ct_program *program; /* that program, NULL when none */
};

/* The registered type of this name, NULL when none (nothing recorded). Registers the built-in
 * ops on first use. */
const ct__opdef *ct__op_lookup(const char *type);

/* CT_OK once the built-in ops are registered (the first call registers them); otherwise
 * CT_ERR_OUT_OF_MEMORY recorded, nothing of them registered, and the next call tries again. */
ct_status ct__ops_ready(void);

/* ct_op_register and ct_kernel_register without the one-time registration of the built-in ops:
 * what the built-in registration itself calls. */
ct_status ct__op_register(const ct_op_def *def);
ct_status ct__kernel_register(const char *type, ct_device_kind kind, ct_dtype dtype,
                              ct_kernel_fn fn);

/* The built-in op types and each backend's kernel tables (ops/backends.c), which the registry
 * registers once, on first use. The table types are in ops/kernel.h and ops/defs.h. */
typedef struct ct__def_table ct__def_table;
typedef struct ct__doc_table ct__doc_table;
typedef struct ct__kernel_table ct__kernel_table;
typedef struct ct__backend_table {
  ct_device_kind kind;
  const ct__kernel_table *table;
} ct__backend_table;
typedef struct ct__builtins {
  const ct__def_table *const *types;
  size_t n_types;
  const ct__doc_table *const *docs; /* what the types compute, family by family */
  size_t n_docs;
  const ct__backend_table *kernels;
  size_t n_kernels;
} ct__builtins;
extern const ct__builtins ct__builtin_ops;

/* The registered type of that name, or NULL; for the registry's own files (no ct__ops_ready,
 * so usable while the built-ins register). */
ct__opdef *ct__op_find(const char *type);

/* Gives the built-in types their documentation (ops/op_doc.c): CT_OK, or CT_ERR_NOT_FOUND
 * naming a table entry whose type is not registered (a mistake in corten's tables). */
ct_status ct__op_docs_install(const ct__builtins *b);

/* One entry of the infer-shape key (ct__prep), kept small since every steady run reads it; the
 * extents of a tensor of rank 2 or more are in ct__prep.key_d. */
typedef struct ct__infer_key {
  int64_t numel; /* with rank, the dims of rank 1 or less */
  ct_dtype dtype;
  int rank;
} ct__infer_key;

/* The most variables an op may have for its prep to keep an infer-shape key: the key lives in
 * the prep itself, which an executor reads in order, rather than in memory of its own. */
#define CT__KEY_CAP 6

/* An op bound to the variables of a scope: what one run of it needs, resolved. */
typedef struct ct__prep {
  /* What every executor run reads first, together. The reuse of infer-shape
   * (CT_OP_PURE_INFER), when keyed: key holds per variable, inputs then outputs, the numel,
   * dtype and rank that the last successful run's infer-shape read (inputs) or left (outputs),
   * key_d their extents. A run whose tensors all match, while the op's generation is still
   * key_gen, skips infer-shape. Not keyed: infer-shape always runs (not pure, an any-type slot,
   * more than CT__KEY_CAP variables, a one-off ct_op_run). key_gen is 0 while the key holds
   * nothing valid. */
  const ct_op *op;
  uint64_t key_gen;
  ct_var **vars;          /* inputs, then outputs */
  ct_tensor **tensors;    /* their tensors, refreshed each run (NULL for ANY_TYPE slots) */
  uint32_t n_in_vars, n_out_vars;
  bool keyed;
  bool deferred;          /* fuse_elementwise: a group member, run by its root */
  bool self_alias;        /* a variable is wired both as an input and as an output (tensor slots) */
  ct__infer_key key[CT__KEY_CAP];
  struct ct__fused *fused; /* fuse_elementwise: the group this op roots, run in its place */
  struct ct__fused *group; /* fuse_elementwise: the group a deferred op is a member of */
  ct_var *sink;            /* the variable of outputs named CT__GRAD_EMPTY, owned (or NULL) */
  struct ct__fused **guards; /* fuse_elementwise: the groups whose span this op lies in, not as
                                a member: before it runs, its outputs' memory is checked
                                against their leaves' (ct__fused_guard) */
  size_t n_guards;
  size_t n_release;
  ct_var **release;       /* variables whose memory goes after this op (executor option) */
  ct_kernel_ctx ctx;
  ct_ddim *out_dims;      /* the outputs' dims before a run, given back when the run fails */
  uint32_t *pos;          /* in_pos (n_in + 1 entries), then out_pos (n_out + 1) */
  unsigned char *any_type; /* per variable: its slot is CT_SLOT_ANY_TYPE */
  int64_t *key_d;         /* per key entry CT_MAX_RANK extents, read for rank 2 and up */
  uint64_t wire_gen;       /* the op's wire_gen when it was bound */
  struct ct__derived *derived; /* executor option constants: per input variable, what kernels
                                  derived from it (ops/consts.c); NULL when none is constant */
  struct ct__fallback *fallback; /* optimize: a fused op's own ops, run when it fails (owned by
                                    the executor's rewrite, ops/passes_rewrite.c); else NULL */
} ct__prep;

/* ops/consts.c: the executor option constants. ct__consts_bind checks the names (each a
 * variable of scope that no op of the n preps writes, directly or in a nested program) and gives
 * each prep that reads one its derived slots; ct__consts_free lets go of a prep's (unfreezing
 * the memory they were made from). */
ct_status ct__consts_bind(ct__prep *preps, size_t n, ct_scope *scope,
                          const char *const *names, size_t n_names);
void ct__consts_free(ct__prep *p);

/* ops/prep.c: the allocation observers' namer (core/memory/memory_impl.h) over a prep: the op's
 * type, and the variable of the prep whose tensor is `tensor`. */
const char *ct__prep_namer(const void *arg, const void *tensor, const char **op);

/* ops/op.c: sets op's attribute name to a copy of v (any kind but a program, which is left as
 * it is: CT_OK), as the typed setters do (the name and kind checked against op's type). */
ct_status ct__op_set_attr_value(ct_op *op, const char *name, const ct_attr_value *v);

/* ops/passes.c: the optimize option. An executor's rewrites: each fused op it made (owned) and
 * the program's ops it stands for, with their generations when it was made: an edit of one
 * after that makes ct__rewrites_check fail the run. */
#define CT__REWRITE_MAX 9 /* a decomposed layer norm's ops (a conv chain: 6) */
#define CT__REWRITE_INS 8 /* inverted_residual's inputs; a conv chain's: 2, bias, residual, 4 bn */
/* A fused op's fallback: the preps of the ops it stands for, in program order, bound as
 * before the pass (owned), which the executor runs in its place when it fails (dims it does not
 * take: a residual that broadcasts its result larger, an attention's mask of other dims), so
 * the run's outcome is the unfused program's; then the memory of the intermediates between
 * them (drop: written and read by those ops alone) goes. */
typedef struct ct__fallback {
  ct__prep *preps;
  size_t n;
  ct_var **drop;
  size_t n_drop;
} ct__fallback;
/* Runs prep p, which has a fallback: the fused op quietly (its failure's text never recorded),
 * and on failure the fallback's preps (each the same way when it has one of its own), the
 * thread's status put back when they succeed. */
ct_status ct__prep_run_guarded(ct__prep *p, const uint64_t *errors);

typedef struct ct__rewrite {
  ct_op *op;
  ct__fallback *fallback; /* owned; NULL for an assign's elision */
  const ct_op *origin[CT__REWRITE_MAX];
  uint64_t gen[CT__REWRITE_MAX];
  size_t n_origin;
  /* A fused chain's result and the fused op's inputs, whose memory the rewrite assumed apart
   * (checked again at every run); out NULL: none. */
  const ct_var *out, *ins[CT__REWRITE_INS];
  size_t n_ins;
} ct__rewrite;
typedef struct ct__rewrites {
  ct__rewrite *v;
  size_t n, cap;
} ct__rewrites;
/* Rewrites the n bound preps in place (*n shrinks as ops merge); candidate as ct__fuse_plan's. */
ct_status ct__optimize(ct__prep *preps, size_t *n, ct_scope *scope, ct_place place,
                       bool (*candidate)(void *, const ct_var *), void *arg, ct__rewrites *rw);
ct_status ct__rewrites_check(const ct__rewrites *rw);
/* ops/passes_attention.c: matmul, [scale], [mask add], softmax, matmul chains become one
 * attention (passes.md); run by ct__optimize before the epilogue passes. */
ct_status ct__optimize_attention(ct__prep *preps, size_t *n, ct_scope *scope, ct_place place,
                                 bool (*candidate)(void *, const ct_var *), void *arg,
                                 ct__rewrites *rw);
/* ops/passes_norm.c: the ops of a layer norm written out (reduce_mean, sub, pow, reduce_mean,
 * add, sqrt, div, [mul], [add]) become one decomposed_layer_norm (passes.md); run by
 * ct__optimize after attention's. */
ct_status ct__optimize_norms(ct__prep *preps, size_t *n, ct_scope *scope, ct_place place,
                             bool (*candidate)(void *, const ct_var *), void *arg,
                             ct__rewrites *rw);
/* ops/passes_block.c: conv2d_fusion chains that form an inverted residual block become one
 * inverted_residual (passes.md); run by ct__optimize after its other passes. */
ct_status ct__optimize_blocks(ct__prep *preps, size_t *n, ct_scope *scope, ct_place place,
                              bool (*candidate)(void *, const ct_var *), void *arg,
                              ct__rewrites *rw);
/* ops/passes_pool.c: a conv2d_fusion followed by a max pool2d becomes one conv2d_pool
 * (passes.md); run by ct__optimize after the blocks. */
ct_status ct__optimize_pools(ct__prep *preps, size_t *n, ct_scope *scope, ct_place place,
                             bool (*candidate)(void *, const ct_var *), void *arg,
                             ct__rewrites *rw);
/* What the passes share (ops/passes.c, passes_rewrite.c): op's attribute called name; whether
 * v links prep from (its only writer) to prep to (its only reader, once) and is an
 * intermediate; room for one more rewrite in rw; NULL when rewrite r's memory assumptions hold,
 * else the variable that breaks them; and the replacement of a rewrite's preps by its fused
 * one. */
const ct_attr_value *ct__pass_attr(const ct_op *op, const char *name);
/* Copies op's attributes (all but programs, ct__op_set_attr_value) into fused's, each named
 * prefix then its name: a fused type takes an op's attributes under the same names ("") or
 * renamed. */
ct_status ct__pass_copy_attrs(const ct_op *op, ct_op *fused, const char *prefix);
bool ct__pass_link(const ct__prep *preps, size_t n, size_t from, size_t to, const ct_var *v,
                   bool (*candidate)(void *, const ct_var *), void *arg);
ct_status ct__pass_rewrite_room(ct__rewrites *rw);
const ct_var *ct__pass_apart(const ct__rewrite *r);
/* Whether v holds a tensor now that no prep of the n writes (nor a program nested in one): its
 * dims now are its dims at every run, unless the caller changes them between runs (then the
 * fused op's own check refuses the run, naming the fix). A pass that reads an operand's dims
 * when the executor is made reads them only from such a variable. */
bool ct__pass_fixed(const ct__prep *preps, size_t n, const ct_var *v);
/* Small queries the passes share: whether prep p's op is of type `type`; its first output; the
 * first prep after `from` that reads v (n when none does); and a two-input prep's input that is
 * not v, when exactly one of its inputs is v (else NULL). */
static inline bool ct__pass_is(const ct__prep *p, const char *type) {
  return strcmp(p->op->def->type, type) == 0;
}
static inline const ct_var *ct__pass_out0(const ct__prep *p) { return p->vars[p->n_in_vars]; }
static inline size_t ct__pass_reader(const ct__prep *preps, size_t n, size_t from,
                                     const ct_var *v) {
  for (size_t j = from + 1; j < n; j++) {
    for (uint32_t k = 0; k < preps[j].n_in_vars; k++) {
      if (preps[j].vars[k] == v) return j;
    }
  }
  return n;
}
static inline const ct_var *ct__pass_other(const ct__prep *p, const ct_var *v) {
  if (p->n_in_vars != 2 || (p->vars[0] == v) == (p->vars[1] == v)) return NULL;
  return p->vars[0] == v ? p->vars[1] : p->vars[0];
}
/* Whether the preps between the first and the last of members (n_members indices, SIZE_MAX
 * for an absent one) keep what a fused op at the last one's place reads: each writes only
 * intermediates (candidate), none of ins (n_ins variables, NULL for an absent one) after
 * read_at (the index of the member that reads it, the first when several do: a write
 * between two readers would give them different values, where the fused op reads one), and nests no
 * program. */
bool ct__pass_between_holds(const ct__prep *preps, const size_t *members, size_t n_members,
                            const ct_var *const *ins, const size_t *read_at, size_t n_ins,
                            bool (*candidate)(void *, const ct_var *), void *arg);
/* Binds fused op `op` (owned by the new rewrite, or freed on failure; NULL: the error its maker
 * recorded is returned) in place of the members at indices at (n_at of them, in program order,
 * SIZE_MAX for an absent one; last the last), watching their edit generations and with
 * memory's out and ins as its memory assumption (ct__pass_splice does the rest). */
ct_status ct__pass_apply(ct__prep *preps, size_t *n, ct_scope *scope, ct_place place, ct_op *op,
                         const size_t *at, size_t n_at, size_t last, const ct__rewrite *memory,
                         ct__rewrites *rw);
/* Moves the preps at indices members (n_members of them, in program order, last the last of
 * them) from the n bound preps into r's fallback, fused (whose fallback it becomes) taking
 * last's place; *n shrinks. The fallback drops the members' outputs but last's first (the
 * passes fuse only intermediates). CT_ERR_OUT_OF_MEMORY with nothing changed (fused then
 * destroyed) otherwise. */
ct_status ct__pass_splice(ct__prep *preps, size_t *n, const size_t *members, size_t n_members,
                          size_t last, ct__prep *fused, ct__rewrite *r);
void ct__rewrites_free(ct__rewrites *rw);

/* ops/fuse.c: the fuse_elementwise option. ct__fuse_plan forms the groups over an executor's
 * preps (candidate: whether a variable may be an intermediate, that is created by the executor
 * and not kept), after the release lists are planned; ct__fused_run runs one group. */
typedef struct ct__fused ct__fused;
ct_status ct__fuse_plan(ct__prep *preps, size_t n, bool (*candidate)(void *, const ct_var *),
                        void *arg);
ct_status ct__fused_run(ct__prep *preps, const ct__fused *f);
/* Before prep i runs (it has guards): splits each group whose leaves its outputs' memory
 * overlaps, running that group's deferred members before i now. */
ct_status ct__fused_guard(ct__prep *preps, size_t i);
/* At deferred prep i's turn: whether it runs now (its group was split). */
bool ct__fused_member_now(ct__prep *preps, size_t i);
void ct__fused_free(ct__fused *f);

/* ops/program.c: whether one of op's program attributes reads (writes) variable `name`. */
bool ct__nested_reads(const ct_op *op, const char *name);
bool ct__nested_writes(const ct_op *op, const char *name);

/* Resolves op's wiring over scope: inputs through the ancestors, outputs likewise, created in
 * scope when missing anywhere (created, when not NULL, is called with each one it creates).
 * Checks required slots and attributes. CT_OK or the error recorded (p then holds nothing). */
ct_status ct__prep_init(ct__prep *p, const ct_op *op, ct_scope *scope, ct_place place,
                        void (*created)(void *arg, ct_var *v), void *arg);

/* Runs a prepared op: checks the input tensors, picks the kernel, infers dims, runs it. */
ct_status ct__prep_run(ct__prep *p);
/* ct__prep_run with the address of this thread's error count (ct__error_count) given: a loop
 * over many ops takes it once, not once per op (thread-local storage of a shared library costs
 * a call to read). */
ct_status ct__prep_run_counted(ct__prep *p, const uint64_t *errors);

void ct__prep_destroy(ct__prep *p);

/* ops/program.c: ct_executor_run of an executor known to be there, with the address of this
 * thread's error count given (a recurrent op runs one executor per step). */
ct_status ct__executor_run_counted(ct_executor *e, const uint64_t *errors);

/* The op's name for messages: "op 'matmul'" or "op #3 'matmul'" inside a program. */
const char *ct__op_label(const ct_op *op, char *buf, size_t cap);
#define CT__OP_LABEL_CAP 96

/* Programs held by an op attribute belong to that op: ct_program_free refuses them and the op
 * frees them with ct__program_destroy. contains: whether op is in p or in a program nested in
 * one of p's ops (an op may not hold a program that holds the op itself). */
bool ct__program_owned(const ct_program *p);
/* Makes room for extra more ops, so that that many ct_program_append calls of fresh ops cannot
 * fail: CT_OK, or CT_ERR_OUT_OF_MEMORY recorded (p unchanged). */
ct_status ct__program_reserve(ct_program *p, size_t extra);
/* Keeps the ops i of p with keep[i] (in order) and frees the others (ops/prune.c's last step). */
void ct__program_retain(ct_program *p, const bool *keep);
/* Makes p the program of holder's attribute (owned: ct_program_free refuses it). */
void ct__program_set_holder(ct_program *p, ct_op *holder);
bool ct__program_contains(const ct_program *p, const ct_op *op);
void ct__program_destroy(ct_program *p);


/* Edit generations. Every op and program has one, drawn from one process-wide counter when it
 * is made and again at each edit, so no two states of any ops or programs, live or freed, share
 * one. An edit (an op's wiring or attribute set, an op appended to a program) gives a new
 * generation to the edited op, the program holding it, the op whose attribute holds that
 * program, and so on up: an op's generation moves whenever it or anything in its nested
 * programs changes, and only then. A cache of what an op bound (the recurrent op's step
 * programs, ops/recurrent.h) keeps the op's generation and binds again when it moved. */
uint64_t ct__gen_next(void);
void ct__op_edited(ct_op *op);
void ct__program_edited(ct_program *p);

#endif /* CORTEN_CORE_OP_IMPL_H */
