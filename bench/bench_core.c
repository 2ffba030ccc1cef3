/* SPDX-License-Identifier: Apache-2.0 */
/* bench_core.c: the speed of corten's core, each figure next to a baseline from the same run.
 *   var_get       ct_var_get of a held tensor   [std::any_cast on a Paddle-style Variable]
 *   find_var      hit at depth 0 and 3, miss at depth 0 and 3, among 1000 names like
 *                 "layer042.weight.0042"        [Paddle-style unordered_map + shared_mutex scope]
 *   alloc cycle   new variable + tensor + 4 KB mutable_data + free
 *                                               [torch::empty({1024}) from libtorch; and the
 *                                                same bytes by hand: malloc of a header,
 *                                                mallocx/sdallocx of the data, free]
 * Single thread; medians of repeated batches after a warm-up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#ifdef CORTEN_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

#include "bench_torch.h"
#include "bench_util.h"

#define NAMES 1000
#define KID_LOCALS 16

#ifdef CORTEN_BENCH_CXX
void *pd_find_setup(const char *const *names, size_t n, int depth, size_t locals,
                    const char *const *keys, size_t nkeys);
void pd_find_batch(void *arg, size_t iters);
void pd_find_teardown(void *arg);
void *pd_get_setup(void);
void pd_get_batch(void *arg, size_t iters);
void pd_get_teardown(void *arg);
#endif

/* ---- ct_var_get ----------------------------------------------------------------------------- */

static void var_get_batch(void *arg, size_t iters) {
  const ct_var *v = arg;
  for (size_t i = 0; i < iters; i++) {
    const void *t = ct_var_get(v, &ct_tensor_type);
    BENCH_KEEP(t);
  }
}

/* ---- find_var ------------------------------------------------------------------------------- */

typedef struct find_ctx {
  const ct_scope *from;
  const char *const *keys;
  size_t nkeys;
} find_ctx;

static void find_batch(void *arg, size_t iters) {
  const find_ctx *c = arg;
  for (size_t i = 0, k = 0; i < iters; i++, k = k + 1 == c->nkeys ? 0 : k + 1) {
    ct_var *v = ct_scope_find_var(c->from, c->keys[k]);
    BENCH_KEEP(v);
  }
}

/* ---- alloc cycle ---------------------------------------------------------------------------- */

static void alloc_cycle_batch(void *arg, size_t iters) {
  (void)arg;
  for (size_t i = 0; i < iters; i++) {
    ct_var *v = ct_var_new();
    ct_tensor *t = ct_var_tensor(v);
    ct_tensor_resize(t, CT_DIMS(1024));
    void *p = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu());
    BENCH_KEEP(p);
    ct_var_free(v);
  }
}

/* The same allocations by hand: a variable-sized header, a block header, the 4 KB of data. */
static void alloc_cycle_baseline(void *arg, size_t iters) {
  (void)arg;
  for (size_t i = 0; i < iters; i++) {
    void *var = malloc(192);
    void *hdr = malloc(64);
#ifdef CORTEN_HAVE_JEMALLOC
    void *p = mallocx(4096, MALLOCX_ALIGN(64));
#else
    void *p = aligned_alloc(64, 4096);
#endif
    BENCH_KEEP(var);
    BENCH_KEEP(hdr);
    BENCH_KEEP(p);
#ifdef CORTEN_HAVE_JEMALLOC
    sdallocx(p, 4096, MALLOCX_ALIGN(64));
#else
    free(p);
#endif
    free(hdr);
    free(var);
  }
}

void bench_core_rows(const bench_cfg *cfg) {
  int quick = cfg->quick;
  int reps = cfg->reps;
  size_t iters = quick ? 200000 : 2000000;
  double base = BENCH_NOT_INSTALLED;

  /* var_get */
  ct_var *v = ct_var_new();
  ct_var_tensor(v);
  double get_ns = bench_median_ns(var_get_batch, v, iters * 10, reps);
#ifdef CORTEN_BENCH_CXX
  void *pv = pd_get_setup();
  base = bench_median_ns(pd_get_batch, pv, iters * 10, reps);
  pd_get_teardown(pv);
#endif
  bench_record("typed variable get (ct_var_get)", get_ns, "std::any_cast, Paddle-style Variable",
               base, "ns/op");
  ct_var_free(v);

  /* find_var: 1000 names in the root, 3 kids below it with locals of their own */
  static char names_buf[NAMES][32];
  const char *names[NAMES], *keys[NAMES], *miss[NAMES];
  static char miss_buf[NAMES][32];
  for (int i = 0; i < NAMES; i++) {
    snprintf(names_buf[i], sizeof names_buf[i], "layer%03d.weight.%04d", i % 100, i);
    snprintf(miss_buf[i], sizeof miss_buf[i], "layer%03d.bias.%04d", i % 100, i);
    names[i] = names_buf[i];
    miss[i] = miss_buf[i];
  }
  /* Look keys up in a scattered order, as a program would. */
  for (int i = 0; i < NAMES; i++) keys[i] = names[(i * 617) % NAMES];
  ct_scope *root = ct_scope_new(), *kid = root;
  for (int i = 0; i < NAMES; i++) ct_scope_var(root, names[i]);
  for (int d = 1; d <= 3; d++) {
    char local[48];
    kid = ct_scope_new_kid(kid);
    for (int i = 0; i < KID_LOCALS; i++) {
      snprintf(local, sizeof local, "local.%d.%d", d, i);
      ct_scope_var(kid, local);
    }
  }
  struct {
    const char *row, *brow;
    const ct_scope *from;
    int depth;
    const char *const *k;
  } cases[] = {
      {"find_var hit, depth 0, 1000 names", "Paddle-style Scope::FindVar", root, 0, keys},
      {"find_var hit, depth 3, 1000 names", "Paddle-style Scope::FindVar", kid, 3, keys},
      {"find_var miss, depth 0, 1000 names", "Paddle-style Scope::FindVar", root, 0, miss},
      {"find_var miss, depth 3, 1000 names", "Paddle-style Scope::FindVar", kid, 3, miss},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    find_ctx fc = {cases[c].from, cases[c].k, NAMES};
    double ns = bench_median_ns(find_batch, &fc, iters, reps);
    base = BENCH_NOT_INSTALLED;
#ifdef CORTEN_BENCH_CXX
    void *pb = pd_find_setup(names, NAMES, cases[c].depth, KID_LOCALS, cases[c].k, NAMES);
    base = bench_median_ns(pd_find_batch, pb, iters, reps);
    pd_find_teardown(pb);
#endif
    bench_record(cases[c].row, ns, cases[c].brow, base, "ns/op");
  }
  ct_scope_free(root);

  /* alloc cycle */
  double cyc = bench_median_ns(alloc_cycle_batch, NULL, iters / 2, reps);
  base = BENCH_NOT_INSTALLED;
#ifdef CORTEN_BENCH_TORCH
  base = bench_median_ns(tb_empty_batch, NULL, iters / 2, reps);
#endif
  bench_record("var + tensor + 4 KB mutable_data + free", cyc, "torch::empty({1024}) + release", base,
               "ns/op");
  base = bench_median_ns(alloc_cycle_baseline, NULL, iters / 2, reps);
  bench_record("var + tensor + 4 KB mutable_data + free", cyc, "malloc x2 + mallocx/sdallocx 4 KB",
               base, "ns/op");
}
