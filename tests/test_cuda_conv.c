/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_cuda_conv.c: the CUDA kernels of conv2d, depthwise_conv2d, pool2d and their
 * gradients against their CPU kernels.
 *
 * On a GPU: each op runs at ct_cpu() and at ct_cuda(0) over copies of the same host inputs and
 * every output is compared: within float32 rounding for conv2d and conv2d_grad (the CPU sums
 * through GEMM in another order: within 2e-6 sqrt(K) of a sum of K products, cuDNN (where it
 * loads, by its own algorithms) within 2e-5 sqrt(K); the cases with asymmetric paddings, and
 * every case with CORTEN_CUDNN=0, by corten's direct kernels), byte for byte for pool2d and pool2d_grad (the
 * CPU's walk). The suite says whether cuDNN served the convolutions.
 * Then a small CNN takes three training steps at each place and the parameters agree.
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

#include "conv_util.h"
#include "cuda_ops_util.h"

static const char *const conv_kernels[] = {"conv2d", "depthwise_conv2d", "conv2d_grad",
                                           "depthwise_conv2d_grad", "pool2d", "pool2d_grad"};

START_TEST(absent_kernels_are_registered_for_cuda_in_a_cuda_build) {
  for (size_t i = 0; i < sizeof conv_kernels / sizeof conv_kernels[0]; i++) {
    ct_kernel_fn fn = kernel_at(conv_kernels[i], CT_DEVICE_CUDA, CT_FLOAT32);
    ck_assert_msg(kernel_at(conv_kernels[i], CT_DEVICE_CPU, CT_FLOAT32) != NULL, "%s",
                  conv_kernels[i]);
#ifdef CORTEN_TEST_CUDA
    ck_assert_msg(fn != NULL, "no CUDA kernel for %s", conv_kernels[i]);
    ck_assert_ptr_null(kernel_at(conv_kernels[i], CT_DEVICE_CUDA, CT_FLOAT64));
#else
    ck_assert_msg(fn == NULL, "a CPU-only build has a CUDA kernel for %s", conv_kernels[i]);
#endif
  }
}
END_TEST

static Suite *absent_suite(void) {
  Suite *s = suite_create("cuda_conv_absent");
  CT_ADD_TEST(s, absent_kernels_are_registered_for_cuda_in_a_cuda_build);
  return s;
}

#ifdef CORTEN_TEST_CUDA

#include "ops/cuda/cudnn.h"

static const conv_case cases[] = {
    {.n = 2, .c = 3, .h = 9, .w = 8, .m = 4, .kh = 3, .kw = 3},
    {.n = 2, .c = 4, .h = 9, .w = 11, .m = 6, .kh = 3, .kw = 2, .sh = 2, .sw = 3, .pads = {1, 2}},
    {.n = 1, .c = 4, .h = 10, .w = 9, .m = 4, .kh = 3, .kw = 3, .dh = 2, .dw = 2, .groups = 2,
     .pads = {2, 0, 1, 3}, .n_pads = 4},
    {.n = 2, .c = 3, .h = 8, .w = 8, .m = 6, .kh = 3, .kw = 3, .groups = 3, .pads = {1, 1}},
    {.n = 3, .c = 5, .h = 4, .w = 6, .m = 7, .kh = 1, .kw = 1},
    {.n = 4, .c = 16, .h = 12, .w = 12, .m = 32, .kh = 3, .kw = 3, .pads = {1, 1}},
    {.n = 0, .c = 2, .h = 5, .w = 5, .m = 3, .kh = 3, .kw = 3},
    /* depthwise at stride 2, and a resnet-sized layer (cuDNN's workspace) */
    {.n = 2, .c = 8, .h = 14, .w = 14, .m = 8, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .groups = 8,
     .pads = {1, 1}},
    {.n = 2, .c = 64, .h = 28, .w = 28, .m = 64, .kh = 3, .kw = 3, .pads = {1, 1}},
};

START_TEST(conv2d_and_its_grad_match_the_cpu) {
  static const char *const fwd_in[] = {"Input", "Filter"}, *const fwd_out[] = {"Output"};
  static const char *const g_in[] = {"Input", "Filter", "Output@GRAD"};
  static const char *const g_out[] = {"Input@GRAD", "Filter@GRAD"};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    conv_case cc = cases[k];
    const conv_case *c = conv_fill(&cc);
    ct_tensor *in[3] = {host_values(conv_x_dims(c), CT_FLOAT32, -1, 1, 1 + (unsigned)k),
                        host_values(conv_f_dims(c), CT_FLOAT32, -1, 1, 40 + (unsigned)k),
                        host_values(conv_out_dims(c), CT_FLOAT32, -1, 1, 80 + (unsigned)k)};
    char what[64];
    snprintf(what, sizeof what, "conv2d case #%zu", k);
    ct_op *op = conv_case_op(c, "Input", "Filter", "Output");
    /* A sum of K = C/groups KH KW products of values in [-1, 1]: float32 rounding grows with
     * sqrt(K) (the direct kernel's float sum in order: 1.2e-5 off at K 576 on an H200), and
     * cuDNN's Winograd transforms add more (1.4e-4 at K 576). */
    double k_terms = (double)(c->c / c->groups * c->kh * c->kw);
    bool dnn = ct__cudnn_available();
    places_agree(op, fwd_in, in, 2, fwd_out, 1, dnn ? 1e-4 : 1e-5,
                 (dnn ? 2e-5 : 2e-6) * sqrt(k_terms) + 1e-5, what);
    ct_op_free(op);
    /* Both gradients, Input@GRAD only, Filter@GRAD only. */
    for (int wiring = 0; wiring < 3; wiring++) {
      ct_op *g = new_op("conv2d_grad");
      for (int i = 0; i < 3; i++) ck_assert_int_eq(ct_op_set_input(g, g_in[i], g_in[i]), CT_OK);
      const char *const *outs = wiring == 2 ? g_out + 1 : g_out;
      size_t n_out = wiring ? 1 : 2;
      for (size_t i = 0; i < n_out; i++) {
        ck_assert_int_eq(ct_op_set_output(g, outs[i], outs[i]), CT_OK);
      }
      int64_t st[2] = {c->sh, c->sw}, dl[2] = {c->dh, c->dw};
      ck_assert_int_eq(ct_op_set_attr_ints(g, "strides", st, 2), CT_OK);
      ck_assert_int_eq(ct_op_set_attr_ints(g, "dilations", dl, 2), CT_OK);
      ck_assert_int_eq(ct_op_set_attr_ints(g, "paddings", c->pads, c->n_pads), CT_OK);
      ck_assert_int_eq(ct_op_set_attr_int(g, "groups", c->groups), CT_OK);
      snprintf(what, sizeof what, "conv2d_grad case #%zu wiring %d", k, wiring);
      /* dX sums M/groups KH KW products an element, dW N OH OW (cuDNN's algorithms for the
       * latter measured 1.4e-4 off at 1568) */
      double k_grad = fmax((double)(c->m / c->groups * c->kh * c->kw),
                           (double)(c->n * conv_out_dims(c).d[2] * conv_out_dims(c).d[3]));
      places_agree(g, g_in, in, 3, outs, n_out, 1e-4,
                   ct__cudnn_available() ? 1e-4 + 2e-5 * sqrt(k_grad) : 1e-4, what);
      ct_op_free(g);
    }
    for (int i = 0; i < 3; i++) ct_tensor_free(in[i]);
  }
}
END_TEST

static const conv_case pools[] = {
    {.pool = "max", .n = 2, .c = 3, .h = 8, .w = 8, .kh = 2, .kw = 2, .sh = 2, .sw = 2},
    {.pool = "max", .n = 1, .c = 2, .h = 7, .w = 9, .kh = 3, .kw = 3, .sh = 2, .sw = 2,
     .pads = {1, 1}, .ceil_mode = true},
    {.pool = "avg", .n = 2, .c = 2, .h = 7, .w = 6, .kh = 3, .kw = 2, .sh = 1, .sw = 2,
     .pads = {1, 0, 0, 1}, .n_pads = 4, .exclusive = true},
    {.pool = "avg", .n = 2, .c = 2, .h = 7, .w = 6, .kh = 3, .kw = 3, .sh = 2, .sw = 2,
     .pads = {1, 1}},
    {.pool = "avg", .n = 2, .c = 3, .h = 5, .w = 4, .kh = 1, .kw = 1, .global = true,
     .exclusive = true},
};

START_TEST(pool2d_and_its_grad_match_the_cpu_exactly) {
  static const char *const fwd_in[] = {"X"}, *const fwd_out[] = {"Out"};
  static const char *const g_in[] = {"X", "Out", "Out@GRAD"}, *const g_out[] = {"X@GRAD"};
  for (size_t k = 0; k < sizeof pools / sizeof pools[0]; k++) {
    conv_case cc = pools[k];
    const conv_case *c = conv_fill(&cc);
    ct_tensor *in[3] = {host_values(conv_x_dims(c), CT_FLOAT32, -1, 1, 1 + (unsigned)k), NULL,
                        host_values(conv_out_dims(c), CT_FLOAT32, -1, 1, 80 + (unsigned)k)};
    ct_op *op = conv_case_op(c, "X", NULL, "Out");
    char what[64];
    snprintf(what, sizeof what, "pool2d case #%zu", k);
    places_agree(op, fwd_in, in, 1, fwd_out, 1, -1, 0, what);
    run_named(op, fwd_in, in, 1, fwd_out, &in[1], 1, ct_cpu());
    ct_op *g = new_op("pool2d_grad");
    for (int i = 0; i < 3; i++) ck_assert_int_eq(ct_op_set_input(g, g_in[i], g_in[i]), CT_OK);
    ck_assert_int_eq(ct_op_set_output(g, "X@GRAD", "X@GRAD"), CT_OK);
    int64_t ks[2] = {c->kh, c->kw}, st[2] = {c->sh, c->sw};
    ck_assert_int_eq(ct_op_set_attr_string(g, "pooling_type", c->pool), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_ints(g, "ksize", ks, 2), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_ints(g, "strides", st, 2), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_ints(g, "paddings", c->pads, c->n_pads), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_bool(g, "exclusive", c->exclusive), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_bool(g, "ceil_mode", c->ceil_mode), CT_OK);
    ck_assert_int_eq(ct_op_set_attr_bool(g, "global_pooling", c->global), CT_OK);
    snprintf(what, sizeof what, "pool2d_grad case #%zu", k);
    places_agree(g, g_in, in, 3, g_out, 1, -1, 0, what);
    ct_op_free(g);
    ct_op_free(op);
    for (int i = 0; i < 3; i++) ct_tensor_free(in[i]);
  }
}
END_TEST

/* A CNN (conv2d, elementwise_add, relu, pool2d, reshape, matmul, the loss, the backward pass,
 * sgd) takes three steps at place from the same start; its parameters are copied back. */
static const char *const cnn_params[] = {"conv.w", "conv.b", "fc.w"};

static void cnn_train_at(ct_place place, ct_tensor **out) {
  ct_scope *s = ct_scope_new();
  ct_program *p = ct_program_new();
  const conv_case *c = CONV(.n = 4, .c = 2, .h = 6, .w = 6, .m = 3, .kh = 3, .kw = 3,
                            .pads = {1, 1});
  const ct_ddim dims[] = {conv_f_dims(c), CT_DIMS(3, 1, 1), CT_DIMS(27, 5)};
  for (int i = 0; i < 3; i++) {
    ct_tensor *h = host_values(dims[i], CT_FLOAT32, -0.5, 0.5, 7 + (unsigned)i);
    ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, cnn_params[i])), h, place),
                     CT_OK);
    ct_tensor_free(h);
  }
  ct_tensor *x = host_values(conv_x_dims(c), CT_FLOAT32, -1, 1, 3);
  ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, "x")), x, place), CT_OK);
  ct_tensor_free(x);
  int64_t labels[4] = {0, 3, 1, 4}, flat[2] = {4, 27}, two[2] = {2, 2};
  ct_tensor *lt = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_set_value(lt, labels, CT_DIMS(4), CT_INT64, ct_cpu()), CT_OK);
  ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, "labels")), lt, place), CT_OK);
  ct_tensor_free(lt);
  float lr = 0.1f;
  ct_tensor *lrt = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_set_value(lrt, &lr, CT_DIMS(1), CT_FLOAT32, ct_cpu()), CT_OK);
  ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, "lr")), lrt, place), CT_OK);
  ct_tensor_free(lrt);
  ck_assert_int_eq(ct_program_append(p, conv_case_op(c, "x", "conv.w", "c")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_add", "c", "conv.b", "cb")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("relu", "cb", "r")), CT_OK);
  ct_op *pool = op_x("pool2d", "r", "pl");
  ck_assert_int_eq(ct_op_set_attr_ints(pool, "ksize", two, 2), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_ints(pool, "strides", two, 2), CT_OK);
  ck_assert_int_eq(ct_program_append(p, pool), CT_OK);
  ct_op *rs = op_x("reshape", "pl", "flat");
  ck_assert_int_eq(ct_op_set_attr_ints(rs, "shape", flat, 2), CT_OK);
  ck_assert_int_eq(ct_program_append(p, rs), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_xy("matmul", "flat", "fc.w", "logits")), CT_OK);
  ct_op *sce = new_op("softmax_with_cross_entropy");
  ck_assert_int_eq(ct_op_set_input(sce, "Logits", "logits"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(sce, "Label", "labels"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(sce, "Softmax", "prob"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(sce, "Loss", "rows"), CT_OK);
  ck_assert_int_eq(ct_program_append(p, sce), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("mean", "rows", "loss")), CT_OK);
  ck_assert_int_eq(ct_program_append_backward(p, "loss", cnn_params, 3), CT_OK);
  for (int i = 0; i < 3; i++) {
    char g[32];
    snprintf(g, sizeof g, "%s@GRAD", cnn_params[i]);
    ct_op *op = new_op("sgd");
    ck_assert_int_eq(ct_op_set_input(op, "Param", cnn_params[i]), CT_OK);
    ck_assert_int_eq(ct_op_set_input(op, "Grad", g), CT_OK);
    ck_assert_int_eq(ct_op_set_input(op, "LearningRate", "lr"), CT_OK);
    ck_assert_int_eq(ct_op_set_output(op, "ParamOut", cnn_params[i]), CT_OK);
    ck_assert_int_eq(ct_program_append(p, op), CT_OK);
  }
  ct_executor *e = ct_executor_new(p, s, place);
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  for (int k = 0; k < 3; k++) ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  for (int i = 0; i < 3; i++) {
    out[i] = ct_tensor_new();
    ck_assert_int_eq(ct_tensor_copy(out[i], ct_var_get_tensor(ct_scope_find_var(s, cnn_params[i])),
                                    ct_cpu()), CT_OK);
  }
  ct_executor_free(e);
  ct_scope_free(s);
  ct_program_free(p);
}

START_TEST(three_training_steps_of_a_cnn_match_the_cpu) {
  ct_tensor *cpu[3], *gpu[3];
  cnn_train_at(ct_cpu(), cpu);
  cnn_train_at(ct_cuda(0), gpu);
  for (int i = 0; i < 3; i++) {
    assert_close(gpu[i], cpu[i], 1e-4, 1e-6, cnn_params[i]);
    ct_tensor_free(cpu[i]);
    ct_tensor_free(gpu[i]);
  }
}
END_TEST

static Suite *cuda_suite(void) {
  printf("CUDA convolutions: %s\n", ct__cudnn_available() ? "cuDNN (loaded)"
                                                            : "corten's direct kernels (no cuDNN)");
  Suite *s = suite_create("cuda_conv");
  CT_ADD_TEST(s, absent_kernels_are_registered_for_cuda_in_a_cuda_build);
  CT_ADD_TEST(s, conv2d_and_its_grad_match_the_cpu);
  CT_ADD_TEST(s, pool2d_and_its_grad_match_the_cpu_exactly);
  CT_ADD_TEST(s, three_training_steps_of_a_cnn_match_the_cpu);
  return s;
}

#endif /* CORTEN_TEST_CUDA */

CT_GPU_TEST_MAIN(absent_suite, cuda_suite)
