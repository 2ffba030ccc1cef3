/* SPDX-License-Identifier: Apache-2.0 */
/* lazy_matmul: the seed example, end to end. Three variables vr, v1, v2 in a scope;
 * uniform_random fills v1 [100,200] and v2 [200,300] (float32), and the memory stats show the
 * memory appear only then; matmul writes vr, whose dims come from infer-shape; the result is
 * checked against a naive loop. Runs on the GPU when there is one, else on the CPU. Exits
 * non-zero if anything does not behave as printed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <corten/corten.h>

static int failures = 0;

static ct_memory_stats stats(ct_place p) {
  ct_memory_stats st = {0};
  ct_memory_stats_get(p, &st);
  return st;
}

static void show(const char *step, ct_place p) {
  ct_memory_stats st = stats(p);
  char where[48];
  printf("%-52s %-6s allocated %8zu B  peak %8zu B  allocs %llu\n", step,
         ct_place_str(p, where, sizeof where), st.allocated, st.peak,
         (unsigned long long)st.allocs);
}

static void expect(int ok, const char *what) {
  if (!ok) {
    printf("  !! expected %s; last error: %s\n", what, ct_last_error());
    failures++;
  }
}

/* An op filling `name` with uniform values in [-1, 1) of the given dims. */
static ct_op *uniform(const char *name, int64_t rows, int64_t cols, int64_t seed) {
  ct_op *op = ct_op_new("uniform_random");
  int64_t shape[2] = {rows, cols};
  ct_op_set_output(op, "Out", name);
  ct_op_set_attr_ints(op, "shape", shape, 2);
  ct_op_set_attr_int(op, "seed", seed);
  ct_op_set_attr_int(op, "dtype", CT_FLOAT32);
  return op;
}

/* The data of a tensor variable, on the host (copied from the device if need be). */
static const float *host_data(ct_scope *s, const char *name, ct_tensor *scratch) {
  const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, name));
  if (t == NULL) return NULL;
  if (ct_tensor_place(t).kind == CT_DEVICE_CPU) return ct_tensor_data(t, CT_FLOAT32);
  if (ct_tensor_copy(scratch, t, ct_cpu()) != CT_OK) return NULL;
  return ct_tensor_data(scratch, CT_FLOAT32);
}

int main(void) {
  ct_place place = ct_cuda_device_count() > 0 ? ct_cuda(0) : ct_cpu();
  char where[48], dims[64];
  printf("lazy_matmul on %s\n\n", ct_place_str(place, where, sizeof where));

  ct_scope *scope = ct_scope_new();
  const char *names[] = {"vr", "v1", "v2"};
  for (int i = 0; i < 3; i++) expect(ct_var_tensor(ct_scope_var(scope, names[i])) != NULL, names[i]);
  show("three variables vr, v1, v2 (no memory yet)", place);
  expect(stats(place).allocated == 0, "no memory before the ops run");

  ct_op *init1 = uniform("v1", 100, 200, 1), *init2 = uniform("v2", 200, 300, 2);
  expect(ct_op_run(init1, scope, place) == CT_OK, "uniform_random into v1");
  show("uniform_random fills v1 [100,200]", place);
  expect(stats(place).allocated == 100 * 200 * sizeof(float), "80000 bytes for v1");
  expect(ct_op_run(init2, scope, place) == CT_OK, "uniform_random into v2");
  show("uniform_random fills v2 [200,300]", place);

  ct_op *mm = ct_op_new("matmul");
  ct_op_set_input(mm, "X", "v1");
  ct_op_set_input(mm, "Y", "v2");
  ct_op_set_output(mm, "Out", "vr");
  expect(ct_op_run(mm, scope, place) == CT_OK, "matmul into vr");
  ct_ddim rd = ct_tensor_dims(ct_var_get_tensor(ct_scope_find_var(scope, "vr")));
  printf("matmul(v1, v2) -> vr %s (dims from infer-shape)\n", ct_ddim_str(rd, dims, sizeof dims));
  show("after matmul", place);
  expect(ct_ddim_equal(rd, CT_DIMS(100, 300)), "vr of dims [100,300]");
  expect(stats(place).allocated == (100 * 200 + 200 * 300 + 100 * 300) * sizeof(float),
         "exactly v1 + v2 + vr bytes");

  /* Check every element against a naive triple loop in double precision. */
  ct_tensor *s1 = ct_tensor_new(), *s2 = ct_tensor_new(), *sr = ct_tensor_new();
  const float *a = host_data(scope, "v1", s1), *b = host_data(scope, "v2", s2);
  const float *r = host_data(scope, "vr", sr);
  double worst = 0;
  if (a != NULL && b != NULL && r != NULL) {
    for (int i = 0; i < 100; i++) {
      for (int j = 0; j < 300; j++) {
        double acc = 0;
        for (int k = 0; k < 200; k++) acc += (double)a[i * 200 + k] * b[k * 300 + j];
        double err = fabs(acc - r[i * 300 + j]);
        if (err > worst) worst = err;
      }
    }
  } else {
    expect(0, "readable v1, v2 and vr");
  }
  printf("largest difference from a naive loop: %.3g\n", worst);
  expect(worst < 1e-4, "matmul to match the naive loop within 1e-4");
  ct_tensor_free(s1);
  ct_tensor_free(s2);
  ct_tensor_free(sr);

  ct_op_free(init1);
  ct_op_free(init2);
  ct_op_free(mm);
  ct_scope_free(scope);
  show("scope freed", place);
  expect(stats(place).allocated == 0, "all memory back after the scope goes");
  printf("\n%s\n", failures ? "lazy_matmul: FAILED" : "lazy_matmul: all steps behaved as shown");
  return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
