/* SPDX-License-Identifier: Apache-2.0 */
/* The executor's optimize option on matmul chains (ops/passes.c's matmul_epilogue,
 * docs/design/passes.md): matmul + bias add (+ relu or clip) runs as one matmul_fusion whose
 * results equal the unoptimized executor's bit for bit and whose intermediates never get memory,
 * on every path of the kernel (the epilogue in the GEMM's tiles, plain and swapped, and the pass
 * over Out after batched products); chains are left alone where the product is read elsewhere,
 * kept, or the bias is not a vector. */
#include <math.h>
#include <string.h>

#include "passes_util.h"

typedef struct spec {
  ct_ddim x, y, b;     /* X, Y and the bias's dims */
  bool ty, bias_first; /* transpose_y; the add as b + p instead of p + b */
  const char *act;     /* NULL, "relu" or "clip" */
  double lo, hi;       /* clip's bounds */
  ct_dtype dt;
  bool nan; /* the bias's first element NaN */
} spec;

/* p = matmul(x, y), q = p + b (or b + p), then out = act(q) (or q copied by assign). */
static ct_program *chain(const spec *sp) {
  ct_program *p = ct_program_new();
  ct_op *mm = op_xy("matmul", "x", "y", "p");
  if (sp->ty) ck_assert_int_eq(ct_op_set_attr_bool(mm, "transpose_y", true), CT_OK);
  ck_assert_int_eq(ct_program_append(p, mm), CT_OK);
  ck_assert_int_eq(ct_program_append(p, sp->bias_first ? op_xy("elementwise_add", "b", "p", "q")
                                                       : op_xy("elementwise_add", "p", "b", "q")),
                   CT_OK);
  ct_op *a = op_x(sp->act != NULL ? sp->act : "assign", "q", "out");
  if (sp->act != NULL && strcmp(sp->act, "clip") == 0) {
    ck_assert_int_eq(ct_op_set_attr_float(a, "min", sp->lo), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_float(a, "max", sp->hi), CT_OK);
  }
  ck_assert_int_eq(ct_program_append(p, a), CT_OK);
  return p;
}

static ct_scope *scope_of(const spec *sp) {
  ct_scope *s = ct_scope_new();
  put_pattern(s, "x", sp->x, 1, sp->dt);
  put_pattern(s, "y", sp->y, 2, sp->dt);
  put_pattern(s, "b", sp->b, 3, sp->dt);
  if (sp->nan) {
    void *b = ct_tensor_mutable_data(ct_var_tensor(ct_scope_var(s, "b")), sp->dt, ct_cpu());
    if (sp->dt == CT_FLOAT32) ((float *)b)[0] = NAN;
    else ((double *)b)[0] = NAN;
  }
  return s;
}

/* Runs p over a fresh scope of sp with options o (twice); out's bytes into a new buffer, its
 * element count into *n, and whether an intermediate of the chain got memory into *mem (the
 * product, or the sum when an activation reads it; assign's q is the chain's output). */
static void *run_chain(const ct_program *p, const spec *sp, const ct_executor_options *o,
                       int64_t *n, bool *mem) {
  ct_scope *s = scope_of(sp);
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), o);
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  for (int k = 0; k < 2; k++) ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, "out"));
  *n = ct_tensor_numel(t);
  size_t bytes = (size_t)*n * ct_dtype_size(sp->dt);
  void *buf = xmalloc(*n, ct_dtype_size(sp->dt));
  memcpy(buf, ct_tensor_data(t, sp->dt), bytes);
  *mem = has_memory(s, "p") || (sp->act != NULL && has_memory(s, "q"));
  ct_executor_free(e);
  ct_scope_free(s);
  return buf;
}

/* Optimized equals unoptimized bit for bit; fused (no memory for p and q) when `fused`. */
static void check(const spec *sp, bool fused) {
  ct_program *p = chain(sp);
  int64_t n0, n1;
  bool mem0, mem1;
  void *plain = run_chain(p, sp, NULL, &n0, &mem0);
  ct_executor_options o = {.optimize = true};
  void *opt = run_chain(p, sp, &o, &n1, &mem1);
  ck_assert_int_eq(n0, n1);
  ck_assert_msg(memcmp(plain, opt, (size_t)n0 * ct_dtype_size(sp->dt)) == 0,
                "the optimized program's bits differ");
  ck_assert(mem0);
  ck_assert_msg(mem1 == !fused, fused ? "the chain was not fused" : "the chain was fused");
  if (sp->nan) { /* the bias's NaN reaches the first column of every row */
    double v = get_elem(opt, sp->dt, 0);
    ck_assert_msg(isnan(v), "out[0] = %g, expected NaN", v);
  }
  free(plain);
  free(opt);
  ct_program_free(p);
}

/* A product of small integers: every value exact, so the expected output is written out. */
START_TEST(a_fused_chain_gives_the_exact_values) {
  ct_program *p = chain(&(spec){.act = "relu"});
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT32, CT_DIMS(2, 3), (const float[]){1, 2, 3, -1, 0, 2});
  put(s, "y", CT_FLOAT32, CT_DIMS(3, 2), (const float[]){1, -1, 2, 0, -3, 1});
  put(s, "b", CT_FLOAT32, CT_DIMS(2), (const float[]){10, 1});
  ct_executor_options o = {.optimize = true};
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  /* x y = [[-4, 2], [-7, 3]]; + b = [[6, 3], [3, 4]]; relu keeps them */
  const float *out = result(s, "out", CT_FLOAT32, CT_DIMS(2, 2));
  ck_assert(out[0] == 6 && out[1] == 3 && out[2] == 3 && out[3] == 4);
  ck_assert(!has_memory(s, "p") && !has_memory(s, "q"));
  put(s, "b", CT_FLOAT32, CT_DIMS(2), (const float[]){1, -5});
  ck_assert_int_eq(ct_executor_run(e), CT_OK); /* [[-3, -3], [-6, -2]] -> relu: zeros */
  out = result(s, "out", CT_FLOAT32, CT_DIMS(2, 2));
  for (int i = 0; i < 4; i++) ck_assert(out[i] == 0 && !signbit(out[i]));
  ct_executor_free(e);
  ct_scope_free(s);
  ct_program_free(p);
}
END_TEST

/* The epilogue in the tiles of one GEMM over the folded batch (batch dims of one included):
 * float32 and float64, a bias per column and one for all, relu, clip between bounds float32
 * holds, transpose_y, the add's operands either way, a NaN in the bias, and shapes of many
 * tiles (edge tiles too) on one thread and on three, and a product narrow enough that the GEMM
 * computes it transposed. */
START_TEST(the_epilogue_in_the_gemm_tiles_gives_the_same_bits) {
  check(&(spec){.x = CT_DIMS(2, 5, 16), .y = CT_DIMS(16, 24), .b = CT_DIMS(24),
                .dt = CT_FLOAT32}, true);
  /* batch dims of extent 1 fold too (a batch of one; ones between the batch's dims) */
  check(&(spec){.x = CT_DIMS(1, 5, 16), .y = CT_DIMS(16, 24), .b = CT_DIMS(24), .act = "relu",
                .dt = CT_FLOAT32, .nan = true}, true);
  check(&(spec){.x = CT_DIMS(2, 1, 5, 16), .y = CT_DIMS(16, 24), .b = CT_DIMS(24),
                .dt = CT_FLOAT64}, true);
  check(&(spec){.x = CT_DIMS(2, 5, 16), .y = CT_DIMS(16, 24), .b = CT_DIMS(24), .act = "relu",
                .dt = CT_FLOAT64, .nan = true}, true);
  check(&(spec){.x = CT_DIMS(7, 33), .y = CT_DIMS(33, 40), .b = CT_DIMS(1), .act = "clip",
                .lo = 0, .hi = 0.5, .dt = CT_FLOAT32}, true);
  check(&(spec){.x = CT_DIMS(7, 33), .y = CT_DIMS(40, 33), .b = CT_DIMS(40), .ty = true,
                .bias_first = true, .act = "relu", .dt = CT_FLOAT32, .nan = true}, true);
  check(&(spec){.x = CT_DIMS(300, 64), .y = CT_DIMS(64, 200), .b = CT_DIMS(200), .act = "relu",
                .dt = CT_FLOAT32}, true);
  check(&(spec){.x = CT_DIMS(200, 300), .y = CT_DIMS(300, 5), .b = CT_DIMS(5), .act = "relu",
                .dt = CT_FLOAT32, .nan = true}, true);
  ct_set_num_threads(3);
  check(&(spec){.x = CT_DIMS(4, 75, 64), .y = CT_DIMS(64, 200), .b = CT_DIMS(200),
                .act = "relu", .dt = CT_FLOAT32}, true);
  check(&(spec){.x = CT_DIMS(200, 300), .y = CT_DIMS(300, 5), .b = CT_DIMS(5), .dt = CT_FLOAT64},
        true);
  ct_set_num_threads(1);
}
END_TEST

/* The pass over Out after the products: clip between bounds float32 does not hold (in double,
 * as the clip op), a Y of its own per batch entry (the batched GEMM), an X broadcast over Y's
 * batch (a GEMM per entry). */
START_TEST(the_epilogue_after_the_products_gives_the_same_bits) {
  check(&(spec){.x = CT_DIMS(7, 33), .y = CT_DIMS(33, 40), .b = CT_DIMS(40), .act = "clip",
                .lo = 0.1, .hi = 0.6, .dt = CT_FLOAT32}, true);
  check(&(spec){.x = CT_DIMS(3, 4, 16), .y = CT_DIMS(3, 16, 8), .b = CT_DIMS(8), .act = "relu",
                .dt = CT_FLOAT32, .nan = true}, true);
  check(&(spec){.x = CT_DIMS(4, 16), .y = CT_DIMS(3, 16, 8), .b = CT_DIMS(1), .act = "clip",
                .lo = -0.25, .hi = 0.25, .dt = CT_FLOAT64}, true);
}
END_TEST

/* Left alone, with the same results: a bias that is not a vector (it would broadcast over rows
 * too), a bias of 3 added to a product of one column (the add makes [4, 3], which
 * matmul_fusion refuses; found by the program fuzzer), a bias of 2 added to the one-column
 * product of a row and a transposed Y (the rank-1 product [1] made [2]), a Y of rank 1, the
 * product read by another op, the sum kept by name. */
START_TEST(chains_the_pass_cannot_prove_are_left_alone) {
  check(&(spec){.x = CT_DIMS(4, 8), .y = CT_DIMS(8, 6), .b = CT_DIMS(4, 6), .dt = CT_FLOAT32},
        false);
  check(&(spec){.x = CT_DIMS(4, 8), .y = CT_DIMS(8, 1), .b = CT_DIMS(3), .act = "relu",
                .dt = CT_FLOAT32}, false);
  check(&(spec){.x = CT_DIMS(8), .y = CT_DIMS(1, 8), .b = CT_DIMS(2), .ty = true,
                .dt = CT_FLOAT64}, false);
  check(&(spec){.x = CT_DIMS(4, 8), .y = CT_DIMS(8), .b = CT_DIMS(1), .dt = CT_FLOAT32}, false);
  spec sp = {.x = CT_DIMS(4, 8), .y = CT_DIMS(8, 6), .b = CT_DIMS(6), .act = "relu",
             .dt = CT_FLOAT32};
  ct_program *p = chain(&sp);
  ck_assert_int_eq(ct_program_append(p, op_x("exp", "p", "e")), CT_OK);
  ct_executor_options o = {.optimize = true};
  int64_t n;
  bool mem;
  free(run_chain(p, &sp, &o, &n, &mem));
  ck_assert(mem);
  ct_program_free(p);
  static const char *const keep[] = {"q"};
  o = (ct_executor_options){.optimize = true, .keep = keep, .n_keep = 1};
  p = chain(&sp);
  ct_scope *s = scope_of(&sp);
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
  ck_assert_int_eq(ct_executor_run(e), CT_OK);
  ck_assert(has_memory(s, "q")); /* kept: relu is left out; the product and the sum fuse */
  ck_assert(!has_memory(s, "p"));
  ct_executor_free(e);
  ct_scope_free(s);
  ct_program_free(p);
}
END_TEST

/* Y is [3, 1] when the executor is made, but an op before the matmul sums its columns away: the
 * product of x [3] and y [3] is a scalar, which the bias [1] enlarges to [1]. The pass reads dims
 * only from variables no op writes, so it leaves the chain alone (found by the program fuzzer:
 * it fused, and the run was refused). */
START_TEST(a_y_an_op_resizes_is_not_fused) {
  for (int optimize = 0; optimize < 2; optimize++) {
    ct_program *p = ct_program_new();
    ct_op *rs = op_x("reduce_sum", "y", "y");
    static const int64_t dim1[1] = {1};
    ck_assert_int_eq(ct_op_set_attr_ints(rs, "dim", dim1, 1), CT_OK);
    ck_assert_int_eq(ct_program_append(p, rs), CT_OK);
    ck_assert_int_eq(ct_program_append(p, op_xy("matmul", "x", "y", "p")), CT_OK);
    ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_add", "p", "b", "q")), CT_OK);
    ck_assert_int_eq(ct_program_append(p, op_x("relu", "q", "out")), CT_OK);
    ct_scope *s = ct_scope_new();
    put(s, "x", CT_FLOAT32, CT_DIMS(3), (const float[]){1, 2, -3});
    put(s, "y", CT_FLOAT32, CT_DIMS(3, 1), (const float[]){4, 5, 6});
    put(s, "b", CT_FLOAT32, CT_DIMS(1), (const float[]){0.5f});
    ct_executor_options o = {.optimize = optimize};
    ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
    ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
    /* 4 + 10 - 18 = -4; + 0.5 = -3.5; relu: 0. The product is the matmul's own (no
     * matmul_fusion); the add and relu after it may fuse as an expression. */
    ck_assert(*(const float *)result(s, "out", CT_FLOAT32, CT_DIMS(1)) == 0);
    ck_assert_float_eq(*(const float *)result(s, "p", CT_FLOAT32, CT_DIMS()), -4.0f);
    ct_executor_free(e);
    ct_scope_free(s);
    ct_program_free(p);
  }
}
END_TEST

/* A bias of 5 elements for 6 columns fails either way: unoptimized, and optimized when the
 * bias fitted as the executor was made and was replaced before the run. matmul_fusion cannot
 * run it, so the executor runs the ops it stands for, which fail as the plain executor's do
 * (the same status and message, naming the add), and out is not written. */
START_TEST(a_bias_of_the_wrong_size_fails_as_unoptimized) {
  spec sp = {.x = CT_DIMS(4, 8), .y = CT_DIMS(8, 6), .b = CT_DIMS(5), .dt = CT_FLOAT32};
  ct_program *p = chain(&sp);
  ct_scope *s = scope_of(&sp);
  ct_executor *e = ct_executor_new(p, s, ct_cpu());
  ck_assert_int_eq(ct_executor_run(e), CT_ERR_SHAPE);
  char plain[512];
  snprintf(plain, sizeof plain, "%s", ct_last_error());
  ct_executor_free(e);
  ct_scope_free(s);
  sp.b = CT_DIMS(6);
  s = scope_of(&sp);
  ct_executor_options o = {.optimize = true};
  e = ct_executor_new_with(p, s, ct_cpu(), &o);
  put_pattern(s, "b", CT_DIMS(5), 3, CT_FLOAT32);
  ck_assert_int_eq(ct_executor_run(e), CT_ERR_SHAPE);
  ck_assert_str_eq(ct_last_error(), plain);
  HAS(plain, "elementwise_add");
  ck_assert(!has_memory(s, "out"));
  ct_executor_free(e);
  ct_scope_free(s);
  ct_program_free(p);
}
END_TEST

/* matmul_fusion made by hand: an activation it does not know is refused, naming it. */
START_TEST(an_unknown_activation_is_refused) {
  ct_scope *s = ct_scope_new();
  put(s, "x", CT_FLOAT32, CT_DIMS(1, 2), (const float[]){1, 2});
  put(s, "y", CT_FLOAT32, CT_DIMS(2, 1), (const float[]){3, 4});
  ct_op *op = op_xy("matmul_fusion", "x", "y", "out");
  ck_assert_int_eq(ct_op_set_attr_string(op, "activation", "gelu"), CT_OK);
  run_fails(op, s, CT_ERR_INVALID_ARGUMENT, "activation 'gelu'", "identity, relu, clip", NULL);
  ck_assert_int_eq(ct_op_set_attr_string(op, "activation", "relu"), CT_OK);
  run(op, s);
  ck_assert(*(const float *)result(s, "out", CT_FLOAT32, CT_DIMS(1, 1)) == 11);
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("passes_matmul");
  CT_ADD_TEST(s, a_fused_chain_gives_the_exact_values);
  CT_ADD_TEST(s, a_y_an_op_resizes_is_not_fused);
  CT_ADD_TEST(s, the_epilogue_in_the_gemm_tiles_gives_the_same_bits);
  CT_ADD_TEST(s, the_epilogue_after_the_products_gives_the_same_bits);
  CT_ADD_TEST(s, chains_the_pass_cannot_prove_are_left_alone);
  CT_ADD_TEST(s, a_bias_of_the_wrong_size_fails_as_unoptimized);
  CT_ADD_TEST(s, an_unknown_activation_is_refused);
  return s;
}

CT_TEST_MAIN(make_suite)
