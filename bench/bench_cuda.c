/* SPDX-License-Identifier: Apache-2.0 */
/* bench_cuda: the CUDA place's speed, each figure next to a baseline from the same run.
 *   alloc cycle   tensor new + resize + mutable_data on cuda:0 + free, served by the caching
 *                 allocator                      [cudaMalloc + cudaFree of the same bytes]
 *   pinned copy   ct_tensor_copy of 64 MiB between a ct_cuda_host() tensor and a cuda:0 tensor,
 *                 both ways                      [cudaMemcpy between the same kind of buffers]
 *   pageable copy ct_tensor_copy of 64 MiB from a ct_cpu() tensor to cuda:0
 *                                                [cudaMemcpy from a malloc'd buffer]
 *   elementwise_add a prepared one-op program over 256M float32 on cuda:0 (ct_executor_run,
 *                 ct_device_synchronize before and after each timed batch)
 *                                                [cudaMemcpy device to device of the same bytes]
 *   matmul 8192   a prepared one-op program, 8192 x 8192 float32 and bfloat16 on cuda:0
 *                                                [a direct cublasGemmEx call with the arguments
 *                                                 corten's kernel passes]
 *   expr chain    d = relu(a * b + c) * 0.5 over 64M float32 on cuda:0, one ct_expr_assign
 *                 (one NVRTC kernel, compiled before timing) [cudaMemcpy device to device of
 *                 2 x 64M float32: the same bytes read and written, so the ratio is the
 *                 bandwidth's; the goal is 0.9x of it or better]
 * The targets: a cached allocation and free at most 1 us; pinned copies at 80% or more
 * of cudaMemcpy's bandwidth (a ratio of at most 1.25). Without a CUDA device (or without CUDA in
 * the build) every row says "skipped: no CUDA device". Run by corten_bench (bench_main.c);
 * --quick runs fewer repetitions.
 *
 * cuBLAS is loaded here with dlopen, by the soname corten's CUDA matmul loads (CMake passes the
 * same CORTEN_CUBLAS_SONAME / CORTEN_CUBLAS_DIR), so the benchmark needs no link-time cuBLAS
 * either. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "bench_cuda.h"
#include "bench_util.h"

#ifdef CORTEN_BENCH_CUDA
#include <dlfcn.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#endif

static const char *const rows[] = {
    "cuda alloc+free 4 KB (cached)",   "cuda alloc+free 1 MB (cached)",
    "cuda alloc+free 64 MB (cached)",  "copy 64 MB cuda_host -> cuda:0",
    "copy 64 MB cuda:0 -> cuda_host",  "copy 64 MB cpu (pageable) -> cuda:0",
};
#define NROWS (sizeof rows / sizeof rows[0])

/* The ops on the device, each against its CUDA baseline. */
static const char *const op_rows[] = {
    "cuda elementwise_add 256M float32",
    "cuda matmul 8192 float32",
    "cuda matmul 8192 bfloat16",
    "cuda expr relu(a*b+c)*0.5 64M float32",
};
#define NOPS (sizeof op_rows / sizeof op_rows[0])

static void print_skipped(const char *why) {
  char note[64];
  snprintf(note, sizeof note, "skipped: no CUDA device (%s)", why);
  for (size_t i = 0; i < NROWS; i++) bench_skip(rows[i], note);
  for (size_t i = 0; i < NOPS; i++) bench_skip(op_rows[i], note);
  bench_cuda_layer_skip(note);
}

#ifdef CORTEN_BENCH_CUDA

#define COPY_BYTES ((size_t)64 << 20)

/* ---- Allocation --------------------------------------------------------------------------- */

typedef struct alloc_arg {
  int64_t numel; /* bytes, as uint8 elements */
  int failed;
} alloc_arg;

static void alloc_cycle(void *arg, size_t iters) {
  alloc_arg *a = arg;
  for (size_t i = 0; i < iters; i++) {
    ct_tensor *t = ct_tensor_new();
    ct_tensor_resize(t, CT_DIMS(a->numel));
    void *p = ct_tensor_mutable_data(t, CT_UINT8, ct_cuda(0));
    if (p == NULL) a->failed = 1;
    BENCH_KEEP(p);
    ct_tensor_free(t);
  }
}

static void malloc_cycle(void *arg, size_t iters) {
  alloc_arg *a = arg;
  for (size_t i = 0; i < iters; i++) {
    void *p = NULL;
    if (cudaMalloc(&p, (size_t)a->numel) != cudaSuccess) a->failed = 1;
    BENCH_KEEP(p);
    cudaFree(p);
  }
}

/* ---- Copies ------------------------------------------------------------------------------- */

typedef struct copy_arg {
  ct_tensor *dst, *src;
  ct_place to;
  void *raw_dst, *raw_src;
  enum cudaMemcpyKind kind;
  int failed;
} copy_arg;

static void tensor_copy(void *arg, size_t iters) {
  copy_arg *c = arg;
  for (size_t i = 0; i < iters; i++) {
    if (ct_tensor_copy(c->dst, c->src, c->to) != CT_OK) c->failed = 1;
  }
}

static void raw_copy(void *arg, size_t iters) {
  copy_arg *c = arg;
  for (size_t i = 0; i < iters; i++) {
    if (cudaMemcpy(c->raw_dst, c->raw_src, COPY_BYTES, c->kind) != cudaSuccess) c->failed = 1;
    if (cudaDeviceSynchronize() != cudaSuccess) c->failed = 1;
  }
}

static ct_tensor *tensor_at(ct_place place, unsigned char fill) {
  ct_tensor *t = ct_tensor_new();
  ct_tensor_resize(t, CT_DIMS((int64_t)COPY_BYTES));
  void *p = ct_tensor_mutable_data(t, CT_UINT8, place);
  if (p == NULL) {
    fprintf(stderr, "bench_cuda: %s\n", ct_last_error());
    exit(1);
  }
  if (place.kind != CT_DEVICE_CUDA) memset(p, fill, COPY_BYTES);
  return t;
}

static void bandwidth_line(double corten_ns, double base_ns) {
  double gb = (double)COPY_BYTES / 1e9;
  printf("  bandwidth: corten %.2f GB/s, cudaMemcpy %.2f GB/s: %.0f%% of the baseline (target: "
         "80%% or more)\n",
         gb / (corten_ns * 1e-9), gb / (base_ns * 1e-9), 100.0 * base_ns / corten_ns);
}

static int run(int quick) {
  int reps = quick ? 5 : 21;
  size_t iters = quick ? 20000 : 200000;
  int failed = 0;

  /* Allocation: warm the cache first (bench_median_ns also warms up once). */
  static const int64_t sizes[] = {4096, 1 << 20, 64 << 20};
  for (int i = 0; i < 3; i++) {
    alloc_arg a = {sizes[i], 0}, b = {sizes[i], 0};
    size_t n = sizes[i] >= (64 << 20) ? iters / 10 : iters;
    double c_ns = bench_median_ns(alloc_cycle, &a, n, reps);
    double base = bench_median_ns(malloc_cycle, &b, quick ? 200 : 2000, reps);
    bench_record(rows[i], c_ns, "cudaMalloc + cudaFree", base, "ns/op");
    failed |= a.failed | b.failed;
  }

  /* Copies: 64 MiB each way between pinned and device, and from pageable memory. */
  size_t citers = quick ? 3 : 10;
  ct_tensor *pin = tensor_at(ct_cuda_host(), 0x3C), *dev = tensor_at(ct_cuda(0), 0);
  ct_tensor *pin_back = tensor_at(ct_cuda_host(), 0), *host = tensor_at(ct_cpu(), 0x5A);
  void *raw_pin = NULL, *raw_dev = NULL, *raw_host = malloc(COPY_BYTES);
  if (cudaMallocHost(&raw_pin, COPY_BYTES) != cudaSuccess ||
      cudaMalloc(&raw_dev, COPY_BYTES) != cudaSuccess || raw_host == NULL) {
    fprintf(stderr, "bench_cuda: baseline buffers: out of memory\n");
    return 1;
  }
  memset(raw_pin, 0x3C, COPY_BYTES);
  memset(raw_host, 0x5A, COPY_BYTES);

  copy_arg h2d = {dev, pin, ct_cuda(0), raw_dev, raw_pin, cudaMemcpyHostToDevice, 0};
  copy_arg d2h = {pin_back, dev, ct_cuda_host(), raw_pin, raw_dev, cudaMemcpyDeviceToHost, 0};
  copy_arg pageable = {dev, host, ct_cuda(0), raw_dev, raw_host, cudaMemcpyHostToDevice, 0};
  copy_arg *cases[] = {&h2d, &d2h, &pageable};
  for (int i = 0; i < 3; i++) {
    double c_ns = bench_median_ns(tensor_copy, cases[i], citers, reps);
    double base = bench_median_ns(raw_copy, cases[i], citers, reps);
    bench_record(rows[3 + i], c_ns, "cudaMemcpy, same buffers' kind", base, "ns/op");
    bandwidth_line(c_ns, base);
    failed |= cases[i]->failed;
  }
  ct_tensor_free(pin);
  ct_tensor_free(dev);
  ct_tensor_free(pin_back);
  ct_tensor_free(host);
  cudaFreeHost(raw_pin);
  cudaFree(raw_dev);
  free(raw_host);
  if (failed) fprintf(stderr, "bench_cuda: a timed call failed: %s\n", ct_last_error());
  return failed;
}

/* ---- Ops on the device: elementwise_add and matmul ------------------------------------------ */

#ifndef CORTEN_CUBLAS_SONAME
#define CORTEN_CUBLAS_SONAME "libcublas.so"
#endif

typedef cublasStatus_t (*create_fn)(cublasHandle_t *);
typedef cublasStatus_t (*destroy_fn)(cublasHandle_t);
typedef cublasStatus_t (*gemm_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                  int, const void *, const void *, cudaDataType, int,
                                  const void *, cudaDataType, int, const void *, void *,
                                  cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);

/* cuBLAS for the baseline, loaded once; NULL lib when that failed (why in error). */
static struct {
  void *lib;
  char error[256];
  create_fn create;
  destroy_fn destroy;
  gemm_fn gemm;
} blas;

static void blas_load(void) {
  if (blas.lib != NULL || blas.error[0] != '\0') return;
  void *lib = dlopen(CORTEN_CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
#ifdef CORTEN_CUBLAS_DIR
  if (lib == NULL) lib = dlopen(CORTEN_CUBLAS_DIR "/" CORTEN_CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
#endif
  if (lib == NULL) {
    const char *why = dlerror();
    snprintf(blas.error, sizeof blas.error, "cannot load %s: %s", CORTEN_CUBLAS_SONAME,
             why != NULL ? why : "not found");
    return;
  }
  void *p[3] = {dlsym(lib, "cublasCreate_v2"), dlsym(lib, "cublasDestroy_v2"),
                dlsym(lib, "cublasGemmEx")};
  if (p[0] == NULL || p[1] == NULL || p[2] == NULL) {
    snprintf(blas.error, sizeof blas.error, "%s lacks cublasCreate_v2, cublasDestroy_v2 or "
             "cublasGemmEx", CORTEN_CUBLAS_SONAME);
    return; /* left loaded, as corten does */
  }
  /* dlsym's void * to function pointers, without the cast ISO C frowns on. */
  memcpy(&blas.create, &p[0], sizeof p[0]);
  memcpy(&blas.destroy, &p[1], sizeof p[1]);
  memcpy(&blas.gemm, &p[2], sizeof p[2]);
  blas.lib = lib;
}

void bench_cuda_exec_runs(void *arg, size_t iters) {
  op_arg *o = arg;
  if (ct_device_synchronize(ct_cuda(0)) != CT_OK) o->failed = 1;
  for (size_t i = 0; i < iters; i++) {
    if (ct_executor_run(o->exec) != CT_OK) o->failed = 1;
  }
  if (ct_device_synchronize(ct_cuda(0)) != CT_OK) o->failed = 1;
}

void bench_cuda_copy_runs(void *arg, size_t iters) {
  op_arg *o = arg;
  for (size_t i = 0; i < iters; i++) {
    if (cudaMemcpy(o->dst, o->src, o->bytes, cudaMemcpyDeviceToDevice) != cudaSuccess) {
      o->failed = 1;
    }
  }
  if (cudaDeviceSynchronize() != cudaSuccess) o->failed = 1;
}

void bench_cuda_pair(const char *row, const char *base_name, void (*fa)(void *, size_t),
                     op_arg *a, void (*fb)(void *, size_t), op_arg *b, size_t iters, int reps,
                     double t[2]) {
  void (*fns[2])(void *, size_t) = {fa, fb};
  void *args[2] = {a, b};
  bench_median_multi_ns(2, fns, args, iters, reps, t);
  if (a->failed) t[0] = NAN;
  if (b->failed) t[1] = NAN;
  bench_record(row, t[0] / 1e6, base_name, t[1] > 0 ? t[1] / 1e6 : t[1], "ms");
}

/* Row-major C = A B is column-major C^T = B^T A^T: B first, as corten's kernel calls it, with
 * float accumulation and the default algorithm. */
static void op_gemm(void *arg, size_t iters) {
  op_arg *o = arg;
  const float one = 1.0f, zero = 0.0f;
  for (size_t i = 0; i < iters; i++) {
    if (blas.gemm(o->handle, CUBLAS_OP_N, CUBLAS_OP_N, o->n, o->n, o->n, &one, o->b, o->type,
                  o->n, o->a, o->type, o->n, &zero, o->c, o->type, o->n, CUBLAS_COMPUTE_32F,
                  CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS) {
      o->failed = 1;
    }
  }
  if (cudaDeviceSynchronize() != cudaSuccess) o->failed = 1;
}

/* Fills variable name of s with value on cuda:0 through a fill_constant op. */
static ct_status fill_dev(ct_scope *s, const char *name, const int64_t *shape, size_t rank,
                          ct_dtype dt, double value) {
  ct_op *op = ct_op_new("fill_constant");
  if (op == NULL) return ct_last_status();
  ct_status st = ct_op_set_output(op, "Out", name);
  if (st == CT_OK) st = ct_op_set_attr_ints(op, "shape", shape, rank);
  if (st == CT_OK) st = ct_op_set_attr_float(op, "value", value);
  if (st == CT_OK) st = ct_op_set_attr_int(op, "dtype", dt);
  if (st == CT_OK) st = ct_op_run(op, s, ct_cuda(0));
  ct_op_free(op);
  return st;
}

/* The prepared program `out = type(x, y)` over s at cuda:0, run once to size out. */
static ct_executor *prepare(ct_scope *s, const char *type, const char *x, const char *y,
                            const char *out, ct_program **prog) {
  *prog = ct_program_new();
  ct_op *op = ct_op_new(type);
  if (*prog == NULL || op == NULL || ct_op_set_input(op, "X", x) != CT_OK ||
      ct_op_set_input(op, "Y", y) != CT_OK || ct_op_set_output(op, "Out", out) != CT_OK) {
    ct_op_free(op);
    return NULL;
  }
  if (ct_program_append(*prog, op) != CT_OK) return NULL;
  ct_executor *e = ct_executor_new(*prog, s, ct_cuda(0));
  if (e != NULL && (ct_executor_run(e) != CT_OK || ct_device_synchronize(ct_cuda(0)) != CT_OK)) {
    ct_executor_free(e);
    return NULL;
  }
  return e;
}

static const void *dev_data(const ct_scope *s, const char *name, ct_dtype dt) {
  return ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(s, name)), dt);
}

static void op_failed(const char *row, const char *baseline) {
  fprintf(stderr, "bench_cuda: %s: %s\n", row, ct_last_error());
  bench_record(row, NAN, baseline, NAN, "ms");
}

/* elementwise_add over 256M float32 (3 GiB on the device) against a copy of 1 GiB. */
static void add_row(int quick, int reps) {
  const char *row = op_rows[0], *base_name = "cudaMemcpy D2D, same bytes";
  const int64_t n = (int64_t)1 << 28;
  ct_scope *s = ct_scope_new();
  ct_program *p = NULL;
  ct_executor *e = NULL;
  if (s != NULL && fill_dev(s, "x", &n, 1, CT_FLOAT32, 1.0) == CT_OK &&
      fill_dev(s, "y", &n, 1, CT_FLOAT32, 2.0) == CT_OK) {
    e = prepare(s, "elementwise_add", "x", "y", "z", &p);
  }
  if (e == NULL) {
    op_failed(row, base_name);
  } else {
    op_arg a = {.exec = e};
    op_arg b = {.dst = (void *)dev_data(s, "z", CT_FLOAT32),
                .src = dev_data(s, "x", CT_FLOAT32),
                .bytes = (size_t)n * sizeof(float)};
    double t[2];
    bench_cuda_pair(row, base_name, bench_cuda_exec_runs, &a, bench_cuda_copy_runs, &b,
                    quick ? 5 : 20, reps, t);
    double gb = (double)b.bytes / 1e9;
    printf("  bandwidth: corten %.0f GB/s (reads x, y, writes z), cudaMemcpy %.0f GB/s (reads, "
           "writes)\n", 3 * gb / (t[0] * 1e-9), 2 * gb / (t[1] * 1e-9));
    if (a.failed) fprintf(stderr, "bench_cuda: %s: %s\n", row, ct_last_error());
  }
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
  ct_cuda_empty_cache();
}

/* matmul 8192 x 8192 in dt against the direct cublasGemmEx call. */
static void matmul_row(const char *row, ct_dtype dt, cudaDataType type, int quick, int reps) {
  const char *base_name = "direct cublasGemmEx";
  const int64_t shape[2] = {8192, 8192};
  ct_scope *s = ct_scope_new();
  ct_program *p = NULL;
  ct_executor *e = NULL;
  if (s != NULL && fill_dev(s, "A", shape, 2, dt, 0.5) == CT_OK &&
      fill_dev(s, "B", shape, 2, dt, 0.25) == CT_OK) {
    e = prepare(s, "matmul", "A", "B", "C", &p);
  }
  if (e == NULL) {
    op_failed(row, base_name);
  } else {
    op_arg a = {.exec = e};
    op_arg b = {.a = dev_data(s, "A", dt), .b = dev_data(s, "B", dt),
                .c = (void *)dev_data(s, "C", dt), .n = (int)shape[0], .type = type};
    blas_load();
    bool have_blas = blas.lib != NULL && blas.create(&b.handle) == CUBLAS_STATUS_SUCCESS;
    if (!have_blas) {
      fprintf(stderr, "bench_cuda: %s: baseline: %s\n", row,
              blas.lib == NULL ? blas.error : "cublasCreate failed");
    }
    double t[2];
    size_t iters = dt == CT_FLOAT32 ? (quick ? 1 : 5) : (quick ? 5 : 20);
    bench_cuda_pair(row, base_name, bench_cuda_exec_runs, &a, have_blas ? op_gemm : NULL, &b,
                    iters, reps, t);
    double tflop = 2.0 * (double)shape[0] * (double)shape[0] * (double)shape[0] / 1e12;
    printf("  throughput: corten %.1f TFLOP/s, cuBLAS %.1f TFLOP/s\n", tflop / (t[0] * 1e-9),
           have_blas ? tflop / (t[1] * 1e-9) : NAN);
    if (a.failed) fprintf(stderr, "bench_cuda: %s: %s\n", row, ct_last_error());
    if (have_blas) blas.destroy(b.handle);
  }
  ct_executor_free(e);
  ct_program_free(p);
  ct_scope_free(s);
  ct_cuda_empty_cache();
}

/* iters assignments of the expression; the device is idle before and after the batch. */
static void op_expr(void *arg, size_t iters) {
  op_arg *o = arg;
  if (ct_device_synchronize(ct_cuda(0)) != CT_OK) o->failed = 1;
  for (size_t i = 0; i < iters; i++) {
    if (ct_expr_assign(o->d, CT_SAVETO, o->e) != CT_OK) o->failed = 1;
  }
  if (ct_device_synchronize(ct_cuda(0)) != CT_OK) o->failed = 1;
}

/* A fused chain (3 reads, 1 write of n floats) against a device copy of 2n floats (the same 16n
 * bytes moved). */
static void expr_row(int quick, int reps) {
  const char *row = op_rows[3], *base_name = "cudaMemcpy D2D, same bytes";
  const int64_t n = (int64_t)1 << 26;
  ct_scope *s = ct_scope_new();
  ct_tensor *d = ct_tensor_new();
  ct_expr *e = NULL;
  void *src = NULL, *dst = NULL;
  size_t bytes = 2 * (size_t)n * sizeof(float);
  if (s != NULL && d != NULL && fill_dev(s, "a", &n, 1, CT_FLOAT32, 1.5) == CT_OK &&
      fill_dev(s, "b", &n, 1, CT_FLOAT32, 2.0) == CT_OK &&
      fill_dev(s, "c", &n, 1, CT_FLOAT32, -1.0) == CT_OK) {
    const ct_tensor *a = ct_var_get_tensor(ct_scope_find_var(s, "a")),
                    *b = ct_var_get_tensor(ct_scope_find_var(s, "b")),
                    *c = ct_var_get_tensor(ct_scope_find_var(s, "c"));
    e = ct_expr_binary(CT_EXPR_MUL,
                       ct_expr_unary(CT_EXPR_RELU,
                                     ct_expr_binary(CT_EXPR_ADD,
                                                    ct_expr_binary(CT_EXPR_MUL, ct_expr_tensor(a),
                                                                   ct_expr_tensor(b)),
                                                    ct_expr_tensor(c))),
                       ct_expr_scalar(0.5));
  }
  /* The first assignment compiles (or reads the disk cache) and sizes d: not timed. */
  if (e == NULL || ct_expr_assign(d, CT_SAVETO, e) != CT_OK ||
      cudaMalloc(&src, bytes) != cudaSuccess || cudaMalloc(&dst, bytes) != cudaSuccess) {
    op_failed(row, base_name);
  } else {
    op_arg a = {.d = d, .e = e};
    op_arg b = {.dst = dst, .src = src, .bytes = bytes};
    double t[2];
    bench_cuda_pair(row, base_name, op_expr, &a, bench_cuda_copy_runs, &b, quick ? 5 : 20, reps,
                    t);
    double gb = 2.0 * (double)bytes / 1e9;
    printf("  bandwidth: corten %.0f GB/s (reads a, b, c, writes d), cudaMemcpy %.0f GB/s: "
           "%.2fx (goal: 0.9x or more)\n", gb / (t[0] * 1e-9), gb / (t[1] * 1e-9), t[1] / t[0]);
    if (a.failed) fprintf(stderr, "bench_cuda: %s: %s\n", row, ct_last_error());
  }
  cudaFree(src);
  cudaFree(dst);
  ct_expr_free(e);
  ct_tensor_free(d);
  ct_scope_free(s);
  ct_cuda_empty_cache();
}

static void op_rows_run(int quick, int reps) {
  add_row(quick, reps);
  matmul_row(op_rows[1], CT_FLOAT32, CUDA_R_32F, quick, reps);
  matmul_row(op_rows[2], CT_BFLOAT16, CUDA_R_16BF, quick, reps);
  expr_row(quick, reps);
  bench_cuda_layer_rows(quick, reps);
}

#endif /* CORTEN_BENCH_CUDA */

/* Called by corten_bench (bench_main.c). A failed timed call leaves its rows without a figure. */
void bench_cuda_rows(const bench_cfg *cfg) {
#ifdef CORTEN_BENCH_CUDA
  if (ct_cuda_device_count() == 0) {
    print_skipped("cudaGetDeviceCount found none");
    return;
  }
  if (run(cfg->quick) != 0) bench_record("cuda rows", NAN, "a timed call failed", NAN, "");
  op_rows_run(cfg->quick, cfg->reps);
#else
  (void)cfg;
  print_skipped("corten built without CUDA");
#endif
}
