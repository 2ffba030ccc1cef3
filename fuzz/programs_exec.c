/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz/programs_exec.c: check (a) of the program fuzzer (fuzz_programs.c): a program over
 * leaves that view one another or wrap external buffers, run under a plain executor and then
 * under fuse_elementwise, free_intermediates and both, at one and at three threads, and under
 * the optimize option's graph passes; every run must give the plain run's status and, on CT_OK,
 * its bits. A matmul is now and then followed by the chain the matmul_epilogue pass merges (the
 * add of a rank-1 leaf, then relu), which random wiring alone almost never makes. */
#include "programs.h"

/* ---- (a) Executors -------------------------------------------------------------------------- */

#define MAXL 6 /* leaves v0 .. v5 */

enum { L_OWN, L_SHARE, L_SLICE, L_WRAP, L_FLAT };

typedef struct leaf_spec {
  int kind;
  ct_dtype dt;
  ct_ddim dims;       /* L_OWN, L_WRAP */
  int src;            /* L_SHARE, L_SLICE, L_FLAT: an earlier leaf */
  int64_t begin, end; /* L_SLICE; L_FLAT: begin is num_col_dims */
  int buf;            /* L_WRAP */
  int64_t off;
  uint32_t seed;
} leaf_spec;

typedef struct prog_a {
  ct_dtype dt;
  bool special;
  int runs;
  int n_leaves;
  leaf_spec leaf[MAXL];
  int64_t buf_n[2];
  ct_dtype buf_dt[2];
  uint32_t buf_seed[2];
  int n_ops;
  op_spec op[MAXOPS];
  bool compared[MAXV];
  model m;
} prog_a;

static void gen_leaves(fz_bytes *in, prog_a *g, family f) {
  model *m = &g->m;
  g->n_leaves = 2 + fz_u8(in) % (MAXL - 1);
  for (int i = 0; i < g->n_leaves; i++) {
    leaf_spec *l = &g->leaf[i];
    uint8_t b = fz_u8(in), c = fz_u8(in), d = fz_u8(in);
    l->seed = (uint32_t)fz_take(in, 2) * 7919u + (uint32_t)i;
    l->dt = (c & 15) == 15 ? (g->dt == CT_FLOAT32 ? CT_FLOAT64 : CT_FLOAT32) : g->dt;
    int kind = b % 8;
    l->kind = i == 0 || kind < 3 ? L_OWN : kind == 3 ? L_SHARE : kind == 4 ? L_SLICE
              : kind == 7 ? L_FLAT : L_WRAP;
    l->src = i > 0 ? (b >> 3) % i : 0;
    const ct_ddim *sd = &m->dims[l->src];
    if ((l->kind == L_SLICE || l->kind == L_FLAT) && sd->rank < 1) l->kind = L_SHARE;
    switch (l->kind) {
      case L_OWN: l->dims = family_dims(f, c >> 4 | (d & 0xf0)); break;
      case L_SHARE:
        l->dims = *sd;
        l->dt = m->dt[l->src];
        break;
      case L_SLICE: {
        int64_t d0 = sd->d[0];
        pick_rows(d, d0, &l->begin, &l->end);
        l->dims = *sd;
        l->dims.d[0] = l->end - l->begin;
        l->dt = m->dt[l->src];
        break;
      }
      case L_FLAT: {
        int k = d % (sd->rank + 1);
        int64_t a = 1, z = 1;
        for (int j = 0; j < sd->rank; j++) *(j < k ? &a : &z) *= sd->d[j];
        l->begin = k;
        l->dims = CT_DIMS(a, z);
        l->dt = m->dt[l->src];
        break;
      }
      default: { /* L_WRAP: a buffer, at an offset that may overlap another wrap of it */
        l->buf = d & 1;
        l->dims = family_dims(f, c >> 4 | (d & 0xf0));
        if (g->buf_n[l->buf] > 0) l->dt = g->buf_dt[l->buf];
        int o = (d >> 1) % 4;
        l->off = o < 2 ? 0 : o == 2 ? 1 : f.c;
        int64_t need = l->off + ct_ddim_numel(l->dims);
        if (g->buf_n[l->buf] == 0) {
          g->buf_dt[l->buf] = l->dt;
          g->buf_seed[l->buf] = l->seed ^ 0x5a5a5a5au;
        }
        if (need > g->buf_n[l->buf]) g->buf_n[l->buf] = need;
        break;
      }
    }
    m->dims[i] = l->dims;
    m->dt[i] = l->dt;
  }
  m->n_leaves = m->n_vars = g->n_leaves;
}

static void say_prog_a(const prog_a *g) {
  static const char *const kinds[] = {"own", "share", "slice", "wrap", "flatten_to_2d"};
  say("(a) executors: %s, %d run(s), special values %s\n", dt_s(g->dt), g->runs,
      g->special ? "on" : "off");
  for (int i = 0; i < g->n_leaves; i++) {
    const leaf_spec *l = &g->leaf[i];
    say("  leaf %s: %s %s %s", var_name(i), kinds[l->kind], DS(l->dims), dt_s(l->dt));
    if (l->kind == L_SHARE) say(" of %s", var_name(l->src));
    if (l->kind == L_SLICE) say(" rows [%lld, %lld) of %s", (long long)l->begin, (long long)l->end,
                                var_name(l->src));
    if (l->kind == L_FLAT) say(" of %s at %lld", var_name(l->src), (long long)l->begin);
    if (l->kind == L_WRAP) say(" buffer %d (%lld elements) at element %lld", l->buf,
                               (long long)g->buf_n[l->buf], (long long)l->off);
    if (l->kind == L_OWN) say(" seed %u", l->seed);
    if (l->kind == L_WRAP) say(" seed %u", g->buf_seed[l->buf]);
    say("\n");
  }
  for (int k = 0; k < g->n_ops; k++) say_op(&g->op[k], k);
}

/* Whether a second run keeps every result within MAX_ELEMS: an op may read a variable that a
 * later op rewrote in the first run with other dims (v3 [4200, 1] transposed into v3 [1, 4200]
 * makes v3 * v5 a [4200, 4200] on the next run). */
static bool second_run_fits(const prog_a *g) {
  model m = g->m; /* the dims the first run leaves */
  for (int k = 0; k < g->n_ops; k++) {
    const op_spec *o = &g->op[k];
    ct_ddim ins[MAXIN], out;
    for (int i = 0; i < o->n_in; i++) ins[i] = m.dims[o->in[i]];
    if (!sim_dims(o, ins, &out)) out.rank = -1;
    if (ct_ddim_numel(out) > MAX_ELEMS) return false;
    m.dims[o->out] = out;
  }
  return true;
}

static void decode_a(fz_bytes *in, prog_a *g) {
  memset(g, 0, sizeof *g);
  uint8_t h = fz_u8(in);
  g->dt = h & 1 ? CT_FLOAT64 : CT_FLOAT32;
  g->special = (h >> 1) % 4 == 0;
  g->runs = 1 + ((h >> 3) & 1);
  family f = pick_family(in, false);
  gen_leaves(in, g, f);
  model *m = &g->m;
  g->n_ops = 1 + fz_u8(in) % MAXOPS;
  int n = 0, chain = 0; /* chain: 1 an add, 2 a relu comes next (reading the last op's output) */
  for (int k = 0; k < g->n_ops && (k == 0 || in->n > 0); k++) { /* ends with the input */
    op_spec *o = &g->op[n];
    int bias = -1;
    for (int v = 0; chain == 1 && v < g->n_leaves && bias < 0; v++) {
      if (m->dims[v].rank == 1) bias = v;
    }
    if (chain == 0 || n == 0 || (chain == 1 && bias < 0)) {
      gen_op(in, m, o);
      chain = 0;
    } else { /* the last op's output, then a rank-1 leaf as the bias */
      memset(o, 0, sizeof *o);
      o->type = chain == 1 ? 0 : 4; /* elementwise_add, relu (op_types) */
      o->n_in = chain == 1 ? 2 : 1;
      o->in[0] = g->op[n - 1].out;
      o->in[1] = bias;
      chain = chain == 1 ? 2 : 0;
    }
    uint8_t b = fz_u8(in);
    if (op_types[o->type].kind == K_MATMUL && (b & 0x60) == 0) chain = 1;
    bool fresh = (chain != 0 || b % 8 < 5) && m->n_vars < MAXV;
    if (fresh) {
      o->out = m->n_vars++;
    } else {
      o->out = (b >> 3) % m->n_vars; /* overwritten, in place when it is an input */
    }
    ct_ddim ins[MAXIN], out;
    for (int i = 0; i < o->n_in; i++) ins[i] = m->dims[o->in[i]];
    if (!sim_dims(o, ins, &out)) out.rank = -1;
    if (ct_ddim_numel(out) > MAX_ELEMS) { /* too large to be cheap: dropped */
      if (fresh) m->n_vars--;
      chain = 0;
      continue;
    }
    m->dims[o->out] = out;
    m->dt[o->out] = m->dt[o->in[0]];
    n++;
  }
  g->n_ops = n;
  if (g->runs == 2 && !second_run_fits(g)) g->runs = 1;
  /* Compared: the leaves, and the created variables whose last write comes at or after their
   * last read (the results free_intermediates keeps, which fuse_elementwise never fuses). */
  for (int v = 0; v < m->n_vars; v++) {
    int last_read = -1, last_write = -1;
    for (int k = 0; k < g->n_ops; k++) {
      for (int i = 0; i < g->op[k].n_in; i++) {
        if (g->op[k].in[i] == v) last_read = k;
      }
      if (g->op[k].out == v) last_write = k;
    }
    g->compared[v] = v < g->n_leaves || last_write >= last_read;
  }
}

static ct_program *build_a(const prog_a *g) {
  ct_program *p = ct_program_new();
  FZ_CHECK(p != NULL);
  for (int k = 0; k < g->n_ops; k++) append(p, make_op(&g->op[k], NULL));
  return p;
}

static ct_scope *scope_a(const prog_a *g, void *bufs[2], int released[MAXL]) {
  ct_scope *s = ct_scope_new();
  FZ_CHECK(s != NULL);
  for (int i = 0; i < g->n_leaves; i++) {
    const leaf_spec *l = &g->leaf[i];
    ct_tensor *t = var_tensor(s, i);
    const ct_tensor *src = find_tensor(s, var_name(l->src)); /* the viewed leaf, for views */
    ct_status st = CT_OK;
    switch (l->kind) {
      case L_OWN: set_stream(t, l->dims, l->dt, l->seed, g->special); break;
      case L_SHARE: st = ct_tensor_share(t, src); break;
      case L_SLICE: st = ct_tensor_slice(t, src, l->begin, l->end); break;
      case L_FLAT: st = ct_tensor_flatten_to_2d(t, src, (int)l->begin); break;
      default:
        st = ct_tensor_wrap(t, (char *)bufs[l->buf] + l->off * (int64_t)ct_dtype_size(l->dt),
                            l->dims, l->dt, ct_cpu(), on_release, &released[i]);
        break;
    }
    FZ_CHECK(st == CT_OK);
  }
  return s;
}

typedef struct outcome {
  ct_status status;
  bool made; /* the executor was made */
  snap var[MAXV];
  snap buf[2];
} outcome;

static void run_a(const prog_a *g, const ct_program *p, bool fuse, bool free_them, int threads,
                  bool optimize, outcome *r) {
  memset(r, 0, sizeof *r);
  ct_set_num_threads(threads);
  void *bufs[2] = {NULL, NULL};
  int released[MAXL] = {0};
  for (int b = 0; b < 2; b++) {
    if (g->buf_n[b] == 0) continue;
    bufs[b] = xalloc((size_t)g->buf_n[b] * ct_dtype_size(g->buf_dt[b]));
    fill(bufs[b], g->buf_dt[b], g->buf_n[b], g->buf_seed[b], g->special);
  }
  ct_scope *s = scope_a(g, bufs, released);
  ct_executor_options o = {.free_intermediates = free_them, .fuse_elementwise = fuse,
                           .optimize = optimize};
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
  r->made = e != NULL;
  r->status = e != NULL ? CT_OK : ct_last_status();
  for (int k = 0; k < g->runs && r->status == CT_OK; k++) r->status = ct_executor_run(e);
  if (r->status == CT_OK) {
    for (int v = 0; v < g->m.n_vars; v++) {
      if (g->compared[v]) r->var[v] = take(find_tensor(s, var_name(v)));
    }
  }
  ct_executor_free(e);
  ct_scope_free(s);
  for (int i = 0; i < g->n_leaves; i++) {
    if (g->leaf[i].kind == L_WRAP && released[i] != 1) {
      broken("fuse=%d free=%d threads=%d: the release of %s's buffer ran %d times", fuse,
             free_them, threads, var_name(i), released[i]);
    }
  }
  for (int b = 0; b < 2; b++) {
    if (bufs[b] == NULL) continue;
    size_t n = (size_t)g->buf_n[b] * ct_dtype_size(g->buf_dt[b]);
    r->buf[b] = (snap){.present = true, .readable = true, .dims = CT_DIMS(g->buf_n[b]),
                       .dt = g->buf_dt[b], .n = n, .bytes = malloc(n)};
    FZ_CHECK(r->buf[b].bytes != NULL);
    memcpy(r->buf[b].bytes, bufs[b], n);
    free(bufs[b]);
  }
  ct_set_num_threads(1);
}

static void drop_outcome(outcome *r) {
  for (int v = 0; v < MAXV; v++) drop(&r->var[v]);
  for (int b = 0; b < 2; b++) drop(&r->buf[b]);
}

void check_a(fz_bytes *in) {
  prog_a g;
  decode_a(in, &g);
  say_prog_a(&g);
  ct_program *p = build_a(&g);
  outcome ref, got;
  run_a(&g, p, false, false, 1, false, &ref);
  static const struct { bool fuse, free_them; int threads; bool optimize; } cfgs[] = {
      {true, false, 1, false}, {false, true, 1, false}, {true, true, 1, false},
      {false, false, 3, false}, {true, false, 3, false}, {false, true, 3, false},
      {true, true, 3, false},  {false, false, 1, true}, {true, true, 3, true}};
  for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
    run_a(&g, p, cfgs[c].fuse, cfgs[c].free_them, cfgs[c].threads, cfgs[c].optimize, &got);
    char cfg[112], why[256];
    snprintf(cfg, sizeof cfg, "fuse_elementwise=%d free_intermediates=%d threads=%d optimize=%d",
             cfgs[c].fuse, cfgs[c].free_them, cfgs[c].threads, cfgs[c].optimize);
    /* A fused group's members run at its root's turn, so when one of them fails, an op between
     * may fail first with its own status: with fuse_elementwise any failure matches one; so with
     * optimize, whose merged op checks its members' operands before any of them runs. */
    bool same_failure = got.status == ref.status ||
                        ((cfgs[c].fuse || cfgs[c].optimize) && got.status != CT_OK &&
                         ref.status != CT_OK);
    if (!same_failure || got.made != ref.made) {
      broken("%s: status %s%s, the plain executor's %s%s", cfg, ct_status_str(got.status),
             got.made ? "" : " (executor not made)", ct_status_str(ref.status),
             ref.made ? "" : " (executor not made)");
    }
    if (ref.status == CT_OK) {
      for (int v = 0; v < g.m.n_vars; v++) {
        if (g.compared[v] && !same_view(&ref.var[v], &got.var[v], why, sizeof why)) {
          broken("%s: variable %s %s", cfg, var_name(v), why);
        }
      }
      for (int b = 0; b < 2; b++) {
        if (ref.buf[b].present && !same_view(&ref.buf[b], &got.buf[b], why, sizeof why)) {
          broken("%s: external buffer %d: %s", cfg, b, why);
        }
      }
    }
    drop_outcome(&got);
  }
  drop_outcome(&ref);
  ct_program_free(p);
}
