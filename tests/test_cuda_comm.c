/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_cuda_comm.c: the collectives on CUDA tensors over NCCL (ct_comm_init_nccl), a GPU
 * suite run by ctest under mpirun (tests/comm.cmake): one rank per GPU, rank r on device
 * r mod the device count; one GPU runs a 1-rank communicator. Without a device (in a CUDA
 * build) it checks that the CUDA kernels of the collectives are registered and that NCCL loads
 * and then fails on the missing device, and reports itself skipped (77). Check's fork mode is
 * off: an MPI process cannot fork its communicators. Rank r's X holds r + 1 + i at element i,
 * so every expected value is exact. */
#include "harness.h"

static int n_ranks, my_rank, n_devices;

/* A scope holding NCCL communicator "comm" and X of n float32 (or float16 bits) on the GPU. */
static ct_scope *setup(ct_dtype dt, int64_t n) {
  ct_scope *s = ct_scope_new();
  ck_assert_ptr_nonnull(s);
  ct_var *c = ct_scope_var(s, "comm");
  ck_assert_msg(ct_comm_init_nccl(c, my_rank % n_devices) == CT_OK, "%s", ct_last_error());
  ck_assert_int_eq(ct_comm_set_timeout(c, 60), CT_OK);
  ct_tensor *host = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_resize(host, CT_DIMS(n)), CT_OK);
  void *p = ct_tensor_mutable_data(host, dt, ct_cpu());
  ck_assert_ptr_nonnull(p);
  for (int64_t i = 0; i < n; i++) {
    float v = (float)(my_rank + 1 + i);
    if (dt == CT_FLOAT32) ((float *)p)[i] = v;
    else ((uint16_t *)p)[i] = (uint16_t)(0x3c00 + 0x400 * (my_rank + 1)); /* 2^r: exact */
  }
  ck_assert_int_eq(ct_tensor_copy(ct_var_tensor(ct_scope_var(s, "x")), host,
                                  ct_cuda(my_rank % n_devices)), CT_OK);
  ct_tensor_free(host);
  return s;
}

static void run_coll(ct_scope *s, const char *type, const char *out, ct_status want) {
  ct_op *op = ct_op_new(type);
  ck_assert_ptr_nonnull(op);
  ck_assert_int_eq(ct_op_set_input(op, "X", "x"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", out), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "comm", "comm"), CT_OK);
  ct_status st = ct_op_run(op, s, ct_cuda(my_rank % n_devices));
  ck_assert_msg(st == want, "%s: %s", type, ct_last_error());
  ct_op_free(op);
}

/* Out copied to the host (the caller frees it). */
static ct_tensor *to_host(ct_scope *s, const char *name) {
  ct_tensor *h = ct_tensor_new();
  ck_assert_int_eq(ct_tensor_copy(h, ct_var_get_tensor(ct_scope_find_var(s, name)), ct_cpu()),
                   CT_OK);
  return h;
}

START_TEST(test_nccl_allreduce_sum_float32_in_place_and_not) {
  for (int in_place = 0; in_place < 2; in_place++) {
    ct_scope *s = setup(CT_FLOAT32, 1000);
    run_coll(s, "c_allreduce_sum", in_place ? "x" : "out", CT_OK);
    ct_tensor *h = to_host(s, in_place ? "x" : "out");
    const float *p = ct_tensor_data(h, CT_FLOAT32);
    for (int64_t i = 0; i < 1000; i++) {
      ck_assert(p[i] == (float)(n_ranks * (n_ranks + 1) / 2 + n_ranks * i));
    }
    ct_tensor_free(h);
    ct_scope_free(s);
  }
}
END_TEST

START_TEST(test_nccl_reduces_float16) {
  ct_scope *s = setup(CT_FLOAT16, 8);
  run_coll(s, "c_allreduce_max", "out", CT_OK);
  ct_tensor *h = to_host(s, "out");
  const uint16_t *p = ct_tensor_data(h, CT_FLOAT16);
  ck_assert_uint_eq(p[0], 0x3c00 + 0x400 * n_ranks);
  ct_tensor_free(h);
  ct_scope_free(s);
}
END_TEST

START_TEST(test_nccl_allgather_and_broadcast) {
  ct_scope *s = setup(CT_FLOAT32, 4);
  run_coll(s, "c_allgather", "all", CT_OK);
  run_coll(s, "c_broadcast", "b", CT_OK);
  ct_tensor *all = to_host(s, "all"), *b = to_host(s, "b");
  ck_assert_int_eq(ct_tensor_numel(all), 4 * n_ranks);
  const float *pa = ct_tensor_data(all, CT_FLOAT32), *pb = ct_tensor_data(b, CT_FLOAT32);
  for (int r = 0; r < n_ranks; r++) {
    for (int i = 0; i < 4; i++) ck_assert(pa[r * 4 + i] == (float)(r + 1 + i));
  }
  for (int i = 0; i < 4; i++) ck_assert(pb[i] == (float)(1 + i)); /* root 0's */
  ct_tensor_free(all);
  ct_tensor_free(b);
  ct_scope_free(s);
}
END_TEST

START_TEST(test_mpi_communicator_refuses_cuda_tensors) {
  ct_scope *s = setup(CT_FLOAT32, 4);
  ck_assert_int_eq(ct_comm_init_mpi(ct_scope_var(s, "comm")), CT_OK);
  run_coll(s, "c_allreduce_sum", "out", CT_ERR_UNSUPPORTED);
  HAS(ct_last_error(), "ct_comm_init_nccl");
  ct_scope_free(s);
}
END_TEST

START_TEST(test_collectives_have_cuda_kernels) {
  const char *types[] = {"c_allreduce_sum", "c_allreduce_max", "c_broadcast", "c_allgather",
                         "c_reducescatter", "c_reduce_sum"};
  for (int i = 0; i < 6; i++) {
    ck_assert_msg(ct_kernel_get(types[i], CT_DEVICE_CUDA, CT_DTYPE_UNDEFINED) != NULL, "%s",
                  types[i]);
  }
}
END_TEST

/* No device: NCCL loads (dlopen, every symbol found) and the init then fails on the device,
 * leaving the variable empty. */
START_TEST(test_nccl_init_without_a_device_fails_on_the_device) {
  ct_var *v = ct_var_new();
  ck_assert_ptr_nonnull(v);
  CT_ASSERT_FAILS(ct_comm_init_nccl(v, 0), CT_ERR_DEVICE);
  ck_assert_ptr_null(ct_var_type(v));
  ct_var_free(v);
}
END_TEST

static int run_nofork(Suite *suite) {
  SRunner *sr = srunner_create(suite);
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed;
}

int main(void) {
  n_devices = ct_test_cuda_devices();
  if (n_devices <= 0) {
    if (ct_cuda_is_built()) {
      Suite *a = suite_create("cuda_comm (no device)");
      CT_ADD_TEST(a, test_collectives_have_cuda_kernels);
      CT_ADD_TEST(a, test_nccl_init_without_a_device_fails_on_the_device);
      if (run_nofork(a) != 0) return EXIT_FAILURE;
    }
    printf("skipped: the NCCL tests need a CUDA device\n");
    return n_devices < 0 ? EXIT_FAILURE : 77;
  }
  ct_var *world = ct_var_new();
  if (world == NULL || ct_comm_init_mpi(world) != CT_OK) {
    printf("test_cuda_comm: %s\n", ct_last_error());
    ct_var_free(world);
    return ct_last_status() == CT_ERR_UNSUPPORTED ? 77 : EXIT_FAILURE;
  }
  n_ranks = ct_comm_size(world);
  my_rank = ct_comm_rank(world);
  ct_var_free(world);
  Suite *s = suite_create("cuda_comm");
  CT_ADD_TEST(s, test_collectives_have_cuda_kernels);
  CT_ADD_TEST(s, test_nccl_allreduce_sum_float32_in_place_and_not);
  CT_ADD_TEST(s, test_nccl_reduces_float16);
  CT_ADD_TEST(s, test_nccl_allgather_and_broadcast);
  CT_ADD_TEST(s, test_mpi_communicator_refuses_cuda_tensors);
  return run_nofork(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
