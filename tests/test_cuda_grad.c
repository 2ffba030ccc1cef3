/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the CUDA kernels of the gradient ops: elementwise_{add,sub,mul,div}_grad with
 * broadcasting, relu/sigmoid/tanh/exp/log_grad, cast_grad and fill_any_like.
 *
 * On a GPU: each CUDA kernel against its CPU kernel on the same inputs (ct_op_run at ct_cuda(0)
 * and at ct_cpu() over copies of one host tensor), byte for byte: the kernels promise the CPU's
 * results bit for bit, broadcast sums included. Then a whole program, forward and the backward
 * pass of ct_program_append_backward, run by an executor at ct_cuda(0) and on the CPU: the
 * gradients agree within float32 rounding (the forward tanh, sigmoid, exp and log differ by an
 * ulp or so between the places, and the differences travel).
 *
 * Without a GPU: the registry holds these CUDA kernels exactly in a CUDA build (none in a
 * CPU-only one), and an executor of a differentiated program at a CUDA place is refused; then
 * the suite reports itself skipped (77). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "ops/op_impl.h"

#include "cuda_ops_util.h"
#include "op_util.h"

/* ---- Without a device ------------------------------------------------------------------------ */

static const kernel_key grad_kernels[] = {
    {"elementwise_add_grad", CT_FLOAT32}, {"elementwise_sub_grad", CT_FLOAT32},
    {"elementwise_mul_grad", CT_FLOAT32}, {"elementwise_div_grad", CT_FLOAT32},
    {"relu_grad", CT_FLOAT32},            {"sigmoid_grad", CT_FLOAT32},
    {"tanh_grad", CT_FLOAT32},            {"exp_grad", CT_FLOAT32},
    {"log_grad", CT_FLOAT32},             {"cast_grad", CT_FLOAT32},
    {"cast_grad", CT_FLOAT16},            {"cast_grad", CT_BFLOAT16},
    {"fill_any_like", CT_DTYPE_UNDEFINED},
};

START_TEST(absent_grad_kernels_are_registered_for_cuda_in_a_cuda_build) {
  assert_cuda_kernels(grad_kernels, sizeof grad_kernels / sizeof grad_kernels[0]);
#ifdef CORTEN_TEST_CUDA
  /* float64 gradients stay CPU-only, as do the half types for the float32 kernels. */
  ck_assert_ptr_null(kernel_at("elementwise_mul_grad", CT_DEVICE_CUDA, CT_FLOAT64));
  ck_assert_ptr_null(kernel_at("relu_grad", CT_DEVICE_CUDA, CT_FLOAT16));
  ck_assert_ptr_null(kernel_at("log_grad", CT_DEVICE_CUDA, CT_DTYPE_UNDEFINED));
  ck_assert_ptr_null(kernel_at("cast_grad", CT_DEVICE_CUDA, CT_INT32));
#endif
}
END_TEST

/* loss = relu(x * w): the pass appends the same ops whatever the place; the executor at a CUDA
 * place without a device (or without CUDA) refuses to start. */
START_TEST(absent_a_differentiated_program_at_a_cuda_place_is_refused) {
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_mul", "x", "w", "h")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("relu", "h", "loss")), CT_OK);
  static const char *const params[] = {"w"};
  ck_assert_int_eq(ct_program_append_backward(p, "loss", params, 1), CT_OK);
  ct_scope *s = ct_scope_new();
  ct_clear_error();
  ck_assert_ptr_null(ct_executor_new(p, s, ct_cuda(0)));
  ck_assert_int_eq(ct_last_status(), ct_cuda_is_built() ? CT_ERR_DEVICE : CT_ERR_UNSUPPORTED);
  ct_scope_free(s);
  ct_program_free(p);
}
END_TEST

static Suite *absent_suite(void) {
  Suite *s = suite_create("cuda_grad_absent");
  CT_ADD_TEST(s, absent_grad_kernels_are_registered_for_cuda_in_a_cuda_build);
  CT_ADD_TEST(s, absent_a_differentiated_program_at_a_cuda_place_is_refused);
  return s;
}

/* ---- On a GPU ------------------------------------------------------------------------------ */

#ifdef CORTEN_TEST_CUDA

/* Runs op over the named host inputs at place (each copied there) and returns its named outputs
 * copied back to the host, in outs. */
static void run_outputs(const ct_op *op, const char *const *in_names, ct_tensor *const *in,
                        size_t n_in, const char *const *out_names, ct_tensor **outs,
                        size_t n_out, ct_place place) {
  ct_scope *s = ct_scope_new();
  for (size_t i = 0; i < n_in; i++) {
    ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, in_names[i])), in[i], place),
                     CT_OK);
  }
  ck_assert_msg(ct_op_run(op, s, place) == CT_OK, "%s", ct_last_error());
  for (size_t i = 0; i < n_out; i++) {
    const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, out_names[i]));
    ck_assert_ptr_nonnull(t);
    ck_assert(ct_place_equal(ct_tensor_place(t), place));
    outs[i] = ct_tensor_new();
    ck_assert_int_eq(ct_tensor_copy(outs[i], t, ct_cpu()), CT_OK);
  }
  ct_scope_free(s);
}

/* Runs op on the CPU and at cuda:0 and asserts the same bytes in every named output. */
static void assert_places_agree(const ct_op *op, const char *const *in_names,
                                ct_tensor *const *in, size_t n_in, const char *const *out_names,
                                size_t n_out, const char *what) {
  ct_tensor *cpu[2], *gpu[2];
  ck_assert_uint_le(n_out, 2);
  run_outputs(op, in_names, in, n_in, out_names, cpu, n_out, ct_cpu());
  run_outputs(op, in_names, in, n_in, out_names, gpu, n_out, ct_cuda(0));
  for (size_t i = 0; i < n_out; i++) {
    char at[128];
    snprintf(at, sizeof at, "%s, %s", what, out_names[i]);
    assert_same_bytes(gpu[i], cpu[i], at);
    ct_tensor_free(cpu[i]);
    ct_tensor_free(gpu[i]);
  }
}

/* numpy broadcasting of x and y (the shapes below broadcast). */
static ct_ddim bcast_dims(ct_ddim x, ct_ddim y) {
  ct_ddim o = {x.rank > y.rank ? x.rank : y.rank, {0}};
  for (int k = 0; k < o.rank; k++) {
    int ix = x.rank - o.rank + k, iy = y.rank - o.rank + k;
    int64_t a = ix >= 0 ? x.d[ix] : 1, b = iy >= 0 ? y.d[iy] : 1;
    o.d[k] = a == 1 ? b : a;
  }
  return o;
}

static const char *const binary_types[] = {"elementwise_add_grad", "elementwise_sub_grad",
                                           "elementwise_mul_grad", "elementwise_div_grad"};

/* Shape pairs covering the broadcast walks: same shape, a row, a column against a row, a middle
 * dim, rank 0 on either side, extent 1 everywhere, empty (with a non-empty side whose gradient
 * is zeros), and a scalar and a row summed over thousands of elements. */
static const struct {
  ct_ddim x, y;
} bshapes[] = {
    {{2, {3, 4}}, {2, {3, 4}}},         {{2, {3, 4}}, {1, {4}}},
    {{2, {3, 1}}, {2, {1, 4}}},         {{3, {2, 3, 4}}, {2, {3, 1}}},
    {{0, {0}}, {1, {5}}},               {{1, {5}}, {0, {0}}},
    {{0, {0}}, {0, {0}}},               {{3, {2, 1, 4}}, {3, {1, 3, 1}}},
    {{2, {1, 1}}, {1, {1}}},            {{2, {0, 3}}, {1, {3}}},
    {{2, {0, 3}}, {2, {0, 3}}},         {{4, {2, 3, 5, 7}}, {4, {2, 1, 5, 1}}},
    {{1, {3000}}, {0, {0}}},            {{2, {257, 33}}, {2, {1, 33}}},
};

/* Wirings of the outputs: both gradients, X@GRAD only, Y@GRAD only. */
static const char *const dxy[] = {"X@GRAD", "Y@GRAD"};

static ct_op *binary_grad_op(const char *type, int wiring) {
  ct_op *op = ct_op_new(type);
  ck_assert_int_eq(ct_op_set_input(op, "X", "X"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Y", "Y"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Out@GRAD", "Out@GRAD"), CT_OK);
  if (wiring != 2) ck_assert_int_eq(ct_op_set_output(op, "X@GRAD", "X@GRAD"), CT_OK);
  if (wiring != 1) ck_assert_int_eq(ct_op_set_output(op, "Y@GRAD", "Y@GRAD"), CT_OK);
  return op;
}

START_TEST(binary_grads_match_the_cpu_exactly) {
  static const char *const names[] = {"X", "Y", "Out@GRAD"};
  for (size_t t = 0; t < 4; t++) {
    for (size_t k = 0; k < sizeof bshapes / sizeof bshapes[0]; k++) {
      ct_ddim od = bcast_dims(bshapes[k].x, bshapes[k].y);
      /* Out@GRAD of mixed signs, then all zeros (the signs of zero sums must agree too). */
      for (int zero = 0; zero < 2; zero++) {
        ct_tensor *in[3] = {host_values(bshapes[k].x, CT_FLOAT32, -4, 4, 1 + (unsigned)k),
                            host_values(bshapes[k].y, CT_FLOAT32, 0.5, 3, 100 + (unsigned)k),
                            host_values(od, CT_FLOAT32, zero ? 0 : -2, zero ? 0 : 2,
                                        200 + (unsigned)k)};
        for (int wiring = 0; wiring < 3; wiring++) {
          ct_op *op = binary_grad_op(binary_types[t], wiring);
          char what[96];
          snprintf(what, sizeof what, "%s shapes #%zu%s wiring %d", binary_types[t], k,
                   zero ? " zero Out@GRAD" : "", wiring);
          assert_places_agree(op, names, in, 3, wiring == 2 ? dxy + 1 : dxy, wiring ? 1 : 2,
                              what);
          ct_op_free(op);
        }
        for (size_t i = 0; i < 3; i++) ct_tensor_free(in[i]);
      }
    }
  }
}
END_TEST

/* Puts the host inputs at cuda:0 under names, and asserts that op fails there with want, a
 * message holding part and the op's type, and its output out left untouched. */
static void assert_cuda_refuses(const ct_op *op, const char *const *names, ct_tensor *const *in,
                                size_t n_in, const char *out, ct_status want, const char *part) {
  ct_scope *s = ct_scope_new();
  for (size_t i = 0; i < n_in; i++) {
    ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, names[i])), in[i], ct_cuda(0)),
                     CT_OK);
  }
  CT_ASSERT_FAILS(ct_op_run(op, s, ct_cuda(0)), want);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), part));
  ck_assert_ptr_nonnull(strstr(ct_last_error(), ct_op_type(op)));
  ck_assert(!ct_tensor_has_memory(ct_var_tensor(ct_scope_var(s, out))));
  ct_scope_free(s);
}

START_TEST(binary_grad_errors_are_the_cpus) {
  /* Out@GRAD of the wrong dims: the shared infer-shape refuses it at both places. */
  static const char *const names[] = {"X", "Y", "Out@GRAD"};
  ct_op *op = binary_grad_op("elementwise_mul_grad", 0);
  ct_tensor *in[3] = {host_values(CT_DIMS(3, 4), CT_FLOAT32, -1, 1, 1),
                      host_values(CT_DIMS(4), CT_FLOAT32, -1, 1, 2),
                      host_values(CT_DIMS(3, 5), CT_FLOAT32, -1, 1, 3)};
  assert_cuda_refuses(op, names, in, 3, "X@GRAD", CT_ERR_SHAPE, "Out@GRAD");
  for (size_t i = 0; i < 3; i++) ct_tensor_free(in[i]);
  ct_op_free(op);
}
END_TEST

START_TEST(activation_grads_match_the_cpu_exactly) {
  static const char *const types[] = {"relu_grad", "sigmoid_grad", "tanh_grad", "exp_grad",
                                      "log_grad"};
  static const char *const dx[] = {"X@GRAD"};
  const ct_ddim shapes[] = {CT_DIMS(1000), CT_DIMS(), CT_DIMS(0, 4), CT_DIMS(3, 5)};
  for (size_t t = 0; t < 5; t++) {
    bool from_x = strcmp(types[t], "log_grad") == 0;
    const char *names[] = {from_x ? "X" : "Out", "Out@GRAD"};
    ct_op *op = ct_op_new(types[t]);
    ck_assert_int_eq(ct_op_set_input(op, names[0], names[0]), CT_OK);
    ck_assert_int_eq(ct_op_set_input(op, "Out@GRAD", "Out@GRAD"), CT_OK);
    ck_assert_int_eq(ct_op_set_output(op, "X@GRAD", "X@GRAD"), CT_OK);
    for (size_t k = 0; k < 4; k++) {
      ct_tensor *in[2] = {host_values(shapes[k], CT_FLOAT32, from_x ? 1e-3 : -2, 2, (unsigned)k),
                          host_values(shapes[k], CT_FLOAT32, -3, 3, 50 + (unsigned)k)};
      if (k == 0) ((float *)ct_tensor_mutable_data(in[0], CT_FLOAT32, ct_cpu()))[7] = 0.0f;
      char what[64];
      snprintf(what, sizeof what, "%s shape #%zu", types[t], k);
      assert_places_agree(op, names, in, 2, dx, 1, what);
      ct_tensor_free(in[0]);
      ct_tensor_free(in[1]);
    }
    ct_op_free(op);
  }
}
END_TEST

static ct_op *cast_grad_op(void) {
  ct_op *op = ct_op_new("cast_grad");
  ck_assert_int_eq(ct_op_set_input(op, "X", "X"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Out@GRAD", "Out@GRAD"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "X@GRAD", "X@GRAD"), CT_OK);
  return op;
}

START_TEST(cast_grad_between_float_types_matches_the_cpu_exactly) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT16, CT_BFLOAT16};
  static const char *const names[] = {"X", "Out@GRAD"}, *const dx[] = {"X@GRAD"};
  const ct_ddim shapes[] = {CT_DIMS(4, 251), CT_DIMS(), CT_DIMS(0, 3)};
  ct_op *op = cast_grad_op();
  for (size_t a = 0; a < 3; a++) {
    for (size_t b = 0; b < 3; b++) {
      for (size_t k = 0; k < 3; k++) {
        /* Values past float16's range round as the CPU rounds them. */
        ct_tensor *in[2] = {host_values(shapes[k], types[a], -1, 1, 1),
                            host_values(shapes[k], types[b], -70000, 70000, 3 + (unsigned)k)};
        char what[64];
        snprintf(what, sizeof what, "cast_grad %s back to %s, shape #%zu",
                 ct_dtype_name(types[b]), ct_dtype_name(types[a]), k);
        assert_places_agree(op, names, in, 2, dx, 1, what);
        ct_tensor_free(in[0]);
        ct_tensor_free(in[1]);
      }
    }
  }
  ct_op_free(op);
}
END_TEST

START_TEST(cast_grad_from_an_integer_on_cuda_is_unsupported_and_changes_nothing) {
  static const char *const names[] = {"X", "Out@GRAD"};
  ct_op *op = cast_grad_op();
  ct_tensor *in[2] = {host_values(CT_DIMS(4), CT_FLOAT32, 0, 1, 1),
                      host_values(CT_DIMS(4), CT_INT32, 0, 9, 2)};
  assert_cuda_refuses(op, names, in, 2, "X@GRAD", CT_ERR_UNSUPPORTED, "int32 to float32");
  ct_tensor_free(in[0]);
  ct_tensor_free(in[1]);
  ct_op_free(op);
}
END_TEST

START_TEST(fill_any_like_matches_the_cpu_in_every_dtype) {
  static const ct_dtype types[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16, CT_INT8,
                                   CT_UINT8,   CT_INT16,   CT_INT32,   CT_INT64,    CT_BOOL};
  static const char *const names[] = {"X"}, *const out[] = {"Out"};
  const ct_ddim shapes[] = {CT_DIMS(5, 3), CT_DIMS(), CT_DIMS(0, 2)};
  for (size_t a = 0; a < sizeof types / sizeof types[0]; a++) {
    ct_op *op = unary_op("fill_any_like");
    double v = types[a] == CT_BOOL ? 1 : types[a] >= CT_FLOAT16 ? 0.1 : 3.0;
    ck_assert_int_eq(ct_op_set_attr_float(op, "value", v), CT_OK);
    for (size_t k = 0; k < 3; k++) {
      /* Only X's dims and dtype matter: its bytes are zeros. */
      ct_tensor *x = ct_tensor_new();
      ck_assert_int_eq(ct_tensor_resize(x, shapes[k]), CT_OK);
      void *p = ct_tensor_mutable_data(x, types[a], ct_cpu());
      ck_assert_ptr_nonnull(p);
      memset(p, 0, (size_t)ct_tensor_numel(x) * ct_dtype_size(types[a]));
      char what[64];
      snprintf(what, sizeof what, "fill_any_like %s shape #%zu", ct_dtype_name(types[a]), k);
      assert_places_agree(op, names, &x, 1, out, 1, what);
      ct_tensor_free(x);
    }
    ct_op_free(op);
  }
  /* A value the dtype cannot hold is refused on the device as on the CPU. */
  ct_op *op = unary_op("fill_any_like");
  ck_assert_int_eq(ct_op_set_attr_float(op, "value", 300), CT_OK);
  ct_tensor *x8 = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(x8, CT_DIMS(2)), CT_OK);
  memset(ct_tensor_mutable_data(x8, CT_INT8, ct_cpu()), 0, 2);
  assert_cuda_refuses(op, names, &x8, 1, "Out", CT_ERR_OUT_OF_RANGE, "'value' 300");
  ct_tensor_free(x8);
  ct_op_free(op);
}
END_TEST

/* ---- A whole program: forward, backward, at both places ------------------------------------- */

/* x [4,1,5], w [3,5], bias [5], q [4,3,1], two [1] (a constant):
 *   h = tanh(x * w); b = sigmoid(h + bias); d = b / q - w; e = exp(scale(d, 0.5));
 *   l = log(assign(e) + two); loss = reduce_sum(cast(cast(relu(l), float16), float32))
 * w is read twice (its gradient is a `sum`), every input is broadcast, and the loss is reduced
 * to one element, as a backward pass requires: its gradient reaches the cast as ones. */
static void build_program(ct_program *p) {
  ct_op *sc = op_x("scale", "d", "ds");
  ck_assert_int_eq(ct_op_set_attr_float(sc, "scale", 0.5), CT_OK);
  ct_op *to16 = op_x("cast", "r", "r16"), *to32 = op_x("cast", "r16", "c32");
  ck_assert_int_eq(ct_op_set_attr_int(to16, "dtype", CT_FLOAT16), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_int(to32, "dtype", CT_FLOAT32), CT_OK);
  ct_op *ops[] = {
      op_xy("elementwise_mul", "x", "w", "xw"),
      op_x("tanh", "xw", "h"),
      op_xy("elementwise_add", "h", "bias", "hb"),
      op_x("sigmoid", "hb", "b"),
      op_xy("elementwise_div", "b", "q", "bq"),
      op_xy("elementwise_sub", "bq", "w", "d"),
      sc,
      op_x("exp", "ds", "e"),
      op_x("assign", "e", "ea"),
      op_xy("elementwise_add", "ea", "two", "f"),
      op_x("log", "f", "l"),
      op_x("relu", "l", "r"),
      to16,
      to32,
      op_x("reduce_sum", "c32", "loss"),
  };
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    ck_assert_int_eq(ct_program_append(p, ops[i]), CT_OK);
  }
}

static const char *const prog_params[] = {"x", "w", "bias", "q"};

/* Runs the differentiated program over fresh copies of the inputs at place; returns the
 * gradients of the parameters, copied to the host. */
static void run_program_at(ct_place place, ct_tensor *grads[4]) {
  static const char *const names[] = {"x", "w", "bias", "q", "two"};
  const ct_ddim dims[] = {CT_DIMS(4, 1, 5), CT_DIMS(3, 5), CT_DIMS(5), CT_DIMS(4, 3, 1),
                          CT_DIMS(1)};
  const double lo[] = {-1, -1, -0.5, 0.5, 2}, hi[] = {1, 1, 0.5, 2, 2};
  ct_program *p = ct_program_new();
  build_program(p);
  ck_assert_msg(ct_program_append_backward(p, "loss", prog_params, 4) == CT_OK, "%s",
                ct_last_error());
  ct_scope *s = ct_scope_new();
  for (size_t i = 0; i < 5; i++) {
    ct_tensor *t = host_values(dims[i], CT_FLOAT32, lo[i], hi[i], 7 + (unsigned)i);
    ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, names[i])), t, place), CT_OK);
    ct_tensor_free(t);
  }
  ct_executor_options opt = {.free_intermediates = true};
  ct_executor *e = ct_executor_new_with(p, s, place, &opt);
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  for (size_t i = 0; i < 4; i++) {
    char gname[32];
    snprintf(gname, sizeof gname, "%s@GRAD", prog_params[i]);
    const ct_tensor *g = ct_var_get_tensor(ct_scope_find_var(s, gname));
    ck_assert_msg(g != NULL, "no %s", gname);
    ck_assert(ct_place_equal(ct_tensor_place(g), place));
    ck_assert(ct_ddim_equal(ct_tensor_dims(g), dims[i]));
    grads[i] = ct_tensor_new();
    ck_assert_int_eq(ct_tensor_copy(grads[i], g, ct_cpu()), CT_OK);
  }
  ct_executor_free(e);
  ct_scope_free(s);
  ct_program_free(p);
}

START_TEST(a_program_with_its_backward_pass_matches_the_cpu) {
  ct_tensor *cpu[4], *gpu[4];
  run_program_at(ct_cpu(), cpu);
  run_program_at(ct_cuda(0), gpu);
  for (size_t i = 0; i < 4; i++) {
    ck_assert_int_eq(ct_tensor_dtype(gpu[i]), CT_FLOAT32);
    /* Forward differences of an ulp or so, through float16 rounding of the loss's path. */
    assert_close(gpu[i], cpu[i], 1e-4, 1e-5, prog_params[i]);
    double norm = 0;
    for (int64_t k = 0; k < ct_tensor_numel(cpu[i]); k++) norm += fabs(elem(cpu[i], k));
    ck_assert_msg(norm > 0, "%s@GRAD is all zeros: the test would prove nothing", prog_params[i]);
    ct_tensor_free(cpu[i]);
    ct_tensor_free(gpu[i]);
  }
}
END_TEST

static Suite *cuda_suite(void) {
  Suite *s = suite_create("cuda_grad");
  CT_ADD_TEST(s, absent_grad_kernels_are_registered_for_cuda_in_a_cuda_build);
  CT_ADD_TEST(s, binary_grads_match_the_cpu_exactly);
  CT_ADD_TEST(s, binary_grad_errors_are_the_cpus);
  CT_ADD_TEST(s, activation_grads_match_the_cpu_exactly);
  CT_ADD_TEST(s, cast_grad_between_float_types_matches_the_cpu_exactly);
  CT_ADD_TEST(s, cast_grad_from_an_integer_on_cuda_is_unsupported_and_changes_nothing);
  CT_ADD_TEST(s, fill_any_like_matches_the_cpu_in_every_dtype);
  CT_ADD_TEST(s, a_program_with_its_backward_pass_matches_the_cpu);
  return s;
}

#endif /* CORTEN_TEST_CUDA */

CT_GPU_TEST_MAIN(absent_suite, cuda_suite)
