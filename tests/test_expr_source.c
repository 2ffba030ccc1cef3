/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA source of expression kernels (ops/expr/expr_source.c), checked on the CPU: one source
 * per structure (scalar values, data and extents are parameters, so they do not change it; a
 * broadcast pattern or a dtype does), and, when the build found nvcc (CORTEN_TEST_NVCC), the
 * sources of every node kind, fused pair, mode, broadcast and dtype, and one with dst as a leaf,
 * compile with it, so a bug in the generated code shows without a GPU. Links the static library
 * for the internal entry. */
#define _GNU_SOURCE /* mkdtemp, nftw (file_util.h) */
#include "expr_util.h"
#include "file_util.h"

char *ct__expr_source_for(ct_tensor *dst, ct_assign mode, const ct_expr *e, const char *name);

/* The source of dst (mode) = e, which it frees. */
static char *source_of(ct_tensor *dst, ct_assign mode, ct_expr *e, const char *name) {
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  char *s = ct__expr_source_for(dst, mode, e, name);
  ck_assert_msg(s != NULL, "%s", ct_last_error());
  ct_expr_free(e);
  return s;
}

START_TEST(the_source_depends_on_the_structure_only) {
  ct_tensor *a = tensor_k(CT_FLOAT32, CT_DIMS(4, 5), 1), *b = tensor_k(CT_FLOAT32, CT_DIMS(5), 2);
  ct_tensor *a2 = tensor_k(CT_FLOAT32, CT_DIMS(40, 50), 3),
            *b2 = tensor_k(CT_FLOAT32, CT_DIMS(50), 4);
  ct_tensor *b3 = tensor_k(CT_FLOAT32, CT_DIMS(4, 1), 4), *d = ct_tensor_new();
  char *s1 = source_of(d, CT_SAVETO, BIN(ADD, BIN(MUL, LEAF(a), ct_expr_scalar(2)), LEAF(b)), "k");
  char *s2 =
      source_of(d, CT_SAVETO, BIN(ADD, BIN(MUL, LEAF(a2), ct_expr_scalar(3)), LEAF(b2)), "k");
  char *s3 = source_of(d, CT_SAVETO, BIN(ADD, BIN(MUL, LEAF(a), ct_expr_scalar(2)), LEAF(b3)), "k");
  ck_assert_str_eq(s1, s2);
  ck_assert_str_ne(s1, s3); /* b broadcasts along dim 0, b3 along dim 1 */
  ck_assert_ptr_nonnull(strstr(s1, "extern \"C\" __global__ void k("));
  ck_assert_ptr_null(strstr(s1, "2.0")); /* the scalar's value is a parameter */
  free(s1);
  free(s2);
  free(s3);
  ct_tensor *all[] = {a, b, a2, b2, b3, d};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) ct_tensor_free(all[i]);
}
END_TEST

/* d = d * a: dst is a leaf too, so the kernel's dst must not be __restrict__ (it aliases l0). */
START_TEST(a_dst_that_is_also_a_leaf_is_not_declared_restrict) {
  ct_tensor *a = tensor_k(CT_FLOAT32, CT_DIMS(4, 5), 1);
  ct_tensor *d = tensor_k(CT_FLOAT32, CT_DIMS(4, 5), 2);
  char *s = source_of(d, CT_SAVETO, BIN(MUL, LEAF(d), LEAF(a)), "k");
  ck_assert_msg(strstr(s, "void k(float *dst, long long n,\n    const float *l0,\n    const "
                          "float *l1)") != NULL, "%s", s);
  ck_assert_ptr_null(strstr(s, "restrict"));
  free(s);
  ct_tensor_free(a);
  ct_tensor_free(d);
}
END_TEST

#ifdef CORTEN_TEST_NVCC
/* Sources of every kind, pair, mode and dtype, into one .cu file compiled by nvcc. */
START_TEST(the_generated_sources_compile_with_nvcc) {
  make_work_dir("expr-source");
  char path[256], obj[256], cmd[1024];
  snprintf(path, sizeof path, "%s", in_dir("kernels.cu"));
  snprintf(obj, sizeof obj, "%s", in_dir("kernels.o"));
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  /* Each kind once, the dtype and mode turning with it (each dtype and mode comes up). */
  static const ct_dtype dts[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16};
  for (int op = CT_EXPR_ADD; op <= CT_EXPR_ERF; op++) {
    ct_dtype dt = dts[op % 4];
    int mode = op % 5;
    ct_tensor *a = tensor_k(dt, CT_DIMS(3, 4, 5), 1), *b = tensor_k(dt, CT_DIMS(4, 1), 2);
    ct_tensor *c = tensor_k(dt, CT_DIMS(3, 4, 5), 3), *one = tensor_k(dt, CT_DIMS(1), 4);
    ct_tensor *d = tensor_k(dt, CT_DIMS(3, 4, 5), 5);
    ct_expr *x =
        op <= CT_EXPR_POW ? ct_expr_binary(op, LEAF(a), LEAF(b)) : ct_expr_unary(op, LEAF(c));
    /* A fused pair (left or right), a scalar leaf and a one-element tensor. */
    ct_expr *e =
        op % 2 ? BIN(MUL, BIN(ADD, x, LEAF(c)), LEAF(a)) : BIN(SUB, LEAF(c), BIN(DIV, x, LEAF(a)));
    e = BIN(MAX, e, BIN(MUL, ct_expr_scalar(0.5), LEAF(one)));
    char name[32];
    snprintf(name, sizeof name, "k%d", op);
    char *s = source_of(d, (ct_assign)mode, e, name);
    fputs(s, f);
    free(s);
    ct_tensor *all[] = {a, b, c, one, d};
    for (size_t i = 0; i < 5; i++) ct_tensor_free(all[i]);
  }
  /* dst as a leaf (d = d * a + d), which the kernel reads and writes through two pointers. */
  ct_tensor *a = tensor_k(CT_FLOAT16, CT_DIMS(3, 4), 1);
  ct_tensor *d = tensor_k(CT_FLOAT16, CT_DIMS(3, 4), 2);
  char *s = source_of(d, CT_SAVETO, BIN(ADD, BIN(MUL, LEAF(d), LEAF(a)), LEAF(d)), "k_dst_leaf");
  fputs(s, f);
  free(s);
  ct_tensor_free(a);
  ct_tensor_free(d);
  ck_assert_int_eq(fclose(f), 0);
  snprintf(cmd, sizeof cmd, "'%s' -c --fmad=false -Werror all-warnings -I'%s' '%s' -o '%s' 2>&1",
           CORTEN_TEST_NVCC, CORTEN_TEST_SOURCE_DIR, path, obj);
  int rc = system(cmd);
  ck_assert_msg(rc == 0, "nvcc failed (%d) on %s", rc, path);
  remove_work_dir();
}
END_TEST
#endif

static Suite *expr_source_suite(void) {
  Suite *s = suite_create("expr_source");
  CT_ADD_TEST(s, the_source_depends_on_the_structure_only);
  CT_ADD_TEST(s, a_dst_that_is_also_a_leaf_is_not_declared_restrict);
#ifdef CORTEN_TEST_NVCC
  CT_ADD_TEST(s, the_generated_sources_compile_with_nvcc);
#endif
  return s;
}

CT_TEST_MAIN(expr_source_suite)
