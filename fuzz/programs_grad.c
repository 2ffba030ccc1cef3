/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz/programs_grad.c: check (b) of the program fuzzer (fuzz_programs.c): a float64 program
 * ending in a mean, given its backward pass by ct_program_append_backward; the gradients must
 * agree with central differences of the forward program, and fused and freeing intermediates
 * the training program must give the same bits. */
#include "programs.h"

/* ---- (b) The backward pass ------------------------------------------------------------------ */

#define BL 4 /* leaves v0 .. v3 */

typedef struct prog_b {
  int n_leaves;
  ct_ddim dims[BL];
  uint32_t seed[BL];
  bool param[BL];
  int n_ops;
  op_spec op[MAXOPS];
  int loss_src, loss_after; /* mean(loss_src) -> loss, right after op loss_after */
  model m;
} prog_b;

/* Leaf values away from 0: +-[0.4, 1.14], multiples of 1/64. */
static double smooth_at(uint32_t seed, int64_t i) {
  double v = value_at(seed, i, false);
  double mag = 0.4 + fmod(fabs(v) * 64.0, 48.0) / 64.0;
  return v < 0 ? -mag : mag;
}

static void decode_b(fz_bytes *in, prog_b *g) {
  memset(g, 0, sizeof *g);
  model *m = &g->m;
  family f = pick_family(in, true);
  uint8_t h = fz_u8(in);
  g->n_leaves = 1 + h % BL;
  int n_params = 0;
  for (int i = 0; i < g->n_leaves; i++) {
    uint8_t b = fz_u8(in);
    g->dims[i] = family_dims(f, b);
    if (g->dims[i].rank > 0 && ct_ddim_numel(g->dims[i]) != ct_ddim_numel(CT_DIMS(f.r, f.c)) &&
        (b & 0xf8) == 0) {
      g->dims[i] = CT_DIMS(f.r, f.c);
    }
    g->seed[i] = (uint32_t)fz_take(in, 2) * 104729u + (uint32_t)i;
    g->param[i] = i == 0 || ((b >> 3) & 3) != 0;
    n_params += g->param[i];
    m->dims[i] = g->dims[i];
    m->dt[i] = CT_FLOAT64;
  }
  m->n_leaves = m->n_vars = g->n_leaves;
  uint8_t shape = fz_u8(in);
  bool overwrite = shape % 3 == 0 && n_params < g->n_leaves; /* an off-path op rewrites */
  g->n_ops = 1 + (shape >> 2) % 6;
  int n = 0;
  for (int k = 0; k < g->n_ops && (k == 0 || in->n > 0); k++) {
    op_spec *o = &g->op[n];
    uint8_t b = fz_u8(in);
    /* Outputs: a new variable, or a created one reshape did not make (never a leaf). */
    int rewritable[MAXV], n_rw = 0;
    bool fresh = false;
    for (int v = m->n_leaves; v < m->n_vars; v++) {
      if (!m->view[v]) rewritable[n_rw++] = v;
    }
    if (overwrite && n_rw > 0 && k > 0 && b % 3 == 0) {
      /* An op off the gradient path: a unary op of a leaf that is no parameter, into a
       * variable an earlier op wrote (its readers now see another value). */
      memset(o, 0, sizeof *o);
      static const int types[] = {7, 6, 9, 5}; /* exp, tanh, scale, sigmoid */
      o->type = types[(b >> 2) % 4];
      o->scale = 2.0;
      o->after = true;
      o->n_in = 1;
      int c = (b >> 4) % g->n_leaves;
      while (g->param[c]) c = (c + 1) % g->n_leaves;
      o->in[0] = c;
      o->out = rewritable[fz_u8(in) % n_rw];
    } else {
      gen_op(in, m, o);
      bool is_reshape = op_types[o->type].kind == K_RESHAPE;
      if (m->n_vars < MAXV && (is_reshape || b % 8 < 6 || n_rw == 0)) {
        o->out = m->n_vars++;
        fresh = true;
      } else if (n_rw > 0) {
        o->out = rewritable[(b >> 3) % n_rw];
      } else {
        continue; /* no variable left to write */
      }
    }
    ct_ddim ins[MAXIN], out;
    for (int i = 0; i < o->n_in; i++) ins[i] = m->dims[o->in[i]];
    if (!sim_dims(o, ins, &out)) out.rank = -1;
    if (ct_ddim_numel(out) > 64) {
      if (fresh) m->n_vars--;
      continue;
    }
    m->dims[o->out] = out;
    m->dt[o->out] = CT_FLOAT64;
    if (op_types[o->type].kind == K_RESHAPE) { /* both sides now view one block */
      m->view[o->out] = m->view[o->in[0]] = true;
    }
    n++;
  }
  g->n_ops = n;
  if (n == 0) return;
  uint8_t l = fz_u8(in);
  int src_op = n - 1 - (l % 4 == 0 && n > 1 ? 1 : 0);
  g->loss_src = g->op[src_op].out;
  g->loss_after = src_op + (int)((l >> 2) % (unsigned)(n - src_op));
}

static void say_prog_b(const prog_b *g) {
  say("(b) backward: float64 leaves:");
  for (int i = 0; i < g->n_leaves; i++) {
    say(" %s %s%s seed %u;", var_name(i), DS(g->dims[i]), g->param[i] ? " (param)" : "",
        g->seed[i]);
  }
  say("\n");
  for (int k = 0; k < g->n_ops; k++) {
    say_op(&g->op[k], k);
    if (k == g->loss_after) say("  loss = mean(%s)\n", var_name(g->loss_src));
  }
}

static ct_program *build_b(const prog_b *g) {
  ct_program *p = ct_program_new();
  FZ_CHECK(p != NULL);
  for (int k = 0; k < g->n_ops; k++) {
    append(p, make_op(&g->op[k], NULL));
    if (k == g->loss_after) {
      op_spec mean = {.type = 12, .n_in = 1, .in = {g->loss_src}};
      append(p, make_op(&mean, "loss"));
    }
  }
  return p;
}

static ct_scope *scope_b(const prog_b *g) {
  ct_scope *s = ct_scope_new();
  FZ_CHECK(s != NULL);
  for (int i = 0; i < g->n_leaves; i++) {
    int64_t n = ct_ddim_numel(g->dims[i]);
    double v[64];
    FZ_CHECK(n <= 64);
    for (int64_t k = 0; k < n; k++) v[k] = smooth_at(g->seed[i], k);
    FZ_CHECK(ct_tensor_set_value(var_tensor(s, i), v, g->dims[i], CT_FLOAT64, ct_cpu()) == CT_OK);
  }
  return s;
}

static double loss_of(const ct_scope *s) {
  const ct_tensor *t = find_tensor(s, "loss");
  FZ_CHECK(t != NULL && ct_tensor_numel(t) == 1);
  return *(const double *)ct_tensor_data(t, CT_FLOAT64);
}

/* The loss after one run of e with element i of pv moved by d (put back after). */
static double loss_at(ct_executor *e, const ct_scope *s, double *pv, int64_t i, double d) {
  double keep = pv[i];
  pv[i] = keep + d;
  FZ_CHECK(ct_executor_run(e) == CT_OK);
  double l = loss_of(s);
  pv[i] = keep;
  return l;
}

static double central(ct_executor *e, const ct_scope *s, double *pv, int64_t i, double h) {
  return (loss_at(e, s, pv, i, h) - loss_at(e, s, pv, i, -h)) / (2 * h);
}

/* Whether the forward values in s are tame enough for central differences: the loss and every
 * variable finite and below 1e4 in size (*mag: the largest), every relu input whose value the scope
 * still holds at least 1e-3 from 0 (false when one was written again, as it cannot be seen). */
static bool tame(const prog_b *g, const ct_scope *s, double *mag) {
  double l = loss_of(s);
  if (!isfinite(l) || fabs(l) > 1e4) return false;
  *mag = fmax(1, fabs(l));
  for (int v = 0; v < g->m.n_vars; v++) {
    const ct_tensor *t = find_tensor(s, var_name(v));
    if (t == NULL || !ct_tensor_has_memory(t)) continue;
    const double *x = ct_tensor_data(t, CT_FLOAT64);
    if (x == NULL) return false;
    for (int64_t i = 0; i < ct_tensor_numel(t); i++) {
      if (!isfinite(x[i]) || fabs(x[i]) > 1e4) return false;
      if (fabs(x[i]) > *mag) *mag = fabs(x[i]);
    }
  }
  for (int k = 0; k < g->n_ops; k++) {
    if (g->op[k].type != OP_RELU) continue;
    int x = g->op[k].in[0], writes = 0;
    for (int j = 0; j < g->n_ops; j++) writes += g->op[j].out == x;
    if (writes > (x < g->n_leaves ? 0 : 1) || g->op[k].out == x) return false;
    const ct_tensor *t = find_tensor(s, var_name(x));
    const double *xv = t ? ct_tensor_data(t, CT_FLOAT64) : NULL;
    if (xv == NULL) return false;
    for (int64_t i = 0; i < ct_tensor_numel(t); i++) {
      if (fabs(xv[i]) < 1e-3) return false;
    }
  }
  return true;
}

void check_b(fz_bytes *in) {
  prog_b g;
  decode_b(in, &g);
  if (g.n_ops == 0) return;
  say_prog_b(&g);
  const char *params[BL];
  size_t n_params = 0;
  for (int i = 0; i < g.n_leaves; i++) {
    if (g.param[i]) params[n_params++] = var_name(i);
  }
  ct_program *fwd = build_b(&g), *train = build_b(&g);
  size_t before = ct_program_size(train);
  ct_status st = ct_program_append_backward(train, "loss", params, n_params);
  if (st != CT_OK) {
    if (st != CT_ERR_UNSUPPORTED) broken("append_backward: %s", ct_status_str(st));
    if (ct_program_size(train) != before) broken("append_backward failed and changed the program");
    ct_program_free(fwd);
    ct_program_free(train);
    return;
  }
  say("  append_backward accepted it (%zu ops)\n", ct_program_size(train));
  ct_scope *sf = scope_b(&g), *st1 = scope_b(&g), *st2 = scope_b(&g);
  ct_executor *ef = ct_executor_new(fwd, sf, ct_cpu());
  FZ_CHECK(ef != NULL);
  ct_status sfwd = ct_executor_run(ef);
  ct_executor *et = ct_executor_new(train, st1, ct_cpu());
  ct_status strain = et != NULL ? ct_executor_run(et) : ct_last_status();
  if (sfwd != CT_OK) goto out; /* the forward program fails: nothing to differentiate */
  if (strain != CT_OK) {
    broken("the forward program runs but its training program fails: %s",
           ct_status_str(strain));
  }
  double lf = loss_of(sf), lt = loss_of(st1);
  if (memcmp(&lf, &lt, sizeof lf) != 0 && !(isnan(lf) && isnan(lt))) {
    broken("the training program's loss %.17g differs from the forward program's %.17g", lt, lf);
  }
  /* The training program fused and freeing intermediates: the same gradients, bit for bit. */
  ct_executor_options o = {.free_intermediates = true, .fuse_elementwise = true};
  ct_executor *e2 = ct_executor_new_with(train, st2, ct_cpu(), &o);
  FZ_CHECK(e2 != NULL);
  ct_status s2 = ct_executor_run(e2);
  ct_executor_free(e2);
  if (s2 != CT_OK) broken("the training program fails fused: %s", ct_status_str(s2));
  double mag;
  bool smooth = tame(&g, sf, &mag);
  for (size_t k = 0; k < n_params; k++) {
    char gname[32], why[256];
    snprintf(gname, sizeof gname, "%s@GRAD", params[k]);
    const ct_tensor *gt = find_tensor(st1, gname);
    const ct_tensor *pt = find_tensor(sf, params[k]);
    if (gt == NULL || !ct_ddim_equal(ct_tensor_dims(gt), ct_tensor_dims(pt))) {
      broken("%s: %s", gname, gt == NULL ? "missing" : "dims differ from the parameter's");
    }
    snap a = take(gt), b = take(find_tensor(st2, gname));
    if (!same_view(&a, &b, why, sizeof why)) broken("%s fused and freeing: %s", gname, why);
    drop(&a);
    drop(&b);
    if (!smooth) continue;
    const double *grad = ct_tensor_data(gt, CT_FLOAT64);
    double *pv = ct_tensor_mutable_data((ct_tensor *)pt, CT_FLOAT64, ct_cpu());
    FZ_CHECK(grad != NULL && pv != NULL);
    for (int64_t i = 0; i < ct_tensor_numel(pt); i++) {
      double num = central(ef, sf, pv, i, 1e-6);
      if (!isfinite(num)) continue; /* a step reached a pole or left log's domain */
      double tol = 1e-5 * fmax(fabs(num), fabs(grad[i])) + 1e-9 * mag;
      if (fabs(grad[i] - num) <= tol) continue;
      /* Two more step sizes: a real difference is one on which they agree. */
      double n2 = central(ef, sf, pv, i, 1e-4), n3 = central(ef, sf, pv, i, 1e-5);
      double tol2 = 1e-5 * fmax(fabs(n2), fabs(n3)) + 1e-9 * mag;
      if (!isfinite(n2) || !isfinite(n3) || !(fabs(n2 - n3) <= tol2) ||
          fabs(grad[i] - n3) <= tol2 || fabs(grad[i] - n2) <= tol2) {
        continue;
      }
      broken("%s[%lld] = %.12g, central differences %.12g (h 1e-6), %.12g (1e-5), %.12g (1e-4)",
             gname, (long long)i, grad[i], num, n3, n2);
    }
  }
out:
  ct_executor_free(ef);
  ct_executor_free(et);
  ct_scope_free(sf);
  ct_scope_free(st1);
  ct_scope_free(st2);
  ct_program_free(fwd);
  ct_program_free(train);
}
