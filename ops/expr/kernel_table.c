/* SPDX-License-Identifier: Apache-2.0 */
/* ops/expr/kernel_table.c: the compiled expression kernels in memory (ops/expr/nvrtc.h), in front
 * of the disk cache (ops/expr/kernel_cache.h) and NVRTC.
 *
 * A small array searched by hash then key: at most CT__KERNELS_MAX entries, each lookup far
 * cheaper than the launch it serves. One mutex guards it; compiling and reading the disk run
 * outside it, so a slow compile never blocks launches of kernels already there (two threads
 * wanting the same new kernel may both compile it; the second insert is dropped). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "ops/expr/kernel_cache.h"
#include "ops/expr/nvrtc.h"
#include "common/alloc.h"

typedef struct entry {
  ct__kernel k;   /* first: a ct__kernel * is the entry */
  char *key;
  uint64_t hash;
  uint64_t used;  /* the table's clock at the last get */
  int refs;       /* the table's, if listed, plus each get's */
  _Atomic uint64_t devices; /* bit d: launched on device d (bit 63: on one of 63 and above) */
  void (*unload)(void *handle, uint64_t devices);
} entry;

static struct {
  pthread_mutex_t mu;
  entry **e;      /* n of them, cap allocated */
  int n, cap, max;
  uint64_t clock;
  ct__kernel_stats stats;
} tab = {.mu = PTHREAD_MUTEX_INITIALIZER};

static uint64_t hash_of(const char *s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
  return h;
}

static int bound(void) { return tab.max > 0 ? tab.max : CT__KERNELS_MAX; }

/* Drops one reference; the caller holds tab.mu. The entry to free, or NULL. */
static entry *unref(entry *x) {
  return --x->refs == 0 ? x : NULL;
}

static void destroy(entry *x) {
  if (x == NULL) return;
  if (x->k.handle != NULL && x->unload != NULL) {
    x->unload(x->k.handle, atomic_load_explicit(&x->devices, memory_order_relaxed));
  }
  free((void *)x->k.bin);
  free(x->key);
  free(x);
}

/* The listed entry of key, with a reference taken; the caller holds tab.mu. */
static entry *find(const char *key, uint64_t h) {
  for (int i = 0; i < tab.n; i++) {
    entry *x = tab.e[i];
    if (x->hash == h && strcmp(x->key, key) == 0) {
      x->refs++;
      x->used = ++tab.clock;
      return x;
    }
  }
  return NULL;
}

/* Lists x (with the table's reference and the caller's); when the table is full, the least
 * recently used entry is unlisted first and, unless someone still holds it, put in *dead. The
 * caller holds tab.mu. false when the array cannot grow (x is then unlisted). */
static bool insert(entry *x, entry **dead, int *n_dead) {
  if (tab.n >= bound()) {
    int old = 0;
    for (int i = 1; i < tab.n; i++) {
      if (tab.e[i]->used < tab.e[old]->used) old = i;
    }
    entry *v = tab.e[old];
    tab.e[old] = tab.e[--tab.n];
    tab.stats.evictions++;
    dead[(*n_dead)++] = unref(v);
  }
  if (tab.n == tab.cap) {
    int cap = tab.cap ? tab.cap * 2 : 16;
    entry **e = ct__realloc(tab.e, sizeof *e * (size_t)cap);
    if (e == NULL) return false;
    tab.e = e;
    tab.cap = cap;
  }
  x->refs = 2;
  x->used = ++tab.clock;
  tab.e[tab.n++] = x;
  return true;
}

/* A new entry holding bin: from the disk cache, else compiled and stored there. */
static entry *make(const char *key, const char *source, const char *target, bool *from_disk) {
  entry *x = ct__calloc(1, sizeof *x);
  char *k = ct__strdup(key);
  if (x == NULL || k == NULL) {
    free(x);
    free(k);
    return ct__error_null(CT_ERR_OUT_OF_MEMORY, "ct_expr_assign: no memory for a kernel entry");
  }
  x->key = k;
  x->hash = hash_of(key);
  char dir[4096];
  bool disk = ct__kcache_dir(dir, sizeof dir);
  void *bin = disk ? ct__kcache_load(dir, key, &x->k.n) : NULL;
  *from_disk = bin != NULL;
  if (bin == NULL) {
    if (ct__nvrtc_compile(source, target, &bin, &x->k.n) != CT_OK) {
      destroy(x);
      return NULL;
    }
    if (disk) (void)ct__kcache_store(dir, key, bin, x->k.n, ct__kcache_max_bytes());
  }
  x->k.bin = bin;
  return x;
}

ct__kernel *ct__kernels_get(const char *source, const char *target) {
  if (ct__nvrtc_available() != CT_OK) return NULL;
  /* The key: the whole source, then what else the binary depends on. */
  size_t n = strlen(source) + strlen(target) + 64;
  char *key = ct__malloc(n);
  if (key == NULL) {
    return ct__error_null(CT_ERR_OUT_OF_MEMORY, "ct_expr_assign: no memory for a kernel key");
  }
  snprintf(key, n, "%s\n// target %s, NVRTC %s\n", source, target, ct__nvrtc_version());
  uint64_t h = hash_of(key);
  pthread_mutex_lock(&tab.mu);
  entry *x = find(key, h);
  if (x != NULL) tab.stats.memory_hits++;
  pthread_mutex_unlock(&tab.mu);
  if (x != NULL) {
    free(key);
    return &x->k;
  }
  bool from_disk = false;
  x = make(key, source, target, &from_disk);
  if (x == NULL) {
    free(key);
    return NULL;
  }
  entry *dead[2] = {NULL, NULL};
  int n_dead = 0;
  pthread_mutex_lock(&tab.mu);
  if (from_disk) {
    tab.stats.disk_hits++;
  } else {
    tab.stats.compiles++;
  }
  entry *had = find(key, h); /* another thread made it meanwhile: use that one */
  if (had != NULL) {
    dead[n_dead++] = x;
    x = had;
  } else if (!insert(x, dead, &n_dead)) {
    x->refs = 1; /* unlisted: the caller's alone */
  }
  tab.stats.live = tab.n;
  pthread_mutex_unlock(&tab.mu);
  free(key);
  for (int i = 0; i < n_dead; i++) destroy(dead[i]);
  return &x->k;
}

void ct__kernels_put(ct__kernel *k) {
  if (k == NULL) return;
  pthread_mutex_lock(&tab.mu);
  entry *x = unref((entry *)k);
  pthread_mutex_unlock(&tab.mu);
  destroy(x);
}

void *ct__kernels_loaded(ct__kernel *k) {
  pthread_mutex_lock(&tab.mu);
  void *fn = k->fn;
  pthread_mutex_unlock(&tab.mu);
  return fn;
}

bool ct__kernels_attach(ct__kernel *k, void *handle, void *fn,
                        void (*unload)(void *handle, uint64_t devices)) {
  entry *x = (entry *)k;
  pthread_mutex_lock(&tab.mu);
  bool took = x->k.handle == NULL;
  if (took) {
    x->k.handle = handle;
    x->k.fn = fn;
    x->unload = unload;
  }
  pthread_mutex_unlock(&tab.mu);
  return took;
}

/* Relaxed: whoever frees the entry took tab.mu after this caller's put (unref), which orders the
 * bit before the read in destroy. */
void ct__kernels_launching(ct__kernel *k, int device) {
  uint64_t bit = (uint64_t)1 << (device < 63 ? device : 63);
  atomic_fetch_or_explicit(&((entry *)k)->devices, bit, memory_order_relaxed);
}

void ct__kernels_stats(ct__kernel_stats *s) {
  pthread_mutex_lock(&tab.mu);
  *s = tab.stats;
  s->live = tab.n;
  pthread_mutex_unlock(&tab.mu);
}

void ct__kernels_reset(int max) {
  pthread_mutex_lock(&tab.mu);
  entry **e = tab.e;
  int n = tab.n;
  for (int i = 0; i < n; i++) e[i] = unref(e[i]);
  tab.e = NULL;
  tab.n = tab.cap = 0;
  tab.max = max;
  tab.clock = 0;
  memset(&tab.stats, 0, sizeof tab.stats);
  pthread_mutex_unlock(&tab.mu);
  for (int i = 0; i < n; i++) destroy(e[i]);
  free(e);
}
