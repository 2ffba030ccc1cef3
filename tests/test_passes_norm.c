/* SPDX-License-Identifier: Apache-2.0 */
/* The executor's optimize option on layer norms written out (ops/passes_norm.c,
 * docs/design/passes.md): reduce_mean, sub, pow, reduce_mean, add, sqrt, div, [mul], [add] runs
 * as one decomposed_layer_norm whose result equals the unoptimized executor's bit for bit
 * (operands on either side, float64, NaN, infinities and constant rows, several threads) and
 * whose intermediates never get memory; chains are left alone where a value is read elsewhere,
 * and a run whose dims the op does not take falls back on the chain's ops. A GELU written out
 * (div, erf, add, mul, mul) runs as one expression, the last pass. */
#include <math.h>
#include <string.h>

#include "passes_util.h"

typedef struct spec {
  ct_ddim x, scale, bias;
  bool mul, add;                         /* the Scale multiply, the Bias add */
  bool eps_first, scale_first, bias_first;
  ct_dtype dt;
  bool special;                          /* NaN, an infinity and a constant row in X */
  bool x_from_z; /* x = exp(z) first, rewritten as relu(z) after the first mean */
} spec;

static ct_op *reduce_mean(const char *x, const char *out) {
  ct_op *op = op_x("reduce_mean", x, out);
  ck_assert_int_eq(ct_op_set_attr_ints(op, "dim", (const int64_t[]){-1}, 1), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "keep_dim", true), CT_OK);
  return op;
}

/* m = mean(x), d = x - m, p = d ^ e, v = mean(p), ve = v + eps, sd = sqrt(ve), n = d / sd,
 * [g = n * gamma], [y = g + beta]; the last value is y. */
static ct_program *chain(const spec *sp) {
  ct_program *p = ct_program_new();
  if (sp->x_from_z) ck_assert_int_eq(ct_program_append(p, op_x("exp", "z", "x")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, reduce_mean("x", "m")), CT_OK);
  if (sp->x_from_z) ck_assert_int_eq(ct_program_append(p, op_x("relu", "z", "x")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_sub", "x", "m", "d")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_pow", "d", "e", "p")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, reduce_mean("p", "v")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, sp->eps_first ? op_xy("elementwise_add", "eps", "v", "ve")
                                                      : op_xy("elementwise_add", "v", "eps", "ve")),
                   CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("sqrt", "ve", "sd")), CT_OK);
  const char *n = sp->mul || sp->add ? "n" : "y";
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_div", "d", "sd", n)), CT_OK);
  if (sp->mul) {
    const char *g = sp->add ? "g" : "y";
    ct_op *mul = sp->scale_first ? op_xy("elementwise_mul", "gamma", n, g)
                                 : op_xy("elementwise_mul", n, "gamma", g);
    ck_assert_int_eq(ct_program_append(p, mul), CT_OK);
    n = g;
  }
  if (sp->add) {
    ct_op *add = sp->bias_first ? op_xy("elementwise_add", "beta", n, "y")
                                : op_xy("elementwise_add", n, "beta", "y");
    ck_assert_int_eq(ct_program_append(p, add), CT_OK);
  }
  return p;
}

static ct_scope *scope_of(const spec *sp) {
  ct_scope *s = ct_scope_new();
  put_pattern(s, sp->x_from_z ? "z" : "x", sp->x, 1, sp->dt);
  put_pattern(s, "e", CT_DIMS(), 2, sp->dt);
  put_elem(s, "e", sp->dt, 0, 2.0);
  put_pattern(s, "eps", CT_DIMS(1), 3, sp->dt);
  put_elem(s, "eps", sp->dt, 0, 1e-5);
  if (sp->mul) put_pattern(s, "gamma", sp->scale, 4, sp->dt);
  if (sp->add) put_pattern(s, "beta", sp->bias, 5, sp->dt);
  if (sp->special) {
    int64_t n = sp->x.d[sp->x.rank - 1];
    put_elem(s, "x", sp->dt, 1, NAN);
    put_elem(s, "x", sp->dt, n + 2, INFINITY);
    for (int64_t i = 0; i < n; i++) put_elem(s, "x", sp->dt, 2 * n + i, 0.25); /* var 0 */
  }
  return s;
}

static ct_scope *make_scope(const void *sp) { return scope_of(sp); }

/* Optimized equals unoptimized bit for bit at 1 and 3 threads; fused (no memory for the centred
 * values and the square roots) when `fused`. */
static void check(const spec *sp, bool fused) {
  same_bits_fused(chain(sp), make_scope, sp, "y", sp->dt, "d", "sd", fused);
}

/* The TransformerEncoder's (opset 14 export): rows of 64, Scale and Bias of 64. */
START_TEST(a_layer_norm_fuses_to_the_same_bits) {
  check(&(spec){.x = CT_DIMS(2, 10, 64), .scale = CT_DIMS(64), .bias = CT_DIMS(64), .mul = true,
                .add = true, .dt = CT_FLOAT32},
        true);
}
END_TEST

/* Operands on the other side of the add, multiply and add; a Scale of one element; a Bias of
 * [1, 1, 37]; no Scale nor Bias; float64 rows of 37. */
START_TEST(every_form_fuses_to_the_same_bits) {
  check(&(spec){.x = CT_DIMS(3, 5, 37), .scale = CT_DIMS(1), .bias = CT_DIMS(1, 1, 37),
                .mul = true, .add = true, .eps_first = true, .scale_first = true,
                .bias_first = true, .dt = CT_FLOAT32},
        true);
  check(&(spec){.x = CT_DIMS(6, 37), .dt = CT_FLOAT32}, true);
  check(&(spec){.x = CT_DIMS(6, 37), .scale = CT_DIMS(37), .mul = true, .dt = CT_FLOAT64}, true);
}
END_TEST

/* NaN, +inf and a constant row (variance 0: divided by sqrt(eps)), in both dtypes; in float32
 * also 20 rows of 37 and 16 of 9 (at one thread, 16 rows at a time in AVX-512 tiles where the CPU
 * has it: two tiles and 5 elements a row, or the 9 alone). */
START_TEST(special_values_fuse_to_the_same_bits) {
  check(&(spec){.x = CT_DIMS(20, 37), .scale = CT_DIMS(37), .bias = CT_DIMS(37), .mul = true,
                .add = true, .dt = CT_FLOAT32, .special = true},
        true);
  check(&(spec){.x = CT_DIMS(2, 8, 9), .dt = CT_FLOAT32, .special = true}, true);
  check(&(spec){.x = CT_DIMS(4, 33), .scale = CT_DIMS(33), .bias = CT_DIMS(33), .mul = true,
                .add = true, .dt = CT_FLOAT32, .special = true},
        true);
  check(&(spec){.x = CT_DIMS(4, 33), .scale = CT_DIMS(33), .bias = CT_DIMS(33), .mul = true,
                .add = true, .dt = CT_FLOAT64, .special = true},
        true);
}
END_TEST

/* A Scale of X's full dims (not one per element of the last dim): the multiply and the add stay
 * out of the norm (they fuse as an expression of its output n), the rest fuses; the same
 * bits. */
START_TEST(a_full_scale_stays_its_own_op) {
  spec sp = {.x = CT_DIMS(3, 8), .scale = CT_DIMS(3, 8), .bias = CT_DIMS(8), .mul = true,
             .add = true, .dt = CT_FLOAT32};
  check(&sp, true);
  ct_program *p = chain(&sp);
  ct_scope *s = scope_of(&sp);
  ct_executor_options o = {.optimize = true};
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
  ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  ck_assert(has_memory(s, "n") && !has_memory(s, "g"));
  ct_executor_free(e);
  ct_scope_free(s);
  ct_program_free(p);
}
END_TEST

/* The centred values read by a third op (a caller's value): nothing fuses, the same bits. */
START_TEST(centred_values_read_elsewhere_are_not_fused) {
  spec sp = {.x = CT_DIMS(3, 8), .dt = CT_FLOAT32};
  ct_program *p = chain(&sp);
  ck_assert_int_eq(ct_program_append(p, op_x("relu", "d", "r")), CT_OK);
  same_bits_fused(p, make_scope, &sp, "y", sp.dt, "sd", NULL, false);
}
END_TEST

/* X an intermediate (exp(z)) rewritten (relu(z)) between the first mean and the subtraction,
 * which both read it: they read different values, which one fused op at the chain's end cannot;
 * left alone, the same bits. */
START_TEST(an_input_rewritten_between_its_readers_is_not_fused) {
  spec sp = {.x = CT_DIMS(3, 8), .dt = CT_FLOAT32, .x_from_z = true};
  same_bits_fused(chain(&sp), make_scope, &sp, "y", sp.dt, "d", NULL, false);
}
END_TEST

/* An Exponent replaced after the executor was made by one of rank 4 (X is of rank 3): the
 * power broadcasts to [1, 2, 3, 8], which the fused op does not do; the run falls back on the
 * chain's ops: CT_OK, the unoptimized dims and bits, the status as before the run. */
START_TEST(an_exponent_that_enlarges_the_values_falls_back) {
  spec sp = {.x = CT_DIMS(2, 3, 8), .scale = CT_DIMS(8), .mul = true, .dt = CT_FLOAT32};
  ct_program *p = chain(&sp);
  float outs[2][48];
  for (int opt = 0; opt < 2; opt++) {
    ct_scope *s = scope_of(&sp);
    ct_executor_options o = {.optimize = opt == 1};
    ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
    ck_assert_int_eq(ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, "e")),
                                         (const float[]){2.0f}, CT_DIMS(1, 1, 1, 1), CT_FLOAT32,
                                         ct_cpu()),
                     CT_OK);
    ct_clear_error();
    ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
    ck_assert_int_eq(ct_last_status(), CT_OK);
    const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, "y"));
    ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(1, 2, 3, 8)));
    memcpy(outs[opt], ct_tensor_data(t, CT_FLOAT32), sizeof outs[opt]);
    ck_assert(has_memory(s, "d") == (opt == 0));
    ct_executor_free(e);
    ct_scope_free(s);
  }
  ck_assert_int_eq(memcmp(outs[0], outs[1], sizeof outs[0]), 0);
  ct_program_free(p);
}
END_TEST

/* The op run by hand with a Bias of 5 for rows of 8: CT_ERR_SHAPE naming Bias and the fix. */
START_TEST(the_op_refuses_what_it_does_not_run) {
  ct_scope *s = ct_scope_new();
  put_pattern(s, "x", CT_DIMS(3, 8), 1, CT_FLOAT32);
  put_pattern(s, "e", CT_DIMS(1), 2, CT_FLOAT32);
  put_pattern(s, "eps", CT_DIMS(1), 3, CT_FLOAT32);
  put_pattern(s, "beta", CT_DIMS(5), 4, CT_FLOAT32);
  ct_op *op = ct_op_new("decomposed_layer_norm");
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Exponent", "e"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Epsilon", "eps"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Bias", "beta"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "y"), CT_OK);
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_SHAPE);
  HAS(ct_last_error(), "Scale or Bias holds neither one element nor one per element");
  HAS(ct_last_error(), "optimize");
  ck_assert(!has_memory(s, "y"));
  put_pattern(s, "beta", CT_DIMS(8), 4, CT_FLOAT32);
  ck_assert_msg(ct_op_run(op, s, ct_cpu()) == CT_OK, "%s", ct_last_error());
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

/* ---- GELU written out: x * 0.5 * (1 + erf(x / sqrt 2)) as PyTorch exports it ------------- */

static ct_scope *gelu_scope(const void *arg) {
  ct_dtype dt = *(const ct_dtype *)arg;
  ct_scope *s = ct_scope_new();
  put_pattern(s, "x", CT_DIMS(5, 300), 11, dt);
  for (int64_t i = 0; i < 300; i++) put_elem(s, "x", dt, i, (double)(i - 150) / 30.0); /* -5..5 */
  put_elem(s, "x", dt, 300, NAN);
  put_elem(s, "x", dt, 301, -INFINITY);
  put_pattern(s, "r2", CT_DIMS(1), 0, dt);
  put_elem(s, "r2", dt, 0, 1.4142135381698608);
  put_pattern(s, "one", CT_DIMS(1), 0, dt);
  put_elem(s, "one", dt, 0, 1.0);
  put_pattern(s, "half", CT_DIMS(1), 0, dt);
  put_elem(s, "half", dt, 0, 0.5);
  return s;
}

/* No pass of its own: fuse_elementwise, optimize's last pass, runs the five ops as one
 * expression (erf the op's own function), the same bits, u and e never allocated. */
START_TEST(a_gelu_runs_as_one_expression) {
  for (int t = 0; t < 2; t++) {
    ct_dtype dt = t == 0 ? CT_FLOAT32 : CT_FLOAT64;
    ct_program *p = ct_program_new();
    ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_div", "x", "r2", "u")), CT_OK);
    ck_assert_int_eq(ct_program_append(p, op_x("erf", "u", "e")), CT_OK);
    ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_add", "e", "one", "a")), CT_OK);
    ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_mul", "x", "a", "m")), CT_OK);
    ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_mul", "m", "half", "y")), CT_OK);
    same_bits_fused(p, gelu_scope, &dt, "y", dt, "u", "e", true);
  }
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("passes_norm");
  CT_ADD_TEST(s, a_layer_norm_fuses_to_the_same_bits);
  CT_ADD_TEST(s, every_form_fuses_to_the_same_bits);
  CT_ADD_TEST(s, a_gelu_runs_as_one_expression);
  CT_ADD_TEST(s, special_values_fuse_to_the_same_bits);
  CT_ADD_TEST(s, a_full_scale_stays_its_own_op);
  CT_ADD_TEST(s, centred_values_read_elsewhere_are_not_fused);
  CT_ADD_TEST(s, an_input_rewritten_between_its_readers_is_not_fused);
  CT_ADD_TEST(s, an_exponent_that_enlarges_the_values_falls_back);
  CT_ADD_TEST(s, the_op_refuses_what_it_does_not_run);
  return s;
}

CT_TEST_MAIN(make_suite)
