/* SPDX-License-Identifier: Apache-2.0 */
/* ops/fuse.c: the executor's fuse_elementwise option: trees of elementwise ops run as one
 * expression (corten/expr.h), their intermediates never allocated.
 *
 * At executor creation an intermediate is a variable the executor created, not kept, written by
 * one fusable op and read once, by one later fusable op whose expression reads it once, and by no
 * nested program. The op that reads no intermediate's value onward (the root) gathers the ops
 * that wrote the intermediates it reads, recursively, into a group: the members are skipped in
 * the run and the root evaluates the group's tree in one pass. A group whose leaves an op between
 * a member and the root may write (or run a nested program) is not formed. Names are not memory
 * (two variables may share a block, or wrap one external buffer), so each op in between is also
 * guarded at run time: when the memory it is about to write overlaps a leaf's, the group runs op
 * by op that time, its deferred members first (ct__fused_guard). At run time a group
 * whose leaves are not all float32 or all float64 CPU tensors, or whose destination is one of
 * them or an external buffer, runs its ops one by one instead (float16 would round differently),
 * dropping the intermediates' memory afterwards. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "ops/defs.h"
#include "ops/expr/expr_impl.h"
#include "ops/op_impl.h"

/* The op types that fuse, each with its expression as a postfix template over its inputs:
 * a, b, c its first, second and third input variable; 1 the scalar one; + - * / R (ADD .. DIV,
 * RELU_GRAD) apply a binary node to the top two; n r s t e l E (NEG, RELU, SIGMOID, TANH, EXP,
 * LOG, ERF) a unary node to the top; S scale (x * scale + bias, from the op's attributes);
 * Z "0 + top", where a binary gradient's kernel sums into a zeroed output (an input
 * broadcast). Each rounds as the op's kernel (ops/cpu/elementwise.c, elementwise_grad.c). A
 * binary gradient fuses when it computes one of its two outputs (x: X@GRAD, y: Y@GRAD) and that
 * input needs no sum over broadcast dims (checked at run time). */
static const struct {
  const char *type, *expr, *x_expr, *y_expr;
} fusable_types[] = {
    {"elementwise_add", "ab+", NULL, NULL},
    {"elementwise_sub", "ab-", NULL, NULL},
    {"elementwise_mul", "ab*", NULL, NULL},
    {"elementwise_div", "ab/", NULL, NULL},
    {"relu", "ar", NULL, NULL},
    {"sigmoid", "as", NULL, NULL},
    {"tanh", "at", NULL, NULL},
    {"exp", "ae", NULL, NULL},
    {"log", "al", NULL, NULL},
    {"erf", "aE", NULL, NULL},
    {"scale", "aS", NULL, NULL},
    {"relu_grad", "abR", NULL, NULL},            /* Out > 0 ? dOut : 0 */
    {"sigmoid_grad", "ba*1a-*", NULL, NULL},     /* dOut * Out * (1 - Out) */
    {"tanh_grad", "b1aa*-*", NULL, NULL},        /* dOut * (1 - Out * Out) */
    {"exp_grad", "ba*", NULL, NULL},             /* dOut * Out */
    {"log_grad", "ba/", NULL, NULL},             /* dOut / X */
    /* X, Y, dOut: dX, dY */
    {"elementwise_add_grad", NULL, "cZ", "cZ"},
    {"elementwise_sub_grad", NULL, "cZ", "cnZ"},
    {"elementwise_mul_grad", NULL, "cb*Z", "ca*Z"},
    {"elementwise_div_grad", NULL, "cb/Z", "cna*bb*/Z"}, /* dOut / Y, -dOut * X / (Y * Y) */
};

/* The template of prep p's op, or NULL when it does not fuse. */
static const char *template_of(const ct__prep *p) {
  const ct__opdef *d = p->op->def;
  if (p->n_out_vars != 1 || p->n_in_vars < 1 || p->n_in_vars > 3) return NULL;
  for (uint32_t k = 0; k < p->n_in_vars + p->n_out_vars; k++) {
    if (p->any_type[k]) return NULL;
  }
  for (size_t i = 0; i < sizeof fusable_types / sizeof fusable_types[0]; i++) {
    if (strcmp(d->type, fusable_types[i].type) != 0) continue;
    if (fusable_types[i].expr != NULL) return fusable_types[i].expr;
    return p->op->out[0].n == 1 ? fusable_types[i].x_expr : fusable_types[i].y_expr;
  }
  return NULL;
}

/* How many times template t reads input k. */
static int uses(const char *t, uint32_t k) {
  int n = 0;
  for (; *t; t++) n += *t == (char)('a' + k);
  return n;
}

static int node_of(char c) {
  static const char nodes[] = "+-*/nrstelER";
  static const int kinds[] = {CT_EXPR_ADD,  CT_EXPR_SUB,     CT_EXPR_MUL,  CT_EXPR_DIV,
                              CT_EXPR_NEG,  CT_EXPR_RELU,    CT_EXPR_SIGMOID, CT_EXPR_TANH,
                              CT_EXPR_EXP,  CT_EXPR_LOG,     CT_EXPR_ERF, CT__EXPR_RELU_GRAD};
  return kinds[strchr(nodes, c) - nodes];
}

typedef struct fuse_instr {
  int code;  /* FI_* */
  int node;  /* FI_UNARY, FI_BINARY */
  size_t arg; /* FI_LEAF: leaves[arg]; FI_SCALE, FI_ZERO: preps[arg] */
} fuse_instr;

enum { FI_LEAF = 1, FI_UNARY, FI_BINARY, FI_SCALE, FI_ONE, FI_ZERO };

struct ct__fused {
  fuse_instr *code;  /* postorder */
  size_t n_code;
  ct_var **leaves;   /* the leaf variables, as code's leaf instructions name them */
  size_t n_leaves;
  size_t *members;   /* the preps of the group, in program order (the root last) */
  size_t n_members;
  ct_var **inner;    /* the intermediates */
  size_t n_inner;
  /* Run time: set when an op between the first member and the root was about to write memory
   * a leaf reads (a variable sharing a leaf's block under another name: the plan compares
   * names, the guard memory). The members that had been deferred ran then, the rest run at their
   * own turns, the root as a plain op; cleared at the first member's next turn. */
  bool split;
};

void ct__fused_free(ct__fused *f) {
  if (f == NULL) return;
  free(f->code);
  free(f->leaves);
  free(f->members);
  free(f->inner);
  free(f);
}

/* The planning state: per prep its template (NULL: not fusable) and whether its output is an
 * intermediate. */
typedef struct planner {
  ct__prep *preps;
  size_t n;
  const char **tmpl;
  bool *inner;
  ct__fused *f;
  bool oom, deep;
} planner;

static bool push(void **arr, size_t *n, size_t size) {
  void *grown = ct__realloc(*arr, (*n + 1) * size);
  if (grown == NULL) return false;
  *arr = grown;
  (*n)++;
  return true;
}

/* The fusable prep whose output is intermediate v; pl->n when v is not an intermediate. */
static size_t inner_writer(const planner *pl, const ct_var *v) {
  for (size_t i = 0; i < pl->n; i++) {
    if (pl->inner[i] && pl->preps[i].vars[pl->preps[i].n_in_vars] == v) return i;
  }
  return pl->n;
}

static bool push_code(planner *pl, fuse_instr in) {
  ct__fused *f = pl->f;
  if (!push((void **)&f->code, &f->n_code, sizeof *f->code)) return pl->oom = true, false;
  f->code[f->n_code - 1] = in;
  return true;
}

/* Appends prep i's tree to the group, postorder: its template, with each input read once that
 * is an intermediate replaced by its writer's tree. */
static void gather(planner *pl, size_t i, int depth) {
  ct__fused *f = pl->f;
  const ct__prep *p = &pl->preps[i];
  const char *t = pl->tmpl[i];
  if (pl->oom || pl->deep || depth > 200 || f->n_code > 900) {
    pl->deep = true;
    return;
  }
  for (; *t && !pl->oom && !pl->deep; t++) {
    if (*t >= 'a' && *t <= 'c') {
      ct_var *v = p->vars[*t - 'a'];
      size_t w = uses(pl->tmpl[i], (uint32_t)(*t - 'a')) == 1 ? inner_writer(pl, v) : pl->n;
      if (w < pl->n) {
        gather(pl, w, depth + 1);
        if (pl->oom || pl->deep) return;
        if (!push((void **)&f->inner, &f->n_inner, sizeof *f->inner)) {
          pl->oom = true;
          return;
        }
        f->inner[f->n_inner - 1] = v;
        continue;
      }
      if (!push((void **)&f->leaves, &f->n_leaves, sizeof *f->leaves)) {
        pl->oom = true;
        return;
      }
      f->leaves[f->n_leaves - 1] = v;
      push_code(pl, (fuse_instr){FI_LEAF, 0, f->n_leaves - 1});
    } else if (*t == '1') {
      push_code(pl, (fuse_instr){FI_ONE, 0, 0});
    } else if (*t == 'S' || *t == 'Z') {
      push_code(pl, (fuse_instr){*t == 'S' ? FI_SCALE : FI_ZERO, 0, i});
    } else {
      int node = node_of(*t);
      push_code(pl, (fuse_instr){strchr("+-*/R", *t) ? FI_BINARY : FI_UNARY, node, 0});
    }
  }
  if (pl->oom || pl->deep) return;
  if (!push((void **)&f->members, &f->n_members, sizeof *f->members)) {
    pl->oom = true;
    return;
  }
  f->members[f->n_members - 1] = i;
}

static int cmp_size(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return x < y ? -1 : x > y;
}

static bool has_program_attr(const ct_op *op) {
  for (size_t a = 0; a < op->def->n_attr; a++) {
    if (op->attr[a].type == CT_ATTR_PROGRAM) return true;
  }
  return false;
}

/* Whether no op between a member and the root, outside the group, writes a leaf or runs a
 * nested program (the members run at the root's turn, so their leaves must hold then what they
 * held at the member's). */
static bool leaves_stable(const planner *pl, const ct__fused *f) {
  size_t root = f->members[f->n_members - 1], m = 0;
  for (size_t k = f->members[0] + 1; k < root; k++) {
    while (m < f->n_members && f->members[m] < k) m++;
    if (m < f->n_members && f->members[m] == k) continue;
    const ct__prep *p = &pl->preps[k];
    if (has_program_attr(p->op)) return false;
    for (uint32_t o = p->n_in_vars; o < p->n_in_vars + p->n_out_vars; o++) {
      for (size_t l = 0; l < f->n_leaves; l++) {
        if (p->vars[o] == f->leaves[l]) return false;
      }
    }
  }
  return true;
}

/* Moves the members' release lists to the root (their leaves are read at the root's turn). */
static ct_status move_releases(ct__prep *preps, const ct__fused *f) {
  ct__prep *root = &preps[f->members[f->n_members - 1]];
  for (size_t m = 0; m + 1 < f->n_members; m++) {
    ct__prep *p = &preps[f->members[m]];
    if (p->n_release == 0) continue;
    ct_var **grown = ct__realloc(root->release, (root->n_release + p->n_release) * sizeof *grown);
    if (grown == NULL) return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_executor_new: out of host memory");
    memcpy(grown + root->n_release, p->release, p->n_release * sizeof *grown);
    root->release = grown;
    root->n_release += p->n_release;
    free(p->release);
    p->release = NULL;
    p->n_release = 0;
  }
  return CT_OK;
}

/* Moves to the root the releases that ops between the first member and the root make of f's
 * leaves: the deferred members read those leaves at the root's turn, so under
 * free_intermediates a leaf whose last unfused reader comes before the root must live until then
 * (the fuzzer found exp(v2) deferred past transpose(v2), v2's last reader, reading freed memory). */
static ct_status keep_leaves(ct__prep *preps, const ct__fused *f) {
  ct__prep *root = &preps[f->members[f->n_members - 1]];
  for (size_t k = f->members[0]; k < f->members[f->n_members - 1]; k++) {
    ct__prep *p = &preps[k];
    for (size_t j = 0; j < p->n_release;) {
      bool leaf = false;
      for (size_t l = 0; l < f->n_leaves && !leaf; l++) leaf = p->release[j] == f->leaves[l];
      if (!leaf) {
        j++;
        continue;
      }
      ct_var **grown = ct__realloc(root->release, (root->n_release + 1) * sizeof *grown);
      if (grown == NULL) return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_executor_new: out of host memory");
      grown[root->n_release++] = p->release[j];
      root->release = grown;
      p->release[j] = p->release[--p->n_release];
    }
  }
  return CT_OK;
}

/* Gives every op between f's first member and its root that is not a member a guard on f. */
static ct_status add_guards(ct__prep *preps, const ct__fused *f) {
  size_t m = 0;
  for (size_t k = f->members[0] + 1; k < f->members[f->n_members - 1]; k++) {
    while (m < f->n_members && f->members[m] < k) m++;
    if (m < f->n_members && f->members[m] == k) continue;
    ct__prep *p = &preps[k];
    ct__fused **grown = ct__realloc(p->guards, (p->n_guards + 1) * sizeof *grown);
    if (grown == NULL) return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_executor_new: out of host memory");
    grown[p->n_guards++] = (ct__fused *)f;
    p->guards = grown;
  }
  return CT_OK;
}

/* Whether prep i's output is an intermediate: see the file's comment. */
static bool is_inner(const planner *pl, size_t i, bool (*candidate)(void *, const ct_var *),
                     void *arg) {
  const ct__prep *p = &pl->preps[i];
  if (pl->tmpl[i] == NULL) return false;
  const ct_var *v = p->vars[p->n_in_vars]; /* its one output */
  if (!candidate(arg, v)) return false;
  size_t reads = 0, reader = 0;
  for (size_t j = 0; j < pl->n; j++) {
    const ct__prep *q = &pl->preps[j];
    for (uint32_t k = 0; k < q->n_in_vars + q->n_out_vars; k++) {
      if (q->vars[k] != v) continue;
      if (k >= q->n_in_vars && j != i) return false; /* written again */
      if (k < q->n_in_vars) {
        /* A template may read an input twice, or not at all: a gradient's X, which its kernel
         * reads for its dims only, must hold a tensor, so v is then no intermediate (counted as
         * a read, v's writer would be neither gathered into the reader's group nor a root). */
        int u = pl->tmpl[j] == NULL ? 1 : uses(pl->tmpl[j], k);
        if (u == 0) return false;
        reads += (size_t)u;
        reader = j;
      }
    }
    if (has_program_attr(q->op) && ct__nested_reads(q->op, ct_var_name(v))) return false;
  }
  return reads == 1 && reader > i && pl->tmpl[reader] != NULL;
}

ct_status ct__fuse_plan(ct__prep *preps, size_t n, bool (*candidate)(void *, const ct_var *),
                        void *arg) {
  planner pl = {preps, n, ct__calloc(n + 1, sizeof(char *)), ct__calloc(n + 1, sizeof(bool)),
                NULL, false, false};
  ct_status s = CT_OK;
  if (pl.tmpl == NULL || pl.inner == NULL) goto oom;
  for (size_t i = 0; i < n; i++) pl.tmpl[i] = template_of(&preps[i]);
  for (size_t i = 0; i < n; i++) pl.inner[i] = is_inner(&pl, i, candidate, arg);
  for (size_t r = 0; r < n; r++) {
    if (pl.tmpl[r] == NULL || pl.inner[r]) continue;
    pl.f = ct__calloc(1, sizeof *pl.f);
    if (pl.f == NULL) goto oom;
    gather(&pl, r, 0);
    if (pl.oom) goto oom;
    qsort(pl.f->members, pl.f->n_members, sizeof *pl.f->members, cmp_size);
    if (pl.deep || pl.f->n_members < 2 || !leaves_stable(&pl, pl.f)) {
      pl.deep = false; /* too deep, nothing to fuse, or moving the members is unsafe */
      ct__fused_free(pl.f);
      pl.f = NULL;
      continue;
    }
    if ((s = move_releases(preps, pl.f)) != CT_OK || (s = keep_leaves(preps, pl.f)) != CT_OK ||
        (s = add_guards(preps, pl.f)) != CT_OK) {
      goto out;
    }
    for (size_t m = 0; m + 1 < pl.f->n_members; m++) {
      preps[pl.f->members[m]].deferred = true;
      preps[pl.f->members[m]].group = pl.f;
    }
    preps[r].fused = pl.f;
  }
  pl.f = NULL;
  goto out;
oom:
  s = ct__error(CT_ERR_OUT_OF_MEMORY, "ct_executor_new: out of host memory planning fusion");
out:
  ct__fused_free(pl.f);
  free(pl.tmpl);
  free(pl.inner);
  return s;
}

/* ---- Running a group ------------------------------------------------------------------------- */

/* The bytes of leaf memory a tensor of the group reads: its elements. */
static size_t leaf_bytes(const ct_tensor *t) { return (size_t)t->numel * ct_dtype_size(t->dtype); }

/* Whether tensor t, about to be written (anywhere in its memory's capacity), overlaps the
 * memory of a leaf of f. */
static bool writes_a_leaf(const ct__fused *f, const ct_tensor *t) {
  if (t == NULL || t->block == NULL) return false; /* gets fresh memory when written */
  for (size_t l = 0; l < f->n_leaves; l++) {
    const ct_tensor *leaf = ct_var_get_tensor(f->leaves[l]);
    if (leaf != NULL &&
        ct__tensor_spans_overlap(t, ct__tensor_capacity(t), leaf, leaf_bytes(leaf))) {
      return true;
    }
  }
  return false;
}

ct_status ct__fused_guard(ct__prep *preps, size_t i) {
  const ct__prep *p = &preps[i];
  for (size_t g = 0; g < p->n_guards; g++) {
    ct__fused *f = p->guards[g];
    if (f->split) continue;
    bool hazard = false;
    for (uint32_t o = p->n_in_vars; o < p->n_in_vars + p->n_out_vars && !hazard; o++) {
      hazard = writes_a_leaf(f, ct_var_get_tensor(p->vars[o]));
    }
    if (!hazard) continue;
    /* The deferred members before i run now, while their leaves still hold their values. */
    f->split = true;
    for (size_t m = 0; m < f->n_members && f->members[m] < i; m++) {
      ct_status s = ct__prep_run(&preps[f->members[m]]);
      if (s != CT_OK) return s;
    }
  }
  return CT_OK;
}

bool ct__fused_member_now(ct__prep *preps, size_t i) {
  ct__fused *f = preps[i].group;
  if (f->members[0] == i) f->split = false; /* a new pass over the group */
  return f->split;
}

/* Drops the intermediates' memory (after the group ran op by op). */
static void drop_inner(const ct__fused *f) {
  for (size_t k = 0; k < f->n_inner; k++) {
    ct_tensor *t = (ct_tensor *)ct_var_get_tensor(f->inner[k]);
    if (t != NULL) ct__tensor_drop_memory(t);
  }
}

/* The group's ops one by one, then the intermediates' memory dropped. */
static ct_status run_unfused(ct__prep *preps, const ct__fused *f) {
  ct_status s = CT_OK;
  for (size_t m = 0; m < f->n_members && s == CT_OK; m++) s = ct__prep_run(&preps[f->members[m]]);
  drop_inner(f);
  return s;
}

/* The dims numpy broadcasting gives a and b; false when they do not broadcast. */
static bool bcast_dims(ct_ddim a, ct_ddim b, ct_ddim *out) {
  int r = a.rank > b.rank ? a.rank : b.rank;
  out->rank = r;
  for (int k = 0; k < r; k++) {
    int64_t x = k < r - a.rank ? 1 : a.d[k - (r - a.rank)];
    int64_t y = k < r - b.rank ? 1 : b.d[k - (r - b.rank)];
    if (x != y && x != 1 && y != 1) return false;
    out->d[k] = x == 1 ? y : x;
  }
  return true;
}

/* For binary gradient p: whether the input whose gradient it computes has the broadcast dims
 * (no sum over broadcast dims), and *zero whether its kernel sums into a zeroed output (the
 * other input is broadcast). */
static bool grad_flat(const ct__prep *p, bool *zero) {
  const ct_tensor *x = ct_var_get_tensor(p->vars[0]), *y = ct_var_get_tensor(p->vars[1]);
  ct_ddim out;
  if (x == NULL || y == NULL || !bcast_dims(x->dims, y->dims, &out)) return false;
  bool dx = p->op->out[0].n == 1;
  *zero = x->numel != ct_ddim_numel(out) || y->numel != ct_ddim_numel(out);
  return ct_ddim_equal(dx ? x->dims : y->dims, out);
}

/* The tree of the group over tensors `leaf`, of dtype dt; NULL with the error recorded, or NULL
 * with *unfit set when a gradient in it needs a sum over broadcast dims. */
static ct_expr *build(const ct__prep *preps, const ct__fused *f, ct_tensor **leaf, ct_dtype dt,
                      bool *unfit) {
  ct_expr *stack[1024];
  size_t top = 0;
  for (size_t c = 0; c < f->n_code; c++) {
    const fuse_instr *in = &f->code[c];
    bool zero = false;
    if (in->code == FI_LEAF) {
      stack[top++] = ct_expr_tensor(leaf[in->arg]);
    } else if (in->code == FI_ONE) {
      stack[top++] = ct_expr_scalar(1);
    } else if (in->code == FI_UNARY) {
      stack[top - 1] = ct_expr_unary((ct_expr_op)in->node, stack[top - 1]);
    } else if (in->code == FI_BINARY) {
      top--;
      stack[top - 1] = ct__expr_binary_any((ct_expr_op)in->node, stack[top - 1], stack[top]);
    } else if (in->code == FI_ZERO) {
      if (!grad_flat(&preps[in->arg], &zero)) {
        *unfit = true;
        break;
      }
      if (zero) stack[top - 1] = ct_expr_binary(CT_EXPR_ADD, ct_expr_scalar(0), stack[top - 1]);
    } else {
      /* scale: sc * x + bi, bi multiplied by sc first when the bias goes before, as the kernel
       * computes them (in the dtype). */
      const ct_attr_value *a = preps[in->arg].op->attr;
      double sc, bi;
      if (dt == CT_FLOAT32) {
        float s32 = (float)a[CT__SCALE_SCALE].u.f, b32 = (float)a[CT__SCALE_BIAS].u.f;
        if (!a[CT__SCALE_BIAS_AFTER].u.b) b32 *= s32;
        sc = s32;
        bi = b32;
      } else {
        sc = a[CT__SCALE_SCALE].u.f;
        bi = a[CT__SCALE_BIAS].u.f;
        if (!a[CT__SCALE_BIAS_AFTER].u.b) bi *= sc;
      }
      stack[top - 1] = ct_expr_binary(
          CT_EXPR_ADD, ct_expr_binary(CT_EXPR_MUL, stack[top - 1], ct_expr_scalar(sc)),
          ct_expr_scalar(bi));
    }
  }
  if (*unfit) {
    while (top > 0) ct_expr_free(stack[--top]);
    return NULL;
  }
  return stack[0];
}

ct_status ct__fused_run(ct__prep *preps, const ct__fused *f) {
  if (f->split) { /* its members ran at their turns: the root runs as itself */
    ct_status s = ct__prep_run(&preps[f->members[f->n_members - 1]]);
    drop_inner(f);
    return s;
  }
  ct_tensor *stack_leaves[16], **leaf = stack_leaves;
  if (f->n_leaves > 16) {
    leaf = ct__calloc(f->n_leaves, sizeof *leaf);
    if (leaf == NULL) return ct__error(CT_ERR_OUT_OF_MEMORY, "out of host memory running fused ops");
  }
  ct__prep *root = &preps[f->members[f->n_members - 1]];
  ct_var *out = root->vars[root->n_in_vars];
  const ct_tensor *dst_now = ct_var_get_tensor(out);
  ct_dtype dt = CT_DTYPE_UNDEFINED;
  /* dst written in place: not a caller's buffer, nor a block an op's view shares with another
   * variable (the prep path gives such an output a block of its own). */
  bool fuse = root->ctx.place.kind == CT_DEVICE_CPU &&
              (dst_now == NULL || dst_now->block == NULL ||
               (!dst_now->block->external &&
                (!atomic_load_explicit(&dst_now->block->op_view, memory_order_relaxed) ||
                 ct__block_unique(dst_now->block))));
  for (size_t l = 0; l < f->n_leaves && fuse; l++) {
    ct_tensor *t = leaf[l] = (ct_tensor *)ct_var_get_tensor(f->leaves[l]);
    fuse = t != NULL && t->block != NULL && t->block->place.kind == CT_DEVICE_CPU &&
           (t->dtype == CT_FLOAT32 || t->dtype == CT_FLOAT64) && (l == 0 || t->dtype == dt) &&
           ct__tensor_data_ok(t) &&
           (dst_now == NULL || (t->block != dst_now->block &&
                                !ct__tensor_spans_overlap(t, leaf_bytes(t), dst_now,
                                                          ct__tensor_capacity(dst_now))));
    dt = fuse ? t->dtype : dt;
  }
  /* The expression is tried with the thread's error text left alone: when it fails (leaves that
   * do not broadcast, no memory for its scratch), the group runs op by op, so the outcome is the
   * unfused program's: its values, or its failing op's status and message. */
  ct_status s = CT_OK, before = ct_last_status();
  bool unfit = false, quiet = ct__errors_quiet;
  ct__errors_quiet = true;
  ct_expr *e = fuse ? build(preps, f, leaf, dt, &unfit) : NULL;
  if (fuse && !unfit) {
    ct_tensor *dst = ct_var_tensor(out);
    s = dst == NULL || e == NULL ? CT_ERR_OUT_OF_MEMORY : ct_expr_assign(dst, CT_SAVETO, e);
  }
  ct__errors_quiet = quiet;
  ct_expr_free(e);
  if (!fuse || unfit || s != CT_OK) {
    ct__error_status_put(before);
    s = run_unfused(preps, f);
  }
  if (leaf != stack_leaves) free(leaf);
  return s;
}
