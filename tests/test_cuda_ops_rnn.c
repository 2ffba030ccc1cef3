/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the recurrent op on a GPU: test_rnn_op.c's Elman RNN runs at ct_cuda(0) over device
 * copies of its inputs; the outputs and every step scope's state match the CPU's run within
 * 1e-5, and the step scopes hold device tensors. Without a GPU the suite reports itself skipped
 * (77); the no-device checks of the op kernels run in test_cuda_ops.c. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "cuda_ops_util.h"
#include "rnn_elman.h"

#ifdef CORTEN_TEST_CUDA

/* ---- recurrent: an Elman RNN on the device ---- */

static const char *const elman_names[] = {"W", "U", "b", "h0", "x_seq"};

/* A scope holding copies of the Elman data at place. */
static ct_scope *elman_scope(ct_tensor *const *data, ct_place place) {
  ct_scope *s = ct_scope_new();
  ck_assert_ptr_nonnull(s);
  for (size_t i = 0; i < 5; i++) {
    ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, elman_names[i])), data[i],
                                    place),
                     CT_OK);
  }
  return s;
}

/* The tensor called name as seen from s (s, then its ancestors), which must be at place. */
static const ct_tensor *tensor_at_place(const ct_scope *s, const char *name, ct_place place) {
  const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, name));
  ck_assert_msg(t != NULL, "no tensor %s", name);
  ck_assert_msg(ct_place_equal(ct_tensor_place(t), place), "%s is not at the expected place",
                name);
  return t;
}

/* A host copy of the device tensor t compared with the host tensor want, within 1e-5. */
static void assert_device_close(const ct_tensor *t, const ct_tensor *want, const char *what) {
  ct_tensor *host = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_copy(host, t, ct_cpu()), CT_OK);
  assert_close(host, want, 0, 1e-5, what);
  ct_tensor_free(host);
}

static void check_elman_on_gpu(int64_t T, bool reverse) {
  ct_tensor *data[5] = {
      host_values(CT_DIMS(D, H), CT_FLOAT32, -1, 1, 71),
      host_values(CT_DIMS(H, H), CT_FLOAT32, -1, 1, 72),
      host_values(CT_DIMS(H), CT_FLOAT32, -1, 1, 73),
      host_values(CT_DIMS(B, H), CT_FLOAT32, -1, 1, 74),
      host_values(CT_DIMS(T, B, D), CT_FLOAT32, -1, 1, 75 + (unsigned)T)};
  ct_op *op = elman_op(reverse);
  ct_scope *cpu = elman_scope(data, ct_cpu()), *gpu = elman_scope(data, ct_cuda(0));
  ck_assert_msg(ct_op_run(op, cpu, ct_cpu()) == CT_OK, "%s", ct_last_error());
  ck_assert_msg(ct_op_run(op, gpu, ct_cuda(0)) == CT_OK, "%s", ct_last_error());
  char what[64];
  const ct_tensor *want_seq = tensor_at_place(cpu, "h_seq", ct_cpu());
  const ct_tensor *got_seq = tensor_at_place(gpu, "h_seq", ct_cuda(0));
  ck_assert(ct_ddim_equal(ct_tensor_dims(got_seq), CT_DIMS(T, B, H)));
  snprintf(what, sizeof what, "T=%lld%s h_seq", (long long)T, reverse ? " reversed" : "");
  assert_device_close(got_seq, want_seq, what);
  snprintf(what, sizeof what, "T=%lld%s h_last", (long long)T, reverse ? " reversed" : "");
  assert_device_close(tensor_at_place(gpu, "h_last", ct_cuda(0)),
                      tensor_at_place(cpu, "h_last", ct_cpu()), what);
  /* The step scopes: T of them, kids of the scope, holding device tensors; scope t holds h_t,
   * its x is row t of the device x_seq (a view) and its intermediates stay in it. */
  const ct_scope_list *gl = ct_var_get(ct_scope_find_var(gpu, "steps"), &ct_scope_list_type);
  const ct_scope_list *cl = ct_var_get(ct_scope_find_var(cpu, "steps"), &ct_scope_list_type);
  ck_assert_ptr_nonnull(gl);
  ck_assert_ptr_nonnull(cl);
  ck_assert_uint_eq(ct_scope_list_size(gl), (size_t)T);
  ck_assert_uint_eq(ct_scope_kid_count(gpu), (size_t)T);
  const float *xs = ct_tensor_data(tensor_at_place(gpu, "x_seq", ct_cuda(0)), CT_FLOAT32);
  for (int64_t t = 0; t < T; t++) {
    const ct_scope *gs = ct_scope_list_get(gl, (size_t)t), *cs = ct_scope_list_get(cl, (size_t)t);
    ck_assert_ptr_nonnull(gs);
    ck_assert_ptr_nonnull(ct_scope_find_local_var(gs, "x"));
    ck_assert_ptr_nonnull(ct_scope_find_local_var(gs, "xw"));
    ck_assert_ptr_nonnull(ct_scope_find_local_var(gs, "h"));
    const ct_tensor *x = tensor_at_place(gs, "x", ct_cuda(0));
    ck_assert(ct_ddim_equal(ct_tensor_dims(x), CT_DIMS(B, D)));
    ck_assert_ptr_eq(ct_tensor_data(x, CT_FLOAT32), xs + t * B * D);
    static const char *const step_vars[] = {"h_prev", "xw", "hu", "s", "pre", "h"};
    for (size_t v = 0; v < sizeof step_vars / sizeof step_vars[0]; v++) {
      (void)tensor_at_place(gs, step_vars[v], ct_cuda(0));
    }
    snprintf(what, sizeof what, "T=%lld%s step scope %lld h", (long long)T,
             reverse ? " reversed" : "", (long long)t);
    assert_device_close(tensor_at_place(gs, "h", ct_cuda(0)), tensor_at_place(cs, "h", ct_cpu()),
                        what);
  }
  ct_scope_free(gpu);
  ct_scope_free(cpu);
  ct_op_free(op);
  for (size_t i = 0; i < 5; i++) ct_tensor_free(data[i]);
}

START_TEST(recurrent_elman_on_the_device_matches_the_cpu) {
  static const int64_t lengths[] = {1, 2, 7, 50};
  for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
    check_elman_on_gpu(lengths[i], false);
  }
}
END_TEST

START_TEST(recurrent_elman_reversed_on_the_device_matches_the_cpu) {
  check_elman_on_gpu(1, true);
  check_elman_on_gpu(9, true);
}
END_TEST

static Suite *cuda_suite(void) {
  Suite *s = suite_create("cuda_ops_rnn");
  CT_ADD_TEST(s, recurrent_elman_on_the_device_matches_the_cpu);
  CT_ADD_TEST(s, recurrent_elman_reversed_on_the_device_matches_the_cpu);
  return s;
}

#endif /* CORTEN_TEST_CUDA */



CT_GPU_TEST_MAIN(NULL, cuda_suite)
