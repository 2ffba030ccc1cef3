/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_scope_threads.c: threads sharing one scope tree under its thread contract. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <corten/corten.h>

#include "scope_util.h"

/* ---- Threads --------------------------------------------------------------------------------- */

#define T_THREADS 8
#define T_OPS 60000
#define T_STABLE 48      /* per scope level: never erased */
#define T_SLOTS 48       /* per thread: churned, tracked exactly */
#define T_HOT 8          /* shared by all threads: churned, not tracked */
#define T_MAX_NEW_KIDS 64 /* per thread */

typedef struct tree {
  ct_scope *level[3]; /* root, kid, grandkid */
  ct_var *stable[3][T_STABLE];
} tree;

typedef enum slot_state { SLOT_ABSENT, SLOT_AS_A, SLOT_AS_B } slot_state;

typedef struct worker {
  tree *t;
  int id;
  uint64_t rng;
  slot_state state[T_SLOTS];
  ct_var *var[T_SLOTS];
  int new_kids;
  int failures;
  char first_failure[160];
} worker;

static void stable_name(char *buf, size_t cap, int level, int i) {
  snprintf(buf, cap, "stable.L%d.%02d", level, i);
}

static void slot_name(char *buf, size_t cap, int thread, int slot, slot_state st) {
  snprintf(buf, cap, "churn.t%d.s%02d.%c", thread, slot, st == SLOT_AS_B ? 'b' : 'a');
}

static void hot_name(char *buf, size_t cap, int i) { snprintf(buf, cap, "hot.%d", i); }

static uint64_t next_rand(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *s = x;
  return x;
}

/* Notes a failure in a worker; the main thread asserts on it after the join. */
static void report(worker *w, const char *what, const char *name) {
  if (w->failures++ == 0) {
    snprintf(w->first_failure, sizeof w->first_failure, "thread %d: %s (%s): %s", w->id, what,
             name, ct_last_error());
  }
}

/* The scope a thread's slot lives in: spread over the three levels. */
static ct_scope *slot_scope(const worker *w, int slot) { return w->t->level[slot % 3]; }

static void op_find_stable(worker *w) {
  char name[48];
  uint64_t r = next_rand(&w->rng);
  int level = (int)(r % 3), i = (int)((r >> 8) % T_STABLE);
  int from = level + (int)((r >> 16) % (uint64_t)(3 - level)); /* this level or below */
  ct_var *v;
  const counted *c;
  stable_name(name, sizeof name, level, i);
  v = ct_scope_find_var(w->t->level[from], name);
  if (v != w->t->stable[level][i]) {
    report(w, "find_var of a stable name gave another pointer", name);
    return;
  }
  c = ct_var_get(v, &counted_type);
  if (c == NULL || c->value != level * 1000 + i) report(w, "stable value changed", name);
}

static void op_create_slot(worker *w, int slot) {
  char name[48];
  ct_var *v;
  slot_state st = w->state[slot] == SLOT_ABSENT ? SLOT_AS_A : w->state[slot];
  slot_name(name, sizeof name, w->id, slot, st);
  v = ct_scope_var(slot_scope(w, slot), name);
  if (v == NULL) {
    report(w, "ct_scope_var failed", name);
    return;
  }
  if (w->state[slot] == SLOT_ABSENT) {
    counted *c = ct_var_get_mutable(v, &counted_type);
    if (c == NULL) {
      report(w, "get_mutable on a new variable failed", name);
      return;
    }
    c->value = w->id * 1000 + slot;
    w->state[slot] = SLOT_AS_A;
    w->var[slot] = v;
  } else if (v != w->var[slot]) {
    report(w, "ct_scope_var of an existing name gave another pointer", name);
  }
}

static void op_erase_slot(worker *w, int slot) {
  char name[48];
  const char *names[1];
  size_t expect = w->state[slot] == SLOT_ABSENT ? 0 : 1;
  slot_name(name, sizeof name, w->id, slot, w->state[slot]);
  names[0] = name;
  if (ct_scope_erase_vars(slot_scope(w, slot), names, 1) != expect) {
    report(w, "erase_vars count", name);
  }
  w->state[slot] = SLOT_ABSENT;
  w->var[slot] = NULL;
}

static void op_rename_slot(worker *w, int slot) {
  char from[48], to[48];
  ct_scope *s = slot_scope(w, slot);
  slot_state next = w->state[slot] == SLOT_AS_A ? SLOT_AS_B : SLOT_AS_A;
  ct_status st;
  slot_name(from, sizeof from, w->id, slot, w->state[slot]);
  slot_name(to, sizeof to, w->id, slot, next);
  st = ct_scope_rename(s, from, to);
  if (w->state[slot] == SLOT_ABSENT) {
    if (st != CT_ERR_NOT_FOUND || ct_last_status() != CT_ERR_NOT_FOUND) {
      report(w, "rename of an absent name", from);
    }
    return;
  }
  if (st != CT_OK) {
    report(w, "rename failed", from);
    return;
  }
  w->state[slot] = next;
  if (ct_scope_find_local_var(s, to) != w->var[slot]) {
    report(w, "renamed variable has another pointer", to);
    return;
  }
  {
    const counted *c = ct_var_get(w->var[slot], &counted_type);
    if (c == NULL || c->value != w->id * 1000 + slot) report(w, "renamed value changed", to);
  }
  if (strcmp(ct_var_name(w->var[slot]), to) != 0) report(w, "ct_var_name after rename", to);
}

static void op_hot(worker *w) {
  char name[48];
  uint64_t r = next_rand(&w->rng);
  ct_scope *kid = w->t->level[1];
  hot_name(name, sizeof name, (int)(r % T_HOT));
  if ((r >> 8) % 2) {
    /* the pointer may be erased by another thread at once: only check it */
    if (ct_scope_var(kid, name) == NULL) report(w, "ct_scope_var of a hot name failed", name);
  } else {
    const char *names[1] = {name};
    if (ct_scope_erase_vars(kid, names, 1) > 1) report(w, "erase_vars of one name gave > 1", name);
  }
}

static void op_new_kid(worker *w) {
  ct_scope *k;
  char name[48];
  if (w->new_kids >= T_MAX_NEW_KIDS) return;
  k = ct_scope_new_kid(w->t->level[1 + w->new_kids % 2]);
  if (k == NULL) {
    report(w, "new_kid failed", "-");
    return;
  }
  w->new_kids++;
  stable_name(name, sizeof name, 0, w->id % T_STABLE);
  if (ct_scope_find_var(k, name) != w->t->stable[0][w->id % T_STABLE]) {
    report(w, "find_var from a new kid", name);
  }
  if (ct_scope_var(k, "kid_local") == NULL) report(w, "ct_scope_var in a new kid", "kid_local");
}

static void *worker_main(void *arg) {
  worker *w = arg;
  int op;
  for (op = 0; op < T_OPS; op++) {
    uint64_t r = next_rand(&w->rng);
    int kind = (int)(r % 100), slot = (int)((r >> 8) % T_SLOTS);
    if (kind < 50) {
      op_find_stable(w);
    } else if (kind < 65) {
      op_create_slot(w, slot);
    } else if (kind < 75) {
      op_erase_slot(w, slot);
    } else if (kind < 87) {
      op_rename_slot(w, slot);
    } else if (kind < 99) {
      op_hot(w);
    } else {
      op_new_kid(w);
    }
  }
  return NULL;
}

START_TEST(test_threads_share_a_scope_tree) {
  static tree t;
  static worker workers[T_THREADS];
  pthread_t threads[T_THREADS];
  size_t expect_local[3] = {T_STABLE, T_STABLE, T_STABLE};
  char name[48];
  int i, lv, s;
  reset_counters();
  t.level[0] = ct_scope_new();
  t.level[1] = ct_scope_new_kid(t.level[0]);
  t.level[2] = ct_scope_new_kid(t.level[1]);
  ck_assert_ptr_nonnull(t.level[2]);
  for (lv = 0; lv < 3; lv++) {
    for (i = 0; i < T_STABLE; i++) {
      stable_name(name, sizeof name, lv, i);
      t.stable[lv][i] = put_counted(t.level[lv], name, lv * 1000 + i);
    }
  }
  for (i = 0; i < T_THREADS; i++) {
    memset(&workers[i], 0, sizeof workers[i]);
    workers[i].t = &t;
    workers[i].id = i;
    workers[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
    ck_assert_int_eq(pthread_create(&threads[i], NULL, worker_main, &workers[i]), 0);
  }
  for (i = 0; i < T_THREADS; i++) ck_assert_int_eq(pthread_join(threads[i], NULL), 0);
  for (i = 0; i < T_THREADS; i++) {
    ck_assert_msg(workers[i].failures == 0, "%d failures, first: %s", workers[i].failures,
                  workers[i].first_failure);
  }

  /* stable names: all present, same pointers, same values */
  for (lv = 0; lv < 3; lv++) {
    for (i = 0; i < T_STABLE; i++) {
      stable_name(name, sizeof name, lv, i);
      ck_assert_ptr_eq(ct_scope_find_local_var(t.level[lv], name), t.stable[lv][i]);
      ck_assert_int_eq(counted_value(t.stable[lv][i]), lv * 1000 + i);
    }
  }
  /* tracked slots: present exactly under their current name */
  for (i = 0; i < T_THREADS; i++) {
    for (s = 0; s < T_SLOTS; s++) {
      ct_scope *sc = t.level[s % 3];
      slot_name(name, sizeof name, i, s, SLOT_AS_A);
      if (workers[i].state[s] == SLOT_AS_A) {
        ck_assert_ptr_eq(ct_scope_find_local_var(sc, name), workers[i].var[s]);
      } else {
        ck_assert_ptr_null(ct_scope_find_local_var(sc, name));
      }
      slot_name(name, sizeof name, i, s, SLOT_AS_B);
      if (workers[i].state[s] == SLOT_AS_B) {
        ck_assert_ptr_eq(ct_scope_find_local_var(sc, name), workers[i].var[s]);
      } else {
        ck_assert_ptr_null(ct_scope_find_local_var(sc, name));
      }
      if (workers[i].state[s] != SLOT_ABSENT) expect_local[s % 3]++;
    }
  }
  /* hot names live in the kid */
  for (i = 0; i < T_HOT; i++) {
    hot_name(name, sizeof name, i);
    if (ct_scope_find_local_var(t.level[1], name) != NULL) expect_local[1]++;
  }
  for (lv = 0; lv < 3; lv++) {
    ck_assert_uint_eq(ct_scope_var_count(t.level[lv]), expect_local[lv]);
    ck_assert_uint_eq(ct_scope_local_var_names(t.level[lv], NULL, 0), expect_local[lv]);
  }
  /* every value made was destroyed by an erase or is destroyed now, once */
  ct_scope_free(t.level[0]);
  ck_assert_int_eq(atomic_load(&counted_destroys), atomic_load(&counted_inits));
  ck_assert_int_eq(atomic_load(&counted_double_destroys), 0);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("scope_threads");
  CT_ADD_TEST(s, test_threads_share_a_scope_tree);
  return s;
}

CT_TEST_MAIN(make_suite)
