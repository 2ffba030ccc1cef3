/* SPDX-License-Identifier: Apache-2.0 */
/* lazy_alloc: a tour of corten's lazy memory. It builds a scope tree, creates variables and
 * sizes their tensors, and shows from the memory stats that no tensor memory exists until
 * ct_tensor_mutable_data; then it allocates, shares, slices, wraps a caller's buffer and frees,
 * printing the stats after every step. Exits non-zero if any step does not behave as printed. */
#include <stdio.h>
#include <stdlib.h>

#include <corten/corten.h>

static int failures = 0;

/* Prints the step and the CPU memory stats after it. */
static void show(const char *step) {
  ct_memory_stats st;
  ct_memory_stats_get(ct_cpu(), &st);
  printf("%-58s allocated %8zu B  reserved %8zu B  peak %8zu B  allocs %llu  frees %llu\n", step,
         st.allocated, st.reserved, st.peak, (unsigned long long)st.allocs,
         (unsigned long long)st.frees);
}

/* Checks an expectation and says so when it does not hold. */
static void expect(int ok, const char *what) {
  if (!ok) {
    printf("  !! expected %s; last error: %s\n", what, ct_last_error());
    failures++;
  }
}

static size_t allocated_now(void) {
  ct_memory_stats st;
  ct_memory_stats_get(ct_cpu(), &st);
  return st.allocated;
}

static void on_release(void *ctx) { printf("  (the caller's buffer %p was released)\n", ctx); }

int main(void) {
  char dims[64];
  show("start");

  /* A scope tree: a global scope for parameters and a kid for one forward pass. */
  ct_scope *global = ct_scope_new();
  ct_scope *step = ct_scope_new_kid(global);
  expect(global && step, "two scopes");

  /* 1000 weight variables, each a [100,200] float32 tensor: dims only, no memory. */
  char name[32];
  for (int i = 0; i < 1000; i++) {
    snprintf(name, sizeof name, "layer%03d.weight", i);
    ct_tensor *w = ct_var_tensor(ct_scope_var(global, name));
    expect(w && ct_tensor_resize(w, CT_DIMS(100, 200)) == CT_OK, "a resized tensor");
  }
  show("1000 variables with [100,200] float32 tensors, resized");
  expect(allocated_now() == 0, "0 bytes before mutable_data");

  /* The kid scope sees the parent's variables; a lookup walks up. */
  ct_var *w7 = ct_scope_find_var(step, "layer007.weight");
  expect(w7 != NULL && ct_scope_find_scope(step, "layer007.weight") == global,
         "layer007.weight found from the kid, held by the global scope");
  ct_tensor *t = ct_var_tensor(w7);
  const void *before = ct_tensor_data(t, CT_FLOAT32);
  printf("  ct_tensor_data before mutable_data: %p (%s)\n", before, ct_last_error());

  /* The first mutable_data allocates exactly numel x 4 bytes. */
  float *data = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu());
  for (int64_t i = 0; i < ct_tensor_numel(t); i++) data[i] = (float)i;
  show("mutable_data on layer007.weight");
  expect(allocated_now() == 80000, "exactly 80000 bytes");

  /* Asking again, or for a dtype that fits, returns the same block. */
  expect(ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu()) == data, "the same block");
  show("mutable_data again: same block, nothing new");

  /* A share and a slice are views: no new memory. */
  ct_tensor *view = ct_var_tensor(ct_scope_var(step, "w7_view"));
  ct_tensor *rows = ct_var_tensor(ct_scope_var(step, "w7_rows_10_20"));
  expect(ct_tensor_share(view, t) == CT_OK, "share");
  expect(ct_tensor_slice(rows, t, 10, 20) == CT_OK, "slice");
  const float *r = ct_tensor_data(rows, CT_FLOAT32);
  printf("  slice rows [10,20): dims %s, first value %.0f (row 10 x 200)\n",
         ct_ddim_str(ct_tensor_dims(rows), dims, sizeof dims), r ? r[0] : -1.0f);
  expect(r != NULL && r[0] == 2000.0f, "the slice starts at element 2000");
  show("share + slice in the kid scope");

  /* A caller's buffer, wrapped: corten never frees it, and it is not in the stats. */
  static float buffer[6] = {1, 2, 3, 4, 5, 6};
  ct_tensor *ext = ct_var_tensor(ct_scope_var(step, "external"));
  expect(ct_tensor_wrap(ext, buffer, CT_DIMS(2, 3), CT_FLOAT32, ct_cpu(), on_release, buffer) ==
             CT_OK,
         "wrap");
  expect(ct_tensor_resize(ext, CT_DIMS(4, 3)) == CT_OK &&
             ct_tensor_mutable_data(ext, CT_FLOAT32, ct_cpu()) == NULL &&
             ct_last_status() == CT_ERR_EXTERNAL_BUFFER,
         "growing an external buffer to be refused");
  printf("  growing the wrapped buffer: %s\n", ct_last_error());
  show("wrapped a caller's 24-byte buffer");

  /* Dropping the kid scope lets go of the views: the weight keeps its block. */
  ct_scope_drop_kids(global);
  show("dropped the kid scope (views gone, weight kept)");
  expect(allocated_now() == 80000, "the weight's 80000 bytes still held");

  ct_scope_free(global);
  show("freed the global scope");
  ct_memory_stats st;
  ct_memory_stats_get(ct_cpu(), &st);
  expect(st.allocated == 0 && st.allocs == st.frees, "everything returned");
  /* The 80 KB block stays reserved: the host keeps freed blocks of 64 KiB or more for the next
   * tensor of that size. ct_memory_empty_cache gives them back to the system. */
  expect(st.reserved == 80000, "the freed 80 KB block kept for reuse");
  ct_memory_empty_cache(ct_cpu());
  show("emptied the host cache");
  ct_memory_stats_get(ct_cpu(), &st);
  expect(st.reserved == 0, "nothing reserved once the cache is empty");

  printf(failures ? "lazy_alloc: %d step(s) did not behave as expected\n"
                  : "lazy_alloc: every step behaved as expected\n",
         failures);
  return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
