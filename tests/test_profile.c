/* SPDX-License-Identifier: Apache-2.0 */
/* The profiler (corten/profile.h): one event per op an executor or ct_op_run runs and one per
 * executor run around them, with the op's type, its outputs' names, the thread and the bytes it
 * allocated; a thread's profile sees its own thread only, the process's every thread; the table
 * per op type and the Chrome trace; the refusals. */
#define _GNU_SOURCE /* mkdtemp (file_util.h) */
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

#include "file_util.h"
#include "op_util.h"

/* y = relu(x + b) * 2 over x [4, 8] and b [8]: three ops. */
static ct_program *small_program(ct_scope *s) {
  put_ramp(s, "x", CT_DIMS(4, 8), 0.5f);
  put_ramp(s, "b", CT_DIMS(8), -1.0f);
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_add", "x", "b", "xb")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("relu", "xb", "r")), CT_OK);
  ct_op *sc = op_x("scale", "r", "y");
  ct_op_set_attr_float(sc, "scale", 2.0);
  ck_assert_int_eq(ct_program_append(p, sc), CT_OK);
  return p;
}

START_TEST(each_op_and_each_run_is_an_event) {
  ct_scope *s = ct_scope_new();
  ct_program *p = small_program(s);
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  ct_profile *prof = ct_profile_start(CT_PROFILE_THREAD);
  ck_assert_ptr_nonnull(prof);
  for (int r = 0; r < 2; r++) ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ck_assert_int_eq(ct_profile_stop(prof), CT_OK);
  ck_assert_int_eq(ct_executor_run(e), CT_OK); /* stopped: not recorded */
  ck_assert_uint_eq(ct_profile_count(prof), 8);
  static const char *const types[4] = {"elementwise_add", "relu", "scale", "executor_run"};
  static const char *const labels[4] = {"xb", "r", "y", "3 ops"};
  for (int r = 0; r < 2; r++) {
    ct_profile_event run = profile_event(prof, (size_t)r * 4 + 3);
    for (int k = 0; k < 4; k++) {
      ct_profile_event ev = profile_event(prof, (size_t)r * 4 + (size_t)k);
      ck_assert_str_eq(ev.type, types[k]);
      ck_assert_str_eq(ev.label, labels[k]);
      ck_assert_int_eq(ev.status, CT_OK);
      ck_assert_int_ge(ev.dur_ns, 0);
      ck_assert_int_eq(ev.device_dur_ns, -1); /* host ops have no device time */
      ck_assert_int_eq(ev.device_start_ns, -1);
      ck_assert_int_eq(ev.thread, run.thread);
      /* every op lies inside its run */
      ck_assert_int_ge(ev.start_ns, run.start_ns);
      ck_assert_int_le(ev.start_ns + ev.dur_ns, run.start_ns + run.dur_ns);
    }
    /* The first run allocates each output once (32 floats), the second nothing. */
    ct_profile_event add = profile_event(prof, (size_t)r * 4);
    ck_assert_int_eq(add.allocs, r == 0 ? 1 : 0);
    ck_assert_int_eq(add.bytes, r == 0 ? 128 : 0);
  }
  ct_profile_free(prof);
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Events read the TSC where the kernel keeps time with it and are converted to ns by the
 * profile's rate: the runs' recorded time lies within the wall-clock window that encloses them
 * (CLOCK_MONOTONIC, read here), and starts after the profile did. */
START_TEST(event_times_are_nanoseconds_of_the_monotonic_clock) {
  ct_scope *s = ct_scope_new();
  ct_program *p = small_program(s);
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  int64_t started = mono_ns();
  ct_profile *prof = ct_profile_start(CT_PROFILE_THREAD);
  ck_assert_ptr_nonnull(prof);
  int64_t before = mono_ns();
  for (int r = 0; r < 2000; r++) ck_assert_int_eq(ct_executor_run(e), CT_OK);
  int64_t wall = mono_ns() - before;
  ck_assert_int_eq(ct_profile_stop(prof), CT_OK);
  int64_t whole = mono_ns() - started; /* encloses the profile's start and stop */
  int64_t runs = 0, last_end = 0;
  for (size_t i = 0; i < ct_profile_count(prof); i++) {
    ct_profile_event ev = profile_event(prof, i);
    ck_assert_int_ge(ev.start_ns, 0);
    ck_assert_int_ge(ev.start_ns, last_end - 1); /* one thread: runs one after another */
    if (strcmp(ev.type, "executor_run") != 0) continue;
    runs += ev.dur_ns;
    last_end = ev.start_ns + ev.dur_ns;
  }
  ck_assert_int_le(runs, wall + wall / 1000 + 1000);
  ck_assert_int_le(last_end, whole + whole / 1000 + 1000);
  ck_assert_int_gt(runs, 0);
  ct_profile_free(prof);
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

START_TEST(op_run_and_a_failing_op_are_recorded) {
  ct_scope *s = ct_scope_new();
  put_ramp(s, "x", CT_DIMS(3), 1.0f);
  put_ramp(s, "z", CT_DIMS(2), 1.0f);
  ct_profile *prof = ct_profile_start(CT_PROFILE_THREAD);
  ct_op *ok = op_x("exp", "x", "ex"), *bad = op_xy("elementwise_add", "x", "z", "w");
  ck_assert_int_eq(ct_op_run(ok, s, ct_cpu()), CT_OK);
  ck_assert_int_eq(ct_op_run(bad, s, ct_cpu()), CT_ERR_SHAPE);
  ct_profile_stop(prof);
  ck_assert_uint_eq(ct_profile_count(prof), 2);
  ck_assert_str_eq(profile_event(prof, 0).type, "exp");
  ck_assert_int_eq(profile_event(prof, 1).status, CT_ERR_SHAPE);
  ct_profile_event out;
  ck_assert_int_eq(ct_profile_event_get(prof, 2, &out), CT_ERR_OUT_OF_RANGE);
  ct_profile_free(prof);
  ct_op_free(ok);
  ct_op_free(bad);
  ct_scope_free(s);
}
END_TEST

typedef struct job {
  ct_scope *s;
  ct_status stop; /* of the main thread's profile, tried from this thread */
  char why[256];  /* its message (last errors are per thread) */
  ct_profile *other;
} job;

/* (pthreads, not C11 threads: ThreadSanitizer does not intercept glibc's thrd_create, and a
 * thread it did not see starting crashes on its first instrumented call) */
static void *other_thread(void *arg) {
  job *j = arg;
  ct_op *op = op_x("relu", "x", "t2");
  ct_op_run(op, j->s, ct_cpu());
  ct_op_free(op);
  j->stop = ct_profile_stop(j->other);
  snprintf(j->why, sizeof j->why, "%s", ct_last_error());
  return NULL;
}

/* A thread's profile records that thread only, and is stopped there; the process's records
 * every thread, each with a number of its own. */
START_TEST(thread_and_process_profiles) {
  ct_scope *s = ct_scope_new();
  put_ramp(s, "x", CT_DIMS(5), 1.0f);
  ct_profile *mine = ct_profile_start(CT_PROFILE_THREAD);
  ct_profile *all = ct_profile_start(CT_PROFILE_PROCESS);
  ck_assert_ptr_nonnull(mine);
  ck_assert_ptr_nonnull(all);
  CT_ASSERT_NULL_FAILS(ct_profile_start(CT_PROFILE_THREAD), CT_ERR_ALREADY_EXISTS);
  CT_ASSERT_NULL_FAILS(ct_profile_start(CT_PROFILE_PROCESS), CT_ERR_ALREADY_EXISTS);
  CT_ASSERT_NULL_FAILS(ct_profile_start((ct_profile_where)7), CT_ERR_INVALID_ARGUMENT);
  ct_op *op = op_x("relu", "x", "t1");
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_OK);
  job j = {s, CT_OK, "", mine};
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, other_thread, &j), 0);
  pthread_join(t, NULL);
  ck_assert_int_eq(j.stop, CT_ERR_INVALID_ARGUMENT);
  HAS(j.why, "stop it there");
  ck_assert_int_eq(ct_profile_stop(mine), CT_OK);
  ck_assert_int_eq(ct_profile_stop(all), CT_OK);
  ck_assert_uint_eq(ct_profile_count(mine), 1);
  ck_assert_str_eq(profile_event(mine, 0).label, "t1");
  ck_assert_uint_eq(ct_profile_count(all), 2);
  ck_assert_str_eq(profile_event(all, 1).label, "t2");
  ck_assert_int_ne(profile_event(all, 0).thread, profile_event(all, 1).thread);
  ct_profile_free(mine);
  ct_profile_free(all);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

START_TEST(the_table_counts_per_type) {
  ct_scope *s = ct_scope_new();
  ct_program *p = small_program(s);
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  ct_profile *prof = ct_profile_start(CT_PROFILE_THREAD);
  for (int r = 0; r < 3; r++) ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ct_profile_stop(prof);
  char buf[2048];
  size_t need = 0;
  ck_assert_int_eq(ct_profile_table(prof, CT_PROFILE_BY_COUNT, buf, sizeof buf, &need), CT_OK);
  ck_assert_uint_eq(need, strlen(buf) + 1);
  HAS(buf, "op type");
  HAS(buf, "relu");
  HAS(buf, "3 executor runs");
  const char *relu = strstr(buf, "\nrelu");
  ck_assert_ptr_nonnull(relu);
  ck_assert_int_eq(atoi(relu + 29), 3); /* the count column */
  char small[16];
  ck_assert_int_eq(ct_profile_table(prof, CT_PROFILE_BY_TOTAL, small, sizeof small, &need),
                   CT_OK);
  ck_assert_uint_eq(strlen(small), sizeof small - 1); /* cut, NUL-terminated */
  ck_assert_uint_gt(need, sizeof small);
  ck_assert_int_eq(ct_profile_table(prof, (ct_profile_sort)9, buf, sizeof buf, NULL),
                   CT_ERR_INVALID_ARGUMENT);
  ct_profile_free(prof);
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

/* The trace: one "X" slice per event, one counter sample per event, the JSON object form; a
 * path in a missing folder is CT_ERR_IO and writes nothing. */
START_TEST(the_chrome_trace_has_a_slice_per_event) {
  ct_scope *s = ct_scope_new();
  ct_program *p = small_program(s);
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  ct_profile *prof = ct_profile_start(CT_PROFILE_THREAD);
  for (int r = 0; r < 2; r++) ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ct_profile_stop(prof);
  make_work_dir("profile");
  const char *path = in_dir("trace.json"), *bad = in_dir("missing/trace.json");
  ck_assert_int_eq(ct_profile_save_chrome_trace(prof, path), CT_OK);
  size_t n = 0;
  char *text = (char *)read_all(path, &n);
  text[n] = '\0';
  ck_assert(strncmp(text, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", 39) == 0);
  ck_assert(strstr(text, "\n]}\n") == text + n - 4);
  size_t slices = 0, counters = 0;
  for (const char *q = text; (q = strstr(q, "\"ph\":\"X\"")) != NULL; q++) slices++;
  for (const char *q = text; (q = strstr(q, "\"ph\":\"C\"")) != NULL; q++) counters++;
  ck_assert_uint_eq(slices, 8);
  ck_assert_uint_eq(counters, 8);
  HAS(text, "\"name\":\"executor_run\",\"cat\":\"run\"");
  HAS(text, "\"label\":\"xb\"");
  free(text);
  ck_assert_int_eq(ct_profile_save_chrome_trace(prof, bad), CT_ERR_IO);
  ck_assert_int_eq(count_entries(work_dir), 1); /* the trace alone: nothing half-written */
  remove_work_dir();
  ct_profile_free(prof);
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
}
END_TEST

START_TEST(null_arguments_are_refused) {
  ck_assert_int_eq(ct_profile_stop(NULL), CT_ERR_INVALID_ARGUMENT);
  ck_assert_uint_eq(ct_profile_count(NULL), 0);
  ck_assert_int_eq(ct_profile_table(NULL, CT_PROFILE_BY_TOTAL, NULL, 0, NULL),
                   CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_profile_save_chrome_trace(NULL, "x"), CT_ERR_INVALID_ARGUMENT);
  ct_profile_free(NULL);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("profile");
  CT_ADD_TEST(s, each_op_and_each_run_is_an_event);
  CT_ADD_TEST(s, event_times_are_nanoseconds_of_the_monotonic_clock);
  CT_ADD_TEST(s, op_run_and_a_failing_op_are_recorded);
  CT_ADD_TEST(s, thread_and_process_profiles);
  CT_ADD_TEST(s, the_table_counts_per_type);
  CT_ADD_TEST(s, the_chrome_trace_has_a_slice_per_event);
  CT_ADD_TEST(s, null_arguments_are_refused);
  return s;
}

CT_TEST_MAIN(make_suite)
