/* SPDX-License-Identifier: Apache-2.0 */
/* The memory report suite (ct_scope_memory_report, corten/scope.h): every variable of a scope
 * tree that holds memory, with its path, dims, bytes and how it holds them (own, shared, a view,
 * an external buffer), sorted by bytes; totals that equal the host stats. And allocation
 * observers (ct_memory_set_observer, corten/memory.h): exactly the blocks the stats count, with
 * the variable and op an allocation is for. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include <corten/corten.h>

#include "op_util.h"

/* A float32 tensor of dims in variable name of s, with memory. */
static ct_tensor *floats(ct_scope *s, const char *name, ct_ddim dims) {
  ct_tensor *t = ct_var_tensor(ct_scope_var(s, name));
  ck_assert_int_eq(ct_tensor_resize(t, dims), CT_OK);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()));
  return t;
}

static const ct_memory_report_entry *entry(const ct_memory_report *r, const char *path) {
  for (size_t i = 0; i < r->n; i++) {
    if (strcmp(r->entries[i].path, path) == 0) return &r->entries[i];
  }
  ck_abort_msg("no entry %s", path);
  return NULL;
}

START_TEST(own_tensors_are_listed_largest_first_with_their_dims) {
  ct_scope *s = ct_scope_new();
  floats(s, "small", CT_DIMS(2, 3));
  floats(s, "big", CT_DIMS(4, 8));
  ct_var_tensor(ct_scope_var(s, "empty")); /* no memory: not listed */
  ct_memory_report *r = NULL;
  ck_assert_int_eq(ct_scope_memory_report(s, &r), CT_OK);
  ck_assert_uint_eq(r->n, 2);
  ck_assert_str_eq(r->entries[0].path, "big");
  ck_assert_uint_eq(r->entries[0].bytes, 128);
  ck_assert_int_eq(r->entries[0].dims.rank, 2);
  ck_assert_int_eq(r->entries[0].dims.d[1], 8);
  ck_assert_int_eq(r->entries[0].dtype, CT_FLOAT32);
  ck_assert_int_eq(r->entries[0].holding, CT_HOLDING_OWN);
  ck_assert_str_eq(r->entries[0].shared_with, "");
  ck_assert_str_eq(r->entries[1].path, "small");
  ck_assert_uint_eq(r->entries[1].bytes, 24);
  ck_assert_uint_eq(ct_memory_report_total(r, ct_cpu()), 152);
  ct_memory_report_free(r);
  ct_scope_free(s);
}
END_TEST

START_TEST(shared_blocks_views_and_external_buffers_are_told_apart) {
  ct_scope *s = ct_scope_new();
  ct_tensor *a = floats(s, "a", CT_DIMS(4, 4));
  ck_assert_int_eq(ct_tensor_share(ct_var_tensor(ct_scope_var(s, "a2")), a), CT_OK);
  ck_assert_int_eq(ct_tensor_slice(ct_var_tensor(ct_scope_var(s, "rows")), a, 1, 3), CT_OK);
  static float buf[6];
  ck_assert_int_eq(ct_tensor_wrap(ct_var_tensor(ct_scope_var(s, "lent")), buf, CT_DIMS(6),
                                  CT_FLOAT32, ct_cpu(), NULL, NULL),
                   CT_OK);
  ct_memory_report *r = NULL;
  ck_assert_int_eq(ct_scope_memory_report(s, &r), CT_OK);
  ck_assert_uint_eq(r->n, 4);
  ck_assert_int_eq(entry(r, "a")->holding, CT_HOLDING_SHARED);
  ck_assert_str_eq(entry(r, "a")->shared_with, "a2, rows");
  ck_assert_int_eq(entry(r, "a2")->holding, CT_HOLDING_SHARED);
  ck_assert_int_eq(entry(r, "rows")->holding, CT_HOLDING_VIEW);
  ck_assert_uint_eq(entry(r, "rows")->bytes, 32);
  ck_assert_uint_eq(entry(r, "rows")->block_bytes, 64);
  ck_assert_uint_eq(entry(r, "rows")->block, entry(r, "a")->block);
  ck_assert_int_eq(entry(r, "lent")->holding, CT_HOLDING_EXTERNAL);
  ck_assert_uint_eq(ct_memory_report_total(r, ct_cpu()), 64); /* a's block once, lent not */
  ct_memory_report_free(r);
  ct_scope_free(s);
}
END_TEST

START_TEST(kids_and_step_scopes_have_paths) {
  ct_scope *s = ct_scope_new();
  ct_scope_list *steps = ct_var_get_mutable(ct_scope_var(s, "steps"), &ct_scope_list_type);
  ck_assert_int_eq(ct_scope_list_resize(steps, s, 2), CT_OK);
  floats(ct_scope_list_get(steps, 0), "h", CT_DIMS(2));
  floats(ct_scope_list_get(steps, 1), "h", CT_DIMS(3));
  ct_scope *kid = ct_scope_new_kid(s);
  floats(kid, "x", CT_DIMS(1));
  ct_memory_report *r = NULL;
  ck_assert_int_eq(ct_scope_memory_report(s, &r), CT_OK);
  ck_assert_uint_eq(r->n, 3);
  ck_assert_str_eq(r->entries[0].path, "steps[1]/h");
  ck_assert_str_eq(r->entries[1].path, "steps[0]/h");
  ck_assert_str_eq(r->entries[2].path, "kid2/x"); /* the scope's third kid */
  ct_memory_report_free(r);
  ct_scope_free(s);
}
END_TEST

START_TEST(totals_equal_the_stats_and_the_report_outlives_the_scope) {
  ct_memory_stats before = cpu_stats();
  ct_scope *s = ct_scope_new();
  ct_tensor *a = floats(s, "a", CT_DIMS(100, 10));
  ck_assert_int_eq(ct_tensor_slice(ct_var_tensor(ct_scope_var(s, "v")), a, 10, 20), CT_OK);
  ck_assert_int_eq(ct_tensor_share(ct_var_tensor(ct_scope_var(s, "w")), a), CT_OK);
  ct_scope *kid = ct_scope_new_kid(s);
  floats(kid, "k", CT_DIMS(7));
  ct_scope_list *steps = ct_var_get_mutable(ct_scope_var(kid, "steps"), &ct_scope_list_type);
  ck_assert_int_eq(ct_scope_list_resize(steps, kid, 3), CT_OK);
  for (size_t i = 0; i < 3; i++) floats(ct_scope_list_get(steps, i), "h", CT_DIMS(5, 5));
  ct_memory_stats now = cpu_stats();
  ct_memory_report *r = NULL;
  ck_assert_int_eq(ct_scope_memory_report(s, &r), CT_OK);
  ck_assert_uint_eq(ct_memory_report_total(r, ct_cpu()), now.allocated - before.allocated);
  ck_assert_uint_eq(ct_memory_report_total(r, ct_cpu()), 4000 + 28 + 3 * 100);
  ct_scope_free(s);
  ck_assert_str_eq(r->entries[0].path, "a"); /* a copy: the scope is gone */
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  ck_assert_int_eq(ct_memory_report_print(r, f), CT_OK);
  fclose(f);
  HAS(text, "kid0/steps[2]/h");
  HAS(text, "total on cpu: 4328 bytes");
  free(text);
  ct_memory_report_free(r);
}
END_TEST

START_TEST(report_argument_errors) {
  ct_memory_report *r = NULL;
  ck_assert_int_eq(ct_scope_memory_report(NULL, &r), CT_ERR_INVALID_ARGUMENT);
  ct_scope *s = ct_scope_new();
  ck_assert_int_eq(ct_scope_memory_report(s, NULL), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_scope_memory_report(s, &r), CT_OK); /* an empty scope: an empty report */
  ck_assert_uint_eq(r->n, 0);
  ck_assert_uint_eq(ct_memory_report_total(r, ct_cpu()), 0);
  ck_assert_int_eq(ct_memory_report_print(r, NULL), CT_ERR_INVALID_ARGUMENT);
  ct_memory_report_free(r);
  ct_memory_report_free(NULL);
  ct_scope_free(s);
}
END_TEST

/* ---- Allocation observers ------------------------------------------------------------------- */

typedef struct seen {
  int allocs, frees;
  size_t alloc_bytes, free_bytes;
  char names[256]; /* the variables named by allocations, space-separated, in order */
  char ops[256];
} seen;

static void note(void *arg, const ct_memory_event *e) {
  seen *s = arg;
  if (e->alloc) {
    s->allocs++;
    s->alloc_bytes += e->bytes;
    if (e->var != NULL) {
      strncat(s->names, e->var, sizeof s->names - strlen(s->names) - 2);
      strcat(s->names, " ");
    }
    if (e->op != NULL) {
      strncat(s->ops, e->op, sizeof s->ops - strlen(s->ops) - 2);
      strcat(s->ops, " ");
    }
  } else {
    s->frees++;
    s->free_bytes += e->bytes;
  }
  ck_assert_int_eq(e->place.kind, CT_DEVICE_CPU);
}

START_TEST(an_observer_sees_exactly_what_the_stats_count) {
  seen s = {0};
  ct_memory_stats before = cpu_stats();
  ct_memory_set_observer(note, &s);
  ct_tensor *t = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(t, CT_DIMS(10)), CT_OK);
  ck_assert_ptr_nonnull(ct_tensor_mutable_data(t, CT_FLOAT64, ct_cpu()));
  ct_tensor *c = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_copy(c, t, ct_cpu()), CT_OK);
  static float buf[4];
  ck_assert_int_eq(ct_tensor_wrap(c, buf, CT_DIMS(4), CT_FLOAT32, ct_cpu(), NULL, NULL), CT_OK);
  ct_tensor_free(t);
  ct_tensor_free(c);
  ct_memory_stats after = cpu_stats();
  ct_memory_set_observer(NULL, NULL);
  ck_assert_int_eq(s.allocs, (int)(after.allocs - before.allocs));
  ck_assert_int_eq(s.frees, (int)(after.frees - before.frees));
  ck_assert_int_eq(s.allocs, 2); /* the tensor and its copy; the lent buffer is no block */
  ck_assert_uint_eq(s.alloc_bytes, 160);
  ck_assert_uint_eq(s.free_bytes, 160);
  ck_assert_str_eq(s.names, ""); /* no op ran: no variable named */
}
END_TEST

START_TEST(an_executor_names_the_variables_it_allocates_and_then_allocates_nothing) {
  ct_scope *sc = ct_scope_new();
  floats(sc, "x", CT_DIMS(2, 3));
  floats(sc, "w", CT_DIMS(3, 4));
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op_xy("matmul", "x", "w", "xw")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("relu", "xw", "y")), CT_OK);
  ct_executor *e = ct_executor_new(p, sc, ct_cpu());
  seen s = {0};
  ct_memory_set_observer(note, &s);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ck_assert_str_eq(s.names, "xw y ");
  ck_assert_str_eq(s.ops, "matmul relu ");
  ck_assert_uint_eq(s.alloc_bytes, 2 * 32);
  seen again = {0};
  ct_memory_set_observer(note, &again);
  ck_assert_int_eq(ct_executor_run(e), CT_OK); /* a step of a seen shape allocates nothing */
  ck_assert_int_eq(again.allocs + again.frees, 0);
  ct_memory_set_observer(NULL, NULL);
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(sc);
}
END_TEST

START_TEST(a_profiled_run_still_names_its_allocations) {
  ct_scope *sc = ct_scope_new();
  floats(sc, "x", CT_DIMS(3));
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op_x("sigmoid", "x", "s")), CT_OK);
  ct_executor *e = ct_executor_new(p, sc, ct_cpu());
  seen s = {0};
  ct_profile *prof = ct_profile_start(CT_PROFILE_THREAD);
  ct_memory_set_observer(note, &s);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ct_memory_set_observer(NULL, NULL);
  ck_assert_int_eq(ct_profile_stop(prof), CT_OK);
  ck_assert_str_eq(s.names, "s ");
  ck_assert_str_eq(s.ops, "sigmoid ");
  ck_assert_uint_eq(ct_profile_count(prof), 2); /* the op and the run */
  ct_profile_free(prof);
  /* ct_op_run too: named, and recorded */
  seen one = {0};
  prof = ct_profile_start(CT_PROFILE_THREAD);
  ct_memory_set_observer(note, &one);
  ct_op *op = op_x("tanh", "x", "t");
  ck_assert_int_eq(ct_op_run(op, sc, ct_cpu()), CT_OK);
  ct_memory_set_observer(NULL, NULL);
  ck_assert_int_eq(ct_profile_stop(prof), CT_OK);
  ck_assert_str_eq(one.names, "t ");
  ck_assert_uint_eq(ct_profile_count(prof), 1);
  ct_profile_free(prof);
  ct_op_free(op);
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(sc);
}
END_TEST

START_TEST(op_run_names_its_output_and_a_removed_observer_hears_nothing) {
  ct_scope *sc = ct_scope_new();
  floats(sc, "x", CT_DIMS(5));
  ct_op *op = op_x("tanh", "x", "t");
  seen s = {0};
  ct_memory_set_observer(note, &s);
  ck_assert_int_eq(ct_op_run(op, sc, ct_cpu()), CT_OK);
  ck_assert_str_eq(s.names, "t ");
  ck_assert_str_eq(s.ops, "tanh ");
  ct_memory_set_observer(NULL, NULL);
  ct_scope_free(sc); /* frees x and t, unobserved */
  ck_assert_int_eq(s.frees, 0);
  ct_op_free(op);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("memory_report");
  CT_ADD_TEST(s, own_tensors_are_listed_largest_first_with_their_dims);
  CT_ADD_TEST(s, shared_blocks_views_and_external_buffers_are_told_apart);
  CT_ADD_TEST(s, kids_and_step_scopes_have_paths);
  CT_ADD_TEST(s, totals_equal_the_stats_and_the_report_outlives_the_scope);
  CT_ADD_TEST(s, report_argument_errors);
  CT_ADD_TEST(s, an_observer_sees_exactly_what_the_stats_count);
  CT_ADD_TEST(s, an_executor_names_the_variables_it_allocates_and_then_allocates_nothing);
  CT_ADD_TEST(s, op_run_names_its_output_and_a_removed_observer_hears_nothing);
  CT_ADD_TEST(s, a_profiled_run_still_names_its_allocations);
  return s;
}

CT_TEST_MAIN(make_suite)
