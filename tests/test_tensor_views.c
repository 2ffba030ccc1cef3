/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the views of corten/tensor.h: share, slice and flatten_to_2d over one block, their
 * errors and corner cases (no memory, past the capacity, onto the source itself, NULL), and a
 * block shared by views in several threads, freed exactly once. Each test runs in its own
 * process, so the memory stats start at zero. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "harness.h"

/* ---- Share ------------------------------------------------------------------------------- */

/* A view one float32 in (byte 4) retyped to float64: its memory could hold the doubles but not
 * aligned, so mutable_data gives it a block of its own (found by fuzz_programs: a kernel stored
 * doubles at a misaligned address) and leaves the source as it was. */
START_TEST(a_view_retyped_to_a_misaligned_dtype_gets_its_own_block) {
  float v[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  ct_tensor *src = ct_tensor_new(), *view = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_set_value(src, v, CT_DIMS(10), CT_FLOAT32, ct_cpu()), CT_OK);
  ck_assert_int_eq(ct_tensor_slice(view, src, 1, 5), CT_OK);
  double *d = ct_tensor_mutable_data(view, CT_FLOAT64, ct_cpu());
  ck_assert_ptr_nonnull(d);
  ck_assert_uint_eq((uintptr_t)d % 8, 0);
  ck_assert(!ct_tensor_shares_memory(view, src));
  for (int i = 0; i < 4; i++) d[i] = -1;
  const float *p = ct_tensor_data(src, CT_FLOAT32);
  for (int i = 0; i < 10; i++) ck_assert(p[i] == (float)i);
  /* A wrapped buffer cannot move: refused, naming the alignment. */
  float buf[10];
  ct_tensor *ext = ct_tensor_new(), *ev = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_wrap(ext, buf, CT_DIMS(10), CT_FLOAT32, ct_cpu(), NULL, NULL), CT_OK);
  ck_assert_int_eq(ct_tensor_slice(ev, ext, 1, 5), CT_OK);
  ck_assert_ptr_null(ct_tensor_mutable_data(ev, CT_FLOAT64, ct_cpu()));
  ck_assert_int_eq(ct_last_status(), CT_ERR_EXTERNAL_BUFFER);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "not aligned for float64"));
  ct_tensor_free(ev);
  ct_tensor_free(ext);
  ct_tensor_free(view);
  ct_tensor_free(src);
}
END_TEST

START_TEST(share_views_the_same_memory) {
  float *p;
  ct_tensor *src = iota_f32(CT_DIMS(2, 3), &p);
  ct_tensor *dst = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_share(dst, src), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(dst, CT_FLOAT32), p);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(2, 3)));
  ck_assert_int_eq(ct_tensor_dtype(dst), CT_FLOAT32);
  ck_assert(ct_tensor_shares_memory(dst, src));
  ck_assert(!ct_tensor_is_external(dst));
  ck_assert_uint_eq(ct_tensor_capacity(dst), ct_tensor_capacity(src));
  ck_assert_uint_eq(cpu_stats().allocs, 1);
  /* A write through one view shows through the other. */
  p[4] = 42.0f;
  ck_assert(((const float *)ct_tensor_data(dst, CT_FLOAT32))[4] == 42.0f);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(shared_memory_lives_until_last_view) {
  ct_tensor *src = iota_f32(CT_DIMS(100, 200), NULL);
  ct_tensor *a = ct_tensor_new(), *b = ct_tensor_new();
  ct_memory_stats s;
  ck_assert_int_eq(ct_tensor_share(a, src), CT_OK);
  ck_assert_int_eq(ct_tensor_share(b, a), CT_OK);
  ct_tensor_free(src);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 80000);
  ck_assert_uint_eq(s.frees, 0);
  assert_iota_f32(a, 0.0f, 20000);
  ct_tensor_free(a);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 80000);
  ck_assert_uint_eq(s.frees, 0);
  assert_iota_f32(b, 0.0f, 20000);
  ct_tensor_free(b);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.reserved, 80000); /* kept by the host cache until emptied */
  ck_assert_uint_eq(s.frees, 1);
  ck_assert_int_eq(ct_memory_empty_cache(ct_cpu()), CT_OK);
  ck_assert_uint_eq(cpu_stats().reserved, 0);
}
END_TEST

START_TEST(share_lets_go_of_dst_memory) {
  ct_tensor *src = iota_f32(CT_DIMS(10), NULL);
  ct_tensor *dst = iota_f32(CT_DIMS(20), NULL);
  ct_memory_stats s;
  ck_assert_int_eq(ct_tensor_share(dst, src), CT_OK);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocs, 2);
  ck_assert_uint_eq(s.frees, 1);
  ck_assert_uint_eq(s.allocated, 40);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(shares_memory_needs_a_common_block) {
  ct_tensor *a = iota_f32(CT_DIMS(4), NULL);
  ct_tensor *b = iota_f32(CT_DIMS(4), NULL);
  ct_tensor *e1 = ct_tensor_new(), *e2 = ct_tensor_new();
  ck_assert(!ct_tensor_shares_memory(a, b));
  ck_assert(ct_tensor_shares_memory(a, a));
  ck_assert(!ct_tensor_shares_memory(e1, e2));
  ck_assert(!ct_tensor_shares_memory(a, e1));
  ck_assert(!ct_tensor_shares_memory(a, NULL));
  ck_assert(!ct_tensor_shares_memory(NULL, NULL));
  ct_tensor_free(a);
  ct_tensor_free(b);
  ct_tensor_free(e1);
  ct_tensor_free(e2);
}
END_TEST

/* ---- Slice ------------------------------------------------------------------------------- */

START_TEST(slice_rows_offsets_data_by_rows) {
  float *p;
  ct_tensor *src = iota_f32(CT_DIMS(4, 5), &p);
  ct_tensor *dst = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_slice(dst, src, 1, 3), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(dst, CT_FLOAT32), p + 5);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(2, 5)));
  ck_assert_int_eq(ct_tensor_dtype(dst), CT_FLOAT32);
  ck_assert(ct_tensor_shares_memory(dst, src));
  ck_assert_uint_eq(ct_tensor_capacity(dst), ct_tensor_capacity(src) - 20);
  assert_iota_f32(dst, 5.0f, 10);
  /* The source is untouched. */
  ck_assert(ct_ddim_equal(ct_tensor_dims(src), CT_DIMS(4, 5)));
  ck_assert_ptr_eq(ct_tensor_data(src, CT_FLOAT32), p);
  ck_assert_uint_eq(cpu_stats().allocs, 1);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(slice_of_vector_offsets_by_elements) {
  ct_tensor *src = ct_tensor_new(), *dst = ct_tensor_new();
  int32_t *p;
  int i;
  ck_assert_int_eq(ct_tensor_resize(src, CT_DIMS(10)), CT_OK);
  p = ct_tensor_mutable_data(src, CT_INT32, ct_cpu());
  for (i = 0; i < 10; i++) p[i] = i * 3;
  ck_assert_int_eq(ct_tensor_slice(dst, src, 2, 5), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(dst, CT_INT32), p + 2);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(3)));
  ck_assert_int_eq(((const int32_t *)ct_tensor_data(dst, CT_INT32))[2], 12);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(slice_of_slice_adds_offsets) {
  float *p;
  ct_tensor *src = iota_f32(CT_DIMS(4, 5), &p);
  ct_tensor *mid = ct_tensor_new(), *dst = ct_tensor_new();
  ct_memory_stats s;
  ck_assert_int_eq(ct_tensor_slice(mid, src, 1, 4), CT_OK);
  ck_assert_int_eq(ct_tensor_slice(dst, mid, 1, 2), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(dst, CT_FLOAT32), p + 10);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(1, 5)));
  assert_iota_f32(dst, 10.0f, 5);
  ck_assert_uint_eq(ct_tensor_capacity(dst), ct_tensor_capacity(src) - 40);
  ct_tensor_free(src);
  ct_tensor_free(mid);
  ck_assert_uint_eq(cpu_stats().frees, 0);
  assert_iota_f32(dst, 10.0f, 5);
  ct_tensor_free(dst);
  s = cpu_stats();
  ck_assert_uint_eq(s.frees, 1);
  ck_assert_uint_eq(s.allocated, 0);
}
END_TEST

START_TEST(slice_bounds_outside_rows_are_out_of_range) {
  float *p, *q;
  ct_tensor *src = iota_f32(CT_DIMS(4, 5), &p);
  ct_tensor *dst = iota_f32(CT_DIMS(3), &q);
  CT_ASSERT_FAILS(ct_tensor_slice(dst, src, -1, 2), CT_ERR_OUT_OF_RANGE);
  ck_assert_int_eq(ct_tensor_slice(dst, src, 0, 5), CT_ERR_OUT_OF_RANGE);
  ck_assert_int_eq(ct_tensor_slice(dst, src, 3, 2), CT_ERR_OUT_OF_RANGE);
  ck_assert_int_eq(ct_tensor_slice(dst, src, 5, 5), CT_ERR_OUT_OF_RANGE);
  /* dst is unchanged */
  ck_assert_ptr_eq(ct_tensor_data(dst, CT_FLOAT32), q);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(3)));
  ck_assert(!ct_tensor_shares_memory(dst, src));
  assert_iota_f32(dst, 0.0f, 3);
  ck_assert_uint_eq(cpu_stats().frees, 0);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(slice_with_begin_equal_end_is_empty) {
  float *p;
  ct_tensor *src = iota_f32(CT_DIMS(4, 5), &p);
  ct_tensor *dst = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_slice(dst, src, 2, 2), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(0, 5)));
  ck_assert_int_eq(ct_tensor_numel(dst), 0);
  ck_assert(ct_tensor_shares_memory(dst, src));
  ck_assert_int_eq(ct_tensor_slice(dst, src, 4, 4), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(0, 5)));
  ck_assert_int_eq(ct_tensor_slice(dst, src, 0, 0), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(0, 5)));
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(slice_whole_range_is_the_source) {
  float *p;
  ct_tensor *src = iota_f32(CT_DIMS(4, 5), &p);
  ct_tensor *dst = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_slice(dst, src, 0, 4), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(dst, CT_FLOAT32), p);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(4, 5)));
  ck_assert_uint_eq(ct_tensor_capacity(dst), ct_tensor_capacity(src));
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(slice_of_scalar_is_out_of_range) {
  ct_tensor *src = iota_f32(CT_DIMS(), NULL);
  ct_tensor *dst = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_slice(dst, src, 0, 1), CT_ERR_OUT_OF_RANGE);
  ck_assert_int_eq(ct_tensor_slice(dst, src, 0, 0), CT_ERR_OUT_OF_RANGE);
  ck_assert(!ct_tensor_has_memory(dst));
  ck_assert_int_eq(ct_tensor_dims(dst).rank, -1);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

/* ---- Flatten ------------------------------------------------------------------------------- */

START_TEST(flatten_to_2d_splits_at_num_col_dims) {
  float *p;
  ct_tensor *src = iota_f32(CT_DIMS(2, 3, 4), &p);
  ct_tensor *dst = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_flatten_to_2d(dst, src, 1), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(2, 12)));
  ck_assert_ptr_eq(ct_tensor_data(dst, CT_FLOAT32), p);
  ck_assert(ct_tensor_shares_memory(dst, src));
  ck_assert_int_eq(ct_tensor_flatten_to_2d(dst, src, 2), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(6, 4)));
  ck_assert_int_eq(ct_tensor_flatten_to_2d(dst, src, 0), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(1, 24)));
  ck_assert_int_eq(ct_tensor_flatten_to_2d(dst, src, 3), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(24, 1)));
  ck_assert_int_eq(ct_tensor_dtype(dst), CT_FLOAT32);
  assert_iota_f32(dst, 0.0f, 24);
  ck_assert(ct_ddim_equal(ct_tensor_dims(src), CT_DIMS(2, 3, 4)));
  ck_assert_uint_eq(cpu_stats().allocs, 1);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(flatten_to_2d_num_col_dims_outside_rank_is_out_of_range) {
  ct_tensor *src = iota_f32(CT_DIMS(2, 3, 4), NULL);
  ct_tensor *dst = ct_tensor_new();
  CT_ASSERT_FAILS(ct_tensor_flatten_to_2d(dst, src, 4), CT_ERR_OUT_OF_RANGE);
  ck_assert_int_eq(ct_tensor_flatten_to_2d(dst, src, -1), CT_ERR_OUT_OF_RANGE);
  ck_assert(!ct_tensor_has_memory(dst));
  ck_assert_int_eq(ct_tensor_dims(dst).rank, -1);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(flatten_to_2d_of_scalar_is_1x1) {
  ct_tensor *src = iota_f32(CT_DIMS(), NULL);
  ct_tensor *dst = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_flatten_to_2d(dst, src, 0), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(1, 1)));
  ck_assert_int_eq(ct_tensor_flatten_to_2d(dst, src, 1), CT_ERR_OUT_OF_RANGE);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

/* ---- View errors and corner cases ----------------------------------------------------------- */

START_TEST(views_of_tensor_without_memory_are_uninitialized) {
  ct_tensor *src = ct_tensor_new(), *dst = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_share(dst, src), CT_ERR_UNINITIALIZED);
  ck_assert_int_eq(ct_tensor_resize(src, CT_DIMS(4, 5)), CT_OK);
  CT_ASSERT_FAILS(ct_tensor_share(dst, src), CT_ERR_UNINITIALIZED);
  ck_assert_int_eq(ct_tensor_slice(dst, src, 0, 2), CT_ERR_UNINITIALIZED);
  ck_assert_int_eq(ct_tensor_flatten_to_2d(dst, src, 1), CT_ERR_UNINITIALIZED);
  ck_assert(!ct_tensor_has_memory(dst));
  ck_assert_int_eq(ct_tensor_dims(dst).rank, -1);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(views_of_tensor_past_capacity_are_out_of_range) {
  ct_tensor *src = iota_f32(CT_DIMS(2, 3), NULL);
  ct_tensor *dst = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(src, CT_DIMS(100, 100)), CT_OK);
  ck_assert_int_eq(ct_tensor_share(dst, src), CT_ERR_OUT_OF_RANGE);
  ck_assert_int_eq(ct_tensor_slice(dst, src, 0, 1), CT_ERR_OUT_OF_RANGE);
  ck_assert_int_eq(ct_tensor_flatten_to_2d(dst, src, 1), CT_ERR_OUT_OF_RANGE);
  ck_assert(!ct_tensor_has_memory(dst));
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(failed_view_leaves_dst_unchanged) {
  float *q;
  ct_tensor *src = ct_tensor_new();
  ct_tensor *dst = iota_f32(CT_DIMS(3), &q);
  ck_assert_int_eq(ct_tensor_resize(src, CT_DIMS(4, 5)), CT_OK);
  ck_assert_int_eq(ct_tensor_share(dst, src), CT_ERR_UNINITIALIZED);
  ck_assert_int_eq(ct_tensor_slice(dst, src, 0, 1), CT_ERR_UNINITIALIZED);
  ck_assert_int_eq(ct_tensor_flatten_to_2d(dst, src, 1), CT_ERR_UNINITIALIZED);
  ck_assert(ct_tensor_has_memory(dst));
  ck_assert_ptr_eq(ct_tensor_data(dst, CT_FLOAT32), q);
  ck_assert(ct_ddim_equal(ct_tensor_dims(dst), CT_DIMS(3)));
  assert_iota_f32(dst, 0.0f, 3);
  ck_assert_uint_eq(cpu_stats().frees, 0);
  ck_assert_uint_eq(cpu_stats().allocated, 12);
  ct_tensor_free(dst);
  ct_tensor_free(src);
}
END_TEST

START_TEST(views_onto_the_source_itself) {
  float *p;
  ct_tensor *t = iota_f32(CT_DIMS(4, 5), &p);
  ct_tensor *u = iota_f32(CT_DIMS(2, 3, 4), NULL);
  ct_memory_stats s;
  ck_assert_int_eq(ct_tensor_share(t, t), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), p);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(4, 5)));
  ck_assert_int_eq(ct_tensor_slice(t, t, 1, 3), CT_OK);
  ck_assert_ptr_eq(ct_tensor_data(t, CT_FLOAT32), p + 5);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(2, 5)));
  assert_iota_f32(t, 5.0f, 10);
  ck_assert_int_eq(ct_tensor_flatten_to_2d(u, u, 2), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(u), CT_DIMS(6, 4)));
  assert_iota_f32(u, 0.0f, 24);
  s = cpu_stats();
  ck_assert_uint_eq(s.frees, 0);
  ck_assert_uint_eq(s.allocated, 80 + 96);
  ct_tensor_free(t);
  ct_tensor_free(u);
  s = cpu_stats();
  ck_assert_uint_eq(s.frees, 2);
  ck_assert_uint_eq(s.allocated, 0);
}
END_TEST

START_TEST(views_with_null_are_invalid_argument) {
  ct_tensor *t = iota_f32(CT_DIMS(4, 5), NULL);
  ck_assert_int_eq(ct_tensor_share(NULL, t), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_share(t, NULL), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_slice(NULL, t, 0, 1), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_slice(t, NULL, 0, 1), CT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(ct_tensor_flatten_to_2d(NULL, t, 1), CT_ERR_INVALID_ARGUMENT);
  CT_ASSERT_FAILS(ct_tensor_flatten_to_2d(t, NULL, 1), CT_ERR_INVALID_ARGUMENT);
  ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(4, 5)));
  ct_tensor_free(t);
}
END_TEST

/* ---- Threads -------------------------------------------------------------------------------- */

#define NTHREADS 4
#define NROUNDS 500

typedef struct view_job {
  ct_tensor *normal;   /* this thread's view of a normal block */
  ct_tensor *external; /* this thread's view of an external buffer */
  int bad;
} view_job;

static atomic_int releases;

static void count_release_atomic(void *ctx) {
  (void)ctx;
  atomic_fetch_add(&releases, 1);
}

/* Makes and drops views of its two tensors, then frees them. */
static void *churn_views(void *arg) {
  view_job *j = arg;
  int r;
  for (r = 0; r < NROUNDS; r++) {
    ct_tensor *a = ct_tensor_new(), *b = ct_tensor_new();
    if (ct_tensor_share(a, j->normal) != CT_OK) j->bad++;
    if (ct_tensor_slice(b, j->external, 1, 3) != CT_OK) j->bad++;
    if (ct_tensor_slice(a, a, 0, 1) != CT_OK) j->bad++;
    ct_tensor_free(a);
    ct_tensor_free(b);
  }
  ct_tensor_free(j->normal);
  ct_tensor_free(j->external);
  j->normal = j->external = NULL;
  return NULL;
}

START_TEST(views_across_threads_free_block_once) {
  float buf[20] = {0};
  ct_tensor *normal = iota_f32(CT_DIMS(4, 5), NULL);
  ct_tensor *external = ct_tensor_new();
  view_job jobs[NTHREADS];
  pthread_t th[NTHREADS];
  ct_memory_stats s;
  int i;
  atomic_store(&releases, 0);
  ck_assert_int_eq(ct_tensor_wrap(external, buf, CT_DIMS(4, 5), CT_FLOAT32, ct_cpu(),
                                  count_release_atomic, NULL),
                   CT_OK);
  for (i = 0; i < NTHREADS; i++) {
    jobs[i].normal = ct_tensor_new();
    jobs[i].external = ct_tensor_new();
    jobs[i].bad = 0;
    ck_assert_int_eq(ct_tensor_share(jobs[i].normal, normal), CT_OK);
    ck_assert_int_eq(ct_tensor_share(jobs[i].external, external), CT_OK);
  }
  for (i = 0; i < NTHREADS; i++)
    ck_assert_int_eq(pthread_create(&th[i], NULL, churn_views, &jobs[i]), 0);
  /* The sources go while the threads run; the last view, in some thread, frees the block. */
  ct_tensor_free(normal);
  ct_tensor_free(external);
  for (i = 0; i < NTHREADS; i++) {
    ck_assert_int_eq(pthread_join(th[i], NULL), 0);
    ck_assert_int_eq(jobs[i].bad, 0);
  }
  ck_assert_int_eq(atomic_load(&releases), 1);
  s = cpu_stats();
  ck_assert_uint_eq(s.allocated, 0);
  ck_assert_uint_eq(s.allocs, 1);
  ck_assert_uint_eq(s.frees, 1);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("tensor_views");
  CT_ADD_TEST(s, share_views_the_same_memory);
  CT_ADD_TEST(s, shared_memory_lives_until_last_view);
  CT_ADD_TEST(s, share_lets_go_of_dst_memory);
  CT_ADD_TEST(s, shares_memory_needs_a_common_block);
  CT_ADD_TEST(s, slice_rows_offsets_data_by_rows);
  CT_ADD_TEST(s, slice_of_vector_offsets_by_elements);
  CT_ADD_TEST(s, slice_of_slice_adds_offsets);
  CT_ADD_TEST(s, slice_bounds_outside_rows_are_out_of_range);
  CT_ADD_TEST(s, slice_with_begin_equal_end_is_empty);
  CT_ADD_TEST(s, slice_whole_range_is_the_source);
  CT_ADD_TEST(s, slice_of_scalar_is_out_of_range);
  CT_ADD_TEST(s, flatten_to_2d_splits_at_num_col_dims);
  CT_ADD_TEST(s, flatten_to_2d_num_col_dims_outside_rank_is_out_of_range);
  CT_ADD_TEST(s, flatten_to_2d_of_scalar_is_1x1);
  CT_ADD_TEST(s, views_of_tensor_without_memory_are_uninitialized);
  CT_ADD_TEST(s, views_of_tensor_past_capacity_are_out_of_range);
  CT_ADD_TEST(s, failed_view_leaves_dst_unchanged);
  CT_ADD_TEST(s, views_onto_the_source_itself);
  CT_ADD_TEST(s, views_with_null_are_invalid_argument);
  CT_ADD_TEST(s, views_across_threads_free_block_once);
  CT_ADD_TEST(s, a_view_retyped_to_a_misaligned_dtype_gets_its_own_block);
  return s;
}

CT_TEST_MAIN(make_suite)
