/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_cuda_grad2.c: the CUDA kernels of matmul_grad, mean_grad, reduce_sum_grad,
 * softmax_grad, transpose_grad, concat_grad, softmax_with_cross_entropy (and its gradient), sgd,
 * momentum and adam against their CPU kernels, and a training step at cuda:0 against the CPU.
 *
 * On a GPU: each op runs at ct_cpu() and at ct_cuda(0) over copies of the same host inputs, and
 * every output is compared: byte for byte where the CUDA kernel does the CPU's arithmetic in its
 * order, within float32 rounding where it cannot (cuBLAS's sums, expf and log). Then an MLP
 * (matmul, elementwise_add, relu, softmax_with_cross_entropy, mean, the backward pass of
 * ct_program_append_backward, sgd) takes three steps at each place and the parameters agree.
 *
 * Without a GPU: the registry holds these CUDA kernels in a CUDA build (none in a CPU-only
 * one); then the suite reports itself skipped (77). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "ops/defs.h"
#include "ops/op_impl.h"

#include "cuda_ops_util.h"
#include "op_util.h"

/* ---- Without a device ------------------------------------------------------------------------ */

static const kernel_key grad2_kernels[] = {
    {"matmul_grad", CT_FLOAT32},
    {"mean_grad", CT_FLOAT32},
    {"reduce_sum_grad", CT_FLOAT32},
    {"reduce_sum_grad", CT_FLOAT64},
    {"softmax_grad", CT_FLOAT32},
    {"transpose_grad", CT_DTYPE_UNDEFINED},
    {"concat_grad", CT_DTYPE_UNDEFINED},
    {"softmax_with_cross_entropy", CT_FLOAT32},
    {"softmax_with_cross_entropy_grad", CT_FLOAT32},
    {"sgd", CT_FLOAT32},
    {"momentum", CT_FLOAT32},
    {"adam", CT_FLOAT32},
};

START_TEST(absent_kernels_are_registered_for_cuda_in_a_cuda_build) {
  assert_cuda_kernels(grad2_kernels, sizeof grad2_kernels / sizeof grad2_kernels[0]);
#ifdef CORTEN_TEST_CUDA
  /* float64 stays CPU-only where the kernels compute (reduce_sum_grad only moves elements). */
  ck_assert_ptr_null(kernel_at("matmul_grad", CT_DEVICE_CUDA, CT_FLOAT64));
  ck_assert_ptr_null(kernel_at("softmax_with_cross_entropy", CT_DEVICE_CUDA, CT_FLOAT64));
  ck_assert_ptr_null(kernel_at("adam", CT_DEVICE_CUDA, CT_FLOAT64));
  ck_assert_ptr_null(kernel_at("sgd", CT_DEVICE_CUDA, CT_FLOAT16));
#endif
}
END_TEST

static Suite *absent_suite(void) {
  Suite *s = suite_create("cuda_grad2_absent");
  CT_ADD_TEST(s, absent_kernels_are_registered_for_cuda_in_a_cuda_build);
  return s;
}

/* ---- On a GPU ------------------------------------------------------------------------------ */

#ifdef CORTEN_TEST_CUDA

/* The dims of Out of the forward op fwd over the named host inputs, run on the CPU: the dims its
 * Out@GRAD takes. */
static ct_ddim forward_dims(const ct_op *fwd, const char *const *names, ct_tensor *const *in,
                            size_t n_in) {
  static const char *const out[] = {"Out"};
  ct_tensor *o;
  run_named(fwd, names, in, n_in, out, &o, 1, ct_cpu());
  ct_ddim d = ct_tensor_dims(o);
  ct_tensor_free(o);
  return d;
}

/* ---- matmul_grad ----------------------------------------------------------------------------- */

static const struct {
  ct_ddim x, y;
  bool tx, ty;
} mm_cases[] = {
    {{2, {3, 4}}, {2, {4, 5}}, false, false},       /* plain */
    {{3, {2, 3, 4}}, {2, {4, 5}}, false, false},    /* batch folded into the rows */
    {{3, {2, 3, 4}}, {3, {2, 4, 5}}, false, false}, /* a batch each */
    {{4, {2, 1, 3, 4}}, {3, {3, 4, 5}}, false, false}, /* both broadcast: sums with beta 1 */
    {{2, {3, 4}}, {3, {6, 4, 5}}, false, false},    /* X shared by the batch */
    {{1, {4}}, {2, {4, 5}}, false, false},          /* rank-1 X */
    {{2, {3, 4}}, {1, {4}}, false, false},          /* rank-1 Y */
    {{1, {4}}, {1, {4}}, false, false},             /* a dot product: Out rank 0 */
    {{2, {4, 3}}, {2, {4, 5}}, true, false},
    {{2, {3, 4}}, {2, {5, 4}}, false, true},
    {{3, {2, 4, 3}}, {2, {5, 4}}, true, true},
    {{3, {2, 3, 4}}, {3, {1, 5, 4}}, false, true},
    {{2, {0, 4}}, {2, {4, 5}}, false, false},       /* empty M */
    {{2, {3, 0}}, {2, {0, 5}}, false, false},       /* K 0: zero gradients of empty tensors */
    {{3, {0, 3, 4}}, {2, {4, 5}}, false, false},    /* empty batch: Y@GRAD zeros */
    {{2, {64, 129}}, {2, {129, 33}}, false, false},
};

START_TEST(matmul_grad_matches_the_cpu) {
  static const char *const ins[] = {"X", "Y", "Out@GRAD"}, *const outs[] = {"X@GRAD", "Y@GRAD"};
  for (size_t k = 0; k < sizeof mm_cases / sizeof mm_cases[0]; k++) {
    ct_op *fwd = binary_op("matmul");
    ck_assert_int_eq(ct_op_set_attr_bool(fwd, "transpose_x", mm_cases[k].tx), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_bool(fwd, "transpose_y", mm_cases[k].ty), CT_OK);
    ct_tensor *in[3] = {host_values(mm_cases[k].x, CT_FLOAT32, -1, 1, 1 + (unsigned)k),
                        host_values(mm_cases[k].y, CT_FLOAT32, -1, 1, 50 + (unsigned)k), NULL};
    in[2] = host_values(forward_dims(fwd, xy, in, 2), CT_FLOAT32, -1, 1, 90 + (unsigned)k);
    /* Both gradients, X@GRAD only, Y@GRAD only. */
    for (int wiring = 0; wiring < 3; wiring++) {
      ct_op *op = named_op("matmul_grad", ins, 3, wiring == 2 ? outs + 1 : outs, wiring ? 1 : 2);
      ck_assert_int_eq(ct_op_set_attr_bool(op, "transpose_x", mm_cases[k].tx), CT_OK);
      ck_assert_int_eq(ct_op_set_attr_bool(op, "transpose_y", mm_cases[k].ty), CT_OK);
      char what[64];
      snprintf(what, sizeof what, "matmul_grad case #%zu wiring %d", k, wiring);
      places_agree(op, ins, in, 3, wiring == 2 ? outs + 1 : outs, wiring ? 1 : 2, 1e-5, 1e-5,
                   what);
      ct_op_free(op);
    }
    free_all(in, 3);
    ct_op_free(fwd);
  }
}
END_TEST

/* ---- mean_grad, reduce_sum_grad, softmax_grad ------------------------------------------------ */

START_TEST(mean_grad_matches_the_cpu_exactly) {
  static const char *const ins[] = {"X", "Out@GRAD"}, *const outs[] = {"X@GRAD"};
  const ct_ddim shapes[] = {CT_DIMS(1000), CT_DIMS(), CT_DIMS(0, 3), CT_DIMS(3, 7)};
  ct_op *fwd = unary_op("mean"), *op = named_op("mean_grad", ins, 2, outs, 1);
  for (size_t k = 0; k < 4; k++) {
    ct_tensor *in[2] = {host_values(shapes[k], CT_FLOAT32, -1, 1, (unsigned)k), NULL};
    in[1] = host_values(forward_dims(fwd, ins, in, 1), CT_FLOAT32, -3, 3, 10 + (unsigned)k);
    char what[64];
    snprintf(what, sizeof what, "mean_grad shape #%zu", k);
    places_agree(op, ins, in, 2, outs, 1, -1, 0, what);
    free_all(in, 2);
  }
  ct_op_free(op);
  ct_op_free(fwd);
}
END_TEST

START_TEST(reduce_sum_grad_matches_the_cpu_exactly) {
  static const char *const ins[] = {"X", "Out@GRAD"}, *const outs[] = {"X@GRAD"};
  static const struct {
    ct_ddim x;
    int64_t dim[3];
    size_t n_dim;
    bool keep;
  } cases[] = {
      {{3, {2, 3, 4}}, {0}, 0, false}, {{3, {2, 3, 4}}, {1}, 1, false},
      {{3, {2, 3, 4}}, {0, 2}, 2, true}, {{3, {2, 3, 4}}, {-1}, 1, true},
      {{0, {0}}, {0}, 0, false},         {{2, {0, 3}}, {0}, 1, false},
      {{2, {3, 0}}, {0}, 1, true},       {{2, {300, 17}}, {1}, 1, false},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    for (int wide = 0; wide < 2; wide++) {
      ct_dtype dt = wide ? CT_FLOAT64 : CT_FLOAT32;
      ct_op *fwd = unary_op("reduce_sum"), *op = named_op("reduce_sum_grad", ins, 2, outs, 1);
      ct_op *both[2] = {fwd, op};
      for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(ct_op_set_attr_ints(both[i], "dim", cases[k].dim, cases[k].n_dim),
                         CT_OK);
        ck_assert_int_eq(ct_op_set_attr_bool(both[i], "keep_dim", cases[k].keep), CT_OK);
      }
      ct_tensor *in[2] = {host_values(cases[k].x, dt, -1, 1, (unsigned)k), NULL};
      in[1] = host_values(forward_dims(fwd, ins, in, 1), dt, -3, 3, 20 + (unsigned)k);
      char what[64];
      snprintf(what, sizeof what, "reduce_sum_grad %s case #%zu", ct_dtype_name(dt), k);
      places_agree(op, ins, in, 2, outs, 1, -1, 0, what);
      free_all(in, 2);
      ct_op_free(op);
      ct_op_free(fwd);
    }
  }
}
END_TEST

START_TEST(softmax_grad_matches_the_cpu_exactly) {
  static const char *const ins[] = {"Out", "Out@GRAD"}, *const outs[] = {"X@GRAD"};
  static const struct {
    ct_ddim d;
    int64_t axis;
  } cases[] = {
      {{2, {4, 7}}, -1}, {{3, {2, 3, 5}}, 1}, {{3, {2, 3, 5}}, 0}, {{0, {0}}, -1},
      {{2, {0, 4}}, 1},  {{1, {1}}, 0},       {{2, {3, 1000}}, -1},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    ct_op *op = named_op("softmax_grad", ins, 2, outs, 1);
    ck_assert_int_eq(ct_op_set_attr_int(op, "axis", cases[k].axis), CT_OK);
    ct_tensor *in[2] = {host_values(cases[k].d, CT_FLOAT32, 0, 1, (unsigned)k),
                        host_values(cases[k].d, CT_FLOAT32, -2, 2, 30 + (unsigned)k)};
    char what[64];
    snprintf(what, sizeof what, "softmax_grad case #%zu", k);
    places_agree(op, ins, in, 2, outs, 1, -1, 0, what);
    free_all(in, 2);
    ct_op_free(op);
  }
}
END_TEST

/* ---- transpose_grad, concat_grad ------------------------------------------------------------- */

START_TEST(transpose_grad_matches_the_cpu_exactly) {
  static const char *const ins[] = {"X", "Out@GRAD"}, *const outs[] = {"X@GRAD"};
  static const struct {
    ct_ddim x;
    int64_t axis[4];
  } cases[] = {
      {{3, {2, 3, 4}}, {2, 0, 1}}, {{3, {2, 3, 4}}, {0, 1, 2}}, {{1, {5}}, {0}},
      {{0, {0}}, {0}},             {{2, {0, 3}}, {1, 0}},       {{4, {2, 1, 3, 5}}, {3, 1, 0, 2}},
  };
  static const ct_dtype types[] = {CT_FLOAT32, CT_INT64, CT_FLOAT16};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    for (size_t t = 0; t < 3; t++) {
      size_t rank = (size_t)cases[k].x.rank;
      ct_op *fwd = unary_op("transpose"), *op = named_op("transpose_grad", ins, 2, outs, 1);
      ck_assert_int_eq(ct_op_set_attr_ints(fwd, "axis", cases[k].axis, rank), CT_OK);
      ck_assert_int_eq(ct_op_set_attr_ints(op, "axis", cases[k].axis, rank), CT_OK);
      ct_tensor *in[2] = {host_values(cases[k].x, types[t], -9, 9, (unsigned)k), NULL};
      in[1] = host_values(forward_dims(fwd, ins, in, 1), types[t], -9, 9, 40 + (unsigned)k);
      char what[64];
      snprintf(what, sizeof what, "transpose_grad %s case #%zu", ct_dtype_name(types[t]), k);
      places_agree(op, ins, in, 2, outs, 1, -1, 0, what);
      free_all(in, 2);
      ct_op_free(op);
      ct_op_free(fwd);
    }
  }
}
END_TEST

/* concat_grad over three inputs along axis 1 (one of them empty) and along axis 0, with every
 * entry wanted and with the middle one "@EMPTY@" (not wanted, not written). */
START_TEST(concat_grad_matches_the_cpu_exactly_and_honours_empty_entries) {
  static const char *const xs[] = {"X0", "X1", "X2"};
  static const struct {
    ct_ddim d[3];
    int64_t axis;
  } cases[] = {
      {{{2, {2, 3}}, {2, {2, 1}}, {2, {2, 0}}}, 1},
      {{{3, {1, 2, 3}}, {3, {4, 2, 3}}, {3, {2, 2, 3}}}, 0},
      {{{3, {2, 5, 3}}, {3, {2, 1, 3}}, {3, {2, 2, 3}}}, -2},
      {{{2, {0, 3}}, {2, {0, 2}}, {2, {0, 1}}}, 1},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    ct_tensor *in[4];
    for (size_t i = 0; i < 3; i++) {
      in[i] = host_values(cases[k].d[i], CT_FLOAT32, -5, 5, 60 + 3 * (unsigned)k + (unsigned)i);
    }
    ct_op *fwd = op_many("concat", xs, 3, "Out");
    ck_assert_int_eq(ct_op_set_attr_int(fwd, "axis", cases[k].axis), CT_OK);
    in[3] = host_values(forward_dims(fwd, xs, in, 3), CT_FLOAT32, -5, 5, 70 + (unsigned)k);
    static const char *const names[] = {"X0", "X1", "X2", "Out@GRAD"};
    for (int empty = 0; empty < 2; empty++) {
      const char *dx[] = {"X0@GRAD", empty ? CT__GRAD_EMPTY : "X1@GRAD", "X2@GRAD"};
      ct_op *op = new_op("concat_grad");
      ck_assert_int_eq(ct_op_set_inputs(op, "X", xs, 3), CT_OK);
      ck_assert_int_eq(ct_op_set_input(op, "Out@GRAD", "Out@GRAD"), CT_OK);
      ck_assert_int_eq(ct_op_set_outputs(op, "X@GRAD", dx, 3), CT_OK);
      ck_assert_int_eq(ct_op_set_attr_int(op, "axis", cases[k].axis), CT_OK);
      const char *wanted[] = {"X0@GRAD", "X2@GRAD", "X1@GRAD"};
      char what[64];
      snprintf(what, sizeof what, "concat_grad case #%zu%s", k, empty ? " with @EMPTY@" : "");
      places_agree(op, names, in, 4, wanted, empty ? 2 : 3, -1, 0, what);
      if (empty) {
        /* Nothing was written under the empty name at either place. */
        ct_scope *s = ct_scope_new();
        for (size_t i = 0; i < 4; i++) {
          ck_assert_int_eq(
              ct_tensor_copy(ct_var_tensor(ct_scope_var(s, names[i])), in[i], ct_cuda(0)), CT_OK);
        }
        ck_assert_msg(ct_op_run(op, s, ct_cuda(0)) == CT_OK, "%s", ct_last_error());
        const ct_var *v = ct_scope_find_var(s, CT__GRAD_EMPTY);
        ck_assert(v == NULL || ct_var_get_tensor(v) == NULL ||
                  !ct_tensor_has_memory(ct_var_get_tensor(v)));
        ct_scope_free(s);
      }
      ct_op_free(op);
    }
    free_all(in, 4);
    ct_op_free(fwd);
  }
}
END_TEST

/* ---- softmax_with_cross_entropy and its gradient ---------------------------------------------- */

/* n hard labels in [0, classes) as [n, 1] int64 (or [n] when flat), every third one -100
 * (ignore_index's default) when ignore is set. */
static ct_tensor *hard_labels(int64_t n, int64_t classes, bool flat, bool ignore, unsigned seed) {
  ct_tensor *t = host_values(flat ? CT_DIMS(n) : CT_DIMS(n, 1), CT_INT64, 0,
                             (double)(classes > 0 ? classes : 1), seed);
  int64_t *p = ct_tensor_mutable_data(t, CT_INT64, ct_cpu());
  for (int64_t i = 0; i < n; i++) {
    if (classes == 0 || (ignore && i % 3 == 1)) p[i] = -100;
  }
  return t;
}

static const struct {
  int64_t n, k;
} sce_shapes[] = {{6, 5}, {0, 5}, {4, 1}, {300, 10}, {3, 0}, {2, 2000}};

static ct_op *sce_op(bool soft) {
  static const char *const ins[] = {"Logits", "Label"}, *const outs[] = {"Softmax", "Loss"};
  ct_op *op = named_op("softmax_with_cross_entropy", ins, 2, outs, 2);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "soft_label", soft), CT_OK);
  return op;
}

static ct_op *sce_named_op(bool soft) {
  static const char *const ins[] = {"Softmax", "Label", "Loss@GRAD"};
  static const char *const outs[] = {"Logits@GRAD"};
  ct_op *op = named_op("softmax_with_cross_entropy_grad", ins, 3, outs, 1);
  ck_assert_int_eq(ct_op_set_attr_bool(op, "soft_label", soft), CT_OK);
  return op;
}

START_TEST(softmax_with_cross_entropy_matches_the_cpu) {
  static const char *const ins[] = {"Logits", "Label"}, *const outs[] = {"Softmax", "Loss"};
  for (size_t k = 0; k < sizeof sce_shapes / sizeof sce_shapes[0]; k++) {
    int64_t n = sce_shapes[k].n, c = sce_shapes[k].k;
    for (int mode = 0; mode < 4; mode++) { /* hard [n,1], hard [n] with ignores, soft, soft */
      bool soft = mode >= 2;
      ct_op *op = sce_op(soft);
      ct_tensor *in[2] = {host_values(CT_DIMS(n, c), CT_FLOAT32, -30, 30, 1 + (unsigned)k),
                          soft ? host_values(CT_DIMS(n, c), CT_FLOAT32, 0, mode == 3 ? 2 : 1,
                                             5 + (unsigned)k)
                               : hard_labels(n, c, mode == 1, mode == 1, 9 + (unsigned)k)};
      char what[64];
      snprintf(what, sizeof what, "softmax_with_cross_entropy shape #%zu mode %d", k, mode);
      places_agree(op, ins, in, 2, outs, 2, 1e-5, 1e-6, what);
      free_all(in, 2);
      ct_op_free(op);
    }
  }
}
END_TEST

START_TEST(softmax_with_cross_entropy_grad_matches_the_cpu_exactly) {
  static const char *const ins[] = {"Softmax", "Label", "Loss@GRAD"};
  static const char *const outs[] = {"Logits@GRAD"};
  for (size_t k = 0; k < sizeof sce_shapes / sizeof sce_shapes[0]; k++) {
    int64_t n = sce_shapes[k].n, c = sce_shapes[k].k;
    for (int mode = 0; mode < 4; mode++) {
      bool soft = mode >= 2;
      ct_op *op = sce_named_op(soft);
      ct_tensor *in[3] = {host_values(CT_DIMS(n, c), CT_FLOAT32, 0, 1, 1 + (unsigned)k),
                          soft ? host_values(CT_DIMS(n, c), CT_FLOAT32, 0, mode == 3 ? 2 : 1,
                                             5 + (unsigned)k)
                               : hard_labels(n, c, mode == 1, mode == 1, 9 + (unsigned)k),
                          host_values(CT_DIMS(n, 1), CT_FLOAT32, -2, 2, 13 + (unsigned)k)};
      char what[64];
      snprintf(what, sizeof what, "softmax_with_cross_entropy_grad shape #%zu mode %d", k, mode);
      places_agree(op, ins, in, 3, outs, 1, -1, 0, what);
      free_all(in, 3);
      ct_op_free(op);
    }
  }
}
END_TEST

/* Runs op at place over the named host inputs and returns its status, its message (copied into
 * msg) and whether output `out` was left without memory. */
static ct_status run_refused(const ct_op *op, const char *const *names, ct_tensor *const *in,
                             size_t n_in, ct_place place, const char *out, char *msg,
                             size_t cap, bool *untouched) {
  ct_scope *s = ct_scope_new();
  for (size_t i = 0; i < n_in; i++) {
    ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, names[i])), in[i], place),
                     CT_OK);
  }
  ct_clear_error();
  ct_status st = ct_op_run(op, s, place);
  snprintf(msg, cap, "%s", ct_last_error());
  *untouched = !ct_tensor_has_memory(ct_var_tensor(ct_scope_var(s, out)));
  ct_scope_free(s);
  return st;
}

START_TEST(a_bad_label_is_refused_with_the_cpus_message_before_any_output) {
  static const char *const fwd_in[] = {"Logits", "Label"};
  static const char *const grad_in[] = {"Softmax", "Label", "Loss@GRAD"};
  ct_tensor *in[3] = {host_values(CT_DIMS(4, 3), CT_FLOAT32, -1, 1, 1),
                      hard_labels(4, 3, false, false, 2),
                      host_values(CT_DIMS(4, 1), CT_FLOAT32, -1, 1, 3)};
  ((int64_t *)ct_tensor_mutable_data(in[1], CT_INT64, ct_cpu()))[2] = 3; /* one past the end */
  for (int grad = 0; grad < 2; grad++) {
    ct_op *op = grad ? sce_named_op(false) : sce_op(false);
    const char *const *names = grad ? grad_in : fwd_in;
    const char *out = grad ? "Logits@GRAD" : "Softmax";
    char cpu_msg[1024], gpu_msg[1024];
    bool cpu_clean, gpu_clean;
    ct_status a = run_refused(op, names, in, grad ? 3 : 2, ct_cpu(), out, cpu_msg,
                              sizeof cpu_msg, &cpu_clean);
    ct_status b = run_refused(op, names, in, grad ? 3 : 2, ct_cuda(0), out, gpu_msg,
                              sizeof gpu_msg, &gpu_clean);
    ck_assert_int_eq(a, CT_ERR_OUT_OF_RANGE);
    ck_assert_int_eq(b, CT_ERR_OUT_OF_RANGE);
    ck_assert_str_eq(gpu_msg, cpu_msg);
    ck_assert_ptr_nonnull(strstr(gpu_msg, "row 2 holds 3"));
    ck_assert(cpu_clean && gpu_clean);
    ct_op_free(op);
  }
  free_all(in, 3);
}
END_TEST

/* ---- sgd, momentum, adam -------------------------------------------------------------------- */

/* Runs an optimizer op of `type` over Param, Grad, the state and the one-element inputs (lr
 * float64 when lr64) for each shape, in place or not, and compares every output exactly. */
static void optimizer_agrees(const char *type, const char *const *state, size_t n_state,
                             const char *const *scalars, size_t n_scalars,
                             const char *const *outs, size_t n_outs, bool in_place) {
  const ct_ddim shapes[] = {CT_DIMS(37), CT_DIMS(), CT_DIMS(0, 4), CT_DIMS(3, 1000)};
  for (size_t k = 0; k < 4; k++) {
    for (int lr64 = 0; lr64 < 2; lr64++) {
      const char *names[8];
      ct_tensor *in[8];
      size_t n = 0;
      names[n] = "Param";
      in[n++] = host_values(shapes[k], CT_FLOAT32, -1, 1, 1 + (unsigned)k);
      names[n] = "Grad";
      in[n++] = host_values(shapes[k], CT_FLOAT32, -1, 1, 2 + (unsigned)k);
      for (size_t i = 0; i < n_state; i++) {
        names[n] = state[i];
        in[n++] = host_values(shapes[k], CT_FLOAT32, 0, 1, 3 + (unsigned)(k + i));
      }
      for (size_t i = 0; i < n_scalars; i++) {
        /* The learning rate in both dtypes; the pows of adam float32 then float64. */
        names[n] = scalars[i];
        in[n++] = host_values(CT_DIMS(1), lr64 ? CT_FLOAT64 : CT_FLOAT32, 0.05, 0.95,
                              7 + (unsigned)i);
      }
      ct_op *op = new_op(type);
      for (size_t i = 0; i < n; i++) ck_assert_int_eq(ct_op_set_input(op, names[i], names[i]), CT_OK);
      char out_names[MAX_OUTS][32];
      const char *on[MAX_OUTS];
      for (size_t i = 0; i < n_outs; i++) {
        /* In place: ParamOut writes Param, VelocityOut Velocity, and so on. */
        snprintf(out_names[i], sizeof out_names[i], "%s", outs[i]);
        if (in_place) out_names[i][strlen(outs[i]) - 3] = '\0';
        on[i] = out_names[i];
        ck_assert_int_eq(ct_op_set_output(op, outs[i], on[i]), CT_OK);
      }
      if (strcmp(type, "momentum") == 0) {
        ck_assert_int_eq(ct_op_set_attr_float(op, "mu", 0.9), CT_OK);
        ck_assert_int_eq(ct_op_set_attr_bool(op, "use_nesterov", lr64 == 1), CT_OK);
      }
      char what[96];
      snprintf(what, sizeof what, "%s shape #%zu lr %s%s", type, k, lr64 ? "float64" : "float32",
               in_place ? " in place" : "");
      places_agree(op, names, in, n, on, n_outs, -1, 0, what);
      free_all(in, n);
      ct_op_free(op);
    }
  }
}

START_TEST(optimizers_match_the_cpu_exactly) {
  static const char *const lr[] = {"LearningRate"};
  static const char *const sgd_out[] = {"ParamOut"};
  static const char *const mom_state[] = {"Velocity"};
  static const char *const mom_out[] = {"ParamOut", "VelocityOut"};
  static const char *const adam_state[] = {"Moment1", "Moment2"};
  static const char *const adam_scalars[] = {"LearningRate", "Beta1Pow", "Beta2Pow"};
  static const char *const adam_out[] = {"ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut",
                                         "Beta2PowOut"};
  for (int in_place = 0; in_place < 2; in_place++) {
    optimizer_agrees("sgd", NULL, 0, lr, 1, sgd_out, 1, in_place);
    optimizer_agrees("momentum", mom_state, 1, lr, 1, mom_out, 2, in_place);
    optimizer_agrees("adam", adam_state, 2, adam_scalars, 3, adam_out, 5, in_place);
  }
}
END_TEST

/* ---- A training step ------------------------------------------------------------------------ */

/* An MLP on 16 examples of 7 features, 3 classes: h = relu(x W1 + b1), logits = h W2 + b2,
 * loss = mean(softmax_with_cross_entropy(logits, label)), its backward pass, and sgd on each
 * parameter in place. Runs 3 steps at place and returns the parameters, copied to the host. */
static const char *const mlp_params[] = {"W1", "b1", "W2", "b2"};

static void train_at(ct_place place, ct_tensor *out[4]) {
  const ct_ddim dims[] = {CT_DIMS(7, 12), CT_DIMS(12), CT_DIMS(12, 3), CT_DIMS(3)};
  ct_program *p = ct_program_new();
  ct_op *sce = new_op("softmax_with_cross_entropy");
  ck_assert_int_eq(ct_op_set_input(sce, "Logits", "logits"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(sce, "Label", "label"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(sce, "Softmax", "sm"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(sce, "Loss", "losses"), CT_OK);
  ct_op *fwd[] = {
      op_xy("matmul", "x", "W1", "xw"),      op_xy("elementwise_add", "xw", "b1", "z"),
      op_x("relu", "z", "h"),                op_xy("matmul", "h", "W2", "hw"),
      op_xy("elementwise_add", "hw", "b2", "logits"), sce,
      op_x("mean", "losses", "loss"),
  };
  for (size_t i = 0; i < sizeof fwd / sizeof fwd[0]; i++) {
    ck_assert_int_eq(ct_program_append(p, fwd[i]), CT_OK);
  }
  ck_assert_msg(ct_program_append_backward(p, "loss", mlp_params, 4) == CT_OK, "%s",
                ct_last_error());
  for (size_t i = 0; i < 4; i++) {
    char g[32];
    snprintf(g, sizeof g, "%s@GRAD", mlp_params[i]);
    ct_op *opt = new_op("sgd");
    ck_assert_int_eq(ct_op_set_input(opt, "Param", mlp_params[i]), CT_OK);
    ck_assert_int_eq(ct_op_set_input(opt, "Grad", g), CT_OK);
    ck_assert_int_eq(ct_op_set_input(opt, "LearningRate", "lr"), CT_OK);
    ck_assert_int_eq(ct_op_set_output(opt, "ParamOut", mlp_params[i]), CT_OK);
    ck_assert_int_eq(ct_program_append(p, opt), CT_OK);
  }
  ct_scope *s = ct_scope_new();
  ct_tensor *t[7] = {host_values(CT_DIMS(16, 7), CT_FLOAT32, -1, 1, 1),
                     hard_labels(16, 3, false, false, 2),
                     host_values(CT_DIMS(1), CT_FLOAT32, 0.5, 0.5, 3)};
  static const char *const data[] = {"x", "label", "lr"};
  for (size_t i = 0; i < 4; i++) {
    t[3 + i] = host_values(dims[i], CT_FLOAT32, -0.5, 0.5, 10 + (unsigned)i);
  }
  for (size_t i = 0; i < 7; i++) {
    const char *name = i < 3 ? data[i] : mlp_params[i - 3];
    ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, name)), t[i], place), CT_OK);
  }
  free_all(t, 7);
  ct_executor *e = ct_executor_new(p, s, place);
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  for (int step = 0; step < 3; step++) {
    ck_assert_msg(ct_executor_run(e) == CT_OK, "step %d: %s", step, ct_last_error());
  }
  for (size_t i = 0; i < 4; i++) {
    const ct_tensor *v = ct_var_get_tensor(ct_scope_find_var(s, mlp_params[i]));
    ck_assert(ct_place_equal(ct_tensor_place(v), place));
    out[i] = ct_tensor_new();
    ck_assert_int_eq(ct_tensor_copy(out[i], v, ct_cpu()), CT_OK);
  }
  ct_executor_free(e);
  ct_scope_free(s);
  ct_program_free(p);
}

START_TEST(three_training_steps_of_an_mlp_match_the_cpu) {
  ct_tensor *cpu[4], *gpu[4];
  train_at(ct_cpu(), cpu);
  train_at(ct_cuda(0), gpu);
  for (size_t i = 0; i < 4; i++) {
    assert_close(gpu[i], cpu[i], 1e-4, 1e-6, mlp_params[i]);
    ct_tensor_free(cpu[i]);
    ct_tensor_free(gpu[i]);
  }
}
END_TEST

static Suite *cuda_suite(void) {
  Suite *s = suite_create("cuda_grad2");
  CT_ADD_TEST(s, absent_kernels_are_registered_for_cuda_in_a_cuda_build);
  CT_ADD_TEST(s, matmul_grad_matches_the_cpu);
  CT_ADD_TEST(s, mean_grad_matches_the_cpu_exactly);
  CT_ADD_TEST(s, reduce_sum_grad_matches_the_cpu_exactly);
  CT_ADD_TEST(s, softmax_grad_matches_the_cpu_exactly);
  CT_ADD_TEST(s, transpose_grad_matches_the_cpu_exactly);
  CT_ADD_TEST(s, concat_grad_matches_the_cpu_exactly_and_honours_empty_entries);
  CT_ADD_TEST(s, softmax_with_cross_entropy_matches_the_cpu);
  CT_ADD_TEST(s, softmax_with_cross_entropy_grad_matches_the_cpu_exactly);
  CT_ADD_TEST(s, a_bad_label_is_refused_with_the_cpus_message_before_any_output);
  CT_ADD_TEST(s, optimizers_match_the_cpu_exactly);
  CT_ADD_TEST(s, three_training_steps_of_an_mlp_match_the_cpu);
  return s;
}

#endif /* CORTEN_TEST_CUDA */

CT_GPU_TEST_MAIN(absent_suite, cuda_suite)
