/* SPDX-License-Identifier: Apache-2.0 */
/* tests/fault_sweep.h: the allocation fault sweep of the alloc_faults suites. A case makes a
 * fresh fixture (no faults), then runs one public call with allocation n failing
 * (core/common/fault.h), for n = 0, 1, 2, ... until a run makes no more than n allocations and
 * succeeds. At each n the call must fail with CT_ERR_OUT_OF_MEMORY and a message, leave what it
 * promised to leave (the fixture's watched scopes, tensors and file, and the host memory stats),
 * and, run again without faults on the same objects, succeed; after the fixture is freed the
 * memory stats are back where they started and LeakSanitizer finds nothing.
 *
 * Each case's count of allocation points is compared with its row in the table of
 * docs/design/reliability.md (| `name` | n |), so the table stays true. */
#ifndef CORTEN_TESTS_FAULT_SWEEP_H
#define CORTEN_TESTS_FAULT_SWEEP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fault.h"
#include "harness.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FS_LSAN 1
#endif
#endif
#if !defined(FS_LSAN) && defined(__SANITIZE_ADDRESS__)
#define FS_LSAN 1
#endif
#ifdef FS_LSAN
#include <sanitizer/lsan_interface.h>
#endif

#define FS_MAX 6 /* watched objects of each kind */
#define FS_BYTES 256
#define FS_DROPS_MEMORY 2

typedef struct fs_fixture {
  ct_scope *scope[FS_MAX];     /* watched: var count, kid count */
  ct_tensor *tensor[FS_MAX];   /* watched: dims, dtype, memory, first bytes */
  const char *file;            /* watched: the bytes of this file (NULL: none) */
  const ct_program *program;   /* watched: its number of ops */
  ct_scope *s, *s2;            /* the objects a case works on (freed by fs_teardown) */
  ct_tensor *t, *u, *w;
  ct_var *v;
  ct_op *op;
  ct_program *p;
  ct_executor *e;
  void *out; /* an object the call makes (freed by the case's own free_out) */
  int n_released; /* release callbacks run */
  char path[256];
} fs_fixture;

typedef struct fs_case {
  const char *name;
  void (*setup)(fs_fixture *f);
  ct_status (*call)(fs_fixture *f);
  void (*free_out)(fs_fixture *f); /* frees what a successful call made; may be NULL */
  int changes_watched; /* 0: a failure leaves every watched object as it was; FS_DROPS_MEMORY:
                          the same, but a tensor may lose its memory (keeping dims and dtype,
                          as ct_tensor_copy promises); 1: nothing promised, nothing compared */
} fs_case;

typedef struct fs_tensor_snap {
  ct_ddim dims;
  ct_dtype dtype;
  bool mem;
  size_t n;
  unsigned char bytes[FS_BYTES];
} fs_tensor_snap;

typedef struct fs_snap {
  size_t vars[FS_MAX], kids[FS_MAX];
  fs_tensor_snap t[FS_MAX];
  size_t allocated, ops;
  long file_len;
  unsigned char file[4096];
} fs_snap;

static inline void fs_take(const fs_fixture *f, fs_snap *sn) {
  memset(sn, 0, sizeof *sn);
  for (int i = 0; i < FS_MAX; i++) {
    if (f->scope[i] != NULL) {
      sn->vars[i] = ct_scope_var_count(f->scope[i]);
      sn->kids[i] = ct_scope_kid_count(f->scope[i]);
    }
    const ct_tensor *t = f->tensor[i];
    if (t == NULL) continue;
    sn->t[i].dims = ct_tensor_dims(t);
    sn->t[i].dtype = ct_tensor_dtype(t);
    sn->t[i].mem = ct_tensor_has_memory(t);
    if (sn->t[i].mem && sn->t[i].dtype != CT_DTYPE_UNDEFINED && ct_tensor_numel(t) >= 0) {
      const void *d = ct_tensor_data(t, sn->t[i].dtype);
      size_t n = (size_t)ct_tensor_numel(t) * ct_dtype_size(sn->t[i].dtype);
      sn->t[i].n = n < FS_BYTES ? n : FS_BYTES;
      if (d != NULL) memcpy(sn->t[i].bytes, d, sn->t[i].n);
    }
  }
  ct_memory_stats st;
  ck_assert_int_eq(ct_memory_stats_get(ct_cpu(), &st), CT_OK);
  sn->allocated = st.allocated;
  sn->ops = ct_program_size(f->program);
  sn->file_len = -1;
  FILE *fp = f->file ? fopen(f->file, "rb") : NULL;
  if (fp != NULL) {
    sn->file_len = (long)fread(sn->file, 1, sizeof sn->file, fp);
    fclose(fp);
  }
}

static inline void fs_same(const fs_case *c, long n, const fs_snap *a, const fs_snap *b) {
  for (int i = 0; i < FS_MAX; i++) {
    ck_assert_msg(a->vars[i] == b->vars[i] && a->kids[i] == b->kids[i],
                  "%s, allocation %ld failed: scope %d went from %zu vars, %zu kids to %zu, %zu",
                  c->name, n, i, a->vars[i], a->kids[i], b->vars[i], b->kids[i]);
    const fs_tensor_snap *x = &a->t[i], *y = &b->t[i];
    if (c->changes_watched == FS_DROPS_MEMORY && !y->mem) {
      ck_assert_msg(ct_ddim_equal(x->dims, y->dims) && x->dtype == y->dtype,
                    "%s, allocation %ld failed: tensor %d changed dims or dtype", c->name, n, i);
      continue;
    }
    ck_assert_msg(ct_ddim_equal(x->dims, y->dims) && x->dtype == y->dtype && x->mem == y->mem &&
                      x->n == y->n && memcmp(x->bytes, y->bytes, x->n) == 0,
                  "%s, allocation %ld failed: tensor %d changed", c->name, n, i);
  }
  ck_assert_msg(a->ops == b->ops, "%s, allocation %ld failed: the program went from %zu ops to %zu",
                c->name, n, a->ops, b->ops);
  ck_assert_msg(a->allocated == b->allocated || c->changes_watched == FS_DROPS_MEMORY,
                "%s, allocation %ld failed: tensors held %zu bytes before, %zu after", c->name, n,
                a->allocated, b->allocated);
  ck_assert_msg(a->file_len == b->file_len &&
                    (a->file_len <= 0 || memcmp(a->file, b->file, (size_t)a->file_len) == 0),
                "%s, allocation %ld failed: the file changed", c->name, n);
}

static inline void fs_teardown(const fs_case *c, fs_fixture *f, int made) {
  if (made && c->free_out != NULL) c->free_out(f);
  ct_executor_free(f->e);
  ct_program_free(f->p);
  ct_op_free(f->op);
  ct_var_free(f->v);
  ct_tensor_free(f->t);
  ct_tensor_free(f->u);
  ct_tensor_free(f->w);
  ct_scope_free(f->s2);
  ct_scope_free(f->s);
  if (f->path[0] != '\0') remove(f->path);
}

static inline size_t fs_allocated(void) {
  ct_memory_stats st;
  ck_assert_int_eq(ct_memory_stats_get(ct_cpu(), &st), CT_OK);
  return st.allocated;
}

static inline void fs_leak_check(const fs_case *c, long n) {
#ifdef FS_LSAN
  ck_assert_msg(__lsan_do_recoverable_leak_check() == 0,
                "%s, allocation %ld failed: LeakSanitizer found a leak (report above)", c->name, n);
#else
  (void)c;
  (void)n;
#endif
}

/* The row of name in the table of docs/design/reliability.md; -1 when missing. */
static inline long fs_table_count(const char *name) {
  FILE *fp = fopen(CORTEN_SOURCE_DIR "/docs/design/reliability.md", "r");
  ck_assert_msg(fp != NULL, "cannot open docs/design/reliability.md");
  char line[512], key[160];
  snprintf(key, sizeof key, "| `%s` |", name);
  long n = -1;
  while (fgets(line, sizeof line, fp) != NULL) {
    if (strncmp(line, key, strlen(key)) == 0) n = strtol(line + strlen(key), NULL, 10);
  }
  fclose(fp);
  return n;
}

/* Sweeps case c; returns its number of allocation points (allocations it can fail at). */
static inline long fs_sweep(const fs_case *c) {
  size_t base = fs_allocated();
  for (long n = 0;; n++) {
    fs_fixture f;
    memset(&f, 0, sizeof f);
    c->setup(&f);
    fs_snap before, after;
    fs_take(&f, &before);
    ct_clear_error();
    ct__fault_arm(n);
    ct_status s = c->call(&f);
    int fired = ct__fault_fired();
    ct__fault_arm(-1);
    if (!fired) {
      ck_assert_msg(s == CT_OK, "%s without a fault: %s", c->name, ct_last_error());
      fs_teardown(c, &f, 1);
      ck_assert_msg(fs_allocated() == base, "%s: tensor bytes left after the fixture went",
                    c->name);
      fs_leak_check(c, n);
      printf("| `%s` | %ld |\n", c->name, n); /* the table row */
      fflush(stdout);
      long want = fs_table_count(c->name);
      ck_assert_msg(want == n, "%s makes %ld allocations; reliability.md's table says %ld",
                    c->name, n, want);
      return n;
    }
    ck_assert_msg(s == CT_ERR_OUT_OF_MEMORY, "%s, allocation %ld failed: status %s (%s)",
                  c->name, n, ct_status_str(s), ct_last_error());
    ck_assert_msg(ct_last_status() == CT_ERR_OUT_OF_MEMORY && ct_last_error()[0] != '\0',
                  "%s, allocation %ld failed: no CT_ERR_OUT_OF_MEMORY message", c->name, n);
    if (c->changes_watched != 1) {
      fs_take(&f, &after);
      fs_same(c, n, &before, &after);
    }
    ck_assert_msg(c->call(&f) == CT_OK, "%s, allocation %ld failed; then without a fault: %s",
                  c->name, n, ct_last_error());
    fs_teardown(c, &f, 1);
    ck_assert_msg(fs_allocated() == base, "%s, allocation %ld failed: tensor bytes left",
                  c->name, n);
    fs_leak_check(c, n);
  }
}

/* One Check test per case: SWEEP(name) sweeps the case `name` (a static fs_case). */
#define SWEEP_TEST(var)                                            \
  START_TEST(sweep_##var) { (void)fs_sweep(&var); }                \
  END_TEST

#endif /* CORTEN_TESTS_FAULT_SWEEP_H */
