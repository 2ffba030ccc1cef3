/* bench_cuda: the CUDA place's speed, each figure next to a baseline from the same run.
 *   alloc cycle   tensor new + resize + mutable_data on cuda:0 + free, served by the caching
 *                 allocator                      [cudaMalloc + cudaFree of the same bytes]
 *   pinned copy   ct_tensor_copy of 64 MiB between a ct_cuda_host() tensor and a cuda:0 tensor,
 *                 both ways                      [cudaMemcpy between the same kind of buffers]
 *   pageable copy ct_tensor_copy of 64 MiB from a ct_cpu() tensor to cuda:0
 *                                                [cudaMemcpy from a malloc'd buffer]
 * The targets: a cached allocation and free at most 1 us; pinned copies at 80% or more
 * of cudaMemcpy's bandwidth (a ratio of at most 1.25). Without a CUDA device (or without CUDA in
 * the build) every row says "skipped: no CUDA device". Run by corten_bench (bench_main.c);
 * --quick runs fewer repetitions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "bench_util.h"

#ifdef CORTEN_BENCH_CUDA
#include <cuda_runtime_api.h>
#endif

static const char *const rows[] = {
    "cuda alloc+free 4 KB (cached)",   "cuda alloc+free 1 MB (cached)",
    "cuda alloc+free 64 MB (cached)",  "copy 64 MB cuda_host -> cuda:0",
    "copy 64 MB cuda:0 -> cuda_host",  "copy 64 MB cpu (pageable) -> cuda:0",
};
#define NROWS (sizeof rows / sizeof rows[0])

/* The GPU rows that have no measurement yet (elementwise_add and matmul on the device). */
static const char *const todo_rows[] = {
    "cuda elementwise_add 256M float32",
    "cuda matmul 8192 float32",
    "cuda matmul 8192 bfloat16",
};
#define NTODO (sizeof todo_rows / sizeof todo_rows[0])

static void print_skipped(const char *why) {
  char note[64];
  snprintf(note, sizeof note, "skipped: no CUDA device (%s)", why);
  for (size_t i = 0; i < NROWS; i++) bench_skip(rows[i], note);
  for (size_t i = 0; i < NTODO; i++) bench_skip(todo_rows[i], note);
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

#endif /* CORTEN_BENCH_CUDA */

/* Called by corten_bench (bench_main.c). A failed timed call leaves its rows without a figure. */
void bench_cuda_rows(const bench_cfg *cfg) {
#ifdef CORTEN_BENCH_CUDA
  if (ct_cuda_device_count() == 0) {
    print_skipped("cudaGetDeviceCount found none");
    return;
  }
  if (run(cfg->quick) != 0) bench_record("cuda rows", NAN, "a timed call failed", NAN, "");
  for (size_t i = 0; i < NTODO; i++) bench_skip(todo_rows[i], "skipped: not measured yet");
#else
  (void)cfg;
  print_skipped("corten built without CUDA");
#endif
}
