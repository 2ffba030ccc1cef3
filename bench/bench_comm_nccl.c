/* SPDX-License-Identifier: Apache-2.0 */
/* bench/bench_comm_nccl.c: the NCCL rows of corten_bench_comm (`--nccl`, one rank per GPU):
 * c_allreduce_sum on CUDA tensors over a corten NCCL communicator, run by an executor (the
 * header exchange over MPI, the stream ordering and the polled wait included), against
 * ncclAllReduce called directly on the same device buffers, each call followed by
 * cudaStreamSynchronize, as corten's call returns once the collective is done. NCCL is loaded
 * with dlopen, as corten loads it. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include <corten/corten.h>

#include "bench_comm.h"

typedef ncclResult_t (*get_id_fn)(ncclUniqueId *);
typedef ncclResult_t (*init_rank_fn)(ncclComm_t *, int, ncclUniqueId, int);
typedef ncclResult_t (*destroy_fn)(ncclComm_t);
typedef ncclResult_t (*allreduce_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                     ncclComm_t, cudaStream_t);

static struct {
  get_id_fn get_id;
  init_rank_fn init_rank;
  destroy_fn destroy;
  allreduce_fn allreduce;
} fn;

static int load(void) {
  void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
#ifdef CORTEN_NCCL_DIR
  if (lib == NULL) lib = dlopen(CORTEN_NCCL_DIR "/libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
#endif
  if (lib == NULL) return 1;
  void *p[4] = {dlsym(lib, "ncclGetUniqueId"), dlsym(lib, "ncclCommInitRank"),
                dlsym(lib, "ncclCommDestroy"), dlsym(lib, "ncclAllReduce")};
  memcpy(&fn.get_id, &p[0], sizeof p[0]);
  memcpy(&fn.init_rank, &p[1], sizeof p[1]);
  memcpy(&fn.destroy, &p[2], sizeof p[2]);
  memcpy(&fn.allreduce, &p[3], sizeof p[3]);
  return p[0] == NULL || p[1] == NULL || p[2] == NULL || p[3] == NULL;
}

/* One size: 0, or 1 after printing why it failed. */
static int nccl_size(const char *row, int64_t n, int rounds, int iters, int rank, ncclComm_t nc,
                     cudaStream_t st) {
  ct_place gpu = ct_cuda(rank);
  ct_scope *s = ct_scope_new();
  ct_op *op = ct_op_new("c_allreduce_sum");
  ct_program *p = ct_program_new();
  ct_executor *e = NULL;
  ct_tensor *x = s ? ct_var_tensor(ct_scope_var(s, "x")) : NULL;
  double *tc = calloc((size_t)rounds, sizeof *tc), *tb = calloc((size_t)rounds, sizeof *tb);
  int bad = s == NULL || op == NULL || p == NULL || x == NULL || tc == NULL || tb == NULL ||
            ct_comm_init_nccl(ct_scope_var(s, "comm"), rank) != CT_OK ||
            ct_op_set_input(op, "X", "x") != CT_OK || ct_op_set_output(op, "Out", "out") != CT_OK ||
            ct_op_set_attr_string(op, "comm", "comm") != CT_OK ||
            ct_tensor_resize(x, CT_DIMS(n)) != CT_OK ||
            ct_tensor_mutable_data(x, CT_FLOAT32, gpu) == NULL;
  if (!bad) {
    bad = ct_program_append(p, op) != CT_OK;
    op = NULL;
  }
  if (!bad) bad = (e = ct_executor_new(p, s, gpu)) == NULL || ct_executor_run(e) != CT_OK;
  if (bad) {
    fprintf(stderr, "corten_bench_comm: setting up %s: %s\n", row, ct_last_error());
  } else {
    void *in = ct_tensor_mutable_data(x, CT_FLOAT32, gpu);
    void *out = ct_tensor_mutable_data(ct_var_tensor(ct_scope_var(s, "out")), CT_FLOAT32, gpu);
    bad = cudaMemset(in, 0, (size_t)n * sizeof(float)) != cudaSuccess;
    for (int r = 0; r < rounds && !bad; r++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t = MPI_Wtime();
      for (int i = 0; i < iters && !bad; i++) bad = ct_executor_run(e) != CT_OK;
      tc[r] = (MPI_Wtime() - t) / iters;
      MPI_Barrier(MPI_COMM_WORLD);
      t = MPI_Wtime();
      for (int i = 0; i < iters && !bad; i++) {
        bad = fn.allreduce(in, out, (size_t)n, ncclFloat32, ncclSum, nc, st) != ncclSuccess ||
              cudaStreamSynchronize(st) != cudaSuccess;
      }
      tb[r] = (MPI_Wtime() - t) / iters;
    }
    if (bad) fprintf(stderr, "corten_bench_comm: %s: %s\n", row, ct_last_error());
    if (!bad && rank == 0) {
      printf("%s\t%.0f\t%.0f\n", row, 1e9 * bench_comm_median(tc, rounds),
             1e9 * bench_comm_median(tb, rounds));
    }
  }
  ct_executor_free(e);
  ct_op_free(op);
  ct_program_free(p);
  ct_scope_free(s);
  free(tc);
  free(tb);
  return bad;
}

int bench_comm_nccl(int rank, int size, int quick) {
  if (load() != 0) {
    fprintf(stderr, "corten_bench_comm: cannot load NCCL (libnccl.so.2)\n");
    return 1;
  }
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (cudaSetDevice(rank) != cudaSuccess || (rank == 0 && fn.get_id(&id) != ncclSuccess)) {
    fprintf(stderr, "corten_bench_comm: rank %d: no CUDA device %d or no NCCL id\n", rank, rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t nc = NULL;
  cudaStream_t st = NULL;
  if (fn.init_rank(&nc, size, id, rank) != ncclSuccess ||
      cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess) {
    fprintf(stderr, "corten_bench_comm: rank %d: ncclCommInitRank failed\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int bad = nccl_size(BENCH_COMM_NCCL_4M, 1 << 20, quick ? 5 : 21, 20, rank, nc, st) ||
            nccl_size(BENCH_COMM_NCCL_64M, 16 << 20, quick ? 5 : 11, 5, rank, nc, st);
  cudaStreamDestroy(st);
  fn.destroy(nc);
  return bad;
}
