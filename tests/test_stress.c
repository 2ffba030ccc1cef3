/* SPDX-License-Identifier: Apache-2.0 */
/* Concurrency stress: 8 threads on one scope tree, within the contract of corten/scope.h and
 * corten/tensor.h, checked for consistency here and for data races by the ThreadSanitizer build
 * (-DCORTEN_TSAN=ON), which must report nothing.
 *
 * What runs at the same time:
 *   - on the shared root: find_var, find_local_var, find_scope, var, erase_vars, rename,
 *     new_kid, var_count and local_var_names over a small set of names, so that creates, erases
 *     and renames of the same names collide all the time (only lookups and changes of the
 *     table: no thread touches the value of a shared variable, which erase destroys);
 *   - per thread, in its own kid of the root: variables holding tensors, grandkids made with
 *     new_kid, looked through (find_var walks up to the root) and freed with drop_kids (which
 *     may not run alongside calls on the scopes it frees, so only their owner thread uses them);
 *   - tensors whose blocks are shared across threads: each thread publishes views of blocks it
 *     allocated into a mailbox and frees the views other threads published, so the last
 *     reference to a block is dropped on a thread other than the one that allocated it;
 *   - executors made, run and freed on four threads under a process profile and an allocation
 *     observer, with kid scopes freed under live executors (their watches).
 * The iteration count per thread comes from CORTEN_STRESS_ITERS (default 4000). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "harness.h"

#define THREADS 8
#define NAMES 24
#define MAILBOX 16

static ct_scope *root;
static ct_scope *own_kid[THREADS];
static ct_tensor *_Atomic mailbox[MAILBOX];
static atomic_long ops_done;
static atomic_long mismatches;
static long iters;

static const char *names[NAMES];
static char name_buf[NAMES][32];

static uint64_t next_rand(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* A tensor of 16 int64s all equal to tag, in its own new block. */
static ct_tensor *tagged(int64_t tag) {
  ct_tensor *t = ct_tensor_new();
  if (t == NULL || ct_tensor_resize(t, CT_DIMS(16)) != CT_OK) return t;
  int64_t *p = ct_tensor_mutable_data(t, CT_INT64, ct_cpu());
  if (p != NULL) {
    for (int i = 0; i < 16; i++) p[i] = tag;
  }
  return t;
}

/* Every element of t equals its first, which is a tag some thread wrote. */
static void check_tagged(const ct_tensor *t) {
  const int64_t *p = ct_tensor_data(t, CT_INT64);
  int64_t n = ct_tensor_numel(t);
  if (p == NULL || n <= 0) {
    atomic_fetch_add(&mismatches, 1);
    return;
  }
  for (int64_t i = 1; i < n; i++) {
    if (p[i] != p[0]) atomic_fetch_add(&mismatches, 1);
  }
}

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  uint64_t rnd = 0x9e3779b97f4a7c15u * (uint64_t)(id + 1);
  long ops = 0;
  ct_scope *mine = own_kid[id];
  char own_name[32];
  for (long it = 0; it < iters; it++) {
    const char *a = names[next_rand(&rnd) % NAMES];
    const char *b = names[next_rand(&rnd) % NAMES];
    switch (next_rand(&rnd) % 8) {
      case 0:
      case 1: {
        ct_var *v = ct_scope_find_var(root, a);
        if (v == NULL && ct_last_status() != CT_ERR_NOT_FOUND) atomic_fetch_add(&mismatches, 1);
        const ct_scope *holder = ct_scope_find_scope(mine, a);
        if (holder != NULL && holder != root && holder != mine) atomic_fetch_add(&mismatches, 1);
        (void)ct_scope_find_local_var(root, b);
        ops += 3;
        break;
      }
      case 2:
      case 3:
        if (ct_scope_var(root, a) == NULL) atomic_fetch_add(&mismatches, 1);
        ops++;
        break;
      case 4: {
        const char *two[2] = {a, b};
        size_t n = ct_scope_erase_vars(root, two, a == b ? 1 : 2);
        if (n > 2) atomic_fetch_add(&mismatches, 1);
        ops++;
        break;
      }
      case 5: {
        ct_status s = ct_scope_rename(root, a, b);
        if (s != CT_OK && s != CT_ERR_NOT_FOUND && s != CT_ERR_ALREADY_EXISTS) {
          atomic_fetch_add(&mismatches, 1);
        }
        ops++;
        break;
      }
      case 6: {
        /* Own subtree: a grandkid with a variable, looked through, then dropped. */
        ct_scope *g = ct_scope_new_kid(mine);
        snprintf(own_name, sizeof own_name, "g%d", id);
        ct_tensor *t = ct_var_tensor(ct_scope_var(g, own_name));
        int64_t one = id;
        if (t == NULL || ct_tensor_set_value(t, &one, CT_DIMS(1), CT_INT64, ct_cpu()) != CT_OK) {
          atomic_fetch_add(&mismatches, 1);
        }
        ct_var *fv = ct_scope_find_var(g, own_name);
        const int64_t *pv = fv ? ct_tensor_data(ct_var_get_tensor(fv), CT_INT64) : NULL;
        if (pv == NULL || *pv != id) atomic_fetch_add(&mismatches, 1);
        (void)ct_scope_find_var(g, a); /* walks g, mine, root */
        if (it % 64 == 0) {
          if (ct_scope_new_kid(root) == NULL) atomic_fetch_add(&mismatches, 1);
          ops++;
        }
        ct_scope_drop_kids(mine);
        (void)ct_scope_var_count(root);
        const char *listed[NAMES];
        size_t n = ct_scope_local_var_names(root, listed, NAMES);
        (void)n;
        ops += 8;
        break;
      }
      default: {
        /* Tensors across threads: publish a view of a fresh block, free what comes back. */
        ct_tensor *own = tagged(id * 1000000 + it);
        ct_tensor *view = ct_tensor_new();
        if (own == NULL || view == NULL || ct_tensor_slice(view, own, 2, 10) != CT_OK) {
          atomic_fetch_add(&mismatches, 1);
        }
        ct_tensor_free(own); /* the view now holds the block's only reference */
        ct_tensor *got = atomic_exchange_explicit(&mailbox[next_rand(&rnd) % MAILBOX], view,
                                                  memory_order_acq_rel);
        if (got != NULL) {
          check_tagged(got);
          ct_tensor *again = ct_tensor_new();
          if (ct_tensor_share(again, got) != CT_OK) atomic_fetch_add(&mismatches, 1);
          ct_tensor_free(got);
          check_tagged(again);
          ct_tensor_free(again);
        }
        ops += 8;
        break;
      }
    }
  }
  atomic_fetch_add(&ops_done, ops);
  return NULL;
}

START_TEST(eight_threads_share_one_scope_tree) {
  const char *env = getenv("CORTEN_STRESS_ITERS");
  iters = env ? atol(env) : 4000;
  if (iters <= 0) iters = 4000;
  for (int i = 0; i < NAMES; i++) {
    /* Short names live inline in the variable, long ones in heap blocks that renames replace. */
    if (i % 3 == 0) {
      snprintf(name_buf[i], sizeof name_buf[i], "layer%02d.weight.with.a.long.name", i);
    } else {
      snprintf(name_buf[i], sizeof name_buf[i], "v%d", i);
    }
    names[i] = name_buf[i];
  }
  root = ct_scope_new();
  ck_assert_ptr_nonnull(root);
  for (int i = 0; i < THREADS; i++) {
    own_kid[i] = ct_scope_new_kid(root);
    ck_assert_ptr_nonnull(own_kid[i]);
  }
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; i++) {
    ck_assert_int_eq(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i), 0);
  }
  for (int i = 0; i < THREADS; i++) ck_assert_int_eq(pthread_join(th[i], NULL), 0);

  ck_assert_int_eq(atomic_load(&mismatches), 0);
  /* The root's table agrees with itself: every listed name is found, under that name, once. */
  const char *listed[NAMES + 1];
  size_t n = ct_scope_local_var_names(root, listed, NAMES + 1);
  ck_assert_uint_le(n, NAMES);
  ck_assert_uint_eq(n, ct_scope_var_count(root));
  for (size_t i = 0; i < n; i++) {
    ct_var *v = ct_scope_find_local_var(root, listed[i]);
    ck_assert_ptr_nonnull(v);
    ck_assert_str_eq(ct_var_name(v), listed[i]);
    if (i > 0) ck_assert_int_lt(strcmp(listed[i - 1], listed[i]), 0);
  }
  for (int i = 0; i < MAILBOX; i++) {
    ct_tensor *t = atomic_exchange(&mailbox[i], NULL);
    if (t != NULL) check_tagged(t);
    ct_tensor_free(t);
  }
  ck_assert_int_eq(atomic_load(&mismatches), 0);
  ct_scope_free(root);
  ct_memory_stats st;
  st = cpu_stats();
  ck_assert_uint_eq(st.allocated, 0);
  ck_assert_uint_eq(st.allocs, st.frees);
  printf("stress: %d threads, %ld iterations each, %ld scope and tensor operations\n", THREADS,
         iters, atomic_load(&ops_done));
}
END_TEST

/* Blocks of 256 KiB go through the shared host cache (not the per-thread caches): three threads
 * each allocate, write, check and free their own tensor in a loop, so a block one thread puts
 * back another takes at once. Under AddressSanitizer the cache poisons a block it holds and
 * unpoisons it when handing it out; a poison landing after another thread took the block would
 * report a live tensor as freed (issue 32: it did, within seconds, before the poison moved under
 * the cache's lock). */
static void *large_blocks_worker(void *arg) {
  int64_t tag = (int64_t)(intptr_t)arg;
  for (long it = 0; it < iters / 4 + 50; it++) {
    ct_tensor *t = ct_tensor_new();
    if (t == NULL || ct_tensor_resize(t, CT_DIMS(32768)) != CT_OK) {
      atomic_fetch_add(&mismatches, 1);
      ct_tensor_free(t);
      continue;
    }
    int64_t *p = ct_tensor_mutable_data(t, CT_INT64, ct_cpu());
    if (p == NULL) {
      atomic_fetch_add(&mismatches, 1);
    } else {
      for (int i = 0; i < 32768; i += 512) p[i] = tag + it;
      for (int i = 0; i < 32768; i += 512) {
        if (p[i] != tag + it) atomic_fetch_add(&mismatches, 1);
      }
    }
    ct_tensor_free(t);
  }
  return NULL;
}

START_TEST(three_threads_cycle_large_blocks_through_the_host_cache) {
  const char *env = getenv("CORTEN_STRESS_ITERS");
  iters = env ? atol(env) : 4000;
  if (iters <= 0) iters = 4000;
  atomic_store(&mismatches, 0);
  pthread_t th[3];
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(pthread_create(&th[i], NULL, large_blocks_worker,
                                    (void *)(intptr_t)(i * 1000000)), 0);
  }
  for (int i = 0; i < 3; i++) ck_assert_int_eq(pthread_join(th[i], NULL), 0);
  ck_assert_int_eq(atomic_load(&mismatches), 0);
  ct_memory_stats st = cpu_stats();
  ck_assert_uint_eq(st.allocated, 0);
}
END_TEST

/* ---- Profiling, allocation observers and executor watches from several threads ------------- */

static _Atomic long observed_allocs, observed_frees;

static void count_events(void *arg, const ct_memory_event *e) {
  (void)arg;
  atomic_fetch_add(e->alloc ? &observed_allocs : &observed_frees, 1);
}

static ct_op *unary(const char *type, const char *x, const char *out) {
  ct_op *op = ct_op_new(type);
  ck_assert_int_eq(ct_op_set_input(op, "X", x), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", out), CT_OK);
  return op;
}

/* Each iteration: an executor over the thread's scope, made, run and freed; and one over a kid
 * scope freed before its executor runs again (which must refuse). */
static void *profiled_worker(void *arg) {
  const ct_program *p = arg;
  ct_scope *s = ct_scope_new();
  ct_tensor *x = ct_var_tensor(ct_scope_var(s, "x"));
  if (ct_tensor_resize(x, CT_DIMS(8, 8)) != CT_OK ||
      ct_tensor_mutable_data(x, CT_FLOAT32, ct_cpu()) == NULL) {
    atomic_fetch_add(&mismatches, 1);
  }
  long n = iters / 20 > 0 ? iters / 20 : 1;
  for (long it = 0; it < n; it++) {
    ct_executor *e = ct_executor_new(p, s, ct_cpu());
    if (e == NULL || ct_executor_run(e) != CT_OK) atomic_fetch_add(&mismatches, 1);
    ct_executor_free(e);
    ct_scope *kid = ct_scope_new_kid(s);
    ct_executor *k = ct_executor_new(p, kid, ct_cpu());
    if (k == NULL || ct_executor_run(k) != CT_OK) atomic_fetch_add(&mismatches, 1);
    ct_scope_free(kid);
    if (ct_executor_run(k) != CT_ERR_INVALID_ARGUMENT) atomic_fetch_add(&mismatches, 1);
    ct_executor_free(k);
  }
  ct_scope_free(s);
  return NULL;
}

START_TEST(threads_run_executors_under_a_profile_and_an_observer) {
  const char *env = getenv("CORTEN_STRESS_ITERS");
  iters = env ? atol(env) : 4000;
  if (iters <= 0) iters = 4000;
  atomic_store(&mismatches, 0);
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, unary("relu", "x", "y")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, unary("tanh", "y", "z")), CT_OK);
  ct_memory_stats before = cpu_stats();
  atomic_store(&observed_allocs, 0);
  atomic_store(&observed_frees, 0);
  ct_memory_set_observer(count_events, NULL);
  ct_profile *prof = ct_profile_start(CT_PROFILE_PROCESS);
  ck_assert_ptr_nonnull(prof);
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(pthread_create(&th[i], NULL, profiled_worker, p), 0);
  }
  for (int i = 0; i < 4; i++) ck_assert_int_eq(pthread_join(th[i], NULL), 0);
  ck_assert_int_eq(ct_profile_stop(prof), CT_OK);
  ct_memory_set_observer(NULL, NULL);
  ct_memory_stats after = cpu_stats();
  long n = iters / 20 > 0 ? iters / 20 : 1;
  ck_assert_int_eq(atomic_load(&mismatches), 0);
  /* per iteration two runs of two ops each, and a run event each: the refused run records none */
  ck_assert_uint_eq(ct_profile_count(prof), (size_t)(4 * n * 2 * 3));
  ck_assert_int_eq(atomic_load(&observed_allocs), (long)(after.allocs - before.allocs));
  ck_assert_int_eq(atomic_load(&observed_frees), (long)(after.frees - before.frees));
  ck_assert_uint_eq(after.allocated, before.allocated);
  ct_profile_free(prof);
  ct_program_free(p);
}
END_TEST

/* Lookups compare names a word at a time (core/scope/name_table.h): every length from 1 to 80,
 * names that differ only in their first or last byte, and renames between short (inline) and
 * long (heap) names. */
START_TEST(names_of_every_length_are_told_apart) {
  ct_scope *s = ct_scope_new();
  char a[96], b[128];
  for (size_t len = 1; len <= 80; len++) {
    for (size_t i = 0; i < len; i++) a[i] = (char)('a' + (i * 7 + len) % 26);
    a[len] = '\0';
    ct_var *v = ct_scope_var(s, a);
    ck_assert_ptr_nonnull(v);
    ck_assert_ptr_eq(ct_scope_find_var(s, a), v);
    memcpy(b, a, len + 1);
    b[len - 1] = '#';
    ck_assert_ptr_null(ct_scope_find_var(s, b));
    b[len - 1] = a[len - 1];
    b[0] = '#';
    ck_assert_ptr_null(ct_scope_find_var(s, b));
    /* Rename to a name of another length and back: the same ct_var under both. */
    snprintf(b, sizeof b, "%s%s", a, len % 2 ? "" : "-renamed-to-something-longer");
    if (strcmp(a, b) != 0) {
      ck_assert_int_eq(ct_scope_rename(s, a, b), CT_OK);
      ck_assert_ptr_null(ct_scope_find_var(s, a));
      ck_assert_ptr_eq(ct_scope_find_var(s, b), v);
      ck_assert_int_eq(ct_scope_rename(s, b, a), CT_OK);
    }
    ck_assert_ptr_eq(ct_scope_find_var(s, a), v);
    ck_assert_str_eq(ct_var_name(v), a);
  }
  ck_assert_uint_eq(ct_scope_var_count(s), 80);
  ct_scope_free(s);
}
END_TEST

static Suite *stress_suite(void) {
  Suite *s = suite_create("stress");
  TCase *tc = tcase_create("eight_threads_share_one_scope_tree");
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, eight_threads_share_one_scope_tree);
  suite_add_tcase(s, tc);
  TCase *large = tcase_create("three_threads_cycle_large_blocks_through_the_host_cache");
  tcase_set_timeout(large, 240);
  tcase_add_test(large, three_threads_cycle_large_blocks_through_the_host_cache);
  suite_add_tcase(s, large);
  TCase *prof = tcase_create("threads_run_executors_under_a_profile_and_an_observer");
  tcase_set_timeout(prof, 240);
  tcase_add_test(prof, threads_run_executors_under_a_profile_and_an_observer);
  suite_add_tcase(s, prof);
  CT_ADD_TEST(s, names_of_every_length_are_told_apart);
  return s;
}

CT_TEST_MAIN(stress_suite)
