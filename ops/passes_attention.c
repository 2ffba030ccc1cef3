/* SPDX-License-Identifier: Apache-2.0 */
/* ops/passes_attention.c: the optimize option's attention pass (docs/design/passes.md).
 *
 *   [transpose of K's last two axes] -> matmul(Q, K) -> [elementwise_mul / elementwise_div by a
 *   Scale] -> [elementwise_add of a Mask] -> softmax -> matmul(., V)
 *
 * (the transpose, PyTorch's k.transpose(-2, -1), taken as transpose_k flipped: the op packs
 * op(K) for its GEMM either way, so the copy was a pass over K for nothing; the same bits)
 * becomes one attention op (ops/defs/attention.c), which computes the same bits a block of query
 * rows at a time: the scores and the probabilities are never stored whole. The links are taken
 * as the other passes take theirs (each an intermediate written by its op alone and read by the
 * next op of the chain alone). The chain's ops need not follow one another: the ops between
 * them must write only the executor's intermediates, none that the chain reads at or after
 * the op that reads it (the fused op runs at the last matmul's place, reading Q, K, Scale and
 * Mask there), and nest no program. The run-time dims the op does not take make it fail, and the
 * executor then runs the chain's own ops (the fallback). */
#include <string.h>

#include "ops/op_impl.h"

enum { A_KT, A_MM1, A_SCALE, A_MASK, A_SM, A_MM2, A_N };

typedef struct attn {
  size_t at[A_N];    /* the members' indices; SIZE_MAX for an absent scale or mask */
  const ct_var *q, *k, *v, *scale, *mask;
  const char *mode;  /* "none", "mul", "rmul", "div" */
  bool mask_first;
  bool k_flip; /* K is the input of member A_KT, a transpose of the last two axes */
} attn;

/* Whether transpose op t swaps the last two of its axes and keeps the others. */
static bool swaps_last_two(const ct_op *t) {
  const ct_attr_value *ax = ct__pass_attr(t, "axis");
  const int64_t r = (int64_t)ax->u.ints.n;
  if (r < 2) return false; /* empty: the rank is known only at the run */
  for (int64_t k = 0; k < r; k++) {
    int64_t a = ax->u.ints.v[k] < 0 ? ax->u.ints.v[k] + r : ax->u.ints.v[k];
    if (a != (k < r - 2 ? k : k == r - 2 ? r - 1 : r - 2)) return false;
  }
  return true;
}

/* K of the first matmul (prep i) taken through the transpose that makes it, when that
 * transpose swaps the last two axes and its result links to the matmul alone. */
static void take_k_transpose(const ct__prep *preps, size_t n, size_t i,
                             bool (*candidate)(void *, const ct_var *), void *arg, attn *a) {
  for (size_t t = i; t-- > 0;) {
    const ct__prep *p = &preps[t];
    bool writes = false;
    for (uint32_t k = 0; k < p->n_out_vars; k++) writes |= p->vars[p->n_in_vars + k] == a->k;
    if (!writes) continue;
    if (ct__pass_is(p, "transpose") && p->n_in_vars == 1 && p->n_out_vars == 1 &&
        swaps_last_two(p->op) && ct__pass_link(preps, n, t, i, a->k, candidate, arg)) {
      a->k = p->vars[0];
      a->k_flip = true;
      a->at[A_KT] = t;
    }
    return;
  }
}

/* Whether the ops between the chain's first and last member keep what the fused op reads (see
 * the top of the file). */
static bool between_holds(const ct__prep *preps, const attn *a,
                          bool (*candidate)(void *, const ct_var *), void *arg) {
  const ct_var *ins[5] = {a->q, a->k, a->scale, a->mask, a->v};
  const size_t read_at[5] = {a->at[A_MM1], a->k_flip ? a->at[A_KT] : a->at[A_MM1],
                             a->at[A_SCALE], a->at[A_MASK], a->at[A_MM2]};
  return ct__pass_between_holds(preps, a->at, A_N, ins, read_at, 5, candidate, arg);
}

/* The chain whose first matmul is prep i, into *a (false when there is none). */
static bool find_attn(const ct__prep *preps, size_t n, size_t i,
                      bool (*candidate)(void *, const ct_var *), void *arg, attn *a) {
  *a = (attn){.at = {SIZE_MAX, i, SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX}, .mode = "none"};
  const ct__prep *mm = &preps[i];
  if (mm->n_in_vars != 2 || mm->n_out_vars != 1) return false;
  a->q = mm->vars[0];
  a->k = mm->vars[1];
  if (a->q != a->k) take_k_transpose(preps, n, i, candidate, arg, a);
  const ct_var *cur = ct__pass_out0(mm);
  size_t last = i, j = ct__pass_reader(preps, n, i, cur);
  if (j < n &&
      (ct__pass_is(&preps[j], "elementwise_mul") || ct__pass_is(&preps[j], "elementwise_div"))) {
    const ct_var *s = ct__pass_other(&preps[j], cur);
    bool div = ct__pass_is(&preps[j], "elementwise_div");
    if (s == NULL || (div && preps[j].vars[0] != cur) ||
        !ct__pass_link(preps, n, last, j, cur, candidate, arg)) {
      return false;
    }
    a->scale = s;
    a->mode = div ? "div" : preps[j].vars[0] == cur ? "mul" : "rmul";
    a->at[A_SCALE] = last = j;
    cur = ct__pass_out0(&preps[j]);
    j = ct__pass_reader(preps, n, j, cur);
  }
  if (j < n && ct__pass_is(&preps[j], "elementwise_add")) {
    const ct_var *m = ct__pass_other(&preps[j], cur);
    if (m == NULL || !ct__pass_link(preps, n, last, j, cur, candidate, arg)) return false;
    a->mask = m;
    a->mask_first = preps[j].vars[1] == cur;
    a->at[A_MASK] = last = j;
    cur = ct__pass_out0(&preps[j]);
    j = ct__pass_reader(preps, n, j, cur);
  }
  /* The softmax over the last axis: -1, or one past the batch dims (checked at the run). */
  if (j >= n || !ct__pass_is(&preps[j], "softmax") || preps[j].n_in_vars != 1 ||
      (ct__pass_attr(preps[j].op, "axis")->u.i != -1 &&
       ct__pass_attr(preps[j].op, "axis")->u.i < 1) ||
      !ct__pass_link(preps, n, last, j, cur, candidate, arg)) {
    return false;
  }
  a->at[A_SM] = last = j;
  cur = ct__pass_out0(&preps[j]);
  j = ct__pass_reader(preps, n, j, cur);
  if (j >= n || !ct__pass_is(&preps[j], "matmul") || preps[j].n_in_vars != 2 ||
      preps[j].vars[0] != cur || preps[j].vars[1] == cur ||
      ct__pass_attr(preps[j].op, "transpose_x")->u.b ||
      !ct__pass_link(preps, n, last, j, cur, candidate, arg)) {
    return false;
  }
  a->v = preps[j].vars[1];
  a->at[A_MM2] = j;
  /* The result must be none of the inputs (the fused op would write it into a block of its
   * own, where the last matmul wrote it in place). */
  const ct_var *res = ct__pass_out0(&preps[j]);
  if (res == a->q || res == a->k || res == a->v || res == a->scale || res == a->mask) {
    return false;
  }
  return between_holds(preps, a, candidate, arg);
}

/* The attention op for chain a; NULL with the error recorded. */
static ct_op *attn_op(const ct__prep *preps, const attn *a) {
  ct_op *op = ct_op_new("attention");
  if (op == NULL) return NULL;
  const ct_op *mm1 = preps[a->at[A_MM1]].op, *mm2 = preps[a->at[A_MM2]].op;
  ct_status s = ct_op_set_input(op, "Q", ct_var_name(a->q));
  if (s == CT_OK) s = ct_op_set_input(op, "K", ct_var_name(a->k));
  if (s == CT_OK) s = ct_op_set_input(op, "V", ct_var_name(a->v));
  if (s == CT_OK && a->scale != NULL) s = ct_op_set_input(op, "Scale", ct_var_name(a->scale));
  if (s == CT_OK && a->mask != NULL) s = ct_op_set_input(op, "Mask", ct_var_name(a->mask));
  if (s == CT_OK) s = ct_op_set_output(op, "Out", ct_var_name(ct__pass_out0(&preps[a->at[A_MM2]])));
  if (s == CT_OK) {
    s = ct_op_set_attr_bool(op, "transpose_q", ct__pass_attr(mm1, "transpose_x")->u.b);
  }
  if (s == CT_OK) {
    bool tk = ct__pass_attr(mm1, "transpose_y")->u.b != a->k_flip;
    s = ct_op_set_attr_bool(op, "transpose_k", tk);
  }
  if (s == CT_OK) {
    s = ct_op_set_attr_bool(op, "transpose_v", ct__pass_attr(mm2, "transpose_y")->u.b);
  }
  if (s == CT_OK) s = ct_op_set_attr_string(op, "scale_mode", a->mode);
  if (s == CT_OK) s = ct_op_set_attr_bool(op, "mask_first", a->mask_first);
  if (s == CT_OK) {
    s = ct_op_set_attr_int(op, "axis", ct__pass_attr(preps[a->at[A_SM]].op, "axis")->u.i);
  }
  if (s == CT_OK && a->k_flip) { /* K of another rank: the transpose's error, by the fallback */
    s = ct_op_set_attr_int(op, "k_rank",
                           (int64_t)ct__pass_attr(preps[a->at[A_KT]].op, "axis")->u.ints.n);
  }
  if (s != CT_OK) {
    ct_op_free(op);
    return NULL;
  }
  op->index = mm2->index; /* messages name the last matmul's place in the program */
  return op;
}

/* Chain a's memory assumption into r: its result apart from its inputs. */
static void attn_memory(const ct__prep *preps, const attn *a, ct__rewrite *r) {
  r->out = ct__pass_out0(&preps[a->at[A_MM2]]);
  r->n_ins = 0;
  const ct_var *ins[5] = {a->q, a->k, a->v, a->scale, a->mask};
  for (int k = 0; k < 5; k++) {
    if (ins[k] != NULL) r->ins[r->n_ins++] = ins[k];
  }
}

_Static_assert(A_N <= CT__REWRITE_MAX && 5 <= CT__REWRITE_INS, "a chain fits a rewrite");

static ct_status apply(ct__prep *preps, size_t *n, ct_scope *scope, ct_place place,
                       const attn *a, ct__rewrites *rw) {
  ct__rewrite memory = {0};
  attn_memory(preps, a, &memory);
  return ct__pass_apply(preps, n, scope, place, attn_op(preps, a), a->at, A_N, a->at[A_MM2],
                        &memory, rw);
}

ct_status ct__optimize_attention(ct__prep *preps, size_t *n, ct_scope *scope, ct_place place,
                                 bool (*candidate)(void *, const ct_var *), void *arg,
                                 ct__rewrites *rw) {
  for (size_t i = 0; i < *n;) {
    attn a;
    if (!ct__pass_is(&preps[i], "matmul") || !find_attn(preps, *n, i, candidate, arg, &a)) {
      i++;
      continue;
    }
    ct__rewrite probe = {0};
    attn_memory(preps, &a, &probe);
    if (ct__pass_apart(&probe) != NULL) { /* its result shares an input's memory now */
      i++;
      continue;
    }
    ct_status s = apply(preps, n, scope, place, &a, rw);
    if (s != CT_OK) return s;
    /* The chain's first member left and the preps after it moved down: look again from its
     * place (another chain's first matmul may have followed it). */
    if (a.k_flip) i = a.at[A_KT];
  }
  return CT_OK;
}
