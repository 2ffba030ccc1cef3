/* bench_core: the speed of corten's core, each figure next to a baseline from the same run.
 *   var_get       ct_var_get of a held tensor   [std::any_cast on a Paddle-style Variable]
 *   find_var      hit at depth 0 and 3, miss at depth 3, among 1000 names like
 *                 "layer042.weight.0042"        [Paddle-style unordered_map + shared_mutex scope]
 *   alloc cycle   new variable + tensor + 4 KB mutable_data + free
 *                                               [the same bytes by hand: malloc of a header,
 *                                                mallocx/sdallocx of the data, free]
 * Single thread; medians of repeated batches after a warm-up. `bench_core --quick` runs fewer
 * repetitions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#ifdef CORTEN_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

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

int main(int argc, char **argv) {
  int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  int reps = quick ? 5 : 21;
  size_t iters = quick ? 200000 : 2000000;
  double base = -1.0;

  printf("corten bench_core (%s mode): median ns per operation, single thread\n",
         quick ? "quick" : "full");

  /* var_get */
  ct_var *v = ct_var_new();
  ct_var_tensor(v);
  double get_ns = bench_median_ns(var_get_batch, v, iters * 10, reps);
#ifdef CORTEN_BENCH_CXX
  void *pv = pd_get_setup();
  base = bench_median_ns(pd_get_batch, pv, iters * 10, reps);
  pd_get_teardown(pv);
#endif
  bench_row("ct_var_get (held tensor)", get_ns, "std::any_cast (Paddle-style Variable)", base);
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
      {"ct_scope_find_var hit, depth 0", "Paddle-style FindVar hit, depth 0", root, 0, keys},
      {"ct_scope_find_var hit, depth 3", "Paddle-style FindVar hit, depth 3", kid, 3, keys},
      {"ct_scope_find_var miss, depth 3", "Paddle-style FindVar miss, depth 3", kid, 3, miss},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    find_ctx fc = {cases[c].from, cases[c].k, NAMES};
    double ns = bench_median_ns(find_batch, &fc, iters, reps);
    base = -1.0;
#ifdef CORTEN_BENCH_CXX
    void *pb = pd_find_setup(names, NAMES, cases[c].depth, KID_LOCALS, cases[c].k, NAMES);
    base = bench_median_ns(pd_find_batch, pb, iters, reps);
    pd_find_teardown(pb);
#endif
    bench_row(cases[c].row, ns, cases[c].brow, base);
  }
  ct_scope_free(root);

  /* alloc cycle */
  double cyc = bench_median_ns(alloc_cycle_batch, NULL, iters / 2, reps);
  base = bench_median_ns(alloc_cycle_baseline, NULL, iters / 2, reps);
  bench_row("var + tensor + 4 KB mutable_data + free", cyc, "malloc x2 + mallocx/sdallocx 4 KB", base);
  return 0;
}
